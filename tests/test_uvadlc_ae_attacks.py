"""Phillip Lippe's UvA Deep Learning tutorials 9 ("Deep Autoencoders", AE_CIFAR10) and 10
("Adversarial Attacks"), docs/tutorial_notebooks of phlippe/uvadlc_notebooks, run on tricycle
with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_uvadlc_transformers.py and tests/test_torch_vision_tutorials.py).

- tutorial9: ``Encoder`` (strided ``Conv2d``, ``GELU``, ``Flatten``), ``Decoder`` (``Linear``,
  ``reshape``, ``ConvTranspose2d(..., output_padding=1, padding=1, stride=2)``, ``Tanh``), the
  ``Autoencoder``'s summed ``mse_loss(reduction="none").sum(dim=[1,2,3]).mean(dim=[0])``,
  Adam under ``ReduceLROnPlateau``, ``compare_imgs`` on images shifted by ``torch.roll`` and
  half masked by slice writes, the reconstructions of random and plain images
  (``meshgrid`` without ``indexing``), images decoded from random latents, and the retrieval by
  embeddings (``cdist``, ``sort``, ``cat``), on small synthetic 32x32 images in CIFAR10's place;
- tutorial10: a small random CNN in place of the pretrained ResNet34 (and another in
  DenseNet121's), given as the test's ``torchvision.models``, with the images labelled by its
  own predictions (so its top-1 error is 0 and an attack has something to undo); ``eval_model``'s
  top-1/top-5 (``argmax``, ``topk``, ``any``), ``show_prediction`` drawn by matplotlib,
  ``fast_gradient_sign_method`` (``clone().requires_grad_()``, ``gather``, ``sign``,
  ``detach_``), ``place_patch`` writing ``tanh`` of an ``nn.Parameter`` into a batch by slice,
  ``patch_attack`` training it with SGD and momentum, ``eval_patch`` (``logical_and``), the
  patches saved and their results written to JSON, ``perform_patch_attack`` and the transfer to
  the second network.

Lightning's glue is ported to a plain loop (``save_hyperparameters`` as a namespace,
``self.log`` into a dict, ``Trainer.fit``/``test`` as loops with the scheduler stepped on the
validation loss); sizes, epochs, classes and patch sizes are shrunk; plots that need
torchvision's ``make_grid`` or tensorboard are replaced by printing their values; each such line
ends in ``# port:`` and says why. Each notebook runs under torch (skipped without it), then under
tricycle; both print the same lines (numbers aside), the autoencoders learn, FGSM and the patches
fool the network under both. With torch's weights (``nn.from_torch``) the autoencoder gives
torch's reconstructions, loss and gradients and the same neighbours; the attacked CNN (the same
weights under both) gives torch's FGSM images and the patch's gradient. What the notebooks
needed: ``torch.sort`` giving ``(values, indices)`` (tests/test_torch_sort.py) and
``torch.full`` with an integer fill giving int64, as torch's (tests/test_factories.py).
"""

# ruff: noqa: E501, W291, W293, E702

import json
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_tutorials_u import fell

