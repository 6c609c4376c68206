"""Flash-style causal attention on the GPU (attention.cu): tiled, online softmax, no (B, H, T, T)
matrix; saves only the output and the log-sum-exp of each row."""

import math

import numpy as np

from tricycle import backend
from tricycle.dropout_mask import dropout_threshold
from tricycle.kernels.launch import CTYPES, KernelSaved, compiled, ctype, enabled

HEAD_DIMS = (32, 64, 128)
_LOG2E = 1.4426950408889634


def attention_enabled(qkv, n_heads: int) -> bool:
    """``enabled(qkv)`` and a shape the attention kernels handle: (B, T, 3E), D in 32/64/128."""
    if not enabled(qkv) or qkv.ndim != 3 or qkv.shape[-1] % (3 * n_heads):
        return False
    return qkv.shape[-1] // (3 * n_heads) in HEAD_DIMS and qkv.shape[0] * n_heads < 65536


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


def _dropout_args(probability: float, seed: int) -> tuple:
    """(seed, threshold, 1 / (1 - p)) as the kernels take them; threshold 0 means no dropout.
    The mask is ``tricycle.dropout_mask.keep_bits``', bit for bit."""
    threshold = dropout_threshold(probability)
    return np.uint32(seed % 2**32), np.uint32(threshold), np.float32(1 / (1 - probability))


def attention_forward(xp, qkv, n_heads: int, dropout_prob: float = 0.0, seed: int = 0):
    """Causal attention of packed qkv (B, T, 3E) -> (out (B, T, E), saved), flash style.

    As ``tricycle.attention.attention_forward``, but saved = (qkv, out, lse, n_heads, dropout
    arguments) with lse (B, H, T) float32 (base 2): no (B, H, T, T) array exists at any point.
    ``dropout_prob`` drops probabilities with the mask of ``seed``.
    """
    cp = backend.cupy()
    qkv = _aligned(cp, qkv)
    B, T, E, D = _attention_shapes(qkv, n_heads)
    out = cp.empty((B, T, E), dtype=qkv.dtype)
    lse = cp.empty((B, n_heads, T), dtype=np.float32)
    dropout = _dropout_args(dropout_prob, seed)
    if B and T:
        rows_per_block = 128 // (D // 32)
        kernel = compiled("attention.cu", "attention_forward_kernel", ctype(qkv), str(D))
        kernel(
            (-(-T // rows_per_block), B * n_heads),
            (128,),
            (qkv, out, lse, np.int32(T), np.int32(n_heads), np.float32(_LOG2E / math.sqrt(D)))
            + dropout,
        )
    return out, KernelSaved((qkv, out, lse, n_heads, dropout))


def attention_backward(xp, dout, saved):
    """dqkv (B, T, 3E) from dout (B, T, E) and a kernel forward's ``saved``."""
    cp = backend.cupy()
    qkv, out, lse, n_heads, dropout = saved
    B, T, E, D = _attention_shapes(qkv, n_heads)
    dout = _aligned(cp, dout if dout.dtype == qkv.dtype else dout.astype(qkv.dtype))
    dqkv = cp.empty_like(qkv)
    if B == 0 or T == 0:
        return dqkv
    delta = cp.empty((B, n_heads, T), dtype=np.float32)
    grid = (-(-T // (128 // (D // 32))), B * n_heads)
    scale = 1.0 / math.sqrt(D)
    dims = (np.int32(T), np.int32(n_heads), np.float32(_LOG2E * scale), np.float32(scale))
    dims += dropout
    dq = compiled("attention.cu", "attention_backward_dq_kernel", ctype(qkv), str(D))
    dq(grid, (128,), (qkv, out, dout, lse, delta, dqkv) + dims)  # also writes delta
    dkv = compiled("attention.cu", "attention_backward_dkv_kernel", ctype(qkv), str(D))
    dkv(grid, (128,), (qkv, dout, lse, delta, dqkv) + dims)
    return dqkv


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("attention.cu", f"attention_{name}_kernel", (t, str(d)))
        for t in CTYPES.values()
        for d in HEAD_DIMS
        for name in ("forward", "backward_dq", "backward_dkv")
    ]
