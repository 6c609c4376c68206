"""Sebastian Raschka's deeplearning-models (github.com/rasbt/deeplearning-models), its
generative models, RNNs and graph network, run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_yunjey_basics.py):

- autoencoder/ae-basic (a Linear's weights redrawn by ``.detach().normal_``, ``.zero_()``;
  ``F.binary_cross_entropy``), ae-deconv (``ConvTranspose2d``, logits cropped
  ``x[:, :, 2:30, 2:30]``, ``F.binary_cross_entropy_with_logits``), ae-conv-nneighbor
  (``F.interpolate(scale_factor=2, mode='nearest')``), ae-var (the reparameterisation with
  ``torch.randn(...).to(device)``, the KL term, ``reduction='sum'``) and ae-cvae (``to_onehot``
  by ``scatter_``, the condition ``torch.cat``-ed to inputs and outputs);
- gan/gan (``LeakyReLU(inplace=True)``, ``Dropout``, ``Sigmoid``, ``.uniform_(-1.0, 1.0)``
  latents), gan-conv (``BatchNorm1d``/``2d``, ``ConvTranspose2d``, a ``Reshape1`` module,
  ``print(model)``), wgan-1 (the Wasserstein loss, five critic steps, weights clipped by
  ``p.data.clamp_``) and dc-wgan-1 (the convolutional one under ``RMSprop``);
- rnn/rnn_simple_packed_imdb and rnn_lstm_packed_imdb (``nn.RNN``/``nn.LSTM`` over
  ``pack_padded_sequence``, ``compute_binary_accuracy``, ``predict_sentiment``) and
  char_rnn-charlesdickens (a GRU fed one character at a time, ``loss += F.cross_entropy``
  from ``0.``, sampling by ``torch.multinomial`` at a temperature);
- gnn/gnn-basic-1 (a Gaussian adjacency by scipy's ``cdist``, ``register_buffer``,
  ``expand``, ``torch.bmm``, ``Subset`` over ``torch.arange`` indices).

The test's stand-ins: ``torchvision`` (tests/test_yunjey_basics.py's ``datasets.MNIST`` and
``transforms``, over sklearn's digits at 28x28, fewer of them), torchtext's legacy ``data``
(``Field``, ``LabelField``, ``BucketIterator``) and ``datasets.IMDB`` over a small
synthetic corpus of reviews, spacy's tokenizer (a regular expression) and ``unidecode``
(the test's text is ASCII); the Dickens text is a few sentences the test writes. Each
changed line ends in ``# port:`` and says why (sizes and steps shrunk, a larger rate for the
fewer steps, plotting and downloads dropped, a Linear's ``weight`` taken by position:
tricycle's is ``weights``, (in, out), docs/pytorch.md); the cells of IPython magics only
(``%watermark``), the commented-out debugging cells and gan-conv's last (torchsummary on
"cuda:0") are left out. Each notebook's code cells run in order, under torch (skipped without
it), then under tricycle, both on the CPU and seeded; both print the same lines (numbers
aside) and learn. Then each model is given torch's weights (``nn.from_torch``) and gives
torch's outputs and gradients.
"""

# ruff: noqa: E501, W291, W293

import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_b import numbers
from tests.test_torch_first_hour import kinds
from tests.test_torch_tutorials_u import digits28
from tests.test_torch_vision_tutorials import host
from tests.test_yunjey_basics import VISION

pytestmark = [  # torch's, of the notebooks' '%.4f' % cost on a tensor that requires grad
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True"),
]

# the MNIST notebooks' first cells, as they all have them (gnn-basic-1 aside)
MNIST_CELL = r"""
##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data', 
                               train=True, 
                               transform=transforms.ToTensor(),
                               download=True)

test_dataset = datasets.MNIST(root='data', 
                              train=False, 
                              transform=transforms.ToTensor())


train_loader = DataLoader(dataset=train_dataset, 
                          batch_size=batch_size, 
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset, 
                         batch_size=batch_size, 
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:  
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
"""

AE_IMPORTS = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets
from torchvision import transforms


if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
"""

# the reconstructions beside the inputs, as the notebooks draw them (the drawing dropped)
AE_VISUALIZATION = r"""
# %matplotlib inline  # port: plotting dropped (matplotlib's figure and axes)
# import matplotlib.pyplot as plt  # port: as above

##########################
### VISUALIZATION
##########################

n_images = 15
image_width = 28

# fig, axes = plt.subplots(nrows=2, ncols=n_images,   # port: as above
#                          sharex=True, sharey=True, figsize=(20, 2.5))  # port: as above
orig_images = features[:n_images]
decoded_images = decoded[:n_images]

for i in range(n_images):
    for img in [orig_images, decoded_images]:  # port: zip(axes, ...): plotting dropped
        curr_img = img[i].detach().to(torch.device('cpu'))
        curr_img.view((image_width, image_width))  # port: ax[i].imshow(..., cmap='binary'): plotting dropped
"""

AE_BASIC = (
    AE_IMPORTS.replace(
        "from torch.utils.data import DataLoader\nfrom torchvision import datasets\nfrom torchvision import transforms\n",
        "from torchvision import datasets\nfrom torchvision import transforms\nfrom torch.utils.data import DataLoader\n",
    )
    + r"""

##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
print('Device:', device)

# Hyperparameters
random_seed = 123
learning_rate = 0.005
num_epochs = 5
batch_size = 32  # port: 256: 192 images, not 60000

# Architecture
num_features = 784
num_hidden_1 = 32

"""
    + MNIST_CELL
    + r"""
##########################
### MODEL
##########################

class Autoencoder(torch.nn.Module):

    def __init__(self, num_features):
        super(Autoencoder, self).__init__()
        
        ### ENCODER
        self.linear_1 = torch.nn.Linear(num_features, num_hidden_1)
        # The following to lones are not necessary, 
        # but used here to demonstrate how to access the weights
        # and use a different weight initialization.
        # By default, PyTorch uses Xavier/Glorot initialization, which
        # should usually be preferred.
        next(self.linear_1.parameters()).detach().normal_(0.0, 0.1)  # port: linear_1.weight by position: a Linear's is weights (in, out) in tricycle (documented)
        self.linear_1.bias.detach().zero_()
        
        ### DECODER
        self.linear_2 = torch.nn.Linear(num_hidden_1, num_features)
        next(self.linear_1.parameters()).detach().normal_(0.0, 0.1)  # port: as above
        self.linear_1.bias.detach().zero_()
        

    def forward(self, x):
        
        ### ENCODER
        encoded = self.linear_1(x)
        encoded = F.leaky_relu(encoded)
        
        ### DECODER
        logits = self.linear_2(encoded)
        decoded = torch.sigmoid(logits)
        
        return decoded

    
torch.manual_seed(random_seed)
model = Autoencoder(num_features=num_features)
model = model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)   

## Training

start_time = time.time()
for epoch in range(num_epochs):
    for batch_idx, (features, targets) in enumerate(train_loader):
        
        # don't need labels, only the images (features)
        features = features.view(-1, 28*28).to(device)
            
        ### FORWARD AND BACK PROP
        decoded = model(features)
        cost = F.binary_cross_entropy(decoded, features)
        optimizer.zero_grad()
        
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        ### LOGGING
        if not batch_idx % 50:
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f' 
                   %(epoch+1, num_epochs, batch_idx, 
                     len(train_loader), cost))
            
    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))
    
print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
"""
    + AE_VISUALIZATION
)

# ae-deconv and ae-conv-nneighbor: the same settings, data and loop; the models differ
CONV_AE_HEAD = (
    AE_IMPORTS
    + r"""
##########################
### SETTINGS
##########################

# Device
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
print('Device:', device)

# Hyperparameters
random_seed = SEED
learning_rate = RATE
num_epochs = 4  # port: 10: fewer images, four epochs
batch_size = 32  # port: 128: 192 images, not 60000

"""
    + MNIST_CELL
)

CONV_AE_LOOP = (
    r"""
    
torch.manual_seed(random_seed)
model = ConvolutionalAutoencoder()
model = model.to(device)

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)   

start_time = time.time()
for epoch in range(num_epochs):
    for batch_idx, (features, targets) in enumerate(train_loader):
        
        # don't need labels, only the images (features)
        features = features.to(device)

        ### FORWARD AND BACK PROP
        logits, decoded = model(features)
        cost = F.binary_cross_entropy_with_logits(logits, features)
        optimizer.zero_grad()
        
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        ### LOGGING
        if not batch_idx % 50:
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f' 
                   %(epoch+1, num_epochs, batch_idx, 
                     LENGTH, cost))
            
    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))
    
print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
"""
    + AE_VISUALIZATION
)

CONV_ENCODER = r"""
##########################
### MODEL
##########################


class ConvolutionalAutoencoder(torch.nn.Module):

    def __init__(self):
        super(ConvolutionalAutoencoder, self).__init__()
        
        # calculate same padding:
        # (w - k + 2*p)/s + 1 = o
        # => p = (s(o-1) - w + k)/2
        
        ### ENCODER
        
        # 28x28x1 => 28x28x4
        self.conv_1 = torch.nn.Conv2d(in_channels=1,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      # (1(28-1) - 28 + 3) / 2 = 1
                                      padding=1)
        # 28x28x4 => 14x14x4
        self.pool_1 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         # (2(14-1) - 28 + 2) / 2 = 0
                                         padding=0)                                       
        # 14x14x4 => 14x14x8
        self.conv_2 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=8,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      # (1(14-1) - 14 + 3) / 2 = 1
                                      padding=1)                 
        # 14x14x8 => 7x7x8                             
        self.pool_2 = torch.nn.MaxPool2d(kernel_size=(2, 2),
                                         stride=(2, 2),
                                         # (2(7-1) - 14 + 2) / 2 = 0
                                         padding=0)
        
        ### DECODER
