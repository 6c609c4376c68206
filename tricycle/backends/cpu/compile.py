"""How the CPU kernels are compiled and run: numba with its disk cache, threads made safe.

``jit`` compiles a serial loop. ``parallel_jit`` compiles a kernel whose loop runs over a range
of independent tasks (rows, heads, blocks of a product), given as its last two arguments: a
large input on more than one thread is cut into one range per thread, each run by the same
compiled function on a thread of ``_team``, and anything else runs whole on the calling
thread. So the numbers are the same whatever the thread count, and any number of Python
threads may call kernels at once (one parallel launch is in flight at a time; another waits)
and get exactly the numbers they get one after the other. ``parfor_jit`` is for a kernel whose
parallel loop sits inside a loop of its own (the LSTM's steps): numba's parallel passes and
its ``tbb`` pool, a parallel and a serial variant, the parallel one the slower to compile.

One team of threads does all the CPU's parallel work, the matrix products included
(``gemm.py``), and BLAS runs single-threaded inside it. Two pools on the same cores slow each
other down: numpy's OpenBLAS threads spin for a while after every product (their timeout is
fixed when the library loads), so a parallel kernel between two products finds its cores
taken. ``parfor_jit``'s pool is numba's ``tbb`` layer, whose threads start at once and
sleep when idle; the ``tbb`` package installs it (on Linux its library lands in the
environment's ``lib/``, where the loader does not look, so it is loaded from there by path).
Where it cannot load, or the user chose a layer (``NUMBA_THREADING_LAYER``), the LSTM runs its
steps one product at a time (``recurrent.py``). ``set_threads`` sets how many threads a
parallel kernel uses (default: ``TRICYCLE_THREADS``, else numba's, one per core).

Compilation happens at a kernel's first call for its argument types and is cached on disk
(``cache=True``), so a second process reuses it. The first compilation in a process says so on
stderr, and the time spent compiling is said once at exit; cache hits print nothing. A kernel
is compiled in a forked child process, which saves it to the cache, and this process loads it
from there as every later run does (``_run_from_cache``): a process that compiled code of its
own can run that code in place of the cached kernel it loads, and round differently (layer
norm's backward did, in the last bits of many rows), so a program's first run, which compiles,
would part from its later runs, which load. This way they give the same numbers (a kernel
first called outside the main thread compiles in the process, as before: see
``_compile_in_a_child``). ``precompile`` compiles the kernels a program will call ahead of
their first call, several at once, in the background.
"""

import atexit
import contextlib
import ctypes
import functools
import hashlib
import os
import sys
import threading
import time
import types
import warnings

import numba
import numpy as np
from numba.core import caching, event, sigutils
from numba.core.compiler_lock import global_compiler_lock
from threadpoolctl import ThreadpoolController

from tricycle.backends.cpu import blas
from tricycle.backends.cpu.memory import fork, keep_freed_memory
from tricycle.backends.cpu.team import _ranges, _team  # noqa: F401 - tests reach them here

# inputs with fewer elements run on the calling thread: handing ranges to the team's threads
# and waiting for them costs tens of microseconds
PARALLEL_MIN_SIZE = 1 << 17

# numpy's error model: a float division by zero gives inf instead of raising, which lets loops
# with divisions vectorise; reassociation lets sums vectorise
_OPTIONS = {
    "cache": True,
    "nogil": True,
    "error_model": "numpy",
    "fastmath": {"reassoc", "contract", "nsz", "arcp"},
}
_choose_lock = threading.Lock()
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
    and which runs the code its cache holds, even just compiled (``_run_from_cache``). The
    arrays named in the option ``strided`` are typed as strided ones (``_signature``)."""
    options = {**_OPTIONS, **options}
    strided = options.pop("strided", ())
    dispatcher = numba.njit(**options)(function)
    dispatcher._strided = frozenset(function.__code__.co_varnames.index(n) for n in strided)
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
    if not _forks():
        return
    with global_compiler_lock:
        _report.begin()
        try:
            pid = fork()
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
    names) and round differently (layer norm's backward does, in many rows' last bits); a
    process that only loads gives the numbers of every other, so a program's first run and
    its later runs give the same numbers. Where the cache cannot be written, the dispatcher
    compiles for itself, as numba does. All under numba's compiler lock: a load refreshes
    registries that a thread typing another kernel meanwhile would see half-made."""
    given, _ = sigutils.normalize_signature(sig)
    sig = _signature(dispatcher, given)
    with global_compiler_lock:
        if sig not in dispatcher.overloads:
            for _ in range(3):  # again if another process's save replaced the cache's index
                if dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None:
                    break
                if _ahead.wait():  # compiling ahead: it may have saved this one
                    continue
                with _compiling(dispatcher):  # another process compiled it meanwhile
                    if dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None:
                        break
                    _compile_in_a_child(dispatcher, sig)
        if sig != tuple(given):  # later calls with these types take it without asking again
            dispatcher.typingctx.install_possible_conversions(given, sig)
        return type(dispatcher).compile(dispatcher, sig)  # from the cache when it can be


