"""Padding the last axes of a tensor, as PyTorch's ``F.pad``, and the padding a convolution
asks for (``padding=2``, ``"valid"``, ``"same"``).

``pad(x, (left, right))`` pads the last axis, ``(left, right, top, bottom)`` the last two,
and so on: the pairs run from the last axis backwards, as PyTorch's. Every output position
is read from one input position (or, in "constant" mode, from none)::

    mode        x = 0 1 2 3, padded by 2 on each side
    constant    v v | 0 1 2 3 | v v        the value v
    reflect     2 1 | 0 1 2 3 | 2 1        the mirror image, the edge not repeated
    replicate   0 0 | 0 1 2 3 | 3 3        the edge element
    circular    2 3 | 0 1 2 3 | 0 1        the other end

so the backward adds each output gradient to the input position it was read from: the
interior as it is, plus each border folded back onto the positions it copied (mirrored for
reflect, summed into the edge element for replicate, wrapped round for circular; nothing for
constant). Every mode reads the axes independently, so padding several axes is one axis after
the other, and its backward the same axes in reverse order.

A convolution's ``padding="same"`` keeps the output the size of the input (stride 1 only):
the dilated kernel overhangs by d (k - 1) in all, floor(d (k - 1) / 2) on the left and the
rest on the right, so an odd overhang pads one more on the right, as PyTorch does.
"""

from tricycle import backend, checks
from tricycle.nn.windows import as_tuple
from tricycle.tensor import Tensor

__all__ = ["MODES", "conv_padding", "pad", "padding_argument", "torch_order"]

MODES = ("constant", "reflect", "replicate", "circular")


# ====================================================================== the pad op


def _along(axis: int, start: int, stop: int) -> tuple:
    """The index [start:stop] along ``axis`` (negative: counted from the end)."""
    return (Ellipsis, slice(start, stop)) + (slice(None),) * (-axis - 1)


def pad_axis_forward(xp, x, axis: int, left: int, right: int, mode: str, value: float):
    """x padded by ``left`` and ``right`` elements along ``axis`` (negative) in ``mode``."""
    n = x.shape[axis]
    if mode == "constant":
        shape = x.shape[:axis] + (left + n + right,) + x.shape[axis:][1:]
        out = xp.full(shape, value, dtype=x.dtype)
        out[_along(axis, left, left + n)] = x
        return out
    if mode == "reflect":  # x[left], ..., x[1] | x | x[n - 2], ..., x[n - 1 - right]
        before = xp.flip(x[_along(axis, 1, left + 1)], axis)
        after = xp.flip(x[_along(axis, n - 1 - right, n - 1)], axis)
    elif mode == "replicate":  # x[0] repeated | x | x[n - 1] repeated
        before = xp.repeat(x[_along(axis, 0, 1)], left, axis)
        after = xp.repeat(x[_along(axis, n - 1, n)], right, axis)
    else:  # circular: x[n - left:] | x | x[:right]
        before = x[_along(axis, n - left, n)]
        after = x[_along(axis, 0, right)]
    return xp.concatenate((before, x, after), axis=axis)


def pad_axis_backward(xp, dout, axis: int, left: int, right: int, mode: str):
    """The gradient of ``pad_axis_forward``'s input: dout's interior, plus each border added
    back where it was read from."""
    n = dout.shape[axis] - left - right
    dx = dout[_along(axis, left, left + n)].copy()  # the interior, read as it is
    if mode == "constant":
        return dx
    dbefore = dout[_along(axis, 0, left)]
    dafter = dout[_along(axis, left + n, left + n + right)]
    if mode == "reflect":
        dx[_along(axis, 1, left + 1)] += xp.flip(dbefore, axis)
        dx[_along(axis, n - 1 - right, n - 1)] += xp.flip(dafter, axis)
    elif mode == "replicate":
        dx[_along(axis, 0, 1)] += dbefore.sum(axis=axis, keepdims=True)
        dx[_along(axis, n - 1, n)] += dafter.sum(axis=axis, keepdims=True)
    else:  # circular
        dx[_along(axis, n - left, n)] += dbefore
        dx[_along(axis, 0, right)] += dafter
    return dx