"""

AE_DECONV = (
    CONV_AE_HEAD.replace("SEED", "456").replace("RATE", "0.005")
    + CONV_ENCODER
    + r"""                                         
        # 7x7x8 => 15x15x4                          
        self.deconv_1 = torch.nn.ConvTranspose2d(in_channels=8,
                                                 out_channels=4,
                                                 kernel_size=(3, 3),
                                                 stride=(2, 2),
                                                 padding=0)
        
        # 15x15x4  => 31x31x1                           
        self.deconv_2 = torch.nn.ConvTranspose2d(in_channels=4,
                                                 out_channels=1,
                                                 kernel_size=(3, 3),
                                                 stride=(2, 2),
                                                 padding=0)
        
    def forward(self, x):
        
        ### ENCODER
        x = self.conv_1(x)
        x = F.leaky_relu(x)
        x = self.pool_1(x)
        x = self.conv_2(x)
        x = F.leaky_relu(x)
        x = self.pool_2(x)
        
        ### DECODER
        x = self.deconv_1(x)
        x = F.leaky_relu(x)
        x = self.deconv_2(x)
        x = F.leaky_relu(x)
        logits = x[:, :, 2:30, 2:30]
        probas = torch.sigmoid(logits)
        return logits, probas
"""
    + CONV_AE_LOOP.replace("LENGTH", "len(train_dataset)//batch_size")
)

AE_CONV_NNEIGHBOR = (
    CONV_AE_HEAD.replace("SEED", "123").replace("RATE", "0.05")
    + CONV_ENCODER
    + r"""                                         
        # 7x7x8 => 14x14x8               
        # Unpool

        # 14x14x8 => 14x14x8
        self.conv_3 = torch.nn.Conv2d(in_channels=8,
                                      out_channels=4,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      # (1(14-1) - 14 + 3) / 2 = 1
                                      padding=1)
        # 14x14x4 => 28x28x4                            
        # Unpool
        
        # 28x28x4 => 28x28x1
        self.conv_4 = torch.nn.Conv2d(in_channels=4,
                                      out_channels=1,
                                      kernel_size=(3, 3),
                                      stride=(1, 1),
                                      # (1(28-1) - 28 + 3) / 2 = 1
                                      padding=1)
        
    def forward(self, x):
        
        ### ENCODER
        x = self.conv_1(x)
        x = F.leaky_relu(x)
        x = self.pool_1(x)
        x = self.conv_2(x)
        x = F.leaky_relu(x)
        x = self.pool_2(x)
        
        ### DECODER
        x = F.interpolate(x, scale_factor=2, mode='nearest')
        x = self.conv_3(x)
        x = F.leaky_relu(x)
        x = F.interpolate(x, scale_factor=2, mode='nearest')
        x = self.conv_4(x)
        logits = F.leaky_relu(x)
        probas = torch.sigmoid(logits)
        return logits, probas
"""
    + CONV_AE_LOOP.replace("LENGTH", "len(train_loader)")
)

VAE_HEAD = (
    AE_IMPORTS
    + r"""
##########################
### SETTINGS
##########################

# Device
device = torch.device("DEVICE" if torch.cuda.is_available() else "cpu")
print('Device:', device)

# Hyperparameters
random_seed = 0
learning_rate = 0.001
num_epochs = 4  # port: 50: fewer images, four epochs
batch_size = 32  # port: 128: 192 images, not 60000

# Architecture
"""
)

VAE_LOSS = r"""
        # cost = reconstruction loss + Kullback-Leibler divergence
        kl_divergence = (0.5 * (z_mean**2 + 
                                torch.exp(z_log_var) - z_log_var - 1)).sum()
"""

AE_VAR = (
    VAE_HEAD.replace("DEVICE", "cuda:0")
    + r"""num_features = 784
num_hidden_1 = 500
num_latent = 15

"""
    + MNIST_CELL
    + r"""
##########################
### MODEL
##########################

class VariationalAutoencoder(torch.nn.Module):

    def __init__(self, num_features, num_hidden_1, num_latent):
        super(VariationalAutoencoder, self).__init__()
        
        ### ENCODER
        self.hidden_1 = torch.nn.Linear(num_features, num_hidden_1)
        self.z_mean = torch.nn.Linear(num_hidden_1, num_latent)
        # in the original paper (Kingma & Welling 2015, we use
        # have a z_mean and z_var, but the problem is that
        # the z_var can be negative, which would cause issues
        # in the log later. Hence we assume that latent vector
        # has a z_mean and z_log_var component, and when we need
        # the regular variance or std_dev, we simply use 
        # an exponential function
        self.z_log_var = torch.nn.Linear(num_hidden_1, num_latent)
        
        
        ### DECODER
        self.linear_3 = torch.nn.Linear(num_latent, num_hidden_1)
        self.linear_4 = torch.nn.Linear(num_hidden_1, num_features)

    def reparameterize(self, z_mu, z_log_var):
        # Sample epsilon from standard normal distribution
        eps = torch.randn(z_mu.size(0), z_mu.size(1)).to(device)
        # note that log(x^2) = 2*log(x); hence divide by 2 to get std_dev
        # i.e., std_dev = exp(log(std_dev^2)/2) = exp(log(var)/2)
        z = z_mu + eps * torch.exp(z_log_var/2.) 
        return z
        
    def encoder(self, features):
        x = self.hidden_1(features)
        x = F.leaky_relu(x, negative_slope=0.0001)
        z_mean = self.z_mean(x)
        z_log_var = self.z_log_var(x)
        encoded = self.reparameterize(z_mean, z_log_var)
        return z_mean, z_log_var, encoded
    
    def decoder(self, encoded):
        x = self.linear_3(encoded)
        x = F.leaky_relu(x, negative_slope=0.0001)
        x = self.linear_4(x)
        decoded = torch.sigmoid(x)
        return decoded

    def forward(self, features):
        
        z_mean, z_log_var, encoded = self.encoder(features)
        decoded = self.decoder(encoded)
        
        return z_mean, z_log_var, encoded, decoded

    
torch.manual_seed(random_seed)
model = VariationalAutoencoder(num_features,
                               num_hidden_1,
                               num_latent)
model = model.to(device)
    
optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)   

start_time = time.time()
for epoch in range(num_epochs):
    for batch_idx, (features, targets) in enumerate(train_loader):
        
        # don't need labels, only the images (features)
        features = features.view(-1, 28*28).to(device)

        ### FORWARD AND BACK PROP
        z_mean, z_log_var, encoded, decoded = model(features)
"""
    + VAE_LOSS
    + r"""        pixelwise_bce = F.binary_cross_entropy(decoded, features, reduction='sum')
        cost = kl_divergence + pixelwise_bce
        
        optimizer.zero_grad()
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        ### LOGGING
        if not batch_idx % 50:
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f' 
                   %(epoch+1, num_epochs, batch_idx, 
                     len(train_loader), cost))
            
    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))
    
print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
"""
    + AE_VISUALIZATION
    + r"""
for i in range(10):

    ##########################
    ### RANDOM SAMPLE
    ##########################    
    
    n_images = 10
    rand_features = torch.randn(n_images, num_latent).to(device)
    new_images = model.decoder(rand_features)

    ##########################
    ### VISUALIZATION
    ##########################

    image_width = 28

    # fig, axes = plt.subplots(nrows=1, ncols=n_images, figsize=(10, 2.5), sharey=True)  # port: plotting dropped
    decoded_images = new_images[:n_images]

    for img in decoded_images:  # port: zip(axes, ...): plotting dropped
        curr_img = img.detach().to(torch.device('cpu'))
        curr_img.view((image_width, image_width))  # port: ax.imshow(..., cmap='binary'): plotting dropped
        
    # plt.show()  # port: plotting dropped
"""
)

AE_CVAE = (
    VAE_HEAD.replace("DEVICE", "cuda:1")
    + r"""num_classes = 10
num_features = 784
num_hidden_1 = 500
num_latent = 35

"""
    + MNIST_CELL
    + r"""
##########################
### MODEL
##########################


def to_onehot(labels, num_classes, device):

    labels_onehot = torch.zeros(labels.size()[0], num_classes).to(device)
    labels_onehot.scatter_(1, labels.view(-1, 1), 1)

    return labels_onehot


class ConditionalVariationalAutoencoder(torch.nn.Module):

    def __init__(self, num_features, num_hidden_1, num_latent, num_classes):
        super(ConditionalVariationalAutoencoder, self).__init__()
        
        self.num_classes = num_classes
        
        ### ENCODER
        self.hidden_1 = torch.nn.Linear(num_features+num_classes, num_hidden_1)
        self.z_mean = torch.nn.Linear(num_hidden_1, num_latent)
        # in the original paper (Kingma & Welling 2015, we use
        # have a z_mean and z_var, but the problem is that
        # the z_var can be negative, which would cause issues
        # in the log later. Hence we assume that latent vector
        # has a z_mean and z_log_var component, and when we need
        # the regular variance or std_dev, we simply use 
        # an exponential function
        self.z_log_var = torch.nn.Linear(num_hidden_1, num_latent)
        
        
        ### DECODER
        self.linear_3 = torch.nn.Linear(num_latent+num_classes, num_hidden_1)
        self.linear_4 = torch.nn.Linear(num_hidden_1, num_features+num_classes)

    def reparameterize(self, z_mu, z_log_var):
        # Sample epsilon from standard normal distribution
        eps = torch.randn(z_mu.size(0), z_mu.size(1)).to(device)
        # note that log(x^2) = 2*log(x); hence divide by 2 to get std_dev
        # i.e., std_dev = exp(log(std_dev^2)/2) = exp(log(var)/2)
        z = z_mu + eps * torch.exp(z_log_var/2.) 
        return z
        
    def encoder(self, features, targets):
        ### Add condition
        onehot_targets = to_onehot(targets, self.num_classes, device)
        x = torch.cat((features, onehot_targets), dim=1)

        ### ENCODER
        x = self.hidden_1(x)
        x = F.leaky_relu(x)
        z_mean = self.z_mean(x)
        z_log_var = self.z_log_var(x)
        encoded = self.reparameterize(z_mean, z_log_var)
        return z_mean, z_log_var, encoded
    
    def decoder(self, encoded, targets):
        ### Add condition
        onehot_targets = to_onehot(targets, self.num_classes, device)
        encoded = torch.cat((encoded, onehot_targets), dim=1)        
        
        ### DECODER
        x = self.linear_3(encoded)
        x = F.leaky_relu(x)
        x = self.linear_4(x)
        decoded = torch.sigmoid(x)
        return decoded

    def forward(self, features, targets):
        
        z_mean, z_log_var, encoded = self.encoder(features, targets)
        decoded = self.decoder(encoded, targets)
        
        return z_mean, z_log_var, encoded, decoded

    
