"""Fused functions over the last axis: Softmax and LogSoftmax, plus Sigmoid and Tanh.

Each fused op is a pair of pure array functions written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``, ``softmax_backward(xp, y, dy) -> dx``) and a stateless class
that wraps them as a Tensor op. Both backwards need only the forward's output, so that is the
one array kept for backward. CUDA kernels with the same signatures may replace them on cupy.

On numpy the array functions walk their input in blocks of rows (``for_each_block``), so that
their chain of elementwise passes runs on data in the CPU cache instead of main memory, and
spread the blocks over the CPU's cores (numpy runs elementwise loops on one thread).
"""

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tricycle import kernels, unary
from tricycle.tensor import Tensor

BLOCK_ELEMENTS = 1 << 16  # 256 KiB of float32: a block and its temporaries stay in L2
# Threads that run the blocks of a fused numpy op (numpy releases the GIL inside its loops).
THREADS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

_pool: ThreadPoolExecutor | None = None
_worker = threading.local()


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
    """Call ``fn(rows)`` for each slice of ``row_blocks``, spread over ``THREADS`` threads.

    ``fn`` must only write to its own rows of preallocated outputs. Blocks are dealt out
    round-robin; the calling thread takes a share too. Called from inside a block (nested
    fused ops), it runs serially.
    """
    blocks = row_blocks(xp, n_rows, row_size)
    n_threads = min(THREADS or 1, len(blocks))
    if n_threads <= 1 or getattr(_worker, "busy", False):
        for rows in blocks:
            fn(rows)
        return
    pool = _thread_pool()
    shares = [blocks[k::n_threads] for k in range(n_threads)]
    futures = [pool.submit(_run_share, fn, share) for share in shares[1:]]
    _run_share(fn, shares[0])
    for future in futures:
        future.result()


def _run_share(fn, blocks) -> None:
    _worker.busy = True
    try:
        for rows in blocks:
            fn(rows)
    finally:
        _worker.busy = False


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:  # created on first use: importing tricycle starts no threads
        _pool = ThreadPoolExecutor(max_workers=max(1, (THREADS or 1) - 1))
    return _pool


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


class Softmax:
    """Softmax over the last axis (name "softmax")."""

    def __call__(self, x: Tensor) -> Tensor:
        _check_has_axis("Softmax", x)
        xp = x.xp
        y = softmax_forward(xp, x.array)
        return Tensor(
            y,
            args=(x,),
            back_fns=(lambda dy: softmax_backward(xp, y, dy),),
            name="softmax",
            is_batched=x.is_batched,
        )


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
        _check_has_axis("LogSoftmax", x)
        xp = x.xp
        y = log_softmax_forward(xp, x.array)
        return Tensor(
            y,
            args=(x,),
            back_fns=(lambda dy: log_softmax_backward(xp, y, dy),),
            name="log_softmax",
            is_batched=x.is_batched,
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
