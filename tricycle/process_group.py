"""The data-parallel process group as the layers see it: ``tricycle.parallel.distributed.init``
registers a function that gives its current World (``use_world``), and a layer that reduces
over the ranks (``nn.SyncBatchNorm``) asks ``world()``. The layers cannot import the parallel
layer, which sits above them, and the parallel layer need not know the layers that use it:
this base module is where the two meet, and it holds nothing else."""

from tricycle import checks

_registered = {"find_world": None}  # set by tricycle.parallel.distributed.init


def use_world(find_world) -> None:
    """Register ``find_world``: a function of no arguments giving the process's World (with
    ``world_size`` and ``all_reduce(array, mean=False)``, the sum over the ranks) or None."""
    checks.function("use_world", "find_world", find_world)
    _registered["find_world"] = find_world


def world():
    """The process group's World if it has several ranks, else None."""
    find = _registered["find_world"]
    current = None if find is None else find()
    return current if current is not None and current.world_size > 1 else None


__all__ = ["use_world", "world"]
