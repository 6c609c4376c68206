"""build-nanogpt's ``train_gpt2.py`` and ``hellaswag.py`` (github.com/karpathy/build-nanogpt),
run on tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's
promise; tests/test_torch_examples_b.py's method, tests/test_port_nanogpt.py's exception).

The files are Karpathy's, with their constants shrunk (sizes, steps, the evaluation
intervals), the CPU in place of ``cuda:N``, a byte-level stand-in for tiktoken's GPT-2
encoding, token shards written here as ``.npy`` (uint16) from a slice of tiny Shakespeare in
place of FineWeb, a few HellaSwag-shaped examples in place of the download, and a small
random ``GPT2LMHeadModel`` in place of the pretrained one; every such line ends in a
``# port:`` comment that says why. Those run under torch. Under tricycle, ``TRICYCLE_LINES``
also swap the lines of the documented exceptions, each marked ``# port:``: the lines that
read torch's ``weight`` names and layouts (a Linear's ``weights`` are (in, out), so the head
tied to the token embedding is ``F.linear(x, wte.weights)``, and ``from_pretrained`` copies
through ``nn.to_torch`` and ``nn.from_torch``), ``DistributedDataParallel``'s import
(tricycle has no ``tricycle.nn.parallel``) and ``repeat`` (numpy's in tricycle: torch's is
``tile``).

The training script runs as ``python train_gpt2.py`` would (no $RANK) and as torchrun's
world of one on CPU gloo (the DDP section), under both libraries: the model with
``NANOGPT_SCALE_INIT``, ``_init_weights``, ``scaled_dot_product_attention(is_causal=True)``,
``configure_optimizers``' groups and its ``inspect.signature`` test for ``fused``,
``DataLoaderLite`` over the shards, ``get_lr``'s warm-up and cosine, gradient accumulation,
``torch.autocast(device_type="cpu", dtype=torch.bfloat16)``, ``clip_grad_norm_``, the
validation loss, the HellaSwag evaluation with ``render_example`` and
``get_most_likely_row``, the sampling loop (``Generator(device=)``, ``topk``,
``multinomial(generator=)``, ``gather``, ``cat``) and ``torch.save`` of the checkpoint dict,
read back at the end. Both must learn and print the same lines, numbers aside. The other
tests compare numbers with torch: ``from_pretrained`` (logits against Hugging Face's, and
the port's loss, every gradient and two AdamW steps against torch's), ``render_example``
and ``get_most_likely_row`` on a synthetic example, and the two fixes the script needed:
``set_float32_matmul_precision`` and DDP's ``require_backward_grad_sync``.
"""
# ruff: noqa: E501

import contextlib
import io
import json
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import DATA_DIR
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_examples_d import corpus
from tests.test_torch_examples_d import world_of_one as world_of_one_fixture

world_of_one = world_of_one_fixture  # torchrun's variables for a world of one (a fixture)

# a byte-level stand-in for tiktoken (its GPT-2 encoding is a download): ids 0-255
BYTE_ENCODING = r"""
class Encoding:
    def encode(self, text):
        return list(text.encode("utf-8"))

    def decode(self, tokens):
        return bytes(tokens).decode("utf-8", errors="replace")

def get_encoding(name):
    return Encoding()
"""

