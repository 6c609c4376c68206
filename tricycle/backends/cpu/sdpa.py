"""General scaled dot-product attention (``tricycle.nn.sdpa``) as numba loops over tiles.

Flash attention on the CPU: the forward takes a tile of QUERY_BLOCK queries over blocks of
KEY_BLOCK keys with an online softmax (a running max ``m``, a running sum ``total`` of
exp(S - m) and the unnormalised output ``acc``, rescaled whenever the max grows), so no
(Tq, Tk) array exists; only the key blocks the tile may see by position (causal, window) are
visited. The tile products are ``np.dot`` (BLAS). The backward recomputes each tile of
probabilities from the rows' log-sum-exps, as the reference does. Both take and return
exactly what the reference's ``sdpa_forward`` and ``sdpa_backward`` do, so either half may be
paired with the other.

Its exponentials are ``maths.exp``, which the loops vectorise in float32. It holds tiles
where the reference holds several (Tq, Tk) arrays, and on two threads it is faster than the
reference at every length measured, so dispatch always chooses it. Parallel over (batch,
head, query tile) in the forward and over (batch, key/value head) in the backward, where
every query head of a group adds to the same dk and dv rows.

The attention dropout mask is the hash of ``tricycle.dropout_mask`` (lowbias32, the same
constants), computed here in 64-bit integers cut to 32 bits.
"""

import math

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.maths import exp

QUERY_BLOCK, KEY_BLOCK = 64, 64  # the tiles: queries x keys scored at a time
_M32 = np.uint64(0xFFFFFFFF)


@jit
def _mix32(x):
    """lowbias32 of a 32-bit value held in a uint64."""
    x = x & _M32
    x ^= x >> np.uint64(16)
    x = (x * np.uint64(0x7FEB352D)) & _M32
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x846CA68B)) & _M32
    return x ^ (x >> np.uint64(16))


@jit
def _kept(seed, threshold, row, key):
    """Whether dropout keeps probability (row, key): ``keep_bits`` of tricycle.dropout_mask."""
    row_key = _mix32(np.uint64(seed) ^ _mix32(np.uint64(row)))
    u = _mix32(row_key ^ ((np.uint64(key) * np.uint64(0x9E3779B9)) & _M32))
    return u >= np.uint64(threshold)


@jit
def _key_range(position, n_keys, causal, window):
    """[first, end) of the keys a query at ``position`` sees (window 0: no window)."""
    first, end = 0, n_keys
    if causal:
        end = min(end, position + 1)
    if window > 0:
        first = max(first, position - window + 1)
        if not causal:
            end = min(end, position + window)
    return first, max(first, end)


@jit
def _scores(query, keys_t, bias, first_query, first_key, n_keys, causal, window, scale):
    """S = q k^T * scale + bias of a tile, hidden keys at -inf: (nq, nk) from queries
    (nq, D) at rows first_query... and keys_t (D, Tk) from column first_key."""
    nq, nk = query.shape[0], keys_t.shape[1] - first_key
    nk = min(nk, KEY_BLOCK)
    s = np.dot(query, np.ascontiguousarray(keys_t[:, first_key : first_key + nk]))
    offset = n_keys - bias.shape[0]  # query i sits at position i + Tk - Tq
    for r in range(nq):
        i = first_query + r
        first, end = _key_range(i + offset, n_keys, causal, window)
        for c in range(nk):
            j = first_key + c
            if j < first or j >= end:
                s[r, c] = -np.inf
            else:
                s[r, c] = s[r, c] * scale + bias[i, j]
    return s


@jit
def _drop(p, seed, threshold, keep_scale, first_row, first_key):
    """P * M in place for the tile whose rows start at mask row ``first_row``."""
    for r in range(p.shape[0]):
        for c in range(p.shape[1]):
            if _kept(seed, threshold, first_row + r, first_key + c):
                p[r, c] *= keep_scale
            else:
                p[r, c] = 0.0


