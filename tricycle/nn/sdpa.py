"""Scaled dot-product attention in general: any mask, cross-attention, sliding windows, GQA.

    out = softmax(q k^T * scale + bias, hidden keys removed) v

over queries q (B, H, Tq, D) and keys and values k, v (B, Hkv, Tk, D): the GPT's fused
attention (``tricycle.attention``) is the causal self-attention special case. Here

- there is no causal mask unless ``causal=True`` (a BERT-style encoder sees both ways);
- ``mask`` is broadcastable to (B, H, Tq, Tk): booleans (True: the query may see the key, as
  torch's ``attn_mask``) or an additive float bias (0 to see, -inf to hide, anything between);
  a key padding mask (B, Tk) is ``key_padding_mask(padding)``, of shape (B, 1, 1, Tk);
- queries and keys may come from different sequences (cross-attention: Tq != Tk);
- ``window=W`` lets a query see only keys less than W positions away: with ``causal`` the
  last W positions up to and including its own;
- Hkv may be any divisor of H (grouped-query attention): query head h reads key/value head
  h // (H / Hkv), as torch's ``enable_gqa``.

Positions: query i sits at position i + Tk - Tq, so with Tq < Tk the queries are the last Tq
of the keys' positions (a cache of earlier keys, as flash-attention aligns them). A row that
sees no key at all (every key hidden) has no softmax: its output is 0, and no gradient flows
through it (as torch's). A float mask that requires grad (a learnt bias: Swin's relative
positions, T5's buckets) gets dS summed to its own shape (0 at hidden entries and in rows that
see no key, as torch's); any other mask is data.

Backward, with P the probabilities, O = P v and dO the output's gradient::

    dv = P^T dO        dP = dO v^T        dS = P * (dP - rowsum(dO * O))
    dq = dS k * scale                     dk = dS^T q * scale

(flash-attention's identity rowsum(dP * P) = rowsum(dO * O) avoids a (Tq, Tk) product), and
a learnt mask's gradient is dS itself. The
forward saves only the log-sum-exp of each row (B, H, Tq) beside the arrays that exist anyway
(q, k, v, the mask, the output); the backward recomputes P = exp(S - lse). Dropout on P (the
attention dropout of torch's ``dropout_p``) uses the counter-based mask of
``tricycle.dropout_mask``, drawn again in the backward from its seed: O = (P * M) v, and then
dv = (P * M)^T dO and dS = P * (M * dP - rowsum(dO * O)).

``scaled_dot_product_attention`` wraps the pair as a Tensor op; a backend may register faster
kernels with the same signatures for "scaled_dot_product_attention" (``tricycle.dispatch``);
they give no mask gradient, so a learnt mask takes the reference path. Inputs of another batch
rank (..., H, T, D) go through the 4-D op by reshapes (torch's (T, D) and (N, T, D) too).
"""

import functools
import math

import numpy as np

from tricycle import checks, dispatch, random
from tricycle.backend import check_same_device, is_float
from tricycle.binary import unbroadcast
from tricycle.dropout_mask import NO_DROPOUT, AttentionDropout, attention_multiplier, mask_seed
from tricycle.layers import shared_back_fns
from tricycle.nn.attention.bias import CausalBias, CausalVariant, causal_mask
from tricycle.tensor import Tensor, as_tensor

OP = "scaled_dot_product_attention"

# ------------------------------------------------------------------ array functions


def attention_bias(xp, mask, dtype):
    """A mask as an additive bias of ``dtype``: booleans become 0 (seen) and -inf (hidden),
    numbers are kept; None stays None."""
    if mask is None:
        return None
    mask = xp.asarray(mask)
    if mask.dtype == bool:
        return xp.where(mask, 0, -xp.inf).astype(dtype)
    return mask.astype(dtype, copy=False)


