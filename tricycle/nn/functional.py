"""The ops as functions, named as PyTorch's ``torch.nn.functional`` names them
(``import tricycle.nn.functional as F``): ``F.softmax(x)`` is ``Softmax()(x)``, and so on
(``import tricycle as tc`` gives the activations too: ``tc.relu``). Losses take PyTorch's
order, ``F.cross_entropy(logits, labels)``; the re-exported ops keep tricycle's arguments,
which follow PyTorch's where the names match (``conv2d``'s weights are (C_out, C_in, kh, kw)).
"""

from tricycle.activation import GeLU, LeakyReLU, ReLU, Swish
from tricycle.functions import LogSoftmax, Softmax
from tricycle.layers import dropout, embedding
from tricycle.loss import CrossEntropy, MeanSquaredError
from tricycle.nn.conv import conv
from tricycle.nn.padding import pad  # noqa: F401 - F.pad, as PyTorch
from tricycle.nn.pooling import avg_pool, in_n_dims, max_pool
from tricycle.nn.sdpa import scaled_dot_product_attention
from tricycle.tensor import Tensor
from tricycle.unary import sigmoid, tanh

conv1d = conv2d = conv  # the spatial dimensions come from the weights' shape
max_pool1d, max_pool2d = in_n_dims(max_pool, 1), in_n_dims(max_pool, 2)  # (N, C, ...) or (C, ...)
avg_pool1d, avg_pool2d = in_n_dims(avg_pool, 1), in_n_dims(avg_pool, 2)

__all__ = [
    "avg_pool1d",
    "avg_pool2d",
    "conv1d",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "leaky_relu",
    "log_softmax",
    "max_pool1d",
    "max_pool2d",
    "mse_loss",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "silu",
    "softmax",
    "tanh",
]


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


def cross_entropy(logits: Tensor, labels, ignore_index: int | None = None) -> Tensor:
    """Mean cross-entropy of ``logits`` (..., C) and class ids ``labels`` (...), in
    PyTorch's order (``tricycle.loss.CrossEntropy`` takes ``(target, input)``)."""
    return CrossEntropy(ignore_index)(labels, logits)


def mse_loss(prediction: Tensor, target) -> Tensor:
    """Mean squared error, in PyTorch's order (``tricycle.loss.MeanSquaredError``)."""
    return MeanSquaredError()(target, prediction)
