"""Phillip Lippe's UvA Deep Learning tutorials 4 ("Optimization and Initialization") and 11
("Normalizing Flows for image modeling") run on tricycle with ``torch`` replaced by ``tricycle``
in their text (docs/pytorch.md's promise; the method of tests/test_uvadlc_generative.py).

- tutorial4 (the PyTorch text of Lightning-AI/tutorials' course_UvA-DL copy: the mirror's
  notebook is not stored): ``BaseNetwork`` over ``nn.ModuleList``, the constant, constant
  variance, equal variance, Xavier and Kaiming initialisations written through ``param.data``
  (``fill_``, ``normal_(mean=, std=)``, ``uniform_``) and the activation and gradient statistics
  of a batch under each, the hand-written ``SGD``, ``SGDMomentum`` and ``Adam`` (an
  ``OptimizerTemplate`` keyed by parameters, ``@torch.no_grad()`` steps, ``p.grad.detach_()``,
  ``p.add_``) training a deep ReLU network from one ``copy.deepcopy``'d start with
  ``save_model``/``load_model``, and the pathological-curvature and steep-optima surfaces
  (``torch.meshgrid([x, y])``, ``nn.Parameter(torch.FloatTensor(init))``, ``weights.data``)
  walked by each optimiser.
- tutorial11: ``Dequantization`` (its invertibility, ``torch.where(condition)``, the volumes of
  ``visualize_dequantization``), ``VariationalDequantization``, ``CouplingLayer`` with a mask
  registered as a buffer, the checkerboard (``meshgrid(indexing='ij')``, ``fmod``) and channel
  masks, ``ConcatELU``, ``LayerNormChannels`` (``var(unbiased=False)``), ``GatedConvNet`` with its
  zeroed last convolution, ``SqueezeFlow``/``SplitFlow`` (``distributions.Normal``'s ``log_prob``
  and ``sample``), the simple, variational and multi-scale ``ImageFlow``s trained by bits per
  dimension (Adam, ``StepLR``, gradient clipping), tested by importance sampling
  (``logsumexp``), sampled and interpolated.

Lightning's glue is a plain loop (``self.log`` into a dict, ``Trainer.fit``/``test``), the plots
printed or dropped (seaborn and torchvision are not installed), FashionMNIST and MNIST replaced by
sklearn's digits made in the test (28x28 for tutorial4, 8x8 for tutorial11), sizes, layers and
epochs shrunk; a Linear's ``weight`` (out, in) is tricycle's ``weights`` (in, out) and a conv's
``weight`` its ``weights`` (documented). Each changed line ends in ``# port:`` and says why. Both
print the same lines (numbers aside) and learn; the deterministic values (the surfaces and each
optimiser's walk over them, the squeeze, the masks, the dequantization volumes) are torch's; from
torch's weights (``nn.from_torch``) the tutorials' own networks give torch's activations and
gradients, and the flows torch's latents, log-determinants, bits per dimension and parameter
gradients. The hand-written optimisers are tricycle's ``optim.SGD``/``Adam`` step for step.
What the tutorials needed: ``optim.Adam``'s CPU kernel taking 1 - beta1 and 1 - beta2 from the
float64 betas, as torch does (its first steps were off by float32(0.999)'s rounding), and
``torch.where(condition)`` alone (helper L's, in tricycle/torch_functions.py).
"""

# ruff: noqa: E501, W291, W293

import numpy as np
import pytest

from tests.helpers import run_main, torch_and_tricycle
from tests.test_karpathy_lectures import torch_layout_grads
from tests.test_torch_examples_b import numbers
from tests.test_uvadlc_intro import kinds

