"""A PyTorch twin of tricycle's Llama, written out by hand, to check ours against.

Same attribute names as tricycle's layers (so ``torch_reference.copy_weights`` and
``compare_grads`` pair the parameters), RoPE in the half-split form (``rotate_half``, as
Hugging Face's Llama), grouped-query heads by ``repeat_interleave``, a causal softmax written
out. Tests load it with ``pytest.importorskip("torch_llama")``: it skips cleanly without
torch.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


def rope_tables(length: int, head_dim: int, theta: float, start: int = 0):
    """cos, sin (length, head_dim / 2) in float64."""
    frequencies = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.arange(start, start + length, dtype=torch.float64)[:, None] * frequencies
    return angles.cos(), angles.sin()


def rotate(x, cos, sin):
    """x (B, heads, T, D): x * cos + rotate_half(x) * sin, with cos/sin repeated on both
    halves (Hugging Face's apply_rotary_pos_emb)."""
    cos = torch.cat([cos, cos], dim=-1).to(x.dtype)  # (T, D)
    sin = torch.cat([sin, sin], dim=-1).to(x.dtype)
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


def causal_attention(q, k, v):
    """q, k, v (B, H, T, D) -> (B, H, T, D)."""
    T = q.shape[2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return scores.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v


class TorchLlamaAttention(nn.Module):
    def __init__(self, E, n_heads, n_kv_heads, rope_theta):
        super().__init__()
        self.H, self.Hkv, self.D, self.theta = n_heads, n_kv_heads, E // n_heads, rope_theta
        self.qkv_projection = nn.Linear(E, (n_heads + 2 * n_kv_heads) * self.D, bias=False)
        self.out_projection = nn.Linear(E, E, bias=False)

    def forward(self, x):
        B, T, E = x.shape
        H, Hkv, D = self.H, self.Hkv, self.D
        q, k, v = self.qkv_projection(x).split([H * D, Hkv * D, Hkv * D], dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        k, v = (t.view(B, T, Hkv, D).transpose(1, 2) for t in (k, v))  # (B, Hkv, T, D)
        cos, sin = rope_tables(T, D, self.theta)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k, v = (t.repeat_interleave(H // Hkv, dim=1) for t in (k, v))  # (B, H, T, D)
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, E)
        return self.out_projection(y)


class TorchSwiGLU(nn.Module):
    def __init__(self, E, hidden):
        super().__init__()
        self.up_projection = nn.Linear(E, 2 * hidden, bias=False)  # W1 | W3
        self.down_projection = nn.Linear(hidden, E, bias=False)

    def forward(self, x):
        a, b = self.up_projection(x).chunk(2, dim=-1)
        return self.down_projection(F.silu(a) * b)


class TorchLlamaBlock(nn.Module):
    def __init__(self, E, n_heads, n_kv_heads, hidden, rope_theta, eps=1e-6):
        super().__init__()
        self.rms_norm_1 = nn.RMSNorm(E, eps=eps)
        self.attention = TorchLlamaAttention(E, n_heads, n_kv_heads, rope_theta)
        self.rms_norm_2 = nn.RMSNorm(E, eps=eps)
        self.mlp = TorchSwiGLU(E, hidden)

    def forward(self, x):
        x = x + self.attention(self.rms_norm_1(x))
        return x + self.mlp(self.rms_norm_2(x))


class TorchLlama(nn.Module):
    def __init__(self, config, hidden):
        super().__init__()
        E = config.embedding_dim
        self.token_embedding = nn.Embedding(config.vocab_size, E)
        self.blocks = nn.ModuleList(
            TorchLlamaBlock(E, config.n_heads, config.kv_heads, hidden, config.rope_theta)
            for _ in range(config.n_layers)
        )
        self.layer_norm = nn.RMSNorm(E, eps=1e-6)
        self.head = nn.Linear(E, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.token_embedding.weight

    def forward(self, tokens):
        x = self.token_embedding(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.layer_norm(x))  # (B, T, V)
