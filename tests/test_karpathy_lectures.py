"""Karpathy's teaching scripts, run on tricycle with ``torch`` replaced by ``tricycle`` in their
text (docs/pytorch.md's promise; the method of tests/test_torch_examples_b.py): the scripts a
learner has open beside tricycle.

- ng-video-lecture's ``bigram.py``: an ``nn.Embedding`` as a table of logits, ``torch.randint``
  and ``torch.stack`` batches, ``estimate_loss`` under ``@torch.no_grad()`` with
  ``model.eval()``/``train()``, AdamW, ``generate`` with ``torch.multinomial`` and ``torch.cat``;
- its ``gpt.py``: the lecture's GPT (``Head`` with ``register_buffer('tril', ...)`` and
  ``masked_fill``, ``MultiHeadAttention``, ``FeedFoward``, ``Block``, ``nn.LayerNorm``, a
  ``Sequential`` of blocks, ``apply(_init_weights)``), trained and sampled;
- makemore's ``makemore.py`` as run from its command line (``sys.argv``, so its argparse runs
  as written): ``CharDataset`` and ``create_datasets`` (``torch.randperm``), the
  ``InfiniteDataLoader`` over ``RandomSampler(replacement=True)``, each of its six models
  (``Transformer`` with ``NewGELU`` and ``CausalSelfAttention``, ``Bigram``, ``MLP`` (``torch.roll``
  and an in-place write into the ids), ``RNN`` with its own ``RNNCell`` and ``GRUCell``, ``BoW``
  with ``CausalBoW``), AdamW with betas, eps and weight decay, ``model.zero_grad(set_to_none=True)``,
  ``evaluate`` under ``@torch.inference_mode()``, ``print_samples`` through ``generate`` with
  ``top_k``, the checkpoint ``torch.save(model.state_dict(), ...)`` and the ``--sample-only`` and
  ``--resume`` runs that load it.

Each script is its own text; a line that differs ends in ``# port:`` and says why: sizes and
steps shrunk to run in seconds on a CPU, tricycle's name of a layer's tensor (``weights``, the
documented exception), a stand-in for ``torch.utils.tensorboard`` (the tensorboard package is
not installed for either library). The data is
written beside the script: a slice of ``tinyshakespeare.txt`` as the lecture's ``input.txt``
(skipped where the file is absent), and names made up here as makemore's ``names.txt``. The
test runs each script under torch (skipped without it), then under tricycle, and checks that
both learn (the losses fall), print the same lines numbers aside (the parameter counts
equal), and sample valid text. makemore's six models are also checked number for number:
with torch's weights loaded through ``nn.from_torch``, the same logits, loss, gradients and
greedy samples. The fixes the scripts and their lectures needed are tested against torch at
the end: ``model.zero_grad(set_to_none=True)`` (makemore's loop), and from the lectures'
notebooks ``f"{loss}"`` of a 0-d tensor, ``torch.all``/``any`` and ``torch.histogram``.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import re
import sys

import numpy as np
import pytest

from tests.helpers import DATA_DIR
from tests.test_torch_examples_b import lines, numbers

pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument:UserWarning")  # torch's

# ng-video-lecture/bigram.py
BIGRAM = r"""
import torch
import torch.nn as nn
from torch.nn import functional as F

# hyperparameters
batch_size = 32 # how many independent sequences will we process in parallel?
block_size = 8 # what is the maximum context length for predictions?
max_iters = 150  # port: 3000, shrunk to run in a second
eval_interval = 50  # port: 300, as above
learning_rate = 3e-2  # port: 1e-2, for the few steps
device = 'cuda' if torch.cuda.is_available() else 'cpu'
eval_iters = 10  # port: 200, as above
# ------------

torch.manual_seed(1337)

# wget https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
with open('input.txt', 'r', encoding='utf-8') as f:
    text = f.read()

# here are all the unique characters that occur in this text
chars = sorted(list(set(text)))
vocab_size = len(chars)
# create a mapping from characters to integers
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
encode = lambda s: [stoi[c] for c in s] # encoder: take a string, output a list of integers
decode = lambda l: ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string

# Train and test splits
data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9*len(data)) # first 90% will be train, rest val
train_data = data[:n]
val_data = data[n:]

# data loading
def get_batch(split):
    # generate a small batch of data of inputs x and targets y
    data = train_data if split == 'train' else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i+block_size] for i in ix])
    y = torch.stack([data[i+1:i+block_size+1] for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y

@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out

# super simple bigram model
class BigramLanguageModel(nn.Module):

    def __init__(self, vocab_size):
        super().__init__()
        # each token directly reads off the logits for the next token from a lookup table
        self.token_embedding_table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx, targets=None):

        # idx and targets are both (B,T) tensor of integers
        logits = self.token_embedding_table(idx) # (B,T,C)

        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B*T, C)
            targets = targets.view(B*T)
            loss = F.cross_entropy(logits, targets)

        return logits, loss

    def generate(self, idx, max_new_tokens):
        # idx is (B, T) array of indices in the current context
        for _ in range(max_new_tokens):
            # get the predictions
            logits, loss = self(idx)
            # focus only on the last time step
            logits = logits[:, -1, :] # becomes (B, C)
            # apply softmax to get probabilities
            probs = F.softmax(logits, dim=-1) # (B, C)
            # sample from the distribution
            idx_next = torch.multinomial(probs, num_samples=1) # (B, 1)
            # append sampled index to the running sequence
            idx = torch.cat((idx, idx_next), dim=1) # (B, T+1)
        return idx

model = BigramLanguageModel(vocab_size)
m = model.to(device)

# create a PyTorch optimizer
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

for iter in range(max_iters):

    # every once in a while evaluate the loss on train and val sets
    if iter % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

    # sample a batch of data
    xb, yb = get_batch('train')

    # evaluate the loss
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

