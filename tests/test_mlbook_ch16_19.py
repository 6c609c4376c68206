"""Raschka, Liu and Mirjalili, "Machine Learning with PyTorch and Scikit-Learn"
(rasbt/machine-learning-book), chapters 16 to 19, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of tests/test_dlwpt_part1.py):

- ch16 part 1: self-attention from scratch (``torch.dot`` in a double loop, ``matmul``,
  ``F.softmax``, ``allclose``), the scaled dot-product with random projections, the multi-head
  projections by ``bmm`` over the inputs stacked with ``repeat`` and the ``Linear`` over the
  heads' flattened outputs;
- ch17 part 1: the fully connected GAN on MNIST (``nn.Sequential`` built by ``add_module``,
  ``BCELoss``, ``d_train``/``g_train`` under two Adams, the per-epoch means and samples, the
  learning curves on matplotlib's Agg) and the book's MMD score (``resize_``, ``expand``,
  ``copy_``);
- ch17 part 2: the DCGAN (``ConvTranspose2d``, ``BatchNorm2d``, ``Conv2d``, ``LeakyReLU``) and
  the WGAN (``InstanceNorm2d``, the Wasserstein loss, five critic steps a batch);
- ch18 part 1: the graph network from scratch (networkx's graphs and adjacency matrices,
  ``Parameter`` from ``torch.nn.parameter``, ``torch.mm``, a ``DataLoader`` with a
  ``collate_fn`` batching graphs block-diagonally, the global sum pool);
- ch19's cartpole/main.py: the DQN agent (a replay memory, epsilon-greedy actions, targets
  written in place under ``no_grad``, ``MSELoss``, Adam).

The test's stand-ins: ``python_environment_check`` (the repository's version check: nothing to
check here), ``torchvision`` (tests/test_yunjey_basics.py's ``datasets.MNIST``, ``ToTensor``
and ``Compose``, with a ``Normalize``, over synthetic 28x28 digits made with numpy) and
``gym`` (a small CartPole-v1 with gym's physics and its old four-value ``step``). Each
changed line ends in ``# port:`` and says why: sizes and epochs shrunk, the grids of samples
(30 subplots each: seconds of matplotlib) dropped, ``.cuda()`` on a machine without a GPU,
torch's ``repeat`` written ``tile`` (documented), and the WGAN's gradient penalty, which needs
``create_graph=True`` (a graph of the backward, documented as unsupported): the WGAN runs
without it, and the test checks that tricycle refuses it with a clear error. Each part runs under torch (skipped without it), then under tricycle, seeded and
on the CPU; both print the same lines (numbers and reprs aside), the GANs learn (the
discriminators' losses fall, the DQN fits its terminal targets), and the book's own checks (``allclose``, ``isclose``) hold. Given torch's numbers
(``nn.from_torch``, or the random tensors), the attention, the networks of each chapter and
the DQN's learning step give torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import random
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import run_cells, torch_and_tricycle
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host
from tests.test_yunjey_basics import VISION

pytestmark = [
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays"),
]

# ch16/ch16-part1-self-attention.py's code cells (its markdown comments and the empty cells out)
CH16_PART1 = r"""
import sys
from python_environment_check import check_packages
import torch
import torch.nn.functional as F
# %%
sys.path.insert(0, '..')
# %%
d = {
    'torch': '1.9.0',
}
check_packages(d)
# %%
# input sequence / sentence:
#  "Can you help me to translate this sentence"

sentence = torch.tensor(
    [0, # can
     7, # you     
     1, # help
     2, # me
     5, # to
     6, # translate
     4, # this
     3] # sentence
)

sentence
# %%
torch.manual_seed(123)
embed = torch.nn.Embedding(10, 16)
embedded_sentence = embed(sentence).detach()
embedded_sentence.shape
# %%
omega = torch.empty(8, 8)

for i, x_i in enumerate(embedded_sentence):
    for j, x_j in enumerate(embedded_sentence):
        omega[i, j] = torch.dot(x_i, x_j)
# %%
omega_mat = embedded_sentence.matmul(embedded_sentence.T)
# %%
torch.allclose(omega_mat, omega)
# %%
attention_weights = F.softmax(omega, dim=1)
attention_weights.shape
# %%
attention_weights.sum(dim=1)
# %%
x_2 = embedded_sentence[1, :]
context_vec_2 = torch.zeros(x_2.shape)
for j in range(8):
    x_j = embedded_sentence[j, :]
    context_vec_2 += attention_weights[1, j] * x_j
    
context_vec_2
# %%
context_vectors = torch.matmul(
        attention_weights, embedded_sentence)


torch.allclose(context_vec_2, context_vectors[1])
# %%
torch.manual_seed(123)

d = embedded_sentence.shape[1]
U_query = torch.rand(d, d)
U_key = torch.rand(d, d)
U_value = torch.rand(d, d)
# %%
x_2 = embedded_sentence[1]
query_2 = U_query.matmul(x_2)
# %%
key_2 = U_key.matmul(x_2)
value_2 = U_value.matmul(x_2)
# %%
keys = U_key.matmul(embedded_sentence.T).T
torch.allclose(key_2, keys[1])
# %%
values = U_value.matmul(embedded_sentence.T).T
torch.allclose(value_2, values[1])
# %%
omega_23 = query_2.dot(keys[2])
omega_23
# %%
omega_2 = query_2.matmul(keys.T)
omega_2
# %%
attention_weights_2 = F.softmax(omega_2 / d**0.5, dim=0)
attention_weights_2
# %%
#context_vector_2nd = torch.zeros(values[1, :].shape)
#for j in range(8):
#    context_vector_2nd += attention_weights_2[j] * values[j, :]
    
#context_vector_2nd
# %%
context_vector_2 = attention_weights_2.matmul(values)
context_vector_2
# %%
torch.manual_seed(123)

d = embedded_sentence.shape[1]
one_U_query = torch.rand(d, d)
# %%
h = 8
multihead_U_query = torch.rand(h, d, d)
multihead_U_key = torch.rand(h, d, d)
multihead_U_value = torch.rand(h, d, d)
# %%
multihead_query_2 = multihead_U_query.matmul(x_2)
multihead_query_2.shape
# %%
multihead_key_2 = multihead_U_key.matmul(x_2)
multihead_value_2 = multihead_U_value.matmul(x_2)
# %%
multihead_key_2[2]
# %%
stacked_inputs = embedded_sentence.T.tile((8, 1, 1))  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
stacked_inputs.shape
# %%
multihead_keys = torch.bmm(multihead_U_key, stacked_inputs)
multihead_keys.shape
# %%
multihead_keys = multihead_keys.permute(0, 2, 1)
multihead_keys.shape
# %%
multihead_keys[2, 1] # index: [2nd attention head, 2nd key]
# %%
multihead_values = torch.matmul(multihead_U_value, stacked_inputs)
multihead_values = multihead_values.permute(0, 2, 1)
# %%
multihead_z_2 = torch.rand(8, 16)
# %%
linear = torch.nn.Linear(8*16, 16)
context_vector_2 = linear(multihead_z_2.flatten())
context_vector_2.shape
"""

# ch17/ch17_part1.py's code cells (the GAN on MNIST)
CH17_PART1 = r"""
import sys
from python_environment_check import check_packages
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt
import torchvision 
from torchvision import transforms 
from torch.utils.data import DataLoader
import itertools
import math
# %%
sys.path.insert(0, '..')
# %%
d = {
    'torch': '1.8.0',
    'torchvision': '0.9.0',
    'numpy': '1.21.2',
    'matplotlib': '3.4.3',
}

