"""Data-parallel training on the CPU, tricycle beside PyTorch: N processes x 1 thread against
1 process x N threads, and the all-reduce bandwidth of tricycle's MPI path against a raw
mpi4py Allreduce of the same bytes.

    python benchmarks/distributed.py                       # both parts, 2 ranks
    python benchmarks/distributed.py --part train --steps 20 --repeats 3
    python benchmarks/distributed.py --part allreduce

Training: the CPU benchmarks' GPT (``harness.CPU_GPT``: E=256, 4 heads, 4 layers, T=128,
V=1024) on one global batch of --batch-size sequences per step (default 16), AdamW and
clipping at 1.0, float32; tricycle through ``tricycle.apps.training.train_step`` with a
``DataParallel``, PyTorch through its usual loop on ``torch_gpt.py``'s nanoGPT (manual
attention, the CPU tables' baseline). Each setting runs in its own processes, settings
alternate, and the best of --repeats counts:

    tricycle  1 process  x N threads   (OPENBLAS_NUM_THREADS = TRICYCLE_THREADS = N)
    tricycle  N processes x 1 thread   (mpiexec; DataParallel, gradients reduced in backward)
    tricycle  N processes x 1 thread, reduced after backward (one bucket: no overlap)
    torch     1 process  x N threads   (torch.set_num_threads)
    torch     N processes x 1 thread   (mpiexec; DistributedDataParallel over gloo)

tokens/s is the global batch's tokens over the median step time (rank 0's).

All-reduce: float32 buffers of 64 KiB to 64 MiB, summed over the ranks in place by tricycle
(``World.start_all_reduce``: MPI_Iallreduce, tested until done against the deadline) and by
``comm.Allreduce`` straight from mpi4py, alternately; the median of --reps calls each.
The ratio is raw time / ours: 1.0 means no cost of ours (target >= 0.9).

Take numbers on a quiet machine: with N processes on N cores nothing is left for anyone else.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import CPU_GPT, thread_env  # noqa: E402

from tricycle.apps.cpu import set_cpu_threads, tune_cpu_allocator  # noqa: E402
from tricycle.apps.training import train_step  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.dataset import CausalLMDataset  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.parallel import distributed  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

SETTINGS = {  # label: (framework, processes, threads, overlap); "N" is --ranks
    "tricycle 1 process x N threads": ("tricycle", 1, "N", True),
    "tricycle N processes x 1 thread": ("tricycle", "N", 1, True),
    "tricycle N x 1, reduced after backward": ("tricycle", "N", 1, False),
    "torch 1 process x N threads": ("torch", 1, "N", True),
    "torch N processes x 1 thread": ("torch", "N", 1, True),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--part", default="all", choices=["all", "train", "allreduce"])
    add("--ranks", type=int, default=2, help="processes (and threads of the 1-process runs)")
    add("--steps", type=int, default=20, help="timed steps per run")
    add("--warmup", type=int, default=3, help="untimed steps first")
    add("--repeats", type=int, default=2, help="runs per setting (the best counts)")
    add("--batch-size", type=int, default=16, help="sequences per global batch")
    add("--layers", type=int, default=CPU_GPT["n_layers"], help="transformer blocks")
    add("--bucket-mb", type=float, default=distributed.DEFAULT_BUCKET_BYTES / 2**20)
    add("--reps", type=int, default=20, help="all-reduce calls per size and path")
    add("--max-mb", type=float, default=64, help="largest all-reduce buffer")
    add("--skip-torch", action="store_true", help="tricycle's settings only")
    add("--worker", choices=["tricycle", "torch", "allreduce"], help=argparse.SUPPRESS)
    add("--no-overlap", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def gpt_config(args) -> GPTConfig:
    return GPTConfig(**{**CPU_GPT, "n_layers": args.layers, "batch_size": args.batch_size})


def report(times: list[float], tokens: int, world) -> None:
    """Rank 0 prints one JSON line: tokens/s of the global batch at the median step time."""
    if world is None or world.is_main:
        print(json.dumps({"tokens_per_s": tokens / statistics.median(times),
                          "mean_tokens_per_s": tokens * len(times) / sum(times)}))  # fmt: skip


# ------------------------------------------------------------------ training workers
def tricycle_worker(args) -> None:
    tune_cpu_allocator()
    set_cpu_threads(None)  # $TRICYCLE_THREADS threads (the parent sets it)
    world = distributed.init()
    config = gpt_config(args)
    manual_seed(0)
    model = GPT(config)
    world.broadcast_parameters(model)
    bucket_bytes = 2**62 if args.no_overlap else int(args.bucket_mb * 2**20)
    reducer = distributed.DataParallel(model, world, bucket_bytes=bucket_bytes)
    tokens = np.random.default_rng(0).integers(0, config.vocab_size, size=200_000)
    per_rank = config.batch_size // world.world_size
    data = CausalLMDataset(tokens, config.vocab_size, per_rank, config.context_window, seed=0,
                           rank=world.rank, world_size=world.world_size).batch()  # fmt: skip
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    times = []
    for _ in range(args.warmup + args.steps):
        start = time.perf_counter()
        result = train_step(model, optimiser, data, max_norm=config.grad_clip,
                            data_parallel=reducer)  # fmt: skip
        float(result.loss)
        times.append(time.perf_counter() - start)
    report(times[args.warmup :], config.batch_size * config.context_window, world)
    world.finalize()


def torch_worker(args) -> None:
    import torch  # noqa: PLC0415 - in torch's processes only
    import torch.distributed as dist  # noqa: PLC0415
    from torch_gpt import adamw, nano_gpt  # noqa: PLC0415

    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    torch.set_num_threads(threads)
    size, rank = distributed.launched_size(), int(os.environ.get("PMI_RANK", "0"))
    if size > 1:
        dist.init_process_group("gloo", rank=rank, world_size=size)  # MASTER_ADDR/PORT: env
    config = gpt_config(args)
    torch.manual_seed(0)
    model = nano_gpt(config, attention="manual")
    net = torch.nn.parallel.DistributedDataParallel(model) if size > 1 else model
    optimiser = adamw(model, config, learning_rate=1e-3)
    per_rank = args.batch_size // size
    rng = np.random.default_rng(rank)
    times = []
    for _ in range(args.warmup + args.steps):
        ids = torch.from_numpy(
            rng.integers(0, config.vocab_size, (per_rank, 1 + config.context_window))
        )
        start = time.perf_counter()
        logits = net(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimiser.step()
        value = loss.detach()
        if size > 1:
            dist.all_reduce(value)
        value.item()
        times.append(time.perf_counter() - start)
    if rank == 0:
        report(times[args.warmup :], args.batch_size * config.context_window, None)
    if size > 1:
        dist.destroy_process_group()


# ------------------------------------------------------------------ all-reduce worker
def allreduce_worker(args) -> None:
    world = distributed.init()
    comm = world.MPI.COMM_WORLD
    rows = []
    size = 64 << 10
    while size <= args.max_mb * 2**20:
        buffer = np.ones(size // 4, dtype=np.float32)
        ours, raw = [], []
        for _ in range(args.reps):
            world.barrier()
            start = time.perf_counter()
            world.wait(world.start_all_reduce(buffer), "benchmark")
            ours.append(time.perf_counter() - start)
            world.barrier()
            start = time.perf_counter()
            comm.Allreduce(world.MPI.IN_PLACE, buffer)
            raw.append(time.perf_counter() - start)
        ours_s, raw_s = statistics.median(ours), statistics.median(raw)
        rows.append({"bytes": size, "ours_s": ours_s, "raw_s": raw_s})
        size *= 4
    if world.is_main:
        print(json.dumps(rows))
    world.finalize()


# ------------------------------------------------------------------ the parent
def mpiexec() -> str:
    local = Path(sys.executable).with_name("mpiexec")
    found = str(local) if local.exists() else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("needs mpiexec: pip install tricycle-dl[distributed]")
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(worker: str, processes: int, threads: int, args, extra=()) -> dict | list:
    env = {**thread_env(threads), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    command = [sys.executable, __file__, "--worker", worker, *extra]
    for flag in ("steps", "warmup", "batch_size", "layers", "bucket_mb", "reps", "max_mb"):
        command += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if processes > 1:
        command = [mpiexec(), "-n", str(processes), *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{worker} x{processes} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def train_part(args) -> None:
    n = args.ranks
    if args.batch_size % n:
        raise SystemExit(f"--batch-size {args.batch_size} must divide over {n} ranks")
    settings = {label: setting for label, setting in SETTINGS.items()
                if not (args.skip_torch and setting[0] == "torch")}  # fmt: skip
    best = dict.fromkeys(settings, 0.0)
    for _ in range(args.repeats):
        for label, (framework, processes, n_threads, overlap) in settings.items():
            processes, n_threads = (n if k == "N" else k for k in (processes, n_threads))
            extra = () if overlap else ("--no-overlap",)
            result = spawn(framework, processes, n_threads, args, extra)
            best[label] = max(best[label], result["tokens_per_s"])
    print(f"\nGPT E={CPU_GPT['embedding_dim']} L={args.layers} T={CPU_GPT['context_window']}, "
          f"global batch {args.batch_size}, best of {args.repeats} runs (tokens/s)")  # fmt: skip
    for label, value in best.items():
        print(f"  {label.replace('N ', f'{n} '):<40} {value:>10,.0f}")

    def ratio(text: str, a: str, b: str) -> None:
        if best.get(a) and best.get(b):
            print(f"  {text.replace('N ', f'{n} ')}: {best[a] / best[b]:.2f}x")

    for fw in ("tricycle", "torch"):
        ratio(f"{fw}: N processes / 1 process x N threads", f"{fw} N processes x 1 thread",
              f"{fw} 1 process x N threads")  # fmt: skip
    ratio("tricycle: reduced during backward / after it", "tricycle N processes x 1 thread",
          "tricycle N x 1, reduced after backward")  # fmt: skip
    ratio("tricycle / torch, N processes x 1 thread", "tricycle N processes x 1 thread",
          "torch N processes x 1 thread")  # fmt: skip


def allreduce_part(args) -> None:
    rows = spawn("allreduce", args.ranks, 1, args)
    print(f"\nall-reduce of float32 over {args.ranks} ranks, median of {args.reps} calls")
    print(f"  {'bytes':>10} {'ours GB/s':>10} {'raw GB/s':>10} {'raw/ours':>9}")
    for row in rows:
        n = row["bytes"]
        print(f"  {n:>10,} {n / row['ours_s'] / 1e9:>10.2f} {n / row['raw_s'] / 1e9:>10.2f} "
              f"{row['raw_s'] / row['ours_s']:>8.2f}x")  # fmt: skip


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker == "tricycle":
        return tricycle_worker(args)
    if args.worker == "torch":
        return torch_worker(args)
    if args.worker == "allreduce":
        return allreduce_worker(args)
    if args.part in ("all", "train"):
        train_part(args)
    if args.part in ("all", "allreduce"):
        allreduce_part(args)


if __name__ == "__main__":
    main()
