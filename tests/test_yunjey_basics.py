"""yunjey's "pytorch-tutorial" (github.com/yunjey/pytorch-tutorial), its 01-basics and
02-intermediate scripts, run on tricycle with ``torch`` replaced by ``tricycle`` in their text
(docs/pytorch.md's promise; the method of tests/test_torch_vision_tutorials.py):

- 01-basics/pytorch_basics: autograd on scalars, one SGD step of a ``Linear`` under
  ``MSELoss``, ``torch.from_numpy`` and ``.numpy()``, CIFAR-10 through ``DataLoader`` (one item,
  one batch by ``next(iter(...))``, a pass over all), a custom ``Dataset``, a "pretrained"
  ResNet-18 frozen by ``requires_grad = False`` with a new ``fc``, and ``torch.save`` of the
  whole model and of its ``state_dict``, loaded back;
- 01-basics/linear_regression (its matplotlib plot on Agg), logistic_regression
  (``nn.Linear`` under ``CrossEntropyLoss``, ``torch.max(outputs.data, 1)``) and
  feedforward_neural_network (Adam);
- 02-intermediate/convolutional_neural_network (``Conv2d``, ``BatchNorm2d``, ``MaxPool2d``,
  ``model.eval()``), deep_residual_network (``ResidualBlock`` with ``out += residual``,
  ``make_layer``, ``AvgPool2d(8)``, the rate lowered through ``param_groups``, torchvision's
  Pad/RandomHorizontalFlip/RandomCrop), recurrent_neural_network and
  bidirectional_recurrent_neural_network (``nn.LSTM(batch_first=True)`` from ``(h0, c0)``, the
  last step's output), language_model with its ``data_utils.py`` (``Dictionary``, ``Corpus``
  writing ``torch.LongTensor(tokens)`` element by element; ``RNNLM`` with truncated
  backpropagation by ``detach``, ``clip_grad_norm_``, sampling by ``torch.multinomial`` into
  ``input.fill_``) on a small text the test writes.

torchvision is the test's: ``datasets.MNIST`` (sklearn's digits at 28x28), ``datasets.CIFAR10``
(the digits at 32x32 in colours), the four ``transforms`` the scripts use on numpy images in
PIL's place, and ``models.resnet18``, tests/test_torch_examples_a.py's small ResNet (random
weights: nothing is downloaded); under tricycle it is ``tricyclevision``, the same text.
Each changed line ends in ``# port:`` and says why (sizes and steps shrunk, a larger rate for
the fewer steps). Each script runs under torch (skipped without it), then under tricycle, both
on the CPU and seeded; both print the same lines (numbers aside) and learn. Then each model
is given torch's weights (``nn.from_torch``) and gives torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_tutorials_u import digits28
from tests.test_torch_vision_tutorials import RESNET, grads_as_torchs, host

pytestmark = [  # matplotlib's Agg, asked to show the linear regression's plot
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
]

BASICS = r"""
import torch 
import torchvision
import torch.nn as nn
import numpy as np
import torchvision.transforms as transforms


# ================================================================== #
#                     1. Basic autograd example 1                    #
# ================================================================== #

# Create tensors.
x = torch.tensor(1., requires_grad=True)
w = torch.tensor(2., requires_grad=True)
b = torch.tensor(3., requires_grad=True)

# Build a computational graph.
y = w * x + b    # y = 2 * x + 3

# Compute gradients.
y.backward()

# Print out the gradients.
print(x.grad)    # x.grad = 2 
print(w.grad)    # w.grad = 1 
print(b.grad)    # b.grad = 1 


# ================================================================== #
#                    2. Basic autograd example 2                     #
# ================================================================== #

# Create tensors of shape (10, 3) and (10, 2).
x = torch.randn(10, 3)
y = torch.randn(10, 2)

# Build a fully connected layer.
linear = nn.Linear(3, 2)
print ('w: ', next(linear.parameters()))  # port: linear.weight by position: a Linear's is weights (in, out) in tricycle (documented)
print ('b: ', linear.bias)

# Build loss function and optimizer.
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(linear.parameters(), lr=0.01)

# Forward pass.
pred = linear(x)

# Compute loss.
loss = criterion(pred, y)
print('loss: ', loss.item())

# Backward pass.
loss.backward()

# Print out the gradients.
print ('dL/dw: ', next(linear.parameters()).grad)  # port: as above
print ('dL/db: ', linear.bias.grad)

# 1-step gradient descent.
optimizer.step()

