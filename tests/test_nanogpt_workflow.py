"""nanoGPT's whole workflow (github.com/karpathy/nanoGPT), run on tricycle with ``torch``
replaced by ``tricycle`` in its scripts' text (docs/pytorch.md's promise; the method of
tests/test_karpathy_lectures.py and tests/test_build_nanogpt.py).

The scripts are Karpathy's, written into a directory laid out as the repository and run there
as ``python <script> <arguments>`` would run them (as ``__main__``, with ``sys.argv`` as a user
types it, so ``configurator.py`` reads the config file and the ``--key=value`` overrides):
``data/shakespeare_char/prepare.py`` on a slice of ``tinyshakespeare.txt`` as its
``input.txt`` (present, so its download never runs; the test skips without the file), then
``train.py config/train_shakespeare_char.py --device=cpu --compile=False ...`` with the model
shrunk from the command line: its ``np.memmap`` ``get_batch``, ``meta.pkl``'s vocabulary,
``estimate_loss`` under ``@torch.no_grad()``, ``get_lr``'s warm-up and cosine, the disabled
``torch.cuda.amp.GradScaler`` (``enabled=(dtype == 'float16')`` on a machine without CUDA),
``nullcontext`` as ``ctx``, ``clip_grad_norm_``, ``configure_optimizers``, and the checkpoint
``ckpt.pt`` (``model_args``, ``iter_num``, ``best_val_loss``, ``config``, the optimizer's
state) that ``--init_from=resume`` continues from; the same under DDP in a world of one (CPU
gloo, torchrun's variables); then ``sample.py`` from the checkpoint through ``meta.pkl``'s
decoder, and ``bench.py --real_data=False``. ``model.py`` is nanoGPT's under torch
(tests/torch_nanogpt.py) and its port under tricycle (the text of tests/test_port_nanogpt.py
up to its tests: a Linear's ``weights`` and the tied head are the documented exception).
Neither copy holds ``from_pretrained`` (GPT-2's download), so the ``gpt2*`` paths of
``train.py`` and ``sample.py`` are not run.

A line that differs from Karpathy's ends in ``# port:`` and says why: the CPU in place of
``cuda:N``, sizes shrunk, and under tricycle alone the import of ``DistributedDataParallel``
(tricycle has no ``tricycle.nn.parallel``). Both libraries must learn (the losses fall), print
the same lines numbers aside, write a checkpoint that resumes at its step, and sample text of
the corpus's characters.
"""
# ruff: noqa: E501, W291, W293

import contextlib
import io
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import DATA_DIR
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_examples_d import world_of_one as world_of_one_fixture

world_of_one = world_of_one_fixture  # torchrun's variables for a world of one (a fixture)

# torch.cuda.amp.GradScaler is deprecated in torch, and disabled without CUDA in both libraries
pytestmark = [
    pytest.mark.filterwarnings("ignore:`torch.cuda.amp.:FutureWarning"),
    pytest.mark.filterwarnings("ignore:.*GradScaler.*(CUDA|cuda):UserWarning"),
]

# data/shakespeare_char/prepare.py
PREPARE = r'''"""
Prepare the Shakespeare dataset for character-level language modeling.
So instead of encoding with GPT-2 BPE tokens, we just map characters to ints.
Will save train.bin, val.bin containing the ids, and meta.pkl containing the
encoder and decoder and some other related info.
"""
import os
import pickle
import requests
import numpy as np

# download the tiny shakespeare dataset
input_file_path = os.path.join(os.path.dirname(__file__), 'input.txt')
if not os.path.exists(input_file_path):
    data_url = 'https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt'
    with open(input_file_path, 'w') as f:
        f.write(requests.get(data_url).text)

with open(input_file_path, 'r') as f:
    data = f.read()
print(f"length of dataset in characters: {len(data):,}")

# get all the unique characters that occur in this text
chars = sorted(list(set(data)))
vocab_size = len(chars)
print("all the unique characters:", ''.join(chars))
print(f"vocab size: {vocab_size:,}")

# create a mapping from characters to integers
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
def encode(s):
    return [stoi[c] for c in s] # encoder: take a string, output a list of integers
def decode(l):
    return ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string

# create the train and test splits
n = len(data)
train_data = data[:int(n*0.9)]
val_data = data[int(n*0.9):]

# encode both to integers
train_ids = encode(train_data)
val_ids = encode(val_data)
print(f"train has {len(train_ids):,} tokens")
print(f"val has {len(val_ids):,} tokens")

# export to bin files
train_ids = np.array(train_ids, dtype=np.uint16)
val_ids = np.array(val_ids, dtype=np.uint16)
train_ids.tofile(os.path.join(os.path.dirname(__file__), 'train.bin'))
val_ids.tofile(os.path.join(os.path.dirname(__file__), 'val.bin'))

# save the meta information as well, to help us encode/decode later
meta = {
    'vocab_size': vocab_size,
    'itos': itos,
    'stoi': stoi,
}
with open(os.path.join(os.path.dirname(__file__), 'meta.pkl'), 'wb') as f:
    pickle.dump(meta, f)

# length of dataset in characters:  1115394
# all the unique characters:
#  !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz
# vocab size: 65
# train has 1003854 tokens
# val has 111540 tokens
'''

