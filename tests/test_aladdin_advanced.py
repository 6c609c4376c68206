"""Aladdin Persson's "Machine-Learning-Collection" (aladdinpersson/Machine-Learning-Collection),
its PyTorch GANs and more_advanced scripts, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of tests/test_mlbook_ch16_19.py):

- GANs/1. SimpleGAN/fc_gan.py (the fully connected GAN, ``BCELoss``, ``retain_graph=True``);
- GANs/2. DCGAN (model.py's ``Discriminator``/``Generator``/``initialize_weights`` and its
  ``test()``, train.py), GANs/3. WGAN (``InstanceNorm2d``, ``RMSprop``, five critic steps a
  batch, weight clipping by ``p.data.clamp_``), GANs/4. WGAN-GP (its ``gradient_penalty`` needs
  ``create_graph=True``, a graph of the backward, documented as unsupported: the training runs
  without it and the test checks that tricycle refuses it with a clear error);
- GANs/Pix2Pix and GANs/CycleGAN: their generators and discriminators (``padding_mode=
  "reflect"``, ``ConvTranspose2d`` with ``output_padding``, skip connections by ``cat``) and one
  step of each ``train_fn`` (``torch.cuda.amp.autocast`` and ``GradScaler``: disabled on the
  CPU in both libraries); GANs/ProGAN's model at 4x4 and 8x8 (``WSConv2d``, ``PixelNorm``, the
  minibatch std, the fade-in, ``F.interpolate``);
- more_advanced: Seq2Seq and Seq2Seq_attention (LSTM encoder/decoder, teacher forcing, the
  bidirectional encoder and the attention by ``einsum``, ``clip_grad_norm_``, their utils'
  ``translate_sentence``/``bleu``/checkpoints), transformer_from_scratch (a few steps of a
  copy task besides), the VAE, image captioning (``CNNtoRNN``, the ``Vocabulary``, the
  ``pad_sequence`` collate, the CNN frozen but its new head, ``loss.backward(loss)``,
  ``caption_image``), and image_segmentation's UNET with its ``train_fn``, checkpoints and
  ``check_accuracy``.

The test's stand-ins (only what the scripts call): ``torchvision`` (tests/test_yunjey_basics.py's
``datasets.MNIST`` over synthetic digits, ``ToTensor``/``Compose``, a ``Normalize`` and a
nearest ``Resize``, ``utils.make_grid``/``save_image`` that write nothing),
``torch.utils.tensorboard``'s ``SummaryWriter`` and ``tqdm`` (recording the scalars and the
postfixes they are given: the learning curves), ``torchtext``'s legacy ``Field``,
``Multi30k`` (a small built-in German-English table), ``BucketIterator`` and ``bleu_score``,
``spacy`` (a whitespace tokenizer), the repositories' ``config``/``dataset`` modules, and
``albumentations`` (names only), ``torchvision.models.inception_v3`` (a small random CNN
with inception's ``fc``), ``pandas.read_csv`` and ``PIL.Image.open`` (numpy arrays under the
images' names), the Carvana images (synthetic discs) and
``torchvision.transforms.functional.resize`` (bilinear ``F.interpolate``). Each changed line
ends in ``# port:`` and says why: sizes, epochs and batches shrunk (a learning rate raised
where a few steps must show learning), a print every batch where the scripts print every
hundred, torch's ``repeat`` written ``tile`` and ``m.weight`` taken by position (tricycle's
convolutions name it ``weights``, its norms ``gamma``: documented), the gradient penalty off,
and ProGAN's check run on a batch of two (the minibatch std of one image is torch's NaN,
which tricycle's ``std`` refuses with a clear error). The scripts' text is otherwise theirs:
``torch`` is replaced where a word starts with it. Each script runs under torch (skipped
without it), then under tricycle, seeded and on the CPU; both print the same lines (numbers
aside; an f-string of a 0-d tensor without a spec is its repr in tricycle: documented), learn
where they train (the losses fall), and, given torch's weights (``nn.from_torch``), the
networks give torch's outputs and gradients (Pix2Pix's and CycleGAN's generators after a
step of their ``train_fn``; CycleGAN's in float64, as its instance norms of small maps
amplify rounding).
"""

# ruff: noqa: E501, W291, W293

import contextlib
import io
import random
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import module, one_thread, torch_and_tricycle
from tests.test_mlbook_ch16_19 import NORMALIZE, digits
from tests.test_rasbt_dl_generative import same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_vision_tutorials import host
from tests.test_yunjey_basics import VISION

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*no CUDA GPU is available"),
    pytest.mark.filterwarnings("ignore:.*torch.cuda.amp.*is deprecated"),
    pytest.mark.filterwarnings("ignore:User provided device_type of 'cuda'"),
    pytest.mark.filterwarnings("ignore:CUDA is not available or torch_xla is imported"),
    pytest.mark.filterwarnings("ignore:'pin_memory' argument is set as true"),
    pytest.mark.filterwarnings("ignore:torch.cuda.amp.GradScaler is enabled, but CUDA is not"),
    pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays"),
]

# GANs/1. SimpleGAN/fc_gan.py
FC_GAN = r"""
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.datasets as datasets
from torch.utils.data import DataLoader
import torchvision.transforms as transforms
from torch.utils.tensorboard import SummaryWriter  # to print to tensorboard


class Discriminator(nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.disc = nn.Sequential(
            nn.Linear(in_features, 128),
            nn.LeakyReLU(0.01),
            nn.Linear(128, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.disc(x)


class Generator(nn.Module):
    def __init__(self, z_dim, img_dim):
        super().__init__()
        self.gen = nn.Sequential(
            nn.Linear(z_dim, 256),
            nn.LeakyReLU(0.01),
            nn.Linear(256, img_dim),
            nn.Tanh(),  # normalize inputs to [-1, 1] so make outputs [-1, 1]
        )

    def forward(self, x):
        return self.gen(x)


# Hyperparameters etc.
device = "cuda" if torch.cuda.is_available() else "cpu"
lr = 3e-4
z_dim = 64
image_dim = 28 * 28 * 1  # 784
batch_size = 32
num_epochs = 4  # port: 50: a shared CPU

disc = Discriminator(image_dim).to(device)
gen = Generator(z_dim, image_dim).to(device)
fixed_noise = torch.randn((batch_size, z_dim)).to(device)
transforms = transforms.Compose(
    [transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,)),]
)

dataset = datasets.MNIST(root="dataset/", transform=transforms, download=True)
loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)
opt_disc = optim.Adam(disc.parameters(), lr=lr)
opt_gen = optim.Adam(gen.parameters(), lr=lr)
criterion = nn.BCELoss()
writer_fake = SummaryWriter(f"logs/fake")
writer_real = SummaryWriter(f"logs/real")
step = 0

for epoch in range(num_epochs):
    for batch_idx, (real, _) in enumerate(loader):
        real = real.view(-1, 784).to(device)
        batch_size = real.shape[0]

        ### Train Discriminator: max log(D(x)) + log(1 - D(G(z)))
        noise = torch.randn(batch_size, z_dim).to(device)
        fake = gen(noise)
        disc_real = disc(real).view(-1)
        lossD_real = criterion(disc_real, torch.ones_like(disc_real))
        disc_fake = disc(fake).view(-1)
        lossD_fake = criterion(disc_fake, torch.zeros_like(disc_fake))
        lossD = (lossD_real + lossD_fake) / 2
        disc.zero_grad()
        lossD.backward(retain_graph=True)
        opt_disc.step()

        ### Train Generator: min log(1 - D(G(z))) <-> max log(D(G(z))
        # where the second option of maximizing doesn't suffer from
        # saturating gradients
        output = disc(fake).view(-1)
        lossG = criterion(output, torch.ones_like(output))
        gen.zero_grad()
        lossG.backward()
        opt_gen.step()

        if batch_idx == 0:
            print(
                f"Epoch [{epoch}/{num_epochs}] Batch {batch_idx}/{len(loader)} \
                      Loss D: {lossD:.4f}, loss G: {lossG:.4f}"
            )

            with torch.no_grad():
                fake = gen(fixed_noise).reshape(-1, 1, 28, 28)
                data = real.reshape(-1, 1, 28, 28)
                img_grid_fake = torchvision.utils.make_grid(fake, normalize=True)
                img_grid_real = torchvision.utils.make_grid(data, normalize=True)

                writer_fake.add_image(
                    "Mnist Fake Images", img_grid_fake, global_step=step
                )
                writer_real.add_image(
                    "Mnist Real Images", img_grid_real, global_step=step
                )
                step += 1
"""

# GANs/2. DCGAN/model.py
DCGAN_MODEL = r'''
"""
Discriminator and Generator implementation from DCGAN paper

Programmed by Aladdin Persson <aladdin.persson at hotmail dot com>
* 2020-11-01: Initial coding
* 2022-12-20: Small revision of code, checked that it works with latest PyTorch version
"""

import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self, channels_img, features_d):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(
            # input: N x channels_img x 64 x 64
            nn.Conv2d(channels_img, features_d, kernel_size=4, stride=2, padding=1, bias=False),
            nn.LeakyReLU(0.2),
            # _block(in_channels, out_channels, kernel_size, stride, padding)
            self._block(features_d, features_d * 2, 4, 2, 1),
            self._block(features_d * 2, features_d * 4, 4, 2, 1),
            self._block(features_d * 4, features_d * 8, 4, 2, 1),
            # After all _block img output is 4x4 (Conv2d below makes into 1x1)
            nn.Conv2d(features_d * 8, 1, kernel_size=4, stride=2, padding=0),
            nn.Sigmoid(),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                bias=False,
            ),
            nn.BatchNorm2d(out_channels),
            nn.LeakyReLU(0.2, True),
        )

    def forward(self, x):
        return self.disc(x)


class Generator(nn.Module):
    def __init__(self, channels_noise, channels_img, features_g):
        super(Generator, self).__init__()
        self.net = nn.Sequential(
            # Input: N x channels_noise x 1 x 1
            self._block(channels_noise, features_g * 16, 4, 1, 0),  # img: 4x4
            self._block(features_g * 16, features_g * 8, 4, 2, 1),  # img: 8x8
            self._block(features_g * 8, features_g * 4, 4, 2, 1),  # img: 16x16
            self._block(features_g * 4, features_g * 2, 4, 2, 1),  # img: 32x32
            nn.ConvTranspose2d(
                features_g * 2, channels_img, kernel_size=4, stride=2, padding=1, bias=False
            ),
            # Output: N x channels_img x 64 x 64
            nn.Tanh(),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.ConvTranspose2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                bias=False,
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.net(x)


def initialize_weights(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1: # this will prevent Discriminator form converging to 0
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


def test():
    N, in_channels, H, W = 2, 3, 64, 64  # port: a batch of 8: a shared CPU
    noise_dim = 100
    x = torch.randn((N, in_channels, H, W))
    disc = Discriminator(in_channels, 8)
    assert disc(x).shape == (N, 1, 1, 1), "Discriminator test failed"
    gen = Generator(noise_dim, in_channels, 8)
    z = torch.randn((N, noise_dim, 1, 1))
    assert gen(z).shape == (N, in_channels, H, W), "Generator test failed"
    print("Success, tests passed!")


if __name__ == "__main__":
    test()
'''

# GANs/2. DCGAN/train.py
DCGAN_TRAIN = r'''
"""
Training of DCGAN network on MNIST dataset with Discriminator
and Generator imported from models.py

Programmed by Aladdin Persson <aladdin.persson at hotmail dot com>
* 2020-11-01: Initial coding
* 2022-12-20: Small revision of code, checked that it works with latest PyTorch version
"""

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter
from model import Discriminator, Generator, initialize_weights

# Hyperparameters etc.
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
LEARNING_RATE = 2e-4  # could also use two lrs, one for gen and one for disc
BATCH_SIZE = 8  # port: 128: a shared CPU
IMAGE_SIZE = 64
CHANNELS_IMG = 1
NOISE_DIM = 100
NUM_EPOCHS = 3  # port: 5: a shared CPU
FEATURES_DISC = 4  # port: 64: a shared CPU
FEATURES_GEN = 4  # port: 64: a shared CPU

transforms = transforms.Compose(
    [
        transforms.Resize(IMAGE_SIZE),
        transforms.ToTensor(),
        transforms.Normalize(
            [0.5 for _ in range(CHANNELS_IMG)], [0.5 for _ in range(CHANNELS_IMG)]
        ),
    ]
)

# If you train on MNIST, remember to set channels_img to 1
dataset = datasets.MNIST(
    root="dataset/", train=True, transform=transforms, download=True
)

# comment mnist above and uncomment below if train on CelebA
# dataset = datasets.ImageFolder(root="celeb_dataset", transform=transforms)
dataloader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)
gen = Generator(NOISE_DIM, CHANNELS_IMG, FEATURES_GEN).to(device)
disc = Discriminator(CHANNELS_IMG, FEATURES_DISC).to(device)
initialize_weights(gen)
initialize_weights(disc)

opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
opt_disc = optim.Adam(disc.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
criterion = nn.BCELoss()

fixed_noise = torch.randn(32, NOISE_DIM, 1, 1).to(device)
writer_real = SummaryWriter(f"logs/real")
writer_fake = SummaryWriter(f"logs/fake")
step = 0

gen.train()
disc.train()

for epoch in range(NUM_EPOCHS):
    # Target labels not needed! <3 unsupervised
    for batch_idx, (real, _) in enumerate(dataloader):
        real = real.to(device)
        noise = torch.randn(BATCH_SIZE, NOISE_DIM, 1, 1).to(device)
        fake = gen(noise)

        ### Train Discriminator: max log(D(x)) + log(1 - D(G(z)))
        disc_real = disc(real).reshape(-1)
        loss_disc_real = criterion(disc_real, torch.ones_like(disc_real))
        disc_fake = disc(fake.detach()).reshape(-1)
        loss_disc_fake = criterion(disc_fake, torch.zeros_like(disc_fake))
        loss_disc = (loss_disc_real + loss_disc_fake) / 2
        disc.zero_grad()
        loss_disc.backward()
        opt_disc.step()

        ### Train Generator: min log(1 - D(G(z))) <-> max log(D(G(z))
        output = disc(fake).reshape(-1)
        loss_gen = criterion(output, torch.ones_like(output))
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        # Print losses occasionally and print to tensorboard
        if batch_idx % 1 == 0:  # port: batch_idx % 100 == 0: four batches an epoch
            print(
                f"Epoch [{epoch}/{NUM_EPOCHS}] Batch {batch_idx}/{len(dataloader)} \
                  Loss D: {loss_disc:.4f}, loss G: {loss_gen:.4f}"
            )

            with torch.no_grad():
                fake = gen(fixed_noise)
                # take out (up to) 32 examples
                img_grid_real = torchvision.utils.make_grid(real[:32], normalize=True)
                img_grid_fake = torchvision.utils.make_grid(fake[:32], normalize=True)

                writer_real.add_image("Real", img_grid_real, global_step=step)
                writer_fake.add_image("Fake", img_grid_fake, global_step=step)

            step += 1
'''

# GANs/3. WGAN/model.py
WGAN_MODEL = r'''
"""
Discriminator and Generator implementation from DCGAN paper,
with removed Sigmoid() as output from Discriminator (and therefor
it should be called critic)

Programmed by Aladdin Persson <aladdin.persson at hotmail dot com>
* 2020-11-01: Initial coding
* 2022-12-20: Small revision of code, checked that it works with latest PyTorch version
"""

import torch
import torch.nn as nn


class Discriminator(nn.Module):
    def __init__(self, channels_img, features_d):
        super(Discriminator, self).__init__()
        self.disc = nn.Sequential(
            # input: N x channels_img x 64 x 64
            nn.Conv2d(
                channels_img, features_d, kernel_size=4, stride=2, padding=1
            ),
            nn.LeakyReLU(0.2),
            # _block(in_channels, out_channels, kernel_size, stride, padding)
            self._block(features_d, features_d * 2, 4, 2, 1),
            self._block(features_d * 2, features_d * 4, 4, 2, 1),
            self._block(features_d * 4, features_d * 8, 4, 2, 1),
            # After all _block img output is 4x4 (Conv2d below makes into 1x1)
            nn.Conv2d(features_d * 8, 1, kernel_size=4, stride=2, padding=0),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.Conv2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                bias=False,
            ),
            nn.InstanceNorm2d(out_channels, affine=True),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.disc(x)


class Generator(nn.Module):
    def __init__(self, channels_noise, channels_img, features_g):
        super(Generator, self).__init__()
        self.net = nn.Sequential(
            # Input: N x channels_noise x 1 x 1
            self._block(channels_noise, features_g * 16, 4, 1, 0),  # img: 4x4
            self._block(features_g * 16, features_g * 8, 4, 2, 1),  # img: 8x8
            self._block(features_g * 8, features_g * 4, 4, 2, 1),  # img: 16x16
            self._block(features_g * 4, features_g * 2, 4, 2, 1),  # img: 32x32
            nn.ConvTranspose2d(
                features_g * 2, channels_img, kernel_size=4, stride=2, padding=1
            ),
            # Output: N x channels_img x 64 x 64
            nn.Tanh(),
        )

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.ConvTranspose2d(
                in_channels,
                out_channels,
                kernel_size,
                stride,
                padding,
                bias=False,
            ),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.net(x)


def initialize_weights(model):
    # Initializes weights according to the DCGAN paper
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.BatchNorm2d)):
            nn.init.normal_(next(m.parameters()).data, 0.0, 0.02)  # port: m.weight by position: tricycle's convolutions name it weights, its norms gamma (documented)


def test():
    N, in_channels, H, W = 2, 3, 64, 64  # port: a batch of 8: a shared CPU
    noise_dim = 100
    x = torch.randn((N, in_channels, H, W))
    disc = Discriminator(in_channels, 8)
    assert disc(x).shape == (N, 1, 1, 1), "Discriminator test failed"
    gen = Generator(noise_dim, in_channels, 8)
    z = torch.randn((N, noise_dim, 1, 1))
    assert gen(z).shape == (N, in_channels, H, W), "Generator test failed"
    print("Success, tests passed!")

if __name__ == "__main__":
    test()
'''

