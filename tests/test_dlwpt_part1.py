"""Eli Stevens et al., "Deep Learning with PyTorch" (deep-learning-with-pytorch/dlwpt-code),
part 1's notebooks, run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in
their text (docs/pytorch.md's promise; the method of tests/test_uvadlc_intro.py):

- p1ch3/1_tensors: indexing, ``storage()`` written through (``points.storage()[0] = 2.0``),
  ``storage_offset()``, ``stride()`` of a row, of ``t()`` and of ``transpose(0, 2)``,
  ``is_contiguous``/``contiguous``, dtypes and casts, ``save``/``load`` to a path and a file;
- p1ch5: the thermometer fitted by hand-written gradients (``torch.stack``,
  ``torch.isfinite``), then by autograd (``params -= lr * params.grad`` under ``no_grad``),
  then by ``optim.SGD``/``Adam``, with a ``randperm`` validation split and
  ``set_grad_enabled``;
- p1ch6: ``nn.Linear`` on the same data, ``nn.Sequential`` given an ``OrderedDict`` (its layers
  reached by name: ``seq_model.hidden_linear``), the activations, ``nn.Module`` subclasses;
- p1ch7/2_birds_airplanes: CIFAR's airplanes and birds (small synthetic 32x32 images in the
  test's ``torchvision``), softmax by hand, ``scatter_``/``gather``, NLL and cross-entropy
  classifiers trained sample by sample and through a ``DataLoader``, the first convolutions;
- p1ch8/1_convolution: ``Conv2d`` with its weights set under ``no_grad`` (``fill_``, ``[:] =``),
  ``MaxPool2d``, the ``Net`` variants (width, L2 penalty, ``Dropout2d``, ``BatchNorm2d``,
  depth, a skip connection, ``ResBlock`` with ``kaiming_normal_``), ``save``/``load``.

A cell's last expression is printed, as a notebook shows it; a cell that fails in the book
(a Sequential holding ``...``, a Linear fed an image) prints its error's kind. Each changed
line ends in ``# port:`` and says why: epochs, blocks and dpi shrunk, the GPU cells on the CPU,
h5py (not installed) dropped, and a layer's ``weight`` its ``weights`` (a norm's ``gamma`` and
``beta``; documented). Each notebook runs under torch (skipped without it), then under
tricycle, seeded and on the CPU; both print the same lines (numbers and reprs aside) and learn,
and the deterministic values are torch's. With torch's weights (``nn.from_torch``) the
chapters' models give torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import ast
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host

pytestmark = [
    pytest.mark.filterwarnings("ignore:TypedStorage is deprecated"),
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy"),  # torch's
]

NB_1_TENSORS = r"""
a = [1.0, 2.0, 1.0]
# %%
a[0]
# %%
a[2] = 3.0
a
# %%
import torch # <1>
a = torch.ones(3) # <2>
a
# %%
a[1]
# %%
float(a[1])
# %%
a[2] = 2.0
a
# %%
points = torch.zeros(6) # <1>
points[0] = 4.0 # <2>
points[1] = 1.0
points[2] = 5.0
points[3] = 3.0
points[4] = 2.0
points[5] = 1.0
# %%
points = torch.tensor([4.0, 1.0, 5.0, 3.0, 2.0, 1.0])
points
# %%
float(points[0]), float(points[1])
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points
# %%
points.shape
# %%
points = torch.zeros(3, 2)
points
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points
# %%
points[0, 1]
# %%
points[0]
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points.storage()
# %%
points_storage = points.storage()
points_storage[0]
# %%
points.storage()[1]
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points_storage = points.storage()
points_storage[0] = 2.0
points
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
second_point = points[1]
second_point.storage_offset()
# %%
second_point.size()
# %%
second_point.shape
# %%
points.stride()
# %%
second_point = points[1]
second_point.size()
# %%
second_point.storage_offset()
# %%
second_point.stride()
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
second_point = points[1]
second_point[0] = 10.0
points
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
second_point = points[1].clone()
second_point[0] = 10.0
points
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points
# %%
points_t = points.t()
points_t
# %%
points.storage().data_ptr() == points_t.storage().data_ptr()  # port: id() of two temporaries is CPython's chance (a freed address reused); the memory's address is what the cell shows
# %%
points.stride()
# %%
points_t.stride()
# %%
some_t = torch.ones(3, 4, 5)
transpose_t = some_t.transpose(0, 2)
some_t.shape
# %%
transpose_t.shape
# %%
some_t.stride()
# %%
transpose_t.stride()
# %%
points.is_contiguous()
# %%
points_t.is_contiguous()
# %%
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
points_t = points.t()
points_t
# %%
points_t.storage()
# %%
points_t.stride()
# %%
points_t_cont = points_t.contiguous()
points_t_cont
# %%
points_t_cont.stride()
# %%
points_t_cont.storage()
# %%
double_points = torch.ones(10, 2, dtype=torch.double)
short_points = torch.tensor([[1, 2], [3, 4]], dtype=torch.short)
# %%
short_points.dtype
# %%
double_points = torch.zeros(10, 2).double()
short_points = torch.ones(10, 2).short()
# %%
double_points = torch.zeros(10, 2).to(torch.double)
short_points = torch.ones(10, 2).to(dtype=torch.short)
# %%
points_64 = torch.rand(5, dtype=torch.double)  # <1>
points_short = points_64.to(torch.short)
points_64 * points_short  # works from PyTorch 1.3 onwards
# %%
# reset points back to original value
points = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])
# %%
some_list = list(range(6))
some_list[:]     # <1>
some_list[1:4]   # <2>
some_list[1:]    # <3>
some_list[:4]    # <4>
some_list[:-1]   # <5>
some_list[1:4:2] # <6>
# %%
points[1:]       # <1>
points[1:, :]    # <2>
points[1:, 0]    # <3>
points[None]     # <4>
# %%
points = torch.ones(3, 4)
points_np = points.numpy()
points_np
# %%
points = torch.from_numpy(points_np)
# %%
torch.save(points, '../data/p1ch3/ourpoints.t')
# %%
with open('../data/p1ch3/ourpoints.t','wb') as f:
   torch.save(points, f)
# %%
points = torch.load('../data/p1ch3/ourpoints.t')
# %%
with open('../data/p1ch3/ourpoints.t','rb') as f:
   points = torch.load(f)
# %%
# import h5py  # port: h5py is not installed: its cells dropped

# f = h5py.File('../data/p1ch3/ourpoints.hdf5', 'w')  # port: h5py
# dset = f.create_dataset('coords', data=points.numpy())  # port: h5py
# f.close()  # port: h5py
# %%
# f = h5py.File('../data/p1ch3/ourpoints.hdf5', 'r')  # port: h5py
# dset = f['coords']  # port: h5py
# last_points = dset[-2:]  # port: h5py
# %%
# last_points = torch.from_numpy(dset[-2:])  # port: h5py
# f.close()  # port: h5py
# %%
points_gpu = torch.tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]], device='cpu')  # port: 'cuda': the test runs on the CPU
# %%
points_gpu = points.to(device='cpu')  # port: 'cuda': the test runs on the CPU
# %%
points_gpu = points.to(device='cpu')  # port: 'cuda': the test runs on the CPU
# %%
points = 2 * points  # <1>
points_gpu = 2 * points.to(device='cpu')  # <2>
# %%
points_gpu = points_gpu + 4
# %%
points_cpu = points_gpu.to(device='cpu')  # port: 'cuda': the test runs on the CPU
# %%
points_gpu = points.cpu()  # port: points.cuda(): the test runs on the CPU
points_gpu = points.cpu()  # port: points.cuda(0): the test runs on the CPU
points_cpu = points_gpu.cpu()
# %%
a = torch.ones(3, 2)
a_t = torch.transpose(a, 0, 1)

a.shape, a_t.shape
# %%
a = torch.ones(3, 2)
a_t = a.transpose(0, 1)

a.shape, a_t.shape
# %%
a = torch.ones(3, 2)
# %%
a.zero_()
a

