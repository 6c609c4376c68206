"""Engine benchmarks: tricycle vs raw numpy vs PyTorch eager (CPU), side by side.

    python benchmarks/ops.py              # both benchmarks, several interleaved rounds
    python benchmarks/ops.py --quick      # fewer repeats, a smoke test

1. overhead: 1,000 chained small elementwise ops on a (16, 16) float32 tensor, alternating
   tensor-tensor and tensor-scalar ops (``y = y * w; y = y + 1e-4``), forward + backward.
   Per-op Python overhead dominates; the target is ours <= 1.5x PyTorch eager.
2. dense: ``Einsum("...i,ij->...j")`` of (8192, 256) x (256, 1024), forward + backward.
   BLAS dominates; the target is ours <= 1.1x the same three matmuls in raw numpy
   (``x @ W``, ``g @ W.T``, ``x.T @ g``).

Times are wall-clock (time.perf_counter): the runners run interleaved, round by round; the
table shows each one's best round and, as ratios, the medians of per-round ratios (robust to
load from other processes). PyTorch gets as many threads as numpy's BLAS has. Results go to
stdout as a table; nothing is written to disk.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import blas_threads, paired_ratio, race, settled, torch_or_none  # noqa: E402

import tricycle  # noqa: E402, F401 - binds the Tensor operators
from tricycle.apps.cpu import set_cpu_threads  # noqa: E402
from tricycle.einsum import Einsum  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402

torch = torch_or_none()  # the comparison is optional

N_OPS = 1_000
SMALL = (16, 16)
DENSE_X, DENSE_W = (8192, 256), (256, 1024)


# ------------------------------------------------------------------ 1. overhead
def overhead_ours(x0, w0):
    def run():
        x, w = Tensor(x0), Tensor(w0)
        start = time.perf_counter()
        y = x
        for _ in range(N_OPS // 2):
            y = y * w  # tensor-tensor
            y = y + 1e-4  # tensor-scalar
        y.backward()
        elapsed = time.perf_counter() - start
        assert x.grad is not None and w.grad is not None
        return elapsed

    return run


def overhead_numpy(x0, w0):
    """The same computation by hand: forward saving what backward needs, then backward."""

    def run():
        start = time.perf_counter()
        y, saved = x0, []
        for _ in range(N_OPS // 2):
            saved.append(y)
            y = y * w0
            y = y + np.float32(1e-4)
        g = np.ones_like(y)
        dw = np.zeros_like(w0)
        for y_in in reversed(saved):  # d(y + c) = g;  d(y * w) = (g * w, g * y)
            dw = dw + g * y_in
            g = g * w0
        elapsed = time.perf_counter() - start
        assert g.shape == dw.shape
        return elapsed

    return run


def overhead_torch(x0, w0):
    def run():
        x = torch.tensor(x0, requires_grad=True)
        w = torch.tensor(w0, requires_grad=True)
        start = time.perf_counter()
        y = x
        for _ in range(N_OPS // 2):
            y = y * w
            y = y + 1e-4
        y.backward(torch.ones_like(y))
        elapsed = time.perf_counter() - start
        assert x.grad is not None and w.grad is not None
        return elapsed

    return run


# ------------------------------------------------------------------ 2. dense
def dense_ours(x0, w0, g0):
    dense = Einsum("...i,ij->...j")

    def run():
        x, w = Tensor(x0), Tensor(w0)
        start = time.perf_counter()
        y = dense(x, w)
        y.backward(g0)
        elapsed = time.perf_counter() - start
        assert x.grad.shape == x0.shape and w.grad.shape == w0.shape
        return elapsed

    return run


def dense_numpy(x0, w0, g0):
    def run():
        start = time.perf_counter()
        y = x0 @ w0
        dx = g0 @ w0.T
        dw = x0.T @ g0
        elapsed = time.perf_counter() - start
        assert y.shape == g0.shape and dx.shape == x0.shape and dw.shape == w0.shape
        return elapsed

    return run


def dense_torch(x0, w0, g0):
    g = torch.from_numpy(g0)

    def run():
        x = torch.tensor(x0, requires_grad=True)
        w = torch.tensor(w0, requires_grad=True)
        start = time.perf_counter()
        y = x @ w
        y.backward(g)
        elapsed = time.perf_counter() - start
        assert x.grad is not None and w.grad is not None
        return elapsed

    return run


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (a smoke test)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement")
    args = parser.parse_args()
    set_cpu_threads(None)  # tricycle's CPU threads, as the training script runs with them
    small_repeats = args.repeats or (3 if args.quick else 30)
    dense_repeats = args.repeats or (2 if args.quick else 10)

    threads = blas_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)

    # all runners race interleaved, round by round, in alternating order. After each torch
    # run we pause (untimed): PyTorch's OpenMP workers keep spinning for a while after each
    # call and would otherwise steal cores from whichever BLAS call ran next.
    small = (
        rng.random(SMALL, dtype=np.float32),
        (1 + 1e-3 * rng.random(SMALL, dtype=np.float32)).astype(np.float32),
    )
    big = (
        rng.random(DENSE_X, dtype=np.float32),
        rng.random(DENSE_W, dtype=np.float32),
        rng.random((DENSE_X[0], DENSE_W[1]), dtype=np.float32),
    )
    runners = {"ours": overhead_ours(*small), "numpy": overhead_numpy(*small)}
    if torch is not None:
        runners["torch"] = settled(overhead_torch(*small))
    overhead = race(runners, small_repeats)
    runners = {"ours": dense_ours(*big), "numpy": dense_numpy(*big)}
    if torch is not None:
        runners["torch"] = settled(dense_torch(*big))
    dense = race(runners, dense_repeats)

    torch_version = torch.__version__ if torch is not None else "not installed"
    print(
        f"numpy {np.__version__}, torch {torch_version}, {threads} BLAS thread(s), "
        f"{small_repeats} (overhead) / {dense_repeats} (dense) rounds; times are the best "
        "round, the ratios medians of per-round ratios"
    )
    header = (
        f"{'benchmark':<44}{'ours ms':>9}{'numpy ms':>10}{'torch ms':>10}"
        f"{'ours/numpy':>12}{'ours/torch':>12}  target"
    )
    print(header)
    print("-" * len(header))
    rows = [
        (f"overhead: {N_OPS} ops on {SMALL}, fwd+bwd", overhead, "torch", 1.5),
        (f"dense: {DENSE_X}x{DENSE_W}, fwd+bwd", dense, "numpy", 1.1),
    ]
    for label, times, against, limit in rows:
        best = {name: min(runs) for name, runs in times.items()}
        ratios = {name: paired_ratio(times["ours"], times[name]) for name in times}
        torch_ms = f"{best['torch'] * 1e3:10.2f}" if "torch" in best else f"{'-':>10}"
        vs_torch = f"{ratios['torch']:12.2f}" if "torch" in ratios else f"{'-':>12}"
        if against in ratios:
            met = "met" if ratios[against] <= limit else "NOT met"
            verdict = f"ours/{against} <= {limit}: {met}"
        else:
            verdict = f"ours/{against} <= {limit}: {against} unavailable"
        print(
            f"{label:<44}{best['ours'] * 1e3:9.2f}{best['numpy'] * 1e3:10.2f}{torch_ms}"
            f"{ratios['numpy']:12.2f}{vs_torch}  {verdict}"
        )


if __name__ == "__main__":
    main()
