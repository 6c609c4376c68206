"""Row blocking of fused CPU work: the helpers every fused op walks its rows with.

A fused numpy op (softmax, cross-entropy, attention, GeLU, the norms, AdamW) runs a chain of
elementwise passes. Done over a whole (N, C) array, each pass streams it through main memory;
done one block of rows at a time, a block and its temporaries stay in the CPU's L2 cache.
The blocks are also the unit of parallel work: ``for_each_block`` hands them to the thread pool
(``tricycle.threads``), which runs them on the calling thread alone unless ``enable`` started it.
On cupy one block covers everything: the GPU needs no blocking.
"""

from collections.abc import Callable

import numpy as np

from tricycle import threads

BLOCK_ELEMENTS = 1 << 17  # 512 KiB of float32: a block and its temporaries stay in L2


def as_rows(a):
    """``a`` as a matrix of rows: (..., C) -> (N, C); a view when ``a`` is contiguous. A 1-D
    ``a`` is one row, a 0-d one a row of one."""
    return a.reshape(-1, a.shape[-1] if a.ndim else 1)


def row_blocks(xp, n_rows: int, row_size: int) -> list[slice]:
    """Slices covering ``range(n_rows)``, each about ``BLOCK_ELEMENTS`` elements of rows; on
    cupy one ``slice(None)``."""
    if xp is not np:
        return [slice(None)]
    step = max(1, BLOCK_ELEMENTS // max(1, row_size))
    return [slice(start, start + step) for start in range(0, n_rows, step)]


def block_index(rows: slice) -> int:
    """The position of a slice from ``row_blocks`` in its list (for per-block partial sums)."""
    return 0 if rows.start is None else rows.start // (rows.stop - rows.start)


def for_each_block(xp, n_rows: int, row_size: int, fn: Callable[[slice], None]) -> None:
    """Call ``fn(rows)`` for each slice of ``row_blocks``, spread over the pool's threads.

    ``fn`` must only write to its own rows of preallocated outputs (``threads.run_blocks``).
    """
    threads.run_blocks(fn, row_blocks(xp, n_rows, row_size))


def for_row_groups(xp, n_rows: int, fn: Callable[[slice], None]) -> None:
    """Call ``fn(rows)`` on contiguous slices partitioning ``range(n_rows)``: on numpy one per
    thread of the pool (for work that blocks its rows itself), on cupy one ``slice(None)``."""
    n_groups = min(threads.count(), n_rows) if xp is np else 1
    if n_groups <= 1:
        fn(slice(None))
        return
    bounds = [n_rows * i // n_groups for i in range(n_groups + 1)]
    threads.run_blocks(fn, [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])])


def blocked_ufunc(xp, ufunc, a, b, out=None):
    """``ufunc(a, b, out=out)`` for a binary ufunc (``xp.add``, ``xp.multiply`` ...), computed
    over row blocks of ``a`` spread over the threads. ``b`` has a's shape or broadcasts along
    its rows (a bias); ``out`` (a's shape, contiguous) may be ``a`` itself. On cupy, one call.
    """
    if xp is not np:
        return ufunc(a, b, out=out)
    out = np.empty_like(a, order="C") if out is None else out
    a2, out2 = as_rows(a), as_rows(out)  # (N, C)
    b2 = as_rows(b) if b.shape == a.shape else b

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
