"""The ops as functions, named as PyTorch's ``torch.nn.functional`` names them
(``import tricycle.nn.functional as F``): ``F.softmax(x)`` is ``Softmax()(x)``, and so on
(``import tricycle as tc`` gives the activations too: ``tc.relu``). Losses take PyTorch's
order, ``F.cross_entropy(logits, labels)``; the re-exported ops keep tricycle's arguments,
which follow PyTorch's where the names match (``conv2d``'s weights are (C_out, C_in, kh, kw)).
What a PyTorch model calls takes torch's arguments: ``F.linear`` torch's (out, in) weight
(how a head tied to an embedding reads its table), ``F.layer_norm`` a ``normalized_shape``,
``F.softmax`` and ``F.log_softmax`` a ``dim``, and ``F.scaled_dot_product_attention`` torch's
keywords ``attn_mask``, ``dropout_p`` and ``is_causal`` beside its own.
"""

import math

from tricycle import checks, norms
from tricycle.activation import GeLU, LeakyReLU, ReLU, Swish
from tricycle.einsum import einsum
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
from tricycle.nn.softmaxes import along
from tricycle.tensor import Tensor, as_tensor
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
    "layer_norm",
    "leaky_relu",
    "linear",
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


def softmax(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """Softmax along ``dim`` (in ``dtype``, if given): over the last axis the fused
    ``tricycle.functions.Softmax``, over another ``Tensor.softmax``."""
    return along("F.softmax", Softmax, x, dim, dtype)


def log_softmax(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """Log-softmax along ``dim`` (in ``dtype``, if given), computed stably: over the last axis
    the fused ``tricycle.functions.LogSoftmax``, over another ``Tensor.log_softmax``."""
    return along("F.log_softmax", LogSoftmax, x, dim, dtype)


def linear(input: Tensor, weight: Tensor, bias=None) -> Tensor:  # noqa: A002 - torch's name
    """``input @ weight.T + bias`` with torch's layout, ``weight`` (out, in): (..., in) ->
    (..., out), one einsum (``nn.Linear`` holds the transpose, (in, out)). A head tied to an
    embedding table (V, E) is ``F.linear(x, embedding.weights)``."""
    x, weight = as_tensor(input), as_tensor(weight)
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"F.linear: expected weight (out, in) and input (..., in), got weight "
                         f"{weight.shape} and input {x.shape}")  # fmt: skip
    out = einsum("...i,ji->...j", x, weight)  # (..., out)
    return out if bias is None else out + bias


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Layer normalisation over the last ``len(normalized_shape)`` axes of ``input``, scaled by
    ``weight`` and shifted by ``bias`` (each of ``normalized_shape``, or None), as torch's:
    those axes merged into one for the fused ``tricycle.norms.layer_norm``."""
    x = as_tensor(input)
    shape = (normalized_shape,) if checks.is_integer(normalized_shape) else normalized_shape
    shape = tuple(shape)
    if not shape or x.shape[x.ndim - len(shape) :] != shape or len(shape) > x.ndim:
        raise ValueError(f"F.layer_norm: normalized_shape {shape} must be the last axes of the "
                         f"input's shape {x.shape}")  # fmt: skip
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and tuple(value.shape) != shape:
            checks.fail("F.layer_norm", f"{name}'s shape", f"normalized_shape {shape}",
                        tuple(value.shape))  # fmt: skip
    width = math.prod(shape)
    flat = x.reshape(*x.shape[: x.ndim - len(shape)], width)  # (..., C)
    gamma = flat.new_ones(width) if weight is None else as_tensor(weight).reshape(width)
    beta = None if bias is None else as_tensor(bias).reshape(width)
    return norms.layer_norm(flat, gamma, beta, eps).reshape(x.shape)


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


def cross_entropy(logits: Tensor, labels, ignore_index: int | None = -100) -> Tensor:
    """Mean cross-entropy of ``logits`` (..., C) and class ids ``labels`` (...), in
    PyTorch's order (``tricycle.loss.CrossEntropy`` takes ``(target, input)``); a label
    ``ignore_index`` (torch's -100 by default; None ignores nothing) adds no loss."""
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


def softmin(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """softmax(-x) along ``dim`` (in ``dtype``, if given): ``tricycle.nn.softmaxes.Softmin``."""
    x = as_tensor(x)
    return along("F.softmin", Softmax, -(x if dtype is None else x.to(dtype)), dim)
