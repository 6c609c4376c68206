"""Dive into Deep Learning (d2l-ai/d2l-en), its PyTorch code of chapter_gaussian-processes,
chapter_hyperparameter-optimization and chapter_computational-performance's CPU sections, run
cell by cell on tricycle with ``torch`` replaced by ``tricycle`` in its text and in the text of
the book's own library (tests/d2l_port.py, with the parts these chapters add held here as
``EXTRA``: ``Benchmark``, ``rbfkernel``, ``HPOTrainer``, the searchers, schedulers and tuner,
``hpo_objective_lenet`` and ``SuccessiveHalvingScheduler``); the method of
tests/test_d2l_optim_gan.py:

- gp-priors (samples of linear functions, the RBF kernel through scipy's ``distance_matrix``,
  samples of a GP prior) and gp-inference's from-scratch parts (the data, the prior, the
  marginal likelihood's hyperparameters found by ``scipy.optimize.minimize``, the posterior's
  mean, covariance and samples, the data made tensors). gp-intro holds no code.
  gp-inference's gpytorch cells (``ExactGP``, ``ExactMarginalLogLikelihood``) are left out:
  gpytorch is not installed and is written for torch;
- hyperopt-intro (``HPOTrainer.validation_error``, random search of softmax regression's
  learning rate drawn from ``scipy.stats.loguniform``), hyperopt-api (``RandomSearcher``,
  ``BasicScheduler``, ``HPOTuner`` with its bookkeeping, ``hpo_objective_lenet``, the
  incumbent's trajectory on a ``ProgressBoard``), sh-intro (``SuccessiveHalvingScheduler``:
  rungs, promotions); rs-async and sh-async as far as they run without syne-tune (not
  installed): their objective ``hpo_objective_lenet_synetune`` reporting through a stand-in
  ``syne_tune.Reporter`` (what it was told, kept), run for the initial configuration; syne-
  tune's ``Tuner``, ``PythonBackend``, ``RandomSearch``, ``ASHA`` and ``load_experiment``
  (worker processes, a results table) are left out;
- hybridize (a program as text compiled by ``compile``/``exec``, the MLP factory, the
  ``Benchmark`` context; ``torch.jit.script`` and ``ScriptModule.save`` under torch only:
  tricycle has no TorchScript, its module runs as it is and is saved by ``torch.save``),
  async-computation and auto-parallelism on the CPU (``d2l.try_gpu``'s CPU, the one CPU
  standing for both GPUs, ``torch.cuda.synchronize`` called only where a GPU is, copies
  ``to('cpu', non_blocking=...)``).

Each changed line ends in ``# port:`` and says why: epochs, trials, iterations and matrices
shrunk, a shell command and notebook magics in Python, what gpytorch and syne-tune serve left
out. Fashion-MNIST's stand-in (test_d2l_optim_gan's) gives 64 images to train on and 32 to
validate on.

Each section runs under torch (skipped without it or scipy), then under tricycle, seeded, on
the CPU and on one thread; both print the same lines (numbers, reprs and the library's name
aside). The GP sections' numbers are numpy's: both draw the same curves. The searches draw the
same configurations (numpy's seeded generator); successive halving promotes each rung's best.
With torch's weights (``nn.from_torch``): softmax regression's and LeNet's validation errors
by ``HPOTrainer`` are torch's, LeNet's and the hybridize MLP's outputs and gradients are
torch's, and the MLP gives the TorchScript module's outputs; the products of
async-computation and auto-parallelism are the matrices' products. The last test checks that
``EXTRA`` is the book's text but for its ``# port:`` lines.
"""

# ruff: noqa: E501, W291, W293

import re

import numpy as np
import pytest

from tests import d2l_port
from tests.helpers import module
from tests.test_d2l_optim_gan import fashion_images, kinds, plotted, same_plots
from tests.test_dlwpt_part1 import same_numbers
from tests.test_torch_examples_b import numbers
from tests.test_torch_vision_tutorials import host

pytestmark = [  # and torch's, of the book's code as it is written
    pytest.mark.filterwarnings("ignore:FigureCanvasAgg is non-interactive"),
    pytest.mark.filterwarnings("ignore:Lazy modules are a new feature"),
    pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated:DeprecationWarning"),
]

