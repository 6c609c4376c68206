"""The blocks of a GPT: multi-head self-attention, the MLP and the pre-norm transformer block.

    GPT2TransformerBlock:  x = x + attention(ln1(x))      # MultiHeadSelfAttention
                           x = x + mlp(ln2(x))            # MLPBlock

Each block's ``forward(x, cache=None)`` takes (B, T, E) and returns (B, T, E). During
generation the caller passes a ``KVCache`` (see ``tricycle.attention``): the attention then
appends the new positions' keys and values and builds no graph.
"""

from collections.abc import Callable

from tricycle.activation import GeLU, ReLU, SiLU, dense_gelu
from tricycle.attention import KVCache, attend_with_cache, causal_attention
from tricycle.layers import Dense, Dropout, Layer, LayerNorm
from tricycle.tensor import Tensor

ACTIVATIONS: dict[str, Callable[[], Callable]] = {
    "gelu": lambda: GeLU(approximate=False),  # exact, as torch.nn.GELU()
    "gelu_tanh": lambda: GeLU(approximate=True),  # GPT-2's tanh approximation
    "relu": ReLU,
    "silu": SiLU,
}


class MultiHeadSelfAttention(Layer):
    """Causal multi-head self-attention: one Dense to q|k|v, fused attention, one Dense out.

    Args:
        embedding_dim: E, the width of the input and output; divisible by ``n_heads``.
        n_heads: H heads of size E / H.
        context_window: the longest sequence accepted.
        residual_dropout_prob: dropout on the output (what is added to the residual stream).
        attention_dropout_prob: dropout on the attention probabilities (nanoGPT's
            ``attn_dropout``), inside the fused attention.
        initialiser: initialiser of the q|k|v projection (Dense's default if None).
        projection_initialiser: initialiser of the output projection (``initialiser`` if None);
            GPT-2 scales it down by sqrt(2 * n_layers).
        bias: biases in both projections.
    """

    def __init__(
        self,
        embedding_dim: int,
        n_heads: int,
        context_window: int,
        residual_dropout_prob: float = 0.0,
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
        bias: bool = True,
        attention_dropout_prob: float = 0.0,
    ):
        if embedding_dim % n_heads:
            raise ValueError(
                f"MultiHeadSelfAttention: embedding_dim={embedding_dim} is not divisible by "
                f"n_heads={n_heads}"
            )
        self.embedding_dim, self.n_heads, self.context_window = (
            embedding_dim,
            n_heads,
            context_window,
        )
        self.qkv_projection = Dense(embedding_dim, 3 * embedding_dim, bias, initialiser, "qkv")
        self.out_projection = Dense(
            embedding_dim, embedding_dim, bias, projection_initialiser or initialiser, "attn_out"
        )
        self.residual_dropout = Dropout(residual_dropout_prob)
        # not called as a layer: it holds the probability and the generator of the seeds
        self.attention_dropout = Dropout(attention_dropout_prob)

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """x (B, T, E) -> (B, T, E); with ``cache``, attend to the cached positions too."""
        if x.ndim != 3 or x.shape[-1] != self.embedding_dim:
            raise ValueError(
                f"MultiHeadSelfAttention: expected input (batch, tokens, {self.embedding_dim}), "
                f"got shape {x.shape}"
            )
        n_seen = 0 if cache is None else cache.length
        if n_seen + x.shape[1] > self.context_window:
            raise ValueError(
                f"MultiHeadSelfAttention: {n_seen + x.shape[1]} positions exceed the context "
                f"window of {self.context_window}"
            )
        qkv = self.qkv_projection(x)  # (B, T, 3E)
        if cache is None:
            dropout = self.attention_dropout
            if self.training and dropout.probability:
                y = causal_attention(qkv, self.n_heads, dropout.probability, dropout.draw_seed())
            else:
                y = causal_attention(qkv, self.n_heads)  # (B, T, E)
        else:
            y = Tensor(attend_with_cache(qkv.xp, qkv.array, self.n_heads, cache), name="attention")
        return self.residual_dropout(self.out_projection(y))

    def new_cache(self, batch_size: int) -> KVCache:
        """An empty KV cache for this layer, on the device and dtype of its weights."""
        weights = self.qkv_projection.weights
        head_dim = self.embedding_dim // self.n_heads
        return KVCache(
            weights.xp, batch_size, self.n_heads, self.context_window, head_dim, weights.dtype
        )

    def extra_repr(self) -> str:
        return (
            f"embedding_dim={self.embedding_dim}, n_heads={self.n_heads}, "
            f"context_window={self.context_window}"
        )


