"""PyTorch's tutorials "What is torch.nn really?" (beginner_source/nn_tutorial.py), "Adversarial
Example Generation" (fgsm_tutorial.py) and the "Knowledge Distillation Tutorial"
(knowledge_distillation_tutorial.py), run on tricycle with ``torch`` replaced by ``tricycle`` in
their text (docs/pytorch.md's promise; the method of tests/test_zero_to_hero.py).

- nn_tutorial: logistic regression on raw tensors (``weights -= weights.grad * lr`` under
  ``torch.no_grad()``, ``weights.grad.zero_()``, a hand-written ``log_softmax`` and ``nll`` with
  ``input[range(n), target]``), then ``F.cross_entropy``, ``nn.Module`` with ``nn.Parameter``,
  ``nn.Linear``, ``optim.SGD``, ``TensorDataset`` slicing, ``DataLoader``, validation,
  ``loss_batch``/``fit``/``get_data``, the CNN (``view``, ``F.avg_pool2d``, ``size(1)``), the
  ``Sequential`` with ``Lambda`` layers, ``WrappedDataLoader`` and ``AdaptiveAvgPool2d``, and
  the device part (``torch.device``, ``.to(dev)``); its data is the pickle ``mnist.pkl.gz`` it
  reads, in MNIST's layout, of sklearn's digits scaled to 28x28 (the download never runs);
- fgsm_tutorial: the LeNet trained here and saved (``torch.save(state_dict)``) in place of the
  downloaded one, loaded as written, then ``data.requires_grad = True``, ``data.grad.data``,
  ``fgsm_attack`` (``sign()``, ``torch.clamp``) and the accuracy under each epsilon;
- knowledge_distillation_tutorial: teacher and student CNNs on small 3-channel images (4x4
  digits, so the Linear layers' input sizes change), the test loader's
  ``DataLoader(num_workers=2)`` (the train loader's in the process, for the test's time), the
  soft-target KL loss with temperature, ``CosineEmbeddingLoss`` on hidden representations
  (``F.avg_pool1d`` of a 2-d tensor), the regressor with ``MSELoss``, ``load_state_dict`` of
  the teacher into its modified classes. (The tutorial registers no hooks.)

Each changed line ends in ``# port:`` and says why. Each script runs under torch (skipped without
it), then under tricycle; both print the same lines (numbers and reprs aside) and learn (the
losses fall), and the tutorials' own comparisons hold (the students' first-layer norms equal,
the accuracy falling as epsilon grows). The losses the distillation builds and the FGSM step
are then compared with torch's on the same numbers, forward and backward.
"""

# ruff: noqa: E501, W291, W293, E741

import functools
import gzip
import pickle
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import lines, numbers