torch.manual_seed(random_seed)
model = ConditionalVariationalAutoencoder(num_features,
                                          num_hidden_1,
                                          num_latent,
                                          num_classes)
model = model.to(device)
    

##########################
### COST AND OPTIMIZER
##########################

optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)   

start_time = time.time()
for epoch in range(num_epochs):
    for batch_idx, (features, targets) in enumerate(train_loader):
        
        features = features.view(-1, 28*28).to(device)
        targets = targets.to(device)

        ### FORWARD AND BACK PROP
        z_mean, z_log_var, encoded, decoded = model(features, targets)
"""
    + VAE_LOSS
    + r"""        
        # add condition
        x_con = torch.cat((features, to_onehot(targets, num_classes, device)), dim=1)
        
        pixelwise_bce = F.binary_cross_entropy(decoded, x_con, reduction='sum')
        cost = kl_divergence + pixelwise_bce
        
        optimizer.zero_grad()
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        ### LOGGING
        if not batch_idx % 50:
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Cost: %.4f' 
                   %(epoch+1, num_epochs, batch_idx, 
                     len(train_loader)//batch_size, cost))
        
    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))
    
print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
"""
    + AE_VISUALIZATION.replace(
        "decoded_images = decoded[:n_images]",
        "decoded_images = decoded[:n_images][:, :-num_classes]",
    )
    + r"""
for i in range(10):

    ##########################
    ### RANDOM SAMPLE
    ##########################    
    
    labels = torch.tensor([i]*10).to(device)
    n_images = labels.size()[0]
    rand_features = torch.randn(n_images, num_latent).to(device)
    new_images = model.decoder(rand_features, labels)

    ##########################
    ### VISUALIZATION
    ##########################

    image_width = 28

    # fig, axes = plt.subplots(nrows=1, ncols=n_images, figsize=(10, 2.5), sharey=True)  # port: plotting dropped
    decoded_images = new_images[:n_images][:, :-num_classes]

    print('Class Label %d' % i)

    for img in decoded_images:  # port: zip(axes, ...): plotting dropped
        curr_img = img.detach().to(torch.device('cpu'))
        curr_img.view((image_width, image_width))  # port: ax.imshow(..., cmap='binary'): plotting dropped
        
    # plt.show()  # port: plotting dropped
"""
)

GAN_IMPORTS = r"""
import time
import numpy as np
import torch
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
import torch.nn as nn
from torch.utils.data import DataLoader


if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True
"""

GAN_SETTINGS = r"""
##########################
### SETTINGS
##########################

# Device
device = torch.device("@DEVICE@" if torch.cuda.is_available() else "cpu")

# Hyperparameters
random_seed = @SEED@
generator_learning_rate = @RATE@
discriminator_learning_rate = @RATE@
NUM_EPOCHS = @EPOCHS@
BATCH_SIZE = 32  # port: 128: 192 images (64 for the convolutional ones), not 60000
LATENT_DIM = @LATENT@
IMG_SHAPE = (1, 28, 28)
IMG_SIZE = 1
for x in IMG_SHAPE:
    IMG_SIZE *= x

"""

GAN_DATA = r"""

##########################
### MNIST DATASET
##########################

# Note transforms.ToTensor() scales input images
# to 0-1 range
train_dataset = datasets.MNIST(root='data', 
                               train=True, 
                               transform=transforms.ToTensor(),
                               download=True)

test_dataset = datasets.MNIST(root='data', 
                              train=False, 
                              transform=transforms.ToTensor())


train_loader = DataLoader(dataset=train_dataset, 
                          batch_size=BATCH_SIZE, WORKERS
                          shuffle=True)

test_loader = DataLoader(dataset=test_dataset, 
                         batch_size=BATCH_SIZE, WORKERS
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:  
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break
"""

GAN_DATA_WORKERS = GAN_DATA.replace(
    "batch_size=BATCH_SIZE, WORKERS\n",
    "batch_size=BATCH_SIZE,\n                          num_workers=0,  # port: num_workers=4: a few arrays, read in the process\n",
)
GAN_DATA = GAN_DATA.replace("BATCH_SIZE, WORKERS", "BATCH_SIZE,")

# the generated images, as the notebooks' last cell makes them (the drawing and the loss
# curves dropped)
GAN_SAMPLES = r"""
# %matplotlib inline  # port: plotting dropped (the loss curves, the images)
# import matplotlib.pyplot as plt  # port: as above

##########################
### VISUALIZATION
##########################


model.eval()
# Make new images
z = torch.zeros((NSAMPLES, LATENT_DIM)).uniform_(LOW, 1.0).to(device)
generated_features = model.generator_forward(z)
imgs = generated_features.view(-1, 28, 28)

# fig, axes = plt.subplots(nrows=1, ncols=NSAMPLES, figsize=(20, 2.5))  # port: as above


for i in range(NSAMPLES):  # port: enumerate(axes): plotting dropped
    imgs[i].to(torch.device('cpu')).detach()  # port: axes[i].imshow(..., cmap='binary'): plotting dropped
"""

GAN_LOG = r"""
        ### LOGGING
        if not batch_idx % 100:
            print ('Epoch: %03d/%03d | Batch %03d/%03d | Gen/Dis Loss: %.4f/%.4f' 
                   %(epoch+1, NUM_EPOCHS, batch_idx, 
                     len(train_loader), gener_loss, discr_loss))

    print('Time elapsed: %.2f min' % ((time.time() - start_time)/60))
    
print('Total Training Time: %.2f min' % ((time.time() - start_time)/60))
"""

CONV_GAN_MODULES = r"""
##########################
### MODEL
##########################

class Flatten(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), -1)
    
class Reshape1(nn.Module):
    def forward(self, input):
        return input.view(input.size(0), 64, 7, 7)

"""

CONV_GENERATOR = r"""
        self.generator = nn.Sequential(
              
            nn.Linear(LATENT_DIM, 3136, bias=False),
            nn.BatchNorm1d(num_features=3136),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            Reshape1(),
            
            nn.ConvTranspose2d(in_channels=64, out_channels=32, kernel_size=(3, 3), stride=(2, 2), padding=1, bias=False),
            nn.BatchNorm2d(num_features=32),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            #nn.Dropout2d(p=0.2),
            
            nn.ConvTranspose2d(in_channels=32, out_channels=16, kernel_size=(3, 3), stride=(2, 2), padding=1, bias=False),
            nn.BatchNorm2d(num_features=16),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            #nn.Dropout2d(p=0.2),
            
            nn.ConvTranspose2d(in_channels=16, out_channels=8, kernel_size=(3, 3), stride=(1, 1), padding=0, bias=False),
            nn.BatchNorm2d(num_features=8),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001),
            #nn.Dropout2d(p=0.2),
            
            nn.ConvTranspose2d(in_channels=8, out_channels=1, kernel_size=(2, 2), stride=(1, 1), padding=0, bias=False),
            nn.Tanh()
        )
"""

GAN_FORWARDS = r"""
            
    def generator_forward(self, z):
        img = self.generator(z)
        return img
    
    def discriminator_forward(self, img):
        pred = model.discriminator(img)
        return pred.view(-1)
"""

GAN = (
    GAN_IMPORTS
    + GAN_SETTINGS.replace("@DEVICE@", "cuda:2")
    .replace("@SEED@", "123")
    .replace("@RATE@", "0.001")
    .replace("@EPOCHS@", "4  # port: 100: fewer images, four epochs")
    .replace("@LATENT@", "75")
    + GAN_DATA
    + r"""
##########################
### MODEL
##########################


class GAN(torch.nn.Module):

    def __init__(self):
        super(GAN, self).__init__()
        
        
        self.generator = nn.Sequential(
            nn.Linear(LATENT_DIM, 128),
            nn.LeakyReLU(inplace=True),
            nn.Dropout(p=0.5),
            nn.Linear(128, IMG_SIZE),
            nn.Tanh()
        )
        
        self.discriminator = nn.Sequential(
            nn.Linear(IMG_SIZE, 128),
            nn.LeakyReLU(inplace=True),
            nn.Dropout(p=0.5),
            nn.Linear(128, 1),
            nn.Sigmoid()
        )
"""
    + GAN_FORWARDS
    + r"""
torch.manual_seed(random_seed)

model = GAN()
model = model.to(device)

optim_gener = torch.optim.Adam(model.generator.parameters(), lr=generator_learning_rate)
optim_discr = torch.optim.Adam(model.discriminator.parameters(), lr=discriminator_learning_rate) 

start_time = time.time()    

discr_costs = []
gener_costs = []
for epoch in range(NUM_EPOCHS):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        
        
        features = (features - 0.5)*2.
        features = features.view(-1, IMG_SIZE).to(device) 
        targets = targets.to(device)

        valid = torch.ones(targets.size(0)).float().to(device)
        fake = torch.zeros(targets.size(0)).float().to(device)
        

        ### FORWARD AND BACK PROP
        
        
        # --------------------------
        # Train Generator
        # --------------------------
        
        # Make new images
        z = torch.zeros((targets.size(0), LATENT_DIM)).uniform_(-1.0, 1.0).to(device)
        generated_features = model.generator_forward(z)
        
        # Loss for fooling the discriminator
        discr_pred = model.discriminator_forward(generated_features)
        
        gener_loss = F.binary_cross_entropy(discr_pred, valid)
        
        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()
        
        # --------------------------
        # Train Discriminator
        # --------------------------        
        
        discr_pred_real = model.discriminator_forward(features.view(-1, IMG_SIZE))
        real_loss = F.binary_cross_entropy(discr_pred_real, valid)
        
        discr_pred_fake = model.discriminator_forward(generated_features.detach())
        fake_loss = F.binary_cross_entropy(discr_pred_fake, fake)
        
        discr_loss = 0.5*(real_loss + fake_loss)

        optim_discr.zero_grad()
        discr_loss.backward()
        optim_discr.step()        
        
        discr_costs.append(discr_loss)
        gener_costs.append(gener_loss)
        
