"""GPT training throughput and peak memory: tricycle against PyTorch eager, side by side.

    python benchmarks/gpt_train.py                    # B=8, T=128, E=256, 4 heads, 4 layers
    python benchmarks/gpt_train.py --steps 30 --repeats 3 --threads 2

Both frameworks train the same architecture (tests/torch_reference.py is the PyTorch twin of
tricycle's GPT) with AdamW and gradient clipping at 1.0, in float32, on the same random
batches. Each run happens in its own subprocess so that its peak resident memory
(``ru_maxrss``) is its own, and runs alternate between the frameworks. Two ratios are printed:
best run against best run (noise only ever slows a run down), and the median over pairs of
runs made back to back (run i of each). On a VM with fast and slow spells one lucky run can
decide the first, so the second is the steadier figure.
tokens/s is the median over the timed steps of batch_size * context_window / step time.

    python benchmarks/gpt_train.py --device gpu       # issue 5: V=1024 T=256 E=384 6x6, B=64

On the GPU both frameworks run float32, TF32 and mixed precision (ours fp16 and bf16 vs
torch bf16 autocast), each mode in its own subprocess (clean peak memory: cupy's pool
total bytes, its high-water mark; torch.cuda.max_memory_allocated). Each run times ``--steps``
steps as a whole, between device synchronisations, after ``--warmup`` steps; with
``--repeats`` the runs alternate between the frameworks and each one's best counts (short GPU
runs vary by 10-25% from run to run, mostly in host time).
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

from train_smol_gpt import make_precision, training_step, tune_cpu_allocator  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
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
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    parser.add_argument("--modes", default="fp32,tf32,mixed", help="GPU modes to run")
    parser.add_argument("--worker", choices=["tricycle", "torch"], help=argparse.SUPPRESS)
    parser.add_argument("--precision", default="fp32", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def batches(config: GPTConfig, n: int):
    """The same ``n`` random (inputs, targets) batches for both frameworks."""
    rng = np.random.default_rng(0)
    shape = (n, config.batch_size, config.context_window)
    return rng.integers(0, config.vocab_size, size=(2, *shape))


# ------------------------------------------------------------------ one framework per process


def tricycle_model(config: GPTConfig):
    """(model, optimiser, loss_fn): the benchmarked GPT (seed 0) with its AdamW and loss."""
    np.random.seed(0)
    model = GPT(config)
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    return model, optimiser, CrossEntropy()


def torch_model(config: GPTConfig, threads: int):
    """(torch, model, optimiser): the PyTorch twin (seed 0, GPT-2 init) with torch's AdamW,
    on ``threads`` threads. torch is imported here, in the torch worker only, so that it never
    counts in tricycle's memory."""
    import torch  # noqa: PLC0415
    from torch_reference import TorchGPT, adamw_groups, gpt2_init_  # noqa: PLC0415

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    approximate = "tanh" if config.activation_fn == "gelu_tanh" else "none"
    model = gpt2_init_(TorchGPT(config, approximate=approximate), config.n_layers)
    optimiser = torch.optim.AdamW(adamw_groups(model, 0.1), lr=1e-3, betas=(0.9, 0.95))
    return torch, model, optimiser


def run_tricycle(config: GPTConfig, data) -> list[float]:
    tune_cpu_allocator()
    model, optimiser, loss_fn = tricycle_model(config)
    times = []
    for inputs, targets in zip(*data):
        start = time.perf_counter()
        training_step(model, optimiser, loss_fn, iter([(inputs, targets)]), config, len(times))
        times.append(time.perf_counter() - start)
    return times


def run_torch(config: GPTConfig, data, threads: int) -> list[float]:
    tune_cpu_allocator()  # the same malloc settings for both
    torch, model, optimiser = torch_model(config, threads)
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


