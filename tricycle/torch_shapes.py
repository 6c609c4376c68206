"""torch's top-level functions that rearrange, join and split tensors, each a composition of
the engine's differentiable shape ops (``reshape``, ``permute``, ``getitem``, ``concatenate``,
``expand``), so each gradient is theirs: routed back to where every value came from.

- rearranging: ``ravel``, ``moveaxis``/``movedim``, ``swapdims``, ``narrow``, ``msort``,
  ``fliplr``, ``flipud``, ``rot90``, ``tile``, ``unbind``;
- broadcasting: ``broadcast_tensors`` and ``broadcast_shapes`` (a tuple: tricycle's shapes are
  tuples, where torch's are ``torch.Size``, a tuple subclass);
- at least n axes: ``atleast_1d``, ``atleast_2d``, ``atleast_3d`` (one tensor gives one
  tensor; several, or one list of them, a tuple), where a vector is a row (1, N) and becomes
  (1, N, 1) in three axes, as numpy's;
- joining: ``hstack``, ``vstack`` (and ``row_stack``), ``dstack``, ``column_stack``;
- splitting: ``tensor_split`` (n nearly equal pieces, the first ``size % n`` one longer, or
  pieces cut at indices), ``hsplit``, ``vsplit``, ``dsplit`` (numpy's: equal sections only).

Splits return tuples, as torch's. ``out=`` is refused (``tricycle.torch_functions.no_out``).
``tricycle.tensor_extra`` makes those torch has as methods (``x.movedim(0, -1)``) call these.
"""

import numpy as np

from tricycle import checks, ops
from tricycle.torch_functions import no_out, tensor_input


def ravel(input):  # noqa: A002 - torch's names
    """torch.ravel: the values as one axis, in row-major order."""
    return ops.reshape(tensor_input("ravel", input), (-1,))


def movedim(input, source, destination):  # noqa: A002
    """torch.movedim: the axes ``source`` (one or a sequence) moved to the places
    ``destination``, the other axes keeping their order."""
    x = tensor_input("movedim", input)
    one = checks.is_integer(source)
    if one != checks.is_integer(destination):
        checks.fail("movedim", "destination", "as many axes as source", destination, TypeError)
    src = [source] if one else list(source)
    dst = [destination] if one else list(destination)
    src = [checks.axis("movedim", "source", a, x.ndim, x.shape) for a in src]
    dst = [checks.axis("movedim", "destination", a, x.ndim, x.shape) for a in dst]
    if len(src) != len(dst) or len(set(src)) < len(src) or len(set(dst)) < len(dst):
        expected = f"as many distinct axes as source {tuple(src)}"
        checks.fail("movedim", "destination", expected, destination)
    rest = iter(a for a in range(x.ndim) if a not in src)  # the others, in their order
    moved = dict(zip(dst, src))
    return ops.permute(x, [moved[d] if d in moved else next(rest) for d in range(x.ndim)])


def moveaxis(input, source, destination):  # noqa: A002
    """torch.moveaxis: ``movedim`` under numpy's name."""
    return movedim(input, source, destination)


def swapdims(input, dim0: int, dim1: int):  # noqa: A002
    """torch.swapdims: the axes ``dim0`` and ``dim1`` exchanged (``swapaxes``)."""
    return ops.swapaxes(tensor_input("swapdims", input), dim0, dim1)


def narrow(input, dim: int, start: int, length: int):  # noqa: A002
    """torch.narrow: ``length`` entries of axis ``dim`` from ``start`` (``Tensor.narrow``)."""
    return tensor_input("narrow", input).narrow(dim, int(start), length)


def tile(input, dims):  # noqa: A002
    """torch.tile: the tensor repeated ``dims[i]`` times along axis i (``Tensor.tile``)."""
    return tensor_input("tile", input).tile(dims)


def unbind(input, dim: int = 0):  # noqa: A002
    """torch.unbind: the slices along ``dim``, that axis removed, as a tuple."""
    return tensor_input("unbind", input).unbind(dim)


def msort(input, *, out=None):  # noqa: A002
    """torch.msort: the values sorted along the first axis (``sort(input, 0).values``)."""
    no_out("msort", out)
    return ops.sort(tensor_input("msort", input), 0)