# configurator.py
CONFIGURATOR = r'''"""
Poor Man's Configurator. Probably a terrible idea. Example usage:
$ python train.py config/override_file.py --batch_size=32
this will first run config/override_file.py, then override batch_size to 32

The code in this file will be run as follows from e.g. train.py:
>>> exec(open('configurator.py').read())

So it's not a Python module, it's just shuttling this code away from train.py
The code in this script then overrides the globals()

I know people are not going to love this, I just really dislike configuration
complexity and having to prepend config. to every single variable. If someone
comes up with a better simple Python solution I am all ears.
"""

import sys
from ast import literal_eval

for arg in sys.argv[1:]:
    if '=' not in arg:
        # assume it's the name of a config file
        assert not arg.startswith('--')
        config_file = arg
        print(f"Overriding config with {config_file}:")
        with open(config_file) as f:
            print(f.read())
        exec(open(config_file).read())
    else:
        # assume it's a --key=value argument
        assert arg.startswith('--')
        key, val = arg.split('=')
        key = key[2:]
        if key in globals():
            try:
                # attempt to eval it it (e.g. if bool, number, or etc)
                attempt = literal_eval(val)
            except (SyntaxError, ValueError):
                # if that goes wrong, just use the string
                attempt = val
            # ensure the types match ok
            assert type(attempt) == type(globals()[key])
            # cross fingers
            print(f"Overriding: {key} = {attempt}")
            globals()[key] = attempt
        else:
            raise ValueError(f"Unknown config key: {key}")
'''

# config/train_shakespeare_char.py
TRAIN_SHAKESPEARE_CHAR = r"""# train a miniature character-level shakespeare model
# good for debugging and playing on macbooks and such

out_dir = 'out-shakespeare-char'
eval_interval = 250 # keep frequent because we'll overfit
eval_iters = 200
log_interval = 10 # don't print too too often

# we expect to overfit on this small dataset, so only save when val improves
always_save_checkpoint = False

wandb_log = False # override via command line if you like
wandb_project = 'shakespeare-char'
wandb_run_name = 'mini-gpt'

dataset = 'shakespeare_char'
gradient_accumulation_steps = 1
batch_size = 64
block_size = 256 # context of up to 256 previous characters

# baby GPT model :)
n_layer = 6
n_head = 6
n_embd = 384
dropout = 0.2

learning_rate = 1e-3 # with baby networks can afford to go a bit higher
max_iters = 5000
lr_decay_iters = 5000 # make equal to max_iters usually
min_lr = 1e-4 # learning_rate / 10 usually
beta2 = 0.99 # make a bit bigger because number of tokens per iter is small

warmup_iters = 100 # not super necessary potentially

# on macbook also add
# device = 'cpu'  # run on cpu only
# compile = False # do not torch compile the model
"""