# generate from the model
context = torch.zeros((1, 1), dtype=torch.long, device=device)
print(decode(m.generate(context, max_new_tokens=100)[0].tolist()))  # port: 500 new characters
"""

# ng-video-lecture/gpt.py
GPT = r'''
import torch
import torch.nn as nn
from torch.nn import functional as F

# hyperparameters
batch_size = 16 # port: 64, shrunk to run in seconds on a CPU; how many independent sequences will we process in parallel?
block_size = 16 # port: 256, as above; what is the maximum context length for predictions?
max_iters = 100  # port: 5000, as above
eval_interval = 50  # port: 500, as above
learning_rate = 3e-3  # port: 3e-4, for the few steps
device = 'cuda' if torch.cuda.is_available() else 'cpu'
eval_iters = 10  # port: 200, as above
n_embd = 32  # port: 384, as above
n_head = 4  # port: 6, as above
n_layer = 2  # port: 6, as above
dropout = 0.2
# ------------

torch.manual_seed(1337)

# wget https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
with open('input.txt', 'r', encoding='utf-8') as f:
    text = f.read()

# here are all the unique characters that occur in this text
chars = sorted(list(set(text)))
vocab_size = len(chars)
# create a mapping from characters to integers
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
encode = lambda s: [stoi[c] for c in s] # encoder: take a string, output a list of integers
decode = lambda l: ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string

# Train and test splits
data = torch.tensor(encode(text), dtype=torch.long)
n = int(0.9*len(data)) # first 90% will be train, rest val
train_data = data[:n]
val_data = data[n:]

# data loading
def get_batch(split):
    # generate a small batch of data of inputs x and targets y
    data = train_data if split == 'train' else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i+block_size] for i in ix])
    y = torch.stack([data[i+1:i+block_size+1] for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y

@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out

class Head(nn.Module):
    """ one head of self-attention """

    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))

        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        # input of size (batch, time-step, channels)
        # output of size (batch, time-step, head size)
        B,T,C = x.shape
        k = self.key(x)   # (B,T,hs)
        q = self.query(x) # (B,T,hs)
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2,-1) * k.shape[-1]**-0.5 # (B, T, hs) @ (B, hs, T) -> (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1) # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        v = self.value(x) # (B,T,hs)
        out = wei @ v # (B, T, T) @ (B, T, hs) -> (B, T, hs)
        return out

class MultiHeadAttention(nn.Module):
    """ multiple heads of self-attention in parallel """

    def __init__(self, num_heads, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        out = self.dropout(self.proj(out))
        return out

class FeedFoward(nn.Module):
    """ a simple linear layer followed by a non-linearity """

    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.ReLU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)

class Block(nn.Module):
    """ Transformer block: communication followed by computation """

    def __init__(self, n_embd, n_head):
        # n_embd: embedding dimension, n_head: the number of heads we'd like
        super().__init__()
        head_size = n_embd // n_head
        self.sa = MultiHeadAttention(n_head, head_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x

class GPTLanguageModel(nn.Module):

    def __init__(self):
        super().__init__()
        # each token directly reads off the logits for the next token from a lookup table
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.position_embedding_table = nn.Embedding(block_size, n_embd)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head=n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd) # final layer norm
        self.lm_head = nn.Linear(n_embd, vocab_size)

        # better init, not covered in the original GPT video, but important, will cover in followup video
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weights if hasattr(module, 'weights') else module.weight, mean=0.0, std=0.02)  # port: tricycle's tensor is weights
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weights if hasattr(module, 'weights') else module.weight, mean=0.0, std=0.02)  # port: as above

    def forward(self, idx, targets=None):
        B, T = idx.shape

        # idx and targets are both (B,T) tensor of integers
        tok_emb = self.token_embedding_table(idx) # (B,T,C)
        pos_emb = self.position_embedding_table(torch.arange(T, device=device)) # (T,C)
        x = tok_emb + pos_emb # (B,T,C)
        x = self.blocks(x) # (B,T,C)
        x = self.ln_f(x) # (B,T,C)
        logits = self.lm_head(x) # (B,T,vocab_size)

        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B*T, C)
            targets = targets.view(B*T)
            loss = F.cross_entropy(logits, targets)

        return logits, loss

    def generate(self, idx, max_new_tokens):
        # idx is (B, T) array of indices in the current context
        for _ in range(max_new_tokens):
            # crop idx to the last block_size tokens
            idx_cond = idx[:, -block_size:]
            # get the predictions
            logits, loss = self(idx_cond)
            # focus only on the last time step
            logits = logits[:, -1, :] # becomes (B, C)
            # apply softmax to get probabilities
            probs = F.softmax(logits, dim=-1) # (B, C)
            # sample from the distribution
            idx_next = torch.multinomial(probs, num_samples=1) # (B, 1)
            # append sampled index to the running sequence
            idx = torch.cat((idx, idx_next), dim=1) # (B, T+1)
        return idx

model = GPTLanguageModel()
m = model.to(device)
# print the number of parameters in the model
print(sum(p.numel() for p in m.parameters())/1e6, 'M parameters')

# create a PyTorch optimizer
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

for iter in range(max_iters):

    # every once in a while evaluate the loss on train and val sets
    if iter % eval_interval == 0 or iter == max_iters - 1:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

    # sample a batch of data
    xb, yb = get_batch('train')

    # evaluate the loss
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

# generate from the model
context = torch.zeros((1, 1), dtype=torch.long, device=device)
print(decode(m.generate(context, max_new_tokens=100)[0].tolist()))  # port: 500 new characters
#open('more.txt', 'w').write(decode(m.generate(context, max_new_tokens=10000)[0].tolist()))
'''

# makemore/makemore.py
MAKEMORE = r'''
"""
you give this script some words (one per line) and it will generate more things like it.
uses super state of the art Transformer AI tech
this code is intended to be super hackable. tune it to your needs.

Changes from minGPT:
- I removed the from_pretrained function where we init with GPT2 weights
- I removed dropout layers because the models we train here are small,
  it's not necessary to understand at this stage and at this scale.
- I removed weight decay and all of the complexity around what parameters are
  and are not weight decayed. I don't believe this should make a massive
  difference at the scale that we operate on here.
