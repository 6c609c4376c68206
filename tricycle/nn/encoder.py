"""A BERT-style encoder: bidirectional attention, a masked-language-model head, a classifier.

    Encoder  ids (B, T) -> token + position (+ segment) embeddings        # (B, T, E)
                        -> [LayerNorm (post-norm)] -> dropout
                        -> n_layers x EncoderBlock (padding hidden)       # (B, T, E)
                        -> [LayerNorm (pre-norm)]
             mlm_logits:  Dense -> GeLU -> LayerNorm -> tied decoder      # (B, T, V)
             classify:    pool (first token through Dense + tanh, or the mean of the real
                          tokens) -> Dense                                # (B, n_classes)

    EncoderBlock, post-norm (BERT):   x = ln1(x + attention(x));  x = ln2(x + mlp(x))
                  pre-norm:           x = x + attention(ln1(x));  x = x + mlp(ln2(x))

``MultiHeadAttention`` is the attention of every block, usable on its own as self- or
cross-attention (queries from one sequence, keys and values from ``context``), with a key
padding mask, any other mask, causal or windowed, with grouped key/value heads. Its
projections are Dense layers (einsums ``...i,ij->...j``) and its core is the fused
``tricycle.nn.sdpa.scaled_dot_product_attention``. The masked-language-model objective is in
``tricycle.nn.mlm``.
"""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tricycle import checks
from tricycle.activation import ACTIVATIONS, GeLU
from tricycle.blocks import MLPBlock
from tricycle.einsum import Einsum
from tricycle.initialisers import init_normal, init_zeros
from tricycle.layers import Dense, Dropout, Embedding, Layer, LayerNorm, embedding, parameter
from tricycle.nn.sdpa import scaled_dot_product_attention
from tricycle.tensor import Tensor, as_tensor

_TIED_DECODER = Einsum("...e,ve->...v")  # (..., E) x (V, E) -> (..., V)
_MEAN_OVER_TOKENS = Einsum("bt,bte->be")  # weights (B, T) x hidden (B, T, E) -> (B, E)
NORMS = ("post", "pre")
POOLINGS = ("cls", "mean")


def combined_mask(xp, mask, padding):
    """One attention mask from an optional mask (booleans or additive floats, broadcastable
    to (B, H, Tq, Tk)) and an optional key padding (B, Tk) (True: a real token)."""
    if padding is None:
        return mask
    padding = xp.asarray(padding.array if isinstance(padding, Tensor) else padding)
    if padding.ndim != 2 or padding.dtype != bool:
        raise ValueError(
            f"attention: padding must be booleans of shape (batch, keys), got {padding.dtype} "
            f"with shape {padding.shape}"
        )
    keys = padding[:, None, None, :]  # (B, 1, 1, Tk)
    if mask is None:
        return keys
    mask = xp.asarray(mask.array if isinstance(mask, Tensor) else mask)
    if mask.dtype == bool:
        return mask & keys
    return mask + xp.where(keys, 0, -xp.inf).astype(mask.dtype)


