"""torch's top-level indexing functions on tricycle's engine: ``index_select``, ``select``,
``scatter``, ``scatter_add``, ``index_add``, ``index_copy``, ``index_fill``,
``masked_scatter``, ``diag``, ``diagonal``, ``nonzero``, ``unique``, ``repeat_interleave``,
``roll``, ``flip``, ``bincount``, ``searchsorted`` and ``bucketize``.

Each calls the ``Tensor`` method of the same name (``tricycle.indexing``'s ops, or
``tricycle.tensor_torch``'s shapes, whose gradients these are) with torch's argument names
and defaults; ``out=`` is refused, as by ``tricycle.torch_functions``. The results are new
tensors (torch's ``diagonal`` and ``flip`` views are copies here). ``searchsorted`` and
``bucketize``, which have no method, are the array module's ``searchsorted`` (indices carry
no gradient).
"""

import numpy as np

from tricycle.torch_functions import no_out, tensor_input


def index_select(input, dim: int, index, *, out=None):  # noqa: A002 - torch's names
    """torch.index_select: the entries ``index`` (1-D) of axis ``dim``; the gradient goes
    back to them (adding up where an entry is taken twice)."""
    no_out("index_select", out)
    return tensor_input("index_select", input).index_select(dim, index)


def scatter(input, dim: int, index, src=None, *, value=None, reduce=None, out=None):  # noqa: A002
    """torch.scatter: a copy of ``input`` with out[index[i][j]][j] = src[i][j] for dim 0 (and
    so on for each dim), ``src`` a tensor or a number (or ``value=``); ``reduce="add"`` adds.
    The gradient of ``input`` is 0 where something was written; that of ``src``, the output's
    gradient where each entry went."""
    no_out("scatter", out)
    return tensor_input("scatter", input).scatter(dim, index, src, value=value, reduce=reduce)


def scatter_add(input, dim: int, index, src, *, out=None):  # noqa: A002
    """torch.scatter_add: a copy of ``input`` with out[index[i][j]][j] += src[i][j] for dim 0
    (and so on for each dim); the adjoint of ``gather``."""
    no_out("scatter_add", out)
    return tensor_input("scatter_add", input).scatter_add(dim, index, src)


def select(input, dim: int, index: int):  # noqa: A002
    """torch.select: the slice at ``index`` of axis ``dim``, that axis removed."""
    return tensor_input("select", input).select(dim, index)


def index_add(input, dim: int, index, source, *, alpha=1, out=None):  # noqa: A002
    """torch.index_add: a copy of ``input`` with alpha * source[..., i, ...] added to the slice
    index[i] of axis ``dim`` (repeated ids add up)."""
    no_out("index_add", out)
    return tensor_input("index_add", input).index_add(dim, index, source, alpha=alpha)


def index_copy(input, dim: int, index, source, *, out=None):  # noqa: A002
    """torch.index_copy: a copy of ``input`` with source[..., i, ...] written into the slice
    index[i] of axis ``dim``."""
    no_out("index_copy", out)
    return tensor_input("index_copy", input).index_copy(dim, index, source)


def index_fill(input, dim: int, index, value):  # noqa: A002
    """torch.index_fill: a copy of ``input`` with ``value`` in the slices ``index`` of axis
    ``dim``."""
    return tensor_input("index_fill", input).index_fill(dim, index, value)


def masked_scatter(input, mask, source):  # noqa: A002
    """torch.masked_scatter: a copy of ``input`` with the values of ``source``, in order,
    where ``mask`` holds."""
    return tensor_input("masked_scatter", input).masked_scatter(mask, source)


def diag(input, diagonal: int = 0, *, out=None):  # noqa: A002
    """torch.diag: of a vector, the square matrix with it on ``diagonal`` (0 the main one,
    > 0 above it) and zeros elsewhere; of a matrix, that diagonal as a vector."""
    no_out("diag", out)
    return tensor_input("diag", input).diag(diagonal)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """torch.diagonal: the entries (i, i + offset) of the axes ``dim1`` and ``dim2``, as the
    last axis of the result."""
    return tensor_input("diagonal", input).diagonal(offset, dim1, dim2)


def nonzero(input, *, out=None, as_tuple: bool = False):  # noqa: A002
    """torch.nonzero: int64 ids (N, ndim) of the N nonzero values in row-major order; with
    ``as_tuple``, one 1-D tensor of ids per axis, as ``x[...]`` takes them."""
    no_out("nonzero", out)
    return tensor_input("nonzero", input).nonzero(as_tuple=as_tuple)


