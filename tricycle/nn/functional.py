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
from tricycle.nn.activations import (
    CELU,
    ELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    ReLU6,
    Softmin,
    Softplus,
    Softsign,
    Tanhshrink,
    Threshold,
    prelu,
)
from tricycle.nn.conv import conv
from tricycle.nn.more_losses import (
    BCELoss,
    CosineEmbeddingLoss,
    MarginRankingLoss,
    cosine_similarity,
    normalize,
    pairwise_distance,
)
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
    "binary_cross_entropy",
    "celu",
    "conv1d",
    "conv2d",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "elu",
    "embedding",
    "gelu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "leaky_relu",
    "log_softmax",
    "logsigmoid",
    "margin_ranking_loss",
    "max_pool1d",
    "max_pool2d",
    "mish",
    "mse_loss",
    "normalize",
    "pairwise_distance",
    "prelu",
    "relu",
    "relu6",
    "scaled_dot_product_attention",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
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


def binary_cross_entropy(input: Tensor, target, weight=None, *, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Binary cross-entropy of probabilities in [0, 1], logs clamped at -100
    (``tricycle.nn.more_losses.BCELoss``)."""
    return BCELoss(weight, reduction=reduction)(input, target)


def margin_ranking_loss(
    input1: Tensor, input2, target, margin: float = 0.0, *, reduction: str = "mean"
) -> Tensor:
    """max(0, -y (x1 - x2) + margin), reduced (``tricycle.nn.more_losses.MarginRankingLoss``)."""
    return MarginRankingLoss(margin, reduction=reduction)(input1, input2, target)


def cosine_embedding_loss(
    input1: Tensor, input2, target, margin: float = 0.0, *, reduction: str = "mean"
) -> Tensor:
    """1 - cos for labels 1, max(0, cos - margin) for labels -1, reduced
    (``tricycle.nn.more_losses.CosineEmbeddingLoss``)."""
    return CosineEmbeddingLoss(margin, reduction=reduction)(input1, input2, target)


# ---------------------------------------------------------------------- activations
def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha (e^x - 1) (``tricycle.nn.activations.ELU``)."""
    return ELU(alpha, inplace)(x)


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """ELU with the self-normalising alpha and scale (``tricycle.nn.activations.SELU``)."""
    return SELU(inplace)(x)


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha (e^(x / alpha) - 1) (``tricycle.nn.activations.CELU``)."""
    return CELU(alpha, inplace)(x)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + e^(beta x)) / beta, x where beta x > threshold (``...activations.Softplus``)."""
    return Softplus(beta, threshold)(x)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x tanh(softplus(x)) (``tricycle.nn.activations.Mish``)."""
    return Mish(inplace)(x)


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """x clamped into [min_val, max_val] (``tricycle.nn.activations.Hardtanh``)."""
    return Hardtanh(min_val, max_val, inplace)(x)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6) (``tricycle.nn.activations.ReLU6``)."""
    return ReLU6(inplace)(x)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1) (``tricycle.nn.activations.Hardsigmoid``)."""
    return Hardsigmoid(inplace)(x)


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x hardsigmoid(x) (``tricycle.nn.activations.Hardswish``)."""
    return Hardswish(inplace)(x)


def softsign(x: Tensor) -> Tensor:
    """x / (1 + |x|) (``tricycle.nn.activations.Softsign``)."""
    return Softsign()(x)


def logsigmoid(x: Tensor) -> Tensor:
    """log sigmoid(x), stable for any x (``tricycle.nn.activations.LogSigmoid``)."""
    return LogSigmoid()(x)


def tanhshrink(x: Tensor) -> Tensor:
    """x - tanh(x) (``tricycle.nn.activations.Tanhshrink``)."""
    return Tanhshrink()(x)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """x where x > threshold, else value (``tricycle.nn.activations.Threshold``)."""
    return Threshold(threshold, value, inplace)(x)


def softmin(x: Tensor) -> Tensor:
    """softmax(-x) over the last axis (``tricycle.nn.activations.Softmin``)."""
    return Softmin()(x)
