"""Shape and indexing ops: reshape, transpose, permute, squeeze, split, chunk, concatenate,
stack, repeat, indexing, where, masked_fill, sort, argsort and topk.

None of these do arithmetic, so each derivative just routes the gradient back to where the
values came from (and sums where one value went to several places).
"""

import numbers
from collections.abc import Sequence

import numpy as np

from tricycle import backend, binary, checks, unary
from tricycle.backend import check_same_device, is_cupy_array
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """The same values in a new shape (one axis may be -1)."""
    sizes = (shape,) if checks.is_integer(shape) else shape
    if not (isinstance(sizes, tuple | list) and all(map(checks.is_integer, sizes))):
        checks.fail("reshape", "shape", "an integer or a sequence of integers", shape, TypeError)
    try:
        out = x.array.reshape(shape)
    except ValueError:
        raise ValueError(
            f"reshape: cannot reshape a tensor of shape {x.shape} into {shape}"
        ) from None
    return unary.unary_op(x, out, lambda dout: dout.reshape(x.shape), "reshape")


def transpose(x: Tensor, axes: Sequence[int] | None = None) -> Tensor:
    """Permute the axes (reverse them by default), as numpy.transpose."""
    return _permuted(x, tuple(range(x.ndim))[::-1] if axes is None else axes, "transpose")


def permute(x: Tensor, *axes) -> Tensor:
    """Permute the axes, as torch.permute: ``permute(x, (2, 0, 1))`` or ``permute(x, 2, 0, 1)``
    puts axis 2 first; every axis must be named once."""
    if len(axes) == 1 and not checks.is_integer(axes[0]):
        axes = axes[0]
    return _permuted(x, axes, "permute")


def _permuted(x: Tensor, axes, op: str) -> Tensor:
    """x with its axes in the order ``axes``; the gradient goes back by the inverse order."""
    xp, n = x.xp, x.ndim
    kind_ok = isinstance(axes, tuple | list) and all(map(checks.is_integer, axes))
    if not (
        kind_ok and all(-n <= a < n for a in axes) and sorted(a % n for a in axes) == list(range(n))
    ):
        expected = f"a permutation of the axes of shape {x.shape} (or their negatives)"
        expected = ("None or " if op == "transpose" else "") + expected
        checks.fail(op, "axes", expected, axes, ValueError if kind_ok else TypeError)
    axes = tuple(int(a) % n for a in axes)
    inverse = tuple(sorted(range(n), key=axes.__getitem__))
    return unary.unary_op(
        x, xp.transpose(x.array, axes), lambda dout: xp.transpose(dout, inverse), op
    )


