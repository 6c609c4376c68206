"""Raschka, Liu and Mirjalili's "Machine Learning with PyTorch and Scikit-Learn"
(rasbt/machine-learning-book), chapters 12 and 13 as the repository's scripts of the
notebooks, run on tricycle with ``torch`` replaced by ``tricycle`` in their text
(docs/pytorch.md's promise; the method of tests/test_rasbt_dl_basics.py):

- ch12 part 1: creating tensors (``from_numpy``, ``is_tensor``, ``to``, ``transpose``,
  ``squeeze``), their math (``multiply``, ``mean(axis=)``, ``matmul``, ``linalg.norm(ord=2,
  dim=1)``), ``chunk``, ``split`` by sizes, ``cat``/``stack`` with ``axis=``, a ``DataLoader``
  over a tensor, a ``Dataset`` of two tensors and ``TensorDataset``, shuffled batches over two
  epochs, the image-file ``ImageDataset`` (JPEGs the test wrote, read with PIL, through
  ``ToTensor`` and ``Resize``), CelebA's and MNIST's datasets (the test's);
- ch12 part 2: linear regression by hand (``xb @ weight``, updates under ``no_grad``,
  ``grad.zero_()``) and with ``nn.Linear``, ``MSELoss`` and SGD; the Iris MLP (sklearn's
  data, ``Sigmoid``/``Softmax`` modules, Adam, the accuracy summed in tensors), the whole model
  saved with ``torch.save`` and loaded back, its ``state_dict`` too; softmax, tanh, sigmoid
  and relu of numpy's arrays;
- ch13 part 1: computation graphs on integer tensors, ``requires_grad_``,
  ``nn.init.xavier_normal_`` on a leaf that requires grad, a loss's gradients checked by hand,
  ``nn.init.xavier_uniform_``, an L1 penalty, the XOR classifiers (``nn.Sequential``,
  ``nn.ModuleList``, ``BCELoss``), mlxtend's decision regions (the test's stand-in calling the
  model's ``predict``) and the ``NoisyLinear`` layer of two ``nn.Parameter``s adding
  ``torch.normal`` noise in training;
- ch13 part 2: the car-MPG regression on a table the test wrote in UCI's layout, read by a
  stand-in of pandas (not installed: ``read_csv``, ``isna``, ``dropna``, ``describe``,
  ``loc``, columns) and split by sklearn; ``torch.bucketize(right=True)``, ``one_hot`` of an
  integer column ``%`` a count, ``cat`` of float64 and int64 columns; the MNIST MLP on
  sklearn's digits at 28x28 (``Flatten``, Adam) and its test accuracy on ``data / 255.``.

Parts 3 and 4 are left out: they train through PyTorch Lightning and Ignite (not installed),
whose classes subclass torch's own. torchvision (``ToTensor``, ``Resize``, ``Compose``,
``CelebA``, ``MNIST``), mlxtend's ``plot_decision_regions``, pandas and the repository's
``python_environment_check`` (which imports the removed ``distutils``) are small stand-ins
written here. Each changed line ends in ``# port:`` and says why (the book's figures shown by
IPython, sizes and epochs shrunk, the image grids drawn in one axes, a Linear's ``weight``
taken by position (tricycle's is ``weights``, (in, out)) and ``torch.Tensor(*sizes)`` written
``empty``: both documented; torch 2's ``weights_only``). Each script runs under torch (skipped
without it), then under tricycle, both on the CPU, seeded, with matplotlib on its Agg backend;
both print the same lines (numbers and reprs aside) and learn. Then the scripts' models are
given torch's weights (``nn.from_torch``) and give torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import functools
import importlib.machinery
import random
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import torch_and_tricycle
from tests.test_rasbt_dl_generative import same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_tutorials_u import digits28
from tests.test_torch_vision_tutorials import host

pytestmark = [  # matplotlib's Agg, asked to show the plots; ch12 part 2's "$\phi(z)$"
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:invalid escape sequence"),
]
CH12_PART1 = r"""
import sys
from python_environment_check import check_packages
import torch
import numpy as np
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import TensorDataset
import pathlib
import matplotlib.pyplot as plt
import os
from PIL import Image
import torchvision.transforms as transforms
import torchvision
from itertools import islice

sys.path.insert(0, '..')

d = {
    'numpy': '1.21.2',
    'matplotlib': '3.4.3',
    'torch': '1.9.0',
}
check_packages(d)

# IPythonImage(filename='figures/12_01.png', width=500)  # port: the book's figures (IPython's display)

# IPythonImage(filename='figures/12_02.png', width=500)  # port: as above

print('PyTorch version:', torch.__version__)

np.set_printoptions(precision=3)

a = [1, 2, 3]
b = np.array([4, 5, 6], dtype=np.int32)

t_a = torch.tensor(a)
t_b = torch.from_numpy(b)

print(t_a)
print(t_b)

torch.is_tensor(a), torch.is_tensor(t_a)

t_ones = torch.ones(2, 3)

t_ones.shape

print(t_ones)

rand_tensor = torch.rand(2,3)

print(rand_tensor)

t_a_new = t_a.to(torch.int64)

print(t_a_new.dtype)

t = torch.rand(3, 5)

t_tr = torch.transpose(t, 0, 1)
print(t.shape, ' --> ', t_tr.shape)

t = torch.zeros(30)

t_reshape = t.reshape(5, 6)

print(t_reshape.shape)

t = torch.zeros(1, 2, 1, 4, 1)

t_sqz = torch.squeeze(t, 2)

print(t.shape, ' --> ', t_sqz.shape)

torch.manual_seed(1)

t1 = 2 * torch.rand(5, 2) - 1
t2 = torch.normal(mean=0, std=1, size=(5, 2))

t3 = torch.multiply(t1, t2)
print(t3)

t4 = torch.mean(t1, axis=0)
print(t4)

t5 = torch.matmul(t1, torch.transpose(t2, 0, 1))

print(t5)

t6 = torch.matmul(torch.transpose(t1, 0, 1), t2)

print(t6)

norm_t1 = torch.linalg.norm(t1, ord=2, dim=1)

print(norm_t1)

np.sqrt(np.sum(np.square(t1.numpy()), axis=1))

torch.manual_seed(1)

t = torch.rand(6)

print(t)

t_splits = torch.chunk(t, 3)

[item.numpy() for item in t_splits]

torch.manual_seed(1)
t = torch.rand(5)

print(t)

t_splits = torch.split(t, split_size_or_sections=[3, 2])
 
[item.numpy() for item in t_splits]

A = torch.ones(3)
B = torch.zeros(2)

C = torch.cat([A, B], axis=0)
print(C)

A = torch.ones(3)
B = torch.zeros(3)

S = torch.stack([A, B], axis=1)
print(S)

t = torch.arange(6, dtype=torch.float32)
data_loader = DataLoader(t)

for item in data_loader:
    print(item)

data_loader = DataLoader(t, batch_size=3, drop_last=False)

for i, batch in enumerate(data_loader, 1):
    print(f'batch {i}:', batch)

class JointDataset(Dataset):
    def __init__(self, x, y):
        self.x = x
        self.y = y
    def __len__(self):
        return len(self.x)
    def __getitem__(self, idx):
        return self.x[idx], self.y[idx]

