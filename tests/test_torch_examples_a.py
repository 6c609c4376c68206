"""pytorch/examples, run on tricycle with ``torch`` replaced by ``tricycle`` (docs/pytorch.md's
promise), the method of ``tests/test_torch_scripts.py``: each example's model and training
loop as the official repository has it, run under torch (skipped without torch) and then,
with the one textual substitution, under tricycle; both learn, and they give the same kinds
and shapes of results.

- ``mnist/main.py``: ``Net`` (Conv2d, Dropout, ``F.max_pool2d``, ``torch.flatten``,
  ``F.log_softmax``), ``F.nll_loss`` (``reduction='sum'`` too), ``optim.Adadelta`` under
  ``StepLR``, ``argmax(dim=1, keepdim=True)``, ``eq``/``view_as``, ``torch.save`` of the
  state dict;
- ``vae/main.py``: the reparameterisation (``randn_like``), ``F.binary_cross_entropy(...,
  reduction='sum')`` plus the KL term, Adam, sampling the decoder;
- ``time_sequence_prediction``: ``generate_sine_wave.py`` (``torch.save`` of a numpy array)
  and ``train.py``'s two ``LSTMCell``s in float64 (``seq.double()``), ``split(1, dim=1)``,
  ``optim.LBFGS`` with ``step(closure)``, predicting the future;
- ``regression/main.py``: a polynomial fitted by a hand-written step (``param.data.add_``);
- ``super_resolution``: ``model.py``'s ``Net`` (``PixelShuffle``, ``init.orthogonal_``,
  ``init.calculate_gain``), ``main.py``'s loop over a ``data.Dataset`` subclass, PSNR,
  ``torch.save(model)`` of the whole model and ``super_resolve.py``'s load and use of it;
- ``siamese_network/main.py``: torchvision's ResNet-18 (written out here, smaller) with its
  first convolution replaced and its head cut off by ``children()``, the ``APP_MATCHER``
  dataset of pairs, ``BCELoss``, ``torch.where(outputs > 0.5, 1, 0)``, Adadelta with StepLR.

What differs from the example's text is marked on its line with ``# port:`` and the reason:
argparse's defaults as constants, smaller sizes and epochs, synthetic numpy data in place of
torchvision's datasets, a ``results`` dict the test reads, ``__script__`` for ``__main__``.
Lines that name ``weight`` take the parameter by position (tricycle's is ``weights``, (in,
out) for Linear: docs/pytorch.md). The fixes the examples needed are tested against torch at
the end.
"""

# ruff: noqa: E501, W291, W293

import sys
import types

import numpy as np
import pytest

from tests.helpers import one_thread
from tests.test_torch_scripts import learned, same_kind

MNIST = r"""
import numpy as np  # port: the synthetic data below
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(1024, 128)  # port: 12x12 images, not 28x28 (64 x 4 x 4 features)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        results["losses"].append(loss.item())  # port: the test reads the losses
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # sum up batch loss
            pred = output.argmax(dim=1, keepdim=True)  # get the index of the max log-probability
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    results["accuracy"] = correct / len(test_loader.dataset)  # port: the test reads these
    results["test_loss"], results["correct_type"] = test_loss, type(correct)  # port: as above
    results["pred_shape"], results["output_shape"] = tuple(pred.shape), tuple(output.shape)  # port


def main():
    # Training settings
    class args:  # port: argparse's defaults as constants, smaller
        batch_size = 64
        test_batch_size = 1000
        epochs = 2  # port: 14 epochs of MNIST, here 2 of a small synthetic set
        lr = 1.0
        gamma = 0.7
        no_accel = False
        dry_run = False
        seed = 1
        log_interval = 10
        save_model = True  # port: the test checks the saved file

    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)

    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 1,
                        'persistent_workers': True,
                       'pin_memory': True,
                       'shuffle': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    # port: MNIST's place: 1x12x12 images of 10 classes, each a template under noise, normalised
    rng = np.random.default_rng(0)
    templates = rng.random((10, 1, 12, 12)).astype(np.float32)
    def make(n):  # port: as above
        labels = rng.integers(0, 10, n)
        images = templates[labels] + 0.3 * rng.normal(size=(n, 1, 12, 12)).astype(np.float32)
        images = (images - 0.1307) / 0.3081  # port: transforms.Normalize((0.1307,), (0.3081,))
        return torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    dataset1 = make(640)  # port: datasets.MNIST('../data', train=True, ...)
    dataset2 = make(200)  # port: datasets.MNIST('../data', train=False, ...)
    train_loader = torch.utils.data.DataLoader(dataset1,**train_kwargs)
    test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
    results["lr"] = scheduler.get_last_lr()[0]  # port: the test reads the schedule

    if args.save_model:
        torch.save(model.state_dict(), "mnist_cnn.pt")


if __name__ == '__script__':  # port: run by the test, not as __main__
    main()
"""

