"""torch's ``TransformerEncoderLayer`` and ``TransformerDecoderLayer``: the blocks of
"Attention Is All You Need", with torch's arguments, submodule names and masks.

    sa(x)     = dropout1(self_attn(x, x, x))             # (T, N, E), or (N, T, E)
    mha(x, m) = dropout2(multihead_attn(x, m, m))        # the decoder's: keys/values memory m
    ff(x)     = drop(linear2(dropout(act(linear1(x)))))  # E -> dim_feedforward -> E; drop:
                                                         # dropout2 (encoder), dropout3 (decoder)

    encoder, post-norm (torch's default):  x = norm1(x + sa(x));  x = norm2(x + ff(x))
             norm_first:                   x = x + sa(norm1(x));  x = x + ff(norm2(x))
    decoder, post-norm:   x = norm1(x + sa(x));  x = norm2(x + mha(x, m));  x = norm3(x + ff(x))
             norm_first:  x = x + sa(norm1(x));  x = x + mha(norm2(x), m);  x = x + ff(norm3(x))

Each attention is a ``tricycle.nn.MultiheadAttention`` (without weights: its fused core), so
inputs are (T, N, E) sequence first, (N, T, E) with ``batch_first``, or unbatched (T, E), and
the masks mean what they mean to it (and to torch): ``*_mask`` (L, S) or (N * nhead, L, S),
booleans (True hides a key) or floats added to the scores; ``*_key_padding_mask`` (N, S),
True for a padding key. ``is_causal`` is torch's hint that the given mask is the causal mask:
with a mask, the mask applies as given (it is the causal one if the hint is right); without
one, the causal mask applies (torch asks for the mask with its hint). A query that sees no key
gets a zero attention output (torch's gives NaN).

The submodules have torch's names (``self_attn``, ``linear1``, ``norm1``, ``dropout1`` ...), so
``nn.from_torch`` and ``nn.to_torch`` map a torch layer's ``state_dict`` onto these and back.
As torch's, ``activation="relu"`` or ``"gelu"`` keeps the function ``F.relu`` or ``F.gelu``
(no submodule): a whole pickled model names it, as the safe-globals lists written for torch do.
"""

from collections.abc import Callable

from tricycle import checks
from tricycle.activation import _activation, check_activation
from tricycle.layers import Dense, Dropout, Layer, LayerNorm
from tricycle.nn import functional as F
from tricycle.nn.multihead import MultiheadAttention
from tricycle.tensor import Tensor, as_tensor, check_float

# the arguments both layers (and torch's Transformer) share, checked the same way
LAYER_CHECKS = dict(
    d_model=checks.positive_int,
    nhead=checks.positive_int,
    dim_feedforward=checks.positive_int,
    dropout=checks.probability,
    activation=check_activation,
    layer_norm_eps=checks.positive,
    batch_first=checks.boolean,
    norm_first=checks.boolean,
    bias=checks.boolean,
)


def check_heads(owner: str, d_model: int, nhead: int) -> None:
    """A ValueError unless the width splits into ``nhead`` heads."""
    if d_model % nhead:
        raise ValueError(f"{owner}: d_model={d_model} must be divisible by nhead={nhead}")


def checked_sequence(owner: str, name: str, x, d_model: int, batch_first: bool) -> Tensor:
    """``x`` as a float Tensor laid out as a transformer's input, or a ValueError/TypeError
    naming ``owner``, the shape seen and the layouts expected."""
    x = as_tensor(x)
    check_float(owner, x)
    if x.ndim not in (2, 3) or x.shape[-1] != d_model or 0 in x.shape:
        batched = "(N, T, E)" if batch_first else "(T, N, E)"
        raise ValueError(
            f"{owner}: expected {name} {batched} (batch_first={batch_first}) or unbatched "
            f"(T, E), with E = d_model = {d_model} and no empty axis, got shape {x.shape}"
        )
    return x


def check_same_batch(owner: str, names: tuple[str, str], x: Tensor, y: Tensor,
                     batch_first: bool) -> None:  # fmt: skip
    """A ValueError unless ``x`` and ``y`` are both unbatched or both hold the same batch."""
    axis = 0 if batch_first else 1
    if x.ndim != y.ndim or (x.ndim == 3 and x.shape[axis] != y.shape[axis]):
        raise ValueError(
            f"{owner}: {names[0]} {x.shape} and {names[1]} {y.shape} must both be batched "
            f"with the same batch size (axis {axis}, batch_first={batch_first}) or both unbatched"
        )


