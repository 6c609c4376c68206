"""Aladdin Persson's "Machine-Learning-Collection" (aladdinpersson/Machine-Learning-Collection),
its ML/Pytorch/Basics scripts and ML/Pytorch/CNN_architectures models, run on tricycle with
``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_ztm_pytorch_vit.py and tests/test_torch_vision_tutorials.py).

- Basics: pytorch_tensorbasics (initialisation, dtype casts, ``out=``, in-place ops,
  ``matrix_power``, ``dot``, ``bmm``, broadcasting, reductions with indices, ``sort``,
  ``clamp``, fancy and boolean indexing, ``where``, ``unique``, ``view``/``reshape``,
  ``t().is_contiguous()``, ``cat``, ``permute``, ``chunk``, ``unsqueeze``/``squeeze``);
  pytorch_simple_fullynet, pytorch_simple_CNN, pytorch_rnn_gru_lstm and
  pytorch_bidirectional_lstm trained on small MNIST-like digits (``check_accuracy`` as
  written but for torch's positional ``scores.max(1)``); pytorch_loadsave (a checkpoint of a
  model's and Adam's state dicts saved and loaded); pytorch_init_weights
  (``kaiming_uniform_``/``constant_`` by ``isinstance``); pytorch_lr_ratescheduler
  (``ReduceLROnPlateau`` stepped with the epoch's mean loss); pytorch_std_mean (the per-channel
  mean and std of a CIFAR-10-like set through ``torch.mean(data, dim=[0, 2, 3])``);
  pytorch_mixed_precision_example on the CPU (``torch.cuda.amp.GradScaler()`` and
  ``autocast()`` warn and switch themselves off, as torch's without a GPU);
  Imbalanced_classes (``ImageFolder`` and ``WeightedRandomSampler`` balancing 12 retrievers
  and 3 elkhounds); custom_dataset (a ``Dataset`` over a CSV of image names, ``random_split``,
  a stand-in ``googlenet`` fine-tuned); set_deterministic_behavior's ``seed_everything``.
- CNN_architectures: LeNet-5, VGG16 (``create_conv_layers``), GoogLeNet with its auxiliary
  classifiers, ResNet's bottleneck blocks (``x += identity`` on a BatchNorm's output) and
  EfficientNet-B0 (depthwise convolutions, squeeze-excitation, stochastic depth), each
  script's own check run under both libraries at a small size; then, given torch's weights
  (``nn.from_torch``), torch's outputs, loss and gradients from LeNet, from VGG16 and B0
  whole in eval mode (BatchNorm's running statistics), and in training mode from GoogLeNet's
  parts (its stem, an Inception_block, an auxiliary head: the whole needs 224x224 images)
  and a stage that ResNet's ``_make_layer`` builds (batch statistics: float32 differs in the
  last digits once a deep net's BatchNorms see a 1x1 map of two images).

Each script runs under torch (skipped without it), then under tricycle, both on the CPU on
one thread; both print the same lines (numbers and tensor reprs aside) and learn where they
train. tensorbasics, run a statement at a time, binds tensors of torch's dtypes and shapes
and, wherever torch's random draws do not decide them, torch's values. The trained networks
of the Basics (the MLP, the CNNs, the LSTMs, and the RNN and GRU the script defines beside
them) given torch's weights give torch's logits, loss and gradients. torchvision (MNIST and
CIFAR-10 from sklearn's digits and random colours, ImageFolder, ToTensor, Resize, Compose, a
small random ``vgg16`` and ``googlenet``), pandas' ``read_csv`` and skimage's ``io.imread``
are the test's stand-ins; tqdm is the real one. Each changed line ends in ``# port:`` and
says why: sizes and epochs shrunk, the documented exceptions (torch's positional
``max(1)``, which keeps numpy's meaning; ``out=``, refused; ``m.weight``, which tricycle's
layers name ``weights``, ``gamma``), torch 2.13's ReduceLROnPlateau without ``verbose=``, a
line the learning-rate script lacks, the lines that need a GPU.
"""

# ruff: noqa: E501, W291, W293

import ast
import contextlib
import functools
import io
import os
import re
import types

import numpy as np
import pytest

from tests.helpers import module, one_thread, package, run_main, torch_and_tricycle
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_vision_tutorials import host
from tests.test_uvadlc_intro import kinds
from tests.test_ztm_pytorch_vit import grads_as_torchs
from tricycle import backend

