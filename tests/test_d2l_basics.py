"""The book "Dive into Deep Learning" (d2l-ai/d2l-en), its PyTorch code of the first model
chapters, run cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in its text and
in the text of the book's own library, ``d2l/torch.py`` (tests/d2l_port.py builds it):
docs/pytorch.md's promise, the method of tests/test_uvadlc_intro.py.

- chapter_linear-regression: oo-design (``add_to_class``, ``HyperParameters``'
  ``save_hyperparameters`` reading the caller's frame, ``ProgressBoard``), synthetic-regression-
  data (the hand-written generator over ``d2l.tensor(indices)`` and ``get_tensorloader``'s
  ``TensorDataset``/``DataLoader``), linear-regression-scratch (``d2l.normal(...,
  requires_grad=True)``, the book's ``SGD`` updating leaves in place under ``no_grad``,
  ``param.grad.zero_()``, ``Trainer.fit_epoch``), linear-regression-concise (``nn.LazyLinear``
  initialised before its first call, ``nn.MSELoss``, ``torch.optim.SGD``), weight-decay (the
  L2 penalty by hand, then ``weight_decay`` in a parameter group);
- chapter_linear-classification: image-classification-dataset (the chapter's own
  ``FashionMNIST`` over ``torchvision``'s ``Compose``/``Resize``/``ToTensor``, its
  ``DataLoader`` and the images shown with their labels), softmax-regression-scratch (``softmax`` by broadcasting,
  ``y_hat[[0, 1], y]``, a model whose ``parameters()`` is a list, the misclassified images
  picked by a boolean mask and shown) and softmax-regression-concise (``F.cross_entropy`` with
  ``reduction=``), on sklearn's digits in Fashion-MNIST's place;
- chapter_multilayer-perceptrons: mlp (the activations and their gradients drawn by
  ``d2l.plot``: ``backward(torch.ones_like(x), retain_graph=True)``, ``x.grad.data.zero_()``),
  mlp-implementation (``nn.Parameter``s, ``relu`` as ``torch.max`` of two tensors, then
  ``nn.Sequential``), numerical-stability-and-init (the sigmoid's vanishing gradient, a
  product of 100 random matrices) and dropout (``dropout_layer`` by hand with
  ``self.training``, then ``nn.Dropout``). kaggle-house-price is left out: it is pandas'
  (``read_csv``, ``get_dummies``, ``fillna``, ``loc`` over DataFrames: a large stand-in) more
  than the library's.

The code is the book's PyTorch tab (its ``tab.selected`` branches resolved, as the book's
PyTorch notebooks have it); each changed line ends in ``# port:`` and says why (a notebook's
magic; a layer's ``weight`` taken by position: tricycle's is ``weights``, a Linear's (in,
out), documented). Each section runs under torch with the book's library (skipped without
torch), then under tricycle with the same library in tricycle's words, both seeded on the
CPU; both print the same lines (numbers and reprs aside), both learn (the losses that the
book's progress board records fall; the classifiers' validation accuracy is far above
chance), the book's own checks hold (the estimated ``w`` and ``b`` near the true ones, the
softmax rows summing to 1, weight decay shrinking ``w``). Then the sections' models are given
torch's weights (``nn.from_torch``; the hand-written ones, their tensors) and give torch's
outputs, losses and gradients, forward and backward, and a step of the book's optimizers
gives torch's parameters. The one fix the chapters needed: a lazy layer's ``weight.data``
before its first call is torch's empty tensor (``LinearRegression``'s initialisation lines;
tricycle/nn/lazy.py, tested in tests/test_vision_ops.py). The last test checks that the
library's text held in tests/d2l_port.py is the book's, but for its ``# port:`` lines.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests import d2l_port
from tests.d2l_port import both
from tests.test_torch_examples_b import numbers
from tests.test_uvadlc_intro import kinds

pytestmark = [  # torch's, of weight-decay's float(l2_penalty(model.w)) as the book writes it
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar"),
]

OO_DESIGN = r'''
import time
import numpy as np
from d2l import torch as d2l
import torch
from torch import nn
# %%
def add_to_class(Class):  #@save
    """Register functions as methods in created class."""
    def wrapper(obj):
        setattr(Class, obj.__name__, obj)
    return wrapper
# %%
class A:
    def __init__(self):
        self.b = 1

a = A()
# %%
@add_to_class(A)
def do(self):
    print('Class attribute "b" is', self.b)

a.do()
# %%
class HyperParameters:  #@save
    """The base class of hyperparameters."""
    def save_hyperparameters(self, ignore=[]):
        raise NotImplemented
# %%
# Call the fully implemented HyperParameters class saved in d2l
class B(d2l.HyperParameters):
    def __init__(self, a, b, c):
        self.save_hyperparameters(ignore=['c'])
        print('self.a =', self.a, 'self.b =', self.b)
        print('There is no self.c =', not hasattr(self, 'c'))

b = B(a=1, b=2, c=3)
# %%
class ProgressBoard(d2l.HyperParameters):  #@save
    """The board that plots data points in animation."""
    def __init__(self, xlabel=None, ylabel=None, xlim=None,
                 ylim=None, xscale='linear', yscale='linear',
                 ls=['-', '--', '-.', ':'], colors=['C0', 'C1', 'C2', 'C3'],
                 fig=None, axes=None, figsize=(3.5, 2.5), display=True):
        self.save_hyperparameters()

    def draw(self, x, y, label, every_n=1):
        raise NotImplemented
# %%
board = d2l.ProgressBoard('x')
for x in np.arange(0, 10, 0.1):
    board.draw(x, np.sin(x), 'sin', every_n=2)
    board.draw(x, np.cos(x), 'cos', every_n=10)
# %%
class Module(d2l.nn_Module, d2l.HyperParameters):  #@save
    """The base class of models."""
    def __init__(self, plot_train_per_epoch=2, plot_valid_per_epoch=1):
        super().__init__()
        self.save_hyperparameters()
        self.board = ProgressBoard()

    def loss(self, y_hat, y):
        raise NotImplementedError

    def forward(self, X):
        assert hasattr(self, 'net'), 'Neural network is defined'
        return self.net(X)

    def plot(self, key, value, train):
        """Plot a point in animation."""
        assert hasattr(self, 'trainer'), 'Trainer is not inited'
        self.board.xlabel = 'epoch'
        if train:
            x = self.trainer.train_batch_idx / \
                self.trainer.num_train_batches
            n = self.trainer.num_train_batches / \
                self.plot_train_per_epoch
        else:
            x = self.trainer.epoch + 1
            n = self.trainer.num_val_batches / \
                self.plot_valid_per_epoch
        self.board.draw(x, d2l.numpy(d2l.to(value, d2l.cpu())),
                        ('train_' if train else 'val_') + key,
                        every_n=int(n))

    def training_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('loss', l, train=True)
        return l

    def validation_step(self, batch):
        l = self.loss(self(*batch[:-1]), batch[-1])
        self.plot('loss', l, train=False)

    def configure_optimizers(self):
        raise NotImplementedError
# %%
class DataModule(d2l.HyperParameters):  #@save
    """The base class of data."""
    def __init__(self, root='../data', num_workers=4):
        self.save_hyperparameters()

    def get_dataloader(self, train):
        raise NotImplementedError

    def train_dataloader(self):
        return self.get_dataloader(train=True)

    def val_dataloader(self):
        return self.get_dataloader(train=False)
# %%
class Trainer(d2l.HyperParameters):  #@save
    """The base class for training models with data."""
    def __init__(self, max_epochs, num_gpus=0, gradient_clip_val=0):
        self.save_hyperparameters()
        assert num_gpus == 0, 'No GPU support yet'

    def prepare_data(self, data):
        self.train_dataloader = data.train_dataloader()
        self.val_dataloader = data.val_dataloader()
        self.num_train_batches = len(self.train_dataloader)
        self.num_val_batches = (len(self.val_dataloader)
                                if self.val_dataloader is not None else 0)

    def prepare_model(self, model):
        model.trainer = self
        model.board.xlim = [0, self.max_epochs]
        self.model = model

    def fit(self, model, data):
        self.prepare_data(data)
        self.prepare_model(model)
        self.optim = model.configure_optimizers()
        self.epoch = 0
        self.train_batch_idx = 0
        self.val_batch_idx = 0
        for self.epoch in range(self.max_epochs):
            self.fit_epoch()

    def fit_epoch(self):
        raise NotImplementedError
'''

SYNTHETIC_DATA = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
import random
# %%
class SyntheticRegressionData(d2l.DataModule):  #@save
    """Synthetic data for linear regression."""
    def __init__(self, w, b, noise=0.01, num_train=1000, num_val=1000, 
                 batch_size=32):
        super().__init__()
        self.save_hyperparameters()
        n = num_train + num_val
        self.X = d2l.randn(n, len(w))
        noise = d2l.randn(n, 1) * noise
        self.y = d2l.matmul(self.X, d2l.reshape(w, (-1, 1))) + b + noise
# %%
data = SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
# %%
print('features:', data.X[0],'\nlabel:', data.y[0])
# %%
@d2l.add_to_class(SyntheticRegressionData)
def get_dataloader(self, train):
    if train:
        indices = list(range(0, self.num_train))
        # The examples are read in random order
        random.shuffle(indices)
    else:
        indices = list(range(self.num_train, self.num_train+self.num_val))
    for i in range(0, len(indices), self.batch_size):
        batch_indices = d2l.tensor(indices[i: i+self.batch_size])
        yield self.X[batch_indices], self.y[batch_indices]
# %%
X, y = next(iter(data.train_dataloader()))
print('X shape:', X.shape, '\ny shape:', y.shape)
# %%
@d2l.add_to_class(d2l.DataModule)  #@save
def get_tensorloader(self, tensors, train, indices=slice(0, None)):
    tensors = tuple(a[indices] for a in tensors)
    dataset = torch.utils.data.TensorDataset(*tensors)
    return torch.utils.data.DataLoader(dataset, self.batch_size,
                                       shuffle=train)
# %%
@d2l.add_to_class(SyntheticRegressionData)  #@save
def get_dataloader(self, train):
    i = slice(0, self.num_train) if train else slice(self.num_train, None)
    return self.get_tensorloader((self.X, self.y), train, i)
# %%
X, y = next(iter(data.train_dataloader()))
print('X shape:', X.shape, '\ny shape:', y.shape)
# %%
len(data.train_dataloader())
'''

LINEAR_SCRATCH = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
# %%
class LinearRegressionScratch(d2l.Module):  #@save
    """The linear regression model implemented from scratch."""
    def __init__(self, num_inputs, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.w = d2l.normal(0, sigma, (num_inputs, 1), requires_grad=True)
        self.b = d2l.zeros(1, requires_grad=True)
# %%
@d2l.add_to_class(LinearRegressionScratch)  #@save
def forward(self, X):
    return d2l.matmul(X, self.w) + self.b
# %%
@d2l.add_to_class(LinearRegressionScratch)  #@save
def loss(self, y_hat, y):
    l = (y_hat - y) ** 2 / 2
    return d2l.reduce_mean(l)
# %%
class SGD(d2l.HyperParameters):  #@save
    """Minibatch stochastic gradient descent."""
    def __init__(self, params, lr):
        self.save_hyperparameters()

    def step(self):
        for param in self.params:
            param -= self.lr * param.grad

    def zero_grad(self):
        for param in self.params:
            if param.grad is not None:
                param.grad.zero_()
# %%
@d2l.add_to_class(LinearRegressionScratch)  #@save
def configure_optimizers(self):
    return SGD([self.w, self.b], self.lr)
# %%
@d2l.add_to_class(d2l.Trainer)  #@save
def prepare_batch(self, batch):
    return batch
# %%
@d2l.add_to_class(d2l.Trainer)  #@save
def fit_epoch(self):
    self.model.train()        
    for batch in self.train_dataloader:        
        loss = self.model.training_step(self.prepare_batch(batch))
        self.optim.zero_grad()
        with torch.no_grad():
            loss.backward()
            if self.gradient_clip_val > 0:  # To be discussed later
                self.clip_gradients(self.gradient_clip_val, self.model)
            self.optim.step()
        self.train_batch_idx += 1
    if self.val_dataloader is None:
        return
    self.model.eval()
    for batch in self.val_dataloader:
        with torch.no_grad():            
            self.model.validation_step(self.prepare_batch(batch))
        self.val_batch_idx += 1
# %%
model = LinearRegressionScratch(2, lr=0.03)
data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
trainer = d2l.Trainer(max_epochs=3)
trainer.fit(model, data)
# %%
with torch.no_grad():
    print(f'error in estimating w: {data.w - d2l.reshape(model.w, data.w.shape)}')
    print(f'error in estimating b: {data.b - model.b}')
'''

LINEAR_CONCISE = r'''
from d2l import torch as d2l
import numpy as np
import torch
from torch import nn
# %%
class LinearRegression(d2l.Module):  #@save
    """The linear regression model implemented with high-level APIs."""
    def __init__(self, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.LazyLinear(1)
        next(self.net.parameters()).data.normal_(0, 0.01)  # port: self.net.weight by position: a Linear's is weights (in, out) (documented)
        self.net.bias.data.fill_(0)
# %%
@d2l.add_to_class(LinearRegression)  #@save
def forward(self, X):
    return self.net(X)
# %%
@d2l.add_to_class(LinearRegression)  #@save
def loss(self, y_hat, y):
    fn = nn.MSELoss()
    return fn(y_hat, y)
# %%
@d2l.add_to_class(LinearRegression)  #@save
def configure_optimizers(self):
    return torch.optim.SGD(self.parameters(), self.lr)
# %%
model = LinearRegression(lr=0.03)
data = d2l.SyntheticRegressionData(w=d2l.tensor([2, -3.4]), b=4.2)
trainer = d2l.Trainer(max_epochs=3)
trainer.fit(model, data)
# %%
@d2l.add_to_class(LinearRegression)  #@save
def get_w_b(self):
    return (next(self.net.parameters()).data, self.net.bias.data)  # port: as above (tricycle's w is (in, out): the book reshapes it)

w, b = model.get_w_b()
# %%
print(f'error in estimating w: {data.w - d2l.reshape(w, data.w.shape)}')
print(f'error in estimating b: {data.b - b}')
'''

WEIGHT_DECAY = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
from torch import nn
# %%
class Data(d2l.DataModule):
    def __init__(self, num_train, num_val, num_inputs, batch_size):
        self.save_hyperparameters()                
        n = num_train + num_val 
        self.X = d2l.randn(n, num_inputs)
        noise = d2l.randn(n, 1) * 0.01
        w, b = d2l.ones((num_inputs, 1)) * 0.01, 0.05
        self.y = d2l.matmul(self.X, w) + b + noise

    def get_dataloader(self, train):
        i = slice(0, self.num_train) if train else slice(self.num_train, None)
        return self.get_tensorloader([self.X, self.y], train, i)
# %%
def l2_penalty(w):
    return d2l.reduce_sum(w**2) / 2
# %%
class WeightDecayScratch(d2l.LinearRegressionScratch):
    def __init__(self, num_inputs, lambd, lr, sigma=0.01):
        super().__init__(num_inputs, lr, sigma)
        self.save_hyperparameters()
        
    def loss(self, y_hat, y):
        return (super().loss(y_hat, y) +
                self.lambd * l2_penalty(self.w))
# %%
data = Data(num_train=20, num_val=100, num_inputs=200, batch_size=5)
trainer = d2l.Trainer(max_epochs=10)

def train_scratch(lambd):    
    model = WeightDecayScratch(num_inputs=200, lambd=lambd, lr=0.01)
    model.board.yscale='log'
    trainer.fit(model, data)
    print('L2 norm of w:', float(l2_penalty(model.w)))
# %%
train_scratch(0)
# %%
train_scratch(3)
# %%
class WeightDecay(d2l.LinearRegression):
    def __init__(self, wd, lr):
        super().__init__(lr)
        self.save_hyperparameters()
        self.wd = wd

    def configure_optimizers(self):
        return torch.optim.SGD([
            {'params': next(self.net.parameters()), 'weight_decay': self.wd},  # port: self.net.weight by position: a Linear's is weights (documented)
            {'params': self.net.bias}], lr=self.lr)
# %%
model = WeightDecay(wd=3, lr=0.01)
model.board.yscale='log'
trainer.fit(model, data)

print('L2 norm of w:', float(l2_penalty(model.get_w_b()[0])))
"""

