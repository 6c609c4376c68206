"""torch.distributed's collectives on tricycle's World: ``all_reduce``, ``broadcast``,
``all_gather`` (and ``_into_tensor``), ``reduce_scatter`` (and ``_tensor``) and the object
forms.

They act in place on a Tensor's array, as torch's, and return when done (with
``async_op=True`` a ``Work`` that is done already). ``ReduceOp.SUM`` and ``AVG`` are
all-reduces (and reduce-scatters); ``MAX``, ``MIN`` and ``PRODUCT`` gather every rank's tensor
and reduce it on each rank (``world_size`` copies: for metrics, not gradients).

``group`` is the World (None) or a sub-group (``new_group``, ``DeviceMesh.get_group``): the
collective runs among its ranks alone, in its rank order (``all_gather``'s list, a
reduce-scatter's blocks); ``broadcast``'s ``src`` is a World rank, ``group_src`` the group's,
as torch's. On a group this rank is not in (NON_GROUP_MEMBER) a collective warns and does
nothing, as torch's (``tricycle.parallel.torch_process_group``).
"""

import enum

from tricycle.backend import array_module
from tricycle.parallel.torch_process_group import (
    _array,
    _check_list,
    _done,
    _group_rank,
    _member_of,
    _not_member,
    _resolve,
)
from tricycle.tensor import Tensor


