"""Convolution, pooling, batch norm and LSTM on the CPU: tricycle vs PyTorch eager, side by side.

    python benchmarks/conv_lstm.py             # both benchmarks, interleaved rounds
    python benchmarks/conv_lstm.py --quick     # fewer rounds, smaller sizes: a smoke test
    python benchmarks/conv_lstm.py --tune-malloc   # glibc keeps freed memory, as training does
    python benchmarks/conv_lstm.py --threads 1     # tricycle's kernels, BLAS and PyTorch on 1

1. conv: ``Conv2d(32, 32, 3, padding=1)`` on (64, 32, 32, 32) float32, forward + backward
   (input, weight and bias gradients). Target: ours at >= 0.8x PyTorch's speed, i.e.
   ours/torch time <= 1.25.
2. lstm: one ``LSTM(256, 256)`` layer over T=64 steps of a batch of 32, forward + backward;
   printed per time step.
3. the layers around a convolution, on the same (64, 32, 32, 32) input, forward + backward:
   ``MaxPool2d(2)``, ``MaxPool2d(3, 2, padding=1)``, ``AvgPool2d(2)`` and ``BatchNorm2d(32)``
   (training: the batch's statistics).

Times are wall-clock (``time.perf_counter``), per pass, from runs of ``INNER`` passes back to
back, as a training loop makes them (both libraries' worker threads stay awake within a run
and are left to settle between runs); tricycle's compiled CPU kernels (numba) and numpy's BLAS
use their own threads; the runners race interleaved, round by round (``race``
from benchmarks/harness.py). The table shows each one's best round and, as ratios, the
median of per-round ratios. PyTorch gets as many threads as numpy's BLAS. Without torch,
ours runs alone. Nothing is written to disk.
"""

import argparse
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import blas_threads, paired_ratio, race, settled  # noqa: E402

from tricycle.apps.cpu import set_cpu_threads, tune_cpu_allocator  # noqa: E402
from tricycle.nn.batch_norm import BatchNorm2d  # noqa: E402
from tricycle.nn.conv import Conv2d  # noqa: E402
from tricycle.nn.pooling import AvgPool2d, MaxPool2d  # noqa: E402
from tricycle.nn.recurrent import LSTM  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402

try:
    import torch
except ImportError:  # the comparison is optional
    torch = None

CONV = dict(batch=64, channels=32, size=32, kernel=3)
RNN = dict(steps=64, batch=32, width=256)
INNER = 5  # back-to-back passes per timed run, as in a training loop (threads stay awake)


def passes(make_input, step, check, clear) -> Callable[[], float]:
    """A runner: ``INNER`` timed passes ``step(make_input())`` back to back (the input is made
    outside the timing), each checked and followed by ``clear()``; returns seconds per pass."""

    def run():
        elapsed = 0.0
        for _ in range(INNER):
            x = make_input()
            start = time.perf_counter()
            step(x)
            elapsed += time.perf_counter() - start
            check(x)
            clear()
        return elapsed / INNER

    return run