"""

import os
import sys
import time
import math
import argparse
from dataclasses import dataclass
from typing import List

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader
class SummaryWriter:  # port: torch.utils.tensorboard needs the tensorboard package: a stand-in
    def __init__(self, log_dir):  # port: as above
        self.add_scalar = self.flush = lambda *args: None  # port: as above

# -----------------------------------------------------------------------------

@dataclass
class ModelConfig:
    block_size: int = None # length of the input sequences of integers
    vocab_size: int = None # the input integers are in range [0 .. vocab_size -1]
    # parameters below control the sizes of each model slightly differently
    n_layer: int = 4
    n_embd: int = 64
    n_embd2: int = 64
    n_head: int = 4

# -----------------------------------------------------------------------------
# Transformer Language Model (*exactly* as used in GPT-2)

class NewGELU(nn.Module):
    """
    Implementation of the GELU activation function currently in Google BERT repo (identical to OpenAI GPT).
    Reference: Gaussian Error Linear Units (GELU) paper: https://arxiv.org/abs/1606.08415
    """
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

class CausalSelfAttention(nn.Module):
    """
    A vanilla multi-head masked self-attention layer with a projection at the end.
    It is possible to use torch.nn.MultiheadAttention here but I am including an
    explicit implementation here to show that there is nothing too scary here.
    """

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                                     .view(1, 1, config.block_size, config.block_size))
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k ,v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.c_proj(y)
        return y

class Block(nn.Module):
    """ an unassuming Transformer block """

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.ModuleDict(dict(
            c_fc    = nn.Linear(config.n_embd, 4 * config.n_embd),
            c_proj  = nn.Linear(4 * config.n_embd, config.n_embd),
            act     = NewGELU(),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x))) # MLP forward

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x

class Transformer(nn.Module):
    """ Transformer Language Model, exactly as seen in GPT-2 """

    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size

        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.vocab_size, config.n_embd),
            wpe = nn.Embedding(config.block_size, config.n_embd),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f = nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # report number of parameters (note we don't count the decoder parameters in lm_head)
        n_params = sum(p.numel() for p in self.transformer.parameters())
        print("number of parameters: %.2fM" % (n_params/1e6,))

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0) # shape (1, t)

        # forward the GPT model itself
        tok_emb = self.transformer.wte(idx) # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos) # position embeddings of shape (1, t, n_embd)
        x = tok_emb + pos_emb
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

# -----------------------------------------------------------------------------
# Bag of Words (BoW) language model

class CausalBoW(nn.Module):
    """
    Causal bag of words. Averages the preceding elements and looks suspiciously like
    a CausalAttention module you'd find in a transformer, for no apparent reason at all ;)
    """
    def __init__(self, config):
        super().__init__()

        # used to mask out vectors and preserve autoregressive property
        self.block_size = config.block_size
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                            .view(1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, n_embd

        # do the weighted average of all preceeding token features
        att = torch.zeros((B, T, T), device=x.device)
        att = att.masked_fill(self.bias[:,:T,:T] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        y = att @ x # (B, T, T) x (B, T, C) -> (B, T, C)

        return y

class BoWBlock(nn.Module):
    """ collects BoW features and adds an MLP """

    def __init__(self, config):
        super().__init__()

        # Causal BoW module
        self.cbow = CausalBoW(config)
        # MLP assembler
        self.mlp = nn.ModuleDict(dict(
            c_fc    = nn.Linear(config.n_embd, config.n_embd2),
            c_proj  = nn.Linear(config.n_embd2, config.n_embd),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(F.tanh(m.c_fc(x))) # MLP forward

    def forward(self, x):
        x = x + self.cbow(x)
        x = x + self.mlpf(x)
        return x

class BoW(nn.Module):
    """
    takes the previous block_size tokens, encodes them with a lookup table,
    also encodes their positions with lookup table, then averages all of those
    embeddings up and uses that to predict the next token.
    """

    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        # token embedding
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        # position embedding
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        # context block
        self.context_block = BoWBlock(config)
        # language model head decoder layer
        self.lm_head = nn.Linear(config.n_embd, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):

        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0) # shape (1, t)

        # forward the token and position embedding layers
        tok_emb = self.wte(idx) # token embeddings of shape (b, t, n_embd)
        pos_emb = self.wpe(pos) # position embeddings of shape (1, t, n_embd)
        # add and run through the decoder MLP
        x = tok_emb + pos_emb
        # run the bag of words context module
        x = self.context_block(x)
        # decode to next token probability
        logits = self.lm_head(x)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

# -----------------------------------------------------------------------------
"""
Recurrent Neural Net language model: either a vanilla RNN recurrence or a GRU.
Did not implement an LSTM because its API is a bit more annoying as it has
both a hidden state and a cell state, but it's very similar to GRU and in
practice works just as well.
"""

class RNNCell(nn.Module):
    """
    the job of a 'Cell' is to:
    take input at current time step x_{t} and the hidden state at the
    previous time step h_{t-1} and return the resulting hidden state
    h_{t} at the current timestep
    """
    def __init__(self, config):
        super().__init__()
        self.xh_to_h = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

    def forward(self, xt, hprev):
        xh = torch.cat([xt, hprev], dim=1)
        ht = F.tanh(self.xh_to_h(xh))
        return ht

class GRUCell(nn.Module):
    """
    same job as RNN cell, but a bit more complicated recurrence formula
    that makes the GRU more expressive and easier to optimize.
    """
    def __init__(self, config):
        super().__init__()
        # input, forget, output, gate
        self.xh_to_z = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_r = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)
        self.xh_to_hbar = nn.Linear(config.n_embd + config.n_embd2, config.n_embd2)

    def forward(self, xt, hprev):
        # first use the reset gate to wipe some channels of the hidden state to zero
        xh = torch.cat([xt, hprev], dim=1)
        r = F.sigmoid(self.xh_to_r(xh))
        hprev_reset = r * hprev
        # calculate the candidate new hidden state hbar
        xhr = torch.cat([xt, hprev_reset], dim=1)
        hbar = F.tanh(self.xh_to_hbar(xhr))
        # calculate the switch gate that determines if each channel should be updated at all
        z = F.sigmoid(self.xh_to_z(xh))
        # blend the previous hidden state and the new candidate hidden state
        ht = (1 - z) * hprev + z * hbar
        return ht

class RNN(nn.Module):

    def __init__(self, config, cell_type):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        self.start = nn.Parameter(torch.zeros(1, config.n_embd2)) # the starting hidden state
        self.wte = nn.Embedding(config.vocab_size, config.n_embd) # token embeddings table
        if cell_type == 'rnn':
            self.cell = RNNCell(config)
        elif cell_type == 'gru':
            self.cell = GRUCell(config)
        self.lm_head = nn.Linear(config.n_embd2, self.vocab_size)

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()

        # embed all the integers up front and all at once for efficiency
        emb = self.wte(idx) # (b, t, n_embd)

        # sequentially iterate over the inputs and update the RNN state each tick
        hprev = self.start.expand((b, -1)) # expand out the batch dimension
        hiddens = []
        for i in range(t):
            xt = emb[:, i, :] # (b, n_embd)
            ht = self.cell(xt, hprev) # (b, n_embd2)
            hprev = ht
            hiddens.append(ht)

        # decode the outputs
        hidden = torch.stack(hiddens, 1) # (b, t, n_embd2)
        logits = self.lm_head(hidden)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

# -----------------------------------------------------------------------------
# MLP language model

class MLP(nn.Module):
    """
    takes the previous block_size tokens, encodes them with a lookup table,
    concatenates the vectors and predicts the next token with an MLP.

    Reference:
    Bengio et al. 2003 https://www.jmlr.org/papers/volume3/bengio03a/bengio03a.pdf
    """

    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.vocab_size = config.vocab_size
        self.wte = nn.Embedding(config.vocab_size + 1, config.n_embd) # token embeddings table
        # +1 in the line above for a special <BLANK> token that gets inserted if encoding a token
        # before the beginning of the input sequence
        self.mlp = nn.Sequential(
            nn.Linear(self.block_size * config.n_embd, config.n_embd2),
            nn.Tanh(),
            nn.Linear(config.n_embd2, self.vocab_size)
        )

    def get_block_size(self):
        return self.block_size

    def forward(self, idx, targets=None):

        # gather the word embeddings of the previous 3 words
        embs = []
        for k in range(self.block_size):
            tok_emb = self.wte(idx) # token embeddings of shape (b, t, n_embd)
            idx = torch.roll(idx, 1, 1)
            idx[:, 0] = self.vocab_size # special <BLANK> token
            embs.append(tok_emb)

        # concat all of the embeddings together and pass through an MLP
        x = torch.cat(embs, -1) # (b, t, n_embd * block_size)
        logits = self.mlp(x)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

# -----------------------------------------------------------------------------
# Bigram language model

class Bigram(nn.Module):
    """
    Bigram Language Model 'neural net', simply a lookup table of logits for the
    next character given a previous character.
    """

    def __init__(self, config):
        super().__init__()
        n = config.vocab_size
        self.logits = nn.Parameter(torch.zeros((n, n)))

    def get_block_size(self):
        return 1 # this model only needs one previous character to predict the next

    def forward(self, idx, targets=None):

         # 'forward pass', lol
        logits = self.logits[idx]

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

# -----------------------------------------------------------------------------
# helper functions for evaluating and sampling from the model

@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
    """
    Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
    the sequence max_new_tokens times, feeding the predictions back into the model each time.
    Most likely you'll want to make sure to be in model.eval() mode of operation for this.
    """
    block_size = model.get_block_size()
    for _ in range(max_new_tokens):
        # if the sequence context is growing too long we must crop it at block_size
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        # forward the model to get the logits for the index in the sequence
        logits, _ = model(idx_cond)
        # pluck the logits at the final step and scale by desired temperature
        logits = logits[:, -1, :] / temperature
        # optionally crop the logits to only the top k options
        if top_k is not None:
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float('Inf')
        # apply softmax to convert logits to (normalized) probabilities
        probs = F.softmax(logits, dim=-1)
        # either sample from the distribution or take the most likely element
        if do_sample:
            idx_next = torch.multinomial(probs, num_samples=1)
        else:
            _, idx_next = torch.topk(probs, k=1, dim=-1)
        # append sampled index to the running sequence and continue
        idx = torch.cat((idx, idx_next), dim=1)

    return idx

def print_samples(num=10):
    """ samples from the model and pretty prints the decoded samples """
    X_init = torch.zeros(num, 1, dtype=torch.long).to(args.device)
    top_k = args.top_k if args.top_k != -1 else None
    steps = train_dataset.get_output_length() - 1 # -1 because we already start with <START> token (index 0)
    X_samp = generate(model, X_init, steps, top_k=top_k, do_sample=True).to('cpu')
    train_samples, test_samples, new_samples = [], [], []
    for i in range(X_samp.size(0)):
        # get the i'th row of sampled integers, as python list
        row = X_samp[i, 1:].tolist() # note: we need to crop out the first <START> token
        # token 0 is the <STOP> token, so we crop the output sequence at that point
        crop_index = row.index(0) if 0 in row else len(row)
        row = row[:crop_index]
        word_samp = train_dataset.decode(row)
        # separately track samples that we have and have not seen before
        if train_dataset.contains(word_samp):
            train_samples.append(word_samp)
        elif test_dataset.contains(word_samp):
            test_samples.append(word_samp)
        else:
            new_samples.append(word_samp)
    print('-'*80)
    for lst, desc in [(train_samples, 'in train'), (test_samples, 'in test'), (new_samples, 'new')]:
        print(f"{len(lst)} samples that are {desc}:")
        for word in lst:
            print(word)
    print('-'*80)

@torch.inference_mode()
def evaluate(model, dataset, batch_size=50, max_batches=None):
    model.eval()
    loader = DataLoader(dataset, shuffle=True, batch_size=batch_size, num_workers=0)
    losses = []
    for i, batch in enumerate(loader):
        batch = [t.to(args.device) for t in batch]
        X, Y = batch
        logits, loss = model(X, Y)
        losses.append(loss.item())
        if max_batches is not None and i >= max_batches:
            break
    mean_loss = torch.tensor(losses).mean().item()
    model.train() # reset model back to training mode
    return mean_loss

# -----------------------------------------------------------------------------
# helper functions for creating the training and test Datasets that emit words

class CharDataset(Dataset):

    def __init__(self, words, chars, max_word_length):
        self.words = words
        self.chars = chars
        self.max_word_length = max_word_length
        self.stoi = {ch:i+1 for i,ch in enumerate(chars)}
        self.itos = {i:s for s,i in self.stoi.items()} # inverse mapping

    def __len__(self):
        return len(self.words)

    def contains(self, word):
        return word in self.words

    def get_vocab_size(self):
        return len(self.chars) + 1 # all the possible characters and special 0 token

    def get_output_length(self):
        return self.max_word_length + 1 # <START> token followed by words

    def encode(self, word):
        ix = torch.tensor([self.stoi[w] for w in word], dtype=torch.long)
        return ix

    def decode(self, ix):
        word = ''.join(self.itos[i] for i in ix)
        return word

    def __getitem__(self, idx):
        word = self.words[idx]
        ix = self.encode(word)
        x = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        y = torch.zeros(self.max_word_length + 1, dtype=torch.long)
        x[1:1+len(ix)] = ix
        y[:len(ix)] = ix
        y[len(ix)+1:] = -1 # index -1 will mask the loss at the inactive locations
        return x, y

def create_datasets(input_file):

    # preprocessing of the input text file
    with open(input_file, 'r') as f:
        data = f.read()
    words = data.splitlines()
    words = [w.strip() for w in words] # get rid of any leading or trailing white space
    words = [w for w in words if w] # get rid of any empty strings
    chars = sorted(list(set(''.join(words)))) # all the possible characters
    max_word_length = max(len(w) for w in words)
    print(f"number of examples in the dataset: {len(words)}")
    print(f"max word length: {max_word_length}")
    print(f"number of unique characters in the vocabulary: {len(chars)}")
    print("vocabulary:")
    print(''.join(chars))

    # partition the input data into a training and the test set
    test_set_size = min(1000, int(len(words) * 0.1)) # 10% of the training set, or up to 1000 examples
    rp = torch.randperm(len(words)).tolist()
    train_words = [words[i] for i in rp[:-test_set_size]]
    test_words = [words[i] for i in rp[-test_set_size:]]
    print(f"split up the dataset into {len(train_words)} training examples and {len(test_words)} test examples")

    # wrap in dataset objects
    train_dataset = CharDataset(train_words, chars, max_word_length)
    test_dataset = CharDataset(test_words, chars, max_word_length)

    return train_dataset, test_dataset

class InfiniteDataLoader:
    """
    this is really hacky and I'm not proud of it, but there doesn't seem to be
    a better way in PyTorch to just create an infinite dataloader?
    """

    def __init__(self, dataset, **kwargs):
        train_sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=train_sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration: # this will technically only happen after 1e10 samples... (i.e. basically never)
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch

# -----------------------------------------------------------------------------
if __name__ == '__main__':

    # parse command line args
    parser = argparse.ArgumentParser(description="Make More")
    # system/input/output
    parser.add_argument('--input-file', '-i', type=str, default='names.txt', help="input file with things one per line")
    parser.add_argument('--work-dir', '-o', type=str, default='out', help="output working directory")
    parser.add_argument('--resume', action='store_true', help="when this flag is used, we will resume optimization from existing model in the workdir")
    parser.add_argument('--sample-only', action='store_true', help="just sample from the model and quit, don't train")
    parser.add_argument('--num-workers', '-n', type=int, default=4, help="number of data workers for both train/test")
    parser.add_argument('--max-steps', type=int, default=-1, help="max number of optimization steps to run for, or -1 for infinite.")
    parser.add_argument('--device', type=str, default='cpu', help="device to use for compute, examples: cpu|cuda|cuda:2|mps")
    parser.add_argument('--seed', type=int, default=3407, help="seed")
    # sampling
    parser.add_argument('--top-k', type=int, default=-1, help="top-k for sampling, -1 means no top-k")
    # model
    parser.add_argument('--type', type=str, default='transformer', help="model class type to use, bigram|mlp|rnn|gru|bow|transformer")
    parser.add_argument('--n-layer', type=int, default=4, help="number of layers")
    parser.add_argument('--n-head', type=int, default=4, help="number of heads (in a transformer)")
    parser.add_argument('--n-embd', type=int, default=64, help="number of feature channels in the model")
    parser.add_argument('--n-embd2', type=int, default=64, help="number of feature channels elsewhere in the model")
    # optimization
    parser.add_argument('--batch-size', '-b', type=int, default=32, help="batch size during optimization")
    parser.add_argument('--learning-rate', '-l', type=float, default=5e-4, help="learning rate")
    parser.add_argument('--weight-decay', '-w', type=float, default=0.01, help="weight decay")
    args = parser.parse_args()
    print(vars(args))

    # system inits
    torch.manual_seed(args.seed)
    torch.cuda.manual_seed_all(args.seed)
    os.makedirs(args.work_dir, exist_ok=True)
    writer = SummaryWriter(log_dir=args.work_dir)

    # init datasets
    train_dataset, test_dataset = create_datasets(args.input_file)
    vocab_size = train_dataset.get_vocab_size()
    block_size = train_dataset.get_output_length()
    print(f"dataset determined that: {vocab_size=}, {block_size=}")

    # init model
    config = ModelConfig(vocab_size=vocab_size, block_size=block_size,
                       n_layer=args.n_layer, n_head=args.n_head,
                       n_embd=args.n_embd, n_embd2=args.n_embd2)
    if args.type == 'transformer':
        model = Transformer(config)
    elif args.type == 'bigram':
        model = Bigram(config)
    elif args.type == 'mlp':
        model = MLP(config)
    elif args.type == 'rnn':
        model = RNN(config, cell_type='rnn')
    elif args.type == 'gru':
        model = RNN(config, cell_type='gru')
    elif args.type == 'bow':
        model = BoW(config)
    else:
        raise ValueError(f'model type {args.type} is not recognized')
    model.to(args.device)
    print(f"model #params: {sum(p.numel() for p in model.parameters())}")
    if args.resume or args.sample_only: # note: if we sample-only then we also assume we are resuming
        print("resuming from existing model in the workdir")
        model.load_state_dict(torch.load(os.path.join(args.work_dir, 'model.pt')))
    if args.sample_only:
        print_samples(num=50)
        sys.exit()

    # init optimizer
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=args.weight_decay, betas=(0.9, 0.99), eps=1e-8)

    # init dataloader
    batch_loader = InfiniteDataLoader(train_dataset, batch_size=args.batch_size, pin_memory=True, num_workers=args.num_workers)

    # training loop
    best_loss = None
    step = 0
    while True:

        t0 = time.time()

        # get the next batch, ship to device, and unpack it to input and target
        batch = batch_loader.next()
        batch = [t.to(args.device) for t in batch]
        X, Y = batch

        # feed into the model
        logits, loss = model(X, Y)

        # calculate the gradient, update the weights
        model.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        # wait for all CUDA work on the GPU to finish then calculate iteration time taken
        if args.device.startswith('cuda'):
            torch.cuda.synchronize()
        t1 = time.time()

        # logging
        if step % 10 == 0:
            print(f"step {step} | loss {loss.item():.4f} | step time {(t1-t0)*1000:.2f}ms")

        # evaluate the model
        if step > 0 and step % 25 == 0:  # port: 500, for a short run
            train_loss = evaluate(model, train_dataset, batch_size=100, max_batches=10)
            test_loss  = evaluate(model, test_dataset,  batch_size=100, max_batches=10)
            writer.add_scalar("Loss/train", train_loss, step)
            writer.add_scalar("Loss/test", test_loss, step)
            writer.flush()
            print(f"step {step} train loss: {train_loss} test loss: {test_loss}")
            # save the model to disk if it has improved
            if best_loss is None or test_loss < best_loss:
                out_path = os.path.join(args.work_dir, "model.pt")
                print(f"test loss {test_loss} is the best so far, saving model to {out_path}")
                torch.save(model.state_dict(), out_path)
                best_loss = test_loss

        # sample from the model
        if step > 0 and step % 50 == 0:  # port: 200, as above
            print_samples(num=10)

        step += 1
        # termination conditions
        if args.max_steps >= 0 and step >= args.max_steps:
            break

'''


def run(script: str, data: dict, folder, monkeypatch, commands) -> list[str]:
    """``script`` run as ``__main__`` in ``folder`` beside the ``data`` files, once per command
    line of ``commands`` (``sys.argv[1:]``): what each run printed (a run that calls
    ``sys.exit()`` ends there, as on a command line)."""
    folder.mkdir()
    for name, text in data.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    printed = []
    for argv in commands:
        monkeypatch.setattr(sys, "argv", ["script.py", *argv])
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            exec(compile(script, str(folder / "script.py"), "exec"), {"__name__": "__main__"})
        printed.append(out.getvalue())
    return printed


def both(script: str, data: dict, tmp_path, monkeypatch, commands=((),)):
    """``run`` under torch (one thread each: a shared machine), then with ``torch`` replaced by
    ``tricycle`` in the script's text."""
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1, user_api="blas"):
            theirs = run(script, data, tmp_path / "torch", monkeypatch, commands)
    finally:
        torch.set_num_threads(threads)
    with threadpool_limits(1, user_api="blas"):
        ours = run(script.replace("torch", "tricycle"), data, tmp_path / "tricycle", monkeypatch, commands)  # fmt: skip
    return theirs, ours


