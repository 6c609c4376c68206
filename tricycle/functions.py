"""Fused functions over the last axis: Softmax and LogSoftmax, plus Sigmoid and Tanh.

Each fused op is a pair of pure array functions written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``, ``softmax_backward(xp, y, dy) -> dx``) and a stateless class
that wraps them as a Tensor op. Both backwards need only the forward's output, so that is the
one array kept for backward. CUDA kernels with the same signatures may replace them on cupy.

On numpy the array functions walk their input in blocks of rows (``tricycle.blocking``), so
that their chain of elementwise passes runs on data in the CPU cache instead of main memory,
and the blocks can be spread over the thread pool (``tricycle.threads``).
"""

from tricycle import unary
from tricycle.backends import cuda as kernels
from tricycle.blocking import as_rows, for_each_block, row_sum
from tricycle.tensor import Tensor, check_float
from tricycle.unary import unary_op


def _check_has_axis(op: str, x: Tensor) -> None:
    check_float(op, x)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: needs a non-empty last axis to normalise, got shape {x.shape}")


# ---------------------------------------------------------------------- softmax
def softmax_forward(xp, x):
    """exp(x - max) / sum(exp(x - max)) over the last axis."""
    if kernels.enabled(x):  # one CUDA kernel on cupy (tricycle/backends/cuda/softmax.cu)
        return kernels.softmax_forward(xp, x)
    x2 = as_rows(x)  # (N, C)
    y = xp.empty_like(x2)

    def block(rows):
        xb, yb = x2[rows], y[rows]
        xp.subtract(xb, xb.max(axis=-1, keepdims=True), out=yb)
        xp.exp(yb, out=yb)
        yb /= row_sum(xp, yb)

    for_each_block(xp, *x2.shape, block)
    return y.reshape(x.shape)


def softmax_backward(xp, y, dy):
    """dx = y * (dy - sum(dy * y)) over the last axis."""
    if kernels.enabled(y, dy):
        return kernels.softmax_backward(xp, y, dy)
    y2, dy2 = as_rows(y), as_rows(dy)  # (N, C)
    dx = xp.empty_like(y2)

    def block(rows):
        yb, dyb, dxb = y2[rows], dy2[rows], dx[rows]
        xp.multiply(dyb, yb, out=dxb)
        xp.subtract(dyb, row_sum(xp, dxb), out=dxb)
        dxb *= yb

    for_each_block(xp, *y2.shape, block)
    return dx.reshape(y.shape)


def _last_axis_op(op: str, name: str, forward, backward, x: Tensor) -> Tensor:
    """Wrap a fused last-axis array pair whose backward needs only the output y."""
    _check_has_axis(op, x)
    xp = x.xp
    y = forward(xp, x.array)
    return unary_op(x, y, lambda dy: backward(xp, y, dy), name)


class Softmax:
    """Softmax over the last axis (name "softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        return _last_axis_op("Softmax", "softmax", softmax_forward, softmax_backward, x)


# ---------------------------------------------------------------------- log-softmax
def log_softmax_forward(xp, x):
    """x - max - log(sum(exp(x - max))) over the last axis."""
    x2 = as_rows(x)  # (N, C)
    y = xp.empty_like(x2)

    def block(rows):
        xb, yb = x2[rows], y[rows]
        xp.subtract(xb, xb.max(axis=-1, keepdims=True), out=yb)
        yb -= xp.log(row_sum(xp, xp.exp(yb)))

    for_each_block(xp, *x2.shape, block)
    return y.reshape(x.shape)


def log_softmax_backward(xp, y, dy):
    """dx = dy - exp(y) * sum(dy) over the last axis (exp(y) is the softmax)."""
    y2, dy2 = as_rows(y), as_rows(dy)  # (N, C)
    dx = xp.empty_like(y2)

    def block(rows):
        yb, dyb, dxb = y2[rows], dy2[rows], dx[rows]
        xp.exp(yb, out=dxb)
        dxb *= row_sum(xp, dyb)
        xp.subtract(dyb, dxb, out=dxb)

    for_each_block(xp, *y2.shape, block)
    return dx.reshape(y.shape)


class LogSoftmax:
    """Log of the softmax over the last axis, computed stably (name "log_softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        return _last_axis_op(
            "LogSoftmax", "log_softmax", log_softmax_forward, log_softmax_backward, x
        )


# ---------------------------------------------------------------------- sigmoid, tanh
class Sigmoid:
    """Logistic sigmoid 1 / (1 + e^-x), elementwise (``tricycle.unary.sigmoid``)."""

    def __call__(self, x: Tensor) -> Tensor:
        return unary.sigmoid(x)


class Tanh:
    """Hyperbolic tangent, elementwise (``tricycle.unary.tanh``)."""

    def __call__(self, x: Tensor) -> Tensor:
        return unary.tanh(x)
