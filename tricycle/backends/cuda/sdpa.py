"""General scaled dot-product attention (``tricycle.nn.sdpa``) as CUDA kernels (sdpa.cu).

Flash attention on the GPU for every case the reference covers: an additive bias broadcast
over batch, heads and queries (a key padding mask is read in place, never expanded), causal,
sliding windows, cross-attention (Tq != Tk), grouped key/value heads, any scale, and the
attention dropout of ``tricycle.dropout_mask`` (the same mask, recomputed from the seed). No
(B, H, Tq, Tk) array exists: the forward saves the output and each row's log-sum-exp, and
the backward recomputes the probabilities from them, as the reference's backward does.

Both functions take and return what the reference's ``sdpa_forward`` and ``sdpa_backward``
do; the saved log-sum-exp is float32 (natural log, as the reference's) for every storage
dtype, so either half may be paired with the other. Storage float32, float16 or bfloat16;
arithmetic float32 on CUDA cores. q, k and v are read in place when their last axis is
contiguous (the encoder's head views are). Head dims up to 256 (D and Dv may differ); larger
ones, float64 and empty inputs run the reference (``sdpa_applies``).
"""

import math

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.dropout import dropout_threshold, seed_array
from tricycle.backends.cuda.launch import CTYPES, compiled, contiguous, ctype

OP = "scaled_dot_product_attention"
HEAD_DIMS = (8, 16, 32, 64, 128, 256)  # the padded head dims DP the kernels are built for
THREADS = 128  # per block (SDPA_THREADS)
_MAX_TILES = 65535  # query or key tiles: the grid's y axis


def padded_head_dim(D: int, Dv: int) -> int | None:
    """The smallest DP of HEAD_DIMS holding both head dims, None above 256."""
    return next((dp for dp in HEAD_DIMS if dp >= max(D, Dv)), None)


def rows_per_block(dp: int) -> int:
    """BR of sdpa.cu: a row takes DP / min(DP, 32) threads of the block's 128."""
    return THREADS // (dp // min(dp, 32))


