"""Datasets: iterators of (inputs, outputs) pairs, configured by chaining.

``batch()``, ``shuffle()``, ``to_tensor()``, ``to_gpu()`` and ``from_gpu()`` each return a
configured copy (the data itself is shared, never copied), so docs/training.md's::

    dataset = CausalLMDataset(tokens, vocab_size, batch_size, context_window).batch().shuffle().to_tensor()
    inputs, outputs = next(dataset)

works. ``Dataset`` is finite (one pass per epoch, ``for x, y in dataset``);
``InfiniteBatchDataset`` and ``CausalLMDataset`` produce random batches forever.
"""  # noqa: E501

import copy

import numpy as np

from tricycle import backend, checks
from tricycle.tensor import Tensor

_batch_arguments = checks.arguments(
    batch_size=checks.optional(checks.positive_int), drop_last=checks.boolean
)


def _new_rng(seed: int | None) -> np.random.Generator:
    """A generator from ``seed``, or seeded from np.random so np.random.seed controls it."""
    return np.random.default_rng(np.random.randint(2**31) if seed is None else seed)


class Dataset:
    """A finite dataset of (input, output) pairs, indexable and iterable.

    Args:
        inputs, outputs: arrays (or array-likes) with the examples along the first axis.

    Iterating yields one example at a time, or stacked batches after ``batch(n)``; an epoch
    ends with StopIteration and the next ``next()`` starts a new one (re-shuffled if
    ``shuffle()`` was asked for).
    """

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = np.asarray(inputs), np.asarray(outputs)
        if len(self.inputs) != len(self.outputs):
            raise ValueError(f"Dataset: {len(self.inputs)} inputs but {len(self.outputs)} outputs")
        self._init_config(shuffled=False, seed=None)

    def _init_config(self, shuffled: bool, seed: int | None) -> None:
        """Defaults of the chainable configuration: unbatched numpy arrays on the host."""
        self.batch_size: int | None = None
        self.drop_last = False
        self.shuffled = shuffled
        self.rng = _new_rng(seed)
        self.as_tensor = False
        self.device: int | None = None
        self._order: np.ndarray | None = None
        self._cursor = 0

    # ------------------------------------------------------------------ configuration
    def _configured(self, **changes) -> "Dataset":
        clone = copy.copy(self)
        clone.__dict__.update(changes)
        clone._order, clone._cursor = None, 0
        return clone

    @_batch_arguments
    def batch(self, batch_size: int | None = None, drop_last: bool = False) -> "Dataset":
        """Yield stacked batches of ``batch_size`` examples (the last one may be smaller,
        unless ``drop_last``); by default the batch size set before."""
        batch_size = self.batch_size if batch_size is None else batch_size
        if batch_size is None:
            raise ValueError(f"{type(self).__name__}.batch: no batch_size set before: give one")
        return self._configured(batch_size=batch_size, drop_last=drop_last)

    def unbatch(self) -> "Dataset":
        """Yield single examples again."""
        return self._configured(batch_size=None)

    @checks.arguments(seed=checks.seed)
    def shuffle(self, seed: int | None = None) -> "Dataset":
        """Visit the examples in a new random order each epoch (reproducible with ``seed``)."""
        return self._configured(shuffled=True, rng=_new_rng(seed))

    def to_tensor(self) -> "Dataset":
        """Yield Tensors (floats as float32, integers kept) instead of numpy arrays."""
        return self._configured(as_tensor=True)

    @checks.arguments(device=checks.non_negative_int)
    def to_gpu(self, device: int = 0) -> "Dataset":
        """Yield Tensors on GPU ``device``; each batch is copied there as it is produced."""
        return self._configured(as_tensor=True, device=device)

    def from_gpu(self) -> "Dataset":
        """Yield data in host memory again."""
        return self._configured(device=None)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        """The number of items (examples, or batches once batched) in an epoch."""
        n = len(self.inputs)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _indices(self, i: int):
        order = self._order if self._order is not None else np.arange(len(self.inputs))
        if self.batch_size is None:
            return order[i]
        return order[i * self.batch_size : (i + 1) * self.batch_size]

    def __getitem__(self, i: int):
        if not -len(self) <= i < len(self):
            raise IndexError(f"{type(self).__name__}: index {i} out of range for {len(self)}")
        index = self._indices(i % len(self))
        return self._convert(self.inputs[index]), self._convert(self.outputs[index])

    def __iter__(self):
        self._start_epoch()
        return self

    def _start_epoch(self) -> None:
        n = len(self.inputs)
        self._order = self.rng.permutation(n) if self.shuffled else None
        self._cursor = 0

    def __next__(self):
        if self._cursor == 0 and self._order is None and self.shuffled:
            self._start_epoch()
        if self._cursor >= len(self):
            self._order, self._cursor = None, 0  # the next call starts a new epoch
            raise StopIteration
        item = self[self._cursor]
        self._cursor += 1
        return item

    def _convert(self, array, batched: bool | None = None):
        """numpy array -> what this dataset yields (array, or Tensor on the chosen device)."""
        batched = self.batch_size is not None if batched is None else batched
        if not self.as_tensor:
            return array
        array = np.asarray(array)
        if np.issubdtype(array.dtype, np.floating):
            array = array.astype(backend.DEFAULT_FLOAT, copy=False)
        tensor = Tensor(array, requires_grad=False, is_batched=batched)
        return tensor.to_gpu(self.device) if self.device is not None else tensor

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n={len(self.inputs)}, batch_size={self.batch_size}, "
            f"shuffled={self.shuffled}, as_tensor={self.as_tensor}, device={self.device})"
        )