def swapaxes(x: Tensor, a: int, b: int) -> Tensor:
    """Exchange two axes."""
    a = checks.axis("swapaxes", "a", a, x.ndim, x.shape)
    b = checks.axis("swapaxes", "b", b, x.ndim, x.shape)
    axes = list(range(x.ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return transpose(x, axes)


def expand_dims(x: Tensor, axis: int) -> Tensor:
    """Insert a size-1 axis at ``axis``."""
    axis = checks.axis("expand_dims", "axis", axis, x.ndim + 1, x.shape)  # of the output
    out = x.xp.expand_dims(x.array, axis)
    return unary.unary_op(x, out, lambda dout: dout.reshape(x.shape), "expand_dims")


def squeeze(x: Tensor, axis: int | tuple[int, ...] | None = None, *, dim=None) -> Tensor:
    """Remove size-1 axes (all of them, or those named, by numpy's ``axis`` or torch's ``dim``:
    as torch's ``squeeze(dim)``, a named axis whose size is not 1 stays, where numpy's raises)."""
    name, axis = ("axis", axis) if dim is None else ("dim", dim)  # torch's name, where given
    axes = None if axis is None else checks.axes("squeeze", name, axis, x.ndim, x.shape)
    axes = None if axes is None else tuple(a for a in axes if x.shape[a] == 1)
    out = x.xp.squeeze(x.array, axes)
    return unary.unary_op(x, out, lambda dout: dout.reshape(x.shape), "squeeze")


def getitem(x: Tensor, index) -> Tensor:
    """``x[index]`` with basic slicing or integer/boolean array indexing.

    The gradient is scattered back; repeated integer indices accumulate. Out-of-range
    integer indices raise (cupy would otherwise wrap them silently).
    """
    xp = x.xp
    index = _unwrap_index(index, xp)
    advanced = _is_advanced(index)
    if advanced:
        _check_bounds(x, index)
    try:
        out = x.array[index]
    except IndexError as error:
        raise IndexError(f"getitem: index {index!r} for shape {x.shape}: {error}") from None

    def back_fn(dout):
        dx = xp.zeros(x.shape, dtype=dout.dtype)
        if advanced:
            xp.add.at(dx, index, dout)  # repeated indices must add up, not overwrite
        else:
            dx[index] = dout
        return dx

    return unary.unary_op(x, out, back_fn, "getitem")


def _unwrap_index(index, xp):
    """Tensors become their arrays; lists become arrays (of bools: a mask, else integers).

    Index arrays must hold integers or booleans: floats (``x[[0.0, 1.7]]``) raise rather than
    being truncated.
    """
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i, xp) if _is_array_like(i) else i for i in index)
    if isinstance(index, Tensor):
        index = index.array
    elif isinstance(index, list):
        index = np.asarray([i.item() if isinstance(i, Tensor) else i for i in index])
        if index.size == 0:  # x[[]]: numpy reads an empty list as integers
            index = index.astype(np.int64)
        _check_index_dtype(index)
        return xp.asarray(index)
    if hasattr(index, "dtype") and getattr(index, "ndim", 0) > 0:
        _check_index_dtype(index)
    return index


def _is_array_like(item) -> bool:
    return isinstance(item, (Tensor, list)) or (hasattr(item, "dtype") and item.ndim > 0)


def _check_index_dtype(array) -> None:
    if array.dtype.kind not in "biu":
        raise TypeError(
            f"getitem: index arrays must hold integers or booleans, got dtype {array.dtype} "
            f"(values {_preview(array)}); convert them, e.g. to_tensor(ids, dtype=int)"
        )


def _preview(array) -> str:
    values = backend.to_host_array(array).reshape(-1)
    text = ", ".join(str(v) for v in values[:6])
    return f"[{text}{', ...' if values.size > 6 else ''}]"


