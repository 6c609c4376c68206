"""torch's functions that read or write a tensor at indices: ``take`` (entries at flat
indices), ``put`` (a copy written at flat indices), ``index_put`` (a copy written at a tuple of
index tensors, ``x[indices] = values`` out of place), ``index_reduce`` (a copy whose slices at
``index`` on ``dim`` are reduced with ``source``'s), ``unravel_index`` (flat indices as a tuple
of coordinates) and ``histogramdd`` (the counts of points in a grid of bins).

``take`` is an indexing of the flattened tensor, and ``put`` and ``index_reduce`` compositions
(of ``index_put`` and ``torch_scatter.scatter_reduce``), so their gradients are those ops';
``index_put`` is an op: the gradient of ``input`` is the output's, zero where it was written
(``accumulate=False``), and that of ``values`` the output's at the written places, summed back
to its shape. With ``accumulate=True`` repeated indices add up, as torch's; without it one of
them wins (torch leaves which undefined). Indices out of range are an IndexError naming the
function, as torch's. They are Tensor methods too (``x.take(i)``, ``x.index_put(...)``:
``tricycle.tensor_math``), with their in-place forms under ``add_``'s rule.
"""

import math

import numpy as np

from tricycle import binary, checks
from tricycle.graph import Node
from tricycle.torch_functions import no_out, tensor_input
from tricycle.torch_scatter import scatter_reduce


def _positions(op: str, indices, shape: tuple) -> tuple:
    """The index arrays of ``indices`` (integer or bool tensors, one per leading axis), bool
    masks as the positions of their true entries, each checked against ``shape``."""
    if isinstance(indices, Node) or not isinstance(indices, (tuple, list)):
        checks.fail(op, "indices", "a tuple of integer or bool tensors", indices, TypeError)
    positions, axis = [], 0
    for i, index in enumerate(indices):
        index = tensor_input(op, index, f"indices[{i}]")
        if index.dtype.kind == "b":
            if index.shape != shape[axis : axis + index.ndim]:
                expected = f"a mask of the shape {shape[axis : axis + index.ndim]} it indexes"
                checks.fail(op, f"indices[{i}]", expected, index.shape, IndexError)
            positions.extend(index.xp.nonzero(index.array))
            axis += index.ndim
            continue
        if index.dtype.kind not in "iu":
            checks.fail(op, f"indices[{i}]", "an integer or bool tensor", index.dtype, IndexError)
        if axis >= len(shape):
            checks.fail(op, "indices", f"at most {len(shape)} of them", len(indices), IndexError)
        size, array = shape[axis], index.array
        if array.size and (int(array.min()) < -size or int(array.max()) >= size):
            expected = f"indices in [-{size}, {size}) for axis {axis} of size {size}"
            checks.fail(op, f"indices[{i}]", expected, array.tolist(), IndexError)
        positions.append(array)
        axis += 1
    return tuple(positions)


def index_put(input, indices, values, accumulate: bool = False):  # noqa: A002 - torch's names
    """torch.index_put: a copy of ``input`` with ``values`` (broadcast) written at
    ``input[indices]``, or added there where ``accumulate`` (see the module's doc)."""
    x = tensor_input("index_put", input)
    at = _positions("index_put", indices, x.shape)
    v = binary.constant(values, x, "index_put")
    xp, out = x.xp, x.array.copy()
    target = out[at].shape
    try:
        written = xp.broadcast_to(v.array.astype(x.dtype, copy=False), target)
    except ValueError:
        raise ValueError(f"index_put: values of shape {v.shape} cannot be broadcast to the "
                         f"indexed shape {target}") from None  # fmt: skip
    if accumulate:
        xp.add.at(out, at, written)  # repeated indices add up
    else:
        out[at] = written

    def input_grad(dout):
        if accumulate:
            return dout
        kept = dout.copy()
        kept[at] = 0
        return kept

    def values_grad(dout):
        return binary.unbroadcast(dout[at], v.shape).astype(v.dtype, copy=False)

    return x.new(out, args=(x, v), back_fns=(input_grad, values_grad), name="index_put")


def take(input, index):  # noqa: A002 - torch's names
    """torch.take: the entries of ``input`` (as if flattened) at the integer tensor ``index``,
    in index's shape; negative indices count from the end."""
    x, i = tensor_input("take", input), tensor_input("take", index, "index")
    (at,) = _positions("take", (i,), (x.size,))
    return x.reshape(-1)[at]


def put(input, index, source, accumulate: bool = False):  # noqa: A002 - torch's names
    """torch.put: a copy of ``input`` (as if flattened) with ``source``'s entries written at
    the flat positions ``index`` (added there where ``accumulate``)."""
    x = tensor_input("put", input)
    i, s = tensor_input("put", index, "index"), tensor_input("put", source, "source")
    if i.size != s.size:
        expected = f"as many entries as index ({i.size})"
        checks.fail("put", "source", expected, f"shape {s.shape}", RuntimeError)
    flat = index_put(x.reshape(-1), (i.reshape(-1),), s.reshape(-1), accumulate)
    return flat.reshape(x.shape)


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim: int, index, source, reduce: str, *, include_self: bool = True,  # noqa: A002
                 out=None):  # fmt: skip
    """torch.index_reduce: a copy of ``input`` whose slice ``index[j]`` on ``dim`` is reduced
    (``reduce``: "prod", "mean", "amax" or "amin") with ``source``'s slice j, the input's own
    values taking part where ``include_self``: ``scatter_reduce`` with ``index`` spread
    along ``dim`` over source's shape."""
    no_out("index_reduce", out)
    x, s = tensor_input("index_reduce", input), tensor_input("index_reduce", source, "source")
    i = tensor_input("index_reduce", index, "index")
    if reduce not in _INDEX_REDUCTIONS:
        checks.fail("index_reduce", "reduce", " or ".join(map(repr, _INDEX_REDUCTIONS)), reduce)
    dim = checks.axis("index_reduce", "dim", dim, x.ndim, x.shape)
    if i.ndim != 1 or i.dtype.kind not in "iu" or s.ndim != x.ndim or len(i) != s.shape[dim]:
        expected = f"a 1-d integer index of source's length on dim {dim} ({x.ndim}-d source)"
        checks.fail("index_reduce", "index and source", expected, f"{i.shape}, {s.shape}")
    spread = [1] * s.ndim
    spread[dim] = -1
    where = i.xp.broadcast_to(i.array.reshape(spread), s.shape)
    return scatter_reduce(x, dim, x.new(where), s, reduce, include_self=include_self)


