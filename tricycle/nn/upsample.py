"""Nearest-neighbour upsampling of (N, C, *spatial) inputs by integer factors, as PyTorch's
``Upsample(scale_factor=s, mode="nearest")``: every element becomes a block of s_1 x ... x s_d
copies of itself::

    out[n, c, h, w] = x[n, c, h // s_1, w // s_2]

Its backward sums each block of the output's gradient back onto the element it copies. Both
are one reshape away from a broadcast and a sum: the output viewed as (N, C, H, s_1, W, s_2)
is x viewed as (N, C, H, 1, W, 1) broadcast along the s axes.
"""

from tricycle import checks
from tricycle.backend import check_same_device
from tricycle.layers import Layer
from tricycle.nn.windows import as_tuple
from tricycle.tensor import Tensor

__all__ = ["Upsample", "upsample_nearest"]


def _interleaved(size, scale, ones: bool) -> tuple[int, ...]:
    """(H, s_1, W, s_2, ...), or (H, 1, W, 1, ...) when ``ones``."""
    return tuple(n for pair in zip(size, scale) for n in (pair[0], 1 if ones else pair[1]))


def upsample_nearest(x: Tensor, scale_factor=2) -> Tensor:
    """(N, C, *size) -> (N, C, *(size * scale_factor)), each element repeated
    ``scale_factor`` times along each spatial axis (an int, or one int per axis)."""
    if x.ndim < 3:
        raise ValueError(
            f"upsample_nearest: expected input (batch, channels, *spatial), got shape {x.shape}"
        )
    spatial = x.ndim - 2
    scale = as_tuple(scale_factor, spatial, "scale_factor", "upsample_nearest")
    xp = check_same_device("upsample_nearest", x.array)
    lead, size = x.shape[:2], x.shape[2:]
    blocks = lead + _interleaved(size, scale, ones=False)  # (N, C, H, s_1, W, s_2)
    out_shape = lead + tuple(n * s for n, s in zip(size, scale))
    repeated = xp.broadcast_to(x.array.reshape(lead + _interleaved(size, scale, True)), blocks)
    out = xp.ascontiguousarray(repeated).reshape(out_shape)
    block_axes = tuple(range(3, 2 + 2 * spatial, 2))  # the s axes

    def back_fn(dout):  # (N, C, H s_1, W s_2) -> (N, C, H, W): each block's sum
        return dout.reshape(blocks).sum(axis=block_axes)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name="upsample_nearest")


class Upsample(Layer):
    """Nearest-neighbour upsampling by an integer ``scale_factor`` (or one per spatial axis),
    as ``torch.nn.Upsample(scale_factor=..., mode="nearest")``."""

    @checks.arguments(mode=checks.one_of(["nearest"]))
    def __init__(self, size=None, scale_factor=None, mode: str = "nearest"):
        if size is not None or scale_factor is None:  # PyTorch's first argument is size
            raise ValueError("Upsample: give scale_factor= (an integer >= 1, or one per "
                             "spatial axis); an output size is not supported")  # fmt: skip
        factors = scale_factor if isinstance(scale_factor, tuple | list) else [scale_factor]
        for factor in factors:
            checks.positive_int("Upsample", "scale_factor", factor)
        self.scale_factor, self.mode = scale_factor, mode

    def forward(self, x: Tensor) -> Tensor:
        return upsample_nearest(x, self.scale_factor)

    def extra_repr(self) -> str:
        return f"scale_factor={self.scale_factor}, mode={self.mode!r}"