# hellaswag.py
HELLASWAG = r'''
"""
Downloads and evaluates HellaSwag in Python.
https://github.com/rowanz/hellaswag

Example HellaSwag json item:

{"ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a roof.", "ctx_b": "he", "ctx": "A man is sitting on a roof. he", "split": "val", "split_type": "indomain", "label": 3, "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.", "is holding a rubik's cube.", "starts pulling up roofing on a roof."], "source_id": "activitynet~v_-JhWjGDPHMY"}

ind: dataset ID
activity_label: The ActivityNet or WikiHow label for this example
context: There are two formats. The full context is in ctx. When the context ends in an (incomplete) noun phrase, like for ActivityNet, this incomplete noun phrase is in ctx_b, and the context up until then is in ctx_a. This can be useful for models such as BERT that need the last sentence to be complete. However, it's never required. If ctx_b is nonempty, then ctx is the same thing as ctx_a, followed by a space, then ctx_b.
endings: a list of 4 endings. The correct index is given by label (0,1,2, or 3)
split: train, val, or test.
split_type: indomain if the activity label is seen during training, else zeroshot
source_id: Which video or WikiHow article this example came from

gpt2 (124M)
- eleuther harness reports acc 28.92%, acc_norm 31.14% (multiple choice style)
- this script: 10042 acc: 0.2859 acc_norm: 0.2955 (completion style)

gpt2-xl (1558M)
- eleuther harness reports acc 40.04%, acc_norm 50.89% (multiple choice style)
- this script: 10042 acc: 0.3842 acc_norm: 0.4893 (completion style)

The validation set of HellaSwag has a total of 10,042 examples.
"""

import os
import json
# import requests  # port: no network: the test writes the file that download() looks for
import byte_encoding as tiktoken  # port: a byte-level stand-in for tiktoken's GPT-2 encoding (no download)
# from tqdm import tqdm  # port: no network (download_file is never called)
import torch
import torch.nn as nn
from torch.nn import functional as F
# from transformers import GPT2LMHeadModel  # port: only evaluate() (Hugging Face's model in torch, never called here) uses it

# -----------------------------------------------------------------------------
DATA_CACHE_DIR = os.path.join(os.path.dirname(__file__), "hellaswag")

def download_file(url: str, fname: str, chunk_size=1024):
    """Helper function to download a file from a given url"""
    resp = requests.get(url, stream=True)
    total = int(resp.headers.get("content-length", 0))
    with open(fname, "wb") as file, tqdm(
        desc=fname,
        total=total,
        unit="iB",
        unit_scale=True,
        unit_divisor=1024,
    ) as bar:
        for data in resp.iter_content(chunk_size=chunk_size):
            size = file.write(data)
            bar.update(size)

hellaswags = {
    "train": "https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_train.jsonl",
    "val": "https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl",
    "test": "https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_test.jsonl",
}

enc = tiktoken.get_encoding("gpt2")

def download(split):
    """Downloads HellaSwag DATA_CACHE_DIR"""
    os.makedirs(DATA_CACHE_DIR, exist_ok=True)
    data_url = hellaswags[split]
    data_filename = os.path.join(DATA_CACHE_DIR, f"hellaswag_{split}.jsonl")
    if not os.path.exists(data_filename):
        print(f"Downloading {data_url} to {data_filename}...")
        download_file(data_url, data_filename)

def render_example(example):
    """
    Given the example as a dictionary, render it as three torch tensors:
    - tokens (the tokens of context + completion, of size 4xN, as there are always 4 candidates)
    - mask (is 1 in the region of the candidate completion, where we evaluate likelihoods)
    - label (the index of the correct completion, which we hope has the highest likelihood)
    """
    ctx = example["ctx"]
    label = example["label"]
    endings = example["endings"]

    # data needed to reproduce this eval on the C size
    data = {
        "label": label,
        "ctx_tokens": None,
        "ending_tokens": [],
    }

    # gather up all the tokens
    ctx_tokens = enc.encode(ctx)
    data["ctx_tokens"] = ctx_tokens
    tok_rows = []
    mask_rows = []
    for end in endings:
        end_tokens = enc.encode(" " + end) # note: prepending " " because GPT-2 tokenizer
        tok_rows.append(ctx_tokens + end_tokens)
        mask_rows.append([0]*len(ctx_tokens) + [1]*len(end_tokens))
        data["ending_tokens"].append(end_tokens)

    # have to be careful during the collation because the number of tokens in each row can differ
    max_len = max(len(row) for row in tok_rows)
    tokens = torch.zeros((4, max_len), dtype=torch.long)
    mask = torch.zeros((4, max_len), dtype=torch.long)
    for i, (tok_row, mask_row) in enumerate(zip(tok_rows, mask_rows)):
        tokens[i, :len(tok_row)] = torch.tensor(tok_row)
        mask[i, :len(mask_row)] = torch.tensor(mask_row)

    return data, tokens, mask, label

def iterate_examples(split):
    # there are 10,042 examples in total in val
    download(split)
    with open(os.path.join(DATA_CACHE_DIR, f"hellaswag_{split}.jsonl"), "r") as f:
        for line in f:
            example = json.loads(line)
            yield example

@torch.no_grad()
def evaluate(model_type, device):

    torch.set_float32_matmul_precision('high') # use tf32
    model = GPT2LMHeadModel.from_pretrained(model_type)
    model.to(device)
    # model = torch.compile(model) # optionally torch compile the model

    num_correct_norm = 0
    num_correct = 0
    num_total = 0
    for example in iterate_examples("val"):
        data, tokens, mask, label = render_example(example)
        tokens = tokens.to(device)
        mask = mask.to(device)

        # get the logits
        logits = model(tokens).logits
        # evaluate the autoregressive loss at all positions
        shift_logits = (logits[..., :-1, :]).contiguous()
        shift_tokens = (tokens[..., 1:]).contiguous()
        flat_shift_logits = shift_logits.view(-1, shift_logits.size(-1))
        flat_shift_tokens = shift_tokens.view(-1)
        shift_losses = F.cross_entropy(flat_shift_logits, flat_shift_tokens, reduction='none')
        shift_losses = shift_losses.view(tokens.size(0), -1)
        # now get the average loss just for the completion region (where mask == 1), in each row
        shift_mask = (mask[..., 1:]).contiguous() # we must shift mask, so we start at the last prompt token
        masked_shift_losses = shift_losses * shift_mask
        # sum and divide by the number of 1s in the mask
        sum_loss = masked_shift_losses.sum(dim=1)
        avg_loss = sum_loss / shift_mask.sum(dim=1)
        # now we have a loss for each of the 4 completions
        # the one with the lowest loss should be the most likely
        pred = sum_loss.argmin().item()
        pred_norm = avg_loss.argmin().item()

        # accumulate stats
        num_total += 1
        num_correct += int(pred == label)
        num_correct_norm += int(pred_norm == label)
        print(f"{num_total} acc_norm: {num_correct_norm}/{num_total}={num_correct_norm/num_total:.4f}")

        # debug: pretty print a few examples, and the losses in each case
        if num_total < 10:
            print("---")
            print(f"Context:\n {example['ctx']}")
            print(f"Endings:")
            for i, end in enumerate(example["endings"]):
                print(f"{i} (loss: {avg_loss[i].item():.4f}) {end}")
            print(f"predicted: {pred_norm}, actual: {label}")

if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("-m", "--model_type", type=str, default="gpt2", help="the model type to use")
    parser.add_argument("-d", "--device", type=str, default="cuda", help="the device to use")
    args = parser.parse_args()
    evaluate(args.model_type, args.device)
'''

