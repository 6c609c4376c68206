"""A PyTorch GPT with the same architecture as tricycle's, to check ours against.

nanoGPT's model, written out by hand (no fused SDPA) so every op is visible. Tests load it with
``ref = pytest.importorskip("torch_reference")``, which skips them cleanly without torch.
"""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from tricycle.loss import CrossEntropy
from tricycle.tensor import to_tensor


def causal_attention(qkv, n_heads: int):
    """(B, T, 3E) packed q|k|v -> (B, T, E): nanoGPT's attention core."""
    B, T, three_e = qkv.shape
    E = three_e // 3
    q, k, v = qkv.split(E, dim=-1)
    q, k, v = (t.view(B, T, n_heads, E // n_heads).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(E // n_heads)  # (B, H, T, T)
    mask = torch.ones(T, T, dtype=torch.bool, device=qkv.device).tril()
    probs = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    return (probs @ v).transpose(1, 2).reshape(B, T, E)


class TorchAttention(nn.Module):
    def __init__(self, embedding_dim: int, n_heads: int, bias: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.qkv_projection = nn.Linear(embedding_dim, 3 * embedding_dim, bias=bias)
        self.out_projection = nn.Linear(embedding_dim, embedding_dim, bias=bias)

    def forward(self, x):
        return self.out_projection(causal_attention(self.qkv_projection(x), self.n_heads))


class TorchMLP(nn.Module):
    def __init__(self, embedding_dim: int, expansion_ratio: float = 4, approximate="none",
                 bias: bool = True):  # fmt: skip
        super().__init__()
        hidden = int(embedding_dim * expansion_ratio)
        self.up_projection = nn.Linear(embedding_dim, hidden, bias=bias)
        self.down_projection = nn.Linear(hidden, embedding_dim, bias=bias)
        self.approximate = approximate

    def forward(self, x):
        return self.down_projection(F.gelu(self.up_projection(x), approximate=self.approximate))


class TorchBlock(nn.Module):
    def __init__(self, embedding_dim, n_heads, expansion_ratio=4, approximate="none", bias=True):
        super().__init__()
        self.layer_norm_1 = nn.LayerNorm(embedding_dim, bias=bias)
        self.attention = TorchAttention(embedding_dim, n_heads, bias)
        self.layer_norm_2 = nn.LayerNorm(embedding_dim, bias=bias)
        self.mlp = TorchMLP(embedding_dim, expansion_ratio, approximate, bias)

    def forward(self, x):
        x = x + self.attention(self.layer_norm_1(x))
        return x + self.mlp(self.layer_norm_2(x))


class TorchGPT(nn.Module):
    def __init__(self, config, approximate="none"):
        super().__init__()
        E = config.embedding_dim
        self.token_embedding = nn.Embedding(config.vocab_size, E)
        self.position_embedding = nn.Embedding(config.context_window, E)
        self.blocks = nn.ModuleList(
            TorchBlock(E, config.n_heads, config.expansion_ratio, approximate, config.bias)
            for _ in range(config.n_layers)
        )
        self.layer_norm = nn.LayerNorm(E, bias=config.bias)
        self.head = nn.Linear(E, config.vocab_size, bias=False)
        if config.tie_weights:
            self.head.weight = self.token_embedding.weight

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.token_embedding(tokens) + self.position_embedding(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        return self.head(self.layer_norm(x))  # (B, T, V)


# ------------------------------------------------------------------ ours <-> theirs
# The torch modules above carry the same attribute names as tricycle's layers, so parameter
# names differ only in their last part; Linear stores its weight transposed.
_SUFFIXES = {"weights": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}


def torch_name(name: str) -> str:
    """The torch parameter name of a tricycle parameter name."""
    prefix, _, last = name.rpartition(".")
    return f"{prefix}.{_SUFFIXES[last]}"


def _is_linear(name: str, ndim: int) -> bool:
    return ndim == 2 and "embedding" not in name


def copy_weights(ours, theirs) -> None:
    """Copy every parameter of the tricycle layer ``ours`` into the torch module ``theirs``."""
    params = dict(theirs.named_parameters(remove_duplicate=False))
    assert len(set(map(id, params.values()))) == len(ours.parameters()), "parameter count"
    with torch.no_grad():
        for name, tensor in ours.named_parameters():
            value = tensor.numpy()
            value = value.T if _is_linear(name, value.ndim) else value
            params[torch_name(name)].copy_(torch.from_numpy(np.ascontiguousarray(value)))


def compare_language_models(ours, theirs, inputs, targets) -> int:
    """Copy the weights of the tricycle model ``ours`` into its torch twin ``theirs``, run
    both on token ids ``inputs`` with cross-entropy against ``targets`` (B, T), and assert
    the logits, the loss and every gradient match; returns how many gradients were compared."""
    copy_weights(ours, theirs)
    logits = ours(to_tensor(inputs, dtype=int))
    loss = CrossEntropy()(to_tensor(targets, dtype=int), logits)
    loss.backward()
    expected_logits = theirs(torch.tensor(inputs))
    vocab_size = expected_logits.shape[-1]
    expected_loss = F.cross_entropy(
        expected_logits.reshape(-1, vocab_size), torch.tensor(targets).reshape(-1)
    )
    expected_loss.backward()

    assert logits.shape == inputs.shape + (vocab_size,) and logits.dtype == np.float32
    assert_close(logits.array, expected_logits.detach().numpy(), name="logits")
    assert_close(loss.array, expected_loss.detach().numpy(), name="loss")
    return compare_grads(ours, theirs)


def compare_grads(ours, theirs, rtol=1e-4) -> int:
    """Assert every parameter gradient of ``ours`` matches ``theirs``; returns how many."""
    params = dict(theirs.named_parameters(remove_duplicate=False))
    for name, tensor in ours.named_parameters():
        expected = params[torch_name(name)].grad.numpy()
        expected = expected.T if _is_linear(name, expected.ndim) else expected
        assert tensor.grad is not None, f"{name} has no gradient"
        assert_close(tensor.grad.array, expected, rtol, name=name)
    return len(ours.parameters())


def assert_close(actual, expected, rtol=1e-4, name=""):
    """Relative error of the whole array (max abs error / max abs value) is within rtol."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape} != {expected.shape}"
    scale = max(float(np.abs(expected).max()), 1e-12)
    error = float(np.abs(actual - expected).max()) / scale
    assert error <= rtol, f"{name}: relative error {error:.2e} > {rtol:.0e}"


def gpt2_init_(model: TorchGPT, n_layers: int, std: float = 0.02) -> TorchGPT:
    """GPT-2 initialisation, as tricycle's GPT: normal(0, std) weights and embeddings, zero
    biases, unit norm gains, residual projections scaled by 1/sqrt(2 n_layers)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.fill_(1.0 if "layer_norm" in name and name.endswith("weight") else 0.0)
            elif name.endswith(("out_projection.weight", "down_projection.weight")):
                p.normal_(0.0, std / (2 * n_layers) ** 0.5)
            else:
                p.normal_(0.0, std)
    return model


def adamw_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """torch.optim param groups that decay what tricycle's AdamW decays by default: matrices
    that are not embeddings."""
    decay, rest = [], []
    for name, p in model.named_parameters():
        (decay if _is_linear(name, p.ndim) else rest).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0}]
