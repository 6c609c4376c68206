"""The blocks of a GPT: multi-head self-attention, the MLP and the pre-norm transformer block,
in GPT-2's form and in Llama's.

    GPT2TransformerBlock:  x = x + attention(ln1(x))      # MultiHeadSelfAttention
                           x = x + mlp(ln2(x))            # MLPBlock

    LlamaTransformerBlock: x = x + attention(rms1(x))     # LlamaAttention: RoPE, GQA
                           x = x + mlp(rms2(x))           # SwiGLUBlock

Both attentions are a ``CausalSelfAttention``, which they specialise only in how q|k|v are
projected and how positions enter them; ``SwiGLUBlock`` is an ``MLPBlock`` with a gated
activation. Each transformer block's (and attention's) ``forward(x, cache=None)`` takes (B, T,
E) and returns (B, T, E); an MLP's ``forward(x)`` maps (..., E) to (..., E). During generation
the caller passes a ``KVCache`` (see ``tricycle.attention``): the attention then appends the
new positions' keys and values and builds no graph.
"""

from collections.abc import Callable

from tricycle import checks
from tricycle.activation import (  # noqa: F401 (ACTIVATIONS re-exported: first defined here)
    ACTIVATIONS,
    GeLU,
    ReLU,
    SiLU,
    SwiGLU,
    _activation,
    check_activation,
    dense_gelu,
)
from tricycle.attention import (
    KVCache,
    attend_with_cache,
    causal_attention,
    check_rope_scaling,
    rope_qkv,
    rope_tables_at,
)
from tricycle.configs import ATTENTION_BIASES, llama_hidden_size  # noqa: F401 (here as before)
from tricycle.layers import Dense, Dropout, Layer, LayerNorm, RMSNorm
from tricycle.tensor import Tensor

# Every block's arguments, checked by name: each name means the same in every block.
_checked = checks.by_name(
    dict(
        embedding_dim=checks.positive_int,
        n_heads=checks.positive_int,
        n_kv_heads=checks.positive_int,
        context_window=checks.positive_int,
        hidden_dim=checks.positive_int,
        expansion_ratio=checks.positive,
        rope_theta=checks.positive,
        dropout_prob=checks.probability,
        residual_dropout_prob=checks.probability,
        attention_dropout_prob=checks.probability,
        activation=check_activation,
        initialiser=checks.optional(checks.function),
        projection_initialiser=checks.optional(checks.function),
        bias=checks.boolean,
        norm_eps=checks.positive,
        rope_scaling=check_rope_scaling,
        attention_bias=checks.one_of(ATTENTION_BIASES),
    )
)


class CausalSelfAttention(Layer):
    """What GPT-2's and Llama's self-attention share: a Dense to q|k|v (B, T, 3E), positions
    put into q and k (``rotate``), fused causal attention with dropout on its probabilities,
    a Dense out and dropout on what goes back to the residual stream. During generation the
    new positions attend to those in the ``KVCache`` too, and no graph is built.

    Subclasses set ``embedding_dim``, ``n_heads``, ``context_window``, the two projections
    and the two dropouts (``attention_dropout`` is not called as a layer: it holds the
    probability and the generator of the seeds of the fused attention's masks).
    """

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """x (B, T, E) -> (B, T, E); with ``cache``, attend to the cached positions too."""
        name = type(self).__name__
        if x.ndim != 3 or x.shape[-1] != self.embedding_dim:
            raise ValueError(
                f"{name}: expected input (batch, tokens, {self.embedding_dim}), got shape {x.shape}"
            )
        start, T = (0 if cache is None else cache.host_length), x.shape[1]
        if start is not None and start + T > self.context_window:
            raise ValueError(
                f"{name}: {start + T} positions exceed the context window of {self.context_window}"
            )
        qkv = self.rotate(self.qkv_projection(x), cache)  # (B, T, 3E)
        dropout = self.attention_dropout
        if cache is not None:
            y = Tensor(attend_with_cache(qkv.xp, qkv.array, self.n_heads, cache), name="attention")
        elif self.training and dropout.probability:
            seed = dropout.step_seed(qkv.array)  # on a captured GPU step, a fresh one each replay
            y = causal_attention(qkv, self.n_heads, dropout.probability, seed)
        else:
            y = causal_attention(qkv, self.n_heads)  # (B, T, E)
        return self.residual_dropout(self.out_projection(y))

    def rotate(self, qkv: Tensor, cache: KVCache | None) -> Tensor:
        """q|k|v of the next positions (after those in ``cache``) with their positions put
        in: here as they are (GPT-2 adds learnt positions to the token embeddings instead)."""
        return qkv

    @property
    def head_dim(self) -> int:
        return self.embedding_dim // self.n_heads

    def new_cache(self, batch_size: int, capacity: int | None = None) -> KVCache:
        """An empty KV cache for this layer (n_heads heads) of ``capacity`` positions (default
        and at most: the context window), on the device and dtype of its weights."""
        checks.positive_int(f"{type(self).__name__}.new_cache", "batch_size", batch_size)
        capacity = self.context_window if capacity is None else min(capacity, self.context_window)
        weights = self.qkv_projection.weights
        return KVCache(weights.xp, batch_size, self.n_heads, capacity, self.head_dim, weights.dtype)


