"""General scaled dot-product attention (``tricycle.nn.sdpa``) as numba loops over tiles.

Flash attention on the CPU: the forward takes a tile of QUERY_BLOCK queries over blocks of
KEY_BLOCK keys with an online softmax (a running max ``m``, a running sum ``total`` of
exp(S - m) and the unnormalised output ``acc``, rescaled whenever the max grows), so no
(Tq, Tk) array exists; only the key blocks the tile may see by position (causal, window) are
visited. The backward recomputes each tile of probabilities from the rows' log-sum-exps, as
the reference does. Both take and return exactly what the reference's ``sdpa_forward`` and
``sdpa_backward`` do, so either half may be paired with the other.

Written as the GPT's attention kernels are (``attention.py``, whose helpers it shares): the
tile products are ``gemm.gemm_into`` (one BLAS call into a reused block, accumulating in
place), every other step a plain loop over the tile, and the blocks are allocated once per
kernel call, so a kernel compiles as little as the loops need. Its exponentials are
``maths.exp``, which the loops vectorise in float32. Parallel over (batch, head, query tile)
in the forward and over (batch, key/value head) in the backward, where every query head of a
group adds to the same dk and dv rows.

The attention dropout mask is the hash of ``tricycle.dropout_mask`` (``attention.keep``).
"""

import math

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.attention import _threshold, keep
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.gemm import gemm_into
from tricycle.backends.cpu.maths import exp, typed, where

QUERY_BLOCK, KEY_BLOCK = 64, 64  # the tiles: queries x keys scored at a time


@jit
def _key_range(position, n_keys, causal, window):
    """[first, end) of the keys a query at ``position`` sees (window 0: no window)."""
    first, end = 0, n_keys
    if causal and position + 1 < end:
        end = position + 1
    if window > 0:
        if position - window + 1 > first:
            first = position - window + 1
        if not causal and position + window < end:
            end = position + window
    return first, end if end > first else first


@jit
def _scores(s, query, keys, bias, first_query, first_key, causal, window, scale):
    """s (nq, nk) = query keys[first_key:]^T * scale + bias, hidden keys at -inf: the tile of
    queries (nq, D) at rows first_query... against keys (Tk, D) from row first_key."""
    nq, nk = s.shape
    n_keys = keys.shape[0]
    gemm_into(s, query, keys[first_key : first_key + nk], False, True, 0.0)  # q k^T
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