torch.manual_seed(1)

t_x = torch.rand([4, 3], dtype=torch.float32)
t_y = torch.arange(4)
joint_dataset = JointDataset(t_x, t_y)

# Or use TensorDataset directly
joint_dataset = TensorDataset(t_x, t_y)

for example in joint_dataset:
    print('  x: ', example[0], 
          '  y: ', example[1])

torch.manual_seed(1)
data_loader = DataLoader(dataset=joint_dataset, batch_size=2, shuffle=True)

for i, batch in enumerate(data_loader, 1):
        print(f'batch {i}:', 'x:', batch[0], 
              '\n         y:', batch[1])
        
for epoch in range(2):
    print(f'epoch {epoch+1}')
    for i, batch in enumerate(data_loader, 1):
        print(f'batch {i}:', 'x:', batch[0], 
              '\n         y:', batch[1])

imgdir_path = pathlib.Path('cat_dog_images')

file_list = sorted([str(path) for path in imgdir_path.glob('*.jpg')])

print(file_list)

fig = plt.figure(figsize=(10, 5))
for i, file in enumerate(file_list):
    img = Image.open(file)
    print('Image shape: ', np.array(img).shape)
    ax = fig.add_subplot(2, 3, i+1) if i == 0 else ax  # port: the grid's images drawn in one axes (each axes costs a shared CPU ~0.05 s)
    ax.set_xticks([]); ax.set_yticks([])
    ax.imshow(img)
    ax.set_title(os.path.basename(file), size=15)
    
#plt.savefig('figures/12_03.pdf')
plt.tight_layout()
plt.show()

labels = [1 if 'dog' in os.path.basename(file) else 0
          for file in file_list]
print(labels)

class ImageDataset(Dataset):
    def __init__(self, file_list, labels):
        self.file_list = file_list
        self.labels = labels

    def __getitem__(self, index):
        file = self.file_list[index]      
        label = self.labels[index]
        return file, label

    def __len__(self):
        return len(self.labels)
    
image_dataset = ImageDataset(file_list, labels)
for file, label in image_dataset:
    print(file, label)

class ImageDataset(Dataset):
    def __init__(self, file_list, labels, transform=None):
        self.file_list = file_list
        self.labels = labels
        self.transform = transform
    def __getitem__(self, index):
        img = Image.open(self.file_list[index])        
        if self.transform is not None:
            img = self.transform(img)
        label = self.labels[index]
        return img, label
    def __len__(self):
        return len(self.labels)

img_height, img_width = 80, 120
    
transform = transforms.Compose([
    transforms.ToTensor(),
    transforms.Resize((img_height, img_width)),
])
    
image_dataset = ImageDataset(file_list, labels, transform)

fig = plt.figure(figsize=(10, 6))
for i, example in enumerate(image_dataset):
    ax = fig.add_subplot(2, 3, i+1) if i == 0 else ax  # port: as above
    ax.set_xticks([]); ax.set_yticks([])
    ax.imshow(example[0].numpy().transpose((1, 2, 0)))
    ax.set_title(f'{example[1]}', size=15)
    
plt.tight_layout()
plt.savefig('figures/12_04.pdf')
plt.show()

# IPythonImage(filename='figures/gdrive-download-location-1.png', width=500)  # port: the book's figures (IPython's display)

# IPythonImage(filename='figures/gdrive-download-location-2.png', width=300)  # port: as above

# IPythonImage(filename='figures/gdrive-download-location-3.png', width=300)  # port: as above

# IPythonImage(filename='figures/celeba-files.png', width=400)  # port: as above

image_path = './'
celeba_dataset = torchvision.datasets.CelebA(image_path, split='train', target_type='attr', download=False)

assert isinstance(celeba_dataset, torch.utils.data.Dataset)

example = next(iter(celeba_dataset))
print(example)

fig = plt.figure(figsize=(12, 8))
for i, (image, attributes) in islice(enumerate(celeba_dataset), 18):
    ax = fig.add_subplot(3, 6, i+1) if i == 0 else ax  # port: as above
    ax.set_xticks([]); ax.set_yticks([])
    ax.imshow(image)
    ax.set_title(f'{attributes[31]}', size=15)
    
#plt.savefig('figures/12_05.pdf')
plt.show()

mnist_dataset = torchvision.datasets.MNIST(image_path, 'train', download=True)

assert isinstance(mnist_dataset, torch.utils.data.Dataset)

example = next(iter(mnist_dataset))
print(example)

fig = plt.figure(figsize=(15, 6))
for i, (image, label) in islice(enumerate(mnist_dataset), 10):
    ax = fig.add_subplot(2, 5, i+1) if i == 0 else ax  # port: as above
    ax.set_xticks([]); ax.set_yticks([])
    ax.imshow(image, cmap='gray_r')
    ax.set_title(f'{label}', size=15)

#plt.savefig('figures/12_06.pdf')
plt.show()
"""
CH12_PART2 = r"""
import sys
from python_environment_check import check_packages
import torch
import numpy as np
import matplotlib.pyplot as plt
from torch.utils.data import TensorDataset
from torch.utils.data import DataLoader
import torch.nn as nn
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split 
from scipy.special import expit

sys.path.insert(0, '..')

d = {
    'numpy': '1.21.2',
    'scipy': '1.7.0',
    'matplotlib': '3.4.3',
    'torch': '1.9.0',
}
check_packages(d)

X_train = np.arange(10, dtype='float32').reshape((10, 1))
y_train = np.array([1.0, 1.3, 3.1, 2.0, 5.0, 6.3, 6.6, 
                    7.4, 8.0, 9.0], dtype='float32')

plt.plot(X_train, y_train, 'o', markersize=10)
plt.xlabel('x')
plt.ylabel('y')

#plt.savefig('figures/12_07.pdf')
plt.show()

X_train_norm = (X_train - np.mean(X_train)) / np.std(X_train)
X_train_norm = torch.from_numpy(X_train_norm)

# On some computers the explicit cast to .float() is
# necessary
y_train = torch.from_numpy(y_train).float()

train_ds = TensorDataset(X_train_norm, y_train)

batch_size = 1
train_dl = DataLoader(train_ds, batch_size, shuffle=True)

torch.manual_seed(1)
weight = torch.randn(1)
weight.requires_grad_()
bias = torch.zeros(1, requires_grad=True)
 
def loss_fn(input, target):
    return (input-target).pow(2).mean()

def model(xb):
    return xb @ weight + bias

learning_rate = 0.001
num_epochs = 30  # port: 200 epochs: 30 (a shared CPU)
log_epochs = 10

for epoch in range(num_epochs):
    for x_batch, y_batch in train_dl:
        pred = model(x_batch)
        loss = loss_fn(pred, y_batch)
        loss.backward()

        with torch.no_grad():
            weight -= weight.grad * learning_rate
            bias -= bias.grad * learning_rate
            weight.grad.zero_()
            bias.grad.zero_()
 
    if epoch % log_epochs==0:
        print(f'Epoch {epoch}  Loss {loss.item():.4f}')

print('Final Parameters:', weight.item(), bias.item())
 
