"""Dive into Deep Learning (d2l-ai/d2l-en), its PyTorch code of chapter_optimization and
chapter_generative-adversarial-networks, run cell by cell on tricycle with ``torch`` replaced
by ``tricycle`` in its text and in the text of the book's own library (tests/d2l_port.py,
with the parts these chapters add held here as ``EXTRA``: ``annotate``, ``train_2d``,
``show_trace_2d``, ``get_data_ch11``, ``train_ch11``, ``train_concise_ch11``, ``update_D``,
``update_G``); the method of tests/test_d2l_basics.py:

- optimization-intro and convexity (curves drawn by ``d2l.plot``, a 3-D wireframe over
  ``d2l.meshgrid``), gd (gradient descent on Python floats and 0-d tensors, ``train_2d`` and
  its contour plot, Newton's method), sgd (noisy gradients from ``torch.normal(...).item()``,
  learning-rate decays), minibatch-sgd (``A[i, j] = torch.dot(B[i, :], C[:, j])``,
  ``torch.mv``, ``torch.mm`` into slices; train_ch11's linear regression from scratch with
  ``p.data.sub_``, ``p.grad.data.zero_()``; ``torch.optim.SGD``), momentum, adagrad, rmsprop,
  adadelta and adam (with yogi): each written from scratch (states updated in place,
  ``v[:] = ...`` and ``p[:] -= ...`` under ``no_grad``, ``torch.square``, ``torch.sqrt``,
  ``torch.sign``), then ``torch.optim``'s; lr-scheduler (a LeNet trained by the section's own
  loop under ``lr_scheduler.MultiStepLR`` and under its own schedulers, which it tells apart
  by ``scheduler.__module__ == lr_scheduler.__name__``);
- gan (a generator and a discriminator of Linear layers learning a 2-D Gaussian, the book's
  ``update_D``/``update_G`` with ``BCEWithLogitsLoss(reduction='sum')`` and Adam) and dcgan
  (``ConvTranspose2d``/``BatchNorm2d`` generator blocks, ``Conv2d``/``LeakyReLU(inplace=True)``
  discriminator blocks, on sprites loaded by ``torchvision.datasets.ImageFolder``).

Each changed line ends in ``# port:`` and says why: the airfoil table and the Pokemon sprites
are small synthetic data written by the test (no download: ``np.genfromtxt`` reads the
table, a stand-in ``ImageFolder`` the sprites as .npy arrays, with stand-in ``ToTensor`` of
colour images and ``Normalize``), matrices, data, channels, epochs and batches shrunk,
``show_trace``'s curve computed at a tenth of its points (one by one in Python), four sprites
shown of twenty, and a Linear's ``weight`` taken by position (tricycle's is ``weights``, (in,
out): documented). Fashion-MNIST's stand-in (d2l_port's) gives 64 images to train on and 32
to test on here.

Each section runs under torch (skipped without it), then under tricycle, seeded, on the CPU
and on one thread; both print the same lines (numbers and reprs aside). The deterministic
numbers are torch's (gradient descent, momentum, adagrad and rmsprop on floats; Newton's
method on tensors; the curves plotted); the optimizers' final losses are far below the 0.5
of w = 0; the generator moves toward the data. Then, with torch's weights or tensors: each
optimizer from scratch and each of ``torch.optim``'s, a few steps on the same batches, gives
torch's parameters; the section's ``get_lr`` gives torch's MultiStepLR rates; the LeNet
gives torch's outputs and gradients, and the section's ``train`` under its cosine schedule
torch's weights, its loss falling; a step of ``update_D`` and ``update_G`` of each GAN gives
torch's losses, parameters and running statistics. The fixes the chapters needed:
``torch.square`` (and ``torch.neg``) as functions, and the schedulers' ``__module__`` that of
``lr_scheduler`` (tests/test_torch_square.py). The last test checks that ``EXTRA`` is the
book's text but for its ``# port:`` lines.
"""

# ruff: noqa: E501, W291, W293

import functools
import re

import numpy as np
import pytest

from tests import d2l_port
from tests.helpers import one_thread
from tests.test_d2l_vision import VISION
from tests.test_dlwpt_part1 import same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_uvadlc_intro import kinds as kinds_of

pytestmark = [  # and torch's, of the book's code as it is written
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:torch.meshgrid. in an upcoming release"),
    pytest.mark.filterwarnings("ignore:Converting a tensor with requires_grad=True to a scalar"),
]

EXTRA = r'''
def annotate(text, xy, xytext):
    """Defined in :numref:`sec_optimization-intro`"""
    d2l.plt.gca().annotate(text, xy=xy, xytext=xytext,
                           arrowprops=dict(arrowstyle='->'))

def train_2d(trainer, steps=20, f_grad=None):
    """Optimize a 2D objective function with a customized trainer.

    Defined in :numref:`subsec_gd-learningrate`"""
    # `s1` and `s2` are internal state variables that will be used in Momentum, adagrad, RMSProp
    x1, x2, s1, s2 = -5, -2, 0, 0
    results = [(x1, x2)]
    for i in range(steps):
        if f_grad:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2, f_grad)
        else:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2)
        results.append((x1, x2))
    print(f'epoch {i + 1}, x1: {float(x1):f}, x2: {float(x2):f}')
    return results

def show_trace_2d(f, results):
    """Show the trace of 2D variables during optimization.

    Defined in :numref:`subsec_gd-learningrate`"""
    d2l.set_figsize()
    d2l.plt.plot(*zip(*results), '-o', color='#ff7f0e')
    x1, x2 = d2l.meshgrid(d2l.arange(-5.5, 1.0, 0.1),
                          d2l.arange(-3.0, 1.0, 0.1), indexing='ij')
    d2l.plt.contour(x1, x2, f(x1, x2), colors='#1f77b4')
    d2l.plt.xlabel('x1')
    d2l.plt.ylabel('x2')

d2l.DATA_HUB['airfoil'] = (d2l.DATA_URL + 'airfoil_self_noise.dat',
                           '76e5be1548fd8222e5074cf0faae75edff8cf93f')

def get_data_ch11(batch_size=10, n=1500):
    """Defined in :numref:`sec_minibatches`"""
    data = np.genfromtxt('../data/airfoil_self_noise.dat',  # port: the test's small synthetic table (no download)
                         dtype=np.float32, delimiter='\t')
    data = torch.from_numpy((data - data.mean(axis=0)) / data.std(axis=0))
    data_iter = d2l.load_array((data[:n, :-1], data[:n, -1]),
                               batch_size, is_train=True)
    return data_iter, data.shape[1]-1

def train_ch11(trainer_fn, states, hyperparams, data_iter,
               feature_dim, num_epochs=2):
    """Defined in :numref:`sec_minibatches`"""
    # Initialization
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1),
                     requires_grad=True)
    b = torch.zeros((1), requires_grad=True)
    net, loss = lambda X: d2l.linreg(X, w, b), d2l.squared_loss
    # Train
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, d2l.Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()
            l.backward()
            trainer_fn([w, b], states, hyperparams)
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                animator.add(n/X.shape[0]/len(data_iter),
                             (d2l.evaluate_loss(net, data_iter, loss),))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')
    return timer.cumsum(), animator.Y[0]

def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=4):
    """Defined in :numref:`sec_minibatches`"""
    # Initialization
    net = nn.Sequential(nn.Linear(5, 1))
    def init_weights(module):
        if type(module) == nn.Linear:
            torch.nn.init.normal_(next(module.parameters()), std=0.01)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
    net.apply(init_weights)

    optimizer = trainer_fn(net.parameters(), **hyperparams)
    loss = nn.MSELoss(reduction='none')
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, d2l.Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            optimizer.zero_grad()
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)
            l.mean().backward()
            optimizer.step()
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                # `MSELoss` computes squared error without the 1/2 factor
                animator.add(n/X.shape[0]/len(data_iter),
                             (d2l.evaluate_loss(net, data_iter, loss) / 2,))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')

def update_D(X, Z, net_D, net_G, loss, trainer_D):
    """Update discriminator.

    Defined in :numref:`sec_basic_gan`"""
    batch_size = X.shape[0]
    ones = torch.ones((batch_size,), device=X.device)
    zeros = torch.zeros((batch_size,), device=X.device)
    trainer_D.zero_grad()
    real_Y = net_D(X)
    fake_X = net_G(Z)
    # Do not need to compute gradient for `net_G`, detach it from
    # computing gradients.
    fake_Y = net_D(fake_X.detach())
    loss_D = (loss(real_Y, ones.reshape(real_Y.shape)) +
              loss(fake_Y, zeros.reshape(fake_Y.shape))) / 2
    loss_D.backward()
    trainer_D.step()
    return loss_D

def update_G(Z, net_D, net_G, loss, trainer_G):
    """Update generator.

    Defined in :numref:`sec_basic_gan`"""
    batch_size = Z.shape[0]
    ones = torch.ones((batch_size,), device=Z.device)
    trainer_G.zero_grad()
    # We could reuse `fake_X` from `update_D` to save computation
    fake_X = net_G(Z)
    # Recomputing `fake_Y` is needed since `net_D` is changed
    fake_Y = net_D(fake_X)
    loss_G = loss(fake_Y, ones.reshape(fake_Y.shape))
    loss_G.backward()
    trainer_G.step()
    return loss_G

d2l.DATA_HUB['pokemon'] = (d2l.DATA_URL + 'pokemon.zip',
                           'c065c0e2593b8b161a2d7873e42418bf6a21106c')
'''


