"""PyTorch's vision tutorials (pytorch/tutorials) run on tricycle with ``torch`` replaced by
``tricycle`` in their text (docs/pytorch.md's promise; the method of
tests/test_torch_tutorials_u.py):

- intermediate_source/spatial_transformer_tutorial.py: the localisation network regressing
  a 2x3 ``theta`` started at the identity (``.data.zero_()``, ``.data.copy_``),
  ``F.affine_grid`` and ``F.grid_sample``, ``Dropout2d``, ``F.log_softmax(x, dim=1)``,
  ``F.nll_loss(..., size_average=False)`` (torch's deprecated keyword), ``max(1,
  keepdim=True)[1]``, ``eq``/``view_as``, on digits in MNIST's place;
- advanced_source/neural_style_tutorial.py: a small random CNN in VGG19's place, the
  ``ContentLoss``/``StyleLoss`` modules, ``gram_matrix`` (``view``, ``torch.mm``, ``t()``,
  ``div``), ``Normalization``, ``get_style_model_and_losses``'s ``copy.deepcopy``,
  ``children()``, ``add_module`` loop and trimming (``model[:(i + 1)]``),
  ``run_style_transfer``: ``optim.LBFGS`` over the input image, ``requires_grad_(True)``,
  ``model.requires_grad_(False)``, the closure, ``clamp_`` under ``no_grad``; and
  ``torch.set_default_device(device)``;
- beginner_source/transfer_learning_tutorial.py: fine-tuning and the fixed feature extractor
  on tests/test_torch_examples_a.py's small ResNet-18 (random weights: the "pretrained"
  ones are never downloaded), given as the test's ``torchvision.models``: ``model.fc =
  nn.Linear(num_ftrs, 2)``, ``param.requires_grad = False``, ``lr_scheduler.StepLR``,
  ``torch.set_grad_enabled(phase == 'train')``, ``torch.max(outputs, 1)``, the best weights
  saved in a ``TemporaryDirectory`` and loaded back, ``cudnn.benchmark``.

Each changed line ends in ``# port:`` and says why (plotting, downloads and torchvision's
datasets and transforms dropped, sizes and steps shrunk, a Linear's ``weight`` taken by
position: tricycle's is ``weights``, (in, out): docs/pytorch.md). Each script runs under
torch (skipped without it), then under tricycle, both on the CPU; both print the same lines
(numbers aside) and learn. Then each model is given torch's weights (``nn.from_torch``) and
gives torch's outputs and gradients: the spatial transformer network's forward and backward,
one closure of the style transfer (its losses and the image's gradient), the ResNet's
logits and loss gradients.
"""

# ruff: noqa: E501, W291, W293

import re
import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread, run_main
from tests.test_torch_examples_a import SIAMESE
from tests.test_torch_examples_b import lines, numbers
from tests.test_torch_tutorials_u import digits28

pytestmark = [  # torch's, of the tutorials' lines as written (and tricycle's size_average)
    pytest.mark.filterwarnings("ignore:Default grid_sample and affine_grid behavior"),
    pytest.mark.filterwarnings("ignore:.*size_average and reduce"),
    pytest.mark.filterwarnings("ignore:To copy construct from a tensor"),
]

STN = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
# import torchvision  # port: torchvision is not installed (its make_grid only plots, dropped below)
# from torchvision import datasets, transforms  # port: MNIST is built by the test, in mnist.npz
# import matplotlib.pyplot as plt  # port: plotting dropped
import numpy as np

# plt.ion()   # interactive mode  # port: plotting dropped

# from six.moves import urllib  # port: no download (four lines)
# opener = urllib.request.build_opener()  # port: as above
# opener.addheaders = [('User-agent', 'Mozilla/5.0')]  # port: as above
# urllib.request.install_opener(opener)  # port: as above

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

