"""GPU kernel benchmarks: tricycle's CUDA kernels vs its cupy xp versions vs PyTorch.

    python benchmarks/gpu_kernels.py                 # everything, GPT shapes (B=64, T=256, E=384)
    python benchmarks/gpu_kernels.py --quick         # fewer repeats
    python benchmarks/gpu_kernels.py --only attention adamw --json out.json

For each fused op it times, with CUDA events (median of ``--repeats`` rounds of ``--inner``
back-to-back calls, after warm-up):

- ``ours``: the kernel in tricycle/backends/cuda;
- ``xp``: the library's pure array function on cupy (kernels switched off through
  TRICYCLE_DISABLE_KERNELS), i.e. what runs without the kernels;
- ``torch``: PyTorch's eager equivalent (F.softmax, F.layer_norm, F.gelu, F.cross_entropy,
  embedding_dense_backward, torch.optim.AdamW(fused=True), F.scaled_dot_product_attention).

It also prints the floor of each memory-bound op (the fewest bytes it must move over the copy
bandwidth measured first) and a probe of CuPy's matrix-product modes (float32, TF32 through
``set_compute_type`` and through the cuBLAS math mode, float16, bfloat16; 2-D and batched).
The last lines are one table; ``--json`` writes every number.
"""

import argparse
import json
import math
import os
import statistics
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tricycle import backend  # noqa: E402
from tricycle.activation import gelu_backward, gelu_forward  # noqa: E402
from tricycle.attention import attention_backward, attention_forward  # noqa: E402
from tricycle.backends import cuda as kernels
from tricycle.functions import softmax_backward, softmax_forward  # noqa: E402
from tricycle.layers import layer_norm_backward, layer_norm_forward  # noqa: E402
from tricycle.loss import cross_entropy_backward, cross_entropy_forward  # noqa: E402
from tricycle.optimisers import _adam_update  # noqa: E402
from tricycle.precision import Precision  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = F = None

cp = None  # set in main()
ROWS: list[dict] = []
ARGS = None


# ====================================================================== timing
@contextmanager
def kernels_off():
    """Run the xp versions: the dispatch predicate reads this variable on every call."""
    old = os.environ.get("TRICYCLE_DISABLE_KERNELS")
    os.environ["TRICYCLE_DISABLE_KERNELS"] = "1"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TRICYCLE_DISABLE_KERNELS"]
        else:
            os.environ["TRICYCLE_DISABLE_KERNELS"] = old


def time_cupy(fn) -> float:
    """Median milliseconds per call of fn (cupy events on the current stream)."""
    for _ in range(ARGS.warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(ARGS.repeats):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        for _ in range(ARGS.inner):
            fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / ARGS.inner)
    return statistics.median(times)


