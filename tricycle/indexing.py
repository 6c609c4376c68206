"""Indexing by arrays of ids, as torch's ``Tensor`` methods: ``index_select``, ``select``,
``gather`` and its adjoint ``scatter_add``, ``scatter``, ``index_add``, ``index_copy``,
``index_fill``, ``masked_scatter``, ``index_put``, ``diagonal`` and ``diag``, ``masked_select``,
``repeat_interleave``, ``topk``, and ``nonzero``, ``count_nonzero`` and ``unique``.

A selection is ``getitem`` (``tricycle.ops``), whose gradient goes back to the entries
selected (adding up where one was taken twice). ``scatter`` is the one op of its own here:
the output is x with src's entries written at the ids, so dx is dout but where something was
written, and dsrc is dout read at the ids (``gather``); ``scatter_add`` adds them instead, so
dx is dout. Its ids must lie in their axis (torch refuses a negative one), checked as an
embedding's are (``tricycle.ranges``: on a GPU at the next read-back). ``index_add``,
``index_copy``, ``index_fill``, ``masked_scatter`` and ``fill_diagonal`` (the values of torch's
``fill_diagonal_``) are scatters too: of whole slices along an axis, or of the flattened
tensor at the positions written. ``nonzero``,
``count_nonzero`` and ``unique`` give ids, counts and values with no gradient; the sizes of
``nonzero``'s and ``unique``'s results depend on the values, which they read back, as torch's.

``tricycle.tensor_torch`` makes each a ``Tensor`` method (``x.scatter(0, ids, src)``) that
imports this module when first called (``tricycle.tensor`` the in-place forms, ``index_add_``
...); ``tricycle.torch_indexing`` has torch's functions.
"""

import numbers
from collections import namedtuple

import numpy as np

from tricycle import backend, binary, checks, dispatch, ops, ranges
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node

TopK = namedtuple("TopK", ["values", "indices"])  # as torch.return_types.topk


def _beside(x: Tensor, op: str, value):
    """``value`` (a Tensor, an array or a list) as an array on x's device: host data is
    copied there; a GPU array for a tensor elsewhere is a ValueError naming ``op``."""
    array = value.array if isinstance(value, Tensor) else value
    if backend.is_cupy_array(array):
        backend.check_same_device(op, x.array, array)
    return x.xp.asarray(array)


def ids_of(x: Tensor, op: str, index):
    """``index`` (a Tensor, array or list of integers) as an array beside ``x``'s."""
    ids = _beside(x, op, index)
    if ids.dtype.kind not in "iu":
        checks.fail(op, "index", "integers", index, TypeError)
    return ids


def _at(xp, ids, dim: int) -> tuple:
    """Where the entries of ``ids`` point: along ``dim`` the ids, along each other axis the
    id's own position, ((m0, 1, ...), (1, m1, ...), ...), as numpy's indexing reads them."""
    at = list(xp.ogrid[tuple(slice(m) for m in ids.shape)])
    at[dim] = ids
    return tuple(at)


# ------------------------------------------------------------------ selections
def index_select(x: Tensor, dim: int, index) -> Tensor:
    """torch.Tensor.index_select: the entries ``index`` (1-D) of axis ``dim``."""
    dim = checks.axis("Tensor.index_select", "dim", dim, x.ndim, x.shape)
    ids = ids_of(x, "Tensor.index_select", index)
    if ids.ndim > 1:
        checks.fail("Tensor.index_select", "index", "1-D", index)
    return ops.getitem(x, (slice(None),) * dim + (ids.reshape(-1),))


def select(x: Tensor, dim: int, index: int) -> Tensor:
    """torch.Tensor.select: the slice at ``index`` (from the end if negative) of axis ``dim``,
    that axis removed."""
    dim = checks.axis("Tensor.select", "dim", dim, x.ndim, x.shape)
    n = x.shape[dim]
    if not -n <= checks.integer("Tensor.select", "index", index) < n:
        raise IndexError(f"Tensor.select: index {index} is out of range for dim {dim} of "
                         f"size {n} (shape {x.shape})")  # fmt: skip
    return ops.getitem(x, (slice(None),) * dim + (int(index),))


def gather(x: Tensor, dim: int, index) -> Tensor:
    """torch.Tensor.gather: out[i][j] = x[index[i][j]][j] for dim 0 (``getitem``)."""
    dim = checks.axis("Tensor.gather", "dim", dim, x.ndim, x.shape)
    ids = ids_of(x, "Tensor.gather", index)
    longer = [d for d, (m, n) in enumerate(zip(ids.shape, x.shape)) if m > n and d != dim]
    if ids.ndim != x.ndim or longer:
        expected = f"as many axes as {x.shape}, none longer but along dim {dim}"
        checks.fail("Tensor.gather", "index shape", expected, ids.shape)
    return ops.getitem(x, _at(x.xp, ids, dim))


