"""torch's ``F.rms_norm``, ``F.local_response_norm`` with ``nn.LocalResponseNorm``, and
``F.channel_shuffle`` with ``nn.ChannelShuffle``: compositions of existing differentiable ops.

``rms_norm`` merges the last ``len(normalized_shape)`` axes into one for the fused
``tricycle.norms.rms_norm`` (eps None is the dtype's machine epsilon, as torch's). Local
response normalisation (AlexNet's) divides each channel by the mean square over a window of
``size`` neighbouring channels, zeros beyond the ends, as torch's:

    y[:, c] = x[:, c] / (k + alpha / size * sum_{j = c - size//2}^{c + (size-1)//2} x[:, j]^2)^beta

The window sum is ``size`` shifted slices of the zero-padded squares. ``channel_shuffle`` of
(N, C, ...) in g groups reads the channels as (g, C / g), transposes to (C / g, g) and flattens
back (ShuffleNet's shuffle).
"""

import math

import numpy as np

from tricycle import checks, norms
from tricycle.module import Layer
from tricycle.nn.padding import pad
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["ChannelShuffle", "LocalResponseNorm", "channel_shuffle", "local_response_norm",
           "rms_norm"]  # fmt: skip


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:  # noqa: A002
    """x / sqrt(mean(x^2) + eps) * weight over the last ``len(normalized_shape)`` axes, as
    torch's ``F.rms_norm``; ``eps=None`` is the input dtype's machine epsilon."""
    op = "F.rms_norm"
    x = as_tensor(input)
    check_float(op, x)
    shape = tuple((normalized_shape,) if checks.is_integer(normalized_shape) else normalized_shape)
    if not shape or len(shape) > x.ndim or x.shape[x.ndim - len(shape) :] != shape:
        raise ValueError(f"{op}: normalized_shape {shape} must be the last axes of the input's "
                         f"shape {x.shape}")  # fmt: skip
    if weight is not None and tuple(weight.shape) != shape:
        checks.fail(op, "weight's shape", f"normalized_shape {shape}", tuple(weight.shape))
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    checks.positive(op, "eps", eps)
    width = math.prod(shape)
    flat = x.reshape(*x.shape[: x.ndim - len(shape)], width)  # (..., width)
    gamma = flat.new_ones(width) if weight is None else as_tensor(weight).reshape(width)
    return norms.rms_norm(flat, gamma, eps).reshape(x.shape)


def local_response_norm(
    input: Tensor,  # noqa: A002 - torch's names
    size: int,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
) -> Tensor:
    """Local response normalisation of (N, C, ...) across channels, as torch's
    ``F.local_response_norm`` (see the module doc)."""
    op = "F.local_response_norm"
    checks.positive_int(op, "size", size)
    x = as_tensor(input)
    check_float(op, x)
    if x.ndim < 3:
        raise ValueError(f"{op}: expected 3D or higher dimensionality input (N, C, ...), got "
                         f"shape {x.shape}")  # fmt: skip
    if x.size == 0:
        return x
    C = x.shape[1]
    squares = pad(x * x, (0, 0) * (x.ndim - 2) + (size // 2, (size - 1) // 2))  # channels padded
    window = squares[:, 0:C]
    for i in range(1, size):
        window = window + squares[:, i : i + C]
    return x / (window * (alpha / size) + k) ** beta


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002 - torch's name
    """The channels of (N, C, ...) read as (groups, C / groups) and transposed, as torch's
    ``F.channel_shuffle`` (ShuffleNet)."""
    op = "channel_shuffle"
    checks.positive_int(op, "groups", groups)
    x = as_tensor(input)
    if x.ndim < 3:
        raise ValueError(f"{op}: expected an input (N, C, ...) of at least 3 dimensions, got "
                         f"shape {x.shape}")  # fmt: skip
    N, C, rest = x.shape[0], x.shape[1], x.shape[2:]
    if C % groups:
        raise ValueError(f"{op}: the {C} channels of input {x.shape} must be divisible by "
                         f"groups={groups}")  # fmt: skip
    return x.reshape(N, groups, C // groups, *rest).transpose(1, 2).reshape(x.shape)


class LocalResponseNorm(Layer):
    """torch's ``nn.LocalResponseNorm(size, alpha=1e-4, beta=0.75, k=1.0)``."""

    @checks.arguments(size=checks.positive_int, alpha=checks.real, beta=checks.real, k=checks.real)
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class ChannelShuffle(Layer):
    """torch's ``nn.ChannelShuffle(groups)``: ``F.channel_shuffle``."""

    @checks.arguments(groups=checks.positive_int)
    def __init__(self, groups: int):
        self.groups = groups

    def forward(self, x: Tensor) -> Tensor:
        return channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
