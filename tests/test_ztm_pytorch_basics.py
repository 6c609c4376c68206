"""Daniel Bourke's "Zero to Mastery: Learn PyTorch for Deep Learning"
(mrdbourke/pytorch-deep-learning), notebooks 00-02 and their exercise solutions
(extras/solutions), run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in
their text (docs/pytorch.md's promise; the method of tests/test_dlwpt_part1.py):

- 00_pytorch_fundamentals: scalars to tensors (``ndim``, ``shape``, ``item``), ``rand(size=)``,
  ``zeros``/``ones``, ``torch.range`` (deprecated, end included) and ``arange``, dtypes
  (``float16``, ``type(torch.int8)``), arithmetic and ``matmul``/``mm``/``@`` (the shape error
  of a cell that fails in the course too), ``nn.Linear``, the aggregates and ``argmax``,
  ``reshape``/``view`` (written through)/``stack``/``squeeze``/``permute``, indexing, the
  numpy bridge, seeds and the device cells;
- 01_pytorch_workflow: the hand-written ``LinearRegressionModel`` (``nn.Parameter``) and the
  ``nn.Linear`` one trained with ``L1Loss`` and SGD under ``inference_mode``, the plots, the
  ``state_dict`` saved with ``torch.save`` and loaded into a new model;
- 02_pytorch_classification: sklearn's circles and blobs (``train_test_split`` of tensors),
  ``accuracy_fn``, ``BCEWithLogitsLoss`` on logits, the linear, non-linear and regression
  models, ``torch.round(torch.sigmoid(...))``, ReLU and sigmoid by hand, the multi-class
  ``BlobModel`` with ``CrossEntropyLoss``, helper_functions.py's ``plot_decision_boundary``
  (the file written beside the notebook, whose download cell then skips) and torchmetrics'
  ``Accuracy``;
- the exercise solutions of 00-02: the random-tensor exercises, the linear regression saved and
  loaded, the moons (SGD) and the spiral (Adam) classifiers and ``tanh`` by hand.

pandas and torchmetrics (not installed) are the test's stand-ins, as is an empty
``torchvision`` (helper_functions.py imports it; the functions used never call it); sklearn
and matplotlib (Agg) are skipped without. Each changed line ends in ``# port:`` and says why:
the notebooks' magics and shell commands, epochs shrunk, and one keyword (``zeros_like(input=)``)
reported. Each notebook runs under torch (skipped without it), then under tricycle, seeded and
on the CPU; both print the same lines (numbers, reprs and documented differences aside: a state
dict's arrays, a device's name, a one-number tensor in an f-string) and learn where they
train; the deterministic tensors are torch's, and every model the notebooks build, given
torch's weights (``nn.from_torch``), gives torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import importlib.machinery
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import run_cells, torch_and_tricycle
from tests.test_dlwpt_part1 import normal, same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_torch_vision_tutorials import host
from tests.ztm_sources import HELPER_FUNCTIONS

pytestmark = [
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:More than 20 figures have been opened"),
    pytest.mark.filterwarnings("ignore:__array_wrap__ must accept context"),  # torch's
    # the exercise's tanh by hand overflows float32 (e^100), in both libraries; numpy says so
    pytest.mark.filterwarnings("ignore:overflow encountered in exp"),
    pytest.mark.filterwarnings("ignore:invalid value encountered in divide"),
    pytest.mark.filterwarnings("ignore:(torch|tricycle).range is deprecated"),
]

NB_00_FUNDAMENTALS = r"""
import torch
torch.__version__
# %%
# Scalar
scalar = torch.tensor(7)
scalar
# %%
scalar.ndim
# %%
# Get the Python number within a tensor (only works with one-element tensors)
scalar.item()
# %%
# Vector
vector = torch.tensor([7, 7])
vector
# %%
# Check the number of dimensions of vector
vector.ndim
# %%
# Check shape of vector
vector.shape
# %%
# Matrix
MATRIX = torch.tensor([[7, 8], 
                       [9, 10]])
MATRIX
# %%
# Check number of dimensions
MATRIX.ndim
# %%
MATRIX.shape
# %%
# Tensor
TENSOR = torch.tensor([[[1, 2, 3],
                        [3, 6, 9],
                        [2, 4, 5]]])
TENSOR
# %%
# Check number of dimensions for TENSOR
TENSOR.ndim
# %%
# Check shape of TENSOR
TENSOR.shape
# %%
# Create a random tensor of size (3, 4)
random_tensor = torch.rand(size=(3, 4))
random_tensor, random_tensor.dtype
# %%
# Create a random tensor of size (224, 224, 3)
random_image_size_tensor = torch.rand(size=(224, 224, 3))
random_image_size_tensor.shape, random_image_size_tensor.ndim
# %%
# Create a tensor of all zeros
zeros = torch.zeros(size=(3, 4))
zeros, zeros.dtype
# %%
# Create a tensor of all ones
ones = torch.ones(size=(3, 4))
ones, ones.dtype
# %%
# Use torch.arange(), torch.range() is deprecated 
zero_to_ten_deprecated = torch.range(0, 10) # Note: this may return an error in the future

# Create a range of values 0 to 10
zero_to_ten = torch.arange(start=0, end=10, step=1)
zero_to_ten
# %%
# Can also create a tensor of zeros similar to another tensor
ten_zeros = torch.zeros_like(zero_to_ten) # will have same shape  # port: tricycle's *_like take no input= keyword (reported)
ten_zeros
# %%
# Default datatype for tensors is float32
float_32_tensor = torch.tensor([3.0, 6.0, 9.0],
                               dtype=None, # defaults to None, which is torch.float32 or whatever datatype is passed
                               device=None, # defaults to None, which uses the default tensor type
                               requires_grad=False) # if True, operations performed on the tensor are recorded 

float_32_tensor.shape, float_32_tensor.dtype, float_32_tensor.device
# %%
float_16_tensor = torch.tensor([3.0, 6.0, 9.0],
                               dtype=torch.float16) # torch.half would also work

float_16_tensor.dtype
# %%
# Create a tensor
some_tensor = torch.rand(3, 4)

# Find out details about it
print(some_tensor)
print(f"Shape of tensor: {some_tensor.shape}")
print(f"Datatype of tensor: {some_tensor.dtype}")
print(f"Device tensor is stored on: {some_tensor.device}") # will default to CPU
# %%
# Create a tensor of values and add a number to it
tensor = torch.tensor([1, 2, 3])
tensor + 10
# %%
# Multiply it by 10
tensor * 10
# %%
# Tensors don't change unless reassigned
tensor
# %%
# Subtract and reassign
tensor = tensor - 10
tensor
# %%
# Add and reassign
tensor = tensor + 10
tensor
# %%
# Can also use torch functions
torch.multiply(tensor, 10)
# %%
# Original tensor is still unchanged 
tensor
# %%
# Element-wise multiplication (each element multiplies its equivalent, index 0->0, 1->1, 2->2)
print(tensor, "*", tensor)
print("Equals:", tensor * tensor)
# %%
import torch
tensor = torch.tensor([1, 2, 3])
tensor.shape
# %%
# Element-wise matrix multiplication
tensor * tensor
# %%
# Matrix multiplication
torch.matmul(tensor, tensor)
# %%
# Can also use the "@" symbol for matrix multiplication, though not recommended
tensor @ tensor
# %%
# %%time  # port: a notebook's magic (the cell runs untimed)
# Matrix multiplication by hand 
# (avoid doing operations with for loops at all cost, they are computationally expensive)
value = 0
for i in range(len(tensor)):
  value += tensor[i] * tensor[i]
value
# %%
# %%time  # port: a notebook's magic (the cell runs untimed)
torch.matmul(tensor, tensor)
# %%
# Shapes need to be in the right way  
tensor_A = torch.tensor([[1, 2],
                         [3, 4],
                         [5, 6]], dtype=torch.float32)

tensor_B = torch.tensor([[7, 10],
                         [8, 11], 
                         [9, 12]], dtype=torch.float32)

torch.matmul(tensor_A, tensor_B) # (this will error)
# %%
# View tensor_A and tensor_B
print(tensor_A)
print(tensor_B)
# %%
# View tensor_A and tensor_B.T
print(tensor_A)
print(tensor_B.T)
# %%
# The operation works when tensor_B is transposed
print(f"Original shapes: tensor_A = {tensor_A.shape}, tensor_B = {tensor_B.shape}\n")
print(f"New shapes: tensor_A = {tensor_A.shape} (same as above), tensor_B.T = {tensor_B.T.shape}\n")
print(f"Multiplying: {tensor_A.shape} * {tensor_B.T.shape} <- inner dimensions match\n")
print("Output:\n")
output = torch.matmul(tensor_A, tensor_B.T)
print(output) 
print(f"\nOutput shape: {output.shape}")
# %%
# torch.mm is a shortcut for matmul
torch.mm(tensor_A, tensor_B.T)
# %%
# Since the linear layer starts with a random weights matrix, let's make it reproducible (more on this later)
torch.manual_seed(42)
# This uses matrix multiplication
linear = torch.nn.Linear(in_features=2, # in_features = matches inner dimension of input 
                         out_features=6) # out_features = describes outer value 
x = tensor_A
output = linear(x)
print(f"Input shape: {x.shape}\n")
print(f"Output:\n{output}\n\nOutput shape: {output.shape}")
# %%
# Create a tensor
x = torch.arange(0, 100, 10)
x
# %%
print(f"Minimum: {x.min()}")
print(f"Maximum: {x.max()}")
# print(f"Mean: {x.mean()}") # this will error
print(f"Mean: {x.type(torch.float32).mean()}") # won't work without float datatype
print(f"Sum: {x.sum()}")
# %%
torch.max(x), torch.min(x), torch.mean(x.type(torch.float32)), torch.sum(x)
# %%
# Create a tensor
tensor = torch.arange(10, 100, 10)
print(f"Tensor: {tensor}")

# Returns index of max and min values
print(f"Index where max value occurs: {tensor.argmax()}")
print(f"Index where min value occurs: {tensor.argmin()}")
# %%
# Create a tensor and check its datatype
tensor = torch.arange(10., 100., 10.)
tensor.dtype
# %%
# Create a float16 tensor
tensor_float16 = tensor.type(torch.float16)
tensor_float16
# %%
# Create an int8 tensor
tensor_int8 = tensor.type(torch.int8)
tensor_int8
# %%
# Create a tensor
import torch
x = torch.arange(1., 8.)
x, x.shape
# %%
# Add an extra dimension
x_reshaped = x.reshape(1, 7)
x_reshaped, x_reshaped.shape
# %%
# Change view (keeps same data as original but changes view)
# See more: https://stackoverflow.com/a/54507446/7900723
z = x.view(1, 7)
z, z.shape
# %%
# Changing z changes x
z[:, 0] = 5
z, x
# %%
# Stack tensors on top of each other
x_stacked = torch.stack([x, x, x, x], dim=0) # try changing dim to dim=1 and see what happens
x_stacked
# %%
print(f"Previous tensor: {x_reshaped}")
print(f"Previous shape: {x_reshaped.shape}")

