"""The tensor-core attention kernels of this checkout against another checkout's, on one GPU.

    python benchmarks/gpu_attention_pair.py --old /path/to/old/checkout

Loads the other checkout's ``tricycle/backends/cuda/attention.py`` beside this one's, its
kernels compiled from its own sources (``attention_mma.cu`` and ``common.cuh``), checks that
both give the same numbers (the same bits, or within the format's tolerance where the
summation order differs), then times forward + backward of each alternately with CUDA events,
``--rounds`` rounds: each side's best time and the median of per-round ratios, new over old
(below 1: the new one is faster). For a kernel's speed after a change that should not have
moved it (a refactor of the kernels' source).
"""

import argparse
import importlib.util
import sys
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle import backend, dispatch  # noqa: E402
from tricycle.backends.cuda import attention  # noqa: E402
from tricycle.backends.cuda.launch import _OPTIONS  # noqa: E402
from tricycle.precision import Precision  # noqa: E402

TOLERANCE = {"bfloat16": 1e-2, "float16": 3e-3, "tf32": 5e-3}  # as tests/test_kernels.py


def load_old(checkout: Path):
    """The other checkout's CUDA attention module, compiling its kernels from its sources."""
    cp = backend.cupy()
    folder = checkout / "tricycle" / "backends" / "cuda"
    path = folder / "attention.py"
    module_name = "tricycle.backends.cuda.attention_old"
    spec = importlib.util.spec_from_loader(module_name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    with mock.patch.object(dispatch, "add"):  # the op keeps this checkout's kernels
        exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102
    functions = {}

    def compiled(file: str, name: str, *template_args: str):
        expression = f"{name}<{', '.join(template_args)}>" if template_args else name
        if (file, expression) not in functions:
            code = f"{(folder / 'common.cuh').read_text()}\n{(folder / file).read_text()}"
            raw = cp.RawModule(code=code, options=_OPTIONS, name_expressions=[expression])
            functions[file, expression] = raw.get_function(expression)
        return functions[file, expression]

    module.compiled = compiled
    return module


def relative_error(got, ref) -> float:
    cp = backend.cupy()
    got, ref = (cp.asnumpy(a).astype(np.float64) for a in (got, ref))
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--inner", type=int, default=5, help="calls per timed round")
    args = parser.parse_args(argv)
    cp = backend.cupy()
    old = load_old(args.old)
    rng = np.random.default_rng(0)
    import ml_dtypes  # cupy's bfloat16

    formats = [("bfloat16", np.dtype(ml_dtypes.bfloat16)), ("float16", np.dtype(np.float16)),
               ("tf32", np.dtype(np.float32))]  # fmt: skip
    print("| kernels (forward + backward) | old ms | new ms | new / old | numbers |")
    print("| --- | --- | --- | --- | --- |")
    for B, T, H, D in ((16, 1024, 12, 64), (8, 1024, 6, 128), (64, 256, 6, 64)):
        for label, dtype in formats:
            for p in (0.0, 0.1):
                E = H * D
                qkv = cp.asarray(rng.standard_normal((B, T, 3 * E)).astype(dtype))
                dout = cp.asarray(rng.standard_normal((B, T, E)).astype(dtype))
                with Precision("tf32" if label == "tf32" else "fp32"):

                    def pair(module, qkv=qkv, dout=dout, H=H, p=p):
                        out, saved = module.attention_forward(cp, qkv, H, p, 7)
                        return out, module.attention_backward(cp, dout, saved)

                    mine, theirs = pair(attention), pair(old)
                    if all(cp.array_equal(a, b) for a, b in zip(mine, theirs)):
                        numbers = "same bits"
                    else:
                        error = max(relative_error(a, b) for a, b in zip(mine, theirs))
                        assert error < TOLERANCE[label], f"{label}: new and old differ by {error}"
                        numbers = f"within {error:.1e}"
                    times = {"old": [], "new": []}
                    for _ in range(args.rounds):
                        for side, module in (("old", old), ("new", attention)):
                            start, end = cp.cuda.Event(), cp.cuda.Event()
                            start.record()
                            for _ in range(args.inner):
                                pair(module)
                            end.record()
                            end.synchronize()
                            times[side].append(cp.cuda.get_elapsed_time(start, end) / args.inner)
                o, n = np.array(times["old"]), np.array(times["new"])
                shape = f"B{B} T{T} H{H} D{D} {label} dropout {p}"
                ratio = np.median(n / o)
                print(f"| {shape} | {o.min():.3f} | {n.min():.3f} | {ratio:.3f} | {numbers} |",
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
