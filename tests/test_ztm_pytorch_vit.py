"""Daniel Bourke's "Zero to Mastery: Learn PyTorch" (mrdbourke/pytorch-deep-learning),
notebooks 06 (transfer learning) and 08 (paper replicating: the Vision Transformer), run cell
by cell on tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's
promise; the method of tests/test_uvadlc_intro.py and tests/test_rasbt_dl_basics.py).

- 06: the images read by going_modular's ``data_setup.create_dataloaders`` (an
  ``ImageFolder``, ``pin_memory=True``), a small random stand-in for torchvision's
  ``efficientnet_b0`` (``.features`` of convolutions, batch norms and in-place SiLUs,
  ``.classifier`` of an in-place ``Dropout`` and a ``Linear(1280, 1000)``), its features
  frozen with ``param.requires_grad = False``, the classifier replaced, ``engine.train`` with
  Adam over all the parameters, and the notebook's ``pred_and_plot_image``
  (``torch.inference_mode``, ``softmax``/``argmax``, a class name indexed by a tensor, a
  probability formatted ``:.3f``);
- 08: the patches by ``Conv2d`` and ``Flatten(start_dim=2, end_dim=3)`` plotted from
  tensors, the class token (``nn.Parameter(..., requires_grad=True)``, ``expand``, ``cat``)
  and position embedding, ``MultiheadSelfAttentionBlock`` over ``nn.MultiheadAttention(...,
  batch_first=True)`` called with ``need_weights=False`` after an
  ``nn.LayerNorm(normalized_shape=...)`` (torch's keyword: tests/test_layers.py), ``MLPBlock``,
  ``TransformerEncoderBlock`` beside ``nn.TransformerEncoderLayer(activation="gelu",
  norm_first=True)``, the ``ViT`` trained by going_modular's engine (Adam with weight decay),
  then a stand-in pretrained ViT-B/16 frozen but for its new ``heads``, saved by
  ``utils.save_model`` and predicting through going_modular's ``predictions``.

The repository's going_modular modules and helper_functions.py are held as text, as they
are (two lines ported; tests/ztm_sources.py) and written beside the notebook; torchvision (transforms,
``ImageFolder``, the two models and their weight enums), torchinfo's ``summary`` and
``requests`` (never called: the data is there) are the test's stand-ins. Each changed line
ends in ``# port:`` and says why: the notebooks' version-check cell and shell magics, the
sizes shrunk (32x32 images, 8x8 patches, a ViT 32 wide with 4 heads and 2 layers) and the
epochs, the DataLoader's workers. The pizza, steak and sushi photographs are small JPEGs
the test writes (PIL). Each notebook runs under torch (skipped without it), then under
tricycle, both on the CPU; both print the same lines (numbers, reprs and version strings
aside) and learn (the ViT from scratch a little: the course's lesson). Then with torch's
weights (``nn.from_torch``) the EfficientNet, the ViT and the feature extractor give torch's
logits, loss and gradients (the attention's packed gradient split as its weights), the
frozen parameters none, and the ViT's Adam step with weight decay torch's; the notebook's
TransformerEncoderBlock given an ``nn.TransformerEncoderLayer``'s weights is that layer in
both libraries; and ``pred_and_plot_image`` titles its figure with torch's class and
probability.
"""

# ruff: noqa: E501, W291, W293

import copy
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import package, run_main, torch_and_tricycle
from tests.test_torch_examples_b import numbers
from tests.test_torch_vision_tutorials import host
from tests.test_uvadlc_intro import kinds
from tests.ztm_sources import DATA_SETUP, ENGINE, HELPER_FUNCTIONS, PREDICTIONS, UTILS

pytestmark = [  # matplotlib's Agg asked to show, torch's pin_memory without a GPU, torch's __array__
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:.*pin_memory"),
    pytest.mark.filterwarnings("ignore:__array__ implementation doesn.t accept a copy keyword"),
]

