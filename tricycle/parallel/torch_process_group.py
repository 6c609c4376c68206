"""torch.distributed's process group on tricycle's World: ``init_process_group``, the
ranks, the backend, ``barrier`` and ``destroy_process_group``; with the argument checks the
collectives (``torch_collectives``, ``torch_p2p``) and DDP (``torch_ddp``) share.

**The process group** is the World of ``tricycle.parallel.distributed.init()``, one per
process: tricycle's own calls (``init``, ``World``, ``DataParallel``, ``fail_together``) keep
their names and meanings beside these. The processes are started by ``tricycle-run -n N``
(mpiexec), which takes torchrun's flags (``--standalone --nproc_per_node=N``) and sets its
$RANK, $LOCAL_RANK, $WORLD_SIZE... on every rank; a $WORLD_SIZE or $RANK that disagrees with
the launch (a real torchrun's processes) is an error, as is an explicit ``world_size`` or
``rank``. The backend names the engines' start only:
"nccl" uses GPU ``local_rank`` and NCCL for GPU arrays, "gloo" and "mpi" stay on the host,
None starts the GPU where there is one; host arrays always go through MPI.

**Groups.** ``group=None`` (or ``group.WORLD``, the World itself) is every rank; a sub-group
is a ``tricycle.parallel.subgroups.Group`` (``new_group``, ``new_subgroups``:
``tricycle.parallel.torch_groups``; ``DeviceMesh.get_group``), whose ``rank()`` and
``size()`` are torch's. A rank that is not in a group ``new_group`` made gets torch's
``GroupMember.NON_GROUP_MEMBER``: as torch's, ``get_rank``/``get_world_size`` of it are
-1, a collective given it warns and does nothing, and a call that names a peer's rank
(``broadcast``'s ``src``, ``send``'s ``dst``) raises a ValueError. Ranks given to the calls
(``src``, ``dst``) are the World's, ``group_src``/``group_dst`` the group's, as torch's.
"""

import os
import warnings
from datetime import timedelta

from tricycle import checks, process_group
from tricycle.backend import cupy_available
from tricycle.parallel import distributed
from tricycle.parallel.subgroups import Group
from tricycle.tensor import Tensor

BACKENDS = ("nccl", "gloo", "mpi")
_INIT_METHODS = ("env://", "tcp://", "file://")  # the launcher joins the processes: ignored
_state = {"backend": None, "world": None, "mpi_ended": False}  # what init_process_group set


class _WorldMeta(type):
    """torch's class property ``WORLD``: the default group (the World) once initialized."""

    @property
    def WORLD(cls):  # noqa: N802 - torch's name
        return distributed._world


class GroupMember(metaclass=_WorldMeta):
    """torch's ``GroupMember``: ``WORLD`` (the World) and ``NON_GROUP_MEMBER``, what
    ``new_group`` gives a rank that is not in the group (torch's number)."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name: ``dist.group.WORLD``
    """torch's ``group``: ``group.WORLD`` is the World."""


class Work:
    """What a collective called with ``async_op=True`` returns: it is done already."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


def init_process_group(
    backend=None, init_method=None, timeout=None, world_size: int = -1, rank: int = -1
):
    """Join the processes the launcher started (a world of one without it): torch's call.

    ``backend``: "nccl" (GPU ``local_rank`` and NCCL), "gloo" or "mpi" (the host), torch's
    "cpu:gloo,cuda:nccl" form, or None (the GPU where there is one). ``init_method`` is
    accepted and ignored (mpiexec joins the processes); ``timeout`` (seconds or a timedelta)
    is how long a collective waits for the other ranks before the job ends.
    ``world_size`` and ``rank``, where given, must be the launch's."""
    owner = "init_process_group"
    if _state["world"] is not None and _state["world"] is distributed._world:
        raise ValueError(f"{owner}: the default process group is initialized already")
    gpu = _wants_gpu(owner, backend)
    if init_method is not None and not str(init_method).startswith(_INIT_METHODS):
        raise ValueError(
            f"{owner}: init_method must start with one of {_INIT_METHODS} "
            f"(it is ignored: mpiexec joins the processes), got {init_method!r}"
        )
    if isinstance(timeout, timedelta):
        timeout = timeout.total_seconds()
    checks.positive(owner, "timeout", timeout, optional=True)
    size, me = distributed.launched_size(), distributed.launched_rank()
    for name, given, launched in (("world_size", world_size, size), ("rank", rank, me)):
        checks.integer(owner, name, given, low=-1)
        if given != -1 and given != launched:
            raise ValueError(
                f"{owner}: {name}={given}, but this process is rank {me} of "
                f"{size} started by the launcher (tricycle-run -n N, mpiexec)"
            )
    for variable, launched in (("WORLD_SIZE", size), ("RANK", me)):
        value = os.environ.get(variable)
        if value is not None and value.strip() != str(launched):
            raise ValueError(
                f"{owner}: ${variable}={value}, but this process is rank {me} of {size} "
                "started by mpiexec: start tricycle's processes with tricycle-run (mpiexec), "
                "which takes torchrun's flags: `tricycle-run --standalone --nproc_per_node=N "
                "script.py`, not torchrun"
            )
    if _state["mpi_ended"] and size > 1:
        raise ValueError(
            f"{owner}: MPI cannot start again in a process after "
            "destroy_process_group(); initialize once per run"
        )
    _state["world"] = distributed.init(timeout=timeout, gpu=gpu)
    _state["backend"] = None if backend is None else str(backend).lower()
    process_group.use_groups(_member_of)  # nn.SyncBatchNorm(process_group=...) asks there


