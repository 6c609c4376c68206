"""Two training processes on one machine: does each keep close to its time alone?

    python benchmarks/two_processes.py                  # 40 steps of the gpt_train.py GPT
    python benchmarks/two_processes.py --steps 10 --repeats 1

Each job is a fresh process that trains benchmarks/gpt_train.py's GPT (B=8, T=128, E=256,
4 layers, AdamW, clipping at 1.0, float32) for ``--steps`` steps with ``threads.enable()``
and prints its training time (the steps only, not the imports). The script runs one job
alone, one alone on a single thread (``enable(1)``), then two at once, and prints each time
and the ratios. With ``--no-share`` the pair runs with ``enable(share_machine=False)``, the
pool's behaviour when it ignores other processes, for comparison.

What to expect: two CPU-bound jobs on C cores can at best share them, so a job of the pair
cannot beat its single-thread time on C = 2 cores (``1-thread alone`` below): that is the
floor, and the pool's policy (use the cores other processes leave free) aims at it. The
machine must be otherwise idle while this runs.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tricycle import threads  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW, clip_factor, grad_norm  # noqa: E402

CONFIG = dict(
    embedding_dim=256, n_heads=4, n_layers=4, context_window=128, vocab_size=1024, batch_size=8
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per job")
    parser.add_argument("--repeats", type=int, default=2, help="rounds (the median counts)")
    parser.add_argument("--no-share", action="store_true", help="pair with share_machine=False")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # "default", "one" or "no-share"
    return parser.parse_args(argv)


def train(steps: int) -> float:
    """Seconds to train ``steps`` steps of the benchmark GPT on random batches."""
    config = GPTConfig(**CONFIG, activation_fn="gelu_tanh", grad_clip=1.0)
    rng = np.random.default_rng(0)
    shape = (steps, config.batch_size, config.context_window)
    inputs, targets = rng.integers(0, config.vocab_size, size=(2, *shape))
    np.random.seed(0)
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
    if args.worker == "one":
        threads.enable(1)
    else:
        threads.enable(share_machine=args.worker != "no-share")
    seconds = train(args.steps)
    print(json.dumps({"seconds": seconds, "threads_at_end": threads.count()}))


def start(kind: str, steps: int) -> subprocess.Popen:
    command = [sys.executable, __file__, "--worker", kind, "--steps", str(steps)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def result(process: subprocess.Popen) -> dict:
    stdout, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"a job failed:\n{stderr[-3000:]}")
    return json.loads(stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    pair_kind = "no-share" if args.no_share else "default"
    alone, one, first, second = [], [], [], []
    for _ in range(args.repeats):
        alone.append(result(start("default", args.steps))["seconds"])
        one.append(result(start("one", args.steps))["seconds"])
        pair = [start(pair_kind, args.steps) for _ in range(2)]
        a, b = (result(p) for p in pair)
        first.append(a["seconds"])
        second.append(b["seconds"])
    alone_s, one_s = statistics.median(alone), statistics.median(one)
    pair_s = [statistics.median(first), statistics.median(second)]
    print(f"GPT {CONFIG}, {args.steps} steps, median of {args.repeats} round(s)")
    print(f"  alone, threads.enable():  {alone_s:7.2f} s")
    print(f"  alone, threads.enable(1): {one_s:7.2f} s  ({one_s / alone_s:.2f}x alone)")
    for i, seconds in enumerate(pair_s, 1):
        print(
            f"  pair ({pair_kind}), job {i}:   {seconds:7.2f} s  ({seconds / alone_s:.2f}x alone, "
            f"{seconds / one_s:.2f}x its 1-thread time)"
        )
    worst = max(pair_s) / alone_s
    print(f"worst job of the pair: {worst:.2f}x its time alone (issue 12's target: <= 1.3x)")
    sequential = max(pair_s) / (2 * alone_s)
    print(f"the pair took {sequential:.2f}x the time of the two jobs one after the other")


if __name__ == "__main__":
    main()
