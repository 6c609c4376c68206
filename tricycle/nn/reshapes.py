"""Layers that only move values around, under PyTorch's names: ``Unflatten`` (one axis split
into several, the inverse of ``Flatten``) and ``PixelShuffle``/``PixelUnshuffle`` with their
functions ``pixel_shuffle``/``pixel_unshuffle`` (channels traded for resolution, as in
sub-pixel convolution).

Each is a reshape and, for the pixel shuffles, a transpose (``tricycle.ops``), so the
gradients are those ops' own: the values go back where they came from. With r the factor::

    pixel_shuffle    (*, C r r, H, W) -> (*, C, r, r, H, W) -> (*, C, H, r, W, r)
                                      -> (*, C, H r, W r)
    pixel_unshuffle  the same steps backwards

so out[c, h r + i, w r + j] = x[c r r + i r + j, h, w], PyTorch's order.
"""

import math

from tricycle import checks, ops
from tricycle.layers import Layer
from tricycle.tensor import Tensor, as_tensor

__all__ = ["PixelShuffle", "PixelUnshuffle", "Unflatten", "pixel_shuffle", "pixel_unshuffle"]


# ====================================================================== pixel shuffles


def _image(op: str, x: Tensor) -> tuple[tuple[int, ...], int, int, int]:
    """(batch axes, C, H, W) of x (*, C, H, W), or a ValueError."""
    if x.ndim < 3:
        raise ValueError(f"{op}: expected an input (*, channels, height, width) with at least 3 "
                         f"axes, got shape {x.shape}")  # fmt: skip
    return x.shape[:-3], *x.shape[-3:]


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002 - torch's name
    """(*, C r^2, H, W) -> (*, C, H r, W r) with r = ``upscale_factor``, as PyTorch's
    ``F.pixel_shuffle``: each group of r^2 channels becomes an r x r block of pixels."""
    op = "pixel_shuffle"
    r = checks.positive_int(op, "upscale_factor", upscale_factor)
    x = as_tensor(input)
    batch, C, H, W = _image(op, x)
    if C % (r * r):
        raise ValueError(f"{op}: the channels of input {x.shape} ({C}) must be divisible by "
                         f"upscale_factor ** 2 = {r * r}")  # fmt: skip
    b = len(batch)
    x = ops.reshape(x, (*batch, C // (r * r), r, r, H, W))
    x = ops.permute(x, (*range(b), b, b + 3, b + 1, b + 4, b + 2))  # (*, C, H, r, W, r)
    return ops.reshape(x, (*batch, C // (r * r), H * r, W * r))


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002 - torch's
    """(*, C, H r, W r) -> (*, C r^2, H, W) with r = ``downscale_factor``, as PyTorch's
    ``F.pixel_unshuffle``: the inverse of ``pixel_shuffle``."""
    op = "pixel_unshuffle"
    r = checks.positive_int(op, "downscale_factor", downscale_factor)
    x = as_tensor(input)
    batch, C, H, W = _image(op, x)
    if H % r or W % r:
        raise ValueError(f"{op}: the height and width of input {x.shape} ({H}, {W}) must be "
                         f"divisible by downscale_factor = {r}")  # fmt: skip
    b = len(batch)
    x = ops.reshape(x, (*batch, C, H // r, r, W // r, r))
    x = ops.permute(x, (*range(b), b, b + 2, b + 4, b + 1, b + 3))  # (*, C, r, r, H, W)
    return ops.reshape(x, (*batch, C * r * r, H // r, W // r))


class PixelShuffle(Layer):
    """(*, C r^2, H, W) -> (*, C, H r, W r), as ``torch.nn.PixelShuffle(upscale_factor)``."""

    @checks.arguments(upscale_factor=checks.positive_int)
    def __init__(self, upscale_factor: int):
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Layer):
    """(*, C, H r, W r) -> (*, C r^2, H, W), as ``torch.nn.PixelUnshuffle(downscale_factor)``."""

    @checks.arguments(downscale_factor=checks.positive_int)
    def __init__(self, downscale_factor: int):
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


# ====================================================================== Unflatten


def _sizes(sizes) -> tuple[int, ...]:
    """``unflattened_size``: integers >= 1, of which one may be -1 (the size left over)."""
    expected = "a tuple or list of integers >= 1, one of which may be -1"
    if not isinstance(sizes, tuple | list) or not all(map(checks.is_integer, sizes)):
        checks.fail("Unflatten", "unflattened_size", expected, sizes, TypeError)
    if not sizes or sum(s == -1 for s in sizes) > 1 or any(s < 1 and s != -1 for s in sizes):
        checks.fail("Unflatten", "unflattened_size", expected, sizes)
    return tuple(int(s) for s in sizes)


class Unflatten(Layer):
    """Split axis ``dim`` into the axes ``unflattened_size``, as ``torch.nn.Unflatten``: with
    ``Unflatten(1, (C, H, W))``, (N, C H W) -> (N, C, H, W), the inverse of ``Flatten()``.
    One size may be -1, the size that is left over."""

    @checks.arguments(dim=checks.integer)
    def __init__(self, dim: int, unflattened_size):
        self.dim, self.unflattened_size = dim, _sizes(unflattened_size)

    def forward(self, x: Tensor) -> Tensor:
        x = as_tensor(x)
        axis = checks.axis("Unflatten", "dim", self.dim, x.ndim, x.shape)
        n, known = x.shape[axis], math.prod(s for s in self.unflattened_size if s != -1)
        fits = n % known == 0 if -1 in self.unflattened_size else n == known
        if not fits:
            raise ValueError(
                f"Unflatten: sizes {self.unflattened_size} do not multiply up to the size of "
                f"dim {self.dim} ({n}) of input {x.shape}"
            )
        sizes = tuple(n // known if s == -1 else s for s in self.unflattened_size)
        return ops.reshape(x, x.shape[:axis] + sizes + x.shape[axis + 1 :])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
