"""Strided windows over the spatial axes of (N, C, *size) arrays, shared by convolution
and pooling.

``windows(x)`` views the padded input as (N, C, *kernel, *out) without copying anything
(``as_strided``): element [n, c, *k, *o] is x[n, c, *(o * stride + k * dilation)]. Its
backward, ``scatter_windows``, adds every window element back where it was read (col2im).
The argument helpers turn a kernel size, stride or padding into tuples and check that the
output is not empty; ``unbatched`` runs an op made for batches on one unbatched input
(C, *size), as PyTorch's layers accept.
"""

import itertools

from tricycle import checks, ops


def as_tuple(value, n: int, name: str, op: str, low: int = 1) -> tuple[int, ...]:
    """An integer or a sequence of ``n`` integers, each at least ``low``, as a tuple of ``n``
    ints (a kernel size, a stride, ...)."""
    expected = f"an integer >= {low} or {n} of them"
    if checks.is_integer(value):
        values = (value,) * n
    elif isinstance(value, tuple | list) and all(map(checks.is_integer, value)):
        values = tuple(value)
    else:
        checks.fail(op, name, expected, value, TypeError)
    if len(values) != n or min(values) < low:
        checks.fail(op, name, expected, value)
    return tuple(int(v) for v in values)


def unbatched(fn, x, *args):
    """``fn(x, *args)`` for an unbatched x (C, *size): a batch axis of 1 added before and
    removed after, both differentiable, so the gradient reaches x in its own shape."""
    return ops.squeeze(fn(ops.expand_dims(x, 0), *args), 0)


def output_size(size, kernel, stride, padding, dilation, op: str) -> tuple[int, ...]:
    """Spatial output size: (size + 2 padding - dilation (kernel - 1) - 1) // stride + 1."""
    out = tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, s, p, d in zip(size, kernel, stride, padding, dilation)
    )
    if any(n < 1 for n in out):
        raise ValueError(
            f"{op}: an input of spatial size {tuple(size)} with padding {padding} is smaller "
            f"than the (dilated) kernel {kernel} with dilation {dilation}: the output would "
            f"have size {out}"
        )
    return out


def pad(xp, x, padding, value=0.0):
    """Pad the spatial axes (all but the first two) by ``padding`` on both sides."""
    if not any(padding):
        return x
    shape = x.shape[:2] + tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(...,) + tuple(slice(p, p + n) for n, p in zip(x.shape[2:], padding))] = x
    return out


def unpad(x, padding):
    """The inverse of ``pad``: the interior view."""
    if not any(padding):
        return x
    return x[(...,) + tuple(slice(p, n - p) for n, p in zip(x.shape[2:], padding))]


def windows(xp, x, kernel, stride, dilation):
    """A view (N, C, *kernel, *out) of x (N, C, *size): element [n, c, *k, *o] is
    x[n, c, *(o * stride + k * dilation)]. Nothing is copied; do not write to it."""
    size = x.shape[2:]
    out = tuple(
        (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(size, kernel, stride, dilation)
    )
    steps = x.strides[2:]
    strides = x.strides[:2] + tuple(t * d for t, d in zip(steps, dilation))
    strides += tuple(t * s for t, s in zip(steps, stride))
    return xp.lib.stride_tricks.as_strided(x, x.shape[:2] + tuple(kernel) + out, strides)


def scatter_windows(xp, dwindows, size, stride, dilation):
    """The backward of ``windows``: (N, C, *kernel, *out) -> (N, C, *size), each element
    added back where it was read. One strided add per kernel offset: for a fixed offset, the
    windows read distinct positions."""
    d = len(size)
    kernel, out = dwindows.shape[2 : 2 + d], dwindows.shape[2 + d :]
    dx = xp.zeros(dwindows.shape[:2] + tuple(size), dtype=dwindows.dtype)
    for offset in itertools.product(*(range(k) for k in kernel)):
        where = tuple(
            slice(i * dil, i * dil + s * (n - 1) + 1, s)
            for i, dil, s, n in zip(offset, dilation, stride, out)
        )
        dx[(slice(None), slice(None)) + where] += dwindows[(slice(None), slice(None)) + offset]
    return dx
