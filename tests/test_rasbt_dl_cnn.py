"""Sebastian Raschka's deeplearning-models (github.com/rasbt/deeplearning-models), its CNN
notebooks under pytorch_ipynb/cnn, run on tricycle with ``torch`` replaced by ``tricycle`` in
their text (docs/pytorch.md's promise; the method of tests/test_yunjey_basics.py).

- cnn-basic (its N(0, 0.01) init through ``m.weight.data.normal_``, ``m.bias.detach().zero_()``,
  ``torch.max(probas, 1)``, ``torch.set_grad_enabled(False)``, SGD), cnn-he-init
  (``nn.init.kaiming_normal_`` on ``m.weight.detach()``), cnn-standardized (the mean and std of
  the loader's batches through ``.numpy()``, ``transforms.Normalize`` with tensors,
  ``torch.mean``/``torch.std`` of a channel) and cnn-allconv (strided convolutions,
  ``F.adaptive_avg_pool2d``, Adam) on MNIST;
- cnn-lenet5-mnist (``Sequential`` features and classifier of ``Tanh``, ``torch.flatten``,
  ``transforms.Resize``, ``np.transpose`` of a tensor for the plot).

torchvision is the test's (in tests/test_yunjey_basics.py's way): ``datasets.MNIST`` and
``CIFAR10`` read small stand-ins (sklearn's digits), its ``transforms`` work on numpy images in
PIL's place. Each changed line ends in ``# port:`` and says why: sizes and epochs shrunk, a
larger rate for the fewer steps, the plots dropped, a layer's ``weight`` by position (tricycle
names it ``weights``; documented). Each notebook runs under
torch (skipped without it), then under tricycle, both on the CPU and seeded; both print the
same lines (numbers aside) and learn (cnn-basic's tiny init, the notebook's lesson, barely
moves in a few steps under either: there only the lines and numbers are compared). Then each
model is given torch's weights (``nn.from_torch``) and gives torch's logits, input and
parameter gradients in training and evaluation mode.
"""

# ruff: noqa: E501, W291, W293, E702

import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_tutorials_u import digits28
from tests.test_torch_vision_tutorials import grads_as_torchs, host

pytestmark = pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True")

# pytorch_ipynb/cnn/cnn-basic.ipynb, its code cells (magics and plots left out)
CNN_BASIC = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
from torch.utils.data import DataLoader

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:3" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = 1
learning_rate = 0.05
num_epochs = 3  # port: 10, for a shared CPU
batch_size = 32  # port: 128, for the small data

# Architecture
num_classes = 10

##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=transforms.ToTensor(),
                               download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=transforms.ToTensor())

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=batch_size,
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=batch_size,
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2

        # 28x28x1 => 28x28x8
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(28-1) - 28 + 3) / 2 = 1
        # 28x28x8 => 14x14x8
        self.pool_1 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(14-1) - 28 + 2) = 0
        # 14x14x8 => 14x14x16
        self.conv_2 = torch.nn.Conv2d(in_channels=8,
                                      out_channels=16,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(14-1) - 14 + 3) / 2 = 1
        # 14x14x16 => 7x7x16
        self.pool_2 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(7-1) - 14 + 2) = 0

        self.linear_1 = torch.nn.Linear(7*7*16, num_classes)

        # optionally initialize weights from Gaussian;
        # Guassian weight init is not recommended and only for demonstration purposes
        for m in self.modules():
            if isinstance(m, torch.nn.Conv2d) or isinstance(m, torch.nn.Linear):
                next(m.parameters()).data.normal_(0.0, 0.01)  # port: m.weight by position: tricycle names it weights (documented)
                m.bias.data.zero_()
                if m.bias is not None:
                    m.bias.detach().zero_()

    def forward(self, x):
        out = self.conv_1(x)
        out = F.relu(out)
        out = self.pool_1(out)

        out = self.conv_2(out)
        out = F.relu(out)
        out = self.pool_2(out)

        logits = self.linear_1(out.view(-1, 7*7*16))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)

model = model.to(device)

optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for features, targets in data_loader:
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

