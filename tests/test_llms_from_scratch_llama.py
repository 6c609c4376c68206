"""Raschka's GPT-to-Llama notebooks (rasbt/LLMs-from-scratch, ch05/07_gpt_to_llama) run on
tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the
method of tests/test_llms_from_scratch.py, whose helpers this file imports):

- ``converting-gpt-to-llama2.ipynb``, its code cells up to the weights' download: the
  hand-written ``RMSNorm`` (``x.pow(2).mean``, ``torch.rsqrt``, ``nn.Parameter(...).float()``)
  checked by the notebook's own assert against ``torch.nn.RMSNorm``, ``SiLU`` against
  ``nn.functional.silu``, the SiLU ``FeedForward``, ``precompute_rope_params`` and
  ``compute_rope`` (real-valued RoPE: cos/sin and the rotated halves ``cat((-x2, x1))``),
  ``MultiHeadAttention`` with RoPE (``register_buffer``, ``masked_fill_``), the
  ``TransformerBlock`` and ``Llama2Model``, the parameter count and ``calc_model_memory_size``;
- ``standalone-llama32.ipynb`` (also ``pkg/llms_from_scratch/llama3.py``), every code cell:
  ``compute_rope_params`` with Llama 3's frequency smoothing (``torch.where``, ``&`` of two
  masks), ``apply_rope``, ``GroupedQueryAttention`` (``repeat_interleave`` of keys and values),
  ``nn.RMSNorm(dtype=)``, ``Llama3Model`` (``nn.ModuleList``, ``register_buffer(persistent=
  False)``, a ``torch.bool`` causal mask), the memory estimate, ``load_weights_into_llama``'s
  ``assign`` (``left.copy_`` under ``no_grad``, ``torch.as_tensor(dtype=, device=)``) from
  Hugging Face's parameter names, the ``ChatFormat`` and ``generate``'s greedy decoding.

Each notebook's text is its own; a line that differs ends in ``# port:`` and says why: sizes
shrunk, float32 in place of bfloat16 (its products are slow on a CPU), tricycle's names of a
layer's tensors (``weights``, a Linear's in (in, out): the documented exception), a stand-in
for tiktoken (Llama 3's BPE file is a download: the tokens are the text's UTF-8 bytes, the
special tokens after them) and made-up parameters in Hugging Face's names and layouts in
place of the safetensors download. Both notebooks run under torch (skipped without it), then
under tricycle, and print the same lines, numbers aside, the same counts and the same greedy
text. The Llama 3 model is also checked number for number: with torch's weights loaded
through ``nn.from_torch``, the same logits, loss and gradients (through RoPE and the grouped
keys and values), a few AdamW steps where both learn alike, and the same greedy tokens.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests.helpers import one_thread
from tests.test_llms_from_scratch import both
from tests.test_torch_examples_b import lines

# ch05/07_gpt_to_llama/converting-gpt-to-llama2.ipynb, cells 10 to 49 (the rest downloads)
LLAMA2 = r"""
import torch
import torch.nn as nn


#####################################
# Chapter 4
#####################################

class RMSNorm(nn.Module):
    def __init__(self, emb_dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.emb_dim = emb_dim
        self.weight = nn.Parameter(torch.ones(emb_dim)).float()

    def forward(self, x):
        means = x.pow(2).mean(dim=-1, keepdim=True)
        x_normed = x * torch.rsqrt(means + self.eps)
        return (x_normed * self.weight).to(dtype=x.dtype)

torch.manual_seed(123)

example_batch = torch.randn(2, 3, 4)

rms_norm = RMSNorm(emb_dim=example_batch.shape[-1])
rmsnorm_pytorch = torch.nn.RMSNorm(example_batch.shape[-1], eps=1e-5)

assert torch.allclose(rms_norm(example_batch), rmsnorm_pytorch(example_batch))

class SiLU(nn.Module):
    def __init__(self):
        super(SiLU, self).__init__()

    def forward(self, x):
        return x * torch.sigmoid(x)

silu = SiLU()

assert torch.allclose(silu(example_batch), torch.nn.functional.silu(example_batch))

class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg["emb_dim"], cfg["hidden_dim"], dtype=cfg["dtype"], bias=False)
        self.fc2 = nn.Linear(cfg["emb_dim"], cfg["hidden_dim"], dtype=cfg["dtype"], bias=False)
        self.fc3 = nn.Linear(cfg["hidden_dim"], cfg["emb_dim"], dtype=cfg["dtype"], bias=False)
        self.silu = SiLU()

    def forward(self, x):
        x_fc1 = self.fc1(x)
        x_fc2 = self.fc2(x)
        x = self.silu(x_fc1) * x_fc2
        return self.fc3(x)

def precompute_rope_params(head_dim, theta_base=10_000, context_length=4096):
    assert head_dim % 2 == 0, "Embedding dimension must be even"

    # Compute the inverse frequencies
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))

    # Generate position indices
    positions = torch.arange(context_length)

    # Compute the angles
    angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)  # Shape: (context_length, head_dim // 2)

    # Expand angles to match the head_dim
    angles = torch.cat([angles, angles], dim=1)  # Shape: (context_length, head_dim)

    # Precompute sine and cosine
    cos = torch.cos(angles)
    sin = torch.sin(angles)

    return cos, sin

