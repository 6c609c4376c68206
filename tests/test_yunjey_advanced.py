"""yunjey's pytorch-tutorial, tutorials/03-advanced, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_torch_vision_tutorials.py):

- generative_adversarial_network/main.py: the MLP discriminator and generator in
  ``nn.Sequential`` (``LeakyReLU``, ``Sigmoid``, ``Tanh``), ``BCELoss`` on
  ``torch.ones(batch_size, 1).to(device)`` labels, two Adam optimisers, ``reset_grad``,
  ``denorm``'s ``clamp`` and the saved samples and state dicts;
- variational_autoencoder/main.py: ``reparameterize`` with ``torch.randn_like``,
  ``F.sigmoid``, ``F.binary_cross_entropy(..., size_average=False)`` (torch's deprecated
  keyword), the KL term, sampling under ``no_grad`` and ``torch.cat(..., dim=3)``;
- neural_style_transfer/main.py from its command line (argparse as written): a small random
  CNN in VGG19's layout (the same layer indices, narrow) read through ``vgg._modules.items()``,
  ``content.clone().requires_grad_(True)``, Adam over the image with ``betas=[0.5, 0.999]``,
  the Gram matrices (``view``, ``torch.mm``, ``t()``), the losses summed from ``0``, and the
  denormalised image ``clamp_``ed and saved;
- image_captioning: build_vocab.py (``Vocabulary``, pickled), data_loader.py
  (``CocoDataset``, ``collate_fn`` padding with ``torch.zeros(...).long()`` and
  ``targets[i, :end] = cap[:end]``), model.py (``EncoderCNN`` over a small random ResNet in
  ResNet-152's place, its children but the last in an ``nn.Sequential`` under ``no_grad``,
  ``BatchNorm1d(momentum=0.01)``; ``DecoderRNN`` with ``pack_padded_sequence`` into an
  ``LSTM(batch_first=True)`` and greedy ``sample``), train.py and sample.py, each run from its
  command line as its README says, over captions and images written by the test.

The test's ``torchvision`` (written in torch's words and run in each library's) holds what the
scripts import from it: ``datasets.MNIST`` over digits built here (no download), the
``transforms`` they use, ``utils.save_image`` (a PNG grid) and the two networks, random and
small; ``pycocotools.coco.COCO`` reads the test's annotations, and nltk's ``word_tokenize`` is
a regular expression (nltk is not installed). Each changed line ends in ``# port:`` and says
why. Each script runs under torch (skipped without it), then under tricycle, both on the CPU;
both print the same lines (numbers and sampled words aside) and learn. With torch's weights
(``nn.from_torch``) each model gives torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293, E713

import contextlib
import io
import json
import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_tutorials_u import digits28
from tests.test_torch_vision_tutorials import RESNET, host

pytestmark = [  # torch's, of the tutorials' lines as written (and tricycle's size_average)
    pytest.mark.filterwarnings("ignore:.*size_average and reduce"),
]

# the test's torchvision, in torch's words: what the scripts use of it
VISION = r'''
import os
import numpy as np
import torch
import torch.nn as nn
from PIL import Image


class MNIST(torch.utils.data.Dataset):
    """MNIST's digits as torchvision's dataset gives them (a PIL image, a label), read from
    the test's mnist.npz beside the script: nothing is downloaded."""

    def __init__(self, root, train=True, transform=None, download=False):
        digits = np.load("mnist.npz")
        self.images, self.labels = digits["images"], digits["labels"]
        self.transform = transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = Image.fromarray(self.images[index], mode="L")
        return self.transform(image), int(self.labels[index])


from tests.helpers import Compose  # torchvision's pipeline of transforms: ours, shared


class ToTensor:
    """A PIL image (H, W, C) in 0..255 as a float tensor (C, H, W) in [0, 1]."""

    def __call__(self, image):
        array = np.asarray(image, dtype=np.float32) / 255.0
        array = array[:, :, None] if array.ndim == 2 else array
        return torch.tensor(array.transpose(2, 0, 1).copy())


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        mean = torch.tensor(self.mean, dtype=torch.float32).view(-1, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32).view(-1, 1, 1)
        return (x - mean) / std


class RandomCrop:
    def __init__(self, size):
        self.size = size

    def __call__(self, image):
        left = int(torch.randint(0, image.size[0] - self.size + 1, (1,)).item())
        top = int(torch.randint(0, image.size[1] - self.size + 1, (1,)).item())
        return image.crop((left, top, left + self.size, top + self.size))


class RandomHorizontalFlip:
    def __call__(self, image):
        flip = bool(torch.rand(1).item() < 0.5)
        return image.transpose(Image.FLIP_LEFT_RIGHT) if flip else image


def save_image(tensor, fp):
    """The images side by side in one PNG (torchvision's make_grid, one row, no padding)."""
    array = tensor.detach().cpu().numpy()
    array = array.reshape((-1,) + array.shape[-3:])  # (N, C, H, W)
    row = np.concatenate(list(array), axis=2).transpose(1, 2, 0)  # (H, N * W, C)
    row = np.clip(row * 255 + 0.5, 0, 255).astype(np.uint8)
    Image.fromarray(row[:, :, 0] if row.shape[2] == 1 else row).save(fp)