# Remove extra dimension from x_reshaped
x_squeezed = x_reshaped.squeeze()
print(f"\nNew tensor: {x_squeezed}")
print(f"New shape: {x_squeezed.shape}")
# %%
print(f"Previous tensor: {x_squeezed}")
print(f"Previous shape: {x_squeezed.shape}")

## Add an extra dimension with unsqueeze
x_unsqueezed = x_squeezed.unsqueeze(dim=0)
print(f"\nNew tensor: {x_unsqueezed}")
print(f"New shape: {x_unsqueezed.shape}")
# %%
# Create tensor with specific shape
x_original = torch.rand(size=(224, 224, 3))

# Permute the original tensor to rearrange the axis order
x_permuted = x_original.permute(2, 0, 1) # shifts axis 0->1, 1->2, 2->0

print(f"Previous shape: {x_original.shape}")
print(f"New shape: {x_permuted.shape}")
# %%
# Create a tensor 
import torch
x = torch.arange(1, 10).reshape(1, 3, 3)
x, x.shape
# %%
# Let's index bracket by bracket
print(f"First square bracket:\n{x[0]}") 
print(f"Second square bracket: {x[0][0]}") 
print(f"Third square bracket: {x[0][0][0]}")
# %%
# Get all values of 0th dimension and the 0 index of 1st dimension
x[:, 0]
# %%
# Get all values of 0th & 1st dimensions but only index 1 of 2nd dimension
x[:, :, 1]
# %%
# Get all values of the 0 dimension but only the 1 index value of the 1st and 2nd dimension
x[:, 1, 1]
# %%
# Get index 0 of 0th and 1st dimension and all values of 2nd dimension 
x[0, 0, :] # same as x[0][0]
# %%
# NumPy array to tensor
import torch
import numpy as np
array = np.arange(1.0, 8.0)
tensor = torch.from_numpy(array)
array, tensor
# %%
# Change the array, keep the tensor
array = array + 1
array, tensor
# %%
# Tensor to NumPy array
tensor = torch.ones(7) # create a tensor of ones with dtype=float32
numpy_tensor = tensor.numpy() # will be dtype=float32 unless changed
tensor, numpy_tensor
# %%
# Change the tensor, keep the array the same
tensor = tensor + 1
tensor, numpy_tensor
# %%
import torch

# Create two random tensors
random_tensor_A = torch.rand(3, 4)
random_tensor_B = torch.rand(3, 4)

print(f"Tensor A:\n{random_tensor_A}\n")
print(f"Tensor B:\n{random_tensor_B}\n")
print(f"Does Tensor A equal Tensor B? (anywhere)")
random_tensor_A == random_tensor_B
# %%
import torch
import random

# # Set the random seed
RANDOM_SEED=42 # try changing this to different values and see what happens to the numbers below
torch.manual_seed(seed=RANDOM_SEED) 
random_tensor_C = torch.rand(3, 4)

# Have to reset the seed every time a new rand() is called 
# Without this, tensor_D would be different to tensor_C 
torch.random.manual_seed(seed=RANDOM_SEED) # try commenting this line out and seeing what happens
random_tensor_D = torch.rand(3, 4)

print(f"Tensor C:\n{random_tensor_C}\n")
print(f"Tensor D:\n{random_tensor_D}\n")
print(f"Does Tensor C equal Tensor D? (anywhere)")
random_tensor_C == random_tensor_D
# %%
# !nvidia-smi  # port: a shell command (no GPU here)
# %%
# Check for GPU
import torch
torch.cuda.is_available()
# %%
# Set device type
device = "cuda" if torch.cuda.is_available() else "cpu"
device
# %%
# Count number of devices
torch.cuda.device_count()
# %%
# Check for Apple Silicon GPU
import torch
torch.backends.mps.is_available() # Note this will print false if you're not running on a Mac
# %%
# Set device type
device = "mps" if torch.backends.mps.is_available() else "cpu"
device
# %%
if torch.cuda.is_available():
    device = "cuda" # Use NVIDIA GPU (if available)
elif torch.backends.mps.is_available():
    device = "mps" # Use Apple Silicon GPU (if available)
else:
    device = "cpu" # Default to CPU if no GPU is available
# %%
# Create tensor (default on CPU)
tensor = torch.tensor([1, 2, 3])

# Tensor not on GPU
print(tensor, tensor.device)

# Move tensor to GPU (if available)
tensor_on_gpu = tensor.to(device)
tensor_on_gpu
# %%
# If tensor is on GPU, can't transform it to NumPy (this will error)
tensor_on_gpu.numpy()
# %%
# Instead, copy the tensor back to cpu
tensor_back_on_cpu = tensor_on_gpu.cpu().numpy()
tensor_back_on_cpu
# %%
tensor_on_gpu

