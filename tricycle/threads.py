"""CPU threads: an opt-in pool of helper threads for tricycle's fused ops and numpy's BLAS.

Importing tricycle starts nothing and changes nothing: until a program calls ``enable()``
(the training script does), every op runs on its caller's thread and numpy's BLAS keeps its
own threads and settings. ``disable()`` restores them.

Why a pool. numpy runs its elementwise loops on the calling thread only, so a fused op
(softmax, attention, GeLU, the norms, AdamW) splits its rows into blocks
(``tricycle.blocking``) and ``run_blocks`` spreads them over the caller and helper threads;
numpy releases the GIL inside its loops, so the threads run at once. Three things decide
whether that beats one thread:

1. **BLAS.** OpenBLAS has a thread pool of its own for the matrix products, whose threads spin
   after every product and would fight the helpers for the cores. OpenBLAS 0.3.27 and later let
   a program run BLAS's parallel work on its own threads instead
   (``openblas_set_threads_callback_function``); where numpy's OpenBLAS has that hook,
   ``enable`` installs it and the same helpers run the products and the fused ops, one after
   the other. Without the hook the pool runs one thread unless told otherwise.
2. **Waiting.** A helper must start within microseconds of being given work: a block takes
   tens of microseconds. A helper waits by spinning on a flag byte (numpy's ``any()`` over a
   zero-stride view rereads it without holding the GIL, ``_Flag``); after ~0.1 s without work
   it sleeps on an event.
3. **Waking up.** On a virtual machine a core with nothing to run halts, and waking it is slow.
   While the pool has work, one "keep-awake" thread per core spins at idle priority
   (``SCHED_IDLE``, Linux), which the kernel runs only when nothing else wants the core.

Measured on a 2-core VM (benchmarks/README.md, "CPU threads"): GeLU forward at (1024, 1024)
5.6 -> 3.6 ms; a GPT training step 5-13% faster than with OpenBLAS's own threads.

What keeps it safe:

- **Many Python threads.** The pool has one owner at a time: the thread whose operation took
  its lock, which is never waited for. Any other thread runs its blocks on its own thread and
  the parallel jobs of its BLAS products on spare threads of its own (the jobs of one product
  wait for each other, so they must run at the same time). Nothing waits for the pool, so
  nothing can deadlock on it; while several threads use it, the pool keeps to one thread.
- **Other processes.** Every quarter second the pool compares the CPU time its process used with
  the time the machine's cores were busy (``/proc/stat``): while other processes keep cores
  busy it uses only the cores left, at least one thread, and one thread means no helper, no
  spinning and BLAS on its caller's thread (``tricycle.cpu_share``).
- **Ctrl-C.** BLAS calls the pool from C (a ctypes callback), where a Python exception would be
  printed and dropped ("Exception ignored on calling ctypes callback function"), leaving the
  product unfinished. ``enable`` (from the main thread) installs a SIGINT handler that, while
  the main thread is inside that callback or the pool's own bookkeeping (taking its lock,
  starting helpers, setting BLAS's threads: an interrupt there would leave the lock held or a
  helper waited for that never started), only notes the interrupt: it is raised as soon as
  that work has returned. The callback catches anything else and defers it the same way.
"""

import _thread
import atexit
import ctypes
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tricycle import checks
from tricycle.cpu_share import Share

MAX_THREADS = 8  # each helper needs the GIL to start: 16 threads ran a GPT step 2.5x slower
# a product of fewer multiply-adds runs on its caller's thread (``matmul``): handing BLAS's
# jobs to a helper costs ~40 us, more than a second core saves on it (2-core VM: 32x256x1024
# took 159 us on two threads, 123 us on one; 128x256x768, 247 against 304 us)
SMALL_PRODUCT = 16_000_000
SPIN_BYTES = 1 << 27  # one spin rereads the flag this many times: ~0.1 s here

_local = threading.local()  # .busy: this thread runs a block or a BLAS job (nested work: serial)


