"""The ops as functions, named as PyTorch's ``torch.nn.functional`` names them
(``import tricycle.nn.functional as F``): ``F.softmax(x)`` is ``Softmax()(x)``, and so on
(``import tricycle as tc`` gives the activations too: ``tc.relu``). The re-exported ops keep
tricycle's arguments, which follow PyTorch's where the names match (``conv2d``'s weights are
(C_out, C_in, kh, kw)).

What a PyTorch script calls takes torch's arguments, with torch's meaning: ``F.linear`` torch's
(out, in) weight (how a head tied to an embedding reads its table); ``F.softmax`` and
``F.log_softmax`` a ``dim``; ``F.dropout`` (and the channel-wise ``F.dropout1d``/``2d``/``3d``,
``tricycle.nn.channel_dropout``) ``p``, ``training`` and ``inplace`` (beside tricycle's
``probability=`` and ``rng=``); ``F.gelu`` ``approximate="none"``/``"tanh"``; ``F.glu`` a ``dim``;
``F.one_hot`` and ``F.interpolate`` (every mode, in ``tricycle.nn.interpolate``) torch's whole
signatures; ``F.scaled_dot_product_attention`` torch's keywords ``attn_mask``, ``dropout_p`` and
``is_causal`` beside its own. The losses, in torch's order (input, target) with torch's arguments
(``F.cross_entropy``'s class axis 1, ``weight``, ``ignore_index``, ``reduction`` and
``label_smoothing``, ...), are ``tricycle.nn.functional_losses``'; the normalisations
(``F.layer_norm``, ``F.group_norm``, ``F.batch_norm``, ``F.instance_norm``)
``tricycle.nn.functional_norms``'.
"""

import functools

import numpy as np

from tricycle import backend, checks, dispatch, ops, random, ranges, rebase
from tricycle.activation import GeLU, LeakyReLU, ReLU, Swish
from tricycle.complex_functions import einsum  # complex operands to complex_math's
from tricycle.functions import LogSoftmax, Softmax
from tricycle.layers import dropout as dropout_op
from tricycle.nn import functional_losses
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
from tricycle.nn.adaptive_max_pooling import adaptive_max_pool1d, adaptive_max_pool2d
from tricycle.nn.adaptive_pooling import adaptive_avg_pool
from tricycle.nn.alpha_dropout import alpha_dropout, feature_alpha_dropout
from tricycle.nn.bilinear import bilinear
from tricycle.nn.channel_dropout import dropout1d, dropout2d, dropout3d
from tricycle.nn.ctc import ctc_loss
from tricycle.nn.distance_loss import triplet_margin_with_distance_loss
from tricycle.nn.embedding_bag import embedding_bag
from tricycle.nn.fold import fold, unfold
from tricycle.nn.fractional_pooling import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from tricycle.nn.functional_losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from tricycle.nn.functional_more import (
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d_with_indices,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    max_pool1d_with_indices,
    max_pool2d_with_indices,
    max_pool3d_with_indices,
    pdist,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)