def compute_rope(x, cos, sin):
    # x: (batch_size, num_heads, seq_len, head_dim)
    batch_size, num_heads, seq_len, head_dim = x.shape
    assert head_dim % 2 == 0, "Head dimension must be even"

    # Split x into first half and second half
    x1 = x[..., : head_dim // 2]  # First half
    x2 = x[..., head_dim // 2 :]  # Second half

    # Adjust sin and cos shapes
    cos = cos[:seq_len, :].unsqueeze(0).unsqueeze(0)  # Shape: (1, 1, seq_len, head_dim)
    sin = sin[:seq_len, :].unsqueeze(0).unsqueeze(0)

    # Apply the rotary transformation
    rotated = torch.cat((-x2, x1), dim=-1)
    x_rotated = (x * cos) + (rotated * sin)

    return x_rotated.to(dtype=x.dtype)

# Settings
batch_size = 2
context_len = 5
num_heads = 4
head_dim = 16

# Instantiate RoPE parameters
cos, sin = precompute_rope_params(head_dim=head_dim, context_length=context_len)

# Dummy query and key tensors
torch.manual_seed(123)
queries = torch.randn(batch_size, num_heads, context_len, head_dim)
keys = torch.randn(batch_size, num_heads, context_len, head_dim)

# Apply rotary position embeddings
queries_rot = compute_rope(queries, cos, sin)
keys_rot = compute_rope(keys, cos, sin)

#####################################
# Chapter 3
#####################################
class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, num_heads, dtype=None):  # ,dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by n_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # Reduce the projection dim to match desired output dim

        ################################### NEW ###################################
        # Set bias=False and dtype=dtype for all linear layers below
        ###########################################################################
        self.W_query = nn.Linear(d_in, d_out, bias=False, dtype=dtype)
        self.W_key = nn.Linear(d_in, d_out, bias=False, dtype=dtype)
        self.W_value = nn.Linear(d_in, d_out, bias=False, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)  # Linear layer to combine head outputs
        # self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

        ################################### NEW ###################################
        cos, sin = precompute_rope_params(head_dim=self.head_dim, context_length=context_length)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        ###########################################################################


    def forward(self, x):

        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)  # Shape: (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        # We implicitly split the matrix by adding a `num_heads` dimension
        # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        ################################### NEW ###################################
        keys = compute_rope(keys, self.cos, self.sin)
        queries = compute_rope(queries, self.cos, self.sin)
        ###########################################################################

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        # Original mask truncated to the number of tokens and converted to boolean
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

        # Use the mask to fill attention scores
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        # attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec

# Settings
batch_size = 1
context_len = 100
max_context_len = 128  # port: 4096 shrunk (a 4096 x 4096 mask buffer)
embed_dim = 128
num_heads = 4


example_batch = torch.randn((batch_size, context_len, embed_dim))

mha = MultiHeadAttention(
    d_in=embed_dim,
    d_out=embed_dim,
    context_length=max_context_len,
    num_heads=num_heads
)

mha(example_batch)

del mha  # delete to free up memory

class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            context_length=cfg["context_length"],
            num_heads=cfg["n_heads"],
            dtype=cfg["dtype"]  # NEW
            # dropout=cfg["drop_rate"],
            # qkv_bias=cfg["qkv_bias"]
        )
        self.ff = FeedForward(cfg)

        ################################### NEW ###################################
        # self.norm1 = LayerNorm(cfg["emb_dim"])
        # self.norm2 = LayerNorm(cfg["emb_dim"])
        self.norm1 = RMSNorm(cfg["emb_dim"])
        self.norm2 = RMSNorm(cfg["emb_dim"])
        ###########################################################################

        # self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        # Shortcut connection for attention block
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)   # Shape [batch_size, num_tokens, emb_size]
        # x = self.drop_shortcut(x)
        x = x + shortcut  # Add the original input back

        # Shortcut connection for feed-forward block
        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        # x = self.drop_shortcut(x)
        x = x + shortcut  # Add the original input back

        return x

# class GPTModel(nn.Module):
class Llama2Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"], dtype=cfg["dtype"])
        # self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        # self.drop_emb = nn.Dropout(cfg["drop_rate"])

        self.trf_blocks = nn.Sequential(
            *[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])

        ################################### NEW ###################################
        # self.final_norm = LayerNorm(cfg["emb_dim"])
        self.final_norm = RMSNorm(cfg["emb_dim"])
        ###########################################################################
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False, dtype=cfg["dtype"])

    def forward(self, in_idx):
        # batch_size, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        # pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = tok_embeds  # + pos_embeds  # Shape [batch_size, num_tokens, emb_size]
        # x = self.drop_emb(x)
        x = self.trf_blocks(x)
        x = self.final_norm(x)
        logits = self.out_head(x)
        return logits

LLAMA2_CONFIG_7B = {
    "vocab_size": 320,       # port: 32000 shrunk  # Vocabulary size
    "context_length": 64,    # port: 4096 shrunk  # Context length
    "emb_dim": 64,           # port: 4096 shrunk  # Embedding dimension
    "n_heads": 4,            # port: 32 shrunk  # Number of attention heads
    "n_layers": 2,           # port: 32 shrunk  # Number of layers
    "hidden_dim": 172,       # port: 11008 shrunk  # NEW: Size of the intermediate dimension in FeedForward
    "dtype": torch.float32   # port: bfloat16's products are slow on a CPU  # NEW: Lower-precision dtype to reduce memory usage
}

model = Llama2Model(LLAMA2_CONFIG_7B)