"""

NB_1_PARAMETER_ESTIMATION = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import torch
torch.set_printoptions(edgeitems=2, linewidth=75)
# %%
t_c = [0.5,  14.0, 15.0, 28.0, 11.0,  8.0,  3.0, -4.0,  6.0, 13.0, 21.0]
t_u = [35.7, 55.9, 58.2, 81.9, 56.3, 48.9, 33.9, 21.8, 48.4, 60.4, 68.4]
t_c = torch.tensor(t_c)
t_u = torch.tensor(t_u)
# %%
def model(t_u, w, b):
    return w * t_u + b
# %%
def loss_fn(t_p, t_c):
    squared_diffs = (t_p - t_c)**2
    return squared_diffs.mean()
# %%
w = torch.ones(())
b = torch.zeros(())

t_p = model(t_u, w, b)
t_p
# %%
loss = loss_fn(t_p, t_c)
loss
# %%
x = torch.ones(())
y = torch.ones(3,1)
z = torch.ones(1,3)
a = torch.ones(2, 1, 1)
print(f"shapes: x: {x.shape}, y: {y.shape}")
print(f"        z: {z.shape}, a: {a.shape}")
print("x * y:", (x * y).shape)
print("y * z:", (y * z).shape)
print("y * z * a:", (y * z * a).shape)
# %%
delta = 0.1

loss_rate_of_change_w = \
    (loss_fn(model(t_u, w + delta, b), t_c) - 
     loss_fn(model(t_u, w - delta, b), t_c)) / (2.0 * delta)
# %%
learning_rate = 1e-2

w = w - learning_rate * loss_rate_of_change_w
# %%
loss_rate_of_change_b = \
    (loss_fn(model(t_u, w, b + delta), t_c) - 
     loss_fn(model(t_u, w, b - delta), t_c)) / (2.0 * delta)

b = b - learning_rate * loss_rate_of_change_b
# %%
def dloss_fn(t_p, t_c):
    dsq_diffs = 2 * (t_p - t_c) / t_p.size(0)  # <1>
    return dsq_diffs
# %%
def dmodel_dw(t_u, w, b):
    return t_u
# %%
def dmodel_db(t_u, w, b):
    return 1.0
# %%
def grad_fn(t_u, t_c, t_p, w, b):
    dloss_dtp = dloss_fn(t_p, t_c)
    dloss_dw = dloss_dtp * dmodel_dw(t_u, w, b)
    dloss_db = dloss_dtp * dmodel_db(t_u, w, b)
    return torch.stack([dloss_dw.sum(), dloss_db.sum()])  # <1>
# %%
def training_loop(n_epochs, learning_rate, params, t_u, t_c):
    for epoch in range(1, n_epochs + 1):
        w, b = params

        t_p = model(t_u, w, b)  # <1>
        loss = loss_fn(t_p, t_c)
        grad = grad_fn(t_u, t_c, t_p, w, b)  # <2>

        params = params - learning_rate * grad

        print('Epoch %d, Loss %f' % (epoch, float(loss))) # <3>
            
    return params
# %%
def training_loop(n_epochs, learning_rate, params, t_u, t_c,
                  print_params=True):
    for epoch in range(1, n_epochs + 1):
        w, b = params

        t_p = model(t_u, w, b)  # <1>
        loss = loss_fn(t_p, t_c)
        grad = grad_fn(t_u, t_c, t_p, w, b)  # <2>

        params = params - learning_rate * grad

        if epoch in {1, 2, 3, 10, 11, 99, 100, 4000, 5000}:  # <3>
            print('Epoch %d, Loss %f' % (epoch, float(loss)))
            if print_params:
                print('    Params:', params)
                print('    Grad:  ', grad)
        if epoch in {4, 12, 101}:
            print('...')

        if not torch.isfinite(loss).all():
            break  # <3>
            
    return params
# %%
training_loop(
    n_epochs = 100, 
    learning_rate = 1e-2, 
    params = torch.tensor([1.0, 0.0]), 
    t_u = t_u, 
    t_c = t_c)
# %%
training_loop(
    n_epochs = 100, 
    learning_rate = 1e-4, 
    params = torch.tensor([1.0, 0.0]), 
    t_u = t_u, 
    t_c = t_c)
# %%
t_un = 0.1 * t_u
# %%
training_loop(
    n_epochs = 100, 
    learning_rate = 1e-2, 
    params = torch.tensor([1.0, 0.0]), 
    t_u = t_un, # <1>
    t_c = t_c)
# %%
params = training_loop(
    n_epochs = 500,  # port: 5000 epochs shrunk 
    learning_rate = 1e-2, 
    params = torch.tensor([1.0, 0.0]), 
    t_u = t_un, 
    t_c = t_c,
    print_params = False)

params
# %%
# %matplotlib inline  # port: a notebook's magic
from matplotlib import pyplot as plt

t_p = model(t_un, *params)  # <1>

fig = plt.figure(dpi=60)  # port: dpi 600 shrunk
plt.xlabel("Temperature (°Fahrenheit)")
plt.ylabel("Temperature (°Celsius)")
plt.plot(t_u.numpy(), t_p.detach().numpy()) # <2>
plt.plot(t_u.numpy(), t_c.numpy(), 'o')
plt.savefig("temp_unknown_plot.png", format="png")  # bookskip
# %%
# %matplotlib inline  # port: a notebook's magic
from matplotlib import pyplot as plt

fig = plt.figure(dpi=60)  # port: dpi 600 shrunk
plt.xlabel("Measurement")
plt.ylabel("Temperature (°Celsius)")
plt.plot(t_u.numpy(), t_c.numpy(), 'o')

plt.savefig("temp_data_plot.png", format="png")

"""

NB_2_AUTOGRAD = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import torch
torch.set_printoptions(edgeitems=2)
# %%
t_c = torch.tensor([0.5, 14.0, 15.0, 28.0, 11.0, 8.0,
                    3.0, -4.0, 6.0, 13.0, 21.0])
t_u = torch.tensor([35.7, 55.9, 58.2, 81.9, 56.3, 48.9,
                    33.9, 21.8, 48.4, 60.4, 68.4])
t_un = 0.1 * t_u
# %%
def model(t_u, w, b):
    return w * t_u + b
# %%
def loss_fn(t_p, t_c):
    squared_diffs = (t_p - t_c)**2
    return squared_diffs.mean()
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
# %%
params.grad is None
# %%
loss = loss_fn(model(t_u, *params), t_c)
loss.backward()

params.grad
# %%
if params.grad is not None:
    params.grad.zero_()
# %%
def training_loop(n_epochs, learning_rate, params, t_u, t_c):
    for epoch in range(1, n_epochs + 1):
        if params.grad is not None:  # <1>
            params.grad.zero_()
        
        t_p = model(t_u, *params) 
        loss = loss_fn(t_p, t_c)
        loss.backward()
        
        with torch.no_grad():  # <2>
            params -= learning_rate * params.grad

        if epoch % 500 == 0:
            print('Epoch %d, Loss %f' % (epoch, float(loss)))
            
    return params
# %%
training_loop(
    n_epochs = 1000,  # port: 5000 epochs shrunk 
    learning_rate = 1e-2, 
    params = torch.tensor([1.0, 0.0], requires_grad=True), # <1> 
    t_u = t_un, # <2> 
    t_c = t_c)

"""

NB_3_OPTIMIZERS = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import torch
torch.set_printoptions(edgeitems=2, linewidth=75)
# %%
t_c = torch.tensor([0.5, 14.0, 15.0, 28.0, 11.0,
                    8.0, 3.0, -4.0, 6.0, 13.0, 21.0])
t_u = torch.tensor([35.7, 55.9, 58.2, 81.9, 56.3, 48.9,
                    33.9, 21.8, 48.4, 60.4, 68.4])
t_un = 0.1 * t_u
# %%
def model(t_u, w, b):
    return w * t_u + b
# %%
def loss_fn(t_p, t_c):
    squared_diffs = (t_p - t_c)**2
    return squared_diffs.mean()
# %%
import torch.optim as optim

dir(optim)
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
learning_rate = 1e-5
optimizer = optim.SGD([params], lr=learning_rate)
# %%
t_p = model(t_u, *params)
loss = loss_fn(t_p, t_c)
loss.backward()

optimizer.step()

params
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
learning_rate = 1e-2
optimizer = optim.SGD([params], lr=learning_rate)

t_p = model(t_un, *params)
loss = loss_fn(t_p, t_c)

optimizer.zero_grad() # <1>
loss.backward()
optimizer.step()

params
# %%
def training_loop(n_epochs, optimizer, params, t_u, t_c):
    for epoch in range(1, n_epochs + 1):
        t_p = model(t_u, *params) 
        loss = loss_fn(t_p, t_c)
        
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        if epoch % 500 == 0:
            print('Epoch %d, Loss %f' % (epoch, float(loss)))
            
    return params
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
learning_rate = 1e-2
optimizer = optim.SGD([params], lr=learning_rate) # <1>

training_loop(
    n_epochs = 1000,  # port: 5000 epochs shrunk 
    optimizer = optimizer,
    params = params, # <1> 
    t_u = t_un,
    t_c = t_c)
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
learning_rate = 1e-1
optimizer = optim.Adam([params], lr=learning_rate) # <1>

training_loop(
    n_epochs = 1000,  # port: 2000 epochs shrunk 
    optimizer = optimizer,
    params = params,
    t_u = t_u, # <2> 
    t_c = t_c)
# %%
n_samples = t_u.shape[0]
n_val = int(0.2 * n_samples)

shuffled_indices = torch.randperm(n_samples)

train_indices = shuffled_indices[:-n_val]
val_indices = shuffled_indices[-n_val:]

train_indices, val_indices  # <1>
# %%
train_t_u = t_u[train_indices]
train_t_c = t_c[train_indices]

val_t_u = t_u[val_indices]
val_t_c = t_c[val_indices]

train_t_un = 0.1 * train_t_u
val_t_un = 0.1 * val_t_u
# %%
def training_loop(n_epochs, optimizer, params, train_t_u, val_t_u,
                  train_t_c, val_t_c):
    for epoch in range(1, n_epochs + 1):
        train_t_p = model(train_t_u, *params) # <1>
        train_loss = loss_fn(train_t_p, train_t_c)
                             
        val_t_p = model(val_t_u, *params) # <1>
        val_loss = loss_fn(val_t_p, val_t_c)
        
        optimizer.zero_grad()
        train_loss.backward() # <2>
        optimizer.step()

        if epoch <= 3 or epoch % 500 == 0:
            print(f"Epoch {epoch}, Training loss {train_loss.item():.4f},"
                  f" Validation loss {val_loss.item():.4f}")
            
    return params
# %%
params = torch.tensor([1.0, 0.0], requires_grad=True)
learning_rate = 1e-2
optimizer = optim.SGD([params], lr=learning_rate)

training_loop(
    n_epochs = 1000,  # port: 3000 epochs shrunk 
    optimizer = optimizer,
    params = params,
    train_t_u = train_t_un, # <1> 
    val_t_u = val_t_un, # <1> 
    train_t_c = train_t_c,
    val_t_c = val_t_c)
# %%
def training_loop(n_epochs, optimizer, params, train_t_u, val_t_u,
                  train_t_c, val_t_c):
    for epoch in range(1, n_epochs + 1):
        train_t_p = model(train_t_u, *params)
        train_loss = loss_fn(train_t_p, train_t_c)

        with torch.no_grad(): # <1>
            val_t_p = model(val_t_u, *params)
            val_loss = loss_fn(val_t_p, val_t_c)
            assert val_loss.requires_grad == False # <2>
            
        optimizer.zero_grad()
        train_loss.backward()
        optimizer.step()
# %%
def calc_forward(t_u, t_c, is_train):
    with torch.set_grad_enabled(is_train):
        t_p = model(t_u, *params)
        loss = loss_fn(t_p, t_c)
    return loss

"""

