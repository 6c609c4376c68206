"""Where a GPU training step goes: the GPU time of every kernel in a step, and the host time to
enqueue one, for tricycle, PyTorch eager or ``torch.compile`` (bf16, the same model).

    python benchmarks/gpu_profile.py                          # tricycle, GPT-2 124M
    python benchmarks/gpu_profile.py --framework compile      # torch.compile, same size
    python benchmarks/gpu_profile.py --size shakespeare --rows 20

Kernels are recorded by ``torch.profiler`` (CUPTI), which sees every kernel launched in the
process, CuPy's included. Printed: the host time to enqueue a step (no loss read back, so a
host that runs ahead of the GPU shows less than the step takes), the step with the GPU, then
the GPU time per step of each kernel (summed over its launches), largest first. PyTorch
steps are nanoGPT's loop (autocast, SDPA, fused AdamW, clipping), as ``gpt_train.py``'s.
Needs a CUDA GPU and PyTorch.
"""

import argparse
import collections
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from harness import GPT2_GPT, GPU_GPT, batches  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch_gpt import adamw, nano_gpt, nano_gpt_step  # noqa: E402

from tricycle.apps.training import precision_for, train_step  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.models import build_model  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

SIZES = {"shakespeare": GPU_GPT, "gpt2": GPT2_GPT}


def tricycle_stepper(config: GPTConfig, data):
    """(step(i) -> what the loss is read from, read(that), synchronise, the context to step
    in)."""
    cp = cupy()
    manual_seed(0)
    model = build_model(config)
    model.to_gpu()
    optimiser = AdamW(learning_rate=1e-3, betas=(config.beta1, config.beta2), weight_decay=0.1)
    policy = precision_for("bf16", "gpu")
    inputs, targets = (cp.asarray(a) for a in data)

    def step(i):
        batch = (inputs[i], targets[i])
        return train_step(model, optimiser, iter([batch]), policy, max_norm=config.grad_clip)

    return step, lambda result: result.settle(), cp.cuda.Device().synchronize, policy


def torch_stepper(config: GPTConfig, data, compiled: bool):
    """As ``tricycle_stepper``, for nanoGPT's model in PyTorch, compiled if asked."""
    torch.manual_seed(0)
    model = nano_gpt(config, "sdpa").cuda()
    optimiser = adamw(model, config, 1e-3, fused=True)
    forward = torch.compile(model) if compiled else model
    inputs, targets = (torch.from_numpy(a).cuda() for a in data)

    def step(i):
        return nano_gpt_step(
            model, forward, optimiser, inputs[i], targets[i], config.grad_clip, torch.bfloat16
        )

    return step, lambda loss: loss.item(), torch.cuda.synchronize, contextlib.nullcontext()


def kernel_times(prof) -> tuple[collections.Counter, collections.Counter]:
    """(GPU microseconds, launches) per kernel name over the profiled steps."""
    times, launches = collections.Counter(), collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] += event.device_time_total
            launches[event.name] += 1
    return times, launches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framework", default="tricycle", choices=["tricycle", "eager", "compile"])
    parser.add_argument("--size", default="gpt2", choices=sorted(SIZES))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=5, help="steps timed, then profiled")
    parser.add_argument("--rows", type=int, default=30, help="kernels listed")
    args = parser.parse_args()

    config = GPTConfig(**SIZES[args.size])
    n = args.warmup + 2 * args.steps
    data = batches(config, n)
    if args.framework == "tricycle":
        step, read, sync, context = tricycle_stepper(config, data)
    else:
        step, read, sync, context = torch_stepper(config, data, args.framework == "compile")
    with context:
        for i in range(args.warmup):
            read(step(i))
        sync()
        start = time.perf_counter()
        for i in range(args.warmup, args.warmup + args.steps):
            result = step(i)
        host = time.perf_counter() - start
        read(result)
        sync()
        total = time.perf_counter() - start
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for i in range(args.warmup + args.steps, n):
                result = step(i)
            read(result)
            sync()
    times, launches = kernel_times(prof)
    per_step = 1e3 * args.steps
    print(
        f"{args.framework}, {args.size}, bf16: host enqueue {host * 1e3 / args.steps:.1f} ms per "
        f"step, with the GPU {total * 1e3 / args.steps:.1f} ms; GPU kernels "
        f"{sum(times.values()) / per_step:.1f} ms per step in "
        f"{sum(launches.values()) // args.steps} launches"
    )
    print(f"{'ms/step':>8} {'launches':>8}  kernel")
    for name, micros in times.most_common(args.rows):
        print(f"{micros / per_step:8.2f} {launches[name] // args.steps:8d}  {name[:100]}")


if __name__ == "__main__":
    main()