# train.py
TRAIN = r'''"""
This training script can be run both on a single gpu in debug mode,
and also in a larger training run with distributed data parallel (ddp).

To run on a single GPU, example:
$ python train.py --batch_size=32 --compile=False

To run with DDP on 4 gpus on 1 node, example:
$ torchrun --standalone --nproc_per_node=4 train.py

To run with DDP on 4 gpus across 2 nodes, example:
- Run on the first (master) node with example IP 123.456.123.456:
$ torchrun --nproc_per_node=8 --nnodes=2 --node_rank=0 --master_addr=123.456.123.456 --master_port=1234 train.py
- Run on the worker node:
$ torchrun --nproc_per_node=8 --nnodes=2 --node_rank=1 --master_addr=123.456.123.456 --master_port=1234 train.py
(If your cluster does not have Infiniband interconnect prepend NCCL_IB_DISABLE=1)
"""

import os
import time
import math
import pickle
from contextlib import nullcontext

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group

from model import GPTConfig, GPT

# -----------------------------------------------------------------------------
# default config values designed to train a gpt2 (124M) on OpenWebText
# I/O
out_dir = 'out'
eval_interval = 2000
log_interval = 1
eval_iters = 200
eval_only = False # if True, script exits right after the first eval
always_save_checkpoint = True # if True, always save a checkpoint after each eval
init_from = 'scratch' # 'scratch' or 'resume' or 'gpt2*'
# wandb logging
wandb_log = False # disabled by default
wandb_project = 'owt'
wandb_run_name = 'gpt2' # 'run' + str(time.time())
# data
dataset = 'openwebtext'
gradient_accumulation_steps = 5 * 8 # used to simulate larger batch sizes
batch_size = 12 # if gradient_accumulation_steps > 1, this is the micro-batch size
block_size = 1024
# model
n_layer = 12
n_head = 12
n_embd = 768
dropout = 0.0 # for pretraining 0 is good, for finetuning try 0.1+
bias = False # do we use bias inside LayerNorm and Linear layers?
# adamw optimizer
learning_rate = 6e-4 # max learning rate
max_iters = 600000 # total number of training iterations
weight_decay = 1e-1
beta1 = 0.9
beta2 = 0.95
grad_clip = 1.0 # clip gradients at this value, or disable if == 0.0
# learning rate decay settings
decay_lr = True # whether to decay the learning rate
warmup_iters = 2000 # how many steps to warm up for
lr_decay_iters = 600000 # should be ~= max_iters per Chinchilla
min_lr = 6e-5 # minimum learning rate, should be ~= learning_rate/10 per Chinchilla
# DDP settings
backend = 'nccl' # 'nccl', 'gloo', etc.
# system
device = 'cuda' # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1' etc., or try 'mps' on macbooks
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16' # 'float32', 'bfloat16', or 'float16', the latter will auto implement a GradScaler
compile = True # use PyTorch 2.0 to compile the model to be faster
# -----------------------------------------------------------------------------
config_keys = [k for k,v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]
exec(open('configurator.py').read()) # overrides from command line or config file
config = {k: globals()[k] for k in config_keys} # will be useful for logging
# -----------------------------------------------------------------------------

# various inits, derived attributes, I/O setup
ddp = int(os.environ.get('RANK', -1)) != -1 # is this a ddp run?
if ddp:
    init_process_group(backend=backend)
    ddp_rank = int(os.environ['RANK'])
    ddp_local_rank = int(os.environ['LOCAL_RANK'])
    ddp_world_size = int(os.environ['WORLD_SIZE'])
    device = 'cpu'  # port: the CPU (gloo), not f'cuda:{ddp_local_rank}'
    # torch.cuda.set_device(device)  # port: the CPU
    master_process = ddp_rank == 0 # this process will do logging, checkpointing etc.
    seed_offset = ddp_rank # each process gets a different seed
    # world_size number of processes will be training simultaneously, so we can scale
    # down the desired gradient accumulation iterations per process proportionally
    assert gradient_accumulation_steps % ddp_world_size == 0
    gradient_accumulation_steps //= ddp_world_size
else:
    # if not ddp, we are running on a single gpu, and one process
    master_process = True
    seed_offset = 0
    ddp_world_size = 1
tokens_per_iter = gradient_accumulation_steps * ddp_world_size * batch_size * block_size
print(f"tokens per iteration will be: {tokens_per_iter:,}")

if master_process:
    os.makedirs(out_dir, exist_ok=True)
torch.manual_seed(1337 + seed_offset)
torch.backends.cuda.matmul.allow_tf32 = True # allow tf32 on matmul
torch.backends.cudnn.allow_tf32 = True # allow tf32 on cudnn
device_type = 'cuda' if 'cuda' in device else 'cpu' # for later use in torch.autocast
# note: float16 data type will automatically use a GradScaler
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

# poor man's data loader
data_dir = os.path.join('data', dataset)
def get_batch(split):
    # We recreate np.memmap every batch to avoid a memory leak, as per
    # https://stackoverflow.com/questions/45132940/numpy-memmap-memory-usage-want-to-iterate-once/61472122#61472122
    if split == 'train':
        data = np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')
    else:
        data = np.memmap(os.path.join(data_dir, 'val.bin'), dtype=np.uint16, mode='r')
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy((data[i:i+block_size]).astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy((data[i+1:i+1+block_size]).astype(np.int64)) for i in ix])
    if device_type == 'cuda':
        # pin arrays x,y, which allows us to move them to GPU asynchronously (non_blocking=True)
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y

# init these up here, can override if init_from='resume' (i.e. from a checkpoint)
iter_num = 0
best_val_loss = 1e9

# attempt to derive vocab_size from the dataset
meta_path = os.path.join(data_dir, 'meta.pkl')
meta_vocab_size = None
if os.path.exists(meta_path):
    with open(meta_path, 'rb') as f:
        meta = pickle.load(f)
    meta_vocab_size = meta['vocab_size']
    print(f"found vocab_size = {meta_vocab_size} (inside {meta_path})")

# model init
model_args = dict(n_layer=n_layer, n_head=n_head, n_embd=n_embd, block_size=block_size,
                  bias=bias, vocab_size=None, dropout=dropout) # start with model_args from command line
if init_from == 'scratch':
    # init a new model from scratch
    print("Initializing a new model from scratch")
    # determine the vocab size we'll use for from-scratch training
    if meta_vocab_size is None:
        print("defaulting to vocab_size of GPT-2 to 50304 (50257 rounded up for efficiency)")
    model_args['vocab_size'] = meta_vocab_size if meta_vocab_size is not None else 50304
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
elif init_from == 'resume':
    print(f"Resuming training from {out_dir}")
    # resume training from a checkpoint.
    ckpt_path = os.path.join(out_dir, 'ckpt.pt')
    checkpoint = torch.load(ckpt_path, map_location=device)
    checkpoint_model_args = checkpoint['model_args']
    # force these config attributes to be equal otherwise we can't even resume training
    # the rest of the attributes (e.g. dropout) can stay as desired from command line
    for k in ['n_layer', 'n_head', 'n_embd', 'block_size', 'bias', 'vocab_size']:
        model_args[k] = checkpoint_model_args[k]
    # create the model
    gptconf = GPTConfig(**model_args)
    model = GPT(gptconf)
    state_dict = checkpoint['model']
    # fix the keys of the state dictionary :(
    # honestly no idea how checkpoints sometimes get this prefix, have to debug more
    unwanted_prefix = '_orig_mod.'
    for k,v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
    iter_num = checkpoint['iter_num']
    best_val_loss = checkpoint['best_val_loss']
elif init_from.startswith('gpt2'):
    print(f"Initializing from OpenAI GPT-2 weights: {init_from}")
    # initialize from OpenAI GPT-2 weights
    override_args = dict(dropout=dropout)
    model = GPT.from_pretrained(init_from, override_args)
    # read off the created config params, so we can store them into checkpoint correctly
    for k in ['n_layer', 'n_head', 'n_embd', 'block_size', 'bias', 'vocab_size']:
        model_args[k] = getattr(model.config, k)
# crop down the model block size if desired, using model surgery
if block_size < model.config.block_size:
    model.crop_block_size(block_size)
    model_args['block_size'] = block_size # so that the checkpoint will have the right value
model.to(device)

# initialize a GradScaler. If enabled=False scaler is a no-op
scaler = torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))

# optimizer
optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device_type)
if init_from == 'resume':
    optimizer.load_state_dict(checkpoint['optimizer'])
checkpoint = None # free up memory

# compile the model
if compile:
    print("compiling the model... (takes a ~minute)")
    unoptimized_model = model
    model = torch.compile(model) # requires PyTorch 2.0

# wrap model into DDP container
if ddp:
    model = DDP(model)  # port: a CPU module takes no device_ids (torch raises)

# helps estimate an arbitrarily accurate loss over either split using many batches
@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out

# learning rate decay scheduler (cosine with warmup)
def get_lr(it):
    # 1) linear warmup for warmup_iters steps
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    # 2) if it > lr_decay_iters, return min learning rate
    if it > lr_decay_iters:
        return min_lr
    # 3) in between, use cosine decay down to min learning rate
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    assert 0 <= decay_ratio <= 1
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio)) # coeff ranges 0..1
    return min_lr + coeff * (learning_rate - min_lr)

# logging
if wandb_log and master_process:
    import wandb
    wandb.init(project=wandb_project, name=wandb_run_name, config=config)

# training loop
X, Y = get_batch('train') # fetch the very first batch
t0 = time.time()
local_iter_num = 0 # number of iterations in the lifetime of this process
raw_model = model.module if ddp else model # unwrap DDP container if needed
running_mfu = -1.0
while True:

    # determine and set the learning rate for this iteration
    lr = get_lr(iter_num) if decay_lr else learning_rate
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr

    # evaluate the loss on train/val sets and write checkpoints
    if iter_num % eval_interval == 0 and master_process:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if wandb_log:
            wandb.log({
                "iter": iter_num,
                "train/loss": losses['train'],
                "val/loss": losses['val'],
                "lr": lr,
                "mfu": running_mfu*100, # convert to percentage
            })
        if losses['val'] < best_val_loss or always_save_checkpoint:
            best_val_loss = losses['val']
            if iter_num > 0:
                checkpoint = {
                    'model': raw_model.state_dict(),
                    'optimizer': optimizer.state_dict(),
                    'model_args': model_args,
                    'iter_num': iter_num,
                    'best_val_loss': best_val_loss,
                    'config': config,
                }
                print(f"saving checkpoint to {out_dir}")
                torch.save(checkpoint, os.path.join(out_dir, 'ckpt.pt'))
    if iter_num == 0 and eval_only:
        break

    # forward backward update, with optional gradient accumulation to simulate larger batch size
    # and using the GradScaler if data type is float16
    for micro_step in range(gradient_accumulation_steps):
        if ddp:
            # in DDP training we only need to sync gradients at the last micro step.
            # the official way to do this is with model.no_sync() context manager, but
            # I really dislike that this bloats the code and forces us to repeat code
            # looking at the source of that context manager, it just toggles this variable
            model.require_backward_grad_sync = (micro_step == gradient_accumulation_steps - 1)
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps # scale the loss to account for gradient accumulation
        # immediately async prefetch next batch while model is doing the forward pass on the GPU
        X, Y = get_batch('train')
        # backward pass, with gradient scaling if training in fp16
        scaler.scale(loss).backward()
    # clip the gradient
    if grad_clip != 0.0:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    # step the optimizer and scaler if training in fp16
    scaler.step(optimizer)
    scaler.update()
    # flush the gradients as soon as we can, no need for this memory anymore
    optimizer.zero_grad(set_to_none=True)

    # timing and logging
    t1 = time.time()
    dt = t1 - t0
    t0 = t1
    if iter_num % log_interval == 0 and master_process:
        # get loss as float. note: this is a CPU-GPU sync point
        # scale up to undo the division above, approximating the true total loss (exact would have been a sum)
        lossf = loss.item() * gradient_accumulation_steps
        if local_iter_num >= 5: # let the training loop settle a bit
            mfu = raw_model.estimate_mfu(batch_size * gradient_accumulation_steps, dt)
            running_mfu = mfu if running_mfu == -1.0 else 0.9*running_mfu + 0.1*mfu
        print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")
    iter_num += 1
    local_iter_num += 1

    # termination conditions
    if iter_num > max_iters:
        break

if ddp:
    destroy_process_group()
'''

