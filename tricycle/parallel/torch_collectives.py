"""torch.distributed's collectives on tricycle's World: ``all_reduce``, ``broadcast``,
``all_gather`` (and ``_into_tensor``), ``reduce_scatter`` (and ``_tensor``), the rooted
``reduce``, ``gather`` and ``scatter``, ``all_to_all`` (and ``_single``) and the object forms.

They act in place on a Tensor's array, as torch's, and return when done (with
``async_op=True`` a ``Work`` that is done already). ``ReduceOp.SUM`` and ``AVG`` are
all-reduces (and reduce-scatters); ``MAX``, ``MIN`` and ``PRODUCT`` gather every rank's tensor
and reduce it on each rank (``world_size`` copies: for metrics, not gradients). The rooted
calls and the all-to-alls are made of the World's all-reduce, broadcast and all-gather
(``reduce`` an all-reduce whose result only ``dst`` keeps, ``gather`` an all-gather,
``scatter`` a broadcast of the whole list, an all-to-all an all-gather of every rank's
blocks, padded to the longest): torch's results, at up to ``world_size`` times its traffic.

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
    _all_reduce("all_reduce", world, array, op)
    return _done(async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):  # fmt: skip
    """Replace ``tensor`` on rank ``dst`` (a World rank; ``group_dst``: the group's) by its
    ``op`` over the ranks of ``group``; the other ranks' tensors stay as they were."""
    world = _member_of("reduce", group)
    root = _group_rank("reduce", world, "dst", dst, group_dst)
    array = _array("reduce", "tensor", tensor)
    reduced = array_module(array).array(array, copy=True)
    _all_reduce("reduce", world, reduced, op)
    if world.rank == root:
        array[...] = reduced
    return _done(async_op)


def _all_reduce(owner: str, world, array, op) -> None:
    """``array`` (in place) by its ``op`` over the ranks of ``world``."""
    if not isinstance(op, ReduceOp):
        raise TypeError(
            f"{owner}: op must be a ReduceOp (SUM, AVG, PRODUCT, MIN, MAX), got {op!r}"
        )
    if op is ReduceOp.AVG and array.dtype.kind != "f" and array.dtype.name != "bfloat16":
        raise TypeError(
            f"{owner}: ReduceOp.AVG of a tensor of dtype {array.dtype} "
            f"(shape {array.shape}); pass a float tensor"
        )
    if world.world_size == 1:  # each op of one rank's tensor is the tensor itself
        return
    if op in (ReduceOp.SUM, ReduceOp.AVG):
        contiguous = array.flags.c_contiguous  # then flat is a view: reduced in place
        flat = array if contiguous else array_module(array).ascontiguousarray(array)
        flat = flat.reshape(-1)
        request = world.start_all_reduce(flat, mean=op is ReduceOp.AVG)
        world.wait(request, f"{owner} of a tensor of shape {array.shape}")
        if not contiguous:
            array[...] = flat.reshape(array.shape)
    else:
        stacked = world.all_gather(array)  # (world_size, *shape)
        method = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        array[...] = getattr(stacked, method)(axis=0)


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


def gather(tensor: Tensor, gather_list: list | None = None, dst: int | None = None, group=None,
           async_op: bool = False, group_dst: int | None = None):  # fmt: skip
    """On rank ``dst`` (a World rank, 0 by default; ``group_dst``: the group's), fill
    ``gather_list[i]`` (in place) with the ``tensor`` of ``group``'s rank i; the other ranks
    pass no list."""
    rooted = _rooted("gather", tensor, group, "dst", dst, group_dst, "gather_list", gather_list)
    if rooted is None:
        return _not_member("gather")
    world, array, _, outs = rooted
    rows = world.all_gather(array)  # (world_size, *shape)
    for out, row in zip(outs, rows):
        out[...] = row
    return _done(async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int | None = None,
            group=None, async_op: bool = False, group_src: int | None = None):  # fmt: skip
    """Fill ``tensor`` (in place) with ``scatter_list[i]`` of rank ``src`` (a World rank, 0 by
    default; ``group_src``: the group's), i this rank's place in ``group``; the other ranks
    pass no list."""
    rooted = _rooted("scatter", tensor, group, "src", src, group_src, "scatter_list",
                     scatter_list)  # fmt: skip
    if rooted is None:
        return _not_member("scatter")
    world, array, root, parts = rooted
    xp = array_module(array)
    whole = xp.stack(parts) if parts else xp.empty((world.world_size, *array.shape), array.dtype)
    world.broadcast(whole, root)  # (world_size, *shape): src's list on every rank
    array[...] = whole[world.rank]
    return _done(async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None,
               async_op: bool = False):  # fmt: skip
    """Send ``input_tensor_list[j]`` to ``group``'s rank j and fill ``output_tensor_list[j]``
    (in place) with what rank j sent here; the pairs' sizes may differ."""
    world = _resolve("all_to_all", group)
    if world is None:
        return _not_member("all_to_all")
    ins = _arrays("all_to_all", "input_tensor_list", input_tensor_list, world)
    outs = _arrays("all_to_all", "output_tensor_list", output_tensor_list, world)
    if outs[0].dtype != ins[0].dtype:
        raise ValueError(f"all_to_all: the output tensors are {outs[0].dtype}, the input "
                         f"tensors {ins[0].dtype}: make them one dtype")  # fmt: skip
    received = _exchange("all_to_all", world, [a.reshape(-1) for a in ins])
    for j, (out, got) in enumerate(zip(outs, received)):
        if got.size != out.size:
            raise ValueError(f"all_to_all: rank {j} sent {got.size} values here; "
                             f"output_tensor_list[{j}] is {out.shape}")  # fmt: skip
        out[...] = got.reshape(out.shape)
    return _done(async_op)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes=None,  # noqa: A002
                      input_split_sizes=None, group=None, async_op: bool = False):  # fmt: skip
    """Split ``input`` along dim 0 (into ``input_split_sizes`` rows, else evenly over the
    ranks), send part j to ``group``'s rank j, and fill ``output`` (in place) with what each
    rank sent here, in rank order (``output_split_sizes`` rows each, else evenly)."""
    owner = "all_to_all_single"
    world = _resolve(owner, group)
    out, array = _array(owner, "output", output), _array(owner, "input", input)
    if world is None:
        return _not_member(owner)
    sends = _splits(owner, "input", array, input_split_sizes, world.world_size)
    gets = _splits(owner, "output", out, output_split_sizes, world.world_size)
    if out.dtype != array.dtype or out.shape[1:] != array.shape[1:]:
        raise ValueError(f"{owner}: output is {out.shape} {out.dtype}; expected rows of the "
                         f"input's {array.shape[1:]} {array.dtype}")  # fmt: skip
    starts = [sum(sends[:j]) for j in range(len(sends))]
    blocks = [array[a : a + n].reshape(-1) for a, n in zip(starts, sends)]
    received = _exchange(owner, world, blocks)
    row = out[0].size if out.shape[0] else 0
    at = 0
    for j, (n, got) in enumerate(zip(gets, received)):
        if got.size != n * row:
            raise ValueError(f"{owner}: rank {j} sent {got.size // max(row, 1)} rows here; "
                             f"output_split_sizes[{j}] is {n}")  # fmt: skip
        out[at : at + n] = got.reshape((n, *out.shape[1:]))
        at += n
    return _done(async_op)