# GANs/3. WGAN/train.py
WGAN_TRAIN = r'''
"""
Training of DCGAN network with WGAN loss

Programmed by Aladdin Persson <aladdin.persson at hotmail dot com>
* 2020-11-01: Initial coding
* 2022-12-20: Small revision of code, checked that it works with latest PyTorch version
"""

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
from tqdm import tqdm
from torch.utils.tensorboard import SummaryWriter
from model import Discriminator, Generator, initialize_weights

# Hyperparameters etc
device = "cuda" if torch.cuda.is_available() else "cpu"
LEARNING_RATE = 5e-5
BATCH_SIZE = 4  # port: 64: a shared CPU
IMAGE_SIZE = 64
CHANNELS_IMG = 1
Z_DIM = 128
NUM_EPOCHS = 2  # port: 5: a shared CPU
FEATURES_CRITIC = 4  # port: 64: a shared CPU
FEATURES_GEN = 4  # port: 64: a shared CPU
CRITIC_ITERATIONS = 5
WEIGHT_CLIP = 0.01

transforms = transforms.Compose(
    [
        transforms.Resize(IMAGE_SIZE),
        transforms.ToTensor(),
        transforms.Normalize(
            [0.5 for _ in range(CHANNELS_IMG)], [0.5 for _ in range(CHANNELS_IMG)]
        ),
    ]
)

dataset = datasets.MNIST(root="dataset/", transform=transforms, download=True)
#comment mnist and uncomment below if you want to train on CelebA dataset
#dataset = datasets.ImageFolder(root="celeb_dataset", transform=transforms)
loader = DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True)

# initialize gen and disc/critic
gen = Generator(Z_DIM, CHANNELS_IMG, FEATURES_GEN).to(device)
critic = Discriminator(CHANNELS_IMG, FEATURES_CRITIC).to(device)
initialize_weights(gen)
initialize_weights(critic)

# initializate optimizer
opt_gen = optim.RMSprop(gen.parameters(), lr=LEARNING_RATE)
opt_critic = optim.RMSprop(critic.parameters(), lr=LEARNING_RATE)

# for tensorboard plotting
fixed_noise = torch.randn(32, Z_DIM, 1, 1).to(device)
writer_real = SummaryWriter(f"logs/real")
writer_fake = SummaryWriter(f"logs/fake")
step = 0

gen.train()
critic.train()

for epoch in range(NUM_EPOCHS):
    # Target labels not needed! <3 unsupervised
    for batch_idx, (data, _) in enumerate(tqdm(loader)):
        data = data.to(device)
        cur_batch_size = data.shape[0]

        # Train Critic: max E[critic(real)] - E[critic(fake)]
        for _ in range(CRITIC_ITERATIONS):
            noise = torch.randn(cur_batch_size, Z_DIM, 1, 1).to(device)
            fake = gen(noise)
            critic_real = critic(data).reshape(-1)
            critic_fake = critic(fake).reshape(-1)
            loss_critic = -(torch.mean(critic_real) - torch.mean(critic_fake))
            critic.zero_grad()
            loss_critic.backward(retain_graph=True)
            opt_critic.step()

            # clip critic weights between -0.01, 0.01
            for p in critic.parameters():
                p.data.clamp_(-WEIGHT_CLIP, WEIGHT_CLIP)

        # Train Generator: max E[critic(gen_fake)] <-> min -E[critic(gen_fake)]
        gen_fake = critic(fake).reshape(-1)
        loss_gen = -torch.mean(gen_fake)
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        # Print losses occasionally and print to tensorboard
        if batch_idx % 1 == 0:  # port: batch_idx % 100 == 0 and batch_idx > 0: two batches an epoch
            gen.eval()
            critic.eval()
            print(
                f"Epoch [{epoch}/{NUM_EPOCHS}] Batch {batch_idx}/{len(loader)} \
                  Loss D: {loss_critic:.4f}, loss G: {loss_gen:.4f}"
            )

            with torch.no_grad():
                fake = gen(noise)
                # take out (up to) 32 examples
                img_grid_real = torchvision.utils.make_grid(
                    data[:32], normalize=True
                )
                img_grid_fake = torchvision.utils.make_grid(
                    fake[:32], normalize=True
                )

                writer_real.add_image("Real", img_grid_real, global_step=step)
                writer_fake.add_image("Fake", img_grid_fake, global_step=step)

            step += 1
            gen.train()
            critic.train()
'''

# GANs/4. WGAN-GP/utils.py's gradient_penalty (the file is not in the reference index: its
# well-known text, as the copies of it in other repositories have it)
WGAN_GP_UTILS = r"""
import torch
import torch.nn as nn


def gradient_penalty(critic, real, fake, device="cpu"):
    BATCH_SIZE, C, H, W = real.shape
    alpha = torch.rand((BATCH_SIZE, 1, 1, 1)).tile((1, C, H, W)).to(device)  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
    interpolated_images = real * alpha + fake * (1 - alpha)

    # Calculate critic scores
    mixed_scores = critic(interpolated_images)

    # Take the gradient of the scores with respect to the images
    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        retain_graph=True,
    )[0]
    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    gradient_penalty = torch.mean((gradient_norm - 1) ** 2)
    return gradient_penalty


def save_checkpoint(state, filename="celeba_wgan_gp.pth.tar"):
    print("=> Saving checkpoint")
    torch.save(state, filename)


def load_checkpoint(checkpoint, gen, disc):
    print("=> Loading checkpoint")
    gen.load_state_dict(checkpoint['gen'])
    disc.load_state_dict(checkpoint['disc'])
"""

# GANs/4. WGAN-GP/train.py (its model.py is WGAN's code, formatted otherwise: WGAN_MODEL serves)
WGAN_GP_TRAIN = r'''
"""
Training of WGAN-GP
"""

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.datasets as datasets
import torchvision.transforms as transforms
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter
from utils import gradient_penalty, save_checkpoint, load_checkpoint
from model import Discriminator, Generator, initialize_weights

# Hyperparameters etc.
device = "cuda" if torch.cuda.is_available() else "cpu"
LEARNING_RATE = 1e-4
BATCH_SIZE = 4  # port: 64: a shared CPU
IMAGE_SIZE = 64
CHANNELS_IMG = 1
Z_DIM = 100
NUM_EPOCHS = 2  # port: 100: a shared CPU
FEATURES_CRITIC = 4  # port: 16: a shared CPU
FEATURES_GEN = 4  # port: 16: a shared CPU
CRITIC_ITERATIONS = 5
LAMBDA_GP = 10

transforms = transforms.Compose(
    [
        transforms.Resize(IMAGE_SIZE),
        transforms.ToTensor(),
        transforms.Normalize(
            [0.5 for _ in range(CHANNELS_IMG)], [0.5 for _ in range(CHANNELS_IMG)]),
    ]
)

dataset = datasets.MNIST(root="dataset/", transform=transforms, download=True)
# comment mnist above and uncomment below for training on CelebA
#dataset = datasets.ImageFolder(root="celeb_dataset", transform=transforms)
loader = DataLoader(
    dataset,
    batch_size=BATCH_SIZE,
    shuffle=True,
)

# initialize gen and disc, note: discriminator should be called critic,
# according to WGAN paper (since it no longer outputs between [0, 1])
gen = Generator(Z_DIM, CHANNELS_IMG, FEATURES_GEN).to(device)
critic = Discriminator(CHANNELS_IMG, FEATURES_CRITIC).to(device)
initialize_weights(gen)
initialize_weights(critic)

# initializate optimizer
opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
opt_critic = optim.Adam(critic.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))

# for tensorboard plotting
fixed_noise = torch.randn(32, Z_DIM, 1, 1).to(device)
writer_real = SummaryWriter(f"logs/GAN_MNIST/real")
writer_fake = SummaryWriter(f"logs/GAN_MNIST/fake")
step = 0

gen.train()
critic.train()

for epoch in range(NUM_EPOCHS):
    # Target labels not needed! <3 unsupervised
    for batch_idx, (real, _) in enumerate(loader):
        real = real.to(device)
        cur_batch_size = real.shape[0]

        # Train Critic: max E[critic(real)] - E[critic(fake)]
        # equivalent to minimizing the negative of that
        for _ in range(CRITIC_ITERATIONS):
            noise = torch.randn(cur_batch_size, Z_DIM, 1, 1).to(device)
            fake = gen(noise)
            critic_real = critic(real).reshape(-1)
            critic_fake = critic(fake).reshape(-1)
            gp = 0  # port: gradient_penalty(critic, real, fake, device=device): its create_graph=True (double backward) is not supported (documented); the test calls it
            loss_critic = (
                -(torch.mean(critic_real) - torch.mean(critic_fake)) + LAMBDA_GP * gp
            )
            critic.zero_grad()
            loss_critic.backward(retain_graph=True)
            opt_critic.step()

        # Train Generator: max E[critic(gen_fake)] <-> min -E[critic(gen_fake)]
        gen_fake = critic(fake).reshape(-1)
        loss_gen = -torch.mean(gen_fake)
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        # Print losses occasionally and print to tensorboard
        if batch_idx % 1 == 0:  # port: batch_idx % 100 == 0 and batch_idx > 0: two batches an epoch
            print(
                f"Epoch [{epoch}/{NUM_EPOCHS}] Batch {batch_idx}/{len(loader)} \
                  Loss D: {loss_critic:.4f}, loss G: {loss_gen:.4f}"
            )

            with torch.no_grad():
                fake = gen(fixed_noise)
                # take out (up to) 32 examples
                img_grid_real = torchvision.utils.make_grid(real[:32], normalize=True)
                img_grid_fake = torchvision.utils.make_grid(fake[:32], normalize=True)

                writer_real.add_image("Real", img_grid_real, global_step=step)
                writer_fake.add_image("Fake", img_grid_fake, global_step=step)

            step += 1
'''


# what the stand-in torchvision adds to tests/test_yunjey_basics.py's and the MMD notebook's
VISION_MORE = r"""
class Resize:
    # a numpy image (H, W) or (H, W, C), PIL's place, resized to size (an int: square) by
    # nearest pixels
    def __init__(self, size):
        self.size = (size, size) if isinstance(size, int) else tuple(size)

    def __call__(self, image):
        rows = np.arange(self.size[0]) * image.shape[0] // self.size[0]
        cols = np.arange(self.size[1]) * image.shape[1] // self.size[1]
        return image[rows][:, cols]


class RandomCrop:
    # a random (height, width) window of a numpy image (H, W, C)
    def __init__(self, size):
        self.size = tuple(size)

    def __call__(self, image):
        top, left = (random.randint(0, n - s) for n, s in zip(image.shape, self.size))
        return image[top:top + self.size[0], left:left + self.size[1]]


def make_grid(images, normalize=False):
    # the images as they are: the grids only go to tensorboard
    return images


def save_image(images, path):
    # nothing written: the scripts' samples are only looked at
    assert images.ndim == 4, images.shape
"""

# torch.utils.tensorboard's SummaryWriter (tensorboard is not installed): it records the
# scalars it is given, the scripts' learning curves
TENSORBOARD = r"""
SCALARS = []


class SummaryWriter:
    def __init__(self, log_dir=None):
        self.log_dir = log_dir

    def add_scalar(self, tag, value, global_step=None):
        SCALARS.append((tag, value.item() if hasattr(value, "item") else value, global_step))

    def add_image(self, tag, image, global_step=None):
        pass
"""

# torchvision.models.inception_v3 (a download of pretrained weights): a small random CNN with
# inception's fc head
INCEPTION = r"""
import torch
import torch.nn as nn


class Inception3(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


def inception_v3(pretrained=False, aux_logits=True):
    return Inception3()
"""

# tqdm's progress bar, quiet: it records the postfixes it is given
TQDM = r"""
POSTFIXES = []


class tqdm:
    def __init__(self, iterable, total=None, leave=True):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def __len__(self):
        return len(self.iterable)

    def set_postfix(self, **values):
        POSTFIXES.append(values)
"""


def in_words_of(lib, text: str) -> str:
    """``text`` with ``torch`` replaced by ``lib``'s name where a word starts with it
    (``torchvision`` too, ``albumentations.pytorch`` not)."""
    return re.sub(r"\btorch", lib.__name__, text)


def module_of_text(name: str, text: str, lib, **names) -> types.ModuleType:
    """A module called ``name`` from ``text`` in ``lib``'s words, given ``names`` first."""
    made = module(name, **names)
    exec(compile(in_words_of(lib, text), f"{name}.py", "exec"), made.__dict__)
    return made


def stand_ins(lib, monkeypatch, n_train: int, modules: dict) -> dict:
    """``<lib>vision`` (``datasets.MNIST`` of ``n_train`` digits, ``transforms``, ``utils``),
    ``<lib>.utils.tensorboard``, ``tqdm`` and the repository's own ``modules`` (name: text), in
    ``sys.modules``: the modules by name."""
    name = lib.__name__ + "vision"
    base = module_of_text(f"{name}._base", VISION + NORMALIZE + VISION_MORE, lib, IMAGES={("mnist", True): digits(n_train)}, LABEL=int)  # fmt: skip
    datasets, transforms, utils = (types.ModuleType(f"{name}.{part}") for part in ("datasets", "transforms", "utils"))  # fmt: skip
    datasets.MNIST = base.MNIST
    for attr in "ToTensor", "Normalize", "Compose", "Resize", "RandomCrop":
        setattr(transforms, attr, getattr(base, attr))
    utils.make_grid, utils.save_image = base.make_grid, base.save_image
    models = module_of_text(f"{name}.models", INCEPTION, lib)
    vision = types.ModuleType(name)
    vision.datasets, vision.transforms, vision.utils, vision.models = datasets, transforms, utils, models  # fmt: skip
    made = {m.__name__: m for m in (vision, datasets, transforms, utils, models)}
    made[f"{lib.__name__}.utils.tensorboard"] = module_of_text(
        f"{lib.__name__}.utils.tensorboard", TENSORBOARD, lib
    )
    made["tqdm"] = module_of_text("tqdm", TQDM, lib)
    for key, value in made.items():
        monkeypatch.setitem(sys.modules, key, value)
    for key, text in modules.items():  # in order: a module may import the ones before it
        monkeypatch.setitem(sys.modules, key, None)
        made[key] = module_of_text(key, text, lib)
        monkeypatch.setitem(sys.modules, key, made[key])
    return made


def run(
    script: str, lib, folder, monkeypatch, n_train: int, modules: dict
) -> tuple[str, dict, dict]:
    """The script in ``lib``'s words, seeded (``lib``, numpy's and Python's generators), run as
    ``__main__`` in ``folder`` with the stand-ins: what it printed, its globals and the
    stand-in modules."""
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(folder)
    lib.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    made = stand_ins(lib, monkeypatch, n_train, modules)
    space = {"__name__": "__main__"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(in_words_of(lib, script), str(folder / "main.py"), "exec"), space)
    return out.getvalue(), space, made


def both(script: str, tmp_path, monkeypatch, n_train: int = 16, modules: dict | None = None):
    """``run`` under torch, then under tricycle, both on the CPU on one thread (the scripts
    ask for CUDA when there is one: none is answered)."""
    with torch_and_tricycle(monkeypatch) as libs:
        return [run(script, lib, tmp_path / lib.__name__, monkeypatch, n_train, modules or {}) for lib in libs]  # fmt: skip


@pytest.fixture(autouse=True)
def torch_on_one_thread():
    """torch on one thread for the whole test (the steps the test takes after the scripts,
    too), as the ports' small products need on a shared machine."""
    torch = pytest.importorskip("torch")
    with one_thread(torch):
        yield


GAN_LINE = r"Epoch \[(\d+)/\d+\] Batch (\d+)/(\d+) \s+Loss D: (-?[\d.]+), loss G: (-?[\d.]+)"


def gan_losses(printed: str) -> list[tuple[float, float]]:
    """Each printed line's discriminator and generator losses."""
    return [(float(d), float(g)) for *_, d, g in re.findall(GAN_LINE, printed)]


def test_simple_gan(tmp_path, monkeypatch):
    (theirs, their, _), (ours, our, _) = both(FC_GAN, tmp_path, monkeypatch, n_train=64)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:  # the generator learns to fool the discriminator
        losses = gan_losses(printed)
        assert len(losses) == 4 and losses[-1][1] < losses[0][1], losses
    # given torch's weights: the generator's images and the discriminator's probabilities
    # of them, and their gradients
    z = np.random.default_rng(1).normal(size=(8, 64)).astype(np.float32)
    x = digits(8)[0].reshape(8, 784).astype(np.float32) / 127.5 - 1
    w = np.linspace(-1, 1, 784, dtype=np.float32)
    same_numbers(their["gen"], our["gen"], lambda lib, m: ((m(lib.tensor(z)) * lib.tensor(w)).sum(), m(lib.tensor(z))))  # fmt: skip
    same_numbers(their["disc"], our["disc"], lambda lib, m: (lib.nn.BCELoss()(m(lib.tensor(x)).view(-1), lib.ones(8)), m(lib.tensor(x))))  # fmt: skip