# sample.py
SAMPLE = r'''"""
Sample from a trained model
"""
import os
import pickle
from contextlib import nullcontext
import torch
import tiktoken
from model import GPTConfig, GPT

# -----------------------------------------------------------------------------
init_from = 'resume' # either 'resume' (from an out_dir) or a gpt2 variant (e.g. 'gpt2-xl')
out_dir = 'out' # ignored if init_from is not 'resume'
start = "\n" # or "<|endoftext|>" or etc. Can also specify a file, use as: "FILE:prompt.txt"
num_samples = 10 # number of samples to draw
max_new_tokens = 500 # number of tokens generated in each sample
temperature = 0.8 # 1.0 = no change, < 1.0 = less random, > 1.0 = more random, in predictions
top_k = 200 # retain only the top_k most likely tokens, clamp others to have 0 probability
seed = 1337
device = 'cuda' # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1', etc.
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16' # 'float32' or 'bfloat16' or 'float16'
compile = False # use PyTorch 2.0 to compile the model to be faster
exec(open('configurator.py').read()) # overrides from command line or config file
# -----------------------------------------------------------------------------

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True # allow tf32 on matmul
torch.backends.cudnn.allow_tf32 = True # allow tf32 on cudnn
device_type = 'cuda' if 'cuda' in device else 'cpu' # for later use in torch.autocast
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

# model
if init_from == 'resume':
    # init from a model saved in a specific directory
    ckpt_path = os.path.join(out_dir, 'ckpt.pt')
    checkpoint = torch.load(ckpt_path, map_location=device)
    gptconf = GPTConfig(**checkpoint['model_args'])
    model = GPT(gptconf)
    state_dict = checkpoint['model']
    unwanted_prefix = '_orig_mod.'
    for k,v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)
elif init_from.startswith('gpt2'):
    # init from a given GPT-2 model
    model = GPT.from_pretrained(init_from, dict(dropout=0.0))

model.eval()
model.to(device)
if compile:
    model = torch.compile(model) # requires PyTorch 2.0 (optional)

# look for the meta pickle in case it is available in the dataset folder
load_meta = False
if init_from == 'resume' and 'config' in checkpoint and 'dataset' in checkpoint['config']: # older checkpoints might not have these...
    meta_path = os.path.join('data', checkpoint['config']['dataset'], 'meta.pkl')
    load_meta = os.path.exists(meta_path)
if load_meta:
    print(f"Loading meta from {meta_path}...")
    with open(meta_path, 'rb') as f:
        meta = pickle.load(f)
    # TODO want to make this more general to arbitrary encoder/decoder schemes
    stoi, itos = meta['stoi'], meta['itos']
    encode = lambda s: [stoi[c] for c in s]
    decode = lambda l: ''.join([itos[i] for i in l])
else:
    # ok let's assume gpt-2 encodings by default
    print("No meta.pkl found, assuming GPT-2 encodings...")
    enc = tiktoken.get_encoding("gpt2")
    encode = lambda s: enc.encode(s, allowed_special={"<|endoftext|>"})
    decode = lambda l: enc.decode(l)

# encode the beginning of the prompt
if start.startswith('FILE:'):
    with open(start[5:], 'r', encoding='utf-8') as f:
        start = f.read()
start_ids = encode(start)
x = (torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...])

# run generation
with torch.no_grad():
    with ctx:
        for k in range(num_samples):
            y = model.generate(x, max_new_tokens, temperature=temperature, top_k=top_k)
            print(decode(y[0].tolist()))
            print('---------------')
'''

