"""GPT training throughput and peak memory: tricycle against PyTorch eager, side by side.

    python benchmarks/gpt_train.py                    # B=8, T=128, E=256, 4 heads, 4 layers
    python benchmarks/gpt_train.py --steps 30 --repeats 3 --threads 2

Both frameworks train the same architecture (tests/torch_reference.py is the PyTorch twin of
tricycle's GPT) with AdamW and gradient clipping at 1.0, in float32, on the same random
batches. Each run happens in its own subprocess so that its peak resident memory
(``ru_maxrss``) is its own; runs alternate between the frameworks, and the best of
``--repeats`` runs counts, because a shared machine's noise only ever slows a run down.
tokens/s is the median over the timed steps of batch_size * context_window / step time.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the training script and the torch twin

from train_smol_gpt import training_step, tune_cpu_allocator  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402

CONFIG = dict(
    embedding_dim=256, n_heads=4, n_layers=4, context_window=128, vocab_size=1024, batch_size=8
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=2, help="runs per framework (best counts)")
    parser.add_argument("--threads", type=int, default=2, help="BLAS / torch threads")
    parser.add_argument(
        "--activation", default="gelu_tanh", choices=["gelu", "gelu_tanh"], help="MLP activation"
    )
    parser.add_argument("--worker", choices=["tricycle", "torch"], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def batches(config: GPTConfig, n: int):
    """The same ``n`` random (inputs, targets) batches for both frameworks."""
    rng = np.random.default_rng(0)
    shape = (n, config.batch_size, config.context_window)
    return rng.integers(0, config.vocab_size, size=(2, *shape))


# ------------------------------------------------------------------ one framework per process


def run_tricycle(config: GPTConfig, data) -> list[float]:
    tune_cpu_allocator()
    np.random.seed(0)
    model = GPT(config)
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    loss_fn = CrossEntropy()
    times = []
    for inputs, targets in zip(*data):
        start = time.perf_counter()
        training_step(model, optimiser, loss_fn, iter([(inputs, targets)]), config, len(times))
        times.append(time.perf_counter() - start)
    return times


def run_torch(config: GPTConfig, data, threads: int) -> list[float]:
    # imported here, in the torch worker only, so they never count in tricycle's memory
    import torch  # noqa: PLC0415
    from torch_reference import TorchGPT  # noqa: PLC0415

    tune_cpu_allocator()  # the same malloc settings for both
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    approximate = "tanh" if config.activation_fn == "gelu_tanh" else "none"
    model = TorchGPT(config, approximate=approximate)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    times = []
    for inputs, targets in zip(*data):
        inputs, targets = torch.from_numpy(inputs), torch.from_numpy(targets)
        start = time.perf_counter()
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        loss.item()
        times.append(time.perf_counter() - start)
    return times


def worker(args) -> None:
    """Train in this process and print one JSON line of results."""
    config = GPTConfig(**CONFIG, activation_fn=args.activation, grad_clip=1.0)
    data = batches(config, args.warmup + args.steps)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if args.worker == "tricycle":
        times = run_tricycle(config, data)
    else:
        times = run_torch(config, data, args.threads)
    timed = times[args.warmup :]
    tokens = config.batch_size * config.context_window
    print(
        json.dumps(
            {
                "framework": args.worker,
                "tokens_per_s": tokens / statistics.median(timed),
                "mean_tokens_per_s": tokens * len(timed) / sum(timed),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "rss_before_mb": rss_before / 1024,
            }
        )
    )


# ------------------------------------------------------------------ the comparison


def spawn(framework: str, args) -> dict:
    threads = str(args.threads)
    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": threads,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
    }
    command = [sys.executable, __file__, "--worker", framework, "--steps", str(args.steps)]
    command += ["--warmup", str(args.warmup), "--activation", args.activation]
    command += ["--threads", threads]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{framework} worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    print(
        f"GPT {CONFIG}, {args.activation}, AdamW + clip, float32, {args.threads} threads, "
        f"{args.steps} timed steps x {args.repeats} runs each"
    )
    runs: dict[str, list[dict]] = {"tricycle": [], "torch": []}
    for _ in range(args.repeats):
        for framework in runs:
            result = spawn(framework, args)
            runs[framework].append(result)
            print(
                f"  {framework:8s} {result['tokens_per_s']:8,.0f} tokens/s "
                f"(mean {result['mean_tokens_per_s']:,.0f}), peak RSS "
                f"{result['peak_rss_mb']:,.0f} MB",
                flush=True,
            )
    best = {name: max(r, key=lambda x: x["tokens_per_s"]) for name, r in runs.items()}
    peak = {name: min(x["peak_rss_mb"] for x in r) for name, r in runs.items()}
    ratio = best["tricycle"]["tokens_per_s"] / best["torch"]["tokens_per_s"]
    print(f"{'framework':10s} {'tokens/s':>10s} {'peak RSS MB':>12s} {'RSS at start':>17s}")
    for name in runs:
        print(
            f"{name:10s} {best[name]['tokens_per_s']:10,.0f} {peak[name]:12,.0f} "
            f"{best[name]['rss_before_mb']:17,.0f}"
        )
    print(f"tricycle / torch throughput: {ratio:.2f}x")


if __name__ == "__main__":
    main()
