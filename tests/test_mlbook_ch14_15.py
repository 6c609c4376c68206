"""Raschka, Liu and Mirjalili's "Machine Learning with PyTorch and Scikit-Learn"
(rasbt/machine-learning-book), chapters 14 and 15 as the repository's ``chNN_partN.py``
scripts, run on tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's
promise; the method of tests/test_rasbt_dl_basics.py):

- ch14 part 1: convolution by hand in numpy against ``np.convolve`` and scipy's
  ``convolve2d``, ``read_image``, the L2 penalty over a layer's ``parameters()``, BCE and
  cross-entropy from probabilities and from logits, and the MNIST CNN grown by
  ``add_module`` (``Subset`` by ``torch.arange``, its ``train`` loop, the test accuracy from
  ``dataset.data``, ``torch.save(model)``);
- ch14 part 2: the CelebA smile classifier (torchvision's ``transforms`` and their
  ``functional`` forms, a ``target_transform``, the CNN ending in ``AvgPool2d``, ``BCELoss``);
- ch15 part 1: an RNN's output computed by hand from ``nn.RNN``'s ``weight_ih_l0`` ... and
  compared with the layer's;
- ch15 part 2: the IMDb sentiment LSTMs (a tokenizer, ``torchtext.vocab.vocab``,
  ``pad_sequence`` in a ``collate_fn``, ``pack_padded_sequence(enforce_sorted=False)``, the
  bidirectional LSTM's last hidden states);
- ch15 part 3: the character-level LSTM language model, sampled through
  ``torch.distributions.categorical.Categorical`` with its temperature.

The downloads are the test's: small synthetic digits (MNIST), faces with or without a bright
"mouth" (CelebA, at CelebA's 218x178), reviews made of positive or negative words (IMDb) and the
start of tiny-shakespeare (skipped without it) in place of "The Mysterious Island"; torchvision
and torchtext are stand-ins written here (numpy images in PIL's place), and the repository's
version check (``python_environment_check``, torch's version numbers) is dropped. Each changed
line ends in ``# port:`` and says why (the CPU in place of ``cuda:0``, sizes, channels and
epochs shrunk). Each script runs under torch (skipped without it), then under tricycle, seeded
and on the CPU; both print the same lines (numbers and reprs aside, the sampled text aside) and
learn; the RNN's hand-computed outputs are the layer's. With torch's weights
(``nn.from_torch``) each chapter's model gives torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import DATA_DIR, package, run_main, torch_and_tricycle
from tests.test_rasbt_dl_generative import same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host

pytestmark = [  # matplotlib's Agg, asked to show the plots
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy"),  # torch's
    pytest.mark.filterwarnings("ignore:invalid escape sequence"),  # the book's regular expressions
    pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy"),  # torch's, ch15
]

CH14_PART1 = r"""
import sys
# from python_environment_check import check_packages  # port: the repository's version check dropped, with its
# sys.path.insert(0, '..'), its dict d of the versions the book used and check_packages(d)  # port: as above
import torch
import numpy as np
import scipy.signal
from torchvision.io import read_image
import torch.nn as nn
import torchvision 
from torchvision import transforms 
from torch.utils.data import Subset
from torch.utils.data import DataLoader
import matplotlib.pyplot as plt
import os

print('PyTorch version:', torch.__version__)
print('NumPy version: ', np.__version__)


def conv1d(x, w, p=0, s=1):
    w_rot = np.array(w[::-1])
    x_padded = np.array(x)
    if p > 0:
        zero_pad = np.zeros(shape=p)
        x_padded = np.concatenate(
            [zero_pad, x_padded, zero_pad])
    res = []
    for i in range(0, (int((len(x_padded) - len(w_rot))/s) + 1) * s, s):
        res.append(np.sum(
            x_padded[i:i + w_rot.shape[0]] * w_rot))
    return np.array(res)


## Testing:
x = [1, 3, 2, 4, 5, 6, 1, 3]
w = [1, 0, 3, 1, 2]

print('Conv1d Implementation:',
      conv1d(x, w, p=2, s=1))

print('Numpy Results:',
      np.convolve(x, w, mode='same')) 


def conv2d(X, W, p=(0, 0), s=(1, 1)):
    W_rot = np.array(W)[::-1,::-1]
    X_orig = np.array(X)
    n1 = X_orig.shape[0] + 2*p[0]
    n2 = X_orig.shape[1] + 2*p[1]
    X_padded = np.zeros(shape=(n1, n2))
    X_padded[p[0]:p[0]+X_orig.shape[0],
    p[1]:p[1]+X_orig.shape[1]] = X_orig

    res = []
    for i in range(0, (int((X_padded.shape[0] -
                            W_rot.shape[0]) / s[0]) + 1) * s[0], s[0]):
        res.append([])
        for j in range(0, (int((X_padded.shape[1] -
                                W_rot.shape[1]) / s[1]) + 1) * s[1], s[1]):
            X_sub = X_padded[i:i + W_rot.shape[0],
                    j:j + W_rot.shape[1]]
            res[-1].append(np.sum(X_sub * W_rot))
    return(np.array(res))

X = [[1, 3, 2, 4], [5, 6, 1, 3], [1, 2, 0, 2], [3, 4, 3, 2]]
W = [[1, 0, 3], [1, 2, 1], [0, 1, 1]]

print('Conv2d Implementation:\n',
    conv2d(X, W, p=(1, 1), s=(1, 1)))


print('SciPy Results:\n',
    scipy.signal.convolve2d(X, W, mode='same'))

img = read_image('example-image.png') 
 
print('Image shape:', img.shape)
print('Number of channels:', img.shape[0])
print('Image data type:', img.dtype)
print(img[:, 100:102, 100:102])

loss_func = nn.BCELoss()
loss = loss_func(torch.tensor([0.9]), torch.tensor([1.0]))
l2_lambda = 0.001

conv_layer = nn.Conv2d(in_channels=3, out_channels=5, kernel_size=5)
l2_penalty = l2_lambda * sum([(p**2).sum() for p in conv_layer.parameters()])
loss_with_penalty = loss + l2_penalty

linear_layer = nn.Linear(10, 16)
l2_penalty = l2_lambda * sum([(p**2).sum() for p in linear_layer.parameters()])
loss_with_penalty = loss + l2_penalty

####### Binary Cross-entropy
logits = torch.tensor([0.8])
probas = torch.sigmoid(logits)
target = torch.tensor([1.0])

bce_loss_fn = nn.BCELoss()
bce_logits_loss_fn = nn.BCEWithLogitsLoss()

print(f'BCE (w Probas): {bce_loss_fn(probas, target):.4f}')
print(f'BCE (w Logits): {bce_logits_loss_fn(logits, target):.4f}')

 
####### Categorical Cross-entropy
logits = torch.tensor([[1.5, 0.8, 2.1]])
probas = torch.softmax(logits, dim=1)
target = torch.tensor([2])

cce_loss_fn = nn.NLLLoss()
cce_logits_loss_fn = nn.CrossEntropyLoss()

print(f'CCE (w Logits): {cce_logits_loss_fn(logits, target):.4f}')
print(f'CCE (w Probas): {cce_loss_fn(torch.log(probas), target):.4f}')

image_path = './'
transform = transforms.Compose([transforms.ToTensor()])

mnist_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=True, 
                                           transform=transform, 
                                           download=True)

mnist_valid_dataset = Subset(mnist_dataset, torch.arange(100))  # port: 10000 of 60000 images: 100 of 500
mnist_train_dataset = Subset(mnist_dataset, torch.arange(100, len(mnist_dataset)))  # port: as above
mnist_test_dataset = torchvision.datasets.MNIST(root=image_path, 
                                           train=False, 
                                           transform=transform, 
                                           download=False)

batch_size = 64
torch.manual_seed(1)
train_dl = DataLoader(mnist_train_dataset, batch_size, shuffle=True)
valid_dl = DataLoader(mnist_valid_dataset, batch_size, shuffle=False)