class VGG(nn.Module):
    """VGG-19's ``features``: its 37 layers in their order (the tutorial picks conv1_1 ...
    conv5_1 by index), narrow: 4 to 16 channels, random weights."""

    def __init__(self):
        super().__init__()
        layers, channels = [], 3
        for width in [4, 4, "M", 8, 8, "M", 16, 16, 16, 16, "M", 16, 16, 16, 16, "M", 16, 16, 16, 16, "M"]:
            if width == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers += [nn.Conv2d(channels, width, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                channels = width
        self.features = nn.Sequential(*layers)


def vgg19(pretrained=False):
    return VGG()
'''

GAN = r"""
import os
import torch
import torchvision
import torch.nn as nn
from torchvision import transforms
from torchvision.utils import save_image


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Hyper-parameters
latent_size = 64
hidden_size = 64  # port: 256: a small network for a few steps
image_size = 784
num_epochs = 4  # port: 200 epochs of MNIST's 600 batches: 4 of 10
batch_size = 50  # port: 100: 500 digits in 10 batches
sample_dir = 'samples'

# Create a directory if not exists
if not os.path.exists(sample_dir):
    os.makedirs(sample_dir)

# Image processing
# transform = transforms.Compose([
#                 transforms.ToTensor(),
#                 transforms.Normalize(mean=(0.5, 0.5, 0.5),   # 3 for RGB channels
#                                      std=(0.5, 0.5, 0.5))])
transform = transforms.Compose([
                transforms.ToTensor(),
                transforms.Normalize(mean=[0.5],   # 1 for greyscale channels
                                     std=[0.5])])

# MNIST dataset
mnist = torchvision.datasets.MNIST(root='../../data/',  # port: the test's torchvision reads its digits (no download)
                                   train=True,
                                   transform=transform,
                                   download=True)

# Data loader
data_loader = torch.utils.data.DataLoader(dataset=mnist,
                                          batch_size=batch_size, 
                                          shuffle=True)

# Discriminator
D = nn.Sequential(
    nn.Linear(image_size, hidden_size),
    nn.LeakyReLU(0.2),
    nn.Linear(hidden_size, hidden_size),
    nn.LeakyReLU(0.2),
    nn.Linear(hidden_size, 1),
    nn.Sigmoid())

# Generator 
G = nn.Sequential(
    nn.Linear(latent_size, hidden_size),
    nn.ReLU(),
    nn.Linear(hidden_size, hidden_size),
    nn.ReLU(),
    nn.Linear(hidden_size, image_size),
    nn.Tanh())

# Device setting
D = D.to(device)
G = G.to(device)

# Binary cross entropy loss and optimizer
criterion = nn.BCELoss()
d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002)
g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002)

def denorm(x):
    out = (x + 1) / 2
    return out.clamp(0, 1)

def reset_grad():
    d_optimizer.zero_grad()
    g_optimizer.zero_grad()

# Start training
total_step = len(data_loader)
for epoch in range(num_epochs):
    for i, (images, _) in enumerate(data_loader):
        images = images.reshape(batch_size, -1).to(device)
        
        # Create the labels which are later used as input for the BCE loss
        real_labels = torch.ones(batch_size, 1).to(device)
        fake_labels = torch.zeros(batch_size, 1).to(device)

        # ================================================================== #
        #                      Train the discriminator                       #
        # ================================================================== #

        # Compute BCE_Loss using real images where BCE_Loss(x, y): - y * log(D(x)) - (1-y) * log(1 - D(x))
        # Second term of the loss is always zero since real_labels == 1
        outputs = D(images)
        d_loss_real = criterion(outputs, real_labels)
        real_score = outputs
        
        # Compute BCELoss using fake images
        # First term of the loss is always zero since fake_labels == 0
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)
        d_loss_fake = criterion(outputs, fake_labels)
        fake_score = outputs
        
        # Backprop and optimize
        d_loss = d_loss_real + d_loss_fake
        reset_grad()
        d_loss.backward()
        d_optimizer.step()
        
        # ================================================================== #
        #                        Train the generator                         #
        # ================================================================== #

        # Compute loss with fake images
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)
        
        # We train G to maximize log(D(G(z)) instead of minimizing log(1-D(G(z)))
        # For the reason, see the last paragraph of section 3. https://arxiv.org/pdf/1406.2661.pdf
        g_loss = criterion(outputs, real_labels)
        
        # Backprop and optimize
        reset_grad()
        g_loss.backward()
        g_optimizer.step()
        
        if (i+1) % 5 == 0:  # port: % 200: 10 batches an epoch
            print('Epoch [{}/{}], Step [{}/{}], d_loss: {:.4f}, g_loss: {:.4f}, D(x): {:.2f}, D(G(z)): {:.2f}' 
                  .format(epoch, num_epochs, i+1, total_step, d_loss.item(), g_loss.item(), 
                          real_score.mean().item(), fake_score.mean().item()))
    
    # Save real images
    if (epoch+1) == 1:
        images = images.reshape(images.size(0), 1, 28, 28)
        save_image(denorm(images), os.path.join(sample_dir, 'real_images.png'))
    
    # Save sampled images
    fake_images = fake_images.reshape(fake_images.size(0), 1, 28, 28)
    save_image(denorm(fake_images), os.path.join(sample_dir, 'fake_images-{}.png'.format(epoch+1)))

# Save the model checkpoints 
torch.save(G.state_dict(), 'G.ckpt')
torch.save(D.state_dict(), 'D.ckpt')
"""

VAE = r"""
import os
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision import transforms
from torchvision.utils import save_image


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

# Create a directory if not exists
sample_dir = 'samples'
if not os.path.exists(sample_dir):
    os.makedirs(sample_dir)

# Hyper-parameters
image_size = 784
h_dim = 64  # port: 400: a small network for a few steps
z_dim = 8  # port: 20
num_epochs = 3  # port: 15 epochs of MNIST's 469 batches: 3 of 8
batch_size = 64  # port: 128: 512 digits in 8 batches
learning_rate = 3e-3  # port: 1e-3: a larger rate for the fewer steps

# MNIST dataset
dataset = torchvision.datasets.MNIST(root='../../data',  # port: the test's torchvision reads its digits (no download)
                                     train=True,
                                     transform=transforms.ToTensor(),
                                     download=True)

# Data loader
data_loader = torch.utils.data.DataLoader(dataset=dataset,
                                          batch_size=batch_size, 
                                          shuffle=True)


# VAE model
class VAE(nn.Module):
    def __init__(self, image_size=784, h_dim=64, z_dim=8):  # port: h_dim=400, z_dim=20, as above
        super(VAE, self).__init__()
        self.fc1 = nn.Linear(image_size, h_dim)
        self.fc2 = nn.Linear(h_dim, z_dim)
        self.fc3 = nn.Linear(h_dim, z_dim)
        self.fc4 = nn.Linear(z_dim, h_dim)
        self.fc5 = nn.Linear(h_dim, image_size)
        
    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h), self.fc3(h)
    
    def reparameterize(self, mu, log_var):
        std = torch.exp(log_var/2)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h = F.relu(self.fc4(z))
        return F.sigmoid(self.fc5(h))
    
    def forward(self, x):
        mu, log_var = self.encode(x)
        z = self.reparameterize(mu, log_var)
        x_reconst = self.decode(z)
        return x_reconst, mu, log_var

model = VAE().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)

# Start training
for epoch in range(num_epochs):
    for i, (x, _) in enumerate(data_loader):
        # Forward pass
        x = x.to(device).view(-1, image_size)
        x_reconst, mu, log_var = model(x)
        
        # Compute reconstruction loss and kl divergence
        # For KL divergence, see Appendix B in VAE paper or http://yunjey47.tistory.com/43
        reconst_loss = F.binary_cross_entropy(x_reconst, x, size_average=False)
        kl_div = - 0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())
        
        # Backprop and optimize
        loss = reconst_loss + kl_div
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        
        if (i+1) % 4 == 0:  # port: % 10: 8 batches an epoch
            print ("Epoch[{}/{}], Step [{}/{}], Reconst Loss: {:.4f}, KL Div: {:.4f}" 
                   .format(epoch+1, num_epochs, i+1, len(data_loader), reconst_loss.item(), kl_div.item()))
    
    with torch.no_grad():
        # Save the sampled images
        z = torch.randn(batch_size, z_dim).to(device)
        out = model.decode(z).view(-1, 1, 28, 28)
        save_image(out, os.path.join(sample_dir, 'sampled-{}.png'.format(epoch+1)))

        # Save the reconstructed images
        out, _, _ = model(x)
        x_concat = torch.cat([x.view(-1, 1, 28, 28), out.view(-1, 1, 28, 28)], dim=3)
        save_image(x_concat, os.path.join(sample_dir, 'reconst-{}.png'.format(epoch+1)))
"""

STYLE = r'''
from __future__ import division
from torchvision import models
from torchvision import transforms
from PIL import Image
import argparse
import torch
import torchvision
import torch.nn as nn
import numpy as np


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

def load_image(image_path, transform=None, max_size=None, shape=None):
    """Load an image and convert it to a torch tensor."""
    image = Image.open(image_path)
    
    if max_size:
        scale = max_size / max(image.size)
        size = np.array(image.size) * scale
        image = image.resize(size.astype(int), Image.LANCZOS)  # port: Image.ANTIALIAS: Pillow 10 removed the alias (LANCZOS is the filter it named)
    
    if shape:
        image = image.resize(shape, Image.LANCZOS)
    
    if transform:
        image = transform(image).unsqueeze(0)
    
    return image.to(device)


class VGGNet(nn.Module):
    def __init__(self):
        """Select conv1_1 ~ conv5_1 activation maps."""
        super(VGGNet, self).__init__()
        self.select = ['0', '5', '10', '19', '28'] 
        self.vgg = models.vgg19(pretrained=True).features
        
    def forward(self, x):
        """Extract multiple convolutional feature maps."""
        features = []
        for name, layer in self.vgg._modules.items():
            x = layer(x)
            if name in self.select:
                features.append(x)
        return features


def main(config):
    
    # Image preprocessing
    # VGGNet was trained on ImageNet where images are normalized by mean=[0.485, 0.456, 0.406] and std=[0.229, 0.224, 0.225].
    # We use the same normalization statistics here.
    transform = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize(mean=(0.485, 0.456, 0.406), 
                             std=(0.229, 0.224, 0.225))])
    
    # Load content and style images
    # Make the style image same size as the content image
    content = load_image(config.content, transform, max_size=config.max_size)
    style = load_image(config.style, transform, shape=[content.size(2), content.size(3)])
    
    # Initialize a target image with the content image
    target = content.clone().requires_grad_(True)
    
    optimizer = torch.optim.Adam([target], lr=config.lr, betas=[0.5, 0.999])
    vgg = VGGNet().to(device).eval()
    
    for step in range(config.total_step):
        
        # Extract multiple(5) conv feature vectors
        target_features = vgg(target)
        content_features = vgg(content)
        style_features = vgg(style)

        style_loss = 0
        content_loss = 0
        for f1, f2, f3 in zip(target_features, content_features, style_features):
            # Compute content loss with target and content images
            content_loss += torch.mean((f1 - f2)**2)

            # Reshape convolutional feature maps
            _, c, h, w = f1.size()
            f1 = f1.view(c, h * w)
            f3 = f3.view(c, h * w)

            # Compute gram matrix
            f1 = torch.mm(f1, f1.t())
            f3 = torch.mm(f3, f3.t())

            # Compute style loss with target and style images
            style_loss += torch.mean((f1 - f3)**2) / (c * h * w) 
        
        # Compute total loss, backprop and optimize
        loss = content_loss + config.style_weight * style_loss 
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        if (step+1) % config.log_step == 0:
            print ('Step [{}/{}], Content Loss: {:.4f}, Style Loss: {:.4f}' 
                   .format(step+1, config.total_step, content_loss.item(), style_loss.item()))

        if (step+1) % config.sample_step == 0:
            # Save the generated image
            denorm = transforms.Normalize((-2.12, -2.04, -1.80), (4.37, 4.46, 4.44))
            img = target.clone().squeeze()
            img = denorm(img).clamp_(0, 1)
            torchvision.utils.save_image(img, 'output-{}.png'.format(step+1))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--content', type=str, default='png/content.png')
    parser.add_argument('--style', type=str, default='png/style.png')
    parser.add_argument('--max_size', type=int, default=400)
    parser.add_argument('--total_step', type=int, default=2000)
    parser.add_argument('--log_step', type=int, default=10)
    parser.add_argument('--sample_step', type=int, default=500)
    parser.add_argument('--style_weight', type=float, default=100)
    parser.add_argument('--lr', type=float, default=0.003)
    config = parser.parse_args()
    print(config)
    main(config)
