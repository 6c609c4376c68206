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
same signatures takes over (``tricycle/kernels``) and stores no (T, T) array at all.

``causal_attention(qkv, n_heads)`` (or the op ``Attention(n_heads)``) wraps the pair as a
Tensor op. ``attend_with_cache`` is the generation path: new queries attend to keys and values
kept in a ``KVCache``, so each new token costs one position; it builds no graph.
"""

import math

import numpy as np

from tricycle import kernels
from tricycle.blocking import for_row_groups, row_blocks
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout
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
    a flash attention kernel (``tricycle/kernels/attention.cu``) runs instead, with its own
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


def causal_attention(qkv: Tensor, n_heads: int, dropout_prob: float = 0.0, seed: int = 0) -> Tensor:
    """Fused causal self-attention: qkv (B, T, 3E) -> (B, T, E), as one node of the graph.

    ``dropout_prob`` drops attention probabilities (inverted dropout, as torch's
    ``scaled_dot_product_attention(dropout_p=...)``); ``seed`` picks the mask, and the same
    seed gives the same mask on every device.
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
        is_batched=qkv.is_batched,
    )


class Attention:
    """The op form of ``causal_attention``: ``Attention(n_heads)(qkv)``. Stateless."""

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
