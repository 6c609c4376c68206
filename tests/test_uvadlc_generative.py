"""Phillip Lippe's UvA Deep Learning tutorials 8 ("Deep Energy-Based Generative Models") and
12 ("Autoregressive Image Modeling"), docs/tutorial_notebooks of phlippe/uvadlc_notebooks, run
on tricycle with ``torch`` replaced by ``tricycle`` in their text (docs/pytorch.md's promise;
the method of tests/test_uvadlc_transformers.py).

- tutorial8: ``CNNModel`` (strided ``Conv2d``s with a hand-written ``Swish``, ``Flatten``,
  ``squeeze(dim=-1)``), the ``Sampler``'s Langevin dynamics on an input that needs a gradient
  (``inp_imgs.requires_grad = True``, parameters frozen and thawed by ``p.requires_grad``,
  ``torch.is_grad_enabled``/``set_grad_enabled``, ``noise.normal_``, ``.data.add_`` and
  ``.data.clamp_``, ``inp_imgs.grad.data.clamp_``, ``grad.detach_()``/``zero_()``,
  ``random.choices`` over the example buffer, ``chunk``), the contrastive-divergence loss with
  its regulariser (``real_imgs.add_(noise).clamp_``), Adam with ``betas=(0.0, 0.999)`` under
  ``StepLR``, gradient clipping, the generation callback (``return_img_per_step``,
  ``torch.stack``) and the scores of random, noisy, flipped (``flip(dims=(1,2))``) and tiny
  images.
- tutorial12: ``MaskedConvolution`` (a mask registered as a buffer, ``weight.data *= mask``
  before each convolution), ``VerticalStackConvolution``/``HorizontalStackConvolution``, the
  receptive fields by input gradients (``backward(retain_graph=True)``, ``img.grad.fill_(0)``),
  ``GatedMaskedConv`` (dilated convolutions, ``chunk``, tanh times sigmoid), ``PixelCNN``
  (``F.elu``, the 5-D logits, ``calc_likelihood``'s ``F.cross_entropy(reduction='none')`` over
  (N, 256, C, H, W) and ``mean(dim=[1,2,3])`` in bits per dimension), its ``sample`` loop
  (``torch.multinomial``, writes into a long image under ``@torch.no_grad()``), the
  autocompletion of half images, the mean output distribution and the discrete logistic.

Lightning's glue is ported to plain Python (``save_hyperparameters`` as a dict read both ways,
``self.log`` into a dict, ``Trainer.fit``/``test`` as loops, the callbacks called by the loop),
the plots printed or kept as values, MNIST replaced by sklearn's digits made in the test (28x28
in [-1, 1] for tutorial8; 8x8 binarised for tutorial12), sizes, steps and epochs shrunk, the
learning rates raised for the shorter runs. Each changed line ends in ``# port:`` and says why
(a conv's ``weight`` is tricycle's ``weights``, in torch's layout: documented). Each notebook
runs under torch (skipped without it), then under tricycle; both print the same lines (numbers
aside) and learn: the energy model scores the digits above noise, the PixelCNN's bits per
dimension fall. The receptive fields are torch's, pixel for pixel. With torch's weights
(``nn.from_torch``) the energy model gives torch's energies, Langevin gradients and loss
gradients, and the PixelCNN torch's bits per dimension and gradients. What the tutorials
needed: ``Tensor.flip(dims=...)`` by name, as torch's (tests/test_tensor_torch.py).
"""

# ruff: noqa: E501, W291, W293

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import numbers
from tests.test_torch_tutorials_u import fell
from tests.test_uvadlc_intro import kinds

pytestmark = pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true:UserWarning")