def _rooted(owner: str, tensor, group, role: str, rank, group_rank, name: str, tensors):
    """gather's and scatter's ranks, ``tensor``'s array, the root's rank in the group (the
    ``role``'s ``rank`` or ``group_rank``; World rank 0 where neither is given, as torch's)
    and the arrays of the root's list ``tensors`` (``name``; none elsewhere, where torch
    refuses a list too); None on a rank outside ``group``."""
    world, array = _resolve(owner, group), _array(owner, "tensor", tensor)
    if world is None:
        return None
    if rank is None and group_rank is None:
        rank = 0
    root = _group_rank(owner, world, role, rank, group_rank)
    return world, array, root, _rooted_list(owner, name, tensors, world, root, array)


def _rooted_list(owner: str, name: str, tensors, world, root: int, like) -> list:
    if world.rank == root:
        if not tensors:
            raise ValueError(f"{owner}: {name} must be given on the rank {root} of the group")
        return _arrays_like(owner, name, tensors, world, like, "the tensor's")
    if tensors:
        raise ValueError(f"{owner}: {name} must be None on a rank that is not the group's "
                         f"rank {root} (this is its rank {world.rank})")  # fmt: skip
    return []


def _arrays(owner: str, name: str, tensors, world) -> list:
    """The arrays of ``tensors`` (a list of world_size Tensors of one dtype)."""
    _check_list(owner, name, tensors, world)
    arrays = [_array(owner, f"{name}[{i}]", t) for i, t in enumerate(tensors)]
    if len({a.dtype for a in arrays}) > 1:
        raise ValueError(f"{owner}: {name}'s tensors must share a dtype, got "
                         f"{[str(a.dtype) for a in arrays]}")  # fmt: skip
    return arrays


def _splits(owner: str, name: str, array, sizes, n: int) -> list[int]:
    """The rows of ``array`` each rank's part takes: ``sizes`` (n counts that sum to its
    rows), or an even split."""
    rows = array.shape[0] if array.ndim else 0
    if sizes is None:
        if array.ndim == 0 or rows % n:
            raise ValueError(f"{owner}: {name} of shape {array.shape} does not split evenly "
                             f"over {n} ranks along dim 0; pass {name}_split_sizes")  # fmt: skip
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or min(sizes) < 0 or sum(sizes) != rows:
        raise ValueError(f"{owner}: {name}_split_sizes must be {n} counts (one a rank) that "
                         f"sum to {name}'s {rows} rows, got {sizes}")  # fmt: skip
    return sizes


def _exchange(owner: str, world, blocks: list) -> list:
    """What each rank sent here, given ``blocks[j]`` (1-D, any lengths, one dtype): what this
    rank sends to rank j. One all-gather of every rank's blocks padded to the longest."""
    sizes = world.all_gather_object([int(b.size) for b in blocks])  # (ranks, ranks) counts
    longest = max(max(row) for row in sizes)
    xp = array_module(blocks[0])
    padded = xp.zeros((world.world_size, longest), dtype=blocks[0].dtype)
    for j, block in enumerate(blocks):
        padded[j, : block.size] = block
    rows = world.all_gather(padded)  # (ranks, ranks, longest): [sender, receiver]
    me = world.rank
    return [rows[j, me, : sizes[j][me]] for j in range(world.world_size)]


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
        method = {ReduceOp.PRODUCT: "prod", ReduceOp.MIN: "min", ReduceOp.MAX: "max"}[op]
        stacked = world.all_gather(whole.reshape(world.world_size, -1))  # (ranks, blocks, m)
        mine = getattr(stacked[:, world.rank], method)(axis=0)
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
