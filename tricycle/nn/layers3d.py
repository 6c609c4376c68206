"""The 3-D members of torch's layer families that tricycle's 1-D and 2-D modules lacked:
``ConvTranspose3d``, ``InstanceNorm3d``, ``MaxUnpool3d`` (``F.max_unpool3d``),
``AdaptiveAvgPool3d`` and ``AdaptiveMaxPool3d`` (``F.adaptive_avg_pool3d``,
``F.adaptive_max_pool3d``), and the lazy ``LazyConv3d``, ``LazyConvTranspose3d``,
``LazyBatchNorm3d`` with ``LazyInstanceNorm1d/2d/3d``.

Each is its family's op over three spatial axes: the transposed convolution, instance norm,
unpooling and adaptive max pooling already know any number of axes (``tricycle.nn.conv_transpose``,
``instance_norm``, ``unpooling``, ``adaptive_max_pooling``); adaptive average pooling is one
bin-mean matrix per axis, contracted with the input axis by axis (``bin_means``). The lazy
layers read their channels from the first input, as ``tricycle.nn.lazy_conv``'s.
"""

from tricycle.einsum import Einsum
from tricycle.nn.adaptive_max_pooling import _AdaptiveMaxPool, adaptive_max_pool
from tricycle.nn.adaptive_pooling import _AdaptiveAvgPool, _output_size, bin_means
from tricycle.nn.batch_norm import BatchNorm3d
from tricycle.nn.conv import Conv3d
from tricycle.nn.conv_transpose import _ConvTransposeNd
from tricycle.nn.instance_norm import InstanceNorm1d, InstanceNorm2d, _InstanceNorm
from tricycle.nn.lazy_conv import _Lazy, _LazyBatchNorm, _LazyConv, _LazyConvTranspose
from tricycle.nn.unpooling import _MaxUnpool, max_unpool
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "ConvTranspose3d", "InstanceNorm3d",
    "LazyBatchNorm3d", "LazyConv3d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d", "MaxUnpool3d", "adaptive_avg_pool3d",
    "adaptive_max_pool3d", "max_unpool3d",
]  # fmt: skip


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution, as ``torch.nn.ConvTranspose3d``: (N, in_channels, D, H, W)
    -> (N, out_channels, Do, Ho, Wo), each output size as ConvTranspose1d's, or unbatched
    (in_channels, D, H, W) -> (out_channels, Do, Ho, Wo)."""

    n_dims = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of (N, C, D, H, W) (or (C, D, H, W)) over D, H and W, as
    ``torch.nn.InstanceNorm3d``."""

    spatial_axes = 3


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """``max_unpool`` of (N, C, D, H, W) or (C, D, H, W), as torch's ``F.max_unpool3d``."""
    return max_unpool(input, indices, kernel_size, stride, padding, output_size, n=3)


class MaxUnpool3d(_MaxUnpool):
    """Max unpooling of (N, C, D, H, W) or (C, D, H, W) with ``MaxPool3d``'s indices, as
    ``torch.nn.MaxUnpool3d``: ``unpool(x, indices, output_size=None)``."""

    n_dims = 3


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002 - torch's name
    """Adaptive average pooling of (N, C, D, H, W) or (C, D, H, W) to (..., Do, Ho, Wo), as
    torch's ``F.adaptive_avg_pool3d``: ``output_size`` an int or three ints or Nones (None
    keeps that axis). Each axis is pooled by its bin-mean matrix in turn."""
    op = "adaptive_avg_pool3d"
    x = as_tensor(input)
    out = _output_size(output_size, 3, op)
    if x.ndim not in (4, 5) or 0 in x.shape:
        raise ValueError(f"{op}: expected a non-empty input (batch, channels, D, H, W) or "
                         f"(channels, D, H, W), got shape {x.shape}")  # fmt: skip
    means = [
        Tensor(x.xp.asarray(bin_means(s, s if o is None else o), dtype=x.dtype),
               requires_grad=False)
        for s, o in zip(x.shape[-3:], out)
    ]  # fmt: skip
    x = Einsum("...dhw,id->...ihw")(x, means[0])
    x = Einsum("...ihw,jh->...ijw")(x, means[1])
    return Einsum("...ijw,kw->...ijk")(x, means[2])


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Adaptive max pooling of (N, C, D, H, W) or (C, D, H, W), as torch's
    ``F.adaptive_max_pool3d``; ``return_indices=True`` gives (out, indices) too."""
    return adaptive_max_pool(input, output_size, 3, return_indices)


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    """Adaptive average pooling of (N, C, D, H, W) or (C, D, H, W) to (..., Do, Ho, Wo), as
    ``torch.nn.AdaptiveAvgPool3d``."""

    n_dims = 3

    def forward(self, x: Tensor) -> Tensor:
        return adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, D, H, W) or (C, D, H, W) to (..., Do, Ho, Wo), as
    ``torch.nn.AdaptiveMaxPool3d``; ``return_indices=True`` returns (out, indices)."""

    n_dims = 3


# ---------------------------------------------------------------------- lazy layers
class LazyConv3d(_LazyConv, Conv3d):
    """``nn.Conv3d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConv3d``: after the first call a ``Conv3d``."""

    cls_to_become = Conv3d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """``nn.ConvTranspose3d`` whose ``in_channels`` is read from its first input, as
    ``torch.nn.LazyConvTranspose3d``: after the first call a ``ConvTranspose3d``."""

    cls_to_become = ConvTranspose3d


class LazyBatchNorm3d(_LazyBatchNorm, BatchNorm3d):
    """``nn.BatchNorm3d`` whose ``num_features`` is read from its first input (N, C, D, H, W),
    as ``torch.nn.LazyBatchNorm3d``: after the first call a ``BatchNorm3d``."""

    cls_to_become = BatchNorm3d


class _LazyInstanceNorm(_Lazy):
    """The lazy instance norms, as torch's ``LazyInstanceNorm{n}d(eps, momentum, affine=False,
    track_running_stats=False)``: ``num_features`` from the channel axis (1, or 0 unbatched)."""

    size_name = "num_features"

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
    ):
        arguments = dict(
            eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats
        )
        self.cls_to_become.__init__(self, 1, **arguments)  # the stand-in checks them all
        statistics = ("running_mean", "running_var") if track_running_stats else ()
        self.uninitialise(arguments, (("gamma", "beta") if affine else ()) + statistics)

    def read_size(self, x: Tensor) -> int:
        n = self.spatial_axes
        if x.ndim not in (n + 1, n + 2):
            raise ValueError(
                f"{type(self).__name__}: expected input (batch, channels, *{n} spatial axes) "
                f"or (channels, *{n} spatial axes), whose channels give num_features, got "
                f"shape {x.shape}"
            )
        return self._channels(x, x.ndim - n - 1, 1)


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    """``nn.InstanceNorm1d`` whose ``num_features`` is read from its first input, as
    ``torch.nn.LazyInstanceNorm1d``: after the first call an ``InstanceNorm1d``."""

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    """``nn.InstanceNorm2d`` whose ``num_features`` is read from its first input, as
    ``torch.nn.LazyInstanceNorm2d``: after the first call an ``InstanceNorm2d``."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    """``nn.InstanceNorm3d`` whose ``num_features`` is read from its first input, as
    ``torch.nn.LazyInstanceNorm3d``: after the first call an ``InstanceNorm3d``."""

    cls_to_become = InstanceNorm3d