model = nn.Sequential()
model.add_module('conv1', nn.Conv2d(in_channels=1, out_channels=8, kernel_size=5, padding=2))  # port: 32 channels: 8 (a shared CPU)
model.add_module('relu1', nn.ReLU())        
model.add_module('pool1', nn.MaxPool2d(kernel_size=2))   
model.add_module('conv2', nn.Conv2d(in_channels=8, out_channels=16, kernel_size=5, padding=2))  # port: 32 and 64 channels: 8 and 16
model.add_module('relu2', nn.ReLU())        
model.add_module('pool2', nn.MaxPool2d(kernel_size=2))      

x = torch.ones((4, 1, 28, 28))
print(model(x).shape)  # port: a notebook cell's value, printed

model.add_module('flatten', nn.Flatten()) 

x = torch.ones((4, 1, 28, 28))
print(model(x).shape)  # port: a notebook cell's value, printed

model.add_module('fc1', nn.Linear(784, 64))  # port: 3136 by 1024: 784 (16 channels) by 64
model.add_module('relu3', nn.ReLU()) 
model.add_module('dropout', nn.Dropout(p=0.5)) 

model.add_module('fc2', nn.Linear(64, 10))  # port: 1024: 64, as above

# device = torch.device("cuda:0")  # port: no GPU here: the book's other line, below
device = torch.device("cpu")  # port: the book's line, uncommented

model = model.to(device) 

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

def train(model, num_epochs, train_dl, valid_dl):
    loss_hist_train = [0] * num_epochs
    accuracy_hist_train = [0] * num_epochs
    loss_hist_valid = [0] * num_epochs
    accuracy_hist_valid = [0] * num_epochs
    for epoch in range(num_epochs):
        model.train()
        for x_batch, y_batch in train_dl:
            x_batch = x_batch.to(device) 
            y_batch = y_batch.to(device) 
            pred = model(x_batch)
            loss = loss_fn(pred, y_batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss_hist_train[epoch] += loss.item()*y_batch.size(0)
            is_correct = (torch.argmax(pred, dim=1) == y_batch).float()
            accuracy_hist_train[epoch] += is_correct.sum().cpu()

        loss_hist_train[epoch] /= len(train_dl.dataset)
        accuracy_hist_train[epoch] /= len(train_dl.dataset)
        
        model.eval()
        with torch.no_grad():
            for x_batch, y_batch in valid_dl:
                x_batch = x_batch.to(device) 
                y_batch = y_batch.to(device) 
                pred = model(x_batch)
                loss = loss_fn(pred, y_batch)
                loss_hist_valid[epoch] += loss.item()*y_batch.size(0) 
                is_correct = (torch.argmax(pred, dim=1) == y_batch).float() 
                accuracy_hist_valid[epoch] += is_correct.sum().cpu()

        loss_hist_valid[epoch] /= len(valid_dl.dataset)
        accuracy_hist_valid[epoch] /= len(valid_dl.dataset)
        
        print(f'Epoch {epoch+1} accuracy: {accuracy_hist_train[epoch]:.4f} val_accuracy: {accuracy_hist_valid[epoch]:.4f}')
    return loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid

torch.manual_seed(1)
num_epochs = 4  # port: 20 epochs: 4
hist = train(model, num_epochs, train_dl, valid_dl)

x_arr = np.arange(len(hist[0])) + 1

fig = plt.figure(figsize=(12, 4))
ax = fig.add_subplot(1, 2, 1)
ax.plot(x_arr, hist[0], '-o', label='Train loss')
ax.plot(x_arr, hist[1], '--<', label='Validation loss')
ax.set_xlabel('Epoch', size=15)
ax.set_ylabel('Loss', size=15)
ax.legend(fontsize=15)
ax = fig.add_subplot(1, 2, 2)
ax.plot(x_arr, hist[2], '-o', label='Train acc.')
ax.plot(x_arr, hist[3], '--<', label='Validation acc.')
ax.legend(fontsize=15)
ax.set_xlabel('Epoch', size=15)
ax.set_ylabel('Accuracy', size=15)

#plt.savefig('figures/14_13.png')
plt.show()

# torch.cuda.synchronize()  # port: no GPU here (torch's CPU build refuses the call)
model_cpu = model.cpu()
pred = model(mnist_test_dataset.data.unsqueeze(1) / 255.)
is_correct = (torch.argmax(pred, dim=1) == mnist_test_dataset.targets).float()
print(f'Test accuracy: {is_correct.mean():.4f}') 

fig = plt.figure(figsize=(12, 4))
for i in range(12):
    ax = fig.add_subplot(2, 6, i+1)
    ax.set_xticks([]); ax.set_yticks([])
    img = mnist_test_dataset[i][0][0, :, :]
    pred = model(img.unsqueeze(0).unsqueeze(1))
    y_pred = torch.argmax(pred)
    ax.imshow(img, cmap='gray_r')
    ax.text(0.9, 0.1, y_pred.item(), 
            size=15, color='blue',
            horizontalalignment='center',
            verticalalignment='center', 
            transform=ax.transAxes)
    
    
# plt.savefig('figures/14_14.png')  # port: the figure is drawn, not written (time)
plt.show()

if not os.path.exists('models'):
    os.mkdir('models')

path = 'models/mnist-cnn.ph'
torch.save(model, path)
"""

CH14_PART2 = r"""
import sys
# from python_environment_check import check_packages  # port: the repository's version check dropped, with its
# sys.path.insert(0, '..'), its dict d of the versions the book used and check_packages(d)  # port: as above
import torch
import torch.nn as nn
import numpy as np
import matplotlib.pyplot as plt
import torchvision 
from torchvision import transforms 
from torch.utils.data import DataLoader
from torch.utils.data import Subset

image_path = './'
celeba_train_dataset = torchvision.datasets.CelebA(image_path, split='train', target_type='attr', download=False)
celeba_valid_dataset = torchvision.datasets.CelebA(image_path, split='valid', target_type='attr', download=False)
celeba_test_dataset = torchvision.datasets.CelebA(image_path, split='test', target_type='attr', download=False)

print('Train set:', len(celeba_train_dataset))
print('Validation set:', len(celeba_valid_dataset))
print('Test set:', len(celeba_test_dataset))

## take 5 examples

fig = plt.figure(figsize=(16, 8.5))

## Column 1: cropping to a bounding-box
ax = fig.add_subplot(2, 5, 1)
img, attr = celeba_train_dataset[0]
ax.set_title('Crop to a \nbounding-box', size=15)
ax.imshow(img)
ax = fig.add_subplot(2, 5, 6)
img_cropped = transforms.functional.crop(img, 50, 20, 128, 128)
ax.imshow(img_cropped)

## Column 2: flipping (horizontally)
ax = fig.add_subplot(2, 5, 2)
img, attr = celeba_train_dataset[1]
ax.set_title('Flip (horizontal)', size=15)
ax.imshow(img)
ax = fig.add_subplot(2, 5, 7)
img_flipped = transforms.functional.hflip(img)
ax.imshow(img_flipped)

## Column 3: adjust contrast
ax = fig.add_subplot(2, 5, 3)
img, attr = celeba_train_dataset[2]
ax.set_title('Adjust constrast', size=15)
ax.imshow(img)
ax = fig.add_subplot(2, 5, 8)
img_adj_contrast = transforms.functional.adjust_contrast(img, contrast_factor=2)
ax.imshow(img_adj_contrast)

## Column 4: adjust brightness
ax = fig.add_subplot(2, 5, 4)
img, attr = celeba_train_dataset[3]
ax.set_title('Adjust brightness', size=15)
ax.imshow(img)
ax = fig.add_subplot(2, 5, 9)
img_adj_brightness = transforms.functional.adjust_brightness(img, brightness_factor=1.3)
ax.imshow(img_adj_brightness)

## Column 5: cropping from image center 
ax = fig.add_subplot(2, 5, 5)
img, attr = celeba_train_dataset[4]
ax.set_title('Center crop\nand resize', size=15)
ax.imshow(img)
ax = fig.add_subplot(2, 5, 10)
img_center_crop = transforms.functional.center_crop(img, [0.7*218, 0.7*178])
img_resized = transforms.functional.resize(img_center_crop, size=(218, 178))
ax.imshow(img_resized)
 
plt.show()

torch.manual_seed(1)

fig = plt.figure(figsize=(14, 12))

for i, (img, attr) in enumerate(celeba_train_dataset):
    ax = fig.add_subplot(3, 4, i*4+1)
    ax.imshow(img)
    if i == 0:
        ax.set_title('Orig.', size=15)
        
    ax = fig.add_subplot(3, 4, i*4+2)
    img_transform = transforms.Compose([transforms.RandomCrop([178, 178])])
    img_cropped = img_transform(img)
    ax.imshow(img_cropped)
    if i == 0:
        ax.set_title('Step 1: Random crop', size=15)

    ax = fig.add_subplot(3, 4, i*4+3)
    img_transform = transforms.Compose([transforms.RandomHorizontalFlip()])
    img_flip = img_transform(img_cropped)
    ax.imshow(img_flip)
    if i == 0:
        ax.set_title('Step 2: Random flip', size=15)

    ax = fig.add_subplot(3, 4, i*4+4)
    img_resized = transforms.functional.resize(img_flip, size=(128, 128))
    ax.imshow(img_resized)
    if i == 0:
        ax.set_title('Step 3: Resize', size=15)
    
    if i == 2:
        break
        
plt.show()

get_smile = lambda attr: attr[18]
 
transform_train = transforms.Compose([
    transforms.RandomCrop([178, 178]),
    transforms.RandomHorizontalFlip(),
    transforms.Resize([64, 64]),
    transforms.ToTensor(),
])

transform = transforms.Compose([
    transforms.CenterCrop([178, 178]),
    transforms.Resize([64, 64]),
    transforms.ToTensor(),
])

celeba_train_dataset = torchvision.datasets.CelebA(image_path, 
                                                   split='train', 
                                                   target_type='attr', 
                                                   download=False, 
                                                   transform=transform_train,
                                                   target_transform=get_smile)

torch.manual_seed(1)
data_loader = DataLoader(celeba_train_dataset, batch_size=2)

fig = plt.figure(figsize=(15, 6))

num_epochs = 5
for j in range(num_epochs):
    img_batch, label_batch = next(iter(data_loader))
    img = img_batch[0]
    ax = fig.add_subplot(2, 5, j + 1)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f'Epoch {j}:', size=15)
    ax.imshow(img.permute(1, 2, 0))

    img = img_batch[1]
    ax = fig.add_subplot(2, 5, j + 6)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.imshow(img.permute(1, 2, 0))
      
    
