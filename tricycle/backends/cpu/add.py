"""a + b on the kernels' threads: the bias adds of the forward pass and the gradient sums of
backward (``backprop.add_arrays``), which numpy runs on one core.

For two arrays of one shape, or an array and a bias broadcast along its last axis (shape
(N,)), both C-ordered and of one float dtype; numpy adds anything else. Each element is one
addition, so the result is numpy's to the bit.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit


@parallel_jit
def add_kernel(out, a, b, first, last):
    """out (R, N) = a (R, N) + b, with b (R, N), or (1, N) added to every row: rows first..last."""
    N = out.shape[1]
    step = 0 if b.shape[0] == 1 else 1  # b's row for row r: r, or always 0
    for r in range(first, last):
        for j in range(N):
            out[r, j] = a[r, j] + b[r * step, j]


def applies(a, b) -> bool:
    """One dtype, both C-ordered, b of a's shape or its last axis (a bias)."""
    return (
        a.dtype == b.dtype and a.size > 0 and a.ndim > 0 and a.flags.c_contiguous
        and b.flags.c_contiguous and (b.shape == a.shape or b.shape == a.shape[-1:])
    )  # fmt: skip


@dispatch.register("add", "cpu", applies=applies)
def add(a, b):
    """``a + b`` (see the module's docstring for which a and b)."""
    out = np.empty(a.shape, dtype=a.dtype)
    N = a.shape[-1]
    out2 = out.reshape(-1, N)
    add_kernel(out2, a.reshape(-1, N), b.reshape(-1, N), out2.shape[0])
    return out
