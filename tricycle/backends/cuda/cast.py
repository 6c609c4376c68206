"""Casts for mixed precision (cast.cu): many float32 tensors to one 16-bit dtype in one launch,
for the cast of every parameter at every forward (``tricycle.precision.cast_all``), and one
16-bit tensor back to float32, for the gradient of each of those casts."""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import compiled, ctype, elementwise_grid, enabled, float_ctype
from tricycle.backends.cuda.multi_tensor import block_table, pointer_table

_ALIGN = 64  # elements: 128-byte aligned views for 16-bit dtypes
_offset_tables: dict[tuple, tuple] = {}


def multi_cast_enabled(arrays, dtype) -> bool:
    """``multi_cast`` applies: float32 C-contiguous cupy arrays, to float16 or bfloat16."""
    return (
        bool(arrays)
        and enabled(*arrays)
        and np.dtype(dtype).itemsize == 2
        and float_ctype(np.dtype(dtype)) is not None
        and all(a.dtype == np.float32 and a.flags.c_contiguous for a in arrays)
    )


def multi_cast(arrays, dtype) -> list:
    """``[a.astype(dtype) for a in arrays]`` in one launch: the results are views into one
    new flat buffer (each starting 128-byte aligned)."""
    cp = backend.cupy()
    dtype = np.dtype(dtype)
    sizes = [a.size for a in arrays]
    key = (cp.cuda.runtime.getDevice(), tuple(sizes))
    if key not in _offset_tables:
        offsets = np.cumsum([0] + [-(-n // _ALIGN) * _ALIGN for n in sizes])
        _offset_tables[key] = (offsets, cp.asarray(offsets[:-1].astype(np.int64)))
    offsets, device_offsets = _offset_tables[key]
    flat = cp.empty(int(offsets[-1]), dtype=dtype)
    table = block_table(sizes)
    if table.n_blocks:
        kernel = compiled("cast.cu", "multi_cast_kernel", ctype(flat))
        kernel(
            (table.n_blocks,),
            (256,),
            (pointer_table(arrays), device_offsets, table.sizes, table.block_tensor,
             table.block_start, np.int32(table.chunk), flat),
        )  # fmt: skip
    return [flat[o : o + a.size].reshape(a.shape) for o, a in zip(offsets, arrays)]


def widen_enabled(array) -> bool:
    """``widen`` applies: a C-contiguous float16 or bfloat16 cupy array, kernels on."""
    return enabled(array) and array.dtype.itemsize == 2 and array.flags.c_contiguous


def widen(array, out=None):
    """``array.astype(float32)`` (exact) in one launch of a precompiled kernel, which costs
    the host less than CuPy's astype; into ``out`` (C-contiguous float32) where given."""
    cp = backend.cupy()
    if out is None:
        out = cp.empty(array.shape, dtype=np.float32)
    if array.size:
        kernel = compiled("cast.cu", "widen_kernel", ctype(array))
        kernel((elementwise_grid(array.size),), (256,), (array, out, np.int64(array.size)))
    return out


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("cast.cu", name, (t,))
        for name in ("multi_cast_kernel", "widen_kernel")
        for t in ("half_t", "bf16_t")
    ]


HALVES = ("float16", "bfloat16")


@dispatch.register("cast_arrays", "cuda", dtypes=("float32",))
def cast_arrays(arrays: list, dtype) -> list:
    """``tricycle.casting.cast_arrays``: one launch for all where ``multi_cast`` applies."""
    if multi_cast_enabled(arrays, dtype):
        return multi_cast(arrays, dtype)
    return [a.astype(dtype) for a in arrays]


@dispatch.register("widen", "cuda", dtypes=HALVES, applies=widen_enabled)
def widen_to(grad, dtype, out=None):
    """``tricycle.casting.widen`` for a 16-bit gradient of a float32 parameter."""
    if dtype == np.float32 and (out is None or out.flags.c_contiguous):
        return widen(grad, out)
    if out is None:
        return grad.astype(dtype, copy=False)
    out[...] = grad
    return out


@dispatch.register("cast_output", "cuda", dtypes=("float32", *HALVES))
def cast_output(x, dtype):
    """The logits as they are: the CUDA cross-entropy and softmax kernels read 16-bit inputs
    and compute in float32, so no float32 copy is needed (``Precision.cast_output``)."""
    return x
