"""How the CPU kernels are compiled and run: numba with its disk cache, threads made safe.

``jit`` compiles a serial loop. ``parallel_jit`` compiles a kernel twice from one function:
with its ``prange`` loop spread over numba's threads, and as a plain loop. Which one runs
depends on the input's size and the thread count only: a large input on more than one thread
runs the parallel variant, holding ``_pool`` (another Python thread that wants it waits), and
anything else the serial one. So any number of Python threads may call kernels at once
(numba's thread pools are not all safe for concurrent launches: ``workqueue`` aborts the
process; here only one launch is ever in flight), and they get exactly the numbers they get
one after the other. The two variants compute the same formula but may round differently:
numba compiles each on its own, and how LLVM vectorises a sum can differ between them.

One pool of threads does all the CPU's parallel work, the matrix products included
(``gemm.py``), and BLAS runs single-threaded inside it. Two pools on the same cores slow each
other down: numpy's OpenBLAS threads spin for about 0.1 s after every product (their wait is
fixed when the library loads), so a parallel kernel between two products finds its cores
taken. The pool is numba's ``tbb`` layer, whose threads start in microseconds and sleep when
idle; the ``tbb`` package installs it (on Linux its library lands in the environment's
``lib/``, where the loader does not look, so it is loaded from there by path). Where it cannot
load, or the user chose a layer (``NUMBA_THREADING_LAYER``), the products stay numpy's and
only large kernels go parallel (``workqueue``'s threads poll while idle and take tens of
microseconds to start). ``set_threads`` sets how many threads a parallel kernel uses
(default: ``TRICYCLE_THREADS``, else numba's, one per core).

Compilation happens at a kernel's first call for its argument types and is cached on disk
(``cache=True``), so a second process reuses it. The first compilation in a process says so on
stderr, and the time spent compiling is said once at exit; cache hits print nothing. A kernel
is compiled in a forked child process, which saves it to the cache, and this process loads it
from there as every later run does (``_run_from_cache``): a process that compiled code of its
own can run that code in place of the cached kernel it loads, and round differently (layer
norm's backward did, in the last bits of many rows), so a program's first run, which compiles,
would part from its later runs, which load. This way they give the same numbers (a kernel
first called outside the main thread compiles in the process, as before: see
``_compile_in_a_child``).
"""

import atexit
import ctypes
import functools
import hashlib
import os
import sys
import threading
import time
import types

import numba
from numba.core import caching, event, sigutils
from numba.core.compiler_lock import global_compiler_lock
from threadpoolctl import ThreadpoolController

from tricycle.backends.cpu import blas
from tricycle.backends.cpu.memory import keep_freed_memory

# inputs with fewer elements run serially: a launch on the tbb pool costs microseconds; on
# any other pool, which the products do not share, only inputs this large go parallel
PARALLEL_MIN_SIZE = 1 << 16
OTHER_POOL_MIN_SIZE = 1 << 22

# numpy's error model: a float division by zero gives inf instead of raising, which lets loops
# with divisions vectorise; reassociation lets sums vectorise (both variants of a kernel run
# the same inner loops, so they still give the same numbers)
_OPTIONS = {
    "cache": True,
    "nogil": True,
    "error_model": "numpy",
    "fastmath": {"reassoc", "contract", "nsz", "arcp"},
}
_choose_lock = threading.Lock()
_pool = threading.Lock()  # held by the one thread inside a parallel kernel
_settings = {"threads": None, "layer": None}
_applied = threading.local()  # the thread count numba was told in this thread (its own TLS)


def jit(function=None, **options):
    """``numba.njit`` with the disk cache and the GIL released, inlined into its callers:
    ``@jit`` or ``@jit(...)``."""
    if function is None:
        return functools.partial(jit, **options)
    # inlined into each kernel that calls it, as numba IR: the kernel's code is then the same
    # whichever of its callees this process compiled first, so a run that compiles the kernels
    # and one that loads them from the cache compute the same bits
    return _compiled(function, {"inline": "always", **options})


def _compiled(function, options):
    """``numba.njit`` of ``function`` whose disk cache is keyed on the whole backend's source,
    and which runs the code its cache holds, even just compiled (``_run_from_cache``)."""
    options = {**_OPTIONS, **options}
    dispatcher = numba.njit(**options)(function)
    if options.get("cache"):
        dispatcher._cache = _BackendCache(dispatcher.py_func)
        dispatcher.compile = functools.partial(_run_from_cache, dispatcher)
    return dispatcher