mnist = np.load('mnist.npz')  # port: datasets.MNIST's place: digits built by the test, normalised as transforms.Normalize((0.1307,), (0.3081,))
# Training dataset
train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.tensor(mnist['x_train']), torch.tensor(mnist['y_train'])),  # port: as above
    batch_size=64, shuffle=True, num_workers=0)  # port: num_workers=4: a few arrays, read in the process
# Test dataset
test_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.tensor(mnist['x_test']), torch.tensor(mnist['y_test'])),  # port: as above
    batch_size=64, shuffle=True, num_workers=0)  # port: num_workers=4: a few arrays, read in the process


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        # Initialize the weights/bias with identity transformation
        next(self.fc_loc[2].parameters()).data.zero_()  # port: self.fc_loc[2].weight by position: a Linear's is weights (in, out) in tricycle (documented)
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)

        return x

    def forward(self, x):
        # transform the input
        x = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


model = Net().to(device)

optimizer = optim.SGD(model.parameters(), lr=0.02)  # port: lr=0.01: 48 steps, not 20 epochs of MNIST's 938


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)

        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:  # port: % 500: 8 batches an epoch
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
#
# A simple test procedure to measure the STN performances on MNIST.
#


def test():
    with torch.no_grad():
        model.eval()
        test_loss = 0
        correct = 0
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)

            # sum up batch loss
            test_loss += F.nll_loss(output, target, size_average=False).item()
            # get the index of the max log-probability
            pred = output.max(1, keepdim=True)[1]
            correct += pred.eq(target.view_as(pred)).sum().item()

        test_loss /= len(test_loader.dataset)
        print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'
              .format(test_loss, correct, len(test_loader.dataset),
                      100. * correct / len(test_loader.dataset)))


def convert_image_np(inp):
    """Convert a Tensor to numpy image."""
    inp = inp.numpy().transpose((1, 2, 0))
    mean = np.array([0.485, 0.456, 0.406])
    std = np.array([0.229, 0.224, 0.225])
    inp = std * inp + mean
    inp = np.clip(inp, 0, 1)
    return inp


def visualize_stn():
    with torch.no_grad():
        # Get a batch of training data
        data = next(iter(test_loader))[0].to(device)

        input_tensor = data.cpu()
        transformed_input_tensor = model.stn(data).cpu()

        in_grid = convert_image_np(
            input_tensor[0])  # port: torchvision.utils.make_grid(input_tensor): the first image alone
        out_grid = convert_image_np(
            transformed_input_tensor[0])  # port: as above
        print(in_grid.shape, out_grid.shape, float(np.abs(out_grid - in_grid).mean()))  # port: plots dropped (nine lines): their images' sizes and difference printed

for epoch in range(1, 6 + 1):  # port: 20 epochs: 6
    train(epoch)
    test()

# Visualize the STN transformation on some input batch
visualize_stn()