NB_1_NEURAL_NETWORKS = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import torch
import torch.optim as optim

torch.set_printoptions(edgeitems=2, linewidth=75)
# %%
t_c = [0.5,  14.0, 15.0, 28.0, 11.0,  8.0,  3.0, -4.0,  6.0, 13.0, 21.0]
t_u = [35.7, 55.9, 58.2, 81.9, 56.3, 48.9, 33.9, 21.8, 48.4, 60.4, 68.4]
t_c = torch.tensor(t_c).unsqueeze(1) # <1>
t_u = torch.tensor(t_u).unsqueeze(1) # <1>

t_u.shape
# %%
n_samples = t_u.shape[0]
n_val = int(0.2 * n_samples)

shuffled_indices = torch.randperm(n_samples)

train_indices = shuffled_indices[:-n_val]
val_indices = shuffled_indices[-n_val:]

train_indices, val_indices
# %%
t_u_train = t_u[train_indices]
t_c_train = t_c[train_indices]

t_u_val = t_u[val_indices]
t_c_val = t_c[val_indices]

t_un_train = 0.1 * t_u_train
t_un_val = 0.1 * t_u_val
# %%
import torch.nn as nn

linear_model = nn.Linear(1, 1) # <1>
linear_model(t_un_val)
# %%
next(linear_model.parameters())  # port: linear_model.weight by position: a Linear's is weights (in, out) (documented)
# %%
linear_model.bias
# %%
x = torch.ones(1)
linear_model(x)
# %%
x = torch.ones(10, 1)
linear_model(x)
# %%
linear_model = nn.Linear(1, 1) # <1>
optimizer = optim.SGD(
    linear_model.parameters(), # <2>
    lr=1e-2)
# %%
linear_model.parameters()
# %%
list(linear_model.parameters())
# %%
def training_loop(n_epochs, optimizer, model, loss_fn, t_u_train, t_u_val,
                  t_c_train, t_c_val):
    for epoch in range(1, n_epochs + 1):
        t_p_train = model(t_u_train) # <1>
        loss_train = loss_fn(t_p_train, t_c_train)

        t_p_val = model(t_u_val) # <1>
        loss_val = loss_fn(t_p_val, t_c_val)
        
        optimizer.zero_grad()
        loss_train.backward() # <2>
        optimizer.step()

        if epoch == 1 or epoch % 1000 == 0:
            print(f"Epoch {epoch}, Training loss {loss_train.item():.4f},"
                  f" Validation loss {loss_val.item():.4f}")
# %%
def loss_fn(t_p, t_c):
    squared_diffs = (t_p - t_c)**2
    return squared_diffs.mean()

linear_model = nn.Linear(1, 1) # <1>
optimizer = optim.SGD(linear_model.parameters(), lr=1e-2)

training_loop(
    n_epochs = 1000,  # port: 3000 epochs shrunk 
    optimizer = optimizer,
    model = linear_model,
    loss_fn = loss_fn,
    t_u_train = t_un_train,
    t_u_val = t_un_val, 
    t_c_train = t_c_train,
    t_c_val = t_c_val)

print()
print(next(linear_model.parameters()))  # port: linear_model.weight by position: a Linear's is weights (in, out) (documented)
print(linear_model.bias)
# %%
linear_model = nn.Linear(1, 1)
optimizer = optim.SGD(linear_model.parameters(), lr=1e-2)

training_loop(
    n_epochs = 1000,  # port: 3000 epochs shrunk 
    optimizer = optimizer,
    model = linear_model,
    loss_fn = nn.MSELoss(), # <1>
    t_u_train = t_un_train,
    t_u_val = t_un_val, 
    t_c_train = t_c_train,
    t_c_val = t_c_val)

print()
print(next(linear_model.parameters()))  # port: linear_model.weight by position: a Linear's is weights (in, out) (documented)
print(linear_model.bias)
# %%
seq_model = nn.Sequential(
            nn.Linear(1, 13), # <1>
            nn.Tanh(),
            nn.Linear(13, 1)) # <2>
seq_model
# %%
[param.shape for param in seq_model.parameters()]
# %%
for name, param in seq_model.named_parameters():
    print(name, param.shape)
# %%
from collections import OrderedDict

seq_model = nn.Sequential(OrderedDict([
    ('hidden_linear', nn.Linear(1, 8)),
    ('hidden_activation', nn.Tanh()),
    ('output_linear', nn.Linear(8, 1))
]))

seq_model
# %%
for name, param in seq_model.named_parameters():
    print(name, param.shape)
# %%
seq_model.output_linear.bias
# %%
optimizer = optim.SGD(seq_model.parameters(), lr=1e-3) # <1>

training_loop(
    n_epochs = 1000,  # port: 5000 epochs shrunk 
    optimizer = optimizer,
    model = seq_model,
    loss_fn = nn.MSELoss(),
    t_u_train = t_un_train,
    t_u_val = t_un_val, 
    t_c_train = t_c_train,
    t_c_val = t_c_val)
    
print('output', seq_model(t_un_val))
print('answer', t_c_val)
print('hidden', next(seq_model.hidden_linear.parameters()).grad)  # port: .weight by position: a Linear's is weights (in, out) (documented)
# %%
from matplotlib import pyplot as plt

t_range = torch.arange(20., 90.).unsqueeze(1)

fig = plt.figure(dpi=60)  # port: dpi shrunk
plt.xlabel("Fahrenheit")
plt.ylabel("Celsius")
plt.plot(t_u.numpy(), t_c.numpy(), 'o')
plt.plot(t_range.numpy(), seq_model(0.1 * t_range).detach().numpy(), 'c-')
plt.plot(t_u.numpy(), seq_model(0.1 * t_u).detach().numpy(), 'kx')
# %%
# Exercises here!

neuron_count = 20

seq_model = nn.Sequential(OrderedDict([
    ('hidden_linear', nn.Linear(1, neuron_count)),
    ('hidden_activation', nn.Tanh()),
    ('output_linear', nn.Linear(neuron_count, 1))
]))

optimizer = optim.SGD(seq_model.parameters(), lr=1e-4)

training_loop(
    n_epochs = 1000,  # port: 5000 epochs shrunk 
    optimizer = optimizer,
    model = seq_model,
    loss_fn = nn.MSELoss(),
    t_u_train = t_un_train,
    t_u_val = t_un_val, 
    t_c_train = t_c_train,
    t_c_val = t_c_val)

from matplotlib import pyplot as plt

t_range = torch.arange(20., 90.).unsqueeze(1)

fig = plt.figure(dpi=60)  # port: dpi shrunk
plt.xlabel("Fahrenheit")
plt.ylabel("Celsius")
plt.plot(t_u.numpy(), t_c.numpy(), 'o')
plt.plot(t_range.numpy(), seq_model(0.1 * t_range).detach().numpy(), 'c-')
plt.plot(t_u.numpy(), seq_model(0.1 * t_u).detach().numpy(), 'kx')

