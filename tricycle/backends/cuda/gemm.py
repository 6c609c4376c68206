"""2-D matrix products straight through cuBLAS, for Dense layers and 2-D einsums.

``cupy.matmul`` spends host time per call (argument handling, output allocation, compute-type
lookups) before cuBLAS runs; a GPT step makes about a hundred of them, and a step at GPT sizes
can be bound by host time rather than by the GPU (benchmarks/GPU_NOTES.md). ``gemm`` makes one
``cublasGemmEx`` call through ctypes, on a cuBLAS handle of its own (one per thread and
device, with its own workspace) bound to CuPy's current stream. CuPy's own cuBLAS bindings
refuse to run while a stream is being captured into a CUDA graph; cuBLAS itself records into
one, given a workspace it need not allocate, so these products can be captured
(``tricycle.apps.cuda_graph``).

Row-major arrays are column-major transposes, so C = op(A) op(B) (row-major, C (M, N)) is
computed as C^T = op(B)^T op(A)^T in cuBLAS's column-major terms: the operands swap places
and each keeps its own transpose flag, with no copies. An F-contiguous operand is the
transpose of a C-contiguous one and is read as such; other strided operands are copied.

float32 products follow CuPy's compute-type setting (``tricycle.precision.Precision("tf32")``
switches it to TF32 while entered); float16 and bfloat16 products accumulate in float32.
"""

import ctypes
import threading

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import CTYPES, enabled

# library_types.h and cublas_api.h
_CUDA_TYPES = {"float32": 0, "float16": 2, "bfloat16": 14}  # CUDA_R_32F, _16F, _16BF
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32 = 68, 77  # cublasComputeType_t
_OP_N, _OP_T = 0, 1
_GEMM_DEFAULT = -1
_COMPUTE_TYPE_TF32 = 7  # CuPy's "float32 products in TF32" (cupy._core.set_compute_type)
_WORKSPACE_BYTES = 32 * 2**20  # what cuBLAS asks for on Hopper
_SCALARS = np.array([1.0, 0.0], dtype=np.float32)  # alpha = 1; beta = 0: host memory
_ONE, _ZERO = _SCALARS.ctypes.data, _SCALARS.ctypes.data + 4
_cuda_type_of: dict = {}
_ones_rows: dict = {}  # (n, dtype, device) -> a (1, n) row of ones, made once


# ====================================================================== cuBLAS through ctypes
class _Library:
    """libcublas as CuPy loaded it (the same copy), with the four functions used here."""

    def __init__(self, cp):
        self.lib = ctypes.CDLL(_library_path(cp))
        handle, i32, ptr = ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p
        self.create = self._function("cublasCreate_v2", [ctypes.POINTER(handle)])
        self.set_stream = self._function("cublasSetStream_v2", [handle, ptr])
        self.set_workspace = self._function("cublasSetWorkspace_v2", [handle, ptr, ctypes.c_size_t])
        self.gemm = self._function(
            "cublasGemmEx",
            [handle, i32, i32, i32, i32, i32, ptr, ptr, i32, i32, ptr, i32, i32, ptr, ptr, i32,
             i32, i32, i32],
        )  # fmt: skip

    def _function(self, name: str, argtypes: list):
        fn = getattr(self.lib, name)
        fn.argtypes, fn.restype = argtypes, ctypes.c_int  # cublasStatus_t
        return fn


def _library_path(cp) -> str:
    """The libcublas that CuPy's bindings loaded (read from the process's mappings), else the
    one of the CUDA major version CuPy runs on."""
    cp.cuda.cublas.getVersion(cp.cuda.device.get_cublas_handle())  # make sure it is loaded
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if "/libcublas.so" in path:
                    return path
    except OSError:
        pass
    return f"libcublas.so.{cp.cuda.runtime.runtimeGetVersion() // 1000}"


class _Handles(threading.local):
    """Per thread: device -> (library, cuBLAS handle, its workspace)."""

    def __init__(self):
        self.by_device: dict = {}


_handles = _Handles()
_library_lock = threading.Lock()
_library: list = []  # the one _Library, made on first use


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"gemm: {what} failed with cublasStatus_t {status}")


def _handle(cp):
    """This thread's cuBLAS handle on the current device, bound to a workspace of its own."""
    device = cp.cuda.runtime.getDevice()
    entry = _handles.by_device.get(device)
    if entry is None:
        with _library_lock:
            if not _library:
                _library.append(_Library(cp))
        library = _library[0]
        handle = ctypes.c_void_p()
        _check(library.create(ctypes.byref(handle)), "cublasCreate")
        workspace = cp.cuda.alloc(_WORKSPACE_BYTES)  # lives as long as the handle
        _check(library.set_workspace(handle, workspace.ptr, _WORKSPACE_BYTES), "cublasSetWorkspace")
        entry = _handles.by_device[device] = (library, handle, workspace)
    return entry


# ====================================================================== products
def gemm_enabled(a, b) -> bool:
    """``gemm`` applies: 2-D cupy arrays of one dtype, float32, float16 or bfloat16."""
    return enabled(a, b) and a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype


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
    a, transpose_a = _row_major(cp, a, transpose_a)
    b, transpose_b = _row_major(cp, b, transpose_b)
    data_type = _cuda_type(a.dtype)
    compute = _COMPUTE_32F_FAST_TF32 if data_type == 0 and tf32_enabled() else _COMPUTE_32F
    library, handle, _ = _handle(cp)
    _check(library.set_stream(handle, cp.cuda.get_current_stream().ptr), "cublasSetStream")
    # column-major: C^T (n, m) = op(b)^T (n, k) @ op(a)^T (k, m); leading dims = row lengths
    status = library.gemm(
        handle, _OP_T if transpose_b else _OP_N, _OP_T if transpose_a else _OP_N, n, m, k,
        _ONE, b.data.ptr, data_type, max(b.shape[1], 1), a.data.ptr, data_type,
        max(a.shape[1], 1), _ZERO, out.data.ptr, data_type, n, compute, _GEMM_DEFAULT,
    )  # fmt: skip
    if status != 0:
        _check(status, f"cublasGemmEx of {a.shape} x {b.shape} ({a.dtype})")
    return out


def _row_major(cp, a, transpose: bool):
    """(a C-contiguous array, its transpose flag) for operand ``a`` of a product: an
    F-contiguous ``a`` is the transpose of a C-contiguous one; any other layout is copied
    (as ``cupy.matmul`` would)."""
    if a.flags.c_contiguous:
        return a, transpose
    if a.flags.f_contiguous:
        return a.T, not transpose
    return cp.ascontiguousarray(a), transpose


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


def _rows(a) -> bool:
    return a.ndim == 2 and a.flags.c_contiguous


@dispatch.register("sum_rows", "cuda", dtypes=tuple(CTYPES), applies=_rows)
def column_sums(a):
    """Sums over the rows of a C-contiguous 2-D cupy array: (N, J) -> (J,), as the product
    of a (cached) row of ones with ``a``: one GEMM, the bias gradient of a Dense layer."""
    cp = backend.cupy()
    key = (a.shape[0], a.dtype, a.data.device_id)
    if key not in _ones_rows:
        _ones_rows[key] = cp.ones((1, a.shape[0]), dtype=a.dtype)
    return gemm(_ones_rows[key], a).reshape(a.shape[1])


@dispatch.register("matmul", "cuda", dtypes=tuple(CTYPES), applies=gemm_enabled)
def matmul(a, b):
    """The Einsum runner's 2-D products (``xp.matmul(a, b)``) through cuBLAS: less host time
    than cupy's, and capturable in a CUDA graph."""
    return gemm(a, b)
