"""torch.nn.utils' fusion of a BatchNorm into the layer before it, for inference: an eval-mode
BatchNorm is the affine map y = (x - mean) / sqrt(var + eps) * gamma + beta per channel, so
it folds into the weights and bias of the convolution or Linear that feeds it::

    fused = fuse_conv_bn_eval(conv.eval(), bn.eval())   # fused(x) == bn(conv(x))

With s = gamma / sqrt(var + eps), each output channel's weights are multiplied by s and the
bias becomes (bias - mean) * s + beta. A convolution's weights are (out, in, *kernel) as
torch's (a transposed one's (in, out, *kernel): ``transpose=True``); a tricycle ``Linear``'s
are (in, out), the transpose of torch's, so its output channels are its last axis and
``fuse_linear_bn_weights`` takes and returns weights in that layout. The fused tensors are
new leaf Parameters; the layer given is left as it was (the fused one is a deep copy).
"""

import copy

from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _running_stats(owner: str, layer, bn) -> tuple[Tensor, Tensor]:
    """The BatchNorm's running mean and variance, both layers checked to be in eval mode."""
    if layer.training or bn.training:
        raise AssertionError(f"{owner}: Fusion only for eval! (call .eval() on both layers)")
    mean, var = getattr(bn, "running_mean", None), getattr(bn, "running_var", None)
    if mean is None or var is None:
        raise AssertionError(
            f"{owner}: bn.running_mean and bn.running_var must not be None (a BatchNorm "
            "built with track_running_stats=False has none to fold)"
        )
    return mean, var


def _check_stats(owner: str, mean, var, channels: int, one_allowed: bool) -> None:
    """The running mean and variance: 1-D Tensors of ``channels`` (or 1) entries."""
    for name, t in (("bn_rm", mean), ("bn_rv", var)):
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise ValueError(f"{owner}: {name} must be a 1-D Tensor, got "
                             f"{getattr(t, 'shape', type(t).__name__)}")  # fmt: skip
    if mean.shape != var.shape:
        raise ValueError(f"{owner}: bn_rm {mean.shape} and bn_rv {var.shape} differ in shape")
    if mean.shape[0] != channels and not (one_allowed and mean.shape[0] == 1):
        raise ValueError(
            f"{owner}: the BatchNorm has {mean.shape[0]} channels, the layer's weights have "
            f"{channels} output channels"
        )


def _scale_and_bias(bias, mean, var, eps, gamma, beta):
    """s = gamma / sqrt(var + eps) and the fused bias (bias - mean) * s + beta; a missing
    bias, gamma or beta is 0, 1 and 0."""
    zeros = mean.xp.zeros(mean.shape, dtype=mean.dtype)
    scale = (var + float(eps)) ** -0.5
    if gamma is not None:
        scale = gamma * scale
    fused_bias = ((Tensor(zeros, requires_grad=False) if bias is None else bias) - mean) * scale
    return scale, fused_bias if beta is None else fused_bias + beta


def _leaf(t: Tensor, dtype, requires_grad: bool) -> Parameter:
    """A new leaf Parameter holding ``t``'s values in ``dtype``."""
    return Parameter(Tensor(t.array.astype(dtype, copy=False)), requires_grad=requires_grad)


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:  # fmt: skip
    """The weights and bias of a convolution followed by an eval-mode BatchNorm, as one
    convolution's (Parameters in the convolution's dtypes). ``conv_w`` is (out, in, *kernel),
    or (in, out, *kernel) with ``transpose``; ``conv_b``, ``bn_w`` and ``bn_b`` may be None."""
    owner = "fuse_conv_bn_weights"
    if not isinstance(conv_w, Tensor) or conv_w.ndim < 2:
        raise ValueError(f"{owner}: conv_w must be a Tensor of 2 or more axes, got "
                         f"{getattr(conv_w, 'shape', type(conv_w).__name__)}")  # fmt: skip
    _check_stats(owner, bn_rm, bn_rv, conv_w.shape[1 if transpose else 0], False)
    scale, bias = _scale_and_bias(conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    shape = [1, -1] if transpose else [-1, 1]
    weights = conv_w * scale.reshape(shape + [1] * (conv_w.ndim - 2))
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    bias_grad = False if conv_b is None else conv_b.requires_grad
    return _leaf(weights, conv_w.dtype, conv_w.requires_grad), _leaf(bias, bias_dtype, bias_grad)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The weights and bias of a Linear followed by an eval-mode BatchNorm1d, as one
    Linear's. ``linear_w`` is tricycle's (in, out) layout (torch's (out, in) transposed):
    each column (output feature) is scaled. A BatchNorm of one feature scales them all."""
    owner = "fuse_linear_bn_weights"
    if not isinstance(linear_w, Tensor) or linear_w.ndim != 2:
        raise ValueError(f"{owner}: linear_w must be a 2-D Tensor (in, out), got "
                         f"{getattr(linear_w, 'shape', type(linear_w).__name__)}")  # fmt: skip
    _check_stats(owner, bn_rm, bn_rv, linear_w.shape[1], True)
    scale, bias = _scale_and_bias(linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    weights = linear_w * scale  # (in, out) * (out,): each output feature's column
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    bias_grad = False if linear_b is None else linear_b.requires_grad
    return (
        _leaf(weights, linear_w.dtype, linear_w.requires_grad),
        _leaf(bias, bias_dtype, bias_grad),
    )


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of ``conv`` (eval mode) whose output is ``bn(conv(x))`` (``bn`` in eval mode,
    with running statistics); ``transpose=True`` for a transposed convolution."""
    mean, var = _running_stats("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    fused.weights, fused.bias = fuse_conv_bn_weights(
        fused.weights, fused.bias, mean, var, bn.eps, getattr(bn, "gamma", None),
        getattr(bn, "beta", None), transpose,
    )  # fmt: skip
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) whose output is ``bn(linear(x))`` (``bn`` a
    BatchNorm1d in eval mode, with running statistics, of ``out_features`` or 1 features)."""
    owner = "fuse_linear_bn_eval"
    mean, var = _running_stats(owner, linear, bn)
    out_features = linear.weights.shape[1]
    if out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            f"{owner}: To fuse, linear.out_features == bn.num_features or bn.num_features == "
            f"1, got linear.out_features={out_features} and bn.num_features={bn.num_features}"
        )
    fused = copy.deepcopy(linear)
    fused.weights, fused.bias = fuse_linear_bn_weights(
        fused.weights, fused.bias, mean, var, bn.eps, getattr(bn, "gamma", None),
        getattr(bn, "beta", None),
    )  # fmt: skip
    return fused