class MultiHeadAttention(Layer):
    """Multi-head attention: x (B, Tq, E) attends to ``context`` (B, Tk, C) (itself if None).

    q = x Wq (H heads of size D = E / H); k | v = context Wkv (Hkv heads each); the fused
    attention; then Wo and dropout. ``forward(x, context=None, padding=None, mask=None,
    causal=False, window=None)``: ``padding`` (B, Tk) marks the real keys, ``mask`` is any
    further mask (see ``tricycle.nn.sdpa``).

    Args:
        embedding_dim: E, the width of x and of the output; divisible by ``n_heads``.
        n_heads: H query heads.
        n_kv_heads: key/value heads, a divisor of H (None: H; 1: multi-query attention).
        context_dim: the width of ``context`` (None: E).
        bias: biases in the projections.
        attention_dropout_prob, residual_dropout_prob: dropout on the attention
            probabilities (inside the fused op) and on the output.
        initialiser, projection_initialiser: of the input projections and of Wo.
    """

    @checks.arguments(
        embedding_dim=checks.positive_int,
        n_heads=checks.positive_int,
        n_kv_heads=checks.optional(checks.positive_int),
        context_dim=checks.optional(checks.positive_int),
        bias=checks.boolean,
        attention_dropout_prob=checks.probability,
        residual_dropout_prob=checks.probability,
        initialiser=checks.optional(checks.function),
        projection_initialiser=checks.optional(checks.function),
    )
    def __init__(
        self,
        embedding_dim: int,
        n_heads: int,
        n_kv_heads: int | None = None,
        context_dim: int | None = None,
        bias: bool = True,
        attention_dropout_prob: float = 0.0,
        residual_dropout_prob: float = 0.0,
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
    ):
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if embedding_dim % n_heads or n_heads % n_kv_heads:
            raise ValueError(
                f"MultiHeadAttention: embedding_dim={embedding_dim} must be divisible by "
                f"n_heads={n_heads}, and n_heads by n_kv_heads={n_kv_heads}"
            )
        self.embedding_dim, self.n_heads, self.n_kv_heads = embedding_dim, n_heads, n_kv_heads
        self.context_dim = context_dim or embedding_dim
        kv_width = 2 * n_kv_heads * self.head_dim
        self.q_projection = Dense(embedding_dim, embedding_dim, bias, initialiser, "q")
        self.kv_projection = Dense(self.context_dim, kv_width, bias, initialiser, "kv")
        self.out_projection = Dense(
            embedding_dim, embedding_dim, bias, projection_initialiser or initialiser, "attn_out"
        )
        self.attention_dropout = Dropout(attention_dropout_prob)
        self.residual_dropout = Dropout(residual_dropout_prob)

    @property
    def head_dim(self) -> int:
        return self.embedding_dim // self.n_heads

    def forward(self, x: Tensor, context: Tensor | None = None, padding=None, mask=None,
                causal: bool = False, window: int | None = None) -> Tensor:  # fmt: skip
        """(B, Tq, E) -> (B, Tq, E)"""
        x = as_tensor(x)
        context = x if context is None else as_tensor(context)
        if x.ndim != 3 or context.ndim != 3 or x.shape[0] != context.shape[0]:
            raise ValueError(
                f"MultiHeadAttention: expected x (batch, queries, {self.embedding_dim}) and "
                f"context (batch, keys, {self.context_dim}), got {x.shape} and {context.shape}"
            )
        (B, Tq, _), Tk, D = x.shape, context.shape[1], self.head_dim
        q = self.q_projection(x).reshape(B, Tq, self.n_heads, D).transpose(0, 2, 1, 3)
        kv = self.kv_projection(context).reshape(B, Tk, 2, self.n_kv_heads, D)
        kv = kv.transpose(2, 0, 3, 1, 4)  # (2, B, Hkv, Tk, D)
        dropout = self.attention_dropout
        p = dropout.probability if self.training else 0.0
        mask = combined_mask(x.xp, mask, padding)
        seed = dropout.step_seed(q.array) if p else 0  # captured on a GPU: fresh each replay
        y = scaled_dot_product_attention(q, kv[0], kv[1], mask, causal, window, None, p, seed)
        y = y.transpose(0, 2, 1, 3).reshape(B, Tq, self.embedding_dim)
        return self.residual_dropout(self.out_projection(y))

    def extra_repr(self) -> str:
        return (
            f"embedding_dim={self.embedding_dim}, n_heads={self.n_heads}, "
            f"n_kv_heads={self.n_kv_heads}, context_dim={self.context_dim}"
        )


