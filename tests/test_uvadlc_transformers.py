"""Phillip Lippe's UvA Deep Learning tutorials 6 ("Transformers and Multi-Head Attention") and
7 ("GNN overview"), docs/tutorial_notebooks of phlippe/uvadlc_notebooks, run on tricycle with
``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_zero_to_hero.py).

- tutorial6: ``scaled_dot_product`` on random q, k, v, ``expand_mask``, the hand-written
  ``MultiheadAttention`` (one ``qkv_proj``, ``reshape``/``permute``/``chunk``, xavier init and
  ``bias.data.fill_(0)``), ``EncoderBlock`` (``ReLU(inplace=True)``, post-norm),
  ``TransformerEncoder.get_attention_maps``, ``PositionalEncoding`` (strided slice writes,
  ``register_buffer(..., persistent=False)``), ``CosineWarmupScheduler`` (a subclass of
  ``optim.lr_scheduler._LRScheduler`` whose ``get_lr`` reads numpy's cosine), and the reverse
  task: ``ReverseDataset`` (``randint``, ``flip``), ``DataLoader(pin_memory=True)``,
  ``ReversePredictor``'s ``F.one_hot(...).float()``, ``view``s and ``cross_entropy``, Adam under
  the warm-up schedule stepped every batch, and the attention maps under
  ``@torch.no_grad()``. Lightning's glue is ported to plain Python (``save_hyperparameters`` as a
  namespace, ``self.log`` into a dict, ``Trainer.fit``/``test`` as a loop with
  ``clip_grad_norm_(..., 5)`` for ``gradient_clip_val=5``), the data shrunk and the learning
  rate raised for the shorter run; the set-anomaly task (CIFAR100 through a pretrained
  ResNet34) is left out, and so are the plots (their values printed instead).
- tutorial7: ``GCNLayer`` (``bmm``, the degree normalisation) and ``GATLayer`` (``nonzero``,
  ``index_select``, ``einsum``, ``new_zeros(...).fill_``, a boolean-mask write, a softmax over
  neighbours) on the notebook's 4-node graph with its hand-set weights; the torch_geometric
  part is left out.

Each changed line ends in ``# port:`` and says why (a Linear's ``weights`` (in, out), torch's
``Tensor(*sizes)`` as ``empty``, torch's ``repeat`` as ``tile``: all
documented).
The cells that only import, download or plot are left out. What the tutorials needed:
``optim.lr_scheduler._LRScheduler`` (torch's older name of ``LRScheduler``), and a constant
written with a value in a graph (the GAT's ``attn_matrix[...] = attn_logits``) joining the
graph, as torch's, where its gradient was lost (tests/test_rebase.py). Each runs under torch (skipped without it), then under tricycle; both print the
same lines (numbers and reprs aside), the reverse task learns under both, the positional
encoding and the learning rates are torch's, and the graph layers print torch's numbers. With
torch's trained weights (``nn.from_torch``) the reverse model gives torch's predictions, loss,
gradients and attention maps, masked attention included; the GAT layer's gradients are
torch's.
"""

# ruff: noqa: E501, W291, W293, E741, E702

import re

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import numbers
from tests.test_torch_tutorials_u import fell, kinds

pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true:UserWarning")