pytestmark = pytest.mark.filterwarnings(
    "ignore:'pin_memory' argument is set as true:UserWarning",
    "ignore:torch.meshgrid. in an upcoming release:UserWarning",
)
AE = r'''
## Standard libraries
import os
import json
import math
import numpy as np 
from types import SimpleNamespace  # port: for save_hyperparameters

## Imports for plotting
# import matplotlib.pyplot as plt  # port: plotting dropped (its values printed)
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: as above
# seaborn, its colours and rcParams  # port: seaborn is not installed, plotting dropped (five lines)

## Progress bar
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim
# Torchvision
# import torchvision  # port: torchvision is not installed: make_grid only plots (dropped)
# from torchvision.datasets import CIFAR10  # port: CIFAR10 is built by the test, in cifar10.npz
# from torchvision import transforms  # port: the images are stored normalised
# PyTorch Lightning  # port: not installed: its glue written as a plain loop below (eight lines)

# Tensorboard extension (for visualization purposes later)
# from torch.utils.tensorboard import SummaryWriter  # port: tensorboard dropped
# %load_ext tensorboard  # port: a notebook's magic

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial9"

# Setting the seed
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device) 

# port: the download of the pretrained models dropped (the models are trained below)

# Transformations applied on each image => only make them a tensor
cifar = np.load(os.path.join(DATASET_PATH, "cifar10.npz"))  # port: CIFAR10's place, in [-1, 1] as ToTensor and Normalize((0.5,),(0.5,)) give

# Loading the training dataset. We need to split it into a training and validation part
train_dataset = data.TensorDataset(torch.tensor(cifar["x_train"]), torch.tensor(cifar["y_train"]))  # port: CIFAR10(train=True)
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
train_set, val_set = torch.utils.data.random_split(train_dataset, [192, 64])  # port: [45000, 5000] shrunk

# Loading the test set
test_set = data.TensorDataset(torch.tensor(cifar["x_test"]), torch.tensor(cifar["y_test"]))  # port: CIFAR10(train=False)

# We define a set of data loaders that we can use for various purposes later.
train_loader = data.DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True, pin_memory=True, num_workers=0)  # port: batch_size=256, num_workers=4 for a few arrays
val_loader = data.DataLoader(val_set, batch_size=64, shuffle=False, drop_last=False, num_workers=0)  # port: as above
test_loader = data.DataLoader(test_set, batch_size=64, shuffle=False, drop_last=False, num_workers=0)  # port: as above

def get_train_images(num):
    return torch.stack([train_dataset[i][0] for i in range(num)], dim=0) 

class Encoder(nn.Module):
    
    def __init__(self, 
                 num_input_channels : int, 
                 base_channel_size : int, 
                 latent_dim : int, 
                 act_fn : object = nn.GELU):
        """
        Inputs: 
            - num_input_channels : Number of input channels of the image. For CIFAR, this parameter is 3
            - base_channel_size : Number of channels we use in the first convolutional layers. Deeper layers might use a duplicate of it.
            - latent_dim : Dimensionality of latent representation z
            - act_fn : Activation function used throughout the encoder network
        """
        super().__init__()
        c_hid = base_channel_size
        self.net = nn.Sequential(
            nn.Conv2d(num_input_channels, c_hid, kernel_size=3, padding=1, stride=2), # 32x32 => 16x16
            act_fn(),
            nn.Conv2d(c_hid, c_hid, kernel_size=3, padding=1),
            act_fn(),
            nn.Conv2d(c_hid, 2*c_hid, kernel_size=3, padding=1, stride=2), # 16x16 => 8x8
            act_fn(),
            nn.Conv2d(2*c_hid, 2*c_hid, kernel_size=3, padding=1),
            act_fn(),
            nn.Conv2d(2*c_hid, 2*c_hid, kernel_size=3, padding=1, stride=2), # 8x8 => 4x4
            act_fn(),
            nn.Flatten(), # Image grid to single feature vector
            nn.Linear(2*16*c_hid, latent_dim)
        )
    
    def forward(self, x):
        return self.net(x) 

class Decoder(nn.Module):
    
    def __init__(self, 
                 num_input_channels : int, 
                 base_channel_size : int, 
                 latent_dim : int, 
                 act_fn : object = nn.GELU):
        """
        Inputs: 
            - num_input_channels : Number of channels of the image to reconstruct. For CIFAR, this parameter is 3
            - base_channel_size : Number of channels we use in the last convolutional layers. Early layers might use a duplicate of it.
            - latent_dim : Dimensionality of latent representation z
            - act_fn : Activation function used throughout the decoder network
        """
        super().__init__()
        c_hid = base_channel_size
        self.linear = nn.Sequential(
            nn.Linear(latent_dim, 2*16*c_hid),
            act_fn()
        )
        self.net = nn.Sequential(
            nn.ConvTranspose2d(2*c_hid, 2*c_hid, kernel_size=3, output_padding=1, padding=1, stride=2), # 4x4 => 8x8
            act_fn(),
            nn.Conv2d(2*c_hid, 2*c_hid, kernel_size=3, padding=1),
            act_fn(),
            nn.ConvTranspose2d(2*c_hid, c_hid, kernel_size=3, output_padding=1, padding=1, stride=2), # 8x8 => 16x16
            act_fn(),
            nn.Conv2d(c_hid, c_hid, kernel_size=3, padding=1),
            act_fn(),
            nn.ConvTranspose2d(c_hid, num_input_channels, kernel_size=3, output_padding=1, padding=1, stride=2), # 16x16 => 32x32
            nn.Tanh() # The input images is scaled between -1 and 1, hence the output has to be bounded as well
        )
    
    def forward(self, x):
        x = self.linear(x)
        x = x.reshape(x.shape[0], -1, 4, 4)
        x = self.net(x)
        return x 

class Autoencoder(nn.Module):  # port: nn.Module, not pl.LightningModule
    
    def __init__(self, 
                 base_channel_size: int, 
                 latent_dim: int, 
                 encoder_class : object = Encoder,
                 decoder_class : object = Decoder,
                 num_input_channels: int = 3, 
                 width: int = 32, 
                 height: int = 32):
        super().__init__()
        # Saving hyperparameters of autoencoder
        self.hparams = SimpleNamespace(base_channel_size=base_channel_size, latent_dim=latent_dim, num_input_channels=num_input_channels, width=width, height=height)  # port: Lightning's save_hyperparameters()
        self.device = device  # port: Lightning's LightningModule.device
        self.logged = {}  # port: what Lightning's self.log keeps
        # Creating encoder and decoder
        self.encoder = encoder_class(num_input_channels, base_channel_size, latent_dim)
        self.decoder = decoder_class(num_input_channels, base_channel_size, latent_dim)
        # Example input array needed for visualizing the graph of the network
        self.example_input_array = torch.zeros(2, num_input_channels, width, height)

    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: as above
        
    def forward(self, x):
        """
        The forward function takes in an image and returns the reconstructed image
        """
        z = self.encoder(x)
        x_hat = self.decoder(z)
        return x_hat
    
    def _get_reconstruction_loss(self, batch):
        """
        Given a batch of images, this function returns the reconstruction loss (MSE in our case)
        """
        x, _ = batch # We do not need the labels
        x_hat = self.forward(x)
        loss = F.mse_loss(x, x_hat, reduction="none")
        loss = loss.sum(dim=[1,2,3]).mean(dim=[0])
        return loss
    
    def configure_optimizers(self):
        optimizer = optim.Adam(self.parameters(), lr=5e-3)  # port: lr=1e-3, for the shrunk run
        # Using a scheduler is optional but can be helpful.
        # The scheduler reduces the LR if the validation performance hasn't improved for the last N epochs
        scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 
                                                         mode='min', 
                                                         factor=0.2, 
                                                         patience=1,  # port: 20 epochs, for 4
                                                         min_lr=5e-5)
        return {"optimizer": optimizer, "lr_scheduler": scheduler, "monitor": "val_loss"}
    
    def training_step(self, batch, batch_idx):
        loss = self._get_reconstruction_loss(batch)                             
        self.log('train_loss', loss)
        return loss
    
    def validation_step(self, batch, batch_idx):
        loss = self._get_reconstruction_loss(batch)
        self.log('val_loss', loss)
    
    def test_step(self, batch, batch_idx):
        loss = self._get_reconstruction_loss(batch)
        self.log('test_loss', loss) 

def compare_imgs(img1, img2, title_prefix=""):
    # Calculate MSE loss between both images
    loss = F.mse_loss(img1, img2, reduction="sum")
    # Plot images for visual comparison
    grid = torch.stack([img1, img2], dim=0)  # port: torchvision's make_grid(..., nrow=2, normalize=True, range=(-1,1)) dropped
    grid = grid.permute(0, 2, 3, 1)  # port: (1, 2, 0) of make_grid's image
    print(f"{title_prefix} Loss: {loss.item():4.2f}", tuple(grid.shape))  # port: the plot's title printed (five lines)

for i in range(2):
    # Load example image
    img, _ = train_dataset[i]
    img_mean = img.mean(dim=[1,2], keepdims=True)

    # Shift image by one pixel
    SHIFT = 1
    img_shifted = torch.roll(img, shifts=SHIFT, dims=1)
    img_shifted = torch.roll(img_shifted, shifts=SHIFT, dims=2)
    img_shifted[:,:1,:] = img_mean
    img_shifted[:,:,:1] = img_mean
    compare_imgs(img, img_shifted, "Shifted -")

    # Set half of the image to zero
    img_masked = img.clone()
    img_masked[:,:img_masked.shape[1]//2,:] = img_mean
    compare_imgs(img, img_masked, "Masked -") 

class GenerateCallback:  # port: pl.Callback
    
    def __init__(self, input_imgs, every_n_epochs=1):
        super().__init__()
        self.input_imgs = input_imgs # Images to reconstruct during training
        self.every_n_epochs = every_n_epochs # Only save those images every N epochs (otherwise tensorboard gets quite large)
        
    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.current_epoch % self.every_n_epochs == 0:
            # Reconstruct images
            input_imgs = self.input_imgs.to(pl_module.device)
            with torch.no_grad():
                pl_module.eval()
                reconst_imgs = pl_module(input_imgs)
                pl_module.train()
            # Plot and add to tensorboard
            imgs = torch.stack([input_imgs, reconst_imgs], dim=1).flatten(0,1)
            print("Reconstructions", tuple(imgs.shape), f"{F.mse_loss(imgs[1::2], imgs[0::2]).item():.4f}")  # port: make_grid and tensorboard's add_image: the images' shape and error printed (two lines)

def fit(model, train_loader, val_loader, max_epochs, callbacks):  # port: the loop of Lightning's Trainer.fit
    config = model.configure_optimizers()  # port: Trainer.fit
    optimizer, scheduler = config["optimizer"], config["lr_scheduler"]  # port: Trainer.fit
    trainer = SimpleNamespace(current_epoch=0)  # port: Trainer.fit
    for epoch in range(max_epochs):  # port: Trainer.fit
        trainer.current_epoch = epoch  # port: Trainer.fit
        model.train()  # port: Trainer.fit
        for batch_idx, batch in enumerate(train_loader):  # port: Trainer.fit
            loss = model.training_step(batch, batch_idx)  # port: Trainer.fit
            optimizer.zero_grad()  # port: Trainer.fit
            loss.backward()  # port: Trainer.fit
            optimizer.step()  # port: Trainer.fit
        val_loss = test(model, val_loader)  # port: Trainer.fit's validation
        scheduler.step(val_loss)  # port: Trainer.fit, monitor "val_loss"
        print(f"Epoch {epoch}: train_loss {model.logged['train_loss']:.2f}, val_loss {val_loss:.2f}, lr {optimizer.param_groups[0]['lr']:.5f}")  # port: Trainer.fit's log and LearningRateMonitor
        for callback in callbacks:  # port: Trainer.fit
            callback.on_train_epoch_end(trainer, model)  # port: Trainer.fit

@torch.no_grad()  # port: the loop of Lightning's Trainer.test
def test(model, loader):  # port: Trainer.test
    model.eval()  # port: Trainer.test
    losses = []  # port: Trainer.test
    for batch_idx, batch in enumerate(loader):  # port: Trainer.test
        model.test_step(batch, batch_idx)  # port: Trainer.test
        losses.append(model.logged["test_loss"] * len(batch[0]))  # port: Trainer.test
    model.train()  # port: Trainer.test
    return sum(losses) / len(loader.dataset)  # port: Trainer.test, weighted by batch size

def train_cifar(latent_dim):
    # Create a PyTorch Lightning trainer with the generation callback
    max_epochs = 4  # port: pl.Trainer(max_epochs=500, callbacks=[...]): ModelCheckpoint and the logger dropped
    callbacks = [GenerateCallback(get_train_images(8), every_n_epochs=2)]  # port: every_n_epochs=10
    
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, f"cifar10_{latent_dim}.ckpt")
    if os.path.isfile(pretrained_filename):
        print("Found pretrained model, loading...")
        model = Autoencoder.load_from_checkpoint(pretrained_filename)
    else:
        model = Autoencoder(base_channel_size=8, latent_dim=latent_dim)  # port: base_channel_size=32 shrunk
        fit(model, train_loader, val_loader, max_epochs, callbacks)  # port: trainer.fit(model, train_loader, val_loader)
    # Test best model on validation and test set
    val_result = [{"test_loss": test(model, val_loader)}]  # port: trainer.test(model, val_loader, verbose=False)
    test_result = [{"test_loss": test(model, test_loader)}]  # port: trainer.test(model, test_loader, verbose=False)
    result = {"test": test_result, "val": val_result}
    return model, result 

model_dict = {}
for latent_dim in [16, 64]:  # port: [64, 128, 256, 384] shrunk
    model_ld, result_ld = train_cifar(latent_dim)
    model_dict[latent_dim] = {"model": model_ld, "result": result_ld} 

latent_dims = sorted([k for k in model_dict])
val_scores = [model_dict[k]["result"]["val"][0]["test_loss"] for k in latent_dims]
print("Reconstruction error over latent dimensionality", latent_dims, [round(s, 2) for s in val_scores])  # port: the plot's values printed (ten lines)

def visualize_reconstructions(model, input_imgs):
    # Reconstruct images
    model.eval()
    with torch.no_grad():
        reconst_imgs = model(input_imgs.to(model.device))
    reconst_imgs = reconst_imgs.cpu()
    
    # Plotting
    imgs = torch.stack([input_imgs, reconst_imgs], dim=1).flatten(0,1)
    print(f"Reconstructed from {model.hparams.latent_dim} latents", tuple(imgs.shape), f"{F.mse_loss(imgs[1::2], imgs[0::2]).item():.4f}")  # port: make_grid and the plot: the title, shape and error printed (seven lines)

input_imgs = get_train_images(4)
for latent_dim in model_dict:
    visualize_reconstructions(model_dict[latent_dim]["model"], input_imgs) 

rand_imgs = torch.rand(2, 3, 32, 32) * 2 - 1
visualize_reconstructions(model_dict[64]["model"], rand_imgs)  # port: model_dict[256] of the shrunk dims

plain_imgs = torch.zeros(4, 3, 32, 32)

# Single color channel
plain_imgs[1,0] = 1 
# Checkboard pattern
plain_imgs[2,:,:16,:16] = 1
plain_imgs[2,:,16:,16:] = -1
# Color progression
xx, yy = torch.meshgrid(torch.linspace(-1,1,32), torch.linspace(-1,1,32))
plain_imgs[3,0,:,:] = xx
plain_imgs[3,1,:,:] = yy

visualize_reconstructions(model_dict[64]["model"], plain_imgs)  # port: model_dict[256] of the shrunk dims

model = model_dict[64]["model"]  # port: model_dict[256] of the shrunk dims
latent_vectors = torch.randn(8, model.hparams.latent_dim, device=model.device)
with torch.no_grad():
    imgs = model.decoder(latent_vectors)
    imgs = imgs.cpu()

print("Generated", tuple(imgs.shape), f"{imgs.min().item():.2f} {imgs.max().item():.2f}")  # port: make_grid and the plot: the images' shape and range printed (six lines)

# We use the following model throughout this section. 
# If you want to try a different latent dimensionality, change it here!
model = model_dict[16]["model"]  # port: model_dict[128] of the shrunk dims

def embed_imgs(model, data_loader):
    # Encode all images in the data_laoder using model, and return both images and encodings
    img_list, embed_list = [], []
    model.eval()
    for imgs, _ in tqdm(data_loader, desc="Encoding images", leave=False):
        with torch.no_grad():
            z = model.encoder(imgs.to(model.device))
        img_list.append(imgs)
        embed_list.append(z)
    return (torch.cat(img_list, dim=0), torch.cat(embed_list, dim=0))

train_img_embeds = embed_imgs(model, train_loader)
test_img_embeds = embed_imgs(model, test_loader)

def find_similar_images(query_img, query_z, key_embeds, K=8):
    # Find closest K images. We use the euclidean distance here but other like cosine distance can also be used.
    dist = torch.cdist(query_z[None,:], key_embeds[1], p=2)
    dist = dist.squeeze(dim=0)
    dist, indices = torch.sort(dist)
    # Plot K closest images
    imgs_to_display = torch.cat([query_img[None], key_embeds[0][indices[:K]]], dim=0)
    print("Closest", tuple(imgs_to_display.shape), f"{dist[0].item():.3f} {dist[K-1].item():.3f}")  # port: make_grid and the plot: the images' shape and distances printed (seven lines)
    return indices[:K]  # port: the neighbours, for the test

# Plot the closest images for the first N test images as example
neighbours = []  # port: kept for the test
for i in range(8):
    neighbours.append(find_similar_images(test_img_embeds[0][i], test_img_embeds[1][i], key_embeds=train_img_embeds))  # port: kept for the test

# port: the tensorboard projector's cells dropped (SummaryWriter, add_embedding)
'''
ATTACKS = r"""
## Standard libraries
import os
import json
import math
import time
import numpy as np 
import random  # port: for pl.seed_everything
import scipy.linalg

## Imports for plotting
import matplotlib.pyplot as plt
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: as above
from matplotlib.colors import to_rgb
import matplotlib
matplotlib.rcParams['lines.linewidth'] = 2.0
# import seaborn as sns  # port: seaborn is not installed
# sns.set()  # port: as above

## Progress bar
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim
# Torchvision
import torchvision  # port: the test's: small random CNNs in place of the pretrained networks
# from torchvision.datasets import CIFAR10  # port: unused
# from torchvision import transforms  # port: the images are stored normalised
# PyTorch Lightning  # port: not installed (only its seed_everything is used, below; eight lines)

# Path to the folder where the datasets are/should be downloaded (e.g. MNIST)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial10"

# Setting the seed
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

# Fetching the device that will be used throughout this notebook
device = torch.device("cpu") if not torch.cuda.is_available() else torch.device("cuda:0")
print("Using device", device) 

# port: the download of TinyImageNet and the patches dropped (the test writes the data; the patches are trained below)
os.makedirs(CHECKPOINT_PATH, exist_ok=True)  # port: the download cell's, kept

# Load CNN architecture pretrained on ImageNet
os.environ["TORCH_HOME"] = CHECKPOINT_PATH
pretrained_model = torchvision.models.resnet34(weights='IMAGENET1K_V1')
pretrained_model = pretrained_model.to(device)

# No gradients needed for the network
pretrained_model.eval()
for p in pretrained_model.parameters():
    p.requires_grad = False 

# Mean and Std from ImageNet
NORM_MEAN = np.array([0.485, 0.456, 0.406])
NORM_STD = np.array([0.229, 0.224, 0.225])
# No resizing and center crop necessary as images are already preprocessed.
# port: transforms.Compose([ToTensor(), Normalize(NORM_MEAN, NORM_STD)]) dropped: the images are stored normalised (five lines)

# Load dataset and create data loader
imagenet_path = os.path.join(DATASET_PATH, "TinyImageNet/")
assert os.path.isdir(imagenet_path), f"Could not find the ImageNet dataset at expected path \"{imagenet_path}\". " + \
                                     f"Please make sure to have downloaded the ImageNet dataset here, or change the {DATASET_PATH=} variable."
images = np.load(os.path.join(imagenet_path, "images.npz"))  # port: ImageFolder's place: the images built by the test
dataset = data.TensorDataset(torch.tensor(images["x"]), torch.tensor(images["y"]))  # port: as above
data_loader = data.DataLoader(dataset, batch_size=32, shuffle=False, drop_last=False, num_workers=0)  # port: num_workers=8 for a few arrays

# Load label names to interpret the label numbers 0 to 999
with open(os.path.join(imagenet_path, "label_list.json"), "r") as f:
    label_names = json.load(f)
    
def get_label_index(lab_str):
    assert lab_str in label_names, f"Label \"{lab_str}\" not found. Check the spelling of the class."
    return label_names.index(lab_str) 

def eval_model(dataset_loader, img_func=None):
    tp, tp_5, counter = 0., 0., 0.
    for imgs, labels in tqdm(dataset_loader, desc="Validating..."):
        imgs = imgs.to(device)
        labels = labels.to(device)
        if img_func is not None:
            imgs = img_func(imgs, labels) 
        with torch.no_grad():
            preds = pretrained_model(imgs)
        tp += (preds.argmax(dim=-1) == labels).sum()
        tp_5 += (preds.topk(5, dim=-1)[1] == labels[...,None]).any(dim=-1).sum()
        counter += preds.shape[0]
    acc = tp.float().item()/counter
    top5 = tp_5.float().item()/counter
    print(f"Top-1 error: {(100.0 * (1 - acc)):4.2f}%")
    print(f"Top-5 error: {(100.0 * (1 - top5)):4.2f}%")
    return acc, top5 

_ = eval_model(data_loader) 

def show_prediction(img, label, pred, K=5, adv_img=None, noise=None):
    
    if isinstance(img, torch.Tensor):
        # Tensor image to numpy
        img = img.cpu().permute(1, 2, 0).numpy()
        img = (img * NORM_STD[None,None]) + NORM_MEAN[None,None]
        img = np.clip(img, a_min=0.0, a_max=1.0)
        label = label.item()
    
    # Plot on the left the image with the true label as title.
    # On the right, have a horizontal bar plot with the top k predictions including probabilities
    if noise is None or adv_img is None:
        fig, ax = plt.subplots(1, 2, figsize=(10,2), gridspec_kw={'width_ratios': [1, 1]})
    else:
        fig, ax = plt.subplots(1, 5, figsize=(12,2), gridspec_kw={'width_ratios': [1, 1, 1, 1, 2]})
    
    ax[0].imshow(img)
    ax[0].set_title(label_names[label])
    ax[0].axis('off')
    
    if adv_img is not None and noise is not None:
        # Visualize adversarial images
        adv_img = adv_img.cpu().permute(1, 2, 0).numpy()
        adv_img = (adv_img * NORM_STD[None,None]) + NORM_MEAN[None,None]
        adv_img = np.clip(adv_img, a_min=0.0, a_max=1.0)
        ax[1].imshow(adv_img)
        ax[1].set_title('Adversarial')
        ax[1].axis('off')
        # Visualize noise
        noise = noise.cpu().permute(1, 2, 0).numpy()
        noise = noise * 0.5 + 0.5 # Scale between 0 to 1 
        ax[2].imshow(noise)
        ax[2].set_title('Noise')
        ax[2].axis('off')
        # buffer
        ax[3].axis('off')
    
    if abs(pred.sum().item() - 1.0) > 1e-4:
        pred = torch.softmax(pred, dim=-1)
    topk_vals, topk_idx = pred.topk(K, dim=-1)
    topk_vals, topk_idx = topk_vals.cpu().numpy(), topk_idx.cpu().numpy()
    ax[-1].barh(np.arange(K), topk_vals*100.0, align='center', color=["C0" if topk_idx[i]!=label else "C2" for i in range(K)])
    ax[-1].set_yticks(np.arange(K))
    ax[-1].set_yticklabels([label_names[c] for c in topk_idx])
    ax[-1].invert_yaxis()
    ax[-1].set_xlabel('Confidence')
    ax[-1].set_title('Predictions')
    print("Predictions", label_names[label], [label_names[c] for c in topk_idx], np.round(topk_vals, 3).tolist())  # port: what the plot shows, printed
    
    plt.show()
    plt.close() 

exmp_batch, label_batch = next(iter(data_loader))
with torch.no_grad():
    preds = pretrained_model(exmp_batch.to(device))
for i in range(1,17,5):
    show_prediction(exmp_batch[i], label_batch[i], preds[i]) 

def fast_gradient_sign_method(model, imgs, labels, epsilon=0.02):
    # Determine prediction of the model
    inp_imgs = imgs.clone().requires_grad_()
    preds = model(inp_imgs.to(device))
    preds = F.log_softmax(preds, dim=-1)
    # Calculate loss by NLL
    loss = -torch.gather(preds, 1, labels.to(device).unsqueeze(dim=-1))
    loss.sum().backward()
    # Update image to adversarial example as written above
    noise_grad = torch.sign(inp_imgs.grad.to(imgs.device))
    fake_imgs = imgs + epsilon * noise_grad
    fake_imgs.detach_()
    return fake_imgs, noise_grad 

adv_imgs, noise_grad = fast_gradient_sign_method(pretrained_model, exmp_batch, label_batch, epsilon=0.02)
with torch.no_grad():
    adv_preds = pretrained_model(adv_imgs.to(device))
    
for i in range(1,17,5):
    show_prediction(exmp_batch[i], label_batch[i], adv_preds[i], adv_img=adv_imgs[i], noise=noise_grad[i]) 

_ = eval_model(data_loader, img_func=lambda x, y: fast_gradient_sign_method(pretrained_model, x, y, epsilon=0.02)[0]) 

def place_patch(img, patch):
    for i in range(img.shape[0]):
        h_offset = np.random.randint(0,img.shape[2]-patch.shape[1]-1)
        w_offset = np.random.randint(0,img.shape[3]-patch.shape[2]-1)
        img[i,:,h_offset:h_offset+patch.shape[1],w_offset:w_offset+patch.shape[2]] = patch_forward(patch)
    return img 

TENSOR_MEANS, TENSOR_STD = torch.FloatTensor(NORM_MEAN)[:,None,None], torch.FloatTensor(NORM_STD)[:,None,None]
def patch_forward(patch):
    # Map patch values from [-infty,infty] to ImageNet min and max
    patch = (torch.tanh(patch) + 1 - 2 * TENSOR_MEANS) / (2 * TENSOR_STD)
    return patch 

def eval_patch(model, patch, val_loader, target_class):
    model.eval()
    tp, tp_5, counter = 0., 0., 0.
    with torch.no_grad():
        for img, img_labels in tqdm(val_loader, desc="Validating...", leave=False):
            # For stability, place the patch at 4 random locations per image, and average the performance
            for _ in range(4): 
                patch_img = place_patch(img, patch)
                patch_img = patch_img.to(device)
                img_labels = img_labels.to(device)
                pred = model(patch_img)
                # In the accuracy calculation, we need to exclude the images that are of our target class
                # as we would not "fool" the model into predicting those
                tp += torch.logical_and(pred.argmax(dim=-1) == target_class, img_labels != target_class).sum()
                tp_5 += torch.logical_and((pred.topk(5, dim=-1)[1] == target_class).any(dim=-1), img_labels != target_class).sum()
                counter += (img_labels != target_class).sum()
    acc = tp/counter
    top5 = tp_5/counter
    return acc, top5 

def patch_attack(model, target_class, patch_size=64, num_epochs=5):
    # Leave a small set of images out to check generalization
    # In most of our experiments, the performance on the hold-out data points
    # was as good as on the training set. Overfitting was little possible due
    # to the small size of the patches.
    train_set, val_set = torch.utils.data.random_split(dataset, [64, 32])  # port: [4500, 500] shrunk
    train_loader = data.DataLoader(train_set, batch_size=16, shuffle=True, drop_last=True, num_workers=0)  # port: batch_size=32 and num_workers=8: more steps over a few arrays
    val_loader = data.DataLoader(val_set, batch_size=32, shuffle=False, drop_last=False, num_workers=0)  # port: num_workers=4 for a few arrays
    
    # Create parameter and optimizer
    if not isinstance(patch_size, tuple):
        patch_size = (patch_size, patch_size)
    patch = nn.Parameter(torch.zeros(3, patch_size[0], patch_size[1]), requires_grad=True)
    optimizer = torch.optim.SGD([patch], lr=5, momentum=0.8)  # port: lr=1e-1, for 20 steps, not 700
    loss_module = nn.CrossEntropyLoss()
    
    # Training loop
    for epoch in range(num_epochs):
        t = tqdm(train_loader, leave=False)
        for img, _ in t:
            img = place_patch(img, patch)
            img = img.to(device)
            pred = model(img)
            labels = torch.zeros(img.shape[0], device=pred.device, dtype=torch.long).fill_(target_class)
            loss = loss_module(pred, labels)
            optimizer.zero_grad()
            loss.mean().backward()
            optimizer.step()
            t.set_description(f"Epoch {epoch}, Loss: {loss.item():4.2f}")
            print(f"Epoch {epoch}, Loss: {loss.item():4.2f}")  # port: the bar's description, printed for the test
    
    # Final validation
    acc, top5 = eval_patch(model, patch, val_loader, target_class)
    
    return patch.data, {"acc": acc.item(), "top5": top5.item()} 

# Load evaluation results of the pretrained patches
json_results_file = os.path.join(CHECKPOINT_PATH, "patch_results.json")
json_results = {}
if os.path.isfile(json_results_file):
    with open(json_results_file, "r") as f:
        json_results = json.load(f)
        
# If you train new patches, you can save the results via calling this function
def save_results(patch_dict):
    result_dict = {cname: {psize: [t.item() if isinstance(t, torch.Tensor) else t 
                                   for t in patch_dict[cname][psize]["results"]] 
                           for psize in patch_dict[cname]} 
                   for cname in patch_dict}
    with open(os.path.join(CHECKPOINT_PATH, "patch_results.json"), "w") as f:
        json.dump(result_dict, f, indent=4) 

def get_patches(class_names, patch_sizes):
    result_dict = dict()

    # Loop over all classes and patch sizes
    for name in class_names:
        result_dict[name] = dict()
        for patch_size in patch_sizes:
            c = label_names.index(name)
            file_name = os.path.join(CHECKPOINT_PATH, f"{name}_{patch_size}_patch.pt")
            # Load patch if pretrained file exists, otherwise start training
            if not os.path.isfile(file_name):
                patch, val_results = patch_attack(pretrained_model, target_class=c, patch_size=patch_size, num_epochs=5)
                print(f"Validation results for {name} and {patch_size}:", val_results)
                torch.save(patch, file_name)
            else:
                patch = torch.load(file_name)
            # Load evaluation results if exist, otherwise manually evaluate the patch
            if name in json_results:
                results = json_results[name][str(patch_size)]
            else:
                results = eval_patch(pretrained_model, patch, data_loader, target_class=c)    
            
            # Store results and the patches in a dict for better access
            result_dict[name][patch_size] = {
                "results": results,
                "patch": patch
            }
        
    return result_dict 

class_names = ['goldfish', 'school bus']  # port: five classes shrunk to two
patch_sizes = [16, 24]  # port: [32, 48, 64] of 64x64 images: these are 32x32

patch_dict = get_patches(class_names, patch_sizes)
save_results(patch_dict) # Uncomment if you add new class names and want to save the new results  # port: run, for the test

def show_patches():
    fig, ax = plt.subplots(len(patch_sizes), len(class_names), figsize=(len(class_names)*2.2, len(patch_sizes)*2.2))
    for c_idx, cname in enumerate(class_names):
        for p_idx, psize in enumerate(patch_sizes):
            patch = patch_dict[cname][psize]["patch"]
            patch = (torch.tanh(patch) + 1) / 2 # Parameter to pixel values
            patch = patch.cpu().permute(1, 2, 0).numpy()
            patch = np.clip(patch, a_min=0.0, a_max=1.0)
            ax[p_idx][c_idx].imshow(patch)
            ax[p_idx][c_idx].set_title(f"{cname}, size {psize}")
            ax[p_idx][c_idx].axis('off')
    fig.subplots_adjust(hspace=0.3, wspace=0.3)
    plt.show()
show_patches() 

# port: the %%html cell dropped
# import tabulate  # port: tabulate is not installed: the table printed row by row
# from IPython.display import display, HTML  # port: IPython is not installed

def show_table(top_1=True):
    i = 0 if top_1 else 1
    table = [[name] + [f"{(100.0 * patch_dict[name][psize]['results'][i]):4.2f}%" for psize in patch_sizes]
             for name in class_names]
    print("\n".join(" | ".join(row) for row in [["Class name"] + [f"Patch size {psize}x{psize}" for psize in patch_sizes]] + table))  # port: tabulate's HTML table, printed

show_table(top_1=True) 

show_table(top_1=False) 

def perform_patch_attack(patch):
    patch_batch = exmp_batch.clone()
    patch_batch = place_patch(patch_batch, patch)
    with torch.no_grad():
        patch_preds = pretrained_model(patch_batch.to(device))
    for i in range(1,17,5):
        show_prediction(patch_batch[i], label_batch[i], patch_preds[i]) 

perform_patch_attack(patch_dict['goldfish'][16]['patch'])  # port: [32] of the shrunk sizes

perform_patch_attack(patch_dict['school bus'][24]['patch'])  # port: [64] of the shrunk sizes

transfer_model = torchvision.models.densenet121(weights='IMAGENET1K_V1')
transfer_model = transfer_model.to(device)

# No gradients needed for the network
transfer_model.eval()
for p in transfer_model.parameters():
    p.requires_grad = False 

class_name = 'school bus'  # port: 'pineapple', of the two classes kept
patch_size = 24  # port: 64 of the shrunk sizes
print(f"Testing patch \"{class_name}\" of size {patch_size}x{patch_size}")

results = eval_patch(transfer_model, 
                     patch_dict[class_name][patch_size]["patch"], 
                     data_loader, 
                     target_class=label_names.index(class_name))

print(f"Top-1 fool accuracy: {(results[0] * 100.0):4.2f}%")
print(f"Top-5 fool accuracy: {(results[1] * 100.0):4.2f}%") 
"""

