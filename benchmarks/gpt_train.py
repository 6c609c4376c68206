"""GPT training throughput and peak memory: tricycle against PyTorch, side by side.

    python benchmarks/gpt_train.py                    # CPU: B=8, T=128, E=256, 4 heads, 4 layers
    python benchmarks/gpt_train.py --steps 20 --repeats 6 --threads 2
    python benchmarks/gpt_train.py --loop readme     # the README's loop at its sizes, as written
    python benchmarks/gpt_train.py --loop optim      # the same as a PyTorch user writes it
    python benchmarks/gpt_train.py --device gpu       # V=1024 T=256 E=384 6x6, B=64
    python benchmarks/gpt_train.py --device gpu --size gpt2 --modes bf16,fp16,tf32
    python benchmarks/gpt_train.py --device gpu --arch llama --n-kv-heads 2   # ours alone

Both frameworks train the same architecture (``torch_gpt.py`` is nanoGPT's model) with AdamW
and gradient clipping at 1.0 on the same random batches: tricycle through
``tricycle.apps.training.train_step``, PyTorch through its usual loop. Each run is a fresh
subprocess (its own peak memory: ``ru_maxrss`` on the CPU, cupy's pool or
``torch.cuda.max_memory_allocated`` on the GPU) and runs alternate between the frameworks
(``harness.paired_runs``). Without PyTorch, tricycle runs alone.

CPU: tokens/s is the median over the timed steps of batch_size * context_window / step
time; the loss is read back every step, as a training loop that logs it does.

GPU: PyTorch as its users write it at its fastest: nanoGPT's model with the fused
``scaled_dot_product_attention`` and ``torch.optim.AdamW(fused=True)``, run eagerly and
through ``torch.compile`` (the model compiled, as nanoGPT does). Each run times ``--steps``
steps as a whole between device synchronisations, after ``--warmup``, for every precision
in ``--modes`` (both frameworks in the same one: bf16 and fp16 mixed precision, torch's
autocast with its GradScaler for fp16; TF32; fp32) and both loop styles in ``--every``: the
loss read back every step (a host synchronisation per step) or every 10 steps (the host may
run ahead of the GPU). ``--size gpt2`` is GPT-2 small (124M parameters, T=1024, V=50304).

``--arch llama`` trains tricycle's Llama-style model (RoPE, ``--n-kv-heads`` key/value heads,
SwiGLU, RMSNorm) at the same size instead; the PyTorch baseline is nanoGPT's GPT, so tricycle
runs alone: compare its tokens/s with a ``--arch gpt2`` run of the same command.
"""

import argparse
import json
import resource
import statistics
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import (  # noqa: E402
    CPU_GPT,
    GPT2_GPT,
    GPU_GPT,
    batches,
    paired_runs,
    report_pairs,
    spawn,
    synchronize,
    thread_env,
    torch_or_none,
)

from tricycle.apps.cpu import set_cpu_threads, tune_cpu_allocator  # noqa: E402
from tricycle.apps.cuda_graph import CapturedStep  # noqa: E402
from tricycle.apps.training import precision_for, train_step  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.configs import ARCHS, GPTConfig  # noqa: E402
from tricycle.models import build_model  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402

