"""Fused causal scaled-dot-product attention.

One forward and one hand-derived backward, llm.c style, on the packed projection
``qkv`` of shape (B, T, 3E) (queries | keys | values along the last axis)::

    out, saved = attention_forward(xp, qkv, n_heads)   # out: (B, T, E), heads merged
    dqkv = attention_backward(xp, dout, saved)         # dqkv: (B, T, 3E)

The backward keeps the attention probabilities and references to the input and output arrays
(which exist anyway): q, k and v are views into ``qkv``, never copies. With P = softmax(S),
S = q k^T / sqrt(D) and O = P v::

    dv = P^T dO        dP = dO v^T        dS = P * (dP - rowsum(dO * O))
    dq = dS k / sqrt(D)                   dk = dS^T q / sqrt(D)

using flash-attention's identity rowsum(dP * P) = rowsum(dO * O), which avoids a (T, T) product.

Attention dropout (nanoGPT's ``attn_dropout``, torch's ``dropout_p``) zeroes probabilities after
the softmax and scales the rest by 1 / (1 - p): O = (P * M) v with M = keep / (1 - p). Then
dv = (P * M)^T dO, dS = P * (M * dP~ - rowsum(dO * O)) with dP~ = dO v^T, and the same identity
holds (rowsum(dP * P) = rowsum(dP~ * P * M) = rowsum(dO * O)). The keep mask is never stored:
it is a counter-based hash of (seed, batch * head, query, key) (``keep_mask``), so the forward
and the backward, and the numpy code and the CUDA kernel, draw exactly the same mask.
On the CPU the queries go in blocks that skip the keys in their future, so about half of the
(T, T) scores are never computed nor stored. On a GPU a flash-attention CUDA kernel with the
same signatures takes over (``tricycle/backends/cuda``) and stores no (T, T) array at all.

``causal_attention(qkv, n_heads)`` (or the op ``Attention(n_heads)``) wraps the pair as a
Tensor op. ``attend_with_cache`` is the generation path: new queries attend to keys and values
kept in a ``KVCache``, so each new token costs one position; it builds no graph.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.backends import cuda as kernels
from tricycle.blocking import for_row_groups, row_blocks
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout, mask_seed
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


# On the CPU, queries are processed in blocks: a block needs only the keys its last query sees,
# which skips most of the masked half of the scores. Blocks are sized so that each per-head
# product has at most 2^18 multiply-adds, below which OpenBLAS stays on one thread: these small
# products gain nothing from threads, and waking them can cost more than the product.
SINGLE_THREAD_PRODUCT = 1 << 18
MIN_QUERY_BLOCK, MAX_QUERY_BLOCK = 32, 64


def _query_blocks(xp, n_queries: int, n_keys: int, head_dim: int) -> list[tuple[int, int, int]]:
    """(first query, end query, visible keys) per block of queries.

    The queries are the last ``n_queries`` of ``n_keys`` positions, so query i sees keys up to
    position i + n_keys - n_queries. On a GPU one block does it all.
    """
    if xp is np:
        size = SINGLE_THREAD_PRODUCT // (n_keys * head_dim)
        size = max(MIN_QUERY_BLOCK, min(MAX_QUERY_BLOCK, 1 << max(size, 1).bit_length() - 1))
    else:
        size = n_queries
    offset = n_keys - n_queries
    return [(a, min(a + size, n_queries), min(a + size, n_queries) + offset)
            for a in range(0, n_queries, size)]  # fmt: skip


def _causal_bias(xp, n_keys: int, first_query: int, n_queries: int, dtype):
    """(Tk, Tq) additive mask: 0 where key j is at or before query i's position
    ``first_query + i``, -inf after it.

    Every query sees at least its own key, so softmax never meets a column of only -inf.
    """
    keys = xp.arange(n_keys)[:, None]
    queries = xp.arange(n_queries)[None, :] + first_query  # absolute positions
    return xp.where(keys > queries, -xp.inf, 0).astype(dtype)


def _attend(xp, q, k, v, dropout: AttentionDropout = NO_DROPOUT):
    """Causal softmax(q k^T / sqrt(D)) v for queries that are the last Tq of Tk positions.

    q: (B, H, Tq, D), k and v: (B, H, Tk, D) -> out (B, Tq, H, D) (the heads merge with a free
    reshape) and, per query block, the probabilities stored transposed as (B, H, keys,
    queries): numpy reduces over the second-to-last axis several times faster than over the
    last. On numpy the batch is walked in chunks whose scores fit in the CPU cache, so the
    softmax passes stay there. With ``dropout`` (training only, Tq == Tk) the output uses the
    dropped probabilities; the stored ones are not dropped, and the kept elements are returned
    too (a bool per probability, a quarter of their memory), so the backward does not hash
    again; else None.
    """
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(D)
    out = xp.empty((B, Tq, H, D), dtype=q.dtype)
    blocks = _query_blocks(xp, Tq, Tk, D)
    probs = [xp.empty((B, H, kb, b - a), dtype=q.dtype) for a, b, kb in blocks]
    biases = [_causal_bias(xp, kb, a + Tk - Tq, b - a, q.dtype) for a, b, kb in blocks]
    kept = [xp.empty(p.shape, dtype=bool) for p in probs] if dropout.probability else None
    batch = xp.arange(B)
    ones = xp.ones((1, Tk), dtype=q.dtype)  # (1, keys): numpy sums along short axes slowly

    def attend_rows(group):  # batch rows ``group``, every query block
        q_, k_, v_, out_ = q[group], k[group], v[group], out[group]
        for i, ((a, b, kb), block, bias) in enumerate(zip(blocks, probs, biases)):
            for rows in row_blocks(xp, len(q_), H * kb * (b - a)):
                p = block[group][rows]  # (c, H, kb, Qb): scores, then probabilities, in place
                xp.matmul(k_[rows, :, :kb], (q_[rows, :, a:b] * scale).swapaxes(-1, -2), out=p)
                p += bias
                p -= p.max(axis=-2, keepdims=True)  # stable softmax over the keys
                xp.exp(p, out=p)
                p *= 1 / xp.matmul(ones[:, :kb], p)  # sums over the keys, by BLAS
                if kept is not None:
                    keep = kept[i][group][rows]
                    keep[...] = dropout.keep(xp, H, Tq, batch[group][rows], xp.arange(a, b),
                                             xp.arange(kb))  # fmt: skip
                    p = p * keep
                    p *= dropout.scale
                y = out_[rows, a:b].transpose(0, 2, 1, 3)  # (c, H, Qb, D) view of the output
                xp.matmul(p.swapaxes(-1, -2), v_[rows, :, :kb], out=y)

    for_row_groups(xp, B, attend_rows)
    return out, probs, kept


def attention_forward(xp, qkv, n_heads: int, dropout: AttentionDropout = NO_DROPOUT):
    """Causal multi-head attention of a packed (B, T, 3E) projection -> ((B, T, E), saved).

    ``saved`` holds what ``attention_backward`` needs: the input, the probabilities, the
    output and the dropout. Nothing in it may be modified until the backward has run. On a GPU
    a flash attention kernel (``tricycle/backends/cuda/attention.cu``) runs instead, with its own
    ``saved``.
    """
    if kernels.attention_enabled(qkv, n_heads):
        return kernels.attention_forward(xp, qkv, n_heads, dropout.probability, dropout.seed)
    dtype = qkv.dtype
    qkv = qkv.astype(_product_dtype(xp, dtype), copy=False)
    B, T, three_e = qkv.shape
    q, k, v = split_heads(qkv, n_heads)  # (B, H, T, D) views
    # (B, T, H, D); per query block (B, H, keys, queries) probabilities and kept elements
    out, probs, kept = _attend(xp, q, k, v, dropout)
    out = out.reshape(B, T, three_e // 3)  # (B, T, E)
    return out.astype(dtype, copy=False), (qkv, probs, kept, out, n_heads, dropout, dtype)


def _product_dtype(xp, dtype):
    """The dtype the batched products run in: cupy has none for bfloat16, so float32 there."""
    return np.dtype(np.float32) if xp is not np and dtype.name == "bfloat16" else dtype


def attention_backward(xp, dout, saved):
    """Gradient of ``attention_forward``: dout (B, T, E) -> dqkv (B, T, 3E)."""
    if kernels.owns(saved):
        return kernels.attention_backward(xp, dout, saved)
    qkv, probs, kept, out, n_heads, dropout, dtype = saved
    dout = dout.astype(qkv.dtype, copy=False)
    B, T, E = dout.shape
    D = E // n_heads
    scale = 1 / math.sqrt(D)
    q, k, v = split_heads(qkv, n_heads)  # (B, H, T, D) views
    dy = dout.reshape(B, T, n_heads, D).transpose(0, 2, 1, 3)  # (B, H, T, D)
    y = out.reshape(B, T, n_heads, D).transpose(0, 2, 1, 3)  # (B, H, T, D)

    dqkv = xp.empty((B, T, 3, n_heads, D), dtype=dout.dtype)
    dq, dk, dv = (dqkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))  # (B, H, T, D) views
    kept = kept or [None] * len(probs)
    blocks = list(zip(_query_blocks(xp, T, T, D), probs, kept))[::-1]

    def backward_rows(group):  # batch rows ``group``, every query block
        q_, k_, v_, dy_, y_ = q[group], k[group], v[group], dy[group], y[group]
        dq_, dk_, dv_ = dq[group], dk[group], dv[group]
        # the last block sees every key, so it writes dk and dv; earlier ones add to a prefix
        for i, ((a, b, kb), block, kept_block) in enumerate(blocks):
            for rows in row_blocks(xp, len(q_), n_heads * kb * (b - a)):
                p = block[group][rows]  # P^T: (c, H, kb, Qb)
                dy_block = dy_[rows, :, a:b]  # (c, H, Qb, D)
                dscores = xp.matmul(v_[rows, :, :kb], dy_block.swapaxes(-1, -2))  # dP^T
                if kept_block is not None:  # through the mask: dP = M dP~, and v sees P M
                    keep = kept_block[group][rows]
                    dscores *= keep
                    dscores *= dropout.scale
                    p_dropped = p * keep
                    p_dropped *= dropout.scale
                else:
                    p_dropped = p
                # softmax backward: dS = P (dP - rowsum(dP P)), and rowsum(dP P) = rowsum(dO O)
                dscores -= (dy_block * y_[rows, :, a:b]).sum(axis=-1)[:, :, None, :]
                dscores *= p  # masked entries have P == 0, so their gradient is exactly 0
                dscores *= scale
                xp.matmul(dscores.swapaxes(-1, -2), k_[rows, :, :kb], out=dq_[rows, :, a:b])
                if i == 0:
                    xp.matmul(p_dropped, dy_block, out=dv_[rows, :, :kb])
                    xp.matmul(dscores, q_[rows, :, a:b], out=dk_[rows, :, :kb])
                else:
                    dv_[rows, :, :kb] += xp.matmul(p_dropped, dy_block)
                    dk_[rows, :, :kb] += xp.matmul(dscores, q_[rows, :, a:b])

    for_row_groups(xp, B, backward_rows)
    return dqkv.reshape(B, T, 3 * E).astype(dtype, copy=False)


# ------------------------------------------------------------------ the Tensor op


@checks.arguments(n_heads=checks.positive_int, dropout_prob=checks.probability, seed=mask_seed)
def causal_attention(qkv: Tensor, n_heads: int, dropout_prob: float = 0.0, seed=0) -> Tensor:
    """Fused causal self-attention: qkv (B, T, 3E) -> (B, T, E), as one node of the graph.

    ``dropout_prob`` drops attention probabilities (inverted dropout, as torch's
    ``scaled_dot_product_attention(dropout_p=...)``); ``seed`` picks the mask, and the same
    seed gives the same mask on every device. It is an int, or on a GPU a (1,) uint32 array
    holding it (``Dropout.step_seed``: what a captured CUDA graph refills at every replay).
    """
    if qkv.ndim != 3:
        raise ValueError(
            f"attention: expected qkv of shape (batch, tokens, 3 * embedding_dim), got {qkv.shape}"
        )
    xp = qkv.xp
    dropout = AttentionDropout(dropout_prob, seed) if dropout_prob else NO_DROPOUT
    out, saved = attention_forward(xp, qkv.array, n_heads, dropout)
    return Tensor(
        out,
        args=(qkv,),
        back_fns=(lambda dout: attention_backward(xp, dout, saved),),
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
    positions are valid. Made and owned by the caller (``GPT.generate``), never by a layer.
    """

    def __init__(self, xp, batch_size: int, n_heads: int, capacity: int, head_dim: int, dtype):
        shape = (batch_size, n_heads, capacity, head_dim)
        self.keys = xp.zeros(shape, dtype=dtype)
        self.values = xp.zeros(shape, dtype=dtype)
        self.length = 0

    @property
    def capacity(self) -> int:
        return self.keys.shape[2]