"""
    + GAN_LOG
    + GAN_SAMPLES.replace("NSAMPLES", "5").replace("LOW", "-1.0")
)

GAN_CONV = (
    GAN_IMPORTS
    + GAN_SETTINGS.replace("@DEVICE@", "cuda:1")
    .replace("@SEED@", "42")
    .replace("@RATE@", "0.001  # port: 0.0001: a few steps")
    .replace("@EPOCHS@", "4  # port: 100: fewer images, four epochs")
    .replace("@LATENT@", "100")
    + GAN_DATA_WORKERS
    + CONV_GAN_MODULES
    + r"""
class GAN(torch.nn.Module):

    def __init__(self):
        super(GAN, self).__init__()
        
"""
    + CONV_GENERATOR
    + r"""        
        self.discriminator = nn.Sequential(
            nn.Conv2d(in_channels=1, out_channels=8, padding=1, kernel_size=(3, 3), stride=(2, 2), bias=False),
            nn.BatchNorm2d(num_features=8),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001), 
            #nn.Dropout2d(p=0.2),
            
            nn.Conv2d(in_channels=8, out_channels=32, padding=1, kernel_size=(3, 3), stride=(2, 2), bias=False),
            nn.BatchNorm2d(num_features=32),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001), 
            #nn.Dropout2d(p=0.2),
            
            Flatten(),

            nn.Linear(7*7*32, 1),
            #nn.Sigmoid()
        )
"""
    + GAN_FORWARDS
    + r"""
torch.manual_seed(random_seed)

#del model
model = GAN()
model = model.to(device)

print(model)

optim_gener = torch.optim.Adam(model.generator.parameters(), lr=generator_learning_rate)
optim_discr = torch.optim.Adam(model.discriminator.parameters(), lr=discriminator_learning_rate) 

start_time = time.time()    

discr_costs = []
gener_costs = []
for epoch in range(NUM_EPOCHS):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        
        # Normalize images to [-1, 1] range
        features = (features - 0.5)*2.
        features = features.view(-1, IMG_SIZE).to(device) 

        targets = targets.to(device)

        valid = torch.ones(targets.size(0)).float().to(device)
        fake = torch.zeros(targets.size(0)).float().to(device)
        

        ### FORWARD AND BACK PROP
        
        
        # --------------------------
        # Train Generator
        # --------------------------
        
        # Make new images
        z = torch.zeros((targets.size(0), LATENT_DIM)).uniform_(-1.0, 1.0).to(device)
        generated_features = model.generator_forward(z)
        
        # Loss for fooling the discriminator
        discr_pred = model.discriminator_forward(generated_features.view(targets.size(0), 1, 28, 28))
        
        gener_loss = F.binary_cross_entropy_with_logits(discr_pred, valid)
        
        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()
        
        # --------------------------
        # Train Discriminator
        # --------------------------        
        
        discr_pred_real = model.discriminator_forward(features.view(targets.size(0), 1, 28, 28))
        real_loss = F.binary_cross_entropy_with_logits(discr_pred_real, valid)
        
        discr_pred_fake = model.discriminator_forward(generated_features.view(targets.size(0), 1, 28, 28).detach())
        fake_loss = F.binary_cross_entropy_with_logits(discr_pred_fake, fake)
        
        discr_loss = 0.5*(real_loss + fake_loss)

        optim_discr.zero_grad()
        discr_loss.backward()
        optim_discr.step()        
        
        discr_costs.append(discr_loss.item())
        gener_costs.append(gener_loss.item())
        
"""
    + GAN_LOG
    + GAN_SAMPLES.replace("NSAMPLES", "5").replace("LOW", "-1.0")
)

WGAN_TRAIN_HEAD = r"""
        # Regular GAN:
        # valid = torch.ones(targets.size(0)).float().to(device)
        # fake = torch.zeros(targets.size(0)).float().to(device)
        
        # WGAN:
        valid = -(torch.ones(targets.size(0)).float()).to(device)
        fake = torch.ones(targets.size(0)).float().to(device)
        

        ### FORWARD AND BACK PROP
        
        
        # --------------------------
        # Train Generator
        # --------------------------
        
        # Make new images
        z = torch.zeros((targets.size(0), LATENT_DIM)).uniform_(LOW, 1.0).to(device)
        generated_features = model.generator_forward(z)
        
        # Loss for fooling the discriminator
        discr_pred = model.discriminator_forward(GENERATED)
"""

WGAN = (
    GAN_IMPORTS
    + GAN_SETTINGS.replace("@DEVICE@", "cuda:0")
    .replace("@SEED@", "0")
    .replace("@RATE@", "0.0005")
    .replace("@EPOCHS@", "3  # port: 100: fewer images, three epochs")
    .replace("@LATENT@", "50")
    + r"""## WGAN-specific settings
num_iter_critic = 5
weight_clip_value = 0.01

"""
    + GAN_DATA
    + r"""
##########################
### MODEL
##########################


def wasserstein_loss(y_true, y_pred):
    return torch.mean(y_true * y_pred)


class GAN(torch.nn.Module):

    def __init__(self):
        super(GAN, self).__init__()
        
        
        self.generator = nn.Sequential(
            nn.Linear(LATENT_DIM, 128),
            nn.LeakyReLU(inplace=True),
            #nn.Dropout(p=0.5),
            nn.Linear(128, IMG_SIZE),
            nn.Tanh()
        )
        
        self.discriminator = nn.Sequential(
            nn.Linear(IMG_SIZE, 128),
            nn.LeakyReLU(inplace=True),
            #nn.Dropout(p=0.5),
            nn.Linear(128, 1),
            #nn.Sigmoid() # WGAN should have linear activation
        )
"""
    + GAN_FORWARDS
    + r"""
torch.manual_seed(random_seed)

model = GAN()
model = model.to(device)

optim_gener = torch.optim.Adam(model.generator.parameters(), lr=generator_learning_rate)
optim_discr = torch.optim.Adam(model.discriminator.parameters(), lr=discriminator_learning_rate) 

start_time = time.time()    

discr_costs = []
gener_costs = []
for epoch in range(NUM_EPOCHS):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        
        
        features = (features - 0.5)*2.
        features = features.view(-1, IMG_SIZE).to(device) 
        targets = targets.to(device)
"""
    + WGAN_TRAIN_HEAD.replace("LOW", "-1.0").replace("GENERATED", "generated_features")
    + r"""        
        
        # Regular GAN:
        # gener_loss = F.binary_cross_entropy_with_logits(discr_pred, valid)
        
        # WGAN:
        gener_loss = wasserstein_loss(valid, discr_pred)
        
        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()
        
        # --------------------------
        # Train Discriminator
        # --------------------------        

        
        # WGAN: 5 loops for discriminator
        for _ in range(num_iter_critic):
        
            discr_pred_real = model.discriminator_forward(features.view(-1, IMG_SIZE))
            # Regular GAN:
            # real_loss = F.binary_cross_entropy_with_logits(discr_pred_real, valid)
            # WGAN:
            real_loss = wasserstein_loss(valid, discr_pred_real)

            discr_pred_fake = model.discriminator_forward(generated_features.detach())

            # Regular GAN:
            # fake_loss = F.binary_cross_entropy_with_logits(discr_pred_fake, fake)
            # WGAN:
            fake_loss = wasserstein_loss(fake, discr_pred_fake)

            # Regular GAN:
            discr_loss = (real_loss + fake_loss)
            # WGAN:
            #discr_loss = -(real_loss - fake_loss)

            optim_discr.zero_grad()
            discr_loss.backward()
            optim_discr.step()        

            # WGAN:
            for p in model.discriminator.parameters():
                p.data.clamp_(-weight_clip_value, weight_clip_value)

        
        discr_costs.append(discr_loss.item())
        gener_costs.append(gener_loss.item())
        
"""
    + GAN_LOG
    + GAN_SAMPLES.replace("NSAMPLES", "5").replace("LOW", "-1.0")
)

DC_WGAN = (
    GAN_IMPORTS
    + GAN_SETTINGS.replace("@DEVICE@", "cuda:0")
    .replace("@SEED@", "0")
    .replace("@RATE@", "0.0005  # port: 0.00005: a few steps")
    .replace("@EPOCHS@", "3  # port: 100: fewer images, three epochs")
    .replace("@LATENT@", "100")
    + r"""## WGAN-specific settings
num_iter_critic = 5
weight_clip_value = 0.01

"""
    + GAN_DATA_WORKERS
    + CONV_GAN_MODULES
    + r"""
def wasserstein_loss(y_true, y_pred):
    return torch.mean(y_true * y_pred)
    
    
class GAN(torch.nn.Module):

    def __init__(self):
        super(GAN, self).__init__()
        
"""
    + CONV_GENERATOR
    + r"""        
        self.discriminator = nn.Sequential(
            nn.Conv2d(in_channels=1, out_channels=8, padding=1, kernel_size=(3, 3), stride=(2, 2), bias=False),
            nn.BatchNorm2d(num_features=8),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001), 
            #nn.Dropout2d(p=0.2),
            
            nn.Conv2d(in_channels=8, out_channels=16, padding=1, kernel_size=(3, 3), stride=(2, 2), bias=False),
            nn.BatchNorm2d(num_features=16),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001), 
            #nn.Dropout2d(p=0.2),
            
            nn.Conv2d(in_channels=16, out_channels=32, padding=1, kernel_size=(3, 3), stride=(2, 2), bias=False),
            nn.BatchNorm2d(num_features=32),
            nn.LeakyReLU(inplace=True, negative_slope=0.0001), 
            #nn.Dropout2d(p=0.2),
            
            Flatten(),

            nn.Linear(512, 1),
            #nn.Sigmoid()
        )
