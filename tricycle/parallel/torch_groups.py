"""torch.distributed's sub-groups on the World: ``new_group``, ``new_subgroups``,
``new_subgroups_by_enumeration`` and the translation of ranks between a group and the World
(``get_group_rank``, ``get_global_rank``, ``get_process_group_ranks``).

A group is a ``tricycle.parallel.subgroups.Group``: some of the World's ranks with their
own communicators, which every collective and message of ``tricycle.distributed`` takes as
``group=`` (``tricycle.parallel.torch_process_group`` reads it). As torch's:

- ``new_group(ranks)`` is called by every rank of the World, in the same order, members or
  not (one MPI communicator split over the World); a rank outside ``ranks`` gets
  ``GroupMember.NON_GROUP_MEMBER``. The group's ranks are ``ranks`` sorted (its rank i is
  the i-th smallest), or as listed with ``sort_ranks=False``. With
  ``use_local_synchronization=True`` the members alone call it (MPI's ``Create_group``) and
  the others get None.
- ``new_subgroups_by_enumeration(lists)`` makes one group of each (disjoint) list, and
  returns (this rank's group or None, a list of every group: this rank's own, and
  NON_GROUP_MEMBER for the others); ``new_subgroups(group_size)`` cuts the World's ranks
  into consecutive groups of ``group_size`` (by default the GPUs of a machine).

``timeout``, ``backend``, ``pg_options``, ``group_desc`` and ``device_id`` are taken and
checked but change nothing: a group waits as long as the World (its deadline), and host
arrays go through MPI, GPU arrays through NCCL (a communicator of the group's own, started
at its first collective of GPU arrays), whatever the backend's name.
"""

from datetime import timedelta

from tricycle import backend as array_backend
from tricycle import checks
from tricycle.parallel.subgroups import Group, members_group, split
from tricycle.parallel.torch_process_group import (
    BACKENDS,
    GroupMember,
    _member_of,
    _resolve,
    _state,
    _the_world,
)

__all__ = ["get_global_rank", "get_group_rank", "get_process_group_ranks", "new_group",
           "new_subgroups", "new_subgroups_by_enumeration"]  # fmt: skip


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization: bool = False, group_desc=None, device_id=None,
              sort_ranks: bool = True):  # fmt: skip
    """A group of ``ranks`` (World ranks; None: every rank), made by every rank at once
    (see the module): the group for its members, ``GroupMember.NON_GROUP_MEMBER`` for the
    others (None with ``use_local_synchronization``, whose non-members need not call it)."""
    owner = "new_group"
    world = _the_world(owner)
    _check_options(owner, timeout, backend)
    checks.boolean(owner, "use_local_synchronization", use_local_synchronization)
    checks.boolean(owner, "sort_ranks", sort_ranks)
    ranks = list(range(world.world_size)) if ranks is None else _checked(owner, ranks, world)
    ranks = sorted(ranks) if sort_ranks else ranks
    if use_local_synchronization:
        if (backend or _state["backend"] or "").lower() == "mpi":
            raise ValueError("MPI backend doesn't support use_local_synchronization=True")
        return members_group(world, ranks) if world.rank in ranks else None
    mine = split(world, [ranks])
    return GroupMember.NON_GROUP_MEMBER if mine is None else mine


def new_subgroups_by_enumeration(ranks_per_subgroup_list, timeout=None, backend=None,
                                 pg_options=None, group_desc=None) -> tuple:  # fmt: skip
    """One group of each list of World ranks in ``ranks_per_subgroup_list`` (disjoint; a
    rank may be in none), made by every rank at once: (this rank's group, or None; every
    group, this rank's own and NON_GROUP_MEMBER for the others), as torch's."""
    owner = "new_subgroups_by_enumeration"
    world = _the_world(owner)
    _check_options(owner, timeout, backend)
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    layout, seen = [], {}
    for ranks in ranks_per_subgroup_list:
        ranks = sorted(_checked(owner, ranks, world))
        for rank in ranks:
            if rank in seen:
                raise ValueError(
                    f"Rank {rank} has appeared in both subgroup {seen[rank]} and {ranks}"
                )
            seen[rank] = ranks
        layout.append(ranks)
    mine = split(world, layout)
    subgroups = [mine if mine is not None and list(mine.ranks) == ranks
                 else GroupMember.NON_GROUP_MEMBER for ranks in layout]  # fmt: skip
    return mine, subgroups


