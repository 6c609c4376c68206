"""Reductions over axes: sum, mean, max, min, var, prod and logsumexp (all with ``keepdims``),
and the running sum and product ``cumsum`` and ``cumprod``.

The gradient of a reduction is the output gradient put back on the reduced axes (as size-1
axes) and broadcast to the input's shape, times the local derivative. The products' local
derivatives are products of the other entries, taken without dividing by an entry (which
may be 0).
"""

import math

import numpy as np

from tricycle import checks
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node
from tricycle.unary import unary_op

Axis = int | tuple[int, ...] | None


def _axes(x: Tensor, axis: Axis, keepdims: bool, op: str) -> tuple[int, ...]:
    """``axis`` as a sorted tuple of axes >= 0 (every axis for None); checks ``keepdims``."""
    checks.boolean(op, "keepdims", keepdims)
    return checks.axes(op, "axis", axis, x.ndim, x.shape)


def _expand(dout, x: Tensor, axes: tuple[int, ...], keepdims: bool):
    """Give ``dout`` size-1 axes where ``x`` was reduced (so it broadcasts against x)."""
    if keepdims:
        return dout
    shape = list(x.shape)
    for a in axes:
        shape[a] = 1
    return dout.reshape(shape)


def _count(x: Tensor, axes: tuple[int, ...], op: str) -> int:
    n = 1
    for a in axes:
        n *= x.shape[a]
    if n == 0:
        raise ValueError(f"{op}: cannot reduce an empty tensor of shape {x.shape}")
    return n


