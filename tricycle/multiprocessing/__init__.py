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
it. A Tensor sent through a ``Queue`` or a ``Pool`` is pickled, so the receiver gets a copy
of its array: torch moves a CPU tensor's storage into shared memory instead, so that both
processes see one tensor. The sharing strategies are kept, for scripts that set one, and
change nothing.
"""

import multiprocessing
import sys
from multiprocessing import *  # noqa: F403 (torch's module is Python's, with these beside)

from tricycle.multiprocessing.spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

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

if sys.platform in ("darwin", "win32"):  # torch's choices per system
    _all_sharing_strategies = {"file_system"}
    _sharing_strategy = "file_system"
else:
    _all_sharing_strategies = {"file_descriptor", "file_system"}
    _sharing_strategy = "file_descriptor"


def set_sharing_strategy(new_strategy) -> None:
    """Choose how tensors would be shared between processes: one of
    ``get_all_sharing_strategies()`` (recorded only: tricycle pickles tensors)."""
    global _sharing_strategy
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(  # torch's kind of error
            f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}"
        )
    _sharing_strategy = new_strategy


def get_sharing_strategy() -> str:
    """The sharing strategy last set (torch's default for this system before)."""
    return _sharing_strategy


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system has, as torch's."""
    return set(_all_sharing_strategies)