EXTRA = r'''
class Benchmark:
    """For measuring running time."""
    def __init__(self, description='Done'):
        """Defined in :numref:`sec_hybridize`"""
        self.description = description

    def __enter__(self):
        self.timer = d2l.Timer()
        return self

    def __exit__(self, *args):
        print(f'{self.description}: {self.timer.stop():.4f} sec')

from scipy.spatial import distance_matrix  # port: d2l_port's head leaves scipy out (not in tricycle's test extra); these tests import it where scipy is
def rbfkernel(x1, x2, ls=4.):
    dist = distance_matrix(np.expand_dims(x1, 1), np.expand_dims(x2, 1))
    return np.exp(-(1. / ls / 2) * (dist ** 2))

class HPOTrainer(d2l.Trainer):
    """Defined in :numref:`sec_definition_hpo`"""
    def validation_error(self):
        self.model.eval()
        accuracy = 0
        val_batch_idx = 0
        for batch in self.val_dataloader:
            with torch.no_grad():
                x, y = self.prepare_batch(batch)
                y_hat = self.model(x)
                accuracy += self.model.accuracy(y_hat, y)
            val_batch_idx += 1
        return 1 -  accuracy / val_batch_idx

class HPOSearcher(d2l.HyperParameters):
    """Defined in :numref:`sec_api_hpo`"""
    def sample_configuration() -> dict:
        raise NotImplementedError

    def update(self, config: dict, error: float, additional_info=None):
        pass

class RandomSearcher(HPOSearcher):
    """Defined in :numref:`sec_api_hpo`"""
    def __init__(self, config_space: dict, initial_config=None):
        self.save_hyperparameters()

    def sample_configuration(self) -> dict:
        if self.initial_config is not None:
            result = self.initial_config
            self.initial_config = None
        else:
            result = {
                name: domain.rvs()
                for name, domain in self.config_space.items()
            }
        return result

class HPOScheduler(d2l.HyperParameters):
    """Defined in :numref:`sec_api_hpo`"""
    def suggest(self) -> dict:
        raise NotImplementedError

    def update(self, config: dict, error: float, info=None):
        raise NotImplementedError

class BasicScheduler(HPOScheduler):
    """Defined in :numref:`sec_api_hpo`"""
    def __init__(self, searcher: HPOSearcher):
        self.save_hyperparameters()

    def suggest(self) -> dict:
        return self.searcher.sample_configuration()

    def update(self, config: dict, error: float, info=None):
        self.searcher.update(config, error, additional_info=info)

class HPOTuner(d2l.HyperParameters):
    """Defined in :numref:`sec_api_hpo`"""
    def __init__(self, scheduler: HPOScheduler, objective: callable):
        self.save_hyperparameters()
        # Bookeeping results for plotting
        self.incumbent = None
        self.incumbent_error = None
        self.incumbent_trajectory = []
        self.cumulative_runtime = []
        self.current_runtime = 0
        self.records = []

    def run(self, number_of_trials):
        for i in range(number_of_trials):
            start_time = time.time()
            config = self.scheduler.suggest()
            print(f"Trial {i}: config = {config}")
            error = self.objective(**config)
            error = float(d2l.numpy(error.cpu()))
            self.scheduler.update(config, error)
            runtime = time.time() - start_time
            self.bookkeeping(config, error, runtime)
            print(f"    error = {error}, runtime = {runtime}")

    def bookkeeping(self, config: dict, error: float, runtime: float):
        """Defined in :numref:`sec_api_hpo`"""
        self.records.append({"config": config, "error": error, "runtime": runtime})
        # Check if the last hyperparameter configuration performs better
        # than the incumbent
        if self.incumbent is None or self.incumbent_error > error:
            self.incumbent = config
            self.incumbent_error = error
        # Add current best observed performance to the optimization trajectory
        self.incumbent_trajectory.append(self.incumbent_error)
        # Update runtime
        self.current_runtime += runtime
        self.cumulative_runtime.append(self.current_runtime)

def hpo_objective_lenet(learning_rate, batch_size, max_epochs=10):
    """Defined in :numref:`sec_api_hpo`"""
    model = d2l.LeNet(lr=learning_rate, num_classes=10)
    trainer = d2l.HPOTrainer(max_epochs=max_epochs, num_gpus=1)
    data = d2l.FashionMNIST(batch_size=batch_size)
    model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
    trainer.fit(model=model, data=data)
    validation_error = trainer.validation_error()
    return validation_error

class SuccessiveHalvingScheduler(d2l.HPOScheduler):
    """Defined in :numref:`sec_mf_hpo`"""
    def __init__(self, searcher, eta, r_min, r_max, prefact=1):
        self.save_hyperparameters()
        # Compute K, which is later used to determine the number of configurations
        self.K = int(np.log(r_max / r_min) / np.log(eta))
        # Define the rungs
        self.rung_levels = [r_min * eta ** k for k in range(self.K + 1)]
        if r_max not in self.rung_levels:
            # The final rung should be r_max
            self.rung_levels.append(r_max)
            self.K += 1
        # Bookkeeping
        self.observed_error_at_rungs = defaultdict(list)
        self.all_observed_error_at_rungs = defaultdict(list)
        # Our processing queue
        self.queue = []

    def suggest(self):
        """Defined in :numref:`sec_mf_hpo_sh`"""
        if len(self.queue) == 0:
            # Start a new round of successive halving
            # Number of configurations for the first rung:
            n0 = int(self.prefact * self.eta ** self.K)
            for _ in range(n0):
                config = self.searcher.sample_configuration()
                config["max_epochs"] = self.r_min  # Set r = r_min
                self.queue.append(config)
        # Return an element from the queue
        return self.queue.pop()

    def update(self, config: dict, error: float, info=None):
        """Defined in :numref:`sec_mf_hpo_sh`"""
        ri = int(config["max_epochs"])  # Rung r_i
        # Update our searcher, e.g if we use Bayesian optimization later
        self.searcher.update(config, error, additional_info=info)
        self.all_observed_error_at_rungs[ri].append((config, error))
        if ri < self.r_max:
            # Bookkeeping
            self.observed_error_at_rungs[ri].append((config, error))
            # Determine how many configurations should be evaluated on this rung
            ki = self.K - self.rung_levels.index(ri)
            ni = int(self.prefact * self.eta ** ki)
            # If we observed all configuration on this rung r_i, we estimate the
            # top 1 / eta configuration, add them to queue and promote them for
            # the next rung r_{i+1}
            if len(self.observed_error_at_rungs[ri]) >= ni:
                kiplus1 = ki - 1
                niplus1 = int(self.prefact * self.eta ** kiplus1)
                best_performing_configurations = self.get_top_n_configurations(
                    rung_level=ri, n=niplus1
                )
                riplus1 = self.rung_levels[self.K - kiplus1]  # r_{i+1}
                # Queue may not be empty: insert new entries at the beginning
                self.queue = [
                    dict(config, max_epochs=riplus1)
                    for config in best_performing_configurations
                ] + self.queue
                self.observed_error_at_rungs[ri] = []  # Reset

    def get_top_n_configurations(self, rung_level, n):
        """Defined in :numref:`sec_mf_hpo_sh`"""
        rung = self.observed_error_at_rungs[rung_level]
        if not rung:
            return []
        sorted_rung = sorted(rung, key=lambda x: x[1])
        return [x[0] for x in sorted_rung[:n]]
'''

# ------------------------------------------------------------------ chapter_gaussian-processes

