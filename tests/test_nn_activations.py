"""tricycle.nn's further activations (tricycle/nn/activations.py) and their F functions:
forward and gradient against PyTorch in float64 at their kinks, bounds and tails and in
float32 on every backend, gradients against finite differences over random shapes, PReLU's
parameter gradient (one slope and per channel), ``inplace``, and the errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle.nn as nn
import tricycle.nn.functional as F
from tests.helpers import check_grads
from tricycle import backend
from tricycle.tensor import Tensor

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)

# (id, our layer, our F call, torch's call of (torch, x), the kinks: points where the slope
# jumps, which finite differences must stay away from)
CASES = [
    ("elu", lambda: nn.ELU(), F.elu, lambda t, x: t.nn.functional.elu(x), [0.0]),
    ("elu_alpha", lambda: nn.ELU(0.4), lambda x: F.elu(x, 0.4),
     lambda t, x: t.nn.functional.elu(x, 0.4), [0.0]),
    ("elu_negative_alpha", lambda: nn.ELU(-0.5), lambda x: F.elu(x, -0.5),
     lambda t, x: t.nn.functional.elu(x, -0.5), [0.0]),
    ("selu", lambda: nn.SELU(), F.selu, lambda t, x: t.nn.functional.selu(x), [0.0]),
    ("celu", lambda: nn.CELU(1.7), lambda x: F.celu(x, 1.7),
     lambda t, x: t.nn.functional.celu(x, 1.7), [0.0]),
    ("celu_negative_alpha", lambda: nn.CELU(-0.5), lambda x: F.celu(x, -0.5),
     lambda t, x: t.nn.functional.celu(x, -0.5), [0.0]),
    ("softplus", lambda: nn.Softplus(), F.softplus, lambda t, x: t.nn.functional.softplus(x),
     [20.0]),
    ("softplus_beta_threshold", lambda: nn.Softplus(2.0, 6.0), lambda x: F.softplus(x, 2.0, 6.0),
     lambda t, x: t.nn.functional.softplus(x, 2.0, 6.0), [3.0]),
    ("softplus_negative_beta", lambda: nn.Softplus(-1.5, 3.0), lambda x: F.softplus(x, -1.5, 3.0),
     lambda t, x: t.nn.functional.softplus(x, -1.5, 3.0), [-2.0]),
    ("mish", lambda: nn.Mish(), F.mish, lambda t, x: t.nn.functional.mish(x), []),
    ("hardtanh", lambda: nn.Hardtanh(), F.hardtanh, lambda t, x: t.nn.functional.hardtanh(x),
     [-1.0, 1.0]),
    ("hardtanh_bounds", lambda: nn.Hardtanh(-3.0, 0.5), lambda x: F.hardtanh(x, -3.0, 0.5),
     lambda t, x: t.nn.functional.hardtanh(x, -3.0, 0.5), [-3.0, 0.5]),
    ("relu6", lambda: nn.ReLU6(), F.relu6, lambda t, x: t.nn.functional.relu6(x), [0.0, 6.0]),
    ("hardsigmoid", lambda: nn.Hardsigmoid(), F.hardsigmoid,
     lambda t, x: t.nn.functional.hardsigmoid(x), [-3.0, 3.0]),
    ("hardswish", lambda: nn.Hardswish(), F.hardswish,
     lambda t, x: t.nn.functional.hardswish(x), [-3.0, 3.0]),
    ("softsign", lambda: nn.Softsign(), F.softsign, lambda t, x: t.nn.functional.softsign(x), []),
    ("logsigmoid", lambda: nn.LogSigmoid(), F.logsigmoid,
     lambda t, x: t.nn.functional.logsigmoid(x), []),
    ("tanhshrink", lambda: nn.Tanhshrink(), F.tanhshrink,
     lambda t, x: t.nn.functional.tanhshrink(x), []),
    ("threshold", lambda: nn.Threshold(0.5, -2.0), lambda x: F.threshold(x, 0.5, -2.0),
     lambda t, x: t.nn.functional.threshold(x, 0.5, -2.0), [0.5]),
    ("prelu", lambda: nn.PReLU(), lambda x: F.prelu(x, Tensor(np.array([0.25]))),
     lambda t, x: t.nn.functional.prelu(x, t.tensor([0.25], dtype=x.dtype)), [0.0]),
    ("softmin", lambda: nn.Softmin(), F.softmin, lambda t, x: t.nn.functional.softmin(x, -1), []),
]  # fmt: skip
IDS = [case[0] for case in CASES]
# every kink, and the magnitudes where a naive formula overflows or loses its tail
SPECIAL = [-100.0, -40.0, -6.0, -3.0, -2.0, -1.0, -1e-9, 0.0, 1e-9, 0.5, 1.0, 2.0, 3.0, 6.0,
           10.0, 20.0, 20.5, 40.0, 100.0]  # fmt: skip
# PyTorch's backward rounds Hardsigmoid's slope 1/6, and CELU's 1 / alpha, to float32 in
# every dtype: ours are exact
GRAD_RTOL = {"hardsigmoid": 1e-7, "celu": 1e-6}


def torch_tensor(array, grad=False):
    torch = pytest.importorskip("torch")
    return torch.tensor(array, requires_grad=grad)


def inputs(seed: int = 0) -> np.ndarray:
    """(4, 3, 8) float64: the special points, then normal values on three scales."""
    rng = np.random.default_rng(seed)
    n = 96 - len(SPECIAL)
    return np.concatenate([SPECIAL, rng.normal(size=n) * rng.choice([0.3, 3, 30], n)]).reshape(
        4, 3, 8
    )


def away_from(kinks, shape, seed: int) -> np.ndarray:
    """Normal values (scale 3) at least 0.05 from every kink, for finite differences."""
    x = np.random.default_rng(seed).normal(size=shape) * 3
    for kink in kinks:
        near = np.abs(x - kink) < 0.05
        x[near] = kink + 0.3
    return x


@pytest.mark.parametrize("name, make, functional, theirs, kinks", CASES, ids=IDS)
def test_forward_and_gradient_match_torch_at_kinks_and_tails(name, make, functional, theirs,
                                                             kinks):  # fmt: skip
    torch = pytest.importorskip("torch")
    x = inputs()
    dout = np.random.default_rng(1).normal(size=x.shape)
    expected_in = torch_tensor(x, grad=True)
    expected = theirs(torch, expected_in)
    expected.backward(torch_tensor(dout))
    for op in (make(), functional):
        ours_in = Tensor(x, requires_grad=True)
        out = op(ours_in)
        out.backward(dout)
        assert out.dtype == ours_in.grad.dtype == np.float64
        np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(
            ours_in.grad.array, expected_in.grad.numpy(), rtol=GRAD_RTOL.get(name, 1e-12),
            atol=1e-14,
        )  # fmt: skip


@pytest.mark.filterwarnings("ignore:overflow")  # CELU(-0.5) at -100 is e^200: inf in float32
@pytest.mark.parametrize("name, make, functional, theirs, kinks", CASES, ids=IDS)
def test_float32_on_every_backend_matches_torch(xp, name, make, functional, theirs, kinks):
    torch = pytest.importorskip("torch")
    x = inputs(2).astype(np.float32)
    dout = np.random.default_rng(3).normal(size=x.shape).astype(np.float32)
    layer = make()
    if xp is not np:
        layer.to_gpu()
    ours_in = Tensor(xp.asarray(x), requires_grad=True)
    out = layer(ours_in)
    out.backward(xp.asarray(dout))
    expected_in = torch_tensor(x, grad=True)
    expected = theirs(torch, expected_in)
    expected.backward(torch_tensor(dout))
    host = backend.to_host_array
    assert out.dtype == ours_in.grad.dtype == np.float32
    np.testing.assert_allclose(host(out.array), expected.detach().numpy(), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(host(ours_in.grad.array), expected_in.grad.numpy(), rtol=2e-6,
                               atol=2e-6)  # fmt: skip


@given(shape=shapes, case=st.integers(0, len(CASES) - 1))
def test_gradients_match_finite_differences(shape, case):
    name, make, _, _, kinks = CASES[case]
    check_grads(make(), away_from(kinks, shape, seed=case))


def test_softplus_is_linear_above_its_threshold_and_exact_in_its_tail():
    out = nn.Softplus(beta=2.0, threshold=6.0)(Tensor(np.array([3.0, 3.0 + 1e-12, -300.0])))
    assert out.array[1] == 3.0 + 1e-12  # beta x > threshold: x itself
    np.testing.assert_allclose(out.array[0], np.log1p(np.exp(6.0)) / 2, rtol=1e-15)
    np.testing.assert_allclose(out.array[2], np.exp(-600.0) / 2, rtol=1e-15)  # not 0
    assert nn.LogSigmoid()(Tensor(np.array([-1000.0]))).array[0] == -1000.0
    assert nn.Mish()(Tensor(np.array([-1000.0, 1000.0]))).array.tolist() == [-0.0, 1000.0]


# ====================================================================== PReLU
@pytest.mark.parametrize("shape, channels", [((4, 3, 5), 3), ((4, 3), 3), ((2, 3, 2, 2), 3),
                                             ((4, 3, 5), 1), ((5,), 1), ((), 1)])  # fmt: skip
def test_prelu_input_and_weight_gradients_match_torch(shape, channels):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.normal(size=shape)
    x.reshape(-1)[:2] = 0.0  # the kink: the slope there is w, as in PyTorch
    weights = rng.uniform(-0.5, 0.5, size=channels)
    dout = rng.normal(size=shape)
    layer = nn.PReLU(channels)
    layer.weights = Tensor(weights, requires_grad=True)
    ours_in = Tensor(x, requires_grad=True)
    out = layer(ours_in)
    out.backward(dout)
    expected_in, expected_w = torch_tensor(x, grad=True), torch_tensor(weights, grad=True)
    expected = torch.nn.functional.prelu(expected_in, expected_w)
    expected.backward(torch_tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(ours_in.grad.array, expected_in.grad.numpy(), rtol=1e-13)
    np.testing.assert_allclose(layer.weights.grad.array, expected_w.grad.numpy(), rtol=1e-12)


@given(lead=st.integers(1, 3), channels=st.integers(1, 4), tail=shapes, single=st.booleans())
def test_prelu_gradients_match_finite_differences(lead, channels, tail, single):
    rng = np.random.default_rng(channels)
    shape = (lead, channels) + tail[:1]
    weights = rng.uniform(-1, 1, size=1 if single else channels)
    check_grads(F.prelu, away_from([0.0], shape, seed=lead), weights)


def test_prelu_layer_holds_a_float32_parameter_per_channel():
    layer = nn.PReLU(num_parameters=3, init=0.1)
    assert [name for name, _ in layer.named_parameters()] == ["weights"]
    assert layer.weights.shape == (3,) and layer.weights.dtype == np.float32
    np.testing.assert_allclose(layer.weights.array, 0.1)
    out = layer(Tensor(-np.ones((2, 3), dtype=np.float32)))
    assert out.dtype == np.float32 and repr(layer) == "PReLU(num_parameters=3)  # 3 parameters"
    out.sum().backward()
    assert layer.weights.grad.dtype == np.float32
    np.testing.assert_allclose(layer.weights.grad.array, [-2.0, -2.0, -2.0])


# ====================================================================== softmax variants
@pytest.mark.parametrize("shape", [(3, 4, 5), (2, 3, 4, 5)])
def test_softmax2d_matches_torch(shape):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(5).normal(size=shape) * 3
    dout = np.random.default_rng(6).normal(size=shape)
    ours_in, expected_in = Tensor(x, requires_grad=True), torch_tensor(x, grad=True)
    out, expected = nn.Softmax2d()(ours_in), torch.nn.Softmax2d()(expected_in)
    out.backward(dout)
    expected.backward(torch_tensor(dout))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours_in.grad.array, expected_in.grad.numpy(), atol=1e-14)
    check_grads(nn.Softmax2d(), x[..., :2, :2])


# ====================================================================== inplace
@pytest.mark.parametrize("make", [
    lambda inplace: nn.ELU(inplace=inplace), lambda inplace: nn.SELU(inplace),
    lambda inplace: nn.CELU(inplace=inplace), lambda inplace: nn.Mish(inplace),
    lambda inplace: nn.Hardtanh(inplace=inplace), lambda inplace: nn.ReLU6(inplace),
    lambda inplace: nn.Hardsigmoid(inplace), lambda inplace: nn.Hardswish(inplace),
    lambda inplace: nn.Threshold(0.1, 2.0, inplace),
], ids=["elu", "selu", "celu", "mish", "hardtanh", "relu6", "hardsigmoid", "hardswish",
        "threshold"])  # fmt: skip
def test_inplace_is_accepted_and_computes_out_of_place(make):
    x = inputs(7)
    ours_in = Tensor(x.copy(), requires_grad=True)
    layer = make(True)
    out = layer(ours_in)
    out.backward(np.ones_like(x))
    plain_in = Tensor(x.copy(), requires_grad=True)
    expected = make(False)(plain_in)
    expected.backward(np.ones_like(x))
    assert out is not ours_in and np.array_equal(ours_in.array, x)  # the input is untouched
    np.testing.assert_array_equal(out.array, expected.array)
    np.testing.assert_array_equal(ours_in.grad.array, plain_in.grad.array)
    assert repr(layer).endswith("inplace=True)") and "inplace" not in repr(make(False))
    with pytest.raises(TypeError, match=r"must be True or False, got 1$"):
        make(1)


def test_f_functions_take_inplace():
    x = Tensor(inputs(8))
    np.testing.assert_array_equal(F.elu(x, 0.5, True).array, F.elu(x, 0.5).array)
    np.testing.assert_array_equal(F.relu6(x, inplace=True).array, F.hardtanh(x, 0.0, 6.0).array)


# ====================================================================== errors
def test_bad_arguments_and_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match=r"^CELU: alpha must be a finite number other than 0, "
                       r"got 0$"):  # fmt: skip
        nn.CELU(alpha=0)
    with pytest.raises(ValueError, match=r"^Softplus: beta must be a finite number other than 0"):
        F.softplus(Tensor(np.ones(2)), beta=0.0)
    with pytest.raises(TypeError, match=r"^ELU: alpha must be a finite number, got '1'$"):
        nn.ELU("1")
    with pytest.raises(ValueError, match=r"^Hardtanh: max_val \(1.0\) must be greater than "
                       r"min_val \(1.0\)$"):  # fmt: skip
        nn.Hardtanh(1.0, 1.0)
    with pytest.raises(ValueError, match=r"^Hardtanh: max_val \(-1\) must be greater than"):
        F.hardtanh(Tensor(np.ones(2)), 1, -1)
    with pytest.raises(TypeError, match=r"^Threshold: value must be a finite number, got None$"):
        nn.Threshold(0.0, None)
    with pytest.raises(ValueError, match=r"^PReLU: num_parameters must be an integer >= 1, got 0$"):
        nn.PReLU(0)
    with pytest.raises(TypeError, match=r"^Mish: needs a floating tensor, got dtype int64"):
        nn.Mish()(Tensor(np.arange(3)))
    with pytest.raises(TypeError, match=r"^Hardswish: needs a floating tensor"):
        nn.Hardswish()(Tensor(np.arange(3)))
    with pytest.raises(ValueError, match=r"^prelu: 3 weights need the input's channels on axis "
                       r"1, \(N, 3, ...\), got shape \(2, 4\)$"):  # fmt: skip
        nn.PReLU(3)(Tensor(np.ones((2, 4))))
    with pytest.raises(ValueError, match=r"^prelu: 3 weights need .* got shape \(3,\)$"):
        nn.PReLU(3)(Tensor(np.ones(3)))
    with pytest.raises(ValueError, match=r"^prelu: weights must be \(C,\) or a single number, "
                       r"got shape \(1, 2\)$"):  # fmt: skip
        F.prelu(Tensor(np.ones((2, 2))), Tensor(np.ones((1, 2))))
    with pytest.raises(ValueError, match=r"^Softmax2d: expected an input \(N, C, H, W\) or "
                       r"\(C, H, W\), got shape \(2, 3\)$"):  # fmt: skip
        nn.Softmax2d()(Tensor(np.ones((2, 3))))


def test_every_new_name_is_exported():
    names = ["CELU", "ELU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid", "Mish",
             "PReLU", "ReLU6", "Softmax2d", "Softmin", "Softplus", "Softsign", "Tanhshrink",
             "Threshold"]  # fmt: skip
    functions = ["elu", "selu", "celu", "softplus", "mish", "hardtanh", "relu6", "hardsigmoid",
                 "hardswish", "prelu", "softsign", "logsigmoid", "tanhshrink", "threshold",
                 "softmin"]  # fmt: skip
    assert set(names) <= set(nn.__all__) and all(hasattr(nn, name) for name in names)
    assert set(functions) <= set(F.__all__) and all(callable(getattr(F, f)) for f in functions)