def dcgan_like(model_text: str, train_text: str, tmp_path, monkeypatch, modules=None, n_train=16):
    """model.py's ``test()`` and train.py under both libraries: the printed lines alike, the
    discriminator's (the critic's) loss down, and given torch's weights the generator's
    images and the discriminator's scores with their gradients."""
    test_run = model_text.replace('if __name__ == "__main__":\n    test()', "test()")
    (theirs, _, _), (ours, _, _) = both(test_run, tmp_path / "test", monkeypatch)
    assert theirs == ours == "Success, tests passed!\n"
    modules = {"model": model_text, **(modules or {})}
    runs = both(train_text, tmp_path / "train", monkeypatch, n_train=n_train, modules=modules)
    (theirs, their, _), (ours, our, _) = runs
    assert kinds(ours) == kinds(theirs)
    for printed, s in (theirs, their), (ours, our):
        losses = [d for d, _ in gan_losses(printed)]
        if "WEIGHT_CLIP" in s:  # the clipped critic's scores are small: it ends telling
            # real from fake
            assert s["loss_critic"].item() < 0, s["loss_critic"].item()
        else:  # the discriminator's (the critic's) loss falls
            assert len(losses) >= 4 and np.mean(losses[-3:]) < np.mean(losses[:3]), losses
    gen, disc = ("gen", "disc") if "disc" in their else ("gen", "critic")
    noise = their["gen"].net[0][0].in_channels
    z = np.random.default_rng(1).normal(size=(2, noise, 1, 1)).astype(np.float32)
    x = np.random.default_rng(2).uniform(-1, 1, size=(2, 1, 64, 64)).astype(np.float32)
    same_numbers(their[gen], our[gen], lambda lib, m: ((m(lib.tensor(z)) * lib.tensor(x)).sum(), m(lib.tensor(z))), rtol=1e-3, atol=1e-4)  # fmt: skip
    same_numbers(their[disc], our[disc], lambda lib, m: (m(lib.tensor(x)).mean(), m(lib.tensor(x))))  # fmt: skip
    return runs


def test_dcgan(tmp_path, monkeypatch):
    dcgan_like(DCGAN_MODEL, DCGAN_TRAIN, tmp_path, monkeypatch, n_train=32)


def test_wgan_weight_clipping(tmp_path, monkeypatch):
    (_, their, _), (_, our, _) = dcgan_like(
        WGAN_MODEL, WGAN_TRAIN, tmp_path, monkeypatch, n_train=8
    )
    for s in their, our:  # the critic's weights clipped to [-0.01, 0.01]
        assert all(float(abs(p.data).max()) <= 0.01 + 1e-7 for p in s["critic"].parameters())


def test_wgan_gp(tmp_path, monkeypatch):
    runs = dcgan_like(WGAN_MODEL, WGAN_GP_TRAIN, tmp_path, monkeypatch, {"utils": WGAN_GP_UTILS}, n_train=8)  # fmt: skip
    (_, their, their_modules), (_, our, our_modules) = runs
    x = np.random.default_rng(2).uniform(-1, 1, size=(2, 1, 64, 64)).astype(np.float32)
    torch, tricycle = their["torch"], our["tricycle"]
    # the gradient penalty: torch's needs create_graph=True, which tricycle refuses, clearly
    penalty = their_modules["utils"].gradient_penalty(their["critic"], torch.tensor(x), torch.tensor(x[::-1].copy(), requires_grad=True))  # fmt: skip
    penalty.backward()  # through the critic's gradients: to its weights
    assert penalty.item() >= 0 and all(p.grad is not None for p in their["critic"].parameters())
    with pytest.raises(NotImplementedError, match=r"create_graph=True .* is not supported"):
        our_modules["utils"].gradient_penalty(our["critic"], tricycle.tensor(x), tricycle.tensor(x[::-1].copy(), requires_grad=True))  # fmt: skip


# GANs/Pix2Pix/generator_model.py
PIX2PIX_GENERATOR = r"""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, in_channels, out_channels, down=True, act="relu", use_dropout=False):
        super(Block, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, 2, 1, bias=False, padding_mode="reflect")
            if down
            else nn.ConvTranspose2d(in_channels, out_channels, 4, 2, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU() if act == "relu" else nn.LeakyReLU(0.2),
        )

        self.use_dropout = use_dropout
        self.dropout = nn.Dropout(0.5)
        self.down = down

    def forward(self, x):
        x = self.conv(x)
        return self.dropout(x) if self.use_dropout else x


class Generator(nn.Module):
    def __init__(self, in_channels=3, features=64):
        super().__init__()
        self.initial_down = nn.Sequential(
            nn.Conv2d(in_channels, features, 4, 2, 1, padding_mode="reflect"),
            nn.LeakyReLU(0.2),
        )
        self.down1 = Block(features, features * 2, down=True, act="leaky", use_dropout=False)
        self.down2 = Block(
            features * 2, features * 4, down=True, act="leaky", use_dropout=False
        )
        self.down3 = Block(
            features * 4, features * 8, down=True, act="leaky", use_dropout=False
        )
        self.down4 = Block(
            features * 8, features * 8, down=True, act="leaky", use_dropout=False
        )
        self.down5 = Block(
            features * 8, features * 8, down=True, act="leaky", use_dropout=False
        )
        self.down6 = Block(
            features * 8, features * 8, down=True, act="leaky", use_dropout=False
        )
        self.bottleneck = nn.Sequential(
            nn.Conv2d(features * 8, features * 8, 4, 2, 1), nn.ReLU()
        )

        self.up1 = Block(features * 8, features * 8, down=False, act="relu", use_dropout=True)
        self.up2 = Block(
            features * 8 * 2, features * 8, down=False, act="relu", use_dropout=True
        )
        self.up3 = Block(
            features * 8 * 2, features * 8, down=False, act="relu", use_dropout=True
        )
        self.up4 = Block(
            features * 8 * 2, features * 8, down=False, act="relu", use_dropout=False
        )
        self.up5 = Block(
            features * 8 * 2, features * 4, down=False, act="relu", use_dropout=False
        )
        self.up6 = Block(
            features * 4 * 2, features * 2, down=False, act="relu", use_dropout=False
        )
        self.up7 = Block(features * 2 * 2, features, down=False, act="relu", use_dropout=False)
        self.final_up = nn.Sequential(
            nn.ConvTranspose2d(features * 2, in_channels, kernel_size=4, stride=2, padding=1),
            nn.Tanh(),
        )

    def forward(self, x):
        d1 = self.initial_down(x)
        d2 = self.down1(d1)
        d3 = self.down2(d2)
        d4 = self.down3(d3)
        d5 = self.down4(d4)
        d6 = self.down5(d5)
        d7 = self.down6(d6)
        bottleneck = self.bottleneck(d7)
        up1 = self.up1(bottleneck)
        up2 = self.up2(torch.cat([up1, d7], 1))
        up3 = self.up3(torch.cat([up2, d6], 1))
        up4 = self.up4(torch.cat([up3, d5], 1))
        up5 = self.up5(torch.cat([up4, d4], 1))
        up6 = self.up6(torch.cat([up5, d3], 1))
        up7 = self.up7(torch.cat([up6, d2], 1))
        return self.final_up(torch.cat([up7, d1], 1))


def test():
    x = torch.randn((1, 3, 256, 256))
    model = Generator(in_channels=3, features=4)  # port: features=64: a shared CPU
    preds = model(x)
    print(preds.shape)


if __name__ == "__main__":
    test()
"""

# GANs/Pix2Pix/discriminator_model.py
PIX2PIX_DISCRIMINATOR = r"""
import torch
import torch.nn as nn


class CNNBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super(CNNBlock, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(
                in_channels, out_channels, 4, stride, 1, bias=False, padding_mode="reflect"
            ),
            nn.BatchNorm2d(out_channels),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.conv(x)


class Discriminator(nn.Module):
    def __init__(self, in_channels=3, features=[64, 128, 256, 512]):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(
                in_channels * 2,
                features[0],
                kernel_size=4,
                stride=2,
                padding=1,
                padding_mode="reflect",
            ),
            nn.LeakyReLU(0.2),
        )

        layers = []
        in_channels = features[0]
        for feature in features[1:]:
            layers.append(
                CNNBlock(in_channels, feature, stride=1 if feature == features[-1] else 2),
            )
            in_channels = feature

        layers.append(
            nn.Conv2d(
                in_channels, 1, kernel_size=4, stride=1, padding=1, padding_mode="reflect"
            ),
        )

        self.model = nn.Sequential(*layers)

    def forward(self, x, y):
        x = torch.cat([x, y], dim=1)
        x = self.initial(x)
        x = self.model(x)
        return x


def test():
    x = torch.randn((1, 3, 64, 64))  # port: 256x256: a shared CPU
    y = torch.randn((1, 3, 64, 64))  # port: as above
    model = Discriminator(in_channels=3, features=[4, 8, 16, 32])  # port: the default [64, 128, 256, 512]: a shared CPU
    preds = model(x, y)
    print(model)
    print(preds.shape)


if __name__ == "__main__":
    test()
"""

# GANs/Pix2Pix/train.py
PIX2PIX_TRAIN = r"""
import torch
from utils import save_checkpoint, load_checkpoint, save_some_examples
import torch.nn as nn
import torch.optim as optim
import config
from dataset import MapDataset
from generator_model import Generator
from discriminator_model import Discriminator
from torch.utils.data import DataLoader
from tqdm import tqdm
from torchvision.utils import save_image

torch.backends.cudnn.benchmark = True


def train_fn(
    disc, gen, loader, opt_disc, opt_gen, l1_loss, bce, g_scaler, d_scaler,
):
    loop = tqdm(loader, leave=True)

    for idx, (x, y) in enumerate(loop):
        x = x.to(config.DEVICE)
        y = y.to(config.DEVICE)

        # Train Discriminator
        with torch.cuda.amp.autocast():
            y_fake = gen(x)
            D_real = disc(x, y)
            D_real_loss = bce(D_real, torch.ones_like(D_real))
            D_fake = disc(x, y_fake.detach())
            D_fake_loss = bce(D_fake, torch.zeros_like(D_fake))
            D_loss = (D_real_loss + D_fake_loss) / 2

        disc.zero_grad()
        d_scaler.scale(D_loss).backward()
        d_scaler.step(opt_disc)
        d_scaler.update()

        # Train generator
        with torch.cuda.amp.autocast():
            D_fake = disc(x, y_fake)
            G_fake_loss = bce(D_fake, torch.ones_like(D_fake))
            L1 = l1_loss(y_fake, y) * config.L1_LAMBDA
            G_loss = G_fake_loss + L1

        opt_gen.zero_grad()
        g_scaler.scale(G_loss).backward()
        g_scaler.step(opt_gen)
        g_scaler.update()

        if idx % 10 == 0:
            loop.set_postfix(
                D_real=torch.sigmoid(D_real).mean().item(),
                D_fake=torch.sigmoid(D_fake).mean().item(),
            )


def main():
    disc = Discriminator(in_channels=3).to(config.DEVICE)
    gen = Generator(in_channels=3, features=64).to(config.DEVICE)
    opt_disc = optim.Adam(disc.parameters(), lr=config.LEARNING_RATE, betas=(0.5, 0.999),)
    opt_gen = optim.Adam(gen.parameters(), lr=config.LEARNING_RATE, betas=(0.5, 0.999))
    BCE = nn.BCEWithLogitsLoss()
    L1_LOSS = nn.L1Loss()

    if config.LOAD_MODEL:
        load_checkpoint(
            config.CHECKPOINT_GEN, gen, opt_gen, config.LEARNING_RATE,
        )
        load_checkpoint(
            config.CHECKPOINT_DISC, disc, opt_disc, config.LEARNING_RATE,
        )

    train_dataset = MapDataset(root_dir="data/maps/train/",)
    train_loader = DataLoader(
        train_dataset,
        batch_size=config.BATCH_SIZE,
        shuffle=True,
        num_workers=config.NUM_WORKERS,
    )
    g_scaler = torch.cuda.amp.GradScaler()
    d_scaler = torch.cuda.amp.GradScaler()
    val_dataset = MapDataset(root_dir="data/maps/val/")
    val_loader = DataLoader(val_dataset, batch_size=1, shuffle=False)

    for epoch in range(config.NUM_EPOCHS):
        train_fn(
            disc, gen, train_loader, opt_disc, opt_gen, L1_LOSS, BCE, g_scaler, d_scaler,
        )

        if config.SAVE_MODEL and epoch % 5 == 0:
            save_checkpoint(gen, opt_gen, filename=config.CHECKPOINT_GEN)
            save_checkpoint(disc, opt_disc, filename=config.CHECKPOINT_DISC)

        save_some_examples(gen, val_loader, epoch, folder="evaluation")


if __name__ == "__main__":
    main()
"""

# GANs/Pix2Pix/config.py (its albumentations transforms out: the test's data is tensors)
PIX2PIX_CONFIG = r"""
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TRAIN_DIR = "data/train"
VAL_DIR = "data/val"
LEARNING_RATE = 2e-4
BATCH_SIZE = 16
NUM_WORKERS = 2
IMAGE_SIZE = 256
CHANNELS_IMG = 3
L1_LAMBDA = 100
LAMBDA_GP = 10
NUM_EPOCHS = 500
LOAD_MODEL = False
SAVE_MODEL = False
CHECKPOINT_DISC = "disc.pth.tar"
CHECKPOINT_GEN = "gen.pth.tar"
"""

# GANs/CycleGAN/generator_model.py
CYCLEGAN_GENERATOR = r"""
import torch
import torch.nn as nn

class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, down=True, use_act=True, **kwargs):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, padding_mode="reflect", **kwargs)
            if down
            else nn.ConvTranspose2d(in_channels, out_channels, **kwargs),
            nn.InstanceNorm2d(out_channels),
            nn.ReLU(inplace=True) if use_act else nn.Identity()
        )

    def forward(self, x):
        return self.conv(x)

class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block = nn.Sequential(
            ConvBlock(channels, channels, kernel_size=3, padding=1),
            ConvBlock(channels, channels, use_act=False, kernel_size=3, padding=1),
        )

    def forward(self, x):
        return x + self.block(x)

class Generator(nn.Module):
    def __init__(self, img_channels, num_features = 64, num_residuals=9):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(img_channels, num_features, kernel_size=7, stride=1, padding=3, padding_mode="reflect"),
            nn.InstanceNorm2d(num_features),
            nn.ReLU(inplace=True),
        )
        self.down_blocks = nn.ModuleList(
            [
                ConvBlock(num_features, num_features*2, kernel_size=3, stride=2, padding=1),
                ConvBlock(num_features*2, num_features*4, kernel_size=3, stride=2, padding=1),
            ]
        )
        self.res_blocks = nn.Sequential(
            *[ResidualBlock(num_features*4) for _ in range(num_residuals)]
        )
        self.up_blocks = nn.ModuleList(
            [
                ConvBlock(num_features*4, num_features*2, down=False, kernel_size=3, stride=2, padding=1, output_padding=1),
                ConvBlock(num_features*2, num_features*1, down=False, kernel_size=3, stride=2, padding=1, output_padding=1),
            ]
        )

        self.last = nn.Conv2d(num_features*1, img_channels, kernel_size=7, stride=1, padding=3, padding_mode="reflect")

    def forward(self, x):
        x = self.initial(x)
        for layer in self.down_blocks:
            x = layer(x)
        x = self.res_blocks(x)
        for layer in self.up_blocks:
            x = layer(x)
        return torch.tanh(self.last(x))

def test():
    img_channels = 3
    img_size = 32  # port: 256: a shared CPU
    x = torch.randn((2, img_channels, img_size, img_size))
    gen = Generator(img_channels, 9)
    print(gen(x).shape)

if __name__ == "__main__":
    test()
"""

# GANs/CycleGAN/discriminator_model.py
CYCLEGAN_DISCRIMINATOR = r"""
import torch
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, stride, 1, bias=True, padding_mode="reflect"),
            nn.InstanceNorm2d(out_channels),
            nn.LeakyReLU(0.2, inplace=True),
        )

    def forward(self, x):
        return self.conv(x)


class Discriminator(nn.Module):
    def __init__(self, in_channels=3, features=[64, 128, 256, 512]):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(
                in_channels,
                features[0],
                kernel_size=4,
                stride=2,
                padding=1,
                padding_mode="reflect",
            ),
            nn.LeakyReLU(0.2, inplace=True),
        )

        layers = []
        in_channels = features[0]
        for feature in features[1:]:
            layers.append(Block(in_channels, feature, stride=1 if feature==features[-1] else 2))
            in_channels = feature
        layers.append(nn.Conv2d(in_channels, 1, kernel_size=4, stride=1, padding=1, padding_mode="reflect"))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        x = self.initial(x)
        return torch.sigmoid(self.model(x))

def test():
    x = torch.randn((5, 3, 32, 32))  # port: 256x256: a shared CPU
    model = Discriminator(in_channels=3, features=[4, 8, 16, 32])  # port: the default [64, 128, 256, 512]: a shared CPU
    preds = model(x)
    print(preds.shape)


if __name__ == "__main__":
    test()
"""