total_params = sum(p.numel() for p in model.parameters())
print(f"Total number of parameters: {total_params:,}")

def calc_model_memory_size(model, input_dtype=torch.float32):
    total_params = 0
    total_grads = 0
    for param in model.parameters():
        # Calculate total number of elements per parameter
        param_size = param.numel()
        total_params += param_size
        # Check if gradients are stored for this parameter
        if param.requires_grad:
            total_grads += param_size

    # Calculate buffer size (non-parameters that require memory)
    total_buffers = sum(buf.numel() for buf in model.buffers())

    # Size in bytes = (Number of elements) * (Size of each element in bytes)
    # We assume parameters and gradients are stored in the same type as input dtype
    element_size = torch.tensor(0, dtype=input_dtype).element_size()
    total_memory_bytes = (total_params + total_grads + total_buffers) * element_size

    # Convert bytes to gigabytes
    total_memory_gb = total_memory_bytes / (1024**3)

    return total_memory_gb

print(f"float32 (PyTorch default): {calc_model_memory_size(model, input_dtype=torch.float32):.2f} GB")
print(f"bfloat16: {calc_model_memory_size(model, input_dtype=torch.bfloat16):.2f} GB")

if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")

model.to(device);
"""

# ch05/07_gpt_to_llama/standalone-llama32.ipynb, every code cell from the model on
MODEL = r"""
import torch
import torch.nn as nn


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg["emb_dim"], cfg["hidden_dim"], dtype=cfg["dtype"], bias=False)
        self.fc2 = nn.Linear(cfg["emb_dim"], cfg["hidden_dim"], dtype=cfg["dtype"], bias=False)
        self.fc3 = nn.Linear(cfg["hidden_dim"], cfg["emb_dim"], dtype=cfg["dtype"], bias=False)

    def forward(self, x):
        x_fc1 = self.fc1(x)
        x_fc2 = self.fc2(x)
        x = nn.functional.silu(x_fc1) * x_fc2
        return self.fc3(x)

