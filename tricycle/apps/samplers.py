"""Samplers: the order in which a ``DataLoader`` reads a map-style dataset, under PyTorch's
names (``SequentialSampler``, ``RandomSampler``, ``SubsetRandomSampler``,
``WeightedRandomSampler``, ``DistributedSampler``, ``BatchSampler``, the base class
``Sampler``), for ``DataLoader(sampler=...)`` and ``DataLoader(batch_sampler=...)``.

The loader takes any iterable of indices as its sampler (a list, torch's samplers, a class
of one's own); these are the common ones, drawn the loader's way: epoch e's indices come
from a seed and e alone (``numpy.random.default_rng((seed, e))``), never from a generator's
running state, so runs repeat, a resumed epoch continues the same order, and ranks that
share a seed draw alike. A sampler's ``seed=None`` means the seed of the loader that reads
it (which ``Accelerator.prepare`` makes the same on every rank); so
``sampler=RandomSampler(dataset)`` is ``shuffle=True``. Iterated on its own, a sampler with
no seed draws one from tricycle's generator (``manual_seed`` repeats it) and moves to the
next epoch at each iteration, as torch's samplers draw afresh. torch's ``generator=`` is
taken as the seed it stands for (``tricycle.apps.seeds``).

Here too is how the loader combines a sampler with its arguments (``check_samplers``: the
combinations torch refuses, refused alike) and with its ranks (``share``): the loader splits
the sampler's indices between ranks as it splits its own order, and a batch sampler's
batches whole. A sampler that splits between ranks itself (torch's ``DistributedSampler``)
is refused on a loader that has ranks of its own: each rank would get a share of a share.
"""

import itertools

import numpy as np

from tricycle import checks
from tricycle.apps.drawn_indices import Batches, Blocks, DrawnIndices, Strided
from tricycle.apps.seeds import seed_from
from tricycle.random import draw_seed


def check_samplers(sampler, batch_sampler, batch_size, shuffle: bool, drop_last: bool,
                   world_size: int) -> None:  # fmt: skip
    """Refuse, with torch's words, what a ``DataLoader`` cannot do with these arguments."""
    for name, value in [("sampler", sampler), ("batch_sampler", batch_sampler)]:
        if value is not None and not hasattr(value, "__iter__"):
            raise TypeError(
                f"DataLoader: {name} must be an iterable of "
                f"{'indices' if name == 'sampler' else 'lists of indices'} (a list, a "
                f"sampler), got a {type(value).__name__}"
            )
    if isinstance(sampler, BatchSampler):
        raise TypeError("DataLoader: sampler is a BatchSampler, which yields lists of indices; "
                        "pass it as batch_sampler=")  # fmt: skip
    if sampler is not None and shuffle:
        raise ValueError(
            "DataLoader: sampler option is mutually exclusive with shuffle (the sampler "
            "chooses the order: RandomSampler shuffles)"
        )
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                      or drop_last):  # fmt: skip
        raise ValueError(
            "DataLoader: batch_sampler option is mutually exclusive with batch_size, shuffle, "
            f"sampler, and drop_last (got batch_size={batch_size}, shuffle={shuffle}, "
            f"sampler={type(sampler).__name__ if sampler is not None else None}, "
            f"drop_last={drop_last}): the batch sampler makes the batches"
        )
    for name, value in [("sampler", sampler), ("batch_sampler", batch_sampler)]:
        ranks = max(getattr(value, "num_replicas", 1),
                    getattr(getattr(value, "sampler", None), "num_replicas", 1))  # fmt: skip
        if world_size > 1 and ranks > 1:
            raise ValueError(
                f"DataLoader: the {name} ({type(value).__name__}) splits the dataset between "
                f"{ranks} ranks itself, and the loader splits between its world_size="
                f"{world_size} ranks too: each rank would read a share of a share. Give the "
                "loader a sampler of the whole dataset (it gives rank r positions r, r + W, "
                "... of the sampler's order), or keep the loader's world_size 1"
            )


