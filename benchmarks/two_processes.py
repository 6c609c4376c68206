"""Two training processes on one machine: does each keep close to its time alone?

    python benchmarks/two_processes.py                  # 40 steps of the gpt_train.py GPT
    python benchmarks/two_processes.py --steps 10 --repeats 1

Each job is a fresh process that trains benchmarks/gpt_train.py's GPT (B=8, T=128, E=256,
4 layers, AdamW, clipping at 1.0, float32) for ``--steps`` steps and prints its training time
(the steps only, not the imports). A round runs one job alone with the default threads (one
per core for the compiled kernels and BLAS), one alone on one thread (``TRICYCLE_THREADS=1``),
two at once with the default threads, and two at once on one thread each. It prints the
median of each time over the rounds and each pair's ratio to the time alone.

What to expect: two CPU-bound jobs on C cores share them, so on C = 2 cores a job of a pair
cannot beat its time on one core of its own; "two at once, one thread each" measures that
floor on this machine (memory and cache are shared too). The machine must be otherwise idle
while this runs.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tricycle.apps.cpu import set_cpu_threads  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW, clip_factor, grad_norm  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

CONFIG = dict(
    embedding_dim=256, n_heads=4, n_layers=4, context_window=128, vocab_size=1024, batch_size=8
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per job")
    parser.add_argument("--repeats", type=int, default=2, help="rounds (the median counts)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # "default" or "one"
    return parser.parse_args(argv)


def train(steps: int) -> float:
    """Seconds to train ``steps`` steps of the benchmark GPT on random batches."""
    config = GPTConfig(**CONFIG, activation_fn="gelu_tanh", grad_clip=1.0)
    rng = np.random.default_rng(0)
    shape = (steps, config.batch_size, config.context_window)
    inputs, targets = rng.integers(0, config.vocab_size, size=(2, *shape))
    manual_seed(0)
    model = GPT(config)
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    loss_fn = CrossEntropy()
    start = time.perf_counter()
    for x, y in zip(inputs, targets):
        optimiser.step()
        loss_fn(y, model(x)).backward()
        named = model.named_parameters()
        optimiser.update(named, grad_multiplier=clip_factor(grad_norm(named), config.grad_clip))
        model.zero_grad()
    return time.perf_counter() - start


def worker(args) -> None:
    set_cpu_threads(1 if args.worker == "one" else None)
    print(json.dumps({"seconds": train(args.steps)}))


def start(kind: str, steps: int) -> subprocess.Popen:
    command = [sys.executable, __file__, "--worker", kind, "--steps", str(steps)]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1") if kind == "one" else None  # one thread
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def seconds(processes: list[subprocess.Popen]) -> list[float]:
    """The training times the jobs report, once all have ended."""
    times = []
    for process in processes:
        stdout, stderr = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a job failed:\n{stderr[-3000:]}")
        times.append(json.loads(stdout.strip().splitlines()[-1])["seconds"])
    return times


RUNS = {  # name -> (worker kind, jobs at once)
    "alone, default threads": ("default", 1),
    "alone, one thread": ("one", 1),
    "two at once, default threads": ("default", 2),
    "two at once, one thread each": ("one", 2),
}


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    names = list(RUNS)
    times: dict[str, list[list[float]]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name in names:
            kind, jobs = RUNS[name]
            times[name].append(seconds([start(kind, args.steps) for _ in range(jobs)]))
    medians = {name: [statistics.median(job) for job in zip(*runs)] for name, runs in times.items()}
    alone = medians["alone, default threads"][0]
    print(f"GPT {CONFIG}, {args.steps} steps, median of {args.repeats} round(s)")
    for name, jobs in medians.items():
        shown = ", ".join(f"{t:6.2f} s ({t / alone:.2f}x alone)" for t in jobs)
        print(f"  {name:34s} {shown}")
    worst = max(medians["two at once, default threads"]) / alone
    floor = max(medians["two at once, one thread each"]) / alone
    print(f"two at once, default threads: the slower job took {worst:.2f}x its time alone")
    print(f"(one thread each, the floor on this machine, gives {floor:.2f}x)")


if __name__ == "__main__":
    main()