"""

NB_2_ACTIVATION_FUNCTIONS = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import matplotlib.pyplot as plt

import torch
import torch.optim as optim
import torch.nn as nn

torch.set_printoptions(edgeitems=2, linewidth=75)
# %%
input_t = torch.arange(-3, 3.1, 0.1)
input_t
# %%
activation_list = [
    nn.Tanh(),
    nn.Hardtanh(),
    nn.Sigmoid(),
    
    nn.Softplus(),
    nn.ReLU(),
    nn.LeakyReLU(negative_slope=0.1),

    
    #nn.Tanhshrink(),
    #nn.Softshrink(),
    #nn.Hardshrink(),
]

fig = plt.figure(figsize=(14, 28), dpi=20)  # port: dpi shrunk

for i, activation_func in enumerate(activation_list):
    subplot = fig.add_subplot(len(activation_list), 3, i+1)
    subplot.set_title(type(activation_func).__name__)
    
    output_t = activation_func(input_t)
    
    plt.grid()
    plt.plot(input_t.numpy(), input_t.numpy(),'k', linewidth=1)
    plt.plot([-3,3], [0,0], 'k', linewidth=1)
    plt.plot([0,0], [-3,3], 'k', linewidth=1)
    plt.plot(input_t.numpy(), output_t.numpy(), 'r', linewidth=3)

output_t
# %%
a = lambda x: nn.Tanh()(-2 * x - 1.25)
b = lambda x: nn.Tanh()( 1 * x + 0.75)
c = lambda x: nn.Tanh()( 4 * x + 1.)
d = lambda x: nn.Tanh()(-3 * x + 1.5)

wb_list = [
    ('A: tanh(-2 * x - 1.25)', a(input_t)),
    ('B: tanh(1 * x + 0.75)', b(input_t)),
    ('A + B', a(input_t) + b(input_t)),

    ('C: tanh(4 * x + 1.0)', c(input_t)),
    ('D: tanh(-3 * x - 1.5)', d(input_t)),
    ('C + D', c(input_t) + d(input_t)),

    ('C(A + B)', c(a(input_t) + b(input_t))),
    ('D(A + B)', d(a(input_t) + b(input_t))),
     
    ('C(A+B) + D(A+B)', 
     c(a(input_t) + b(input_t)) + d(a(input_t) + b(input_t))),
]

fig = plt.figure(figsize=(14, 42), dpi=20)  # port: dpi shrunk

for i, (title_str, output_t) in enumerate(wb_list):
    subplot = fig.add_subplot(len(wb_list), 3, i+1)
    subplot.set_title(title_str)
    
    plt.grid()
    plt.plot(input_t.numpy(), input_t.numpy(),'k', linewidth=1)
    plt.plot([-3,3], [0,0], 'k', linewidth=1)
    plt.plot([0,0], [-3,3], 'k', linewidth=1)
    plt.plot(input_t.numpy(), output_t.numpy(), 'r', linewidth=3)

output_t
# %%
fig = plt.figure(figsize=(14, 14), dpi=20)  # port: dpi shrunk

subplot = fig.add_subplot(1, 1, 1)
#subplot.set_title(type(activation_func).__name__)

output_t = nn.Tanh()(input_t)

#plt.grid()
plt.plot(input_t.numpy(), input_t.numpy(),'k', linewidth=1)
plt.plot([-3,3], [0,0], 'k', linewidth=1)
plt.plot([0,0], [-3,3], 'k', linewidth=1)
plt.plot(input_t.numpy(), output_t.numpy(), 'r', linewidth=3)

output_t

"""

NB_3_NN_MODULE_SUBCLASSING = r"""
# %matplotlib inline  # port: a notebook's magic
import numpy as np
import torch
import torch.optim as optim
import torch.nn as nn

torch.set_printoptions(edgeitems=2, linewidth=75)
# %%
seq_model = nn.Sequential(
            nn.Linear(1, 11), # <1>
            nn.Tanh(),
            nn.Linear(11, 1)) # <1>
seq_model
# %%
from collections import OrderedDict

namedseq_model = nn.Sequential(OrderedDict([
    ('hidden_linear', nn.Linear(1, 12)),
    ('hidden_activation', nn.Tanh()),
    ('output_linear', nn.Linear(12 , 1))
]))

namedseq_model
# %%
class SubclassModel(nn.Module):
    def __init__(self):
        super().__init__()  # <1>
        
        self.hidden_linear = nn.Linear(1, 13)
        self.hidden_activation = nn.Tanh()
        self.output_linear = nn.Linear(13, 1)
        
    def forward(self, input):
        hidden_t = self.hidden_linear(input)
        activated_t = self.hidden_activation(hidden_t)
        output_t = self.output_linear(activated_t)
        
        return output_t
    
subclass_model = SubclassModel()
subclass_model
# %%
for type_str, model in [('seq', seq_model),
                        ('namedseq', namedseq_model),
                        ('subclass', subclass_model)]:
    print(type_str)
    for name_str, param in model.named_parameters():
        print("{:21} {:19} {}".format(
            name_str, str(param.shape), param.numel()))
        
    print()
# %%
class SubclassFunctionalModel(nn.Module):
    def __init__(self):
        super().__init__()
        
        self.hidden_linear = nn.Linear(1, 14)  
                                                # <1>
        self.output_linear = nn.Linear(14, 1)
        
    def forward(self, input):
        hidden_t = self.hidden_linear(input)
        activated_t = torch.tanh(hidden_t) # <2>
        output_t = self.output_linear(activated_t)
        
        return output_t
    
func_model = SubclassFunctionalModel()
func_model

"""