# GANs/CycleGAN/train.py
CYCLEGAN_TRAIN = r"""
import torch
from dataset import HorseZebraDataset
import sys
from utils import save_checkpoint, load_checkpoint
from torch.utils.data import DataLoader
import torch.nn as nn
import torch.optim as optim
import config
from tqdm import tqdm
from torchvision.utils import save_image
from discriminator_model import Discriminator
from generator_model import Generator

def train_fn(disc_H, disc_Z, gen_Z, gen_H, loader, opt_disc, opt_gen, l1, mse, d_scaler, g_scaler):
    H_reals = 0
    H_fakes = 0
    loop = tqdm(loader, leave=True)

    for idx, (zebra, horse) in enumerate(loop):
        zebra = zebra.to(config.DEVICE)
        horse = horse.to(config.DEVICE)

        # Train Discriminators H and Z
        with torch.cuda.amp.autocast():
            fake_horse = gen_H(zebra)
            D_H_real = disc_H(horse)
            D_H_fake = disc_H(fake_horse.detach())
            H_reals += D_H_real.mean().item()
            H_fakes += D_H_fake.mean().item()
            D_H_real_loss = mse(D_H_real, torch.ones_like(D_H_real))
            D_H_fake_loss = mse(D_H_fake, torch.zeros_like(D_H_fake))
            D_H_loss = D_H_real_loss + D_H_fake_loss

            fake_zebra = gen_Z(horse)
            D_Z_real = disc_Z(zebra)
            D_Z_fake = disc_Z(fake_zebra.detach())
            D_Z_real_loss = mse(D_Z_real, torch.ones_like(D_Z_real))
            D_Z_fake_loss = mse(D_Z_fake, torch.zeros_like(D_Z_fake))
            D_Z_loss = D_Z_real_loss + D_Z_fake_loss

            # put it togethor
            D_loss = (D_H_loss + D_Z_loss)/2

        opt_disc.zero_grad()
        d_scaler.scale(D_loss).backward()
        d_scaler.step(opt_disc)
        d_scaler.update()

        # Train Generators H and Z
        with torch.cuda.amp.autocast():
            # adversarial loss for both generators
            D_H_fake = disc_H(fake_horse)
            D_Z_fake = disc_Z(fake_zebra)
            loss_G_H = mse(D_H_fake, torch.ones_like(D_H_fake))
            loss_G_Z = mse(D_Z_fake, torch.ones_like(D_Z_fake))

            # cycle loss
            cycle_zebra = gen_Z(fake_horse)
            cycle_horse = gen_H(fake_zebra)
            cycle_zebra_loss = l1(zebra, cycle_zebra)
            cycle_horse_loss = l1(horse, cycle_horse)

            # identity loss (remove these for efficiency if you set lambda_identity=0)
            identity_zebra = gen_Z(zebra)
            identity_horse = gen_H(horse)
            identity_zebra_loss = l1(zebra, identity_zebra)
            identity_horse_loss = l1(horse, identity_horse)

            # add all togethor
            G_loss = (
                loss_G_Z
                + loss_G_H
                + cycle_zebra_loss * config.LAMBDA_CYCLE
                + cycle_horse_loss * config.LAMBDA_CYCLE
                + identity_horse_loss * config.LAMBDA_IDENTITY
                + identity_zebra_loss * config.LAMBDA_IDENTITY
            )

        opt_gen.zero_grad()
        g_scaler.scale(G_loss).backward()
        g_scaler.step(opt_gen)
        g_scaler.update()

        if idx % 200 == 0:
            save_image(fake_horse*0.5+0.5, f"saved_images/horse_{idx}.png")
            save_image(fake_zebra*0.5+0.5, f"saved_images/zebra_{idx}.png")

        loop.set_postfix(H_real=H_reals/(idx+1), H_fake=H_fakes/(idx+1))
"""

# GANs/CycleGAN/config.py (its albumentations transforms out: the test's data is tensors)
CYCLEGAN_CONFIG = r"""
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
TRAIN_DIR = "data/train"
VAL_DIR = "data/val"
BATCH_SIZE = 1
LEARNING_RATE = 1e-5
LAMBDA_IDENTITY = 0.0
LAMBDA_CYCLE = 10
NUM_WORKERS = 4
NUM_EPOCHS = 10
LOAD_MODEL = True
SAVE_MODEL = True
CHECKPOINT_GEN_H = "genh.pth.tar"
CHECKPOINT_GEN_Z = "genz.pth.tar"
CHECKPOINT_CRITIC_H = "critich.pth.tar"
CHECKPOINT_CRITIC_Z = "criticz.pth.tar"
"""

# the repositories' utils.py and dataset.py: names only (checkpoints, example images and the
# image folders are not run: the test's batches are tensors)
NAMES_ONLY = r"""
def save_checkpoint(*args, **kwargs):
    raise AssertionError("not run in the test")


load_checkpoint = save_some_examples = MapDataset = HorseZebraDataset = save_checkpoint
"""

# the test's driver: the networks, their optimisers and losses, as main() makes them but small
PIX2PIX_SETUP = r"""
import torch
import torch.nn as nn
import torch.optim as optim
import config
from generator_model import Generator
from discriminator_model import Discriminator
from train import train_fn

disc = Discriminator(in_channels=3, features=[4, 8, 16, 32]).to(config.DEVICE)
gen = Generator(in_channels=3, features=4).to(config.DEVICE)
opt_disc = optim.Adam(disc.parameters(), lr=config.LEARNING_RATE, betas=(0.5, 0.999),)
opt_gen = optim.Adam(gen.parameters(), lr=config.LEARNING_RATE, betas=(0.5, 0.999))
BCE = nn.BCEWithLogitsLoss()
L1_LOSS = nn.L1Loss()
g_scaler = torch.cuda.amp.GradScaler()
d_scaler = torch.cuda.amp.GradScaler()
"""

CYCLEGAN_SETUP = r"""
import torch
import torch.nn as nn
import torch.optim as optim
import config
from generator_model import Generator
from discriminator_model import Discriminator
from train import train_fn

disc_H = Discriminator(in_channels=3, features=[4, 8, 16, 32]).to(config.DEVICE)
disc_Z = Discriminator(in_channels=3, features=[4, 8, 16, 32]).to(config.DEVICE)
gen_Z = Generator(img_channels=3, num_features=4, num_residuals=2).to(config.DEVICE)
gen_H = Generator(img_channels=3, num_features=4, num_residuals=2).to(config.DEVICE)
opt_disc = optim.Adam(
    list(disc_H.parameters()) + list(disc_Z.parameters()),
    lr=config.LEARNING_RATE,
    betas=(0.5, 0.999),
)
opt_gen = optim.Adam(
    list(gen_Z.parameters()) + list(gen_H.parameters()),
    lr=config.LEARNING_RATE,
    betas=(0.5, 0.999),
)
L1 = nn.L1Loss()
mse = nn.MSELoss()
g_scaler = torch.cuda.amp.GradScaler()
d_scaler = torch.cuda.amp.GradScaler()
"""


def load_torchs(their: dict, our: dict, names) -> None:
    """Tricycle's networks ``names`` given torch's weights."""
    import tricycle  # noqa: PLC0415

    for name in names:
        assert tricycle.nn.from_torch(our[name], their[name].state_dict()) == ([], [])


def same_grads(their_model, our_model, rtol=1e-3) -> None:
    """Each parameter's gradient in tricycle's model is torch's (no Linear among them: the
    same layout), to ``rtol`` of the largest: after an Adam step, whose first update is about
    the learning rate times the gradient's sign, a weight whose gradient is near zero (a conv's
    bias before a norm) may move either way in either library."""
    largest = max(np.abs(host(q.grad)).max() for q in their_model.parameters())
    pairs = zip(our_model.named_parameters(), their_model.named_parameters(), strict=True)
    for (name, p), (torch_name, q) in pairs:  # a conv's bias before a norm: zero, give or take
        np.testing.assert_allclose(host(p.grad), host(q.grad), rtol=rtol, atol=rtol * largest, err_msg=f"{name} ({torch_name})")  # fmt: skip


def shapes(printed: str) -> list[tuple]:
    """The shapes printed by torch (``torch.Size([1, 3, 64, 64])``) or tricycle (a tuple)."""
    return [tuple(int(n) for n in m.split(",") if n.strip()) for m in re.findall(r"(?:Size\(\[|^\()([\d, ]+)[\])]", printed, flags=re.MULTILINE)]  # fmt: skip


def test_pix2pix_models_and_train_step(tmp_path, monkeypatch):
    for text in PIX2PIX_GENERATOR, PIX2PIX_DISCRIMINATOR:  # their own test()
        (theirs, _, _), (ours, _, _) = both(text, tmp_path / str(len(text)), monkeypatch)
        assert shapes(ours) == shapes(theirs) and shapes(theirs)[-1] in ((1, 3, 256, 256), (1, 1, 6, 6))  # fmt: skip
    modules = {"config": PIX2PIX_CONFIG, "utils": NAMES_ONLY, "dataset": NAMES_ONLY, "generator_model": PIX2PIX_GENERATOR, "discriminator_model": PIX2PIX_DISCRIMINATOR, "train": PIX2PIX_TRAIN}  # fmt: skip
    (_, their, their_modules), (_, our, our_modules) = both(PIX2PIX_SETUP, tmp_path / "train", monkeypatch, modules=modules)  # fmt: skip
    load_torchs(their, our, ("gen", "disc"))
    for s in their, our:  # the generator's dropout off: the same numbers in either library
        for block in s["gen"].up1, s["gen"].up2, s["gen"].up3:
            block.dropout.p = 0.0
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(-1, 1, size=(1, 1, 3, 256, 256)).astype(np.float32) for _ in range(2))
    for s, made in (their, their_modules), (our, our_modules):
        lib = s["torch" if s is their else "tricycle"]
        loader = [(lib.tensor(a), lib.tensor(b)) for a, b in zip(x, y)]
        s["train_fn"](s["disc"], s["gen"], loader, s["opt_disc"], s["opt_gen"], s["L1_LOSS"], s["BCE"], s["g_scaler"], s["d_scaler"])  # fmt: skip
        s["postfixes"] = made["tqdm"].POSTFIXES
    # a step from torch's weights: torch's scores before it, and the generator's gradients
    # (through the discriminator once it has stepped)
    same_grads(their["gen"], our["gen"])
    assert len(our["postfixes"]) == 1
    for key, value in their["postfixes"][0].items():
        assert our["postfixes"][0][key] == pytest.approx(value, rel=1e-4)


def test_cyclegan_models_and_train_step(tmp_path, monkeypatch):
    for text in CYCLEGAN_GENERATOR, CYCLEGAN_DISCRIMINATOR:  # their own test()
        (theirs, _, _), (ours, _, _) = both(text, tmp_path / str(len(text)), monkeypatch)
        assert shapes(ours) == shapes(theirs) and shapes(theirs)[-1] in ((2, 3, 32, 32), (5, 1, 2, 2))  # fmt: skip
    modules = {"config": CYCLEGAN_CONFIG, "utils": NAMES_ONLY, "dataset": NAMES_ONLY, "generator_model": CYCLEGAN_GENERATOR, "discriminator_model": CYCLEGAN_DISCRIMINATOR, "train": CYCLEGAN_TRAIN}  # fmt: skip
    (_, their, their_modules), (_, our, our_modules) = both(CYCLEGAN_SETUP, tmp_path / "train", monkeypatch, modules=modules)  # fmt: skip
    networks = ("disc_H", "disc_Z", "gen_Z", "gen_H")
    load_torchs(their, our, networks)
    for s in their, our:  # in float64: the instance norms of small maps amplify rounding
        for name in networks:
            s[name].double()
    rng = np.random.default_rng(0)
    zebras, horses = rng.uniform(-1, 1, size=(2, 1, 1, 3, 32, 32))
    for s, made in (their, their_modules), (our, our_modules):
        lib = s["torch" if s is their else "tricycle"]
        loader = [(lib.tensor(a), lib.tensor(b)) for a, b in zip(zebras, horses)]
        s["train_fn"](*(s[n] for n in networks), loader, s["opt_disc"], s["opt_gen"], s["L1"], s["mse"], s["d_scaler"], s["g_scaler"])  # fmt: skip
        s["postfixes"] = made["tqdm"].POSTFIXES
    for name in networks[2:]:  # a step from torch's weights: the generators' gradients
        same_grads(their[name], our[name])
    assert len(our["postfixes"]) == 1
    for ours, theirs in zip(our["postfixes"], their["postfixes"], strict=True):
        assert ours == pytest.approx(theirs, rel=1e-4)


# GANs/ProGAN/model.py
PROGAN_MODEL = r'''
"""
Implementation of ProGAN generator and discriminator with the key
attributions from the paper. We have tried to make the implementation
compact but a goal is also to keep it readable and understandable.
Specifically the key points implemented are:

1) Progressive growing (of model and layers)
2) Minibatch std on Discriminator
3) Normalization with PixelNorm
4) Equalized Learning Rate (here I cheated and only did it on Conv layers)
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from math import log2

"""
Factors is used in Discrmininator and Generator for how much
the channels should be multiplied and expanded for each layer,
so specifically the first 5 layers the channels stay the same,
whereas when we increase the img_size (towards the later layers)
we decrease the number of chanels by 1/2, 1/4, etc.
"""
factors = [1, 1, 1, 1, 1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32]


class WSConv2d(nn.Module):
    """
    Weight scaled Conv2d (Equalized Learning Rate)
    Note that input is multiplied rather than changing weights
    this will have the same result.

    Inspired and looked at:
    https://github.com/nvnbny/progressive_growing_of_gans/blob/master/modelUtils.py
    """

    def __init__(
        self, in_channels, out_channels, kernel_size=3, stride=1, padding=1, gain=2
    ):
        super(WSConv2d, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding)
        self.scale = (gain / (in_channels * (kernel_size ** 2))) ** 0.5
        self.bias = self.conv.bias
        self.conv.bias = None

        # initialize conv layer
        nn.init.normal_(next(self.conv.parameters()))  # port: self.conv.weight by position: tricycle's convolutions name it weights (documented)
        nn.init.zeros_(self.bias)

    def forward(self, x):
        return self.conv(x * self.scale) + self.bias.view(1, self.bias.shape[0], 1, 1)


class PixelNorm(nn.Module):
    def __init__(self):
        super(PixelNorm, self).__init__()
        self.epsilon = 1e-8

    def forward(self, x):
        return x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.epsilon)


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, use_pixelnorm=True):
        super(ConvBlock, self).__init__()
        self.use_pn = use_pixelnorm
        self.conv1 = WSConv2d(in_channels, out_channels)
        self.conv2 = WSConv2d(out_channels, out_channels)
        self.leaky = nn.LeakyReLU(0.2)
        self.pn = PixelNorm()

    def forward(self, x):
        x = self.leaky(self.conv1(x))
        x = self.pn(x) if self.use_pn else x
        x = self.leaky(self.conv2(x))
        x = self.pn(x) if self.use_pn else x
        return x


class Generator(nn.Module):
    def __init__(self, z_dim, in_channels, img_channels=3):
        super(Generator, self).__init__()

        # initial takes 1x1 -> 4x4
        self.initial = nn.Sequential(
            PixelNorm(),
            nn.ConvTranspose2d(z_dim, in_channels, 4, 1, 0),
            nn.LeakyReLU(0.2),
            WSConv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1),
            nn.LeakyReLU(0.2),
            PixelNorm(),
        )

        self.initial_rgb = WSConv2d(
            in_channels, img_channels, kernel_size=1, stride=1, padding=0
        )
        self.prog_blocks, self.rgb_layers = (
            nn.ModuleList([]),
            nn.ModuleList([self.initial_rgb]),
        )

        for i in range(
            len(factors) - 1
        ):  # -1 to prevent index error because of factors[i+1]
            conv_in_c = int(in_channels * factors[i])
            conv_out_c = int(in_channels * factors[i + 1])
            self.prog_blocks.append(ConvBlock(conv_in_c, conv_out_c))
            self.rgb_layers.append(
                WSConv2d(conv_out_c, img_channels, kernel_size=1, stride=1, padding=0)
            )

    def fade_in(self, alpha, upscaled, generated):
        # alpha should be scalar within [0, 1], and upscale.shape == generated.shape
        return torch.tanh(alpha * generated + (1 - alpha) * upscaled)

    def forward(self, x, alpha, steps):
        out = self.initial(x)

        if steps == 0:
            return self.initial_rgb(out)

        for step in range(steps):
            upscaled = F.interpolate(out, scale_factor=2, mode="nearest")
            out = self.prog_blocks[step](upscaled)

        # The number of channels in upscale will stay the same, while
        # out which has moved through prog_blocks might change. To ensure
        # we can convert both to rgb we use different rgb_layers
        # (steps-1) and steps for upscaled, out respectively
        final_upscaled = self.rgb_layers[steps - 1](upscaled)
        final_out = self.rgb_layers[steps](out)
        return self.fade_in(alpha, final_upscaled, final_out)


class Discriminator(nn.Module):
    def __init__(self, in_channels, img_channels=3):
        super(Discriminator, self).__init__()
        self.prog_blocks, self.rgb_layers = nn.ModuleList([]), nn.ModuleList([])
        self.leaky = nn.LeakyReLU(0.2)

        # here we work back ways from factors because the discriminator
        # should be mirrored from the generator. So the first prog_block and
        # rgb layer we append will work for input size 1024x1024, then 512->256-> etc
        for i in range(len(factors) - 1, 0, -1):
            conv_in = int(in_channels * factors[i])
            conv_out = int(in_channels * factors[i - 1])
            self.prog_blocks.append(ConvBlock(conv_in, conv_out, use_pixelnorm=False))
            self.rgb_layers.append(
                WSConv2d(img_channels, conv_in, kernel_size=1, stride=1, padding=0)
            )

        # perhaps confusing name "initial_rgb" this is just the RGB layer for 4x4 input size
        # did this to "mirror" the generator initial_rgb
        self.initial_rgb = WSConv2d(
            img_channels, in_channels, kernel_size=1, stride=1, padding=0
        )
        self.rgb_layers.append(self.initial_rgb)
        self.avg_pool = nn.AvgPool2d(
            kernel_size=2, stride=2
        )  # down sampling using avg pool

        # this is the block for 4x4 input size
        self.final_block = nn.Sequential(
            # +1 to in_channels because we concatenate from MiniBatch std
            WSConv2d(in_channels + 1, in_channels, kernel_size=3, padding=1),
            nn.LeakyReLU(0.2),
            WSConv2d(in_channels, in_channels, kernel_size=4, padding=0, stride=1),
            nn.LeakyReLU(0.2),
            WSConv2d(
                in_channels, 1, kernel_size=1, padding=0, stride=1
            ),  # we use this instead of linear layer
        )

    def fade_in(self, alpha, downscaled, out):
        """Used to fade in downscaled using avg pooling and output from CNN"""
        # alpha should be scalar within [0, 1], and upscale.shape == generated.shape
        return alpha * out + (1 - alpha) * downscaled

    def minibatch_std(self, x):
        batch_statistics = (
            torch.std(x, dim=0).mean().tile((x.shape[0], 1, x.shape[2], x.shape[3]))  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
        )
        # we take the std for each example (across all channels, and pixels) then we repeat it
        # for a single channel and concatenate it with the image. In this way the discriminator
        # will get information about the variation in the batch/image
        return torch.cat([x, batch_statistics], dim=1)

    def forward(self, x, alpha, steps):
        # where we should start in the list of prog_blocks, maybe a bit confusing but
        # the last is for the 4x4. So example let's say steps=1, then we should start
        # at the second to last because input_size will be 8x8. If steps==0 we just
        # use the final block
        cur_step = len(self.prog_blocks) - steps

        # convert from rgb as initial step, this will depend on
        # the image size (each will have it's on rgb layer)
        out = self.leaky(self.rgb_layers[cur_step](x))

        if steps == 0:  # i.e, image is 4x4
            out = self.minibatch_std(out)
            return self.final_block(out).view(out.shape[0], -1)

        # because prog_blocks might change the channels, for down scale we use rgb_layer
        # from previous/smaller size which in our case correlates to +1 in the indexing
        downscaled = self.leaky(self.rgb_layers[cur_step + 1](self.avg_pool(x)))
        out = self.avg_pool(self.prog_blocks[cur_step](out))

        # the fade_in is done first between the downscaled and the input
        # this is opposite from the generator
        out = self.fade_in(alpha, downscaled, out)

        for step in range(cur_step + 1, len(self.prog_blocks)):
            out = self.prog_blocks[step](out)
            out = self.avg_pool(out)

        out = self.minibatch_std(out)
        return self.final_block(out).view(out.shape[0], -1)


if __name__ == "__main__":
    Z_DIM = 100
    IN_CHANNELS = 32  # port: 256: a shared CPU (32 keeps the last factor's 1/32 a channel)
    gen = Generator(Z_DIM, IN_CHANNELS, img_channels=3)
    critic = Discriminator(IN_CHANNELS, img_channels=3)  # port: Discriminator(Z_DIM, IN_CHANNELS, img_channels=3): this version's Discriminator takes no z_dim (a TypeError under torch too)

    for img_size in [4, 8]:  # port: [4, 8, ..., 1024]: two resolutions on a shared CPU
        num_steps = int(log2(img_size / 4))
        x = torch.randn((2, Z_DIM, 1, 1))  # port: a batch of 1, whose minibatch std (unbiased, of one image) is torch's NaN: tricycle's std refuses it with a clear error
        z = gen(x, 0.5, steps=num_steps)
        assert z.shape == (2, 3, img_size, img_size)  # port: (1, ...): as above
        out = critic(z, alpha=0.5, steps=num_steps)
        assert out.shape == (2, 1)  # port: (1, 1): as above
        print(f"Success! At img size: {img_size}")
'''