# tutorial6/Transformers_and_MHAttention.ipynb, its code cells up to the reverse task
TRANSFORMERS = r'''
## Standard libraries
import os
import numpy as np 
import random
import math
import json
from functools import partial
from types import SimpleNamespace  # port: for save_hyperparameters

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "saved_models/tutorial6"  # port: beside the run, not ../

# Setting the seed
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device) 

def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    attn_logits = torch.matmul(q, k.transpose(-2, -1))
    attn_logits = attn_logits / math.sqrt(d_k)
    if mask is not None:
        attn_logits = attn_logits.masked_fill(mask == 0, -9e15)
    attention = F.softmax(attn_logits, dim=-1)
    values = torch.matmul(attention, v)
    return values, attention 

seq_len, d_k = 3, 2
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)
q = torch.randn(seq_len, d_k)
k = torch.randn(seq_len, d_k)
v = torch.randn(seq_len, d_k)
values, attention = scaled_dot_product(q, k, v)
print("Q\n", q)
print("K\n", k)
print("V\n", v)
print("Values\n", values)
print("Attention\n", attention) 

# Helper function to support different mask shapes.
# Output shape supports (batch_size, number of heads, seq length, seq length)
# If 2D: broadcasted over batch size and number of heads
# If 3D: broadcasted over number of heads
# If 4D: leave as is
def expand_mask(mask):
    assert mask.ndim >= 2, "Mask must be at least 2-dimensional with seq_length x seq_length"
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask 

class MultiheadAttention(nn.Module):
    
    def __init__(self, input_dim, embed_dim, num_heads):
        super().__init__()
        assert embed_dim % num_heads == 0, "Embedding dimension must be 0 modulo number of heads."
        
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        
        # Stack all weight matrices 1...h together for efficiency
        # Note that in many implementations you see "bias=False" which is optional
        self.qkv_proj = nn.Linear(input_dim, 3*embed_dim)
        self.o_proj = nn.Linear(embed_dim, input_dim)
        
        self._reset_parameters()

    def _reset_parameters(self):
        # Original Transformer initialization, see PyTorch documentation
        nn.init.xavier_uniform_(self.qkv_proj.weights if hasattr(self.qkv_proj, 'weights') else self.qkv_proj.weight)  # port: tricycle's Linear holds weights (in, out), torch's weight transposed (documented)
        self.qkv_proj.bias.data.fill_(0)
        nn.init.xavier_uniform_(self.o_proj.weights if hasattr(self.o_proj, 'weights') else self.o_proj.weight)  # port: tricycle's Linear holds weights (in, out), torch's weight transposed (documented)
        self.o_proj.bias.data.fill_(0)

    def forward(self, x, mask=None, return_attention=False):
        batch_size, seq_length, _ = x.size()
        if mask is not None:
            mask = expand_mask(mask)
        qkv = self.qkv_proj(x)
        
        # Separate Q, K, V from linear output
        qkv = qkv.reshape(batch_size, seq_length, self.num_heads, 3*self.head_dim)
        qkv = qkv.permute(0, 2, 1, 3) # [Batch, Head, SeqLen, Dims]
        q, k, v = qkv.chunk(3, dim=-1)
        
        # Determine value outputs
        values, attention = scaled_dot_product(q, k, v, mask=mask)
        values = values.permute(0, 2, 1, 3) # [Batch, SeqLen, Head, Dims]
        values = values.reshape(batch_size, seq_length, self.embed_dim)
        o = self.o_proj(values)
        
        if return_attention:
            return o, attention
        else:
            return o 

class EncoderBlock(nn.Module):
    
    def __init__(self, input_dim, num_heads, dim_feedforward, dropout=0.0):
        """
        Inputs:
            input_dim - Dimensionality of the input
            num_heads - Number of heads to use in the attention block
            dim_feedforward - Dimensionality of the hidden layer in the MLP
            dropout - Dropout probability to use in the dropout layers
        """
        super().__init__()
        
        # Attention layer
        self.self_attn = MultiheadAttention(input_dim, input_dim, num_heads)
        
        # Two-layer MLP
        self.linear_net = nn.Sequential(
            nn.Linear(input_dim, dim_feedforward),
            nn.Dropout(dropout),
            nn.ReLU(inplace=True),
            nn.Linear(dim_feedforward, input_dim)
        )
        
        # Layers to apply in between the main layers
        self.norm1 = nn.LayerNorm(input_dim)
        self.norm2 = nn.LayerNorm(input_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        # Attention part
        attn_out = self.self_attn(x, mask=mask)
        x = x + self.dropout(attn_out)
        x = self.norm1(x)
        
        # MLP part
        linear_out = self.linear_net(x)
        x = x + self.dropout(linear_out)
        x = self.norm2(x)
        
        return x 

class TransformerEncoder(nn.Module):
    
    def __init__(self, num_layers, **block_args):
        super().__init__()
        self.layers = nn.ModuleList([EncoderBlock(**block_args) for _ in range(num_layers)])

    def forward(self, x, mask=None):
        for l in self.layers:
            x = l(x, mask=mask)
        return x

    def get_attention_maps(self, x, mask=None):
        attention_maps = []
        for l in self.layers:
            _, attn_map = l.self_attn(x, mask=mask, return_attention=True)
            attention_maps.append(attn_map)
            x = l(x)
        return attention_maps 

class PositionalEncoding(nn.Module):

    def __init__(self, d_model, max_len=5000):
        """
        Inputs
            d_model - Hidden dimensionality of the input.
            max_len - Maximum length of a sequence to expect.
        """
        super().__init__()

        # Create matrix of [SeqLen, HiddenDim] representing the positional encoding for max_len inputs
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        
        # register_buffer => Tensor which is not a parameter, but should be part of the modules state.
        # Used for tensors that need to be on the same device as the module.
        # persistent=False tells PyTorch to not add the buffer to the state dict (e.g. when we save the model) 
        self.register_buffer('pe', pe, persistent=False)

    def forward(self, x):
        x = x + self.pe[:, :x.size(1)]
        return x 

encod_block = PositionalEncoding(d_model=48, max_len=96)
pe = encod_block.pe.squeeze().T.cpu().numpy()
print("Positional encoding:", pe.shape, pe[:4, :3].round(4).tolist())  # port: printed, not plotted

class CosineWarmupScheduler(optim.lr_scheduler._LRScheduler):
    
    def __init__(self, optimizer, warmup, max_iters):
        self.warmup = warmup
        self.max_num_iters = max_iters
        super().__init__(optimizer)
        
    def get_lr(self):
        lr_factor = self.get_lr_factor(epoch=self.last_epoch)
        return [base_lr * lr_factor for base_lr in self.base_lrs]
    
    def get_lr_factor(self, epoch):
        lr_factor = 0.5 * (1 + np.cos(np.pi * epoch / self.max_num_iters))
        if epoch <= self.warmup:
            lr_factor *= epoch * 1.0 / self.warmup
        return lr_factor 

# Needed for initializing the lr scheduler
p = nn.Parameter(torch.empty(4,4))
optimizer = optim.Adam([p], lr=1e-3)
lr_scheduler = CosineWarmupScheduler(optimizer=optimizer, warmup=100, max_iters=2000)

# Plotting
epochs = list(range(2000))
factors = [lr_scheduler.get_lr_factor(e) for e in epochs]  # port: the plot's values
print("Learning rate factor:", [round(float(factors[e]), 4) for e in (0, 50, 100, 1000, 1999)])  # port: printed, not plotted
for _ in range(3):  # port: the schedule's steps, which the plot shows
    optimizer.step()  # port: as above
    lr_scheduler.step()  # port: as above
print("Learning rates:", lr_scheduler.get_last_lr())  # port: the schedule's steps

class TransformerPredictor(nn.Module):  # port: nn.Module, not pl.LightningModule

    def __init__(self, input_dim, model_dim, num_classes, num_heads, num_layers, lr, warmup, max_iters, dropout=0.0, input_dropout=0.0):
        """
        Inputs:
            input_dim - Hidden dimensionality of the input
            model_dim - Hidden dimensionality to use inside the Transformer
            num_classes - Number of classes to predict per sequence element
            num_heads - Number of heads to use in the Multi-Head Attention blocks
            num_layers - Number of encoder blocks to use.
            lr - Learning rate in the optimizer
            warmup - Number of warmup steps. Usually between 50 and 500
            max_iters - Number of maximum iterations the model is trained for. This is needed for the CosineWarmup scheduler
            dropout - Dropout to apply inside the model
            input_dropout - Dropout to apply on the input features
        """
        super().__init__()
        self.hparams = SimpleNamespace(input_dim=input_dim, model_dim=model_dim, num_classes=num_classes, num_heads=num_heads, num_layers=num_layers, lr=lr, warmup=warmup, max_iters=max_iters, dropout=dropout, input_dropout=input_dropout)  # port: Lightning's save_hyperparameters()
        self.logged = {}  # port: what Lightning's self.log keeps
        self._create_model()

    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: Lightning's self.log

    def _create_model(self):
        # Input dim -> Model dim
        self.input_net = nn.Sequential(
            nn.Dropout(self.hparams.input_dropout),
            nn.Linear(self.hparams.input_dim, self.hparams.model_dim)
        )
        # Positional encoding for sequences
        self.positional_encoding = PositionalEncoding(d_model=self.hparams.model_dim)
        # Transformer
        self.transformer = TransformerEncoder(num_layers=self.hparams.num_layers,
                                              input_dim=self.hparams.model_dim,
                                              dim_feedforward=2*self.hparams.model_dim,
                                              num_heads=self.hparams.num_heads,
                                              dropout=self.hparams.dropout)
        # Output classifier per sequence lement
        self.output_net = nn.Sequential(
            nn.Linear(self.hparams.model_dim, self.hparams.model_dim),
            nn.LayerNorm(self.hparams.model_dim),
            nn.ReLU(inplace=True),
            nn.Dropout(self.hparams.dropout),
            nn.Linear(self.hparams.model_dim, self.hparams.num_classes)
        ) 

    def forward(self, x, mask=None, add_positional_encoding=True):
        """
        Inputs:
            x - Input features of shape [Batch, SeqLen, input_dim]
            mask - Mask to apply on the attention outputs (optional)
            add_positional_encoding - If True, we add the positional encoding to the input.
                                      Might not be desired for some tasks.
        """
        x = self.input_net(x)
        if add_positional_encoding:
            x = self.positional_encoding(x)
        x = self.transformer(x, mask=mask)
        x = self.output_net(x)
        return x

    @torch.no_grad()
    def get_attention_maps(self, x, mask=None, add_positional_encoding=True):
        """
        Function for extracting the attention matrices of the whole Transformer for a single batch.
        Input arguments same as the forward pass.
        """
        x = self.input_net(x)
        if add_positional_encoding:
            x = self.positional_encoding(x)
        attention_maps = self.transformer.get_attention_maps(x, mask=mask)
        return attention_maps

    def configure_optimizers(self):
        optimizer = optim.Adam(self.parameters(), lr=self.hparams.lr)
        
        # Apply lr scheduler per step
        lr_scheduler = CosineWarmupScheduler(optimizer, 
                                             warmup=self.hparams.warmup, 
                                             max_iters=self.hparams.max_iters)
        return [optimizer], [{'scheduler': lr_scheduler, 'interval': 'step'}]

    def training_step(self, batch, batch_idx):
        raise NotImplementedError

    def validation_step(self, batch, batch_idx):
        raise NotImplementedError    

    def test_step(self, batch, batch_idx):
        raise NotImplementedError    

class ReverseDataset(data.Dataset):

    def __init__(self, num_categories, seq_len, size):
        super().__init__()
        self.num_categories = num_categories
        self.seq_len = seq_len
        self.size = size
        
        self.data = torch.randint(self.num_categories, size=(self.size, self.seq_len))
  
    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        inp_data = self.data[idx]
        labels = torch.flip(inp_data, dims=(0,))
        return inp_data, labels 

dataset = partial(ReverseDataset, 10, 16)
train_loader = data.DataLoader(dataset(2048), batch_size=128, shuffle=True, drop_last=True, pin_memory=True)  # port: 50000 sequences shrunk
val_loader   = data.DataLoader(dataset(256), batch_size=128)  # port: 1000 sequences shrunk
test_loader  = data.DataLoader(dataset(256), batch_size=128)  # port: 10000 sequences shrunk

inp_data, labels = train_loader.dataset[0]
print("Input data:", inp_data)
print("Labels:    ", labels) 

class ReversePredictor(TransformerPredictor):
    
    def _calculate_loss(self, batch, mode="train"):
        # Fetch data and transform categories to one-hot vectors
        inp_data, labels = batch
        inp_data = F.one_hot(inp_data, num_classes=self.hparams.num_classes).float()
        
        # Perform prediction and calculate loss and accuracy
        preds = self.forward(inp_data, add_positional_encoding=True)
        loss = F.cross_entropy(preds.view(-1,preds.size(-1)), labels.view(-1))
        acc = (preds.argmax(dim=-1) == labels).float().mean()
        
        # Logging
        self.log(f"{mode}_loss", loss)
        self.log(f"{mode}_acc", acc)
        return loss, acc
        
    def training_step(self, batch, batch_idx):
        loss, _ = self._calculate_loss(batch, mode="train")
        return loss
    
    def validation_step(self, batch, batch_idx):
        _ = self._calculate_loss(batch, mode="val")
    
    def test_step(self, batch, batch_idx):
        _ = self._calculate_loss(batch, mode="test") 

def fit(model, train_loader, val_loader, max_epochs, gradient_clip_val):  # port: the loop of Lightning's Trainer.fit
    [optimizer], [scheduler] = model.configure_optimizers()  # port: Trainer.fit
    for epoch in range(max_epochs):  # port: Trainer.fit
        model.train()  # port: Trainer.fit
        for batch_idx, batch in enumerate(train_loader):  # port: Trainer.fit
            loss = model.training_step(batch, batch_idx)  # port: Trainer.fit
            optimizer.zero_grad()  # port: Trainer.fit
            loss.backward()  # port: Trainer.fit
            torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clip_val)  # port: Trainer.fit
            optimizer.step()  # port: Trainer.fit
            scheduler['scheduler'].step()  # port: Trainer.fit, interval 'step'
        print(f"Epoch {epoch}: train_loss {model.logged['train_loss']:.4f}, val_acc {test(model, val_loader, 'val'):.4f}")  # port: Trainer.fit's log

@torch.no_grad()  # port: the loop of Lightning's Trainer.test
def test(model, loader, mode="test"):  # port: Trainer.test
    model.eval()  # port: Trainer.test
    accs = []  # port: Trainer.test
    for batch_idx, batch in enumerate(loader):  # port: Trainer.test
        model._calculate_loss(batch, mode=mode)  # port: Trainer.test
        accs.append(model.logged[f"{mode}_acc"] * len(batch[0]))  # port: Trainer.test
    model.train()  # port: Trainer.test
    return sum(accs) / len(loader.dataset)  # port: Trainer.test, weighted by batch size

def train_reverse(**kwargs):
    root_dir = os.path.join(CHECKPOINT_PATH, "ReverseTask")
    os.makedirs(root_dir, exist_ok=True)
    max_epochs = 10  # port: pl.Trainer(max_epochs=10, gradient_clip_val=5)
    
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, "ReverseTask.ckpt")
    if os.path.isfile(pretrained_filename):
        print("Found pretrained model, loading...")
        model = ReversePredictor.load_from_checkpoint(pretrained_filename)
    else:
        model = ReversePredictor(max_iters=max_epochs*len(train_loader), **kwargs)  # port: trainer.max_epochs
        fit(model, train_loader, val_loader, max_epochs, gradient_clip_val=5)  # port: trainer.fit(model, train_loader, val_loader)
        
    # Test best model on validation and test set
    val_result = [{"test_acc": test(model, val_loader)}]  # port: trainer.test(model, val_loader, verbose=False)
    test_result = [{"test_acc": test(model, test_loader)}]  # port: trainer.test(model, test_loader, verbose=False)
    result = {"test_acc": test_result[0]["test_acc"], "val_acc": val_result[0]["test_acc"]}
    
    model = model.to(device)
    return model, result 

reverse_model, reverse_result = train_reverse(input_dim=train_loader.dataset.num_categories,
                                              model_dim=32,
                                              num_heads=1,
                                              num_classes=train_loader.dataset.num_categories,
                                              num_layers=1,
                                              dropout=0.0,
                                              lr=5e-3,  # port: 5e-4, for the shrunk run
                                              warmup=10)  # port: 50 steps, for the shrunk run

print(f"Val accuracy:  {(100.0 * reverse_result['val_acc']):4.2f}%")
print(f"Test accuracy: {(100.0 * reverse_result['test_acc']):4.2f}%") 

data_input, labels = next(iter(val_loader))
inp_data = F.one_hot(data_input, num_classes=reverse_model.hparams.num_classes).float()
inp_data = inp_data.to(device)
attention_maps = reverse_model.get_attention_maps(inp_data) 

print(attention_maps[0].shape)  # port: printed (a notebook cell shows its value)
'''