#plt.savefig('figures/14_16.png', dpi=300)
plt.show()

celeba_valid_dataset = torchvision.datasets.CelebA(image_path, 
                                                   split='valid', 
                                                   target_type='attr', 
                                                   download=False, 
                                                   transform=transform,
                                                   target_transform=get_smile)

celeba_test_dataset = torchvision.datasets.CelebA(image_path, 
                                                   split='test', 
                                                   target_type='attr', 
                                                   download=False, 
                                                   transform=transform,
                                                   target_transform=get_smile)

celeba_train_dataset = Subset(celeba_train_dataset, torch.arange(96))  # port: 16000 images: 96
celeba_valid_dataset = Subset(celeba_valid_dataset, torch.arange(32))  # port: 1000 images: 32
 
print('Train set:', len(celeba_train_dataset))
print('Validation set:', len(celeba_valid_dataset))

batch_size = 32

torch.manual_seed(1)
train_dl = DataLoader(celeba_train_dataset, 16, shuffle=True)  # port: batches of 16 (more steps in fewer images)
valid_dl = DataLoader(celeba_valid_dataset, batch_size, shuffle=False)
test_dl = DataLoader(celeba_test_dataset, batch_size, shuffle=False)

model = nn.Sequential()

model.add_module('conv1', nn.Conv2d(in_channels=3, out_channels=8, kernel_size=3, padding=1))  # port: the channels a quarter (a shared CPU): 32 to 8
model.add_module('relu1', nn.ReLU())        
model.add_module('pool1', nn.MaxPool2d(kernel_size=2))  
model.add_module('dropout1', nn.Dropout(p=0.5)) 

model.add_module('conv2', nn.Conv2d(in_channels=8, out_channels=16, kernel_size=3, padding=1))  # port: as above, 32 and 64
model.add_module('relu2', nn.ReLU())        
model.add_module('pool2', nn.MaxPool2d(kernel_size=2))   
model.add_module('dropout2', nn.Dropout(p=0.5)) 

model.add_module('conv3', nn.Conv2d(in_channels=16, out_channels=32, kernel_size=3, padding=1))  # port: as above, 64 and 128
model.add_module('relu3', nn.ReLU())        
model.add_module('pool3', nn.MaxPool2d(kernel_size=2))   

model.add_module('conv4', nn.Conv2d(in_channels=32, out_channels=64, kernel_size=3, padding=1))  # port: as above, 128 and 256
model.add_module('relu4', nn.ReLU())  

x = torch.ones((4, 3, 64, 64))
print(model(x).shape)  # port: a notebook cell's value, printed

model.add_module('pool4', nn.AvgPool2d(kernel_size=8)) 
model.add_module('flatten', nn.Flatten()) 

x = torch.ones((4, 3, 64, 64))
print(model(x).shape)  # port: a notebook cell's value, printed

model.add_module('fc', nn.Linear(64, 1))  # port: 256 channels: 64
model.add_module('sigmoid', nn.Sigmoid()) 

x = torch.ones((4, 3, 64, 64))
print(model(x).shape)  # port: a notebook cell's value, printed

model

# device = torch.device("cuda:0")  # port: no GPU here
device = torch.device("cpu")  # port: as above
model = model.to(device) 

loss_fn = nn.BCELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.003)  # port: 0.001: a larger rate for the fewer steps

def train(model, num_epochs, train_dl, valid_dl):
    loss_hist_train = [0] * num_epochs
    accuracy_hist_train = [0] * num_epochs
    loss_hist_valid = [0] * num_epochs
    accuracy_hist_valid = [0] * num_epochs
    for epoch in range(num_epochs):
        model.train()
        for x_batch, y_batch in train_dl:
            x_batch = x_batch.to(device) 
            y_batch = y_batch.to(device) 
            pred = model(x_batch)[:, 0]
            loss = loss_fn(pred, y_batch.float())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss_hist_train[epoch] += loss.item()*y_batch.size(0)
            is_correct = ((pred>=0.5).float() == y_batch).float()
            accuracy_hist_train[epoch] += is_correct.sum().cpu()

        loss_hist_train[epoch] /= len(train_dl.dataset)
        accuracy_hist_train[epoch] /= len(train_dl.dataset)
        
        model.eval()
        with torch.no_grad():
            for x_batch, y_batch in valid_dl:
                x_batch = x_batch.to(device) 
                y_batch = y_batch.to(device) 
                pred = model(x_batch)[:, 0]
                loss = loss_fn(pred, y_batch.float())
                loss_hist_valid[epoch] += loss.item()*y_batch.size(0) 
                is_correct = ((pred>=0.5).float() == y_batch).float()
                accuracy_hist_valid[epoch] += is_correct.sum().cpu()

        loss_hist_valid[epoch] /= len(valid_dl.dataset)
        accuracy_hist_valid[epoch] /= len(valid_dl.dataset)
        
        print(f'Epoch {epoch+1} accuracy: {accuracy_hist_train[epoch]:.4f} val_accuracy: {accuracy_hist_valid[epoch]:.4f}')
    return loss_hist_train, loss_hist_valid, accuracy_hist_train, accuracy_hist_valid

