"""Examples of github.com/pytorch/examples, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; tests/test_torch_scripts.py's method):

- distributed/ddp-tutorial-series: ``single_gpu.py``'s Trainer (``DataLoader`` with
  ``shuffle``, ``F.cross_entropy`` on class probabilities, ``torch.save`` of the state_dict),
  and ``multigpu_torchrun.py``'s, in a process group of one (``init_process_group``,
  ``DistributedSampler`` with ``set_epoch``, ``DistributedDataParallel``, its ``module``'s
  snapshot) run twice as torchrun would restart it: the second run resumes from the snapshot;
- distributed/minGPT-ddp: ``model.py``'s GPT (``nn.MultiheadAttention`` and the other layers
  built with torch's ``device=``/``dtype=`` keywords, a ``register_buffer`` mask, a
  ``pos_emb`` ``nn.Parameter``, ``apply(_init_weights)``, ``create_optimizer``'s AdamW groups
  by parameter name), ``trainer.py``'s Trainer (DDP, ``DistributedSampler``,
  ``set_grad_enabled`` with ``amp.autocast``, ``zero_grad(set_to_none=True)``,
  ``clip_grad_norm_``, its dataclass snapshot through ``fsspec``), ``char_dataset.py`` as it
  is, and ``main.py``'s setup (``get_default_backend_for_device``, ``random_split``) in a
  group of one, run twice (the second resumes), then ``GPT.generate`` from the snapshot;
- mnist_hogwild: ``Net`` (``Conv2d``, ``Dropout2d``, ``max_pool2d``, ``F.dropout``,
  ``log_softmax``), ``train.py``'s SGD with momentum and ``nll_loss``, and its test. Hogwild
  itself is not here: tricycle cannot share a model's memory between processes
  (``share_memory()`` says so), so both libraries run each rank's training in turn in one
  process, which is what the ``# port:`` lines say.

Each example's files are its own text, with argparse's and hydra's values as constants, sizes
and epochs shrunk, the CPU in place of ``cuda:N`` and synthetic data in place of MNIST and
the downloaded text; every changed line ends in a ``# port:`` comment that says why. The test
writes the files in a temporary directory and runs them there under torch (skipped without
it), then with ``torch`` replaced by ``tricycle``, and checks that both learn (the losses
fall, the accuracy is far above chance) and print the same lines, numbers aside. tricycle has
no ``tricycle.nn.parallel`` (``DistributedDataParallel`` lives in the parallel layer, above the
layer catalogue: tests/test_torch_scripts_more.py's reason): the test supplies that one import.
The fixes the examples needed are tested against torch at the end.
"""

import math
import socket
import sys
import types

import numpy as np
import pytest

from tests.test_torch_examples_b import both, lines, numbers

# distributed/ddp-tutorial-series/datautils.py: its data as a learnable task
DATAUTILS = r"""
import numpy as np  # port: a learnable synthetic task (see __init__)
import torch
from torch.utils.data import Dataset

class MyTrainDataset(Dataset):
    def __init__(self, size):
        self.size = size
        rng = np.random.default_rng(0)  # port: the same data under both libraries
        x = rng.random((size, 20), dtype=np.float32)  # port: torch.rand(20)'s place
        p = 1 / (1 + np.exp(-40 * (x[:, :10].mean(1) - x[:, 10:].mean(1))))  # port: a rule to learn
        y = np.stack([p, 1 - p], 1).astype(np.float32)  # port: class probabilities, as rand(1) was
        self.data = [(torch.from_numpy(x[i]), torch.from_numpy(y[i])) for i in range(size)]  # port

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.data[index]
"""  # noqa: E501

# distributed/ddp-tutorial-series/single_gpu.py
SINGLE_GPU = r"""
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from datautils import MyTrainDataset


class Trainer:
    def __init__(
        self,
        model: torch.nn.Module,
        train_data: DataLoader,
        optimizer: torch.optim.Optimizer,
        gpu_id: int,
        save_every: int,
    ) -> None:
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        losses.append(loss.item())  # port: the test reads the losses

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        for source, targets in self.train_data:
            source = source.to(self.gpu_id)
            targets = targets.to(self.gpu_id)
            self._run_batch(source, targets)

    def _save_checkpoint(self, epoch):
        ckp = self.model.state_dict()
        PATH = "checkpoint.pt"
        torch.save(ckp, PATH)
        print(f"Epoch {epoch} | Training checkpoint saved at {PATH}")

    def train(self, max_epochs: int):
        for epoch in range(max_epochs):
            self._run_epoch(epoch)
            if epoch % self.save_every == 0:
                self._save_checkpoint(epoch)


def load_train_objs():
    train_set = MyTrainDataset(512)  # load your dataset  # port: 2048 shrunk
    model = torch.nn.Linear(20, 2)  # load your model  # port: 2 classes: with 1, cross_entropy is 0 whatever the weights
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)  # port: lr 1e-3 learns nothing in a few epochs
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=True,
        shuffle=True
    )


def main(device, total_epochs, save_every, batch_size):
    dataset, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, device, save_every)
    trainer.train(total_epochs)


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description='simple distributed training job')
    parser.add_argument('total_epochs', type=int, help='Total epochs to train the model')
    parser.add_argument('save_every', type=int, help='How often to save a snapshot')
    parser.add_argument('--batch_size', default=32, type=int, help='Input batch size on each device (default: 32)')
    args = parser.parse_args(['4', '2'])  # port: argv (4 epochs, a checkpoint every 2)
    losses = []  # port: the test reads the losses
    torch.manual_seed(0)  # port: the same weights and shuffles each run

    device = "cpu"  # shorthand for cuda:0  # port: the CPU (0 is cuda:0)
    main(device, args.total_epochs, args.save_every, args.batch_size)
"""  # noqa: E501