OPTIMIZATION = r'''
import copy
import json
import math
import os
# import urllib.request  # port: no downloads (the pretrained files are trained here)
# from urllib.error import HTTPError  # port: as above

# import lightning as L  # port: Lightning is not installed; its seed_everything below
import matplotlib.pyplot as plt

# %matplotlib inline
# import matplotlib_inline.backend_inline  # port: a notebook's backend
import numpy as np
# import seaborn as sns  # port: seaborn is not installed (the histograms' variances printed)
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
from matplotlib import cm
# from torchvision import transforms  # port: torchvision is not installed
# from torchvision.datasets import FashionMNIST  # port: FashionMNIST replaced by digits made in the test
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

# matplotlib_inline.backend_inline.set_matplotlib_formats("svg", "pdf")  # For export  # port: a notebook's backend
# sns.set()  # port: seaborn is not installed

# Path to the folder where the datasets are/should be downloaded (e.g. MNIST)
DATASET_PATH = os.environ.get("PATH_DATASETS", "data/")
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = os.environ.get("PATH_CHECKPOINT", "saved_models/InitOptim/")

# Seed everything
torch.manual_seed(42); np.random.seed(42)  # port: L.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

# Fetching the device that will be used throughout this notebook
device = torch.device("cpu") if not torch.cuda.is_available() else torch.device("cuda:0")
print("Using device", device)

# Create checkpoint path if it doesn't exist yet
os.makedirs(CHECKPOINT_PATH, exist_ok=True)

images = np.load(os.path.join(DATASET_PATH, "images.npz"))  # port: FashionMNIST's stand-in, 28x28 in [0, 1]
normalize = lambda x: (torch.tensor(x) - 0.2861) / 0.3530  # port: transforms.Normalize((0.2861,), (0.3530,)) after ToTensor
train_dataset = data.TensorDataset(normalize(images["x_train"]), torch.tensor(images["y_train"]))  # port: FashionMNIST(train=True)
train_set, val_set = torch.utils.data.random_split(train_dataset, [256, 64])  # port: 50000/10000 shrunk

# Loading the test set
test_set = data.TensorDataset(normalize(images["x_test"]), torch.tensor(images["y_test"]))  # port: FashionMNIST(train=False)

train_loader = data.DataLoader(train_set, batch_size=256, shuffle=True, drop_last=False)  # port: batch 1024 shrunk
val_loader = data.DataLoader(val_set, batch_size=256, shuffle=False, drop_last=False)  # port: as above
test_loader = data.DataLoader(test_set, batch_size=256, shuffle=False, drop_last=False)  # port: as above

print("Mean", torch.tensor(images["x_train"]).mean().item())  # port: train_dataset.data.float() / 255.0 (the stand-in's images are floats)
print("Std", torch.tensor(images["x_train"]).std().item())  # port: as above

imgs, _ = next(iter(train_loader))
print(f"Mean: {imgs.mean().item():5.3f}")
print(f"Standard deviation: {imgs.std().item():5.3f}")
print(f"Maximum: {imgs.max().item():5.3f}")
print(f"Minimum: {imgs.min().item():5.3f}")


class BaseNetwork(nn.Module):
    def __init__(self, act_fn, input_size=784, num_classes=10, hidden_sizes=[512, 256, 256, 128]):
        """Base Network.

        Args:
            act_fn: Object of the activation function that should be used as non-linearity in the network.
            input_size: Size of the input images in pixels
            num_classes: Number of classes we want to predict
            hidden_sizes: A list of integers specifying the hidden layer sizes in the NN
        """
        super().__init__()

        # Create the network based on the specified hidden sizes
        layers = []
        layer_sizes = [input_size] + hidden_sizes
        for layer_index in range(1, len(layer_sizes)):
            layers += [nn.Linear(layer_sizes[layer_index - 1], layer_sizes[layer_index]), act_fn]
        layers += [nn.Linear(layer_sizes[-1], num_classes)]
        # A module list registers a list of modules as submodules (e.g. for parameters)
        self.layers = nn.ModuleList(layers)

        self.config = {
            "act_fn": act_fn.__class__.__name__,
            "input_size": input_size,
            "num_classes": num_classes,
            "hidden_sizes": hidden_sizes,
        }

    def forward(self, x):
        x = x.view(x.size(0), -1)
        for layer in self.layers:
            x = layer(x)
        return x


class Identity(nn.Module):
    def forward(self, x):
        return x


act_fn_by_name = {"tanh": nn.Tanh, "relu": nn.ReLU, "identity": Identity}


def plot_dists(val_dict, color="C0", xlabel=None, stat="count", use_kde=True):
    for key in sorted(val_dict.keys()):  # port: seaborn's histograms (not installed) as each one's spread
        print(f"{xlabel} {key}: {val_dict[key].shape} std {val_dict[key].std():.3g}")  # port: as above


def visualize_weight_distribution(model, color="C0"):
    weights = {}
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            continue
        key_name = f"Layer {name.split('.')[1]}"
        weights[key_name] = param.detach().view(-1).cpu().numpy()

    # Plotting
    fig = plot_dists(weights, color=color, xlabel="Weight vals")
    # fig.suptitle("Weight distribution", fontsize=14, y=1.05)  # port: printed above, not plotted
    plt.show()
    plt.close()


def visualize_gradients(model, color="C0", print_variance=False):
    """
    Args:
        net: Object of class BaseNetwork
        color: Color in which we want to visualize the histogram (for easier separation of activation functions)
    """
    model.eval()
    small_loader = data.DataLoader(train_set, batch_size=128, shuffle=False)  # port: batch 1024 shrunk
    imgs, labels = next(iter(small_loader))
    imgs, labels = imgs.to(device), labels.to(device)

    # Pass one batch through the network, and calculate the gradients for the weights
    model.zero_grad()
    preds = model(imgs)
    loss = F.cross_entropy(preds, labels)  # Same as nn.CrossEntropyLoss, but as a function instead of module
    loss.backward()
    # We limit our visualization to the weight parameters and exclude the bias to reduce the number of plots
    grads = {
        name: params.grad.view(-1).cpu().clone().numpy()
        for name, params in model.named_parameters()
        if "weight" in name
    }
    model.zero_grad()

    # Plotting
    fig = plot_dists(grads, color=color, xlabel="Grad magnitude")
    # fig.suptitle("Gradient distribution", fontsize=14, y=1.05)  # port: printed above, not plotted
    plt.show()
    plt.close()

    if print_variance:
        for key in sorted(grads.keys()):
            print(f"{key} - Variance: {np.var(grads[key])}")
    return grads  # port: kept for the test


def visualize_activations(model, color="C0", print_variance=False):
    model.eval()
    small_loader = data.DataLoader(train_set, batch_size=128, shuffle=False)  # port: batch 1024 shrunk
    imgs, labels = next(iter(small_loader))
    imgs, labels = imgs.to(device), labels.to(device)

    # Pass one batch through the network, and calculate the gradients for the weights
    feats = imgs.view(imgs.shape[0], -1)
    activations = {}
    with torch.no_grad():
        for layer_index, layer in enumerate(model.layers):
            feats = layer(feats)
            if isinstance(layer, nn.Linear):
                activations[f"Layer {layer_index}"] = feats.view(-1).detach().cpu().numpy()

    # Plotting
    fig = plot_dists(activations, color=color, stat="density", xlabel="Activation vals")
    # fig.suptitle("Activation distribution", fontsize=14, y=1.05)  # port: printed above, not plotted
    plt.show()
    plt.close()

    if print_variance:
        for key in sorted(activations.keys()):
            print(f"{key} - Variance: {np.var(activations[key])}")
    return activations  # port: kept for the test


model = BaseNetwork(act_fn=Identity()).to(device)


def const_init(model, fill=0.0):
    for name, param in model.named_parameters():
        param.data.fill_(fill)


const_init(model, fill=0.005)
const_grads = visualize_gradients(model)  # port: kept for the test
const_acts = visualize_activations(model, print_variance=True)  # port: kept for the test


def var_init(model, std=0.01):
    for name, param in model.named_parameters():
        param.data.normal_(mean=0.0, std=std)


var_init(model, std=0.01)
small_acts = visualize_activations(model, print_variance=True)  # port: kept for the test

var_init(model, std=0.1)
large_acts = visualize_activations(model, print_variance=True)  # port: kept for the test


def fan_in(name, param):  # port: a Linear's in_features: torch's weight (out, in), tricycle's weights (in, out) (documented)
    return param.shape[0] if name.endswith(".weights") else param.shape[1]  # port: as above


def equal_var_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        else:
            param.data.normal_(std=1.0 / math.sqrt(fan_in(name, param)))  # port: fan_in(name, param) for param.shape[1], as above


equal_var_init(model)
visualize_weight_distribution(model)
equal_acts = visualize_activations(model, print_variance=True)  # port: kept for the test


def xavier_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        else:
            bound = math.sqrt(6) / math.sqrt(param.shape[0] + param.shape[1])
            param.data.uniform_(-bound, bound)


xavier_init(model)
visualize_gradients(model, print_variance=True)
xavier_acts = visualize_activations(model, print_variance=True)  # port: kept for the test

model = BaseNetwork(act_fn=nn.Tanh()).to(device)
xavier_init(model)
visualize_gradients(model, print_variance=True)
tanh_acts = visualize_activations(model, print_variance=True)  # port: kept for the test


def kaiming_init(model):
    for name, param in model.named_parameters():
        if name.endswith(".bias"):
            param.data.fill_(0)
        elif name.startswith("layers.0"):  # The first layer does not have ReLU applied on its input
            param.data.normal_(0, 1 / math.sqrt(fan_in(name, param)))  # port: fan_in(name, param) for param.shape[1], as above
        else:
            param.data.normal_(0, math.sqrt(2) / math.sqrt(fan_in(name, param)))  # port: as above


model = BaseNetwork(act_fn=nn.ReLU()).to(device)
kaiming_init(model)
visualize_gradients(model, print_variance=True)
relu_acts = visualize_activations(model, print_variance=True)  # port: kept for the test


def _get_config_file(model_path, model_name):
    return os.path.join(model_path, model_name + ".config")


def _get_model_file(model_path, model_name):
    return os.path.join(model_path, model_name + ".tar")


def _get_result_file(model_path, model_name):
    return os.path.join(model_path, model_name + "_results.json")


def load_model(model_path, model_name, net=None):
    config_file = _get_config_file(model_path, model_name)
    model_file = _get_model_file(model_path, model_name)
    assert os.path.isfile(
        config_file
    ), f'Could not find the config file "{config_file}". Are you sure this is the correct path and you have your model config stored here?'
    assert os.path.isfile(
        model_file
    ), f'Could not find the model file "{model_file}". Are you sure this is the correct path and you have your model stored here?'
    with open(config_file) as f:
        config_dict = json.load(f)
    if net is None:
        act_fn_name = config_dict["act_fn"].pop("name").lower()
        assert (
            act_fn_name in act_fn_by_name
        ), f'Unknown activation function "{act_fn_name}". Please add it to the "act_fn_by_name" dict.'
        act_fn = act_fn_by_name[act_fn_name]()
        net = BaseNetwork(act_fn=act_fn, **config_dict)
    net.load_state_dict(torch.load(model_file))
    return net


def save_model(model, model_path, model_name):
    config_dict = model.config
    os.makedirs(model_path, exist_ok=True)
    config_file = _get_config_file(model_path, model_name)
    model_file = _get_model_file(model_path, model_name)
    with open(config_file, "w") as f:
        json.dump(config_dict, f)
    torch.save(model.state_dict(), model_file)


def train_model(net, model_name, optim_func, max_epochs=50, batch_size=256, overwrite=False):
    """Train a model on the training set of FashionMNIST.

    Args:
        net: Object of BaseNetwork
        model_name: (str) Name of the model, used for creating the checkpoint names
        max_epochs: Number of epochs we want to (maximally) train for
        patience: If the performance on the validation set has not improved for #patience epochs, we stop training early
        batch_size: Size of batches used in training
        overwrite: Determines how to handle the case when there already exists a checkpoint. If True, it will be overwritten. Otherwise, we skip training.
    """
    file_exists = os.path.isfile(_get_model_file(CHECKPOINT_PATH, model_name))
    if file_exists and not overwrite:
        print(f'Model file of "{model_name}" already exists. Skipping training...')
        with open(_get_result_file(CHECKPOINT_PATH, model_name)) as f:
            results = json.load(f)
    else:
        if file_exists:
            print("Model file exists, but will be overwritten...")

        # Defining optimizer, loss and data loader
        optimizer = optim_func(net.parameters())
        loss_module = nn.CrossEntropyLoss()
        train_loader_local = data.DataLoader(
            train_set, batch_size=batch_size, shuffle=True, drop_last=True, pin_memory=True
        )

        results = None
        val_scores = []
        train_losses, train_scores = [], []
        best_val_epoch = -1
        for epoch in range(max_epochs):
            train_acc, val_acc, epoch_losses = epoch_iteration(
                net, loss_module, optimizer, train_loader_local, val_loader, epoch
            )
            train_scores.append(train_acc)
            val_scores.append(val_acc)
            train_losses += epoch_losses

            if len(val_scores) == 1 or val_acc > val_scores[best_val_epoch]:
                print("\t   (New best performance, saving model...)")
                save_model(net, CHECKPOINT_PATH, model_name)
                best_val_epoch = epoch

    if results is None:
        load_model(CHECKPOINT_PATH, model_name, net=net)
        test_acc = test_model(net, test_loader)
        results = {
            "test_acc": test_acc,
            "val_scores": val_scores,
            "train_losses": train_losses,
            "train_scores": train_scores,
        }
        with open(_get_result_file(CHECKPOINT_PATH, model_name), "w") as f:
            json.dump(results, f)

    # Plot a curve of the validation accuracy
    # sns.set()  # port: seaborn is not installed
    plt.plot([i for i in range(1, len(results["train_scores"]) + 1)], results["train_scores"], label="Train")
    plt.plot([i for i in range(1, len(results["val_scores"]) + 1)], results["val_scores"], label="Val")
    plt.xlabel("Epochs")
    plt.ylabel("Validation accuracy")
    plt.ylim(min(results["val_scores"]), max(results["train_scores"]) * 1.01)
    plt.title(f"Validation performance of {model_name}")
    plt.legend()
    plt.show()
    plt.close()

    print((f" Test accuracy: {results['test_acc']*100.0:4.2f}% ").center(50, "=") + "\n")
    return results


def epoch_iteration(net, loss_module, optimizer, train_loader_local, val_loader, epoch):
    ############
    # Training #
    ############
    net.train()
    true_preds, count = 0.0, 0
    epoch_losses = []
    t = tqdm(train_loader_local, leave=False)
    for imgs, labels in t:
        imgs, labels = imgs.to(device), labels.to(device)
        optimizer.zero_grad()
        preds = net(imgs)
        loss = loss_module(preds, labels)
        loss.backward()
        optimizer.step()
        # Record statistics during training
        true_preds += (preds.argmax(dim=-1) == labels).sum().item()
        count += labels.shape[0]
        t.set_description(f"Epoch {epoch+1}: loss={loss.item():4.2f}")
        epoch_losses.append(loss.item())
    train_acc = true_preds / count

    ##############
    # Validation #
    ##############
    val_acc = test_model(net, val_loader)
    print(
        f"[Epoch {epoch+1:2d}] Training accuracy: {train_acc*100.0:05.2f}%, Validation accuracy: {val_acc*100.0:05.2f}%"
    )
    return train_acc, val_acc, epoch_losses


def test_model(net, data_loader):
    """Test a model on a specified dataset.

    Args:
        net: Trained model of type BaseNetwork
        data_loader: DataLoader object of the dataset to test on (validation or test)
    """
    net.eval()
    true_preds, count = 0.0, 0
    for imgs, labels in data_loader:
        imgs, labels = imgs.to(device), labels.to(device)
        with torch.no_grad():
            preds = net(imgs).argmax(dim=-1)
            true_preds += (preds == labels).sum().item()
            count += labels.shape[0]
    test_acc = true_preds / count
    return test_acc


class OptimizerTemplate:
    def __init__(self, params, lr):
        self.params = list(params)
        self.lr = lr

    def zero_grad(self):
        # Set gradients of all parameters to zero
        for p in self.params:
            if p.grad is not None:
                p.grad.detach_()  # For second-order optimizers important
                p.grad.zero_()

    @torch.no_grad()
    def step(self):
        # Apply update step to all parameters
        for p in self.params:
            if p.grad is None:  # We skip parameters without any gradients
                continue
            self.update_param(p)

    def update_param(self, p):
        # To be implemented in optimizer-specific classes
        raise NotImplementedError


class SGD(OptimizerTemplate):
    def __init__(self, params, lr):
        super().__init__(params, lr)

    def update_param(self, p):
        p_update = -self.lr * p.grad
        p.add_(p_update)  # In-place update => saves memory and does not create computation graph


class SGDMomentum(OptimizerTemplate):
    def __init__(self, params, lr, momentum=0.0):
        super().__init__(params, lr)
        self.momentum = momentum  # Corresponds to beta_1 in the equation above
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}  # Dict to store m_t

    def update_param(self, p):
        self.param_momentum[p] = (1 - self.momentum) * p.grad + self.momentum * self.param_momentum[p]
        p_update = -self.lr * self.param_momentum[p]
        p.add_(p_update)


class Adam(OptimizerTemplate):
    def __init__(self, params, lr, beta1=0.9, beta2=0.999, eps=1e-8):
        super().__init__(params, lr)
        self.beta1 = beta1
        self.beta2 = beta2
        self.eps = eps
        self.param_step = {p: 0 for p in self.params}  # Remembers "t" for each parameter for bias correction
        self.param_momentum = {p: torch.zeros_like(p.data) for p in self.params}
        self.param_2nd_momentum = {p: torch.zeros_like(p.data) for p in self.params}

    def update_param(self, p):
        self.param_step[p] += 1

        self.param_momentum[p] = (1 - self.beta1) * p.grad + self.beta1 * self.param_momentum[p]
        self.param_2nd_momentum[p] = (1 - self.beta2) * (p.grad) ** 2 + self.beta2 * self.param_2nd_momentum[p]

        bias_correction_1 = 1 - self.beta1 ** self.param_step[p]
        bias_correction_2 = 1 - self.beta2 ** self.param_step[p]

        p_2nd_mom = self.param_2nd_momentum[p] / bias_correction_2
        p_mom = self.param_momentum[p] / bias_correction_1
        p_lr = self.lr / (torch.sqrt(p_2nd_mom) + self.eps)
        p_update = -p_lr * p_mom

        p.add_(p_update)


base_model = BaseNetwork(act_fn=nn.ReLU(), hidden_sizes=[128, 64, 64, 32])  # port: [512, 256, 256, 128] shrunk
kaiming_init(base_model)

SGD_model = copy.deepcopy(base_model).to(device)
SGD_results = train_model(
    SGD_model, "FashionMNIST_SGD", lambda params: SGD(params, lr=1e-1), max_epochs=2, batch_size=32  # port: 40 epochs of batches of 256 shrunk
)

SGDMom_model = copy.deepcopy(base_model).to(device)
SGDMom_results = train_model(
    SGDMom_model,
    "FashionMNIST_SGDMom",
    lambda params: SGDMomentum(params, lr=1e-1, momentum=0.9),
    max_epochs=2,  # port: 40 shrunk
    batch_size=32,  # port: 256 shrunk
)

Adam_model = copy.deepcopy(base_model).to(device)
Adam_results = train_model(
    Adam_model, "FashionMNIST_Adam", lambda params: Adam(params, lr=1e-3), max_epochs=2, batch_size=32  # port: 40 epochs of batches of 256 shrunk
)


def pathological_curve_loss(w1, w2):
    # Example of a pathological curvature. There are many more possible, feel free to experiment here!
    x1_loss = torch.tanh(w1) ** 2 + 0.01 * torch.abs(w1)
    x2_loss = torch.sigmoid(w2)
    return x1_loss + x2_loss


def plot_curve(
    curve_fn, x_range=(-5, 5), y_range=(-5, 5), plot_3d=False, cmap=cm.viridis, title="Pathological curvature"
):
    fig = plt.figure()
    ax = fig.gca()
    if plot_3d:
        ax = fig.add_subplot(projection="3d")

    x = torch.arange(x_range[0], x_range[1], (x_range[1] - x_range[0]) / 100.0)
    y = torch.arange(y_range[0], y_range[1], (y_range[1] - y_range[0]) / 100.0)
    x, y = torch.meshgrid([x, y])
    z = curve_fn(x, y)
    x, y, z = x.numpy(), y.numpy(), z.numpy()

    if plot_3d:
        ax.plot_surface(x, y, z, cmap=cmap, linewidth=1, color="#000", antialiased=False)
        ax.set_zlabel("loss")
    else:
        ax.imshow(z.T[::-1], cmap=cmap, extent=(x_range[0], x_range[1], y_range[0], y_range[1]))
    plt.title(title)
    ax.set_xlabel(r"$w_1$")
    ax.set_ylabel(r"$w_2$")
    plt.tight_layout()
    ax.surface = z  # port: kept for the test
    return ax


# sns.reset_orig()  # port: seaborn is not installed
surface = plot_curve(pathological_curve_loss, plot_3d=False).surface  # port: drawn flat, not in 3-D (test time); kept for the test
plt.close("all")  # port: plt.show() (Agg)


def train_curve(optimizer_func, curve_func=pathological_curve_loss, num_updates=100, init=[5, 5]):
    """
    Args:
        optimizer_func: Constructor of the optimizer to use. Should only take a parameter list
        curve_func: Loss function (e.g. pathological curvature)
        num_updates: Number of updates/steps to take when optimizing
        init: Initial values of parameters. Must be a list/tuple with two elements representing w_1 and w_2
    Returns:
        Numpy array of shape [num_updates, 3] with [t,:2] being the parameter values at step t, and [t,2] the loss at t.
    """
    weights = nn.Parameter(torch.FloatTensor(init), requires_grad=True)
    optim = optimizer_func([weights])

    list_points = []
    for _ in range(num_updates):
        loss = curve_func(weights[0], weights[1])
        list_points.append(torch.cat([weights.data.detach(), loss.unsqueeze(dim=0).detach()], dim=0))
        optim.zero_grad()
        loss.backward()
        optim.step()
    points = torch.stack(list_points, dim=0).numpy()
    return points


SGD_points = train_curve(lambda params: SGD(params, lr=10))
SGDMom_points = train_curve(lambda params: SGDMomentum(params, lr=10, momentum=0.9))
Adam_points = train_curve(lambda params: Adam(params, lr=1))
curve_points = SGD_points, SGDMom_points, Adam_points  # port: kept for the test

all_points = np.concatenate([SGD_points, SGDMom_points, Adam_points], axis=0)
ax = plot_curve(
    pathological_curve_loss,
    x_range=(-np.absolute(all_points[:, 0]).max(), np.absolute(all_points[:, 0]).max()),
    y_range=(all_points[:, 1].min(), all_points[:, 1].max()),
    plot_3d=False,
)
ax.plot(SGD_points[:, 0], SGD_points[:, 1], color="red", marker="o", zorder=1, label="SGD")
ax.plot(SGDMom_points[:, 0], SGDMom_points[:, 1], color="blue", marker="o", zorder=2, label="SGDMom")
ax.plot(Adam_points[:, 0], Adam_points[:, 1], color="grey", marker="o", zorder=3, label="Adam")
plt.legend()
plt.close("all")  # port: plt.show() (Agg)


def bivar_gaussian(w1, w2, x_mean=0.0, y_mean=0.0, x_sig=1.0, y_sig=1.0):
    norm = 1 / (2 * np.pi * x_sig * y_sig)
    x_exp = (-1 * (w1 - x_mean) ** 2) / (2 * x_sig**2)
    y_exp = (-1 * (w2 - y_mean) ** 2) / (2 * y_sig**2)
    return norm * torch.exp(x_exp + y_exp)


def comb_func(w1, w2):
    z = -bivar_gaussian(w1, w2, x_mean=1.0, y_mean=-0.5, x_sig=0.2, y_sig=0.2)
    z -= bivar_gaussian(w1, w2, x_mean=-1.0, y_mean=0.5, x_sig=0.2, y_sig=0.2)
    z -= bivar_gaussian(w1, w2, x_mean=-0.5, y_mean=-0.8, x_sig=0.2, y_sig=0.2)
    return z


steep_surface = plot_curve(comb_func, x_range=(-2, 2), y_range=(-2, 2), plot_3d=False, title="Steep optima").surface  # port: drawn flat, not in 3-D (test time); kept for the test
plt.close("all")  # port: the notebook's inline figure (Agg)

SGD_points = train_curve(lambda params: SGD(params, lr=0.5), comb_func, init=[0, 0])
SGDMom_points = train_curve(lambda params: SGDMomentum(params, lr=1, momentum=0.9), comb_func, init=[0, 0])
Adam_points = train_curve(lambda params: Adam(params, lr=0.2), comb_func, init=[0, 0])
steep_points = SGD_points, SGDMom_points, Adam_points  # port: kept for the test

all_points = np.concatenate([SGD_points, SGDMom_points, Adam_points], axis=0)
ax = plot_curve(comb_func, x_range=(-2, 2), y_range=(-2, 2), plot_3d=False, title="Steep optima")
ax.plot(SGD_points[:, 0], SGD_points[:, 1], color="red", marker="o", zorder=3, label="SGD", alpha=0.7)
ax.plot(SGDMom_points[:, 0], SGDMom_points[:, 1], color="blue", marker="o", zorder=2, label="SGDMom", alpha=0.7)
ax.plot(Adam_points[:, 0], Adam_points[:, 1], color="grey", marker="o", zorder=1, label="Adam", alpha=0.7)
ax.set_xlim(-2, 2)
ax.set_ylim(-2, 2)
plt.legend()
plt.close("all")  # port: plt.show() (Agg)
'''