"""


NB_01_WORKFLOW = r'''
what_were_covering = {1: "data (prepare and load)",
    2: "build model",
    3: "fitting the model to data (training)",
    4: "making predictions and evaluating a model (inference)",
    5: "saving and loading a model",
    6: "putting it all together"
}
# %%
import torch
from torch import nn # nn contains all of PyTorch's building blocks for neural networks
import matplotlib.pyplot as plt

# Check PyTorch version
torch.__version__
# %%
# Create *known* parameters
weight = 0.7
bias = 0.3

# Create data
start = 0
end = 1
step = 0.02
X = torch.arange(start, end, step).unsqueeze(dim=1)
y = weight * X + bias

X[:10], y[:10]
# %%
# Create train/test split
train_split = int(0.8 * len(X)) # 80% of data used for training set, 20% for testing 
X_train, y_train = X[:train_split], y[:train_split]
X_test, y_test = X[train_split:], y[train_split:]

len(X_train), len(y_train), len(X_test), len(y_test)
# %%
def plot_predictions(train_data=X_train, 
                     train_labels=y_train, 
                     test_data=X_test, 
                     test_labels=y_test, 
                     predictions=None):
  """
  Plots training data, test data and compares predictions.
  """
  plt.figure(figsize=(10, 7))

  # Plot training data in blue
  plt.scatter(train_data, train_labels, c="b", s=4, label="Training data")
  
  # Plot test data in green
  plt.scatter(test_data, test_labels, c="g", s=4, label="Testing data")

  if predictions is not None:
    # Plot the predictions in red (predictions were made on the test data)
    plt.scatter(test_data, predictions, c="r", s=4, label="Predictions")

  # Show the legend
  plt.legend(prop={"size": 14});
# %%
plot_predictions();
# %%
# Create a Linear Regression model class
class LinearRegressionModel(nn.Module): # <- almost everything in PyTorch is a nn.Module (think of this as neural network lego blocks)
    def __init__(self):
        super().__init__() 
        self.weights = nn.Parameter(torch.randn(1, # <- start with random weights (this will get adjusted as the model learns)
                                                dtype=torch.float), # <- PyTorch loves float32 by default
                                   requires_grad=True) # <- can we update this value with gradient descent?)

        self.bias = nn.Parameter(torch.randn(1, # <- start with random bias (this will get adjusted as the model learns)
                                            dtype=torch.float), # <- PyTorch loves float32 by default
                                requires_grad=True) # <- can we update this value with gradient descent?))

    # Forward defines the computation in the model
    def forward(self, x: torch.Tensor) -> torch.Tensor: # <- "x" is the input data (e.g. training/testing features)
        return self.weights * x + self.bias # <- this is the linear regression formula (y = m*x + b)
# %%
# Set manual seed since nn.Parameter are randomly initialized
torch.manual_seed(42)

# Create an instance of the model (this is a subclass of nn.Module that contains nn.Parameter(s))
model_0 = LinearRegressionModel()

# Check the nn.Parameter(s) within the nn.Module subclass we created
list(model_0.parameters())
# %%
# List named parameters 
model_0.state_dict()
# %%
# Make predictions with model
with torch.inference_mode(): 
    y_preds = model_0(X_test)

# Note: in older PyTorch code you might also see torch.no_grad()
# with torch.no_grad():
#   y_preds = model_0(X_test)
# %%
# Check the predictions
print(f"Number of testing samples: {len(X_test)}") 
print(f"Number of predictions made: {len(y_preds)}")
print(f"Predicted values:\n{y_preds}")
# %%
plot_predictions(predictions=y_preds)
# %%
y_test - y_preds
# %%
# Create the loss function
loss_fn = nn.L1Loss() # MAE loss is same as L1Loss

# Create the optimizer
optimizer = torch.optim.SGD(params=model_0.parameters(), # parameters of target model to optimize
                            lr=0.01) # learning rate (how much the optimizer should change parameters at each step, higher=more (less stable), lower=less (might take a long time))
# %%
torch.manual_seed(42)

# Set the number of epochs (how many times the model will pass over the training data)
epochs = 100

# Create empty loss lists to track values
train_loss_values = []
test_loss_values = []
epoch_count = []

for epoch in range(epochs):
    ### Training

    # Put model in training mode (this is the default state of a model)
    model_0.train()

    # 1. Forward pass on train data using the forward() method inside 
    y_pred = model_0(X_train)
    # print(y_pred)

    # 2. Calculate the loss (how different are our models predictions to the ground truth)
    loss = loss_fn(y_pred, y_train)

    # 3. Zero grad of the optimizer
    optimizer.zero_grad()

    # 4. Loss backwards
    loss.backward()

    # 5. Progress the optimizer
    optimizer.step()

    ### Testing

    # Put the model in evaluation mode
    model_0.eval()

    with torch.inference_mode():
      # 1. Forward pass on test data
      test_pred = model_0(X_test)

      # 2. Caculate loss on test data
      test_loss = loss_fn(test_pred, y_test.type(torch.float)) # predictions come in torch.float datatype, so comparisons need to be done with tensors of the same type

      # Print out what's happening
      if epoch % 10 == 0:
            epoch_count.append(epoch)
            train_loss_values.append(loss.detach().numpy())
            test_loss_values.append(test_loss.detach().numpy())
            print(f"Epoch: {epoch} | MAE Train Loss: {loss} | MAE Test Loss: {test_loss} ")
# %%
# Plot the loss curves
plt.plot(epoch_count, train_loss_values, label="Train loss")
plt.plot(epoch_count, test_loss_values, label="Test loss")
plt.title("Training and test loss curves")
plt.ylabel("Loss")
plt.xlabel("Epochs")
plt.legend();
# %%
# Find our model's learned parameters
print("The model learned the following values for weights and bias:")
print(model_0.state_dict())
print("\nAnd the original values for weights and bias are:")
print(f"weights: {weight}, bias: {bias}")
# %%
# 1. Set the model in evaluation mode
model_0.eval()

# 2. Setup the inference mode context manager
with torch.inference_mode():
  # 3. Make sure the calculations are done with the model and data on the same device
  # in our case, we haven't setup device-agnostic code yet so our data and model are
  # on the CPU by default.
  # model_0.to(device)
  # X_test = X_test.to(device)
  y_preds = model_0(X_test)
y_preds
# %%
plot_predictions(predictions=y_preds)
# %%
from pathlib import Path

# 1. Create models directory 
MODEL_PATH = Path("models")
MODEL_PATH.mkdir(parents=True, exist_ok=True)

# 2. Create model save path 
MODEL_NAME = "01_pytorch_workflow_model_0.pth"
MODEL_SAVE_PATH = MODEL_PATH / MODEL_NAME

# 3. Save the model state dict 
print(f"Saving model to: {MODEL_SAVE_PATH}")
torch.save(obj=model_0.state_dict(), # only saving the state_dict() only saves the models learned parameters
           f=MODEL_SAVE_PATH)
# %%
# Check the saved file path
# !ls -l models/01_pytorch_workflow_model_0.pth  # port: a shell command (the test checks the file)
# %%
# Instantiate a new instance of our model (this will be instantiated with random weights)
loaded_model_0 = LinearRegressionModel()

# Load the state_dict of our saved model (this will update the new instance of our model with trained weights)
loaded_model_0.load_state_dict(torch.load(f=MODEL_SAVE_PATH))
# %%
# 1. Put the loaded model into evaluation mode
loaded_model_0.eval()

# 2. Use the inference mode context manager to make predictions
with torch.inference_mode():
    loaded_model_preds = loaded_model_0(X_test) # perform a forward pass on the test data with the loaded model
# %%
# Compare previous model predictions with loaded model predictions (these should be the same)
y_preds == loaded_model_preds
# %%
# Import PyTorch and matplotlib
import torch
from torch import nn # nn contains all of PyTorch's building blocks for neural networks
import matplotlib.pyplot as plt

# Check PyTorch version
torch.__version__
# %%
# Setup device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Using device: {device}")
# %%
# Create weight and bias
weight = 0.7
bias = 0.3

# Create range values
start = 0
end = 1
step = 0.02

# Create X and y (features and labels)
X = torch.arange(start, end, step).unsqueeze(dim=1) # without unsqueeze, errors will happen later on (shapes within linear layers)
y = weight * X + bias 
X[:10], y[:10]
# %%
# Split data
train_split = int(0.8 * len(X))
X_train, y_train = X[:train_split], y[:train_split]
X_test, y_test = X[train_split:], y[train_split:]

len(X_train), len(y_train), len(X_test), len(y_test)
# %%
# Note: If you've reset your runtime, this function won't work, 
# you'll have to rerun the cell above where it's instantiated.
plot_predictions(X_train, y_train, X_test, y_test)
# %%
# Subclass nn.Module to make our model
class LinearRegressionModelV2(nn.Module):
    def __init__(self):
        super().__init__()
        # Use nn.Linear() for creating the model parameters
        self.linear_layer = nn.Linear(in_features=1, 
                                      out_features=1)
    
    # Define the forward computation (input data x flows through nn.Linear())
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_layer(x)

# Set the manual seed when creating the model (this isn't always needed but is used for demonstrative purposes, try commenting it out and seeing what happens)
torch.manual_seed(42)
model_1 = LinearRegressionModelV2()
model_1, model_1.state_dict()
# %%
# Check model device
next(model_1.parameters()).device
# %%
# Set model to GPU if it's available, otherwise it'll default to CPU
model_1.to(device) # the device variable was set above to be "cuda" if available or "cpu" if not
next(model_1.parameters()).device
# %%
# Create loss function
loss_fn = nn.L1Loss()

# Create optimizer
optimizer = torch.optim.SGD(params=model_1.parameters(), # optimize newly created model's parameters
                            lr=0.01)
# %%
torch.manual_seed(42)

# Set the number of epochs 
epochs = 200  # port: 1000 epochs shrunk (a shared CPU)

# Put data on the available device
# Without this, error will happen (not all model/data on device)
X_train = X_train.to(device)
X_test = X_test.to(device)
y_train = y_train.to(device)
y_test = y_test.to(device)

for epoch in range(epochs):
    ### Training
    model_1.train() # train mode is on by default after construction

    # 1. Forward pass
    y_pred = model_1(X_train)

    # 2. Calculate loss
    loss = loss_fn(y_pred, y_train)

    # 3. Zero grad optimizer
    optimizer.zero_grad()

    # 4. Loss backward
    loss.backward()

    # 5. Step the optimizer
    optimizer.step()

    ### Testing
    model_1.eval() # put the model in evaluation mode for testing (inference)
    # 1. Forward pass
    with torch.inference_mode():
        test_pred = model_1(X_test)
    
        # 2. Calculate the loss
        test_loss = loss_fn(test_pred, y_test)

    if epoch % 100 == 0:
        print(f"Epoch: {epoch} | Train loss: {loss} | Test loss: {test_loss}")
# %%
# Find our model's learned parameters
from pprint import pprint # pprint = pretty print, see: https://docs.python.org/3/library/pprint.html 
print("The model learned the following values for weights and bias:")
pprint(model_1.state_dict())
print("\nAnd the original values for weights and bias are:")
print(f"weights: {weight}, bias: {bias}")
# %%
# Turn model into evaluation mode
model_1.eval()

# Make predictions on the test data
with torch.inference_mode():
    y_preds = model_1(X_test)
y_preds
# %%
# plot_predictions(predictions=y_preds) # -> won't work... data not on CPU

# Put data on the CPU and plot it
plot_predictions(predictions=y_preds.cpu())
# %%
from pathlib import Path

# 1. Create models directory 
MODEL_PATH = Path("models")
MODEL_PATH.mkdir(parents=True, exist_ok=True)

# 2. Create model save path 
MODEL_NAME = "01_pytorch_workflow_model_1.pth"
MODEL_SAVE_PATH = MODEL_PATH / MODEL_NAME

# 3. Save the model state dict 
print(f"Saving model to: {MODEL_SAVE_PATH}")
torch.save(obj=model_1.state_dict(), # only saving the state_dict() only saves the models learned parameters
           f=MODEL_SAVE_PATH)
# %%
# Instantiate a fresh instance of LinearRegressionModelV2
loaded_model_1 = LinearRegressionModelV2()

# Load model state dict 
loaded_model_1.load_state_dict(torch.load(MODEL_SAVE_PATH))

# Put model to target device (if your data is on GPU, model will have to be on GPU to make predictions)
loaded_model_1.to(device)

print(f"Loaded model:\n{loaded_model_1}")
print(f"Model on device:\n{next(loaded_model_1.parameters()).device}")
# %%
# Evaluate loaded model
loaded_model_1.eval()
with torch.inference_mode():
    loaded_model_1_preds = loaded_model_1(X_test)
y_preds == loaded_model_1_preds

'''


NB_02_CLASSIFICATION = r'''
from sklearn.datasets import make_circles


# Make 1000 samples 
n_samples = 1000

# Create circles
X, y = make_circles(n_samples,
                    noise=0.03, # a little bit of noise to the dots
                    random_state=42) # keep random state so we get the same values
# %%
print(f"First 5 X features:\n{X[:5]}")
print(f"\nFirst 5 y labels:\n{y[:5]}")
# %%
# Make DataFrame of circle data
import pandas as pd
circles = pd.DataFrame({"X1": X[:, 0],
    "X2": X[:, 1],
    "label": y
})
circles.head(10)
# %%
# Check different labels
circles.label.value_counts()
# %%
# Visualize with a plot
import matplotlib.pyplot as plt
plt.scatter(x=X[:, 0], 
            y=X[:, 1], 
            c=y, 
            cmap=plt.cm.RdYlBu);
# %%
# Check the shapes of our features and labels
X.shape, y.shape
# %%
# View the first example of features and labels
X_sample = X[0]
y_sample = y[0]
print(f"Values for one sample of X: {X_sample} and the same for y: {y_sample}")
print(f"Shapes for one sample of X: {X_sample.shape} and the same for y: {y_sample.shape}")
# %%
# Turn data into tensors
# Otherwise this causes issues with computations later on
import torch
X = torch.from_numpy(X).type(torch.float)
y = torch.from_numpy(y).type(torch.float)

# View the first five samples
X[:5], y[:5]
# %%
# Split data into train and test sets
from sklearn.model_selection import train_test_split

X_train, X_test, y_train, y_test = train_test_split(X, 
                                                    y, 
                                                    test_size=0.2, # 20% test, 80% train
                                                    random_state=42) # make the random split reproducible

len(X_train), len(X_test), len(y_train), len(y_test)
# %%
# Standard PyTorch imports
import torch
from torch import nn

# Make device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
device
# %%
# 1. Construct a model class that subclasses nn.Module
class CircleModelV0(nn.Module):
    def __init__(self):
        super().__init__()
        # 2. Create 2 nn.Linear layers capable of handling X and y input and output shapes
        self.layer_1 = nn.Linear(in_features=2, out_features=5) # takes in 2 features (X), produces 5 features
        self.layer_2 = nn.Linear(in_features=5, out_features=1) # takes in 5 features, produces 1 feature (y)
    
    # 3. Define a forward method containing the forward pass computation
    def forward(self, x):
        # Return the output of layer_2, a single feature, the same shape as y
        return self.layer_2(self.layer_1(x)) # computation goes through layer_1 first then the output of layer_1 goes through layer_2

# 4. Create an instance of the model and send it to target device
model_0 = CircleModelV0().to(device)
model_0
# %%
# Replicate CircleModelV0 with nn.Sequential
model_0 = nn.Sequential(
    nn.Linear(in_features=2, out_features=5),
    nn.Linear(in_features=5, out_features=1)
).to(device)

model_0
# %%
# Make predictions with the model
untrained_preds = model_0(X_test.to(device))
print(f"Length of predictions: {len(untrained_preds)}, Shape: {untrained_preds.shape}")
print(f"Length of test samples: {len(y_test)}, Shape: {y_test.shape}")
print(f"\nFirst 10 predictions:\n{untrained_preds[:10]}")
print(f"\nFirst 10 test labels:\n{y_test[:10]}")
# %%
# Create a loss function
# loss_fn = nn.BCELoss() # BCELoss = no sigmoid built-in
loss_fn = nn.BCEWithLogitsLoss() # BCEWithLogitsLoss = sigmoid built-in

# Create an optimizer
optimizer = torch.optim.SGD(params=model_0.parameters(), 
                            lr=0.1)
# %%
# Calculate accuracy (a classification metric)
def accuracy_fn(y_true, y_pred):
    correct = torch.eq(y_true, y_pred).sum().item() # torch.eq() calculates where two tensors are equal
    acc = (correct / len(y_pred)) * 100 
    return acc
# %%
# View the frist 5 outputs of the forward pass on the test data
y_logits = model_0(X_test.to(device))[:5]
y_logits
# %%
# Use sigmoid on model logits
y_pred_probs = torch.sigmoid(y_logits)
y_pred_probs
# %%
# Find the predicted labels (round the prediction probabilities)
y_preds = torch.round(y_pred_probs)

# In full
y_pred_labels = torch.round(torch.sigmoid(model_0(X_test.to(device))[:5]))

# Check for equality
print(torch.eq(y_preds.squeeze(), y_pred_labels.squeeze()))

# Get rid of extra dimension
y_preds.squeeze()
# %%
y_test[:5]
# %%
torch.manual_seed(42)

# Set the number of epochs
epochs = 100

# Put data to target device
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)

# Build training and evaluation loop
for epoch in range(epochs):
    ### Training
    model_0.train()

    # 1. Forward pass (model outputs raw logits)
    y_logits = model_0(X_train).squeeze() # squeeze to remove extra `1` dimensions, this won't work unless model and data are on same device 
    y_pred = torch.round(torch.sigmoid(y_logits)) # turn logits -> pred probs -> pred labls
  
    # 2. Calculate loss/accuracy
    # loss = loss_fn(torch.sigmoid(y_logits), # Using nn.BCELoss you need torch.sigmoid()
    #                y_train) 
    loss = loss_fn(y_logits, # Using nn.BCEWithLogitsLoss works with raw logits
                   y_train) 
    acc = accuracy_fn(y_true=y_train, 
                      y_pred=y_pred) 

    # 3. Optimizer zero grad
    optimizer.zero_grad()

    # 4. Loss backwards
    loss.backward()

    # 5. Optimizer step
    optimizer.step()

    ### Testing
    model_0.eval()
    with torch.inference_mode():
        # 1. Forward pass
        test_logits = model_0(X_test).squeeze() 
        test_pred = torch.round(torch.sigmoid(test_logits))
        # 2. Caculate loss/accuracy
        test_loss = loss_fn(test_logits,
                            y_test)
        test_acc = accuracy_fn(y_true=y_test,
                               y_pred=test_pred)

    # Print out what's happening every 10 epochs
    if epoch % 10 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Accuracy: {acc:.2f}% | Test loss: {test_loss:.5f}, Test acc: {test_acc:.2f}%")
# %%
import requests
from pathlib import Path 

# Download helper functions from Learn PyTorch repo (if not already downloaded)
if Path("helper_functions.py").is_file():
  print("helper_functions.py already exists, skipping download")
else:
  print("Downloading helper_functions.py")
  request = requests.get("https://raw.githubusercontent.com/mrdbourke/pytorch-deep-learning/main/helper_functions.py")
  with open("helper_functions.py", "wb") as f:
    f.write(request.content)

from helper_functions import plot_predictions, plot_decision_boundary
# %%
# Plot decision boundaries for training and test sets
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_0, X_train, y_train)
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_0, X_test, y_test)
# %%
class CircleModelV1(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(in_features=2, out_features=10)
        self.layer_2 = nn.Linear(in_features=10, out_features=10) # extra layer
        self.layer_3 = nn.Linear(in_features=10, out_features=1)
        
    def forward(self, x): # note: always make sure forward is spelt correctly!
        # Creating a model like this is the same as below, though below
        # generally benefits from speedups where possible.
        # z = self.layer_1(x)
        # z = self.layer_2(z)
        # z = self.layer_3(z)
        # return z
        return self.layer_3(self.layer_2(self.layer_1(x)))

model_1 = CircleModelV1().to(device)
model_1
# %%
# loss_fn = nn.BCELoss() # Requires sigmoid on input
loss_fn = nn.BCEWithLogitsLoss() # Does not require sigmoid on input
optimizer = torch.optim.SGD(model_1.parameters(), lr=0.1)
# %%
torch.manual_seed(42)

epochs = 200 # Train for longer  # port: 1000 epochs shrunk (a shared CPU)

# Put data to target device
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)

for epoch in range(epochs):
    ### Training
    # 1. Forward pass
    y_logits = model_1(X_train).squeeze()
    y_pred = torch.round(torch.sigmoid(y_logits)) # logits -> prediction probabilities -> prediction labels

    # 2. Calculate loss/accuracy
    loss = loss_fn(y_logits, y_train)
    acc = accuracy_fn(y_true=y_train, 
                      y_pred=y_pred)

    # 3. Optimizer zero grad
    optimizer.zero_grad()

    # 4. Loss backwards
    loss.backward()

    # 5. Optimizer step
    optimizer.step()

    ### Testing
    model_1.eval()
    with torch.inference_mode():
        # 1. Forward pass
        test_logits = model_1(X_test).squeeze() 
        test_pred = torch.round(torch.sigmoid(test_logits))
        # 2. Caculate loss/accuracy
        test_loss = loss_fn(test_logits,
                            y_test)
        test_acc = accuracy_fn(y_true=y_test,
                               y_pred=test_pred)

    # Print out what's happening every 10 epochs
    if epoch % 100 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Accuracy: {acc:.2f}% | Test loss: {test_loss:.5f}, Test acc: {test_acc:.2f}%")
# %%
# Plot decision boundaries for training and test sets
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_1, X_train, y_train)
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_1, X_test, y_test)
# %%
# Create some data (same as notebook 01)
weight = 0.7
bias = 0.3
start = 0
end = 1
step = 0.01

# Create data
X_regression = torch.arange(start, end, step).unsqueeze(dim=1)
y_regression = weight * X_regression + bias # linear regression formula

# Check the data
print(len(X_regression))
X_regression[:5], y_regression[:5]
# %%
# Create train and test splits
train_split = int(0.8 * len(X_regression)) # 80% of data used for training set
X_train_regression, y_train_regression = X_regression[:train_split], y_regression[:train_split]
X_test_regression, y_test_regression = X_regression[train_split:], y_regression[train_split:]

# Check the lengths of each split
print(len(X_train_regression), 
    len(y_train_regression), 
    len(X_test_regression), 
    len(y_test_regression))
# %%
plot_predictions(train_data=X_train_regression,
    train_labels=y_train_regression,
    test_data=X_test_regression,
    test_labels=y_test_regression
);
# %%
# Same architecture as model_1 (but using nn.Sequential)
model_2 = nn.Sequential(
    nn.Linear(in_features=1, out_features=10),
    nn.Linear(in_features=10, out_features=10),
    nn.Linear(in_features=10, out_features=1)
).to(device)

model_2
# %%
# Loss and optimizer
loss_fn = nn.L1Loss()
optimizer = torch.optim.SGD(model_2.parameters(), lr=0.1)
# %%
# Train the model
torch.manual_seed(42)

# Set the number of epochs
epochs = 200  # port: 1000 epochs shrunk (a shared CPU)

# Put data to target device
X_train_regression, y_train_regression = X_train_regression.to(device), y_train_regression.to(device)
X_test_regression, y_test_regression = X_test_regression.to(device), y_test_regression.to(device)

for epoch in range(epochs):
    ### Training 
    # 1. Forward pass
    y_pred = model_2(X_train_regression)
    
    # 2. Calculate loss (no accuracy since it's a regression problem, not classification)
    loss = loss_fn(y_pred, y_train_regression)

    # 3. Optimizer zero grad
    optimizer.zero_grad()

    # 4. Loss backwards
    loss.backward()

    # 5. Optimizer step
    optimizer.step()

    ### Testing
    model_2.eval()
    with torch.inference_mode():
      # 1. Forward pass
      test_pred = model_2(X_test_regression)
      # 2. Calculate the loss 
      test_loss = loss_fn(test_pred, y_test_regression)

    # Print out what's happening
    if epoch % 100 == 0: 
        print(f"Epoch: {epoch} | Train loss: {loss:.5f}, Test loss: {test_loss:.5f}")
# %%
# Turn on evaluation mode
model_2.eval()

# Make predictions (inference)
with torch.inference_mode():
    y_preds = model_2(X_test_regression)

# Plot data and predictions with data on the CPU (matplotlib can't handle data on the GPU)
# (try removing .cpu() from one of the below and see what happens)
plot_predictions(train_data=X_train_regression.cpu(),
                 train_labels=y_train_regression.cpu(),
                 test_data=X_test_regression.cpu(),
                 test_labels=y_test_regression.cpu(),
                 predictions=y_preds.cpu());
# %%
# Make and plot data
import matplotlib.pyplot as plt
from sklearn.datasets import make_circles

n_samples = 1000

X, y = make_circles(n_samples=1000,
    noise=0.03,
    random_state=42,
)

plt.scatter(X[:, 0], X[:, 1], c=y, cmap=plt.cm.RdBu);
# %%
# Convert to tensors and split into train and test sets
import torch
from sklearn.model_selection import train_test_split

# Turn data into tensors
X = torch.from_numpy(X).type(torch.float)
y = torch.from_numpy(y).type(torch.float)

# Split into train and test sets
X_train, X_test, y_train, y_test = train_test_split(X, 
                                                    y, 
                                                    test_size=0.2,
                                                    random_state=42
)

X_train[:5], y_train[:5]
# %%
# Build model with non-linear activation function
from torch import nn
class CircleModelV2(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = nn.Linear(in_features=2, out_features=10)
        self.layer_2 = nn.Linear(in_features=10, out_features=10)
        self.layer_3 = nn.Linear(in_features=10, out_features=1)
        self.relu = nn.ReLU() # <- add in ReLU activation function
        # Can also put sigmoid in the model 
        # This would mean you don't need to use it on the predictions
        # self.sigmoid = nn.Sigmoid()

    def forward(self, x):
      # Intersperse the ReLU activation function between layers
       return self.layer_3(self.relu(self.layer_2(self.relu(self.layer_1(x)))))

model_3 = CircleModelV2().to(device)
print(model_3)
# %%
# Setup loss and optimizer 
loss_fn = nn.BCEWithLogitsLoss()
optimizer = torch.optim.SGD(model_3.parameters(), lr=0.1)
# %%
# Fit the model
torch.manual_seed(42)
epochs = 200  # port: 1000 epochs shrunk (a shared CPU)

# Put all data on target device
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)

for epoch in range(epochs):
    # 1. Forward pass
    y_logits = model_3(X_train).squeeze()
    y_pred = torch.round(torch.sigmoid(y_logits)) # logits -> prediction probabilities -> prediction labels
    
    # 2. Calculate loss and accuracy
    loss = loss_fn(y_logits, y_train) # BCEWithLogitsLoss calculates loss using logits
    acc = accuracy_fn(y_true=y_train, 
                      y_pred=y_pred)
    
    # 3. Optimizer zero grad
    optimizer.zero_grad()

    # 4. Loss backward
    loss.backward()

    # 5. Optimizer step
    optimizer.step()

    ### Testing
    model_3.eval()
    with torch.inference_mode():
      # 1. Forward pass
      test_logits = model_3(X_test).squeeze()
      test_pred = torch.round(torch.sigmoid(test_logits)) # logits -> prediction probabilities -> prediction labels
      # 2. Calculate loss and accuracy
      test_loss = loss_fn(test_logits, y_test)
      test_acc = accuracy_fn(y_true=y_test,
                             y_pred=test_pred)

    # Print out what's happening
    if epoch % 100 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Accuracy: {acc:.2f}% | Test Loss: {test_loss:.5f}, Test Accuracy: {test_acc:.2f}%")
# %%
# Make predictions
model_3.eval()
with torch.inference_mode():
    y_preds = torch.round(torch.sigmoid(model_3(X_test))).squeeze()
y_preds[:10], y[:10] # want preds in same format as truth labels
# %%
# Plot decision boundaries for training and test sets
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_1, X_train, y_train) # model_1 = no non-linearity
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_3, X_test, y_test) # model_3 = has non-linearity
# %%
# Create a toy tensor (similar to the data going into our model(s))
A = torch.arange(-10, 10, 1, dtype=torch.float32)
A
# %%
# Visualize the toy tensor
plt.plot(A);
# %%
# Create ReLU function by hand 
def relu(x):
  return torch.maximum(torch.tensor(0), x) # inputs must be tensors

# Pass toy tensor through ReLU function
relu(A)
# %%
# Plot ReLU activated toy tensor
plt.plot(relu(A));
# %%
# Create a custom sigmoid function
def sigmoid(x):
  return 1 / (1 + torch.exp(-x))

# Test custom sigmoid on toy tensor
sigmoid(A)
# %%
# Plot sigmoid activated toy tensor
plt.plot(sigmoid(A));
# %%
# Import dependencies
import torch
import matplotlib.pyplot as plt
from sklearn.datasets import make_blobs
from sklearn.model_selection import train_test_split

# Set the hyperparameters for data creation
NUM_CLASSES = 4
NUM_FEATURES = 2
RANDOM_SEED = 42

# 1. Create multi-class data
X_blob, y_blob = make_blobs(n_samples=1000,
    n_features=NUM_FEATURES, # X features
    centers=NUM_CLASSES, # y labels 
    cluster_std=1.5, # give the clusters a little shake up (try changing this to 1.0, the default)
    random_state=RANDOM_SEED
)

# 2. Turn data into tensors
X_blob = torch.from_numpy(X_blob).type(torch.float)
y_blob = torch.from_numpy(y_blob).type(torch.LongTensor)
print(X_blob[:5], y_blob[:5])

# 3. Split into train and test sets
X_blob_train, X_blob_test, y_blob_train, y_blob_test = train_test_split(X_blob,
    y_blob,
    test_size=0.2,
    random_state=RANDOM_SEED
)

# 4. Plot data
plt.figure(figsize=(10, 7))
plt.scatter(X_blob[:, 0], X_blob[:, 1], c=y_blob, cmap=plt.cm.RdYlBu);
# %%
# Create device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
device
# %%
from torch import nn

# Build model
class BlobModel(nn.Module):
    def __init__(self, input_features, output_features, hidden_units=8):
        """Initializes all required hyperparameters for a multi-class classification model.

        Args:
            input_features (int): Number of input features to the model.
            out_features (int): Number of output features of the model
              (how many classes there are).
            hidden_units (int): Number of hidden units between layers, default 8.
        """
        super().__init__()
        self.linear_layer_stack = nn.Sequential(
            nn.Linear(in_features=input_features, out_features=hidden_units),
            # nn.ReLU(), # <- does our dataset require non-linear layers? (try uncommenting and see if the results change)
            nn.Linear(in_features=hidden_units, out_features=hidden_units),
            # nn.ReLU(), # <- does our dataset require non-linear layers? (try uncommenting and see if the results change)
            nn.Linear(in_features=hidden_units, out_features=output_features), # how many classes are there?
        )
    
    def forward(self, x):
        return self.linear_layer_stack(x)

# Create an instance of BlobModel and send it to the target device
model_4 = BlobModel(input_features=NUM_FEATURES, 
                    output_features=NUM_CLASSES, 
                    hidden_units=8).to(device)
model_4
# %%
# Create loss and optimizer
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model_4.parameters(), 
                            lr=0.1) # exercise: try changing the learning rate here and seeing what happens to the model's performance
# %%
# Perform a single forward pass on the data (we'll need to put it to the target device for it to work)
model_4(X_blob_train.to(device))[:5]
# %%
# How many elements in a single prediction sample?
model_4(X_blob_train.to(device))[0].shape, NUM_CLASSES
# %%
# Make prediction logits with model
y_logits = model_4(X_blob_test.to(device))

# Perform softmax calculation on logits across dimension 1 to get prediction probabilities
y_pred_probs = torch.softmax(y_logits, dim=1) 
print(y_logits[:5])
print(y_pred_probs[:5])
# %%
# Sum the first sample output of the softmax activation function 
torch.sum(y_pred_probs[0])
# %%
# Which class does the model think is *most* likely at the index 0 sample?
print(y_pred_probs[0])
print(torch.argmax(y_pred_probs[0]))
# %%
# Fit the model
torch.manual_seed(42)

# Set number of epochs
epochs = 100

# Put data to target device
X_blob_train, y_blob_train = X_blob_train.to(device), y_blob_train.to(device)
X_blob_test, y_blob_test = X_blob_test.to(device), y_blob_test.to(device)

for epoch in range(epochs):
    ### Training
    model_4.train()

    # 1. Forward pass
    y_logits = model_4(X_blob_train) # model outputs raw logits 
    y_pred = torch.softmax(y_logits, dim=1).argmax(dim=1) # go from logits -> prediction probabilities -> prediction labels
    # print(y_logits)
    # 2. Calculate loss and accuracy
    loss = loss_fn(y_logits, y_blob_train) 
    acc = accuracy_fn(y_true=y_blob_train,
                      y_pred=y_pred)

    # 3. Optimizer zero grad
    optimizer.zero_grad()

    # 4. Loss backwards
    loss.backward()

    # 5. Optimizer step
    optimizer.step()

    ### Testing
    model_4.eval()
    with torch.inference_mode():
      # 1. Forward pass
      test_logits = model_4(X_blob_test)
      test_pred = torch.softmax(test_logits, dim=1).argmax(dim=1)
      # 2. Calculate test loss and accuracy
      test_loss = loss_fn(test_logits, y_blob_test)
      test_acc = accuracy_fn(y_true=y_blob_test,
                             y_pred=test_pred)

    # Print out what's happening
    if epoch % 10 == 0:
        print(f"Epoch: {epoch} | Loss: {loss:.5f}, Acc: {acc:.2f}% | Test Loss: {test_loss:.5f}, Test Acc: {test_acc:.2f}%")
# %%
# Make predictions
model_4.eval()
with torch.inference_mode():
    y_logits = model_4(X_blob_test)

# View the first 10 predictions
y_logits[:10]
# %%
# Turn predicted logits in prediction probabilities
y_pred_probs = torch.softmax(y_logits, dim=1)

# Turn prediction probabilities into prediction labels
y_preds = y_pred_probs.argmax(dim=1)

# Compare first 10 model preds and test labels
print(f"Predictions: {y_preds[:10]}\nLabels: {y_blob_test[:10]}")
print(f"Test accuracy: {accuracy_fn(y_true=y_blob_test, y_pred=y_preds)}%")
# %%
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_4, X_blob_train, y_blob_train)
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_4, X_blob_test, y_blob_test)
# %%
try:
    from torchmetrics import Accuracy
except:
    pass  # !pip install torchmetrics==0.9.3  # port: a shell command (the test's torchmetrics stands in)
    from torchmetrics import Accuracy

# Setup metric and make sure it's on the target device
torchmetrics_accuracy = Accuracy(task='multiclass', num_classes=4).to(device)

# Calculate accuracy
torchmetrics_accuracy(y_preds, y_blob_test)

'''


SOL_00_FUNDAMENTALS = r"""
# No code solution (reading)
# %%
# Import torch
import torch 

