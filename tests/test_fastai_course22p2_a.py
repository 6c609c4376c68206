"""fast.ai's "Practical Deep Learning for Coders" part 2 (fastai/course22p2, commit df93232),
notebooks 01_matmul, 03_backprop, 04_minibatch_training, 07_convolutions, 08_autoencoder and
09_learner, run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in their text
(docs/pytorch.md's promise; the method of tests/test_d2l_basics.py), beside the course's
``miniai`` package built for each library by tests/fastai_miniai.py (the course's
miniai/training.py, datasets.py, conv.py and learner.py, verbatim, with stand-ins for fastcore,
torcheval, fastprogress, Hugging Face ``datasets`` and torchvision).

- 01_matmul: Python lists, the hand-written random generator, ``tensor``, ``.type()``, the matmul
  by three loops of scalar steps (``t1[i,j] += ...``), then by rows and ``.sum()``, ``torch.dot``,
  broadcasting (``expand_as`` and its ``stride()`` of 0, ``storage()``, ``None`` indexing), einsum,
  ``@`` and the "kernel" launched over a grid, each checked by the notebook's ``test_close``;
- 03_backprop: the MLP's forward and backward by hand, each gradient kept on its tensor as an
  attribute (``inp.g = out.g @ w.t()``), checked against autograd, then the ``Lin``/``Relu``/
  ``Mse`` classes and the ``Module`` base class, and an ``nn.Module`` of hand-made ``Linear``;
- 04_minibatch_training: ``log_softmax``, ``logsumexp``, ``nll`` and ``F.cross_entropy`` checked
  against each other, SGD by hand over a list of layers, ``nn.Module``'s ``named_children`` and
  ``add_module``, ``nn.ModuleList``, ``nn.Sequential``, an ``Optimizer``, ``optim.SGD``, the
  notebook's ``Dataset``/``DataLoader``/``Sampler``/``BatchSampler``/``collate``, torch's
  ``DataLoader`` with ``RandomSampler``/``SequentialSampler``/``BatchSampler``, ``fit`` and
  ``get_dls``;
- 07_convolutions: edge kernels applied by hand, by ``F.unfold`` and a product, by
  ``F.conv2d``; the ``conv`` helper and its CNN trained by ``fit`` over ``collate_device``'s
  batches; a picture read by ``read_image`` shown per channel;
- 08_autoencoder: the Hugging Face data set with ``with_transform`` and ``collate_dict``, the
  CNN, and the autoencoder with ``nn.ZeroPad2d(2)``/``nn.ZeroPad2d(-2)`` (negative padding
  crops, as torch's) and ``nn.UpsamplingNearest2d``;
- 09_learner: each step of the ``Learner``: the basic one, callbacks (``CompletionCB``,
  ``SingleBatchCB``, the cancel exceptions), the notebook's ``Metric``/``Accuracy`` and
  torcheval's, ``MetricsCB``/``DeviceCB``/``TrainCB``/``ProgressCB``, the context-manager and
  ``with_cbs`` learners, ``TrainLearner``, ``MomentumLearner`` (``p.grad *= mom`` under
  ``no_grad``), ``LRFinderCB`` (by hand, then with ``ExponentialLR``) and ``lr_find``.

06_foundations is left out: it is plain Python (callbacks, ``sleep``, ipywidgets, dunder
methods) with no tensor in it. Each changed line ends in ``# port:`` and says why: sizes and
epochs shrunk, timings, shell commands and plots dropped (one or two of each kind kept),
packages that are not in tricycle's test extra (numba, sympy, pandas), worker processes, the
GPU cells, ``x.max(-1)`` written ``x.max(dim=-1)`` and a layer's ``weights`` (both documented),
tricycle's refusal of a ``BatchSampler`` given as ``sampler=``. The data are small synthetic
images (``fastai_miniai.images``): the MNIST pickle the early notebooks read is written by the
test, and the stand-in ``load_dataset("fashion_mnist")`` serves the later ones.

Each notebook runs under torch (skipped without it), then under tricycle; the notebooks' own
checks hold under both; the MLPs learn (the deep CNNs stay at chance in the few plain-SGD steps
the test affords, under both, as in the notebooks' first epochs); and from torch's weights
(``nn.from_torch``) each notebook's own models (the MLP, the CNNs, the autoencoder, the Learner's
model) give torch's outputs and input and parameter gradients, and the hand-written
gradients of 03 are torch's.
"""

# ruff: noqa: E501, W291, W293, E701, E702, E401, E731, E741, F403, F405

import gzip
import pickle
import re

import numpy as np
import pytest

from tests import fastai_miniai as miniai
from tests.test_ztm_pytorch_vit import grads_as_torchs

