"""torch's elementwise functions and products at the top level (``tricycle.torch_pointwise``,
``torch_products``) and as Tensor methods (``tensor_math``): values and the gradients of every
input against torch in float64 (broadcast shapes, numbers for an operand), against finite
differences on random shapes (hypothesis), torch's dtypes (integers to float32, float64
``float_power``, integer ``fmax``), the edge values (xlogy at 0, sinc at 0, logit's eps,
copysign of -0.0, fmax with NaN) and bad arguments refused, naming the function."""

import math

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def positive(*shape, seed=0):
    return np.abs(normal(*shape, seed=seed)) + 0.1


def unit(*shape, seed=0):
    return np.random.default_rng(seed).uniform(0.05, 0.95, size=shape)


def both(*arrays):
    """The arrays as tricycle and torch leaves that require gradients (float64)."""
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


def same(name, *arrays, args=(), kwargs=None, method=False):
    """tricycle.<name> (or the Tensor method) and torch's of ``arrays``: values and gradients."""
    kwargs = kwargs or {}
    xs, ts = both(*arrays)
    ours = getattr(xs[0], name)(*xs[1:], *args, **kwargs) if method else None
    ours = ours if method else getattr(tc, name)(*xs, *args, **kwargs)
    theirs = getattr(torch, name)(*ts, *args, **kwargs)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = normal(*theirs.shape, seed=9)
    ours.backward(weights)
    theirs.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        if t.grad is not None:
            expected = t.grad.numpy(force=True)  # force: torch's step functions give ZeroTensors
            np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-9, atol=1e-12)


ONE = [
    ("exp2", normal(3, 4)),
    ("expm1", normal(3, 4)),
    ("deg2rad", normal(3, 4) * 90),
    ("rad2deg", normal(3, 4)),
    ("sinc", np.concatenate([normal(5), [0.0, 1.0, -2.0]])),
    ("frac", normal(3, 4) * 3),
    ("logit", unit(3, 4)),
    ("angle", np.array([-1.5, 0.0, 2.0, -0.0])),
    ("fix", normal(3, 4) * 3),
    ("sgn", np.array([-1.5, 0.0, 2.0])),
]
TWO = [
    ("xlogy", normal(3, 4), positive(4)),
    ("atan2", normal(3, 4), normal(3, 1, seed=1)),
    ("arctan2", normal(4), normal(3, 4, seed=1)),
    ("hypot", normal(3, 4), normal(4, seed=1)),
    ("logaddexp", normal(3, 4) * 30, normal(4, seed=1) * 30),
    ("logaddexp2", normal(3, 4), normal(3, 4, seed=1)),
    ("copysign", normal(3, 4), normal(4, seed=1)),
    ("fmax", np.round(normal(3, 4)), np.round(normal(4, seed=1))),
    ("fmin", np.round(normal(3, 4)), np.round(normal(4, seed=1))),
    ("ldexp", normal(3, 4), np.round(normal(4, seed=1) * 3)),
    ("float_power", positive(3, 4), normal(4, seed=1)),
]
THREE = [
    ("lerp", normal(3, 4), normal(4, seed=1), unit(3, 1, seed=2)),
    ("addcmul", normal(3, 4), normal(4, seed=1), normal(3, 1, seed=2)),
    ("addcdiv", normal(3, 4), normal(4, seed=1), positive(3, 1, seed=2)),
]
PRODUCTS = [
    ("inner", normal(2, 3, 4), normal(5, 4, seed=1)),
    ("vdot", normal(4), normal(4, seed=1)),
    ("addmv", normal(3), normal(3, 4, seed=1), normal(4, seed=2)),
    ("addbmm", normal(3, 5), normal(2, 3, 4, seed=1), normal(2, 4, 5, seed=2)),
    ("baddbmm", normal(1, 5), normal(2, 3, 4, seed=1), normal(2, 4, 5, seed=2)),
    ("trace", normal(3, 5)),
]


