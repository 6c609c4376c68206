"""Karpathy's minGPT (github.com/karpathy/minGPT), run on tricycle with ``torch`` replaced by
``tricycle`` in its text (docs/pytorch.md's promise; the method of
tests/test_karpathy_lectures.py and tests/test_build_nanogpt.py): the other GPT that learners
read.

The package's files are written in a temporary directory as the repository lays them out
(``mingpt/`` importable from its root, as ``pip install -e .`` makes it) and its two projects
run from their own folders with ``sys.argv`` as a user types it (``python adder.py
--trainer.max_iters=151 ...``), so that ``CfgNode.merge_from_args`` reads the overrides:

- ``mingpt/model.py``: ``NewGELU``, ``CausalSelfAttention`` with its registered ``bias`` mask,
  ``Block`` with its ``ModuleDict`` and the lambda ``mlpf``, ``GPT`` with
  ``get_default_config`` (a ``CfgNode``), the ``model_type`` presets, ``apply(_init_weights)``
  and the scaled init of the ``c_proj`` weights found by ``named_parameters``,
  ``configure_optimizers`` (decay and no-decay sets by module type through ``named_modules``
  and ``named_parameters``, and its asserts), ``generate`` with ``top_k`` and ``do_sample``,
  and ``from_pretrained`` from a small random GPT-2 saved in ``./gpt2`` (Hugging Face's, in
  torch: no download);
- ``mingpt/trainer.py``: the ``DataLoader`` over ``RandomSampler(replacement=True,
  num_samples=int(1e10))`` with its four workers, ``model.zero_grad(set_to_none=True)``,
  ``clip_grad_norm_``, the ``on_batch_end`` callbacks;
- ``mingpt/utils.py``: ``set_seed``, ``setup_logging`` (``args.txt``, ``config.json``),
  ``CfgNode`` with ``merge_from_dict``/``merge_from_args``;
- ``mingpt/bpe.py``: the GPT-2 byte-pair encoder, from an ``encoder.json`` and ``vocab.bpe``
  written here in its cache (``~/.cache/mingpt``, under a temporary HOME), of GPT-2's sizes;
- ``projects/adder/adder.py`` (its ``AdditionDataset``, ``eval_split`` through greedy
  ``generate`` over a few batches, the best model's ``torch.save(model.state_dict())``) and
  ``projects/chargpt/chargpt.py`` (its ``CharDataset`` on a slice of tiny Shakespeare as
  ``input.txt``, skipped where absent; a sample with ``top_k=10``; the saved model);
- ``tests/test_huggingface_import.py``: minGPT's own test, the logits and greedy samples of
  ``from_pretrained('gpt2')`` against Hugging Face's, the decoded strings against
  ``GPT2Tokenizer``'s.

Each runs under torch (skipped without it), then under tricycle; both learn and print the
same lines, numbers aside. A line that differs from Karpathy's ends in ``# port:`` and says
why: sizes and intervals shrunk to run in seconds on a CPU, the small local GPT-2, the masks
that transformers 5 no longer saves (so ``from_pretrained``'s count holds in torch too). Under
tricycle, ``TRICYCLE_LINES`` also swap the lines that read torch's names of a layer's tensors
(the documented exception: a Linear's and an Embedding's ``weights``, a norm's ``gamma`` and
``beta``), each marked ``# port:``, and those of minGPT's test that take Hugging Face's torch
outputs. With torch's weights loaded through ``nn.from_torch``, the ported GPT gives torch's
logits, loss (``ignore_index=-1``), gradients, decay groups, clipped AdamW step and greedy
samples.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import itertools
import json
import re
import sys
import unittest

import numpy as np
import pytest

from tests import helpers
from tests.helpers import DATA_DIR
from tests.test_torch_examples_b import lines, numbers

pytestmark = [
    pytest.mark.filterwarnings("ignore::UserWarning"),  # torch's loader: pin_memory
    pytest.mark.filterwarnings("ignore:invalid escape sequence"),  # bpe.py's docstring: "\\p{L}"
]

# mingpt/model.py
MODEL = r'''
"""
Full definition of a GPT Language Model, all of it in this single file.