MATMUL = r"""
from pathlib import Path
import pickle, gzip, math, os, time, shutil, matplotlib as mpl, matplotlib.pyplot as plt
# %%
MNIST_URL='https://github.com/mnielsen/neural-networks-and-deep-learning/blob/master/data/mnist.pkl.gz?raw=true'
path_data = Path('data')
path_data.mkdir(exist_ok=True)
path_gz = path_data/'mnist.pkl.gz'
# %%
from urllib.request import urlretrieve
if not path_gz.exists(): urlretrieve(MNIST_URL, path_gz)
# %%
# !ls -l data  # port: a shell command
# %%
with gzip.open(path_gz, 'rb') as f: ((x_train, y_train), (x_valid, y_valid), _) = pickle.load(f, encoding='latin-1')
# %%
lst1 = list(x_train[0])
vals = lst1[200:210]
vals
# %%
def chunks(x, sz):
    for i in range(0, len(x), sz): yield x[i:i+sz]
# %%
list(chunks(vals, 5))
# %%
mpl.rcParams['image.cmap'] = 'gray'
plt.imshow(list(chunks(lst1, 28)));
# %%
from itertools import islice
# %%
it = iter(vals)
islice(it, 5)
# %%
list(islice(it, 5))
# %%
list(islice(it, 5))
# %%
list(islice(it, 5))
# %%
it = iter(lst1)
img = list(iter(lambda: list(islice(it, 28)), []))
# %%
plt.imshow(img);
# %%
img[20][15]
# %%
class Matrix:
    def __init__(self, xs): self.xs = xs
    def __getitem__(self, idxs): return self.xs[idxs[0]][idxs[1]]
# %%
m = Matrix(img)
m[20,15]
# %%
import torch
from torch import tensor
# %%
tensor([1,2,3])
# %%
x_train,y_train,x_valid,y_valid = map(tensor, (x_train,y_train,x_valid,y_valid))
x_train.shape
# %%
x_train.type()
# %%
imgs = x_train.reshape((-1,28,28))
imgs.shape
# %%
plt.imshow(imgs[0]);
# %%
imgs[0,20,15]
# %%
n,c = x_train.shape
y_train, y_train.shape
# %%
min(y_train),max(y_train)
# %%
y_train.min(), y_train.max()
# %%
rnd_state = None
def seed(a):
    global rnd_state
    a, x = divmod(a, 30268)
    a, y = divmod(a, 30306)
    a, z = divmod(a, 30322)
    rnd_state = int(x)+1, int(y)+1, int(z)+1
# %%
seed(457428938475)
rnd_state
# %%
def rand():
    global rnd_state
    x, y, z = rnd_state
    x = (171 * x) % 30269
    y = (172 * y) % 30307
    z = (170 * z) % 30323
    rnd_state = x,y,z
    return (x/30269 + y/30307 + z/30323) % 1.0
# %%
rand(),rand(),rand()
# %%
# if os.fork(): print(f'In parent: {rand()}')  # port: no fork in a test process
# else:  # port: no fork in a test process
#     print(f'In child: {rand()}')  # port: no fork in a test process
#     os._exit(os.EX_OK)  # port: no fork in a test process
# %%
# if os.fork(): print(f'In parent: {torch.rand(1)}')  # port: no fork in a test process
# else:  # port: no fork in a test process
#     print(f'In child: {torch.rand(1)}')  # port: no fork in a test process
#     os._exit(os.EX_OK)  # port: no fork in a test process
# %%
plt.plot([rand() for _ in range(50)]);
# %%
plt.hist([rand() for _ in range(1000)]);  # port: 1000 draws (10000)
# %%
# %timeit -n 10 list(chunks([rand() for _ in range(7840)], 10))  # port: a timing
# %%
# %timeit -n 10 torch.randn(784,10)  # port: a timing
# %%
torch.manual_seed(1)
weights = torch.randn(784,10)
bias = torch.zeros(10)
# %%
m1 = x_valid[:1]  # port: one row (5): the loops of Python steps below are slow on 2 cores
m2 = weights
# %%
m1.shape,m2.shape
# %%
ar,ac = m1.shape # n_rows * n_cols
br,bc = m2.shape
(ar,ac),(br,bc)
# %%
t1 = torch.zeros(ar, bc)
t1.shape
# %%
for i in range(ar):         # 5 (1 here)
    for j in range(bc):     # 10
        for k in range(ac): # 784
            t1[i,j] += m1[i,k] * m2[k,j]
# %%
t1
# %%
t1.shape
# %%
torch.set_printoptions(precision=2, linewidth=140, sci_mode=False)
t1
# %%
import numpy as np
np.set_printoptions(precision=2, linewidth=140)
# %%
def matmul(a,b):
    (ar,ac),(br,bc) = a.shape,b.shape
    c = torch.zeros(ar, bc)
    for i in range(ar):
        for j in range(bc):
            for k in range(ac): c[i,j] += a[i,k] * b[k,j]
    return c
# %%
# %time _=matmul(m1, m2)  # port: a timing (the loops once more)
# %%
ar*bc*ac
# %%
# from numba import njit  # port: numba is not in tricycle's test extra (and compiling takes seconds)
# %%
# @njit  # port: numba is not in tricycle's test extra
# def dot(a,b):  # port: numba is not in tricycle's test extra
#     res = 0.  # port: numba is not in tricycle's test extra
#     for i in range(len(a)): res+=a[i]*b[i]  # port: numba is not in tricycle's test extra
#     return res  # port: numba is not in tricycle's test extra
# %%
from numpy import array
# %%
# %time dot(array([1.,2,3]),array([2.,3,4]))  # port: numba
# %%
# %time dot(array([1.,2,3]),array([2.,3,4]))  # port: numba
# %%
# def matmul(a,b):  # port: numba's dot
#     (ar,ac),(br,bc) = a.shape,b.shape  # port: numba's dot
#     c = torch.zeros(ar, bc)  # port: numba's dot
#     for i in range(ar):  # port: numba's dot
#         for j in range(bc): c[i,j] = dot(a[i,:], b[:,j])  # port: numba's dot
#     return c  # port: numba's dot
# %%
m1a,m2a = m1.numpy(),m2.numpy()
# %%
from fastcore.test import *
# %%
# test_close(t1,matmul(m1a, m2a))  # port: numba's matmul
# %%
# %timeit -n 50 matmul(m1a,m2a)  # port: a timing
# %%
a = tensor([10., 6, -4])
b = tensor([2., 8, 7])
a,b
# %%
a + b
# %%
(a < b).float().mean()
# %%
m = tensor([[1., 2, 3], [4,5,6], [7,8,9]]); m
# %%
sf = (m*m).sum()
sf
# %%
sf.sqrt()
# %%
m[2,:],m[:,2]
# %%
m[2]
# %%
def matmul(a,b):
    (ar,ac),(br,bc) = a.shape,b.shape
    c = torch.zeros(ar, bc)
    for i in range(ar):
        for j in range(bc): c[i,j] = (a[i,:] * b[:,j]).sum()
    return c
# %%
test_close(t1,matmul(m1, m2))
# %%
# %timeit -n 50 _=matmul(m1, m2)  # port: a timing
# %%
def matmul(a,b):
    (ar,ac),(br,bc) = a.shape,b.shape
    c = torch.zeros(ar, bc)
    for i in range(ar):
        for j in range(bc): c[i,j] = torch.dot(a[i,:], b[:,j])
    return c
# %%
test_close(t1,matmul(m1, m2))
# %%
# %timeit -n 50 _=matmul(m1, m2)  # port: a timing
# %%
a
# %%
a > 0
# %%
a + 1
# %%
m
# %%
2*m
# %%
c = tensor([10.,20,30]); c
# %%
m
# %%
m.shape,c.shape
# %%
m + c
# %%
c + m
# %%
t = c.expand_as(m)
# %%
t
# %%
m + t
# %%
t.storage()
# %%
t.stride(), t.shape
# %%
c.unsqueeze(0), c[None, :]
# %%
c.shape, c.unsqueeze(0).shape
# %%
c.unsqueeze(1), c[:, None]
# %%
c.shape, c.unsqueeze(1).shape
# %%
c[None].shape,c[...,None].shape
# %%
c[:,None].expand_as(m)
# %%
m + c[:,None]
# %%
m + c[None,:]
# %%
c[None,:]
# %%
c[None,:].shape
# %%
c[:,None]
# %%
c[:,None].shape
# %%
c[None,:] * c[:,None]
# %%
c[None] > c[:,None]
# %%
m*m
# %%
digit = m1[0]
digit.shape,m2.shape
# %%
digit[:,None].shape
# %%
digit[:,None].expand_as(m2).shape
# %%
(digit[:,None]*m2).shape
# %%
def matmul(a,b):
    (ar,ac),(br,bc) = a.shape,b.shape
    c = torch.zeros(ar, bc)
    for i in range(ar):
#       c[i,j] = (a[i,:] * b[:,j]).sum()      # previous version
        c[i]   = (a[i,:,None] * b).sum(dim=0) # broadcast version
    return c
# %%
test_close(t1,matmul(m1, m2))
# %%
# %timeit -n 50 _=matmul(m1, m2)  # port: a timing
# %%
tr = matmul(x_train, weights)
tr
# %%
tr.shape
# %%
# %time _=matmul(x_train, weights)  # port: a timing
# %%
m1.shape,m2.shape
# %%
# c[i,j] += a[i,k] * b[k,j]
# c[i,j] = (a[i,:] * b[:,j]).sum()
mr = torch.einsum('ik,kj->ikj', m1, m2)
mr.shape
# %%
mr.sum(1)
# %%
torch.einsum('ik,kj->ij', m1, m2)
# %%
def matmul(a,b): return torch.einsum('ik,kj->ij', a, b)
# %%
test_close(tr, matmul(x_train, weights), eps=1e-3)
# %%
# %timeit -n 5 _=matmul(x_train, weights)  # port: a timing
# %%
test_close(tr, x_train@weights, eps=1e-3)
# %%
# %timeit -n 5 _=torch.matmul(x_train, weights)  # port: a timing
# %%
def matmul(grid, a,b,c):
    i,j = grid
    if i < c.shape[0] and j < c.shape[1]:
        tmp = 0.
        for k in range(a.shape[1]): tmp += a[i, k] * b[k, j]
        c[i,j] = tmp
# %%
res = torch.zeros(ar, bc)
matmul((0,0), m1, m2, res)
res
# %%
def launch_kernel(kernel, grid_x, grid_y, *args, **kwargs):
    for i in range(grid_x):
        for j in range(grid_y): kernel((i,j), *args, **kwargs)
# %%
res = torch.zeros(ar, bc)
launch_kernel(matmul, ar, bc, m1, m2, res)
res
# %%
# port: the GPU cells (numba.cuda, CUDA tensors) are left out: no GPU in the test
"""

BACKPROP = r"""
import pickle,gzip,math,os,time,shutil,torch,matplotlib as mpl, numpy as np
from pathlib import Path
from torch import tensor
from fastcore.test import test_close
torch.manual_seed(42)

mpl.rcParams['image.cmap'] = 'gray'
torch.set_printoptions(precision=2, linewidth=125, sci_mode=False)
np.set_printoptions(precision=2, linewidth=125)

path_data = Path('data')
path_gz = path_data/'mnist.pkl.gz'
with gzip.open(path_gz, 'rb') as f: ((x_train, y_train), (x_valid, y_valid), _) = pickle.load(f, encoding='latin-1')
x_train, y_train, x_valid, y_valid = map(tensor, [x_train, y_train, x_valid, y_valid])
# %%
n,m = x_train.shape
c = y_train.max()+1
n,m,c
# %%
# num hidden
nh = 50
# %%
w1 = torch.randn(m,nh)
b1 = torch.zeros(nh)
w2 = torch.randn(nh,1)
b2 = torch.zeros(1)
# %%
def lin(x, w, b): return x@w + b
# %%
t = lin(x_valid, w1, b1)
t.shape
# %%
def relu(x): return x.clamp_min(0.)
# %%
t = relu(t)
t
# %%
def model(xb):
    l1 = lin(xb, w1, b1)
    l2 = relu(l1)
    return lin(l2, w2, b2)
# %%
res = model(x_valid)
res.shape
# %%
res.shape,y_valid.shape
# %%
(res-y_valid).shape
# %%
res[:,0].shape
# %%
res.squeeze().shape
# %%
(res[:,0]-y_valid).shape
# %%
y_train,y_valid = y_train.float(),y_valid.float()

preds = model(x_train)
preds.shape
# %%
def mse(output, targ): return (output[:,0]-targ).pow(2).mean()
# %%
mse(preds, y_train)
# %%
# from sympy import symbols,diff  # port: sympy is not in tricycle's test extra
# x,y = symbols('x y')  # port: sympy is not in tricycle's test extra
# diff(x**2, x)  # port: sympy is not in tricycle's test extra
# %%
# diff(3*x**2+9, x)  # port: sympy is not in tricycle's test extra
# %%
def lin_grad(inp, out, w, b):
    # grad of matmul with respect to input
    inp.g = out.g @ w.t()
    w.g = (inp.unsqueeze(-1) * out.g.unsqueeze(1)).sum(0)
    b.g = out.g.sum(0)
# %%
def forward_and_backward(inp, targ):
    # forward pass:
    l1 = lin(inp, w1, b1)
    l2 = relu(l1)
    out = lin(l2, w2, b2)
    diff = out[:,0]-targ
    loss = diff.pow(2).mean()
    
    # backward pass:
    out.g = 2.*diff[:,None] / inp.shape[0]
    lin_grad(l2, out, w2, b2)
    l1.g = (l1>0).float() * l2.g
    lin_grad(inp, l1, w1, b1)
# %%
forward_and_backward(x_train, y_train)
# %%
# Save for testing against later
def get_grad(x): return x.g.clone()
chks = w1,w2,b1,b2,x_train
grads = w1g,w2g,b1g,b2g,ig = tuple(map(get_grad, chks))
# %%
def mkgrad(x): return x.clone().requires_grad_(True)
ptgrads = w12,w22,b12,b22,xt2 = tuple(map(mkgrad, chks))
# %%
def forward(inp, targ):
    l1 = lin(inp, w12, b12)
    l2 = relu(l1)
    out = lin(l2, w22, b22)
    return mse(out, targ)
# %%
loss = forward(xt2, y_train)
loss.backward()
# %%
for a,b in zip(grads, ptgrads): test_close(a, b.grad, eps=0.01)
# %%
class Relu():
    def __call__(self, inp):
        self.inp = inp
        self.out = inp.clamp_min(0.)
        return self.out
    
    def backward(self): self.inp.g = (self.inp>0).float() * self.out.g
# %%
class Lin():
    def __init__(self, w, b): self.w,self.b = w,b

    def __call__(self, inp):
        self.inp = inp
        self.out = lin(inp, self.w, self.b)
        return self.out

    def backward(self):
        self.inp.g = self.out.g @ self.w.t()
        self.w.g = self.inp.t() @ self.out.g
        self.b.g = self.out.g.sum(0)
# %%
class Mse():
    def __call__(self, inp, targ):
        self.inp,self.targ = inp,targ
        self.out = mse(inp, targ)
        return self.out
    
    def backward(self):
        self.inp.g = 2. * (self.inp.squeeze() - self.targ).unsqueeze(-1) / self.targ.shape[0]
# %%
class Model():
    def __init__(self, w1, b1, w2, b2):
        self.layers = [Lin(w1,b1), Relu(), Lin(w2,b2)]
        self.loss = Mse()
        
    def __call__(self, x, targ):
        for l in self.layers: x = l(x)
        return self.loss(x, targ)
    
    def backward(self):
        self.loss.backward()
        for l in reversed(self.layers): l.backward()
# %%
model = Model(w1, b1, w2, b2)
# %%
loss = model(x_train, y_train)
# %%
model.backward()
# %%
test_close(w2g, w2.g, eps=0.01)
test_close(b2g, b2.g, eps=0.01)
test_close(w1g, w1.g, eps=0.01)
test_close(b1g, b1.g, eps=0.01)
test_close(ig, x_train.g, eps=0.01)
# %%
class Module():
    def __call__(self, *args):
        self.args = args
        self.out = self.forward(*args)
        return self.out

    def forward(self): raise Exception('not implemented')
    def backward(self): self.bwd(self.out, *self.args)
    def bwd(self): raise Exception('not implemented')
# %%
class Relu(Module):
    def forward(self, inp): return inp.clamp_min(0.)
    def bwd(self, out, inp): inp.g = (inp>0).float() * out.g
# %%
class Lin(Module):
    def __init__(self, w, b): self.w,self.b = w,b
    def forward(self, inp): return inp@self.w + self.b
    def bwd(self, out, inp):
        inp.g = self.out.g @ self.w.t()
        self.w.g = inp.t() @ self.out.g
        self.b.g = self.out.g.sum(0)
# %%
class Mse(Module):
    def forward (self, inp, targ): return (inp.squeeze() - targ).pow(2).mean()
    def bwd(self, out, inp, targ): inp.g = 2*(inp.squeeze()-targ).unsqueeze(-1) / targ.shape[0]
# %%
model = Model(w1, b1, w2, b2)
# %%
loss = model(x_train, y_train)
# %%
model.backward()
# %%
test_close(w2g, w2.g, eps=0.01)
test_close(b2g, b2.g, eps=0.01)
test_close(w1g, w1.g, eps=0.01)
test_close(b1g, b1.g, eps=0.01)
test_close(ig, x_train.g, eps=0.01)
# %%
from torch import nn
import torch.nn.functional as F
# %%
class Linear(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = torch.randn(n_in,n_out).requires_grad_()
        self.b = torch.zeros(n_out).requires_grad_()
    def forward(self, inp): return inp@self.w + self.b
# %%
class Model(nn.Module):
    def __init__(self, n_in, nh, n_out):
        super().__init__()
        self.layers = [Linear(n_in,nh), nn.ReLU(), Linear(nh,n_out)]
        
    def __call__(self, x, targ):
        for l in self.layers: x = l(x)
        return F.mse_loss(x, targ[:,None])
# %%
model = Model(m, nh, 1)
loss = model(x_train, y_train)
loss.backward()
# %%
l0 = model.layers[0]
l0.b.grad
"""