OPTIMIZATION_INTRO = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import numpy as np
from mpl_toolkits import mplot3d
import torch
# %%
def f(x):
    return x * d2l.cos(np.pi * x)

def g(x):
    return f(x) + 0.2 * d2l.cos(5 * np.pi * x)
# %%
def annotate(text, xy, xytext):  #@save
    d2l.plt.gca().annotate(text, xy=xy, xytext=xytext,
                           arrowprops=dict(arrowstyle='->'))

x = d2l.arange(0.5, 1.5, 0.01)
d2l.set_figsize((4.5, 2.5))
d2l.plot(x, [f(x), g(x)], 'x', 'risk')
annotate('min of\nempirical risk', (1.0, -1.2), (0.5, -1.1))
annotate('min of risk', (1.1, -1.05), (0.95, -0.5))
# %%
x = d2l.arange(-1.0, 2.0, 0.01)
d2l.plot(x, [f(x), ], 'x', 'f(x)')
annotate('local minimum', (-0.3, -0.25), (-0.77, -1.0))
annotate('global minimum', (1.1, -0.95), (0.6, 0.8))
# %%
x = d2l.arange(-2.0, 2.0, 0.01)
d2l.plot(x, [x**3], 'x', 'f(x)')
annotate('saddle point', (0, -0.2), (-0.52, -5.0))
# %%
x, y = d2l.meshgrid(
    d2l.linspace(-1.0, 1.0, 101), d2l.linspace(-1.0, 1.0, 101))
z = x**2 - y**2

ax = d2l.plt.figure().add_subplot(111, projection='3d')
ax.plot_wireframe(x, y, z, **{'rstride': 10, 'cstride': 10})
ax.plot([0], [0], [0], 'rx')
ticks = [-1, 0, 1]
d2l.plt.xticks(ticks)
d2l.plt.yticks(ticks)
ax.set_zticks(ticks)
d2l.plt.xlabel('x')
d2l.plt.ylabel('y');
# %%
x = d2l.arange(-2.0, 5.0, 0.01)
d2l.plot(x, [d2l.tanh(x)], 'x', 'f(x)')
annotate('vanishing gradient', (4, 1), (2, 0.0))
"""

CONVEXITY = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import numpy as np
from mpl_toolkits import mplot3d
import torch
# %%
f = lambda x: 0.5 * x**2  # Convex
g = lambda x: d2l.cos(np.pi * x)  # Nonconvex
h = lambda x: d2l.exp(0.5 * x)  # Convex

x, segment = d2l.arange(-2, 2, 0.01), d2l.tensor([-1.5, 1])
d2l.use_svg_display()
_, axes = d2l.plt.subplots(1, 3, figsize=(9, 3))
for ax, func in zip(axes, [f, g, h]):
    d2l.plot([x, segment], [func(x), func(segment)], axes=ax)
# %%
f = lambda x: (x - 1) ** 2
d2l.set_figsize()
d2l.plot([x, segment], [f(x), f(segment)], 'x', 'f(x)')
"""

GD = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import numpy as np
import torch
# %%
def f(x):  # Objective function
    return x ** 2

def f_grad(x):  # Gradient (derivative) of the objective function
    return 2 * x
# %%
def gd(eta, f_grad):
    x = 10.0
    results = [x]
    for i in range(10):
        x -= eta * f_grad(x)
        results.append(float(x))
    print(f'epoch 10, x: {x:f}')
    return results

results = gd(0.2, f_grad)
# %%
def show_trace(results, f):
    n = max(abs(min(results)), abs(max(results)))
    f_line = d2l.arange(-n, n, 0.1)  # port: a coarser line (0.01): its points are computed one by one
    d2l.set_figsize()
    d2l.plot([f_line, results], [[f(x) for x in f_line], [
        f(x) for x in results]], 'x', 'f(x)', fmts=['-', '-o'])

show_trace(results, f)
# %%
show_trace(gd(0.05, f_grad), f)
# %%
show_trace(gd(1.1, f_grad), f)
# %%
c = d2l.tensor(0.15 * np.pi)

def f(x):  # Objective function
    return x * d2l.cos(c * x)

def f_grad(x):  # Gradient of the objective function
    return d2l.cos(c * x) - c * x * d2l.sin(c * x)

show_trace(gd(2, f_grad), f)
# %%
def train_2d(trainer, steps=20, f_grad=None):  #@save
    """Optimize a 2D objective function with a customized trainer."""
    # `s1` and `s2` are internal state variables that will be used in Momentum, adagrad, RMSProp
    x1, x2, s1, s2 = -5, -2, 0, 0
    results = [(x1, x2)]
    for i in range(steps):
        if f_grad:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2, f_grad)
        else:
            x1, x2, s1, s2 = trainer(x1, x2, s1, s2)
        results.append((x1, x2))
    print(f'epoch {i + 1}, x1: {float(x1):f}, x2: {float(x2):f}')
    return results
# %%
def show_trace_2d(f, results):  #@save
    """Show the trace of 2D variables during optimization."""
    d2l.set_figsize()
    d2l.plt.plot(*zip(*results), '-o', color='#ff7f0e')
    x1, x2 = d2l.meshgrid(d2l.arange(-5.5, 1.0, 0.1),
                          d2l.arange(-3.0, 1.0, 0.1), indexing='ij')
    d2l.plt.contour(x1, x2, f(x1, x2), colors='#1f77b4')
    d2l.plt.xlabel('x1')
    d2l.plt.ylabel('x2')
# %%
def f_2d(x1, x2):  # Objective function
    return x1 ** 2 + 2 * x2 ** 2

def f_2d_grad(x1, x2):  # Gradient of the objective function
    return (2 * x1, 4 * x2)

def gd_2d(x1, x2, s1, s2, f_grad):
    g1, g2 = f_grad(x1, x2)
    return (x1 - eta * g1, x2 - eta * g2, 0, 0)

eta = 0.1
show_trace_2d(f_2d, train_2d(gd_2d, f_grad=f_2d_grad))
# %%
c = d2l.tensor(0.5)

def f(x):  # Objective function
    return d2l.cosh(c * x)

def f_grad(x):  # Gradient of the objective function
    return c * d2l.sinh(c * x)

def f_hess(x):  # Hessian of the objective function
    return c**2 * d2l.cosh(c * x)

def newton(eta=1):
    x = 10.0
    results = [x]
    for i in range(10):
        x -= eta * f_grad(x) / f_hess(x)
        results.append(float(x))
    print('epoch 10, x:', x)
    return results

show_trace(newton(), f)
# %%
c = d2l.tensor(0.15 * np.pi)

def f(x):  # Objective function
    return x * d2l.cos(c * x)

def f_grad(x):  # Gradient of the objective function
    return d2l.cos(c * x) - c * x * d2l.sin(c * x)

def f_hess(x):  # Hessian of the objective function
    return - 2 * c * d2l.sin(c * x) - x * c**2 * d2l.cos(c * x)

