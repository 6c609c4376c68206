"""Flash-style causal attention on the GPU: tiled, online softmax, no (B, H, T, T) matrix; saves
only the output and the log-sum-exp of each row.

float16 and bfloat16 with head dims 64 and 128 run on tensor cores (attention_mma.cu,
FlashAttention-2's design with mma.sync), and so does float32 under a TF32 policy (TF32
operands, as the policy's cuBLAS products); plain float32 and head dim 32 run on CUDA cores
(attention.cu). All take and save the same arrays.
"""

import math

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.dropout import seed_array
from tricycle.backends.cuda.gemm import tf32_enabled
from tricycle.backends.cuda.launch import CTYPES, KernelSaved, compiled, ctype, enabled

HEAD_DIMS = (32, 64, 128)  # the CUDA-core kernels (attention.cu), every float dtype
MMA_HEAD_DIMS = (64, 128)  # the tensor-core kernels (attention_mma.cu): 16-bit dtypes, TF32
_LOG2E = 1.4426950408889634


def attention_enabled(qkv, n_heads: int) -> bool:
    """``enabled(qkv)`` and a shape the attention kernels handle: (B, T, 3E), D in 32/64/128."""
    if not enabled(qkv) or qkv.ndim != 3 or qkv.shape[-1] % (3 * n_heads):
        return False
    return qkv.shape[-1] // (3 * n_heads) in HEAD_DIMS and qkv.shape[0] * n_heads < 65536


def heads_enabled(q, k, v) -> bool:
    """``attention_enabled`` for the op's q, k, v views (B, H, T, D) of its packed qkv."""
    B, H, _, D = q.shape
    return enabled(q) and k.shape == q.shape and D in HEAD_DIMS and B * H < 65536


def _attention_shapes(qkv, n_heads: int) -> tuple[int, int, int, int]:
    B, T, three_e = qkv.shape
    D = three_e // (3 * n_heads)
    if three_e != 3 * n_heads * D or D not in HEAD_DIMS:
        raise ValueError(
            f"attention kernel: qkv of shape {qkv.shape} with {n_heads} heads gives head dim "
            f"{three_e / (3 * n_heads)}; the kernels handle {HEAD_DIMS}"
        )
    return B, T, three_e // 3, D


def _aligned(cp, a):
    """Contiguous and 16-byte aligned (the kernels load 4 elements at a time)."""
    a = cp.ascontiguousarray(a)
    return a if a.data.ptr % 16 == 0 else a.copy()


def _dropout_args(probability: float, seed) -> tuple:
    """(seed, threshold, 1 / (1 - p)) as the kernels take them; threshold 0 means no dropout.
    The mask is ``tricycle.dropout_mask.keep_bits``', bit for bit. The kernels read the seed
    from device memory (``kernels.dropout.seed_array``), so that a captured step's replays
    each draw anew. ``seed``: an int, or such a device array (``capture.step_seed``'s, which
    the layer draws through ``Dropout.step_seed``)."""
    threshold = min(int(round(probability * 2**32)), 2**32 - 1)  # dropout_mask's threshold
    seed = seed_array(seed if threshold else None)
    return seed, np.uint32(threshold), np.float32(1 / (1 - probability))


def uses_tensor_cores(dtype, head_dim: int, tf32: bool | None = None) -> bool:
    """Whether attention of this storage dtype and head dim runs on tensor cores
    (attention_mma.cu, D 64 or 128: float16 and bfloat16, and float32 when ``tf32``) rather
    than CUDA cores. ``tf32`` None: whether float32 products use TF32 now (a TF32 policy)."""
    if head_dim not in MMA_HEAD_DIMS:
        return False
    if dtype.itemsize == 2:
        return True
    return dtype == np.float32 and (tf32_enabled() if tf32 is None else tf32)


# rows of each streamed tile (keys; queries in the dK/dV kernel) per tensor-core kernel and head
# dim. 16-bit: the largest that fit in 255 registers without spilling; TF32 (float32 tiles): the
# largest that keep two blocks of 128 threads on an SM (shared memory)
TILES = {
    ("forward", 64): 64,
    ("forward", 128): 64,
    ("backward_dq", 64): 64,
    ("backward_dq", 128): 32,
    ("backward_dkv", 64): 64,
    ("backward_dkv", 128): 32,
}
TF32_TILES = {
    ("forward", 64): 64,
    ("forward", 128): 32,
    ("backward_dq", 64): 64,
    ("backward_dq", 128): 16,
    ("backward_dkv", 64): 64,
    ("backward_dkv", 128): 16,
}
_TILES_OF = {"half_t": TILES, "bf16_t": TILES, "float": TF32_TILES}  # storage C type -> tiles
MMA_ROWS = 64  # the rows a block owns: 16 per warp


