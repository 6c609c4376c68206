"""Causal attention on the CPU, forward + backward: tricycle's op vs PyTorch eager.

    python benchmarks/cpu_attention.py    # the GPT benchmark size: B8, T128, E256, 4 heads
    python benchmarks/cpu_attention.py --repeats 20

Both run the same packed (B, T, 3E) -> (B, T, E) causal attention with its backward:
``tricycle.attention.causal_attention`` (the compiled CPU kernel through the dispatch) and
``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``. PyTorch gets as many
threads as numpy's BLAS. The runners race interleaved, round by round (``race`` from
benchmarks/harness.py); the table shows each one's best round and the median of per-round
ratios. Nothing is written to disk.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from harness import blas_threads, paired_ratio, race, settled  # noqa: E402

from tricycle.attention import causal_attention  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402

try:
    import torch
except ImportError:  # the comparison is optional
    torch = None

INNER = 10  # passes per timed run


def timed(step):
    def run():
        start = time.perf_counter()
        for _ in range(INNER):
            step()
        return (time.perf_counter() - start) / INNER

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--embedding", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    B, T, E, H = args.batch, args.tokens, args.embedding, args.heads
    rng = np.random.default_rng(0)
    qkv = rng.standard_normal((B, T, 3 * E), dtype=np.float32)
    dout = rng.standard_normal((B, T, E), dtype=np.float32)

    def ours():
        x = Tensor(qkv)
        causal_attention(x, H).backward(dout)

    runners = {"ours": settled(timed(ours))}
    threads = blas_threads()
    if torch is not None:
        torch.set_num_threads(threads)
        x_t, dout_t = torch.tensor(qkv, requires_grad=True), torch.from_numpy(dout)

        def theirs():
            q, k, v = x_t.view(B, T, 3, H, E // H).permute(2, 0, 3, 1, 4)
            y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            y.transpose(1, 2).reshape(B, T, E).backward(dout_t)
            x_t.grad = None

        runners["torch"] = settled(timed(theirs))
    times = race(runners, args.repeats)
    print(f"{threads} BLAS thread(s), {args.repeats} rounds; best round, median ratio")
    line = f"attention B{B} T{T} E{E} H{H} fwd+bwd: ours {min(times['ours']) * 1e3:.3f} ms"
    if "torch" in times:
        ratio = paired_ratio(times["torch"], times["ours"])
        line += f", torch {min(times['torch']) * 1e3:.3f} ms, torch/ours {ratio:.2f}"
    print(line)


if __name__ == "__main__":
    main()
