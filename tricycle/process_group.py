"""The data-parallel process group as the layers see it: ``tricycle.parallel.distributed.init``
registers a function that gives its current World (``use_world``), ``init_process_group`` one
that turns a torch group argument into its ranks (``use_groups``), and a layer that reduces
over the ranks (``nn.SyncBatchNorm``) asks ``world()``, or ``world(process_group)``. The
layers cannot import the parallel layer, which sits above them, and the parallel layer need
not know the layers that use it: this base module is where the two meet, and it holds
nothing else."""

from tricycle import checks

_registered = {"find_world": None,  # set by tricycle.parallel.distributed.init
               "resolve_group": None}  # set by init_process_group (torch's groups)


def use_world(find_world) -> None:
    """Register ``find_world``: a function of no arguments giving the process's World (with
    ``world_size`` and ``all_reduce(array, mean=False)``, the sum over the ranks) or None."""
    checks.function("use_world", "find_world", find_world)
    _registered["find_world"] = find_world


def use_groups(resolve_group) -> None:
    """Register ``resolve_group(owner, group)``: the ranks a torch ``group`` argument
    (``new_group``'s) names, as a World of them (this rank must be one of them)."""
    checks.function("use_groups", "resolve_group", resolve_group)
    _registered["resolve_group"] = resolve_group


def world(group=None, owner: str = "world"):
    """The process group's World (or ``group``'s ranks, for ``owner``) if it has several
    ranks, else None."""
    find, resolve = _registered["find_world"], _registered["resolve_group"]
    current = None if find is None else find()
    if group is not None:
        if current is None or resolve is None:
            raise ValueError(f"{owner}: process_group={group!r} names a group, but no process "
                             "group has been started: call init_process_group first")  # fmt: skip
        current = resolve(owner, group)
    return current if current is not None and current.world_size > 1 else None


__all__ = ["use_groups", "use_world", "world"]
