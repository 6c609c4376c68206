"""Batch normalisation over the channels (axis 1) of (N, C) or (N, C, *spatial) inputs, as
PyTorch's BatchNorm1d and BatchNorm2d.

A fused op with a closed-form backward (the reference here; a backend's kernels for
"batch_norm" take its place through ``tricycle.dispatch``); its running statistics are
buffers (tensors that do not require grad), saved in ``state_dict`` but never trained.
"""

import math

from tricycle import checks, dispatch
from tricycle.backend import check_same_device
from tricycle.initialisers import init_ones, init_zeros
from tricycle.layers import Layer, parameter, shared_back_fns
from tricycle.tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "batch_norm"]


def batch_norm_forward(xp, x, gamma, beta, eps: float, mean=None, var=None):
    """Normalise each channel (axis 1) of x (N, C, R) over N and R, then scale and shift:
    y = (x - mean) * rstd * gamma + beta, rstd = 1 / sqrt(var + eps).

    Without ``mean``/``var`` the batch's own statistics are used (training); with them, those
    (evaluation, running statistics). ``gamma``/``beta`` (C,) may be None (no affine).
    Returns (y, xhat, rstd, mean, var), var biased: xhat and rstd are what backward needs.
    """
    if mean is None:
        mean = x.mean(axis=(0, 2))
        centred = x - mean[:, None]
        var = xp.einsum("ncr,ncr->c", centred, centred) / (x.shape[0] * x.shape[2])
    else:
        centred = x - mean[:, None]
    rstd = 1 / xp.sqrt(var + eps)  # (C,)
    xhat = centred * rstd[:, None]
    y = xhat if gamma is None else xhat * gamma[:, None]
    if beta is not None:
        y = y + beta[:, None]
    return y, xhat, rstd, mean, var


def batch_norm_backward(xp, dy, xhat, gamma, rstd, batch_statistics: bool):
    """Gradients (dx, dgamma, dbeta) of ``batch_norm_forward``, with g = dy * gamma and M the
    N * R elements per channel: with batch statistics (which depend on x)
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); with fixed ones dx = rstd * g;
    dgamma = sum(dy * xhat), dbeta = sum(dy) over N and R in both."""
    dbeta = dy.sum(axis=(0, 2))  # (C,)
    dgamma = xp.einsum("ncr,ncr->c", dy, xhat)
    scale = rstd if gamma is None else rstd * gamma  # (C,)
    if batch_statistics:
        M = dy.shape[0] * dy.shape[2]
        dx = (dy - dbeta[:, None] / M - xhat * (dgamma[:, None] / M)) * scale[:, None]
    else:
        dx = dy * scale[:, None]
    return dx, dgamma, dbeta


def affine_arguments(op: str, x: Tensor, gamma: Tensor | None, beta: Tensor | None):
    """(x and the scale and shift that are given, their array module) for a normalisation of
    x (N, C, ...) with a per-channel ``gamma`` and ``beta`` (C,), either or both None: checks
    their shapes and that all are on one device. Shared by the batch, instance and group
    norms."""
    C = x.shape[1]
    args = tuple(t for t in (x, gamma, beta) if t is not None)
    for t in args[1:]:
        if t.shape != (C,):
            raise ValueError(f"{op}: gamma and beta must have shape ({C},), got {t.shape}")
    return args, check_same_device(op, *(a.array for a in args))


def affine_gradients(dx, gamma: Tensor | None, dgamma, beta: Tensor | None, dbeta) -> list:
    """The gradients of ``affine_arguments``' arguments, in their order: dx, then dgamma and
    dbeta where gamma and beta were given."""
    return [dx] + [dgamma] * (gamma is not None) + [dbeta] * (beta is not None)


def batch_norm(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    eps: float = 1e-5,
    mean=None,
    var=None,
):
    """Batch normalisation over axis 1 of x (N, C, *rest), as one node of the graph.

    Returns (y, mean, var): the output and the (C,) statistics used, which are the batch's
    own (var biased) unless fixed ``mean`` and ``var`` arrays are given, as in evaluation.
    """
    if x.ndim < 2 or x.size == 0:
        raise ValueError(
            f"batch_norm: expected a non-empty input (batch, channels, ...), got {x.shape}"
        )
    N, C, rest = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    batch_statistics = mean is None
    if batch_statistics and N * rest == 1:
        raise ValueError(
            f"batch_norm: expected more than 1 value per channel when using batch statistics, "
            f"got input shape {x.shape}"
        )
    args, xp = affine_arguments("batch_norm", x, gamma, beta)
    x3 = x.array.reshape(N, C, rest)
    g, b = (None if t is None else t.array for t in (gamma, beta))
    forward, backward_arrays = dispatch.choose(
        "batch_norm", (batch_norm_forward, batch_norm_backward), x3, g, b
    )
    y, xhat, rstd, mean, var = forward(xp, x3, g, b, eps, mean, var)

    def backward(dy):
        dx, dgamma, dbeta = backward_arrays(
            xp, dy.reshape(N, C, rest), xhat, g, rstd, batch_statistics
        )
        return affine_gradients(dx.reshape(x.shape), gamma, dgamma, beta, dbeta)

    out = Tensor(
        y.reshape(x.shape).astype(x.dtype, copy=False),
        args=args,
        back_fns=shared_back_fns(backward, len(args)),
        name="batch_norm",
    )
    return out, mean, var