References:
1) the official GPT-2 TensorFlow implementation released by OpenAI:
https://github.com/openai/gpt-2/blob/master/src/model.py
2) huggingface/transformers PyTorch implementation:
https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt2/modeling_gpt2.py
"""

import math

import torch
import torch.nn as nn
from torch.nn import functional as F

from mingpt.utils import CfgNode as CN

# -----------------------------------------------------------------------------

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
        # regularization
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)
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
        att = self.attn_dropout(att)
        y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.c_proj(y))
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
            dropout = nn.Dropout(config.resid_pdrop),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x)))) # MLP forward

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x

class GPT(nn.Module):
    """ GPT Language Model """

    @staticmethod
    def get_default_config():
        C = CN()
        # either model_type or (n_layer, n_head, n_embd) must be given in the config
        C.model_type = 'gpt'
        C.n_layer = None
        C.n_head = None
        C.n_embd =  None
        # these options must be filled in externally
        C.vocab_size = None
        C.block_size = None
        # dropout hyperparameters
        C.embd_pdrop = 0.1
        C.resid_pdrop = 0.1
        C.attn_pdrop = 0.1
        return C

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.block_size = config.block_size

        type_given = config.model_type is not None
        params_given = all([config.n_layer is not None, config.n_head is not None, config.n_embd is not None])
        assert type_given ^ params_given # exactly one of these (XOR)
        if type_given:
            # translate from model_type to detailed configuration
            config.merge_from_dict({
                # names follow the huggingface naming conventions
                # GPT-1
                'openai-gpt':   dict(n_layer=12, n_head=12, n_embd=768),  # 117M params
                # GPT-2 configs
                'gpt2':         dict(n_layer=2, n_head=2, n_embd=32),  # 124M params  # port: the test's small random GPT-2, saved in ./gpt2 (no download)
                'gpt2-medium':  dict(n_layer=24, n_head=16, n_embd=1024), # 350M params
                'gpt2-large':   dict(n_layer=36, n_head=20, n_embd=1280), # 774M params
                'gpt2-xl':      dict(n_layer=48, n_head=25, n_embd=1600), # 1558M params
                # Gophers
                'gopher-44m':   dict(n_layer=8, n_head=16, n_embd=512),
                # (there are a number more...)
                # I made these tiny models up
                'gpt-mini':     dict(n_layer=6, n_head=6, n_embd=192),
                'gpt-micro':    dict(n_layer=4, n_head=4, n_embd=128),
                'gpt-nano':     dict(n_layer=3, n_head=3, n_embd=48),
            }[config.model_type])

        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.vocab_size, config.n_embd),
            wpe = nn.Embedding(config.block_size, config.n_embd),
            drop = nn.Dropout(config.embd_pdrop),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f = nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # init all weights, and apply a special scaled init to the residual projections, per GPT-2 paper
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

        # report number of parameters (note we don't count the decoder parameters in lm_head)
        n_params = sum(p.numel() for p in self.transformer.parameters())
        print("number of parameters: %.2fM" % (n_params/1e6,))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            torch.nn.init.zeros_(module.bias)
            torch.nn.init.ones_(module.weight)

    @classmethod
    def from_pretrained(cls, model_type):
        """
        Initialize a pretrained GPT model by copying over the weights
        from a huggingface/transformers checkpoint.
        """
        assert model_type in {'gpt2', 'gpt2-medium', 'gpt2-large', 'gpt2-xl'}
        from transformers import GPT2LMHeadModel

        # create a from-scratch initialized minGPT model
        config = cls.get_default_config()
        config.model_type = model_type
        config.vocab_size = 50257 # openai's model vocabulary
        config.block_size = 1024  # openai's model block_size
        model = GPT(config)
        sd = model.state_dict()
        sd = {k: v for k, v in sd.items() if not k.endswith('.attn.bias')}  # port: the causal masks (buffers): transformers 5 keeps GPT-2's out of its state_dict, so the count below would differ

        # init a huggingface/transformers model
        model_hf = GPT2LMHeadModel.from_pretrained(model_type)
        sd_hf = model_hf.state_dict()

        # copy while ensuring all of the parameters are aligned and match in names and shapes
        keys = [k for k in sd_hf if not k.endswith('attn.masked_bias')] # ignore these
        transposed = ['attn.c_attn.weight', 'attn.c_proj.weight', 'mlp.c_fc.weight', 'mlp.c_proj.weight']
        # basically the openai checkpoints use a "Conv1D" module, but we only want to use a vanilla nn.Linear.
        # this means that we have to transpose these weights when we import them
        assert len(keys) == len(sd)
        for k in keys:
            if any(k.endswith(w) for w in transposed):
                # special treatment for the Conv1D weights we need to transpose
                assert sd_hf[k].shape[::-1] == sd[k].shape
                with torch.no_grad():
                    sd[k].copy_(sd_hf[k].t())
            else:
                # vanilla copy over the other parameters
                assert sd_hf[k].shape == sd[k].shape
                with torch.no_grad():
                    sd[k].copy_(sd_hf[k])

        return model

    def configure_optimizers(self, train_config):
        """
        This long function is unfortunately doing something very simple and is being very defensive:
        We are separating out all parameters of the model into two buckets: those that will experience
        weight decay for regularization and those that won't (biases, and layernorm/embedding weights).
        We are then returning the PyTorch optimizer object.
        """

        # separate out all parameters to those that will and won't experience regularizing weight decay
        decay = set()
        no_decay = set()
        whitelist_weight_modules = (torch.nn.Linear, )
        blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters():
                fpn = '%s.%s' % (mn, pn) if mn else pn # full param name
                # random note: because named_modules and named_parameters are recursive
                # we will see the same tensors p many many times. but doing it this way
                # allows us to know which parent module any tensor p belongs to...
                if pn.endswith('bias'):
                    # all biases will not be decayed
                    no_decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                    # weights of whitelist modules will be weight decayed
                    decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                    # weights of blacklist modules will NOT be weight decayed
                    no_decay.add(fpn)

        # validate that we considered every parameter
        param_dict = {pn: p for pn, p in self.named_parameters()}
        inter_params = decay & no_decay
        union_params = decay | no_decay
        assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
        assert len(param_dict.keys() - union_params) == 0, "parameters %s were not separated into either decay/no_decay set!" \
                                                    % (str(param_dict.keys() - union_params), )

        # create the pytorch optimizer object
        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": train_config.weight_decay},
            {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(optim_groups, lr=train_config.learning_rate, betas=train_config.betas)
        return optimizer

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0) # shape (1, t)

        # forward the GPT model itself
        tok_emb = self.transformer.wte(idx) # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos) # position embeddings of shape (1, t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)

        # if we are given some desired targets also calculate the loss
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)

        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        """
        Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
        the sequence max_new_tokens times, feeding the predictions back into the model each time.
        Most likely you'll want to make sure to be in model.eval() mode of operation for this.
        """
        for _ in range(max_new_tokens):
            # if the sequence context is growing too long we must crop it at block_size
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            # forward the model to get the logits for the index in the sequence
            logits, _ = self(idx_cond)
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
'''

# mingpt/trainer.py
TRAINER = r'''
"""
Simple training loop; Boilerplate that could apply to any arbitrary neural network,
so nothing in this file really has anything to do with GPT specifically.
"""

import time
from collections import defaultdict

import torch
from torch.utils.data.dataloader import DataLoader
from mingpt.utils import CfgNode as CN

class Trainer:

    @staticmethod
    def get_default_config():
        C = CN()
        # device to train on
        C.device = 'auto'
        # dataloder parameters
        C.num_workers = 4
        # optimizer parameters
        C.max_iters = None
        C.batch_size = 64
        C.learning_rate = 3e-4
        C.betas = (0.9, 0.95)
        C.weight_decay = 0.1 # only applied on matmul weights
        C.grad_norm_clip = 1.0
        return C

    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.optimizer = None
        self.train_dataset = train_dataset
        self.callbacks = defaultdict(list)

        # determine the device we'll train on
        if config.device == 'auto':
            self.device = 'cuda' if torch.cuda.is_available() else 'cpu'
        else:
            self.device = config.device
        self.model = self.model.to(self.device)
        print("running on device", self.device)

        # variables that will be assigned to trainer class later for logging and etc
        self.iter_num = 0
        self.iter_time = 0.0
        self.iter_dt = 0.0

    def add_callback(self, onevent: str, callback):
        self.callbacks[onevent].append(callback)

    def set_callback(self, onevent: str, callback):
        self.callbacks[onevent] = [callback]

    def trigger_callbacks(self, onevent: str):
        for callback in self.callbacks.get(onevent, []):
            callback(self)

    def run(self):
        model, config = self.model, self.config

        # setup the optimizer
        self.optimizer = model.configure_optimizers(config)

        # setup the dataloader
        train_loader = DataLoader(
            self.train_dataset,
            sampler=torch.utils.data.RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),
            shuffle=False,
            pin_memory=True,
            batch_size=config.batch_size,
            num_workers=config.num_workers,
        )

        model.train()
        self.iter_num = 0
        self.iter_time = time.time()
        data_iter = iter(train_loader)
        while True:

            # fetch the next batch (x, y) and re-init iterator if needed
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            batch = [t.to(self.device) for t in batch]
            x, y = batch

            # forward the model
            logits, self.loss = model(x, y)

            # backprop and update the parameters
            model.zero_grad(set_to_none=True)
            self.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
            self.optimizer.step()

            self.trigger_callbacks('on_batch_end')
            self.iter_num += 1
            tnow = time.time()
            self.iter_dt = tnow - self.iter_time
            self.iter_time = tnow

            # termination conditions
            if config.max_iters is not None and self.iter_num >= config.max_iters:
                break
'''

# mingpt/utils.py
UTILS = r'''

import os
import sys
import json
import random
from ast import literal_eval

import numpy as np
import torch

# -----------------------------------------------------------------------------

def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)

def setup_logging(config):
    """ monotonous bookkeeping """
    work_dir = config.system.work_dir
    # create the work directory if it doesn't already exist
    os.makedirs(work_dir, exist_ok=True)
    # log the args (if any)
    with open(os.path.join(work_dir, 'args.txt'), 'w') as f:
        f.write(' '.join(sys.argv))
    # log the config itself
    with open(os.path.join(work_dir, 'config.json'), 'w') as f:
        f.write(json.dumps(config.to_dict(), indent=4))

class CfgNode:
    """ a lightweight configuration class inspired by yacs """
    # TODO: convert to subclass from a dict like in yacs?
    # TODO: implement freezing to prevent shooting of own foot
    # TODO: additional existence/override checks when reading/writing params?

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def __str__(self):
        return self._str_helper(0)

    def _str_helper(self, indent):
        """ need to have a helper to support nested indentation for pretty printing """
        parts = []
        for k, v in self.__dict__.items():
            if isinstance(v, CfgNode):
                parts.append("%s:\n" % k)
                parts.append(v._str_helper(indent + 1))
            else:
                parts.append("%s: %s\n" % (k, v))
        parts = [' ' * (indent * 4) + p for p in parts]
        return "".join(parts)

    def to_dict(self):
        """ return a dict representation of the config """
        return { k: v.to_dict() if isinstance(v, CfgNode) else v for k, v in self.__dict__.items() }

    def merge_from_dict(self, d):
        self.__dict__.update(d)

    def merge_from_args(self, args):
        """
        update the configuration from a list of strings that is expected
        to come from the command line, i.e. sys.argv[1:].

        The arguments are expected to be in the form of `--arg=value`, and
        the arg can use . to denote nested sub-attributes. Example:

        --model.n_layer=10 --trainer.batch_size=32
        """
        for arg in args:

            keyval = arg.split('=')
            assert len(keyval) == 2, "expecting each override arg to be of form --arg=value, got %s" % arg
            key, val = keyval # unpack

            # first translate val into a python object
            try:
                val = literal_eval(val)
                """
                need some explanation here.
                - if val is simply a string, literal_eval will throw a ValueError
                - if val represents a thing (like an 3, 3.14, [1,2,3], False, None, etc.) it will get created
                """
            except ValueError:
                pass

            # find the appropriate object to insert the attribute into
            assert key[:2] == '--'
            key = key[2:] # strip the '--'
            keys = key.split('.')
            obj = self
            for k in keys[:-1]:
                obj = getattr(obj, k)
            leaf_key = keys[-1]

            # ensure that this attribute exists
            assert hasattr(obj, leaf_key), f"{key} is not an attribute that exists in the config"

            # overwrite the attribute
            print("command line overwriting config attribute %s with %s" % (key, val))
            setattr(obj, leaf_key, val)
'''

# mingpt/bpe.py
BPE = r'''
"""
bpe is short for Byte Pair Encoder. It translates arbitrary utf-8 strings into
sequences of integers, where each integer represents small chunks of commonly
occuring characters. This implementation is based on openai's gpt2 encoder.py:
https://github.com/openai/gpt-2/blob/master/src/encoder.py
but was mildly modified because the original implementation is a bit confusing.
I also tried to add as many comments as possible, my own understanding of what's
going on.
"""

import os
import json
import regex as re
import requests

import torch

# -----------------------------------------------------------------------------

def bytes_to_unicode():
    """
    Every possible byte (really an integer 0..255) gets mapped by OpenAI to a unicode
    character that represents it visually. Some bytes have their appearance preserved
    because they don't cause any trouble. These are defined in list bs. For example:
    chr(33) returns "!", so in the returned dictionary we simply have d[33] -> "!".
    However, chr(0), for example, is '\x00', which looks ugly. So OpenAI maps these
    bytes, into new characters in a range where chr() returns a single nice character.
    So in the final dictionary we have d[0] -> 'Ā' instead, which is just chr(0 + 2**8).
    In particular, the space character is 32, which we can see by ord(' '). Instead,
    this function will shift space (32) by 256 to 288, so d[32] -> 'Ġ'.
    So this is just a simple one-to-one mapping of bytes 0..255 into unicode characters
    that "look nice", either in their original form, or a funny shifted character
    like 'Ā', or 'Ġ', etc.
    """
    # the 188 integers that render fine in their original form and need no shifting
    bs = list(range(ord("!"), ord("~")+1))+list(range(ord("¡"), ord("¬")+1))+list(range(ord("®"), ord("ÿ")+1))
    cs = bs[:] # all integers b in bs will simply map to chr(b) in the output dict
    # now get the representations of the other 68 integers that do need shifting
    # each will get mapped chr(256 + n), where n will grow from 0...67 in the loop
    n = 0
    for b in range(2**8):
        if b not in bs:
            # if this byte is "ugly" then map it to the next available "nice" character
            bs.append(b)
            cs.append(2**8+n)
            n += 1
    cs = [chr(n) for n in cs]
    d = dict(zip(bs, cs))
    return d

def get_pairs(word):
    """
    Return all bigrams as a set of tuples, of consecutive elements in the iterable word.
    """
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs

class Encoder:

    def __init__(self, encoder, bpe_merges):
        # byte encoder/decoder
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v:k for k, v in self.byte_encoder.items()}
        # bpe token encoder/decoder
        self.encoder = encoder
        self.decoder = {v:k for k,v in self.encoder.items()}
        # bpe merge list that defines the bpe "tree", of tuples (a,b) that are to merge to token ab
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        # the splitting pattern used for pre-tokenization
        # Should haved added re.IGNORECASE so BPE merges can happen for capitalized versions of contractions <-- original openai comment
        """
        ok so what is this regex looking for, exactly?
        python re reference: https://docs.python.org/3/library/re.html
        - the vertical bars | is OR, so re.findall will chunkate text as the pieces match, from left to right
        - '\'s' would split up things like Andrej's -> (Andrej, 's)
        - ' ?\p{L}': optional space followed by 1+ unicode code points in the category "letter"
        - ' ?\p{N}': optional space followed by 1+ unicode code points in the category "number"
        - ' ?[^\s\p{L}\p{N}]+': optional space, then 1+ things that are NOT a whitespace, letter or number
        - '\s+(?!\S)': 1+ whitespace characters (e.g. space or tab or etc) UNLESS they are followed by non-whitespace
                       so this will consume whitespace characters in a sequence but exclude the last whitespace in
                       that sequence. that last whitespace has the opportunity to then match the optional ' ?' in
                       earlier patterns.
        - '\s+': 1+ whitespace characters, intended probably to catch a full trailing sequence of whitespaces at end of string
        So TLDR:
        - we are special casing a few common apostrophe constructs ('s, 't, 're, ...) and making those into separate tokens
        - we then separate out strings into consecutive chunks of 1) letters, 2) numbers, 3) non-letter-numbers, 4) whitespaces
        """
        self.pat = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
        self.cache = {}

    def bpe(self, token):
        """
        this function uses self.bpe_ranks to iteratively merge all the possible bpe tokens
        up the tree. token is a string of one individual 'word' (after regex tokenization)
        and after byte encoding, e.g. 'Ġthere'.
        """
        # token is a string of one individual 'word', after byte encoding, e.g. 'Ġthere'

        # memoization, for efficiency
        if token in self.cache:
            return self.cache[token]

        word = tuple(token) # individual characters that make up the token, in a tuple
        pairs = get_pairs(word) # get all bigrams

        if not pairs:
            return token

        while True:

            # find the next lowest rank bigram that can be merged
            bigram = min(pairs, key = lambda pair: self.bpe_ranks.get(pair, float('inf')))
            if bigram not in self.bpe_ranks:
                break # no more bigrams are eligible to be merged
            first, second = bigram

            # we will now replace all occurences of (first, second) in the list of current
            # words into one merged token first_second, in the output list new_words
            new_word = []
            i = 0
            while i < len(word):

                # find the next occurence of first in the sequence of current words
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except:
                    new_word.extend(word[i:])
                    break

                # if this occurence is also followed by second, then merge them into one
                if word[i] == first and i < len(word)-1 and word[i+1] == second:
                    new_word.append(first+second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1

            # all occurences of (first, second) have been merged to first_second
            new_word = tuple(new_word)
            word = new_word
            if len(word) == 1:
                break
            else:
                pairs = get_pairs(word)

        # concat all words into a string, and use ' ' as the separator. Note that
        # by now all characters have been byte encoded, guaranteeing that ' ' is
        # not used in the actual data and is a 'special' delimiter character
        word = ' '.join(word)

        # cache the result and return
        self.cache[token] = word
        return word

    def encode(self, text):
        """ string goes in, list of integers comes out """
        bpe_idx = []
        # pre-tokenize the input text into string tokens (words, roughly speaking)
        tokens = re.findall(self.pat, text)
        # process each token into BPE integers
        for token in tokens:
            # encode the token as a bytes (b'') object
            token_bytes = token.encode('utf-8')
            # translate all bytes to their unicode string representation and flatten
            token_translated = ''.join(self.byte_encoder[b] for b in token_bytes)
            # perform all the applicable bpe merges according to self.bpe_ranks
            token_merged = self.bpe(token_translated).split(' ')
            # translate all bpe tokens to integers
            token_ix = [self.encoder[bpe_token] for bpe_token in token_merged]
            # extend our running list of all output integers
            bpe_idx.extend(token_ix)
        return bpe_idx

    def encode_and_show_work(self, text):
        """ debugging function, same as encode but returns all intermediate work """
        bpe_idx = []
        parts = []
        tokens = re.findall(self.pat, text)
        for token in tokens:
            token_bytes = token.encode('utf-8')
            token_translated = ''.join(self.byte_encoder[b] for b in token_bytes)
            token_merged = self.bpe(token_translated).split(' ')
            token_ix = [self.encoder[bpe_token] for bpe_token in token_merged]
            bpe_idx.extend(token_ix)
            parts.append({
                'token': token,
                'token_bytes': token_bytes,
                'token_translated': token_translated,
                'token_merged': token_merged,
                'token_ix': token_ix,
            })
        out = {
            'bpe_idx': bpe_idx, # the actual output sequence
            'tokens': tokens, # result of pre-tokenization
            'parts': parts, # intermediates for each token part
        }
        return out

    def decode(self, bpe_idx):
        """ list of integers comes in, string comes out """
        # inverse map the integers to get the tokens
        tokens_merged = [self.decoder[token] for token in bpe_idx]
        # inverse the byte encoder, e.g. recovering 'Ġ' -> ' ', and get the bytes
        tokens_flat = ''.join(tokens_merged)
        tokens_bytes = bytearray([self.byte_decoder[c] for c in tokens_flat])
        # recover the full utf-8 string
        text = tokens_bytes.decode('utf-8', errors='replace')
        return text

def get_file(local_file, remote_file):
    """ downloads remote_file to local_file if necessary """
    if not os.path.isfile(local_file):
        print(f"downloading {remote_file} to {local_file}")
        response = requests.get(remote_file)
        open(local_file, "wb").write(response.content)

def get_encoder():
    """
    Returns an instance of the GPT BPE Encoder/Decoder
    and handles caching of "database" files.
    """
    home_dir = os.path.expanduser('~')
    cache_dir = os.path.join(home_dir, '.cache', 'mingpt')
    os.makedirs(cache_dir, exist_ok=True)

    # load encoder.json that has the raw mappings from token -> bpe index
    encoder_local_file = os.path.join(cache_dir, 'encoder.json')
    encoder_remote_file = 'https://openaipublic.blob.core.windows.net/gpt-2/models/124M/encoder.json'
    get_file(encoder_local_file, encoder_remote_file)
    with open(encoder_local_file, 'r') as f:
        encoder = json.load(f)
    assert len(encoder) == 50257 # 256 individual byte tokens, 50,000 merged tokens, and 1 special <|endoftext|> token

    # load vocab.bpe that contains the bpe merges, i.e. the bpe tree structure
    # in the form tuples (a, b), that indicate that (a, b) is to be merged to one token ab
    vocab_local_file = os.path.join(cache_dir, 'vocab.bpe')
    vocab_remote_file = 'https://openaipublic.blob.core.windows.net/gpt-2/models/124M/vocab.bpe'
    get_file(vocab_local_file, vocab_remote_file)
    with open(vocab_local_file, 'r', encoding="utf-8") as f:
        bpe_data = f.read()
    # light postprocessing: strip the version on first line and the last line is a blank
    bpe_merges = [tuple(merge_str.split()) for merge_str in bpe_data.split('\n')[1:-1]]
    assert len(bpe_merges) == 50000 # 50,000 merged tokens

    # construct the Encoder object and return
    enc = Encoder(encoder, bpe_merges)
    return enc

# -----------------------------------------------------------------------------

class BPETokenizer:
    """ PyTorch-aware class that wraps the Encoder above """

    def __init__(self):
        self.encoder = get_encoder()

    def __call__(self, text, return_tensors='pt'):
        # PyTorch only; here because we want to match huggingface/transformers interface
        assert return_tensors == 'pt'
        # single string input for now, in the future potentially a list of strings
        assert isinstance(text, str)
        # encode and create a "batch dimension" of 1
        idx = [self.encoder.encode(text)]
        # wrap into PyTorch tensor
        out = torch.tensor(idx, dtype=torch.long)
        return out

    def decode(self, idx):
        # ensure a simple 1D tensor for now
        assert idx.ndim == 1
        # decode indices to text
        text = self.encoder.decode(idx.tolist())
        return text


if __name__ == '__main__':

    # here is an encoding example
    text = "Hello!! I'm Andrej Karpathy. It's 2022. w00t :D 🤗"
    e = get_encoder()
    r = e.encode_and_show_work(text)

    print("Original text is:")
    print(text)
    print("First the text gets pre-tokenized, broken up into chunks, the outcome is:")
    print(r['tokens'])
    # ['Hello', '!!', ' I', "'m", ' Andrej', ' Karpathy', '.', ' It', "'s", ' 2022', '.', ' w', '00', 't', ' :', 'D', ' 🤗']
    print("Then we iterate over each chunk and process them in turn...")
    for part in r['parts']:
        print(part)
    # {'token': 'Hello', 'token_bytes': b'Hello', 'token_translated': 'Hello', 'token_merged': ['Hello'], 'token_ix': [15496]}
    # {'token': '!!', 'token_bytes': b'!!', 'token_translated': '!!', 'token_merged': ['!!'], 'token_ix': [3228]}
    # {'token': ' I', 'token_bytes': b' I', 'token_translated': 'ĠI', 'token_merged': ['ĠI'], 'token_ix': [314]}
    # {'token': "'m", 'token_bytes': b"'m", 'token_translated': "'m", 'token_merged': ["'m"], 'token_ix': [1101]}
    # {'token': ' Andrej', 'token_bytes': b' Andrej', 'token_translated': 'ĠAndrej', 'token_merged': ['ĠAndre', 'j'], 'token_ix': [10948, 73]}
    # {'token': ' Karpathy', 'token_bytes': b' Karpathy', 'token_translated': 'ĠKarpathy', 'token_merged': ['ĠK', 'arp', 'athy'], 'token_ix': [509, 5117, 10036]}
    # {'token': '.', 'token_bytes': b'.', 'token_translated': '.', 'token_merged': ['.'], 'token_ix': [13]}
    # {'token': ' It', 'token_bytes': b' It', 'token_translated': 'ĠIt', 'token_merged': ['ĠIt'], 'token_ix': [632]}
    # {'token': "'s", 'token_bytes': b"'s", 'token_translated': "'s", 'token_merged': ["'s"], 'token_ix': [338]}
    # {'token': ' 2022', 'token_bytes': b' 2022', 'token_translated': 'Ġ2022', 'token_merged': ['Ġ2022'], 'token_ix': [33160]}
    # {'token': '.', 'token_bytes': b'.', 'token_translated': '.', 'token_merged': ['.'], 'token_ix': [13]}
    # {'token': ' w', 'token_bytes': b' w', 'token_translated': 'Ġw', 'token_merged': ['Ġw'], 'token_ix': [266]}
    # {'token': '00', 'token_bytes': b'00', 'token_translated': '00', 'token_merged': ['00'], 'token_ix': [405]}
    # {'token': 't', 'token_bytes': b't', 'token_translated': 't', 'token_merged': ['t'], 'token_ix': [83]}
    # {'token': ' :', 'token_bytes': b' :', 'token_translated': 'Ġ:', 'token_merged': ['Ġ:'], 'token_ix': [1058]}
    # {'token': 'D', 'token_bytes': b'D', 'token_translated': 'D', 'token_merged': ['D'], 'token_ix': [35]}
    # {'token': ' 🤗', 'token_bytes': b' \xf0\x9f\xa4\x97', 'token_translated': 'ĠðŁ¤Ĺ', 'token_merged': ['ĠðŁ', '¤', 'Ĺ'], 'token_ix': [12520, 97, 245]}
    # (refer to the code inside Encoder.encode for what these intermediates are)
    print("and the final outcome is concatenating and flattening all the token_ix:")
    print(r['bpe_idx'])
    # [15496, 3228, 314, 1101, 10948, 73, 509, 5117, 10036, 13, 632, 338, 33160, 13, 266, 405, 83, 1058, 35, 12520, 97, 245]
    # this would then become the integer input sequence to the transformer
    print("ready to feed into a Transformer!")
'''

# projects/adder/adder.py
ADDER = r'''
"""
Trains a GPT to add n-digit numbers.
"""

import os
import sys
import json

import torch
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader

from mingpt.model import GPT
from mingpt.trainer import Trainer
from mingpt.utils import set_seed, setup_logging, CfgNode as CN

# -----------------------------------------------------------------------------

def get_config():

    C = CN()

    # system
    C.system = CN()
    C.system.seed = 3407
    C.system.work_dir = './out/adder'

    # data
    C.data = AdditionDataset.get_default_config()

    # model
    C.model = GPT.get_default_config()
    C.model.model_type = 'gpt-nano'

    # trainer
    C.trainer = Trainer.get_default_config()
    C.trainer.learning_rate = 5e-4 # the model we're using is so small that we can go a bit faster

    return C

# -----------------------------------------------------------------------------

class AdditionDataset(Dataset):
    """
    Creates n-digit addition problems. For example, if n=2, then an example
    addition problem would be to add 85 + 50 = 135. This problem would be
    represented as the following string for the GPT:

    "8550531"

    This is because:
    - we are discarding the + and =, which are not necessary. We just encode the digits
      of the input numbers concatenated together.
    - the result 135 is encoded backwards to make the addition easier to learn for the
      GPT model, because of how the addition algorithm works.

    As one more example, the problem 6 + 39 = 45 would be encoded as:

    "0639054"

    where you will notice that we are padding with zeros to make sure that we always
    produce strings of the exact same size: n + n + (n + 1). When n=2, this is 7.
    At test time, we will feed in an addition problem by giving the first 2n digits,
    and hoping that the GPT model completes the sequence with the next (n+1) digits
    correctly.
    """

    @staticmethod
    def get_default_config():
        C = CN()
        C.ndigit = 2
        return C

    def __init__(self, config, split):
        self.config = config
        self.split = split # train/test

        # split up all addition problems into either training data or test data
        ndigit = self.config.ndigit
        assert ndigit <= 3, "the lines below would be very memory inefficient, in future maybe refactor to support"
        num = (10**ndigit)**2 # total number of possible addition problems with ndigit numbers
        rng = torch.Generator()
        rng.manual_seed(1337)
        perm = torch.randperm(num, generator=rng)
        num_test = min(int(num*0.2), 500) # 20% of the whole dataset, or only up to 500
        self.ixes = perm[:num_test] if split == 'test' else perm[num_test:]

    def get_vocab_size(self):
        return 10 # digits 0..9

    def get_block_size(self):
        # a,b,a+b, and +1 due to potential carry overflow,
        # but then also -1 because very last digit doesn't ever plug back
        # as there is no explicit <EOS> token to predict, it is implied
        return 3*self.config.ndigit + 1 - 1

    def __len__(self):
        return self.ixes.nelement()

    def __getitem__(self, idx):
        ndigit = self.config.ndigit
        # given a problem index idx, first recover the associated a + b
        idx = self.ixes[idx].item()
        nd = 10**ndigit
        a = idx // nd
        b = idx %  nd
        # calculate the "label" of the addition problem a + b
        c = a + b
        # encode the digits of a, b, c into strings
        astr = f'%0{ndigit}d' % a
        bstr = f'%0{ndigit}d' % b
        cstr = (f'%0{ndigit+1}d' % c)[::-1] # reverse c to make addition easier
        render = astr + bstr + cstr
        dix = [int(s) for s in render] # convert each character to its token index
        # x will be input to GPT and y will be the associated expected outputs
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long) # predict the next token in the sequence
        y[:ndigit*2-1] = -1 # we will only train in the output locations. -1 will mask loss to zero
        return x, y

# -----------------------------------------------------------------------------

if __name__ == '__main__':

    # get default config and overrides from the command line, if any
    config = get_config()
    config.merge_from_args(sys.argv[1:])
    print(config)
    setup_logging(config)
    set_seed(config.system.seed)

    # construct train and test datasets
    train_dataset = AdditionDataset(config.data, split='train')
    test_dataset  = AdditionDataset(config.data, split='test')

    # construct the model
    config.model.vocab_size = train_dataset.get_vocab_size()
    config.model.block_size = train_dataset.get_block_size()
    model = GPT(config.model)

    # construct the trainer object
    trainer = Trainer(config.trainer, model, train_dataset)

    # helper function for the evaluation of a model
    def eval_split(trainer, split, max_batches=None):
        dataset = {'train':train_dataset, 'test':test_dataset}[split]
        ndigit = config.data.ndigit
        results = []
        mistakes_printed_already = 0
        factors = torch.tensor([[10**i for i in range(ndigit+1)][::-1]]).to(trainer.device)
        loader = DataLoader(dataset, batch_size=100, num_workers=0, drop_last=False)
        for b, (x, y) in enumerate(loader):
            x = x.to(trainer.device)
            # isolate the first two digits of the input sequence alone
            d1d2 = x[:, :ndigit*2]
            # let the model sample the rest of the sequence
            d1d2d3 = model.generate(d1d2, ndigit+1, do_sample=False) # using greedy argmax, not sampling
            # isolate the last digit of the sampled sequence
            d3 = d1d2d3[:, -(ndigit+1):]
            d3 = d3.flip(1) # reverse the digits to their "normal" order
            # decode the integers from individual digits
            d1i = (d1d2[:,:ndigit] * factors[:,1:]).sum(1)
            d2i = (d1d2[:,ndigit:ndigit*2] * factors[:,1:]).sum(1)
            d3i_pred = (d3 * factors).sum(1)
            d3i_gt = d1i + d2i # manually calculate the ground truth
            # evaluate the correctness of the results in this batch
            correct = (d3i_pred == d3i_gt).cpu() # Software 1.0 vs. Software 2.0 fight RIGHT on this line haha
            for i in range(x.size(0)):
                results.append(int(correct[i]))
                if not correct[i] and mistakes_printed_already < 5: # only print up to 5 mistakes to get a sense
                    mistakes_printed_already += 1
                    print("GPT claims that %d + %d = %d but gt is %d" % (d1i[i], d2i[i], d3i_pred[i], d3i_gt[i]))
            if max_batches is not None and b+1 >= max_batches:
                break
        rt = torch.tensor(results, dtype=torch.float)
        print("%s final score: %d/%d = %.2f%% correct" % (split, rt.sum(), len(results), 100*rt.mean()))
        return rt.sum()

    # iteration callback
    top_score = 0
    def batch_end_callback(trainer):
        global top_score

        if trainer.iter_num % 10 == 0:
            print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}")

        if trainer.iter_num % 100 == 0:  # port: 500, for a short run
            # evaluate both the train and test score
            train_max_batches = {1: None, 2: 2, 3: 5}[config.data.ndigit] # if ndigit=2 we can afford the whole train set, ow no  # port: 2 batches for ndigit=2 (the whole train set is 95), for seconds
            model.eval()
            with torch.no_grad():
                train_score = eval_split(trainer, 'train', max_batches=train_max_batches)
                test_score  = eval_split(trainer, 'test',  max_batches=None)
            score = train_score + test_score
            # save the model if this is the best score we've seen so far
            if score > top_score:
                top_score = score
                print(f"saving model with new top score of {score}")
                ckpt_path = os.path.join(config.system.work_dir, "model.pt")
                torch.save(model.state_dict(), ckpt_path)
            # revert model to training mode
            model.train()

    trainer.set_callback('on_batch_end', batch_end_callback)

    # run the optimization
    trainer.run()
'''

# projects/chargpt/chargpt.py
CHARGPT = r'''
"""
Trains a character-level language model.
"""

import os
import sys

import torch
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader

from mingpt.model import GPT
from mingpt.trainer import Trainer
from mingpt.utils import set_seed, setup_logging, CfgNode as CN

# -----------------------------------------------------------------------------

def get_config():

    C = CN()

    # system
    C.system = CN()
    C.system.seed = 3407
    C.system.work_dir = './out/chargpt'

    # data
    C.data = CharDataset.get_default_config()

    # model
    C.model = GPT.get_default_config()
    C.model.model_type = 'gpt-mini'

    # trainer
    C.trainer = Trainer.get_default_config()
    C.trainer.learning_rate = 5e-4 # the model we're using is so small that we can go a bit faster

    return C

# -----------------------------------------------------------------------------

class CharDataset(Dataset):
    """
    Emits batches of characters
    """

    @staticmethod
    def get_default_config():
        C = CN()
        C.block_size = 128
        return C

    def __init__(self, config, data):
        self.config = config

        chars = sorted(list(set(data)))
        data_size, vocab_size = len(data), len(chars)
        print('data has %d characters, %d unique.' % (data_size, vocab_size))

        self.stoi = { ch:i for i,ch in enumerate(chars) }
        self.itos = { i:ch for i,ch in enumerate(chars) }
        self.vocab_size = vocab_size
        self.data = data

    def get_vocab_size(self):
        return self.vocab_size

    def get_block_size(self):
        return self.config.block_size

    def __len__(self):
        return len(self.data) - self.config.block_size

    def __getitem__(self, idx):
        # grab a chunk of (block_size + 1) characters from the data
        chunk = self.data[idx:idx + self.config.block_size + 1]
        # encode every character to an integer
        dix = [self.stoi[s] for s in chunk]
        # return as tensors
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y

# -----------------------------------------------------------------------------

if __name__ == '__main__':

    # get default config and overrides from the command line, if any
    config = get_config()
    config.merge_from_args(sys.argv[1:])
    print(config)
    setup_logging(config)
    set_seed(config.system.seed)

    # construct the training dataset
    text = open('input.txt', 'r').read() # don't worry we won't run out of file handles
    train_dataset = CharDataset(config.data, text)

    # construct the model
    config.model.vocab_size = train_dataset.get_vocab_size()
    config.model.block_size = train_dataset.get_block_size()
    model = GPT(config.model)

    # construct the trainer object
    trainer = Trainer(config.trainer, model, train_dataset)

    # iteration callback
    def batch_end_callback(trainer):

        if trainer.iter_num % 10 == 0:
            print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}")

        if trainer.iter_num % 50 == 0:  # port: 500, for a short run
            # evaluate both the train and test score
            model.eval()
            with torch.no_grad():
                # sample from the model...
                context = "O God, O God!"
                x = torch.tensor([train_dataset.stoi[s] for s in context], dtype=torch.long)[None,...].to(trainer.device)
                y = model.generate(x, 100, temperature=1.0, do_sample=True, top_k=10)[0]  # port: 500 characters, for seconds
                completion = ''.join([train_dataset.itos[int(i)] for i in y])
                print(completion)
            # save the latest model
            print("saving model")
            ckpt_path = os.path.join(config.system.work_dir, "model.pt")
            torch.save(model.state_dict(), ckpt_path)
            # revert model to training mode
            model.train()

    trainer.set_callback('on_batch_end', batch_end_callback)

    # run the optimization
    trainer.run()
'''

# tests/test_huggingface_import.py
HF_IMPORT = r'''
"""
Ensure that we can load huggingface/transformer GPTs into minGPT
"""

import unittest
import torch
from transformers import GPT2Tokenizer, GPT2LMHeadModel
from mingpt.model import GPT
from mingpt.bpe import BPETokenizer
# -----------------------------------------------------------------------------

class TestHuggingFaceImport(unittest.TestCase):

    def test_gpt2(self):
        model_type = 'gpt2'
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
        prompt = "Hello!!!!!!!!!? 🤗, my dog is a little"

        # create a minGPT and a huggingface/transformers model
        model = GPT.from_pretrained(model_type)
        model_hf = GPT2LMHeadModel.from_pretrained(model_type) # init a HF model too

        # ship both to device
        model.to(device)
        model_hf.to(device)

        # set both to eval mode
        model.eval()
        model_hf.eval()

        # tokenize input prompt
        # ... with mingpt
        tokenizer = BPETokenizer()
        x1 = tokenizer(prompt).to(device)
        # ... with huggingface/transformers
        tokenizer_hf = GPT2Tokenizer.from_pretrained(model_type)
        model_hf.config.pad_token_id = model_hf.config.eos_token_id # suppress a warning
        encoded_input = tokenizer_hf(prompt, return_tensors='pt').to(device)
        x2 = encoded_input['input_ids']

        # ensure the logits match exactly
        logits1, loss = model(x1)
        logits2 = model_hf(x2).logits
        self.assertTrue(torch.allclose(logits1, logits2, atol=1e-5))  # port: Hugging Face's attention (scaled_dot_product_attention) rounds float32 otherwise

        # now draw the argmax samples from each
        y1 = model.generate(x1, max_new_tokens=20, do_sample=False)[0]
        y2 = model_hf.generate(x2, max_new_tokens=20, do_sample=False)[0]
        self.assertTrue(torch.equal(y1, y2)) # compare the raw sampled indices

        # convert indices to strings
        out1 = tokenizer.decode(y1.cpu().squeeze())
        out2 = tokenizer_hf.decode(y2.cpu().squeeze())
        self.assertTrue(out1 == out2) # compare the exact output strings too

if __name__ == '__main__':
    unittest.main()
'''

# the lines that read torch's names of a layer's tensors, as tricycle writes them (the
# documented exception), and minGPT's test's lines that take Hugging Face's torch outputs;
# after the substitution torch -> tricycle: (lines, tricycle's lines)
TRICYCLE_LINES = [
    ("            tricycle.nn.init.normal_(module.weight, mean=0.0, std=0.02)\n            if module.bias is not None:",
     "            tricycle.nn.init.normal_(module.weights, mean=0.0, std=0.02)  # port: a Linear's tensor is named weights\n            if module.bias is not None:"),
    ("        elif isinstance(module, nn.Embedding):\n            tricycle.nn.init.normal_(module.weight, mean=0.0, std=0.02)",
     "        elif isinstance(module, nn.Embedding):\n            tricycle.nn.init.normal_(module.weights, mean=0.0, std=0.02)  # port: an Embedding's tensor is named weights"),
    ("            tricycle.nn.init.zeros_(module.bias)\n            tricycle.nn.init.ones_(module.weight)",
     "            tricycle.nn.init.zeros_(module.beta)  # port: a norm's bias is named beta\n            tricycle.nn.init.ones_(module.gamma)  # port: a norm's weight is named gamma"),
    ("            if pn.endswith('c_proj.weight'):",
     "            if pn.endswith('c_proj.weights'):  # port: a Linear's tensor is named weights"),
    ("                if pn.endswith('bias'):",
     "                if pn.endswith(('bias', 'beta')):  # port: a norm's bias is named beta"),
    ("                elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):",
     "                elif pn.endswith('weights') and isinstance(m, whitelist_weight_modules):  # port: a Linear's tensor is named weights"),
    ("                elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):",
     "                elif pn.endswith(('weights', 'gamma')) and isinstance(m, blacklist_weight_modules):  # port: an Embedding's weights, a norm's gamma"),
    ("        sd = model.state_dict()",
     "        sd = nn.to_torch(model)  # port: tricycle's state_dict says weights, gamma, beta: torch's names and layouts, numpy copies (loaded below)"),
    ("                    sd[k].copy_(sd_hf[k].t())",
     "                    sd[k][...] = sd_hf[k].t()  # port: sd's values are numpy arrays"),
    ("                    sd[k].copy_(sd_hf[k])",
     "                    sd[k][...] = sd_hf[k]  # port: sd's values are numpy arrays"),
    ("\n        return model\n\n    def configure_optimizers",
     "\n        nn.from_torch(model, sd, strict=False)  # port: into the model (torch's copy_ wrote into it); sd left out the masks\n        return model\n\n    def configure_optimizers"),
    ("        logits2 = model_hf(x2).logits",
     "        logits2 = tricycle.from_numpy(model_hf(x2).logits.detach().cpu().numpy()).to(device)  # port: Hugging Face's model is torch's: its logits as a tricycle tensor"),
    ("        y2 = model_hf.generate(x2, max_new_tokens=20, do_sample=False)[0]",
     "        y2 = tricycle.from_numpy(model_hf.generate(x2, max_new_tokens=20, do_sample=False)[0].cpu().numpy()).to(device)  # port: as above, its ids"),
]  # fmt: skip

FILES = {"mingpt/__init__.py": "", "mingpt/model.py": MODEL, "mingpt/trainer.py": TRAINER,
         "mingpt/utils.py": UTILS, "mingpt/bpe.py": BPE, "projects/adder/adder.py": ADDER,
         "projects/chargpt/chargpt.py": CHARGPT, "tests/test_huggingface_import.py": HF_IMPORT}  # fmt: skip


def as_tricycle(files: dict) -> dict:
    """``files`` with ``torch`` replaced by ``tricycle``, then ``TRICYCLE_LINES`` swapped (each
    found once, in one file)."""
    ported = {name: text.replace("torch", "tricycle") for name, text in files.items()}
    for old, new in TRICYCLE_LINES:
        holders = [name for name, text in ported.items() if old in text]
        assert len(holders) == 1 and ported[holders[0]].count(old) == 1, old
        ported[holders[0]] = ported[holders[0]].replace(old, new)
    return ported


def write(files: dict, root) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def forget_mingpt(monkeypatch) -> None:
    """The other library's run imported its own ``mingpt``: import this one afresh."""
    for name in [n for n in sys.modules if n == "mingpt" or n.startswith("mingpt.")]:
        monkeypatch.delitem(sys.modules, name)