check_packages(d)
# %%
print(torch.__version__)
print("GPU Available:", torch.cuda.is_available())

if torch.cuda.is_available():
    device = torch.device("cuda:0")
else:
    device = "cpu"
# %%
## define a function for the generator:
def make_generator_network(
        input_size=20,
        num_hidden_layers=1,
        num_hidden_units=100,
        num_output_units=784):
    model = nn.Sequential()
    for i in range(num_hidden_layers):
        model.add_module(f'fc_g{i}', 
                         nn.Linear(input_size, 
                                   num_hidden_units)) 
        model.add_module(f'relu_g{i}', 
                         nn.LeakyReLU())     
        input_size = num_hidden_units
    model.add_module(f'fc_g{num_hidden_layers}', 
                    nn.Linear(input_size, num_output_units))   
    model.add_module('tanh_g', nn.Tanh())      
    return model

## define a function for the discriminator:
def make_discriminator_network(
        input_size,
        num_hidden_layers=1,
        num_hidden_units=100,
        num_output_units=1):
    model = nn.Sequential()
    for i in range(num_hidden_layers):
        model.add_module(f'fc_d{i}', 
                 nn.Linear(input_size, 
                           num_hidden_units, bias=False)) 
        model.add_module(f'relu_d{i}', 
                         nn.LeakyReLU())  
        model.add_module('dropout', nn.Dropout(p=0.5))
        input_size = num_hidden_units
    model.add_module(f'fc_d{num_hidden_layers}', 
                     nn.Linear(input_size, num_output_units))   
    model.add_module('sigmoid', nn.Sigmoid())
    return model
# %%
image_size = (28, 28)
z_size = 20

gen_hidden_layers = 1
gen_hidden_size = 100
disc_hidden_layers = 1
disc_hidden_size = 100

torch.manual_seed(1)

gen_model = make_generator_network(
    input_size=z_size,
    num_hidden_layers=gen_hidden_layers, 
    num_hidden_units=gen_hidden_size,
    num_output_units=np.prod(image_size))
 
print(gen_model)
# %%
disc_model = make_discriminator_network(
    input_size=np.prod(image_size),
    num_hidden_layers=disc_hidden_layers,
    num_hidden_units=disc_hidden_size)

print(disc_model)
# %%
image_path = './'
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize(mean=(0.5), std=(0.5)),
])
mnist_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=True, 
                                           transform=transform, 
                                           download=False)

example, label = next(iter(mnist_dataset))
print(f'Min: {example.min().item()} Max: {example.max().item()}')  # port: f"{t}" of a 0-d tensor is its repr here (docs/pytorch.md)
print(example.shape)
# %%
def create_noise(batch_size, z_size, mode_z):
    if mode_z == 'uniform':
        input_z = torch.rand(batch_size, z_size)*2 - 1 
    elif mode_z == 'normal':
        input_z = torch.randn(batch_size, z_size)
    return input_z
# %%
batch_size = 32
dataloader = DataLoader(mnist_dataset, batch_size, shuffle=False)
input_real, label = next(iter(dataloader))
input_real = input_real.view(batch_size, -1)

torch.manual_seed(1)
mode_z = 'uniform'  # 'uniform' vs. 'normal'
input_z = create_noise(batch_size, z_size, mode_z)

print('input-z -- shape:', input_z.shape)
print('input-real -- shape:', input_real.shape)

g_output = gen_model(input_z)
print('Output of G -- shape:', g_output.shape)

d_proba_real = disc_model(input_real)
d_proba_fake = disc_model(g_output)
print('Disc. (real) -- shape:', d_proba_real.shape)
print('Disc. (fake) -- shape:', d_proba_fake.shape)
# %%
loss_fn = nn.BCELoss()

## Loss for the Generator
g_labels_real = torch.ones_like(d_proba_fake)
g_loss = loss_fn(d_proba_fake, g_labels_real)
print(f'Generator Loss: {g_loss:.4f}')

## Loss for the Discriminator
d_labels_real = torch.ones_like(d_proba_real)
d_labels_fake = torch.zeros_like(d_proba_fake)

d_loss_real = loss_fn(d_proba_real, d_labels_real)
d_loss_fake = loss_fn(d_proba_fake, d_labels_fake)
print(f'Discriminator Losses: Real {d_loss_real:.4f} Fake {d_loss_fake:.4f}')
# %%
batch_size = 64

torch.manual_seed(1)
np.random.seed(1)

## Set up the dataset
mnist_dl = DataLoader(mnist_dataset, batch_size=batch_size, 
                      shuffle=True, drop_last=True)
 
## Set up the models
gen_model = make_generator_network(
    input_size=z_size,
    num_hidden_layers=gen_hidden_layers, 
    num_hidden_units=gen_hidden_size,
    num_output_units=np.prod(image_size)).to(device)
 
disc_model = make_discriminator_network(
    input_size=np.prod(image_size),
    num_hidden_layers=disc_hidden_layers,
    num_hidden_units=disc_hidden_size).to(device)
 
## Loss function and optimizers:
loss_fn = nn.BCELoss()
g_optimizer = torch.optim.Adam(gen_model.parameters())
d_optimizer = torch.optim.Adam(disc_model.parameters())
# %%
## Train the discriminator
def d_train(x):
    disc_model.zero_grad()

    # Train discriminator with a real batch
    batch_size = x.size(0)
    x = x.view(batch_size, -1).to(device)
    d_labels_real = torch.ones(batch_size, 1, device=device)

    d_proba_real = disc_model(x)
    d_loss_real = loss_fn(d_proba_real, d_labels_real)

    # Train discriminator on a fake batch
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_output = gen_model(input_z)
    
    d_proba_fake = disc_model(g_output)
    d_labels_fake = torch.zeros(batch_size, 1, device=device)
    d_loss_fake = loss_fn(d_proba_fake, d_labels_fake)

    # gradient backprop & optimize ONLY D's parameters
    d_loss = d_loss_real + d_loss_fake
    d_loss.backward()
    d_optimizer.step()
  
    return d_loss.data.item(), d_proba_real.detach(), d_proba_fake.detach()
# %%
## Train the generator
def g_train(x):
    gen_model.zero_grad()
    
    batch_size = x.size(0)
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_labels_real = torch.ones(batch_size, 1, device=device)

    g_output = gen_model(input_z)
    d_proba_fake = disc_model(g_output)
    g_loss = loss_fn(d_proba_fake, g_labels_real)

    # gradient backprop & optimize ONLY G's parameters
    g_loss.backward()
    g_optimizer.step()
        
    return g_loss.data.item()
# %%
fixed_z = create_noise(batch_size, z_size, mode_z).to(device)

def create_samples(g_model, input_z):
    g_output = g_model(input_z)
    images = torch.reshape(g_output, (batch_size, *image_size))    
    return (images+1)/2.0

epoch_samples = []

all_d_losses = []
all_g_losses = []

all_d_real = []
all_d_fake = []

