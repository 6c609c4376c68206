"""torch's reductions beyond ``tricycle.reduce``, as Tensor methods: ``nansum`` and ``nanmean``
(NaN left out), ``median`` and ``nanmedian`` (the lower of the two middle values), ``mode``
(the most frequent value), ``kthvalue`` (the k-th smallest) and ``quantile`` and
``nanquantile`` (with torch's five interpolations).

Each is a method of ``Tensor`` (``x.median(dim=1)``) that imports this module on its first
call (``tensor_torch.imported``); ``tricycle.torch_math`` has torch's functions of the same
names. All but the sums sort along the axis, NaN last and equal values in their order (a
stable sort), and read the picked entry where the sort put it:

- Along a ``dim``, median, nanmedian, mode and kthvalue give torch's ``(values, indices)``,
  whose gradient goes to the index picked alone (``indexing.gather``). The median of a row
  holding NaN is its first NaN; mode's index is the last of the value's entries, as torch's.
- The median (nanmedian) of the whole tensor is the value alone, whose gradient is shared
  evenly among the entries equal to it, as torch's.
- A quantile is ``below + w (above - below)``, the two sorted values beside its rank
  q (n - 1) and w the rank's fraction (0.5 for "midpoint"; "lower", "higher" and
  "nearest" round the rank first): its gradient is 1 - w for ``below`` and w for ``above``.
  A row holding NaN has quantile NaN; nanquantile ranks the values that are not NaN.
- nansum's gradient is 0 at a NaN; nanmean is nansum divided by the number of values that are
  not NaN.
"""

from collections import namedtuple

import numpy as np

from tricycle import backend, checks, indexing, ops, reduce, unary
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node

# as torch.return_types.median, ...: (values, indices)
Median = namedtuple("Median", ["values", "indices"])
NanMedian = namedtuple("NanMedian", ["values", "indices"])
Mode = namedtuple("Mode", ["values", "indices"])
KthValue = namedtuple("KthValue", ["values", "indices"])
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _all_if_empty(dim):
    """torch reads ``dim=()`` (or ``[]``) as every axis."""
    return None if isinstance(dim, tuple | list) and not dim else dim


def _nans(x: Tensor, axis):
    """How many NaN lie along ``axis`` (kept, of size 1): the values unequal to themselves."""
    return (x.array != x.array).sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------ without NaN