# the activations torch names, kept as it keeps them: functions, not submodules
TORCH_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class _TransformerLayer(Layer):
    """What the encoder and decoder layers share: the feed-forward block and the attention
    block (torch's ``_ff_block`` and ``_sa_block``/``_mha_block``)."""

    def _build(self, d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
               batch_first, norm_first, bias, decoder: bool) -> None:  # fmt: skip
        """The submodules, in torch's order and under its names (the decoder's have one
        more attention, LayerNorm and dropout)."""
        check_heads(type(self).__name__, d_model, nhead)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first=batch_first)
        if decoder:
            self.multihead_attn = MultiheadAttention(
                d_model, nhead, dropout, bias, batch_first=batch_first
            )
        self.linear1 = Dense(d_model, dim_feedforward, bias, name="linear1")
        self.dropout = Dropout(dropout)
        self.linear2 = Dense(dim_feedforward, d_model, bias, name="linear2")
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        if decoder:
            self.norm3 = LayerNorm(d_model, layer_norm_eps, bias=bias)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        if decoder:
            self.dropout3 = Dropout(dropout)
        if isinstance(activation, str) and activation in TORCH_ACTIVATIONS:
            self.activation = TORCH_ACTIVATIONS[activation]  # the function, as torch keeps it
        else:
            self.activation = _activation(activation)  # another name's Layer, or the callable
        self.d_model = d_model

    @property
    def batch_first(self) -> bool:
        return self.self_attn.batch_first

    def _attention_block(self, attention: MultiheadAttention, dropout: Dropout, x: Tensor,
                         memory: Tensor, mask, padding, is_causal: bool) -> Tensor:  # fmt: skip
        """dropout(attention(x, memory, memory)): self-attention when ``memory`` is ``x``."""
        out, _ = attention(x, memory, memory, key_padding_mask=padding, need_weights=False,
                           attn_mask=mask, is_causal=is_causal and mask is None)  # fmt: skip
        return dropout(out)

    def _ff_block(self, x: Tensor, dropout: Dropout) -> Tensor:
        """dropout(linear2(dropout(activation(linear1(x))))): (..., E) -> (..., E)."""
        hidden = self.dropout(self.activation(self.linear1(x)))  # (..., dim_feedforward)
        return dropout(self.linear2(hidden))

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, norm_first={self.norm_first}"


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention and a feed-forward block, each with a residual connection and a
    LayerNorm (after it; before it with ``norm_first``), as torch's (see the module doc).

    Args:
        d_model: E, the width of the inputs and outputs; divisible by ``nhead``.
        nhead: the attention heads.
        dim_feedforward: the width of the feed-forward block's hidden layer.
        dropout: on the attention probabilities, in the feed-forward block and on each
            residual branch (training only).
        activation: "relu", "gelu" (exact, as torch's), another name of
            ``tricycle.activation.ACTIVATIONS``, or a callable (``F.gelu``, ``nn.GELU()``).
        layer_norm_eps: the LayerNorms' eps.
        batch_first: inputs and output (N, T, E) rather than (T, N, E).
        norm_first: normalise before each block (pre-norm) rather than after it.
        bias: biases in the projections, the feed-forward layers and the LayerNorms.
    """

    @checks.arguments(**LAYER_CHECKS)
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True):  # fmt: skip
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, decoder=False)  # fmt: skip

    @checks.arguments(is_causal=checks.boolean)
    def forward(self, src, src_mask=None, src_key_padding_mask=None,
                is_causal: bool = False) -> Tensor:  # fmt: skip
        """src (T, N, E), (N, T, E) or (T, E) -> the same shape."""
        owner = type(self).__name__
        x = checked_sequence(owner, "src", src, self.d_model, self.batch_first)
        attend = (self.self_attn, self.dropout1)
        masks = (src_mask, src_key_padding_mask, is_causal)
        if self.norm_first:
            h = self.norm1(x)
            x = x + self._attention_block(*attend, h, h, *masks)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._attention_block(*attend, x, x, *masks))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention over the target, attention from the target to ``memory`` (the
    encoder's output), and a feed-forward block, each with a residual connection and a
    LayerNorm (after it; before it with ``norm_first``), as torch's (see the module doc).
    The arguments are ``TransformerEncoderLayer``'s."""

    @checks.arguments(**LAYER_CHECKS)
    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True):  # fmt: skip
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, decoder=True)  # fmt: skip

    @checks.arguments(tgt_is_causal=checks.boolean, memory_is_causal=checks.boolean)
    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        """tgt (T, N, E) and memory (S, N, E) (or batch first, or both unbatched) -> the
        shape of tgt. ``tgt_mask`` is (T, T), ``memory_mask`` (T, S)."""
        owner = type(self).__name__
        x = checked_sequence(owner, "tgt", tgt, self.d_model, self.batch_first)
        memory = checked_sequence(owner, "memory", memory, self.d_model, self.batch_first)
        check_same_batch(owner, ("tgt", "memory"), x, memory, self.batch_first)
        attend_self = (self.self_attn, self.dropout1)
        attend_memory = (self.multihead_attn, self.dropout2)
        self_masks = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        memory_masks = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            h = self.norm1(x)
            x = x + self._attention_block(*attend_self, h, h, *self_masks)
            x = x + self._attention_block(*attend_memory, self.norm2(x), memory, *memory_masks)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._attention_block(*attend_self, x, x, *self_masks))
        x = self.norm2(x + self._attention_block(*attend_memory, x, memory, *memory_masks))
        return self.norm3(x + self._ff_block(x, self.dropout3))
