"""Sebastian Raschka's deeplearning-models (github.com/rasbt/deeplearning-models), its CNN
notebooks under pytorch_ipynb/cnn, run on tricycle with ``torch`` replaced by ``tricycle`` in
their text (docs/pytorch.md's promise; the method of tests/test_yunjey_basics.py).

- cnn-basic (its N(0, 0.01) init through ``m.weight.data.normal_``, ``m.bias.detach().zero_()``,
  ``torch.max(probas, 1)``, ``torch.set_grad_enabled(False)``, SGD), cnn-he-init
  (``nn.init.kaiming_normal_`` on ``m.weight.detach()``), cnn-standardized (the mean and std of
  the loader's batches through ``.numpy()``, ``transforms.Normalize`` with tensors,
  ``torch.mean``/``torch.std`` of a channel) and cnn-allconv (strided convolutions,
  ``F.adaptive_avg_pool2d``, ``logits.squeeze_(-1)``, Adam) on MNIST;
- cnn-lenet5-mnist (``Sequential`` features and classifier of ``Tanh``, ``torch.flatten``,
  ``transforms.Resize``, ``np.transpose`` of a tensor for the plot);
- nin-cifar10 and nin-cifar10_batchnorm (1x1 convolutions, ``ReLU(inplace=True)``, ``Subset``
  by ``torch.arange``; three models, the norms before and after the activations), cnn-vgg16
  (``kaiming_uniform_``), resnet-ex-1 (three residual networks, ``out += shortcut``),
  cnn-resnet18-mnist (``BasicBlock`` with ``downsample``), cnn-densenet121-mnist (``Sequential``
  subclasses filled by ``add_module``, ``OrderedDict`` names, ``torch.cat`` of the features),
  cnn-alexnet-cifar10-grouped (grouped convolutions, ``AdaptiveAvgPool2d``) and
  cnn-mobilenet-v2-cifar10 (torchvision's mobilenet_v2: depthwise convolutions, ``ReLU6``),
  the last two through the repository's helper modules as written (``SubsetRandomSampler``,
  ``train_classifier_simple_v1``/``v2``, ``torch.save`` of the best model and ``torch.load``,
  ``compute_confusion_matrix``).

torchvision is the test's (in tests/test_yunjey_basics.py's way): ``datasets.MNIST`` and
``CIFAR10`` read small stand-ins (sklearn's digits), its ``transforms`` work on numpy images in
PIL's place, ``models.mobilenet_v2`` is torchvision's (in the hub's place: no download). Each
changed line ends in ``# port:`` and says why: sizes, channels and epochs shrunk, a larger rate
for the fewer steps, the plots dropped, worker processes off, a layer's ``weight`` by position
(tricycle names a convolution's ``weights`` and a norm's ``gamma`` and ``beta``: documented).
Each notebook runs under
torch (skipped without it), then under tricycle, both on the CPU and seeded; both print the
same lines (numbers aside) and learn (cnn-basic's tiny init and the plain NiN, the notebooks'
lessons, barely move in a few steps under either, nor do AlexNet and MobileNet on the small
data: there the lines are compared). Then each model is given torch's weights (``nn.from_torch``) and gives torch's
logits, input and parameter gradients in training and evaluation mode, and (the deeper ones)
torch's losses over a few Adam steps.
"""

# ruff: noqa: E501, W291, W293, E702

import functools
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_rasbt_dl_basics import HELPERS
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


# pytorch_ipynb/cnn/nin-cifar10.ipynb, its code cells (magics and plots left out)
NIN_CIFAR10 = r"""
import os
import time

import numpy as np
# import pandas as pd  # port: pandas unused (not installed)

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data import Subset

from torchvision import datasets
from torchvision import transforms

# import matplotlib.pyplot as plt  # port: plotting dropped
# from PIL import Image  # port: PIL unused

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
torch.tensor([1]).device
##########################
### SETTINGS
##########################

# Hyperparameters
RANDOM_SEED = 1
LEARNING_RATE = 0.005  # port: 0.0005, for the fewer steps
BATCH_SIZE = 32  # port: 256, for the small data
NUM_EPOCHS = 3  # port: 100, for a shared CPU

# Architecture
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)
GRAYSCALE = False
##########################
### CIFAR-10 Dataset
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range

train_indices = torch.arange(0, 80)  # port: 49000, the stand-in's 96 images
valid_indices = torch.arange(80, 96)  # port: 50000, the stand-in's 96 images

train_and_valid = datasets.CIFAR10(root='data',
                                   train=True,
                                   transform=transforms.ToTensor(),
                                   download=True)

train_dataset = Subset(train_and_valid, train_indices)
valid_dataset = Subset(train_and_valid, valid_indices)

test_dataset = datasets.CIFAR10(root='data',
                                train=False,
                                transform=transforms.ToTensor())

#####################################################
### Data Loaders
#####################################################

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 8 worker processes, on a shared CPU
                          shuffle=True)

valid_loader = DataLoader(dataset=valid_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 8 worker processes, on a shared CPU
                          shuffle=False)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=BATCH_SIZE,
                         num_workers=0,  # port: 8 worker processes, on a shared CPU
                         shuffle=False)

#####################################################

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break

for images, labels in test_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break

for images, labels in valid_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
##########################
### MODEL
##########################

class NiN(nn.Module):
    def __init__(self, num_classes):
        super(NiN, self).__init__()
        self.num_classes = num_classes
        self.classifier = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=5, stride=1, padding=2),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU; 160 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  8, kernel_size=1, stride=1, padding=0),  # port: 160 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=5, stride=1, padding=2),  # port: 192 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  10, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=8, stride=1, padding=0),

                )

    def forward(self, x):
        x = self.classifier(x)
        logits = x.view(x.size(0), self.num_classes)
        probas = torch.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = NiN(NUM_CLASSES)
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

        ### PREPARE MINIBATCH
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
        if not batch_idx % 120:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |'
                   f' Cost: {cost:.4f}')

    # no need to build the computation graph for backprop when computing accuracy
    with torch.set_grad_enabled(False):
        train_acc = compute_accuracy(model, train_loader, device=DEVICE)
        valid_acc = compute_accuracy(model, valid_loader, device=DEVICE)
        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} Train Acc.: {train_acc:.2f}%'
              f' | Validation Acc.: {valid_acc:.2f}%')

    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')

elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')
"""