# ====================================================================== helper threads
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
    """A daemon thread that runs one task at a time; ``done`` is set while it has none.

    A pool helper (``spins``) spins for its next task for ~0.1 s, then sleeps until woken; a
    spare one sleeps at once, so that it never competes for a core it was not given.
    """

    def __init__(self, spins: bool):
        self.go, self.done = _Flag(), _Flag(True)
        self.wake = threading.Event()
        self.spins, self.stopped = spins, False
        self.task: Callable[[], None] | None = None
        self.error: BaseException | None = None
        threading.Thread(target=self._loop, name="tricycle-helper", daemon=True).start()

    def _loop(self) -> None:
        _local.busy = True  # a fused op called from a task runs serially
        while True:
            if not (self.go.is_set() or (self.spins and self.go.spin())):
                if self.stopped:
                    return
                self.wake.wait()
                self.wake.clear()
                continue
            self.go.clear()
            task, self.task = self.task, None
            try:
                task()
            except BaseException as error:  # noqa: BLE001 -- handed to finish()
                self.error = error
            self.done.set()

    def start(self, task: Callable[[], None]) -> None:
        """Give the helper a task (it must be done with the last one: ``take``). ``done`` is
        cleared here, not when the helper is taken, so that a helper taken but never started
        (an exception in between) stays free."""
        self.done.clear()
        self.task = task
        self.go.set()
        self.wake.set()

    def finish(self) -> BaseException | None:
        """Wait until the task is done, whatever is raised meanwhile; returns the task's
        error, else the first exception raised while waiting, else None."""
        interrupted = None
        while True:
            try:
                self.done.wait()
                break
            except BaseException as error:  # noqa: BLE001 -- the task still runs: keep waiting
                interrupted = interrupted or error
        error, self.error = self.error, None
        return error or interrupted

    def stop(self) -> None:
        """End the thread once it is idle."""
        self.stopped = True
        self.wake.set()


def _finish_all(helpers: Sequence[_Helper]) -> BaseException | None:
    """Wait for every helper; the first error among them, or None."""
    errors = [helper.finish() for helper in helpers]
    return next((e for e in errors if e is not None), None)


class _KeepAwake:
    """One idle-priority spinning thread per core while the pool has had work in the last
    ~0.1 s, so that cores whose threads wait for the GIL do not halt (module docstring)."""

    def __init__(self):
        self.active = threading.Event()
        self.stopped = False
        self.threads = 0

    def touch(self, cores: int) -> None:
        """Note that the pool has work (cheap when it is already awake)."""
        if self.active.is_set() or not hasattr(os, "SCHED_IDLE"):
            return
        while self.threads < cores:
            self.threads += 1
            threading.Thread(target=self._spin, name="tricycle-awake", daemon=True).start()
        self.active.set()

    def _spin(self) -> None:
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except OSError:  # not allowed here: a normal-priority spinner would steal cores
            return
        never = _Flag()
        while not self.stopped:
            self.active.wait()
            never.spin()
            self.active.clear()

    def stop(self) -> None:
        self.stopped = True
        self.active.set()


