"""``MultiheadAttention`` as PyTorch's: its arguments, layouts, masks and returned weights.

    q = query Wq,  k = key Wk,  v = value Wv               # (N, L, E), (N, S, E), (N, S, E)
    [k | bias_k, v | bias_v]   [k | 0, v | 0]               # add_bias_kv, add_zero_attn
    heads: E = H x D                                        # (N, H, L, D), (N, H, S, D)
    P = softmax(q k^T / sqrt(D) + mask);  y = P v           # (N, H, L, S), (N, H, L, D)
    out = concat(heads of y) Wo                             # (N, L, E)

Inputs are (L, N, E) sequence first, (N, L, E) with ``batch_first``, or unbatched (L, E);
``forward`` returns (out, weights): the probabilities P averaged over the heads (N, L, S), or
per head (N, H, L, S) with ``average_attn_weights=False``, or None with
``need_weights=False``. The masks mean what they mean in torch: a boolean True hides a key
(the opposite of ``tricycle.nn.sdpa``'s booleans), a float mask is added to the scores;
``key_padding_mask`` is (N, S), ``attn_mask`` (L, S) or (N * H, L, S); ``is_causal`` hides
the keys after each query (j > i). The masks become one additive bias (0 or -inf, plus the
float masks) in the layout of ``tricycle.nn.sdpa``; a float ``attn_mask`` that requires grad
(a learnt bias) stays a Tensor in it and gets its gradient, as torch's.

Without weights the core is the fused ``scaled_dot_product_attention``. With them, P itself
is an output (differentiable, as torch's), so the core is written out with the existing ops
(einsums and the fused softmax and dropout), as torch's own MultiheadAttention does. Either
way a query that sees no key at all gets zero weights and a zero attention output (torch's
weighted path gives NaN there).

Differences from torch: the projections are four ``Dense`` layers with weights (in, out)
(``q_projection`` ... ``out_projection``) rather than a packed ``in_proj_weight``;
``load_torch_state_dict`` reads torch's layout. ``is_causal`` needs no ``attn_mask`` (torch
requires one, as a hint); given both, both apply.
"""

import math

import numpy as np

from tricycle import backend, checks
from tricycle.einsum import Einsum
from tricycle.functions import Softmax
from tricycle.initialisers import init_normal
from tricycle.layers import Dense, Dropout, Layer, dropout, parameter
from tricycle.nn.sdpa import scaled_dot_product_attention
from tricycle.ops import concatenate, where
from tricycle.tensor import Tensor, as_tensor, check_float

OWNER = "MultiheadAttention"
_SCORES = Einsum("nhld,nhsd->nhls")  # q (N, H, L, D) x k (N, H, S, D)
_MIX = Einsum("nhls,nhsd->nhld")  # P (N, H, L, S) x v (N, H, S, D)
_SOFTMAX = Softmax()