X_test = np.linspace(0, 9, num=100, dtype='float32').reshape(-1, 1)
X_test_norm = (X_test - np.mean(X_train)) / np.std(X_train)
X_test_norm = torch.from_numpy(X_test_norm)
y_pred = model(X_test_norm).detach().numpy()

fig = plt.figure(figsize=(13, 5))
ax = fig.add_subplot(1, 2, 1)
plt.plot(X_train_norm, y_train, 'o', markersize=10)
plt.plot(X_test_norm, y_pred, '--', lw=3)
plt.legend(['Training examples', 'Linear Reg.'], fontsize=15)
ax.set_xlabel('x', size=15)
ax.set_ylabel('y', size=15)
ax.tick_params(axis='both', which='major', labelsize=15)
 
#plt.savefig('figures/12_08.pdf')

plt.show()

input_size = 1
output_size = 1
model = nn.Linear(input_size, output_size)

loss_fn = nn.MSELoss(reduction='mean')

optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

for epoch in range(num_epochs):
    for x_batch, y_batch in train_dl:
        # 1. Generate predictions
        pred = model(x_batch)[:, 0] 

        # 2. Calculate loss
        loss = loss_fn(pred, y_batch)

        # 3. Compute gradients
        loss.backward()

        # 4. Update parameters using gradients
        optimizer.step()

        # 5. Reset the gradients to zero
        optimizer.zero_grad()
        
    if epoch % log_epochs==0:
        print(f'Epoch {epoch}  Loss {loss.item():.4f}')

print('Final Parameters:', next(model.parameters()).item(), model.bias.item())  # port: model.weight by position: a Linear's is weights, (in, out), in tricycle (documented)
 
X_test = np.linspace(0, 9, num=100, dtype='float32').reshape(-1, 1)
X_test_norm = (X_test - np.mean(X_train)) / np.std(X_train)
X_test_norm = torch.from_numpy(X_test_norm)
y_pred = model(X_test_norm).detach().numpy()

fig = plt.figure(figsize=(13, 5))
ax = fig.add_subplot(1, 2, 1)
plt.plot(X_train_norm, y_train, 'o', markersize=10)
plt.plot(X_test_norm, y_pred, '--', lw=3)
plt.legend(['Training examples', 'Linear reg.'], fontsize=15)
ax.set_xlabel('x', size=15)
ax.set_ylabel('y', size=15)
ax.tick_params(axis='both', which='major', labelsize=15)
 
#plt.savefig('ch12-linreg-2.pdf')

plt.show()

iris = load_iris()
X = iris['data']
y = iris['target']
 
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=1./3, random_state=1)

X_train_norm = (X_train - np.mean(X_train)) / np.std(X_train)
X_train_norm = torch.from_numpy(X_train_norm).float()
y_train = torch.from_numpy(y_train) 

train_ds = TensorDataset(X_train_norm, y_train)

torch.manual_seed(1)
batch_size = 2
train_dl = DataLoader(train_ds, batch_size, shuffle=True)

class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.layer1 = nn.Linear(input_size, hidden_size)  
        self.layer2 = nn.Linear(hidden_size, output_size)  

    def forward(self, x):
        x = self.layer1(x)
        x = nn.Sigmoid()(x)
        x = self.layer2(x)
        x = nn.Softmax(dim=1)(x)
        return x
    
input_size = X_train_norm.shape[1]
hidden_size = 16
output_size = 3
 
model = Model(input_size, hidden_size, output_size)

learning_rate = 0.001

loss_fn = nn.CrossEntropyLoss()
 
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

num_epochs = 6  # port: 100 epochs: 6
loss_hist = [0] * num_epochs
accuracy_hist = [0] * num_epochs

for epoch in range(num_epochs):

    for x_batch, y_batch in train_dl:
        pred = model(x_batch)
        loss = loss_fn(pred, y_batch.long())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    
        loss_hist[epoch] += loss.item()*y_batch.size(0)
        is_correct = (torch.argmax(pred, dim=1) == y_batch).float()
        accuracy_hist[epoch] += is_correct.sum()
        
    loss_hist[epoch] /= len(train_dl.dataset)
    accuracy_hist[epoch] /= len(train_dl.dataset)

fig = plt.figure(figsize=(12, 5))
ax = fig.add_subplot(1, 2, 1)
ax.plot(loss_hist, lw=3)
ax.set_title('Training loss', size=15)
ax.set_xlabel('Epoch', size=15)
ax.tick_params(axis='both', which='major', labelsize=15)

ax = fig.add_subplot(1, 2, 2)
ax.plot(accuracy_hist, lw=3)
ax.set_title('Training accuracy', size=15)
ax.set_xlabel('Epoch', size=15)
ax.tick_params(axis='both', which='major', labelsize=15)
plt.tight_layout()

#plt.savefig('figures/12_09.pdf')
 
plt.show()

X_test_norm = (X_test - np.mean(X_train)) / np.std(X_train)
X_test_norm = torch.from_numpy(X_test_norm).float()
y_test = torch.from_numpy(y_test) 
pred_test = model(X_test_norm)

correct = (torch.argmax(pred_test, dim=1) == y_test).float()
accuracy = correct.mean()
 
print(f'Test Acc.: {accuracy:.4f}')

path = 'iris_classifier.pt'
torch.save(model, path)

model_new = torch.load(path, weights_only=False)  # port: torch 2.6's default weights_only=True refuses a pickled model (the book's torch 1.9 took it)
model_new.eval()

pred_test = model_new(X_test_norm)

correct = (torch.argmax(pred_test, dim=1) == y_test).float()
accuracy = correct.mean()
 
print(f'Test Acc.: {accuracy:.4f}')

path = 'iris_classifier_state.pt'
torch.save(model.state_dict(), path)

model_new = Model(input_size, hidden_size, output_size)
model_new.load_state_dict(torch.load(path))

X = np.array([1, 1.4, 2.5]) ## first value must be 1
w = np.array([0.4, 0.3, 0.5])

def net_input(X, w):
    return np.dot(X, w)

def logistic(z):
    return 1.0 / (1.0 + np.exp(-z))

def logistic_activation(X, w):
    z = net_input(X, w)
    return logistic(z)

print(f'P(y=1|x) = {logistic_activation(X, w):.3f}') 

# W : array with shape = (n_output_units, n_hidden_units+1)
# note that the first column are the bias units

W = np.array([[1.1, 1.2, 0.8, 0.4],
              [0.2, 0.4, 1.0, 0.2],
              [0.6, 1.5, 1.2, 0.7]])

# A : data array with shape = (n_hidden_units + 1, n_samples)
# note that the first column of this array must be 1

A = np.array([[1, 0.1, 0.4, 0.6]])
Z = np.dot(W, A[0])
y_probas = logistic(Z)
print('Net Input: \n', Z)

print('Output Units:\n', y_probas) 

y_class = np.argmax(Z, axis=0)
print('Predicted class label:', y_class) 

def softmax(z):
    return np.exp(z) / np.sum(np.exp(z))

y_probas = softmax(Z)
print('Probabilities:\n', y_probas)

np.sum(y_probas)

torch.softmax(torch.from_numpy(Z), dim=0)