# pytorch_ipynb/cnn/nin-cifar10_batchnorm.ipynb, its code cells (magics and plots left out)
NIN_CIFAR10_BATCHNORM = r"""
import os
import time

import numpy as np
# import pandas as pd  # port: pandas unused (not installed)

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data import Subset

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
LEARNING_RATE = 0.005  # port: 0.0005, for the fewer steps
BATCH_SIZE = 32  # port: 256, for the small data
NUM_EPOCHS = 3  # port: 100, for a shared CPU

# Architecture
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)
GRAYSCALE = False
##########################
### CIFAR-10 Dataset
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range

train_indices = torch.arange(0, 80)  # port: 49000, the stand-in's 96 images
valid_indices = torch.arange(80, 96)  # port: 50000, the stand-in's 96 images

train_and_valid = datasets.CIFAR10(root='data',
                                   train=True,
                                   transform=transforms.ToTensor(),
                                   download=True)

train_dataset = Subset(train_and_valid, train_indices)
valid_dataset = Subset(train_and_valid, valid_indices)

test_dataset = datasets.CIFAR10(root='data',
                                train=False,
                                transform=transforms.ToTensor())

#####################################################
### Data Loaders
#####################################################

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 8 worker processes, on a shared CPU
                          shuffle=True)

valid_loader = DataLoader(dataset=valid_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 8 worker processes, on a shared CPU
                          shuffle=False)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=BATCH_SIZE,
                         num_workers=0,  # port: 8 worker processes, on a shared CPU
                         shuffle=False)

#####################################################

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break

for images, labels in test_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break

for images, labels in valid_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
##########################
### MODEL
##########################

class NiN(nn.Module):
    def __init__(self, num_classes):
        super(NiN, self).__init__()
        self.num_classes = num_classes
        self.classifier = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=5, stride=1, padding=2),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU; 160 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  8, kernel_size=1, stride=1, padding=0),  # port: 160 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=5, stride=1, padding=2),  # port: 192 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  10, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=8, stride=1, padding=0),

                )

    def forward(self, x):
        x = self.classifier(x)
        logits = x.view(x.size(0), self.num_classes)
        probas = torch.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = NiN(NUM_CLASSES)
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

        ### PREPARE MINIBATCH
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
        if not batch_idx % 120:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |'
                   f' Cost: {cost:.4f}')

    # no need to build the computation graph for backprop when computing accuracy
    with torch.set_grad_enabled(False):
        train_acc = compute_accuracy(model, train_loader, device=DEVICE)
        valid_acc = compute_accuracy(model, valid_loader, device=DEVICE)
        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} Train Acc.: {train_acc:.2f}%'
              f' | Validation Acc.: {valid_acc:.2f}%')

    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')

elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')
##########################
### MODEL
##########################

class NiN(nn.Module):
    def __init__(self, num_classes):
        super(NiN, self).__init__()
        self.num_classes = num_classes
        self.classifier = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=5, stride=1, padding=2, bias=False),  # port: 192 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU; 160 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 160 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 160 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=5, stride=1, padding=2, bias=False),  # port: 192 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1, bias=False),  # port: 192 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.Conv2d(8,  10, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=8, stride=1, padding=0),

                )

    def forward(self, x):
        x = self.classifier(x)
        logits = x.view(x.size(0), self.num_classes)
        probas = torch.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = NiN(NUM_CLASSES)
model.to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
start_time = time.time()
for epoch in range(NUM_EPOCHS):

    model.train()

    for batch_idx, (features, targets) in enumerate(train_loader):

        ### PREPARE MINIBATCH
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
        if not batch_idx % 120:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |'
                   f' Cost: {cost:.4f}')

    # no need to build the computation graph for backprop when computing accuracy
    with torch.set_grad_enabled(False):
        train_acc = compute_accuracy(model, train_loader, device=DEVICE)
        valid_acc = compute_accuracy(model, valid_loader, device=DEVICE)
        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} Train Acc.: {train_acc:.2f}%'
              f' | Validation Acc.: {valid_acc:.2f}%')

    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')

elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')
##########################
### MODEL
##########################

class NiN(nn.Module):
    def __init__(self, num_classes):
        super(NiN, self).__init__()
        self.num_classes = num_classes
        self.classifier = nn.Sequential(
                nn.Conv2d(3, 8, kernel_size=5, stride=1, padding=2, bias=False),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU; 160 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 160 channels, for a shared CPU
                nn.Conv2d(8,  8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 160 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 96 channels, for a shared CPU
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=5, stride=1, padding=2, bias=False),  # port: 192 channels, for a shared CPU; 96 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.AvgPool2d(kernel_size=3, stride=2, padding=1),
                nn.Dropout(0.5),

                nn.Conv2d(8, 8, kernel_size=3, stride=1, padding=1, bias=False),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.Conv2d(8, 8, kernel_size=1, stride=1, padding=0, bias=False),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.BatchNorm2d(8),  # port: 192 channels, for a shared CPU
                nn.Conv2d(8,  10, kernel_size=1, stride=1, padding=0),  # port: 192 channels, for a shared CPU
                nn.ReLU(inplace=True),
                nn.AvgPool2d(kernel_size=8, stride=1, padding=0),

                )

    def forward(self, x):
        x = self.classifier(x)
        logits = x.view(x.size(0), self.num_classes)
        probas = torch.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = NiN(NUM_CLASSES)
model.to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
start_time = time.time()
for epoch in range(NUM_EPOCHS):

    model.train()

    for batch_idx, (features, targets) in enumerate(train_loader):

        ### PREPARE MINIBATCH
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
        if not batch_idx % 120:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |'
                   f' Cost: {cost:.4f}')

    # no need to build the computation graph for backprop when computing accuracy
    with torch.set_grad_enabled(False):
        train_acc = compute_accuracy(model, train_loader, device=DEVICE)
        valid_acc = compute_accuracy(model, valid_loader, device=DEVICE)
        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} Train Acc.: {train_acc:.2f}%'
              f' | Validation Acc.: {valid_acc:.2f}%')

    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')

elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')
"""


