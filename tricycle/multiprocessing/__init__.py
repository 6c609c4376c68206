"""torch.multiprocessing: Python's multiprocessing, and ``spawn`` on tricycle's launcher.

A PyTorch data-parallel script starts its ranks with ``spawn`` and joins them inside::

    import tricycle.multiprocessing as mp
    import tricycle.distributed as dist

    def main(rank, world_size):
        dist.init_process_group("gloo")          # the world of the processes spawn started
        ...                                      # DDP, all_reduce, as under tricycle-run
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(main, args=(2,), nprocs=2, join=True)

``spawn`` and ``start_processes`` start the ranks through mpiexec, as ``tricycle-run -n N``
does (``tricycle.multiprocessing.spawn`` says how, and how failures come back). More than
one process needs MPI: ``pip install tricycle-dl[distributed]``; one runs without it.

Everything of Python's ``multiprocessing`` is here under its name (``Process``, ``Queue``,
``Pool``, ``get_context``, ``set_start_method``, ``cpu_count``, ...), as torch's module has
it. A Tensor sent through a ``Queue``, ``Pipe`` or ``Pool`` here is shared, as torch's: this
module registers a reducer with ``multiprocessing.reduction.ForkingPickler`` (what those
pickle with), so that a host tensor is moved into shared memory (``Tensor.share_memory_``, in
place) and arrives as a view of it: a write in the receiver is seen by the sender. The sharing
strategy (``set_sharing_strategy``) picks how later segments are made and named:
``"file_descriptor"`` (anonymous, sent as a descriptor; nothing can leak) or ``"file_system"``
(a file in /dev/shm, unlinked when its maker drops it): ``tricycle.shared_memory`` says more.
A GPU tensor is sent as a CUDA IPC handle, as torch's: the receiver maps the same device
memory (``tricycle.multiprocessing.cuda_ipc`` says how, and how long the sender keeps it;
``tricycle.cuda.ipc_collect``); use the "spawn" start method (a child forked after CUDA
started gets torch's error). Non-leaf tensors that need a gradient are refused, as torch's.
"""

import functools
import multiprocessing
from multiprocessing import *  # noqa: F403 (torch's module is Python's, with these beside)
from multiprocessing.reduction import ForkingPickler

from tricycle import shared_memory
from tricycle.multiprocessing import cuda_ipc
from tricycle.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)
from tricycle.parameter import Parameter
from tricycle.tensor import Tensor

__all__ = [
    "set_sharing_strategy",
    "get_sharing_strategy",
    "get_all_sharing_strategies",
    *multiprocessing.__all__,
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]


def set_sharing_strategy(new_strategy) -> None:
    """Choose how later shared tensors are made and sent between processes: one of
    ``get_all_sharing_strategies()`` (``tricycle.shared_memory`` says what each does)."""
    shared_memory.set_strategy(new_strategy)


def get_sharing_strategy() -> str:
    """The sharing strategy last set (torch's default for this system before)."""
    return shared_memory.get_strategy()


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system has, as torch's."""
    return shared_memory.all_strategies()


_reduce_tensor = functools.partial(
    shared_memory.reduce_tensor, reduce_gpu_array=cuda_ipc.reduce_array
)
for _cls in (Tensor, Parameter):  # torch registers its reducers when its module is imported
    ForkingPickler.register(_cls, _reduce_tensor)