GP_PRIORS = r"""
from d2l import torch as d2l
import numpy as np
from scipy.spatial import distance_matrix

d2l.set_figsize()
# %%
def lin_func(x, n_sample):
    preds = np.zeros((n_sample, x.shape[0]))
    for ii in range(n_sample):
        w = np.random.normal(0, 1, 2)
        y = w[0] + w[1] * x
        preds[ii, :] = y
    return preds

x_points = np.linspace(-5, 5, 50)
outs = lin_func(x_points, 10)
lw_bd = -2 * np.sqrt((1 + x_points ** 2))
up_bd = 2 * np.sqrt((1 + x_points ** 2))

d2l.plt.fill_between(x_points, lw_bd, up_bd, alpha=0.25)
d2l.plt.plot(x_points, np.zeros(len(x_points)), linewidth=4, color='black')
d2l.plt.plot(x_points, outs.T)
d2l.plt.xlabel("x", fontsize=20)
d2l.plt.ylabel("f(x)", fontsize=20)
d2l.plt.show()
# %%
def rbfkernel(x1, x2, ls=4.):  #@save
    dist = distance_matrix(np.expand_dims(x1, 1), np.expand_dims(x2, 1))
    return np.exp(-(1. / ls / 2) * (dist ** 2))

x_points = np.linspace(0, 5, 50)
meanvec = np.zeros(len(x_points))
covmat = rbfkernel(x_points,x_points, 1)

prior_samples= np.random.multivariate_normal(meanvec, covmat, size=5);
d2l.plt.plot(x_points, prior_samples.T, alpha=0.5)
d2l.plt.show()
"""

GP_INFERENCE = r"""
from d2l import torch as d2l
import numpy as np
from scipy.spatial import distance_matrix
from scipy import optimize
import matplotlib.pyplot as plt
import math
import torch
# import gpytorch  # port: gpytorch is not installed (and is torch's): its cells are left out
import os

d2l.set_figsize()
# %%
def data_maker1(x, sig):
    return np.sin(x) + 0.5 * np.sin(4 * x) + np.random.randn(x.shape[0]) * sig

sig = 0.25
train_x, test_x = np.linspace(0, 5, 50), np.linspace(0, 5, 500)
train_y, test_y = data_maker1(train_x, sig=sig), data_maker1(test_x, sig=0.)

d2l.plt.scatter(train_x, train_y)
d2l.plt.plot(test_x, test_y)
d2l.plt.xlabel("x", fontsize=20)
d2l.plt.ylabel("Observations y", fontsize=20)
d2l.plt.show()
# %%
mean = np.zeros(test_x.shape[0])
cov = d2l.rbfkernel(test_x, test_x, ls=0.2)
# %%
prior_samples = np.random.multivariate_normal(mean=mean, cov=cov, size=5)
d2l.plt.plot(test_x, prior_samples.T, color='black', alpha=0.5)
d2l.plt.plot(test_x, mean, linewidth=2.)
d2l.plt.fill_between(test_x, mean - 2 * np.diag(cov), mean + 2 * np.diag(cov), 
                 alpha=0.25)
d2l.plt.show()
# %%
ell_est = 0.4
post_sig_est = 0.5

def neg_MLL(pars):
    K = d2l.rbfkernel(train_x, train_x, ls=pars[0])
    kernel_term = -0.5 * train_y @ \
        np.linalg.inv(K + pars[1] ** 2 * np.eye(train_x.shape[0])) @ train_y
    logdet = -0.5 * np.log(np.linalg.det(K + pars[1] ** 2 * \
                                         np.eye(train_x.shape[0])))
    const = -train_x.shape[0] / 2. * np.log(2 * np.pi)
    
    return -(kernel_term + logdet + const)


learned_hypers = optimize.minimize(neg_MLL, x0=np.array([ell_est,post_sig_est]), 
                                   bounds=((0.01, 10.), (0.01, 10.)))
ell = learned_hypers.x[0]
post_sig_est = learned_hypers.x[1]
# %%
K_x_xstar = d2l.rbfkernel(train_x, test_x, ls=ell)
K_x_x = d2l.rbfkernel(train_x, train_x, ls=ell)
K_xstar_xstar = d2l.rbfkernel(test_x, test_x, ls=ell)

post_mean = K_x_xstar.T @ np.linalg.inv((K_x_x + \
                post_sig_est ** 2 * np.eye(train_x.shape[0]))) @ train_y
post_cov = K_xstar_xstar - K_x_xstar.T @ np.linalg.inv((K_x_x + \
                post_sig_est ** 2 * np.eye(train_x.shape[0]))) @ K_x_xstar

lw_bd = post_mean - 2 * np.sqrt(np.diag(post_cov))
up_bd = post_mean + 2 * np.sqrt(np.diag(post_cov))

d2l.plt.scatter(train_x, train_y)
d2l.plt.plot(test_x, test_y, linewidth=2.)
d2l.plt.plot(test_x, post_mean, linewidth=2.)
d2l.plt.fill_between(test_x, lw_bd, up_bd, alpha=0.25)
d2l.plt.legend(['Observed Data', 'True Function', 'Predictive Mean', '95% Set on True Func'])
d2l.plt.show()
# %%
lw_bd_observed = post_mean - 2 * np.sqrt(np.diag(post_cov) + post_sig_est ** 2)
up_bd_observed = post_mean + 2 * np.sqrt(np.diag(post_cov) + post_sig_est ** 2)
# %%
post_samples = np.random.multivariate_normal(post_mean, post_cov, size=20)
d2l.plt.scatter(train_x, train_y)
d2l.plt.plot(test_x, test_y, linewidth=2.)
d2l.plt.plot(test_x, post_mean, linewidth=2.)
d2l.plt.plot(test_x, post_samples.T, color='gray', alpha=0.25)
d2l.plt.fill_between(test_x, lw_bd, up_bd, alpha=0.25)
plt.legend(['Observed Data', 'True Function', 'Predictive Mean', 'Posterior Samples'])
d2l.plt.show()
# %%
# First let's convert our data into tensors for use with PyTorch
train_x = torch.tensor(train_x)
train_y = torch.tensor(train_y)
test_y = torch.tensor(test_y)
# port: gpytorch's cells (ExactGPModel, its training by ExactMarginalLogLikelihood, its predictions) are left out
"""

