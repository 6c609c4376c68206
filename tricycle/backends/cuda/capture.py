"""What the library's ops do differently while a CUDA graph is being captured.

A CUDA graph (``tricycle.apps.cuda_graph.CapturedStep``) records the kernels of one training
step once and replays them, with no Python in between. A replay repeats the device work
exactly: same kernels, same addresses, same arguments. Host work inside a step would then be
lost or frozen, so the ops call hooks for it:

- ``every_step(fn)``: host bookkeeping that must happen once per step. It runs now, and
  again before every replay; ``on_replay(fn)`` is its second half, for work the step already
  did (the captured training step redoes the optimiser's and the loss scaler's counts this
  way, so that the eager step never calls in here; a deferred range check marks its pairs
  to be read, ``tricycle.backends.cuda.deferred``).
- ``step_scalars(fn)``: numbers the host computes each step and a kernel reads (the learning
  rate, Adam's bias corrections; ``step_seed``: a dropout mask's seed). The kernel reads them
  from device memory; ``fn`` runs now and again before every replay, and its values are
  copied to that memory (a ``Recording``'s refreshes, each a function and its sink).
- ``upload(host_array)``: a constant host table a kernel needs (the addresses of a
  multi-tensor launch). A capture can only record copies from pinned host memory, which the
  graph then reads at every replay, so it is staged there and kept alive with the graph.
- ``keep(obj)``: an object the graph reads, kept alive as long as the graph.
- ``refuse(op, why)``: a ``CaptureError`` for host work that a replay cannot redo.

Outside a capture the hooks just run ``fn`` and the copies are made as usual. The state is
per thread: another thread's work is never captured. The host side touches no device, and
importing this module imports no cupy (the parallel layer imports it on any machine).

``record(step)`` records a step's kernels into a CUDA graph (a training step's:
``tricycle.apps.cuda_graph.CapturedStep``). ``Replayed(step)`` records any fixed-shape step
(a function of no arguments that reads and writes arrays that stay in place) after one eager
call and replays it: the "graph" runner that generation's decode step asks
``tricycle.dispatch`` for (``tricycle.decode``).
"""

import contextlib
import threading
import warnings
from collections.abc import Callable

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import CTYPES


class Recording:
    """What one capture needs at replay: the host work to redo (in the order the step did
    it), with where its values go, and the objects the graph reads (kept alive)."""

    def __init__(self):
        self.refreshes: list[tuple[Callable, Callable | None]] = []  # (fn, sink or None)
        self.pending: list[Callable[[], None]] = []  # first values' copies, run after capture
        self.keep: list = []

    def upload_pending(self) -> None:
        """Put the values computed during the capture (the captured step's own) in place."""
        for put in self.pending:
            put()
        self.pending = []

    def refresh(self) -> None:
        """Redo the host work of one step, in order, before a replay (not the first)."""
        for fn, sink in self.refreshes:
            values = fn()
            if sink is not None:
                sink(values)


class _State(threading.local):
    recording: Recording | None = None


_state = _State()


def capturing() -> bool:
    """True while this thread records a CUDA graph."""
    return _state.recording is not None


def recording() -> Recording | None:
    """The recording this thread routes its hooks into, if it is capturing."""
    return _state.recording


def start(recording: Recording) -> None:
    """Route this thread's hooks into ``recording`` (``CapturedStep`` brackets a capture)."""
    if _state.recording is not None:
        raise RuntimeError("capture.start: this thread is already capturing a CUDA graph")
    _state.recording = recording


def stop() -> None:
    """End the routing started by ``start``."""
    _state.recording = None


class CaptureError(RuntimeError):
    """A step holds work that a CUDA graph could not replay correctly."""


def refuse(op: str, why: str) -> None:
    """Raise, naming ``op``, when this thread is capturing: for host work a replay cannot redo."""
    if _state.recording is not None:
        raise CaptureError(f"{op} cannot run inside a captured CUDA graph: {why}")


def every_step(fn: Callable[[], object]):
    """Run ``fn()`` now and return its result; while capturing, also before every replay."""
    result = fn()
    on_replay(fn)
    return result