NB_2_BIRDS_AIRPLANES = r"""
# %matplotlib inline  # port: a notebook's magic
from matplotlib import pyplot as plt
import numpy as np
import torch

torch.set_printoptions(edgeitems=2)
torch.manual_seed(123)
# %%
class_names = ['airplane','automobile','bird','cat','deer',
               'dog','frog','horse','ship','truck']
# %%
from torchvision import datasets, transforms
data_path = '../data-unversioned/p1ch7/'
cifar10 = datasets.CIFAR10(
    data_path, train=True, download=False,
    transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.4915, 0.4823, 0.4468),
                             (0.2470, 0.2435, 0.2616))
    ]))
# %%
cifar10_val = datasets.CIFAR10(
    data_path, train=False, download=False,
    transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.4915, 0.4823, 0.4468),
                             (0.2470, 0.2435, 0.2616))
    ]))
# %%
label_map = {0: 0, 2: 1}
class_names = ['airplane', 'bird']
cifar2 = [(img, label_map[label])
          for img, label in cifar10 
          if label in [0, 2]]
cifar2_val = [(img, label_map[label])
              for img, label in cifar10_val
              if label in [0, 2]]
# %%
import torch.nn as nn

n_out = 2

model = nn.Sequential(
            nn.Linear(
                3072,  # <1>
                512,   # <2>
            ),
            nn.Tanh(),
            nn.Linear(
                512,   # <2>
                n_out, # <3>
            )
        )
# %%
def softmax(x):
    return torch.exp(x) / torch.exp(x).sum()
# %%
x = torch.tensor([1.0, 2.0, 3.0])

softmax(x)
# %%
softmax(x).sum()
# %%
softmax = nn.Softmax(dim=1)

x = torch.tensor([[1.0, 2.0, 3.0],
                  [1.0, 2.0, 3.0]])

softmax(x)
# %%
model = nn.Sequential(
            nn.Linear(3072, 512),
            nn.Tanh(),
            nn.Linear(512, 2),
            nn.Softmax(dim=1))
# %%
img, _ = cifar2[0]

plt.imshow(img.permute(1, 2, 0))
plt.show()
# %%
img_batch = img.view(-1).unsqueeze(0)
# %%
out = model(img_batch)
out
# %%
_, index = torch.max(out, dim=1)

index
# %%
out = torch.tensor([
    [0.6, 0.4],
    [0.9, 0.1],
    [0.3, 0.7],
    [0.2, 0.8],
])
class_index = torch.tensor([0, 0, 1, 1]).unsqueeze(1)

truth = torch.zeros((4,2))
truth.scatter_(dim=1, index=class_index, value=1.0)
truth
# %%
def mse(out):
    return ((out - truth) ** 2).sum(dim=1).mean()
mse(out)
# %%
out.gather(dim=1, index=class_index)
# %%
def likelihood(out):
    prod = 1.0
    for x in out.gather(dim=1, index=class_index):
        prod *= x
    return prod

likelihood(out)
# %%
def neg_log_likelihood(out):
    return -likelihood(out).log()

neg_log_likelihood(out)
# %%
out0 = out.clone().detach()
out0[0] = torch.tensor([0.9, 0.1]) # more right

out2 = out.clone().detach()
out2[0] = torch.tensor([0.4, 0.6]) # slightly wrong

out3 = out.clone().detach()
out3[0] = torch.tensor([0.1, 0.9]) # very wrong

mse_comparison = torch.tensor([mse(o) for o in [out0, out, out2, out3]])
mse_comparison
# %%
((mse_comparison / mse_comparison[1]) - 1) * 100
# %%
nll_comparison = torch.tensor([neg_log_likelihood(o) 
                               for o in [out0, out, out2, out3]])
nll_comparison
# %%
((nll_comparison / nll_comparison[1]) - 1) * 100
# %%
softmax = nn.Softmax(dim=1)

log_softmax = nn.LogSoftmax(dim=1)

x = torch.tensor([[0.0, 104.0]])

softmax(x)
# %%
softmax = nn.Softmax(dim=1)

log_softmax = nn.LogSoftmax(dim=1)

x = torch.tensor([[0.0, 104.0]])

softmax(x)
# %%
torch.log(softmax(x))
# %%
log_softmax(x)
# %%
torch.exp(log_softmax(x))
# %%
model = nn.Sequential(
            nn.Linear(3072, 512),
            nn.Tanh(),
            nn.Linear(512, 2),
            nn.LogSoftmax(dim=1))
# %%
loss = nn.NLLLoss()
# %%
img, label = cifar2[0]

out = model(img.view(-1).unsqueeze(0))

loss(out, torch.tensor([label]))
# %%
import torch
import torch.nn as nn
import torch.optim as optim

model = nn.Sequential(
            nn.Linear(3072, 512),
            nn.Tanh(),
            nn.Linear(512, 2),
            nn.LogSoftmax(dim=1))

learning_rate = 1e-2

optimizer = optim.SGD(model.parameters(), lr=learning_rate)

loss_fn = nn.NLLLoss()

n_epochs = 3  # port: 100 epochs shrunk

for epoch in range(n_epochs):
    for img, label in cifar2:
        out = model(img.view(-1).unsqueeze(0))
        loss = loss_fn(out, torch.tensor([label]))
                
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch: %d, Loss: %f" % (epoch, float(loss)))
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)
# %%
import torch
import torch.nn as nn
import torch.optim as optim

train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)

model = nn.Sequential(
            nn.Linear(3072, 128),
            nn.Tanh(),
            nn.Linear(128, 2),
            nn.LogSoftmax(dim=1))

learning_rate = 1e-2

optimizer = optim.SGD(model.parameters(), lr=learning_rate)

loss_fn = nn.NLLLoss()

n_epochs = 3  # port: 100 epochs shrunk

for epoch in range(n_epochs):
    for imgs, labels in train_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        loss = loss_fn(outputs, labels)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch: %d, Loss: %f" % (epoch, float(loss)))
# %%
import torch
import torch.nn as nn
import torch.optim as optim

train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)

model = nn.Sequential(
            nn.Linear(3072, 512),
            nn.Tanh(),
            nn.Linear(512, 2),
            nn.LogSoftmax(dim=1))

learning_rate = 1e-2

optimizer = optim.SGD(model.parameters(), lr=learning_rate)

loss_fn = nn.NLLLoss()

n_epochs = 3  # port: 100 epochs shrunk

for epoch in range(n_epochs):
    for imgs, labels in train_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        loss = loss_fn(outputs, labels)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch: %d, Loss: %f" % (epoch, float(loss)))
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in train_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
val_loader = torch.utils.data.DataLoader(cifar2_val, batch_size=64,
                                         shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in val_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
model = nn.Sequential(
            nn.Linear(3072, 1024),
            nn.Tanh(),
            nn.Linear(1024, 512),
            nn.Tanh(),
            nn.Linear(512, 128),
            nn.Tanh(),
            nn.Linear(128, 2),
            nn.LogSoftmax(dim=1))
# %%
model = nn.Sequential(
            nn.Linear(3072, 1024),
            nn.Tanh(),
            nn.Linear(1024, 512),
            nn.Tanh(),
            nn.Linear(512, 128),
            nn.Tanh(),
            nn.Linear(128, 2))

loss_fn = nn.CrossEntropyLoss()
# %%
import torch
import torch.nn as nn
import torch.optim as optim

train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)

model = nn.Sequential(
            nn.Linear(3072, 1024),
            nn.Tanh(),
            nn.Linear(1024, 512),
            nn.Tanh(),
            nn.Linear(512, 128),
            nn.Tanh(),
            nn.Linear(128, 2))

learning_rate = 1e-2

optimizer = optim.SGD(model.parameters(), lr=learning_rate)

loss_fn = nn.CrossEntropyLoss()

n_epochs = 3  # port: 100 epochs shrunk

for epoch in range(n_epochs):
    for imgs, labels in train_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        loss = loss_fn(outputs, labels)

        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch: %d, Loss: %f" % (epoch, float(loss)))
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in train_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
val_loader = torch.utils.data.DataLoader(cifar2_val, batch_size=64,
                                         shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in val_loader:
        outputs = model(imgs.view(imgs.shape[0], -1))
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
sum([p.numel() for p in model.parameters()])
# %%
sum([p.numel() for p in model.parameters() if p.requires_grad == True])
# %%
first_model = nn.Sequential(
                nn.Linear(3072, 512),
                nn.Tanh(),
                nn.Linear(512, 2),
                nn.LogSoftmax(dim=1))

sum([p.numel() for p in first_model.parameters()])
# %%
sum([p.numel() for p in nn.Linear(3072, 512).parameters()])
# %%
sum([p.numel() for p in nn.Linear(3072, 1024).parameters()])
# %%
linear = nn.Linear(3072, 1024)

next(linear.parameters()).shape, linear.bias.shape  # port: weight: a Linear's is weights (in, out) (documented)
# %%
conv = nn.Conv2d(3, 16, kernel_size=3)
# %%
next(conv.parameters()).shape  # port: conv.weight by position: a conv's is weights (documented)
# %%
conv.bias.shape
# %%
img, _ = cifar2[0]

output = conv(img.unsqueeze(0))
# %%
img.unsqueeze(0).shape, output.shape
# %%
plt.imshow(img.permute(1, 2, 0), cmap='gray')
plt.show()
# %%
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.show()
# %%
output.shape
# %%
conv = nn.Conv2d(3, 1, kernel_size=3, padding=1)
# %%
output = conv(img.unsqueeze(0))

output.shape
# %%
with torch.no_grad():
    conv.bias.zero_()
# %%
with torch.no_grad():
    next(conv.parameters()).fill_(1.0 / 9.0)  # port: conv.weight by position: a conv's is weights (documented)
# %%
output = conv(img.unsqueeze(0))
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.show()
# %%
conv = nn.Conv2d(3, 1, kernel_size=3, padding=1)

with torch.no_grad():
    next(conv.parameters())[:] = torch.tensor([[-1.0, 0.0, 1.0],  # port: conv.weight by position: a conv's is weights (documented)
                                   [-1.0, 0.0, 1.0],
                                   [-1.0, 0.0, 1.0]])
    conv.bias.zero_()
# %%
output = conv(img.unsqueeze(0))
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.show()
# %%
pool = nn.MaxPool2d(2)
# %%
output = pool(img.unsqueeze(0))

output.shape
# %%
model = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 8, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            ...)
# %%
model = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 8, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            # WARNING: something missing here
            nn.Linear(512, 32),
            nn.Tanh(),
            nn.Linear(32, 2))
# %%
sum([p.numel() for p in model.parameters()])
# %%
model(img.unsqueeze(0))
# %%
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.act1 = nn.Tanh()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.act2 = nn.Tanh()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.act4 = nn.Tanh()
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        out = self.pool1(self.act1(self.conv1(x)))
        out = self.pool2(self.act2(self.conv2(out)))
        out = out.view(-1, 8 * 8 * 8)
        out = self.act4(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = Net()

sum([p.numel() for p in model.parameters()])
# %%
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
        out = out.view(-1, 8 * 8 * 8)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = Net()
model(img.unsqueeze(0))
# %%
import torch
import torch.nn as nn
import torch.nn.functional as F

train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        out = F.max_pool2d(torch.relu(self.conv2(out)), 2)
        out = out.view(-1, 8 * 8 * 8)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
    
model = Net()

learning_rate = 1e-2

optimizer = optim.SGD(model.parameters(), lr=learning_rate)

loss_fn = nn.CrossEntropyLoss()

n_epochs = 3  # port: 100 epochs shrunk

for epoch in range(n_epochs):
    for imgs, labels in train_loader:
        outputs = model(imgs)
        loss = loss_fn(outputs, labels)
                
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print("Epoch: %d, Loss: %f" % (epoch, float(loss)))
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in train_loader:
        outputs = model(imgs)
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
val_loader = torch.utils.data.DataLoader(cifar2_val, batch_size=64,
                                         shuffle=False)

correct = 0
total = 0

with torch.no_grad():
    for imgs, labels in val_loader:
        outputs = model(imgs)
        _, predicted = torch.max(outputs, dim=1)
        total += labels.shape[0]
        correct += int((predicted == labels).sum())
        
print("Accuracy: %f" % (correct / total))
# %%
import torch
import torch.nn as nn
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        out = F.max_pool2d(torch.relu(self.conv2(out)), 2)
        out = out.view(-1, 8 * 8 * 8)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
    
model = Net()
sum([p.numel() for p in model.parameters()])
# %%
model = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 8, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Linear(8*8*8, 32),
            nn.Tanh(),
            nn.Linear(32, 2))

model(img.unsqueeze(0))

"""

