"""Range checks of ids that never make the host wait for a GPU: the CUDA backend's
"check_range" setting (its reference, made at the op, is ``tricycle.ranges.check_range``).

Checking ids where the op runs means reading their extremes back from the GPU: a host
synchronisation, after which Python can no longer enqueue kernels ahead of the GPU. Two such
checks per training step cost a small model most of the host's lead.

So on a GPU ``check_range`` only records: one small kernel (``extremes.py``) folds the ids'
minimum and maximum into a (min, max) pair of int64 kept in device memory for that check
site (op, what is checked, bound), and returns at once. ``raise_pending_errors`` reads the
pairs recorded since it last ran in one copy, empties them, and raises the IndexError the
eager check would have raised, naming the op and the range of ids seen. It runs where the
host waits anyway: when a training step's loss is read back (``StepOutput.settle``) and when
a Tensor is read (``item``, ``float``, ``int``, ``numpy``). The first deferred check adds it
to ``tricycle.graph.read_back_hooks``, which those read-backs run, so where no check was ever
deferred (a CPU run) a read-back runs nothing of this module. So on a GPU the error comes
after the op, possibly a few steps later; the steps in between computed with bad ids and
their results must be thrown away, but they read and write only inside their arrays (cupy
wraps an out-of-range row index, the cross-entropy kernel gives such a label a NaN loss, the
embedding's backward kernel skips it). A captured step's replays fold ids in too, and mark
the pairs to be read (``capture.on_replay``).

``defer_checks(False)`` makes the checks of the current thread synchronous on a GPU too
(the error at the op, for debugging); ``defer_checks(True)`` defers them on numpy arrays too,
so that the deferred path can be tested without a GPU by calling ``check_range`` here (the
math on the CPU asks for the reference, and never comes here). The recorded pairs are shared
by every thread: an error recorded in one thread is raised by the next read-back in any thread.
"""

import threading
from contextlib import contextmanager, nullcontext

import numpy as np

from tricycle import backend, dispatch, graph, ranges
from tricycle.backends.cuda import capture
from tricycle.backends.cuda.settings import device_scope


class _Ledger:
    """The (min, max) pairs of one device, one row per check site.

    The rows live in segments of 8, 8, 16, 32, ... rows: a new site that does not fit opens
    a new segment, and no row ever moves, since a captured CUDA graph (``tricycle.apps.cuda_graph``)
    keeps folding into the row it was captured with."""

    def __init__(self, xp, device):  # device: a context manager that makes it current
        self.xp, self.device = xp, device
        self.sites: list[ranges.Site] = []
        self.rows: dict[ranges.Site, tuple[int, int]] = {}  # site -> (segment, row in it)
        self.segments = [self._empty(8)]  # (capacity, 2) int64 each
        self.dirty = False  # something was folded in since the last read

    def _empty(self, n: int):
        with self.device:
            return self.xp.asarray(np.tile(np.asarray(ranges.EMPTY, dtype=np.int64), (n, 1)))

    def row(self, site: ranges.Site) -> tuple[object, int]:
        """The pairs array holding ``site``'s row, and the row."""
        where = self.rows.get(site)
        if where is None:
            segment, offset = len(self.segments) - 1, len(self.sites) - self._before(-1)
            if offset == len(self.segments[-1]):
                segment, offset = segment + 1, 0
                self.segments.append(self._empty(len(self.sites)))
            where = self.rows[site] = (segment, offset)
            self.sites.append(site)
        return self.segments[where[0]], where[1]

    def _before(self, segment: int) -> int:
        """How many rows the segments before ``segment`` hold."""
        return sum(len(s) for s in self.segments[:segment])

    def mark_dirty(self) -> None:
        """Something was folded in: the next ``raise_pending_errors`` reads the pairs."""
        self.dirty = True

    def read(self) -> list[str]:
        """The messages of the sites whose ids left their range since the last read; every
        pair starts afresh."""
        self.dirty = False
        with self.device:
            pairs = (
                self.segments[0] if len(self.segments) == 1 else self.xp.concatenate(self.segments)
            )
            seen = backend.to_host_array(pairs[: len(self.sites)]).tolist()  # one synchronisation
            for segment in self.segments:  # in place: a captured graph holds the segments
                segment[:, 0], segment[:, 1] = ranges.EMPTY
        return [
            site.message(low, high)
            for site, (low, high) in zip(self.sites, seen)
            if site.outside(low, high)
        ]


_lock = threading.Lock()
_ledgers: dict = {}  # device name ('cpu', 'cuda:N') -> _Ledger


class _Mode(threading.local):
    defer: bool | None = None  # None: defer on a GPU, check at once on numpy arrays


_mode = _Mode()


def check_range(
    ids, size: int, *, op: str, what: str = "ids", context: str = "", ignore: int | None = None
) -> None:
    """``tricycle.ranges.check_range``, deferred: on a GPU it records the ids' extremes on
    the device and returns at once; ``raise_pending_errors`` raises the same IndexError at
    the next read-back (see the module docstring). Made at once where ``defer_checks`` says
    so, and on numpy arrays unless it says otherwise."""
    on_gpu = backend.is_cupy_array(ids)
    if not (on_gpu if _mode.defer is None else _mode.defer):
        ranges.check_range(ids, size, op=op, what=what, context=context, ignore=ignore)
        return
    if not ids.size:
        return
    site = ranges.Site.of(size, op, what, context, ignore)
    xp = backend.array_module(ids)
    device = backend.device_of(ids)
    with _lock:
        ledger = _ledgers.get(device)
        if ledger is None:
            if raise_pending_errors not in graph.read_back_hooks:  # read-backs raise from now on
                graph.read_back_hooks.append(raise_pending_errors)
            ledger = _ledgers[device] = _Ledger(xp, device_scope(ids) if on_gpu else nullcontext())
        pairs, row = ledger.row(site)
        ranges.fold_extremes(xp, ids, pairs, row, site.ignore)
    ledger.mark_dirty()
    if on_gpu:  # a captured step's replays fold in ids too (a capture is a GPU's alone)
        capture.on_replay(ledger.mark_dirty)


def checks_pending() -> bool:
    """True when a deferred check recorded ids that no ``raise_pending_errors`` read yet."""
    return any(ledger.dirty for ledger in list(_ledgers.values()))


def raise_pending_errors() -> None:
    """Raise the IndexError of every deferred check whose ids left their range.

    Reads the recorded (min, max) pairs back (one synchronisation per device that recorded
    anything since the last call; nothing at all when none did). Call it where the host
    waits for the device anyway, e.g. when a training step's loss is read.
    """
    if not checks_pending():
        return
    with _lock:
        errors = [e for ledger in _ledgers.values() if ledger.dirty for e in ledger.read()]
    if errors:
        raise IndexError(
            "\n".join(errors) + "\n(checked on the device without waiting for it, and raised "
            "at the next read-back: results computed since then used these ids)"
        )


@contextmanager
def defer_checks(defer: bool = True):
    """Within the block, this thread's checks made here are deferred (True) or made at once
    (False), on any arrays; outside it, deferred exactly on a GPU."""
    previous = _mode.defer
    _mode.defer = bool(defer)
    try:
        yield
    finally:
        _mode.defer = previous


dispatch.add("check_range", "cuda", check_range, dtypes=())

__all__ = ["check_range", "checks_pending", "defer_checks", "raise_pending_errors"]