show_trace(newton(), f)
# %%
show_trace(newton(0.5), f)
'''

SGD = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import math
import torch
# %%
def f(x1, x2):  # Objective function
    return x1 ** 2 + 2 * x2 ** 2

def f_grad(x1, x2):  # Gradient of the objective function
    return 2 * x1, 4 * x2
# %%
def sgd(x1, x2, s1, s2, f_grad):
    g1, g2 = f_grad(x1, x2)
    # Simulate noisy gradient
    g1 += torch.normal(0.0, 1, (1,)).item()
    g2 += torch.normal(0.0, 1, (1,)).item()
    eta_t = eta * lr()
    return (x1 - eta_t * g1, x2 - eta_t * g2, 0, 0)
# %%
def constant_lr():
    return 1

eta = 0.1
lr = constant_lr  # Constant learning rate
d2l.show_trace_2d(f, d2l.train_2d(sgd, steps=50, f_grad=f_grad))
# %%
def exponential_lr():
    # Global variable that is defined outside this function and updated inside
    global t
    t += 1
    return math.exp(-0.1 * t)

t = 1
lr = exponential_lr
d2l.show_trace_2d(f, d2l.train_2d(sgd, steps=1000, f_grad=f_grad))
# %%
def polynomial_lr():
    # Global variable that is defined outside this function and updated inside
    global t
    t += 1
    return (1 + 0.1 * t) ** (-0.5)

t = 1
lr = polynomial_lr
d2l.show_trace_2d(f, d2l.train_2d(sgd, steps=50, f_grad=f_grad))
"""

MINIBATCH_SGD = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import numpy as np
import time
import torch
from torch import nn

A = torch.zeros(16, 16)  # port: 16x16 matrices (256x256): 65536 dot products in Python
B = torch.randn(16, 16)  # port: as above
C = torch.randn(16, 16)  # port: as above
# %%
class Timer:  #@save
    """Record multiple running times."""
    def __init__(self):
        self.times = []
        self.start()

    def start(self):
        """Start the timer."""
        self.tik = time.time()

    def stop(self):
        """Stop the timer and record the time in a list."""
        self.times.append(time.time() - self.tik)
        return self.times[-1]

    def avg(self):
        """Return the average time."""
        return sum(self.times) / len(self.times)

    def sum(self):
        """Return the sum of time."""
        return sum(self.times)

    def cumsum(self):
        """Return the accumulated time."""
        return np.array(self.times).cumsum().tolist()

timer = Timer()
# %%
# Compute A = BC one element at a time
timer.start()
for i in range(16):  # port: as above
    for j in range(16):  # port: as above
        A[i, j] = torch.dot(B[i, :], C[:, j])
timer.stop()
# %%
# Compute A = BC one column at a time
timer.start()
for j in range(16):  # port: as above
    A[:, j] = torch.mv(B, C[:, j])
timer.stop()
# %%
# Compute A = BC in one go
timer.start()
A = torch.mm(B, C)
timer.stop()

gigaflops = [0.03 / i for i in timer.times]
print(f'performance in Gigaflops: element {gigaflops[0]:.3f}, '
      f'column {gigaflops[1]:.3f}, full {gigaflops[2]:.3f}')
# %%
timer.start()
for j in range(0, 16, 4):  # port: as above
    A[:, j:j+4] = torch.mm(B, C[:, j:j+4])  # port: as above
timer.stop()
print(f'performance in Gigaflops: block {0.03 / timer.times[3]:.3f}')
# %%
#@save
d2l.DATA_HUB['airfoil'] = (d2l.DATA_URL + 'airfoil_self_noise.dat',
                           '76e5be1548fd8222e5074cf0faae75edff8cf93f')

#@save
def get_data_ch11(batch_size=10, n=1500):
    data = np.genfromtxt('../data/airfoil_self_noise.dat',  # port: the test's small synthetic table (no download)
                         dtype=np.float32, delimiter='\t')
    data = torch.from_numpy((data - data.mean(axis=0)) / data.std(axis=0))
    data_iter = d2l.load_array((data[:n, :-1], data[:n, -1]),
                               batch_size, is_train=True)
    return data_iter, data.shape[1]-1
# %%
def sgd(params, states, hyperparams):
    for p in params:
        p.data.sub_(hyperparams['lr'] * p.grad)
        p.grad.data.zero_()
# %%
#@save
def train_ch11(trainer_fn, states, hyperparams, data_iter,
               feature_dim, num_epochs=2):
    # Initialization
    w = torch.normal(mean=0.0, std=0.01, size=(feature_dim, 1),
                     requires_grad=True)
    b = torch.zeros((1), requires_grad=True)
    net, loss = lambda X: d2l.linreg(X, w, b), d2l.squared_loss
    # Train
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, d2l.Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y).mean()
            l.backward()
            trainer_fn([w, b], states, hyperparams)
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                animator.add(n/X.shape[0]/len(data_iter),
                             (d2l.evaluate_loss(net, data_iter, loss),))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')
    return timer.cumsum(), animator.Y[0]
# %%
def train_sgd(lr, batch_size, num_epochs=2):
    data_iter, feature_dim = get_data_ch11(batch_size)
    return train_ch11(
        sgd, None, {'lr': lr}, data_iter, feature_dim, num_epochs)

gd_res = train_sgd(1, 1500, 10)
# %%
sgd_res = train_sgd(0.005, 1)
# %%
mini1_res = train_sgd(.4, 100)
# %%
mini2_res = train_sgd(.05, 10)
# %%
d2l.set_figsize([6, 3])
d2l.plot(*list(map(list, zip(gd_res, sgd_res, mini1_res, mini2_res))),
         'time (sec)', 'loss', xlim=[1e-2, 10],
         legend=['gd', 'sgd', 'batch size=100', 'batch size=10'])
d2l.plt.gca().set_xscale('log')
# %%
#@save
def train_concise_ch11(trainer_fn, hyperparams, data_iter, num_epochs=4):
    # Initialization
    net = nn.Sequential(nn.Linear(5, 1))
    def init_weights(module):
        if type(module) == nn.Linear:
            torch.nn.init.normal_(next(module.parameters()), std=0.01)  # port: a layer's weight by position: tricycle's is weights, a Linear's (in, out) (documented)
    net.apply(init_weights)

    optimizer = trainer_fn(net.parameters(), **hyperparams)
    loss = nn.MSELoss(reduction='none')
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[0, num_epochs], ylim=[0.22, 0.35])
    n, timer = 0, d2l.Timer()
    for _ in range(num_epochs):
        for X, y in data_iter:
            optimizer.zero_grad()
            out = net(X)
            y = y.reshape(out.shape)
            l = loss(out, y)
            l.mean().backward()
            optimizer.step()
            n += X.shape[0]
            if n % 200 == 0:
                timer.stop()
                # `MSELoss` computes squared error without the 1/2 factor
                animator.add(n/X.shape[0]/len(data_iter),
                             (d2l.evaluate_loss(net, data_iter, loss) / 2,))
                timer.start()
    print(f'loss: {animator.Y[0][-1]:.3f}, {timer.sum()/num_epochs:.3f} sec/epoch')
# %%
data_iter, _ = get_data_ch11(10)
trainer = torch.optim.SGD
train_concise_ch11(trainer, {'lr': 0.01}, data_iter)
'''

MOMENTUM = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch

eta = 0.4
def f_2d(x1, x2):
    return 0.1 * x1 ** 2 + 2 * x2 ** 2
def gd_2d(x1, x2, s1, s2):
    return (x1 - eta * 0.2 * x1, x2 - eta * 4 * x2, 0, 0)

d2l.show_trace_2d(f_2d, d2l.train_2d(gd_2d))
# %%
eta = 0.6
d2l.show_trace_2d(f_2d, d2l.train_2d(gd_2d))
# %%
def momentum_2d(x1, x2, v1, v2):
    v1 = beta * v1 + 0.2 * x1
    v2 = beta * v2 + 4 * x2
    return x1 - eta * v1, x2 - eta * v2, v1, v2

eta, beta = 0.6, 0.5
d2l.show_trace_2d(f_2d, d2l.train_2d(momentum_2d))
# %%
eta, beta = 0.6, 0.25
d2l.show_trace_2d(f_2d, d2l.train_2d(momentum_2d))
# %%
d2l.set_figsize()
betas = [0.95, 0.9, 0.6, 0]
for beta in betas:
    x = d2l.numpy(d2l.arange(40))
    d2l.plt.plot(x, beta ** x, label=f'beta = {beta:.2f}')
d2l.plt.xlabel('time')
d2l.plt.legend();
# %%
def init_momentum_states(feature_dim):
    v_w = d2l.zeros((feature_dim, 1))
    v_b = d2l.zeros(1)
    return (v_w, v_b)
# %%
def sgd_momentum(params, states, hyperparams):
    for p, v in zip(params, states):
        with torch.no_grad():
            v[:] = hyperparams['momentum'] * v + p.grad
            p[:] -= hyperparams['lr'] * v
        p.grad.data.zero_()
# %%
def train_momentum(lr, momentum, num_epochs=2):
    d2l.train_ch11(sgd_momentum, init_momentum_states(feature_dim),
                   {'lr': lr, 'momentum': momentum}, data_iter,
                   feature_dim, num_epochs)

data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
train_momentum(0.02, 0.5)
# %%
train_momentum(0.01, 0.9)
# %%
train_momentum(0.005, 0.9)
# %%
trainer = torch.optim.SGD
d2l.train_concise_ch11(trainer, {'lr': 0.005, 'momentum': 0.9}, data_iter)
# %%
lambdas = [0.1, 1, 10, 19]
eta = 0.1
d2l.set_figsize((6, 4))
for lam in lambdas:
    t = d2l.numpy(d2l.arange(20))
    d2l.plt.plot(t, (1 - eta * lam) ** t, label=f'lambda = {lam:.2f}')