# pytorch_ipynb/cnn/cnn-vgg16.ipynb, its code cells (magics and plots left out)
CNN_VGG16 = r"""
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
DEVICE = torch.device("cuda:3" if torch.cuda.is_available() else "cpu")
print('Device:', DEVICE)

# Hyperparameters
random_seed = 1
learning_rate = 0.001
num_epochs = 3  # port: 10, for a shared CPU
batch_size = 32  # port: 128, for the small data

# Architecture
num_features = 784
num_classes = 10

##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.CIFAR10(root='data',
                                 train=True,
                                 transform=transforms.ToTensor(),
                                 download=True)

test_dataset = datasets.CIFAR10(root='data',
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

class VGG16(torch.nn.Module):

    def __init__(self, num_features, num_classes):
        super(VGG16, self).__init__()

        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2

        self.block_1 = nn.Sequential(
                nn.Conv2d(in_channels=3,
                          out_channels=8,  # port: 64 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          # (1(32-1)- 32 + 3)/2 = 1
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=8,  # port: 64 channels, for a shared CPU
                          out_channels=8,  # port: 64 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=(2, 2),
                             stride=(2, 2))
        )

        self.block_2 = nn.Sequential(
                nn.Conv2d(in_channels=8,  # port: 64 channels, for a shared CPU
                          out_channels=8,  # port: 128 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=8,  # port: 128 channels, for a shared CPU
                          out_channels=8,  # port: 128 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=(2, 2),
                             stride=(2, 2))
        )

        self.block_3 = nn.Sequential(
                nn.Conv2d(in_channels=8,  # port: 128 channels, for a shared CPU
                          out_channels=16,  # port: 256 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 256 channels, for a shared CPU
                          out_channels=16,  # port: 256 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 256 channels, for a shared CPU
                          out_channels=16,  # port: 256 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=(2, 2),
                             stride=(2, 2))
        )

        self.block_4 = nn.Sequential(
                nn.Conv2d(in_channels=16,  # port: 256 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 512 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 512 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=(2, 2),
                             stride=(2, 2))
        )

        self.block_5 = nn.Sequential(
                nn.Conv2d(in_channels=16,  # port: 512 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 512 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.Conv2d(in_channels=16,  # port: 512 channels, for a shared CPU
                          out_channels=16,  # port: 512 channels, for a shared CPU
                          kernel_size=(3, 3),
                          stride=(1, 1),
                          padding=1),
                nn.ReLU(),
                nn.MaxPool2d(kernel_size=(2, 2),
                             stride=(2, 2))
        )

        self.classifier = nn.Sequential(
            nn.Linear(16, 32),  # port: 512 and 4096 features, for a shared CPU
            nn.ReLU(True),
            #nn.Dropout(p=0.5),
            nn.Linear(32, 24),  # port: 4096 features, for a shared CPU
            nn.ReLU(True),
            #nn.Dropout(p=0.5),
            nn.Linear(24, num_classes),  # port: 4096 features, for a shared CPU
        )

        for m in self.modules():
            if isinstance(m, torch.nn.Conv2d) or isinstance(m, torch.nn.Linear):
                nn.init.kaiming_uniform_(next(m.parameters()), mode='fan_in', nonlinearity='relu')  # port: m.weight by position: tricycle names it weights (documented; a Linear's are (in, out))
                if m.bias is not None:
                    m.bias.detach().zero_()

        #self.avgpool = nn.AdaptiveAvgPool2d((7, 7))

    def forward(self, x):

        x = self.block_1(x)
        x = self.block_2(x)
        x = self.block_3(x)
        x = self.block_4(x)
        x = self.block_5(x)
        #x = self.avgpool(x)
        x = x.view(x.size(0), -1)
        logits = self.classifier(x)
        probas = F.softmax(logits, dim=1)

        return logits, probas

torch.manual_seed(random_seed)
model = VGG16(num_features=num_features,
              num_classes=num_classes)

model = model.to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    model.eval()
    correct_pred, num_examples = 0, 0
    for i, (features, targets) in enumerate(data_loader):

        features = features.to(DEVICE)
        targets = targets.to(DEVICE)

        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

def compute_epoch_loss(model, data_loader):
    model.eval()
    curr_loss, num_examples = 0., 0
    with torch.no_grad():
        for features, targets in data_loader:
            features = features.to(DEVICE)
            targets = targets.to(DEVICE)
            logits, probas = model(features)
            loss = F.cross_entropy(logits, targets, reduction='sum')
            num_examples += targets.size(0)
            curr_loss += loss

        curr_loss = curr_loss / num_examples
        return curr_loss

start_time = time.time()
for epoch in range(num_epochs):

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
        if not batch_idx % 1:  # port: 50, for the fewer batches
            print ('Epoch: %03d/%03d | Batch %04d/%04d | Cost: %.4f'
                   %(epoch+1, num_epochs, batch_idx,
                     len(train_loader), cost))

    model.eval()
    with torch.set_grad_enabled(False): # save memory during inference
        print('Epoch: %03d/%03d | Train: %.3f%% |  Loss: %.3f' % (
              epoch+1, num_epochs,
              compute_accuracy(model, train_loader),
              compute_epoch_loss(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
with torch.set_grad_enabled(False): # save memory during inference
    print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/resnet-ex-1.ipynb, its code cells (magics and plots left out)
RESNET_EX_1 = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision import transforms

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:1" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = 123
learning_rate = 0.01
num_epochs = 2  # port: 10, for a shared CPU
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

        #########################
        ### 1st residual block
        #########################
        # 28x28x1 => 28x28x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(1, 1),
                                      stride=(1, 1),
                                      padding=0)
        self.conv_1_bn = torch.nn.BatchNorm2d(4)

        # 28x28x4 => 28x28x1
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=1,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1)
        self.conv_2_bn = torch.nn.BatchNorm2d(1)

        #########################
        ### 2nd residual block
        #########################
        # 28x28x1 => 28x28x4
        self.conv_3 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(1, 1),
                                      stride=(1, 1),
                                      padding=0)
        self.conv_3_bn = torch.nn.BatchNorm2d(4)

        # 28x28x4 => 28x28x1
        self.conv_4 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=1,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      padding=1)
        self.conv_4_bn = torch.nn.BatchNorm2d(1)

        #########################
        ### Fully connected
        #########################
        self.linear_1 = torch.nn.Linear(28*28*1, num_classes)

    def forward(self, x):

        #########################
        ### 1st residual block
        #########################
        shortcut = x

        out = self.conv_1(x)
        out = self.conv_1_bn(out)
        out = F.relu(out)

        out = self.conv_2(out)
        out = self.conv_2_bn(out)

        out += shortcut
        out = F.relu(out)

        #########################
        ### 2nd residual block
        #########################

        shortcut = out

        out = self.conv_3(out)
        out = self.conv_3_bn(out)
        out = F.relu(out)

        out = self.conv_4(out)
        out = self.conv_4_bn(out)

        out += shortcut
        out = F.relu(out)

        #########################
        ### Fully connected
        #########################
        logits = self.linear_1(out.view(-1, 28*28*1))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)
model = model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
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

    model = model.eval() # eval mode to prevent upd. batchnorm params during inference
    with torch.set_grad_enabled(False): # save memory during inference
        print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
              epoch+1, num_epochs,
              compute_accuracy(model, train_loader)))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))

print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        #########################
        ### 1st residual block
        #########################
        # 28x28x1 => 14x14x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)
        self.conv_1_bn = torch.nn.BatchNorm2d(4)

        # 14x14x4 => 14x14x8
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=8,
                                      kernel_size=(1, 1),
                                      stride=(1, 1),
                                      padding=0)
        self.conv_2_bn = torch.nn.BatchNorm2d(8)

        # 28x28x1 => 14x14x8
        self.conv_shortcut_1 = torch.nn.Conv2d(in_channels=1,
                                               out_channels=8,
                                               kernel_size=(1, 1),
                                               stride=(2, 2),
                                               padding=0)
        self.conv_shortcut_1_bn = torch.nn.BatchNorm2d(8)

        #########################
        ### 2nd residual block
        #########################
        # 14x14x8 => 7x7x16
        self.conv_3 = torch.nn.Conv2d(in_channels=8,
                                      out_channels=16,
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)
        self.conv_3_bn = torch.nn.BatchNorm2d(16)

        # 7x7x16 => 7x7x32
        self.conv_4 = torch.nn.Conv2d(in_channels=16,
                                      out_channels=32,
                                      kernel_size=(1, 1),
                                      stride=(1, 1),
                                      padding=0)
        self.conv_4_bn = torch.nn.BatchNorm2d(32)

        # 14x14x8 => 7x7x32
        self.conv_shortcut_2 = torch.nn.Conv2d(in_channels=8,
                                               out_channels=32,
                                               kernel_size=(1, 1),
                                               stride=(2, 2),
                                               padding=0)
        self.conv_shortcut_2_bn = torch.nn.BatchNorm2d(32)

        #########################
        ### Fully connected
        #########################
        self.linear_1 = torch.nn.Linear(7*7*32, num_classes)

    def forward(self, x):

        #########################
        ### 1st residual block
        #########################
        shortcut = x

        out = self.conv_1(x) # 28x28x1 => 14x14x4
        out = self.conv_1_bn(out)
        out = F.relu(out)

        out = self.conv_2(out) # 14x14x4 => 714x14x8
        out = self.conv_2_bn(out)

        # match up dimensions using a linear function (no relu)
        shortcut = self.conv_shortcut_1(shortcut)
        shortcut = self.conv_shortcut_1_bn(shortcut)

        out += shortcut
        out = F.relu(out)

        #########################
        ### 2nd residual block
        #########################

        shortcut = out

        out = self.conv_3(out) # 14x14x8 => 7x7x16
        out = self.conv_3_bn(out)
        out = F.relu(out)

        out = self.conv_4(out) # 7x7x16 => 7x7x32
        out = self.conv_4_bn(out)

        # match up dimensions using a linear function (no relu)
        shortcut = self.conv_shortcut_2(shortcut)
        shortcut = self.conv_shortcut_2_bn(shortcut)

        out += shortcut
        out = F.relu(out)

        #########################
        ### Fully connected
        #########################
        logits = self.linear_1(out.view(-1, 7*7*32))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)
model = model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for i, (features, targets) in enumerate(data_loader):
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

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

    model = model.eval() # eval mode to prevent upd. batchnorm params during inference
    with torch.set_grad_enabled(False): # save memory during inference
        print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
              epoch+1, num_epochs,
              compute_accuracy(model, train_loader)))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
class ResidualBlock(torch.nn.Module):

    def __init__(self, channels):

        super(ResidualBlock, self).__init__()
        self.conv_1 = torch.nn.Conv2d(in_channels=channels[0],
                                      out_channels=channels[1],
                                      kernel_size=(3, 3),
                                      stride=(2, 2),
                                      padding=1)
        self.conv_1_bn = torch.nn.BatchNorm2d(channels[1])

        self.conv_2 = torch.nn.Conv2d(in_channels=channels[1],
                                      out_channels=channels[2],
                                      kernel_size=(1, 1),
                                      stride=(1, 1),
                                      padding=0)
        self.conv_2_bn = torch.nn.BatchNorm2d(channels[2])

        self.conv_shortcut_1 = torch.nn.Conv2d(in_channels=channels[0],
                                               out_channels=channels[2],
                                               kernel_size=(1, 1),
                                               stride=(2, 2),
                                               padding=0)
        self.conv_shortcut_1_bn = torch.nn.BatchNorm2d(channels[2])

    def forward(self, x):
        shortcut = x

        out = self.conv_1(x)
        out = self.conv_1_bn(out)
        out = F.relu(out)

        out = self.conv_2(out)
        out = self.conv_2_bn(out)

        # match up dimensions using a linear function (no relu)
        shortcut = self.conv_shortcut_1(shortcut)
        shortcut = self.conv_shortcut_1_bn(shortcut)

        out += shortcut
        out = F.relu(out)

        return out
##########################
### MODEL
##########################

class ConvNet(torch.nn.Module):

    def __init__(self, num_classes):
        super(ConvNet, self).__init__()

        self.residual_block_1 = ResidualBlock(channels=[1, 4, 8])
        self.residual_block_2 = ResidualBlock(channels=[8, 16, 32])

        self.linear_1 = torch.nn.Linear(7*7*32, num_classes)

    def forward(self, x):

        out = self.residual_block_1.forward(x)
        out = self.residual_block_2.forward(out)

        logits = self.linear_1(out.view(-1, 7*7*32))
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(random_seed)
model = ConvNet(num_classes=num_classes)

model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
def compute_accuracy(model, data_loader):
    correct_pred, num_examples = 0, 0
    for i, (features, targets) in enumerate(data_loader):
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100

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
                     len(train_dataset)//batch_size, cost))

    model = model.eval() # eval mode to prevent upd. batchnorm params during inference
    with torch.set_grad_enabled(False): # save memory during inference
        print('Epoch: %03d/%03d training accuracy: %.2f%%' % (
              epoch+1, num_epochs,
              compute_accuracy(model, train_loader)))
print('Test accuracy: %.2f%%' % (compute_accuracy(model, test_loader)))
"""


