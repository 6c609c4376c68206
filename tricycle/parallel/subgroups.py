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
"""

from tricycle.parallel import distributed
from tricycle.parallel.engines import DistributedError, _LocalEngine, _MPIEngine


class Group(distributed.World):
    """Some of the World's ranks (``ranks``, World ranks in the group's order), made by
    ``new_groups``; ``comm`` its MPI communicator (None for a group of one rank)."""

    def __init__(self, world, ranks: tuple, comm=None):  # no World.__init__: no MPI start
        self.parent, self.ranks = world, tuple(int(r) for r in ranks)
        self.rank, self.world_size = self.ranks.index(world.rank), len(self.ranks)
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
    color = next(i for i, ranks in enumerate(groups) if world.rank in ranks)
    mine = groups[color]
    if world.world_size == 1:
        return Group(world, mine)
    key = mine.index(world.rank)  # the rank's place in its group: the group's rank order
    comm = world._host.comm.Split(color, key)  # every rank of the World, at once
    if len(mine) == 1:  # a communicator of one is never used: the local engine's arithmetic
        comm.Free()
        comm = None
    return Group(world, mine, comm)


def group_of_one(world) -> "Group":
    """This rank alone, as a group (no collective: nothing to exchange)."""
    return Group(world, (world.rank,))