# train_gpt2.py
TRAIN_GPT2 = r'''
import os
import math
import time
import inspect
from dataclasses import dataclass
import torch
import torch.nn as nn
from torch.nn import functional as F
from hellaswag import render_example, iterate_examples
# -----------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        # output projection
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.c_proj.NANOGPT_SCALE_INIT = 1
        # regularization
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size() # batch size, sequence length, embedding dimensionality (n_embd)
        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        # nh is "number of heads", hs is "head size", and C (number of channels) = nh * hs
        # e.g. in GPT-2 (124M), n_head=12, hs=64, so nh*hs=C=768 channels in the Transformer
        qkv = self.c_attn(x)
        q, k, v = qkv.split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) # flash attention
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side
        # output projection
        y = self.c_proj(y)
        return y

class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc    = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu    = nn.GELU(approximate='tanh')
        self.c_proj  = nn.Linear(4 * config.n_embd, config.n_embd)
        self.c_proj.NANOGPT_SCALE_INIT = 1

    def forward(self, x):
        x = self.c_fc(x)
        x = self.gelu(x)
        x = self.c_proj(x)
        return x

class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

@dataclass
class GPTConfig:
    block_size: int = 1024 # max sequence length
    vocab_size: int = 50257 # number of tokens: 50,000 BPE merges + 256 bytes tokens + 1 <|endoftext|> token
    n_layer: int = 12 # number of layers
    n_head: int = 12 # number of heads
    n_embd: int = 768 # embedding dimension

class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.config = config

        self.transformer = nn.ModuleDict(dict(
            wte = nn.Embedding(config.vocab_size, config.n_embd),
            wpe = nn.Embedding(config.block_size, config.n_embd),
            h = nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f = nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # weight sharing scheme
        self.transformer.wte.weight = self.lm_head.weight

        # init params
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            std = 0.02
            if hasattr(module, 'NANOGPT_SCALE_INIT'):
                std *= (2 * self.config.n_layer) ** -0.5
            torch.nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        # idx is of shape (B, T)
        B, T = idx.size()
        assert T <= self.config.block_size, f"Cannot forward sequence of length {T}, block size is only {self.config.block_size}"
        # forward the token and posisition embeddings
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device) # shape (T)
        pos_emb = self.transformer.wpe(pos) # position embeddings of shape (T, n_embd)
        tok_emb = self.transformer.wte(idx) # token embeddings of shape (B, T, n_embd)
        x = tok_emb + pos_emb
        # forward the blocks of the transformer
        for block in self.transformer.h:
            x = block(x)
        # forward the final layernorm and the classifier
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x) # (B, T, vocab_size)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    @classmethod
    def from_pretrained(cls, model_type):
        """Loads pretrained GPT-2 model weights from huggingface"""
        assert model_type in {'gpt2', 'gpt2-medium', 'gpt2-large', 'gpt2-xl'}
        from transformers import GPT2LMHeadModel
        print("loading weights from pretrained gpt: %s" % model_type)

        # n_layer, n_head and n_embd are determined from model_type
        config_args = {
            'gpt2':         dict(n_layer=2, n_head=2, n_embd=32),  # 124M params  # port: the test's small random GPT-2
            'gpt2-medium':  dict(n_layer=24, n_head=16, n_embd=1024), # 350M params
            'gpt2-large':   dict(n_layer=36, n_head=20, n_embd=1280), # 774M params
            'gpt2-xl':      dict(n_layer=48, n_head=25, n_embd=1600), # 1558M params
        }[model_type]
        config_args['vocab_size'] = 64 # always 50257 for GPT model checkpoints  # port: the test's small GPT-2
        config_args['block_size'] = 64 # always 1024 for GPT model checkpoints  # port: the test's small GPT-2
        # create a from-scratch initialized minGPT model
        config = GPTConfig(**config_args)
        model = GPT(config)
        sd = model.state_dict()
        sd_keys = sd.keys()
        sd_keys = [k for k in sd_keys if not k.endswith('.attn.bias')] # discard this mask / buffer, not a param

        # init a huggingface/transformers model
        model_hf = SMALL_GPT2()  # port: the test's small random GPT2LMHeadModel, from a GPT2Config (no download)
        sd_hf = model_hf.state_dict()

        # copy while ensuring all of the parameters are aligned and match in names and shapes
        sd_keys_hf = sd_hf.keys()
        sd_keys_hf = [k for k in sd_keys_hf if not k.endswith('.attn.masked_bias')] # ignore these, just a buffer
        sd_keys_hf = [k for k in sd_keys_hf if not k.endswith('.attn.bias')] # same, just the mask (buffer)
        transposed = ['attn.c_attn.weight', 'attn.c_proj.weight', 'mlp.c_fc.weight', 'mlp.c_proj.weight']
        # basically the openai checkpoints use a "Conv1D" module, but we only want to use a vanilla Linear
        # this means that we have to transpose these weights when we import them
        assert len(sd_keys_hf) == len(sd_keys), f"mismatched keys: {len(sd_keys_hf)} != {len(sd_keys)}"
        for k in sd_keys_hf:
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

    def configure_optimizers(self, weight_decay, learning_rate, device_type):
        # start with all of the candidate parameters (that require grad)
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # create optim groups. Any parameters that is 2D will be weight decayed, otherwise no.
        # i.e. all weight tensors in matmuls + embeddings decay, all biases and layernorms don't.
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0}
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        if master_process:
            print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} parameters")
            print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with {num_nodecay_params:,} parameters")
        # Create AdamW optimizer and use the fused version if it is available
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        if master_process:
            print(f"using fused AdamW: {use_fused}")
        optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=(0.9, 0.95), eps=1e-8, fused=use_fused)
        return optimizer

# -----------------------------------------------------------------------------
import byte_encoding as tiktoken  # port: a byte-level stand-in for tiktoken's GPT-2 encoding (no download)
import numpy as np

def load_tokens(filename):
    npt = np.load(filename)
    npt = npt.astype(np.int32) # added after video
    ptt = torch.tensor(npt, dtype=torch.long)
    return ptt

class DataLoaderLite:
    def __init__(self, B, T, process_rank, num_processes, split):
        self.B = B
        self.T = T
        self.process_rank = process_rank
        self.num_processes = num_processes
        assert split in {'train', 'val'}

        # get the shard filenames
        data_root = "edu_fineweb10B"
        shards = os.listdir(data_root)
        shards = [s for s in shards if split in s]
        shards = sorted(shards)
        shards = [os.path.join(data_root, s) for s in shards]
        self.shards = shards
        assert len(shards) > 0, f"no shards found for split {split}"
        if master_process:
            print(f"found {len(shards)} shards for split {split}")
        self.reset()

    def reset(self):
        # state, init at shard zero
        self.current_shard = 0
        self.tokens = load_tokens(self.shards[self.current_shard])
        self.current_position = self.B * self.T * self.process_rank

    def next_batch(self):
        B, T = self.B, self.T
        buf = self.tokens[self.current_position : self.current_position+B*T+1]
        x = (buf[:-1]).view(B, T) # inputs
        y = (buf[1:]).view(B, T) # targets
        # advance the position in the tensor
        self.current_position += B * T * self.num_processes
        # if loading the next batch would be out of bounds, advance to next shard
        if self.current_position + (B * T * self.num_processes + 1) > len(self.tokens):
            self.current_shard = (self.current_shard + 1) % len(self.shards)
            self.tokens = load_tokens(self.shards[self.current_shard])
            self.current_position = B * T * self.process_rank
        return x, y

# -----------------------------------------------------------------------------
# helper function for HellaSwag eval
# takes tokens, mask, and logits, returns the index of the completion with the lowest loss

def get_most_likely_row(tokens, mask, logits):
    # evaluate the autoregressive loss at all positions
    shift_logits = (logits[..., :-1, :]).contiguous()
    shift_tokens = (tokens[..., 1:]).contiguous()
    flat_shift_logits = shift_logits.view(-1, shift_logits.size(-1))
    flat_shift_tokens = shift_tokens.view(-1)
    shift_losses = F.cross_entropy(flat_shift_logits, flat_shift_tokens, reduction='none')
    shift_losses = shift_losses.view(tokens.size(0), -1)
    # now get the average loss just for the completion region (where mask == 1), in each row
    shift_mask = (mask[..., 1:]).contiguous() # we must shift mask, so we start at the last prompt token
    masked_shift_losses = shift_losses * shift_mask
    # sum and divide by the number of 1s in the mask
    sum_loss = masked_shift_losses.sum(dim=1)
    avg_loss = sum_loss / shift_mask.sum(dim=1)
    # now we have a loss for each of the 4 completions
    # the one with the lowest loss should be the most likely
    pred_norm = avg_loss.argmin().item()
    return pred_norm

# -----------------------------------------------------------------------------
# simple launch:
# python train_gpt2.py
# DDP launch for e.g. 8 GPUs:
# torchrun --standalone --nproc_per_node=8 train_gpt2.py

# run the training loop
from torch.distributed import init_process_group, destroy_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.distributed as dist

# set up DDP (distributed data parallel).
# torchrun command sets the env variables RANK, LOCAL_RANK, and WORLD_SIZE
ddp = int(os.environ.get('RANK', -1)) != -1 # is this a ddp run?
if ddp:
    # use of DDP atm demands CUDA, we set the device appropriately according to rank
    # assert torch.cuda.is_available(), "for now i think we need CUDA for DDP"  # port: the CPU
    init_process_group(backend='gloo')  # port: the CPU
    ddp_rank = int(os.environ['RANK'])
    ddp_local_rank = int(os.environ['LOCAL_RANK'])
    ddp_world_size = int(os.environ['WORLD_SIZE'])
    device = 'cpu'  # port: the CPU
    # torch.cuda.set_device(device)  # port: the CPU
    master_process = ddp_rank == 0 # this process will do logging, checkpointing etc.
else:
    # vanilla, non-DDP run
    ddp_rank = 0
    ddp_local_rank = 0
    ddp_world_size = 1
    master_process = True
    # attempt to autodetect device
    device = "cpu"
    if torch.cuda.is_available():
        device = "cuda"
    elif hasattr(torch.backends, "mps") and torch.backends.mps.is_available():
        device = "mps"
    print(f"using device: {device}")

# added after video, pytorch can be serious about it's device vs. device_type distinction
device_type = "cuda" if device.startswith("cuda") else "cpu"

torch.manual_seed(1337)
if torch.cuda.is_available():
    torch.cuda.manual_seed(1337)

enc = tiktoken.get_encoding("gpt2")

total_batch_size = 256 # 2**19, ~0.5M, in number of tokens  # port: shrunk (two micro steps)
B = 4 # micro batch size  # port: shrunk
T = 32 # sequence length  # port: shrunk
assert total_batch_size % (B * T * ddp_world_size) == 0, "make sure total_batch_size is divisible by B * T * ddp_world_size"
grad_accum_steps = total_batch_size // (B * T * ddp_world_size)
if master_process:
    print(f"total desired batch size: {total_batch_size}")
    print(f"=> calculated gradient accumulation steps: {grad_accum_steps}")

train_loader = DataLoaderLite(B=B, T=T, process_rank=ddp_rank, num_processes=ddp_world_size, split="train")
val_loader = DataLoaderLite(B=B, T=T, process_rank=ddp_rank, num_processes=ddp_world_size, split="val")

torch.set_float32_matmul_precision('high')

# create model
model = GPT(GPTConfig(block_size=64, vocab_size=256, n_layer=2, n_head=4, n_embd=64))  # port: shrunk; the byte stand-in's 256 ids
# model = GPT.from_pretrained("gpt2") # or init from OpenAI GPT-2
model.to(device)
use_compile = False # torch.compile interferes with HellaSwag eval and Generation. TODO fix
if use_compile:
    model = torch.compile(model)
if ddp:
    model = DDP(model)  # port: a CPU module takes no device_ids
raw_model = model.module if ddp else model # always contains the "raw" unwrapped model

max_lr = 3e-3  # port: a few steps must learn
min_lr = max_lr * 0.1
warmup_steps = 5  # port: shrunk
max_steps = 40 # 19,073 steps is ~1 epoch, if data is 10B tokens and batch size 0.5M tokens  # port: shrunk
def get_lr(it):
    # 1) linear warmup for warmup_iters steps
    if it < warmup_steps:
        return max_lr * (it+1) / warmup_steps
    # 2) if it > lr_decay_iters, return min learning rate
    if it > max_steps:
        return min_lr
    # 3) in between, use cosine decay down to min learning rate
    decay_ratio = (it - warmup_steps) / (max_steps - warmup_steps)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) # coeff starts at 1 and goes to 0
    return min_lr + coeff * (max_lr - min_lr)

# optimize!
optimizer = raw_model.configure_optimizers(weight_decay=0.1, learning_rate=6e-4, device_type=device_type)

# create the log directory we will write checkpoints to and log to
log_dir = "log"
os.makedirs(log_dir, exist_ok=True)
log_file = os.path.join(log_dir, f"log.txt")
with open(log_file, "w") as f: # open for writing to clear the file
    pass

for step in range(max_steps):
    t0 = time.time()
    last_step = (step == max_steps - 1)

    # once in a while evaluate our validation loss
    if step % 10 == 0 or last_step:  # port: 250 shrunk
        model.eval()
        val_loader.reset()
        with torch.no_grad():
            val_loss_accum = 0.0
            val_loss_steps = 2  # port: shrunk
            for _ in range(val_loss_steps):
                x, y = val_loader.next_batch()
                x, y = x.to(device), y.to(device)
                with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                    logits, loss = model(x, y)
                loss = loss / val_loss_steps
                val_loss_accum += loss.detach()
        if ddp:
            dist.all_reduce(val_loss_accum, op=dist.ReduceOp.AVG)
        if master_process:
            print(f"validation loss: {val_loss_accum.item():.4f}")
            with open(log_file, "a") as f:
                f.write(f"{step} val {val_loss_accum.item():.4f}\n")
            if step > 0 and (step % 5000 == 0 or last_step):
                # optionally write model checkpoints
                checkpoint_path = os.path.join(log_dir, f"model_{step:05d}.pt")
                checkpoint = {
                    'model': raw_model.state_dict(),
                    'config': raw_model.config,
                    'step': step,
                    'val_loss': val_loss_accum.item()
                }
                # you might also want to add optimizer.state_dict() and
                # rng seeds etc., if you wanted to more exactly resume training
                torch.save(checkpoint, checkpoint_path)

    # once in a while evaluate hellaswag
    if (step % 20 == 0 or last_step) and (not use_compile):  # port: 250 shrunk
        num_correct_norm = 0
        num_total = 0
        for i, example in enumerate(iterate_examples("val")):
            # only process examples where i % ddp_world_size == ddp_rank
            if i % ddp_world_size != ddp_rank:
                continue
            # render the example into tokens and labels
            _, tokens, mask, label = render_example(example)
            tokens = tokens.to(device)
            mask = mask.to(device)
            # get the logits
            with torch.no_grad():
                with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                    logits, loss = model(tokens)
                pred_norm = get_most_likely_row(tokens, mask, logits)
            num_total += 1
            num_correct_norm += int(pred_norm == label)
        # reduce the stats across all processes
        if ddp:
            num_total = torch.tensor(num_total, dtype=torch.long, device=device)
            num_correct_norm = torch.tensor(num_correct_norm, dtype=torch.long, device=device)
            dist.all_reduce(num_total, op=dist.ReduceOp.SUM)
            dist.all_reduce(num_correct_norm, op=dist.ReduceOp.SUM)
            num_total = num_total.item()
            num_correct_norm = num_correct_norm.item()
        acc_norm = num_correct_norm / num_total
        if master_process:
            print(f"HellaSwag accuracy: {num_correct_norm}/{num_total}={acc_norm:.4f}")
            with open(log_file, "a") as f:
                f.write(f"{step} hella {acc_norm:.4f}\n")

    # once in a while generate from the model (except step 0, which is noise)
    if ((step > 0 and step % 20 == 0) or last_step) and (not use_compile):  # port: 250 shrunk
        model.eval()
        num_return_sequences = 4
        max_length = 32
        tokens = enc.encode("Hello, I'm a language model,")
        tokens = torch.tensor(tokens, dtype=torch.long)
        tokens = tokens.unsqueeze(0).repeat(num_return_sequences, 1)
        xgen = tokens.to(device)
        sample_rng = torch.Generator(device=device)
        sample_rng.manual_seed(42 + ddp_rank)
        while xgen.size(1) < max_length:
            # forward the model to get the logits
            with torch.no_grad():
                with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
                    logits, loss = model(xgen) # (B, T, vocab_size)
                # take the logits at the last position
                logits = logits[:, -1, :] # (B, vocab_size)
                # get the probabilities
                probs = F.softmax(logits, dim=-1)
                # do top-k sampling of 50 (huggingface pipeline default)
                # topk_probs here becomes (5, 50), topk_indices is (5, 50)
                topk_probs, topk_indices = torch.topk(probs, 50, dim=-1)
                # select a token from the top-k probabilities
                # note: multinomial does not demand the input to sum to 1
                ix = torch.multinomial(topk_probs, 1, generator=sample_rng) # (B, 1)
                # gather the corresponding indices
                xcol = torch.gather(topk_indices, -1, ix) # (B, 1)
                # append to the sequence
                xgen = torch.cat((xgen, xcol), dim=1)
        # print the generated text
        for i in range(num_return_sequences):
            tokens = xgen[i, :max_length].tolist()
            decoded = enc.decode(tokens)
            print(f"rank {ddp_rank} sample {i}: {decoded}")

    # do one step of the optimization
    model.train()
    optimizer.zero_grad()
    loss_accum = 0.0
    for micro_step in range(grad_accum_steps):
        x, y = train_loader.next_batch()
        x, y = x.to(device), y.to(device)
        # added after video, this field is also used by the forward pass.
        if ddp:
            model.require_backward_grad_sync = (micro_step == grad_accum_steps - 1)
        with torch.autocast(device_type=device_type, dtype=torch.bfloat16):
            logits, loss = model(x, y)
        # we have to scale the loss to account for gradient accumulation,
        # because the gradients just add on each successive backward().
        # addition of gradients corresponds to a SUM in the objective, but
        # instead of a SUM we want MEAN. Scale the loss here so it comes out right
        loss = loss / grad_accum_steps
        loss_accum += loss.detach()
        loss.backward()
    if ddp:
        dist.all_reduce(loss_accum, op=dist.ReduceOp.AVG)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    # determine and set the learning rate for this iteration
    lr = get_lr(step)
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr
    optimizer.step()
    if device_type == "cuda":
        torch.cuda.synchronize() # wait for the GPU to finish work
    t1 = time.time()
    dt = t1 - t0 # time difference in seconds
    tokens_processed = train_loader.B * train_loader.T * grad_accum_steps * ddp_world_size
    tokens_per_sec = tokens_processed / dt
    if master_process:
        print(f"step {step:5d} | loss: {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt*1000:.2f}ms | tok/sec: {tokens_per_sec:.2f}")
        with open(log_file, "a") as f:
            f.write(f"{step} train {loss_accum.item():.6f}\n")

if ddp:
    destroy_process_group()

# port: the last checkpoint read back and sampled from, as a user resuming would
checkpoint = torch.load(checkpoint_path, weights_only=False)  # port: its 'config' is a GPTConfig (a trusted file)
restored = GPT(checkpoint['config'])  # port
restored.load_state_dict(checkpoint['model'])  # port
'''

