"""Dive into Deep Learning (d2l-ai/d2l-en), its PyTorch code from the builders' guide to the
modern convolutional networks, run cell by cell on tricycle with ``torch`` replaced by
``tricycle`` in its text, beside the book's own library ``d2l/torch.py`` built the same way
(tests/d2l_port.py; docs/pytorch.md's promise; the method of tests/test_dlwpt_part1.py):

- chapter_builders-guide: model-construction (``MySequential`` through ``add_module`` and
  ``children()``, the ``FixedHiddenMLP`` with its control flow, nested blocks), parameters
  (``state_dict``, ``named_parameters``, a shared layer), init-param (``apply`` with
  ``nn.init`` and hand edits under ``.data``), lazy-init (``nn.LazyLinear``'s
  ``UninitializedParameter``), custom-layer (``nn.Parameter``), read-write (``save``/``load`` of
  tensors, lists, dicts and a lazily built model's ``state_dict``) and use-gpu (on the CPU);
- chapter_convolutional-neural-networks: conv-layer (``corr2d`` by hand, a ``LazyConv2d``
  learning the edge kernel), padding-and-strides, channels, pooling and LeNet trained by the
  book's ``Trainer``;
- chapter_convolutional-modern: AlexNet, VGG, NiN, GoogLeNet (``Inception``), batch norm (from
  scratch and ``LazyBatchNorm``), ResNet (``Residual``, ResNet-18, the ResNeXt block) and
  DenseNet, each trained by the ``Trainer`` for one epoch of two steps (LeNet and the batch-norm
  LeNets for two epochs of four).

The code is the book's PyTorch tab as d2l.ai shows it (``%%tab pytorch`` cells, and the
PyTorch branch of the cells shared by several frameworks). A cell's last expression is printed,
as a notebook shows it. Each changed line ends in ``# port:`` and says why: epochs, batches and
images shrunk (the layer summaries at 32 to 67 pixels, the Fashion-MNIST stand-in's images
resized to those), AlexNet's and VGG's 4096-wide dense layers 256 wide, a layer's ``weight``
taken by position (tricycle's is ``weights``, a Linear's (in, out): documented), ``X.cuda(1)``
on a machine without a GPU, and a lazily built model called once before its ``state_dict`` is
loaded (tricycle's lazy layers take one only once called: reported).
Each section runs under torch (skipped without it), then under tricycle, seeded, on the CPU
and on one thread; both print the same lines (numbers and documented reprs aside), the
deterministic values are torch's, LeNet's and the batch-norm LeNets' losses fall and a step of
each modern network's optimizer lowers its loss on a batch. With torch's weights
(``nn.from_torch``) every model of the chapters gives torch's outputs and gradients (of its
parameters and its input) and its running statistics, in train and eval modes.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests import d2l_port
from tests.helpers import one_thread
from tests.test_dlwpt_part1 import same_numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host

pytestmark = [
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:Lazy modules are a new feature"),
    pytest.mark.filterwarnings("ignore:You are using `torch.load`"),
]

MODEL_CONSTRUCTION = r"""
import torch
from torch import nn
from torch.nn import functional as F
# %%
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))

X = torch.rand(2, 20)
net(X).shape
# %%
class MLP(nn.Module):
    def __init__(self):
        # Call the constructor of the parent class nn.Module to perform
        # the necessary initialization
        super().__init__()
        self.hidden = nn.LazyLinear(256)
        self.out = nn.LazyLinear(10)

    # Define the forward propagation of the model, that is, how to return the
    # required model output based on the input X
    def forward(self, X):
        return self.out(F.relu(self.hidden(X)))
# %%
net = MLP()
net(X).shape
# %%
class MySequential(nn.Module):
    def __init__(self, *args):
        super().__init__()
        for idx, module in enumerate(args):
            self.add_module(str(idx), module)

    def forward(self, X):
        for module in self.children():            
            X = module(X)
        return X
# %%
net = MySequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
net(X).shape
# %%
class FixedHiddenMLP(nn.Module):
    def __init__(self):
        super().__init__()
        # Random weight parameters that will not compute gradients and
        # therefore keep constant during training
        self.rand_weight = torch.rand((20, 20))
        self.linear = nn.LazyLinear(20)

    def forward(self, X):
        X = self.linear(X)        
        X = F.relu(X @ self.rand_weight + 1)
        # Reuse the fully connected layer. This is equivalent to sharing
        # parameters with two fully connected layers
        X = self.linear(X)
        # Control flow
        while X.abs().sum() > 1:
            X /= 2
        return X.sum()
# %%
net = FixedHiddenMLP()
net(X)
# %%
class NestMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(64), nn.ReLU(),
                                 nn.LazyLinear(32), nn.ReLU())
        self.linear = nn.LazyLinear(16)

    def forward(self, X):
        return self.linear(self.net(X))

chimera = nn.Sequential(NestMLP(), nn.LazyLinear(20), FixedHiddenMLP())
chimera(X)
"""


PARAMETERS = r"""
import torch
from torch import nn
# %%
net = nn.Sequential(nn.LazyLinear(8),
                    nn.ReLU(),
                    nn.LazyLinear(1))

X = torch.rand(size=(2, 4))
net(X).shape
# %%
net[2].state_dict()
# %%
type(net[2].bias), net[2].bias.data
# %%
next(net[2].parameters()).grad == None  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
[(name, param.shape) for name, param in net.named_parameters()]
# %%
# We need to give the shared layer a name so that we can refer to its
# parameters
shared = nn.LazyLinear(8)
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(),
                    shared, nn.ReLU(),
                    shared, nn.ReLU(),
                    nn.LazyLinear(1))