MINIBATCH = r"""
#| default_exp training
# %%
#|export
import pickle,gzip,math,os,time,shutil,torch,matplotlib as mpl,numpy as np,matplotlib.pyplot as plt
from pathlib import Path
from torch import tensor,nn
import torch.nn.functional as F
# %%
from fastcore.test import test_close

torch.set_printoptions(precision=2, linewidth=140, sci_mode=False)
torch.manual_seed(1)
mpl.rcParams['image.cmap'] = 'gray'

path_data = Path('data')
path_gz = path_data/'mnist.pkl.gz'
with gzip.open(path_gz, 'rb') as f: ((x_train, y_train), (x_valid, y_valid), _) = pickle.load(f, encoding='latin-1')
x_train, y_train, x_valid, y_valid = map(tensor, [x_train, y_train, x_valid, y_valid])
# %%
n,m = x_train.shape
c = y_train.max()+1
nh = 50
# %%
class Model(nn.Module):
    def __init__(self, n_in, nh, n_out):
        super().__init__()
        self.layers = [nn.Linear(n_in,nh), nn.ReLU(), nn.Linear(nh,n_out)]
        
    def __call__(self, x):
        for l in self.layers: x = l(x)
        return x
# %%
model = Model(m, nh, 10)
pred = model(x_train)
pred.shape
# %%
def log_softmax(x): return (x.exp()/(x.exp().sum(-1,keepdim=True))).log()
# %%
log_softmax(pred)
# %%
def log_softmax(x): return x - x.exp().sum(-1,keepdim=True).log()
# %%
def logsumexp(x):
    m = x.max(dim=-1)[0]  # port: positional x.max(-1) keeps numpy's meaning (documented)
    return m + (x-m[:,None]).exp().sum(-1).log()
# %%
def log_softmax(x): return x - x.logsumexp(-1,keepdim=True)
# %%
test_close(logsumexp(pred), pred.logsumexp(-1))
sm_pred = log_softmax(pred)
sm_pred
# %%
y_train[:3]
# %%
sm_pred[0,5],sm_pred[1,0],sm_pred[2,4]
# %%
sm_pred[[0,1,2], y_train[:3]]
# %%
def nll(input, target): return -input[range(target.shape[0]), target].mean()
# %%
loss = nll(sm_pred, y_train)
loss
# %%
test_close(F.nll_loss(F.log_softmax(pred, -1), y_train), loss, 1e-3)
# %%
test_close(F.cross_entropy(pred, y_train), loss, 1e-3)
# %%
loss_func = F.cross_entropy
# %%
bs=50                  # batch size

xb = x_train[0:bs]     # a mini-batch from x
preds = model(xb)      # predictions
preds[0], preds.shape
# %%
yb = y_train[0:bs]
yb
# %%
loss_func(preds, yb)
# %%
preds.argmax(dim=1)
# %%
#|export
def accuracy(out, yb): return (out.argmax(dim=1)==yb).float().mean()
# %%
accuracy(preds, yb)
# %%
lr = 0.5   # learning rate
epochs = 3 # how many epochs to train for
# %%
#|export
def report(loss, preds, yb): print(f'{loss:.2f}, {accuracy(preds, yb):.2f}')
# %%
xb,yb = x_train[:bs],y_train[:bs]
preds = model(xb)
report(loss_func(preds, yb), preds, yb)
# %%
for epoch in range(epochs):
    for i in range(0, n, bs):
        s = slice(i, min(n,i+bs))
        xb,yb = x_train[s],y_train[s]
        preds = model(xb)
        loss = loss_func(preds, yb)
        loss.backward()
        with torch.no_grad():
            for l in model.layers:
                if hasattr(l, 'weights'):  # port: a Linear's weights (in, out) (documented)
                    l.weights -= l.weights.grad * lr  # port: weights
                    l.bias   -= l.bias.grad   * lr
                    l.weights.grad.zero_()  # port: weights
                    l.bias  .grad.zero_()
    report(loss, preds, yb)
# %%
m1 = nn.Module()
m1.foo = nn.Linear(3,4)
m1
# %%
list(m1.named_children())
# %%
m1.named_children()
# %%
list(m1.parameters())
# %%
class MLP(nn.Module):
    def __init__(self, n_in, nh, n_out):
        super().__init__()
        self.l1 = nn.Linear(n_in,nh)
        self.l2 = nn.Linear(nh,n_out)
        self.relu = nn.ReLU()
        
    def forward(self, x): return self.l2(self.relu(self.l1(x)))
# %%
model = MLP(m, nh, 10)
model.l1
# %%
model
# %%
for name,l in model.named_children(): print(f"{name}: {l}")
# %%
for p in model.parameters(): print(p.shape)
# %%
def fit():
    for epoch in range(epochs):
        for i in range(0, n, bs):
            s = slice(i, min(n,i+bs))
            xb,yb = x_train[s],y_train[s]
            preds = model(xb)
            loss = loss_func(preds, yb)
            loss.backward()
            with torch.no_grad():
                for p in model.parameters(): p -= p.grad * lr
                model.zero_grad()
        report(loss, preds, yb)
# %%
fit()
# %%
class MyModule:
    def __init__(self, n_in, nh, n_out):
        self._modules = {}
        self.l1 = nn.Linear(n_in,nh)
        self.l2 = nn.Linear(nh,n_out)

    def __setattr__(self,k,v):
        if not k.startswith("_"): self._modules[k] = v
        super().__setattr__(k,v)

    def __repr__(self): return f'{self._modules}'
    
    def parameters(self):
        for l in self._modules.values(): yield from l.parameters()
# %%
mdl = MyModule(m,nh,10)
mdl
# %%
for p in mdl.parameters(): print(p.shape)
# %%
from functools import reduce
# %%
layers = [nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10)]
# %%
class Model(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers
        for i,l in enumerate(self.layers): self.add_module(f'layer_{i}', l)

    def forward(self, x): return reduce(lambda val,layer: layer(val), self.layers, x)
# %%
model = Model(layers)
model
# %%
model(xb).shape
# %%
class SequentialModel(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        
    def forward(self, x):
        for l in self.layers: x = l(x)
        return x
# %%
model = SequentialModel(layers)
model
# %%
fit()
# %%
model = nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
# %%
fit()
loss_func(model(xb), yb), accuracy(model(xb), yb)
# %%
model
# %%
class Optimizer():
    def __init__(self, params, lr=0.5): self.params,self.lr=list(params),lr

    def step(self):
        with torch.no_grad():
            for p in self.params: p -= p.grad * self.lr

    def zero_grad(self):
        for p in self.params: p.grad.data.zero_()
# %%
model = nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
# %%
opt = Optimizer(model.parameters())
# %%
for epoch in range(epochs):
    for i in range(0, n, bs):
        s = slice(i, min(n,i+bs))
        xb,yb = x_train[s],y_train[s]
        preds = model(xb)
        loss = loss_func(preds, yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
    report(loss, preds, yb)
# %%
from torch import optim
# %%
def get_model():
    model = nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
    return model, optim.SGD(model.parameters(), lr=lr)
# %%
model,opt = get_model()
loss_func(model(xb), yb)
# %%
for epoch in range(epochs):
    for i in range(0, n, bs):
        s = slice(i, min(n,i+bs))
        xb,yb = x_train[s],y_train[s]
        preds = model(xb)
        loss = loss_func(preds, yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
    report(loss, preds, yb)
# %%
#|export
class Dataset():
    def __init__(self, x, y): self.x,self.y = x,y
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i],self.y[i]
# %%
train_ds,valid_ds = Dataset(x_train, y_train),Dataset(x_valid, y_valid)
assert len(train_ds)==len(x_train)
assert len(valid_ds)==len(x_valid)
# %%
xb,yb = train_ds[0:5]
assert xb.shape==(5,28*28)
assert yb.shape==(5,)
xb,yb
# %%
model,opt = get_model()
# %%
for epoch in range(epochs):
    for i in range(0, n, bs):
        xb,yb = train_ds[i:min(n,i+bs)]
        preds = model(xb)
        loss = loss_func(preds, yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
    report(loss, preds, yb)
# %%
class DataLoader():
    def __init__(self, ds, bs): self.ds,self.bs = ds,bs
    def __iter__(self):
        for i in range(0, len(self.ds), self.bs): yield self.ds[i:i+self.bs]
# %%
train_dl = DataLoader(train_ds, bs)
valid_dl = DataLoader(valid_ds, bs)
# %%
xb,yb = next(iter(valid_dl))
xb.shape
# %%
yb
# %%
plt.imshow(xb[0].view(28,28))
yb[0]
# %%
model,opt = get_model()
# %%
def fit():
    for epoch in range(epochs):
        for xb,yb in train_dl:
            preds = model(xb)
            loss = loss_func(preds, yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        report(loss, preds, yb)
# %%
fit()
loss_func(model(xb), yb), accuracy(model(xb), yb)
# %%
import random
# %%
class Sampler():
    def __init__(self, ds, shuffle=False): self.n,self.shuffle = len(ds),shuffle
    def __iter__(self):
        res = list(range(self.n))
        if self.shuffle: random.shuffle(res)
        return iter(res)
# %%
from itertools import islice
# %%
ss = Sampler(train_ds)
# %%
it = iter(ss)
for o in range(5): print(next(it))
# %%
list(islice(ss, 5))
# %%
ss = Sampler(train_ds, shuffle=True)
list(islice(ss, 5))
# %%
import fastcore.all as fc
# %%
class BatchSampler():
    def __init__(self, sampler, bs, drop_last=False): fc.store_attr()
    def __iter__(self): yield from fc.chunked(iter(self.sampler), self.bs, drop_last=self.drop_last)
# %%
batchs = BatchSampler(ss, 4)
list(islice(batchs, 5))
# %%
def collate(b):
    xs,ys = zip(*b)
    return torch.stack(xs),torch.stack(ys)
# %%
class DataLoader():
    def __init__(self, ds, batchs, collate_fn=collate): fc.store_attr()
    def __iter__(self): yield from (self.collate_fn(self.ds[i] for i in b) for b in self.batchs)
# %%
train_samp = BatchSampler(Sampler(train_ds, shuffle=True ), bs)
valid_samp = BatchSampler(Sampler(valid_ds, shuffle=False), bs)
# %%
train_dl = DataLoader(train_ds, batchs=train_samp)
valid_dl = DataLoader(valid_ds, batchs=valid_samp)
# %%
xb,yb = next(iter(valid_dl))
plt.imshow(xb[0].view(28,28))
yb[0]
# %%
xb.shape,yb.shape
# %%
model,opt = get_model()
# %%
fit()
# %%
import multiprocessing as mp  # port: tricycle has no torch.multiprocessing (the standard library's serves)
from fastcore.basics import store_attr
# %%
train_ds[[3,6,8,1]]
# %%
train_ds.__getitem__([3,6,8,1])
# %%
for o in map(train_ds.__getitem__, ([3,6],[8,1])): print(o)
# %%
# class DataLoader():  # port: worker processes (a pool started in the test: slow on 2 cores)
#     def __init__(self, ds, batchs, n_workers=1, collate_fn=collate): fc.store_attr()  # port: worker processes (a pool started in the test: slow on 2 cores)
#     def __iter__(self):  # port: worker processes (a pool started in the test: slow on 2 cores)
#         with mp.Pool(self.n_workers) as ex: yield from ex.map(self.ds.__getitem__, iter(self.batchs))  # port: worker processes (a pool started in the test: slow on 2 cores)
# %%
# train_dl = DataLoader(train_ds, batchs=train_samp, n_workers=2)  # port: worker processes (a pool started in the test: slow on 2 cores)
# it = iter(train_dl)  # port: worker processes (a pool started in the test: slow on 2 cores)
# %%
# xb,yb = next(it)  # port: worker processes (a pool started in the test: slow on 2 cores)
# xb.shape,yb.shape  # port: worker processes (a pool started in the test: slow on 2 cores)
# %%
#|export
from torch.utils.data import DataLoader, SequentialSampler, RandomSampler, BatchSampler
# %%
train_samp = BatchSampler(RandomSampler(train_ds),     bs, drop_last=False)
valid_samp = BatchSampler(SequentialSampler(valid_ds), bs, drop_last=False)
# %%
train_dl = DataLoader(train_ds, batch_sampler=train_samp, collate_fn=collate)
valid_dl = DataLoader(valid_ds, batch_sampler=valid_samp, collate_fn=collate)
# %%
model,opt = get_model()
fit()
loss_func(model(xb), yb), accuracy(model(xb), yb)
# %%
train_dl = DataLoader(train_ds, bs, sampler=RandomSampler(train_ds), collate_fn=collate)
valid_dl = DataLoader(valid_ds, bs, sampler=SequentialSampler(valid_ds), collate_fn=collate)
# %%
train_dl = DataLoader(train_ds, bs, shuffle=True, drop_last=True, num_workers=0)  # port: no worker processes (slow to start on 2 cores)
valid_dl = DataLoader(valid_ds, bs, shuffle=False, num_workers=0)  # port: no worker processes (slow to start on 2 cores)
# %%
model,opt = get_model()
fit()

loss_func(model(xb), yb), accuracy(model(xb), yb)
# %%
train_ds[[4,6,7]]
# %%
train_dl = DataLoader(train_ds, batch_sampler=train_samp)  # port: tricycle refuses a BatchSampler given as sampler= (torch batches its lists again: (1, bs, 784))
valid_dl = DataLoader(valid_ds, batch_sampler=valid_samp)  # port: as the line above
# %%
xb,yb = next(iter(train_dl))
xb.shape,yb.shape
# %%
#|export
def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb,yb in train_dl:
            loss = loss_func(model(xb), yb)
            loss.backward()
            opt.step()
            opt.zero_grad()

        model.eval()
        with torch.no_grad():
            tot_loss,tot_acc,count = 0.,0.,0
            for xb,yb in valid_dl:
                pred = model(xb)
                n = len(xb)
                count += n
                tot_loss += loss_func(pred,yb).item()*n
                tot_acc  += accuracy (pred,yb).item()*n
        print(epoch, tot_loss/count, tot_acc/count)
    return tot_loss/count, tot_acc/count
# %%
#|export
def get_dls(train_ds, valid_ds, bs, **kwargs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=True, **kwargs),
            DataLoader(valid_ds, batch_size=bs*2, **kwargs))
# %%
train_dl,valid_dl = get_dls(train_ds, valid_ds, bs)
model,opt = get_model()
# %%
loss,acc = fit(5, model, loss_func, opt, train_dl, valid_dl)  # port: %time (a timing)
# %%
# import nbdev; nbdev.nbdev_export()  # port: the export is tests/fastai_miniai.py's text
"""

