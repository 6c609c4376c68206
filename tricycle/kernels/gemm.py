"""2-D matrix products straight through cuBLAS, for the Dense layer's three products.

``cupy.matmul`` spends 45-80 us of host time per call (argument handling, output allocation,
compute-type lookups) before cuBLAS runs; a GPT step makes ~100 of them, and at GPT sizes on
an H100 the step is bound by host time, not by the GPU. ``gemm`` makes one ``cublasGemmEx``
call through CuPy's own bindings on CuPy's cuBLAS handle and stream.

Row-major arrays are column-major transposes, so C = op(A) op(B) (row-major, C (M, N)) is
computed as C^T = op(B)^T op(A)^T in cuBLAS's column-major terms: the operands swap places
and each keeps its own transpose flag, with no copies.

float32 products follow CuPy's compute-type setting (``tricycle.precision.Precision("tf32")``
switches it to TF32 while entered); float16 and bfloat16 products accumulate in float32.
"""

import numpy as np

from tricycle import backend
from tricycle.kernels.launch import enabled

# library_types.h and cublas_api.h
_CUDA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14}  # CUDA_R_32F, _16F, _16BF
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32 = 68, 77  # cublasComputeType_t
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_POINTER_MODE_HOST = 0
_COMPUTE_TYPE_TF32 = 7  # CuPy's "float32 products in TF32" (cupy._core.set_compute_type)
_SCALARS = np.array([1.0, 0.0], dtype=np.float32)  # alpha = 1; beta = 0 or 1: host memory
_ONE, _ZERO = _SCALARS.ctypes.data, _SCALARS.ctypes.data + 4
_cuda_type_of: dict = {}
_ones_rows: dict = {}  # (n, dtype, device) -> a (1, n) row of ones, made once


def gemm_enabled(a, b) -> bool:
    """``gemm`` applies: C-contiguous 2-D cupy arrays of one supported float dtype."""
    return (
        enabled(a, b)
        and a.ndim == 2
        and b.ndim == 2
        and a.dtype == b.dtype
        and a.flags.c_contiguous
        and b.flags.c_contiguous
    )


def gemm(a, b, transpose_a: bool = False, transpose_b: bool = False, out=None):
    """op(a) @ op(b) with op = transpose where asked: (M, K) x (K, N) -> (M, N).

    ``a`` and ``b`` as in ``gemm_enabled``; ``out`` (C-contiguous, the inputs' dtype) is
    written if given, else a new array is returned.
    """
    cp = backend.cupy()
    (m, k) = a.shape[::-1] if transpose_a else a.shape
    (k_b, n) = b.shape[::-1] if transpose_b else b.shape
    if k != k_b:
        raise ValueError(
            f"gemm: inner sizes differ: {a.shape}{'^T' if transpose_a else ''} x "
            f"{b.shape}{'^T' if transpose_b else ''}"
        )
    if out is None:
        out = cp.empty((m, n), dtype=a.dtype)
    elif out.shape != (m, n) or out.dtype != a.dtype or not out.flags.c_contiguous:
        raise ValueError(f"gemm: out must be C-contiguous {(m, n)} {a.dtype}, got {out.shape}")
    if m == 0 or n == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    data_type = _cuda_type(a.dtype)
    compute = _COMPUTE_32F_FAST_TF32 if data_type == 0 and tf32_enabled() else _COMPUTE_32F
    cublas = cp.cuda.cublas
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
    cublas.setPointerMode(handle, _POINTER_MODE_HOST)
    # column-major: C^T (n, m) = op(b)^T (n, k) @ op(a)^T (k, m); leading dims = row lengths
    cublas.gemmEx(
        handle, _OP_T if transpose_b else _OP_N, _OP_T if transpose_a else _OP_N, n, m, k,
        _ONE, b.data.ptr, data_type, b.shape[1], a.data.ptr, data_type, a.shape[1],
        _ZERO, out.data.ptr, data_type, n, compute, _GEMM_DEFAULT,
    )  # fmt: skip
    return out


def tf32_enabled() -> bool:
    """Whether float32 products run in TF32 now: CuPy's compute type for float32, which
    ``tricycle.precision.Precision("tf32")`` sets while entered. False without a GPU."""
    return (
        backend.cupy_available()
        and backend.cupy()._core.get_compute_type(np.float32) == _COMPUTE_TYPE_TF32
    )


def _cuda_type(dtype) -> int:
    try:
        return _cuda_type_of[dtype]
    except KeyError:
        _cuda_type_of[dtype] = _CUDA_TYPES[dtype.name]
        return _cuda_type_of[dtype]


def column_sums(a):
    """Sums over the rows of a C-contiguous 2-D cupy array: (N, J) -> (J,), as the product
    of a (cached) row of ones with ``a``: one GEMM, the bias gradient of a Dense layer."""
    cp = backend.cupy()
    key = (a.shape[0], a.dtype, a.data.device_id)
    if key not in _ones_rows:
        _ones_rows[key] = cp.ones((1, a.shape[0]), dtype=a.dtype)
    return gemm(_ones_rows[key], a).reshape(a.shape[1])
