"""torch's ``*_copy`` functions and its ``unsafe_*`` splits: the view ops' results as fresh
tensors.

torch's ``view_copy(x, shape)`` is ``x.view(shape)`` whose result shares no memory with ``x``
(``permute_copy``, ``transpose_copy``, ``t_copy``, ``squeeze_copy``, ``unsqueeze_copy``,
``expand_copy``, ``diagonal_copy``, ``select_copy``, ``slice_copy``, ``split_copy``,
``split_with_sizes_copy``, ``unbind_copy``, ``unfold_copy``, ``alias_copy``,
``narrow_copy``, ``detach_copy``). Each here is the view op (the Tensor's own, so the
arguments, checks and gradient are its) followed by ``clone``, whose gradient passes
through: the value is a new array, the gradient the view's. ``detach_copy`` is a detached
copy that requires no gradient (torch marks its result as requiring one, but its backward
is not implemented: a call of ``backward`` through it fails there).

``unsafe_chunk``, ``unsafe_split`` and ``unsafe_split_with_sizes`` are torch's splits whose
pieces skip autograd's checks on in-place changes to views; tricycle's pieces are checked
the same either way, so these are ``chunk``, ``split`` and ``split_with_sizes``. Splits
return tuples (of fresh tensors for the ``_copy`` forms), as torch's.
"""

from tricycle import checks
from tricycle.torch_functions import no_out, tensor_input


def _fresh(op: str, view, out=None):
    """``view`` (a tensor or a sequence of them) as new arrays: clone keeps the gradient."""
    no_out(op, out)
    if isinstance(view, tuple | list):
        return tuple(piece.clone() for piece in view)
    return view.clone()


def view_copy(input, size, *, out=None):  # noqa: A002 - torch's names
    """torch.view_copy: ``input.view(size)`` (a shape, or a dtype) as a new tensor."""
    return _fresh("view_copy", tensor_input("view_copy", input).view(size), out)


def permute_copy(input, dims, *, out=None):  # noqa: A002
    """torch.permute_copy: ``input.permute(dims)`` as a new tensor."""
    return _fresh("permute_copy", tensor_input("permute_copy", input).permute(*dims), out)


def transpose_copy(input, dim0: int, dim1: int, *, out=None):  # noqa: A002
    """torch.transpose_copy: ``input.transpose(dim0, dim1)`` as a new tensor."""
    x = tensor_input("transpose_copy", input)
    return _fresh("transpose_copy", x.transpose(dim0, dim1), out)


def t_copy(input, *, out=None):  # noqa: A002
    """torch.t_copy: ``input.t()`` (at most 2 axes) as a new tensor."""
    return _fresh("t_copy", tensor_input("t_copy", input).t(), out)


def squeeze_copy(input, dim=None, *, out=None):  # noqa: A002
    """torch.squeeze_copy: ``input.squeeze(dim)`` (every size-1 axis for None) as a new
    tensor."""
    x = tensor_input("squeeze_copy", input)
    return _fresh("squeeze_copy", x.squeeze() if dim is None else x.squeeze(dim=dim), out)


def unsqueeze_copy(input, dim: int, *, out=None):  # noqa: A002
    """torch.unsqueeze_copy: ``input.unsqueeze(dim)`` as a new tensor."""
    return _fresh("unsqueeze_copy", tensor_input("unsqueeze_copy", input).unsqueeze(dim), out)


def expand_copy(input, size, *, implicit: bool = False, out=None):  # noqa: A002
    """torch.expand_copy: ``input.expand(size)`` as a new tensor (``implicit`` is torch's
    internal mark, accepted)."""
    checks.boolean("expand_copy", "implicit", implicit)
    return _fresh("expand_copy", tensor_input("expand_copy", input).expand(*size), out)


def diagonal_copy(input, offset: int = 0, dim1: int = 0, dim2: int = 1, *, out=None):  # noqa: A002
    """torch.diagonal_copy: ``input.diagonal(offset, dim1, dim2)`` as a new tensor."""
    x = tensor_input("diagonal_copy", input)
    return _fresh("diagonal_copy", x.diagonal(offset, dim1, dim2), out)


def select_copy(input, dim: int, index: int, *, out=None):  # noqa: A002
    """torch.select_copy: ``input.select(dim, index)`` as a new tensor."""
    return _fresh("select_copy", tensor_input("select_copy", input).select(dim, index), out)