def on_replay(fn: Callable[[], object]) -> None:
    """While capturing, run ``fn()`` before every replay, after the host work registered
    before it (nothing now, and nothing outside a capture)."""
    if _state.recording is not None:
        _state.recording.refreshes.append((fn, None))


def keep(obj) -> None:
    """Keep ``obj`` alive as long as the graph being captured (nothing outside a capture)."""
    if _state.recording is not None:
        _state.recording.keep.append(obj)


def step_scalars(fn: Callable[[], tuple], dtype=np.float32):
    """The numbers ``fn()`` returns, as a 1-D cupy array of ``dtype`` for a kernel to read.

    Outside a capture: a fresh array holding them. While capturing: a buffer that the graph
    reads, filled with this step's values after the capture and with ``fn()``'s values again
    before every replay (``fn`` may advance host state, such as a step counter: it runs
    exactly once per step).
    """
    cp = backend.cupy()
    host = np.asarray(fn(), dtype=dtype)
    current = recording()
    if current is None:
        return cp.asarray(host)
    # outside the graph's pool: the host writes it before a replay, and memory of that pool
    # may serve the graph's own arrays earlier in the step
    memory = cp.get_default_memory_pool().malloc(host.nbytes)
    device = cp.ndarray(host.shape, dtype=dtype, memptr=memory)

    def sink(values):
        _copy_to_device(np.asarray(values, dtype=dtype), device)

    current.refreshes.append((fn, sink))
    current.pending.append(lambda: _copy_to_device(host, device))
    current.keep.append(device)
    return device


def step_seed(draw: Callable[[], int]):
    """A random seed for a kernel, drawn by ``draw()`` once per step: the int itself outside a
    capture; while capturing, a (1,) uint32 cupy array that every replay refills with a fresh
    ``draw()`` (``tricycle.backends.cuda.dropout.seed_array`` takes either)."""
    if recording() is None:
        return draw()
    return step_scalars(lambda: (draw() % 2**32,), dtype=np.uint32)


def upload(host: np.ndarray):
    """``host`` as a cupy array; while capturing, copied through pinned memory that the graph
    keeps (a replay copies it again, so it must not change)."""
    cp = backend.cupy()
    current = recording()
    if current is None:
        return cp.asarray(host)
    pinned_memory = cp.cuda.alloc_pinned_memory(host.nbytes)
    pinned = np.frombuffer(pinned_memory, dtype=host.dtype, count=host.size).reshape(host.shape)
    pinned[...] = host
    device = cp.empty(host.shape, dtype=host.dtype)
    _copy_to_device(pinned, device)  # a copy node of the graph
    current.keep += [pinned_memory, pinned, device]
    return device


def _copy_to_device(host: np.ndarray, device) -> None:
    """host -> device on the current stream, in its order, without waiting for the device
    (from pageable memory the driver stages the bytes before it returns, so ``host`` may
    change right after). CuPy's own copies refuse to run while a stream is captured."""
    cp = backend.cupy()
    stream = cp.cuda.get_current_stream().ptr
    kind = cp.cuda.runtime.memcpyHostToDevice
    cp.cuda.runtime.memcpyAsync(device.data.ptr, host.ctypes.data, host.nbytes, kind, stream)


# torch.cuda.graph's capture_error_mode -> cudaStreamCaptureMode (the runtime's numbers)
CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}