def tanh(z):
    e_p = np.exp(z)
    e_m = np.exp(-z)
    return (e_p - e_m) / (e_p + e_m)

z = np.arange(-5, 5, 0.005)
log_act = logistic(z)
tanh_act = tanh(z)
plt.ylim([-1.5, 1.5])
plt.xlabel('Net input $z$')
plt.ylabel('Activation $\phi(z)$')
plt.axhline(1, color='black', linestyle=':')
plt.axhline(0.5, color='black', linestyle=':')
plt.axhline(0, color='black', linestyle=':')
plt.axhline(-0.5, color='black', linestyle=':')
plt.axhline(-1, color='black', linestyle=':')
plt.plot(z, tanh_act,
    linewidth=3, linestyle='--',
    label='Tanh')
plt.plot(z, log_act,
    linewidth=3,
    label='Logistic')
plt.legend(loc='lower right')
plt.tight_layout()

#plt.savefig('figures/12_10.pdf')
plt.show()

np.tanh(z)

torch.tanh(torch.from_numpy(z))

expit(z)

torch.sigmoid(torch.from_numpy(z))

torch.relu(torch.from_numpy(z))

# IPythonImage(filename='figures/12_11.png', width=500)  # port: the book's figures (IPython's display)
"""
CH13_PART1 = r"""
import sys
from python_environment_check import check_packages
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt
from torch.utils.data import DataLoader, TensorDataset
from mlxtend.plotting import plot_decision_regions

sys.path.insert(0, '..')

d = {
    'numpy': '1.21.2',
    'matplotlib': '3.4.3',
    'torch': '1.8',
    'mlxtend': '0.19.0'
}
check_packages(d)

def compute_z(a, b, c):
   r1 = torch.sub(a, b)
   r2 = torch.mul(r1, 2)
   z = torch.add(r2, c)
   return z

print('Scalar Inputs:', compute_z(torch.tensor(1), torch.tensor(2), torch.tensor(3)))
print('Rank 1 Inputs:', compute_z(torch.tensor([1]), torch.tensor([2]), torch.tensor([3])))
print('Rank 2 Inputs:', compute_z(torch.tensor([[1]]), torch.tensor([[2]]), torch.tensor([[3]])))

a = torch.tensor(3.14, requires_grad=True)
b = torch.tensor([1.0, 2.0, 3.0], requires_grad=True) 
print(a)
print(b)

a.requires_grad

w = torch.tensor([1.0, 2.0, 3.0])

print(w.requires_grad)

w.requires_grad_()

print(w.requires_grad)

torch.manual_seed(1)
w = torch.empty(2, 3)
nn.init.xavier_normal_(w)
print(w)

class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.empty(2, 3, requires_grad=True)
        nn.init.xavier_normal_(self.w1)
        self.w2 = torch.empty(1, 2, requires_grad=True)
        nn.init.xavier_normal_(self.w2)

w = torch.tensor(1.0, requires_grad=True)
b = torch.tensor(0.5, requires_grad=True) 

x = torch.tensor([1.4])
y = torch.tensor([2.1])

z = torch.add(torch.mul(w, x), b)
 
loss = (y-z).pow(2).sum()
loss.backward()

print('dL/dw : ', w.grad)
print('dL/db : ', b.grad)

# verifying the computed gradient dL/dw
print(2 * x * ((w * x + b) - y))

model = nn.Sequential(
    nn.Linear(4, 16),
    nn.ReLU(),
    nn.Linear(16, 32),
    nn.ReLU()
)

model

nn.init.xavier_uniform_(next(model[0].parameters()))  # port: model[0].weight by position: a Linear's is weights, (in, out), in tricycle (documented)
 
l1_weight = 0.01
l1_penalty = l1_weight * next(model[2].parameters()).abs().sum()  # port: as above

loss_fn = nn.BCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

np.random.seed(1)
torch.manual_seed(1)
x = np.random.uniform(low=-1, high=1, size=(200, 2))
y = np.ones(len(x))
y[x[:, 0] * x[:, 1]<0] = 0

n_train = 100
x_train = torch.tensor(x[:n_train, :], dtype=torch.float32)
y_train = torch.tensor(y[:n_train], dtype=torch.float32)
x_valid = torch.tensor(x[n_train:, :], dtype=torch.float32)
y_valid = torch.tensor(y[n_train:], dtype=torch.float32)

fig = plt.figure(figsize=(6, 6))
plt.plot(x[y==0, 0], 
         x[y==0, 1], 'o', alpha=0.75, markersize=10)
plt.plot(x[y==1, 0], 
         x[y==1, 1], '<', alpha=0.75, markersize=10)
plt.xlabel(r'$x_1$', size=15)
plt.ylabel(r'$x_2$', size=15)

#plt.savefig('figures/13_02.png', dpi=300)
plt.show()

train_ds = TensorDataset(x_train, y_train)
batch_size = 2
torch.manual_seed(1)
train_dl = DataLoader(train_ds, batch_size, shuffle=True)

model = nn.Sequential(
    nn.Linear(2, 1),
    nn.Sigmoid()
)

model

loss_fn = nn.BCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

torch.manual_seed(1)
num_epochs = 5  # port: 200 epochs: 5 (a shared CPU)
def train(model, num_epochs, train_dl, x_valid, y_valid):
    loss_hist_train = [0] * num_epochs
    accuracy_hist_train = [0] * num_epochs
    loss_hist_valid = [0] * num_epochs
    accuracy_hist_valid = [0] * num_epochs
    for epoch in range(num_epochs):
        for x_batch, y_batch in train_dl:
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss_hist_train[epoch] += loss.item()
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_hist_train[epoch] += is_correct.mean()

        loss_hist_train[epoch] /= n_train/batch_size
        accuracy_hist_train[epoch] /= n_train/batch_size

        pred = model(x_valid)[:, 0]
        loss = loss_fn(pred, y_valid)
        loss_hist_valid[epoch] = loss.item()
        is_correct = ((pred>=0.5).float() == y_valid).float()
        accuracy_hist_valid[epoch] += is_correct.mean()
    return loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid

history = train(model, num_epochs, train_dl, x_valid, y_valid)