class MultiHeadSelfAttention(CausalSelfAttention):
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

    @_checked
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
        self.attention_dropout = Dropout(attention_dropout_prob)

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

    @_checked
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
    (after each output projection), as in nanoGPT; ``bias`` to the Dense and LayerNorm layers;
    ``norm_eps`` is the LayerNorms' epsilon.
    """

    @_checked
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
        norm_eps: float = 1e-5,
    ):
        self.layer_norm_1 = LayerNorm(embedding_dim, norm_eps, bias=bias)
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
        self.layer_norm_2 = LayerNorm(embedding_dim, norm_eps, bias=bias)
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


class LlamaAttention(CausalSelfAttention):
    """Causal self-attention as in Llama: rotary position embeddings (RoPE) on queries and
    keys, grouped-query attention, no biases (unless ``attention_bias``).

    One Dense projects x (B, T, E) to n_heads query heads and n_kv_heads key and value heads
    of size D = E / n_heads, side by side: (B, T, (H + 2 Hkv) D). ``rope_qkv`` rotates q and
    k by position and repeats each key/value head for the H / Hkv query heads of its group,
    so the fused causal attention of the GPT runs unchanged. Positions count from the start
    of the sequence, or from the cached positions during generation.

    Args as ``MultiHeadSelfAttention``, plus ``n_kv_heads`` (a divisor of n_heads; n_heads is
    ordinary multi-head attention, 1 is multi-query attention), ``rope_theta``, the base
    of the rotation frequencies, ``rope_scaling`` (``rope_frequencies``' scaling) and
    ``attention_bias`` ("qkv": a bias in the q|k|v projection; "all": in both projections).
    """

    @_checked
    def __init__(
        self,
        embedding_dim: int,
        n_heads: int,
        n_kv_heads: int,
        context_window: int,
        rope_theta: float = 10000.0,
        residual_dropout_prob: float = 0.0,
        attention_dropout_prob: float = 0.0,
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
        rope_scaling: dict | None = None,
        attention_bias: str = "none",
    ):
        if embedding_dim % n_heads or n_heads % n_kv_heads:
            raise ValueError(
                f"LlamaAttention: embedding_dim={embedding_dim} must be divisible by "
                f"n_heads={n_heads}, and n_heads by n_kv_heads={n_kv_heads}"
            )
        if (embedding_dim // n_heads) % 2:
            raise ValueError(
                f"LlamaAttention: RoPE needs an even head size, got {embedding_dim // n_heads}"
            )
        self.embedding_dim, self.n_heads, self.n_kv_heads = embedding_dim, n_heads, n_kv_heads
        self.context_window, self.rope_theta = context_window, rope_theta
        self.rope_scaling = rope_scaling
        width = (n_heads + 2 * n_kv_heads) * self.head_dim
        qkv_bias, out_bias = attention_bias != "none", attention_bias == "all"
        self.qkv_projection = Dense(embedding_dim, width, qkv_bias, initialiser, "qkv")
        out_init = projection_initialiser or initialiser
        self.out_projection = Dense(embedding_dim, embedding_dim, out_bias, out_init, "attn_out")
        self.residual_dropout = Dropout(residual_dropout_prob)
        self.attention_dropout = Dropout(attention_dropout_prob)

    def rotate(self, qkv: Tensor, cache: KVCache | None) -> Tensor:
        """(B, T, (H + 2 Hkv) D) -> (B, T, 3E): q and k rotated by their positions (RoPE)
        and each key/value head repeated for its group of query heads."""
        xp, T = qkv.xp, qkv.shape[1]
        positions = xp.arange(T) if cache is None else cache.positions(xp, T)  # (T,)
        cos, sin = rope_tables_at(
            xp, positions, self.head_dim, self.rope_theta, qkv.dtype, self.rope_scaling
        )
        return rope_qkv(qkv, cos, sin, self.n_heads, self.n_kv_heads)

    def extra_repr(self) -> str:
        return (
            f"embedding_dim={self.embedding_dim}, n_heads={self.n_heads}, "
            f"n_kv_heads={self.n_kv_heads}, context_window={self.context_window}"
        )


class SwiGLUBlock(MLPBlock):
    """Llama's MLP: W2 (silu(x W1) * (x W3)), no biases. W1 and W3 are one Dense of width
    2 * hidden_dim (``up_projection``, W1's columns first), so both take one product; the
    forward is the MLPBlock's, with ``SwiGLU`` as the activation."""

    @_checked
    def __init__(
        self,
        embedding_dim: int,
        hidden_dim: int,
        dropout_prob: float = 0.0,
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
    ):
        self.embedding_dim, self.hidden_dim = embedding_dim, hidden_dim
        self.up_projection = Dense(embedding_dim, 2 * hidden_dim, False, initialiser, "mlp_up")
        self.activation = SwiGLU()
        self.down_projection = Dense(
            hidden_dim, embedding_dim, False, projection_initialiser or initialiser, "mlp_down"
        )
        self.dropout = Dropout(dropout_prob)


class LlamaTransformerBlock(Layer):
    """A pre-norm Llama block: x + attention(rms_norm_1(x)), then x + mlp(rms_norm_2(x)).

    ``dropout_prob`` applies as in ``GPT2TransformerBlock`` (Llama itself uses none);
    ``norm_eps`` is the RMSNorms' epsilon; ``rope_scaling`` and ``attention_bias`` are
    ``LlamaAttention``'s.
    """

    @_checked
    def __init__(
        self,
        embedding_dim: int,
        n_heads: int,
        n_kv_heads: int,
        context_window: int,
        hidden_dim: int,
        rope_theta: float = 10000.0,
        dropout_prob: float = 0.0,
        initialiser: Callable | None = None,
        projection_initialiser: Callable | None = None,
        norm_eps: float = 1e-6,
        rope_scaling: dict | None = None,
        attention_bias: str = "none",
    ):
        self.rms_norm_1 = RMSNorm(embedding_dim, norm_eps)
        self.attention = LlamaAttention(
            embedding_dim,
            n_heads,
            n_kv_heads,
            context_window,
            rope_theta,
            residual_dropout_prob=dropout_prob,
            attention_dropout_prob=dropout_prob,
            initialiser=initialiser,
            projection_initialiser=projection_initialiser,
            rope_scaling=rope_scaling,
            attention_bias=attention_bias,
        )
        self.rms_norm_2 = RMSNorm(embedding_dim, norm_eps)
        self.mlp = SwiGLUBlock(
            embedding_dim, hidden_dim, dropout_prob, initialiser, projection_initialiser
        )

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """(B, T, E) -> (B, T, E)"""
        x = x + self.attention(self.rms_norm_1(x), cache)
        return x + self.mlp(self.rms_norm_2(x))