class Capture:
    """One capture under way, begun at construction and ended by ``end()``: between the two,
    this thread's kernels go into a CUDA graph instead of running, on ``stream`` (a fresh
    non-blocking one by default; it first waits for the work queued on the current stream:
    the inputs are in place), their allocations come from ``pool`` (a fresh
    ``cupy.cuda.MemoryPool`` by default: it must live as long as the graph), and the ops'
    hooks (``every_step``, ...) go into ``recording``. ``mode``: the runtime's capture mode
    (relaxed by default: the memory pool may call cudaMalloc while the graph is recorded).
    ``record`` brackets a function call; ``tricycle.apps.cuda_graphs`` brackets a ``with``
    block (torch.cuda.graph's)."""

    def __init__(self, pool=None, stream=None, mode: int = CAPTURE_MODES["relaxed"]):
        cp = backend.cupy()
        self.origin = cp.cuda.get_current_stream()
        self.stream = cp.cuda.Stream(non_blocking=True) if stream is None else stream
        self.stream.wait_event(self.origin.record())  # its inputs are in place
        self.pool = cp.cuda.MemoryPool() if pool is None else pool
        self.recording = Recording()
        self._contexts = contextlib.ExitStack()
        start(self.recording)
        try:
            self._contexts.enter_context(self.stream)
            self._contexts.enter_context(cp.cuda.using_allocator(self.pool.malloc))
            self.stream.begin_capture(mode)
        except BaseException:
            self._contexts.close()
            stop()
            raise

    def end(self, failure: BaseException | None = None):
        """End the capture and return its graph, to be launched on the stream that was current
        at the start, after the work queued there so far; the values the step's hooks
        computed are put in place for its first launch. ``failure``: an error the captured
        work raised, raised here once the capture has ended (as is an error of the capture
        itself; then nothing ran)."""
        try:
            try:
                graph = self.stream.end_capture()
            except Exception as error:
                failure = failure or error
            finally:
                self._contexts.close()
        finally:
            stop()
        if failure is not None:
            raise failure
        self.origin.wait_event(self.stream.record())
        self.recording.upload_pending()  # the captured step's own values, for its first launch
        return graph


def record(step: Callable[[], object]) -> tuple:
    """Record ``step()``'s kernels into a CUDA graph without running them: (graph, what
    ``step`` returned, the graph's memory pool, its ``Recording``), the graph to be launched
    on the current stream, after the work queued there so far. Its allocations come from
    the pool, which must live as long as the graph; its hooks (``every_step``, ...) go into
    the Recording, whose ``refresh`` must run before every replay but the first. An error of
    the step or of the capture is raised once the capture has ended (then nothing ran)."""
    capture = Capture()
    try:
        outputs = step()
    except BaseException as error:  # end the capture, then raise
        capture.end(error)
    graph = capture.end()
    return graph, outputs, capture.pool, capture.recording


class Replayed:
    """``step()`` as a CUDA graph: the first ``warmup`` calls run it eagerly (its kernels
    compile, its cuBLAS handle and tables are made), the next records it once (``record``),
    and every call from then on launches the graph on the current stream, one call, and
    returns what the recorded ``step`` returned (the same arrays at every replay, rewritten
    by it).

    ``step`` must have fixed shapes, read and write only arrays that stay where they are
    between calls (the graph keeps their addresses), and never make the host wait (no
    read-back, no ``.item()``, no boolean indexing). Its temporaries come from a memory pool
    of the graph's own, kept while this object lives. If the recording fails, a
    RuntimeWarning says why and ``step`` runs eagerly from then on (the recording ran no
    kernel, so nothing was advanced twice).
    """

    def __init__(self, step: Callable[[], object], warmup: int = 1):
        self.step, self.warmup = step, warmup
        self.eager_calls = 0
        self.graph = self.outputs = self.pool = self.recording = None
        self.failure: str | None = None

    def __call__(self):
        if self.graph is None:
            if self.failure is not None or self.eager_calls < self.warmup:
                self.eager_calls += 1
                return self.step()
            try:
                self.graph, self.outputs, self.pool, self.recording = record(self.step)
            except Exception as error:
                self.failure = f"{type(error).__name__}: {error}"
                warnings.warn(
                    f"Replayed: the step cannot be recorded as a CUDA graph ({self.failure}); "
                    "it runs eagerly instead",
                    RuntimeWarning,
                    stacklevel=2,
                )
                return self()
        else:
            self.recording.refresh()
        self.graph.launch(backend.cupy().cuda.get_current_stream())
        return self.outputs


dispatch.add("graph", "cuda", Replayed, dtypes=tuple(CTYPES))
