"""torch's numeric odds and ends (``tricycle.torch_numeric``) against torch: ``gradient`` for
steps, per-axis steps, coordinates, ``dim`` and both edge orders, with its gradient against
torch's and finite differences; ``binomial`` and ``poisson`` seeded on tricycle's generator
(moments, edge values, dtypes, gradients as torch's); the deprecated ``frobenius_norm`` and
``nuclear_norm`` (values, gradient, warning); ``nextafter`` (values, dtypes, gradient,
Tensor method and in place) and ``Tensor.hardshrink``; and the errors."""

import numpy as np
import pytest
from helpers import check_grads

import tricycle as tc

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:.*(frobenius|nuclear)_norm is deprecated")


def both(array, **kwargs):
    return tc.tensor(array, **kwargs), torch.tensor(array, **kwargs)


def assert_tuples_close(ours, theirs, **tol):
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.dtype == t.detach().numpy().dtype
        np.testing.assert_allclose(o.array, t.detach().numpy(), **tol)


# ------------------------------------------------------------------ gradient
X = np.random.default_rng(0).normal(size=(4, 5, 3))
C0 = np.sort(np.random.default_rng(1).uniform(0, 5, 4))
C2 = np.sort(np.random.default_rng(2).uniform(0, 5, 3))

GRADIENT_CASES = [
    {},
    {"spacing": 2.0},
    {"spacing": 3},
    {"spacing": [2.0, 0.5, 1.5]},
    {"dim": 1, "edge_order": 2},
    {"edge_order": 2},
    {"dim": [2, 0], "spacing": [3, 2]},
    {"dim": -1},
    {"dim": (0, 2), "spacing": [C0, C2]},
    {"dim": (0, 2), "spacing": [C0, C2], "edge_order": 2},
]