# bench.py
BENCH = r'''"""
A much shorter version of train.py for benchmarking
"""
import os
from contextlib import nullcontext
import numpy as np
import time
import torch
from model import GPTConfig, GPT

# -----------------------------------------------------------------------------
batch_size = 12
block_size = 1024
bias = False
real_data = True
seed = 1337
device = 'cuda' # examples: 'cpu', 'cuda', 'cuda:0', 'cuda:1', etc.
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16' # 'float32' or 'bfloat16' or 'float16'
compile = True # use PyTorch 2.0 to compile the model to be faster
profile = False # use pytorch profiler, or just simple benchmarking?
exec(open('configurator.py').read()) # overrides from command line or config file
# -----------------------------------------------------------------------------

torch.manual_seed(seed)
torch.cuda.manual_seed(seed)
torch.backends.cuda.matmul.allow_tf32 = True # allow tf32 on matmul
torch.backends.cudnn.allow_tf32 = True # allow tf32 on cudnn
device_type = 'cuda' if 'cuda' in device else 'cpu' # for later use in torch.autocast
ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)

# data loading init
if real_data:
    dataset = 'openwebtext'
    data_dir = os.path.join('data', dataset)
    train_data = np.memmap(os.path.join(data_dir, 'train.bin'), dtype=np.uint16, mode='r')
    def get_batch(split):
        data = train_data # note ignore split in benchmarking script
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy((data[i:i+block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i+1:i+1+block_size]).astype(np.int64)) for i in ix])
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        return x, y
else:
    # alternatively, if fixed data is desired to not care about data loading
    x = torch.randint(50304, (batch_size, block_size), device=device)
    y = torch.randint(50304, (batch_size, block_size), device=device)
    get_batch = lambda split: (x, y)

# model init
gptconf = GPTConfig(
    block_size = block_size, # how far back does the model look? i.e. context size
    n_layer = 2, n_head = 2, n_embd = 32, # size of the model  # port: shrunk to run in a second
    dropout = 0, # for determinism
    bias = bias,
)
model = GPT(gptconf)
model.to(device)

optimizer = model.configure_optimizers(weight_decay=1e-2, learning_rate=1e-4, betas=(0.9, 0.95), device_type=device_type)

if compile:
    print("Compiling model...")
    model = torch.compile(model) # pytorch 2.0

if profile:
    # useful docs on pytorch profiler:
    # - tutorial https://pytorch.org/tutorials/intermediate/tensorboard_profiler_tutorial.html
    # - api https://pytorch.org/docs/stable/profiler.html#torch.profiler.profile
    wait, warmup, active = 5, 5, 5
    num_steps = wait + warmup + active
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
        schedule=torch.profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler('./bench_log'),
        record_shapes=False,
        profile_memory=False,
        with_stack=False, # incurs an additional overhead, disable if not needed
        with_flops=True,
        with_modules=False, # only for torchscript models atm
    ) as prof:

        X, Y = get_batch('train')
        for k in range(num_steps):
            with ctx:
                logits, loss = model(X, Y)
            X, Y = get_batch('train')
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            lossf = loss.item()
            print(f"{k}/{num_steps} loss: {lossf:.4f}")

            prof.step() # notify the profiler at end of each step

else:

    # simple benchmarking
    # torch.cuda.synchronize()  # port: no GPU (torch's CPU build raises here, as tricycle does)
    for stage, num_steps in enumerate([3, 5]): # burnin, then benchmark  # port: [10, 20], shrunk
        t0 = time.time()
        X, Y = get_batch('train')
        for k in range(num_steps):
            with ctx:
                logits, loss = model(X, Y)
            X, Y = get_batch('train')
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            lossf = loss.item()
            print(f"{k}/{num_steps} loss: {lossf:.4f}")
        # torch.cuda.synchronize()  # port: no GPU, as above
        t1 = time.time()
        dt = t1-t0
        mfu = model.estimate_mfu(batch_size * 1 * num_steps, dt)
        if stage == 1:
            print(f"time per iteration: {dt/num_steps*1000:.4f}ms, MFU: {mfu*100:.2f}%")
'''

