"""Sub-groups of the World: some of its ranks, with the World's collectives among them alone
(torch's process groups other than the default one: what a ``DeviceMesh`` dimension of fewer
ranks than the World gives, and what HYBRID_SHARD shards and replicates over).

**Made by every rank at once.** ``new_groups(world, layout)`` splits the World into the
groups of ``layout`` (lists of World ranks, each rank in one): every rank of the World calls
it with the same layout, and gets the group it is in. On the host that is MPI's
communicator split (``Comm.Split``, one collective over the World's communicator, each
rank's color its group's index); a group of one rank needs no communicator (its collectives
are the local arithmetic, as a world of one's).

**A Group is a World** over fewer ranks: ``rank`` and ``world_size`` are its own (the rank's
index in the group's list, the list's length), and its collectives and messages are the
World's methods (``tricycle.parallel.world_collectives``, ``p2p``) over its own
communicators. GPU arrays go through an NCCL communicator of the group's, started (as the
World starts its own) at the group's first collective of GPU arrays: every rank of the group
makes that collective at once, so the start is collective too; it must happen outside a CUDA
graph's capture. The deadline, the deadline keeper and ``abort`` are the World's: a rank that
hangs in a group's collective ends the job as in the World's. A group's communicators end
with the World's (MPI's at ``finalize``; NCCL's is left to the process's exit).

**Ranks left out.** ``split(world, layout)`` takes disjoint groups that need not hold every
rank (torch's ``new_group``, ``new_subgroups_by_enumeration``): a rank in none gets None (it
takes no communicator: MPI's ``MPI_UNDEFINED`` color). ``members_group(world, ranks)`` is
made by the group's ranks alone (MPI's ``Comm.Create_group``: torch's
``use_local_synchronization``), the others never calling it.

**torch's ProcessGroup.** A Group is what ``tricycle.distributed.new_group`` returns:
``group.size()`` and ``group.rank()`` are torch's (``rank`` is a number that may also be
called, so the World's methods read it as their own ``self.rank``).
"""

from tricycle.parallel import distributed
from tricycle.parallel.engines import DistributedError, _LocalEngine, _MPIEngine


class GroupRank(int):
    """A Group's rank: the number the World's methods read as ``self.rank``, which torch's
    ``ProcessGroup.rank()`` calls."""

    def __call__(self) -> int:
        return int(self)


class Group(distributed.World):
    """Some of the World's ranks (``ranks``, World ranks in the group's order), made by
    ``new_groups``, ``split`` or ``members_group``; ``comm`` its MPI communicator (None for
    a group of one rank)."""

    def __init__(self, world, ranks: tuple, comm=None):  # no World.__init__: no MPI start
        self.parent, self.ranks = world, tuple(int(r) for r in ranks)
        self.rank, self.world_size = GroupRank(self.ranks.index(world.rank)), len(self.ranks)
        self.MPI = None if comm is None else world.MPI  # a group of one: a world of one's
        self._host = _LocalEngine() if comm is None else _MPIEngine(self.MPI, comm)
        self._gpu = None
        self.finalized = False

    # the World's own: its deadline, its keeper, its GPU and its way of ending the job
    @property
    def timeout(self) -> float:
        return self.parent.timeout

    @property
    def device(self):
        return self.parent.device

    @property
    def local_rank(self) -> int:
        return self.parent.local_rank

    @property
    def _keeper(self):
        return self.parent._keeper

    def keep_deadlines(self) -> None:
        self.parent.keep_deadlines()

    def abort(self, message: str, *args, **kwargs):
        return self.parent.abort(f"in the group of ranks {list(self.ranks)}: {message}", *args,
                                 **kwargs)  # fmt: skip

    def start_gpu(self) -> None:
        """The World's GPU (the group's NCCL communicator starts at its first collective)."""
        self.parent.start_gpu()

    def _engine(self, array):
        if self.world_size == 1:  # nothing to exchange, on the host or a GPU
            return self._host
        return super()._engine(array)

    def finalize(self) -> None:
        """Nothing: a group's communicators end with the World's (see the module)."""

    def size(self) -> int:
        """torch's ``ProcessGroup.size()``: the number of ranks in the group."""
        return self.world_size

    def group_rank(self, global_rank: int) -> int:
        """The group's rank of the World's rank ``global_rank`` (a ValueError if it is not
        in the group): torch's ``get_group_rank``."""
        if global_rank not in self.ranks:
            raise ValueError(f"Global rank {global_rank} is not part of group {self!r}")
        return self.ranks.index(global_rank)

    def global_rank(self, group_rank: int) -> int:
        """The World's rank of the group's rank ``group_rank``: torch's ``get_global_rank``."""
        if not 0 <= group_rank < self.world_size:
            raise ValueError(f"Group rank {group_rank} is not part of group {self!r}")
        return self.ranks[group_rank]

    def __repr__(self) -> str:
        return f"Group(ranks={list(self.ranks)}, rank={self.rank}, world_size={self.world_size})"