# 06_pytorch_transfer_learning.ipynb, its code cells in order
TRANSFER = r"""
# port: the first cell (torch 1.12+ and torchvision 0.13+ asserted from the version strings, else a pip install) dropped: tricycle numbers its own versions

# Continue with regular imports
import matplotlib.pyplot as plt
import torch
import torchvision

from torch import nn
from torchvision import transforms

# Try to get torchinfo, install it if it doesn't work
try:
    from torchinfo import summary
except:
    print("[INFO] Couldn't find torchinfo... installing it.")
    # !pip install -q torchinfo  # port: a notebook's shell magic (the test gives a torchinfo)
    from torchinfo import summary

# Try to import the going_modular directory, download it from GitHub if it doesn't work
try:
    from going_modular.going_modular import data_setup, engine
except:
    # Get the going_modular scripts
    print("[INFO] Couldn't find going_modular scripts... downloading them from GitHub.")
    # !git clone https://github.com/mrdbourke/pytorch-deep-learning  # port: a notebook's shell magic (three lines: the test wrote going_modular)
    # !mv pytorch-deep-learning/going_modular .  # port: as above
    # !rm -rf pytorch-deep-learning  # port: as above
    from going_modular.going_modular import data_setup, engine

# Setup device agnostic code
device = "cuda" if torch.cuda.is_available() else "cpu"
device

import os
import zipfile

from pathlib import Path

import requests

# Setup path to data folder
data_path = Path("data/")
image_path = data_path / "pizza_steak_sushi"

# If the image folder doesn't exist, download it and prepare it... 
if image_path.is_dir():
    print(f"{image_path} directory exists.")
else:
    print(f"Did not find {image_path} directory, creating one...")
    image_path.mkdir(parents=True, exist_ok=True)
    
    # Download pizza, steak, sushi data
    with open(data_path / "pizza_steak_sushi.zip", "wb") as f:
        request = requests.get("https://github.com/mrdbourke/pytorch-deep-learning/raw/main/data/pizza_steak_sushi.zip")
        print("Downloading pizza, steak, sushi data...")
        f.write(request.content)

    # Unzip pizza, steak, sushi data
    with zipfile.ZipFile(data_path / "pizza_steak_sushi.zip", "r") as zip_ref:
        print("Unzipping pizza, steak, sushi data...") 
        zip_ref.extractall(image_path)

    # Remove .zip file
    os.remove(data_path / "pizza_steak_sushi.zip")

# Setup Dirs
train_dir = image_path / "train"
test_dir = image_path / "test"

# Create a transforms pipeline manually (required for torchvision < 0.13)
manual_transforms = transforms.Compose([
    transforms.Resize((32, 32)), # 1. Reshape all images to 224x224 (though some models may require different sizes)  # port: 224: 32, the small stand-in network's
    transforms.ToTensor(), # 2. Turn image values to between 0 & 1 
    transforms.Normalize(mean=[0.485, 0.456, 0.406], # 3. A mean of [0.485, 0.456, 0.406] (across each colour channel)
                         std=[0.229, 0.224, 0.225]) # 4. A standard deviation of [0.229, 0.224, 0.225] (across each colour channel),
])

# Create training and testing DataLoaders as well as get a list of class names
train_dataloader, test_dataloader, class_names = data_setup.create_dataloaders(train_dir=train_dir,
                                                                               test_dir=test_dir,
                                                                               transform=manual_transforms, # resize, convert images to between 0 & 1 and normalize them
                                                                               batch_size=32) # set mini-batch size to 32

train_dataloader, test_dataloader, class_names

# Get a set of pretrained model weights
weights = torchvision.models.EfficientNet_B0_Weights.DEFAULT # .DEFAULT = best available weights from pretraining on ImageNet
weights

# Get the transforms used to create our pretrained weights
auto_transforms = weights.transforms()
auto_transforms

# Create training and testing DataLoaders as well as get a list of class names
train_dataloader, test_dataloader, class_names = data_setup.create_dataloaders(train_dir=train_dir,
                                                                               test_dir=test_dir,
                                                                               transform=auto_transforms, # perform same data transforms on our own data as the pretrained model
                                                                               batch_size=32) # set mini-batch size to 32

train_dataloader, test_dataloader, class_names

# OLD: Setup the model with pretrained weights and send it to the target device (this was prior to torchvision v0.13)
# model = torchvision.models.efficientnet_b0(pretrained=True).to(device) # OLD method (with pretrained=True)

# NEW: Setup the model with pretrained weights and send it to the target device (torchvision v0.13+)
weights = torchvision.models.EfficientNet_B0_Weights.DEFAULT # .DEFAULT = best available weights 
model = torchvision.models.efficientnet_b0(weights=weights).to(device)

#model # uncomment to output (it's very long)

# Print a summary using torchinfo (uncomment for actual output)
summary(model=model, 
        input_size=(32, 3, 32, 32), # make sure this is "input_size", not "input_shape"  # port: 224: 32, as above
        # col_names=["input_size"], # uncomment for smaller output
        col_names=["input_size", "output_size", "num_params", "trainable"],
        col_width=20,
        row_settings=["var_names"]
) 

# Freeze all base layers in the "features" section of the model (the feature extractor) by setting requires_grad=False
for param in model.features.parameters():
    param.requires_grad = False

# Set the manual seeds
torch.manual_seed(42)
torch.cuda.manual_seed(42)

# Get the length of class_names (one output unit for each class)
output_shape = len(class_names)

# Recreate the classifier layer and seed it to the target device
model.classifier = torch.nn.Sequential(
    torch.nn.Dropout(p=0.2, inplace=True), 
    torch.nn.Linear(in_features=1280, 
                    out_features=output_shape, # same number of output units as our number of classes
                    bias=True)).to(device)

# # Do a summary *after* freezing the features and changing the output classifier layer (uncomment for actual output)
summary(model, 
        input_size=(32, 3, 32, 32), # make sure this is "input_size", not "input_shape" (batch_size, color_channels, height, width)  # port: 224: 32, as above
        verbose=0,
        col_names=["input_size", "output_size", "num_params", "trainable"],
        col_width=20,
        row_settings=["var_names"]
)

# Define loss and optimizer
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.001)

# Set the random seeds
torch.manual_seed(42)
torch.cuda.manual_seed(42)

# Start the timer
from timeit import default_timer as timer 
start_time = timer()

# Setup training and save the results
results = engine.train(model=model,
                       train_dataloader=train_dataloader,
                       test_dataloader=test_dataloader,
                       optimizer=optimizer,
                       loss_fn=loss_fn,
                       epochs=5,
                       device=device)

# End the timer and print out how long it took
end_time = timer()
print(f"[INFO] Total training time: {end_time-start_time:.3f} seconds")

# Get the plot_loss_curves() function from helper_functions.py, download the file if we don't have it
try:
    from helper_functions import plot_loss_curves
except:
    print("[INFO] Couldn't find helper_functions.py, downloading...")
    with open("helper_functions.py", "wb") as f:
        import requests
        request = requests.get("https://raw.githubusercontent.com/mrdbourke/pytorch-deep-learning/main/helper_functions.py")
        f.write(request.content)
    from helper_functions import plot_loss_curves

# Plot the loss curves of our model
plot_loss_curves(results)

from typing import List, Tuple

from PIL import Image

# 1. Take in a trained model, class names, image path, image size, a transform and target device
def pred_and_plot_image(model: torch.nn.Module,
                        image_path: str, 
                        class_names: List[str],
                        image_size: Tuple[int, int] = (224, 224),
                        transform: torchvision.transforms = None,
                        device: torch.device=device):
    
    
    # 2. Open image
    img = Image.open(image_path)

    # 3. Create transformation for image (if one doesn't exist)
    if transform is not None:
        image_transform = transform
    else:
        image_transform = transforms.Compose([
            transforms.Resize(image_size),
            transforms.ToTensor(),
            transforms.Normalize(mean=[0.485, 0.456, 0.406],
                                 std=[0.229, 0.224, 0.225]),
        ])

    ### Predict on image ### 

    # 4. Make sure the model is on the target device
    model.to(device)

    # 5. Turn on model evaluation mode and inference mode
    model.eval()
    with torch.inference_mode():
      # 6. Transform and add an extra dimension to image (model requires samples in [batch_size, color_channels, height, width])
      transformed_image = image_transform(img).unsqueeze(dim=0)

      # 7. Make a prediction on image with an extra dimension and send it to the target device
      target_image_pred = model(transformed_image.to(device))

    # 8. Convert logits -> prediction probabilities (using torch.softmax() for multi-class classification)
    target_image_pred_probs = torch.softmax(target_image_pred, dim=1)

    # 9. Convert prediction probabilities -> prediction labels
    target_image_pred_label = torch.argmax(target_image_pred_probs, dim=1)

    # 10. Plot image with predicted label and probability 
    plt.figure()
    plt.imshow(img)
    plt.title(f"Pred: {class_names[target_image_pred_label]} | Prob: {target_image_pred_probs.max():.3f}")
    plt.axis(False);

# Get a random list of image paths from test set
import random
num_images_to_plot = 3
test_image_path_list = list(Path(test_dir).glob("*/*.jpg")) # get list all image paths from test data 
test_image_path_sample = random.sample(population=test_image_path_list, # go through all of the test image paths
                                       k=num_images_to_plot) # randomly select 'k' image paths to pred and plot

# Make predictions on and plot the images
for image_path in test_image_path_sample:
    pred_and_plot_image(model=model, 
                        image_path=image_path,
                        class_names=class_names,
                        # transform=weights.transforms(), # optionally pass in a specified transform from our pretrained model weights
                        image_size=(224, 224))

# Download custom image
import requests

# Setup custom image path
custom_image_path = data_path / "04-pizza-dad.jpeg"

# Download the image if it doesn't already exist
if not custom_image_path.is_file():
    with open(custom_image_path, "wb") as f:
        # When downloading from GitHub, need to use the "raw" file link
        request = requests.get("https://raw.githubusercontent.com/mrdbourke/pytorch-deep-learning/main/images/04-pizza-dad.jpeg")
        print(f"Downloading {custom_image_path}...")
        f.write(request.content)
else:
    print(f"{custom_image_path} already exists, skipping download.")

# Predict on custom image
pred_and_plot_image(model=model,
                    image_path=custom_image_path,
                    class_names=class_names)
"""

