"""torch.nn.functional's remaining functions, each a composition of tricycle's existing ops:

- ``linear_cross_entropy``: ``cross_entropy(linear(x, W, b), target)`` with torch's checks
  and its K-dimensional form (W (C, d_1, ..., d_K, in) gives logits (N, C, d_1, ..., d_K));
  torch's ``options`` (a chunked evaluation that saves memory, same numbers) is accepted and
  not used;
- ``multi_head_attention_forward``: torch's functional attention, run by a
  ``MultiheadAttention`` (its math, masks and weights) with the given tensors in place of its
  parameters (``tricycle.func.functional_call``: gradients reach the given tensors);
- ``conv_tbc``: a 1-d convolution of a (time, batch, channels) input, as ``conv1d``;
- ``rrelu_`` (``rrelu`` written into the input) and ``native_channel_shuffle``
  (``channel_shuffle``);
- ``embedding`` with torch's arguments: the lookup of ``tricycle.layers.embedding``;
  ``max_norm`` renormalises the looked-up rows of ``weight`` in place first (torch's
  ``embedding_renorm_``, outside the graph, as torch's), ``scale_grad_by_freq`` divides each
  looked-up row's gradient by the number of times its id occurs in ``input`` (first order
  only: create_graph refuses it); ``sparse`` is accepted (the gradient is dense).
"""

import importlib
import math

import numpy as np

from tricycle import checks, func, layers, random
from tricycle.graph import no_grad
from tricycle.nn.functional_losses import cross_entropy
from tricycle.nn.functional_more import conv1d
from tricycle.nn.multihead import MultiheadAttention
from tricycle.nn.norms_more import channel_shuffle
from tricycle.nn.shrinks import rrelu
from tricycle.tensor import Tensor, as_tensor