@pytest.mark.parametrize("method", [False, True], ids=["function", "method"])
@pytest.mark.parametrize(("name", "arrays"), [(c[0], c[1:]) for c in ONE + TWO + THREE + PRODUCTS],
                         ids=[c[0] for c in ONE + TWO + THREE + PRODUCTS])  # fmt: skip
def test_values_and_gradients_match_torch(name, arrays, method):
    same(name, *arrays, method=method)


@pytest.mark.parametrize(
    ("name", "kwargs", "arrays"),
    [
        ("logit", {"eps": 0.2}, [np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.3])]),
        ("addcmul", {"value": 0.5}, [normal(3), normal(3, seed=1), normal(3, seed=2)]),
        ("addcdiv", {"value": -2}, [normal(3), normal(3, seed=1), positive(3, seed=2)]),
        ("addmv", {"beta": 0.5, "alpha": 2}, [normal(3), normal(3, 4), normal(4)]),
        ("baddbmm", {"beta": 0, "alpha": 3}, [normal(3, 5), normal(2, 3, 4), normal(2, 4, 5)]),
        ("addbmm", {"beta": 2}, [normal(5), normal(2, 3, 4), normal(2, 4, 5)]),
    ],
)
def test_keywords_match_torch(name, kwargs, arrays):
    same(name, *arrays, kwargs=kwargs)


def test_trace_of_a_tall_matrix_has_the_identity_for_gradient():
    """torch 2.11 puts one entry of a tall matrix's trace gradient off the diagonal (2.13: eye)."""
    x = tc.tensor(normal(4, 2), requires_grad=True)
    tc.trace(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(4, 2))
    assert float(tc.trace(x)) == float(torch.trace(torch.tensor(normal(4, 2))))


def test_a_number_for_either_operand_and_chain_matmul():
    x = normal(3, 4)
    for ours, theirs in [
        (tc.xlogy(2, tc.tensor(positive(3))), torch.xlogy(2, torch.tensor(positive(3)))),
        (tc.xlogy(tc.tensor(x), 3.0), torch.xlogy(torch.tensor(x), 3.0)),
        (tc.float_power(2, tc.tensor([1, 3])), torch.float_power(2, torch.tensor([1, 3]))),
        (tc.float_power(tc.tensor(x), 2), torch.float_power(torch.tensor(x), 2)),
        (tc.lerp(tc.tensor(x), tc.tensor(-x), 0.25), torch.tensor(x).lerp(-torch.tensor(x), 0.25)),
        (tc.inner(tc.tensor(2.0), tc.tensor(x)), torch.inner(torch.tensor(2.0), torch.tensor(x))),
    ]:  # fmt: skip
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    mats = [normal(2, 3), normal(3, 5, seed=1), normal(5, 2, seed=2)]
    xs, ts = both(*mats)
    with pytest.warns(UserWarning):
        expected = torch.chain_matmul(*ts)
    ours = tc.chain_matmul(*xs)
    np.testing.assert_allclose(ours.numpy(), expected.detach().numpy(), rtol=1e-10)
    ours.sum().backward()
    expected.sum().backward()
    for a, t in zip(xs, ts):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10)
    assert tc.chain_matmul(xs[0]) is xs[0]


def test_dtypes_are_torchs():
    ints = tc.tensor([1, 2, 3])
    for name in ("exp2", "expm1", "deg2rad", "rad2deg", "sinc", "logit", "angle"):
        assert getattr(tc, name)(ints).dtype == np.float32, name
    for name in ("xlogy", "atan2", "copysign", "ldexp"):
        assert getattr(tc, name)(ints, ints).dtype == np.float32, name
    assert tc.fmax(ints, tc.tensor([3, 2, 1])).numpy().tolist() == [3, 2, 3]
    assert tc.fmax(ints, tc.tensor([3, 2, 1])).dtype == np.int64
    assert tc.float_power(tc.ones(2), 2).dtype == np.float64
    x32, x64 = tc.ones(3), tc.ones(3, dtype=tc.float64)
    assert tc.hypot(x32, x64).dtype == np.float64
    assert tc.hypot(x32, tc.tensor(2.0, dtype=tc.float64)).dtype == np.float32  # 0-d gives way
    assert tc.signbit(tc.tensor([-0.0, 0.0, -2.0])).numpy().tolist() == [True, False, True]
    assert tc.exp2(tc.ones(2, dtype=tc.float16)).dtype == np.float16