def compute_rope_params(head_dim, theta_base=10_000, context_length=4096, freq_config=None, dtype=torch.float32):
    assert head_dim % 2 == 0, "Embedding dimension must be even"

    # Compute the inverse frequencies
    inv_freq = 1.0 / (theta_base ** (torch.arange(0, head_dim, 2, dtype=dtype)[: (head_dim // 2)].float() / head_dim))

    # Frequency adjustments
    if freq_config is not None:
        low_freq_wavelen = freq_config["original_context_length"] / freq_config["low_freq_factor"]
        high_freq_wavelen = freq_config["original_context_length"] / freq_config["high_freq_factor"]

        wavelen = 2 * torch.pi / inv_freq

        inv_freq_llama = torch.where(
            wavelen > low_freq_wavelen, inv_freq / freq_config["factor"], inv_freq
        )

        smooth_factor = (freq_config["original_context_length"] / wavelen - freq_config["low_freq_factor"]) / (
            freq_config["high_freq_factor"] - freq_config["low_freq_factor"]
        )

        smoothed_inv_freq = (
            (1 - smooth_factor) * (inv_freq / freq_config["factor"]) + smooth_factor * inv_freq
        )

        is_medium_freq = (wavelen <= low_freq_wavelen) & (wavelen >= high_freq_wavelen)
        inv_freq_llama = torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)
        inv_freq = inv_freq_llama

    # Generate position indices
    positions = torch.arange(context_length, dtype=dtype)

    # Compute the angles
    angles = positions.unsqueeze(1) * inv_freq.unsqueeze(0)  # Shape: (context_length, head_dim // 2)

    # Expand angles to match the head_dim
    angles = torch.cat([angles, angles], dim=1)  # Shape: (context_length, head_dim)

    # Precompute sine and cosine
    cos = torch.cos(angles)
    sin = torch.sin(angles)

    return cos, sin


def apply_rope(x, cos, sin):
    # x: (batch_size, num_heads, seq_len, head_dim)
    batch_size, num_heads, seq_len, head_dim = x.shape
    assert head_dim % 2 == 0, "Head dimension must be even"

    # Split x into first half and second half
    x1 = x[..., : head_dim // 2]  # First half
    x2 = x[..., head_dim // 2 :]  # Second half

    # Adjust sin and cos shapes
    cos = cos[:seq_len, :].unsqueeze(0).unsqueeze(0)  # Shape: (1, 1, seq_len, head_dim)
    sin = sin[:seq_len, :].unsqueeze(0).unsqueeze(0)

    # Apply the rotary transformation
    rotated = torch.cat((-x2, x1), dim=-1)
    x_rotated = (x * cos) + (rotated * sin)

    # It's ok to use lower-precision after applying cos and sin rotation
    return x_rotated.to(dtype=x.dtype)

class GroupedQueryAttention(nn.Module):
    def __init__(
            self, d_in, d_out, num_heads,
            num_kv_groups,
            dtype=None
        ):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        assert num_heads % num_kv_groups == 0, "num_heads must be divisible by num_kv_groups"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads

        self.W_key = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False, dtype=dtype)
        self.W_value = nn.Linear(d_in, num_kv_groups * self.head_dim, bias=False, dtype=dtype)
        self.num_kv_groups = num_kv_groups
        self.group_size = num_heads // num_kv_groups

        self.W_query = nn.Linear(d_in, d_out, bias=False, dtype=dtype)
        self.out_proj = nn.Linear(d_out, d_out, bias=False, dtype=dtype)

    def forward(self, x, mask, cos, sin):
        b, num_tokens, d_in = x.shape

        queries = self.W_query(x)  # Shape: (b, num_tokens, d_out)
        keys = self.W_key(x)  # Shape: (b, num_tokens, num_kv_groups * head_dim)
        values = self.W_value(x)  # Shape: (b, num_tokens, num_kv_groups * head_dim)

        # Reshape queries, keys, and values
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)
        keys = keys.view(b, num_tokens, self.num_kv_groups, self.head_dim)
        values = values.view(b, num_tokens, self.num_kv_groups, self.head_dim)

        # Transpose keys, values, and queries
        keys = keys.transpose(1, 2)  # Shape: (b, num_kv_groups, num_tokens, head_dim)
        values = values.transpose(1, 2)  # Shape: (b, num_kv_groups, num_tokens, head_dim)
        queries = queries.transpose(1, 2)  # Shape: (b, num_heads, num_tokens, head_dim)

        # Apply RoPE
        keys = apply_rope(keys, cos, sin)
        queries = apply_rope(queries, cos, sin)

        # Expand keys and values to match the number of heads
        # Shape: (b, num_heads, num_tokens, head_dim)
        keys = keys.repeat_interleave(self.group_size, dim=1)  # Shape: (b, num_heads, num_tokens, head_dim)
        values = values.repeat_interleave(self.group_size, dim=1)  # Shape: (b, num_heads, num_tokens, head_dim)
        # For example, before repeat_interleave along dim=1 (query groups):
        #   [K1, K2]
        # After repeat_interleave (each query group is repeated group_size times):
        #   [K1, K1, K2, K2]
        # If we used regular repeat instead of repeat_interleave, we'd get:
        #   [K1, K2, K1, K2]

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        # Shape: (b, num_heads, num_tokens, num_tokens)
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        # Compute attention scores
        attn_scores = attn_scores.masked_fill(mask, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        assert keys.shape[-1] == self.head_dim

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec

class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = GroupedQueryAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            num_heads=cfg["n_heads"],
            num_kv_groups=cfg["n_kv_groups"],
            dtype=cfg["dtype"]
        )
        self.ff = FeedForward(cfg)
        self.norm1 = nn.RMSNorm(cfg["emb_dim"], eps=1e-5, dtype=cfg["dtype"])
        self.norm2 = nn.RMSNorm(cfg["emb_dim"], eps=1e-5, dtype=cfg["dtype"])

    def forward(self, x, mask, cos, sin):
        # Shortcut connection for attention block
        shortcut = x
        x = self.norm1(x)
        x = self.att(x, mask, cos, sin)  # Shape [batch_size, num_tokens, emb_size]
        x = x + shortcut  # Add the original input back

        # Shortcut connection for feed-forward block
        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = x + shortcut  # Add the original input back

        return x

class Llama3Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()

        # Main model parameters
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"], dtype=cfg["dtype"])

        self.trf_blocks = nn.ModuleList(  # ModuleList since Sequential can only accept one input, and we need `x, mask, cos, sin`
            [TransformerBlock(cfg) for _ in range(cfg["n_layers"])]
        )

        self.final_norm = nn.RMSNorm(cfg["emb_dim"], eps=1e-5, dtype=cfg["dtype"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False, dtype=cfg["dtype"])

        # Reusable utilities
        cos, sin = compute_rope_params(
            head_dim=cfg["emb_dim"] // cfg["n_heads"],
            theta_base=cfg["rope_base"],
            context_length=cfg["context_length"],
            freq_config=cfg["rope_freq"]
        )
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.cfg = cfg


    def forward(self, in_idx):
        # Forward pass
        tok_embeds = self.tok_emb(in_idx)
        x = tok_embeds

        num_tokens = x.shape[1]
        mask = torch.triu(torch.ones(num_tokens, num_tokens, device=x.device, dtype=torch.bool), diagonal=1)
        
        for block in self.trf_blocks:
            x = block(x, mask, self.cos, self.sin)
        x = self.final_norm(x)
        logits = self.out_head(x.to(self.cfg["dtype"]))
        return logits
"""

LLAMA32 = (
    MODEL
    + r'''
# Llama 3.2 1B

LLAMA32_CONFIG = {
    "vocab_size": 272,               # port: 128_256 shrunk (the stand-in's bytes and specials)  # Vocabulary size
    "context_length": 64,            # port: 131_072 shrunk  # Context length that was used to train the model
    "emb_dim": 64,                   # port: 2048 shrunk  # Embedding dimension
    "n_heads": 8,                    # port: 32 shrunk  # Number of attention heads
    "n_layers": 2,                   # port: 16 shrunk  # Number of layers
    "hidden_dim": 128,               # port: 8192 shrunk  # Size of the intermediate dimension in FeedForward
    "n_kv_groups": 2,                # port: 8 shrunk  # Key-Value groups for grouped-query attention
    "rope_base": 500_000.0,          # The base in RoPE's "theta"
    "dtype": torch.float32,          # port: bfloat16's products are slow on a CPU  # Lower-precision dtype to reduce memory usage
    "rope_freq": {                   # RoPE frequency scaling
        "factor": 32.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_context_length": 8192,
    }
}

LLAMA_SIZE_STR = "1B" if LLAMA32_CONFIG["emb_dim"] == 64 else "3B"  # port: 2048 shrunk as above

model = Llama3Model(LLAMA32_CONFIG)
W, G, layout = ("weights", "gamma", lambda a: a.T) if hasattr(model.out_head, "weights") else ("weight", "weight", lambda a: a)  # port: tricycle's names of a layer's tensors (a Linear's weights (in, out), a norm's gamma)

def calc_model_memory_size(model, input_dtype=torch.float32):
    total_params = 0
    total_grads = 0
    for param in model.parameters():
        # Calculate total number of elements per parameter
        param_size = param.numel()
        total_params += param_size
        # Check if gradients are stored for this parameter
        if param.requires_grad:
            total_grads += param_size

    # Calculate buffer size (non-parameters that require memory)
    total_buffers = sum(buf.numel() for buf in model.buffers())

    # Size in bytes = (Number of elements) * (Size of each element in bytes)
    # We assume parameters and gradients are stored in the same type as input dtype
    element_size = torch.tensor(0, dtype=input_dtype).element_size()
    total_memory_bytes = (total_params + total_grads + total_buffers) * element_size

    # Convert bytes to gigabytes
    total_memory_gb = total_memory_bytes / (1024**3)

    return total_memory_gb

print(f"float32 (PyTorch default): {calc_model_memory_size(model, input_dtype=torch.float32):.2f} GB")
print(f"bfloat16: {calc_model_memory_size(model, input_dtype=torch.bfloat16):.2f} GB")

total_params = sum(p.numel() for p in model.parameters())
print(f"Total number of parameters: {total_params:,}")

# Account for weight tying
total_params_normalized = total_params - getattr(model.tok_emb, W).numel()  # port: as above
print(f"\nTotal number of unique parameters: {total_params_normalized:,}")

if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")

model.to(device);

import os
from pathlib import Path

class Tokenizer:
    # port: a stand-in for tiktoken's Llama 3 BPE (a download): the tokens are the text's UTF-8 bytes
    def __init__(self, model_path):
        # hard-coded from Meta's tokenizer.json
        self.special = {
            "<|begin_of_text|>": 256,  # port: the stand-in's ids follow its 256 bytes
            "<|end_of_text|>": 257,  # port: as above
            "<|start_header_id|>": 258,  # port: as above
            "<|end_header_id|>": 259,  # port: as above
            "<|eot_id|>": 260,  # port: as above
        }
        self.names = {i: name for name, i in self.special.items()}  # port: the stand-in's decoding

    def encode(self, text, bos=False, eos=False):
        ids = ([self.special["<|begin_of_text|>"]] if bos else []) \
              + list(text.encode("utf-8"))  # port: the stand-in's tokens
        if eos:
            ids.append(self.special["<|end_of_text|>"])
        return ids

    def decode(self, ids):
        return "".join(self.names.get(i, bytes([i % 256]).decode("latin-1")) for i in ids)  # port: the stand-in's decoding


class ChatFormat:

    def __init__(self, tokenizer: Tokenizer, *,
                 default_system="You are a helpful assistant."):
        self.tok = tokenizer
        self.default_system = default_system

    def _header(self, role):
        """Encode <|start_header_id|>role<|end_header_id|>\n\n"""
        return (
            [self.tok.special["<|start_header_id|>"]]
            + self.tok.encode(role)
            + [self.tok.special["<|end_header_id|>"]]
            + self.tok.encode("\n\n")
        )

    def encode(self, user_message, system_message=None):
        sys_msg = system_message if system_message is not None else self.default_system

        ids = [self.tok.special["<|begin_of_text|>"]]

        # system
        ids += self._header("system")
        ids += self.tok.encode(sys_msg)
        ids += [self.tok.special["<|eot_id|>"]]

        # user
        ids += self._header("user")
        ids += self.tok.encode(user_message)
        ids += [self.tok.special["<|eot_id|>"]]

        # assistant header (no content yet)
        ids += self._header("assistant")

        return ids

tokenizer_file_path = f"Llama-3.2-{LLAMA_SIZE_STR}-Instruct/original/tokenizer.model"  # port: no download

tokenizer = Tokenizer(tokenizer_file_path)
chat_tokenizer = ChatFormat(tokenizer)

def assign(left, right, tensor_name="unknown"):
    if left.shape != right.shape:
        raise ValueError(f"Shape mismatch in tensor '{tensor_name}'. Left: {left.shape}, Right: {right.shape}")
    
    with torch.no_grad():
        if isinstance(right, torch.Tensor):
            left.copy_(right)
        else:
            left.copy_(torch.as_tensor(right, dtype=left.dtype, device=left.device))

    return left 


def load_weights_into_llama(model, param_config, params):
    setattr(model.tok_emb, W, assign(getattr(model.tok_emb, W), params["model.embed_tokens.weight"], "model.embed_tokens.weight"))  # port: as above

    for l in range(param_config["n_layers"]):

        # Load attention weights
        setattr(model.trf_blocks[l].att.W_query, W, assign(  # port: as above
            getattr(model.trf_blocks[l].att.W_query, W),  # port: as above
            layout(params[f"model.layers.{l}.self_attn.q_proj.weight"]),  # port: as above
            f"model.layers.{l}.self_attn.q_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].att.W_key, W, assign(  # port: as above
            getattr(model.trf_blocks[l].att.W_key, W),  # port: as above
            layout(params[f"model.layers.{l}.self_attn.k_proj.weight"]),  # port: as above
            f"model.layers.{l}.self_attn.k_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].att.W_value, W, assign(  # port: as above
            getattr(model.trf_blocks[l].att.W_value, W),  # port: as above
            layout(params[f"model.layers.{l}.self_attn.v_proj.weight"]),  # port: as above
            f"model.layers.{l}.self_attn.v_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].att.out_proj, W, assign(  # port: as above
            getattr(model.trf_blocks[l].att.out_proj, W),  # port: as above
            layout(params[f"model.layers.{l}.self_attn.o_proj.weight"]),  # port: as above
            f"model.layers.{l}.self_attn.o_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].norm1, G, assign(  # port: as above
            getattr(model.trf_blocks[l].norm1, G),  # port: as above
            params[f"model.layers.{l}.input_layernorm.weight"],
            f"model.layers.{l}.input_layernorm.weight"
        ))  # port: as above

        # Load FeedForward weights
        setattr(model.trf_blocks[l].ff.fc1, W, assign(  # port: as above
            getattr(model.trf_blocks[l].ff.fc1, W),  # port: as above
            layout(params[f"model.layers.{l}.mlp.gate_proj.weight"]),  # port: as above
            f"model.layers.{l}.mlp.gate_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].ff.fc2, W, assign(  # port: as above
            getattr(model.trf_blocks[l].ff.fc2, W),  # port: as above
            layout(params[f"model.layers.{l}.mlp.up_proj.weight"]),  # port: as above
            f"model.layers.{l}.mlp.up_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].ff.fc3, W, assign(  # port: as above
            getattr(model.trf_blocks[l].ff.fc3, W),  # port: as above
            layout(params[f"model.layers.{l}.mlp.down_proj.weight"]),  # port: as above
            f"model.layers.{l}.mlp.down_proj.weight"
        ))  # port: as above
        setattr(model.trf_blocks[l].norm2, G, assign(  # port: as above
            getattr(model.trf_blocks[l].norm2, G),  # port: as above
            params[f"model.layers.{l}.post_attention_layernorm.weight"],
            f"model.layers.{l}.post_attention_layernorm.weight"
        ))  # port: as above

    # Load output layer weights
    setattr(model.final_norm, G, assign(getattr(model.final_norm, G), params["model.norm.weight"], "model.norm.weight"))  # port: as above

    if "lm_head.weight" in params.keys():
        setattr(model.out_head, W, assign(getattr(model.out_head, W), layout(params["lm_head.weight"]), "lm_head.weight"))  # port: as above
    else:
        model.out_head.weight = model.tok_emb.weight
        print("Model uses weight tying.")

from llama_download import load_file  # port: made-up parameters in Hugging Face's names (no download, no safetensors)


if LLAMA_SIZE_STR == "1B":
    weights_file = f"Llama-3.2-{LLAMA_SIZE_STR}-Instruct/model.safetensors"  # port: no download
    combined_weights = load_file(weights_file)


else:
    combined_weights = {}
    for i in range(1, 3):
        weights_file = f"Llama-3.2-{LLAMA_SIZE_STR}-Instruct/model-0000{i}-of-00002.safetensors"  # port: no download
        current_weights = load_file(weights_file)
        combined_weights.update(current_weights)


load_weights_into_llama(model, LLAMA32_CONFIG, combined_weights)
model.to(device)
del combined_weights  # free up memory

def count_unique_parameters(model):
    unique_params = set()
    total_unique_params = 0
    
    for param in model.parameters():
        if param.data_ptr() not in unique_params:
            total_unique_params += param.numel()
            unique_params.add(param.data_ptr())
            
    return total_unique_params

total_params_uniq = count_unique_parameters(model)
print(f"Total number of unique parameters: {total_params_uniq:,}")

# Checks that the weight values are the same
print("Weight tying:", torch.equal(getattr(model.tok_emb, W), layout(getattr(model.out_head, W))))  # port: as above

def text_to_token_ids(text, tokenizer):
    encoded = tokenizer.encode(text)
    encoded_tensor = torch.tensor(encoded).unsqueeze(0)  # add batch dimension
    return encoded_tensor


def token_ids_to_text(token_ids, tokenizer):
    flat = token_ids.squeeze(0)  # remove batch dimension
    return tokenizer.decode(flat.tolist())


def generate(model, idx, max_new_tokens, context_size, temperature=0.0, top_k=None, eos_id=None):

    # For-loop is the same as before: Get logits, and only focus on last time step
    for _ in range(max_new_tokens):
        idx_cond = idx[:, -context_size:]
        with torch.no_grad():
            logits = model(idx_cond)
        logits = logits[:, -1, :]

        # New: Filter logits with top_k sampling
        if top_k is not None:
            # Keep only top_k values
            top_logits, _ = torch.topk(logits, top_k)
            min_val = top_logits[:, -1]
            logits = torch.where(logits < min_val, torch.tensor(float('-inf')).to(logits.device), logits)

        # New: Apply temperature scaling
        if temperature > 0.0:
            logits = logits / temperature

            # New (not in book): numerical stability tip to get equivalent results on mps device
            # subtract rowwise max before softmax
            logits = logits - logits.max(dim=-1, keepdim=True).values
            
            # Apply softmax to get probabilities
            probs = torch.softmax(logits, dim=-1)  # (batch_size, context_len)

            # Sample from the distribution
            idx_next = torch.multinomial(probs, num_samples=1)  # (batch_size, 1)

        # Otherwise same as before: get idx of the vocab entry with the highest logits value
        else:
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)  # (batch_size, 1)

        if idx_next == eos_id:  # Stop generating early if end-of-sequence token is encountered and eos_id is specified
            break

        # Same as before: append sampled index to the running sequence
        idx = torch.cat((idx, idx_next), dim=1)  # (batch_size, num_tokens+1)

    return idx

import time


PROMPT = "What do llamas eat?"

torch.manual_seed(123)

start = time.time()

token_ids = generate(
    model=model,
    idx=text_to_token_ids(PROMPT, chat_tokenizer).to(device),
    max_new_tokens=8,  # port: 150 shrunk
    context_size=LLAMA32_CONFIG["context_length"],
    top_k=1,
    temperature=0.
)

print(f"Time: {time.time() - start:.2f} sec")

if torch.cuda.is_available():
    max_mem_bytes = torch.cuda.max_memory_allocated()
    max_mem_gb = max_mem_bytes / (1024 ** 3)
    print(f"Max memory allocated: {max_mem_gb:.2f} GB")

output_text = token_ids_to_text(token_ids, tokenizer)


def clean_text(text, header_end="assistant<|end_header_id|>\n\n"):
    # Find the index of the first occurrence of "<|end_header_id|>"
    index = text.find(header_end)

    if index != -1:
        # Return the substring starting after "<|end_header_id|>"
        return text[index + len(header_end):].strip()  # Strip removes leading/trailing whitespace
    else:
        # If the token is not found, return the original text
        return text

print("Generated ids:", token_ids[0, -8:].tolist())  # port: the ids, compared by the test
print("\n\nOutput text:\n\n", clean_text(output_text))
'''
)

# the test's stand-in for huggingface_hub + safetensors: Llama 3.2's parameter names and
# layouts (a Linear's weight (out, in)), the numbers made up (numpy float32)
LLAMA_DOWNLOAD = r'''
import numpy as np


def load_file(path, sizes=(272, 64, 8, 2, 2, 128)):
    """Llama 3.2's state dict, ``model.safetensors``'s names, numbers from a fixed seed."""
    vocab, d, heads, groups, layers, hidden = sizes
    kv = groups * d // heads
    rng = np.random.default_rng(0)
    normal = lambda *shape: (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)
    params = {"model.embed_tokens.weight": normal(vocab, d), "model.norm.weight": 1 + 0.1 * normal(d),
              "lm_head.weight": 4 * normal(vocab, d)}
    for l in range(layers):
        at, mlp = f"model.layers.{l}.self_attn.", f"model.layers.{l}.mlp."
        params.update({at + "q_proj.weight": normal(d, d), at + "k_proj.weight": normal(kv, d),
                       at + "v_proj.weight": normal(kv, d), at + "o_proj.weight": normal(d, d),
                       mlp + "gate_proj.weight": normal(hidden, d), mlp + "up_proj.weight": normal(hidden, d),
                       mlp + "down_proj.weight": normal(d, hidden),
                       f"model.layers.{l}.input_layernorm.weight": 1 + 0.1 * normal(d),
                       f"model.layers.{l}.post_attention_layernorm.weight": 1 + 0.1 * normal(d)})
    return params
'''


def printed(text: str) -> list[str]:
    """``lines`` of what a notebook printed, the clock's line left out."""
    return [line for line in lines(text) if not line.startswith("Time:")]


def tricycle_tensor(array):
    import tricycle  # noqa: PLC0415

    return tricycle.tensor(array)


def test_converting_gpt_to_llama2(tmp_path, monkeypatch):
    (theirs, their_space), (ours, our_space) = both(LLAMA2, {}, tmp_path, monkeypatch)
    assert printed(ours) == printed(theirs)
    assert ours == theirs  # the counts and the memory estimate, digit for digit
    memory = [space["calc_model_memory_size"](space["model"]) for space in (our_space, their_space)]
    assert memory[0] == memory[1] > 0  # parameters, gradients and buffers (masks, cos, sin)
    np.testing.assert_allclose(our_space["cos"].numpy(), their_space["cos"].numpy(), atol=1e-6)
    np.testing.assert_allclose(our_space["sin"].numpy(), their_space["sin"].numpy(), atol=1e-6)
    queries = their_space["queries"].numpy()  # the same queries rotated by each library
    rotated = our_space["compute_rope"](
        tricycle_tensor(queries), our_space["cos"], our_space["sin"]
    )
    np.testing.assert_allclose(rotated.numpy(), their_space["queries_rot"].numpy(), atol=1e-5)


def test_standalone_llama32(tmp_path, monkeypatch):
    files = {"llama_download.py": LLAMA_DOWNLOAD}
    (theirs, their_space), (ours, our_space) = both(LLAMA32, files, tmp_path, monkeypatch)
    assert printed(ours) == printed(theirs)
    memory = [space["calc_model_memory_size"](space["model"]) for space in (our_space, their_space)]
    assert memory[0] == memory[1] > 0  # the non-persistent cos and sin are buffers in both
    clock = re.compile(r"(Time|Max memory allocated): .*")  # each library's own, on a GPU
    assert clock.sub("", ours) == clock.sub("", theirs)  # the same greedy text
    assert "Weight tying: False" in ours and "Generated ids: [" in ours


def definitions(lib: str) -> dict:
    """The Llama 3 model's classes and functions (the notebook's text) under ``lib``."""
    space = {"__name__": "llama3"}
    exec(compile(MODEL.replace("torch", lib), f"<llama3 {lib}>", "exec"), space)
    return space


def test_llama3_gives_torchs_numbers_with_torchs_weights_and_learns_alike():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    rope = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_context_length": 8192}  # fmt: skip
    cfg = {"vocab_size": 40, "context_length": 16, "emb_dim": 32, "n_heads": 4, "n_layers": 2,
           "hidden_dim": 48, "n_kv_groups": 2, "rope_base": 500_000.0, "rope_freq": rope}  # fmt: skip
    spaces = {lib: definitions(lib) for lib in ("torch", "tricycle")}
    # Llama 3's RoPE angles: the low, medium (smoothed) and high frequencies of head_dim 8
    cos, sin = spaces["tricycle"]["compute_rope_params"](8, 500_000.0, 16, rope)
    tcos, tsin = spaces["torch"]["compute_rope_params"](8, 500_000.0, 16, rope)
    np.testing.assert_allclose(cos.numpy(), tcos.numpy(), atol=1e-6)
    np.testing.assert_allclose(sin.numpy(), tsin.numpy(), atol=1e-6)
    with one_thread(torch):
        torch.manual_seed(0)
        theirs = spaces["torch"]["Llama3Model"](dict(cfg, dtype=torch.float32))
        ours = spaces["tricycle"]["Llama3Model"](dict(cfg, dtype=tricycle.float32))
        assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
        rng = np.random.default_rng(0)
        ids, targets = rng.integers(0, 40, (2, 12)), rng.integers(0, 40, (2, 12))
        logits, tlogits = ours(tricycle.tensor(ids)), theirs(torch.from_numpy(ids))
        np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=1e-4, atol=1e-5)
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), tricycle.tensor(targets).flatten())
        tloss = torch.nn.functional.cross_entropy(
            tlogits.flatten(0, 1), torch.from_numpy(targets).flatten()
        )
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
        loss.backward()
        tloss.backward()

        def close(got, expected):
            np.testing.assert_allclose(
                got.grad.numpy(), expected.grad.numpy(), rtol=1e-4, atol=1e-6
            )

        close(ours.tok_emb.weights, theirs.tok_emb.weight)
        close(ours.final_norm.gamma, theirs.final_norm.weight)
        for block, tblock in zip(ours.trf_blocks, theirs.trf_blocks, strict=True):
            close(block.norm1.gamma, tblock.norm1.weight)
            for name in ("W_query", "W_key", "W_value", "out_proj"):  # keys/values: grouped
                got = getattr(block.att, name).weights
                np.testing.assert_allclose(
                    got.grad.numpy(),
                    getattr(tblock.att, name).weight.grad.numpy().T,
                    rtol=1e-4,
                    atol=1e-6,
                )
            for name in ("fc1", "fc2", "fc3"):
                got = getattr(block.ff, name).weights.grad.numpy()
                expected = getattr(tblock.ff, name).weight.grad.numpy().T
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)
        # a few AdamW steps on one batch: both learn, loss for loss
        optimizer = tricycle.optim.AdamW(ours.parameters(), lr=1e-2, weight_decay=0.1)
        toptimizer = torch.optim.AdamW(theirs.parameters(), lr=1e-2, weight_decay=0.1)
        history = []
        for _ in range(6):
            optimizer.zero_grad()
            toptimizer.zero_grad()
            loss = nn.functional.cross_entropy(
                ours(tricycle.tensor(ids)).flatten(0, 1), tricycle.tensor(targets).flatten()
            )
            tloss = torch.nn.functional.cross_entropy(
                theirs(torch.from_numpy(ids)).flatten(0, 1), torch.from_numpy(targets).flatten()
            )
            loss.backward()
            tloss.backward()
            optimizer.step()
            toptimizer.step()
            history.append((loss.item(), tloss.item()))
        np.testing.assert_allclose(*zip(*history), rtol=1e-3)
        assert history[-1][0] < 0.7 * history[0][0], history
        # greedy generation: the notebook's generate, each library's, the same tokens
        generate = r"def generate(model, idx," + LLAMA32.split("def generate(model, idx,")[1]
        generate = generate.split("\nimport time")[0]
        for lib in spaces:
            exec(generate.replace("torch", lib), spaces[lib])
        start = rng.integers(0, 40, (1, 4))
        greedy = spaces["tricycle"]["generate"](ours, tricycle.tensor(start), 8, 16, top_k=1)
        expected = spaces["torch"]["generate"](theirs, torch.from_numpy(start), 8, 16, top_k=1)
        np.testing.assert_array_equal(greedy.numpy(), expected.numpy())


def test_rsqrt_and_data_ptr_as_torchs():
    """``torch.rsqrt`` (the notebooks' RMSNorm) with torch's values and gradients, and
    ``data_ptr()`` (their count of unique parameters): tied tensors share it, a slice starts
    its element size further on."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    a = np.array([0.5, 1.0, 4.0], dtype=np.float32)
    ours, theirs = tricycle.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, t = tricycle.rsqrt(ours), torch.rsqrt(theirs)
    np.testing.assert_allclose(y.numpy(), t.detach().numpy(), rtol=1e-6)
    y.sum().backward()
    t.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)
    for lib in tricycle, torch:
        x = lib.ones(3)
        assert x[1:].data_ptr() == x.data_ptr() + 4 and lib.ones(3).data_ptr() != x.data_ptr()