def test_progan_model_at_two_resolutions(tmp_path, monkeypatch):
    (theirs, their, _), (ours, our, _) = both(PROGAN_MODEL, tmp_path, monkeypatch)
    assert theirs == ours == "Success! At img size: 4\nSuccess! At img size: 8\n"
    # given torch's weights: the images at 4x4 and at 8x8 half faded in, the critic's scores
    # of a batch (its minibatch std), and their gradients
    rng = np.random.default_rng(0)
    z = rng.normal(size=(2, 100, 1, 1)).astype(np.float32)
    for steps in 0, 1:
        size = 4 * 2**steps
        x = rng.uniform(-1, 1, size=(3, 3, size, size)).astype(np.float32)
        w = rng.normal(size=(2, 3, size, size)).astype(np.float32)
        same_numbers(their["gen"], our["gen"], lambda lib, m, steps=steps, w=w: ((m(lib.tensor(z), 0.5, steps) * lib.tensor(w)).sum(), m(lib.tensor(z), 0.5, steps)))  # fmt: skip
        same_numbers(their["critic"], our["critic"], lambda lib, m, steps=steps, x=x: ((m(lib.tensor(x), 0.5, steps) ** 2).sum(), m(lib.tensor(x), 0.5, steps)))  # fmt: skip


# more_advanced/Seq2Seq/seq2seq.py
SEQ2SEQ = r"""
import torch
import torch.nn as nn
import torch.optim as optim
from torchtext.datasets import Multi30k
from torchtext.data import Field, BucketIterator
import numpy as np
import spacy
import random
from torch.utils.tensorboard import SummaryWriter # to print to tensorboard
from utils import translate_sentence, bleu, save_checkpoint, load_checkpoint

spacy_ger = spacy.load('de')
spacy_eng = spacy.load('en')

def tokenize_ger(text):
    return [tok.text for tok in spacy_ger.tokenizer(text)]

def tokenize_eng(text):
    return [tok.text for tok in spacy_eng.tokenizer(text)]

german = Field(tokenize = tokenize_ger, lower = True, 
               init_token='<sos>', eos_token='<eos>')

english = Field(tokenize = tokenize_eng, lower = True, 
                init_token='<sos>', eos_token='<eos>')

train_data, valid_data, test_data = Multi30k.splits(exts = ('.de', '.en'), 
                                                    fields = (german, english))

german.build_vocab(train_data, max_size=10000, min_freq=2)
english.build_vocab(train_data, max_size=10000, min_freq=2)

class Encoder(nn.Module):
    def __init__(self, input_size, embedding_size, hidden_size, num_layers, p):
        super(Encoder, self).__init__()
        self.dropout = nn.Dropout(p)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        
        self.embedding = nn.Embedding(input_size, embedding_size)
        self.rnn = nn.LSTM(embedding_size, hidden_size, num_layers, dropout=p)
    
    def forward(self, x):
        # x shape: (seq_length, N) where N is batch size
        
        embedding = self.dropout(self.embedding(x))
        # embedding shape: (seq_length, N, embedding_size)
        
        outputs, (hidden, cell) = self.rnn(embedding)
        # outputs shape: (seq_length, N, hidden_size)
        
        return hidden, cell

class Decoder(nn.Module):
    def __init__(self, input_size, embedding_size, hidden_size, 
                 output_size, num_layers, p):
        super(Decoder, self).__init__()
        self.dropout = nn.Dropout(p)
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        
        self.embedding = nn.Embedding(input_size, embedding_size)
        self.rnn = nn.LSTM(embedding_size, hidden_size, num_layers, dropout=p)
        self.fc = nn.Linear(hidden_size, output_size)
        
    def forward(self, x, hidden, cell):
        # x shape: (N) where N is for batch size, we want it to be (1, N), seq_length
        # is 1 here because we are sending in a single word and not a sentence
        x = x.unsqueeze(0)

        embedding = self.dropout(self.embedding(x))
        # embedding shape: (1, N, embedding_size)

        outputs, (hidden, cell) = self.rnn(embedding, (hidden, cell))
        # outputs shape: (1, N, hidden_size)
        
        predictions = self.fc(outputs)
        
        # predictions shape: (1, N, length_target_vocabulary) to send it to 
        # loss function we want it to be (N, length_target_vocabulary) so we're
        # just gonna remove the first dim
        predictions = predictions.squeeze(0)
        
        return predictions, hidden, cell
    
class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super(Seq2Seq, self).__init__()
        self.encoder = encoder
        self.decoder = decoder
    
    def forward(self, source, target, teacher_force_ratio=0.5):
        batch_size = source.shape[1]
        target_len = target.shape[0]
        target_vocab_size = len(english.vocab)
        
        outputs = torch.zeros(target_len, batch_size, target_vocab_size).to(device)
        
        hidden, cell = self.encoder(source)
        
        # Grab the first input to the Decoder which will be <SOS> token
        x = target[0]
        
        for t in range(1, target_len):
            # Use previous hidden, cell as context from encoder at start
            output, hidden, cell = self.decoder(x, hidden, cell)
            
            # Store next output prediction
            outputs[t] = output
            
            # Get the best word the Decoder predicted (index in the vocabulary)
            best_guess = output.argmax(1)
            
            # With probability of teacher_force_ratio we take the actual next word
            # otherwise we take the word that the Decoder predicted it to be.
            # Teacher Forcing is used so that the model gets used to seeing
            # similar inputs at training and testing time, if teacher forcing is 1
            # then inputs at test time might be completely different than what the
            # network is used to. This was a long comment.
            x = target[t] if random.random() < teacher_force_ratio else best_guess      

        return outputs


### We're ready to define everything we need for training our Seq2Seq model ###

# Training hyperparameters
num_epochs = 4  # port: 100: a shared CPU
learning_rate = 0.01  # port: 0.001: four epochs on a small table
batch_size = 4  # port: 64: the built-in table's 12 pairs

# Model hyperparameters
load_model = False
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
input_size_encoder = len(german.vocab)
input_size_decoder = len(english.vocab)
output_size = len(english.vocab)
encoder_embedding_size = 16  # port: 300: a shared CPU
decoder_embedding_size = 16  # port: 300: a shared CPU
hidden_size = 32  # port: 1024: a shared CPU
num_layers = 2
enc_dropout = 0.5
dec_dropout = 0.5

# Tensorboard to get nice loss plot
writer = SummaryWriter(f'runs/loss_plot')
step = 0

train_iterator, valid_iterator, test_iterator = BucketIterator.splits(
    (train_data, valid_data, test_data), 
    batch_size = batch_size,
    sort_within_batch = True,
    sort_key = lambda x : len(x.src),
    device = device)

encoder_net = Encoder(input_size_encoder, encoder_embedding_size, 
              hidden_size, num_layers, enc_dropout).to(device)

decoder_net = Decoder(input_size_decoder, decoder_embedding_size,
              hidden_size, output_size, num_layers, dec_dropout).to(device)

model = Seq2Seq(encoder_net, decoder_net).to(device)
optimizer = optim.Adam(model.parameters(), lr = learning_rate)

pad_idx = english.vocab.stoi['<pad>']
criterion = nn.CrossEntropyLoss(ignore_index = pad_idx)

if load_model:
    load_checkpoint(torch.load("my_checkpoint.pth.tar"), model, optimizer)


sentence = 'ein boot mit mehreren männern darauf wird von einem großen pferdegespann ans ufer gezogen.'

for epoch in range(num_epochs):
    print(f'[Epoch {epoch} / {num_epochs}]')
    
    checkpoint = {'state_dict' : model.state_dict(), 'optimizer': optimizer.state_dict()}
    save_checkpoint(checkpoint)

    model.eval()
    
    translated_sentence = translate_sentence(model, sentence, german, 
                                             english, device, max_length=50) 

    print(f'Translated example sentence: \n {translated_sentence}')
    
    model.train()
    
    for batch_idx, batch in enumerate(train_iterator):
        # Get input and targets and get to cuda
        inp_data = batch.src.to(device)
        target = batch.trg.to(device)
        
        # Forward prop
        output = model(inp_data, target)
        
        # Output is of shape (trg_len, batch_size, output_dim) but Cross Entropy Loss
        # doesn't take input in that form. For example if we have MNIST we want to have
        # output to be: (N, 10) and targets just (N). Here we can view it in a similar
        # way that we have output_words * batch_size that we want to send in into
        # our cost function, so we need to do some reshapin. While we're at it
        # Let's also remove the start token while we're at it
        output = output[1:].reshape(-1, output.shape[2])
        target = target[1:].reshape(-1)
        
        optimizer.zero_grad()
        loss = criterion(output, target)
        
        # Back prop
        loss.backward()

        # Clip to avoid exploding gradient issues, makes sure grads are
        # within a healthy range
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)
        
        # Gradient descent step
        optimizer.step()
            
        # Plot to tensorboard
        writer.add_scalar('Training loss', loss, global_step=step)
        step += 1


score = bleu(test_data[1:100], model, german, english, device)
print(f'Bleu score {score*100:.2f}')
"""

# more_advanced/Seq2Seq/utils.py
SEQ2SEQ_UTILS = r"""
import torch
import spacy
from torchtext.data.metrics import bleu_score
import sys


def translate_sentence(model, sentence, german, english, device, max_length=50):
    # print(sentence)

    # sys.exit()

    # Load german tokenizer
    spacy_ger = spacy.load("de")

    # Create tokens using spacy and everything in lower case (which is what our vocab is)
    if type(sentence) == str:
        tokens = [token.text.lower() for token in spacy_ger(sentence)]
    else:
        tokens = [token.lower() for token in sentence]

    # print(tokens)

    # sys.exit()
    # Add <SOS> and <EOS> in beginning and end respectively
    tokens.insert(0, german.init_token)
    tokens.append(german.eos_token)

    # Go through each german token and convert to an index
    text_to_indices = [german.vocab.stoi[token] for token in tokens]

    # Convert to Tensor
    sentence_tensor = torch.LongTensor(text_to_indices).unsqueeze(1).to(device)

    # Build encoder hidden, cell state
    with torch.no_grad():
        hidden, cell = model.encoder(sentence_tensor)

    outputs = [english.vocab.stoi["<sos>"]]

    for _ in range(max_length):
        previous_word = torch.LongTensor([outputs[-1]]).to(device)

        with torch.no_grad():
            output, hidden, cell = model.decoder(previous_word, hidden, cell)
            best_guess = output.argmax(1).item()

        outputs.append(best_guess)

        # Model predicts it's the end of the sentence
        if output.argmax(1).item() == english.vocab.stoi["<eos>"]:
            break

    translated_sentence = [english.vocab.itos[idx] for idx in outputs]

    # remove start token
    return translated_sentence[1:]


def bleu(data, model, german, english, device):
    targets = []
    outputs = []

    for example in data:
        src = vars(example)["src"]
        trg = vars(example)["trg"]

        prediction = translate_sentence(model, src, german, english, device)
        prediction = prediction[:-1]  # remove <eos> token

        targets.append([trg])
        outputs.append(prediction)

    return bleu_score(outputs, targets)


def save_checkpoint(state, filename="my_checkpoint.pth.tar"):
    print("=> Saving checkpoint")
    torch.save(state, filename)


def load_checkpoint(checkpoint, model, optimizer):
    print("=> Loading checkpoint")
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])
"""

# more_advanced/Seq2Seq_attention/seq2seq_attention.py
SEQ2SEQ_ATTENTION = r'''
import random
import torch
import torch.nn as nn
import torch.optim as optim
import numpy as np
import spacy
from utils import translate_sentence, bleu, save_checkpoint, load_checkpoint
from torch.utils.tensorboard import SummaryWriter  # to print to tensorboard
from torchtext.datasets import Multi30k
from torchtext.data import Field, BucketIterator

"""
To install spacy languages do:
python -m spacy download en
python -m spacy download de
"""
spacy_ger = spacy.load("de")
spacy_eng = spacy.load("en")


def tokenize_ger(text):
    return [tok.text for tok in spacy_ger.tokenizer(text)]


def tokenize_eng(text):
    return [tok.text for tok in spacy_eng.tokenizer(text)]


german = Field(tokenize=tokenize_ger, lower=True, init_token="<sos>", eos_token="<eos>")

english = Field(
    tokenize=tokenize_eng, lower=True, init_token="<sos>", eos_token="<eos>"
)

train_data, valid_data, test_data = Multi30k.splits(
    exts=(".de", ".en"), fields=(german, english)
)

german.build_vocab(train_data, max_size=10000, min_freq=2)
english.build_vocab(train_data, max_size=10000, min_freq=2)


class Encoder(nn.Module):
    def __init__(self, input_size, embedding_size, hidden_size, num_layers, p):
        super(Encoder, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers

        self.embedding = nn.Embedding(input_size, embedding_size)
        self.rnn = nn.LSTM(embedding_size, hidden_size, num_layers, bidirectional=True)

        self.fc_hidden = nn.Linear(hidden_size * 2, hidden_size)
        self.fc_cell = nn.Linear(hidden_size * 2, hidden_size)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        # x: (seq_length, N) where N is batch size

        embedding = self.dropout(self.embedding(x))
        # embedding shape: (seq_length, N, embedding_size)

        encoder_states, (hidden, cell) = self.rnn(embedding)
        # outputs shape: (seq_length, N, hidden_size)

        # Use forward, backward cells and hidden through a linear layer
        # so that it can be input to the decoder which is not bidirectional
        # Also using index slicing ([idx:idx+1]) to keep the dimension
        hidden = self.fc_hidden(torch.cat((hidden[0:1], hidden[1:2]), dim=2))
        cell = self.fc_cell(torch.cat((cell[0:1], cell[1:2]), dim=2))

        return encoder_states, hidden, cell


class Decoder(nn.Module):
    def __init__(
            self, input_size, embedding_size, hidden_size, output_size, num_layers, p
    ):
        super(Decoder, self).__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers

        self.embedding = nn.Embedding(input_size, embedding_size)
        self.rnn = nn.LSTM(hidden_size * 2 + embedding_size, hidden_size, num_layers)

        self.energy = nn.Linear(hidden_size * 3, 1)
        self.fc = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(p)
        self.softmax = nn.Softmax(dim=0)
        self.relu = nn.ReLU()

    def forward(self, x, encoder_states, hidden, cell):
        x = x.unsqueeze(0)
        # x: (1, N) where N is the batch size

        embedding = self.dropout(self.embedding(x))
        # embedding shape: (1, N, embedding_size)

        sequence_length = encoder_states.shape[0]
        h_reshaped = hidden.tile((sequence_length, 1, 1))  # port: torch's repeat is tile (tricycle's repeat is numpy's: documented)
        # h_reshaped: (seq_length, N, hidden_size*2)

        energy = self.relu(self.energy(torch.cat((h_reshaped, encoder_states), dim=2)))
        # energy: (seq_length, N, 1)

        attention = self.softmax(energy)
        # attention: (seq_length, N, 1)

        # attention: (seq_length, N, 1), snk
        # encoder_states: (seq_length, N, hidden_size*2), snl
        # we want context_vector: (1, N, hidden_size*2), i.e knl
        context_vector = torch.einsum('snk,snl->knl', attention, encoder_states)

        rnn_input = torch.cat((context_vector, embedding), dim=2)
        # rnn_input: (1, N, hidden_size*2 + embedding_size)

        outputs, (hidden, cell) = self.rnn(rnn_input, (hidden, cell))
        # outputs shape: (1, N, hidden_size)

        predictions = self.fc(outputs).squeeze(0)
        # predictions: (N, hidden_size)

        return predictions, hidden, cell


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super(Seq2Seq, self).__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, source, target, teacher_force_ratio=0.5):
        batch_size = source.shape[1]
        target_len = target.shape[0]
        target_vocab_size = len(english.vocab)

        outputs = torch.zeros(target_len, batch_size, target_vocab_size).to(device)
        encoder_states, hidden, cell = self.encoder(source)

        # First input will be <SOS> token
        x = target[0]

        for t in range(1, target_len):
            # At every time step use encoder_states and update hidden, cell
            output, hidden, cell = self.decoder(x, encoder_states, hidden, cell)

            # Store prediction for current time step
            outputs[t] = output

            # Get the best word the Decoder predicted (index in the vocabulary)
            best_guess = output.argmax(1)

            # With probability of teacher_force_ratio we take the actual next word
            # otherwise we take the word that the Decoder predicted it to be.
            # Teacher Forcing is used so that the model gets used to seeing
            # similar inputs at training and testing time, if teacher forcing is 1
            # then inputs at test time might be completely different than what the
            # network is used to. This was a long comment.
            x = target[t] if random.random() < teacher_force_ratio else best_guess

        return outputs


### We're ready to define everything we need for training our Seq2Seq model ###
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
load_model = False
save_model = True

# Training hyperparameters
num_epochs = 4  # port: 100: a shared CPU
learning_rate = 3e-3  # port: 3e-4: four epochs on a small table
batch_size = 4  # port: 32: the built-in table's 12 pairs

# Model hyperparameters
input_size_encoder = len(german.vocab)
input_size_decoder = len(english.vocab)
output_size = len(english.vocab)
encoder_embedding_size = 16  # port: 300: a shared CPU
decoder_embedding_size = 16  # port: 300: a shared CPU
hidden_size = 32  # port: 1024: a shared CPU
num_layers = 1
enc_dropout = 0.0
dec_dropout = 0.0

# Tensorboard to get nice loss plot
writer = SummaryWriter(f"runs/loss_plot")
step = 0

train_iterator, valid_iterator, test_iterator = BucketIterator.splits(
    (train_data, valid_data, test_data),
    batch_size=batch_size,
    sort_within_batch=True,
    sort_key=lambda x: len(x.src),
    device=device,
)

encoder_net = Encoder(
    input_size_encoder, encoder_embedding_size, hidden_size, num_layers, enc_dropout
).to(device)

decoder_net = Decoder(
    input_size_decoder,
    decoder_embedding_size,
    hidden_size,
    output_size,
    num_layers,
    dec_dropout,
).to(device)

model = Seq2Seq(encoder_net, decoder_net).to(device)
optimizer = optim.Adam(model.parameters(), lr=learning_rate)

pad_idx = english.vocab.stoi["<pad>"]
criterion = nn.CrossEntropyLoss(ignore_index=pad_idx)

if load_model:
    load_checkpoint(torch.load("my_checkpoint.pth.tar"), model, optimizer)

sentence = (
    "ein boot mit mehreren männern darauf wird von einem großen"
    "pferdegespann ans ufer gezogen."
)

for epoch in range(num_epochs):
    print(f"[Epoch {epoch} / {num_epochs}]")

    if save_model:
        checkpoint = {"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}
        save_checkpoint(checkpoint)

    model.eval()

    translated_sentence = translate_sentence(
        model, sentence, german, english, device, max_length=50
    )

    print(f"Translated example sentence: \n {translated_sentence}")

    model.train()

    for batch_idx, batch in enumerate(train_iterator):
        # Get input and targets and get to cuda
        inp_data = batch.src.to(device)
        target = batch.trg.to(device)

        # Forward prop
        output = model(inp_data, target)

        # Output is of shape (trg_len, batch_size, output_dim) but Cross Entropy Loss
        # doesn't take input in that form. For example if we have MNIST we want to have
        # output to be: (N, 10) and targets just (N). Here we can view it in a similar
        # way that we have output_words * batch_size that we want to send in into
        # our cost function, so we need to do some reshapin. While we're at it
        # Let's also remove the start token while we're at it
        output = output[1:].reshape(-1, output.shape[2])
        target = target[1:].reshape(-1)

        optimizer.zero_grad()
        loss = criterion(output, target)

        # Back prop
        loss.backward()

        # Clip to avoid exploding gradient issues, makes sure grads are
        # within a healthy range
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1)

        # Gradient descent step
        optimizer.step()

        # Plot to tensorboard
        writer.add_scalar("Training loss", loss, global_step=step)
        step += 1

# running on entire test data takes a while
score = bleu(test_data[1:100], model, german, english, device)
print(f"Bleu score {score * 100:.2f}")
'''

