"""torch's top-level functions that select, scatter and test values:

- ``take_along_dim`` (``gather`` with the ids broadcast against the input; of the flattened
  input without ``dim``), ``masked_select`` (input and mask broadcast together), ``argwhere``;
- ``scatter_reduce(input, dim, index, src, reduce, include_self=True)``: the one op of its own
  here (below); ``select_scatter``, ``slice_scatter`` and ``diagonal_scatter``: the input with
  one slice, a range of slices or a diagonal replaced by ``src`` (``tricycle.indexing``'s
  ``index_put``, whose gradients are dout but where written, and dout read there);
- ids and values with no gradient: ``isin``, ``unique_consecutive``, ``tril_indices``,
  ``triu_indices``, ``isposinf``, ``isneginf``, ``isreal`` (True for every real value), and the
  questions ``is_floating_point``, ``is_complex`` and ``is_nonzero``.

scatter_reduce. Every entry of the output is reduced over its contributors: the input's own
value (for every entry if ``include_self``, else only for the entries nothing is scattered to)
and the ``src`` values whose ids point at it. With contributors v and their targets t:
"sum" and "mean" (floor division for integers, as torch's) add them up; "prod" multiplies;
"amax" and "amin" keep the largest or smallest. The gradient of a contributor is dout at its
target times d(out)/dv: 1, 1 / count, the product of the others in its group (the zeros
counted apart), or for amax/amin 1 / (the number of ties) where v equals the result,
0 elsewhere, as torch's, which shares a tie's gradient evenly (and counts among the ties an
input value left out by ``include_self=False``, which itself gets none).
"""

import numpy as np

from tricycle import backend, checks, dispatch, indexing, ops, ranges
from tricycle.torch_functions import no_out, tensor, tensor_input

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def take_along_dim(input, indices, dim=None, *, out=None):  # noqa: A002 - torch's names
    """torch.take_along_dim: the values at ``indices`` along ``dim``, the other axes of input
    and indices broadcast together (numpy's ``take_along_axis``); without ``dim``, of the
    flattened input at the flattened indices. The gradient goes back to the values taken."""
    no_out("take_along_dim", out)
    x = tensor_input("take_along_dim", input)
    ids = indexing.ids_of(x, "take_along_dim", indices)
    if dim is None:
        return ops.reshape(x, (-1,)).gather(0, ids.reshape(-1))
    dim = checks.axis("take_along_dim", "dim", dim, x.ndim, x.shape)
    if ids.ndim != x.ndim:
        checks.fail("take_along_dim", "indices' shape", f"{x.ndim} axes, as input's", ids.shape)
    lead = [1 if d == dim else n for d, n in enumerate(x.shape)]
    rest = [1 if d == dim else n for d, n in enumerate(ids.shape)]
    try:
        shape = list(np.broadcast_shapes(tuple(lead), tuple(rest)))
    except ValueError:
        expected = f"one that broadcasts with input {x.shape} but along dim {dim}"
        checks.fail("take_along_dim", "indices' shape", expected, ids.shape)
    x = x.expand(*(x.shape[d] if d == dim else n for d, n in enumerate(shape)))
    ids = x.xp.broadcast_to(ids, [ids.shape[d] if d == dim else n for d, n in enumerate(shape)])
    return x.gather(dim, ids)


def masked_select(input, mask, *, out=None):  # noqa: A002
    """torch.masked_select: the values where ``mask`` holds, input and mask broadcast
    together, in row-major order as one axis; the gradient goes back to them."""
    no_out("masked_select", out)
    x = tensor_input("masked_select", input)
    mask = tensor_input("masked_select", mask, "mask")
    if mask.dtype != bool:
        checks.fail("masked_select", "mask's dtype", "bool", mask.dtype, TypeError)
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return x.expand(*shape).masked_select(mask.array)


def argwhere(input):  # noqa: A002
    """torch.argwhere: the int64 ids (N, ndim) of the N nonzero values (``nonzero``)."""
    return tensor_input("argwhere", input).nonzero()