'''

BUILD_VOCAB = r'''
import nltk
import pickle
import argparse
from collections import Counter
from pycocotools.coco import COCO


class Vocabulary(object):
    """Simple vocabulary wrapper."""
    def __init__(self):
        self.word2idx = {}
        self.idx2word = {}
        self.idx = 0

    def add_word(self, word):
        if not word in self.word2idx:
            self.word2idx[word] = self.idx
            self.idx2word[self.idx] = word
            self.idx += 1

    def __call__(self, word):
        if not word in self.word2idx:
            return self.word2idx['<unk>']
        return self.word2idx[word]

    def __len__(self):
        return len(self.word2idx)

def build_vocab(json, threshold):
    """Build a simple vocabulary wrapper."""
    coco = COCO(json)
    counter = Counter()
    ids = coco.anns.keys()
    for i, id in enumerate(ids):
        caption = str(coco.anns[id]['caption'])
        tokens = nltk.tokenize.word_tokenize(caption.lower())
        counter.update(tokens)

        if (i+1) % 1000 == 0:
            print("[{}/{}] Tokenized the captions.".format(i+1, len(ids)))

    # If the word frequency is less than 'threshold', then the word is discarded.
    words = [word for word, cnt in counter.items() if cnt >= threshold]

    # Create a vocab wrapper and add some special tokens.
    vocab = Vocabulary()
    vocab.add_word('<pad>')
    vocab.add_word('<start>')
    vocab.add_word('<end>')
    vocab.add_word('<unk>')

    # Add the words to the vocabulary.
    for i, word in enumerate(words):
        vocab.add_word(word)
    return vocab