net(X)
# Check whether the parameters are the same
print(next(net[2].parameters()).data[0] == next(net[4].parameters()).data[0])  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
next(net[2].parameters()).data[0, 0] = 100  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# Make sure that they are actually the same object rather than just having the
# same value
print(next(net[2].parameters()).data[0] == next(net[4].parameters()).data[0])  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
"""


INIT_PARAM = r"""
import torch
from torch import nn
# %%
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
X = torch.rand(size=(2, 4))
net(X).shape
# %%
def init_normal(module):
    if type(module) == nn.Linear:
        nn.init.normal_(next(module.parameters()), mean=0, std=0.01)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
        nn.init.zeros_(module.bias)

net.apply(init_normal)
next(net[0].parameters()).data[0], net[0].bias.data[0]  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
def init_constant(module):
    if type(module) == nn.Linear:
        nn.init.constant_(next(module.parameters()), 1)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
        nn.init.zeros_(module.bias)

net.apply(init_constant)
next(net[0].parameters()).data[0], net[0].bias.data[0]  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
def init_xavier(module):
    if type(module) == nn.Linear:
        nn.init.xavier_uniform_(next(module.parameters()))  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)

def init_42(module):
    if type(module) == nn.Linear:
        nn.init.constant_(next(module.parameters()), 42)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)

net[0].apply(init_xavier)
net[2].apply(init_42)
print(next(net[0].parameters()).data[0])  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
print(next(net[2].parameters()).data)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
def my_init(module):
    if type(module) == nn.Linear:
        print("Init", *[(name, param.shape)
                        for name, param in module.named_parameters()][0])
        nn.init.uniform_(next(module.parameters()), -10, 10)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
        next(module.parameters()).data *= next(module.parameters()).data.abs() >= 5  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)

net.apply(my_init)
next(net[0].parameters())[:2]  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
next(net[0].parameters()).data[:] += 1  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
next(net[0].parameters()).data[0, 0] = 42  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
next(net[0].parameters()).data[0]  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
"""


LAZY_INIT = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
net = nn.Sequential(nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
# %%
next(net[0].parameters())  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
X = torch.rand(2, 20)
net(X)

next(net[0].parameters()).shape  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
@d2l.add_to_class(d2l.Module)  #@save
def apply_init(self, inputs, init=None):
    self.forward(*inputs)
    if init is not None:
        self.net.apply(init)
"""


CUSTOM_LAYER = r"""
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
class CenteredLayer(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X):
        return X - X.mean()
# %%
layer = CenteredLayer()
layer(d2l.tensor([1.0, 2, 3, 4, 5]))
# %%
net = nn.Sequential(nn.LazyLinear(128), CenteredLayer())
# %%
Y = net(d2l.rand(4, 8))
Y.mean()
# %%
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units,))
        
    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data
        return F.relu(linear)
# %%
linear = MyLinear(5, 3)
linear.weight
# %%
linear(torch.rand(2, 5))
# %%
net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
net(torch.rand(2, 64))
"""


READ_WRITE = r"""
import torch
from torch import nn
from torch.nn import functional as F
# %%
x = torch.arange(4)
torch.save(x, 'x-file')
# %%
x2 = torch.load('x-file')
x2
# %%
y = torch.zeros(4)
torch.save([x, y],'x-files')
x2, y2 = torch.load('x-files')
(x2, y2)
# %%
mydict = {'x': x, 'y': y}
torch.save(mydict, 'mydict')
mydict2 = torch.load('mydict')
mydict2
# %%
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.LazyLinear(256)
        self.output = nn.LazyLinear(10)

    def forward(self, x):
        return self.output(F.relu(self.hidden(x)))

net = MLP()
X = torch.randn(size=(2, 20))
Y = net(X)
# %%
torch.save(net.state_dict(), 'mlp.params')
# %%
clone = MLP()
clone.load_state_dict(torch.load('mlp.params'))
clone.eval()
# %%
Y_clone = clone(X)
Y_clone == Y
"""


USE_GPU = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
def cpu():  #@save
    """Get the CPU device."""
    return torch.device('cpu')

def gpu(i=0):  #@save
    """Get a GPU device."""
    return torch.device(f'cuda:{i}')

cpu(), gpu(), gpu(1)
# %%
def num_gpus():  #@save
    """Get the number of available GPUs."""
    return torch.cuda.device_count()

num_gpus()
# %%
def try_gpu(i=0):  #@save
    """Return gpu(i) if exists, otherwise return cpu()."""
    if num_gpus() >= i + 1:
        return gpu(i)
    return cpu()

def try_all_gpus():  #@save
    """Return all available GPUs, or [cpu(),] if no GPU exists."""
    return [gpu(i) for i in range(num_gpus())]

try_gpu(), try_gpu(10), try_all_gpus()
# %%
x = torch.tensor([1, 2, 3])
x.device
# %%
X = torch.ones(2, 3, device=try_gpu())
X
# %%
Y = torch.rand(2, 3, device=try_gpu(1))
Y
# %%
Z = X.to(try_gpu(1))  # port: no GPU here (torch's X.cuda(1) fails on a CPU too): try_gpu's CPU
print(X)
print(Z)
# %%
Y + Z
# %%
Z.to(try_gpu(1)) is Z  # port: as above
# %%
net = nn.Sequential(nn.LazyLinear(1))
net = net.to(device=try_gpu())
# %%
net(X)
# %%
next(net[0].parameters()).data.device  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
# %%
@d2l.add_to_class(d2l.Trainer)  #@save
def __init__(self, max_epochs, num_gpus=0, gradient_clip_val=0):
    self.save_hyperparameters()
    self.gpus = [d2l.gpu(i) for i in range(min(num_gpus, d2l.num_gpus()))]

@d2l.add_to_class(d2l.Trainer)  #@save
def prepare_batch(self, batch):
    if self.gpus:
        batch = [d2l.to(a, self.gpus[0]) for a in batch]
    return batch

@d2l.add_to_class(d2l.Trainer)  #@save
def prepare_model(self, model):
    model.trainer = self
    model.board.xlim = [0, self.max_epochs]
    if self.gpus:
        model.to(self.gpus[0])
    self.model = model