def _is_advanced(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return any(hasattr(i, "shape") and i.ndim > 0 and i.dtype != bool for i in items)


def _check_bounds(x: Tensor, index) -> None:
    """Raise for integer-array indices outside their axis (cupy does not check)."""
    if not any(is_cupy_array(i) for i in (index if isinstance(index, tuple) else (index,))):
        return  # numpy raises its own IndexError
    items = index if isinstance(index, tuple) else (index,)
    axis = 0
    for i in items:
        if i is None:
            continue
        if i is Ellipsis:
            axis = x.ndim - sum(1 for j in items[items.index(i) + 1 :] if j is not None)
            continue
        if hasattr(i, "shape") and i.dtype != bool and i.size:
            n = x.shape[axis]
            low, high = int(i.min()), int(i.max())
            if low < -n or high >= n:
                raise IndexError(
                    f"getitem: index out of range for axis {axis} of size {n} "
                    f"(indices span [{low}, {high}]) in a tensor of shape {x.shape}"
                )
        axis += 1


_AXIS_0 = type("DefaultAxis", (int,), {})(0)  # 0, told apart from a given 0 (and a dim)


def concatenate(tensors: Sequence[Tensor], axis: int = _AXIS_0, *, dim=None) -> Tensor:
    """Join tensors along an existing axis, numpy's ``axis`` or torch's ``dim`` (``cat`` is
    the same op, under PyTorch's name: ``cat((a, b), dim=1)``)."""
    return _join("concatenate", tensors, *_axis_or_dim("concatenate", axis, dim))


def stack(tensors: Sequence[Tensor], axis: int = _AXIS_0, *, dim=None) -> Tensor:
    """Join same-shaped tensors along a new axis (numpy's ``axis`` or torch's ``dim``)."""
    return _join("stack", tensors, *_axis_or_dim("stack", axis, dim))


def _axis_or_dim(op: str, axis, dim) -> tuple:
    """(``axis``, "axis") or, if given, (``dim``, "dim"); both given is a TypeError."""
    if dim is None:
        return axis, "axis"
    if axis is not _AXIS_0:
        raise TypeError(f"{op}: got axis={axis!r} and dim={dim!r}; give numpy's axis or "
                        "torch's dim, not both")  # fmt: skip
    return dim, "dim"


def _join(op: str, tensors: Sequence[Tensor], axis: int, name: str = "axis") -> Tensor:
    """``xp.concatenate`` or ``xp.stack`` (``op``) of the tensors along ``axis``; each one's
    gradient is its piece of the output's: a slice of the axis, or one index of the new axis."""
    tensors = _tensors(op, tensors)
    xp = check_same_device(op, *(t.array for t in tensors))
    ndim = tensors[0].ndim + (op == "stack")  # the output's
    axis = checks.axis(op, name, axis, ndim, tensors[0].shape)
    try:
        out = getattr(xp, op)([t.array for t in tensors], axis=axis)
    except ValueError as error:
        shapes = [t.shape for t in tensors]
        raise ValueError(f"{op}: shapes {shapes} along axis {axis}: {error}") from None
    if op == "stack":
        pieces = list(range(len(tensors)))
    else:
        ends = np.cumsum([t.shape[axis] for t in tensors])
        pieces = [slice(end - t.shape[axis], end) for t, end in zip(tensors, ends)]
    lead = (slice(None),) * axis
    back_fns = [lambda dout, where=lead + (piece,): dout[where] for piece in pieces]
    return tensors[0].new(out, args=tuple(tensors), back_fns=back_fns, name=op)


cat = concatenate


def _tensors(op: str, tensors) -> tuple[Tensor, ...]:
    """A non-empty sequence of tensors; arrays and numbers in it become constants."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, Sequence) or not tensors:
        raise TypeError(f"{op}: expected a non-empty list or tuple of tensors, got {tensors!r}")
    like = next((t for t in tensors if isinstance(t, Tensor)), None)
    if like is None:
        raise TypeError(f"{op}: expected at least one Tensor among {len(tensors)} values")
    return tuple(binary.constant(t, like) for t in tensors)


def split(x: Tensor, indices_or_sections=None, axis: int = 0, **torch_words) -> list[Tensor]:
    """Split into pieces along ``axis``, as numpy.split; each piece is a slice of x. Naming
    torch's ``split_size_or_sections`` or ``dim``: torch.split's pieces, as ``Tensor.split``."""
    if torch_words:  # by Tensor.split, which refuses numpy's axis beside torch's dim
        sizes = torch_words.pop("split_size_or_sections", indices_or_sections)
        numpy_words = {"axis": axis} if axis != 0 else {}
        return x.split(sizes, dim=torch_words.pop("dim", 0), **numpy_words, **torch_words)
    axis = checks.axis("split", "axis", axis, x.ndim, x.shape)
    n = x.shape[axis]
    if checks.is_integer(indices_or_sections):
        checks.positive_int("split", "indices_or_sections", indices_or_sections)
        if n % indices_or_sections:
            raise ValueError(
                f"split: axis {axis} of size {n} (shape {x.shape}) does not divide into "
                f"{indices_or_sections} equal sections"
            )
        bounds = list(range(0, n + 1, n // indices_or_sections))
    elif isinstance(indices_or_sections, tuple | list | np.ndarray) and all(
        map(checks.is_integer, indices_or_sections)
    ):
        bounds = [0, *indices_or_sections, n]
    else:
        expected = "a number of sections or a sequence of indices"
        checks.fail("split", "indices_or_sections", expected, indices_or_sections, TypeError)
    cuts = zip(bounds[:-1], bounds[1:])
    return [getitem(x, (slice(None),) * axis + (slice(lo, hi),)) for lo, hi in cuts]


def chunk(x: Tensor, chunks: int, axis: int = _AXIS_0, *, dim=None) -> list[Tensor]:
    """Split into ``chunks`` nearly equal pieces along ``axis`` (or torch's ``dim``), as
    torch.chunk: each piece has ceil(n / chunks) entries but the last, which may be smaller,
    and there may be fewer than ``chunks`` pieces (5 entries in 4 chunks give 2, 2 and 1)."""
    checks.positive_int("chunk", "chunks", chunks)
    axis, name = _axis_or_dim("chunk", axis, dim)
    axis = checks.axis("chunk", name, axis, x.ndim, x.shape)
    n = x.shape[axis]
    if n == 0:  # as torch: ``chunks`` empty pieces
        return [getitem(x, (slice(None),) * axis + (slice(0, 0),)) for _ in range(chunks)]
    step = -(-n // chunks)  # ceil(n / chunks)
    return split(x, list(range(step, n, step)), axis)


def repeat(x: Tensor, repeats: int, axis: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times along ``axis`` (flattened if None), as np.repeat."""
    checks.non_negative_int("repeat", "repeats", repeats)
    flat = axis is None
    axis = 0 if flat else checks.axis("repeat", "axis", axis, x.ndim, x.shape)
    out = x.xp.repeat(x.array, repeats, axis=None if flat else axis)
    source = (x.size,) if flat else x.shape

    def back_fn(dout):
        # (..., n * repeats, ...) -> (..., n, repeats, ...) -> sum over the repeats
        grouped = dout.reshape(source[:axis] + (source[axis], repeats) + source[axis + 1 :])
        return grouped.sum(axis=axis + 1).reshape(x.shape)

    return unary.unary_op(x, out, back_fn, "repeat")


def where(condition, a: Tensor, b: Tensor) -> Tensor:
    """Elementwise ``a if condition else b``, broadcasting all three. ``a`` or ``b`` may be a
    number or array (a constant, with no gradient); two numbers make torch's constant
    (``where(x > 0.5, 1, 0)``: int64; float32 if either is a float)."""
    like = next((v for v in (a, b, condition) if isinstance(v, Tensor)), None)
    if like is None:
        raise TypeError("where: at least one of condition, a and b must be a Tensor")
    if not (isinstance(a, Tensor) or isinstance(b, Tensor)):  # the dtype of a and b together
        floats = isinstance(a, float) or isinstance(b, float)
        dtype = np.float32 if floats else np.result_type(*(getattr(v, "dtype", v) for v in (a, b)))
        like = like.new(like.xp.zeros((), dtype), requires_grad=False)
    a, b = binary.constant(a, like), binary.constant(b, like)
    condition = condition.array if isinstance(condition, Tensor) else condition
    condition = condition if hasattr(condition, "shape") else like.xp.asarray(condition, dtype=bool)
    xp = check_same_device("where", condition, a.array, b.array)
    try:
        out = xp.where(condition, a.array, b.array)
    except ValueError:
        raise ValueError(
            f"where: condition {tuple(condition.shape)}, a {a.shape} and b {b.shape} cannot "
            "be broadcast together"
        ) from None
    return like.new(
        out,
        args=(a, b),
        back_fns=(
            lambda dout: binary.unbroadcast(xp.where(condition, dout, 0), a.shape),
            lambda dout: binary.unbroadcast(xp.where(condition, 0, dout), b.shape),
        ),
        name="where",
    )


def masked_fill(x: Tensor, mask, value: float) -> Tensor:
    """Replace the values where ``mask`` is True by ``value``; they get no gradient."""
    mask = mask.array if isinstance(mask, Tensor) else mask
    mask = mask if hasattr(mask, "dtype") else np.asarray(mask)  # a list of booleans
    xp = check_same_device("masked_fill", x.array, mask)
    if mask.dtype != bool:
        raise TypeError(f"masked_fill: mask must be boolean, got {mask.dtype}")
    try:  # as numpy's where and torch's out-of-place masked_fill: the two shapes broadcast
        np.broadcast_shapes(x.shape, mask.shape)
    except ValueError:
        raise ValueError(
            f"masked_fill: the mask's shape {mask.shape} does not broadcast with x's {x.shape}"
        ) from None
    if not isinstance(value, numbers.Real):  # inf too: -inf masks out attention scores
        checks.fail("masked_fill", "value", "a number", value, TypeError)
    out = xp.where(mask, xp.asarray(value, dtype=x.dtype), x.array)
    return unary.unary_op(
        x, out, lambda dout: binary.unbroadcast(xp.where(mask, 0, dout), x.shape), "masked_fill"
    )


def argsort(x, axis: int = -1, descending: bool = False, *, dim=None, stable=True) -> Tensor:
    """torch.argsort(stable=True) along ``axis`` (or ``dim``): int64, no gradient, ties in order."""
    if not isinstance(x, Tensor):
        checks.fail("argsort", "x", "a Tensor", x, TypeError)
    if x.dtype.kind == "c":  # complex numbers have no order
        checks.fail("argsort", "x", "a real Tensor", x.dtype, RuntimeError)
    axis = axis if dim is None else dim  # torch's keyword
    axis = checks.axis("argsort", "axis", axis, x.ndim, x.shape) if x.ndim else None
    checks.boolean("argsort", "descending", descending)
    return x.new(_sorting_ids(x.xp, x.array, axis, descending), requires_grad=False)


def sort(x: Tensor, axis: int = -1, descending: bool = False) -> Tensor:
    """The values of ``x`` sorted along ``axis`` (ascending unless ``descending``), as the
    values of torch.sort(stable=True); ``argsort`` gives the ids. Sorting only permutes, so
    each gradient goes back to where its value came from: dx = dout[inverse permutation]."""
    axis = checks.axis("sort", "axis", axis, x.ndim, x.shape) if x.ndim else None
    checks.boolean("sort", "descending", descending)
    xp = x.xp
    if axis is None:  # a 0-d tensor is sorted
        return unary.unary_op(x, x.array.copy(), lambda dout: dout, "sort")
    ids = _sorting_ids(xp, x.array, axis, descending)  # out[..., i, ...] = x[..., ids[i], ...]
    out = xp.take_along_axis(x.array, ids, axis=axis)

    def back_fn(dout):
        inverse = xp.argsort(ids, axis=axis)  # where each value of x went
        return xp.take_along_axis(dout, inverse, axis=axis)

    return unary.unary_op(x, out, back_fn, "sort")


def topk(x, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """torch.topk as a function: (values, indices) of the ``k`` largest (smallest) on ``dim``."""
    if not isinstance(x, Tensor):
        checks.fail("topk", "input", "a Tensor", x, TypeError)
    return x.topk(k, dim, largest, sorted)


def _sorting_ids(xp, array, axis: int | None, descending: bool):
    """Stable argsort along ``axis``; descending sorts the reversed array and maps the order
    back, so that equal values keep their order (and NaN comes first, as in torch)."""
    if axis is None:
        return xp.zeros((), dtype=np.int64)
    if not descending:
        return xp.argsort(array, axis=axis, kind="stable").astype(np.int64, copy=False)
    n = array.shape[axis]
    ids = xp.argsort(xp.flip(array, axis=axis), axis=axis, kind="stable")
    return xp.flip(n - 1 - ids, axis=axis).astype(np.int64, copy=False)