# distributed/ddp-tutorial-series/multigpu_torchrun.py
MULTIGPU_TORCHRUN = r"""
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from datautils import MyTrainDataset

# import torch.multiprocessing as mp  # port: tricycle lacks torch.multiprocessing (unused here)
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.distributed import init_process_group, destroy_process_group
import os


def ddp_setup():
    # torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))  # port: the CPU
    init_process_group(backend="gloo")  # port: the CPU

class Trainer:
    def __init__(
        self,
        model: torch.nn.Module,
        train_data: DataLoader,
        optimizer: torch.optim.Optimizer,
        save_every: int,
        snapshot_path: str,
    ) -> None:
        self.gpu_id = int(os.environ["LOCAL_RANK"])
        self.model = model.to("cpu")  # port: the CPU (0 is cuda:0)
        self.train_data = train_data
        self.optimizer = optimizer
        self.save_every = save_every
        self.epochs_run = 0
        self.snapshot_path = snapshot_path
        if os.path.exists(snapshot_path):
            print("Loading snapshot")
            self._load_snapshot(snapshot_path)

        self.model = DDP(self.model)  # port: a CPU module takes no device_ids

    def _load_snapshot(self, snapshot_path):
        loc = "cpu"  # port: the CPU
        snapshot = torch.load(snapshot_path, map_location=loc)
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        output = self.model(source)
        loss = F.cross_entropy(output, targets)
        loss.backward()
        self.optimizer.step()
        losses.append(loss.item())  # port: the test reads the losses

    def _run_epoch(self, epoch):
        b_sz = len(next(iter(self.train_data))[0])
        print(f"[GPU{self.gpu_id}] Epoch {epoch} | Batchsize: {b_sz} | Steps: {len(self.train_data)}")
        self.train_data.sampler.set_epoch(epoch)
        for source, targets in self.train_data:
            source = source.to("cpu")  # port: the CPU
            targets = targets.to("cpu")  # port: the CPU
            self._run_batch(source, targets)

    def _save_snapshot(self, epoch):
        snapshot = {
            "MODEL_STATE": self.model.module.state_dict(),
            "EPOCHS_RUN": epoch,
        }
        torch.save(snapshot, self.snapshot_path)
        print(f"Epoch {epoch} | Training snapshot saved at {self.snapshot_path}")

    def train(self, max_epochs: int):
        for epoch in range(self.epochs_run, max_epochs):
            self._run_epoch(epoch)
            if self.gpu_id == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)


def load_train_objs():
    train_set = MyTrainDataset(512)  # load your dataset  # port: 2048 shrunk
    model = torch.nn.Linear(20, 2)  # load your model  # port: 2 classes: with 1, cross_entropy is 0 whatever the weights
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)  # port: lr 1e-3 learns nothing in a few epochs
    return train_set, model, optimizer


def prepare_dataloader(dataset: Dataset, batch_size: int):
    return DataLoader(
        dataset,
        batch_size=batch_size,
        pin_memory=True,
        shuffle=False,
        sampler=DistributedSampler(dataset)
    )


def main(save_every: int, total_epochs: int, batch_size: int, snapshot_path: str = "snapshot.pt"):
    ddp_setup()
    dataset, model, optimizer = load_train_objs()
    train_data = prepare_dataloader(dataset, batch_size)
    trainer = Trainer(model, train_data, optimizer, save_every, snapshot_path)
    trainer.train(total_epochs)
    destroy_process_group()


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description='simple distributed training job')
    parser.add_argument('total_epochs', type=int, help='Total epochs to train the model')
    parser.add_argument('save_every', type=int, help='How often to save a snapshot')
    parser.add_argument('--batch_size', default=32, type=int, help='Input batch size on each device (default: 32)')
    args = parser.parse_args(['3', '2'])  # port: argv (3 epochs, a snapshot every 2)
    losses = []  # port: the test reads the losses
    torch.manual_seed(0)  # port: the same weights each run

    main(args.save_every, args.total_epochs, args.batch_size)
    args = parser.parse_args(['5', '2'])  # port: torchrun's restart, to 5 epochs: resumes from the snapshot
    os.environ["MASTER_PORT"] = os.environ["RESTART_PORT"]  # port: the restart's rendezvous, fresh
    main(args.save_every, args.total_epochs, args.batch_size)  # port: the restart
"""  # noqa: E501

