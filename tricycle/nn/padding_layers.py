"""Padding layers under PyTorch's names: ``ZeroPad1d/2d/3d``, ``ConstantPad1d/2d/3d``,
``ReflectionPad1d/2d/3d``, ``ReplicationPad1d/2d/3d`` and ``CircularPad1d/2d/3d``.

Each pads the last n axes of its input (n = 1, 2, 3: the digit in its name) in one mode of
the pad op, ``tricycle.nn.padding.pad`` (``F.pad``), which holds the formulas and their
backward: a layer only keeps its ``padding`` and checks its input. ``padding`` is an int (the
same on every side) or 2n ints in ``F.pad``'s order, the last axis first::

    ReflectionPad2d((left, right, top, bottom))(x)   # x (N, C, H, W) -> (N, C, H + top +
                                                     #   bottom, W + left + right)

As torch's, the constant modes pad any input with at least n axes, the others an input
(N, C, *n axes) or unbatched (C, *n axes); reflect padding must be smaller than the axis it
pads, circular padding at most its size. A negative padding crops, as torch's:
``ZeroPad2d(-2)`` takes two rows and columns off each side (``ZeroPad2d(2)`` undone).
"""

from tricycle import checks
from tricycle.layers import Layer
from tricycle.nn.padding import pad
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]  # fmt: skip


class _PadNd(Layer):
    """What the padding layers share: ``padding`` as 2n ints, the check of the input's rank
    and the call of the pad op in the layer's ``mode``."""

    n_dims = 0
    mode = "constant"

    def __init__(self, padding, value: float = 0.0):
        name = type(self).__name__
        n = 2 * self.n_dims  # a negative padding crops, as torch's
        if checks.is_integer(padding):
            padding = (padding,) * n
        if not isinstance(padding, tuple | list) or not all(map(checks.is_integer, padding)):
            checks.fail(name, "padding", f"an integer or {n} of them", padding, TypeError)
        if len(padding) != n:
            checks.fail(name, "padding", f"an integer or {n} of them", padding)
        self.padding = tuple(int(p) for p in padding)
        self.value = checks.real(name, "value", value)

    def forward(self, x: Tensor) -> Tensor:
        x = as_tensor(x)
        n, name = self.n_dims, type(self).__name__
        if self.mode == "constant":  # any rank with the n axes to pad, as torch's
            if x.ndim < n:
                raise ValueError(f"{name}: expected an input with at least {n} axes to pad, "
                                 f"got shape {x.shape}")  # fmt: skip
        elif x.ndim not in (n + 1, n + 2):
            raise ValueError(
                f"{name}: expected input (batch, channels, *{n} axes to pad) or unbatched "
                f"(channels, *{n} axes to pad), got shape {x.shape}"
            )
        try:
            return pad(x, self.padding, self.mode, self.value)
        except ValueError as error:  # the pad op's message, under the layer's name
            raise ValueError(f"{name}({self.padding}): {error}") from None

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last axis with ``value``, as ``torch.nn.ConstantPad1d``: padding (left, right)."""

    n_dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two axes with ``value``, as ``torch.nn.ConstantPad2d``: padding (left,
    right, top, bottom)."""

    n_dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three axes with ``value``, as ``torch.nn.ConstantPad3d``: padding (left,
    right, top, bottom, front, back)."""

    n_dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last axis with zeros, as ``torch.nn.ZeroPad1d``: padding (left, right)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ZeroPad2d(ConstantPad2d):
    """Pad the last two axes with zeros, as ``torch.nn.ZeroPad2d``: padding (left, right, top,
    bottom)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ZeroPad3d(ConstantPad3d):
    """Pad the last three axes with zeros, as ``torch.nn.ZeroPad3d``."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class _ModePadNd(_PadNd):
    """A padding layer of a mode that reads the input itself (no value to give)."""

    def __init__(self, padding):
        super().__init__(padding)


class ReflectionPad1d(_ModePadNd):
    """Pad (N, C, L) or (C, L) with the mirror image of the last axis, the edge not repeated,
    as ``torch.nn.ReflectionPad1d``: padding (left, right), each smaller than L."""

    n_dims, mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad (N, C, H, W) or (C, H, W) by reflection, as ``torch.nn.ReflectionPad2d``."""

    n_dims, mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad (N, C, D, H, W) or (C, D, H, W) by reflection, as ``torch.nn.ReflectionPad3d``."""

    n_dims, mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad (N, C, L) or (C, L) by repeating the edge elements, as
    ``torch.nn.ReplicationPad1d``."""

    n_dims, mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad (N, C, H, W) or (C, H, W) by repeating the edges, as ``torch.nn.ReplicationPad2d``."""

    n_dims, mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad (N, C, D, H, W) or (C, D, H, W) by repeating the edges, as
    ``torch.nn.ReplicationPad3d``."""

    n_dims, mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    """Pad (N, C, L) or (C, L) with the other end of the last axis (wrapped round), as
    ``torch.nn.CircularPad1d``: padding (left, right), each at most L."""

    n_dims, mode = 1, "circular"


class CircularPad2d(_ModePadNd):
    """Pad (N, C, H, W) or (C, H, W) circularly, as ``torch.nn.CircularPad2d``."""

    n_dims, mode = 2, "circular"


class CircularPad3d(_ModePadNd):
    """Pad (N, C, D, H, W) or (C, D, H, W) circularly, as ``torch.nn.CircularPad3d``."""

    n_dims, mode = 3, "circular"