CONVOLUTIONS = r"""
#|default_exp conv
# %%
#|export
import torch
from torch import nn

from torch.utils.data import default_collate
from typing import Mapping

from miniai.training import *
from miniai.datasets import *
# %%
import pickle,gzip,math,os,time,shutil,torch,matplotlib as mpl, numpy as np
import matplotlib.pyplot as plt  # port: pandas is not installed (import pandas as pd,matplotlib.pyplot as plt)
from pathlib import Path
from torch import tensor

from torch.utils.data import DataLoader
from typing import Mapping
# %%
mpl.rcParams['image.cmap'] = 'gray'
# %%
path_data = Path('data')
path_gz = path_data/'mnist.pkl.gz'
with gzip.open(path_gz, 'rb') as f: ((x_train, y_train), (x_valid, y_valid), _) = pickle.load(f, encoding='latin-1')
x_train, y_train, x_valid, y_valid = map(tensor, [x_train, y_train, x_valid, y_valid])
# %%
x_imgs = x_train.view(-1,28,28)
xv_imgs = x_valid.view(-1,28,28)
# %%
mpl.rcParams['figure.dpi'] = 30
# %%
im3 = x_imgs[7]
show_image(im3);
# %%
top_edge = tensor([[-1,-1,-1],
                   [ 0, 0, 0],
                   [ 1, 1, 1]]).float()
# %%
# show_image(top_edge, noframe=False);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
# df = pd.DataFrame(im3[:13,:23])  # port: pandas is not installed (a styled table of the pixels)
# df.style.format(precision=2).set_properties(**{'font-size':'7pt'}).background_gradient('Greys')  # port: pandas is not installed (a styled table of the pixels)
# %%
(im3[3:6,14:17] * top_edge).sum()
# %%
(im3[7:10,14:17] * top_edge).sum()
# %%
def apply_kernel(row, col, kernel): return (im3[row-1:row+2,col-1:col+2] * kernel).sum()
# %%
apply_kernel(4,15,top_edge)
# %%
[[(i,j) for j in range(5)] for i in range(5)]
# %%
rng = range(1,27)
top_edge3 = tensor([[apply_kernel(i,j,top_edge) for j in rng] for i in rng])
# show_image(top_edge3);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
left_edge = tensor([[-1,0,1],
                    [-1,0,1],
                    [-1,0,1]]).float()
# %%
# show_image(left_edge, noframe=False);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
left_edge3 = tensor([[apply_kernel(i,j,left_edge) for j in rng] for i in rng])
# show_image(left_edge3);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
import torch.nn.functional as F
import torch
# %%
inp = im3[None,None,:,:].float()
inp_unf = F.unfold(inp, (3,3))[0]
inp_unf.shape
# %%
w = left_edge.view(-1)
w.shape
# %%
out_unf = w@inp_unf
out_unf.shape
# %%
out = out_unf.view(26,26)
# show_image(out);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
# %timeit -n 1 tensor([[apply_kernel(i,j,left_edge) for j in rng] for i in rng]);  # port: a timing
# %%
# %timeit -n 100 (w@F.unfold(inp, (3,3))[0]).view(26,26);  # port: a timing
# %%
# %timeit -n 100 F.conv2d(inp, left_edge[None,None])  # port: a timing
# %%
diag1_edge = tensor([[ 0,-1, 1],
                     [-1, 1, 0],
                     [ 1, 0, 0]]).float()
# %%
# show_image(diag1_edge, noframe=False);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
diag2_edge = tensor([[ 1,-1, 0],
                     [ 0, 1,-1],
                     [ 0, 0, 1]]).float()
# %%
# show_image(diag2_edge, noframe=False);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
xb = x_imgs[:16][:,None]
xb.shape
# %%
edge_kernels = torch.stack([left_edge, top_edge, diag1_edge, diag2_edge])[:,None]
edge_kernels.shape
# %%
batch_features = F.conv2d(xb, edge_kernels)
batch_features.shape
# %%
img0 = xb[1,0]
# show_image(img0);  # port: a plot (the test's time: the notebook draws a dozen)
# %%
show_images([batch_features[1,i] for i in range(4)])
# %%
n,m = x_train.shape
c = y_train.max()+1
nh = 50
# %%
model = nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
# %%
broken_cnn = nn.Sequential(
    nn.Conv2d(1,30, kernel_size=3, padding=1),
    nn.ReLU(),
    nn.Conv2d(30,10, kernel_size=3, padding=1)
)
# %%
broken_cnn(xb).shape
# %%
#|export
def conv(ni, nf, ks=3, stride=2, act=True):
    res = nn.Conv2d(ni, nf, stride=stride, kernel_size=ks, padding=ks//2)
    if act: res = nn.Sequential(res, nn.ReLU())
    return res
# %%
simple_cnn = nn.Sequential(
    conv(1 ,4),            #14x14
    conv(4 ,8),            #7x7
    conv(8 ,16),           #4x4
    conv(16,16),           #2x2
    conv(16,10, act=False), #1x1
    nn.Flatten(),
)
# %%
simple_cnn(xb).shape
# %%
x_imgs = x_train.view(-1,1,28,28)
xv_imgs = x_valid.view(-1,1,28,28)
train_ds,valid_ds = Dataset(x_imgs, y_train),Dataset(xv_imgs, y_valid)
# %%
#|export
def_device = 'mps' if torch.backends.mps.is_available() else 'cuda' if torch.cuda.is_available() else 'cpu'

def to_device(x, device=def_device):
    if isinstance(x, torch.Tensor): return x.to(device)
    if isinstance(x, Mapping): return {k:v.to(device) for k,v in x.items()}
    return type(x)(to_device(o, device) for o in x)

def collate_device(b): return to_device(default_collate(b))
# %%
from torch import optim

bs = 50  # port: 256 (the test's pickle holds 200 training images: 4 steps an epoch)
lr = 0.4
train_dl,valid_dl = get_dls(train_ds, valid_ds, bs, collate_fn=collate_device)
opt = optim.SGD(simple_cnn.parameters(), lr=lr)
# %%
loss,acc = fit(2, simple_cnn.to(def_device), F.cross_entropy, opt, train_dl, valid_dl)  # port: 2 epochs (5): the test's time
# %%
opt = optim.SGD(simple_cnn.parameters(), lr=lr/4)
loss,acc = fit(2, simple_cnn.to(def_device), F.cross_entropy, opt, train_dl, valid_dl)  # port: 2 epochs (5): the test's time
# %%
simple_cnn[0][0]
# %%
conv1 = simple_cnn[0][0]
next(conv1.parameters()).shape  # port: conv1.weight: tricycle names it weights (documented)
# %%
conv1.bias.shape
# %%
from torchvision.io import read_image
# %%
im = read_image('images/grizzly.jpg')  # port: the stand-in torchvision makes a picture (no images/ folder)
im.shape
# %%
show_image(im.permute(1,2,0));
# %%
_,axs = plt.subplots(1,3)
for bear,ax,color in zip(im,axs,('Reds','Greens','Blues')): show_image(255-bear, ax=ax, cmap=color)
# %%
# import nbdev; nbdev.nbdev_export()  # port: the export is tests/fastai_miniai.py's text
"""