class MultiheadAttention(Layer):
    """Multi-head attention with PyTorch's signature (see the module docstring).

    Args:
        embed_dim: E, the width of the queries and of the output; divisible by ``num_heads``.
        num_heads: H heads of size E / H.
        dropout: the probability of dropping an attention probability (training only).
        bias: biases in the four projections.
        add_bias_kv: learn one more key and value (``bias_k``, ``bias_v``, each (E,)), seen
            by every query.
        add_zero_attn: one more key and value of zeros, seen by every query.
        kdim, vdim: the widths of the keys and values (None: E).
        batch_first: inputs and output (N, L, E) rather than (L, N, E).
    """

    @checks.arguments(
        embed_dim=checks.positive_int,
        num_heads=checks.positive_int,
        dropout=checks.probability,
        bias=checks.boolean,
        add_bias_kv=checks.boolean,
        add_zero_attn=checks.boolean,
        kdim=checks.optional(checks.positive_int),
        vdim=checks.optional(checks.positive_int),
        batch_first=checks.boolean,
    )
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None,
                 batch_first: bool = False):  # fmt: skip
        if embed_dim % num_heads:
            raise ValueError(
                f"{OWNER}: embed_dim={embed_dim} must be divisible by num_heads={num_heads}"
            )
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        self.bias_k = self.bias_v = None
        if add_bias_kv:  # torch's xavier_normal_ of a (1, 1, E) tensor: std sqrt(2 / (E + E))
            self.bias_k = parameter(init_normal((embed_dim,), embed_dim**-0.5), "bias_k")
            self.bias_v = parameter(init_normal((embed_dim,), embed_dim**-0.5), "bias_v")
        self.q_projection = Dense(embed_dim, embed_dim, bias, name="q")
        self.k_projection = Dense(self.kdim, embed_dim, bias, name="k")
        self.v_projection = Dense(self.vdim, embed_dim, bias, name="v")
        self.out_projection = Dense(embed_dim, embed_dim, bias, name="attn_out")
        self.attention_dropout = Dropout(dropout)

    @checks.arguments(
        need_weights=checks.boolean,
        average_attn_weights=checks.boolean,
        is_causal=checks.boolean,
    )
    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """(out, weights): out in the layout of ``query``; weights (N, L, S), (N, H, L, S)
        or None (unbatched: without the N axis)."""
        query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
        batched = self._check_inputs(query, key, value)
        if not batched:  # one sequence: a batch of one
            query, key, value = (x.reshape(1, *x.shape) for x in (query, key, value))
        elif not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (x.transpose(1, 0, 2) for x in (query, key, value))
        (N, L, E), S = query.shape, key.shape[1]

        q = self._heads(self.q_projection(query))  # (N, H, L, D)
        k, v = self.k_projection(key), self.v_projection(value)  # (N, S, E)
        k, v = self._extra_keys(k, self.bias_k), self._extra_keys(v, self.bias_v)
        k, v = self._heads(k), self._heads(v)  # (N, H, S', D), S' = S + the extra keys
        bias = self._bias(query.xp, query.dtype, key_padding_mask, attn_mask, is_causal,
                          (N, L, S), batched, k.shape[2] - S)  # fmt: skip

        p = self.attention_dropout.probability if self.training else 0.0
        if need_weights:
            weights = attention_probabilities(q, k, bias)  # (N, H, L, S')
            if p:  # torch returns the probabilities after dropout, as used
                weights = dropout(weights, p, rng=self.attention_dropout.rng)
            y = _MIX(weights, v)  # (N, H, L, D)
        else:
            seed = self.attention_dropout.step_seed(q.array) if p else 0
            y = scaled_dot_product_attention(q, k, v, bias, dropout_prob=p, seed=seed)
            weights = None
        out = self.out_projection(y.transpose(0, 2, 1, 3).reshape(N, L, E))  # (N, L, E)

        if weights is not None and average_attn_weights:
            weights = weights.mean(axis=1)  # (N, L, S')
        if not batched:
            out = out.reshape(L, E)
            weights = None if weights is None else weights.reshape(weights.shape[1:])
        elif not self.batch_first:
            out = out.transpose(1, 0, 2)  # (L, N, E)
        return out, weights

    # ------------------------------------------------------------------ the steps
    def _heads(self, x: Tensor) -> Tensor:
        """(N, T, E) -> (N, H, T, D)."""
        N, T, _ = x.shape
        return x.reshape(N, T, self.num_heads, self.head_dim).transpose(0, 2, 1, 3)

    def _extra_keys(self, x: Tensor, learnt: Tensor | None) -> Tensor:
        """(N, S, E) keys or values followed by the learnt one (add_bias_kv) and the zero one
        (add_zero_attn), in torch's order: (N, S', E)."""
        N, _, E = x.shape
        if learnt is not None:
            x = concatenate([x, learnt.reshape(1, 1, E).repeat(N, axis=0)], axis=1)
        if self.add_zero_attn:
            x = concatenate([x, as_tensor(x.xp.zeros((N, 1, E), dtype=x.dtype))], axis=1)
        return x

    def _bias(self, xp, dtype, key_padding_mask, attn_mask, is_causal, sizes, batched, extra):
        """The masks as one additive bias broadcastable to (N, H, L, S + extra), or None:
        -inf where a key is hidden, the float masks' values added; the extra keys (bias_kv,
        zero_attn) are seen by every query."""
        N, L, S = sizes
        H = self.num_heads
        parts = []
        if attn_mask is not None:
            learnt = isinstance(attn_mask, Tensor) and attn_mask.requires_grad  # a float bias
            mask = attn_mask if learnt else _as_bias(xp, attn_mask, dtype, "attn_mask")
            heads = (N * H, L, S) if batched else (H, L, S)
            if mask.shape not in ((L, S), heads):
                raise ValueError(
                    f"{OWNER}: attn_mask must have shape {(L, S)} or {heads} (queries L, "
                    f"keys S, heads H={H}), got {mask.shape}"
                )
            parts.append(mask.reshape(-1, H, L, S) if mask.ndim == 3 else mask)  # (., ., L, S)
        if key_padding_mask is not None:
            mask = _as_bias(xp, key_padding_mask, dtype, "key_padding_mask")
            if mask.shape != ((N, S) if batched else (S,)):
                expected = (N, S) if batched else (S,)
                raise ValueError(
                    f"{OWNER}: key_padding_mask must have shape {expected} (batch N, keys S), "
                    f"got {mask.shape}"
                )
            parts.append(mask.reshape(N, 1, 1, S))
        if is_causal:  # query i sees keys 0..i
            later = xp.triu(xp.ones((L, S), dtype=bool), k=1)
            parts.append(xp.where(later, -xp.inf, 0).astype(dtype))
        if not parts:
            return None
        bias = parts[0]  # a learnt attn_mask (a Tensor) first: the others add to it
        for part in parts[1:]:
            bias = bias + part
        if extra:  # the appended keys: visible (0) to every query
            bias = bias.reshape((1,) * (4 - bias.ndim) + bias.shape)
            seen = xp.zeros((*bias.shape[:-1], extra), dtype=dtype)
            if isinstance(bias, Tensor):
                return concatenate([bias, as_tensor(seen)], axis=-1)
            bias = xp.concatenate([bias, seen], axis=-1)
        return bias

    def _check_inputs(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        """Whether the inputs are batched; a ValueError/TypeError unless their shapes fit."""
        for x in (query, key, value):
            check_float(OWNER, x)
        E, batched = self.embed_dim, query.ndim == 3
        if query.ndim == 2:
            layouts = ("(L, {})", "(S, {})")
        elif self.batch_first:
            layouts = ("(N, L, {})", "(N, S, {})")
        else:
            layouts = ("(L, N, {})", "(S, N, {})")
        expected = (
            f"query {layouts[0].format(E)}, key {layouts[1].format(self.kdim)} and value "
            f"{layouts[1].format(self.vdim)}"
        )
        ndim_ok = query.ndim in (2, 3) and key.ndim == value.ndim == query.ndim
        fits = ndim_ok and (
            (query.shape[-1], key.shape[-1], value.shape[-1]) == (E, self.kdim, self.vdim)
            and key.shape[:-1] == value.shape[:-1]
            and (not batched or query.shape[self._batch_axis] == key.shape[self._batch_axis])
            and 0 not in query.shape + key.shape + value.shape
        )
        if not fits:
            raise ValueError(
                f"{OWNER}: expected {expected} (batch N, queries L, keys S, none empty), got "
                f"query {query.shape}, key {key.shape} and value {value.shape}"
            )
        return batched

    @property
    def _batch_axis(self) -> int:
        return 0 if self.batch_first else 1

    # ------------------------------------------------------------------ torch's weights
    def load_torch_state_dict(self, state) -> "MultiheadAttention":
        """Load the ``state_dict()`` of a ``torch.nn.MultiheadAttention`` made with the same
        arguments (arrays or CPU tensors): ``in_proj_weight`` (3E, E) packs the q, k and v
        weights (or ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` with kdim/vdim),
        torch's (out, in) weights are transposed into ours (in, out). Returns self."""
        E = self.embed_dim
        values = {name: np.asarray(backend.to_host_array(v)) for name, v in state.items()}
        ours = {}
        if "in_proj_weight" in values:
            packed = values.pop("in_proj_weight")
            if packed.shape != (3 * E, E):
                raise ValueError(
                    f"{OWNER}.load_torch_state_dict: in_proj_weight must be {(3 * E, E)}, "
                    f"got {packed.shape}"
                )
            for name, weights in zip("qkv", np.split(packed, 3)):
                ours[f"{name}_projection.weights"] = weights.T
        for name in "qkv":
            if f"{name}_proj_weight" in values:
                ours[f"{name}_projection.weights"] = values.pop(f"{name}_proj_weight").T
        if "in_proj_bias" in values:
            for name, bias in zip("qkv", np.split(values.pop("in_proj_bias").reshape(-1), 3)):
                ours[f"{name}_projection.bias"] = bias
        if "out_proj.weight" in values:
            ours["out_projection.weights"] = values.pop("out_proj.weight").T
        if "out_proj.bias" in values:
            ours["out_projection.bias"] = values.pop("out_proj.bias")
        for name in ("bias_k", "bias_v"):
            if name in values:
                ours[name] = values.pop(name).reshape(-1)
        if values:
            raise ValueError(
                f"{OWNER}.load_torch_state_dict: unexpected keys {sorted(values)} (made with "
                "other arguments?)"
            )
        self.load_state_dict(ours)
        return self

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, kdim={self.kdim}, "
            f"vdim={self.vdim}, batch_first={self.batch_first}"
        )


