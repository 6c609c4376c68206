"""Which BLAS the CPU kernels should call: numpy's own OpenBLAS against scipy's, single-threaded,
on the shapes the kernels multiply (``tricycle/backends/cpu/blas.py`` chose numpy's by this).

    python benchmarks/blas_libraries.py
    python benchmarks/blas_libraries.py --shapes 32x256x512,512x1024x256 --rounds 9

Each shape runs through both libraries' row-major CBLAS ``sgemm`` (called with ctypes, so the
caller's overhead is the same), in rounds alternating between the two; a figure is the best
round's GFLOP/s. Shapes are M x K x N; each runs plain and with A, then B, transposed.
"""

import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg.cython_blas  # noqa: F401 - loads scipy's library
from threadpoolctl import ThreadpoolController, threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.backends.cpu.blas import ships_with_numpy  # noqa: E402

# the LSTM's steps (a chunk's product and its gradient), its large products, a GPT step's slices
SHAPES = "32x256x512,32x512x256,32x256x1024,2048x256x1024,1024x2048x256,512x256x768,512x1024x256"
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def _sgemm(path: str, name: str, integer):
    """The ``cblas_sgemm`` of the library at ``path``, typed for ``integer`` (c_int or c_int64)."""
    function = getattr(ctypes.CDLL(path), name)
    real, pointer = ctypes.c_float, ctypes.c_void_p
    # (order, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
    function.argtypes = (
        [ctypes.c_int] * 3
        + [integer] * 3
        + [real, pointer, integer]
        + [pointer, integer, real, pointer, integer]
    )
    return function


def libraries() -> dict:
    """{"numpy": sgemm, "scipy": sgemm}, each found through threadpoolctl."""
    found = {}
    for controller in ThreadpoolController().select(internal_api="openblas").lib_controllers:
        path = controller.filepath
        if ships_with_numpy(path):
            found["numpy"] = _sgemm(path, "scipy_cblas_sgemm64_", ctypes.c_int64)
        elif "scipy" in path:
            found["scipy"] = _sgemm(path, "scipy_cblas_sgemm", ctypes.c_int)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES, help="M x K x N, comma-separated")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    try:
        gemms = libraries()
    except AttributeError as error:  # another build of OpenBLAS: other symbol names
        raise SystemExit(f"blas_libraries: {error}") from None
    if set(gemms) != {"numpy", "scipy"}:
        found = sorted(gemms)
        raise SystemExit(f"blas_libraries: needs numpy's and scipy's OpenBLAS; found {found}")
    threadpool_limits(1)
    rng = np.random.default_rng(0)
    header = ("M x K x N", "operand", "numpy GFLOP/s", "scipy GFLOP/s", "numpy / scipy")
    print(f"{header[0]:<18}{header[1]:>10}" + "".join(f"{h:>15}" for h in header[2:]))
    for text in args.shapes.split(","):
        M, K, N = (int(n) for n in text.split("x"))
        for transposed in ("", "A", "B"):
            a = rng.standard_normal((K, M) if transposed == "A" else (M, K), dtype=np.float32)
            b = rng.standard_normal((N, K) if transposed == "B" else (K, N), dtype=np.float32)
            out = np.empty((M, N), dtype=np.float32)
            call = (ROW_MAJOR, TRANS if transposed == "A" else NO_TRANS,
                    TRANS if transposed == "B" else NO_TRANS, M, N, K, 1.0, a.ctypes.data,
                    a.shape[1], b.ctypes.data, b.shape[1], 0.0, out.ctypes.data, N)  # fmt: skip
            repeats = max(3, int(1e8 / (M * N * K)))
            best = {name: float("inf") for name in gemms}
            for _ in range(args.rounds):
                for name, gemm in gemms.items():
                    start = time.perf_counter()
                    for _ in range(repeats):
                        gemm(*call)
                    best[name] = min(best[name], (time.perf_counter() - start) / repeats)
            rate = {name: 2 * M * N * K / seconds / 1e9 for name, seconds in best.items()}
            print(f"{text:<18}{transposed or 'plain':>10}{rate['numpy']:15.0f}{rate['scipy']:15.0f}"
                  f"{best['scipy'] / best['numpy']:14.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