# Create random tensor
X = torch.rand(size=(7, 7))
X, X.shape
# %%
# Create another random tensor
Y = torch.rand(size=(1, 7))
# Z = torch.matmul(X, Y) # will error because of shape issues
Z = torch.matmul(X, Y.T) # no error because of transpose
Z, Z.shape
# %%
# Set manual seed
torch.manual_seed(0)

# Create two random tensors
X = torch.rand(size=(7, 7))
Y = torch.rand(size=(1, 7))

# Matrix multiply tensors
Z = torch.matmul(X, Y.T)
Z, Z.shape
# %%
# Set random seed on the GPU
torch.cuda.manual_seed(1234)
# %%
# Set random seed
torch.manual_seed(1234)

# Check for access to GPU
device = "cuda" if torch.cuda.is_available() else "cpu"
print(f"Device: {device}")

# Create two random tensors on GPU
tensor_A = torch.rand(size=(2,3)).to(device)
tensor_B = torch.rand(size=(2,3)).to(device)
tensor_A, tensor_B
# %%
# Perform matmul on tensor_A and tensor_B
# tensor_C = torch.matmul(tensor_A, tensor_B) # won't work because of shape error
tensor_C = torch.matmul(tensor_A, tensor_B.T)
tensor_C, tensor_C.shape
# %%
# Find max
max = torch.max(tensor_C)

