"""Where a data-parallel GPU step's time goes: the kernels of the training script's captured
step on this rank, compute against NCCL, read from a timeline.

    python benchmarks/distributed_timeline.py                           # one GPU
    NCCL_NVLS_ENABLE=0 mpiexec -n 2 python benchmarks/distributed_timeline.py
    NCCL_NVLS_ENABLE=0 mpiexec -n 2 python benchmarks/distributed_timeline.py --old-order

The step is ``distributed_gpu.py``'s "script captured" (``Trainer.train_step`` with
``DataParallel``, recorded as a CUDA graph), GPT-2 124M in bf16 by default. After warm-up it
is timed (``--steps`` steps, three rounds), then ``--profile`` steps are recorded by
``torch.profiler`` (CUPTI sees every kernel of the graph, on the streams the graph runs its
branches on). Each rank prints, per profiled step (from one parameter cast to the next):

    step       ms from the step's first kernel to the next step's
    compute    the union of the compute kernels' intervals (NCCL's left out)
    idle       the step's time with no compute kernel running
    nccl       the NCCL kernels' summed time, and how much of it ran beside compute
    first      when the first all-reduce of the step began, and when backward began (the
               cross-entropy's backward kernel): buckets reduced under backward start after
               it, buckets reduced after backward start at its end
    tail       from the end of the last backward kernel to the end of the last all-reduce

``--old-order`` differentiates each parameter's 16-bit cast at the end of backward, as the
engine did before it treated ops of leaves alone as leaves (``tricycle.backprop``), so that
both orders can be timed in one call. Needs CUDA GPUs, CuPy and PyTorch (for the profiler).
"""

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import distributed_gpu  # noqa: E402
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from tricycle import backprop  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.parallel import distributed  # noqa: E402


def union(intervals) -> float:
    """The length of the union of (start, end) intervals."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def kernels(prof) -> list:
    """(name, start us, duration us) of every GPU kernel and copy, by start."""
    out = []
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            out.append((event.name, event.time_range.start, event.time_range.elapsed_us()))
    return sorted(out, key=lambda k: k[1])


def report(steps_kernels) -> list[str]:
    """One line per step of (name, start, duration) kernels."""
    lines = []
    for ks in steps_kernels:
        a = ks[0][1]
        end = max(s + d for _, s, d in ks)
        compute = [(s, s + d) for n, s, d in ks if "nccl" not in n]
        nccl = [(s, s + d) for n, s, d in ks if "nccl" in n]
        beside = sum(union([(max(x, s), min(y, e)) for s, e in compute if s < y and e > x])
                     for x, y in nccl)  # fmt: skip
        started = [s for n, s, _ in ks if "ce_backward" in n]  # the loss's backward
        # backward ends with the embedding's backward and the last gradients widened
        ended = max((s + d for n, s, d in ks if "backward" in n or "widen" in n), default=a)
        tail = max((e for _, e in nccl), default=ended) - ended
        busy = union(compute)
        first = f"{(min(s for s, _ in nccl) - a) / 1e3:6.2f}" if nccl else "     -"
        lines.append(
            f"step {(end - a) / 1e3:6.2f} ms  compute {busy / 1e3:6.2f}  idle "
            f"{(end - a - busy) / 1e3:5.2f}  nccl {sum(e - s for s, e in nccl) / 1e3:5.2f} "
            f"({beside / 1e3:4.2f} beside compute)  first all-reduce at {first}, backward at "
            f"{(started[0] - a) / 1e3 if started else float('nan'):6.2f}  tail {tail / 1e3:5.2f}"
        )
    return lines


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--model", default="gpt2", choices=sorted(distributed_gpu.MODELS))
    add("--batch-size", type=int, help="sequences per GPU (default: the model's)")
    # mixed precision: each step begins with the parameters' cast, where the steps are split
    add("--precision", default="bf16", choices=["fp16", "bf16"])
    add("--bucket-mb", type=float, default=distributed.DEFAULT_GPU_BUCKET_BYTES / 2**20)
    add("--reduce-dtype", choices=["bf16"], help="send the buckets in bfloat16")
    add("--steps", type=int, default=20, help="timed steps per round (three rounds)")
    add("--warmup", type=int, default=10, help="untimed steps first (the capture among them)")
    add("--profile", type=int, default=3, help="steps recorded and reported")
    add("--old-order", action="store_true",
        help="differentiate the parameters' casts at the end of backward, as before")  # fmt: skip
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.old_order:  # every cast of a parameter differentiated at the end, as before
        backprop._of_leaves = lambda node: node.args is None
    world = distributed.init(gpu=True)
    bucket = int(args.bucket_mb * 2**20)
    run = distributed_gpu.Run(args, world, bucket, reduce_alone=False, trainer=True)
    torch.cuda.set_device(cupy().cuda.Device().id)  # the profiler on this rank's GPU
    timings = []
    with run.policy:
        for _ in range(args.warmup):
            run.step()
        for _ in range(3):
            cupy().cuda.Device().synchronize()
            world.barrier()
            start = time.perf_counter()
            for _ in range(args.steps):
                loss = run.step()
            float(loss)  # the host waits for the GPU
            timings.append((time.perf_counter() - start) / args.steps * 1e3)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.profile + 2):  # the first: the profiler starting
                loss = run.step()
            float(loss)
            cupy().cuda.Device().synchronize()
    ks = kernels(prof)
    starts = [s for n, s, _ in ks if "multi_cast_kernel" in n]  # each step casts first
    steps = [[k for k in ks if a <= k[1] < b] for a, b in zip(starts[1:], starts[2:])]
    order = "the old order" if args.old_order else "this tree"
    print(f"rank {world.rank} of {world.world_size} ({order}, {args.model}, {args.precision}): "
          + ", ".join(f"{t:.2f}" for t in timings) + " ms a step", flush=True)  # fmt: skip
    for line in report(steps):
        print(f"rank {world.rank}  {line}", flush=True)
    world.finalize()


if __name__ == "__main__":
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    main()