num_epochs = 4  # port: 100: 192 images, not 60000
torch.manual_seed(1)
for epoch in range(1, num_epochs+1):           
    d_losses, g_losses = [], []
    d_vals_real, d_vals_fake = [], []
    for i, (x, _) in enumerate(mnist_dl):
        d_loss, d_proba_real, d_proba_fake = d_train(x)
        d_losses.append(d_loss)
        g_losses.append(g_train(x))
        
        d_vals_real.append(d_proba_real.mean().cpu())
        d_vals_fake.append(d_proba_fake.mean().cpu())
        
    all_d_losses.append(torch.tensor(d_losses).mean())
    all_g_losses.append(torch.tensor(g_losses).mean())
    all_d_real.append(torch.tensor(d_vals_real).mean())
    all_d_fake.append(torch.tensor(d_vals_fake).mean())
    print(f'Epoch {epoch:03d} | Avg Losses >>'
          f' G/D {all_g_losses[-1]:.4f}/{all_d_losses[-1]:.4f}'
          f' [D-Real: {all_d_real[-1]:.4f} D-Fake: {all_d_fake[-1]:.4f}]')
    epoch_samples.append(
        create_samples(gen_model, fixed_z).detach().cpu().numpy())
# %%
fig = plt.figure(figsize=(16, 6))

## Plotting the losses
ax = fig.add_subplot(1, 2, 1)
 
plt.plot(all_g_losses, label='Generator loss')
half_d_losses = [all_d_loss/2 for all_d_loss in all_d_losses]
plt.plot(half_d_losses, label='Discriminator loss')
plt.legend(fontsize=20)
ax.set_xlabel('Iteration', size=15)
ax.set_ylabel('Loss', size=15)

## Plotting the outputs of the discriminator
ax = fig.add_subplot(1, 2, 2)
plt.plot(all_d_real, label=r'Real: $D(\mathbf{x})$')
plt.plot(all_d_fake, label=r'Fake: $D(G(\mathbf{z}))$')
plt.legend(fontsize=20)
ax.set_xlabel('Iteration', size=15)
ax.set_ylabel('Discriminator output', size=15)

#plt.savefig('figures/ch17-gan-learning-curve.pdf')
plt.show()
# %%
# port: the samples' grid of plots (selected_epochs, 30 subplots) dropped: seconds of matplotlib on a shared CPU
# %%
def distance(X, Y, sqrt):
    nX = X.size(0)
    nY = Y.size(0)
    X = X.view(nX,-1).to(device)  # port: .cuda(): no GPU here
    X2 = (X*X).sum(1).resize_(nX,1)
    Y = Y.view(nY,-1).to(device)  # port: .cuda(): no GPU here
    Y2 = (Y*Y).sum(1).resize_(nY,1)

    M = torch.zeros(nX, nY)
    M.copy_(X2.expand(nX,nY) + Y2.expand(nY,nX).transpose(0,1) - 2*torch.mm(X,Y.transpose(0,1)))

    del X, X2, Y, Y2
    
    if sqrt:
        M = ((M+M.abs())/2).sqrt()
    
    return M
# %%
def mmd(Mxx, Mxy, Myy, sigma) :
    scale = Mxx.mean()
    Mxx = torch.exp(-Mxx/(scale*2*sigma*sigma))
    Mxy = torch.exp(-Mxy/(scale*2*sigma*sigma))
    Myy = torch.exp(-Myy/(scale*2*sigma*sigma))
    a = Mxx.mean()+Myy.mean()-2*Mxy.mean()
    mmd = math.sqrt(max(a, 0))

    return mmd
# %%
def compute_score(fake, real , k=1, sigma=1, sqrt=True):

    Mxx = distance(real, real, False)
    Mxy = distance(real, fake, False)
    Myy = distance(fake, fake, False)

 
    print(mmd(Mxx, Mxy, Myy, sigma))
# %%
whole_dl = DataLoader(mnist_dataset, batch_size=192,  # port: 10000: 192 images
                      shuffle=True, drop_last=True) 

real_image = next(iter(whole_dl))[0]
# %%
compute_score(torch.from_numpy(epoch_samples[-1]), real_image)
"""

# ch17/ch17_part2.py's code cells (the DCGAN, then the WGAN)
CH17_PART2 = r"""
import sys
from python_environment_check import check_packages
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt
import torchvision 
from torchvision import transforms 
from torch.utils.data import DataLoader
from torch.autograd import grad as torch_grad

sys.path.insert(0, '..')

d = {
    'torch': '1.8.0',
    'torchvision': '0.9.0',
    'numpy': '1.21.2',
    'matplotlib': '3.4.3',
}

check_packages(d)

print(torch.__version__)
print("GPU Available:", torch.cuda.is_available())

if torch.cuda.is_available():
    device = torch.device("cuda:0")
else:
    device = "cpu"

image_path = './'
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Normalize(mean=(0.5), std=(0.5))
])
mnist_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=True, 
                                           transform=transform, 
                                           download=False)

batch_size = 64

torch.manual_seed(1)
np.random.seed(1)

## Set up the dataset
mnist_dl = DataLoader(mnist_dataset, batch_size=batch_size, 
                      shuffle=True, drop_last=True)

def make_generator_network(input_size, n_filters):
    model = nn.Sequential(
        nn.ConvTranspose2d(input_size, n_filters*4, 4, 1, 0, 
                           bias=False),
        nn.BatchNorm2d(n_filters*4),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters*4, n_filters*2, 3, 2, 1, bias=False),
        nn.BatchNorm2d(n_filters*2),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters*2, n_filters, 4, 2, 1, bias=False),
        nn.BatchNorm2d(n_filters),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters, 1, 4, 2, 1, bias=False),
        nn.Tanh())
    return model

class Discriminator(nn.Module):
    def __init__(self, n_filters):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(1, n_filters, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters, n_filters*2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(n_filters * 2),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters*2, n_filters*4, 3, 2, 1, bias=False),
            nn.BatchNorm2d(n_filters*4),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters*4, 1, 4, 1, 0, bias=False),
            nn.Sigmoid())
        
    def forward(self, input):
        output = self.network(input)
        return output.view(-1, 1).squeeze(0)

z_size = 100
image_size = (28, 28)
n_filters = 8  # port: 32: a shared CPU
gen_model = make_generator_network(z_size, n_filters).to(device)  
print(gen_model)
disc_model = Discriminator(n_filters).to(device)     
print(disc_model)

## Loss function and optimizers:
loss_fn = nn.BCELoss()
g_optimizer = torch.optim.Adam(gen_model.parameters(), 0.0003)
d_optimizer = torch.optim.Adam(disc_model.parameters(), 0.0002)

def create_noise(batch_size, z_size, mode_z):
    if mode_z == 'uniform':
        input_z = torch.rand(batch_size, z_size, 1, 1)*2 - 1 
    elif mode_z == 'normal':
        input_z = torch.randn(batch_size, z_size, 1, 1)
    return input_z

## Train the discriminator
def d_train(x):
    disc_model.zero_grad()

    # Train discriminator with a real batch
    batch_size = x.size(0)
    x = x.to(device)
    d_labels_real = torch.ones(batch_size, 1, device=device)

    d_proba_real = disc_model(x)
    d_loss_real = loss_fn(d_proba_real, d_labels_real)

    # Train discriminator on a fake batch
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_output = gen_model(input_z)
    
    d_proba_fake = disc_model(g_output)
    d_labels_fake = torch.zeros(batch_size, 1, device=device)
    d_loss_fake = loss_fn(d_proba_fake, d_labels_fake)

    # gradient backprop & optimize ONLY D's parameters
    d_loss = d_loss_real + d_loss_fake
    d_loss.backward()
    d_optimizer.step()
  
    return d_loss.data.item(), d_proba_real.detach(), d_proba_fake.detach()