def _check_pad(x: Tensor, pads, mode: str, value) -> tuple[tuple[int, int], ...]:
    """The (left, right) pairs of ``pads``, the last axis first, after checking that each mode
    can read what it pads from x (as PyTorch refuses)."""
    op = "pad"
    checks.one_of(MODES)(op, "mode", mode)
    checks.real(op, "value", value)
    if mode != "constant" and value != 0:
        raise ValueError(f"pad: mode {mode!r} takes no value, got value={value!r}")
    expected = f"an even number, at most {2 * x.ndim}, of integers"
    if not isinstance(pads, tuple | list) or not all(map(checks.is_integer, pads)):
        checks.fail(op, "pads", expected, pads, TypeError)
    if len(pads) % 2 or len(pads) > 2 * x.ndim:
        checks.fail(op, "pads", expected, pads)
    pairs = tuple((int(pads[i]), int(pads[i + 1])) for i in range(0, len(pads), 2))
    for i, (left, right) in enumerate(pairs):
        axis = x.ndim - 1 - i
        n = x.shape[axis] + min(left, 0) + min(right, 0)  # what the negative pads leave
        left, right = max(left, 0), max(right, 0)
        if n < 0:
            problem = "negative padding crops more than the axis holds"
        elif mode == "reflect" and max(left, right) >= n:
            problem = "reflect padding must be smaller than the axis it pads"
        elif mode == "circular" and max(left, right) > n:
            problem = "circular padding must be at most the axis it pads (it wraps round once)"
        elif mode == "replicate" and n == 0 and left + right:
            problem = "replicate padding needs an element to repeat"
        else:
            continue
        raise ValueError(
            f"pad: {problem}, got ({pairs[i][0]}, {pairs[i][1]}) for axis {axis} of size "
            f"{x.shape[axis]} (input shape {x.shape}, pads {tuple(pads)})"
        )
    return pairs


def pad(x: Tensor, pads, mode: str = "constant", value: float = 0.0) -> Tensor:
    """x with its last axes padded, as PyTorch's ``F.pad``: ``pads`` is (left, right) for the
    last axis, then (top, bottom) for the one before, and so on; ``mode`` is "constant"
    (filled with ``value``), "reflect", "replicate" or "circular". A negative pad crops that
    many elements from its end first, as PyTorch's (``ZeroPad2d(-2)`` undoes ``ZeroPad2d(2)``).
    Reflect padding must be smaller than the (cropped) axis, circular padding at most its size."""
    pairs = _check_pad(x, pads, mode, value)
    # a negative pad crops, before the positive ones pad what is left (torch's meaning)
    sizes = x.shape[::-1]  # the last axis first, as the pairs
    crop = [slice(max(-left, 0), n - max(-right, 0)) for (left, right), n in zip(pairs, sizes)]
    crop = (Ellipsis, *crop[::-1]) if any(min(pair) < 0 for pair in pairs) else None
    axes = [(-1 - i, max(left, 0), max(right, 0)) for i, (left, right) in enumerate(pairs)]
    axes = [(axis, left, right) for axis, left, right in axes if left or right]
    xp = x.xp
    out = x.array if crop is None else x.array[crop]
    for axis, left, right in axes:
        out = pad_axis_forward(xp, out, axis, left, right, mode, value)

    def back_fn(dout):
        for axis, left, right in reversed(axes):
            dout = pad_axis_backward(xp, dout, axis, left, right, mode)
        if crop is None:
            return dout
        dx = xp.zeros(x.shape, dtype=dout.dtype)  # the cropped-away elements get none
        dx[crop] = dout
        return dx

    # a real-linear map of x: its back_fn serves a complex x as written (real coefficients)
    return x.new(out, args=(x,), back_fns=backend.ComplexSafe((back_fn,)), name=f"pad {mode}")


# ====================================================================== a convolution's padding


def padding_argument(padding, n: int, op: str, stride: tuple[int, ...]):
    """A convolution's ``padding``: "valid", "same" (stride 1 only, PyTorch's rule), or an int
    or ``n`` ints >= 0, returned as a tuple."""
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            expected = f"an integer >= 0 or {n} of them, 'same' or 'valid'"
            checks.fail(op, "padding", expected, padding, TypeError)
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError(
                f"{op}: padding='same' is not supported for strided convolutions, got stride "
                f"{stride}"
            )
        return padding
    return as_tuple(padding, n, "padding", op, low=0)


def conv_padding(padding, kernel, dilation) -> tuple[tuple[int, int], ...]:
    """(left, right) per spatial axis for a checked ``padding_argument``: "same" overhangs
    the dilated kernel, d (k - 1) in all, the odd one on the right."""
    if padding == "valid":
        return ((0, 0),) * len(kernel)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in total)
    return tuple((p, p) for p in padding)


def torch_order(pairs) -> tuple[int, ...]:
    """(left, right) pairs in axis order as ``pad`` takes them: the last axis first."""
    return tuple(p for pair in reversed(tuple(pairs)) for p in pair)