IMAGE_CLASSIFICATION_DATASET = r'''
# %matplotlib inline  # port: a notebook's magic
import time
from d2l import torch as d2l
import torch
import torchvision
from torchvision import transforms

d2l.use_svg_display()
# %%
class FashionMNIST(d2l.DataModule):  #@save
    """The Fashion-MNIST dataset."""
    def __init__(self, batch_size=64, resize=(28, 28)):
        super().__init__()
        self.save_hyperparameters()
        trans = transforms.Compose([transforms.Resize(resize),
                                    transforms.ToTensor()])
        self.train = torchvision.datasets.FashionMNIST(
            root=self.root, train=True, transform=trans, download=True)
        self.val = torchvision.datasets.FashionMNIST(
            root=self.root, train=False, transform=trans, download=True)
# %%
data = FashionMNIST(resize=(32, 32))
len(data.train), len(data.val)
# %%
data.train[0][0].shape
# %%
@d2l.add_to_class(FashionMNIST)  #@save
def text_labels(self, indices):
    """Return text labels."""
    labels = ['t-shirt', 'trouser', 'pullover', 'dress', 'coat',
              'sandal', 'shirt', 'sneaker', 'bag', 'ankle boot']
    return [labels[int(i)] for i in indices]
# %%
@d2l.add_to_class(FashionMNIST)  #@save
def get_dataloader(self, train):
    data = self.train if train else self.val
    return torch.utils.data.DataLoader(data, self.batch_size, shuffle=train,
                                       num_workers=self.num_workers)
# %%
X, y = next(iter(data.train_dataloader()))
print(X.shape, X.dtype, y.shape, y.dtype)
# %%
tic = time.time()
for X, y in data.train_dataloader():
    continue
f'{time.time() - tic:.2f} sec'
# %%
def show_images(imgs, num_rows, num_cols, titles=None, scale=1.5):  #@save
    """Plot a list of images."""
    raise NotImplementedError
# %%
@d2l.add_to_class(FashionMNIST)  #@save
def visualize(self, batch, nrows=1, ncols=8, labels=[]):
    X, y = batch
    if not labels:
        labels = self.text_labels(y)
    d2l.show_images(X.squeeze(1), nrows, ncols, titles=labels)

batch = next(iter(data.val_dataloader()))
data.visualize(batch)
'''

