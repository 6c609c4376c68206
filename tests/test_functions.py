"""Fused Softmax and LogSoftmax: finite-difference gradients, agreement with the same function
composed from primitive ops and with torch; Sigmoid and Tanh wrappers."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend, unary
from tricycle.functions import (
    LogSoftmax,
    Sigmoid,
    Softmax,
    Tanh,
    log_softmax_backward,
    log_softmax_forward,
    softmax_backward,
    softmax_forward,
)
from tricycle.tensor import Tensor, to_tensor

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def composed_softmax(x: Tensor) -> Tensor:
    e = (x - Tensor(x.array.max(axis=-1, keepdims=True), requires_grad=False)).exp()
    return e / e.sum(axis=-1, keepdims=True)


def test_readme_softmax():
    out = Softmax()(to_tensor([1, 2, 3]))
    assert out.name == "softmax"
    np.testing.assert_allclose(out.array, [0.09003057, 0.24472848, 0.66524094], rtol=1e-6)


@given(shapes)
def test_softmax_gradients(shape):
    check_grads(Softmax(), np.random.default_rng(0).normal(size=shape) * 3)


@given(shapes)
def test_log_softmax_gradients(shape):
    check_grads(LogSoftmax(), np.random.default_rng(1).normal(size=shape) * 3)


def test_softmax_matches_composed_ops():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(3, 5, 7))
    dy = rng.normal(size=x.shape)
    ours, theirs = Tensor(x), Tensor(x.copy())
    y = Softmax()(ours)
    y.backward(dy)
    reference = composed_softmax(theirs)
    reference.backward(dy)
    np.testing.assert_allclose(y.array, reference.array, rtol=1e-12)
    np.testing.assert_allclose(ours.grad.array, theirs.grad.array, rtol=1e-10, atol=1e-14)


def test_log_softmax_matches_composed_ops():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 6))
    dy = rng.normal(size=x.shape)
    ours, theirs = Tensor(x), Tensor(x.copy())
    y = LogSoftmax()(ours)
    y.backward(dy)
    reference = composed_softmax(theirs).log()
    reference.backward(dy)
    np.testing.assert_allclose(y.array, reference.array, rtol=1e-12)
    np.testing.assert_allclose(ours.grad.array, theirs.grad.array, rtol=1e-10, atol=1e-14)


def test_softmax_is_stable_for_huge_inputs():
    x = np.array([[1e4, -1e4, 0.0], [1e30, 1e30, -1e30]], dtype=np.float32)
    y = softmax_forward(np, x)
    np.testing.assert_allclose(y, [[1, 0, 0], [0.5, 0.5, 0]])
    log_y = log_softmax_forward(np, x)
    assert np.isfinite(log_y[0]).all() and log_y[0, 0] == 0
    assert np.isfinite(softmax_backward(np, y, np.ones_like(y))).all()
    assert np.isfinite(log_softmax_backward(np, log_y[:1], np.ones((1, 3), np.float32))).all()


def test_fused_functions_keep_float32():
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    for forward, backward in (
        (softmax_forward, softmax_backward),
        (log_softmax_forward, log_softmax_backward),
    ):
        y = forward(np, x)
        assert y.dtype == np.float32
        assert backward(np, y, x).dtype == np.float32


def test_backward_accepts_broadcast_gradients():
    """Upstream gradients may be read-only broadcast views (e.g. from a sum)."""
    x = Tensor(np.random.default_rng(0).normal(size=(3, 4)))
    Softmax()(x).sum().backward()
    np.testing.assert_allclose(x.grad.array, 0, atol=1e-15)  # softmax rows sum to a constant


@pytest.mark.parametrize("op, name", [(Softmax(), "softmax"), (LogSoftmax(), "log_softmax")])
def test_matches_torch(xp, op, name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = (rng.normal(size=(2, 3, 10)) * 4).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    ours = Tensor(xp.asarray(x))
    out = op(ours)
    out.backward(xp.asarray(dy))
    xt = torch.tensor(x, requires_grad=True)
    ref = getattr(torch.nn.functional, name)(xt, dim=-1)
    ref.backward(torch.tensor(dy))
    host = backend.to_host_array
    np.testing.assert_allclose(host(out.array), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(ours.grad.array), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_sigmoid_and_tanh_wrap_the_unary_ops():
    x = to_tensor([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(Sigmoid()(x).array, unary.sigmoid(x).array)
    np.testing.assert_array_equal(Tanh()(x).array, unary.tanh(x).array)
    check_grads(Sigmoid(), [-30.0, -1.0, 0.0, 2.0])
    check_grads(Tanh(), [[-3.0, 0.5], [0.0, 2.0]])


@pytest.mark.parametrize("op", [Softmax(), LogSoftmax()])
def test_scalars_and_empty_axes_raise(op):
    with pytest.raises(ValueError, match=r"non-empty last axis.*\(\)"):
        op(to_tensor(1.0))
    with pytest.raises(ValueError, match=r"\(2, 0\)"):
        op(to_tensor(np.ones((2, 0))))