NN_TUTORIAL = r"""
from pathlib import Path
import requests

DATA_PATH = Path("data")
PATH = DATA_PATH / "mnist"

PATH.mkdir(parents=True, exist_ok=True)

URL = "https://deeplearning.net/data/mnist/"
FILENAME = "mnist.pkl.gz"

if not (PATH / FILENAME).exists():
        content = requests.get(URL + FILENAME).content
        (PATH / FILENAME).open("wb").write(content)

import pickle
import gzip

with gzip.open(PATH / FILENAME, "rb") as f:
        ((x_train, y_train), (x_valid, y_valid), _) = pickle.load(f, encoding="latin-1")

# from matplotlib import pyplot  # port: plotting dropped
import numpy as np

# pyplot.imshow(x_train[0].reshape((28, 28)), cmap="gray")  # port: plotting dropped
print(x_train.shape)

import torch

x_train, y_train, x_valid, y_valid = map(
    torch.tensor, (x_train, y_train, x_valid, y_valid)
)
n, c = x_train.shape
x_train, x_train.shape, y_train.min(), y_train.max()
print(x_train, y_train)
print(x_train.shape)
print(y_train.min(), y_train.max())

import math

weights = torch.randn(784, 10) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)

def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)

def model(xb):
    return log_softmax(xb @ weights + bias)

bs = 64  # batch size

xb = x_train[0:bs]  # a mini-batch from x
preds = model(xb)  # predictions
preds[0], preds.shape
print(preds[0], preds.shape)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()

loss_func = nll

yb = y_train[0:bs]
print(loss_func(preds, yb))


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()

print(accuracy(preds, yb))

# from IPython.core.debugger import set_trace  # port: IPython is not installed (set_trace stays commented out below)

lr = 0.5  # learning rate
epochs = 6  # how many epochs to train for  # port: 6 for 2: a few hundred digits, not MNIST's 50,000

for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        #         set_trace()
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()

print(loss_func(model(xb), yb), accuracy(model(xb), yb))

import torch.nn.functional as F

loss_func = F.cross_entropy

def model(xb):
    return xb @ weights + bias

print(loss_func(model(xb), yb), accuracy(model(xb), yb))

from torch import nn

class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias

model = Mnist_Logistic()

print(loss_func(model(xb), yb))

def fit():
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            end_i = start_i + bs
            xb = x_train[start_i:end_i]
            yb = y_train[start_i:end_i]
            pred = model(xb)
            loss = loss_func(pred, yb)

            loss.backward()
            with torch.no_grad():
                for p in model.parameters():
                    p -= p.grad * lr
                model.zero_grad()

fit()

print(loss_func(model(xb), yb))

class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)

model = Mnist_Logistic()
print(loss_func(model(xb), yb))

fit()

print(loss_func(model(xb), yb))

from torch import optim

def get_model():
    model = Mnist_Logistic()
    return model, optim.SGD(model.parameters(), lr=lr)

model, opt = get_model()
print(loss_func(model(xb), yb))

for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()

print(loss_func(model(xb), yb))

from torch.utils.data import TensorDataset

train_ds = TensorDataset(x_train, y_train)

model, opt = get_model()

for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        xb, yb = train_ds[i * bs: i * bs + bs]
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()

print(loss_func(model(xb), yb))

from torch.utils.data import DataLoader

train_ds = TensorDataset(x_train, y_train)
train_dl = DataLoader(train_ds, batch_size=bs)

model, opt = get_model()

for epoch in range(epochs):
    for xb, yb in train_dl:
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()

print(loss_func(model(xb), yb))

train_ds = TensorDataset(x_train, y_train)
train_dl = DataLoader(train_ds, batch_size=bs, shuffle=True)

valid_ds = TensorDataset(x_valid, y_valid)
valid_dl = DataLoader(valid_ds, batch_size=bs * 2)

model, opt = get_model()

for epoch in range(epochs):
    model.train()
    for xb, yb in train_dl:
        pred = model(xb)
        loss = loss_func(pred, yb)

        loss.backward()
        opt.step()
        opt.zero_grad()

    model.eval()
    with torch.no_grad():
        valid_loss = sum(loss_func(model(xb), yb) for xb, yb in valid_dl)

    print(epoch, valid_loss / len(valid_dl))


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)

    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()

    return loss.item(), len(xb)

import numpy as np

def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)

        model.eval()
        with torch.no_grad():
            losses, nums = zip(
                *[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl]
            )
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)

        print(epoch, val_loss)


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True),
        DataLoader(valid_ds, batch_size=bs * 2),
    )

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl)

class Mnist_CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1)

    def forward(self, xb):
        xb = xb.view(-1, 1, 28, 28)
        xb = F.relu(self.conv1(xb))
        xb = F.relu(self.conv2(xb))
        xb = F.relu(self.conv3(xb))
        xb = F.avg_pool2d(xb, 4)
        return xb.view(-1, xb.size(1))

lr = 0.1

model = Mnist_CNN()
opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x):
    return x.view(-1, 1, 28, 28)

model = nn.Sequential(
    Lambda(preprocess),
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AvgPool2d(4),
    Lambda(lambda x: x.view(x.size(0), -1)),
)

opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

def preprocess(x, y):
    return x.view(-1, 1, 28, 28), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        batches = iter(self.dl)
        for b in batches:
            yield (self.func(*b))

train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)

model = nn.Sequential(
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)

opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

fit(epochs, model, loss_func, opt, train_dl, valid_dl)

print(torch.cuda.is_available())

dev = torch.device(
    "cuda") if torch.cuda.is_available() else torch.device("cpu")


def preprocess(x, y):
    return x.view(-1, 1, 28, 28).to(dev), y.to(dev)


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)

model.to(dev)
opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)

fit(epochs, model, loss_func, opt, train_dl, valid_dl)
"""