def share(order, rank: int, world_size: int, drop_last: bool):
    """Rank ``rank``'s share of an epoch's ``order`` (an array or a list), as torch's
    ``DistributedSampler``: padded with its first entries to a multiple of ``world_size``
    (cut down to one, with ``drop_last``), then positions rank, rank + W, ..."""
    n = len(order)
    if world_size == 1:
        return order
    if isinstance(order, DrawnIndices):  # drawn as read: views, never the whole epoch
        return order.resized(share_length(n, world_size, drop_last) * world_size)[rank::world_size]
    if isinstance(order, Batches):  # cut as read: a view
        return Strided(order, rank, world_size, share_length(n, world_size, drop_last))
    if drop_last:
        order = order[: n // world_size * world_size]
    elif n % world_size:
        padded = -(-n // world_size) * world_size
        if isinstance(order, np.ndarray):
            order = np.resize(order, padded)
        else:
            order = (list(order) * -(-padded // n))[:padded]
    return order[rank::world_size]


def share_stream(items, rank: int, world_size: int, drop_last: bool):
    """Rank ``rank``'s items of a stream ``items``: round-robin, rank r taking item r of
    each round of ``world_size``, a last partial round padded with the stream's first items
    (dropped, with ``drop_last``), as ``share`` pads an order."""
    if world_size == 1:
        yield from items
        return
    first: list = []  # the padding of a last partial round
    while True:
        round_ = list(itertools.islice(items, world_size))
        if len(first) < world_size:
            first += round_[: world_size - len(first)]
        if len(round_) < world_size:
            if round_ and not drop_last:
                yield (round_ + (first * world_size)[: world_size - len(round_)])[rank]
            return
        yield round_[rank]


def share_length(n: int, world_size: int, drop_last: bool) -> int:
    """The length of one rank's ``share`` of n entries."""
    if world_size == 1:
        return n
    return n // world_size if drop_last else -(-n // world_size)


def length(sampler, name: str) -> int:
    """``len(sampler)``, or an error saying that the loader's length needs it."""
    if not hasattr(sampler, "__len__"):
        raise TypeError(
            f"DataLoader: len() needs the length of the {name}, and a "
            f"{type(sampler).__name__} has no __len__ (iterating needs none)"
        )
    return len(sampler)


def epoch_indices(sampler, epoch: int, seed: int | None) -> list:
    """Epoch ``epoch``'s indices (index lists, for a batch sampler) from any sampler:
    tricycle's draw them from their seed (``seed``, the loader's, where they have none) and
    ``epoch``; any other gets ``set_epoch(epoch)`` first where it has one (torch's
    ``DistributedSampler``, so that it shuffles anew each epoch; for torch's
    ``BatchSampler``, its sampler does) and is read through."""
    if isinstance(sampler, SeededSampler):
        return sampler.draw(epoch, seed)
    inner = getattr(sampler, "sampler", None)
    for told in (sampler, inner):
        if hasattr(told, "set_epoch"):
            told.set_epoch(epoch)
            break
    return list(sampler)


def dataset_key(index):
    """A dataset's key as torch's samplers give it: a Python int for any integer."""
    return int(index) if isinstance(index, np.integer) else index


def index_list(indices, k: int):
    """Batch ``k`` of a batch sampler, checked to be a list of indices."""
    if isinstance(indices, (str, bytes)) or not hasattr(indices, "__iter__"):
        raise TypeError(
            f"DataLoader: batch_sampler must yield lists of indices; its batch {k} is a "
            f"{type(indices).__name__} ({indices!r}): pass a sampler of single indices as "
            "sampler="
        )
    return indices


class Sampler:
    """torch's base class of samplers: a subclass defines ``__iter__`` (the indices) and, for
    ``len(loader)``, ``__len__``. The loader needs no base class (any iterable of indices
    will do); this one is for code written against torch's."""

    def __init__(self, data_source=None):
        del data_source  # torch's signature; its base class keeps nothing either

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__}: a Sampler defines __iter__")


class SeededSampler(Sampler):
    """The base of tricycle's samplers: ``draw(epoch, seed)`` gives an epoch's indices."""

    def __init__(self, seed: int | None = None):
        self.seed = seed  # None: the loader's (see the module)
        self.epoch = 0  # the epoch an iteration on its own draws next
        self._own_seed: int | None = None  # drawn when iterated on its own without a seed

    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration on its own draw epoch ``epoch``."""
        self.epoch = epoch

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        return iter(self.draw(epoch, None))

    def draw(self, epoch: int, seed: int | None) -> list:
        raise NotImplementedError

    def _rng(self, epoch: int, seed: int | None) -> np.random.Generator:
        """Epoch ``epoch``'s generator: from this sampler's seed, else ``seed``, else its own."""
        if self.seed is not None:
            seed = self.seed
        elif seed is None:
            if self._own_seed is None:
                self._own_seed = draw_seed()
            seed = self._own_seed
        return np.random.default_rng((seed, epoch))


class SequentialSampler(SeededSampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        super().__init__()
        self.data_source = data_source

    def draw(self, epoch: int, seed: int | None) -> list:
        return list(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(SeededSampler):
    """A new permutation of ``data_source``'s indices each epoch, or ``num_samples`` indices
    (default all): without ``replacement`` whole permutations one after another (cut at
    ``num_samples``), with it independent uniform draws. ``generator``: torch's, as a seed."""

    @checks.arguments(replacement=checks.boolean, num_samples=checks.optional(checks.positive_int),
                      seed=checks.seed)  # fmt: skip
    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 seed: int | None = None, *, generator=None):  # fmt: skip
        super().__init__(seed_from("RandomSampler", seed, generator))
        self.data_source, self.replacement = data_source, replacement
        self._num_samples = num_samples

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def draw(self, epoch: int, seed: int | None) -> DrawnIndices | list:
        """Epoch ``epoch``'s indices, drawn as they are read (``DrawnIndices``): torch's
        ``num_samples=int(1e10)``, an endless stream, costs a block, not the epoch."""
        n, count = len(self.data_source), self.num_samples
        if n == 0:
            return []
        if self.replacement:  # blocks of up to 2^20 draws
            block = lambda rng: rng.integers(n, size=min(count, 1 << 20))  # noqa: E731
        else:  # one permutation after another
            block = lambda rng: rng.permutation(n)  # noqa: E731
        return DrawnIndices(Blocks(lambda: self._rng(epoch, seed), block), count)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(SeededSampler):
    """The given ``indices`` (one split of a dataset: a validation set, say) in a new order
    each epoch. ``generator``: torch's, as a seed."""

    @checks.arguments(seed=checks.seed)
    def __init__(self, indices, seed: int | None = None, *, generator=None):
        super().__init__(seed_from("SubsetRandomSampler", seed, generator))
        self.indices = indices

    def draw(self, epoch: int, seed: int | None) -> list:
        order = self._rng(epoch, seed).permutation(len(self.indices))
        return [self.indices[i] for i in order.tolist()]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(SeededSampler):
    """``num_samples`` indices of 0..len(weights) - 1, index i drawn with probability
    ``weights[i] / sum(weights)`` (to rebalance classes); ``replacement=False`` draws each
    index at most once. ``generator``: torch's, as a seed."""

    @checks.arguments(num_samples=checks.positive_int, replacement=checks.boolean,
                      seed=checks.seed)  # fmt: skip
    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 seed: int | None = None, *, generator=None):  # fmt: skip
        super().__init__(seed_from("WeightedRandomSampler", seed, generator))
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights must be a 1-d sequence, got an "
                             f"array of shape {weights.shape}")  # fmt: skip
        bad = weights[~(np.isfinite(weights) & (weights >= 0))]
        if bad.size:
            raise ValueError(f"WeightedRandomSampler: weights must be finite numbers >= 0, "
                             f"got {bad[:3].tolist()} among them")  # fmt: skip
        nonzero = int((weights > 0).sum())
        if nonzero == 0 or (not replacement and num_samples > nonzero):
            raise ValueError(
                f"WeightedRandomSampler: cannot draw {num_samples} samples "
                f"{'with' if replacement else 'without'} replacement from {nonzero} indices of "
                "non-zero weight"
            )
        self.weights, self.num_samples, self.replacement = weights, num_samples, replacement

    def draw(self, epoch: int, seed: int | None) -> list:
        p = self.weights / self.weights.sum()
        rng = self._rng(epoch, seed)
        return rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()

    def __len__(self) -> int:
        return self.num_samples