def run(files: dict, root, script: str, argv: list, monkeypatch) -> tuple[str, dict]:
    """The repository written in ``root`` and ``script`` run from its folder as ``python
    script *argv`` would (``mingpt`` importable, as ``pip install -e .`` makes it): what it
    printed and its globals."""
    write(files, root)
    monkeypatch.chdir((root / script).parent)
    monkeypatch.syspath_prepend(str(root))
    forget_mingpt(monkeypatch)
    monkeypatch.setattr(sys, "argv", [script.rsplit("/", 1)[-1], *argv])
    printed, space = io.StringIO(), {"__name__": "__main__"}
    with contextlib.redirect_stdout(printed):
        exec(compile(files[script], str(root / script), "exec"), space)
    return printed.getvalue(), space


@contextlib.contextmanager
def one_thread():
    """torch (and numpy's BLAS) on one thread: a shared machine, and small tensors."""
    with helpers.one_thread(pytest.importorskip("torch")):
        yield


def both(tmp_path, monkeypatch, script: str, argv: list, data: dict) -> list:
    """``script`` under torch, then with ``torch`` replaced by ``tricycle``, ``data`` beside
    it: [(library, its folder, printed, globals)]."""
    runs = []
    for library, files in (("torch", FILES), ("tricycle", as_tricycle(FILES))):
        root = tmp_path / library
        folder = (root / script).parent
        write({f"{folder.relative_to(root)}/{name}": text for name, text in data.items()}, root)
        with one_thread():
            runs.append((library, folder, *run(files, root, script, argv, monkeypatch)))
    return runs