VAE = r"""
from __future__ import print_function
import numpy as np  # port: the synthetic data below
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class args:  # port: argparse's defaults as constants
    batch_size = 32  # port: 128
    epochs = 10
    no_accel = False
    seed = 1
    log_interval = 10

use_accel = not args.no_accel and torch.accelerator.is_available()

torch.manual_seed(args.seed)


if use_accel:
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

print(f"Using device: {device}")
results["device"] = str(device)  # port: the test reads it

# port: MNIST's place: 1x8x8 images in [0, 1], each one of 10 binary templates, a little noisy
rng = np.random.default_rng(0)
templates = (rng.random((10, 1, 8, 8)) > 0.5).astype(np.float32)
def make(n):  # port: as above
    images = templates[rng.integers(0, 10, n)] * 0.9 + 0.05 * rng.random((n, 1, 8, 8))
    return torch.utils.data.TensorDataset(torch.from_numpy(images.astype(np.float32)),
                                          torch.from_numpy(np.zeros(n, np.int64)))

kwargs = {'num_workers': 1, 'pin_memory': True} if use_accel else {}
train_loader = torch.utils.data.DataLoader(
    make(512),  # port: datasets.MNIST('../data', train=True, ...)
    batch_size=args.batch_size, shuffle=True, **kwargs)
test_loader = torch.utils.data.DataLoader(
    make(128),  # port: datasets.MNIST('../data', train=False, ...)
    batch_size=args.batch_size, shuffle=False, **kwargs)


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(64, 100)  # port: 8x8 images and smaller layers: 784 -> 64, 400 -> 100
        self.fc21 = nn.Linear(100, 8)  # port: as above, 20 latents -> 8
        self.fc22 = nn.Linear(100, 8)  # port: as above
        self.fc3 = nn.Linear(8, 100)  # port: as above
        self.fc4 = nn.Linear(100, 64)  # port: as above

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5*logvar)
        eps = torch.randn_like(std)
        return mu + eps*std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))  # port: 8x8 images
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


model = VAE().to(device)
optimizer = optim.Adam(model.parameters(), lr=1e-3)


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction='sum')  # port: 8x8 images

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def train(epoch):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader),
                loss.item() / len(data)))

    print('====> Epoch: {} Average loss: {:.4f}'.format(
          epoch, train_loss / len(train_loader.dataset)))
    results["losses"].append(train_loss / len(train_loader.dataset))  # port: the test reads it


def test(epoch):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n],
                                      recon_batch.view(args.batch_size, 1, 8, 8)[:n]])  # port: 8x8
                results["comparison_shape"] = tuple(comparison.cpu().shape)  # port: save_image

    test_loss /= len(test_loader.dataset)
    print('====> Test set loss: {:.4f}'.format(test_loss))
    results["test_loss"] = test_loss  # port: the test reads it

if __name__ == "__script__":  # port: run by the test, not as __main__
    for epoch in range(1, args.epochs + 1):
        train(epoch)
        test(epoch)
        with torch.no_grad():
            sample = torch.randn(64, 8).to(device)  # port: 8 latents
            sample = model.decode(sample).cpu()
            results["sample_shape"] = tuple(sample.view(64, 1, 8, 8).shape)  # port: save_image
            results["sample_range"] = float(sample.min()), float(sample.max())  # port: as above
"""