# Seq2Seq_attention/utils.py's translate_sentence, where it differs from Seq2Seq's (the
# encoder's states go to the decoder); bleu and the checkpoints are Seq2Seq's, as its file has them
SEQ2SEQ_ATTENTION_TRANSLATE = r"""
def translate_sentence(model, sentence, german, english, device, max_length=50):
    # Load german tokenizer
    spacy_ger = spacy.load("de")

    # Create tokens using spacy and everything in lower case (which is what our vocab is)
    if type(sentence) == str:
        tokens = [token.text.lower() for token in spacy_ger(sentence)]
    else:
        tokens = [token.lower() for token in sentence]

    # Add <SOS> and <EOS> in beginning and end respectively
    tokens.insert(0, german.init_token)
    tokens.append(german.eos_token)

    # Go through each german token and convert to an index
    text_to_indices = [german.vocab.stoi[token] for token in tokens]

    # Convert to Tensor
    sentence_tensor = torch.LongTensor(text_to_indices).unsqueeze(1).to(device)

    # Build encoder hidden, cell state
    with torch.no_grad():
        outputs_encoder, hiddens, cells = model.encoder(sentence_tensor)

    outputs = [english.vocab.stoi["<sos>"]]

    for _ in range(max_length):
        previous_word = torch.LongTensor([outputs[-1]]).to(device)

        with torch.no_grad():
            output, hiddens, cells = model.decoder(
                previous_word, outputs_encoder, hiddens, cells
            )
            best_guess = output.argmax(1).item()

        outputs.append(best_guess)

        # Model predicts it's the end of the sentence
        if output.argmax(1).item() == english.vocab.stoi["<eos>"]:
            break

    translated_sentence = [english.vocab.itos[idx] for idx in outputs]

    # remove start token
    return translated_sentence[1:]
"""

# torchtext's legacy Field, Multi30k, BucketIterator and bleu_score (torchtext is not installed,
# and Multi30k is a download): only what the scripts call, over a built-in German-English table
TORCHTEXT = r"""
import math
import random
from collections import Counter, defaultdict
import torch

SUBJECTS = [("ein mann", "a man"), ("eine frau", "a woman"), ("ein hund", "a dog"), ("ein kind", "a child")]
VERBS = [("läuft", "runs"), ("schläft", "sleeps"), ("isst", "eats"), ("spielt", "plays")]
PAIRS = [(f"{s} {v} .", f"{t} {w} .") for s, t in SUBJECTS for v, w in VERBS]


class Vocab:
    def __init__(self, itos):
        self.itos = itos
        self.stoi = defaultdict(int, {s: i for i, s in enumerate(itos)})  # unknown words: <unk>, 0

    def __len__(self):
        return len(self.itos)


class Field:
    def __init__(self, tokenize, lower=False, init_token=None, eos_token=None):
        self.tokenize, self.lower = tokenize, lower
        self.init_token, self.eos_token, self.pad_token = init_token, eos_token, "<pad>"

    def preprocess(self, text):
        return [t.lower() for t in self.tokenize(text)] if self.lower else self.tokenize(text)

    def build_vocab(self, dataset, max_size=None, min_freq=1):
        counts = Counter(t for ex in dataset for name, field in dataset.fields.items() if field is self for t in getattr(ex, name))
        words = sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))
        self.vocab = Vocab(["<unk>", self.pad_token, self.init_token, self.eos_token] + words[:max_size])

    def process(self, examples):
        # token lists as a padded (seq_len, N) tensor of indices, <sos> and <eos> around each
        seqs = [[self.init_token, *ex, self.eos_token] for ex in examples]
        length = max(map(len, seqs))
        pad = self.vocab.stoi[self.pad_token]
        return torch.tensor([[self.vocab.stoi[t] for t in s] + [pad] * (length - len(s)) for s in seqs]).t()


class Example:
    def __init__(self, src, trg):
        self.src, self.trg = src, trg


class Dataset(list):
    def __init__(self, examples, fields):
        super().__init__(examples)
        self.fields = fields


class Multi30k:
    @staticmethod
    def splits(exts, fields):
        src, trg = fields
        examples = [Example(src.preprocess(de), trg.preprocess(en)) for de, en in PAIRS]
        random.Random(0).shuffle(examples)
        named = {"src": src, "trg": trg}
        return Dataset(examples[:12], named), Dataset(examples[12:13], named), Dataset(examples[12:], named)


class Batch:
    def __init__(self, examples, fields):
        self.src = fields["src"].process([ex.src for ex in examples])
        self.trg = fields["trg"].process([ex.trg for ex in examples])


class BucketIterator:
    def __init__(self, dataset, batch_size, sort_within_batch, sort_key, device):
        self.dataset, self.batch_size, self.sort_key = dataset, batch_size, sort_key

    def __len__(self):
        return math.ceil(len(self.dataset) / self.batch_size)

    def __iter__(self):
        order = list(self.dataset)
        random.shuffle(order)
        for start in range(0, len(order), self.batch_size):
            chunk = sorted(order[start:start + self.batch_size], key=self.sort_key, reverse=True)
            yield Batch(chunk, self.dataset.fields)

    @classmethod
    def splits(cls, datasets, batch_size, sort_within_batch, sort_key, device):
        return tuple(cls(d, batch_size, sort_within_batch, sort_key, device) for d in datasets)


def bleu_score(candidate_corpus, references_corpus, max_n=4):
    # corpus BLEU: clipped n-gram precisions' geometric mean times the brevity penalty
    matches, totals, length, ref_length = [0] * max_n, [0] * max_n, 0, 0
    for candidate, references in zip(candidate_corpus, references_corpus):
        length += len(candidate)
        ref_length += min((abs(len(r) - len(candidate)), len(r)) for r in references)[1]
        for n in range(1, max_n + 1):
            grams = Counter(tuple(candidate[i:i + n]) for i in range(len(candidate) - n + 1))
            best = Counter()
            for r in references:
                best |= Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
            matches[n - 1] += sum(min(c, best[g]) for g, c in grams.items())
            totals[n - 1] += max(len(candidate) - n + 1, 0)
    if min(matches) == 0:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals)) / max_n
    return math.exp(min(0.0, 1 - ref_length / length) + log_precision)
"""

# spacy's tokenizers (spacy and its models are not installed): words and a final full stop
SPACY = r"""
import re
import types


class Language:
    def __call__(self, text):
        return [types.SimpleNamespace(text=t) for t in re.findall(r"[^\s.]+|\.", text)]

    @property
    def tokenizer(self):
        return self


def load(name):
    return Language()
"""


def text_stand_ins(lib, monkeypatch) -> None:
    """``<lib>text`` (``datasets``, ``data``, ``data.metrics``) and ``spacy`` in ``sys.modules``."""
    base = module_of_text(f"{lib.__name__}text._base", TORCHTEXT, lib)
    name = f"{lib.__name__}text"
    parts = {part: types.ModuleType(f"{name}.{part}") for part in ("datasets", "data", "data.metrics")}  # fmt: skip
    parts["datasets"].Multi30k = base.Multi30k
    parts["data"].Field, parts["data"].BucketIterator = base.Field, base.BucketIterator
    parts["data.metrics"].bleu_score = base.bleu_score
    parts["data"].metrics = parts["data.metrics"]
    top = types.ModuleType(name)
    top.datasets, top.data = parts["datasets"], parts["data"]
    for made in top, *parts.values(), module_of_text("spacy", SPACY, lib):
        monkeypatch.setitem(sys.modules, made.__name__, made)


def seq2seq_run(script: str, utils: str, tmp_path, monkeypatch):
    """The translation script under both libraries (with their torchtext and spacy): what
    each printed, its globals and its training losses."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    runs = []
    for lib in torch, tricycle:
        text_stand_ins(lib, monkeypatch)
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
        printed, space, made = run(script, lib, tmp_path / lib.__name__, monkeypatch, 16, {"utils": utils})  # fmt: skip
        losses = [value for tag, value, _ in made[f"{lib.__name__}.utils.tensorboard"].SCALARS]
        runs.append((printed, space, losses))
    (theirs, their, their_losses), (ours, our, our_losses) = runs
    # the same lines, the translations aside (each library's weights start elsewhere)
    assert re.sub(r"\[.*\]", "[...]", ours) == re.sub(r"\[.*\]", "[...]", theirs)
    assert theirs.count("=> Saving checkpoint") == 4 and "Bleu score" in theirs
    for losses in their_losses, our_losses:  # both learn the table
        assert len(losses) == 12 and np.mean(losses[-3:]) < 0.9 * np.mean(losses[:3]), losses
    for space in their, our:  # the checkpoint of the last epoch reads back as the model's
        lib = space["torch" if space is their else "tricycle"]
        state = lib.load(tmp_path / lib.__name__ / "my_checkpoint.pth.tar")
        assert set(state) == {"state_dict", "optimizer"}
        assert set(state["state_dict"]) == set(space["model"].state_dict())
    # given torch's weights: the outputs of a batch with teacher forcing, the loss and the
    # gradients (dropout off: eval)
    src = their["german"].process([ex.src for ex in their["train_data"][:3]]).numpy()
    trg = their["english"].process([ex.trg for ex in their["train_data"][:3]]).numpy()
    for space in their, our:
        space["model"].eval()

    def step(lib, m):
        output = m(lib.tensor(src), lib.tensor(trg), teacher_force_ratio=1.0)
        loss = lib.nn.CrossEntropyLoss(ignore_index=1)(output[1:].reshape(-1, output.shape[2]), lib.tensor(trg[1:].reshape(-1)))  # fmt: skip
        return loss, output

    same_numbers(their["model"], our["model"], step)
    return runs


def test_seq2seq(tmp_path, monkeypatch):
    seq2seq_run(SEQ2SEQ, SEQ2SEQ_UTILS, tmp_path, monkeypatch)


def test_seq2seq_attention(tmp_path, monkeypatch):
    utils = SEQ2SEQ_UTILS.replace(SEQ2SEQ_UTILS[SEQ2SEQ_UTILS.index("def translate_sentence"):SEQ2SEQ_UTILS.index("def bleu")], SEQ2SEQ_ATTENTION_TRANSLATE.lstrip() + "\n\n")  # fmt: skip
    seq2seq_run(SEQ2SEQ_ATTENTION, utils, tmp_path, monkeypatch)


# more_advanced/transformer_from_scratch/transformer_from_scratch.py
TRANSFORMER = r'''
"""
A from scratch implementation of Transformer network,
following the paper Attention is all you need with a
few minor differences. I tried to make it as clear as
possible to understand and also went through the code
on my youtube channel!