AUTOENCODER = r"""
import pickle,gzip,math,os,time,shutil,torch,matplotlib as mpl,numpy as np,matplotlib.pyplot as plt
import fastcore.all as fc
from collections.abc import Mapping
from pathlib import Path
from operator import attrgetter,itemgetter
from functools import partial

from torch import tensor,nn,optim
from torch.utils.data import DataLoader,default_collate
import torch.nn.functional as F
import torchvision.transforms.functional as TF
from datasets import load_dataset,load_dataset_builder

from fastprogress import progress_bar,master_bar
from miniai.datasets import *
from miniai.training import *
from miniai.conv import *
# %%
from fastcore.test import test_close

torch.set_printoptions(precision=2, linewidth=140, sci_mode=False)
torch.manual_seed(1)
mpl.rcParams['image.cmap'] = 'gray'

import logging
logging.disable(logging.WARNING)
# %%
x,y = 'image','label'
name = "fashion_mnist"
dsd = load_dataset(name, ignore_verifications=True)
# %%
@inplace
def transformi(b): b[x] = [TF.to_tensor(o) for o in b[x]]
# %%
bs = 256
tds = dsd.with_transform(transformi)
# %%
ds = tds['train']
img = ds[0]['image']
show_image(img, figsize=(1,1));
# %%
cf = collate_dict(ds)
# %%
def collate_(b): return to_device(cf(b))
def data_loaders(dsd, bs, **kwargs): return {k:DataLoader(v, bs, **kwargs) for k,v in dsd.items()}
# %%
dls = data_loaders(tds, bs, collate_fn=collate_)
# %%
dt = dls['train']
dv = dls['test']

xb,yb = next(iter(dt))
# %%
labels = ds.features[y].names
# %%
labels
# %%
lbl_getter = itemgetter(*yb[:16])
titles = lbl_getter(labels)
# %%
mpl.rcParams['figure.dpi'] = 70
show_images(xb[:4], imsize=1.7, titles=titles[:4])  # port: 4 images (16): the plots' time
# %%
from torch import optim

bs = 256
lr = 0.4
# %%
cnn = nn.Sequential(
    conv(1 ,4),            #14x14
    conv(4 ,8),            #7x7
    conv(8 ,16),           #4x4
    conv(16,16),           #2x2
    conv(16,10, act=False),
    nn.Flatten()).to(def_device)
# %%
opt = optim.SGD(cnn.parameters(), lr=lr)
loss,acc = fit(2, cnn, F.cross_entropy, opt, dt, dv)  # port: 2 epochs (5): the test's time
# %%
dsd['train'][0]
# %%
def deconv(ni, nf, ks=3, act=True):
    layers = [nn.UpsamplingNearest2d(scale_factor=2),
              nn.Conv2d(ni, nf, stride=1, kernel_size=ks, padding=ks//2)]
    if act: layers.append(nn.ReLU())
    return nn.Sequential(*layers)
# %%
def eval(model, loss_func, valid_dl, epoch=0):
    model.eval()
    with torch.no_grad():
        tot_loss,count = 0.,0
        for xb,_ in valid_dl:
            pred = model(xb)
            n = len(xb)
            count += n
            tot_loss += loss_func(pred,xb).item()*n
    print(epoch, f'{tot_loss/count:.3f}')
# %%
def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb,_ in train_dl:
            loss = loss_func(model(xb), xb)
            loss.backward()
            opt.step()
            opt.zero_grad()
        eval(model, loss_func, valid_dl, epoch)
# %%
ae = nn.Sequential(   #28x28
    nn.ZeroPad2d(2),  #32x32
    conv(1,2),        #16x16
    conv(2,4),        #8x8
#     conv(4,8),        #4x4
#     deconv(8,4),      #8x8
    deconv(4,2),      #16x16
    deconv(2,1, act=False), #32x32
    nn.ZeroPad2d(-2), #28x28
    nn.Sigmoid()
).to(def_device)
# %%
eval(ae, F.mse_loss, dv)
# %%
opt = optim.SGD(ae.parameters(), lr=0.01)
fit(2, ae, F.mse_loss, opt, dt, dv)  # port: 2 epochs (5): the test's time
# %%
opt = optim.SGD(ae.parameters(), lr=0.1)
fit(2, ae, F.mse_loss, opt, dt, dv)  # port: 2 epochs (5): the test's time
# %%
p = ae(xb)
# show_images(p[:16].data.cpu(), imsize=1.5)  # port: a plot (the test's time: the notebook draws a dozen)
# %%
p = ae(xb)
# show_images(p[:16].data.cpu(), imsize=1.5)  # port: a plot (the test's time: the notebook draws a dozen)
# %%
# show_images(xb[:16].data.cpu(), imsize=1.5)  # port: a plot (the test's time: the notebook draws a dozen)
"""