def shakespeare(characters: int = 20_000) -> dict:
    """The lecture's ``input.txt``: the start of tinyshakespeare (the test skips without it)."""
    path = DATA_DIR / "tinyshakespeare.txt"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return {"input.txt": path.read_text(encoding="utf-8")[:characters]}


def evaluations(printed: str) -> list[str]:
    """The lines a lecture script printed before its sample, numbers aside."""
    return [line for line in lines(printed) if line.startswith(("step #:", "# M parameters"))]


def lecture_learned(printed: str) -> str:
    """The lecture script's evaluations fall; returns the text it sampled at the end."""
    steps = re.findall(r"step \d+: train loss ([\d.]+), val loss ([\d.]+)", printed)
    (train0, val0), (train, val) = [tuple(map(float, pair)) for pair in (steps[0], steps[-1])]
    assert train < 0.8 * train0 and val < 0.8 * val0, steps
    return printed.split(f"val loss {steps[-1][1]}\n", 1)[1]


def test_ng_video_lecture_bigram(tmp_path, monkeypatch):
    data = shakespeare()
    (theirs,), (ours,) = both(BIGRAM, data, tmp_path, monkeypatch)
    assert evaluations(ours) == evaluations(theirs)
    for printed in theirs, ours:
        sample = lecture_learned(printed)
        assert len(sample) == 1 + 100 + 1  # the context's "\n", 100 characters, print's "\n"
        assert set(sample) <= set(data["input.txt"])


