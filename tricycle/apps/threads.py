"""torch's thread settings: ``set_num_threads``/``get_num_threads`` (the threads an op runs
on) and ``set_num_interop_threads``/``get_num_interop_threads``.

``set_num_threads(n)`` runs numpy's BLAS (the matrix products) and the compiled CPU kernels
(``tricycle.backends.cpu``, when numba is there) on ``n`` threads from then on, as
``tricycle.apps.cpu.set_cpu_threads`` does; ``get_num_threads`` answers that number, or,
before any call, the threads numpy's BLAS runs on (``threadpoolctl``). tricycle has no
inter-op pool (an op runs on the thread that calls it), so ``set_num_interop_threads`` holds
its number for ``get_num_interop_threads`` to answer (by default the cores this process may
use) and, as torch's, may be called once. These functions live with the applications
because they set the backends; importing them changes nothing.
"""

import threading

from threadpoolctl import threadpool_info

from tricycle import checks
from tricycle.apps.cpu import set_cpu_threads
from tricycle.parallel.threads import available_cores

_lock = threading.Lock()
_threads: int | None = None  # set_num_threads' number
_interop_threads: int | None = None  # set_num_interop_threads' number


def _positive(op: str, n) -> int:
    if not checks.is_integer(n):
        raise RuntimeError(f"{op}: expects an int, but got {type(n).__name__} ({n!r})")
    if n < 1:
        raise RuntimeError(f"{op}: expects a positive integer, got {n}")
    return int(n)


def set_num_threads(n: int) -> None:
    """torch.set_num_threads: run BLAS and the CPU kernels on ``n`` threads from now on."""
    global _threads
    n = _positive("set_num_threads", n)
    with _lock:
        set_cpu_threads(n)  # for good: torch's setting is not undone
        _threads = n


def get_num_threads() -> int:
    """torch.get_num_threads: ``set_num_threads``' number, else the threads of numpy's BLAS
    (the cores this process may use where BLAS does not say)."""
    if _threads is not None:
        return _threads
    counts = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    return max(counts) if counts else available_cores()


def set_num_interop_threads(n: int) -> None:
    """torch.set_num_interop_threads: holds ``n`` (tricycle has no inter-op pool); a second
    call is torch's RuntimeError."""
    global _interop_threads
    n = _positive("set_num_interop_threads", n)
    with _lock:
        if _interop_threads is not None:
            raise RuntimeError("set_num_interop_threads: cannot set the number of interop "
                               "threads after set_num_interop_threads was called (torch "
                               "allows one call, before any parallel work)")  # fmt: skip
        _interop_threads = n


def get_num_interop_threads() -> int:
    """torch.get_num_interop_threads: ``set_num_interop_threads``' number, else the cores
    this process may use (torch's default)."""
    return available_cores() if _interop_threads is None else _interop_threads


__all__ = [
    "get_num_interop_threads",
    "get_num_threads",
    "set_num_interop_threads",
    "set_num_threads",
]