# ------------------------------------------------------------------------- scatter_reduce
def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True,  # noqa: A002
                   out=None):  # fmt: skip
    """torch.scatter_reduce: a copy of ``input`` whose entry at index[i][j] (for dim 0) is
    reduced with src[i][j], by ``reduce`` ("sum", "prod", "mean", "amax", "amin"); the
    input's own value takes part where ``include_self`` (see the module's doc)."""
    no_out("scatter_reduce", out)
    op = "scatter_reduce"
    x, src = tensor_input(op, input), tensor_input(op, src, "src")
    checks.one_of(_REDUCTIONS)(op, "reduce", reduce)
    checks.boolean(op, "include_self", include_self)
    dim = checks.axis(op, "dim", dim, x.ndim, x.shape)
    ids = indexing.ids_of(x, op, index)
    longer = [d for d, (m, n) in enumerate(zip(ids.shape, x.shape)) if m > n and d != dim]
    if ids.ndim != x.ndim or longer or any(m > n for m, n in zip(ids.shape, src.shape)):
        expected = f"{x.ndim} axes, none longer than src's {src.shape} nor (but dim {dim})"
        checks.fail(op, "index shape", f"{expected} than input's {x.shape}", ids.shape)
    if src.dtype != x.dtype:
        checks.fail(op, "src's dtype", f"the input's, {x.dtype}", src.dtype, TypeError)
    xp = backend.check_same_device(op, x.array, ids, src.array)
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, x.shape[dim], op=op, what="index", context=f"for dim {dim} of shape {x.shape}")
    at = list(xp.ogrid[tuple(slice(m) for m in ids.shape)])
    at[dim] = ids
    written = tuple(slice(m) for m in ids.shape)  # the part of src used
    t_src = xp.arange(x.size).reshape(x.shape)[tuple(at)].reshape(-1)  # each one's target
    kept = xp.ones(x.size, dtype=bool)
    if not include_self:
        kept[t_src] = False  # the input's value takes no part where something is scattered
    t_self = xp.flatnonzero(kept)
    t = xp.concatenate([t_self, t_src])  # (m,) the contributors' targets, then their values
    v = xp.concatenate([x.array.reshape(-1)[t_self], src.array[written].reshape(-1)])
    left_out = xp.flatnonzero(~kept)  # the input's values that take no part
    reduced, d_dv = _reduce(xp, reduce, x.size, t, v, (left_out, x.array.reshape(-1)[left_out]))

    def dx(dout):
        grad = xp.zeros(x.size, dtype=dout.dtype)
        grad[t_self] = (dout.reshape(-1)[t] * d_dv)[: t_self.size]
        return grad.reshape(x.shape)

    def dsrc(dout):
        grad = xp.zeros(src.shape, dtype=dout.dtype)
        grad[written] = (dout.reshape(-1)[t] * d_dv)[t_self.size :].reshape(ids.shape)
        return grad

    dx.reduce = dsrc.reduce = reduce  # (create_graph's rule: prod's d_dv depend on the values)
    out = reduced.reshape(x.shape).astype(x.dtype, copy=False)
    return x.new(out, args=(x, src), back_fns=(dx, dsrc), name=op)


def _reduce(xp, reduce: str, size: int, t, v, left_out):
    """The ``size`` entries reduced over the contributors ``v`` at targets ``t`` (each entry
    has at least one), and d(entry)/dv for every contributor (see the module's doc); the
    input's values ``left_out`` (targets, values) still count among amax's
    and amin's ties, as torch's."""
    count = xp.zeros(size, dtype=np.int64)
    xp.add.at(count, t, 1)
    if reduce in ("sum", "mean"):
        total = xp.zeros(size, dtype=v.dtype)
        xp.add.at(total, t, v)
        if reduce == "sum":
            return total, xp.ones(v.shape, dtype=v.dtype)
        if v.dtype.kind in "iub":
            return total // count, xp.zeros(v.shape, dtype=v.dtype)
        return total / count, 1 / count[t].astype(v.dtype)
    if reduce == "prod":  # the zeros counted apart, so that nothing is divided by 0
        safe = xp.where(v == 0, xp.ones_like(v), v)
        nonzero, zeros = _folded(xp, xp.multiply, 1, size, t, safe), xp.zeros(size, dtype=np.int64)
        xp.add.at(zeros, t, (v == 0).astype(np.int64))
        others = xp.where(v == 0, nonzero[t] * (zeros[t] == 1), nonzero[t] / safe * (zeros[t] == 0))
        return nonzero * (zeros == 0), others.astype(v.dtype, copy=False)
    kind = v.dtype.kind
    low, high = (-np.inf, np.inf) if kind == "f" else (0, 1) if kind == "b" else (
        np.iinfo(v.dtype).min, np.iinfo(v.dtype).max)  # fmt: skip
    extreme = (xp.maximum, low) if reduce == "amax" else (xp.minimum, high)
    best = _folded(xp, *extreme, size, t, v)
    tie = v == best[t]
    ties = xp.zeros(size, dtype=np.int64)
    xp.add.at(ties, t, tie.astype(np.int64))
    ties[left_out[0]] += left_out[1] == best[left_out[0]]
    return best, (tie / ties[t]).astype(v.dtype, copy=False)