def time_torch(fn) -> float:
    """Median milliseconds per call of fn (torch events on torch's current stream)."""
    for _ in range(ARGS.warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(ARGS.repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(ARGS.inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / ARGS.inner)
    return statistics.median(times)


def record(name, shape, bytes_moved=None, flops=None, ours=None, xp=None, torch_ms=None):
    row = dict(name=name, shape=shape, bytes=bytes_moved, flops=flops, ours=ours, xp=xp)
    row["torch"] = torch_ms
    ROWS.append(row)
    print(
        f"  {name:<34} {shape:<28} ours {fmt(ours)} ms  xp {fmt(xp)} ms  torch {fmt(torch_ms)} ms",
        flush=True,
    )


def fmt(ms) -> str:
    return "-" if ms is None else f"{ms:.4f}"


def maybe(fn):
    """Time fn, or None if it fails (the failure is printed, the run goes on)."""
    try:
        return fn()
    except Exception as error:  # a benchmark must not stop the suite
        print(f"    ! {type(error).__name__}: {error}", flush=True)
        return None


def bf16():
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def dtype_of(name):
    """The storage dtype of a ``--dtypes`` name ("tf32": float32 under the TF32 policy)."""
    return bf16() if name == "bfloat16" else np.dtype("float32" if name == "tf32" else name)


def torch_dtype(name):
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
            "tf32": torch.float32}[name]  # fmt: skip


@contextmanager
def tf32_if(name):
    """Inside, "tf32" runs float32 products on TF32 in both frameworks (tricycle's policy,
    torch's ``allow_tf32`` flags); any other name changes nothing."""
    if name != "tf32":
        yield
        return
    flags = None
    if torch is not None:
        flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        with Precision("tf32"):
            yield
    finally:
        if flags is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags


def device_pair(rng, shape, dtype="float32", scale=1.0):
    """The same random values as a cupy array and (if torch is there) a torch tensor."""
    host = (rng.standard_normal(size=shape, dtype=np.float32) * scale).astype(np.float32)
    ours = cp.asarray(host.astype(dtype_of(dtype)))
    theirs = None
    if torch is not None:
        theirs = torch.from_numpy(host).cuda().to(torch_dtype(dtype))
    return ours, theirs


def itemsize(dtype) -> int:
    return dtype_of(dtype).itemsize


# ====================================================================== ceilings
def measure_bandwidth() -> float:
    """Bytes/s of a large device-to-device copy (read + write counted)."""
    n = 1 << 28  # 1 GiB of float32
    a = cp.ones(n, dtype=np.float32)
    b = cp.empty_like(a)
    ms = time_cupy(lambda: cp.copyto(b, a))
    return 2 * 4 * n / (ms * 1e-3)


def probe_matmul():
    """CuPy's matrix-product modes: 2-D GEMMs at GPT shapes and attention-like batched ones."""
    print("\n== CuPy matrix products (TFLOP/s)", flush=True)
    rng = np.random.default_rng(0)
    linalg = cp._core
    handle = cp.cuda.device.get_cublas_handle()
    results = {}

    def run(label, a, b):
        flops = 2 * math.prod(a.shape) * b.shape[-1]  # (batch x) M x K @ K x N
        ms = maybe(lambda: time_cupy(lambda: cp.matmul(a, b)))
        tflops = None if ms is None else flops / (ms * 1e-3) / 1e12
        results[label] = tflops
        print(f"  {label:<58} {fmt(ms)} ms  {'-' if tflops is None else f'{tflops:.0f}'} TFLOP/s")

    a32 = cp.asarray(rng.standard_normal((16384, 384), dtype=np.float32))
    b32 = cp.asarray(rng.standard_normal((384, 1152), dtype=np.float32))
    q32 = cp.asarray(rng.standard_normal((384, 256, 64), dtype=np.float32))
    k32 = cp.asarray(rng.standard_normal((384, 64, 256), dtype=np.float32))
    default_type = linalg.get_compute_type(np.float32)
    mode = cp.cuda.cublas.getMathMode(handle)
    print(f"  compute type for float32 at start: {default_type}; cuBLAS math mode {mode}")
    run("2-D fp32 (16384x384 @ 384x1152), default", a32, b32)
    run("batched fp32 (384 x 256x64 @ 64x256), default", q32, k32)
    linalg.set_compute_type(np.float32, 7)  # COMPUTE_TYPE_TF32
    run("2-D fp32, set_compute_type(TF32)", a32, b32)
    run("batched fp32, set_compute_type(TF32) only", q32, k32)
    cp.cuda.cublas.setMathMode(handle, 3)  # CUBLAS_TF32_TENSOR_OP_MATH
    run("batched fp32, + cuBLAS math mode TF32", q32, k32)
    run("2-D fp32, TF32 + math mode", a32, b32)
    linalg.set_compute_type(np.float32, 1)
    run("batched fp32, math mode TF32, compute type DEFAULT", q32, k32)
    cp.cuda.cublas.setMathMode(handle, mode)
    run("2-D fp16", a32.astype(np.float16), b32.astype(np.float16))
    run("batched fp16 (CuPy computes it in fp32)", q32.astype(np.float16), k32.astype(np.float16))
    try:
        run("2-D bf16 (ml_dtypes)", a32.astype(bf16()), b32.astype(bf16()))
        run("batched bf16 (ml_dtypes)", q32.astype(bf16()), k32.astype(bf16()))
    except Exception as error:
        print(f"  bf16: {type(error).__name__}: {error}")
    print(f"  math mode after fp16 GEMMs: {cp.cuda.cublas.getMathMode(handle)}")
    linalg.set_compute_type(np.float32, default_type)
    return results


# ====================================================================== cases
def bench_softmax(rng):
    print("\n== softmax", flush=True)
    for rows, cols in ((64 * 6 * 256, 256), (16384, 1024)):
        for dtype in ARGS.dtypes:
            x, tx = device_pair(rng, (rows, cols), dtype, 3.0)
            dy, tdy = device_pair(rng, (rows, cols), dtype)
            size = rows * cols * itemsize(dtype)
            shape = f"({rows}, {cols}) {dtype}"
            y = kernels.softmax_forward(cp, x)
            with kernels_off():
                xp_fwd = maybe(lambda: time_cupy(lambda: softmax_forward(cp, x)))
                xp_bwd = maybe(lambda: time_cupy(lambda: softmax_backward(cp, y, dy)))
            t_fwd = t_bwd = None
            if torch is not None:
                ty = F.softmax(tx, -1)
                t_fwd = time_torch(lambda: F.softmax(tx, -1))
                t_bwd = maybe(
                    lambda: time_torch(lambda: torch._softmax_backward_data(tdy, ty, -1, ty.dtype))
                )
            ours = time_cupy(lambda: kernels.softmax_forward(cp, x))
            record("softmax fwd", shape, 2 * size, None, ours, xp_fwd, t_fwd)
            ours = time_cupy(lambda: kernels.softmax_backward(cp, y, dy))
            record("softmax bwd", shape, 3 * size, None, ours, xp_bwd, t_bwd)


def bench_layer_norm(rng):
    print("\n== layer norm", flush=True)
    rows, cols = 16384, 384
    for dtype in ARGS.dtypes:
        x, tx = device_pair(rng, (rows, cols), dtype)
        dy, tdy = device_pair(rng, (rows, cols), dtype)
        g, tg = device_pair(rng, (cols,), "float32")
        b, tb = device_pair(rng, (cols,), "float32")
        size = rows * cols * itemsize(dtype)
        shape = f"({rows}, {cols}) {dtype}"
        y, mean, rstd = kernels.layer_norm_forward(cp, x, g, b, 1e-5)
        with kernels_off():
            xp_fwd = maybe(lambda: time_cupy(lambda: layer_norm_forward(cp, x, g, b, 1e-5)))
            xp_bwd = maybe(lambda: time_cupy(lambda: layer_norm_backward(cp, dy, x, g, mean, rstd)))
        t_fwd = t_bwd = None
        if torch is not None:
            tg2, tb2 = tg.to(tx.dtype), tb.to(tx.dtype)  # torch wants one dtype
            t_fwd = time_torch(lambda: F.layer_norm(tx, (cols,), tg2, tb2, 1e-5))
            _, tmean, trstd = torch.ops.aten.native_layer_norm(tx, [cols], tg2, tb2, 1e-5)
            t_bwd = maybe(
                lambda: time_torch(
                    lambda: torch.ops.aten.native_layer_norm_backward(
                        tdy, tx, [cols], tmean, trstd, tg2, tb2, [True, True, True]
                    )
                )
            )
        ours = time_cupy(lambda: kernels.layer_norm_forward(cp, x, g, b, 1e-5))
        record("layer_norm fwd", shape, 2 * size, None, ours, xp_fwd, t_fwd)
        ours = time_cupy(lambda: kernels.layer_norm_backward(cp, dy, x, g, mean, rstd))
        record("layer_norm bwd", shape, 3 * size, None, ours, xp_bwd, t_bwd)


def bench_gelu(rng):
    print("\n== GeLU", flush=True)
    shape_ = (16384, 1536)
    for dtype in ARGS.dtypes:
        x, tx = device_pair(rng, shape_, dtype)
        dy, tdy = device_pair(rng, shape_, dtype)
        size = math.prod(shape_) * itemsize(dtype)
        for approximate in (False, "tanh"):
            shape = f"{shape_} {dtype} {'tanh' if approximate else 'erf'}"
            with kernels_off():
                xp_fwd = maybe(lambda: time_cupy(lambda: gelu_forward(cp, x, approximate)))
                xp_bwd = maybe(lambda: time_cupy(lambda: gelu_backward(cp, x, dy, approximate)))
            t_fwd = t_bwd = None
            if torch is not None:
                mode = "tanh" if approximate else "none"
                t_fwd = time_torch(lambda: F.gelu(tx, approximate=mode))
                t_bwd = time_torch(lambda: torch.ops.aten.gelu_backward(tdy, tx, approximate=mode))
            ours = time_cupy(lambda: kernels.gelu_forward(cp, x, approximate))
            record("gelu fwd", shape, 2 * size, None, ours, xp_fwd, t_fwd)
            ours = time_cupy(lambda: kernels.gelu_backward(cp, x, dy, approximate))
            record("gelu bwd", shape, 3 * size, None, ours, xp_bwd, t_bwd)


def bench_cross_entropy(rng):
    print("\n== cross-entropy", flush=True)
    for rows, cols in ((16384, 1024), (8192, 50304)):
        for dtype in ARGS.dtypes:
            logits, tlogits = device_pair(rng, (rows, cols), dtype, 2.0)
            labels_host = rng.integers(0, cols, size=rows)
            labels = cp.asarray(labels_host)
            size = rows * cols * itemsize(dtype)
            shape = f"({rows}, {cols}) {dtype}"
            loss, saved = kernels.cross_entropy_forward(cp, logits, labels)
            one = cp.ones((), dtype=np.float32)
            with kernels_off():
                xp_fwd = maybe(lambda: time_cupy(lambda: cross_entropy_forward(cp, logits, labels)))
                xp_saved = cross_entropy_forward(cp, logits, labels)[1]
                xp_bwd = maybe(
                    lambda: time_cupy(
                        lambda: cross_entropy_backward(cp, one, logits, labels, xp_saved)
                    )
                )
            t_fwd = t_both = None
            if torch is not None:
                tlabels = torch.from_numpy(labels_host).cuda()
                t_fwd = time_torch(lambda: F.cross_entropy(tlogits, tlabels))
                leaf = tlogits.detach().requires_grad_()

                def torch_both():
                    F.cross_entropy(leaf, tlabels).backward()
                    leaf.grad = None

                t_both = time_torch(torch_both)
            ours_fwd = time_cupy(lambda: kernels.cross_entropy_forward(cp, logits, labels))
            record("cross_entropy fwd", shape, size, None, ours_fwd, xp_fwd, t_fwd)
            ours_bwd = time_cupy(
                lambda: kernels.cross_entropy_backward(cp, one, logits, labels, saved)
            )
            record("cross_entropy bwd", shape, 2 * size, None, ours_bwd, xp_bwd, None)
            both = None if xp_fwd is None or xp_bwd is None else xp_fwd + xp_bwd
            record("cross_entropy fwd+bwd", shape, 3 * size, None, ours_fwd + ours_bwd, both,
                   t_both)  # fmt: skip


def bench_embedding(rng):
    print("\n== embedding backward", flush=True)
    n, dim = 16384, 384
    for vocab in (65, 1024, 50304):
        for dtype in ARGS.dtypes[:1] + (["bfloat16"] if "bfloat16" in ARGS.dtypes else []):
            dout, tdout = device_pair(rng, (n, dim), dtype)
            ids_host = rng.integers(0, vocab, size=n)
            ids = cp.asarray(ids_host)
            shape = f"N={n} E={dim} V={vocab} {dtype}"
            bytes_moved = n * dim * itemsize(dtype) + vocab * dim * 4 * 2

            def xp_version():
                dweights = cp.zeros((vocab, dim), dtype=np.float32)
                cp.add.at(dweights, ids, dout.astype(np.float32, copy=False))
                return dweights

            xp_ms = maybe(lambda: time_cupy(xp_version))
            t_ms = None
            if torch is not None:
                tids = torch.from_numpy(ids_host).cuda()
                t_ms = time_torch(
                    lambda: torch.ops.aten.embedding_dense_backward(tdout, tids, vocab, -1, False)
                )
            ours = time_cupy(lambda: kernels.embedding_backward(cp, dout, ids, vocab))
            record("embedding bwd", shape, bytes_moved, None, ours, xp_ms, t_ms)


def gpt_parameter_shapes(vocab=1024, block=256, dim=384, layers=6):
    shapes = [(vocab, dim), (block, dim)]
    for _ in range(layers):
        shapes += [(dim,), (dim,), (dim, 3 * dim), (3 * dim,), (dim, dim), (dim,)]
        shapes += [(dim,), (dim,), (dim, 4 * dim), (4 * dim,), (4 * dim, dim), (dim,)]
    return shapes + [(dim,), (dim,)]


def bench_adamw(rng):
    print("\n== AdamW (GPT parameter list: V=1024, T=256, E=384, 6 layers)", flush=True)
    shapes = gpt_parameter_shapes()
    n_params = sum(math.prod(s) for s in shapes)
    shape = f"{len(shapes)} tensors, {n_params / 1e6:.2f}M"
    bytes_moved = 28 * n_params  # read w, g, m, v; write w, m, v

    def arrays():
        return [cp.asarray(rng.standard_normal(s, dtype=np.float32) * 0.02) for s in shapes]

    w, g, m, v = arrays(), arrays(), arrays(), [cp.abs(a) for a in arrays()]
    decays = [0.1 if len(s) == 2 else 0.0 for s in shapes]
    hyper = cp.asarray(kernels.adam_hyper(1e-3, 0.9, 0.99, 1e-8, 10), dtype=np.float32)
    ours = time_cupy(lambda: kernels.adamw_multi_step(w, g, m, v, hyper, decays))
    state = [{} for _ in shapes]

    def per_tensor_kernel():
        for wi, gi, si in zip(w, g, state):
            kernels.adam_update(cp, wi, gi, si, 1e-3, 0.9, 0.99, 1e-8)

    def xp_version():
        for wi, gi, si, wd in zip(w, g, state, decays):
            if wd:
                wi *= 1.0 - 1e-3 * wd
            _adam_update(cp, wi, gi, si, 1e-3, 0.9, 0.99, 1e-8)

    per_tensor = time_cupy(per_tensor_kernel)
    with kernels_off():
        xp_ms = maybe(lambda: time_cupy(xp_version))
    flat = [cp.concatenate([a.reshape(-1) for a in arrays_]) for arrays_ in (w, g, m, v)]
    flat_ms = time_cupy(
        lambda: kernels.adamw_step(cp, *flat, 1e-3, 0.9, 0.99, 1e-8, 10, weight_decay=0.1)
    )
    multiplier = cp.asarray(0.5, dtype=np.float32)
    clip_ms = time_cupy(lambda: kernels.clip_multiplier(cp, g, 1.0, multiplier))
    t_fused = t_foreach = None
    if torch is not None:
        tparams = [torch.nn.Parameter(torch.randn(s, device="cuda") * 0.02) for s in shapes]
        for p in tparams:
            p.grad = torch.randn_like(p)
        results = {}
        for name, options in (("fused", {"fused": True}), ("foreach", {"foreach": True})):
            optimiser = torch.optim.AdamW(
                tparams, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1, **options
            )
            results[name] = maybe(lambda: time_torch(optimiser.step))
        t_fused, t_foreach = results["fused"], results["foreach"]
    record("adamw multi-tensor (1 launch)", shape, bytes_moved, None, ours, xp_ms, t_fused)
    record("adamw per-tensor kernel", shape, bytes_moved, None, per_tensor, xp_ms, t_foreach)
    record("adamw flat buffer (1 tensor)", shape, bytes_moved, None, flat_ms, xp_ms, t_fused)
    record("grad norm + clip multiplier", shape, 4 * n_params, None, clip_ms, None, None)


def bench_cast(rng):
    """Mixed precision's backward casts: every parameter's 16-bit gradient widened to float32,
    one launch each (the GPU work is small: the time is mostly the host's launches)."""
    print("\n== backward casts (GPT parameter list: V=1024, T=256, E=384, 6 layers)", flush=True)
    shapes = gpt_parameter_shapes()
    n = sum(math.prod(s) for s in shapes)
    for dtype in [d for d in ARGS.dtypes if d != "float32"] or ["bfloat16"]:
        grads = [
            cp.asarray(rng.standard_normal(s, dtype=np.float32).astype(dtype_of(dtype)))
            for s in shapes
        ]
        ours = time_cupy(lambda: [kernels.widen(g) for g in grads])
        xp_ms = time_cupy(lambda: [g.astype(np.float32) for g in grads])
        shape = f"{len(shapes)} tensors {dtype}"
        record("widen (kernel) vs astype", shape, 6 * n, None, ours, xp_ms, None)


def bench_attention(rng):
    print("\n== causal attention", flush=True)
    for B, T, H, D in ((64, 256, 6, 64), (16, 1024, 6, 64), (32, 256, 4, 128)):
        E = H * D
        for dtype in ARGS.dtypes + (["tf32"] if "float32" in ARGS.dtypes else []):
            with tf32_if(dtype):
                _bench_attention_shape(rng, B, T, H, D, E, dtype)


def _bench_attention_shape(rng, B, T, H, D, E, dtype):
    """One row pair (forward, backward) of ``bench_attention``; "tf32": float32 storage under
    the TF32 policy (tensor cores), whose xp column is left out."""
    qkv, tqkv = device_pair(rng, (B, T, 3 * E), dtype)
    dout, tdout = device_pair(rng, (B, T, E), dtype)
    shape = f"B={B} T={T} H={H} D={D} {dtype}"
    flops_fwd = 4 * B * H * D * T * (T + 1) / 2  # QK^T and PV, causal half
    out, saved = kernels.attention_forward(cp, qkv, H)
    xp_fwd = xp_bwd = None
    if dtype == "float32" or (dtype != "tf32" and ARGS.xp_half_attention):
        with kernels_off():
            xp_fwd = maybe(lambda: time_cupy(lambda: attention_forward(cp, qkv, H)))
            xp_saved = maybe(lambda: attention_forward(cp, qkv, H)[1])
            if xp_saved is not None:
                xp_bwd = maybe(lambda: time_cupy(lambda: attention_backward(cp, dout, xp_saved)))
            del xp_saved
    t_fwd = t_bwd = None
    if torch is not None:
        q, k, v = (
            t.view(B, T, H, D).transpose(1, 2) for t in tqkv.split(E, dim=-1)
        )  # (B, H, T, D) views, as the model would pass them

        def sdpa():
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        t_fwd = time_torch(sdpa)
        leaf = tqkv.detach().requires_grad_()
        tgrad = tdout.view(B, T, H, D).transpose(1, 2)

        def sdpa_both():
            lq, lk, lv = (t.view(B, T, H, D).transpose(1, 2) for t in leaf.split(E, dim=-1))
            F.scaled_dot_product_attention(lq, lk, lv, is_causal=True).backward(tgrad)
            leaf.grad = None

        both = maybe(lambda: time_torch(sdpa_both))
        t_bwd = None if both is None else both - t_fwd
    ours_fwd = time_cupy(lambda: kernels.attention_forward(cp, qkv, H))
    record("attention fwd", shape, None, flops_fwd, ours_fwd, xp_fwd, t_fwd)
    ours_bwd = time_cupy(lambda: kernels.attention_backward(cp, dout, saved))
    record("attention bwd", shape, None, 2.5 * flops_fwd, ours_bwd, xp_bwd, t_bwd)


CASES = {
    "softmax": bench_softmax,
    "layer_norm": bench_layer_norm,
    "gelu": bench_gelu,
    "cross_entropy": bench_cross_entropy,
    "embedding": bench_embedding,
    "adamw": bench_adamw,
    "cast": bench_cast,
    "attention": bench_attention,
}


# ====================================================================== report
def table(bandwidth: float) -> str:
    head = (
        f"{'kernel':<30} {'shape':<30} {'floor us':>9} {'ours us':>9} {'xp us':>9} "
        f"{'torch us':>9} {'xp/ours':>8} {'torch/ours':>10} {'ours vs floor':>13}"
    )
    lines = [head, "-" * len(head)]
    for row in ROWS:
        ours, xp, th = row["ours"], row["xp"], row["torch"]
        floor = None
        if row["bytes"]:
            floor = row["bytes"] / bandwidth * 1e3  # ms
        elif row["flops"]:
            floor = row["flops"] / (ARGS.fp32_tflops * 1e12) * 1e3  # fp32 FFMA peak
        cells = [f"{row['name']:<30}", f"{row['shape'][:30]:<30}"]
        for value in (floor, ours, xp, th):
            cells.append(f"{'-' if value is None else f'{value * 1e3:.1f}':>9}")
        cells.append(f"{'-' if not (ours and xp) else f'{xp / ours:.2f}':>8}")
        cells.append(f"{'-' if not (ours and th) else f'{th / ours:.2f}':>10}")
        cells.append(f"{'-' if not (ours and floor) else f'{ours / floor:.2f}x':>13}")
        lines.append(" ".join(cells))
    return "\n".join(lines)


def main():
    global cp, ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=None)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--inner", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dtypes", nargs="*", default=["float32", "bfloat16"])
    parser.add_argument("--fp32-tflops", type=float, default=60.0, help="FFMA peak for floors")
    parser.add_argument("--xp-half-attention", action="store_true")
    parser.add_argument("--no-matmul-probe", action="store_true")
    parser.add_argument("--json", default=None)
    ARGS = parser.parse_args()
    if ARGS.quick:
        ARGS.repeats, ARGS.inner = 5, 2
    if not backend.cupy_available():
        sys.exit("gpu_kernels.py: no CUDA GPU (cupy missing or no device)")
    cp = backend.cupy()
    device = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(device.id)["name"].decode()
    print(f"device: {name}; cupy {cp.__version__}; torch {torch and torch.__version__}")
    compiled = kernels.compile_all()  # compile outside the timed regions
    print(f"compiled {compiled} kernel instantiations", flush=True)
    bandwidth = measure_bandwidth()
    print(f"device-to-device copy: {bandwidth / 1e12:.2f} TB/s (read + write)", flush=True)
    matmul = {} if ARGS.no_matmul_probe else probe_matmul()

    rng = np.random.default_rng(0)
    for case in ARGS.only or list(CASES):
        try:
            CASES[case](rng)
        except Exception:
            print(f"!! {case} failed:\n{traceback.format_exc()}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            torch.cuda.empty_cache()

    print(f"\n== summary ({name}; floors: copy bandwidth {bandwidth / 1e12:.2f} TB/s, "
          f"attention: {ARGS.fp32_tflops:.0f} TFLOP/s fp32)")  # fmt: skip
    print(table(bandwidth))
    if ARGS.json:
        Path(ARGS.json).write_text(
            json.dumps(
                {"device": name, "bandwidth": bandwidth, "matmul": matmul, "rows": ROWS}, indent=1
            )  # fmt: skip
        )


if __name__ == "__main__":
    main()