pytestmark = [  # torch's and tricycle's amp without a GPU, torch's deprecated cuda.amp names
    pytest.mark.filterwarnings("ignore:.*CUDA is not available"),
    pytest.mark.filterwarnings("ignore:.*torch.cuda.amp"),
    pytest.mark.filterwarnings("ignore:GradScaler. device .cuda. but no CUDA GPU"),
    pytest.mark.filterwarnings("ignore:autocast. device_type .cuda. but no CUDA GPU"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn.t accept a copy keyword"),
]

# ML/Pytorch/Basics/pytorch_tensorbasics.py (its comments shortened)
TENSORBASICS = r"""
import torch
import numpy as np

# ================================================================= #
#                        Initializing Tensor                        #
# ================================================================= #

device = "cuda" if torch.cuda.is_available() else "cpu"  # Cuda to run on GPU!

# Initializing a Tensor in this case of shape 2x3 (2 rows, 3 columns)
my_tensor = torch.tensor(
    [[1, 2, 3], [4, 5, 6]], dtype=torch.float32, device=device, requires_grad=True
)

# A few tensor attributes
print(
    f"Information about tensor: {my_tensor}"
)  # Prints data of the tensor, device and grad info
print(
    "Type of Tensor {my_tensor.dtype}"
)  # Prints dtype of the tensor (torch.float32, etc)
print(
    f"Device Tensor is on {my_tensor.device}"
)  # Prints cpu/cuda (followed by gpu number)
print(f"Shape of tensor {my_tensor.shape}")  # Prints shape, in this case 2x3
print(f"Requires gradient: {my_tensor.requires_grad}")  # Prints true/false

# Other common initialization methods (there exists a ton more)
x = torch.empty(size=(3, 3))  # Tensor of shape 3x3 with uninitialized data
x = torch.zeros((3, 3))  # Tensor of shape 3x3 with values of 0
x = torch.rand(
    (3, 3)
)  # Tensor of shape 3x3 with values from uniform distribution in interval [0,1)
x = torch.ones((3, 3))  # Tensor of shape 3x3 with values of 1
x = torch.eye(5, 5)  # Returns Identity Matrix I, (I <-> Eye), matrix of shape 2x3
x = torch.arange(
    start=0, end=5, step=1
)  # Tensor [0, 1, 2, 3, 4], note, can also do: torch.arange(11)
x = torch.linspace(start=0.1, end=1, steps=10)  # x = [0.1, 0.2, ..., 1]
x = torch.empty(size=(1, 5)).normal_(
    mean=0, std=1
)  # Normally distributed with mean=0, std=1
x = torch.empty(size=(1, 5)).uniform_(
    0, 1
)  # Values from a uniform distribution low=0, high=1
x = torch.diag(torch.ones(3))  # Diagonal matrix of shape 3x3

# How to make initialized tensors to other types (int, float, double)
# These will work even if you're on CPU or CUDA!
tensor = torch.arange(4)  # [0, 1, 2, 3] Initialized as int64 by default
print(f"Converted Boolean: {tensor.bool()}")  # Converted to Boolean: 1 if nonzero
print(f"Converted int16 {tensor.short()}")  # Converted to int16
print(
    f"Converted int64 {tensor.long()}"
)  # Converted to int64 (This one is very important, used super often)
print(f"Converted float16 {tensor.half()}")  # Converted to float16
print(
    f"Converted float32 {tensor.float()}"
)  # Converted to float32 (This one is very important, used super often)
print(f"Converted float64 {tensor.double()}")  # Converted to float64

# Array to Tensor conversion and vice-versa
np_array = np.zeros((5, 5))
tensor = torch.from_numpy(np_array)
np_array_again = (
    tensor.numpy()
)  # np_array_again will be same as np_array (perhaps with numerical round offs)

# =============================================================================== #
#                        Tensor Math & Comparison Operations                      #
# =============================================================================== #

x = torch.tensor([1, 2, 3])
y = torch.tensor([9, 8, 7])

# -- Addition --
z1 = torch.empty(3)
z1.copy_(torch.add(x, y))  # This is one way  # port: torch.add(x, y, out=z1): out= is refused (documented)
z2 = torch.add(x, y)  # This is another way
z = x + y  # This is my preferred way, simple and clean.

# -- Subtraction --
z = x - y  # We can do similarly as the preferred way of addition

# -- Division (A bit clunky) --
z = torch.true_divide(x, y)  # Will do element wise division if of equal shape

# -- Inplace Operations --
t = torch.zeros(3)

t.add_(x)  # Whenever we have operation followed by _ it will mutate the tensor in place
t += x  # Also inplace: t = t + x is not inplace, bit confusing.

# -- Exponentiation (Element wise if vector or matrices) --
z = x.pow(2)  # z = [1, 4, 9]
z = x**2  # z = [1, 4, 9]


# -- Simple Comparison --
z = x > 0  # Returns [True, True, True]
z = x < 0  # Returns [False, False, False]

# -- Matrix Multiplication --
x1 = torch.rand((2, 5))
x2 = torch.rand((5, 3))
x3 = torch.mm(x1, x2)  # Matrix multiplication of x1 and x2, out shape: 2x3
x3 = x1.mm(x2)  # Similar as line above

# -- Matrix Exponentiation --
matrix_exp = torch.rand(5, 5)
print(
    matrix_exp.matrix_power(3)
)  # is same as matrix_exp (mm) matrix_exp (mm) matrix_exp

# -- Element wise Multiplication --
z = x * y  # z = [9, 16, 21] = [1*9, 2*8, 3*7]

# -- Dot product --
z = torch.dot(x, y)  # Dot product, in this case z = 1*9 + 2*8 + 3*7

# -- Batch Matrix Multiplication --
batch = 32
n = 10
m = 20
p = 30
tensor1 = torch.rand((batch, n, m))
tensor2 = torch.rand((batch, m, p))
out_bmm = torch.bmm(tensor1, tensor2)  # Will be shape: (b x n x p)

# -- Example of broadcasting --
x1 = torch.rand((5, 5))
x2 = torch.ones((1, 5))
z = (
    x1 - x2
)  # Shape of z is 5x5: How? The 1x5 vector (x2) is subtracted for each row in the 5x5 (x1)
z = (
    x1**x2
)  # Shape of z is 5x5: How? Broadcasting! Element wise exponentiation for every row

# Other useful tensor operations
sum_x = torch.sum(
    x, dim=0
)  # Sum of x across dim=0 (which is the only dim in our case), sum_x = 6
values, indices = torch.max(x, dim=0)  # Can also do x.max(dim=0)
values, indices = torch.min(x, dim=0)  # Can also do x.min(dim=0)
abs_x = torch.abs(x)  # Returns x where abs function has been applied to every element
z = torch.argmax(x, dim=0)  # Gets index of the maximum value
z = torch.argmin(x, dim=0)  # Gets index of the minimum value
mean_x = torch.mean(x.float(), dim=0)  # mean requires x to be float
z = torch.eq(x, y)  # Element wise comparison, in this case z = [False, False, False]
sorted_y, indices = torch.sort(y, dim=0, descending=False)

z = torch.clamp(x, min=0)
# All values < 0 set to 0 and values > 0 unchanged (this is exactly ReLU function)
# If you want to values over max_val to be clamped, do torch.clamp(x, min=min_val, max=max_val)

x = torch.tensor([1, 0, 1, 1, 1], dtype=torch.bool)  # True/False values
z = torch.any(x)  # will return True, can also do x.any() instead of torch.any(x)
z = torch.all(
    x
)  # will return False (since not all are True), can also do x.all() instead of torch.all()

# ============================================================= #
#                        Tensor Indexing                        #
# ============================================================= #

batch_size = 10
features = 25
x = torch.rand((batch_size, features))

# Get first examples features
print(x[0].shape)  # shape [25], this is same as doing x[0,:]

# Get the first feature for all examples
print(x[:, 0].shape)  # shape [10]

# For example: Want to access third example in the batch and the first ten features
print(x[2, 0:10].shape)  # shape: [10]

# For example we can use this to, assign certain elements
x[0, 0] = 100

# Fancy Indexing
x = torch.arange(10)
indices = [2, 5, 8]
print(x[indices])  # x[indices] = [2, 5, 8]

x = torch.rand((3, 5))
rows = torch.tensor([1, 0])
cols = torch.tensor([4, 0])
print(x[rows, cols])  # Gets second row fifth column and first row first column

# More advanced indexing
x = torch.arange(10)
print(x[(x < 2) | (x > 8)])  # will be [0, 1, 9]
print(x[x.remainder(2) == 0])  # will be [0, 2, 4, 6, 8]

# Useful operations for indexing
print(
    torch.where(x > 5, x, x * 2)
)  # gives [0, 2, 4, 6, 8, 10, 6, 7, 8, 9], all values x > 5 yield x, else x*2
x = torch.tensor([0, 0, 1, 2, 2, 3, 4]).unique()  # x = [0, 1, 2, 3, 4]
print(
    x.ndimension()
)  # The number of dimensions, in this case 1. if x.shape is 5x5x5 ndim would be 3
x = torch.arange(10)
print(
    x.numel()
)  # The number of elements in x (in this case it's trivial because it's just a vector)

# ============================================================= #
#                        Tensor Reshaping                       #
# ============================================================= #

x = torch.arange(9)

# Let's say we want to reshape it to be 3x3
x_3x3 = x.view(3, 3)

# We can also do (view and reshape are very similar)
x_3x3 = x.reshape(3, 3)

# If we for example do:
y = x_3x3.t()
print(
    y.is_contiguous()
)  # This will return False and if we try to use view now, it won't work!
# y.view(9) would cause an error, reshape however won't

# A solution is to do the following
print(y.contiguous().view(9))  # Calling .contiguous() before view and it works

# Moving on to another operation, let's say we want to add two tensors dimensions togethor
x1 = torch.rand(2, 5)
x2 = torch.rand(2, 5)
print(torch.cat((x1, x2), dim=0).shape)  # Shape: 4x5
print(torch.cat((x1, x2), dim=1).shape)  # Shape 2x10

# Let's say we want to unroll x1 into one long vector with 10 elements, we can do:
z = x1.view(-1)  # And -1 will unroll everything

# If we instead have an additional dimension and we wish to keep those as is we can do:
batch = 64
x = torch.rand((batch, 2, 5))
z = x.view(
    batch, -1
)  # And z.shape would be 64x10, this is very useful stuff and is used all the time

# Let's say we want to switch x axis so that instead of 64x2x5 we have 64x5x2
z = x.permute(0, 2, 1)

# Splits x last dimension into chunks of 2 (since 5 is not integer div by 2) the last dimension
# will be smaller, so it will split it into two tensors: 64x2x3 and 64x2x2
z = torch.chunk(x, chunks=2, dim=1)
print(z[0].shape)
print(z[1].shape)

# Let's say we want to add an additional dimension
x = torch.arange(
    10
)  # Shape is [10], let's say we want to add an additional so we have 1x10
print(x.unsqueeze(0).shape)  # 1x10
print(x.unsqueeze(1).shape)  # 10x1

# Let's say we have x which is 1x1x10 and we want to remove a dim so we have 1x10
x = torch.arange(10).unsqueeze(0).unsqueeze(1)

# Perhaps unsurprisingly
z = x.squeeze(1)  # can also do .squeeze(0) both returns 1x10

# That was some essential Tensor operations, hopefully you found it useful!
"""

# ML/Pytorch/Basics/pytorch_simple_fullynet.py (docstrings shortened)
FULLYNET = r'''
# Imports
import torch
import torch.nn.functional as F  # Parameterless functions, like (some) activation functions
import torchvision.datasets as datasets  # Standard datasets
import torchvision.transforms as transforms  # Transformations we can perform on our dataset for augmentation
from torch import optim  # For optimizers like SGD, Adam, etc.
from torch import nn  # All neural network modules
from torch.utils.data import (
    DataLoader,
)  # Gives easier dataset managment by creating mini batches etc.
from tqdm import tqdm  # For nice progress bar!

# Here we create our simple neural network. For more details here we are subclassing and
# inheriting from nn.Module, this is the most general way to create your networks and
# allows for more flexibility.
class NN(nn.Module):
    def __init__(self, input_size, num_classes):
        """
        Here we define the layers of the network. We create two fully connected layers
        """
        super(NN, self).__init__()
        # Our first linear layer take input_size, in this case 784 nodes to 50
        # and our second linear layer takes 50 to the num_classes we have, in
        # this case 10.
        self.fc1 = nn.Linear(input_size, 50)
        self.fc2 = nn.Linear(50, num_classes)

    def forward(self, x):
        """
        x here is the mnist images and we run it through fc1, fc2 that we created above.
        """

        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return x


# Set device cuda for GPU if it's available otherwise run on the CPU
device = "mps" if torch.backends.mps.is_available() else "cuda" if torch.cuda.is_available() else "cpu"

# Hyperparameters
input_size = 784
num_classes = 10
learning_rate = 0.001
batch_size = 8  # port: 64: 256 digits in MNIST's 60,000's place, in more steps
num_epochs = 1  # port: 3

# Load Data
train_dataset = datasets.MNIST(
    root="dataset/", train=True, transform=transforms.ToTensor(), download=True
)
test_dataset = datasets.MNIST(
    root="dataset/", train=False, transform=transforms.ToTensor(), download=True
)
train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=True)

# Initialize network
model = NN(input_size=input_size, num_classes=num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Train Network
for epoch in range(num_epochs):
    for batch_idx, (data, targets) in enumerate(tqdm(train_loader)):
        # Get data to cuda if possible
        data = data.to(device=device)
        targets = targets.to(device=device)

        # Get to correct shape
        data = data.reshape(data.shape[0], -1)

        # Forward
        scores = model(data)
        loss = criterion(scores, targets)

        # Backward
        optimizer.zero_grad()
        loss.backward()

        # Gradient descent or adam step
        optimizer.step()


# Check accuracy on training & test to see how good our model
def check_accuracy(loader, model):
    """
    Check accuracy of our trained model given a loader and a model
    """

    num_correct = 0
    num_samples = 0
    model.eval()

    # We don't need to keep track of gradients here so we wrap it in torch.no_grad()
    with torch.no_grad():
        # Loop through the data
        for x, y in loader:

            # Move data to device
            x = x.to(device=device)
            y = y.to(device=device)

            # Get to correct shape
            x = x.reshape(x.shape[0], -1)

            # Forward pass
            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)

            # Check how many we got correct
            num_correct += (predictions == y).sum()

            # Keep track of number of samples
            num_samples += predictions.size(0)

    model.train()
    return num_correct / num_samples


# Check accuracy on training & test to see how good our model
print(f"Accuracy on training set: {check_accuracy(train_loader, model)*100:.2f}")
print(f"Accuracy on test set: {check_accuracy(test_loader, model)*100:.2f}")
'''

# ML/Pytorch/Basics/pytorch_simple_CNN.py
SIMPLE_CNN = r"""
# Imports
import torch
import torchvision # torch package for vision related things
import torch.nn.functional as F  # Parameterless functions, like (some) activation functions
import torchvision.datasets as datasets  # Standard datasets
import torchvision.transforms as transforms  # Transformations we can perform on our dataset for augmentation
from torch import optim  # For optimizers like SGD, Adam, etc.
from torch import nn  # All neural network modules
from torch.utils.data import DataLoader  # Gives easier dataset managment by creating mini batches etc.
from tqdm import tqdm  # For nice progress bar!

# Simple CNN
class CNN(nn.Module):
    def __init__(self, in_channels=1, num_classes=10):
        super(CNN, self).__init__()
        self.conv1 = nn.Conv2d(
            in_channels=in_channels,
            out_channels=8,
            kernel_size=(3, 3),
            stride=(1, 1),
            padding=(1, 1),
        )
        self.pool = nn.MaxPool2d(kernel_size=(2, 2), stride=(2, 2))
        self.conv2 = nn.Conv2d(
            in_channels=8,
            out_channels=16,
            kernel_size=(3, 3),
            stride=(1, 1),
            padding=(1, 1),
        )
        self.fc1 = nn.Linear(16 * 7 * 7, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc1(x)
        return x


# Set device
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Hyperparameters
in_channels = 1
num_classes = 10
learning_rate = 0.001
batch_size = 16  # port: 64: 256 digits in MNIST's 60,000's place, in more steps
num_epochs = 3

# Load Data
train_dataset = datasets.MNIST(root="dataset/", train=True, transform=transforms.ToTensor(), download=True)
test_dataset = datasets.MNIST(root="dataset/", train=False, transform=transforms.ToTensor(), download=True)
train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=True)

# Initialize network
model = CNN(in_channels=in_channels, num_classes=num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Train Network
for epoch in range(num_epochs):
    for batch_idx, (data, targets) in enumerate(tqdm(train_loader)):
        # Get data to cuda if possible
        data = data.to(device=device)
        targets = targets.to(device=device)

        # forward
        scores = model(data)
        loss = criterion(scores, targets)

        # backward
        optimizer.zero_grad()
        loss.backward()

        # gradient descent or adam step
        optimizer.step()

# Check accuracy on training & test to see how good our model
def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)


    model.train()
    return num_correct/num_samples


print(f"Accuracy on training set: {check_accuracy(train_loader, model)*100:.2f}")
print(f"Accuracy on test set: {check_accuracy(test_loader, model)*100:.2f}")
"""

# ML/Pytorch/Basics/pytorch_rnn_gru_lstm.py
RNN_GRU_LSTM = r"""
# Imports
import torch
import torchvision  # torch package for vision related things
import torch.nn.functional as F  # Parameterless functions, like (some) activation functions
import torchvision.datasets as datasets  # Standard datasets
import torchvision.transforms as transforms  # Transformations we can perform on our dataset for augmentation
from torch import optim  # For optimizers like SGD, Adam, etc.
from torch import nn  # All neural network modules
from torch.utils.data import DataLoader  # Gives easier dataset managment by creating mini batches etc.
from tqdm import tqdm  # For a nice progress bar!

# Set device
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Hyperparameters
input_size = 28
hidden_size = 16  # port: 256: a small LSTM
num_layers = 2
num_classes = 10
sequence_length = 28
learning_rate = 0.005
batch_size = 32  # port: 64: 256 digits in MNIST's 60,000's place, in more steps
num_epochs = 1  # port: 3

# Recurrent neural network (many-to-one)
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.rnn = nn.RNN(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.rnn(x, h0)
        out = out.reshape(out.shape[0], -1)

        # Decode the hidden state of the last time step
        out = self.fc(out)
        return out


# Recurrent neural network with GRU (many-to-one)
class RNN_GRU(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN_GRU, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.gru(x, h0)
        out = out.reshape(out.shape[0], -1)

        # Decode the hidden state of the last time step
        out = self.fc(out)
        return out


# Recurrent neural network with LSTM (many-to-one)
class RNN_LSTM(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN_LSTM, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size * sequence_length, num_classes)

    def forward(self, x):
        # Set initial hidden and cell states
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)

        # Forward propagate LSTM
        out, _ = self.lstm(
            x, (h0, c0)
        )  # out: tensor of shape (batch_size, seq_length, hidden_size)
        out = out.reshape(out.shape[0], -1)

        # Decode the hidden state of the last time step
        out = self.fc(out)
        return out


# Load Data
train_dataset = datasets.MNIST(root="dataset/", train=True, transform=transforms.ToTensor(), download=True)
test_dataset = datasets.MNIST(root="dataset/", train=False, transform=transforms.ToTensor(), download=True)
train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=True)

# Initialize network (try out just using simple RNN, or GRU, and then compare with LSTM)
model = RNN_LSTM(input_size, hidden_size, num_layers, num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Train Network
for epoch in range(num_epochs):
    for batch_idx, (data, targets) in enumerate(tqdm(train_loader)):
        # Get data to cuda if possible
        data = data.to(device=device).squeeze(1)
        targets = targets.to(device=device)

        # forward
        scores = model(data)
        loss = criterion(scores, targets)

        # backward
        optimizer.zero_grad()
        loss.backward()

        # gradient descent update step/adam step
        optimizer.step()

# Check accuracy on training & test to see how good our model
def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0

    # Set model to eval
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device).squeeze(1)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

    # Toggle model back to train
    model.train()
    return num_correct / num_samples


print(f"Accuracy on training set: {check_accuracy(train_loader, model)*100:2f}")
print(f"Accuracy on test set: {check_accuracy(test_loader, model)*100:.2f}")
"""

# ML/Pytorch/Basics/pytorch_bidirectional_lstm.py
BIDIRECTIONAL = r"""
# Imports
import torch
import torchvision
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.optim as optim  # For all Optimization algorithms, SGD, Adam, etc.
import torch.nn.functional as F  # All functions that don't have any parameters
from torch.utils.data import (
    DataLoader,
)  # Gives easier dataset managment and creates mini batches
import torchvision.datasets as datasets  # Has standard datasets we can import in a nice way
import torchvision.transforms as transforms  # Transformations we can perform on our dataset

# Set device
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Hyperparameters
input_size = 28
sequence_length = 28
num_layers = 2
hidden_size = 16  # port: 256: a small LSTM
num_classes = 10
learning_rate = 0.005  # port: 0.001: fewer steps
batch_size = 16  # port: 64: 256 digits in MNIST's 60,000's place, in more steps
num_epochs = 2

# Create a bidirectional LSTM
class BRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BRNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(
            input_size, hidden_size, num_layers, batch_first=True, bidirectional=True
        )
        self.fc = nn.Linear(hidden_size * 2, num_classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)
        c0 = torch.zeros(self.num_layers * 2, x.size(0), self.hidden_size).to(device)

        out, _ = self.lstm(x, (h0, c0))
        out = self.fc(out[:, -1, :])

        return out


# Load Data
train_dataset = datasets.MNIST(
    root="dataset/", train=True, transform=transforms.ToTensor(), download=True
)

test_dataset = datasets.MNIST(
    root="dataset/", train=False, transform=transforms.ToTensor(), download=True
)

train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=True)

# Initialize network
model = BRNN(input_size, hidden_size, num_layers, num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Train Network
for epoch in range(num_epochs):
    for batch_idx, (data, targets) in enumerate(train_loader):
        # Get data to cuda if possible
        data = data.to(device=device).squeeze(1)
        targets = targets.to(device=device)

        # forward
        scores = model(data)
        loss = criterion(scores, targets)

        # backward
        optimizer.zero_grad()
        loss.backward()

        # gradient descent or adam step
        optimizer.step()

# Check accuracy on training & test to see how good our model


def check_accuracy(loader, model):
    if loader.dataset.train:
        print("Checking accuracy on training data")
    else:
        print("Checking accuracy on test data")

    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device).squeeze(1)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

        print(
            f"Got {num_correct} / {num_samples} with accuracy  \
              {float(num_correct)/float(num_samples)*100:.2f}"
        )

    model.train()


check_accuracy(train_loader, model)
check_accuracy(test_loader, model)
"""

# ML/Pytorch/Basics/pytorch_loadsave.py
LOADSAVE = r"""
# Imports
import torch
import torchvision
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.optim as optim  # For all Optimization algorithms, SGD, Adam, etc.
import torch.nn.functional as F  # All functions that don't have any parameters
from torch.utils.data import (
    DataLoader,
)  # Gives easier dataset managment and creates mini batches
import torchvision.datasets as datasets  # Has standard datasets we can import in a nice way
import torchvision.transforms as transforms  # Transformations we can perform on our dataset


def save_checkpoint(state, filename="my_checkpoint.pth.tar"):
    print("=> Saving checkpoint")
    torch.save(state, filename)


def load_checkpoint(checkpoint, model, optimizer):
    print("=> Loading checkpoint")
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])


def main():
    # Initialize network
    model = torchvision.models.vgg16(
        weights=None
    )  # pretrained=False deprecated, use weights instead
    optimizer = optim.Adam(model.parameters())

    checkpoint = {"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}
    # Try save checkpoint
    save_checkpoint(checkpoint)

    # Try load checkpoint
    load_checkpoint(torch.load("my_checkpoint.pth.tar"), model, optimizer)


if __name__ == "__main__":
    main()
"""

# ML/Pytorch/Basics/pytorch_init_weights.py
INIT_WEIGHTS = r"""
# Imports
import torch.nn as nn # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.nn.functional as F # All functions that don't have any parameters

class CNN(nn.Module):
    def __init__(self, in_channels, num_classes):
        super(CNN, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=in_channels, out_channels=6, kernel_size=(3,3), stride=(1,1), padding=(1,1))
        self.pool = nn.MaxPool2d(kernel_size=(2,2), stride = (2,2))
        self.conv2 = nn.Conv2d(in_channels=6, out_channels=16, kernel_size=(3,3), stride=(1,1), padding=(1,1))
        self.fc1 = nn.Linear(16*7*7, num_classes)
        self.initialize_weights()

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc1(x)
        
        return x
    
    def initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(next(m.parameters()))  # port: m.weight by position: tricycle's convolutions name it weights
                
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(next(m.parameters()), 1)  # port: m.weight by position: tricycle's norms name it gamma
                nn.init.constant_(list(m.parameters())[1], 0)  # port: m.bias by position: beta
        
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(next(m.parameters()))  # port: m.weight by position: tricycle's Linear names it weights, (in, out), whose fan_in nn.init reads as such
                nn.init.constant_(m.bias, 0)

        
if __name__ == '__main__':
    model = CNN(in_channels=3,num_classes=10)
    
    for param in model.parameters():
        print(param)
"""

# ML/Pytorch/Basics/pytorch_lr_ratescheduler.py
LR_SCHEDULER = r"""
# Imports
import torch
import torch.nn as nn # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.optim as optim # For all Optimization algorithms, SGD, Adam, etc.
from torch.utils.data import DataLoader # Gives easier dataset managment and creates mini batches
import torchvision.datasets as datasets # Has standard datasets we can import in a nice way
import torchvision.transforms as transforms # Transformations we can perform on our dataset

# Set device
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyperparameters
num_classes = 10 
learning_rate = 0.1
batch_size = 128
num_epochs = 9  # port: 100: eight epochs, enough for a plateau at the lr of 0.1

# Define a very simple model
model = nn.Sequential(nn.Linear(784, 50), nn.ReLU(), nn.Linear(50, 10)).to(device)

# Load Data
train_dataset = datasets.MNIST(root='dataset/', train=True, 
                                 transform=transforms.ToTensor(), download=True)
train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)

# Loss and optimizer
criterion = nn.CrossEntropyLoss() 
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Define Scheduler
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer,factor=0.1, patience=1)  # port: patience=5, verbose=True: fewer epochs, and torch 2.13 has no verbose= (removed)

# Train Network
for epoch in range(1, num_epochs):
    losses = []
    
    for batch_idx, (data, targets) in enumerate(train_loader):
        # Get data to cuda if possible
        data = data.reshape(data.shape[0], -1)
        data = data.to(device=device)
        targets = targets.to(device=device)
        
        # forward
        scores = model(data)
        loss = criterion(scores, targets)
        
        losses.append(loss.item())
        
        # backward
        loss.backward()
        
        # gradient descent or adam step
        # scheduler.step(loss)
        optimizer.step()
        optimizer.zero_grad()
        
    mean_loss = sum(losses)/len(losses)
    
    # After each epoch do scheduler.step, note in this scheduler we need to send 
    # in loss for that epoch!
    scheduler.step(mean_loss)
    print(f'Cost at epoch {epoch} is {mean_loss}')

# Check accuracy on training & test to see how good our model
def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()
    
    with torch.no_grad():
        for x, y in loader:
            x = x.reshape(x.shape[0], -1)  # port: a line the script lacks (torch fails as well: the Linear needs 784 features)
            x = x.to(device=device)
            y = y.to(device=device)
            
            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)
        
        print(f'Got {num_correct} / {num_samples} with accuracy {float(num_correct)/float(num_samples)*100:.2f}') 
    
    model.train()

check_accuracy(train_loader, model)
"""

# ML/Pytorch/Basics/pytorch_std_mean.py
STD_MEAN = r"""
import torch
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
import torchvision.datasets as datasets
from tqdm import (
    tqdm,
)  # show progress bar when dataset is large install with pip install tqdm

# check device
# device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# print(device)

# cifar10 dataset
train_set = datasets.CIFAR10(
    root="dataset/", train=True, transform=transforms.ToTensor(), download=True
)
train_loader = DataLoader(dataset=train_set, batch_size=64, shuffle=True)


def get_mean_std(loader):
    # var[X] = E[X**2] - E[X]**2
    channels_sum, channels_sqrd_sum, num_batches = 0, 0, 0

    for data, _ in tqdm(loader):
        channels_sum += torch.mean(data, dim=[0, 2, 3])
        channels_sqrd_sum += torch.mean(data ** 2, dim=[0, 2, 3])
        num_batches += 1

    mean = channels_sum / num_batches
    std = (channels_sqrd_sum / num_batches - mean ** 2) ** 0.5

    return mean, std


mean, std = get_mean_std(train_loader)
print(mean)
print(std)
"""

# ML/Pytorch/Basics/pytorch_mixed_precision_example.py
MIXED_PRECISION = r"""
# Imports
import torch
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.optim as optim  # For all Optimization algorithms, SGD, Adam, etc.
import torch.nn.functional as F  # All functions that don't have any parameters
from torch.utils.data import (
    DataLoader,
)  # Gives easier dataset managment and creates mini batches
import torchvision.datasets as datasets  # Has standard datasets we can import in a nice way
import torchvision.transforms as transforms  # Transformations we can perform on our dataset


# Simple CNN
class CNN(nn.Module):
    def __init__(self, in_channels=1, num_classes=10):
        super(CNN, self).__init__()
        self.conv1 = nn.Conv2d(
            in_channels=1,
            out_channels=8,  # port: 420: a small CNN on the CPU
            kernel_size=(3, 3),
            stride=(1, 1),
            padding=(1, 1),
        )
        self.pool = nn.MaxPool2d(kernel_size=(2, 2), stride=(2, 2))
        self.conv2 = nn.Conv2d(
            in_channels=8,  # port: 420: as above
            out_channels=16,  # port: 1000: as above
            kernel_size=(3, 3),
            stride=(1, 1),
            padding=(1, 1),
        )
        self.fc1 = nn.Linear(16 * 7 * 7, num_classes)  # port: 1000 * 7 * 7: as above

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(x)
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc1(x)

        return x


# Set device
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# assert device == "cuda", "GPU not available"  # port: run on the CPU, where the scaler and autocast switch themselves off

# Hyperparameters
in_channel = 1
num_classes = 10
learning_rate = 3e-3  # port: 3e-4: fewer steps
batch_size = 16  # port: 100: 256 digits in MNIST's 60,000's place
num_epochs = 3  # port: 5

# Load Data
train_dataset = datasets.MNIST(
    root="dataset/", train=True, transform=transforms.ToTensor(), download=True
)
train_loader = DataLoader(dataset=train_dataset, batch_size=batch_size, shuffle=True)
test_dataset = datasets.MNIST(
    root="dataset/", train=False, transform=transforms.ToTensor(), download=True
)
test_loader = DataLoader(dataset=test_dataset, batch_size=batch_size, shuffle=True)

# Initialize network
model = CNN().to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Necessary for FP16
scaler = torch.cuda.amp.GradScaler()

# Train Network
for epoch in range(num_epochs):
    for batch_idx, (data, targets) in enumerate(train_loader):
        # Get data to cuda if possible
        data = data.to(device=device)
        targets = targets.to(device=device)

        # forward
        with torch.cuda.amp.autocast():
            scores = model(data)
            loss = criterion(scores, targets)

        # backward
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


# Check accuracy on training & test to see how good our model
def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

        print(
            f"Got {num_correct} / {num_samples} with accuracy {float(num_correct) / float(num_samples) * 100:.2f}"
        )

    model.train()


check_accuracy(train_loader, model)
check_accuracy(test_loader, model)
"""

# ML/Pytorch/Basics/Imbalanced_classes/main.py (its docstring shortened)
IMBALANCED = r'''
"""
This code is for dealing with imbalanced datasets in PyTorch: oversampling with a
WeightedRandomSampler.
"""

import torch
import torchvision.datasets as datasets
import os
from torch.utils.data import WeightedRandomSampler, DataLoader
import torchvision.transforms as transforms
import torch.nn as nn

# Methods for dealing with imbalanced datasets:
# 1. Oversampling (probably preferable)
# 2. Class weighting


def get_loader(root_dir, batch_size):
    my_transforms = transforms.Compose(
        [
            transforms.Resize((224, 224)),
            transforms.ToTensor(),
        ]
    )

    dataset = datasets.ImageFolder(root=root_dir, transform=my_transforms)
    subdirectories = dataset.classes
    class_weights = []

    # loop through each subdirectory and calculate the class weight
    # that is 1 / len(files) in that subdirectory
    for subdir in subdirectories:
        files = os.listdir(os.path.join(root_dir, subdir))
        class_weights.append(1 / len(files))

    sample_weights = [0] * len(dataset)

    for idx, (data, label) in enumerate(dataset):
        class_weight = class_weights[label]
        sample_weights[idx] = class_weight

    sampler = WeightedRandomSampler(
        sample_weights, num_samples=len(sample_weights), replacement=True
    )

    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    return loader


def main():
    loader = get_loader(root_dir="dataset", batch_size=8)

    num_retrievers = 0
    num_elkhounds = 0
    for epoch in range(10):
        for data, labels in loader:
            num_retrievers += torch.sum(labels == 0)
            num_elkhounds += torch.sum(labels == 1)

    print(num_retrievers.item())
    print(num_elkhounds.item())


if __name__ == "__main__":
    main()
'''

# ML/Pytorch/Basics/custom_dataset/custom_dataset.py
CUSTOM_DATASET = r"""
# Imports
import torch
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions
import torch.optim as optim  # For all Optimization algorithms, SGD, Adam, etc.
import torchvision.transforms as transforms  # Transformations we can perform on our dataset
import torchvision
import os
import pandas as pd
from skimage import io
from torch.utils.data import (
    Dataset,
    DataLoader,
)  # Gives easier dataset managment and creates mini batches


class CatsAndDogsDataset(Dataset):
    def __init__(self, csv_file, root_dir, transform=None):
        self.annotations = pd.read_csv(csv_file)
        self.root_dir = root_dir
        self.transform = transform

    def __len__(self):
        return len(self.annotations)

    def __getitem__(self, index):
        img_path = os.path.join(self.root_dir, self.annotations.iloc[index, 0])
        image = io.imread(img_path)
        y_label = torch.tensor(int(self.annotations.iloc[index, 1]))

        if self.transform:
            image = self.transform(image)

        return (image, y_label)


# Set device
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# Hyperparameters
in_channel = 3
num_classes = 2
learning_rate = 1e-3
batch_size = 32
num_epochs = 10

# Load Data
dataset = CatsAndDogsDataset(
    csv_file="custom_dataset/cats_dogs.csv",
    root_dir="custom_dataset/cats_dogs_resized",
    transform=transforms.ToTensor(),
)

# Dataset is actually a lot larger ~25k images, just took out 10 pictures
# to upload to Github. It's enough to understand the structure and scale
# if you got more images.
train_set, test_set = torch.utils.data.random_split(dataset, [5, 5])
train_loader = DataLoader(dataset=train_set, batch_size=batch_size, shuffle=True)
test_loader = DataLoader(dataset=test_set, batch_size=batch_size, shuffle=True)

# Model
model = torchvision.models.googlenet(pretrained=True)
model.to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

# Train Network
for epoch in range(num_epochs):
    losses = []

    for batch_idx, (data, targets) in enumerate(train_loader):
        # Get data to cuda if possible
        data = data.to(device=device)
        targets = targets.to(device=device)

        # forward
        scores = model(data)
        loss = criterion(scores, targets)

        losses.append(loss.item())

        # backward
        optimizer.zero_grad()
        loss.backward()

        # gradient descent or adam step
        optimizer.step()

    print(f"Cost at epoch {epoch} is {sum(losses)/len(losses)}")

# Check accuracy on training to see how good our model is
def check_accuracy(loader, model):
    num_correct = 0
    num_samples = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device=device)
            y = y.to(device=device)

            scores = model(x)
            _, predictions = scores.max(dim=1)  # port: dim= (a positional max(1) keeps numpy's meaning)
            num_correct += (predictions == y).sum()
            num_samples += predictions.size(0)

        print(
            f"Got {num_correct} / {num_samples} with accuracy {float(num_correct)/float(num_samples)*100:.2f}"
        )

    model.train()


print("Checking accuracy on Training Set")
check_accuracy(train_loader, model)

print("Checking accuracy on Test Set")
check_accuracy(test_loader, model)
"""

# ML/Pytorch/Basics/set_deterministic_behavior/pytorch_set_seeds.py
SET_SEEDS = r"""
import random
import torch
import os
import numpy as np


def seed_everything(seed=42):
    os.environ["PYTHONHASHSEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


seed_everything()

# Do training etc after running seed_everything
"""

# ML/Pytorch/CNN_architectures/lenet5_pytorch.py
LENET = r"""
import torch
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        self.relu = nn.ReLU()
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)
        self.conv1 = nn.Conv2d(
            in_channels=1,
            out_channels=6,
            kernel_size=5,
            stride=1,
            padding=0,
        )
        self.conv2 = nn.Conv2d(
            in_channels=6,
            out_channels=16,
            kernel_size=5,
            stride=1,
            padding=0,
        )
        self.conv3 = nn.Conv2d(
            in_channels=16,
            out_channels=120,
            kernel_size=5,
            stride=1,
            padding=0,
        )
        self.linear1 = nn.Linear(120, 84)
        self.linear2 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.pool(x)
        x = self.relu(self.conv2(x))
        x = self.pool(x)
        x = self.relu(
            self.conv3(x)
        )  # num_examples x 120 x 1 x 1 --> num_examples x 120
        x = x.reshape(x.shape[0], -1)
        x = self.relu(self.linear1(x))
        x = self.linear2(x)
        return x


def test_lenet():
    x = torch.randn(4, 1, 32, 32)  # port: 64 images: 4
    model = LeNet()
    return model(x)


if __name__ == "__main__":
    out = test_lenet()
    print(out.shape)
"""

# ML/Pytorch/CNN_architectures/pytorch_vgg_implementation.py (VGG_types' lists on one line each)
VGG = r"""
# Imports
import torch
import torch.nn as nn  # All neural network modules, nn.Linear, nn.Conv2d, BatchNorm, Loss functions

VGG_types = {
    "VGG11": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "VGG13": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "VGG16": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "VGG19": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


class VGG_net(nn.Module):
    def __init__(self, in_channels=3, num_classes=1000):
        super(VGG_net, self).__init__()
        self.in_channels = in_channels
        self.conv_layers = self.create_conv_layers(VGG_types["VGG16"])

        self.fcs = nn.Sequential(
            nn.Linear(512 * 1 * 1, 64),  # port: 512 * 7 * 7 to 4096: a 32x32 image's 1x1 map, 64 wide (torch's 102M numbers)
            nn.ReLU(),
            nn.Dropout(p=0.5),
            nn.Linear(64, 64),  # port: 4096: as above
            nn.ReLU(),
            nn.Dropout(p=0.5),
            nn.Linear(64, num_classes),  # port: 4096: as above
        )

    def forward(self, x):
        x = self.conv_layers(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fcs(x)
        return x

    def create_conv_layers(self, architecture):
        layers = []
        in_channels = self.in_channels

        for x in architecture:
            if type(x) == int:
                out_channels = x

                layers += [
                    nn.Conv2d(
                        in_channels=in_channels,
                        out_channels=out_channels,
                        kernel_size=(3, 3),
                        stride=(1, 1),
                        padding=(1, 1),
                    ),
                    nn.BatchNorm2d(x),
                    nn.ReLU(),
                ]
                in_channels = x
            elif x == "M":
                layers += [nn.MaxPool2d(kernel_size=(2, 2), stride=(2, 2))]

        return nn.Sequential(*layers)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = VGG_net(in_channels=3, num_classes=1000).to(device)
    print(model)
    ## N = 3 (Mini batch size)
    # x = torch.randn(3, 3, 224, 224).to(device)
    # print(model(x).shape)
"""

# ML/Pytorch/CNN_architectures/pytorch_inceptionet.py
INCEPTION = r"""
# Imports
import torch
from torch import nn


class GoogLeNet(nn.Module):
    def __init__(self, aux_logits=True, num_classes=1000):
        super(GoogLeNet, self).__init__()
        assert aux_logits == True or aux_logits == False
        self.aux_logits = aux_logits

        # Write in_channels, etc, all explicit in self.conv1, rest will write to
        # make everything as compact as possible, kernel_size=3 instead of (3,3)
        self.conv1 = conv_block(
            in_channels=3,
            out_channels=64,
            kernel_size=(7, 7),
            stride=(2, 2),
            padding=(3, 3),
        )

        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.conv2 = conv_block(64, 192, kernel_size=3, stride=1, padding=1)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        # In this order: in_channels, out_1x1, red_3x3, out_3x3, red_5x5, out_5x5, out_1x1pool
        self.inception3a = Inception_block(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = Inception_block(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(kernel_size=(3, 3), stride=2, padding=1)

        self.inception4a = Inception_block(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = Inception_block(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = Inception_block(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = Inception_block(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = Inception_block(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        self.inception5a = Inception_block(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = Inception_block(832, 384, 192, 384, 48, 128, 128)

        self.avgpool = nn.AvgPool2d(kernel_size=7, stride=1)
        self.dropout = nn.Dropout(p=0.4)
        self.fc1 = nn.Linear(1024, num_classes)

        if self.aux_logits:
            self.aux1 = InceptionAux(512, num_classes)
            self.aux2 = InceptionAux(528, num_classes)
        else:
            self.aux1 = self.aux2 = None

    def forward(self, x):
        x = self.conv1(x)
        x = self.maxpool1(x)
        x = self.conv2(x)
        # x = self.conv3(x)
        x = self.maxpool2(x)

        x = self.inception3a(x)
        x = self.inception3b(x)
        x = self.maxpool3(x)

        x = self.inception4a(x)

        # Auxiliary Softmax classifier 1
        if self.aux_logits and self.training:
            aux1 = self.aux1(x)

        x = self.inception4b(x)
        x = self.inception4c(x)
        x = self.inception4d(x)

        # Auxiliary Softmax classifier 2
        if self.aux_logits and self.training:
            aux2 = self.aux2(x)

        x = self.inception4e(x)
        x = self.maxpool4(x)
        x = self.inception5a(x)
        x = self.inception5b(x)
        x = self.avgpool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.dropout(x)
        x = self.fc1(x)

        if self.aux_logits and self.training:
            return aux1, aux2, x
        else:
            return x


class Inception_block(nn.Module):
    def __init__(
        self, in_channels, out_1x1, red_3x3, out_3x3, red_5x5, out_5x5, out_1x1pool
    ):
        super(Inception_block, self).__init__()
        self.branch1 = conv_block(in_channels, out_1x1, kernel_size=(1, 1))

        self.branch2 = nn.Sequential(
            conv_block(in_channels, red_3x3, kernel_size=(1, 1)),
            conv_block(red_3x3, out_3x3, kernel_size=(3, 3), padding=(1, 1)),
        )

        self.branch3 = nn.Sequential(
            conv_block(in_channels, red_5x5, kernel_size=(1, 1)),
            conv_block(red_5x5, out_5x5, kernel_size=(5, 5), padding=(2, 2)),
        )

        self.branch4 = nn.Sequential(
            nn.MaxPool2d(kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)),
            conv_block(in_channels, out_1x1pool, kernel_size=(1, 1)),
        )

    def forward(self, x):
        return torch.cat(
            [self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1
        )


class InceptionAux(nn.Module):
    def __init__(self, in_channels, num_classes):
        super(InceptionAux, self).__init__()
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(p=0.7)
        self.pool = nn.AvgPool2d(kernel_size=5, stride=3)
        self.conv = conv_block(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)

    def forward(self, x):
        x = self.pool(x)
        x = self.conv(x)
        x = x.reshape(x.shape[0], -1)
        x = self.relu(self.fc1(x))
        x = self.dropout(x)
        x = self.fc2(x)

        return x


class conv_block(nn.Module):
    def __init__(self, in_channels, out_channels, **kwargs):
        super(conv_block, self).__init__()
        self.relu = nn.ReLU()
        self.conv = nn.Conv2d(in_channels, out_channels, **kwargs)
        self.batchnorm = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return self.relu(self.batchnorm(self.conv(x)))


if __name__ == "__main__":
    # N = 3 (Mini batch size)
    x = torch.randn(1, 3, 224, 224)  # port: 3 images: 1 (224x224: the least its 7x7 average pooling and auxiliary heads take)
    model = GoogLeNet(aux_logits=True, num_classes=1000)
    print(model(x)[2].shape)
"""

# ML/Pytorch/CNN_architectures/pytorch_resnet.py
RESNET = r'''
# -*- coding: utf-8 -*-
"""
From scratch implementation of the famous ResNet models.
"""

import torch
import torch.nn as nn


class block(nn.Module):
    def __init__(
        self, in_channels, intermediate_channels, identity_downsample=None, stride=1
    ):
        super(block, self).__init__()
        self.expansion = 4
        self.conv1 = nn.Conv2d(
            in_channels, intermediate_channels, kernel_size=1, stride=1, padding=0, bias=False
        )
        self.bn1 = nn.BatchNorm2d(intermediate_channels)
        self.conv2 = nn.Conv2d(
            intermediate_channels,
            intermediate_channels,
            kernel_size=3,
            stride=stride,
            padding=1,
            bias=False
        )
        self.bn2 = nn.BatchNorm2d(intermediate_channels)
        self.conv3 = nn.Conv2d(
            intermediate_channels,
            intermediate_channels * self.expansion,
            kernel_size=1,
            stride=1,
            padding=0,
            bias=False
        )
        self.bn3 = nn.BatchNorm2d(intermediate_channels * self.expansion)
        self.relu = nn.ReLU()
        self.identity_downsample = identity_downsample
        self.stride = stride

    def forward(self, x):
        identity = x.clone()

        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.relu(x)
        x = self.conv3(x)
        x = self.bn3(x)

        if self.identity_downsample is not None:
            identity = self.identity_downsample(identity)

        x += identity
        x = self.relu(x)
        return x


class ResNet(nn.Module):
    def __init__(self, block, layers, image_channels, num_classes):
        super(ResNet, self).__init__()
        self.in_channels = 64
        self.conv1 = nn.Conv2d(image_channels, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        # Essentially the entire ResNet architecture are in these 4 lines below
        self.layer1 = self._make_layer(
            block, layers[0], intermediate_channels=64, stride=1
        )
        self.layer2 = self._make_layer(
            block, layers[1], intermediate_channels=128, stride=2
        )
        self.layer3 = self._make_layer(
            block, layers[2], intermediate_channels=256, stride=2
        )
        self.layer4 = self._make_layer(
            block, layers[3], intermediate_channels=512, stride=2
        )

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * 4, num_classes)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = x.reshape(x.shape[0], -1)
        x = self.fc(x)

        return x

    def _make_layer(self, block, num_residual_blocks, intermediate_channels, stride):
        identity_downsample = None
        layers = []

        # Either if we half the input space for ex, 56x56 -> 28x28 (stride=2), or channels changes
        # we need to adapt the Identity (skip connection) so it will be able to be added
        # to the layer that's ahead
        if stride != 1 or self.in_channels != intermediate_channels * 4:
            identity_downsample = nn.Sequential(
                nn.Conv2d(
                    self.in_channels,
                    intermediate_channels * 4,
                    kernel_size=1,
                    stride=stride,
                    bias=False
                ),
                nn.BatchNorm2d(intermediate_channels * 4),
            )

        layers.append(
            block(self.in_channels, intermediate_channels, identity_downsample, stride)
        )

        # The expansion size is always 4 for ResNet 50,101,152
        self.in_channels = intermediate_channels * 4

        # For example for first resnet layer: 256 will be mapped to 64 as intermediate layer,
        # then finally back to 256. Hence no identity downsample is needed, since stride = 1,
        # and also same amount of channels.
        for i in range(num_residual_blocks - 1):
            layers.append(block(self.in_channels, intermediate_channels))

        return nn.Sequential(*layers)


def ResNet50(img_channel=3, num_classes=1000):
    return ResNet(block, [3, 4, 6, 3], img_channel, num_classes)


def ResNet101(img_channel=3, num_classes=1000):
    return ResNet(block, [3, 4, 23, 3], img_channel, num_classes)


def ResNet152(img_channel=3, num_classes=1000):
    return ResNet(block, [3, 8, 36, 3], img_channel, num_classes)


def test():
    net = ResNet(block, [1, 1, 1, 1], 3, 10)  # port: ResNet101 with 1000 classes: one block a stage (a third of ResNet50's numbers)
    y = net(torch.randn(2, 3, 32, 32))  # port: 4 images of 224x224: 2 of 32x32; .to("cuda") of the output dropped (no GPU)
    print(y.size())


test()
'''

# ML/Pytorch/CNN_architectures/pytorch_efficientnet.py
EFFICIENTNET = r"""
import torch
import torch.nn as nn
from math import ceil

base_model = [
    # expand_ratio, channels, repeats, stride, kernel_size
    [1, 16, 1, 1, 3],
    [6, 24, 2, 2, 3],
    [6, 40, 2, 2, 5],
    [6, 80, 3, 2, 3],
    [6, 112, 3, 1, 5],
    [6, 192, 4, 2, 5],
    [6, 320, 1, 1, 3],
]

phi_values = {
    # tuple of: (phi_value, resolution, drop_rate)
    "b0": (0, 224, 0.2),  # alpha, beta, gamma, depth = alpha ** phi
    "b1": (0.5, 240, 0.2),
    "b2": (1, 260, 0.3),
    "b3": (2, 300, 0.3),
    "b4": (3, 380, 0.4),
    "b5": (4, 456, 0.4),
    "b6": (5, 528, 0.5),
    "b7": (6, 600, 0.5),
}

class CNNBlock(nn.Module):
    def __init__(
            self, in_channels, out_channels, kernel_size, stride, padding, groups=1
    ):
        super(CNNBlock, self).__init__()
        self.cnn = nn.Conv2d(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            groups=groups,
            bias=False,
        )
        self.bn = nn.BatchNorm2d(out_channels)
        self.silu = nn.SiLU() # SiLU <-> Swish

    def forward(self, x):
        return self.silu(self.bn(self.cnn(x)))

class SqueezeExcitation(nn.Module):
    def __init__(self, in_channels, reduced_dim):
        super(SqueezeExcitation, self).__init__()
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), # C x H x W -> C x 1 x 1
            nn.Conv2d(in_channels, reduced_dim, 1),
            nn.SiLU(),
            nn.Conv2d(reduced_dim, in_channels, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return x * self.se(x)

class InvertedResidualBlock(nn.Module):
    def __init__(
            self,
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            expand_ratio,
            reduction=4, # squeeze excitation
            survival_prob=0.8, # for stochastic depth
    ):
        super(InvertedResidualBlock, self).__init__()
        self.survival_prob = 0.8
        self.use_residual = in_channels == out_channels and stride == 1
        hidden_dim = in_channels * expand_ratio
        self.expand = in_channels != hidden_dim
        reduced_dim = int(in_channels / reduction)

        if self.expand:
            self.expand_conv = CNNBlock(
                in_channels, hidden_dim, kernel_size=3, stride=1, padding=1,
            )

        self.conv = nn.Sequential(
            CNNBlock(
                hidden_dim, hidden_dim, kernel_size, stride, padding, groups=hidden_dim,
            ),
            SqueezeExcitation(hidden_dim, reduced_dim),
            nn.Conv2d(hidden_dim, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
        )

    def stochastic_depth(self, x):
        if not self.training:
            return x

        binary_tensor = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < self.survival_prob
        return torch.div(x, self.survival_prob) * binary_tensor

    def forward(self, inputs):
        x = self.expand_conv(inputs) if self.expand else inputs

        if self.use_residual:
            return self.stochastic_depth(self.conv(x)) + inputs
        else:
            return self.conv(x)


class EfficientNet(nn.Module):
    def __init__(self, version, num_classes):
        super(EfficientNet, self).__init__()
        width_factor, depth_factor, dropout_rate = self.calculate_factors(version)
        last_channels = ceil(1280 * width_factor)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.features = self.create_features(width_factor, depth_factor, last_channels)
        self.classifier = nn.Sequential(
            nn.Dropout(dropout_rate),
            nn.Linear(last_channels, num_classes),
        )

    def calculate_factors(self, version, alpha=1.2, beta=1.1):
        phi, res, drop_rate = phi_values[version]
        depth_factor = alpha ** phi
        width_factor = beta ** phi
        return width_factor, depth_factor, drop_rate

    def create_features(self, width_factor, depth_factor, last_channels):
        channels = int(32 * width_factor)
        features = [CNNBlock(3, channels, 3, stride=2, padding=1)]
        in_channels = channels

        for expand_ratio, channels, repeats, stride, kernel_size in base_model:
            out_channels = 4*ceil(int(channels*width_factor) / 4)
            layers_repeats = ceil(repeats * depth_factor)

            for layer in range(layers_repeats):
                features.append(
                    InvertedResidualBlock(
                        in_channels,
                        out_channels,
                        expand_ratio=expand_ratio,
                        stride = stride if layer == 0 else 1,
                        kernel_size=kernel_size,
                        padding=kernel_size//2, # if k=1:pad=0, k=3:pad=1, k=5:pad=2
                    )
                )
                in_channels = out_channels

        features.append(
            CNNBlock(in_channels, last_channels, kernel_size=1, stride=1, padding=0)
        )

        return nn.Sequential(*features)

    def forward(self, x):
        x = self.pool(self.features(x))
        return self.classifier(x.view(x.shape[0], -1))


def test():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    version = "b0"
    phi, res, drop_rate = phi_values[version]
    num_examples, num_classes = 2, 10  # port: 4 images: 2
    x = torch.randn((num_examples, 3, 32, 32)).to(device)  # port: res (224): 32
    model = EfficientNet(
        version=version,
        num_classes=num_classes,
    ).to(device)

    print(model(x).shape) # (num_examples, num_classes)

test()
"""


# torchvision's parts the scripts call, in torch's words: MNIST and CIFAR-10 from arrays the
# test makes, ImageFolder, three transforms and two small random models under torchvision's
# names (vgg16's features/avgpool/classifier, googlenet's 1000 logits)
VISION = r"""
import os
import numpy as np
import torch
from torch import nn


from tests.helpers import to_tensor
ToTensor = to_tensor(torch)  # torchvision's ToTensor in this library's words: ours, shared


class Resize:
    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        from PIL import Image

        return image.resize(self.size[::-1], Image.BILINEAR)


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.train, self.transform = train, transform
        self.data, self.targets = ARRAYS[type(self).__name__][train]

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            image = self.transform(image)
        return image, target


class CIFAR10(MNIST):
    pass


from tests.helpers import image_folder
ImageFolder = image_folder(torch)  # torchvision's ImageFolder in this library's words: ours, shared


class VGG(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2, 2))
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(nn.Linear(32, 16), nn.ReLU(True), nn.Dropout(), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def vgg16(weights=None, **kwargs):
    return VGG(**kwargs)


class GoogLeNet(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, bias=False), nn.BatchNorm2d(8, eps=0.001), nn.ReLU(inplace=True))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        return self.fc(self.dropout(torch.flatten(self.avgpool(self.conv1(x)), 1)))


def googlenet(pretrained=False, **kwargs):
    return GoogLeNet(**kwargs)
"""


class Frame:
    """pandas' DataFrame as the custom dataset reads it: ``len`` and ``iloc[row, column]``."""

    def __init__(self, rows):
        self.rows = rows
        self.iloc = self

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, at):
        row, column = at
        return self.rows[row][column]


