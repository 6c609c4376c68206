"""The upsampling layers, as PyTorch's: ``Upsample`` in every mode of ``F.interpolate``
(``tricycle.nn.interpolate``, where the coordinates and the ops live), and the two fixed
ones torch keeps for old code, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d`` (the
latter with align_corners=True). The layers hold settings only: no parameters.
"""

from tricycle import checks
from tricycle.layers import Layer
from tricycle.nn.interpolate import check_settings, interpolate, upsample_nearest
from tricycle.tensor import Tensor

__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "upsample_nearest"]


class Upsample(Layer):
    """Resizes (N, C, *spatial) to ``size`` or by ``scale_factor`` in ``mode`` ("nearest",
    "nearest-exact", "linear", "bilinear", "bicubic", "trilinear" or "area"), as
    ``torch.nn.Upsample``: torch's arguments in torch's order, size first."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ):
        owner = type(self).__name__
        check_settings(owner, size, scale_factor, mode, align_corners)
        checks.boolean(owner, "recompute_scale_factor", recompute_scale_factor, optional=True)
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners,
                           self.recompute_scale_factor)  # fmt: skip

    def extra_repr(self) -> str:
        size = self.size is not None
        given = f"size={self.size}" if size else f"scale_factor={self.scale_factor}"
        corners = "" if self.align_corners is None else f", align_corners={self.align_corners}"
        return f"{given}, mode={self.mode!r}{corners}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour upsampling of (N, C, H, W), as ``torch.nn.UpsamplingNearest2d``:
    ``Upsample(size, scale_factor, mode="nearest")``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear upsampling of (N, C, H, W) with corner pixels aligned, as
    ``torch.nn.UpsamplingBilinear2d``: ``Upsample(size, scale_factor, mode="bilinear",
    align_corners=True)``."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