start_time = time.time()
for epoch in range(num_epochs):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        features = features.to(device)
        targets = targets.to(device)

        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()

        cost.backward()

        ### UPDATE MODEL PARAMETERS
        optimizer.step()

        ### LOGGING
        if not batch_idx % 2:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f'
                   %(epoch+1, num_epochs, batch_idx,
                     len(train_loader), cost))

    model = model.eval()
    print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
          epoch+1, num_epochs,
          compute_accuracy(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
with torch.set_grad_enabled(False): # save memory during inference
    print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/cnn-he-init.ipynb, its code cells (magics and plots left out)
CNN_HE_INIT = r"""
import time
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
from torch.utils.data import DataLoader

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:2" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = 1
learning_rate = 0.05
num_epochs = 3  # port: 10, for a shared CPU
batch_size = 32  # port: 128, for the small data

# Architecture
num_classes = 10

##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=transforms.ToTensor(),
                               download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=transforms.ToTensor())

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=batch_size,
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=batch_size,
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2

        # 28x28x1 => 28x28x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(28-1) - 28 + 3) / 2 = 1
        # 28x28x4 => 14x14x4
        self.pool_1 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(14-1) - 28 + 2) = 0
        # 14x14x4 => 14x14x8
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(14-1) - 14 + 3) / 2 = 1
        # 14x14x8 => 7x7x8
        self.pool_2 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(7-1) - 14 + 2) = 0

        self.linear_1 = torch.nn.Linear(7*7*8, num_classes)

        ###############################################
        # Reinitialize weights using He initialization
        ###############################################
        for m in self.modules():
            if isinstance(m, torch.nn.Conv2d):
                nn.init.kaiming_normal_(next(m.parameters()).detach())  # port: m.weight by position: tricycle names it weights (documented; a Linear's are (in, out))
                m.bias.detach().zero_()
            elif isinstance(m, torch.nn.Linear):
                nn.init.kaiming_normal_(next(m.parameters()).detach())  # port: m.weight by position: tricycle names it weights (documented; a Linear's are (in, out))
                m.bias.detach().zero_()

    def forward(self, x):
        out = self.conv_1(x)
        out = F.relu(out)
        out = self.pool_1(out)

        out = self.conv_2(out)
        out = F.relu(out)
        out = self.pool_2(out)

        logits = self.linear_1(out.view(-1, 7*7*8))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)

model = model.to(device)

optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for features, targets in data_loader:
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

start_time = time.time()
for epoch in range(num_epochs):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        features = features.to(device)
        targets = targets.to(device)

        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()

        cost.backward()

        ### UPDATE MODEL PARAMETERS
        optimizer.step()

        ### LOGGING
        if not batch_idx % 2:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f'
                   %(epoch+1, num_epochs, batch_idx,
                     len(train_loader), cost))

    model = model.eval()
    print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
          epoch+1, num_epochs,
          compute_accuracy(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/cnn-standardized.ipynb, its code cells (magics and plots left out)
CNN_STANDARDIZED = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
from torch.utils.data import DataLoader

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = 1
learning_rate = 0.05
num_epochs = 3  # port: 10, for a shared CPU
batch_size = 32  # port: 128, for the small data

# Architecture
num_classes = 10
##############################
### PRELIMINARY DATALOADER
##############################

train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=transforms.ToTensor(),
                               download=True)

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=batch_size,
                          shuffle=False)

train_mean = []
train_std = []

for i, image in enumerate(train_loader, 0):
    numpy_image = image[0].numpy()

    batch_mean = np.mean(numpy_image, axis=(0, 2, 3))
    batch_std = np.std(numpy_image, axis=(0, 2, 3))

    train_mean.append(batch_mean)
    train_std.append(batch_std)

train_mean = torch.tensor(np.mean(train_mean, axis=0))
train_std = torch.tensor(np.mean(train_std, axis=0))

print('Mean:', train_mean)
print('Std Dev:', train_std)
custom_transform = transforms.Compose([transforms.ToTensor(),
                                       transforms.Normalize(mean=train_mean, std=train_std)])
##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=custom_transform,
                               download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=custom_transform)

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=batch_size,
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=batch_size,
                         shuffle=False)
# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
print('Channel mean:', torch.mean(images[:, 0, :, :]))
print('Channel std:', torch.std(images[:, 0, :, :]))
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2

        # 28x28x1 => 28x28x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(28-1) - 28 + 3) / 2 = 1
        # 28x28x4 => 14x14x4
        self.pool_1 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(14-1) - 28 + 2) = 0
        # 14x14x4 => 14x14x8
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(14-1) - 14 + 3) / 2 = 1
        # 14x14x8 => 7x7x8
        self.pool_2 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         padding=0) # (2(7-1) - 14 + 2) = 0

        self.linear_1 = torch.nn.Linear(7*7*8, num_classes)

    def forward(self, x):
        out = self.conv_1(x)
        out = F.relu(out)
        out = self.pool_1(out)

        out = self.conv_2(out)
        out = F.relu(out)
        out = self.pool_2(out)

        logits = self.linear_1(out.view(-1, 7*7*8))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)

model = model.to(device)

optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for features, targets in data_loader:
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

start_time = time.time()
for epoch in range(num_epochs):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        features = features.to(device)
        targets = targets.to(device)

        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()

        cost.backward()

        ### UPDATE MODEL PARAMETERS
        optimizer.step()

        ### LOGGING
        if not batch_idx % 2:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f'
                   %(epoch+1, num_epochs, batch_idx,
                     len(train_loader), cost))

    model = model.eval()
    print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
          epoch+1, num_epochs,
          compute_accuracy(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/cnn-allconv.ipynb, its code cells (magics and plots left out)
CNN_ALLCONV = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
from torch.utils.data import DataLoader

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = 1
learning_rate = 0.01  # port: 0.001, for the fewer steps
num_epochs = 8  # port: 15, for a shared CPU
batch_size = 32  # port: 256, for the small data

# Architecture
num_classes = 10

##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=transforms.ToTensor(),
                               download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=transforms.ToTensor())

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=batch_size,
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=batch_size,
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        self.num_classes = num_classes
        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2

        # 28x28x1 => 28x28x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(28-1) - 28 + 3) / 2 = 1
        # 28x28x4 => 14x14x4
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)
        # 14x14x4 => 14x14x8
        self.conv_3 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(14-1) - 14 + 3) / 2 = 1
        # 14x14x8 => 7x7x8
        self.conv_4 = torch.nn.Conv2d(in_channels=8,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)

        # 7x7x8 => 7x7x16
        self.conv_5 = torch.nn.Conv2d(in_channels=8,
                                      out_channels=16,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(7-1) - 7 + 3) / 2 = 1
        # 7x7x16 => 4x4x16
        self.conv_6 = torch.nn.Conv2d(in_channels=16,
                                      out_channels=16,
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)

        # 4x4x16 => 4x4xnum_classes
        self.conv_7 = torch.nn.Conv2d(in_channels=16,
                                      out_channels=self.num_classes,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1) # (1(7-1) - 7 + 3) / 2 = 1

    def forward(self, x):
        out = self.conv_1(x)
        out = F.relu(out)

        out = self.conv_2(out)
        out = F.relu(out)

        out = self.conv_3(out)
        out = F.relu(out)

        out = self.conv_4(out)
        out = F.relu(out)

        out = self.conv_5(out)
        out = F.relu(out)

        out = self.conv_6(out)
        out = F.relu(out)

        out = self.conv_7(out)
        out = F.relu(out)

        logits = F.adaptive_avg_pool2d(out, 1)
        # drop width
        logits.squeeze_(-1)
        # drop height
        logits.squeeze_(-1)
        probas = torch.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)

model = model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for features, targets in data_loader:
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

start_time = time.time()
for epoch in range(num_epochs):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        features = features.to(device)
        targets = targets.to(device)

        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()

        cost.backward()

        ### UPDATE MODEL PARAMETERS
        optimizer.step()

        ### LOGGING
        if not batch_idx % 2:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f'
                   %(epoch+1, num_epochs, batch_idx,
                     len(train_loader), cost))

    model = model.eval()
    print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
          epoch+1, num_epochs,
          compute_accuracy(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/cnn-lenet5-mnist.ipynb, its code cells (magics and plots left out)
CNN_LENET5_MNIST = r"""
import os
import time

import numpy as np
# import pandas as pd  # port: pandas unused (not installed)

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

from torchvision import datasets
from torchvision import transforms

# import matplotlib.pyplot as plt  # port: plotting dropped
# from PIL import Image  # port: PIL unused

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Hyperparameters
RANDOM_SEED = 1
LEARNING_RATE = 0.001
BATCH_SIZE = 32  # port: 128, for the small data
NUM_EPOCHS = 3  # port: 10, for a shared CPU

# Architecture
NUM_FEATURES = 32*32
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)
GRAYSCALE = True
##########################
### MNIST DATASET
##########################