__all__ = ["conv_tbc", "embedding", "linear_cross_entropy", "multi_head_attention_forward",
           "native_channel_shuffle", "rrelu_"]  # fmt: skip


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,  # noqa: A002
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Tensor:  # fmt: skip
    """torch's ``F.linear_cross_entropy``: the cross entropy of the logits ``input W^T + b``,
    input (in,) or (N, in), W (C, in) or (C, d_1, ..., d_K, in) (then N is needed and the
    logits are (N, C, d_1, ..., d_K)), b shaped as W without its last axis."""
    x, w = as_tensor(input), as_tensor(linear_weight)
    if x.ndim not in (1, 2):
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {x.ndim}")
    if w.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {w.ndim}")
    batches, in_features = x.shape[:-1], x.shape[-1]
    if in_features != w.shape[-1]:
        raise RuntimeError(
            "expected equal input and linear_weight last dimensions (in_features), got "
            f"{in_features} and {w.shape[-1]}, respectively"
        )
    C, out_features = w.shape[0], tuple(w.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (C, *out_features):
        raise RuntimeError(
            f"expected linear_bias shape {(C, *out_features)}, got {tuple(linear_bias.shape)}"
        )
    if out_features and not batches:
        raise RuntimeError(
            f"K-dimensional loss defined by linear_weight shape {tuple(w.shape)} requires "
            f"batched input, (N, {in_features}), got unbatched input with shape {x.shape}"
        )
    logits_shape = (*batches, C, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    flat = math.prod(out_features, start=C)
    logits = x @ w.reshape(flat, in_features).transpose(1, 0)  # (..., C prod(d))
    if linear_bias is not None:
        logits = logits + as_tensor(linear_bias).reshape(flat)
    return cross_entropy(logits.reshape(logits_shape), target, weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)  # fmt: skip


def conv_tbc(input, weight, bias, pad: int = 0) -> Tensor:  # noqa: A002 - torch's names
    """torch's ``F.conv_tbc``: input (T, B, C_in), weight (K, C_in, C_out), bias (C_out,),
    ``pad`` steps of zeros at both ends of time: (T + 2 pad - K + 1, B, C_out), as
    ``conv1d`` of the input read as (B, C_in, T)."""
    x, w = as_tensor(input), as_tensor(weight)
    checks.non_negative_int("conv_tbc", "pad", pad)
    if x.ndim != 3 or w.ndim != 3 or x.shape[2] != w.shape[1]:
        raise RuntimeError(
            f"conv_tbc: expected input (T, B, C_in) and weight (K, C_in, C_out) with the same "
            f"C_in, got input {x.shape} and weight {w.shape}"
        )
    if tuple(bias.shape) != (w.shape[2],):
        raise RuntimeError(f"conv_tbc: bias must be ({w.shape[2]},), got {tuple(bias.shape)}")
    out = conv1d(x.permute(1, 2, 0), w.permute(2, 1, 0), bias, padding=pad)  # (B, C_out, T')
    return out.permute(2, 0, 1)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:  # fmt: skip
    """torch's ``F.rrelu_``: ``rrelu`` written into ``input``, which is returned."""
    return input.copy_(rrelu(input, lower, upper, training))


def native_channel_shuffle(input, groups: int) -> Tensor:  # noqa: A002 - torch's names
    """torch's ``F.native_channel_shuffle``: ``channel_shuffle``."""
    return channel_shuffle(input, groups)


_ATTENTION: dict = {}  # the MultiheadAttention of each configuration, made once


def multi_head_attention_forward(
    query, key, value, embed_dim_to_check: int, num_heads: int, in_proj_weight, in_proj_bias,
    bias_k, bias_v, add_zero_attn: bool, dropout_p: float, out_proj_weight, out_proj_bias,
    training: bool = True, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
    use_separate_proj_weight: bool = False, q_proj_weight=None, k_proj_weight=None,
    v_proj_weight=None, static_k=None, static_v=None, average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple:  # fmt: skip
    """torch's ``F.multi_head_attention_forward``: (attn_output, attn_weights or None) of
    inputs (L, N, E) (or unbatched (L, E)), with torch's (out, in) weights: the packed
    ``in_proj_weight`` (3E, E), or ``q/k/v_proj_weight`` with ``use_separate_proj_weight``,
    ``bias_k``/``bias_v`` (1, 1, E). ``static_k``/``static_v`` (precomputed heads) are not
    supported."""
    op = "multi_head_attention_forward"
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    E = query.shape[-1]
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {E}")  # fmt: skip
    if E % num_heads:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if (bias_k is None) != (bias_v is None):
        raise AssertionError(f"{op}: bias_k and bias_v must both be given or both be None")
    if static_k is not None or static_v is not None:
        raise NotImplementedError(f"{op}: static_k and static_v are not supported by tricycle")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError(f"{op}: use_separate_proj_weight needs q, k and v_proj_weight")
        weights = [as_tensor(w) for w in (q_proj_weight, k_proj_weight, v_proj_weight)]
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        packed = as_tensor(in_proj_weight)
        weights = [packed[i * E : (i + 1) * E] for i in range(3)]
    kdim, vdim = weights[1].shape[1], weights[2].shape[1]
    config = (E, num_heads, float(dropout_p), bias_k is not None, bool(add_zero_attn), kdim, vdim)
    if config not in _ATTENTION:
        with random.fork_rng():  # its own initial weights are never used: draw nothing
            _ATTENTION[config] = MultiheadAttention(E, num_heads, dropout_p, True,
                                                    bias_k is not None, bool(add_zero_attn),
                                                    kdim, vdim)  # fmt: skip
    attention = _ATTENTION[config].train(training)
    if training and dropout_p:  # each call's draws from tricycle's generator, as F.dropout's
        attention.attention_dropout.rng = np.random.default_rng(random.draw_seed())

    def bias(b, i):
        if b is None:
            return query.new(query.xp.zeros(E, dtype=query.dtype), requires_grad=False)
        return as_tensor(b)[i * E : (i + 1) * E] if i is not None else as_tensor(b)

    params = {"out_projection.weights": as_tensor(out_proj_weight).transpose(1, 0),
              "out_projection.bias": bias(out_proj_bias, None)}  # fmt: skip
    for i, (name, w) in enumerate(zip("qkv", weights)):
        params[f"{name}_projection.weights"] = w.transpose(1, 0)  # torch's (out, in): (in, out)
        params[f"{name}_projection.bias"] = bias(in_proj_bias, i)
    if bias_k is not None:
        params["bias_k"] = as_tensor(bias_k).reshape(E)
        params["bias_v"] = as_tensor(bias_v).reshape(E)
    return func.functional_call(attention, params, (query, key, value), dict(
        key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
        average_attn_weights=average_attn_weights, is_causal=is_causal))  # fmt: skip


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,  # noqa: A002
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:  # fmt: skip
    """torch's ``F.embedding``: the rows of ``weight`` (V, E) at the integer ids ``input``
    (see the module docstring)."""
    # torch_embedding imports tricycle.nn: reached by name, not in an import cycle
    renorm = importlib.import_module("tricycle.torch_embedding").embedding_renorm_
    op = "embedding"
    checks.boolean(op, "scale_grad_by_freq", scale_grad_by_freq)
    checks.boolean(op, "sparse", sparse)
    if max_norm is not None:
        checks.real(op, "max_norm", max_norm)
        checks.real(op, "norm_type", norm_type)
        with no_grad():  # torch's: the table changes in place, outside the graph
            renorm(weight, input, max_norm, norm_type)
    out = layers.embedding(input, weight, padding_idx=padding_idx)
    if not scale_grad_by_freq or not out.requires_grad:
        return out
    xp = weight.xp
    ids = xp.asarray(input.array if isinstance(input, Tensor) else input)
    _, where, counts = xp.unique(ids.reshape(-1), return_inverse=True, return_counts=True)
    factor = (1 / counts[where]).reshape(*ids.shape, 1).astype(out.dtype)

    def scaled(dout):  # the gradient of each looked-up row over its id's count
        return dout * factor

    # a plain back_fn: under create_graph the walk refuses it (an identity that scales its
    # gradient is no function of w, so its higher derivatives would be wrong)
    return out.new(out.array, args=(out,), back_fns=(scaled,), name=op)
