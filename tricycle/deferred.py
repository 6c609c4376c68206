"""Range checks of ids that never make the host wait for a GPU.

An id outside its table (an embedding's vocabulary, a cross-entropy's classes) must be an
error naming the op, never a silent wrap-around. Checking it where the op runs means reading
the ids' extremes back from the GPU: a host synchronisation, after which Python can no
longer enqueue kernels ahead of the GPU. Two such checks per training step cost a small
model most of the host's lead.

So on a GPU ``check_range`` only records: one small kernel folds the ids' minimum and
maximum into a (min, max) pair of int64 kept in device memory for that check site (op, what
is checked, bound), and returns at once. ``raise_pending_errors`` reads the pairs recorded
since it last ran in one copy, empties them, and raises the IndexError the eager check would
have raised, naming the op and the range of ids seen. It runs where the host waits anyway:
when a training step's loss is read back (``training.StepOutput.settle``) and when a Tensor
is read (``item``, ``float``, ``int``, ``numpy``). The first deferred check adds it to
``graph.read_back_hooks``, which those read-backs run, so where no check was ever deferred
(a CPU run) a read-back runs nothing of this module. So on a GPU the error comes after the op,
possibly a few steps later; the steps in between computed with bad ids and their results
must be thrown away, but they read and write only inside their arrays (cupy wraps an
out-of-range row index, the cross-entropy kernel gives such a label a NaN loss, the
embedding's backward kernel skips it). On the CPU a check costs nothing extra and raises at
the op.

``defer_checks(False)`` makes the checks of the current thread synchronous on a GPU too
(the error at the op, for debugging); ``defer_checks(True)`` defers them on the CPU, so
that the deferred path can be tested without a GPU. The recorded pairs are shared by every
thread: an error recorded in one thread is raised by the next read-back in any thread.
"""

import threading
from contextlib import contextmanager, nullcontext
from typing import NamedTuple

import numpy as np

from tricycle import backend, capture, dispatch, graph

# a pair that has seen nothing: every id lowers its min and raises its max
_EMPTY = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)


class _Site(NamedTuple):
    """Where a check is made and what it expects: ids of ``what`` in [0, size)."""

    op: str
    what: str
    size: int
    ignore: int | None
    context: str

    def message(self, low: int, high: int) -> str:
        ignoring = "" if self.ignore is None else f" or {self.ignore} (ignored)"
        context = f" {self.context}" if self.context else ""
        return (
            f"{self.op}: {self.what} must lie in [0, {self.size}){ignoring}{context}, "
            f"got {self.what} in [{low}, {high}]"
        )


class _Ledger:
    """The (min, max) pairs of one device, one row per check site.

    The rows live in segments of 8, 8, 16, 32, ... rows: a new site that does not fit opens
    a new segment, and no row ever moves, since a captured CUDA graph (``tricycle.apps.cuda_graph``)
    keeps folding into the row it was captured with."""

    def __init__(self, xp, device):  # device: a context manager that makes it current
        self.xp, self.device = xp, device
        self.sites: list[_Site] = []
        self.rows: dict[_Site, tuple[int, int]] = {}  # site -> (segment, row in it)
        self.segments = [self._empty(8)]  # (capacity, 2) int64 each
        self.dirty = False  # something was folded in since the last read

    def _empty(self, n: int):
        with self.device:
            return self.xp.asarray(np.tile(np.asarray(_EMPTY, dtype=np.int64), (n, 1)))

    def row(self, site: _Site) -> tuple[object, int]:
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
                segment[:, 0], segment[:, 1] = _EMPTY
        return [
            site.message(low, high)
            for site, (low, high) in zip(self.sites, seen)
            if _outside(site, low, high)
        ]


_lock = threading.Lock()
_ledgers: dict = {}  # device name ('cpu', 'cuda:N') -> _Ledger


class _Mode(threading.local):
    defer: bool | None = None  # None: defer on a GPU, check at once on the CPU


_mode = _Mode()


def fold_extremes(xp, ids, pairs, row: int, ignore: int | None = None) -> None:
    """pairs[row] = (min(pairs[row, 0], min(ids)), max(pairs[row, 1], max(ids))), over the
    ids that are not ``ignore``, in place and without reading anything back.

    A kernel registered as "fold_extremes" (the CUDA backend's) may replace it.
    """
    fold = dispatch.choose("fold_extremes", _fold_extremes, ids, pairs)
    fold(xp, ids, pairs, row, ignore)


def _fold_extremes(xp, ids, pairs, row: int, ignore: int | None = None) -> None:
    ids = ids.reshape(-1).astype(np.int64, copy=False)  # (N,)
    if not ids.size:
        return
    low_ids, high_ids = ids, ids
    if ignore is not None:  # ignored ids drop out as the pair's own empty values
        counted = ids != ignore
        low_ids = xp.where(counted, ids, _EMPTY[0])
        high_ids = xp.where(counted, ids, _EMPTY[1])
    pairs[row, 0] = xp.minimum(pairs[row, 0], low_ids.min())
    pairs[row, 1] = xp.maximum(pairs[row, 1], high_ids.max())


def check_range(
    ids, size: int, *, op: str, what: str = "ids", context: str = "", ignore: int | None = None
) -> None:
    """Raise IndexError unless every id (but ``ignore``) lies in [0, size).

    On the CPU it raises here. On a GPU it records the ids' extremes on the device and
    returns at once; ``raise_pending_errors`` raises at the next read-back (see the module
    docstring). The message reads ``"{op}: {what} must lie in [0, {size}) {context}, got
    {what} in [low, high]"``.
    """
    if not ids.size:
        return
    site = _Site(op, what, int(size), None if ignore is None else int(ignore), context)
    on_gpu = backend.is_cupy_array(ids)
    xp = backend.array_module(ids)
    if not (on_gpu if _mode.defer is None else _mode.defer):
        pair = xp.asarray([_EMPTY], dtype=np.int64)  # (1, 2)
        fold_extremes(xp, ids, pair, 0, site.ignore)
        low, high = backend.to_host_array(pair[0]).tolist()
        if _outside(site, low, high):
            raise IndexError(site.message(low, high))
        return
    device = backend.device_of(ids)
    with _lock:
        ledger = _ledgers.get(device)
        if ledger is None:
            if raise_pending_errors not in graph.read_back_hooks:  # read-backs raise from now on
                graph.read_back_hooks.append(raise_pending_errors)
            on_device = dispatch.setting("device_scope", dispatch.device_of(ids), _no_scope)(ids)
            ledger = _ledgers[device] = _Ledger(xp, on_device)
        pairs, row = ledger.row(site)
        fold_extremes(xp, ids, pairs, row, site.ignore)
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
    """Within the block, this thread's range checks are deferred (True) or made at once
    (False) on every backend; outside it, deferred exactly on a GPU."""
    previous = _mode.defer
    _mode.defer = bool(defer)
    try:
        yield
    finally:
        _mode.defer = previous


def _no_scope(ids):
    """The reference of the "device_scope" setting: on the CPU no device to make current."""
    return nullcontext()


def _outside(site: _Site, low: int, high: int) -> bool:
    """The pair (low, high) holds an id outside [0, size) (an empty pair holds none)."""
    return low <= high and (low < 0 or high >= site.size)


__all__ = ["check_range", "checks_pending", "defer_checks", "fold_extremes", "raise_pending_errors"]