def attention_probabilities(q: Tensor, k: Tensor, bias=None) -> Tensor:
    """P = softmax(q k^T / sqrt(D) + bias) over the keys, a differentiable Tensor: q (N, H, L,
    D), k (N, H, S, D), ``bias`` an additive array broadcastable to (N, H, L, S), a Tensor
    (a learnt mask: it gets its gradient) or None.

    A row with every key at -inf has no softmax: it gets all-zero weights (and no gradient),
    as the fused attention gives such a query a zero output.
    """
    scores = _SCORES(q, k) * (1 / math.sqrt(q.shape[-1]))  # (N, H, L, S)
    if bias is None:
        return _SOFTMAX(scores)
    xp = q.xp
    values = bias.array if isinstance(bias, Tensor) else bias
    seen = (values != -xp.inf).any(axis=-1, keepdims=True)  # rows that see some key
    shifted = where(seen, bias, 0) if isinstance(bias, Tensor) else xp.where(seen, bias, 0)
    probs = _SOFTMAX(scores + shifted)  # a hidden row: finite, then zeroed
    return probs * seen.astype(q.dtype)  # no read-back to ask whether any row is hidden


def _as_bias(xp, mask, dtype, name: str):
    """A torch-style mask (True hides) as an additive bias of ``dtype``: True -> -inf,
    False -> 0; a float mask as it is."""
    mask = xp.asarray(mask.array if isinstance(mask, Tensor) else mask)
    if mask.dtype == bool:
        return xp.where(mask, -xp.inf, 0).astype(dtype)
    if not backend.is_float(mask.dtype):
        raise TypeError(f"{OWNER}: {name} must hold booleans or floats, got dtype {mask.dtype}")
    return mask.astype(dtype, copy=False)
