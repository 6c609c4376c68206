"""The manual's "Writing your own op" examples (docs/how-it-works.md) as tests: a dense layer
with a sigmoid written against ``xp`` with its closed-form backward, and a sigmoid whose
forward and backward are CUDA kernels launched through ``cupy.RawKernel`` (run only where
there is a GPU). The code below is the page's, verbatim (a test checks that), with more checks
around it."""

from __future__ import annotations  # the CUDA example's annotations name cupy, absent here

import functools
import inspect
from pathlib import Path

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st

import tricycle as tc
from tricycle import backend
from tricycle.tensor import Tensor

try:
    import cupy as cp
except ImportError:  # the CUDA example's tests skip
    cp = None

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "how-it-works.md").read_text("utf-8")
needs_gpu = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")


# ------------------------------------------------------------------ the manual's xp example
def dense_sigmoid(x: Tensor, weights: Tensor, bias: Tensor) -> Tensor:
    """sigmoid(x @ weights + bias): x (N, I), weights (I, J), bias (J,) -> (N, J)."""
    xp = x.xp
    out = 1 / (1 + xp.exp(-(x.array @ weights.array + bias.array)))  # (N, J)

    def through_sigmoid(dout):  # d out / d z = out * (1 - out)
        return dout * out * (1 - out)  # (N, J)

    return Tensor(
        out,
        args=(x, weights, bias),
        back_fns=(
            lambda dout: through_sigmoid(dout) @ weights.array.T,  # (N, I)
            lambda dout: x.array.T @ through_sigmoid(dout),  # (I, J)
            lambda dout: through_sigmoid(dout).sum(axis=0),  # (J,): bias was broadcast
        ),
        name="dense_sigmoid",
    )


# ------------------------------------------------------------------ the manual's CUDA example
SOURCE = r"""
extern "C" __global__ void sigmoid_forward(const T* x, T* y, const long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = (T)1 / ((T)1 + EXP(-x[i]));
}

extern "C" __global__ void sigmoid_backward(const T* y, const T* dy, T* dx, const long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dx[i] = dy[i] * y[i] * ((T)1 - y[i]);
}
"""
THREADS = 256


@functools.cache
def kernel(name: str, dtype: np.dtype) -> cp.RawKernel:
    """The kernel ``name`` for float32 or float64 data, compiled on first use."""
    ctype, exp = {"float32": ("float", "expf"), "float64": ("double", "exp")}[dtype.name]
    return cp.RawKernel(f"typedef {ctype} T;\n#define EXP {exp}\n{SOURCE}", name)


def launch(name: str, *arrays):
    """Run kernel ``name`` with one thread per element of the last array (the output)."""
    n = arrays[-1].size
    if n:
        blocks = (n + THREADS - 1) // THREADS
        with arrays[-1].device:
            kernel(name, arrays[-1].dtype)((blocks,), (THREADS,), (*arrays, np.int64(n)))


def sigmoid_cuda(x: Tensor) -> Tensor:
    """1 / (1 + e^-x), elementwise, by CUDA kernels: x must be a float32/64 tensor on a GPU."""
    if not x.on_gpu or x.dtype not in (np.float32, np.float64):
        raise TypeError(f"sigmoid_cuda: needs float32/64 on a GPU, got {x.dtype} on {x.device}")
    a = cp.ascontiguousarray(x.array)
    y = cp.empty_like(a)
    launch("sigmoid_forward", a, y)

    def back_fn(dout):
        dout = cp.ascontiguousarray(dout, dtype=y.dtype)
        dx = cp.empty_like(y)
        launch("sigmoid_backward", y, dout, dx)
        return dx

    return Tensor(y, args=(x,), back_fns=(back_fn,), name="sigmoid_cuda")


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("code", [dense_sigmoid, kernel, launch, sigmoid_cuda, SOURCE])
def test_the_manual_holds_this_code_verbatim(code):
    text = code if isinstance(code, str) else inspect.getsource(code)
    assert text in PAGE


@given(n=st.integers(1, 5), i=st.integers(1, 4), j=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_dense_sigmoid_gradients_against_finite_differences(n, i, j, seed):
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(n, i)), rng.normal(size=(i, j)), rng.normal(size=j)
    assert tc.gradcheck(dense_sigmoid, *inputs, rtol=1e-5, atol=1e-8)


def test_dense_sigmoid_in_a_diamond():
    """x feeds both the op and a product with its output: both gradients add."""
    rng = np.random.default_rng(0)
    check_grads(
        lambda x, w, b: dense_sigmoid(x, w, b) * dense_sigmoid(x, w, b).sum() + x.sum(),
        rng.normal(size=(3, 2)),
        rng.normal(size=(2, 2)),
        rng.normal(size=2),
    )


def test_dense_sigmoid_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, w, b = rng.normal(size=(5, 3)), rng.normal(size=(3, 4)), rng.normal(size=4)
    ours = [Tensor(a) for a in (x, w, b)]
    out = dense_sigmoid(*ours)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    theirs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    expected = torch.sigmoid(theirs[0] @ theirs[1] + theirs[2])
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, reference.grad.numpy(), rtol=1e-12)


@needs_gpu
def test_sigmoid_cuda_matches_the_library_sigmoid_in_float32():
    x = tc.randn(33, 65, device="cuda", requires_grad=True)  # not a multiple of the block
    y = sigmoid_cuda(x)
    assert y.device == x.device and y.dtype == np.float32
    expected = tc.sigmoid(x)
    np.testing.assert_allclose(y.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    upstream = tc.randn(33, 65, device="cuda")
    y.backward(upstream)
    ours = x.grad.numpy()
    x.grad = None
    expected.backward(upstream)
    np.testing.assert_allclose(ours, x.grad.numpy(), rtol=1e-5, atol=1e-7)


@needs_gpu
def test_sigmoid_cuda_gradcheck_in_float64_and_odd_layouts():
    x64 = tc.randn(3, 5, dtype="float64", device="cuda", requires_grad=True)
    assert tc.gradcheck(sigmoid_cuda, x64)
    assert tc.gradcheck(lambda t: sigmoid_cuda(t.T), x64)  # a transposed (strided) input
    check_grads(lambda t: sigmoid_cuda(t.to("cuda")).cpu().sum(), np.linspace(-3, 3, 7))
    empty = sigmoid_cuda(tc.zeros(0, 3, device="cuda"))
    assert empty.shape == (0, 3)


@needs_gpu
def test_sigmoid_cuda_refuses_cpu_and_integer_tensors():
    with pytest.raises(TypeError, match="sigmoid_cuda: needs float32/64 on a GPU"):
        sigmoid_cuda(tc.ones(3))
    with pytest.raises(TypeError, match="got int64 on cuda:0"):
        sigmoid_cuda(tc.arange(3, device="cuda"))
