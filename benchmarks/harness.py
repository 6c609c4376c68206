"""What the benchmarks share: the benchmarked configs, thread settings, device
synchronisation, interleaved timing in one process, and paired runs in subprocesses.

Two ways to compare fairly on a machine whose speed drifts (a shared VM has fast and slow
spells):

- ``race``: runners in one process, round by round in alternating order; compare the
  median of per-round ratios (``paired_ratio``).
- ``paired_runs``: whole runs in fresh subprocesses (each with its own peak memory),
  alternating between the frameworks; ``report_pairs`` prints best run against best run
  and the median over back-to-back pairs, the steadier of the two.
"""

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

# the GPT of the CPU benchmarks (gpt_train.py, cpu_phases.py): ~4M parameters
CPU_GPT = dict(
    embedding_dim=256, n_heads=4, n_layers=4, context_window=128, vocab_size=1024, batch_size=8,
    activation_fn="gelu_tanh", grad_clip=1.0,
)  # fmt: skip
# the GPT of the GPU benchmark: nanoGPT's shakespeare-char size with a 1024-token vocabulary
GPU_GPT = dict(
    embedding_dim=384, n_heads=6, n_layers=6, context_window=256, vocab_size=1024, batch_size=64,
    activation_fn="gelu_tanh", grad_clip=1.0,
)  # fmt: skip
# GPT-2 small (124M parameters, nanoGPT's padded vocabulary), 16 sequences of 1024 tokens
GPT2_GPT = dict(
    embedding_dim=768, n_heads=12, n_layers=12, context_window=1024, vocab_size=50304,
    batch_size=16, activation_fn="gelu_tanh", grad_clip=1.0,
)  # fmt: skip

# the data-parallel benchmarks' models, the same for tricycle (distributed_gpu.py) and PyTorch
# DDP (torch_ddp_gpu.py): (architecture, sequences per GPU); shakespeare is nanoGPT's
# shakespeare-char, gpt2 GPT-2 124M with nanoGPT's padded vocabulary
DATA_PARALLEL_MODELS = {
    "shakespeare": (dict(embedding_dim=384, n_heads=6, n_layers=6, context_window=256,
                         vocab_size=65), 64),
    "gpt2": (dict(embedding_dim=768, n_heads=12, n_layers=12, context_window=1024,
                  vocab_size=50304), 8),
}  # fmt: skip


def torch_or_none():
    """PyTorch if it is installed (it is an optional baseline), else None."""
    try:
        import torch  # noqa: PLC0415 - optional
    except ImportError:
        return None
    return torch


def blas_threads() -> int:
    """How many threads numpy's BLAS uses (so that PyTorch can be given the same)."""
    try:
        from threadpoolctl import threadpool_info  # noqa: PLC0415 - optional

        counts = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
        if counts:
            return max(counts)
    except ImportError:
        pass
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def thread_env(n: int) -> dict:
    """The environment for a subprocess that should use ``n`` CPU threads, whatever its
    framework (tricycle's pool, OpenBLAS, OpenMP, MKL)."""
    n = str(n)
    return {**os.environ, "TRICYCLE_THREADS": n, "OPENBLAS_NUM_THREADS": n,
            "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n}  # fmt: skip


def synchronize(device: str) -> None:
    """Wait for the GPU (cupy's and torch's streams) to finish; a no-op on the CPU."""
    if device != "gpu":
        return
    torch = torch_or_none()
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    if "cupy" in sys.modules:
        sys.modules["cupy"].cuda.Device().synchronize()


def batches(config, n: int) -> np.ndarray:
    """The same ``n`` random (inputs, targets) batches for every framework: (2, n, B, T)."""
    rng = np.random.default_rng(0)
    shape = (n, config.batch_size, config.context_window)
    return rng.integers(0, config.vocab_size, size=(2, *shape))


# ------------------------------------------------------------------ in one process


def race(runners: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Times of each runner (each call returns its own elapsed seconds) over ``repeats``
    rounds, after one warm-up call each; rounds alternate the runners' order."""
    for run in runners.values():
        run()  # warm up: caches, BLAS buffers, lazy imports
    times = {name: [] for name in runners}
    order = list(runners)
    for i in range(repeats):
        for name in order if i % 2 == 0 else order[::-1]:
            times[name].append(runners[name]())
    return times


def settled(run: Callable[[], float], pause: float = 0.2) -> Callable[[], float]:
    """``run``, followed by an untimed pause that lets its worker threads go idle (PyTorch's
    OpenMP workers spin for a while after each call and would steal the next runner's cores)."""

    def wrapped():
        elapsed = run()
        time.sleep(pause)
        return elapsed

    return wrapped


def paired_ratio(a: list[float], b: list[float]) -> float:
    """How much slower ``a`` is than ``b``, from runs in the same rounds: the median of the
    per-round ratios, which is robust to load that drifts from round to round."""
    return float(np.median(np.array(a) / np.array(b)))


# ------------------------------------------------------------------ in subprocesses


def spawn(command: list[str], env: dict | None = None) -> dict:
    """Run ``command`` and return the JSON object on the last line of its output."""
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def paired_runs(runners: dict[str, Callable[[], dict]], repeats: int,
                key: str = "tokens_per_s") -> dict[str, list[dict]]:  # fmt: skip
    """``repeats`` results of each runner (each call one fresh run), alternating: run i of
    each happens back to back, so a slow spell of the machine hits both."""
    runs: dict[str, list[dict]] = {name: [] for name in runners}
    for _ in range(repeats):
        for name, run in runners.items():
            result = run()
            runs[name].append(result)
            print(f"  {name:8s} {result[key]:12,.0f} {key}", flush=True)
    return runs


def report_pairs(runs: dict[str, list[dict]], ours: str = "tricycle", theirs: str = "torch",
                 key: str = "tokens_per_s") -> None:  # fmt: skip
    """Print ours / theirs: best run against best run, and the median over the pairs."""
    if theirs not in runs or not runs[theirs]:
        return
    best = {name: max(r[key] for r in results) for name, results in runs.items()}
    print(f"{ours} / {theirs} {key}, best run against best run: "
          f"{best[ours] / best[theirs]:.2f}x")  # fmt: skip
    if len(runs[ours]) > 1:
        pairs = [a[key] / b[key] for a, b in zip(runs[ours], runs[theirs])]
        median, low, high = statistics.median(pairs), min(pairs), max(pairs)
        print(f"{ours} / {theirs} {key}, median over back-to-back pairs: {median:.2f}x "
              f"(range {low:.2f}-{high:.2f}x)")  # fmt: skip
