"""Adaptive max pooling, as PyTorch's AdaptiveMaxPool1d and AdaptiveMaxPool2d: the output has a
given size whatever the input's, each output position the largest value of its bin.

The bins are adaptive average pooling's (``tricycle.nn.adaptive_pooling``): along an axis of
size L pooled to O, bin i covers [floor(i L / O), ceil((i + 1) L / O)). Bins differ in size
by at most one element, so each is listed as K = the largest bin's size positions, a shorter
bin repeating its last one (a repeat never beats the first of two equal values). Every
output position's candidates are then one gather, (planes, O, K), and the maximum their
``argmax``: the first largest in row-major order, as torch scans a bin. Its position in the
flattened plane (h W + w in 2-D) is torch's index (``return_indices=True``), and the gradient
goes there, bins that overlap adding up.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.layers import Layer
from tricycle.nn.adaptive_pooling import _output_size
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "adaptive_max_pool", "adaptive_max_pool1d",
    "adaptive_max_pool2d",
]  # fmt: skip


def bin_members(size: int, out: int) -> np.ndarray:
    """(out, K) int64: the positions of each adaptive bin of an axis of ``size``, K the
    largest bin's size; a shorter bin repeats its last position."""
    start = np.arange(out) * size // out  # floor(i L / O)
    end = -(-(np.arange(out) + 1) * size // out)  # ceil((i + 1) L / O)
    k = int((end - start).max())
    return np.minimum(start[:, None] + np.arange(k), end[:, None] - 1)


def candidates(sizes, outs) -> np.ndarray:
    """(prod(outs), prod(K)) int64: for each output position (row-major), the flat positions
    (row-major in the plane) of its bin's elements, in torch's scanning order."""
    members = [bin_members(s, o) for s, o in zip(sizes, outs)]
    n, flat = len(sizes), np.zeros((1,) * 2 * len(sizes), dtype=np.int64)
    for a, (size, m) in enumerate(zip(sizes, members)):
        shape = [1] * 2 * n
        shape[a], shape[n + a] = m.shape  # output axes first, then the bin's axes
        flat = flat * size + m.reshape(shape)
    return flat.reshape(math.prod(outs), -1)


def adaptive_max_pool(x: Tensor, output_size, n: int, return_indices: bool = False):
    """Adaptive max pooling of the last ``n`` (1 or 2) axes of x (N, C, *size) or (C, *size)
    to ``output_size`` (an int, or one int or None per axis: None keeps that axis), as
    PyTorch's ``adaptive_max_pool1d``/``adaptive_max_pool2d``. ``return_indices=True``:
    (out, indices), each maximum's flat position in its plane, int64 without gradient."""
    op = f"adaptive_max_pool{n}d"
    x = as_tensor(x)
    out_size = _output_size(output_size, n, op)
    checks.boolean(op, "return_indices", return_indices)
    if x.ndim not in (n + 1, n + 2) or 0 in x.shape:
        raise ValueError(
            f"{op}: expected a non-empty input (batch, channels, *{n} spatial axes) or "
            f"(channels, *{n} spatial axes), got shape {x.shape}"
        )
    xp, lead, sizes = x.xp, x.shape[:-n], x.shape[-n:]
    outs = tuple(s if o is None else o for s, o in zip(sizes, out_size))
    plane = math.prod(sizes)
    planes = x.array.reshape(-1, plane)  # (P, plane)
    bins = xp.asarray(candidates(sizes, outs))  # (O, K)
    pick = planes[:, bins].argmax(axis=-1)  # (P, O): the first largest of each bin
    index = bins[xp.arange(bins.shape[0]), pick]  # (P, O): where it is in the plane
    return picked(x, planes, index, lead + outs, op, return_indices)


def picked(x: Tensor, planes, index, shape: tuple, op: str, return_indices: bool):
    """The entries ``index`` (P, O) of each of x's planes (P, plane), shaped ``shape``: a max
    pool's output once its windows' maxima are found. Each gradient goes back to the entry it
    came from, overlapping windows adding up; with ``return_indices``, (values, indices) as
    torch's max pools give them (the positions in each plane)."""
    xp = x.xp
    rows = xp.arange(planes.shape[0])[:, None]  # (P, 1)

    def back_fn(dout):
        dplanes = xp.zeros(planes.shape, dtype=dout.dtype)
        at = (rows * planes.shape[1] + index).reshape(-1)
        xp.add.at(dplanes.reshape(-1), at, dout.reshape(-1))
        return dplanes.reshape(x.shape)

    out = planes[rows, index].reshape(shape)
    pooled = Tensor(out, args=(x,), back_fns=(back_fn,), name=op)
    if not return_indices:
        return pooled
    return pooled, Tensor(index.reshape(shape), requires_grad=False, name=f"{op} indices")


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Adaptive max pooling of (N, C, L) or (C, L) (``nn.AdaptiveMaxPool1d``'s op)."""
    return adaptive_max_pool(input, output_size, 1, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) (``nn.AdaptiveMaxPool2d``'s op)."""
    return adaptive_max_pool(input, output_size, 2, return_indices)


class _AdaptiveMaxPool(Layer):
    n_dims = 0

    @checks.arguments(return_indices=checks.boolean)
    def __init__(self, output_size, return_indices: bool = False):
        _output_size(output_size, self.n_dims, type(self).__name__)
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: Tensor):
        return adaptive_max_pool(x, self.output_size, self.n_dims, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}" + (
            ", return_indices=True" if self.return_indices else ""
        )


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, L) or (C, L) to (..., output_size), as
    ``torch.nn.AdaptiveMaxPool1d``; ``return_indices=True`` returns (out, indices)."""

    n_dims = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Adaptive max pooling of (N, C, H, W) or (C, H, W) to (..., Ho, Wo), as
    ``torch.nn.AdaptiveMaxPool2d``: ``output_size`` an int (a square) or (Ho, Wo), None
    keeping that axis; ``return_indices=True`` returns (out, indices).
    ``AdaptiveMaxPool2d(1)`` is global max pooling."""

    n_dims = 2
