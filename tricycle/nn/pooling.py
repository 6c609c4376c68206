"""Max and average pooling over the windows of (N, C, L) or (N, C, H, W) inputs, as PyTorch's.

Pooling reuses the convolution's windows (``tricycle.nn.windows``): max pooling sends each
window's gradient to its (first) largest element, as PyTorch does; average pooling spreads
it evenly. Each is a fused op: the forward and backward here are its reference, and a
backend's kernels for "max_pool" and "avg_pool" take their place through ``tricycle.dispatch``
for torch's default settings; max pooling's ``dilation`` (windows with gaps) and either
pooling's ``ceil_mode`` run the reference, as do max pooling's indices.

``ceil_mode`` rounds the number of windows up, as torch does: the last window may run past
the input and its padding (the reference pads on the right as far as it reaches, with -inf or
zeros), but it must start inside the input or the left padding, else it is dropped. Such a
ragged window's mean divides by its elements inside the padded input (``count_include_pad``)
or inside the input, torch's divisors. The layers also take an unbatched input (C, L) or
(C, H, W), as PyTorch's, through a batch axis of 1 (``pool_over``). Max pooling with
``return_indices=True`` also gives torch's indices, where each maximum lies in its plane of
the input (``input_indices``), which ``tricycle.nn.unpooling``'s ``max_unpool`` takes.
"""

import math
from functools import partial

import numpy as np

from tricycle import checks, dispatch, ops
from tricycle.layers import Layer
from tricycle.nn.pool_indices import input_indices
from tricycle.nn.windows import as_tuple, output_size, scatter_windows, windows
from tricycle.tensor import Tensor

__all__ = [
    "AvgPool1d", "AvgPool2d", "MaxPool1d", "MaxPool2d", "avg_pool", "in_n_dims", "input_indices",
    "max_pool", "pooled_size",
]  # fmt: skip


def _pool_geometry(x: Tensor, kernel_size, stride, padding, dilation, ceil_mode, n: int, op: str):
    """(kernel, stride, padding, dilation) as tuples of ``n`` ints, after checking that x has
    ``n`` spatial axes and is large enough for one window."""
    if x.ndim != n + 2:
        raise ValueError(
            f"{op}: expected input (batch, channels, *{n} spatial axes), got shape {x.shape}"
        )
    kernel, stride, padding = _pool_arguments(kernel_size, stride, padding, n, op)
    dilation = as_tuple(dilation, n, "dilation", op)
    pooled_size(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, op)
    return kernel, stride, padding, dilation


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


