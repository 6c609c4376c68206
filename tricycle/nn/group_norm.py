"""Group normalisation (Wu and He, 2018), as PyTorch's ``GroupNorm``: the C channels of
x (N, C, *spatial) split into G groups of C / G consecutive channels, and each sample's group
is normalised over its channels and positions together; then each channel is scaled and
shifted::

    xhat[n, c, s] = (x[n, c, s] - mean[n, g]) * rstd[n, g],   g = c // (C / G)
    y[n, c, s]    = xhat[n, c, s] * gamma[c] + beta[c],       rstd = 1 / sqrt(var + eps)

The statistics are per sample, so unlike batch norm the layer behaves the same in training
and evaluation, whatever the batch size (one group is layer norm over (C, *spatial); C groups
is instance norm). A fused op with a closed-form backward; a backend may register faster
kernels for "group_norm" (a (forward, backward) pair with these functions' signatures).
"""

import math

from tricycle import checks, dispatch
from tricycle.initialisers import init_ones, init_zeros
from tricycle.layers import Layer, parameter, shared_back_fns
from tricycle.nn.batch_norm import affine_arguments, affine_gradients
from tricycle.tensor import Tensor, check_float

__all__ = ["GroupNorm", "group_norm", "group_norm_backward", "group_norm_forward"]


def group_norm_forward(xp, x, gamma, beta, num_groups: int, eps: float):
    """y = xhat * gamma + beta for x (N, C, S), each sample's groups of C / G channels
    normalised over their channels and S positions. ``gamma``/``beta`` (C,) may be None.

    Returns (y, mean, rstd), mean and rstd (N, G): with x and gamma, all the backward needs.
    """
    N, C, S = x.shape
    xg = x.reshape(N, num_groups, -1)  # (N, G, M), M = C / G * S
    mean = xg.mean(axis=-1)  # (N, G)
    centred = xg - mean[..., None]
    var = xp.einsum("ngm,ngm->ng", centred, centred) / xg.shape[-1]  # biased
    rstd = 1 / xp.sqrt(var + eps)  # (N, G)
    y = (centred * rstd[..., None]).reshape(N, C, S)  # xhat
    if gamma is not None:
        y = y * gamma[:, None]
    if beta is not None:
        y = y + beta[:, None]
    return y, mean, rstd


def group_norm_backward(xp, dy, x, gamma, mean, rstd, num_groups: int):
    """Gradients (dx, dgamma, dbeta) of ``group_norm_forward``, xhat recomputed from x.

    With g = dy * gamma and the means over each group's M = C / G * S elements:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma = sum(dy * xhat) and
    dbeta = sum(dy) over N and S, returned whether or not the op has gamma and beta.
    """
    N, C, S = x.shape
    xhat = (x.reshape(N, num_groups, -1) - mean[..., None]) * rstd[..., None]  # (N, G, M)
    dgamma = xp.einsum("ncs,ncs->c", dy, xhat.reshape(N, C, S))
    dbeta = dy.sum(axis=(0, 2))  # (C,)
    g = (dy if gamma is None else dy * gamma[:, None]).reshape(xhat.shape)  # (N, G, M)
    M = xhat.shape[-1]
    mean_g = g.mean(axis=-1, keepdims=True)  # (N, G, 1)
    mean_gx = xp.einsum("ngm,ngm->ng", g, xhat)[..., None] / M
    dx = (g - mean_g - xhat * mean_gx) * rstd[..., None]
    return dx.reshape(N, C, S), dgamma, dbeta


def group_norm(
    x: Tensor,
    num_groups: int,
    gamma: Tensor | None = None,
    beta: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Group normalisation of x (N, C, *spatial) in ``num_groups`` groups of channels, then a
    per-channel scale ``gamma`` and shift ``beta`` (C,), as ``torch.nn.functional.group_norm``.
    """
    check_float("group_norm", x)
    checks.positive_int("group_norm", "num_groups", num_groups)
    checks.positive("group_norm", "eps", eps)
    if x.ndim < 2 or x.size == 0:
        raise ValueError(f"group_norm: expected a non-empty input (N, C, ...), got {x.shape}")
    N, C, S = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    if C % num_groups:
        raise ValueError(
            f"group_norm: {C} channels (input shape {x.shape}) do not split into "
            f"num_groups={num_groups} equal groups"
        )
    args, xp = affine_arguments("group_norm", x, gamma, beta)
    x3 = x.array.reshape(N, C, S)
    g, b = (None if t is None else t.array for t in (gamma, beta))
    reference = (group_norm_forward, group_norm_backward)
    forward, backward = dispatch.choose("group_norm", reference, x3, g, b)
    y, mean, rstd = forward(xp, x3, g, b, num_groups, eps)

    def back(dy):
        dx, dgamma, dbeta = backward(xp, dy.reshape(N, C, S), x3, g, mean, rstd, num_groups)
        return affine_gradients(dx.reshape(x.shape), gamma, dgamma, beta, dbeta)

    out = y.reshape(x.shape).astype(x.dtype, copy=False)
    return Tensor(out, args=args, back_fns=shared_back_fns(back, len(args)), name="group_norm")


class GroupNorm(Layer):
    """Group normalisation of (N, num_channels, *spatial) inputs, as ``torch.nn.GroupNorm``:
    ``gamma`` (ones) and ``beta`` (zeros), one per channel, are parameters when ``affine``."""

    @checks.arguments(
        num_groups=checks.positive_int,
        num_channels=checks.positive_int,
        eps=checks.positive,
        affine=checks.boolean,
    )
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True):
        if num_channels % num_groups:
            raise ValueError(
                f"GroupNorm: num_channels={num_channels} must be divisible by "
                f"num_groups={num_groups}"
            )
        self.num_groups, self.num_channels, self.eps = num_groups, num_channels, eps
        self.gamma = parameter(init_ones((num_channels,)), "gamma") if affine else None
        self.beta = parameter(init_zeros((num_channels,)), "beta") if affine else None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(
                f"GroupNorm({self.num_groups}, {self.num_channels}): expected input (batch, "
                f"{self.num_channels}, ...), got shape {x.shape}"
            )
        return group_norm(x, self.num_groups, self.gamma, self.beta, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
            f"affine={self.gamma is not None}"
        )