FGSM = r"""
from __future__ import print_function
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
# from torchvision import datasets, transforms  # port: the digits are built in the test (no download)
import numpy as np
# import matplotlib.pyplot as plt  # port: plotting dropped

epsilons = [0, .05, .1, .15, .2, .25, .3]
pretrained_model = "data/lenet_mnist_model.pth"
use_cuda=True

# LeNet Model definition
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)

digits = np.load("digits.npz")  # port: the test's digits (1, 28, 28) in [0, 1], for MNIST
torch.manual_seed(1)  # port: the pretrained model is trained here, as pytorch/examples/mnist trains it
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(digits["x_train"]), torch.tensor(digits["y_train"])), batch_size=32, shuffle=True)  # port: as above
trained = Net()  # port: as above
trainer = optim.Adadelta(trained.parameters(), lr=1.0)  # port: as above
for epoch in range(4):  # port: as above
    running = 0.0  # port: as above
    for batch_idx, (data, target) in enumerate(train_loader):  # port: as above
        trainer.zero_grad()  # port: as above
        loss = F.nll_loss(trained(data), target)  # port: as above
        loss.backward()  # port: as above
        trainer.step()  # port: as above
        running += loss.item()  # port: as above
    print("Train Epoch: {} Loss: {:.6f}".format(epoch, running / len(train_loader)))  # port: as above
torch.save(trained.state_dict(), pretrained_model)  # port: as above

# MNIST Test dataset and dataloader declaration
test_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.tensor(digits["x_test"]), torch.tensor(digits["y_test"])),  # port: the test's digits for datasets.MNIST
        batch_size=1, shuffle=True)

# Define what device we are using
print("CUDA Available: ",torch.cuda.is_available())
device = torch.device("cuda" if (use_cuda and torch.cuda.is_available()) else "cpu")

# Initialize the network
model = Net().to(device)

# Load the pretrained model
model.load_state_dict(torch.load(pretrained_model, map_location='cpu'))

# Set the model in evaluation mode. In this case this is for the Dropout layers
model.eval()

# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon*sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    # Return the perturbed image
    return perturbed_image

def test( model, device, test_loader, epsilon ):

    # Accuracy counter
    correct = 0
    adv_examples = []

    # Loop over all examples in test set
    for data, target in test_loader:

        # Send the data and label to the device
        data, target = data.to(device), target.to(device)

        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True

        # Forward pass the data through the model
        output = model(data)
        init_pred = output.max(dim=1, keepdim=True)[1] # get the index of the max log-probability  # port: dim= (a positional max(1) keeps numpy's meaning)

        # If the initial prediction is wrong, dont bother attacking, just move on
        if init_pred.item() != target.item():
            continue

        # Calculate the loss
        loss = F.nll_loss(output, target)

        # Zero all existing gradients
        model.zero_grad()

        # Calculate gradients of model in backward pass
        loss.backward()

        # Collect datagrad
        data_grad = data.grad.data

        # Call FGSM Attack
        perturbed_data = fgsm_attack(data, epsilon, data_grad)

        # Re-classify the perturbed image
        output = model(perturbed_data)

        # Check for success
        final_pred = output.max(dim=1, keepdim=True)[1] # get the index of the max log-probability  # port: as above
        if final_pred.item() == target.item():
            correct += 1
            # Special case for saving 0 epsilon examples
            if (epsilon == 0) and (len(adv_examples) < 5):
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append( (init_pred.item(), final_pred.item(), adv_ex) )
        else:
            # Save some adv examples for visualization later
            if len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append( (init_pred.item(), final_pred.item(), adv_ex) )

    # Calculate final accuracy for this epsilon
    final_acc = correct/float(len(test_loader))
    print("Epsilon: {}\tTest Accuracy = {} / {} = {}".format(epsilon, correct, len(test_loader), final_acc))

    # Return the accuracy and an adversarial example
    return final_acc, adv_examples

accuracies = []
examples = []

# Run test for each epsilon
for eps in epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    examples.append(ex)
"""