# pytorch_ipynb/cnn/cnn-resnet18-mnist.ipynb, its code cells (magics and plots left out)
CNN_RESNET18_MNIST = r'''
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
NUM_EPOCHS = 2  # port: 10, for a shared CPU

# Architecture
NUM_FEATURES = 28*28
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)
GRAYSCALE = True
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

def conv3x3(in_planes, out_planes, stride=1):
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride,
                     padding=1, bias=False)

class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            residual = self.downsample(x)

        out += residual
        out = self.relu(out)

        return out

class ResNet(nn.Module):

    def __init__(self, block, layers, num_classes, grayscale):
        self.inplanes = 8  # port: 64 channels, for a shared CPU
        if grayscale:
            in_dim = 1
        else:
            in_dim = 3
        super(ResNet, self).__init__()
        self.conv1 = nn.Conv2d(in_dim, 8, kernel_size=7, stride=2, padding=3,  # port: 64 channels, for a shared CPU
                               bias=False)
        self.bn1 = nn.BatchNorm2d(8)  # port: 64 channels, for a shared CPU
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 8, layers[0])  # port: 64 channels, for a shared CPU
        self.layer2 = self._make_layer(block, 8, layers[1], stride=2)  # port: 128 channels, for a shared CPU
        self.layer3 = self._make_layer(block, 16, layers[2], stride=2)  # port: 256 channels, for a shared CPU
        self.layer4 = self._make_layer(block, 16, layers[3], stride=2)  # port: 512 channels, for a shared CPU
        self.avgpool = nn.AvgPool2d(7, stride=1)
        self.fc = nn.Linear(16 * block.expansion, num_classes)  # port: 512 channels, for a shared CPU

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                next(m.parameters()).data.normal_(0, (2. / n)**.5)  # port: m.weight by position: tricycle names a convolution's weights (documented)
            elif isinstance(m, nn.BatchNorm2d):
                next(m.parameters()).data.fill_(1)  # port: m.weight by position: a norm's is tricycle's gamma (documented)
                list(m.parameters())[1].data.zero_()  # port: m.bias by position: a norm's is tricycle's beta (documented)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion,
                          kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for i in range(1, blocks):
            layers.append(block(self.inplanes, planes))

        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        # because MNIST is already 1x1 here:
        # disable avg pooling
        #x = self.avgpool(x)

        x = x.view(x.size(0), -1)
        logits = self.fc(x)
        probas = F.softmax(logits, dim=1)
        return logits, probas

def resnet18(num_classes):
    """Constructs a ResNet-18 model."""
    model = ResNet(block=BasicBlock,
                   layers=[2, 2, 2, 2],
                   num_classes=NUM_CLASSES,
                   grayscale=GRAYSCALE)
    return model

torch.manual_seed(RANDOM_SEED)

model = resnet18(NUM_CLASSES)
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
'''


