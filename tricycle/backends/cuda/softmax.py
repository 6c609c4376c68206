"""Softmax over the last axis (softmax.cu), as ``tricycle.functions.softmax_forward`` and
``softmax_backward``: one read and one write per element, rows of any length."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import (
    CTYPES,
    compiled,
    contiguous,
    ctype,
    flag,
    row_launch,
    rows_of,
)


def softmax_forward(xp, x):
    """Softmax over the last axis (as ``tricycle.functions.softmax_forward``)."""
    cp = backend.cupy()
    x = contiguous(cp, x)
    y = cp.empty_like(x)
    rows, cols = rows_of(x)
    if rows == 0 or cols == 0:
        return y
    warp, grid, block = row_launch(rows, cols)
    kernel = compiled("softmax.cu", "softmax_forward_kernel", ctype(x), flag(warp))
    kernel((grid,), (block,), (x, y, np.int32(rows), np.int32(cols)))
    return y


def softmax_backward(xp, y, dy):
    """dx = y * (dy - sum(y * dy)) over the last axis (as ``functions.softmax_backward``)."""
    cp = backend.cupy()
    y = contiguous(cp, y)
    dy = contiguous(cp, dy, y.dtype)
    dx = cp.empty_like(y)
    rows, cols = rows_of(y)
    if rows == 0 or cols == 0:
        return dx
    warp, grid, block = row_launch(rows, cols)
    kernel = compiled("softmax.cu", "softmax_backward_kernel", ctype(y), flag(warp))
    kernel((grid,), (block,), (y, dy, dx, np.int32(rows), np.int32(cols)))
    return dx


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("softmax.cu", f"softmax_{part}_kernel", (t, w))
        for t in CTYPES.values()
        for w in ("true", "false")
        for part in ("forward", "backward")
    ]


dispatch.add("softmax", "cuda", (softmax_forward, softmax_backward), dtypes=tuple(CTYPES))
