"""The BLAS that the kernels' matrix products call: numpy's own OpenBLAS where numpy ships
one, else the one numba's ``np.dot`` calls (scipy's).

A kernel multiplies through ``gemm.gemm_into``, which calls CBLAS's ``?gemm`` by a symbol
name, ``tricycle_cblas_sgemm`` or ``tricycle_cblas_dgemm`` (a name keeps a kernel cacheable on
disk, where a pointer would not). The first kernel that multiplies points the names, before
it is compiled or loaded (``one_thread_enter``):

- at numpy's OpenBLAS where it has the 64-bit-integer CBLAS that numpy's wheels ship (found
  through ``threadpoolctl``). Single-threaded, it runs the LSTM's step products (32 rows)
  faster than scipy's, and a GPT step's products about as fast, so both train faster
  (``benchmarks/README.md``, "Numbers once in docstrings");
- else at ``_shim``, which calls numba's own entry to BLAS (``numba_xxgemm``, scipy's library).

A product whose second operand is transposed goes to scipy's library whatever numpy has
(``tricycle_scipy_?gemm``, through the shim): numpy's runs those slower (attention's q k^T
blocks, a third of a GPT step's products), and 32-row ones slower still.

The kernels call BLAS from their own threads, one single-threaded call each. scipy's library is
set to one thread once (``compile.py``); numpy's keeps the user's count for numpy's own
products, so ``one_thread_enter`` sets it to one while a kernel that multiplies runs, and
``one_thread_leave`` back when the last such kernel returns.
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
# the same through scipy's library always (``_shim``): for a transposed second operand
scipy_sgemm = types.ExternalFunction("tricycle_scipy_sgemm", _signature(types.float32))
scipy_dgemm = types.ExternalFunction("tricycle_scipy_dgemm", _signature(types.float64))

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


def ships_with_numpy(path: str) -> bool:
    """Whether the library at ``path`` is numpy's own (in its package or its wheel's
    ``numpy.libs``)."""
    folder = os.path.dirname(path)
    return (
        folder.startswith(os.path.dirname(np.__file__)) or os.path.basename(folder) == "numpy.libs"
    )


def _numpy_openblas():
    """(library, its symbols' prefix and suffix, the CPU it chose kernels for) of numpy's own
    OpenBLAS with 64-bit integers (numpy's wheels: ``scipy_cblas_sgemm64_``), or None
    (another BLAS, or LP64)."""
    for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
        if not ships_with_numpy(controller.filepath):
            continue
        library = ctypes.CDLL(controller.filepath)
        for prefix in ("scipy_", ""):
            for suffix in ("64_", "_64"):
                if hasattr(library, f"{prefix}cblas_sgemm{suffix}"):
                    return library, prefix, suffix, controller.architecture
    return None


class _Threads:
    """numpy's OpenBLAS at one thread while any kernel that multiplies runs (``enter`` and
    ``leave`` count them), then back to the count it had."""

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


def _bind() -> dict:
    """Point the symbols at numpy's OpenBLAS, or at the shims; returns which ("library"), the
    threads' switch ("threads") and the CPU that numpy's OpenBLAS chose its kernels for
    ("architecture", None for the shims)."""
    shims = {kind: _shim(dtype).address for kind, dtype in (("s", np.float32), ("d", np.float64))}
    for kind, address in shims.items():
        binding.add_symbol(f"tricycle_scipy_{kind}gemm", address)
    found = _numpy_openblas()
    if found is None:
        for kind, address in shims.items():
            binding.add_symbol(f"tricycle_cblas_{kind}gemm", address)
        return dict(library="scipy", threads=_Threads(), architecture=None)
    library, prefix, suffix, architecture = found
    for kind in "sd":
        function = getattr(library, f"{prefix}cblas_{kind}gemm{suffix}")
        address = ctypes.cast(function, ctypes.c_void_p).value
        binding.add_symbol(f"tricycle_cblas_{kind}gemm", address)
    return dict(library="numpy", threads=_Threads(library, prefix, suffix),
                architecture=architecture)  # fmt: skip


_bound = {}  # what ``_bind`` returns, once the first kernel has bound the symbols
_binding = threading.Lock()


def library() -> str:
    """Which library the kernels' products call ("numpy" or "scipy"), binding it if need be."""
    if not _bound:
        with _binding:
            if not _bound:
                _bound.update(_bind())
    return _bound["library"]


def one_thread_enter():
    """Before a kernel that multiplies (``compile.ParallelKernel``): the symbols bound (at the
    first such kernel, not at import: that loads scipy's library, which starts a thread), and
    numpy's library on one thread."""
    library()
    _bound["threads"].enter()


def one_thread_leave():
    _bound["threads"].leave()


# OpenBLAS's builds for AVX-512 (SkylakeX, and the two that reuse its kernels) multiply a
# product of M N K <= 100^3 with "small-matrix kernels", which read both operands where they
# lie; a larger product first copies ("packs") both into blocks, every call
SMALL_MATRIX_ARCHITECTURES = frozenset({"SkylakeX", "Cooperlake", "SapphireRapids"})
SMALL_MATRIX_WORK = 100**3
STEP_ROWS = 16  # rows of a call: fewer rows and more columns ran faster at the same M N K
MIN_STEP_COLUMNS = 32  # narrower calls ran no faster than whole ones
MAX_STEP_WEIGHTS = 1 << 20  # bytes of w, within a core's L2 cache on these CPUs


def small_matrix_kernels() -> bool:
    """Whether the kernels' products run on an OpenBLAS with the small-matrix kernels (numpy's,
    on a CPU with AVX-512)."""
    library()
    return _bound["architecture"] in SMALL_MATRIX_ARCHITECTURES


def small_step_weights(depth: int, columns: int, itemsize: int = 4, rows: int = STEP_ROWS) -> bool:
    """Whether a kernel's repeated products of ``rows`` rows against the same w (depth,
    columns) can take the small-matrix kernels: they are there, w fits a core's L2 cache, and
    a call of up to ``STEP_ROWS`` rows x ``MIN_STEP_COLUMNS`` columns that deep is small."""
    return (
        small_matrix_kernels()
        and depth * columns * itemsize <= MAX_STEP_WEIGHTS
        and min(rows, STEP_ROWS) * MIN_STEP_COLUMNS * depth <= SMALL_MATRIX_WORK
    )


def step_blocks(rows: int, depth: int, columns: int, itemsize: int = 4) -> tuple[int, int]:
    """(rows, columns) of out that each BLAS call takes, for out (rows, columns) = a (rows,
    depth) @ w (depth, columns), a product that a kernel makes again and again with the same w
    (the LSTM's steps, ``gemm.gemm_blocks_into``). Where the small-matrix kernels take w
    (``small_step_weights``): blocks of up to ``STEP_ROWS`` rows and the most columns (a power
    of two, 32 or more) that those kernels take, so that w is never packed. Elsewhere, or
    where the whole product is small already, all of it in one call.

    The small-matrix kernels ran the LSTM's step products faster than whole calls at 32 rows,
    but only with w's columns 64-byte aligned (``arrays.aligned_empty``): misaligned, they ran
    no faster. A w of 4 MiB (1024 units), which they read from beyond the L2 cache, ran slower
    than whole calls (``benchmarks/README.md``)."""
    whole = max(rows, 1), max(columns, 1)  # (an empty batch takes one empty call)
    small = small_step_weights(depth, columns, itemsize, rows)
    if not small or rows * columns * depth <= SMALL_MATRIX_WORK:
        return whole  # no small-matrix kernels for w, or the whole product is small already
    block_rows = min(rows, STEP_ROWS)
    width = MIN_STEP_COLUMNS
    while width < columns and block_rows * width * 2 * depth <= SMALL_MATRIX_WORK:
        width *= 2
    return block_rows, min(width, columns)