# tutorial7/GNN_overview.ipynb, its plain-PyTorch cells
GNN = r'''
## Standard libraries
import os
import json
import math
import numpy as np 
import time

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "saved_models/tutorial7"  # port: beside the run, not ../

# Setting the seed
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print(device) 

class GCNLayer(nn.Module):
    
    def __init__(self, c_in, c_out):
        super().__init__()
        self.projection = nn.Linear(c_in, c_out)

    def forward(self, node_feats, adj_matrix):
        """
        Inputs:
            node_feats - Tensor with node features of shape [batch_size, num_nodes, c_in]
            adj_matrix - Batch of adjacency matrices of the graph. If there is an edge from i to j, adj_matrix[b,i,j]=1 else 0.
                         Supports directed edges by non-symmetric matrices. Assumes to already have added the identity connections. 
                         Shape: [batch_size, num_nodes, num_nodes]
        """
        # Num neighbours = number of incoming edges
        num_neighbours = adj_matrix.sum(dim=-1, keepdims=True)
        node_feats = self.projection(node_feats)
        node_feats = torch.bmm(adj_matrix, node_feats)
        node_feats = node_feats / num_neighbours
        return node_feats 

node_feats = torch.arange(8, dtype=torch.float32).view(1, 4, 2)
adj_matrix = torch.Tensor([[[1, 1, 0, 0],
                            [1, 1, 1, 1],
                            [0, 1, 1, 1],
                            [0, 1, 1, 1]]])

print("Node features:\n", node_feats)
print("\nAdjacency matrix:\n", adj_matrix) 

layer = GCNLayer(c_in=2, c_out=2)
(layer.projection.weights if hasattr(layer.projection, 'weights') else layer.projection.weight).data = torch.Tensor([[1., 0.], [0., 1.]])  # port: tricycle's Linear holds weights (in, out), torch's weight transposed (documented; the identity either way)
layer.projection.bias.data = torch.Tensor([0., 0.])

with torch.no_grad():
    out_feats = layer(node_feats, adj_matrix)

print("Adjacency matrix", adj_matrix)
print("Input features", node_feats)
print("Output features", out_feats) 

class GATLayer(nn.Module):
    
    def __init__(self, c_in, c_out, num_heads=1, concat_heads=True, alpha=0.2):
        """
        Inputs:
            c_in - Dimensionality of input features
            c_out - Dimensionality of output features
            num_heads - Number of heads, i.e. attention mechanisms to apply in parallel. The 
                        output features are equally split up over the heads if concat_heads=True.
            concat_heads - If True, the output of the different heads is concatenated instead of averaged.
            alpha - Negative slope of the LeakyReLU activation.
        """
        super().__init__()
        self.num_heads = num_heads
        self.concat_heads = concat_heads
        if self.concat_heads:
            assert c_out % num_heads == 0, "Number of output features must be a multiple of the count of heads."
            c_out = c_out // num_heads
        
        # Sub-modules and parameters needed in the layer
        self.projection = nn.Linear(c_in, c_out * num_heads)
        self.a = nn.Parameter(torch.empty(num_heads, 2 * c_out)) # One per head  # port: torch's Tensor(*sizes) is empty(*sizes) (documented)
        self.leakyrelu = nn.LeakyReLU(alpha)
        
        # Initialization from the original implementation
        nn.init.xavier_uniform_((self.projection.weights if hasattr(self.projection, 'weights') else self.projection.weight).data, gain=1.414)  # port: tricycle's Linear holds weights (in, out), torch's weight transposed (documented)
        nn.init.xavier_uniform_(self.a.data, gain=1.414)
        
    def forward(self, node_feats, adj_matrix, print_attn_probs=False):
        """
        Inputs:
            node_feats - Input features of the node. Shape: [batch_size, c_in]
            adj_matrix - Adjacency matrix including self-connections. Shape: [batch_size, num_nodes, num_nodes]
            print_attn_probs - If True, the attention weights are printed during the forward pass (for debugging purposes)
        """
        batch_size, num_nodes = node_feats.size(0), node_feats.size(1)
        
        # Apply linear layer and sort nodes by head
        node_feats = self.projection(node_feats)
        node_feats = node_feats.view(batch_size, num_nodes, self.num_heads, -1)
        
        # We need to calculate the attention logits for every edge in the adjacency matrix 
        # Doing this on all possible combinations of nodes is very expensive
        # => Create a tensor of [W*h_i||W*h_j] with i and j being the indices of all edges
        edges = adj_matrix.nonzero(as_tuple=False) # Returns indices where the adjacency matrix is not 0 => edges
        node_feats_flat = node_feats.view(batch_size * num_nodes, self.num_heads, -1)
        edge_indices_row = edges[:,0] * num_nodes + edges[:,1]
        edge_indices_col = edges[:,0] * num_nodes + edges[:,2]
        a_input = torch.cat([
            torch.index_select(input=node_feats_flat, index=edge_indices_row, dim=0),
            torch.index_select(input=node_feats_flat, index=edge_indices_col, dim=0)
        ], dim=-1) # Index select returns a tensor with node_feats_flat being indexed at the desired positions along dim=0
        
        # Calculate attention MLP output (independent for each head)
        attn_logits = torch.einsum('bhc,hc->bh', a_input, self.a) 
        attn_logits = self.leakyrelu(attn_logits)
        
        # Map list of attention values back into a matrix
        attn_matrix = attn_logits.new_zeros(adj_matrix.shape+(self.num_heads,)).fill_(-9e15)
        attn_matrix[adj_matrix[...,None].tile(1,1,1,self.num_heads) == 1] = attn_logits.reshape(-1)  # port: torch's repeat is tile (documented: tricycle's repeat is numpy's)
        
        # Weighted average of attention
        attn_probs = F.softmax(attn_matrix, dim=2)
        if print_attn_probs:
            print("Attention probs\n", attn_probs.permute(0, 3, 1, 2))
        node_feats = torch.einsum('bijh,bjhc->bihc', attn_probs, node_feats)
        
        # If heads should be concatenated, we can do this by reshaping. Otherwise, take mean
        if self.concat_heads:
            node_feats = node_feats.reshape(batch_size, num_nodes, -1)
        else:
            node_feats = node_feats.mean(dim=2)
        
        return node_feats  

layer = GATLayer(2, 2, num_heads=2)
(layer.projection.weights if hasattr(layer.projection, 'weights') else layer.projection.weight).data = torch.Tensor([[1., 0.], [0., 1.]])  # port: tricycle's Linear holds weights (in, out), torch's weight transposed (documented; the identity either way)
layer.projection.bias.data = torch.Tensor([0., 0.])
layer.a.data = torch.Tensor([[-0.2, 0.3], [0.1, -0.1]])

with torch.no_grad():
    out_feats = layer(node_feats, adj_matrix, print_attn_probs=True)

print("Adjacency matrix", adj_matrix)
print("Input features", node_feats)
print("Output features", out_feats) 
'''


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    folder.mkdir()
    return run_main(script, folder, monkeypatch, "tutorial.py")