# distributed/minGPT-ddp/mingpt/model.py
MINGPT_MODEL = r'''
"""
Full definition of a GPT Language Model, all of it in this single file.
Adapted from https://github.com/karpathy/minGPT/blob/master/mingpt/model.py
"""

from dataclasses import dataclass
import math

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    model_type: str = 'gpt2'
    # model configurations
    n_layer: int = None
    n_head: int = None
    n_embd: int =  None
    # openai's values for gpt2
    vocab_size: int = 50257
    block_size: int = 1024
    # dropout hyperparameters
    embd_pdrop: float = 0.1
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1

@dataclass
class OptimizerConfig:
    learning_rate: float = 3e-4
    weight_decay: float = 0.1

class MultiheadAttentionLayer(nn.Module):
    """
    A multi-head masked self-attention layer with a projection at the end.
    """

    def __init__(self, config, device="cpu", dtype=torch.float32):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, device=device, dtype=dtype)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.attn = torch.nn.MultiheadAttention(
            embed_dim=config.n_embd,
            num_heads=config.n_head,
            dropout=config.attn_pdrop,
            batch_first=True,
            device=device,
            dtype=dtype
        )

    def forward(self, x):
        _, seq_size, _ = x.size()
        y = self.attn(x, x, x, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0]
        y = self.resid_drop(self.c_proj(y))
        return y

class Block(nn.Module):
    """ an unassuming Transformer block """
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = MultiheadAttentionLayer(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.resid_pdrop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x

class EmbeddingStem(nn.Module):
    def __init__(self, config: GPTConfig, device="cpu", dtype=torch.float32):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd, device=device, dtype=dtype)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd, device=device, dtype=dtype))
        self.drop = nn.Dropout(config.embd_pdrop)
        self.block_size = config.block_size

    def reset_parameters(self):
        self.tok_emb.reset_parameters()

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"

        token_embeddings = self.tok_emb(idx)  # each index maps to a (learnable) embedding vector
        position_embeddings = self.pos_emb[:, :t, :]  # each position maps to a (learnable) position vector
        return self.drop(token_embeddings + position_embeddings)

class GPT(nn.Module):
    """ GPT Language Model """

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.block_size = config.block_size
        config = self._set_model_config(config)

        # input embedding stem
        self.emb_stem = EmbeddingStem(config)
        # transformer
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        # decoder head
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        # init all weights, and apply a special scaled init to the residual projections, per GPT-2 paper
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith(('c_proj.weight', 'c_proj.weights')):  # port: tricycle's name
                p.data.normal_(mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

        # report number of parameters (note we don't count the decoder parameters in lm_head)
        n_params = sum(p.numel() for p in self.blocks.parameters())
        print("number of parameters: %.2fM" % (n_params/1e6,))

    def _set_model_config(self, config):
        type_given = config.model_type is not None
        params_given = all([config.n_layer is not None, config.n_head is not None, config.n_embd is not None])
        # assert type_given ^ params_given # exactly one of these (XOR)
        if type_given and not params_given:
            # translate from model_type to detailed configuration
            config.__dict__.update({
                # names follow the huggingface naming conventions
                # GPT-1
                'openai-gpt':   dict(n_layer=12, n_head=12, n_embd=768),  # 117M params
                # GPT-2 configs
                'gpt2':         dict(n_layer=12, n_head=12, n_embd=768),  # 124M params
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
        return config

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.get_parameter(next(n for n, _ in module.named_parameters() if n != "bias")).data.normal_(mean=0.0, std=0.02)  # port: tricycle names it weights
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            weight, bias = module.parameters()  # port: tricycle names them gamma, beta
            bias.data.zero_()  # port: by position
            weight.data.fill_(1.0)  # port: by position

    def forward(self, idx, targets=None):
        x = self.emb_stem(idx)
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x)

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


def create_optimizer(model: torch.nn.Module, opt_config: OptimizerConfig):
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
    for mn, m in model.named_modules():
        for pn, p in m.named_parameters():
            fpn = '%s.%s' % (mn, pn) if mn else pn # full param name
            # random note: because named_modules and named_parameters are recursive
            # we will see the same tensors p many many times. but doing it this way
            # allows us to know which parent module any tensor p belongs to...
            if pn.endswith('bias'):
                # all biases will not be decayed
                no_decay.add(fpn)
            elif pn.endswith(('weight', 'weights')) and isinstance(m, whitelist_weight_modules):  # port: tricycle's name
                # weights of whitelist modules will be weight decayed
                decay.add(fpn)
            elif pn.endswith('in_proj_weight'):
                # MHA projection layer
                decay.add(fpn)
            elif pn.endswith(('weight', 'weights', 'gamma', 'beta')) and isinstance(m, blacklist_weight_modules):  # port: tricycle's names
                # weights of blacklist modules will NOT be weight decayed
                no_decay.add(fpn)
            elif pn.endswith('pos_emb'):
                # positional embedding shouldn't be decayed
                no_decay.add(fpn)

    # validate that we considered every parameter
    param_dict = {pn: p for pn, p in model.named_parameters()}
    inter_params = decay & no_decay
    union_params = decay | no_decay
    assert len(inter_params) == 0, "parameters %s made it into both decay/no_decay sets!" % (str(inter_params), )
    assert len(param_dict.keys() - union_params) == 0, "parameters %s were not separated into either decay/no_decay set!" \
                                                % (str(param_dict.keys() - union_params), )

    # create the pytorch optimizer object
    optim_groups = [
        {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": opt_config.weight_decay},
        {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optim_groups, lr=opt_config.learning_rate, betas=(0.9, 0.95))
    return optimizer'''  # noqa: E501

