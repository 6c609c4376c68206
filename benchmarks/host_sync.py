"""What the host synchronisations of the range checks cost a GPU training step: tricycle's own
step with the token ids and labels checked at the op (``deferred.defer_checks(False)``: the
host waits for the GPU twice per step, as before ``tricycle.backends.cuda.deferred``) against
the default, checks recorded on the device and raised at the next read-back.

    python benchmarks/host_sync.py                              # shakespeare size, bf16
    python benchmarks/host_sync.py --size gpt2 --mode tf32 --steps 10 --rounds 2

Both variants train the same model in one process, in rounds of alternating order, with the
loss read back every step and every 10 steps (``--every``). Printed per variant: tokens/s
(best round), the median host time to enqueue one step (``train_step`` returning), and the
ratio deferred / synchronous (median over rounds). Needs a CUDA GPU.
"""

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import GPT2_GPT, GPU_GPT, batches, synchronize  # noqa: E402

from tricycle import backend  # noqa: E402
from tricycle.apps.training import precision_for, train_step  # noqa: E402
from tricycle.backends.cuda import deferred  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402

SIZES = {"shakespeare": GPU_GPT, "gpt2": GPT2_GPT}
VARIANTS = ("synchronous", "deferred")


def timed_run(model, optimiser, policy, data, steps: int, every: int, variant: str):
    """(seconds for ``steps`` steps, median host seconds to enqueue one step)."""
    inputs, targets = data
    checks = deferred.defer_checks(False) if variant == "synchronous" else contextlib.nullcontext()
    enqueue = []
    with checks, policy:
        synchronize("gpu")
        start = time.perf_counter()
        for step in range(steps):
            batch = (inputs[step % len(inputs)], targets[step % len(targets)])
            t0 = time.perf_counter()
            result = train_step(model, optimiser, iter([batch]), policy, max_norm=1.0)
            enqueue.append(time.perf_counter() - t0)
            if (step + 1) % every == 0:
                deferred.raise_pending_errors()
                result.settle(step)  # read the loss back, as a logging loop does
        synchronize("gpu")
    return time.perf_counter() - start, statistics.median(enqueue)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="shakespeare", choices=sorted(SIZES))
    parser.add_argument("--mode", default="bf16", choices=["fp32", "tf32", "fp16", "bf16"])
    parser.add_argument("--steps", type=int, default=40, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--every", default="1,10", help="read the loss every N steps (list)")
    args = parser.parse_args()
    if not backend.cupy_available():
        sys.exit("host_sync.py: needs a CUDA GPU")
    cp = backend.cupy()
    config = GPTConfig(**SIZES[args.size])
    data = tuple(cp.asarray(a) for a in batches(config, 8))  # (n, B, T) inputs and targets
    model = GPT(config).to_gpu()
    optimiser = AdamW(learning_rate=1e-4, weight_decay=0.1)
    policy = precision_for(args.mode, "gpu")
    tokens = args.steps * config.batch_size * config.context_window
    print(f"{args.size} {args.mode}: {tokens} tokens per round, {args.rounds} rounds", flush=True)
    print(f"{'loss read':>10} {'variant':>12} {'tokens/s':>12} {'enqueue ms':>11} {'ratio':>7}")
    for every in (int(e) for e in args.every.split(",")):
        for variant in VARIANTS:  # warm-up: compile kernels, fill the memory pool
            timed_run(model, optimiser, policy, data, 3, every, variant)
        seconds = {v: [] for v in VARIANTS}
        enqueue = {v: [] for v in VARIANTS}
        for r in range(args.rounds):
            for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                run = timed_run(model, optimiser, policy, data, args.steps, every, variant)
                seconds[variant].append(run[0])
                enqueue[variant].append(run[1])
        ratios = [s / d for s, d in zip(seconds["synchronous"], seconds["deferred"])]
        for variant in VARIANTS:
            ratio = f"{statistics.median(ratios):.3f}" if variant == "deferred" else ""
            rate = tokens / min(seconds[variant])
            host_ms = 1e3 * statistics.median(enqueue[variant])
            print(f"{'every ' + str(every):>10} {variant:>12} {rate:>12,.0f} {host_ms:>11.2f} "
                  f"{ratio:>7}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