# tutorial8/Deep_Energy_Models.ipynb, its code cells (the download and plotting ones left out)
ENERGY = r'''## Standard libraries
import os
import json
import math
import numpy as np 
import random

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim

# Path to the folder where the datasets are/should be downloaded (e.g. CIFAR10)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial8"

# Setting the seed
torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

device = torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")
print("Device:", device) 

images = np.load(os.path.join(DATASET_PATH, "images.npz"))  # port: MNIST's stand-in, 28x28 in [-1, 1] (ToTensor and Normalize((0.5,), (0.5,)))
train_set = data.TensorDataset(torch.tensor(images["x_train"]), torch.tensor(images["y_train"]))  # port: MNIST(train=True)
test_set = data.TensorDataset(torch.tensor(images["x_test"]), torch.tensor(images["y_test"]))  # port: MNIST(train=False)

# We define a set of data loaders that we can use for various purposes later.
# Note that for actually training a model, we will use different data loaders
# with a lower batch size.
train_loader = data.DataLoader(train_set, batch_size=16, shuffle=True,  drop_last=True, pin_memory=True)  # port: batch 128 shrunk, no worker processes
test_loader  = data.DataLoader(test_set,  batch_size=32, shuffle=False, drop_last=False)  # port: batch 256 shrunk, no worker processes

class Swish(nn.Module):
    
    def forward(self, x):
        return x * torch.sigmoid(x)


class CNNModel(nn.Module):

    def __init__(self, hidden_features=32, out_dim=1, **kwargs):
        super().__init__()
        # We increase the hidden dimension over layers. Here pre-calculated for simplicity.
        c_hid1 = hidden_features//2
        c_hid2 = hidden_features
        c_hid3 = hidden_features*2
        
        # Series of convolutions and Swish activation functions
        self.cnn_layers = nn.Sequential(
                nn.Conv2d(1, c_hid1, kernel_size=5, stride=2, padding=4), # [16x16] - Larger padding to get 32x32 image
                Swish(),
                nn.Conv2d(c_hid1, c_hid2, kernel_size=3, stride=2, padding=1), #  [8x8]
                Swish(),
                nn.Conv2d(c_hid2, c_hid3, kernel_size=3, stride=2, padding=1), # [4x4]
                Swish(),
                nn.Conv2d(c_hid3, c_hid3, kernel_size=3, stride=2, padding=1), # [2x2]
                Swish(),
                nn.Flatten(),
                nn.Linear(c_hid3*4, c_hid3),
                Swish(),
                nn.Linear(c_hid3, out_dim)
        )

    def forward(self, x):
        x = self.cnn_layers(x).squeeze(dim=-1)
        return x 

class Sampler:

    def __init__(self, model, img_shape, sample_size, max_len=8192):
        """
        Inputs:
            model - Neural network to use for modeling E_theta
            img_shape - Shape of the images to model
            sample_size - Batch size of the samples
            max_len - Maximum number of data points to keep in the buffer
        """
        super().__init__()
        self.model = model
        self.img_shape = img_shape
        self.sample_size = sample_size
        self.max_len = max_len
        self.examples = [(torch.rand((1,)+img_shape)*2-1) for _ in range(self.sample_size)]

    def sample_new_exmps(self, steps=60, step_size=10):
        """
        Function for getting a new batch of "fake" images.
        Inputs:
            steps - Number of iterations in the MCMC algorithm
            step_size - Learning rate nu in the algorithm above
        """
        # Choose 95% of the batch from the buffer, 5% generate from scratch
        n_new = np.random.binomial(self.sample_size, 0.05)
        rand_imgs = torch.rand((n_new,) + self.img_shape) * 2 - 1
        old_imgs = torch.cat(random.choices(self.examples, k=self.sample_size-n_new), dim=0)
        inp_imgs = torch.cat([rand_imgs, old_imgs], dim=0).detach().to(device)

        # Perform MCMC sampling
        inp_imgs = Sampler.generate_samples(self.model, inp_imgs, steps=steps, step_size=step_size)

        # Add new images to the buffer and remove old ones if needed
        self.examples = list(inp_imgs.to(torch.device("cpu")).chunk(self.sample_size, dim=0)) + self.examples
        self.examples = self.examples[:self.max_len]
        return inp_imgs

    @staticmethod
    def generate_samples(model, inp_imgs, steps=60, step_size=10, return_img_per_step=False):
        """
        Function for sampling images for a given model. 
        Inputs:
            model - Neural network to use for modeling E_theta
            inp_imgs - Images to start from for sampling. If you want to generate new images, enter noise between -1 and 1.
            steps - Number of iterations in the MCMC algorithm.
            step_size - Learning rate nu in the algorithm above
            return_img_per_step - If True, we return the sample at every iteration of the MCMC
        """
        # Before MCMC: set model parameters to "required_grad=False"
        # because we are only interested in the gradients of the input. 
        is_training = model.training
        model.eval()
        for p in model.parameters():
            p.requires_grad = False
        inp_imgs.requires_grad = True
        
        # Enable gradient calculation if not already the case
        had_gradients_enabled = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        
        # We use a buffer tensor in which we generate noise each loop iteration.
        # More efficient than creating a new tensor every iteration.
        noise = torch.randn(inp_imgs.shape, device=inp_imgs.device)
        
        # List for storing generations at each step (for later analysis)
        imgs_per_step = []
        
        # Loop over K (steps)
        for _ in range(steps):
            # Part 1: Add noise to the input.
            noise.normal_(0, 0.005)
            inp_imgs.data.add_(noise.data)
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            
            # Part 2: calculate gradients for the current input.
            out_imgs = -model(inp_imgs)
            out_imgs.sum().backward()
            inp_imgs.grad.data.clamp_(-0.03, 0.03) # For stabilizing and preventing too high gradients

            # Apply gradients to our current samples
            inp_imgs.data.add_(-step_size * inp_imgs.grad.data)
            inp_imgs.grad.detach_()
            inp_imgs.grad.zero_()
            inp_imgs.data.clamp_(min=-1.0, max=1.0)
            
            if return_img_per_step:
                imgs_per_step.append(inp_imgs.clone().detach())
        
        # Reactivate gradients for parameters for training
        for p in model.parameters():
            p.requires_grad = True
        model.train(is_training)
        
        # Reset gradient calculation to setting before this function
        torch.set_grad_enabled(had_gradients_enabled)

        if return_img_per_step:
            return torch.stack(imgs_per_step, dim=0)
        else:
            return inp_imgs 

class AttributeDict(dict):  # port: Lightning's hparams, read as h["img_shape"] and h.img_shape
    __getattr__ = dict.__getitem__  # port: as above

class DeepEnergyModel(nn.Module):  # port: nn.Module, not pl.LightningModule
    
    def __init__(self, img_shape, batch_size, alpha=0.1, lr=1e-4, beta1=0.0, **CNN_args):
        super().__init__()
        self.hparams = AttributeDict(img_shape=img_shape, batch_size=batch_size, alpha=alpha, lr=lr, beta1=beta1, **CNN_args)  # port: Lightning's save_hyperparameters()
        self.logged = {}  # port: what Lightning's self.log keeps
        
        self.cnn = CNNModel(**CNN_args)
        self.sampler = Sampler(self.cnn, img_shape=img_shape, sample_size=batch_size)
        self.example_input_array = torch.zeros(1, *img_shape)

    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: Lightning's self.log

    @property  # port: Lightning's LightningModule.device
    def device(self):  # port: as above
        return device  # port: as above
 
    def forward(self, x):
        z = self.cnn(x)
        return z

    def configure_optimizers(self):
        # Energy models can have issues with momentum as the loss surfaces changes with its parameters. 
        # Hence, we set it to 0 by default. 
        optimizer = optim.Adam(self.parameters(), lr=self.hparams.lr, betas=(self.hparams.beta1, 0.999))
        scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.97) # Exponential decay over epochs
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        # We add minimal noise to the original images to prevent the model from focusing on purely "clean" inputs
        real_imgs, _ = batch
        small_noise = torch.randn_like(real_imgs) * 0.005
        real_imgs.add_(small_noise).clamp_(min=-1.0, max=1.0)
        
        # Obtain samples
        fake_imgs = self.sampler.sample_new_exmps(steps=10, step_size=10)  # port: 60 steps shrunk
        
        # Predict energy score for all images
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = self.cnn(inp_imgs).chunk(2, dim=0)
        
        # Calculate losses
        reg_loss = self.hparams.alpha * (real_out ** 2 + fake_out ** 2).mean()
        cdiv_loss = fake_out.mean() - real_out.mean()
        loss = reg_loss + cdiv_loss
        
        # Logging
        self.log('loss', loss)
        self.log('loss_regularization', reg_loss)
        self.log('loss_contrastive_divergence', cdiv_loss)
        self.log('metrics_avg_real', real_out.mean())
        self.log('metrics_avg_fake', fake_out.mean())
        return loss

    def validation_step(self, batch, batch_idx):
        # For validating, we calculate the contrastive divergence between purely random images and unseen examples
        # Note that the validation/test step of energy-based models depends on what we are interested in the model
        real_imgs, _ = batch
        fake_imgs = torch.rand_like(real_imgs) * 2 - 1
        
        inp_imgs = torch.cat([real_imgs, fake_imgs], dim=0)
        real_out, fake_out = self.cnn(inp_imgs).chunk(2, dim=0)
        
        cdiv = fake_out.mean() - real_out.mean()
        self.log('val_contrastive_divergence', cdiv)
        self.log('val_fake_out', fake_out.mean())
        self.log('val_real_out', real_out.mean()) 

class GenerateCallback:  # port: pl.Callback, called by the loop below

    def __init__(self, batch_size=8, vis_steps=8, num_steps=256, every_n_epochs=5):
        super().__init__()
        self.batch_size = batch_size         # Number of images to generate
        self.vis_steps = vis_steps           # Number of steps within generation to visualize
        self.num_steps = num_steps           # Number of steps to take during generation
        self.every_n_epochs = every_n_epochs # Only save those images every N epochs (otherwise tensorboard gets quite large)

    def on_epoch_end(self, trainer, pl_module):
        # Skip for all other epochs
        if trainer.current_epoch % self.every_n_epochs == 0:
            # Generate images
            imgs_per_step = self.generate_imgs(pl_module)
            # Plot and add to tensorboard
            for i in range(imgs_per_step.shape[1]):
                step_size = self.num_steps // self.vis_steps
                imgs_to_plot = imgs_per_step[step_size-1::step_size,i]
                print(f"generation_{i}", tuple(imgs_to_plot.shape))  # port: printed, not drawn on tensorboard

    def generate_imgs(self, pl_module):
        pl_module.eval()
        start_imgs = torch.rand((self.batch_size,) + pl_module.hparams["img_shape"]).to(pl_module.device)
        start_imgs = start_imgs * 2 - 1
        torch.set_grad_enabled(True)  # Tracking gradients for sampling necessary
        imgs_per_step = Sampler.generate_samples(pl_module.cnn, start_imgs, steps=self.num_steps, step_size=10, return_img_per_step=True)
        torch.set_grad_enabled(False)
        pl_module.train()
        return imgs_per_step 

class OutlierCallback:  # port: pl.Callback, called by the loop below
    
    def __init__(self, batch_size=1024):
        super().__init__()
        self.batch_size = batch_size
    
    def on_epoch_end(self, trainer, pl_module):
        with torch.no_grad():
            pl_module.eval()
            rand_imgs = torch.rand((self.batch_size,) + pl_module.hparams["img_shape"]).to(pl_module.device)
            rand_imgs = rand_imgs * 2 - 1.0
            rand_out = pl_module.cnn(rand_imgs).mean()
            pl_module.train()
        
        print(f"rand_out {rand_out.item():.4f}")  # port: printed, not logged to tensorboard

class Trainer:  # port: the loop of Lightning's Trainer.fit
    def __init__(self, max_epochs, gradient_clip_val, callbacks):  # port: as above
        self.max_epochs, self.gradient_clip_val, self.callbacks = max_epochs, gradient_clip_val, callbacks  # port: as above

    def fit(self, model, train_loader, val_loader):  # port: as above
        [optimizer], [scheduler] = model.configure_optimizers()  # port: as above
        for self.current_epoch in range(self.max_epochs):  # port: as above
            model.train()  # port: as above
            torch.set_grad_enabled(True)  # port: Lightning trains with gradients on (the callback turned them off)
            for batch_idx, batch in enumerate(train_loader):  # port: as above
                loss = model.training_step(batch, batch_idx)  # port: as above
                optimizer.zero_grad()  # port: as above
                loss.backward()  # port: as above
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.gradient_clip_val)  # port: as above
                optimizer.step()  # port: as above
            scheduler.step()  # port: as above, interval 'epoch'
            model.eval()  # port: as above
            with torch.no_grad():  # port: as above
                cdivs = []  # port: as above
                for batch_idx, batch in enumerate(val_loader):  # port: as above
                    model.validation_step(batch, batch_idx)  # port: as above
                    cdivs.append(model.logged['val_contrastive_divergence'])  # port: as above
            model.train()  # port: as above
            print(f"Epoch {self.current_epoch}: loss {model.logged['loss']:.4f}, cdiv {model.logged['loss_contrastive_divergence']:.4f}, val_cdiv {np.mean(cdivs):.4f}")  # port: Lightning's log
            for callback in self.callbacks:  # port: as above
                callback.on_epoch_end(self, model)  # port: as above

def train_model(**kwargs):
    # Create a PyTorch Lightning trainer with the generation callback
    trainer = Trainer(max_epochs=3,  # port: pl.Trainer, 60 epochs shrunk
                         gradient_clip_val=0.1,
                         callbacks=[GenerateCallback(batch_size=2, vis_steps=2, num_steps=4, every_n_epochs=2),  # port: 8 images, 256 steps shrunk
                                    OutlierCallback(batch_size=64),  # port: 1024 images shrunk
                                   ])  # port: the checkpoint and the learning-rate monitor and sampler's plots left out
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, "MNIST.ckpt")
    if os.path.isfile(pretrained_filename):
        print("Found pretrained model, loading...")
        model = DeepEnergyModel.load_from_checkpoint(pretrained_filename)
    else:
        torch.manual_seed(42); np.random.seed(42); random.seed(42)  # port: pl.seed_everything(42)
        model = DeepEnergyModel(**kwargs)
        trainer.fit(model, train_loader, test_loader)
    # No testing as we are more interested in other properties
    return model 

model = train_model(img_shape=(1,28,28), 
                    batch_size=train_loader.batch_size,
                    hidden_features=8,  # port: 32 channels shrunk
                    lr=2e-3,  # port: 1e-4 raised for the shorter run
                    beta1=0.0) 

model.to(device)
torch.manual_seed(43); np.random.seed(43); random.seed(43)  # port: pl.seed_everything(43)
callback = GenerateCallback(batch_size=4, vis_steps=4, num_steps=16)  # port: 8 visible of 256 steps shrunk
imgs_per_step = callback.generate_imgs(model)
imgs_per_step = imgs_per_step.cpu() 
print("Generated:", tuple(imgs_per_step.shape), round(imgs_per_step.min().item(), 4), round(imgs_per_step.max().item(), 4))  # port: printed, not plotted

with torch.no_grad():
    rand_imgs = torch.rand((128,) + model.hparams.img_shape).to(model.device)
    rand_imgs = rand_imgs * 2 - 1.0
    rand_out = model.cnn(rand_imgs).mean()
    print(f"Average score for random images: {rand_out.item():4.2f}") 

with torch.no_grad():
    train_imgs,_ = next(iter(train_loader))
    train_imgs = train_imgs.to(model.device)
    train_out = model.cnn(train_imgs).mean()
    print(f"Average score for training images: {train_out.item():4.2f}") 

@torch.no_grad()
def compare_images(img1, img2):
    imgs = torch.stack([img1, img2], dim=0).to(model.device)
    score1, score2 = model.cnn(imgs).cpu().chunk(2, dim=0)
    print(f"Score original image: {score1.item():4.2f}")
    print(f"Score transformed image: {score2.item():4.2f}") 

test_imgs, _ = next(iter(test_loader))
exmp_img = test_imgs[0].to(model.device) 

img_noisy = exmp_img + torch.randn_like(exmp_img) * 0.3
img_noisy.clamp_(min=-1.0, max=1.0)
compare_images(exmp_img, img_noisy) 

img_flipped = exmp_img.flip(dims=(1,2))
compare_images(exmp_img, img_flipped) 

img_tiny = torch.zeros_like(exmp_img)-1
img_tiny[:,exmp_img.shape[1]//2:,exmp_img.shape[2]//2:] = exmp_img[:,::2,::2]
compare_images(exmp_img, img_tiny) 

'''