def masked_select(x: Tensor, mask) -> Tensor:
    """torch.Tensor.masked_select: the values where ``mask`` (booleans) holds, in order, as
    one axis; the gradient goes back to them."""
    return ops.getitem(x, x.xp.broadcast_to(_beside(x, "Tensor.masked_select", mask), x.shape))


def repeat_interleave(x: Tensor, repeats, dim=None) -> Tensor:
    """torch.Tensor.repeat_interleave (numpy's ``repeat``): each entry of axis ``dim`` (of
    the flattened tensor if None) ``repeats`` times, or ``repeats[i]`` times entry i."""
    x = ops.reshape(x, (-1,)) if dim is None else x
    dim = 0 if dim is None else checks.axis("Tensor.repeat_interleave", "dim", dim, x.ndim)
    if checks.is_integer(repeats):
        return ops.repeat(x, repeats, dim)
    counts = ids_of(x, "Tensor.repeat_interleave", repeats).reshape(-1)
    counts = backend.to_host_array(counts)  # the output's length: read back, as torch's
    if counts.shape[0] not in (1, x.shape[dim]) or (counts < 0).any():
        expected = f"1 or {x.shape[dim]} counts >= 0 (the size of dim {dim} of {x.shape})"
        checks.fail("Tensor.repeat_interleave", "repeats", expected, repeats)
    ids = np.repeat(np.arange(x.shape[dim]), counts)  # 0, 0, 1, 2, 2...
    return ops.getitem(x, (slice(None),) * dim + (x.xp.asarray(ids),))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """torch.Tensor.topk: (values, indices) of the ``k`` largest (smallest), sorted."""
    dim = checks.axis("Tensor.topk", "dim", dim, x.ndim, x.shape)
    if checks.integer("Tensor.topk", "k", k, 0) > x.shape[dim]:
        checks.fail("Tensor.topk", "k", f"at most {x.shape[dim]} (shape {x.shape})", k)
    ids = ops.argsort(x, dim, descending=largest).array[(slice(None),) * dim + (slice(k),)]
    return TopK(gather(x, dim, ids), x.new(ids, requires_grad=False))


