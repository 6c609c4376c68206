"""The blocks of a GPT: the MLP and the pre-norm transformer block, in GPT-2's form and in
Llama's, on the self-attention layers of ``tricycle.self_attention`` (named here too).

    GPT2TransformerBlock:  x = x + attention(ln1(x))      # MultiHeadSelfAttention
                           x = x + mlp(ln2(x))            # MLPBlock

    LlamaTransformerBlock: x = x + attention(rms1(x))     # LlamaAttention: RoPE, GQA
                           x = x + mlp(rms2(x))           # SwiGLUBlock

``SwiGLUBlock`` is an ``MLPBlock`` with a gated activation. Each transformer block's
``forward(x, cache=None)`` takes (B, T, E) and returns (B, T, E), its attention adding the new
positions to the ``KVCache`` during generation; an MLP's ``forward(x)`` maps (..., E) to
(..., E).
"""

from collections.abc import Callable

from tricycle.activation import (  # noqa: F401 (ACTIVATIONS re-exported: first defined here)
    ACTIVATIONS,
    GeLU,
    ReLU,
    SiLU,
    SwiGLU,
    _activation,
    dense_gelu,
)
from tricycle.attention import KVCache
from tricycle.configs import ATTENTION_BIASES, llama_hidden_size  # noqa: F401 (here as before)
from tricycle.layers import Dense, Dropout, Layer, LayerNorm, RMSNorm
from tricycle.self_attention import (  # noqa: F401 (the attention layers: first defined here)
    CausalSelfAttention,
    LlamaAttention,
    MultiHeadSelfAttention,
    _checked,
)
from tricycle.tensor import Tensor


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
    ``norm_eps`` is the RMSNorms' epsilon (the query and key heads' too, with ``qk_norm``);
    ``rope_scaling``, ``attention_bias``, ``head_dim`` and ``qk_norm`` are ``LlamaAttention``'s.
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
        head_dim: int | None = None,
        qk_norm: bool = False,
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
            head_dim=head_dim,
            qk_norm=qk_norm,
            norm_eps=norm_eps,
        )
        self.rms_norm_2 = RMSNorm(embedding_dim, norm_eps)
        self.mlp = SwiGLUBlock(
            embedding_dim, hidden_dim, dropout_prob, initialiser, projection_initialiser
        )

    def forward(self, x: Tensor, cache: KVCache | None = None) -> Tensor:
        """(B, T, E) -> (B, T, E)"""
        x = x + self.attention(self.rms_norm_1(x), cache)
        return x + self.mlp(self.rms_norm_2(x))