## Train the generator
def g_train(x):
    gen_model.zero_grad()
    
    batch_size = x.size(0)
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_labels_real = torch.ones((batch_size, 1), device=device)

    g_output = gen_model(input_z)
    d_proba_fake = disc_model(g_output)
    g_loss = loss_fn(d_proba_fake, g_labels_real)

    # gradient backprop & optimize ONLY G's parameters
    g_loss.backward()
    g_optimizer.step()
        
    return g_loss.data.item()

mode_z = 'uniform'
fixed_z = create_noise(batch_size, z_size, mode_z).to(device)

def create_samples(g_model, input_z):
    g_output = g_model(input_z)
    images = torch.reshape(g_output, (batch_size, *image_size))    
    return (images+1)/2.0

epoch_samples = []

num_epochs = 3  # port: 100: 64 images, not 60000
torch.manual_seed(1)

for epoch in range(1, num_epochs+1):    
    gen_model.train()
    d_losses, g_losses = [], []
    for i, (x, _) in enumerate(mnist_dl):
        d_loss, d_proba_real, d_proba_fake = d_train(x)
        d_losses.append(d_loss)
        g_losses.append(g_train(x))
 
    print(f'Epoch {epoch:03d} | Avg Losses >>'
          f' G/D {torch.FloatTensor(g_losses).mean():.4f}'
          f'/{torch.FloatTensor(d_losses).mean():.4f}')
    gen_model.eval()
    epoch_samples.append(
        create_samples(gen_model, fixed_z).detach().cpu().numpy())

# port: the samples' grid of plots (selected_epochs, 30 subplots) dropped: seconds of matplotlib on a shared CPU

def make_generator_network_wgan(input_size, n_filters):
    model = nn.Sequential(
        nn.ConvTranspose2d(input_size, n_filters*4, 4, 1, 0, 
                           bias=False),
        nn.InstanceNorm2d(n_filters*4),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters*4, n_filters*2, 3, 2, 1, bias=False),
        nn.InstanceNorm2d(n_filters*2),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters*2, n_filters, 4, 2, 1, bias=False),
        nn.InstanceNorm2d(n_filters),
        nn.LeakyReLU(0.2),

        nn.ConvTranspose2d(n_filters, 1, 4, 2, 1, bias=False),
        nn.Tanh())
    return model

class DiscriminatorWGAN(nn.Module):
    def __init__(self, n_filters):
        super().__init__()
        self.network = nn.Sequential(
            nn.Conv2d(1, n_filters, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters, n_filters*2, 4, 2, 1, bias=False),
            nn.InstanceNorm2d(n_filters * 2),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters*2, n_filters*4, 3, 2, 1, bias=False),
            nn.InstanceNorm2d(n_filters*4),
            nn.LeakyReLU(0.2),

            nn.Conv2d(n_filters*4, 1, 4, 1, 0, bias=False),
            nn.Sigmoid())
        
    def forward(self, input):
        output = self.network(input)
        return output.view(-1, 1).squeeze(0)

gen_model = make_generator_network_wgan(z_size, n_filters).to(device)  
disc_model = DiscriminatorWGAN(n_filters).to(device)  

g_optimizer = torch.optim.Adam(gen_model.parameters(), 0.0002)
d_optimizer = torch.optim.Adam(disc_model.parameters(), 0.0002)

def gradient_penalty(real_data, generated_data):
    batch_size = real_data.size(0)

    # Calculate interpolation
    alpha = torch.rand(real_data.shape[0], 1, 1, 1, requires_grad=True, device=device)
    interpolated = alpha * real_data + (1 - alpha) * generated_data
    
    # Calculate probability of interpolated examples
    proba_interpolated = disc_model(interpolated)

    # Calculate gradients of probabilities with respect to examples
    gradients = torch_grad(outputs=proba_interpolated, inputs=interpolated,
                           grad_outputs=torch.ones(proba_interpolated.size(), device=device),
                           create_graph=True, retain_graph=True)[0]

    gradients = gradients.view(batch_size, -1)
    gradients_norm = gradients.norm(2, dim=1)
    return lambda_gp * ((gradients_norm - 1)**2).mean()

## Train the discriminator
def d_train_wgan(x):
    disc_model.zero_grad()

    batch_size = x.size(0)
    x = x.to(device)

    # Calculate probabilities on real and generated data
    d_real = disc_model(x)
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_output = gen_model(input_z)
    d_generated = disc_model(g_output)
    d_loss = d_generated.mean() - d_real.mean()  # port: + gradient_penalty(x.data, g_output.data): its create_graph=True (double backward) is not supported (documented); the test calls it
    d_loss.backward()
    d_optimizer.step()
  
    return d_loss.data.item()

## Train the generator
def g_train_wgan(x):
    gen_model.zero_grad()
    
    batch_size = x.size(0)
    input_z = create_noise(batch_size, z_size, mode_z).to(device)
    g_output = gen_model(input_z)
    
    d_generated = disc_model(g_output)
    g_loss = -d_generated.mean()

    # gradient backprop & optimize ONLY G's parameters
    g_loss.backward()
    g_optimizer.step()
        
    return g_loss.data.item()

epoch_samples_wgan = []
lambda_gp = 10.0
num_epochs = 2  # port: 100: 64 images, not 60000
torch.manual_seed(1)
critic_iterations = 5 

for epoch in range(1, num_epochs+1):    
    gen_model.train()
    d_losses, g_losses = [], []
    for i, (x, _) in enumerate(mnist_dl):
        for _ in range(critic_iterations):
            d_loss = d_train_wgan(x)
        d_losses.append(d_loss)
        g_losses.append(g_train_wgan(x))
 
    print(f'Epoch {epoch:03d} | D Loss >>'
          f' {torch.FloatTensor(d_losses).mean():.4f}')
    gen_model.eval()
    epoch_samples_wgan.append(
        create_samples(gen_model, fixed_z).detach().cpu().numpy())

# port: the samples' grid of plots (selected_epochs, 30 subplots) dropped: seconds of matplotlib on a shared CPU

"""

# ch18/ch18_part1.py's code cells (a graph network from scratch)
CH18_PART1 = r"""
import sys
from python_environment_check import check_packages
import networkx as nx
import numpy as np
import torch
from torch.nn.parameter import Parameter
import torch.nn.functional as F
from torch.utils.data import Dataset
from torch.utils.data import DataLoader

sys.path.insert(0, '..')

d = {
    'torch': '1.8.0',
    'networkx': '2.6.2',
    'numpy': '1.21.2',
}

check_packages(d)

G = nx.Graph()

#Hex codes for colors if we draw graph
blue, orange, green = "#1f77b4", "#ff7f0e","#2ca02c"

G.add_nodes_from([(1, {"color": blue}),
                  (2, {"color": orange}),
                  (3, {"color": blue}),
                  (4, {"color": green})])

G.add_edges_from([(1, 2),(2, 3),(1, 3),(3, 4)])
A = np.asarray(nx.adjacency_matrix(G).todense())
print(A)

def build_graph_color_label_representation(G,mapping_dict):
    one_hot_idxs = np.array([mapping_dict[v] for v in 
                             nx.get_node_attributes(G, 'color').values()])
    one_hot_encoding = np.zeros((one_hot_idxs.size,len(mapping_dict)))
    one_hot_encoding[np.arange(one_hot_idxs.size),one_hot_idxs] = 1
    return one_hot_encoding

X = build_graph_color_label_representation(G, {green: 0, blue: 1, orange: 2})
print(X)