FLOWS = r'''
## Standard libraries
import os
import math
import time
import numpy as np 

## Imports for plotting
import matplotlib.pyplot as plt
# %matplotlib inline  # port: a notebook's magic
# from IPython.display import set_matplotlib_formats  # port: IPython is not installed
# set_matplotlib_formats('svg', 'pdf') # For export  # port: IPython is not installed
from matplotlib.colors import to_rgb
import matplotlib
matplotlib.rcParams['lines.linewidth'] = 2.0
# import seaborn as sns  # port: seaborn is not installed
# sns.reset_orig()  # port: seaborn is not installed

## Progress bar
from tqdm import tqdm  # port: the console's bar (tqdm.notebook needs a notebook)

## PyTorch
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
import torch.optim as optim
# port: torchvision (MNIST, transforms, utils.make_grid) and PyTorch Lightning are not installed: the data is made in the test, Lightning's loop written below

# Path to the folder where the datasets are/should be downloaded (e.g. MNIST)
DATASET_PATH = "../data"
# Path to the folder where the pretrained models are saved
CHECKPOINT_PATH = "../saved_models/tutorial11"

# Setting the seed
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)

# Ensure that all operations are deterministic on GPU (if used) for reproducibility
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False

# Fetching the device that will be used throughout this notebook
device = torch.device("cpu") if not torch.cuda.is_available() else torch.device("cuda:0")
print("Using device", device) 

# Create checkpoint path if it doesn't exist yet
os.makedirs(CHECKPOINT_PATH, exist_ok=True)  # port: the download of pretrained flows left out (trained here)

# Convert images from 0-1 to 0-255 (integers)
def discretize(sample):
    return (sample * 255).to(torch.int32)

images = np.load(os.path.join(DATASET_PATH, "images.npz"))  # port: MNIST's stand-in, 8x8 digits in [0, 1] (ToTensor)
train_dataset = data.TensorDataset(discretize(torch.tensor(images["x_train"])), torch.tensor(images["y_train"]))  # port: MNIST(train=True) with the transform applied
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
train_set, val_set = torch.utils.data.random_split(train_dataset, [96, 32])  # port: 50000/10000 shrunk

# Loading the test set
test_set = data.TensorDataset(discretize(torch.tensor(images["x_test"])), torch.tensor(images["y_test"]))  # port: MNIST(train=False) with the transform applied

train_loader = data.DataLoader(train_set, batch_size=32, shuffle=False, drop_last=False)  # port: batch 256 shrunk
val_loader = data.DataLoader(val_set, batch_size=32, shuffle=False, drop_last=False)  # port: no worker processes
test_loader = data.DataLoader(test_set, batch_size=32, shuffle=False, drop_last=False)  # port: no worker processes

def show_imgs(imgs, title=None, row_size=4):
    # Form a grid of pictures (we use max. 8 columns)
    num_imgs = imgs.shape[0] if isinstance(imgs, torch.Tensor) else len(imgs)
    is_int = imgs.dtype==torch.int32 if isinstance(imgs, torch.Tensor) else imgs[0].dtype==torch.int32
    nrow = min(num_imgs, row_size)
    ncol = int(math.ceil(num_imgs/nrow))
    print("show_imgs", num_imgs, is_int, nrow, ncol, title)  # port: torchvision's make_grid and the plot left out

show_imgs([train_set[i][0] for i in range(8)]) 

class ImageFlow(nn.Module):  # port: nn.Module, not pl.LightningModule
    
    def __init__(self, flows, import_samples=2):  # port: 8 importance samples shrunk
        """
        Inputs:
            flows - A list of flows (each a nn.Module) that should be applied on the images. 
            import_samples - Number of importance samples to use during testing (see explanation below). Can be changed at any time
        """
        super().__init__()
        self.flows = nn.ModuleList(flows)
        self.import_samples = import_samples
        # Create prior distribution for final latent space
        self.prior = torch.distributions.normal.Normal(loc=0.0, scale=1.0)
        # Example input for visualizing the graph
        # self.example_input_array = train_set[0][0].unsqueeze(dim=0)  # port: Lightning's graph logging
        self.device = device  # port: Lightning's LightningModule.device
        self.logged = {}  # port: what Lightning's self.log keeps

    def log(self, name, value):  # port: Lightning's self.log
        self.logged[name] = value.item()  # port: as above

    def forward(self, imgs):
        # The forward function is only used for visualizing the graph
        return self._get_likelihood(imgs)

    def encode(self, imgs):
        # Given a batch of images, return the latent representation z and ldj of the transformations
        z, ldj = imgs, torch.zeros(imgs.shape[0], device=self.device)
        for flow in self.flows:
            z, ldj = flow(z, ldj, reverse=False)
        return z, ldj

    def _get_likelihood(self, imgs, return_ll=False):
        """
        Given a batch of images, return the likelihood of those. 
        If return_ll is True, this function returns the log likelihood of the input.
        Otherwise, the ouptut metric is bits per dimension (scaled negative log likelihood)
        """
        z, ldj = self.encode(imgs)
        log_pz = self.prior.log_prob(z).sum(dim=[1,2,3])
        log_px = ldj + log_pz
        nll = -log_px
        # Calculating bits per dimension
        bpd = nll * np.log2(np.exp(1)) / np.prod(imgs.shape[1:])
        return bpd.mean() if not return_ll else log_px

    @torch.no_grad()
    def sample(self, img_shape, z_init=None):
        """
        Sample a batch of images from the flow.
        """
        # Sample latent representation from prior
        if z_init is None:
            z = self.prior.sample(sample_shape=img_shape).to(device)
        else:
            z = z_init.to(device)
        
        # Transform z to x by inverting the flows
        ldj = torch.zeros(img_shape[0], device=device)
        for flow in reversed(self.flows):
            z, ldj = flow(z, ldj, reverse=True)
        return z

    def configure_optimizers(self):
        optimizer = optim.Adam(self.parameters(), lr=1e-3)
        # An scheduler is optional, but can help in flows to get the last bpd improvement
        scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.99)
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        # Normalizing flows are trained by maximum likelihood => return bpd
        loss = self._get_likelihood(batch[0])                             
        self.log('train_bpd', loss)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self._get_likelihood(batch[0])
        self.log('val_bpd', loss)

    def test_step(self, batch, batch_idx):
        # Perform importance sampling during testing => estimate likelihood M times for each image
        samples = []
        for _ in range(self.import_samples):
            img_ll = self._get_likelihood(batch[0], return_ll=True)
            samples.append(img_ll)
        img_ll = torch.stack(samples, dim=-1)
        
        # To average the probabilities, we need to go from log-space to exp, and back to log.
        # Logsumexp provides us a stable implementation for this
        img_ll = torch.logsumexp(img_ll, dim=-1) - np.log(self.import_samples)
        
        # Calculate final bpd
        bpd = -img_ll * np.log2(np.exp(1)) / np.prod(batch[0].shape[1:])
        bpd = bpd.mean()
        
        self.log('test_bpd', bpd) 

class Dequantization(nn.Module):
    
    def __init__(self, alpha=1e-5, quants=256):
        """
        Inputs:
            alpha - small constant that is used to scale the original input. 
                    Prevents dealing with values very close to 0 and 1 when inverting the sigmoid
            quants - Number of possible discrete values (usually 256 for 8-bit image)
        """
        super().__init__()
        self.alpha = alpha
        self.quants = quants 
        
    def forward(self, z, ldj, reverse=False):
        if not reverse:
            z, ldj = self.dequant(z, ldj)
            z, ldj = self.sigmoid(z, ldj, reverse=True)
        else:
            z, ldj = self.sigmoid(z, ldj, reverse=False)
            z = z * self.quants
            ldj += np.log(self.quants) * np.prod(z.shape[1:])
            z = torch.floor(z).clamp(min=0, max=self.quants-1).to(torch.int32)
        return z, ldj
    
    def sigmoid(self, z, ldj, reverse=False):
        # Applies an invertible sigmoid transformation
        if not reverse:
            ldj += (-z-2*F.softplus(-z)).sum(dim=[1,2,3])
            z = torch.sigmoid(z)
            # Reversing scaling for numerical stability
            ldj -= np.log(1 - self.alpha) * np.prod(z.shape[1:])
            z = (z - 0.5 * self.alpha) / (1 - self.alpha)
        else:
            z = z * (1 - self.alpha) + 0.5 * self.alpha  # Scale to prevent boundaries 0 and 1
            ldj += np.log(1 - self.alpha) * np.prod(z.shape[1:])
            ldj += (-torch.log(z) - torch.log(1-z)).sum(dim=[1,2,3])
            z = torch.log(z) - torch.log(1-z)
        return z, ldj
    
    def dequant(self, z, ldj):
        # Transform discrete values to continuous volumes
        z = z.to(torch.float32)
        z = z + torch.rand_like(z).detach()
        z = z / self.quants
        ldj -= np.log(self.quants) * np.prod(z.shape[1:])
        return z, ldj 

## Testing invertibility of dequantization layer
torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
orig_img = train_set[0][0].unsqueeze(dim=0)
ldj = torch.zeros(1,)
dequant_module = Dequantization()
deq_img, ldj = dequant_module(orig_img, ldj, reverse=False)
reconst_img, ldj = dequant_module(deq_img, ldj, reverse=True)

d1, d2 = torch.where(orig_img.squeeze() != reconst_img.squeeze())
if len(d1) != 0:
    print("Dequantization was not invertible.")
    for i in range(d1.shape[0]):
        print("Original value:", orig_img[0,0,d1[i], d2[i]].item())
        print("Reconstructed value:", reconst_img[0,0,d1[i], d2[i]].item())
else:
    print("Successfully inverted dequantization")

def visualize_dequantization(quants, prior=None):
    """
    Function for visualizing the dequantization values of discrete values in continuous space
    """
    # Prior over discrete values. If not given, a uniform is assumed
    if prior is None:
        prior = np.ones(quants, dtype=np.float32) / quants
    prior = prior / prior.sum()  # Ensure proper categorical distribution

    inp = torch.arange(-4, 4, 0.01).view(-1, 1, 1, 1) # Possible continuous values we want to consider
    ldj = torch.zeros(inp.shape[0])
    dequant_module = Dequantization(quants=quants)
    # Invert dequantization on continuous values to find corresponding discrete value
    out, ldj = dequant_module.forward(inp, ldj, reverse=True)
    inp, out, prob = inp.squeeze().numpy(), out.squeeze().numpy(), ldj.exp().numpy()
    prob = prob * prior[out] # Probability scaled by categorical prior
    
    # Plot volumes and continuous distribution
    # sns.set_style("white")  # port: seaborn is not installed
    fig = plt.figure(figsize=(6,3))
    x_ticks = []
    for v in np.unique(out):
        indices = np.where(out==v)
        color = to_rgb(f"C{v}")
        plt.fill_between(inp[indices], prob[indices], np.zeros(indices[0].shape[0]), color=color+(0.5,), label=str(v))
        plt.plot([inp[indices[0][0]]]*2,  [0, prob[indices[0][0]]],  color=color)
        plt.plot([inp[indices[0][-1]]]*2, [0, prob[indices[0][-1]]], color=color)
        x_ticks.append(inp[indices[0][0]])
    x_ticks.append(inp.max())
    plt.xticks(x_ticks, [f"{x:.1f}" for x in x_ticks])
    plt.plot(inp,prob, color=(0.0,0.0,0.0))
    # Set final plot properties
    plt.ylim(0, prob.max()*1.1)
    plt.xlim(inp.min(), inp.max())
    plt.xlabel("z")
    plt.ylabel("Probability")
    plt.title(f"Dequantization distribution for {quants} discrete values")
    plt.legend()
    plt.show()
    plt.close()
    return out, prob  # port: kept for the test
    
deq_values, deq_probs = visualize_dequantization(quants=8)  # port: kept for the test
visualize_dequantization(quants=8, prior=np.array([0.075, 0.2, 0.4, 0.2, 0.075, 0.025, 0.0125, 0.0125])) 

class VariationalDequantization(Dequantization):
    
    def __init__(self, var_flows, alpha=1e-5):
        """
        Inputs: 
            var_flows - A list of flow transformations to use for modeling q(u|x)
            alpha - Small constant, see Dequantization for details
        """
        super().__init__(alpha=alpha)
        self.flows = nn.ModuleList(var_flows)
        
    def dequant(self, z, ldj):
        z = z.to(torch.float32)
        img = (z / 255.0) * 2 - 1 # We condition the flows on x, i.e. the original image
        
        # Prior of u is a uniform distribution as before
        # As most flow transformations are defined on [-infinity,+infinity], we apply an inverse sigmoid first.
        deq_noise = torch.rand_like(z).detach()
        deq_noise, ldj = self.sigmoid(deq_noise, ldj, reverse=True)
        for flow in self.flows:
            deq_noise, ldj = flow(deq_noise, ldj, reverse=False, orig_img=img)
        deq_noise, ldj = self.sigmoid(deq_noise, ldj, reverse=False)
        
        # After the flows, apply u as in standard dequantization
        z = (z + deq_noise) / 256.0
        ldj -= np.log(256.0) * np.prod(z.shape[1:])
        return z, ldj 

class CouplingLayer(nn.Module):
    
    def __init__(self, network, mask, c_in):
        """
        Coupling layer inside a normalizing flow.
        Inputs:
            network - A PyTorch nn.Module constituting the deep neural network for mu and sigma.
                      Output shape should be twice the channel size as the input.
            mask - Binary mask (0 or 1) where 0 denotes that the element should be transformed,
                   while 1 means the latent will be used as input to the NN.
            c_in - Number of input channels
        """
        super().__init__()
        self.network = network
        self.scaling_factor = nn.Parameter(torch.zeros(c_in))
        # Register mask as buffer as it is a tensor which is not a parameter, 
        # but should be part of the modules state.
        self.register_buffer('mask', mask)
    
    def forward(self, z, ldj, reverse=False, orig_img=None):
        """
        Inputs:
            z - Latent input to the flow
            ldj - The current ldj of the previous flows. 
                  The ldj of this layer will be added to this tensor.
            reverse - If True, we apply the inverse of the layer.
            orig_img (optional) - Only needed in VarDeq. Allows external
                                  input to condition the flow on (e.g. original image)
        """
        # Apply network to masked input
        z_in = z * self.mask
        if orig_img is None:
            nn_out = self.network(z_in)
        else:
            nn_out = self.network(torch.cat([z_in, orig_img], dim=1))
        s, t = nn_out.chunk(2, dim=1)
        
        # Stabilize scaling output
        s_fac = self.scaling_factor.exp().view(1, -1, 1, 1)
        s = torch.tanh(s / s_fac) * s_fac
        
        # Mask outputs (only transform the second part)
        s = s * (1 - self.mask)
        t = t * (1 - self.mask)
        
        # Affine transformation
        if not reverse:
            # Whether we first shift and then scale, or the other way round,
            # is a design choice, and usually does not have a big impact
            z = (z + t) * torch.exp(s)
            ldj += s.sum(dim=[1,2,3])
        else:
            z = (z * torch.exp(-s)) - t
            ldj -= s.sum(dim=[1,2,3])
            
        return z, ldj 

with torch.no_grad():
    x = torch.arange(-5,5,0.01)
    scaling_factors = [0.5, 1, 2]
    # sns.set()  # port: seaborn is not installed
    fig, ax = plt.subplots(1, 3, figsize=(12,3))
    for i, scale in enumerate(scaling_factors):
        y = torch.tanh(x / scale) * scale
        ax[i].plot(x.numpy(), y.numpy())
        ax[i].set_title("Scaling factor: " + str(scale))
        ax[i].set_ylim(-3, 3)
    plt.subplots_adjust(wspace=0.4)
    # sns.reset_orig()  # port: seaborn is not installed
    plt.show() 
    plt.close()  # port: the notebook's inline figure (Agg)

def create_checkerboard_mask(h, w, invert=False):
    x, y = torch.arange(h, dtype=torch.int32), torch.arange(w, dtype=torch.int32)
    xx, yy = torch.meshgrid(x, y, indexing='ij')
    mask = torch.fmod(xx + yy, 2)
    mask = mask.to(torch.float32).view(1, 1, h, w)
    if invert:
        mask = 1 - mask
    return mask

def create_channel_mask(c_in, invert=False):
    mask = torch.cat([torch.ones(c_in//2, dtype=torch.float32), 
                      torch.zeros(c_in-c_in//2, dtype=torch.float32)])
    mask = mask.view(1, c_in, 1, 1)
    if invert:
        mask = 1 - mask
    return mask 

checkerboard_mask = create_checkerboard_mask(h=8, w=8).expand(-1,2,-1,-1)
channel_mask = create_channel_mask(c_in=2).expand(-1,-1,8,8)

show_imgs(checkerboard_mask.transpose(0,1), "Checkerboard mask")
show_imgs(channel_mask.transpose(0,1), "Channel mask") 

class ConcatELU(nn.Module):
    """
    Activation function that applies ELU in both direction (inverted and plain). 
    Allows non-linearity while providing strong gradients for any input (important for final convolution)
    """
    
    def forward(self, x):
        return torch.cat([F.elu(x), F.elu(-x)], dim=1)

    
class LayerNormChannels(nn.Module):
    
    def __init__(self, c_in, eps=1e-5):
        """
        This module applies layer norm across channels in an image.
        Inputs: 
            c_in - Number of channels of the input
            eps - Small constant to stabilize std
        """
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(1, c_in, 1, 1))
        self.beta = nn.Parameter(torch.zeros(1, c_in, 1, 1))
        self.eps = eps
    
    def forward(self, x):
        mean = x.mean(dim=1, keepdim=True)
        var = x.var(dim=1, unbiased=False, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps)
        y = y * self.gamma + self.beta
        return y

    
class GatedConv(nn.Module):
    
    def __init__(self, c_in, c_hidden):
        """
        This module applies a two-layer convolutional ResNet block with input gate
        Inputs:
            c_in - Number of channels of the input
            c_hidden - Number of hidden dimensions we want to model (usually similar to c_in)
        """
        super().__init__()
        self.net = nn.Sequential(
            ConcatELU(),
            nn.Conv2d(2*c_in, c_hidden, kernel_size=3, padding=1),
            ConcatELU(),
            nn.Conv2d(2*c_hidden, 2*c_in, kernel_size=1)
        )
    
    def forward(self, x):
        out = self.net(x)
        val, gate = out.chunk(2, dim=1)
        return x + val * torch.sigmoid(gate)

    
class GatedConvNet(nn.Module):
    
    def __init__(self, c_in, c_hidden=32, c_out=-1, num_layers=1):  # port: 3 gated blocks shrunk to 1
        """
        Module that summarizes the previous blocks to a full convolutional neural network.
        Inputs:
            c_in - Number of input channels
            c_hidden - Number of hidden dimensions to use within the network
            c_out - Number of output channels. If -1, 2 times the input channels are used (affine coupling)
            num_layers - Number of gated ResNet blocks to apply
        """
        super().__init__()
        c_out = c_out if c_out > 0 else 2 * c_in
        layers = []
        layers += [nn.Conv2d(c_in, c_hidden, kernel_size=3, padding=1)]
        for layer_index in range(num_layers):
            layers += [GatedConv(c_hidden, c_hidden),
                       LayerNormChannels(c_hidden)]
        layers += [ConcatELU(),
                   nn.Conv2d(2*c_hidden, c_out, kernel_size=3, padding=1)]
        self.nn = nn.Sequential(*layers)
        
        (self.nn[-1].weights if hasattr(self.nn[-1], 'weights') else self.nn[-1].weight).data.zero_()  # port: a conv's weight is tricycle's weights, in torch's layout (documented)
        self.nn[-1].bias.data.zero_()
    
    def forward(self, x):
        return self.nn(x) 

def create_simple_flow(use_vardeq=True):
    flow_layers = []
    if use_vardeq:
        vardeq_layers = [CouplingLayer(network=GatedConvNet(c_in=2, c_out=2, c_hidden=8),  # port: 16 channels shrunk
                                       mask=create_checkerboard_mask(h=8, w=8, invert=(i%2==1)),  # port: 28x28 images shrunk to 8x8
                                       c_in=1) for i in range(2)]  # port: 4 layers shrunk
        flow_layers += [VariationalDequantization(var_flows=vardeq_layers)]
    else:
        flow_layers += [Dequantization()]
    
    for i in range(4):  # port: 8 layers shrunk
        flow_layers += [CouplingLayer(network=GatedConvNet(c_in=1, c_hidden=8),  # port: 32 channels shrunk
                                      mask=create_checkerboard_mask(h=8, w=8, invert=(i%2==1)),  # port: 8x8 images
                                      c_in=1)]
        
    flow_model = ImageFlow(flow_layers).to(device)
    return flow_model 

class Trainer:  # port: the loop of Lightning's Trainer.fit and Trainer.test
    def __init__(self, max_epochs, gradient_clip_val):  # port: as above
        self.max_epochs, self.gradient_clip_val = max_epochs, gradient_clip_val  # port: as above

    def fit(self, model, train_loader, val_loader):  # port: as above
        [optimizer], [scheduler] = model.configure_optimizers()  # port: as above
        for epoch in range(self.max_epochs):  # port: as above
            model.train()  # port: as above
            for batch_idx, batch in enumerate(train_loader):  # port: as above
                loss = model.training_step(batch, batch_idx)  # port: as above
                optimizer.zero_grad()  # port: as above
                loss.backward()  # port: as above
                torch.nn.utils.clip_grad_norm_(model.parameters(), self.gradient_clip_val)  # port: as above
                optimizer.step()  # port: as above
            scheduler.step()  # port: as above
            model.eval()  # port: as above
            with torch.no_grad():  # port: as above
                val = [model.validation_step(batch, i) or model.logged['val_bpd'] for i, batch in enumerate(val_loader)]  # port: as above
            print(f"Epoch {epoch}: train_bpd {model.logged['train_bpd']:.3f}, val_bpd {np.mean(val):.3f}")  # port: Lightning's log

    def test(self, model, loader, verbose=False):  # port: as above
        model.eval()  # port: as above
        with torch.no_grad():  # port: as above
            bpds = [model.test_step(batch, i) or model.logged['test_bpd'] for i, batch in enumerate(loader)]  # port: as above
        return [{"test_bpd": float(np.mean(bpds))}]  # port: as above

def train_flow(flow, model_name="MNISTFlow"):
    # Create a PyTorch Lightning trainer
    trainer = Trainer(max_epochs=2, gradient_clip_val=1.0)  # port: pl.Trainer, 200 epochs shrunk (checkpoints, monitor and logger left out)
    
    train_data_loader = data.DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True, pin_memory=True)  # port: batch 128 shrunk, no worker processes
    result = None
    
    # Check whether pretrained model exists. If yes, load it and skip training
    pretrained_filename = os.path.join(CHECKPOINT_PATH, model_name + ".ckpt")
    if os.path.isfile(pretrained_filename):
        print("Found pretrained model, loading...")
        ckpt = torch.load(pretrained_filename, map_location=device)
        flow.load_state_dict(ckpt['state_dict'])
        result = ckpt.get("result", None)
    else:
        print("Start training", model_name)
        trainer.fit(flow, train_data_loader, val_loader)
    
    # Test best model on validation and test set if no result has been found
    # Testing can be expensive due to the importance sampling.
    if result is None:
        val_result = trainer.test(flow, val_loader, verbose=False)
        start_time = time.time()
        test_result = trainer.test(flow, test_loader, verbose=False)
        duration = time.time() - start_time
        result = {"test": test_result, "val": val_result, "time": duration / len(test_loader) / flow.import_samples}
    
    return flow, result 

class SqueezeFlow(nn.Module):
    
    def forward(self, z, ldj, reverse=False):
        B, C, H, W = z.shape
        if not reverse: 
            # Forward direction: H x W x C => H/2 x W/2 x 4C
            z = z.reshape(B, C, H//2, 2, W//2, 2)
            z = z.permute(0, 1, 3, 5, 2, 4)
            z = z.reshape(B, 4*C, H//2, W//2)
        else: 
            # Reverse direction: H/2 x W/2 x 4C => H x W x C
            z = z.reshape(B, C//4, 2, 2, H, W)
            z = z.permute(0, 1, 4, 2, 5, 3)
            z = z.reshape(B, C//4, H*2, W*2)
        return z, ldj 

sq_flow = SqueezeFlow()
rand_img = torch.arange(1,17).view(1, 1, 4, 4)
print("Image (before)\n", rand_img)
forward_img, _ = sq_flow(rand_img, ldj=None, reverse=False)
print("\nImage (forward)\n", forward_img.permute(0,2,3,1)) # Permute for readability
reconst_img, _ = sq_flow(forward_img, ldj=None, reverse=True)
print("\nImage (reverse)\n", reconst_img) 

class SplitFlow(nn.Module):
    
    def __init__(self):
        super().__init__()
        self.prior = torch.distributions.normal.Normal(loc=0.0, scale=1.0)
    
    def forward(self, z, ldj, reverse=False):
        if not reverse:
            z, z_split = z.chunk(2, dim=1)
            ldj += self.prior.log_prob(z_split).sum(dim=[1,2,3])
        else:
            z_split = self.prior.sample(sample_shape=z.shape).to(device)
            z = torch.cat([z, z_split], dim=1)
            ldj -= self.prior.log_prob(z_split).sum(dim=[1,2,3])
        return z, ldj 

def create_multiscale_flow():
    flow_layers = []
    
    vardeq_layers = [CouplingLayer(network=GatedConvNet(c_in=2, c_out=2, c_hidden=8),  # port: 16 channels shrunk
                                   mask=create_checkerboard_mask(h=8, w=8, invert=(i%2==1)),  # port: 8x8 images
                                   c_in=1) for i in range(2)]  # port: 4 layers shrunk
    flow_layers += [VariationalDequantization(vardeq_layers)]
    
    flow_layers += [CouplingLayer(network=GatedConvNet(c_in=1, c_hidden=8),  # port: 32 channels shrunk
                                  mask=create_checkerboard_mask(h=8, w=8, invert=(i%2==1)),  # port: 8x8 images
                                  c_in=1) for i in range(2)]
    flow_layers += [SqueezeFlow()]
    for i in range(2):
        flow_layers += [CouplingLayer(network=GatedConvNet(c_in=4, c_hidden=12),  # port: 48 channels shrunk
                                      mask=create_channel_mask(c_in=4, invert=(i%2==1)),
                                      c_in=4)]
    flow_layers += [SplitFlow(),
                    SqueezeFlow()]
    for i in range(2):  # port: 4 layers shrunk
        flow_layers += [CouplingLayer(network=GatedConvNet(c_in=8, c_hidden=16),  # port: 64 channels shrunk
                                      mask=create_channel_mask(c_in=8, invert=(i%2==1)),
                                      c_in=8)]

    flow_model = ImageFlow(flow_layers).to(device)
    return flow_model 

def print_num_params(model):
    num_params = sum([np.prod(p.shape) for p in model.parameters()])
    print("Number of parameters: {:,}".format(num_params))

print_num_params(create_simple_flow(use_vardeq=False))
print_num_params(create_simple_flow(use_vardeq=True))
print_num_params(create_multiscale_flow()) 

flow_dict = {"simple": {}, "vardeq": {}, "multiscale": {}}
flow_dict["simple"]["model"], flow_dict["simple"]["result"] = train_flow(create_simple_flow(use_vardeq=False), model_name="MNISTFlow_simple")
flow_dict["vardeq"]["model"], flow_dict["vardeq"]["result"] = train_flow(create_simple_flow(use_vardeq=True), model_name="MNISTFlow_vardeq")
flow_dict["multiscale"]["model"], flow_dict["multiscale"]["result"] = train_flow(create_multiscale_flow(), model_name="MNISTFlow_multiscale") 

print(flow_dict["simple"]["result"]["val"])  # port: the cell's value printed

for key in flow_dict:  # port: tabulate's HTML table (IPython is not installed) as lines
    print(key, "%4.3f bpd" % flow_dict[key]["result"]["val"][0]["test_bpd"], "%4.3f bpd" % flow_dict[key]["result"]["test"][0]["test_bpd"], "{:,}".format(sum([np.prod(p.shape) for p in flow_dict[key]["model"].parameters()])))  # port: as above

torch.manual_seed(44); np.random.seed(44)  # port: pl.seed_everything(44)
samples = flow_dict["vardeq"]["model"].sample(img_shape=[16,1,8,8])  # port: 8x8 images
show_imgs(samples.cpu()) 

torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
ms_samples = flow_dict["multiscale"]["model"].sample(img_shape=[16,8,2,2])  # port: 8x8 images' latent (7x7 for 28x28); named for the test
show_imgs(ms_samples.cpu())  # port: as above

@torch.no_grad()
def interpolate(model, img1, img2, num_steps=8):
    """
    Inputs:
        model - object of ImageFlow class that represents the (trained) flow model
        img1, img2 - Image tensors of shape [1, 28, 28]. Images between which should be interpolated.
        num_steps - Number of interpolation steps. 8 interpolation steps mean 6 intermediate pictures besides img1 and img2
    """
    imgs = torch.stack([img1, img2], dim=0).to(model.device)
    z, _ = model.encode(imgs)
    alpha = torch.linspace(0, 1, steps=num_steps, device=z.device).view(-1, 1, 1, 1)
    interpolations = z[0:1] * alpha + z[1:2] * (1 - alpha)
    interp_imgs = model.sample(interpolations.shape[:1] + imgs.shape[1:], z_init=interpolations)
    show_imgs(interp_imgs, row_size=8)
    return interp_imgs  # port: kept for the test

exmp_imgs, _ = next(iter(train_loader)) 

torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
for i in range(2):
    interp = interpolate(flow_dict["vardeq"]["model"], exmp_imgs[2*i], exmp_imgs[2*i+1])  # port: kept for the test

torch.manual_seed(42); np.random.seed(42)  # port: pl.seed_everything(42)
for i in range(2):
    ms_interp = interpolate(flow_dict["multiscale"]["model"], exmp_imgs[2*i], exmp_imgs[2*i+1])  # port: kept for the test

torch.manual_seed(44); np.random.seed(44)  # port: pl.seed_everything(44)
for _ in range(3):
    z_init = flow_dict["multiscale"]["model"].prior.sample(sample_shape=[1,8,2,2])  # port: 8x8 images' latent
    z_init = z_init.expand(8, -1, -1, -1)
    samples = flow_dict["multiscale"]["model"].sample(img_shape=z_init.shape, z_init=z_init)
    show_imgs(samples.cpu()) 

def visualize_dequant_distribution(model : ImageFlow, imgs : torch.Tensor, title:str=None):
    """
    Inputs:
        model - The flow of which we want to visualize the dequantization distribution
        imgs - Example training images of which we want to visualize the dequantization distribution 
    """
    imgs = imgs.to(device)
    ldj = torch.zeros(imgs.shape[0], dtype=torch.float32).to(device)
    with torch.no_grad():
        dequant_vals = []
        for _ in tqdm(range(2), leave=False):  # port: 8 draws shrunk
            d, _ = model.flows[0](imgs, ldj, reverse=False)
            dequant_vals.append(d)
        dequant_vals = torch.cat(dequant_vals, dim=0)
    dequant_vals = dequant_vals.view(-1).cpu().numpy()
    # sns.set()  # port: seaborn is not installed
    plt.figure(figsize=(10,3))
    plt.hist(dequant_vals, bins=256, color=to_rgb("C0")+(0.5,), edgecolor="C0", density=True)
    if title is not None:
        plt.title(title)
    plt.show()
    plt.close()
    return dequant_vals  # port: kept for the test
    
sample_imgs, _ = next(iter(train_loader)) 

simple_deq = visualize_dequant_distribution(flow_dict["simple"]["model"], sample_imgs, title="Dequantization")  # port: kept for the test

var_deq = visualize_dequant_distribution(flow_dict["vardeq"]["model"], sample_imgs, title="Variational dequantization")  # port: kept for the test
'''


