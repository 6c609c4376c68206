"""Max unpooling, as PyTorch's MaxUnpool1d and MaxUnpool2d: the partial inverse of max pooling.

Max pooling with ``return_indices=True`` (``tricycle.nn.pooling``) keeps where each maximum
was, its position in the flattened plane of the input (h W + w). Unpooling puts each value
back there, in a plane of zeros::

    out[n, c].flat[indices[n, c, i]] = x[n, c, i]        (everything else 0)

so it is a scatter, and its gradient the gather at the same places:
dx[n, c, i] = dout[n, c].flat[indices[n, c, i]]. Where two values share an index (overlapping
windows), one of them is kept, as on torch's devices; each still gets the gradient there.

The output's spatial size is by default what the pooling read,
(size - 1) stride - 2 padding + kernel along each axis; ``output_size`` may pick one less
than a stride away from it (the pooling's input size that the rounding down lost).
"""

import math

import numpy as np

from tricycle import checks, dispatch, ops, ranges
from tricycle.backend import check_same_device
from tricycle.layers import Layer
from tricycle.nn.windows import as_tuple
from tricycle.tensor import Tensor, as_tensor

__all__ = ["MaxUnpool1d", "MaxUnpool2d", "max_unpool", "max_unpool1d", "max_unpool2d"]


def unpooled_size(op: str, size, kernel, stride, padding, output_size) -> tuple[int, ...]:
    """The output's spatial size: the default (size - 1) stride - 2 padding + kernel per axis,
    or ``output_size`` (its last n entries: torch's (N, C, *n) too) when it lies within a
    stride of it."""
    default = tuple((s - 1) * st - 2 * p + k for s, k, st, p in zip(size, kernel, stride, padding))
    if output_size is None:
        out = default
    else:
        n = len(default)
        expected = f"{n} or {n + 2} integers"
        if not isinstance(output_size, tuple | list):
            checks.fail(op, "output_size", expected, output_size, TypeError)
        if len(output_size) not in (n, n + 2):
            checks.fail(op, "output_size", expected, output_size)
        out = as_tuple(tuple(output_size)[-n:], n, "output_size", op)
        for axis, (o, d, st) in enumerate(zip(out, default, stride)):
            if not d - st < o < d + st:
                raise ValueError(
                    f"{op}: output_size {tuple(output_size)} is invalid: axis {axis} must lie "
                    f"strictly between {d - st} and {d + st}"
                )
    if min(out) < 1:
        raise ValueError(f"{op}: the output would have spatial size {out}; it must be >= 1")
    return out


def max_unpool(
    x: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None, n: int = 2
) -> Tensor:
    """Each value of x (N, C, *size), or unbatched (C, *size), put at its index (``indices``,
    the same shape, from max pooling with ``return_indices=True``) of a zero output
    (N, C, *out), as torch's ``max_unpool{n}d``."""
    op = f"max_unpool{n}d"
    x = as_tensor(x)
    ids = indices.array if isinstance(indices, Tensor) else indices
    if not hasattr(ids, "dtype"):
        ids = x.xp.asarray(ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers (max pooling's), got dtype {ids.dtype}")
    if x.ndim == n + 1:  # unbatched: a batch axis of 1, added and removed
        batch = ops.expand_dims(x, 0)
        return ops.squeeze(
            max_unpool(batch, ids[None], kernel_size, stride, padding, output_size, n), 0
        )
    if x.ndim != n + 2 or 0 in x.shape[1:]:
        raise ValueError(f"{op}: expected a non-empty input (N, C, *{n} spatial axes) or "
                         f"(C, *{n} spatial axes), got shape {x.shape}")  # fmt: skip
    if ids.shape != x.shape:
        raise ValueError(f"{op}: indices {ids.shape} must have the input's shape {x.shape}")
    kernel = as_tuple(kernel_size, n, "kernel_size", op)
    stride = kernel if stride is None else as_tuple(stride, n, "stride", op)
    padding = as_tuple(padding, n, "padding", op, low=0)
    out_size = unpooled_size(op, x.shape[2:], kernel, stride, padding, output_size)
    xp = check_same_device(op, x.array, ids)
    plane = math.prod(out_size)
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, plane, op=op, what="indices", context=f"for an output of spatial size {out_size}")
    planes = x.shape[0] * x.shape[1]
    rows = xp.arange(planes)[:, None]  # (N C, 1): each plane's row
    at = ids.reshape(planes, -1).astype(np.int64)  # (N C, size): where each value goes
    out = xp.zeros((planes, plane), dtype=x.dtype)
    out[rows, at] = x.array.reshape(planes, -1)

    def back_fn(dout):  # the gather at the same places
        return dout.reshape(planes, plane)[rows, at].reshape(x.shape)

    return Tensor(out.reshape(x.shape[:2] + out_size), args=(x,), back_fns=(back_fn,), name=op)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """``max_unpool`` of (N, C, L) or (C, L), as ``torch.nn.functional.max_unpool1d``."""
    return max_unpool(input, indices, kernel_size, stride, padding, output_size, n=1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """``max_unpool`` of (N, C, H, W) or (C, H, W), as ``torch.nn.functional.max_unpool2d``."""
    return max_unpool(input, indices, kernel_size, stride, padding, output_size, n=2)


class _MaxUnpool(Layer):
    n_dims = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        op, n = type(self).__name__, self.n_dims
        as_tuple(kernel_size, n, "kernel_size", op)
        as_tuple(padding, n, "padding", op, low=0)
        if stride is not None:
            as_tuple(stride, n, "stride", op)
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x: Tensor, indices, output_size=None) -> Tensor:
        return max_unpool(x, indices, self.kernel_size, self.stride, self.padding, output_size,
                          self.n_dims)  # fmt: skip

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    """Max unpooling of (N, C, L) or (C, L) with ``MaxPool1d``'s indices, as
    ``torch.nn.MaxUnpool1d``: ``unpool(x, indices, output_size=None)``."""

    n_dims = 1


class MaxUnpool2d(_MaxUnpool):
    """Max unpooling of (N, C, H, W) or (C, H, W) with ``MaxPool2d``'s indices, as
    ``torch.nn.MaxUnpool2d``: ``unpool(x, indices, output_size=None)``; ``output_size``
    (torch's ``input.size()`` of the pooling) undoes an odd size that pooling rounded down."""

    n_dims = 2