def main(args):
    vocab = build_vocab(json=args.caption_path, threshold=args.threshold)
    vocab_path = args.vocab_path
    with open(vocab_path, 'wb') as f:
        pickle.dump(vocab, f)
    print("Total vocabulary size: {}".format(len(vocab)))
    print("Saved the vocabulary wrapper to '{}'".format(vocab_path))


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--caption_path', type=str, 
                        default='data/annotations/captions_train2014.json', 
                        help='path for train annotation file')
    parser.add_argument('--vocab_path', type=str, default='./data/vocab.pkl', 
                        help='path for saving vocabulary wrapper')
    parser.add_argument('--threshold', type=int, default=4, 
                        help='minimum word count threshold')
    args = parser.parse_args()
    main(args)
'''

DATA_LOADER = r'''
import torch
import torchvision.transforms as transforms
import torch.utils.data as data
import os
import pickle
import numpy as np
import nltk
from PIL import Image
from build_vocab import Vocabulary
from pycocotools.coco import COCO


class CocoDataset(data.Dataset):
    """COCO Custom Dataset compatible with torch.utils.data.DataLoader."""
    def __init__(self, root, json, vocab, transform=None):
        """Set the path for images, captions and vocabulary wrapper.
        
        Args:
            root: image directory.
            json: coco annotation file path.
            vocab: vocabulary wrapper.
            transform: image transformer.
        """
        self.root = root
        self.coco = COCO(json)
        self.ids = list(self.coco.anns.keys())
        self.vocab = vocab
        self.transform = transform

    def __getitem__(self, index):
        """Returns one data pair (image and caption)."""
        coco = self.coco
        vocab = self.vocab
        ann_id = self.ids[index]
        caption = coco.anns[ann_id]['caption']
        img_id = coco.anns[ann_id]['image_id']
        path = coco.loadImgs(img_id)[0]['file_name']

        image = Image.open(os.path.join(self.root, path)).convert('RGB')
        if self.transform is not None:
            image = self.transform(image)

        # Convert caption (string) to word ids.
        tokens = nltk.tokenize.word_tokenize(str(caption).lower())
        caption = []
        caption.append(vocab('<start>'))
        caption.extend([vocab(token) for token in tokens])
        caption.append(vocab('<end>'))
        target = torch.Tensor(caption)
        return image, target

    def __len__(self):
        return len(self.ids)


def collate_fn(data):
    """Creates mini-batch tensors from the list of tuples (image, caption).
    
    We should build custom collate_fn rather than using default collate_fn, 
    because merging caption (including padding) is not supported in default.

    Args:
        data: list of tuple (image, caption). 
            - image: torch tensor of shape (3, 256, 256).
            - caption: torch tensor of shape (?); variable length.

    Returns:
        images: torch tensor of shape (batch_size, 3, 256, 256).
        targets: torch tensor of shape (batch_size, padded_length).
        lengths: list; valid length for each padded caption.
    """
    # Sort a data list by caption length (descending order).
    data.sort(key=lambda x: len(x[1]), reverse=True)
    images, captions = zip(*data)

    # Merge images (from tuple of 3D tensor to 4D tensor).
    images = torch.stack(images, 0)

    # Merge captions (from tuple of 1D tensor to 2D tensor).
    lengths = [len(cap) for cap in captions]
    targets = torch.zeros(len(captions), max(lengths)).long()
    for i, cap in enumerate(captions):
        end = lengths[i]
        targets[i, :end] = cap[:end]        
    return images, targets, lengths

def get_loader(root, json, vocab, transform, batch_size, shuffle, num_workers):
    """Returns torch.utils.data.DataLoader for custom coco dataset."""
    # COCO caption dataset
    coco = CocoDataset(root=root,
                       json=json,
                       vocab=vocab,
                       transform=transform)
    
    # Data loader for COCO dataset
    # This will return (images, captions, lengths) for each iteration.
    # images: a tensor of shape (batch_size, 3, 224, 224).
    # captions: a tensor of shape (batch_size, padded_length).
    # lengths: a list indicating valid length for each caption. length is (batch_size).
    data_loader = torch.utils.data.DataLoader(dataset=coco, 
                                              batch_size=batch_size,
                                              shuffle=shuffle,
                                              num_workers=num_workers,
                                              collate_fn=collate_fn)
    return data_loader
'''

MODEL = r'''
import torch
import torch.nn as nn
import torchvision.models as models
from torch.nn.utils.rnn import pack_padded_sequence


class EncoderCNN(nn.Module):
    def __init__(self, embed_size):
        """Load the pretrained ResNet-152 and replace top fc layer."""
        super(EncoderCNN, self).__init__()
        resnet = models.resnet152(pretrained=True)
        modules = list(resnet.children())[:-1]      # delete the last fc layer.
        self.resnet = nn.Sequential(*modules)
        self.linear = nn.Linear(resnet.fc.in_features, embed_size)
        self.bn = nn.BatchNorm1d(embed_size, momentum=0.01)
        
    def forward(self, images):
        """Extract feature vectors from input images."""
        with torch.no_grad():
            features = self.resnet(images)
        features = features.reshape(features.size(0), -1)
        features = self.bn(self.linear(features))
        return features


class DecoderRNN(nn.Module):
    def __init__(self, embed_size, hidden_size, vocab_size, num_layers, max_seq_length=20):
        """Set the hyper-parameters and build the layers."""
        super(DecoderRNN, self).__init__()
        self.embed = nn.Embedding(vocab_size, embed_size)
        self.lstm = nn.LSTM(embed_size, hidden_size, num_layers, batch_first=True)
        self.linear = nn.Linear(hidden_size, vocab_size)
        self.max_seg_length = max_seq_length
        
    def forward(self, features, captions, lengths):
        """Decode image feature vectors and generates captions."""
        embeddings = self.embed(captions)
        embeddings = torch.cat((features.unsqueeze(1), embeddings), 1)
        packed = pack_padded_sequence(embeddings, lengths, batch_first=True) 
        hiddens, _ = self.lstm(packed)
        outputs = self.linear(hiddens[0])
        return outputs
    
    def sample(self, features, states=None):
        """Generate captions for given image features using greedy search."""
        sampled_ids = []
        inputs = features.unsqueeze(1)
        for i in range(self.max_seg_length):
            hiddens, states = self.lstm(inputs, states)          # hiddens: (batch_size, 1, hidden_size)
            outputs = self.linear(hiddens.squeeze(1))            # outputs:  (batch_size, vocab_size)
            _, predicted = outputs.max(dim=1)                    # predicted: (batch_size)  # port: max(1): tricycle's positional max(1) is numpy's, the values (documented)
            sampled_ids.append(predicted)
            inputs = self.embed(predicted)                       # inputs: (batch_size, embed_size)
            inputs = inputs.unsqueeze(1)                         # inputs: (batch_size, 1, embed_size)
        sampled_ids = torch.stack(sampled_ids, 1)                # sampled_ids: (batch_size, max_seq_length)
        return sampled_ids