def new_subgroups(group_size=None, group=None, timeout=None, backend=None, pg_options=None,
                  group_desc=None) -> tuple:  # fmt: skip
    """``group``'s ranks (the World's by default) cut into consecutive groups of
    ``group_size`` (None: the GPUs of this machine), made by every rank at once: (this
    rank's group, every group), as ``new_subgroups_by_enumeration``."""
    owner = "new_subgroups"
    if group_size is None:
        if not array_backend.cupy_available():
            raise ValueError(
                "Default group size only takes effect when CUDA is available.If your "
                "subgroup using a backend that does not depend on CUDA,please pass in "
                "'group_size' correctly."
            )
        group_size = array_backend.cupy().cuda.runtime.getDeviceCount()
    checks.integer(owner, "group_size", group_size)
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    over = _resolve(owner, group)
    size = -1 if over is None else over.world_size
    if size < group_size:
        raise ValueError(
            f"The arg 'group_size' ({group_size}) must not exceed the world size ({size})"
        )
    if size % group_size:
        raise ValueError(f"The world size ({size}) must be divisible by 'group_size={group_size}'")
    ranks = get_process_group_ranks(over)
    layout = [ranks[i : i + group_size] for i in range(0, size, group_size)]
    return new_subgroups_by_enumeration(layout, timeout=timeout, backend=backend)


def get_group_rank(group, global_rank: int) -> int:
    """The rank in ``group`` of the World's rank ``global_rank`` (a ValueError if it is not
    in the group; the World's is itself)."""
    over = _member_of("get_group_rank", group)
    checks.integer("get_group_rank", "global_rank", global_rank)
    if isinstance(over, Group):
        return over.group_rank(global_rank)
    return _in_world("get_group_rank", "Global rank", global_rank, over)


def get_global_rank(group, group_rank: int) -> int:
    """The World's rank of ``group``'s rank ``group_rank`` (a ValueError if the group has
    no such rank; the World's is itself)."""
    over = _member_of("get_global_rank", group)
    checks.integer("get_global_rank", "group_rank", group_rank)
    if isinstance(over, Group):
        return over.global_rank(group_rank)
    return _in_world("get_global_rank", "Group rank", group_rank, over)


def get_process_group_ranks(group) -> list:
    """The World's ranks of ``group`` (None: the World), in the group's rank order."""
    over = _member_of("get_process_group_ranks", group)
    return list(over.ranks) if isinstance(over, Group) else list(range(over.world_size))


# ====================================================================== checks
def _checked(owner: str, ranks, world) -> list:
    """``ranks`` as a list of World ranks, refused as torch refuses them."""
    if isinstance(ranks, (str, bytes)) or not hasattr(ranks, "__iter__"):
        raise TypeError(f"{owner}: ranks must be a list of ints, got {ranks!r}")
    ranks = list(ranks)
    for rank in ranks:
        checks.integer(owner, "a rank", rank)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"ranks list must not contain duplicate entries, got {ranks}")
    if len(ranks) > world.world_size:
        raise ValueError(
            "the new group's world size should be less or equal to the world size set by "
            "init_process_group"
        )
    for rank in ranks:
        if not 0 <= rank < world.world_size:
            raise ValueError(
                f"Rank {rank} is out of range. Valid ranks are 0 to {world.world_size - 1} "
                f"(world_size={world.world_size})"
            )
    return [int(r) for r in ranks]


def _check_options(owner: str, timeout, backend) -> None:
    """``timeout`` (seconds or a timedelta) and ``backend`` (a name torch's) where given."""
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    checks.positive(owner, "timeout", timeout, optional=True)
    if backend is not None:
        parts = [part.split(":")[-1] for part in str(backend).lower().split(",")]
        if any(part not in BACKENDS for part in parts):
            raise ValueError(f"{owner}: backend must be one of {BACKENDS} or None, got "
                             f"{backend!r}")  # fmt: skip


def _in_world(owner: str, what: str, rank: int, world) -> int:
    if not 0 <= rank < world.world_size:
        raise ValueError(f"{owner}: {what} {rank} is not part of the world of "
                         f"{world.world_size} ranks")  # fmt: skip
    return rank
