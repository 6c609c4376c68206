"""torch's functional names that are existing ops under another name or signature:
``F.conv1d/2d/3d`` and ``F.conv_transpose1d/2d/3d`` (torch's argument names and weight
layouts, (out, in / groups, *k) and (in, out / groups, *k)), ``F.max_pool1d/2d/3d_with_indices``
and ``F.adaptive_max_pool1d/2d/3d_with_indices`` (the pooling with ``return_indices=True``:
always (out, indices)), ``F.pdist`` (``tricycle.pdist``) and torch's deprecated ``F.upsample``,
``F.upsample_nearest`` and ``F.upsample_bilinear`` (``F.interpolate``, with torch's warning;
bilinear with ``align_corners=True``, as torch's).
"""

import warnings

from tricycle.nn.adaptive_max_pooling import adaptive_max_pool
from tricycle.nn.conv import conv
from tricycle.nn.conv_transpose import conv_transpose
from tricycle.nn.interpolate import interpolate
from tricycle.nn.pooling import max_pool, pool_over
from tricycle.tensor import Tensor, as_tensor
from tricycle.torch_statistics import pdist

__all__ = [
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "pdist", "upsample", "upsample_bilinear", "upsample_nearest",
]  # fmt: skip


def _spatial(op: str, weight, n: int) -> Tensor:
    """``weight`` as a Tensor of n spatial axes (batch-less shapes are the op's to check)."""
    w = as_tensor(weight)
    if w.ndim != n + 2:
        raise ValueError(f"{op}: expected weight with {n + 2} dimensions (channels, channels, "
                         f"*{n} kernel axes), got shape {w.shape}")  # fmt: skip
    return w


def _convolution(n: int):
    name = f"conv{n}d"

    def conv_nd(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):  # noqa: A002
        return conv(as_tensor(input), _spatial(name, weight, n), bias, stride, padding, dilation,
                    groups)  # fmt: skip

    conv_nd.__name__ = conv_nd.__qualname__ = name
    conv_nd.__doc__ = (
        f"torch's ``F.{name}``: the cross-correlation of (N, C_in, *{n}) or (C_in, *{n}) with "
        f"weight (C_out, C_in / groups, *{n} kernel axes), torch's argument names and order "
        "(``tricycle.nn.conv.conv``)."
    )
    return conv_nd


conv1d, conv2d, conv3d = map(_convolution, (1, 2, 3))


def _transposed(n: int):
    name = f"conv_transpose{n}d"

    def conv_transpose_nd(input, weight, bias=None, stride=1, padding=0, output_padding=0,  # noqa: A002
                          groups: int = 1, dilation=1) -> Tensor:  # fmt: skip
        w = _spatial(name, weight, n)
        return conv_transpose(as_tensor(input), w, bias, stride, padding, output_padding,
                              groups, dilation)  # fmt: skip

    conv_transpose_nd.__name__ = conv_transpose_nd.__qualname__ = name
    conv_transpose_nd.__doc__ = (
        f"torch's ``F.{name}``: the transposed convolution of (N, C_in, *{n}) or (C_in, *{n}) "
        f"with weight (C_in, C_out / groups, *{n} kernel axes), torch's argument order "
        "(``tricycle.nn.conv_transpose.conv_transpose``)."
    )
    return conv_transpose_nd


conv_transpose1d, conv_transpose2d, conv_transpose3d = map(_transposed, (1, 2, 3))


def _max_pool_with_indices(n: int):
    name = f"max_pool{n}d_with_indices"

    def pool(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,  # noqa: A002
             return_indices: bool = False) -> tuple[Tensor, Tensor]:  # fmt: skip
        def batch_pool(batch):
            return max_pool(batch, kernel_size, stride, padding, dilation, ceil_mode, True)

        return pool_over(n, name, batch_pool, as_tensor(input))

    pool.__name__ = pool.__qualname__ = name
    pool.__doc__ = (
        f"torch's ``F.{name}``: ``max_pool{n}d`` with its indices, always (out, indices) "
        "(``return_indices`` is accepted and ignored, as torch's)."
    )
    return pool


max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices = map(
    _max_pool_with_indices, (1, 2, 3)
)


def _adaptive_with_indices(n: int):
    name = f"adaptive_max_pool{n}d_with_indices"

    def pool(input, output_size, return_indices: bool = False) -> tuple[Tensor, Tensor]:  # noqa: A002
        return adaptive_max_pool(input, output_size, n, True)

    pool.__name__ = pool.__qualname__ = name
    pool.__doc__ = (
        f"torch's ``F.{name}``: ``adaptive_max_pool{n}d`` with its indices, always "
        "(out, indices) (``return_indices`` is accepted and ignored, as torch's)."
    )
    return pool


adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices = map(
    _adaptive_with_indices, (1, 2)
)
adaptive_max_pool3d_with_indices = _adaptive_with_indices(3)


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):  # noqa: A002
    """torch's deprecated ``F.upsample``: ``F.interpolate``, with torch's warning."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)  # fmt: skip
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    """torch's deprecated ``F.upsample_nearest``: nearest ``F.interpolate``, with its warning."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)  # fmt: skip
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """torch's deprecated ``F.upsample_bilinear``: bilinear ``F.interpolate`` with
    ``align_corners=True``, as torch's, with its warning."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)  # fmt: skip
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