# You can also perform gradient descent at the low level.
# linear.weight.data.sub_(0.01 * linear.weight.grad.data)
# linear.bias.data.sub_(0.01 * linear.bias.grad.data)

# Print out the loss after 1-step gradient descent.
pred = linear(x)
loss = criterion(pred, y)
print('loss after 1 step optimization: ', loss.item())


# ================================================================== #
#                     3. Loading data from numpy                     #
# ================================================================== #

# Create a numpy array.
x = np.array([[1, 2], [3, 4]])

# Convert the numpy array to a torch tensor.
y = torch.from_numpy(x)

# Convert the torch tensor to a numpy array.
z = y.numpy()


# ================================================================== #
#                         4. Input pipeline                           #
# ================================================================== #

# Download and construct CIFAR-10 dataset.
train_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                             train=True, 
                                             transform=transforms.ToTensor(),
                                             download=True)

# Fetch one data pair (read data from disk).
image, label = train_dataset[0]
print (image.size())
print (label)

# Data loader (this provides queues and threads in a very simple way).
train_loader = torch.utils.data.DataLoader(dataset=train_dataset,
                                           batch_size=64, 
                                           shuffle=True)

# When iteration starts, queue and thread start to load data from files.
data_iter = iter(train_loader)

# Mini-batch images and labels.
images, labels = next(data_iter)  # port: data_iter.next(), Python 2's name: torch 2's iterator has none

# Actual usage of the data loader is as below.
for images, labels in train_loader:
    # Training code should be written here.
    pass


# ================================================================== #
#                5. Input pipeline for custom dataset                 #
# ================================================================== #

# You should build your custom dataset as below.
class CustomDataset(torch.utils.data.Dataset):
    def __init__(self):
        # TODO
        # 1. Initialize file paths or a list of file names. 
        pass
    def __getitem__(self, index):
        # TODO
        # 1. Read one data from file (e.g. using numpy.fromfile, PIL.Image.open).
        # 2. Preprocess the data (e.g. torchvision.Transform).
        # 3. Return a data pair (e.g. image and label).
        pass
    def __len__(self):
        # You should change 0 to the total size of your dataset.
        return 0 

# You can then use the prebuilt data loader. 
custom_dataset = CustomDataset()
train_loader = torch.utils.data.DataLoader(dataset=custom_dataset,
                                           batch_size=64, 
                                           shuffle=False)  # port: shuffle=True: torch 2's RandomSampler refuses the TODO's empty dataset


# ================================================================== #
#                        6. Pretrained model                         #
# ================================================================== #

# Download and load the pretrained ResNet-18.
resnet = torchvision.models.resnet18(pretrained=True)

# If you want to finetune only the top layer of the model, set as below.
for param in resnet.parameters():
    param.requires_grad = False

# Replace the top layer for finetuning.
resnet.fc = nn.Linear(resnet.fc.in_features, 100)  # 100 is an example.

# Forward pass.
images = torch.randn(8, 3, 64, 64)  # port: (64, 3, 224, 224) shrunk
outputs = resnet(images)
print (outputs.size())     # (64, 100)


# ================================================================== #
#                      7. Save and load the model                    #
# ================================================================== #

# Save and load the entire model.
torch.save(resnet, 'model.ckpt')
model = torch.load('model.ckpt', weights_only=False)  # port: torch 2.6's load refuses a whole model unless weights_only=False

# Save and load only the model parameters (recommended).
torch.save(resnet.state_dict(), 'params.ckpt')
resnet.load_state_dict(torch.load('params.ckpt'))
"""

LINEAR = r"""
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt


# Hyper-parameters
input_size = 1
output_size = 1
num_epochs = 60
learning_rate = 0.001

# Toy dataset
x_train = np.array([[3.3], [4.4], [5.5], [6.71], [6.93], [4.168], 
                    [9.779], [6.182], [7.59], [2.167], [7.042], 
                    [10.791], [5.313], [7.997], [3.1]], dtype=np.float32)

y_train = np.array([[1.7], [2.76], [2.09], [3.19], [1.694], [1.573], 
                    [3.366], [2.596], [2.53], [1.221], [2.827], 
                    [3.465], [1.65], [2.904], [1.3]], dtype=np.float32)

# Linear regression model
model = nn.Linear(input_size, output_size)

# Loss and optimizer
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)  