# 08_pytorch_paper_replicating.ipynb, its code cells in order
PAPER = r'''
# port: the first cell (torch 1.12+ and torchvision 0.13+ asserted from the version strings, else a pip install) dropped: tricycle numbers its own versions

# Continue with regular imports
import matplotlib.pyplot as plt
import torch
import torchvision

from torch import nn
from torchvision import transforms

# Try to get torchinfo, install it if it doesn't work
try:
    from torchinfo import summary
except:
    print("[INFO] Couldn't find torchinfo... installing it.")
    # !pip install -q torchinfo  # port: a notebook's shell magic (the test gives a torchinfo)
    from torchinfo import summary

# Try to import the going_modular directory, download it from GitHub if it doesn't work
try:
    from going_modular.going_modular import data_setup, engine
    from helper_functions import download_data, set_seeds, plot_loss_curves
except:
    # Get the going_modular scripts
    print("[INFO] Couldn't find going_modular or helper_functions scripts... downloading them from GitHub.")
    # !git clone https://github.com/mrdbourke/pytorch-deep-learning  # port: a notebook's shell magic (four lines: the test wrote going_modular and helper_functions.py)
    # !mv pytorch-deep-learning/going_modular .  # port: as above
    # !mv pytorch-deep-learning/helper_functions.py . # get the helper_functions.py script  # port: as above
    # !rm -rf pytorch-deep-learning  # port: as above
    from going_modular.going_modular import data_setup, engine
    from helper_functions import download_data, set_seeds, plot_loss_curves

device = "cuda" if torch.cuda.is_available() else "cpu"
device

# Download pizza, steak, sushi images from GitHub
image_path = download_data(source="https://github.com/mrdbourke/pytorch-deep-learning/raw/main/data/pizza_steak_sushi.zip",
                           destination="pizza_steak_sushi")
image_path

# Setup directory paths to train and test images
train_dir = image_path / "train"
test_dir = image_path / "test"

# Create image size (from Table 3 in the ViT paper)
IMG_SIZE = 32  # port: 224: 32 (a 4x4 grid of 8x8 patches in place of 14x14 of 16x16: sizes shrunk throughout)

# Create transform pipeline manually
manual_transforms = transforms.Compose([
    transforms.Resize((IMG_SIZE, IMG_SIZE)),
    transforms.ToTensor(),
])
print(f"Manually created transforms: {manual_transforms}")

# Set the batch size
BATCH_SIZE = 32 # this is lower than the ViT paper but it's because we're starting small

# Create data loaders
train_dataloader, test_dataloader, class_names = data_setup.create_dataloaders(
    train_dir=train_dir,
    test_dir=test_dir,
    transform=manual_transforms, # use manually created transforms
    batch_size=BATCH_SIZE
)

train_dataloader, test_dataloader, class_names

# Get a batch of images
image_batch, label_batch = next(iter(train_dataloader))

# Get a single image from the batch
image, label = image_batch[0], label_batch[0]

# View the batch shapes
image.shape, label

# Plot image with matplotlib
plt.imshow(image.permute(1, 2, 0)) # rearrange image dimensions to suit matplotlib [color_channels, height, width] -> [height, width, color_channels]
plt.title(class_names[label])
plt.axis(False);

# Create example values
height = 32 # H ("The training resolution is 224.")  # port: sizes shrunk
width = 32 # W  # port: sizes shrunk
color_channels = 3 # C
patch_size = 8 # P  # port: sizes shrunk

# Calculate N (number of patches)
number_of_patches = int((height * width) / patch_size**2)
print(f"Number of patches (N) with image height (H={height}), width (W={width}) and patch size (P={patch_size}): {number_of_patches}")

# Input shape (this is the size of a single image)
embedding_layer_input_shape = (height, width, color_channels)

# Output shape
embedding_layer_output_shape = (number_of_patches, patch_size**2 * color_channels)

print(f"Input shape (single 2D image): {embedding_layer_input_shape}")
print(f"Output shape (single 2D image flattened into patches): {embedding_layer_output_shape}")

# View single image
plt.imshow(image.permute(1, 2, 0)) # adjust for matplotlib
plt.title(class_names[label])
plt.axis(False);

# Change image shape to be compatible with matplotlib (color_channels, height, width) -> (height, width, color_channels)
image_permuted = image.permute(1, 2, 0)

# Index to plot the top row of patched pixels
patch_size = 8  # port: sizes shrunk
plt.figure(figsize=(patch_size, patch_size))
plt.imshow(image_permuted[:patch_size, :, :]);

# Setup hyperparameters and make sure img_size and patch_size are compatible
img_size = 32  # port: sizes shrunk
patch_size = 8  # port: sizes shrunk
num_patches = img_size/patch_size
assert img_size % patch_size == 0, "Image size must be divisible by patch size"
print(f"Number of patches per row: {num_patches}\nPatch size: {patch_size} pixels x {patch_size} pixels")

# Create a series of subplots
fig, axs = plt.subplots(nrows=1,
                        ncols=img_size // patch_size, # one column for each patch
                        figsize=(num_patches, num_patches),
                        sharex=True,
                        sharey=True)

# Iterate through number of patches in the top row
for i, patch in enumerate(range(0, img_size, patch_size)):
    axs[i].imshow(image_permuted[:patch_size, patch:patch+patch_size, :]); # keep height index constant, alter the width index
    axs[i].set_xlabel(i+1) # set the label
    axs[i].set_xticks([])
    axs[i].set_yticks([])

# Setup hyperparameters and make sure img_size and patch_size are compatible
img_size = 32  # port: sizes shrunk
patch_size = 8  # port: sizes shrunk
num_patches = img_size/patch_size
assert img_size % patch_size == 0, "Image size must be divisible by patch size"
print(f"Number of patches per row: {num_patches}\
        \nNumber of patches per column: {num_patches}\
        \nTotal patches: {num_patches*num_patches}\
        \nPatch size: {patch_size} pixels x {patch_size} pixels")

# Create a series of subplots
fig, axs = plt.subplots(nrows=img_size // patch_size, # need int not float
                        ncols=img_size // patch_size,
                        figsize=(num_patches, num_patches),
                        sharex=True,
                        sharey=True)

# Loop through height and width of image
for i, patch_height in enumerate(range(0, img_size, patch_size)): # iterate through height
    for j, patch_width in enumerate(range(0, img_size, patch_size)): # iterate through width

        # Plot the permuted image patch (image_permuted -> (Height, Width, Color Channels))
        axs[i, j].imshow(image_permuted[patch_height:patch_height+patch_size, # iterate through height
                                        patch_width:patch_width+patch_size, # iterate through width
                                        :]) # get all color channels

        # Set up label information, remove the ticks for clarity and set labels to outside
        axs[i, j].set_ylabel(i+1,
                             rotation="horizontal",
                             horizontalalignment="right",
                             verticalalignment="center")
        axs[i, j].set_xlabel(j+1)
        axs[i, j].set_xticks([])
        axs[i, j].set_yticks([])
        axs[i, j].label_outer()

# Set a super title
fig.suptitle(f"{class_names[label]} -> Patchified", fontsize=16)
plt.show()

from torch import nn

# Set the patch size
patch_size=8  # port: sizes shrunk

# Create the Conv2d layer with hyperparameters from the ViT paper
conv2d = nn.Conv2d(in_channels=3, # number of color channels
                   out_channels=32, # from Table 1: Hidden size D, this is the embedding size  # port: 768: 32, sizes shrunk
                   kernel_size=patch_size, # could also use (patch_size, patch_size)
                   stride=patch_size,
                   padding=0)

# View single image
plt.imshow(image.permute(1, 2, 0)) # adjust for matplotlib
plt.title(class_names[label])
plt.axis(False);

# Pass the image through the convolutional layer
image_out_of_conv = conv2d(image.unsqueeze(0)) # add a single batch dimension (height, width, color_channels) -> (batch, height, width, color_channels)
print(image_out_of_conv.shape)

# Plot random 5 convolutional feature maps
import random
random_indexes = random.sample(range(0, 32), k=5) # pick 5 numbers between 0 and the embedding size  # port: 758: the embedding's 32
print(f"Showing random convolutional feature maps from indexes: {random_indexes}")

# Create plot
fig, axs = plt.subplots(nrows=1, ncols=5, figsize=(12, 12))

# Plot random image feature maps
for i, idx in enumerate(random_indexes):
    image_conv_feature_map = image_out_of_conv[:, idx, :, :] # index on the output tensor of the convolutional layer
    axs[i].imshow(image_conv_feature_map.squeeze().detach().numpy())
    axs[i].set(xticklabels=[], yticklabels=[], xticks=[], yticks=[]);

# Get a single feature map in tensor form
single_feature_map = image_out_of_conv[:, 0, :, :]
single_feature_map, single_feature_map.requires_grad

# Current tensor shape
print(f"Current tensor shape: {image_out_of_conv.shape} -> [batch, embedding_dim, feature_map_height, feature_map_width]")

# Create flatten layer
flatten = nn.Flatten(start_dim=2, # flatten feature_map_height (dimension 2)
                     end_dim=3) # flatten feature_map_width (dimension 3)

# 1. View single image
plt.imshow(image.permute(1, 2, 0)) # adjust for matplotlib
plt.title(class_names[label])
plt.axis(False);
print(f"Original image shape: {image.shape}")

# 2. Turn image into feature maps
image_out_of_conv = conv2d(image.unsqueeze(0)) # add batch dimension to avoid shape errors
print(f"Image feature map shape: {image_out_of_conv.shape}")

# 3. Flatten the feature maps
image_out_of_conv_flattened = flatten(image_out_of_conv)
print(f"Flattened image feature map shape: {image_out_of_conv_flattened.shape}")

# Get flattened image patch embeddings in right shape
image_out_of_conv_flattened_reshaped = image_out_of_conv_flattened.permute(0, 2, 1) # [batch_size, P^2•C, N] -> [batch_size, N, P^2•C]
print(f"Patch embedding sequence shape: {image_out_of_conv_flattened_reshaped.shape} -> [batch_size, num_patches, embedding_size]")

# Get a single flattened feature map
single_flattened_feature_map = image_out_of_conv_flattened_reshaped[:, :, 0] # index: (batch_size, number_of_patches, embedding_dimension)

# Plot the flattened feature map visually
plt.figure(figsize=(22, 22))
plt.imshow(single_flattened_feature_map.detach().numpy())
plt.title(f"Flattened feature map shape: {single_flattened_feature_map.shape}")
plt.axis(False);

# See the flattened feature map as a tensor
single_flattened_feature_map, single_flattened_feature_map.requires_grad, single_flattened_feature_map.shape

# 1. Create a class which subclasses nn.Module
class PatchEmbedding(nn.Module):
    """Turns a 2D input image into a 1D sequence learnable embedding vector.

    Args:
        in_channels (int): Number of color channels for the input images. Defaults to 3.
        patch_size (int): Size of patches to convert input image into. Defaults to 16.
        embedding_dim (int): Size of embedding to turn image into. Defaults to 768.
    """
    # 2. Initialize the class with appropriate variables
    def __init__(self,
                 in_channels:int=3,
                 patch_size:int=8,  # port: sizes shrunk
                 embedding_dim:int=32):  # port: sizes shrunk
        super().__init__()

        # 3. Create a layer to turn an image into patches
        self.patcher = nn.Conv2d(in_channels=in_channels,
                                 out_channels=embedding_dim,
                                 kernel_size=patch_size,
                                 stride=patch_size,
                                 padding=0)

        # 4. Create a layer to flatten the patch feature maps into a single dimension
        self.flatten = nn.Flatten(start_dim=2, # only flatten the feature map dimensions into a single vector
                                  end_dim=3)

    # 5. Define the forward method
    def forward(self, x):
        # Create assertion to check that inputs are the correct shape
        image_resolution = x.shape[-1]
        assert image_resolution % patch_size == 0, f"Input image size must be divisible by patch size, image shape: {image_resolution}, patch size: {patch_size}"

        # Perform the forward pass
        x_patched = self.patcher(x)
        x_flattened = self.flatten(x_patched)
        # 6. Make sure the output shape has the right order
        return x_flattened.permute(0, 2, 1) # adjust so the embedding is on the final dimension [batch_size, P^2•C, N] -> [batch_size, N, P^2•C]

set_seeds()

# Create an instance of patch embedding layer
patchify = PatchEmbedding(in_channels=3,
                          patch_size=8,  # port: sizes shrunk
                          embedding_dim=32)  # port: sizes shrunk

# Pass a single image through
print(f"Input image shape: {image.unsqueeze(0).shape}")
patch_embedded_image = patchify(image.unsqueeze(0)) # add an extra batch dimension on the 0th index, otherwise will error
print(f"Output patch embedding shape: {patch_embedded_image.shape}")

# Create random input sizes
random_input_image = (1, 3, 32, 32)  # port: sizes shrunk
random_input_image_error = (1, 3, 250, 250) # will error because image size is incompatible with patch_size

# # Get a summary of the input and outputs of PatchEmbedding (uncomment for full output)
# summary(PatchEmbedding(),
#         input_size=random_input_image, # try swapping this for "random_input_image_error"
#         col_names=["input_size", "output_size", "num_params", "trainable"],
#         col_width=20,
#         row_settings=["var_names"])

# View the patch embedding and patch embedding shape
print(patch_embedded_image)
print(f"Patch embedding shape: {patch_embedded_image.shape} -> [batch_size, number_of_patches, embedding_dimension]")

# Get the batch size and embedding dimension
batch_size = patch_embedded_image.shape[0]
embedding_dimension = patch_embedded_image.shape[-1]

# Create the class token embedding as a learnable parameter that shares the same size as the embedding dimension (D)
class_token = nn.Parameter(torch.ones(batch_size, 1, embedding_dimension), # [batch_size, number_of_tokens, embedding_dimension]
                           requires_grad=True) # make sure the embedding is learnable

# Show the first 10 examples of the class_token
print(class_token[:, :, :10])

# Print the class_token shape
print(f"Class token shape: {class_token.shape} -> [batch_size, number_of_tokens, embedding_dimension]")

# Add the class token embedding to the front of the patch embedding
patch_embedded_image_with_class_embedding = torch.cat((class_token, patch_embedded_image),
                                                      dim=1) # concat on first dimension

# Print the sequence of patch embeddings with the prepended class token embedding
print(patch_embedded_image_with_class_embedding)
print(f"Sequence of patch embeddings with class token prepended shape: {patch_embedded_image_with_class_embedding.shape} -> [batch_size, number_of_patches, embedding_dimension]")

# View the sequence of patch embeddings with the prepended class embedding
patch_embedded_image_with_class_embedding, patch_embedded_image_with_class_embedding.shape

# Calculate N (number of patches)
number_of_patches = int((height * width) / patch_size**2)

# Get embedding dimension
embedding_dimension = patch_embedded_image_with_class_embedding.shape[2]

# Create the learnable 1D position embedding
position_embedding = nn.Parameter(torch.ones(1,
                                             number_of_patches+1,
                                             embedding_dimension),
                                  requires_grad=True) # make sure it's learnable

# Show the first 10 sequences and 10 position embedding values and check the shape of the position embedding
print(position_embedding[:, :10, :10])
print(f"Position embedding shape: {position_embedding.shape} -> [batch_size, number_of_patches, embedding_dimension]")

# Add the position embedding to the patch and class token embedding
patch_and_position_embedding = patch_embedded_image_with_class_embedding + position_embedding
print(patch_and_position_embedding)
print(f"Patch embeddings, class token prepended and positional embeddings added shape: {patch_and_position_embedding.shape} -> [batch_size, number_of_patches, embedding_dimension]")

set_seeds()

# 1. Set patch size
patch_size = 8  # port: sizes shrunk

# 2. Print shape of original image tensor and get the image dimensions
print(f"Image tensor shape: {image.shape}")
height, width = image.shape[1], image.shape[2]

# 3. Get image tensor and add batch dimension
x = image.unsqueeze(0)
print(f"Input image with batch dimension shape: {x.shape}")

# 4. Create patch embedding layer
patch_embedding_layer = PatchEmbedding(in_channels=3,
                                       patch_size=patch_size,
                                       embedding_dim=32)  # port: sizes shrunk

# 5. Pass image through patch embedding layer
patch_embedding = patch_embedding_layer(x)
print(f"Patching embedding shape: {patch_embedding.shape}")

# 6. Create class token embedding
batch_size = patch_embedding.shape[0]
embedding_dimension = patch_embedding.shape[-1]
class_token = nn.Parameter(torch.ones(batch_size, 1, embedding_dimension),
                           requires_grad=True) # make sure it's learnable
print(f"Class token embedding shape: {class_token.shape}")

# 7. Prepend class token embedding to patch embedding
patch_embedding_class_token = torch.cat((class_token, patch_embedding), dim=1)
print(f"Patch embedding with class token shape: {patch_embedding_class_token.shape}")

# 8. Create position embedding
number_of_patches = int((height * width) / patch_size**2)
position_embedding = nn.Parameter(torch.ones(1, number_of_patches+1, embedding_dimension),
                                  requires_grad=True) # make sure it's learnable

# 9. Add position embedding to patch embedding with class token
patch_and_position_embedding = patch_embedding_class_token + position_embedding
print(f"Patch and position embedding shape: {patch_and_position_embedding.shape}")

# 1. Create a class that inherits from nn.Module
class MultiheadSelfAttentionBlock(nn.Module):
    """Creates a multi-head self-attention block ("MSA block" for short).
    """
    # 2. Initialize the class with hyperparameters from Table 1
    def __init__(self,
                 embedding_dim:int=32, # Hidden size D from Table 1 for ViT-Base  # port: sizes shrunk
                 num_heads:int=4, # Heads from Table 1 for ViT-Base  # port: sizes shrunk
                 attn_dropout:float=0): # doesn't look like the paper uses any dropout in MSABlocks
        super().__init__()

        # 3. Create the Norm layer (LN)
        self.layer_norm = nn.LayerNorm(normalized_shape=embedding_dim)

        # 4. Create the Multi-Head Attention (MSA) layer
        self.multihead_attn = nn.MultiheadAttention(embed_dim=embedding_dim,
                                                    num_heads=num_heads,
                                                    dropout=attn_dropout,
                                                    batch_first=True) # does our batch dimension come first?

    # 5. Create a forward() method to pass the data through the layers
    def forward(self, x):
        x = self.layer_norm(x)
        attn_output, _ = self.multihead_attn(query=x, # query embeddings
                                             key=x, # key embeddings
                                             value=x, # value embeddings
                                             need_weights=False) # do we need the weights or just the layer outputs?
        return attn_output

# Create an instance of MSABlock
multihead_self_attention_block = MultiheadSelfAttentionBlock(embedding_dim=32, # from Table 1  # port: sizes shrunk
                                                             num_heads=4) # from Table 1  # port: sizes shrunk

# Pass patch and position image embedding through MSABlock
patched_image_through_msa_block = multihead_self_attention_block(patch_and_position_embedding)
print(f"Input shape of MSA block: {patch_and_position_embedding.shape}")
print(f"Output shape MSA block: {patched_image_through_msa_block.shape}")

# 1. Create a class that inherits from nn.Module
class MLPBlock(nn.Module):
    """Creates a layer normalized multilayer perceptron block ("MLP block" for short)."""
    # 2. Initialize the class with hyperparameters from Table 1 and Table 3
    def __init__(self,
                 embedding_dim:int=32, # Hidden Size D from Table 1 for ViT-Base  # port: sizes shrunk
                 mlp_size:int=64, # MLP size from Table 1 for ViT-Base  # port: sizes shrunk
                 dropout:float=0.1): # Dropout from Table 3 for ViT-Base
        super().__init__()

        # 3. Create the Norm layer (LN)
        self.layer_norm = nn.LayerNorm(normalized_shape=embedding_dim)

        # 4. Create the Multilayer perceptron (MLP) layer(s)
        self.mlp = nn.Sequential(
            nn.Linear(in_features=embedding_dim,
                      out_features=mlp_size),
            nn.GELU(), # "The MLP contains two layers with a GELU non-linearity (section 3.1)."
            nn.Dropout(p=dropout),
            nn.Linear(in_features=mlp_size, # needs to take same in_features as out_features of layer above
                      out_features=embedding_dim), # take back to embedding_dim
            nn.Dropout(p=dropout) # "Dropout, when used, is applied after every dense layer.."
        )

    # 5. Create a forward() method to pass the data through the layers
    def forward(self, x):
        x = self.layer_norm(x)
        x = self.mlp(x)
        return x

# Create an instance of MLPBlock
mlp_block = MLPBlock(embedding_dim=32, # from Table 1  # port: sizes shrunk
                     mlp_size=64, # from Table 1  # port: sizes shrunk
                     dropout=0.1) # from Table 3

# Pass output of MSABlock through MLPBlock
patched_image_through_mlp_block = mlp_block(patched_image_through_msa_block)
print(f"Input shape of MLP block: {patched_image_through_msa_block.shape}")
print(f"Output shape MLP block: {patched_image_through_mlp_block.shape}")

# 1. Create a class that inherits from nn.Module
class TransformerEncoderBlock(nn.Module):
    """Creates a Transformer Encoder block."""
    # 2. Initialize the class with hyperparameters from Table 1 and Table 3
    def __init__(self,
                 embedding_dim:int=32, # Hidden size D from Table 1 for ViT-Base  # port: sizes shrunk
                 num_heads:int=4, # Heads from Table 1 for ViT-Base  # port: sizes shrunk
                 mlp_size:int=64, # MLP size from Table 1 for ViT-Base  # port: sizes shrunk
                 mlp_dropout:float=0.1, # Amount of dropout for dense layers from Table 3 for ViT-Base
                 attn_dropout:float=0): # Amount of dropout for attention layers
        super().__init__()

        # 3. Create MSA block (equation 2)
        self.msa_block = MultiheadSelfAttentionBlock(embedding_dim=embedding_dim,
                                                     num_heads=num_heads,
                                                     attn_dropout=attn_dropout)

        # 4. Create MLP block (equation 3)
        self.mlp_block =  MLPBlock(embedding_dim=embedding_dim,
                                   mlp_size=mlp_size,
                                   dropout=mlp_dropout)

    # 5. Create a forward() method
    def forward(self, x):

        # 6. Create residual connection for MSA block (add the input to the output)
        x =  self.msa_block(x) + x

        # 7. Create residual connection for MLP block (add the input to the output)
        x = self.mlp_block(x) + x

        return x

# Create an instance of TransformerEncoderBlock
transformer_encoder_block = TransformerEncoderBlock()

# # Print an input and output summary of our Transformer Encoder (uncomment for full output)
# summary(model=transformer_encoder_block,
#         input_size=(1, 197, 768), # (batch_size, num_patches, embedding_dimension)
#         col_names=["input_size", "output_size", "num_params", "trainable"],
#         col_width=20,
#         row_settings=["var_names"])

# Create the same as above with torch.nn.TransformerEncoderLayer()
torch_transformer_encoder_layer = nn.TransformerEncoderLayer(d_model=32, # Hidden size D from Table 1 for ViT-Base  # port: sizes shrunk
                                                             nhead=4, # Heads from Table 1 for ViT-Base  # port: sizes shrunk
                                                             dim_feedforward=64, # MLP size from Table 1 for ViT-Base  # port: sizes shrunk
                                                             dropout=0.1, # Amount of dropout for dense layers from Table 3 for ViT-Base
                                                             activation="gelu", # GELU non-linear activation
                                                             batch_first=True, # Do our batches come first?
                                                             norm_first=True) # Normalize first or after MSA/MLP layers?

torch_transformer_encoder_layer

# # Get the output of PyTorch's version of the Transformer Encoder (uncomment for full output)
# summary(model=torch_transformer_encoder_layer,
#         input_size=(1, 197, 768), # (batch_size, num_patches, embedding_dimension)
#         col_names=["input_size", "output_size", "num_params", "trainable"],
#         col_width=20,
#         row_settings=["var_names"])

# 1. Create a ViT class that inherits from nn.Module
class ViT(nn.Module):
    """Creates a Vision Transformer architecture with ViT-Base hyperparameters by default."""
    # 2. Initialize the class with hyperparameters from Table 1 and Table 3
    def __init__(self,
                 img_size:int=32, # Training resolution from Table 3 in ViT paper  # port: sizes shrunk
                 in_channels:int=3, # Number of channels in input image
                 patch_size:int=8, # Patch size  # port: sizes shrunk
                 num_transformer_layers:int=2, # Layers from Table 1 for ViT-Base  # port: sizes shrunk
                 embedding_dim:int=32, # Hidden size D from Table 1 for ViT-Base  # port: sizes shrunk
                 mlp_size:int=64, # MLP size from Table 1 for ViT-Base  # port: sizes shrunk
                 num_heads:int=4, # Heads from Table 1 for ViT-Base  # port: sizes shrunk
                 attn_dropout:float=0, # Dropout for attention projection
                 mlp_dropout:float=0.1, # Dropout for dense/MLP layers
                 embedding_dropout:float=0.1, # Dropout for patch and position embeddings
                 num_classes:int=1000): # Default for ImageNet but can customize this
        super().__init__() # don't forget the super().__init__()!

        # 3. Make the image size is divisible by the patch size
        assert img_size % patch_size == 0, f"Image size must be divisible by patch size, image size: {img_size}, patch size: {patch_size}."

        # 4. Calculate number of patches (height * width/patch^2)
        self.num_patches = (img_size * img_size) // patch_size**2

        # 5. Create learnable class embedding (needs to go at front of sequence of patch embeddings)
        self.class_embedding = nn.Parameter(data=torch.randn(1, 1, embedding_dim),
                                            requires_grad=True)

        # 6. Create learnable position embedding
        self.position_embedding = nn.Parameter(data=torch.randn(1, self.num_patches+1, embedding_dim),
                                               requires_grad=True)

        # 7. Create embedding dropout value
        self.embedding_dropout = nn.Dropout(p=embedding_dropout)

        # 8. Create patch embedding layer
        self.patch_embedding = PatchEmbedding(in_channels=in_channels,
                                              patch_size=patch_size,
                                              embedding_dim=embedding_dim)

        # 9. Create Transformer Encoder blocks (we can stack Transformer Encoder blocks using nn.Sequential())
        # Note: The "*" means "all"
        self.transformer_encoder = nn.Sequential(*[TransformerEncoderBlock(embedding_dim=embedding_dim,
                                                                            num_heads=num_heads,
                                                                            mlp_size=mlp_size,
                                                                            mlp_dropout=mlp_dropout) for _ in range(num_transformer_layers)])

        # 10. Create classifier head
        self.classifier = nn.Sequential(
            nn.LayerNorm(normalized_shape=embedding_dim),
            nn.Linear(in_features=embedding_dim,
                      out_features=num_classes)
        )

    # 11. Create a forward() method
    def forward(self, x):

        # 12. Get batch size
        batch_size = x.shape[0]

        # 13. Create class token embedding and expand it to match the batch size (equation 1)
        class_token = self.class_embedding.expand(batch_size, -1, -1) # "-1" means to infer the dimension (try this line on its own)

        # 14. Create patch embedding (equation 1)
        x = self.patch_embedding(x)

        # 15. Concat class embedding and patch embedding (equation 1)
        x = torch.cat((class_token, x), dim=1)

        # 16. Add position embedding to patch embedding (equation 1)
        x = self.position_embedding + x

        # 17. Run embedding dropout (Appendix B.1)
        x = self.embedding_dropout(x)

        # 18. Pass patch, position and class embedding through transformer encoder layers (equations 2 & 3)
        x = self.transformer_encoder(x)

        # 19. Put 0 index logit through classifier (equation 4)
        x = self.classifier(x[:, 0]) # run on each sample in a batch at 0 index

        return x

# Example of creating the class embedding and expanding over a batch dimension
batch_size = 32
class_token_embedding_single = nn.Parameter(data=torch.randn(1, 1, 32)) # create a single learnable class token  # port: sizes shrunk
class_token_embedding_expanded = class_token_embedding_single.expand(batch_size, -1, -1) # expand the single learnable class token across the batch dimension, "-1" means to "infer the dimension"

# Print out the change in shapes
print(f"Shape of class token embedding single: {class_token_embedding_single.shape}")
print(f"Shape of class token embedding expanded: {class_token_embedding_expanded.shape}")

set_seeds()

# Create a random tensor with same shape as a single image
random_image_tensor = torch.randn(1, 3, 32, 32) # (batch_size, color_channels, height, width)  # port: sizes shrunk

# Create an instance of ViT with the number of classes we're working with (pizza, steak, sushi)
vit = ViT(num_classes=len(class_names))

# Pass the random image tensor to our ViT instance
vit(random_image_tensor)

from torchinfo import summary

# # Print a summary of our custom ViT model using torchinfo (uncomment for actual output)
# summary(model=vit,
#         input_size=(32, 3, 224, 224), # (batch_size, color_channels, height, width)
#         # col_names=["input_size"], # uncomment for smaller output
#         col_names=["input_size", "output_size", "num_params", "trainable"],
#         col_width=20,
#         row_settings=["var_names"]
# )

from going_modular.going_modular import engine

# Setup the optimizer to optimize our ViT model parameters using hyperparameters from the ViT paper
optimizer = torch.optim.Adam(params=vit.parameters(),
                             lr=3e-3, # Base LR from Table 3 for ViT-* ImageNet-1k
                             betas=(0.9, 0.999), # default values but also mentioned in ViT paper section 4.1 (Training & Fine-tuning)
                             weight_decay=0.3) # from the ViT paper section 4.1 (Training & Fine-tuning) and Table 3 for ViT-* ImageNet-1k

# Setup the loss function for multi-class classification
loss_fn = torch.nn.CrossEntropyLoss()

# Set the seeds
set_seeds()

# Train the model and save the training results to a dictionary
results = engine.train(model=vit,
                       train_dataloader=train_dataloader,
                       test_dataloader=test_dataloader,
                       optimizer=optimizer,
                       loss_fn=loss_fn,
                       epochs=4,  # port: 10 epochs: 4
                       device=device)

from helper_functions import plot_loss_curves

# Plot our ViT model's loss curves
plot_loss_curves(results)

# The following requires torch v0.12+ and torchvision v0.13+
import torch
import torchvision
print(torch.__version__)
print(torchvision.__version__)

device = "cuda" if torch.cuda.is_available() else "cpu"
device

# 1. Get pretrained weights for ViT-Base
pretrained_vit_weights = torchvision.models.ViT_B_16_Weights.DEFAULT # requires torchvision >= 0.13, "DEFAULT" means best available

# 2. Setup a ViT model instance with pretrained weights
pretrained_vit = torchvision.models.vit_b_16(weights=pretrained_vit_weights).to(device)

# 3. Freeze the base parameters
for parameter in pretrained_vit.parameters():
    parameter.requires_grad = False

# 4. Change the classifier head (set the seeds to ensure same initialization with linear head)
set_seeds()
pretrained_vit.heads = nn.Linear(in_features=32, out_features=len(class_names)).to(device)  # port: 768: the small stand-in ViT-B/16's width
# pretrained_vit # uncomment for model output

# # Print a summary using torchinfo (uncomment for actual output)
# summary(model=pretrained_vit,
#         input_size=(32, 3, 224, 224), # (batch_size, color_channels, height, width)
#         # col_names=["input_size"], # uncomment for smaller output
#         col_names=["input_size", "output_size", "num_params", "trainable"],
#         col_width=20,
#         row_settings=["var_names"]
# )

from helper_functions import download_data

# Download pizza, steak, sushi images from GitHub
image_path = download_data(source="https://github.com/mrdbourke/pytorch-deep-learning/raw/main/data/pizza_steak_sushi.zip",
                           destination="pizza_steak_sushi")
image_path

# Setup train and test directory paths
train_dir = image_path / "train"
test_dir = image_path / "test"
train_dir, test_dir

# Get automatic transforms from pretrained ViT weights
pretrained_vit_transforms = pretrained_vit_weights.transforms()
print(pretrained_vit_transforms)

# Setup dataloaders
train_dataloader_pretrained, test_dataloader_pretrained, class_names = data_setup.create_dataloaders(train_dir=train_dir,
                                                                                                     test_dir=test_dir,
                                                                                                     transform=pretrained_vit_transforms,
                                                                                                     batch_size=32) # Could increase if we had more samples, such as here: https://arxiv.org/abs/2205.01580 (there are other improvements there too...)


from going_modular.going_modular import engine

# Create optimizer and loss function
optimizer = torch.optim.Adam(params=pretrained_vit.parameters(),
                             lr=1e-3)
loss_fn = torch.nn.CrossEntropyLoss()

# Train the classifier head of the pretrained ViT feature extractor model
set_seeds()
pretrained_vit_results = engine.train(model=pretrained_vit,
                                      train_dataloader=train_dataloader_pretrained,
                                      test_dataloader=test_dataloader_pretrained,
                                      optimizer=optimizer,
                                      loss_fn=loss_fn,
                                      epochs=3,  # port: 10 epochs: 3
                                      device=device)

# Plot the loss curves
from helper_functions import plot_loss_curves

plot_loss_curves(pretrained_vit_results)

# Save the model
from going_modular.going_modular import utils

utils.save_model(model=pretrained_vit,
                 target_dir="models",
                 model_name="08_pretrained_vit_feature_extractor_pizza_steak_sushi.pth")

from pathlib import Path

# Get the model size in bytes then convert to megabytes
pretrained_vit_model_size = Path("models/08_pretrained_vit_feature_extractor_pizza_steak_sushi.pth").stat().st_size // (1024*1024) # division converts bytes to megabytes (roughly)
print(f"Pretrained ViT feature extractor model size: {pretrained_vit_model_size} MB")

import requests

# Import function to make predictions on images and plot them
from going_modular.going_modular.predictions import pred_and_plot_image

# Setup custom image path
custom_image_path = image_path / "04-pizza-dad.jpeg"

# Download the image if it doesn't already exist
if not custom_image_path.is_file():
    with open(custom_image_path, "wb") as f:
        # When downloading from GitHub, need to use the "raw" file link
        request = requests.get("https://raw.githubusercontent.com/mrdbourke/pytorch-deep-learning/main/images/04-pizza-dad.jpeg")
        print(f"Downloading {custom_image_path}...")
        f.write(request.content)
else:
    print(f"{custom_image_path} already exists, skipping download.")

# Predict on custom image
pred_and_plot_image(model=pretrained_vit,
                    image_path=custom_image_path,
                    class_names=class_names)
'''