def read_csv(path) -> Frame:
    """pandas' ``read_csv`` of a small CSV with a header line, its cells as strings."""
    with open(path) as f:
        return Frame([line.strip().split(",") for line in f.readlines()[1:] if line.strip()])


def imread(path) -> np.ndarray:
    """skimage's ``io.imread``: an image file's pixels, uint8 (H, W, C)."""
    from PIL import Image  # noqa: PLC0415

    return np.asarray(Image.open(path).convert("RGB"))


@functools.cache
def arrays() -> dict:
    """MNIST's stand-in (sklearn's digits as 28x28, uint8: 256 to train on, 64 to test) and
    CIFAR-10's (128 random 32x32 colour images, uint8 (N, H, W, C), each channel its own
    spread), made once."""
    x, y = digits28()
    x = (x * 255).astype(np.uint8)
    rng = np.random.default_rng(0)
    colours = rng.normal([120, 100, 80], [60, 50, 40], (128, 32, 32, 3))
    colours = np.clip(colours, 0, 255).astype(np.uint8)
    labels = rng.integers(0, 10, 128)
    return {
        "MNIST": {True: (x[:256], y[:256]), False: (x[-64:], y[-64:])},
        "CIFAR10": {True: (colours, labels), False: (colours[:16], labels[:16])},
    }


