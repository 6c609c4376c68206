"""Products of one row and a matrix, x (1, K) w (K, N): a decode step of generation at batch 1.

Each weight is read once for one multiply-add, so the product is as fast as memory can
stream the matrix. BLAS's general product, called on one thread per slice of columns
(``gemm.py``), streams it at about half the speed of one pass over the matrix on the
kernels' threads (``benchmarks/README.md``, issue 43), which is what these kernels are:

- ``gemv_columns_kernel``, for w stored plainly ((K, N): a Dense layer's weights): each
  thread takes tiles of columns and, four rows of w at a time, adds x[k] w[k, tile] into an
  accumulator as long as the tile;
- ``gemv_rows_kernel``, for w stored transposed (w^T (N, K) contiguous: a tied head's (V, E)
  embedding): each thread takes rows of w^T, four at a time, each one dot product with x.

Registered for "matmul" on the CPU after ``gemm`` (the latest registration wins where it
applies): a (1, K) row times a matrix stored plainly or transposed. Anything else stays
``gemm``'s.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit, thread_count

PARALLEL_MIN_WORK = 1 << 16  # multiply-adds below which one thread does the whole product
TILE = 1024  # columns per accumulator at most (4 KB of float32: in L1 beside four rows)


@parallel_jit
def gemv_columns_kernel(out, x, w, tile, first, last):
    """out (N,) = x (K,) w (K, N), in tiles of ``tile`` columns, one accumulator each: tiles
    first..last. (The accumulator is allocated once and written out by a loop: an array
    assigned to a slice took most of the kernel's compile time.)"""
    K, N = w.shape
    acc = np.empty(tile, dtype=out.dtype)
    for t in range(first, last):
        n0 = t * tile
        width = tile if n0 + tile <= N else N - n0
        for n in range(width):
            acc[n] = 0.0
        k = 0
        while k + 4 <= K:  # four rows a pass: a quarter of the accumulator's loads and stores
            x0, x1, x2, x3 = x[k], x[k + 1], x[k + 2], x[k + 3]
            w0, w1, w2, w3 = w[k, n0:], w[k + 1, n0:], w[k + 2, n0:], w[k + 3, n0:]
            for n in range(width):
                acc[n] += x0 * w0[n] + x1 * w1[n] + x2 * w2[n] + x3 * w3[n]
            k += 4
        while k < K:
            xk, wk = x[k], w[k, n0:]
            for n in range(width):
                acc[n] += xk * wk[n]
            k += 1
        for n in range(width):
            out[n0 + n] = acc[n]


@parallel_jit
def gemv_rows_kernel(out, wt, x, first, last):
    """out (N,) = wt (N, K) x (K,): each out[n] the dot product of row n of wt with x, in
    blocks of four rows: blocks first..last."""
    N, K = wt.shape
    for block in range(first, last):
        n0 = 4 * block
        if n0 + 4 <= N:  # four rows a pass: x read once for four dot products
            a0 = a1 = a2 = a3 = out.dtype.type(0.0)
            for k in range(K):
                xk = x[k]
                a0 += wt[n0, k] * xk
                a1 += wt[n0 + 1, k] * xk
                a2 += wt[n0 + 2, k] * xk
                a3 += wt[n0 + 3, k] * xk
            out[n0], out[n0 + 1], out[n0 + 2], out[n0 + 3] = a0, a1, a2, a3
        else:
            for n in range(n0, N):
                acc = out.dtype.type(0.0)
                for k in range(K):
                    acc += wt[n, k] * x[k]
                out[n] = acc


def applies(a, b) -> bool:
    """One row a (1, K) times a matrix b (K, N) of its dtype, stored plainly or transposed."""
    return (
        a.ndim == 2 and b.ndim == 2 and a.shape[0] == 1 and a.dtype == b.dtype
        and a.shape[1] > 0 and b.shape[1] > 0
        and (b.flags.c_contiguous or b.flags.f_contiguous)
    )  # fmt: skip


@dispatch.register("matmul", "cpu", applies=applies)
def matmul(a, b):
    """``np.matmul(a, b)`` of a row a (1, K) and a matrix b (K, N) in one pass over b."""
    if not applies(a, b):
        return np.matmul(a, b)
    (K, N), threads = b.shape, thread_count()
    out = np.empty((1, N), dtype=a.dtype)
    x = np.ascontiguousarray(a[0])  # a row of a larger array too: one kernel per dtype
    parallel = K * N >= PARALLEL_MIN_WORK and threads > 1
    if b.flags.c_contiguous:
        tiles = max(-(-N // TILE), threads if parallel else 1)  # every thread a tile at least
        tile = -(-N // tiles)
        gemv_columns_kernel.run(parallel, out[0], x, b, tile, -(-N // tile))
    else:
        gemv_rows_kernel.run(parallel, out[0], b.T, x, -(-N // 4))
    return out