"""
    + GAN_FORWARDS
    + r"""
torch.manual_seed(random_seed)

#del model
model = GAN()
model = model.to(device)

print(model)

optim_gener = torch.optim.RMSprop(model.generator.parameters(), lr=generator_learning_rate)
optim_discr = torch.optim.RMSprop(model.discriminator.parameters(), lr=discriminator_learning_rate) 

start_time = time.time()    

discr_costs = []
gener_costs = []
for epoch in range(NUM_EPOCHS):
    model = model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):

        
        # Normalize images to [-1, 1] range
        features = (features - 0.5)*2.
        features = features.view(-1, IMG_SIZE).to(device) 

        targets = targets.to(device)
"""
    + WGAN_TRAIN_HEAD.replace("LOW", "0.0").replace(
        "GENERATED", "generated_features.view(targets.size(0), 1, 28, 28)"
    )
    + r"""        
        # Regular GAN:
        # gener_loss = F.binary_cross_entropy_with_logits(discr_pred, valid)
        
        # WGAN:
        gener_loss = wasserstein_loss(valid, discr_pred)
        
        optim_gener.zero_grad()
        gener_loss.backward()
        optim_gener.step()
        
        
        # --------------------------
        # Train Discriminator
        # --------------------------        

        # WGAN: Multiple loops for the discriminator
        for _ in range(num_iter_critic):
        
            discr_pred_real = model.discriminator_forward(features.view(targets.size(0), 1, 28, 28))
            # Regular GAN:
            # real_loss = F.binary_cross_entropy_with_logits(discr_pred_real, valid)
            # WGAN:
            real_loss = wasserstein_loss(valid, discr_pred_real)

            discr_pred_fake = model.discriminator_forward(generated_features.view(targets.size(0), 1, 28, 28).detach())

            # Regular GAN:
            # fake_loss = F.binary_cross_entropy_with_logits(discr_pred_fake, fake)
            # WGAN:
            fake_loss = wasserstein_loss(fake, discr_pred_fake)

            discr_loss = 0.5*(real_loss + fake_loss)
            
            optim_discr.zero_grad()
            discr_loss.backward()
            optim_discr.step()        

            # WGAN:
            for p in model.discriminator.parameters():
                p.data.clamp_(-weight_clip_value, weight_clip_value)

        
        discr_costs.append(discr_loss.item())
        gener_costs.append(gener_loss.item())
        
"""
    + GAN_LOG
    + GAN_SAMPLES.replace("NSAMPLES", "10").replace("LOW", "0.0")
)

# torchtext's legacy ``data`` and ``datasets.IMDB`` as the RNN notebooks use them (written in
# torch's words, run in each library's), over reviews made up from a few words of each
# sentiment; spacy's English tokenizer (a regular expression)
TORCHTEXT = r"""
import math
import random
import re
import types
from collections import Counter, defaultdict
import torch

POSITIVE = ['great', 'wonderful', 'loved', 'brilliant', 'moving', 'superb', 'fun', 'love']
NEGATIVE = ['awful', 'boring', 'hated', 'dull', 'terrible', 'weak', 'poor', 'bad']
NEUTRAL = ['the', 'movie', 'film', 'plot', 'actors', 'was', 'and', 'a', 'story', 'it',
           'this', 'really', 'so', 'i', 'ending', 'music', 'of', 'with', 'is', 'very']


def review(rng, positive):
    words = [rng.choice(NEUTRAL) for _ in range(rng.randint(3, 12))]
    for _ in range(rng.randint(1, 3)):
        words.insert(rng.randint(0, len(words)), rng.choice(POSITIVE if positive else NEGATIVE))
    return ' '.join(words) + ' .'


class English:
    def tokenizer(self, text):
        return [types.SimpleNamespace(text=t) for t in re.findall(r"\w+|[^\w\s]", text)]


class Vocab:
    def __init__(self, counter, max_size, specials):
        words = sorted(counter, key=lambda w: (-counter[w], w))[:max_size]
        self.itos = list(specials) + words
        self.stoi = defaultdict(int, {w: i for i, w in enumerate(self.itos)})  # unknown: <unk>

    def __len__(self):
        return len(self.itos)


class Field:
    def __init__(self, tokenize=None, include_lengths=False, dtype=torch.long):
        self.include_lengths, self.dtype = include_lengths, dtype

    def preprocess(self, text):
        return [token.text for token in English().tokenizer(text)]

    def build_vocab(self, dataset, max_size=None):
        self.vocab = Vocab(Counter(w for e in dataset.examples for w in e.text), max_size, ['<unk>', '<pad>'])

    def process(self, texts):  # longest first: (T, B) ids padded with <pad>, and the lengths
        lengths = [len(text) for text in texts]
        ids = [[self.vocab.stoi[w] for w in text] + [1] * (max(lengths) - len(text)) for text in texts]
        padded = torch.tensor(ids).t().contiguous()
        return (padded, torch.tensor(lengths)) if self.include_lengths else padded


class LabelField(Field):
    def __init__(self, dtype=torch.long):
        super().__init__(dtype=dtype)

    def preprocess(self, label):
        return label

    def build_vocab(self, dataset):
        self.vocab = Vocab(Counter(e.label for e in dataset.examples), None, [])

    def process(self, labels):
        return torch.tensor([self.vocab.stoi[label] for label in labels], dtype=self.dtype)


class Dataset:
    def __init__(self, examples, fields):
        self.examples, self.fields = examples, fields

    def __len__(self):
        return len(self.examples)

    def split(self, random_state=None, split_ratio=0.7):
        examples = list(self.examples)
        random.shuffle(examples)
        n = round(split_ratio * len(examples))
        return Dataset(examples[:n], self.fields), Dataset(examples[n:], self.fields)


class IMDB:
    @staticmethod
    def splits(text_field, label_field, n_train=160, n_test=64):
        rng = random.Random(0)
        fields = {'text': text_field, 'label': label_field}

        def make(n):
            labels = ['pos' if i % 2 else 'neg' for i in range(n)]
            return Dataset([types.SimpleNamespace(text=text_field.preprocess(review(rng, label == 'pos')),
                                                  label=label_field.preprocess(label)) for label in labels], fields)

        return make(n_train), make(n_test)


class Batch:
    def __init__(self, examples, fields, sort_within_batch):
        if sort_within_batch:
            examples = sorted(examples, key=lambda e: len(e.text), reverse=True)
        self.text = fields['text'].process([e.text for e in examples])
        self.label = fields['label'].process([e.label for e in examples])


class BucketIterator:
    # batches of reviews of similar lengths, in a random order for training
    def __init__(self, dataset, batch_size, sort_within_batch=False, device=None, train=True):
        self.dataset, self.batch_size, self.train = dataset, batch_size, train
        self.sort_within_batch = sort_within_batch

    def __len__(self):
        return math.ceil(len(self.dataset) / self.batch_size)

    def __iter__(self):
        examples = list(self.dataset.examples)
        if self.train:
            random.shuffle(examples)
        examples.sort(key=lambda e: len(e.text))
        batches = [examples[i:i + self.batch_size] for i in range(0, len(examples), self.batch_size)]
        if self.train:
            random.shuffle(batches)
        for batch in batches:
            yield Batch(batch, self.dataset.fields, self.sort_within_batch)

    @classmethod
    def splits(cls, datasets, batch_size, sort_within_batch=False, device=None):
        return tuple(cls(d, batch_size, sort_within_batch, device, train=i == 0) for i, d in enumerate(datasets))
"""
TORCHTEXT_NAMES = {
    "data": ["Field", "LabelField", "BucketIterator", "Dataset"],
    "datasets": ["IMDB"],
}

PACKED_IMDB = r"""
# %load_ext watermark  # port: IPython's magics dropped
# %watermark -a 'Sebastian Raschka' -v -p torch  # port: as above

import torch
import torch.nn.functional as F
from torchtext import data
from torchtext import datasets
import time
import random

torch.backends.cudnn.deterministic = True

RANDOM_SEED = 123
torch.manual_seed(RANDOM_SEED)

VOCABULARY_SIZE = 20000
LEARNING_RATE = 1e-2  # port: 1e-4: a few steps
BATCH_SIZE = 32  # port: 128: 160 reviews, not 25000
NUM_EPOCHS = 6  # port: 15
DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

EMBEDDING_DIM = 16  # port: 128
HIDDEN_DIM = 32  # port: 256
OUTPUT_DIM = 1

TEXT = data.Field(tokenize='spacy',
                  include_lengths=True) # necessary for packed_padded_sequence
LABEL = data.LabelField(dtype=torch.float)
train_data, test_data = datasets.IMDB.splits(TEXT, LABEL)
train_data, valid_data = train_data.split(random_state=random.seed(RANDOM_SEED),
                                          split_ratio=0.8)

print(f'Num Train: {len(train_data)}')
print(f'Num Valid: {len(valid_data)}')
print(f'Num Test: {len(test_data)}')

TEXT.build_vocab(train_data, max_size=VOCABULARY_SIZE)
LABEL.build_vocab(train_data)

print(f'Vocabulary size: {len(TEXT.vocab)}')
print(f'Number of classes: {len(LABEL.vocab)}')

train_loader, valid_loader, test_loader = data.BucketIterator.splits(
    (train_data, valid_data, test_data), 
    batch_size=BATCH_SIZE,
    sort_within_batch=True, # necessary for packed_padded_sequence
    device=DEVICE)

print('Train')
for batch in train_loader:
    print(f'Text matrix size: {batch.text[0].size()}')
    print(f'Target vector size: {batch.label.size()}')
    break
    
print('\nValid:')
for batch in valid_loader:
    print(f'Text matrix size: {batch.text[0].size()}')
    print(f'Target vector size: {batch.label.size()}')
    break
    
print('\nTest:')
for batch in test_loader:
    print(f'Text matrix size: {batch.text[0].size()}')
    print(f'Target vector size: {batch.label.size()}')
    break