def sdpa_applies(q, k, v, bias=None) -> bool:
    """Whether the kernels take these arrays: (B, H, Tq, D), (B, Hkv, Tk, D), (B, Hkv, Tk, Dv)
    with head dims up to 256, nothing empty, and the grid's limits."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4 or 0 in q.shape or 0 in k.shape or 0 in v.shape:
        return False
    B, H, Tq, D = q.shape
    Hkv, Tk, Dv = k.shape[1], k.shape[2], v.shape[3]
    dp = padded_head_dim(D, Dv)
    if dp is None or H % Hkv or max(Tq, Tk) >= 2**30 or B * H >= 2**31:
        return False
    return -(-max(Tq, Tk) // rows_per_block(dp)) <= _MAX_TILES


def _heads(cp, x):
    """x (B, H, T, D) with a contiguous last axis (a copy only if it has none) and its (B, H,
    T) strides in elements."""
    if (x.shape[-1] > 1 and x.strides[-1] != x.itemsize) or any(s % x.itemsize for s in x.strides):
        x = cp.ascontiguousarray(x)
    return x, tuple(np.int64(s // x.itemsize) for s in x.strides[:3])


def _bias(cp, bias, dtype, shape):
    """(array, its four strides in elements broadcast to ``shape``, has_bias) of the
    additive mask; a zero-stride broadcast view, so nothing is expanded."""
    if bias is None:
        return cp.zeros(1, dtype=dtype), (np.int64(0),) * 4, np.int32(0)
    if bias.dtype != dtype:
        bias = bias.astype(dtype)
    view = cp.broadcast_to(bias.reshape((1,) * (4 - bias.ndim) + bias.shape), shape)
    return view, tuple(np.int64(s // view.itemsize) for s in view.strides), np.int32(1)


def _dropout(dropout) -> tuple:
    """(seed array, threshold, 1 / (1 - p)) as the kernels read them; threshold 0: none."""
    probability = 0.0 if dropout is None else dropout.probability
    if not probability:
        return seed_array(None), np.uint32(0), np.float32(1.0)
    threshold = dropout_threshold(probability)
    return seed_array(dropout.seed), np.uint32(threshold), np.float32(1 / (1 - probability))


def _arguments(cp, q, k, v, bias, causal, window, scale):
    """(q, k, v as read, the kernels' shared arguments after the arrays, DP, BR)."""
    B, H, Tq, D = q.shape
    Hkv, Tk, Dv = k.shape[1], k.shape[2], v.shape[3]
    (q, q_strides), (k, k_strides), (v, v_strides) = (_heads(cp, x) for x in (q, k, v))
    bias, bias_strides, has_bias = _bias(cp, bias, q.dtype, (B, H, Tq, Tk))
    window = 0 if window is None else min(int(window), Tq + Tk + 1)  # beyond: no effect
    dims = (np.int32(H), np.int32(Hkv), np.int32(Tq), np.int32(Tk), np.int32(D), np.int32(Dv))
    strides = q_strides + k_strides + v_strides + bias_strides
    dp = padded_head_dim(D, Dv)
    return q, k, v, bias, strides + dims, (np.int32(causal), np.int32(window), has_bias), dp


def sdpa_forward(xp, q, k, v, bias=None, causal=False, window=None, scale=None, dropout=None):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_forward``: same arguments, same
    results (out (B, H, Tq, Dv) and saved, with lse (B, H, Tq) in float32)."""
    cp = backend.cupy()
    B, H, Tq, D = q.shape
    scale = 1 / math.sqrt(D) if scale is None else scale
    out = cp.empty((B, H, Tq, v.shape[3]), dtype=q.dtype)
    lse = cp.empty((B, H, Tq), dtype=np.float32)
    qr, kr, vr, bias_r, head, flags, dp = _arguments(cp, q, k, v, bias, causal, window, scale)
    kernel = compiled("sdpa.cu", "sdpa_forward_kernel", ctype(q), str(dp))
    kernel(
        (B * H, -(-Tq // rows_per_block(dp))),
        (THREADS,),
        (qr, kr, vr, bias_r, out, lse) + head + (np.float32(scale * math.log2(math.e)),)
        + flags + _dropout(dropout),
    )  # fmt: skip
    return out, (q, k, v, bias, out, lse, causal, window, scale, dropout)


def sdpa_backward(xp, dout, saved):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_backward``: (dq, dk, dv)."""
    cp = backend.cupy()
    q, k, v, bias, out, lse, causal, window, scale, dropout = saved
    B, H, Tq, _ = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    dout = contiguous(cp, dout, q.dtype)
    out = contiguous(cp, out, q.dtype)
    lse = contiguous(cp, lse, np.float32)  # the reference saves it in q's dtype
    dq, dk, dv = (cp.empty(x.shape, dtype=q.dtype) for x in (q, k, v))
    delta = cp.empty((B, H, Tq), dtype=np.float32)
    qr, kr, vr, bias_r, head, flags, dp = _arguments(cp, q, k, v, bias, causal, window, scale)
    scales = (np.float32(scale * math.log2(math.e)), np.float32(scale))
    tail = head + scales + flags + _dropout(dropout)
    rows = rows_per_block(dp)
    dq_kernel = compiled("sdpa.cu", "sdpa_backward_dq_kernel", ctype(q), str(dp))
    dq_kernel((B * H, -(-Tq // rows)), (THREADS,),
              (qr, kr, vr, bias_r, out, dout, lse, delta, dq) + tail)  # fmt: skip
    dkv_kernel = compiled("sdpa.cu", "sdpa_backward_dkv_kernel", ctype(q), str(dp))
    dkv_kernel((B * Hkv, -(-Tk // rows)), (THREADS,),
               (qr, kr, vr, bias_r, dout, lse, delta, dk, dv) + tail)  # fmt: skip
    return dq, dk, dv


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [
        ("sdpa.cu", f"sdpa_{name}_kernel", (t, str(dp)))
        for t in CTYPES.values()
        for dp in HEAD_DIMS
        for name in ("forward", "backward_dq", "backward_dkv")
    ]


dispatch.add(OP, "cuda", (sdpa_forward, sdpa_backward), dtypes=tuple(CTYPES),
             applies=sdpa_applies)  # fmt: skip