def pooled_size(size, kernel, stride, padding, dilation, ceil_mode: bool, op: str):
    """torch's number of windows along each axis: (size + 2 padding - dilation (kernel - 1)
    - 1) / stride + 1, rounded down, or with ``ceil_mode`` up, less a last window that would
    start past the left padding and the input (in the right padding or beyond)."""
    if not ceil_mode:
        return output_size(size, kernel, stride, padding, dilation, op)
    out = []
    for n, k, s, p, d in zip(size, kernel, stride, padding, dilation):
        o = -(-(n + 2 * p - d * (k - 1) - 1) // s) + 1  # the division rounded up
        out.append(o - 1 if (o - 1) * s >= n + p else o)
    if min(out) < 1:
        raise ValueError(
            f"{op}: an input of spatial size {tuple(size)} with padding {padding} is smaller "
            f"than the (dilated) kernel {kernel} with dilation {dilation}, even with "
            f"ceil_mode: the output would have size {tuple(out)}"
        )
    return tuple(out)


def _padded_size(size, out, kernel, stride, padding, dilation) -> tuple[int, ...]:
    """The padded input's size: ``padding`` on both sides, and on the right as far as the
    last window reaches (past the padding under ``ceil_mode``), so that it holds ``out``
    windows exactly."""
    return tuple(
        max(n + 2 * p, (o - 1) * s + d * (k - 1) + 1)
        for n, o, k, s, p, d in zip(size, out, kernel, stride, padding, dilation)
    )


def _pad_to(xp, x, padding, padded, value):
    """x (N, C, *size) in an array (N, C, *padded) of ``value``, from ``padding`` on."""
    if tuple(padded) == x.shape[2:]:
        return x
    out = xp.full(x.shape[:2] + tuple(padded), value, dtype=x.dtype)
    out[_inside(padding, x.shape[2:])] = x
    return out


def _inside(padding, size) -> tuple:
    """The index of the input's elements in its padded array: [..., p : p + n, ...]."""
    return (Ellipsis,) + tuple(slice(p, p + n) for p, n in zip(padding, size))


def max_pool_forward(xp, x, kernel, stride, padding, dilation=None, ceil_mode=False):
    """(out, index) for x (N, C, *size): the largest value of each window (padding counts as
    -inf), and where in its window (row-major) the first largest is, which backward takes.
    Its elements are ``dilation`` apart (1 unless given)."""
    n = x.ndim - 2
    dilation = dilation or (1,) * n
    out_shape = pooled_size(x.shape[2:], kernel, stride, padding, dilation, ceil_mode, "max_pool")
    padded = _padded_size(x.shape[2:], out_shape, kernel, stride, padding, dilation)
    view = windows(xp, _pad_to(xp, x, padding, padded, -np.inf), kernel, stride, dilation)
    K = math.prod(kernel)
    flat = view.reshape(x.shape[:2] + (K,) + out_shape)  # a copy: one window per column
    index = flat.argmax(axis=2)[:, :, None]  # (N, C, 1, *out): the first maximum
    out = xp.take_along_axis(flat, index, axis=2)[:, :, 0]
    return out, index.astype(np.uint8 if K < 256 else np.int64)


def max_pool_backward(xp, dout, index, x_shape, kernel, stride, padding, dilation=None):
    """dx (x_shape): each window's gradient at its first largest element (``index``),
    overlapping windows added up."""
    n, K = len(kernel), math.prod(kernel)
    dilation = dilation or (1,) * n
    positions = xp.arange(K, dtype=index.dtype).reshape((1, 1, K) + (1,) * n)
    dflat = (positions == index) * dout[:, :, None]  # the gradient at each argmax
    dview = dflat.reshape(x_shape[:2] + tuple(kernel) + dout.shape[2:])
    padded = _padded_size(x_shape[2:], dout.shape[2:], kernel, stride, padding, dilation)
    dx = scatter_windows(xp, dview, padded, stride, dilation)
    return dx[_inside(padding, x_shape[2:])]


def _window_counts(xp, x_shape, out_shape, kernel, stride, padding, count_include_pad, dtype,
                   divisor=None):  # fmt: skip
    """What each window's sum is divided by, torch's divisor: ``divisor`` if given (torch's
    ``divisor_override``), else its elements inside the padded input (``count_include_pad``,
    the window's size unless ``ceil_mode``'s last window runs past it) or inside the input,
    (1, 1, *out). Windows are boxes: the product of one count per axis."""
    if divisor is not None:
        return divisor
    size, n = x_shape[2:], len(kernel)
    reach = _padded_size(size, out_shape, kernel, stride, padding, (1,) * n)
    if reach == tuple(s + 2 * p for s, p in zip(size, padding)) and (
        count_include_pad or not any(padding)
    ):
        return math.prod(kernel)  # every window whole, and all of it counts
    count = xp.ones((1,) * n, dtype=dtype)
    for a, (length, o, k, s, p) in enumerate(zip(size, out_shape, kernel, stride, padding)):
        start = xp.arange(o) * s - p  # each window's first element, along axis a
        if count_include_pad:
            inside = xp.minimum(start + k, length + p) - start
        else:
            inside = xp.minimum(start + k, length) - xp.maximum(start, 0)
        count = count * inside.reshape((-1,) + (1,) * (n - 1 - a)).astype(dtype)
    return count[None, None]


def avg_pool_forward(xp, x, kernel, stride, padding, count_include_pad, ceil_mode=False,
                     divisor=None):  # fmt: skip
    """The mean of each window of x (N, C, *size) (zero padding), or its sum over ``divisor``."""
    n = x.ndim - 2
    ones = (1,) * n
    out_shape = pooled_size(x.shape[2:], kernel, stride, padding, ones, ceil_mode, "avg_pool")
    padded = _padded_size(x.shape[2:], out_shape, kernel, stride, padding, ones)
    view = windows(xp, _pad_to(xp, x, padding, padded, 0.0), kernel, stride, ones)
    count = _window_counts(
        xp, x.shape, out_shape, kernel, stride, padding, count_include_pad, x.dtype, divisor
    )
    return (view.sum(axis=tuple(range(2, 2 + n))) / count).astype(x.dtype, copy=False)


def avg_pool_backward(xp, dout, x_shape, kernel, stride, padding, count_include_pad,
                      divisor=None):  # fmt: skip
    """dx (x_shape): each window's gradient over its divisor, given to each of its elements."""
    n, out_shape = len(kernel), dout.shape[2:]
    count = _window_counts(
        xp, x_shape, out_shape, kernel, stride, padding, count_include_pad, dout.dtype, divisor
    )
    axes = tuple(range(2, 2 + n))
    share = xp.expand_dims(dout / count, axes)  # (N, C, 1.., *out): each element's part
    dview = xp.broadcast_to(share, x_shape[:2] + tuple(kernel) + out_shape)
    padded = _padded_size(x_shape[2:], out_shape, kernel, stride, padding, (1,) * n)
    dx = scatter_windows(xp, dview, padded, stride, (1,) * n)
    return dx[_inside(padding, x_shape[2:])]


def _beyond_the_kernels(dilation, ceil_mode) -> bool:
    """Whether a pooling asks for what the backends' kernels do not do: dilation or
    ceil_mode (the reference does both)."""
    return ceil_mode or any(d != 1 for d in dilation)


def max_pool(
    x: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
    return_indices: bool = False,
):  # fmt: skip
    """The largest value of each window (padding counts as -inf), as PyTorch's
    ``max_pool1d``/``max_pool2d``; the gradient goes to the first largest element of each
    window (overlapping windows add up). ``stride`` defaults to ``kernel_size``; a window's
    elements are ``dilation`` apart; ``ceil_mode`` rounds the number of windows up, as
    torch's. ``return_indices=True``: (out, indices), torch's indices (``input_indices``)
    as an int64 Tensor without gradient."""
    n = x.ndim - 2
    op = f"max_pool{n}d"
    checks.boolean(op, "ceil_mode", ceil_mode)
    checks.boolean(op, "return_indices", return_indices)
    kernel, stride, padding, dilation = _pool_geometry(
        x, kernel_size, stride, padding, dilation, ceil_mode, n, op
    )
    xp = x.xp
    if return_indices or _beyond_the_kernels(dilation, ceil_mode):
        # the reference's (a kernel's index is its own: the indices read the reference's)
        forward = partial(max_pool_forward, dilation=dilation, ceil_mode=ceil_mode)
        backward = partial(max_pool_backward, dilation=dilation)
    else:
        reference = (max_pool_forward, max_pool_backward)
        forward, backward = dispatch.choose("max_pool", reference, x.array)
    out, index = forward(xp, x.array, kernel, stride, padding)

    def back_fn(dout):
        return backward(xp, dout, index, x.shape, kernel, stride, padding)

    pooled = Tensor(out, args=(x,), back_fns=(back_fn,), name=op)
    if not return_indices:
        return pooled
    indices = input_indices(xp, index, x.shape, kernel, stride, padding, dilation)
    return pooled, Tensor(indices, requires_grad=False, name=f"{op} indices")


def avg_pool(
    x: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
    count_include_pad: bool = True, divisor_override: int | None = None,
) -> Tensor:  # fmt: skip
    """The mean of each window, as PyTorch's ``avg_pool1d``/``avg_pool2d``: zero padding
    counts in the mean unless ``count_include_pad=False``. ``stride`` defaults to
    ``kernel_size``; ``ceil_mode`` rounds the number of windows up, the last one's mean
    taken over its elements inside the padded input (or the input), as torch's. With
    ``divisor_override=d`` (a nonzero int) every window's sum is divided by d instead, as
    torch's (the reference runs it: the backends' kernels know the counts only)."""
    n = x.ndim - 2
    op = f"avg_pool{n}d"
    checks.boolean(op, "ceil_mode", ceil_mode)
    checks.boolean(op, "count_include_pad", count_include_pad)
    _check_divisor(op, divisor_override)
    kernel, stride, padding, _ = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode,
                                                n, op)  # fmt: skip
    xp = x.xp
    forward, backward = avg_pool_forward, avg_pool_backward
    if ceil_mode or divisor_override is not None:  # the reference's
        forward = partial(avg_pool_forward, ceil_mode=ceil_mode, divisor=divisor_override)
        backward = partial(avg_pool_backward, divisor=divisor_override)
    else:
        forward, backward = dispatch.choose("avg_pool", (forward, backward), x.array)
    out = forward(xp, x.array, kernel, stride, padding, count_include_pad)

    def back_fn(dout):
        return backward(xp, dout, x.shape, kernel, stride, padding, count_include_pad)

    return Tensor(out, args=(x,), back_fns=(back_fn,), name=op)