# the lines that read torch's `weight` names and layouts, as tricycle writes them (the
# documented exception; after the substitution torch -> tricycle): (line, tricycle's line)
TRICYCLE_LINES = [
    ("from tricycle.nn.parallel import DistributedDataParallel as DDP",
     "from tricycle.distributed import DistributedDataParallel as DDP  # port: tricycle has no tricycle.nn.parallel (DDP lives above the layer catalogue)"),
    ("        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)",
     "        # self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)  # port: no lm_head: tricycle's Linear holds (in, out) weights, the transpose of wte's (V, E)"),
    ("        self.transformer.wte.weight = self.lm_head.weight",
     "        # self.transformer.wte.weight = self.lm_head.weight  # port: the tied head is F.linear on wte's table, in forward"),
    ("            tricycle.nn.init.normal_(module.weight, mean=0.0, std=std)",
     "            tricycle.nn.init.normal_(module.weights, mean=0.0, std=std)  # port: a Linear's tensor is named weights"),
    ("            tricycle.nn.init.normal_(module.weight, mean=0.0, std=0.02)",
     "            tricycle.nn.init.normal_(module.weights, mean=0.0, std=0.02)  # port: an Embedding's tensor is named weights"),
    ("        logits = self.lm_head(x) # (B, T, vocab_size)",
     "        logits = F.linear(x, self.transformer.wte.weights) # (B, T, vocab_size)  # port: the tied head (see __init__)"),
    ("        tokens = tokens.unsqueeze(0).repeat(num_return_sequences, 1)",
     "        tokens = tokens.unsqueeze(0).tile(num_return_sequences, 1)  # port: tricycle's repeat is numpy's (each element n times); torch's repeat is tile"),
    ("        sd = model.state_dict()",
     "        sd = nn.to_torch(model)  # port: tricycle's state_dict says weights, gamma, beta: torch's names and layouts, numpy copies (loaded below)"),
    ("        sd_keys_hf = [k for k in sd_keys_hf if not k.endswith('.attn.bias')] # same, just the mask (buffer)",
     "        sd_keys_hf = [k for k in sd_keys_hf if not k.endswith('.attn.bias')] # same, just the mask (buffer)\n"
     "        sd_keys_hf = [k for k in sd_keys_hf if k != 'lm_head.weight']  # port: the tied head has no tensor of its own (it reads wte's)"),
    ("                    sd[k].copy_(sd_hf[k].t())",
     "                    sd[k][...] = sd_hf[k].t()  # port: sd's values are numpy arrays"),
    ("                    sd[k].copy_(sd_hf[k])",
     "                    sd[k][...] = sd_hf[k]  # port: sd's values are numpy arrays"),
    ("        return model",
     "        nn.from_torch(model, sd)  # port: into the model (torch's copy_ wrote into it)\n"
     "        return model"),
]  # fmt: skip


