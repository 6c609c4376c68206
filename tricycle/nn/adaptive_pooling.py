"""Adaptive average pooling, as PyTorch's AdaptiveAvgPool1d and AdaptiveAvgPool2d: the output
has a given size whatever the input's, each output position the mean of its bin of inputs.

Along an axis of size L pooled to O, bin i covers [floor(i L / O), ceil((i + 1) L / O)):
bins of nearly equal size that cover the axis (and overlap where O does not divide L). The
mean over the bins is a linear map, a matrix A (O, L) with A[i, l] = 1 / |bin i| on bin i,
so the pooling is an einsum per axis, and its gradient the einsum's::

    1-D: out = Einsum("...l,il->...i")(x, A)
    2-D: out = Einsum("...iw,jw->...ij")(Einsum("...hw,ih->...iw")(x, A_rows), A_columns)
"""

import numpy as np

from tricycle import checks
from tricycle.einsum import Einsum
from tricycle.layers import Layer
from tricycle.tensor import Tensor

__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "adaptive_avg_pool", "bin_means"]


def bin_means(size: int, out: int) -> np.ndarray:
    """The matrix A (out, size) of the mean over each adaptive bin of an axis of ``size``."""
    means = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -(-(i + 1) * size // out)  # floor, ceil
        means[i, start:end] = 1 / (end - start)
    return means


def _output_size(output_size, n: int, op: str) -> tuple[int | None, ...]:
    """An int, or ``n`` ints or Nones (None keeps the input's size), as a tuple."""
    values = (output_size,) * n if not isinstance(output_size, tuple | list) else output_size
    if len(values) != n or not all(v is None or checks.is_integer(v) for v in values):
        checks.fail(op, "output_size", f"an integer >= 1 or {n} of them (or None)", output_size,
                    TypeError)  # fmt: skip
    if any(v is not None and v < 1 for v in values):
        checks.fail(op, "output_size", f"an integer >= 1 or {n} of them (or None)", output_size)
    return tuple(values)


def adaptive_avg_pool(x: Tensor, output_size, n: int) -> Tensor:
    """Adaptive average pooling of the last ``n`` (1 or 2) axes of x (N, C, *size) or
    (C, *size) to ``output_size`` (an int, or one int or None per axis: None keeps that
    axis), as PyTorch's ``adaptive_avg_pool1d``/``adaptive_avg_pool2d``."""
    op = f"adaptive_avg_pool{n}d"
    out = _output_size(output_size, n, op)
    if x.ndim not in (n + 1, n + 2) or 0 in x.shape:
        raise ValueError(
            f"{op}: expected a non-empty input (batch, channels, *{n} spatial axes) or "
            f"(channels, *{n} spatial axes), got shape {x.shape}"
        )
    sizes = x.shape[-n:]
    means = [
        Tensor(
            x.xp.asarray(bin_means(s, s if o is None else o), dtype=x.dtype), requires_grad=False
        )
        for s, o in zip(sizes, out)
    ]
    if n == 1:
        return Einsum("...l,il->...i")(x, means[0])
    rows = Einsum("...hw,ih->...iw")(x, means[0])  # the rows pooled
    return Einsum("...iw,jw->...ij")(rows, means[1])  # then the columns


class _AdaptiveAvgPool(Layer):
    n_dims = 0

    def __init__(self, output_size):
        _output_size(output_size, self.n_dims, type(self).__name__)
        self.output_size = output_size

    def forward(self, x: Tensor) -> Tensor:
        return adaptive_avg_pool(x, self.output_size, self.n_dims)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """Adaptive average pooling of (N, C, L) or (C, L) to (..., output_size), as
    ``torch.nn.AdaptiveAvgPool1d``."""

    n_dims = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """Adaptive average pooling of (N, C, H, W) or (C, H, W) to (..., Ho, Wo), as
    ``torch.nn.AdaptiveAvgPool2d``: ``output_size`` is an int (a square), or (Ho, Wo) where
    None keeps that axis's size. ``AdaptiveAvgPool2d(1)`` is global average pooling."""

    n_dims = 2
