"""Power-average pooling, as PyTorch's ``LPPool1d``/``2d``/``3d`` and ``F.lp_pool1d``/``2d``/``3d``:
each window's p-norm without the absolute values, (sum of x^p over the window)^(1/p).

It is torch's formula, built from the average pooling of ``tricycle.nn.pooling``: the mean of
x^p over each window (no padding) times the window's size K, then the p-th root. So it has
torch's edges too: under ``ceil_mode`` a last window cut short by the input's end is its
mean times K, not its sum; a window whose sum is negative (an odd or fractional p over
negative inputs) is NaN; a window whose sum is 0 has gradient 0, as torch's (the root's own
derivative there is infinite). ``norm_type`` inf is max pooling of |x| and -inf minus the max
pooling of -|x|, as torch's.
"""

import math
from functools import partial

from tricycle import checks
from tricycle.layers import Layer
from tricycle.nn.pooling import avg_pool, max_pool, pool_over
from tricycle.nn.windows import as_tuple
from tricycle.tensor import Tensor
from tricycle.unary import abs as absolute
from tricycle.unary import unary_op

__all__ = ["LPPool1d", "LPPool2d", "LPPool3d", "lp_pool", "lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _check_norm_type(op: str, norm_type) -> float:
    """p as a float: a real number other than 0 (p = 0 has no root) and NaN."""
    if isinstance(norm_type, bool) or not isinstance(norm_type, int | float):
        checks.fail(op, "norm_type", "a real number other than 0", norm_type, TypeError)
    if norm_type == 0 or math.isnan(norm_type):
        checks.fail(op, "norm_type", "a real number other than 0", norm_type)
    return float(norm_type)


def _root(s: Tensor, p: float) -> Tensor:
    """s^(1/p), whose derivative s^(1/p) / (p s) is taken as 0 where s = 0, as torch's."""
    xp, root = s.xp, s.array ** (1 / p)

    def back_fn(dout):
        nonzero = s.array != 0
        return xp.where(nonzero, dout * root / (p * xp.where(nonzero, s.array, 1)), 0)

    return unary_op(s, root, back_fn, f"** (1 / {p:g})")


def lp_pool(x: Tensor, norm_type, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """(sum of x^p over each window)^(1/p) of x (N, C, *size), p = ``norm_type``, over as many
    spatial axes as x has past (N, C); ``stride`` defaults to ``kernel_size``; no padding."""
    n = x.ndim - 2
    op = f"lp_pool{n}d"
    p = _check_norm_type(op, norm_type)
    K = math.prod(as_tuple(kernel_size, n, "kernel_size", op))
    try:  # the pooling's own checks of the geometry, in the name of this op
        if math.isinf(p):
            magnitude = absolute(x) if p > 0 else -absolute(x)
            pooled = max_pool(magnitude, kernel_size, stride, 0, 1, ceil_mode)
            return pooled if p > 0 else -pooled
        mean = avg_pool(x**p, kernel_size, stride, 0, ceil_mode)  # (N, C, *out)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{op}: {error}") from None
    return _root(mean * K, p)


def _lp_pool_nd(n: int):
    """``lp_pool`` as PyTorch's ``F.lp_pool{n}d``: x (N, C, *n) or unbatched (C, *n)."""
    name = f"lp_pool{n}d"

    def lp_pool_nd(input: Tensor, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
        pool = partial(lp_pool, norm_type=norm_type, kernel_size=kernel_size, stride=stride,
                       ceil_mode=ceil_mode)  # fmt: skip
        return pool_over(n, name, pool, input)

    lp_pool_nd.__name__ = lp_pool_nd.__qualname__ = name
    lp_pool_nd.__doc__ = f"``lp_pool`` of x (N, C, *{n}) or unbatched (C, *{n}), as torch's."
    return lp_pool_nd


lp_pool1d, lp_pool2d, lp_pool3d = (_lp_pool_nd(n) for n in (1, 2, 3))


class _LPPool(Layer):
    """Shared by LPPool1d/2d/3d: torch's arguments, checked when the layer is built."""

    n_dims = 0

    @checks.arguments(ceil_mode=checks.boolean)
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
        name = type(self).__name__
        _check_norm_type(name, norm_type)
        as_tuple(kernel_size, self.n_dims, "kernel_size", name)
        if stride is not None:
            as_tuple(stride, self.n_dims, "stride", name)
        self.norm_type, self.kernel_size, self.stride = norm_type, kernel_size, stride
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        """The pooling of x (N, C, *size), or of an unbatched x (C, *size) -> (C, *out)."""
        pool = partial(lp_pool, norm_type=self.norm_type, kernel_size=self.kernel_size,
                       stride=self.stride, ceil_mode=self.ceil_mode)  # fmt: skip
        return pool_over(self.n_dims, type(self).__name__, pool, x)

    def extra_repr(self) -> str:  # torch's, stride=None included
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPool):
    """Power-average pooling over (N, C, L) or (C, L), as ``torch.nn.LPPool1d(norm_type,
    kernel_size, stride=None, ceil_mode=False)``: (sum of x^p over each window)^(1/p)."""

    n_dims = 1


class LPPool2d(_LPPool):
    """Power-average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.LPPool2d``."""

    n_dims = 2


class LPPool3d(_LPPool):
    """Power-average pooling over (N, C, D, H, W) or (C, D, H, W), as ``torch.nn.LPPool3d``."""

    n_dims = 3