def as_tricycle(text: str) -> str:
    """``text`` with ``torch`` replaced by ``tricycle``, then ``TRICYCLE_LINES`` swapped."""
    text = text.replace("torch", "tricycle")
    for line, ours in TRICYCLE_LINES:
        if f"\n{line}\n" in text:
            assert text.count(f"\n{line}\n") == 1, line
            text = text.replace(f"\n{line}\n", f"\n{ours}\n")
    return text


def run_main(files: dict, script: str, directory, monkeypatch, **names) -> tuple[str, dict]:
    """``files`` written in ``directory`` and ``script`` run there as ``python script`` would:
    as the module ``__main__`` (so that pickle finds its classes, a checkpoint's GPTConfig).
    Returns what it printed and its globals."""
    directory.mkdir()
    for name, text in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, str):
            (directory / name).write_text(text)
        else:  # a token shard
            np.save(directory / name, text)
    monkeypatch.chdir(directory)
    monkeypatch.syspath_prepend(str(directory))
    for module in ("hellaswag", "byte_encoding"):  # the other library's run imported its own
        monkeypatch.delitem(sys.modules, module, raising=False)
    main = types.ModuleType("__main__")
    main.__dict__.update(names, __file__=str(directory / script))
    printed = io.StringIO()
    with monkeypatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setitem(sys.modules, "__main__", main)
        exec(compile(files[script], str(directory / script), "exec"), main.__dict__)
    return printed.getvalue(), main.__dict__