# pytorch_ipynb/cnn/cnn-densenet121-mnist.ipynb, its code cells (magics and plots left out)
CNN_DENSENET121_MNIST = r'''
import os
import time

import numpy as np
# import pandas as pd  # port: pandas unused (not installed)

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.dataset import Subset

from torchvision import datasets
from torchvision import transforms

# import matplotlib.pyplot as plt  # port: plotting dropped
# from PIL import Image  # port: PIL unused

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
# import matplotlib.pyplot as plt  # port: plotting dropped
##########################
### SETTINGS
##########################

# Hyperparameters
RANDOM_SEED = 1
LEARNING_RATE = 0.003  # port: 0.0001, for the fewer steps
BATCH_SIZE = 32  # port: 128, for the small data
NUM_EPOCHS = 3  # port: 10, for a shared CPU

# Architecture
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)
GRAYSCALE = True
train_indices = torch.arange(0, 160)  # port: 59000, the stand-in's 192 images
valid_indices = torch.arange(160, 192)  # port: 60000, the stand-in's 192 images

resize_transform = transforms.Compose([transforms.Resize((32, 32)),
                                       transforms.ToTensor()])

train_and_valid = datasets.MNIST(root='data',
                                 train=True,
                                 transform=resize_transform,
                                 download=True)

test_dataset = datasets.MNIST(root='data',
                              train=False,
                              transform=resize_transform,
                              download=True)

train_dataset = Subset(train_and_valid, train_indices)
valid_dataset = Subset(train_and_valid, valid_indices)

train_loader = DataLoader(dataset=train_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 4 worker processes, on a shared CPU
                          shuffle=True)

valid_loader = DataLoader(dataset=valid_dataset,
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: 4 worker processes, on a shared CPU
                          shuffle=False)

test_loader = DataLoader(dataset=test_dataset,
                         batch_size=BATCH_SIZE,
                         num_workers=0,  # port: 4 worker processes, on a shared CPU
                         shuffle=False)
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
# Check that shuffling works properly
# i.e., label indices should be in random order.
# Also, the label order should be different in the second
# epoch.

for images, labels in train_loader:
    pass
print(labels[:10])

for images, labels in train_loader:
    pass
print(labels[:10])
# Check that validation set and test sets are diverse
# i.e., that they contain all classes

for images, labels in valid_loader:
    pass
print(labels[:10])

for images, labels in test_loader:
    pass
print(labels[:10])
##########################
### MODEL
##########################

# The following code cell that implements the DenseNet-121 architecture
# is a derivative of the code provided at
# https://github.com/pytorch/vision/blob/master/torchvision/models/densenet.py

import re
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp
from collections import OrderedDict

def _bn_function_factory(norm, relu, conv):
    def bn_function(*inputs):
        concated_features = torch.cat(inputs, 1)
        bottleneck_output = conv(relu(norm(concated_features)))
        return bottleneck_output

    return bn_function

class _DenseLayer(nn.Sequential):
    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate, memory_efficient=False):
        super(_DenseLayer, self).__init__()
        self.add_module('norm1', nn.BatchNorm2d(num_input_features)),
        self.add_module('relu1', nn.ReLU(inplace=True)),
        self.add_module('conv1', nn.Conv2d(num_input_features, bn_size *
                                           growth_rate, kernel_size=1, stride=1,
                                           bias=False)),
        self.add_module('norm2', nn.BatchNorm2d(bn_size * growth_rate)),
        self.add_module('relu2', nn.ReLU(inplace=True)),
        self.add_module('conv2', nn.Conv2d(bn_size * growth_rate, growth_rate,
                                           kernel_size=3, stride=1, padding=1,
                                           bias=False)),
        self.drop_rate = drop_rate
        self.memory_efficient = memory_efficient

    def forward(self, *prev_features):
        bn_function = _bn_function_factory(self.norm1, self.relu1, self.conv1)
        if self.memory_efficient and any(prev_feature.requires_grad for prev_feature in prev_features):
            bottleneck_output = cp.checkpoint(bn_function, *prev_features)
        else:
            bottleneck_output = bn_function(*prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate,
                                     training=self.training)
        return new_features

class _DenseBlock(nn.Module):
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate, memory_efficient=False):
        super(_DenseBlock, self).__init__()
        for i in range(num_layers):
            layer = _DenseLayer(
                num_input_features + i * growth_rate,
                growth_rate=growth_rate,
                bn_size=bn_size,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient,
            )
            self.add_module('denselayer%d' % (i + 1), layer)

    def forward(self, init_features):
        features = [init_features]
        for name, layer in self.named_children():
            new_features = layer(*features)
            features.append(new_features)
        return torch.cat(features, 1)

class _Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super(_Transition, self).__init__()
        self.add_module('norm', nn.BatchNorm2d(num_input_features))
        self.add_module('relu', nn.ReLU(inplace=True))
        self.add_module('conv', nn.Conv2d(num_input_features, num_output_features,
                                          kernel_size=1, stride=1, bias=False))
        self.add_module('pool', nn.AvgPool2d(kernel_size=2, stride=2))

class DenseNet121(nn.Module):
    r"""Densenet-BC model class, based on
    `"Densely Connected Convolutional Networks" <https://arxiv.org/pdf/1608.06993.pdf>`_

    Args:
        growth_rate (int) - how many filters to add each layer (`k` in paper)
        block_config (list of 4 ints) - how many layers in each pooling block
        num_init_featuremaps (int) - the number of filters to learn in the first convolution layer
        bn_size (int) - multiplicative factor for number of bottle neck layers
          (i.e. bn_size * k features in the bottleneck layer)
        drop_rate (float) - dropout rate after each dense layer
        num_classes (int) - number of classification classes
        memory_efficient (bool) - If True, uses checkpointing. Much more memory efficient,
          but slower. Default: *False*. See `"paper" <https://arxiv.org/pdf/1707.06990.pdf>`_
    """

    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16),
                 num_init_featuremaps=64, bn_size=4, drop_rate=0, num_classes=1000, memory_efficient=False,
                 grayscale=False):

        super(DenseNet121, self).__init__()

        # First convolution
        if grayscale:
            in_channels=1
        else:
            in_channels=3

        self.features = nn.Sequential(OrderedDict([
            ('conv0', nn.Conv2d(in_channels=in_channels, out_channels=num_init_featuremaps,
                                kernel_size=7, stride=2,
                                padding=3, bias=False)), # bias is redundant when using batchnorm
            ('norm0', nn.BatchNorm2d(num_features=num_init_featuremaps)),
            ('relu0', nn.ReLU(inplace=True)),
            ('pool0', nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))

        # Each denseblock
        num_features = num_init_featuremaps
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(
                num_layers=num_layers,
                num_input_features=num_features,
                bn_size=bn_size,
                growth_rate=growth_rate,
                drop_rate=drop_rate,
                memory_efficient=memory_efficient
            )
            self.features.add_module('denseblock%d' % (i + 1), block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                trans = _Transition(num_input_features=num_features,
                                    num_output_features=num_features // 2)
                self.features.add_module('transition%d' % (i + 1), trans)
                num_features = num_features // 2

        # Final batch norm
        self.features.add_module('norm5', nn.BatchNorm2d(num_features))

        # Linear layer
        self.classifier = nn.Linear(num_features, num_classes)

        # Official init from torch repo.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(next(m.parameters()))  # port: m.weight by position: tricycle names a convolution's weights (documented)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(next(m.parameters()), 1)  # port: m.weight by position: a norm's is tricycle's gamma (documented)
                nn.init.constant_(list(m.parameters())[1], 0)  # port: m.bias by position: a norm's is tricycle's beta (documented)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        features = self.features(x)
        out = F.relu(features, inplace=True)
        out = F.adaptive_avg_pool2d(out, (1, 1))
        out = torch.flatten(out, 1)
        logits = self.classifier(out)
        probas = F.softmax(logits, dim=1)
        return logits, probas
torch.manual_seed(RANDOM_SEED)

model = DenseNet121(num_classes=NUM_CLASSES, grayscale=GRAYSCALE, growth_rate=4, block_config=(2, 2, 2, 2), num_init_featuremaps=8, bn_size=2)  # port: 121 layers of 32 features, for a shared CPU
model.to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
def compute_acc(model, data_loader, device):
    correct_pred, num_examples = 0, 0
    model.eval()
    for i, (features, targets) in enumerate(data_loader):

        features = features.to(device)
        targets = targets.to(device)

        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        assert predicted_labels.size() == targets.size()
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100
start_time = time.time()

cost_list = []
train_acc_list, valid_acc_list = [], []

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

        #################################################
        ### CODE ONLY FOR LOGGING BEYOND THIS POINT
        ################################################
        cost_list.append(cost.item())
        if not batch_idx % 2:  # port: 150, for the fewer batches
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |'
                   f' Cost: {cost:.4f}')

    model.eval()
    with torch.set_grad_enabled(False): # save memory during inference

        train_acc = compute_acc(model, train_loader, device=DEVICE)
        valid_acc = compute_acc(model, valid_loader, device=DEVICE)

        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d}\n'
              f'Train ACC: {train_acc:.2f} | Validation ACC: {valid_acc:.2f}')

        train_acc_list.append(train_acc)
        valid_acc_list.append(valid_acc)

    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')

elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')
# plt.plot(cost_list, label='Minibatch cost')  # port: plotting dropped
# plt.plot(np.convolve(cost_list,  # port: plotting dropped
# np.ones(200,)/200, mode='valid'),  # port: plotting dropped
# label='Running average')  # port: plotting dropped

# plt.ylabel('Cross Entropy')  # port: plotting dropped
# plt.xlabel('Iteration')  # port: plotting dropped
# plt.legend()  # port: plotting dropped
# plt.show()  # port: plotting dropped

# plt.plot(np.arange(1, NUM_EPOCHS+1), train_acc_list, label='Training')  # port: plotting dropped
# plt.plot(np.arange(1, NUM_EPOCHS+1), valid_acc_list, label='Validation')  # port: plotting dropped

# plt.xlabel('Epoch')  # port: plotting dropped
# plt.ylabel('Accuracy')  # port: plotting dropped
# plt.legend()  # port: plotting dropped
# plt.show()  # port: plotting dropped
with torch.set_grad_enabled(False):
    test_acc = compute_acc(model=model,
                           data_loader=test_loader,
                           device=DEVICE)

    valid_acc = compute_acc(model=model,
                            data_loader=valid_loader,
                            device=DEVICE)

print(f'Validation ACC: {valid_acc:.2f}%')
print(f'Test ACC: {test_acc:.2f}%')
'''