class EncoderBlock(Layer):
    """A transformer encoder block: bidirectional self-attention and a GeLU MLP, each with a
    residual connection, normalised after it (``norm="post"``, BERT's and torch's default)
    or before (``norm="pre"``). ``forward(x, padding=None)``: (B, T, E) -> (B, T, E).
    ``dropout_prob`` applies to the attention probabilities and both residual branches."""

    @checks.arguments(
        embedding_dim=checks.positive_int,
        n_heads=checks.positive_int,
        expansion_ratio=checks.positive,
        dropout_prob=checks.probability,
        norm=checks.one_of(NORMS),
        eps=checks.positive,
        bias=checks.boolean,
    )
    def __init__(self, embedding_dim: int, n_heads: int, expansion_ratio: float = 4,
                 dropout_prob: float = 0.0, activation: str | Callable = "gelu",
                 norm: str = "post", eps: float = 1e-5, bias: bool = True,
                 initialiser: Callable | None = None,
                 projection_initialiser: Callable | None = None):  # fmt: skip
        self.norm = norm
        self.attention = MultiHeadAttention(
            embedding_dim, n_heads, bias=bias, attention_dropout_prob=dropout_prob,
            residual_dropout_prob=dropout_prob, initialiser=initialiser,
            projection_initialiser=projection_initialiser,
        )  # fmt: skip
        self.layer_norm_1 = LayerNorm(embedding_dim, eps, bias=bias)
        self.mlp = MLPBlock(embedding_dim, expansion_ratio, dropout_prob, activation,
                            initialiser, projection_initialiser, bias)  # fmt: skip
        self.layer_norm_2 = LayerNorm(embedding_dim, eps, bias=bias)

    def forward(self, x: Tensor, padding=None) -> Tensor:
        """(B, T, E) -> (B, T, E); ``padding`` (B, T): True for the real tokens."""
        if self.norm == "post":
            x = self.layer_norm_1(x + self.attention(x, padding=padding))
            return self.layer_norm_2(x + self.mlp(x))
        x = x + self.attention(self.layer_norm_1(x), padding=padding)
        return x + self.mlp(self.layer_norm_2(x))

    def extra_repr(self) -> str:
        return f"norm={self.norm!r}"


@dataclass
class EncoderConfig:
    """The shape of an ``Encoder``.

    ``vocab_size`` ids (``pad_id`` is padding: hidden from attention and from mean pooling),
    at most ``context_window`` positions, ``n_segments`` segment embeddings (0: none; BERT
    uses 2, for sentence pairs), ``n_layers`` blocks of width ``embedding_dim`` with
    ``n_heads`` heads and an MLP ``expansion_ratio`` times wider, ``norm`` "post" (BERT) or
    "pre", ``dropout`` everywhere BERT has it, LayerNorm ``eps``, ``pooling`` "cls" (the
    first token through Dense and tanh, BERT's pooler) or "mean" (the mean of the real
    tokens), and ``n_classes`` outputs of the classifier.
    """

    vocab_size: int = 128
    context_window: int = 128
    embedding_dim: int = 128
    n_heads: int = 4
    n_layers: int = 4
    expansion_ratio: float = 4
    n_segments: int = 0
    norm: str = "post"
    dropout: float = 0.1
    eps: float = 1e-5
    activation_fn: str = "gelu"
    pad_id: int = 0
    pooling: str = "cls"
    n_classes: int = 2

    def __post_init__(self):
        for field in dataclasses.fields(self):
            _CONFIG_CHECKS[field.name]("EncoderConfig", field.name, getattr(self, field.name))
        if self.embedding_dim % self.n_heads:
            raise ValueError(
                f"EncoderConfig: embedding_dim={self.embedding_dim} is not divisible by "
                f"n_heads={self.n_heads}"
            )
        if self.pad_id >= self.vocab_size:
            raise ValueError(
                f"EncoderConfig: pad_id={self.pad_id} must be below vocab_size={self.vocab_size}"
            )


_CONFIG_CHECKS = dict(
    vocab_size=checks.positive_int,
    context_window=checks.positive_int,
    embedding_dim=checks.positive_int,
    n_heads=checks.positive_int,
    n_layers=checks.positive_int,
    expansion_ratio=checks.positive,
    n_segments=checks.non_negative_int,
    norm=checks.one_of(NORMS),
    dropout=checks.probability,
    eps=checks.positive,
    activation_fn=checks.one_of(ACTIVATIONS),
    pad_id=checks.non_negative_int,
    pooling=checks.one_of(POOLINGS),
    n_classes=checks.positive_int,
)