def _signature(dispatcher, argument_types):
    """The argument types ``dispatcher`` is compiled for, called with ``argument_types``: the
    arrays it names ``strided`` typed as strided views (numba's layout "A", to which a
    contiguous array converts without a copy), so that a contiguous array and a view of a
    larger one run one compiled function (the same numbers, and one compile per dtype)."""
    return tuple(
        t.copy(layout="A") if i in dispatcher._strided and isinstance(t, numba.types.Array) else t
        for i, t in enumerate(argument_types)
    )


@contextlib.contextmanager
def _compiling(dispatcher):
    """Hold the kernel's lock file beside its cache while it is compiled and saved: another
    process that needs the same kernel meanwhile (pytest's workers, two runs started at once)
    waits for it and loads what it saved, instead of compiling it a second time. Without
    ``fcntl`` (Windows) or a writable cache directory, nothing is held."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only

        cache = dispatcher._cache
        lock = open(os.path.join(cache.cache_path, cache._cache_file._index_name + ".lock"), "a")
    except (ImportError, OSError, AttributeError):
        yield
        return
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


# ---------------------------------------------------------------------- compiling ahead
def precompile(step, *args) -> None:
    """Compile, in the background and several at once, the kernels that ``step(*args)`` calls
    and the cache lacks: a forked child runs ``step`` with no kernel running (their outputs
    stay as allocated: the numbers are garbage, the argument types right), notes each call's
    types, and compiles those the cache lacks in ``thread_count()`` children of its own, which
    save them. Returns at once: this process goes on (preparing its data, say) and loads them
    as it calls them; a kernel it calls that the cache lacks meanwhile waits for the children.
    ``step`` should call the kernels a run will, on small inputs of the same dtypes and
    layouts (every axis longer than 1). Does nothing where kernels compile in the process
    (``_compile_in_a_child``), or while an earlier call's children are still compiling."""
    if not _forks() or _ahead.pid is not None:
        return
    with global_compiler_lock:
        read, write = os.pipe()
        started = time.perf_counter()
        pid = fork()
        if pid == 0:  # the recording child
            code = 1
            try:
                os.close(read)
                kernels = _record_and_compile(step, args)
                os.write(write, b"%d %.3f" % (kernels, time.perf_counter() - started))
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        _ahead.pid, _ahead.pipe = pid, read
        _report.summary_at_exit()


def _record_and_compile(step, args) -> int:
    """In the recording child: run ``step`` noting the kernels' signatures; compile those the
    cache lacks; return how many."""
    _recorded[:] = [[]]
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet), np.errstate(all="ignore"), \
            warnings.catch_warnings():  # fmt: skip
        warnings.simplefilter("ignore")
        try:
            step(*args)  # what it prints is not the program's
        except Exception:  # noqa: BLE001, S110 - the numbers may fail a check: enough seen
            pass
    calls = dict.fromkeys(  # each kernel and signature once
        (d, _signature(d, [d.typeof_pyval(a) for a in arguments])) for d, arguments in _recorded[0]
    )
    wanted = [(d, sig) for d, sig in calls if sig not in d.overloads and not _indexed(d, sig)]
    _recorded[:] = []
    if wanted:  # said by the process that waits for them (one that fails first says nothing),
        _report.announced = True  # not by the children that compile them
        blas.library()  # a kernel that multiplies needs BLAS's symbols bound to compile
        # the longest first (the most bytecode: a guess at its compile time), to end together
        work = sorted(wanted, key=lambda item: -len(item[0].py_func.__code__.co_code))
        _compile_all(work, thread_count())
    return len(wanted)