TIME_SEQUENCE = r"""
from __future__ import print_function
import torch
import torch.nn as nn
import torch.optim as optim
import numpy as np

# port: generate_sine_wave.py, run first (it writes traindata.pt), with shorter, faster waves
np.random.seed(2)

T = 4  # port: 20
L = 30  # port: 1000
N = 12  # port: 100

x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.save(data, open('traindata.pt', 'wb'))
# port: train.py from here (matplotlib's drawing left out)

class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future = 0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):# if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


if __name__ == '__script__':  # port: run by the test, not as __main__
    class opt:  # port: argparse's default as a constant
        steps = 2  # port: 15
    # set random seed to 0
    np.random.seed(0)
    torch.manual_seed(0)
    # load data and make training set
    data = torch.load('traindata.pt', weights_only=False)  # port: torch >= 2.6 refuses numpy arrays by default
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    # build the model
    seq = Sequence()
    seq.double()
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    #begin to train
    for i in range(opt.steps):
        print('STEP: ', i)
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            results["losses"].append(loss.item())  # port: the test reads the losses
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            future = 10  # port: 1000
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            y = pred.detach().numpy()
        results["test_losses"] = results.get("test_losses", []) + [loss.item()]  # port: read
        results["y_shape"], results["y_type"] = y.shape, type(y)  # port: drawn with matplotlib
"""

REGRESSION = r'''
#!/usr/bin/env python
from __future__ import print_function
from itertools import count

import torch
import torch.nn.functional as F

torch.manual_seed(0)  # port: the script is unseeded; the test repeats it
POLY_DEGREE = 4
W_target = torch.randn(POLY_DEGREE, 1) * 5
b_target = torch.randn(1) * 5


def make_features(x):
    """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)


def f(x):
    """Approximated function."""
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    """Creates a string description of a polynomial."""
    result = 'y = '
    for i, w in enumerate(W):
        result += '{:+.2f} x^{} '.format(w, i + 1)
    result += '{:+.2f}'.format(b[0])
    return result


def get_batch(batch_size=32):
    """Builds a batch i.e. (x, f(x)) pair."""
    random = torch.randn(batch_size)
    x = make_features(random)
    y = f(x)
    return x, y


# Define model
fc = torch.nn.Linear(W_target.size(0), 1)

for batch_idx in count(1):
    # Get data
    batch_x, batch_y = get_batch()

    # Reset gradients
    fc.zero_grad()

    # Forward pass
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    results["losses"].append(loss)  # port: the test reads the losses

    # Backward pass
    output.backward()

    # Apply gradients
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)

    # Stop criterion
    if loss < 1e-3:
        break
    if batch_idx == 5000:  # port: a bound, so that a run that does not learn ends
        break

print('Loss: {:.6f} after {} batches'.format(loss, batch_idx))
print('==> Learned function:\t' + poly_desc(next(fc.parameters()).view(-1), fc.bias))  # port: tricycle's is fc.weights (in, out)
print('==> Actual function:\t' + poly_desc(W_target.view(-1), b_target))
results["learned"] = torch.cat([next(fc.parameters()).view(-1), fc.bias]).tolist()  # port: the test reads
results["actual"] = torch.cat([W_target.view(-1), b_target]).tolist()  # port: as above
results["batches"] = batch_idx  # port: as above
'''

