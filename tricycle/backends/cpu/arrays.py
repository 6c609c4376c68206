"""What the kernels and their adapters share: arrays as contiguous rows, the dispatch
predicate, and a sample copied into (and out of) a padded one.

A kernel loops over the rows of a C-contiguous (N, C) array; the adapter that registers it
takes arrays of any leading shape and strides, as the reference does, and views (or copies)
them that way. Reductions over rows (the gradients of gamma, beta, a bias) add fixed chunks
of ``CHUNK_ROWS`` rows, one partial row each, so the result does not depend on how many
threads ran.
"""

import math

import numpy as np

from tricycle.backends.cpu.compile import jit

CHUNK_ROWS = 16


def rows(a, dtype=None) -> np.ndarray:
    """``a`` as a C-contiguous (N, C) array over its last axis (a view when it already is)."""
    a = np.ascontiguousarray(a, dtype=dtype)
    return a.reshape(math.prod(a.shape[:-1]), a.shape[-1]) if a.ndim else a.reshape(1, 1)


def flat(a, dtype=None) -> np.ndarray:
    """``a`` as a C-contiguous 1-D array."""
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


def n_chunks(n_rows: int) -> int:
    return max(1, -(-n_rows // CHUNK_ROWS))


def aligned_empty(shape, dtype, alignment: int = 64) -> np.ndarray:
    """``np.empty(shape, dtype)`` whose data starts on an ``alignment``-byte boundary (a cache
    line): numpy aligns to 16 bytes only, and some BLAS kernels read a misaligned operand
    slower (``blas.step_blocks``)."""
    dtype = np.dtype(dtype)
    size = math.prod(shape)
    raw = np.empty(size * dtype.itemsize + alignment, dtype=np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + size * dtype.itemsize].view(dtype).reshape(shape)


def same_dtype(*arrays) -> bool:
    """The kernels' condition: every array has the first one's dtype."""
    dtype = arrays[0].dtype
    return all(a.dtype == dtype for a in arrays)


@jit
def pad_into(x, xpad, ph, pw):
    """xpad[c, ph + y, pw + w] = x[c, y, w]: x (C, H, W) into padded xpad (C, Hp, Wp), whose
    border is left as it is (zero)."""
    C, H, W = x.shape
    for c in range(C):
        for y in range(H):
            src, dst = x[c, y], xpad[c, ph + y, pw : pw + W]
            for w in range(W):
                dst[w] = src[w]


@jit
def unpad_into(xpad, x, ph, pw):
    """x[c, y, w] = xpad[c, ph + y, pw + w]: the inverse of ``pad_into``."""
    C, H, W = x.shape
    for c in range(C):
        for y in range(H):
            src, dst = xpad[c, ph + y, pw : pw + W], x[c, y]
            for w in range(W):
                dst[w] = src[w]