# ------------------------------------------------------------------ the GPU comparison
GPU_CONFIG = dict(
    embedding_dim=384, n_heads=6, n_layers=6, context_window=256, vocab_size=1024, batch_size=64
)
# mode -> (our precision, torch's)
GPU_MODES = {"fp32": [("fp32", "fp32")], "tf32": [("tf32", "tf32")],
             "mixed": [("fp16", "bf16"), ("bf16", "bf16")]}  # fmt: skip


def gpu_setup(precision: str, n_batches: int):
    """(config, model, optimiser, policy, inputs, targets): this benchmark's GPT (gelu_tanh),
    AdamW and precision policy, and ``n_batches`` random batches on the GPU; for the GPU
    diagnostics beside this file (gpu_phases.py, gpu_host_profile.py, cuda_graph_probe.py)."""
    cp = cupy()
    config = GPTConfig(**GPU_CONFIG, activation_fn="gelu_tanh", grad_clip=1.0)
    data = batches(config, n_batches)
    np.random.seed(0)
    model = GPT(config).to_gpu()
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    policy = make_precision(precision, "gpu")
    return config, model, optimiser, policy, cp.asarray(data[0]), cp.asarray(data[1])


def gpu_tricycle(config, data, precision: str, warmup: int) -> dict:
    cp = cupy()
    np.random.seed(0)
    model = GPT(config).to_gpu()
    optimiser = AdamW(learning_rate=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
    loss_fn = CrossEntropy()
    policy = make_precision(precision, "gpu")
    pool = cp.get_default_memory_pool()
    inputs, targets = cp.asarray(data[0]), cp.asarray(data[1])
    batches = iter(zip(inputs, targets))
    start = None
    with policy:
        for step in range(len(data[0])):
            if step == warmup:
                cp.cuda.Device().synchronize()
                start = time.perf_counter()
            result = training_step(model, optimiser, loss_fn, batches, config, step, policy, False)
        cp.cuda.Device().synchronize()
        elapsed = time.perf_counter() - start
        loss = float(result["loss"])
    skipped = policy.scaler.skipped_steps if policy.scaler is not None else 0
    # cupy's pool keeps every block it ever handed out, so its size is the high-water mark of
    # memory in use at once, activations included (used_bytes() between steps would miss them)
    return {"elapsed": elapsed, "peak_mb": pool.total_bytes() / 2**20, "loss": loss,
            "skipped": skipped}  # fmt: skip


def gpu_torch(config, data, precision: str, warmup: int) -> dict:
    import torch  # noqa: PLC0415
    from torch_reference import TorchGPT, adamw_groups, gpt2_init_  # noqa: PLC0415

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.manual_seed(0)
    approximate = "tanh" if config.activation_fn == "gelu_tanh" else "none"
    model = gpt2_init_(TorchGPT(config, approximate=approximate), config.n_layers).cuda()
    optimiser = torch.optim.AdamW(adamw_groups(model, 0.1), lr=1e-3, betas=(0.9, 0.95))
    inputs = torch.from_numpy(data[0]).cuda()
    targets = torch.from_numpy(data[1]).cuda()
    positions = torch.arange(config.context_window, device="cuda")
    model.position_embedding.forward = lambda _, e=model.position_embedding: e.weight[positions]
    autocast = precision == "bf16"
    start = None
    for step in range(len(inputs)):
        if step == warmup:
            torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(inputs[step])
        loss = torch.nn.functional.cross_entropy(
            logits.float().flatten(0, 1), targets[step].flatten()
        )
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    return {"elapsed": elapsed, "peak_mb": torch.cuda.max_memory_allocated() / 2**20,
            "loss": float(loss), "skipped": 0}  # fmt: skip


def gpu_worker(args) -> None:
    config = GPTConfig(**GPU_CONFIG, activation_fn=args.activation, grad_clip=1.0)
    data = batches(config, args.warmup + args.steps)
    run = gpu_tricycle if args.worker == "tricycle" else gpu_torch
    result = run(config, data, args.precision, args.warmup)
    tokens = config.batch_size * config.context_window * args.steps
    result.update(framework=args.worker, precision=args.precision,
                  tokens_per_s=tokens / result["elapsed"])  # fmt: skip
    print(json.dumps(result))


def gpu_run(framework: str, precision: str, args) -> dict | None:
    """One GPU training run in a fresh process; its JSON result, or None (reported)."""
    command = [sys.executable, __file__, "--worker", framework, "--device", "gpu"]
    command += ["--precision", precision, "--steps", str(args.steps)]
    command += ["--warmup", str(args.warmup), "--activation", args.activation]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    if done.returncode != 0:
        print(f"  {framework} {precision}: FAILED (rc {done.returncode}, {took:.0f} s)"
              f"\n{done.stderr[-2500:]}", flush=True)  # fmt: skip
        return None
    try:
        r = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"  {framework} {precision}: no result\n{done.stdout[-1500:]}")
        return None
    print(f"  {framework:8s} {precision:5s} {r['tokens_per_s']:12,.0f} tokens/s, "
          f"peak {r['peak_mb']:8,.0f} MB, loss {r['loss']:.3f}, skipped "
          f"{r['skipped']}, {took:.0f} s", flush=True)  # fmt: skip
    return r