# the lines that differ under tricycle alone (documented exceptions): (torch's line, tricycle's)
TRICYCLE_LINES = [
    ("from tricycle.nn.parallel import DistributedDataParallel as DDP",
     "from tricycle.distributed import DistributedDataParallel as DDP  # port: tricycle has no tricycle.nn.parallel (DDP lives above the layer catalogue)"),
]  # fmt: skip

TESTS = Path(__file__).resolve().parent


def model_text(library: str) -> str:
    """nanoGPT's model.py: the original under torch, its port (the text of
    tests/test_port_nanogpt.py up to its tests) under tricycle."""
    if library == "torch":
        return (TESTS / "torch_nanogpt.py").read_text()
    port = (TESTS / "test_port_nanogpt.py").read_text()
    return port[: port.index("# fmt: on")]


def repository(library: str) -> dict:
    """The files of nanoGPT's repository that the workflow reads, as ``library`` runs them."""
    files = {
        "model.py": model_text(library),
        "configurator.py": CONFIGURATOR,
        "config/train_shakespeare_char.py": TRAIN_SHAKESPEARE_CHAR,
        "data/shakespeare_char/prepare.py": PREPARE,
        "train.py": TRAIN,
        "sample.py": SAMPLE,
        "bench.py": BENCH,
    }
    if library == "tricycle":
        files = {name: text.replace("torch", "tricycle") if name != "model.py" else text
                 for name, text in files.items()}  # fmt: skip
        for name in ("train.py", "sample.py", "bench.py"):
            for line, ours in TRICYCLE_LINES:
                files[name] = files[name].replace(f"\n{line}\n", f"\n{ours}\n")
    return files