from tricycle.nn.functional_norms import batch_norm, group_norm, instance_norm, layer_norm
from tricycle.nn.functional_rest import (
    conv_tbc,
    embedding,
    linear_cross_entropy,
    multi_head_attention_forward,
    native_channel_shuffle,
    rrelu_,
)
from tricycle.nn.grid_sample import affine_grid, grid_sample
from tricycle.nn.interpolate import interpolate
from tricycle.nn.layers3d import adaptive_avg_pool3d, adaptive_max_pool3d, max_unpool3d
from tricycle.nn.likelihood_losses import gaussian_nll_loss, poisson_nll_loss
from tricycle.nn.lp_pooling import lp_pool1d, lp_pool2d, lp_pool3d
from tricycle.nn.margin_losses import (
    hinge_embedding_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from tricycle.nn.more_losses import cosine_similarity, normalize, pairwise_distance
from tricycle.nn.norms_more import channel_shuffle, local_response_norm, rms_norm
from tricycle.nn.padding import pad  # noqa: F401 - F.pad, as PyTorch
from tricycle.nn.pooling import avg_pool, in_n_dims, max_pool
from tricycle.nn.pooling3d import avg_pool3d, max_pool3d
from tricycle.nn.reshapes import pixel_shuffle, pixel_unshuffle
from tricycle.nn.sdpa import scaled_dot_product_attention
from tricycle.nn.shrinks import gumbel_softmax, hardshrink, rrelu, softshrink
from tricycle.nn.softmaxes import along
from tricycle.nn.unpooling import max_unpool1d, max_unpool2d
from tricycle.tensor import Tensor, as_tensor
from tricycle.unary import sigmoid, tanh

max_pool1d, max_pool2d = in_n_dims(max_pool, 1), in_n_dims(max_pool, 2)  # (N, C, ...) or (C, ...)
avg_pool1d, avg_pool2d = in_n_dims(avg_pool, 1), in_n_dims(avg_pool, 2)

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "affine_grid", "alpha_dropout",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "batch_norm", "bilinear", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "celu", "celu_", "channel_shuffle", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cosine_embedding_loss",
    "cosine_similarity", "cross_entropy", "ctc_loss", "dropout", "dropout1d", "dropout2d",
    "dropout3d", "elu", "elu_", "embedding", "embedding_bag", "feature_alpha_dropout", "fold",
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "gaussian_nll_loss", "gelu", "glu", "grid_sample", "group_norm", "gumbel_softmax",
    "hardshrink", "hardsigmoid", "hardswish", "hardtanh", "hardtanh_", "hinge_embedding_loss",
    "huber_loss", "instance_norm", "interpolate", "kl_div", "l1_loss", "layer_norm", "leaky_relu",
    "leaky_relu_", "linear", "local_response_norm", "log_softmax", "logsigmoid", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "margin_ranking_loss", "max_pool1d", "max_pool1d_with_indices",
    "max_pool2d", "max_pool2d_with_indices", "max_pool3d", "max_pool3d_with_indices",
    "max_unpool1d", "max_unpool2d", "max_unpool3d", "mish", "mse_loss", "multi_margin_loss",
    "multilabel_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "normalize", "one_hot",
    "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "poisson_nll_loss", "prelu",
    "relu", "relu6", "relu_", "rms_norm", "rrelu", "scaled_dot_product_attention", "selu", "selu_",
    "sigmoid", "silu", "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin", "softplus",
    "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "unfold", "upsample",
    "upsample_bilinear", "upsample_nearest", "conv_tbc", "linear_cross_entropy",
    "multi_head_attention_forward", "native_channel_shuffle", "rrelu_",
]  # fmt: skip


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002 - torch's name
    """Adaptive average pooling of (N, C, L) or (C, L) (``nn.AdaptiveAvgPool1d``'s op)."""
    return adaptive_avg_pool(as_tensor(input), output_size, 1)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002 - torch's name
    """Adaptive average pooling of (N, C, H, W) or (C, H, W) (``nn.AdaptiveAvgPool2d``'s op)."""
    return adaptive_avg_pool(as_tensor(input), output_size, 2)


def dropout(
    input: Tensor,  # noqa: A002 - torch's names
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    probability: float | None = None,
    rng: np.random.Generator | None = None,
) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) while
    ``training``; the input itself otherwise (and for p = 0), zeros for p = 1, as torch's
    (``tricycle.layers.dropout``'s op). ``probability=`` is tricycle's name for p. The mask
    comes from ``rng`` (a numpy Generator), by default one seeded from tricycle's generator,
    so that ``tricycle.manual_seed`` reproduces it. ``inplace``: the result written into the
    input, which is returned, as torch's (``rebase.written_if``)."""
    op = "F.dropout"
    if probability is not None:
        if p != 0.5:
            raise TypeError(f"{op}: got p={p!r} and probability={probability!r}; give one")
        p = probability
    checks.real(op, "p", p, 0, 1)
    checks.boolean(op, "training", training)
    checks.boolean(op, "inplace", inplace)
    x = as_tensor(input)
    if not training or p == 0:
        return x
    if p == 1:  # every element dropped: zeros, with a zero gradient
        return rebase.written_if(inplace, x, op, lambda v: v * 0.0)
    rng = rng or np.random.default_rng(random.draw_seed())
    return rebase.written_if(inplace, x, op, lambda v: dropout_op(v, p, rng=rng))


def _handler(*values):
    """The ``__tricycle_function__`` of the first of ``values`` whose type has one, else
    None: torch's ``__torch_function__``, by which a DTensor runs the function over its mesh
    (``tricycle.parallel.dtensor``). Asked only of arguments that are not Tensors."""
    for value in values:
        run = getattr(type(value), "__tricycle_function__", None)
        if run is not None:
            return run
    return None


def softmax(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """Softmax along ``dim`` (in ``dtype``, if given): over the last axis the fused
    ``tricycle.functions.Softmax``, over another ``Tensor.softmax``."""
    if not isinstance(x, Tensor) and (run := _handler(x)):
        return run(softmax, (x, dim, dtype), {})
    return along("F.softmax", Softmax, x, dim, dtype)


def log_softmax(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """Log-softmax along ``dim`` (in ``dtype``, if given), computed stably: over the last axis
    the fused ``tricycle.functions.LogSoftmax``, over another ``Tensor.log_softmax``."""
    if not isinstance(x, Tensor) and (run := _handler(x)):
        return run(log_softmax, (x, dim, dtype), {})
    return along("F.log_softmax", LogSoftmax, x, dim, dtype)


def linear(input: Tensor, weight: Tensor, bias=None) -> Tensor:  # noqa: A002 - torch's name
    """``input @ weight.T + bias`` with torch's layout, ``weight`` (out, in): (..., in) ->
    (..., out), one einsum (``nn.Linear`` holds the transpose, (in, out)). A head tied to an
    embedding table (V, E) is ``F.linear(x, embedding.weights)``. Complex operands as
    torch's (``tricycle.complex_functions.einsum``)."""
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)) and (
        run := _handler(input, weight, bias)
    ):
        return run(linear, (input, weight, bias), {})
    x, weight = as_tensor(input), as_tensor(weight)
    if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
        raise ValueError(f"F.linear: expected weight (out, in) and input (..., in), got weight "
                         f"{weight.shape} and input {x.shape}")  # fmt: skip
    out = einsum("...i,ji->...j", x, weight)  # (..., out)
    return out if bias is None else out + bias


def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0), elementwise (``tricycle.activation.ReLU``; ``inplace`` as its)."""
    if not isinstance(x, Tensor) and (run := _handler(x)):
        return run(relu, (x, inplace), {})
    return ReLU(inplace)(x)


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else ``negative_slope * x`` (``tricycle.activation.LeakyReLU``)."""
    return LeakyReLU(negative_slope, inplace)(x)