SUPER_RESOLUTION = r"""
from __future__ import print_function
from math import log10

import numpy as np  # port: the synthetic images below
import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim
import torch.utils.data as data
from torch.utils.data import DataLoader


# port: model.py, verbatim but for the weights' names
class Net(nn.Module):
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        # port: conv.weight by position below: tricycle's convolutions name it weights
        init.orthogonal_(next(self.conv1.parameters()), init.calculate_gain('relu'))  # port
        init.orthogonal_(next(self.conv2.parameters()), init.calculate_gain('relu'))  # port
        init.orthogonal_(next(self.conv3.parameters()), init.calculate_gain('relu'))  # port
        init.orthogonal_(next(self.conv4.parameters()))  # port: as above


# port: dataset.py's DatasetFromFolder, over synthetic images in place of BSDS300's files
rng = np.random.default_rng(0)
def load_img(index):  # port: a smooth random 24x24 luminance image in [0, 1], not a file
    ys, xs = np.mgrid[:24, :24] / 24.0
    a, b, c, d = rng.uniform(0.5, 3.0, 4)
    return (0.5 + 0.25 * np.sin(a * 6 * ys + b) + 0.25 * np.cos(c * 6 * xs + d))[None]


def input_transform(img):  # port: torchvision's Resize(crop_size // upscale_factor): 3x3 means
    return torch.from_numpy(img.reshape(1, 8, 3, 8, 3).mean(axis=(2, 4)).astype(np.float32))


def target_transform(img):  # port: torchvision's ToTensor()
    return torch.from_numpy(img.astype(np.float32))


class DatasetFromFolder(data.Dataset):
    def __init__(self, image_dir, input_transform=None, target_transform=None):
        super(DatasetFromFolder, self).__init__()
        self.image_filenames = [load_img(x) for x in range(image_dir)]  # port: images, not files

        self.input_transform = input_transform
        self.target_transform = target_transform

    def __getitem__(self, index):
        input = self.image_filenames[index]  # port: the image itself, not its file
        target = input.copy()
        if self.input_transform:
            input = self.input_transform(input)
        if self.target_transform:
            target = self.target_transform(target)

        return input, target

    def __len__(self):
        return len(self.image_filenames)


# port: main.py from here; argparse's options as constants, smaller
class opt:  # port: as above
    upscale_factor = 3
    batchSize = 16  # port: 64
    testBatchSize = 10
    nEpochs = 2
    lr = 0.003  # port: 0.01
    accel = False
    threads = 2  # port: 4 loader processes; torch warns above the 2 cores of a small machine
    seed = 123

print(opt)

torch.manual_seed(opt.seed)


if opt.accel and torch.accelerator.is_available():
    device = torch.accelerator.current_accelerator()
else:
    device = torch.device("cpu")

print('===> Loading datasets')
train_set = DatasetFromFolder(192, input_transform, target_transform)  # port: get_training_set
test_set = DatasetFromFolder(20, input_transform, target_transform)  # port: get_test_set
training_data_loader = DataLoader(dataset=train_set, num_workers=opt.threads, batch_size=opt.batchSize, shuffle=True)
testing_data_loader = DataLoader(dataset=test_set, num_workers=opt.threads, batch_size=opt.testBatchSize, shuffle=False)

print('===> Building model')
model = Net(upscale_factor=opt.upscale_factor).to(device)
criterion = nn.MSELoss()

optimizer = optim.Adam(model.parameters(), lr=opt.lr)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)

        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
        results["losses"].append(loss.item())  # port: the test reads the losses

        print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(epoch, iteration, len(training_data_loader), loss.item()))

    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)

            prediction = model(input)
            mse = criterion(prediction, target)
            psnr = 10 * log10(1 / mse.item())
            avg_psnr += psnr
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
    results["psnr"] = results.get("psnr", []) + [avg_psnr / len(testing_data_loader)]  # port
    results["prediction_shape"] = tuple(prediction.shape)  # port: the test reads it


def checkpoint(epoch):
    model_out_path = "model_epoch_{}.pth".format(epoch)
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))

for epoch in range(1, opt.nEpochs + 1):
    train(epoch)
    test()
    checkpoint(epoch)

# super_resolve.py on a test image, with the last checkpoint
with open("model_epoch_{}.pth".format(opt.nEpochs), 'rb') as f:  # port: opt.model
    safe_globals = [
        Net,
        torch.nn.modules.activation.ReLU,
        torch.nn.modules.conv.Conv2d,
        torch.nn.modules.pixelshuffle.PixelShuffle,
    ]
    with torch.serialization.safe_globals(safe_globals):
        model = torch.load(f)
y = test_set[0][0][0]  # port: the Y channel of an image, (H, W)
input = y.view(1, -1, y.shape[0], y.shape[1])  # port: img_to_tensor(y).view(1, -1, y.size[1], y.size[0])
out = model(input)
out = out.cpu()
out_img_y = out[0].detach().numpy()
out_img_y *= 255.0
out_img_y = out_img_y.clip(0, 255)
results["out_img_y_shape"], results["out_img_y_type"] = out_img_y.shape, type(out_img_y)  # port: saved with PIL
"""