LEARNER = r"""
#| default_exp learner
# %%
#|export
import math,torch,matplotlib.pyplot as plt
import fastcore.all as fc
from collections.abc import Mapping
from operator import attrgetter
from functools import partial
from copy import copy

from torch import optim
import torch.nn.functional as F

from miniai.conv import *

from fastprogress import progress_bar,master_bar
# %%
import matplotlib as mpl
import torchvision.transforms.functional as TF
from contextlib import contextmanager
from torch import nn,tensor
from datasets import load_dataset,load_dataset_builder
from miniai.datasets import *
from miniai.conv import *
import logging
from fastcore.test import test_close
# %%
torch.set_printoptions(precision=2, linewidth=140, sci_mode=False)
torch.manual_seed(1)
mpl.rcParams['image.cmap'] = 'gray'
# %%
logging.disable(logging.WARNING)
# %%
x,y = 'image','label'
name = "fashion_mnist"
dsd = load_dataset(name)
# %%
@inplace
def transformi(b): b[x] = [torch.flatten(TF.to_tensor(o)) for o in b[x]]
# %%
bs = 64  # port: 1024 (the test's stand-in fashion_mnist has 256 training images)
tds = dsd.with_transform(transformi)
# %%
dls = DataLoaders.from_dd(tds, bs, num_workers=0)  # port: no worker processes (slow to start on 2 cores)
dt = dls.train
xb,yb = next(iter(dt))
xb.shape,yb[:10]
# %%
class Learner:
    def __init__(self, model, dls, loss_func, lr, opt_func=optim.SGD): fc.store_attr()

    def one_batch(self):
        self.xb,self.yb = to_device(self.batch)
        self.preds = self.model(self.xb)
        self.loss = self.loss_func(self.preds, self.yb)
        if self.model.training:
            self.loss.backward()
            self.opt.step()
            self.opt.zero_grad()
        with torch.no_grad(): self.calc_stats()

    def calc_stats(self):
        acc = (self.preds.argmax(dim=1)==self.yb).float().sum()
        self.accs.append(acc)
        n = len(self.xb)
        self.losses.append(self.loss*n)
        self.ns.append(n)

    def one_epoch(self, train):
        self.model.training = train
        dl = self.dls.train if train else self.dls.valid
        for self.num,self.batch in enumerate(dl): self.one_batch()
        n = sum(self.ns)
        print(self.epoch, self.model.training, sum(self.losses).item()/n, sum(self.accs).item()/n)
    
    def fit(self, n_epochs):
        self.accs,self.losses,self.ns = [],[],[]
        self.model.to(def_device)
        self.opt = self.opt_func(self.model.parameters(), self.lr)
        self.n_epochs = n_epochs
        for self.epoch in range(n_epochs):
            self.one_epoch(True)
            with torch.no_grad(): self.one_epoch(False)
# %%
m,nh = 28*28,50
model = nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
# %%
learn = Learner(model, dls, F.cross_entropy, lr=0.2)
learn.fit(1)
# %%
#|export
class CancelFitException(Exception): pass
class CancelBatchException(Exception): pass
class CancelEpochException(Exception): pass
# %%
#|export
class Callback(): order = 0
# %%
#|export
def run_cbs(cbs, method_nm, learn=None):
    for cb in sorted(cbs, key=attrgetter('order')):
        method = getattr(cb, method_nm, None)
        if method is not None: method(learn)
# %%
class CompletionCB(Callback):
    def before_fit(self, learn): self.count = 0
    def after_batch(self, learn): self.count += 1
    def after_fit(self, learn): print(f'Completed {self.count} batches')
# %%
cbs = [CompletionCB()]
run_cbs(cbs, 'before_fit')
run_cbs(cbs, 'after_batch')
run_cbs(cbs, 'after_fit')
# %%
class Learner():
    def __init__(self, model, dls, loss_func, lr, cbs, opt_func=optim.SGD): fc.store_attr()

    def one_batch(self):
        self.preds = self.model(self.batch[0])
        self.loss = self.loss_func(self.preds, self.batch[1])
        if self.model.training:
            self.loss.backward()
            self.opt.step()
            self.opt.zero_grad()

    def one_epoch(self, train):
        self.model.train(train)
        self.dl = self.dls.train if train else self.dls.valid
        try:
            self.callback('before_epoch')
            for self.iter,self.batch in enumerate(self.dl):
                try:
                    self.callback('before_batch')
                    self.one_batch()
                    self.callback('after_batch')
                except CancelBatchException: pass
            self.callback('after_epoch')
        except CancelEpochException: pass
    
    def fit(self, n_epochs):
        self.n_epochs = n_epochs
        self.epochs = range(n_epochs)
        self.opt = self.opt_func(self.model.parameters(), self.lr)
        try:
            self.callback('before_fit')
            for self.epoch in self.epochs:
                self.one_epoch(True)
                self.one_epoch(False)
            self.callback('after_fit')
        except CancelFitException: pass

    def callback(self, method_nm): run_cbs(self.cbs, method_nm, self)
# %%
m,nh = 28*28,50
def get_model(): return nn.Sequential(nn.Linear(m,nh), nn.ReLU(), nn.Linear(nh,10))
# %%
model = get_model()
learn = Learner(model, dls, F.cross_entropy, lr=0.2, cbs=[CompletionCB()])
learn.fit(1)
# %%
#| export
class SingleBatchCB(Callback):
    order = 1
    def after_batch(self, learn): raise CancelFitException()
# %%
learn = Learner(get_model(), dls, F.cross_entropy, lr=0.2, cbs=[SingleBatchCB(), CompletionCB()])
learn.fit(1)
# %%
class Metric:
    def __init__(self): self.reset()
    def reset(self): self.vals,self.ns = [],[]
    def add(self, inp, targ=None, n=1):
        self.last = self.calc(inp, targ)
        self.vals.append(self.last)
        self.ns.append(n)
    @property
    def value(self):
        ns = tensor(self.ns)
        return (tensor(self.vals)*ns).sum()/ns.sum()
    def calc(self, inps, targs): return inps
# %%
class Accuracy(Metric):
    def calc(self, inps, targs): return (inps==targs).float().mean()
# %%
acc = Accuracy()
acc.add(tensor([0, 1, 2, 0, 1, 2]), tensor([0, 1, 1, 2, 1, 0]))
acc.add(tensor([1, 1, 2, 0, 1]), tensor([0, 1, 1, 2, 1]))
acc.value
# %%
loss = Metric()
loss.add(0.6, n=32)
loss.add(0.9, n=2)
loss.value, round((0.6*32+0.9*2)/(32+2), 2)
# %%
#|export
from torcheval.metrics import MulticlassAccuracy,Mean
# %%
metric = MulticlassAccuracy()
metric.update(tensor([0, 2, 1, 3]), tensor([0, 1, 2, 3]))
metric.compute()
# %%
metric.reset()
metric.compute()
# %%
#|export
def to_cpu(x):
    if isinstance(x, Mapping): return {k:to_cpu(v) for k,v in x.items()}
    if isinstance(x, list): return [to_cpu(o) for o in x]
    if isinstance(x, tuple): return tuple(to_cpu(list(x)))
    res = x.detach().cpu()
    return res.float() if res.dtype==torch.float16 else res
# %%
#|export
class MetricsCB(Callback):
    def __init__(self, *ms, **metrics):
        for o in ms: metrics[type(o).__name__] = o
        self.metrics = metrics
        self.all_metrics = copy(metrics)
        self.all_metrics['loss'] = self.loss = Mean()

    def _log(self, d): print(d)
    def before_fit(self, learn): learn.metrics = self
    def before_epoch(self, learn): [o.reset() for o in self.all_metrics.values()]

    def after_epoch(self, learn):
        log = {k:f'{v.compute():.3f}' for k,v in self.all_metrics.items()}
        log['epoch'] = learn.epoch
        log['train'] = 'train' if learn.model.training else 'eval'
        self._log(log)

    def after_batch(self, learn):
        x,y,*_ = to_cpu(learn.batch)
        for m in self.metrics.values(): m.update(to_cpu(learn.preds), y)
        self.loss.update(to_cpu(learn.loss), weight=len(x))
# %%
#|export
class DeviceCB(Callback):
    def __init__(self, device=def_device): fc.store_attr()
    def before_fit(self, learn):
        if hasattr(learn.model, 'to'): learn.model.to(self.device)
    def before_batch(self, learn): learn.batch = to_device(learn.batch, device=self.device)
# %%
model = get_model()
metrics = MetricsCB(accuracy=MulticlassAccuracy())
learn = Learner(model, dls, F.cross_entropy, lr=0.2, cbs=[DeviceCB(), metrics])
learn.fit(1)
# %%
class Learner():
    def __init__(self, model, dls=(0,), loss_func=F.mse_loss, lr=0.1, cbs=None, opt_func=optim.SGD):
        cbs = fc.L(cbs)
        fc.store_attr()

    @contextmanager
    def cb_ctx(self, nm):
        try:
            self.callback(f'before_{nm}')
            yield
            self.callback(f'after_{nm}')
        except globals()[f'Cancel{nm.title()}Exception']: pass
        finally: self.callback(f'cleanup_{nm}')
                
    def one_epoch(self, train):
        self.model.train(train)
        self.dl = self.dls.train if train else self.dls.valid
        with self.cb_ctx('epoch'):
            for self.iter,self.batch in enumerate(self.dl):
                with self.cb_ctx('batch'):
                    self.predict()
                    self.get_loss()
                    if self.training:
                        self.backward()
                        self.step()
                        self.zero_grad()
    
    def fit(self, n_epochs=1, train=True, valid=True, cbs=None, lr=None):
        cbs = fc.L(cbs)
        # `add_cb` and `rm_cb` were added in lesson 18
        for cb in cbs: self.cbs.append(cb)
        try:
            self.n_epochs = n_epochs
            self.epochs = range(n_epochs)
            self.opt = self.opt_func(self.model.parameters(), self.lr if lr is None else lr)
            with self.cb_ctx('fit'):
                for self.epoch in self.epochs:
                    if train: self.one_epoch(True)
                    if valid: torch.no_grad()(self.one_epoch)(False)
        finally:
            for cb in cbs: self.cbs.remove(cb)

    def __getattr__(self, name):
        if name in ('predict','get_loss','backward','step','zero_grad'): return partial(self.callback, name)
        raise AttributeError(name)

    def callback(self, method_nm): run_cbs(self.cbs, method_nm, self)
    
    @property
    def training(self): return self.model.training
# %%
#|export
class TrainCB(Callback):
    def __init__(self, n_inp=1): self.n_inp = n_inp
    def predict(self, learn): learn.preds = learn.model(*learn.batch[:self.n_inp])
    def get_loss(self, learn): learn.loss = learn.loss_func(learn.preds, *learn.batch[self.n_inp:])
    def backward(self, learn): learn.loss.backward()
    def step(self, learn): learn.opt.step()
    def zero_grad(self, learn): learn.opt.zero_grad()
# %%
#|export
class ProgressCB(Callback):
    order = MetricsCB.order+1
    def __init__(self, plot=False): self.plot = plot
    def before_fit(self, learn):
        learn.epochs = self.mbar = master_bar(learn.epochs)
        self.first = True
        if hasattr(learn, 'metrics'): learn.metrics._log = self._log
        self.losses = []
        self.val_losses = []

    def _log(self, d):
        if self.first:
            self.mbar.write(list(d), table=True)
            self.first = False
        self.mbar.write(list(d.values()), table=True)

    def before_epoch(self, learn): learn.dl = progress_bar(learn.dl, leave=False, parent=self.mbar)
    def after_batch(self, learn):
        learn.dl.comment = f'{learn.loss:.3f}'
        if self.plot and hasattr(learn, 'metrics') and learn.training:
            self.losses.append(learn.loss.item())
            if self.val_losses: self.mbar.update_graph([[fc.L.range(self.losses), self.losses],[fc.L.range(learn.epoch).map(lambda x: (x+1)*len(learn.dls.train)), self.val_losses]])
    
    def after_epoch(self, learn): 
        if not learn.training:
            if self.plot and hasattr(learn, 'metrics'): 
                self.val_losses.append(learn.metrics.all_metrics['loss'].compute())
                self.mbar.update_graph([[fc.L.range(self.losses), self.losses],[fc.L.range(learn.epoch+1).map(lambda x: (x+1)*len(learn.dls.train)), self.val_losses]])
# %%
model = get_model()
# %%
metrics = MetricsCB(accuracy=MulticlassAccuracy())
cbs = [TrainCB(), DeviceCB(), metrics, ProgressCB(plot=True)]
learn = Learner(model, dls, F.cross_entropy, lr=0.2, cbs=cbs)
learn.fit(2)
# %%
#|export
class with_cbs:
    def __init__(self, nm): self.nm = nm
    def __call__(self, f):
        def _f(o, *args, **kwargs):
            try:
                o.callback(f'before_{self.nm}')
                f(o, *args, **kwargs)
                o.callback(f'after_{self.nm}')
            except globals()[f'Cancel{self.nm.title()}Exception']: pass
            finally: o.callback(f'cleanup_{self.nm}')
        return _f
# %%
#|export
class Learner():
    def __init__(self, model, dls=(0,), loss_func=F.mse_loss, lr=0.1, cbs=None, opt_func=optim.SGD):
        cbs = fc.L(cbs)
        fc.store_attr()

    @with_cbs('batch')
    def _one_batch(self):
        self.predict()
        self.callback('after_predict')
        self.get_loss()
        self.callback('after_loss')
        if self.training:
            self.backward()
            self.callback('after_backward')
            self.step()
            self.callback('after_step')
            self.zero_grad()

    @with_cbs('epoch')
    def _one_epoch(self):
        for self.iter,self.batch in enumerate(self.dl): self._one_batch()

    def one_epoch(self, training):
        self.model.train(training)
        self.dl = self.dls.train if training else self.dls.valid
        self._one_epoch()

    @with_cbs('fit')
    def _fit(self, train, valid):
        for self.epoch in self.epochs:
            if train: self.one_epoch(True)
            if valid: torch.no_grad()(self.one_epoch)(False)

    def fit(self, n_epochs=1, train=True, valid=True, cbs=None, lr=None):
        cbs = fc.L(cbs)
        # `add_cb` and `rm_cb` were added in lesson 18
        for cb in cbs: self.cbs.append(cb)
        try:
            self.n_epochs = n_epochs
            self.epochs = range(n_epochs)
            if lr is None: lr = self.lr
            if self.opt_func: self.opt = self.opt_func(self.model.parameters(), lr)
            self._fit(train, valid)
        finally:
            for cb in cbs: self.cbs.remove(cb)

    def __getattr__(self, name):
        if name in ('predict','get_loss','backward','step','zero_grad'): return partial(self.callback, name)
        raise AttributeError(name)

    def callback(self, method_nm): run_cbs(self.cbs, method_nm, self)
    
    @property
    def training(self): return self.model.training
# %%
model = get_model()

metrics = MetricsCB(accuracy=MulticlassAccuracy())
cbs = [TrainCB(), DeviceCB(), metrics, ProgressCB(plot=True)]
learn = Learner(model, dls, F.cross_entropy, lr=0.2, cbs=cbs)
learn.fit(1)
# %%
#|export
class TrainLearner(Learner):
    def predict(self): self.preds = self.model(self.batch[0])
    def get_loss(self): self.loss = self.loss_func(self.preds, self.batch[1])
    def backward(self): self.loss.backward()
    def step(self): self.opt.step()
    def zero_grad(self): self.opt.zero_grad()
# %%
#|export
class MomentumLearner(TrainLearner):
    def __init__(self, model, dls, loss_func, lr=None, cbs=None, opt_func=optim.SGD, mom=0.85):
        self.mom = mom
        super().__init__(model, dls, loss_func, lr, cbs, opt_func)

    def zero_grad(self):
        with torch.no_grad():
            for p in self.model.parameters(): p.grad *= self.mom
# %%
# NB: No TrainCB
metrics = MetricsCB(accuracy=MulticlassAccuracy())
cbs = [DeviceCB(), metrics, ProgressCB(plot=True)]
learn = MomentumLearner(get_model(), dls, F.cross_entropy, lr=0.1, cbs=cbs)
learn.fit(1)
# %%
class LRFinderCB(Callback):
    def __init__(self, lr_mult=1.3): fc.store_attr()
    
    def before_fit(self, learn):
        self.lrs,self.losses = [],[]
        self.min = math.inf

    def after_batch(self, learn):
        if not learn.training: raise CancelEpochException()
        self.lrs.append(learn.opt.param_groups[0]['lr'])
        loss = to_cpu(learn.loss)
        self.losses.append(loss)
        if loss < self.min: self.min = loss
        if loss > self.min*3: raise CancelFitException()
        for g in learn.opt.param_groups: g['lr'] *= self.lr_mult
# %%
lrfind = LRFinderCB()
cbs = [DeviceCB(), lrfind]
learn = MomentumLearner(get_model(), dls, F.cross_entropy, lr=1e-4, cbs=cbs)
learn.fit(1)
plt.plot(lrfind.lrs, lrfind.losses)
plt.xscale('log')
# %%
#|export
from torch.optim.lr_scheduler import ExponentialLR
# %%
#|export
class LRFinderCB(Callback):
    def __init__(self, gamma=1.3, max_mult=3): fc.store_attr()
    
    def before_fit(self, learn):
        self.sched = ExponentialLR(learn.opt, self.gamma)
        self.lrs,self.losses = [],[]
        self.min = math.inf

    def after_batch(self, learn):
        if not learn.training: raise CancelEpochException()
        self.lrs.append(learn.opt.param_groups[0]['lr'])
        loss = to_cpu(learn.loss)
        self.losses.append(loss)
        if loss < self.min: self.min = loss
        if math.isnan(loss) or (loss > self.min*self.max_mult):
            raise CancelFitException()
        self.sched.step()

    def cleanup_fit(self, learn):
        plt.plot(self.lrs, self.losses)
        plt.xscale('log')
# %%
cbs = [DeviceCB()]
learn = MomentumLearner(get_model(), dls, F.cross_entropy, lr=1e-5, cbs=cbs)
learn.fit(3, cbs=LRFinderCB())
# %%
#|export
@fc.patch
def lr_find(self:Learner, gamma=1.3, max_mult=3, start_lr=1e-5, max_epochs=10):
    self.fit(max_epochs, lr=start_lr, cbs=LRFinderCB(gamma=gamma, max_mult=max_mult))
# %%
MomentumLearner(get_model(), dls, F.cross_entropy, cbs=cbs).lr_find()
# %%
# import nbdev; nbdev.nbdev_export()  # port: the export is tests/fastai_miniai.py's text
"""