color_map = nx.get_node_attributes(G, 'color').values()
nx.draw(G, with_labels=True, node_color=color_map)

f_in, f_out = X.shape[1], 6
W_1 = np.random.rand(f_in, f_out) 
W_2 = np.random.rand(f_in, f_out) 
h = np.dot(X,W_1) + np.dot(np.dot(A, X), W_2)

class NodeNetwork(torch.nn.Module):

    def __init__(self, input_features):
        super().__init__()
        
        self.conv_1 = BasicGraphConvolutionLayer(input_features, 32)
        self.conv_2 = BasicGraphConvolutionLayer(32, 32)
        self.fc_1 = torch.nn.Linear(32, 16)
        self.out_layer = torch.nn.Linear(16, 2)
    
    def forward(self, X, A,batch_mat):
        x = self.conv_1(X, A).clamp(0)
        x = self.conv_2(x, A).clamp(0)
        output = global_sum_pool(x, batch_mat)
        output = self.fc_1(output)
        output = self.out_layer(output)
        return F.softmax(output, dim=1)

class BasicGraphConvolutionLayer(torch.nn.Module):

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        
        self.W2 = Parameter(torch.rand(
             (in_channels, out_channels), dtype=torch.float32))
        self.W1 = Parameter(torch.rand(
             (in_channels, out_channels), dtype=torch.float32))
         
        self.bias = Parameter(torch.zeros(
                 out_channels, dtype=torch.float32))
    
    def forward(self, X, A):
        potential_msgs = torch.mm(X, self.W2)
        propagated_msgs = torch.mm(A, potential_msgs)
        root_update = torch.mm(X, self.W1)
        output = propagated_msgs + root_update + self.bias
        return output

def global_sum_pool(X, batch_mat):
    if batch_mat is None or batch_mat.dim() == 1:
        return torch.sum(X, dim=0).unsqueeze(0)
    else:
        return torch.mm(batch_mat, X)

def get_batch_tensor(graph_sizes):
    starts = [sum(graph_sizes[:idx]) for idx in range(len(graph_sizes))]
    stops = [starts[idx]+graph_sizes[idx] for idx in range(len(graph_sizes))]
    tot_len = sum(graph_sizes)
    batch_size = len(graph_sizes)
    batch_mat = torch.zeros([batch_size, tot_len]).float()
    for idx, starts_and_stops in enumerate(zip(starts, stops)):
        start = starts_and_stops[0]
        stop = starts_and_stops[1]
        batch_mat[idx, start:stop] = 1
    return batch_mat

def collate_graphs(batch):
    adj_mats = [graph['A'] for graph in batch]
    sizes = [A.size(0) for A in adj_mats]
    tot_size = sum(sizes)
    # create batch matrix
    batch_mat = get_batch_tensor(sizes)
    # combine feature matrices
    feat_mats = torch.cat([graph['X'] for graph in batch],dim=0)
    # combine labels
    labels = torch.cat([graph['y'] for graph in batch], dim=0)
    # combine adjacency matrices
    batch_adj = torch.zeros([tot_size, tot_size], dtype=torch.float32)
    accum = 0
    for adj in adj_mats:
        g_size = adj.shape[0]
        batch_adj[accum:accum+g_size, accum:accum+g_size] = adj
        accum = accum + g_size
    repr_and_label = {
            'A': batch_adj, 
            'X': feat_mats,
            'y': labels,
            'batch' : batch_mat}

    return repr_and_label

def get_graph_dict(G, mapping_dict):
    # build dictionary representation of graph G
    A = torch.from_numpy(np.asarray(nx.adjacency_matrix(G).todense())).float()
    # build_graph_color_label_representation() was introduced with the first example graph
    X = torch.from_numpy(build_graph_color_label_representation(G,mapping_dict)).float()
    # kludge since there is not specific task for this example
    y = torch.tensor([[1, 0]]).float()
    return {'A': A, 'X': X, 'y': y, 'batch': None}
    

blue, orange, green = "#1f77b4", "#ff7f0e","#2ca02c"
mapping_dict = {green: 0, blue: 1, orange: 2}

G1 = nx.Graph()
G1.add_nodes_from([(1, {"color": blue}),
                   (2, {"color": orange}),
                   (3, {"color": blue}),
                   (4, {"color": green})])
G1.add_edges_from([(1, 2), (2, 3),(1, 3), (3, 4)])
G2 = nx.Graph()
G2.add_nodes_from([(1, {"color": green}),
                   (2, {"color": green}),
                   (3, {"color": orange}),
                   (4, {"color": orange}),
                   (5,{"color": blue})])
G2.add_edges_from([(2, 3),(3, 4),(3, 1),(5, 1)])
G3 = nx.Graph()
G3.add_nodes_from([(1, {"color": orange}),
                   (2, {"color": orange}),
                   (3, {"color": green}),
                   (4, {"color": green}),
                   (5, {"color": blue}),
                   (6, {"color":orange})])
G3.add_edges_from([(2, 3), (3, 4), (3, 1), (5, 1), (2, 5), (6, 1)])
G4 = nx.Graph()
G4.add_nodes_from([(1, {"color": blue}), (2, {"color": blue}), (3, {"color": green})])
G4.add_edges_from([(1, 2), (2, 3)])
graph_list = [get_graph_dict(graph,mapping_dict) for graph in [G1, G2, G3, G4]]

class ExampleDataset(Dataset):
    
    # Simple PyTorch dataset that will use our list of graphs
    def __init__(self, graph_list):
        self.graphs = graph_list
        
    def __len__(self):
        return len(self.graphs)
    
    def __getitem__(self,idx):
        mol_rep = self.graphs[idx]
        return mol_rep

dset = ExampleDataset(graph_list)
loader = DataLoader(dset, batch_size=2, shuffle=False, collate_fn=collate_graphs)

torch.manual_seed(123)
node_features = 3
net = NodeNetwork(node_features)

batch_results = []

for b in loader:
    batch_results.append(net(b['X'], b['A'], b['batch']).detach())

G1_rep = dset[1]
G1_single = net(G1_rep['X'], G1_rep['A'], G1_rep['batch']).detach()

G1_batch = batch_results[0][1]
# %%
torch.all(torch.isclose(G1_single, G1_batch))
"""

# ch19/cartpole/main.py
CH19_CARTPOLE = r"""
# coding: utf-8

# Python Machine Learning, PyTorch Edition by Sebastian Raschka (https://sebastianraschka.com), Yuxi (Hayden) Liu
# (https://www.mlexample.com/) & Vahid Mirjalili (http://vahidmirjalili.com), Packt Publishing Ltd. 2021
#
# Code Repository: https://github.com
#
# Code License: MIT License (https://github.com/ /LICENSE.txt)

#################################################################################
# Chapter 19 - Reinforcement Learning for Decision Making in Complex Environments
#################################################################################

# Script: carpole/main.py

import gym
import numpy as np
import torch
import torch.nn as nn
import random
import matplotlib.pyplot as plt
from collections import namedtuple
from collections import deque

np.random.seed(1)
torch.manual_seed(1)

Transition = namedtuple(
    'Transition', ('state', 'action', 'reward',
                   'next_state', 'done'))


