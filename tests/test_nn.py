"""``tricycle.nn``: PyTorch's names for the layer catalogue, checked against PyTorch itself.

MyTorch's README builds its MNIST model as ``class MyTorchMNIST(nn.Module)`` with
``nn.Linear``, ``nn.Dropout`` and ``nn.ReLU`` (its second layer's 512 inputs are a typo for
256); a second model adds what an MNIST CNN needs (Conv2d, BatchNorm2d, MaxPool2d, Flatten,
GELU). Each is written once with ``tricycle.nn`` names, given PyTorch's weights, and its
forward, loss and every gradient compared with torch's.
"""

import pickle
import sys

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle.tensor import to_tensor


class MyTorchMNIST(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.drop1 = nn.Dropout(0.1)
        self.fc2 = nn.Linear(256, 10)
        self.activation = nn.ReLU()

    def forward(self, x):
        x = self.drop1(self.activation(self.fc1(x)))
        return self.fc2(x)


def small_cnn(nn):
    """The same CNN in either library: ``nn`` is ``tricycle.nn`` or ``torch.nn``."""
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 8, 3, stride=2),
        nn.GELU(),
        nn.Flatten(),
        nn.Linear(8 * 3 * 3, 10),
    )


def torch_or_skip():
    return pytest.importorskip("torch")


def copy_weights(ours, theirs):
    """PyTorch's parameters into ours, in order: Linear's weights are transposed."""
    params = [p for p in theirs.parameters()]
    mine = ours.parameters()
    assert len(mine) == len(params)
    for mine_p, their_p in zip(mine, params):
        value = their_p.detach().numpy()
        value = value.T if value.ndim == 2 else value  # Linear: (out, in) -> (in, out)
        assert mine_p.shape == value.shape
        mine_p.array[...] = value
    return list(zip(mine, params))


def compare(ours, theirs, x, labels):
    torch = torch_or_skip()
    pairs = copy_weights(ours, theirs)
    logits = ours(to_tensor(x))
    loss = nn.CrossEntropyLoss()(logits, labels)
    loss.backward()
    t_logits = theirs(torch.from_numpy(x))
    t_loss = torch.nn.CrossEntropyLoss()(t_logits, torch.from_numpy(labels))
    t_loss.backward()
    np.testing.assert_allclose(logits.array, t_logits.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(float(loss.array), t_loss.item(), rtol=1e-5)
    for mine, their in pairs:
        grad = their.grad.numpy()
        grad = grad.T if grad.ndim == 2 else grad
        np.testing.assert_allclose(mine.grad.array, grad, rtol=1e-3, atol=1e-5)


def test_mytorch_readme_mnist_model_matches_torch():
    torch = torch_or_skip()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 5)
    model = MyTorchMNIST().eval()  # dropout off: the two libraries draw different masks
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)
    )
    compare(model, theirs, x, labels)
    assert [name for name, _ in model.named_parameters()] == [
        "fc1.weights", "fc1.bias", "fc2.weights", "fc2.bias",
    ]  # fmt: skip
    assert "Dropout" in repr(model) and model.num_parameters() == 784 * 256 + 256 + 2570


def test_mnist_cnn_trains_as_torch_does():
    torch = torch_or_skip()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 1, 14, 14)).astype(np.float32)
    labels = rng.integers(0, 10, 3)
    torch.manual_seed(1)
    compare(small_cnn(nn), small_cnn(torch.nn), x, labels)  # train mode: batch statistics


def test_functional_matches_torch():
    torch = torch_or_skip()
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 7)).astype(np.float32)
    labels = rng.integers(0, 7, 4)
    t = torch.from_numpy(x)
    for ours, theirs in [
        (F.relu, torch.nn.functional.relu),
        (F.gelu, torch.nn.functional.gelu),
        (F.softmax, lambda v: torch.softmax(v, -1)),
        (F.log_softmax, lambda v: torch.log_softmax(v, -1)),
        (F.sigmoid, torch.sigmoid),
        (F.tanh, torch.tanh),
    ]:
        np.testing.assert_allclose(ours(to_tensor(x)).array, theirs(t).numpy(), atol=1e-6)
    loss = F.cross_entropy(to_tensor(x), labels)
    their = torch.nn.functional.cross_entropy(t, torch.from_numpy(labels))
    np.testing.assert_allclose(float(loss.array), their.item(), rtol=1e-6)
    labels[1] = -100  # torch's default ignore_index: no loss from that row
    loss = F.cross_entropy(to_tensor(x), labels)
    their = torch.nn.functional.cross_entropy(t, torch.from_numpy(labels))
    np.testing.assert_allclose(float(loss.array), their.item(), rtol=1e-6)
    y = rng.standard_normal((4, 7)).astype(np.float32)
    np.testing.assert_allclose(
        float(F.mse_loss(to_tensor(x), y).array),
        torch.nn.functional.mse_loss(t, torch.from_numpy(y)).item(), rtol=1e-6,
    )  # fmt: skip


