"""What the library's ops do differently while a CUDA graph is being captured: the host side.

A CUDA graph (``tricycle.apps.cuda_graph.CapturedStep``) records the kernels of one training
step once and replays them, with no Python in between. A replay repeats the device work
exactly: same kernels, same addresses, same arguments. Host work inside a step would then be
lost or frozen, so the ops call hooks for it:

- ``every_step(fn)``: host bookkeeping that must happen once per step. It runs now, and
  again before every replay; ``on_replay(fn)`` is its second half, for work the step already
  did (the captured training step redoes the optimiser's and the loss scaler's counts this
  way, so that the eager step never calls in here).
- ``refresh(fn, sink)``: numbers the host computes each step and a kernel reads from device
  memory: ``fn`` runs now and before every replay, and ``sink`` puts its values where the
  kernel reads them (the CUDA backend's ``step_scalars`` and ``step_seed`` build on it).
- ``keep(obj)``: an object the graph reads, kept alive as long as the graph.

Outside a capture the hooks just run ``fn``. The state is per thread: another thread's work
is never captured. Nothing here touches a device; ``tricycle.backends.cuda.capture`` holds
the device side.
"""

import threading
from collections.abc import Callable


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