def gelu(input: Tensor, approximate="none") -> Tensor:  # noqa: A002 - torch's name
    """x * Phi(x): exact for torch's "none" (or False), GPT-2's tanh form for "tanh" (or
    True), as ``tricycle.activation.GeLU``."""
    checks.one_of((False, True, "none", "tanh"))("F.gelu", "approximate", approximate)
    if not isinstance(input, Tensor) and (run := _handler(input)):
        return run(gelu, (input, approximate), {})
    return GeLU(approximate)(input)


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), also called Swish (``tricycle.activation.Swish``)."""
    if not isinstance(x, Tensor) and (run := _handler(x)):
        return run(silu, (x, inplace), {})
    return Swish(inplace)(x)


@functools.wraps(functional_losses.cross_entropy)
def cross_entropy(input, target, *args, **kwargs) -> Tensor:  # noqa: A002 - torch's name
    if not isinstance(input, Tensor) and (run := _handler(input)):  # loss_parallel's DTensor
        return run(cross_entropy, (input, target, *args), kwargs)
    return functional_losses.cross_entropy(input, target, *args, **kwargs)


def _written(function):
    """torch's ``F.<name>_``: ``function(x, ..., inplace=True)``."""

    def in_place(x: Tensor, *args, **kwargs) -> Tensor:
        return function(x, *args, inplace=True, **kwargs)

    in_place.__name__ = in_place.__qualname__ = f"{function.__name__}_"
    in_place.__doc__ = f"``{function.__name__}(x, ..., inplace=True)``, as torch's."
    return in_place


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


relu_, leaky_relu_, elu_, celu_, selu_ = map(_written, (relu, leaky_relu, elu, celu, selu))
hardtanh_, threshold_ = _written(hardtanh), _written(threshold)


def softmin(x: Tensor, dim: int = -1, dtype=None) -> Tensor:
    """softmax(-x) along ``dim`` (in ``dtype``, if given): ``tricycle.nn.softmaxes.Softmin``."""
    x = as_tensor(x)
    return along("F.softmin", Softmax, -(x if dtype is None else x.to(dtype)), dim)


# ---------------------------------------------------------------------- shapes and classes
def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002 - torch's names
    """The gated linear unit, as torch's: ``input`` split in halves a | b along ``dim``,
    then a * sigmoid(b) (``tricycle.activation.GLU`` is the layer with its projection)."""
    x = as_tensor(input)
    if x.ndim == 0:
        raise ValueError("F.glu: expected an input with at least one axis, got a 0-d tensor")
    axis = checks.axis("F.glu", "dim", dim, x.ndim, x.shape)
    if x.shape[axis] % 2:
        raise ValueError(f"F.glu: dim {dim} of input {x.shape} must have an even size, to halve")
    a, b = ops.split(x, 2, axis)
    return a * sigmoid(b)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """Integer class ids (...) as one-hot rows (..., num_classes) of int64 0s and 1s, with no
    gradient, as torch's; ``num_classes=-1`` takes the largest id + 1 (reading it back from
    a GPU). An id outside [0, num_classes) is an IndexError (on a GPU at the next read-back)."""
    op = "F.one_hot"
    ids = tensor.array if isinstance(tensor, Tensor) else tensor
    ids = ids if hasattr(ids, "dtype") and hasattr(ids, "shape") else np.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{op}: expected integer class ids (torch's LongTensor), got dtype "
                        f"{ids.dtype} with shape {ids.shape}")  # fmt: skip
    checks.integer(op, "num_classes", num_classes, -1)
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError(f"{op}: cannot infer num_classes from empty ids {ids.shape}; give it")
        num_classes = int(ids.max()) + 1
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, num_classes, op=op, what="class ids", context=f"for num_classes={num_classes}")
    xp = backend.array_module(ids)
    rows = ids[..., None] == xp.arange(num_classes)  # (..., num_classes)
    return Tensor(rows.astype(np.int64), requires_grad=False)