resize_transform = transforms.Compose([transforms.Resize((32, 32)),
                                       transforms.ToTensor()])

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data',
                               train=True,
                               transform=resize_transform,
                               download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=resize_transform)

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=BATCH_SIZE,
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=BATCH_SIZE,
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
device = torch.device(DEVICE)
torch.manual_seed(0)

for epoch in range(2):

    for batch_idx, (x, y) in enumerate(train_loader):

        print('Epoch:', epoch+1, end='')
        print(' | Batch index:', batch_idx, end='')
        print(' | Batch size:', y.size()[0])

        x = x.to(device)
        y = y.to(device)
        break
##########################
### MODEL
##########################

class LeNet5(nn.Module):

    def __init__(self, num_classes, grayscale=False):
        super(LeNet5, self).__init__()

        self.grayscale = grayscale
        self.num_classes = num_classes

        if self.grayscale:
            in_channels = 1
        else:
            in_channels = 3

        self.features = nn.Sequential(

            nn.Conv2d(in_channels, 6, kernel_size=5),
            nn.Tanh(),
            nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(6, 16, kernel_size=5),
            nn.Tanh(),
            nn.MaxPool2d(kernel_size=2)
        )

        self.classifier = nn.Sequential(
            nn.Linear(16*5*5, 120),
            nn.Tanh(),
            nn.Linear(120, 84),
            nn.Tanh(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        logits = self.classifier(x)
        probas = F.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = LeNet5(NUM_CLASSES, GRAYSCALE)
model.to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
def compute_accuracy(model, data_loader, device):
    correct_pred, num_examples = 0, 0
    for i, (features, targets) in enumerate(data_loader):

        features = features.to(device)
        targets = targets.to(device)

        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

start_time = time.time()
for epoch in range(NUM_EPOCHS):

    model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        features = features.to(DEVICE)
        targets = targets.to(DEVICE)

        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()

        cost.backward()

        ### UPDATE MODEL PARAMETERS
        optimizer.step()

        ### LOGGING
        if not batch_idx % 2:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %04d/%04d | Cost: %.4f'
                   %(epoch+1, NUM_EPOCHS, batch_idx,
                     len(train_loader), cost))

    model.eval()
    with torch.set_grad_enabled(False): # save memory during inference
        print('Epoch: %03d/%03d | Train: %.3f%%' % (
              epoch+1, NUM_EPOCHS,
              compute_accuracy(model, train_loader, device=DEVICE)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
with torch.set_grad_enabled(False): # save memory during inference
    print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader, device=DEVICE)))