def stand_ins(lib, monkeypatch) -> None:
    """``<lib>vision`` (datasets, transforms, models), pandas and skimage in ``sys.modules``."""
    name = lib.__name__
    base = types.ModuleType(f"{name}vision._base")
    base.ARRAYS = arrays()
    exec(VISION.replace("torch", name), base.__dict__)
    parts = {
        "datasets": ("MNIST", "CIFAR10", "ImageFolder"),
        "transforms": ("ToTensor", "Resize", "Compose"),
        "models": ("vgg16", "googlenet"),
    }
    package(f"{name}vision", monkeypatch, base, parts)
    module("pandas", monkeypatch, read_csv=read_csv)
    skimage = module("skimage", monkeypatch)
    skimage.io = module("skimage.io", monkeypatch, imread=imread)


def pictures(folder) -> None:
    """The image folders the scripts read: Imbalanced_classes' ``dataset`` (12 golden
    retrievers, 3 Swedish elkhounds: small JPEGs) and custom_dataset's five cats and five dogs
    (reddish and bluish 16x16 JPEGs) with their CSV."""
    from PIL import Image  # noqa: PLC0415

    rng = np.random.default_rng(0)

    def save(path, colour, size):
        pixels = np.clip(rng.normal(colour, 30, (size, size, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(path)

    for breed, n, colour in ("Golden retriever", 12, (200, 160, 60)), ("Swedish elkhound", 3, (120, 120, 120)):  # fmt: skip
        (folder / "dataset" / breed).mkdir(parents=True)
        for i in range(n):
            save(folder / "dataset" / breed / f"n{i:04d}.jpg", colour, 12)
    (folder / "custom_dataset" / "cats_dogs_resized").mkdir(parents=True)
    rows = ["Animal,Label"]
    for i in range(10):
        kind, label, colour = ("cat", 0, (200, 80, 60)) if i % 2 == 0 else ("dog", 1, (60, 80, 200))  # fmt: skip
        save(folder / "custom_dataset" / "cats_dogs_resized" / f"{kind}.{i}.jpg", colour, 16)
        rows.append(f"{kind}.{i}.jpg,{label}")
    (folder / "custom_dataset" / "cats_dogs.csv").write_text("\n".join(rows) + "\n")


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded, run as ``__main__`` in ``folder`` beside its
    images: what it printed and its globals."""
    import random  # noqa: PLC0415

    folder.mkdir(parents=True)
    if "ImageFolder" in script or "read_csv" in script:
        pictures(folder)
    stand_ins(lib, monkeypatch)
    lib.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "script.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU on one thread (no GPU is
    answered, and Apple's MPS neither)."""
    with torch_and_tricycle(monkeypatch, "sklearn", "tqdm") as (
        torch,
        tricycle,
    ):  # sklearn: the digits
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
        monkeypatch.setenv(
            "PYTHONHASHSEED", os.environ.get("PYTHONHASHSEED", "0")
        )  # set_seeds' line
        theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def same(theirs, ours, inputs, loss=None, rtol=1e-4, atol=1e-5) -> None:
    """Tricycle's model ``ours`` given torch's ``theirs``' weights: on ``inputs`` (an array)
    the same outputs (each of a tuple), the same ``loss`` of them (the sum of each output's
    cross-entropy against class 0.., by default) and the same gradients."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    results = []
    with one_thread(torch):
        for lib, model in (torch, theirs), (tricycle, ours):
            model.zero_grad()
            outputs = model(lib.tensor(inputs))
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            if loss is None:
                targets = lib.tensor(np.arange(len(inputs)) % outputs[-1].shape[-1])
                value = sum(lib.nn.functional.cross_entropy(o, targets) for o in outputs)
            else:
                value = loss(lib, *outputs)
            value.backward()
            results.append([host(value), *(host(o) for o in outputs)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    grads_as_torchs(ours, theirs, rtol=rtol, atol=atol)


def said(printed: str) -> list[str]:
    """``lines`` of the printed text with a one-value tensor formatted without a spec as its
    number: tricycle's ``f"{num_correct}"`` is its repr (documented), torch's the number."""
    return lines(re.sub(r"Tensor\((-?[\d.]+)(, name=[^)]*)?\)", r"\1", printed))


def accuracies(printed: str) -> list[float]:
    return numbers(r"[Aa]ccuracy[^\d\n]*([\d.]+)", printed)


def images(shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def digits28():
    from tests.test_torch_tutorials_u import digits28 as load  # noqa: PLC0415

    return load()


def bound(script: str, lib, seed: int) -> list[tuple]:
    """What each top-level assignment of ``script`` (in ``lib``'s words, run a statement at a
    time after ``lib.manual_seed(seed)``) binds, when it is a tensor (or a tuple of them: a
    list from tricycle's ``chunk``, numpy's ``split``'s kind): its line, name, dtype, shape and
    values; ``torch.empty``'s values are None (uninitialised)."""
    tree = ast.parse(script.replace("torch", lib.__name__))
    space, rows = {"__name__": "__main__"}, []
    lib.manual_seed(seed)
    with contextlib.redirect_stdout(io.StringIO()):
        for node in tree.body:
            exec(compile(ast.Module([node], []), "script.py", "exec"), space)
            if not isinstance(node, ast.Assign):
                continue
            empty = "empty(" in ast.unparse(node.value)
            names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            for name in names:
                value = space[name]
                for part in value if isinstance(value, tuple | list) else (value,):
                    if hasattr(part, "numel"):
                        dtype = str(part.dtype).rpartition(".")[2]
                        values = None if empty else host(part).tolist()
                        rows.append((node.lineno, name, dtype, tuple(part.shape), values))
    return rows


def test_tensorbasics(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(TENSORBASICS, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    printed = ours.splitlines()  # the values the comments give, and False: y.t()'s contiguity
    for line in "[2 5 8]", "[0 1 9]", "[0 2 4 6 8]", "[ 0  2  4  6  8 10  6  7  8  9]", "[0 3 6 1 4 7 2 5 8]":  # fmt: skip
        assert any(f"Tensor({line}" in p for p in printed), line
    assert printed[printed.index("10") + 1] == "False"
    # each tensor the script binds, one statement at a time: torch's dtype and shape, and
    # torch's values wherever torch's own draws (two seeds) do not change them
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    with one_thread(torch):
        first, second = bound(TENSORBASICS, torch, 0), bound(TENSORBASICS, torch, 1)
        rows = bound(TENSORBASICS, tricycle, 0)
    assert len(rows) == len(first) == 79
    for got, want, other in zip(rows, first, second, strict=True):
        assert got[:4] == want[:4], (got[:4], want[:4])
        if want[4] is not None and want[4] == other[4]:
            np.testing.assert_allclose(got[4], want[4], rtol=1e-6, err_msg=str(want[:2]))


def test_simple_fullynet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(FULLYNET, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        assert min(accuracies(printed)) > 50, printed  # ten classes: 10% by chance
    x = their["train_dataset"].data[:8].reshape(8, -1).astype(np.float32) / 255
    same(their["model"], our["model"], x)


def test_simple_cnn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SIMPLE_CNN, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        assert min(accuracies(printed)) > 50, printed
    x = their["train_dataset"].data[:8, None].astype(np.float32) / 255
    same(their["model"], our["model"], x)


def test_rnn_gru_lstm(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RNN_GRU_LSTM, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        assert min(accuracies(printed)) > 30, printed
    x = their["train_dataset"].data[:4].astype(np.float32) / 255  # (N, 28, 28): rows in time
    same(their["model"], our["model"], x)
    for name in "RNN", "RNN_GRU":  # the two the script defines but does not train
        args = (28, 16, 2, 10)
        same(their[name](*args), our[name](*args), x)


def test_bidirectional_lstm(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BIDIRECTIONAL, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        assert min(accuracies(printed)) > 20, printed
    x = their["train_dataset"].data[:4].astype(np.float32) / 255
    same(their["model"], our["model"], x)


def test_loadsave(tmp_path, monkeypatch):
    (theirs, _), (ours, our) = both(LOADSAVE, tmp_path, monkeypatch)
    assert ours == theirs == "=> Saving checkpoint\n=> Loading checkpoint\n"
    import tricycle  # noqa: PLC0415

    checkpoint = tricycle.load(tmp_path / "tricycle" / "my_checkpoint.pth.tar")
    assert set(checkpoint) == {"state_dict", "optimizer"}
    assert len(checkpoint["optimizer"]["param_groups"][0]["params"]) == 6


def test_init_weights(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(INIT_WEIGHTS, tmp_path, monkeypatch)
    assert ours.count("Tensor(") == theirs.count("Parameter containing:") == 6
    for space in their, our:  # kaiming_uniform_'s bound sqrt(6 / fan_in), biases 0
        model = space["model"]
        for layer, fan_in in (model.conv1, 27), (model.conv2, 54), (model.fc1, 784):
            w = host(next(layer.parameters()))
            assert np.abs(w).max() <= np.sqrt(6 / fan_in) and w.std() > 0.5 * np.sqrt(2 / fan_in)
            assert not host(layer.bias).any()
    same(their["model"], our["model"], images((2, 3, 28, 28)))


def plateau(costs: list[float], lr=0.1, factor=0.1, patience=1, threshold=1e-4) -> float:
    """The learning rate that ReduceLROnPlateau's rule leaves after the epochs' ``costs``: cut
    by ``factor`` once more than ``patience`` epochs in a row did not better the best by
    ``threshold`` (relative)."""
    best, bad = float("inf"), 0
    for cost in costs:
        best, bad = (cost, 0) if cost < best * (1 - threshold) else (best, bad + 1)
        if bad > patience:
            lr, bad = lr * factor, 0
    return lr


def test_lr_ratescheduler(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LR_SCHEDULER, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed, space in (theirs, their), (ours, our):
        costs = numbers(r"is ([\d.]+)", printed)
        assert len(costs) == 8 and min(costs[1:]) < costs[0], costs
        assert space["optimizer"].param_groups[0]["lr"] == pytest.approx(plateau(costs))


def test_std_mean(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(STD_MEAN, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    data = their["train_set"].data / 255.0
    np.testing.assert_allclose(host(our["mean"]), data.mean(axis=(0, 1, 2)), rtol=1e-5)
    np.testing.assert_allclose(host(our["std"]), data.std(axis=(0, 1, 2)), rtol=1e-4)
    np.testing.assert_allclose(host(our["std"]), host(their["std"]), rtol=1e-5)


def test_mixed_precision(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MIXED_PRECISION, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        assert min(accuracies(printed)) > 50, printed
    # no GPU: off, as torch's (tricycle's scaler asks the machine itself: on where one is)
    assert not their["scaler"].is_enabled()
    assert our["scaler"].is_enabled() == backend.cupy_available()
    x = their["train_dataset"].data[:8, None].astype(np.float32) / 255
    same(their["model"], our["model"], x)


def test_imbalanced_classes(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    (theirs, _), (ours, _) = both(IMBALANCED, tmp_path, monkeypatch)
    for printed in theirs, ours:  # 12 retrievers and 3 elkhounds drawn about evenly
        retrievers, elkhounds = (int(n) for n in printed.split())
        assert retrievers + elkhounds == 150 and 50 < elkhounds < 100, printed


def test_custom_dataset(tmp_path, monkeypatch):
    pytest.importorskip("PIL")
    (theirs, their), (ours, our) = both(CUSTOM_DATASET, tmp_path, monkeypatch)
    assert said(ours) == said(theirs)
    for printed in theirs, ours:
        costs = numbers(r"is ([\d.]+)", printed)
        assert len(costs) == 10 and costs[-1] < costs[0] - 0.1, costs  # 1000 logits, 2 classes
    assert sorted(our["train_set"].indices + our["test_set"].indices) == list(range(10))
    x = np.stack([host(our["dataset"][i][0]) for i in range(4)])
    same(their["model"].eval(), our["model"].eval(), x)


def test_set_seeds(tmp_path, monkeypatch):
    (_, their), (_, our) = both(SET_SEEDS, tmp_path, monkeypatch)
    import tricycle  # noqa: PLC0415

    assert os.environ["PYTHONHASHSEED"] == "42"
    assert tricycle.backends.cudnn.deterministic and not tricycle.backends.cudnn.benchmark
    draws = []
    for _ in range(2):
        our["seed_everything"]()
        draws.append((host(tricycle.rand(3)), np.random.rand(), __import__("random").random()))
    np.testing.assert_array_equal(draws[0][0], draws[1][0])
    assert draws[0][1:] == draws[1][1:]


def test_lenet5(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LENET, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and ours == "(4, 10)\n"
    same(their["LeNet"](), our["LeNet"](), images((2, 1, 32, 32)))


def test_vgg(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(VGG, tmp_path, monkeypatch)
    # print(model): the same layers, tricycle's names aside (a Sequential's are sequence.0...)
    # (a Dropout's probability is torch's p), torch's otherwise
    text = re.sub(r"  # [\d,]+ parameters", "", ours).replace("(sequence.", "(")
    text = re.sub(r"Dropout\(probability=([\d.]+)\)", r"Dropout(p=\1, inplace=False)", text)
    if "bias=True, track" not in theirs:  # torch < 2.12 prints no batch norm's bias=
        text = text.replace("affine=True, bias=True,", "affine=True,")
    assert kinds(text) == kinds(theirs)
    # the printed model given torch's weights (eval mode: BatchNorm's running statistics)
    same(their["model"].eval(), our["model"].eval(), images((2, 3, 32, 32)))


def test_inception(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(INCEPTION, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and ours == "(1, 1000)\n"
    # the model's parts given torch's weights, in training mode: its stem's conv_block, an
    # Inception_block (four branches, a padded max pooling, cat) and an auxiliary head (its
    # dropout off): torch's numbers (the whole model at 224x224 costs more than it shows)
    pairs = [
        [space["conv_block"](3, 8, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3)) for space in (their, our)],
        [space["Inception_block"](32, 8, 8, 16, 4, 8, 8) for space in (their, our)],
        [space["InceptionAux"](512, 10) for space in (their, our)],
    ]  # fmt: skip
    for head in pairs[2]:
        head.dropout.p = 0.0
    square = lambda lib, y: (y * y).mean()  # noqa: E731
    same(*pairs[0], images((2, 3, 16, 16)), loss=square)
    same(*pairs[1], images((2, 32, 6, 6)), loss=square)
    same(*pairs[2], images((2, 512, 14, 14)))


def test_resnet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RESNET, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and ours == "(2, 10)\n"
    # _make_layer's stage of two bottleneck blocks (the first with its strided identity
    # downsample; x += identity on a BatchNorm's output), in training mode: torch's numbers
    stages = [
        space["ResNet"]._make_layer(types.SimpleNamespace(in_channels=32), space["block"], 2, 16, 2)
        for space in (their, our)
    ]
    same(*stages, images((2, 32, 8, 8)), loss=lambda lib, y: (y * y).mean())


def test_efficientnet(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(EFFICIENTNET, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and ours == "(2, 10)\n"
    # B0 given torch's weights, in eval mode (no stochastic depth, BatchNorm's running
    # statistics): torch's logits, loss and gradients
    nets = [space["EfficientNet"](version="b0", num_classes=10) for space in (their, our)]
    same(nets[0].eval(), nets[1].eval(), images((2, 3, 32, 32)))
    # an inverted residual block in training mode, every sample kept by its stochastic depth
    # (rand < 1: the mask of ones, x / 1 * mask): torch's numbers, batch statistics and all
    blocks = [
        space["InvertedResidualBlock"](16, 16, kernel_size=3, stride=1, padding=1, expand_ratio=6)
        for space in (their, our)
    ]
    for block in blocks:
        block.survival_prob = 1.0
    same(*blocks, images((2, 16, 8, 8)), loss=lambda lib, y: (y * y).mean())
