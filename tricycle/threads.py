"""CPU threads: one pool of helper threads for tricycle's fused ops and numpy's BLAS.

numpy runs its elementwise loops on the calling thread only, so a fused op (softmax,
attention, GeLU, the norms, AdamW) splits its rows into blocks and ``run_blocks`` spreads
them over ``THREADS`` threads: the caller and helpers from this pool. numpy releases the GIL
inside its loops, so the threads run at once while each block is in a numpy call.

Three things decide whether that is faster than one thread, and this module handles each:

1. **BLAS.** numpy's BLAS (OpenBLAS) has a thread pool of its own for the matrix products.
   Its threads spin for a while after every product, waiting for the next one, so helpers
   of ours would fight them for the cores. OpenBLAS 0.3.27 and later let a program run
   BLAS's parallel work on its own threads instead (``openblas_set_threads_callback_function``).
   When the OpenBLAS in this process has that hook, this module installs it (``blas``), and
   the same helpers run the products and the fused ops, one after the other. Without the
   hook, fused ops run on the caller only, unless ``TRICYCLE_THREADS`` asks for more.
2. **Waiting.** A helper must start within microseconds of being given work, since a block
   takes tens of microseconds. A helper waits by spinning on a flag byte: numpy's ``any()``
   over a zero-stride view of the byte rereads it without holding the GIL, and returns as
   soon as it is set (``_Flag``). After ~0.1 s without work it sleeps on an event instead.
3. **Waking up.** Threads still wait for the GIL between numpy calls, and a thread that waits
   sleeps. On a virtual machine a core that has nothing to run halts, and waking it again is
   slow (tens of microseconds or more). So while the pool has work, one "keep-awake" thread
   per core spins at idle priority (``SCHED_IDLE``, Linux): the kernel runs it only when
   nothing else wants the core, and a core that runs it does not halt.

Measured on a 2-core VM (benchmarks/README.md, "CPU threads"): GeLU forward at (1024, 1024)
5.6 -> 3.6 ms; a GPT training step 5-13% faster than with OpenBLAS's own threads and the
fused ops on one thread.

``TRICYCLE_THREADS=n`` sets the number of threads (at most 8); by default it is the number of
BLAS threads (``OPENBLAS_NUM_THREADS``, else the cores), capped at 8, when the hook can be
installed, else 1. With the hook, BLAS runs on as many threads, no more. ``TRICYCLE_THREADS=1``
leaves OpenBLAS's threading alone.
"""

import atexit
import ctypes
import itertools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

SPIN_BYTES = 1 << 27  # one spin rereads the flag this many times: ~0.1 s here


class _Flag:
    """A byte that one thread sets and another waits for without holding the GIL."""

    def __init__(self, value: bool = False):
        self.byte = np.full(1, value, dtype=bool)
        self._every_byte = as_strided(self.byte, shape=(SPIN_BYTES,), strides=(0,))

    def set(self) -> None:
        self.byte[0] = True

    def clear(self) -> None:
        self.byte[0] = False

    def is_set(self) -> bool:
        return bool(self.byte[0])

    def spin(self) -> bool:
        """Wait up to ~0.1 s for the flag; True once it is set. ``any()`` stops at the first
        True, and releases the GIL while it scans."""
        return bool(self._every_byte.any())

    def wait(self) -> None:
        """Spin until the flag is set."""
        while not self.is_set():
            self.spin()


class _Helper:
    """A daemon thread that runs one task at a time. It spins for the next task for ~0.1 s
    after each, then sleeps until woken. ``done`` is set while it has no task."""

    def __init__(self):
        self.go, self.done = _Flag(), _Flag(True)
        self.wake = threading.Event()
        self.task: Callable[[], None] | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, name="tricycle-helper", daemon=True).start()

    def _loop(self) -> None:
        _local.busy = True  # a fused op called from a task runs serially
        while True:
            if not self.go.spin():
                self.wake.wait()
                self.wake.clear()
                continue
            self.go.clear()
            task, self.task = self.task, None
            try:
                task()
            except BaseException as error:  # noqa: BLE001 -- re-raised by finish()
                self.error = error
            self.done.set()

    def start(self, task: Callable[[], None]) -> None:
        """Give the helper a task (it must have been taken by ``_take``)."""
        self.task = task
        self.go.set()
        self.wake.set()

    def finish(self) -> None:
        """Wait until the task is done."""
        self.done.wait()
        error, self.error = self.error, None
        if error is not None:
            raise error


_local = threading.local()
_helpers: list[_Helper] = []
_lock = threading.Lock()