DISTILLATION = r"""
import torch
import torch.nn as nn
import torch.optim as optim
# import torchvision.transforms as transforms  # port: the images are built in the test (no download)
# import torchvision.datasets as datasets  # port: as above
import numpy as np  # port: to read the test's images

# Ignore warnings
import warnings
warnings.filterwarnings("ignore")

# Check if GPU is available, and if not, use the CPU
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

# transforms_cifar = transforms.Compose([  # port: the test's images are normalised already
#     transforms.ToTensor(),  # port: as above
#     transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),  # port: as above
# ])  # port: as above

images = np.load("images.npz")  # port: small synthetic 3x4x4 images of 10 classes in place of CIFAR-10
train_dataset = torch.utils.data.TensorDataset(torch.tensor(images["x_train"]), torch.tensor(images["y_train"]))  # port: as above
test_dataset = torch.utils.data.TensorDataset(torch.tensor(images["x_test"]), torch.tensor(images["y_test"]))  # port: as above

#Dataloaders
train_loader = torch.utils.data.DataLoader(train_dataset, batch_size=128, shuffle=True, num_workers=0)  # port: num_workers=2: 20 epochs of worker processes, started afresh each epoch, for a few arrays (the test_loader keeps its two)
test_loader = torch.utils.data.DataLoader(test_dataset, batch_size=128, shuffle=False, num_workers=2)

# Deeper neural network class to be used as teacher
class DeepNN(nn.Module):
    def __init__(self, num_classes=10):
        super(DeepNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 128, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(128, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(64, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(32, 512),  # port: 4x4 images give 32*1*1 features (CIFAR-10's 32x32 give 2048)
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(512, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x

# Lightweight neural network class to be used as student
class LightNN(nn.Module):
    def __init__(self, num_classes=10):
        super(LightNN, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16, 256),  # port: 4x4 images give 16*1*1 features (CIFAR-10's give 1024)
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(256, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x

def train(model, train_loader, epochs, learning_rate, device):
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)

    model.train()

    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            # inputs: A collection of batch_size images
            # labels: A vector of dimensionality batch_size with integers denoting class of each image
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()
            outputs = model(inputs)

            # outputs: Output of the network for the collection of images. A vector of dimensionality batch_size
            # labels: The actual labels of the images. Vector of dimensionality batch_size
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()

            running_loss += loss.item()

        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

def test(model, test_loader, device):
    model.to(device)
    model.eval()

    correct = 0
    total = 0

    with torch.no_grad():
        for inputs, labels in test_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            outputs = model(inputs)
            _, predicted = torch.max(outputs.data, 1)

            total += labels.size(0)
            correct += (predicted == labels).sum().item()

    accuracy = 100 * correct / total
    print(f"Test Accuracy: {accuracy:.2f}%")
    return accuracy

torch.manual_seed(42)
nn_deep = DeepNN(num_classes=10).to(device)
train(nn_deep, train_loader, epochs=4, learning_rate=0.001, device=device)  # port: 4 for 10 (the test's few hundred images)
test_accuracy_deep = test(nn_deep, test_loader, device)

# Instantiate the lightweight network
torch.manual_seed(42)
nn_light = LightNN(num_classes=10).to(device)

torch.manual_seed(42)
new_nn_light = LightNN(num_classes=10).to(device)

# Print the norm of the first layer of the initial lightweight model
print("Norm of 1st layer of nn_light:", torch.norm(getattr(nn_light.features[0], 'weights', getattr(nn_light.features[0], 'weight', None))).item())  # port: tricycle's tensor is named weights
# Print the norm of the first layer of the new lightweight model
print("Norm of 1st layer of new_nn_light:", torch.norm(getattr(new_nn_light.features[0], 'weights', getattr(new_nn_light.features[0], 'weight', None))).item())  # port: as above

total_params_deep = "{:,}".format(sum(p.numel() for p in nn_deep.parameters()))
print(f"DeepNN parameters: {total_params_deep}")
total_params_light = "{:,}".format(sum(p.numel() for p in nn_light.parameters()))
print(f"LightNN parameters: {total_params_light}")

train(nn_light, train_loader, epochs=4, learning_rate=0.001, device=device)  # port: as above
test_accuracy_light_ce = test(nn_light, test_loader, device)

print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
print(f"Student accuracy: {test_accuracy_light_ce:.2f}%")

def train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T, soft_target_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.eval()  # Teacher set to evaluation mode
    student.train() # Student to train mode

    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Forward pass with the teacher model - do not save gradients here as we do not change the teacher's weights
            with torch.no_grad():
                teacher_logits = teacher(inputs)

            # Forward pass with the student model
            student_logits = student(inputs)

            #Soften the student logits by applying softmax first and log() second
            soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
            soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)

            # Calculate the soft targets loss. Scaled by T**2 as suggested by the authors of the paper "Distilling the knowledge in a neural network"
            soft_targets_loss = torch.sum(soft_targets * (soft_targets.log() - soft_prob)) / soft_prob.size()[0] * (T**2)

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()

        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

train_knowledge_distillation(teacher=nn_deep, student=new_nn_light, train_loader=train_loader, epochs=4, learning_rate=0.001, T=2, soft_target_loss_weight=0.25, ce_loss_weight=0.75, device=device)  # port: as above
test_accuracy_light_ce_and_kd = test(new_nn_light, test_loader, device)

# Compare the student test accuracy with and without the teacher, after distillation
print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
print(f"Student accuracy without teacher: {test_accuracy_light_ce:.2f}%")
print(f"Student accuracy with CE + KD: {test_accuracy_light_ce_and_kd:.2f}%")

class ModifiedDeepNNCosine(nn.Module):
    def __init__(self, num_classes=10):
        super(ModifiedDeepNNCosine, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 128, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(128, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(64, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(32, 512),  # port: as DeepNN's
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(512, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        flattened_conv_output_after_pooling = torch.nn.functional.avg_pool1d(flattened_conv_output, 2)
        return x, flattened_conv_output_after_pooling

# Create a similar student class where we return a tuple. We do not apply pooling after flattening.
class ModifiedLightNNCosine(nn.Module):
    def __init__(self, num_classes=10):
        super(ModifiedLightNNCosine, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(16, 256),  # port: as LightNN's
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(256, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        flattened_conv_output = torch.flatten(x, 1)
        x = self.classifier(flattened_conv_output)
        return x, flattened_conv_output

# We do not have to train the modified deep network from scratch of course, we just load its weights from the trained instance
modified_nn_deep = ModifiedDeepNNCosine(num_classes=10).to(device)
modified_nn_deep.load_state_dict(nn_deep.state_dict())

# Once again ensure the norm of the first layer is the same for both networks
print("Norm of 1st layer for deep_nn:", torch.norm(getattr(nn_deep.features[0], 'weights', getattr(nn_deep.features[0], 'weight', None))).item())  # port: tricycle's tensor is named weights
print("Norm of 1st layer for modified_deep_nn:", torch.norm(getattr(modified_nn_deep.features[0], 'weights', getattr(modified_nn_deep.features[0], 'weight', None))).item())  # port: as above

# Initialize a modified lightweight network with the same seed as our other lightweight instances. This will be trained from scratch to examine the effectiveness of cosine loss minimization.
torch.manual_seed(42)
modified_nn_light = ModifiedLightNNCosine(num_classes=10).to(device)
print("Norm of 1st layer:", torch.norm(getattr(modified_nn_light.features[0], 'weights', getattr(modified_nn_light.features[0], 'weight', None))).item())  # port: as above

# Create a sample input tensor
sample_input = torch.randn(128, 3, 4, 4).to(device) # Batch size: 128, Filters: 3, Image size: 32x32  # port: 4x4 images

# Pass the input through the student
logits, hidden_representation = modified_nn_light(sample_input)

# Print the shapes of the tensors
print("Student logits shape:", logits.shape) # batch_size x total_classes
print("Student hidden representation shape:", hidden_representation.shape) # batch_size x hidden_representation_size

# Pass the input through the teacher
logits, hidden_representation = modified_nn_deep(sample_input)

# Print the shapes of the tensors
print("Teacher logits shape:", logits.shape) # batch_size x total_classes
print("Teacher hidden representation shape:", hidden_representation.shape) # batch_size x hidden_representation_size

def train_cosine_loss(teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    cosine_loss = nn.CosineEmbeddingLoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.to(device)
    student.to(device)
    teacher.eval()  # Teacher set to evaluation mode
    student.train() # Student to train mode

    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Forward pass with the teacher model and keep only the hidden representation
            with torch.no_grad():
                _, teacher_hidden_representation = teacher(inputs)

            # Forward pass with the student model
            student_logits, student_hidden_representation = student(inputs)

            # Calculate the cosine loss. Target is a vector of ones. From the loss formula above we can see that is the case where loss minimization leads to cosine similarity increase.
            hidden_rep_loss = cosine_loss(student_hidden_representation, teacher_hidden_representation, target=torch.ones(inputs.size(0)).to(device))

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()

        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

def test_multiple_outputs(model, test_loader, device):
    model.to(device)
    model.eval()

    correct = 0
    total = 0

    with torch.no_grad():
        for inputs, labels in test_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            outputs, _ = model(inputs) # Disregard the second tensor of the tuple
            _, predicted = torch.max(outputs.data, 1)

            total += labels.size(0)
            correct += (predicted == labels).sum().item()

    accuracy = 100 * correct / total
    print(f"Test Accuracy: {accuracy:.2f}%")
    return accuracy

# Train and test the lightweight network with cross entropy loss
train_cosine_loss(teacher=modified_nn_deep, student=modified_nn_light, train_loader=train_loader, epochs=4, learning_rate=0.001, hidden_rep_loss_weight=0.25, ce_loss_weight=0.75, device=device)  # port: 4 for 10
test_accuracy_light_ce_and_cosine_loss = test_multiple_outputs(modified_nn_light, test_loader, device)

# Pass the sample input only from the convolutional feature extractor
convolutional_fe_output_student = nn_light.features(sample_input)
convolutional_fe_output_teacher = nn_deep.features(sample_input)

# Print their shapes
print("Student's feature extractor output shape: ", convolutional_fe_output_student.shape)
print("Teacher's feature extractor output shape: ", convolutional_fe_output_teacher.shape)

class ModifiedDeepNNRegressor(nn.Module):
    def __init__(self, num_classes=10):
        super(ModifiedDeepNNRegressor, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 128, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(128, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(64, 64, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 32, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(32, 512),  # port: as DeepNN's
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(512, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        conv_feature_map = x
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, conv_feature_map

class ModifiedLightNNRegressor(nn.Module):
    def __init__(self, num_classes=10):
        super(ModifiedLightNNRegressor, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(16, 16, kernel_size=3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        # Include an extra regressor (in our case linear)
        self.regressor = nn.Sequential(
            nn.Conv2d(16, 32, kernel_size=3, padding=1)
        )
        self.classifier = nn.Sequential(
            nn.Linear(16, 256),  # port: as LightNN's
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(256, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        regressor_output = self.regressor(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, regressor_output

def train_mse_loss(teacher, student, train_loader, epochs, learning_rate, feature_map_weight, ce_loss_weight, device):
    ce_loss = nn.CrossEntropyLoss()
    mse_loss = nn.MSELoss()
    optimizer = optim.Adam(student.parameters(), lr=learning_rate)

    teacher.to(device)
    student.to(device)
    teacher.eval()  # Teacher set to evaluation mode
    student.train() # Student to train mode

    for epoch in range(epochs):
        running_loss = 0.0
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)

            optimizer.zero_grad()

            # Again ignore teacher logits
            with torch.no_grad():
                _, teacher_feature_map = teacher(inputs)

            # Forward pass with the student model
            student_logits, regressor_feature_map = student(inputs)

            # Calculate the loss
            hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)

            # Calculate the true label loss
            label_loss = ce_loss(student_logits, labels)

            # Weighted sum of the two losses
            loss = feature_map_weight * hidden_rep_loss + ce_loss_weight * label_loss

            loss.backward()
            optimizer.step()

            running_loss += loss.item()

        print(f"Epoch {epoch+1}/{epochs}, Loss: {running_loss / len(train_loader)}")

# Initialize a ModifiedLightNNRegressor
torch.manual_seed(42)
modified_nn_light_reg = ModifiedLightNNRegressor(num_classes=10).to(device)

# We do not have to train the modified deep network from scratch of course, we just load its weights from the trained instance
modified_nn_deep_reg = ModifiedDeepNNRegressor(num_classes=10).to(device)
modified_nn_deep_reg.load_state_dict(nn_deep.state_dict())

# Train and test once again
train_mse_loss(teacher=modified_nn_deep_reg, student=modified_nn_light_reg, train_loader=train_loader, epochs=4, learning_rate=0.001, feature_map_weight=0.25, ce_loss_weight=0.75, device=device)  # port: 4 for 10
test_accuracy_light_ce_and_mse_loss = test_multiple_outputs(modified_nn_light_reg, test_loader, device)

print(f"Teacher accuracy: {test_accuracy_deep:.2f}%")
print(f"Student accuracy without teacher: {test_accuracy_light_ce:.2f}%")
print(f"Student accuracy with CE + KD: {test_accuracy_light_ce_and_kd:.2f}%")
print(f"Student accuracy with CE + CosineLoss: {test_accuracy_light_ce_and_cosine_loss:.2f}%")
print(f"Student accuracy with CE + RegressorMSE: {test_accuracy_light_ce_and_mse_loss:.2f}%")
"""


