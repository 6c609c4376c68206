"""Fused functions over the last axis: Softmax and LogSoftmax, plus Sigmoid and Tanh.

Each fused op is a pair of array functions written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``, ``softmax_backward(xp, y, dy) -> dx``), the reference
formulas, and a stateless class that wraps them as a Tensor op, asking ``tricycle.dispatch``
once for a backend's kernels with the same signatures. Both backwards need only the
forward's output, so that is the one array kept for backward. Sigmoid and Tanh are layers
(``tricycle.nn.Sigmoid`` and ``Tanh``), as torch's are modules: a model that holds one shows
it in its repr, ``modules()`` and ``named_children()``, and its hooks run.
"""

from tricycle import dispatch, unary
from tricycle.module import Layer
from tricycle.tensor import Tensor, check_float
from tricycle.unary import unary_op


def _check_has_axis(op: str, x: Tensor) -> None:
    check_float(op, x)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: needs a non-empty last axis to normalise, got shape {x.shape}")


# ---------------------------------------------------------------------- softmax
def softmax_forward(xp, x):
    """exp(x - max) / sum(exp(x - max)) over the last axis (the max keeps exp finite)."""
    y = xp.exp(x - x.max(axis=-1, keepdims=True))  # (..., C)
    y /= y.sum(axis=-1, keepdims=True)
    return y


def softmax_backward(xp, y, dy):
    """dx = y * (dy - sum(dy * y)) over the last axis."""
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))


def _last_axis_op(op: str, name: str, reference, x: Tensor) -> Tensor:
    """Wrap a fused last-axis (forward, backward) pair whose backward needs only the output."""
    _check_has_axis(op, x)
    xp = x.xp
    forward, backward = dispatch.choose(name, reference, x.array)
    y = forward(xp, x.array)
    return unary_op(x, y, lambda dy: backward(xp, y, dy), name)


class Softmax:
    """Softmax over the last axis (name "softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        return _last_axis_op("Softmax", "softmax", (softmax_forward, softmax_backward), x)


# ---------------------------------------------------------------------- log-softmax
def log_softmax_forward(xp, x):
    """x - max - log(sum(exp(x - max))) over the last axis."""
    shifted = x - x.max(axis=-1, keepdims=True)  # (..., C)
    return shifted - xp.log(xp.exp(shifted).sum(axis=-1, keepdims=True))


def log_softmax_backward(xp, y, dy):
    """dx = dy - exp(y) * sum(dy) over the last axis (exp(y) is the softmax)."""
    return dy - xp.exp(y) * dy.sum(axis=-1, keepdims=True)


class LogSoftmax:
    """Log of the softmax over the last axis, computed stably (name "log_softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        pair = (log_softmax_forward, log_softmax_backward)
        return _last_axis_op("LogSoftmax", "log_softmax", pair, x)


# ---------------------------------------------------------------------- sigmoid, tanh
class Sigmoid(Layer):
    """Logistic sigmoid 1 / (1 + e^-x), elementwise (``tricycle.unary.sigmoid``)."""

    def forward(self, x: Tensor) -> Tensor:
        return unary.sigmoid(x)


class Tanh(Layer):
    """Hyperbolic tangent, elementwise (``tricycle.unary.tanh``)."""

    def forward(self, x: Tensor) -> Tensor:
        return unary.tanh(x)