# Find min
min = torch.min(tensor_C)
max, min
# %%
# Find arg max
arg_max = torch.argmax(tensor_C)

# Find arg min
arg_min = torch.argmin(tensor_C)
arg_max, arg_min
# %%
# Set seed
torch.manual_seed(7)

# Create random tensor
tensor_D = torch.rand(size=(1, 1, 1, 10))

# Remove single dimensions
tensor_E = tensor_D.squeeze()

# Print out tensors
print(tensor_D, tensor_D.shape)
print(tensor_E, tensor_E.shape)

"""


SOL_01_WORKFLOW = r"""
# Show when last updated (for documentation purposes)
import datetime
print(f"Last updated: {datetime.datetime.now()}")
# %%
# Import necessary libraries
import torch
import matplotlib.pyplot as plt
from torch import nn
# %%
# Setup device-agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
device
# %%
# Create the data parameters
weight = 0.3
bias = 0.9
# Make X and y using linear regression feature
X = torch.arange(0,1,0.01).unsqueeze(dim = 1)
y = weight * X + bias
print(f"Number of X samples: {len(X)}")
print(f"Number of y samples: {len(y)}")
print(f"First 10 X & y samples:\nX: {X[:10]}\ny: {y[:10]}")
# %%
# Split the data into training and testing
train_split = int(len(X) * 0.8)
X_train = X[:train_split]
y_train = y[:train_split]
X_test = X[train_split:]
y_test = y[train_split:]
len(X_train),len(y_train),len(X_test),len(y_test)
# %%
# Plot the training and testing data 
def plot_predictions(train_data = X_train,
                 train_labels = y_train,
                 test_data = X_test,
                 test_labels = y_test,
                 predictions = None):
  plt.figure(figsize = (10,7))
  plt.scatter(train_data,train_labels,c = 'b',s = 4,label = "Training data")
  plt.scatter(test_data,test_labels,c = 'g',s = 4,label = "Test data")

  if predictions is not None:
    plt.scatter(test_data,predictions,c = 'r',s = 4,label = "Predictions")
  plt.legend(prop = {"size" : 14})