# distributed/minGPT-ddp/mingpt/trainer.py
MINGPT_TRAINER = r'''
"""
Simple training loop; Boilerplate that could apply to any arbitrary neural network,
so nothing in this file really has anything to do with GPT specifically.
"""

from dataclasses import dataclass, asdict
from collections import OrderedDict
from typing import Optional, Any, Dict
import os

import torch
from torch.utils.data import Dataset, DataLoader
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

# import boto3  # port: not installed here (only s3:// snapshots use it)
from urllib.parse import urlparse
import fsspec
import io

@dataclass
class TrainerConfig:
    max_epochs: int = None
    batch_size: int = None
    data_loader_workers: int = None
    grad_norm_clip: float = None
    snapshot_path: Optional[str] = None
    save_every: int = None
    use_amp: bool = None

@dataclass
class Snapshot:
    model_state: 'OrderedDict[str, torch.Tensor]'
    optimizer_state: Dict[str, Any]
    finished_epoch: int

def upload_to_s3(obj, dst):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    dst = urlparse(dst, allow_fragments=False)
    boto3.client('s3').upload_fileobj(buffer, dst.netloc, dst.path.lstrip('/'))

class Trainer:

    def __init__(self, trainer_config: TrainerConfig, model, optimizer, train_dataset, test_dataset=None):
        self.config = trainer_config
        # set torchrun variables
        self.local_rank = int(os.environ["LOCAL_RANK"])
        self.global_rank = int(os.environ["RANK"])
        # set device
        self.acc = torch.accelerator.current_accelerator()
        self.device: torch.device = torch.device("cpu")  # port: the CPU (acc is None)
        self.device_type = self.device.type
        # data stuff
        self.train_dataset = train_dataset
        self.train_loader = self._prepare_dataloader(train_dataset)
        self.test_loader = self._prepare_dataloader(test_dataset) if test_dataset else None
        # initialize train states
        self.epochs_run = 0
        self.model = model.to("cpu")  # port: the CPU (0 is cuda:0)
        self.optimizer = optimizer
        self.save_every = self.config.save_every
        if self.config.use_amp:
            self.scaler = torch.amp.GradScaler(self.device_type)
        # load snapshot if available. only necessary on the first node.
        if self.config.snapshot_path is None:
            self.config.snapshot_path = "snapshot.pt"
        self._load_snapshot()
        # wrap with DDP. this step will synch model across all the processes.
        self.model = DDP(self.model)  # port: a CPU module takes no device_ids

    def _prepare_dataloader(self, dataset: Dataset):
        return DataLoader(
            dataset,
            batch_size=self.config.batch_size,
            pin_memory=True,
            shuffle=False,
            num_workers=self.config.data_loader_workers,
            sampler=DistributedSampler(dataset)
        )

    def _load_snapshot(self):
        try:
            snapshot = fsspec.open(self.config.snapshot_path)
            with snapshot as f:
                snapshot_data = torch.load(f, map_location="cpu")
        except FileNotFoundError:
            print("Snapshot not found. Training model from scratch")
            return

        snapshot = Snapshot(**snapshot_data)
        self.model.load_state_dict(snapshot.model_state)
        self.optimizer.load_state_dict(snapshot.optimizer_state)
        self.epochs_run = snapshot.finished_epoch
        print(f"Resuming training from snapshot at Epoch {self.epochs_run}")


    def _run_batch(self, source, targets, train: bool = True) -> float:
        with torch.set_grad_enabled(train), torch.amp.autocast(device_type=self.device_type, dtype=torch.float16, enabled=(self.config.use_amp)):
            _, loss = self.model(source, targets)

        if train:
            self.optimizer.zero_grad(set_to_none=True)
            if self.config.use_amp:
                self.scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.grad_norm_clip)
                self.optimizer.step()

        return loss.item()

    def _run_epoch(self, epoch: int, dataloader: DataLoader, train: bool = True):
        if train:
            dataloader.sampler.set_epoch(epoch)
        for iter, (source, targets) in enumerate(dataloader):
            step_type = "Train" if train else "Eval"
            source = source.to("cpu")  # port: the CPU
            targets = targets.to("cpu")  # port: the CPU
            batch_loss = self._run_batch(source, targets, train)
            if iter % 10 == 0:  # port: 100 shrunk
                print(f"[RANK{self.global_rank}] Epoch {epoch} | Iter {iter} | {step_type} Loss {batch_loss:.5f}")

    def _save_snapshot(self, epoch):
        # capture snapshot
        model = self.model
        raw_model = model.module if hasattr(model, "module") else model
        snapshot = Snapshot(
            model_state=raw_model.state_dict(),
            optimizer_state=self.optimizer.state_dict(),
            finished_epoch=epoch
        )
        # save snapshot
        snapshot = asdict(snapshot)
        if self.config.snapshot_path.startswith("s3://"):
            upload_to_s3(snapshot, self.config.snapshot_path)
        else:
            torch.save(snapshot, self.config.snapshot_path)

        print(f"Snapshot saved at epoch {epoch}")

    def train(self):
        for epoch in range(self.epochs_run, self.config.max_epochs):
            epoch += 1
            self._run_epoch(epoch, self.train_loader, train=True)
            if self.local_rank == 0 and epoch % self.save_every == 0:
                self._save_snapshot(epoch)
            # eval run
            if self.test_loader:
                self._run_epoch(epoch, self.test_loader, train=False)
'''  # noqa: E501

