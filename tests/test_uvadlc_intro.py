"""Phillip Lippe's UvA Deep Learning tutorials (phlippe/uvadlc_notebooks) 2, "Introduction to
PyTorch", and 3, "Activation Functions", run cell by cell on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of tests/test_zero_to_hero.py).

- tutorial 2: tensors (``torch.Tensor(list)``, ``from_numpy``/``numpy``, ``add_``, ``view``,
  ``permute``, ``matmul``, slicing), autograd (``requires_grad_``, ``backward`` of a mean), the
  device cells, ``SimpleClassifier``, the ``XORDataset(data.Dataset)``, ``DataLoader``,
  ``BCEWithLogitsLoss`` and SGD in ``train_model``, ``state_dict`` saved with ``torch.save`` and
  loaded into a new model, ``eval_model`` under ``no_grad`` and the decorated
  ``visualize_classification`` (``arange(step=, device=)``, ``meshgrid(indexing='ij')``,
  ``stack``, ``c0[None,None]``; matplotlib on its Agg backend);
- tutorial 3: the hand-written activation modules and their gradients (``get_grads``:
  ``clone().requires_grad_()``, ``sum().backward()``), ``BaseNetwork`` over ``nn.Sequential``
  holding one activation module many times, the gradient magnitudes of a batch, the
  checkpointed ``train_model`` (SGD with momentum, early stopping, ``save_model``/``load_model``
  by config and ``torch.load(map_location=)``), ``random_split``, the activations layer by layer
  and ``measure_number_dead_neurons`` (``logical_and``, ``(x == 0).all(dim=0)``).

Each changed line ends in ``# port:`` and says why: plotting (seaborn is not installed, the
histograms' spreads printed instead), the notebook's magics and downloads, sizes and epochs shrunk,
``torch.Tensor(2, 3, 4)`` written ``empty`` and a Linear's ``weight.shape[0]`` its
``out_features`` (both documented), FashionMNIST replaced by 28x28 digits made in the test. Each
notebook runs under torch (skipped without it), then under tricycle; both print the same lines
(numbers, reprs and the documented names aside) and learn, and the tutorials' deterministic values
(tensors, ``x.grad``, the activations and their gradients) are torch's. From torch's weights
(``nn.from_torch``) the tutorials' own models give torch's predictions, gradient magnitudes and
dead-neuron counts.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import lines, numbers

INTRO = r'''
## Standard libraries
import os
import math
import numpy as np
import time

## Imports for plotting
import matplotlib.pyplot as plt
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: IPython is not installed
from matplotlib.colors import to_rgba
# import seaborn as sns  # port: seaborn is not installed
# sns.set()  # port: seaborn is not installed

## Progress bar
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

import torch
print("Using torch", torch.__version__)

torch.manual_seed(42) # Setting the seed

x = torch.empty(2, 3, 4)  # port: torch.Tensor(2, 3, 4): Tensor(*sizes) is empty(*sizes) (documented)
print(x)

# Create a tensor from a (nested) list
x = torch.Tensor([[1, 2], [3, 4]])
print(x)

# Create a tensor with random values between 0 and 1 with the shape [2, 3, 4]
x = torch.rand(2, 3, 4)
print(x)

shape = x.shape
print("Shape:", x.shape)

size = x.size()
print("Size:", size)

dim1, dim2, dim3 = x.size()
print("Size:", dim1, dim2, dim3)

np_arr = np.array([[1, 2], [3, 4]])
tensor = torch.from_numpy(np_arr)

print("Numpy array:", np_arr)
print("PyTorch tensor:", tensor)

tensor = torch.arange(4)
np_arr = tensor.numpy()

print("PyTorch tensor:", tensor)
print("Numpy array:", np_arr)

x1 = torch.rand(2, 3)
x2 = torch.rand(2, 3)
y = x1 + x2

print("X1", x1)
print("X2", x2)
print("Y", y)

x1 = torch.rand(2, 3)
x2 = torch.rand(2, 3)
print("X1 (before)", x1)
print("X2 (before)", x2)

x2.add_(x1)
print("X1 (after)", x1)
print("X2 (after)", x2)

x = torch.arange(6)
print("X", x)

x = x.view(2, 3)
print("X", x)

x = x.permute(1, 0) # Swapping dimension 0 and 1
print("X", x)

x = torch.arange(6)
x = x.view(2, 3)
print("X", x)

W = torch.arange(9).view(3, 3) # We can also stack multiple operations in a single line
print("W", W)

h = torch.matmul(x, W) # Verify the result by calculating it by hand too!
print("h", h)

x = torch.arange(12).view(3, 4)
print("X", x)

print(x[:, 1])   # Second column

print(x[0])      # First row

print(x[:2, -1]) # First two rows, last column

print(x[1:3, :]) # Middle two rows

x = torch.ones((3,))
print(x.requires_grad)

x.requires_grad_(True)
print(x.requires_grad)

x = torch.arange(3, dtype=torch.float32, requires_grad=True) # Only float tensors can have gradients
print("X", x)

a = x + 2
b = a ** 2
c = b + 3
y = c.mean()
print("Y", y)

y.backward()

print(x.grad)

gpu_avail = torch.cuda.is_available()
print(f"Is the GPU available? {gpu_avail}")

device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
print("Device", device)

x = torch.zeros(2, 3)
x = x.to(device)
print("X", x)

x = torch.randn(500, 500)  # port: 500 for 5000 (a shared CPU)

## CPU version
start_time = time.time()
_ = torch.matmul(x, x)
end_time = time.time()
print(f"CPU time: {(end_time - start_time):6.5f}s")

## GPU version
x = x.to(device)
_ = torch.matmul(x, x)  # First operation to 'burn in' GPU
if torch.cuda.is_available():  # port: the GPU's timing needs a GPU (none here)
    # CUDA is asynchronous, so we need to use different timing functions
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    _ = torch.matmul(x, x)
    end.record()
    torch.cuda.synchronize()  # Waits for everything to finish running on the GPU
    print(f"GPU time: {0.001 * start.elapsed_time(end):6.5f}s")  # Milliseconds to seconds

# GPU operations have a separate seed we also want to set
if torch.cuda.is_available():
    torch.cuda.manual_seed(42)
    torch.cuda.manual_seed_all(42)

# Additionally, some operations on a GPU are implemented stochastic for efficiency
# We want to ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

import torch.nn as nn

import torch.nn.functional as F

class MyModule(nn.Module):

    def __init__(self):
        super().__init__()
        # Some init for my module

    def forward(self, x):
        # Function for performing the calculation of the module.
        pass

class SimpleClassifier(nn.Module):

    def __init__(self, num_inputs, num_hidden, num_outputs):
        super().__init__()
        # Initialize the modules we need to build the network
        self.linear1 = nn.Linear(num_inputs, num_hidden)
        self.act_fn = nn.Tanh()
        self.linear2 = nn.Linear(num_hidden, num_outputs)

    def forward(self, x):
        # Perform the calculation of the model to determine the prediction
        x = self.linear1(x)
        x = self.act_fn(x)
        x = self.linear2(x)
        return x

model = SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)
# Printing a module shows all its submodules
print(model)

for name, param in model.named_parameters():
    print(f"Parameter {name}, shape {param.shape}")

import torch.utils.data as data

class XORDataset(data.Dataset):

    def __init__(self, size, std=0.1):
        """
        Inputs:
            size - Number of data points we want to generate
            std - Standard deviation of the noise (see generate_continuous_xor function)
        """
        super().__init__()
        self.size = size
        self.std = std
        self.generate_continuous_xor()

    def generate_continuous_xor(self):
        # Each data point in the XOR dataset has two variables, x and y, that can be either 0 or 1
        # The label is their XOR combination, i.e. 1 if only x or only y is 1 while the other is 0.
        # If x=y, the label is 0.
        data = torch.randint(low=0, high=2, size=(self.size, 2), dtype=torch.float32)
        label = (data.sum(dim=1) == 1).to(torch.long)
        # To make it slightly more challenging, we add a bit of gaussian noise to the data points.
        data += self.std * torch.randn(data.shape)

        self.data = data
        self.label = label

    def __len__(self):
        # Number of data point we have. Alternatively self.data.shape[0], or self.label.shape[0]
        return self.size

    def __getitem__(self, idx):
        # Return the idx-th data point of the dataset
        # If we have multiple things to return (data point and label), we can return them as tuple
        data_point = self.data[idx]
        data_label = self.label[idx]
        return data_point, data_label

dataset = XORDataset(size=200)
print("Size of dataset:", len(dataset))
print("Data point 0:", dataset[0])

def visualize_samples(data, label):
    if isinstance(data, torch.Tensor):
        data = data.cpu().numpy()
    if isinstance(label, torch.Tensor):
        label = label.cpu().numpy()
    data_0 = data[label == 0]
    data_1 = data[label == 1]

    plt.figure(figsize=(4,4))
    plt.scatter(data_0[:,0], data_0[:,1], edgecolor="#333", label="Class 0")
    plt.scatter(data_1[:,0], data_1[:,1], edgecolor="#333", label="Class 1")
    plt.title("Dataset samples")
    plt.ylabel(r"$x_2$")
    plt.xlabel(r"$x_1$")
    plt.legend()

visualize_samples(dataset.data, dataset.label)
plt.show()

data_loader = data.DataLoader(dataset, batch_size=8, shuffle=True)

# next(iter(...)) catches the first batch of the data loader
# If shuffle is True, this will return a different batch every time we run this cell
# For iterating over the whole dataset, we can simple use "for batch in data_loader: ..."
data_inputs, data_labels = next(iter(data_loader))

# The shape of the outputs are [batch_size, d_1,...,d_N] where d_1,...,d_N are the
# dimensions of the data point returned from the dataset class
print("Data inputs", data_inputs.shape, "\n", data_inputs)
print("Data labels", data_labels.shape, "\n", data_labels)

loss_module = nn.BCEWithLogitsLoss()

# Input to the optimizer are the parameters of the model: model.parameters()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

train_dataset = XORDataset(size=500)  # port: 500 for 2500 (a shared CPU)
train_data_loader = data.DataLoader(train_dataset, batch_size=32, shuffle=True)  # port: 32 for 128 (as many steps on fewer points)

# Push model to device. Has to be only done once
model.to(device)

def train_model(model, optimizer, data_loader, loss_module, num_epochs=100):
    # Set model to train mode
    model.train()

    # Training loop
    for epoch in tqdm(range(num_epochs)):
        for data_inputs, data_labels in data_loader:

            ## Step 1: Move input data to device (only strictly necessary if we use GPU)
            data_inputs = data_inputs.to(device)
            data_labels = data_labels.to(device)

            ## Step 2: Run the model on the input data
            preds = model(data_inputs)
            preds = preds.squeeze(dim=1) # Output is [Batch size, 1], but we want [Batch size]

            ## Step 3: Calculate the loss
            loss = loss_module(preds, data_labels.float())

            ## Step 4: Perform backpropagation
            # Before calculating the gradients, we need to ensure that they are all zero.
            # The gradients would not be overwritten, but actually added to the existing ones.
            optimizer.zero_grad()
            # Perform backpropagation
            loss.backward()

            ## Step 5: Update the parameters
            optimizer.step()

train_model(model, optimizer, train_data_loader, loss_module, num_epochs=30)  # port: 30 epochs for 100 (a shared CPU)

state_dict = model.state_dict()
print(state_dict)

# torch.save(object, filename). For the filename, any extension can be used
torch.save(state_dict, "our_model.tar")

# Load state dict from the disk (make sure it is the same name as above)
state_dict = torch.load("our_model.tar")

# Create a new model and load the state
new_model = SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)
new_model.load_state_dict(state_dict)

# Verify that the parameters are the same
print("Original model\n", model.state_dict())
print("\nLoaded model\n", new_model.state_dict())

test_dataset = XORDataset(size=500)
# drop_last -> Don't drop the last batch although it is smaller than 128
test_data_loader = data.DataLoader(test_dataset, batch_size=128, shuffle=False, drop_last=False)

def eval_model(model, data_loader):
    model.eval() # Set model to eval mode
    true_preds, num_preds = 0., 0.

    with torch.no_grad(): # Deactivate gradients for the following code
        for data_inputs, data_labels in data_loader:

            # Determine prediction of model on dev set
            data_inputs, data_labels = data_inputs.to(device), data_labels.to(device)
            preds = model(data_inputs)
            preds = preds.squeeze(dim=1)
            preds = torch.sigmoid(preds) # Sigmoid to map predictions between 0 and 1
            pred_labels = (preds >= 0.5).long() # Binarize predictions to 0 and 1

            # Keep records of predictions for the accuracy metric (true_preds=TP+TN, num_preds=TP+TN+FP+FN)
            true_preds += (pred_labels == data_labels).sum()
            num_preds += data_labels.shape[0]

    acc = true_preds / num_preds
    print(f"Accuracy of the model: {100.0*acc:4.2f}%")

eval_model(model, test_data_loader)

@torch.no_grad() # Decorator, same effect as "with torch.no_grad(): ..." over the whole function.
def visualize_classification(model, data, label):
    if isinstance(data, torch.Tensor):
        data = data.cpu().numpy()
    if isinstance(label, torch.Tensor):
        label = label.cpu().numpy()
    data_0 = data[label == 0]
    data_1 = data[label == 1]

    fig = plt.figure(figsize=(4,4), dpi=500)
    plt.scatter(data_0[:,0], data_0[:,1], edgecolor="#333", label="Class 0")
    plt.scatter(data_1[:,0], data_1[:,1], edgecolor="#333", label="Class 1")
    plt.title("Dataset samples")
    plt.ylabel(r"$x_2$")
    plt.xlabel(r"$x_1$")
    plt.legend()

    # Let's make use of a lot of operations we have learned above
    model.to(device)
    c0 = torch.Tensor(to_rgba("C0")).to(device)
    c1 = torch.Tensor(to_rgba("C1")).to(device)
    x1 = torch.arange(-0.5, 1.5, step=0.01, device=device)
    x2 = torch.arange(-0.5, 1.5, step=0.01, device=device)
    xx1, xx2 = torch.meshgrid(x1, x2, indexing='ij')  # Meshgrid function as in numpy
    model_inputs = torch.stack([xx1, xx2], dim=-1)
    preds = model(model_inputs)
    preds = torch.sigmoid(preds)
    output_image = (1 - preds) * c0[None,None] + preds * c1[None,None]  # Specifying "None" in a dimension creates a new one
    output_image = output_image.cpu().numpy()  # Convert to numpy array. This only works for tensors on CPU, hence first push to CPU
    plt.imshow(output_image, origin='lower', extent=(-0.5, 1.5, -0.5, 1.5))
    plt.grid(False)
    return fig

_ = visualize_classification(model, dataset.data, dataset.label)
plt.show()
'''


ACTIVATIONS = r'''
## Standard libraries
import os
import json
import math
import numpy as np

## Imports for plotting
# import matplotlib.pyplot as plt  # port: plotting dropped (its numbers are printed instead)
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: IPython is not installed
# import seaborn as sns  # port: seaborn is not installed
# sns.set()  # port: seaborn is not installed

## Progress bar
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

# Path to the folder where the datasets are/should be downloaded (e.g. MNIST)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial3"

# Function for setting the seed
def set_seed(seed):
    np.random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available(): # GPU operation have separate seed
        torch.cuda.manual_seed(seed)
        torch.cuda.manual_seed_all(seed)
set_seed(42)

# Additionally, some operations on a GPU are implemented stochastic for efficiency
# We want to ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

# Fetching the device that will be used throughout this notebook
device = torch.device("cpu") if not torch.cuda.is_available() else torch.device("cuda:0")
print("Using device", device)

# Create checkpoint path if it doesn't exist yet
os.makedirs(CHECKPOINT_PATH, exist_ok=True)
# port: the download of the pretrained models dropped (never download): each model is trained below

class ActivationFunction(nn.Module):

    def __init__(self):
        super().__init__()
        self.name = self.__class__.__name__
        self.config = {"name": self.name}

##############################

class Sigmoid(ActivationFunction):

    def forward(self, x):
        return 1 / (1 + torch.exp(-x))

##############################

class Tanh(ActivationFunction):

    def forward(self, x):
        x_exp, neg_x_exp = torch.exp(x), torch.exp(-x)
        return (x_exp - neg_x_exp) / (x_exp + neg_x_exp)

##############################

##############################

class ReLU(ActivationFunction):

    def forward(self, x):
        return x * (x > 0).float()

##############################

class LeakyReLU(ActivationFunction):

    def __init__(self, alpha=0.1):
        super().__init__()
        self.config["alpha"] = alpha

    def forward(self, x):
        return torch.where(x > 0, x, self.config["alpha"] * x)

##############################

class ELU(ActivationFunction):

    def forward(self, x):
        return torch.where(x > 0, x, torch.exp(x)-1)

##############################

class Swish(ActivationFunction):

    def forward(self, x):
        return x * torch.sigmoid(x)

##############################

act_fn_by_name = {
    "sigmoid": Sigmoid,
    "tanh": Tanh,
    "relu": ReLU,
    "leakyrelu": LeakyReLU,
    "elu": ELU,
    "swish": Swish
}

def get_grads(act_fn, x):
    """
    Computes the gradients of an activation function at specified positions.

    Inputs:
        act_fn - An object of the class "ActivationFunction" with an implemented forward pass.
        x - 1D input tensor.
    Output:
        A tensor with the same size of x containing the gradients of act_fn at x.
    """
    x = x.clone().requires_grad_() # Mark the input as tensor for which we want to store gradients
    out = act_fn(x)
    out.sum().backward() # Summing results in an equal gradient flow to each element in x
    return x.grad # Accessing the gradients of x by "x.grad"

def vis_act_fn(act_fn, ax, x):
    # Run activation function
    y = act_fn(x)
    y_grads = get_grads(act_fn, x)
    # Push x, y and gradients back to cpu for plotting
    x, y, y_grads = x.cpu().numpy(), y.cpu().numpy(), y_grads.cpu().numpy()
    ## Plotting
    print(act_fn.name, y[::111].round(3), y_grads[::111].round(3))  # port: the plot printed (9 of its points)

# Add activation functions if wanted
act_fns = [act_fn() for act_fn in act_fn_by_name.values()]
x = torch.linspace(-5, 5, 1000) # Range on which we want to visualize the activation functions
## Plotting
rows = math.ceil(len(act_fns)/2.0)
# fig, ax = plt.subplots(rows, 2, figsize=(8, rows*4))  # port: plotting dropped
for i, act_fn in enumerate(act_fns):
    vis_act_fn(act_fn, None, x)  # port: no axes (plotting dropped)
# fig.subplots_adjust(hspace=0.3)  # port: plotting dropped
# plt.show()  # port: plotting dropped

class BaseNetwork(nn.Module):

    def __init__(self, act_fn, input_size=784, num_classes=10, hidden_sizes=[128, 64, 64, 32]):  # port: [512, 256, 256, 128] quartered (a shared CPU)
        """
        Inputs:
            act_fn - Object of the activation function that should be used as non-linearity in the network.
            input_size - Size of the input images in pixels
            num_classes - Number of classes we want to predict
            hidden_sizes - A list of integers specifying the hidden layer sizes in the NN
        """
        super().__init__()

        # Create the network based on the specified hidden sizes
        layers = []
        layer_sizes = [input_size] + hidden_sizes
        for layer_index in range(1, len(layer_sizes)):
            layers += [nn.Linear(layer_sizes[layer_index-1], layer_sizes[layer_index]),
                       act_fn]
        layers += [nn.Linear(layer_sizes[-1], num_classes)]
        self.layers = nn.Sequential(*layers) # nn.Sequential summarizes a list of modules into a single module, applying them in sequence

        # We store all hyperparameters in a dictionary for saving and loading of the model
        self.config = {"act_fn": act_fn.config, "input_size": input_size, "num_classes": num_classes, "hidden_sizes": hidden_sizes}

    def forward(self, x):
        x = x.view(x.size(0), -1) # Reshape images to a flat vector
        out = self.layers(x)
        return out

def _get_config_file(model_path, model_name):
    # Name of the file for storing hyperparameter details
    return os.path.join(model_path, model_name + ".config")

def _get_model_file(model_path, model_name):
    # Name of the file for storing network parameters
    return os.path.join(model_path, model_name + ".tar")

def load_model(model_path, model_name, net=None):
    """
    Loads a saved model from disk.

    Inputs:
        model_path - Path of the checkpoint directory
        model_name - Name of the model (str)
        net - (Optional) If given, the state dict is loaded into this model. Otherwise, a new model is created.
    """
    config_file, model_file = _get_config_file(model_path, model_name), _get_model_file(model_path, model_name)
    assert os.path.isfile(config_file), f"Could not find the config file \"{config_file}\". Are you sure this is the correct path and you have your model config stored here?"
    assert os.path.isfile(model_file), f"Could not find the model file \"{model_file}\". Are you sure this is the correct path and you have your model stored here?"
    with open(config_file, "r") as f:
        config_dict = json.load(f)
    if net is None:
        act_fn_name = config_dict["act_fn"].pop("name").lower()
        act_fn = act_fn_by_name[act_fn_name](**config_dict.pop("act_fn"))
        net = BaseNetwork(act_fn=act_fn, **config_dict)
    net.load_state_dict(torch.load(model_file, map_location=device))
    return net

def save_model(model, model_path, model_name):
    """
    Given a model, we save the state_dict and hyperparameters.

    Inputs:
        model - Network object to save parameters from
        model_path - Path of the checkpoint directory
        model_name - Name of the model (str)
    """
    config_dict = model.config
    os.makedirs(model_path, exist_ok=True)
    config_file, model_file = _get_config_file(model_path, model_name), _get_model_file(model_path, model_name)
    with open(config_file, "w") as f:
        json.dump(config_dict, f)
    torch.save(model.state_dict(), model_file)

# import torchvision  # port: torchvision's FashionMNIST (a download) is replaced by images.npz, made by the test
# from torchvision.datasets import FashionMNIST  # port: as above
# from torchvision import transforms  # port: as above
images = np.load(os.path.join(DATASET_PATH, "images.npz"))  # port: 28x28 images in [-1, 1], as the transform's (ToTensor, Normalize(0.5, 0.5))

# Loading the training dataset. We need to split it into a training and validation part
train_dataset = data.TensorDataset(torch.from_numpy(images["x_train"]), torch.from_numpy(images["y_train"]))  # port: FashionMNIST(root=DATASET_PATH, train=True, transform=transform, download=True)
train_set, val_set = torch.utils.data.random_split(train_dataset, [640, 160])  # port: [640, 160] for [50000, 10000]

# Loading the test set
test_set = data.TensorDataset(torch.from_numpy(images["x_test"]), torch.from_numpy(images["y_test"]))  # port: FashionMNIST(root=DATASET_PATH, train=False, transform=transform, download=True)

# We define a set of data loaders that we can use for various purposes later.
# Note that for actually training a model, we will use different data loaders
# with a lower batch size.
train_loader = data.DataLoader(train_set, batch_size=1024, shuffle=True, drop_last=False)
val_loader = data.DataLoader(val_set, batch_size=1024, shuffle=False, drop_last=False)
test_loader = data.DataLoader(test_set, batch_size=1024, shuffle=False, drop_last=False)

exmp_imgs = [train_set[i][0] for i in range(16)]
# port: torchvision's make_grid and its plot dropped (torchvision is not here)

def visualize_gradients(net, color="C0"):
    """
    Inputs:
        net - Object of class BaseNetwork
        color - Color in which we want to visualize the histogram (for easier separation of activation functions)
    """
    net.eval()
    small_loader = data.DataLoader(train_set, batch_size=256, shuffle=False)
    imgs, labels = next(iter(small_loader))
    imgs, labels = imgs.to(device), labels.to(device)

    # Pass one batch through the network, and calculate the gradients for the weights
    net.zero_grad()
    preds = net(imgs)
    loss = F.cross_entropy(preds, labels)
    loss.backward()
    # We limit our visualization to the weight parameters and exclude the bias to reduce the number of plots
    grads = {name: params.grad.data.view(-1).cpu().clone().numpy() for name, params in net.named_parameters() if "weight" in name}
    net.zero_grad()
    gradient_magnitudes[net.config['act_fn']['name']] = grads  # port: kept for the test's checks

    ## Plotting
    print(f"Gradient magnitude distribution for activation function {net.config['act_fn']['name']}:", [f"{grads[key].std():.2e}" for key in grads])  # port: the histograms' title and spreads printed (plotting dropped)

gradient_magnitudes = {}  # port: kept for the test's checks
# Seaborn prints warnings if histogram has small values. We can ignore them for now
import warnings
warnings.filterwarnings('ignore')
## Create a plot for every activation function
for i, act_fn_name in enumerate(act_fn_by_name):
    set_seed(42) # Setting the seed ensures that we have the same weight initialization for each activation function
    act_fn = act_fn_by_name[act_fn_name]()
    net_actfn = BaseNetwork(act_fn=act_fn).to(device)
    visualize_gradients(net_actfn, color=f"C{i}")

def train_model(net, model_name, max_epochs=50, patience=7, batch_size=256, overwrite=False):
    """
    Train a model on the training set of FashionMNIST

    Inputs:
        net - Object of BaseNetwork
        model_name - (str) Name of the model, used for creating the checkpoint names
        max_epochs - Number of epochs we want to (maximally) train for
        patience - If the performance on the validation set has not improved for #patience epochs, we stop training early
        batch_size - Size of batches used in training
        overwrite - Determines how to handle the case when there already exists a checkpoint. If True, it will be overwritten. Otherwise, we skip training.
    """
    file_exists = os.path.isfile(_get_model_file(CHECKPOINT_PATH, model_name))
    if file_exists and not overwrite:
        print("Model file already exists. Skipping training...")
    else:
        if file_exists:
            print("Model file exists, but will be overwritten...")

        # Defining optimizer, loss and data loader
        optimizer = optim.SGD(net.parameters(), lr=1e-2, momentum=0.9) # Default parameters, feel free to change
        loss_module = nn.CrossEntropyLoss()
        train_loader_local = data.DataLoader(train_set, batch_size=batch_size, shuffle=True, drop_last=True, pin_memory=True)

        val_scores = []
        best_val_epoch = -1
        for epoch in range(max_epochs):
            ############
            # Training #
            ############
            net.train()
            true_preds, count = 0., 0
            for imgs, labels in tqdm(train_loader_local, desc=f"Epoch {epoch+1}", leave=False):
                imgs, labels = imgs.to(device), labels.to(device) # To GPU
                optimizer.zero_grad() # Zero-grad can be placed anywhere before "loss.backward()"
                preds = net(imgs)
                loss = loss_module(preds, labels)
                loss.backward()
                optimizer.step()
                # Record statistics during training
                true_preds += (preds.argmax(dim=-1) == labels).sum()
                count += labels.shape[0]
            train_acc = true_preds / count

            ##############
            # Validation #
            ##############
            val_acc = test_model(net, val_loader)
            val_scores.append(val_acc)
            print(f"[Epoch {epoch+1:2d}] Training accuracy: {train_acc*100.0:05.2f}%, Validation accuracy: {val_acc*100.0:05.2f}%")

            if len(val_scores) == 1 or val_acc > val_scores[best_val_epoch]:
                print("\t   (New best performance, saving model...)")
                save_model(net, CHECKPOINT_PATH, model_name)
                best_val_epoch = epoch
            elif best_val_epoch <= epoch - patience:
                print(f"Early stopping due to no improvement over the last {patience} epochs")
                break

        # Plot a curve of the validation accuracy
        # port: plotting dropped (the accuracies are printed above)

    load_model(CHECKPOINT_PATH, model_name, net=net)
    test_acc = test_model(net, test_loader)
    print((f" Test accuracy: {test_acc*100.0:4.2f}% ").center(50, "=")+"\n")
    return test_acc


def test_model(net, data_loader):
    """
    Test a model on a specified dataset.

    Inputs:
        net - Trained model of type BaseNetwork
        data_loader - DataLoader object of the dataset to test on (validation or test)
    """
    net.eval()
    true_preds, count = 0., 0
    for imgs, labels in data_loader:
        imgs, labels = imgs.to(device), labels.to(device)
        with torch.no_grad():
            preds = net(imgs).argmax(dim=-1)
            true_preds += (preds == labels).sum().item()
            count += labels.shape[0]
    test_acc = true_preds / count
    return test_acc

for act_fn_name in act_fn_by_name:
    print(f"Training BaseNetwork with {act_fn_name} activation...")
    set_seed(42)
    act_fn = act_fn_by_name[act_fn_name]()
    net_actfn = BaseNetwork(act_fn=act_fn).to(device)
    train_model(net_actfn, f"FashionMNIST_{act_fn_name}", max_epochs=3, batch_size=32, overwrite=False)  # port: 3 epochs of 32 images for 50 of 256 (a shared CPU, a small set)

def visualize_activations(net, color="C0"):
    activations = {}

    net.eval()
    small_loader = data.DataLoader(train_set, batch_size=1024)
    imgs, labels = next(iter(small_loader))
    with torch.no_grad():
        layer_index = 0
        imgs = imgs.to(device)
        imgs = imgs.view(imgs.size(0), -1)
        # We need to manually loop through the layers to save all activations
        for layer_index, layer in enumerate(net.layers[:-1]):
            imgs = layer(imgs)
            activations[layer_index] = imgs.view(-1).cpu().numpy()

    ## Plotting
    print(f"Activation distribution for activation function {net.config['act_fn']['name']}:", [f"{activations[key].std():.3f}" for key in activations])  # port: the histograms' title and spreads printed (plotting dropped)

for i, act_fn_name in enumerate(act_fn_by_name):
    net_actfn = load_model(model_path=CHECKPOINT_PATH, model_name=f"FashionMNIST_{act_fn_name}").to(device)
    visualize_activations(net_actfn, color=f"C{i}")

def measure_number_dead_neurons(net):

    # For each neuron, we create a boolean variable initially set to 1. If it has an activation unequals 0 at any time,
    # we set this variable to 0. After running through the whole training set, only dead neurons will have a 1.
    neurons_dead = [
        torch.ones(layer.out_features, device=device, dtype=torch.bool) for layer in net.layers[:-1] if isinstance(layer, nn.Linear)  # port: layer.weight.shape[0]: out_features, as a Linear's weights are (in, out) (documented)
    ] # Same shapes as hidden size in BaseNetwork

    net.eval()
    with torch.no_grad():
        for imgs, labels in tqdm(train_loader, leave=False): # Run through whole training set
            layer_index = 0
            imgs = imgs.to(device)
            imgs = imgs.view(imgs.size(0), -1)
            for layer in net.layers[:-1]:
                imgs = layer(imgs)
                if isinstance(layer, ActivationFunction):
                    # Are all activations == 0 in the batch, and we did not record the opposite in the last batches?
                    neurons_dead[layer_index] = torch.logical_and(neurons_dead[layer_index], (imgs == 0).all(dim=0))
                    layer_index += 1
    number_neurons_dead = [t.sum().item() for t in neurons_dead]
    print("Number of dead neurons:", number_neurons_dead)
    print("In percentage:", ", ".join([f"{(100.0 * num_dead / tens.shape[0]):4.2f}%" for tens, num_dead in zip(neurons_dead, number_neurons_dead)]))

set_seed(42)
net_relu = BaseNetwork(act_fn=ReLU()).to(device)
measure_number_dead_neurons(net_relu)

net_relu = load_model(model_path=CHECKPOINT_PATH, model_name="FashionMNIST_relu").to(device)
measure_number_dead_neurons(net_relu)

set_seed(42)
net_relu = BaseNetwork(act_fn=ReLU(), hidden_sizes=[256, 256, 256, 256, 256, 128, 128, 128, 128, 128]).to(device)
measure_number_dead_neurons(net_relu)
'''


def images_npz(path, n_train: int = 800, n_test: int = 300) -> None:
    """FashionMNIST's stand-in: sklearn's digits as 28x28 images in [-1, 1] (what the
    tutorial's ``ToTensor`` and ``Normalize((0.5,), (0.5,))`` give), (N, 1, 28, 28)."""
    from tests.test_torch_tutorials_u import digits28  # noqa: PLC0415

    x, y = digits28()
    x = (2 * x - 1)[:, None]
    path.parent.mkdir(parents=True)
    np.savez(path, x_train=x[:n_train], y_train=y[:n_train], x_test=x[-n_test:], y_test=y[-n_test:])


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` run as ``__main__`` in ``folder/notebooks``, beside ``folder/data`` (the
    notebooks' ``../data`` and ``../saved_models``): what it printed and its globals."""
    images_npz(folder / "data" / "images.npz")
    (folder / "notebooks").mkdir()
    return run_main(script, folder / "notebooks", monkeypatch, "notebook.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in the text, on one
    thread and on the CPU for both (the notebooks pick "cuda" when it is there), matplotlib
    drawing off screen."""
    torch = pytest.importorskip("torch")
    matplotlib = pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    import tricycle  # noqa: PLC0415

    matplotlib.use("Agg")
    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        theirs = run(script, tmp_path / "torch", monkeypatch)
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def kinds(printed: str) -> list[str]:
    """``lines`` of the printed text with a tensor's repr as "TENSOR", a state dict's as
    "STATE", torch's ``torch.Size([...])`` as the tuple tricycle's shapes are, and the
    documented names (a Linear is tricycle's ``Dense(from_size, to_size)`` with ``weights``)
    as torch's; the progress bars go to stderr."""
    text = re.sub(r"torch\.Size\(\[(.*?)\]\)", lambda m: str(tuple(eval(f"[{m[1]}]"))), printed)
    text = re.sub(r"[tT]ensor\((\[.*?\]|[^()\[]*)(, [^()]*)?\)", "TENSOR", text, flags=re.DOTALL)
    text = re.sub(
        r"OrderedDict\((\[.*?\]|\{.*?\})\)|\{'[\w.]+': array\(.*?\}", "STATE", text, flags=re.DOTALL
    )
    text = re.sub(
        r"Dense\(from_size=(\d+), to_size=(\d+)", r"Linear(in_features=\1, out_features=\2", text
    )
    text = re.sub(r"  # \d+ parameters", "", text).replace(".weights,", ".weight,")
    text = re.sub(r"Using (torch|tricycle) \S+", "Using the library", text)
    text = re.sub(r"={2,}", "==", text)  # a centred line's rule is as wide as its numbers allow
    return lines(re.sub(r"\b(torch|tricycle)\b", "LIB", text))


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    """A tricycle tensor's values are a torch tensor's."""
    np.testing.assert_allclose(np.asarray(ours.numpy(), dtype=float), theirs.detach().numpy().astype(float), rtol=rtol, atol=atol)  # fmt: skip


def test_introduction_to_pytorch(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(INTRO, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for name in "tensor", "W", "h", "a", "b", "c", "y":  # the deterministic tensors
        same(our[name], their[name])
    np.testing.assert_array_equal(our["np_arr"], their["np_arr"])
    for printed in ours, theirs:  # x.grad of mean((x + 2)^2 + 3) at x = 0, 1, 2: 2 (x + 2) / 3
        y, line = re.search(r"\nY [tT]ensor\(([\d.]+).*\n(.*)\n", printed).groups()
        grad = numbers(r"([\d.]+)", line)
        np.testing.assert_allclose(float(y), 38 / 3, rtol=1e-4)  # (4 + 9 + 16) / 3 + 3
        np.testing.assert_allclose(grad, [4 / 3, 2, 8 / 3], rtol=1e-3)
    assert our["a"].dtype == np.float32 and our["y"].grad_fn is not None
    for printed in ours, theirs:  # the XOR is learnt in 30 epochs
        assert numbers(r"Accuracy of the model: ([\d.]+)%", printed)[0] > 90, printed
    # the state dict saved and loaded into a new model
    for name, value in our["model"].state_dict().items():
        np.testing.assert_array_equal(our["new_model"].state_dict()[name], value)
    assert [len(our[d]) for d in ("dataset", "train_dataset", "test_dataset")] == [200, 500, 500]
    assert our["data_inputs"].shape == (8, 2) and our["data_labels"].dtype == np.int64

    # torch's trained classifier in the tutorial's own class: torch's predictions and the
    # decision image of visualize_classification
    import tricycle.nn as nn  # noqa: PLC0415

    model = our["SimpleClassifier"](num_inputs=2, num_hidden=4, num_outputs=1)
    assert nn.from_torch(model, their["model"].state_dict()) == ([], [])
    inputs = our["tricycle"].tensor(their["test_dataset"].data.numpy())
    same(model(inputs), their["model"](their["test_dataset"].data), rtol=1e-5)


def test_activation_functions(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ACTIVATIONS, tmp_path, monkeypatch)
    # which epochs improve on the best depends on the draws: the rest prints the same
    assert [k for k in kinds(ours) if "New best" not in k] == [
        k for k in kinds(theirs) if "New best" not in k
    ]
    # the activations and their gradients on linspace(-5, 5, 1000) print torch's numbers
    for name in "Sigmoid", "Tanh", "ReLU", "LeakyReLU", "ELU", "Swish":
        ours_line = next(line for line in ours.splitlines() if line.startswith(name + " "))
        assert ours_line in theirs.splitlines(), ours_line
    for printed in ours, theirs:
        tests = dict(zip(our["act_fn_by_name"], numbers(r"Test accuracy: ([\d.]+)%", printed)))
        assert tests["tanh"] > 40 and tests["elu"] > 40, tests  # a tenth is chance
        dead = [eval(m) for m in re.findall(r"Number of dead neurons: (\[.*\])", printed)]
        assert [len(d) for d in dead] == [4, 4, 10]
        assert "Activation distribution for activation function Swish" in printed
    for act_fn_name in our["act_fn_by_name"]:  # each model saved and loaded by its config
        assert (
            tmp_path / "tricycle/saved_models/tutorial3" / f"FashionMNIST_{act_fn_name}.config"
        ).exists()
    # torch's first weights in the tutorial's own BaseNetwork: the same gradient magnitudes of a
    # batch (visualize_gradients) and the same dead neurons (measure_number_dead_neurons)
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    import torch  # noqa: PLC0415

    import tricycle.nn as nn  # noqa: PLC0415

    for space in our, their:  # one data set, the same for both (random_split draws differ)
        space["train_set"] = space["train_dataset"]
        space["train_loader"] = space["data"].DataLoader(space["train_dataset"], batch_size=1024)
    for act_fn_name in "tanh", "relu", "swish":
        torch.manual_seed(0)
        net = their["BaseNetwork"](act_fn=their["act_fn_by_name"][act_fn_name]())
        mine = our["BaseNetwork"](act_fn=our["act_fn_by_name"][act_fn_name]())
        assert nn.from_torch(mine, net.state_dict()) == ([], [])
        printed = []
        for space, model in (their, net), (our, mine):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                space["visualize_gradients"](model)
                space["measure_number_dead_neurons"](model)
            printed.append(out.getvalue().splitlines())
        assert len(printed[1]) == 3 and printed[0][1:] == printed[1][1:]  # dead neurons, in %
        name = net.config["act_fn"]["name"]
        weights = [p for n, p in net.named_parameters() if "weight" in n]
        for w, expected, got in zip(weights, their["gradient_magnitudes"][name].values(), our["gradient_magnitudes"][name].values(), strict=True):  # fmt: skip
            got = got.reshape(w.shape[::-1]).T.ravel()  # tricycle's (in, out), torch's (out, in)
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)


def test_squeeze_dim_and_meshgrid_as_torchs():
    """What the notebooks needed, as torch's: ``Tensor.squeeze(dim=1)`` (torch's keyword; a
    named axis of size > 1 stays) and ``meshgrid`` in both indexings, of arguments or a list,
    with 0-d inputs, each grid's gradient summed back into its input."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 1, 3)).astype(np.float32)
    for lib in torch, tricycle:
        assert tuple(lib.tensor(a).squeeze(dim=1).shape) == (5, 3)
        assert tuple(lib.tensor(a).squeeze(dim=0).shape) == (5, 1, 3)
    x, y = rng.normal(size=4), rng.normal(size=3)
    for indexing in "ij", "xy":
        for as_list in False, True:
            grids = {}
            for lib in torch, tricycle:
                xs = [lib.tensor(v, requires_grad=True) for v in (x, y, np.float64(2.0))]
                got = (
                    lib.meshgrid(xs, indexing=indexing)
                    if as_list
                    else lib.meshgrid(*xs, indexing=indexing)
                )
                weights = [
                    lib.tensor(rng_w)
                    for rng_w in np.random.default_rng(1).normal(size=(3, *got[0].shape))
                ]
                sum(((g * w).sum() for g, w in zip(got, weights)), lib.tensor(0.0)).backward()
                grids[lib] = [np.asarray(g.detach().numpy()) for g in got] + [np.asarray(v.grad.numpy()) for v in xs]  # fmt: skip
            for ours, theirs in zip(grids[tricycle], grids[torch], strict=True):
                np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        tricycle.meshgrid(tricycle.tensor(x), indexing="ji")
    with pytest.raises(
        ValueError, match=r"meshgrid: expected .* 0-d or 1-d tensors, got shapes \[\(5, 1, 3\)\]"
    ):
        tricycle.meshgrid(tricycle.tensor(a))