def write_mnist(folder, n_train: int = 200, n_valid: int = 100) -> None:
    """``folder``/data/mnist.pkl.gz in the layout the course reads (deeplearning.net's pickle:
    ((x_train, y_train), (x_valid, y_valid), (x_test, y_test)), images as float32 rows of 784
    in [0, 1), labels int64), made of ``fashion_mnist``'s synthetic images (no download)."""
    splits = []
    for seed, n in enumerate((n_train, n_valid, 10)):
        pictures, labels = miniai.images(n, seed)
        rows = pictures.reshape(n, 784) / 255  # (n, 784)
        rows[rows < 0.6] = 0  # mostly background, as MNIST's digits
        splits.append((rows.astype(np.float32), labels.astype(np.int64)))
    (folder / "data").mkdir(parents=True)
    with gzip.open(folder / "data" / "mnist.pkl.gz", "wb") as file:
        pickle.dump(tuple(splits), file)


def both(script: str, tmp_path, monkeypatch, mnist: bool = False):
    """fastai_miniai's ``both``, with the MNIST pickle written first in each run's folder."""
    if mnist:
        for name in "torch", "tricycle":
            write_mnist(tmp_path / name)
    return miniai.both(script, tmp_path, monkeypatch)


def shown(printed: str) -> list[str]:
    """The printed lines with their numbers taken out (what both libraries print alike)."""
    return [re.sub(r"-?\d+\.?\d*(e-?\d+)?", "#", line) for line in printed.splitlines()]


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    """A tricycle tensor's values are a torch tensor's."""
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=float), theirs.detach().numpy().astype(float), rtol=rtol, atol=atol)  # fmt: skip