plot_predictions()
# %%
# Create PyTorch linear regression model by subclassing nn.Module
## Option 1
class LinearRegressionModel(nn.Module):
  def __init__(self):
    super().__init__()
    self.weight = nn.Parameter(data=torch.randn(1, 
                                              requires_grad=True,
                                              dtype=torch.float
                                              ))
    
    self.bias = nn.Parameter(data=torch.randn(1, 
                                              requires_grad=True,
                                              dtype=torch.float
                                              ))

  def forward(self, x):
    return self.weight * x + self.bias

# ## Option 2
# class LinearRegressionModel(nn.Module):
#   def __init__(self):
#     super().__init__()
#     self.linear_layer = nn.Linear(in_features = 1,
#                                   out_features = 1)
#   def forward(self,x : torch.Tensor) -> torch.Tensor:
#     return self.linear_layer(x)
  
torch.manual_seed(42)
model_1 = LinearRegressionModel()
model_1,model_1.state_dict()
# %%
next(model_1.parameters()).device
# %%
# Instantiate the model and put it to the target device
model_1.to(device)
list(model_1.parameters())
# %%
# Create the loss function and optimizer
loss_fn = nn.L1Loss()
optimizer = torch.optim.SGD(params = model_1.parameters(),
                            lr = 0.01)
# %%
# Training loop
# Train model for 300 epochs
torch.manual_seed(42)

epochs = 100  # port: 300 epochs shrunk (a shared CPU)

# Send data to target device
X_train = X_train.to(device)
X_test = X_test.to(device)
y_train = y_train.to(device)
y_test = y_test.to(device)

for epoch in range(epochs):
  ### Training

  # Put model in train mode
  model_1.train()

  # 1. Forward pass
  y_pred = model_1(X_train)

  # 2. Calculate loss
  loss = loss_fn(y_pred,y_train)

  # 3. Zero gradients
  optimizer.zero_grad()

  # 4. Backpropagation
  loss.backward()

  # 5. Step the optimizer
  optimizer.step()

  ### Perform testing every 20 epochs
  if epoch % 20 == 0:
    # Put model in evaluation mode and setup inference context 
    model_1.eval()
    with torch.inference_mode():
      # 1. Forward pass
      y_preds = model_1(X_test)
      # 2. Calculate test loss
      test_loss = loss_fn(y_preds,y_test)
      # Print out what's happening
      print(f"Epoch: {epoch} | Train loss: {loss:.3f} | Test loss: {test_loss:.3f}")
# %%
# Make predictions with the model
model_1.eval()

with torch.inference_mode():
  y_preds = model_1(X_test)
y_preds
# %%
y_preds.cpu()
# %%
# Plot the predictions (these may need to be on a specific device)
plot_predictions(predictions = y_preds.cpu())
# %%
from pathlib import Path

# 1. Create models directory 
MODEL_PATH = Path("models")
MODEL_PATH.mkdir(parents = True,exist_ok = True)
# 2. Create model save path 
MODEL_NAME = "01_pytorch_model"
MODEL_SAVE_PATH = MODEL_PATH / MODEL_NAME 
# 3. Save the model state dict
print(f"Saving model to {MODEL_SAVE_PATH}")
torch.save(obj = model_1.state_dict(),f = MODEL_SAVE_PATH)
# %%
# Create new instance of model and load saved state dict (make sure to put it on the target device)
loaded_model = LinearRegressionModel()
loaded_model.load_state_dict(torch.load(f = MODEL_SAVE_PATH))
loaded_model.to(device)
# %%
# Make predictions with loaded model and compare them to the previous
y_preds_new = loaded_model(X_test)
y_preds == y_preds_new
# %%
loaded_model.state_dict()

"""


SOL_02_CLASSIFICATION = r"""
# Check for GPU
# !nvidia-smi  # port: a shell command (no GPU here)
# %%
# Import torch
import torch

# Setup device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
device
# %%
from sklearn.datasets import make_moons

NUM_SAMPLES = 1000
RANDOM_SEED = 42

X, y = make_moons(n_samples=NUM_SAMPLES,
                  noise=0.07,
                  random_state=RANDOM_SEED)

X[:10], y[:10]
# %%
# Turn data into a DataFrame
import pandas as pd
data_df = pd.DataFrame({"X0": X[:, 0],
                        "X1": X[:, 1],
                        "y": y})
data_df.head()
# %%
# Visualize the data on a plot
import matplotlib.pyplot as plt
plt.scatter(X[:, 0], X[:, 1], c=y, cmap=plt.cm.RdYlBu);
# %%
# Turn data into tensors
X = torch.tensor(X, dtype=torch.float)
y = torch.tensor(y, dtype=torch.float)

# Split the data into train and test sets
from sklearn.model_selection import train_test_split
X_train, X_test, y_train, y_test = train_test_split(X, 
                                                    y, 
                                                    test_size=0.2, 
                                                    random_state=RANDOM_SEED)

len(X_train), len(X_test), len(y_train), len(y_test)
# %%
import torch
from torch import nn

class MoonModelV0(nn.Module):
    def __init__(self, in_features, out_features, hidden_units):
        super().__init__()
        
        self.layer1 = nn.Linear(in_features=in_features, 
                                 out_features=hidden_units)
        self.layer2 = nn.Linear(in_features=hidden_units, 
                                 out_features=hidden_units)
        self.layer3 = nn.Linear(in_features=hidden_units,
                                out_features=out_features)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.layer3(self.relu(self.layer2(self.relu(self.layer1(x)))))

model_0 = MoonModelV0(in_features=2,
                      out_features=1,
                      hidden_units=10).to(device)
model_0
# %%
model_0.state_dict()
# %%
loss_fn = nn.BCEWithLogitsLoss() # sigmoid layer built-in
# loss_fn = nn.BCELoss() # requires sigmoid layer
optimizer = torch.optim.SGD(params=model_0.parameters(), # parameters of model to optimize 
                            lr=0.1) # learning rate
# %%
# What's coming out of our model?

# logits (raw outputs of model)
print("Logits:")
print(model_0(X_train.to(device)[:10]).squeeze())

# Prediction probabilities
print("Pred probs:")
print(torch.sigmoid(model_0(X_train.to(device)[:10]).squeeze()))

# Prediction probabilities
print("Pred labels:")
print(torch.round(torch.sigmoid(model_0(X_train.to(device)[:10]).squeeze())))
# %%
# Let's calculate the accuracy
# !pip -q install torchmetrics  # port: a shell command (the test's torchmetrics stands in)
from torchmetrics import Accuracy
acc_fn = Accuracy(task="multiclass", num_classes=2).to(device) # send accuracy function to device
acc_fn
# %%
torch.manual_seed(RANDOM_SEED)

epochs=200  # port: 1000 epochs shrunk (a shared CPU)

# Send data to the device
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)

# Loop through the data
for epoch in range(epochs):
  ### Training
  model_0.train()

  # 1. Forward pass
  y_logits = model_0(X_train).squeeze()
  # print(y_logits[:5]) # model raw outputs are "logits"
  y_pred_probs = torch.sigmoid(y_logits)
  y_pred = torch.round(y_pred_probs)

  # 2. Calculaute the loss
  loss = loss_fn(y_logits, y_train) # loss = compare model raw outputs to desired model outputs
  acc = acc_fn(y_pred, y_train.int()) # the accuracy function needs to compare pred labels (not logits) with actual labels

  # 3. Zero the gradients
  optimizer.zero_grad()

  # 4. Loss backward (perform backpropagation) - https://brilliant.org/wiki/backpropagation/#:~:text=Backpropagation%2C%20short%20for%20%22backward%20propagation,to%20the%20neural%20network's%20weights.
  loss.backward()

  # 5. Step the optimizer (gradient descent) - https://towardsdatascience.com/gradient-descent-algorithm-a-deep-dive-cf04e8115f21#:~:text=Gradient%20descent%20(GD)%20is%20an,e.g.%20in%20a%20linear%20regression) 
  optimizer.step()

  ### Testing
  model_0.eval() 
  with torch.inference_mode():
    # 1. Forward pass
    test_logits = model_0(X_test).squeeze()
    test_pred = torch.round(torch.sigmoid(test_logits))
    # 2. Caculate the loss/acc
    test_loss = loss_fn(test_logits, y_test)
    test_acc = acc_fn(test_pred, y_test.int()) 

  # Print out what's happening
  if epoch % 100 == 0:
    print(f"Epoch: {epoch} | Loss: {loss:.2f} Acc: {acc:.2f} | Test loss: {test_loss:.2f} Test acc: {test_acc:.2f}")