# plt.ioff()  # port: plotting dropped
# plt.show()  # port: as above
'''


STYLE = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

# from PIL import Image  # port: the images are arrays the test saved (images.npz), not JPEGs
# import matplotlib.pyplot as plt  # port: plotting dropped

# import torchvision.transforms as transforms  # port: torchvision is not installed (see image_loader)
# import torchvision.models as models  # port: a small random CNN in place of VGG19, below
import numpy as np  # port: to read the images

import copy

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.set_default_device(device)

# desired size of the output image
imsize = 512 if torch.cuda.is_available() else 128  # use small size if no gpu

# loader = transforms.Compose([  # port: the test saved the images at their size, in [0, 1] (three lines)
#     transforms.Resize(imsize),  # scale imported image  # port: as above
#     transforms.ToTensor()])  # transform it into a torch tensor  # port: as above


def image_loader(image_name):
    image = np.load("images.npz")[image_name]  # port: Image.open(image_name): an array (C, H, W) in [0, 1]
    # fake batch dimension required to fit network's input dimensions
    image = torch.tensor(image).unsqueeze(0)  # port: loader(image).unsqueeze(0): the array as ToTensor's output
    return image.to(device, torch.float)


style_img = image_loader("picasso")  # port: "./data/images/neural-style/picasso.jpg": images.npz's name
content_img = image_loader("dancing")  # port: as above

assert style_img.size() == content_img.size(), \
    "we need to import style and content images of the same size"

# unloader = transforms.ToPILImage()  # reconvert into PIL image  # port: plotting dropped (as are imshow's calls)

# plt.ion()  # port: as above

def imshow(tensor, title=None):
    image = tensor.cpu().clone()  # we clone the tensor to not do changes on it
    image = image.squeeze(0)      # remove the fake batch dimension
    print(title, tuple(image.shape))  # port: unloader(image), plt.imshow, plt.title and plt.pause: the shape printed


class ContentLoss(nn.Module):

    def __init__(self, target,):
        super(ContentLoss, self).__init__()
        # we 'detach' the target content from the tree used
        # to dynamically compute the gradient: this is a stated value,
        # not a variable. Otherwise the forward method of the criterion
        # will throw an error.
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()  # a=batch size(=1)
    # b=number of feature maps
    # (c,d)=dimensions of a f. map (N=c*d)

    features = input.view(a * b, c * d)  # resize F_XL into \hat F_XL

    G = torch.mm(features, features.t())  # compute the gram product

    # we 'normalize' the values of the gram matrix
    # by dividing by the number of element in each feature maps.
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):

    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


cnn = nn.Sequential(  # port: models.vgg19(weights=models.VGG19_Weights.DEFAULT).features.eval(): VGG's first layers, 8 and 16 channels, random weights
    nn.Conv2d(3, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
    nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
    nn.MaxPool2d(kernel_size=2, stride=2),  # port: as above
    nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
    nn.Conv2d(16, 16, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
    nn.MaxPool2d(kernel_size=2, stride=2),  # port: as above
    nn.Conv2d(16, 16, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
    nn.Conv2d(16, 16, kernel_size=3, padding=1), nn.ReLU(inplace=True),  # port: as above
).eval()  # port: as above

cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406])
cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225])

# create a module to normalize input image so we can easily put it in a
# nn.Sequential
class Normalization(nn.Module):
    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        # .view the mean and std to make them [C x 1 x 1] so that they can
        # directly work with image Tensor of shape [B x C x H x W].
        # B is batch size. C is number of channels. H is height and W is width.
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        # normalize img
        return (img - self.mean) / self.std


# desired depth layers to compute style/content losses :
content_layers_default = ['conv_4']
style_layers_default = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5']

def get_style_model_and_losses(cnn, normalization_mean, normalization_std,
                               style_img, content_img,
                               content_layers=content_layers_default,
                               style_layers=style_layers_default):
    cnn = copy.deepcopy(cnn)

    # normalization module
    normalization = Normalization(normalization_mean, normalization_std)

    # just in order to have an iterable access to or list of content/style
    # losses
    content_losses = []
    style_losses = []

    # assuming that ``cnn`` is a ``nn.Sequential``, so we make a new ``nn.Sequential``
    # to put in modules that are supposed to be activated sequentially
    model = nn.Sequential(normalization)

    i = 0  # increment every time we see a conv
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = 'conv_{}'.format(i)
        elif isinstance(layer, nn.ReLU):
            name = 'relu_{}'.format(i)
            # The in-place version doesn't play very nicely with the ``ContentLoss``
            # and ``StyleLoss`` we insert below. So we replace with out-of-place
            # ones here.
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = 'pool_{}'.format(i)
        elif isinstance(layer, nn.BatchNorm2d):
            name = 'bn_{}'.format(i)
        else:
            raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))

        model.add_module(name, layer)

        if name in content_layers:
            # add content loss:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)

        if name in style_layers:
            # add style loss:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)

    # now we trim off the layers after the last content and style losses
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break

    model = model[:(i + 1)]

    return model, style_losses, content_losses


input_img = content_img.clone()
# if you want to use white noise instead uncomment the below line:
# input_img = torch.randn(content_img.data.size())

# add the original input image to the figure:
# plt.figure()  # port: plotting dropped
imshow(input_img, title='Input Image')


def get_input_optimizer(input_img):
    # this line to show that input is a parameter that requires a gradient
    optimizer = optim.LBFGS([input_img])
    return optimizer


def run_style_transfer(cnn, normalization_mean, normalization_std,
                       content_img, style_img, input_img, num_steps=100,  # port: 300 steps: 100
                       style_weight=1000000, content_weight=1):
    """Run the style transfer."""
    print('Building the style transfer model..')
    model, style_losses, content_losses = get_style_model_and_losses(cnn,
        normalization_mean, normalization_std, style_img, content_img)

    # We want to optimize the input and not the model parameters so we
    # update all the requires_grad fields accordingly
    input_img.requires_grad_(True)
    # We also put the model in evaluation mode, so that specific layers
    # such as dropout or batch normalization layers behave correctly.
    model.eval()
    model.requires_grad_(False)

    optimizer = get_input_optimizer(input_img)

    print('Optimizing..')
    run = [0]
    while run[0] <= num_steps:

        def closure():
            # correct the values of updated input image
            with torch.no_grad():
                input_img.clamp_(0, 1)

            optimizer.zero_grad()
            model(input_img)
            style_score = 0
            content_score = 0

            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss

            style_score *= style_weight
            content_score *= content_weight

            loss = style_score + content_score
            loss.backward()

            run[0] += 1
            if run[0] % 50 == 0:
                print("run {}:".format(run))
                print('Style Loss : {:4f} Content Loss: {:4f}'.format(
                    style_score.item(), content_score.item()))
                print()

            return style_score + content_score

        optimizer.step(closure)

    # a last correction...
    with torch.no_grad():
        input_img.clamp_(0, 1)

    return input_img


output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std,
                            content_img, style_img, input_img)

# plt.figure()  # port: plotting dropped
imshow(output, title='Output Image')

# sphinx_gallery_thumbnail_number = 4
# plt.ioff()  # port: as above
# plt.show()  # port: as above
'''