def digits28(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """sklearn's 8x8 digits (shipped with it: no download) as MNIST's 28x28 in [0, 1]."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    d = load_digits()
    big = np.pad(np.kron(d.images / 16.0, np.ones((3, 3))), ((0, 0), (2, 2), (2, 2)))  # (N, 28, 28)
    order = np.random.default_rng(seed).permutation(len(big))
    return big[order].astype(np.float32), d.target[order].astype(np.int64)


def mnist_pickle(path, n_train: int = 800, n_valid: int = 320) -> None:
    """``mnist.pkl.gz`` as deeplearning.net's: ((x_train, y_train), (x_valid, y_valid), test),
    the images flattened to rows of 784."""
    x, y = digits28()
    x = x.reshape(len(x), 784)
    end = n_train + n_valid
    parts = ((x[:n_train], y[:n_train]), (x[n_train:end], y[n_train:end]), (x[end:], y[end:]))
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb", compresslevel=1) as f:
        pickle.dump(parts, f)


def digits_npz(path, n_train: int = 800, n_test: int = 60) -> None:
    x, y = digits28()
    x = x[:, None]  # (N, 1, 28, 28)
    with open(path, "wb") as f:  # (np.savez would add ".npz" to the name)
        np.savez(
            f, x_train=x[:n_train], y_train=y[:n_train], x_test=x[-n_test:], y_test=y[-n_test:]
        )


def images_npz(path, n_train: int = 640, n_test: int = 256) -> None:
    """CIFAR-10's stand-in: the digits averaged to 4x4, in 3 channels of random strengths,
    normalised by the tutorial's mean and std."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    d = load_digits()
    x = (d.images / 16.0).astype(np.float32).reshape(-1, 4, 2, 4, 2).mean((2, 4))  # (N, 4, 4)
    rng = np.random.default_rng(1)
    x = x[:, None] * rng.uniform(0.5, 1.0, size=(len(x), 3, 1, 1)).astype(np.float32)
    mean = np.array([0.485, 0.456, 0.406], np.float32)[:, None, None]
    std = np.array([0.229, 0.224, 0.225], np.float32)[:, None, None]
    x = (x - mean) / std
    y = d.target.astype(np.int64)
    with open(path, "wb") as f:  # (np.savez would add ".npz" to the name)
        np.savez(
            f, x_train=x[:n_train], y_train=y[:n_train], x_test=x[-n_test:], y_test=y[-n_test:]
        )


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` run as ``__main__`` in ``folder`` beside its data: what it printed and its
    globals."""
    folder.mkdir()
    for name in DATA_FILES:  # each made once a session
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data_file(name))
    return run_main(script, folder, monkeypatch, "tutorial.py")


DATA_FILES = {"data/mnist/mnist.pkl.gz": mnist_pickle, "digits.npz": digits_npz,
              "images.npz": images_npz}  # fmt: skip


@functools.cache
def data_file(name: str) -> bytes:
    """The bytes of the data file ``name`` (a key of ``DATA_FILES``), made once."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "file"
        DATA_FILES[name](path)
        return path.read_bytes()


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch (one thread: a shared machine), then with ``torch`` replaced by
    ``tricycle`` in the text; each library seeded first (the nn tutorial draws its weights
    unseeded: a run that repeats)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    with one_thread(torch):
        torch.manual_seed(0)
        theirs = run(script, tmp_path / "torch", monkeypatch)
    with one_thread(torch):
        tricycle.manual_seed(0)
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def kinds(printed: str) -> list[str]:
    """``lines`` of the printed text with a tensor's repr (one line or several) as "TENSOR" and
    torch's ``torch.Size([...])`` as the tuple that tricycle's shapes are (documented)."""
    text = re.sub(r"torch\.Size\(\[(.*?)\]\)", lambda m: str(tuple(eval(f"[{m[1]}]"))), printed)
    text = re.sub(r"[tT]ensor\((\[.*?\]|[^()\[]*)(, [^()]*)?\)", "TENSOR", text, flags=re.DOTALL)
    return lines(text)


def fell(losses: list[float], by: float = 0.9) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def test_nn_tutorial(tmp_path, monkeypatch):
    (theirs, _), (ours, space) = both(NN_TUTORIAL, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        # each fit's validation losses, 6 epochs each: the linear models learn at once, the
        # CNN trained twice (the same model, moved to the device) ends well below a guess's 2.3
        fits = numbers(r"(?m)^\d+ ([\d.]+)$", printed)
        assert len(fits) == 6 * 5, fits
        assert fits[5] < 0.4, fits  # logistic regression, after fit
        assert fits[-1] < 0.8 * fits[18] and fits[-1] < 1.8, fits  # one CNN, fitted twice
    # the hand-written loop: the loss at the end is far below the one it started from
    start, end = (numbers(r"Tensor\(([\d.]+), name=neg\)", ours)[i] for i in (0, 1))
    assert end < 0.2 * start
    assert len(space["valid_dl"]) == 3 and space["n"] == 800


def test_fgsm_tutorial(tmp_path, monkeypatch):
    (theirs, _), (ours, space) = both(FGSM, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        fell(numbers(r"Train Epoch: \d+ Loss: ([\d.]+)", printed), 0.7)
        accuracy = numbers(r"Test Accuracy = \d+ / \d+ = ([\d.]+)", printed)
        assert len(accuracy) == 7 and accuracy[0] >= 0.8, accuracy
        assert accuracy[-1] < 0.5 * accuracy[0] and accuracy == sorted(accuracy, reverse=True), (
            accuracy
        )
    assert len(space["examples"][0]) == 5 and space["examples"][-1][0][2].shape == (28, 28)
    # the attack itself, on the same numbers in both libraries
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    image = rng.uniform(0, 1, (2, 1, 28, 28)).astype(np.float32)
    grad = rng.normal(size=image.shape).astype(np.float32)
    torch_space = {}
    exec(
        FGSM.split("def fgsm_attack")[0].split("# LeNet")[0]
        + "def fgsm_attack"
        + FGSM.split("def fgsm_attack")[1].split("def test(")[0],
        torch_space,
    )
    expected = torch_space["fgsm_attack"](torch.tensor(image), 0.1, torch.tensor(grad)).numpy()
    got = space["fgsm_attack"](tricycle.tensor(image), 0.1, tricycle.tensor(grad))
    np.testing.assert_allclose(np.asarray(got.array), expected, rtol=0, atol=1e-7)


def test_knowledge_distillation_tutorial(tmp_path, monkeypatch):
    (theirs, _), (ours, space) = both(DISTILLATION, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        epochs = numbers(r"Epoch \d+/4, Loss: ([\d.]+)", printed)
        assert len(epochs) == 5 * 4
        for run_ in range(5):  # teacher, student, KD, cosine, regressor: each learns
            fell(epochs[4 * run_ : 4 * run_ + 4], 0.97)
        norms = numbers(r"Norm of 1st layer[^:]*: ([\d.]+)", printed)
        assert norms[0] == norms[1] == norms[4] and norms[2] == norms[3]  # the same initial weights
        teacher = numbers(r"Teacher accuracy: ([\d.]+)%", printed)[0]
        assert teacher > 40, teacher  # a tenth is chance
    assert "Teacher hidden representation shape: (128, 16)" in ours


def test_distillation_losses_and_fgsm_step_as_torchs():
    """The soft-target KL loss with temperature, CosineEmbeddingLoss against a target of ones
    on ``F.avg_pool1d`` of a 2-d tensor, MSELoss and the FGSM input gradient's sign: forward and
    gradients as torch's, on the same numbers."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    teacher = rng.normal(size=(6, 10)).astype(np.float32)
    student = rng.normal(size=(6, 10)).astype(np.float32)
    hidden_s = rng.normal(size=(6, 8)).astype(np.float32)
    hidden_t = rng.normal(size=(6, 16)).astype(np.float32)
    labels = rng.integers(0, 10, 6)

    def losses(lib, T=2):
        nn = lib.nn
        s = lib.tensor(student, requires_grad=True)
        h = lib.tensor(hidden_s, requires_grad=True)
        t = lib.tensor(teacher)
        soft_targets = nn.functional.softmax(t / T, dim=-1)
        soft_prob = nn.functional.log_softmax(s / T, dim=-1)
        kd = lib.sum(soft_targets * (soft_targets.log() - soft_prob)) / soft_prob.size()[0] * (T**2)
        pooled = nn.functional.avg_pool1d(lib.tensor(hidden_t), 2)  # (6, 8)
        cosine = nn.CosineEmbeddingLoss()(h, pooled, target=lib.ones(h.size(0)))
        mse = nn.MSELoss()(h, pooled)
        label = nn.CrossEntropyLoss()(s, lib.tensor(labels))
        loss = 0.25 * kd + 0.75 * label + cosine + mse
        loss.backward()
        return [float(v.item()) for v in (kd, cosine, mse, loss)], [
            np.asarray(x.grad.numpy() if lib is torch else x.grad.array) for x in (s, h)
        ]

    (want, want_grads), (got, got_grads) = losses(torch), losses(tricycle)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