NB_1_CONVOLUTION = r"""
# %matplotlib inline  # port: a notebook's magic
from matplotlib import pyplot as plt
import numpy as np
import collections

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.set_printoptions(edgeitems=2)
torch.manual_seed(123)
# %%
class_names = ['airplane','automobile','bird','cat','deer',
               'dog','frog','horse','ship','truck']
# %%
from torchvision import datasets, transforms
data_path = '../data-unversioned/p1ch6/'
cifar10 = datasets.CIFAR10(
    data_path, train=True, download=True,
    transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.4915, 0.4823, 0.4468),
                             (0.2470, 0.2435, 0.2616))
    ]))
# %%
cifar10_val = datasets.CIFAR10(
    data_path, train=False, download=True,
    transform=transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.4915, 0.4823, 0.4468),
                             (0.2470, 0.2435, 0.2616))
    ]))
# %%
label_map = {0: 0, 2: 1}
class_names = ['airplane', 'bird']
cifar2 = [(img, label_map[label])
          for img, label in cifar10
          if label in [0, 2]]
cifar2_val = [(img, label_map[label])
              for img, label in cifar10_val
              if label in [0, 2]]
# %%
connected_model = nn.Sequential(
            nn.Linear(3072, 1024),
            nn.Tanh(),
            nn.Linear(1024, 512),
            nn.Tanh(),
            nn.Linear(512, 128),
            nn.Tanh(),
            nn.Linear(128, 2))
# %%
numel_list = [p.numel()
              for p in connected_model.parameters()
              if p.requires_grad == True]
sum(numel_list), numel_list
# %%
first_model = nn.Sequential(
                nn.Linear(3072, 512),
                nn.Tanh(),
                nn.Linear(512, 2),
                nn.LogSoftmax(dim=1))
# %%
numel_list = [p.numel() for p in first_model.parameters()]
sum(numel_list), numel_list
# %%
linear = nn.Linear(3072, 1024)

next(linear.parameters()).shape, linear.bias.shape  # port: weight: a Linear's is weights (in, out) (documented)
# %%
conv = nn.Conv2d(3, 16, kernel_size=3) # <1>
conv
# %%
next(conv.parameters()).shape, conv.bias.shape  # port: conv.weight by position: a conv's is weights (documented)
# %%
img, _ = cifar2[0]
output = conv(img.unsqueeze(0))
img.unsqueeze(0).shape, output.shape
# %%
plt.imshow(img.mean(0), cmap='gray')
plt.show()
# %%
plt.figure(figsize=(10, 4.8))  # bookskip
ax1 = plt.subplot(1, 2, 1)   # bookskip
plt.title('output')   # bookskip
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.subplot(1, 2, 2, sharex=ax1, sharey=ax1)  # bookskip
plt.imshow(img.mean(0), cmap='gray')  # bookskip
plt.title('input')  # bookskip
plt.savefig('Ch8_F2_PyTorch.png')  # bookskip
plt.show()
# %%
conv = nn.Conv2d(3, 1, kernel_size=3, padding=1) # <1>
output = conv(img.unsqueeze(0))
img.unsqueeze(0).shape, output.shape
# %%
with torch.no_grad():
    conv.bias.zero_()
    
with torch.no_grad():
    next(conv.parameters()).fill_(1.0 / 9.0)  # port: conv.weight by position: a conv's is weights (documented)
# %%
output = conv(img.unsqueeze(0))
plt.figure(figsize=(10, 4.8))  # bookskip
ax1 = plt.subplot(1, 2, 1)   # bookskip
plt.title('output')   # bookskip
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.subplot(1, 2, 2, sharex=ax1, sharey=ax1)  # bookskip
plt.imshow(img.mean(0), cmap='gray')  # bookskip
plt.title('input')  # bookskip
plt.savefig('Ch8_F4_PyTorch.png')  # bookskip
plt.show()
# %%
conv = nn.Conv2d(3, 1, kernel_size=3, padding=1)

with torch.no_grad():
    next(conv.parameters())[:] = torch.tensor([[-1.0, 0.0, 1.0],  # port: conv.weight by position: a conv's is weights (documented)
                                   [-1.0, 0.0, 1.0],
                                   [-1.0, 0.0, 1.0]])
    conv.bias.zero_()
# %%
output = conv(img.unsqueeze(0))
plt.figure(figsize=(10, 4.8))  # bookskip
ax1 = plt.subplot(1, 2, 1)   # bookskip
plt.title('output')   # bookskip
plt.imshow(output[0, 0].detach(), cmap='gray')
plt.subplot(1, 2, 2, sharex=ax1, sharey=ax1)  # bookskip
plt.imshow(img.mean(0), cmap='gray')  # bookskip
plt.title('input')  # bookskip
plt.savefig('Ch8_F5_PyTorch.png')  # bookskip
plt.show()
# %%
pool = nn.MaxPool2d(2)
output = pool(img.unsqueeze(0))

img.unsqueeze(0).shape, output.shape
# %%
model = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 8, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            # ...
            )
# %%
model = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 8, kernel_size=3, padding=1),
            nn.Tanh(),
            nn.MaxPool2d(2),
            # ... <1>
            nn.Linear(8 * 8 * 8, 32),
            nn.Tanh(),
            nn.Linear(32, 2))
# %%
numel_list = [p.numel() for p in model.parameters()]
sum(numel_list), numel_list
# %%
model(img.unsqueeze(0))
# %%
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.act1 = nn.Tanh()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.act2 = nn.Tanh()
        self.pool2 = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.act3 = nn.Tanh()
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        out = self.pool1(self.act1(self.conv1(x)))
        out = self.pool2(self.act2(self.conv2(out)))
        out = out.view(-1, 8 * 8 * 8) # <1>
        out = self.act3(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = Net()

numel_list = [p.numel() for p in model.parameters()]
sum(numel_list), numel_list
# %%
import torch.nn.functional as F

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(8 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
        out = out.view(-1, 8 * 8 * 8)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = Net()
model(img.unsqueeze(0))
# %%
import datetime  # <1>

def training_loop(n_epochs, optimizer, model, loss_fn, train_loader):
    for epoch in range(1, n_epochs + 1):  # <2>
        loss_train = 0.0
        for imgs, labels in train_loader:  # <3>
            
            outputs = model(imgs)  # <4>
            
            loss = loss_fn(outputs, labels)  # <5>

            optimizer.zero_grad()  # <6>
            
            loss.backward()  # <7>
            
            optimizer.step()  # <8>

            loss_train += loss.item()  # <9>

        if epoch == 1 or epoch % 10 == 0:
            print('{} Epoch {}, Training loss {}'.format(
                datetime.datetime.now(), epoch,
                loss_train / len(train_loader)))  # <10>
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)  # <1>

model = Net()  #  <2>
optimizer = optim.SGD(model.parameters(), lr=1e-2)  #  <3>
loss_fn = nn.CrossEntropyLoss()  #  <4>

training_loop(  # <5>
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=False)
val_loader = torch.utils.data.DataLoader(cifar2_val, batch_size=64,
                                         shuffle=False)

def validate(model, train_loader, val_loader):
    for name, loader in [("train", train_loader), ("val", val_loader)]:
        correct = 0
        total = 0

        with torch.no_grad():  # <1>
            for imgs, labels in loader:
                outputs = model(imgs)
                _, predicted = torch.max(outputs, dim=1) # <2>
                total += labels.shape[0]  # <3>
                correct += int((predicted == labels).sum())  # <4>

        print("Accuracy {}: {:.2f}".format(name , correct / total))

validate(model, train_loader, val_loader)
# %%
torch.save(model.state_dict(), data_path + 'birds_vs_airplanes.pt')
# %%
loaded_model = Net()  # <1>
loaded_model.load_state_dict(torch.load(data_path
                                        + 'birds_vs_airplanes.pt'))
# %%
device = (torch.device('cuda') if torch.cuda.is_available()
          else torch.device('cpu'))
print(f"Training on device {device}.")
# %%
import datetime

def training_loop(n_epochs, optimizer, model, loss_fn, train_loader):
    for epoch in range(1, n_epochs + 1):
        loss_train = 0.0
        for imgs, labels in train_loader:
            imgs = imgs.to(device=device)  # <1>
            labels = labels.to(device=device)
            outputs = model(imgs)
            loss = loss_fn(outputs, labels)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            loss_train += loss.item()

        if epoch == 1 or epoch % 10 == 0:
            print('{} Epoch {}, Training loss {}'.format(
                datetime.datetime.now(), epoch,
                loss_train / len(train_loader)))
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=True)

model = Net().to(device=device)  # <1>
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
# %%
train_loader = torch.utils.data.DataLoader(cifar2, batch_size=64,
                                           shuffle=False)
val_loader = torch.utils.data.DataLoader(cifar2_val, batch_size=64,
                                         shuffle=False)
all_acc_dict = collections.OrderedDict()

def validate(model, train_loader, val_loader):
    accdict = {}
    for name, loader in [("train", train_loader), ("val", val_loader)]:
        correct = 0
        total = 0

        with torch.no_grad():
            for imgs, labels in loader:
                imgs = imgs.to(device=device)
                labels = labels.to(device=device)
                outputs = model(imgs)
                _, predicted = torch.max(outputs, dim=1) # <1>
                total += labels.shape[0]
                correct += int((predicted == labels).sum())

        print("Accuracy {}: {:.2f}".format(name , correct / total))
        accdict[name] = correct / total
    return accdict

all_acc_dict["baseline"] = validate(model, train_loader, val_loader)
# %%
loaded_model = Net().to(device=device)
loaded_model.load_state_dict(torch.load(data_path
                                        + 'birds_vs_airplanes.pt',
                                        map_location=device))
# %%
class NetWidth(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(32, 16, kernel_size=3, padding=1)
        self.fc1 = nn.Linear(16 * 8 * 8, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
        out = out.view(-1, 16 * 8 * 8)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetWidth().to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)

validate(model, train_loader, val_loader)
# %%
class NetWidth(nn.Module):
    def __init__(self, n_chans1=32):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3,
                               padding=1)
        self.fc1 = nn.Linear(8 * 8 * n_chans1 // 2, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
        out = out.view(-1, 8 * 8 * self.n_chans1 // 2)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetWidth(n_chans1=32).to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)

all_acc_dict["width"] = validate(model, train_loader, val_loader)
# %%
sum(p.numel() for p in model.parameters())
# %%
def training_loop_l2reg(n_epochs, optimizer, model, loss_fn,
                        train_loader):
    for epoch in range(1, n_epochs + 1):
        loss_train = 0.0
        for imgs, labels in train_loader:
            imgs = imgs.to(device=device)
            labels = labels.to(device=device)
            outputs = model(imgs)
            loss = loss_fn(outputs, labels)

            l2_lambda = 0.001
            l2_norm = sum(p.pow(2.0).sum()
                          for p in model.parameters())  # <1>
            loss = loss + l2_lambda * l2_norm

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            
            loss_train += loss.item()
        if epoch == 1 or epoch % 10 == 0:
            print('{} Epoch {}, Training loss {}'.format(
                datetime.datetime.now(), epoch,
                loss_train / len(train_loader)))
# %%
model = Net().to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop_l2reg(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["l2 reg"] = validate(model, train_loader, val_loader)
# %%
class NetDropout(nn.Module):
    def __init__(self, n_chans1=32):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.conv1_dropout = nn.Dropout2d(p=0.4)
        self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3,
                               padding=1)
        self.conv2_dropout = nn.Dropout2d(p=0.4)
        self.fc1 = nn.Linear(8 * 8 * n_chans1 // 2, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.tanh(self.conv1(x)), 2)
        out = self.conv1_dropout(out)
        out = F.max_pool2d(torch.tanh(self.conv2(out)), 2)
        out = self.conv2_dropout(out)
        out = out.view(-1, 8 * 8 * self.n_chans1 // 2)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetDropout(n_chans1=32).to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["dropout"] = validate(model, train_loader, val_loader)
# %%
class NetBatchNorm(nn.Module):
    def __init__(self, n_chans1=32):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.conv1_batchnorm = nn.BatchNorm2d(num_features=n_chans1)
        self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3, 
                               padding=1)
        self.conv2_batchnorm = nn.BatchNorm2d(num_features=n_chans1 // 2)
        self.fc1 = nn.Linear(8 * 8 * n_chans1 // 2, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = self.conv1_batchnorm(self.conv1(x))
        out = F.max_pool2d(torch.tanh(out), 2)
        out = self.conv2_batchnorm(self.conv2(out))
        out = F.max_pool2d(torch.tanh(out), 2)
        out = out.view(-1, 8 * 8 * self.n_chans1 // 2)
        out = torch.tanh(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetBatchNorm(n_chans1=32).to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["batch_norm"] = validate(model, train_loader, val_loader)
# %%
class NetDepth(nn.Module):
    def __init__(self, n_chans1=32):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3,
                               padding=1)
        self.conv3 = nn.Conv2d(n_chans1 // 2, n_chans1 // 2,
                               kernel_size=3, padding=1)
        self.fc1 = nn.Linear(4 * 4 * n_chans1 // 2, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        out = F.max_pool2d(torch.relu(self.conv2(out)), 2)
        out = F.max_pool2d(torch.relu(self.conv3(out)), 2)
        out = out.view(-1, 4 * 4 * self.n_chans1 // 2)
        out = torch.relu(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetDepth(n_chans1=32).to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["depth"] = validate(model, train_loader, val_loader)
# %%
class NetRes(nn.Module):
    def __init__(self, n_chans1=32):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(n_chans1, n_chans1 // 2, kernel_size=3,
                               padding=1)
        self.conv3 = nn.Conv2d(n_chans1 // 2, n_chans1 // 2,
                               kernel_size=3, padding=1)
        self.fc1 = nn.Linear(4 * 4 * n_chans1 // 2, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        out = F.max_pool2d(torch.relu(self.conv2(out)), 2)
        out1 = out
        out = F.max_pool2d(torch.relu(self.conv3(out)) + out1, 2)
        out = out.view(-1, 4 * 4 * self.n_chans1 // 2)
        out = torch.relu(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetRes(n_chans1=32).to(device=device)
optimizer = optim.SGD(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["res"] = validate(model, train_loader, val_loader)
# %%
class ResBlock(nn.Module):
    def __init__(self, n_chans):
        super(ResBlock, self).__init__()
        self.conv = nn.Conv2d(n_chans, n_chans, kernel_size=3,
                              padding=1, bias=False)  # <1>
        self.batch_norm = nn.BatchNorm2d(num_features=n_chans)
        torch.nn.init.kaiming_normal_(next(self.conv.parameters()),  # port: conv.weight by position: a conv's is weights (documented)
                                      nonlinearity='relu')  # <2>
        torch.nn.init.constant_(next(self.batch_norm.parameters()), 0.5)  # port: batch_norm.weight by position: a norm's is gamma (documented)
        torch.nn.init.zeros_(list(self.batch_norm.parameters())[1])  # port: batch_norm.bias by position: a norm's is beta (documented)

    def forward(self, x):
        out = self.conv(x)
        out = self.batch_norm(out)
        out = torch.relu(out)
        return out + x
# %%
class NetResDeep(nn.Module):
    def __init__(self, n_chans1=32, n_blocks=10):
        super().__init__()
        self.n_chans1 = n_chans1
        self.conv1 = nn.Conv2d(3, n_chans1, kernel_size=3, padding=1)
        self.resblocks = nn.Sequential(
            *(n_blocks * [ResBlock(n_chans=n_chans1)]))
        self.fc1 = nn.Linear(8 * 8 * n_chans1, 32)
        self.fc2 = nn.Linear(32, 2)
        
    def forward(self, x):
        out = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        out = self.resblocks(out)
        out = F.max_pool2d(out, 2)
        out = out.view(-1, 8 * 8 * self.n_chans1)
        out = torch.relu(self.fc1(out))
        out = self.fc2(out)
        return out
# %%
model = NetResDeep(n_chans1=32, n_blocks=3).to(device=device)  # port: 100 blocks shrunk
optimizer = optim.SGD(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()

training_loop(
    n_epochs = 3,  # port: 100 epochs shrunk
    optimizer = optimizer,
    model = model,
    loss_fn = loss_fn,
    train_loader = train_loader,
)
all_acc_dict["res deep"] = validate(model, train_loader, val_loader)
# %%
trn_acc = [v['train'] for k, v in all_acc_dict.items()]
val_acc = [v['val'] for k, v in all_acc_dict.items()]

width =0.3
plt.bar(np.arange(len(trn_acc)), trn_acc, width=width, label='train')
plt.bar(np.arange(len(val_acc))+ width, val_acc, width=width, label='val')
plt.xticks(np.arange(len(val_acc))+ width/2, list(all_acc_dict.keys()),
           rotation=60)
plt.ylabel('accuracy')
plt.legend(loc='lower right')
plt.ylim(0.7, 1)
plt.savefig('accuracy_comparison.png', bbox_inches='tight')
plt.show()

"""