TRANSFER = r"""
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
import torch.backends.cudnn as cudnn
import numpy as np
import torchvision
from torchvision import models  # port: datasets, transforms: the test's torchvision is test_torch_examples_a's resnet18 alone (random weights); the images are arrays the test made
# import matplotlib.pyplot as plt  # port: plotting dropped
import time
import os
# from PIL import Image  # port: no image files (the inference on a custom image is dropped)
from tempfile import TemporaryDirectory

cudnn.benchmark = True
# plt.ion()   # interactive mode  # port: plotting dropped

# port: data_transforms (RandomResizedCrop, flips, Normalize) dropped: the test's arrays are normalised
hymenoptera = np.load('hymenoptera.npz')  # port: datasets.ImageFolder's place: 2 classes of small images the test made
image_datasets = {x: torch.utils.data.TensorDataset(torch.tensor(hymenoptera[f'{x}_images']), torch.tensor(hymenoptera[f'{x}_labels']))  # port: as above
                  for x in ['train', 'val']}
dataloaders = {x: torch.utils.data.DataLoader(image_datasets[x], batch_size=4,
                                             shuffle=True, num_workers=0)  # port: num_workers=4: a few arrays, read in the process
              for x in ['train', 'val']}
dataset_sizes = {x: len(image_datasets[x]) for x in ['train', 'val']}
class_names = ['ants', 'bees']  # port: image_datasets['train'].classes: ImageFolder's folder names

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")

# port: imshow and the grid of a batch's images dropped (plotting)


def train_model(model, criterion, optimizer, scheduler, num_epochs=25):
    since = time.time()

    # Create a temporary directory to save training checkpoints
    with TemporaryDirectory() as tempdir:
        best_model_params_path = os.path.join(tempdir, 'best_model_params.pt')

        torch.save(model.state_dict(), best_model_params_path)
        best_acc = 0.0

        for epoch in range(num_epochs):
            print(f'Epoch {epoch}/{num_epochs - 1}')
            print('-' * 10)

            # Each epoch has a training and validation phase
            for phase in ['train', 'val']:
                if phase == 'train':
                    model.train()  # Set model to training mode
                else:
                    model.eval()   # Set model to evaluate mode

                running_loss = 0.0
                running_corrects = 0

                # Iterate over data.
                for inputs, labels in dataloaders[phase]:
                    inputs = inputs.to(device)
                    labels = labels.to(device)

                    # zero the parameter gradients
                    optimizer.zero_grad()

                    # forward
                    # track history if only in train
                    with torch.set_grad_enabled(phase == 'train'):
                        outputs = model(inputs)
                        _, preds = torch.max(outputs, 1)
                        loss = criterion(outputs, labels)

                        # backward + optimize only if in training phase
                        if phase == 'train':
                            loss.backward()
                            optimizer.step()

                    # statistics
                    running_loss += loss.item() * inputs.size(0)
                    running_corrects += torch.sum(preds == labels.data)
                if phase == 'train':
                    scheduler.step()

                epoch_loss = running_loss / dataset_sizes[phase]
                epoch_acc = running_corrects.double() / dataset_sizes[phase]

                print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')

                # deep copy the model
                if phase == 'val' and epoch_acc > best_acc:
                    best_acc = epoch_acc
                    torch.save(model.state_dict(), best_model_params_path)

            print()

        time_elapsed = time.time() - since
        print(f'Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s')
        print(f'Best val Acc: {best_acc:4f}')

        # load best model weights
        model.load_state_dict(torch.load(best_model_params_path))
    return model


def visualize_model(model, num_images=6):
    was_training = model.training
    model.eval()
    images_so_far = 0
    # fig = plt.figure()  # port: plotting dropped

    with torch.no_grad():
        for i, (inputs, labels) in enumerate(dataloaders['val']):
            inputs = inputs.to(device)
            labels = labels.to(device)

            outputs = model(inputs)
            _, preds = torch.max(outputs, 1)

            for j in range(inputs.size()[0]):
                images_so_far += 1
                print(f'predicted: {class_names[preds[j]]}')  # port: the subplot, its title (printed) and imshow dropped (three lines)

                if images_so_far == num_images:
                    model.train(mode=was_training)
                    return
        model.train(mode=was_training)


model_ft = models.resnet18(weights='IMAGENET1K_V1')
num_ftrs = model_ft.fc.in_features
# Here the size of each output sample is set to 2.
# Alternatively, it can be generalized to ``nn.Linear(num_ftrs, len(class_names))``.
model_ft.fc = nn.Linear(num_ftrs, 2)

model_ft = model_ft.to(device)

criterion = nn.CrossEntropyLoss()

# Observe that all parameters are being optimized
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.001, momentum=0.9)

# Decay LR by a factor of 0.1 every 7 epochs
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=2, gamma=0.1)  # port: step_size=7: 2, in 4 epochs

model_ft = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler,
                       num_epochs=4)  # port: 25 epochs: 4

visualize_model(model_ft)

model_conv = torchvision.models.resnet18(weights='IMAGENET1K_V1')
for param in model_conv.parameters():
    param.requires_grad = False

# Parameters of newly constructed modules have requires_grad=True by default
num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, 2)

model_conv = model_conv.to(device)

criterion = nn.CrossEntropyLoss()

# Observe that only parameters of final layer are being optimized as
# opposed to before.
optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.001, momentum=0.9)

# Decay LR by a factor of 0.1 every 7 epochs
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=2, gamma=0.1)  # port: step_size=7: 2, in 4 epochs

model_conv = train_model(model_conv, criterion, optimizer_conv,
                         exp_lr_scheduler, num_epochs=4)  # port: 25 epochs: 4

visualize_model(model_conv)

# plt.ioff()  # port: plotting dropped
# plt.show()  # port: as above
# port: visualize_model_predictions on a custom JPEG dropped (PIL, plotting)
"""