def _compile_all(work, processes: int) -> None:
    """Compile every (dispatcher, signature) of ``work`` in ``processes`` forked children at
    once, each taking the next from a pipe of indices until it is empty."""
    read, write = os.pipe()
    os.write(write, b"".join(i.to_bytes(4, "little") for i in range(len(work))))
    os.close(write)  # (a pipe holds 64 KB: 16,384 kernels)
    children = []
    for _ in range(min(processes, len(work))):
        pid = fork()
        if pid == 0:
            code = 1
            try:
                while index := os.read(read, 4):
                    dispatcher, sig = work[int.from_bytes(index, "little")]
                    type(dispatcher).compile(dispatcher, sig)  # saved to the cache
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    os.close(read)
    for pid in children:
        os.waitpid(pid, 0)


class _Ahead:
    """The background compile of ``precompile``: its child, and the pipe where it writes how
    many kernels it compiled, in how many seconds."""

    pid = pipe = None

    def wait(self, block: bool = True) -> bool:
        """Wait for the background compile (or, unless ``block``, look whether it ended) and
        count it in the report: whether it ended now."""
        if self.pid is None:
            return False
        if block:  # the program waits for the compile now: it says so
            _report.announce()
        done, _ = os.waitpid(self.pid, 0 if block else os.WNOHANG)
        if not done:
            return False
        kernels, seconds = (os.read(self.pipe, 64) or b"0 0").split()
        os.close(self.pipe)
        self.pid = self.pipe = None
        if int(kernels):
            _report.add(int(kernels), float(seconds))
        return True


def _indexed(dispatcher, sig) -> bool:
    """Whether the cache's index lists ``sig`` (as ``load_overload`` finds it), unloaded."""
    key = dispatcher._cache._index_key(sig, dispatcher.targetctx.codegen())
    return key in dispatcher._cache._cache_file._load_index()


def _zero(args) -> None:
    """A kernel's arrays zero instead of computed, in precompile's recording child: the step
    goes on with finite numbers and ids in range."""
    for a in args:
        if isinstance(a, np.ndarray) and a.flags.writeable:
            a[...] = 0


def _forks() -> bool:
    """Whether a kernel is compiled in a forked child here (``_compile_in_a_child``)."""
    return (
        hasattr(os, "fork")
        and threading.current_thread() is threading.main_thread()
        and "mpi4py" not in sys.modules
    )


_ahead = _Ahead()
_recorded = []  # in precompile's recording child: [the (dispatcher, arguments) of each call]


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
    """A kernel over independent tasks, ``for task in range(first, last)``, with ``first`` and
    ``last`` its last two parameters: compiled once. Called with the number of tasks in their
    place, it runs them all on this thread, or, for an input of ``PARALLEL_MIN_SIZE`` elements
    or more (the first argument's size) with more than one thread set, cut into one contiguous
    range of tasks per thread (``_team``), each range the same compiled code. A task's numbers
    depend on neither the thread count nor the cache, and a first run compiles one function
    per kernel, without numba's parallel passes (which compile slower).
    ``run`` lets the caller decide instead of the size; ``grain`` keeps the cuts at multiples
    of that many tasks (a loop over elements: vector lanes line up as in one range). A kernel
    that multiplies (``blas=True``) runs with numpy's BLAS on one thread (``blas.py``);
    ``strided=(names)``: those arrays typed as strided whatever their layout (``_signature``).
    """

    def __init__(self, function, options):
        self.options = dict(options)
        self.multiplies = options.pop("blas", False)
        self.grain = options.pop("grain", 1)
        self.kernel = _compiled(function, options)
        functools.update_wrapper(self, function)

    def specialised(self, **names) -> "ParallelKernel":
        """This kernel with the globals ``names`` bound to other functions: one source, one
        kernel compiled and cached for each binding, so that a run compiles only the one it
        calls (GeLU's two forms, instead of a kernel holding both)."""
        suffix = "_".join(function.__name__ for function in names.values())
        return ParallelKernel(_copy(self.__wrapped__, suffix, names), dict(self.options))

    def __call__(self, *args):
        return self.run(getattr(args[0], "size", 0) >= PARALLEL_MIN_SIZE, *args)

    def run(self, parallel: bool, *args):
        """``args`` then the task count: on the team's threads if ``parallel``, else here."""
        *args, tasks = args
        if _recorded:  # precompile's recording child: note the types, run nothing
            _recorded[0].append((self.kernel, (*args, 0, tasks)))
            return _zero(args)
        ranges = _ranges(tasks, thread_count() if parallel else 1, self.grain)
        if not self.multiplies:
            return _team.run(self.kernel, args, ranges)
        blas.one_thread_enter()
        try:
            return _team.run(self.kernel, args, ranges)
        finally:
            blas.one_thread_leave()