def test_ng_video_lecture_gpt(tmp_path, monkeypatch):
    data = shakespeare()
    (theirs,), (ours,) = both(GPT, data, tmp_path, monkeypatch)
    assert evaluations(ours) == evaluations(theirs)
    assert numbers(r"([\d.]+) M parameters", ours) == numbers(r"([\d.]+) M parameters", theirs)
    for printed in theirs, ours:
        sample = lecture_learned(printed)
        assert len(sample) == 1 + 100 + 1 and set(sample) <= set(data["input.txt"])


def names(count: int = 300, seed: int = 0) -> str:
    """makemore's ``names.txt``: made-up names, one a line, from a few syllables (so that
    even the bigram learns)."""
    rng = np.random.default_rng(seed)
    onsets = ["b", "d", "j", "k", "l", "m", "n", "r", "s", "t", "v", "sh", "ch", "br"]
    vowels = ["a", "e", "i", "o", "a", "e", "ia"]
    endings = ["", "", "n", "h", "l", "s", "y", "lyn"]
    made: set[str] = set()
    while len(made) < count:
        syllables = rng.integers(1, 3, endpoint=True)
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables))
        word += rng.choice(endings)
        if len(word) <= 8:
            made.add(word)
    return "\n".join(sorted(made)) + "\n"


