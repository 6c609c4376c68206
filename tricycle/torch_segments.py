"""torch.segment_reduce: a reduction over each run of consecutive elements along an axis.

``segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0,
unsafe=False, initial=None)`` cuts ``data`` along ``axis`` into S segments, given as their
``lengths`` (S,) or as ``offsets`` (S + 1,), where each starts and the last ends; both may
carry the leading dims of ``data`` before ``axis`` (``axis`` is their last dim), one set of
segments per leading index. The output has ``data``'s shape with ``axis`` of size S::

    sum, prod      the segment's sum or product (times ``initial`` / plus it)
    max, min       its largest or smallest ("amax", "amin" too), or ``initial`` if beyond
    mean           (sum + initial) / length

An empty segment gives torch's: 0 (sum), 1 (prod), -inf (max), inf (min), nan (mean), or
``initial`` when one is given. Unless ``unsafe``, the lengths must sum to the axis' size.

Each segment is a mask over the axis, (S, N), so the reduction is numpy's over a (.., S, N,
R) array with the other elements filled with the reduction's identity: O(S N) memory, meant
for the segment counts of a batch, not millions. The gradient, as torch's: each element
gets its segment's output gradient (sum), divided by the length (mean), shared equally among
the elements equal to the largest (max, min), or times the product of the segment's other
elements and ``initial`` (prod: exact with zeros, from the products to its left and right).
One difference: torch's CPU kernel divides only the positive gradients among tied elements
(a negative one reaches each tie whole); tricycle shares every gradient equally.
"""

import math

import numpy as np

from tricycle import backend, checks
from tricycle.graph import check_float
from tricycle.tensor import Tensor, as_tensor

__all__ = ["segment_reduce"]

REDUCTIONS = {"sum": "sum", "mean": "mean", "prod": "prod", "max": "max", "amax": "max",
              "min": "min", "amin": "min"}  # fmt: skip
IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}


def _bounds(op: str, lengths, offsets, axis: int, size: int, unsafe: bool, xp):
    """(starts, ends), each (*lead, S): where each segment starts and ends along the axis."""
    given = lengths if lengths is not None else offsets
    name = "lengths" if lengths is not None else "offsets"
    values = given.array if isinstance(given, Tensor) else given
    values = xp.asarray(backend.to_host_array(values))  # onto the data's device
    if values.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: {name} must be integers, got dtype {values.dtype}")
    if values.ndim - 1 != axis:
        raise RuntimeError(f"{op}: expected axis to be the last dimension of {name} (shape "
                           f"{values.shape}) but got {axis}")  # fmt: skip
    values = values.astype(np.int64)
    if lengths is None:
        if bool((values[..., 1:] < values[..., :-1]).any()):
            raise RuntimeError(f"{op}: offsets must not decrease (each segment's length "
                               f"offsets[i + 1] - offsets[i] >= 0), got "
                               f"{values.tolist()}")  # fmt: skip
        return values[..., :-1], values[..., 1:]
    if bool((values < 0).any()):
        raise RuntimeError(f"{op}: lengths contains negative value!")
    ends = values.cumsum(axis=-1)
    if not unsafe and bool((ends[..., -1:] != size).any()):
        raise RuntimeError(f"{op}: expected all rows of lengths along axis to sum to "
                           f"data.size({axis}) = {size} when not unsafe")  # fmt: skip
    return ends - values, ends


