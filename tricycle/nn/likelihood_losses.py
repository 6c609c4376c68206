"""Negative log-likelihoods of counts and of real values under PyTorch's names, called in
PyTorch's order, each with its ``F.`` function:

- ``PoissonNLLLoss``: counts y under a Poisson distribution of rate e^x (or x itself);
- ``GaussianNLLLoss``: values y under a normal distribution of mean x and variance v, the
  variance predicted beside the mean (one per value, or one per row).

Each computes one loss per element and its derivative with respect to each input (the
targets, and the variances, get gradients, as in PyTorch), then
``tricycle.loss_reduction.reduced`` applies ``reduction`` ("mean", "sum" or "none").
"""

import math

import numpy as np

from tricycle import checks
from tricycle.backend import check_same_device
from tricycle.binary import constant, unbroadcast
from tricycle.loss_reduction import REDUCTIONS, reduced
from tricycle.module import Layer
from tricycle.nn.more_losses import _same_shape
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["GaussianNLLLoss", "PoissonNLLLoss", "gaussian_nll_loss", "poisson_nll_loss"]

_reduction = checks.one_of(REDUCTIONS)
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class PoissonNLLLoss(Layer):
    """The negative log-likelihood of counts y (``target``) under a Poisson distribution of
    rate lambda, as ``torch.nn.PoissonNLLLoss``, less the constant log(y!):

    - ``log_input`` (the default): x = log lambda and l = e^x - y x;
      dl/dx = e^x - y, dl/dy = -x;
    - otherwise x = lambda and l = x - y log(x + eps) (``eps`` keeps log(0) away);
      dl/dx = 1 - y / (x + eps), dl/dy = -log(x + eps).

    With ``full`` the loss adds Stirling's approximation of log(y!),
    y log y - y + log(2 pi y) / 2, where y > 1 (0 for counts of 0 and 1, as PyTorch); its
    derivative log y + 1 / (2 y) joins dl/dy there (PyTorch's is NaN at y = 0, 0 here).
    ``eps`` comes after the deprecated ``size_average`` in PyTorch's order: by name here.
    """

    @checks.arguments(
        log_input=checks.boolean, full=checks.boolean, eps=checks.positive, reduction=_reduction
    )
    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        *,
        eps: float = 1e-8,
        reduction: str = "mean",
    ):
        self.log_input, self.full, self.eps, self.reduction = log_input, full, eps, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        (x, y), xp = _same_shape(type(self).__name__, input, ("target", target))
        a, counts = x.array, y.array.astype(x.dtype, copy=False)
        if self.log_input:
            rate = xp.exp(a)
            losses, dx, dy = rate - counts * a, rate - counts, -a
        else:
            log_rate = xp.log(a + self.eps)
            losses, dx, dy = a - counts * log_rate, 1 - counts / (a + self.eps), -log_rate
        if self.full:
            many = counts > 1
            y_safe = xp.where(many, counts, 1)  # logs of 0 and 1 are never taken
            log_y = xp.log(y_safe)
            stirling = y_safe * log_y - y_safe + 0.5 * xp.log(2 * math.pi * y_safe)
            losses = losses + xp.where(many, stirling, 0)
            dy = dy + xp.where(many, log_y + 0.5 / y_safe, 0)
        settings = (self.log_input, self.full, self.eps)  # (read by the double backward)
        return reduced(
            "poisson_nll",
            losses,
            self.reduction,
            (x, y),
            (lambda dl, settings=settings: dl * dx, lambda dl: dl * dy),
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(log_input={self.log_input}, full={self.full}, "
            f"eps={self.eps}, reduction={self.reduction!r})"
        )


class GaussianNLLLoss(Layer):
    """The negative log-likelihood of values y (``target``) under normal distributions of
    means x (``input``) and variances v (``var``), as ``torch.nn.GaussianNLLLoss``, called
    ``loss(input, target, var)``: l = (log v + (x - y)^2 / v) / 2, plus log(2 pi) / 2 with
    ``full``.

    ``var`` has the input's shape (one variance per value), or that shape with one axis of
    size 1 (shared along it), or lacks the input's last axis (one per row), or is a number;
    ``target`` broadcasts to the input's shape. Variances below ``eps`` are raised to eps for
    the loss, and the gradient passes through that floor as if it were not there (PyTorch
    clamps without recording it): dl/dv = (1 / v - (x - y)^2 / v^2) / 2 at the floored v,
    dl/dx = (x - y) / v = -dl/dy, each summed over the axes its input was broadcast along.
    A negative variance is an error on the host; on a GPU, which is not made to wait for the
    check, it is floored at eps.
    """

    @checks.arguments(full=checks.boolean, eps=checks.positive, reduction=_reduction)
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        self.full, self.eps, self.reduction = full, eps, reduction

    def forward(self, input: Tensor, target, var) -> Tensor:  # noqa: A002 - torch's name
        op = type(self).__name__
        x = as_tensor(input)
        check_float(f"{op} (input)", x)
        if x.size == 0:
            raise ValueError(f"{op}: empty input")
        y, v = constant(target, x, op), constant(var, x, op)
        xp = check_same_device(op, x.array, y.array, v.array)
        if _broadcast(y.shape, x.shape) != x.shape:
            raise ValueError(
                f"{op}: target {y.shape} must have the input's shape {x.shape} or broadcast to it"
            )
        variances = v.array.astype(x.dtype, copy=False)
        if v.ndim and v.shape == x.shape[:-1]:  # one variance a row: (..., 1)
            variances = variances[..., None]
        elif not _shares_variances(v.shape, x.shape):
            raise ValueError(
                f"{op}: var {v.shape} must be a number or have the input's shape {x.shape}, "
                "that shape with one axis of size 1, or that shape without its last axis"
            )
        if xp is np and (variances < 0).any():
            raise ValueError(
                f"{op}: var has negative entries, min {variances.min()}; variances must be >= 0"
            )
        v_floored = xp.maximum(variances, self.eps)
        diff = x.array - y.array.astype(x.dtype, copy=False)  # (...): the input's shape
        scaled = diff / v_floored  # (x - y) / v
        losses = 0.5 * (xp.log(v_floored) + diff * scaled)
        if self.full:
            losses = losses + HALF_LOG_2PI
        dv = 0.5 * (1 - diff * scaled) / v_floored
        return reduced(
            "gaussian_nll",
            losses,
            self.reduction,
            (x, y, v),
            (
                lambda dl, eps=self.eps: dl * scaled,  # (eps: read by the double backward)
                lambda dl: unbroadcast(-(dl * scaled), y.shape),
                lambda dl: unbroadcast(dl * dv, variances.shape).reshape(v.shape),
            ),
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(full={self.full}, eps={self.eps}, reduction={self.reduction!r})"
        )


def _broadcast(shape: tuple, to: tuple):
    """The shape ``shape`` and ``to`` broadcast to, or None if they do not."""
    try:
        return np.broadcast_shapes(shape, to)
    except ValueError:
        return None


def _shares_variances(var: tuple, shape: tuple) -> bool:
    """A variance of shape ``var`` fits inputs of ``shape``: a number (0-d), the same shape,
    or the same number of axes differing in one, where var has size 1 (PyTorch's rule)."""
    if var in ((), shape):
        return True
    differ = [v for v, s in zip(var, shape) if v != s]
    return len(var) == len(shape) and differ == [1]


def poisson_nll_loss(
    input: Tensor,  # noqa: A002 - torch's name
    target,
    log_input: bool = True,
    full: bool = False,
    *,
    eps: float = 1e-8,
    reduction: str = "mean",
) -> Tensor:
    """The Poisson negative log-likelihood, reduced (``PoissonNLLLoss``)."""
    return PoissonNLLLoss(log_input, full, eps=eps, reduction=reduction)(input, target)


def gaussian_nll_loss(
    input: Tensor,  # noqa: A002 - torch's name
    target,
    var,
    full: bool = False,
    eps: float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """The Gaussian negative log-likelihood, reduced (``GaussianNLLLoss``)."""
    return GaussianNLLLoss(full=full, eps=eps, reduction=reduction)(input, target, var)
