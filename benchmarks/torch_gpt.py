"""The PyTorch baseline of the benchmarks: nanoGPT's model and AdamW, built from a GPTConfig.

    model = nano_gpt(config, attention="sdpa")        # or "manual": softmax written out
    optimiser = adamw(model, config, learning_rate=1e-3, fused=True)
    loss = nano_gpt_step(model, model, optimiser, inputs, targets, grad_clip=1.0)

The architecture is tricycle's GPT (and nanoGPT's): learned positions, pre-norm blocks,
GeLU MLP (exact or tanh, from ``config.activation_fn``), optional biases, the head tied to
the token embedding, GPT-2 initialisation, and dropout (the attention probabilities' through
``scaled_dot_product_attention``). ``attention="manual"`` computes the attention as nanoGPT's
fallback does (scores, mask, softmax, product) and is the baseline the measured CPU and GPU
tables were taken against; ``"sdpa"`` is PyTorch's fused kernel. The equality tests use their
own model, ``tests/torch_reference.py``.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, config, attention: str):
        super().__init__()
        E, bias = config.embedding_dim, config.bias
        self.n_heads, self.attention, self.p = config.n_heads, attention, config.dropout
        self.approximate = "tanh" if config.activation_fn == "gelu_tanh" else "none"
        self.ln_1, self.ln_2 = nn.LayerNorm(E, bias=bias), nn.LayerNorm(E, bias=bias)
        self.c_attn, self.c_proj = nn.Linear(E, 3 * E, bias=bias), nn.Linear(E, E, bias=bias)
        hidden = int(E * config.expansion_ratio)
        self.c_fc, self.mlp_proj = nn.Linear(E, hidden, bias=bias), nn.Linear(hidden, E, bias=bias)
        self.drop = nn.Dropout(config.dropout)

    def forward(self, x):
        B, T, E = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(E, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, E // self.n_heads).transpose(1, 2) for t in (q, k, v))
        p = self.p if self.training else 0.0
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            scores = q @ k.transpose(-2, -1) / math.sqrt(E // self.n_heads)  # (B, H, T, T)
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            probs = F.dropout(scores.masked_fill(~mask, float("-inf")).softmax(-1), p)
            y = probs @ v
        x = x + self.drop(self.c_proj(y.transpose(1, 2).reshape(B, T, E)))
        hidden = F.gelu(self.c_fc(self.ln_2(x)), approximate=self.approximate)
        return x + self.drop(self.mlp_proj(hidden))


class NanoGPT(nn.Module):
    def __init__(self, config, attention: str = "sdpa"):
        super().__init__()
        if attention not in ("sdpa", "manual"):
            raise ValueError(f"nano_gpt: attention must be 'sdpa' or 'manual', got {attention!r}")
        E, L = config.embedding_dim, config.n_layers
        self.wte = nn.Embedding(config.vocab_size, E)
        self.wpe = nn.Embedding(config.context_window, E)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config, attention) for _ in range(L))
        self.ln_f = nn.LayerNorm(E, bias=config.bias)
        self.lm_head = nn.Linear(E, config.vocab_size, bias=False)
        if config.tie_weights:
            self.wte.weight = self.lm_head.weight
        with torch.no_grad():  # GPT-2: N(0, 0.02), residual projections / sqrt(2 L)
            for name, w in self.named_parameters():
                if w.ndim == 1:
                    w.fill_(1.0 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight"))
                            else 0.0)  # fmt: skip
                else:
                    residual = name.endswith(("c_proj.weight", "mlp_proj.weight"))
                    w.normal_(0.0, 0.02 / math.sqrt(2 * L) if residual else 0.02)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.wte(ids) + self.wpe(positions))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # (B, T, V)


def nano_gpt(config, attention: str = "sdpa") -> NanoGPT:
    """nanoGPT's model for ``config`` (a tricycle GPTConfig), on the CPU."""
    return NanoGPT(config, attention)


def adamw(model: nn.Module, config, learning_rate: float, fused: bool | None = None):
    """torch.optim.AdamW with ``config``'s betas and decay on the matrices (embeddings too
    with ``config.decay_embeddings``, as nanoGPT); ``fused`` as torch's (None: its default)."""
    decay, rest = [], []
    for name, p in model.named_parameters():
        embedding = name.startswith(("wte", "wpe"))
        decayed = p.ndim >= 2 and (config.decay_embeddings or not embedding)
        (decay if decayed else rest).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay},
              {"params": rest, "weight_decay": 0.0}]  # fmt: skip
    betas = (config.beta1, config.beta2)
    return torch.optim.AdamW(groups, lr=learning_rate, betas=betas, fused=fused)


def nano_gpt_step(
    model, forward, optimiser, inputs, targets, grad_clip: float, dtype=None, scaler=None
):
    """nanoGPT's training step: the loss under autocast in ``dtype`` (None: off; the loss in
    float32, as nanoGPT), backward through ``scaler`` (a GradScaler, for float16) if given,
    clipping at ``grad_clip``, the optimiser's step. ``forward`` is the model or its
    ``torch.compile``. Returns the loss tensor, not read back."""
    device = inputs.device.type
    with torch.autocast(device, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
        logits = forward(inputs)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimiser.zero_grad(set_to_none=True)
    if scaler is None:
        loss.backward()
    else:
        scaler.scale(loss).backward()
        scaler.unscale_(optimiser)
    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    if scaler is None:
        optimiser.step()
    else:
        scaler.step(optimiser)
        scaler.update()
    return loss