'''


CONV_LAYER = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
def corr2d(X, K):  #@save
    """Compute 2D cross-correlation."""
    h, w = K.shape
    Y = d2l.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = d2l.reduce_sum((X[i: i + h, j: j + w] * K))
    return Y
# %%
X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
K = d2l.tensor([[0.0, 1.0], [2.0, 3.0]])
corr2d(X, K)
# %%
class Conv2D(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(kernel_size))
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return corr2d(x, self.weight) + self.bias
# %%
X = d2l.ones((6, 8))
X[:, 2:6] = 0
X
# %%
K = d2l.tensor([[1.0, -1.0]])
# %%
Y = corr2d(X, K)
Y
# %%
corr2d(d2l.transpose(X), K)
# %%
# Construct a two-dimensional convolutional layer with 1 output channel and a
# kernel of shape (1, 2). For the sake of simplicity, we ignore the bias here
conv2d = nn.LazyConv2d(1, kernel_size=(1, 2), bias=False)

# The two-dimensional convolutional layer uses four-dimensional input and
# output in the format of (example, channel, height, width), where the batch
# size (number of examples in the batch) and the number of channels are both 1
X = X.reshape((1, 1, 6, 8))
Y = Y.reshape((1, 1, 6, 7))
lr = 3e-2  # Learning rate

for i in range(10):
    Y_hat = conv2d(X)
    l = (Y_hat - Y) ** 2
    conv2d.zero_grad()
    l.sum().backward()
    # Update the kernel
    next(conv2d.parameters()).data[:] -= lr * next(conv2d.parameters()).grad  # port: a layer's weight by position: tricycle's is weights (documented)
    if (i + 1) % 2 == 0:
        print(f'epoch {i + 1}, loss {l.sum():.3f}')
# %%
d2l.reshape(next(conv2d.parameters()).data, (1, 2))  # port: a layer's weight by position: tricycle's is weights (documented)
'''


PADDING_AND_STRIDES = r"""
import torch
from torch import nn
# %%
# We define a helper function to calculate convolutions. It initializes the
# convolutional layer weights and performs corresponding dimensionality
# elevations and reductions on the input and output
def comp_conv2d(conv2d, X):
    # (1, 1) indicates that batch size and the number of channels are both 1
    X = X.reshape((1, 1) + X.shape)
    Y = conv2d(X)
    # Strip the first two dimensions: examples and channels
    return Y.reshape(Y.shape[2:])

# 1 row and column is padded on either side, so a total of 2 rows or columns
# are added
conv2d = nn.LazyConv2d(1, kernel_size=3, padding=1)
X = torch.rand(size=(8, 8))
comp_conv2d(conv2d, X).shape
# %%
# We use a convolution kernel with height 5 and width 3. The padding on either
# side of the height and width are 2 and 1, respectively
conv2d = nn.LazyConv2d(1, kernel_size=(5, 3), padding=(2, 1))
comp_conv2d(conv2d, X).shape
# %%
conv2d = nn.LazyConv2d(1, kernel_size=3, padding=1, stride=2)
comp_conv2d(conv2d, X).shape
# %%
conv2d = nn.LazyConv2d(1, kernel_size=(3, 5), padding=(0, 1), stride=(3, 4))
comp_conv2d(conv2d, X).shape
"""


CHANNELS = r"""
from d2l import torch as d2l
import torch
# %%
def corr2d_multi_in(X, K):
    # Iterate through the 0th dimension (channel) of K first, then add them up
    return sum(d2l.corr2d(x, k) for x, k in zip(X, K))
# %%
X = d2l.tensor([[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]],
               [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]])
K = d2l.tensor([[[0.0, 1.0], [2.0, 3.0]], [[1.0, 2.0], [3.0, 4.0]]])

corr2d_multi_in(X, K)
# %%
def corr2d_multi_in_out(X, K):
    # Iterate through the 0th dimension of K, and each time, perform
    # cross-correlation operations with input X. All of the results are
    # stacked together
    return d2l.stack([corr2d_multi_in(X, k) for k in K], 0)
# %%
K = d2l.stack((K, K + 1, K + 2), 0)
K.shape
# %%
corr2d_multi_in_out(X, K)
# %%
def corr2d_multi_in_out_1x1(X, K):
    c_i, h, w = X.shape
    c_o = K.shape[0]
    X = d2l.reshape(X, (c_i, h * w))
    K = d2l.reshape(K, (c_o, c_i))
    # Matrix multiplication in the fully connected layer
    Y = d2l.matmul(K, X)
    return d2l.reshape(Y, (c_o, h, w))
# %%
X = d2l.normal(0, 1, (3, 3, 3))
K = d2l.normal(0, 1, (2, 3, 1, 1))
Y1 = corr2d_multi_in_out_1x1(X, K)
Y2 = corr2d_multi_in_out(X, K)
assert float(d2l.reduce_sum(d2l.abs(Y1 - Y2))) < 1e-6
"""