def unique(input, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim=None):  # fmt: skip
    """torch.unique: the distinct values (or slices along ``dim``), sorted, with the int64
    inverse ids and counts if asked; no gradient."""
    x = tensor_input("unique", input)
    return x.unique(sorted, return_inverse, return_counts, dim)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """torch.repeat_interleave: each entry of axis ``dim`` (of the flattened input for None)
    ``repeats`` times, or ``repeats[i]`` times entry i; ``repeat_interleave(counts)`` alone
    repeats each id i ``counts[i]`` times. ``output_size``, if given, must be the length made."""
    x = tensor_input("repeat_interleave", input)
    if repeats is None:  # torch.repeat_interleave(counts): 0, 0, 1, 2, 2 ...
        if x.ndim != 1:
            raise ValueError(f"repeat_interleave: counts alone must be 1-D, got shape {x.shape}")
        x, repeats = x.new(x.xp.arange(x.shape[0]), requires_grad=False), x
    out = x.repeat_interleave(repeats, dim)
    made = out.shape[0 if dim is None else dim]
    if output_size is not None and output_size != made:
        raise ValueError(f"repeat_interleave: output_size={output_size!r}, but the repeats "
                         f"make {made} along dim {0 if dim is None else dim}")  # fmt: skip
    return out


def roll(input, shifts, dims=None):  # noqa: A002
    """torch.roll: values moved by ``shifts`` along ``dims`` (of the flattened input for
    None), wrapping around; tuples roll along several axes."""
    return tensor_input("roll", input).roll(shifts, dims)


def flip(input, dims):  # noqa: A002
    """torch.flip: the order along the axes ``dims`` reversed."""
    return tensor_input("flip", input).flip(dims)


def bincount(input, weights=None, minlength: int = 0):  # noqa: A002
    """torch.bincount: how often each value of a 1-D tensor of non-negative integers occurs
    (int64 counts, at least ``minlength`` of them), or the sums of ``weights`` at each value;
    counts carry no gradient."""
    x = tensor_input("bincount", input)
    if x.ndim != 1 or x.dtype.kind not in "iu" or (x.size and int(x.array.min()) < 0):
        raise ValueError(f"bincount: input must be a 1-D tensor of non-negative integers, got "
                         f"shape {x.shape} of {x.dtype}")  # fmt: skip
    w = getattr(weights, "array", weights)
    counts = x.xp.bincount(x.array, weights=w, minlength=minlength)
    return x.new(counts.astype(counts.dtype if w is not None else "int64"), requires_grad=False)


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,  # noqa: A002
                 side=None, sorter=None, out=None):  # fmt: skip
    """torch.searchsorted: for each value of ``input`` (a tensor or a number), where it would
    go in the last axis of ``sorted_sequence`` (1-D, or one row for each of input's leading
    entries) to keep it sorted: before the values equal to it, after them if ``right`` (or
    ``side="right"``). int64 indices (int32 if ``out_int32``), with no gradient."""
    no_out("searchsorted", out)
    seq = tensor_input("searchsorted", sorted_sequence, "sorted_sequence")
    if sorter is not None:
        raise TypeError("searchsorted: sorter= is not supported; sort the sequence first")
    if side not in (None, "left", "right") or (side == "left" and right):
        raise ValueError(f"searchsorted: side must be 'left' or 'right' (and agree with "
                         f"right={right!r}), got {side!r}")  # fmt: skip
    side = side or ("right" if right else "left")
    xp = seq.xp
    values = xp.asarray(getattr(input, "array", input))
    if "c" in (seq.dtype.kind, values.dtype.kind):  # torch's: complex numbers have no order
        raise NotImplementedError(
            "searchsorted: not implemented for complex tensors "
            f"(sorted_sequence {seq.dtype}, input {values.dtype})"
        )
    if seq.ndim == 1:
        ids = xp.searchsorted(seq.array, values, side=side)
    elif values.shape[:-1] != seq.shape[:-1]:
        raise ValueError(f"searchsorted: sorted_sequence {seq.shape} and input {values.shape} "
                         "must have the same leading axes (all but the last)")  # fmt: skip
    else:
        rows = zip(seq.array.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1]))
        ids = xp.stack([xp.searchsorted(s, v, side=side) for s, v in rows]).reshape(values.shape)
    return seq.new(ids.astype(np.int32 if out_int32 else np.int64), requires_grad=False)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False, out=None):  # noqa: A002
    """torch.bucketize: the bucket of each value of ``input`` among the sorted 1-D
    ``boundaries``: i with boundaries[i-1] < x <= boundaries[i], or boundaries[i-1] <= x <
    boundaries[i] if ``right`` (torch's meaning, the reverse of numpy.digitize's)."""
    no_out("bucketize", out)
    b = tensor_input("bucketize", boundaries, "boundaries")
    if b.ndim != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got shape {b.shape}")
    return searchsorted(b, input, out_int32=out_int32, right=right)
