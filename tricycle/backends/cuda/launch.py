"""What every kernel family shares: the dispatch tests, NVRTC compilation through
``cupy.RawModule`` (cached per file, instantiation and device), and launch-shape helpers.

The family modules beside this one (softmax, norm, gelu, cross_entropy, embedding, extremes,
attention, sdpa, cast, add, dropout, optimiser, catalogue) each launch their own ``*.cu``
file through ``compiled``; ``gemm`` calls cuBLAS directly.
cupy comes only from ``tricycle.backend.cupy()``; importing this module imports no cupy.
"""

from pathlib import Path

import numpy as np

from tricycle import backend

_DIR = Path(__file__).resolve().parent
_OPTIONS = ("-std=c++17",)

# numpy dtype name -> the C type that stores it in common.cuh
CTYPES = {"float32": "float", "float16": "half_t", "bfloat16": "bf16_t"}
LABEL_CTYPES = {"int32": "int", "int64": "long long"}
# dtype -> C type or None, filled on first sight: a dict lookup by dtype costs far less than
# ``dtype.name``, and the dispatch predicates run several thousand times per training step
_ctype_of: dict = {}


def float_ctype(dtype) -> str | None:
    """The kernels' C type for a float dtype, None for any other dtype."""
    try:
        return _ctype_of[dtype]
    except KeyError:
        _ctype_of[dtype] = CTYPES.get(dtype.name)
        return _ctype_of[dtype]


_WARP_MAX_COLS = 512  # rows up to this long get a warp each, longer rows a whole block


# ====================================================================== dispatch predicates
def enabled(*arrays) -> bool:
    """True when every array is a cupy array of a supported float dtype: the first test of
    each kernel's ``applies`` (``tricycle.dispatch``), which alone reads the switch
    ``TRICYCLE_DISABLE_KERNELS`` before asking it. It is cheap (no cupy import, no device
    query) and False for every numpy array, which it looks at first.
    """
    for a in arrays:
        if not backend.is_cupy_array(a) or float_ctype(a.dtype) is None:
            return False
    return bool(arrays)


def adam_enabled(w, grad) -> bool:
    """The fused Adam step updates float32, C-contiguous parameters in place."""
    return (
        enabled(w, grad)
        and w.dtype == np.float32
        and w.flags.c_contiguous
        and w.shape == grad.shape
    )


class KernelSaved(tuple):
    """What a kernel forward saves for its backward; a tuple, marked as the kernels' own.

    The xp versions save different things (attention keeps its probabilities), so the
    backward dispatches on ``owns(saved)`` rather than on the arrays.
    """

    __slots__ = ()


def owns(saved) -> bool:
    """True when ``saved`` came from a kernel forward here (dispatch test for backwards)."""
    return isinstance(saved, KernelSaved)


# ====================================================================== loading and launching
sources: dict[str, str] = {}
compileds: dict[tuple, object] = {}
sm_counts: dict[int, int] = {}


def source(file: str) -> str:
    if file not in sources:
        common = (_DIR / "common.cuh").read_text()
        sources[file] = f"{common}\n// ---- {file}\n{(_DIR / file).read_text()}"
    return sources[file]


def compiled(file: str, name: str, *template_args: str):
    """The compiled kernel ``name<template_args>`` from ``file`` (compiled once, then cached)."""
    cp = backend.cupy()
    key = (file, name, template_args, cp.cuda.runtime.getDevice())
    function = compileds.get(key)  # a dict hit: launchers run thousands of times per step
    if function is None:
        expression = f"{name}<{', '.join(template_args)}>" if template_args else name
        module = cp.RawModule(
            code=source(file),
            options=_OPTIONS,
            name_expressions=[expression] if template_args else None,
        )
        function = compileds[key] = module.get_function(expression)
    return function


def sm_count() -> int:
    cp = backend.cupy()
    device = cp.cuda.runtime.getDevice()
    if device not in sm_counts:
        sm_counts[device] = cp.cuda.Device(device).attributes["MultiProcessorCount"]
    return sm_counts[device]


def ctype(array) -> str:
    ctype = float_ctype(array.dtype)
    if ctype is None:
        raise TypeError(
            f"tricycle.backends.cuda: dtype {array.dtype} is not supported "
            "(float32, float16, bfloat16)"
        )
    return ctype


def flag(value: bool) -> str:
    return "true" if value else "false"


def rows_of(x) -> tuple[int, int]:
    """(rows, cols) of x viewed as a matrix of its last axis; checks the int32 limits."""
    cols = x.shape[-1]
    rows = x.size // cols if cols else 0
    if rows >= 2**31 or cols >= 2**31:
        raise ValueError(f"tricycle.backends.cuda: shape {x.shape} is too large for int32 indexing")
    return rows, cols


def row_launch(rows: int, cols: int) -> tuple[bool, int, int]:
    """(warp_per_row, grid, block) for a kernel with one RowGroup per row."""
    if cols <= _WARP_MAX_COLS:
        block = 256
        return True, -(-rows // (block // 32)), block
    block = min(1024, max(128, 32 * -(-cols // 256)))  # about 8 elements per thread
    return False, rows, block


def contiguous(cp, a, dtype=None):
    """A C-contiguous array of ``dtype`` (a no-op when ``a`` already is one)."""
    if a.flags.c_contiguous and (dtype is None or a.dtype == dtype):
        return a  # the common case, without cupy's (slower) checks
    return cp.ascontiguousarray(a if dtype is None or a.dtype == dtype else a.astype(dtype))


def flat_labels(cp, labels):
    """Flat contiguous int32/int64 labels and their C type."""
    labels = labels.reshape(-1)
    if labels.dtype.name not in LABEL_CTYPES:
        labels = labels.astype(np.int64)
    labels = cp.ascontiguousarray(labels)
    return labels, LABEL_CTYPES[labels.dtype.name]


def aligned4(*arrays) -> bool:
    """Every array starts on a multiple of four elements: the vector (load4/store4) kernels'
    condition, with sizes that are multiples of four."""
    return all(a.data.ptr % (4 * a.itemsize) == 0 for a in arrays)


def elementwise_grid(n: int) -> int:
    return max(1, min(-(-n // 256), 32 * sm_count()))  # grid-stride beyond ~32 blocks per SM
