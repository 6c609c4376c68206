"""Activations: erf accuracy, finite-difference gradients, and agreement with torch."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend, dispatch, precision
from tricycle.activation import (
    GLU,
    GeLU,
    LeakyReLU,
    ReLU,
    SiLU,
    Swish,
    erf,
    gelu_backward,
    gelu_forward,
    swiglu_forward,
)
from tricycle.tensor import Tensor, to_tensor

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
APPROXIMATIONS = [False, "tanh"]


def away_from_zero(shape, seed=0):
    """Normal values kept 0.05 away from 0, where ReLU-like functions have a kink."""
    x = np.random.default_rng(seed).normal(size=shape) * 2
    return np.where(np.abs(x) < 0.05, 0.5, x)


@pytest.mark.parametrize("dtype, tolerance", [(np.float32, 5e-7), (np.float64, 1e-15)])
def test_erf_is_accurate_to_its_dtype(dtype, tolerance):
    x = np.concatenate([np.linspace(-9, 9, 20001), [0.0, 1.0, -1.0, 8.0, 30.0, -30.0]])
    x = x.astype(dtype)
    expected = np.array([math.erf(v) for v in x.astype(np.float64)])
    out = erf(np, x)
    assert out.dtype == dtype
    np.testing.assert_allclose(out, expected, rtol=0, atol=tolerance)


def test_readme_relu():
    out = ReLU()(to_tensor([-1, 0, 1]))
    assert out.name == "> 0"
    np.testing.assert_array_equal(out.array, [0.0, 0.0, 1.0])


@given(shapes)
def test_relu_gradients(shape):
    check_grads(ReLU(), away_from_zero(shape))


@given(shapes, st.floats(0.0, 0.5))
def test_leaky_relu_gradients(shape, slope):
    check_grads(LeakyReLU(slope), away_from_zero(shape, seed=1))


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
@given(shape=shapes)
def test_gelu_gradients(approximate, shape):
    check_grads(GeLU(approximate), np.random.default_rng(2).normal(size=shape) * 3)


@given(shapes)
def test_swish_gradients(shape):
    check_grads(Swish(), np.random.default_rng(3).normal(size=shape) * 3)


@given(st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple), st.integers(1, 3))
def test_glu_gradients(lead, size):
    rng = np.random.default_rng(4)
    layer = GLU(size)

    def f(x, weights, bias):
        layer.linear.weights, layer.linear.bias = weights, bias
        return layer(x)

    out = check_grads(
        f,
        rng.normal(size=lead + (size,)),
        rng.normal(size=(size, 2 * size)),
        rng.normal(size=2 * size),
    )
    assert out.shape == lead + (size,)


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
def test_gelu_keeps_float32(approximate):
    x = np.random.default_rng(5).normal(size=(3, 7)).astype(np.float32)
    dy = np.random.default_rng(6).normal(size=x.shape).astype(np.float32)
    reference = (gelu_forward, gelu_backward)
    for forward, backward in (reference, dispatch.choose("gelu", reference, x)):
        y, dx = forward(np, x, approximate), backward(np, x, dy, approximate)
        assert y.dtype == dx.dtype == np.float32


@pytest.mark.parametrize("approximate", APPROXIMATIONS)
@given(shape=shapes, seed=st.integers(0, 2**16))
def test_gelu_backward_is_the_derivative(approximate, shape, seed):
    """The backward's slope (dy = 1) matches central differences of the forward in float64."""
    x = np.random.default_rng(seed).normal(size=shape) * 3
    slope = gelu_backward(np, x, np.ones_like(x), approximate)
    h = 1e-6
    above, below = gelu_forward(np, x + h, approximate), gelu_forward(np, x - h, approximate)
    numeric = (above - below) / (2 * h)
    np.testing.assert_allclose(slope, numeric, rtol=1e-6, atol=1e-8)


def test_gelu_rejects_unknown_approximations():
    with pytest.raises(ValueError, match="approximate"):
        GeLU("sigmoid")


def test_silu_is_swish():
    assert SiLU is Swish