def visible_keys(xp, n_queries: int, n_keys: int, causal: bool, window: int | None):
    """(Tq, Tk) booleans: which keys each query may see by position, or None for all.

    Query i is at position p = i + Tk - Tq; causal hides keys after p, ``window`` hides keys
    W or more positions away.
    """
    if not causal and window is None:
        return None
    positions = xp.arange(n_queries)[:, None] + (n_keys - n_queries)  # (Tq, 1)
    distance = positions - xp.arange(n_keys)[None, :]  # (Tq, Tk): p - j
    seen = xp.ones((n_queries, n_keys), dtype=bool)
    if causal:
        seen &= distance >= 0
    if window is not None:
        seen &= (distance < window) & (-distance < window)
    return seen


def _grouped(x, n_kv_heads: int):
    """(B, H, ...) -> (B, Hkv, H / Hkv, ...): the query heads that share a key/value head
    side by side (a view)."""
    return x.reshape(x.shape[0], n_kv_heads, x.shape[1] // n_kv_heads, *x.shape[2:])


def _grouped_bias(bias, n_kv_heads: int):
    """A bias broadcastable to (B, H, Tq, Tk) -> broadcastable to (B, Hkv, G, Tq, Tk)."""
    bias = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
    if bias.shape[1] == 1:
        return bias[:, :, None]
    return _grouped(bias, n_kv_heads)


def _scores(xp, q, k, bias, causal, window, scale):
    """S = q k^T * scale + bias with hidden keys at -inf: (B, Hkv, G, Tq, Tk) from grouped
    queries (B, Hkv, G, Tq, D) and keys (B, Hkv, Tk, D)."""
    scores = xp.matmul(q, k[:, :, None].swapaxes(-1, -2))  # (B, Hkv, G, Tq, Tk)
    scores *= scale
    if bias is not None:
        scores += _grouped_bias(bias, k.shape[1])
    seen = visible_keys(xp, q.shape[-2], k.shape[-2], causal, window)
    if seen is not None:
        scores = xp.where(seen, scores, -xp.inf)
    return scores


def _dropout_multiplier(xp, dropout: AttentionDropout, shape, n_kv_heads: int, dtype):
    """M = keep / (1 - p) of every probability, (B, Hkv, G, Tq, Tk), for (B, H, Tq, Tk) =
    ``shape``: element (b, h, i, j) is kept by ``keep_bits`` of row (b H + h) Tq + i, key j."""
    multiplier = attention_multiplier(xp, dropout.seed, dropout.probability, shape, dtype)
    return _grouped(multiplier, n_kv_heads)


def sdpa_forward(xp, q, k, v, bias=None, causal=False, window=None, scale=None,
                 dropout: AttentionDropout = NO_DROPOUT):  # fmt: skip
    """Attention of q (B, H, Tq, D) over k (B, Hkv, Tk, D) and v (B, Hkv, Tk, Dv)
    -> (out (B, H, Tq, Dv), saved).

    ``bias`` is an additive mask broadcastable to (B, H, Tq, Tk) (``attention_bias``) or
    None; ``scale`` defaults to 1 / sqrt(D). ``saved`` is what ``sdpa_backward`` needs; nothing
    in it may be modified until the backward has run.
    """
    B, H, Tq, _ = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = _scores(xp, _grouped(q, Hkv), k, bias, causal, window, scale)  # (B, Hkv, G, Tq, Tk)

    # a stable softmax over the keys; a row with every key hidden has max -inf: shift it by 0
    top = scores.max(axis=-1, keepdims=True)  # (B, Hkv, G, Tq, 1)
    top = xp.where(top == -xp.inf, 0, top)
    probs = xp.exp(scores - top)  # hidden keys give exp(-inf) = 0
    total = probs.sum(axis=-1, keepdims=True)
    seen = total > 0  # false only where every key is hidden
    probs /= xp.where(seen, total, 1)
    # log-sum-exp per row; +inf where nothing is seen, so that exp(S - lse) is 0 there too
    lse = xp.where(seen, top + xp.log(xp.where(seen, total, 1)), xp.inf)[..., 0]

    if dropout.probability:
        probs *= _dropout_multiplier(xp, dropout, (B, H, Tq, Tk), Hkv, q.dtype)
    out = xp.matmul(probs, v[:, :, None])  # (B, Hkv, G, Tq, Dv)
    out = out.reshape(B, H, Tq, v.shape[-1]).astype(q.dtype, copy=False)  # bfloat16: in float32
    lse = lse.reshape(B, H, Tq)
    return out, (q, k, v, bias, out, lse, causal, window, scale, dropout)


def sdpa_backward(xp, dout, saved, mask=None):
    """Gradient of ``sdpa_forward``: dout (B, H, Tq, Dv) -> (dq, dk, dv) in the shapes of
    q, k and v; with ``mask`` = (shape, dtype) of a learnt float mask also its gradient dS
    summed to that shape: (dq, dk, dv, dmask)."""
    q, k, v, bias, out, lse, causal, window, scale, dropout = saved
    B, H, Tq, _ = q.shape
    Hkv, Tk = k.shape[1], k.shape[2]
    dout = dout.astype(q.dtype, copy=False)
    q_g, dout_g, out_g = _grouped(q, Hkv), _grouped(dout, Hkv), _grouped(out, Hkv)

    # the forward's probabilities again, from the scores and each row's log-sum-exp
    scores = _scores(xp, q_g, k, bias, causal, window, scale)  # (B, Hkv, G, Tq, Tk)
    probs = xp.exp(scores - _grouped(lse, Hkv)[..., None])
    dprobs = xp.matmul(dout_g, v[:, :, None].swapaxes(-1, -2))  # dP = dO v^T
    if dropout.probability:  # through M: v saw P * M, and dP reaches P times M
        multiplier = _dropout_multiplier(xp, dropout, (B, H, Tq, Tk), Hkv, q.dtype)
        dropped = probs * multiplier
        dprobs *= multiplier
    else:
        dropped = probs
    # every query head of a group adds to its shared key/value head
    dv = xp.matmul(dropped.swapaxes(-1, -2), dout_g).sum(axis=2)  # (B, Hkv, Tk, Dv)

    # softmax backward: dS = P (dP - rowsum(dP P)), with rowsum(dP P) = rowsum(dO O)
    dscores = dprobs
    dscores -= (dout_g * out_g).sum(axis=-1, keepdims=True)
    dscores *= probs  # hidden keys have P = 0: no gradient
    if mask is None:
        dscores *= scale
    else:  # S = q k^T scale + mask: the mask's gradient is dS, unscaled
        dmask = unbroadcast(dscores.reshape(B, H, Tq, Tk), mask[0]).astype(mask[1], copy=False)
        dscores = dscores * scale
    dq = xp.matmul(dscores, k[:, :, None]).reshape(q.shape)  # (B, H, Tq, D)
    dk = xp.matmul(dscores.swapaxes(-1, -2), q_g).sum(axis=2)  # (B, Hkv, Tk, D)
    grads = tuple(d.astype(x.dtype, copy=False) for d, x in ((dq, q), (dk, k), (dv, v)))
    return grads if mask is None else (*grads, dmask)


# ------------------------------------------------------------------ the Tensor op


def key_padding_mask(padding) -> Tensor | np.ndarray:
    """(B, Tk) booleans, True for a real token and False for padding -> the (B, 1, 1, Tk)
    mask that hides the padding from every query and head."""
    array = padding.array if isinstance(padding, Tensor) else padding
    if array.ndim != 2 or array.dtype != bool:
        raise ValueError(
            f"key_padding_mask: expected booleans of shape (batch, keys), got {array.dtype} "
            f"with shape {array.shape}"
        )
    return array[:, None, None, :]


def _check_inputs(q: Tensor, k: Tensor, v: Tensor, mask, window):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(
            f"{OP}: expected q (B, H, Tq, D), k (B, Hkv, Tk, D) and v (B, Hkv, Tk, Dv), got "
            f"shapes {q.shape}, {k.shape} and {v.shape}"
        )
    B, H, Tq, D = q.shape
    if k.shape[0] != B or v.shape[:3] != k.shape[:3] or k.shape[3] != D or H % k.shape[1]:
        raise ValueError(
            f"{OP}: q {q.shape}, k {k.shape} and v {v.shape} do not fit: the batch must agree, "
            "k and v must have the same (B, Hkv, Tk), q and k the same D, and Hkv divide H"
        )
    if 0 in q.shape or 0 in k.shape or 0 in v.shape:
        raise ValueError(f"{OP}: empty input: q {q.shape}, k {k.shape}, v {v.shape}")
    if not (q.dtype == k.dtype == v.dtype) or not is_float(q.dtype):  # bfloat16: kind "V"
        raise TypeError(
            f"{OP}: q, k and v must share one float dtype, got {q.dtype}, {k.dtype}, {v.dtype}"
        )
    if mask is not None:
        shape = (B, H, Tq, k.shape[2])
        try:
            fits = mask.ndim <= 4 and np.broadcast_shapes(mask.shape, shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"{OP}: a mask of shape {mask.shape} does not broadcast to {shape}")
        if mask.dtype != bool and not is_float(mask.dtype):
            raise TypeError(f"{OP}: a mask holds booleans or floats, got dtype {mask.dtype}")
    checks.optional(checks.positive_int)(OP, "window", window)


def _hide(xp, mask, seen):
    """``mask`` (booleans or an additive bias) with the keys ``seen`` does not hold hidden."""
    return mask & seen if mask.dtype == bool else xp.where(seen, mask, -xp.inf)


def _seed(owner: str, name: str, value):
    """A mask's seed (``mask_seed``), or None: drawn from tricycle's generator when needed."""
    return None if value is None else mask_seed(owner, name, value)


def _either(name: str, value, default, torch_name: str, torch_value):
    """tricycle's argument ``name`` or torch's ``torch_name`` for it: whichever is given."""
    if torch_value is None:
        return value
    if (value is not None) if default is None else value != default:  # both given
        raise TypeError(f"{OP}: got {name}={value!r} and torch's {torch_name}={torch_value!r}; "
                        f"give one of them")  # fmt: skip
    return torch_value


@checks.arguments(
    causal=checks.boolean,
    scale=checks.optional(checks.positive),
    dropout_prob=checks.probability,
    seed=_seed,
    is_causal=checks.optional(checks.boolean),
    dropout_p=checks.optional(checks.probability),
    enable_gqa=checks.boolean,
)
def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask=None,
    causal: bool = False,
    window: int | None = None,
    scale: float | None = None,
    dropout_prob: float = 0.0,
    seed=None,
    *,
    attn_mask=None,
    is_causal: bool | None = None,
    dropout_p: float | None = None,
    enable_gqa: bool = True,
) -> Tensor:
    """softmax(q k^T * scale + mask) v as one node of the graph (see the module docstring).

    q (B, H, Tq, D), k (B, Hkv, Tk, D), v (B, Hkv, Tk, Dv) -> (B, H, Tq, Dv). ``mask``: an
    array (or Tensor, taken as a constant) of booleans or additive floats broadcastable to
    (B, H, Tq, Tk). ``dropout_prob`` drops probabilities (inverted dropout); ``seed`` picks
    the mask (the same seed, the same mask; None, the default: a seed drawn from tricycle's
    generator, so ``tricycle.manual_seed`` repeats the masks and each call has its own).

    torch's keywords name the same arguments: ``attn_mask`` (``mask``), ``is_causal``
    (``causal``) and ``dropout_p`` (``dropout_prob``), so that torch's call
    ``F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p, is_causal=True)``
    runs as written; ``enable_gqa`` is accepted (grouped key/value heads are always allowed).
    Past q, k and v, give torch's arguments by name: the fifth position is ``causal`` here.
    With Tq != Tk, torch's ``is_causal=True`` lets query i see keys j <= i (upper left), where
    ``causal=True`` aligns the queries with the last keys (lower right); a ``CausalBias`` of
    ``tricycle.nn.attention.bias`` as the mask picks either.
    """
    if isinstance(attn_mask, CausalBias):
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:  # tricycle's own causal flag
            causal, is_causal = True, None
        else:
            is_causal = True
        attn_mask = None
    upper_left = bool(is_causal)
    mask = _either("mask", mask, None, "attn_mask", attn_mask)
    causal = _either("causal", causal, False, "is_causal", is_causal)
    dropout_prob = _either("dropout_prob", dropout_prob, 0.0, "dropout_p", dropout_p)
    if seed is None:
        seed = random.draw_seed() if dropout_prob else 0
    q, k, v = as_tensor(q), as_tensor(k), as_tensor(v)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return _any_rank(q, k, v, mask, causal, upper_left, window, scale, dropout_prob, seed)
    learnt = mask if isinstance(mask, Tensor) and mask.requires_grad else None
    if isinstance(mask, Tensor):
        mask = mask.array
    xp = check_same_device(OP, q.array, k.array, v.array, *([] if mask is None else [mask]))
    if mask is not None:
        mask = xp.asarray(mask)
    _check_inputs(q, k, v, mask, window)
    if upper_left and q.shape[2] != k.shape[2]:  # torch's is_causal: the upper-left triangle
        seen = causal_mask(xp, CausalVariant.UPPER_LEFT, q.shape[2], k.shape[2])
        mask = seen if mask is None else _hide(xp, mask, seen)
        causal = False
    bias = attention_bias(xp, mask, q.dtype)
    dropout = AttentionDropout(dropout_prob, seed) if dropout_prob else NO_DROPOUT
    if learnt is None:
        forward, backward = dispatch.choose(
            OP, (sdpa_forward, sdpa_backward), q.array, k.array, v.array, bias
        )
        args = (q, k, v)
    else:  # the reference: a backend's kernels give no dS
        forward = sdpa_forward
        backward = functools.partial(sdpa_backward, mask=(learnt.shape, learnt.dtype))
        args = (q, k, v, learnt)
    out, saved = forward(xp, q.array, k.array, v.array, bias, causal, window, scale, dropout)
    back_fns = shared_back_fns(lambda dout: backward(xp, dout, saved), len(args))
    return Tensor(out, args=args, back_fns=back_fns, name="sdpa")


