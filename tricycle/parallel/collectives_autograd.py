"""torch's differentiable collectives (``torch.distributed.nn.functional``): ``all_reduce``,
``all_gather``, ``reduce_scatter`` and ``broadcast`` on Tensors, over the World or a group
(``group=``: ``new_group``'s; a rank outside it is refused), returning new Tensors whose
backward is torch's (over the same ranks):

- ``all_reduce`` (SUM or AVG): backward all-reduces the gradient with the same op;
- ``all_gather``: one Tensor per rank; backward sums over the ranks each rank's piece of the
  gradients (a reduce-scatter);
- ``reduce_scatter(output, input_list)``: this rank's block of the sum (AVG: mean); backward
  all-gathers the gradient, one piece per input, unscaled even for AVG (torch 2.13's: its
  backward ignores the op, so AVG's gradient is SUM's, not divided by the world size);
- ``broadcast(tensor, src)``: rank ``src``'s values; backward sums the gradients on ``src``
  (the other ranks' inputs get zeros: the output does not depend on them).
"""

from tricycle.parallel import distributed
from tricycle.parallel.torch_distributed import ReduceOp
from tricycle.parallel.torch_process_group import _group_rank, _member_of
from tricycle.tensor import Tensor

__all__ = ["all_gather", "all_reduce", "broadcast", "reduce_scatter"]


def _world(owner: str, group):
    """The ranks ``group`` names: the World (None, started if it is not), or a group of it
    that this rank is in."""
    if group is None:
        return distributed._world or distributed.init()
    return _member_of(owner, group)


def _mean(owner: str, op) -> bool:
    if op not in (ReduceOp.SUM, ReduceOp.AVG):
        raise NotImplementedError(
            f"{owner}: op {op}; tricycle's differentiable collectives reduce with SUM or AVG"
        )
    return op is ReduceOp.AVG


def _tensor(owner: str, name: str, value) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: {name} must be a tricycle Tensor, got {type(value).__name__}")
    return value


def all_reduce(tensor, op=ReduceOp.SUM, group=None) -> Tensor:
    """The sum (AVG: mean) of ``tensor`` over the ranks, as a new Tensor."""
    world, mean = _world("all_reduce", group), _mean("all_reduce", op)
    tensor = _tensor("all_reduce", "tensor", tensor)

    def reduce(array):
        return world.all_reduce(array, mean=mean)

    return tensor.new(reduce(tensor.array), args=(tensor,), back_fns=(reduce,), name="all_reduce")


def all_gather(tensor, group=None) -> tuple:
    """Every rank's ``tensor`` (same shape on all), a tuple of Tensors indexed by rank."""
    world = _world("all_gather", group)
    tensor = _tensor("all_gather", "tensor", tensor)

    def back(grad):  # (n, ...) -> the sum over the ranks of each one's piece r
        return world.reduce_scatter(grad).reshape(tensor.shape)

    stacked = tensor.new(world.all_gather(tensor.array), args=(tensor,), back_fns=(back,),
                         name="all_gather")  # fmt: skip
    return tuple(stacked[r] for r in range(world.world_size))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None) -> Tensor:
    """This rank's block of the sum (AVG: mean) over the ranks of ``input_list`` (one Tensor
    per rank, each of ``output``'s shape); ``output`` receives the values too (as torch's)
    and the returned Tensor carries the gradient."""
    world, mean = _world("reduce_scatter", group), _mean("reduce_scatter", op)
    output = _tensor("reduce_scatter", "output", output)
    if not isinstance(input_list, (list, tuple)) or len(input_list) != world.world_size:
        raise ValueError(
            f"reduce_scatter: input_list must hold world_size={world.world_size} Tensors, got "
            f"{len(input_list) if isinstance(input_list, (list, tuple)) else input_list!r}"
        )
    for t in input_list:
        if _tensor("reduce_scatter", "input_list", t).shape != output.shape:
            raise ValueError(
                f"reduce_scatter: each input's shape must be output's {output.shape}, got {t.shape}"
            )
    xp = output.xp
    block = world.reduce_scatter(xp.stack([t.array for t in input_list]), mean=mean)
    block = block.reshape(output.shape)
    output.array[...] = block
    gathered = {}  # one all-gather of the gradient for every input's piece

    def piece(r: int):
        def back(grad):  # torch's: unscaled, AVG as SUM
            if gathered.get("grad") is not grad:
                gathered.update(grad=grad, rows=world.all_gather(xp.ascontiguousarray(grad)))
            return gathered["rows"][r]

        return back

    backs = tuple(piece(r) for r in range(world.world_size))
    return input_list[0].new(block, args=tuple(input_list), back_fns=backs, name="reduce_scatter")


def broadcast(tensor, src: int, group=None) -> Tensor:
    """Rank ``src``'s ``tensor`` (a World rank, as torch's) on every rank of ``group``, as a
    new Tensor."""
    world = _world("broadcast", group)
    tensor = _tensor("broadcast", "tensor", tensor)
    src = _group_rank("broadcast", world, "src", src, None)  # the group's rank of it

    def back(grad):
        total = world.all_reduce(grad, mean=False)  # torch's reduce to src, then zeros elsewhere
        return total if world.rank == src else total * 0

    out = world.broadcast(tensor.xp.ascontiguousarray(tensor.array).copy(), src)
    return tensor.new(out, args=(tensor,), back_fns=(back,), name="broadcast")