def nansum(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """torch.Tensor.nansum: the sum over ``dim`` (all by default) with NaN counted as 0, in
    ``dtype`` if given; the gradient is 0 at a NaN."""
    checks.boolean("Tensor.nansum", "keepdim", keepdim)
    x = x if dtype is None else x._cast("Tensor.nansum", dtype)
    if backend.is_float(x.dtype):
        x = ops.masked_fill(x, x.xp.isnan(x.array), 0)
    return reduce.sum(x, _all_if_empty(dim), keepdim)


def nanmean(x: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """torch.Tensor.nanmean: the mean over ``dim`` (all by default) of the values that are not
    NaN (NaN where every value is), in ``dtype`` if given."""
    x = x if dtype is None else x._cast("Tensor.nanmean", dtype)
    if not backend.is_float(x.dtype):
        checks.fail("Tensor.nanmean", "dtype", "a float dtype (or dtype=)", x.dtype, TypeError)
    axes = checks.axes("Tensor.nanmean", "dim", _all_if_empty(dim), x.ndim, x.shape)
    counts = x.xp.sum(~x.xp.isnan(x.array), axis=axes, keepdims=keepdim).astype(x.dtype)
    with np.errstate(invalid="ignore"):  # 0 / 0 where every value is NaN: NaN, as torch's
        return nansum(x, axes, keepdim) / x.new(counts, requires_grad=False)


# ------------------------------------------------------------------ picked by rank
def _picked(x: Tensor, dim: int, ids, keepdim: bool, result):
    """``result(values, indices)``: the entries ``ids`` (size 1 along ``dim``) of x, whose
    gradient goes to them alone, and the ids as int64."""
    values, ids = indexing.gather(x, dim, ids), ids.astype(np.int64, copy=False)
    if not keepdim:
        values, ids = ops.squeeze(values, dim), ids.squeeze(dim)
    return result(values, x.new(ids, requires_grad=False))


def _axis(op: str, x: Tensor, dim, keepdim: bool) -> int:
    """``dim`` as an axis >= 0 of a non-empty axis of x; checks ``keepdim``."""
    checks.boolean(f"Tensor.{op}", "keepdim", keepdim)
    dim = checks.axis(f"Tensor.{op}", "dim", dim, x.ndim, x.shape)
    if not x.shape[dim]:
        raise ValueError(f"Tensor.{op}: cannot reduce the empty dim {dim} of shape {x.shape}")
    return dim


def _sorted_ids(x: Tensor, dim: int):
    """The ids that sort x along ``dim``: stable, NaN last."""
    return x.xp.argsort(x.array, axis=dim, kind="stable")


def _median_ids(x: Tensor, dim: int, skip_nan: bool):
    """The id along ``dim`` (kept, of size 1) of the lower median: the entry of rank
    (n - 1) // 2, n the values that are not NaN with ``skip_nan`` (rank 0 if none is);
    without, the first NaN of a row that holds one."""
    xp, order, n, nans = x.xp, _sorted_ids(x, dim), x.shape[dim], _nans(x, dim)
    if skip_nan:
        rank = xp.maximum((n - nans - 1) // 2, 0)
    else:
        rank = xp.where(nans > 0, n - nans, (n - 1) // 2)
    kept = order.shape[:dim] + (1,) + order.shape[dim + 1 :]
    return xp.take_along_axis(order, xp.broadcast_to(rank, kept).astype(np.int64), axis=dim)


def _median(op: str, skip_nan: bool, result):
    def median(x: Tensor, dim=None, keepdim: bool = False):
        if dim is not None:
            dim = _axis(op, x, dim, keepdim)
            return _picked(x, dim, _median_ids(x, dim, skip_nan), keepdim, result)
        if not x.size:
            raise ValueError(f"Tensor.{op}: the {op} of an empty tensor (shape {x.shape})")
        a = x.array.reshape(-1)
        value = a[_median_ids(x.new(a, requires_grad=False), 0, skip_nan)].reshape(())
        equal = (a == value) | ((a != a) & (value != value))  # a NaN median: the NaN
        share = (equal / equal.sum()).astype(x.dtype).reshape(x.shape)
        return unary.unary_op(x, value, lambda dout: dout * share, op)

    median.__name__ = median.__qualname__ = op
    which = "of the values that are not NaN (NaN if none is)" if skip_nan else "(NaN if any is)"
    median.__doc__ = (
        f"torch.Tensor.{op}: the lower median {which}: of all values, the value (its gradient "
        "shared evenly among its equals); along ``dim``, ``(values, indices)``, the gradient "
        "to the index."
    )
    return median


median = _median("median", False, Median)
nanmedian = _median("nanmedian", True, NanMedian)


def kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> KthValue:
    """torch.Tensor.kthvalue: ``(values, indices)`` of the ``k``-th smallest value (k from 1)
    along ``dim``, NaN counted as the largest; the gradient goes to the index."""
    dim = _axis("kthvalue", x, dim, keepdim)
    if checks.integer("Tensor.kthvalue", "k", k, 1) > x.shape[dim]:
        checks.fail("Tensor.kthvalue", "k", f"at most {x.shape[dim]} (shape {x.shape})", k)
    ids = x.xp.take(_sorted_ids(x, dim), x.xp.asarray([k - 1]), axis=dim)
    return _picked(x, dim, ids, keepdim, KthValue)


def mode(x: Tensor, dim: int = -1, keepdim: bool = False) -> Mode:
    """torch.Tensor.mode: ``(values, indices)`` of the most frequent value along ``dim`` (the
    smallest of those as frequent), the index that of its last entry; the gradient goes there."""
    dim = _axis("mode", x, dim, keepdim)
    xp, n = x.xp, x.shape[dim]
    order = xp.moveaxis(_sorted_ids(x, dim), dim, -1).reshape(-1, n)  # (R, n)
    rows = xp.take_along_axis(xp.moveaxis(x.array, dim, -1).reshape(-1, n), order, axis=-1)
    starts = xp.ones(rows.shape, dtype=bool)  # where a run of equal values begins
    starts[:, 1:] = rows[:, 1:] != rows[:, :-1]
    run = (xp.cumsum(starts.reshape(-1)) - 1).reshape(rows.shape)  # the run of each entry
    first = xp.flatnonzero(starts)  # (U,) where each run begins, row-major
    last = xp.concatenate([first[1:], xp.asarray([rows.size])]) - 1  # and where it ends
    longest = xp.argmax((last - first + 1)[run], axis=-1)  # the first: the smallest value, (R,)
    r = xp.arange(rows.shape[0])
    at = last[run[r, longest]] - r * n  # (R,) where that run ends in its row
    ids = order[r, at].reshape(x.shape[:dim] + x.shape[dim + 1 :])
    return _picked(x, dim, xp.expand_dims(ids, dim), keepdim, Mode)


# ------------------------------------------------------------------ quantiles
_ROUNDED = {"lower": "floor", "higher": "ceil", "nearest": "round"}  # the rank, by interpolation


def _quantile(op: str, skip_nan: bool):
    def quantile(x: Tensor, q, dim=None, keepdim: bool = False, *, interpolation="linear"):
        name = f"Tensor.{op}"
        if not backend.is_float(x.dtype):
            checks.fail(name, "input's dtype", "a float dtype", x.dtype, TypeError)
        if interpolation not in INTERPOLATIONS:
            checks.fail(name, "interpolation", f"one of {', '.join(INTERPOLATIONS)}", interpolation)
        checks.boolean(name, "keepdim", keepdim)
        xp, shape, levels = x.xp, x.shape, _levels(name, q)
        flat = ops.reshape(x, (-1,)) if dim is None else x
        axis = _axis(op, flat, 0 if dim is None else dim, keepdim)
        n, others = flat.shape[axis], [a for a in range(flat.ndim) if a != axis]
        s = ops.sort(ops.transpose(flat, others + [axis]), -1)  # (..., n), NaN last
        nans, levels = _nans(s, -1), xp.asarray(levels, dtype=x.dtype)  # (..., 1), (Q,)
        if skip_nan:  # ranks among the values that are not NaN; none: rank 0, a NaN
            rank = xp.maximum(levels * (n - nans - 1).astype(x.dtype), 0)
        else:  # a NaN makes the quantile NaN: the last value
            rank = xp.where(nans > 0, n - 1, levels * (n - 1))
        rank = xp.broadcast_to(rank, s.shape[:-1] + levels.shape)  # (..., Q)
        if interpolation in _ROUNDED:
            rank = getattr(xp, _ROUNDED[interpolation])(rank)
        below = xp.floor(rank).astype(np.int64)
        out = indexing.gather(s, -1, below)  # (..., Q)
        if interpolation in ("linear", "midpoint"):
            w = xp.full_like(rank, 0.5) if interpolation == "midpoint" else rank - xp.floor(rank)
            above = indexing.gather(s, -1, xp.ceil(rank).astype(np.int64))
            out = out + x.new(w, requires_grad=False) * (above - out)
        out = ops.transpose(out, [out.ndim - 1, *range(out.ndim - 1)])  # (Q, ...)
        if keepdim and dim is None:
            out = ops.reshape(out, levels.shape + (1,) * len(shape))
        elif keepdim:
            out = ops.expand_dims(out, 1 + axis)
        return ops.squeeze(out, 0) if np.ndim(getattr(q, "array", q)) == 0 else out

    quantile.__name__ = quantile.__qualname__ = op
    quantile.__doc__ = (
        f"torch.Tensor.{op}: the ``q``-quantiles (q a number or a 1-D tensor of them, in [0, 1]: "
        f"then the first axis) over ``dim`` (all values by default), by ``interpolation`` "
        f"({', '.join(INTERPOLATIONS)}){', NaN left out' if skip_nan else ''}."
    )
    return quantile


def _levels(name: str, q):
    """``q`` (a number, or a 0-d or 1-D tensor or array of them) as a 1-D host array, each
    in [0, 1]."""
    levels = np.asarray(backend.to_host_array(getattr(q, "array", q)))
    if levels.ndim > 1 or levels.dtype.kind not in "iuf" or isinstance(q, bool):
        expected = "a number or a 0-d or 1-D tensor of numbers in [0, 1]"
        checks.fail(name, "q", expected, q, TypeError)
    if not ((levels >= 0) & (levels <= 1)).all():
        checks.fail(name, "q", "in [0, 1]", q)
    return levels.reshape(-1)


quantile = _quantile("quantile", False)
nanquantile = _quantile("nanquantile", True)