# ====================================================================== the pool
class _Pool:
    """Helper threads for one owner at a time, spare threads for everyone else.

    ``take`` hands the owner its helpers; ``spares`` hands threads to a BLAS product whose
    caller does not own the pool. Neither ever waits for another thread's work.
    """

    def __init__(self, n: int, blas: "_OpenBLAS", share_machine: bool):
        self.n = n
        self.blas = blas
        self.blas_before = blas.threads()  # restored by disable
        self.blas_threads = min(n, self.blas_before)  # BLAS's threads at most
        self.blas_now = self.blas_before  # what BLAS is set to now
        self.lock = threading.Lock()  # held by the owner for one operation
        self.helpers: list[_Helper] = []  # the owner's
        self.idle_spares: list[_Helper] = []
        self.spares_lock = threading.Lock()  # held only to take from or add to idle_spares
        self.share = Share(n, share_machine)
        self.keep_awake = _KeepAwake()

    def acquire(self) -> int:
        """Own the pool for one operation, without waiting: the threads it may use now, or
        0 when another thread owns it (release only after a nonzero answer)."""
        if not self.lock.acquire(blocking=False):
            self.share.contended()
            return 0
        return self.share.threads(threading.get_ident())

    def release(self) -> None:
        self.lock.release()

    def set_blas_threads(self, n: int) -> None:
        """Run BLAS products on ``n`` threads (at most BLAS's own number) from now on: only
        the owner, outside any product, or ``enable``/``disable`` change it."""
        n = min(n, self.blas_threads)
        if self.blas.hooked and n != self.blas_now:
            self.blas.set_threads(n)
            self.blas_now = n

    def take(self, k: int) -> list[_Helper]:
        """``k`` of the owner's helpers, made on first need. One still finishing an earlier
        operation (a block it claimed late) is waited for: that work waits on nothing."""
        while len(self.helpers) < k:
            self.helpers.append(_Helper(spins=True))
        taken = self.helpers[:k]
        for helper in taken:
            helper.done.wait()
        return taken

    def take_spares(self, k: int) -> list[_Helper]:
        """``k`` idle spare threads, made when there are too few; never waits."""
        with self.spares_lock:
            taken = self.idle_spares[-k:] if k else []
            del self.idle_spares[len(self.idle_spares) - len(taken) :]
        while len(taken) < k:
            taken.append(_Helper(spins=False))
        return taken

    def run_jobs(self, dojob, n_jobs: int, job_size: int, jobs: int, data) -> None:
        """Run OpenBLAS's ``dojob(i, jobs + i * job_size, data)`` for every i, all at once
        (the jobs of a product wait for each other), job 0 on this thread, on the pool's
        helpers if this thread can own it, else on spares; return when every job is done,
        whatever is raised meanwhile (then re-raised)."""
        threads = self.acquire()
        owned, error = threads > 0, None
        try:
            if threads > 1:  # alone on the machine: keep its cores awake
                self.keep_awake.touch(max(self.n, n_jobs))
            helpers = self.take(n_jobs - 1) if owned else self.take_spares(n_jobs - 1)
            try:
                for i, helper in enumerate(helpers, 1):
                    helper.start(lambda i=i: dojob(i, jobs + i * job_size, data))
                dojob(0, jobs, data)
            finally:
                error = _finish_all(helpers)
                if not owned:
                    with self.spares_lock:
                        self.idle_spares.extend(helpers)
        finally:
            if owned:
                self.release()
        if error is not None:
            raise error

    def run(self, fn: Callable[[Any], None], items: Sequence, one_thread_each: bool) -> None:
        """``fn(item)`` for every item, spread over the pool's threads when this thread can
        own it, else serially (see ``run_blocks``). With ``one_thread_each``, spread only
        when there are no more threads than items: else one item after the other, each with
        every thread for its BLAS products."""
        n = self.acquire()
        spread = n >= 2 and not (one_thread_each and n > len(items))
        if n:
            try:
                self.set_blas_threads(n)
                if spread:
                    errors = self._spread(fn, items, min(n, len(items)))
            finally:
                self.release()
        if not spread:
            for item in items:
                fn(item)
        elif errors:
            raise errors[0]

    def _spread(self, fn, items, n: int) -> list[BaseException]:
        """Run ``items`` on this thread and ``n - 1`` helpers, BLAS single-threaded (the
        threads are busy with items); the items' errors."""
        self.keep_awake.touch(self.n)
        if not hasattr(_local, "finished"):
            _local.finished = _Flag()  # one per calling thread: making a _Flag costs ~50 us
        job = _Job(fn, items, _local.finished)
        helpers = self.take(n - 1)
        with self.blas_on_one_thread():
            for helper in helpers:
                helper.start(job.work)
            job.work()
            job.finished.wait()
        return job.errors

    @contextmanager
    def blas_on_one_thread(self) -> Iterator[None]:
        """BLAS single-threaded for the body, then as before (the owner only)."""
        before = self.blas_now
        self.set_blas_threads(1)
        try:
            yield
        finally:
            self.set_blas_threads(before)

    def stop(self) -> None:
        """End the threads once idle (``disable``)."""
        for helper in self.helpers + self.idle_spares:
            helper.stop()
        self.keep_awake.stop()