d2l.plt.xlabel('time')
d2l.plt.legend();
"""

ADAGRAD = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import math
import torch
# %%
def adagrad_2d(x1, x2, s1, s2):
    eps = 1e-6
    g1, g2 = 0.2 * x1, 4 * x2
    s1 += g1 ** 2
    s2 += g2 ** 2
    x1 -= eta / math.sqrt(s1 + eps) * g1
    x2 -= eta / math.sqrt(s2 + eps) * g2
    return x1, x2, s1, s2

def f_2d(x1, x2):
    return 0.1 * x1 ** 2 + 2 * x2 ** 2

eta = 0.4
d2l.show_trace_2d(f_2d, d2l.train_2d(adagrad_2d))
# %%
eta = 2
d2l.show_trace_2d(f_2d, d2l.train_2d(adagrad_2d))
# %%
def init_adagrad_states(feature_dim):
    s_w = d2l.zeros((feature_dim, 1))
    s_b = d2l.zeros(1)
    return (s_w, s_b)

def adagrad(params, states, hyperparams):
    eps = 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] += torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()
# %%
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
d2l.train_ch11(adagrad, init_adagrad_states(feature_dim),
               {'lr': 0.1}, data_iter, feature_dim);
# %%
trainer = torch.optim.Adagrad
d2l.train_concise_ch11(trainer, {'lr': 0.1}, data_iter)
"""

RMSPROP = r"""
from d2l import torch as d2l
import torch
import math
# %%
d2l.set_figsize()
gammas = [0.95, 0.9, 0.8, 0.7]
for gamma in gammas:
    x = d2l.numpy(d2l.arange(40))
    d2l.plt.plot(x, (1-gamma) * gamma ** x, label=f'gamma = {gamma:.2f}')
d2l.plt.xlabel('time');
# %%
def rmsprop_2d(x1, x2, s1, s2):
    g1, g2, eps = 0.2 * x1, 4 * x2, 1e-6
    s1 = gamma * s1 + (1 - gamma) * g1 ** 2
    s2 = gamma * s2 + (1 - gamma) * g2 ** 2
    x1 -= eta / math.sqrt(s1 + eps) * g1
    x2 -= eta / math.sqrt(s2 + eps) * g2
    return x1, x2, s1, s2

def f_2d(x1, x2):
    return 0.1 * x1 ** 2 + 2 * x2 ** 2

eta, gamma = 0.4, 0.9
d2l.show_trace_2d(f_2d, d2l.train_2d(rmsprop_2d))
# %%
def init_rmsprop_states(feature_dim):
    s_w = d2l.zeros((feature_dim, 1))
    s_b = d2l.zeros(1)
    return (s_w, s_b)
# %%
def rmsprop(params, states, hyperparams):
    gamma, eps = hyperparams['gamma'], 1e-6
    for p, s in zip(params, states):
        with torch.no_grad():
            s[:] = gamma * s + (1 - gamma) * torch.square(p.grad)
            p[:] -= hyperparams['lr'] * p.grad / torch.sqrt(s + eps)
        p.grad.data.zero_()
# %%
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
d2l.train_ch11(rmsprop, init_rmsprop_states(feature_dim),
               {'lr': 0.01, 'gamma': 0.9}, data_iter, feature_dim);
# %%
trainer = torch.optim.RMSprop
d2l.train_concise_ch11(trainer, {'lr': 0.01, 'alpha': 0.9},
                       data_iter)
"""

ADADELTA = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch

def init_adadelta_states(feature_dim):
    s_w, s_b = d2l.zeros((feature_dim, 1)), d2l.zeros(1)
    delta_w, delta_b = d2l.zeros((feature_dim, 1)), d2l.zeros(1)
    return ((s_w, delta_w), (s_b, delta_b))

def adadelta(params, states, hyperparams):
    rho, eps = hyperparams['rho'], 1e-5
    for p, (s, delta) in zip(params, states):
        with torch.no_grad():
            # In-place updates via [:]
            s[:] = rho * s + (1 - rho) * torch.square(p.grad)
            g = (torch.sqrt(delta + eps) / torch.sqrt(s + eps)) * p.grad
            p[:] -= g
            delta[:] = rho * delta + (1 - rho) * g * g
        p.grad.data.zero_()
# %%
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
d2l.train_ch11(adadelta, init_adadelta_states(feature_dim),
               {'rho': 0.9}, data_iter, feature_dim);
# %%
trainer = torch.optim.Adadelta
d2l.train_concise_ch11(trainer, {'rho': 0.9}, data_iter)
"""

ADAM = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch

def init_adam_states(feature_dim):
    v_w, v_b = d2l.zeros((feature_dim, 1)), d2l.zeros(1)
    s_w, s_b = d2l.zeros((feature_dim, 1)), d2l.zeros(1)
    return ((v_w, s_w), (v_b, s_b))

def adam(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-6
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = beta2 * s + (1 - beta2) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:] -= hyperparams['lr'] * v_bias_corr / (torch.sqrt(s_bias_corr)
                                                       + eps)
        p.grad.data.zero_()
    hyperparams['t'] += 1
# %%
data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
d2l.train_ch11(adam, init_adam_states(feature_dim),
               {'lr': 0.01, 't': 1}, data_iter, feature_dim);
# %%
trainer = torch.optim.Adam
d2l.train_concise_ch11(trainer, {'lr': 0.01}, data_iter)
# %%
def yogi(params, states, hyperparams):
    beta1, beta2, eps = 0.9, 0.999, 1e-3
    for p, (v, s) in zip(params, states):
        with torch.no_grad():
            v[:] = beta1 * v + (1 - beta1) * p.grad
            s[:] = s + (1 - beta2) * torch.sign(
                torch.square(p.grad) - s) * torch.square(p.grad)
            v_bias_corr = v / (1 - beta1 ** hyperparams['t'])
            s_bias_corr = s / (1 - beta2 ** hyperparams['t'])
            p[:] -= hyperparams['lr'] * v_bias_corr / (torch.sqrt(s_bias_corr)
                                                       + eps)
        p.grad.data.zero_()
    hyperparams['t'] += 1

data_iter, feature_dim = d2l.get_data_ch11(batch_size=10)
d2l.train_ch11(yogi, init_adam_states(feature_dim),
               {'lr': 0.01, 't': 1}, data_iter, feature_dim);
"""