def _check_divisor(op: str, divisor) -> None:
    """torch's ``divisor_override``: None or a nonzero int."""
    if divisor is not None and (isinstance(divisor, bool) or not checks.is_integer(divisor)):
        checks.fail(op, "divisor_override", "None or a nonzero int", divisor, TypeError)
    if divisor == 0:
        checks.fail(op, "divisor_override", "None or a nonzero int", divisor)


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
    ceil_mode = False  # a class default: layers pickled before the argument still load

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False):
        _pool_arguments(kernel_size, stride, padding, self.n_dims, type(self).__name__)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode = ceil_mode

    def forward(self, x: Tensor) -> Tensor:
        """The pooling of x (N, C, *size), or of an unbatched x (C, *size) -> (C, *out)."""
        return pool_over(self.n_dims, type(self).__name__, self.pool, x)

    def extra_repr(self) -> str:  # torch's: the stride is the kernel's when not given
        stride = self.kernel_size if self.stride is None else self.stride
        return f"kernel_size={self.kernel_size}, stride={stride}, padding={self.padding}"


class _MaxPool(_Pool):
    return_indices, dilation = False, 1  # class defaults: older pickled layers still load

    @checks.arguments(return_indices=checks.boolean, ceil_mode=checks.boolean)
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):  # fmt: skip
        as_tuple(dilation, self.n_dims, "dilation", type(self).__name__)
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.dilation, self.return_indices = dilation, return_indices

    def pool(self, x: Tensor):
        return max_pool(x, self.kernel_size, self.stride, self.padding, self.dilation,
                        self.ceil_mode, self.return_indices)  # fmt: skip

    def extra_repr(self) -> str:  # torch's (which shows return_indices nowhere)
        return super().extra_repr() + f", dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class _AvgPool(_Pool):
    divisor_override = None  # AvgPool1d has none, as torch's; older pickled layers still load

    @checks.arguments(ceil_mode=checks.boolean, count_include_pad=checks.boolean)
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):  # fmt: skip
        super().__init__(kernel_size, stride, padding, ceil_mode)
        self.count_include_pad = count_include_pad

    def pool(self, x: Tensor) -> Tensor:
        return avg_pool(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)  # fmt: skip