SOFTMAX_SCRATCH = r"""
from d2l import torch as d2l
import torch
# %%
X = d2l.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
d2l.reduce_sum(X, 0, keepdims=True), d2l.reduce_sum(X, 1, keepdims=True)
# %%
def softmax(X):
    X_exp = d2l.exp(X)
    partition = d2l.reduce_sum(X_exp, 1, keepdims=True)
    return X_exp / partition  # The broadcasting mechanism is applied here
# %%
X = d2l.rand((2, 5))
X_prob = softmax(X)
X_prob, d2l.reduce_sum(X_prob, 1)
# %%
class SoftmaxRegressionScratch(d2l.Classifier):
    def __init__(self, num_inputs, num_outputs, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W = torch.normal(0, sigma, size=(num_inputs, num_outputs),
                              requires_grad=True)
        self.b = torch.zeros(num_outputs, requires_grad=True)

    def parameters(self):
        return [self.W, self.b]
# %%
@d2l.add_to_class(SoftmaxRegressionScratch)
def forward(self, X):
    X = d2l.reshape(X, (-1, self.W.shape[0]))
    return softmax(d2l.matmul(X, self.W) + self.b)
# %%
y = d2l.tensor([0, 2])
y_hat = d2l.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
y_hat[[0, 1], y]
# %%
def cross_entropy(y_hat, y):
    return -d2l.reduce_mean(d2l.log(y_hat[list(range(len(y_hat))), y]))

cross_entropy(y_hat, y)
# %%
@d2l.add_to_class(SoftmaxRegressionScratch)
def loss(self, y_hat, y):
    return cross_entropy(y_hat, y)
# %%
data = d2l.FashionMNIST(batch_size=256)
model = SoftmaxRegressionScratch(num_inputs=784, num_outputs=10, lr=0.1)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
# %%
X, y = next(iter(data.val_dataloader()))
preds = d2l.argmax(model(X), axis=1)
preds.shape
# %%
wrong = d2l.astype(preds, y.dtype) != y
X, y, preds = X[wrong], y[wrong], preds[wrong]
labels = [a+'\n'+b for a, b in zip(
    data.text_labels(y), data.text_labels(preds))]
data.visualize([X, y], labels=labels)
"""