POOLING = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def pool2d(X, pool_size, mode='max'):
    p_h, p_w = pool_size
    Y = d2l.zeros((X.shape[0] - p_h + 1, X.shape[1] - p_w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            if mode == 'max':
                Y[i, j] = X[i: i + p_h, j: j + p_w].max()
            elif mode == 'avg':
                Y[i, j] = X[i: i + p_h, j: j + p_w].mean()
    return Y
# %%
X = d2l.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
pool2d(X, (2, 2))
# %%
pool2d(X, (2, 2), 'avg')
# %%
X = d2l.reshape(d2l.arange(16, dtype=d2l.float32), (1, 1, 4, 4))
X
# %%
pool2d = nn.MaxPool2d(3)
# Pooling has no model parameters, hence it needs no initialization
pool2d(X)
# %%
pool2d = nn.MaxPool2d(3, padding=1, stride=2)
pool2d(X)
# %%
pool2d = nn.MaxPool2d((2, 3), stride=(2, 3), padding=(0, 1))
pool2d(X)
# %%
X = d2l.concat((X, X + 1), 1)
X
# %%
pool2d = nn.MaxPool2d(3, padding=1, stride=2)
pool2d(X)
"""


LENET = r'''
from d2l import torch as d2l
import torch
from torch import nn
# %%
def init_cnn(module):  #@save
    """Initialize weights for CNNs."""
    if type(module) == nn.Linear or type(module) == nn.Conv2d:
        nn.init.xavier_uniform_(next(module.parameters()))  # port: a layer's weight by position: tricycle's is weights (documented)
# %%
class LeNet(d2l.Classifier):  #@save
    """The LeNet-5 model."""
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5, padding=2), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.LazyLinear(120), nn.Sigmoid(),
            nn.LazyLinear(84), nn.Sigmoid(),
            nn.LazyLinear(num_classes))
# %%
@d2l.add_to_class(d2l.Classifier)  #@save
def layer_summary(self, X_shape):
    X = d2l.randn(*X_shape)
    for layer in self.net:
        X = layer(X)
        print(layer.__class__.__name__, 'output shape:\t', X.shape)
        
model = LeNet()
model.layer_summary((1, 1, 28, 28))
# %%
trainer = d2l.Trainer(max_epochs=2, num_gpus=1)  # port: epochs shrunk
data = d2l.FashionMNIST(batch_size=32)  # port: batches shrunk
model = LeNet(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], init_cnn)
trainer.fit(model, data)
'''


ALEXNET = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
class AlexNet(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(96, kernel_size=11, stride=4, padding=1),
            nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2),
            nn.LazyConv2d(256, kernel_size=5, padding=2), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.LazyConv2d(384, kernel_size=3, padding=1), nn.ReLU(),
            nn.LazyConv2d(384, kernel_size=3, padding=1), nn.ReLU(),
            nn.LazyConv2d(256, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2), nn.Flatten(),
            nn.LazyLinear(256), nn.ReLU(), nn.Dropout(p=0.5),  # port: 4096 wide in the book: shrunk
            nn.LazyLinear(256), nn.ReLU(),nn.Dropout(p=0.5),  # port: 4096 wide in the book: shrunk
            nn.LazyLinear(num_classes))
        self.net.apply(d2l.init_cnn)
# %%
AlexNet().layer_summary((1, 1, 67, 67))  # port: image shrunk
# %%
model = AlexNet(lr=0.01)
data = d2l.FashionMNIST(batch_size=8, resize=(67, 67))  # port: images and batches shrunk
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
trainer.fit(model, data)
"""


VGG = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def vgg_block(num_convs, out_channels):
    layers = []
    for _ in range(num_convs):
        layers.append(nn.LazyConv2d(out_channels, kernel_size=3, padding=1))
        layers.append(nn.ReLU())
    layers.append(nn.MaxPool2d(kernel_size=2,stride=2))
    return nn.Sequential(*layers)
# %%
class VGG(d2l.Classifier):
    def __init__(self, arch, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        conv_blks = []
        for (num_convs, out_channels) in arch:
            conv_blks.append(vgg_block(num_convs, out_channels))
        self.net = nn.Sequential(
            *conv_blks, nn.Flatten(),
            nn.LazyLinear(256), nn.ReLU(), nn.Dropout(0.5),  # port: 4096 wide in the book: shrunk
            nn.LazyLinear(256), nn.ReLU(), nn.Dropout(0.5),  # port: 4096 wide in the book: shrunk
            nn.LazyLinear(num_classes))
        self.net.apply(d2l.init_cnn)
# %%
VGG(arch=((1, 64), (1, 128), (2, 256), (2, 512), (2, 512))).layer_summary(
    (1, 1, 32, 32))  # port: image shrunk
# %%
model = VGG(arch=((1, 16), (1, 32), (2, 64), (2, 128), (2, 128)), lr=0.01)
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
data = d2l.FashionMNIST(batch_size=8, resize=(32, 32))  # port: images and batches shrunk
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
"""


NIN = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def nin_block(out_channels, kernel_size, strides, padding):
    return nn.Sequential(
        nn.LazyConv2d(out_channels, kernel_size, strides, padding), nn.ReLU(),
        nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU(),
        nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU())
# %%
class NiN(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nin_block(96, kernel_size=11, strides=4, padding=0),
            nn.MaxPool2d(3, stride=2),
            nin_block(256, kernel_size=5, strides=1, padding=2),
            nn.MaxPool2d(3, stride=2),
            nin_block(384, kernel_size=3, strides=1, padding=1),
            nn.MaxPool2d(3, stride=2),
            nn.Dropout(0.5),
            nin_block(num_classes, kernel_size=3, strides=1, padding=1),
            nn.AdaptiveAvgPool2d((1, 1)),
            nn.Flatten())
        self.net.apply(d2l.init_cnn)
# %%
NiN().layer_summary((1, 1, 67, 67))  # port: image shrunk
# %%
model = NiN(lr=0.05)
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
data = d2l.FashionMNIST(batch_size=8, resize=(67, 67))  # port: images and batches shrunk
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
"""


GOOGLENET = r"""
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
class Inception(nn.Module):
    # c1--c4 are the number of output channels for each branch
    def __init__(self, c1, c2, c3, c4, **kwargs):
        super(Inception, self).__init__(**kwargs)
        # Branch 1
        self.b1_1 = nn.LazyConv2d(c1, kernel_size=1)
        # Branch 2
        self.b2_1 = nn.LazyConv2d(c2[0], kernel_size=1)
        self.b2_2 = nn.LazyConv2d(c2[1], kernel_size=3, padding=1)
        # Branch 3
        self.b3_1 = nn.LazyConv2d(c3[0], kernel_size=1)
        self.b3_2 = nn.LazyConv2d(c3[1], kernel_size=5, padding=2)
        # Branch 4
        self.b4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.b4_2 = nn.LazyConv2d(c4, kernel_size=1)

    def forward(self, x):
        b1 = F.relu(self.b1_1(x))
        b2 = F.relu(self.b2_2(F.relu(self.b2_1(x))))
        b3 = F.relu(self.b3_2(F.relu(self.b3_1(x))))
        b4 = F.relu(self.b4_2(self.b4_1(x)))
        return torch.cat((b1, b2, b3, b4), dim=1)
# %%
class GoogleNet(d2l.Classifier):
    def b1(self):
        return nn.Sequential(
            nn.LazyConv2d(64, kernel_size=7, stride=2, padding=3),
            nn.ReLU(), nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(GoogleNet)
def b2(self):
    return nn.Sequential(
        nn.LazyConv2d(64, kernel_size=1), nn.ReLU(),
        nn.LazyConv2d(192, kernel_size=3, padding=1), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(GoogleNet)
def b3(self):
    return nn.Sequential(Inception(64, (96, 128), (16, 32), 32),
                         Inception(128, (128, 192), (32, 96), 64),
                         nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(GoogleNet)
def b4(self):
    return nn.Sequential(Inception(192, (96, 208), (16, 48), 64),
                         Inception(160, (112, 224), (24, 64), 64),
                         Inception(128, (128, 256), (24, 64), 64),
                         Inception(112, (144, 288), (32, 64), 64),
                         Inception(256, (160, 320), (32, 128), 128),
                         nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(GoogleNet)
def b5(self):
    return nn.Sequential(Inception(256, (160, 320), (32, 128), 128),
                         Inception(384, (192, 384), (48, 128), 128),
                         nn.AdaptiveAvgPool2d((1,1)), nn.Flatten())
# %%
@d2l.add_to_class(GoogleNet)
def __init__(self, lr=0.1, num_classes=10):
    super(GoogleNet, self).__init__()
    self.save_hyperparameters()
    self.net = nn.Sequential(self.b1(), self.b2(), self.b3(), self.b4(),
                             self.b5(), nn.LazyLinear(num_classes))
    self.net.apply(d2l.init_cnn)
# %%
model = GoogleNet().layer_summary((1, 1, 32, 32))  # port: image shrunk
# %%
model = GoogleNet(lr=0.01)
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
data = d2l.FashionMNIST(batch_size=8, resize=(32, 32))  # port: images and batches shrunk
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
"""


BATCH_NORM = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    # Use is_grad_enabled to determine whether we are in training mode
    if not torch.is_grad_enabled():
        # In prediction mode, use mean and variance obtained by moving average
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            # When using a fully connected layer, calculate the mean and
            # variance on the feature dimension
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            # When using a two-dimensional convolutional layer, calculate the
            # mean and variance on the channel dimension (axis=1). Here we
            # need to maintain the shape of X, so that the broadcasting
            # operation can be carried out later
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        # In training mode, the current mean and variance are used 
        X_hat = (X - mean) / torch.sqrt(var + eps)
        # Update the mean and variance using moving average
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta  # Scale and shift
    return Y, moving_mean.data, moving_var.data
# %%
class BatchNorm(nn.Module):
    # num_features: the number of outputs for a fully connected layer or the
    # number of output channels for a convolutional layer. num_dims: 2 for a
    # fully connected layer and 4 for a convolutional layer
    def __init__(self, num_features, num_dims):
        super().__init__()
        if num_dims == 2:
            shape = (1, num_features)
        else:
            shape = (1, num_features, 1, 1)
        # The scale parameter and the shift parameter (model parameters) are
        # initialized to 1 and 0, respectively
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        # The variables that are not model parameters are initialized to 0 and
        # 1
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        # If X is not on the main memory, copy moving_mean and moving_var to
        # the device where X is located
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        # Save the updated moving_mean and moving_var
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean,
            self.moving_var, eps=1e-5, momentum=0.1)
        return Y
# %%
class BNLeNetScratch(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5), BatchNorm(6, num_dims=4),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), BatchNorm(16, num_dims=4),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(), nn.LazyLinear(120),
            BatchNorm(120, num_dims=2), nn.Sigmoid(), nn.LazyLinear(84),
            BatchNorm(84, num_dims=2), nn.Sigmoid(),
            nn.LazyLinear(num_classes))