# Train the model
for epoch in range(num_epochs):
    # Convert numpy arrays to torch tensors
    inputs = torch.from_numpy(x_train)
    targets = torch.from_numpy(y_train)

    # Forward pass
    outputs = model(inputs)
    loss = criterion(outputs, targets)
    
    # Backward and optimize
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    
    if (epoch+1) % 5 == 0:
        print ('Epoch [{}/{}], Loss: {:.4f}'.format(epoch+1, num_epochs, loss.item()))

# Plot the graph
predicted = model(torch.from_numpy(x_train)).detach().numpy()
plt.plot(x_train, y_train, 'ro', label='Original data')
plt.plot(x_train, predicted, label='Fitted line')
plt.legend()
plt.show()

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

LOGISTIC = r"""
import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Hyper-parameters 
input_size = 28 * 28    # 784
num_classes = 10
num_epochs = 5
batch_size = 50  # port: 100: 600 images, not 60000
learning_rate = 0.1  # port: 0.001: 60 steps, not 3000

# MNIST dataset (images and labels)
train_dataset = torchvision.datasets.MNIST(root='../../data', 
                                           train=True, 
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data', 
                                          train=False, 
                                          transform=transforms.ToTensor())

# Data loader (input pipeline)
train_loader = torch.utils.data.DataLoader(dataset=train_dataset, 
                                           batch_size=batch_size, 
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset, 
                                          batch_size=batch_size, 
                                          shuffle=False)

# Logistic regression model
model = nn.Linear(input_size, num_classes)

# Loss and optimizer
# nn.CrossEntropyLoss() computes softmax internally
criterion = nn.CrossEntropyLoss()  
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)  

# Train the model
total_step = len(train_loader)
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        # Reshape images to (batch_size, input_size)
        images = images.reshape(-1, input_size)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 6 == 0:  # port: % 100: 12 steps an epoch
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}' 
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
# In test phase, we don't need to compute gradients (for memory efficiency)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, input_size)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum()

    print('Accuracy of the model on the 10000 test images: {} %'.format((100 * correct / total).item()))  # port: (100 * correct / total): tricycle's format of a 0-d tensor is its repr, torch's its number (reported)

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

FEEDFORWARD = r"""
import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters 
input_size = 784
hidden_size = 500
num_classes = 10
num_epochs = 5
batch_size = 50  # port: 100: 600 images, not 60000
learning_rate = 0.001

# MNIST dataset 
train_dataset = torchvision.datasets.MNIST(root='../../data', 
                                           train=True, 
                                           transform=transforms.ToTensor(),  
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data', 
                                          train=False, 
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=train_dataset, 
                                           batch_size=batch_size, 
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset, 
                                          batch_size=batch_size, 
                                          shuffle=False)

# Fully connected neural network with one hidden layer
class NeuralNet(nn.Module):
    def __init__(self, input_size, hidden_size, num_classes):
        super(NeuralNet, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size) 
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(hidden_size, num_classes)  
    
    def forward(self, x):
        out = self.fc1(x)
        out = self.relu(out)
        out = self.fc2(out)
        return out

model = NeuralNet(input_size, hidden_size, num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)  

# Train the model
total_step = len(train_loader)
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):  
        # Move tensors to the configured device
        images = images.reshape(-1, 28*28).to(device)
        labels = labels.to(device)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 6 == 0:  # port: % 100: 12 steps an epoch
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}' 
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
# In test phase, we don't need to compute gradients (for memory efficiency)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, 28*28).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Accuracy of the network on the 10000 test images: {} %'.format(100 * correct / total))

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

CNN = r"""
import torch 
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Device configuration
device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')

# Hyper parameters
num_epochs = 2  # port: 5 shrunk
num_classes = 10
batch_size = 50  # port: 100: 200 images, not 60000
learning_rate = 0.003  # port: 0.001: 8 steps, not 3000

# MNIST dataset
train_dataset = torchvision.datasets.MNIST(root='../../data/',
                                           train=True, 
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data/',
                                          train=False, 
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=torch.utils.data.Subset(train_dataset, range(200)),  # port: dataset=train_dataset: its first 200 images
                                           batch_size=batch_size, 
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size, 
                                          shuffle=False)

# Convolutional neural network (two convolutional layers)
class ConvNet(nn.Module):
    def __init__(self, num_classes=10):
        super(ConvNet, self).__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(16, 32, kernel_size=5, stride=1, padding=2),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(7*7*32, num_classes)
        
    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.reshape(out.size(0), -1)
        out = self.fc(out)
        return out

model = ConvNet(num_classes).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.to(device)
        labels = labels.to(device)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 2 == 0:  # port: % 100: 4 steps an epoch
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}' 
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
model.eval()  # eval mode (batchnorm uses moving mean/variance instead of mini-batch mean/variance)
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total))

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

RESIDUAL = r"""
import torch
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
num_epochs = 3  # port: 80 shrunk
batch_size = 16  # port: 100: 32 images, not 50000
learning_rate = 0.003  # port: 0.001: 6 steps, not 40000

