"""torch's ``nn.Transformer`` family: the encoder and decoder stacks and the whole
encoder-decoder model, with torch's arguments, defaults, submodule names and masks.

    TransformerEncoder  src -> layers[0] -> ... -> layers[n-1] -> [norm]            # (S, N, E)
    TransformerDecoder  tgt, memory -> layers[i](x, memory) ... -> [norm]           # (T, N, E)
    Transformer         memory = encoder(src);  out = decoder(tgt, memory)          # (T, N, E)

The layers themselves (``TransformerEncoderLayer``, ``TransformerDecoderLayer``: the
formulas, layouts and masks) are in ``tricycle.nn.transformer_layers`` and re-exported here.
A stack holds ``num_layers`` deep copies of the layer it is given (as torch's: the copies
start equal, and the layer given is not one of them), each dropout with its own generator
drawn from tricycle's, so that the layers drop different elements and ``manual_seed`` still
reproduces a run. The names (``encoder.layers.0.self_attn``, ``decoder.norm`` ...) are
torch's, so ``nn.from_torch`` / ``nn.to_torch`` map a torch model's ``state_dict``.

Differences from torch: ``enable_nested_tensor`` and ``mask_check`` (switches of torch's
inference fast path) are accepted and change nothing: the outputs at padding positions are
computed as any other, where torch's nested-tensor path writes zeros there. ``is_causal``
without a mask applies the causal mask (torch asks for the mask with its hint); given a mask,
the mask applies as given (see ``tricycle.nn.transformer_layers``).
"""

import copy
import math
from collections.abc import Callable

import numpy as np

from tricycle import checks, factories, random
from tricycle.layers import Dropout, Layer, LayerNorm
from tricycle.nn import init
from tricycle.nn.containers import ModuleList
from tricycle.nn.transformer_layers import (
    LAYER_CHECKS,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    check_heads,
    check_same_batch,
    checked_sequence,
)
from tricycle.tensor import Tensor

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]


def clones(layer: Layer, n: int) -> ModuleList:
    """``n`` deep copies of ``layer`` (torch's ``_get_clones``), each of their dropouts with a
    fresh generator: a copied generator would drop the same elements in every layer."""
    copies = []
    for _ in range(n):
        twin = copy.deepcopy(layer)
        for _, sublayer in twin.named_layers():
            if isinstance(sublayer, Dropout):
                sublayer.rng = np.random.default_rng(random.draw_seed())
        copies.append(twin)
    return ModuleList(copies)


class TransformerEncoder(Layer):
    """A stack of ``num_layers`` copies of ``encoder_layer`` and an optional final ``norm``
    (torch's: see the module doc). ``forward(src, mask=None, src_key_padding_mask=None,
    is_causal=None)`` passes the masks to every layer."""

    @checks.arguments(
        encoder_layer=checks.instance(Layer),
        num_layers=checks.positive_int,
        norm=checks.optional(checks.function),
        enable_nested_tensor=checks.boolean,
        mask_check=checks.boolean,
    )
    def __init__(self, encoder_layer: Layer, num_layers: int, norm: Callable | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):  # fmt: skip
        self.layers = clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    @checks.arguments(is_causal=checks.optional(checks.boolean))
    def forward(self, src, mask=None, src_key_padding_mask=None,
                is_causal: bool | None = None) -> Tensor:  # fmt: skip
        """src (S, N, E), (N, S, E) with batch_first, or (S, E) -> the same shape."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))  # fmt: skip
        return x if self.norm is None else self.norm(x)

    def extra_repr(self) -> str:
        return f"num_layers={self.num_layers}"


class TransformerDecoder(Layer):
    """A stack of ``num_layers`` copies of ``decoder_layer`` and an optional final ``norm``
    (torch's: see the module doc). ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=None,
    memory_is_causal=False)`` passes the masks and ``memory`` to every layer."""

    @checks.arguments(
        decoder_layer=checks.instance(Layer),
        num_layers=checks.positive_int,
        norm=checks.optional(checks.function),
    )
    def __init__(self, decoder_layer: Layer, num_layers: int, norm: Callable | None = None):
        self.layers = clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    @checks.arguments(
        tgt_is_causal=checks.optional(checks.boolean), memory_is_causal=checks.boolean
    )
    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        """tgt (T, N, E) and memory (S, N, E) (or batch first, or unbatched) -> the shape of
        tgt."""
        x = tgt
        for layer in self.layers:
            x = layer(
                x,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=bool(tgt_is_causal),
                memory_is_causal=memory_is_causal,
            )
        return x if self.norm is None else self.norm(x)

    def extra_repr(self) -> str:
        return f"num_layers={self.num_layers}"


class Transformer(Layer):
    """torch's encoder-decoder ``Transformer``: an encoder stack over ``src`` and a decoder
    stack over ``tgt`` that attends to the encoder's output, each ending in a LayerNorm.

    The arguments are ``TransformerEncoderLayer``'s (see it), plus the numbers of encoder and
    decoder layers and ``custom_encoder`` / ``custom_decoder`` to use instead of the stacks
    built here. As torch's, every parameter with more than one axis (custom ones included)
    then starts Glorot uniform (``nn.init.xavier_uniform_``).
    """

    @checks.arguments(
        num_encoder_layers=checks.positive_int,
        num_decoder_layers=checks.positive_int,
        custom_encoder=checks.optional(checks.instance(Layer)),
        custom_decoder=checks.optional(checks.instance(Layer)),
        **LAYER_CHECKS,
    )
    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 custom_encoder: Layer | None = None, custom_decoder: Layer | None = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True):  # fmt: skip
        check_heads("Transformer", d_model, nhead)
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias)  # fmt: skip
        if custom_encoder is None:
            norm = LayerNorm(d_model, layer_norm_eps, bias=bias)
            custom_encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer), num_encoder_layers, norm
            )
        if custom_decoder is None:
            norm = LayerNorm(d_model, layer_norm_eps, bias=bias)
            custom_decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer), num_decoder_layers, norm
            )
        self.encoder, self.decoder = custom_encoder, custom_decoder
        for p in self.parameters():  # torch's _reset_parameters
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    @checks.arguments(
        src_is_causal=checks.optional(checks.boolean),
        tgt_is_causal=checks.optional(checks.boolean),
        memory_is_causal=checks.boolean,
    )
    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        """src (S, N, E) and tgt (T, N, E) (or batch first, or both unbatched) -> (T, N, E),
        the decoder's output. ``src_mask`` (S, S), ``tgt_mask`` (T, T) (the causal mask of
        ``generate_square_subsequent_mask(T)`` for a language model), ``memory_mask`` (T, S);
        the key padding masks (N, S), (N, T) and (N, S)."""
        owner = type(self).__name__
        src = checked_sequence(owner, "src", src, self.d_model, self.batch_first)
        tgt = checked_sequence(owner, "tgt", tgt, self.d_model, self.batch_first)
        check_same_batch(owner, ("src", "tgt"), src, tgt, self.batch_first)
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)  # fmt: skip
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """The causal mask (sz, sz) as torch's: -inf above the diagonal (query i does not
        see the keys j > i), 0 on and below it; float32 unless ``dtype``, on ``device``
        (a factory's: "cpu", "cuda:N" ...)."""
        checks.non_negative_int("Transformer.generate_square_subsequent_mask", "sz", sz)
        hidden = factories.full((sz, sz), -math.inf, dtype=dtype, device=device)
        return factories.triu(hidden, diagonal=1)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, nhead={self.nhead}, batch_first={self.batch_first}"