class MLPBlock(Layer):
    """Dense up to ``expansion_ratio`` * E, activation, Dense back down, dropout.

    ``activation`` is a name from ``ACTIVATIONS`` or a callable op. Initialisers as in
    ``MultiHeadSelfAttention``.
    """

    def __init__(
        self,
        embedding_dim: int,
        expansion_ratio: float = 4,
        dropout_prob: float = 0.0,
        activation: str | Callable = "gelu",
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
        bias: bool = True,
    ):
        hidden = int(embedding_dim * expansion_ratio)
        self.embedding_dim, self.hidden_dim = embedding_dim, hidden
        self.up_projection = Dense(embedding_dim, hidden, bias, initialiser, "mlp_up")
        self.activation = _activation(activation)
        self.down_projection = Dense(
            hidden, embedding_dim, bias, projection_initialiser or initialiser, "mlp_down"
        )
        self.dropout = Dropout(dropout_prob)

    def forward(self, x: Tensor) -> Tensor:
        """(..., E) -> (..., E)"""
        if isinstance(self.activation, GeLU):  # the bias add fused into GeLU on a GPU
            h = dense_gelu(self.up_projection, x, self.activation.approximate)  # (..., hidden)
        else:
            h = self.activation(self.up_projection(x))  # (..., hidden)
        return self.dropout(self.down_projection(h))

    def extra_repr(self) -> str:
        return f"embedding_dim={self.embedding_dim}, hidden_dim={self.hidden_dim}"


class GPT2TransformerBlock(Layer):
    """A pre-norm transformer block: x + attention(ln1(x)), then x + mlp(ln2(x)).

    ``dropout_prob`` applies to the attention probabilities and to both residual branches
    (after each output projection), as in nanoGPT; ``bias`` to the Dense and LayerNorm layers.
    """

    def __init__(
        self,
        embedding_dim: int,
        n_heads: int,
        context_window: int,
        expansion_ratio: float = 4,
        dropout_prob: float = 0.0,
        activation: str | Callable = "gelu",
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
        bias: bool = True,
    ):
        self.layer_norm_1 = LayerNorm(embedding_dim, bias=bias)
        self.attention = MultiHeadSelfAttention(
            embedding_dim,
            n_heads,
            context_window,
            residual_dropout_prob=dropout_prob,
            initialiser=initialiser,
            projection_initialiser=projection_initialiser,
            bias=bias,
            attention_dropout_prob=dropout_prob,
        )
        self.layer_norm_2 = LayerNorm(embedding_dim, bias=bias)
        self.mlp = MLPBlock(
            embedding_dim,
            expansion_ratio,
            dropout_prob,
            activation,
            initialiser=initialiser,
            projection_initialiser=projection_initialiser,
            bias=bias,
        )

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """(B, T, E) -> (B, T, E)"""
        x = x + self.attention(self.layer_norm_1(x), cache)
        return x + self.mlp(self.layer_norm_2(x))


def _activation(activation: str | Callable) -> Callable:
    if callable(activation):
        return activation
    try:
        return ACTIVATIONS[activation]()
    except KeyError:
        raise ValueError(
            f"unknown activation {activation!r}; choose from {sorted(ACTIVATIONS)}"
        ) from None
