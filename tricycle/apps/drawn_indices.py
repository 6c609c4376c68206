"""An epoch's indices drawn a block at a time, as the loader reads them.

torch's ``RandomSampler(dataset, replacement=True, num_samples=int(1e10))`` is an endless
stream of indices that the training loop cuts short (makemore's ``InfiniteDataLoader``); drawn
whole, its epoch would take 80 GB. ``DrawnIndices`` is the same sequence, drawn from the
epoch's generator one block at a time as it is read (one block held at once), so the first
batch costs one block. The numbers are those a single draw gives: a numpy ``Generator`` draws
the same stream in blocks as in one call (``integers``, ``permutation`` after permutation).

It is a read-only sequence: ``len``, an index, a slice (a list, for a batch), iteration, and
the views the loader's split between ranks takes (a slice with a step: positions r, r + W,
...; ``resized``: cut short, or the first entries again at the end, as ``numpy.resize``).
Reading back before the block held restarts the generator (a resumed epoch reads forward
from its batch). ``Batches`` cuts such a stream into a ``BatchSampler``'s batches as they are
read, and ``Strided`` is a rank's share of them.
"""

import operator
from collections.abc import Callable, Sequence

import numpy as np


class Blocks:
    """The stream: ``draw(rng)`` gives the next block from the generator ``new_rng()``
    made; ``values(start, stop)`` the stream's entries start..stop - 1."""

    def __init__(self, new_rng: Callable[[], np.random.Generator], draw: Callable):
        self._new_rng, self._draw = new_rng, draw
        self._rng, self._start, self._block = None, 0, np.empty(0, dtype=np.int64)

    def values(self, start: int, stop: int) -> np.ndarray:
        parts = []
        while start < stop:
            self._hold(start)
            offset = start - self._start
            part = self._block[offset : offset + stop - start]
            parts.append(part)
            start += len(part)
        return np.concatenate(parts) if len(parts) != 1 else parts[0]

    def _hold(self, position: int) -> None:
        """Make the block that holds ``position`` the one held."""
        if self._rng is None or position < self._start:  # back: draw again from the start
            self._rng, self._start = self._new_rng(), 0
            self._block = self._draw(self._rng)
        while position >= self._start + len(self._block):
            self._start += len(self._block)
            self._block = self._draw(self._rng)


class DrawnIndices(Sequence):
    """``length`` entries of a stream of ``count``: entry i is the stream's
    ``(offset + i * stride) % count`` (the modulus: ``resized``'s repeat of the first). A
    slice with a step is a view; one without, a batch's indices, a list."""

    def __init__(self, blocks: Blocks, count: int, offset: int = 0, stride: int = 1,
                 length: int | None = None):  # fmt: skip
        self._blocks, self._count = blocks, count
        self._offset, self._stride = offset, stride
        self._length = count if length is None else length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self._length)
            n = len(range(start, stop, step))
            if step != 1:
                return self._view(start, self._stride * step, n)
            return self._read(start, n).tolist()  # a batch's indices
        index = operator.index(key)
        if not -self._length <= index < self._length:
            raise IndexError(f"index {index} is out of range for {self._length} indices")
        return int(self._read(index % self._length, 1)[0])

    def __iter__(self):
        step = 1 << 16
        for start in range(0, self._length, step):
            yield from self._read(start, min(step, self._length - start)).tolist()

    def resized(self, length: int) -> "DrawnIndices":
        """``length`` entries: these cut short, or these and then the first ones again."""
        return DrawnIndices(self._blocks, self._count, self._offset, self._stride, length)

    def _view(self, start: int, stride: int, n: int) -> "DrawnIndices":
        offset = self._offset + start * self._stride
        return DrawnIndices(self._blocks, self._count, offset, stride, n)

    def _read(self, start: int, n: int) -> np.ndarray:
        """Entries start..start + n - 1, from the stream's span that holds them."""
        if n == 0:
            return np.empty(0, dtype=np.int64)
        first = self._offset + start * self._stride
        last = first + (n - 1) * self._stride
        if last < self._count:  # within one pass of the stream
            return self._blocks.values(first, last + 1)[:: self._stride]
        positions = np.arange(first, last + 1, self._stride) % self._count  # padded: wraps
        return np.concatenate([self._blocks.values(p, p + 1) for p in positions])


class Listed(Sequence):
    """A read-only sequence whose entry k is ``_item(k)``, for 0 <= k < len (a negative k
    counts from the end); a slice is a list. ``_what`` names an entry and entries in errors."""

    _what = ("entry", "entries")

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._item(j) for j in range(*k.indices(len(self)))]
        k, n = operator.index(k), len(self)
        if not -n <= k < n:
            raise IndexError(f"{self._what[0]} {k} is out of range for {n} {self._what[1]}")
        return self._item(k % n)

    def _item(self, k: int):
        raise NotImplementedError


class Batches(Listed):
    """``BatchSampler``'s batches of ``indices`` (a ``DrawnIndices``), each cut as it is read:
    batch k is the list of entries k * size .. (k + 1) * size - 1, the last one shorter
    unless ``drop_last``."""

    _what = ("batch", "batches")

    def __init__(self, indices: DrawnIndices, size: int, drop_last: bool):
        self._indices, self._size = indices, size
        n = len(indices)
        self._length = n // size if drop_last else -(-n // size)

    def __len__(self) -> int:
        return self._length

    def _item(self, k: int):
        return self._indices[k * self._size : (k + 1) * self._size]


class Strided(Listed):
    """``length`` entries of ``items``: entry i is ``items[(start + i * step) % len(items)]``
    (the modulus: ``share``'s padding with the first entries), a rank's share of a sequence
    too long to list (``Batches``)."""

    def __init__(self, items: Sequence, start: int, step: int, length: int):
        self._items, self._start, self._step, self._length = items, start, step, length

    def __len__(self) -> int:
        return self._length

    def _item(self, i: int):
        return self._items[(self._start + i * self._step) % len(self._items)]