def _mma_shared_bytes(kernel: str, D: int, itemsize: int, streamed: int) -> int:
    """Dynamic shared memory of a tensor-core kernel: rows of D elements padded by 16 bytes;
    each kernel holds its own 64 rows (Q in the forward; Q and dO in the dQ kernel; K and V in
    the dK/dV kernel) and two stages of each of two tiles of ``streamed`` rows (K and V; Q and
    dO)."""
    own = 1 if kernel == "forward" else 2
    return itemsize * (D + 16 // itemsize) * (own * MMA_ROWS + 4 * streamed)


_raised: set = set()  # (kernel, template arguments, device) with the shared-memory limit raised


def _mma_kernel(name: str, dtype_ctype: str, D: int):
    """(kernel, dynamic shared bytes) of the tensor-core kernel ``name`` for this storage type
    ("float": TF32), with its dynamic shared-memory limit raised past the default 48 KB once
    per device."""
    cp = backend.cupy()
    streamed = _TILES_OF[dtype_ctype][(name, D)]
    args = (dtype_ctype, str(D), str(streamed))
    kernel = compiled("attention_mma.cu", f"attention_mma_{name}_kernel", *args)
    shared = _mma_shared_bytes(name, D, 4 if dtype_ctype == "float" else 2, streamed)
    key = (name, args, cp.cuda.runtime.getDevice())
    if key not in _raised:
        kernel.max_dynamic_shared_size_bytes = shared
        _raised.add(key)
    return kernel, shared


def attention_forward(xp, qkv, n_heads: int, dropout_prob: float = 0.0, seed: int = 0,
                      tensor_cores: bool | None = None):  # fmt: skip
    """Causal attention of packed qkv (B, T, 3E) -> (out (B, T, E), saved), flash style.

    As ``tricycle.attention.attention_forward``, but saved = (qkv, out, lse, n_heads, dropout
    arguments, tensor_cores) with lse (B, H, T) float32 (base 2): no (B, H, T, T) array exists
    at any point. ``dropout_prob`` drops probabilities with the mask of ``seed``.
    ``tensor_cores``: None picks them where they apply (``uses_tensor_cores``: for float32,
    only while a TF32 policy is entered; the backward follows the forward's choice); False
    forces the CUDA-core kernels (every dtype and head dim).
    """
    cp = backend.cupy()
    qkv = _aligned(cp, qkv)
    B, T, E, D = _attention_shapes(qkv, n_heads)
    if tensor_cores is None or tensor_cores:
        tensor_cores = uses_tensor_cores(qkv.dtype, D)
    out = cp.empty((B, T, E), dtype=qkv.dtype)
    lse = cp.empty((B, n_heads, T), dtype=np.float32)
    dropout = _dropout_args(dropout_prob, seed)
    args = (qkv, out, lse, np.int32(T), np.int32(n_heads), np.float32(_LOG2E / math.sqrt(D)))
    if B and T and tensor_cores:
        kernel, shared = _mma_kernel("forward", ctype(qkv), D)
        kernel((-(-T // MMA_ROWS), B * n_heads), (128,), args + dropout, shared_mem=shared)
    elif B and T:
        rows_per_block = 128 // (D // 32)
        kernel = compiled("attention.cu", "attention_forward_kernel", ctype(qkv), str(D))
        kernel((-(-T // rows_per_block), B * n_heads), (128,), args + dropout)
    return out, KernelSaved((qkv, out, lse, n_heads, dropout, tensor_cores))


def attention_backward(xp, dout, saved):
    """dqkv (B, T, 3E) from dout (B, T, E) and a kernel forward's ``saved``."""
    cp = backend.cupy()
    qkv, out, lse, n_heads, dropout, tensor_cores = saved
    B, T, E, D = _attention_shapes(qkv, n_heads)
    dout = _aligned(cp, dout if dout.dtype == qkv.dtype else dout.astype(qkv.dtype))
    dqkv = cp.empty_like(qkv)
    if B == 0 or T == 0:
        return dqkv
    delta = cp.empty((B, n_heads, T), dtype=np.float32)
    scale = 1.0 / math.sqrt(D)
    dims = (np.int32(T), np.int32(n_heads), np.float32(_LOG2E * scale), np.float32(scale))
    dims += dropout
    dq_args = (qkv, out, dout, lse, delta, dqkv) + dims  # the dQ kernel also writes delta
    dkv_args = (qkv, dout, lse, delta, dqkv) + dims
    if tensor_cores:
        grid = (-(-T // MMA_ROWS), B * n_heads)
        dq, shared = _mma_kernel("backward_dq", ctype(qkv), D)
        dq(grid, (128,), dq_args, shared_mem=shared)
        dkv, shared = _mma_kernel("backward_dkv", ctype(qkv), D)
        dkv(grid, (128,), dkv_args, shared_mem=shared)
        return dqkv
    grid = (-(-T // (128 // (D // 32))), B * n_heads)
    dq = compiled("attention.cu", "attention_backward_dq_kernel", ctype(qkv), str(D))
    dq(grid, (128,), dq_args)
    dkv = compiled("attention.cu", "attention_backward_dkv_kernel", ctype(qkv), str(D))
    dkv(grid, (128,), dkv_args)
    return dqkv


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("attention.cu", f"attention_{name}_kernel", (t, str(d)))
        for t in CTYPES.values()
        for d in HEAD_DIMS
        for name in ("forward", "backward_dq", "backward_dkv")
    ] + [
        ("attention_mma.cu", f"attention_mma_{name}_kernel", (t, str(d), str(streamed)))
        for t, tiles in _TILES_OF.items()
        for (name, d), streamed in tiles.items()
    ]


# dispatch: the pair replaces the reference's (forward, backward) for the op "attention",
# which asks with its q, k, v views (B, H, T, D)
dispatch.add(
    "attention",
    "cuda",
    (attention_forward, attention_backward),
    dtypes=("float32", "float16", "bfloat16"),
    applies=heads_enabled,
)