def test_edge_values_are_torchs():
    cases = [
        (lambda m: m.xlogy(m.tensor([0.0, 0.0, 0.0, 1.0]), m.tensor([0.0, math.nan, 2.0, 0.0]))),
        (lambda m: m.sinc(m.tensor([0.0, 1.0, -0.5]))),
        (lambda m: m.logit(m.tensor([0.0, 1.0, 1.5]))),
        (lambda m: m.copysign(m.tensor([1.0, 2.0]), m.tensor([-0.0, 0.0]))),
        (lambda m: m.fmax(m.tensor([math.nan, 1.0, math.nan]), m.tensor([2.0, math.nan, 0.0]))),
        (lambda m: m.fmin(m.tensor([math.nan, 1.0]), m.tensor([2.0, math.nan]))),
        (lambda m: m.angle(m.tensor([-1.0, math.nan, 0.0]))),
        (lambda m: m.heaviside(m.tensor([-1.0, 0.0, 2.0]), m.tensor([0.5]))),
        (lambda m: m.frexp(m.tensor([3.0, 0.0, -5.0, 0.1])).mantissa),
        (lambda m: m.frexp(m.tensor([3.0, 0.0, -5.0, 0.1])).exponent),
        (lambda m: m.logaddexp(m.tensor([-math.inf, 1e3]), m.tensor([-math.inf, 1e3]))),
    ]  # fmt: skip
    for case in cases:
        ours, theirs = case(tc), case(torch)
        assert ours.dtype == np.dtype(str(theirs.dtype).removeprefix("torch."))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_edge_gradients_are_torchs():
    cases = [
        (tc.xlogy, torch.xlogy, [[0.0, 0.0, 0.0, 2.0], [0.0, 0.5, -1.0, 3.0]]),
        (tc.copysign, torch.copysign, [[0.0, -2.0, 3.0], [1.0, 1.0, -1.0]]),
        (tc.fmax, torch.fmax, [[1.0, 2.0, math.nan], [1.0, math.nan, 0.0]]),
        (lambda x, y: tc.logit(x, 0.25) * y, lambda x, y: torch.logit(x, 0.25) * y,
         [[0.1, 0.5, 0.8], [1.0, 1.0, 1.0]]),
        (lambda x, y: tc.sinc(x) * y, lambda x, y: torch.sinc(x) * y, [[0.0, 1.0, 2.5], [1, 1, 1]]),
        (lambda x, y: tc.frexp(x * y).mantissa, lambda x, y: torch.frexp(x * y).mantissa,
         [[1.5, -2.5, 0.3], [1.0, 2.0, 3.0]]),
    ]  # fmt: skip
    for ours, theirs, arrays in cases:
        xs, ts = both(*map(np.array, arrays))
        ours(*xs).sum().backward()
        theirs(*ts).sum().backward()
        for x, t in zip(xs, ts):
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9)


