"""torch's special functions (``tricycle.torch_special``) at the top level, as Tensor methods
and in ``tricycle.special`` as ``torch.special``: values and gradients against torch in float64
and float32, against finite differences (hypothesis), the poles and ends of their domains,
torch's dtypes (integers to float32, float16 kept), ``zeta`` differentiable in q alone, and bad
arguments refused, naming the function."""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc
import tricycle.special as special

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def uniform(low, high, *shape, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


# (name in torch.special, its input): tricycle.special.<name> against torch.special.<name>
SPECIAL = [
    ("erf", normal(3, 4)),
    ("erfc", normal(3, 4)),
    ("erfcx", normal(3, 4)),
    ("erfinv", uniform(-0.95, 0.95, 3, 4)),
    ("ndtr", normal(3, 4) * 3),
    ("ndtri", uniform(0.02, 0.98, 3, 4)),
    ("log_ndtr", normal(3, 4) * 5),
    ("gammaln", uniform(0.1, 6, 3, 4)),
    ("digamma", uniform(0.1, 6, 3, 4)),
    ("psi", uniform(-3.9, -3.1, 5)),
    ("i0", normal(3, 4) * 3),
    ("i0e", normal(3, 4) * 3),
    ("i1", np.concatenate([normal(5) * 3, [0.0]])),
    ("i1e", np.concatenate([normal(5) * 3, [0.0]])),
    ("entr", uniform(0.05, 3, 3, 4)),
    ("expit", normal(3, 4)),
    ("exp2", normal(3, 4)),
    ("expm1", normal(3, 4)),
    ("log1p", uniform(-0.9, 3, 3, 4)),
    ("logit", uniform(0.05, 0.95, 3, 4)),
    ("sinc", normal(3, 4)),
]
TOP_LEVEL = ["erf", "erfc", "erfinv", "lgamma", "digamma", "i0"]


def _both(array):
    return tc.Tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)


def _same(ours, theirs, x, t, rtol=1e-10):
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)
    weights = normal(*theirs.shape, seed=9)
    ours.backward(weights)
    theirs.backward(torch.tensor(weights))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=rtol * 10, atol=1e-12)


@pytest.mark.parametrize(("name", "array"), SPECIAL, ids=[c[0] for c in SPECIAL])
def test_special_values_and_gradients_match_torch(name, array):
    x, t = _both(array)
    _same(getattr(special, name)(x), getattr(torch.special, name)(t), x, t)


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_top_level_functions_and_methods_match_torch(name):
    array = uniform(0.2, 0.9, 2, 3)
    x, t = _both(array)
    _same(getattr(tc, name)(x), getattr(torch, name)(t), x, t)
    x, t = _both(array)
    _same(getattr(x, name)(), getattr(t, name)(), x, t)