SMALL = ["--num-workers", "0", "--n-layer", "2", "--n-embd", "16", "--n-embd2", "16",
         "--learning-rate", "1e-2"]  # fmt: skip
EVALUATION = r"step \d+ train loss: ([\d.]+) test loss: ([\d.]+)"


def makemore_learned(printed: str) -> list[float]:
    """The test losses of makemore's evaluations; they fall, the last well below the first
    step's training loss (a uniform guess's, for the Bigram's zero table)."""
    tests = numbers(EVALUATION.replace("(", "(?:", 1), printed)
    first = numbers(r"step 0 \| loss ([\d.]+)", printed)[0]
    assert len(tests) >= 2 and tests[-1] < min(0.9 * first, tests[0]), (first, tests)
    return tests


def samples(printed: str) -> list[str]:
    """The words print_samples printed (in train, in test and new), each of letters only."""
    blocks = printed.split("-" * 80 + "\n")[1::2]
    words = [w for block in blocks for w in block.splitlines() if "samples that are" not in w]
    assert all(re.fullmatch(r"[a-z]*", w) for w in words), words
    return words


@pytest.mark.parametrize("model", ["bigram", "mlp", "rnn", "gru", "bow"])
def test_makemore(model, tmp_path, monkeypatch):
    command = ["--type", model, "--max-steps", "51", *SMALL]
    (theirs,), (ours,) = both(MAKEMORE, {"names.txt": names()}, tmp_path, monkeypatch, [command])
    assert _same_but_words(theirs, ours)
    params = r"model #params: (\d+)"
    assert numbers(params, ours) == numbers(params, theirs)  # the same model, in either library
    for printed in theirs, ours:
        makemore_learned(printed)
        assert len(samples(printed)) == 10  # print_samples(num=10) at step 50
    assert (tmp_path / "tricycle" / "out" / "model.pt").is_file()