def _take(n: int) -> list[_Helper]:
    """``n`` idle helpers, marked busy (``done`` cleared). Makes new ones while the pool has
    fewer than ``max(THREADS - 1, n)``; beyond that, waits for busy ones to finish."""
    taken: list[_Helper] = []
    while True:
        with _lock:
            for helper in _helpers:
                if len(taken) < n and helper.done.is_set():
                    helper.done.clear()
                    taken.append(helper)
            while len(taken) < n and len(_helpers) < max(THREADS - 1, n):
                helper = _Helper()
                helper.done.clear()
                _helpers.append(helper)
                taken.append(helper)
            busy = next((h for h in _helpers if h not in taken), None)
        if len(taken) == n:
            return taken
        busy.done.spin()  # another caller's helper: wait for it


def _forget_helpers() -> None:
    """In a forked child: the parent's threads (and any lock they held) do not exist here."""
    global _lock
    _helpers.clear()
    _lock = threading.Lock()
    _keep_awake.started = False
    _keep_awake.active.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


# ------------------------------------------------------------------------ keep-awake
class _KeepAwake:
    """One idle-priority spinning thread per core while the pool has had work in the last
    ~0.1 s, so that cores whose threads wait for the GIL do not halt (module docstring)."""

    def __init__(self):
        self.active = threading.Event()
        self.started = False

    def touch(self, cores: int) -> None:
        """Note that the pool has work (cheap when it is already awake)."""
        if self.active.is_set() or not hasattr(os, "SCHED_IDLE"):
            return
        if not self.started:
            self.started = True
            for _ in range(cores):
                threading.Thread(target=self._spin, name="tricycle-awake", daemon=True).start()
        self.active.set()

    def _spin(self) -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # not allowed here: a normal-priority spinner would steal cores
            return
        never = _Flag()
        while True:
            self.active.wait()
            never.spin()
            self.active.clear()


_keep_awake = _KeepAwake()


# ------------------------------------------------------------------------ OpenBLAS
class _OpenBLAS:
    """numpy's OpenBLAS, found among the libraries loaded in this process, with its
    threading hook (0.3.27+, pthreads builds). ``hooked`` is False where there is none."""

    DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
    CALLBACK = ctypes.CFUNCTYPE(
        None, ctypes.c_int, DOJOB, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
    )

    def __init__(self):
        self.hookable = False  # the hook exists: hook() can install it
        self.hooked = False
        self.calls = 0  # parallel sections run by the pool
        self._get_threads = None
        self.lib, self.prefix, self.suffix = _find_openblas()
        if self.lib is None:
            return
        self._set_threads = self._function("set_num_threads", [ctypes.c_int], None)
        self._get_threads = self._function("get_num_threads", [], ctypes.c_int)
        get_parallel = self._function("get_parallel", [], ctypes.c_int)
        set_callback = self._function("set_threads_callback_function", [self.CALLBACK], None)
        if None in (self._set_threads, self._get_threads, get_parallel, set_callback):
            return
        if get_parallel() != 1:  # 1: OpenBLAS's own pthreads pool, the one the hook replaces
            return
        self._set_callback = set_callback
        self._callback = self.CALLBACK(self._run_jobs)  # kept alive for as long as it is set
        self.hookable = True

    def _function(self, name: str, argtypes, restype):
        try:
            function = getattr(self.lib, f"{self.prefix}openblas_{name}{self.suffix}")
        except AttributeError:
            return None
        function.argtypes, function.restype = argtypes, restype
        return function

    def threads(self) -> int:
        return self._get_threads() if self._get_threads is not None else 1

    def hook(self, max_threads: int) -> None:
        """Run BLAS's parallel work on the pool from now on, on at most ``max_threads``
        threads: each helper needs the GIL to start, so many more than 8 cost more than they
        give (measured on 16 cores: 3.0k tokens/s with 16, 7.5k with 8)."""
        if self.hookable and not self.hooked:
            if self.threads() > max_threads:
                self._set_threads(max_threads)
            self._set_callback(self._callback)
            self.hooked = True
            atexit.register(self.unhook)

    def unhook(self) -> None:
        """Give BLAS its own threads back (at exit: the pool's threads stop before BLAS's)."""
        if self.hooked:
            self._set_callback(self.CALLBACK())
            self.hooked = False

    def _run_jobs(self, sync, dojob, n_jobs, job_size, jobs, dojob_data) -> None:
        """OpenBLAS's callback: run ``dojob(i, jobs + i * job_size, dojob_data)`` for every i,
        all at once (the jobs of a product wait for each other), and return when all are
        done. Job 0 runs on the calling thread."""
        self.calls += 1
        _keep_awake.touch(max(THREADS, n_jobs))
        helpers = _take(n_jobs - 1)
        for i, helper in enumerate(helpers, 1):
            helper.start(lambda i=i: dojob(i, jobs + i * job_size, dojob_data))
        dojob(0, jobs, dojob_data)
        for helper in helpers:
            helper.finish()

    def single_threaded(self) -> int:
        """Make BLAS calls run on their caller's thread; returns the setting to restore."""
        threads = self._get_threads()
        if threads != 1:
            self._set_threads(1)
        return threads

    def restore(self, threads: int) -> None:
        if threads != 1:
            self._set_threads(threads)


