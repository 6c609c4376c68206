"""Host (Python) time per training step, in this tree and in others, side by side.

    python benchmarks/host_overhead.py                          # this tree alone
    python benchmarks/host_overhead.py --tree /path/to/other    # both, interleaved
    python benchmarks/host_overhead.py --profile 40             # cProfile: the top 40 lines
    python benchmarks/host_overhead.py --device gpu --precision bf16 --tree ...   # the cupy path

On a GPU the host only enqueues kernels, so the time a step spends in Python is what limits
eager training whenever it exceeds the GPU's work. It is measured here at shapes so small that
arithmetic is negligible: a GPT-2-shaped model (12 layers, 12 heads: the op count of GPT-2
small) with context 8, batch 1, vocab 64, and embedding_dim 48 on the CPU, 768 on a GPU: GPT-2's
head dim 64, which the GPU's attention kernels take (at 48, head dim 4, attention would run its
array formula instead, which a GPT-2 step never does). One step is what
``apps.step.train_step`` does, through the API every tree compared has
(``tricycle.models.GPT``, ``tricycle.configs.GPTConfig``, ``tricycle.loss.CrossEntropy``,
``tricycle.optimisers.AdamW``, ``tricycle.precision.Precision``): forward, cross-entropy,
backward, gradient clipping to norm 1 and the AdamW update.

Each tree runs in its own subprocess with ``PYTHONPATH`` set to it (so its ``tricycle`` is the
one imported), one round at a time, alternating between the trees; a round times ``--steps``
steps one by one after ``--warmup`` and reports their median. On the CPU (numpy, BLAS on one
thread) a step's time is the process's CPU time (``time.process_time``), which other processes
on a busy machine inflate less than wall-clock time. On a GPU it is the wall-clock time until
the step returns, the device synchronised between steps (outside the timing): the time the
host takes to enqueue the step. The table shows, per tree, the median over rounds and the
median per-round ratio to the first tree (robust to load from other processes).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# the child: one round in one tree; prints its median step time as JSON (or a profile)
CHILD = r"""
import json, statistics, sys, time
import numpy as np
import tricycle
from tricycle.configs import GPTConfig
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.precision import Precision

options = json.loads(sys.argv[1])
config = GPTConfig(embedding_dim=options["embedding_dim"], context_window=8, vocab_size=64,
                   n_heads=12, n_layers=12, dropout=0.0)
np.random.seed(0)
model = GPT(config)
loss_fn, optimiser = CrossEntropy(), AdamW(learning_rate=1e-3)
policy = Precision(options["precision"])
rng = np.random.default_rng(0)
inputs = rng.integers(0, config.vocab_size, (1, config.context_window))
targets = rng.integers(0, config.vocab_size, (1, config.context_window))
if options["device"] == "gpu":
    import cupy
    model.to_gpu()
    inputs, targets = cupy.asarray(inputs), cupy.asarray(targets)
    clock, synchronize = time.perf_counter, cupy.cuda.runtime.deviceSynchronize
else:
    clock, synchronize = time.process_time, lambda: None

def step():
    optimiser.step()
    logits = policy.forward(model, inputs)
    loss = loss_fn(targets, logits)
    policy.backward(loss)
    policy.step(optimiser, model, max_norm=1.0)

with policy:
    for _ in range(options["warmup"]):
        step()
    synchronize()
    if options["profile"]:
        import cProfile, pstats
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(options["steps"]):
            step()
        profiler.disable()
        pstats.Stats(profiler).sort_stats(options["sort"]).print_stats(options["profile"])
        sys.exit()
    times = []
    for _ in range(options["steps"]):
        start = clock()
        step()
        times.append(clock() - start)
        synchronize()
print(json.dumps({"tricycle": tricycle.__file__, "median_ms": 1e3 * statistics.median(times)}))
"""


def run_round(tree: Path, options: dict) -> dict | None:
    """One round in ``tree``'s subprocess: {"median_ms": ...}, or None after a profile."""
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("TRICYCLE_DISABLE_KERNELS", None)
    command = [sys.executable, "-c", CHILD, json.dumps(options)]
    result = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{tree}: the step failed:\n{result.stderr}")
    if options["profile"]:
        print(result.stdout)
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], type=Path,
                        help="another checkout to compare (repeatable)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--precision", choices=("fp32", "bf16", "fp16"), default="fp32")
    parser.add_argument("--profile", type=int, default=0,
                        help="profile each tree's steps instead: the top N lines")  # fmt: skip
    parser.add_argument("--sort", default="tottime", help="the profile's order (pstats keys)")
    args = parser.parse_args()
    trees = [HERE, *(tree.resolve() for tree in args.tree)]
    options = {key: getattr(args, key) for key in ("steps", "warmup", "device", "precision")}
    # head dim 64 on a GPU, the one its attention kernels take
    embedding_dim = 768 if args.device == "gpu" else 48
    options.update(profile=args.profile, sort=args.sort, embedding_dim=embedding_dim)
    if args.profile:
        for tree in trees:
            print(f"== {tree}")
            run_round(tree, options)
        return
    times: dict[Path, list[float]] = {tree: [] for tree in trees}
    for _ in range(args.rounds):
        for tree in trees:
            times[tree].append(run_round(tree, options)["median_ms"])
    print(
        f"GPT 12 layers x 12 heads, E={embedding_dim}, T=8, B=1, V=64, {args.precision} on "
        f"{args.device}: host ms per step"
    )
    print(f"{'tree':<40} {'median ms':>10} {'vs first':>9}")
    for tree in trees:
        ratios = [t / first for t, first in zip(times[tree], times[trees[0]])]
        print(
            f"{str(tree):<40} {statistics.median(times[tree]):>10.2f} "
            f"{statistics.median(ratios):>8.3f}x"
        )


if __name__ == "__main__":
    main()