# Image preprocessing modules
transform = transforms.Compose([
    transforms.Pad(4),
    transforms.RandomHorizontalFlip(),
    transforms.RandomCrop(32),
    transforms.ToTensor()])

# CIFAR-10 dataset
train_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                             train=True, 
                                             transform=transform,
                                             download=True)

test_dataset = torchvision.datasets.CIFAR10(root='../../data/',
                                            train=False, 
                                            transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=torch.utils.data.Subset(train_dataset, range(32)),  # port: dataset=train_dataset: its first 32 images
                                           batch_size=batch_size,
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size,
                                          shuffle=False)

# 3x3 convolution
def conv3x3(in_channels, out_channels, stride=1):
    return nn.Conv2d(in_channels, out_channels, kernel_size=3, 
                     stride=stride, padding=1, bias=False)

# Residual block
class ResidualBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1, downsample=None):
        super(ResidualBlock, self).__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(out_channels, out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = downsample
        
    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample:
            residual = self.downsample(x)
        out += residual
        out = self.relu(out)
        return out

# ResNet
class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=10):
        super(ResNet, self).__init__()
        self.in_channels = 16
        self.conv = conv3x3(3, 16)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = self.make_layer(block, 16, layers[0])
        self.layer2 = self.make_layer(block, 32, layers[1], 2)
        self.layer3 = self.make_layer(block, 64, layers[2], 2)
        self.avg_pool = nn.AvgPool2d(8)
        self.fc = nn.Linear(64, num_classes)
        
    def make_layer(self, block, out_channels, blocks, stride=1):
        downsample = None
        if (stride != 1) or (self.in_channels != out_channels):
            downsample = nn.Sequential(
                conv3x3(self.in_channels, out_channels, stride=stride),
                nn.BatchNorm2d(out_channels))
        layers = []
        layers.append(block(self.in_channels, out_channels, stride, downsample))
        self.in_channels = out_channels
        for i in range(1, blocks):
            layers.append(block(out_channels, out_channels))
        return nn.Sequential(*layers)
    
    def forward(self, x):
        out = self.conv(x)
        out = self.bn(out)
        out = self.relu(out)
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.avg_pool(out)
        out = out.view(out.size(0), -1)
        out = self.fc(out)
        return out
    
model = ResNet(ResidualBlock, [1, 1, 1]).to(device)  # port: [2, 2, 2]: one block a stage


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# For updating learning rate
def update_lr(optimizer, lr):    
    for param_group in optimizer.param_groups:
        param_group['lr'] = lr

# Train the model
total_step = len(train_loader)
curr_lr = learning_rate
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.to(device)
        labels = labels.to(device)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 1 == 0:  # port: % 100: 2 steps an epoch
            print ("Epoch [{}/{}], Step [{}/{}] Loss: {:.4f}"
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

    # Decay learning rate
    if (epoch+1) % 2 == 0:  # port: % 20: after 2 of 3 epochs
        curr_lr /= 3
        update_lr(optimizer, curr_lr)

# Test the model
model.eval()
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Accuracy of the model on the test images: {} %'.format(100 * correct / total))

# Save the model checkpoint
torch.save(model.state_dict(), 'resnet.ckpt')
"""

RNN = r"""
import torch 
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
sequence_length = 28
input_size = 28
hidden_size = 32  # port: 128 shrunk
num_layers = 2
num_classes = 10
batch_size = 50  # port: 100: 300 images, not 60000
num_epochs = 2
learning_rate = 0.01

# MNIST dataset
train_dataset = torchvision.datasets.MNIST(root='../../data/',
                                           train=True, 
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data/',
                                          train=False, 
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=torch.utils.data.Subset(train_dataset, range(300)),  # port: dataset=train_dataset: its first 300 images
                                           batch_size=batch_size, 
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size, 
                                          shuffle=False)

# Recurrent neural network (many-to-one)
class RNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, num_classes)
    
    def forward(self, x):
        # Set initial hidden and cell states 
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device) 
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(device)
        
        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size)
        
        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out