def slice_copy(input, dim: int = 0, start=None, end=None, step: int = 1, *, out=None):  # noqa: A002
    """torch.slice_copy: ``input[..., start:end:step, ...]`` on axis ``dim`` as a new tensor
    (None: from the start, to the end); ``step`` must be positive, as torch's."""
    x = tensor_input("slice_copy", input)
    axis = checks.axis("slice_copy", "dim", dim, x.ndim, x.shape)
    if not checks.is_integer(step) or step < 1:
        checks.fail("slice_copy", "step", "a positive int (slice step must be positive)", step,
                    RuntimeError)  # fmt: skip
    return _fresh("slice_copy", x[(slice(None),) * axis + (slice(start, end, step),)], out)


def split_copy(input, split_size, dim: int = 0, *, out=None):  # noqa: A002
    """torch.split_copy: ``input.split(split_size, dim)`` (pieces of that size, the last
    smaller) as new tensors; sizes listed are ``split_with_sizes_copy``'s, as torch's."""
    x = tensor_input("split_copy", input)
    if not checks.is_integer(split_size):
        checks.fail("split_copy", "split_size", "an int (split_with_sizes_copy takes sizes)",
                    split_size, TypeError)  # fmt: skip
    return _fresh("split_copy", x.split(split_size, dim=dim), out)


def split_with_sizes(input, split_sizes, dim: int = 0):  # noqa: A002
    """torch.split_with_sizes: pieces of ``split_sizes`` along ``dim`` (they must sum to its
    size), as ``Tensor.split_with_sizes``."""
    return tensor_input("split_with_sizes", input).split_with_sizes(split_sizes, dim)


def split_with_sizes_copy(input, split_sizes, dim: int = 0, *, out=None):  # noqa: A002
    """torch.split_with_sizes_copy: ``split_with_sizes`` as new tensors."""
    x = tensor_input("split_with_sizes_copy", input)
    return _fresh("split_with_sizes_copy", x.split_with_sizes(split_sizes, dim), out)


def unbind_copy(input, dim: int = 0, *, out=None):  # noqa: A002
    """torch.unbind_copy: ``input.unbind(dim)`` as new tensors."""
    return _fresh("unbind_copy", tensor_input("unbind_copy", input).unbind(dim), out)


def unfold_copy(input, dimension: int, size: int, step: int, *, out=None):  # noqa: A002
    """torch.unfold_copy: ``input.unfold(dimension, size, step)`` (windows as a new last
    axis) as a new tensor."""
    x = tensor_input("unfold_copy", input)
    return _fresh("unfold_copy", x.unfold(dimension, size, step), out)


def alias_copy(input, *, out=None):  # noqa: A002
    """torch.alias_copy: a copy of ``input`` whose gradient flows back to it (``clone``)."""
    return _fresh("alias_copy", tensor_input("alias_copy", input), out)


def detach_copy(input, *, out=None):  # noqa: A002
    """torch.detach_copy: a copy of ``input`` that requires no gradient (see the module's
    doc)."""
    return _fresh("detach_copy", tensor_input("detach_copy", input).detach(), out)


def narrow_copy(input, dim: int, start: int, length: int, *, out=None):  # noqa: A002
    """torch.narrow_copy (and Tensor.narrow_copy): ``input.narrow(dim, start, length)`` as a
    new tensor."""
    x = tensor_input("narrow_copy", input)
    return _fresh("narrow_copy", x.narrow(dim, start, length), out)


def unsafe_chunk(input, chunks: int, dim: int = 0):  # noqa: A002
    """torch.unsafe_chunk: ``chunk`` (see the module's doc), as a tuple."""
    return tuple(tensor_input("unsafe_chunk", input).chunk(chunks, dim=dim))


def unsafe_split(input, split_size_or_sections, dim: int = 0):  # noqa: A002
    """torch.unsafe_split: torch's ``split`` (see the module's doc), as a tuple."""
    return tuple(tensor_input("unsafe_split", input).split(split_size_or_sections, dim=dim))


def unsafe_split_with_sizes(input, split_sizes, dim: int = 0):  # noqa: A002
    """torch.unsafe_split_with_sizes: ``split_with_sizes`` (see the module's doc)."""
    x = tensor_input("unsafe_split_with_sizes", input)
    return tuple(x.split_with_sizes(split_sizes, dim))