def text() -> str:
    """A slice of tiny Shakespeare (FineWeb's place), else a text in a toy grammar."""
    path = DATA_DIR / "tinyshakespeare.txt"
    return path.read_text(encoding="utf-8")[:40_000] if path.is_file() else corpus(1200, 0)


def data_files() -> dict:
    """fineweb.py's shards (uint16 token ids, two for train so that the loader moves on to the
    next, one for val) and HellaSwag's validation file: 8 examples whose right ending is the
    text's own continuation and the wrong ones are taken from elsewhere."""
    tokens = np.frombuffer(text().encode("utf-8"), dtype=np.uint8).astype(np.uint16)
    files = {
        "byte_encoding.py": BYTE_ENCODING,
        "edu_fineweb10B/edufineweb_val_000000.npy": tokens[:4000],
        "edu_fineweb10B/edufineweb_train_000000.npy": tokens[4000:10000],
        "edu_fineweb10B/edufineweb_train_000001.npy": tokens[10000:],
    }
    source, rng, examples = text()[:4000], np.random.default_rng(0), []
    for ind in range(8):
        start = 200 * ind
        ctx, right = source[start : start + 40], source[start + 40 : start + 56]
        wrong = [source[s : s + 16] for s in rng.integers(2000, 3900, 3)]
        label = int(rng.integers(0, 4))
        endings = [*wrong[:label], right, *wrong[label:]]
        examples.append({"ind": ind, "ctx": ctx, "label": label, "endings": endings})
    files["hellaswag/hellaswag_val.jsonl"] = "".join(json.dumps(e) + "\n" for e in examples)
    return files


