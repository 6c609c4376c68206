"""torch's memory formats on tricycle's arrays: the order of a tensor's axes in memory.

A tensor's array is a numpy (or cupy) array, which holds any strides, so a ``channels_last``
tensor is what torch's is: the values of an (N, C, H, W) tensor laid out as NHWC, its strides
(H*W*C, 1, W*C, C) counted in values; ``channels_last_3d`` lays an (N, C, D, H, W) tensor out
as NDHWC. The values never change, only where they lie, so every op takes such an array as it
takes any other (numpy's and cupy's ops read strides), and the gradient of a change of format
is the gradient itself.

The four formats are ``tricycle.torch_misc``'s objects, known here by their names (that module
sits above the Tensor): ``contiguous_format`` (row-major), ``channels_last``,
``channels_last_3d`` and ``preserve_format``, which keeps the order of the source's strides
(its very strides where they are dense), as torch's does.

- ``is_contiguous(array, memory_format)``: torch's ``Tensor.is_contiguous`` (size-1 axes do
  not count; ``channels_last`` asks for rank 4, ``channels_last_3d`` for rank 5);
- ``suggest_format(array)``: the format whose axis order the strides follow (torch's
  ``suggest_memory_format``: ambiguous strides count as row-major);
- ``laid_out(op, array, memory_format, like=None)``: ``array``'s values in that format (a copy
  unless already so laid out); ``like`` is the array whose layout ``preserve_format`` keeps;
- ``contiguous``/``clone``/``to``: the Tensor methods' bodies (``Tensor.to`` delegates here).
"""

import numpy as np

from tricycle import backend, checks
from tricycle.graph import Node

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")

# the axes of each format, from the outermost in memory to the innermost
_ORDERS = {"channels_last": (0, 2, 3, 1), "channels_last_3d": (0, 2, 3, 4, 1)}
_RANKS = {"channels_last": 4, "channels_last_3d": 5}


def format_name(op: str, memory_format, default: str = "preserve_format") -> str:
    """The name of ``memory_format`` (one of tricycle's four ``memory_format`` objects; None
    is ``default``); anything else is torch's TypeError naming ``op``."""
    if memory_format is None:
        return default
    name = getattr(memory_format, "name", None)
    if type(memory_format).__name__ != "memory_format" or name not in FORMATS:
        raise TypeError(
            f"{op}: argument 'memory_format' must be a tricycle.memory_format "
            f"(tricycle.contiguous_format, channels_last, channels_last_3d or preserve_format), "
            f"not {type(memory_format).__name__}"
        )
    return name


def _check_rank(name: str, array) -> None:
    """torch's RuntimeError for a format of another rank than the array's."""
    rank = _RANKS.get(name)
    if rank is not None and array.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")