def test_in_place_forms_write_the_tensor_as_torchs():
    a, g, d = normal(3, 4), normal(3, 4, seed=1), positive(3, 4, seed=2)
    results = []
    for lib in (tc, torch):
        v, p = lib.tensor(a.copy()), lib.tensor(a.copy())
        v.mul_(0.9).addcmul_(lib.tensor(g), lib.tensor(g), value=0.1)  # Adam's second moment
        p.addcdiv_(lib.tensor(g), lib.tensor(d), value=-0.01)  # and its step
        q, r = lib.tensor(np.abs(a) + 0.5), lib.tensor(a.copy())
        q.lgamma_().mul_(2)
        r.exp2_().atan2_(lib.tensor(g))
        m = lib.tensor(a[None].copy())  # (1, 3, 4)
        m.baddbmm_(lib.tensor(g[None]), lib.tensor(d[None, :, :].transpose(0, 2, 1) @ d[None]))
        results.append([t.numpy() for t in (v, p, q, r, m)])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    x, t = tc.Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = x * 2.0, t * 2.0
    y.erf_().hypot_(tc.tensor(g))
    u.erf_().hypot_(torch.tensor(g))
    y.backward(d)
    u.backward(torch.tensor(d))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_real_tensors_real_imag_and_conj_are_torchs():
    x = tc.tensor([1.0, -2.0])
    assert tc.real(x) is x and x.real is x and tc.conj(x) is x and x.conj() is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex"):
        x.imag  # noqa: B018
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        tc.imag(x)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 99))
def test_gradients_match_finite_differences(shape, seed):
    a, b = normal(*shape, seed=seed), normal(*shape[1:], seed=seed + 1)
    for f in (tc.atan2, tc.hypot, tc.logaddexp, tc.logaddexp2, tc.fmax, tc.copysign, tc.ldexp):
        check_grads(f, a, b)
    check_grads(tc.xlogy, a, np.abs(b) + 0.5)
    check_grads(lambda x, y: tc.addcdiv(x, x, y + 3.0, value=0.5), a, np.abs(b))
    check_grads(lambda x: tc.sinc(x) + tc.expm1(x) + tc.exp2(x) + tc.frac(x), a)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: tc.exp2(x, out=x), TypeError, "exp2: out= is not supported"),
        (lambda x: tc.exp2([1.0]), TypeError, "exp2: input must be a Tensor"),
        (lambda x: tc.atan2(x, tc.ones(2)), ValueError, r"atan2: shapes \(3,\) and \(2,\)"),
        (lambda x: tc.xlogy(x, "a"), TypeError, "xlogy: a tensor of shape"),
        (lambda x: tc.hypot(tc.tensor([1]), x), TypeError, "hypot: input must be float"),
        (lambda x: tc.logaddexp(x, tc.tensor([1, 2, 3])), TypeError, "logaddexp: input must"),
        (lambda x: tc.frac(tc.tensor([1])), TypeError, "frac: input must be a float tensor"),
        (lambda x: tc.frexp(tc.tensor([1])), TypeError, "frexp: input must be a float"),
        (lambda x: tc.heaviside(x, tc.tensor([1])), TypeError, "heaviside: values must be"),
        (lambda x: tc.logit(x, "a"), TypeError, "logit: eps"),
        (lambda x: tc.addcdiv(x, tc.tensor([1]), tc.tensor([2])), TypeError, "addcdiv: tensor1"),
        (lambda x: tc.addcmul(x, x, x, value="a"), TypeError, "addcmul: value"),
        (lambda x: tc.inner(x, tc.ones(2)), ValueError, "inner: the shapes of input and other"),
        (lambda x: tc.vdot(x, tc.ones(2)), ValueError, "vdot: the shapes"),
        (lambda x: tc.trace(tc.ones(2, 2, 2)), RuntimeError, "trace: input's shape must be"),
        (lambda x: tc.addmv(x, tc.ones(3, 2), x), ValueError, "addmv: the shapes of mat and vec"),
        (lambda x: tc.addmv(tc.ones(2), tc.ones(3, 3), x), ValueError, "addmv: input's shape"),
        (lambda x: tc.baddbmm(x, tc.ones(2, 3, 3), tc.ones(3, 3, 3)), ValueError, "baddbmm"),
        (lambda x: tc.addbmm(x, tc.ones(2, 3, 3), tc.ones(2, 3, 3), beta="a"), TypeError, "beta"),
        (lambda x: tc.chain_matmul(), RuntimeError, "chain_matmul: expected one or more"),
        (lambda x: tc.chain_matmul(x), ValueError, r"chain_matmul: matrices\[0\] must be a 2-D"),
        (lambda x: tc.float_power(x, "a"), TypeError, "float_power: exponent"),
    ],
)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call(tc.tensor([0.5, 2.0, 1.0]))
