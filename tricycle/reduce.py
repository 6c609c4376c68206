"""Reductions over axes: sum, mean, max, min, var (all with ``keepdims``), and the running
sum ``cumsum``.

The gradient of a reduction is the output gradient put back on the reduced axes (as size-1
axes) and broadcast to the input's shape, times the local derivative.
"""

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


def cumsum(x: Tensor, axis: int | None = None) -> Tensor:
    """Running sum along ``axis`` (of the flattened tensor if None), as numpy.cumsum:
    out[i] = x[0] + ... + x[i]. Each x[j] adds to every out[i] with i >= j, so its gradient
    is the running sum of dout from the end: dx[j] = dout[j] + ... + dout[n - 1]."""
    xp, flat = x.xp, axis is None
    axis = 0 if flat else checks.axis("cumsum", "axis", axis, x.ndim, x.shape)
    out = xp.cumsum(x.array.reshape(-1) if flat else x.array, axis=axis)

    def back_fn(dout):
        dx = xp.flip(xp.cumsum(xp.flip(dout, axis=axis), axis=axis), axis=axis)
        return dx.reshape(x.shape)

    return unary_op(x, out, back_fn, "cumsum")