# torchvision's CIFAR-10 as the notebooks use it (in torch's words: under tricycle the same
# text), reading IMAGES, numpy arrays the test puts in the module first
VISION = r"""
import numpy as np
import torch


class ToTensor:
    def __call__(self, image):  # (H, W, C) uint8, PIL's place -> (C, H, W) float in [0, 1]
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1), np.float32) / 255)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        return (x - torch.tensor(self.mean).view(-1, 1, 1)) / torch.tensor(self.std).view(-1, 1, 1)


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


class CIFAR10:
    def __init__(self, root, train=True, transform=None, download=False):
        self.images, self.labels = IMAGES[train]
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index]
        return (image if self.transform is None else self.transform(image)), int(self.labels[index])
"""


def cifar(n_train: int = 64, n_val: int = 32) -> dict:
    """CIFAR-10's stand-in, uint8 (N, 32, 32, 3): airplanes (label 0) a pale sky with a dark
    bar across, birds (label 2) green with a dark blob, and a few other classes (noise) that
    the notebooks filter out."""
    rng = np.random.default_rng(0)
    v, u = np.mgrid[0:32, 0:32]

    def image(label):
        noise = rng.normal(0, 20, (32, 32, 3))
        if label == 0:
            base = np.array([150.0, 180.0, 230.0]) + noise
            row = rng.integers(8, 24)
            base[abs(v - row) < 2] = 60
        elif label == 2:
            base = np.array([70.0, 160.0, 70.0]) + noise
            cy, cx = rng.integers(10, 22, 2)
            base[(v - cy) ** 2 + (u - cx) ** 2 < 16] = 40
        else:
            base = rng.uniform(0, 255, (32, 32, 3))
        return np.clip(base, 0, 255).astype(np.uint8)

    data = {}
    for train, n in (True, n_train), (False, n_val):
        labels = np.array([(0, 2, 0, 2, 5, 0, 2, 9)[i % 8] for i in range(n)])
        data[train] = (np.stack([image(label) for label in labels]), labels)
    return data


def vision(lib, monkeypatch) -> None:
    """``<lib>vision`` with ``datasets.CIFAR10`` and three ``transforms``, in ``sys.modules``."""
    name = lib.__name__ + "vision"
    module = types.ModuleType(name)
    base = types.ModuleType(f"{name}._base")
    base.IMAGES = cifar()
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    for part, keys in (
        ("datasets", ["CIFAR10"]),
        ("transforms", ["ToTensor", "Normalize", "Compose"]),
    ):
        sub = types.ModuleType(f"{name}.{part}")
        for key in keys:
            setattr(sub, key, getattr(base, key))
        setattr(module, part, sub)
        monkeypatch.setitem(sys.modules, f"{name}.{part}", sub)
    monkeypatch.setitem(sys.modules, name, module)