def _compile_in_a_child(dispatcher, sig) -> None:
    """Compile ``sig`` in a forked copy of this process, which saves it to the disk cache and
    exits, so that this process never holds code compiled here (``_run_from_cache``). The
    fork happens holding numba's compiler lock (no other thread is compiling, so the child
    finds it free), and the time is reported here (the child's events die with it). It
    compiles here instead where forking is not safe: outside the main thread (numba's tbb
    pool cannot be stopped for the fork from there), without fork (Windows), or under MPI."""
    if (
        not hasattr(os, "fork")
        or threading.current_thread() is not threading.main_thread()
        or "mpi4py" in sys.modules
    ):
        return
    with global_compiler_lock:
        _report.begin()
        try:
            pid = os.fork()
            if pid == 0:  # the child: compile, save, and leave without the parent's exit code
                code = 1
                try:
                    type(dispatcher).compile(dispatcher, sig)
                    code = 0
                finally:
                    os._exit(code)
            os.waitpid(pid, 0)
        finally:
            _report.end()


def _run_from_cache(dispatcher, sig):
    """``dispatcher.compile(sig)`` that loads the machine code from the disk cache: a
    signature the cache lacks is compiled in a child process, which saves it there, and then
    loaded as every later run loads it. A kernel loaded from the cache into a process that
    compiled code of its own can run that code instead of the cached one (their symbols share
    names) and round differently (layer norm's backward does, in the last bits of many rows);
    a process that only loads gives the numbers of every other, so a program's first run,
    which compiles, and its later runs give the same numbers. Where the cache cannot be
    written, the dispatcher compiles for itself, as numba does."""
    args, _ = sigutils.normalize_signature(sig)
    if tuple(args) not in dispatcher.overloads:
        for _ in range(3):  # again if another process's save replaced the cache's index
            if dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None:
                break
            _compile_in_a_child(dispatcher, sig)
    return type(dispatcher).compile(dispatcher, sig)  # loaded from the cache when it can be


# ---------------------------------------------------------------------- the disk cache
# numba's cache entry of a kernel is stale when the kernel's own file changes, not when a
# function it inlines from another file does (``maths.exp``): an upgrade would keep running
# the old code. Here every kernel's entry carries a digest of all the backend's modules.
@functools.cache
def sources_digest(folder: str = os.path.dirname(os.path.abspath(__file__))) -> bytes:
    """sha256 of the Python modules in ``folder`` (by default this backend's), names included."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    return digest.digest()


class _BackendStamp:
    """A cache locator mixin: the source stamp is the backend's digest."""

    def get_source_stamp(self):
        return sources_digest()


class _BackendCacheImpl(caching.CompileResultCacheImpl):
    _locator_classes = [
        type(locator.__name__, (_BackendStamp, locator), {})
        for locator in caching.CompileResultCacheImpl._locator_classes
    ]


class _BackendCache(caching.FunctionCache):
    _impl_class = _BackendCacheImpl


class ParallelKernel:
    """A kernel compiled twice: ``parallel`` (``prange`` over numba's threads) and ``serial``.

    Calling it runs one of them (see the module's docstring); the first argument's ``size``
    decides whether the work is worth a parallel launch, or the caller does (``run``). A kernel
    that multiplies (``blas=True``) runs with numpy's BLAS on one thread (``blas.py``).
    """

    def __init__(self, function, options):
        self.multiplies = options.pop("blas", False)
        self.__wrapped__ = function
        self.__name__, self.__doc__ = function.__name__, function.__doc__
        self.parallel = _compiled(function, {**options, "parallel": True})
        # a copy under another name: numba's cache keys on the function, not on its flags
        serial = types.FunctionType(
            function.__code__, function.__globals__, function.__name__ + "_serial",
            function.__defaults__, function.__closure__,
        )  # fmt: skip
        serial.__qualname__ = function.__qualname__ + "_serial"
        serial.__module__ = function.__module__
        self.serial = _compiled(serial, options)

    def __call__(self, *args):
        return self.run(getattr(args[0], "size", 0) >= parallel_min_size(), *args)

    def run(self, parallel: bool, *args):
        """The parallel variant if ``parallel`` and more than one thread is set, else the
        serial one: for a kernel whose first argument's size does not say its work."""
        if not self.multiplies:
            return self._run(parallel, *args)
        blas.one_thread_enter()
        try:
            return self._run(parallel, *args)
        finally:
            blas.one_thread_leave()

    def _run(self, parallel: bool, *args):
        if parallel:
            threads = thread_count()
            if threads > 1:
                _pool.acquire()  # another thread inside a parallel kernel: wait for it
                try:
                    if getattr(_applied, "threads", None) != threads:
                        numba.set_num_threads(threads)
                        _applied.threads = threads
                    return self.parallel(*args)
                finally:
                    _pool.release()
        return self.serial(*args)