fig = plt.figure(figsize=(16, 4))
ax = fig.add_subplot(1, 2, 1)
plt.plot(history[0], lw=4)
plt.plot(history[1], lw=4)
plt.legend(['Train loss', 'Validation loss'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 2, 2)
plt.plot(history[2], lw=4)
plt.plot(history[3], lw=4)
plt.legend(['Train acc.', 'Validation acc.'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

#plt.savefig('figures/13_03.png', dpi=300)

model = nn.Sequential(
    nn.Linear(2, 4),
    nn.ReLU(),
    nn.Linear(4, 4),
    nn.ReLU(),
    nn.Linear(4, 1),
    nn.Sigmoid()
)
 
loss_fn = nn.BCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.015)

model

history = train(model, num_epochs, train_dl, x_valid, y_valid)

fig = plt.figure(figsize=(16, 4))
ax = fig.add_subplot(1, 2, 1)
plt.plot(history[0], lw=4)
plt.plot(history[1], lw=4)
plt.legend(['Train loss', 'Validation loss'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 2, 2)
plt.plot(history[2], lw=4)
plt.plot(history[3], lw=4)
plt.legend(['Train acc.', 'Validation acc.'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

plt.savefig('figures/13_04.png', dpi=30)  # port: dpi=300: 30 (a 4800x1200 PNG takes a shared CPU half a second)

class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        l1 = nn.Linear(2, 4)
        a1 = nn.ReLU()
        l2 = nn.Linear(4, 4)
        a2 = nn.ReLU()
        l3 = nn.Linear(4, 1)
        a3 = nn.Sigmoid()
        l = [l1, a1, l2, a2, l3, a3]
        self.module_list = nn.ModuleList(l)

    def forward(self, x):
        for f in self.module_list:
            x = f(x)
        return x
    
    def predict(self, x):
        x = torch.tensor(x, dtype=torch.float32)
        pred = self.forward(x)[:, 0]
        return (pred>=0.5).float()
            
model = MyModule()
model

loss_fn = nn.BCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.015)
    
# torch.manual_seed(1)
history = train(model, num_epochs, train_dl, x_valid, y_valid)

fig = plt.figure(figsize=(16, 4))
ax = fig.add_subplot(1, 3, 1)
plt.plot(history[0], lw=4)
plt.plot(history[1], lw=4)
plt.legend(['Train loss', 'Validation loss'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 3, 2)
plt.plot(history[2], lw=4)
plt.plot(history[3], lw=4)
plt.legend(['Train acc.', 'Validation acc.'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 3, 3)
plot_decision_regions(X=x_valid.numpy(), 
                      y=y_valid.numpy().astype(np.int64),
                      clf=model)
ax.set_xlabel(r'$x_1$', size=15)
ax.xaxis.set_label_coords(1, -0.025)
ax.set_ylabel(r'$x_2$', size=15)
ax.yaxis.set_label_coords(-0.025, 1)
plt.show()

class NoisyLinear(nn.Module):
    def __init__(self, input_size, output_size, noise_stddev=0.1):
        super().__init__()
        w = torch.empty(input_size, output_size)  # port: torch.Tensor(*sizes) is tricycle.empty(*sizes) (documented)
        self.w = nn.Parameter(w)  # nn.Parameter is a Tensor that's a module parameter.
        nn.init.xavier_uniform_(self.w)
        b = torch.empty(output_size).fill_(0)  # port: as above
        self.b = nn.Parameter(b)
        self.noise_stddev = noise_stddev

    def forward(self, x, training=False):
        if training:
            noise = torch.normal(0.0, self.noise_stddev, x.shape)
            x_new = torch.add(x, noise)
        else:
            x_new = x
        return torch.add(torch.mm(x_new, self.w), self.b)   

## testing:

torch.manual_seed(1)

noisy_layer = NoisyLinear(4, 2)
 
x = torch.zeros((1, 4))
print(noisy_layer(x, training=True))

print(noisy_layer(x, training=True))
 
print(noisy_layer(x, training=False))

class MyNoisyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = NoisyLinear(2, 4, 0.07)
        self.a1 = nn.ReLU()
        self.l2 = nn.Linear(4, 4)
        self.a2 = nn.ReLU()
        self.l3 = nn.Linear(4, 1)
        self.a3 = nn.Sigmoid()
        
    def forward(self, x, training=False):
        x = self.l1(x, training)
        x = self.a1(x)
        x = self.l2(x)
        x = self.a2(x)
        x = self.l3(x)
        x = self.a3(x)
        return x
    
    def predict(self, x):
        x = torch.tensor(x, dtype=torch.float32)
        pred = self.forward(x)[:, 0]
        return (pred>=0.5).float()

torch.manual_seed(1)
model = MyNoisyModule()
model

loss_fn = nn.BCELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.015)
    
torch.manual_seed(1)

loss_hist_train = [0] * num_epochs
accuracy_hist_train = [0] * num_epochs
loss_hist_valid = [0] * num_epochs
accuracy_hist_valid = [0] * num_epochs
for epoch in range(num_epochs):
    for x_batch, y_batch in train_dl:
        pred = model(x_batch, True)[:, 0]
        loss = loss_fn(pred, y_batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_hist_train[epoch] += loss.item()
        is_correct = ((pred>=0.5).float() == y_batch).float()
        accuracy_hist_train[epoch] += is_correct.mean()

    loss_hist_train[epoch] /= n_train/batch_size
    accuracy_hist_train[epoch] /= n_train/batch_size

    pred = model(x_valid)[:, 0]
    loss = loss_fn(pred, y_valid)
    loss_hist_valid[epoch] = loss.item()
    is_correct = ((pred>=0.5).float() == y_valid).float()
    accuracy_hist_valid[epoch] += is_correct.mean()

fig = plt.figure(figsize=(16, 4))
ax = fig.add_subplot(1, 3, 1)
plt.plot(loss_hist_train, lw=4)
plt.plot(loss_hist_valid, lw=4)
plt.legend(['Train loss', 'Validation loss'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 3, 2)
plt.plot(accuracy_hist_train, lw=4)
plt.plot(accuracy_hist_valid, lw=4)
plt.legend(['Train acc.', 'Validation acc.'], fontsize=15)
ax.set_xlabel('Epochs', size=15)

ax = fig.add_subplot(1, 3, 3)
plot_decision_regions(X=x_valid.numpy(), 
                      y=y_valid.numpy().astype(np.int64),
                      clf=model)
ax.set_xlabel(r'$x_1$', size=15)
ax.xaxis.set_label_coords(1, -0.025)
ax.set_ylabel(r'$x_2$', size=15)
ax.yaxis.set_label_coords(-0.025, 1)
plt.show()
"""
CH13_PART2 = r"""
import sys
from python_environment_check import check_packages
import numpy as np
import torch
import torch.nn as nn
import pandas as pd
import sklearn
import sklearn.model_selection
from torch.nn.functional import one_hot
from torch.utils.data import DataLoader, TensorDataset
import torchvision 
from torchvision import transforms 

sys.path.insert(0, '..')

d = {
    'numpy': '1.21.2',
    'pandas': '1.3.2',
    'sklearn': '1.0',
    'torch': '1.8',
    'torchvision': '0.9.0'
}
check_packages(d)

url = 'auto-mpg.data'  # port: UCI's file, written by the test in its layout (no download)
column_names = ['MPG', 'Cylinders', 'Displacement', 'Horsepower', 'Weight',
                'Acceleration', 'Model Year', 'Origin']

df = pd.read_csv(url, names=column_names,
                 na_values = "?", comment='\t',
                 sep=" ", skipinitialspace=True)

df.tail()

print(df.isna().sum())

df = df.dropna()
df = df.reset_index(drop=True)
df.tail()

df_train, df_test = sklearn.model_selection.train_test_split(df, train_size=0.8, random_state=1)
train_stats = df_train.describe().transpose()
train_stats

numeric_column_names = ['Cylinders', 'Displacement', 'Horsepower', 'Weight', 'Acceleration']

df_train_norm, df_test_norm = df_train.copy(), df_test.copy()

for col_name in numeric_column_names:
    mean = train_stats.loc[col_name, 'mean']
    std  = train_stats.loc[col_name, 'std']
    df_train_norm.loc[:, col_name] = (df_train_norm.loc[:, col_name] - mean)/std
    df_test_norm.loc[:, col_name] = (df_test_norm.loc[:, col_name] - mean)/std
    
df_train_norm.tail()

boundaries = torch.tensor([73, 76, 79])
 
v = torch.tensor(df_train_norm['Model Year'].values)
df_train_norm['Model Year Bucketed'] = torch.bucketize(v, boundaries, right=True)

v = torch.tensor(df_test_norm['Model Year'].values)
df_test_norm['Model Year Bucketed'] = torch.bucketize(v, boundaries, right=True)

numeric_column_names.append('Model Year Bucketed')

total_origin = len(set(df_train_norm['Origin']))

origin_encoded = one_hot(torch.from_numpy(df_train_norm['Origin'].values) % total_origin)
x_train_numeric = torch.tensor(df_train_norm[numeric_column_names].values)
x_train = torch.cat([x_train_numeric, origin_encoded], 1).float()
 
origin_encoded = one_hot(torch.from_numpy(df_test_norm['Origin'].values) % total_origin)
x_test_numeric = torch.tensor(df_test_norm[numeric_column_names].values)
x_test = torch.cat([x_test_numeric, origin_encoded], 1).float()

y_train = torch.tensor(df_train_norm['MPG'].values).float()
y_test = torch.tensor(df_test_norm['MPG'].values).float()

train_ds = TensorDataset(x_train, y_train)
batch_size = 8
torch.manual_seed(1)
train_dl = DataLoader(train_ds, batch_size, shuffle=True)

hidden_units = [8, 4]
input_size = x_train.shape[1]

all_layers = []
for hidden_unit in hidden_units:
    layer = nn.Linear(input_size, hidden_unit)
    all_layers.append(layer)
    all_layers.append(nn.ReLU())
    input_size = hidden_unit

all_layers.append(nn.Linear(hidden_units[-1], 1))

model = nn.Sequential(*all_layers)

model

loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)

torch.manual_seed(1)
num_epochs = 20  # port: 200 epochs: 20, on 120 cars (UCI's 398)
log_epochs = 4  # port: 20: five lines in 20 epochs
for epoch in range(num_epochs):
    loss_hist_train = 0
    for x_batch, y_batch in train_dl:
        pred = model(x_batch)[:, 0]
        loss = loss_fn(pred, y_batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_hist_train += loss.item()
    if epoch % log_epochs==0:
        print(f'Epoch {epoch}  Loss {loss_hist_train/len(train_dl):.4f}')

with torch.no_grad():
    pred = model(x_test.float())[:, 0]
    loss = loss_fn(pred, y_test)
    print(f'Test MSE: {loss.item():.4f}')
    print(f'Test MAE: {nn.L1Loss()(pred, y_test).item():.4f}')

image_path = './'
transform = transforms.Compose([transforms.ToTensor()])

mnist_train_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=True, 
                                           transform=transform, 
                                           download=True)
mnist_test_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=False, 
                                           transform=transform, 
                                           download=False)
 
batch_size = 64
torch.manual_seed(1)
train_dl = DataLoader(mnist_train_dataset, batch_size, shuffle=True)

hidden_units = [32, 16]
image_size = mnist_train_dataset[0][0].shape
input_size = image_size[0] * image_size[1] * image_size[2]

all_layers = [nn.Flatten()]
for hidden_unit in hidden_units:
    layer = nn.Linear(input_size, hidden_unit)
    all_layers.append(layer)
    all_layers.append(nn.ReLU())
    input_size = hidden_unit

all_layers.append(nn.Linear(hidden_units[-1], 10))
model = nn.Sequential(*all_layers)

model

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

torch.manual_seed(1)
num_epochs = 3  # port: 20 epochs: 3, on 640 digits (MNIST's 60000)
for epoch in range(num_epochs):
    accuracy_hist_train = 0
    for x_batch, y_batch in train_dl:
        pred = model(x_batch)
        loss = loss_fn(pred, y_batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        is_correct = (torch.argmax(pred, dim=1) == y_batch).float()
        accuracy_hist_train += is_correct.sum()
    accuracy_hist_train /= len(train_dl.dataset)
    print(f'Epoch {epoch}  Accuracy {accuracy_hist_train:.4f}')

pred = model(mnist_test_dataset.data / 255.)
is_correct = (torch.argmax(pred, dim=1) == mnist_test_dataset.targets).float()
print(f'Test accuracy: {is_correct.mean():.4f}') 
"""


# torchvision's transforms and datasets as the chapters use them (torchvision is not installed)
VISION = r"""
import numpy as np
import torch
from PIL import Image

__version__ = '0.0'


from tests.helpers import to_tensor
ToTensor = to_tensor(torch)  # torchvision's ToTensor in this library's words: ours, shared


class Resize:
    # a tensor (C, H, W) to (h, w), bilinear (torchvision's, less its antialiasing)
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        return torch.nn.functional.interpolate(image[None], size=self.size, mode='bilinear', align_corners=False)[0]


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


class CelebA(torch.utils.data.Dataset):
    # faces as PIL images and their 40 attributes (0 or 1)
    def __init__(self, root, split='train', target_type='attr', transform=None, download=False):
        self.images, self.attr = DATA['celeba']
        self.transform = transform

    def __len__(self):
        return len(self.attr)

    def __getitem__(self, index):
        image = Image.fromarray(self.images[index])
        image = image if self.transform is None else self.transform(image)
        return image, torch.tensor(self.attr[index])


class MNIST(torch.utils.data.Dataset):
    # digits: data (N, 28, 28) of uint8 and targets; an item is a PIL image and an int
    def __init__(self, root, train=True, transform=None, download=False):
        images, labels = DATA['mnist', bool(train)]
        self.data, self.targets = torch.tensor(images), torch.tensor(labels)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image = Image.fromarray(self.data[index].numpy())
        image = image if self.transform is None else self.transform(image)
        return image, int(self.targets[index])
"""


@functools.cache
def vision_data() -> dict:
    """The datasets' arrays: 18 faces (RGB 54x44, random blobs of colour) with 40 random
    attributes, MNIST's 640 and 160 digits (sklearn's at 28x28, uint8 as MNIST's)."""
    rng = np.random.default_rng(0)
    faces = np.kron(rng.integers(0, 256, (18, 9, 11, 3)), np.ones((1, 6, 4, 1))).astype(np.uint8)
    x, y = digits28()
    digits = (x * 255).round().astype(np.uint8)
    return {
        "celeba": (faces, rng.integers(0, 2, (18, 40)).astype(np.int64)),
        ("mnist", True): (digits[:640], y[:640]),
        ("mnist", False): (digits[-160:], y[-160:]),
    }


def check_packages(d):
    """The repository's python_environment_check (it imports distutils, gone in Python 3.12):
    each package's version."""
    for name in d:
        print(f"[OK] {name} {__import__(name).__version__}")


def plot_decision_regions(X, y, clf, ax=None):
    """mlxtend's (not installed), as ch13 calls it: the classifier's ``predict`` over a grid
    around ``X`` (float32 as ``X``), its regions filled and the points drawn; each grid and
    its predictions are kept in ``plot_decision_regions.calls``."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    ax = ax or plt.gca()
    xx, yy = np.meshgrid(
        np.linspace(X[:, 0].min() - 1, X[:, 0].max() + 1, 40),
        np.linspace(X[:, 1].min() - 1, X[:, 1].max() + 1, 40),
    )
    grid = np.array([xx.ravel(), yy.ravel()]).T.astype(X.dtype)
    Z = clf.predict(grid)
    plot_decision_regions.calls.append((grid, host(Z)))
    Z = Z.reshape(xx.shape)
    ax.contourf(xx, yy, Z, alpha=0.3)
    for label in np.unique(y):
        ax.scatter(X[y == label, 0], X[y == label, 1], label=label)
    return ax


class Column:
    """A pandas Series as ch13 uses it: ``values``, iteration, ``- number`` and ``/ number``."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __iter__(self):
        return iter(self.values.tolist())

    def __sub__(self, other):
        return Column(self.values - other)

    def __truediv__(self, other):
        return Column(self.values / other)


class Table:
    """A table of cells by (row, column): ``describe()``'s, ``transpose()`` and ``loc``."""

    def __init__(self, cells):
        self.loc = cells

    def transpose(self):
        return Table({(b, a): v for (a, b), v in self.loc.items()})


class Counts(dict):
    """``isna().sum()``: printed as pandas prints a Series of counts."""

    def __str__(self):
        return "\n".join(f"{k:<15} {v}" for k, v in self.items()) + "\ndtype: int64"


class Frame:
    """A pandas DataFrame as ch13 uses it: named numpy columns; sklearn's
    ``train_test_split`` takes its rows with ``take`` (as a pandas frame's: it has ``iloc``)."""

    iloc = None

    def __init__(self, columns):
        self.columns = dict(columns)

    def __len__(self):
        return len(next(iter(self.columns.values())))

    @property
    def shape(self):
        return (len(self), len(self.columns))

    def __getitem__(self, key):
        if isinstance(key, list):
            return Frame({k: self.columns[k] for k in key})
        return Column(self.columns[key])

    def __setitem__(self, key, value):
        self.columns[key] = np.asarray(value)

    def take(self, indices, axis=0):
        return Frame({k: v[indices] for k, v in self.columns.items()})

    def tail(self, n=5):
        return self.take(np.arange(max(len(self) - n, 0), len(self)))

    def isna(self):
        return Frame({k: np.isnan(v) for k, v in self.columns.items()})

    def sum(self):
        return Counts({k: int(v.sum()) for k, v in self.columns.items()})

    def dropna(self):
        return self.take(np.flatnonzero(~np.any(np.isnan(self.values), axis=1)))

    def reset_index(self, drop=False):
        return self

    def copy(self):
        return Frame({k: v.copy() for k, v in self.columns.items()})

    def describe(self):
        stats = {"mean": np.mean, "std": lambda v: np.std(v, ddof=1), "min": np.min, "max": np.max}  # fmt: skip
        return Table({(s, k): f(v) for s, f in stats.items() for k, v in self.columns.items()})

    @property
    def loc(self):
        frame = self

        class Loc:
            def __getitem__(self, key):
                return frame[key[1]]

            def __setitem__(self, key, value):
                frame[key[1]] = value.values if isinstance(value, Column) else value

        return Loc()

    @property
    def values(self):
        return np.column_stack(list(self.columns.values()))


def read_csv(path, names, na_values, comment, sep, skipinitialspace):
    """pandas' ``read_csv`` (not installed) of a whitespace-separated file: the part of each
    line before ``comment``; ``na_values`` as NaN; a column of integers is int64, as pandas'."""
    rows = [line.split(comment)[0].split() for line in Path(path).read_text().splitlines()]
    columns = {}
    for name, items in zip(names, zip(*rows)):
        if all(item.lstrip("-").isdigit() for item in items):
            columns[name] = np.array([int(item) for item in items], np.int64)
        else:
            columns[name] = np.array([np.nan if item == na_values else float(item) for item in items])  # fmt: skip
    return Frame(columns)


def files(folder: Path) -> None:
    """What the scripts read from their folder: ``cat_dog_images/`` (three cats, three dogs:
    JPEGs of a few sizes, as the repository's), ``figures/`` to save plots in, and
    ``auto-mpg.data``: 120 cars in UCI's layout, their MPG falling with weight and
    horsepower, four horsepowers unknown ("?")."""
    from PIL import Image  # noqa: PLC0415

    rng = np.random.default_rng(0)
    (folder / "figures").mkdir()
    images = folder / "cat_dog_images"
    images.mkdir()
    for name, (h, w) in zip(["cat-01", "cat-02", "cat-03", "dog-01", "dog-02", "dog-03"], [(60, 90), (48, 64), (72, 96), (64, 64), (50, 80), (90, 60)]):  # fmt: skip
        pixels = np.kron(rng.integers(0, 256, (h // 6, w // 6, 3)), np.ones((6, 6, 1)))
        Image.fromarray(pixels.astype(np.uint8)).save(images / f"{name}.jpg")
    n = 120
    cylinders = rng.choice([4, 6, 8], n)
    weight = 1500 + 400 * cylinders + rng.normal(0, 200, n)
    horsepower = 20 + 0.03 * weight + rng.normal(0, 8, n)
    year, origin = rng.integers(70, 83, n), rng.integers(1, 4, n)
    mpg = 60 - 0.008 * weight - 0.05 * horsepower + 0.6 * (year - 70) + rng.normal(0, 1.5, n)
    lines = []
    for i in range(n):
        hp = "?" if i in (10, 40, 70, 100) else f"{horsepower[i]:.1f}"
        lines.append(
            f"{mpg[i]:.1f}   {cylinders[i]}   {40 * cylinders[i] + rng.normal(0, 10):.1f}      {hp}      "
            f'{weight[i]:.0f}.      {rng.uniform(10, 20):.1f}   {year[i]}  {origin[i]}\t"car {i}"'
        )
    (folder / "auto-mpg.data").write_text("\n".join(lines) + "\n")


# sklearn asks whether a value is pandas' DataFrame or Series: the stand-in's Frame is neither
NOT_PANDAS = {"DataFrame": type("DataFrame", (), {}), "Series": type("Series", (), {})}


def stand_ins(lib, monkeypatch) -> None:
    """The modules the scripts import that are not installed (or not importable), in
    ``sys.modules``: torchvision (in ``lib``'s words), mlxtend, pandas and the repository's
    python_environment_check."""
    name = lib.__name__ + "vision"
    base = types.ModuleType(name)
    base.DATA = vision_data()
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    for part, keys in ("transforms", ("ToTensor", "Resize", "Compose")), ("datasets", ("CelebA", "MNIST")):  # fmt: skip
        sub = types.ModuleType(f"{name}.{part}")
        for key in keys:
            setattr(sub, key, getattr(base, key))
        setattr(base, part, sub)
        monkeypatch.setitem(sys.modules, f"{name}.{part}", sub)
    monkeypatch.setitem(sys.modules, name, base)
    plot_decision_regions.calls = []
    modules = {
        "python_environment_check": {"check_packages": check_packages},
        "mlxtend": {"__version__": "0.0"},
        "mlxtend.plotting": {"plot_decision_regions": plot_decision_regions},
        "pandas": {"__version__": "0.0", "read_csv": read_csv, **NOT_PANDAS},
    }
    for module_name, contents in modules.items():
        module = types.ModuleType(module_name)
        module.__spec__ = importlib.machinery.ModuleSpec(module_name, None)
        module.__dict__.update(contents)
        monkeypatch.setitem(sys.modules, module_name, module)
    sys.modules["mlxtend"].plotting = sys.modules["mlxtend.plotting"]


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded, run on one thread in ``folder`` beside its files
    as the module ``__main__`` (a notebook's: ``torch.save(model)`` pickles its classes by that
    name): what it printed and its globals."""
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    folder.mkdir(parents=True)
    files(folder)
    stand_ins(lib, monkeypatch)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the scripts insert ".."
    monkeypatch.chdir(folder)
    module = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", module)
    lib.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(script.replace("torch", lib.__name__), str(folder / "main.py"), "exec"), module.__dict__)  # fmt: skip
    finally:
        plt.close("all")
    return out.getvalue(), module.__dict__


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU."""
    needs = "PIL", "sklearn", "scipy", "matplotlib"
    with torch_and_tricycle(monkeypatch, *needs) as (torch, tricycle):
        theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def same_lines(ours: str, theirs: str) -> None:
    """The same printed lines, numbers and reprs aside (the version check names its library;
    a PIL image's repr its address)."""

    def plain(printed):
        printed = re.sub(r"(\d)\+\w+", r"\1", printed.replace("tricycle", "torch"))  # 2.13.0+cpu
        return kinds(re.sub(r" at 0x[0-9A-Fa-f]+", "", printed))

    assert plain(ours) == plain(theirs)


def learned(values, by=1.0) -> None:
    assert len(values) >= 2 and values[-1] < by * values[0], values


def test_ch12_part1(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH12_PART1, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    # the chapter's checks: the norm by hand, the splits' sizes, cat and stack
    t1 = host(our["t1"])
    np.testing.assert_allclose(
        host(our["norm_t1"]), np.sqrt(np.sum(np.square(t1), axis=1)), rtol=1e-6
    )
    np.testing.assert_allclose(host(our["t5"]), t1 @ host(our["t2"]).T, rtol=1e-5)
    assert [len(p) for p in our["t_splits"]] == [len(p) for p in their["t_splits"]] == [3, 2]
    for name in "C", "S", "t_y", "t_sqz", "t_reshape":
        np.testing.assert_array_equal(host(our[name]), host(their[name]))
    assert our["labels"] == their["labels"] == [0, 0, 0, 1, 1, 1]
    # the image files through ToTensor and Resize (bilinear): torch's pixels
    for (image, label), (want, want_label) in zip(our["image_dataset"], their["image_dataset"]):
        assert tuple(image.shape) == (3, 80, 120) and label == want_label
        np.testing.assert_allclose(host(image), host(want), rtol=1e-5, atol=1e-6)
    assert "Image shape:  (72, 96, 3)" in ours


def test_ch12_part2(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH12_PART2, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    for printed, s in (theirs, their), (ours, our):
        losses = numbers(r"Loss ([\d.]+)", printed)  # the two regressions', three lines each
        learned(losses[:3]), learned(losses[3:])
        learned(s["loss_hist"], 0.98)  # the Iris MLP's (6 epochs at Adam's 0.001)
        first, again = numbers(r"Test Acc.: ([\d.]+)", printed)  # the model loaded back
        assert first == again > 0.5
    # the regression by hand from its seed: both end near the least-squares line
    for s in their, our:
        assert 0 < float(s["weight"].item()) < 3 and 0 < float(s["bias"].item()) < 5
    # the state dict loaded into a new model: the trained one's outputs
    np.testing.assert_allclose(host(our["model_new"](our["X_test_norm"])), host(our["model"](our["X_test_norm"])), rtol=1e-6)  # fmt: skip
    # the Iris MLP with torch's weights: torch's numbers
    x, y = host(their["X_test_norm"]), host(their["y_test"])
    same_numbers(their["model"], our["model"], lambda lib, m: (lib.nn.CrossEntropyLoss()(m(lib.tensor(x)), lib.tensor(y)), m(lib.tensor(x))))  # fmt: skip
    import tricycle  # noqa: PLC0415

    z = our["z"]
    for fn, want in (tricycle.tanh, np.tanh(z)), (tricycle.sigmoid, 1 / (1 + np.exp(-z))), (tricycle.relu, np.maximum(z, 0)):  # fmt: skip
        np.testing.assert_allclose(host(fn(tricycle.from_numpy(z))), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(host(tricycle.softmax(tricycle.from_numpy(our["Z"]), dim=0)), our["y_probas"], rtol=1e-12)  # fmt: skip


def test_ch13_part1(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH13_PART1, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    assert "Rank 2 Inputs: tensor([[1]])" in theirs
    for s in their, our:
        assert float(s["w"].grad.item()) == pytest.approx(2 * 1.4 * (1.4 + 0.5 - 2.1), rel=1e-6)
        assert float(s["b"].grad.item()) == pytest.approx(2 * (1.4 + 0.5 - 2.1), rel=1e-6)
        learned(s["history"][0])  # MyModule's training loss
        learned(s["loss_hist_train"])  # the noisy one's
        assert len(plot_calls(s)) == 2
    # the noisy model (no noise out of training) with torch's weights: torch's numbers
    x, y = host(their["x_valid"]), host(their["y_valid"])

    def step(lib, m):
        return lib.nn.BCELoss()(m(lib.tensor(x))[:, 0], lib.tensor(y)), m(lib.tensor(x))

    same_numbers(their["model"], our["model"], step)
    grid = plot_calls(our)[-1][0]
    np.testing.assert_array_equal(host(our["model"].predict(grid)), host(their["model"].predict(grid)))  # fmt: skip


def test_ch13_part2(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CH13_PART2, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    assert "Horsepower 4" in " ".join(ours.split())
    # the feature columns (buckets, one-hot origins) are torch's, to the bit
    for name in "x_train", "x_test", "y_train":
        np.testing.assert_array_equal(host(our[name]), host(their[name]))
    for printed in theirs, ours:
        learned(numbers(r"Epoch \d+  Loss ([\d.]+)", printed), 0.5)
        accuracies = numbers(r"Accuracy ([\d.]+)", printed)
        assert accuracies == sorted(accuracies) and accuracies[-1] > 0.3
        assert numbers(r"Test accuracy: ([\d.]+)", printed)[0] > 0.3
    x = host(their["mnist_test_dataset"].data[:16]) / 255.0
    y = host(their["mnist_test_dataset"].targets[:16])

    def step(lib, m):
        logits = m(lib.tensor(x, dtype=lib.float32))
        return lib.nn.CrossEntropyLoss()(logits, lib.tensor(y)), logits

    same_numbers(their["model"], our["model"], step)


def plot_calls(space) -> list:
    """The grids and predictions of the script's ``plot_decision_regions`` calls."""
    return space["plot_decision_regions"].calls
