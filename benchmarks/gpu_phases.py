"""Where a GPU training step's time goes: forward, backward and update, per precision.

    python benchmarks/gpu_phases.py                      # fp32, tf32, fp16, bf16
    python benchmarks/gpu_phases.py --precisions fp16,bf16 --steps 20

The GPT of ``benchmarks/gpt_train.py --device gpu`` (V=1024, T=256, E=384, 6x6, B=64). Each
phase is timed between device synchronisations (which the real step does not have, so the
sum is a little above the step time of gpt_train.py); milliseconds, median over the steps.
Also times the fused attention alone, with and without probability dropout.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from gpt_train import GPU_CONFIG, gpu_setup  # noqa: E402

from tricycle.attention import attention_backward, attention_forward  # noqa: E402
from tricycle.backend import cupy  # noqa: E402
from tricycle.dropout_mask import AttentionDropout  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402


def phases(precision: str, steps: int, warmup: int = 3) -> dict[str, float]:
    cp = cupy()
    _, model, optimiser, policy, inputs, targets = gpu_setup(precision, steps + warmup)
    loss_fn = CrossEntropy()
    times: dict[str, list[float]] = {"forward": [], "backward": [], "update": []}

    def timed(name, fn, step):
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        result = fn()
        cp.cuda.Device().synchronize()
        if step >= warmup:
            times[name].append((time.perf_counter() - start) * 1e3)
        return result

    with policy:
        for step in range(steps + warmup):
            optimiser.step()
            loss = timed(
                "forward", lambda: loss_fn(targets[step], model(inputs[step], precision=policy)),
                step,
            )  # fmt: skip
            timed("backward", lambda: policy.backward(loss), step)
            timed("update", lambda: policy.step(optimiser, model, max_norm=1.0), step)
    result = {name: statistics.median(values) for name, values in times.items()}
    result["step"] = sum(result.values())
    if policy.scaler is not None:
        result["skipped"] = policy.scaler.skipped_steps
    return result


def attention_cost(dtype, repeats: int = 20) -> dict[str, float]:
    """Fused attention forward + backward at the model's shape, without and with dropout."""
    cp = cupy()
    B, T, H, D = GPU_CONFIG["batch_size"], GPU_CONFIG["context_window"], 6, 64
    rng = np.random.default_rng(0)
    qkv = cp.asarray(rng.normal(size=(B, T, 3 * H * D))).astype(dtype)
    dout = cp.asarray(rng.normal(size=(B, T, H * D))).astype(dtype)
    out = {}

    def forward(dropout):
        return attention_forward(cp, qkv, H, dropout)

    def forward_backward(dropout):
        return attention_backward(cp, dout, attention_forward(cp, qkv, H, dropout)[1])

    for name, dropout in (("no dropout", AttentionDropout()), ("p=0.2", AttentionDropout(0.2, 7))):
        for label, f in (("fwd", forward), ("fwd+bwd", forward_backward)):
            fn = lambda f=f, d=dropout: f(d)  # noqa: E731
            fn()
            cp.cuda.Device().synchronize()
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            cp.cuda.Device().synchronize()
            out[f"{name} {label}"] = (time.perf_counter() - start) / repeats * 1e3
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--precisions", default="fp32,tf32,fp16,bf16")
    parser.add_argument("--steps", type=int, default=15)
    args = parser.parse_args()
    print(f"GPT {GPU_CONFIG}: milliseconds per phase (median of {args.steps} steps)")
    print(f"{'precision':10} {'forward':>8} {'backward':>9} {'update':>7} {'sum':>7}  tokens/s")
    tokens = GPU_CONFIG["batch_size"] * GPU_CONFIG["context_window"]
    for precision in args.precisions.split(","):
        r = phases(precision, args.steps)
        extra = f"  skipped {r['skipped']}" if "skipped" in r else ""
        print(f"{precision:10} {r['forward']:8.2f} {r['backward']:9.2f} {r['update']:7.2f} "
              f"{r['step']:7.2f}  {tokens / r['step'] * 1e3:,.0f}{extra}", flush=True)  # fmt: skip
    for dtype in ("float32", "float16"):
        costs = attention_cost(np.dtype(dtype))
        print(f"attention {dtype} (B=64 T=256 H=6 D=64), ms: "
              + ", ".join(f"{k} {v:.3f}" for k, v in costs.items()))  # fmt: skip


if __name__ == "__main__":
    main()