def _any_rank(q, k, v, mask, causal, upper_left, window, scale, dropout_prob, seed):
    """Attention of inputs (..., H, T, D) of any other batch rank, as torch's: (T, D) and
    (N, T, D) get leading axes of 1, more batch axes are flattened into one; the mask (a
    Tensor or an array broadcastable to (..., H, Tq, Tk)) follows."""
    if not (q.ndim == k.ndim == v.ndim >= 2) or not q.shape[:-3] == k.shape[:-3] == v.shape[:-3]:
        raise ValueError(
            f"{OP}: expected q (..., H, Tq, D), k (..., Hkv, Tk, D) and v (..., Hkv, Tk, Dv) "
            f"with the same batch axes (...), got shapes {q.shape}, {k.shape} and {v.shape} "
            "(batch axes that broadcast are not supported)"
        )
    batch = q.shape[:-3]

    def four(x):  # (..., H, T, D) -> (B, H, T, D)
        if x.ndim > 4:
            return x.reshape(-1, *x.shape[-3:])
        return x.reshape(*(1,) * (4 - x.ndim), *x.shape)

    if mask is not None and not isinstance(mask, Tensor):
        mask = q.xp.asarray(mask)
    if mask is not None and q.ndim > 4 and mask.ndim > 3:  # its batch axes flattened as q's
        shape = (*batch, *mask.shape[-3:])
        mask = mask.expand(*shape) if isinstance(mask, Tensor) else q.xp.broadcast_to(mask, shape)
        mask = mask.reshape(-1, *shape[-3:])
    out = scaled_dot_product_attention(
        four(q), four(k), four(v), mask, causal and not upper_left, window, scale,
        dropout_prob, seed, is_causal=upper_left or None,
    )  # fmt: skip
    return out.reshape(*q.shape[:-1], v.shape[-1])
