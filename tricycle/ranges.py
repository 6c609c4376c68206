"""Range checks of ids: the reference, made at the op.

An id outside its table (an embedding's vocabulary, a cross-entropy's classes) must be an
error naming the op, never a silent wrap-around (numpy wraps a negative row index, cupy any
index). ``check_range`` folds the counted ids' minimum and maximum into a (min, max) pair,
reads it and raises IndexError naming the op, the bound and the range of ids seen.

Reading the pair back is a host synchronisation on a GPU, after which Python can no longer
enqueue kernels ahead of the device. So an op asks ``tricycle.dispatch`` for its device's
check, a setting of the device with this one as the reference::

    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, size, op="Embedding", context=f"for a vocabulary of size {size}")

On the CPU it is this check. The CUDA backend's records the pair on the device and raises
the same message at the next read-back (``tricycle.backends.cuda.deferred``); a setting is
never turned off with the kernels (``TRICYCLE_DISABLE_KERNELS``), so a GPU defers either way.
"""

from typing import NamedTuple

import numpy as np

from tricycle import backend, dispatch

# a pair that has seen nothing: every id lowers its min and raises its max
EMPTY = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)


class Site(NamedTuple):
    """Where a check is made and what it expects: ids of ``what`` in [0, size), but ``ignore``."""

    op: str
    what: str
    size: int
    ignore: int | None
    context: str

    @classmethod
    def of(cls, size, op: str, what: str = "ids", context: str = "", ignore=None) -> "Site":
        """The site of a ``check_range`` call (its arguments, as plain ints)."""
        return cls(op, what, int(size), None if ignore is None else int(ignore), context)

    def outside(self, low: int, high: int) -> bool:
        """The pair (low, high) holds an id outside [0, size) (an empty pair holds none)."""
        return low <= high and (low < 0 or high >= self.size)

    def message(self, low: int, high: int) -> str:
        ignoring = "" if self.ignore is None else f" or {self.ignore} (ignored)"
        context = f" {self.context}" if self.context else ""
        return (
            f"{self.op}: {self.what} must lie in [0, {self.size}){ignoring}{context}, "
            f"got {self.what} in [{low}, {high}]"
        )


def check_range(
    ids, size: int, *, op: str, what: str = "ids", context: str = "", ignore: int | None = None
) -> None:
    """Raise IndexError here unless every id (but ``ignore``) lies in [0, size): ``"{op}:
    {what} must lie in [0, {size}) {context}, got {what} in [low, high]"``."""
    if not ids.size:
        return
    site = Site.of(size, op, what, context, ignore)
    xp = backend.array_module(ids)
    pair = xp.asarray([EMPTY], dtype=np.int64)  # (1, 2)
    fold_extremes(xp, ids, pair, 0, site.ignore)
    low, high = backend.to_host_array(pair[0]).tolist()
    if site.outside(low, high):
        raise IndexError(site.message(low, high))


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
        low_ids = xp.where(counted, ids, EMPTY[0])
        high_ids = xp.where(counted, ids, EMPTY[1])
    pairs[row, 0] = xp.minimum(pairs[row, 0], low_ids.min())
    pairs[row, 1] = xp.maximum(pairs[row, 1], high_ids.max())


__all__ = ["Site", "check_range", "fold_extremes"]
