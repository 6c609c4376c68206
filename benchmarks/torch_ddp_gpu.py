"""PyTorch's DistributedDataParallel on GPUs: the baseline of ``distributed_gpu.py``.

    torchrun --standalone --nproc_per_node 2 benchmarks/torch_ddp_gpu.py --model gpt2
    python benchmarks/torch_ddp_gpu.py --model shakespeare --compile   # one GPU, no torchrun

nanoGPT's model (``torch_gpt.py``: the architecture of tricycle's GPT, PyTorch's fused
attention) at the sizes of ``distributed_gpu.py`` (--model shakespeare: B=64, T=256; gpt2:
GPT-2 124M, B=8, T=1024; B per GPU), bf16 autocast, fused AdamW, clipping at 1.0, DDP over
NCCL with its default buckets; ``--compile`` wraps the DDP model in ``torch.compile``.
Times --steps steps after --warmup (synchronised at both ends, best of --repeats) and prints
tokens/s of all GPUs together; ``--json`` ends with a line ``RESULT {...}``.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import DATA_PARALLEL_MODELS as MODELS  # noqa: E402
from torch_gpt import adamw, nano_gpt, nano_gpt_step  # noqa: E402

from tricycle.configs import GPTConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="shakespeare", choices=sorted(MODELS))
    parser.add_argument("--batch-size", type=int, help="sequences per GPU")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    architecture, default_batch = MODELS[args.model]
    config = GPTConfig(**architecture, dropout=0.0, grad_clip=1.0, weight_decay=0.1,
                       beta1=0.9, beta2=0.95)  # fmt: skip
    batch = args.batch_size or default_batch
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    gpu = torch.cuda.is_available()  # without one: a smoke run on the CPU, over gloo
    device = torch.device("cuda", local_rank) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(local_rank)
    if ranks > 1:
        dist.init_process_group("nccl" if gpu else "gloo", device_id=device if gpu else None)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(0)
    model = nano_gpt(config).to(device)
    forward = model
    if ranks > 1:
        forward = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if gpu else None
        )
    if args.compile:
        forward = torch.compile(forward)
    optimiser = adamw(model, config, learning_rate=3e-4, fused=gpu)
    rng = np.random.default_rng(rank)
    T, V = config.context_window, config.vocab_size
    ids = torch.from_numpy(rng.integers(0, V, size=(16, batch, T + 1))).to(device)

    def step(k: int):
        window = ids[k % len(ids)]
        return nano_gpt_step(model, forward, optimiser, window[:, :-1], window[:, 1:],
                             grad_clip=1.0, dtype=torch.bfloat16)  # fmt: skip

    best = float("inf")
    for _ in range(args.repeats):
        for k in range(args.warmup):
            step(k)
        if gpu:
            torch.cuda.synchronize()
        if ranks > 1:
            dist.barrier()
        start = time.perf_counter()
        for k in range(args.steps):
            loss = step(k)
        loss.item()
        if gpu:
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / args.steps)
    rate = batch * T * ranks / best
    if rank == 0:
        label = "torch DDP" + (" compiled" if args.compile else " eager")
        print(f"{label}: {args.model}, {ranks} GPU(s), {batch} sequences per GPU: "
              f"{best * 1e3:.2f} ms/step, {rate:,.0f} tokens/s")  # fmt: skip
        if args.json:
            print("RESULT " + json.dumps({"model": args.model, "gpus": ranks, "per_gpu": batch,
                                          "tokens_per_s": {label: rate}}))  # fmt: skip
    if ranks > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