torch.manual_seed(1)
num_epochs = 4  # port: 30 epochs: 4
hist = train(model, num_epochs, train_dl, valid_dl)

x_arr = np.arange(len(hist[0])) + 1

fig = plt.figure(figsize=(12, 4))
ax = fig.add_subplot(1, 2, 1)
ax.plot(x_arr, hist[0], '-o', label='Train loss')
ax.plot(x_arr, hist[1], '--<', label='Validation loss')
ax.legend(fontsize=15)
ax.set_xlabel('Epoch', size=15)
ax.set_ylabel('Loss', size=15)

ax = fig.add_subplot(1, 2, 2)
ax.plot(x_arr, hist[2], '-o', label='Train acc.')
ax.plot(x_arr, hist[3], '--<', label='Validation acc.')
ax.legend(fontsize=15)
ax.set_xlabel('Epoch', size=15)
ax.set_ylabel('Accuracy', size=15)

#plt.savefig('figures/14_17.png', dpi=300)
plt.show()

accuracy_test = 0

model.eval()
with torch.no_grad():
    for x_batch, y_batch in test_dl:
        x_batch = x_batch.to(device) 
        y_batch = y_batch.to(device) 
        pred = model(x_batch)[:, 0]
        is_correct = ((pred>=0.5).float() == y_batch).float()
        accuracy_test += is_correct.sum().cpu()
 
accuracy_test /= len(test_dl.dataset)
        
print(f'Test accuracy: {accuracy_test:.4f}') 

pred = model(x_batch)[:, 0] * 100

fig = plt.figure(figsize=(15, 7))
for j in range(10, 20):
    ax = fig.add_subplot(2, 5, j-10+1)
    ax.set_xticks([]); ax.set_yticks([])
    ax.imshow(x_batch[j].cpu().permute(1, 2, 0))
    if y_batch[j] == 1:
        label = 'Smile'
    else:
        label = 'Not Smile'
    ax.text(
        0.5, -0.15, 
        f'GT: {label:s}\nPr(Smile)={pred[j]:.0f}%', 
        size=16, 
        horizontalalignment='center',
        verticalalignment='center', 
        transform=ax.transAxes)
    
#plt.savefig('figures/figures-14_18.png', dpi=300)
plt.show()

path = 'models/celeba-cnn.ph'
torch.save(model, path)
"""

CH15_PART1 = r"""
import sys
# from python_environment_check import check_packages  # port: the repository's version check dropped, with its
# sys.path.insert(0, '..'), its dict d of the versions the book used and check_packages(d)  # port: as above
import torch
import torch.nn as nn

torch.manual_seed(1)

rnn_layer = nn.RNN(input_size=5, hidden_size=2, num_layers=1, batch_first=True) 

w_xh = rnn_layer.weight_ih_l0
w_hh = rnn_layer.weight_hh_l0
b_xh = rnn_layer.bias_ih_l0
b_hh = rnn_layer.bias_hh_l0

print('W_xh shape:', w_xh.shape)
print('W_hh shape:', w_hh.shape)
print('b_xh shape:', b_xh.shape)
print('b_hh shape:', b_hh.shape)

x_seq = torch.tensor([[1.0]*5, [2.0]*5, [3.0]*5]).float()

## output of the simple RNN:
output, hn = rnn_layer(torch.reshape(x_seq, (1, 3, 5)))

## manually computing the output:
out_man = []
for t in range(3):
    xt = torch.reshape(x_seq[t], (1, 5))
    print(f'Time step {t} =>')
    print('   Input           :', xt.numpy())
    
    ht = torch.matmul(xt, torch.transpose(w_xh, 0, 1)) + b_xh    
    print('   Hidden          :', ht.detach().numpy())
    
    if t>0:
        prev_h = out_man[t-1]
    else:
        prev_h = torch.zeros((ht.shape))

    ot = ht + torch.matmul(prev_h, torch.transpose(w_hh, 0, 1)) + b_hh
    ot = torch.tanh(ot)
    out_man.append(ot)
    print('   Output (manual) :', ot.detach().numpy())
    print('   RNN output      :', output[:, t].detach().numpy())
    print()
"""


CH15_PART2 = r"""
import sys
# from python_environment_check import check_packages  # port: the repository's version check dropped, with its
# sys.path.insert(0, '..'), its dict d of the versions the book used and check_packages(d)  # port: as above
import torch
import torch.nn as nn
from torchtext.datasets import IMDB
from torch.utils.data.dataset import random_split
import re
from collections import Counter, OrderedDict
from torchtext.vocab import vocab
from torch.utils.data import DataLoader

train_dataset = IMDB(split='train')
test_dataset = IMDB(split='test')

torch.manual_seed(1)
train_dataset, valid_dataset = random_split(
    list(train_dataset), [192, 64])  # port: 20000 and 5000 reviews: 192 and 64

## Step 2: find unique tokens (words)

token_counts = Counter()

def tokenizer(text):
    text = re.sub('<[^>]*>', '', text)
    emoticons = re.findall('(?::|;|=)(?:-)?(?:\)|\(|D|P)', text.lower())
    text = re.sub('[\W]+', ' ', text.lower()) +        ' '.join(emoticons).replace('-', '')
    tokenized = text.split()
    return tokenized

for label, line in train_dataset:
    tokens = tokenizer(line)
    token_counts.update(tokens)
 
    
print('Vocab-size:', len(token_counts))

## Step 3: encoding each unique token into integers

sorted_by_freq_tuples = sorted(token_counts.items(), key=lambda x: x[1], reverse=True)
ordered_dict = OrderedDict(sorted_by_freq_tuples)

vocab = vocab(ordered_dict)

vocab.insert_token("<pad>", 0)
vocab.insert_token("<unk>", 1)
vocab.set_default_index(1)

print([vocab[token] for token in ['this', 'is', 'an', 'example']])

## Step 3-A: define the functions for transformation

device = torch.device("cpu")  # port: "cuda:0": no GPU here

text_pipeline = lambda x: [vocab[token] for token in tokenizer(x)]
label_pipeline = lambda x: 1. if x == 'pos' else 0.

## Step 3-B: wrap the encode and transformation function
def collate_batch(batch):
    label_list, text_list, lengths = [], [], []
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), 
                                      dtype=torch.int64)
        text_list.append(processed_text)
        lengths.append(processed_text.size(0))
    label_list = torch.tensor(label_list)
    lengths = torch.tensor(lengths)
    padded_text_list = nn.utils.rnn.pad_sequence(
        text_list, batch_first=True)
    return padded_text_list.to(device), label_list.to(device), lengths.to(device)

## Take a small batch

dataloader = DataLoader(train_dataset, batch_size=4, shuffle=False, collate_fn=collate_batch)
text_batch, label_batch, length_batch = next(iter(dataloader))
print(text_batch)
print(label_batch)
print(length_batch)
print(text_batch.shape)

## Step 4: batching the datasets

batch_size = 32  

train_dl = DataLoader(train_dataset, batch_size=batch_size,
                      shuffle=True, collate_fn=collate_batch)
valid_dl = DataLoader(valid_dataset, batch_size=batch_size,
                      shuffle=False, collate_fn=collate_batch)
test_dl = DataLoader(test_dataset, batch_size=batch_size,
                     shuffle=False, collate_fn=collate_batch)

embedding = nn.Embedding(num_embeddings=10, 
                         embedding_dim=3, 
                         padding_idx=0)
 
text_encoded_input = torch.LongTensor([[1,2,4,5],[4,3,2,0]])
print(embedding(text_encoded_input))

## An example of building a RNN model
## with simple RNN layer

class RNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.rnn = nn.RNN(input_size, 
                          hidden_size, 
                          num_layers=2, 
                          batch_first=True)
        #self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)
        #self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, 1)
        
    def forward(self, x):
        _, hidden = self.rnn(x)
        out = hidden[-1, :, :]
        out = self.fc(out)
        return out

