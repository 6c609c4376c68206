"""``DataLoader``: batches from any dataset, shuffled per epoch, made by worker processes,
split between the ranks of a data-parallel world, copied to a GPU.

::

    loader = DataLoader(dataset, batch_size=32, shuffle=True, seed=0, num_workers=4)
    for epoch in range(3):
        for inputs, labels in loader:   # a new order each epoch, the same one every run
            ...

**Datasets.** Map-style: anything with ``__len__`` and ``__getitem__`` (a list, an array,
``tricycle.dataset.Dataset``); the loader picks the indices. Iterable: anything else that
iterates, an ``IterableDataset`` (``tricycle.data``'s or torch's, even with ``__len__``), and
tricycle's random-window datasets (``CausalLMDataset``, ``InfiniteBatchDataset``, streams
that draw forever); the loader takes items in the order they come (``is_map_style`` in
``tricycle.apps.map_datasets`` is the rule). ``batch_size=None`` takes the items as batches
already (a dataset of batches), each through ``collate_fn``, by default ``default_convert``,
as torch does.

**Order.** ``shuffle`` draws epoch e's order from ``seed`` and e (``set_epoch`` sets e;
iterating advances it), so the orders differ between epochs and repeat between runs. The
default seed is drawn from tricycle's generator (``manual_seed`` repeats it), and is 0 on
several ranks, as ``DistributedSampler``'s; torch's ``generator`` gives the seed instead
(an int, a numpy generator, torch's: ``tricycle.apps.seeds``). ``sampler`` (any iterable of
indices: a list, torch's samplers, ``tricycle.apps.samplers``) gives the order instead, and
``batch_sampler`` (an iterable of index lists) the batches, with torch's rules
(``check_samplers``); one with ``set_epoch`` gets epoch e before e's indices are drawn.
``collate_fn`` (default ``default_collate``) makes a batch from a list of items.

**Workers.** ``num_workers`` N > 0 makes the batches in N processes
(``tricycle.apps.workers``), ``prefetch_factor`` (default 2) batches each ahead, and yields
them in order (``in_order=False`` is accepted: torch allows any order, this one keeps it).
Each worker seeds tricycle's, numpy's and Python's generators afresh every epoch, so random
augmentations differ between workers, then runs ``worker_init_fn(worker_id)`` (once per
process); ``get_worker_info()`` there gives its id, N, seed and dataset copy.
``persistent_workers`` keeps the processes from one epoch to the next (re-seeded each epoch)
until ``close()`` or the loader's garbage collection. A map-style dataset is split by batch
between the workers: the batches of ``num_workers=0``. An iterable dataset is iterated by
every worker, and batch k is worker k mod N's, as torch's (a worker whose stream ends drops
out, the others go on in turn). If the worker's dataset or ``worker_init_fn`` asks
``get_worker_info()``, the worker's stream is its own (torch's idiom: each worker yields its
shard; without one, N copies). If nothing asks, the workers share one stream instead: each
reads it whole and makes every N-th batch, which gives the batches of ``num_workers=0`` where
torch would give each item N times.

**Ranks.** With ``world_size`` W > 1 (given, or set by ``Accelerator.prepare``) rank r gets a
disjoint share, of equal length on every rank, as torch's ``DistributedSampler``: a map-style
dataset's epoch order is padded with its first indices to a multiple of W (cut down to one,
with ``drop_last``) and rank r takes positions r, r + W, ...; an iterable one's items go
round-robin, a last partial round padded with the stream's first items (dropped, with
``drop_last``). Together the ranks' batches k are the one-process batch k of ``W x batch_size``
items; a sampler's order is split alike (a batch sampler's batches go whole, round-robin).
Every rank must use the same ``seed`` (the default does), and a sampler must give every rank
the same order (tricycle's take the loader's seed). With ``split_batches`` every
rank reads every batch instead and keeps its rows of it (rows [r n / W, (r + 1) n / W) of each
array of n rows), as the training script splits its global batches.

**Devices.** ``device`` (a GPU index) yields batches as Tensors on that GPU, copied through
pinned host buffers (``pin_memory``) so the copy overlaps the host's work. Without a
``device`` the batches are Tensors in ordinary host memory and ``pin_memory`` does
nothing (there is no copy to speed up); torch's ``pin_memory_device`` is ``device`` here.
"""