def both(script: str, tmp_path):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in the text, both on
    the CPU on one thread (the notebooks pick "cuda:0" when it is there: none is answered)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as monkeypatch, one_thread(torch):
        for lib in torch, tricycle:  # the same branches under both, on any machine
            monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        theirs = run(script, tmp_path / "torch", monkeypatch)
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


@pytest.fixture(scope="module")
def transformers(tmp_path_factory):
    """tutorial6 run under both libraries, once for the module's tests."""
    return both(TRANSFORMERS, tmp_path_factory.mktemp("tutorial6"))


@pytest.fixture(scope="module")
def gnn(tmp_path_factory):
    """tutorial7's layers run under both libraries, once for the module's tests."""
    return both(GNN, tmp_path_factory.mktemp("tutorial7"))


def test_transformers_tutorial(transformers):
    (theirs, their_space), (ours, space) = transformers
    assert kinds(ours) == kinds(theirs)
    for printed, namespace in (theirs, their_space), (ours, space):
        # the demo's attention: each row a distribution over the 3 keys
        rows = np.asarray(namespace["attention"].numpy())
        np.testing.assert_allclose(rows.sum(-1), 1, rtol=1e-6)
        # the reverse task learns: the loss falls, the accuracy ends well above chance (10%)
        fell(numbers(r"train_loss ([\d.]+)", printed), 0.95)
        assert numbers(r"Test accuracy: ([\d.]+)%", printed)[0] > 15, printed
        assert namespace["attention_maps"][0].shape == (128, 1, 16, 16)
        # the buffer moves with the model but is not saved (persistent=False)
        state = namespace["reverse_model"].state_dict()
        assert not any(key.endswith(".pe") for key in state), list(state)
    # deterministic numbers are torch's: the positional encoding, the schedule's factors and
    # the learning rates that its steps set
    # (float32 sines of arguments up to 95: a rounding of the argument moves them by ~1e-5)
    np.testing.assert_allclose(space["pe"], their_space["pe"], rtol=0, atol=3e-5)
    assert space["factors"] == their_space["factors"]
    assert space["lr_scheduler"].get_last_lr() == their_space["lr_scheduler"].get_last_lr()
    assert isinstance(space["lr_scheduler"], space["optim"].lr_scheduler.LRScheduler)
    assert re.search(r"Learning rates: \[np\.float64\([\d.e-]+\)\]", ours)