def losses(printed: str) -> list[float]:
    return numbers(r"iter \d+: train loss ([\d.]+)", printed)


SAMPLE = re.compile(r"(O God, O God!).*?(?=\nsaving model\n)", re.S)  # chargpt's sample


def same_lines(runs, drop=()) -> None:
    """Both printed the same lines, numbers and sampled text aside (and the lines that start
    with ``drop``)."""
    printed = [lines(SAMPLE.sub(r"\1", p)) for *_, p, _ in runs]
    kept = [[ln for ln in p if not ln.startswith(drop)] for p in printed]
    assert kept[0] == kept[1]


def as_numpy(tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def reload_saved(library: str, folder, space) -> None:
    """The state_dict that the callback saved (``work_dir/model.pt``) loads, strictly, into a
    GPT built from the run's config, which then gives the trained model's logits if it was
    the last saved."""
    lib = pytest.importorskip(library)
    config = space["config"]
    state = lib.load(folder / config.system.work_dir / "model.pt")
    assert sorted(state) == sorted(space["model"].state_dict())
    model_config = space["CN"](**{**config.model.to_dict(), "model_type": None})  # its sizes
    with contextlib.redirect_stdout(io.StringIO()):
        fresh = space["GPT"](model_config)
    fresh.load_state_dict(state)
    steps = min(6, config.model.block_size)
    ids = lib.tensor(np.arange(2 * steps).reshape(2, steps) % config.model.vocab_size)
    fresh.eval()
    space["model"].eval()
    device = next(iter(space["model"].parameters())).device  # the trainer's: a GPU where one is
    with lib.no_grad():
        return as_numpy(fresh(ids)[0]), as_numpy(space["model"](ids.to(device))[0])


# ----------------------------------------------------------------------- the projects
ADDER_ARGS = ["--trainer.max_iters=101", "--trainer.num_workers=0", "--trainer.learning_rate=1e-2",
              "--data.ndigit=1", "--model.model_type=None", "--model.n_layer=2", "--model.n_head=3",
              "--model.n_embd=48"]  # fmt: skip


def test_adder_from_its_command_line(tmp_path, monkeypatch):
    runs = both(tmp_path, monkeypatch, "projects/adder/adder.py", ADDER_ARGS, {})
    # the mistakes and the saves follow the predictions, which differ between the libraries
    same_lines(runs, drop=("GPT claims that", "saving model with new top score"))
    for library, folder, printed, space in runs:
        assert "command line overwriting config attribute trainer.max_iters with 101" in printed
        assert "command line overwriting config attribute model.model_type with None" in printed
        train = losses(printed)
        assert len(train) == 11 and np.mean(train[-3:]) < 0.85 * train[0], (library, train)
        assert len(numbers(r"test final score: (\d+)/20 ", printed)) == 2, library
        scores = numbers(r"train final score: (\d+)/80 ", printed)  # at iter 0 and 100
        assert len(scores) == 2 and scores[1] >= scores[0] + 8, (library, scores)  # it learned
        work_dir = folder / "out" / "adder"
        assert (work_dir / "args.txt").read_text() == " ".join(["adder.py", *ADDER_ARGS])
        config = json.loads((work_dir / "config.json").read_text())
        assert config["trainer"]["max_iters"] == 101 and config["model"]["model_type"] is None
        reload_saved(library, folder, space)  # the best scores' model


def shakespeare(characters: int = 20_000) -> dict:
    """chargpt's ``input.txt``: the start of tiny Shakespeare (the test skips without it)."""
    path = DATA_DIR / "tinyshakespeare.txt"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return {"input.txt": path.read_text(encoding="utf-8")[:characters]}


CHARGPT_ARGS = ["--trainer.max_iters=51", "--trainer.num_workers=0", "--model.model_type=gpt-nano",
                "--data.block_size=32", "--trainer.batch_size=16", "--trainer.learning_rate=3e-3"]  # fmt: skip


def test_chargpt_from_its_command_line(tmp_path, monkeypatch):
    data = shakespeare()
    runs = both(tmp_path, monkeypatch, "projects/chargpt/chargpt.py", CHARGPT_ARGS, data)
    same_lines(runs)
    for library, folder, printed, space in runs:
        assert "data has 20000 characters, 58 unique." in printed
        train = losses(printed)
        assert len(train) == 6 and np.mean(train[-2:]) < 0.75 * train[0], (library, train)
        completions = re.findall(r"O God, O God!(.*?)\nsaving model\n", printed, re.S)
        assert len(completions) == 2, library  # at iter 0 and 50
        assert all(len(c) == 100 and set(c) <= set(data["input.txt"]) for c in completions)
        fresh, trained = reload_saved(library, folder, space)  # the last save: iter 50's model
        np.testing.assert_allclose(fresh, trained, rtol=1e-5, atol=1e-5)  # on a GPU: its sums


# --------------------------------------------------------- from_pretrained and the BPE
def byte_characters() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes (bpe.py's bytes_to_unicode), letters and
    the space's "Ġ" first, so that the merges below join them."""
    kept = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    shifted = [256 + n for n in range(256 - len(kept))]
    characters = [chr(c) for c in kept + shifted]
    return sorted(characters, key=lambda c: (not (c.isalpha() and c.isascii() or c == "Ġ"), c))


def gpt2_files(root, home) -> None:
    """In place of the downloads: GPT-2's encoder files of GPT-2's sizes (256 bytes, 50,000
    merges of two bytes, <|endoftext|>) in minGPT's cache under ``home``, and a small random
    GPT2LMHeadModel with a GPT2Tokenizer of the same files saved in ``root/gpt2``, where
    ``from_pretrained('gpt2')`` finds them."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    characters = byte_characters()
    merges = list(itertools.islice(itertools.product(characters, characters), 50_000))
    encoder = {c: i for i, c in enumerate(characters)}
    encoder.update({a + b: 256 + i for i, (a, b) in enumerate(merges)})
    encoder["<|endoftext|>"] = 50256
    cache = home / ".cache" / "mingpt"
    cache.mkdir(parents=True)
    (cache / "encoder.json").write_text(json.dumps(encoder), encoding="utf-8")
    bpe = "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)
    (cache / "vocab.bpe").write_text(bpe, encoding="utf-8")
    tokenizer = transformers.GPT2Tokenizer(str(cache / "encoder.json"), str(cache / "vocab.bpe"))
    tokenizer.save_pretrained(root / "gpt2")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=50257, n_positions=1024
    )
    model = transformers.GPT2LMHeadModel(config)
    with torch.no_grad():  # off its initial zeros and ones, and wide enough not to tie
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(root / "gpt2")


def test_huggingface_import_test_passes(tmp_path, monkeypatch):
    """minGPT's tests/test_huggingface_import.py: ``from_pretrained('gpt2')``'s logits and
    greedy samples are Hugging Face's, and so are BPETokenizer's ids and decoded text."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    gpt2_files(tmp_path, tmp_path / "home")
    monkeypatch.chdir(tmp_path)
    for library, files in (("torch", FILES), ("tricycle", as_tricycle(FILES))):
        write(files, tmp_path / library)
        monkeypatch.syspath_prepend(str(tmp_path / library))
        forget_mingpt(monkeypatch)
        space = {"__name__": "test_huggingface_import"}
        exec(
            compile(
                files["tests/test_huggingface_import.py"], "test_huggingface_import.py", "exec"
            ),
            space,
        )
        tests = unittest.defaultTestLoader.loadTestsFromTestCase(space["TestHuggingFaceImport"])
        with one_thread(), contextlib.redirect_stdout(io.StringIO()):
            result = unittest.TextTestRunner(stream=io.StringIO()).run(tests)
        failed = "".join(trace for _, trace in result.failures + result.errors)
        assert result.testsRun == 1 and not failed, f"{library}: {failed}"


# ------------------------------------------------------------------ numbers against torch
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


def test_gpt_gives_torchs_numbers_with_torchs_weights(tmp_path, monkeypatch):
    """The ported GPT with torch's weights: torch's logits, loss (``ignore_index=-1``, the
    adder's mask), gradients, ``configure_optimizers``' groups, clipped AdamW step and greedy
    ``generate`` with ``top_k``; a sampled completion is valid ids."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    built = []
    for library, files in (("torch", FILES), ("tricycle", as_tricycle(FILES))):
        write(files, tmp_path / library)
        monkeypatch.syspath_prepend(str(tmp_path / library))
        forget_mingpt(monkeypatch)
        from mingpt.model import GPT  # noqa: PLC0415
        from mingpt.trainer import Trainer  # noqa: PLC0415

        config = GPT.get_default_config()
        config.merge_from_dict(dict(model_type=None, n_layer=2, n_head=2, n_embd=16, vocab_size=11,
                                    block_size=8, embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0))  # fmt: skip
        with contextlib.redirect_stdout(io.StringIO()):
            model = GPT(config)
        train_config = Trainer.get_default_config()
        train_config.learning_rate = 1e-2
        built.append((model, model.configure_optimizers(train_config)))
    (theirs, their_optimizer), (ours, our_optimizer) = built
    with torch.no_grad():  # off the initial zeros and ones
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    # the same decay and no-decay groups: 4 matrices a block and the head; the rest
    sizes = [[p.numel() for p in group["params"]] for group in their_optimizer.param_groups]
    assert [[p.numel() for p in g["params"]] for g in our_optimizer.param_groups] == sizes
    assert [g["weight_decay"] for g in our_optimizer.param_groups] == [0.1, 0.0]
    rng = np.random.default_rng(0)
    ids, targets = rng.integers(0, 11, (3, 8)), rng.integers(0, 11, (3, 8))
    targets[:, :3] = -1  # the adder's mask: no loss there
    logits, loss = ours(tricycle.tensor(ids), tricycle.tensor(targets))
    their_logits, their_loss = theirs(torch.from_numpy(ids), torch.from_numpy(targets))
    np.testing.assert_allclose(logits.numpy(), as_numpy(their_logits), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss.item(), their_loss.item(), rtol=1e-5)
    ours.zero_grad(set_to_none=True)
    loss.backward()
    their_loss.backward()
    grads = torch_layout_grads(ours)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)
    # the keys' bias has no gradient in exact arithmetic (softmax ignores a shift shared by all
    # keys): its rounding noise, which Adam's division would make a whole step, set to that 0
    for block, their_block in zip(ours.transformer.h, theirs.transformer.h, strict=True):
        block.attn.c_attn.bias.grad.array[16:32] = 0
        their_block.attn.c_attn.bias.grad[16:32] = 0
    norm = tricycle.nn.utils.clip_grad_norm_(ours.parameters(), 0.5)
    their_norm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5)
    np.testing.assert_allclose(float(norm), float(their_norm), rtol=1e-5)
    our_optimizer.step()
    their_optimizer.step()
    stepped = nn.to_torch(ours)  # Adam's first step is lr g / (|g| + eps): where |g| is near
    for name, value in theirs.state_dict().items():  # eps, g's rounding moves it by a little of lr
        np.testing.assert_allclose(stepped[name], value.numpy(), rtol=1e-4, atol=2e-4, err_msg=name)
    # greedy completion past the block size (the context cropped), with top_k: torch's ids
    start = ids[:, :5]
    ours.eval()
    theirs.eval()
    greedy = ours.generate(tricycle.tensor(start), 6, top_k=3)
    np.testing.assert_array_equal(
        greedy.numpy(), theirs.generate(torch.from_numpy(start), 6, top_k=3).numpy()
    )
    tricycle.manual_seed(0)
    sampled = ours.generate(
        tricycle.tensor(start), 6, do_sample=True, top_k=3, temperature=0.8
    ).numpy()
    assert sampled.shape == (3, 11) and (sampled[:, :5] == start).all()
    assert sampled.min() >= 0 and sampled.max() < 11