# -------------------------------------------------------- chapter_hyperparameter-optimization

HYPEROPT_INTRO = r"""
from d2l import torch as d2l
import numpy as np
import torch
from torch import nn
from scipy import stats
# %%
class HPOTrainer(d2l.Trainer):  #@save
    def validation_error(self):
        self.model.eval()
        accuracy = 0
        val_batch_idx = 0
        for batch in self.val_dataloader:
            with torch.no_grad():
                x, y = self.prepare_batch(batch)
                y_hat = self.model(x)
                accuracy += self.model.accuracy(y_hat, y)
            val_batch_idx += 1
        return 1 -  accuracy / val_batch_idx
# %%
def hpo_objective_softmax_classification(config, max_epochs=2):  # port: 2 epochs (8)
    learning_rate = config["learning_rate"]
    trainer = d2l.HPOTrainer(max_epochs=max_epochs)
    data = d2l.FashionMNIST(batch_size=16)
    model = d2l.SoftmaxRegression(num_outputs=10, lr=learning_rate)
    trainer.fit(model=model, data=data)
    return d2l.numpy(trainer.validation_error())
# %%
config_space = {"learning_rate": stats.loguniform(1e-4, 1)}
# %%
errors, values = [], []
num_iterations = 2  # port: 2 trials (5)

for i in range(num_iterations):
    learning_rate = config_space["learning_rate"].rvs()
    print(f"Trial {i}: learning_rate = {learning_rate}")
    y = hpo_objective_softmax_classification({"learning_rate": learning_rate})
    print(f"    validation_error = {y}")
    values.append(learning_rate)
    errors.append(y)
# %%
best_idx = np.argmin(errors)
print(f"optimal learning rate = {values[best_idx]}")
"""

HYPEROPT_API = r"""
import time
from d2l import torch as d2l
from scipy import stats
# %%
class HPOSearcher(d2l.HyperParameters):  #@save
    def sample_configuration() -> dict:
        raise NotImplementedError

    def update(self, config: dict, error: float, additional_info=None):
        pass
# %%
class RandomSearcher(HPOSearcher):  #@save
    def __init__(self, config_space: dict, initial_config=None):
        self.save_hyperparameters()

    def sample_configuration(self) -> dict:
        if self.initial_config is not None:
            result = self.initial_config
            self.initial_config = None
        else:
            result = {
                name: domain.rvs()
                for name, domain in self.config_space.items()
            }
        return result
# %%
class HPOScheduler(d2l.HyperParameters):  #@save
    def suggest(self) -> dict:
        raise NotImplementedError
    
    def update(self, config: dict, error: float, info=None):
        raise NotImplementedError
# %%
class BasicScheduler(HPOScheduler):  #@save
    def __init__(self, searcher: HPOSearcher):
        self.save_hyperparameters()

    def suggest(self) -> dict:
        return self.searcher.sample_configuration()

    def update(self, config: dict, error: float, info=None):
        self.searcher.update(config, error, additional_info=info)
# %%
class HPOTuner(d2l.HyperParameters):  #@save
    def __init__(self, scheduler: HPOScheduler, objective: callable):
        self.save_hyperparameters()
        # Bookeeping results for plotting
        self.incumbent = None
        self.incumbent_error = None
        self.incumbent_trajectory = []
        self.cumulative_runtime = []
        self.current_runtime = 0
        self.records = []

    def run(self, number_of_trials):
        for i in range(number_of_trials):
            start_time = time.time()
            config = self.scheduler.suggest()
            print(f"Trial {i}: config = {config}")
            error = self.objective(**config)
            error = float(d2l.numpy(error.cpu()))
            self.scheduler.update(config, error)
            runtime = time.time() - start_time
            self.bookkeeping(config, error, runtime)
            print(f"    error = {error}, runtime = {runtime}")
# %%
@d2l.add_to_class(HPOTuner)  #@save
def bookkeeping(self, config: dict, error: float, runtime: float):
    self.records.append({"config": config, "error": error, "runtime": runtime})
    # Check if the last hyperparameter configuration performs better 
    # than the incumbent
    if self.incumbent is None or self.incumbent_error > error:
        self.incumbent = config
        self.incumbent_error = error
    # Add current best observed performance to the optimization trajectory
    self.incumbent_trajectory.append(self.incumbent_error)
    # Update runtime
    self.current_runtime += runtime
    self.cumulative_runtime.append(self.current_runtime)
# %%
def hpo_objective_lenet(learning_rate, batch_size, max_epochs=1):  #@save  # port: 1 epoch (10)
    model = d2l.LeNet(lr=learning_rate, num_classes=10)
    trainer = d2l.HPOTrainer(max_epochs=max_epochs, num_gpus=1)
    data = d2l.FashionMNIST(batch_size=batch_size)
    model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
    trainer.fit(model=model, data=data)
    validation_error = trainer.validation_error()
    return validation_error
# %%
config_space = {
    "learning_rate": stats.loguniform(1e-2, 1),
    "batch_size": stats.randint(32, 256),
}
initial_config = {
    "learning_rate": 0.1,
    "batch_size": 128,
}
# %%
searcher = RandomSearcher(config_space, initial_config=initial_config)
scheduler = BasicScheduler(searcher=searcher)
tuner = HPOTuner(scheduler=scheduler, objective=hpo_objective_lenet)
tuner.run(number_of_trials=2)  # port: 2 trials (5)
# %%
board = d2l.ProgressBoard(xlabel="time", ylabel="error")
for time_stamp, error in zip(
    tuner.cumulative_runtime, tuner.incumbent_trajectory
):
    board.draw(time_stamp, error, "random search", every_n=1)
"""

