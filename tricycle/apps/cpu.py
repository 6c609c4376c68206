"""The CPU a run uses: how many threads the compiled kernels and BLAS run on, and malloc.

Importing tricycle changes no library setting: a program (the training script, a benchmark)
asks for these for its run, and ``cpu_threads`` puts BLAS's thread count back when the run
ends. ``TRICYCLE_THREADS`` (or ``--threads``) is the number for both the kernels of
``tricycle.backends.cpu`` and numpy's BLAS; several processes started by mpiexec on one
machine share its cores out between them instead of each taking them all (from
``distributed.init``: ``tricycle.parallel.threads``).
"""

import os

from tricycle import dispatch
from tricycle.parallel.threads import (  # noqa: F401 - the applications' names for them
    available_cores,
    cpu_threads,
    set_cpu_threads,
)


def threads_per_process(n: int | None, processes_here: int = 1) -> int | None:
    """``n``, else ``TRICYCLE_THREADS``, else (None: the libraries' own default) unless
    ``processes_here`` processes share this machine, which then get a share of its cores."""
    text = os.environ.get("TRICYCLE_THREADS", "").strip()
    if n is None and text:
        if not text.isdigit() or int(text) < 1:
            raise SystemExit(f"TRICYCLE_THREADS={text!r}: expected a whole number >= 1 (the "
                             "CPU threads of each process), or leave it unset")  # fmt: skip
        n = int(text)
    if n is None and processes_here > 1:
        n = max(1, available_cores() // processes_here)
    return n


def tune_cpu_allocator() -> None:
    """Keep freed memory in the process (``tricycle.backends.cpu.memory``): the CPU backend does
    it before its first kernel; a script calls this to have it from its start. A no-op
    without the backend (numba missing) or elsewhere than glibc."""
    if dispatch.available("cpu"):
        from tricycle.backends.cpu.memory import keep_freed_memory  # noqa: PLC0415

        keep_freed_memory()