for batch_idx, (features, targets) in enumerate(test_loader):

    features = features
    targets = targets
    break

nhwc_img = np.transpose(features[0], axes=(1, 2, 0))
nhw_img = np.squeeze(nhwc_img.numpy(), axis=2)
# plt.imshow(nhw_img, cmap='Greys');  # port: plotting dropped
model.eval()
logits, probas = model(features.to(device)[0, None])
print('Probability 7 %.2f%%' % (probas[0][7]*100))
"""


# torchvision as the notebooks use it, in torch's words (under tricycle the same text): the
# datasets read ``IMAGES`` (numpy arrays the test puts in the module first), the transforms
# work on numpy images (H, W) or (H, W, C) of uint8 in PIL's place
VISION = r"""
import random
import numpy as np
import torch


class ToTensor:
    def __call__(self, image):
        image = image[:, :, None] if image.ndim == 2 else image
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1), np.float32) / 255)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, tensor):
        mean = torch.as_tensor(self.mean, dtype=torch.float32).reshape(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=torch.float32).reshape(-1, 1, 1)
        return (tensor - mean) / std


class Resize:
    # nearest neighbour
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        (h, w), (th, tw) = image.shape[:2], self.size
        return image[(np.arange(th) * h // th)][:, (np.arange(tw) * w // tw)]


class RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        top, left = (random.randint(0, n - s) for n, s in zip(image.shape[:2], self.size))
        return image[top:top + self.size[0], left:left + self.size[1]]


class CenterCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        top, left = ((n - s) // 2 for n, s in zip(image.shape[:2], self.size))
        return image[top:top + self.size[0], left:left + self.size[1]]


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class ImageSet(torch.utils.data.Dataset):
    name = None

    def __init__(self, root, train=True, transform=None, download=False):
        self.images, self.labels = IMAGES[self.name, train]
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = self.images[index]
        return (image if self.transform is None else self.transform(image)), int(self.labels[index])


class MNIST(ImageSet):
    name = 'mnist'


class CIFAR10(ImageSet):
    name = 'cifar10'
"""

TRANSFORMS = "ToTensor", "Normalize", "Resize", "RandomCrop", "CenterCrop", "Compose"


def images() -> dict:
    """The datasets' images, uint8 as PIL's: MNIST's 192 and 64 digits (sklearn's, at 28x28)
    and CIFAR-10's 96 and 32 (the digits at 32x32, each class its own colour and each image
    its own brightness)."""
    x, y = digits28()
    mnist = (x * 255).round().astype(np.uint8)
    rng = np.random.default_rng(0)
    colours = rng.uniform(0.2, 1.0, size=(10, 3))
    small = x[:, 2:-2:3, 2:-2:3]  # (N, 8, 8): sklearn's digits back
    big = np.kron(small, np.ones((4, 4)))  # (N, 32, 32)
    brightness = rng.uniform(0.6, 1.0, size=(len(y), 1, 1, 1))
    cifar = (big[..., None] * colours[y][:, None, None] * brightness * 255).round().astype(np.uint8)
    return {
        ("mnist", True): (mnist[:192], y[:192]),
        ("mnist", False): (mnist[-64:], y[-64:]),
        ("cifar10", True): (cifar[:96], y[:96]),
        ("cifar10", False): (cifar[-32:], y[-32:]),
    }


def vision(lib, monkeypatch) -> None:
    """``<lib>vision`` with its ``datasets`` and ``transforms``, in ``sys.modules``."""
    name = lib.__name__ + "vision"
    module = types.ModuleType(name)
    parts = {part: types.ModuleType(f"{name}.{part}") for part in ("datasets", "transforms", "models")}  # fmt: skip
    base = types.ModuleType(f"{name}._base")
    base.IMAGES = images()
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    for key in "MNIST", "CIFAR10":
        setattr(parts["datasets"], key, getattr(base, key))
    for key in TRANSFORMS:
        setattr(parts["transforms"], key, getattr(base, key))
    for part, sub in parts.items():
        setattr(module, part, sub)
        monkeypatch.setitem(sys.modules, f"{name}.{part}", sub)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, f"{name}._base", base)


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded (``lib``, numpy and Python's ``random``: the
    crops), run as ``__main__`` in ``folder``: what it printed and
    its globals."""
    import random  # noqa: PLC0415

    folder.mkdir(parents=True)
    vision(lib, monkeypatch)
    lib.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "notebook.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU on one thread (the notebooks
    ask for CUDA when there is one: none is answered)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def same_model(their_model, our_model, inputs, labels, rtol=1e-4, atol=1e-5) -> None:
    """Tricycle's model given torch's weights: torch's logits for ``inputs`` and gradients of
    the cross-entropy with ``labels`` (input and parameters), in train and in eval mode."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(our_model, their_model.state_dict()) == ([], [])
    for training in True, False:
        outs = []
        for lib, net in (torch, their_model), (tricycle, our_model):
            net.train(training)
            net.zero_grad()
            x = lib.tensor(inputs, requires_grad=True)
            logits = net(x)
            logits = logits[0] if isinstance(logits, tuple) else logits
            lib.nn.functional.cross_entropy(logits, lib.tensor(labels)).backward()
            outs.append((host(logits), host(x.grad)))
        for got, want in zip(outs[1], outs[0]):
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
        grads_as_torchs(our_model, their_model, rtol=rtol, atol=atol * 10)


def same_lines(theirs: str, ours: str) -> None:
    assert kinds(ours) == kinds(theirs)


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


COST = r"Cost: ([\d.]+)"


@pytest.mark.parametrize("name", ["CNN_BASIC", "CNN_HE_INIT", "CNN_STANDARDIZED", "CNN_ALLCONV"])
def test_mnist_convnets(name, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[name], tmp_path, monkeypatch)
    same_lines(theirs, ours)
    for printed in theirs, ours:  # cnn-basic's N(0, 0.01) weights (its lesson) barely move
        assert len(numbers(COST, printed)) == (24 if name == "CNN_ALLCONV" else 9)
        if name == "CNN_ALLCONV":  # slow to start on the small data: its accuracy rose
            assert numbers(r"training accuracy: ([\d.]+)", printed)[-1] > 15, printed
        elif name != "CNN_BASIC":
            fell(numbers(COST, printed), 0.97)
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(4, 1, 28, 28)).astype(np.float32)
    same_model(their["model"], our["model"], inputs, rng.integers(0, 10, 4))


def test_lenet5(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CNN_LENET5_MNIST, tmp_path, monkeypatch)
    same_lines(theirs, ours)
    for printed in theirs, ours:
        fell(numbers(COST, printed), 0.9)
    # the plotted image: the first test digit, resized to 32x32 (nearest) and moved to (H, W)
    np.testing.assert_array_equal(our["nhw_img"], their["nhw_img"])
    assert our["probas"].shape == (1, 10) and abs(float(our["probas"].sum()) - 1) < 1e-5
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(4, 1, 32, 32)).astype(np.float32)
    same_model(their["model"], our["model"], inputs, rng.integers(0, 10, 4))