# test_torch_examples_a's ResNet-18, the test's torchvision.models (and tricyclevision's)
RESNET = (
    "import torch\nimport torch.nn as nn\n"
    + SIAMESE.split("class SiameseNetwork")[0].split("import StepLR\n")[1]
)


def images(folder) -> None:
    """The data the scripts read: MNIST's digits normalised as the tutorial's transform
    (``mnist.npz``), the style and content images (``images.npz``: stripes and blocks of
    colour, (3, 32, 32) in [0, 1]) and two classes of small images tinted apart
    (``hymenoptera.npz``, normalised)."""
    x, y = digits28()
    x = ((x - 0.1307) / 0.3081)[:, None]  # (N, 1, 28, 28)
    np.savez(
        folder / "mnist.npz", x_train=x[:512], y_train=y[:512], x_test=x[-128:], y_test=y[-128:]
    )
    rng = np.random.default_rng(0)
    v, u = np.mgrid[0:32, 0:32] / 31.0
    stripes = (0.5 + 0.5 * np.sin(12 * u + 6 * v))[None] * np.array([0.9, 0.3, 0.6])[:, None, None]
    blocks = np.kron(rng.uniform(0, 1, (3, 8, 8)), np.ones((4, 4)))
    np.savez(
        folder / "images.npz", picasso=stripes.astype(np.float32), dancing=blocks.astype(np.float32)
    )
    split = {}
    for name, n in ("train", 32), ("val", 16):
        labels = rng.permutation(np.arange(n) % 2)
        tint = np.where(labels[:, None] == 0, [[0.8, 0.2, -0.5]], [[-0.5, 0.2, 0.8]])
        split[f"{name}_images"] = (
            rng.normal(0, 0.5, (n, 3, 32, 32)) + tint[:, :, None, None]
        ).astype(np.float32)
        split[f"{name}_labels"] = labels.astype(np.int64)
    np.savez(folder / "hymenoptera.npz", **split)