def _momentum(owner: str, name: str, value):
    """Batch norm's momentum: a number in [0, 1], or None for the cumulative average."""
    return value if value is None else checks.real(owner, name, value, 0, 1)


class _BatchNorm(Layer):
    """Batch normalisation, as PyTorch's: in training, normalise with the batch's statistics
    and update the running ones (running = (1 - momentum) running + momentum batch, with the
    unbiased batch variance); in evaluation, normalise with the running statistics. With
    ``momentum=None`` the weight of the k-th training batch is 1 / k, so the running
    statistics are the plain average of every batch's since ``reset_running_stats()``
    (``torch.optim.swa_utils.update_bn`` relies on it). ``num_batches_tracked`` counts the
    training batches, as torch's buffer does; here it is a plain int, not saved in
    ``state_dict``.

    ``gamma`` (ones) and ``beta`` (zeros) are parameters when ``affine`` (``beta`` unless
    ``bias=False``, torch's keyword, which its repr shows too); ``running_mean``
    and ``running_var`` are buffers: saved in ``state_dict``, moved with the layer, never
    given to the optimiser. Without ``track_running_stats`` the batch statistics are used in
    evaluation too.
    """

    n_dims: tuple[int, ...] = ()
    num_batches_tracked = 0  # training batches seen (a class default: older pickles load)

    @checks.arguments(
        num_features=checks.positive_int,
        eps=checks.positive,
        momentum=_momentum,
        affine=checks.boolean,
        track_running_stats=checks.boolean,
        bias=checks.boolean,
    )
    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        *,
        bias: bool = True,
    ):
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.gamma = parameter(init_ones((num_features,)), "gamma") if affine else None
        self.beta = parameter(init_zeros((num_features,)), "beta") if affine and bias else None
        self.track_running_stats = track_running_stats
        if track_running_stats:
            self.running_mean = Tensor(init_zeros((num_features,)), requires_grad=False)
            self.running_var = Tensor(init_ones((num_features,)), requires_grad=False)

    def forward(self, x: Tensor) -> Tensor:
        name = type(self).__name__
        if x.ndim not in self.n_dims or x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}({self.num_features}): expected input with {self.num_features} "
                f"channels on axis 1 and {' or '.join(map(str, self.n_dims))} dimensions, got "
                f"shape {x.shape}"
            )
        if self.training or not self.track_running_stats:
            y, mean, var = batch_norm(x, self.gamma, self.beta, self.eps)
            if self.training and self.track_running_stats:
                self.num_batches_tracked += 1
                m = 1 / self.num_batches_tracked if self.momentum is None else self.momentum
                self._update_running_statistics(mean, var, x.size // x.shape[1], m)
            return y
        y, _, _ = batch_norm(
            x, self.gamma, self.beta, self.eps, self.running_mean.array, self.running_var.array
        )
        return y

    def _update_running_statistics(self, mean, var, n: int, momentum: float | None = None):
        """New arrays, not writes into the old ones: a graph built in evaluation may still
        hold the previous statistics for its backward. ``momentum`` (the batch's weight)
        defaults to the layer's; a layer's None there is 0, no update, as torch's instance
        norm reads it."""
        m = self.momentum if momentum is None else momentum
        m = 0.0 if m is None else m
        unbiased = var * (n / (n - 1))
        running_mean, running_var = self.running_mean, self.running_var
        running_mean.array = ((1 - m) * running_mean.array + m * mean).astype(running_mean.dtype)
        running_var.array = ((1 - m) * running_var.array + m * unbiased).astype(running_var.dtype)

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1 and no batches tracked, as torch's (new arrays,
        as ``_update_running_statistics`` writes them)."""
        if self.track_running_stats:
            xp = self.running_mean.xp
            self.running_mean.array = xp.zeros_like(self.running_mean.array)
            self.running_var.array = xp.ones_like(self.running_var.array)
            self.num_batches_tracked = 0

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.gamma is not None}, bias={self.beta is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over N (and L), as
    ``torch.nn.BatchNorm1d``."""

    n_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs over N, H and W, as ``torch.nn.BatchNorm2d``."""

    n_dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of (N, C, D, H, W) inputs over N, D, H and W, as
    ``torch.nn.BatchNorm3d``."""

    n_dims = (5,)