# distributed/minGPT-ddp/mingpt/char_dataset.py, as it is
MINGPT_CHAR_DATASET = r'''
import torch
from torch.utils.data import Dataset
import fsspec
from dataclasses import dataclass

"""
Adapted from https://github.com/karpathy/minGPT/blob/master/projects/chargpt/chargpt.py
"""

@dataclass
class DataConfig:
    path: str = None
    block_size: int = None
    train_split: float = None
    truncate: float = 1.0

class CharDataset(Dataset):

    def __init__(self, data_cfg: DataConfig): #data_path: str, block_size):
        data = fsspec.open(data_cfg.path).open().read().decode('utf-8')
        data = data[ : int(len(data) * data_cfg.truncate)]

        chars = sorted(list(set(data)))
        data_size, vocab_size = len(data), len(chars)
        print('Data has %d characters, %d unique.' % (data_size, vocab_size))

        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.block_size = data_cfg.block_size
        self.vocab_size = vocab_size
        self.data = data

    def __len__(self):
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        # grab a chunk of (block_size + 1) characters from the data
        chunk = self.data[idx:idx + self.block_size + 1]
        # encode every character to an integer
        dix = [self.stoi[s] for s in chunk]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y
'''  # noqa: E501

# distributed/minGPT-ddp/mingpt/main.py
MINGPT_MAIN = r"""
import os
import sys
import torch
from torch.utils.data import random_split
from torch.distributed import init_process_group, destroy_process_group
from model import GPT, GPTConfig, OptimizerConfig, create_optimizer
from trainer import Trainer, TrainerConfig
from char_dataset import CharDataset, DataConfig
# from omegaconf import DictConfig  # port: hydra's config as constants below
# import hydra  # port: hydra's config as constants below

def verify_min_gpu_count(min_gpus: int = 2) -> bool:
    has_gpu = torch.accelerator.is_available()
    gpu_count = torch.accelerator.device_count()
    return has_gpu and gpu_count >= min_gpus

def ddp_setup():
    acc = torch.accelerator.current_accelerator()
    rank = int(os.environ["LOCAL_RANK"])
    device: torch.device = torch.device("cpu")  # port: the CPU (acc is None)
    backend = torch.distributed.get_default_backend_for_device(device)
    init_process_group(backend=backend)
    # torch.accelerator.set_device_index(rank)  # port: the CPU

def get_train_objs(gpt_cfg: GPTConfig, opt_cfg: OptimizerConfig, data_cfg: DataConfig):
    dataset = CharDataset(data_cfg)
    train_len = int(len(dataset) * data_cfg.train_split)
    train_set, test_set = random_split(dataset, [train_len, len(dataset) - train_len])

    gpt_cfg.vocab_size = dataset.vocab_size
    gpt_cfg.block_size = dataset.block_size
    model = GPT(gpt_cfg)
    optimizer = create_optimizer(model, opt_cfg)

    return model, optimizer, train_set, test_set

def main(cfg):  # port: gpt2_train_cfg.yaml's values, shrunk, come from the test
    ddp_setup()

    gpt_cfg = GPTConfig(**cfg['gpt_config'])
    opt_cfg = OptimizerConfig(**cfg['optimizer_config'])
    data_cfg = DataConfig(**cfg['data_config'])
    trainer_cfg = TrainerConfig(**cfg['trainer_config'])

    model, optimizer, train_data, test_data = get_train_objs(gpt_cfg, opt_cfg, data_cfg)
    trainer = Trainer(trainer_cfg, model, optimizer, train_data, test_data)
    trainer.train()

    destroy_process_group()

if __name__ == "__main__":
    torch.manual_seed(0)  # port: the same weights and split each run
    main(CONFIG)  # port: no GPU check: one process on the CPU
    main(CONFIG)  # port: torchrun's restart: resumes from the snapshot
    model, _, _, _ = get_train_objs(GPTConfig(**CONFIG['gpt_config']), OptimizerConfig(**CONFIG['optimizer_config']), DataConfig(**CONFIG['data_config']))  # port: GPT.generate (main.py stops at training)
    model.load_state_dict(torch.load("gpt_snapshot.pt", map_location="cpu")["model_state"])  # port: the trained weights
    model.eval()  # port: as generate's docstring asks
    start = torch.zeros((2, 1), dtype=torch.long)  # port
    greedy = model.generate(start, 20)  # port
    sampled = model.generate(start, 20, temperature=0.8, do_sample=True, top_k=5)  # port
"""  # noqa: E501