class DQNAgent:
    def __init__(
            self, env, discount_factor=0.95,
            epsilon_greedy=1.0, epsilon_min=0.01,
            epsilon_decay=0.995, learning_rate=1e-3,
            max_memory_size=2000):
        self.env = env
        self.state_size = env.observation_space.shape[0]
        self.action_size = env.action_space.n

        self.memory = deque(maxlen=max_memory_size)

        self.gamma = discount_factor
        self.epsilon = epsilon_greedy
        self.epsilon_min = epsilon_min
        self.epsilon_decay = epsilon_decay
        self.lr = learning_rate
        self._build_nn_model()

    def _build_nn_model(self):
        self.model = nn.Sequential(nn.Linear(self.state_size, 256),
                                   nn.ReLU(),
                                   nn.Linear(256, 128),
                                   nn.ReLU(),
                                   nn.Linear(128, 64),
                                   nn.ReLU(),
                                   nn.Linear(64, self.action_size))

        self.loss_fn = nn.MSELoss()
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), self.lr)

    def remember(self, transition):
        self.memory.append(transition)

    def choose_action(self, state):
        if np.random.rand() <= self.epsilon:
            return np.random.choice(self.action_size)
        with torch.no_grad():
            q_values = self.model(torch.tensor(state, dtype=torch.float32))[0]
        return torch.argmax(q_values).item()  # returns action

    def _learn(self, batch_samples):
        batch_states, batch_targets = [], []
        for transition in batch_samples:
            s, a, r, next_s, done = transition

            with torch.no_grad():
                if done:
                    target = r
                else:
                    pred = self.model(torch.tensor(next_s, dtype=torch.float32))[0]
                    target = r + self.gamma * pred.max()

                target_all = self.model(torch.tensor(s, dtype=torch.float32))[0]
                target_all[a] = target

            batch_states.append(s.flatten())
            batch_targets.append(target_all)
            self._adjust_epsilon()

        self.optimizer.zero_grad()
        pred = self.model(torch.tensor(batch_states, dtype=torch.float32))

        loss = self.loss_fn(pred, torch.stack(batch_targets))
        loss.backward()
        self.optimizer.step()

        return loss.item()

    def _adjust_epsilon(self):
        if self.epsilon > self.epsilon_min:
            self.epsilon *= self.epsilon_decay

    def replay(self, batch_size):
        samples = random.sample(self.memory, batch_size)
        return self._learn(samples)


def plot_learning_history(history):
    fig = plt.figure(1, figsize=(14, 5))
    ax = fig.add_subplot(1, 1, 1)
    episodes = np.arange(len(history)) + 1
    plt.plot(episodes, history, lw=4,
             marker='o', markersize=10)
    ax.tick_params(axis='both', which='major', labelsize=15)
    plt.xlabel('Episodes', size=20)
    plt.ylabel('Total rewards', size=20)
    plt.show()


# General settings
EPISODES = 3  # port: 200: a shared CPU
batch_size = 32
init_replay_memory_size = 100  # port: 500

if __name__ == '__main__':
    env = gym.make('CartPole-v1')
    agent = DQNAgent(env)
    state = env.reset()
    state = np.reshape(state, [1, agent.state_size])

    # Filling up the replay-memory
    for i in range(init_replay_memory_size):
        action = agent.choose_action(state)
        next_state, reward, done, _ = env.step(action)
        next_state = np.reshape(next_state, [1, agent.state_size])
        agent.remember(Transition(state, action, reward,
                                  next_state, done))
        if done:
            state = env.reset()
            state = np.reshape(state, [1, agent.state_size])
        else:
            state = next_state

    total_rewards, losses = [], []
    for e in range(EPISODES):
        state = env.reset()
        if e % 10 == 0:
            env.render()
        state = np.reshape(state, [1, agent.state_size])
        for i in range(40):  # port: 500: a shared CPU
            action = agent.choose_action(state)
            next_state, reward, done, _ = env.step(action)
            next_state = np.reshape(next_state, [1, agent.state_size])
            agent.remember(Transition(state, action, reward,
                                      next_state, done))
            state = next_state
            if e % 10 == 0:
                env.render()
            if done:
                total_rewards.append(i)
                print(f'Episode: {e}/{EPISODES}, Total reward: {i}')
                break
            loss = agent.replay(batch_size)
            losses.append(loss)
    plot_learning_history(total_rewards)
"""

# the transform the GANs' MNIST is read through, besides tests/test_yunjey_basics.py's
NORMALIZE = r"""
class Normalize:
    # (image - mean) / std of a tensor image (C, H, W), per channel
    def __init__(self, mean, std):
        self.mean, self.std = np.reshape(mean, (-1, 1, 1)), np.reshape(std, (-1, 1, 1))

    def __call__(self, image):
        return (image - torch.tensor(self.mean, dtype=image.dtype)) / torch.tensor(self.std, dtype=image.dtype)
"""

# gym's CartPole-v1 (gym is not installed): its physics, spaces and old four-value step
GYM = r"""
import math
import types
import numpy as np


class CartPoleEnv:
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold_radians, x_threshold = 12 * 2 * math.pi / 360, 2.4

    def __init__(self):
        self.observation_space = types.SimpleNamespace(shape=(4,))
        self.action_space = types.SimpleNamespace(n=2)
        self.np_random = np.random.default_rng(0)
        self.state = None

    def reset(self):
        self.state = self.np_random.uniform(low=-0.05, high=0.05, size=(4,))
        return np.array(self.state, dtype=np.float32)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + polemass_length * theta_dot ** 2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = (x, x_dot, theta, theta_dot)
        done = bool(abs(x) > self.x_threshold or abs(theta) > self.theta_threshold_radians)
        return np.array(self.state, dtype=np.float32), 1.0, done, {}

    def render(self):
        pass


def make(name):
    assert name == 'CartPole-v1', name
    return CartPoleEnv()