def _wants_gpu(owner: str, name) -> bool:
    """Whether the backend ``name`` asks for the GPU; a ValueError for a name not torch's."""
    if name is None:
        return cupy_available()
    if not isinstance(name, str):
        raise TypeError(f"{owner}: backend must be a string or None, got {type(name).__name__}")
    parts = [part.split(":")[-1] for part in name.lower().split(",")]  # "cpu:gloo,cuda:nccl"
    if not parts or any(part not in BACKENDS for part in parts):
        raise ValueError(f"{owner}: backend must be one of {BACKENDS} or None, got {name!r}")
    if "nccl" in parts and not cupy_available():
        raise ValueError(
            f"{owner}: backend {name!r} needs a CUDA GPU and cupy, and none is "
            "available; use 'gloo' or 'mpi' for processes on the host"
        )
    return "nccl" in parts


def is_available() -> bool:
    """True: tricycle's collectives run everywhere (a world of one without mpiexec)."""
    return True


def is_initialized() -> bool:
    """Whether this process is in a World (``init_process_group`` or ``init``)."""
    return distributed._world is not None


def _the_world(owner: str) -> "distributed.World":
    """The process's World (``distributed.init``'s, held by that module), or an error."""
    world = distributed._world
    if world is None:
        raise RuntimeError(
            f"{owner}: the default process group has not been initialized; "
            "call init_process_group() first"
        )
    return world


def get_rank(group=None) -> int:
    """This process's rank in ``group`` (the World's by default; -1 outside the group)."""
    over = _resolve("get_rank", group)
    return -1 if over is None else int(over.rank)


