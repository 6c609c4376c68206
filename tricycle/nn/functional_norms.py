"""The normalisations of ``torch.nn.functional`` with torch's signatures (re-exported by
``tricycle.nn.functional``): ``layer_norm``, ``group_norm``, ``batch_norm`` and
``instance_norm``, each over the fused op of its layer (``tricycle.norms``,
``tricycle.nn.group_norm``, ``tricycle.nn.batch_norm``, ``tricycle.nn.instance_norm``).

``weight`` and ``bias`` are torch's names for the ops' ``gamma`` and ``beta``; arrays are
taken as constants, Tensors get gradients. ``batch_norm(..., training=True)`` and
``instance_norm`` with running statistics update them as torch's do:
running = (1 - momentum) running + momentum batch, the batch variance unbiased. A running
statistic given as a Tensor gets a new array (as the layers' buffers do: a graph built before
may still hold the old one); one given as an array is written in place, the one way its owner
sees the update.
"""

import math

import numpy as np

from tricycle import backend, checks, norms
from tricycle.nn.batch_norm import batch_norm as batch_norm_op
from tricycle.nn.group_norm import group_norm as group_norm_op
from tricycle.nn.instance_norm import instance_norm as instance_norm_op
from tricycle.tensor import Tensor, as_tensor

__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm"]


def _optional(value) -> Tensor | None:
    """A weight or bias as a Tensor (an array: a constant), or None."""
    return None if value is None else as_tensor(value)


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


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Group normalisation of (N, C, *spatial) in ``num_groups`` groups of channels, then a
    per-channel ``weight`` and ``bias`` (C,), as torch's (``tricycle.nn.group_norm``)."""
    return group_norm_op(as_tensor(input), num_groups, _optional(weight), _optional(bias), eps)


def _running(op: str, name: str, value, x: Tensor):
    """A running statistic (C,) (a Tensor or an array) as an array on x's device."""
    array = value.array if isinstance(value, Tensor) else x.xp.asarray(value)
    if array.shape != (x.shape[1],):
        raise ValueError(
            f"{op}: {name} must have one value per channel, ({x.shape[1]},), for input "
            f"{x.shape}, got {array.shape}"
        )
    return array


def _update(running_mean, running_var, mean, var, n: int, momentum: float) -> None:
    """torch's update of the running statistics given (either may be None) with a batch's
    ``mean`` and biased ``var`` (C,) over ``n`` values per channel."""
    for running, batch in ((running_mean, mean), (running_var, var * (n / (n - 1)))):
        if running is None:
            continue
        old = running.array if isinstance(running, Tensor) else running
        new = ((1 - momentum) * old + momentum * batch).astype(old.dtype, copy=False)
        if isinstance(running, Tensor):
            running.array = new
        else:  # a host array stays one
            running[...] = backend.to_host_array(new) if isinstance(running, np.ndarray) else new


def _check_settings(op: str, x: Tensor, momentum, eps, flag: str, value) -> None:
    checks.boolean(op, flag, value)
    if momentum is None:  # torch's cumulative average needs a count of batches: a layer's
        raise ValueError(f"{op}: momentum=None (a cumulative average) is not supported; "
                         "give a number in [0, 1]")  # fmt: skip
    checks.real(op, "momentum", momentum, 0, 1)
    checks.positive(op, "eps", eps)
    if x.ndim < 2:
        raise ValueError(f"{op}: expected input (N, C, ...), got shape {x.shape}")


def _given(op: str, running_mean, running_var, x: Tensor) -> list:
    """The running statistics given (each checked against ``x``'s channels), None where not."""
    return [
        None if value is None else _running(op, name, value, x)
        for name, value in (("running_mean", running_mean), ("running_var", running_var))
    ]


def batch_norm(
    input: Tensor,  # noqa: A002 - torch's names
    running_mean,
    running_var,
    weight=None,
    bias=None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation over axis 1 of (N, C, ...), as torch's: with ``training``, by the
    batch's statistics, updating the running ones if given; without, by the running ones
    (``tricycle.nn.batch_norm``'s op)."""
    op, x = "F.batch_norm", as_tensor(input)
    _check_settings(op, x, momentum, eps, "training", training)
    weight, bias = _optional(weight), _optional(bias)
    given = _given(op, running_mean, running_var, x)
    if training:
        y, mean, var = batch_norm_op(x, weight, bias, eps)
        _update(running_mean, running_var, mean, var, x.size // x.shape[1], momentum)
        return y
    if any(array is None for array in given):
        raise ValueError(
            f"{op}: running_mean and running_var are needed with training=False (they "
            "normalise the input); pass training=True for the batch's own statistics"
        )
    return batch_norm_op(x, weight, bias, eps, *given)[0]


def instance_norm(
    input: Tensor,  # noqa: A002
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance normalisation of (N, C, *spatial), each (n, c) over its positions, as torch's:
    with ``use_input_stats``, by each instance's own statistics (updating the running ones
    with their means over N, if given); without, by the running ones
    (``tricycle.nn.instance_norm``'s op)."""
    op, x = "F.instance_norm", as_tensor(input)
    _check_settings(op, x, momentum, eps, "use_input_stats", use_input_stats)
    weight, bias = _optional(weight), _optional(bias)
    given = _given(op, running_mean, running_var, x)
    if use_input_stats:
        y, mean, var = instance_norm_op(x, weight, bias, eps)  # mean, var (N, C)
        n = x.size // (x.shape[0] * x.shape[1])
        _update(running_mean, running_var, mean.mean(axis=0), var.mean(axis=0), n, momentum)
        return y
    if any(array is None for array in given):
        raise ValueError(f"{op}: running_mean and running_var are needed with "
                         "use_input_stats=False (they normalise the input)")  # fmt: skip
    return instance_norm_op(x, weight, bias, eps, *given)[0]