# %%
trainer = d2l.Trainer(max_epochs=2, num_gpus=1)  # port: epochs shrunk
data = d2l.FashionMNIST(batch_size=32)  # port: batches shrunk
model = BNLeNetScratch(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
# %%
model.net[1].gamma.reshape((-1,)), model.net[1].beta.reshape((-1,))
# %%
class BNLeNet(d2l.Classifier):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5), nn.LazyBatchNorm2d(),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), nn.LazyBatchNorm2d(),
            nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(), nn.LazyLinear(120), nn.LazyBatchNorm1d(),
            nn.Sigmoid(), nn.LazyLinear(84), nn.LazyBatchNorm1d(),
            nn.Sigmoid(), nn.LazyLinear(num_classes))
# %%
trainer = d2l.Trainer(max_epochs=2, num_gpus=1)  # port: epochs shrunk
data = d2l.FashionMNIST(batch_size=32)  # port: batches shrunk
model = BNLeNet(lr=0.1)
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
"""


RESNET = r'''
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
class Residual(nn.Module):  #@save
    """The Residual block of ResNet models."""
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1,
                                   stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1,
                                       stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)
# %%
blk = Residual(3)
X = d2l.randn(4, 3, 6, 6)
blk(X).shape
# %%
blk = Residual(6, use_1x1conv=True, strides=2)
blk(X).shape
# %%
class ResNet(d2l.Classifier):
    def b1(self):
        return nn.Sequential(
            nn.LazyConv2d(64, kernel_size=7, stride=2, padding=3),
            nn.LazyBatchNorm2d(), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(ResNet)
def block(self, num_residuals, num_channels, first_block=False):
    blk = []
    for i in range(num_residuals):
        if i == 0 and not first_block:
            blk.append(Residual(num_channels, use_1x1conv=True, strides=2))
        else:
            blk.append(Residual(num_channels))
    return nn.Sequential(*blk)
# %%
@d2l.add_to_class(ResNet)
def __init__(self, arch, lr=0.1, num_classes=10):
    super(ResNet, self).__init__()
    self.save_hyperparameters()
    self.net = nn.Sequential(self.b1())
    for i, b in enumerate(arch):
        self.net.add_module(f'b{i+2}', self.block(*b, first_block=(i==0)))
    self.net.add_module('last', nn.Sequential(
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.LazyLinear(num_classes)))
    self.net.apply(d2l.init_cnn)
# %%
class ResNet18(ResNet):
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__(((2, 64), (2, 128), (2, 256), (2, 512)),
                       lr, num_classes)
# %%
ResNet18().layer_summary((1, 1, 64, 64))  # port: image shrunk
# %%
model = ResNet18(lr=0.01)
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
data = d2l.FashionMNIST(batch_size=8, resize=(32, 32))  # port: images and batches shrunk
model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
trainer.fit(model, data)
# %%
class ResNeXtBlock(nn.Module):  #@save
    """The ResNeXt block."""
    def __init__(self, num_channels, groups, bot_mul, use_1x1conv=False,
                 strides=1):
        super().__init__()
        bot_channels = int(round(num_channels * bot_mul))
        self.conv1 = nn.LazyConv2d(bot_channels, kernel_size=1, stride=1)
        self.conv2 = nn.LazyConv2d(bot_channels, kernel_size=3,
                                   stride=strides, padding=1,
                                   groups=bot_channels//groups)
        self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1, stride=1)
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()
        self.bn3 = nn.LazyBatchNorm2d()
        if use_1x1conv:
            self.conv4 = nn.LazyConv2d(num_channels, kernel_size=1, 
                                       stride=strides)
            self.bn4 = nn.LazyBatchNorm2d()
        else:
            self.conv4 = None

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = F.relu(self.bn2(self.conv2(Y)))
        Y = self.bn3(self.conv3(Y))
        if self.conv4:
            X = self.bn4(self.conv4(X))
        return F.relu(Y + X)
# %%
blk = ResNeXtBlock(32, 16, 1)
X = d2l.randn(4, 32, 16, 16)  # port: image shrunk
blk(X).shape
'''


DENSENET = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def conv_block(num_channels):
    return nn.Sequential(
        nn.LazyBatchNorm2d(), nn.ReLU(),
        nn.LazyConv2d(num_channels, kernel_size=3, padding=1))
# %%
class DenseBlock(nn.Module):
    def __init__(self, num_convs, num_channels):
        super(DenseBlock, self).__init__()
        layer = []
        for i in range(num_convs):
            layer.append(conv_block(num_channels))
        self.net = nn.Sequential(*layer)

    def forward(self, X):
        for blk in self.net:
            Y = blk(X)
            # Concatenate input and output of each block along the channels
            X = torch.cat((X, Y), dim=1)
        return X
# %%
blk = DenseBlock(2, 10)
X = torch.randn(4, 3, 8, 8)
Y = blk(X)
Y.shape
# %%
def transition_block(num_channels):
    return nn.Sequential(
        nn.LazyBatchNorm2d(), nn.ReLU(),
        nn.LazyConv2d(num_channels, kernel_size=1),
        nn.AvgPool2d(kernel_size=2, stride=2))
# %%
blk = transition_block(10)
blk(Y).shape
# %%
class DenseNet(d2l.Classifier):
    def b1(self):
        return nn.Sequential(
            nn.LazyConv2d(64, kernel_size=7, stride=2, padding=3),
            nn.LazyBatchNorm2d(), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
# %%
@d2l.add_to_class(DenseNet)
def __init__(self, num_channels=64, growth_rate=32, arch=(4, 4, 4, 4),
             lr=0.1, num_classes=10):
    super(DenseNet, self).__init__()
    self.save_hyperparameters()
    self.net = nn.Sequential(self.b1())
    for i, num_convs in enumerate(arch):
        self.net.add_module(f'dense_blk{i+1}', DenseBlock(num_convs,
                                                          growth_rate))
        # The number of output channels in the previous dense block
        num_channels += num_convs * growth_rate
        # A transition layer that halves the number of channels is added
        # between the dense blocks
        if i != len(arch) - 1:
            num_channels //= 2
            self.net.add_module(f'tran_blk{i+1}', transition_block(
                num_channels))
    self.net.add_module('last', nn.Sequential(
        nn.LazyBatchNorm2d(), nn.ReLU(),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.LazyLinear(num_classes)))
    self.net.apply(d2l.init_cnn)
# %%
model = DenseNet(lr=0.01)
trainer = d2l.Trainer(max_epochs=1, num_gpus=1)  # port: one epoch of two steps
data = d2l.FashionMNIST(batch_size=8, resize=(32, 32))  # port: images and batches shrunk
trainer.fit(model, data)
"""