def attend_with_cache(xp, qkv, n_heads: int, cache: KVCache):
    """Attention of new positions against themselves and every cached position.

    qkv: (B, Tnew, 3E) for the next Tnew positions. Their keys and values are appended to
    ``cache``; returns (B, Tnew, E). No graph, no saved arrays: for sampling under no_grad.
    """
    B, T_new, three_e = qkv.shape
    q, k, v = split_heads(qkv, n_heads)  # (B, H, Tnew, D)
    start, end = cache.length, cache.length + T_new
    if end > cache.capacity:
        raise ValueError(
            f"attention: the KV cache holds {cache.capacity} positions; {start} are used and "
            f"{T_new} more do not fit"
        )
    cache.keys[:, :, start:end] = k
    cache.values[:, :, start:end] = v
    cache.length = end
    out, _, _ = _attend(xp, q, cache.keys[:, :, :end], cache.values[:, :, :end])  # (B, Tnew, H, D)
    return out.reshape(B, T_new, three_e // 3)


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


def rope_tables(xp, start: int, length: int, head_dim: int, theta: float, dtype):
    """cos and sin (length, head_dim / 2) of the angles (start + t) * theta^(-2i / head_dim)
    for the positions start ... start + length - 1. Computed in float64."""
    if head_dim % 2:
        raise ValueError(f"RoPE: the head size must be even to rotate pairs, got {head_dim}")
    frequencies = theta ** (-xp.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (D/2,)
    angles = xp.arange(start, start + length, dtype=np.float64)[:, None] * frequencies
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