def _flipped(op: str, input, least: int, axes: tuple):  # noqa: A002
    x = tensor_input(op, input)
    if x.ndim < least:
        checks.fail(op, "input's shape", f"at least {least} axes", x.shape)
    return x[tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(x.ndim))]


def fliplr(input):  # noqa: A002
    """torch.fliplr: the order of the second axis (the columns) reversed."""
    return _flipped("fliplr", input, 2, (1,))


def flipud(input):  # noqa: A002
    """torch.flipud: the order of the first axis (the rows) reversed."""
    return _flipped("flipud", input, 1, (0,))


def rot90(input, k: int = 1, dims=(0, 1)):  # noqa: A002
    """torch.rot90: the plane of the axes ``dims`` turned by 90 degrees ``k`` times, from the
    first axis towards the second (a flip and a transpose, as torch's)."""
    x = tensor_input("rot90", input)
    k = checks.integer("rot90", "k", k) % 4
    if not isinstance(dims, tuple | list) or len(dims) != 2:
        checks.fail("rot90", "dims", "two axes", dims, TypeError)
    if x.ndim < 2:
        checks.fail("rot90", "input's shape", "at least 2 axes", x.shape)
    a, b = (checks.axis("rot90", "dims", d, x.ndim, x.shape) for d in dims)
    if a == b:
        checks.fail("rot90", "dims", "two different axes", dims)
    if k == 0:
        return x[...]
    if k == 2:
        return _flipped("rot90", x, 2, (a, b))
    return ops.swapaxes(_flipped("rot90", x, 2, (b,) if k == 1 else (a,)), a, b)


# ------------------------------------------------------------------------- broadcasting
def broadcast_shapes(*shapes) -> tuple:
    """torch.broadcast_shapes: the shape that tensors of ``shapes`` (each a sequence of sizes
    or one size) broadcast to, as a tuple; shapes that do not broadcast are a RuntimeError."""
    sizes = []
    for shape in shapes:
        shape = (shape,) if checks.is_integer(shape) else shape
        if not isinstance(shape, tuple | list) or not all(map(checks.is_integer, shape)):
            checks.fail("broadcast_shapes", "shapes", "sequences of sizes", shapes, TypeError)
        if any(n < 0 for n in shape):
            checks.fail("broadcast_shapes", "shapes", "sizes >= 0", shapes)
        sizes.append(tuple(int(n) for n in shape))
    try:
        return tuple(np.broadcast_shapes(*sizes))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {sizes} do not broadcast together "
                           "(each axis, from the last, must agree or be 1)") from None  # fmt: skip