model = RNN(input_size, hidden_size, num_layers, num_classes).to(device)


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Train the model
total_step = len(train_loader)
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 2 == 0:  # port: % 100: 6 steps an epoch
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}' 
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
model.eval()
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total)) 

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

BIRNN = r"""
import torch 
import torch.nn as nn
import torchvision
import torchvision.transforms as transforms


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
sequence_length = 28
input_size = 28
hidden_size = 32  # port: 128 shrunk
num_layers = 2
num_classes = 10
batch_size = 50  # port: 100: 300 images, not 60000
num_epochs = 2
learning_rate = 0.01  # port: 0.003: 12 steps, not 1200

# MNIST dataset
train_dataset = torchvision.datasets.MNIST(root='../../data/',
                                           train=True, 
                                           transform=transforms.ToTensor(),
                                           download=True)

test_dataset = torchvision.datasets.MNIST(root='../../data/',
                                          train=False, 
                                          transform=transforms.ToTensor())

# Data loader
train_loader = torch.utils.data.DataLoader(dataset=torch.utils.data.Subset(train_dataset, range(300)),  # port: dataset=train_dataset: its first 300 images
                                           batch_size=batch_size, 
                                           shuffle=True)

test_loader = torch.utils.data.DataLoader(dataset=test_dataset,
                                          batch_size=batch_size, 
                                          shuffle=False)

# Bidirectional recurrent neural network (many-to-one)
class BiRNN(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers, num_classes):
        super(BiRNN, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(hidden_size*2, num_classes)  # 2 for bidirection
    
    def forward(self, x):
        # Set initial states
        h0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device) # 2 for bidirection 
        c0 = torch.zeros(self.num_layers*2, x.size(0), self.hidden_size).to(device)
        
        # Forward propagate LSTM
        out, _ = self.lstm(x, (h0, c0))  # out: tensor of shape (batch_size, seq_length, hidden_size*2)
        
        # Decode the hidden state of the last time step
        out = self.fc(out[:, -1, :])
        return out

model = BiRNN(input_size, hidden_size, num_layers, num_classes).to(device)


# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    
# Train the model
total_step = len(train_loader)
for epoch in range(num_epochs):
    for i, (images, labels) in enumerate(train_loader):
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        
        # Forward pass
        outputs = model(images)
        loss = criterion(outputs, labels)
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 2 == 0:  # port: % 100: 6 steps an epoch
            print ('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}' 
                   .format(epoch+1, num_epochs, i+1, total_step, loss.item()))

# Test the model
with torch.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        images = images.reshape(-1, sequence_length, input_size).to(device)
        labels = labels.to(device)
        outputs = model(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

    print('Test Accuracy of the model on the 10000 test images: {} %'.format(100 * correct / total)) 

# Save the model checkpoint
torch.save(model.state_dict(), 'model.ckpt')
"""

DATA_UTILS = r"""
import torch
import os


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0
    
    def add_word(self, word):
        if not word in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1
    
    def __len__(self):
        return len(self.word2idx)


class Corpus(object):
    def __init__(self):
        self.dictionary = Dictionary()

    def get_data(self, path, batch_size=20):
        # Add words to the dictionary
        with open(path, 'r') as f:
            tokens = 0
            for line in f:
                words = line.split() + ['<eos>']
                tokens += len(words)
                for word in words: 
                    self.dictionary.add_word(word)  
        
        # Tokenize the file content
        ids = torch.LongTensor(tokens)
        token = 0
        with open(path, 'r') as f:
            for line in f:
                words = line.split() + ['<eos>']
                for word in words:
                    ids[token] = self.dictionary.word2idx[word]
                    token += 1
        num_batches = ids.size(0) // batch_size
        ids = ids[:num_batches*batch_size]
        return ids.view(batch_size, -1)
"""