import torch.nn as nn

class RNN(nn.Module):
    def __init__(self, input_dim, embedding_dim, hidden_dim, output_dim):
        
        super().__init__()
        
        self.embedding = nn.Embedding(input_dim, embedding_dim)
        self.rnn = nn.@CELL@(embedding_dim, hidden_dim)
        self.fc = nn.Linear(hidden_dim, output_dim)
        
    def forward(self, text, text_length):

        #[sentence len, batch size] => [sentence len, batch size, embedding size]
        embedded = self.embedding(text)
        
        packed = torch.nn.utils.rnn.pack_padded_sequence(embedded, text_length)
        
        #[sentence len, batch size, embedding size] => 
        #  output: [sentence len, batch size, hidden size]
        #  hidden: [1, batch size, hidden size]
        @OUTPUTS@ = self.rnn(packed)
        
        return self.fc(hidden.squeeze(0)).view(-1)

INPUT_DIM = len(TEXT.vocab)

torch.manual_seed(RANDOM_SEED)
model = RNN(INPUT_DIM, EMBEDDING_DIM, HIDDEN_DIM, OUTPUT_DIM)
model = model.to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)

def compute_binary_accuracy(model, data_loader, device):
    model.eval()
    correct_pred, num_examples = 0, 0
    with torch.no_grad():
        for batch_idx, batch_data in enumerate(data_loader):
            text, text_lengths = batch_data.text
            logits = model(text, text_lengths)
            predicted_labels = (torch.sigmoid(logits) > 0.5).long()
            num_examples += batch_data.label.size(0)
            correct_pred += (predicted_labels == batch_data.label.long()).sum()
        return correct_pred.float()/num_examples * 100

start_time = time.time()

for epoch in range(NUM_EPOCHS):
    model.train()
    for batch_idx, batch_data in enumerate(train_loader):
        
        text, text_lengths = batch_data.text
        
        ### FORWARD AND BACK PROP
        logits = model(text, text_lengths)
        cost = F.binary_cross_entropy_with_logits(logits, batch_data.label)
        optimizer.zero_grad()
        
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        ### LOGGING
        if not batch_idx % 50:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} | '
                   f'Cost: {cost:.4f}')

    with torch.set_grad_enabled(False):
        print(f'training accuracy: '
              f'{compute_binary_accuracy(model, train_loader, DEVICE):.2f}%'
              f'\nvalid accuracy: '
              f'{compute_binary_accuracy(model, valid_loader, DEVICE):.2f}%')
        
    print(f'Time elapsed: {(time.time() - start_time)/60:.2f} min')
    
print(f'Total Training Time: {(time.time() - start_time)/60:.2f} min')
print(f'Test accuracy: {compute_binary_accuracy(model, test_loader, DEVICE):.2f}%')

import spacy
nlp = spacy.load('en')

def predict_sentiment(model, sentence):
    # based on:
    # https://github.com/bentrevett/pytorch-sentiment-analysis/blob/
    # master/2%20-%20Upgraded%20Sentiment%20Analysis.ipynb
    model.eval()
    tokenized = [tok.text for tok in nlp.tokenizer(sentence)]
    indexed = [TEXT.vocab.stoi[t] for t in tokenized]
    length = [len(indexed)]
    tensor = torch.LongTensor(indexed).to(DEVICE)
    tensor = tensor.unsqueeze(1)
    length_tensor = torch.LongTensor(length)
    prediction = torch.sigmoid(model(tensor, length_tensor))
    return prediction.item()

print('Probability positive:')
predict_sentiment(model, "I really love this movie. This movie is so great!")
"""

RNN_SIMPLE_PACKED_IMDB = PACKED_IMDB.replace("@CELL@", "RNN").replace("@OUTPUTS@", "output, hidden")
RNN_LSTM_PACKED_IMDB = PACKED_IMDB.replace("@CELL@", "LSTM").replace(
    "@OUTPUTS@", "packed_output, (hidden, cell)"
)

DICKENS = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it "
    "was the season of Light, it was the season of Darkness, it was the spring of hope, it "
    "was the winter of despair, we had everything before us, we had nothing before us, we "
    "were all going direct to Heaven, we were all going direct the other way.\n\n"
    "There were a king with a large jaw and a queen with a plain face, on the throne of "
    "England; there were a king with a large jaw and a queen with a fair face, on the throne "
    "of France. In both countries it was clearer than crystal to the lords of the State "
    "preserves of loaves and fishes, that things in general were settled for ever.\n"
)

CHAR_RNN = r"""
# %load_ext watermark  # port: IPython's magics dropped
# %watermark -a 'Sebastian Raschka' -v -p torch  # port: as above

import torch
import torch.nn.functional as F
from torchtext import data
from torchtext import datasets
import time
import random
import unidecode
import string
import random
import re


torch.backends.cudnn.deterministic = True

RANDOM_SEED = 123
torch.manual_seed(RANDOM_SEED)

DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

TEXT_PORTION_SIZE = 25  # port: 200

NUM_ITER = 40  # port: 20000
LEARNING_RATE = 0.005
EMBEDDING_DIM = 32  # port: 100
HIDDEN_DIM = 32  # port: 100
NUM_HIDDEN = 1

# !wget http://www.gutenberg.org/files/98/98-0.txt  # port: no download: the test writes a few of its sentences

string.printable

with open('./98-0.txt', 'r') as f:
    textfile = f.read()

# convert special characters
textfile = unidecode.unidecode(textfile)

# strip extra whitespaces
textfile = re.sub(' +',' ', textfile)

TEXT_LENGTH = len(textfile)

print(f'Number of characters in text: {TEXT_LENGTH}')

random.seed(RANDOM_SEED)

def random_portion(textfile):
    start_index = random.randint(0, TEXT_LENGTH - TEXT_PORTION_SIZE)
    end_index = start_index + TEXT_PORTION_SIZE + 1
    return textfile[start_index:end_index]

print(random_portion(textfile))

def char_to_tensor(text):
    lst = [string.printable.index(c) for c in text]
    tensor = torch.tensor(lst).long()
    return tensor

print(char_to_tensor('abcDEF'))

def draw_random_sample(textfile):    
    text_long = char_to_tensor(random_portion(textfile))
    inputs = text_long[:-1]
    targets = text_long[1:]
    return inputs, targets

draw_random_sample(textfile)

class RNN(torch.nn.Module):
    def __init__(self, input_size, embed_size,
                 hidden_size, output_size, num_layers):
        super(RNN, self).__init__()

        self.num_layers = num_layers
        self.hidden_size = hidden_size
        
        self.embed = torch.nn.Embedding(input_size, hidden_size)
        self.gru = torch.nn.GRU(input_size=embed_size,
                                hidden_size=hidden_size,
                                num_layers=num_layers)
        self.fc = torch.nn.Linear(hidden_size, output_size)
        self.init_hidden = torch.nn.Parameter(torch.zeros(
                                              num_layers, 1, hidden_size))
    
    def forward(self, features, hidden):
        embedded = self.embed(features.view(1, -1))
        output, hidden = self.gru(embedded.view(1, 1, -1), hidden)
        output = self.fc(output.view(1, -1))
        return output, hidden
      
    def init_zero_state(self):
        init_hidden = torch.zeros(self.num_layers, 1, self.hidden_size).to(DEVICE)
        return init_hidden

torch.manual_seed(RANDOM_SEED)
model = RNN(len(string.printable), EMBEDDING_DIM, HIDDEN_DIM, len(string.printable), NUM_HIDDEN)
model = model.to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)

def evaluate(model, prime_str='A', predict_len=100, temperature=0.8):
    ## based on https://github.com/spro/practical-pytorch/
    ## blob/master/char-rnn-generation/char-rnn-generation.ipynb

    hidden = model.init_zero_state()
    prime_input = char_to_tensor(prime_str)
    predicted = prime_str

    # Use priming string to "build up" hidden state
    for p in range(len(prime_str) - 1):
        _, hidden = model(prime_input[p].to(DEVICE), hidden.to(DEVICE))
    inp = prime_input[-1]
    
    for p in range(predict_len):
        output, hidden = model(inp.to(DEVICE), hidden.to(DEVICE))
        
        # Sample from the network as a multinomial distribution
        output_dist = output.data.view(-1).div(temperature).exp()
        top_i = torch.multinomial(output_dist, 1)[0]
        
        # Add predicted character to string and use as next input
        predicted_char = string.printable[top_i]
        predicted += predicted_char
        inp = char_to_tensor(predicted_char)

    return predicted

start_time = time.time()
for iteration in range(NUM_ITER):

    
    ### FORWARD AND BACK PROP

    hidden = model.init_zero_state()
    optimizer.zero_grad()
    
    loss = 0.
    inputs, targets = draw_random_sample(textfile)
    inputs, targets = inputs.to(DEVICE), targets.to(DEVICE)
    for c in range(TEXT_PORTION_SIZE):
        outputs, hidden = model(inputs[c], hidden)
        loss += F.cross_entropy(outputs, targets[c].view(1))

    loss /= TEXT_PORTION_SIZE
    loss.backward()
    
    ### UPDATE MODEL PARAMETERS
    optimizer.step()

    ### LOGGING
    with torch.set_grad_enabled(False):
      if iteration % 13 == 0:  # port: % 1000: 40 iterations
          print(f'Time elapsed: {(time.time() - start_time)/60:.2f} min')
          print(f'Iteration {iteration} | Loss {loss.item():.2f}\n\n')
          print(evaluate(model, 'Th', 50), '\n')  # port: 200 characters
          print(50*'=')
"""

GNN = r"""
import time
import numpy as np
from scipy.spatial.distance import cdist
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision import datasets
from torchvision import transforms
from torch.utils.data import DataLoader
from torch.utils.data.dataset import Subset


if torch.cuda.is_available():
    torch.backends.cudnn.deterministic = True

# %matplotlib inline  # port: plotting dropped
# import matplotlib.pyplot as plt  # port: as above

##########################
### SETTINGS
##########################