# the test's torchvision.models' network: "pretrained" ResNet34 and DenseNet121 are small
# random CNNs, their weights written by the test (``<name>.npz``, torch's names and layout)
MODELS = r"""
import torch
import torch.nn as nn


class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.fc = nn.Linear(32 * 4 * 4, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))

"""

LABELS = ["goldfish", "school bus", "toaster", "lipstick", "pineapple"] + [
    f"class {i}" for i in range(5, 10)
]


def smooth_images(rng, n: int, cells: int = 4) -> np.ndarray:
    """``n`` images (N, 3, 32, 32) in [0, 1]: a random grid of ``cells`` x ``cells`` colours
    blown up, plus a gradient and a little noise."""
    coarse = np.kron(rng.uniform(0, 1, (n, 3, cells, cells)), np.ones((32 // cells, 32 // cells)))
    v, u = np.mgrid[0:32, 0:32] / 31.0
    slope = rng.uniform(-0.3, 0.3, (n, 3, 1, 1)) * (u + v - 1)
    return np.clip(coarse + slope + rng.normal(0, 0.02, coarse.shape), 0, 1)


def write_data(root) -> None:
    """What the notebooks read from ``root``: CIFAR10's stand-in (``data/cifar10.npz``, in
    [-1, 1]), TinyImageNet's (``data/TinyImageNet/images.npz``, normalised with ImageNet's
    mean and std, and its ``label_list.json``), and the two "pretrained" CNNs' weights
    (``notebooks/<name>.npz``), with the images labelled by the first one's predictions."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = 2 * smooth_images(rng, 320, cells=2) - 1
    (root / "data" / "TinyImageNet").mkdir(parents=True)
    (root / "notebooks").mkdir()
    np.savez(
        root / "data" / "cifar10.npz",
        x_train=x[:256].astype(np.float32),
        y_train=rng.integers(0, 10, 256),
        x_test=x[256:].astype(np.float32),
        y_test=rng.integers(0, 10, 64),
    )
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    images = ((smooth_images(rng, 96) - mean[:, None, None]) / std[:, None, None]).astype(
        np.float32
    )
    space = {}
    exec(MODELS, space)
    for seed, name in (0, "resnet34"), (1, "densenet121"):
        torch.manual_seed(seed)
        model = space["SmallCNN"]().eval()
        with torch.no_grad():  # sharper scores, as a trained network's
            model.fc.weight.mul_(10)
        np.savez(
            root / "notebooks" / f"{name}.npz",
            **{k: v.numpy() for k, v in model.state_dict().items()},
        )
        if name == "resnet34":
            with torch.no_grad():
                labels = model(torch.tensor(images)).argmax(-1).numpy()
    np.savez(root / "data" / "TinyImageNet" / "images.npz", x=images, y=labels)
    (root / "data" / "TinyImageNet" / "label_list.json").write_text(json.dumps(LABELS))


def vision(lib, monkeypatch) -> None:
    """``<lib>vision`` with ``models`` (``MODELS`` in ``lib``), in ``sys.modules``."""
    name = lib.__name__ + "vision"
    module, models = types.ModuleType(name), types.ModuleType(name + ".models")
    exec(MODELS.replace("torch", lib.__name__), models.__dict__)

    def pretrained(name):
        model = models.SmallCNN()
        state = {k: lib.tensor(v) for k, v in np.load(name + ".npz").items()}  # in the cwd
        if lib.__name__ == "tricycle":
            lib.nn.from_torch(model, state)
        else:
            model.load_state_dict(state)
        return model

    models.resnet34 = lambda weights=None: pretrained("resnet34")
    models.densenet121 = lambda weights=None: pretrained("densenet121")
    module.models = models
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, name + ".models", models)


def both(script: str, tmp_path):
    """``script`` run as ``__main__`` in ``<lib>/notebooks`` beside ``<lib>/data`` under
    torch, then with ``torch`` replaced by ``tricycle`` in its text, both on the CPU (the
    notebooks pick "cuda" when it is there: none is answered) on one thread, matplotlib
    drawing off screen: (what it printed, its globals) for each."""
    torch = pytest.importorskip("torch")
    matplotlib = pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    import tricycle  # noqa: PLC0415

    matplotlib.use("Agg")
    results = []
    with pytest.MonkeyPatch.context() as monkeypatch, one_thread(torch):
        for lib in torch, tricycle:  # the same branches under both, on any machine
            monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        for lib in torch, tricycle:
            root = tmp_path / lib.__name__
            write_data(root)
            vision(lib, monkeypatch)
            text = script.replace("torch", lib.__name__)
            printed, space = run_main(text, root / "notebooks", monkeypatch, "notebook.py")
            space["NOTEBOOKS"] = root / "notebooks"  # where its relative paths lead
            results.append((printed, space))
    return results


@pytest.fixture(scope="module")
def autoencoders(tmp_path_factory):
    """tutorial9 run under both libraries, once for the module's tests."""
    return both(AE, tmp_path_factory.mktemp("tutorial9"))


@pytest.fixture(scope="module")
def attacks(tmp_path_factory):
    """tutorial10 run under both libraries, once for the module's tests."""
    return both(ATTACKS, tmp_path_factory.mktemp("tutorial10"))


def host(x) -> np.ndarray:
    """A torch or tricycle tensor's values as a numpy array."""
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x.numpy())


def test_autoencoder_tutorial(autoencoders):
    (theirs, their_space), (ours, space) = autoencoders
    assert lines(ours) == lines(theirs)
    # compare_imgs' errors of the shifted and masked images are the data's: torch's numbers
    for kind in "Shifted", "Masked":
        pattern = rf"{kind} - Loss: ([\d.]+)"
        np.testing.assert_allclose(numbers(pattern, ours), numbers(pattern, theirs), rtol=1e-5)
    for printed, s in (theirs, their_space), (ours, space):
        val = numbers(r"val_loss ([\d.]+)", printed)
        assert len(val) == 8
        fell(val[:4], 0.9)  # each autoencoder learns: the latent 16 one, then the 64 one
        fell(val[4:], 0.9)
        # the retrieval: each query's neighbours sorted by distance, from the training keys
        assert len(s["neighbours"]) == 8
        for indices in s["neighbours"]:
            assert sorted(host(indices).tolist()) == sorted(set(host(indices).tolist()))
        distances = re.findall(r"Closest \(9, 3, 32, 32\) ([\d.]+) ([\d.]+)", printed)
        assert len(distances) == 8 and all(float(a) <= float(b) for a, b in distances)
        assert host(s["plain_imgs"])[3, 0, :, 0].tolist() == host(s["xx"])[:, 0].tolist()


def test_autoencoder_gives_torchs_numbers_with_torchs_weights(autoencoders):
    """torch's trained autoencoder in tricycle's (``nn.from_torch``): the same embeddings,
    reconstructions, loss and gradients of the parameters (``ConvTranspose2d``'s among them)
    and of the input, and the same neighbours in retrieval."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = autoencoders
    theirs, ours = their_space["model_dict"][16]["model"], space["model_dict"][16]["model"]
    # the example input, a plain Tensor attribute, is a buffer in tricycle (module.py): torch
    # does not save it, so it is the one name left to load
    assert nn.from_torch(ours, theirs.state_dict(), strict=False) == (["example_input_array"], [])
    x = np.random.default_rng(1).uniform(-1, 1, (6, 3, 32, 32)).astype(np.float32)
    results = []
    for lib, model in (torch, theirs), (tricycle, ours):
        model.train()
        model.zero_grad()
        image = lib.tensor(x, requires_grad=True)
        loss = model._get_reconstruction_loss((image, None))
        loss.backward()
        results.append(
            [host(model.encoder(image)), host(model(image)), host(loss), host(image.grad)]
        )
    for got, want in zip(*results[::-1]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    grads = torch_layout_grads(ours)
    grads.pop("example_input_array")
    assert grads.keys() == dict(theirs.named_parameters()).keys()
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-4, err_msg=name)
    # retrieval: the same keys embedded by both, the same closest images in the same order
    keys = their_space["test_img_embeds"][0]
    for s, lib in (their_space, torch), (space, tricycle):
        s["keys"] = s["embed_imgs"](s["model_dict"][16]["model"], s["data"].DataLoader(
            s["data"].TensorDataset(lib.tensor(host(keys)), lib.zeros(len(keys))), batch_size=64))  # fmt: skip
    for i in range(4):
        found = [
            host(s["find_similar_images"](s["keys"][0][i], s["keys"][1][i], key_embeds=s["keys"]))
            for s in (their_space, space)
        ]
        assert found[0][0] == i and found[1].tolist() == found[0].tolist()


def classes(printed: str) -> list[str]:
    """``lines`` with the class names as CLASS: the networks' top predictions of attacked
    images may differ between the libraries where scores are close."""
    return lines(re.sub("|".join(map(re.escape, LABELS)), "CLASS", printed))


def test_attacks_tutorial(attacks):
    (theirs, their_space), (ours, space) = attacks
    assert classes(ours) == classes(theirs)
    # the clean images' predictions (of the same weights) are torch's
    predictions = r"(?m)^Predictions .*$"
    assert re.findall(predictions, ours)[:4] == re.findall(predictions, theirs)[:4]
    for printed, s in (theirs, their_space), (ours, space):
        # the network labels its own images (no error); FGSM of 0.02 undoes most of that
        top1 = numbers(r"Top-1 error: ([\d.]+)%", printed)
        assert top1[0] == 0 and top1[1] > 50, top1
        # each patch learns: the larger one makes the network say its class almost always
        results = json.loads(
            (s["NOTEBOOKS"] / s["CHECKPOINT_PATH"] / "patch_results.json").read_text()
        )
        assert set(results) == {"goldfish", "school bus"}
        for name in results:
            assert results[name]["24"][0] > 0.9 and results[name]["16"][0] > 0.2, results
        losses = numbers(r"Epoch \d, Loss: ([\d.]+)", printed)
        assert len(losses) == 4 * 20
        for attack in range(4):
            run = losses[20 * attack : 20 * attack + 20]
            assert np.mean(run[-5:]) < 0.8 * np.mean(run[:5]), run
        assert s["patch_dict"]["goldfish"][24]["patch"].shape == (3, 24, 24)
    np.testing.assert_allclose(numbers(r"Top-1 error: ([\d.]+)%", ours), numbers(r"Top-1 error: ([\d.]+)%", theirs))  # fmt: skip


def test_attacks_give_torchs_numbers(attacks):
    """The same network under both: FGSM gives torch's adversarial images and noise, and a
    patch placed at the same places gets torch's loss and gradient (through ``tanh``, the
    slice write into the batch and the network)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    (_, their_space), (_, space) = attacks
    batch, labels = host(their_space["exmp_batch"]), host(their_space["label_batch"])
    patch = host(their_space["patch_dict"]["school bus"][16]["patch"])
    results = []
    for lib, s in (torch, their_space), (tricycle, space):
        model = s["pretrained_model"]
        adv, noise = s["fast_gradient_sign_method"](model, lib.tensor(batch), lib.tensor(labels))
        theirs_patch = lib.nn.Parameter(lib.tensor(patch))
        np.random.seed(3)  # the places place_patch draws
        pred = model(s["place_patch"](lib.tensor(batch), theirs_patch))
        loss = lib.nn.CrossEntropyLoss()(pred, lib.full((len(batch),), 1))
        loss.backward()
        results.append([host(adv), host(noise), host(pred), host(loss), host(theirs_patch.grad)])
    assert np.abs(results[0][1]).sum() > 0.9 * results[0][1].size  # a sign almost everywhere
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