def _folded(xp, combine, start, size: int, t, v):
    """Each target's contributors folded by ``combine`` (``xp.multiply``, ``xp.maximum``...)
    from ``start``: one fancy-indexed step per rank in the largest group, exact in every dtype
    (cupy's ``maximum.at`` rounds float64, and ``multiply.at`` is numpy's alone)."""
    order = xp.argsort(t, kind="stable")
    sorted_t = t[order]
    rank = xp.arange(t.size) - xp.searchsorted(sorted_t, sorted_t, side="left")
    folded = xp.full(size, start, dtype=v.dtype)
    for r in range(int(rank.max()) + 1 if t.size else 0):
        these = order[rank == r]  # one contributor of each group: no target twice
        folded[t[these]] = combine(folded[t[these]], v[these])
    return folded


# ------------------------------------------------------------------------- replacing slices
def _embedded(op: str, input, src, where):  # noqa: A002
    """``input`` with ``src`` written at ``where(x, positions)`` (an index of x, or of the
    flattened x for an array of positions), which must select exactly src's shape."""
    x, src = tensor_input(op, input), tensor_input(op, src, "src")
    index = where(x, x.xp.arange(x.size).reshape(x.shape))
    flat = not isinstance(index, tuple)
    shape = index.shape if flat else x.array[index].shape
    if src.shape != shape:
        checks.fail(op, "src's shape", f"{shape}, the part of input {x.shape} written", src.shape)
    if src.dtype != x.dtype:
        checks.fail(op, "src's dtype", f"the input's, {x.dtype}", src.dtype, TypeError)
    if not flat:
        return indexing.index_put(x, index, src)
    return ops.reshape(indexing.index_put(ops.reshape(x, (-1,)), index, src), x.shape)


def select_scatter(input, src, dim: int, index: int):  # noqa: A002
    """torch.select_scatter: ``input`` with the slice ``index`` of axis ``dim`` replaced by
    ``src`` (of that slice's shape)."""

    def where(x, _):
        d = checks.axis("select_scatter", "dim", dim, x.ndim, x.shape)
        n = x.shape[d]
        i = checks.integer("select_scatter", "index", index)
        if not -n <= i < n:
            checks.fail("select_scatter", "index", f"in [-{n}, {n}) for dim {d} of {x.shape}", i)
        return (slice(None),) * d + (i,)

    return _embedded("select_scatter", input, src, where)


def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):  # noqa: A002
    """torch.slice_scatter: ``input`` with the slices ``start:end:step`` of axis ``dim``
    replaced by ``src`` (of their shape)."""

    def where(x, _):
        d = checks.axis("slice_scatter", "dim", dim, x.ndim, x.shape)
        checks.positive_int("slice_scatter", "step", step)
        return (slice(None),) * d + (slice(start, end, step),)

    return _embedded("slice_scatter", input, src, where)


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """torch.diagonal_scatter: ``input`` with its diagonal (``diagonal(input, offset, dim1,
    dim2)``: the other axes, then the diagonal last) replaced by ``src``."""

    def where(x, positions):
        a = checks.axis("diagonal_scatter", "dim1", dim1, x.ndim, x.shape)
        b = checks.axis("diagonal_scatter", "dim2", dim2, x.ndim, x.shape)
        if a == b:
            checks.fail("diagonal_scatter", "dim2", f"an axis other than dim1={dim1}", dim2)
        return x.xp.diagonal(positions, checks.integer("diagonal_scatter", "offset", offset), a, b)

    return _embedded("diagonal_scatter", input, src, where)