# Device
DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

# Hyperparameters
RANDOM_SEED = 1
LEARNING_RATE = 0.05
NUM_EPOCHS = 4  # port: 20
BATCH_SIZE = 32  # port: 128: 192 images, not 60000
IMG_SIZE = 28

# Architecture
NUM_CLASSES = 10

train_indices = torch.arange(0, 160)  # port: 59000: 192 images, not 60000
valid_indices = torch.arange(160, 192)  # port: (59000, 60000): as above

custom_transform = transforms.Compose([transforms.ToTensor()])


train_and_valid = datasets.MNIST(root='data', 
                                 train=True, 
                                 transform=custom_transform,
                                 download=True)

test_dataset = datasets.MNIST(root='data', 
                              train=False, 
                              transform=custom_transform,
                              download=True)

train_dataset = Subset(train_and_valid, train_indices)
valid_dataset = Subset(train_and_valid, valid_indices)

train_loader = DataLoader(dataset=train_dataset, 
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: num_workers=4: a few arrays, read in the process
                          shuffle=True)

valid_loader = DataLoader(dataset=valid_dataset, 
                          batch_size=BATCH_SIZE,
                          num_workers=0,  # port: as above
                          shuffle=False)

test_loader = DataLoader(dataset=test_dataset, 
                         batch_size=BATCH_SIZE,
                         num_workers=0,  # port: as above
                         shuffle=False)

# Checking the dataset
for images, labels in train_loader:  
    print('Image batch dimensions:', images.shape)
    print('Image label dimensions:', labels.shape)
    break

def precompute_adjacency_matrix(img_size):
    col, row = np.meshgrid(np.arange(img_size), np.arange(img_size))
    
    # N = img_size^2
    # construct 2D coordinate array (shape N x 2) and normalize
    # in range [0, 1]
    coord = np.stack((col, row), axis=2).reshape(-1, 2) / img_size

    # compute pairwise distance matrix (N x N)
    dist = cdist(coord, coord, metric='euclidean')
    
    # Apply Gaussian filter
    sigma = 0.05 * np.pi
    A = np.exp(- dist / sigma ** 2)
    A[A < 0.01] = 0
    A = torch.from_numpy(A).float()

    # Normalization as per (Kipf & Welling, ICLR 2017)
    D = A.sum(1)  # nodes degree (N,)
    D_hat = (D + 1e-5) ** (-0.5)
    A_hat = D_hat.view(-1, 1) * A * D_hat.view(1, -1)  # N,N
    
    return A_hat

# plt.imshow(precompute_adjacency_matrix(28));  # port: plotting dropped

##########################
### MODEL
##########################

        

class GraphNet(nn.Module):
    def __init__(self, img_size=28, num_classes=10):
        super(GraphNet, self).__init__()
        
        n_rows = img_size**2
        self.fc = nn.Linear(n_rows, num_classes, bias=False)

        A = precompute_adjacency_matrix(img_size)
        self.register_buffer('A', A)

        

    def forward(self, x):
        
        B = x.size(0) # Batch size

        ### Reshape Adjacency Matrix
        # [N, N] Adj. matrix -> [1, N, N] Adj tensor where N = HxW
        A_tensor = self.A.unsqueeze(0)
        # [1, N, N] Adj tensor -> [B, N, N] tensor
        A_tensor = self.A.expand(B, -1, -1)
        
        ### Reshape inputs
        # [B, C, H, W] => [B, H*W, 1]
        x_reshape = x.view(B, -1, 1)
        
        # bmm = batch matrix product to sum the neighbor features
        # Input: [B, N, N] x [B, N, 1]
        # Output: [B, N]
        avg_neighbor_features = (torch.bmm(A_tensor, x_reshape).view(B, -1))
        
        logits = self.fc(avg_neighbor_features)
        probas = F.softmax(logits, dim=1)
        return logits, probas

torch.manual_seed(RANDOM_SEED)
model = GraphNet(img_size=IMG_SIZE, num_classes=NUM_CLASSES)

model = model.to(DEVICE)

optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)

def compute_acc(model, data_loader, device):
    correct_pred, num_examples = 0, 0
    for features, targets in data_loader:
        features = features.to(device)
        targets = targets.to(device)
        logits, probas = model(features)
        _, predicted_labels = torch.max(probas, 1)
        num_examples += targets.size(0)
        correct_pred += (predicted_labels == targets).sum()
    return correct_pred.float()/num_examples * 100
    

start_time = time.time()

cost_list = []
train_acc_list, valid_acc_list = [], []


for epoch in range(NUM_EPOCHS):
    
    model.train()
    for batch_idx, (features, targets) in enumerate(train_loader):
        
        features = features.to(DEVICE)
        targets = targets.to(DEVICE)
            
        ### FORWARD AND BACK PROP
        logits, probas = model(features)
        cost = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        
        cost.backward()
        
        ### UPDATE MODEL PARAMETERS
        optimizer.step()
        
        #################################################
        ### CODE ONLY FOR LOGGING BEYOND THIS POINT
        ################################################
        cost_list.append(cost.item())
        if not batch_idx % 150:
            print (f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d} | '
                   f'Batch {batch_idx:03d}/{len(train_loader):03d} |' 
                   f' Cost: {cost:.4f}')

        

    model.eval()
    with torch.set_grad_enabled(False): # save memory during inference
        
        train_acc = compute_acc(model, train_loader, device=DEVICE)
        valid_acc = compute_acc(model, valid_loader, device=DEVICE)
        
        print(f'Epoch: {epoch+1:03d}/{NUM_EPOCHS:03d}\n'
              f'Train ACC: {train_acc:.2f} | Validation ACC: {valid_acc:.2f}')
        
        train_acc_list.append(train_acc)
        valid_acc_list.append(valid_acc)
        
    elapsed = (time.time() - start_time)/60
    print(f'Time elapsed: {elapsed:.2f} min')
  
elapsed = (time.time() - start_time)/60
print(f'Total Training Time: {elapsed:.2f} min')

# plt.plot(cost_list, label='Minibatch cost')  # port: plotting dropped (the next two figures)
np.convolve(cost_list,   # port: plt.plot(...) of the running average: plotting dropped
            np.ones(4,)/4, mode='valid')  # port: 200 steps: 20 here

with torch.set_grad_enabled(False):
    test_acc = compute_acc(model=model,
                           data_loader=test_loader,
                           device=DEVICE)
    
    valid_acc = compute_acc(model=model,
                            data_loader=valid_loader,
                            device=DEVICE)
    

print(f'Validation ACC: {valid_acc:.2f}%')
print(f'Test ACC: {test_acc:.2f}%')
"""


def mnist_images(n_train: int = 192, n_test: int = 64) -> dict:
    """MNIST's images as uint8 (sklearn's digits at 28x28) and labels: ``n_train`` for
    training, ``n_test`` others for testing."""
    x, y = digits28()
    x = (x * 255).round().astype(np.uint8)
    return {
        ("mnist", True): (x[:n_train], y[:n_train]),
        ("mnist", False): (x[-n_test:], y[-n_test:]),
    }


def stand_ins(lib, monkeypatch, n_train: int = 192) -> None:
    """``<lib>vision`` (``datasets.MNIST``, ``transforms``), ``<lib>text`` (``data``,
    ``datasets``), ``spacy`` and ``unidecode``, in ``sys.modules``."""
    name = lib.__name__ + "vision"
    base = types.ModuleType(f"{name}._base")
    base.IMAGES = mnist_images(n_train)
    base.LABEL = int  # as torchvision's datasets give it: default_collate makes a tensor
    exec(VISION.replace("torch", lib.__name__), base.__dict__)
    datasets = types.ModuleType(f"{name}.datasets")
    datasets.MNIST = base.MNIST
    transforms = types.ModuleType(f"{name}.transforms")
    transforms.ToTensor, transforms.Compose = base.ToTensor, base.Compose
    vision = types.ModuleType(name)
    vision.datasets, vision.transforms = datasets, transforms
    for module in vision, datasets, transforms, base:
        monkeypatch.setitem(sys.modules, module.__name__, module)
    text = types.ModuleType(lib.__name__ + "text")
    exec(TORCHTEXT.replace("torch", lib.__name__), text.__dict__)
    for part in "data", "datasets":
        module = types.ModuleType(f"{text.__name__}.{part}")
        module.__dict__.update({k: text.__dict__[k] for k in TORCHTEXT_NAMES[part]})
        setattr(text, part, module)
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(sys.modules, text.__name__, text)
    spacy, unidecode = types.ModuleType("spacy"), types.ModuleType("unidecode")
    spacy.load = lambda name: text.English()
    unidecode.unidecode = lambda s: s  # the test's text is ASCII already
    monkeypatch.setitem(sys.modules, "spacy", spacy)
    monkeypatch.setitem(sys.modules, "unidecode", unidecode)


def run(script: str, lib, folder, monkeypatch, n_train: int) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded (``lib`` and Python's ``random``), run as
    ``__main__`` in ``folder`` beside the Dickens text, with the stand-ins: what it printed
    and its globals."""
    import random  # noqa: PLC0415

    folder.mkdir(parents=True)
    (folder / "98-0.txt").write_text(DICKENS)
    stand_ins(lib, monkeypatch, n_train)
    lib.manual_seed(0)
    random.seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "notebook.py")