SOFTMAX_CONCISE = r'''
from d2l import torch as d2l
import torch
from torch import nn
from torch.nn import functional as F
# %%
class SoftmaxRegression(d2l.Classifier):  #@save
    """The softmax regression model."""
    def __init__(self, num_outputs, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(),
                                 nn.LazyLinear(num_outputs))

    def forward(self, X):
        return self.net(X)
# %%
@d2l.add_to_class(d2l.Classifier)  #@save
def loss(self, Y_hat, Y, averaged=True):
    Y_hat = d2l.reshape(Y_hat, (-1, Y_hat.shape[-1]))
    Y = d2l.reshape(Y, (-1,))
    return F.cross_entropy(
        Y_hat, Y, reduction='mean' if averaged else 'none')
# %%
data = d2l.FashionMNIST(batch_size=256)
model = SoftmaxRegression(num_outputs=10, lr=0.1)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
'''

MLP_IMPLEMENTATION = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
class MLPScratch(d2l.Classifier):
    def __init__(self, num_inputs, num_outputs, num_hiddens, lr, sigma=0.01):
        super().__init__()
        self.save_hyperparameters()
        self.W1 = nn.Parameter(torch.randn(num_inputs, num_hiddens) * sigma)
        self.b1 = nn.Parameter(torch.zeros(num_hiddens))
        self.W2 = nn.Parameter(torch.randn(num_hiddens, num_outputs) * sigma)
        self.b2 = nn.Parameter(torch.zeros(num_outputs))