class ParforKernel:
    """A kernel whose ``prange`` loop sits inside a loop of its own (the LSTM's steps: a launch
    a step), compiled twice from one function: ``parallel`` (numba's parallel passes, its tbb
    pool: microseconds a launch) and ``serial``; ``run`` says which, holding the team's lock
    for the parallel one. The two may round differently: the caller chooses by sizes and the
    thread count only, never by what the cache holds."""

    def __init__(self, function, options):
        self.multiplies = options.pop("blas", False)
        functools.update_wrapper(self, function)
        self.parallel = _compiled(function, {**options, "parallel": True})
        # a copy under another name: numba's cache keys on the function, not on its flags
        self.serial = _compiled(_copy(function, "serial"), options)

    def run(self, parallel: bool, *args):
        """The parallel variant if ``parallel`` and more than one thread is set, else the
        serial one."""
        if _recorded:  # precompile's recording child: note the types, run nothing
            variant = self.parallel if parallel and thread_count() > 1 else self.serial
            _recorded[0].append((variant, args))
            return _zero(args)
        if self.multiplies:
            blas.one_thread_enter()
        try:
            threads = thread_count()
            if parallel and threads > 1:
                with _team.lock:  # one parallel launch at a time
                    if getattr(_applied, "threads", None) != threads:
                        numba.set_num_threads(threads)
                        _applied.threads = threads
                    return self.parallel(*args)
            return self.serial(*args)
        finally:
            if self.multiplies:
                blas.one_thread_leave()


def _copy(function, suffix: str, names=None):
    """``function`` named ``<name>_<suffix>`` (numba caches by name), its globals ``names``
    replaced."""
    copy = types.FunctionType(
        function.__code__, {**function.__globals__, **(names or {})},
        f"{function.__name__}_{suffix}", function.__defaults__, function.__closure__,
    )  # fmt: skip
    copy.__qualname__ = f"{function.__qualname__}_{suffix}"
    copy.__module__ = function.__module__
    return copy


def parallel_jit(function=None, **options):
    """A ``ParallelKernel`` of ``function``: ``@parallel_jit`` or ``@parallel_jit(...)``."""
    if function is None:
        return functools.partial(parallel_jit, **options)
    return ParallelKernel(function, options)


def parfor_jit(function=None, **options):
    """A ``ParforKernel`` of ``function``: ``@parfor_jit`` or ``@parfor_jit(...)``."""
    if function is None:
        return functools.partial(parfor_jit, **options)
    return ParforKernel(function, options)


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


def uses_one_pool() -> bool:
    """Whether ``parfor_jit``'s kernels have the ``tbb`` pool: see the docstring."""
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
    package's kernels) and, at exit, how long compiling took: the time this process waited for
    children compiling, and the wall time of ``precompile``'s children."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = {}  # thread id -> nesting of compilations (kernels compile their callees)
        self.seconds, self.kernels, self.started = 0.0, 0, {}
        self.announced = self.registered = False

    def on_start(self, ev):
        if _ours(ev):
            self.begin()

    def on_end(self, ev):
        if _ours(ev):
            self.end()

    def announce(self):
        """The first line, once."""
        if not self.announced:
            self.announced = True
            print("tricycle: compiling the CPU kernels (numba; once: later runs load them from "
                  "its cache)", file=sys.stderr, flush=True)  # fmt: skip
        self.summary_at_exit()

    def summary_at_exit(self):
        if not self.registered:
            self.registered = True
            atexit.register(self.summary)

    def begin(self):
        """A compilation starts in this thread (here, or in a child process)."""
        with self.lock:
            me = threading.get_ident()
            self.depth[me] = self.depth.get(me, 0) + 1
            if self.depth[me] > 1:
                return
            self.announce()
            self.started[me] = time.perf_counter()

    def end(self):
        with self.lock:
            me = threading.get_ident()
            self.depth[me] -= 1
            if self.depth[me] == 0:
                self.add(1, time.perf_counter() - self.started.pop(me))

    def add(self, kernels: int, seconds: float):
        """``kernels`` compiled in ``seconds`` (of wall time) by children."""
        self.kernels += kernels
        self.seconds += seconds

    def summary(self):
        _ahead.wait(block=False)
        if self.kernels and self.announced:  # a compile this process waited for
            print(f"tricycle: compiled {self.kernels} CPU kernel(s) in {self.seconds:.1f} s",
                  file=sys.stderr, flush=True)  # fmt: skip


def _ours(ev) -> bool:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith(__package__)


_report = _CompileReport()
event.register("numba:compile", _report)  # when the backend loads, not tricycle
