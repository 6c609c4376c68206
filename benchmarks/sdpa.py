"""General attention: the reference formula, the kernels (numba on the CPU, CUDA on a GPU)
and PyTorch.

    python benchmarks/sdpa.py               # B * T = 2048 tokens, 4 heads of 32, T = 64 ... 1024
    python benchmarks/sdpa.py --quick
    python benchmarks/sdpa.py --device gpu --tokens 16384 --head-dim 64

One forward + backward of ``tricycle.nn.sdpa`` (bidirectional, a key padding mask) in float32,
with the reference (``sdpa_forward``/``sdpa_backward`` in numpy, or cupy with ``--device
gpu``, the whole (Tq, Tk) scores at once), with the backend's kernel
(``tricycle/backends/cpu/sdpa.py`` or ``tricycle/backends/cuda/sdpa.py``, tiles with an
online softmax), and with torch's ``scaled_dot_product_attention`` when torch is installed
(on the GPU when it sees one). The batch shrinks as T grows so that every row holds the same
number of tokens. Best of ``--repeats`` wall-clock times (after a synchronisation of the
device on the GPU), in milliseconds.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle.dropout_mask import NO_DROPOUT  # noqa: E402
from tricycle.nn.sdpa import attention_bias, sdpa_backward, sdpa_forward  # noqa: E402


def best_ms(run, repeats: int, synchronise=lambda: None) -> float:
    run()  # compile / warm up
    synchronise()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        synchronise()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def kernel_module(device: str):
    """The backend module with the kernel pair, or None where it cannot be imported."""
    try:
        if device == "gpu":
            from tricycle.backends.cuda import sdpa
        else:
            from tricycle.backends.cpu import sdpa
    except ImportError:
        return None
    return sdpa


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2048, help="B * T")
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024])
    parser.add_argument("--quick", action="store_true", help="T = 64 and 128 only")
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    args = parser.parse_args(argv)
    lengths = [64, 128] if args.quick else args.lengths
    kernel = kernel_module(args.device)
    try:
        import torch
    except ImportError:
        torch = None
    xp, synchronise, torch_device = np, lambda: None, "cpu"
    if args.device == "gpu":
        from tricycle import backend

        if not backend.cupy_available():
            parser.error("--device gpu: no CUDA GPU (CuPy is not installed or sees no device)")
        xp = backend.cupy()
        synchronise = xp.cuda.Device().synchronize
        if torch is not None and not torch.cuda.is_available():
            torch = None
        torch_device = "cuda"

    rng = np.random.default_rng(0)
    name = "CUDA kernel" if args.device == "gpu" else "numba kernel"
    print(f"| T | B | reference ms | {name} ms | torch ms |")
    print("| --- | --- | --- | --- | --- |")
    for T in lengths:
        B = max(1, args.tokens // T)
        host = [rng.normal(size=(B, args.heads, T, args.head_dim)).astype(np.float32)
                for _ in range(4)]  # fmt: skip
        padding = rng.random((B, T)) > 0.1
        padding[:, 0] = True
        q, k, v, dout = (xp.asarray(a) for a in host)
        bias = attention_bias(xp, xp.asarray(padding[:, None, None, :]), np.float32)

        def pair(forward, backward):
            def run():
                _, saved = forward(xp, q, k, v, bias, False, None, None, NO_DROPOUT)
                backward(xp, dout, saved)

            return run

        cells = [best_ms(pair(sdpa_forward, sdpa_backward), args.repeats, synchronise)]
        if kernel is not None:
            run = pair(kernel.sdpa_forward, kernel.sdpa_backward)
            cells.append(best_ms(run, args.repeats, synchronise))
        else:
            cells.append(float("nan"))
        if torch is not None:
            tq, tk, tv, tdout = (torch.tensor(a, device=torch_device) for a in host)
            for t in (tq, tk, tv):
                t.requires_grad_(True)
            mask = torch.tensor(padding[:, None, None, :], device=torch_device)

            def torch_run():
                out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, mask)
                out.backward(tdout)

            sync = torch.cuda.synchronize if torch_device == "cuda" else lambda: None
            cells.append(best_ms(torch_run, args.repeats, sync))
        else:
            cells.append(float("nan"))
        print(f"| {T} | {B} | " + " | ".join(f"{c:.1f}" for c in cells) + " |", flush=True)


if __name__ == "__main__":
    main()