model = RNN(64, 32) 

print(model) 
 
model(torch.randn(5, 3, 64)) 

class RNN(nn.Module):
    def __init__(self, vocab_size, embed_dim, rnn_hidden_size, fc_hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, 
                                      embed_dim, 
                                      padding_idx=0) 
        self.rnn = nn.LSTM(embed_dim, rnn_hidden_size, 
                           batch_first=True)
        self.fc1 = nn.Linear(rnn_hidden_size, fc_hidden_size)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(fc_hidden_size, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, text, lengths):
        out = self.embedding(text)
        out = nn.utils.rnn.pack_padded_sequence(out, lengths.cpu().numpy(), enforce_sorted=False, batch_first=True)
        out, (hidden, cell) = self.rnn(out)
        out = hidden[-1, :, :]
        out = self.fc1(out)
        out = self.relu(out)
        out = self.fc2(out)
        out = self.sigmoid(out)
        return out
         
vocab_size = len(vocab)
embed_dim = 20
rnn_hidden_size = 64
fc_hidden_size = 64

torch.manual_seed(1)
model = RNN(vocab_size, embed_dim, rnn_hidden_size, fc_hidden_size) 
model = model.to(device)

def train(dataloader):
    model.train()
    total_acc, total_loss = 0, 0
    for text_batch, label_batch, lengths in dataloader:
        optimizer.zero_grad()
        pred = model(text_batch, lengths)[:, 0]
        loss = loss_fn(pred, label_batch)
        loss.backward()
        optimizer.step()
        total_acc += ((pred>=0.5).float() == label_batch).float().sum().item()
        total_loss += loss.item()*label_batch.size(0)
    return total_acc/len(dataloader.dataset), total_loss/len(dataloader.dataset)
 
def evaluate(dataloader):
    model.eval()
    total_acc, total_loss = 0, 0
    with torch.no_grad():
        for text_batch, label_batch, lengths in dataloader:
            pred = model(text_batch, lengths)[:, 0]
            loss = loss_fn(pred, label_batch)
            total_acc += ((pred>=0.5).float() == label_batch).float().sum().item()
            total_loss += loss.item()*label_batch.size(0)
    return total_acc/len(dataloader.dataset), total_loss/len(dataloader.dataset)

loss_fn = nn.BCELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

num_epochs = 4  # port: 10 epochs: 4

torch.manual_seed(1)
 
for epoch in range(num_epochs):
    acc_train, loss_train = train(train_dl)
    acc_valid, loss_valid = evaluate(valid_dl)
    print(f'Epoch {epoch} accuracy: {acc_train:.4f} val_accuracy: {acc_valid:.4f}')
    print(f'Epoch {epoch} loss: {loss_train:.4f}')  # port: the loss printed too, to see it fall
 

acc_test, _ = evaluate(test_dl)
print(f'test_accuracy: {acc_test:.4f}') 

class RNN(nn.Module):
    def __init__(self, vocab_size, embed_dim, rnn_hidden_size, fc_hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, 
                                      embed_dim, 
                                      padding_idx=0) 
        self.rnn = nn.LSTM(embed_dim, rnn_hidden_size, 
                           batch_first=True, bidirectional=True)
        self.fc1 = nn.Linear(rnn_hidden_size*2, fc_hidden_size)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(fc_hidden_size, 1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, text, lengths):
        out = self.embedding(text)
        out = nn.utils.rnn.pack_padded_sequence(out, lengths.cpu().numpy(), enforce_sorted=False, batch_first=True)
        _, (hidden, cell) = self.rnn(out)
        out = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        out = self.fc1(out)
        out = self.relu(out)
        out = self.fc2(out)
        out = self.sigmoid(out)
        return out
    
torch.manual_seed(1)
model = RNN(vocab_size, embed_dim, rnn_hidden_size, fc_hidden_size) 
model = model.to(device)

loss_fn = nn.BCELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.002)

num_epochs = 4  # port: 10 epochs: 4

torch.manual_seed(1)
 
for epoch in range(num_epochs):
    acc_train, loss_train = train(train_dl)
    acc_valid, loss_valid = evaluate(valid_dl)
    print(f'Epoch {epoch} accuracy: {acc_train:.4f} val_accuracy: {acc_valid:.4f}')
    print(f'Epoch {epoch} loss: {loss_train:.4f}')  # port: the loss printed too, to see it fall

test_dataset = IMDB(split='test')
test_dl = DataLoader(test_dataset, batch_size=batch_size,
                     shuffle=False, collate_fn=collate_batch)

acc_test, _ = evaluate(test_dl)
print(f'test_accuracy: {acc_test:.4f}') 
"""


CH15_PART3 = r"""
import sys
# from python_environment_check import check_packages  # port: the repository's version check dropped, with its
# sys.path.insert(0, '..'), its dict d of the versions the book used and check_packages(d)  # port: as above
import numpy as np
import torch
from torch.utils.data import Dataset
from torch.utils.data import DataLoader
import torch.nn as nn
from torch.distributions.categorical import Categorical

## Reading and processing text
with open('1268-0.txt', 'r', encoding="utf8") as fp:
    text=fp.read()
    
start_indx = text.find('First Citizen')  # port: tiny-shakespeare's start in the book's ('THE MYSTERIOUS ISLAND')
end_indx = text.find('End of the Project Gutenberg')  # port: the test writes this end mark after its text

text = text[start_indx:end_indx]
char_set = set(text)
print('Total Length:', len(text))
print('Unique Characters:', len(char_set))

chars_sorted = sorted(char_set)
char2int = {ch:i for i,ch in enumerate(chars_sorted)}
char_array = np.array(chars_sorted)

text_encoded = np.array(
    [char2int[ch] for ch in text],
    dtype=np.int32)

print('Text encoded shape: ', text_encoded.shape)

print(text[:15], '     == Encoding ==> ', text_encoded[:15])
print(text_encoded[15:21], ' == Reverse  ==> ', ''.join(char_array[text_encoded[15:21]]))

for ex in text_encoded[:5]:
    print('{} -> {}'.format(ex, char_array[ex]))

seq_length = 40
chunk_size = seq_length + 1

text_chunks = [text_encoded[i:i+chunk_size] 
               for i in range(len(text_encoded)-chunk_size+1)] 

## inspection:
for seq in text_chunks[:1]:
    input_seq = seq[:seq_length]
    target = seq[seq_length] 
    print(input_seq, ' -> ', target)
    print(repr(''.join(char_array[input_seq])), 
          ' -> ', repr(''.join(char_array[target])))

class TextDataset(Dataset):
    def __init__(self, text_chunks):
        self.text_chunks = text_chunks

    def __len__(self):
        return len(self.text_chunks)
    
    def __getitem__(self, idx):
        text_chunk = self.text_chunks[idx]
        return text_chunk[:-1].long(), text_chunk[1:].long()
    
seq_dataset = TextDataset(torch.tensor(text_chunks))

for i, (seq, target) in enumerate(seq_dataset):
    print(' Input (x):', repr(''.join(char_array[seq])))
    print('Target (y):', repr(''.join(char_array[target])))
    print()
    if i == 1:
        break
    

device = torch.device("cpu")  # port: "cuda:0": no GPU here

 
batch_size = 64

torch.manual_seed(1)
seq_dl = DataLoader(seq_dataset, batch_size=batch_size, shuffle=True, drop_last=True)

class RNN(nn.Module):
    def __init__(self, vocab_size, embed_dim, rnn_hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim) 
        self.rnn_hidden_size = rnn_hidden_size
        self.rnn = nn.LSTM(embed_dim, rnn_hidden_size, 
                           batch_first=True)
        self.fc = nn.Linear(rnn_hidden_size, vocab_size)

    def forward(self, x, hidden, cell):
        out = self.embedding(x).unsqueeze(1)
        out, (hidden, cell) = self.rnn(out, (hidden, cell))
        out = self.fc(out).reshape(out.size(0), -1)
        return out, hidden, cell

    def init_hidden(self, batch_size):
        hidden = torch.zeros(1, batch_size, self.rnn_hidden_size)
        cell = torch.zeros(1, batch_size, self.rnn_hidden_size)
        return hidden.to(device), cell.to(device)
    
