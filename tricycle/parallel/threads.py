"""Host threads per rank: the ranks on one machine share its cores.

Each library that runs on threads (numba's kernels, OpenMP, BLAS) takes every core by
default. N ranks started by ``mpiexec`` on one machine would then run N times as many
threads as cores, and every rank's host work (the launches that keep its GPU busy, the
data) waits for a core. So ``distributed.init`` gives each rank ``cores // sharing``
threads, where ``cores`` are those it may run on (its CPU affinity) and ``sharing`` the
number of ranks on the machine that may run on them too: all of them under a launcher that
binds nothing (MPICH's default), one where the launcher bound each rank to cores of its
own (Open MPI's default). It sets the variables the libraries read when they start their
threads, and limits the pools already started (BLAS, OpenMP: threadpoolctl) to the same
number. A variable the user set is left as it is, and so is its library.
"""

import contextlib
import os
import sys
from collections.abc import Callable, Iterator

from threadpoolctl import threadpool_limits

from tricycle import dispatch

# the number of threads of: tricycle's CPU kernels (tricycle.backends.cpu), numba, OpenMP,
# and the BLAS libraries numpy may load
VARIABLES = ("TRICYCLE_THREADS", "NUMBA_NUM_THREADS", "OMP_NUM_THREADS",
             "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")  # fmt: skip


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def affinity() -> frozenset[int] | None:
    """The ids of the cores this process may run on, or None where the OS does not say."""
    if hasattr(os, "sched_getaffinity"):
        return frozenset(os.sched_getaffinity(0))
    return None


def sharing(mine: frozenset[int] | None, masks: list) -> int:
    """How many of the processes whose affinities are ``masks`` (this one's, ``mine``,
    among them) may run on this one's cores: an unknown affinity may run anywhere."""
    return sum(1 for mask in masks if mine is None or mask is None or mask & mine)


def share_cores(local_size: int, sharers: int | None = None) -> int | None:
    """Size this process's host threads to its share of its cores: ``available_cores() //
    sharers`` (default ``local_size``: every process on the machine may run on them);
    returns the share (None for a process alone, whose libraries keep their defaults).
    Variables the user set win."""
    if local_size <= 1:
        return None
    share = max(1, available_cores() // (sharers or local_size))
    mine = [name for name in VARIABLES if name not in os.environ]
    if _numba_started():  # numba refuses a new count once its threads run (the kernels'
        mine = [name for name in mine if name != "NUMBA_NUM_THREADS"]  # TRICYCLE_THREADS holds)
    for name in mine:  # read by the libraries when they start their threads
        os.environ[name] = str(share)
    if "OPENBLAS_NUM_THREADS" in mine and "MKL_NUM_THREADS" in mine:  # BLAS loaded with numpy
        threadpool_limits(limits=share, user_api="blas")
    if "OMP_NUM_THREADS" in mine:
        threadpool_limits(limits=share, user_api="openmp")
    return share


def _numba_started() -> bool:
    """Whether numba's thread pool has been launched in this process."""
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    return bool(getattr(parallel, "_is_initialized", False))


__all__ = ["VARIABLES", "affinity", "available_cores", "share_cores", "sharing"]


def set_cpu_threads(n: int | None) -> Callable[[], None]:
    """Run the CPU kernels and BLAS on ``n`` threads from now on (None: leave them as they
    are); returns the function that puts them back."""
    undo = []
    if n is not None:
        blas = threadpool_limits(limits=n, user_api="blas")
        if dispatch.available("cpu"):
            from tricycle.backends.cpu import set_threads, thread_count  # noqa: PLC0415

            previous = thread_count()
            set_threads(n)  # after BLAS's limit: the kernels keep their BLAS single-threaded
            undo.append(lambda: set_threads(previous))
        undo.append(blas.restore_original_limits)

    def restore() -> None:
        for step in reversed(undo):
            step()

    return restore


@contextlib.contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """Within the block, the CPU kernels and BLAS run on ``n`` threads (None: as they are)."""
    restore = set_cpu_threads(n)
    try:
        yield
    finally:
        restore()