def sum(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (all axes by default)."""
    xp, axes = x.xp, _axes(x, axis, keepdims, "sum")
    out = xp.sum(x.array, axis=axes, keepdims=keepdims)
    return unary_op(
        x, out, lambda dout: xp.broadcast_to(_expand(dout, x, axes, keepdims), x.shape), "sum"
    )


def mean(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Arithmetic mean over ``axis`` (all axes by default)."""
    xp, axes = x.xp, _axes(x, axis, keepdims, "mean")
    n = _count(x, axes, "mean")
    out = xp.mean(x.array, axis=axes, keepdims=keepdims)
    return unary_op(
        x,
        out,
        lambda dout: xp.broadcast_to(_expand(dout, x, axes, keepdims) / n, x.shape),
        "mean",
    )


def _extremum(x: Tensor, axis: Axis, keepdims: bool, op: str) -> Tensor:
    xp, axes = x.xp, _axes(x, axis, keepdims, op)
    _count(x, axes, op)
    reduce_fn = xp.max if op == "max" else xp.min
    out = reduce_fn(x.array, axis=axes, keepdims=True)

    def back_fn(dout):
        # ties share the gradient equally, so it is never counted twice
        hits = (x.array == out).astype(x.dtype)
        return _expand(dout, x, axes, keepdims) * hits / hits.sum(axis=axes, keepdims=True)

    return unary_op(
        x,
        out if keepdims else out.reshape([n for i, n in enumerate(x.shape) if i not in axes]),
        back_fn,
        op,
    )


def max(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over ``axis``; tied maxima split the gradient evenly."""
    return _extremum(x, axis, keepdims, "max")


def min(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over ``axis``; tied minima split the gradient evenly."""
    return _extremum(x, axis, keepdims, "min")


def var(x: Tensor, axis: Axis = None, keepdims: bool = False, ddof: int = 0) -> Tensor:
    """Variance over ``axis`` with ``ddof`` delta degrees of freedom (numpy's default 0)."""
    xp, axes = x.xp, _axes(x, axis, keepdims, "var")
    n = _count(x, axes, "var")
    checks.non_negative_int("var", "ddof", ddof)
    if n - ddof <= 0:
        raise ValueError(f"var: {n} elements with ddof={ddof} leave no degrees of freedom")
    centred = x.array - xp.mean(x.array, axis=axes, keepdims=True)
    out = xp.sum(centred * centred, axis=axes, keepdims=keepdims) / (n - ddof)
    return unary_op(
        x, out, lambda dout: _expand(dout, x, axes, keepdims) * centred * (2 / (n - ddof)), "var"
    )


def cumsum(x: Tensor, axis: int | None = None, *, dim: int | None = None) -> Tensor:
    """Running sum along ``axis`` (torch's ``dim``, as ``x.cumsum(dim=0)``; of the flattened
    tensor if None), as numpy.cumsum: out[i] = x[0] + ... + x[i]. Each x[j] adds to every
    out[i] with i >= j, so its gradient is the running sum of dout from the end: dx[j] =
    dout[j] + ... + dout[n - 1]."""
    if dim is not None and axis is not None:
        raise TypeError(f"cumsum: got both axis={axis!r} and dim={dim!r}; give one")
    axis = axis if dim is None else dim
    xp, flat = x.xp, axis is None
    axis = 0 if flat else checks.axis("cumsum", "axis", axis, x.ndim, x.shape)
    out = xp.cumsum(x.array.reshape(-1) if flat else x.array, axis=axis)
    return unary_op(x, out, lambda dout: _from_the_end(xp, dout, axis).reshape(x.shape), "cumsum")


def _from_the_end(xp, a, axis: int):
    """The running sum of ``a`` along ``axis`` taken from the last entry: out[j] = a[j] + ...
    + a[n - 1]."""
    return xp.flip(xp.cumsum(xp.flip(a, axis=axis), axis=axis), axis=axis)


def cumprod(x: Tensor, axis: int | None = None) -> Tensor:
    """Running product along ``axis`` (of the flattened tensor if None), as numpy.cumprod:
    out[i] = x[0] * ... * x[i]. Its derivative by x[j] (j <= i) is the product of the others.
    Before the first zero that is out[i] / x[j], so dx[j] = (dout[j] out[j] + ... +
    dout[n - 1] out[n - 1]) / x[j]; at the first zero z it is the running product with x[z]
    taken as 1; after it, every product holds that zero, and the gradient is 0."""
    xp, flat = x.xp, axis is None
    axis = 0 if flat else checks.axis("cumprod", "axis", axis, x.ndim, x.shape)
    a = x.array.reshape(-1) if flat else x.array
    out = xp.cumprod(a, axis=axis)

    def back_fn(dout):
        zeros = xp.cumsum(a == 0, axis=axis)  # zeros up to and including each entry
        before, first = zeros == 0, (zeros == 1) & (a == 0)
        dx = xp.where(before, _from_the_end(xp, dout * out, axis) / xp.where(before, a, 1), 0)
        with_first_as_1 = xp.cumprod(xp.where(first, 1, a), axis=axis)
        dx = dx + xp.where(first, _from_the_end(xp, dout * with_first_as_1, axis), 0)
        return dx.reshape(x.shape)

    return unary_op(x, out, back_fn, "cumprod")


def prod(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (all axes by default). The derivative by an entry is the product
    of the others: that of the entries before it times that of the entries after it."""
    xp, axes = x.xp, _axes(x, axis, keepdims, "prod")
    out = xp.prod(x.array, axis=axes, keepdims=keepdims)

    def back_fn(dout):
        kept = [a for a in range(x.ndim) if a not in axes]
        moved = xp.transpose(x.array, kept + list(axes))  # (kept..., reduced...)
        rows, n = math.prod(moved.shape[: len(kept)]), math.prod(moved.shape[len(kept) :])
        others = _product_of_others(xp, moved.reshape(rows, n))
        order = sorted(range(x.ndim), key=(kept + list(axes)).__getitem__)  # the inverse
        others = xp.transpose(others.reshape(moved.shape), order)
        return _expand(dout, x, axes, keepdims) * others

    return unary_op(x, out, back_fn, "prod")


def _product_of_others(xp, rows):
    """(R, N) -> (R, N): for each entry, the product of the other entries of its row."""
    ones = xp.ones_like(rows[:, :1])
    before = xp.cumprod(xp.concatenate([ones, rows[:, :-1]], axis=1), axis=1)
    after = xp.flip(xp.cumprod(xp.concatenate([ones, rows[:, :0:-1]], axis=1), axis=1), axis=1)
    return before * after


def logsumexp(x: Tensor, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``axis`` (all axes by default), as m + log(sum(exp(x - m))) with
    m the maximum, so that exp cannot overflow. Its derivative is softmax(x) = exp(x - out)."""
    xp, axes = x.xp, _axes(x, axis, keepdims, "logsumexp")
    _count(x, axes, "logsumexp")
    m = xp.max(x.array, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # all -inf (or an inf): nothing to shift by
    with np.errstate(divide="ignore"):  # log(0) = -inf: every value -inf, as torch's
        total = xp.log(xp.sum(xp.exp(x.array - m), axis=axes, keepdims=True)) + m
    out = total if keepdims else total.reshape([n for i, n in enumerate(x.shape) if i not in axes])
    return unary_op(
        x, out, lambda dout: _expand(dout, x, axes, keepdims) * xp.exp(x.array - total), "logsumexp"
    )
