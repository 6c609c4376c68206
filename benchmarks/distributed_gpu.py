"""Data parallelism on GPUs through NCCL: correct, and what it costs or gains.

    python benchmarks/distributed_gpu.py                   # one GPU: a one-rank NCCL world
    python benchmarks/distributed_gpu.py --precision bf16 --model gpt2
    NCCL_NVLS_ENABLE=0 mpiexec -n 2 python benchmarks/distributed_gpu.py     # two GPUs
    NCCL_NVLS_ENABLE=0 TRICYCLE_DIST_TIMEOUT=10 mpiexec -n 2 \\
        python benchmarks/distributed_gpu.py --fault hang   # must abort after ~10 s, not hang
    (--fault kill: rank 1 dies; --fault raise: rank 1 raises an error: both end at once;
    --fault-step eager|captured|zero: the training script's step that runs, eager, captured
    as a CUDA graph, or captured with ZeRO-1)

Runs without mpiexec (world size 1: NCCL with one rank, no MPI needed). Checks first, on
rank 0 (``ok`` or the difference):

    gradients  one step's gradients through DataParallel against one GPU on the whole global
               batch (world size 1: equal; N ranks: float32/bf16 rounding, relative norm)
    ddp        the same step through torch's DistributedDataParallel against DataParallel
    zero       parameters after 3 steps with ZeRO-1 against plain data parallelism

Then times --steps steps after --warmup (the GPU synchronised at both ends) in these settings,
every rank with --batch-size sequences (the global batch grows with the ranks):

    plain            no DataParallel at all (world size 1 only): the baseline
    as trained       DataParallel as training uses it (world size 1 only: with one rank it
                     copies and sends nothing)
    script captured  the training script's step: ``Trainer.train_step`` with DataParallel,
                     captured as a CUDA graph after warm-up (all-reduces in the graph)
    script eager     the same, not captured
    overlapped       DataParallel, buckets of --bucket-mb reduced on NCCL's stream during
                     backward
    overlapped 4 MiB  the same in buckets of 4 MiB (the default is DDP's 25 MiB)
    after backward   one bucket: the whole reduction after backward (no overlap)
    torch-style DDP  a PyTorch user's loop: ``DistributedDataParallel(model)``, then forward,
                     ``loss.backward()`` (the gradients averaged by its end) and the step

--settings picks some of them (comma-separated); --json prints a last line ``RESULT {...}``
with every setting's tokens/s, for scripts (``benchmarks/distributed_gpu_suite.sh``).

and prints ms/step, tokens/s (all ranks together) and the ratios. With one GPU,
as trained / plain is the cost of the one code path (target: no slower); overlapped / plain
what reducing through NCCL would cost one GPU (the checks above reduce through it). With N
GPUs, compare tokens/s with a one-GPU run of the same --batch-size (target >= 0.95 N).

--model shakespeare: E=384, 6 heads, 6 layers, T=256, V=65 (nanoGPT's shakespeare-char),
B=64; gpt2: GPT-2 124M, E=768, 12 heads, 12 layers, T=1024, V=50304, B=8.
"""

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import DATA_PARALLEL_MODELS as MODELS  # noqa: E402

from tricycle.apps.training import Trainer  # noqa: E402
from tricycle.backend import cupy, nccl, to_host_array  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.dataset import CausalLMDataset  # noqa: E402
from tricycle.distributed import DistributedDataParallel  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.parallel import distributed  # noqa: E402
from tricycle.parallel.zero import ZeroRedundancyOptimiser  # noqa: E402
from tricycle.precision import Precision, bfloat16  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--model", default="shakespeare", choices=sorted(MODELS))
    add("--batch-size", type=int, help="sequences per GPU (default: the model's)")
    add("--precision", default="fp32", choices=["fp32", "tf32", "fp16", "bf16"])
    add("--steps", type=int, default=30, help="timed steps per setting")
    add("--warmup", type=int, default=5, help="untimed steps first")
    add("--repeats", type=int, default=2, help="timed runs per setting (the best counts)")
    add("--bucket-mb", type=float, default=distributed.DEFAULT_GPU_BUCKET_BYTES / 2**20)
    add("--fault", choices=["hang", "kill", "raise"],
        help="rank 1 hangs, dies or raises an error after 3 steps")  # fmt: skip
    add("--fault-step", choices=["eager", "captured", "zero"], default="eager",
        help="with --fault: the step that runs (the training script's, eager or captured as "
        "a CUDA graph; zero: captured, with ZeRO-1)")  # fmt: skip
    add("--settings", help="comma-separated settings to time (default: all)")
    add("--reduce-dtype", choices=["bf16"], help="send the buckets in bfloat16")
    add("--no-check", action="store_true", help="skip the correctness checks")
    add("--json", action="store_true", help="print a last line RESULT {json}")
    return parser.parse_args(argv)


