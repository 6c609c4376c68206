"""a + b as one vectorised kernel (add.cu) for cupy float arrays: the residual adds, the
gradients backward sums and the Dense bias. cupy's own add reads and writes one element per
thread; at GPT-2 sizes (bfloat16 (16, 1024, 768) arrays, 86 adds per step) it ran at about a
third of the memory bandwidth."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import (
    CTYPES,
    aligned4,
    compiled,
    ctype,
    elementwise_grid,
    enabled,
    flag,
)


def add_enabled(a, b) -> bool:
    """``add`` applies: C-contiguous cupy float arrays of one dtype, ``b`` of a's shape or one
    row of a's last axis (a bias)."""
    return (
        enabled(a, b)
        and a.dtype == b.dtype
        and a.flags.c_contiguous
        and b.flags.c_contiguous
        and (b.shape == a.shape or (b.ndim == 1 and a.ndim >= 1 and b.size == a.shape[-1]))
    )


def add(a, b, out=None):
    """a + b for arrays that ``add_enabled`` accepts, into ``out`` (a itself for an in-place
    add, or another C-contiguous array of a's shape and dtype) or a new array."""
    cp = backend.cupy()
    out = cp.empty_like(a) if out is None else out
    n = a.size
    if n == 0:
        return out
    row = b.shape != a.shape
    cols = b.size
    vec = n % 4 == 0 and (not row or cols % 4 == 0) and aligned4(a, b, out)
    kernel = compiled("add.cu", "add_kernel", ctype(a), flag(vec), flag(row))
    threads = n // 4 if vec else n
    kernel((elementwise_grid(threads),), (256,), (a, b, np.int64(cols), out, np.int64(n)))
    return out


def add_arrays(a, b, out=None):
    """a + b for any arrays (numpy's or cupy's rules), through ``add`` where it applies.
    ``out``: where to write (numpy's ``out=``), e.g. ``a`` for an in-place add."""
    if add_enabled(a, b) and (out is None or out is a):
        return add(a, b, out)
    if out is None:
        return a + b
    return backend.array_module(a).add(a, b, out=out)


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("add.cu", "add_kernel", (t, vec, row))
        for t in CTYPES.values()
        for vec in ("true", "false")
        for row in ("true", "false")
    ]


# the engine's sums (backward's gradient sums, binary.add) ask for "add"
dispatch.add("add", "cuda", add_arrays, dtypes=tuple(CTYPES), applies=add_enabled)
