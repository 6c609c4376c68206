"""torch's views by strides: ``as_strided``, ``as_strided_scatter``, ``slice_inverse`` and the
layout query ``dim_order``, each a function (the tensor first) and a Tensor method
(``tricycle.tensor_rest``).

torch's ``as_strided(size, stride, storage_offset)`` reads the tensor's *storage*, the flat
memory it views (``x.storage()``, ``x.stride()`` and ``x.storage_offset()`` say where x lies in
it): element ``i`` of the result is the storage's element ``storage_offset + sum_k i_k
stride_k``. tricycle's result is a view of the same memory too (numpy's and cupy's
``as_strided``), so a write into one is seen by the other, as torch's. Its gradient is torch's:
the output's gradient is scatter-added into a storage of zeros at the positions the output
read (a position read twice, as by overlapping windows, gathers both), and the input takes its
own positions of that storage. ``as_strided_scatter`` writes ``src`` through such a view into
a copy of the input laid out as the input (torch's ``clone``); its gradients are the output's
gradient inside the view for ``src`` and outside it for the input, as the finite differences
say (torch 2.13 gives the input the gradient *inside* the view, as it gives ``src``).
"""

import math

from tricycle import checks
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node
from tricycle.tensor_extra import _memory
from tricycle.torch_functions import tensor_input


def _geometry(op: str, size, stride, storage_offset, default_offset: int):
    """``size`` and ``stride`` as tuples of ints and the offset, checked as torch checks them."""
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"{op}: mismatch in length of strides and shape: size {size} has "
                           f"{len(size)} axes, stride {stride} has {len(stride)}")  # fmt: skip
    if not all(checks.is_integer(n) for n in size + stride):
        checks.fail(op, "size and stride", "integers", (size, stride), TypeError)
    if min(size, default=0) < 0:
        checks.fail(op, "size", "sizes >= 0", size, RuntimeError)
    if min(stride, default=0) < 0:
        raise RuntimeError(f"{op}: negative strides are not supported (as torch), got {stride}")
    offset = default_offset if storage_offset is None else storage_offset
    offset = checks.integer(op, "storage_offset", offset, 0)
    return tuple(map(int, size)), tuple(map(int, stride)), int(offset)


def positions(xp, size: tuple, stride: tuple, offset: int):
    """The storage position ``offset + sum_k i_k stride_k`` of each element i of ``size``."""
    at = xp.full(size, offset, dtype=xp.int64)
    for k, (n, step) in enumerate(zip(size, stride)):
        axis = xp.arange(n, dtype=xp.int64) * step
        at = at + axis.reshape((n,) + (1,) * (len(size) - k - 1))
    return at


def _needed(size: tuple, stride: tuple, offset: int) -> int:
    """How many storage elements a view of this geometry reaches (0 for an empty one)."""
    if math.prod(size) == 0:
        return 0
    return offset + sum((n - 1) * step for n, step in zip(size, stride)) + 1


def _within(op: str, size, stride, offset: int, length: int, itemsize: int) -> None:
    needed = _needed(size, stride, offset)
    if needed > length:
        raise RuntimeError(f"{op}: sizes {list(size)}, strides {list(stride)} and storage "
                           f"offset {offset} need a storage of {needed} elements "
                           f"({needed * itemsize} bytes), out of bounds for one of "
                           f"{length}")  # fmt: skip


def as_strided(input: Tensor, size, stride, storage_offset=None) -> Tensor:  # noqa: A002
    """torch.as_strided: the view of ``input``'s storage of ``size`` whose element i is the
    storage's ``storage_offset + sum_k i_k stride_k`` (input's own offset by default); the
    gradient is scatter-added back through the same positions (see the module's doc)."""
    x = tensor_input("as_strided", input)
    size, stride, offset = _geometry("as_strided", size, stride, storage_offset,
                                     x.storage_offset())  # fmt: skip
    memory, xp = _memory(x.array), x.xp
    _within("as_strided", size, stride, offset, memory.shape[0], x.array.itemsize)
    strides = tuple(step * x.array.itemsize for step in stride)
    out = xp.lib.stride_tricks.as_strided(memory[offset:], size, strides)  # a view, as torch's
    own = (x.shape, x.stride(), x.storage_offset())  # where x lies, as the op saw it

    def back_fn(grad):  # (*size) -> x's shape
        storage = xp.zeros(memory.shape[0], dtype=grad.dtype)
        xp.add.at(storage, positions(xp, size, stride, offset).reshape(-1), grad.reshape(-1))
        return storage[positions(xp, *own)]

    return x.new(out, args=(x,), back_fns=(back_fn,), name="as_strided")