def vision(lib, monkeypatch) -> types.ModuleType:
    """``<lib>vision`` with ``models.resnet18`` (``RESNET`` in ``lib``), in ``sys.modules``."""
    name = lib.__name__ + "vision"
    module, models = types.ModuleType(name), types.ModuleType(name + ".models")
    exec(RESNET.replace("torch", lib.__name__), models.__dict__)
    module.models = models
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setitem(sys.modules, name + ".models", models)
    return module


def run(script: str, lib, folder, monkeypatch) -> tuple[str, dict]:
    """``script`` in ``lib``'s words, seeded, run as ``__main__`` in ``folder`` beside its data
    on one thread: what it printed and its globals."""
    folder.mkdir()
    images(folder)
    vision(lib, monkeypatch)
    lib.manual_seed(0)
    return run_main(script.replace("torch", lib.__name__), folder, monkeypatch, "tutorial.py")


def both(script: str, tmp_path, monkeypatch):
    """``run`` under torch, then under tricycle, both on the CPU (as
    test_torch_first_hour's ``both``: no GPU is answered, and torch's default device, which
    the style tutorial sets, is put back after)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for lib in torch, tricycle:  # the same branches under both, on any machine
        monkeypatch.setattr(lib.cuda, "is_available", lambda: False)
    with one_thread(torch):
        try:
            theirs = run(script, torch, tmp_path / "torch", monkeypatch)
        finally:
            torch.set_default_device(None)
        ours = run(script, tricycle, tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def fell(losses: list[float], by: float) -> None:
    assert len(losses) >= 2 and losses[-1] < by * losses[0], losses


def host(x) -> np.ndarray:
    """A torch or tricycle tensor's values as a numpy array."""
    return (
        x.detach().numpy()
        if hasattr(x, "detach") and not hasattr(x, "array")
        else np.asarray(x.numpy())
    )