# ------------------------------------------------------------------ 1. conv
def conv_ours(x0, w0, b0, g0):
    layer = Conv2d(x0.shape[1], w0.shape[0], w0.shape[2], padding=w0.shape[2] // 2)
    layer.weights.array[...], layer.bias.array[...] = w0, b0

    def check(x):
        assert x.grad.shape == x0.shape and layer.weights.grad is not None

    return passes(lambda: Tensor(x0), lambda x: layer(x).backward(g0), check, layer.zero_grad)


def conv_torch(x0, w0, b0, g0):
    layer = torch.nn.Conv2d(x0.shape[1], w0.shape[0], w0.shape[2], padding=w0.shape[2] // 2)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(w0))
        layer.bias.copy_(torch.from_numpy(b0))
    g = torch.from_numpy(g0)

    def check(x):
        assert x.grad is not None and layer.weight.grad is not None

    return passes(
        lambda: torch.tensor(x0, requires_grad=True),
        lambda x: layer(x).backward(g),
        check,
        layer.zero_grad,
    )


# ------------------------------------------------------------------ 3. pooling, batch norm
# name: (tricycle's layer, PyTorch's, as made from the torch module)
LAYERS = {
    "maxpool2d(2)": (lambda: MaxPool2d(2), lambda t: t.nn.MaxPool2d(2)),
    "maxpool2d(3, 2, padding=1)": (lambda: MaxPool2d(3, 2, 1), lambda t: t.nn.MaxPool2d(3, 2, 1)),
    "avgpool2d(2)": (lambda: AvgPool2d(2), lambda t: t.nn.AvgPool2d(2)),
    "batchnorm2d(32)": (lambda: BatchNorm2d(32), lambda t: t.nn.BatchNorm2d(32)),
}


def layer_ours(name, x0):
    layer = LAYERS[name][0]()
    g0 = np.ones(layer(Tensor(x0)).shape, dtype=np.float32)

    def check(x):
        assert x.grad.shape == x0.shape

    return passes(lambda: Tensor(x0), lambda x: layer(x).backward(g0), check, layer.zero_grad)


def layer_torch(name, x0):
    layer = LAYERS[name][1](torch)
    g = torch.ones(layer(torch.from_numpy(x0)).shape)

    def check(x):
        assert x.grad is not None

    return passes(
        lambda: torch.tensor(x0, requires_grad=True),
        lambda x: layer(x).backward(g),
        check,
        layer.zero_grad,
    )


# ------------------------------------------------------------------ 2. lstm
def lstm_ours(x0, g0):
    layer = LSTM(x0.shape[-1], g0.shape[-1])

    def check(x):
        assert x.grad.shape == x0.shape

    return passes(lambda: Tensor(x0), lambda x: layer(x)[0].backward(g0), check, layer.zero_grad)


def lstm_torch(x0, g0):
    layer = torch.nn.LSTM(x0.shape[-1], g0.shape[-1])
    g = torch.from_numpy(g0)

    def check(x):
        assert x.grad is not None

    return passes(
        lambda: torch.tensor(x0, requires_grad=True),
        lambda x: layer(x)[0].backward(g),
        check,
        layer.zero_grad,
    )


# ------------------------------------------------------------------ main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    parser.add_argument("--repeats", type=int, default=None, help="rounds per benchmark")
    parser.add_argument(
        "--tune-malloc", action="store_true",
        help="keep freed memory in the process, as train_smol_gpt.py and gpt_train.py do "
        "(tune_cpu_allocator; both frameworks share the process)",
    )  # fmt: skip
    parser.add_argument(
        "--threads", type=int, default=None,
        help="threads for tricycle's kernels, numpy's BLAS and PyTorch (default: BLAS's own)",
    )  # fmt: skip
    args = parser.parse_args()
    set_cpu_threads(args.threads)
    if args.tune_malloc:
        tune_cpu_allocator()
    repeats = args.repeats or (2 if args.quick else 10)
    conv, rnn = dict(CONV), dict(RNN)
    if args.quick:
        conv.update(batch=4, size=8)
        rnn.update(steps=8, batch=4, width=32)

    threads = blas_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    N, C, S, K = conv["batch"], conv["channels"], conv["size"], conv["kernel"]
    conv_inputs = (
        rng.standard_normal((N, C, S, S), dtype=np.float32),
        rng.standard_normal((C, C, K, K), dtype=np.float32) * 0.1,
        rng.standard_normal(C, dtype=np.float32),
        rng.standard_normal((N, C, S, S), dtype=np.float32),
    )
    T, B, W = rnn["steps"], rnn["batch"], rnn["width"]
    lstm_inputs = (
        rng.standard_normal((T, B, W), dtype=np.float32),
        rng.standard_normal((T, B, W), dtype=np.float32),
    )

    # PyTorch's OpenMP workers and the kernels' threads both spin for a while after a
    # call: ``settled`` pauses (untimed) after every run, so neither steals the other's cores
    results = {}
    layers = [
        (name, partial(layer_ours, name), partial(layer_torch, name), conv_inputs[:1])
        for name in LAYERS
    ]
    for name, ours, theirs, inputs in [
        ("conv", conv_ours, conv_torch, conv_inputs),
        ("lstm", lstm_ours, lstm_torch, lstm_inputs),
        *layers,
    ]:
        runners = {"ours": settled(ours(*inputs))}
        if torch is not None:
            runners["torch"] = settled(theirs(*inputs))
        results[name] = race(runners, repeats)

    torch_version = torch.__version__ if torch is not None else "not installed"
    print(
        f"numpy {np.__version__}, torch {torch_version}, {threads} BLAS thread(s), {repeats} "
        "rounds; times are the best round, the ratio the median of per-round ratios"
    )
    header = f"{'benchmark':<60}{'ours ms':>10}{'torch ms':>10}{'ours/torch':>12}  target"
    print(header)
    print("-" * len(header))
    rows = [
        (f"conv2d {(N, C, S, S)}, {K}x{K}, {C} out, fwd+bwd", "conv", 1, 1.25),
        (f"lstm {W}->{W}, batch {B}, per step of {T}, fwd+bwd", "lstm", T, 1.25),
        *((f"{name} on {(N, C, S, S)}, fwd+bwd", name, 1, None) for name in LAYERS),
    ]
    for label, name, per, limit in rows:
        times = results[name]
        ours_ms = min(times["ours"]) * 1e3 / per
        if "torch" in times:
            torch_ms = f"{min(times['torch']) * 1e3 / per:10.3f}"
            ratio = paired_ratio(times["ours"], times["torch"])
            vs_torch = f"{ratio:12.2f}"
            verdict = "" if limit is None else f"ours/torch <= {limit}: "
            verdict += "" if limit is None else ("met" if ratio <= limit else "NOT met")
        else:
            torch_ms, vs_torch, verdict = f"{'-':>10}", f"{'-':>12}", "torch unavailable"
        print(f"{label:<60}{ours_ms:10.3f}{torch_ms}{vs_torch}  {verdict}")


if __name__ == "__main__":
    main()