def run(text: str, lib, folder, monkeypatch, n_train: int) -> tuple[str, dict]:
    """The section in ``lib``'s words beside ``d2l`` built for ``lib`` (its Fashion-MNIST
    ``n_train`` images to train on, a quarter of that to validate on), seeded, in ``folder``
    (``d2l_port.run``): what it printed and its globals."""
    monkeypatch.setattr(d2l_port, "N_TRAIN", n_train)
    monkeypatch.setattr(d2l_port, "N_VAL", n_train // 4)
    return d2l_port.run(text, lib, folder, monkeypatch)


@pytest.fixture(autouse=True)
def _one_thread():
    """Each test on one thread (torch's and the BLAS's), the checks after the sections too."""
    with one_thread(pytest.importorskip("torch")):
        yield


def both(text: str, tmp_path, monkeypatch, n_train: int = 64):
    """``run`` under torch, then under tricycle, both on the CPU (``try_gpu`` finds no GPU on
    any machine)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        monkeypatch.setattr(lib.cuda, "device_count", lambda: 0)
    theirs = run(text, torch, tmp_path / "torch", monkeypatch, n_train)
    ours = run(text, tricycle, tmp_path / "tricycle", monkeypatch, n_train)
    return theirs, ours


def normal(printed: str) -> list[str]:
    """``kinds`` with the documented differences aside: the count of a weight's values (a
    Linear's are (in, out)), a Parameter's head, the layers' and parameters' names (a Linear is
    a ``Dense``, its weight ``weights``; a Sequential's ``sequence.``), a ``state_dict``'s arrays,
    a device's repr (a string here), an uninitialised parameter's name."""
    text = printed.replace("Parameter containing:\n", "").replace("sequence.", "")
    text = re.sub(r"^Dense output", "Linear output", text, flags=re.M)
    text = re.sub(
        r"Dense\(from_size=(\d+), to_size=(\d+)", r"Linear(in_features=\1, out_features=\2", text
    )
    text = re.sub(r"  # [\d,]+ parameters", "", text)
    text = re.sub(r"OrderedDict\(\[\('weight', (.*?)\), \('bias', (.*?)\)\]\)", r"{'weights': \1, 'bias': \2}", text, flags=re.S)  # fmt: skip
    text = re.sub(r"OrderedDict\(\{'weight': (.*?), 'bias': (.*?)\}\)", r"{'weights': \1, 'bias': \2}", text, flags=re.S)  # fmt: skip (Python 3.12's repr)
    text = text.replace("affine=True, bias=True,", "affine=True,")  # torch < 2.12 prints no bias=
    text = re.sub(r"array\((.*?), dtype=float32\)", r"tensor(\1)", text, flags=re.S)
    text = text.replace("'weight'", "'weights'").replace(".weight'", ".weights'")
    text = text.replace(
        "<UninitializedParameter weights (dtype float32)>", "<UninitializedParameter>"
    )
    text = re.sub(r"device\(type='cpu'\)", "'cpu'", text)
    text = re.sub(r"<class '[\w.]*Parameter'>", "<class 'Parameter'>", text)
    text = re.sub(r"^Init weights? ", "Init weight ", text, flags=re.M)
    return [re.sub(r"<tensor of \d+>", "<tensor>", k) for k in kinds(text)]


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(host(ours).astype(float), host(theirs).astype(float), rtol=rtol, atol=atol)  # fmt: skip


def losses(space: dict, key: str = "train_loss") -> list[float]:
    """The points the book's progress board drew for ``key``."""
    return [float(p.y) for p in space["model"].board.data[key]]


def given_torchs(their_model, our_model, shape, train=True, rtol=1e-4, atol=1e-5) -> None:
    """``same_numbers`` on a batch of ``shape`` in train or eval mode, the lazy layers of a
    model not called yet made by a first call."""
    import torch  # noqa: PLC0415

    x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
    lazy = any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in their_model.parameters())  # fmt: skip
    for model, lib in (their_model, torch), (our_model, __import__("tricycle")):
        model.train(train)
        if lazy:
            with lib.no_grad():
                model(lib.tensor(x))
    same_numbers(their_model, our_model, shape, seed=1, rtol=rtol, atol=atol)


# ------------------------------------------------------------------ the builders' guide
def test_model_construction(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MODEL_CONSTRUCTION, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert our["net"](our["X"]).shape == () and our["chimera"](our["X"]).shape == ()
    # the MLP, MySequential and the nested one given torch's weights: torch's numbers
    for name, args in ("MLP", ()), ("NestMLP", ()):
        given_torchs(their[name](*args), our[name](*args), (2, 20))
    layers = [(lib.nn.LazyLinear(256), lib.nn.ReLU(), lib.nn.LazyLinear(10)) for lib in (their["torch"], our["tricycle"])]  # fmt: skip
    given_torchs(their["MySequential"](*layers[0]), our["MySequential"](*layers[1]), (2, 20))


def test_parameters(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(PARAMETERS, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    net = our["net"]  # the shared layer: one tensor, 100 written through either
    assert net[2].weights is net[4].weights and float(net[4].weights[0, 0]) == 100


def test_init_param(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(INIT_PARAM, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    w = host(our["net"][0].weights)  # my_init's values, then 1 added and one set to 42
    assert w[0, 0] == 42 and np.all((np.abs(w - 1) >= 5) | (w == 1) | (w == 42))
    for space in our, their:  # my_init's: uniform in (-10, 10), those below 5 in size zeroed
        w = host(next(space["net"][2].parameters()))
        assert np.all((np.abs(w) >= 5) | (w == 0)) and np.abs(w).max() < 10


def test_lazy_init(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LAZY_INIT, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert our["net"][0].weights.shape == their["net"][0].weight.T.shape == (20, 256)
    given_torchs(their["net"], our["net"], (2, 20))


def test_custom_layer(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CUSTOM_LAYER, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert abs(float(our["Y"].mean())) < 1e-6
    theirs, ours = their["net"], our["net"]  # the two MyLinears given torch's weights
    for mine, torchs in zip(ours, theirs, strict=True):
        mine.weight.data, mine.bias.data = (our["tricycle"].tensor(host(t)) for t in (torchs.weight, torchs.bias))  # fmt: skip
    x = np.random.default_rng(0).uniform(size=(3, 64)).astype(np.float32)
    same(ours(our["tricycle"].tensor(x)), theirs(their["torch"].tensor(x)))


def test_read_write(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(READ_WRITE, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    for name in "x2", "y2":
        same(our[name], their[name])
    assert host(our["Y_clone"] == our["Y"]).all()
    same_numbers(their["clone"], our["clone"], (2, 20))


def test_use_gpu(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(USE_GPU, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    same(our["X"], their["X"])


# ------------------------------------------------------------------ convolutional networks
def test_conv_layer(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CONV_LAYER, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    same(our["Y"], their["Y"])
    for printed, space in (theirs, their), (ours, our):  # the kernel learns the edge detector
        found = [float(v) for v in re.findall(r"loss ([\d.]+)", printed)]
        assert len(found) == 5 and found[-1] < 0.1 * found[0], found
        np.testing.assert_allclose(host(space["conv2d"](space["X"])), host(space["Y"]), atol=0.3)


def test_padding_and_strides(tmp_path, monkeypatch):
    (theirs, _), (ours, _) = both(PADDING_AND_STRIDES, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert re.findall(r"\(\d+, \d+\)", ours) == ["(8, 8)", "(8, 8)", "(4, 4)", "(2, 2)"]


def test_channels(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CHANNELS, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert values(ours) == values(theirs)  # every number printed: torch's


def test_pooling(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(POOLING, tmp_path, monkeypatch)
    assert normal(ours) == normal(theirs)
    assert values(ours) == values(theirs)  # every number printed: torch's
    same(our["pool2d"](our["X"]), their["pool2d"](their["X"]))


def values(printed: str) -> list[float]:
    """The numbers printed (tensors' values and shapes alike; their names, records and dtypes
    aside)."""
    text = re.sub(r"(name|grad_fn|dtype)=[^,)\]]*", "", printed)
    return [float(v) for v in re.findall(r"-?\d+\.?\d*(?:e[-+]?\d+)?", text)]


def a_step_lowers(space: dict, lib) -> None:
    """A step of the book's optimizer (``configure_optimizers``) on a batch of the section's
    ``data`` lowers that batch's loss under ``model`` (eval mode: no dropout)."""
    model, data = space["model"], space["data"]
    images = lib.stack([data.train[i][0] for i in range(8)])
    labels = lib.tensor([data.train[i][1] for i in range(8)])
    model.eval()
    optimizer = model.configure_optimizers()
    before = model.loss(model(images), labels)
    optimizer.zero_grad()
    before.backward()
    optimizer.step()
    assert float(model.loss(model(images), labels).detach()) < float(before.detach())


def learns(their, our, falls=True) -> None:
    """The book's board: the training loss drawn, finite, and falling when ``falls`` (the
    small networks, trained longer), and the validation accuracy drawn after each epoch. Then
    a step of the book's optimizer (``configure_optimizers``) on a batch lowers that batch's
    loss (eval mode: no dropout) in both libraries: the modern networks' two short epochs
    leave their loss near chance's."""
    for space, lib in (their, their["torch"]), (our, our["tricycle"]):
        found = losses(space)
        assert len(found) == (4 if falls else 2) and np.isfinite(found).all(), found
        assert found[-1] < found[0] or not falls, found
        assert len(losses(space, "val_acc")) == (2 if falls else 1)
        a_step_lowers(space, lib)


def test_lenet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LENET, tmp_path, monkeypatch, n_train=128)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    given_torchs(their["model"], our["model"], (4, 1, 28, 28))


# ------------------------------------------------------------------ modern convolutional networks
def test_alexnet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ALEXNET, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    given_torchs(their["model"], our["model"], (2, 1, 67, 67), train=False)


def test_vgg(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(VGG, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    given_torchs(their["model"], our["model"], (2, 1, 32, 32), train=False)


def test_nin(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NIN, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    given_torchs(their["model"], our["model"], (2, 1, 67, 67), train=False)


def test_googlenet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GOOGLENET, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    given_torchs(their["model"], our["model"], (2, 1, 32, 32))


def test_batch_norm(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BATCH_NORM, tmp_path, monkeypatch, n_train=128)
    assert normal(ours) == normal(theirs)
    learns(their, our)
    for train in True, False:  # BNLeNet, trained, and a new BNLeNetScratch (its own batch_norm)
        given_torchs(their["model"], our["model"], (4, 1, 28, 28), train, atol=1e-4)
    # the scratch BatchNorm's moving statistics are plain attributes: buffers here, outside
    # torch's state_dict (documented): loaded without them, then given torch's by hand
    torch, tricycle = their["torch"], our["tricycle"]
    theirs, ours = their["BNLeNetScratch"](), our["BNLeNetScratch"]()
    x = np.random.default_rng(1).normal(size=(4, 1, 28, 28)).astype(np.float32)
    theirs(torch.tensor(x)), ours(tricycle.tensor(x))  # the lazy layers made
    missing, unexpected = tricycle.nn.from_torch(ours, theirs.state_dict(), strict=False)
    assert unexpected == [] and {m.split(".")[-1] for m in missing} == {"moving_mean", "moving_var"}
    for bn in 1, 5, 10, 13:
        for name in "moving_mean", "moving_var":
            setattr(ours.net[bn], name, tricycle.tensor(host(getattr(theirs.net[bn], name))))
    for lib, model in (torch, theirs), (tricycle, ours):
        model(lib.tensor(x)).sum().backward()
    same(ours(tricycle.tensor(x)), theirs(torch.tensor(x)), atol=1e-4)
    for bn in 1, 5, 10, 13:  # the moving statistics, updated twice more
        for name in "moving_mean", "moving_var":
            same(getattr(ours.net[bn], name), getattr(theirs.net[bn], name), atol=1e-5)
    linear = {f"{n}.weights" for n, m in ours.named_modules() if isinstance(m, tricycle.nn.Linear)}
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        same(p.grad, q.grad.T if name in linear else q.grad, atol=1e-4)


def test_resnet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RESNET, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    # batch norm over 8 values at the end: float32's last bits grow through the blocks
    given_torchs(their["model"], our["model"], (8, 1, 32, 32), rtol=1e-3, atol=1e-3)
    given_torchs(their["blk"], our["blk"], (2, 32, 8, 8), atol=1e-4)  # the ResNeXt block


def test_densenet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(DENSENET, tmp_path, monkeypatch, n_train=16)
    assert normal(ours) == normal(theirs)
    learns(their, our, falls=False)
    # batch norm over 8 values at the end: float32's last bits grow through the blocks
    given_torchs(their["model"], our["model"], (8, 1, 32, 32), atol=1e-4)
