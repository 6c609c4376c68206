"""The BLAS that the kernels' matrix products call: numpy's own OpenBLAS where numpy ships
one, else the one numba's ``np.dot`` calls (scipy's).

A kernel multiplies through ``gemm.gemm_into``, which calls CBLAS's ``?gemm`` by a symbol
name, ``tricycle_cblas_sgemm`` or ``tricycle_cblas_dgemm`` (a name keeps a kernel cacheable on
disk, where a pointer would not). This module points the names before any kernel is compiled
or loaded (it runs when the backend is first imported):

- at numpy's OpenBLAS where it has the 64-bit-integer CBLAS that numpy's wheels ship (found
  through ``threadpoolctl``). Single-threaded, it runs the kernels' shapes as fast as scipy's
  or faster: the LSTM's step product (32 x 256 x 1024) 1.27x, the weights' gradients (A
  transposed) 1.10-1.17x (``benchmarks/README.md``);
- else at ``_shim``, which calls numba's own entry to BLAS (``numba_xxgemm``, scipy's library).

The kernels call BLAS from their own threads, one single-threaded call each. scipy's library is
set to one thread once (``compile.py``); numpy's keeps the user's count for numpy's own
products, so ``one_thread`` sets it to one while a kernel that multiplies runs, and back when
the last such kernel returns.
"""

import ctypes
import os
import threading

import numpy as np
from llvmlite import binding
from numba import cfunc, types
from threadpoolctl import ThreadpoolController

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS's enums


def _signature(real):
    """CBLAS ?gemm with 64-bit integers: (order, transa, transb, m, n, k, alpha, a, lda, b,
    ldb, beta, c, ldc), alpha and beta by value."""
    return types.void(
        types.intc, types.intc, types.intc, types.int64, types.int64, types.int64,
        real, types.voidptr, types.int64, types.voidptr, types.int64,
        real, types.voidptr, types.int64,
    )  # fmt: skip


cblas_sgemm = types.ExternalFunction("tricycle_cblas_sgemm", _signature(types.float32))
cblas_dgemm = types.ExternalFunction("tricycle_cblas_dgemm", _signature(types.float64))

# numba's entry to scipy's ?gemm, column-major: (kind "s" or "d", transa, transb, m, n, k,
# &alpha, a, lda, b, ldb, &beta, c, ldc)
_xxgemm = types.ExternalFunction("numba_xxgemm", types.intc(
    types.char, types.char, types.char, types.intp, types.intp, types.intp,
    types.voidptr, types.voidptr, types.intp, types.voidptr, types.intp, types.voidptr,
    types.voidptr, types.intp,
))  # fmt: skip


def _shim(dtype):
    """A C function of CBLAS's row-major ?gemm that calls ``numba_xxgemm``: C = op(A) op(B)
    in rows is C^T = op(B)^T op(A)^T in columns."""
    real = types.float32 if dtype == np.float32 else types.float64
    kind = ord("s" if dtype == np.float32 else "d")

    def gemm(order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        scalars = np.empty(2, dtype=dtype)  # numba_xxgemm takes alpha and beta by address
        scalars[0], scalars[1] = alpha, beta
        _xxgemm(kind, ord("t") if transb == TRANS else ord("n"),
                ord("t") if transa == TRANS else ord("n"), n, m, k, scalars[0:].ctypes, b, ldb,
                a, lda, scalars[1:].ctypes, c, ldc)  # fmt: skip

    return cfunc(_signature(real), cache=True)(gemm)


def _numpy_openblas():
    """(library, its symbols' prefix and suffix) of numpy's own OpenBLAS with 64-bit integers
    (numpy's wheels: ``scipy_cblas_sgemm64_``), or None (another BLAS, or LP64)."""
    numpy_package = os.path.dirname(np.__file__)
    for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
        folder = os.path.dirname(controller.filepath)
        if not (folder.startswith(numpy_package) or os.path.basename(folder) == "numpy.libs"):
            continue
        library = ctypes.CDLL(controller.filepath)
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "_64"):
                if hasattr(library, f"{prefix}cblas_sgemm{suffix}"):
                    return library, prefix, suffix
    return None


class _Threads:
    """numpy's OpenBLAS at one thread while any kernel that multiplies runs (``one_thread``
    counts them), then back to the count it had."""

    def __init__(self, library=None, prefix="", suffix=""):
        self.lock, self.inside, self.saved = threading.Lock(), 0, 1
        self.get = self.set = None
        if library is not None:
            self.get = getattr(library, f"{prefix}openblas_get_num_threads{suffix}")
            self.set = getattr(library, f"{prefix}openblas_set_num_threads{suffix}")
            self.get.restype, self.set.argtypes = ctypes.c_int, [ctypes.c_int]

    def enter(self):
        if self.set is None:
            return
        with self.lock:
            if self.inside == 0:
                self.saved = self.get()
                if self.saved != 1:
                    self.set(1)
            self.inside += 1

    def leave(self):
        if self.set is None:
            return
        with self.lock:
            self.inside -= 1
            if self.inside == 0 and self.saved != 1:
                self.set(self.saved)


def _bind() -> tuple[str, _Threads]:
    """Point the symbols at numpy's OpenBLAS, or at the shims; returns which, and the
    threads' switch."""
    found = _numpy_openblas()
    if found is None:
        for name, dtype in (("tricycle_cblas_sgemm", np.float32),
                            ("tricycle_cblas_dgemm", np.float64)):  # fmt: skip
            binding.add_symbol(name, _shim(dtype).address)
        return "scipy", _Threads()
    library, prefix, suffix = found
    for kind in "sd":
        function = getattr(library, f"{prefix}cblas_{kind}gemm{suffix}")
        address = ctypes.cast(function, ctypes.c_void_p).value
        binding.add_symbol(f"tricycle_cblas_{kind}gemm", address)
    return "numpy", _Threads(library, prefix, suffix)


LIBRARY, _threads = _bind()
one_thread_enter, one_thread_leave = _threads.enter, _threads.leave