def test_reverse_model_gives_torchs_numbers_with_torchs_weights(transformers):
    """The trained torch model's weights loaded into the tutorial's tricycle model: the same
    predictions, loss, parameter gradients and attention maps, with and without a mask."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = transformers
    theirs, ours = their_space["reverse_model"], space["reverse_model"]
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    theirs.zero_grad()
    ours.zero_grad()  # the last training step's gradients
    rng = np.random.default_rng(0)
    sequences = rng.integers(0, 10, (4, 16))
    batch = [torch.tensor(sequences), torch.tensor(sequences[:, ::-1].copy())]
    our_batch = [tricycle.tensor(sequences), tricycle.tensor(sequences[:, ::-1].copy())]
    their_loss, their_acc = theirs._calculate_loss(batch)
    our_loss, our_acc = ours._calculate_loss(our_batch)
    np.testing.assert_allclose(our_loss.item(), their_loss.item(), rtol=1e-5)
    assert our_acc.item() == their_acc.item()
    their_loss.backward()
    our_loss.backward()
    grads = torch_layout_grads(ours)
    assert grads.keys() == dict(theirs.named_parameters()).keys()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=2e-4, atol=2e-6, err_msg=name)

    # a mask of (SeqLen, SeqLen), broadcast by expand_mask over batch and heads: causal here
    mask = np.tril(np.ones((16, 16), dtype=np.int64))
    one_hot = np.eye(10, dtype=np.float32)[sequences]
    for m in None, mask:
        want = theirs(torch.tensor(one_hot), mask=None if m is None else torch.tensor(m))
        got = ours(tricycle.tensor(one_hot), mask=None if m is None else tricycle.tensor(m))
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
        (want_map,) = theirs.get_attention_maps(
            torch.tensor(one_hot), mask=None if m is None else torch.tensor(m)
        )
        (got_map,) = ours.get_attention_maps(
            tricycle.tensor(one_hot), mask=None if m is None else tricycle.tensor(m)
        )
        np.testing.assert_allclose(got_map.numpy(), want_map.numpy(), rtol=1e-4, atol=1e-6)
    assert np.all(got_map.numpy()[..., ~mask.astype(bool)] == 0)  # nothing from the future


def test_gnn_layers(gnn):
    (theirs, _), (ours, space) = gnn
    assert kinds(ours) == kinds(theirs)
    number = r"(-?\d+\.\d*(?:e-?\d+)?)"
    np.testing.assert_allclose(numbers(number, ours), numbers(number, theirs), atol=1e-4)
    # the notebook's GAT output (its GCN's, each node the mean of its neighbours', above)
    expected = [[1.2913, 1.9800], [4.2344, 3.7725], [4.6798, 4.8362], [4.5043, 4.7351]]
    np.testing.assert_allclose(space["out_feats"].numpy()[0], expected, atol=1e-4)


def test_gat_layer_gradients_as_torchs(gnn):
    """GATLayer on a random batch of graphs, torch's weights in tricycle's layer (two heads,
    concatenated and averaged): the same outputs and gradients of the input and the
    parameters, through ``index_select``, the einsums and the masked write."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = gnn
    rng = np.random.default_rng(1)
    feats = rng.normal(size=(3, 5, 4)).astype(np.float32)
    adj = (rng.uniform(size=(3, 5, 5)) < 0.4).astype(np.float32)
    adj = np.maximum(adj, np.eye(5, dtype=np.float32))  # self-connections, as the layer assumes
    for concat_heads in True, False:
        torch.manual_seed(0)
        theirs = their_space["GATLayer"](4, 6, num_heads=2, concat_heads=concat_heads)
        ours = space["GATLayer"](4, 6, num_heads=2, concat_heads=concat_heads)
        assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
        x, y = torch.tensor(feats, requires_grad=True), tricycle.tensor(feats, requires_grad=True)
        want = theirs(x, torch.tensor(adj))
        got = ours(y, tricycle.tensor(adj))
        np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
        weights = rng.normal(size=want.shape).astype(np.float32)
        (want * torch.tensor(weights)).sum().backward()
        (got * tricycle.tensor(weights)).sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-6)
        grads = torch_layout_grads(ours)
        for name, p in theirs.named_parameters():
            np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-4, atol=1e-6)