vocab_size = len(char_array)
embed_dim = 32  # port: 256: 32 (a shared CPU)
rnn_hidden_size = 64  # port: 512: 64

torch.manual_seed(1)
model = RNN(vocab_size, embed_dim, rnn_hidden_size) 
model = model.to(device)
model

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.005)

num_epochs = 30  # port: 10000 steps: 30

torch.manual_seed(1)

for epoch in range(num_epochs):
    hidden, cell = model.init_hidden(batch_size)
    seq_batch, target_batch = next(iter(seq_dl))
    seq_batch = seq_batch.to(device)
    target_batch = target_batch.to(device)
    optimizer.zero_grad()
    loss = 0
    for c in range(seq_length):
        pred, hidden, cell = model(seq_batch[:, c], hidden, cell) 
        loss += loss_fn(pred, target_batch[:, c])
    loss.backward()
    optimizer.step()
    loss = loss.item()/seq_length
    if epoch % 5 == 0:  # port: every 500th of 10000: every 5th of 30
        print(f'Epoch {epoch} loss: {loss:.4f}')
 

torch.manual_seed(1)

logits = torch.tensor([[1.0, 1.0, 1.0]])

print('Probabilities:', nn.functional.softmax(logits, dim=1).numpy()[0])

m = Categorical(logits=logits)
samples = m.sample((10,))
 
print(samples.numpy())

torch.manual_seed(1)

logits = torch.tensor([[1.0, 1.0, 3.0]])

print('Probabilities:', nn.functional.softmax(logits, dim=1).numpy()[0])

m = Categorical(logits=logits)
samples = m.sample((10,))
 
print(samples.numpy())

def sample(model, starting_str, 
           len_generated_text=100,  # port: 500 characters: 100
           scale_factor=1.0):

    encoded_input = torch.tensor([char2int[s] for s in starting_str])
    encoded_input = torch.reshape(encoded_input, (1, -1))

    generated_str = starting_str

    model.eval()
    hidden, cell = model.init_hidden(1)
    hidden = hidden.to('cpu')
    cell = cell.to('cpu')
    for c in range(len(starting_str)-1):
        _, hidden, cell = model(encoded_input[:, c].view(1), hidden, cell) 
    
    last_char = encoded_input[:, -1]
    for i in range(len_generated_text):
        logits, hidden, cell = model(last_char.view(1), hidden, cell) 
        logits = torch.squeeze(logits, 0)
        scaled_logits = logits * scale_factor
        m = Categorical(logits=scaled_logits)
        last_char = m.sample()
        generated_str += str(char_array[last_char])
        
    return generated_str

torch.manual_seed(1)
model.to('cpu')
print(sample(model, starting_str='The island'))

logits = torch.tensor([[1.0, 1.0, 3.0]])

print('Probabilities before scaling:        ', nn.functional.softmax(logits, dim=1).numpy()[0])

print('Probabilities after scaling with 0.5:', nn.functional.softmax(0.5*logits, dim=1).numpy()[0])

print('Probabilities after scaling with 0.1:', nn.functional.softmax(0.1*logits, dim=1).numpy()[0])

torch.manual_seed(1)
print(sample(model, starting_str='The island', 
             scale_factor=2.0))

torch.manual_seed(1)
print(sample(model, starting_str='The island', 
             scale_factor=0.5))
"""


# torchvision's pieces the chapters call, on numpy images (H, W, C) of uint8 in PIL's place
VISION = r"""
import numpy as np
import torch


from tests.helpers import to_tensor
ToTensor = to_tensor(torch)  # torchvision's ToTensor in this library's words: ours, shared


def crop(image, top, left, height, width):
    return image[top:top + height, left:left + width]


def hflip(image):
    return image[:, ::-1]


def center_crop(image, output_size):
    (h, w), (n, m) = [int(s) for s in output_size], image.shape[:2]
    return crop(image, int(round((n - h) / 2)), int(round((m - w) / 2)), h, w)


def resize(image, size):
    # nearest neighbour, to (h, w)
    (h, w), (n, m) = size, image.shape[:2]
    return image[(np.arange(h) * n) // h][:, (np.arange(w) * m) // w]


def blend(image, other, ratio):
    return np.clip(ratio * image + (1 - ratio) * other, 0, 255).astype(np.uint8)


def adjust_brightness(image, brightness_factor):
    return blend(image.astype(np.float32), 0.0, brightness_factor)


def adjust_contrast(image, contrast_factor):
    grey = image.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)
    return blend(image.astype(np.float32), grey.mean(), contrast_factor)


class Resize:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        return resize(image, self.size)


class CenterCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        return center_crop(image, self.size)


class RandomCrop:
    # the corner drawn from the library's generator, as torchvision's
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        (h, w), (n, m) = self.size, image.shape[:2]
        top = int(torch.randint(0, n - h + 1, size=(1,)).item())
        left = int(torch.randint(0, m - w + 1, size=(1,)).item())
        return crop(image, top, left, h, w)


class RandomHorizontalFlip:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, image):
        return hflip(image) if torch.rand(1).item() < self.p else image


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


class MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, download=False):
        images, labels = IMAGES['mnist', train]
        self.data, self.targets = torch.tensor(images), torch.tensor(labels)
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image = self.data[index].numpy()
        return (image if self.transform is None else self.transform(image)), int(self.targets[index])


class CelebA(torch.utils.data.Dataset):
    def __init__(self, root, split='train', target_type='attr', transform=None, target_transform=None, download=False):
        self.images, self.attr = IMAGES['celeba', split]
        self.transform, self.target_transform = transform, target_transform

    def __len__(self):
        return len(self.attr)

    def __getitem__(self, index):
        image, target = self.images[index], torch.tensor(self.attr[index])
        image = image if self.transform is None else self.transform(image)
        return image, (target if self.target_transform is None else self.target_transform(target))


def read_image(path):
    # a PNG as a uint8 tensor (C, H, W)
    from PIL import Image

    return torch.from_numpy(np.ascontiguousarray(np.asarray(Image.open(path)).transpose(2, 0, 1)))
"""


def digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic 28x28 digits (uint8, as MNIST's) and their labels: each class a blocky
    pattern of its own, shifted by a pixel or two and noisy."""
    rng = np.random.default_rng(0)
    patterns = np.kron(rng.uniform(size=(10, 6, 6)) > 0.55, np.ones((4, 4)))  # (10, 24, 24)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = np.zeros((n, 28, 28))
    for i, (dy, dx) in enumerate(rng.integers(0, 5, (n, 2))):
        images[i, dy : dy + 24, dx : dx + 24] = patterns[labels[i]]
    images = np.clip(images * 0.8 + rng.uniform(0, 0.3, images.shape), 0, 1)
    return (images * 255).round().astype(np.uint8), labels.astype(np.int64)