def gpu_main(args) -> None:
    print(f"GPT {GPU_CONFIG} on the GPU, {args.activation}, AdamW + clip 1.0, "
          f"{args.warmup} warm-up + {args.steps} timed steps per run, {args.repeats} runs "
          "each, alternating; the best run counts", flush=True)  # fmt: skip
    rows = []
    for mode in args.modes.split(","):
        for ours, theirs in GPU_MODES[mode]:
            pair = {}
            for _ in range(args.repeats):
                for framework, precision in (("tricycle", ours), ("torch", theirs)):
                    r = gpu_run(framework, precision, args)
                    best = pair.get(framework)
                    if r and (best is None or r["tokens_per_s"] > best["tokens_per_s"]):
                        pair[framework] = r
            rows.append((mode, ours, theirs, pair))
    print(f"\n{'mode':6s} {'ours':5s} {'torch':5s} {'ours tok/s':>12s} {'torch tok/s':>12s} "
          f"{'ratio':>6s} {'ours MB':>8s} {'torch MB':>8s} {'mem ratio':>9s}")  # fmt: skip
    for mode, ours, theirs, pair in rows:
        a, b = pair.get("tricycle"), pair.get("torch")
        fmt = lambda r, k, f: format(r[k], f) if r else "-"  # noqa: E731
        ratio = f"{a['tokens_per_s'] / b['tokens_per_s']:.2f}" if a and b else "-"
        mem = f"{a['peak_mb'] / b['peak_mb']:.2f}" if a and b else "-"
        print(f"{mode:6s} {ours:5s} {theirs:5s} {fmt(a, 'tokens_per_s', '12,.0f'):>12s} "
              f"{fmt(b, 'tokens_per_s', '12,.0f'):>12s} {ratio:>6s} "
              f"{fmt(a, 'peak_mb', '8,.0f'):>8s} "
              f"{fmt(b, 'peak_mb', '8,.0f'):>8s} {mem:>9s}")  # fmt: skip


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker and args.device == "gpu":
        gpu_worker(args)
        return
    if args.worker:
        worker(args)
        return
    if args.device == "gpu":
        gpu_main(args)
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
    print(f"tricycle / torch throughput, best run against best run: {ratio:.2f}x")
    if args.repeats > 1:  # each pair ran back to back, so a slow spell of the machine hits both
        pairs = [a["tokens_per_s"] / b["tokens_per_s"] for a, b in zip(*runs.values())]
        print(
            "tricycle / torch throughput, median over back-to-back pairs: "
            f"{statistics.median(pairs):.2f}x (range {min(pairs):.2f}-{max(pairs):.2f}x)"
        )


if __name__ == "__main__":
    main()