def as_strided_scatter(input: Tensor, src, size, stride, storage_offset=None) -> Tensor:  # noqa: A002
    """torch.as_strided_scatter: a copy of ``input`` (laid out as input, offset 0) with ``src``
    written through its ``as_strided(size, stride, storage_offset)`` view; differentiable in
    both (see the module's doc)."""
    x = tensor_input("as_strided_scatter", input)
    src = tensor_input("as_strided_scatter", src, "src")
    size, stride, offset = _geometry("as_strided_scatter", size, stride, storage_offset, 0)
    if tuple(src.shape) != size:
        checks.fail("as_strided_scatter", "src", f"shape {size} (the view's)", src.shape,
                    RuntimeError)  # fmt: skip
    if src.dtype != x.dtype:
        checks.fail("as_strided_scatter", "src", f"input's dtype {x.dtype}", src.dtype, TypeError)
    xp = x.xp
    layout = x.array.copy(order="K")  # torch's clone keeps a dense input's layout
    steps = tuple(step // layout.itemsize for step in layout.strides)
    own = positions(xp, x.shape, steps, 0)  # (*input.shape)
    _within("as_strided_scatter", size, stride, offset, x.array.size, x.array.itemsize)
    view = positions(xp, size, stride, offset)  # (*size)
    storage = xp.empty(x.array.size, dtype=x.dtype)
    storage[own] = x.array
    storage[view] = src.array
    covered = xp.zeros(x.array.size, dtype=bool)
    covered[view] = True

    def back_input(grad):  # the gradient outside the view
        return xp.where(covered[own], xp.zeros((), dtype=grad.dtype), grad)

    def back_src(grad):  # the gradient inside it, read as the view read
        flat = xp.empty(x.array.size, dtype=grad.dtype)
        flat[own] = grad
        return flat[view]

    out = storage[own]
    return x.new(out, args=(x, src), back_fns=(back_input, back_src), name="as_strided_scatter")


def slice_inverse(input: Tensor, src, dim: int = 0, start=None, end=None, step: int = 1):  # noqa: A002
    """torch.slice_inverse: the inverse of the slice that made ``input`` from ``src``: the
    view of ``input``'s storage with ``src``'s geometry, ``input.as_strided(src.size(),
    src.stride(), src.storage_offset())`` (a written slice seen as the whole it was cut from;
    ``dim``, ``start``, ``end`` and ``step`` are the slice's, checked alone, as torch's on
    dense tensors)."""
    x = tensor_input("slice_inverse", input)
    src = tensor_input("slice_inverse", src, "src")
    checks.axis("slice_inverse", "dim", dim, max(src.ndim, 1), src.shape)
    checks.integer("slice_inverse", "step", step, 1)
    return as_strided(x, src.shape, src.stride(), src.storage_offset())


def dim_order(input: Tensor, ambiguity_check=False) -> tuple:  # noqa: A002
    """torch.Tensor.dim_order: the axes from the outermost in memory to the innermost (by
    stride, largest first; ties in axis order); with ``ambiguity_check=True`` a RuntimeError
    where two axes of more than one element share a stride or an axis has one element and
    another axis does (its place is not decided by memory), as torch's."""
    x = tensor_input("dim_order", input)
    if not isinstance(ambiguity_check, bool):
        raise TypeError(f"Tensor.dim_order: ambiguity_check must be a bool, got "
                        f"{type(ambiguity_check).__name__} (tricycle takes no memory formats "
                        "here)")  # fmt: skip
    strides = x.stride()
    order = tuple(sorted(range(x.ndim), key=lambda k: -strides[k]))
    if ambiguity_check:
        sizes = [x.shape[k] for k in order]
        tied = any(strides[a] == strides[b] for a, b in zip(order, order[1:]))
        if tied or (1 in sizes and x.ndim > 1):
            raise RuntimeError("Tensor.dim_order: the tensor does not have a unique dim order")
    return order
