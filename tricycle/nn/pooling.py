"""Max and average pooling over the windows of (N, C, L) or (N, C, H, W) inputs, as PyTorch's.

Pooling reuses the convolution's windows (``tricycle.nn.windows``): max pooling sends each
window's gradient to its (first) largest element, as PyTorch does; average pooling spreads
it evenly. Each is a fused op: the forward and backward here are its reference, and a
backend's kernels for "max_pool" and "avg_pool" take their place through ``tricycle.dispatch``.
The layers also take an unbatched input (C, L) or (C, H, W), as PyTorch's, through a batch
axis of 1 (``pool_over``). Max pooling with ``return_indices=True`` also gives torch's
indices, where each maximum lies in its plane of the input (``input_indices``), which
``tricycle.nn.unpooling``'s ``max_unpool`` takes.
"""

import math

import numpy as np

from tricycle import checks, dispatch, ops
from tricycle.layers import Layer
from tricycle.nn.windows import (
    as_tuple,
    output_size,
    pad,
    scatter_windows,
    unpad,
    windows,
)
from tricycle.tensor import Tensor

__all__ = [
    "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "avg_pool", "in_n_dims", "input_indices",
    "max_pool",
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


def input_indices(xp, index, x_shape, kernel, stride, padding):
    """torch's indices of max pooling, (N, C, *out) int64: where each window's maximum lies in
    its plane of the input, flattened row-major (h W + w in 2-D), from ``max_pool_forward``'s
    ``index`` within the window. (A window of -inf alone may pick its padding: then it names
    the window's first element inside the input, as torch's does.)"""
    at = index[:, :, 0].astype(np.int64)  # (N, C, *out): row-major within the window
    n, out_shape = len(kernel), at.shape[2:]
    flat = xp.zeros_like(at)
    for a, size in enumerate(x_shape[2:]):
        offset = (at // math.prod(kernel[a + 1 :])) % kernel[a]  # along axis a, in the window
        start = xp.arange(out_shape[a]) * stride[a] - padding[a]  # each window's first element
        start = start.reshape((-1,) + (1,) * (n - 1 - a))
        flat = flat * size + xp.clip(start + offset, 0, size - 1)
    return flat


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


def _only_torch_defaults(op: str, n: int, dilation, ceil_mode) -> None:
    """Raise for the settings of torch's max pooling that tricycle's does not have."""
    if as_tuple(dilation, n, "dilation", op) != (1,) * n:
        raise ValueError(f"{op}: dilation must be 1 (dilated pooling is not supported), got "
                         f"{dilation!r}")  # fmt: skip
    if checks.boolean(op, "ceil_mode", ceil_mode):
        raise ValueError(f"{op}: ceil_mode=True is not supported")


def max_pool(
    x: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
    return_indices: bool = False,
):  # fmt: skip
    """The largest value of each window (padding counts as -inf), as PyTorch's
    ``max_pool1d``/``max_pool2d``; the gradient goes to the first largest element of each
    window (overlapping windows add up). ``stride`` defaults to ``kernel_size``; ``dilation``
    must be 1 and ``ceil_mode`` False. ``return_indices=True``: (out, indices), torch's
    indices (``input_indices``) as an int64 Tensor without gradient."""
    n = x.ndim - 2
    op = f"max_pool{n}d"
    _only_torch_defaults(op, n, dilation, ceil_mode)
    checks.boolean(op, "return_indices", return_indices)
    kernel, stride, padding = _pool_geometry(x, kernel_size, stride, padding, n, op)
    xp = x.xp
    forward, backward = reference = (max_pool_forward, max_pool_backward)
    if not return_indices:  # (a kernel's index is its own: the indices read the reference's)
        forward, backward = dispatch.choose("max_pool", reference, x.array)
    out, index = forward(xp, x.array, kernel, stride, padding)

    def back_fn(dout):
        return backward(xp, dout, index, x.shape, kernel, stride, padding)

    pooled = Tensor(out, args=(x,), back_fns=(back_fn,), name=op)
    if not return_indices:
        return pooled
    indices = input_indices(xp, index, x.shape, kernel, stride, padding)
    return pooled, Tensor(indices, requires_grad=False, name=f"{op} indices")


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
    (C, H, W) from a batched (N, C, L).) Max pooling's out and indices both lose that axis."""
    if x.ndim == n + 1:
        pooled = pool(ops.expand_dims(x, 0))
        if isinstance(pooled, tuple):
            return tuple(ops.squeeze(t, 0) for t in pooled)
        return ops.squeeze(pooled, 0)
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
    return_indices = False  # a class default: layers pickled before the argument still load

    @checks.arguments(return_indices=checks.boolean, ceil_mode=checks.boolean)
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):  # fmt: skip
        _only_torch_defaults(type(self).__name__, self.n_dims, dilation, ceil_mode)
        super().__init__(kernel_size, stride, padding)
        self.return_indices = return_indices

    def pool(self, x: Tensor):
        return max_pool(x, self.kernel_size, self.stride, self.padding,
                        return_indices=self.return_indices)  # fmt: skip

    def extra_repr(self) -> str:
        return super().extra_repr() + (", return_indices=True" if self.return_indices else "")


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
    the kernel); with ``return_indices=True`` it returns (out, indices), as torch's."""

    n_dims = 1


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.MaxPool2d`` (stride defaults
    to the kernel); with ``return_indices=True`` it returns (out, indices), torch's flat
    indices into each plane, which ``nn.MaxUnpool2d`` takes."""

    n_dims = 2


class AvgPool1d(_AvgPool):
    """Average pooling over (N, C, L) or (C, L), as ``torch.nn.AvgPool1d``."""

    n_dims = 1


class AvgPool2d(_AvgPool):
    """Average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.AvgPool2d``."""

    n_dims = 2