LANGUAGE_MODEL = r"""
# Some part of the code was referenced from below.
# https://github.com/pytorch/examples/tree/master/word_language_model 
import torch
import torch.nn as nn
import numpy as np
from torch.nn.utils import clip_grad_norm_
from data_utils import Dictionary, Corpus


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
embed_size = 32  # port: 128 shrunk
hidden_size = 64  # port: 1024 shrunk
num_layers = 1
num_epochs = 5
num_samples = 200     # number of words to be sampled  # port: 1000 shrunk
batch_size = 4  # port: 20: a text of 900 words, not Penn Treebank's 930000
seq_length = 10  # port: 30 shrunk
learning_rate = 0.01  # port: 0.002: 110 steps, not 7700

# Load "Penn Treebank" dataset
corpus = Corpus()
ids = corpus.get_data('data/train.txt', batch_size)
vocab_size = len(corpus.dictionary)
num_batches = ids.size(1) // seq_length


# RNN based language model
class RNNLM(nn.Module):
    def __init__(self, vocab_size, embed_size, hidden_size, num_layers):
        super(RNNLM, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        
    def forward(self, x, h):
        # Embed word ids to vectors
        x = self.embed(x)
        
        # Forward propagate LSTM
        out, (h, c) = self.lstm(x, h)
        
        # Reshape output to (batch_size*sequence_length, hidden_size)
        out = out.reshape(out.size(0)*out.size(1), out.size(2))
        
        # Decode hidden states of all time steps
        out = self.linear(out)
        return out, (h, c)

model = RNNLM(vocab_size, embed_size, hidden_size, num_layers).to(device)

# Loss and optimizer
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Truncated backpropagation
def detach(states):
    return [state.detach() for state in states] 

# Train the model
for epoch in range(num_epochs):
    # Set initial hidden and cell states
    states = (torch.zeros(num_layers, batch_size, hidden_size).to(device),
              torch.zeros(num_layers, batch_size, hidden_size).to(device))
    
    for i in range(0, ids.size(1) - seq_length, seq_length):
        # Get mini-batch inputs and targets
        inputs = ids[:, i:i+seq_length].to(device)
        targets = ids[:, (i+1):(i+1)+seq_length].to(device)
        
        # Forward pass
        states = detach(states)
        outputs, states = model(inputs, states)
        loss = criterion(outputs, targets.reshape(-1))
        
        # Backward and optimize
        optimizer.zero_grad()
        loss.backward()
        clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()

        step = (i+1) // seq_length
        if step % 10 == 0:  # port: % 100: 22 steps an epoch
            print ('Epoch [{}/{}], Step[{}/{}], Loss: {:.4f}, Perplexity: {:5.2f}'
                   .format(epoch+1, num_epochs, step, num_batches, loss.item(), np.exp(loss.item())))

# Test the model
with torch.no_grad():
    with open('sample.txt', 'w') as f:
        # Set intial hidden ane cell states
        state = (torch.zeros(num_layers, 1, hidden_size).to(device),
                 torch.zeros(num_layers, 1, hidden_size).to(device))

        # Select one word id randomly
        prob = torch.ones(vocab_size)
        input = torch.multinomial(prob, num_samples=1).unsqueeze(1).to(device)

        for i in range(num_samples):
            # Forward propagate RNN 
            output, state = model(input, state)

            # Sample a word id
            prob = output.exp()
            word_id = torch.multinomial(prob, num_samples=1).item()

            # Fill input with sampled word id for the next time step
            input.fill_(word_id)

            # File write
            word = corpus.dictionary.idx2word[word_id]
            word = '\n' if word == '<eos>' else word + ' '
            f.write(word)

            if (i+1) % 100 == 0:
                print('Sampled [{}/{}] words and save to {}'.format(i+1, num_samples, 'sample.txt'))

# Save the model checkpoints
torch.save(model.state_dict(), 'model.ckpt')
"""

# torchvision as the scripts use it (in torch's words: under tricycle the same text); its
# datasets read ``IMAGES``, numpy arrays the test puts in the module first
VISION = r"""
import random
import numpy as np
import torch


class ToTensor:
    # a numpy image (H, W) or (H, W, C) of uint8, PIL's place, as a float tensor (C, H, W) in [0, 1]
    def __call__(self, image):
        image = image[:, :, None] if image.ndim == 2 else image
        return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1), np.float32) / 255)


class Pad:
    def __init__(self, padding):
        self.padding = padding

    def __call__(self, image):
        p = self.padding
        return np.pad(image, ((p, p), (p, p), (0, 0)))


class RandomHorizontalFlip:
    def __call__(self, image):
        return image[:, ::-1] if random.random() < 0.5 else image


class RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        top, left = (random.randint(0, n - self.size) for n in image.shape[:2])
        return image[top:top + self.size, left:left + self.size]


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
        return (image if self.transform is None else self.transform(image)), LABEL(int(self.labels[index]))


class MNIST(ImageSet):
    name = 'mnist'


class CIFAR10(ImageSet):
    name = 'cifar10'
"""


