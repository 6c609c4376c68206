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
None starts the GPU where there is one; host arrays always go through MPI. There is one
group, the world: ``group`` must be None.
"""

import os
from datetime import timedelta

from tricycle import checks
from tricycle.backend import cupy_available
from tricycle.parallel import distributed
from tricycle.tensor import Tensor

BACKENDS = ("nccl", "gloo", "mpi")
_INIT_METHODS = ("env://", "tcp://", "file://")  # the launcher joins the processes: ignored
_state = {"backend": None, "world": None, "mpi_ended": False}  # what init_process_group set


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
    """This process's rank (0 to ``get_world_size() - 1``)."""
    _check_group("get_rank", group)
    return _the_world("get_rank").rank


def get_world_size(group=None) -> int:
    """The number of processes."""
    _check_group("get_world_size", group)
    return _the_world("get_world_size").world_size


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
    """The backend named at ``init_process_group``; without one, the engine of the world's
    arrays: "nccl" once the GPU is started, else "mpi"."""
    _check_group("get_backend", group)
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
    """Wait until every rank has called ``barrier``."""
    _check_group("barrier", group)
    _the_world("barrier").barrier()
    return _done(async_op)


def destroy_process_group(group=None) -> None:
    """Wait for every rank, then shut MPI and NCCL down (``World.finalize``); nothing if no
    group is initialized. Under mpiexec a process cannot initialize again after it."""
    _check_group("destroy_process_group", group)
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
    if group is not None:
        raise ValueError(
            f"{owner}: tricycle has one process group, the world of every "
            f"rank: pass group=None, got {group!r}"
        )


def _check_rank(owner: str, name: str, value, world) -> None:
    checks.integer(owner, name, value, low=0)
    if value >= world.world_size:
        raise ValueError(f"{owner}: {name}={value}, but the ranks are 0 to {world.world_size - 1}")


def _check_list(owner: str, name: str, items, world) -> None:
    if not isinstance(items, list) or len(items) != world.world_size:
        size = len(items) if isinstance(items, list) else type(items).__name__
        raise ValueError(
            f"{owner}: {name} must be a list of world_size={world.world_size} items, got {size}"
        )


def _array(owner: str, name: str, tensor):
    """The array of a Tensor, which the collective writes in place."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{owner}: {name} must be a tricycle Tensor, got {type(tensor).__name__}")
    return tensor.array