"""


def digits(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic 28x28 digits, uint8 as MNIST's, and their labels: each class a bar at
    its own row and a bar at its own column, shifted by a pixel or two, with noise."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 10
    images = np.zeros((n, 28, 28))
    for image, label in zip(images, labels):
        dy, dx = rng.integers(-2, 3, size=2)
        image[5 + 2 * label + dy, 4:24] = 1.0
        image[4:24, 5 + 2 * label + dx] = 1.0
    images = np.clip(images + rng.uniform(0, 0.2, images.shape), 0, 1)
    return (images * 255).round().astype(np.uint8), labels


def stand_ins(lib, monkeypatch, n_train: int) -> None:
    """``python_environment_check``, ``<lib>vision`` (``datasets.MNIST`` of ``n_train``
    digits, ``transforms``) and ``gym``, in ``sys.modules``."""
    check = types.ModuleType("python_environment_check")
    check.check_packages = lambda d: None  # the versions are the test's
    name = lib.__name__ + "vision"
    base = types.ModuleType(f"{name}._base")
    base.IMAGES, base.LABEL = {("mnist", True): digits(n_train)}, int
    exec((VISION + NORMALIZE).replace("torch", lib.__name__), base.__dict__)
    datasets, transforms = types.ModuleType(f"{name}.datasets"), types.ModuleType(f"{name}.transforms")  # fmt: skip
    datasets.MNIST = base.MNIST
    transforms.ToTensor, transforms.Normalize, transforms.Compose = base.ToTensor, base.Normalize, base.Compose  # fmt: skip
    vision = types.ModuleType(name)
    vision.datasets, vision.transforms = datasets, transforms
    gym = types.ModuleType("gym")
    exec(GYM, gym.__dict__)
    for module in check, vision, datasets, transforms, base, gym:
        monkeypatch.setitem(sys.modules, module.__name__, module)


def run(text: str, lib, folder, monkeypatch, n_train: int) -> tuple[str, dict]:
    """The notebook in ``lib``'s words, seeded (``lib``, numpy's and Python's generators), run
    as ``__main__`` in ``folder`` with the stand-ins: what it printed and its globals."""
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the notebooks insert ".."
    stand_ins(lib, monkeypatch, n_train)
    lib.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_cells(text.replace("torch", lib.__name__), space)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")  # cartpole's figure 1, made again by the other library
    return out.getvalue(), space


def both(text: str, tmp_path, monkeypatch, n_train: int = 128):
    """``run`` under torch, then under tricycle, both on the CPU on one thread (the
    notebooks ask for CUDA when there is one: none is answered), matplotlib off screen."""
    with torch_and_tricycle(monkeypatch, agg=True) as (torch, tricycle):
        theirs = run(text, torch, tmp_path / "torch", monkeypatch, n_train)
        ours = run(text, tricycle, tmp_path / "tricycle", monkeypatch, n_train)
    return theirs, ours


MODEL = re.compile(r"^\w+\(\n.*?^\)[^\n]*\n", flags=re.MULTILINE | re.DOTALL)


def layers(printed: str) -> list[list[str]]:
    """Each printed model's layers by class, in order (their reprs differ: tricycle's Linear
    is its Dense, its lines count the parameters)."""
    return [[n.replace("Dense", "Linear") for n in re.findall(r"\): (\w+)\(", m)] for m in MODEL.findall(printed)]  # fmt: skip


def normal(printed: str) -> list[str]:
    """``kinds`` of what was printed, the printed models (``layers``) and the version line
    (each library's) aside."""
    return kinds(MODEL.sub("", printed).split("\n", 1)[1])


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(host(ours).astype(float), host(theirs).astype(float), rtol=rtol, atol=atol)  # fmt: skip


# the notebook's random tensors, given the values torch drew
ATTENTION_INPUTS = ("embedded_sentence", "U_query", "U_key", "U_value", "multihead_U_query", "multihead_U_key", "multihead_U_value")  # fmt: skip
ATTENTION_OUTPUTS = ("omega", "omega_mat", "attention_weights", "context_vec_2", "context_vectors", "query_2", "keys", "values", "omega_23", "omega_2", "attention_weights_2", "multihead_query_2", "multihead_key_2", "multihead_value_2", "stacked_inputs", "multihead_keys", "multihead_values")  # fmt: skip


def attention_given(lib, given: dict) -> dict:
    """CH16_PART1's cells in ``lib``'s words, each random tensor replaced, once its cell has
    drawn it, by a leaf of ``given``'s values that requires grad: the notebook's globals."""
    space = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in CH16_PART1.replace("torch", lib.__name__).split("\n# %%\n"):
            exec(compile(cell, "notebook.py", "exec"), space)
            for name, value in given.items():
                if re.search(rf"^{name} = ", cell, flags=re.MULTILINE):
                    space[name] = lib.tensor(value, requires_grad=True)
    return space


def test_ch16_self_attention(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH16_PART1, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:  # the notebook's own checks: the loops are the products
        assert printed.count("True\n") == 4 and "False" not in printed
    # given torch's random tensors: torch's values of every step, and the gradients of the
    # inputs through all of them
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    given = {name: host(their[name]) for name in ATTENTION_INPUTS}
    spaces = [attention_given(lib, given) for lib in (torch, tricycle)]
    rng = np.random.default_rng(0)
    for s in spaces:
        s["loss"] = 0
    for name in ATTENTION_OUTPUTS:
        weights = rng.normal(size=tuple(spaces[0][name].shape)).astype(np.float32)
        same(spaces[1][name], spaces[0][name].detach(), rtol=1e-4, atol=1e-5)
        for lib, s in zip((torch, tricycle), spaces):
            s["loss"] = s["loss"] + (s[name] * lib.tensor(weights)).sum()
    for s in spaces:
        s["loss"].backward()
    same(spaces[1]["loss"], spaces[0]["loss"].detach(), rtol=1e-4)
    for name in ATTENTION_INPUTS:
        same(spaces[1][name].grad, spaces[0][name].grad, rtol=1e-4, atol=1e-4)
    # the heads' Linear with torch's weights
    z = host(their["multihead_z_2"])
    same_numbers(their["linear"], our["linear"], lambda lib, m: (m(lib.tensor(z).flatten()).sum() * 2, m(lib.tensor(z).flatten())))  # fmt: skip


def same_numbers(their_model, our_model, step, rtol=1e-4, atol=1e-5) -> None:
    """tests/test_rasbt_dl_generative.py's: given torch's weights, ``step(lib, model)``'s loss
    and outputs and the parameters' gradients are torch's."""
    from tests.test_rasbt_dl_generative import same_numbers as check  # noqa: PLC0415

    check(their_model, our_model, step, rtol=rtol, atol=atol)


GAN_EPOCH = r"Epoch (\d+) \| Avg Losses >> G/D ([\d.]+)/([\d.]+)"


def test_ch17_gan(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH17_PART1, tmp_path, monkeypatch, n_train=192)
    assert normal(ours) == normal(theirs)
    assert layers(ours) == layers(theirs) == [["Linear", "LeakyReLU", "Linear", "Tanh"], ["Linear", "LeakyReLU", "Dropout", "Linear", "Sigmoid"]]  # fmt: skip
    for printed, s in (theirs, their), (ours, our):
        epochs = re.findall(GAN_EPOCH + r" \[D-Real: ([\d.]+)", printed)
        assert len(epochs) == 4 and len(s["epoch_samples"]) == 4
        g_losses, d_real = [float(e[1]) for e in epochs], [float(e[3]) for e in epochs]
        # the discriminator learns the real digits, and the generator to fool it
        assert d_real[-1] > d_real[0] and g_losses[-1] < g_losses[0], epochs
        assert s["epoch_samples"][-1].shape == (64, 28, 28)
        assert 0 < float(printed.strip().splitlines()[-1]) < 10  # the MMD score
    # given torch's weights: the generator's images and the discriminator's (Dropout off)
    # probabilities of the digits, and their gradients
    z = np.random.default_rng(1).uniform(-1, 1, size=(8, 20)).astype(np.float32)
    x = digits(8)[0].reshape(8, 784).astype(np.float32) / 127.5 - 1
    w = np.linspace(-1, 1, 784, dtype=np.float32)
    same_numbers(their["gen_model"], our["gen_model"], lambda lib, m: ((m(lib.tensor(z)) * lib.tensor(w)).sum(), m(lib.tensor(z))))  # fmt: skip
    for s in their, our:
        s["disc_model"].eval()
    same_numbers(their["disc_model"], our["disc_model"], lambda lib, m: (lib.nn.BCELoss()(m(lib.tensor(x)), lib.ones(8, 1)), m(lib.tensor(x))))  # fmt: skip
    # compute_score's squared distances (resize_, expand, copy_) and MMD of the same images:
    # torch's
    fake, real = their["epoch_samples"][-1][:16], digits(24)[0].astype(np.float32) / 255
    scores = []
    for s in their, our:
        lib = s["torch" if s is their else "tricycle"]
        matrices = [s["distance"](lib.tensor(a), lib.tensor(b), False) for a, b in ((real, real), (real, fake), (fake, fake))]  # fmt: skip
        scores.append([*matrices, s["mmd"](*matrices, sigma=1)])
    for ours_, theirs_ in zip(scores[1][:3], scores[0][:3], strict=True):
        same(ours_, theirs_, rtol=1e-4, atol=1e-3)
    assert scores[1][3] == pytest.approx(scores[0][3], rel=1e-4)


def test_ch17_dcgan_and_wgan(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH17_PART2, tmp_path, monkeypatch, n_train=64)
    assert normal(ours) == normal(theirs)
    assert layers(ours) == layers(theirs)
    assert [len(m) for m in layers(theirs)] == [11, 11]  # the discriminator: its Sequential and 10
    for printed, s in (theirs, their), (ours, our):  # each discriminator's loss falls
        d_losses = [float(e[2]) for e in re.findall(GAN_EPOCH, printed)]
        assert len(d_losses) == 3 and d_losses[-1] < d_losses[0], d_losses
        critic = numbers(r"D Loss >> (-?[\d.]+)", printed)
        assert len(critic) == 2 and critic[-1] < critic[0], critic
        assert [e.shape for e in s["epoch_samples_wgan"]] == [(64, 28, 28)] * 2
    # given torch's weights (the WGAN's, last made): the generator's images, the critic's
    # probabilities (InstanceNorm2d: the same in either mode), and their gradients
    z = np.random.default_rng(1).uniform(-1, 1, size=(4, 100, 1, 1)).astype(np.float32)
    x = digits(4)[0][:, None].astype(np.float32) / 127.5 - 1
    same_numbers(their["gen_model"], our["gen_model"], lambda lib, m: ((m(lib.tensor(z)) * lib.tensor(x)).sum(), m(lib.tensor(z))))  # fmt: skip
    same_numbers(their["disc_model"], our["disc_model"], lambda lib, m: (m(lib.tensor(x)).mean(), m(lib.tensor(x))))  # fmt: skip
    # the DCGAN's networks (BatchNorm2d in training mode)
    for s in their, our:
        s["torch" if s is their else "tricycle"].manual_seed(0)
        s["dcgan"] = s["make_generator_network"](100, 8), s["Discriminator"](8)
    for their_model, our_model in zip(their["dcgan"], our["dcgan"], strict=True):
        inputs = z if their_model is their["dcgan"][0] else x
        same_numbers(their_model, our_model, lambda lib, m, inputs=inputs: ((m(lib.tensor(inputs)) ** 2).mean(), m(lib.tensor(inputs))))  # fmt: skip
    # the gradient penalty: torch's needs create_graph=True, which tricycle refuses, clearly
    penalty = their["gradient_penalty"](their["torch"].tensor(x), their["torch"].tensor(x[::-1].copy()))  # fmt: skip
    penalty.backward()  # through the critic's gradients: to its weights
    assert penalty.item() >= 0 and all(p.grad is not None for p in their["disc_model"].parameters())  # fmt: skip
    tricycle = our["tricycle"]
    with pytest.raises(NotImplementedError, match=r"create_graph=True .* is not supported"):
        our["gradient_penalty"](tricycle.tensor(x), tricycle.tensor(x[::-1].copy()))


def test_ch18_graph_network(tmp_path, monkeypatch):
    pytest.importorskip("networkx")
    pytest.importorskip("scipy")  # networkx's adjacency_matrix
    (theirs, their), (ours, our) = both(CH18_PART1, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    assert theirs.strip().endswith("tensor(True)") and ours.strip().endswith("Tensor(True)")
    np.testing.assert_array_equal(our["h"], their["h"])

    # given torch's weights: each batch's outputs, the single graph's, and the gradients
    def step(lib, m):
        s = their if lib.__name__ == "torch" else our
        outputs = [m(b["X"], b["A"], b["batch"]) for b in s["loader"]]
        single = m(s["G1_rep"]["X"], s["G1_rep"]["A"], s["G1_rep"]["batch"])
        loss = sum((o * lib.tensor([[1.0, -2.0]])).sum() for o in outputs) + single[0, 0]
        return loss, *outputs, single

    same_numbers(their["net"], our["net"], step)


def test_ch19_cartpole_dqn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH19_CARTPOLE, tmp_path, monkeypatch)
    for printed, s in (theirs, their), (ours, our):
        assert re.fullmatch(r"(Episode: \d/3, Total reward: \d+\n)*", printed), printed
        assert len(s["losses"]) > 20 and np.isfinite(s["losses"]).all()
        assert len(s["agent"].memory) == 100 + len(s["losses"]) + len(s["total_rewards"])
    # given torch's weights, learning steps on the same transitions: torch's losses, and
    # torch's Q-values after Adam's steps. On the episodes' last transitions (their targets
    # the rewards, fixed) the network learns: the loss falls
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    batch = [t for t in their["agent"].memory if t.done]
    assert len(batch) >= 3
    agents = their["agent"], our["agent"]
    assert tricycle.nn.from_torch(agents[1].model, agents[0].model.state_dict()) == ([], [])
    for agent, lib in zip(agents, (torch, tricycle)):
        agent.optimizer = lib.optim.Adam(agent.model.parameters(), agent.lr)
    losses = [[a._learn(batch) for _ in range(10)] for a in agents]
    np.testing.assert_allclose(losses[1][0], losses[0][0], rtol=1e-4)
    np.testing.assert_allclose(losses[1], losses[0], rtol=2e-2)
    for found in losses:
        assert found[-1] < 0.5 * found[0], found
    q = [a.model(lib.tensor(np.stack([t.state[0] for t in batch]))) for a, lib in zip(agents, (torch, tricycle))]  # fmt: skip
    same(q[1], q[0].detach(), rtol=2e-2, atol=1e-3)


def test_resize_in_place_as_torchs():
    """``x.resize_(n, 1)`` (ch17's MMD score): the same count of elements reshapes in place;
    fewer keeps the first, more keeps them all (the rest torch's uninitialised memory); what
    the resized tensor computes has torch's values and gradients; a tensor that requires
    grad is refused, as torch refuses it."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    a = np.arange(6, dtype=np.float32)
    for sizes in ((3, 2), ((2, 3),), (2, 2), (2, 5)):
        results = []
        for lib in torch, tricycle:
            x = lib.tensor(a)
            assert x.resize_(*sizes) is x
            w = lib.tensor(np.linspace(-1, 1, x.numel(), dtype=np.float32).reshape(x.shape), requires_grad=True)  # fmt: skip
            kept = min(6, x.numel())
            y = (x.reshape(-1)[:kept] * w.reshape(-1)[:kept]).sum()
            y.backward()
            results.append((tuple(x.shape), host(x).reshape(-1)[:kept], host(y), host(w.grad)))
        assert results[1][0] == results[0][0]
        for ours, theirs in zip(results[1][1:], results[0][1:], strict=True):
            np.testing.assert_allclose(ours, theirs)
    x = tricycle.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Tensor.resize_: cannot resize a tensor that requires grad"):  # fmt: skip
        x.resize_(3, 2)
    with pytest.raises(TypeError, match=r"Tensor.resize_: sizes must be integers >= 0"):
        tricycle.zeros(2).resize_(2, -1)


def test_nn_parameter_is_torchs_path():
    """``from torch.nn.parameter import Parameter`` (ch18's graph layer), with torch's other
    names there: the classes of ``tricycle.nn``."""
    import tricycle  # noqa: PLC0415
    from tricycle.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter  # noqa: PLC0415

    assert Parameter is tricycle.nn.Parameter
    assert (UninitializedParameter, UninitializedBuffer) == (tricycle.nn.UninitializedParameter, tricycle.nn.UninitializedBuffer)  # fmt: skip
    p = Parameter(tricycle.rand(2, 3))
    assert p.requires_grad and p.shape == (2, 3)