@pytest.mark.parametrize("case", range(len(GRADIENT_CASES)))
def test_gradient_matches_torch(case):
    kwargs = GRADIENT_CASES[case]
    ours_kw, theirs_kw = dict(kwargs), dict(kwargs)
    if isinstance(kwargs.get("spacing"), list) and isinstance(kwargs["spacing"][0], np.ndarray):
        ours_kw["spacing"] = [tc.tensor(c) for c in kwargs["spacing"]]
        theirs_kw["spacing"] = [torch.tensor(c) for c in kwargs["spacing"]]
    ours, theirs = both(X)
    assert_tuples_close(tc.gradient(ours, **ours_kw), torch.gradient(theirs, **theirs_kw),
                        rtol=1e-10, atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_backward_matches_torch_and_finite_differences(edge_order):
    weights = np.random.default_rng(3).normal(size=(4, 5, 3))
    kw = {"spacing": [C0, np.arange(5.0) ** 1.5, C2], "edge_order": edge_order}

    def loss(lib, x, spacing):
        parts = lib.gradient(x, spacing=spacing, edge_order=edge_order)
        return sum((p * lib.tensor(weights)).sum() for p in parts)

    ours = tc.tensor(X, requires_grad=True)
    loss(tc, ours, [tc.tensor(c) for c in kw["spacing"]]).backward()
    theirs = torch.tensor(X, requires_grad=True)
    loss(torch, theirs, [torch.tensor(c) for c in kw["spacing"]]).backward()
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    check_grads(lambda x: loss(tc, x, [tc.tensor(c) for c in kw["spacing"]]), X[:, :, :])


def test_gradient_dtypes_and_small_inputs_as_torchs():
    ours = tc.gradient(tc.tensor([1, 2, 4]), spacing=2)
    theirs = torch.gradient(torch.tensor([1, 2, 4]), spacing=2)
    assert_tuples_close(ours, theirs)  # integers give float32
    ints = tc.gradient(tc.tensor([1, 2, 4]), spacing=[tc.tensor([0, 1, 3])])
    assert_tuples_close(
        ints, torch.gradient(torch.tensor([1, 2, 4]), spacing=[torch.tensor([0, 1, 3])])
    )
    mixed = tc.gradient(tc.tensor(X, dtype=np.float32), spacing=[tc.tensor(C0)], dim=0)
    assert mixed[0].dtype == np.float64  # float64 coordinates promote, as torch's
    assert tc.gradient(tc.tensor(1.0)) == ()
    zero_d = tc.gradient(tc.tensor(X), spacing=tc.tensor(2.0))  # a 0-d tensor is a number
    assert_tuples_close(zero_d, torch.gradient(torch.tensor(X), spacing=torch.tensor(2.0)))


def test_gradient_errors():
    x = tc.tensor(X)
    with pytest.raises(RuntimeError, match="only edge_order=1 and edge_order=2"):
        tc.gradient(x, edge_order=3)
    with pytest.raises(RuntimeError, match="spacing of length 1 and 2 dims"):
        tc.gradient(x, spacing=[2.0], dim=[1, 0])
    with pytest.raises(RuntimeError, match="at least edge_order \\+ 1 = 2 values"):
        tc.gradient(tc.tensor([1.0]))
    with pytest.raises(RuntimeError, match="dim 2 of shape"):
        tc.gradient(tc.tensor(np.ones((3, 3, 2))), dim=2, edge_order=2)
    with pytest.raises(RuntimeError, match="more than once"):
        tc.gradient(x, dim=(0, 0))
    with pytest.raises(RuntimeError, match="one dimension"):
        tc.gradient(x, spacing=[tc.tensor(np.ones((1, 4)))], dim=0)
    with pytest.raises(RuntimeError, match="coordinates of dim 0 have 3 values"):
        tc.gradient(x, spacing=[tc.tensor(C2)], dim=0)  # torch reads past them; tricycle refuses
    with pytest.raises(TypeError, match="gradient: spacing must be"):
        tc.gradient(x, spacing=tc.tensor([2.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match="gradient: dim"):
        tc.gradient(x, dim=5)


# ------------------------------------------------------------------ samplers
def test_poisson_draws_seeded_with_the_right_moments():
    rates = np.repeat(np.array([0.0, 0.5, 3.0, 40.0]), 5000).reshape(4, 5000)
    tc.manual_seed(0)
    first = tc.poisson(tc.tensor(rates, dtype=np.float32))
    tc.manual_seed(0)
    again = tc.poisson(tc.tensor(rates, dtype=np.float32))
    np.testing.assert_array_equal(first.array, again.array)
    assert first.dtype == np.float32 and first.shape == (4, 5000)
    draws = first.array.astype(np.float64)
    np.testing.assert_allclose(draws.mean(1), [0, 0.5, 3, 40], rtol=0.05, atol=1e-12)
    np.testing.assert_allclose(draws.var(1), [0, 0.5, 3, 40], rtol=0.1, atol=1e-12)
    assert (draws == np.round(draws)).all()
    generator = tc.Generator().manual_seed(7)
    a = tc.poisson(tc.tensor([2.0, 5.0]), generator=generator)
    b = tc.poisson(tc.tensor([2.0, 5.0]), generator=tc.Generator().manual_seed(7))
    np.testing.assert_array_equal(a.array, b.array)


def test_poisson_gradient_dtypes_and_errors_as_torchs():
    rate = tc.tensor([1.0, 2.0], requires_grad=True)
    out = tc.poisson(rate)
    assert out.requires_grad
    out.sum().backward()
    np.testing.assert_array_equal(rate.grad.array, [0.0, 0.0])  # torch's gradient is 0
    assert tc.poisson(tc.tensor([1.0], dtype=np.float16)).dtype == np.float16
    with pytest.raises(NotImplementedError, match="poisson: not implemented for dtype int64"):
        tc.poisson(tc.tensor([1, 2]))
    for bad in (-1.0, float("nan")):
        with pytest.raises(RuntimeError, match="invalid Poisson rate"):
            tc.poisson(tc.tensor([1.0, bad]))


def test_binomial_draws_seeded_with_the_right_moments():
    count = np.repeat(np.array([0.0, 10.0, 30.0, 5.0]), 4000).reshape(4, 4000)
    prob = np.array([[0.5], [0.3], [0.9], [1.0]]).repeat(4000, 1)
    tc.manual_seed(1)
    draws = tc.binomial(tc.tensor(count), tc.tensor(prob))
    tc.manual_seed(1)
    np.testing.assert_array_equal(draws.array, tc.binomial(tc.tensor(count), tc.tensor(prob)).array)
    assert draws.dtype == np.float64
    mean, var = count[:, 0] * prob[:, 0], count[:, 0] * prob[:, 0] * (1 - prob[:, 0])
    np.testing.assert_allclose(draws.array.mean(1), mean, rtol=0.03, atol=1e-12)
    np.testing.assert_allclose(draws.array.var(1), var, rtol=0.1, atol=1e-12)
    edges = tc.binomial(tc.tensor([-1.0, 2.0, 2.0, 0.0]), tc.tensor([0.5, 1.5, np.nan, 0.5]))
    theirs = torch.binomial(
        torch.tensor([-1.0, 2.0, 2.0, 0.0]), torch.tensor([0.5, 1.5, np.nan, 0.5])
    )
    np.testing.assert_array_equal(edges.array.astype(np.float32), theirs.numpy())
    broadcast = tc.binomial(tc.tensor([[3.0], [4.0]]), tc.tensor([0.5, 0.2, 0.1]))
    assert broadcast.shape == (2, 3)


def test_binomial_gradient_and_errors_as_torchs():
    count = tc.tensor([3.0], requires_grad=True)
    out = tc.binomial(count, tc.tensor([0.5]))
    assert out.requires_grad  # as torch's, whose backward then raises
    with pytest.raises(NotImplementedError, match="binomial: the derivative is not implemented"):
        out.sum().backward()
    with pytest.raises(ValueError, match="floating-point dtypes are supported for count"):
        tc.binomial(tc.tensor([3]), tc.tensor([0.5]))
    with pytest.raises(RuntimeError, match="prob's dtype float64 must be count's float32"):
        tc.binomial(tc.tensor([3.0]), tc.tensor([0.5], dtype=np.float64))
    with pytest.raises(TypeError, match="binomial: prob must be a Tensor"):
        tc.binomial(tc.tensor([3.0]), 0.5)


# ------------------------------------------------------------------ norms
def test_frobenius_and_nuclear_norms_match_torch():
    x = np.random.default_rng(4).normal(size=(3, 4, 5))
    cases = [
        (lambda lib, t: lib.frobenius_norm(t, (0, 1))),
        (lambda lib, t: lib.frobenius_norm(t, -1, True)),
        (lambda lib, t: lib.frobenius_norm(t, ())),
        (lambda lib, t: lib.nuclear_norm(t)),
        (lambda lib, t: lib.nuclear_norm(t, True)),
        (lambda lib, t: lib.nuclear_norm(t, (0, 2))),
        (lambda lib, t: lib.nuclear_norm(t, dim=(2, 1), keepdim=True)),
    ]
    for case in cases:
        ours, theirs = tc.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        o, t = case(tc, ours), case(torch, theirs)
        np.testing.assert_allclose(o.array, t.detach().numpy(), rtol=1e-10)
        o.sum().backward()
        t.sum().backward()
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-8, atol=1e-12)


def test_the_old_norms_warn_and_refuse_as_torchs():
    x = tc.tensor(np.ones((2, 3)))
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        tc.frobenius_norm(x, (0, 1))
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        tc.nuclear_norm(x)
    with pytest.raises(RuntimeError, match="at most 2 dims"):
        tc.frobenius_norm(x, (0, 1, 1))
    with pytest.raises(ValueError, match="matrix_norm"):
        tc.nuclear_norm(tc.tensor([1.0, 2.0]))


# ------------------------------------------------------------------ nextafter, hardshrink
def test_nextafter_matches_torch():
    a = np.array([0.0, -0.0, np.nan, 1.0, np.inf, 1.0, 2.0, -3.5, 1e-45])
    b = np.array([-1.0, 1.0, 1.0, np.nan, 0.0, 1.0, 0.0, -np.inf, 0.0])
    for dtype in (np.float32, np.float64, np.float16):
        ours = tc.nextafter(tc.tensor(a, dtype=dtype), tc.tensor(b, dtype=dtype))
        theirs = torch.nextafter(torch.tensor(a.astype(dtype)), torch.tensor(b.astype(dtype)))
        assert ours.dtype == dtype
        np.testing.assert_array_equal(ours.array, theirs.numpy())
    bf = tc.nextafter(
        tc.tensor([1.0]).to(dtype=tc.bfloat16), tc.tensor([2.0]).to(dtype=tc.bfloat16)
    )
    tb = torch.nextafter(torch.tensor([1.0]).bfloat16(), torch.tensor([2.0]).bfloat16())
    assert bf.dtype == tc.bfloat16 and float(bf.array[0]) == tb.item()
    mixed = tc.nextafter(tc.tensor([1.0]), tc.tensor([2.0], dtype=np.float64))
    assert mixed.dtype == np.float64  # promoted, as torch's
    y = tc.tensor([1.0, 2.0])
    y.nextafter_(tc.tensor([2.0, 0.0]))
    np.testing.assert_array_equal(
        y.array, tc.tensor([1.0, 2.0]).nextafter(tc.tensor([2.0, 0.0])).array
    )


def test_nextafter_gradient_and_errors_as_torchs():
    x = tc.tensor([1.0, 2.0, 0.0, 3.0], requires_grad=True)
    y = tc.tensor([2.0, 0.0, -0.0, 3.0], requires_grad=True)
    (tc.nextafter(x, y) * tc.tensor([3.0, 4.0, 5.0, 6.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.array, [3.0, 4.0, 0.0, 0.0])  # 0 where x == y: torch's
    np.testing.assert_array_equal(y.grad.array, [0.0, 0.0, 0.0, 0.0])
    with pytest.raises(NotImplementedError, match="nextafter: not implemented for input"):
        tc.nextafter(tc.tensor([1, 2]), tc.tensor([3.0, 0.0]))
    with pytest.raises(TypeError, match="nextafter: other must be a Tensor"):
        tc.nextafter(tc.tensor([1.0]), 3.0)


def test_tensor_hardshrink_matches_torch():
    x = np.array([0.3, -1.0, 0.5, -0.5, 0.7, 0.0])
    for lambd in (0.5, 0.2):
        ours = tc.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        o, t = ours.hardshrink(lambd), theirs.hardshrink(lambd)
        np.testing.assert_array_equal(o.array, t.detach().numpy())
        (o * tc.tensor(x + 2)).sum().backward()
        (t * torch.tensor(x + 2)).sum().backward()
        np.testing.assert_array_equal(ours.grad.array, theirs.grad.numpy())
    np.testing.assert_array_equal(
        tc.tensor(x).hardshrink().array, torch.tensor(x).hardshrink().numpy()
    )