# going_modular's modules the notebooks import (tests/ztm_sources.py)
GOING_MODULAR = {
    "data_setup": DATA_SETUP,
    "engine": ENGINE,
    "utils": UTILS,
    "predictions": PREDICTIONS,
}


# torchvision as the two notebooks and going_modular use it, on PIL images (see ``vision``)
VISION = r"""
import os

import numpy as np
from PIL import Image
import torch
from torch import nn

__version__ = "0.0.0+test"  # the stand-in's own


from tests.helpers import Compose as Pipeline  # torchvision's pipeline of transforms: ours


class Compose(Pipeline):
    def __repr__(self):
        return "Compose(" + ", ".join(type(t).__name__ for t in self.transforms) + ")"


class Resize:
    # nearest neighbour, to (h, w), of a PIL image or an (H, W, C) array
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        image = np.asarray(image)
        (h, w), (n, m) = self.size, image.shape[:2]
        return image[(np.arange(h) * n) // h][:, (np.arange(w) * m) // w]


from tests.helpers import to_tensor
ToTensor = to_tensor(torch)  # torchvision's ToTensor in this library's words: ours, shared


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        return (x - torch.tensor(self.mean).view(-1, 1, 1)) / torch.tensor(self.std).view(-1, 1, 1)


from tests.helpers import image_folder
ImageFolder = image_folder(torch)  # torchvision's ImageFolder in this library's words: ours, shared


class Weights:
    # a member of torchvision's weight enums: its transforms() (the random weights are the models')
    def transforms(self):
        return Compose([Resize((32, 32)), ToTensor(), Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])


class EfficientNet_B0_Weights:
    DEFAULT = Weights()


class ViT_B_16_Weights:
    DEFAULT = Weights()


class EfficientNet(nn.Module):
    # efficientnet_b0 in small, random: its stem, two depthwise-separable blocks (a stride
    # of 8 in all) and the 1x1 convolution up to 1280 channels in .features, .avgpool, .classifier as torchvision's
    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.SiLU(inplace=True)),
            nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16, bias=False), nn.BatchNorm2d(16), nn.SiLU(inplace=True),
                          nn.Conv2d(16, 24, 1, bias=False), nn.BatchNorm2d(24)),
            nn.Sequential(nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24, bias=False), nn.BatchNorm2d(24), nn.SiLU(inplace=True),
                          nn.Conv2d(24, 40, 1, bias=False), nn.BatchNorm2d(40)),
            nn.Sequential(nn.Conv2d(40, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.SiLU(inplace=True)),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2, inplace=True), nn.Linear(1280, num_classes))

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def efficientnet_b0(weights=None):
    return EfficientNet()


class VisionTransformer(nn.Module):
    # vit_b_16 in small, random (32x32 images, 8x8 patches, 32 wide, two layers): torchvision's
    # conv_proj, class_token, pre-norm encoder and .heads
    def __init__(self, image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=32, mlp_dim=64, num_classes=1000):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, (image_size // patch_size) ** 2 + 1, hidden_dim) * 0.02)
        layer = nn.TransformerEncoderLayer(hidden_dim, num_heads, mlp_dim, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.heads = nn.Sequential(nn.Linear(hidden_dim, num_classes))

    def forward(self, x):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, self.hidden_dim, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
        x = self.ln(self.encoder(x))
        return self.heads(x[:, 0])


def vit_b_16(weights=None):
    return VisionTransformer()
"""