def diagonal(x: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """torch.Tensor.diagonal: the entries (i, i + offset) of the axes ``dim1`` and ``dim2``
    (above the main diagonal for an offset > 0), as the last axis of the result. Where no
    graph is kept (x needs no gradient, or under ``no_grad``) it is a view, as torch's: a
    write into it (``x.diagonal().fill_(0)``) writes x."""
    if x.ndim < 2:
        raise ValueError(f"diagonal: needs at least 2 axes, got shape {x.shape}")
    checks.integer("diagonal", "offset", offset)
    a = checks.axis("diagonal", "dim1", dim1, x.ndim, x.shape)
    b = checks.axis("diagonal", "dim2", dim2, x.ndim, x.shape)
    if a == b:
        checks.fail("diagonal", "dim2", f"an axis other than dim1 ({dim1})", dim2)
    moved = ops.transpose(x, [d for d in range(x.ndim) if d not in (a, b)] + [a, b])  # (..., N, M)
    length = max(0, min(x.shape[a] + min(offset, 0), x.shape[b] - max(offset, 0)))
    rows = x.xp.arange(length) + max(-offset, 0)
    out = ops.getitem(moved, (Ellipsis, rows, rows + offset))
    if out.args is not None or not length:
        return out
    # no graph to keep: a view of x's memory, as torch's (x.diagonal().fill_(0) writes x)
    corner = moved.array[..., max(-offset, 0), max(offset, 0)]  # (...), a view
    step = moved.array.strides[-2] + moved.array.strides[-1]
    view = _view(corner, (*corner.shape, length), (*corner.strides, step))
    return out.new(view, requires_grad=False)


def _view(array, shape: tuple, strides: tuple):
    """A view of ``array``'s memory of ``shape`` and (byte) ``strides``: on the host, made over
    the array that owns the memory, which ``storage()`` finds through ``base`` (as_strided's
    view would hide it)."""
    owner = backend.memory_owner(array)
    if not isinstance(owner, np.ndarray) or not owner.flags.c_contiguous:
        return backend.array_module(array).lib.stride_tricks.as_strided(array, shape, strides)
    offset = array.ctypes.data - owner.ctypes.data
    return np.ndarray(shape, array.dtype, buffer=owner, offset=offset, strides=strides)


_diagonal = diagonal  # diag's argument is named diagonal, as torch's


def diag(x: Tensor, diagonal: int = 0) -> Tensor:
    """torch.Tensor.diag: of a vector, the square matrix with it on the ``diagonal`` (above
    the main one for a diagonal > 0) and zeros elsewhere; of a matrix, that diagonal."""
    checks.integer("diag", "diagonal", diagonal)
    if x.ndim == 2:  # a copy, as torch's (diagonal's is a view where no graph is kept)
        out = _diagonal(x, diagonal)
        return out if out.args is not None else out.new(out.array.copy(), requires_grad=False)
    if x.ndim != 1:
        raise ValueError(f"diag: expected a vector (to place on a diagonal) or a matrix (to "
                         f"read one), got shape {x.shape}")  # fmt: skip
    n, xp = x.shape[0], x.xp
    m = n + abs(diagonal)
    rows = xp.arange(n) + max(-diagonal, 0)
    zeros = x.new(xp.zeros(m * m, dtype=x.dtype), requires_grad=False)  # (M * M,)
    return ops.reshape(_scatter("diag", zeros, 0, rows * m + rows + diagonal, x, False), (m, m))


# ------------------------------------------------------------------ writes
def scatter(x: Tensor, dim: int, index, src=None, *, value=None, reduce=None) -> Tensor:
    """torch.Tensor.scatter: a copy of x with out[index[i][j]][j] = src[i][j] for dim 0 (and
    so on for each dim): ``src`` a tensor (its entries at the index's positions are written)
    or a number, as ``value``. Where ids repeat, one of the values written is kept.
    ``reduce="add"`` is ``scatter_add``."""
    if (src is None) == (value is None):
        raise TypeError(f"scatter: give src (a tensor or a number) or value, one of them, got "
                        f"src={backend.preview(src)} and value={value!r}")  # fmt: skip
    if value is not None:
        checks.real("scatter", "value", value)
    if reduce not in (None, "add"):
        checks.fail("scatter", "reduce", "None or 'add'", reduce)
    return _scatter("scatter", x, dim, index, value if src is None else src, reduce == "add")


def scatter_add(x: Tensor, dim: int, index, src) -> Tensor:
    """torch.Tensor.scatter_add: a copy of x with out[index[i][j]][j] += src[i][j] for dim 0
    (and so on for each dim), every id adding its value; the adjoint of ``gather``."""
    return _scatter("scatter_add", x, dim, index, src, True)


def index_add(x: Tensor, dim: int, index, source, *, alpha=1) -> Tensor:
    """torch.Tensor.index_add: a copy of x with alpha * source[..., i, ...] added to the slice
    index[i] of axis ``dim`` (repeated ids add up); dsource is dout at those slices."""
    dim, ids, source = _slices("index_add", x, dim, index, source)
    if not checks.is_real(alpha):
        checks.fail("index_add", "alpha", "a number", alpha, TypeError)
    return _scatter("index_add", x, dim, ids, source if alpha == 1 else source * alpha, True)


def index_copy(x: Tensor, dim: int, index, source) -> Tensor:
    """torch.Tensor.index_copy: a copy of x with source[..., i, ...] written into the slice
    index[i] of axis ``dim``; dx is 0 where something was written."""
    dim, ids, source = _slices("index_copy", x, dim, index, source)
    return _scatter("index_copy", x, dim, ids, source, False)


def index_fill(x: Tensor, dim: int, index, value) -> Tensor:
    """torch.Tensor.index_fill: a copy of x with ``value`` (a number or a 0-d tensor, whose
    gradient is the sum of dout there) in the slices ``index`` of axis ``dim``."""
    if (isinstance(value, Tensor) and value.ndim) or not isinstance(value, Tensor | numbers.Real):
        checks.fail("index_fill", "value", "a number or a 0-d tensor", value, TypeError)
    dim = checks.axis("index_fill", "dim", dim, x.ndim, x.shape)
    ids = x.xp.unique(_index("index_fill", x, index))  # a slice filled twice is filled once
    shape = x.shape[:dim] + ids.shape + x.shape[dim + 1 :]
    return _scatter("index_fill", x, dim, _spread(x.xp, ids, dim, shape), value, False)


def index_put(x: Tensor, index, value) -> Tensor:
    """``x`` with ``x[index] = value`` (numpy's indexing; value broadcast and cast to x's
    dtype): what ``x[index] = value`` writes into an op's output (``tricycle.rebase``). dx is
    dout but where something was written; dvalue is dout read there, summed to value's shape
    (a place written twice gives it twice, as torch's ``index_put``)."""
    index = ops._unwrap_index(index, x.xp)
    value = binary.constant(value, x, "index_put")
    out = x.array.copy()
    try:
        out[index] = _beside(x, "index_put", value)
    except (IndexError, ValueError) as error:
        raise type(error)(f"index_put: index {index!r} and value of shape {value.shape} "
                          f"for shape {x.shape}: {error}") from None  # fmt: skip

    def dx(dout):
        dout = dout.copy()
        dout[index] = 0
        return dout

    def dvalue(dout):
        return binary.unbroadcast(dout[index], value.shape).astype(value.dtype, copy=False)

    return x.new(out, args=(x, value), back_fns=(dx, dvalue), name="index_put")


def _index(op: str, x: Tensor, index):
    """``index`` as a 1-D array of ids (a number: one id)."""
    ids = ids_of(x, op, index)
    if ids.ndim > 1:
        checks.fail(op, "index", "a 1-D tensor of ids", index)
    return ids.reshape(-1)


def _spread(xp, ids, dim: int, shape: tuple):
    """The 1-D ``ids`` along ``dim`` of ``shape``: each entry the id of its slice."""
    return xp.broadcast_to(ids.reshape([-1 if d == dim else 1 for d in range(len(shape))]), shape)


def _slices(op: str, x: Tensor, dim: int, index, source):
    """dim as an axis, the ids of ``source``'s entries (``index`` spread along ``dim``) and
    ``source``, whose shape is x's but len(index) along ``dim``."""
    dim = checks.axis(op, "dim", dim, x.ndim, x.shape)
    ids, source = _index(op, x, index), binary.constant(source, x, op)
    shape = x.shape[:dim] + ids.shape + x.shape[dim + 1 :]
    if source.shape != shape:
        expected = f"{shape}: the input's {x.shape} with len(index) = {ids.size} along dim {dim}"
        checks.fail(op, "source's shape", expected, source.shape)
    return dim, _spread(x.xp, ids, dim, shape), source


def masked_scatter(x: Tensor, mask, source) -> Tensor:
    """torch.Tensor.masked_scatter: a copy of x with the values of ``source``, in order, written
    where ``mask`` (booleans, broadcast to x's shape) holds; dsource is dout there (0 for the
    rest of source), dx is 0 there."""
    mask = _beside(x, "masked_scatter", mask)
    if mask.dtype != bool:
        checks.fail("masked_scatter", "mask's dtype", "bool", mask.dtype, TypeError)
    try:
        where = x.xp.flatnonzero(x.xp.broadcast_to(mask, x.shape))  # (K,) the positions written
    except ValueError:
        expected = f"one that broadcasts to {x.shape}"
        checks.fail("masked_scatter", "mask's shape", expected, mask.shape)
    source = binary.constant(source, x, "masked_scatter")
    if source.size < where.size:
        raise ValueError(f"masked_scatter: the mask holds {where.size} True values, but source "
                         f"(shape {source.shape}) has {source.size} elements")  # fmt: skip
    taken = ops.getitem(ops.reshape(source, (-1,)), slice(where.size))  # (K,)
    flat = _scatter("masked_scatter", ops.reshape(x, (-1,)), 0, where, taken, False)
    return ops.reshape(flat, x.shape)


def fill_diagonal(x: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """A copy of x with ``fill_value`` on its main diagonal, torch.Tensor.fill_diagonal_'s
    values: the entries (i, i, ..., i) of a tensor whose axes have one length, or of a matrix
    (N, M); ``wrap`` starts the diagonal again every M + 1 rows of a tall matrix, as torch's."""
    if x.ndim < 2 or (x.ndim > 2 and len(set(x.shape)) > 1):
        expected = "a matrix, or a tensor whose axes all have one length"
        checks.fail("fill_diagonal_", "input's shape", expected, x.shape)
    checks.boolean("fill_diagonal_", "wrap", wrap)
    if not isinstance(fill_value, numbers.Real):
        checks.fail("fill_diagonal_", "fill_value", "a number", fill_value, TypeError)
    if x.ndim == 2:  # every M + 1 entries of the flat matrix, up to row M or to the end
        n, m = x.shape
        where = x.xp.arange(0, n * m if wrap else min(n, m) * m, m + 1)
    else:  # (i, i, ..., i) is i (1 + n + n^2 + ...) in the flat tensor
        n = x.shape[0]
        where = x.xp.arange(n) * sum(n**k for k in range(x.ndim))
    flat = _scatter("fill_diagonal_", ops.reshape(x, (-1,)), 0, where, fill_value, False)
    return ops.reshape(flat, x.shape)


def _scatter(op: str, x: Tensor, dim: int, index, src, add: bool) -> Tensor:
    """x with ``src`` written (or added) at ``index`` along ``dim``: the op of both."""
    dim = checks.axis(op, "dim", dim, x.ndim, x.shape)
    ids = ids_of(x, op, index)
    ids = ids.reshape(1) if ids.ndim == 0 and x.ndim == 1 else ids  # torch's: one entry
    longer = [d for d, (m, n) in enumerate(zip(ids.shape, x.shape)) if m > n and d != dim]
    if ids.ndim != x.ndim or longer:
        expected = f"as many axes as {x.shape}, none longer but along dim {dim}"
        checks.fail(op, "index shape", expected, ids.shape)
    src = binary.constant(src, x, op)  # a number takes x's dtype
    if src.ndim and (src.ndim != x.ndim or any(m > n for m, n in zip(ids.shape, src.shape))):
        expected = f"a number or {x.ndim} axes, none shorter than the index's {ids.shape}"
        checks.fail(op, "src's shape", expected, src.shape)
    if src.dtype != x.dtype:
        checks.fail(op, "src's dtype", f"the input's, {x.dtype}", src.dtype, TypeError)
    xp = backend.check_same_device(op, x.array, ids, src.array)
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, x.shape[dim], op=op, what="index", context=f"for dim {dim} of shape {x.shape}")
    at = _at(xp, ids, dim)  # where each written entry goes
    written = tuple(slice(m) for m in ids.shape) if src.ndim else ()  # the part of src used
    out = x.array.copy()
    if add:
        xp.add.at(out, at, src.array[written])  # repeated ids add up
    else:
        out[at] = src.array[written]

    def dx(dout):  # an entry overwritten no longer reaches the output
        if add:
            return dout
        dx = dout.copy()
        dx[at] = 0
        return dx

    def dsrc(dout):  # each entry written went to one place of the output
        if not src.ndim:
            return xp.asarray(dout[at].sum())
        grad = xp.zeros(src.shape, dtype=dout.dtype)
        grad[written] = dout[at]
        return grad

    return x.new(out, args=(x, src), back_fns=(dx, dsrc), name=op)


# ------------------------------------------------------------------ ids and values
def nonzero(x: Tensor, *, as_tuple: bool = False):
    """torch.Tensor.nonzero: the int64 ids (N, ndim) of the N nonzero values, row-major; with
    ``as_tuple``, one 1-D tensor of ids per axis (what ``x[...]`` takes)."""
    checks.boolean("nonzero", "as_tuple", as_tuple)
    values = x.array.reshape(1) if as_tuple and x.ndim == 0 else x.array  # torch's 0-d rule
    ids = x.xp.argwhere(values).astype(np.int64, copy=False)  # (N, ndim)
    if as_tuple:
        return tuple(x.new(ids[:, d], requires_grad=False) for d in range(values.ndim))
    return x.new(ids, requires_grad=False)


def count_nonzero(x: Tensor, dim=None) -> Tensor:
    """torch.Tensor.count_nonzero: int64 counts of the nonzero values over ``dim`` (an axis
    or a tuple of them; every axis for None)."""
    axes = None if dim is None else checks.axes("count_nonzero", "dim", dim, x.ndim, x.shape)
    counts = x.xp.count_nonzero(x.array, axis=axes)
    return x.new(x.xp.asarray(counts, dtype=np.int64), requires_grad=False)


def unique(x: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None):  # fmt: skip
    """torch.Tensor.unique: the distinct values (the distinct slices along ``dim``), sorted
    (``sorted=False`` sorts too, as torch's on a GPU); with ``return_inverse`` the int64 id in
    them of each value (each slice), with ``return_counts`` how often each occurs. No
    gradient. Found on the host: the number of values found sizes the result."""
    for name, flag in (("sorted", sorted), ("return_inverse", return_inverse),
                       ("return_counts", return_counts)):  # fmt: skip
        checks.boolean("unique", name, flag)
    axis = None if dim is None else checks.axis("unique", "dim", dim, x.ndim, x.shape)
    host = backend.to_host_array(x.array)
    values, inverse, counts = np.unique(host, return_inverse=True, return_counts=True, axis=axis)
    inverse = inverse.reshape(x.shape if axis is None else (-1,))
    device = backend.parse_device(x.device)
    found = [values] + [a.astype(np.int64) for a, wanted in
                        ((inverse, return_inverse), (counts, return_counts)) if wanted]  # fmt: skip
    found = [x.new(backend.move(a, device), requires_grad=False) for a in found]
    return found[0] if len(found) == 1 else tuple(found)