class _Job:
    """Items of one ``run_blocks`` call, claimed by whichever thread comes first."""

    def __init__(self, fn, items, finished: _Flag):
        self.fn, self.items = fn, items
        self.claims = itertools.count()  # next() is atomic under the GIL
        self.lock = threading.Lock()
        self.left = len(items)
        self.finished = finished  # set by whichever thread finishes the last item
        finished.clear()
        self.errors: list[BaseException] = []

    def work(self) -> None:
        was_busy = getattr(_local, "busy", False)
        _local.busy = True
        try:
            while (i := next(self.claims)) < len(self.items):
                try:
                    self.fn(self.items[i])
                except BaseException as error:  # noqa: BLE001 -- re-raised by the caller
                    self.errors.append(error)
                with self.lock:
                    self.left -= 1
                    if self.left == 0:
                        self.finished.set()
        finally:
            _local.busy = was_busy


# ====================================================================== OpenBLAS
class _OpenBLAS:
    """numpy's OpenBLAS, found among the libraries loaded in this process, with its
    threading hook (0.3.27+, pthreads builds). ``hookable`` is False where there is none."""

    DOJOB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
    CALLBACK = ctypes.CFUNCTYPE(
        None, ctypes.c_int, DOJOB, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
    )

    def __init__(self):
        self.hookable = self.hooked = False
        self.pool: _Pool | None = None
        self.calls = 0  # parallel sections BLAS handed to the hook
        self._get_threads = self._set_threads = None
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

    def set_threads(self, n: int) -> None:
        if self._set_threads is not None:
            self._set_threads(n)

    def hook(self, pool: "_Pool") -> None:
        """Run BLAS's parallel work on ``pool`` from now on."""
        self.pool = pool
        self._set_callback(self._callback)
        self.hooked = True

    def unhook(self) -> None:
        """Give BLAS its own threads back."""
        if self.hooked:
            self._set_callback(self.CALLBACK())
            self.hooked = False

    def _run_jobs(self, sync, dojob, n_jobs, job_size, jobs, dojob_data) -> None:
        """OpenBLAS's callback (``_Pool.run_jobs``). Nothing may propagate from here into C:
        an exception is deferred and raised once the product has returned (``_Interrupts``);
        SIGINT never raises here while enable's handler is installed."""
        try:
            self.calls += 1
            self.pool.run_jobs(dojob, n_jobs, job_size, jobs, dojob_data)
        except BaseException as error:  # noqa: BLE001 -- C cannot take it: raise it later
            _interrupts.defer(error)


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


def _in_pool_work(frame) -> bool:
    """Whether ``frame`` runs inside the BLAS callback or the pool's own bookkeeping (it or a
    caller is one of ``_POOL_CODES``), where an exception would leave the pool's lock held,
    a helper waited for that never started, or BLAS on the wrong number of threads."""
    while frame is not None:
        if frame.f_code in _POOL_CODES:
            return True
        frame = frame.f_back
    return False


# ====================================================================== Ctrl-C
class _Interrupts:
    """Exceptions that arose inside the BLAS callback or the pool's bookkeeping
    (``_in_pool_work``), raised once their thread is out of it.

    For the main thread, by the SIGINT handler that ``enable`` installs: a watcher thread
    simulates SIGINT (``_thread.interrupt_main``) every 2 ms until the handler runs outside
    that work, and the handler raises the deferred exception there. A SIGINT that arrives
    inside it is deferred the same way. For another thread (which never sees signals), the
    watcher raises the exception's type in it asynchronously once it is out of the callback.
    """

    def __init__(self):
        self.lock = threading.RLock()  # the handler may run on top of the code holding it
        self.pending: dict[int, BaseException] = {}  # thread ident -> its deferred exception
        self.tripped = False  # a simulated SIGINT the handler has not seen yet
        self.watching = False
        self.previous: Any = None  # the SIGINT handler ours replaced, while installed

    def install(self) -> None:
        """Put ``handle`` in front of the current SIGINT handler (main thread only)."""
        current = signal.getsignal(signal.SIGINT)
        if callable(current) and current != self.handle:
            self.previous = current
            signal.signal(signal.SIGINT, self.handle)

    def uninstall(self) -> None:
        if self.previous is not None and threading.current_thread() is threading.main_thread():
            if signal.getsignal(signal.SIGINT) == self.handle:
                signal.signal(signal.SIGINT, self.previous)
            self.previous = None

    def defer(self, error: BaseException) -> None:
        with self.lock:
            self.pending.setdefault(threading.get_ident(), error)
            if not self.watching:
                self.watching = True
                _thread.start_new_thread(self._watch, ())  # no locks taken: safe in a handler

    def handle(self, signum, frame) -> None:
        """The SIGINT handler: defer inside the pool's work, else raise what is pending or
        let the previous handler act (``KeyboardInterrupt`` by default)."""
        main = threading.main_thread().ident
        with self.lock:
            simulated, self.tripped = self.tripped, False
            if _in_pool_work(sys._getframe()):
                self.pending.setdefault(main, KeyboardInterrupt())
                if not self.watching:
                    self.watching = True
                    _thread.start_new_thread(self._watch, ())
                return
            error = self.pending.pop(main, None)
        if error is not None:
            raise error
        if not simulated and self.previous is not None:  # a real Ctrl-C
            self.previous(signum, frame)

    def _watch(self) -> None:
        main = threading.main_thread().ident
        while True:
            time.sleep(0.002)
            frames = sys._current_frames()
            with self.lock:
                for ident in list(self.pending):
                    if ident not in frames:  # the thread has ended
                        del self.pending[ident]
                    elif _in_pool_work(frames[ident]):
                        continue
                    elif ident == main and self.previous is not None:
                        self.tripped = True
                        _thread.interrupt_main(signal.SIGINT)
                    else:
                        error = self.pending.pop(ident)
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(
                            ctypes.c_ulong(ident), ctypes.py_object(type(error))
                        )
                if not self.pending:
                    self.watching = False
                    return