# torchinfo's summary (not installed): a forward of zeros, the parameters counted
TORCHINFO = r"""
import torch


def summary(model, input_size, verbose=1, **settings):
    training = model.training
    model.eval()
    with torch.no_grad():
        out = model(torch.zeros(*input_size))
    model.train(training)
    params = list(model.parameters())
    total = sum(p.numel() for p in params)
    trainable = sum(p.numel() for p in params if p.requires_grad)
    text = (f"{type(model).__name__}: {tuple(input_size)} -> {tuple(out.shape)}\n"
            f"Total params: {total:,}\nTrainable params: {trainable:,}\nNon-trainable params: {total - trainable:,}")
    if verbose:
        print(text)
    return text
"""


def pizza_steak_sushi(folder: Path) -> None:
    """``data/pizza_steak_sushi`` as the course's download unzips it: train and test folders
    of pizza, steak and sushi JPEGs (24 and 8 of each, 40x40, each class its own colour
    under noise), and the custom image ``04-pizza-dad.jpeg`` where both notebooks look."""
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    colours = {"pizza": (200, 90, 40), "steak": (120, 60, 30), "sushi": (225, 225, 210)}
    root = folder / "data" / "pizza_steak_sushi"
    for split, n in ("train", 24), ("test", 8):
        for name, colour in colours.items():
            (root / split / name).mkdir(parents=True)
            for i in range(n):
                pixels = np.array(colour) + rng.normal(0, 45, (40, 40, 3))
                Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(root / split / name / f"{i}.jpg")  # fmt: skip
    pizza = np.clip(np.array(colours["pizza"]) + rng.normal(0, 45, (48, 40, 3)), 0, 255)
    for path in folder / "data", root:
        Image.fromarray(pizza.astype(np.uint8)).save(path / "04-pizza-dad.jpeg")