# tutorial12/Autoregressive_Image_Modeling.ipynb, its code cells (the download and plotting ones left out)
PIXELCNN = r'''## Standard libraries
import os
import math
import numpy as np 

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
CHECKPOINT_PATH = "../saved_models/tutorial12"

# Setting the seed
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

# Fetching the device that will be used throughout this notebook
device = torch.device("cpu") if not torch.cuda.is_available() else torch.device("cuda:0")
print("Using device", device) 

# Convert images from 0-1 to 0-255 (integers). We use the long datatype as we will use the images as labels as well
def discretize(sample):
    return (sample * 255).to(torch.long)

images = np.load(os.path.join(DATASET_PATH, "binary.npz"))  # port: MNIST's stand-in, small binarised digits in {0, 1} (ToTensor's range)
train_dataset = data.TensorDataset(discretize(torch.tensor(images["x_train"])), torch.tensor(images["y_train"]))  # port: MNIST(train=True, transform=transform)
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
train_set, val_set = torch.utils.data.random_split(train_dataset, [192, 64])  # port: 50000 and 10000 shrunk

# Loading the test set
test_set = data.TensorDataset(discretize(torch.tensor(images["x_test"])), torch.tensor(images["y_test"]))  # port: MNIST(train=False, transform=transform)

# We define a set of data loaders that we can use for various purposes later.
train_loader = data.DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True, pin_memory=True)  # port: batch 128 shrunk, no worker processes
val_loader = data.DataLoader(val_set, batch_size=32, shuffle=False, drop_last=False)  # port: as above
test_loader = data.DataLoader(test_set, batch_size=32, shuffle=False, drop_last=False)  # port: as above

class MaskedConvolution(nn.Module):
    
    def __init__(self, c_in, c_out, mask, **kwargs):
        """
        Implements a convolution with mask applied on its weights.
        Inputs:
            c_in - Number of input channels
            c_out - Number of output channels
            mask - Tensor of shape [kernel_size_H, kernel_size_W] with 0s where
                   the convolution should be masked, and 1s otherwise.
            kwargs - Additional arguments for the convolution
        """
        super().__init__()
        # For simplicity: calculate padding automatically 
        kernel_size = (mask.shape[0], mask.shape[1])
        dilation = 1 if "dilation" not in kwargs else kwargs["dilation"]
        padding = tuple([dilation*(kernel_size[i]-1)//2 for i in range(2)])
        # Actual convolution
        self.conv = nn.Conv2d(c_in, c_out, kernel_size, padding=padding, **kwargs)
        
        # Mask as buffer => it is no parameter but still a tensor of the module 
        # (must be moved with the devices)
        self.register_buffer('mask', mask[None,None])
        
    def forward(self, x):
        (self.conv.weights if hasattr(self.conv, 'weights') else self.conv.weight).data *= self.mask # Ensures zero's at masked positions  # port: a conv's weight is tricycle's weights, in torch's layout (documented)
        return self.conv(x) 

class VerticalStackConvolution(MaskedConvolution):
    
    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        # Mask out all pixels below. For efficiency, we could also reduce the kernel
        # size in height, but for simplicity, we stick with masking here.
        mask = torch.ones(kernel_size, kernel_size)
        mask[kernel_size//2+1:,:] = 0
        
        # For the very first convolution, we will also mask the center row
        if mask_center:
            mask[kernel_size//2,:] = 0
        
        super().__init__(c_in, c_out, mask, **kwargs)
        
class HorizontalStackConvolution(MaskedConvolution):
    
    def __init__(self, c_in, c_out, kernel_size=3, mask_center=False, **kwargs):
        # Mask out all pixels on the left. Note that our kernel has a size of 1
        # in height because we only look at the pixel in the same row.
        mask = torch.ones(1,kernel_size)
        mask[0,kernel_size//2+1:] = 0
        
        # For the very first convolution, we will also mask the center pixel
        if mask_center:
            mask[0,kernel_size//2] = 0
        
        super().__init__(c_in, c_out, mask, **kwargs) 

inp_img = torch.zeros(1, 1, 11, 11)
inp_img.requires_grad_()

receptive_fields = []  # port: the plots' values, kept

def show_center_recep_field(img, out):
    """
    Calculates the gradients of the input with respect to the output center pixel,
    and visualizes the overall receptive field.
    Inputs:
        img - Input image for which we want to calculate the receptive field on.
        out - Output features/loss which is used for backpropagation, and should be
              the output of the network/computation graph.
    """
    # Determine gradients
    loss = out[0,:,img.shape[2]//2,img.shape[3]//2].sum() # L1 loss for simplicity
    loss.backward(retain_graph=True) # Retain graph as we want to stack multiple layers and show the receptive field of all of them
    img_grads = img.grad.abs()
    img.grad.fill_(0) # Reset grads
    
    # Plot receptive field
    img = img_grads.squeeze().cpu().numpy()
    receptive_fields.append(img)  # port: kept in place of the plot
    # Mark the center pixel in red if it doesn't have any gradients (should be the case for standard autoregressive models)
    show_center = (img[img.shape[0]//2,img.shape[1]//2] == 0)
    print("Receptive field:", int((img>0).sum()), "pixels, center masked:", bool(show_center))  # port: printed, not plotted

show_center_recep_field(inp_img, inp_img) 

horiz_conv = HorizontalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=True)
(horiz_conv.conv.weights if hasattr(horiz_conv.conv, 'weights') else horiz_conv.conv.weight).data.fill_(1)  # port: a conv's weight is tricycle's weights, in torch's layout (documented)
horiz_conv.conv.bias.data.fill_(0)
horiz_img = horiz_conv(inp_img)
show_center_recep_field(inp_img, horiz_img) 

vert_conv = VerticalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=True)
(vert_conv.conv.weights if hasattr(vert_conv.conv, 'weights') else vert_conv.conv.weight).data.fill_(1)  # port: as above
vert_conv.conv.bias.data.fill_(0)
vert_img = vert_conv(inp_img)
show_center_recep_field(inp_img, vert_img) 

horiz_img = vert_img + horiz_img
show_center_recep_field(inp_img, horiz_img) 

# Initialize convolutions with equal weight to all input pixels
horiz_conv = HorizontalStackConvolution(c_in=1, c_out=1, kernel_size=3, mask_center=False)
(horiz_conv.conv.weights if hasattr(horiz_conv.conv, 'weights') else horiz_conv.conv.weight).data.fill_(1)  # port: as above
horiz_conv.conv.bias.data.fill_(0)
vert_conv = VerticalStackConvolution(c_in=1, c_out=1, kernel_size=3,mask_center=False)
(vert_conv.conv.weights if hasattr(vert_conv.conv, 'weights') else vert_conv.conv.weight).data.fill_(1)  # port: as above
vert_conv.conv.bias.data.fill_(0)

# We reuse our convolutions for the 4 layers here. Note that in a standard network,
# we don't do that, and instead learn 4 separate convolution. As this cell is only for
# visualization purposes, we reuse the convolutions for all layers.
for l_idx in range(4):
    vert_img = vert_conv(vert_img)
    horiz_img = horiz_conv(horiz_img) + vert_img
    print(f"Layer {l_idx+2}")
    show_center_recep_field(inp_img, horiz_img) 

show_center_recep_field(inp_img, vert_img) 

del inp_img, horiz_conv, vert_conv 

class GatedMaskedConv(nn.Module):
    
    def __init__(self, c_in, **kwargs):
        """
        Gated Convolution block implemented the computation graph shown above.
        """
        super().__init__()
        self.conv_vert = VerticalStackConvolution(c_in, c_out=2*c_in, **kwargs)
        self.conv_horiz = HorizontalStackConvolution(c_in, c_out=2*c_in, **kwargs)
        self.conv_vert_to_horiz = nn.Conv2d(2*c_in, 2*c_in, kernel_size=1, padding=0)
        self.conv_horiz_1x1 = nn.Conv2d(c_in, c_in, kernel_size=1, padding=0)
    
    def forward(self, v_stack, h_stack):
        # Vertical stack (left)
        v_stack_feat = self.conv_vert(v_stack)
        v_val, v_gate = v_stack_feat.chunk(2, dim=1)
        v_stack_out = torch.tanh(v_val) * torch.sigmoid(v_gate)
        
        # Horizontal stack (right)
        h_stack_feat = self.conv_horiz(h_stack)
        h_stack_feat = h_stack_feat + self.conv_vert_to_horiz(v_stack_feat)
        h_val, h_gate = h_stack_feat.chunk(2, dim=1)
        h_stack_feat = torch.tanh(h_val) * torch.sigmoid(h_gate)
        h_stack_out = self.conv_horiz_1x1(h_stack_feat)
        h_stack_out = h_stack_out + h_stack
        
        return v_stack_out, h_stack_out 

class PixelCNN(nn.Module):  # port: nn.Module, not pl.LightningModule
    
    def __init__(self, c_in, c_hidden):
        super().__init__()
        self.logged = {}  # port: what Lightning's self.log keeps
        
        # Initial convolutions skipping the center pixel
        self.conv_vstack = VerticalStackConvolution(c_in, c_hidden, mask_center=True)
        self.conv_hstack = HorizontalStackConvolution(c_in, c_hidden, mask_center=True)
        # Convolution block of PixelCNN. We use dilation instead of downscaling
        self.conv_layers = nn.ModuleList([
            GatedMaskedConv(c_hidden),
            GatedMaskedConv(c_hidden, dilation=2),
            GatedMaskedConv(c_hidden),
            GatedMaskedConv(c_hidden, dilation=4),
            GatedMaskedConv(c_hidden),
            GatedMaskedConv(c_hidden, dilation=2),
            GatedMaskedConv(c_hidden)
        ])
        # Output classification convolution (1x1)
        self.conv_out = nn.Conv2d(c_hidden, c_in * 256, kernel_size=1, padding=0)
        
        self.example_input_array = train_set[0][0][None]

    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: as above
        
    def forward(self, x):
        """
        Forward image through model and return logits for each pixel.
        Inputs:
            x - Image tensor with integer values between 0 and 255.
        """
        # Scale input from 0 to 255 back to -1 to 1
        x = (x.float() / 255.0) * 2 - 1 
        
        # Initial convolutions
        v_stack = self.conv_vstack(x)
        h_stack = self.conv_hstack(x)
        # Gated Convolutions
        for layer in self.conv_layers:
            v_stack, h_stack = layer(v_stack, h_stack)
        # 1x1 classification convolution
        # Apply ELU before 1x1 convolution for non-linearity on residual connection
        out = self.conv_out(F.elu(h_stack))
        
        # Output dimensions: [Batch, Classes, Channels, Height, Width]
        out = out.reshape(out.shape[0], 256, out.shape[1]//256, out.shape[2], out.shape[3])
        return out
    
    def calc_likelihood(self, x):
        # Forward pass with bpd likelihood calculation
        pred = self.forward(x)
        nll = F.cross_entropy(pred, x, reduction='none')
        bpd = nll.mean(dim=[1,2,3]) * np.log2(np.exp(1))
        return bpd.mean()
        
    @torch.no_grad()
    def sample(self, img_shape, img=None):
        """
        Sampling function for the autoregressive model.
        Inputs:
            img_shape - Shape of the image to generate (B,C,H,W)
            img (optional) - If given, this tensor will be used as
                             a starting image. The pixels to fill 
                             should be -1 in the input tensor.
        """
        # Create empty image
        if img is None:
            img = torch.zeros(img_shape, dtype=torch.long).to(device) - 1
        # Generation loop
        for h in tqdm(range(img_shape[2]), leave=False):
            for w in range(img_shape[3]):
                for c in range(img_shape[1]):
                    # Skip if not to be filled (-1)
                    if (img[:,c,h,w] != -1).all().item():
                        continue
                    # For efficiency, we only have to input the upper part of the image
                    # as all other parts will be skipped by the masked convolutions anyways
                    pred = self.forward(img[:,:,:h+1,:]) 
                    probs = F.softmax(pred[:,:,c,h,w], dim=-1)
                    img[:,c,h,w] = torch.multinomial(probs, num_samples=1).squeeze(dim=-1)
        return img
    
    def configure_optimizers(self):
        optimizer = optim.Adam(self.parameters(), lr=1e-2)  # port: 1e-3 raised for the shorter run
        scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.99)
        return [optimizer], [scheduler]
    
    def training_step(self, batch, batch_idx):
        loss = self.calc_likelihood(batch[0])                             
        self.log('train_bpd', loss)
        return loss
    
    def validation_step(self, batch, batch_idx):
        loss = self.calc_likelihood(batch[0])
        self.log('val_bpd', loss)
    
    def test_step(self, batch, batch_idx):
        loss = self.calc_likelihood(batch[0])
        self.log('test_bpd', loss) 

test_model = PixelCNN(c_in=1, c_hidden=8)  # port: 64 channels shrunk
inp = torch.zeros(1,1,28,28)
inp.requires_grad_()
out = test_model(inp)
show_center_recep_field(inp, out.squeeze(dim=2))
del inp, out, test_model 

class Trainer:  # port: the loop of Lightning's Trainer
    def __init__(self, max_epochs):  # port: as above
        self.max_epochs = max_epochs  # port: as above

    def fit(self, model, train_loader, val_loader):  # port: as above
        [optimizer], [scheduler] = model.configure_optimizers()  # port: as above
        for epoch in range(self.max_epochs):  # port: as above
            model.train()  # port: as above
            for batch_idx, batch in enumerate(train_loader):  # port: as above
                loss = model.training_step(batch, batch_idx)  # port: as above
                optimizer.zero_grad()  # port: as above
                loss.backward()  # port: as above
                optimizer.step()  # port: as above
                print(f"Step {batch_idx}: train_bpd {model.logged['train_bpd']:.4f}")  # port: Lightning's log
            scheduler.step()  # port: as above, interval 'epoch'
            print(f"Epoch {epoch}: val_bpd {self.test(model, val_loader, 'val')[0]['val_bpd']:.4f}")  # port: Lightning's log

    @torch.no_grad()  # port: as above
    def test(self, model, loader, mode='test', verbose=False):  # port: as above
        model.eval()  # port: as above
        total = 0.0  # port: as above
        for batch_idx, batch in enumerate(loader):  # port: as above
            (model.validation_step if mode == 'val' else model.test_step)(batch, batch_idx)  # port: as above
            total += model.logged[f"{mode}_bpd"] * len(batch[0])  # port: as above
        model.train()  # port: as above
        return [{f"{mode}_bpd": total / len(loader.dataset)}]  # port: as above, weighted by batch size

def train_model(**kwargs):
    # Create a PyTorch Lightning trainer with the generation callback
    trainer = Trainer(max_epochs=2)  # port: pl.Trainer, 150 epochs shrunk, the checkpoint and the learning-rate monitor left out
    result = None
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, "PixelCNN.ckpt")
    if os.path.isfile(pretrained_filename):
        print("Found pretrained model, loading...")
        model = PixelCNN.load_from_checkpoint(pretrained_filename)
        ckpt = torch.load(pretrained_filename, map_location=device)
        result = ckpt.get("result", None)
    else:
        model = PixelCNN(**kwargs)
        trainer.fit(model, train_loader, val_loader)
    model = model.to(device)
    
    if result is None:
        # Test best model on validation and test set
        val_result = trainer.test(model, val_loader, verbose=False)
        test_result = trainer.test(model, test_loader, verbose=False)
        result = {"test": test_result, "val": val_result}
    return model, result 

model, result = train_model(c_in=1, c_hidden=16)  # port: 64 channels shrunk
test_res = result["test"][0]
print("Test bits per dimension: %4.3fbpd" % (test_res["test_loss"] if "test_loss" in test_res else test_res["test_bpd"])) 

num_params = sum([np.prod(param.shape) for param in model.parameters()])
print("Number of parameters: {:,}".format(num_params)) 

torch.manual_seed(1); np.random.seed(1)  # port: pl.seed_everything(1)
samples = model.sample(img_shape=(4,1,8,8))  # port: 16 images of 28x28 shrunk
print("Samples:", tuple(samples.shape), samples.min().item(), samples.max().item())  # port: printed, not plotted

def autocomplete_image(img):
    # Remove lower half of the image
    img_init = img.clone()
    img_init[:,5:,:] = -1  # port: the lower part of an 8x8 image (10 of 28 rows kept)
    print("Original image and input image to sampling:", tuple(img.shape), int((img_init == -1).sum()))  # port: printed, not plotted
    # Generate 12 example completions
    img_init = img_init.unsqueeze(dim=0).expand(3,-1,-1,-1).to(device).clone()  # port: 12 completions shrunk; the copy that .to("cuda") made (torch writes no expanded view)
    torch.manual_seed(1); np.random.seed(1)  # port: pl.seed_everything(1)
    img_generated = model.sample(img_init.shape, img_init)
    print("Autocompletion samples:", tuple(img_generated.shape))  # port: printed, not plotted
    return img_generated  # port: kept for the test

for i in range(1,3):  # port: 3 images shrunk to 2
    img = train_set[i][0]
    completed = autocomplete_image(img)  # port: kept for the test

det_loader = data.DataLoader(train_set, batch_size=128, shuffle=False, drop_last=False)
imgs,_ = next(iter(det_loader))
imgs = imgs.to(device)
with torch.no_grad():
    out = model(imgs)
    out = F.softmax(out, dim=1)
    mean_out = out.mean(dim=[0,2,3,4]).cpu().numpy()
    out = out.cpu().numpy() 
print("Mean output:", mean_out.shape, round(float(mean_out[0] + mean_out[255]), 2))  # port: printed, not plotted

mu = torch.Tensor([128])
sigma = torch.Tensor([2.0])

def discrete_logistic(x, mu, sigma):
    return torch.sigmoid((x+0.5-mu)/sigma) - torch.sigmoid((x-0.5-mu)/sigma)

x = torch.arange(256)
p = discrete_logistic(x, mu, sigma)
print("Discrete logistic:", round(p.sum().item(), 4), p[126:131].numpy().round(4).tolist())  # port: printed, not plotted

'''