def shakespeare(characters: int = 30_000) -> str:
    path = DATA_DIR / "tinyshakespeare.txt"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path.read_text(encoding="utf-8")[:characters]


def run(files: dict, folder: Path, monkeypatch, commands) -> list[tuple[str, dict]]:
    """``files`` written in ``folder`` (the repository's layout) and each ``(script, *argv)`` of
    ``commands`` run there as ``python script argv...`` would: (what it printed, its globals)
    for each."""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "model", raising=False)  # the other library's model.py
    printed = []
    for script, *argv in commands:
        monkeypatch.setattr(sys, "argv", [script, *argv])
        out, path = io.StringIO(), str(folder / script)
        space = {"__name__": "__main__", "__file__": path}
        with contextlib.redirect_stdout(out):
            exec(compile(files[script], path, "exec"), space)
        printed.append((out.getvalue(), space))
    return printed


def both(commands, tmp_path, monkeypatch) -> dict:
    """The workflow's ``commands`` under torch (one thread: a shared machine), then under
    tricycle, each in its own copy of the repository with its own ``input.txt``:
    {library: [(printed, globals), ...]}."""
    torch = pytest.importorskip("torch")
    from threadpoolctl import threadpool_limits  # noqa: PLC0415

    text, runs = shakespeare(), {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for library in ("torch", "tricycle"):
            files = {**repository(library), "data/shakespeare_char/input.txt": text}
            (tmp_path / library).mkdir()
            with threadpool_limits(1, user_api="blas"):
                runs[library] = run(files, tmp_path / library, monkeypatch, commands)
    finally:
        torch.set_num_threads(threads)
    return runs


PREPARE_RUN = ("data/shakespeare_char/prepare.py",)
TRAIN_RUN = ("train.py", "config/train_shakespeare_char.py", "--device=cpu", "--compile=False",
             "--max_iters=30", "--eval_interval=15", "--eval_iters=4", "--log_interval=5",
             "--block_size=32", "--batch_size=8", "--n_layer=2", "--n_head=2", "--n_embd=32",
             "--warmup_iters=5", "--lr_decay_iters=30", "--learning_rate=1e-2",
             "--always_save_checkpoint=True")  # fmt: skip
RESUME_RUN = (*TRAIN_RUN, "--init_from=resume", "--max_iters=40", "--lr_decay_iters=40")
SAMPLE_RUN = ("sample.py", "--out_dir=out-shakespeare-char", "--device=cpu", "--num_samples=2",
              "--max_new_tokens=50", "--compile=False")  # fmt: skip
BENCH_RUN = ("bench.py", "--real_data=False", "--device=cpu", "--compile=False",
             "--batch_size=2", "--block_size=16")  # fmt: skip
EVALUATION = r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)"


def evaluations(printed: str) -> list[tuple[int, float, float]]:
    return [(int(s), float(t), float(v)) for s, t, v in re.findall(EVALUATION, printed)]


def learned(printed: str) -> list:
    """train.py's evaluations: the losses fell from the first to the last."""
    steps = evaluations(printed)
    assert steps[-1][1] < 0.85 * steps[0][1] and steps[-1][2] < 0.85 * steps[0][2], steps
    return steps