def forget_course_modules() -> None:
    """Out of ``sys.modules``: the course's modules, imported from a test's folder (in one
    library's words), for the next import to read the other's and no later test to find."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("going_modular", "helper_functions")]:  # fmt: skip
        del sys.modules[name]


def modules(lib, folder: Path, monkeypatch) -> None:
    """The course's files in ``lib``'s words beside the notebook (``going_modular`` and
    ``helper_functions.py``, found on ``sys.path``), and the stand-ins ``<lib>vision``,
    ``<lib>info`` and ``requests`` (never called: the data is there) in ``sys.modules``."""
    for name, text in GOING_MODULAR.items():
        path = folder / "going_modular" / "going_modular" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("torch", lib.__name__))
    (folder / "helper_functions.py").write_text(HELPER_FUNCTIONS.replace("torch", lib.__name__))
    forget_course_modules()  # the other library's
    monkeypatch.setattr(sys, "path", [str(folder), *sys.path])
    name = lib.__name__ + "vision"
    base = types.ModuleType(f"{name}._base")
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    parts = {
        "transforms": ("Compose", "Resize", "ToTensor", "Normalize"),
        "datasets": ("ImageFolder",),
        "models": ("EfficientNet_B0_Weights", "efficientnet_b0", "ViT_B_16_Weights", "vit_b_16"),
    }
    package(name, monkeypatch, base, parts, __version__=base.__version__)
    info = types.ModuleType(lib.__name__ + "info")
    exec(TORCHINFO.replace("torch", lib.__name__), info.__dict__)
    monkeypatch.setitem(sys.modules, info.__name__, info)
    monkeypatch.setitem(sys.modules, "requests", types.ModuleType("requests"))


def run(script: str, lib, folder: Path, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded, run as ``__main__`` in ``folder`` beside the
    images and the course's modules, on one thread: what it printed and its globals."""
    import random  # noqa: PLC0415

    import matplotlib.pyplot as plt  # noqa: PLC0415

    folder.mkdir(parents=True)
    pizza_steak_sushi(folder)
    modules(lib, folder, monkeypatch)
    lib.manual_seed(0)
    random.seed(0)
    np.random.seed(0)
    try:
        return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "notebook.py")
    finally:
        plt.close("all")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (the notebooks ask for CUDA
    when there is one: none is answered), matplotlib drawing off screen."""
    try:
        with torch_and_tricycle(monkeypatch, "tqdm", "PIL", agg=True) as (torch, tricycle):
            theirs = run(script, torch, tmp_path / "torch", monkeypatch)
            ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    finally:
        forget_course_modules()
    return theirs, ours


def printed_kinds(printed: str) -> list[str]:
    """``kinds`` of the printed lines, a library's version string as "VERSION"."""
    return kinds(re.sub(r"(?m)^\d+\.\d+\.\d+\S*$", "VERSION", printed))