class Run:
    """One model, optimiser and precision policy on this rank's GPU, with or without a
    DataParallel of ``bucket_bytes`` (None: without)."""

    def __init__(
        self, args, world, bucket_bytes=None, zero=False, batch_size=None, reduce_alone=True,
        trainer=None, ddp=False,
    ):  # fmt: skip
        architecture, default_batch = MODELS[args.model]
        self.world = world
        self.config = GPTConfig(**architecture, dropout=0.0, grad_clip=1.0)
        self.batch_size = batch_size or args.batch_size or default_batch
        manual_seed(0)
        self.model = GPT(self.config).to_gpu(world.device)  # the same weights on every rank
        if ddp:  # a torch user's wrapper: it averages the gradients within backward
            self.model = DistributedDataParallel(self.model)
        self.reducer = None
        if bucket_bytes is not None:
            world.broadcast_parameters(self.model)  # as training does (a collective)
            reduce_dtype = bfloat16() if args.reduce_dtype == "bf16" else None
            self.reducer = distributed.DataParallel(
                self.model, world, bucket_bytes=bucket_bytes, reduce_alone=reduce_alone,
                reduce_dtype=reduce_dtype,
            )  # fmt: skip
        self.optimiser = AdamW(learning_rate=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
        if zero:
            self.optimiser = ZeroRedundancyOptimiser(self.optimiser, self.model, world)
        self.policy = Precision(args.precision)
        self.loss_fn = CrossEntropy()
        tokens = np.random.default_rng(0).integers(0, self.config.vocab_size, size=1_000_000)
        spread = self.reducer is not None or ddp
        ranks = (world.rank, world.world_size) if spread else (0, 1)
        self.data = CausalLMDataset(
            tokens, self.config.vocab_size, self.batch_size, self.config.context_window,
            seed=0, rank=ranks[0], world_size=ranks[1],
        ).batch().to_gpu(world.device)  # fmt: skip
        self.trainer = None  # trainer: None, or whether its step is captured (cuda_graph)
        if trainer is not None:
            self.trainer = Trainer(self.model, self.optimiser, self.data, policy=self.policy,
                                   max_norm=1.0, data_parallel=self.reducer,
                                   cuda_graph=trainer)  # fmt: skip

    def backward(self):
        """Forward and backward of one batch; the loss (on the GPU)."""
        inputs, targets = next(self.data)
        loss = self.loss_fn(targets, self.model(inputs, precision=self.policy))
        self.policy.backward(loss)
        if self.reducer is not None:
            self.reducer.finish()
        return loss

    def step(self):
        if self.trainer is not None:  # the training script's step
            return self.trainer.train_step().loss
        self.optimiser.step()
        loss = self.backward()
        self.policy.step(self.optimiser, self.model, max_norm=1.0)
        return loss

    def time(self, steps: int, warmup: int) -> float:
        """Seconds per step over ``steps`` steps after ``warmup``."""
        with self.policy:
            for _ in range(warmup):
                self.step()
            cupy().cuda.Device().synchronize()
            self.world.barrier()
            start = time.perf_counter()
            for _ in range(steps):
                loss = self.step()
            float(loss)  # one read-back: the host waits for the GPU
            cupy().cuda.Device().synchronize()
            return (time.perf_counter() - start) / steps


def relative_error(a, b) -> float:
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def state_mib(optimiser) -> float:
    """MiB of optimiser state (moments) held by this rank."""
    arrays = [v for slots in optimiser.state.values() for v in slots.values()]
    return sum(a.nbytes for a in arrays if hasattr(a, "nbytes")) / 2**20


def check(args, world) -> None:
    """The two correctness checks; rank 0 prints them."""
    bucket = int(args.bucket_mb * 2**20)
    reduced = Run(args, world, bucket)
    with reduced.policy:
        reduced.backward()
    grads = {n: p.grad.numpy() for n, p in reduced.model.named_parameters()}
    if world.is_main:  # one GPU on the whole global batch: the same windows, in one piece
        single = Run(args, world, None, batch_size=reduced.batch_size * world.world_size)
        with single.policy:
            single.backward()
        worst = max(relative_error(grads[n], p.grad.numpy())
                    for n, p in single.model.named_parameters())  # fmt: skip
        # float32 sums differ in their last bits (another split of the batch, atomic adds);
        # 16-bit gradients are rounded to 8 (bf16) or 11 (fp16) bits before they are added
        tolerance = 1e-2 if single.policy.mixed else 1e-4
        verdict = "ok" if worst <= tolerance else "MISMATCH"
        print(f"gradients: worst relative error over parameters {worst:.2e} ({verdict}, "
              f"tolerance {tolerance:g})")  # fmt: skip
        del single
    ddp = Run(args, world, ddp=True)  # torch's wrapper: the same mean, within backward
    with ddp.policy:
        ddp.backward()
    if world.is_main:
        worst = max(relative_error(p.grad.numpy(), grads[n.removeprefix("module.")])
                    for n, p in ddp.model.named_parameters())  # fmt: skip
        print(f"ddp: worst relative error against DataParallel {worst:.2e} "
              f"({'ok' if worst <= 1e-6 else 'MISMATCH'}, tolerance 1e-06)")  # fmt: skip
    del reduced, ddp
    world.barrier()
    # ZeRO-1 and plain AdamW take 3 steps from the same averaged gradients
    plain, zero = Run(args, world, bucket), Run(args, world, None, zero=True)
    with plain.policy:
        for _ in range(3):
            plain.optimiser.step()
            zero.optimiser.step()
            plain.backward()
            for p, q in zip(plain.model.parameters(), zero.model.parameters()):
                q.grad = Tensor(p.grad.array.copy(), requires_grad=False)
            plain.policy.step(plain.optimiser, plain.model, max_norm=1.0)
            zero.policy.step(zero.optimiser, zero.model, max_norm=1.0)
    worst = max(float(abs(p.array - q.array).max())
                for p, q in zip(plain.model.parameters(), zero.model.parameters()))  # fmt: skip
    if world.is_main:
        print(f"zero: largest difference from plain AdamW {worst:.2e} "
              f"({'ok' if worst == 0 else 'MISMATCH'}); AdamW state on rank 0 "
              f"{state_mib(zero.optimiser.optimiser):.1f} MiB, unsharded "
              f"{state_mib(plain.optimiser):.1f} MiB")  # fmt: skip


def fault(args, world) -> None:
    """Rank 1 hangs (sleeps) or dies after 3 steps; the others must abort within the
    timeout: their next wait for the GPU is held to it (tricycle.parallel.deadline)."""
    trainer = args.fault_step != "eager"  # the training script's step, captured or not
    run = Run(args, world, int(args.bucket_mb * 2**20), zero=args.fault_step == "zero",
              reduce_alone=False, trainer=trainer)  # fmt: skip
    with run.policy:
        for step in range(100):
            if step == 3 and world.rank == 1:
                if args.fault == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if args.fault == "raise":  # an uncaught error: init's hook ends every rank
                    raise ValueError("rank 1 read a bad file")
                time.sleep(3600)
            loss = run.step()
            float(to_host_array(getattr(loss, "array", loss)))  # the host waits: a read-back
            if world.is_main:
                print(f"step {step} at {time.strftime('%X')}", flush=True)


def main(argv=None) -> None:
    args = parse_args(argv)
    world = distributed.init(gpu=True)
    if world.is_main:
        nvls = os.environ.get("NCCL_NVLS_ENABLE")
        print(f"{world}; NCCL {nccl().get_version()}; {args.model}, {args.precision}, "
              f"NCCL_NVLS_ENABLE={nvls}")  # fmt: skip
    if args.fault:
        return fault(args, world)
    if not args.no_check:
        check(args, world)
    bucket = int(args.bucket_mb * 2**20)
    settings = {  # label: Run's keywords
        "script captured": dict(bucket_bytes=bucket, reduce_alone=False, trainer=True),
        "script eager": dict(bucket_bytes=bucket, reduce_alone=False, trainer=False),
        "overlapped": dict(bucket_bytes=bucket),
        "overlapped 4 MiB": dict(bucket_bytes=4 << 20),  # smaller than the default (DDP's)
        "after backward": dict(bucket_bytes=2**62),
        "torch-style DDP": dict(ddp=True),
    }
    if world.world_size == 1:  # also as training runs it: with one rank nothing is sent
        settings = {"plain": dict(), "as trained": dict(bucket_bytes=bucket, reduce_alone=False),
                    **settings}  # fmt: skip
    if args.settings:
        settings = {k: v for k, v in settings.items() if k in args.settings.split(",")}
    best = dict.fromkeys(settings, float("inf"))
    for _ in range(args.repeats):
        for label, keywords in settings.items():
            run = Run(args, world, **keywords)
            best[label] = min(best[label], run.time(args.steps, args.warmup))
            per_gpu, context = run.batch_size, run.config.context_window
            del run
            cupy().get_default_memory_pool().free_all_blocks()
    if world.is_main:
        tokens = per_gpu * context * world.world_size
        print(f"{world.world_size} GPU(s), {per_gpu} sequences per GPU, best of "
              f"{args.repeats} runs of {args.steps} steps")  # fmt: skip
        for label, seconds in best.items():
            print(f"  {label:<18} {seconds * 1e3:8.2f} ms/step {tokens / seconds:>12,.0f} tokens/s")
        if {"plain", "as trained", "overlapped"} <= best.keys():
            print(f"  as trained / plain time: {best['as trained'] / best['plain']:.3f}x "
                  "(the one code path with one GPU)")  # fmt: skip
            print(f"  overlapped / plain time: {best['overlapped'] / best['plain']:.3f}x "
                  "(NCCL and the buckets, were one GPU to reduce)")  # fmt: skip
        if "after backward" in best and "overlapped" in best:
            overlap = best["after backward"] / best["overlapped"]
            print(f"  after backward / overlapped time: {overlap:.3f}x (what the overlap saves)")
        if args.json:
            rates = {label: tokens / seconds for label, seconds in best.items()}
            print("RESULT " + json.dumps({"model": args.model, "gpus": world.world_size,
                                          "per_gpu": per_gpu, "tokens_per_s": rates}))  # fmt: skip
    world.finalize()


if __name__ == "__main__":
    main()