def parallel_jit(function=None, **options):
    """A ``ParallelKernel`` of ``function``: ``@parallel_jit`` or ``@parallel_jit(...)``."""
    if function is None:
        return functools.partial(parallel_jit, **options)
    return ParallelKernel(function, options)


# ---------------------------------------------------------------------- threads
def set_threads(n: int) -> None:
    """Run parallel kernels on ``n`` threads (at most numba's pool size; 1: serial only)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_threads: n must be an integer >= 1, got {n!r}")
    _settings["threads"] = n
    if _settings["layer"] is not None:
        _single_threaded_blas()  # again: the caller may have just set BLAS's threads


def thread_count() -> int:
    """How many threads a parallel kernel uses."""
    if _settings["layer"] is None:
        _choose_layer()
    n = _settings["threads"]
    if n is None:
        text = os.environ.get("TRICYCLE_THREADS", "")
        n = int(text) if text.isdigit() and int(text) > 0 else numba.config.NUMBA_NUM_THREADS
        _settings["threads"] = n
    return min(n, numba.config.NUMBA_NUM_THREADS)


def parallel_min_size() -> int:
    """The fewest elements a kernel's first argument needs for a parallel launch."""
    return PARALLEL_MIN_SIZE if uses_one_pool() else OTHER_POOL_MIN_SIZE


def uses_one_pool() -> bool:
    """Whether the products run on the kernels' pool (``tbb`` loaded): see the docstring."""
    if _settings["layer"] is None:
        _choose_layer()
    return _settings["layer"] == "tbb"


def _choose_layer() -> None:
    """Before the first launch: tbb if it loads, else workqueue (unless the user chose); BLAS
    single-threaded, since the kernels call it from their own threads; and malloc keeping
    freed memory (``memory.py``)."""
    with _choose_lock:
        if _settings["layer"] is not None:
            return
        chosen = os.environ.get("NUMBA_THREADING_LAYER")
        if not chosen:
            chosen = "tbb" if _tbb_loads() else "workqueue"
            numba.config.THREADING_LAYER = chosen
        _single_threaded_blas()
        keep_freed_memory()
        _settings["layer"] = chosen


def _tbb_loads() -> bool:
    """Whether numba's tbb layer imports, after loading the tbb package's library by path."""
    for name in ("libtbb.so.12", "libtbb.12.dylib"):
        path = os.path.join(sys.prefix, "lib", name)
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                return False
    try:
        from numba.np.ufunc import tbbpool  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def _single_threaded_blas() -> None:
    """One thread for the BLAS libraries that numba's own calls reach (scipy's): all but the
    one numpy ships, which keeps the user's setting for numpy's own products (``blas.py``
    sets it to one only while a kernel that multiplies runs)."""
    import scipy.linalg.cython_blas  # noqa: F401, PLC0415 - loads the library numba calls

    for library in ThreadpoolController().select(user_api="blas").lib_controllers:
        if not blas.ships_with_numpy(library.filepath):
            library.set_num_threads(1)


# ---------------------------------------------------------------------- compile time, visible
class _CompileReport(event.Listener):
    """Says on stderr that the CPU kernels compile (at the first compilation of one of this
    package's kernels) and, at exit, how long compiling took."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = {}  # thread id -> nesting of compilations (kernels compile their callees)
        self.seconds, self.kernels, self.started, self.announced = 0.0, 0, {}, False

    def on_start(self, ev):
        if _ours(ev):
            self.begin()

    def on_end(self, ev):
        if _ours(ev):
            self.end()

    def begin(self):
        """A compilation starts in this thread (here, or in a child process)."""
        with self.lock:
            me = threading.get_ident()
            self.depth[me] = self.depth.get(me, 0) + 1
            if self.depth[me] > 1:
                return
            if not self.announced:
                self.announced = True
                print(
                    "tricycle: compiling the CPU kernels (numba; once: later runs load them "
                    "from its cache)",
                    file=sys.stderr,
                    flush=True,
                )
                atexit.register(self.summary)
            self.started[me] = time.perf_counter()

    def end(self):
        with self.lock:
            me = threading.get_ident()
            self.depth[me] -= 1
            if self.depth[me] == 0:
                self.seconds += time.perf_counter() - self.started.pop(me)
                self.kernels += 1

    def summary(self):
        print(
            f"tricycle: compiled {self.kernels} CPU kernel(s) in {self.seconds:.1f} s",
            file=sys.stderr,
            flush=True,
        )


def _ours(ev) -> bool:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith(__package__)


_report = _CompileReport()
event.register("numba:compile", _report)  # when the backend loads, not tricycle