def as_array(value) -> np.ndarray:
    """A state dict's value (a tensor, or tricycle's array) as a numpy array."""
    return value if isinstance(value, np.ndarray) else host(value)


def grads_as_torchs(ours, theirs, rtol=1e-4, atol=1e-5) -> None:
    """Each gradient of tricycle's model ``ours`` is torch's in ``theirs`` (after both ran
    backward), in tricycle's layout: torch's gradients loaded by ``nn.from_torch`` into a copy
    of the model (a Linear's transposed, a packed attention's split as its weights are). A
    parameter torch leaves without a gradient (frozen) has none here either."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    state = dict(theirs.state_dict())
    for name, q in theirs.named_parameters():
        state[name] = torch.zeros_like(q) if q.grad is None else q.grad
    layout = copy.deepcopy(ours)
    assert tricycle.nn.from_torch(layout, state) == ([], [])
    pairs = list(zip(ours.named_parameters(), layout.named_parameters(), strict=True))
    frozen = [p.numel() for (_, p), _ in pairs if p.grad is None]  # in numbers: a packed
    assert sum(frozen) == sum(q.numel() for q in theirs.parameters() if q.grad is None)  # q, k, v
    for (name, p), (_, want) in pairs:
        if p.grad is None:
            assert not host(want).any(), name
            continue
        np.testing.assert_allclose(host(p.grad), host(want), rtol=rtol, atol=atol, err_msg=name)


def same_outputs(theirs, ours, step) -> None:
    """Tricycle's model given torch's weights: ``step(lib, model)`` (a forward returning a
    loss and outputs) gives torch's outputs and loss, and torch's gradients
    (``grads_as_torchs``)."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    results = []
    for lib, model in (torch, theirs), (tricycle, ours):
        model.zero_grad()
        loss, *outputs = step(lib, model)
        loss.backward()
        results.append([host(loss), *(host(o) for o in outputs)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    grads_as_torchs(ours, theirs)


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def classify(loader):
    """A ``same_outputs`` step: the logits of ``loader``'s first batch (torch's) and their
    cross-entropy."""
    images, labels = (batch.numpy() for batch in next(iter(loader)))

    def step(lib, model):
        logits = model(lib.tensor(images))
        return lib.nn.CrossEntropyLoss()(logits, lib.tensor(labels)), logits

    return step


def figure_title(space: dict, predict, **kwargs) -> str:
    """The title that ``space``'s ``predict`` (a ``pred_and_plot_image``) gives its figure:
    the class predicted and its probability, formatted from the tensors."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close("all")
    predict(class_names=space["class_names"], **kwargs)
    title = plt.gca().get_title()
    plt.close("all")
    return title


def test_transfer_learning(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(TRANSFER, tmp_path, monkeypatch)
    assert printed_kinds(ours) == printed_kinds(theirs)
    # torchinfo's counts of the stand-in EfficientNet: torch's (a Linear's weights transposed)
    assert [line for line in ours.splitlines() if "params" in line] == [
        line for line in theirs.splitlines() if "params" in line
    ]
    assert our["class_names"] == ["pizza", "steak", "sushi"]
    for printed, space in (theirs, their), (ours, our):
        fell(numbers(r"train_loss: ([\d.]+)", printed), 0.5)
        fell(space["results"]["test_loss"], 0.95)  # (eval mode: BatchNorm's running statistics)
        # the frozen features: no gradient; the new classifier: 1280 x 3 + 3, trained
        assert all(p.grad is None and not p.requires_grad for p in space["model"].features.parameters())  # fmt: skip
        assert sum(p.numel() for p in space["model"].parameters() if p.requires_grad) == 3843
        assert all(p.grad is not None for p in space["model"].classifier.parameters())
    # torch's trained network in tricycle's: the same logits, loss and gradients in eval mode
    same_outputs(their["model"].eval(), our["model"].eval(), classify(their["test_dataloader"]))
    # and the notebook's pred_and_plot_image on the custom image: torch's class and probability
    titles = [
        figure_title(
            space,
            space["pred_and_plot_image"],
            model=space["model"],
            image_path=space["custom_image_path"],
        )
        for space in (their, our)
    ]
    assert titles[0].startswith("Pred: ") and titles[1] == titles[0]


def test_paper_replicating(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(PAPER, tmp_path, monkeypatch)
    assert printed_kinds(ours) == printed_kinds(theirs)
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # equation 1's shapes: 16 patches of 8x8 pixels embedded in 32, the class token before them
    for name, shape in (
        ("image_out_of_conv", (1, 32, 4, 4)),
        ("image_out_of_conv_flattened_reshaped", (1, 16, 32)),
        ("patch_and_position_embedding", (1, 17, 32)),
        ("patched_image_through_mlp_block", (1, 17, 32)),
        ("class_token_embedding_expanded", (32, 1, 32)),
    ):
        assert tuple(our[name].shape) == tuple(their[name].shape) == shape, name
    np.testing.assert_array_equal(host(our["patch_embedding_class_token"][:, 0]), np.ones((1, 32)))  # fmt: skip
    assert our["patch_and_position_embedding"].requires_grad
    for printed, space, lib in (theirs, their, torch), (ours, our, tricycle):
        losses = numbers(r"train_loss: ([\d.]+)", printed)
        assert len(losses) == 7  # the ViT's four epochs, then the feature extractor's three
        # from scratch the ViT learns little (the notebook's lesson): an epoch below the first
        assert min(losses[1:4]) < 0.97 * losses[0], losses
        fell(losses[4:], 0.95)
        frozen = [p for n, p in space["pretrained_vit"].named_parameters() if not n.startswith("heads")]  # fmt: skip
        assert all(p.grad is None and not p.requires_grad for p in frozen)
        # the saved feature extractor loads back
        saved = lib.load(Path(space["utils"].__file__).parents[2] / "models" / "08_pretrained_vit_feature_extractor_pizza_steak_sushi.pth")  # fmt: skip
        for name, value in space["pretrained_vit"].state_dict().items():
            np.testing.assert_array_equal(as_array(saved[name]), as_array(value))

    # the notebook's check of its TransformerEncoderBlock against nn.TransformerEncoderLayer
    # (norm first, GELU, batch first): given the layer's weights, the block is the layer
    x = np.random.default_rng(0).normal(size=(2, 17, 32)).astype(np.float32)
    outputs = []
    for lib, space in (torch, their), (tricycle, our):
        layer = space[f"{lib.__name__}_transformer_encoder_layer"].eval()
        block = space["TransformerEncoderBlock"]().eval()
        pairs = (
            (block.msa_block.layer_norm, layer.norm1),
            (block.msa_block.multihead_attn, layer.self_attn),
            (block.mlp_block.layer_norm, layer.norm2),
            (block.mlp_block.mlp[0], layer.linear1),
            (block.mlp_block.mlp[3], layer.linear2),
        )
        for ours_part, layers_part in pairs:
            ours_part.load_state_dict(layers_part.state_dict())
        with lib.no_grad():
            got, want = host(block(lib.tensor(x))), host(layer(lib.tensor(x)))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        outputs.append(want)
    # the layers themselves, tricycle's given torch's weights: torch's numbers
    assert tricycle.nn.from_torch(our["tricycle_transformer_encoder_layer"], their["torch_transformer_encoder_layer"].state_dict()) == ([], [])  # fmt: skip
    with tricycle.no_grad():
        np.testing.assert_allclose(host(our["tricycle_transformer_encoder_layer"](tricycle.tensor(x))), outputs[0], rtol=1e-4, atol=1e-5)  # fmt: skip

    # torch's trained ViT and feature extractor in tricycle's: the same logits, loss and
    # gradients, the class and position embeddings' too
    for name in "vit", "pretrained_vit":
        same_outputs(their[name].eval(), our[name].eval(), classify(their["test_dataloader"]))
    assert our["vit"].position_embedding.grad is not None
    # then one step of the notebook's Adam (weight decay 0.3): torch's new weights
    for lib, space in (torch, their), (tricycle, our):
        lib.optim.Adam(params=space["vit"].parameters(), lr=3e-3, betas=(0.9, 0.999), weight_decay=0.3).step()  # fmt: skip
    stepped = copy.deepcopy(our["vit"])
    assert tricycle.nn.from_torch(stepped, their["vit"].state_dict()) == ([], [])
    for (name, p), (_, want) in zip(our["vit"].named_parameters(), stepped.named_parameters()):
        np.testing.assert_allclose(host(p), host(want), rtol=1e-4, atol=1e-5, err_msg=name)
    # going_modular's pred_and_plot_image on the custom image: torch's class and probability
    titles = [
        figure_title(
            space,
            space["pred_and_plot_image"],
            model=space["pretrained_vit"],
            image_path=space["custom_image_path"],
        )
        for space in (their, our)
    ]
    assert titles[0].startswith("Pred: ") and titles[1] == titles[0]