LR_SCHEDULER = r"""
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import math
import torch
from torch import nn
from torch.optim import lr_scheduler

def net_fn():
    model = nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.ReLU(),
        nn.MaxPool2d(kernel_size=2, stride=2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))

    return model

loss = nn.CrossEntropyLoss()
device = d2l.try_gpu()

batch_size = 32  # port: batches of 32 (256) from the stand-in's 64 images
train_iter, test_iter = d2l.load_data_fashion_mnist(batch_size=batch_size)

# The code is almost identical to `d2l.train_ch6` defined in the
# lenet section of chapter convolutional neural networks
def train(net, train_iter, test_iter, num_epochs, loss, trainer, device,
          scheduler=None):
    net.to(device)
    animator = d2l.Animator(xlabel='epoch', xlim=[0, num_epochs],
                            legend=['train loss', 'train acc', 'test acc'])

    for epoch in range(num_epochs):
        metric = d2l.Accumulator(3)  # train_loss, train_acc, num_examples
        for i, (X, y) in enumerate(train_iter):
            net.train()
            trainer.zero_grad()
            X, y = X.to(device), y.to(device)
            y_hat = net(X)
            l = loss(y_hat, y)
            l.backward()
            trainer.step()
            with torch.no_grad():
                metric.add(l * X.shape[0], d2l.accuracy(y_hat, y), X.shape[0])
            train_loss = metric[0] / metric[2]
            train_acc = metric[1] / metric[2]
            if (i + 1) % 50 == 0:
                animator.add(epoch + i / len(train_iter),
                             (train_loss, train_acc, None))

        test_acc = d2l.evaluate_accuracy_gpu(net, test_iter)
        animator.add(epoch+1, (None, None, test_acc))

        if scheduler:
            if scheduler.__module__ == lr_scheduler.__name__:
                # Using PyTorch In-Built scheduler
                scheduler.step()
            else:
                # Using custom defined scheduler
                for param_group in trainer.param_groups:
                    param_group['lr'] = scheduler(epoch)

    print(f'train loss {train_loss:.3f}, train acc {train_acc:.3f}, '
          f'test acc {test_acc:.3f}')
# %%
lr, num_epochs = 0.3, 30
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=lr)
train(net, train_iter, test_iter, 1, loss, trainer, device)  # port: 1 epoch (30)
# %%
lr = 0.1
trainer.param_groups[0]["lr"] = lr
print(f'learning rate is now {trainer.param_groups[0]["lr"]:.2f}')
# %%
class SquareRootScheduler:
    def __init__(self, lr=0.1):
        self.lr = lr

    def __call__(self, num_update):
        return self.lr * pow(num_update + 1.0, -0.5)
# %%
scheduler = SquareRootScheduler(lr=0.1)
d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
# %%
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr)
train(net, train_iter, test_iter, 1, loss, trainer, device,  # port: 1 epoch (30)
      scheduler)
# %%
class FactorScheduler:
    def __init__(self, factor=1, stop_factor_lr=1e-7, base_lr=0.1):
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.base_lr = base_lr

    def __call__(self, num_update):
        self.base_lr = max(self.stop_factor_lr, self.base_lr * self.factor)
        return self.base_lr

scheduler = FactorScheduler(factor=0.9, stop_factor_lr=1e-2, base_lr=2.0)
d2l.plot(d2l.arange(50), [scheduler(t) for t in range(50)])
# %%
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=0.5)
scheduler = lr_scheduler.MultiStepLR(trainer, milestones=[15, 30], gamma=0.5)

def get_lr(trainer, scheduler):
    lr = scheduler.get_last_lr()[0]
    trainer.step()
    scheduler.step()
    return lr

d2l.plot(d2l.arange(num_epochs), [get_lr(trainer, scheduler)
                                  for t in range(num_epochs)])
# %%
train(net, train_iter, test_iter, 1, loss, trainer, device,  # port: 1 epoch (30)
      scheduler)
# %%
class CosineScheduler:
    def __init__(self, max_update, base_lr=0.01, final_lr=0,
               warmup_steps=0, warmup_begin_lr=0):
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.warmup_steps = warmup_steps
        self.warmup_begin_lr = warmup_begin_lr
        self.max_steps = self.max_update - self.warmup_steps

    def get_warmup_lr(self, epoch):
        increase = (self.base_lr_orig - self.warmup_begin_lr) \
                       * float(epoch) / float(self.warmup_steps)
        return self.warmup_begin_lr + increase

    def __call__(self, epoch):
        if epoch < self.warmup_steps:
            return self.get_warmup_lr(epoch)
        if epoch <= self.max_update:
            self.base_lr = self.final_lr + (
                self.base_lr_orig - self.final_lr) * (1 + math.cos(
                math.pi * (epoch - self.warmup_steps) / self.max_steps)) / 2
        return self.base_lr

scheduler = CosineScheduler(max_update=20, base_lr=0.3, final_lr=0.01)
d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
# %%
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=0.3)
train(net, train_iter, test_iter, 1, loss, trainer, device,  # port: 1 epoch (30)
      scheduler)
# %%
scheduler = CosineScheduler(20, warmup_steps=5, base_lr=0.3, final_lr=0.01)
d2l.plot(d2l.arange(num_epochs), [scheduler(t) for t in range(num_epochs)])
# %%
net = net_fn()
trainer = torch.optim.SGD(net.parameters(), lr=0.3)
train(net, train_iter, test_iter, 1, loss, trainer, device,  # port: 1 epoch (30)
      scheduler)
"""

GAN = r'''
# %matplotlib inline  # port: a notebook's magic
from d2l import torch as d2l
import torch
from torch import nn
# %%
X = d2l.normal(0.0, 1, (200, 2))  # port: 200 examples (1000)
A = d2l.tensor([[1, 2], [-0.1, 0.5]])
b = d2l.tensor([1, 2])
data = d2l.matmul(X, A) + b
# %%
d2l.set_figsize()
d2l.plt.scatter(d2l.numpy(data[:100, 0]), d2l.numpy(data[:100, 1]));
print(f'The covariance matrix is\n{d2l.matmul(A.T, A)}')
# %%
batch_size = 8
data_iter = d2l.load_array((data,), batch_size)
# %%
net_G = nn.Sequential(nn.Linear(2, 2))
# %%
net_D = nn.Sequential(
    nn.Linear(2, 5), nn.Tanh(),
    nn.Linear(5, 3), nn.Tanh(),
    nn.Linear(3, 1))
# %%
#@save
def update_D(X, Z, net_D, net_G, loss, trainer_D):
    """Update discriminator."""
    batch_size = X.shape[0]
    ones = torch.ones((batch_size,), device=X.device)
    zeros = torch.zeros((batch_size,), device=X.device)
    trainer_D.zero_grad()
    real_Y = net_D(X)
    fake_X = net_G(Z)
    # Do not need to compute gradient for `net_G`, detach it from
    # computing gradients.
    fake_Y = net_D(fake_X.detach())
    loss_D = (loss(real_Y, ones.reshape(real_Y.shape)) +
              loss(fake_Y, zeros.reshape(fake_Y.shape))) / 2
    loss_D.backward()
    trainer_D.step()
    return loss_D
# %%
#@save
def update_G(Z, net_D, net_G, loss, trainer_G):
    """Update generator."""
    batch_size = Z.shape[0]
    ones = torch.ones((batch_size,), device=Z.device)
    trainer_G.zero_grad()
    # We could reuse `fake_X` from `update_D` to save computation
    fake_X = net_G(Z)
    # Recomputing `fake_Y` is needed since `net_D` is changed
    fake_Y = net_D(fake_X)
    loss_G = loss(fake_Y, ones.reshape(fake_Y.shape))
    loss_G.backward()
    trainer_G.step()
    return loss_G
# %%
def train(net_D, net_G, data_iter, num_epochs, lr_D, lr_G, latent_dim, data):
    loss = nn.BCEWithLogitsLoss(reduction='sum')
    for w in net_D.parameters():
        nn.init.normal_(w, 0, 0.02)
    for w in net_G.parameters():
        nn.init.normal_(w, 0, 0.02)
    trainer_D = torch.optim.Adam(net_D.parameters(), lr=lr_D)
    trainer_G = torch.optim.Adam(net_G.parameters(), lr=lr_G)
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[1, num_epochs], nrows=2, figsize=(5, 5),
                            legend=['discriminator', 'generator'])
    animator.fig.subplots_adjust(hspace=0.3)
    for epoch in range(num_epochs):
        # Train one epoch
        timer = d2l.Timer()
        metric = d2l.Accumulator(3)  # loss_D, loss_G, num_examples
        for (X,) in data_iter:
            batch_size = X.shape[0]
            Z = torch.normal(0, 1, size=(batch_size, latent_dim))
            metric.add(update_D(X, Z, net_D, net_G, loss, trainer_D),
                       update_G(Z, net_D, net_G, loss, trainer_G),
                       batch_size)
        # Visualize generated examples
        Z = torch.normal(0, 1, size=(100, latent_dim))
        fake_X = net_G(Z).detach().numpy()
        animator.axes[1].cla()
        animator.axes[1].scatter(data[:, 0], data[:, 1])
        animator.axes[1].scatter(fake_X[:, 0], fake_X[:, 1])
        animator.axes[1].legend(['real', 'generated'])
        # Show the losses
        loss_D, loss_G = metric[0]/metric[2], metric[1]/metric[2]
        animator.add(epoch + 1, (loss_D, loss_G))
    print(f'loss_D {loss_D:.3f}, loss_G {loss_G:.3f}, '
          f'{metric[2] / timer.stop():.1f} examples/sec')
# %%
lr_D, lr_G, latent_dim, num_epochs = 0.05, 0.005, 2, 3  # port: 3 epochs (20)
train(net_D, net_G, data_iter, num_epochs, lr_D, lr_G,
      latent_dim, d2l.numpy(data[:100]))
'''