SH_INTRO = r"""
from d2l import torch as d2l
import numpy as np
from scipy import stats
from collections import defaultdict
d2l.set_figsize()
# %%
class SuccessiveHalvingScheduler(d2l.HPOScheduler):  #@save
    def __init__(self, searcher, eta, r_min, r_max, prefact=1):
        self.save_hyperparameters()
        # Compute K, which is later used to determine the number of configurations
        self.K = int(np.log(r_max / r_min) / np.log(eta))
        # Define the rungs
        self.rung_levels = [r_min * eta ** k for k in range(self.K + 1)]
        if r_max not in self.rung_levels:
            # The final rung should be r_max
            self.rung_levels.append(r_max)
            self.K += 1
        # Bookkeeping
        self.observed_error_at_rungs = defaultdict(list)
        self.all_observed_error_at_rungs = defaultdict(list)
        # Our processing queue
        self.queue = []
# %%
@d2l.add_to_class(SuccessiveHalvingScheduler)  #@save
def suggest(self):
    if len(self.queue) == 0:
        # Start a new round of successive halving
        # Number of configurations for the first rung:
        n0 = int(self.prefact * self.eta ** self.K)
        for _ in range(n0):
            config = self.searcher.sample_configuration()
            config["max_epochs"] = self.r_min  # Set r = r_min
            self.queue.append(config)
    # Return an element from the queue
    return self.queue.pop()
# %%
@d2l.add_to_class(SuccessiveHalvingScheduler)  #@save
def update(self, config: dict, error: float, info=None):
    ri = int(config["max_epochs"])  # Rung r_i
    # Update our searcher, e.g if we use Bayesian optimization later
    self.searcher.update(config, error, additional_info=info)
    self.all_observed_error_at_rungs[ri].append((config, error))
    if ri < self.r_max:
        # Bookkeeping
        self.observed_error_at_rungs[ri].append((config, error))
        # Determine how many configurations should be evaluated on this rung
        ki = self.K - self.rung_levels.index(ri)
        ni = int(self.prefact * self.eta ** ki)
        # If we observed all configuration on this rung r_i, we estimate the
        # top 1 / eta configuration, add them to queue and promote them for
        # the next rung r_{i+1}
        if len(self.observed_error_at_rungs[ri]) >= ni:
            kiplus1 = ki - 1
            niplus1 = int(self.prefact * self.eta ** kiplus1)
            best_performing_configurations = self.get_top_n_configurations(
                rung_level=ri, n=niplus1
            )
            riplus1 = self.rung_levels[self.K - kiplus1]  # r_{i+1}
            # Queue may not be empty: insert new entries at the beginning
            self.queue = [
                dict(config, max_epochs=riplus1)
                for config in best_performing_configurations
            ] + self.queue
            self.observed_error_at_rungs[ri] = []  # Reset
# %%

@d2l.add_to_class(SuccessiveHalvingScheduler)  #@save
def get_top_n_configurations(self, rung_level, n):
    rung = self.observed_error_at_rungs[rung_level]
    if not rung:
        return []
    sorted_rung = sorted(rung, key=lambda x: x[1])
    return [x[0] for x in sorted_rung[:n]]
# %%
min_number_of_epochs = 1  # port: rungs of 1 and 2 epochs (2 to 10)
max_number_of_epochs = 2  # port: as above
eta = 2
num_gpus=1

config_space = {
    "learning_rate": stats.loguniform(1e-2, 1),
    "batch_size": stats.randint(32, 256),
}
initial_config = {
    "learning_rate": 0.1,
    "batch_size": 128,
}
# %%
searcher = d2l.RandomSearcher(config_space, initial_config=initial_config)
scheduler = SuccessiveHalvingScheduler(
    searcher=searcher,
    eta=eta,
    r_min=min_number_of_epochs,
    r_max=max_number_of_epochs,
)
tuner = d2l.HPOTuner(
    scheduler=scheduler,
    objective=d2l.hpo_objective_lenet,
)
tuner.run(number_of_trials=3)  # port: one round of successive halving (30 trials)
# %%
for rung_index, rung in scheduler.all_observed_error_at_rungs.items():
    errors = [xi[1] for xi in rung]
    d2l.plt.scatter([rung_index] * len(errors), errors)
d2l.plt.xlim(min_number_of_epochs - 0.5, max_number_of_epochs + 0.5)
d2l.plt.xticks(
    np.arange(min_number_of_epochs, max_number_of_epochs + 1),
    np.arange(min_number_of_epochs, max_number_of_epochs + 1)
)
d2l.plt.ylabel("validation error")
d2l.plt.xlabel("epochs")
"""

SYNETUNE_OBJECTIVE = r"""
def hpo_objective_lenet_synetune(learning_rate, batch_size, max_epochs):
    from d2l import torch as d2l
    from syne_tune import Reporter

    model = d2l.LeNet(lr=learning_rate, num_classes=10)
    trainer = d2l.HPOTrainer(max_epochs=1, num_gpus=1)
    data = d2l.FashionMNIST(batch_size=batch_size)
    model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)
    report = Reporter()
    for epoch in range(1, max_epochs + 1):
        if epoch == 1:
            # Initialize the state of Trainer
            trainer.fit(model=model, data=data)
        else:
            trainer.fit_epoch()
        validation_error = d2l.numpy(trainer.validation_error().cpu())
        report(epoch=epoch, validation_error=float(validation_error))
"""