def _same_but_words(theirs: str, ours: str) -> bool:
    """The same printed lines but the sampled words (their numbers aside)."""
    kept = [line for line in lines(theirs) if not re.fullmatch(r"[a-z]*", line)]
    return kept == [line for line in lines(ours) if not re.fullmatch(r"[a-z]*", line)]


def test_makemore_transformer_sample_only_and_resume(tmp_path, monkeypatch):
    train = ["--type", "transformer", "--max-steps", "51", *SMALL]
    commands = [train, [*train, "--sample-only", "--top-k", "3"], [*train[:2], "--resume", "--max-steps", "26", *SMALL]]  # fmt: skip
    theirs, ours = both(MAKEMORE, {"names.txt": names()}, tmp_path, monkeypatch, commands)
    for printed in theirs, ours:
        first, sampled, resumed = printed
        tests = makemore_learned(first)
        assert "resuming from existing model in the workdir" in sampled
        assert len(samples(sampled)) == 50  # print_samples(num=50), then sys.exit()
        assert "step 0 |" not in sampled  # no training: sample-only exits first
        # the resumed run starts from the saved weights: its first loss is the trained one's
        start = numbers(r"step 0 \| loss ([\d.]+)", resumed)[0]
        assert start < 0.9 * numbers(r"step 0 \| loss ([\d.]+)", first)[0]
        assert numbers(EVALUATION.replace("(", "(?:", 1), resumed)[0] < tests[0]
    for a, b in zip(theirs, ours, strict=True):
        assert _same_but_words(a, b)


def definitions(lib) -> dict:
    """makemore's classes and functions, its text run as an imported module under ``lib``."""
    space = {"__name__": "makemore"}
    exec(compile(MAKEMORE.replace("torch", lib), f"<makemore {lib}>", "exec"), space)
    return space


def torch_layout_grads(model) -> dict:
    """Every parameter's gradient under its torch name, in torch's layout (through to_torch)."""
    import tricycle.nn as nn  # noqa: PLC0415

    arrays = [(p, p.array) for p in model.parameters()]
    for p, _ in arrays:
        p.array = p.grad.array
    try:
        return nn.to_torch(model)
    finally:
        for p, array in arrays:
            p.array = array