def run_cells(text: str, space: dict) -> None:
    """The notebook's cells (split at ``# %%``) run in order in ``space``, each cell's last
    expression printed (its repr), as a notebook shows it; a failing cell prints "ERROR"."""
    for cell in text.split("\n# %%\n"):
        tree = ast.parse(cell)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        try:
            exec(compile(tree, "notebook.py", "exec"), space)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "notebook.py", "eval"), space)
                if value is not None:
                    print(repr(value))
        except (TypeError, ValueError, RuntimeError) as error:  # the book's failing cells
            print("ERROR", type(error).__name__ in ("TypeError", "ValueError", "RuntimeError"))


def run(text: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """The notebook in ``lib``'s words, seeded, run in ``folder/notebook`` beside
    ``folder/data`` (its ``../data/p1ch3``) on one thread: what it printed and its globals."""
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    (folder / "data" / "p1ch3").mkdir(parents=True)
    (folder / "data-unversioned" / "p1ch7").mkdir(parents=True)
    (folder / "data-unversioned" / "p1ch6").mkdir(parents=True)
    (folder / "notebook").mkdir()
    monkeypatch.chdir(folder / "notebook")
    vision(lib, monkeypatch)
    lib.manual_seed(0)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with np.printoptions(), contextlib.redirect_stdout(out):  # set_printoptions: numpy's
        run_cells(text.replace("torch", lib.__name__), space)
    return out.getvalue(), space


def both(text: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (a GPU is never answered),
    matplotlib drawing off screen; torch's print options put back after."""
    torch = pytest.importorskip("torch")
    matplotlib = pytest.importorskip("matplotlib")
    import tricycle  # noqa: PLC0415

    matplotlib.use("Agg")
    for lib in torch, tricycle:
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        try:
            theirs = run(text, torch, tmp_path / "torch", monkeypatch)
        finally:
            torch.set_printoptions(profile="default")
        ours = run(text, tricycle, tmp_path / "tricycle", monkeypatch)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")
    return theirs, ours


def normal(printed: str) -> list[str]:
    """``kinds`` with the documented differences aside: a Parameter's "Parameter containing:"
    head, a Sequential's "sequence." prefix, a Linear's transposed weights' name, and a
    storage's footer."""
    text = re.sub(r" at 0x[0-9a-f]+>", ">", printed).replace("Parameter containing:\n", "")
    # manual_seed's generator: torch's, numpy's here
    text = re.sub(
        r"<torch._C.Generator object>|Generator\(PCG64\) at 0x[0-9A-F]+", "GENERATOR", text
    )
    text = re.sub(
        r"Dense\(from_size=(\d+), to_size=(\d+)", r"Linear(in_features=\1, out_features=\2", text
    )
    text = (
        re.sub(r"  # [\d,]+ parameters", "", text)
        .replace("sequence.", "")
        .replace(".weights", ".weight")
    )
    text = text.replace("[torch.storage.TypedStorage(dtype=torch.float32, device=cpu)", "[STORAGE")
    text = text.replace("[tricycle.Storage(dtype=float32)", "[STORAGE")
    text = re.sub(r"dtype\('(\w+)'\)", r"torch.\1", text)  # numpy's dtypes (documented)
    # dir(optim) lists each library's optimisers; model.parameters() is a generator in torch,
    # a list here (reported)
    return [
        k
        for k in kinds(text)
        if not k.startswith(("['ASGD'", "[<tensor of #>, <tensor of #>]", "<generator object"))
    ]


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(host(ours).astype(float), host(theirs).astype(float), rtol=rtol, atol=atol)  # fmt: skip


def test_tensors(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NB_1_TENSORS, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    # the storage written through, the row's view written through, the clone not
    for name in (
        "points",
        "second_point",
        "points_t",
        "points_t_cont",
        "a_t",
        "double_points",
        "short_points",
    ):
        same(our[name], their[name])
    assert our["short_points"].dtype == np.int16 and our["double_points"].dtype == np.float64
    assert our["points_t"].stride() == tuple(their["points_t"].stride()) == (1, 2)
    assert our["transpose_t"].stride() == tuple(their["transpose_t"].stride()) == (1, 5, 20)
    row = our["tricycle"].tensor([[4.0, 1.0], [5.0, 3.0], [2.0, 1.0]])[1]
    assert row.storage_offset() == 2 and list(row.storage()) == [4.0, 1.0, 5.0, 3.0, 2.0, 1.0]
    assert list(our["points_t"].storage()) == list(their["points_t"].storage())


def losses(printed: str, pattern: str = r"[Ll]oss:? ([\d.]+)") -> list[float]:
    return numbers(pattern, printed)


@pytest.mark.parametrize(
    "name",
    [
        "1_PARAMETER_ESTIMATION",
        "2_AUTOGRAD",
        "3_OPTIMIZERS",
        "1_NEURAL_NETWORKS",
        "2_ACTIVATION_FUNCTIONS",
        "3_NN_MODULE_SUBCLASSING",
    ],
)
def test_thermometer_chapters(name, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[f"NB_{name}"], tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    if "output_t" in our:  # the activations and their sums on the same inputs
        same(our["output_t"], their["output_t"])
    for printed in theirs, ours:
        found = losses(printed, r"Loss ([\d.]+)") or losses(printed, r"Training loss ([\d.]+)")
        if found:
            assert min(found) < 0.5 * found[0] or found[-1] < 30, found
    # p1ch6's models, trained or not, given torch's weights: torch's numbers
    for model in ("linear_model", "seq_model", "namedseq_model", "subclass_model", "func_model"):
        if model in our:
            same_numbers(their[model], our[model], (5, 1))


def same_numbers(their_model, our_model, shape, seed=0, rtol=1e-4, atol=1e-5) -> None:
    """Tricycle's model given torch's weights (``nn.from_torch``) gives torch's outputs, the
    gradients of its parameters and of its input (a batch of ``shape``), and torch's running
    statistics where it has a norm."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    missing, unexpected = tricycle.nn.from_torch(our_model, their_model.state_dict())
    assert missing == unexpected == []
    x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    results = []
    for lib, model in (torch, their_model), (tricycle, our_model):
        inputs = lib.tensor(x, requires_grad=True)
        model.zero_grad()
        out = model(inputs)
        (out * lib.tensor(np.linspace(-1, 1, out.shape[-1], dtype=np.float32))).sum().backward()
        results.append([host(out), host(inputs.grad)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    linear = {f"{n}.weights".lstrip(".") for n, m in our_model.named_modules() if isinstance(m, tricycle.nn.Linear)}  # fmt: skip
    ours, theirs = dict(our_model.named_parameters()), dict(their_model.named_parameters())
    assert len(ours) == len(theirs)
    for (name, p), q in zip(ours.items(), theirs.values(), strict=True):
        want = host(q.grad).T if name in linear else host(q.grad)
        np.testing.assert_allclose(host(p.grad), want, rtol=rtol, atol=atol, err_msg=name)
    ours = [host(b) for n, b in our_model.named_buffers() if "running" in n]
    theirs = [host(b) for n, b in their_model.named_buffers() if "running" in n]
    assert len(ours) == len(theirs)
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_birds_airplanes(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NB_2_BIRDS_AIRPLANES, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    # the images, the one-hot truth, the made-up outputs' MSE and NLL (torch.tensor of a list
    # of (1,) tensors: a vector), the hand-set convolution's output
    for name in ("img", "img_batch", "truth", "mse_comparison", "nll_comparison"):
        same(our[name], their[name])
        assert our[name].shape == tuple(their[name].shape), name
    same(our["conv"](our["img"].unsqueeze(0)), their["conv"](their["img"].unsqueeze(0)).detach())
    for printed in theirs, ours:  # each of the five runs' last loss of an epoch falls
        found = losses(printed, r"Epoch: \d+, Loss: ([\d.]+)")
        assert len(found) == 15
        for run in range(0, 15, 3):
            assert found[run + 2] < found[run], found
    net, our_net = their["Net"](), our["Net"]()  # the chapter's last Net
    same_numbers(net, our_net, (4, 3, 32, 32))


def test_convolution(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NB_1_CONVOLUTION, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    # the pooled image, the edge detector's output (weights set under no_grad)
    same(our["output"], their["output"])
    same(our["conv"](our["img"].unsqueeze(0)), their["conv"](their["img"].unsqueeze(0)).detach())
    for lib in their, our:  # the eight networks learn the two classes (chance: 0.5)
        accuracies = [v["train"] for v in lib["all_acc_dict"].values()]
        assert len(accuracies) == 8 and np.mean(accuracies) > 0.75, accuracies
    # the loaded model holds what was saved: the first Net, trained
    saved = our["tricycle"].load(tmp_path / "tricycle/data-unversioned/p1ch6/birds_vs_airplanes.pt")
    for name, value in our["loaded_model"].state_dict().items():
        np.testing.assert_array_equal(value, saved[name])
    # the chapter's networks given torch's weights: torch's outputs and gradients (dropout
    # off in eval mode; batch norm in training mode, its running statistics updated)
    for name in ("Net", "NetWidth", "NetDropout", "NetBatchNorm", "NetDepth", "NetRes"):
        theirs, ours = their[name](), our[name]()
        if name == "NetDropout":
            theirs.eval(), ours.eval()
        same_numbers(theirs, ours, (3, 3, 32, 32))
    same_numbers(their["model"], our["model"], (3, 3, 32, 32))  # NetResDeep, trained, tied blocks