class DistributedSampler(SeededSampler):
    """Rank ``rank``'s share of ``dataset``'s indices among ``num_replicas`` ranks, as torch's:
    epoch e's order (a permutation drawn from ``seed`` and e with ``shuffle``, else 0..n-1)
    is padded with its first indices to a multiple of ``num_replicas`` (cut down to one,
    with ``drop_last``), and rank r takes positions r, r + num_replicas, .... Every rank
    must pass the same ``seed`` (default 0, as torch's). ``set_epoch(e)`` picks epoch e's
    order (the loader sets it each epoch); iterating alone does not move it on, as torch's.

    The ranks default to the processes mpiexec started (``tricycle.parallel.distributed``).
    It is for a loader of one process (``world_size`` 1): a loader's own ``rank`` and
    ``world_size`` split alike without a sampler, and the two together are refused."""

    @checks.arguments(num_replicas=checks.optional(checks.positive_int),
                      rank=checks.optional(checks.non_negative_int), shuffle=checks.boolean,
                      seed=checks.seed, drop_last=checks.boolean)  # fmt: skip
    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False):  # fmt: skip
        super().__init__(seed)
        if num_replicas is None or rank is None:
            from tricycle.parallel import distributed  # noqa: PLC0415 - heavy, seldom needed

            num_replicas = distributed.launched_size() if num_replicas is None else num_replicas
            rank = distributed.launched_rank() if rank is None else rank
        if rank >= num_replicas:
            raise ValueError(f"DistributedSampler: invalid rank {rank}, rank should be in the "
                             f"interval [0, {num_replicas - 1}]")  # fmt: skip
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.drop_last = shuffle, drop_last

    def __iter__(self):
        return iter(self.draw(self.epoch, None))

    def draw(self, epoch: int, seed: int | None) -> list:
        n = len(self.dataset)
        order = self._rng(epoch, seed).permutation(n) if self.shuffle else np.arange(n)
        return share(order, self.rank, self.num_replicas, self.drop_last).tolist()

    def __len__(self) -> int:
        return share_length(len(self.dataset), self.num_replicas, self.drop_last)

    @property
    def num_samples(self) -> int:
        """The indices each rank gets per epoch (torch's attribute)."""
        return len(self)

    @property
    def total_size(self) -> int:
        """The indices of all ranks per epoch, padding included (torch's attribute)."""
        return len(self) * self.num_replicas


class BatchSampler(SeededSampler):
    """Lists of ``batch_size`` indices of ``sampler`` (any sampler), the last one shorter
    unless ``drop_last``: a ``batch_sampler`` for the loader."""

    @checks.arguments(batch_size=checks.positive_int, drop_last=checks.boolean)
    def __init__(self, sampler, batch_size: int, drop_last: bool):
        super().__init__()
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def draw(self, epoch: int, seed: int | None) -> list | Batches:
        indices, size = epoch_indices(self.sampler, epoch, seed), self.batch_size
        if isinstance(indices, DrawnIndices):  # an endless stream: cut as it is read
            return Batches(indices, size, self.drop_last)
        count = len(indices) // size if self.drop_last else -(-len(indices) // size)
        return [indices[k * size : (k + 1) * size] for k in range(count)]

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


__all__ = [
    "BatchSampler",
    "DistributedSampler",
    "Sampler",
    "dataset_key",
    "index_list",
    "check_samplers",
    "length",
    "share",
    "share_length",
    "share_stream",
    "RandomSampler",
    "SeededSampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "epoch_indices",
]