# %%
# Plot the model predictions

import numpy as np

# TK - this could go in the helper_functions.py and be explained there
def plot_decision_boundary(model, X, y):
  
    # Put everything to CPU (works better with NumPy + Matplotlib)
    model.to("cpu")
    X, y = X.to("cpu"), y.to("cpu")

    # Source - https://madewithml.com/courses/foundations/neural-networks/ 
    # (with modifications)
    x_min, x_max = X[:, 0].min() - 0.1, X[:, 0].max() + 0.1
    y_min, y_max = X[:, 1].min() - 0.1, X[:, 1].max() + 0.1
    xx, yy = np.meshgrid(np.linspace(x_min, x_max, 101), 
                         np.linspace(y_min, y_max, 101))

    # Make features
    X_to_pred_on = torch.from_numpy(np.column_stack((xx.ravel(), yy.ravel()))).float()

    # Make predictions
    model.eval()
    with torch.inference_mode():
        y_logits = model(X_to_pred_on)

    # Test for multi-class or binary and adjust logits to prediction labels
    if len(torch.unique(y)) > 2:
        y_pred = torch.softmax(y_logits, dim=1).argmax(dim=1) # mutli-class
    else: 
        y_pred = torch.round(torch.sigmoid(y_logits)) # binary
    
    # Reshape preds and plot
    y_pred = y_pred.reshape(xx.shape).detach().numpy()
    plt.contourf(xx, yy, y_pred, cmap=plt.cm.RdYlBu, alpha=0.7)
    plt.scatter(X[:, 0], X[:, 1], c=y, s=40, cmap=plt.cm.RdYlBu)
    plt.xlim(xx.min(), xx.max())
    plt.ylim(yy.min(), yy.max())
# %%
# Plot decision boundaries for training and test sets
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_0, X_train, y_train)
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_0, X_test, y_test)
# %%
tensor_A = torch.arange(-100, 100, 1)
plt.plot(tensor_A)
# %%
plt.plot(torch.tanh(tensor_A))
# %%
def tanh(x):
  # Source - https://ml-cheatsheet.readthedocs.io/en/latest/activation_functions.html#tanh
  return (torch.exp(x) - torch.exp(-x)) / (torch.exp(x) + torch.exp(-x))

plt.plot(tanh(tensor_A))
# %%
# Code for creating a spiral dataset from CS231n
import numpy as np
RANDOM_SEED = 42
np.random.seed(RANDOM_SEED)
N = 100 # number of points per class
D = 2 # dimensionality
K = 3 # number of classes
X = np.zeros((N*K,D)) # data matrix (each row = single example)
y = np.zeros(N*K, dtype='uint8') # class labels
for j in range(K):
  ix = range(N*j,N*(j+1))
  r = np.linspace(0.0,1,N) # radius
  t = np.linspace(j*4,(j+1)*4,N) + np.random.randn(N)*0.2 # theta
  X[ix] = np.c_[r*np.sin(t), r*np.cos(t)]
  y[ix] = j
# lets visualize the data
plt.scatter(X[:, 0], X[:, 1], c=y, s=40, cmap=plt.cm.RdYlBu)
plt.show()
# %%
# Turn data into tensors
X = torch.from_numpy(X).type(torch.float) # features as float32
y = torch.from_numpy(y).type(torch.LongTensor) # labels need to be of type long

# Create train and test splits
from sklearn.model_selection import train_test_split
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=RANDOM_SEED)
len(X_train), len(X_test), len(y_train), len(y_test)
# %%
# Let's calculate the accuracy for when we fit our model
# !pip -q install torchmetrics  # port: a shell command (the test's torchmetrics stands in)
from torchmetrics import Accuracy
acc_fn = Accuracy(task="multiclass", num_classes=3).to(device) # send accuracy function to device
acc_fn
# %%
# Prepare device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"

class SpiralModel(nn.Module): 
  def __init__(self):
    super().__init__()
    self.linear1 = nn.Linear(in_features=2, out_features=10)
    self.linear2 = nn.Linear(in_features=10, out_features=10)
    self.linear3 = nn.Linear(in_features=10, out_features=3)
    self.relu = nn.ReLU()

  def forward(self, x):
    return self.linear3(self.relu(self.linear2(self.relu(self.linear1(x)))))

model_1 = SpiralModel().to(device)
model_1
# %%
# Setup data to be device agnostic
X_train, y_train = X_train.to(device), y_train.to(device)
X_test, y_test = X_test.to(device), y_test.to(device)
print(X_train.dtype, X_test.dtype, y_train.dtype, y_test.dtype)

# Print out untrained model outputs
print("Logits:")
print(model_1(X_train)[:10])

print("Pred probs:")
print(torch.softmax(model_1(X_train)[:10], dim=1))

print("Pred labels:")
print(torch.softmax(model_1(X_train)[:10], dim=1).argmax(dim=1))
# %%
# Setup loss function and optimizer
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model_1.parameters(),
                             lr=0.02)
# %%
# Build a training loop for the model
epochs = 200  # port: 1000 epochs shrunk (a shared CPU)

# Loop over data
for epoch in range(epochs):
  ## Training
  model_1.train()
  # 1. forward pass
  y_logits = model_1(X_train)
  y_pred = torch.softmax(y_logits, dim=1).argmax(dim=1)

  # 2. calculate the loss
  loss = loss_fn(y_logits, y_train)
  acc = acc_fn(y_pred, y_train)
  
  # 3. optimizer zero grad
  optimizer.zero_grad()

  # 4. loss backwards
  loss.backward()

  # 5. optimizer step step step
  optimizer.step()

  ## Testing
  model_1.eval()
  with torch.inference_mode():
    # 1. Forward pass
    test_logits = model_1(X_test)
    test_pred = torch.softmax(test_logits, dim=1).argmax(dim=1)
    # 2. Caculate loss and acc
    test_loss = loss_fn(test_logits, y_test)
    test_acc = acc_fn(test_pred, y_test)

  # Print out what's happening
  if epoch % 100 == 0:
    print(f"Epoch: {epoch} | Loss: {loss:.2f} Acc: {acc:.2f} | Test loss: {test_loss:.2f} Test acc: {test_acc:.2f}")
# %%
# Plot decision boundaries for training and test sets
plt.figure(figsize=(12, 6))
plt.subplot(1, 2, 1)
plt.title("Train")
plot_decision_boundary(model_1, X_train, y_train)
plt.subplot(1, 2, 2)
plt.title("Test")
plot_decision_boundary(model_1, X_test, y_test)

"""


# torchmetrics (not installed): ``Accuracy`` as the notebooks call it, in torch's words
TORCHMETRICS = r"""
import torch


class Accuracy:
    '''The share of ``preds`` equal to ``target`` (torchmetrics' multiclass accuracy, its
    default micro average), as a 0-d tensor.'''

    def __init__(self, task, num_classes):
        self.task, self.num_classes = task, num_classes

    def to(self, device):
        return self

    def __call__(self, preds, target):
        return (preds == target).float().mean()

    def __repr__(self):
        return "MulticlassAccuracy()"
"""


class Series(list):
    """A pandas column as the notebooks use it: ``value_counts``."""

    def value_counts(self) -> dict:
        values, counts = np.unique(self, return_counts=True)
        return dict(sorted(zip(values.tolist(), counts.tolist()), key=lambda kv: -kv[1]))


class DataFrame(dict):
    """pandas' ``DataFrame`` of columns as the notebooks use it: ``head``, a column by
    attribute, a printout of its rows."""

    def head(self, n: int = 5) -> "DataFrame":
        return DataFrame({k: list(v)[:n] for k, v in self.items()})

    def __getattr__(self, name: str) -> Series:
        return Series(np.asarray(self[name]).tolist())

    def __repr__(self) -> str:
        rows = zip(*(np.asarray(v).tolist() for v in self.values()))
        return "\n".join(
            [" ".join(self), *(f"{i} " + " ".join(map(str, r)) for i, r in enumerate(rows))]
        )


def stand_ins(lib, folder, monkeypatch) -> None:
    """What the notebooks import and is not installed: pandas, ``<lib>metrics`` and
    ``<lib>vision`` (helper_functions.py imports it, never calls it), in ``sys.modules``;
    helper_functions.py in ``lib``'s words beside the notebook, importable from there."""
    name = lib.__name__
    pandas = types.ModuleType("pandas")
    pandas.__spec__ = importlib.machinery.ModuleSpec("pandas", None)
    pandas.DataFrame, pandas.Series = DataFrame, Series
    metrics = types.ModuleType(name + "metrics")
    exec(TORCHMETRICS.replace("torch", name), metrics.__dict__)
    for module in pandas, metrics, types.ModuleType(name + "vision"):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    (folder / "helper_functions.py").write_text(HELPER_FUNCTIONS.replace("torch", name))
    monkeypatch.delitem(sys.modules, "helper_functions", raising=False)  # the other library's
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])


def run(text: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """The notebook in ``lib``'s words, seeded, run cell by cell in ``folder``: what it
    printed and its globals."""
    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    stand_ins(lib, folder, monkeypatch)
    lib.manual_seed(0)
    np.random.seed(0)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with np.printoptions(), contextlib.redirect_stdout(out):
        run_cells(
            text.replace("torch", lib.__name__),
            space,
            failing=(TypeError, ValueError, RuntimeError),
        )
    return out.getvalue(), space


def both(text: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (the notebooks pick "cuda"
    when it is there: it is never answered), matplotlib drawing off screen."""
    with torch_and_tricycle(monkeypatch, agg=True) as (torch, tricycle):
        theirs = run(text, torch, tmp_path / "torch", monkeypatch)
        ours = run(text, tricycle, tmp_path / "tricycle", monkeypatch)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")
    return theirs, ours


def normal_lines(printed: str) -> list[str]:
    """test_dlwpt_part1's ``normal`` lines with the documented differences aside: the
    version, a device's repr (tricycle's is its name: "cpu"), and a one-number tensor put in an
    f-string (torch's prints its number, tricycle's its repr: documented)."""
    text = re.sub(r"^'\d+\.\d+\.\d+(\+\w+)?'$", "'VERSION'", printed, flags=re.MULTILINE)
    text = re.sub(  # a state dict: torch's tensors, tricycle's arrays (documented)
        r"OrderedDict\(\[.*?\)\]\)|OrderedDict\(\{.*?\}\)|\{'[\w.]+': array\(.*?\}", "STATE", text, flags=re.DOTALL
    )
    text = text.replace("pytricycle", "pytorch")  # the text's every "torch" was replaced
    text = re.sub(r"device\(type='(\w+)'\)", r"'\1'", text)
    text = re.sub(
        r"\b[Tt]ensor\((-?[\d.]+(?:e[-+]?\d+)?|True|False)(?:, \w+=[^()]*(?:\(\))?)?\)", r"\1", text
    )
    return normal(text)


def values(x) -> np.ndarray:
    """A tensor's (either library's) or an array's values, as floats."""
    return (x if isinstance(x, np.ndarray) else host(x)).astype(float)