def images(folder, size: int) -> None:
    """The data sets' stand-in in ``folder``: sklearn's digits in [0, 1], (N, 28, 28) (what
    tutorial4's ``ToTensor`` gives before its ``Normalize``) or (N, 1, 8, 8) (tutorial11's
    ``ToTensor`` before ``discretize``)."""
    from sklearn.datasets import load_digits  # noqa: PLC0415

    from tests.test_torch_tutorials_u import digits28  # noqa: PLC0415

    folder.mkdir()
    if size == 28:
        x, y = digits28()
        n, m = 320, 64
    else:
        d = load_digits()
        x, y, n, m = (d.images / 16.0).astype(np.float32)[:, None], d.target, 128, 32
    np.savez(folder / "images.npz", x_train=x[:n], y_train=y[:n], x_test=x[-m:], y_test=y[-m:])


def both(script: str, size: int, tmp_path):
    """The notebook run under torch, then with ``torch`` replaced by ``tricycle`` in its text,
    each in a folder ``notebooks`` with its data: (printed, globals) of each."""
    results = []
    with pytest.MonkeyPatch.context() as monkeypatch, torch_and_tricycle(monkeypatch, "sklearn", "tqdm", agg=True) as libs:  # fmt: skip
        for name in "PATH_DATASETS", "PATH_CHECKPOINT":
            monkeypatch.delenv(name, raising=False)
        for lib in libs:
            text = script if lib.__name__ == "torch" else script.replace("torch", "tricycle")
            folder = tmp_path / lib.__name__
            (folder / "notebooks").mkdir(parents=True)
            # tutorial4 reads data/ (under $PATH_DATASETS), tutorial11 ../data
            images(folder / ("notebooks/data" if size == 28 else "data"), size)
            results.append(run_main(text, folder / "notebooks", monkeypatch, "notebook.py"))
    return tuple(results)