def _strides(array) -> tuple[int, ...]:
    """The array's strides counted in values, as torch counts them."""
    return tuple(s // array.itemsize for s in array.strides)


def _order(name: str, ndim: int) -> tuple[int, ...]:
    return _ORDERS.get(name, tuple(range(ndim)))


def _dense_in(array, order) -> bool:
    """Whether the array's values lie unbroken with the axes ``order`` outermost-first (size-1
    axes, whose stride never matters, skipped)."""
    expected, strides = 1, _strides(array)
    for axis in reversed(order):
        if array.shape[axis] != 1:
            if strides[axis] != expected:
                return False
            expected *= array.shape[axis]
    return True


def is_contiguous(array, memory_format=None, op: str = "Tensor.is_contiguous") -> bool:
    """torch.Tensor.is_contiguous: whether the values lie unbroken in ``memory_format``'s
    order (row-major by default, and for ``preserve_format``); False for ``channels_last``
    on a tensor of another rank than 4 (5 for ``channels_last_3d``), as torch's."""
    name = format_name(op, memory_format, "contiguous_format")
    if name in _RANKS:
        if array.ndim != _RANKS[name]:
            return False
        return _dense_in(array, _ORDERS[name])
    return array.size == 0 or _dense_in(array, range(array.ndim))


def _strides_follow(array, order) -> bool:
    """torch's test of whether strides look like a channels-last layout of ``order``: they grow
    along the order from the innermost axis out; a size-1 channel axis whose stride equals the
    batch axis', or an empty axis, counts as row-major (ambiguous)."""
    strides, least = _strides(array), 0
    if strides[1] == 0:
        return False
    for axis in reversed(order):
        if array.shape[axis] == 0 or strides[axis] < least:
            return False
        if axis == 0 and least == strides[1]:
            return False
        least = strides[axis] * max(array.shape[axis], 1)
    return True


def suggest_format(array) -> str:
    """torch's ``suggest_memory_format``: the channels-last format whose order the strides
    follow, else ``contiguous_format``."""
    for name, rank in _RANKS.items():
        if array.ndim == rank and _strides_follow(array, _ORDERS[name]):
            return name
    return "contiguous_format"


def laid_out(op: str, array, memory_format, like=None):
    """``array``'s values laid out in ``memory_format``; ``preserve_format`` keeps the order of
    the strides of ``like`` (``array`` itself by default), packed densely. The array itself
    when already so laid out."""
    name, like = format_name(op, memory_format), array if like is None else like
    _check_rank(name, array)
    if name == "preserve_format":
        order = _stride_order(like)
    else:
        order = _order(name, array.ndim)
    if _dense_in(array, order):
        return array
    return _in_order(backend.array_module(array), array, order)


def _stride_order(like) -> tuple[int, ...]:
    """The axes of ``like`` outermost-first in the order of its strides, as torch's
    ``infer_dense_strides`` ranks them for ``preserve_format``: a larger stride is further
    out, equal strides put the larger axis further out, and a zero stride (an expanded axis)
    is not compared, so it keeps its row-major place. An insertion sort from the innermost
    axis, as torch's, since these rules are not a total order."""
    strides, shape = [abs(s) for s in like.strides], like.shape

    def outer(a: int, b: int) -> int:  # 1: a lies further out than b; -1: inside; 0: either
        if strides[a] == 0 or strides[b] == 0:
            return 0
        if strides[a] != strides[b]:
            return 1 if strides[a] > strides[b] else -1
        return 1 if shape[a] > shape[b] else 0

    perm = list(range(like.ndim))[::-1]  # innermost first
    for i in range(1, len(perm)):
        at = i
        for j in range(i - 1, -1, -1):
            ranked = outer(perm[j], perm[at])
            if ranked > 0:
                perm[j], perm[at] = perm[at], perm[j]
                at = j
            elif ranked < 0:
                break
    return tuple(perm[::-1])


def _in_order(xp, array, order):
    """A copy of ``array`` with the axes ``order`` outermost-first in memory."""
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return xp.ascontiguousarray(array.transpose(order)).transpose(inverse)


def _same(x, array, name: str):
    """``x`` itself when ``array`` is its array, else a node whose gradient is the gradient
    (right for complex tensors as written: ``backend.ComplexSafe``)."""
    if array is x.array:
        return x
    return x.new(array, args=(x,), back_fns=backend.ComplexSafe((lambda dout: dout,)), name=name)


def contiguous(x, memory_format=None):
    """torch.Tensor.contiguous: ``x`` when laid out in ``memory_format`` (row-major by
    default), else a copy so laid out; ``preserve_format`` is torch's RuntimeError."""
    name = format_name("Tensor.contiguous", memory_format, "contiguous_format")
    if name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    _check_rank(name, x.array)
    if is_contiguous(x.array, memory_format):
        return x
    return _same(x, _in_order(x.xp, x.array, _order(name, x.ndim)), "contiguous")


def clone(x, memory_format=None):
    """torch.Tensor.clone: a copy laid out in ``memory_format`` (``preserve_format``: ``x``'s
    strides' order, packed densely), whose gradient flows back to ``x``."""
    array = laid_out("Tensor.clone", x.array, memory_format)
    return _same(x, array.copy(order="K") if array is x.array else array, "clone")


def to(x, device=None, dtype=None, non_blocking=False, copy=False, memory_format=None):
    """torch.Tensor.to (see its docstring): ``x`` itself when nothing changes (the dtype, the
    device and, unless ``preserve_format``, the format its strides suggest) and not ``copy``;
    else a copy in ``memory_format`` (a cast or a move keeps ``x``'s layout by default)."""
    checks.boolean("Tensor.to", "non_blocking", non_blocking)
    checks.boolean("Tensor.to", "copy", copy)
    name = format_name("Tensor.to", memory_format)
    if isinstance(device, Node):
        device, dtype = device.device, device.dtype if dtype is None else dtype
    elif isinstance(device, np.dtype | type):  # to(dtype)
        if dtype is not None:
            expected = "a device when dtype is given"
            checks.fail("Tensor.to", "device", expected, device, TypeError)
        device, dtype = None, device
    out = x if dtype is None else x._cast("Tensor.to", dtype)
    if device is not None:  # to() and to(None): the tensor itself, as torch's
        out = Node.to(out, device)
    _check_rank(name, out.array)
    if out is x and not copy and name in ("preserve_format", suggest_format(x.array)):
        return x
    array = laid_out("Tensor.to", out.array, memory_format, like=x.array)
    if out is x:
        array = array.copy(order="K") if array is x.array else array
        return _same(x, array, "to")
    return _same(out, array, "to") if array is not out.array else out