def train_both(tmp_path, monkeypatch) -> list:
    """train_gpt2.py under torch, then under tricycle: [(printed, globals), ...]."""
    torch = pytest.importorskip("torch")
    files = {**data_files(), "hellaswag.py": HELLASWAG, "train_gpt2.py": TRAIN_GPT2}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared machine: the small tensors need no more
    try:
        theirs = run_main(files, "train_gpt2.py", tmp_path / "torch", monkeypatch)
    finally:
        torch.set_num_threads(threads)
    ported = {k: as_tricycle(v) if isinstance(v, str) else v for k, v in files.items()}
    ours = run_main(ported, "train_gpt2.py", tmp_path / "tricycle", monkeypatch)
    return [("torch", *theirs), ("tricycle", *ours)]


SAMPLE = re.compile(r"(sample \d+:).*?(?=\n(?:step |validation|HellaSwag|rank )|\Z)", re.S)


def host(value) -> np.ndarray:
    """A state_dict's value in host memory: a tensor of either library (on a GPU where there
    is one), or tricycle's array (cupy's on a GPU)."""
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return value.get() if hasattr(value, "get") else np.asarray(value)


def check_training(runs, tmp_path) -> None:
    """Both learned, printed the same lines (numbers and the samples' text aside), logged,
    sampled and wrote the checkpoint that reads back into the same model."""
    same = [lines(SAMPLE.sub(r"\1", printed)) for _, printed, _ in runs]
    assert same[0] == same[1]
    schedules = []
    for library, printed, space in runs:
        train = numbers(r"\| loss: ([\d.]+)", printed)
        assert len(train) == 40 and np.mean(train[-5:]) < 0.65 * train[0], (library, train)
        val = numbers(r"validation loss: ([\d.]+)", printed)
        assert len(val) == 5 and val[-1] < 0.75 * val[0], (library, val)
        assert len(numbers(r"HellaSwag accuracy: (\d+)/8=", printed)) == 3, library
        norms = numbers(r"norm: ([\d.]+)", printed)
        assert all(np.isfinite(norms)) and max(norms) > 0, (library, norms)
        schedules.append(numbers(r"lr ([\d.e+-]+)", printed))
        log = (tmp_path / library / "log" / "log.txt").read_text().split("\n")
        assert (
            log[0].startswith("0 val ")
            and log[1].startswith("0 hella ")
            and log[2].startswith("0 train ")
        )
        samples = space["xgen"].tolist()  # 4 samples of 32 ids, after the prompt's 28
        prompt = space["enc"].encode("Hello, I'm a language model,")
        assert len(samples) == 4 and all(len(s) == 32 and s[:28] == prompt for s in samples)
        assert all(0 <= i < 256 for s in samples for i in s), library
        checkpoint = space["checkpoint"]  # the last step's, before its update, read back
        assert checkpoint["step"] == 39 and checkpoint["config"].n_embd == 64, library
        assert f"{checkpoint['val_loss']:.4f}" == f"{val[-1]:.4f}", library
        saved, restored = checkpoint["model"], space["restored"].state_dict()
        assert sorted(saved) == sorted(restored), library
        for name, value in saved.items():
            np.testing.assert_array_equal(host(restored[name]), host(value), err_msg=name)
    assert schedules[0] == schedules[1]  # get_lr is plain Python