# pytorch_ipynb/cnn/cnn-alexnet-cifar10-grouped.ipynb, its code cells (magics and plots left out)
CNN_ALEXNET_CIFAR10_GROUPED = r"""
import os
import time
import random

import numpy as np
# import pandas as pd  # port: pandas unused (not installed)

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torch.utils.data.dataset import Subset

from torchvision import datasets
from torchvision import transforms

# import matplotlib.pyplot as plt  # port: plotting dropped
# from PIL import Image  # port: PIL unused

if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
def set_all_seeds(seed):
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
def set_deterministic():
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    torch.set_deterministic(True)
##########################
### SETTINGS
##########################

# Hyperparameters
RANDOM_SEED = 1
LEARNING_RATE = 0.003  # port: 0.0001, for the fewer steps
BATCH_SIZE = 32  # port: 256, for the small data
NUM_EPOCHS = 3  # port: 40, for a shared CPU

# Architecture
NUM_CLASSES = 10

# Other
DEVICE = "cpu"  # port: the CPU under both (no GPU in the test)

set_all_seeds(RANDOM_SEED)

# Deterministic behavior not yet supported by AdaptiveAvgPool2d
#set_deterministic()
import sys

sys.path.insert(0, "..") # to include ../helper_evaluate.py etc.

from helper_evaluate import compute_accuracy
from helper_data import get_dataloaders_cifar10
from helper_train import train_classifier_simple_v1
### Set random seed ###
set_all_seeds(RANDOM_SEED)

##########################
### Dataset
##########################

train_transforms = transforms.Compose([transforms.Resize((70, 70)),
                                       transforms.RandomCrop((64, 64)),
                                       transforms.ToTensor()])

test_transforms = transforms.Compose([transforms.Resize((70, 70)),
                                      transforms.CenterCrop((64, 64)),
                                      transforms.ToTensor()])

train_loader, valid_loader, test_loader = get_dataloaders_cifar10(
    batch_size=BATCH_SIZE,
    num_workers=0,  # port: worker processes, on a shared CPU
    train_transforms=train_transforms,
    test_transforms=test_transforms,
    validation_fraction=0.1)
# Checking the dataset
print('Training Set:\n')
for images, labels in train_loader:
    print('Image batch dimensions:', images.size())
    print('Image label dimensions:', labels.size())
    print(labels[:10])
    break

# Checking the dataset
print('\nValidation Set:')
for images, labels in valid_loader:
    print('Image batch dimensions:', images.size())
    print('Image label dimensions:', labels.size())
    print(labels[:10])
    break

# Checking the dataset
print('\nTesting Set:')
for images, labels in train_loader:
    print('Image batch dimensions:', images.size())
    print('Image label dimensions:', labels.size())
    print(labels[:10])
    break
##########################
### MODEL
##########################

class AlexNet(nn.Module):

    def __init__(self, num_classes):
        super(AlexNet, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=11, stride=4, padding=2),  # port: 64 channels, for a shared CPU
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),

            nn.Conv2d(8, 16, kernel_size=5, padding=2, groups=2),  # port: 192 channels, for a shared CPU
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),

            nn.Conv2d(16, 16, kernel_size=3, padding=1, groups=2),  # port: 384 channels, for a shared CPU
            nn.ReLU(inplace=True),

            nn.Conv2d(16, 16, kernel_size=3, padding=1, groups=2),  # port: 256 channels, for a shared CPU
            nn.ReLU(inplace=True),

            nn.Conv2d(16, 16, kernel_size=3, padding=1, groups=2),  # port: 256 channels, for a shared CPU
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(0.5),
            nn.Linear(16 * 6 * 6, 32),  # port: 256 channels and 4096 features, for a shared CPU
            nn.ReLU(inplace=True),
            nn.Dropout(0.5),
            nn.Linear(32, 24),  # port: 4096 features, for a shared CPU
            nn.ReLU(inplace=True),
            nn.Linear(24, num_classes)  # port: 4096 features, for a shared CPU
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = x.view(x.size(0), 16 * 6 * 6)  # port: 256 channels, for a shared CPU
        logits = self.classifier(x)
        probas = F.softmax(logits, dim=1)
        return logits
torch.manual_seed(RANDOM_SEED)

model = AlexNet(NUM_CLASSES)
model.to(DEVICE)

optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
log_dict = train_classifier_simple_v1(num_epochs=NUM_EPOCHS, model=model,
                                      optimizer=optimizer, device=DEVICE,
                                      train_loader=train_loader, valid_loader=valid_loader,
                                      logging_interval=1)  # port: 50, for the fewer batches
# import matplotlib.pyplot as plt  # port: plotting dropped

loss_list = log_dict['train_loss_per_batch']

# plt.plot(loss_list, label='Minibatch loss')  # port: plotting dropped
# plt.plot(np.convolve(loss_list,  # port: plotting dropped
# np.ones(200,)/200, mode='valid'),  # port: plotting dropped
# label='Running average')  # port: plotting dropped

# plt.ylabel('Cross Entropy')  # port: plotting dropped
# plt.xlabel('Iteration')  # port: plotting dropped
# plt.legend()  # port: plotting dropped
# plt.show()  # port: plotting dropped
# plt.plot(np.arange(1, NUM_EPOCHS+1), log_dict['train_acc_per_epoch'], label='Training')  # port: plotting dropped
# plt.plot(np.arange(1, NUM_EPOCHS+1), log_dict['valid_acc_per_epoch'], label='Validation')  # port: plotting dropped

# plt.xlabel('Epoch')  # port: plotting dropped
# plt.ylabel('Accuracy')  # port: plotting dropped
# plt.legend()  # port: plotting dropped
# plt.show()  # port: plotting dropped
with torch.set_grad_enabled(False):

    train_acc = compute_accuracy(model=model,
                                 data_loader=test_loader,
                                 device=DEVICE)

    test_acc = compute_accuracy(model=model,
                                data_loader=test_loader,
                                device=DEVICE)

    valid_acc = compute_accuracy(model=model,
                                 data_loader=valid_loader,
                                 device=DEVICE)

print(f'Train ACC: {valid_acc:.2f}%')
print(f'Validation ACC: {valid_acc:.2f}%')
print(f'Test ACC: {test_acc:.2f}%')
"""