class MaxPool1d(_MaxPool):
    """Max pooling over (N, C, L) or (C, L), as ``torch.nn.MaxPool1d`` (stride defaults to
    the kernel; ``dilation`` and ``ceil_mode`` as torch's); with ``return_indices=True`` it
    returns (out, indices), as torch's."""

    n_dims = 1


class MaxPool2d(_MaxPool):
    """Max pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.MaxPool2d`` (stride defaults
    to the kernel; ``dilation`` and ``ceil_mode`` as torch's); with ``return_indices=True``
    it returns (out, indices), torch's flat indices into each plane, which
    ``nn.MaxUnpool2d`` takes."""

    n_dims = 2


class AvgPool1d(_AvgPool):
    """Average pooling over (N, C, L) or (C, L), as ``torch.nn.AvgPool1d`` (``ceil_mode`` and
    ``count_include_pad`` as torch's)."""

    n_dims = 1

    def extra_repr(self) -> str:  # torch's shows this one's sizes as 1-tuples
        sizes = self.kernel_size, self.kernel_size if self.stride is None else self.stride
        k, s, p = (v if isinstance(v, tuple) else (v,) for v in (*sizes, self.padding))
        return f"kernel_size={k}, stride={s}, padding={p}"


class _AvgPoolDivided(_AvgPool):
    """AvgPool2d's and AvgPool3d's arguments: AvgPool1d's and torch's ``divisor_override``."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None):  # fmt: skip
        _check_divisor(type(self).__name__, divisor_override)
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override


class AvgPool2d(_AvgPoolDivided):
    """Average pooling over (N, C, H, W) or (C, H, W), as ``torch.nn.AvgPool2d``
    (``ceil_mode``, ``count_include_pad`` and ``divisor_override`` as torch's)."""

    n_dims = 2