def test_polygamma_mvlgamma_and_xlog1py_match_torch():
    array = uniform(1.2, 5, 3, 4)
    for n in (0, 1, 3):
        x, t = _both(array)
        _same(tc.polygamma(n, x), torch.polygamma(n, t), x, t, rtol=1e-9)
        x, t = _both(array)
        _same(x.polygamma(n), t.polygamma(n), x, t, rtol=1e-9)
        x, t = _both(array)
        _same(special.polygamma(n, x), torch.special.polygamma(n, t), x, t, rtol=1e-9)
    for p in (1, 2, 4):
        x, t = _both(array + 1.5)
        _same(tc.mvlgamma(x, p), torch.mvlgamma(t, p), x, t)
        x, t = _both(array + 1.5)
        _same(special.multigammaln(x, p=p), torch.special.multigammaln(t, p=p), x, t)
    a, b = normal(3, 4), uniform(-0.9, 2, 4)
    a[0, :2] = 0.0
    b[1] = -1.0  # input 0 and other -1: input's gradient 0
    xs = [tc.Tensor(v, requires_grad=True) for v in (a, b)]
    ts = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    ours, theirs = special.xlog1py(*xs), torch.special.xlog1py(*ts)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.backward(np.ones(ours.shape))  # no sum: the infinities of other = -1 would meet
    theirs.backward(torch.ones(theirs.shape, dtype=torch.float64))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_float32_values_and_the_rest_of_torch_special():
    a = uniform(0.1, 0.9, 50).astype(np.float32)
    for name in ("erf", "erfc", "erfinv", "gammaln", "digamma", "i0", "i1e", "ndtri", "log_ndtr"):
        ours = getattr(special, name)(tc.tensor(a))
        theirs = getattr(torch.special, name)(torch.tensor(a))
        assert ours.dtype == np.float32, name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-7)
    for name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
                 "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1"):  # fmt: skip
        ours = getattr(special, name)(tc.tensor(a * 5, dtype=tc.float64))
        theirs = getattr(torch.special, name)(torch.tensor(a * 5, dtype=torch.float64))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-7, atol=1e-8, err_msg=name)
        given = tc.tensor(a, requires_grad=True)  # no gradient, as torch's: not even a refusal
        assert not getattr(special, name)(given).requires_grad, name
    x = normal(3, 4)
    ours, theirs = special.softmax(tc.tensor(x), 0), torch.special.softmax(torch.tensor(x), 0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    ours = special.log_softmax(tc.tensor(x), 1, dtype=tc.float32)
    theirs = torch.special.log_softmax(torch.tensor(x), 1, dtype=torch.float32)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    np.testing.assert_allclose(special.logsumexp(tc.tensor(x), 1).numpy(),
                               torch.special.logsumexp(torch.tensor(x), 1).numpy())  # fmt: skip
    rounded = special.round(tc.tensor([0.5, 1.5, 2.567], dtype=tc.float64), decimals=1)
    assert rounded.numpy().tolist() == [0.5, 1.5, 2.6]
    assert tc.special is special


def test_poles_ends_and_dtypes_are_torchs():
    edges = [
        ("erfinv", [-1.0, 1.0, 0.0, 2.0]),
        ("ndtri", [0.0, 1.0, 0.5]),
        ("gammaln", [0.0, -1.0, -0.5]),
        ("digamma", [0.0, -2.0, 1.0]),
        ("entr", [0.0, -1.0, 1.0]),
        ("log_ndtr", [-40.0, 10.0]),
        ("erfcx", [-30.0, 1e4]),
    ]
    for name, values in edges:
        ours = getattr(special, name)(tc.tensor(values, dtype=tc.float64))
        theirs = getattr(torch.special, name)(torch.tensor(values, dtype=torch.float64))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-9, err_msg=name)
    for name in TOP_LEVEL:
        assert getattr(tc, name)(tc.tensor([1, 2])).dtype == np.float32, name
    assert tc.lgamma(tc.tensor([1.5], dtype=tc.float16)).dtype == np.float16
    assert tc.erf(tc.tensor([0.5], dtype=tc.bfloat16)).dtype == np.dtype(tc.bfloat16)
    entr = tc.Tensor([0.0, 2.0], requires_grad=True)
    special.entr(entr).sum().backward()
    theirs = torch.tensor([0.0, 2.0], requires_grad=True)
    torch.special.entr(theirs).sum().backward()
    np.testing.assert_allclose(entr.grad.numpy(), theirs.grad.numpy())


def test_zeta_has_torchs_values_and_derivatives():
    """Values as torch's; q's gradient as torch's (-x zeta(x + 1, q)); x's none, as torch's."""
    x, q = uniform(1.5, 4, 3, 1), uniform(0.5, 3, 4, seed=1)
    ours = special.zeta(tc.tensor(x), tc.tensor(q))
    np.testing.assert_allclose(ours.numpy(), torch.special.zeta(torch.tensor(x), torch.tensor(q)))
    assert special.zeta(2, tc.tensor([1.0])).numpy() == pytest.approx(np.pi**2 / 6)
    ours, theirs = tc.Tensor(q, requires_grad=True), torch.tensor(q, requires_grad=True)
    special.zeta(tc.tensor(x), ours).sum().backward()
    torch.special.zeta(torch.tensor(x), theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="zeta: the derivative with respect to input"):
        special.zeta(tc.Tensor(x, requires_grad=True), 2.0).sum().backward()


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 99))
def test_gradients_match_finite_differences(shape, seed):
    a = np.random.default_rng(seed).uniform(0.2, 0.8, size=shape)
    for name in "erf erfc erfinv ndtri log_ndtr i0 i0e i1 i1e entr erfcx".split():
        check_grads(getattr(special, name), a)
    check_grads(lambda x: tc.lgamma(x + 1) + tc.digamma(x + 1) + tc.polygamma(2, x + 1), a)
    check_grads(lambda x: tc.mvlgamma(x + 2, 3), a)
    check_grads(special.xlog1py, a - 0.5, a)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: tc.erf(x, out=x), TypeError, "erf: out= is not supported"),
        (lambda x: tc.lgamma([1.0]), TypeError, "lgamma: input must be a Tensor"),
        (lambda x: tc.polygamma(-1, x), ValueError, "polygamma: n must be"),
        (lambda x: tc.polygamma(1.5, x), TypeError, "polygamma: n must be"),
        (lambda x: tc.mvlgamma(x, 0), ValueError, "mvlgamma: p must be"),
        (lambda x: special.expit(x, out=x), TypeError, "expit: out="),
        (lambda x: special.zeta(x, tc.ones(2)), ValueError, r"zeta: shapes \(3,\) and \(2,\)"),
        (lambda x: special.bessel_j0(x).sum().backward(), RuntimeError, "does not require grad"),
    ],
)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call(tc.Tensor([0.5, 2.0, 1.0], requires_grad=True))