DCGAN = r"""
from d2l import torch as d2l
import torch
import torchvision
from torch import nn
import warnings
# %%
#@save
d2l.DATA_HUB['pokemon'] = (d2l.DATA_URL + 'pokemon.zip',
                           'c065c0e2593b8b161a2d7873e42418bf6a21106c')

data_dir = '../data/pokemon'  # port: the test's small synthetic sprites (no download)
pokemon = torchvision.datasets.ImageFolder(data_dir)
# %%
batch_size = 256
transformer = torchvision.transforms.Compose([
    torchvision.transforms.Resize((64, 64)),
    torchvision.transforms.ToTensor(),
    torchvision.transforms.Normalize(0.5, 0.5)
])
pokemon.transform = transformer
data_iter = torch.utils.data.DataLoader(
    pokemon, batch_size=batch_size,
    shuffle=True, num_workers=d2l.get_dataloader_workers())
# %%
warnings.filterwarnings('ignore')
d2l.set_figsize((4, 4))
for X, y in data_iter:
    imgs = X[:20,:,:,:].permute(0, 2, 3, 1)/2+0.5
    d2l.show_images(imgs, num_rows=1, num_cols=4)  # port: 4 sprites shown (20: the axes cost a second)
    break
# %%
class G_block(nn.Module):
    def __init__(self, out_channels, in_channels=3, kernel_size=4, strides=2,
                 padding=1, **kwargs):
        super(G_block, self).__init__(**kwargs)
        self.conv2d_trans = nn.ConvTranspose2d(in_channels, out_channels,
                                kernel_size, strides, padding, bias=False)
        self.batch_norm = nn.BatchNorm2d(out_channels)
        self.activation = nn.ReLU()

    def forward(self, X):
        return self.activation(self.batch_norm(self.conv2d_trans(X)))
# %%
x = torch.zeros((2, 3, 16, 16))
g_blk = G_block(20)
g_blk(x).shape
# %%
x = torch.zeros((2, 3, 1, 1))
g_blk = G_block(20, strides=1, padding=0)
g_blk(x).shape
# %%
n_G = 8  # port: 8 channels (64)
net_G = nn.Sequential(
    G_block(in_channels=100, out_channels=n_G*8,
            strides=1, padding=0),                  # Output: (64 * 8, 4, 4)
    G_block(in_channels=n_G*8, out_channels=n_G*4), # Output: (64 * 4, 8, 8)
    G_block(in_channels=n_G*4, out_channels=n_G*2), # Output: (64 * 2, 16, 16)
    G_block(in_channels=n_G*2, out_channels=n_G),   # Output: (64, 32, 32)
    nn.ConvTranspose2d(in_channels=n_G, out_channels=3,
                       kernel_size=4, stride=2, padding=1, bias=False),
    nn.Tanh())  # Output: (3, 64, 64)
# %%
x = torch.zeros((1, 100, 1, 1))
net_G(x).shape
# %%
alphas = [0, .2, .4, .6, .8, 1]
x = d2l.arange(-2, 1, 0.1)
Y = [d2l.numpy(nn.LeakyReLU(alpha)(x)) for alpha in alphas]
d2l.plot(d2l.numpy(x), Y, 'x', 'y', alphas)
# %%
class D_block(nn.Module):
    def __init__(self, out_channels, in_channels=3, kernel_size=4, strides=2,
                padding=1, alpha=0.2, **kwargs):
        super(D_block, self).__init__(**kwargs)
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size,
                                strides, padding, bias=False)
        self.batch_norm = nn.BatchNorm2d(out_channels)
        self.activation = nn.LeakyReLU(alpha, inplace=True)

    def forward(self, X):
        return self.activation(self.batch_norm(self.conv2d(X)))
# %%
x = torch.zeros((2, 3, 16, 16))
d_blk = D_block(20)
d_blk(x).shape
# %%
n_D = 8  # port: 8 channels (64)
net_D = nn.Sequential(
    D_block(n_D),  # Output: (64, 32, 32)
    D_block(in_channels=n_D, out_channels=n_D*2),  # Output: (64 * 2, 16, 16)
    D_block(in_channels=n_D*2, out_channels=n_D*4),  # Output: (64 * 4, 8, 8)
    D_block(in_channels=n_D*4, out_channels=n_D*8),  # Output: (64 * 8, 4, 4)
    nn.Conv2d(in_channels=n_D*8, out_channels=1,
              kernel_size=4, bias=False))  # Output: (1, 1, 1)
# %%
x = torch.zeros((1, 3, 64, 64))
net_D(x).shape
# %%
def train(net_D, net_G, data_iter, num_epochs, lr, latent_dim,
          device=d2l.try_gpu()):
    loss = nn.BCEWithLogitsLoss(reduction='sum')
    for w in net_D.parameters():
        nn.init.normal_(w, 0, 0.02)
    for w in net_G.parameters():
        nn.init.normal_(w, 0, 0.02)
    net_D, net_G = net_D.to(device), net_G.to(device)
    trainer_hp = {'lr': lr, 'betas': [0.5,0.999]}
    trainer_D = torch.optim.Adam(net_D.parameters(), **trainer_hp)
    trainer_G = torch.optim.Adam(net_G.parameters(), **trainer_hp)
    animator = d2l.Animator(xlabel='epoch', ylabel='loss',
                            xlim=[1, num_epochs], nrows=2, figsize=(5, 5),
                            legend=['discriminator', 'generator'])
    animator.fig.subplots_adjust(hspace=0.3)
    for epoch in range(1, num_epochs + 1):
        # Train one epoch
        timer = d2l.Timer()
        metric = d2l.Accumulator(3)  # loss_D, loss_G, num_examples
        for X, _ in data_iter:
            batch_size = X.shape[0]
            Z = torch.normal(0, 1, size=(batch_size, latent_dim, 1, 1))
            X, Z = X.to(device), Z.to(device)
            metric.add(d2l.update_D(X, Z, net_D, net_G, loss, trainer_D),
                       d2l.update_G(Z, net_D, net_G, loss, trainer_G),
                       batch_size)
        # Show generated examples
        Z = torch.normal(0, 1, size=(21, latent_dim, 1, 1), device=device)
        # Normalize the synthetic data to N(0, 1)
        fake_x = net_G(Z).permute(0, 2, 3, 1) / 2 + 0.5
        imgs = torch.cat(
            [torch.cat([
                fake_x[i * 7 + j].cpu().detach() for j in range(7)], dim=1)
             for i in range(len(fake_x)//7)], dim=0)
        animator.axes[1].cla()
        animator.axes[1].imshow(imgs)
        # Show the losses
        loss_D, loss_G = metric[0] / metric[2], metric[1] / metric[2]
        animator.add(epoch, (loss_D, loss_G))
    print(f'loss_D {loss_D:.3f}, loss_G {loss_G:.3f}, '
          f'{metric[2] / timer.stop():.1f} examples/sec on {str(device)}')
# %%
latent_dim, lr, num_epochs = 100, 0.005, 2  # port: 2 epochs (20)
train(net_D, net_G, data_iter, num_epochs, lr, latent_dim)
"""


VISION_MORE = r'''
import numpy as np
import torch


class ToTensor:
    """An (H, W) or (H, W, C) uint8 image as a (C, H, W) float32 tensor in [0, 1]."""

    def __call__(self, image):
        image = image[None] if image.ndim == 2 else image.transpose(2, 0, 1)
        return torch.tensor(image / np.float32(255), dtype=torch.float32)


class Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, x):
        return (x - self.mean) / self.std
'''


@pytest.fixture(autouse=True)
def _one_thread():
    """torch on one thread (and the BLAS) in the checks after the sections too, as in them."""
    with one_thread(pytest.importorskip("torch")):
        yield


@pytest.fixture(autouse=True)
def _stand_ins(monkeypatch):
    """d2l_port's stand-ins, and what these chapters call of torchvision beside them: a
    ``ToTensor`` of colour images, ``Normalize`` and ``datasets.ImageFolder`` (tests/
    test_d2l_vision.py's); Fashion-MNIST's stand-in made once (``fashion_images``)."""
    import sys  # noqa: PLC0415

    original = d2l_port.stand_ins

    def stand_ins(lib, monkeypatch):
        original(lib, monkeypatch)
        space = {}
        exec(VISION_MORE.replace("torch", lib.__name__), space)
        vision = sys.modules[lib.__name__ + "vision"]
        for name in "ToTensor", "Normalize":
            setattr(vision.transforms, name, space[name])
        chapter = {}  # tests/test_d2l_vision.py's stand-ins: its ImageFolder of .npy images
        exec(VISION.replace("torch", lib.__name__), chapter)
        vision.datasets.ImageFolder = chapter["ImageFolder"]

    monkeypatch.setattr(d2l_port, "stand_ins", stand_ins)
    monkeypatch.setattr(d2l_port, "fashion_images", fashion_images)


@functools.cache
def fashion_images() -> dict:
    """d2l_port's Fashion-MNIST stand-in, 64 images to train on and 32 to test on, made once."""
    from tests.test_torch_tutorials_u import digits28  # noqa: PLC0415

    x, y = digits28()
    images = (x * 255).round().astype(np.uint8)
    return {True: (images[:64], y[:64]), False: (images[-32:], y[-32:])}