class ReduceOp(enum.Enum):
    """How ``all_reduce`` combines the ranks' tensors."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Replace ``tensor`` (in place) by its ``op`` over the ranks of ``group``."""
    world, array = _resolve("all_reduce", group), _array("all_reduce", "tensor", tensor)
    if world is None:
        return _not_member("all_reduce")
    if not isinstance(op, ReduceOp):
        raise TypeError(
            f"all_reduce: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}"
        )
    if op is ReduceOp.AVG and array.dtype.kind != "f" and array.dtype.name != "bfloat16":
        raise TypeError(
            f"all_reduce: ReduceOp.AVG of a tensor of dtype {array.dtype} "
            f"(shape {array.shape}); pass a float tensor"
        )
    if world.world_size == 1:  # each op of one rank's tensor is the tensor itself
        return _done(async_op)
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        contiguous = array.flags.c_contiguous  # then flat is a view: reduced in place
        flat = array if contiguous else array_module(array).ascontiguousarray(array)
        flat = flat.reshape(-1)
        request = world.start_all_reduce(flat, mean=op is ReduceOp.AVG)
        world.wait(request, f"all_reduce of a tensor of shape {array.shape}")
        if not contiguous:
            array[...] = flat.reshape(array.shape)
    else:
        stacked = world.all_gather(array)  # (world_size, *shape)
        reduce = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        array[...] = getattr(stacked, reduce)(axis=0)
    return _done(async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):  # fmt: skip
    """Overwrite ``tensor`` (in place) with rank ``src``'s (a World rank; ``group_src``: the
    group's rank), over the ranks of ``group``."""
    world = _member_of("broadcast", group)
    root = _group_rank("broadcast", world, "src", src, group_src)
    world.broadcast(_array("broadcast", "tensor", tensor), root)
    return _done(async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` (in place) with the ``tensor`` of ``group``'s rank i."""
    world, array = _resolve("all_gather", group), _array("all_gather", "tensor", tensor)
    if world is None:
        return _not_member("all_gather")
    outs = _arrays_like("all_gather", "tensor_list", tensor_list, world, array, "the tensor's")
    for out, row in zip(outs, world.all_gather(array)):
        out[...] = row
    return _done(async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):  # fmt: skip
    """Fill ``output_tensor`` (world_size times ``input_tensor``'s values: stacked on a first
    dim, or concatenated along dim 0) with every rank's ``input_tensor``, rank order."""
    owner = "all_gather_into_tensor"
    world, out = _resolve(owner, group), _array(owner, "output_tensor", output_tensor)
    array = _array(owner, "input_tensor", input_tensor)
    if world is None:
        return _not_member(owner)
    n = world.world_size
    if out.size != n * array.size or out.dtype != array.dtype:
        raise ValueError(
            f"{owner}: output_tensor is {out.shape} {out.dtype}; expected {n} times the input's "
            f"{array.shape} {array.dtype} values (({n}, *shape) or shape[0] * {n} rows)"
        )
    out[...] = world.all_gather(array).reshape(out.shape)
    return _done(async_op)


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None,
                   async_op: bool = False):  # fmt: skip
    """Fill ``output`` with the ``op`` over the ranks of their ``input_list[rank]`` (a list
    of ``world_size`` tensors of ``output``'s shape)."""
    world = _resolve("reduce_scatter", group)
    out = _array("reduce_scatter", "output", output)
    if world is None:
        return _not_member("reduce_scatter")
    parts = _arrays_like("reduce_scatter", "input_list", input_list, world, out, "output's")
    whole = array_module(out).stack(parts)
    return _reduce_scatter("reduce_scatter", world, out, whole, op, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,  # noqa: A002
                          group=None, async_op: bool = False):  # fmt: skip
    """Fill ``output`` with this rank's block of the ``op`` over the ranks of ``input``
    (world_size blocks of ``output``'s values: ``(world_size, *shape)`` or ``shape[0] *
    world_size`` rows): torch's reduce-scatter, 1/world_size of an all-reduce's traffic."""
    owner = "reduce_scatter_tensor"
    world, out = _resolve(owner, group), _array(owner, "output", output)
    array = _array(owner, "input", input)
    if world is None:
        return _not_member(owner)
    n = world.world_size
    if array.size != n * out.size or array.dtype != out.dtype:
        raise ValueError(
            f"{owner}: input is {array.shape} {array.dtype}; expected {n} times output's "
            f"{out.shape} {out.dtype} values"
        )
    return _reduce_scatter(owner, world, out, array, op, async_op)


def _arrays_like(owner: str, name: str, tensors, world, like, like_name: str) -> list:
    """The arrays of ``tensors`` (a list of world_size Tensors), each of the array ``like``'s
    shape and dtype (``like_name`` names it in the error)."""
    _check_list(owner, name, tensors, world)
    arrays = [_array(owner, f"{name}[{i}]", t) for i, t in enumerate(tensors)]
    for i, array in enumerate(arrays):
        if array.shape != like.shape or array.dtype != like.dtype:
            raise ValueError(
                f"{owner}: {name}[{i}] is {array.shape} {array.dtype}; expected {like_name} "
                f"{like.shape} {like.dtype}"
            )
    return arrays


def _reduce_scatter(owner: str, world, out, whole, op, async_op: bool):
    """``out[...]`` = this rank's block of ``op`` over the ranks of ``whole`` (world_size
    blocks of ``out``'s size) in ``world`` (the World or a Group): SUM and AVG by its
    reduce-scatter, the others by a gather (for metrics, as ``all_reduce``'s)."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{owner}: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}")
    if op is ReduceOp.AVG and out.dtype.kind != "f" and out.dtype.name != "bfloat16":
        raise TypeError(f"{owner}: ReduceOp.AVG of a tensor of dtype {out.dtype}; pass floats")
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        mine = world.reduce_scatter(whole, mean=op is ReduceOp.AVG)
    else:
        reduce = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        stacked = world.all_gather(whole.reshape(world.world_size, -1))  # (ranks, blocks, m)
        mine = getattr(stacked[:, world.rank], reduce)(axis=0)
    out[...] = mine.reshape(out.shape)
    return _done(async_op)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Fill ``object_list[i]`` (a list of ``world_size`` items: ``group``'s size) with the
    ``obj`` (anything picklable) of ``group``'s rank i."""
    world = _resolve("all_gather_object", group)
    if world is None:
        return _not_member("all_gather_object")
    _check_list("all_gather_object", "object_list", object_list, world)
    object_list[:] = world.all_gather_object(obj)


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:  # fmt: skip
    """Replace the items of ``object_list`` (in place, the same length on every rank) with
    rank ``src``'s (picklable; a World rank, rank 0 by default; ``group_src``: the group's
    rank)."""
    owner = "broadcast_object_list"
    world = _member_of(owner, group)
    if src is None and group_src is None:
        src = 0
    root = _group_rank(owner, world, "src", src, group_src)
    if not isinstance(object_list, list):
        raise TypeError(
            f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}"
        )
    sent = world.broadcast_object(list(object_list), root)
    if len(sent) != len(object_list):
        raise ValueError(
            f"broadcast_object_list: rank {root} of the group sent {len(sent)} objects; this "
            f"rank's object_list holds {len(object_list)}: make them equal"
        )
    object_list[:] = sent