@parallel_jit(blas=True, strided=("bias",))
def _forward(q, k, v, bias, out, lse, causal, window, scale, seed, threshold, keep_scale,
             first, last):  # fmt: skip
    """Tasks first..last of (batch, head, block of queries); dropout when threshold > 0."""
    B, H, Tq, D = q.shape
    Hkv, Tk, Dv = v.shape[1], v.shape[2], v.shape[3]
    group = H // Hkv
    n_blocks = (Tq + QUERY_BLOCK - 1) // QUERY_BLOCK
    s_block = np.empty((QUERY_BLOCK, KEY_BLOCK), dtype=q.dtype)  # scores, then probabilities
    acc_block = np.empty((QUERY_BLOCK, Dv), dtype=q.dtype)  # running sum of exp(S - m) v
    m = np.empty(QUERY_BLOCK, dtype=q.dtype)  # running max of each row's scores
    total = np.empty(QUERY_BLOCK, dtype=q.dtype)  # running sum of exp(S - m)
    for task in range(first, last):
        bh, a = task // n_blocks, (task % n_blocks) * QUERY_BLOCK
        b, h = bh // H, bh % H
        nq = QUERY_BLOCK if a + QUERY_BLOCK <= Tq else Tq - a
        acc = acc_block[:nq]
        for r in range(nq):
            m[r], total[r] = -np.inf, 0.0
            for d in range(Dv):
                acc[r, d] = 0.0
        # the keys any of these queries may see
        keys_from = _key_range(a + Tk - Tq, Tk, causal, window)[0]
        keys_to = _key_range(a + nq - 1 + Tk - Tq, Tk, causal, window)[1]
        for start in range(keys_from, keys_to, KEY_BLOCK):
            nk = KEY_BLOCK if start + KEY_BLOCK <= Tk else Tk - start
            s = s_block[:nq, :nk]
            _scores(s, q[b, h, a : a + nq], k[b, h // group], bias[b, h], a, start, causal,
                    window, scale)  # fmt: skip
            for r in range(nq):
                new_m = m[r]
                for c in range(nk):
                    new_m = s[r, c] if s[r, c] > new_m else new_m
                if new_m == -np.inf:  # nothing seen yet in this row
                    for c in range(nk):
                        s[r, c] = 0.0
                    continue
                correction = exp(m[r] - new_m)  # 0 while m is -inf
                row_sum = typed(new_m, 0.0)
                for c in range(nk):
                    p = exp(s[r, c] - new_m)
                    row_sum += p
                    s[r, c] = p
                total[r] = total[r] * correction + row_sum
                for d in range(Dv):
                    acc[r, d] *= correction
                m[r] = new_m
            if threshold:
                zero = typed(keep_scale, 0.0)
                for r in range(nq):
                    row = bh * Tq + a + r
                    for c in range(nk):
                        kept = keep(seed, threshold, row, start + c)
                        s[r, c] *= where(kept, keep_scale, zero)
            gemm_into(acc, s, v[b, h // group, start : start + nk], False, False, 1.0)  # += P v
        for r in range(nq):
            if total[r] > 0:
                for d in range(Dv):
                    out[b, h, a + r, d] = acc[r, d] / total[r]
                lse[b, h, a + r] = m[r] + math.log(total[r])
            else:  # the row sees no key: output 0, and lse +inf makes every P 0 in backward
                for d in range(Dv):
                    out[b, h, a + r, d] = 0.0
                lse[b, h, a + r] = np.inf


@parallel_jit(blas=True, strided=("bias",))
def _backward(q, k, v, bias, out, lse, dout, dq, dk, dv, causal, window, scale, seed,
              threshold, keep_scale, first, last):  # fmt: skip
    """Tasks first..last of (batch, key/value head), adding into dq, dk and dv (zero)."""
    B, H, Tq, D = q.shape
    Hkv, Tk, Dv = v.shape[1], v.shape[2], v.shape[3]
    group = H // Hkv
    p_block = np.empty((QUERY_BLOCK, KEY_BLOCK), dtype=q.dtype)  # scores, then P
    ds_block = np.empty((QUERY_BLOCK, KEY_BLOCK), dtype=q.dtype)  # dP, then dS
    dropped_block = np.empty((QUERY_BLOCK, KEY_BLOCK), dtype=q.dtype)  # P M
    delta = np.empty(QUERY_BLOCK, dtype=q.dtype)  # rowsum(dO O), which equals rowsum(dP P)
    zero = typed(keep_scale, 0.0)
    for task in range(first, last):
        b, kv = task // Hkv, task % Hkv
        keys, values = k[b, kv], v[b, kv]  # (Tk, D), (Tk, Dv)
        for h in range(kv * group, (kv + 1) * group):
            for a in range(0, Tq, QUERY_BLOCK):
                nq = QUERY_BLOCK if a + QUERY_BLOCK <= Tq else Tq - a
                query, dy = q[b, h, a : a + nq], dout[b, h, a : a + nq]  # (nq, D), (nq, Dv)
                for r in range(nq):
                    row_sum = typed(delta[0], 0.0)
                    for d in range(Dv):
                        row_sum += dy[r, d] * out[b, h, a + r, d]
                    delta[r] = row_sum
                keys_from = _key_range(a + Tk - Tq, Tk, causal, window)[0]
                keys_to = _key_range(a + nq - 1 + Tk - Tq, Tk, causal, window)[1]
                for start in range(keys_from, keys_to, KEY_BLOCK):
                    nk = KEY_BLOCK if start + KEY_BLOCK <= Tk else Tk - start
                    p, ds = p_block[:nq, :nk], ds_block[:nq, :nk]
                    dropped = dropped_block[:nq, :nk] if threshold else p
                    _scores(p, query, keys, bias[b, h], a, start, causal, window, scale)
                    gemm_into(ds, dy, values[start : start + nk], False, True, 0.0)  # dO v^T
                    for r in range(nq):  # P from each row's log-sum-exp (+inf: P = 0)
                        row = (b * H + h) * Tq + a + r
                        for c in range(nk):
                            prob = exp(p[r, c] - lse[b, h, a + r])
                            p[r, c] = prob
                            grad = ds[r, c]
                            if threshold:  # v saw P M, and dP reaches P times M
                                multiplier = where(keep(seed, threshold, row, start + c),
                                                   keep_scale, zero)  # fmt: skip
                                dropped[r, c] = prob * multiplier
                                grad *= multiplier
                            # dS = P (dP - rowsum(dO O)), times the scale
                            ds[r, c] = prob * (grad - delta[r]) * scale
                    gemm_into(dq[b, h, a : a + nq], ds, keys[start : start + nk], False, False,
                              1.0)  # += dS k  # fmt: skip
                    gemm_into(dk[b, kv, start : start + nk], ds, query, True, False, 1.0)
                    gemm_into(dv[b, kv, start : start + nk], dropped, dy, True, False, 1.0)


def _bias_view(bias, shape, dtype):
    """The additive mask as a (B, H, Tq, Tk) view (zeros when there is none): the kernels
    type it as strided whatever its layout, one compiled kernel per dtype."""
    if bias is None:
        bias = np.zeros((1, 1, 1, 1), dtype=dtype)
    return np.broadcast_to(bias.reshape((1,) * (4 - bias.ndim) + bias.shape), shape)


def _dropout_arguments(dropout, dtype):
    """(seed, threshold, 1 / (1 - p)): a hash below the threshold drops its element (as
    ``dropout_threshold``); threshold 0 means no dropout."""
    if dropout is None or not dropout.probability:
        return 0, 0, dtype.type(1.0)
    return int(dropout.seed) % 2**32, _threshold(dropout.probability), dtype.type(dropout.scale)


def sdpa_forward(xp, q, k, v, bias=None, causal=False, window=None, scale=None, dropout=None):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_forward``: same arguments, same
    results (out and saved)."""
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 1 / math.sqrt(D) if scale is None else scale
    typed_scale = q.dtype.type(scale)  # a float32 kernel computes in float32 throughout
    out = np.empty((B, H, Tq, v.shape[3]), dtype=q.dtype)
    lse = np.empty((B, H, Tq), dtype=q.dtype)
    contiguous = np.ascontiguousarray
    _forward(contiguous(q), contiguous(k), contiguous(v),
             _bias_view(bias, (B, H, Tq, Tk), q.dtype), out, lse, causal, window or 0, typed_scale,
             *_dropout_arguments(dropout, q.dtype), B * H * -(-Tq // QUERY_BLOCK))  # fmt: skip
    return out, (q, k, v, bias, out, lse, causal, window, scale, dropout)


def sdpa_backward(xp, dout, saved):
    """The kernel of the reference ``tricycle.nn.sdpa.sdpa_backward``: (dq, dk, dv)."""
    q, k, v, bias, out, lse, causal, window, scale, dropout = saved
    B, H, Tq, _ = q.shape
    Tk = k.shape[2]
    dq, dk, dv = (np.zeros(x.shape, dtype=q.dtype) for x in (q, k, v))  # added into
    contiguous = np.ascontiguousarray
    _backward(contiguous(q), contiguous(k), contiguous(v),
              _bias_view(bias, (B, H, Tq, Tk), q.dtype), contiguous(out), contiguous(lse),
              contiguous(dout, dtype=q.dtype), dq, dk, dv, causal, window or 0,
              q.dtype.type(scale), *_dropout_arguments(dropout, q.dtype),
              B * k.shape[1])  # fmt: skip
    return dq, dk, dv


dispatch.add("scaled_dot_product_attention", "cpu", (sdpa_forward, sdpa_backward))
