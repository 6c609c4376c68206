"""Fused functions over the last axis: Softmax and LogSoftmax, plus Sigmoid and Tanh.

Each fused op is a pair of pure array functions written once against ``xp`` (llm.c style:
``softmax_forward(xp, x) -> y``, ``softmax_backward(xp, y, dy) -> dx``) and a stateless class
that wraps them as a Tensor op. Both backwards need only the forward's output, so that is the
one array kept for backward. CUDA kernels with the same signatures may replace them on cupy.

On numpy the array functions walk their input in blocks of rows (``for_each_block``), so that
their chain of elementwise passes runs on data in the CPU cache instead of main memory, and
can spread the blocks over threads (numpy runs elementwise loops on one thread; see
``TRICYCLE_THREADS`` below). The thread helpers here (``for_each_block``, ``for_row_groups``)
are the one thread pool of tricycle: attention, GeLU, the norms and AdamW use them too.
"""

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from tricycle import kernels, unary
from tricycle.tensor import Tensor

BLOCK_ELEMENTS = 1 << 16  # 256 KiB of float32: a block and its temporaries stay in L2


# ---------------------------------------------------------------------- threads
# numpy releases the GIL inside its ufunc loops and matmul, so independent pieces of a fused
# op can run on several threads at once: each piece owns its rows of every output, so nothing
# needs a lock. By default there is one thread, the caller's: numpy's BLAS already runs the
# matrix products on every core, and its threads spin between products, so on a machine no
# bigger than that, helper threads of ours only fight them for the cores (and each other for
# the GIL). Measured on a 2-core VM, a GPT training step ran 5-15% faster without them, and
# up to twice as fast while the VM was busy (benchmarks/README.md). On a machine with many
# cores, ``TRICYCLE_THREADS=n`` spreads the fused ops over n threads (at most 8). The pool is
# made on first use and forgotten in a forked child, which has none of its parent's threads.
def _thread_count() -> int:
    value = os.environ.get("TRICYCLE_THREADS", "1")
    try:
        threads = int(value)
    except ValueError:
        message = f"TRICYCLE_THREADS must be a whole number of threads, got {value!r}"
        raise ValueError(message) from None
    if threads < 1:
        raise ValueError(f"TRICYCLE_THREADS must be at least 1, got {threads}")
    return min(threads, 8)


THREADS = _thread_count()
_pool: ThreadPoolExecutor | None = None
_worker = threading.local()


def _forget_pool() -> None:
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_blocks(fn: Callable[[slice], None], blocks: list[slice]) -> None:
    """Call ``fn(rows)`` once for every slice of ``blocks``, on up to ``THREADS`` threads.

    The threads claim blocks one at a time from a shared counter, and the calling thread
    works too: a helper that the OS does not schedule soon (a busy machine, BLAS threads
    spinning) costs nothing, as the others take its blocks. Each block is computed the same
    way whichever thread runs it, so results do not depend on the number of threads. Called
    from inside a block (a nested fused op), or with one block, it runs serially. The first
    exception of any block is re-raised here once every claimed block has finished.
    """
    global _pool
    n_helpers = min(THREADS, len(blocks)) - 1
    if n_helpers <= 0 or getattr(_worker, "busy", False):
        for rows in blocks:
            fn(rows)
        return
    if _pool is None:
        _pool = ThreadPoolExecutor(max(1, THREADS - 1), thread_name_prefix="tricycle")
    job = _Job(fn, blocks)
    for _ in range(n_helpers):
        _pool.submit(job.work)
    job.work()
    job.finished.wait()
    if job.errors:
        raise job.errors[0]


class _Job:
    """Blocks of one ``run_blocks`` call, claimed by whichever thread comes first."""

    def __init__(self, fn, blocks):
        self.fn, self.blocks = fn, blocks
        self.claims = itertools.count()  # next() is atomic under the GIL
        self.lock = threading.Lock()
        self.left = len(blocks)
        self.finished = threading.Event()
        self.errors: list[BaseException] = []

    def work(self) -> None:
        _worker.busy = True
        try:
            while (i := next(self.claims)) < len(self.blocks):
                try:
                    self.fn(self.blocks[i])
                except BaseException as error:  # noqa: BLE001 -- re-raised by the caller
                    self.errors.append(error)
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.finished.set()
        finally:
            _worker.busy = False


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

    ``fn`` must only write to its own rows of preallocated outputs (``run_blocks``).
    """
    run_blocks(fn, row_blocks(xp, n_rows, row_size))


def for_row_groups(xp, n_rows: int, fn: Callable[[slice], None]) -> None:
    """Call ``fn(rows)`` on contiguous slices partitioning ``range(n_rows)``: on numpy one per
    thread (for work that blocks its rows itself), on cupy one ``slice(None)``."""
    n_groups = min(THREADS, n_rows) if xp is np else 1
    if n_groups <= 1:
        fn(slice(None))
        return
    bounds = [n_rows * i // n_groups for i in range(n_groups + 1)]
    run_blocks(fn, [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])


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