"""

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super(SelfAttention, self).__init__()
        self.embed_size = embed_size
        self.heads = heads
        self.head_dim = embed_size // heads

        assert (
            self.head_dim * heads == embed_size
        ), "Embedding size needs to be divisible by heads"

        self.values = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.keys = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.queries = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.fc_out = nn.Linear(heads * self.head_dim, embed_size)

    def forward(self, values, keys, query, mask):
        # Get number of training examples
        N = query.shape[0]

        value_len, key_len, query_len = values.shape[1], keys.shape[1], query.shape[1]

        # Split the embedding into self.heads different pieces
        values = values.reshape(N, value_len, self.heads, self.head_dim)
        keys = keys.reshape(N, key_len, self.heads, self.head_dim)
        query = query.reshape(N, query_len, self.heads, self.head_dim)

        values = self.values(values)  # (N, value_len, heads, head_dim)
        keys = self.keys(keys)  # (N, key_len, heads, head_dim)
        queries = self.queries(query)  # (N, query_len, heads, heads_dim)

        # Einsum does matrix mult. for query*keys for each training example
        # with every other training example, don't be confused by einsum
        # it's just how I like doing matrix multiplication & bmm

        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        # queries shape: (N, query_len, heads, heads_dim),
        # keys shape: (N, key_len, heads, heads_dim)
        # energy: (N, heads, query_len, key_len)

        # Mask padded indices so their weights become 0
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))

        # Normalize energy values similarly to seq2seq + attention
        # so that they sum to 1. Also divide by scaling factor for
        # better stability
        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)
        # attention shape: (N, heads, query_len, key_len)

        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(
            N, query_len, self.heads * self.head_dim
        )
        # attention shape: (N, heads, query_len, key_len)
        # values shape: (N, value_len, heads, heads_dim)
        # out after matrix multiply: (N, query_len, heads, head_dim), then
        # we reshape and flatten the last two dimensions.

        out = self.fc_out(out)
        # Linear layer doesn't modify the shape, final shape will be
        # (N, query_len, embed_size)

        return out


class TransformerBlock(nn.Module):
    def __init__(self, embed_size, heads, dropout, forward_expansion):
        super(TransformerBlock, self).__init__()
        self.attention = SelfAttention(embed_size, heads)
        self.norm1 = nn.LayerNorm(embed_size)
        self.norm2 = nn.LayerNorm(embed_size)

        self.feed_forward = nn.Sequential(
            nn.Linear(embed_size, forward_expansion * embed_size),
            nn.ReLU(),
            nn.Linear(forward_expansion * embed_size, embed_size),
        )

        self.dropout = nn.Dropout(dropout)

    def forward(self, value, key, query, mask):
        attention = self.attention(value, key, query, mask)

        # Add skip connection, run through normalization and finally dropout
        x = self.dropout(self.norm1(attention + query))
        forward = self.feed_forward(x)
        out = self.dropout(self.norm2(forward + x))
        return out


class Encoder(nn.Module):
    def __init__(self,src_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device, max_length,):

        super(Encoder, self).__init__()
        self.embed_size = embed_size
        self.device = device
        self.word_embedding = nn.Embedding(src_vocab_size, embed_size)
        self.position_embedding = nn.Embedding(max_length, embed_size)

        self.layers = nn.ModuleList(
            [TransformerBlock(embed_size, heads, dropout=dropout, forward_expansion=forward_expansion,) 
             for _ in range(num_layers)])

        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask):
        N, seq_length = x.shape
        positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
        out = self.dropout((self.word_embedding(x) + self.position_embedding(positions)))

        # In the Encoder the query, key, value are all the same, it's in the
        # decoder this will change. This might look a bit odd in this case.
        for layer in self.layers:
            out = layer(out, out, out, mask)

        return out


class DecoderBlock(nn.Module):
    def __init__(self, embed_size, heads, forward_expansion, dropout, device):
        super(DecoderBlock, self).__init__()
        self.norm = nn.LayerNorm(embed_size)
        self.attention = SelfAttention(embed_size, heads=heads)
        self.transformer_block = TransformerBlock(
            embed_size, heads, dropout, forward_expansion
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, value, key, src_mask, trg_mask):
        attention = self.attention(x, x, x, trg_mask)
        query = self.dropout(self.norm(attention + x))
        out = self.transformer_block(value, key, query, src_mask)
        return out


class Decoder(nn.Module):
    def __init__(self, trg_vocab_size, embed_size, num_layers, heads, forward_expansion,dropout, device, max_length,):
        super(Decoder, self).__init__()
        self.device = device
        self.word_embedding = nn.Embedding(trg_vocab_size, embed_size)
        self.position_embedding = nn.Embedding(max_length, embed_size)

        self.layers = nn.ModuleList(
            [DecoderBlock(embed_size, heads, forward_expansion, dropout, device)
                for _ in range(num_layers)])
        self.fc_out = nn.Linear(embed_size, trg_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, enc_out, src_mask, trg_mask):
        N, seq_length = x.shape
        positions = torch.arange(0, seq_length).expand(N, seq_length).to(self.device)
        x = self.dropout((self.word_embedding(x) + self.position_embedding(positions)))

        for layer in self.layers:
            x = layer(x, enc_out, enc_out, src_mask, trg_mask)

        out = self.fc_out(x)

        return out


class Transformer(nn.Module):
    def __init__(
        self,
        src_vocab_size,
        trg_vocab_size,
        src_pad_idx,
        trg_pad_idx,
        embed_size=512,
        num_layers=6,
        forward_expansion=4,
        heads=8,
        dropout=0,
        device="cpu",
        max_length=100,
    ):

        super(Transformer, self).__init__()
        self.encoder = Encoder(src_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device, max_length,)
        self.decoder = Decoder(trg_vocab_size, embed_size, num_layers, heads, forward_expansion, dropout, device, max_length,)

        self.src_pad_idx = src_pad_idx
        self.trg_pad_idx = trg_pad_idx
        self.device = device

    def make_src_mask(self, src):
        src_mask = (src != self.src_pad_idx).unsqueeze(1).unsqueeze(2)
        # (N, 1, 1, src_len)
        return src_mask.to(self.device)

    def make_trg_mask(self, trg):
        N, trg_len = trg.shape
        trg_mask = torch.tril(torch.ones((trg_len, trg_len))).expand(N, 1, trg_len, trg_len)
        return trg_mask.to(self.device)

    def forward(self, src, trg):
        src_mask = self.make_src_mask(src)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.encoder(src, src_mask)
        out = self.decoder(trg, enc_src, src_mask, trg_mask)
        return out


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(device)

    x = torch.tensor([[1, 5, 6, 4, 3, 9, 5, 2, 0],[1, 8, 7, 3, 4, 5, 6, 7, 2]]).to(device)
    trg = torch.tensor([[1, 7, 4, 3, 5, 9, 2, 0], [1, 5, 6, 2, 4, 7, 6, 2]]).to(device)

    src_pad_idx = 0
    trg_pad_idx = 0
    src_vocab_size = 10
    trg_vocab_size = 10
    
    model = Transformer(src_vocab_size, trg_vocab_size, src_pad_idx, trg_pad_idx, embed_size=32, num_layers=2, heads=4, device=device).to(device)  # port: embed_size=512, num_layers=6, heads=8 (the defaults): a shared CPU
    
    out = model(x, trg[:, :-1])
    print(out.shape)
'''


def test_transformer_from_scratch(tmp_path, monkeypatch):
    (theirs, their, _), (ours, our, _) = both(TRANSFORMER, tmp_path, monkeypatch)
    assert theirs.split("\n")[0] == ours.split("\n")[0] == "cpu"
    assert shapes(ours) == shapes(theirs) == [(2, 7, 10)]
    # given torch's weights: the logits (the padding and causal masks, the einsums), a
    # next-token loss and the gradients
    x, trg = (host(their[name]) for name in ("x", "trg"))

    def step(lib, m):
        out = m(lib.tensor(x), lib.tensor(trg[:, :-1]))
        return lib.nn.CrossEntropyLoss()(out.reshape(-1, 10), lib.tensor(trg[:, 1:].reshape(-1))), out  # fmt: skip

    same_numbers(their["model"], our["model"], step)
    # a few steps of the copy task learn it, in both
    for space in their, our:
        lib = space["torch" if space is their else "tricycle"]
        model = space["model"]
        optimizer = lib.optim.Adam(model.parameters(), lr=3e-3)
        losses = []
        for _ in range(8):
            loss, _ = step(lib, model)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert losses[-1] < 0.5 * losses[0], losses


# more_advanced/VAE/model.py
VAE_MODEL = r"""
import torch
from torch import nn


class VariationalAutoEncoder(nn.Module):
    def __init__(self, input_dim, h_dim=200, z_dim=20):
        super().__init__()
        # encoder
        self.img_2hid = nn.Linear(input_dim, h_dim)
        self.hid_2mu = nn.Linear(h_dim, z_dim)
        self.hid_2sigma = nn.Linear(h_dim, z_dim)

        # decoder
        self.z_2hid = nn.Linear(z_dim, h_dim)
        self.hid_2img = nn.Linear(h_dim, input_dim)

        self.relu = nn.ReLU()

    def encode(self, x):
        h = self.relu(self.img_2hid(x))
        mu, sigma = self.hid_2mu(h), self.hid_2sigma(h)
        return mu, sigma

    def decode(self, z):
        h = self.relu(self.z_2hid(z))
        return torch.sigmoid(self.hid_2img(h))

    def forward(self, x):
        mu, sigma = self.encode(x)
        epsilon = torch.randn_like(sigma)
        z_new = mu + sigma*epsilon
        x_reconstructed = self.decode(z_new)
        return x_reconstructed, mu, sigma


if __name__ == "__main__":
    x = torch.randn(4, 28*28)
    vae = VariationalAutoEncoder(input_dim=784)
    x_reconstructed, mu, sigma = vae(x)
    print(x_reconstructed.shape)
    print(mu.shape)
    print(sigma.shape)
"""

# more_advanced/VAE/train.py (the version with its training loop)
VAE_TRAIN = r'''
import torch
import torchvision.datasets as datasets  # Standard datasets
from tqdm import tqdm
from torch import nn, optim
from model import VariationalAutoEncoder
from torchvision import transforms
from torchvision.utils import save_image
from torch.utils.data import DataLoader

# Configuration
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
INPUT_DIM = 784
H_DIM = 200
Z_DIM = 20
NUM_EPOCHS = 3  # port: 10: a shared CPU
BATCH_SIZE = 32
LR_RATE = 3e-4  # Karpathy constant

# Dataset Loading
dataset = datasets.MNIST(root="dataset/", train=True, transform=transforms.ToTensor(), download=True)
train_loader = DataLoader(dataset=dataset, batch_size=BATCH_SIZE, shuffle=True)
model = VariationalAutoEncoder(INPUT_DIM, H_DIM, Z_DIM).to(DEVICE)
optimizer = optim.Adam(model.parameters(), lr=LR_RATE)
loss_fn = nn.BCELoss(reduction="sum")

# Start Training
for epoch in range(NUM_EPOCHS):
    loop = tqdm(enumerate(train_loader))
    for i, (x, _) in loop:
        # Forward pass
        x = x.to(DEVICE).view(x.shape[0], INPUT_DIM)
        x_reconstructed, mu, sigma = model(x)

        # Compute loss
        reconstruction_loss = loss_fn(x_reconstructed, x)
        kl_div = -torch.sum(1 + torch.log(sigma.pow(2)) - mu.pow(2) - sigma.pow(2))

        # Backprop
        loss = reconstruction_loss + kl_div
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loop.set_postfix(loss=loss.item())


model = model.to("cpu")
def inference(digit, num_examples=1):
    """
    Generates (num_examples) of a particular digit.
    Specifically we extract an example of each digit,
    then after we have the mu, sigma representation for
    each digit we can sample from that.

    After we sample we can run the decoder part of the VAE
    and generate examples.
    """
    images = []
    idx = 0
    for x, y in dataset:
        if y == idx:
            images.append(x)
            idx += 1
        if idx == 10:
            break

    encodings_digit = []
    for d in range(10):
        with torch.no_grad():
            mu, sigma = model.encode(images[d].view(1, 784))
        encodings_digit.append((mu, sigma))

    mu, sigma = encodings_digit[digit]
    for example in range(num_examples):
        epsilon = torch.randn_like(sigma)
        z = mu + sigma * epsilon
        out = model.decode(z)
        out = out.view(-1, 1, 28, 28)
        save_image(out, f"generated_{digit}_ex{example}.png")

for idx in range(10):
    inference(idx, num_examples=5)
'''


def test_vae(tmp_path, monkeypatch):
    (theirs, _, _), (ours, _, _) = both(VAE_MODEL, tmp_path / "model", monkeypatch)
    assert shapes(ours) == shapes(theirs) == [(4, 784), (4, 20), (4, 20)]
    runs = both(VAE_TRAIN, tmp_path / "train", monkeypatch, n_train=96, modules={"model": VAE_MODEL})  # fmt: skip
    (_, their, their_modules), (_, our, our_modules) = runs
    for made in their_modules, our_modules:  # the loss of each batch, three a epoch: it falls
        losses = [p["loss"] for p in made["tqdm"].POSTFIXES]
        assert len(losses) == 9 and np.mean(losses[-3:]) < 0.97 * np.mean(losses[:3]), losses
    # given torch's weights: the encoding, the reparametrised decoding of a fixed noise, the
    # script's loss and the gradients
    x = digits(8)[0].reshape(8, 784).astype(np.float32) / 255
    eps = np.random.default_rng(0).normal(size=(8, 20)).astype(np.float32)

    def step(lib, m):
        mu, sigma = m.encode(lib.tensor(x))
        out = m.decode(mu + sigma * lib.tensor(eps))
        kl_div = -lib.sum(1 + lib.log(sigma.pow(2)) - mu.pow(2) - sigma.pow(2))
        return lib.nn.BCELoss(reduction="sum")(out, lib.tensor(x)) + kl_div, out, mu, sigma

    same_numbers(their["model"], our["model"], step, rtol=1e-4, atol=1e-4)


# image_segmentation/semantic_segmentation_unet/model.py
UNET_MODEL = r"""
import torch
import torch.nn as nn
import torchvision.transforms.functional as TF

class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(DoubleConv, self).__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, 1, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.conv(x)

class UNET(nn.Module):
    def __init__(
            self, in_channels=3, out_channels=1, features=[64, 128, 256, 512],
    ):
        super(UNET, self).__init__()
        self.ups = nn.ModuleList()
        self.downs = nn.ModuleList()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

        # Down part of UNET
        for feature in features:
            self.downs.append(DoubleConv(in_channels, feature))
            in_channels = feature

        # Up part of UNET
        for feature in reversed(features):
            self.ups.append(
                nn.ConvTranspose2d(
                    feature*2, feature, kernel_size=2, stride=2,
                )
            )
            self.ups.append(DoubleConv(feature*2, feature))

        self.bottleneck = DoubleConv(features[-1], features[-1]*2)
        self.final_conv = nn.Conv2d(features[0], out_channels, kernel_size=1)

    def forward(self, x):
        skip_connections = []

        for down in self.downs:
            x = down(x)
            skip_connections.append(x)
            x = self.pool(x)

        x = self.bottleneck(x)
        skip_connections = skip_connections[::-1]

        for idx in range(0, len(self.ups), 2):
            x = self.ups[idx](x)
            skip_connection = skip_connections[idx//2]

            if x.shape != skip_connection.shape:
                x = TF.resize(x, size=skip_connection.shape[2:])

            concat_skip = torch.cat((skip_connection, x), dim=1)
            x = self.ups[idx+1](concat_skip)

        return self.final_conv(x)

def test():
    x = torch.randn((3, 1, 33, 33))  # port: (3, 1, 161, 161): a shared CPU (33 keeps the odd size's resize)
    model = UNET(in_channels=1, out_channels=1, features=[4, 8])  # port: the default features [64, 128, 256, 512]: a shared CPU
    preds = model(x)
    assert preds.shape == x.shape

if __name__ == "__main__":
    test()
"""

# image_segmentation/semantic_segmentation_unet/utils.py
UNET_UTILS = r"""
import torch
import torchvision
from dataset import CarvanaDataset
from torch.utils.data import DataLoader

def save_checkpoint(state, filename="my_checkpoint.pth.tar"):
    print("=> Saving checkpoint")
    torch.save(state, filename)

def load_checkpoint(checkpoint, model):
    print("=> Loading checkpoint")
    model.load_state_dict(checkpoint["state_dict"])

def get_loaders(
    train_dir,
    train_maskdir,
    val_dir,
    val_maskdir,
    batch_size,
    train_transform,
    val_transform,
    num_workers=4,
    pin_memory=True,
):
    train_ds = CarvanaDataset(
        image_dir=train_dir,
        mask_dir=train_maskdir,
        transform=train_transform,
    )

    train_loader = DataLoader(
        train_ds,
        batch_size=batch_size,
        num_workers=num_workers,
        pin_memory=pin_memory,
        shuffle=True,
    )

    val_ds = CarvanaDataset(
        image_dir=val_dir,
        mask_dir=val_maskdir,
        transform=val_transform,
    )

    val_loader = DataLoader(
        val_ds,
        batch_size=batch_size,
        num_workers=num_workers,
        pin_memory=pin_memory,
        shuffle=False,
    )

    return train_loader, val_loader

def check_accuracy(loader, model, device="cuda"):
    num_correct = 0
    num_pixels = 0
    dice_score = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device)
            y = y.to(device).unsqueeze(1)
            preds = torch.sigmoid(model(x))
            preds = (preds > 0.5).float()
            num_correct += (preds == y).sum()
            num_pixels += torch.numel(preds)
            dice_score += (2 * (preds * y).sum()) / (
                (preds + y).sum() + 1e-8
            )

    print(
        f"Got {num_correct}/{num_pixels} with acc {num_correct/num_pixels*100:.2f}"
    )
    print(f"Dice score: {dice_score/len(loader)}")
    model.train()

def save_predictions_as_imgs(
    loader, model, folder="saved_images/", device="cuda"
):
    model.eval()
    for idx, (x, y) in enumerate(loader):
        x = x.to(device=device)
        with torch.no_grad():
            preds = torch.sigmoid(model(x))
            preds = (preds > 0.5).float()
        torchvision.utils.save_image(
            preds, f"{folder}/pred_{idx}.png"
        )
        torchvision.utils.save_image(y.unsqueeze(1), f"{folder}{idx}.png")

    model.train()
"""

# image_segmentation/semantic_segmentation_unet/train.py
UNET_TRAIN = r"""
import torch
import albumentations as A
from albumentations.pytorch import ToTensorV2
from tqdm import tqdm
import torch.nn as nn
import torch.optim as optim
from model import UNET
from utils import (
    load_checkpoint,
    save_checkpoint,
    get_loaders,
    check_accuracy,
    save_predictions_as_imgs,
)

# Hyperparameters etc.
LEARNING_RATE = 1e-2  # port: 1e-4: a few steps on small images
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BATCH_SIZE = 4  # port: 16: the stand-in's 8 images
NUM_EPOCHS = 3
NUM_WORKERS = 0  # port: 2: no worker processes on a shared CPU
IMAGE_HEIGHT = 16  # port: 160 (1280 originally): a shared CPU
IMAGE_WIDTH = 16  # port: 240 (1918 originally): a shared CPU
PIN_MEMORY = True
LOAD_MODEL = False
TRAIN_IMG_DIR = "data/train_images/"
TRAIN_MASK_DIR = "data/train_masks/"
VAL_IMG_DIR = "data/val_images/"
VAL_MASK_DIR = "data/val_masks/"

def train_fn(loader, model, optimizer, loss_fn, scaler):
    loop = tqdm(loader)

    for batch_idx, (data, targets) in enumerate(loop):
        data = data.to(device=DEVICE)
        targets = targets.float().unsqueeze(1).to(device=DEVICE)

        # forward
        with torch.cuda.amp.autocast():
            predictions = model(data)
            loss = loss_fn(predictions, targets)

        # backward
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

        # update tqdm loop
        loop.set_postfix(loss=loss.item())


def main():
    train_transform = A.Compose(
        [
            A.Resize(height=IMAGE_HEIGHT, width=IMAGE_WIDTH),
            A.Rotate(limit=35, p=1.0),
            A.HorizontalFlip(p=0.5),
            A.VerticalFlip(p=0.1),
            A.Normalize(
                mean=[0.0, 0.0, 0.0],
                std=[1.0, 1.0, 1.0],
                max_pixel_value=255.0,
            ),
            ToTensorV2(),
        ],
    )

    val_transforms = A.Compose(
        [
            A.Resize(height=IMAGE_HEIGHT, width=IMAGE_WIDTH),
            A.Normalize(
                mean=[0.0, 0.0, 0.0],
                std=[1.0, 1.0, 1.0],
                max_pixel_value=255.0,
            ),
            ToTensorV2(),
        ],
    )

    model = UNET(in_channels=3, out_channels=1, features=[4, 8]).to(DEVICE)  # port: the default features [64, 128, 256, 512]: a shared CPU
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)

    train_loader, val_loader = get_loaders(
        TRAIN_IMG_DIR,
        TRAIN_MASK_DIR,
        VAL_IMG_DIR,
        VAL_MASK_DIR,
        BATCH_SIZE,
        train_transform,
        val_transforms,
        NUM_WORKERS,
        PIN_MEMORY,
    )

    if LOAD_MODEL:
        load_checkpoint(torch.load("my_checkpoint.pth.tar"), model)


    check_accuracy(val_loader, model, device=DEVICE)
    scaler = torch.cuda.amp.GradScaler()

    for epoch in range(NUM_EPOCHS):
        train_fn(train_loader, model, optimizer, loss_fn, scaler)

        # save model
        checkpoint = {
            "state_dict": model.state_dict(),
            "optimizer":optimizer.state_dict(),
        }
        save_checkpoint(checkpoint)

        # check accuracy
        check_accuracy(val_loader, model, device=DEVICE)

        # print some examples to a folder
        save_predictions_as_imgs(
            val_loader, model, folder="saved_images/", device=DEVICE
        )