class Encoder(Layer):
    """A BERT-style encoder built from an ``EncoderConfig``, with its heads.

    ``model(ids, segments=None)`` -> hidden states (B, T, E); ``mlm_logits(hidden,
    positions)`` -> logits over the vocabulary (tied to the token embedding) at the chosen
    positions; ``classify(ids, segments=None)`` -> class logits (B, n_classes). Weights start
    as BERT's: N(0, 0.02), zero biases, unit LayerNorm gains.
    """

    @checks.arguments(config=checks.instance(EncoderConfig))
    def __init__(self, config: EncoderConfig):
        self.config = config
        E, V = config.embedding_dim, config.vocab_size
        init = partial(init_normal, std=0.02)
        self.token_embedding = Embedding(V, E, initialiser=init)
        self.position_embedding = Embedding(config.context_window, E, initialiser=init)
        if config.n_segments:
            self.segment_embedding = Embedding(config.n_segments, E, initialiser=init)
        # post-norm normalises the embeddings (BERT); pre-norm the last block's output
        self.layer_norm = LayerNorm(E, config.eps)
        self.dropout = Dropout(config.dropout)
        self.blocks = [
            EncoderBlock(E, config.n_heads, config.expansion_ratio, config.dropout,
                         config.activation_fn, config.norm, config.eps, initialiser=init)
            for _ in range(config.n_layers)
        ]  # fmt: skip
        # the masked-language-model head: a transform, then the decoder tied to the embedding
        self.mlm_transform = Dense(E, E, initialiser=init, name="mlm_transform")
        self.mlm_activation = GeLU()
        self.mlm_norm = LayerNorm(E, config.eps)
        self.mlm_bias = parameter(init_zeros((V,)), "mlm_bias")
        if config.pooling == "cls":
            self.pooler = Dense(E, E, initialiser=init, name="pooler")
        self.classifier = Dense(E, config.n_classes, initialiser=init, name="classifier")

    def padding(self, ids):
        """(B, T) booleans: True where ``ids`` is not ``pad_id``."""
        return ids != self.config.pad_id

    def forward(self, ids, segments=None) -> Tensor:
        """Hidden states (B, T, E) of integer ids (B, T); padding (``pad_id``) is hidden
        from attention. ``segments`` (B, T) picks segment embeddings (0 if None)."""
        xp = self.token_embedding.weights.xp
        ids = xp.asarray(ids.array if isinstance(ids, Tensor) else ids)
        if ids.ndim != 2 or ids.shape[1] == 0 or ids.shape[1] > self.config.context_window:
            raise ValueError(
                f"Encoder: expected ids of shape (batch, tokens) with 1 to "
                f"{self.config.context_window} tokens, got {ids.shape}"
            )
        positions = xp.arange(ids.shape[1])
        x = self.token_embedding(ids) + embedding(
            positions, self.position_embedding.weights, check_range=False
        )  # (B, T, E)
        if self.config.n_segments:
            segments = xp.zeros_like(ids) if segments is None else xp.asarray(segments)
            x = x + self.segment_embedding(segments)
        post = self.config.norm == "post"
        x = self.dropout(self.layer_norm(x) if post else x)
        padding = self.padding(ids)
        padding = None if padding.all() else padding  # no mask to apply
        for block in self.blocks:
            x = block(x, padding)
        return x if post else self.layer_norm(x)

    def mlm_logits(self, hidden: Tensor, positions=None) -> Tensor:
        """Logits over the vocabulary (B, T, V) of hidden (B, T, E), or (N, V) at the N
        positions where the boolean (B, T) ``positions`` is True (the only ones a
        masked-language-model loss reads: the rest are never computed)."""
        if positions is not None:
            hidden = hidden[hidden.xp.asarray(positions)]  # (N, E)
        h = self.mlm_norm(self.mlm_activation(self.mlm_transform(hidden)))
        return _TIED_DECODER(h, self.token_embedding.weights) + self.mlm_bias

    def pool(self, hidden: Tensor, padding) -> Tensor:
        """One vector per sequence (B, E): the first token through Dense and tanh ("cls"),
        or the mean over the real tokens ("mean")."""
        if self.config.pooling == "cls":
            return self.pooler(hidden[:, 0]).tanh()
        xp = hidden.xp
        padding = xp.asarray(padding)
        weights = padding / xp.maximum(padding.sum(axis=1, keepdims=True), 1)  # (B, T)
        return _MEAN_OVER_TOKENS(Tensor(weights.astype(hidden.dtype)), hidden)

    def classify(self, ids, segments=None) -> Tensor:
        """Class logits (B, n_classes) of ids (B, T)."""
        xp = self.token_embedding.weights.xp
        ids = xp.asarray(ids.array if isinstance(ids, Tensor) else ids)
        hidden = self(ids, segments)
        return self.classifier(self.dropout(self.pool(hidden, self.padding(ids))))

    def extra_repr(self) -> str:
        c = self.config
        return f"n_layers={c.n_layers}, embedding_dim={c.embedding_dim}, norm={c.norm!r}"