def both(script: str, tmp_path, monkeypatch, n_train: int = 192):
    """``run`` under torch, then under tricycle, both on the CPU on one thread (the
    notebooks ask for CUDA when there is one: none is answered)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        theirs = run(script, torch, tmp_path / "torch", monkeypatch, n_train)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch, n_train)
    return theirs, ours


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def same_numbers(their_model, our_model, step, rtol=1e-4, atol=1e-5) -> None:
    """Tricycle's model given torch's weights: ``step(lib, model)`` (a forward returning a
    loss and outputs) gives torch's outputs, loss and parameter gradients."""
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    assert tricycle.nn.from_torch(our_model, their_model.state_dict()) == ([], [])
    results = []
    for lib, model in (torch, their_model), (tricycle, our_model):
        model.zero_grad()
        loss, *outputs = step(lib, model)
        loss.backward()
        results.append([host(loss), *(host(o) for o in outputs)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    from tricycle import nn  # noqa: PLC0415

    linear = {
        f"{n}.weights".lstrip(".") for n, m in our_model.named_modules() if isinstance(m, nn.Linear)
    }
    pairs = zip(our_model.named_parameters(), their_model.named_parameters(), strict=True)
    for (name, p), (torch_name, q) in pairs:
        if q.grad is None:  # a parameter the forward leaves out: none in either library
            assert p.grad is None, name
            continue
        want = q.grad.numpy().T if name in linear else q.grad.numpy()
        np.testing.assert_allclose(
            host(p.grad), want, rtol=rtol, atol=atol, err_msg=f"{name} ({torch_name})"
        )


def some_digits(n: int = 16) -> np.ndarray:
    """``n`` of the digits, (n, 1, 28, 28) in [0, 1]."""
    return digits28(seed=1)[0][:n, None]


COST = r"Cost: ([\d.]+)"


def test_ae_basic(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(AE_BASIC, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and len(kinds(ours)) == 14
    for printed, s in (theirs, their), (ours, our):
        fell(numbers(COST, printed), 0.6)
        assert tuple(s["decoded"].shape) == (32, 784)  # the last batch, reconstructed
    x = some_digits().reshape(16, 784)
    same_numbers(
        their["model"],
        our["model"],
        lambda lib, m: (lib.nn.functional.binary_cross_entropy(m(lib.tensor(x)), lib.tensor(x)),),
    )


@pytest.mark.parametrize("script", ["AE_DECONV", "AE_CONV_NNEIGHBOR"])
def test_conv_autoencoders(script, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[script], tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs) and len(kinds(ours)) == 12
    for printed, s in (theirs, their), (ours, our):
        fell(numbers(COST, printed), 0.98)  # slowly: the last layer's leaky_relu on the logits
        assert tuple(s["logits"].shape) == (32, 1, 28, 28)
    x = some_digits()
    same_numbers(
        their["model"],
        our["model"],
        lambda lib, m: (
            lib.nn.functional.binary_cross_entropy_with_logits(m(lib.tensor(x))[0], lib.tensor(x)),
            *m(lib.tensor(x)),
        ),
    )


@pytest.mark.parametrize("script", ["AE_VAR", "AE_CVAE"])
def test_variational_autoencoders(script, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[script], tmp_path, monkeypatch)
    conditional = script == "AE_CVAE"
    assert kinds(ours) == kinds(theirs) and len(kinds(ours)) == 12 + 10 * conditional
    for printed, s in (theirs, their), (ours, our):
        fell(numbers(COST, printed), 0.6)
        # the samples: ten images of each label (the condition's ten columns cut off)
        assert tuple(s["decoded_images"].shape) == (10, 784)
    # with torch's weights and the same noise (the encoder's mean and log-variance, the
    # decoder from z_mean + eps * std): torch's loss terms and gradients
    x = some_digits().reshape(16, 784)
    labels = np.arange(16) % 10
    eps = np.random.default_rng(2).normal(size=(16, 35 if conditional else 15)).astype(np.float32)

    def step(lib, m):
        features, targets = lib.tensor(x), lib.tensor(labels)
        extra = (targets,) if conditional else ()
        m.reparameterize = lambda mu, log_var: mu + lib.tensor(eps) * lib.exp(log_var / 2.0)
        z_mean, z_log_var, encoded, decoded = m(features, *extra)
        del m.reparameterize
        kl = (0.5 * (z_mean**2 + lib.exp(z_log_var) - z_log_var - 1)).sum()
        target = lib.cat((features, s_onehot(lib, targets)), dim=1) if conditional else features
        bce = lib.nn.functional.binary_cross_entropy(decoded, target, reduction="sum")
        return kl + bce, z_mean, z_log_var, decoded

    same_numbers(their["model"], our["model"], step, rtol=1e-3, atol=1e-4)


def s_onehot(lib, targets):
    return lib.nn.functional.one_hot(targets, 10).float()


GAN_LOSSES = r"Gen/Dis Loss: (-?[\d.]+)/(-?[\d.]+)"


@pytest.mark.parametrize("script", ["GAN", "GAN_CONV", "WGAN", "DC_WGAN"])
def test_gans(script, tmp_path, monkeypatch):
    printed_model = script in ("GAN_CONV", "DC_WGAN")
    (theirs, their), (ours, our) = both(
        globals()[script], tmp_path, monkeypatch, 64 if printed_model else 192
    )
    if printed_model:  # print(model): the same layers, in order (their reprs differ: tricycle's
        # Linear is its Dense, its lines count the parameters); the rest printed after
        layers = [re.findall(r"\): (\w+)\(", p.split("Epoch:")[0]) for p in (theirs, ours)]
        assert [n.replace("Dense", "Linear") for n in layers[1]] == layers[0]
        assert len(layers[0]) == (28 if script == "DC_WGAN" else 25)
        theirs, ours = ("Epoch:" + p.split("Epoch:", 1)[1] for p in (theirs, ours))
    assert kinds(ours) == kinds(theirs)
    for printed, s in (theirs, their), (ours, our):
        losses = re.findall(GAN_LOSSES, printed)
        assert len(losses) == len(s["discr_costs"]) // len(s["train_loader"])
        # the critic learns: its loss falls over the steps (the last epoch's against the first)
        costs = np.asarray([float(c) for c in s["discr_costs"]])
        n = len(s["train_loader"])
        assert costs[-n:].mean() < costs[:n].mean(), costs
        assert tuple(s["imgs"].shape) == (10 if script == "DC_WGAN" else 5, 28, 28)
        if script in ("WGAN", "DC_WGAN"):  # the critic's weights, clipped
            for p in s["model"].discriminator.parameters():
                assert np.abs(host(p)).max() <= 0.01 + 1e-7
    # with torch's weights: the generator's images and the discriminator's logits on them,
    # in train mode (batch statistics), and both networks' gradients
    z = np.random.default_rng(3).uniform(-1, 1, size=(8, our["LATENT_DIM"])).astype(np.float32)
    conv = script in ("GAN_CONV", "DC_WGAN")

    def step(lib, m):
        m.train()
        if script == "GAN":  # Dropout's draws differ between the libraries: compare without
            m.generator[2].eval(), m.discriminator[2].eval()
        images = m.generator_forward(lib.tensor(z))
        pred = m.discriminator(images.view(8, 1, 28, 28) if conv else images).view(-1)
        return (pred * lib.linspace(-1, 1, 8)).sum(), images, pred

    for s in their, our:  # the notebooks' discriminator_forward reads the global model
        s["model"].eval()
    same_numbers(their["model"], our["model"], step, rtol=1e-3, atol=1e-4 if conv else 1e-5)


@pytest.mark.parametrize("script", ["RNN_SIMPLE_PACKED_IMDB", "RNN_LSTM_PACKED_IMDB"])
def test_packed_imdb(script, tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(globals()[script], tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in theirs, ours:
        assert "Num Train: 128" in printed and "Number of classes: 2" in printed
        fell(numbers(COST, printed), 0.7)
        # of 64 reviews, after 24 steps
        assert numbers(r"Test accuracy: ([\d.]+)%", printed)[0] > 60
    # with torch's weights: a padded batch packed by its lengths, the logits and gradients
    batch = next(iter(our["valid_loader"]))
    text, lengths = host(batch.text[0]), host(batch.text[1])
    labels = host(batch.label)

    def step(lib, m):
        m.train()
        logits = m(lib.tensor(text), lib.tensor(lengths))
        return lib.nn.functional.binary_cross_entropy_with_logits(
            logits, lib.tensor(labels)
        ), logits

    same_numbers(their["model"], our["model"], step)
    # and predict_sentiment's probability of a sentence, tokenized by "spacy"
    for sentence in "I really love this movie. This movie is so great!", "a dull , boring film":
        probabilities = [s["predict_sentiment"](s["model"], sentence) for s in (their, our)]
        assert probabilities[1] == pytest.approx(probabilities[0], rel=1e-5)


def test_char_rnn(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CHAR_RNN, tmp_path, monkeypatch)
    # the samples aside (drawn by each library's generator): the same lines
    sample = re.compile(r"\n\n\n(Th.*?) \n\n={50}", flags=re.DOTALL)
    assert kinds(sample.sub("<sample>", ours)) == kinds(sample.sub("<sample>", theirs))
    for printed, s in (theirs, their), (ours, our):
        fell(numbers(r"Loss ([\d.]+)", printed), 0.8)
        samples = sample.findall(printed)
        assert len(samples) == 4 and all(len(t) == 52 for t in samples), samples
        assert set("".join(samples)) <= set(s["string"].printable)
        np.testing.assert_array_equal(host(s["char_to_tensor"]("abcDEF")), [10, 11, 12, 39, 40, 41])
    # with torch's weights: the loss over a text portion, character by character
    ids = host(our["char_to_tensor"](DICKENS[:16]))

    def step(lib, m):
        hidden, loss = m.init_zero_state(), 0.0
        for c in range(15):
            outputs, hidden = m(lib.tensor(ids[c]), hidden)
            loss += lib.nn.functional.cross_entropy(outputs, lib.tensor(ids[c + 1 : c + 2]))
        return loss / 15, outputs, hidden

    same_numbers(their["model"], our["model"], step)


def test_gnn_basic(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GNN, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, s in (theirs, their), (ours, our):
        fell(s["cost_list"], 0.7)
        assert numbers(r"Test ACC: ([\d.]+)%", printed)[0] > 50
    np.testing.assert_allclose(host(our["model"].A), host(their["model"].A), rtol=1e-6)
    x, y = some_digits(), np.arange(16) % 10
    same_numbers(
        their["model"],
        our["model"],
        lambda lib, m: (
            lib.nn.functional.cross_entropy(m(lib.tensor(x))[0], lib.tensor(y)),
            *m(lib.tensor(x)),
        ),
    )