# mnist_hogwild/main.py
HOGWILD_MAIN = r"""
from __future__ import print_function
import argparse
import numpy as np  # port: synthetic data in MNIST's place
import torch
import torch.nn as nn
import torch.nn.functional as F
# import torch.multiprocessing as mp  # port: tricycle lacks torch.multiprocessing (see below)
from torch.utils.data.sampler import Sampler
from torch.utils.data import TensorDataset  # port: synthetic data in MNIST's place
# from torchvision import datasets, transforms  # port: synthetic data in MNIST's place

from train import train, test

# Training settings
parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                    help='input batch size for training (default: 64)')
parser.add_argument('--test-batch-size', type=int, default=1000, metavar='N',
                    help='input batch size for testing (default: 1000)')
parser.add_argument('--epochs', type=int, default=10, metavar='N',
                    help='number of epochs to train (default: 10)')
parser.add_argument('--lr', type=float, default=0.01, metavar='LR',
                    help='learning rate (default: 0.01)')
parser.add_argument('--momentum', type=float, default=0.5, metavar='M',
                    help='SGD momentum (default: 0.5)')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='how many batches to wait before logging training status')
parser.add_argument('--num-processes', type=int, default=2, metavar='N',
                    help='how many training processes to use (default: 2)')
parser.add_argument('--cuda', action='store_true', default=False,
                    help='enables CUDA training')
parser.add_argument('--mps', action='store_true', default=False,
                    help='enables macOS GPU training')
parser.add_argument('--save_model', action='store_true', default=False,
                    help='save the trained model to state_dict')
parser.add_argument('--dry-run', action='store_true', default=False,
                    help='quickly check a single pass')

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


if __name__ == '__main__':
    args = parser.parse_args(['--epochs', '3', '--log-interval', '4'])  # port: argv (3 epochs, a log every 4 batches)

    use_cuda = args.cuda and torch.cuda.is_available()
    use_mps = args.mps and torch.backends.mps.is_available()
    if use_cuda:
        device = torch.device("cuda")
    elif use_mps:
        device = torch.device("mps")
    else:
        device = torch.device("cpu")

    rng = np.random.default_rng(0)  # port: MNIST's place: a template per digit under noise
    templates = 2 * rng.normal(size=(10, 1, 28, 28)).astype(np.float32)  # port
    def make(n):  # port
        labels = rng.integers(0, 10, n)  # port
        images = templates[labels] + 0.5 * rng.normal(size=(n, 1, 28, 28)).astype(np.float32)  # port
        return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))  # port
    dataset1, dataset2 = make(512), make(256)  # port: MNIST's train and test sets
    kwargs = {'batch_size': args.batch_size,
              'shuffle': True}
    if use_cuda:
        kwargs.update({'num_workers': 1,
                       'pin_memory': True,
                      })

    torch.manual_seed(args.seed)
    # mp.set_start_method('spawn', force=True)  # port: tricycle lacks torch.multiprocessing

    model = Net().to(device)
    # model.share_memory() # gradients are allocated lazily, so they are not shared here  # port: tricycle cannot share a model's memory between processes

    processes = []
    for rank in range(args.num_processes):
        train(rank, args, model, device, dataset1, kwargs)  # port: each rank in turn, in this process: tricycle cannot share a model's memory between processes
        # We first train the model across `num_processes` processes

    if args.save_model:
        torch.save(model.state_dict(), "MNIST_hogwild.pt")

    # Once training is complete, we can test the model
    test(args, model, device, dataset2, kwargs)
"""  # noqa: E501

# mnist_hogwild/train.py
HOGWILD_TRAIN = r"""
import os
import torch
import torch.optim as optim
import torch.nn.functional as F


def train(rank, args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed + rank)

    train_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)

    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    for epoch in range(1, args.epochs + 1):
        train_epoch(epoch, args, model, device, train_loader, optimizer)


def test(args, model, device, dataset, dataloader_kwargs):
    torch.manual_seed(args.seed)

    test_loader = torch.utils.data.DataLoader(dataset, **dataloader_kwargs)

    test_epoch(model, device, test_loader)


def train_epoch(epoch, args, model, device, data_loader, optimizer):
    model.train()
    pid = os.getpid()
    for batch_idx, (data, target) in enumerate(data_loader):
        optimizer.zero_grad()
        output = model(data.to(device))
        loss = F.nll_loss(output, target.to(device))
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('{}\tTrain Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                pid, epoch, batch_idx * len(data), len(data_loader.dataset),
                100. * batch_idx / len(data_loader), loss.item()))
            if args.dry_run:
                break


def test_epoch(model, device, data_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in data_loader:
            output = model(data.to(device))
            test_loss += F.nll_loss(output, target.to(device), reduction='sum').item() # sum up batch loss
            pred = output.max(dim=1)[1] # get the index of the max log-probability  # port: tricycle's x.max(1) is numpy's (the values alone): torch's meaning needs dim=
            correct += pred.eq(target.to(device)).sum().item()

    test_loss /= len(data_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(data_loader.dataset),
        100. * correct / len(data_loader.dataset)))
"""  # noqa: E501