RS_ASYNC = (
    r"""
from d2l import torch as d2l
import logging
# logging.basicConfig(level=logging.INFO)  # port: the test process's logging left as it is
from syne_tune.config_space import loguniform, randint
# from syne_tune.backend.python_backend import PythonBackend  # port: syne-tune is not installed: a stand-in of its config space and Reporter only
# from syne_tune.optimizer.baselines import RandomSearch  # port: as above
# from syne_tune import Tuner, StoppingCriterion  # port: as above
# from syne_tune.experiments import load_experiment  # port: as above
# %%"""
    + SYNETUNE_OBJECTIVE
    + r"""# %%
n_workers = 2  # Needs to be <= the number of available GPUs

max_wallclock_time = 12 * 60  # 12 minutes
# %%
mode = "min"
metric = "validation_error"
# %%
config_space = {
    "learning_rate": loguniform(1e-2, 1),
    "batch_size": randint(32, 256),
    "max_epochs": 2,  # port: 2 epochs (10)
}
initial_config = {
    "learning_rate": 0.1,
    "batch_size": 128,
}
# %%
hpo_objective_lenet_synetune(**initial_config, max_epochs=config_space["max_epochs"])  # port: syne-tune's PythonBackend, RandomSearch, Tuner and its results table left out: the initial configuration's trial, in the process
"""
)

SH_ASYNC = (
    r"""
from d2l import torch as d2l
import logging
# logging.basicConfig(level=logging.INFO)  # port: the test process's logging left as it is
import matplotlib.pyplot as plt
from syne_tune.config_space import loguniform, randint
# from syne_tune.backend.python_backend import PythonBackend  # port: syne-tune is not installed: a stand-in of its config space and Reporter only
# from syne_tune.optimizer.baselines import ASHA  # port: as above
# from syne_tune import Tuner, StoppingCriterion  # port: as above
# from syne_tune.experiments import load_experiment  # port: as above
# %%"""
    + SYNETUNE_OBJECTIVE
    + r"""# %%
min_number_of_epochs = 1  # port: a grace period of 1 epoch (2)
max_number_of_epochs = 2  # port: 2 epochs (10)
eta = 2

config_space = {
    "learning_rate": loguniform(1e-2, 1),
    "batch_size": randint(32, 256),
    "max_epochs": max_number_of_epochs,
}
initial_config = {
    "learning_rate": 0.1,
    "batch_size": 128,
}
# %%
n_workers = 2  # Needs to be <= the number of available GPUs
max_wallclock_time = 12 * 60  # 12 minutes
# %%
mode = "min"
metric = "validation_error"
resource_attr = "epoch"
# %%
hpo_objective_lenet_synetune(**initial_config, max_epochs=min_number_of_epochs)  # port: syne-tune's ASHA, PythonBackend, Tuner and its results table left out: the initial configuration's trial to the grace period, in the process
"""
)

# ------------------------------------------------------ chapter_computational-performance

HYBRIDIZE = (
    r"""
def add(a, b):
    return a + b

def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g

print(fancy_func(1, 2, 3, 4))
# %%
def add_():
    return '''
def add(a, b):
    return a + b
'''

def fancy_func_():
    return '''
def fancy_func(a, b, c, d):
    e = add(a, b)
    f = add(c, d)
    g = add(e, f)
    return g
'''

def evoke_():
    return add_() + fancy_func_() + 'print(fancy_func(1, 2, 3, 4))'

prog = evoke_()
print(prog)
y = compile(prog, '', 'exec')
exec(y)
# %%
from d2l import torch as d2l
import torch
from torch import nn

# Factory for networks
def get_net():
    net = nn.Sequential(nn.Linear(512, 256),
            nn.ReLU(),
            nn.Linear(256, 128),
            nn.ReLU(),
            nn.Linear(128, 2))
    return net

x = torch.randn(size=(1, 512))
net = get_net()
net(x)
# %%
net = torch.jit.script(net) if hasattr(torch, 'jit') else net  # port: tricycle lacks torch.jit (TorchScript): its module runs as it is
net(x)
# %%"""
    + r'''
#@save
class Benchmark:
    """For measuring running time."""
    def __init__(self, description='Done'):
        self.description = description

    def __enter__(self):
        self.timer = d2l.Timer()
        return self

    def __exit__(self, *args):
        print(f'{self.description}: {self.timer.stop():.4f} sec')
# %%
net = get_net()
with Benchmark('Without torchscript'):
    for i in range(20): net(x)  # port: 20 passes (1000)

net = torch.jit.script(net) if hasattr(torch, 'jit') else net  # port: as above
with Benchmark('With torchscript'):
    for i in range(20): net(x)  # port: as above
# %%
net.save('my_mlp') if hasattr(torch, 'jit') else torch.save(net, 'my_mlp')  # port: tricycle's module saved whole by torch.save (no TorchScript archive)
import os  # port: the shell's `!ls -lh my_mlp*` in Python (the sizes differ: TorchScript's archive holds the code)
print(sorted(name for name in os.listdir() if name.startswith('my_mlp')))  # port: as above
'''
)

ASYNC_COMPUTATION = r"""
from d2l import torch as d2l
import numpy, os, subprocess
import torch
from torch import nn
# %%
# Warmup for GPU computation
device = d2l.try_gpu()
a = torch.randn(size=(200, 200), device=device)  # port: 200x200 matrices (1000x1000), here and below
b = torch.mm(a, a)

with d2l.Benchmark('numpy'):
    for _ in range(10):
        a = numpy.random.normal(size=(200, 200))  # port: as above
        b = numpy.dot(a, a)

with d2l.Benchmark('torch'):
    for _ in range(10):
        a = torch.randn(size=(200, 200), device=device)  # port: as above
        b = torch.mm(a, a)
# %%
with d2l.Benchmark():
    for _ in range(10):
        a = torch.randn(size=(200, 200), device=device)  # port: as above
        b = torch.mm(a, a)
    if torch.cuda.is_available(): torch.cuda.synchronize(device)  # port: no GPU here (torch's synchronize needs CUDA; the CPU computes in order)
# %%
x = torch.ones((1, 2), device=device)
y = torch.ones((1, 2), device=device)
z = x * y + 2
z
"""