def test_train_gpt2_as_a_single_process(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    runs = train_both(tmp_path, monkeypatch)
    check_training(runs, tmp_path)
    for library, printed, _ in runs:  # 4 decayed tensors a block, wte and wpe
        assert numbers(r"num decayed parameter tensors: (\d+)", printed) == [10], library
        on_gpu = pytest.importorskip(library).cuda.is_available()  # the script picks cuda
        assert f"using fused AdamW: {on_gpu}" in printed, library
        assert f"using device: {'cuda' if on_gpu else 'cpu'}" in printed, library


def test_train_gpt2_under_ddp_in_a_world_of_one(world_of_one, tmp_path, monkeypatch):
    runs = train_both(tmp_path, monkeypatch)
    check_training(runs, tmp_path)
    for library, printed, space in runs:
        assert space["ddp"] and space["raw_model"] is space["model"].module, library
        assert "using device" not in printed, library


# ------------------------------------------------------------------- numbers against torch
def load_scripts(tmp_path, monkeypatch, **names) -> list:
    """The model half of train_gpt2.py (its classes, up to the data) and hellaswag.py, under
    torch and under tricycle: [(library, the module torch, globals)] (the training half
    trains at import)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    model_half = TRAIN_GPT2[: TRAIN_GPT2.index("import byte_encoding as tiktoken")]
    files = {"byte_encoding.py": BYTE_ENCODING, "hellaswag.py": HELLASWAG, "model.py": model_half}
    loaded = []
    for library, module, port in (("torch", torch, str), ("tricycle", tricycle, as_tricycle)):
        ported = {name: port(text) for name, text in files.items()}
        _, space = run_main(ported, "model.py", tmp_path / library, monkeypatch, **names)
        space["hellaswag"] = sys.modules["hellaswag"]
        loaded.append((library, module, space))
    return loaded


def small_gpt2():
    """A small random GPT2LMHeadModel (Hugging Face's, in torch) in place of the download,
    its biases and norms moved off their initial zeros and ones."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


def torch_layout_state(model) -> dict:
    """A tricycle model's tensors under their torch names and in torch's layout."""
    import tricycle.nn as nn  # noqa: PLC0415

    return nn.to_torch(model)


def torch_layout_grads(model) -> dict:
    """Every gradient of a tricycle model under its torch name and in torch's layout."""
    arrays = [(p, p.array) for p in model.parameters()]
    for p, _ in arrays:
        p.array = p.grad.array
    try:
        return torch_layout_state(model)
    finally:
        for p, array in arrays:
            p.array = array


def test_from_pretrained_matches_hugging_face_and_the_torch_script(tmp_path, monkeypatch):
    hf = small_gpt2()
    torch = pytest.importorskip("torch")
    loaded = load_scripts(tmp_path, monkeypatch, SMALL_GPT2=lambda: hf, master_process=True)
    rng = np.random.default_rng(0)
    ids, targets = rng.integers(0, 64, (2, 16)), rng.integers(0, 64, (2, 16))
    expected = hf(torch.from_numpy(ids)).logits.detach().numpy()
    models, optimizers = [], []
    for library, module, space in loaded:
        model = space["GPT"].from_pretrained("gpt2")
        logits, _ = model(module.tensor(ids))
        np.testing.assert_allclose(logits.detach().numpy(), expected, rtol=1e-4, atol=1e-5,
                                   err_msg=library)  # fmt: skip
        model.double()  # float64 from here: AdamW's first steps divide by the gradients' size
        logits, loss = model(module.tensor(ids), module.tensor(targets))
        loss.backward()
        models.append((model, loss))
        optimizers.append(model.configure_optimizers(0.1, 6e-4, "cpu"))
    (theirs, their_loss), (ours, our_loss) = models
    np.testing.assert_allclose(our_loss.item(), their_loss.item(), rtol=1e-12)
    grads, their_params = torch_layout_grads(ours), dict(theirs.named_parameters())
    assert sorted(grads) == sorted(their_params)  # lm_head.weight is wte's in both
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, their_params[name].grad.numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)  # fmt: skip
    groups = [[(g["weight_decay"], sum(p.numel() for p in g["params"])) for g in o.param_groups]
              for o in optimizers]  # fmt: skip
    assert groups[0] == groups[1] and groups[0][0][0] == 0.1 and groups[0][1][0] == 0.0
    for optimizer in optimizers:  # the gradients above, then those after that step
        optimizer.step()
    for (model, _), optimizer, (_, module, _) in zip(models, optimizers, loaded):
        optimizer.zero_grad()
        model(module.tensor(ids), module.tensor(targets))[1].backward()
        optimizer.step()
    state, their_state = torch_layout_state(ours), theirs.state_dict()
    for name, value in state.items():
        np.testing.assert_allclose(value, their_state[name].numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=name)  # fmt: skip


EXAMPLE = {  # hellaswag.py's own example
    "ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a roof.",
    "ctx_b": "he", "ctx": "A man is sitting on a roof. he", "split": "val",
    "split_type": "indomain", "label": 3,
    "endings": ["is using wrap to wrap a pair of skis.", "is ripping level tiles off.",
                "is holding a rubik's cube.", "starts pulling up roofing on a roof."],
    "source_id": "activitynet~v_-JhWjGDPHMY",
}  # fmt: skip


def test_render_example_and_get_most_likely_row_match_torch(tmp_path, monkeypatch):
    loaded = load_scripts(tmp_path, monkeypatch)
    start = TRAIN_GPT2.index("def get_most_likely_row")
    function = TRAIN_GPT2[start : TRAIN_GPT2.index("# ---", start)]
    context = list(EXAMPLE["ctx"].encode())
    rows = [context + list((" " + end).encode()) for end in EXAMPLE["endings"]]
    width = max(map(len, rows))
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 4, width, 256)).astype(np.float32)  # three tries
    picks = []
    for library, module, space in loaded:
        data, tokens, mask, label = space["hellaswag"].render_example(EXAMPLE)
        assert label == 3 and data["ctx_tokens"] == context, library
        assert tokens.shape == mask.shape == (4, width) and tokens.dtype == module.long
        for i, row in enumerate(rows):  # zeros after each row, the mask on its ending
            np.testing.assert_array_equal(tokens.numpy()[i], row + [0] * (width - len(row)))
            ones = [0] * len(context) + [1] * (len(row) - len(context))
            np.testing.assert_array_equal(mask.numpy()[i], ones + [0] * (width - len(row)))
        if library == "tricycle":
            function = as_tricycle(function)
        exec(function, space)
        picks.append([space["get_most_likely_row"](tokens, mask, module.tensor(x)) for x in logits])
    # numpy's: the mean cross-entropy over each row's ending, the lowest row
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    tokens, mask = np.array(loaded[0][2]["hellaswag"].render_example(EXAMPLE)[1:3])
    losses = -np.take_along_axis(log_probs[:, :, :-1], tokens[None, :, 1:, None], -1)[..., 0]
    expected = ((losses * mask[:, 1:]).sum(-1) / mask[:, 1:].sum(-1)).argmin(-1)
    assert picks[0] == picks[1] == expected.tolist()


def test_set_float32_matmul_precision_as_torch():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = tricycle.randn(8, 16)
    before = (x @ x.T).numpy()
    try:
        for precision in ("high", "medium", "high", "highest", "medium"):
            torch.set_float32_matmul_precision(precision)
            tricycle.set_float32_matmul_precision(precision)
            assert tricycle.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
            np.testing.assert_array_equal((x @ x.T).numpy(), before)  # the CPU's: float32
    finally:
        torch.set_float32_matmul_precision("highest")
        tricycle.set_float32_matmul_precision("highest")
    assert tricycle.get_float32_matmul_precision() == "highest"
    with pytest.raises(ValueError, match=r"^set_float32_matmul_precision: precision must be "
                       r"'highest', 'high' or 'medium' \(torch's\), got 'HIGH'$"):  # fmt: skip
        tricycle.set_float32_matmul_precision("HIGH")


def test_ddp_require_backward_grad_sync_as_torch(world_of_one):
    torch = pytest.importorskip("torch")
    import tricycle.distributed  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    torch.distributed.init_process_group("gloo")
    tricycle.distributed.init_process_group("gloo")
    try:
        theirs = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
        ours = tricycle.distributed.DistributedDataParallel(nn.Linear(3, 2))
        seen = []
        for model in (theirs, ours):
            flags = [model.require_backward_grad_sync]  # True
            model.require_backward_grad_sync = False  # train_gpt2.py's micro-steps but the last
            flags.append(model.require_backward_grad_sync)
            model.require_backward_grad_sync = True
            with model.no_sync():
                flags.append(model.require_backward_grad_sync)
            flags.append(model.require_backward_grad_sync)
            seen.append(flags)
        assert seen[0] == seen[1] == [True, False, False, True]
        assert ours._reducer.syncing  # what the flag sets (2 ranks: test_torch_distributed.py)
        with pytest.raises(TypeError, match=r"^DistributedDataParallel: require_backward_grad_sync "
                           r"must be True or False, got 0$"):  # fmt: skip
            ours.require_backward_grad_sync = 0
    finally:
        torch.distributed.destroy_process_group()
        tricycle.distributed.destroy_process_group()