import itertools
import weakref

import numpy as np

from tricycle import checks
from tricycle.apps.collate import PinnedCopier, batch_rows, default_collate, default_convert
from tricycle.apps.map_datasets import is_map_style
from tricycle.apps.samplers import (
    check_samplers,
    dataset_key,
    epoch_indices,
    index_list,
    length,
    share,
    share_length,
    share_stream,
)
from tricycle.apps.seeds import seed_from
from tricycle.apps.workers import (
    Superseded,
    WorkerError,
    WorkerPool,
    start_context,
    worker_info_asked,
)
from tricycle.random import draw_seed


class DataLoader:
    """Batches of ``dataset`` (see the module). Arguments as torch's ``DataLoader``, with
    ``seed`` for the shuffle (and tricycle's samplers; torch's ``generator`` gives it too),
    ``rank``/``world_size`` for the per-rank split and ``device`` for the GPU."""

    @checks.arguments(
        batch_size=checks.optional(checks.positive_int),
        shuffle=checks.optional(checks.boolean),
        seed=checks.seed,
        drop_last=checks.boolean,
        collate_fn=checks.optional(checks.function),
        num_workers=checks.non_negative_int,
        prefetch_factor=checks.optional(checks.positive_int),
        rank=checks.non_negative_int,
        world_size=checks.positive_int,
        device=checks.optional(checks.non_negative_int),
        pin_memory=checks.boolean,
        timeout=checks.non_negative,
        split_batches=checks.boolean,
        worker_init_fn=checks.optional(checks.function),
        persistent_workers=checks.boolean,
        in_order=checks.boolean,
    )
    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = False,
        *,
        sampler=None,
        batch_sampler=None,
        seed: int | None = None,
        drop_last: bool = False,
        collate_fn=None,
        num_workers: int = 0,
        prefetch_factor: int | None = None,
        worker_init_fn=None,
        persistent_workers: bool = False,
        rank: int = 0,
        world_size: int = 1,
        device: int | None = None,
        pin_memory: bool = True,
        timeout: float = 0.0,
        split_batches: bool = False,
        multiprocessing_context=None,
        generator=None,
        in_order: bool = True,
        pin_memory_device: str = "",
    ):
        seed = seed_from("DataLoader", seed, generator)
        if pin_memory_device:
            raise TypeError(f"DataLoader: pin_memory_device={pin_memory_device!r} is not "
                            "supported: pass device=<GPU index>")  # fmt: skip
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError(
                "DataLoader: prefetch_factor option could only be specified in multiprocessing "
                "(num_workers > 0); with num_workers=0 leave it None"
            )
        if rank >= world_size:
            checks.fail("DataLoader", "rank", f"below world_size ({world_size})", rank)
        self.dataset = dataset
        self.map_style = is_map_style(dataset)
        if not self.map_style and not hasattr(dataset, "__iter__"):
            raise TypeError(
                f"DataLoader: the dataset must have __len__ and __getitem__ (map-style) or "
                f"__iter__ (iterable), got a {type(dataset).__name__}"
            )
        given = {"shuffle": shuffle or None, "sampler": sampler, "batch_sampler": batch_sampler}
        ordering = [name for name, value in given.items() if value is not None]
        if ordering and not self.map_style:
            raise ValueError(
                f"DataLoader: {ordering[0]} needs a map-style dataset (__len__ and __getitem__); "
                f"a {type(dataset).__name__} is read in the order it yields its items"
            )
        check_samplers(sampler, batch_sampler, batch_size, shuffle, drop_last, world_size)
        if batch_size is None and drop_last:
            raise ValueError("DataLoader: drop_last=True needs a batch_size (with None each "
                             "item is a batch already)")  # fmt: skip
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        self.sampler, self.batch_sampler = sampler, batch_sampler
        # as torch's: with a batch_sampler the batches are its lists (batch_size None)
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle, self.drop_last = bool(shuffle), drop_last  # None: False, as torch
        # as torch: from tricycle's generator (manual_seed reproduces it), and on several
        # ranks 0, as DistributedSampler's, so that ranks built alike shuffle alike
        if seed is None:
            seed = 0 if world_size > 1 else draw_seed()
        self.seed = int(seed)
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        # with batch_size None: applied to each item, as torch does
        self._each = default_convert if collate_fn is None else collate_fn
        self._collate_argument = collate_fn  # as given, for shard()
        self.num_workers, self.prefetch_factor = num_workers, prefetch_factor
        self.in_order = in_order  # batches come in order either way
        self.worker_init_fn, self.persistent_workers = worker_init_fn, persistent_workers
        self.rank, self.world_size = rank, world_size
        self.device, self.pin_memory, self.timeout = device, pin_memory, timeout
        self.split_batches = split_batches
        self.multiprocessing_context = start_context(multiprocessing_context, num_workers)
        self.epoch = 0  # the epoch the next iteration starts
        self._running: int | None = None  # the epoch being iterated
        self._position = 0  # batches yielded in it
        self._skip = 0  # batches a resumed epoch skips
        self._copier = None
        self._pool: WorkerPool | None = None  # the persistent workers, once started
        self._finalizer = None  # stops them when the loader is collected

    # ------------------------------------------------------------------ configuration
    def shard(self, rank: int, world_size: int, device: int | None = None,
              split_batches: bool | None = None) -> "DataLoader":  # fmt: skip
        """This loader for rank ``rank`` of ``world_size`` (and copying batches to GPU
        ``device``; ``split_batches``: see the module): what ``Accelerator.prepare`` gives
        each rank."""
        split = self.split_batches if split_batches is None else split_batches
        return DataLoader(
            self.dataset, 1 if self.batch_sampler is not None else self.batch_size,
            self.shuffle, sampler=self.sampler, batch_sampler=self.batch_sampler,
            seed=self.seed, drop_last=self.drop_last, collate_fn=self._collate_argument,
            num_workers=self.num_workers, prefetch_factor=self.prefetch_factor,
            worker_init_fn=self.worker_init_fn, persistent_workers=self.persistent_workers,
            rank=rank, world_size=world_size, device=self.device if device is None else device,
            pin_memory=self.pin_memory, timeout=self.timeout, split_batches=split,
            multiprocessing_context=self.multiprocessing_context, in_order=self.in_order,
        )  # fmt: skip

    @checks.arguments(epoch=checks.non_negative_int)
    def set_epoch(self, epoch: int) -> None:
        """Make the next iteration epoch ``epoch`` (its shuffled order; a sampler with
        ``set_epoch`` gets it before that epoch's indices are drawn)."""
        self.epoch = epoch

    def __len__(self) -> int:
        """Batches in an epoch on this rank; of an iterable dataset, those its ``len`` makes,
        as torch's (its workers' shards must add up to it)."""
        if self.batch_sampler is not None:
            return share_length(length(self.batch_sampler, "batch_sampler"),
                                 self._item_world, drop_last=False)  # fmt: skip
        try:
            n = len(self.dataset) if self.sampler is None else length(self.sampler, "sampler")
        except TypeError:
            if self.map_style:
                raise
            name = type(self.dataset).__name__
            raise TypeError(f"DataLoader: an iterable dataset ({name}) has no length") from None
        n = share_length(n, self._item_world, self.drop_last)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    # ------------------------------------------------------------------ the items
    def _rank_indices(self, epoch: int):
        """This rank's indices of epoch ``epoch``, in order (``DistributedSampler``'s): of
        the sampler's indices, of a permutation drawn from (seed, epoch), or 0..n-1."""
        if self.sampler is not None:
            order = epoch_indices(self.sampler, epoch, self.seed)
        elif self.shuffle:
            order = np.random.default_rng((self.seed, epoch)).permutation(len(self.dataset))
        else:
            order = np.arange(len(self.dataset))
        return share(order, self.rank, self._item_world, self.drop_last)

    def _index_chunks(self, epoch: int):
        """(k, the indices of batch k) of this rank's epoch ((k, an index) when each item is
        a batch already)."""
        if self.batch_sampler is not None:
            batches = epoch_indices(self.batch_sampler, epoch, self.seed)
            batches = share(batches, self.rank, self._item_world, drop_last=False)
            return ((k, index_list(indices, k)) for k, indices in enumerate(batches))
        indices = self._rank_indices(epoch)
        if self.batch_size is None:
            return enumerate(indices)
        size = self.batch_size
        count = len(indices) // size if self.drop_last else -(-len(indices) // size)
        return ((k, indices[k * size : (k + 1) * size]) for k in range(count))

    def _fetch(self, indices):
        """A batch of a map-style dataset."""
        if self.batch_size is None and self.batch_sampler is None:
            return self._each(self.dataset[dataset_key(indices)])
        return self.collate_fn([self.dataset[dataset_key(i)] for i in indices])

    @property
    def _item_world(self) -> int:
        """The ranks the items are shared between (1 when each rank splits every batch)."""
        return 1 if self.split_batches else self.world_size

    def _item_chunks(self):
        """Lists of the items of each batch of this rank, for an iterable dataset."""
        items = share_stream(iter(self.dataset), self.rank, self._item_world, self.drop_last)
        if self.batch_size is None:
            yield from ([item] for item in items)
            return
        while True:
            chunk = list(itertools.islice(items, self.batch_size))
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield chunk

    def _collate_chunk(self, chunk: list):
        return self._each(chunk[0]) if self.batch_size is None else self.collate_fn(chunk)

    # ------------------------------------------------------------------ iterating
    def __iter__(self):
        epoch, skip = self.epoch, self._skip
        self.epoch, self._skip = epoch + 1, 0
        self._running, self._position = epoch, skip
        if self.num_workers == 0:
            batches = self._batches(epoch, skip)
        else:
            batches = self._batches_from_workers(epoch, skip)
        copy = self._device_copy()
        split = self.split_batches and self.world_size > 1
        try:
            for k, batch in batches:
                self._position = k + 1  # with workers on a stream, k counts the skipped too
                if split:
                    batch = batch_rows(batch, self.rank, self.world_size)
                yield batch if copy is None else copy(batch)
        finally:  # a loop left early stops the workers now, not when the garbage collector
            batches.close()  # gets to this generator (Python 3.12 may keep it a while)
        self._running, self._position = None, 0

    def _batches(self, epoch: int, skip: int):
        """(k, batch k) of epoch ``epoch`` from batch ``skip`` on, made here."""
        if self.map_style:
            for k, indices in itertools.islice(self._index_chunks(epoch), skip, None):
                yield k, self._fetch(indices)
        else:
            chunks = itertools.islice(self._item_chunks(), skip, None)
            for k, chunk in enumerate(chunks, skip):
                yield k, self._collate_chunk(chunk)

    def _batches_from_workers(self, epoch: int, skip: int):
        if self.map_style:
            tasks = itertools.islice(self._index_chunks(epoch), skip, None)
        else:
            tasks = ((k, None) for k in itertools.count(skip))
        pool = self._workers()
        keep = self.persistent_workers
        try:
            yield from pool.batches(tasks, seed=self.seed + 1000 * epoch, first=skip)
        except (GeneratorExit, Superseded):  # a loop left, or replaced: persistent workers
            raise  # stay for the next
        except BaseException:  # an error (a worker's, Ctrl-C): every worker is stopped
            keep = False
            raise
        finally:
            if not keep:
                if pool is self._pool:
                    self.close()
                else:
                    pool.close()

    def _workers(self) -> WorkerPool:
        """The worker processes of an epoch: new ones, or the persistent ones."""
        if self._pool is not None:
            return self._pool
        context = self.multiprocessing_context or start_context(None, self.num_workers)
        pool = WorkerPool(self._worker_fetch, self.num_workers, self.prefetch_factor or 2,
                          context, timeout=self.timeout, init_fn=self.worker_init_fn,
                          dataset=self.dataset)  # fmt: skip
        if self.persistent_workers:
            # the pool holds no reference to the loader: collecting the loader stops them
            self._pool, self._finalizer = pool, weakref.finalize(self, pool.close)
        return pool

    def close(self) -> None:
        """Stop the persistent workers now (also done when the loader is garbage collected,
        or at exit); a later iteration starts new ones."""
        if self._finalizer is not None:
            self._finalizer()  # pool.close(), once
        self._pool = self._finalizer = None

    def __getstate__(self) -> dict:
        """What a spawned worker receives: the loader without its processes and GPU buffers."""
        return {**self.__dict__, "_pool": None, "_finalizer": None, "_copier": None}

    def _worker_fetch(self, worker_id: int):
        """What worker ``worker_id`` runs (see ``WorkerPool``): batch k of the epoch. Of a
        stream: its chunk k // N of its own stream if the worker asked ``get_worker_info()``
        (known once the first item is read), else chunk k of the shared one (see the module);
        StopIteration when the stream ends."""
        if self.map_style:
            return lambda k, indices: self._fetch(indices)
        chunks, read, own = self._item_chunks(), 0, None

        def fetch(k: int, _):
            nonlocal read, own
            while True:  # the chunks before: the other workers' (shared), or skipped (resumed)
                chunk = next(chunks)
                if own is None:
                    own = worker_info_asked()
                read += 1
                if read - 1 == (k // self.num_workers if own else k):
                    return self._collate_chunk(chunk)

        return fetch

    def _device_copy(self):
        if self.device is None:
            return None
        if self._copier is None:
            self._copier = PinnedCopier(self.device, pinned=self.pin_memory)
        return self._copier

    # ------------------------------------------------------------------ resuming
    def state_dict(self) -> dict:
        """Where the loader stands: the epoch and the batches of it already yielded (with
        workers on a stream: the workers' turns passed, those of a worker that ran out too),
        and an iterable dataset's own ``state_dict`` where it has one. Without workers that
        is the stream's state now, the batches yielded being in it (position 0); with
        workers, this process's copy of the stream, which stays where the workers' copies
        started (with ``persistent_workers``, where they started their first epoch), the
        batches yielded since being the position. Either resumes with or without workers."""
        state = {"epoch": self.epoch, "position": 0, "seed": self.seed}
        if self._running is not None:
            state.update(epoch=self._running, position=self._position)
        if self._stateful_stream():
            state["dataset"] = self.dataset.state_dict()
            if self.num_workers == 0:
                state["position"] = 0
        return state

    def load_state_dict(self, state: dict) -> None:
        """Continue from ``state_dict()``: the next iteration resumes that epoch after the
        batches already yielded (skipped without being loaded, for a map-style dataset; read
        and dropped, for a stream), a stream from its own state where the state holds one."""
        try:
            self.epoch, self._skip = int(state["epoch"]), int(state["position"])
            self.seed = int(state.get("seed", self.seed))
        except (KeyError, TypeError, ValueError) as error:
            message = f"DataLoader.load_state_dict: not a loader state: {state!r}"
            raise ValueError(message) from error
        if "dataset" in state and self._stateful_stream():
            self.dataset.load_state_dict(state["dataset"])
            self.close()  # persistent workers hold copies of the stream as it was

    def _stateful_stream(self) -> bool:
        """An iterable dataset that saves its own position."""
        return not self.map_style and hasattr(self.dataset, "state_dict")

    def __repr__(self) -> str:
        kind = "map-style" if self.map_style else "iterable"
        return (
            f"DataLoader({type(self.dataset).__name__} ({kind}), batch_size={self.batch_size}, "
            f"shuffle={self.shuffle}, seed={self.seed}, num_workers={self.num_workers}, "
            f"rank={self.rank}, world_size={self.world_size}, device={self.device})"
        )


__all__ = ["DataLoader", "WorkerError", "default_collate"]