AUTO_PARALLELISM = r"""
from d2l import torch as d2l
import torch
# %%
devices = d2l.try_all_gpus() or [d2l.cpu(), d2l.cpu()]  # port: no GPU here: the CPU stands for both
def run(x):
    return [x.mm(x) for _ in range(5)]  # port: 5 products (50)

x_gpu1 = torch.rand(size=(100, 100), device=devices[0])  # port: 100x100 matrices (4000x4000)
x_gpu2 = torch.rand(size=(100, 100), device=devices[1])  # port: as above
# %%
run(x_gpu1)
run(x_gpu2)  # Warm-up all devices
if torch.cuda.is_available(): torch.cuda.synchronize(devices[0])  # port: no GPU here (torch's synchronize needs CUDA), here and below
if torch.cuda.is_available(): torch.cuda.synchronize(devices[1])  # port: as above

with d2l.Benchmark('GPU1 time'):
    run(x_gpu1)
    if torch.cuda.is_available(): torch.cuda.synchronize(devices[0])  # port: as above

with d2l.Benchmark('GPU2 time'):
    run(x_gpu2)
    if torch.cuda.is_available(): torch.cuda.synchronize(devices[1])  # port: as above
# %%
with d2l.Benchmark('GPU1 & GPU2'):
    run(x_gpu1)
    run(x_gpu2)
    if torch.cuda.is_available(): torch.cuda.synchronize()  # port: as above
# %%
def copy_to_cpu(x, non_blocking=False):
    return [y.to('cpu', non_blocking=non_blocking) for y in x]

with d2l.Benchmark('Run on GPU1'):
    y = run(x_gpu1)
    if torch.cuda.is_available(): torch.cuda.synchronize()  # port: as above

with d2l.Benchmark('Copy to CPU'):
    y_cpu = copy_to_cpu(y)
    if torch.cuda.is_available(): torch.cuda.synchronize()  # port: as above
# %%
with d2l.Benchmark('Run on GPU1 and copy to CPU'):
    y = run(x_gpu1)
    y_cpu = copy_to_cpu(y, True)
    if torch.cuda.is_available(): torch.cuda.synchronize()  # port: as above
"""


@pytest.fixture(autouse=True)
def _stand_ins(monkeypatch):
    """scipy (not in tricycle's test extra: skipped without it), a stand-in ``syne_tune``
    (its config space's ``loguniform`` and ``randint`` as scipy's, and a ``Reporter`` that
    keeps what it is told in ``REPORTED``), and Fashion-MNIST's stand-in made once."""
    stats = pytest.importorskip("scipy.stats")
    reported = []

    class Reporter:
        def __call__(self, **results):
            reported.append(results)

    space = module("syne_tune.config_space", monkeypatch, loguniform=stats.loguniform, randint=stats.randint)  # fmt: skip
    module("syne_tune", monkeypatch, Reporter=Reporter, config_space=space, REPORTED=reported)
    monkeypatch.setattr(d2l_port, "fashion_images", fashion_images)


def both(text, tmp_path, monkeypatch, keep=None):
    """d2l_port's ``both`` with the book's library parts these chapters call (``EXTRA``)."""
    return d2l_port.both(text, tmp_path, monkeypatch, keep=keep, extra=EXTRA)


def same_kinds(ours: str, theirs: str) -> None:
    """The same lines, numbers and reprs aside, the library's name in them (a benchmark's
    description) read as tricycle's."""
    assert kinds(ours) == kinds(theirs.replace("torch", "tricycle"))


# ------------------------------------------------------------------ chapter_gaussian-processes