def _find_openblas():
    """(library, symbol prefix, symbol suffix) of the OpenBLAS numpy loaded, or Nones.

    numpy's wheels bundle scipy-openblas, whose symbols are ``scipy_openblas_*64_``; a numpy
    built against a system OpenBLAS has plain ``openblas_*``. Loaded libraries are listed in
    /proc/self/maps (Linux; elsewhere there is no hook)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower()}
    except OSError:
        return None, "", ""
    for path in sorted(p for p in paths if p.startswith("/")):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in [("scipy_", "64_"), ("scipy_", ""), ("", "64_"), ("", "")]:
            if hasattr(lib, f"{prefix}openblas_get_num_threads{suffix}"):
                return lib, prefix, suffix
    return None, "", ""


blas = _OpenBLAS()


# ------------------------------------------------------------------------ THREADS
def _thread_count() -> int:
    """TRICYCLE_THREADS, else the BLAS threads when the hook can be installed, else 1."""
    value = os.environ.get("TRICYCLE_THREADS")
    if value is None:
        return min(blas.threads(), 8) if blas.hookable else 1
    try:
        threads = int(value)
    except ValueError:
        message = f"TRICYCLE_THREADS must be a whole number of threads, got {value!r}"
        raise ValueError(message) from None
    if threads < 1:
        raise ValueError(f"TRICYCLE_THREADS must be at least 1, got {threads}")
    return min(threads, 8)


THREADS = _thread_count()
if THREADS > 1:
    blas.hook(max_threads=THREADS)


def run_blocks(fn: Callable[[Any], None], blocks: Sequence) -> None:
    """Call ``fn(rows)`` once for every item of ``blocks`` (row slices, or any pieces of
    work), on up to ``THREADS`` threads.

    ``fn`` must only write its own rows of preallocated outputs. The threads claim blocks
    one at a time from a shared counter, and the calling thread works too: a helper that
    starts late costs nothing, as the others take its blocks. Each block is computed the same
    way whichever thread runs it, so results do not depend on the number of threads. BLAS
    calls inside ``fn`` run single-threaded (the threads are busy with blocks). Called from
    inside a block (a nested fused op), or with one block, it runs serially. The first
    exception of any block is re-raised here once every claimed block has finished.
    """
    n_helpers = min(THREADS, len(blocks)) - 1
    if n_helpers <= 0 or getattr(_local, "busy", False):
        for rows in blocks:
            fn(rows)
        return
    _keep_awake.touch(THREADS)
    if not hasattr(_local, "finished"):
        _local.finished = _Flag()  # one per calling thread: making a _Flag costs ~50 us
    job = _Job(fn, blocks, _local.finished)
    helpers = _take(n_helpers)
    blas_threads = blas.single_threaded() if blas.hooked else 1
    try:
        for helper in helpers:
            helper.start(job.work)
        job.work()
        job.finished.wait()
    finally:
        blas.restore(blas_threads)
    if job.errors:
        raise job.errors[0]


def run_concurrently(*tasks: Callable[[], object]) -> list:
    """Call each of ``tasks`` once, at the same time on up to ``THREADS`` threads, and return
    their results in order.

    For independent pieces of work that each fill a core, such as two matrix products: BLAS
    runs single-threaded inside each (``run_blocks``), so each product keeps one core to itself
    instead of the two products taking turns on all of them.
    """
    results: list = [None] * len(tasks)

    def run(i: int) -> None:
        results[i] = tasks[i]()

    run_blocks(run, list(range(len(tasks))))
    return results


class _Job:
    """Blocks of one ``run_blocks`` call, claimed by whichever thread comes first."""

    def __init__(self, fn, blocks, finished: _Flag):
        self.fn, self.blocks = fn, blocks
        self.claims = itertools.count()  # next() is atomic under the GIL
        self.lock = threading.Lock()
        self.left = len(blocks)
        self.finished = finished  # set by whichever thread finishes the last block
        finished.clear()
        self.errors: list[BaseException] = []

    def work(self) -> None:
        was_busy = getattr(_local, "busy", False)
        _local.busy = True
        try:
            while (i := next(self.claims)) < len(self.blocks):
                try:
                    self.fn(self.blocks[i])
                except BaseException as error:  # noqa: BLE001 -- re-raised by the caller
                    self.errors.append(error)
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.finished.set()
        finally:
            _local.busy = was_busy