def broadcast_tensors(*tensors):
    """torch.broadcast_tensors: the tensors ``expand``-ed to their common shape, a tuple; the
    gradients sum back over the stretched axes."""
    xs = [tensor_input("broadcast_tensors", t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    shape = broadcast_shapes(*(x.shape for x in xs))
    return tuple(x.expand(*shape) for x in xs)


# ------------------------------------------------------------------------- at least n axes
def _at_least(op: str, tensors, shape_of):
    many = len(tensors) != 1 or isinstance(tensors[0], tuple | list)
    tensors = tuple(tensors[0]) if len(tensors) == 1 and many else tensors
    xs = [tensor_input(op, t, f"tensors[{i}]") for i, t in enumerate(tensors)]
    out = tuple(ops.reshape(x, shape_of(x.shape)) if x.ndim < 3 else x for x in xs)
    return out if many else out[0]


def atleast_1d(*tensors):
    """torch.atleast_1d: each tensor with at least one axis (a number becomes (1,))."""
    return _at_least("atleast_1d", tensors, lambda shape: shape or (1,))


def atleast_2d(*tensors):
    """torch.atleast_2d: each tensor with at least two axes (a vector (N,) becomes (1, N))."""
    return _at_least("atleast_2d", tensors, lambda shape: (1,) * (2 - len(shape)) + shape)


def atleast_3d(*tensors):
    """torch.atleast_3d: each tensor with at least three axes: a number (1, 1, 1), a vector
    (N,) (1, N, 1), a matrix (M, N) (M, N, 1), as numpy's."""
    padded = {0: lambda s: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)}
    return _at_least("atleast_3d", tensors, lambda shape: padded[len(shape)](shape))


# ------------------------------------------------------------------------- joining
def _joined(op: str, tensors, out, at_least, dim_of):
    no_out(op, out)
    if not isinstance(tensors, tuple | list) or not tensors:
        checks.fail(op, "tensors", "a non-empty list or tuple of tensors", tensors, TypeError)
    xs = at_least(*tensors)
    xs = xs if isinstance(xs, tuple) else (xs,)
    return ops.concatenate(list(xs), dim_of(xs))


def hstack(tensors, *, out=None):
    """torch.hstack: the tensors joined along their second axis (the first for vectors)."""
    return _joined("hstack", tensors, out, atleast_1d, lambda xs: int(xs[0].ndim > 1))


def vstack(tensors, *, out=None):
    """torch.vstack: the tensors joined as rows, along the first axis (vectors as (1, N))."""
    return _joined("vstack", tensors, out, atleast_2d, lambda xs: 0)


row_stack = vstack  # torch's other name of vstack


def dstack(tensors, *, out=None):
    """torch.dstack: the tensors joined along their third axis (see ``atleast_3d``)."""
    return _joined("dstack", tensors, out, atleast_3d, lambda xs: 2)


def column_stack(tensors, *, out=None):
    """torch.column_stack: the tensors joined as columns: numbers and vectors become columns
    (N, 1), the others join along their second axis."""

    def columns(*xs):
        return tuple(ops.reshape(x, (x.size, 1)) if x.ndim < 2 else x for x in xs)

    return _joined("column_stack", tensors, out, columns, lambda xs: 1)


# ------------------------------------------------------------------------- splitting
def _cuts(op: str, indices_or_sections) -> int | list[int]:
    """A number of sections, or the indices to cut at (a tensor: 0-d sections, 1-d ids)."""
    value = indices_or_sections
    if hasattr(value, "array"):
        if value.dtype != np.int64 or value.ndim > 1:
            expected = "a 0-d or 1-d int64 tensor, an integer or a sequence of integers"
            checks.fail(op, "indices_or_sections", expected, value, TypeError)
        value = value.tolist()
    if checks.is_integer(value):
        return checks.positive_int(op, "indices_or_sections", value)
    if isinstance(value, tuple | list) and all(map(checks.is_integer, value)):
        return [int(i) for i in value]
    expected = "a number of sections or a sequence of indices"
    checks.fail(op, "indices_or_sections", expected, indices_or_sections, TypeError)


def tensor_split(input, indices_or_sections, dim: int = 0):  # noqa: A002
    """torch.tensor_split: the pieces of ``input`` along ``dim``, a tuple: ``n`` sections of
    ``size // n`` entries, the first ``size % n`` of them one longer; or the pieces between
    the ``indices`` (clipped to the axis, as Python's slices)."""
    x = tensor_input("tensor_split", input)
    dim = checks.axis("tensor_split", "dim", dim, x.ndim, x.shape)
    cuts, size = _cuts("tensor_split", indices_or_sections), x.shape[dim]
    if isinstance(cuts, int):
        lengths = [size // cuts + (i < size % cuts) for i in range(cuts)]
        cuts = np.cumsum(lengths)[:-1].tolist()
    bounds = zip([0, *cuts], [*cuts, None])
    return tuple(x[(slice(None),) * dim + (slice(lo, hi),)] for lo, hi in bounds)


def _sections(op: str, input, indices_or_sections, dim: int, least: int):  # noqa: A002
    x = tensor_input(op, input)
    if x.ndim < least:
        checks.fail(op, "input's shape", f"at least {least} axes", x.shape)
    cuts = _cuts(op, indices_or_sections)
    if isinstance(cuts, int) and x.shape[dim] % cuts:
        expected = f"a number of equal sections of axis {dim} of {x.shape}"
        checks.fail(op, "indices_or_sections", expected, cuts)
    return tensor_split(x, cuts, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    """torch.hsplit: ``tensor_split`` along the second axis (the first of a vector), in equal
    sections where a number is given."""
    x = tensor_input("hsplit", input)
    return _sections("hsplit", x, indices_or_sections, int(x.ndim > 1), 1)


def vsplit(input, indices_or_sections):  # noqa: A002
    """torch.vsplit: ``tensor_split`` along the first axis of a tensor of 2 axes or more."""
    return _sections("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):  # noqa: A002
    """torch.dsplit: ``tensor_split`` along the third axis of a tensor of 3 axes or more."""
    return _sections("dsplit", input, indices_or_sections, 2, 3)