# pytorch_ipynb/cnn/cnn-mobilenet-v2-cifar10.ipynb, its code cells (magics and plots left out)
CNN_MOBILENET_V2_CIFAR10 = r"""
import torch
import torchvision
import numpy as np
# import matplotlib.pyplot as plt  # port: plotting dropped
import sys
sys.path.insert(0, "..") # to include ../helper_evaluate.py etc.

# From local helper files
from helper_utils import set_all_seeds, set_deterministic
from helper_evaluate import compute_confusion_matrix, compute_accuracy
from helper_train import train_classifier_simple_v2
# from helper_plotting import plot_training_loss, plot_accuracy, show_examples, plot_confusion_matrix  # port: plotting dropped
from helper_data import get_dataloaders_cifar10, UnNormalize
##########################
### SETTINGS
##########################

RANDOM_SEED = 123
BATCH_SIZE = 32  # port: 128, for the small data
NUM_EPOCHS = 3  # port: 150, for a shared CPU
DEVICE = torch.device('cuda:3' if torch.cuda.is_available() else 'cpu')
set_all_seeds(RANDOM_SEED)
#set_deterministic()
##########################
### CIFAR-10 DATASET
##########################

### Note: Network trains about 2-3x faster if you don't
# resize (keeping the orig. 32x32 res.)
# Test acc. I got via the 32x32 was lower though; ~77%

train_transforms = torchvision.transforms.Compose([
    torchvision.transforms.Resize((36, 36)),  # port: 70, for a shared CPU
    torchvision.transforms.RandomCrop((32, 32)),  # port: 64, for a shared CPU
    torchvision.transforms.ToTensor(),
    torchvision.transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])

test_transforms = torchvision.transforms.Compose([
    torchvision.transforms.Resize((36, 36)),  # port: 70, for a shared CPU
    torchvision.transforms.CenterCrop((32, 32)),  # port: 64, for a shared CPU
    torchvision.transforms.ToTensor(),
    torchvision.transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))])

train_loader, valid_loader, test_loader = get_dataloaders_cifar10(
    batch_size=BATCH_SIZE,
    validation_fraction=0.1,
    train_transforms=train_transforms,
    test_transforms=test_transforms,
    num_workers=0)  # port: worker processes, on a shared CPU

# Checking the dataset
for images, labels in train_loader:
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    print('Class labels of 10 examples:', labels[:10])
    break
# plt.figure(figsize=(8, 8))  # port: plotting dropped
# plt.axis("off")  # port: plotting dropped
# plt.title("Training Images")  # port: plotting dropped
# plt.imshow(np.transpose(torchvision.utils.make_grid(images[:64],  # port: plotting dropped
# padding=2, normalize=True),  # port: plotting dropped
# (1, 2, 0)))  # port: plotting dropped
##########################
### MODEL
##########################

model = torchvision.models.mobilenet_v2(width_mult=0.25,  # port: torchvision's mobilenet_v2 without the hub's download, thinner for a shared CPU
                       pretrained=False)

model.classifier[-1] = torch.nn.Linear(in_features=1280, # as in original
                                       out_features=10) # number of class labels in Cifar-10)

model = model.to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)  # port: 0.01, for the fewer steps

minibatch_loss_list, train_acc_list, valid_acc_list = train_classifier_simple_v2(
    model=model,
    num_epochs=NUM_EPOCHS,
    train_loader=train_loader,
    valid_loader=valid_loader,
    test_loader=test_loader,
    optimizer=optimizer,
    best_model_save_path='mobilenet-v2-best-1.pt',
    device=DEVICE,
    scheduler_on='valid_acc',
    logging_interval=1)  # port: 100, for the fewer batches

# plot_training_loss(minibatch_loss_list=minibatch_loss_list,  # port: plotting dropped
# num_epochs=NUM_EPOCHS,  # port: plotting dropped
# iter_per_epoch=len(train_loader),  # port: plotting dropped
# results_dir=None,  # port: plotting dropped
# averaging_iterations=200)  # port: plotting dropped
# plt.show()  # port: plotting dropped

# plot_accuracy(train_acc_list=train_acc_list,  # port: plotting dropped
# valid_acc_list=valid_acc_list,  # port: plotting dropped
# results_dir=None)  # port: plotting dropped
# plt.ylim([60, 100])  # port: plotting dropped
# plt.show()  # port: plotting dropped
model.load_state_dict(torch.load('mobilenet-v2-best-1.pt'))
model.eval()
test_acc = compute_accuracy(model, test_loader, device=DEVICE)
print(f'Test accuracy: {test_acc:.2f}%')
model.cpu()
unnormalizer = UnNormalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
class_dict = {0: 'airplane',
              1: 'automobile',
              2: 'bird',
              3: 'cat',
              4: 'deer',
              5: 'dog',
              6: 'frog',
              7: 'horse',
              8: 'ship',
              9: 'truck'}

# show_examples(model=model, data_loader=test_loader, unnormalizer=unnormalizer, class_dict=class_dict)  # port: plotting dropped
mat = compute_confusion_matrix(model=model, data_loader=test_loader, device=torch.device('cpu'))
# plot_confusion_matrix(mat, class_names=class_dict.values())  # port: plotting dropped
# plt.show()  # port: plotting dropped
"""


# pytorch_ipynb/helper_utils.py, as the notebooks import it
HELPER_UTILS = r"""
import os
import random
import numpy as np
import torch


def set_all_seeds(seed):
    os.environ["PL_GLOBAL_SEED"] = str(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


def set_deterministic():
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    torch.set_deterministic(True)
"""


# pytorch_ipynb/helper_evaluate.py, helper_data.py and helper_train.py, as the notebooks import
# them: tests/test_rasbt_dl_basics.py's copies (HELPERS)


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


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


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

# torchvision.models.mobilenet_v2 (torchvision 0.9's, which the notebook's hub line loads), in
# torch's words; its init reads a convolution's and a norm's tensors by position
MODELS = r"""
import torch
from torch import nn


def _make_divisible(v, divisor, min_value=None):
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    # Make sure that round down does not go down by more than 10%.
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNActivation(nn.Sequential):
    def __init__(self, in_planes, out_planes, kernel_size=3, stride=1, groups=1,
                 norm_layer=None, activation_layer=None, dilation=1):
        padding = (kernel_size - 1) // 2 * dilation
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if activation_layer is None:
            activation_layer = nn.ReLU6
        super().__init__(
            nn.Conv2d(in_planes, out_planes, kernel_size, stride, padding, dilation=dilation, groups=groups,
                      bias=False),
            norm_layer(out_planes),
            activation_layer(inplace=True)
        )
        self.out_channels = out_planes


ConvBNReLU = ConvBNActivation


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio, norm_layer=None):
        super(InvertedResidual, self).__init__()
        self.stride = stride
        assert stride in [1, 2]

        if norm_layer is None:
            norm_layer = nn.BatchNorm2d

        hidden_dim = int(round(inp * expand_ratio))
        self.use_res_connect = self.stride == 1 and inp == oup

        layers = []
        if expand_ratio != 1:
            # pw
            layers.append(ConvBNReLU(inp, hidden_dim, kernel_size=1, norm_layer=norm_layer))
        layers.extend([
            # dw
            ConvBNReLU(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim, norm_layer=norm_layer),
            # pw-linear
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),
            norm_layer(oup),
        ])
        self.conv = nn.Sequential(*layers)
        self.out_channels = oup
        self._is_cn = stride > 1

    def forward(self, x):
        if self.use_res_connect:
            return x + self.conv(x)
        else:
            return self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, inverted_residual_setting=None,
                 round_nearest=8, block=None, norm_layer=None):
        super(MobileNetV2, self).__init__()

        if block is None:
            block = InvertedResidual

        if norm_layer is None:
            norm_layer = nn.BatchNorm2d

        input_channel = 32
        last_channel = 1280

        if inverted_residual_setting is None:
            inverted_residual_setting = [
                # t, c, n, s
                [1, 16, 1, 1],
                [6, 24, 2, 2],
                [6, 32, 3, 2],
                [6, 64, 4, 2],
                [6, 96, 3, 1],
                [6, 160, 3, 2],
                [6, 320, 1, 1],
            ]

        # only check the first element, assuming user knows t,c,n,s are required
        if len(inverted_residual_setting) == 0 or len(inverted_residual_setting[0]) != 4:
            raise ValueError("inverted_residual_setting should be non-empty "
                             "or a 4-element list, got {}".format(inverted_residual_setting))

        # building first layer
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features = [ConvBNReLU(3, input_channel, stride=2, norm_layer=norm_layer)]
        # building inverted residual blocks
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(block(input_channel, output_channel, stride, expand_ratio=t, norm_layer=norm_layer))
                input_channel = output_channel
        # building last several layers
        features.append(ConvBNReLU(input_channel, self.last_channel, kernel_size=1, norm_layer=norm_layer))
        # make it nn.Sequential
        self.features = nn.Sequential(*features)

        # building classifier
        self.classifier = nn.Sequential(
            nn.Dropout(0.2),
            nn.Linear(self.last_channel, num_classes),
        )

        # weight initialization
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(next(m.parameters()), mode='fan_out')  # port: m.weight by position (documented)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(next(m.parameters()))  # port: m.weight by position: a norm's gamma (documented)
                nn.init.zeros_(list(m.parameters())[1])  # port: m.bias by position: a norm's beta (documented)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(next(m.parameters()), 0, 0.01)  # port: m.weight by position (documented)
                nn.init.zeros_(m.bias)

    def _forward_impl(self, x):
        # This exists since TorchScript doesn't support inheritance, so the superclass method
        # (this one) needs to have a name other than `forward` that can be accessed in a subclass
        x = self.features(x)
        # Cannot use "squeeze" as batch-size can be 1 => must use reshape with x.shape[0]
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1)).reshape(x.shape[0], -1)
        x = self.classifier(x)
        return x

    def forward(self, x):
        return self._forward_impl(x)


def mobilenet_v2(pretrained=False, progress=True, **kwargs):
    assert not pretrained  # port: no download of the pretrained weights
    model = MobileNetV2(**kwargs)
    return model
"""