def test_pytorch_names_are_the_seed_layers():
    from tricycle.activation import GeLU
    from tricycle.layers import Dense, Layer

    assert nn.Module is Layer and nn.Linear is Dense and nn.GELU is GeLU
    assert nn.Linear(2, 2).weights.shape == (2, 2)


def test_old_module_names_import_the_moved_modules():
    from tricycle.conv import Conv2d  # the import of the README before tricycle.nn
    from tricycle.recurrent import LSTM

    assert Conv2d is nn.Conv2d and LSTM is nn.LSTM
    assert sys.modules["tricycle.conv"] is sys.modules["tricycle.nn.conv"]
    assert sys.modules["tricycle.nn.conv"].__spec__.name == "tricycle.nn.conv"
    layer = pickle.loads(pickle.dumps(nn.Conv2d(1, 2, 3)))  # one class, whichever name
    assert type(layer) is Conv2d
    with pytest.raises(ModuleNotFoundError):
        import tricycle.no_such_module  # noqa: F401


@pytest.mark.parametrize(
    "name", ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCEWithLogitsLoss",
             "NLLLoss", "KLDivLoss", "CrossEntropyLoss"],
)  # fmt: skip
def test_losses_take_pytorchs_order_and_give_its_values(name):
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    prediction = rng.standard_normal((4, 5))
    target = rng.standard_normal((4, 5))
    if name in ("NLLLoss", "CrossEntropyLoss"):
        target = rng.integers(0, 5, 4)
    if name in ("NLLLoss", "KLDivLoss"):  # log-probabilities in
        prediction = prediction - np.log(np.exp(prediction).sum(-1, keepdims=True))
    if name == "KLDivLoss":  # probabilities as the target
        target = np.exp(target) / np.exp(target).sum(-1, keepdims=True)
    if name == "BCEWithLogitsLoss":
        target = (target > 0).astype(np.float64)
    ours = getattr(nn, name)()(to_tensor(prediction, requires_grad=True), target)
    theirs = getattr(torch.nn, name)()(torch.from_numpy(prediction), torch.from_numpy(target))
    np.testing.assert_allclose(float(ours.array), theirs.item(), rtol=1e-5)


def test_torch_positional_arguments_that_mean_something_else_here_are_refused():
    """Where PyTorch's positional order differs from the layer's own, a torch-style call is
    an error instead of a silently different layer (a loss's first is its weight,
    F.embedding's third its padding_idx); where tricycle takes torch's order, the call means
    torch's (LayerNorm's third is elementwise_affine, AvgPool's fourth its ceil_mode)."""
    x = to_tensor(np.ones((1, 2, 4, 4), dtype=np.float32))
    no_affine = nn.LayerNorm(8, 1e-5, False)  # torch's elementwise_affine
    assert no_affine.gamma is None and no_affine.beta is None
    assert nn.LayerNorm(8, 1e-5, bias=False).beta is None
    assert nn.AvgPool2d(3, 2, 1, True)(x).shape == (1, 2, 3, 3)  # torch's ceil_mode
    assert nn.functional.avg_pool2d(x, 2, 2, 0, True).shape == (1, 2, 2, 2)
    assert nn.Upsample(6)(x).shape == (1, 2, 6, 6)  # torch's first argument: the size
    assert nn.Upsample(scale_factor=2)(x).shape == (1, 2, 8, 8)
    with pytest.raises(TypeError):
        nn.BCEWithLogitsLoss(np.array([2.0]))
    assert nn.BCEWithLogitsLoss(pos_weight=[2.0])(to_tensor([0.5]), np.array([1.0])).array > 0
    weights = to_tensor(np.ones((4, 3), dtype=np.float32))
    assert nn.functional.embedding(np.array([1]), weights, 0).shape == (1, 3)  # padding_idx
    assert nn.functional.dropout(x, 0.5, False) is x  # torch's third argument: training