def images(folder) -> None:
    """MNIST's stand-ins in ``folder``: sklearn's digits as 28x28 images in [-1, 1] (what
    tutorial8's ``ToTensor`` and ``Normalize((0.5,), (0.5,))`` give) and as 8x8 binary images
    in {0, 1} (tutorial12's ``ToTensor`` before ``discretize``), each (N, 1, H, W)."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    from tests.test_torch_tutorials_u import digits28  # noqa: PLC0415

    folder.mkdir(parents=True)
    x, y = digits28()
    x = (2 * x - 1)[:, None]
    np.savez(folder / "images.npz", x_train=x[:128], y_train=y[:128], x_test=x[-64:], y_test=y[-64:])  # fmt: skip
    d = load_digits()
    b = (d.images >= 8).astype(np.float32)[:, None]
    np.savez(folder / "binary.npz", x_train=b[:256], y_train=d.target[:256], x_test=b[-64:], y_test=d.target[-64:])  # fmt: skip


def run(script: str, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` run as ``__main__`` in ``folder/notebooks``, beside ``folder/data`` (the
    notebooks' ``../data``): what it printed and its globals."""
    images(folder / "data")
    (folder / "notebooks").mkdir()
    return run_main(script, folder / "notebooks", monkeypatch, "notebook.py")