def test_gp_priors(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GP_PRIORS, tmp_path, monkeypatch, keep=plotted)
    same_kinds(ours, theirs)
    same_plots(our, their, rtol=0, atol=0)  # numpy's numbers, seeded alike
    x = np.linspace(0, 5, 50)  # the kernel: exp(-|x - x'|^2 / (2 ls)), the book's and d2l's
    want = np.exp(-((x[:, None] - x[None]) ** 2) / 2)
    for space in our, their:
        np.testing.assert_allclose(space["covmat"], want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(space["d2l"].rbfkernel(x, x, 1), want, rtol=1e-12, atol=1e-15)
    assert len(our["kept"]) == 1 + 10 + 5  # the zero line, 10 linear functions, 5 GP samples


def test_gp_inference(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(GP_INFERENCE, tmp_path, monkeypatch, keep=plotted)
    same_kinds(ours, theirs)
    same_plots(our, their, rtol=0, atol=0)
    for space in our, their:  # the marginal likelihood's optimum, and the posterior at it
        assert space["learned_hypers"].success and 0.2 < space["post_sig_est"] < 0.35
        assert np.sqrt(np.mean((space["post_mean"] - space["test_y"].numpy()) ** 2)) < 0.2
    torch, tricycle = their["torch"], our["tricycle"]
    for name in "train_x", "train_y", "test_y":  # the data made tensors: float64 kept
        assert our[name].dtype == tricycle.float64 and their[name].dtype == torch.float64
        np.testing.assert_array_equal(our[name].numpy(), their[name].numpy())


# -------------------------------------------------------- chapter_hyperparameter-optimization


def same_validation_error(our: dict, their: dict, make, batch_size=16) -> None:
    """``HPOTrainer.validation_error`` of the model ``make(d2l)`` makes (tricycle's given
    torch's weights) on the Fashion-MNIST stand-in's validation images is torch's."""
    import tricycle  # noqa: PLC0415

    errors, models = [], []
    for space in their, our:
        d2l = space["d2l"]
        data, trainer, model = d2l.FashionMNIST(batch_size=batch_size), d2l.HPOTrainer(max_epochs=1), make(d2l)  # fmt: skip
        trainer.prepare_data(data)
        trainer.prepare_model(model)
        model(next(iter(data.val_dataloader()))[0])  # the lazy layers made
        if models:
            assert tricycle.nn.from_torch(model, models[0].state_dict()) == ([], [])
        models.append(model)
        errors.append(float(host(trainer.validation_error())))
    assert errors[1] == errors[0] and 0 < errors[0] <= 1, errors


def test_hyperopt_intro(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(HYPEROPT_INTRO, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    rates = r"learning_rate = (\S+)"
    assert re.findall(rates, ours) == re.findall(rates, theirs)  # numpy's draws, seeded alike
    for space in our, their:  # each trial trains from its own init: the errors differ
        assert len(space["errors"]) == 2 and all(0 <= float(e) <= 1 for e in space["errors"])
    for printed in ours, theirs:  # the best is one of the trials' rates
        assert re.findall(r"optimal learning rate = (\S+)", printed)[0] in re.findall(
            rates, printed
        )
    same_validation_error(our, their, lambda d2l: d2l.SoftmaxRegression(num_outputs=10, lr=0.1))


def test_hyperopt_api(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(HYPEROPT_API, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    configs = r"config = (\{.*\})"
    assert re.findall(configs, ours) == re.findall(configs, theirs)
    assert re.findall(configs, ours)[0] == "{'learning_rate': 0.1, 'batch_size': 128}"
    for space in our, their:  # the incumbent: the best error so far, and the board's points
        tuner = space["tuner"]
        errors = [record["error"] for record in tuner.records]
        assert tuner.incumbent_trajectory == list(np.minimum.accumulate(errors))
        assert len(space["board"].data["random search"]) == 2
    same_validation_error(our, their, lambda d2l: d2l.LeNet(lr=0.1), batch_size=32)
    net = []  # LeNet itself, given torch's weights: torch's outputs and gradients
    for space in their, our:
        d2l = space["d2l"]
        model = d2l.LeNet(lr=0.1)
        model.apply_init([d2l.zeros(1, 1, 28, 28)], d2l.init_cnn)
        net.append(model)
    same_numbers(*net, (2, 1, 28, 28))


def test_sh_intro(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SH_INTRO, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    configs = r"config = (\{'learning_rate': [^,]*, 'batch_size': \d+)"
    assert re.findall(configs, ours) == re.findall(configs, theirs)
    for space in our, their:  # the rungs: 1 and 2 epochs; the better of rung 1's two promoted
        scheduler = space["scheduler"]
        assert scheduler.rung_levels == [1, 2] and scheduler.K == 1
        rung1, rung2 = (scheduler.all_observed_error_at_rungs[r] for r in (1, 2))
        assert len(rung1) == 2 and len(rung2) == 1 and scheduler.queue == []
        best = min(rung1, key=lambda pair: pair[1])[0]
        assert rung2[0][0] == dict(best, max_epochs=2)


def test_rs_async(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(RS_ASYNC, tmp_path, monkeypatch)
    import syne_tune  # noqa: PLC0415  (the stand-in)

    same_kinds(ours, theirs)
    reported = syne_tune.REPORTED  # both runs' reports: two epochs each, in order
    assert [r["epoch"] for r in reported] == [1, 2, 1, 2]
    assert all(0 <= r["validation_error"] <= 1 for r in reported)
    assert their["config_space"]["max_epochs"] == our["config_space"]["max_epochs"] == 2


def test_sh_async(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(SH_ASYNC, tmp_path, monkeypatch)
    import syne_tune  # noqa: PLC0415  (the stand-in)

    same_kinds(ours, theirs)
    reported = syne_tune.REPORTED  # both runs' reports: the grace period's one epoch each
    assert [r["epoch"] for r in reported] == [1, 1]
    assert all(0 <= r["validation_error"] <= 1 for r in reported)


# ------------------------------------------------------ chapter_computational-performance


def test_hybridize(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(HYBRIDIZE, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    for printed in ours, theirs:  # the program as text, run twice: 10 each time
        assert printed.count("10\n") == 2 and "def fancy_func(a, b, c, d):" in printed
        assert "['my_mlp']" in printed
    import tricycle  # noqa: PLC0415

    torch = their["torch"]
    assert isinstance(their["net"], torch.jit.ScriptModule)  # TorchScript under torch only
    x = np.random.default_rng(0).normal(size=(3, 512)).astype(np.float32)
    saved = tricycle.load(str(tmp_path / "tricycle" / "my_mlp"), weights_only=False)
    np.testing.assert_array_equal(host(saved(tricycle.tensor(x))), host(our["net"](tricycle.tensor(x))))  # fmt: skip
    # tricycle's MLP given the scripted module's weights: its outputs
    assert tricycle.nn.from_torch(our["net"], their["net"].state_dict()) == ([], [])
    np.testing.assert_allclose(host(our["net"](tricycle.tensor(x))), host(their["net"](torch.tensor(x))), rtol=1e-5, atol=1e-6)  # fmt: skip
    same_numbers(their["get_net"](), our["get_net"](), (2, 512))  # forward and backward


def test_async_computation(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(ASYNC_COMPUTATION, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    assert len(numbers(r": (\d+\.\d+) sec", ours)) == 3
    for space in our, their:
        a, b = host(space["a"]), host(space["b"])
        np.testing.assert_allclose(b, a @ a, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(host(space["z"]), [[3.0, 3.0]])
        assert str(space["device"]) == "cpu"


def test_auto_parallelism(tmp_path, monkeypatch):
    (theirs, their), (ours, our) = both(AUTO_PARALLELISM, tmp_path, monkeypatch)
    same_kinds(ours, theirs)
    assert len(numbers(r": (\d+\.\d+) sec", ours)) == 6
    for space in our, their:  # the products, copied to the CPU (blocking or not)
        x = host(space["x_gpu1"])
        assert len(space["y_cpu"]) == 5
        for y in space["y_cpu"]:
            assert str(y.device) == "cpu"
            np.testing.assert_allclose(host(y), x @ x, rtol=1e-4, atol=1e-4)


def test_the_held_library_is_the_books():
    """``EXTRA`` is the book's repository's d2l/torch.py (its parts these chapters call, in
    its order), but for the lines marked ``# port:`` (where the read-only mirror is here)."""
    _, _, others = d2l_port.against_book(EXTRA, d2l_port.book())
    assert len(others) == 1