SIAMESE = r'''
from __future__ import print_function
import random, copy  # port: argparse's options are constants below
import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import Dataset
from torch.optim.lr_scheduler import StepLR


# port: torchvision.models.resnet18 in place of torchvision: its ResNet and BasicBlock, trimmed
# to one block a stage and a quarter of the widths
def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 16  # port: 64 in torchvision
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 16, layers[0])  # port: 64
        self.layer2 = self._make_layer(block, 32, layers[1], stride=2)  # port: 128
        self.layer3 = self._make_layer(block, 64, layers[2], stride=2)  # port: 256
        self.layer4 = self._make_layer(block, 128, layers[3], stride=2)  # port: 512
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(128 * block.expansion, num_classes)  # port: 512

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                # port: m.weight by position: tricycle's convolutions name it weights
                nn.init.kaiming_normal_(next(m.parameters()), mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                # port: m.weight and m.bias by position: tricycle's norms name them gamma, beta
                weight, bias = m.parameters()  # port: as above
                nn.init.constant_(weight, 1)
                nn.init.constant_(bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


def resnet18(weights=None):  # port: one BasicBlock a stage, not two
    return ResNet(BasicBlock, [1, 1, 1, 1])


class SiameseNetwork(nn.Module):
    """
        Siamese network for image similarity estimation.
        The network is composed of two identical networks, one for each input.
        The output of each network is concatenated and passed to a linear layer. 
        The output of the linear layer passed through a sigmoid function.
        `"FaceNet" <https://arxiv.org/pdf/1503.03832.pdf>`_ is a variant of the Siamese network.
        This implementation varies from FaceNet as we use the `ResNet-18` model from
        `"Deep Residual Learning for Image Recognition" <https://arxiv.org/pdf/1512.03385.pdf>`_ as our feature extractor.
        In addition, we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    """
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        # get resnet model
        self.resnet = resnet18(weights=None)  # port: torchvision.models.resnet18, above

        # over-write the first conv layer to be able to read MNIST images
        # as resnet18 reads (3,x,x) where 3 is RGB channels
        # whereas MNIST has (1,x,x) where 1 is a gray-scale channel
        self.resnet.conv1 = nn.Conv2d(1, 16, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)  # port: 64 channels
        self.fc_in_features = self.resnet.fc.in_features
        
        # remove the last layer of resnet18 (linear layer which is before avgpool layer)
        self.resnet = torch.nn.Sequential(*(list(self.resnet.children())[:-1]))

        # add linear layers to compare between the features of the two images
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 256),
            nn.ReLU(inplace=True),
            nn.Linear(256, 1),
        )

        self.sigmoid = nn.Sigmoid()

        # initialize the weights
        self.resnet.apply(self.init_weights)
        self.fc.apply(self.init_weights)
        
    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(next(m.parameters()))  # port: tricycle's m.weights
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.resnet(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        # get two images' features
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)

        # concatenate both images' features
        output = torch.cat((output1, output2), 1)

        # pass the concatenation to the linear layers
        output = self.fc(output)

        # pass the out of the linear layers to sigmoid layer
        output = self.sigmoid(output)
        
        return output


class FakeMNIST:  # port: MNIST's place: 16x16 uint8 images, 10 noisy templates
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        templates = np.random.default_rng(0).random((10, 16, 16)) > 0.6
        targets = rng.integers(0, 10, n)
        images = 200 * templates[targets] + rng.integers(0, 56, (n, 16, 16))
        self.data = torch.from_numpy(images.astype(np.uint8))
        self.targets = torch.from_numpy(targets)


class APP_MATCHER(Dataset):
    def __init__(self, root, train, download=False):
        super(APP_MATCHER, self).__init__()

        # get MNIST dataset
        self.dataset = FakeMNIST(512 if train else 200, seed=1 if train else 2)  # port: MNIST
        
        # as `self.dataset.data`'s shape is (Nx28x28), where N is the number of
        # examples in MNIST dataset, a single example has the dimensions of
        # (28x28) for (WxH), where W and H are the width and the height of the image. 
        # However, every example should have (CxWxH) dimensions where C is the number 
        # of channels to be passed to the network. As MNIST contains gray-scale images, 
        # we add an additional dimension to corresponds to the number of channels.
        self.data = self.dataset.data.unsqueeze(1).clone()

        self.group_examples()

    def group_examples(self):
        """
            To ease the accessibility of data based on the class, we will use `group_examples` to group 
            examples based on class. 
            
            Every key in `grouped_examples` corresponds to a class in MNIST dataset. For every key in 
            `grouped_examples`, every value will conform to all of the indices for the MNIST 
            dataset examples that correspond to that key.
        """

        # get the targets from MNIST dataset
        np_arr = np.array(self.dataset.targets.clone(), dtype=None, copy=None)
        
        # group examples based on class
        self.grouped_examples = {}
        for i in range(0,10):
            self.grouped_examples[i] = np.where((np_arr==i))[0]
    
    def __len__(self):
        return self.data.shape[0]
    
    def __getitem__(self, index):
        """
            For every example, we will select two images. There are two cases, 
            positive and negative examples. For positive examples, we will have two 
            images from the same class. For negative examples, we will have two images 
            from different classes.

            Given an index, if the index is even, we will pick the second image from the same class, 
            but it won't be the same image we chose for the first class. This is used to ensure the positive
            example isn't trivial as the network would easily distinguish the similarity between same images. However,
            if the network were given two different images from the same class, the network will need to learn 
            the similarity between two different images representing the same class. If the index is odd, we will 
            pick the second image from a different class than the first image.
        """

        # pick some random class for the first image
        selected_class = random.randint(0, 9)

        # pick a random index for the first image in the grouped indices based of the label
        # of the class
        random_index_1 = random.randint(0, self.grouped_examples[selected_class].shape[0]-1)
        
        # pick the index to get the first image
        index_1 = self.grouped_examples[selected_class][random_index_1]

        # get the first image
        image_1 = self.data[index_1].clone().float()

        # same class
        if index % 2 == 0:
            # pick a random index for the second image
            random_index_2 = random.randint(0, self.grouped_examples[selected_class].shape[0]-1)
            
            # ensure that the index of the second image isn't the same as the first image
            while random_index_2 == random_index_1:
                random_index_2 = random.randint(0, self.grouped_examples[selected_class].shape[0]-1)
            
            # pick the index to get the second image
            index_2 = self.grouped_examples[selected_class][random_index_2]

            # get the second image
            image_2 = self.data[index_2].clone().float()

            # set the label for this example to be positive (1)
            target = torch.tensor(1, dtype=torch.float)
        
        # different class
        else:
            # pick a random class
            other_selected_class = random.randint(0, 9)

            # ensure that the class of the second image isn't the same as the first image
            while other_selected_class == selected_class:
                other_selected_class = random.randint(0, 9)

            
            # pick a random index for the second image in the grouped indices based of the label
            # of the class
            random_index_2 = random.randint(0, self.grouped_examples[other_selected_class].shape[0]-1)

            # pick the index to get the second image
            index_2 = self.grouped_examples[other_selected_class][random_index_2]

            # get the second image
            image_2 = self.data[index_2].clone().float()

            # set the label for this example to be negative (0)
            target = torch.tensor(0, dtype=torch.float)

        return image_1, image_2, target


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        results["losses"].append(loss.item())  # port: the test reads the losses
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(images_1), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
            if args.dry_run:
                break


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0

    # we aren't using `TripletLoss` as the MNIST dataset is simple, so `BCELoss` can do the trick.
    criterion = nn.BCELoss()

    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()  # sum up batch loss
            pred = torch.where(outputs > 0.5, 1, 0)  # get the index of the max log-probability
            correct += pred.eq(targets.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)

    # for the 1st epoch, the average loss is 0.0001 and the accuracy 97-98%
    # using default settings. After completing the 10th epoch, the average
    # loss is 0.0000 and the accuracy 99.5-100% using default settings.
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    results["accuracy"] = correct / len(test_loader.dataset)  # port: the test reads these
    results["correct_type"], results["pred_shape"] = type(correct), tuple(pred.shape)  # port


def main():
    # Training settings
    class args:  # port: argparse's defaults as constants, smaller
        batch_size = 64
        test_batch_size = 1000
        epochs = 3  # port: 14
        lr = 1.0
        gamma = 0.7
        no_accel = False
        dry_run = False
        seed = 1
        log_interval = 10
        save_model = True  # port: the test checks the saved file
    
    use_accel = not args.no_accel and torch.accelerator.is_available()

    torch.manual_seed(args.seed)
    random.seed(args.seed)  # port: the pairs are drawn with Python's random; the test repeats them


    if use_accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")
    
    print(f"Using device: {device}")

    train_kwargs = {'batch_size': args.batch_size}
    test_kwargs = {'batch_size': args.test_batch_size}
    if use_accel:
        accel_kwargs = {'num_workers': 1,
                       'pin_memory': True,
                       'shuffle': True}
        train_kwargs.update(accel_kwargs)
        test_kwargs.update(accel_kwargs)

    train_dataset = APP_MATCHER('../data', train=True, download=True)
    test_dataset = APP_MATCHER('../data', train=False)
    train_loader = torch.utils.data.DataLoader(train_dataset,**train_kwargs)
    test_loader = torch.utils.data.DataLoader(test_dataset, **test_kwargs)

    model = SiameseNetwork().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)

    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()

    if args.save_model:
        torch.save(model.state_dict(), "siamese_network.pt")


if __name__ == '__script__':  # port: run by the test, not as __main__
    main()
'''