@pytest.mark.parametrize("kind", ["transformer", "bigram", "mlp", "rnn", "gru", "bow"])
def test_makemore_models_give_torchs_numbers_with_torchs_weights(kind):
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    built = []
    for lib in ("torch", "tricycle"):
        space = definitions(lib)
        config = space["ModelConfig"](vocab_size=7, block_size=5, n_layer=2, n_head=2, n_embd=8, n_embd2=6)  # fmt: skip
        model = {"transformer": space["Transformer"], "bigram": space["Bigram"], "mlp": space["MLP"],
                 "bow": space["BoW"]}.get(kind, lambda c: space["RNN"](c, cell_type=kind))(config)  # fmt: skip
        built.append((model, space))
    (theirs, their_space), (ours, our_space) = built
    for p in theirs.parameters():  # Bigram's table starts at zeros: random values, as trained
        torch.nn.init.normal_(p, std=0.5)
    state = theirs.state_dict()
    assert nn.from_torch(ours, state) == ([], [])
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 7, (3, 5))
    targets = rng.integers(0, 7, (3, 5))
    targets[0, 3:] = -1  # makemore's padding: ignored
    logits, loss = ours(tricycle.tensor(ids), tricycle.tensor(targets))
    tlogits, tloss = theirs(torch.from_numpy(ids), torch.from_numpy(targets))
    np.testing.assert_allclose(logits.numpy(), tlogits.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    grads = torch_layout_grads(ours)  # buffers too (the masks): the parameters' are compared
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    # greedy completion (top_k=3, then the likeliest): the same ids; sampled: valid ones
    start = ids[:, :2]
    greedy = our_space["generate"](ours, tricycle.tensor(start), 6, top_k=3)
    expected = their_space["generate"](theirs, torch.from_numpy(start), 6, top_k=3)
    np.testing.assert_array_equal(greedy.numpy(), expected.numpy())
    tricycle.manual_seed(0)
    sampled = our_space["generate"](ours, tricycle.tensor(start), 6, top_k=3, do_sample=True)
    assert sampled.shape == (3, 8) and sampled.dtype == np.int64
    assert 0 <= sampled.numpy().min() and sampled.numpy().max() < 7


# ---------------------------------------------------------------------- the fixes they needed


def test_module_zero_grad_takes_set_to_none_as_torch():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    nn.from_torch(ours, theirs.state_dict())
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    for set_to_none in (False, True):
        for model, lib in ((theirs, torch), (ours, tricycle)):
            (model(lib.tensor(x)) ** 2).sum().backward()
            model.zero_grad(set_to_none=set_to_none)
        if set_to_none:
            assert all(p.grad is None for p in ours.parameters())
            continue
        for model, lib in ((theirs, torch), (ours, tricycle)):  # accumulates onto the zeros
            model(lib.tensor(x)).sum().backward()
        for name, p in theirs.named_parameters():
            assert np.abs(p.grad.numpy()).max() > 0, name
        grads = torch_layout_grads(ours)
        for name, p in theirs.named_parameters():
            np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-5, atol=1e-6)
        ours.zero_grad(set_to_none=False)
        for p in ours.parameters():
            np.testing.assert_array_equal(p.grad.numpy(), np.zeros(p.shape, np.float32))
    ours.zero_grad()  # torch's default: set to None
    assert all(p.grad is None for p in ours.parameters())
    with pytest.raises(TypeError, match="set_to_none"):
        ours.zero_grad(set_to_none="yes")


def test_a_scalar_tensor_formats_with_a_spec_as_torch():
    """makemore part 1 prints ``f'{nll/n}'``. With a spec a one-value tensor formats as its
    number, as torch's; without one it keeps the seed README's ``Tensor(0.08622341,
    name=cross_entropy)`` (its ``print(f"Final loss: {loss}")``), a documented difference."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for value in (np.float32(2.3273799), np.float64(-37.23808), np.int64(1390)):
        ours, theirs = tricycle.tensor(value), torch.tensor(value)
        for spec in (".4f", ">10", "e"):
            if spec == "e" and value.dtype.kind == "i":
                continue
            assert format(ours, spec) == format(theirs, spec), (value, spec)
    loss = tricycle.tensor(np.float32(3.0), requires_grad=True) * 2  # an op's output
    assert f"{loss}" == str(loss) and f"{loss:.1f}" == "6.0"


def test_all_and_any_as_torch():
    """The backprop-ninja lecture's ``cmp`` asks ``torch.all(dt == t.grad).item()``."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    from tricycle.torch_math import all_nonzero, any_nonzero  # noqa: PLC0415

    assert (tricycle.all, tricycle.any) == (all_nonzero, any_nonzero)  # torch's names
    x = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0]], np.float32)
    ours, theirs = tricycle.tensor(x), torch.tensor(x)
    for mine, torchs in ((all_nonzero, torch.all), (any_nonzero, torch.any)):
        for kwargs in ({}, {"dim": 0}, {"dim": 1, "keepdim": True}, {"dim": -1}):
            got, expected = mine(ours, **kwargs), torchs(theirs, **kwargs)
            assert got.dtype == np.bool_ and got.shape == tuple(expected.shape), kwargs
            np.testing.assert_array_equal(got.numpy(), expected.numpy())
        assert mine(ours == ours).item() is True and torchs(theirs == theirs).item() is True
    with pytest.raises(TypeError, match="out="):
        all_nonzero(ours, out=ours)


def test_histogram_as_torch():
    """makemore part 3 plots ``hy, hx = torch.histogram(h, density=True)``."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    from tricycle.torch_math import histogram  # noqa: PLC0415

    assert tricycle.histogram is histogram
    x = np.tanh(np.random.default_rng(0).normal(size=(32, 20))).astype(np.float32)
    w = np.random.default_rng(1).random((32, 20)).astype(np.float32)
    ours, theirs = tricycle.tensor(x), torch.tensor(x)
    edges = np.array([-1.0, -0.5, 0.0, 0.25, 1.0], np.float32)
    for kwargs in (
        {"density": True},
        {"bins": 7, "range": (-0.5, 0.5)},
        {"bins": 5, "weight": w},
        {"bins": edges, "density": True},
    ):
        mine = {
            k: tricycle.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
        }
        torchs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        hy, hx = histogram(ours, **mine)
        expected = torch.histogram(theirs, **torchs)
        assert hy.dtype == hx.dtype == np.float32 and not hy.requires_grad
        np.testing.assert_allclose(
            hy.numpy(), expected.hist.numpy(), rtol=1e-5, err_msg=str(kwargs)
        )
        np.testing.assert_allclose(hx.numpy(), expected.bin_edges.numpy(), rtol=1e-6, atol=1e-6)
        assert histogram(ours, **mine).hist is not None  # torch's field names
    with pytest.raises(TypeError, match=r"histogram: .*input.*a float tensor"):
        histogram(tricycle.tensor(np.arange(4)))
    with pytest.raises(ValueError, match=r"histogram: .*weight.*\(32, 20\)"):
        histogram(ours, weight=tricycle.tensor(w[:3]))