# ------------------------------------------------------------------------- ids and values
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """torch.isin: booleans of ``elements``' shape, True where the value is among
    ``test_elements`` (False there with ``invert``); either may be a number."""
    if not any(hasattr(v, "array") for v in (elements, test_elements)):
        raise TypeError("isin: elements or test_elements must be a Tensor, got two numbers")
    like = elements if hasattr(elements, "array") else test_elements
    xp = like.xp
    values, tests = (xp.asarray(getattr(v, "array", v)) for v in (elements, test_elements))
    found = xp.isin(values, tests, assume_unique=assume_unique, invert=invert)
    return like.new(found, requires_grad=False)


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,  # noqa: A002
                       dim=None):  # fmt: skip
    """torch.unique_consecutive: the first value of every run of equal values (of the
    flattened input, or the first slice of every run of equal slices along ``dim``), with the
    int64 id of each value's run (``return_inverse``) and the runs' lengths
    (``return_counts``); no gradient, as torch's."""
    x = tensor_input("unique_consecutive", input)
    checks.boolean("unique_consecutive", "return_inverse", return_inverse)
    checks.boolean("unique_consecutive", "return_counts", return_counts)
    xp = x.xp
    if dim is None:
        rows = x.array.reshape(-1, 1)
    else:
        dim = checks.axis("unique_consecutive", "dim", dim, x.ndim, x.shape)
        rows = xp.moveaxis(x.array, dim, 0).reshape(x.shape[dim], -1)
    starts = xp.ones(rows.shape[0], dtype=bool)  # where a run starts
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    first = xp.flatnonzero(starts)
    values = x.array.reshape(-1)[first] if dim is None else xp.take(x.array, first, axis=dim)
    found = [values]
    if return_inverse:
        inverse = xp.cumsum(starts) - 1
        found.append(inverse.reshape(x.shape) if dim is None else inverse)
    if return_counts:
        found.append(xp.diff(xp.append(first, rows.shape[0])))
    found = [x.new(a if i == 0 else a.astype(np.int64), requires_grad=False)
             for i, a in enumerate(found)]  # fmt: skip
    return found[0] if len(found) == 1 else tuple(found)


def _triangle_indices(op: str, numpy_indices, row, col, offset, dtype, device):
    row, col = (checks.non_negative_int(op, n, v) for n, v in (("row", row), ("col", col)))
    ids = np.stack(numpy_indices(row, checks.integer(op, "offset", offset), col))
    return tensor(ids.reshape(2, -1), dtype=np.int64 if dtype is None else dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None):  # fmt: skip
    """torch.tril_indices: the (2, N) ids, row by row, of the entries of a ``row`` x ``col``
    matrix on or below its ``offset`` diagonal (int64 unless ``dtype``)."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None,
                 layout=None):  # fmt: skip
    """torch.triu_indices: the (2, N) ids, row by row, of the entries of a ``row`` x ``col``
    matrix on or above its ``offset`` diagonal (int64 unless ``dtype``)."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def _test(op: str, input, test, out=None):  # noqa: A002
    no_out(op, out)
    x = tensor_input(op, input)
    return x.new(test(x.xp, x.array), requires_grad=False)


def isposinf(input, *, out=None):  # noqa: A002
    """torch.isposinf: booleans, True where ``input`` is +inf."""
    return _test("isposinf", input, lambda xp, a: _infinite("isposinf", xp.isposinf, xp, a), out)


def isneginf(input, *, out=None):  # noqa: A002
    """torch.isneginf: booleans, True where ``input`` is -inf."""
    return _test("isneginf", input, lambda xp, a: _infinite("isneginf", xp.isneginf, xp, a), out)


def _infinite(op: str, test, xp, a):
    """``test`` (isposinf, isneginf) of a float array; all False for an integer one; torch's
    error for a complex one (numpy's would not name the op)."""
    if a.dtype.kind == "c":
        raise RuntimeError(f"{op}: not implemented for complex tensors, got {a.dtype} of "
                           f"shape {a.shape}")  # fmt: skip
    return test(a) if a.dtype.kind == "f" else xp.zeros(a.shape, dtype=bool)


def isreal(input):  # noqa: A002
    """torch.isreal: booleans, True where the imaginary part is 0 (every value of a real
    tensor, tricycle's only kind)."""
    return _test("isreal", input, lambda xp, a: xp.isreal(a))


def is_floating_point(input) -> bool:  # noqa: A002
    """torch.is_floating_point: whether ``input``'s dtype is a floating one."""
    return tensor_input("is_floating_point", input).is_floating_point()


def is_complex(input) -> bool:  # noqa: A002
    """torch.is_complex: whether ``input``'s dtype is a complex one (never, for tricycle's)."""
    return tensor_input("is_complex", input).dtype.kind == "c"


def is_nonzero(input) -> bool:  # noqa: A002
    """torch.is_nonzero: whether the one value of ``input`` is not 0; a RuntimeError, as
    torch's, for a tensor of no value or of several."""
    x = tensor_input("is_nonzero", input)
    if x.size != 1:
        many = "no values" if x.size == 0 else "more than one value"
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with {many} is ambiguous "
                           f"(shape {x.shape})")  # fmt: skip
    return bool(x.array.reshape(()) != 0)
