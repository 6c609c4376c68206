"""Causal attention on the CPU, flash style: per (batch, head), blocks of queries against
blocks of keys with an online softmax, so no (T, T) array exists; the forward saves the
output and each row's log-sum-exp, the backward recomputes the probabilities from them.

For a block of queries, the key blocks up to the diagonal come one at a time. With m the
running maximum and l the running sum of exp(s - m) of a row, a new block of scores s moves
them to m' = max(m, max(s)), l' = l exp(m - m') + sum(exp(s - m')), and the output
accumulator acc' = acc exp(m - m') + exp(s - m') v. At the end out = acc / l and
lse = m + log(l). The backward (FlashAttention-2) walks the same blocks::

    P = exp(q k^T / sqrt(D) - lse)      dv += (P M)^T dO      dP = M (dO v^T)
    dS = P (dP - rowsum(dO O))          dq += dS k / sqrt(D)  dk += dS^T q / sqrt(D)

with M the inverted-dropout multiplier (``keep``: the counter-based mask of
``tricycle.dropout_mask``, recomputed, never stored). Query head h reads key/value head
h // (H / Hkv) (grouped-query attention); its key and value gradients add up over the group.
The block products are BLAS calls (``gemm.gemm_into``: single-threaded inside each of the
kernel's threads, into reused blocks, accumulating in place).
"""

import math

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.gemm import gemm_into
from tricycle.backends.cpu.maths import exp, typed

BLOCK = 64  # queries (and keys) per block


@jit
def _mix32(x):
    """lowbias32 of a 32-bit integer held in a uint64 (wrapping arithmetic)."""
    mask = np.uint64(0xFFFFFFFF)
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & mask
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & mask
    return x ^ (x >> np.uint64(16))


@jit
def keep(seed, threshold, row, key):
    """Whether dropout keeps probability (row, key): ``tricycle.dropout_mask.keep_bits``."""
    mask = np.uint64(0xFFFFFFFF)
    row_key = _mix32(np.uint64(seed) ^ _mix32(np.uint64(row) & mask))
    u = _mix32(row_key ^ ((np.uint64(key) * np.uint64(0x9E3779B9)) & mask))
    return u >= np.uint64(threshold)


@jit
def _load(out, x, b, h, scale):
    """out (T, D) = x[b, :, h, :] * scale: a head as a contiguous array."""
    T, D = out.shape
    for t in range(T):
        for d in range(D):
            out[t, d] = x[b, t, h, d] * scale


@jit
def _zero(x):
    """x (N, D) = 0."""
    for i in range(x.shape[0]):
        for d in range(x.shape[1]):
            x[i, d] = 0.0