TORCH_CASES = [
    ("relu", lambda: ReLU(), lambda F, x: F.relu(x)),
    ("leaky_relu", lambda: LeakyReLU(0.1), lambda F, x: F.leaky_relu(x, 0.1)),
    ("gelu", lambda: GeLU(), lambda F, x: F.gelu(x)),
    ("gelu_true", lambda: GeLU(approximate=True), lambda F, x: F.gelu(x, approximate="tanh")),
    ("gelu_tanh", lambda: GeLU("tanh"), lambda F, x: F.gelu(x, approximate="tanh")),
    ("swish", lambda: Swish(), lambda F, x: F.silu(x)),
]


@pytest.mark.parametrize("name, make, reference", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_matches_torch(xp, name, make, reference):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = (rng.normal(size=(4, 5, 6)) * 3).astype(np.float32)
    x[0, 0, :3] = [-12.0, 0.0, 12.0]  # the tails and the kink
    dy = rng.normal(size=x.shape).astype(np.float32)
    ours = Tensor(xp.asarray(x))
    out = make()(ours)
    out.backward(xp.asarray(dy))
    xt = torch.tensor(x, requires_grad=True)
    ref = reference(torch.nn.functional, xt)
    ref.backward(torch.tensor(dy))
    host = backend.to_host_array
    assert out.dtype == np.float32 and ours.grad.dtype == np.float32
    np.testing.assert_allclose(host(out.array), ref.detach().numpy(), rtol=1e-5, atol=2e-6)
    np.testing.assert_allclose(host(ours.grad.array), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_glu_matches_torch():
    torch = pytest.importorskip("torch")
    np.random.seed(8)
    layer = GLU(3)
    layer.linear.bias.array[:] = np.random.normal(size=6)
    x = np.random.normal(size=(2, 3)).astype(np.float32)
    out = layer(to_tensor(x))
    weights = torch.tensor(layer.linear.weights.array)
    bias = torch.tensor(layer.linear.bias.array)
    ref = torch.nn.functional.glu(torch.tensor(x) @ weights + bias, dim=-1)
    np.testing.assert_allclose(out.array, ref.numpy(), rtol=1e-5, atol=1e-6)


def test_tanh_gelu_matches_composed_ops():
    """The reference formula, op for op (the kernels are checked against it in
    test_cpu_kernels.py: their rounding differs where 1 + tanh cancels)."""
    x = np.random.default_rng(9).normal(size=(3, 4)) * 2
    dy = np.random.default_rng(10).normal(size=x.shape)
    ours, theirs = Tensor(x), Tensor(x.copy())
    with dispatch.references():
        out = GeLU(approximate=True)(ours)
        out.backward(dy)
    inner = (theirs + (theirs**3) * 0.044715) * np.sqrt(2 / np.pi)
    reference = theirs * (inner.tanh() + 1.0) * 0.5
    reference.backward(dy)
    np.testing.assert_allclose(out.array, reference.array, rtol=1e-12)
    np.testing.assert_allclose(ours.grad.array, theirs.grad.array, rtol=1e-10, atol=1e-14)


def test_exact_gelu_matches_math_erf():
    x = np.linspace(-8, 8, 101)
    expected = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x]
    np.testing.assert_allclose(gelu_forward(np, x), expected, rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(
        gelu_forward(np, x.astype(np.float32)), expected, rtol=2e-6, atol=1e-6
    )


def test_activation_used_twice_in_one_graph():
    check_grads(lambda x: GeLU()(x) * GeLU("tanh")(GeLU()(x)), [[-1.5, 0.3], [2.0, -0.2]])


@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_swiglu_keeps_a_16_bit_dtype_on_gpu(dtype):
    """cupy computes a 16-bit exp in float32: the gate must still return x's dtype, or the
    down projection after it runs in float32."""
    cp = backend.cupy()
    dtype = precision.bfloat16() if dtype == "bfloat16" else np.dtype(dtype)
    x = cp.asarray(np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)).astype(dtype)
    out = swiglu_forward(cp, x)
    assert out.dtype == dtype
    a, b = cp.asnumpy(x.astype(np.float32)[:, :4]), cp.asnumpy(x.astype(np.float32)[:, 4:])
    reference = a / (1 + np.exp(-a)) * b
    np.testing.assert_allclose(cp.asnumpy(out.astype(np.float32)), reference, rtol=2e-2, atol=2e-2)