def airfoil(folder, rows=100) -> None:
    """The airfoil self-noise table's place: ``rows`` rows of 5 features and a target that
    is linear in them plus noise, tab-separated as the book's file."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 5))
    y = X @ np.array([1.0, -2.0, 0.5, 1.5, -1.0]) + rng.normal(scale=0.5, size=rows)
    (folder / "data").mkdir(exist_ok=True)
    np.savetxt(folder / "data" / "airfoil_self_noise.dat", np.column_stack([X, y]), delimiter="\t")


def sprites(folder, count=16) -> None:
    """The Pokemon sprites' place: ``count`` 32x32 colour images (a disc of a random colour on
    white), one class, as .npy files."""
    rng = np.random.default_rng(0)
    where = folder / "data" / "pokemon" / "pokemon"
    where.mkdir(parents=True)
    yy, xx = np.mgrid[:32, :32]
    for i in range(count):
        image = np.full((32, 32, 3), 255, np.uint8)
        centre, radius = rng.uniform(10, 22, size=2), rng.uniform(5, 10)
        image[(yy - centre[0]) ** 2 + (xx - centre[1]) ** 2 < radius**2] = rng.integers(0, 255, 3)
        np.save(where / f"{i:03}.npy", image)


def kinds(printed: str) -> list[str]:
    """test_uvadlc_intro's ``kinds`` (numbers and reprs aside), an object's address dropped
    (a cell ending in ``d2l.plt.legend()`` shows the legend's repr)."""
    return kinds_of(re.sub(r" at 0x[0-9a-f]+", "", printed))


def both(text, tmp_path, monkeypatch, keep=None):
    """d2l_port's ``both`` with the book's library parts these chapters call (``EXTRA``)."""
    return d2l_port.both(text, tmp_path, monkeypatch, keep=keep, extra=EXTRA)


def plotted(space: dict) -> list[np.ndarray]:
    """The y values of every line of every figure still open, in order."""
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figures = [plt.figure(n) for n in plt.get_fignums()]
    return [np.asarray(line.get_ydata(), dtype=float) for f in figures for a in f.axes for line in a.get_lines()]  # fmt: skip


def same_plots(our: dict, their: dict, rtol=1e-5, atol=1e-6) -> None:
    assert len(our["kept"]) == len(their["kept"]) > 0
    for ours, theirs in zip(our["kept"], their["kept"], strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def test_optimization_intro(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(OPTIMIZATION_INTRO, tmp_path, monkeypatch, keep=plotted)
    assert kinds(ours) == kinds(theirs)
    same_plots(our, their)  # the last curve of each figure: tanh's, and the saddle's wireframe
    for space in our, their:
        x = np.arange(-1.0, 2.0, 0.01)
        f = space["f"](space["d2l"].tensor(x, dtype=space["d2l"].float32))
        np.testing.assert_allclose(f.numpy(), x * np.cos(np.pi * x), rtol=1e-4, atol=1e-5)


def test_convexity(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(CONVEXITY, tmp_path, monkeypatch, keep=plotted)
    assert kinds(ours) == kinds(theirs)
    same_plots(our, their)
    x = np.arange(-2, 2, 0.01)  # the three functions and (x - 1)^2, with their chords
    np.testing.assert_allclose(our["kept"][-2], (x - 1) ** 2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(our["kept"][-1], [6.25, 0])


def test_gd(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GD, tmp_path, monkeypatch, keep=plotted)
    assert kinds(ours) == kinds(theirs)
    pattern = r"x\d?: (?:[tT]ensor\()?(-?\d+\.\d*)"  # a tensor's repr: torch's 4 decimals
    np.testing.assert_allclose(numbers(pattern, ours), numbers(pattern, theirs), rtol=2e-5)
    # the book's: eta 0.2 converges (0.6^10 * 10), 1.1 diverges, gd_2d reaches the minimum
    assert numbers(pattern, ours)[:3] == [0.060466, 3.486784, 61.917364]
    same_plots(our, their, rtol=1e-4, atol=1e-4)


def test_sgd(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SGD, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in ours, theirs:  # the noisy steps end near the minimum but for the fast decay
        constant, exponential, polynomial = (np.hypot(*pair) for pair in np.reshape(numbers(r"x\d: (-?\d+\.\d+)", printed), (3, 2)))  # fmt: skip
        assert constant < 1 and polynomial < 1 and exponential > 0.3, printed


# ---------------------------------------------------------------- the optimizers on airfoil


def losses(printed: str) -> list[float]:
    """What train_ch11 and train_concise_ch11 printed: the loss after training."""
    return numbers(r"loss: (\d+\.\d+)", printed)


def learns(ours: str, theirs: str, count: int, below=0.4) -> None:
    """Each training printed its loss, below the 0.5 of w = 0 (the target is standardised)."""
    for printed in ours, theirs:
        assert len(losses(printed)) == count and max(losses(printed)) < below, printed


W0 = np.random.default_rng(1).normal(0, 0.01, size=(5, 1)).astype(np.float32)


def airfoil_batches(count=4) -> list:
    rng = np.random.default_rng(2)
    return [(rng.normal(size=(10, 5)).astype(np.float32), rng.normal(size=10).astype(np.float32)) for _ in range(count)]  # fmt: skip


def same_scratch_steps(our: dict, their: dict, trainer: str, states, hyperparams: dict) -> None:
    """The section's optimizer written from scratch (``trainer``, its states made by the
    function named ``states``), given the same w, b and batches in both libraries, in
    train_ch11's loop: torch's parameters after each step."""
    import tricycle  # noqa: PLC0415

    results = []
    for space, lib in (their, their["torch"]), (our, tricycle):
        d2l = space["d2l"]
        w, b = lib.tensor(W0, requires_grad=True), lib.zeros((1), requires_grad=True)
        state, hyper, steps = (space[states](5) if states else None), dict(hyperparams), []
        for X, y in airfoil_batches():
            loss = d2l.squared_loss(d2l.linreg(lib.tensor(X), w, b), lib.tensor(y)).mean()
            loss.backward()
            space[trainer]([w, b], state, hyper)
            steps.append(np.concatenate([w.detach().numpy().ravel(), b.detach().numpy()]))
        results.append(steps)
    np.testing.assert_allclose(results[1], results[0], rtol=1e-5, atol=1e-7)
    assert np.abs(results[0][-1][:5] - W0.ravel()).max() > 1e-3  # the steps moved w


def same_concise_steps(our: dict, their: dict, name: str, hyperparams: dict) -> None:
    """train_concise_ch11's model and loop, given torch's weights, with ``<lib>.optim.<name>``
    (``hyperparams``) in both libraries: torch's parameters after each step."""
    import tricycle  # noqa: PLC0415

    theirs = their["torch"].nn.Sequential(their["torch"].nn.Linear(5, 1))
    ours = tricycle.nn.Sequential(tricycle.nn.Linear(5, 1))
    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    results = []
    for net, lib in (theirs, their["torch"]), (ours, tricycle):
        optimizer, loss, steps = getattr(lib.optim, name)(net.parameters(), **hyperparams), lib.nn.MSELoss(reduction="none"), []  # fmt: skip
        for X, y in airfoil_batches():
            optimizer.zero_grad()
            out = net(lib.tensor(X))
            loss(out, lib.tensor(y).reshape(out.shape)).mean().backward()
            optimizer.step()
            steps.append({k: np.asarray(v).copy() for k, v in tricycle.nn.to_torch(net).items()} if lib is tricycle else {k: v.detach().numpy().copy() for k, v in net.state_dict().items()})  # fmt: skip
        results.append(steps)
    for got, want in zip(results[1], results[0], strict=True):
        for key in want:
            np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-7, err_msg=key)


def test_minibatch_sgd(tmp_path, monkeypatch):
    airfoil(tmp_path)
    (theirs, their), (ours, our) = both(MINIBATCH_SGD, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for space in our, their:  # the products by element, by column, by block: B C
        want = space["B"].numpy() @ space["C"].numpy()
        np.testing.assert_allclose(space["A"].numpy(), want, rtol=1e-5, atol=1e-5)
        assert len(space["gd_res"][0]) == len(space["gd_res"][1]) == 5  # a point every 2 epochs
    learns(ours, theirs, 5, below=0.2)
    same_scratch_steps(our, their, "sgd", None, {"lr": 0.05})
    same_concise_steps(our, their, "SGD", {"lr": 0.01})


def test_momentum(tmp_path, monkeypatch):
    airfoil(tmp_path)
    last_four = lambda space: plotted(space)[-4:]  # (1 - eta lambda)^t, on the last figure  # noqa: E731
    (theirs, their), (ours, our) = both(MOMENTUM, tmp_path, monkeypatch, keep=last_four)
    assert kinds(ours) == kinds(theirs)
    np.testing.assert_allclose(numbers(r"x\d: (-?\d+\.\d+)", ours), numbers(r"x\d: (-?\d+\.\d+)", theirs), rtol=1e-6)  # fmt: skip
    learns(ours, theirs, 4)
    same_plots(our, their)
    np.testing.assert_allclose(our["kept"][0], 0.99 ** np.arange(20), rtol=1e-5)
    same_scratch_steps(our, their, "sgd_momentum", "init_momentum_states", {"lr": 0.02, "momentum": 0.5})  # fmt: skip
    same_concise_steps(our, their, "SGD", {"lr": 0.005, "momentum": 0.9})


def test_adagrad(tmp_path, monkeypatch):
    airfoil(tmp_path)
    (theirs, their), (ours, our) = both(ADAGRAD, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    np.testing.assert_allclose(numbers(r"x\d: (-?\d+\.\d+)", ours), numbers(r"x\d: (-?\d+\.\d+)", theirs), rtol=1e-6)  # fmt: skip
    learns(ours, theirs, 2)
    same_scratch_steps(our, their, "adagrad", "init_adagrad_states", {"lr": 0.1})
    same_concise_steps(our, their, "Adagrad", {"lr": 0.1})


def test_rmsprop(tmp_path, monkeypatch):
    airfoil(tmp_path)
    (theirs, their), (ours, our) = both(RMSPROP, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    np.testing.assert_allclose(numbers(r"x\d: (-?\d+\.\d+)", ours), numbers(r"x\d: (-?\d+\.\d+)", theirs), rtol=1e-6)  # fmt: skip
    learns(ours, theirs, 2)
    same_scratch_steps(our, their, "rmsprop", "init_rmsprop_states", {"lr": 0.01, "gamma": 0.9})
    same_concise_steps(our, their, "RMSprop", {"lr": 0.01, "alpha": 0.9})


def test_adadelta(tmp_path, monkeypatch):
    airfoil(tmp_path)
    (theirs, their), (ours, our) = both(ADADELTA, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    learns(ours, theirs, 2)
    same_scratch_steps(our, their, "adadelta", "init_adadelta_states", {"rho": 0.9})
    same_concise_steps(our, their, "Adadelta", {"rho": 0.9})


def test_adam(tmp_path, monkeypatch):
    airfoil(tmp_path)
    (theirs, their), (ours, our) = both(ADAM, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    learns(ours, theirs, 3)
    same_scratch_steps(our, their, "adam", "init_adam_states", {"lr": 0.01, "t": 1})
    same_scratch_steps(our, their, "yogi", "init_adam_states", {"lr": 0.01, "t": 1})
    same_concise_steps(our, their, "Adam", {"lr": 0.01})


def same_training(our: dict, their: dict, scheduler, steps=(3, 2)) -> None:
    """The section's ``train`` (its ``net_fn`` LeNet, tricycle's given torch's weights),
    ``steps[0]`` epochs of ``steps[1]`` batches (one batch of 16 images, seen again and
    again), SGD under ``scheduler(space, trainer)``: torch's weights after, and the batch's
    loss falls."""
    import tricycle  # noqa: PLC0415
    from tests.test_torch_tutorials_u import digits28  # noqa: PLC0415

    x, y = digits28()
    X, y = x[:16].reshape(16, 1, 28, 28).astype(np.float32), y[:16]
    theirs, ours = their["net_fn"](), our["net_fn"]()
    assert tricycle.nn.from_torch(ours, theirs.state_dict()) == ([], [])
    before, after = [], []
    for space, lib, net in (their, their["torch"], theirs), (our, tricycle, ours):
        batches = [(lib.tensor(X), lib.tensor(y))] * steps[1]
        with lib.no_grad():
            before.append(float(space["loss"](net(batches[0][0]), batches[0][1])))
        trainer = lib.optim.SGD(net.parameters(), lr=0.1)
        space["train"](net, batches, batches, steps[0], space["loss"], trainer, space["device"], scheduler(space, trainer))  # fmt: skip
        with lib.no_grad():
            after.append(float(space["loss"](net(batches[0][0]), batches[0][1])))
    same_state(ours, theirs, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(after[1], after[0], rtol=1e-3)
    assert after[0] < before[0] - 0.05 and after[1] < before[1] - 0.05, (before, after)


def test_lr_scheduler(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(LR_SCHEDULER, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in ours, theirs:  # five LeNets, each trained an epoch of two batches
        assert len(numbers(r"train loss (\d+\.\d+)", printed)) == 5, printed
    # the section's get_lr over torch's MultiStepLR and tricycle's: the same rates
    import tricycle  # noqa: PLC0415

    rates = []
    for space, lib in (their, their["torch"]), (our, tricycle):
        trainer = lib.optim.SGD([lib.nn.Parameter(lib.zeros(3))], lr=0.5)
        scheduler = space["lr_scheduler"].MultiStepLR(trainer, milestones=[15, 30], gamma=0.5)
        assert scheduler.__module__ == space["lr_scheduler"].__name__  # the loop's test
        rates.append([space["get_lr"](trainer, scheduler) for t in range(35)])
    assert rates[1] == rates[0] and rates[0][14:16] == [0.5, 0.25] and rates[0][-1] == 0.125
    # the LeNet, given torch's weights: torch's outputs and gradients, and torch's training
    # under the section's own scheduler (the cosine with warmup)
    same_numbers(their["net"], our["net"], (4, 1, 28, 28))
    same_training(our, their, lambda space, trainer: space["CosineScheduler"](3, warmup_steps=1, base_lr=0.1, final_lr=0.01))  # fmt: skip


# --------------------------------------------------------------------------------- the GANs


def same_state(ours, theirs, rtol=1e-5, atol=1e-6) -> None:
    """A tricycle model's parameters and buffers (torch's names and layouts) are torch's."""
    import tricycle  # noqa: PLC0415

    mine = {k: v for k, v in tricycle.nn.to_torch(ours).items() if "num_batches" not in k}
    want = {k: v.detach().numpy() for k, v in theirs.state_dict().items() if "num_batches" not in k}  # fmt: skip
    assert set(mine) == set(want)
    for key, value in want.items():
        np.testing.assert_allclose(np.asarray(mine[key]), value, rtol=rtol, atol=atol, err_msg=key)


def same_gan_step(our: dict, their: dict, X: np.ndarray, Z: np.ndarray, **adam) -> None:
    """The book's ``update_D`` then ``update_G`` on a batch, from the section's trained
    networks (tricycle's given torch's weights), with Adam (``adam``): torch's losses, and
    torch's parameters and running statistics after the steps."""
    import tricycle  # noqa: PLC0415

    for name in "net_D", "net_G":
        assert tricycle.nn.from_torch(our[name], their[name].state_dict()) == ([], [])
    results = []
    for space, lib in (their, their["torch"]), (our, tricycle):
        d2l, net_D, net_G = space["d2l"], space["net_D"], space["net_G"]
        loss = lib.nn.BCEWithLogitsLoss(reduction="sum")
        trainer_D = lib.optim.Adam(net_D.parameters(), **adam)
        trainer_G = lib.optim.Adam(net_G.parameters(), **adam)
        X_, Z_ = lib.tensor(X), lib.tensor(Z)
        loss_D = d2l.update_D(X_, Z_, net_D, net_G, loss, trainer_D)
        loss_G = d2l.update_G(Z_, net_D, net_G, loss, trainer_G)
        results.append([float(loss_D), float(loss_G)])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-4)
    # Adam's first step is lr times about the gradient's sign: where a gradient is about 0,
    # float rounding moves a weight by a part of lr
    atol = adam["lr"] / 50
    same_state(our["net_D"], their["net_D"], rtol=1e-4, atol=atol)
    same_state(our["net_G"], their["net_G"], rtol=1e-4, atol=atol)


def test_gan(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GAN, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for printed in ours, theirs:  # A^T A, as the book prints it
        assert numbers(r"(\d+\.\d+)", printed)[:4] == [1.01, 1.95, 1.95, 4.25], printed
    for space in our, their:  # the generator (initially ~0) moved toward the data's mean
        lib = space.get("torch") or space["tricycle"]
        fake = space["net_G"](lib.normal(0, 1, size=(500, 2))).detach().numpy()
        assert np.linalg.norm(fake.mean(0) - [1, 2]) < np.linalg.norm([1, 2]) - 0.2, fake.mean(0)
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(8, 2)) @ [[1, 2], [-0.1, 0.5]] + [1, 2]).astype(np.float32)
    same_gan_step(our, their, X, rng.normal(size=(8, 2)).astype(np.float32), lr=0.05)


def test_dcgan(tmp_path, monkeypatch):
    sprites(tmp_path)
    (theirs, their), (ours, our) = both(DCGAN, tmp_path, monkeypatch)
    assert kinds(ours) == kinds(theirs)
    for space in our, their:  # the sprites, resized to 64x64 and normalised to [-1, 1]
        X = space["X"]
        assert tuple(X.shape) == (16, 3, 64, 64) and -1 <= float(X.min()) < float(X.max()) <= 1
    for printed in ours, theirs:  # trained two epochs of two batches: its two losses printed
        assert len(numbers(r"loss_[DG] (\d+\.\d+)", printed)) == 2, printed
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(4, 3, 64, 64)).astype(np.float32)
    same_gan_step(our, their, X, rng.normal(size=(4, 100, 1, 1)).astype(np.float32), lr=0.005, betas=[0.5, 0.999])  # fmt: skip


def test_the_held_library_is_the_books():
    """``EXTRA`` is the book's repository's d2l/torch.py (its parts these chapters call, in
    its order), but for the lines marked ``# port:`` (where the read-only mirror is here)."""
    _, _, others = d2l_port.against_book(EXTRA, d2l_port.book())
    assert others