if __name__ == "__main__":
    main()
"""

# the Carvana images and masks (a download) as 8 synthetic 16x16 cars: a bright disc on a dark
# noisy ground, its mask the disc; albumentations (not installed) only named: the images
# come as tensors already
CARVANA = r"""
import numpy as np
import torch


class CarvanaDataset(torch.utils.data.Dataset):
    def __init__(self, image_dir, mask_dir, transform=None):
        rng = np.random.default_rng(len(image_dir))
        rows, cols = np.mgrid[:16, :16]
        centres, radii = rng.uniform(5, 11, size=(8, 2)), rng.uniform(3, 5, size=8)
        self.masks = np.stack([((rows - r) ** 2 + (cols - c) ** 2 <= s * s) for (r, c), s in zip(centres, radii)]).astype(np.float32)
        self.images = (self.masks[:, None] * 0.6 + rng.uniform(0, 0.4, size=(8, 3, 16, 16))).astype(np.float32)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        return torch.tensor(self.images[index]), torch.tensor(self.masks[index])
"""

ALBUMENTATIONS = r"""
def _named(*args, **kwargs):
    return None


Compose = Resize = Rotate = HorizontalFlip = VerticalFlip = Normalize = ToTensorV2 = _named
"""

# torchvision.transforms.functional.resize of a tensor (N, C, H, W): bilinear, as torchvision's
RESIZE = r"""
import torch


def resize(img, size):
    return torch.nn.functional.interpolate(img, size=list(size), mode="bilinear", align_corners=False)
"""


def test_unet_and_train_step(tmp_path, monkeypatch):
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # torchvision.transforms.functional, albumentations
        name = f"{lib.__name__}vision.transforms.functional"
        monkeypatch.setitem(sys.modules, name, module_of_text(name, RESIZE, lib))
    for name in "albumentations", "albumentations.pytorch":
        monkeypatch.setitem(
            sys.modules, name, module_of_text(name, ALBUMENTATIONS, torch, __path__=[])
        )
    test_run = UNET_MODEL.replace('if __name__ == "__main__":\n    test()', "test()")
    (theirs, their, _), (ours, our, _) = both(test_run, tmp_path / "test", monkeypatch)
    assert theirs == ours == ""  # its assert holds: the 32x32 upsampled back to the skip's 33x33
    modules = {"dataset": CARVANA, "model": UNET_MODEL, "utils": UNET_UTILS}
    runs = both(UNET_TRAIN, tmp_path / "train", monkeypatch, modules=modules)
    (theirs, their, their_modules), (ours, our, our_modules) = runs
    # the same lines, a 0-d tensor in an f-string without a spec aside (torch's prints its
    # number, tricycle's its repr: documented)
    assert [re.sub(r"<tensor of #>", "#", line) for line in kinds(ours)] == kinds(theirs)
    for printed, made in (theirs, their_modules), (ours, our_modules):
        losses = [p["loss"] for p in made["tqdm"].POSTFIXES]
        assert len(losses) == 6 and np.mean(losses[-2:]) < np.mean(losses[:2]), losses
        accuracies = numbers(r"with acc ([\d.]+)", printed)
        assert len(accuracies) == 4 and all(0 <= a <= 100 for a in accuracies), accuracies
    # given torch's weights (a fresh UNET): the odd-sized image through the resize, the
    # logits, the loss and the gradients (BatchNorm2d in training mode)
    for space, made in (their, their_modules), (our, our_modules):
        lib = space["torch" if space is their else "tricycle"]
        lib.manual_seed(0)
        space["unet"] = made["model"].UNET(in_channels=3, out_channels=1, features=[4, 8])
    x = np.random.default_rng(0).uniform(size=(2, 3, 17, 17)).astype(np.float32)
    y = (x[:, :1] > 0.5).astype(np.float32)
    same_numbers(their["unet"], our["unet"], lambda lib, m: (lib.nn.BCEWithLogitsLoss()(m(lib.tensor(x)), lib.tensor(y)), m(lib.tensor(x))))  # fmt: skip


# more_advanced/image_captioning/model.py
CAPTIONING_MODEL = r"""
import torch
import torch.nn as nn
import statistics
import torchvision.models as models

class EncoderCNN(nn.Module):
    def __init__(self, embed_size, train_CNN=False):
        super(EncoderCNN, self).__init__()
        self.train_CNN = train_CNN
        self.inception = models.inception_v3(pretrained=True, aux_logits=False)
        self.inception.fc = nn.Linear(self.inception.fc.in_features, embed_size)
        self.relu = nn.ReLU()
        self.times = []
        self.dropout = nn.Dropout(0.5)

    def forward(self, images):
        features = self.inception(images)
        return self.dropout(self.relu(features))


class DecoderRNN(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab_size, num_layers):
        super(DecoderRNN, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.dropout = nn.Dropout(0.5)

    def forward(self, features, captions):
        embeddings = self.dropout(self.embed(captions))
        embeddings = torch.cat((features.unsqueeze(0), embeddings), dim=0)
        hiddens, _ = self.lstm(embeddings)
        outputs = self.linear(hiddens)
        return outputs

class CNNtoRNN(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab_size, num_layers):
        super(CNNtoRNN, self).__init__()
        self.encoderCNN = EncoderCNN(embed_size)
        self.decoderRNN = DecoderRNN(embed_size, hidden_size, vocab_size, num_layers)

    def forward(self, images, captions):
        features = self.encoderCNN(images)
        outputs = self.decoderRNN(features, captions)
        return outputs

    def caption_image(self, image, vocabulary, max_length=50):
        result_caption = []

        with torch.no_grad():
            x = self.encoderCNN(image).unsqueeze(0)
            states = None

            for _ in range(max_length):
                hiddens, states = self.decoderRNN.lstm(x, states)
                output = self.decoderRNN.linear(hiddens.squeeze(0))
                predicted = output.argmax(1)
                result_caption.append(predicted.item())
                x = self.decoderRNN.embed(predicted).unsqueeze(0)

                if vocabulary.itos[predicted.item()] == "<EOS>":
                    break

        return [vocabulary.itos[idx] for idx in result_caption]
"""

# more_advanced/image_captioning/get_loader.py
CAPTIONING_LOADER = r"""
import os # when loading file paths
import pandas as pd # for lookup in annotation file
import spacy # for tokenizer
import torch
from torch.nn.utils.rnn import pad_sequence # pad batch
from torch.utils.data import DataLoader, Dataset
from PIL import Image # Load img
import torchvision.transforms as transforms


# We want to convert text -> numerical values
# 1. We need a Vocabulary mapping each word to a index
# 2. We need to setup a Pytorch dataset to load the data
# 3. Setup padding of every batch (all examples should be
#    of same seq_len and setup dataloader)
# Note that loading the image is very easy compared to the text!

# Download with: python -m spacy download en
spacy_eng = spacy.load("en")


class Vocabulary:
    def __init__(self, freq_threshold):
        self.itos = {0:"<PAD>", 1:"<SOS>", 2:"<EOS>", 3:"<UNK>"}
        self.stoi = {"<PAD>":0, "<SOS>":1, "<EOS>":2, "<UNK>":3}
        self.freq_threshold = freq_threshold

    def __len__(self):
        return len(self.itos)

    @staticmethod
    def tokenizer_eng(text):
        return [tok.text.lower() for tok in spacy_eng.tokenizer(text)]

    def build_vocabulary(self, sentence_list):
        frequencies = {}
        idx = 4

        for sentence in sentence_list:
            for word in self.tokenizer_eng(sentence):
                if word not in frequencies:
                    frequencies[word] = 1

                else:
                    frequencies[word] += 1

                if frequencies[word] == self.freq_threshold:
                    self.stoi[word] = idx
                    self.itos[idx] = word
                    idx += 1

    def numericalize(self, text):
        tokenized_text = self.tokenizer_eng(text)

        return [
            self.stoi[token] if token in self.stoi else self.stoi["<UNK>"]
            for token in tokenized_text
        ]


class FlickrDataset(Dataset):
    def __init__(self, root_dir, captions_file, transform=None, freq_threshold=5):
        self.root_dir = root_dir
        self.df = pd.read_csv(captions_file)
        self.transform = transform

        # Get img, caption columns
        self.imgs = self.df["image"]
        self.captions = self.df["caption"]

        # Initialize vocabulary and build vocab
        self.vocab = Vocabulary(freq_threshold)
        self.vocab.build_vocabulary(self.captions.tolist())

    def __len__(self):
        return len(self.df)

    def __getitem__(self, index):
        caption = self.captions[index]
        img_id = self.imgs[index]
        img = Image.open(os.path.join(self.root_dir, img_id)).convert("RGB")

        if self.transform is not None:
            img = self.transform(img)

        numericalized_caption = [self.vocab.stoi["<SOS>"]]
        numericalized_caption += self.vocab.numericalize(caption)
        numericalized_caption.append(self.vocab.stoi["<EOS>"])

        return img, torch.tensor(numericalized_caption)

class MyCollate:
    def __init__(self, pad_idx):
        self.pad_idx = pad_idx

    def __call__(self, batch):
        imgs = [item[0].unsqueeze(0) for item in batch]
        imgs = torch.cat(imgs, dim=0)
        targets = [item[1] for item in batch]
        targets = pad_sequence(targets, batch_first=False, padding_value=self.pad_idx)

        return imgs, targets

def get_loader(
        root_folder,
        annotation_file,
        transform,
        batch_size=32,
        num_workers=8,
        shuffle=True,
        pin_memory=True,
):
    dataset = FlickrDataset(root_folder, annotation_file, transform=transform)

    pad_idx = dataset.vocab.stoi["<PAD>"]

    loader = DataLoader(
        dataset=dataset,
        batch_size=batch_size,
        num_workers=num_workers,
        shuffle=shuffle,
        pin_memory=pin_memory,
        collate_fn=MyCollate(pad_idx=pad_idx),
    )

    return loader, dataset
"""

# more_advanced/image_captioning/train.py
CAPTIONING_TRAIN = r"""
import torch
from tqdm import tqdm
import torch.nn as nn
import torch.optim as optim
import torchvision.transforms as transforms
from torch.utils.tensorboard import SummaryWriter
from utils import save_checkpoint, load_checkpoint, print_examples
from get_loader import get_loader
from model import CNNtoRNN

def train():
    transform = transforms.Compose(
        [
            transforms.Resize((20, 20)),  # port: (356, 356): a shared CPU
            transforms.RandomCrop((16, 16)),  # port: (299, 299): as above
            transforms.ToTensor(),
            transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
        ]
    )

    train_loader, dataset = get_loader(
        root_folder="flickr8k/images",
        annotation_file="flickr8k/captions.txt",
        transform=transform,
        num_workers = 0,  # port: 2: no worker processes on a shared CPU
    )

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    load_model = False
    save_model = False
    train_CNN = False

    # Hyperparameters
    embed_size = 16  # port: 256: a shared CPU
    hidden_size = 16  # port: 256: a shared CPU
    vocab_size = len(dataset.vocab)
    num_layers = 1
    learning_rate = 1e-2  # port: 3e-4: a few steps on a small set
    num_epochs = 6  # port: 100: a shared CPU

    # for tensorboard
    writer = SummaryWriter("runs/flickr")
    step = 0

    # initialize model, loss etc
    model = CNNtoRNN(embed_size, hidden_size, vocab_size, num_layers).to(device)
    criterion = nn.CrossEntropyLoss(ignore_index=dataset.vocab.stoi["<PAD>"])
    optimizer = optim.Adam(model.parameters(), lr=learning_rate)

    # Only finetune the CNN
    for name, param in model.encoderCNN.inception.named_parameters():
        if "fc.weight" in name or "fc.bias" in name:
            param.requires_grad = True
        else:
            param.requires_grad = train_CNN

    if load_model:
        step = load_checkpoint(torch.load("my_checkpoint.pth.tar"), model, optimizer)

    model.train()

    for epoch in range(num_epochs):
        # Uncomment the line below to see a couple of test cases
        # print_examples(model, device, dataset)

        if save_model:
            checkpoint = {
                "state_dict" : model.state_dict(),
                "optimizer" : optimizer.state_dict(),
                "step":step,
            }
            save_checkpoint(checkpoint)

        for idx, (imgs, captions) in tqdm(enumerate(train_loader),
                                          total=len(train_loader),
                                          leave=False):
            imgs = imgs.to(device)
            captions = captions.to(device)

            outputs = model(imgs, captions[:-1])
            loss = criterion(outputs.reshape(-1, outputs.shape[2]), captions.reshape(-1))

            writer.add_scalar("Training loss", loss.item(), global_step=step)
            step += 1

            optimizer.zero_grad()
            loss.backward(loss)
            optimizer.step()
    return model, dataset  # port: nothing returned: the test checks the trained model


if __name__ == "__main__":
    model, dataset = train()  # port: train(): as above
"""

# pandas' read_csv of the captions file, PIL's Image.open of the test's images (numpy arrays
# saved under the images' names; pandas and the images are not the test's to need), the
# utils' names
CAPTIONING_STAND_INS = r"""
import builtins
import csv
import numpy as np


class Series(list):
    def tolist(self):
        return list(self)


class DataFrame:
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, column):
        return Series(row[column] for row in self.rows)


def read_csv(path):
    with builtins.open(path, newline="") as f:
        return DataFrame(list(csv.DictReader(f)))


class _Image:
    def __init__(self, array):
        self.array = array

    def convert(self, mode):
        assert mode == "RGB"
        return self.array


def open(path):
    return _Image(np.load(path))


def print_examples(model, device, dataset):
    raise AssertionError("not run: its test images are files of the repository")


save_checkpoint = load_checkpoint = print_examples
"""


def test_image_captioning(tmp_path, monkeypatch):
    # 16 images, two kinds: a dog on grass (green) and a child with a red ball (red)
    rng = np.random.default_rng(0)
    rows = ["image,caption"]
    for lib_name in "torch", "tricycle":
        (tmp_path / lib_name / "flickr8k" / "images").mkdir(parents=True)
    for i in range(16):
        image = rng.integers(0, 60, size=(24, 24, 3)).astype(np.uint8)
        image[..., 1 if i % 2 == 0 else 0] += 180
        for lib_name in "torch", "tricycle":
            with open(tmp_path / lib_name / "flickr8k" / "images" / f"{i}.jpg", "wb") as f:
                np.save(f, image)
        rows.append(f"{i}.jpg," + ("A dog runs on the grass." if i % 2 == 0 else "A child plays with a red ball."))  # fmt: skip
    for lib_name in "torch", "tricycle":
        (tmp_path / lib_name / "flickr8k" / "captions.txt").write_text("\n".join(rows) + "\n")
    import torch  # noqa: PLC0415

    stand_in = module_of_text("stand_ins", CAPTIONING_STAND_INS, torch)
    stand_in.Image = stand_in
    for name in "pandas", "PIL", "PIL.Image":
        monkeypatch.setitem(sys.modules, name, stand_in)
    monkeypatch.setitem(sys.modules, "spacy", module_of_text("spacy", SPACY, torch))
    modules = {"utils": CAPTIONING_STAND_INS, "get_loader": CAPTIONING_LOADER, "model": CAPTIONING_MODEL}  # fmt: skip
    runs = both(CAPTIONING_TRAIN, tmp_path, monkeypatch, modules=modules)
    (_, their, their_modules), (_, our, our_modules) = runs
    for space, made in (their, their_modules), (our, our_modules):  # the captions' loss falls
        lib = space["torch" if space is their else "tricycle"]
        losses = [value for _, value, _ in made[f"{lib.__name__}.utils.tensorboard"].SCALARS]
        assert len(losses) == 6 and np.mean(losses[-2:]) < 0.97 * np.mean(losses[:2]), losses
        # only the CNN's new head learns: inception's other weights stay frozen
        frozen = [n for n, p in space["model"].named_parameters() if not p.requires_grad]
        assert len(frozen) == 2 and all(n.startswith("encoderCNN.inception.conv.") for n in frozen)
    assert their["dataset"].vocab.itos == our["dataset"].vocab.itos
    assert len(their["dataset"].vocab) == 16  # the 4 specials and the 12 words seen 5 times
    # given torch's weights (eval: dropout off): the captions' logits, the loss and the
    # gradients; then the greedy caption of an image
    images = np.stack([rng.uniform(-1, 1, size=(3, 16, 16)) for _ in range(2)]).astype(np.float32)
    captions = np.array([[1, 4, 5, 6], [1, 7, 8, 2]]).T  # (seq_len, N)
    for space in their, our:
        space["model"].eval()

    def step(lib, m):
        outputs = m(lib.tensor(images), lib.tensor(captions[:-1]))
        loss = lib.nn.CrossEntropyLoss(ignore_index=0)(outputs.reshape(-1, outputs.shape[2]), lib.tensor(captions.reshape(-1)))  # fmt: skip
        return loss, outputs

    same_numbers(their["model"], our["model"], step)
    vocab = their["dataset"].vocab
    their_caption = their["model"].caption_image(their["torch"].tensor(images[:1]), vocab, max_length=8)  # fmt: skip
    our_caption = our["model"].caption_image(our["tricycle"].tensor(images[:1]), vocab, max_length=8)  # fmt: skip
    assert our_caption == their_caption and 1 <= len(their_caption) <= 8
