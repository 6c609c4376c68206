"""General attention on the CPU: the reference formula, the numba kernel and PyTorch.

    python benchmarks/sdpa.py               # B * T = 2048 tokens, 4 heads of 32, T = 64 ... 1024
    python benchmarks/sdpa.py --quick

One forward + backward of ``tricycle.sdpa`` (bidirectional, a key padding mask) in float32,
with the reference (``sdpa_forward``/``sdpa_backward`` in numpy, the whole (Tq, Tk) scores
at once) and with the numba kernel (``tricycle/backends/cpu/sdpa.py``, tiles with an online
softmax), and torch's ``scaled_dot_product_attention`` when torch is installed. The batch
shrinks as T grows so that every row holds the same number of tokens. Best of ``--repeats``
wall-clock times, in milliseconds.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.dropout_mask import NO_DROPOUT  # noqa: E402
from tricycle.sdpa import attention_bias, sdpa_backward, sdpa_forward  # noqa: E402


def best_ms(run, repeats: int) -> float:
    run()  # compile / warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048, help="B * T")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    parser.add_argument("--quick", action="store_true", help="T = 64 and 128 only")
    args = parser.parse_args(argv)
    lengths = [64, 128] if args.quick else args.lengths
    try:
        from tricycle.backends.cpu import sdpa as kernel
    except ImportError:
        kernel = None
    try:
        import torch
    except ImportError:
        torch = None

    rng = np.random.default_rng(0)
    print("| T | B | reference ms | numba kernel ms | torch ms |")
    print("| --- | --- | --- | --- | --- |")
    for T in lengths:
        B = max(1, args.tokens // T)
        q, k, v = (rng.normal(size=(B, args.heads, T, args.head_dim)).astype(np.float32)
                   for _ in range(3))  # fmt: skip
        padding = rng.random((B, T)) > 0.1
        padding[:, 0] = True
        bias = attention_bias(np, padding[:, None, None, :], np.float32)
        dout = rng.normal(size=q.shape).astype(np.float32)

        def pair(forward, backward):
            def run():
                _, saved = forward(np, q, k, v, bias, False, None, None, NO_DROPOUT)
                backward(np, dout, saved)

            return run

        cells = [best_ms(pair(sdpa_forward, sdpa_backward), args.repeats)]
        if kernel is not None:
            cells.append(best_ms(pair(kernel.sdpa_forward, kernel.sdpa_backward), args.repeats))
        else:
            cells.append(float("nan"))
        if torch is not None:
            tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
            mask, tdout = torch.tensor(padding[:, None, None, :]), torch.tensor(dout)

            def torch_run():
                out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, mask)
                out.backward(tdout)

            cells.append(best_ms(torch_run, args.repeats))
        else:
            cells.append(float("nan"))
        print(f"| {T} | {B} | " + " | ".join(f"{c:.1f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