# torchvision's older keyword, as pytorch_basics calls it (the weights stay random)
PRETRAINED = """
def resnet18(weights=None, pretrained=False):
    return ResNet(BasicBlock, [1, 1, 1, 1])
"""


def images() -> dict:
    """The datasets' images, uint8 as PIL's: MNIST's 600 and 200 digits (sklearn's, at 28x28)
    and CIFAR-10's 128 and 32 (the digits at 32x32, each class its own colour and each image
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
        ("mnist", True): (mnist[:600], y[:600]),
        ("mnist", False): (mnist[-200:], y[-200:]),
        ("cifar10", True): (cifar[:128], y[:128]),
        ("cifar10", False): (cifar[-32:], y[-32:]),
    }


def vision(lib, monkeypatch) -> None:
    """``<lib>vision`` with its ``datasets``, ``transforms`` and ``models.resnet18``, in
    ``sys.modules``."""
    name = lib.__name__ + "vision"
    module = types.ModuleType(name)
    parts = {part: types.ModuleType(f"{name}.{part}") for part in ("datasets", "transforms", "models")}  # fmt: skip
    base = types.ModuleType(f"{name}._base")
    base.IMAGES = images()
    base.LABEL = int  # as torchvision's datasets give it: default_collate makes a tensor
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    for key in "MNIST", "CIFAR10":
        setattr(parts["datasets"], key, getattr(base, key))
    for key in "ToTensor", "Pad", "RandomHorizontalFlip", "RandomCrop", "Compose":
        setattr(parts["transforms"], key, getattr(base, key))
    exec((RESNET + PRETRAINED).replace("torch", lib.__name__), parts["models"].__dict__)
    for part, sub in parts.items():
        setattr(module, part, sub)
        monkeypatch.setitem(sys.modules, f"{name}.{part}", sub)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, f"{name}._base", base)


# a made-up text for the language model: short sentences from a small grammar, one a line
SUBJECTS = ["the cat", "a dog", "the bird", "my friend", "the teacher", "a child"]
VERBS = ["sees", "likes", "finds", "follows", "calls", "helps"]
OBJECTS = ["the ball", "a tree", "the house", "an apple", "the river", "a book"]
PLACES = ["in the park", "at home", "by the sea", "after school"]


def text(n_lines: int = 100) -> str:
    rng = np.random.default_rng(0)
    pick = lambda words: words[rng.integers(len(words))]  # noqa: E731
    return "".join(f" {pick(SUBJECTS)} {pick(VERBS)} {pick(OBJECTS)} {pick(PLACES)} \n" for _ in range(n_lines))  # fmt: skip


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded (``lib`` and Python's ``random``: the crops and
    flips), run as ``__main__`` in ``folder`` on one thread, beside ``data_utils.py`` and
    ``data/train.txt``: what it printed and its globals."""
    import random  # noqa: PLC0415

    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.txt").write_text(text())
    (folder / "data_utils.py").write_text(DATA_UTILS.replace("torch", lib.__name__))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "data_utils", raising=False)  # the other library's
    vision(lib, monkeypatch)
    lib.manual_seed(0)
    random.seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "main.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (the scripts ask for CUDA
    when there is one: none is answered)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


LOSS = r"Loss: ([\d.]+)"


def learnt(printed: str, by: float, pattern: str = LOSS) -> None:
    fell(numbers(pattern, printed), by)


