"""Max and average pooling over the windows of (N, C, L) or (N, C, H, W) inputs, as PyTorch's.

Pooling reuses the convolution's windows (``tricycle.windows``): max pooling sends each
window's gradient to its (first) largest element, as PyTorch does; average pooling spreads
it evenly.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.layers import Layer
from tricycle.tensor import Tensor
from tricycle.windows import as_tuple, output_size, pad, scatter_windows, unpad, windows

__all__ = ["AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "avg_pool", "max_pool"]


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


def max_pool(x: Tensor, kernel_size, stride=None, padding=0) -> Tensor:
    """The largest value of each window (padding counts as -inf), as PyTorch's
    ``max_pool1d``/``max_pool2d``; the gradient goes to the first largest element of each
    window (overlapping windows add up). ``stride`` defaults to ``kernel_size``."""
    n = x.ndim - 2
    op = f"max_pool{n}d"
    kernel, stride, padding = _pool_geometry(x, kernel_size, stride, padding, n, op)
    xp, dilation = x.xp, (1,) * n
    padded = pad(xp, x.array, padding, -np.inf)
    view = windows(xp, padded, kernel, stride, dilation)  # (N, C, *kernel, *out)
    K, out_shape = math.prod(kernel), view.shape[2 + n :]
    flat = view.reshape(x.shape[:2] + (K,) + out_shape)  # a copy: one window per column
    index = flat.argmax(axis=2)[:, :, None]  # (N, C, 1, *out): the first maximum
    out = xp.take_along_axis(flat, index, axis=2)[:, :, 0]
    index = index.astype(np.uint8 if K < 256 else np.int64)  # kept for backward

    def back_fn(dout):
        positions = xp.arange(K, dtype=index.dtype).reshape((1, 1, K) + (1,) * n)
        dflat = (positions == index) * dout[:, :, None]  # the gradient at each argmax
        dview = dflat.reshape(view.shape)
        return unpad(scatter_windows(xp, dview, padded.shape[2:], stride, dilation), padding)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name=op)


def avg_pool(
    x: Tensor, kernel_size, stride=None, padding=0, count_include_pad: bool = True
) -> Tensor:
    """The mean of each window, as PyTorch's ``avg_pool1d``/``avg_pool2d``: zero padding
    counts in the mean unless ``count_include_pad=False``. ``stride`` defaults to
    ``kernel_size``."""
    n = x.ndim - 2
    op = f"avg_pool{n}d"
    kernel, stride, padding = _pool_geometry(x, kernel_size, stride, padding, n, op)
    xp, dilation = x.xp, (1,) * n
    padded_size = tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    axes = tuple(range(2, 2 + n))
    view = windows(xp, pad(xp, x.array, padding), kernel, stride, dilation)
    if count_include_pad or not any(padding):
        count = math.prod(kernel)
    else:  # how many elements of each window are real: the pooled sum of an unpadded ones
        ones = pad(xp, xp.ones((1, 1) + x.shape[2:], dtype=x.dtype), padding)
        count = windows(xp, ones, kernel, stride, dilation).sum(axis=axes)  # (1, 1, *out)
    out = view.sum(axis=axes) / count

    def back_fn(dout):
        share = xp.expand_dims(dout / count, axes)  # (N, C, 1.., *out): each element's part
        dview = xp.broadcast_to(share, view.shape)
        return unpad(scatter_windows(xp, dview, padded_size, stride, dilation), padding)

    return Tensor(
        out.astype(x.dtype, copy=False),
        args=(x,),
        back_fns=(back_fn,),
        name=op,
    )


class _Pool(Layer):
    n_dims = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        _pool_arguments(kernel_size, stride, padding, self.n_dims, type(self).__name__)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def _check(self, x: Tensor) -> None:
        if x.ndim != self.n_dims + 2:
            raise ValueError(
                f"{type(self).__name__}: expected input (batch, channels, "
                f"*{self.n_dims} spatial axes), got shape {x.shape}"
            )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _MaxPool(_Pool):
    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        return max_pool(x, self.kernel_size, self.stride, self.padding)


class _AvgPool(_Pool):
    @checks.arguments(count_include_pad=checks.boolean)
    def __init__(self, kernel_size, stride=None, padding=0, count_include_pad: bool = True):
        super().__init__(kernel_size, stride, padding)
        self.count_include_pad = count_include_pad

    def forward(self, x: Tensor) -> Tensor:
        self._check(x)
        return avg_pool(x, self.kernel_size, self.stride, self.padding, self.count_include_pad)


class MaxPool1d(_MaxPool):
    """Max pooling over (N, C, L), as ``torch.nn.MaxPool1d`` (stride defaults to the kernel)."""

    n_dims = 1


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W), as ``torch.nn.MaxPool2d`` (stride defaults to the
    kernel)."""

    n_dims = 2


class AvgPool1d(_AvgPool):
    """Average pooling over (N, C, L), as ``torch.nn.AvgPool1d``."""

    n_dims = 1


class AvgPool2d(_AvgPool):
    """Average pooling over (N, C, H, W), as ``torch.nn.AvgPool2d``."""

    n_dims = 2