def same(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    np.testing.assert_allclose(values(ours), values(theirs), rtol=rtol, atol=atol)


def fell(values: list[float]) -> None:
    """A training loop's printed losses: at least two, the last below the first."""
    assert len(values) >= 2 and values[-1] < values[0], values


def losses(printed: str, label: str) -> list[float]:
    """The numbers printed after ``label`` (a tensor's repr around one, in an f-string without
    a spec, is tricycle's: documented)."""
    return numbers(re.escape(label) + r" (?:Tensor\()?([\d.]+)", printed)


def test_fundamentals(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NB_00_FUNDAMENTALS, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    # the deterministic tensors: made from lists and ranges (torch.range's end included), the
    # products, the view written through (z[:, 0] = 5 shows in x and x_reshaped), the stacks,
    # squeezes, casts and the numpy bridge
    for name in (
        "scalar", "vector", "MATRIX", "TENSOR", "zero_to_ten_deprecated", "zero_to_ten",
        "ten_zeros", "float_32_tensor", "tensor_A", "tensor_B", "x_reshaped", "z", "x_stacked",
        "x_squeezed", "x_unsqueezed", "tensor_float16", "tensor_int8", "x", "tensor",
        "numpy_tensor", "tensor_back_on_cpu", "array",
    ):  # fmt: skip
        same(our[name], their[name])
        assert tuple(our[name].shape) == tuple(their[name].shape), name
        assert str(our[name].dtype).split(".")[-1] == str(their[name].dtype).split(".")[-1], name
    assert our["x_permuted"].shape == (3, 224, 224)
    assert bool((our["random_tensor_C"] == our["random_tensor_D"]).all())  # the same seed
    same_numbers(their["linear"], our["linear"], (3, 2))  # torch's weights: torch's numbers


def test_workflow(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NB_01_WORKFLOW, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    for printed in theirs, ours:  # both models learn: the losses fall
        fell(losses(printed, "MAE Train Loss:"))
        fell(losses(printed, "| Train loss:"))
    for space in our, their:  # the models saved and loaded predict as before
        assert bool((space["y_preds"] == space["loaded_model_1_preds"]).all())
        same(space["loaded_model_preds"], space["loaded_model_0"](space["X_test"]))
        same(space["loaded_model_preds"], space["model_0"](space["X_test"]))
    saved = our["tricycle"].load(tmp_path / "tricycle/models/01_pytricycle_workflow_model_1.pth")
    for name, value in our["loaded_model_1"].state_dict().items():
        np.testing.assert_array_equal(values(value), values(saved[name]))
    # the two models given torch's trained weights: torch's outputs and gradients
    same_numbers(their["model_0"], our["model_0"], (5, 1))
    same_numbers(their["model_1"], our["model_1"], (5, 1))


def test_classification(tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    (theirs, their), (ours, our) = both(NB_02_CLASSIFICATION, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    for name in "X_train", "y_train", "X_blob_test", "y_blob_test", "A":  # sklearn's data
        same(our[name], their[name])
    assert our["y_blob_test"].dtype == np.int64  # .type(torch.LongTensor)
    for printed in theirs, ours:  # each loop's loss falls; the blobs are learnt
        found = losses(printed, "| Loss:")
        assert len(found) == 10 + 2 + 2 + 10, found
        for loop in found[:10], found[10:12], found[12:14], found[14:]:
            fell(loop)
        fell(losses(printed, "Train loss:"))
        assert numbers(r"Test accuracy: ([\d.]+)%", printed)[0] > 90
    for space, lib in (our, "tricycle"), (their, "torch"):  # torchmetrics' is accuracy_fn's
        accuracy = space["accuracy_fn"](y_true=space["y_blob_test"], y_pred=space["y_preds"])
        metric = space[f"{lib}metrics_accuracy"](space["y_preds"], space["y_blob_test"])
        assert abs(float(metric) * 100 - accuracy) < 1e-4
    for name in "relu", "sigmoid":  # the hand-written activations
        same(our[name](our["A"]), their[name](their["A"]))
    # each model given torch's weights: torch's outputs and gradients
    for name, features in (
        ("model_0", 2),
        ("model_1", 2),
        ("model_2", 1),
        ("model_3", 2),
        ("model_4", 2),
    ):
        same_numbers(their[name], our[name], (5, features))


def test_exercise_solutions_00(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SOL_00_FUNDAMENTALS, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    for space in our, their:
        assert tuple(space["Z"].shape) == (7, 1) and tuple(space["tensor_E"].shape) == (10,)
        same(space["tensor_C"], space["tensor_A"] @ space["tensor_B"].T)
        assert float(space["max"]) == float(space["tensor_C"].max())
        assert int(space["arg_min"]) == int(np.argmin(host(space["tensor_C"])))


def test_exercise_solutions_01(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SOL_01_WORKFLOW, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    for printed in theirs, ours:
        fell(losses(printed, "Train loss:"))
    for space in our, their:  # the loaded model predicts as the saved one
        assert bool((space["y_preds"] == space["y_preds_new"]).all())
    same_numbers(their["model_1"], our["model_1"], (5, 1))
    same_numbers(their["loaded_model"], our["loaded_model"], (5, 1))


def test_exercise_solutions_02(tmp_path, monkeypatch):
    pytest.importorskip("sklearn")
    (theirs, their), (ours, our) = both(SOL_02_CLASSIFICATION, tmp_path, monkeypatch)
    assert normal_lines(ours) == normal_lines(theirs)
    for printed in theirs, ours:  # the moons (SGD) and the spiral (Adam) are learnt
        found = losses(printed, "| Loss:")
        accuracies = numbers(r"Test acc: ([\d.]+)", printed)
        assert len(found) == len(accuracies) == 4, found
        fell(found[:2]), fell(found[2:])
        assert accuracies[1] > 0.75 and accuracies[3] > 0.5, accuracies  # chance: 0.5, 0.33
    same(our["tanh"](our["tensor_A"]), their["tanh"](their["tensor_A"]))  # by hand: torch's
    for name in "model_0", "model_1":  # the moon and spiral models, trained: torch's numbers
        same_numbers(their[name], our[name], (5, 2))


def test_range_as_torchs():
    """torch.range (notebook 00): ``end`` included, float32 unless ``dtype`` says, with
    torch's deprecation warning; its gradient is torch's, and a step leading away from ``end``
    is refused naming the op."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    cases = [
        ((0, 10), {}),
        ((1, 4, 0.5), {}),
        ((0, 1, 0.3), {}),
        ((5, 0, -1), {}),
        ((2.5, 2.5), {}),
    ]
    cases += [((0, 10), {"dtype": "int64"}), ((0.0, 1.0, 0.25), {"dtype": "float64"})]
    for args, kwargs in cases:
        with pytest.warns(UserWarning, match="range is deprecated"):
            ours = tricycle.range(*args, **kwargs)
        with pytest.warns(UserWarning, match="range is deprecated"):
            theirs = torch.range(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
        same(ours, theirs, rtol=1e-7, atol=0)
        assert str(ours.dtype) == str(theirs.dtype).split(".")[1]
    weights = np.linspace(-1, 1, 5, dtype=np.float32)
    grads = []
    for lib in tricycle, torch:
        with pytest.warns(UserWarning):
            x = lib.range(0, 2, 0.5, requires_grad=True)
        (lib.tanh(x) * lib.tensor(weights)).sum().backward()
        grads.append(x.grad)
    same(*grads)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"range: step 1 must .* end 0"):
        tricycle.range(5, 0)


def test_type_given_a_legacy_tensor_type_casts_as_torchs():
    """``x.type(torch.LongTensor)`` (notebook 02's labels): the legacy constructors hold their
    dtype, so ``type`` casts to it; a float cast's gradient comes back in the input's dtype."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = np.array([0.5, 1.7, -2.2, 0.0, 3.0])
    for name in "LongTensor", "IntTensor", "FloatTensor", "DoubleTensor", "BoolTensor":
        ours = tricycle.tensor(x).type(getattr(tricycle, name))
        theirs = torch.tensor(x).type(getattr(torch, name))
        same(ours, theirs, rtol=0, atol=0)
        assert str(ours.dtype) == str(theirs.dtype).split(".")[1], name
        assert getattr(tricycle, name).dtype == ours.dtype
    grads = []
    for lib in tricycle, torch:
        leaf = lib.tensor(x.astype(np.float32), requires_grad=True)
        (leaf.type(lib.DoubleTensor) ** 2).sum().backward()
        grads.append(leaf.grad)
    same(*grads)
    assert grads[0].dtype == np.float32


def test_functions_of_an_integer_tensor_are_float32_as_torchs():
    """``exp``, ``log``, ``sqrt``, ``sin``, ``cos``, ``tanh`` and ``sigmoid`` of integers or
    booleans give float32 (torch's default float; numpy's is float64), so the exercise's
    ``tanh`` by hand of ``arange(-100, 100)`` overflows as torch's: NaN where e^x is inf."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for name in "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid":
        for dtype in np.int64, np.int32, np.uint8, np.bool_:
            x = np.arange(4).astype(dtype)
            ours = getattr(tricycle, name)(tricycle.tensor(x))
            theirs = getattr(torch, name)(torch.tensor(x))
            assert ours.dtype == np.float32 and theirs.dtype == torch.float32, (name, dtype)
            same(ours, theirs, rtol=1e-6)
        assert getattr(tricycle, name)(tricycle.tensor([2.0], dtype="float64")).dtype == np.float64
    results = []
    for lib in tricycle, torch:
        a = lib.arange(-100, 100, 1)
        with np.errstate(over="ignore", invalid="ignore"):
            results.append((lib.exp(a) - lib.exp(-a)) / (lib.exp(a) + lib.exp(-a)))
    same(*results)
    assert np.isnan(values(results[0])).sum() == 12 + 11  # |x| >= 89 of -100..99: e^|x| is inf