# %%
def relu(X):
    a = torch.zeros_like(X)
    return torch.max(X, a)
# %%
@d2l.add_to_class(MLPScratch)
def forward(self, X):
    X = d2l.reshape(X, (-1, self.num_inputs))
    H = relu(d2l.matmul(X, self.W1) + self.b1)
    return d2l.matmul(H, self.W2) + self.b2
# %%
model = MLPScratch(num_inputs=784, num_outputs=10, num_hiddens=256, lr=0.1)
data = d2l.FashionMNIST(batch_size=256)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
# %%
class MLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Flatten(), nn.LazyLinear(num_hiddens),
                                 nn.ReLU(), nn.LazyLinear(num_outputs))
# %%
model = MLP(num_outputs=10, num_hiddens=256, lr=0.1)
trainer.fit(model, data)
"""

DROPOUT = r"""
from d2l import torch as d2l
import torch
from torch import nn
# %%
def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    if dropout == 1: return torch.zeros_like(X)
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)
# %%
X = torch.arange(16, dtype = torch.float32).reshape((2, 8))
print('dropout_p = 0:', dropout_layer(X, 0))
print('dropout_p = 0.5:', dropout_layer(X, 0.5))
print('dropout_p = 1:', dropout_layer(X, 1))
# %%
class DropoutMLPScratch(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                 dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()
        self.lin1 = nn.LazyLinear(num_hiddens_1)
        self.lin2 = nn.LazyLinear(num_hiddens_2)
        self.lin3 = nn.LazyLinear(num_outputs)
        self.relu = nn.ReLU()

    def forward(self, X):
        H1 = self.relu(self.lin1(X.reshape((X.shape[0], -1))))
        if self.training:  
            H1 = dropout_layer(H1, self.dropout_1)
        H2 = self.relu(self.lin2(H1))
        if self.training:
            H2 = dropout_layer(H2, self.dropout_2)
        return self.lin3(H2)
# %%
hparams = {'num_outputs':10, 'num_hiddens_1':256, 'num_hiddens_2':256,
           'dropout_1':0.5, 'dropout_2':0.5, 'lr':0.1}
model = DropoutMLPScratch(**hparams)
data = d2l.FashionMNIST(batch_size=256)
trainer = d2l.Trainer(max_epochs=10)
trainer.fit(model, data)
# %%
class DropoutMLP(d2l.Classifier):
    def __init__(self, num_outputs, num_hiddens_1, num_hiddens_2,
                 dropout_1, dropout_2, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(
            nn.Flatten(), nn.LazyLinear(num_hiddens_1), nn.ReLU(), 
            nn.Dropout(dropout_1), nn.LazyLinear(num_hiddens_2), nn.ReLU(), 
            nn.Dropout(dropout_2), nn.LazyLinear(num_outputs))
# %%
model = DropoutMLP(**hparams)
trainer.fit(model, data)
"""


MLP_ACTIVATIONS = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
# %%
x = torch.arange(-8.0, 8.0, 0.1, requires_grad=True)
y = torch.relu(x)
d2l.plot(x.detach(), y.detach(), 'x', 'relu(x)', figsize=(5, 2.5))
# %%
y.backward(torch.ones_like(x), retain_graph=True)
d2l.plot(x.detach(), x.grad, 'x', 'grad of relu', figsize=(5, 2.5))
# %%
y = torch.sigmoid(x)
d2l.plot(x.detach(), y.detach(), 'x', 'sigmoid(x)', figsize=(5, 2.5))
# %%
# Clear out previous gradients
x.grad.data.zero_()
y.backward(torch.ones_like(x),retain_graph=True)
d2l.plot(x.detach(), x.grad, 'x', 'grad of sigmoid', figsize=(5, 2.5))
# %%
y = torch.tanh(x)
d2l.plot(x.detach(), y.detach(), 'x', 'tanh(x)', figsize=(5, 2.5))
# %%
# Clear out previous gradients
x.grad.data.zero_()
y.backward(torch.ones_like(x),retain_graph=True)
d2l.plot(x.detach(), x.grad, 'x', 'grad of tanh', figsize=(5, 2.5))
"""

NUMERICAL_STABILITY = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
# %%
x = torch.arange(-8.0, 8.0, 0.1, requires_grad=True)
y = torch.sigmoid(x)
y.backward(torch.ones_like(x))

d2l.plot(x.detach().numpy(), [y.detach().numpy(), x.grad.numpy()],
         legend=['sigmoid', 'gradient'], figsize=(4.5, 2.5))
# %%
M = torch.normal(0, 1, size=(4, 4))
print('a single matrix \n',M)
for i in range(100):
    M = M @ torch.normal(0, 1, size=(4, 4))
print('after multiplying 100 matrices\n', M)
"""


def curve(board, key: str) -> list[float]:
    """The values of ``key`` ("train_loss", "val_acc", ...) that the book's progress
    ``board`` (a model's ``board``) recorded, in order."""
    return [float(point.y) for point in board.data[key]]


def test_oo_design(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(OO_DESIGN, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    assert ours == theirs  # no tensor printed: the same text
    assert 'Class attribute "b" is 1' in ours and "self.a = 1 self.b = 2" in ours
    for space in our, their:
        assert space["b"].hparams == {"a": 1, "b": 2}
        board = space["board"]  # the board's means of every 2 and every 10 points
        np.testing.assert_allclose(curve(board, "sin")[:2], [np.mean(np.sin([0, 0.1])), np.mean(np.sin([0.2, 0.3]))], rtol=1e-6)  # fmt: skip
        assert len(board.data["sin"]) == 50 and len(board.data["cos"]) == 10


def test_synthetic_regression_data(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SYNTHETIC_DATA, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    assert ours.splitlines()[-1] == theirs.splitlines()[-1] == "32"  # 1000 examples, 32 a batch
    for space in our, their:
        data = space["data"]
        assert tuple(data.X.shape) == (2000, 2) and tuple(space["X"].shape) == (32, 2)
        noise = data.y.numpy()[:, 0] - data.X.numpy() @ np.array([2, -3.4]) - 4.2
        assert 0.008 < noise.std() < 0.012 and abs(noise.mean()) < 0.002


def test_linear_regression_scratch(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LINEAR_SCRATCH, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, space in (ours, our), (theirs, their):  # the book's check: w and b recovered
        errors = numbers(r"(-?\d+\.\d+(?:e-?\d+)?)", " ".join(re.findall(r"\[(.*?)\]", printed)))
        assert len(errors) == 3 and max(map(abs, errors)) < 0.5, printed  # from 2, -3.4, 4.2
        losses = curve(space["model"].board, "train_loss")
        assert len(losses) == 3 * 2 and losses[-1] < losses[0] / 50, losses
    same_step(our, their, "model", lambda m: [m.w, m.b], tensors=("w", "b"))


def test_linear_regression_concise(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LINEAR_CONCISE, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, space in (ours, our), (theirs, their):
        errors = numbers(r"(-?\d+\.\d+(?:e-?\d+)?)", " ".join(re.findall(r"\[(.*?)\]", printed)))
        assert len(errors) == 3 and max(map(abs, errors)) < 0.05, printed  # from 2, -3.4, 4.2
        losses = curve(space["model"].board, "train_loss")
        assert losses[-1] < losses[0] / 50, losses
    same_step(our, their, "model", lambda m: list(m.parameters()))


def test_weight_decay(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(WEIGHT_DECAY, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed, space in (ours, our), (theirs, their):
        # the book's lesson: the penalty shrinks w (the optimizer's weight decay starts from
        # a Linear's initial weights: tricycle's are larger, documented)
        free, penalised, decayed = numbers(r"L2 norm of w: ([\d.e-]+)", printed)
        assert penalised < free / 4 and decayed < 0.1, printed
        losses = curve(space["model"].board, "val_loss")
        assert losses[-1] < losses[0] / 4, losses
    same_step(our, their, "model", lambda m: list(m.parameters()))


def test_image_classification_dataset(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(IMAGE_CLASSIFICATION_DATASET, tmp_path, monkeypatch)
    theirs = re.sub(r"torch\.(float32|int64)", r"\1", theirs)  # a dtype is numpy's here
    assert kinds(ours) == kinds(theirs)
    shapes = ["(512, 128)", "(1, 32, 32)", "(64, 1, 32, 32) float32 (64,) int64"]
    assert kinds(ours)[:3] == kinds(theirs)[:3] == kinds("\n".join(shapes))
    for space in our, their:  # resized to 32x32, in [0, 1]; labels read from a tensor
        X, y = space["batch"]
        assert 0 <= float(X.min()) < float(X.max()) <= 1 and tuple(X.shape) == (64, 1, 32, 32)
        labels = space["data"].text_labels(space["d2l"].tensor([0, 9]))
        assert labels == ["t-shirt", "ankle boot"]
    np.testing.assert_array_equal(our["batch"][0].numpy(), their["batch"][0].numpy())


def test_softmax_regression_scratch(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SOFTMAX_SCRATCH, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in ours, theirs:  # the sums, y_hat[[0, 1], y] and its cross-entropy: the book's
        shown = printed.splitlines()
        assert numbers(r"(\d+\.\d*)", " ".join(shown[:2])) == [5, 7, 9, 6, 15], printed
        assert numbers(r"(\d+\.\d*)", shown[-3]) == [0.1, 0.5], printed
        np.testing.assert_allclose(numbers(r"(\d+\.\d*)", shown[-2]), [1.4979], rtol=1e-4)
    for name in "X_prob", "preds":
        assert tuple(our[name].shape) == tuple(their[name].shape)
    for space in our, their:
        np.testing.assert_allclose(space["X_prob"].detach().numpy().sum(1), 1, rtol=1e-6)
        accuracy = curve(space["model"].board, "val_acc")
        assert accuracy[-1] > 0.8 and accuracy[-1] > accuracy[0], accuracy
        losses = curve(space["model"].board, "train_loss")
        assert losses[-1] < losses[0] / 2, losses
    for space in our, their:  # the book's cross-entropy of its two predictions
        y_hat, y = space["y_hat"], space["d2l"].tensor([0, 2])
        np.testing.assert_allclose(float(space["cross_entropy"](y_hat, y)), 1.4979, rtol=1e-4)
    same_step(our, their, "model", lambda m: m.parameters(), tensors=("W", "b"))


def test_softmax_regression_concise(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SOFTMAX_CONCISE, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for space in our, their:
        accuracy = curve(space["model"].board, "val_acc")
        assert accuracy[-1] > 0.8 and accuracy[-1] > accuracy[0], accuracy
    same_step(our, their, "model", lambda m: list(m.parameters()))


def test_mlp_implementation(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MLP_IMPLEMENTATION, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for space in our, their:
        accuracy = curve(space["model"].board, "val_acc")  # the second model's
        assert accuracy[-1] > 0.8, accuracy
    same_step(our, their, "model", lambda m: list(m.parameters()))
    scratch = {}
    for space in our, their:  # the first model, from its own numbers
        lib = space.get("torch") or space["tricycle"]
        lib.manual_seed(1)
        scratch[lib] = space["MLPScratch"](num_inputs=784, num_outputs=10, num_hiddens=16, lr=0.1)
    our["scratch"], their["scratch"] = scratch.values()
    same_step(our, their, "scratch", lambda m: list(m.parameters()))


def test_dropout(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(DROPOUT, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in ours, theirs:
        kept = numbers(r"(\d+\.?\d*)", printed.split("dropout_p = 0.5:")[1])[:16]
        assert all(v == 0 or v == 2 * i for i, v in enumerate(kept)) and 0 < kept.count(0) < 16, (
            kept
        )
        assert numbers(r"(\d+\.?\d*)", printed.split("dropout_p = 1:")[1])[:16] == [0] * 16
    for space in our, their:
        accuracy = curve(space["model"].board, "val_acc")
        assert accuracy[-1] > 0.5 and accuracy[-1] > accuracy[0] + 0.2, accuracy  # a tenth: chance
    same_step(our, their, "model", lambda m: list(m.parameters()))


def plotted(space: dict) -> list[np.ndarray]:
    """The lines (their y values) of the figure that the section drew last."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return [np.asarray(line.get_ydata(), dtype=float) for line in plt.gca().get_lines()]


def test_mlp_activations(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(MLP_ACTIVATIONS, tmp_path, monkeypatch, keep=plotted)
    assert kinds(ours) == kinds(theirs)
    x = np.arange(-8.0, 8.0, 0.1)  # the gradients the book plots, accumulated in x.grad
    # arange's numbers: torch's but for float32 rounding (x[80], torch's 4e-16, is -3e-14 here)
    np.testing.assert_allclose(our["x"].numpy(), their["x"].detach().numpy(), rtol=1e-6, atol=1e-13)
    tanh = 1 - np.tanh(x) ** 2
    np.testing.assert_allclose(our["x"].grad.numpy(), tanh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(our["x"].grad.numpy(), their["x"].grad.numpy(), rtol=1e-5, atol=1e-6)
    for ours_line, theirs_line in zip(our["kept"], their["kept"], strict=True):  # the last plot
        np.testing.assert_allclose(ours_line, theirs_line, rtol=1e-5, atol=1e-6)


def test_numerical_stability(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(NUMERICAL_STABILITY, tmp_path, monkeypatch, keep=plotted)
    assert kinds(ours) == kinds(theirs)
    x = np.arange(-8.0, 8.0, 0.1)
    sigmoid = 1 / (1 + np.exp(-x))
    for space in our, their:  # the sigmoid and its vanishing gradient, as plotted
        np.testing.assert_allclose(space["kept"][0], sigmoid, rtol=1e-5)
        np.testing.assert_allclose(space["kept"][1], sigmoid * (1 - sigmoid), rtol=1e-4, atol=1e-7)
        assert np.abs(space["M"].numpy()).max() > 1e20  # the product of 100 matrices explodes


# ------------------------------------------------------ with torch's weights: torch's numbers


def same_step(our: dict, their: dict, name: str, parameters, tensors=()) -> None:
    """The chapter's model ``name`` (the same class in each space), given torch's parameters
    (``nn.from_torch``; those of a model written from scratch, its ``tensors`` by name; then
    ``parameters(model)`` lists them in the same order in both): torch's outputs,
    loss and gradients on a batch, in eval mode (no dropout), and one step of the optimizer
    that its ``configure_optimizers`` makes gives torch's parameters."""
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    ours, theirs = our[name], their[name]
    state = {key: getattr(theirs, key) for key in tensors} or dict(theirs.named_parameters())
    assert nn.from_torch(ours, state) == ([], [])
    mine, torchs = list(parameters(ours)), list(parameters(theirs))
    assert len(mine) == len(torchs)
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(8, *their_shape(their))).astype(np.float32)
    y = rng.integers(0, 10, size=8)
    if theirs(their["torch"].tensor(X)).shape[-1] == 1:  # a regression: y is a column
        y = rng.normal(size=(8, 1)).astype(np.float32)
    results = []
    for model, lib, params in (ours, tricycle, mine), (theirs, their["torch"], torchs):
        model.eval()
        for p in params:
            p.grad = None
        out = model(lib.tensor(X))
        loss = model.loss(out, lib.tensor(y))
        loss.backward()
        grads = [p.grad.numpy().copy() for p in params]
        with lib.no_grad():
            model.configure_optimizers().step()
        results.append(
            (out.detach().numpy(), float(loss), grads, [p.detach().numpy().copy() for p in params])
        )
    (out, loss, grads, after), (t_out, t_loss, t_grads, t_after) = results
    np.testing.assert_allclose(out, t_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, t_loss, rtol=1e-5)
    # a Linear's weights are (in, out), the transpose of torch's (out, in) (documented)
    laid_out = [(lambda a: a.T) if p.name == "weights" else (lambda a: a) for p in mine]
    for g, t, layout in zip(grads, t_grads, laid_out, strict=True):
        np.testing.assert_allclose(layout(g), t, rtol=1e-4, atol=1e-7)
    for a, t, layout in zip(after, t_after, laid_out, strict=True):
        np.testing.assert_allclose(layout(a), t, rtol=1e-5, atol=1e-7)


def their_shape(space: dict) -> tuple:
    """The shape of one of the chapter's examples: a 28x28 image, or the data's features."""
    data = space["data"]
    return (
        (1, 28, 28) if hasattr(data, "train") and hasattr(data, "val") else tuple(data.X.shape[1:])
    )


def test_the_held_library_is_the_books():
    """tests/d2l_port.py's text of ``d2l/torch.py`` is the book's repository's, in its order,
    but for the lines marked ``# port:`` (where the repository's read-only mirror is here)."""
    held, matched, others = d2l_port.against_book(d2l_port.D2L_TORCH, d2l_port.book())
    assert others
    assert len(held) > 1000 and len(matched) > len(held) - 20