class InfiniteBatchDataset(Dataset):
    """Random batches of ``batch_size`` examples (drawn with replacement), forever.

    Useful when training is counted in steps rather than epochs.
    """

    @checks.arguments(batch_size=checks.positive_int, seed=checks.seed)
    def __init__(self, inputs, outputs, batch_size: int, seed: int | None = None):
        super().__init__(inputs, outputs)
        self.batch_size, self.shuffled, self.rng = batch_size, True, _new_rng(seed)

    def __iter__(self):
        return self

    def __next__(self):
        index = self.rng.integers(0, len(self.inputs), size=self.batch_size)
        return self._convert(self.inputs[index]), self._convert(self.outputs[index])


class CausalLMDataset(Dataset):
    """Next-token prediction windows from one long sequence of token ids.

    Each item is (inputs, targets) with ``targets`` the window shifted by one token: (T,)
    each, or (batch_size, T) after ``batch()``. Windows start at random offsets, nanoGPT
    style, forever; nothing but the tokens is stored (memory O(len(tokens))). ``seed``
    (or ``shuffle(seed)``) makes the stream reproducible; by default it is seeded from
    ``np.random``. ``iterate_sequential()`` walks every non-overlapping window in order, for
    evaluation.

    Data parallelism: with ``world_size`` N > 1 (and the same ``seed`` on every rank), each
    step draws the offsets of a global batch of N x batch_size windows from the one seeded
    stream, and rank ``rank`` keeps rows [rank * batch_size, (rank + 1) * batch_size). So the
    ranks see different windows, and together exactly the batch that one process with
    batch_size N x batch_size would draw; the generator advances alike on every rank and for
    every N, so its state resumes a run at any world size. ``iterate_sequential`` splits its
    global batches the same way.

    A subclass reading its ids from elsewhere (``tricycle_datasets.shards.TokenShards``, from
    files on disk) calls ``_init_windows`` and overrides ``_read`` (the ids of some windows)
    and ``_starts`` (where the next global batch starts); batching, the random draw, the
    sequential pass, indexing and the checks are these.

    Args:
        tokens: a 1-D sequence of integer ids in [0, vocab_size): a numpy array or anything
            with ``__array__`` (such as the Shakespeare corpus).
        vocab_size, batch_size, context_window: as named (``batch_size`` per rank).
        seed: seeds the window offsets.
        rank, world_size: this process's place among the data-parallel processes.
    """

    @checks.arguments(
        vocab_size=checks.positive_int,
        batch_size=checks.positive_int,
        context_window=checks.positive_int,
        seed=checks.seed,
        rank=checks.non_negative_int,
        world_size=checks.positive_int,
    )
    def __init__(
        self,
        tokens,
        vocab_size: int,
        batch_size: int,
        context_window: int,
        seed: int | None = None,
        rank: int = 0,
        world_size: int = 1,
    ):
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
            raise TypeError(
                f"CausalLMDataset: tokens must be a 1-D array of integer ids, got dtype "
                f"{tokens.dtype} with shape {tokens.shape}"
            )
        if len(tokens) <= context_window:
            raise ValueError(
                f"CausalLMDataset: {len(tokens)} tokens are too few for a context window of "
                f"{context_window} (need at least {context_window + 1})"
            )
        self._init_windows(
            len(tokens), vocab_size, batch_size, context_window, seed, rank, world_size
        )
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= vocab_size:
            raise ValueError(
                f"CausalLMDataset: token ids must lie in [0, {vocab_size}) for vocab_size "
                f"{vocab_size}, got ids in [{low}, {high}]"
            )
        self.tokens = tokens

    def _init_windows(
        self,
        n_tokens: int,
        vocab_size: int,
        batch_size: int,
        context_window: int,
        seed: int | None,
        rank: int,
        world_size: int,
    ) -> None:
        """What the windows need: the stream's length, the shapes, this rank's place (checked
        against ``world_size``) and the seeded draw."""
        if rank >= world_size:
            checks.fail(type(self).__name__, "rank", f"below world_size ({world_size})", rank)
        self.n_tokens = int(n_tokens)
        self.vocab_size, self.context_window = int(vocab_size), int(context_window)
        self.default_batch_size = int(batch_size)
        self.rank, self.world_size = int(rank), int(world_size)
        self._init_config(shuffled=True, seed=seed)

    @property
    def n_windows(self) -> int:
        """The number of distinct windows (start offsets)."""
        return self.n_tokens - self.context_window

    @_batch_arguments
    def batch(self, batch_size: int | None = None, drop_last: bool = False) -> "CausalLMDataset":
        """Yield (batch_size, T) batches; by default the constructor's batch_size."""
        return super().batch(batch_size or self.default_batch_size, drop_last)

    @checks.arguments(seed=checks.seed)
    def shuffle(self, seed: int | None = None) -> "CausalLMDataset":
        """Windows are always drawn at random offsets; this re-seeds the draw if ``seed``."""
        return self._configured(rng=_new_rng(seed)) if seed is not None else self._configured()

    def state_dict(self) -> dict:
        """The random draw's state, to continue the stream exactly (JSON-able); the same
        interface as ``tricycle_datasets.shards.TokenShards``."""
        return {"rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Continue from a ``state_dict()``."""
        if not isinstance(state, dict) or set(state) != {"rng"}:
            raise ValueError(
                f"CausalLMDataset.load_state_dict: expected {{'rng': ...}}, got {state!r}"
            )
        self.rng.bit_generator.state = state["rng"]

    def __len__(self) -> int:
        """The number of windows (or batches once batched) ``iterate_sequential`` yields, over
        all ranks."""
        n = (self.n_tokens - 1) // self.context_window  # each needs T + 1 tokens
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def _read(self, starts: np.ndarray, length: int) -> np.ndarray:
        """Ids ``[start, start + length)`` of the stream for each start: (n, length) int64."""
        return self.tokens[starts[:, None] + np.arange(length)].astype(np.int64)

    def _windows(self, starts: np.ndarray):
        """(inputs, targets) for windows starting at ``starts``: (n, T) int64 each."""
        windows = self._read(starts, self.context_window + 1)  # (n, T + 1)
        return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])

    def _starts(self, n: int) -> np.ndarray:
        """The offsets of the next global batch of ``n`` windows: uniformly random."""
        return self.rng.integers(0, self.n_windows, size=n)

    def __getitem__(self, i: int):
        """The window starting at token ``i``: ((T,), (T,))."""
        if not checks.is_integer(i) or not 0 <= i < self.n_windows:
            raise IndexError(
                f"{type(self).__name__}: window {i!r} out of range [0, {self.n_windows})"
            )
        inputs, targets = self._windows(np.array([i], dtype=np.int64))
        return self._convert(inputs[0]), self._convert(targets[0])

    def __iter__(self):
        return self

    def __next__(self):
        n = self.batch_size or 1
        starts = self._starts(n * self.world_size)  # (world_size * n,): the global batch
        inputs, targets = self._windows(starts[self.rank * n : (self.rank + 1) * n])
        if self.batch_size is None:
            inputs, targets = inputs[0], targets[0]
        return self._convert(inputs), self._convert(targets)

    @checks.arguments(n_batches=checks.positive_int, split=checks.one_of(("rows", "batches")))
    def iterate_random(self, n_batches: int, split: str = "rows"):
        """The next ``n_batches`` batches of the random stream, as ``next()`` draws them.
        ``split`` "rows": this rank's rows of each global batch (``next()`` itself);
        "batches": whole global batches of N x batch_size windows, rank r the r-th of every
        N, for evaluation in 1/N of the launches. Either way every rank draws every global
        batch, so the generator advances alike, and the ranks together see the same windows
        as one process would."""
        if split == "rows" or self.world_size == 1:
            for _ in range(n_batches):
                yield next(self)
            return
        n = self.batch_size or 1
        for k in range(n_batches):
            starts = self._starts(n * self.world_size)  # (world_size * n,): the global batch
            if k % self.world_size == self.rank:
                inputs, targets = self._windows(starts)
                yield self._convert(inputs, batched=True), self._convert(targets, batched=True)

    @checks.arguments(
        max_batches=checks.optional(checks.positive_int),
        split=checks.one_of(("rows", "batches")),
    )
    def iterate_sequential(self, max_batches: int | None = None, split: str = "rows"):
        """Every non-overlapping window in order (offsets 0, T, 2T, ...), in batches of
        ``batch_size`` (the constructor's if not batched); deterministic, for evaluation.
        With ``world_size`` N the batches are global ones of N x batch_size windows (the
        first ``max_batches`` of them). ``split`` "rows": this rank gets its rows of each,
        as in training; "batches": whole global batches, rank r the r-th of every N (the
        ranks then evaluate in 1/N of the launches: a batch's cost on a GPU hardly depends
        on its rows). A rank whose share of a short last batch is empty skips it."""
        batch_size = self.batch_size or self.default_batch_size
        n = len(self.unbatch())
        offsets = np.arange(n, dtype=np.int64) * self.context_window
        whole = split == "batches"
        mine = slice(None) if whole else slice(self.rank * batch_size, (self.rank + 1) * batch_size)
        for k, start in enumerate(range(0, n, batch_size * self.world_size)):
            if max_batches is not None and k >= max_batches:
                return
            if whole and k % self.world_size != self.rank:
                continue
            rows = offsets[start : start + batch_size * self.world_size][mine]
            if len(rows):
                inputs, targets = self._windows(rows)
                yield self._convert(inputs, batched=True), self._convert(targets, batched=True)

    def __repr__(self) -> str:
        return (
            f"CausalLMDataset(tokens={len(self.tokens)}, vocab_size={self.vocab_size}, "
            f"context_window={self.context_window}, batch_size={self.batch_size}, "
            f"as_tensor={self.as_tensor}, device={self.device}"
            + (f", rank={self.rank}, world_size={self.world_size})" if self.world_size > 1 else ")")
        )