def get_world_size(group=None) -> int:
    """The number of processes in ``group`` (the World by default; -1 outside the group)."""
    over = _resolve("get_world_size", group)
    return -1 if over is None else over.world_size


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among those on its machine (its GPU's index); before
    ``init_process_group``, $LOCAL_RANK (torchrun's and tricycle-run's), else
    ``fallback_rank`` where given, as torch's. After it, the World's machine-local rank
    (MPI's), which equals $LOCAL_RANK where that is set, and which a script under mpiexec
    or ``tricycle-run -n N`` (no $LOCAL_RANK) needs to pick its GPU: torch 2.13 raises
    there without $LOCAL_RANK or ``fallback_rank``, and reads ``fallback_rank`` as every
    rank's."""
    if distributed._world is None and os.environ.get("LOCAL_RANK", "").strip().isdigit():
        return int(os.environ["LOCAL_RANK"])
    if distributed._world is None and fallback_rank is not None:
        return checks.integer("get_node_local_rank", "fallback_rank", fallback_rank, low=0)
    return _the_world("get_node_local_rank").local_rank


def get_backend(group=None) -> str:
    """The backend named at ``init_process_group`` (a sub-group's is the World's); without
    one, the engine of the world's arrays: "nccl" once the GPU is started, else "mpi"."""
    if _resolve("get_backend", group) is None:
        raise ValueError("get_backend: Invalid process group specified (this rank is not in it)")
    world = _the_world("get_backend")
    if _state["backend"] is not None and _state["world"] is world:
        return _state["backend"]
    return "nccl" if world.device is not None else "mpi"


def get_default_backend_for_device(device) -> str:
    """torch's backend for a device's collectives: "nccl" for a GPU ("cuda", "cuda:N", a GPU
    index, a device object of type "cuda"), "gloo" for the CPU, as ``init_process_group``
    takes them."""
    owner = "get_default_backend_for_device"
    kind = getattr(device, "type", device)  # torch.device("cuda:0").type is "cuda"
    if isinstance(kind, str):
        kind = kind.strip().lower().partition(":")[0]
    elif checks.is_integer(kind) and not isinstance(kind, bool) and kind >= 0:
        kind = "cuda"  # torch reads an index as a GPU's
    if kind not in ("cpu", "cuda", "gpu"):
        error = ValueError if isinstance(kind, str) or checks.is_integer(kind) else TypeError
        checks.fail(
            owner, "device", "'cpu', 'cuda', 'cuda:N', a GPU index or a device", device, error
        )
    return "gloo" if kind == "cpu" else "nccl"


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Wait until every rank of ``group`` (the World by default) has called ``barrier``."""
    over = _resolve("barrier", group)
    if over is None:
        return _not_member("barrier")
    over.barrier()
    return _done(async_op)


def destroy_process_group(group=None) -> None:
    """Wait for every rank, then shut MPI and NCCL down (``World.finalize``); nothing if no
    group is initialized. Under mpiexec a process cannot initialize again after it. A
    sub-group (or NON_GROUP_MEMBER) is left as it is: its communicators end with the World's."""
    if group is not None and group is not distributed._world:
        _resolve("destroy_process_group", group)  # a group of this World, or refused
        return
    world = distributed._world
    if world is None:
        return
    _state["mpi_ended"] = _state["mpi_ended"] or world.MPI is not None
    world.finalize()
    _state["world"] = _state["backend"] = None


# ====================================================================== shared checks
def _done(async_op: bool) -> "Work | None":
    checks.boolean("collective", "async_op", async_op)
    return Work() if async_op else None


def _check_group(owner: str, group) -> None:
    """For the calls that run over the World alone: ``group`` must be None (or the World)."""
    if group is not None and group is not distributed._world:
        raise ValueError(
            f"{owner}: runs over the world of every rank (tricycle takes no sub-group here): "
            f"pass group=None, got {group!r}"
        )


def _resolve(owner: str, group):
    """What a call given ``group`` runs over: the World (None, ``group.WORLD``) or a
    ``Group`` of it; None for torch's NON_GROUP_MEMBER (this rank is not in the group)."""
    world = _the_world(owner)
    if group is None or group is world:
        return world
    if isinstance(group, Group) and group.parent is world:
        return group
    if _non_member(group):
        return None
    raise ValueError(
        f"{owner}: group must be None (the world), group.WORLD or a group of this World's "
        f"ranks (new_group, new_subgroups, DeviceMesh.get_group), got {group!r}"
    )


def _non_member(group) -> bool:
    return type(group) is int and group == GroupMember.NON_GROUP_MEMBER


def _not_member(owner: str, returned=None):
    """torch's answer to a collective on a group this rank is not in: a warning, nothing
    done (``returned``: None, or -1 for a receive)."""
    world = distributed._world
    warnings.warn(
        f"Running {owner} on global rank {-1 if world is None else world.rank} which does not "
        "belong to the given group.",
        stacklevel=3,
    )
    return returned


def _member_of(owner: str, group):
    """The World or Group a call that names a peer's rank runs over; a ValueError for
    NON_GROUP_MEMBER (its ranks cannot be read), as torch's."""
    over = _resolve(owner, group)
    if over is None:
        raise ValueError(
            f"{owner}: Group {group!r} is not registered (this rank, "
            f"{_the_world(owner).rank}, is not in the group new_group made): only its members "
            "may name its ranks"
        )
    return over


def _group_rank(owner: str, over, name: str, rank, group_rank, optional: bool = False):
    """The peer's rank in ``over`` (the World or a Group) from torch's two spellings:
    ``rank`` (``name``: the World's) or ``group_rank`` (``group_<name>``: the group's);
    None only where ``optional`` and neither is given."""
    if rank is not None and group_rank is not None:
        raise ValueError(f"{owner}: give {name} or group_{name}, not both")
    if rank is None and group_rank is None:
        if optional:
            return None
        raise ValueError(f"{owner}: {name} (the peer's rank) or group_{name} must be given")
    if group_rank is not None:
        _check_rank(owner, f"group_{name}", group_rank, over)
        return group_rank
    if isinstance(over, Group):
        checks.integer(owner, name, rank, low=0)
        return over.group_rank(rank)
    _check_rank(owner, name, rank, over)
    return rank


def _global_rank(over, rank):
    """The World's rank of ``over``'s rank ``rank`` (None stays None)."""
    return over.global_rank(rank) if isinstance(over, Group) and rank is not None else rank


def _check_rank(owner: str, name: str, value, world) -> None:
    checks.integer(owner, name, value, low=0)
    if value >= world.world_size:
        raise ValueError(f"{owner}: {name}={value}, but the ranks are 0 to {world.world_size - 1}")


def _check_list(owner: str, name: str, items, world) -> None:
    if not isinstance(items, list) or len(items) != world.world_size:
        size = len(items) if isinstance(items, list) else type(items).__name__
        raise ValueError(
            f"{owner}: {name} must be a list of world_size={world.world_size} items (the "
            f"group's size), got {size}"
        )


def _array(owner: str, name: str, tensor):
    """The array of a Tensor, which the collective writes in place."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{owner}: {name} must be a tricycle Tensor, got {type(tensor).__name__}")
    return tensor.array
