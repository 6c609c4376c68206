"""What the library's ops do differently while a CUDA graph is being captured.

A CUDA graph (``tricycle.apps.cuda_graph.CapturedStep``) records the kernels of one training step
once and replays them, with no Python in between. A replay repeats the device work exactly:
same kernels, same addresses, same arguments. Three kinds of host work inside a step
would then be lost or frozen, and each has a hook here that the ops call:

- ``every_step(fn)``: host bookkeeping that must happen once per step (the optimiser's step
  counter, marking a range check as pending). It runs now, and again before every replay.
- ``step_scalars(fn)``: numbers the host computes each step and a kernel reads (the learning
  rate, Adam's bias corrections; ``step_seed``: a dropout mask's seed). The kernel reads them
  from device memory; ``fn`` runs now and again before every replay, and its values are
  copied to that memory.
- ``upload(host_array)``: a constant host table a kernel needs (the addresses of a
  multi-tensor launch). A capture can only record copies from pinned host memory, which the
  graph then reads at every replay, so it is staged there and kept alive with the graph.

Outside a capture the hooks run ``fn`` and copy as usual. The state is per thread: another
thread's work is never captured.
"""

import threading
from collections.abc import Callable

import numpy as np

from tricycle import backend


class Recording:
    """What one capture needs at replay: the host work to redo (in the order the step did
    it), the buffers its values go to, and the objects the graph reads (kept alive)."""

    def __init__(self):
        self.refreshes: list[tuple[Callable, object]] = []  # (fn, device buffer or None)
        self.pending: list[tuple[np.ndarray, object]] = []  # first values, copied after capture
        self.keep: list = []

    def upload_pending(self) -> None:
        """Copy the values computed during the capture (the captured step's own) into place."""
        for host, device in self.pending:
            _copy_to_device(host, device)
        self.pending = []

    def refresh(self) -> None:
        """Redo the host work of one step, in order, before a replay (not the first)."""
        for fn, device in self.refreshes:
            values = fn()
            if device is not None:
                _copy_to_device(np.asarray(values, dtype=device.dtype), device)


class _State(threading.local):
    recording: Recording | None = None


_state = _State()


def capturing() -> bool:
    """True while this thread records a CUDA graph."""
    return _state.recording is not None


def start(recording: Recording) -> None:
    """Route this thread's hooks into ``recording`` (``CapturedStep`` brackets a capture)."""
    if _state.recording is not None:
        raise RuntimeError("capture.start: this thread is already capturing a CUDA graph")
    _state.recording = recording


def stop() -> None:
    """End the routing started by ``start``."""
    _state.recording = None


def refuse(op: str, why: str) -> None:
    """Raise, naming ``op``, when this thread is capturing: for host work a replay cannot redo."""
    if _state.recording is not None:
        raise CaptureError(f"{op} cannot run inside a captured CUDA graph: {why}")


class CaptureError(RuntimeError):
    """A step holds work that a CUDA graph could not replay correctly."""


def every_step(fn: Callable[[], object]):
    """Run ``fn()`` now and return its result; while capturing, also before every replay."""
    result = fn()
    if _state.recording is not None:
        _state.recording.refreshes.append((fn, None))
    return result


def step_scalars(fn: Callable[[], tuple], dtype=np.float32):
    """The numbers ``fn()`` returns, as a 1-D cupy array of ``dtype`` for a kernel to read.

    Outside a capture: a fresh array holding them. While capturing: a buffer that the graph
    reads, filled with this step's values after the capture and with ``fn()``'s values again
    before every replay (``fn`` may advance host state, such as a step counter: it runs
    exactly once per step).
    """
    cp = backend.cupy()
    host = np.asarray(fn(), dtype=dtype)
    recording = _state.recording
    if recording is None:
        return cp.asarray(host)
    # outside the graph's pool: the host writes it before a replay, and memory of that pool
    # may serve the graph's own arrays earlier in the step
    memory = cp.get_default_memory_pool().malloc(host.nbytes)
    device = cp.ndarray(host.shape, dtype=dtype, memptr=memory)
    recording.refreshes.append((fn, device))
    recording.pending.append((host, device))
    recording.keep.append(device)
    return device


def step_seed(draw: Callable[[], int]):
    """A random seed for a kernel, drawn by ``draw()`` once per step: the int itself outside a
    capture; while capturing, a (1,) uint32 cupy array that every replay refills with a fresh
    ``draw()`` (``tricycle.backends.cuda.dropout.seed_array`` takes either)."""
    if _state.recording is None:
        return draw()
    return step_scalars(lambda: (draw() % 2**32,), dtype=np.uint32)


def upload(host: np.ndarray):
    """``host`` as a cupy array; while capturing, copied through pinned memory that the graph
    keeps (a replay copies it again, so it must not change)."""
    cp = backend.cupy()
    recording = _state.recording
    if recording is None:
        return cp.asarray(host)
    pinned_memory = cp.cuda.alloc_pinned_memory(host.nbytes)
    pinned = np.frombuffer(pinned_memory, dtype=host.dtype, count=host.size).reshape(host.shape)
    pinned[...] = host
    device = cp.empty(host.shape, dtype=host.dtype)
    _copy_to_device(pinned, device)  # a copy node of the graph
    recording.keep += [pinned_memory, pinned, device]
    return device


def _copy_to_device(host: np.ndarray, device) -> None:
    """host -> device on the current stream, in its order, without waiting for the device
    (from pageable memory the driver stages the bytes before it returns, so ``host`` may
    change right after). CuPy's own copies refuse to run while a stream is captured."""
    cp = backend.cupy()
    stream = cp.cuda.get_current_stream().ptr
    kind = cp.cuda.runtime.memcpyHostToDevice
    cp.cuda.runtime.memcpyAsync(device.data.ptr, host.ctypes.data, host.nbytes, kind, stream)


def keep(obj) -> None:
    """Keep ``obj`` alive as long as the graph being captured (nothing outside a capture)."""
    if _state.recording is not None:
        _state.recording.keep.append(obj)
