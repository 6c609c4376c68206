"""Instance normalisation, as PyTorch's InstanceNorm1d and InstanceNorm2d: each channel of each
example, x[n, c] over its spatial positions, normalised to mean 0 and variance 1, then scaled
and shifted per channel when ``affine``.

It is batch normalisation (``tricycle.nn.batch_norm``) of the input seen as one example with
N * C channels, (N, C, *spatial) -> (1, N C, R): batch norm normalises each channel over the
batch and the positions, here just the positions of one (n, c). So it reuses batch norm's
fused op and closed-form backward; the per-channel gamma and beta are applied after it, as a
broadcast product and sum, whose gradients sum over the examples and positions.
"""

import math

from tricycle import ops
from tricycle.nn.batch_norm import _BatchNorm, affine_arguments, batch_norm
from tricycle.tensor import Tensor

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "instance_norm"]


def instance_norm(
    x: Tensor,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    eps: float = 1e-5,
    mean=None,
    var=None,
):
    """Instance normalisation of x (N, C, *spatial): returns (y, mean, var).

    Without ``mean``/``var`` each (n, c) is normalised with its own statistics, returned as
    (N, C) arrays (var biased); with fixed (C,) arrays (running statistics, in evaluation)
    every example uses those. ``gamma`` and ``beta`` (C,) scale and shift each channel.
    """
    if x.ndim < 3 or x.size == 0:
        raise ValueError(
            f"instance_norm: expected a non-empty input (batch, channels, *spatial), got {x.shape}"
        )
    N, C, R = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    if mean is None:
        if R == 1:
            raise ValueError(
                f"instance_norm: expected more than 1 spatial element per channel, got input "
                f"shape {x.shape}"
            )
        y, mean, var = batch_norm(ops.reshape(x, (1, N * C, R)), eps=eps)  # (1, N C, R)
        y, mean, var = ops.reshape(y, x.shape), mean.reshape(N, C), var.reshape(N, C)
    else:
        y, _, _ = batch_norm(x, eps=eps, mean=mean, var=var)
    affine_arguments("instance_norm", x, gamma, beta)  # checks gamma's and beta's shapes
    per_channel = (C,) + (1,) * (x.ndim - 2)  # broadcasts over the positions
    if gamma is not None:
        y = y * ops.reshape(gamma, per_channel)
    if beta is not None:
        y = y + ops.reshape(beta, per_channel)
    return y, mean, var


class _InstanceNorm(_BatchNorm):
    """Instance normalisation, as PyTorch's: ``affine`` (default False) adds a per-channel
    ``gamma`` (ones) and ``beta`` (zeros); with ``track_running_stats`` (default False),
    training updates running statistics with the examples' mean statistics
    (running = (1 - momentum) running + momentum mean over examples, the variance unbiased)
    and evaluation normalises with them. An unbatched input (C, *spatial) is one example."""

    spatial_axes = 0

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def forward(self, x: Tensor) -> Tensor:
        n = self.spatial_axes
        if x.ndim not in (n + 1, n + 2) or x.shape[-n - 1] != self.num_features:
            raise ValueError(
                f"{type(self).__name__}({self.num_features}): expected input (batch, "
                f"{self.num_features}, *{n} spatial axes) or ({self.num_features}, *{n} "
                f"spatial axes), got shape {x.shape}"
            )
        unbatched = x.ndim == n + 1
        if unbatched:
            x = ops.expand_dims(x, 0)
        if self.training or not self.track_running_stats:
            y, mean, var = instance_norm(x, self.gamma, self.beta, self.eps)
            if self.training and self.track_running_stats:
                R = x.size // (x.shape[0] * x.shape[1])
                self._update_running_statistics(mean.mean(axis=0), var.mean(axis=0), R)
        else:
            running = (self.running_mean.array, self.running_var.array)
            y, _, _ = instance_norm(x, self.gamma, self.beta, self.eps, *running)
        return ops.squeeze(y, 0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of (N, C, L) (or (C, L)) over L, as ``torch.nn.InstanceNorm1d``."""

    spatial_axes = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of (N, C, H, W) (or (C, H, W)) over H and W, as
    ``torch.nn.InstanceNorm2d``."""

    spatial_axes = 2
