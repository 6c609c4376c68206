"""The self-attention layers of the GPTs: GPT-2's and Llama's.

    CausalSelfAttention     what they share: q|k|v, positions put in, fused causal attention
    MultiHeadSelfAttention  GPT-2's: one Dense to q|k|v (B, T, 3E), one Dense out
    LlamaAttention          Llama's: RoPE, grouped-query heads; Qwen's q/k/v biases, Qwen3's
                            RMSNorm on each query and key head, a head size apart from E / H

Each ``forward(x, cache=None)`` takes (B, T, E) and returns (B, T, E). During generation the
caller passes a ``KVCache`` (see ``tricycle.attention``): the attention then appends the new
positions' keys and values and builds no graph. ``tricycle.blocks`` builds the transformer
blocks on them (and names them too, where they were first defined).
"""

from collections.abc import Callable

from tricycle import checks
from tricycle.activation import check_activation
from tricycle.attention import (
    KVCache,
    attend_with_cache,
    causal_attention,
    check_rope_scaling,
    rope_qkv,
    rope_tables_at,
)
from tricycle.configs import ATTENTION_BIASES
from tricycle.layers import Dense, Dropout, Layer, RMSNorm
from tricycle.ops import concatenate, split
from tricycle.tensor import Tensor

# Every block's arguments, checked by name: each name means the same in every block (the
# attention layers' here, and the blocks' of ``tricycle.blocks``).
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
        head_dim=checks.optional(checks.positive_int),
        qk_norm=checks.boolean,
    )
)


class CausalSelfAttention(Layer):
    """What GPT-2's and Llama's self-attention share: a Dense to q|k|v (B, T, 3 H D), positions
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
        qkv = self.rotate(self.qkv_projection(x), cache)  # (B, T, 3 H D)
        dropout = self.attention_dropout
        if cache is not None:
            y = Tensor(attend_with_cache(qkv.xp, qkv.array, self.n_heads, cache), name="attention")
        elif self.training and dropout.probability:
            seed = dropout.step_seed(qkv.array)  # on a captured GPU step, a fresh one each replay
            y = causal_attention(qkv, self.n_heads, dropout.probability, seed)
        else:
            y = causal_attention(qkv, self.n_heads)  # (B, T, H D)
        return self.residual_dropout(self.out_projection(y))

    def rotate(self, qkv: Tensor, cache: KVCache | None) -> Tensor:
        """q|k|v of the next positions (after those in ``cache``) with their positions put
        in: here as they are (GPT-2 adds learnt positions to the token embeddings instead)."""
        return qkv

    @property
    def head_dim(self) -> int:
        """D, the size of each head: the output projection takes the n_heads heads side by
        side (E / n_heads unless a Llama was given another ``head_dim``)."""
        return self.out_projection.from_size // self.n_heads

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


class LlamaAttention(CausalSelfAttention):
    """Causal self-attention as in Llama: rotary position embeddings (RoPE) on queries and
    keys, grouped-query attention, no biases (unless ``attention_bias``).

    One Dense projects x (B, T, E) to n_heads query heads and n_kv_heads key and value heads
    of size D, side by side: (B, T, (H + 2 Hkv) D); the output projection takes H D back to
    E. ``rope_qkv`` rotates q and k by position and repeats each key/value head for the
    H / Hkv query heads of its group, so the fused causal attention of the GPT runs
    unchanged. Positions count from the start of the sequence, or from the cached positions
    during generation.

    Args as ``MultiHeadSelfAttention``, plus ``n_kv_heads`` (a divisor of n_heads; n_heads is
    ordinary multi-head attention, 1 is multi-query attention), ``rope_theta``, the base
    of the rotation frequencies, ``rope_scaling`` (``rope_frequencies``' scaling),
    ``attention_bias`` ("qkv": a bias in the q|k|v projection; "all": in both projections),
    ``head_dim`` (D; None: E / n_heads) and ``qk_norm`` (Qwen3's: each query and each key
    head RMS-normalised, with the gains ``q_norm`` and ``k_norm`` of size D and epsilon
    ``norm_eps``, before RoPE).
    """

    qk_norm = False  # (a model pickled before qk_norm existed has none)

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
        head_dim: int | None = None,
        qk_norm: bool = False,
        norm_eps: float = 1e-6,
    ):
        if (head_dim is None and embedding_dim % n_heads) or n_heads % n_kv_heads:
            raise ValueError(
                f"LlamaAttention: embedding_dim={embedding_dim} must be divisible by "
                f"n_heads={n_heads} (unless head_dim is given), and n_heads by "
                f"n_kv_heads={n_kv_heads}"
            )
        D = embedding_dim // n_heads if head_dim is None else head_dim
        if D % 2:
            raise ValueError(f"LlamaAttention: RoPE needs an even head size, got {D}")
        self.embedding_dim, self.n_heads, self.n_kv_heads = embedding_dim, n_heads, n_kv_heads
        self.context_window, self.rope_theta = context_window, rope_theta
        self.rope_scaling = rope_scaling
        width = (n_heads + 2 * n_kv_heads) * D
        qkv_bias, out_bias = attention_bias != "none", attention_bias == "all"
        self.qkv_projection = Dense(embedding_dim, width, qkv_bias, initialiser, "qkv")
        out_init = projection_initialiser or initialiser
        self.out_projection = Dense(n_heads * D, embedding_dim, out_bias, out_init, "attn_out")
        if qk_norm:  # a gain of size D for the query heads, one for the key heads
            self.qk_norm = True
            self.q_norm, self.k_norm = RMSNorm(D, norm_eps), RMSNorm(D, norm_eps)
        self.residual_dropout = Dropout(residual_dropout_prob)
        self.attention_dropout = Dropout(attention_dropout_prob)

    def rotate(self, qkv: Tensor, cache: KVCache | None) -> Tensor:
        """(B, T, (H + 2 Hkv) D) -> (B, T, 3 H D): q and k (normalised, with ``qk_norm``)
        rotated by their positions (RoPE) and each key/value head repeated for its group of
        query heads."""
        if self.qk_norm:
            qkv = self.normalise_qk(qkv)
        xp, T = qkv.xp, qkv.shape[1]
        positions = xp.arange(T) if cache is None else cache.positions(xp, T)  # (T,)
        cos, sin = rope_tables_at(
            xp, positions, self.head_dim, self.rope_theta, qkv.dtype, self.rope_scaling
        )
        return rope_qkv(qkv, cos, sin, self.n_heads, self.n_kv_heads)

    def normalise_qk(self, qkv: Tensor) -> Tensor:
        """q|k|v (B, T, (H + 2 Hkv) D) with each query head RMS-normalised with the gain
        ``q_norm`` and each key head with ``k_norm`` (one gain of size D shared by the
        heads, as Qwen3's); the values as they are."""
        B, T, _ = qkv.shape
        H, Hkv = self.n_heads, self.n_kv_heads
        heads = qkv.reshape(B, T, H + 2 * Hkv, self.head_dim)  # (B, T, H + 2 Hkv, D)
        q, k, v = split(heads, [H, H + Hkv], axis=2)  # (B, T, H, D), (B, T, Hkv, D) twice
        heads = concatenate([self.q_norm(q), self.k_norm(k), v], axis=2)
        return heads.reshape(B, T, (H + 2 * Hkv) * self.head_dim)

    def extra_repr(self) -> str:
        return (
            f"embedding_dim={self.embedding_dim}, n_heads={self.n_heads}, "
            f"n_kv_heads={self.n_kv_heads}, head_dim={self.head_dim}, qk_norm={self.qk_norm}, "
            f"context_window={self.context_window}"
        )