def unravel_index(indices, shape):
    """torch.unravel_index: the flat ``indices`` (an integer tensor; negative ones count from
    the end) as a tuple of int64 coordinate tensors into ``shape``, each of indices' shape."""
    i = tensor_input("unravel_index", indices, "indices")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if i.dtype.kind not in "iu" or any(not checks.is_integer(n) or n < 0 for n in shape):
        expected = "an integer tensor and a shape of non-negative ints"
        checks.fail("unravel_index", "indices and shape", expected, f"{i.dtype}, {shape}")
    total, array = math.prod(shape), i.array.astype(np.int64)
    if array.size and (int(array.min()) < -total or int(array.max()) >= total):
        expected = f"indices in [-{total}, {total}) for shape {shape}"
        checks.fail("unravel_index", "indices", expected, array.tolist(), IndexError)
    coordinates = i.xp.unravel_index(array % max(total, 1), shape)
    return tuple(i.new(c.astype(np.int64), requires_grad=False) for c in coordinates)


def histogramdd(input, bins=10, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """torch.histogramdd: ``(hist, bin_edges)`` of the D-dimensional points of ``input`` (its
    last axis the coordinates), with no gradient: ``bins`` an int or one per axis (equal bins
    over ``range``, a flat [min0, max0, min1, max1 ...], or the points' min and max), or a
    sequence of 1-d edge tensors; each point counts its ``weight``; ``density`` divides by the
    total weight times the bin's volume."""
    x = tensor_input("histogramdd", input)
    if x.ndim < 1 or not x.dtype.kind == "f":
        checks.fail("histogramdd", "input", "a float tensor of points (..., D)", x.dtype)
    points, d = x.array.reshape(-1, x.shape[-1]), x.shape[-1]
    if isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Node):
        bins = [b.array for b in bins]
    spans = None if range is None else [float(v) for v in range]
    if spans is not None and len(spans) != 2 * d:
        checks.fail("histogramdd", "range", f"{2 * d} numbers (min, max per axis)", range)
    spans = spans and list(zip(spans[::2], spans[1::2]))
    w = None if weight is None else tensor_input("histogramdd", weight, "weight").array
    hist, edges = x.xp.histogramdd(
        points, bins, range=spans, weights=None if w is None else w.reshape(-1), density=density
    )
    made = x.new(hist.astype(x.dtype), requires_grad=False)
    return made, [x.new(e.astype(x.dtype), requires_grad=False) for e in edges]


def unfold(input, dimension: int, size: int, step: int):  # noqa: A002 - torch's names
    """torch.Tensor.unfold: every slice of ``size`` entries on ``dimension``, ``step`` apart,
    that fits, as a new axis in place of ``dimension`` (its count) and a last axis of ``size``
    (their entries): an indexing, so the gradient flows back to each window's entries (summed
    where windows overlap)."""
    op = "Tensor.unfold"
    x = tensor_input(op, input)
    if x.ndim == 0:
        checks.fail(op, "input", "a tensor with at least one axis", x.shape)
    dim = checks.axis(op, "dimension", dimension, x.ndim, x.shape)
    length = x.shape[dim]
    if not checks.is_integer(size) or not 0 <= size <= length:
        checks.fail(op, "size", f"an int in [0, {length}] (the size of dimension {dim})", size)
    checks.positive_int(op, "step", step)
    starts = np.arange(0, length - size + 1, step).reshape(-1, 1)
    at = x.xp.asarray(starts + np.arange(size).reshape(1, -1))  # (count, size)
    return x.movedim(dim, -1)[..., at].movedim(-2, dim)


def sum_to_size(input, *size):  # noqa: A002 - torch's names
    """torch.Tensor.sum_to_size: ``input`` summed down to ``size``, a shape it broadcasts from
    (the leading axes and those of size 1 summed), as a gradient is summed back."""
    x = tensor_input("Tensor.sum_to_size", input)
    shape = tuple(size[0]) if len(size) == 1 and not checks.is_integer(size[0]) else size
    lead = x.ndim - len(shape)
    fits = lead >= 0 and all(n in (1, m) for n, m in zip(shape, x.shape[lead:]))
    if not fits:
        expected = f"a shape that broadcasts to the tensor's {x.shape}"
        checks.fail("Tensor.sum_to_size", "size", expected, shape, RuntimeError)
    ones = (lead + i for i, n in enumerate(shape) if n == 1 and x.shape[lead + i] != 1)
    axes = (*range(lead), *ones)
    return (x.sum(dim=axes, keepdim=True) if axes else x).reshape(shape)