def test_prepare_train_resume_sample_and_bench(tmp_path, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    runs = both([PREPARE_RUN, TRAIN_RUN, RESUME_RUN, SAMPLE_RUN, BENCH_RUN], tmp_path, monkeypatch)
    theirs, ours = ([lines(printed.replace("torch", "tricycle")) for printed, _ in runs[library]]
                    for library in runs)  # the config file's text says torch  # fmt: skip
    assert ours[:3] + ours[4:] == theirs[:3] + theirs[4:]  # numbers aside (samples differ)
    text = shakespeare()
    for library, printed in runs.items():
        (prepared, _), (trained, space), (resumed, _), (sampled, _), (bench, _) = printed
        folder = tmp_path / library
        # prepare.py: the vocabulary of the slice, ids that decode back to it
        meta = pickle.loads((folder / "data/shakespeare_char/meta.pkl").read_bytes())
        assert meta["vocab_size"] == len(set(text)) and f"vocab size: {len(set(text))}" in prepared
        train = np.fromfile(folder / "data/shakespeare_char/train.bin", dtype=np.uint16)
        assert "".join(meta["itos"][i] for i in train[:100]) == text[:100]
        # train.py: learned; the checkpoint of its last evaluation, as torch.load reads it
        steps = learned(trained)
        assert [s for s, _, _ in steps] == [0, 15, 30], library
        assert numbers(r"iter (\d+): loss", trained) == [0, 5, 10, 15, 20, 25, 30], library
        load = space["torch" if library == "torch" else "tricycle"].load
        checkpoint = load(folder / "out-shakespeare-char" / "ckpt.pt", map_location="cpu")
        assert sorted(checkpoint) == sorted(
            ["model", "optimizer", "model_args", "iter_num", "best_val_loss", "config"]
        )
        resumed_at = evaluations(resumed)  # its evaluation at step 30 wrote the checkpoint again
        assert checkpoint["iter_num"] == 30
        assert f"{float(checkpoint['best_val_loss']):.4f}" == f"{resumed_at[0][2]:.4f}"
        sizes = dict(n_layer=2, n_head=2, n_embd=32, block_size=32, vocab_size=meta["vocab_size"])
        assert checkpoint["model_args"] == dict(**sizes, bias=False, dropout=0.2)
        config = checkpoint["config"]  # the resumed run's
        assert config["dataset"] == "shakespeare_char" and config["max_iters"] == 40
        # init_from='resume': from the checkpoint's step, with its trained model
        assert "Resuming training from out-shakespeare-char" in resumed
        assert [s for s, _, _ in resumed_at] == [30]
        assert numbers(r"iter (\d+): loss", resumed) == [30, 35, 40]
        assert resumed_at[0][2] < 0.85 * steps[0][2], library  # not a new model's loss
        # sample.py: meta.pkl's decoder, 2 samples of 50 characters after the prompt "\n"
        assert "Loading meta from data/shakespeare_char/meta.pkl..." in sampled
        samples = sampled.split("meta.pkl...\n", 1)[1].split("\n---------------\n")
        assert len(samples) == 3 and samples[2] == "", samples
        assert all(len(s) == 51 and set(s) <= set(text) for s in samples[:2]), samples
        # bench.py: a step's loss near ln(50304) at first, then falling
        losses = numbers(r"\d+/\d+ loss: ([\d.]+)", bench)
        assert len(losses) == 8 and abs(losses[0] - np.log(50304)) < 0.1, losses
        assert losses[-1] < losses[0], losses
        assert "time per iteration" in bench


def test_train_under_ddp_in_a_world_of_one(world_of_one, tmp_path, monkeypatch):
    runs = both([PREPARE_RUN, (*TRAIN_RUN, "--backend=gloo")], tmp_path, monkeypatch)
    theirs, ours = ([lines(printed.replace("torch", "tricycle")) for printed, _ in runs[library]]
                    for library in runs)  # fmt: skip
    assert ours == theirs
    for library, (_, (trained, space)) in runs.items():
        assert space["ddp"] and space["ddp_world_size"] == 1 and space["master_process"], library
        assert space["raw_model"] is space["model"].module, library
        assert [s for s, _, _ in learned(trained)] == [0, 15, 30], library
        assert (tmp_path / library / "out-shakespeare-char" / "ckpt.pt").is_file(), library


def test_torch_cuda_amp_and_is_bf16_supported_as_torch_without_a_gpu():
    """train.py's ``torch.cuda.amp.GradScaler(enabled=(dtype == 'float16'))`` and its question
    ``torch.cuda.is_bf16_supported()``: on a machine without CUDA, torch's scaler warns and
    disables itself (its steps pass through) and bfloat16 is not supported; so tricycle's."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    if torch.cuda.is_available() or tricycle.cuda.is_available():
        pytest.skip("a machine without a GPU")
    assert tricycle.cuda.is_bf16_supported() is torch.cuda.is_bf16_supported() is False
    from tricycle.cuda.amp import GradScaler, autocast  # noqa: PLC0415 - torch's older import

    assert (GradScaler, autocast) == (tricycle.cuda.amp.GradScaler, tricycle.cuda.amp.autocast)
    with pytest.raises(TypeError, match="is_bf16_supported"):
        tricycle.cuda.is_bf16_supported(including_emulation="yes")
    weights = []
    for lib in (torch, tricycle):
        with pytest.warns(UserWarning, match="CUDA"):
            scaler = lib.cuda.amp.GradScaler(init_scale=1024.0, enabled=True)
        assert not scaler.is_enabled() and isinstance(scaler, lib.amp.GradScaler)
        weight = lib.nn.Parameter(lib.ones(3))
        optimizer = lib.optim.SGD([weight], lr=0.5)
        loss = (weight * lib.tensor([1.0, 2.0, 3.0])).sum()
        assert scaler.scale(loss) is loss  # no scale: the gradient below is the loss's own
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        scaler.step(optimizer)
        scaler.update()
        weights.append(weight.detach().numpy().copy())
        with pytest.warns(UserWarning, match="CUDA"), lib.cuda.amp.autocast():
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype == lib.float32  # disabled
    np.testing.assert_allclose(weights[0], weights[1])
    np.testing.assert_allclose(weights[1], [0.5, 0.0, -0.5])  # 1 - 0.5 * (1, 2, 3)
    for make in (tricycle.cuda.amp.GradScaler, tricycle.cuda.amp.autocast, tricycle.amp.GradScaler):
        with pytest.warns(UserWarning, match="CUDA") as said:
            make()  # the warning names this line, the user's, as torch's
        assert [w.filename for w in said] == [__file__], make