def segment_reduce(
    data,
    reduce: str,
    *,
    lengths=None,
    indices=None,
    offsets=None,
    axis: int = 0,
    unsafe: bool = False,
    initial=None,
) -> Tensor:
    """torch.segment_reduce: ``reduce`` over each segment of ``data`` along ``axis`` (see the
    module's doc); differentiable in ``data``."""
    op = "segment_reduce"
    data = as_tensor(data)
    check_float(op, data)
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"{op}: reduce argument must be either sum, prod, mean, amax or "
                           f"amin, got {reduce!r}")  # fmt: skip
    reduce = REDUCTIONS[reduce]
    if data.ndim == 0:
        raise RuntimeError(f"{op}: expected data of at least one dimension, got a 0-d tensor")
    if indices is not None:
        raise RuntimeError(f"{op}: indices based reduction is not supported yet (as torch's)")
    if lengths is None and offsets is None:
        raise RuntimeError(f"{op}: either lengths or offsets must be defined")
    axis = checks.axis(op, "axis", axis, max(data.ndim, 1), data.shape)
    checks.boolean(op, "unsafe", unsafe)
    xp, shape = data.xp, data.shape
    starts, ends = _bounds(op, lengths, offsets, axis, shape[axis], unsafe, xp)
    lead, size, rest = shape[:axis], shape[axis], shape[axis + 1 :]
    if starts.shape[:-1] != lead:
        raise RuntimeError(f"{op}: the leading dims of lengths/offsets {starts.shape[:-1]} "
                           f"must be data's before axis {axis}, {lead}")  # fmt: skip
    n = xp.arange(size)
    inside = (starts[..., None] <= n) & (n < ends[..., None])  # (*lead, S, N)
    x = data.array.reshape(*lead, 1, size, math.prod(rest))  # (*lead, 1, N, R)
    masked = xp.where(inside[..., None], x, IDENTITY[reduce])  # (*lead, S, N, R)
    counts = (ends - starts).astype(data.dtype)[..., None]  # (*lead, S, 1)
    out = _reduced(masked, reduce, counts, initial, xp).astype(data.dtype)

    def back_fn(dout):
        dout = dout.reshape(out.shape)[..., None, :]  # (*lead, S, 1, R)
        share = _shares(masked, inside[..., None], reduce, out, counts, initial, xp)
        return (share * dout).sum(axis=-3).astype(data.dtype).reshape(shape)

    result = out.reshape(*lead, out.shape[-2], *rest)
    return data.new(result, args=(data,), back_fns=(back_fn,), name=f"segment_reduce {reduce}")


def _reduced(masked, reduce: str, counts, initial, xp):
    """(*lead, S, R): the reduction of each segment of ``masked`` (*lead, S, N, R)."""
    if reduce in ("max", "min"):
        if masked.shape[-2] == 0:  # no elements: numpy's max has no identity of its own
            out = xp.full(masked.shape[:-2] + masked.shape[-1:], IDENTITY[reduce])
        else:
            out = masked.max(axis=-2) if reduce == "max" else masked.min(axis=-2)
        bound = xp.maximum if reduce == "max" else xp.minimum
        return out if initial is None else bound(out, initial)
    if reduce == "prod":
        return masked.prod(axis=-2) * (1 if initial is None else initial)
    total = masked.sum(axis=-2) + (0 if initial is None else initial)
    if reduce == "sum":
        return total
    empty = np.nan if initial is None else initial  # mean
    return xp.where(counts > 0, total / xp.maximum(counts, 1), empty)


def _shares(masked, inside, reduce: str, out, counts, initial, xp):
    """(*lead, S, N, R): d out[s] / d data[n] for each segment s and element n."""
    if reduce == "sum":
        return inside
    if reduce == "mean":
        return inside / xp.maximum(counts, 1)[..., None]
    if reduce in ("max", "min"):
        hits = inside & (masked == out[..., None, :])
        return hits / xp.maximum(hits.sum(axis=-2, keepdims=True), 1)
    ones = xp.ones_like(masked[..., :1, :])  # prod: the products left and right of each n
    left = xp.concatenate([ones, masked[..., :-1, :]], axis=-2).cumprod(axis=-2)
    flipped = xp.flip(masked, axis=-2)
    right = xp.flip(xp.concatenate([ones, flipped[..., :-1, :]], axis=-2).cumprod(axis=-2), -2)
    return xp.where(inside, left * right * (1 if initial is None else initial), 0)
