"""Max and average pooling over the windows of (N, C, L) or (N, C, H, W) inputs, as PyTorch's.

Pooling reuses the convolution's windows (``tricycle.nn.windows``): max pooling sends each
window's gradient to its (first) largest element, as PyTorch does; average pooling spreads
it evenly. Each is a fused op: the forward and backward here are its reference, and a
backend's kernels for "max_pool" and "avg_pool" take their place through ``tricycle.dispatch``.
The layers also take an unbatched input (C, L) or (C, H, W), as PyTorch's, through a batch
axis of 1 (``tricycle.nn.windows.unbatched``).
"""

import math

import numpy as np

from tricycle import checks, dispatch
from tricycle.layers import Layer
from tricycle.nn.windows import (
    as_tuple,
    output_size,
    pad,
    scatter_windows,
    unbatched,
    unpad,
    windows,
)
from tricycle.tensor import Tensor

__all__ = [
    "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "avg_pool", "in_n_dims", "max_pool",
]  # fmt: skip


def _pool_geometry(x: Tensor, kernel_size, stride, padding, n: int, op: str):
    if x.ndim != n + 2:
        raise ValueError(
            f"{op}: expected input (batch, channels, *{n} spatial axes), got shape {x.shape}"
        )
    kernel, stride, padding = _pool_arguments(kernel_size, stride, padding, n, op)
    output_size(x.shape[2:], kernel, stride, padding, (1,) * n, op)
    return kernel, stride, padding


def _pool_arguments(kernel_size, stride, padding, n: int, op: str):
    """(kernel, stride, padding) as tuples of ``n`` ints; stride defaults to the kernel."""
    kernel = as_tuple(kernel_size, n, "kernel_size", op)
    stride = kernel if stride is None else as_tuple(stride, n, "stride", op)
    padding = as_tuple(padding, n, "padding", op, low=0)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(
            f"{op}: padding must be at most half the kernel, got kernel_size {kernel} and "
            f"padding {padding}"
        )
    return kernel, stride, padding


def max_pool_forward(xp, x, kernel, stride, padding):
    """(out, index) for x (N, C, *size): the largest value of each window (padding counts as
    -inf), and where in its window (row-major) the first largest is, which backward takes."""
    n = x.ndim - 2
    view = windows(xp, pad(xp, x, padding, -np.inf), kernel, stride, (1,) * n)
    K, out_shape = math.prod(kernel), view.shape[2 + n :]
    flat = view.reshape(x.shape[:2] + (K,) + out_shape)  # a copy: one window per column
    index = flat.argmax(axis=2)[:, :, None]  # (N, C, 1, *out): the first maximum
    out = xp.take_along_axis(flat, index, axis=2)[:, :, 0]
    return out, index.astype(np.uint8 if K < 256 else np.int64)


def max_pool_backward(xp, dout, index, x_shape, kernel, stride, padding):
    """dx (x_shape): each window's gradient at its first largest element (``index``),
    overlapping windows added up."""
    n, K = len(kernel), math.prod(kernel)
    positions = xp.arange(K, dtype=index.dtype).reshape((1, 1, K) + (1,) * n)
    dflat = (positions == index) * dout[:, :, None]  # the gradient at each argmax
    dview = dflat.reshape(x_shape[:2] + tuple(kernel) + dout.shape[2:])
    padded = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
    return unpad(scatter_windows(xp, dview, padded, stride, (1,) * n), padding)


def _window_counts(xp, x_shape, kernel, stride, padding, count_include_pad, dtype):
    """What each window's sum is divided by: the window's size, or with
    ``count_include_pad=False`` its elements that are not padding, (1, 1, *out)."""
    if count_include_pad or not any(padding):
        return math.prod(kernel)
    ones = pad(xp, xp.ones((1, 1) + tuple(x_shape[2:]), dtype=dtype), padding)
    view = windows(xp, ones, kernel, stride, (1,) * len(kernel))
    return view.sum(axis=tuple(range(2, 2 + len(kernel))))


def avg_pool_forward(xp, x, kernel, stride, padding, count_include_pad):
    """The mean of each window of x (N, C, *size) (zero padding)."""
    n = x.ndim - 2
    view = windows(xp, pad(xp, x, padding), kernel, stride, (1,) * n)
    count = _window_counts(xp, x.shape, kernel, stride, padding, count_include_pad, x.dtype)
    return (view.sum(axis=tuple(range(2, 2 + n))) / count).astype(x.dtype, copy=False)


def avg_pool_backward(xp, dout, x_shape, kernel, stride, padding, count_include_pad):
    """dx (x_shape): each window's gradient shared evenly among its elements."""
    n = len(kernel)
    count = _window_counts(xp, x_shape, kernel, stride, padding, count_include_pad, dout.dtype)
    axes = tuple(range(2, 2 + n))
    share = xp.expand_dims(dout / count, axes)  # (N, C, 1.., *out): each element's part
    dview = xp.broadcast_to(share, x_shape[:2] + tuple(kernel) + dout.shape[2:])
    padded = tuple(s + 2 * p for s, p in zip(x_shape[2:], padding))
    return unpad(scatter_windows(xp, dview, padded, stride, (1,) * n), padding)