# ------------------------------------------------------------------------- the tests
@pytest.fixture
def world_of_one(monkeypatch):
    """torchrun's variables for one process on a free port, and torch's import path of
    ``DistributedDataParallel``, which tricycle lacks (see the module's doc)."""
    import tricycle.distributed  # noqa: PLC0415 - only these tests start a process group

    parallel = types.ModuleType("tricycle.nn.parallel")
    parallel.DistributedDataParallel = tricycle.distributed.DistributedDataParallel
    monkeypatch.setitem(sys.modules, "tricycle.nn.parallel", parallel)
    with socket.socket() as free, socket.socket() as restart:  # two: torch's gloo may hang
        free.bind(("127.0.0.1", 0))  # when a process group starts again on the port it closed
        restart.bind(("127.0.0.1", 0))
        port, restart_port = free.getsockname()[1], restart.getsockname()[1]
    variables = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                 "MASTER_PORT": str(port), "RESTART_PORT": str(restart_port)}  # fmt: skip
    for name, value in variables.items():
        monkeypatch.setenv(name, value)


def test_ddp_tutorial_single_gpu(tmp_path, monkeypatch):
    files = {"datautils.py": DATAUTILS, "single_gpu.py": SINGLE_GPU}
    theirs, ours = both(files, ["single_gpu.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (_, (space,)) in (("torch", theirs), ("tricycle", ours)):
        losses = space["losses"]  # 4 epochs of 16 batches
        assert len(losses) == 64 and all(isinstance(loss, float) for loss in losses)
        assert np.mean(losses[-16:]) < 0.75 * np.mean(losses[:16]), (library, losses)
        assert (tmp_path / library / "checkpoint.pt").exists()


def test_ddp_tutorial_multigpu_torchrun(world_of_one, tmp_path, monkeypatch):
    files = {"datautils.py": DATAUTILS, "multigpu_torchrun.py": MULTIGPU_TORCHRUN}
    theirs, ours = both(files, ["multigpu_torchrun.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, (space,)) in (("torch", theirs), ("tricycle", ours)):
        assert "Resuming training from snapshot at Epoch 2" in printed, library
        losses = space["losses"]  # epochs 0-2, then 2-4 from the snapshot of epoch 2
        assert len(losses) == 96, (library, len(losses))
        first, resumed = np.mean(losses[:16]), np.mean(losses[48:64])
        assert resumed < 0.8 * first and np.mean(losses[-16:]) < 0.75 * first, (library, losses)


def corpus(sentences: int, seed: int) -> str:
    """A small text in a toy grammar, a sentence a line (tiny Shakespeare's place)."""
    rng = np.random.default_rng(seed)
    subjects = ["the cat", "a dog", "the bird", "my friend"]
    verbs = ["sees", "likes", "chases"]
    objects = ["the ball", "a fish", "the tree", "some bread"]
    return "".join(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} .\n"
                   for _ in range(sentences))  # fmt: skip


def test_mingpt_ddp(world_of_one, tmp_path, monkeypatch):
    pytest.importorskip("fsspec")  # char_dataset.py and trainer.py read files through it
    config = {  # gpt2_train_cfg.yaml, shrunk (use_amp: tricycle's float16 on the CPU is slow)
        "data_config": {"path": "input.txt", "block_size": 16, "train_split": 0.9},
        "gpt_config": {"n_layer": 2, "n_head": 2, "n_embd": 32},
        "trainer_config": {"max_epochs": 2, "batch_size": 32, "data_loader_workers": 0,
                           "grad_norm_clip": 1.0, "snapshot_path": "gpt_snapshot.pt",
                           "save_every": 1, "use_amp": False},
        "optimizer_config": {"weight_decay": 0.1, "learning_rate": 3e-3},
    }  # fmt: skip
    files = {"model.py": MINGPT_MODEL, "trainer.py": MINGPT_TRAINER,
             "char_dataset.py": MINGPT_CHAR_DATASET, "main.py": MINGPT_MAIN,
             "input.txt": corpus(40, 0)}  # fmt: skip
    theirs, ours = both(files, ["main.py"], tmp_path, monkeypatch, CONFIG=config)
    assert lines(ours[0]) == lines(theirs[0])
    groups = []
    for library, (printed, (space,)) in (("torch", theirs), ("tricycle", ours)):
        vocabulary = int(numbers(r"(\d+) unique", printed)[0])
        train = numbers(r"Train Loss ([\d.]+)", printed)
        assert train[-1] < 0.5 * train[0], (library, train)
        evaluation = numbers(r"Eval Loss ([\d.]+)", printed)
        assert evaluation[-1] < 0.5 * math.log(vocabulary), (library, evaluation)
        assert "Resuming training from snapshot at Epoch 2" in printed, library
        for name in ("greedy", "sampled"):  # generate's tokens, from the trained snapshot
            tokens = np.asarray(space[name].tolist())
            assert tokens.shape == (2, 21) and tokens.min() >= 0 and tokens.max() < vocabulary
        optimizer = space["create_optimizer"](space["model"], space["OptimizerConfig"]())
        groups.append([(group["weight_decay"], sum(p.numel() for p in group["params"]))
                       for group in optimizer.param_groups])  # fmt: skip
    assert groups[0] == groups[1]  # the same parameters decayed, by tricycle's names


def test_mnist_hogwild_in_one_process(tmp_path, monkeypatch):
    files = {"train.py": HOGWILD_TRAIN, "main.py": HOGWILD_MAIN}
    theirs, ours = both(files, ["main.py"], tmp_path, monkeypatch)
    assert lines(ours[0]) == lines(theirs[0])
    for library, (printed, _) in (("torch", theirs), ("tricycle", ours)):
        losses = numbers(r"Loss: ([\d.]+)", printed)  # 2 ranks x 3 epochs x 2 logs
        assert len(losses) == 12 and np.mean(losses[-2:]) < 0.85 * np.mean(losses[:2]), (
            library,
            losses,
        )
        correct = numbers(r"Accuracy: (\d+)/256", printed)
        assert correct[0] > 0.5 * 256, (library, correct)  # chance: 26


# ---------------------------------------------------------------------- the fixes they needed
def test_layers_take_torchs_factory_keywords():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    x = np.random.default_rng(0).normal(size=(2, 5, 8))
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, device="cpu",
                                         dtype=torch.float64)  # fmt: skip
    ours = nn.MultiheadAttention(8, 2, batch_first=True, device="cpu", dtype=tricycle.float64)
    assert all(p.dtype == np.float64 for p in ours.parameters())
    nn.from_torch(ours, theirs.state_dict())
    mask = np.triu(np.full((5, 5), -1e9), 1)
    their_x, our_x = torch.tensor(x, requires_grad=True), tricycle.tensor(x, requires_grad=True)
    their_y = theirs(their_x, their_x, their_x, attn_mask=torch.tensor(mask))[0]
    our_y = ours(our_x, our_x, our_x, attn_mask=tricycle.tensor(mask))[0]
    assert our_y.dtype == np.float64
    np.testing.assert_allclose(our_y.numpy(), their_y.detach().numpy(), rtol=1e-10, atol=1e-12)
    (their_y**2).sum().backward()
    (our_y**2).sum().backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.out_projection.weights.grad.numpy(),
                               theirs.out_proj.weight.grad.numpy().T, rtol=1e-9)  # fmt: skip
    # every layer takes them, buffers cast too; None changes nothing
    norm = nn.BatchNorm1d(3, device="cpu", dtype=tricycle.float64)
    assert {t.dtype for t in norm.state_dict().values()} == {np.dtype(np.float64)}
    assert nn.Linear(3, 2, device=None, dtype=None).weights.dtype == np.float32
    assert nn.Embedding(4, 2, dtype=np.float64).weights.dtype == np.float64
    with pytest.raises(TypeError, match=r"Dense.to: dtype must be a floating numpy dtype"):
        nn.Linear(3, 2, dtype=tricycle.long)  # torch refuses an integer Linear too

    class Mine(nn.Module):  # a user's Module takes them only if it says so, as torch's
        def __init__(self, size):
            super().__init__()
            self.linear = nn.Linear(size, size)

    with pytest.raises(TypeError, match=r"unexpected keyword argument 'device'"):
        Mine(3, device="cpu")


def test_share_memory_says_tricycle_cannot():
    import tricycle.nn as nn  # noqa: PLC0415

    model = nn.Sequential(nn.Linear(3, 2))
    with pytest.raises(AttributeError, match=r"^Sequential has no share_memory\(\) "
                       r"\(torch.nn.Module's\): a layer's arrays live in its own process and "
                       r"tricycle cannot share them"):  # fmt: skip
        model.share_memory()
    assert not hasattr(model, "share_memory")


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:1", "CPU"])
def test_get_default_backend_for_device_as_torch(device):
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.distributed as dist  # noqa: PLC0415

    theirs = torch.distributed.get_default_backend_for_device(device.lower())
    assert dist.get_default_backend_for_device(device) == theirs
    assert dist.get_default_backend_for_device(tricycle.device(device.lower())) == theirs
    with pytest.raises(ValueError, match=r"^get_default_backend_for_device: device must be "
                       r"'cpu', 'cuda', 'cuda:N', a GPU index or a device, got 'mps'"):  # fmt: skip
        dist.get_default_backend_for_device("mps")
    with pytest.raises(TypeError, match=r"got None$"):
        dist.get_default_backend_for_device(None)


@pytest.mark.parametrize("name", ["cpu:0", "CPU:1"])
def test_cpu_with_an_index_is_the_cpu_as_torch(name):
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    theirs = torch.device(name.lower())
    ours = tricycle.device(name)
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert tricycle.device("cpu", 0).index == torch.device("cpu", 0).index == 0
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    our_x, their_x = tricycle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    layer = nn.Linear(3, 2).to(name)
    their_layer = torch.nn.Linear(3, 2).to(name.lower())
    nn.from_torch(layer, their_layer.state_dict())
    ours_y, theirs_y = layer(our_x.to(name)), their_layer(their_x.to(name.lower()))
    assert ours_y.device == "cpu" and theirs_y.device.type == "cpu"
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.detach().numpy(), rtol=1e-5, atol=1e-6)
    ours_y.sum().backward()
    theirs_y.sum().backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-5, atol=1e-6)