def grads_as_torchs(ours, theirs, rtol=1e-4, atol=1e-6) -> None:
    """Each parameter's gradient in tricycle's model ``ours`` is torch's in ``theirs`` (a
    Linear's transposed: tricycle's weights are (in, out))."""
    expected = dict(theirs.named_parameters())
    ours_names = [n for n, _ in ours.named_parameters()]
    assert len(ours_names) == len(expected)
    for (name, p), (torch_name, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        want = q.grad.numpy()
        got = np.asarray(p.grad.numpy())
        owner = theirs.get_submodule(torch_name.rpartition(".")[0])
        if type(owner).__name__ == "Linear" and torch_name.endswith("weight"):  # square too
            want = want.T
        np.testing.assert_allclose(
            got, want, rtol=rtol, atol=atol, err_msg=f"{name} ({torch_name})"
        )


def test_spatial_transformer_tutorial(tmp_path, monkeypatch):
    (theirs, torch_space), (ours, space) = both(STN, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs)
    for printed in theirs, ours:
        test_losses = numbers(r"Average loss: ([\d.]+)", printed)  # six epochs'
        assert (
            test_losses == sorted(test_losses, reverse=True)
            and test_losses[-1] < 0.99 * test_losses[0]
        )
        assert printed.count("Train Epoch") == 12
    assert "(28, 28, 3) (28, 28, 3)" in ours  # the transformed images, as numpy arrays
    # torch's trained network in tricycle's: the same log-probabilities, loss and gradients
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    model, theirs_model = space["model"].eval(), torch_space["model"].eval()
    assert tricycle.nn.from_torch(model, theirs_model.state_dict()) == ([], [])
    # random pixels: no ties for max_pool2d to break by rounding (a digit's background has them)
    x = np.random.default_rng(1).normal(size=(4, 1, 28, 28)).astype(np.float32)
    target = np.array([0, 3, 5, 9])
    outputs = []
    for lib, net in (torch, theirs_model), (tricycle, model):
        net.zero_grad()  # the last training step's
        image = lib.tensor(x, requires_grad=True)
        out = net(image)
        lib.nn.functional.nll_loss(out, lib.tensor(target), size_average=False).backward()
        theta = net.fc_loc(net.localization(image).view(-1, 90)).view(-1, 2, 3)
        outputs.append([host(out), host(image.grad), host(theta)])
    for got, want in zip(outputs[1], outputs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    grads_as_torchs(model, theirs_model)


def test_neural_style_tutorial(tmp_path, monkeypatch):
    (theirs, torch_space), (ours, space) = both(STYLE, tmp_path, monkeypatch)
    assert lines(ours) == lines(theirs)
    assert "Output Image (3, 32, 32)" in ours and ours.count("Style Loss") == 2
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    def score(s, image):
        """Style and content scores of ``image`` under script space ``s``'s model, and the
        model's layers' names."""
        model, style_losses, content_losses = s["get_style_model_and_losses"](
            s["cnn"],
            s["cnn_normalization_mean"],
            s["cnn_normalization_std"],
            s["style_img"],
            s["content_img"],
        )
        model(image)
        style = sum(float(sl.loss.item()) for sl in style_losses) * 1000000
        return (
            style,
            sum(float(cl.loss.item()) for cl in content_losses),
            [type(m).__name__ for m in model],
        )

    # LBFGS at lr 1 over this small random CNN is chaotic (its loss rises and falls from one
    # printed run to the next, and differently on another CPU, in both libraries): the image
    # took the style if a printed style loss fell below half the content image's score
    for name, s, printed in ("torch", torch_space, theirs), ("tricycle", space, ours):
        start, end = score(s, s["content_img"]), score(s, s["output"])
        best = min(numbers(r"Style Loss : ([\d.]+)", printed))
        assert best < 0.5 * start[0] and start[1] == 0 < end[1], (name, start, best, end)
        assert host(s["output"]).min() >= 0 and host(s["output"]).max() <= 1  # clamped
        assert s["output"] is s["input_img"] and s["input_img"].requires_grad
    # the model trimmed after the last loss: conv_5's style loss, nothing after it
    assert score(space, space["content_img"])[2] == [
        {"Dense": "Linear"}.get(name, name)
        for name in score(torch_space, torch_space["content_img"])[2]
    ]
    assert score(space, space["content_img"])[2][-1] == "StyleLoss"
    # with torch's CNN, one closure: the same losses and gradient of the image
    assert tricycle.nn.from_torch(space["cnn"], torch_space["cnn"].state_dict()) == ([], [])
    results = []
    for lib, s in (torch, torch_space), (tricycle, space):
        s["input_img"] = lib.tensor(host(torch_space["content_img"])) * 0.8 + 0.1
        s["closure_losses"] = []
        model, style_losses, content_losses = s["get_style_model_and_losses"](
            s["cnn"],
            s["cnn_normalization_mean"],
            s["cnn_normalization_std"],
            s["style_img"],
            s["content_img"],
        )
        image = s["input_img"].requires_grad_(True)
        model(image)
        style_score = sum(sl.loss for sl in style_losses) * 1000000
        loss = style_score + sum(cl.loss for cl in content_losses)
        loss.backward()
        results.append([float(style_score.item()), float(loss.item()), host(image.grad)])
    np.testing.assert_allclose(results[1][:2], results[0][:2], rtol=1e-4)
    np.testing.assert_allclose(
        results[1][2], results[0][2], rtol=1e-3, atol=1e-3 * np.abs(results[0][2]).max()
    )


def test_transfer_learning_tutorial(tmp_path, monkeypatch):
    (theirs, torch_space), (ours, space) = both(TRANSFER, tmp_path, monkeypatch)
    classes = [re.sub("ants|bees", "CLASS", line) for line in lines(theirs)]  # predictions differ
    assert [re.sub("ants|bees", "CLASS", line) for line in lines(ours)] == classes
    import torch  # noqa: PLC0415

    import tricycle  # noqa: PLC0415

    for printed, s, lib in (theirs, torch_space, torch), (ours, space, tricycle):
        val = numbers(r"val Loss: ([\d.]+)", printed)
        assert len(val) == 8
        fell(val[:4], 0.95)  # fine-tuning
        fell(val[4:], 0.95)  # the fixed feature extractor (its rate a tenth after two epochs)
        best = numbers(r"Best val Acc: ([\d.]+)", printed)
        accuracies = numbers(r"val Loss: [\d.]+ Acc: ([\d.]+)", printed)
        assert best == [max(accuracies[:4]), max(accuracies[4:])]
        # the best weights loaded back: their validation accuracy is the best printed
        for model, acc in zip((s["model_ft"], s["model_conv"]), best):
            model.eval()
            correct = 0
            for inputs, labels in s["dataloaders"]["val"]:
                correct += int(lib.sum(lib.max(model(inputs), 1)[1] == labels).item())
            assert correct / 16 == pytest.approx(acc)
        # the frozen network: only the new fc has gradients and moved
        frozen = [name for name, p in s["model_conv"].named_parameters() if not p.requires_grad]
        assert len(frozen) == len(list(s["model_conv"].parameters())) - 2
        assert all(p.grad is None for p in s["model_conv"].parameters() if not p.requires_grad)
    # torch's fine-tuned ResNet in tricycle's: the same logits, in eval and in train mode, and gradients
    ours_model, theirs_model = space["model_ft"], torch_space["model_ft"]
    assert tricycle.nn.from_torch(ours_model, theirs_model.state_dict()) == ([], [])
    x = np.load(tmp_path / "torch" / "hymenoptera.npz")["val_images"][:8]
    y = np.load(tmp_path / "torch" / "hymenoptera.npz")["val_labels"][:8]
    for training in False, True:
        outs = []
        for lib, net in (torch, theirs_model), (tricycle, ours_model):
            net.train(training)
            net.zero_grad()
            logits = net(lib.tensor(x))
            lib.nn.CrossEntropyLoss()(logits, lib.tensor(y)).backward()
            outs.append(host(logits))
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-4)
        grads_as_torchs(ours_model, theirs_model, rtol=1e-3, atol=1e-5)