def new_groups(world, layout) -> "Group":
    """This rank's group of ``layout`` (lists of World ranks, each rank in exactly one list,
    the same on every rank: a collective of the World). Each group's ranks are ordered as its
    list; a group of every rank is a Group too (use the World itself where that will do)."""
    groups = [tuple(int(r) for r in ranks) for ranks in layout]
    every = sorted(r for ranks in groups for r in ranks)
    if every != list(range(world.world_size)) or any(not ranks for ranks in groups):
        raise DistributedError(
            f"new_groups: the layout {[list(g) for g in groups]} must hold each of the "
            f"{world.world_size} ranks of the World once, in non-empty groups"
        )
    return split(world, groups)


def split(world, layout) -> "Group | None":
    """This rank's group of ``layout`` (disjoint lists of World ranks, the same on every
    rank: a collective of the World), or None for a rank in none of them."""
    groups = _layout("split", world, layout)
    color = next((i for i, ranks in enumerate(groups) if world.rank in ranks), None)
    mine = None if color is None else groups[color]
    if world.world_size == 1:
        return None if mine is None else Group(world, mine)
    key = 0 if mine is None else mine.index(world.rank)  # the rank's place: the group's order
    color = world.MPI.UNDEFINED if mine is None else color
    comm = world._host.comm.Split(color, key)  # every rank of the World, at once
    if mine is None:
        return None
    if len(mine) == 1:  # a communicator of one is never used: the local engine's arithmetic
        comm.Free()
        comm = None
    return Group(world, mine, comm)


def members_group(world, ranks) -> "Group":
    """The group of ``ranks`` (World ranks, this one among them, in the group's order),
    made by those ranks alone (MPI's ``Create_group``: the others do not call it). Groups
    made so must be made in the same order on every rank that is in two of them."""
    (mine,) = _layout("members_group", world, [ranks])
    if world.rank not in mine:
        raise DistributedError(
            f"members_group: rank {world.rank} makes the group {list(mine)}, which it is not in"
        )
    if len(mine) == 1 or world.world_size == 1:  # nothing to exchange: no communicator
        return Group(world, mine)
    host = world._host.comm
    every, members = host.Get_group(), None
    try:
        members = every.Incl(list(mine))
        comm = host.Create_group(members)  # the members alone, at once
    finally:
        for mpi_group in (every, members):
            if mpi_group is not None:
                mpi_group.Free()
    return Group(world, mine, comm)


def _layout(owner: str, world, layout) -> list:
    """``layout`` as tuples of World ranks: non-empty, in range, no rank twice."""
    groups = [tuple(int(r) for r in ranks) for ranks in layout]
    flat = [r for ranks in groups for r in ranks]
    if (any(not ranks for ranks in groups) or len(set(flat)) != len(flat)
            or any(not 0 <= r < world.world_size for r in flat)):  # fmt: skip
        raise DistributedError(
            f"{owner}: the layout {[list(g) for g in groups]} must hold non-empty groups of "
            f"the World's ranks (0 to {world.world_size - 1}), each rank at most once"
        )
    return groups


def group_of_one(world) -> "Group":
    """This rank alone, as a group (no collective: nothing to exchange)."""
    return Group(world, (world.rank,))