# The kernels allocate their blocks once a call and use plain loops and conditional
# expressions where numpy's functions (np.full, np.zeros, min of two ints) would each be an
# overload for numba to compile: a first run compiles less. q, k, v and their gradients are
# typed as strided views whatever their layout (views of qkv in training, contiguous arrays
# elsewhere): one compiled kernel per dtype.
@parallel_jit(blas=True, strided=("q", "k", "v"))
def attention_forward_kernel(q, k, v, out, lse, seed, threshold, dropout_scale, block, first,
                             last):  # fmt: skip
    """out (B, Tq, H, D) and lse (B, H, Tq) of causal attention of q (B, Tq, H, D) against
    k and v (B, Tk, Hkv, D), the queries being the last Tq of the Tk positions, for the
    (batch, head) pairs first..last. Dropout when threshold > 0."""
    B, Tq, H, D = q.shape
    Tk, Hkv = k.shape[1], k.shape[2]
    group, offset = H // Hkv, Tk - Tq
    scale = 1 / math.sqrt(D)
    qh = np.empty((Tq, D), dtype=q.dtype)  # a head's queries, scaled
    kh = np.empty((Tk, D), dtype=q.dtype)
    vh = np.empty((Tk, D), dtype=q.dtype)
    s_block = np.empty((block, block), dtype=q.dtype)
    acc_block = np.empty((block, D), dtype=q.dtype)
    m = np.empty(block, dtype=q.dtype)
    row_sums = np.empty(block, dtype=q.dtype)
    for bh in range(first, last):
        b, h = bh // H, bh % H
        _load(qh, q, b, h, scale)
        _load(kh, k, b, h // group, 1.0)
        _load(vh, v, b, h // group, 1.0)
        for a in range(0, Tq, block):
            e = a + block if a + block < Tq else Tq
            n = e - a
            acc = acc_block[:n]
            _zero(acc)
            for i in range(n):
                m[i], row_sums[i] = -np.inf, 0.0
            for c in range(0, e + offset, block):  # key blocks up to the last query's position
                f = c + block if c + block < e + offset else e + offset
                s = s_block[:n, : f - c]  # scores
                gemm_into(s, qh[a:e], kh[c:f], False, True, 0.0)  # q k^T
                for i in range(n):
                    # keys after the query's position: masked
                    last = f if f < a + i + offset + 1 else a + i + offset + 1
                    row_max = m[i]
                    for j in range(c, last):
                        row_max = max(row_max, s[i, j - c])
                    correction = exp(m[i] - row_max)
                    m[i] = row_max
                    row_sum = typed(row_max, 0.0)
                    for j in range(c, last):
                        p = exp(s[i, j - c] - row_max)
                        row_sum += p
                        s[i, j - c] = p
                    for j in range(last if last > c else c, f):
                        s[i, j - c] = 0.0
                    if threshold:
                        row = (b * H + h) * Tq + a + i
                        for j in range(c, last):
                            kept = keep(seed, threshold, row, j)
                            s[i, j - c] = s[i, j - c] * dropout_scale if kept else 0.0
                    row_sums[i] = row_sums[i] * correction + row_sum
                    for d in range(D):
                        acc[i, d] *= correction
                gemm_into(acc, s, vh[c:f], False, False, 1.0)  # acc += P v
            for i in range(n):
                lse[b, h, a + i] = m[i] + math.log(row_sums[i])
                for d in range(D):
                    out[b, a + i, h, d] = acc[i, d] / row_sums[i]


@parallel_jit(blas=True, strided=("q", "k", "v", "dq", "dk", "dv"))
def attention_backward_kernel(q, k, v, out, dout, lse, dq, dk, dv, seed, threshold,
                              dropout_scale, block, first, last):  # fmt: skip
    """dq (B, T, H, D), dk and dv (B, T, Hkv, D) of ``attention_forward_kernel`` (Tq == Tk).
    Each (batch, key/value head) is one task, first..last: its group of query heads adds into
    its dk, dv."""
    B, T, H, D = q.shape
    Hkv = k.shape[2]
    group = H // Hkv
    scale = 1 / math.sqrt(D)
    kh, vh = np.empty((T, D), dtype=q.dtype), np.empty((T, D), dtype=q.dtype)
    dkh, dvh = np.empty((T, D), dtype=q.dtype), np.empty((T, D), dtype=q.dtype)
    qh, doh = np.empty((T, D), dtype=q.dtype), np.empty((T, D), dtype=q.dtype)
    dqh = np.empty((T, D), dtype=q.dtype)
    p_block = np.empty((block, block), dtype=q.dtype)
    dp_block = np.empty((block, block), dtype=q.dtype)
    delta = np.empty(T, dtype=q.dtype)  # rowsum(dO O), which equals rowsum(dP P)
    for bk in range(first, last):
        b, hk = bk // Hkv, bk % Hkv
        _load(kh, k, b, hk, 1.0)
        _load(vh, v, b, hk, 1.0)
        _zero(dkh)
        _zero(dvh)
        for h in range(hk * group, (hk + 1) * group):
            _load(qh, q, b, h, scale)  # scaled
            _load(doh, dout, b, h, 1.0)
            _zero(dqh)
            for t in range(T):
                total = typed(doh[t, 0], 0.0)
                for d in range(D):
                    total += doh[t, d] * out[b, t, h, d]
                delta[t] = total
            for c in range(0, T, block):  # key block
                f = c + block if c + block < T else T
                for a in range(c, T, block):  # the query blocks that see it
                    e = a + block if a + block < T else T
                    p = p_block[: e - a, : f - c]  # scores, then probabilities
                    dp = dp_block[: e - a, : f - c]  # dP~, then dS
                    gemm_into(p, qh[a:e], kh[c:f], False, True, 0.0)  # q k^T
                    gemm_into(dp, doh[a:e], vh[c:f], False, True, 0.0)  # dO v^T
                    for i in range(e - a):
                        # keys after the query's position: masked
                        last = f if f < a + i + 1 else a + i + 1
                        for j in range(c, last):
                            p[i, j - c] = exp(p[i, j - c] - lse[b, h, a + i])
                        for j in range(last if last > c else c, f):  # no probability, no gradient
                            p[i, j - c] = 0.0
                            dp[i, j - c] = 0.0
                        delta_i = delta[a + i]
                        if threshold:  # dP = M dP~, and v saw P M
                            row = (b * H + h) * T + a + i
                            for j in range(c, last):
                                prob = p[i, j - c]
                                if keep(seed, threshold, row, j):
                                    dp[i, j - c] = prob * (dp[i, j - c] * dropout_scale - delta_i)
                                    p[i, j - c] = prob * dropout_scale
                                else:
                                    dp[i, j - c] = -prob * delta_i
                                    p[i, j - c] = 0.0
                        else:  # dS = P (dP - rowsum(dO O))
                            for j in range(c, last):
                                dp[i, j - c] = p[i, j - c] * (dp[i, j - c] - delta_i)
                    gemm_into(dvh[c:f], p, doh[a:e], True, False, 1.0)  # += P^T dO
                    gemm_into(dqh[a:e], dp, kh[c:f], False, False, 1.0)  # += dS k
                    gemm_into(dkh[c:f], dp, qh[a:e], True, False, 1.0)  # += dS^T q
            for t in range(T):
                for d in range(D):
                    dq[b, t, h, d] = dqh[t, d] * scale
        for t in range(T):
            for d in range(D):
                dk[b, t, hk, d] = dkh[t, d]
                dv[b, t, hk, d] = dvh[t, d]


# ------------------------------------------------------------------ the dispatched pair


def _threshold(probability: float) -> int:
    """The uint32 below which a hash drops its element (``dropout_mask.dropout_threshold``)."""
    return min(int(round(probability * 2**32)), 2**32 - 1) if probability else 0


def _heads(qkv, n_heads: int):
    B, T, three_e = qkv.shape
    heads = qkv.reshape(B, T, 3, n_heads, three_e // (3 * n_heads))
    return heads[:, :, 0], heads[:, :, 1], heads[:, :, 2]  # (B, T, H, D) views


def attention_forward(xp, qkv, n_heads: int, dropout_prob: float = 0.0, seed=0):
    """``tricycle.attention.attention_forward`` with its saved state: (qkv, out, lse, n_heads,
    dropout probability, seed)."""
    seed = int(seed) if dropout_prob else 0
    B, T, three_e = qkv.shape
    q, k, v = _heads(qkv, n_heads)
    out = np.empty((B, T, n_heads, three_e // (3 * n_heads)), dtype=qkv.dtype)
    lse = np.empty((B, n_heads, T), dtype=qkv.dtype)
    threshold = _threshold(dropout_prob)
    scale = 1 / (1 - dropout_prob)
    attention_forward_kernel(q, k, v, out, lse, seed % 2**32, threshold, scale, BLOCK,
                             B * n_heads)  # fmt: skip
    out = out.reshape(B, T, three_e // 3)
    return out, (qkv, out, lse, n_heads, dropout_prob, seed % 2**32)


def attention_backward(xp, dout, saved):
    """dqkv (B, T, 3E) from dout (B, T, E) and ``attention_forward``'s saved state."""
    qkv, out, lse, n_heads, dropout_prob, seed = saved
    B, T, E = out.shape
    dout = np.ascontiguousarray(dout, dtype=qkv.dtype).reshape(B, T, n_heads, E // n_heads)
    q, k, v = _heads(qkv, n_heads)
    dqkv = np.empty(qkv.shape, dtype=qkv.dtype)
    dq, dk, dv = _heads(dqkv, n_heads)
    threshold, scale = _threshold(dropout_prob), 1 / (1 - dropout_prob)
    attention_backward_kernel(q, k, v, out.reshape(dout.shape), dout, lse, dq, dk, dv, seed,
                              threshold, scale, BLOCK, B * k.shape[2])  # fmt: skip
    return dqkv


def attend(xp, q, k, v):
    """``tricycle.attention.attend``: q (B, H, Tq, D) against k, v (B, H, Tk, D) ->
    (B, Tq, H, D)."""
    B, H, Tq, D = q.shape
    out = np.empty((B, Tq, H, D), dtype=q.dtype)
    lse = np.empty((B, H, Tq), dtype=q.dtype)
    qt, kt, vt = (a.swapaxes(1, 2) for a in (q, k, v))  # (B, T, H, D) views
    attention_forward_kernel(qt, kt, vt, out, lse, 0, 0, 1.0, BLOCK, B * H)
    return out


dispatch.add("attention", "cpu", (attention_forward, attention_backward))
dispatch.register("attend", "cpu")(attend)