_interrupts = _Interrupts()


# ====================================================================== the public face
_pool: _Pool | None = None
_blas: _OpenBLAS | None = None
_settings_lock = threading.Lock()  # enable and disable, one at a time


@checks.arguments(n=checks.optional(checks.positive_int), share_machine=checks.boolean)
def enable(n: int | None = None, share_machine: bool = True) -> int:
    """Start the pool on ``n`` threads (counting the caller) and return that number.

    ``n`` defaults to ``TRICYCLE_THREADS``, else to the number of BLAS threads (at most
    ``MAX_THREADS``) where numpy's OpenBLAS has the threading hook, else 1. With more than one
    thread and the hook, BLAS runs its products on the pool, on at most ``n`` threads. With
    ``share_machine`` (the default) the pool uses fewer threads while other processes keep
    cores busy (module docstring); without, always ``n`` unless several Python threads use it.
    Call it from the main thread: there it also installs the SIGINT handler that keeps Ctrl-C
    working during BLAS products. Calling it again with other settings restarts the pool.
    """
    global _pool, _blas
    with _settings_lock:
        if _blas is None:
            _blas = _OpenBLAS()
        n = _requested_threads(_blas) if n is None else min(n, MAX_THREADS)
        if _pool is not None and (_pool.n, _pool.share.share_machine) == (n, share_machine):
            return n
        _disable()
        _pool = _Pool(n, _blas, share_machine)
        if n > 1 and _blas.hookable:
            _blas.hook(_pool)
            _pool.set_blas_threads(n)
            if threading.current_thread() is threading.main_thread():
                _interrupts.install()
        _register_once()
        return n


@contextmanager
def enabled(n: int | None = None, share_machine: bool = True) -> Iterator[int]:
    """``enable(n, share_machine)`` for the body of a ``with``, then the settings from
    before (the pool as it was, or none)."""
    pool = _pool
    before = None if pool is None else (pool.n, pool.share.share_machine)
    try:
        yield enable(n, share_machine)
    finally:
        if before is None:
            disable()
        else:
            enable(*before)


def disable() -> None:
    """Stop the pool: ops run on their caller's thread, and numpy's BLAS gets back its own
    threads, its thread count and (where ``enable`` replaced it) the SIGINT handler."""
    with _settings_lock:
        _disable()


def _disable() -> None:
    global _pool
    pool, _pool = _pool, None
    if pool is None:
        return
    if _blas.hooked:
        _blas.unhook()
        _blas.set_threads(pool.blas_before)
    _interrupts.uninstall()
    pool.stop()


def count() -> int:
    """How many threads fused ops and BLAS products may use now: 1 unless ``enable`` was
    called; fewer than enabled while other processes or threads keep cores busy."""
    pool = _pool
    return 1 if pool is None else pool.share.now()