GPU_SIZES = {"shakespeare": GPU_GPT, "gpt2": GPT2_GPT}
# the README's training loop: its model, batch and activation, no clipping
README_GPT = dict(
    embedding_dim=128, n_heads=4, n_layers=4, context_window=64, vocab_size=1024, batch_size=16,
    activation_fn="gelu_tanh", grad_clip=0.0,
)  # fmt: skip
GPU_MODES = ("fp32", "tf32", "fp16", "bf16")  # the same precision in both frameworks


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--steps", type=int, default=20, help="timed steps per run")
    add("--warmup", type=int, default=3, help="untimed steps first")
    add("--repeats", type=int, default=2, help="runs per framework, alternating")
    add("--threads", type=int, default=2, help="CPU threads of each framework")
    add("--loop", default="script", choices=["script", "readme", "optim"],
        help="CPU: the training script's step (threads and malloc set, clipping), the "
             "README's own loop at its sizes, as written (no settings, no clipping), or "
             "that loop as a PyTorch user writes it (tricycle.optim's AdamW, zero_grad, "
             "step)")  # fmt: skip
    add("--activation", default="gelu_tanh", choices=["gelu", "gelu_tanh"], help="MLP activation")
    add("--arch", default="gpt2", choices=ARCHS, help="llama: tricycle's Llama, tricycle alone")
    add("--n-kv-heads", type=int, help="llama: key/value heads (default: one per head)")
    add("--device", default="cpu", choices=["cpu", "gpu"])
    add("--size", default="shakespeare", choices=sorted(GPU_SIZES), help="the GPU model")
    add("--modes", default="bf16,fp16,tf32", help="GPU precisions, comma-separated")
    add("--every", default="1,10", help="GPU: read the loss back every N steps (list)")
    add("--no-compile", action="store_true", help="GPU: leave torch.compile out")
    add("--torch-attention", choices=["manual", "sdpa"],
        help="the baseline's attention: written out, or fused SDPA (default: manual on the "
             "CPU, as measured there; sdpa on the GPU)")  # fmt: skip
    add("--torch-fused-adamw", action="store_true",
        help="torch.optim.AdamW(fused=True) on the CPU (always on the GPU)")  # fmt: skip
    add("--graph", action="store_true", help="GPU: also tricycle with its step captured as a "
        "CUDA graph (tricycle.apps.cuda_graph.CapturedStep)")  # fmt: skip
    add("--worker", choices=["tricycle", "graph", "torch", "compile"], help=argparse.SUPPRESS)
    add("--precision", default="fp32", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torch_attention is None:
        args.torch_attention = "sdpa" if args.device == "gpu" else "manual"
    bad = set(args.modes.split(",")) - set(GPU_MODES)
    if bad:
        parser.error(f"--modes: unknown {sorted(bad)}; choose from {', '.join(GPU_MODES)}")
    if args.worker:
        args.every = int(args.every.split(",")[0])  # one loop style per run
    return args


def benchmark_config(args) -> GPTConfig:
    sizes = GPU_SIZES[args.size] if args.device == "gpu" else CPU_GPT
    if args.device == "cpu" and args.loop in ("readme", "optim"):
        sizes = README_GPT
    return GPTConfig(
        **{**sizes, "activation_fn": args.activation, "arch": args.arch},
        n_kv_heads=args.n_kv_heads,
    )


# ------------------------------------------------------------------ one run per process


def readme_run(config: GPTConfig, data) -> dict:
    """The README's training loop as it is written there (its model and data stand in for
    Shakespeare's batches), timed per step; nothing is set up that the README does not set."""
    from tricycle.loss import CrossEntropy  # noqa: PLC0415
    from tricycle.models import GPT  # noqa: PLC0415
    from tricycle.tensor import Tensor  # noqa: PLC0415

    manual_seed(0)
    model, loss_fn = GPT(config), CrossEntropy()
    optimiser = AdamW(learning_rate=1e-3, betas=(config.beta1, config.beta2), weight_decay=0.1)
    times = []
    for inputs, outputs in zip(*data):
        t0 = time.perf_counter()
        optimiser.step()
        inputs, outputs = Tensor(inputs, requires_grad=False), Tensor(outputs, requires_grad=False)
        logits = model(inputs)
        loss = loss_fn(outputs, logits)
        loss.backward()
        description = f"loss: {loss:.3f}"  # the README's progress bar text
        model.update(optimiser)
        times.append(time.perf_counter() - t0)
    return {"times": times, "loss": float(description.split()[-1])}


def optim_run(config: GPTConfig, data) -> dict:
    """The README's loop written as a PyTorch user writes it, with ``tricycle.optim``:
    nanoGPT's two parameter groups, ``zero_grad``, ``backward``, ``step``, the loss read
    every step; the same loop as ``torch_readme_run``'s."""
    import tricycle.nn as nn  # noqa: PLC0415
    import tricycle.optim as optim  # noqa: PLC0415
    from tricycle.models import GPT  # noqa: PLC0415

    manual_seed(0)
    model, loss_fn = GPT(config), nn.CrossEntropyLoss()
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": rest, "weight_decay": 0.0}]  # fmt: skip
    optimiser = optim.AdamW(groups, lr=1e-3, betas=(config.beta1, config.beta2))
    times = []
    for inputs, targets in zip(*data):
        t0 = time.perf_counter()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        description = f"loss: {loss.item():.3f}"
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    return {"times": times, "loss": float(description.split()[-1])}


def tricycle_run(config: GPTConfig, data, args) -> dict:
    """Train tricycle's model (``config.arch``) on ``data``; per-step times (CPU) or the
    timed span (GPU)."""
    gpu = args.device == "gpu"
    if not gpu and args.loop == "readme":
        return readme_run(config, data)
    if not gpu and args.loop == "optim":
        return optim_run(config, data)
    if not gpu:
        set_cpu_threads(args.threads)
    manual_seed(0)
    model = build_model(config)
    optimiser = AdamW(learning_rate=1e-3, betas=(config.beta1, config.beta2), weight_decay=0.1)
    policy = precision_for(args.precision, args.device)
    inputs, targets = data
    if gpu:
        model.to_gpu()
        inputs, targets = cupy().asarray(inputs), cupy().asarray(targets)
    times, start = [], None
    if args.worker == "graph":
        step_fn = CapturedStep(model, optimiser, policy, max_norm=config.grad_clip)
    else:
        step_fn = partial(train_step, model, optimiser, policy=policy, max_norm=config.grad_clip)
    with policy:
        for step, batch in enumerate(zip(inputs, targets)):
            if step == args.warmup:
                synchronize(args.device)
                start = time.perf_counter()
            t0 = time.perf_counter()
            result = step_fn(iter([batch]))
            if not gpu or (step + 1) % args.every == 0:
                result.settle(step)  # read the loss back, as a logging loop does
            times.append(time.perf_counter() - t0)
        synchronize(args.device)
    out = {"elapsed": time.perf_counter() - start, "times": times, "loss": result.settle().loss}
    if gpu:
        graph_bytes = step_fn._pool.total_bytes() if args.worker == "graph" else 0
        pool_bytes = cupy().get_default_memory_pool().total_bytes()  # high water
        out["peak_mb"] = (pool_bytes + graph_bytes) / 2**20
        out["skipped"] = 0 if policy.scaler is None else policy.scaler.skipped_steps
    return out


def torch_run(config: GPTConfig, data, args) -> dict:
    """Train nanoGPT's model in PyTorch on ``data``, as ``tricycle_run``; compiled with
    ``torch.compile`` for the "compile" worker."""
    import torch  # noqa: PLC0415 - in the torch worker only, so it never counts in ours
    from torch_gpt import adamw, nano_gpt, nano_gpt_step  # noqa: PLC0415

    gpu = args.device == "gpu"
    if not gpu and args.loop in ("readme", "optim"):
        return torch_readme_run(config, data, args)
    torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    torch.manual_seed(0)
    model = nano_gpt(config, args.torch_attention)
    device = "cuda" if gpu else "cpu"
    model = model.to(device)
    fused = True if gpu or args.torch_fused_adamw else None
    optimiser = adamw(model, config, 1e-3, fused=fused)
    forward = torch.compile(model) if args.worker == "compile" else model
    inputs, targets = (torch.from_numpy(a).to(device) for a in data)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    scaler = torch.amp.GradScaler(device) if args.precision == "fp16" else None
    times, start = [], None
    for step in range(len(inputs)):
        if step == args.warmup:
            synchronize(args.device)
            start = time.perf_counter()
        t0 = time.perf_counter()
        loss = nano_gpt_step(model, forward, optimiser, inputs[step], targets[step],
                          config.grad_clip, dtype, scaler)  # fmt: skip
        if not gpu or (step + 1) % args.every == 0:
            loss.item()
        times.append(time.perf_counter() - t0)
    synchronize(args.device)
    out = {"elapsed": time.perf_counter() - start, "times": times, "loss": float(loss)}
    if gpu:
        out.update(peak_mb=torch.cuda.max_memory_allocated() / 2**20, skipped=0)
    return out


def torch_readme_run(config: GPTConfig, data, args) -> dict:
    """The README's loop as a PyTorch user writes it: no settings, no clipping, the loss
    formatted every step."""
    import torch  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415, N812
    from torch_gpt import adamw, nano_gpt  # noqa: PLC0415

    torch.manual_seed(0)
    model = nano_gpt(config, args.torch_attention)
    optimiser = adamw(model, config, 1e-3)
    times = []
    for inputs, targets in zip(*data):
        t0 = time.perf_counter()
        inputs, targets = torch.from_numpy(inputs), torch.from_numpy(targets)
        logits = model(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        description = f"loss: {loss.item():.3f}"
        optimiser.step()
        optimiser.zero_grad(set_to_none=True)
        times.append(time.perf_counter() - t0)
    return {"times": times, "loss": float(description.split()[-1])}


def worker(args) -> None:
    """Train in this process and print one JSON line of results."""
    if args.device == "cpu" and args.loop == "script":
        tune_cpu_allocator()  # the same malloc settings for both frameworks
    config = benchmark_config(args)
    data = batches(config, args.warmup + args.steps)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run = tricycle_run if args.worker in ("tricycle", "graph") else torch_run
    result = run(config, data, args)
    tokens = config.batch_size * config.context_window
    timed = result.pop("times")[args.warmup :]
    if args.device == "gpu":
        result["tokens_per_s"] = tokens * args.steps / result["elapsed"]
    else:
        result.update(
            tokens_per_s=tokens / statistics.median(timed),
            mean_tokens_per_s=tokens * len(timed) / sum(timed),
            peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            rss_before_mb=rss_before / 1024,
        )
    print(json.dumps({"framework": args.worker, "precision": args.precision, **result}))


# ------------------------------------------------------------------ the comparison


def runner(framework: str, precision: str, args, every: int = 1):
    """A function that makes one run of ``framework`` in a fresh process."""
    command = [sys.executable, __file__, "--worker", framework, "--device", args.device]
    command += ["--precision", precision, "--steps", str(args.steps), "--size", args.size]
    command += ["--warmup", str(args.warmup), "--activation", args.activation]
    command += ["--threads", str(args.threads), "--torch-attention", args.torch_attention]
    command += ["--every", str(every), "--arch", args.arch, "--loop", args.loop]
    command += [] if args.n_kv_heads is None else ["--n-kv-heads", str(args.n_kv_heads)]
    command += ["--torch-fused-adamw"] if args.torch_fused_adamw else []
    script_cpu = args.device == "cpu" and args.loop == "script"
    return lambda: spawn(command, thread_env(args.threads) if script_cpu else None)


def describe(config: GPTConfig, args) -> str:
    size = (
        f"V={config.vocab_size} T={config.context_window} E={config.embedding_dim} "
        f"{config.n_layers}x{config.n_heads} B={config.batch_size} {config.activation_fn}"
    )
    model = "GPT" if config.arch == "gpt2" else f"Llama ({config.kv_heads} key/value heads)"
    loops = {"readme": " (the README's loop)", "optim": " (the README's loop, torch-style)"}
    loop = loops.get(args.loop, "") if args.device == "cpu" else ""
    return (f"{model} {size} on the {args.device}{loop}, AdamW + clip {config.grad_clip}, "
            f"{args.warmup} warm-up + {args.steps} timed steps, {args.repeats} runs each "
            f"(torch: {args.torch_attention} attention)")  # fmt: skip


def baselines(args) -> list[str]:
    """The PyTorch runs beside tricycle's (none without PyTorch, or for the Llama)."""
    if args.arch != "gpt2":
        print("the PyTorch baseline is nanoGPT's GPT: tricycle's Llama runs alone")
        return []
    if torch_or_none() is None:
        print("PyTorch is not installed: tricycle runs alone")
        return []
    if args.device == "cpu":
        return ["torch"]
    return ["torch"] + ([] if args.no_compile else ["compile"])


def cpu_main(args, config: GPTConfig) -> None:
    frameworks = ["tricycle", *baselines(args)]
    print(describe(config, args), flush=True)
    runs = paired_runs({name: runner(name, "fp32", args) for name in frameworks}, args.repeats)
    print(f"{'framework':10s} {'best tokens/s':>14s} {'peak MB':>10s} {'loss':>8s}")
    for name, results in runs.items():
        best = max(results, key=lambda r: r["tokens_per_s"])
        peak = min(r["peak_mb"] for r in results)
        print(f"{name:10s} {best['tokens_per_s']:14,.0f} {peak:10,.0f} {best['loss']:8.3f}")
    report_pairs(runs)
    if len(runs) == 2:
        peaks = [min(r["peak_mb"] for r in runs[name]) for name in ("tricycle", "torch")]
        print(f"tricycle / torch peak memory: {peaks[0] / peaks[1]:.2f}x")


def gpu_main(args, config: GPTConfig) -> None:
    """Every precision of ``--modes`` in each loop style of ``--every``: tricycle, torch eager
    and torch.compile in alternating fresh runs; a table of the best runs last."""
    frameworks = ["tricycle", *(["graph"] if args.graph else []), *baselines(args)]
    print(describe(config, args), flush=True)
    rows = []
    for mode in args.modes.split(","):
        for every in (int(n) for n in args.every.split(",")):
            print(f"== {mode}, loss read every {every} step{'s' * (every > 1)}", flush=True)
            runs = paired_runs(
                {name: runner(name, mode, args, every) for name in frameworks}, args.repeats
            )
            best = {name: max(r["tokens_per_s"] for r in results) for name, results in runs.items()}
            peak = {name: min(r["peak_mb"] for r in results) for name, results in runs.items()}
            rows.append((mode, every, best, peak))
    names = {"tricycle": "ours", "graph": "graph", "torch": "eager", "compile": "compile"}
    ours = [n for n in frameworks if n in ("tricycle", "graph")]
    pairs = [(o, b) for o in ours for b in frameworks if b not in ours]
    head = "".join(f"{names[n] + ' tok/s':>15s}" for n in frameworks)
    ratios = "".join(f"{names[o] + '/' + names[b]:>14s}" for o, b in pairs)
    memory = "".join(f"{names[n] + ' MB':>11s}" for n in frameworks if n != "compile")
    print(f"\n{'mode':5s} {'every':>5s}{head}{ratios}{memory}")
    for mode, every, best, peak in rows:
        cells = "".join(f"{best[n]:15,.0f}" for n in frameworks)
        cells += "".join(f"{best[o] / best[b]:14.2f}" for o, b in pairs)
        cells += "".join(f"{peak[n]:11,.0f}" for n in frameworks if n != "compile")
        print(f"{mode:5s} {every:5d}{cells}")


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    config = benchmark_config(args)
    if args.device == "gpu":
        gpu_main(args, config)
    else:
        cpu_main(args, config)


if __name__ == "__main__":
    main()