def test_pytorch_basics(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(BASICS, tmp_path, monkeypatch)
    # torch prints a Parameter's repr under "Parameter containing:"; values aside, the same
    assert kinds(ours) == kinds(theirs.replace("Parameter containing:\n", ""))
    assert ours.splitlines()[:3] == ["Tensor(2.0)", "Tensor(1.0)", "Tensor(1.0)"]
    for printed in theirs, ours:  # the SGD step lowered the loss; CIFAR's shapes and batches
        before, after = numbers(r"loss(?: after 1 step optimization)?:  ([\d.]+)", printed)
        assert after < before
        assert "3, 32, 32" in printed and "8, 100" in printed
    # the random images; the last of CIFAR's two batches of 64
    assert tuple(our["images"].shape) == (8, 3, 64, 64) and our["labels"].shape == (64,)
    np.testing.assert_array_equal(our["z"], [[1, 2], [3, 4]])
    # frozen but for the new fc; the whole model and its state dict loaded back alike
    frozen = [name for name, p in our["resnet"].named_parameters() if not p.requires_grad]
    assert len(frozen) == len(list(our["resnet"].parameters())) - 2
    for s in their, our:
        s["model"].eval(), s["resnet"].eval()
        np.testing.assert_array_equal(host(s["model"](s["images"])), host(s["resnet"](s["images"])))


def test_linear_regression(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LINEAR, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs) and len(lines(ours)) == 12
    for printed, s in (theirs, their), (ours, our):
        learnt(printed, 0.6)
        assert s["predicted"].shape == (15, 1)  # the plotted line, as numpy
    import tricycle  # noqa: PLC0415

    state = tricycle.load(tmp_path / "tricycle" / "model.ckpt")
    np.testing.assert_array_equal(np.asarray(state["bias"]), host(our["model"].bias))


@pytest.mark.parametrize("script", ["LOGISTIC", "FEEDFORWARD"])
def test_mnist_classifiers(script, tmp_path, monkeypatch):
    (theirs, _), (ours, _) = both(globals()[script], tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs) and len(lines(ours)) == 11
    for printed in theirs, ours:
        learnt(printed, 0.5)
        assert numbers(r"images: ([\d.]+) %", printed)[0] > 80


def same_outputs_and_grads(our_model, their_model, inputs, labels, rtol=1e-4, atol=1e-5):
    """Tricycle's model given torch's weights: torch's logits for ``inputs`` and gradients
    of the cross-entropy with ``labels``, in train mode and in eval mode."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(our_model, their_model.state_dict()) == ([], [])
    for training in True, False:
        outs = []
        for lib, net in (torch, their_model), (tricycle, our_model):
            net.train(training)
            net.zero_grad()
            logits = net(lib.tensor(inputs))
            lib.nn.CrossEntropyLoss()(logits, lib.tensor(labels)).backward()
            outs.append(host(logits))
        np.testing.assert_allclose(outs[1], outs[0], rtol=rtol, atol=atol)
        grads_as_torchs(our_model, their_model, rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    ("script", "shape"),
    [
        ("CNN", (8, 1, 28, 28)),
        ("RESIDUAL", (4, 3, 32, 32)),
        ("RNN", (8, 28, 28)),
        ("BIRNN", (8, 28, 28)),
    ],
)
def test_intermediate_classifiers(script, shape, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[script], tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs)
    for printed in theirs, ours:
        learnt(printed, 0.9)
        assert len(numbers(r"images: ([\d.]+) %", printed)) == 1
    if script == "RESIDUAL":  # the rate divided by 3 after epoch 2, through param_groups
        for s in their, our:
            assert s["optimizer"].param_groups[0]["lr"] == pytest.approx(0.001)
    rng = np.random.default_rng(1)
    inputs = rng.normal(size=shape).astype(np.float32)
    same_outputs_and_grads(our["model"], their["model"], inputs, rng.integers(0, 10, shape[0]))


def test_language_model(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LANGUAGE_MODEL, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs)
    for printed in theirs, ours:
        learnt(printed, 0.5, r"Perplexity: +([\d.]+)")
    # data_utils' Corpus: the same dictionary and ids; the samples are words of it
    assert our["corpus"].dictionary.word2idx == their["corpus"].dictionary.word2idx
    np.testing.assert_array_equal(host(our["ids"]), host(their["ids"]))
    assert our["ids"].shape == (4, 213) and len(our["corpus"].dictionary) == 31
    sample = (tmp_path / "tricycle" / "sample.txt").read_text()
    assert len(sample.split()) + sample.count("\n") == 200
    assert set(sample.split()) <= set(our["corpus"].dictionary.word2idx)
    # with torch's weights: one step of the training loop's forward, from carried states
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    model, their_model = our["model"], their["model"]
    assert tricycle.nn.from_torch(model, their_model.state_dict()) == ([], [])
    rng = np.random.default_rng(2)
    h, c = (rng.normal(size=(1, 4, 64)).astype(np.float32) for _ in range(2))
    results = []
    for lib, net, s in (torch, their_model, their), (tricycle, model, our):
        net.zero_grad()
        states = s["detach"]((lib.tensor(h), lib.tensor(c)))
        outputs, (h1, c1) = net(s["ids"][:, :10], states)
        loss = lib.nn.CrossEntropyLoss()(outputs, s["ids"][:, 1:11].reshape(-1))
        loss.backward()
        results.append([host(outputs), host(h1), host(c1), float(loss.item())])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    grads_as_torchs(model, their_model, rtol=1e-4, atol=1e-6)
