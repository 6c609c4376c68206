"""Fused causal scaled-dot-product attention.

One forward and one hand-derived backward, llm.c style, on the packed projection
``qkv`` of shape (B, T, 3E) (queries | keys | values along the last axis)::

    out, saved = attention_forward(xp, qkv, n_heads)   # out: (B, T, E), heads merged
    dqkv = attention_backward(xp, dout, saved)         # dqkv: (B, T, 3E)

With S = q k^T / sqrt(D) masked to -inf above the diagonal, P = softmax(S) and O = P v::

    dv = P^T dO        dP = dO v^T        dS = P * (dP - rowsum(dO * O))
    dq = dS k / sqrt(D)                   dk = dS^T q / sqrt(D)

using flash-attention's identity rowsum(dP * P) = rowsum(dO * O), which avoids a (T, T) product.

Attention dropout (nanoGPT's ``attn_dropout``, torch's ``dropout_p``) zeroes probabilities after
the softmax and scales the rest by 1 / (1 - p): O = (P * M) v with M = keep / (1 - p). Then
dv = (P * M)^T dO, dS = P * (M * dP~ - rowsum(dO * O)) with dP~ = dO v^T, and the same identity
holds (rowsum(dP * P) = rowsum(dP~ * P * M) = rowsum(dO * O)). The keep mask is never stored:
it is a counter-based hash of (seed, batch * head, query, key) (``tricycle.dropout_mask``), so
the forward and the backward, and every kernel, draw exactly the same mask.

This reference keeps the (B, H, T, T) probabilities. Kernels registered for the op
"attention" (a (forward, backward) pair: they save log-sum-exps instead and never hold a
(T, T) array) take its place through ``tricycle.dispatch``.

``causal_attention(qkv, n_heads)`` (or the op ``Attention(n_heads)``) wraps the pair as a
Tensor op. ``attend_with_cache`` is the generation path: new queries attend to keys and values
kept in a ``KVCache``, so each new token costs one position; it builds no graph.
"""

import math

import numpy as np

from tricycle import checks, dispatch
from tricycle.dropout_mask import attention_multiplier, mask_seed
from tricycle.tensor import Tensor

# ------------------------------------------------------------------ array functions


def split_heads(x, n_heads: int):
    """(B, T, 3E) -> q, k, v views of shape (B, H, T, D); nothing is copied."""
    B, T, three_e = x.shape
    if three_e % (3 * n_heads):
        raise ValueError(
            f"attention: the last axis of qkv (shape {x.shape}) must be 3 * embedding_dim "
            f"with embedding_dim divisible by n_heads={n_heads}"
        )
    D = three_e // (3 * n_heads)
    heads = x.reshape(B, T, 3, n_heads, D).transpose(2, 0, 3, 1, 4)  # (3, B, H, T, D)
    return heads[0], heads[1], heads[2]


def causal_softmax(xp, q, k):
    """Probabilities softmax(q k^T / sqrt(D)) (B, H, Tq, Tk) of queries q (B, H, Tq, D) that
    are the last Tq of the Tk positions of k (B, H, Tk, D): query i sees keys up to
    position i + Tk - Tq. Every query sees its own key, so no row is all -inf."""
    Tq, Tk, D = q.shape[2], k.shape[2], q.shape[3]
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(D)  # (B, H, Tq, Tk)
    future = xp.arange(Tk)[None, :] > xp.arange(Tq)[:, None] + (Tk - Tq)  # (Tq, Tk)
    scores[..., future] = -xp.inf
    scores -= scores.max(axis=-1, keepdims=True)  # stable softmax over the keys
    probs = xp.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs


