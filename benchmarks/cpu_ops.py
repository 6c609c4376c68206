"""The fused ops of the CPU GPT, forward + backward: tricycle's CPU kernels against PyTorch.

    python benchmarks/cpu_ops.py               # 2 threads each, 7 interleaved rounds
    python benchmarks/cpu_ops.py --threads 1 --rounds 11

Sizes are those of the CPU GPT benchmark (B=8, T=128, E=256, 4 heads, vocabulary 1024):
LayerNorm over (1024, 256), softmax over the attention rows (8, 4, 128, 128), tanh GeLU,
bias+GeLU and dropout (p = 0.2) over the MLP's (1024, 1024), cross-entropy over (1024, 1024)
logits, and AdamW over the GPT's parameters (one ``optimiser.update``, against
``torch.optim.AdamW`` with its defaults over nanoGPT's parameters). Each op runs as a user
runs it (a Tensor op, then backward) three ways: tricycle with its CPU kernels, tricycle with
the reference formulas (numpy, ``dispatch.references()``) and PyTorch eager with the same
number of threads (``torch.set_num_threads``); with more than one thread, also with the
kernels held to one thread (``set_threads(1)``: their serial variants), which shows what the
threads bring. The runners alternate round by round; the table shows each one's best round in
ms and the median of per-round ratios. glibc's malloc is tuned as the training CLI tunes it.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import CPU_GPT, torch_or_none  # noqa: E402

from tricycle import dispatch  # noqa: E402
from tricycle.activation import GeLU, bias_gelu  # noqa: E402
from tricycle.apps.cpu import tune_cpu_allocator  # noqa: E402
from tricycle.attention import causal_attention  # noqa: E402
from tricycle.configs import GPTConfig  # noqa: E402
from tricycle.functions import Softmax  # noqa: E402
from tricycle.layers import LayerNorm, dropout  # noqa: E402
from tricycle.loss import CrossEntropy  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402

torch = torch_or_none()
rng = np.random.default_rng(0)


def data(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ours_and_torch():
    """{name: (tricycle step, torch step or None)}: each a forward and a backward."""
    x_ln, x_att, x_mlp, bias = data(1024, 256), data(8, 4, 128, 128), data(1024, 1024), data(1024)
    x_qkv = data(8, 128, 768)
    labels = rng.integers(0, 1024, size=1024)
    norm, drop_rng = LayerNorm(256), np.random.default_rng(1)
    cases = {
        "layer_norm (1024, 256)": lambda x: norm(x),
        "softmax (8, 4, 128, 128)": lambda x: Softmax()(x),
        "gelu tanh (1024, 1024)": lambda x: GeLU("tanh")(x),
        "bias+gelu (1024, 1024)": lambda x: bias_gelu(x, Tensor(bias), True),
        "cross_entropy (1024, 1024)": lambda x: CrossEntropy()(labels, x),
        "causal attention (8, 128, 4 x 64)": lambda x: causal_attention(x, 4),
        "dropout p=0.2 (1024, 1024)": lambda x: dropout(x, 0.2, rng=drop_rng),
    }
    inputs = dict(zip(cases, (x_ln, x_att, x_mlp, x_mlp, x_mlp, x_qkv, x_mlp)))

    def ours(name):
        def step():
            x = Tensor(inputs[name], requires_grad=True)
            y = cases[name](x)
            y.backward(np.ones(y.shape, np.float32))

        return step

    config = GPTConfig(**CPU_GPT)
    model = GPT(config)
    optimiser = AdamW(1e-3, (config.beta1, config.beta2), weight_decay=config.weight_decay)
    for p in model.parameters():
        p.grad = Tensor(data(*p.shape) * 1e-2)
    adamw = f"AdamW ({model.num_parameters() / 1e6:.1f}M parameters)"

    def ours_adamw():
        optimiser.update(model)

    steps = {name: (ours(name), None) for name in cases} | {adamw: (ours_adamw, None)}
    if torch is None:
        return steps
    F = torch.nn.functional
    t_norm = torch.nn.LayerNorm(256)
    t_bias, t_labels = torch.tensor(bias, requires_grad=True), torch.tensor(labels)
    t_cases = {
        "layer_norm (1024, 256)": t_norm,
        "softmax (8, 4, 128, 128)": lambda x: torch.softmax(x, -1),
        "gelu tanh (1024, 1024)": lambda x: F.gelu(x, approximate="tanh"),
        "bias+gelu (1024, 1024)": lambda x: F.gelu(x + t_bias, approximate="tanh"),
        "cross_entropy (1024, 1024)": lambda x: F.cross_entropy(x, t_labels),
        "causal attention (8, 128, 4 x 64)": _torch_attention,  # scaled_dot_product_attention
        "dropout p=0.2 (1024, 1024)": lambda x: F.dropout(x, 0.2),
    }

    def theirs(name):
        def step():
            x = torch.tensor(inputs[name], requires_grad=True)
            y = t_cases[name](x)
            y.backward(torch.ones_like(y))

        return step

    from torch_gpt import adamw as torch_adamw  # noqa: PLC0415 - needs torch
    from torch_gpt import nano_gpt  # noqa: PLC0415

    t_model = nano_gpt(config, "manual")
    for p in t_model.parameters():
        p.grad = torch.tensor(data(*p.shape) * 1e-2)
    t_optimiser = torch_adamw(t_model, config, 1e-3)
    return {name: (ours(name), theirs(name)) for name in cases} | {
        adamw: (ours_adamw, t_optimiser.step)
    }


def _torch_attention(qkv):
    """PyTorch's fused causal attention of qkv (B, T, 3E), 4 heads, as nanoGPT calls it."""
    B, T, three_e = qkv.shape
    q, k, v = (x.view(B, T, 4, three_e // 12).transpose(1, 2) for x in qkv.split(three_e // 3, 2))
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).reshape(B, T, three_e // 3)


def best_of(step, repeats: int) -> float:
    """The fastest of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeats", type=int, default=20, help="calls per runner per round")
    parser.add_argument(
        "--plain-malloc", action="store_true", help="glibc's malloc as it comes (no tuning)"
    )
    args = parser.parse_args()
    if not args.plain_malloc:
        tune_cpu_allocator()  # as the training CLI does, for both frameworks
    from tricycle.backends.cpu import set_threads  # noqa: PLC0415 - needs numba

    set_threads(args.threads)
    if torch is not None:
        torch.set_num_threads(args.threads)
    steps = ours_and_torch()
    for ours, theirs in steps.values():  # compile and warm up
        ours()
        with dispatch.references():
            ours()
        if theirs:
            theirs()
    print(f"threads {args.threads}, {args.rounds} rounds of {args.repeats} calls (best, ms); "
          "serial: the kernels on one thread")  # fmt: skip
    print(f"{'op, forward + backward':32} {'kernels':>9} {'serial':>9} {'numpy':>9} {'torch':>9} "
          f"{'torch/kernels':>14} {'serial/kernels':>15} {'numpy/kernels':>14}")  # fmt: skip
    for name, (ours, theirs) in steps.items():
        rounds = []
        for _ in range(args.rounds):
            kernels = best_of(ours, args.repeats)
            set_threads(1)
            serial = best_of(ours, args.repeats) if args.threads > 1 else kernels
            set_threads(args.threads)
            with dispatch.references():
                numpy = best_of(ours, args.repeats)
            reference = best_of(theirs, args.repeats) if theirs else float("nan")
            rounds.append((kernels, serial, numpy, reference))
        kernels, serial, numpy, reference = (min(r[i] for r in rounds) * 1e3 for i in range(4))
        vs_serial, vs_numpy, vs_torch = (
            statistics.median(r[i] / r[0] for r in rounds) for i in (1, 2, 3)
        )
        print(f"{name:32} {kernels:9.3f} {serial:9.3f} {numpy:9.3f} {reference:9.3f} "
              f"{vs_torch:13.2f}x {vs_serial:14.2f}x {vs_numpy:13.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