def both(script: str, tmp_path):
    """``run`` under torch, then with ``torch`` replaced by ``tricycle`` in the text, both on
    the CPU on one thread (the notebooks pick "cuda:0" when it is there: none is answered)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    import tricycle  # noqa: PLC0415

    with pytest.MonkeyPatch.context() as monkeypatch, one_thread(torch):
        for lib in torch, tricycle:  # the same branches under both, on any machine
            monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        results = []
        for lib, text in (torch, script), (tricycle, script.replace("torch", "tricycle")):
            try:
                results.append(run(text, tmp_path / lib.__name__, monkeypatch))
                results[-1][1]["grad enabled at the end"] = lib.is_grad_enabled()
            finally:  # tutorial8's generation turns gradients off and leaves them off
                lib.set_grad_enabled(True)
    return tuple(results)


@pytest.fixture(scope="module")
def energy(tmp_path_factory):
    """tutorial8 run under both libraries, once for the module's tests."""
    return both(ENERGY, tmp_path_factory.mktemp("tutorial8"))


@pytest.fixture(scope="module")
def pixelcnn(tmp_path_factory):
    """tutorial12 run under both libraries, once for the module's tests."""
    return both(PIXELCNN, tmp_path_factory.mktemp("tutorial12"))


@pytest.fixture
def one_torch_thread():
    """torch and the BLAS on one thread, as the notebooks ran (small products)."""
    with one_thread(pytest.importorskip("torch")):
        yield