def _requested_threads(blas: _OpenBLAS) -> int:
    value = os.environ.get("TRICYCLE_THREADS")
    if value is None:
        return min(blas.threads(), MAX_THREADS) if blas.hookable else 1
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(f"TRICYCLE_THREADS must be a whole number of threads >= 1, got {value!r}")
    return min(int(value), MAX_THREADS)


_registered = False


def _register_once() -> None:
    """At exit, give BLAS its threads back (the pool's threads stop before BLAS's last
    products); in a forked child, forget the parent's threads."""
    global _registered
    if not _registered:
        _registered = True
        atexit.register(disable)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_threads)


def _forget_threads() -> None:
    """In a forked child the parent's threads (and any lock they held) do not exist."""
    global _settings_lock
    _settings_lock = threading.Lock()
    _interrupts.lock = threading.RLock()
    _interrupts.pending.clear()
    _interrupts.watching = False
    pool = _pool
    if pool is not None:
        pool.lock = threading.Lock()
        pool.spares_lock = threading.Lock()
        pool.helpers, pool.idle_spares = [], []
        pool.keep_awake = _KeepAwake()


def run_blocks(fn: Callable[[Any], None], blocks: Sequence) -> None:
    """Call ``fn(block)`` once for every item of ``blocks`` (row slices, or any pieces of
    work), spread over the pool's threads.

    ``fn`` must only write its own rows of preallocated outputs. The threads claim blocks one
    at a time from a shared counter, and the calling thread works too: a helper that starts
    late costs nothing, as the others take its blocks. Each block is computed the same way
    whichever thread runs it, so results do not depend on the number of threads. BLAS calls
    inside ``fn`` run single-threaded (the threads are busy with blocks). It runs serially
    without ``enable``, with one block, inside a block (a nested fused op), or while another
    thread owns the pool. The first exception of any block is re-raised here once every
    claimed block has finished.
    """
    pool = _pool
    if pool is None or pool.n < 2 or len(blocks) < 2 or getattr(_local, "busy", False):
        for block in blocks:
            fn(block)
    else:
        pool.run(fn, blocks, one_thread_each=False)


def matmul(xp, a, b, out=None):
    """``xp.matmul(a, b, out=out)``; on numpy, on the caller's thread alone when the product
    is small (fewer than ``SMALL_PRODUCT`` multiply-adds), else with BLAS's threads as the
    pool set them. For the products of ops that make many small ones, one after another (a
    recurrent layer's steps, a convolution of small images, a narrow Dense layer)."""
    pool = _pool
    if xp is not np or pool is None or pool.blas_now < 2 or not _blas.hooked:
        return xp.matmul(a, b, out=out)
    rows = a.shape[-2] if a.ndim > 1 else 1
    columns = b.shape[-1] if b.ndim > 1 else 1
    if max(a.size * columns, b.size * rows) >= SMALL_PRODUCT:  # either may carry the batch
        return np.matmul(a, b, out=out)
    if not pool.acquire():  # another thread owns the pool: its BLAS settings are not ours
        return np.matmul(a, b, out=out)
    try:
        with pool.blas_on_one_thread():
            return np.matmul(a, b, out=out)
    finally:
        pool.release()


def run_concurrently(*tasks: Callable[[], object]) -> list:
    """Call each of ``tasks`` once and return their results in order: at the same time, one
    thread each, when that pays, else one after the other.

    For independent pieces of work that each fill a core, such as two matrix products: when
    the pool has as many threads as tasks (or fewer), each task runs on a thread of its own
    with single-threaded BLAS, instead of the products taking turns on all the cores; with
    more threads than tasks, each product in turn gets all of them.
    """
    results: list = [None] * len(tasks)

    def run(i: int) -> None:
        results[i] = tasks[i]()

    pool = _pool
    if pool is None or pool.n < 2 or len(tasks) < 2 or getattr(_local, "busy", False):
        for i in range(len(tasks)):
            run(i)
    else:
        pool.run(run, range(len(tasks)), one_thread_each=True)
    return results


# the code whose frames defer Ctrl-C until they return (``_in_pool_work``)
_POOL_CODES = frozenset({_OpenBLAS._run_jobs.__code__, _Pool.run.__code__, matmul.__code__})