def attention_forward(xp, qkv, n_heads: int, dropout_prob: float = 0.0, seed=0):
    """Causal multi-head attention of a packed (B, T, 3E) projection -> ((B, T, E), saved).

    With ``dropout_prob`` the probabilities are dropped with the mask of ``seed`` (an int, or
    a (1,) uint32 device array holding it). ``saved`` holds what
    ``attention_backward`` needs; nothing in it may be modified until the backward has run.
    """
    dtype = qkv.dtype
    qkv = qkv.astype(_product_dtype(xp, dtype), copy=False)
    B, T, three_e = qkv.shape
    q, k, v = split_heads(qkv, n_heads)  # (B, H, T, D) views
    probs = causal_softmax(xp, q, k)  # (B, H, T, T)
    dropped = probs
    if dropout_prob:
        dropped = probs * attention_multiplier(xp, seed, dropout_prob, probs.shape, qkv.dtype)
    out = (dropped @ v).transpose(0, 2, 1, 3).reshape(B, T, three_e // 3)  # (B, T, E)
    saved = (qkv, probs, out, n_heads, dropout_prob, seed, dtype)
    return out.astype(dtype, copy=False), saved


def attention_backward(xp, dout, saved):
    """Gradient of ``attention_forward``: dout (B, T, E) -> dqkv (B, T, 3E)."""
    qkv, probs, out, n_heads, dropout_prob, seed, dtype = saved
    B, T, E = out.shape
    D = E // n_heads
    q, k, v = split_heads(qkv, n_heads)  # (B, H, T, D) views
    dy = dout.astype(qkv.dtype, copy=False).reshape(B, T, n_heads, D).transpose(0, 2, 1, 3)
    y = out.reshape(B, T, n_heads, D).transpose(0, 2, 1, 3)  # (B, H, T, D)

    dprobs = dy @ v.swapaxes(-1, -2)  # dP~ (B, H, T, T)
    dropped = probs
    if dropout_prob:  # through the mask: dP = M dP~, and v saw P M
        multiplier = attention_multiplier(xp, seed, dropout_prob, probs.shape, qkv.dtype)
        dprobs *= multiplier
        dropped = probs * multiplier
    dv = dropped.swapaxes(-1, -2) @ dy
    # softmax backward: dS = P (dP - rowsum(dP P)), and rowsum(dP P) = rowsum(dO O); masked
    # entries have P == 0, so their gradient is exactly 0
    dscores = probs * (dprobs - (dy * y).sum(axis=-1, keepdims=True)) / math.sqrt(D)
    dq = dscores @ k
    dk = dscores.swapaxes(-1, -2) @ q
    dqkv = xp.stack([dq, dk, dv], axis=1).transpose(0, 3, 1, 2, 4)  # (B, T, 3, H, D)
    return dqkv.reshape(B, T, 3 * E).astype(dtype, copy=False)


def _product_dtype(xp, dtype):
    """The dtype the batched products run in: cupy has none for bfloat16, so float32 there."""
    return np.dtype(np.float32) if xp is not np and dtype.name == "bfloat16" else dtype


# ------------------------------------------------------------------ the Tensor op


@checks.arguments(n_heads=checks.positive_int, dropout_prob=checks.probability, seed=mask_seed)
def causal_attention(qkv: Tensor, n_heads: int, dropout_prob: float = 0.0, seed=0) -> Tensor:
    """Fused causal self-attention: qkv (B, T, 3E) -> (B, T, E), as one node of the graph.

    ``dropout_prob`` drops attention probabilities (inverted dropout, as torch's
    ``scaled_dot_product_attention(dropout_p=...)``); ``seed`` picks the mask, and the same
    seed gives the same mask on every device. It is an int, or a (1,) uint32 device array
    holding it (``Dropout.step_seed`` while a CUDA graph is captured: each replay refills it).
    """
    if qkv.ndim != 3:
        raise ValueError(
            f"attention: expected qkv of shape (batch, tokens, 3 * embedding_dim), got {qkv.shape}"
        )
    xp = qkv.xp
    heads = split_heads(qkv.array, n_heads)  # q, k, v (B, H, T, D): a kernel's shapes
    forward, backward = dispatch.choose(
        "attention", (attention_forward, attention_backward), *heads
    )
    out, saved = forward(xp, qkv.array, n_heads, dropout_prob, seed)
    return Tensor(
        out,
        args=(qkv,),
        back_fns=(lambda dout: backward(xp, dout, saved),),
        name="attention",
    )


class Attention:
    """The op form of ``causal_attention``: ``Attention(n_heads)(qkv)``. Stateless."""

    @checks.arguments(n_heads=checks.positive_int)
    def __init__(self, n_heads: int):
        self.n_heads = n_heads

    def __call__(self, qkv: Tensor, dropout_prob: float = 0.0, seed: int = 0) -> Tensor:
        return causal_attention(qkv, self.n_heads, dropout_prob, seed)


# ------------------------------------------------------------------ generation


class KVCache:
    """Keys and values of the positions seen so far, for one attention layer.

    Arrays of shape (B, H, capacity, D) are filled left to right; ``length`` says how many
    positions are valid (a host int). Made by ``GPT.new_caches`` (each attention layer's
    ``new_cache``) and held by the generation loop (``tricycle.decode.sample``); no layer keeps
    one. ``tricycle.decode.FixedKVCache`` counts on the device instead.
    """

    def __init__(self, xp, batch_size: int, n_heads: int, capacity: int, head_dim: int, dtype):
        shape = (batch_size, n_heads, capacity, head_dim)
        self.keys = xp.zeros(shape, dtype=dtype)
        self.values = xp.zeros(shape, dtype=dtype)
        self.length = 0

    @property
    def capacity(self) -> int:
        return self.keys.shape[2]

    @property
    def host_length(self) -> int | None:
        """The positions filled, as a host int (None where only the device knows it)."""
        return self.length

    def positions(self, xp, count: int):
        """The positions (count,) of the next ``count`` tokens."""
        return xp.arange(self.length, self.length + count)

    def attend(self, xp, q, k, v):
        """Append k, v (B, H, Tnew, D) and attend the queries q (B, H, Tnew, D) of the same
        positions to every filled position -> (B, Tnew, H, D)."""
        T_new = q.shape[2]
        start, end = self.length, self.length + T_new
        if end > self.capacity:
            raise ValueError(
                f"attention: the KV cache holds {self.capacity} positions; {start} are used and "
                f"{T_new} more do not fit"
            )
        self.keys[:, :, start:end] = k
        self.values[:, :, start:end] = v
        self.length = end
        keys, values = self.keys[:, :, :end], self.values[:, :, :end]
        return dispatch.choose("attend", attend, q, keys, values)(xp, q, keys, values)


def attend(xp, q, k, v):
    """Causal softmax(q k^T / sqrt(D)) v of queries q (B, H, Tq, D) that are the last Tq of
    the Tk positions of k and v (B, H, Tk, D) -> (B, Tq, H, D), in q's dtype (the products
    in float32 where cupy has none for it: bfloat16)."""
    dtype, product = q.dtype, _product_dtype(xp, q.dtype)
    q, k, v = (x.astype(product, copy=False) for x in (q, k, v))
    return (causal_softmax(xp, q, k) @ v).transpose(0, 2, 1, 3).astype(dtype, copy=False)


def attend_with_cache(xp, qkv, n_heads: int, cache: KVCache):
    """Attention of new positions against themselves and every cached position.

    qkv: (B, Tnew, 3E) for the next Tnew positions. Their keys and values are appended to
    ``cache``; returns (B, Tnew, E). No graph, no saved arrays: for sampling under no_grad.
    """
    B, T_new, three_e = qkv.shape
    q, k, v = split_heads(qkv, n_heads)  # (B, H, Tnew, D)
    out = cache.attend(xp, q, k, v)  # (B, Tnew, H, D)
    return out.reshape(B, T_new, three_e // 3)  # (B, Tnew, E)


# ------------------------------------------------------------------ RoPE and grouped-query heads
# Llama-style attention rotates queries and keys by their position (RoPE) and lets groups of
# query heads share one key/value head (grouped-query attention, GQA). Both happen in one op,
# ``rope_qkv``, between the q|k|v projection and the fused attention above, which then sees an
# ordinary packed (B, T, 3E) input.
#
# The rotation is the "half-split" form of GPT-NeoX and Hugging Face's Llama: in a head of
# size D, element i pairs with element i + D/2 (not with its neighbour, as in Meta's original
# code; the two differ by a fixed permutation of the q and k projection weights). Pair i at
# position p turns by the angle p * theta^(-2i / D):
#
#     y[i]       = x[i] cos - x[i + D/2] sin          y[i + D/2] = x[i + D/2] cos + x[i] sin
#
# A rotation's inverse is its transpose, the rotation by minus the angle, so the backward
# rotates the gradient back: dx = rope_forward(dy, cos, -sin). Query head h uses key/value
# head h // (H / Hkv) (PyTorch's ``repeat_interleave``); the backward sums each group.
#
# A scaled RoPE stretches a model to a longer context by slowing rotations (the
# ``rope_parameters`` of transformers' configs). "linear" divides every frequency by
# ``factor`` (position interpolation). "llama3" (Llama 3.1's) divides only the slow ones, with
# wavelength 2 pi / f above L / low_freq_factor (L: original_max_position_embeddings, the
# context of pre-training), keeps the fast ones, below L / high_freq_factor, and between the
# two blends f / factor and f with the weight s = (L f / (2 pi) - low) / (high - low) of f.
ROPE_SCALINGS = {"linear": ("factor",), "llama3": ("factor", "low_freq_factor",
                 "high_freq_factor", "original_max_position_embeddings")}  # fmt: skip


def check_rope_scaling(owner: str, name: str, value, optional: bool = False):
    """The check of a RoPE scaling: None, or {"rope_type": one of ``ROPE_SCALINGS``, and
    that type's fields, each a finite number > 0}; "llama3" needs low_freq_factor <
    high_freq_factor."""
    if value is None:
        return value
    fields = ROPE_SCALINGS.get(value.get("rope_type")) if isinstance(value, dict) else None
    if fields and set(value) == {"rope_type", *fields}:
        numbers = [value[k] for k in fields]
        if all(checks.is_real(x) and 0 < x < math.inf for x in numbers):
            if value.get("low_freq_factor", 0) < value.get("high_freq_factor", 1):
                return value
    kinds = " or ".join(f"{{'rope_type': {t!r}, {', '.join(map(repr, f))}}}"
                        for t, f in ROPE_SCALINGS.items())  # fmt: skip
    expected = f"None or {kinds} (numbers > 0, low_freq_factor < high_freq_factor)"
    checks.fail(owner, name, expected, value, ValueError if isinstance(value, dict) else TypeError)


def rope_frequencies(xp, head_dim: int, theta: float, scaling: dict | None = None):
    """The rotation frequencies (head_dim / 2,) theta^(-2i / head_dim), in float64, slowed
    as ``scaling`` (None, or a dict that ``check_rope_scaling`` passes) says."""
    frequencies = theta ** (-xp.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    if scaling is None:
        return frequencies
    slowed = frequencies / scaling["factor"]
    if scaling["rope_type"] == "linear":
        return slowed
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    turns = scaling["original_max_position_embeddings"] * frequencies / (2 * math.pi)  # L / wave
    s = xp.clip((turns - low) / (high - low), 0.0, 1.0)  # 0: slow (scaled), 1: fast (kept)
    return (1 - s) * slowed + s * frequencies


def rope_tables(xp, start: int, length: int, head_dim: int, theta: float, dtype, scaling=None):
    """cos and sin (length, head_dim / 2) of the angles (start + t) * theta^(-2i / head_dim)
    for the positions start ... start + length - 1 (frequencies ``scaling``'s). In float64."""
    positions = xp.arange(start, start + length)
    return rope_tables_at(xp, positions, head_dim, theta, dtype, scaling)


def rope_tables_at(xp, positions, head_dim: int, theta: float, dtype, scaling=None):
    """cos and sin (T, head_dim / 2) of the angles p * theta^(-2i / head_dim) (as
    ``rope_frequencies``) of the integer positions p (T,), an array on the device (a decode
    step's position is counted there)."""
    if head_dim % 2:
        raise ValueError(f"RoPE: the head size must be even to rotate pairs, got {head_dim}")
    frequencies = rope_frequencies(xp, head_dim, theta, scaling)  # (D/2,)
    angles = positions.astype(np.float64)[:, None] * frequencies  # (T, D/2)
    return xp.cos(angles).astype(dtype), xp.sin(angles).astype(dtype)


def rope_forward(xp, x, cos, sin, out=None):
    """Rotate x (..., T, heads, D) by the angles of ``cos``/``sin`` (T, D/2), half-split
    pairs; into ``out`` (x's shape) if given."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[:, None, :], sin[:, None, :]  # (T, 1, D/2): broadcast over the heads
    out = xp.empty(x.shape, dtype=x.dtype) if out is None else out
    out[..., :half] = x1 * c - x2 * s
    out[..., half:] = x2 * c + x1 * s
    return out


def rope_backward(xp, dy, cos, sin, out=None):
    """The gradient of ``rope_forward``: the inverse rotation of dy."""
    return rope_forward(xp, dy, cos, -sin, out)


def rotary_embedding(x: Tensor, cos, sin) -> Tensor:
    """RoPE as an op: x (B, T, heads, D) rotated by position (``rope_tables``)."""
    if x.ndim != 4 or cos.shape != (x.shape[1], x.shape[3] // 2) or x.shape[3] % 2:
        raise ValueError(
            f"RoPE: expected x (batch, tokens, heads, even head size) and tables (tokens, head "
            f"size / 2), got x {x.shape} and tables {tuple(cos.shape)}"
        )
    xp = x.xp
    return Tensor(
        rope_forward(xp, x.array, cos, sin),
        args=(x,),
        back_fns=(lambda dy: rope_backward(xp, dy, cos, sin),),
        name="rope",
    )


def rope_qkv_forward(xp, qkv, cos, sin, n_heads: int, n_kv_heads: int):
    """(B, T, (H + 2 Hkv) D) projections q | k | v -> (B, T, 3 H D) for ``attention_forward``:
    q and k rotated, k and v repeated for each query head of their group."""
    B, T, width = qkv.shape
    D, group = width // (n_heads + 2 * n_kv_heads), n_heads // n_kv_heads
    heads = qkv.reshape(B, T, n_heads + 2 * n_kv_heads, D)
    out = xp.empty((B, T, 3, n_heads, D), dtype=qkv.dtype)
    rope_forward(xp, heads[:, :, :n_heads], cos, sin, out=out[:, :, 0])
    k = rope_forward(xp, heads[:, :, n_heads : n_heads + n_kv_heads], cos, sin)  # (B,T,Hkv,D)
    v = heads[:, :, n_heads + n_kv_heads :]
    for i, kv in ((1, k), (2, v)):  # (B, T, Hkv, D) -> (B, T, Hkv, group, D) -> H heads
        out[:, :, i].reshape(B, T, n_kv_heads, group, D)[...] = kv[:, :, :, None]
    return out.reshape(B, T, 3 * n_heads * D)


def rope_qkv_backward(xp, dout, cos, sin, n_heads: int, n_kv_heads: int):
    """The gradient of ``rope_qkv_forward``: (B, T, 3 H D) -> (B, T, (H + 2 Hkv) D)."""
    B, T, width = dout.shape
    D, group = width // (3 * n_heads), n_heads // n_kv_heads
    d = dout.reshape(B, T, 3, n_heads, D)
    dqkv = xp.empty((B, T, n_heads + 2 * n_kv_heads, D), dtype=dout.dtype)
    rope_backward(xp, d[:, :, 0], cos, sin, out=dqkv[:, :, :n_heads])
    dk, dv = (d[:, :, i].reshape(B, T, n_kv_heads, group, D).sum(axis=3) for i in (1, 2))
    rope_backward(xp, dk, cos, sin, out=dqkv[:, :, n_heads : n_heads + n_kv_heads])
    dqkv[:, :, n_heads + n_kv_heads :] = dv
    return dqkv.reshape(B, T, (n_heads + 2 * n_kv_heads) * D)


def rope_qkv(qkv: Tensor, cos, sin, n_heads: int, n_kv_heads: int) -> Tensor:
    """RoPE and grouped-query heads as one op: qkv (B, T, (H + 2 Hkv) D), with H = n_heads
    query heads and Hkv = n_kv_heads key/value heads -> (B, T, 3 H D), ready for
    ``causal_attention(..., n_heads)`` or ``attend_with_cache``. ``cos``/``sin`` (T, D/2)
    come from ``rope_tables``."""
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(
            f"attention: n_heads={n_heads} must be a multiple of n_kv_heads={n_kv_heads}"
        )
    n = n_heads + 2 * n_kv_heads
    if qkv.ndim != 3 or qkv.shape[-1] % n or cos.shape != (qkv.shape[1], qkv.shape[-1] // n // 2):
        raise ValueError(
            f"attention: expected qkv (batch, tokens, (n_heads + 2 n_kv_heads) * head size) "
            f"= (B, T, {n} D) with an even D and RoPE tables (T, D / 2), got qkv {qkv.shape} "
            f"and tables {tuple(cos.shape)}"
        )
    xp = qkv.xp
    return Tensor(
        rope_qkv_forward(xp, qkv.array, cos, sin, n_heads, n_kv_heads),
        args=(qkv,),
        back_fns=(lambda dout: rope_qkv_backward(xp, dout, cos, sin, n_heads, n_kv_heads),),
        name="rope_qkv",
    )