def test_energy_models(energy):
    (theirs, their_space), (ours, space) = energy
    assert kinds(ours) == kinds(theirs)
    for printed, namespace in (theirs, their_space), (ours, space):
        # the contrastive divergence on unseen digits against noise falls epoch by epoch, and
        # the trained model scores the digits well above noise
        cdiv = numbers(r"val_cdiv (-?[\d.]+)", printed)
        assert cdiv[-1] < -1 and cdiv[-1] < cdiv[0] - 0.5, printed
        random_score, train_score = (numbers(rf"Average score for {w} images: (-?[\d.]+)", printed)[0] for w in ("random", "training"))  # fmt: skip
        assert train_score > random_score + 1, printed
        # the generation keeps every step's images, in [-1, 1]; the sampler's buffer grew by
        # a batch per training step, and the parameters train again after sampling
        steps = namespace["imgs_per_step"].numpy()
        assert steps.shape == (16, 4, 1, 28, 28) and steps.min() >= -1 and steps.max() <= 1
        model = namespace["model"]
        assert len(model.sampler.examples) == 16 * (1 + 3 * len(namespace["train_loader"]))
        assert all(p.requires_grad for p in model.parameters()) and model.training
        assert not namespace["grad enabled at the end"]  # as generate_imgs left it


def test_energy_model_with_torchs_weights(energy, one_torch_thread):
    """The trained torch model's weights in the tutorial's tricycle model: torch's energies of
    digits and noise, the Langevin step's input gradient (clamped as the sampler does) and the
    gradients of the contrastive-divergence loss with its regulariser."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = energy
    theirs, ours = their_space["model"].cnn, space["model"].cnn
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    rng = np.random.default_rng(0)
    real = their_space["test_imgs"].numpy()[:6]  # unseen digits
    fake = rng.uniform(-1, 1, real.shape).astype(np.float32)
    imgs = np.concatenate([real, fake])
    x, y = torch.tensor(imgs, requires_grad=True), tricycle.tensor(imgs, requires_grad=True)
    want, got = theirs(x), ours(y)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
    (-want).sum().backward()
    (-got).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(y.grad.data.clamp_(-0.03, 0.03).numpy(), x.grad.data.clamp_(-0.03, 0.03).numpy(), rtol=1e-4, atol=1e-7)  # fmt: skip
    for model in theirs, ours:
        model.zero_grad()
    losses = []
    for lib, model in (torch, theirs), (tricycle, ours):
        real_out, fake_out = model(lib.tensor(imgs)).chunk(2, dim=0)
        loss = 0.1 * (real_out**2 + fake_out**2).mean() + fake_out.mean() - real_out.mean()
        loss.backward()
        losses.append(loss.item())
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-4)
    grads = torch_layout_grads(ours)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)


def test_pixelcnn(pixelcnn):
    (theirs, their_space), (ours, space) = pixelcnn
    assert kinds(ours) == kinds(theirs)
    # the receptive fields of the masked convolutions, filled with ones, are torch's: the
    # blind spot, the stacks and the test model's (no gradient at or after the centre pixel)
    assert len(space["receptive_fields"]) == len(their_space["receptive_fields"]) == 10
    for got, want in zip(space["receptive_fields"][:-1], their_space["receptive_fields"]):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # the test model's weights are random: the pixels it sees are torch's
    np.testing.assert_array_equal(space["receptive_fields"][-1] > 0, their_space["receptive_fields"][-1] > 0)  # fmt: skip
    last = space["receptive_fields"][-1]  # (28, 28), the centre is pixel (14, 14)
    assert np.all(last[15:] == 0) and np.all(last[14, 14:] == 0) and last[13, 14] > 0
    for printed, namespace in (theirs, their_space), (ours, space):
        bpd = numbers(r"train_bpd ([\d.]+)", printed)
        fell(bpd, 0.5)
        assert numbers(r"Test bits per dimension: ([\d.]+)bpd", printed)[0] < 3, printed
        samples = namespace["samples"].numpy()
        assert samples.shape == (4, 1, 8, 8) and samples.min() >= 0 and samples.max() <= 255
        # the completions keep the given upper rows and fill the rest
        completed, img = namespace["completed"].numpy(), namespace["img"].numpy()
        np.testing.assert_array_equal(
            completed[:, :, :5], np.broadcast_to(img[:, :5], (3, 1, 5, 8))
        )
        assert completed.min() >= 0
        np.testing.assert_allclose(namespace["mean_out"].sum(), 1, rtol=1e-4)
        assert "conv_vstack.mask" in namespace["model"].state_dict()
    np.testing.assert_allclose(space["p"].numpy(), their_space["p"].numpy(), rtol=1e-5, atol=1e-7)


def test_pixelcnn_with_torchs_weights(pixelcnn, one_torch_thread):
    """The trained torch PixelCNN's weights (masks included) in the tutorial's tricycle model:
    torch's logits and bits per dimension, the parameter gradients of the likelihood, and a
    sampling step's distribution."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their_space), (_, space) = pixelcnn
    theirs, ours = their_space["model"], space["model"]
    # a plain Tensor attribute is a buffer of tricycle's layer (Layer's discovery), saved in
    # its state; torch keeps it out of the state dict
    missing = nn.from_torch(ours, theirs.state_dict(), strict=False)[0]
    assert missing == ["example_input_array"]
    theirs.zero_grad()
    ours.zero_grad()
    imgs = np.random.default_rng(0).choice([0, 255], size=(5, 1, 8, 8)).astype(np.int64)
    want, got = theirs(torch.tensor(imgs)), ours(tricycle.tensor(imgs))
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-4)
    their_bpd, our_bpd = (
        theirs.calc_likelihood(torch.tensor(imgs)),
        ours.calc_likelihood(tricycle.tensor(imgs)),
    )
    np.testing.assert_allclose(our_bpd.item(), their_bpd.item(), rtol=1e-5)
    their_bpd.backward()
    our_bpd.backward()
    grads = torch_layout_grads(ours)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=name)
    # the first pixel's distribution, as sample computes it from an empty image
    empty = np.zeros((2, 1, 8, 8), dtype=np.int64) - 1
    with torch.no_grad():
        want = torch.softmax(theirs(torch.tensor(empty[:, :, :1]))[:, :, 0, 0, 0], dim=-1)
    got = tricycle.softmax(ours(tricycle.tensor(empty[:, :, :1]))[:, :, 0, 0, 0], dim=-1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-7)
