"""The Einsum runner's matrix products on the CPU, spread over the kernels' threads.

C = A B with the rows (or the columns) of C cut into one slice per thread, each slice one
single-threaded BLAS call (``blas.py`` says which library). The products and the fused
kernels then share one team of threads: numpy's own BLAS threads keep spinning for a
while after each product (OpenBLAS's thread timeout), on the cores the next kernel wants
(``compile.py`` says how the team is chosen; ``benchmarks/README.md`` has the numbers).

An operand stored transposed (a transposed view, Fortran order) is passed to BLAS with the
"T" flag instead of being copied.
"""

import numpy as np
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from tricycle import dispatch
from tricycle.backends.cpu import blas
from tricycle.backends.cpu.compile import jit, parallel_jit, thread_count

PARALLEL_MIN_WORK = 1 << 21  # multiply-adds below which one thread does the whole product


@jit
def _leading(x):
    """BLAS's leading dimension of a matrix whose rows are contiguous: its row stride in
    elements (a single row's stride may be anything, even 0: then its length)."""
    return x.strides[0] // x.itemsize if x.shape[0] > 1 else max(x.shape[1], 1)


@intrinsic
def _any_layout(typingctx, x):
    """The array ``x`` typed as a strided one (numba's layout "A"), whatever its layout: the
    same structure, so nothing is copied."""
    if not isinstance(x, types.Array):
        return None
    strided = x.copy(layout="A")

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, strided, args[0])

    return strided(x), codegen


@jit
def gemm_into(out, a, b, a_transposed, b_transposed, beta):
    """out = a' b' + beta out, one BLAS call on this thread, where a' is a (or a^T if
    ``a_transposed``) and b' likewise, each matrix's rows contiguous (a block of a larger
    matrix will do): a kernel's block products, accumulated in place and with no temporary,
    which ``np.dot`` cannot do. Every call goes to one compiled function of one signature
    per dtype (``_gemm``): strided arrays and plain flags, whatever the caller's layouts and
    constants, which would each be a function to compile."""
    _gemm(_any_layout(out), _any_layout(a), _any_layout(b), bool(a_transposed),
          bool(b_transposed), float(beta))  # fmt: skip


# compiled once and called, not inlined: a BLAS call has the same bits wherever it is compiled,
# and inlined into each of its call sites it took a third of the attention kernels' compile
# time (``benchmarks/README.md``)
@jit(inline="never")
def _gemm(out, a, b, a_transposed, b_transposed, beta):
    """``gemm_into`` of strided arrays."""
    M, N = out.shape
    K = a.shape[0] if a_transposed else a.shape[1]
    transa = blas.TRANS if a_transposed else blas.NO_TRANS
    transb = blas.TRANS if b_transposed else blas.NO_TRANS
    one, scale = out.dtype.type(1.0), out.dtype.type(beta)
    args = (blas.ROW_MAJOR, transa, transb, M, N, K, one, a.ctypes, _leading(a), b.ctypes,
            _leading(b), scale, out.ctypes, _leading(out))  # CBLAS's order  # fmt: skip
    # b' = b^T runs faster on scipy's library (blas.py)
    if out.itemsize == 4:
        if b_transposed:
            blas.scipy_sgemm(*args)
        else:
            blas.cblas_sgemm(*args)
    elif b_transposed:
        blas.scipy_dgemm(*args)
    else:
        blas.cblas_dgemm(*args)


@jit
def gemm_blocks_into(out, a, w, rows, columns):
    """out = a w, a block of ``rows`` x ``columns`` of out to a ``gemm_into`` call
    (``blas.step_blocks`` says how large)."""
    M, N = out.shape
    for r0 in range(0, M, rows):
        r1 = min(r0 + rows, M)
        for c0 in range(0, N, columns):
            c1 = min(c0 + columns, N)
            gemm_into(out[r0:r1, c0:c1], a[r0:r1], w[:, c0:c1], False, False, 0.0)


@parallel_jit(blas=True)
def gemm_kernel(out, a, b, a_transposed, b_transposed, row_slices, column_slices, first, last):
    """out (M, N) = a' b' in row_slices x column_slices blocks of out, one ``gemm_into`` each,
    blocks first..last; a and b as ``gemm_into`` takes them (C-ordered, a^T stored for a' if
    ``a_transposed``)."""
    M, N = out.shape
    for block in range(first, last):
        r, c = block // column_slices, block % column_slices
        row0, row1 = r * M // row_slices, (r + 1) * M // row_slices
        col0, col1 = c * N // column_slices, (c + 1) * N // column_slices
        a_rows = a[:, row0:row1] if a_transposed else a[row0:row1]  # the rows of a'
        b_columns = b[col0:col1] if b_transposed else b[:, col0:col1]  # the columns of b'
        gemm_into(out[row0:row1, col0:col1], a_rows, b_columns, a_transposed, b_transposed,
                  0.0)  # fmt: skip


def _blas_layout(x) -> bool:
    return x.flags.c_contiguous or x.flags.f_contiguous


def applies(a, b) -> bool:
    """Two matrices of one dtype, each stored plainly or transposed."""
    return (
        a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype and a.size > 0 and b.size > 0
        and _blas_layout(a) and _blas_layout(b)
    )  # fmt: skip


@dispatch.register("matmul", "cpu", applies=applies)
def matmul(a, b):
    """``np.matmul(a, b)`` of two matrices, spread over the kernels' threads (numpy's where
    it does not apply)."""
    if not applies(a, b):
        return np.matmul(a, b)
    (M, K), N = a.shape, b.shape[1]
    out = np.empty((M, N), dtype=a.dtype)
    a_transposed = not a.flags.c_contiguous  # a C-ordered (1, K) or (M, 1) is both: plain
    b_transposed = not b.flags.c_contiguous
    slices = thread_count() if M * N * K >= PARALLEL_MIN_WORK else 1
    rows, columns = (slices, 1) if M >= N else (1, slices)  # cut the longer side
    gemm_kernel.run(slices > 1, out, a.T if a_transposed else a, b.T if b_transposed else b,
                    a_transposed, b_transposed, rows, columns, slices)  # fmt: skip
    return out