def run(script: str, folder, monkeypatch) -> dict:
    """Runs ``script`` in ``folder`` as the module ``__script__`` (importable by that name, so
    ``torch.save(model)`` pickles its classes) and returns its ``results``."""
    folder.mkdir()
    monkeypatch.chdir(folder)
    module = types.ModuleType("__script__")
    module.results = {"losses": []}
    monkeypatch.setitem(sys.modules, "__script__", module)
    exec(compile(script, "<script>", "exec"), module.__dict__)
    return module.results


def both(script: str, tmp_path, monkeypatch) -> tuple[dict, dict]:
    """The script under torch and, with ``torch`` replaced by ``tricycle``, under tricycle; one
    BLAS thread each (a shared machine: the examples' small products need no more)."""
    torch = pytest.importorskip("torch")
    with one_thread(torch):
        theirs = run(script, tmp_path / "torch", monkeypatch)
    with one_thread(torch):
        ours = run(script.replace("torch", "tricycle"), tmp_path / "tricycle", monkeypatch)
    return theirs, ours


def test_mnist(tmp_path, monkeypatch):
    theirs, ours = both(MNIST, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["correct_type"] is int and ours["pred_shape"] == (200, 1)
    for results in theirs, ours:
        learned(results, chance=0.1, margin=0.6)
        assert results["lr"] == pytest.approx(1.0 * 0.7**2)  # StepLR after two epochs
    import tricycle  # noqa: PLC0415

    state = tricycle.load(tmp_path / "tricycle" / "mnist_cnn.pt")
    assert sorted(state) == sorted(f"{layer}.{name}" for layer in ("conv1", "conv2", "fc1", "fc2")
                                   for name in ("weights", "bias"))  # fmt: skip


def test_vae(tmp_path, monkeypatch):
    theirs, ours = both(VAE, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["comparison_shape"] == (16, 1, 8, 8) and ours["sample_shape"] == (64, 1, 8, 8)
    for results in theirs, ours:
        losses = results["losses"]  # the average loss of each epoch
        assert losses[-1] < 0.8 * losses[0], losses
        assert results["test_loss"] < 0.8 * losses[0]
        low, high = results["sample_range"]
        assert 0 < low < high < 1  # the decoder's sigmoid
    # both reach about the same loss (their initial weights differ)
    assert ours["test_loss"] == pytest.approx(theirs["test_loss"], rel=0.25)


def test_time_sequence_prediction(tmp_path, monkeypatch):
    theirs, ours = both(TIME_SEQUENCE, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["y_shape"] == (3, 29 + 10) and ours["y_type"] is np.ndarray
    for results in theirs, ours:
        losses, test_losses = results["losses"], results["test_losses"]
        assert len(losses) == 2 * 20  # LBFGS: max_iter=20 evaluations a step, as torch's
        assert losses[-1] < 0.05 * losses[0], losses
        assert test_losses[-1] < 0.02, test_losses


def test_regression(tmp_path, monkeypatch):
    theirs, ours = both(REGRESSION, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    for results in theirs, ours:
        assert results["losses"][-1] < 1e-3 and results["batches"] < 5000
        np.testing.assert_allclose(results["learned"], results["actual"], atol=0.25)


def test_super_resolution(tmp_path, monkeypatch):
    theirs, ours = both(SUPER_RESOLUTION, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["out_img_y_shape"] == (1, 24, 24) and ours["out_img_y_type"] is np.ndarray
    for results in theirs, ours:
        losses, psnr = results["losses"], results["psnr"]
        assert np.mean(losses[-3:]) < 0.2 * np.mean(losses[:3]), losses
        assert psnr[-1] > psnr[0] and psnr[-1] > 15, psnr
    assert (tmp_path / "tricycle" / "model_epoch_2.pth").exists()


def test_siamese_network(tmp_path, monkeypatch):
    theirs, ours = both(SIAMESE, tmp_path, monkeypatch)
    same_kind(theirs, ours)
    assert ours["correct_type"] is int and ours["pred_shape"] == (200,)
    for results in theirs, ours:
        learned(results, chance=0.5, margin=0.3)
    assert (tmp_path / "tricycle" / "siamese_network.pt").exists()


# ---------------------------------------------------------------------- the fixes they needed


def test_linear_and_embedding_have_torchs_sizes():
    torch = pytest.importorskip("torch")
    import tricycle.nn as nn  # noqa: PLC0415

    ours, theirs = nn.Linear(5, 3), torch.nn.Linear(5, 3)
    assert (ours.in_features, ours.out_features) == (theirs.in_features, theirs.out_features)
    ours, theirs = nn.Embedding(7, 4), torch.nn.Embedding(7, 4)
    assert (ours.num_embeddings, ours.embedding_dim) == (7, 4)
    assert (theirs.num_embeddings, theirs.embedding_dim) == (7, 4)
    # a head replaced as the siamese example does: a new Linear from the old one's in_features
    body = nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 4))
    body.sequence[-1] = nn.Linear(body.sequence[-1].in_features, 2)
    assert body(np.ones((3, 6), np.float32)).shape == (3, 2)


@pytest.mark.parametrize(
    "a, b", [(1, 0), (1.0, 0), (2, 0.5), (True, False), (np.float64(1.5), 0), (-1, 2.5)]
)
def test_where_of_two_numbers_as_torch(a, b):
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = np.array([[0.2, 0.7], [0.9, 0.1]], np.float32)
    ours = tricycle.where(tricycle.tensor(x) > 0.5, a, b)
    theirs = torch.where(torch.tensor(x) > 0.5, a, b)
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad


def test_where_with_a_tensor_keeps_its_gradient():
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    x = np.array([[0.2, 0.7], [0.9, 0.1]], np.float32)
    ours = tricycle.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    for value, lib in ((ours, tricycle), (theirs, torch)):
        (lib.where(value > 0.5, value * 3, 1) ** 2).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())
    with pytest.raises(TypeError, match=r"where: at least one of condition, a and b"):
        tricycle.where(x > 0.5, 1, 0)  # nothing says which device: numpy's where is for that


def test_torchs_weight_on_a_layer_names_its_tensors():
    torch = pytest.importorskip("torch")
    import tricycle.nn as nn  # noqa: PLC0415

    with pytest.raises(AttributeError, match=r"^Dense has no 'weight' \(torch's name\); its "
                       r"tensors are weights \(5, 3\), bias \(3,\): a Linear's weights are "
                       r"\(in, out\), the transpose of torch's weight"):  # fmt: skip
        _ = nn.Linear(5, 3).weight
    with pytest.raises(AttributeError, match=r"tensors are gamma \(4,\), beta \(4,\), running"):
        _ = nn.BatchNorm2d(4).weight
    assert not hasattr(nn.Conv2d(1, 2, 3), "weight")  # hasattr and getattr's default as before
    assert getattr(nn.ReLU(), "weight", None) is None
    # a layer with a weight of its own keeps it: Bilinear's, torch's (out, in1, in2)
    ours, theirs = nn.Bilinear(2, 3, 4), torch.nn.Bilinear(2, 3, 4)
    assert ours.weight.shape == tuple(theirs.weight.shape)