def max_pool(x: Tensor, kernel_size, stride=None, padding=0) -> Tensor:
    """The largest value of each window (padding counts as -inf), as PyTorch's
    ``max_pool1d``/``max_pool2d``; the gradient goes to the first largest element of each
    window (overlapping windows add up). ``stride`` defaults to ``kernel_size``."""
    n = x.ndim - 2
    op = f"max_pool{n}d"
    kernel, stride, padding = _pool_geometry(x, kernel_size, stride, padding, n, op)
    xp = x.xp
    forward, backward = dispatch.choose("max_pool", (max_pool_forward, max_pool_backward), x.array)
    out, index = forward(xp, x.array, kernel, stride, padding)

    def back_fn(dout):
        return backward(xp, dout, index, x.shape, kernel, stride, padding)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name=op)


def avg_pool(
    x: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:  # fmt: skip
    """The mean of each window, as PyTorch's ``avg_pool1d``/``avg_pool2d``: zero padding
    counts in the mean unless ``count_include_pad=False``. ``stride`` defaults to
    ``kernel_size``; ``ceil_mode`` (PyTorch's fourth argument) must be False."""
    n = x.ndim - 2
    op = f"avg_pool{n}d"
    if ceil_mode:
        raise ValueError(f"{op}: ceil_mode=True is not supported")
    kernel, stride, padding = _pool_geometry(x, kernel_size, stride, padding, n, op)
    xp = x.xp
    forward, backward = dispatch.choose("avg_pool", (avg_pool_forward, avg_pool_backward), x.array)
    out = forward(xp, x.array, kernel, stride, padding, count_include_pad)

    def back_fn(dout):
        return backward(xp, dout, x.shape, kernel, stride, padding, count_include_pad)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name=op)


def pool_over(n: int, name: str, pool, x: Tensor) -> Tensor:
    """``pool(x)`` over exactly ``n`` spatial axes: x (N, C, *n), or unbatched (C, *n)
    through a batch axis of 1; any other rank is an error naming ``name``. (``max_pool`` and
    ``avg_pool`` read the number of axes from x's rank, which cannot tell an unbatched
    (C, H, W) from a batched (N, C, L).)"""
    if x.ndim == n + 1:
        return unbatched(pool, x)
    if x.ndim != n + 2:
        raise ValueError(
            f"{name}: expected input (batch, channels, *{n} spatial axes) or unbatched "
            f"(channels, *{n} spatial axes), got shape {x.shape}"
        )
    return pool(x)


def in_n_dims(pool, n: int):
    """``pool`` (``max_pool`` or ``avg_pool``) as PyTorch's functional ``max_pool{n}d`` /
    ``avg_pool{n}d``, over ``n`` spatial axes whatever x's rank (``pool_over``)."""
    name = f"{pool.__name__}{n}d"

    def pool_nd(x: Tensor, *args, **kwargs) -> Tensor:
        return pool_over(n, name, lambda batch: pool(batch, *args, **kwargs), x)

    pool_nd.__name__ = pool_nd.__qualname__ = name
    pool_nd.__doc__ = f"``{pool.__name__}`` of x (N, C, *{n}) or unbatched (C, *{n})."
    return pool_nd


class _Pool(Layer):
    n_dims = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        _pool_arguments(kernel_size, stride, padding, self.n_dims, type(self).__name__)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor) -> Tensor:
        """The pooling of x (N, C, *size), or of an unbatched x (C, *size) -> (C, *out)."""
        return pool_over(self.n_dims, type(self).__name__, self.pool, x)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPool(_Pool):
    def pool(self, x: Tensor) -> Tensor:
        return max_pool(x, self.kernel_size, self.stride, self.padding)


class _AvgPool(_Pool):
    @checks.arguments(ceil_mode=checks.boolean, count_include_pad=checks.boolean)
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):  # fmt: skip
        if ceil_mode:
            raise ValueError(f"{type(self).__name__}: ceil_mode=True is not supported")
        super().__init__(kernel_size, stride, padding)
        self.count_include_pad = count_include_pad

    def pool(self, x: Tensor) -> Tensor:
        return avg_pool(x, self.kernel_size, self.stride, self.padding,
                        count_include_pad=self.count_include_pad)  # fmt: skip


class MaxPool1d(_MaxPool):
    """Max pooling over (N, C, L) or (C, L), as ``torch.nn.MaxPool1d`` (stride defaults to
    the kernel)."""

    n_dims = 1


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.MaxPool2d`` (stride defaults
    to the kernel)."""

    n_dims = 2


class AvgPool1d(_AvgPool):
    """Average pooling over (N, C, L) or (C, L), as ``torch.nn.AvgPool1d``."""

    n_dims = 1


class AvgPool2d(_AvgPool):
    """Average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.AvgPool2d``."""

    n_dims = 2