@pytest.fixture(scope="module")
def tutorial4(tmp_path_factory):
    return both(OPTIMIZATION, 28, tmp_path_factory.mktemp("tutorial4"))


@pytest.fixture(scope="module")
def tutorial11(tmp_path_factory):
    return both(FLOWS, 8, tmp_path_factory.mktemp("tutorial11"))


def named(printed: str) -> list[str]:
    """``kinds`` with tricycle's parameter names as torch's (a Linear's ``weights``)."""
    return kinds(printed.replace(".weights", ".weight"))


def test_optimization_and_initialization(tutorial4):
    (theirs, their), (ours, our) = tutorial4
    # which epochs improve on the best depends on the draws: the rest prints the same
    assert [k for k in named(ours) if "New best" not in k] == [
        k for k in named(theirs) if "New best" not in k
    ]
    for printed, space in (theirs, their), (ours, our):
        # a constant initialisation leaves the hidden layers next to no gradient (one value
        # each, up to rounding), the first and the last diverse ones
        grads = list(space["const_grads"].values())
        assert all(np.abs(g).max() < 1e-6 * np.abs(grads[-1]).max() for g in grads[1:-1])
        assert np.ptp(grads[0]) > 0 and np.ptp(grads[-1]) > 0
        # a small constant variance vanishes over the layers, a large one explodes; the
        # equal-variance, Xavier and Kaiming ones keep it near the input's
        variance = {name: np.var(space[name]["Layer 8"]) for name in ("small_acts", "large_acts", "equal_acts", "relu_acts")}  # fmt: skip
        assert variance["small_acts"] < 1e-3 and variance["large_acts"] > 50, variance
        assert 0.2 < variance["equal_acts"] < 5 and 0.2 < variance["relu_acts"] < 5, variance
        # each optimiser learns the digits (a tenth is chance)
        tests = numbers(r"Test accuracy: ([\d.]+)%", printed)
        assert len(tests) == 3 and min(tests) > 30, tests
        # on the ravine SGD keeps jumping over w1 = 0 while momentum and Adam settle in it
        sgd, momentum, adam = space["curve_points"]
        assert abs(sgd[-10:, 0]).max() > 1 and abs(momentum[-1, 0]) < 0.5 and abs(adam[-1, 0]) < 0.5  # fmt: skip
        # on the steep optima only Adam ends in one (loss near the Gaussians' -4)
        assert space["steep_points"][2][-1, 2] < -3 < space["steep_points"][0][-1, 2]
    # the surfaces and each optimiser's walk over them are torch's: Adam's whole walks, the
    # first steps of the others (their jumps across the ravine at lr = 10 grow float32's
    # rounding after a dozen steps)
    np.testing.assert_allclose(our["surface"], their["surface"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(our["steep_surface"], their["steep_surface"], rtol=1e-5, atol=1e-6)
    for name in "curve_points", "steep_points":
        for got, want, steps in zip(our[name], their[name], (15, 15, 100), strict=True):
            np.testing.assert_allclose(
                got[:steps], want[:steps], rtol=1e-4, atol=1e-5, err_msg=name
            )


def test_initialization_with_torchs_weights(tutorial4):
    """torch's Kaiming-initialised ReLU network in the tutorial's tricycle ``BaseNetwork``:
    torch's activations layer by layer and the cross-entropy's weight gradients, what
    ``visualize_activations`` and ``visualize_gradients`` draw."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their), (_, our) = tutorial4
    theirs = their["base_model"]
    ours = our["BaseNetwork"](act_fn=our["nn"].ReLU(), hidden_sizes=[128, 64, 64, 32])
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    imgs, labels = (t[:64] for t in their["train_set"][:])
    for lib, model, x in (torch, theirs, torch.tensor(imgs.numpy())), (tricycle, ours, tricycle.tensor(imgs.numpy())):  # fmt: skip
        model.zero_grad()
        lib.nn.functional.cross_entropy(model(x), lib.tensor(labels.numpy())).backward()
    np.testing.assert_allclose(
        ours(tricycle.tensor(imgs.numpy())).numpy(),
        theirs(imgs).detach().numpy(),
        rtol=1e-4,
        atol=1e-5,
    )
    grads = torch_layout_grads(ours)
    for name, p in theirs.named_parameters():
        np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-7, err_msg=name)


def test_hand_written_optimizers_are_tricycles(tutorial4):
    """The tutorial's ``SGD`` is ``optim.SGD`` and its ``Adam`` ``optim.Adam``: the same walk
    on the ravine. (Its ``SGDMomentum``, ``m = (1 - beta) g + beta m`` from ``m = 0``, is no
    setting of ``optim.SGD``, whose first step takes the gradient undamped.)"""
    import tricycle  # noqa: PLC0415

    (_, _), (_, our) = tutorial4
    pairs = [
        (lambda ps: our["SGD"](ps, lr=10), lambda ps: tricycle.optim.SGD(ps, lr=10)),
        (lambda ps: our["Adam"](ps, lr=1), lambda ps: tricycle.optim.Adam(ps, lr=1)),
    ]
    for hand_written, library in pairs:
        got = our["train_curve"](hand_written, num_updates=30)
        want = our["train_curve"](library, num_updates=30)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_normalizing_flows(tutorial11):
    (theirs, their), (ours, our) = tutorial11
    assert named(ours) == named(theirs)
    assert "Successfully inverted dequantization" in ours
    for name in "forward_img", "reconst_img", "checkerboard_mask", "channel_mask":
        np.testing.assert_array_equal(np.asarray(our[name].numpy()), their[name].numpy())
    # the dequantization volumes of 8 values over z in [-4, 4) are torch's
    np.testing.assert_array_equal(our["deq_values"], their["deq_values"])
    np.testing.assert_allclose(our["deq_probs"], their["deq_probs"], rtol=1e-4, atol=1e-7)
    for printed, space in (theirs, their), (ours, our):
        # each flow's bits per dimension fall; the multi-scale flow ends lowest
        val = numbers(r"val_bpd ([\d.]+)", printed)
        assert all(later < first - 1 for first, later in zip(val[::2], val[1::2])), val
        bpd = dict(zip(("simple", "vardeq", "multiscale"), numbers(r"\w+ [\d.]+ bpd ([\d.]+) bpd", printed)))  # fmt: skip
        assert bpd["multiscale"] < bpd["simple"], bpd
        # samples and interpolations are images of int32 values in [0, 255]; the dequantized
        # values of the training images lie in (0, 1)
        for name in "samples", "ms_samples", "interp", "ms_interp":
            values = np.asarray(space[name].numpy())
            assert values.dtype == np.int32 and values.min() >= 0 and values.max() <= 255, name
        assert space["ms_samples"].shape == (16, 1, 8, 8) and space["interp"].shape == (8, 1, 8, 8)
        assert np.isfinite(space["simple_deq"]).all() and space["var_deq"].shape == (2 * 32 * 64,)
        assert "flows.1.mask" in space["flow_dict"]["multiscale"]["model"].state_dict()


def test_flows_with_torchs_weights(tutorial11):
    """The trained torch flows' weights (masks included) in the tutorial's tricycle flows: from
    one dequantized input, torch's latents, log-determinants, bits per dimension and parameter
    gradients through the couplings, squeezes and split of the multi-scale flow; the
    variational dequantization's couplings conditioned on the image; and the simple flow's
    couplings inverted back to their input."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415
    import tricycle.nn as nn  # noqa: PLC0415

    (_, their), (_, our) = tutorial11
    rng = np.random.default_rng(0)
    imgs = their["exmp_imgs"][:6].numpy()  # (6, 1, 8, 8) int32
    z0 = rng.normal(size=imgs.shape).astype(np.float32)  # after the dequantization's sigmoid
    for key in "simple", "vardeq", "multiscale":
        theirs, ours = their["flow_dict"][key]["model"], our["flow_dict"][key]["model"]
        assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
        theirs.zero_grad()
        ours.zero_grad()
        results = []
        for lib, model in (torch, theirs), (tricycle, ours):
            z, ldj = lib.tensor(z0), lib.zeros(len(z0))
            for flow in model.flows[1:]:
                z, ldj = flow(z, ldj, reverse=False)
            bpd = -(ldj + model.prior.log_prob(z).sum(dim=[1, 2, 3])).mean() / 64
            bpd.backward()
            results.append((z.detach().numpy(), ldj.detach().numpy(), bpd.item()))
        for got, want in zip(results[1], results[0], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=key)
        for p in ours.flows[0].parameters():  # the dequantization is not in this path
            p.grad = tricycle.zeros_like(p)
        grads = torch_layout_grads(ours)
        for name, p in theirs.named_parameters():
            if "flows.0." in name:  # the dequantization is not in this path
                continue
            np.testing.assert_allclose(grads[name], p.grad.numpy(), rtol=1e-3, atol=1e-6, err_msg=f"{key} {name}")  # fmt: skip
    # the variational dequantization's couplings, conditioned on the image
    theirs, ours = their["flow_dict"]["vardeq"]["model"].flows[0], our["flow_dict"]["vardeq"]["model"].flows[0]  # fmt: skip
    out = []
    for lib, deq in (torch, theirs), (tricycle, ours):
        noise, ldj = lib.tensor(z0), lib.zeros(len(z0))
        img = (lib.tensor(imgs).to(lib.float32) / 255.0) * 2 - 1
        for flow in deq.flows:
            noise, ldj = flow(noise, ldj, reverse=False, orig_img=img)
        out.append((noise.detach().numpy(), ldj.detach().numpy()))
    for got, want in zip(out[1], out[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    # the simple flow's couplings, inverted, give their input back
    model = our["flow_dict"]["simple"]["model"]
    z, ldj = tricycle.tensor(z0), tricycle.zeros(len(z0))
    with tricycle.no_grad():
        for flow in model.flows[1:]:
            z, ldj = flow(z, ldj, reverse=False)
        for flow in reversed(model.flows[1:]):
            z, ldj = flow(z, ldj, reverse=True)
    np.testing.assert_allclose(z.numpy(), z0, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ldj.numpy(), 0, atol=1e-3)


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.8, 0.99)])
def test_adam_steps_as_torchs(betas):
    """``optim.Adam``'s CPU kernel takes 1 - beta1 and 1 - beta2 as torch does, from the
    float64 betas: Adam's steps of lr = 1 (tutorial4's ravine) are torch's to float32's
    rounding, not off by 1 - float32(0.999)'s error (about 1e-5 of the first steps)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    rng = np.random.default_rng(0)
    w0, grads = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(5, 4, 3)) * 1e-2
    walks = []
    for lib in torch, tricycle:
        w = lib.nn.Parameter(lib.tensor(w0))
        optimizer = lib.optim.Adam([w], lr=1.0, betas=betas)
        for g in grads:
            optimizer.zero_grad()
            (w * lib.tensor(g.astype(np.float32))).sum().backward()
            optimizer.step()
        walks.append(np.asarray(w.detach().numpy()))
    np.testing.assert_allclose(walks[1], walks[0], rtol=1e-6, atol=1e-6)