@parallel_jit
def _forward(q, k_t, v, bias, out, lse, causal, window, scale, seed, threshold, keep_scale,
             first, last):  # fmt: skip
    """Tasks first..last of (batch, head, block of queries)."""
    B, H, Tq, D = q.shape
    Hkv, Tk, Dv = v.shape[1], v.shape[2], v.shape[3]
    group = H // Hkv
    n_blocks = (Tq + QUERY_BLOCK - 1) // QUERY_BLOCK
    for task in range(first, last):
        bh, a = task // n_blocks, (task % n_blocks) * QUERY_BLOCK
        b, h = bh // H, bh % H
        e = min(a + QUERY_BLOCK, Tq)
        query, keys_t, values = q[b, h, a:e], k_t[b, h // group], v[b, h // group]
        m = np.full(e - a, -np.inf, dtype=q.dtype)  # running max of each row's scores
        total = np.zeros(e - a, dtype=q.dtype)  # running sum of exp(S - m)
        acc = np.zeros((e - a, Dv), dtype=q.dtype)  # running sum of exp(S - m) v
        # the keys any of these queries may see
        keys_from = _key_range(a + Tk - Tq, Tk, causal, window)[0]
        keys_to = _key_range(e - 1 + Tk - Tq, Tk, causal, window)[1]
        for start in range(keys_from, keys_to, KEY_BLOCK):
            s = _scores(query, keys_t, bias[b, h], a, start, Tk, causal, window, scale)
            for r in range(e - a):
                new_m = max(m[r], s[r].max())
                if new_m == -np.inf:
                    s[r] = 0.0  # nothing seen yet in this row
                    continue
                correction = exp(m[r] - new_m)  # 0 while m is -inf
                for c in range(s.shape[1]):
                    s[r, c] = exp(s[r, c] - new_m)
                total[r] = total[r] * correction + s[r].sum()
                acc[r] *= correction
                m[r] = new_m
            if threshold >= 0:
                _drop(s, seed, threshold, keep_scale, bh * Tq + a, start)
            acc += np.dot(s, np.ascontiguousarray(values[start : start + s.shape[1]]))
        for r in range(e - a):
            if total[r] > 0:
                out[b, h, a + r] = acc[r] / total[r]
                lse[b, h, a + r] = m[r] + math.log(total[r])
            else:  # the row sees no key: output 0, and lse +inf makes every P 0 in backward
                out[b, h, a + r] = 0.0
                lse[b, h, a + r] = np.inf


@parallel_jit
def _backward(q, k, k_t, v_t, bias, out, lse, dout, dq, dk, dv, causal, window, scale, seed,
              threshold, keep_scale, first, last):  # fmt: skip
    """Tasks first..last of (batch, key/value head)."""
    B, H, Tq, D = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    group = H // Hkv
    for task in range(first, last):
        b, kv = task // Hkv, task % Hkv
        keys, keys_t, values_t = k[b, kv], k_t[b, kv], v_t[b, kv]  # (Tk, D), (D, Tk), (Dv, Tk)
        dk[b, kv] = 0.0
        dv[b, kv] = 0.0
        for h in range(kv * group, (kv + 1) * group):
            for a in range(0, Tq, QUERY_BLOCK):
                e = min(a + QUERY_BLOCK, Tq)
                query, dy = q[b, h, a:e], dout[b, h, a:e]  # (nq, D), (nq, Dv)
                delta = (dy * out[b, h, a:e]).sum(axis=1)  # rowsum(dO * O)
                dquery = np.zeros((e - a, D), dtype=q.dtype)
                keys_from = _key_range(a + Tk - Tq, Tk, causal, window)[0]
                keys_to = _key_range(e - 1 + Tk - Tq, Tk, causal, window)[1]
                for start in range(keys_from, keys_to, KEY_BLOCK):
                    s = _scores(query, keys_t, bias[b, h], a, start, Tk, causal, window, scale)
                    nk = s.shape[1]
                    for r in range(e - a):  # P from each row's log-sum-exp (+inf: P = 0)
                        for c in range(nk):
                            s[r, c] = exp(s[r, c] - lse[b, h, a + r])
                    dp = np.dot(dy, np.ascontiguousarray(values_t[:, start : start + nk]))
                    dropped = s
                    if threshold >= 0:  # v saw P * M, and dP reaches P times M
                        dropped = s.copy()
                        _drop(dropped, seed, threshold, keep_scale, (b * H + h) * Tq + a, start)
                        ones = np.ones_like(s)
                        _drop(ones, seed, threshold, keep_scale, (b * H + h) * Tq + a, start)
                        dp *= ones
                    for r in range(e - a):  # dS = P (dP - rowsum(dO O)), times the scale
                        for c in range(nk):
                            dp[r, c] = s[r, c] * (dp[r, c] - delta[r]) * scale
                    dquery += np.dot(dp, np.ascontiguousarray(keys[start : start + nk]))
                    dk[b, kv, start : start + nk] += np.dot(np.ascontiguousarray(dp.T), query)
                    dv[b, kv, start : start + nk] += np.dot(np.ascontiguousarray(dropped.T), dy)
                dq[b, h, a:e] = dquery


def _bias_view(bias, shape, dtype):
    """The additive mask as a (B, H, Tq, Tk) view (zeros when there is none)."""
    if bias is None:
        bias = np.zeros((1, 1, 1, 1), dtype=dtype)
    return np.broadcast_to(bias.reshape((1,) * (4 - bias.ndim) + bias.shape), shape)


def _dropout_arguments(dropout):
    """(seed, threshold, 1 / (1 - p)): a hash below the threshold drops its element (as
    ``dropout_threshold``); threshold -1 means no dropout."""
    if dropout is None or not dropout.probability:
        return 0, -1, 1.0
    threshold = min(int(round(dropout.probability * 2**32)), 2**32 - 1)
    return int(dropout.seed), threshold, dropout.scale


def sdpa_forward(xp, q, k, v, bias=None, causal=False, window=None, scale=None, dropout=None):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_forward``: same arguments, same
    results (out and saved)."""
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(D) if scale is None else scale
    typed_scale = q.dtype.type(scale)  # a float32 kernel computes in float32 throughout
    out = np.empty((B, H, Tq, v.shape[3]), dtype=q.dtype)
    lse = np.empty((B, H, Tq), dtype=q.dtype)
    k_t = np.ascontiguousarray(k.swapaxes(-1, -2))  # (B, Hkv, D, Tk): rows of keys for q . k
    _forward(np.ascontiguousarray(q), k_t, np.ascontiguousarray(v),
             _bias_view(bias, (B, H, Tq, Tk), q.dtype), out, lse, causal, window or 0, typed_scale,
             *_dropout_arguments(dropout), B * H * -(-Tq // QUERY_BLOCK))  # fmt: skip
    return out, (q, k, v, bias, out, lse, causal, window, scale, dropout)


def sdpa_backward(xp, dout, saved):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_backward``: (dq, dk, dv)."""
    q, k, v, bias, out, lse, causal, window, scale, dropout = saved
    B, H, Tq, _ = q.shape
    Tk = k.shape[2]
    dq, dk, dv = (np.empty(x.shape, dtype=q.dtype) for x in (q, k, v))
    contiguous = np.ascontiguousarray
    k_t, v_t = (contiguous(x.swapaxes(-1, -2)) for x in (k, v))  # (B, Hkv, D, Tk)
    _backward(contiguous(q), contiguous(k), k_t, v_t,
              _bias_view(bias, (B, H, Tq, Tk), q.dtype), contiguous(out), contiguous(lse),
              contiguous(dout, dtype=q.dtype), dq, dk, dv, causal, window or 0,
              q.dtype.type(scale),
              *_dropout_arguments(dropout), B * k.shape[1])  # fmt: skip
    return dq, dk, dv


dispatch.add("scaled_dot_product_attention", "cpu", (sdpa_forward, sdpa_backward))