TRANSFORMS = "ToTensor", "Normalize", "Resize", "RandomCrop", "CenterCrop", "Compose"


@functools.cache
def images() -> dict:
    """The datasets' images, uint8 as PIL's: MNIST's 192 and 64 digits (sklearn's, at 28x28)
    and CIFAR-10's 96 and 32 (the digits at 32x32, each class its own colour and each image
    its own brightness). Made once (the datasets only read them)."""
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
    exec(MODELS.replace("torch", lib.__name__), parts["models"].__dict__)
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
    for name in "helper_utils", "helper_evaluate", "helper_data", "helper_train":
        text = HELPER_UTILS if name == "helper_utils" else HELPERS[name]
        module = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, module)
        exec(text.replace("torch", lib.__name__), module.__dict__)
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
    the cross-entropy with ``labels`` (input and parameters), in train and in eval mode (the
    dropout's rate made 0)."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(our_model, their_model.state_dict()) == ([], [])
    for lib, net in (torch, their_model), (tricycle, our_model):  # the libraries draw other masks
        for module in net.modules():
            if isinstance(module, lib.nn.Dropout):
                module.p = 0.0
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


def same_steps(their_model, our_model, inputs, labels, steps: int = 3) -> None:
    """From the same weights (``same_model`` first), a few Adam steps on one batch: the losses
    fall under both libraries, and tricycle's are torch's."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    losses = []
    for lib, net in (torch, their_model), (tricycle, our_model):
        net.train()
        optimizer = lib.optim.Adam(net.parameters(), lr=1e-3)
        losses.append([])
        for _ in range(steps):
            logits = net(lib.tensor(inputs))
            logits = logits[0] if isinstance(logits, tuple) else logits
            loss = lib.nn.functional.cross_entropy(logits, lib.tensor(labels))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses[-1].append(loss.item())
        fell(losses[-1], 1.0)
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-3)


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


LOSS = r"Batch \d+/\d+ \| Loss: ([\d.]+)"


def costs_by_model(printed: str, pattern: str = COST) -> list[list[float]]:
    """The logged costs of each model a notebook trains (a new model starts at epoch 1)."""
    runs = []
    for line in printed.splitlines():
        cost = re.search(pattern, line)
        if cost and (not runs or re.search(r"Epoch: 0*1/.*Batch 0+/", line)):
            runs.append([])
        if cost:
            runs[-1].append(float(cost[cost.lastindex]))
    return runs


@pytest.mark.parametrize("name", ["NIN_CIFAR10", "NIN_CIFAR10_BATCHNORM"])
def test_nin(name, tmp_path, monkeypatch):
    """NiN's 1x1 convolutions in a ``Sequential`` of ``ReLU(inplace=True)``, ``Dropout`` and
    ``AvgPool2d``, ``Subset`` by ``torch.arange`` indices; then with ``BatchNorm2d`` before and
    after the ``ReLU``: those learn (the plain one, the notebook's lesson, barely moves)."""
    (theirs, their), (ours, our) = both(globals()[name], tmp_path, monkeypatch)
    same_lines(theirs, ours)
    for printed in theirs, ours:
        runs = costs_by_model(printed)
        assert len(runs) == (1 if name == "NIN_CIFAR10" else 3)
        for costs in runs[1:]:
            fell(costs, 0.99)
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=(4, 3, 32, 32)).astype(np.float32)
    same_model(their["model"], our["model"], inputs, rng.integers(0, 10, 4))


# each notebook: its logged cost, the shape of its model's input, the tolerance of its gradients
NOTEBOOKS = {
    "CNN_VGG16": (r"Train: [\d.]+% \|  Loss: ([\d.]+)", (4, 3, 32, 32), 1e-5),
    "RESNET_EX_1": (COST, (4, 1, 28, 28), 1e-5),
    "CNN_RESNET18_MNIST": (COST, (4, 1, 28, 28), 1e-5),
    "CNN_DENSENET121_MNIST": (COST, (4, 1, 32, 32), 1e-4),  # 20 layers of float32 batch norms
    "CNN_ALEXNET_CIFAR10_GROUPED": (LOSS, (4, 3, 64, 64), 1e-5),
    # its last batch norms see 1x1 maps: 16 samples, else their statistics are ill-conditioned
    "CNN_MOBILENET_V2_CIFAR10": (LOSS, (16, 3, 32, 32), 1e-4),
}


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_deeper_convnets(name, tmp_path, monkeypatch):
    """VGG-16 (``kaiming_uniform_``), the residual blocks of resnet-ex-1, ResNet-18 (its
    ``BasicBlock`` with ``downsample``), DenseNet-121 (``Sequential`` subclasses filled by
    ``add_module``, ``torch.cat`` of the features), AlexNet with grouped convolutions and
    MobileNet-v2 (depthwise convolutions, ``ReLU6``; the helper modules' training loops,
    ``SubsetRandomSampler`` and ``torch.save`` of the best model): both libraries print the
    same lines, learn, and given torch's weights give its logits and gradients."""
    cost, shape, atol = NOTEBOOKS[name]
    (theirs, their), (ours, our) = both(globals()[name], tmp_path, monkeypatch)
    same_lines(theirs, ours)
    for printed in theirs, ours:  # AlexNet and MobileNet barely move in their few steps
        for costs in costs_by_model(printed, cost) if cost != LOSS else []:
            fell(costs, 0.99)
    rng = np.random.default_rng(1)
    inputs, labels = rng.normal(size=shape).astype(np.float32), rng.integers(0, 10, shape[0])
    same_model(their["model"], our["model"], inputs, labels, atol=atol)
    same_steps(their["model"], our["model"], inputs, labels)
    if name == "CNN_MOBILENET_V2_CIFAR10":  # the confusion matrix of the 32 test images
        assert our["mat"].shape == their["mat"].shape and our["mat"].sum() == 32