def faces(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` synthetic CelebA images (218, 178, 3) of uint8 and their 40 attributes (0 or 1):
    a face-coloured oval on blocky noise, with a bright mouth where attribute 18 (smiling) is
    1, a dark one where it is 0."""
    rng = np.random.default_rng(seed)
    attr = rng.integers(0, 2, (n, 40))
    v, u = np.mgrid[0:218, 0:178]
    face = ((v - 109) / 90.0) ** 2 + ((u - 89) / 70.0) ** 2 < 1
    noise = rng.integers(0, 60, (n, 55, 45, 3), dtype=np.uint8)
    images = noise.repeat(4, axis=1).repeat(4, axis=2)[:, :218, :178]  # (n, 218, 178, 3)
    images[:, face] += np.array([150, 110, 80], np.uint8)
    images[:, 125:175, 39:139] = np.where(attr[:, 18, None, None, None] == 1, 250, 60).astype(np.uint8)  # fmt: skip
    return images, attr


class Images(dict):
    """The datasets' images, each set made when first asked for: MNIST's 500 and 100,
    CelebA's 96, 32 and 32."""

    sets = {
        ("mnist", True): (digits, 500, 1),
        ("mnist", False): (digits, 100, 2),
        ("celeba", "train"): (faces, 96, 3),
        ("celeba", "valid"): (faces, 32, 4),
        ("celeba", "test"): (faces, 32, 5),
    }

    def __missing__(self, key):
        make, n, seed = self.sets[key]
        self[key] = make(n, seed)
        return self[key]


def vision(lib, monkeypatch) -> None:
    """``<lib>vision`` with its ``datasets``, ``transforms`` (and ``transforms.functional``)
    and ``io``, in ``sys.modules``."""
    name = lib.__name__ + "vision"
    base = types.ModuleType(f"{name}._base")
    base.IMAGES = IMAGES
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    parts = {
        "datasets": ("MNIST", "CelebA"),
        "transforms": ("ToTensor", "Resize", "RandomCrop", "CenterCrop", "RandomHorizontalFlip", "Compose"),
        "transforms.functional": ("crop", "hflip", "center_crop", "resize", "adjust_brightness", "adjust_contrast"),
        "io": ("read_image",),
    }  # fmt: skip
    package(name, monkeypatch, base, parts)


IMAGES = Images()

# torchtext's pieces the IMDb script calls: the dataset's (label, text) pairs, ``vocab``
TEXT = r"""
import torch


class Vocab:
    # torchtext.vocab.Vocab: tokens to indices, in the ordered dict's order
    def __init__(self, tokens):
        self.itos, self.default = list(tokens), None
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def insert_token(self, token, index):
        self.itos.insert(index, token)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def set_default_index(self, index):
        self.default = index

    def __len__(self):
        return len(self.itos)

    def __getitem__(self, token):
        if token not in self.stoi and self.default is None:
            raise RuntimeError(f"Token {token} not found and default index is not set")
        return self.stoi.get(token, self.default)


def vocab(ordered_dict, min_freq=1):
    return Vocab(t for t, count in ordered_dict.items() if count >= min_freq)


class RawTextIterableDataset(torch.utils.data.IterableDataset):
    # torchtext's dataset of (label, text) pairs: iterable, with a length
    def __init__(self, pairs):
        self.pairs = pairs

    def __iter__(self):
        return iter(self.pairs)

    def __len__(self):
        return len(self.pairs)


def IMDB(split='train'):
    return RawTextIterableDataset(REVIEWS[split])
"""

POSITIVE = "great wonderful loved excellent best amazing enjoyed beautiful superb brilliant".split()
NEGATIVE = "bad awful boring worst hated terrible waste poor dull stupid".split()
NEUTRAL = (
    "the movie film this was a and it plot actor story of is i to but with scene an that".split()
)


def reviews(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` reviews ('pos' or 'neg', text): mostly neutral words, some of the label's, HTML
    line breaks and emoticons as IMDb's."""
    rng = np.random.default_rng(seed)
    out = []
    for label in rng.permutation(np.arange(n) % 2):
        moods = POSITIVE if label else NEGATIVE
        words = [str(rng.choice(moods)) if rng.uniform() < 0.25 else str(rng.choice(NEUTRAL)) for _ in range(rng.integers(6, 25))]  # fmt: skip
        if rng.uniform() < 0.3:
            words.insert(len(words) // 2, "<br /><br />")
        if rng.uniform() < 0.3:
            words.append(":-)" if label else ":(")
        out.append(("pos" if label else "neg", " ".join(words).capitalize() + "."))
    return out


def text(lib, monkeypatch) -> None:
    """``<lib>text`` with ``datasets.IMDB`` and ``vocab.vocab``, in ``sys.modules``."""
    name = lib.__name__ + "text"
    module, base = types.ModuleType(name), types.ModuleType(f"{name}._base")
    base.REVIEWS = {"train": reviews(256, 6), "test": reviews(64, 7)}
    exec(TEXT.replace("torch", lib.__name__), base.__dict__)
    for part, key in ("datasets", "IMDB"), ("vocab", "vocab"):
        sub = types.ModuleType(f"{name}.{part}")
        setattr(sub, key, getattr(base, key))
        setattr(module, part, sub)
        monkeypatch.setitem(sys.modules, f"{name}.{part}", sub)
    monkeypatch.setitem(sys.modules, name, module)


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded, run as ``__main__`` in ``folder`` (with the
    chapters' files: ``example-image.png``, ``1268-0.txt``, a ``models`` folder) beside the
    stand-ins: what it printed and its globals."""
    folder.mkdir(parents=True)
    (folder / "models").mkdir()
    if "example-image.png" in script:
        from PIL import Image  # noqa: PLC0415

        v, u = np.mgrid[0:252, 0:221]
        rgb = np.stack([u % 256, v % 256, (u + v) % 256], axis=-1).astype(np.uint8)
        Image.fromarray(rgb).save(folder / "example-image.png")
    if "1268-0.txt" in script:
        book = (DATA_DIR / "tinyshakespeare.txt").read_text()[:6000]
        (folder / "1268-0.txt").write_text(book + "\nEnd of the Project Gutenberg EBook\n")
    vision(lib, monkeypatch)
    text(lib, monkeypatch)
    lib.manual_seed(0)
    np.random.seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "main.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (the scripts' ``cuda:0`` is
    the CPU already: no GPU is answered either)."""
    with torch_and_tricycle(monkeypatch) as (torch, tricycle):
        theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def plots() -> None:
    """matplotlib (not in tricycle's test extra) on its Agg backend: the plots drawn nowhere."""
    pytest.importorskip("matplotlib").use("Agg")


def libraries():
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    return torch, tricycle


def close(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    """Each of ``ours`` (tensors or arrays) is the one of ``theirs``."""
    value = lambda v: v if isinstance(v, np.ndarray) else host(v)  # noqa: E731
    for got, want in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(value(got), value(want), rtol=rtol, atol=atol)


def same_lines(ours: str, theirs: str) -> None:
    """Both printed the same lines, numbers and reprs aside (and torch's build, ``+cpu``), a
    model's print with its documented names (a Linear is ``Dense(from_size, to_size)``) and
    without its parameter counts."""
    ours = re.sub(r"Dense\(from_size=(\d+), to_size=(\d+)", r"Linear(in_features=\1, out_features=\2", ours)  # fmt: skip
    ours = re.sub(r"  # [\d,]+ parameters", "", ours)
    assert kinds(ours) == kinds(re.sub(r"(\d)\+(cpu|cu\d+)", r"\1", theirs))


def accuracies(printed: str) -> list[float]:
    return numbers(r"Epoch \d+ accuracy: ([\d.]+)", printed)


def test_ch14_part1(tmp_path, monkeypatch):
    """Convolutions by hand (numpy's and scipy's), the losses from probabilities and logits,
    and the MNIST CNN: it learns, and given torch's weights gives torch's logits and
    gradients; the whole model saved by ``torch.save`` loads back."""
    pytest.importorskip("scipy")
    pytest.importorskip("PIL")
    plots()
    (theirs, their), (ours, our) = both(CH14_PART1, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    for name in (
        "BCE \\(w Probas\\)",
        "BCE \\(w Logits\\)",
        "CCE \\(w Logits\\)",
        "CCE \\(w Probas\\)",
    ):
        np.testing.assert_allclose(numbers(name + r": ([\d.]+)", ours), numbers(name + r": ([\d.]+)", theirs))  # fmt: skip
    assert numbers(r"BCE \(w Probas\): ([\d.]+)", ours) == [0.3711]
    np.testing.assert_array_equal(host(our["img"]), host(their["img"]))  # a test digit
    close([our["loss"]], [their["loss"]])  # BCE of 0.9 against 1; the penalty's weights differ
    penalty, total = float(our["l2_penalty"]), float(our["loss_with_penalty"])
    assert 0 < penalty < 0.1 and total == pytest.approx(float(our["loss"]) + penalty)
    for printed in theirs, ours:
        found = accuracies(printed)
        assert len(found) == 4 and found[-1] > found[0] and found[-1] > 0.5, found
        assert numbers(r"Test accuracy: ([\d.]+)", printed)[0] > 0.5
    torch, tricycle = libraries()
    x = np.random.default_rng(0).uniform(size=(8, 1, 28, 28)).astype(np.float32)
    y = np.arange(8) % 10

    def step(lib, m):
        m.eval()  # Dropout off: its draws are each library's
        logits = m(lib.tensor(x))
        return lib.nn.functional.cross_entropy(logits, lib.tensor(y)), logits

    saved = tricycle.load(tmp_path / "tricycle" / "models" / "mnist-cnn.ph", weights_only=False)
    close([saved.eval()(tricycle.tensor(x))], [our["model"].eval()(tricycle.tensor(x))])
    same_numbers(their["model"], our["model"], step)


def test_ch14_part2(tmp_path, monkeypatch):
    """The CelebA smile classifier on synthetic faces: the augmentations, the CNN ending in
    ``AvgPool2d`` and ``Sigmoid`` under ``BCELoss``; it learns, and given torch's weights gives
    torch's probabilities and gradients."""
    plots()
    (theirs, their), (ours, our) = both(CH14_PART2, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    for printed, s in (theirs, their), (ours, our):  # the training loss falls, and learns
        found, losses = accuracies(printed), s["hist"][0]
        assert len(found) == 4 and found[-1] > found[0] and losses[-1] < losses[0], (found, losses)
        assert numbers(r"Test accuracy: ([\d.]+)", printed)  # as the model's eval mode has it
    for s in their, our:  # the augmented images, as ToTensor leaves them
        batch = host(s["img_batch"])
        assert batch.shape == (2, 3, 64, 64) and batch.dtype == np.float32 and batch.max() <= 1
    x = host(their["x_batch"])[:8]
    y = host(their["y_batch"])[:8].astype(np.float32)

    def step(lib, m):
        m.eval()
        probas = m(lib.tensor(x))[:, 0]
        return lib.nn.BCELoss()(probas, lib.tensor(y)), probas

    same_numbers(their["model"], our["model"], step)


def test_ch15_part1(tmp_path, monkeypatch):
    """The RNN computed by hand from ``nn.RNN``'s own weights gives the layer's outputs, in
    each library; given torch's weights the layer's outputs are torch's."""
    (theirs, their), (ours, our) = both(CH15_PART1, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    for s in their, our:
        close([s["out_man"][t][0] for t in range(3)], [s["output"][0, t] for t in range(3)])
    torch, tricycle = libraries()
    layer = tricycle.nn.RNN(input_size=5, hidden_size=2, num_layers=1, batch_first=True)
    layer.load_state_dict({k: tricycle.tensor(host(v)) for k, v in their["rnn_layer"].state_dict().items()})  # fmt: skip
    x = np.random.default_rng(0).normal(size=(2, 3, 5)).astype(np.float32)
    results = []
    for lib, m in (torch, their["rnn_layer"]), (tricycle, layer):
        m.zero_grad()
        inputs = lib.tensor(x, requires_grad=True)
        output, hn = m(inputs)
        (output**2).sum().backward()
        results.append([output, hn, inputs.grad, *(p.grad for p in m.parameters())])
    close(results[1], results[0])


def test_ch15_part2(tmp_path, monkeypatch):
    """The IMDb sentiment LSTMs over packed padded batches: each library's batches hold its
    vocabulary's indices (the split is each library's draw), padded with 0; both models learn,
    and given torch's weights each (one-way and bidirectional) gives torch's probabilities and
    gradients."""
    (theirs, their), (ours, our) = both(CH15_PART2, tmp_path, monkeypatch)
    same_lines(ours, theirs)
    for s in their, our:  # the split is each library's draw: each batch its own words
        text, lengths = host(s["text_batch"]), host(s["length_batch"])
        np.testing.assert_array_equal(lengths, (text != 0).sum(axis=1))  # padded with <pad>, 0
        first = [s["vocab"][t] for t in s["tokenizer"](s["train_dataset"][0][1])]
        assert text[0, : lengths[0]].tolist() == first and s["vocab"]["no-such-word"] == 1
    for printed in theirs, ours:
        losses = numbers(r"Epoch \d+ loss: ([\d.]+)", printed)
        assert len(losses) == 8 and losses[3] < losses[0] and losses[7] < losses[4], losses
        assert numbers(r"test_accuracy: ([\d.]+)", printed)[-1] > 0.6
    batch = next(iter(their["valid_dl"]))
    text, labels, lengths = (host(b) for b in batch)

    def step(lib, m):
        probas = m(lib.tensor(text), lib.tensor(lengths))[:, 0]
        return lib.nn.BCELoss()(probas, lib.tensor(labels)), probas

    # the one-way LSTM's class, which the script's bidirectional one replaces, made again
    lstm = "class RNN(nn.Module):" + CH15_PART2.split("class RNN(nn.Module):")[2].split("vocab_size =")[0]  # fmt: skip
    models = []
    for lib in libraries():
        space = {}
        exec(f"import torch\nimport torch.nn as nn\n{lstm}".replace("torch", lib.__name__), space)
        lib.manual_seed(0)
        models.append(space["RNN"](len(their["vocab"]), 20, 16, 8))
    same_numbers(*models, step)
    assert len(our["vocab"]) == len(their["vocab"])  # the same words, in each library's split
    same_numbers(their["model"], our["model"], step)  # the bidirectional LSTM, as trained


def test_ch15_part3(tmp_path, monkeypatch):
    """The character-level language model on tiny-shakespeare: it learns, samples through
    ``Categorical`` the lengths asked, and given torch's weights gives torch's loss over a
    batch of sequences and its gradients."""
    if not (DATA_DIR / "tinyshakespeare.txt").exists():
        pytest.skip("tiny-shakespeare is absent")
    (theirs, their), (ours, our) = both(CH15_PART3, tmp_path, monkeypatch)
    sampled = re.compile(
        r"^(The island.*?)\n(?=^Probabilities|^The island|\Z)", re.DOTALL | re.MULTILINE
    )
    same_lines(sampled.sub("<sampled>\n", ours), sampled.sub("<sampled>\n", theirs))
    for printed, s in (theirs, their), (ours, our):
        losses = numbers(r"Epoch \d+ loss: ([\d.]+)", printed)
        assert len(losses) == 6 and losses[-1] < 0.8 * losses[0], losses
        texts = sampled.findall(printed)  # 100 characters after the 10 given, of the text's
        assert [len(t) for t in texts] == [110, 110, 110] and set("".join(texts)) <= s["char_set"]
    torch, tricycle = libraries()
    seq, target = (host(b) for b in next(iter(their["seq_dl"])))

    def step(lib, m):
        hidden, cell = m.init_hidden(seq.shape[0])
        loss, preds = 0, []
        for c in range(8):
            pred, hidden, cell = m(lib.tensor(seq[:, c]), hidden, cell)
            loss += lib.nn.functional.cross_entropy(pred, lib.tensor(target[:, c]))
            preds.append(pred)
        return loss, *preds

    same_numbers(their["model"], our["model"], step)
    logits = np.array([[1.0, 1.0, 3.0]], np.float32)
    probs = [lib.distributions.Categorical(logits=lib.tensor(logits)).log_prob(lib.tensor([2])) for lib in (torch, tricycle)]  # fmt: skip
    close([probs[1]], [probs[0]])
