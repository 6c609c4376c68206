"""The fused ops as functions, named as PyTorch's ``torch.nn.functional`` names them:
``tricycle.softmax(x)`` is ``Softmax()(x)``, and so on (``import tricycle as tc`` gives them)."""

from tricycle.activation import GeLU, LeakyReLU, ReLU, Swish
from tricycle.functions import LogSoftmax, Softmax
from tricycle.tensor import Tensor


def softmax(x: Tensor) -> Tensor:
    """Softmax over the last axis (the fused ``tricycle.functions.Softmax``)."""
    return Softmax()(x)


def log_softmax(x: Tensor) -> Tensor:
    """Log-softmax over the last axis, computed stably (``tricycle.functions.LogSoftmax``)."""
    return LogSoftmax()(x)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), elementwise (``tricycle.activation.ReLU``)."""
    return ReLU()(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01) -> Tensor:
    """x where x > 0, else ``negative_slope * x`` (``tricycle.activation.LeakyReLU``)."""
    return LeakyReLU(negative_slope)(x)


def gelu(x: Tensor, approximate=False) -> Tensor:
    """x * Phi(x), exact unless ``approximate`` ("tanh"): ``tricycle.activation.GeLU``."""
    return GeLU(approximate)(x)


def silu(x: Tensor) -> Tensor:
    """x * sigmoid(x), also called Swish (``tricycle.activation.Swish``)."""
    return Swish()(x)