'''

TRAIN = r"""
import argparse
import torch
import torch.nn as nn
import numpy as np
import os
import pickle
from data_loader import get_loader 
from build_vocab import Vocabulary
from model import EncoderCNN, DecoderRNN
from torch.nn.utils.rnn import pack_padded_sequence
from torchvision import transforms


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

def main(args):
    # Create model directory
    if not os.path.exists(args.model_path):
        os.makedirs(args.model_path)
    
    # Image preprocessing, normalization for the pretrained resnet
    transform = transforms.Compose([ 
        transforms.RandomCrop(args.crop_size),
        transforms.RandomHorizontalFlip(), 
        transforms.ToTensor(), 
        transforms.Normalize((0.485, 0.456, 0.406), 
                             (0.229, 0.224, 0.225))])
    
    # Load vocabulary wrapper
    with open(args.vocab_path, 'rb') as f:
        vocab = pickle.load(f)
    
    # Build data loader
    data_loader = get_loader(args.image_dir, args.caption_path, vocab, 
                             transform, args.batch_size,
                             shuffle=True, num_workers=args.num_workers) 

    # Build the models
    encoder = EncoderCNN(args.embed_size).to(device)
    decoder = DecoderRNN(args.embed_size, args.hidden_size, len(vocab), args.num_layers).to(device)
    
    # Loss and optimizer
    criterion = nn.CrossEntropyLoss()
    params = list(decoder.parameters()) + list(encoder.linear.parameters()) + list(encoder.bn.parameters())
    optimizer = torch.optim.Adam(params, lr=args.learning_rate)
    
    # Train the models
    total_step = len(data_loader)
    for epoch in range(args.num_epochs):
        for i, (images, captions, lengths) in enumerate(data_loader):
            
            # Set mini-batch dataset
            images = images.to(device)
            captions = captions.to(device)
            targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
            
            # Forward, backward and optimize
            features = encoder(images)
            outputs = decoder(features, captions, lengths)
            loss = criterion(outputs, targets)
            decoder.zero_grad()
            encoder.zero_grad()
            loss.backward()
            optimizer.step()

            # Print log info
            if i % args.log_step == 0:
                print('Epoch [{}/{}], Step [{}/{}], Loss: {:.4f}, Perplexity: {:5.4f}'
                      .format(epoch, args.num_epochs, i, total_step, loss.item(), np.exp(loss.item()))) 
                
            # Save the model checkpoints
            if (i+1) % args.save_step == 0:
                torch.save(decoder.state_dict(), os.path.join(
                    args.model_path, 'decoder-{}-{}.ckpt'.format(epoch+1, i+1)))
                torch.save(encoder.state_dict(), os.path.join(
                    args.model_path, 'encoder-{}-{}.ckpt'.format(epoch+1, i+1)))


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--model_path', type=str, default='models/' , help='path for saving trained models')
    parser.add_argument('--crop_size', type=int, default=224 , help='size for randomly cropping images')
    parser.add_argument('--vocab_path', type=str, default='data/vocab.pkl', help='path for vocabulary wrapper')
    parser.add_argument('--image_dir', type=str, default='data/resized2014', help='directory for resized images')
    parser.add_argument('--caption_path', type=str, default='data/annotations/captions_train2014.json', help='path for train annotation json file')
    parser.add_argument('--log_step', type=int , default=10, help='step size for prining log info')
    parser.add_argument('--save_step', type=int , default=1000, help='step size for saving trained models')
    
    # Model parameters
    parser.add_argument('--embed_size', type=int , default=256, help='dimension of word embedding vectors')
    parser.add_argument('--hidden_size', type=int , default=512, help='dimension of lstm hidden states')
    parser.add_argument('--num_layers', type=int , default=1, help='number of layers in lstm')
    
    parser.add_argument('--num_epochs', type=int, default=5)
    parser.add_argument('--batch_size', type=int, default=128)
    parser.add_argument('--num_workers', type=int, default=2)
    parser.add_argument('--learning_rate', type=float, default=0.001)
    args = parser.parse_args()
    print(args)
    main(args)
"""

SAMPLE = r"""
import torch
import matplotlib.pyplot as plt
import numpy as np 
import argparse
import pickle 
import os
from torchvision import transforms 
from build_vocab import Vocabulary
from model import EncoderCNN, DecoderRNN
from PIL import Image


# Device configuration
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

def load_image(image_path, transform=None):
    image = Image.open(image_path).convert('RGB')
    image = image.resize([224, 224], Image.LANCZOS)
    
    if transform is not None:
        image = transform(image).unsqueeze(0)
    
    return image

def main(args):
    # Image preprocessing
    transform = transforms.Compose([
        transforms.ToTensor(), 
        transforms.Normalize((0.485, 0.456, 0.406), 
                             (0.229, 0.224, 0.225))])
    
    # Load vocabulary wrapper
    with open(args.vocab_path, 'rb') as f:
        vocab = pickle.load(f)

    # Build models
    encoder = EncoderCNN(args.embed_size).eval()  # eval mode (batchnorm uses moving mean/variance)
    decoder = DecoderRNN(args.embed_size, args.hidden_size, len(vocab), args.num_layers)
    encoder = encoder.to(device)
    decoder = decoder.to(device)

    # Load the trained model parameters
    encoder.load_state_dict(torch.load(args.encoder_path))
    decoder.load_state_dict(torch.load(args.decoder_path))

    # Prepare an image
    image = load_image(args.image, transform)
    image_tensor = image.to(device)
    
    # Generate an caption from the image
    feature = encoder(image_tensor)
    sampled_ids = decoder.sample(feature)
    sampled_ids = sampled_ids[0].cpu().numpy()          # (1, max_seq_length) -> (max_seq_length)
    
    # Convert word_ids to words
    sampled_caption = []
    for word_id in sampled_ids:
        word = vocab.idx2word[word_id]
        sampled_caption.append(word)
        if word == '<end>':
            break
    sentence = ' '.join(sampled_caption)
    
    # Print out the image and the generated caption
    print (sentence)
    image = Image.open(args.image)
    plt.imshow(np.asarray(image))
    
if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--image', type=str, required=True, help='input image for generating caption')
    parser.add_argument('--encoder_path', type=str, default='models/encoder-5-3000.pkl', help='path for trained encoder')
    parser.add_argument('--decoder_path', type=str, default='models/decoder-5-3000.pkl', help='path for trained decoder')
    parser.add_argument('--vocab_path', type=str, default='data/vocab.pkl', help='path for vocabulary wrapper')
    
    # Model parameters (should be same as paramters in train.py)
    parser.add_argument('--embed_size', type=int , default=256, help='dimension of word embedding vectors')
    parser.add_argument('--hidden_size', type=int , default=512, help='dimension of lstm hidden states')
    parser.add_argument('--num_layers', type=int , default=1, help='number of layers in lstm')
    args = parser.parse_args()
    main(args)
"""

# ResNet-152's place: test_torch_examples_a's small ResNet-18 (random weights)
VISION += RESNET + "\n\ndef resnet152(pretrained=False):\n    return resnet18()\n"

SUBMODULES = {
    "datasets": ["MNIST"],
    "transforms": ["Compose", "ToTensor", "Normalize", "RandomCrop", "RandomHorizontalFlip"],
    "utils": ["save_image"],
    "models": ["vgg19", "resnet152"],
}


class COCO:
    """pycocotools' ``COCO`` as the scripts use it: ``anns`` by id, ``loadImgs``."""

    def __init__(self, annotation_file):
        with open(annotation_file) as f:
            dataset = json.load(f)
        self.anns = {a["id"]: a for a in dataset["annotations"]}
        self.imgs = {i["id"]: i for i in dataset["images"]}

    def loadImgs(self, ids):
        return [self.imgs[i] for i in (ids if isinstance(ids, list) else [ids])]


def stand_ins(lib, monkeypatch) -> None:
    """``<lib>vision`` (``VISION`` in ``lib``'s words, and its submodules), pycocotools and
    nltk's tokenizer, in ``sys.modules``."""
    name = lib.__name__ + "vision"
    vision = types.ModuleType(name)
    exec(VISION.replace("torch", lib.__name__), vision.__dict__)
    monkeypatch.setitem(sys.modules, name, vision)
    for sub, names in SUBMODULES.items():
        module = types.ModuleType(f"{name}.{sub}")
        module.__dict__.update({n: vision.__dict__[n] for n in names})
        setattr(vision, sub, module)
        monkeypatch.setitem(sys.modules, module.__name__, module)
    coco, nltk = types.ModuleType("pycocotools.coco"), types.ModuleType("nltk")
    coco.COCO = COCO
    nltk.tokenize = types.SimpleNamespace(word_tokenize=lambda s: re.findall(r"\w+|[^\w\s]", s))
    monkeypatch.setitem(sys.modules, "pycocotools", types.ModuleType("pycocotools"))
    monkeypatch.setitem(sys.modules, "pycocotools.coco", coco)
    monkeypatch.setitem(sys.modules, "nltk", nltk)


def run_script(text, lib, folder, monkeypatch, argv=(), name="main.py") -> tuple[str, dict]:
    """``text`` in ``lib``'s words, run as ``python name *argv`` in ``folder``: a real
    ``__main__`` module (pickle finds a class defined there), ``sys.argv`` for argparse.
    What it printed and its globals."""
    main = types.ModuleType("__main__")
    main.__file__ = str(folder / name)
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.setattr(sys, "argv", [name, *argv])
    monkeypatch.chdir(folder)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(
            compile(text.replace("torch", lib.__name__), str(folder / name), "exec"), main.__dict__
        )
    return out.getvalue(), main.__dict__


def both(run, tmp_path, monkeypatch):
    """``run(lib, folder)`` under torch, then under tricycle, each seeded, on one thread, with
    the stand-ins, both on the CPU (no GPU is answered, as test_torch_first_hour's ``both``)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    results = []
    with one_thread(torch):
        for lib in torch, tricycle:
            monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
            stand_ins(lib, monkeypatch)
            folder = tmp_path / lib.__name__
            folder.mkdir()
            lib.manual_seed(0)
            results.append(run(lib, folder))
    return results


def mnist(folder, n: int) -> None:
    """``mnist.npz``: ``n`` digits (uint8 28x28, as MNIST's files hold them) and labels."""
    x, y = digits28()
    np.savez(folder / "mnist.npz", images=(x[:n] * 255).round().astype(np.uint8), labels=y[:n])


def grads_as_torchs(ours, theirs, rtol=1e-4, atol=1e-6) -> None:
    """Each parameter's gradient in tricycle's model ``ours`` is torch's in ``theirs``, in
    order; a Linear's ``weights`` transposed (tricycle's are (in, out)), even when square."""
    from tricycle import nn  # noqa: PLC0415

    linear = {
        f"{n}.weights".lstrip(".") for n, m in ours.named_modules() if isinstance(m, nn.Linear)
    }
    pairs = list(zip(ours.named_parameters(), theirs.named_parameters(), strict=True))
    for (name, p), (torch_name, q) in pairs:
        want = q.grad.numpy().T if name in linear else q.grad.numpy()
        np.testing.assert_allclose(
            np.asarray(p.grad.numpy()), want, rtol=rtol, atol=atol, err_msg=f"{name} ({torch_name})"
        )


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def test_generative_adversarial_network(tmp_path, monkeypatch):
    def run(lib, folder):
        mnist(folder, 500)
        return run_script(GAN, lib, folder, monkeypatch)

    (theirs, torch_space), (ours, space) = both(run, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs) and len(lines(ours)) == 8
    for printed, folder in (theirs, tmp_path / "torch"), (ours, tmp_path / "tricycle"):
        # the discriminator learns: its loss falls, it tells the digits from the fakes (the
        # generator's fortunes differ: tricycle's Linear starts from larger Glorot weights)
        fell(numbers(r"d_loss: ([\d.]+)", printed), 0.95)
        real, fake = (
            numbers(r"D\(x\): ([\d.]+)", printed),
            numbers(r"D\(G\(z\)\): ([\d.]+)", printed),
        )
        assert real[-1] > real[0] + 0.2 and real[-1] > fake[-1] + 0.2, (real, fake)
        assert sorted(p.name for p in (folder / "samples").iterdir()) == [
            "fake_images-1.png", "fake_images-2.png", "fake_images-3.png", "fake_images-4.png",
            "real_images.png",
        ]  # fmt: skip
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # the saved state dicts load back; with torch's weights, torch's numbers
    for net in "G", "D":
        state = tricycle.load(str(tmp_path / "tricycle" / f"{net}.ckpt"))
        space[net].load_state_dict(state)
        assert tricycle.nn.from_torch(space[net], torch_space[net].state_dict()) == ([], [])
    z = np.random.default_rng(1).normal(size=(6, 64)).astype(np.float32)
    results = []
    for lib, s in (torch, torch_space), (tricycle, space):
        s["G"].zero_grad()
        s["D"].zero_grad()
        outputs = s["D"](s["G"](lib.tensor(z)))
        g_loss = s["criterion"](outputs, lib.ones(6, 1))
        g_loss.backward()
        results.append([host(outputs), host(g_loss)])
    for got, want in zip(*reversed(results)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    grads_as_torchs(space["G"], torch_space["G"])
    grads_as_torchs(space["D"], torch_space["D"])


def test_variational_autoencoder(tmp_path, monkeypatch):
    def run(lib, folder):
        mnist(folder, 512)
        return run_script(VAE, lib, folder, monkeypatch)

    (theirs, torch_space), (ours, space) = both(run, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs) and len(lines(ours)) == 6
    for printed, s in (theirs, torch_space), (ours, space):
        fell(numbers(r"Reconst Loss: ([\d.]+)", printed), 0.8)
        # the digits beside their reconstructions
        assert tuple(s["x_concat"].shape) == (64, 1, 28, 56)
        assert (tmp_path / "torch" / "samples" / "reconst-3.png").exists()
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # with torch's weights and the same noise: torch's loss terms and gradients
    model, theirs_model = space["model"], torch_space["model"]
    assert tricycle.nn.from_torch(model, theirs_model.state_dict()) == ([], [])
    x = np.load(tmp_path / "torch" / "mnist.npz")["images"][:16].reshape(16, 784) / np.float32(255)
    eps = np.random.default_rng(2).normal(size=(16, 8)).astype(np.float32)
    results = []
    for lib, net in (torch, theirs_model), (tricycle, model):
        net.zero_grad()
        images = lib.tensor(x)
        mu, log_var = net.encode(images)
        x_reconst = net.decode(mu + lib.tensor(eps) * lib.exp(log_var / 2))
        reconst_loss = lib.nn.functional.binary_cross_entropy(x_reconst, images, reduction="sum")
        kl_div = -0.5 * lib.sum(1 + log_var - mu.pow(2) - log_var.exp())
        (reconst_loss + kl_div).backward()
        results.append([host(x_reconst), host(reconst_loss), host(kl_div)])
    for got, want in zip(*reversed(results)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    grads_as_torchs(model, theirs_model, rtol=1e-3, atol=1e-4)


def style_images(folder) -> None:
    """content.png (64x64 blocks of colour, resized to ``--max_size``) and style.png (48x48
    stripes, resized to the content's shape)."""
    from PIL import Image  # noqa: PLC0415

    rng = np.random.default_rng(0)
    blocks = np.kron(rng.uniform(0, 1, (8, 8, 3)), np.ones((8, 8, 1)))
    v, u = np.mgrid[0:48, 0:48] / 47.0
    stripes = (0.5 + 0.5 * np.sin(12 * u + 6 * v))[:, :, None] * np.array([0.9, 0.3, 0.6])
    for name, image in ("content", blocks), ("style", stripes):
        Image.fromarray((image * 255).round().astype(np.uint8)).save(folder / f"{name}.png")


STYLE_ARGV = [
    "--content", "content.png", "--style", "style.png", "--max_size", "32",
    "--total_step", "20", "--log_step", "5", "--sample_step", "10", "--lr", "0.03",
]  # fmt: skip


def test_neural_style_transfer(tmp_path, monkeypatch):
    def run(lib, folder):
        style_images(folder)
        return run_script(STYLE, lib, folder, monkeypatch, STYLE_ARGV)

    (theirs, torch_space), (ours, space) = both(run, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs) and len(lines(ours)) == 5
    assert lines(ours)[0].startswith("Namespace(content='content.png'")
    from PIL import Image  # noqa: PLC0415

    for printed, folder in (theirs, tmp_path / "torch"), (ours, tmp_path / "tricycle"):
        fell(numbers(r"Style Loss: ([\d.]+)", printed), 0.5)  # the image takes the style
        assert numbers(r"Content Loss: ([\d.]+)", printed)[0] > 0  # and leaves its content
        for step in 10, 20:
            assert Image.open(folder / f"output-{step}.png").size == (32, 32)
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # with torch's CNN: the tutorial's losses of one step and the gradient of the image. The
    # features it keeps are the convolutions' outputs, which ReLU(inplace=True) then
    # overwrites, in both libraries (its VGGNet's losses are of conv1_1 ... conv5_1 after
    # their ReLU)
    vgg, theirs_vgg = space["VGGNet"]().eval(), torch_space["VGGNet"]().eval()
    assert tricycle.nn.from_torch(vgg, theirs_vgg.state_dict()) == ([], [])
    rng = np.random.default_rng(3)
    images = [rng.normal(size=(1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    results = []
    relus = [m for m in theirs_vgg.modules() if isinstance(m, torch.nn.ReLU)]
    assert len(relus) == 16 and all(m.inplace for m in relus)
    for lib, net in (torch, theirs_vgg), (tricycle, vgg):
        target, content, style = (lib.tensor(x) for x in images)
        target.requires_grad_(True)
        style_loss = content_loss = 0
        for f1, f2, f3 in zip(net(target), net(content), net(style)):
            content_loss += lib.mean((f1 - f2) ** 2)
            _, c, h, w = f1.size()
            f1, f3 = f1.view(c, h * w), f3.view(c, h * w)
            style_loss += lib.mean((lib.mm(f1, f1.t()) - lib.mm(f3, f3.t())) ** 2) / (c * h * w)
        (content_loss + 100 * style_loss).backward()
        results.append([host(content_loss), host(style_loss), host(target.grad)])
    for got, want in zip(*reversed(results)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_modules_as_torchs():
    """torch's ``Module._modules`` (yunjey's VGGNet walks ``vgg._modules.items()``): the
    direct sublayers in order under torch's names, a Sequential's by position; read-only."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    def build(lib):
        nn = lib.nn
        net = nn.Module()
        net.features = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(inplace=True), nn.MaxPool2d(2))
        net.head = nn.Linear(4, 2)
        return net

    theirs, ours = build(torch), build(tricycle)
    assert list(ours._modules) == list(theirs._modules) == ["features", "head"]
    assert list(ours.features._modules) == list(theirs.features._modules) == ["0", "1", "2"]
    assert [type(m).__name__ for m in ours.features._modules.values()] == [
        type(m).__name__ for m in theirs.features._modules.values()
    ]
    assert ours.features._modules["2"] is ours.features[2] and ours._modules["head"] is ours.head
    with pytest.raises(TypeError):  # a view made on each read: set a layer as an attribute
        ours._modules["head"] = tricycle.nn.Linear(4, 3)


def captions_data(folder) -> None:
    """COCO's layout in miniature: 24 images 40x40 (``data/resized2014``), each a colour on a
    background, and two captions each naming the colour (``data/annotations``)."""
    from PIL import Image  # noqa: PLC0415

    colours = {
        "red": (220, 30, 30),
        "green": (30, 200, 40),
        "blue": (30, 40, 220),
        "yellow": (230, 220, 30),
    }
    (folder / "data" / "resized2014").mkdir(parents=True)
    (folder / "data" / "annotations").mkdir()
    rng = np.random.default_rng(0)
    images, annotations = [], []
    for i in range(24):
        colour = list(colours)[i % 4]
        pixels = rng.integers(0, 60, (40, 40, 3)) + np.array(colours[colour]) * (
            rng.uniform(0, 1, (40, 40, 1)) < 0.7
        )
        name = f"COCO_{i:04d}.png"
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(
            folder / "data" / "resized2014" / name
        )
        images.append({"id": i, "file_name": name})
        for j, text in enumerate([f"A {colour} square on the table.", f"The picture is {colour}."]):
            annotations.append({"id": 2 * i + j, "image_id": i, "caption": text})
    with open(folder / "data" / "annotations" / "captions_train2014.json", "w") as f:
        json.dump({"images": images, "annotations": annotations}, f)


CAPTIONING = {
    "build_vocab.py": BUILD_VOCAB, "data_loader.py": DATA_LOADER, "model.py": MODEL,
    "train.py": TRAIN, "sample.py": SAMPLE,
}  # fmt: skip

SIZES = ["--embed_size", "16", "--hidden_size", "32"]
TRAIN_ARGV = ["--crop_size", "32", "--num_epochs", "6", "--batch_size", "8", "--num_workers", "0",
              "--log_step", "1", "--save_step", "3", "--learning_rate", "0.01", *SIZES]  # fmt: skip
SAMPLE_ARGV = ["--image", "data/resized2014/COCO_0000.png", "--encoder_path",
               "models/encoder-6-3.ckpt", "--decoder_path", "models/decoder-6-3.ckpt", *SIZES]  # fmt: skip


def test_image_captioning(tmp_path, monkeypatch):
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")  # sample.py's imshow, drawn nowhere

    def run(lib, folder):
        captions_data(folder)
        for name, text in CAPTIONING.items():
            (folder / name).write_text(text.replace("torch", lib.__name__))
        monkeypatch.syspath_prepend(str(folder))
        for name in "build_vocab", "data_loader", "model":  # each library's own
            monkeypatch.delitem(sys.modules, name, raising=False)
        printed = ""
        for name, argv in (
            ("build_vocab.py", ["--threshold", "1"]),
            ("train.py", TRAIN_ARGV),
            ("sample.py", SAMPLE_ARGV),
        ):
            out, space = run_script(CAPTIONING[name], lib, folder, monkeypatch, argv, name)
            printed += out
        model = sys.modules["model"]
        for name in "build_vocab", "data_loader", "model":
            sys.modules.pop(name)
        return printed, model

    (theirs, torch_model), (ours, model) = both(run, tmp_path, monkeypatch)
    sentence = r"^<start> .*"
    assert lines(re.sub(sentence, "", ours, flags=re.M)) == lines(
        re.sub(sentence, "", theirs, flags=re.M)
    )
    for printed in theirs, ours:
        fell(numbers(r"Loss: ([\d.]+)", printed), 0.6)  # both learn the captions
        assert printed.count("Epoch [") == 36 and "Total vocabulary size: 16" in printed
        assert re.search(r"^<start>( [a-z.]+)+ <end>$", printed, flags=re.M), printed
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    # with torch's weights: the encoder's features (eval: BatchNorm1d's running statistics),
    # the decoder's outputs over the packed captions, the loss, its gradients and the samples
    encoder, theirs_encoder = model.EncoderCNN(16).eval(), torch_model.EncoderCNN(16).eval()
    decoder, theirs_decoder = model.DecoderRNN(16, 32, 16, 1), torch_model.DecoderRNN(16, 32, 16, 1)
    for ours_net, theirs_net in (encoder, theirs_encoder), (decoder, theirs_decoder):
        assert tricycle.nn.from_torch(ours_net, theirs_net.state_dict()) == ([], [])
    rng = np.random.default_rng(4)
    images = rng.normal(size=(3, 3, 32, 32)).astype(np.float32)
    captions, lengths = rng.integers(1, 16, (3, 7)), [7, 5, 2]
    results = []
    for lib, enc, dec in (torch, theirs_encoder, theirs_decoder), (tricycle, encoder, decoder):
        features = enc(lib.tensor(images))
        targets = lib.nn.utils.rnn.pack_padded_sequence(
            lib.tensor(captions), lengths, batch_first=True
        )[0]
        outputs = dec(features, lib.tensor(captions), lengths)
        loss = lib.nn.CrossEntropyLoss()(outputs, targets)
        loss.backward()
        results.append([host(features), host(outputs), host(loss), host(dec.sample(features))])
    for got, want in zip(*reversed(results)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    grads_as_torchs(decoder, theirs_decoder, rtol=1e-3, atol=1e-6)
    grads_as_torchs(encoder.linear, theirs_encoder.linear, rtol=1e-3, atol=1e-6)
    assert all(p.grad is None for p in encoder.resnet.parameters())  # under no_grad