def as_ours(their_tensor):
    """A torch tensor's values as a tricycle tensor."""
    import tricycle  # noqa: PLC0415

    return tricycle.tensor(their_tensor.detach().numpy())


def same_model(ours, theirs, x: np.ndarray, loss) -> None:
    """Tricycle's model ``ours`` given torch's weights (``nn.from_torch``): torch's outputs on
    ``x`` and, after ``loss(lib, output)``'s backward, torch's input and parameter gradients."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    ours.zero_grad(), theirs.zero_grad()  # what training left (MomentumLearner keeps some)
    xs = tricycle.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    outs = ours(xs[0]), theirs(xs[1])
    same(outs[0], outs[1], rtol=1e-4, atol=1e-5)
    loss(tricycle, outs[0]).backward()
    loss(torch, outs[1]).backward()
    same(xs[0].grad, xs[1].grad, rtol=1e-4, atol=1e-6)
    grads_as_torchs(ours, theirs, rtol=1e-4, atol=1e-6)


def test_01_matmul(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MATMUL, tmp_path, monkeypatch, mnist=True)
    assert len(shown(ours)) > 60 and "tricycle.FloatTensor" in ours
    same(our["x_train"], their["x_train"], rtol=0, atol=0)  # the same pickle, read alike
    # the loops, the broadcast and einsum matmuls agree (the notebook's own test_close cells);
    # each library's product of the same numbers is the other's
    for name in "t1", "tr", "mr", "res":
        assert tuple(our[name].shape) == tuple(their[name].shape), name
    same(our["x_train"] @ as_ours(their["weights"]), their["tr"], rtol=1e-5, atol=1e-4)
    same(our["t1"], our["m1"] @ our["weights"], rtol=1e-5, atol=1e-4)
    assert our["t"].stride() == their["t"].stride() == (0, 1)  # expand_as: a view, stride 0
    assert our["rnd_state"] == their["rnd_state"]  # the hand-written generator: plain Python


def test_03_backprop(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BACKPROP, tmp_path, monkeypatch, mnist=True)
    # the hand-written gradients (inp.g = ..., attributes on tensors) passed the notebook's
    # test_close against autograd under both; from torch's weights, torch's gradients
    for name in "w1", "b1", "w2", "b2":
        our[name] = as_ours(their[name])
    our["forward_and_backward"](our["x_train"], our["y_train"])
    for name, grad in zip(("w1", "w2", "b1", "b2", "x_train"), their["grads"]):
        same(our[name].g, grad, rtol=1e-4, atol=1e-4)
    assert our["l0"].b.grad.shape == their["l0"].b.grad.shape == (50,)


def test_04_minibatch_training(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MINIBATCH, tmp_path, monkeypatch, mnist=True)
    for printed in theirs, ours:  # report's "loss, accuracy" lines: the first and last fits learn
        reports = [tuple(map(float, line.split(", "))) for line in re.findall(r"^\d+\.\d\d, \d\.\d\d$", printed, re.M)]  # fmt: skip
        assert len(reports) == 34 and reports[-1][0] < reports[0][0], reports
    for space in our, their:
        loss, acc = space["loss"], space["acc"]  # fit's validation numbers after 5 epochs
        assert acc > 0.8, (loss, acc)
    # the notebook's log_softmax, logsumexp and nll on the same logits, and the MLP class
    # from torch's weights
    logits = np.random.default_rng(0).normal(size=(6, 10)).astype(np.float32) * 3
    targets = np.arange(6) % 10
    lib = our["tricycle"]
    for f in "logsumexp", "log_softmax":
        same(our[f](lib.tensor(logits)), their[f](their["torch"].tensor(logits)), rtol=1e-5)
    same(our["nll"](our["log_softmax"](lib.tensor(logits)), lib.tensor(targets)),
         their["nll"](their["log_softmax"](their["torch"].tensor(logits)), their["torch"].tensor(targets)))  # fmt: skip
    x = np.random.default_rng(1).random((4, 784)).astype(np.float32)
    same_model(
        our["MLP"](784, 50, 10), their["MLP"](784, 50, 10), x, lambda lib, out: (out**2).sum()
    )


def test_07_convolutions(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CONVOLUTIONS, tmp_path, monkeypatch, mnist=True)
    # by hand (apply_kernel), by unfold and a product, and by conv2d: the same edges,
    # and torch's
    same(our["top_edge3"], their["top_edge3"], rtol=1e-5, atol=1e-5)
    same(our["left_edge3"], their["left_edge3"], rtol=1e-5, atol=1e-5)
    same(our["out"], our["left_edge3"], rtol=1e-5, atol=1e-5)
    same(our["batch_features"], their["batch_features"], rtol=1e-5, atol=1e-5)
    assert tuple(our["broken_cnn"](our["xb"]).shape) == (16, 10, 28, 28)
    assert tuple(our["simple_cnn"](our["xb"]).shape) == (16, 10)
    for printed in theirs, ours:  # fit's "epoch loss accuracy" lines: 8 + 8 steps of plain SGD
        losses = [float(v) for v in re.findall(r"^\d (\d\.\d+) ", printed, re.M)]  # leave the
        assert len(losses) == 4 and all(abs(v - np.log(10)) < 0.05 for v in losses), losses  # deep
    # CNN at chance, as the notebook's first epochs: what it learns is the Learner's story (09)
    x = np.random.default_rng(1).random((4, 1, 28, 28)).astype(np.float32)
    same_model(our["simple_cnn"], their["simple_cnn"], x, lambda lib, out: (out**2).sum())


def test_08_autoencoder(tmp_path, monkeypatch):
    monkeypatch.setitem(miniai.SIZES, "train", 128)  # port: one batch an epoch
    monkeypatch.setitem(miniai.SIZES, "test", 32)
    (theirs, their), (ours, our) = both(AUTOENCODER, tmp_path, monkeypatch)
    assert ours.splitlines()[1] == theirs.splitlines()[1]  # the labels' names
    for printed in theirs, ours:  # eval's "epoch loss" lines: plain SGD barely moves the
        losses = [float(v) for v in re.findall(r"^\d (\d\.\d+)$", printed, re.M)]  # autoencoder
        assert len(losses) == 5 and max(losses) <= losses[0] + 0.002, losses  # (the lesson's point)
    assert tuple(our["p"].shape) == (128, 1, 28, 28)  # ZeroPad2d(2) then ZeroPad2d(-2)
    x = np.random.default_rng(1).random((2, 1, 28, 28)).astype(np.float32)
    same_model(our["ae"], their["ae"], x, lambda lib, out: (out**2).sum())
    same_model(our["cnn"], their["cnn"], x, lambda lib, out: (out**2).sum())


def test_09_learner(tmp_path, monkeypatch):
    monkeypatch.setitem(miniai.SIZES, "train", 256)  # port: 4 batches of 64 an epoch
    monkeypatch.setitem(miniai.SIZES, "test", 64)
    (theirs, their), (ours, our) = both(LEARNER, tmp_path, monkeypatch)
    for printed in theirs, ours:
        assert "Completed 5 batches" in printed and "Completed 1 batches" in printed
        logs = [eval(line) for line in re.findall(r"^\{'accuracy'.*\}$", printed, re.M)]
        assert [log["train"] for log in logs] == ["train", "eval"]
        table = re.findall(r"^(\d\.\d+)\t(\d\.\d+)\t(\d)\t(train|eval)$", printed, re.M)
        assert len(table) == 8, table  # ProgressCB's rows: 2 + 2 + 2 epochs (each train and eval)
        evals = [float(a) for a, _, _, kind in table if kind == "eval"]
        assert max(evals) > 0.3, table  # a tenth is chance
    # torcheval's metrics (the stand-in) and the notebook's own Metric give the course's numbers
    assert "Tensor(0.45" in ours and "0.62)" in ours
    for space in our, their:
        finder = space["lrfind"]  # the LR finder stopped when the loss tripled
        assert len(finder.losses) == 4  # one epoch's training batches, each lr 1.3 times the last
        np.testing.assert_allclose(finder.lrs, [1e-4 * 1.3**i for i in range(4)], rtol=1e-6)
    x = np.random.default_rng(1).random((4, 784)).astype(np.float32)
    same_model(our["learn"].model, their["learn"].model, x, lambda lib, out: (out**2).sum())


def test_a_tensor_takes_attributes_as_torchs():
    """03_backprop keeps each gradient on its tensor (``inp.g = ...``): a tensor of either
    library, a leaf or an op's output, takes an attribute of the user's and keeps it through an
    in-place op (which re-bases tricycle's graph), and autograd is unchanged by it."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    grads = []
    for lib in torch, tricycle:
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        y.g, x.g = lib.full((3,), 5.0), 1
        z = lib.zeros(3)
        z.g = "kept"
        z += 1
        w = x * 3
        w.g = 2
        w.add_(1)
        assert (z.g, w.g, x.g, float(y.g.sum())) == ("kept", 2, 1, 15.0)
        (w * y).sum().backward()  # d/dx (3x + 1) 2x = 12x + 2
        grads.append(x.grad)
        with pytest.raises(AttributeError):
            y.shape = (1, 3)  # a property stays read-only
    same(grads[1], grads[0], rtol=0, atol=0)
