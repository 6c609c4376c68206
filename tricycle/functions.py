"""Fused functions over the last axis: Softmax and LogSoftmax, plus Sigmoid and Tanh.

Each fused op is a pair of pure array functions written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``, ``softmax_backward(xp, y, dy) -> dx``) and a stateless class
that wraps them as a Tensor op. Both backwards need only the forward's output, so that is the
one array kept for backward. CUDA kernels with the same signatures may replace them on cupy.

On numpy the array functions walk their input in blocks of rows (``for_each_block``), so that
their chain of elementwise passes runs on data in the CPU cache instead of main memory, and
spread the blocks over threads (numpy runs elementwise loops on one thread; see
tricycle/threads.py). Attention, GeLU, the norms and AdamW block their work with the helpers
here (``for_each_block``, ``for_row_groups``) too.
"""

from collections.abc import Callable

import numpy as np

from tricycle import kernels, threads, unary
from tricycle.tensor import Tensor
from tricycle.threads import run_blocks

BLOCK_ELEMENTS = 1 << 17  # 512 KiB of float32: a block and its temporaries stay in L2


def row_blocks(xp, n_rows: int, row_size: int) -> list[slice]:
    """Slices covering ``range(n_rows)``, each about ``BLOCK_ELEMENTS`` elements of rows.

    A fused numpy op runs its elementwise passes one block at a time so its temporaries
    stay in cache; on a GPU (cupy) one block covers everything.
    """
    if xp is not np:
        return [slice(None)]
    step = max(1, BLOCK_ELEMENTS // max(1, row_size))
    return [slice(start, start + step) for start in range(0, n_rows, step)]


def block_index(rows: slice) -> int:
    """The position of a slice from ``row_blocks`` in its list (for per-block partial sums)."""
    return 0 if rows.start is None else rows.start // (rows.stop - rows.start)


def for_each_block(xp, n_rows: int, row_size: int, fn: Callable[[slice], None]) -> None:
    """Call ``fn(rows)`` for each slice of ``row_blocks``, spread over the threads of
    ``tricycle.threads``.

    ``fn`` must only write to its own rows of preallocated outputs (``run_blocks``).
    """
    run_blocks(fn, row_blocks(xp, n_rows, row_size))


def for_row_groups(xp, n_rows: int, fn: Callable[[slice], None]) -> None:
    """Call ``fn(rows)`` on contiguous slices partitioning ``range(n_rows)``: on numpy one per
    thread (for work that blocks its rows itself), on cupy one ``slice(None)``."""
    n_groups = min(threads.THREADS, n_rows) if xp is np else 1
    if n_groups <= 1:
        fn(slice(None))
        return
    bounds = [n_rows * i // n_groups for i in range(n_groups + 1)]
    run_blocks(fn, [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])


def blocked_ufunc(xp, ufunc, a, b, out=None):
    """``ufunc(a, b, out=out)`` for a binary ufunc (``xp.add``, ``xp.multiply`` ...), computed
    over row blocks of ``a`` spread over the threads. ``b`` has a's shape or broadcasts along
    its rows (a bias); ``out`` (a's shape, contiguous) may be ``a`` itself. On cupy, one call.
    """
    if xp is not np:
        return ufunc(a, b, out=out)
    out = np.empty_like(a, order="C") if out is None else out
    a2, out2 = _rows(a), _rows(out)  # (N, C)
    b2 = _rows(b) if b.shape == a.shape else b

    def block(rows):
        ufunc(a2[rows], b2[rows] if b2.ndim == 2 else b2, out=out2[rows])

    for_each_block(xp, *a2.shape, block)
    return out


def row_sum(xp, a, scale: float = 1.0):
    """scale * sum over the last axis of a matrix, as a column: (N, C) -> (N, 1).

    A matrix-vector product with a vector of ``scale``s: BLAS runs it several times faster
    than numpy's reduction along short rows.
    """
    return (a @ xp.full(a.shape[-1], scale, dtype=a.dtype))[:, None]


def _check_has_axis(op: str, x: Tensor) -> None:
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"{op}: needs a non-empty last axis to normalise, got shape {x.shape}")


def _rows(a):
    """View (or copy, if not contiguous) of ``a`` as a matrix of rows: (..., C) -> (N, C)."""
    return a.reshape(-1, a.shape[-1])


# ---------------------------------------------------------------------- softmax
def softmax_forward(xp, x):
    """exp(x - max) / sum(exp(x - max)) over the last axis."""
    if kernels.enabled(x):  # one CUDA kernel on cupy (tricycle/kernels/softmax.cu)
        return kernels.softmax_forward(xp, x)
    x2 = _rows(x)  # (N, C)
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
    y2, dy2 = _rows(y), _rows(dy)  # (N, C)
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
    return Tensor(
        y,
        args=(x,),
        back_fns=(lambda dy: backward(xp, y, dy),),
        name=name,
        is_batched=x.is_batched,
    )


class Softmax:
    """Softmax over the last axis (name "softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        return _last_axis_op("Softmax", "softmax", softmax_forward, softmax_backward, x)


# ---------------------------------------------------------------------- log-softmax
def log_softmax_forward(xp, x):
    """x - max - log(sum(exp(x - max))) over the last axis."""
    x2 = _rows(x)  # (N, C)
    y = xp.empty_like(x2)

    def block(rows):
        xb, yb = x2[rows], y[rows]
        xp.subtract(xb, xb.max(axis=-1, keepdims=True), out=yb)
        yb -= xp.log(row_sum(xp, xp.exp(yb)))

    for_each_block(xp, *x2.shape, block)
    return y.reshape(x.shape)


def log_softmax_backward(xp, y, dy):
    """dx = dy - exp(y) * sum(dy) over the last axis (exp(y) is the softmax)."""
    y2, dy2 = _rows(y), _rows(dy)  # (N, C)
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
