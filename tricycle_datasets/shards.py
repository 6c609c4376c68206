"""Token shards on disk, and the memory-mapped loader that trains from them.

`python -m tricycle_datasets.prepare` writes a directory:

    index.json          what is there: the shards of each split, in order, and their sizes
    tokeniser.json      the tokeniser that made the ids
    train-00000.bin ... the training split, in order
    valid-00000.bin ... the validation split

A shard is a 32-byte header, then the token ids as little-endian unsigned integers:

    magic b"TRCYTOK\\0" | version (uint32) | bytes per id (uint32: 2 or 4) | token count
    (uint64) | 8 reserved bytes

`TokenShards` reads one split as a single stream of ids (the shards concatenated) and yields
next-token windows exactly as `CausalLMDataset` does (see tricycle/dataset.py): random
windows, or a sequential pass, split between the ranks of a data-parallel run, with a
`state_dict()` that makes a resumed run continue where it stopped. Memory does not grow with
the corpus: each batch maps the shards it needs, copies its windows out and unmaps them
again (a mapping kept open would keep every page it ever touched resident).
"""

import json
import os
import struct
import warnings
from pathlib import Path

import numpy as np

from tricycle import checks
from tricycle.dataset import Dataset, _new_rng
from tricycle.tokeniser import load_tokeniser

MAGIC = b"TRCYTOK\0"
VERSION = 1
HEADER = struct.Struct("<8sIIQ8x")  # magic, version, bytes per id, token count, reserved
INDEX = "index.json"
INDEX_FORMAT = "tricycle-shards"
TOKENISER = "tokeniser.json"
SPLITS = ("train", "valid")
DTYPES = {2: np.dtype("<u2"), 4: np.dtype("<u4")}


class ShardError(ValueError):
    """A shard directory, index or shard file is missing, corrupt or inconsistent."""


# ------------------------------------------------------------------ the file format
def shard_dtype(n_tokens: int) -> np.dtype:
    """uint16 while every id fits, else uint32."""
    return DTYPES[2] if n_tokens <= 1 << 16 else DTYPES[4]


def pack_header(dtype: np.dtype, n_tokens: int) -> bytes:
    """The 32-byte header of a shard holding `n_tokens` ids of `dtype`."""
    return HEADER.pack(MAGIC, VERSION, dtype.itemsize, n_tokens)


def read_header(path: str | os.PathLike) -> tuple[np.dtype, int]:
    """(dtype, token count) of a shard, checked against the file's size."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = f.read(HEADER.size)
        size = path.stat().st_size
    except OSError as e:
        raise ShardError(f"cannot read shard {path}: {e}") from None
    if len(raw) < HEADER.size:
        raise ShardError(f"{path}: {len(raw)} bytes is too short for a shard header")
    magic, version, itemsize, n_tokens = HEADER.unpack(raw)
    if magic != MAGIC:
        raise ShardError(f"{path}: not a tricycle token shard (magic {magic!r})")
    if version != VERSION:
        raise ShardError(f"{path}: shard version {version} (this tricycle reads {VERSION})")
    if itemsize not in DTYPES:
        raise ShardError(f"{path}: {itemsize} bytes per id; expected 2 or 4")
    if size != HEADER.size + n_tokens * itemsize:
        raise ShardError(
            f"{path}: {size} bytes, but its header says {n_tokens} ids of {itemsize} bytes "
            f"({HEADER.size + n_tokens * itemsize} bytes): truncated or corrupt"
        )
    return DTYPES[itemsize], n_tokens


def read_index(directory: str | os.PathLike) -> dict:
    """The index of a shard directory, checked for shape (not the shards themselves)."""
    path = Path(directory) / INDEX
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ShardError(
            f"{directory} has no {INDEX}: make one with python -m tricycle_datasets.prepare"
        ) from None
    except (OSError, ValueError) as e:
        raise ShardError(f"{path}: unreadable ({e})") from None
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT:
        raise ShardError(f"{path}: not a tricycle shard index")
    if index.get("version") != VERSION:
        raise ShardError(f"{path}: index version {index.get('version')!r} (this reads {VERSION})")
    splits = index.get("splits")
    if not isinstance(splits, dict) or not all(
        isinstance(splits.get(name), list)
        and all(
            isinstance(s, dict)
            and isinstance(s.get("file"), str)
            and Path(s["file"]).name == s["file"]  # a file in this directory, nothing else
            and isinstance(s.get("tokens"), int)
            for s in splits[name]
        )
        for name in SPLITS
    ):
        raise ShardError(f"{path}: malformed 'splits' (expected train and valid shard lists)")
    if not isinstance(index.get("n_tokens"), int) or not isinstance(index.get("tokeniser"), str):
        raise ShardError(f"{path}: missing n_tokens or tokeniser")
    return index


# ------------------------------------------------------------------ the loader
class TokenShards(Dataset):
    """Next-token prediction windows from one split of a shard directory.

    Yields what ``CausalLMDataset`` yields: after ``batch()``, ``next(shards)`` is
    (inputs, targets), (batch_size, T) int64 ids each (Tensors after ``to_tensor()``, on the
    GPU after ``to_gpu()``), ``targets`` being the windows shifted by one token.

    Args:
        directory: written by ``python -m tricycle_datasets.prepare``.
        split: "train" or "valid".
        batch_size, context_window: B and T.
        seed: seeds the random windows (the same on every rank).
        order: "random": windows at uniformly random offsets, forever (nanoGPT); or
            "sequential": consecutive windows (stride T) from the start, wrapping around
            (GPT-2's fineweb loader).
        rank, world_size: for data-parallel training. Every rank draws the same global batch
            of ``world_size * batch_size`` windows and takes its own ``batch_size``: the
            ranks see different windows, and the run sees the same data whatever the
            world size.
        vocab_size: the model's vocabulary size; at least the tokeniser's number of ids
            (default: exactly that).

    ``state_dict()``/``load_state_dict()`` save and restore the position in the stream (the
    random generator's state and the sequential offset) for exact resumption.
    """

    @checks.arguments(
        split=checks.one_of(SPLITS),
        batch_size=checks.positive_int,
        context_window=checks.positive_int,
        seed=checks.seed,
        order=checks.one_of(("random", "sequential")),
        rank=checks.non_negative_int,
        world_size=checks.positive_int,
        vocab_size=checks.optional(checks.positive_int),
    )
    def __init__(
        self,
        directory: str | os.PathLike,
        split: str = "train",
        batch_size: int = 16,
        context_window: int = 1024,
        seed: int | None = None,
        order: str = "random",
        rank: int = 0,
        world_size: int = 1,
        vocab_size: int | None = None,
    ):
        if rank >= world_size:
            checks.fail("TokenShards", "rank", f"below world_size ({world_size})", rank)
        self.directory = Path(directory)
        index = read_index(self.directory)
        if not index.get("complete", False):
            warnings.warn(
                f"TokenShards: {self.directory} is not complete (prepare was interrupted or is "
                f"still running): reading the {split} shards written so far; run the same "
                "prepare command again to finish it",
                stacklevel=2,
            )
        if vocab_size is None:
            vocab_size = index["n_tokens"]
        if not checks.is_integer(vocab_size) or vocab_size < index["n_tokens"]:
            raise ValueError(
                f"TokenShards: vocab_size {vocab_size!r} is smaller than the {index['n_tokens']} "
                f"ids of {self.directory / index['tokeniser']}"
            )

        self.paths, sizes = [], []
        dtypes = set()
        for shard in index["splits"][split]:
            path = self.directory / shard["file"]
            dtype, n = read_header(path)
            if n != shard["tokens"]:
                raise ShardError(f"{path}: holds {n} ids, but {INDEX} says {shard['tokens']}")
            self.paths.append(path)
            sizes.append(n)
            dtypes.add(dtype)
        if len(dtypes) > 1:
            raise ShardError(f"{self.directory}: the {split} shards mix id sizes {dtypes}")
        self.dtype = dtypes.pop() if dtypes else DTYPES[2]
        self.bounds = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])  # shard starts
        self.n_tokens = int(self.bounds[-1])
        if self.n_tokens <= context_window:
            raise ValueError(
                f"TokenShards: the {split} split of {self.directory} has {self.n_tokens} tokens, "
                f"too few for a context window of {context_window} (need at least "
                f"{context_window + 1})"
            )
        self.split, self.order = split, order
        self.vocab_size, self.context_window = int(vocab_size), int(context_window)
        self.default_batch_size = int(batch_size)
        self.rank, self.world_size = int(rank), int(world_size)
        self.index = index
        self._init_config(shuffled=True, seed=seed)
        self.position = 0  # sequential order: where the next global batch starts

    @property
    def n_windows(self) -> int:
        """The number of distinct windows (start offsets)."""
        return self.n_tokens - self.context_window

    @property
    def tokeniser(self):
        """The tokeniser that wrote the ids (read from the directory on each access)."""
        return load_tokeniser(self.directory / self.index["tokeniser"])

    # ------------------------------------------------------------------ configuration
    def batch(self, batch_size: int | None = None, drop_last: bool = False) -> "TokenShards":
        """Yield (batch_size, T) batches; by default the constructor's batch_size."""
        return super().batch(batch_size or self.default_batch_size, drop_last)

    def shuffle(self, seed: int | None = None) -> "TokenShards":
        """Windows are drawn at random offsets anyway; this re-seeds the draw if ``seed``."""
        return self._configured(rng=_new_rng(seed)) if seed is not None else self._configured()

    # ------------------------------------------------------------------ resumption
    def state_dict(self) -> dict:
        """Where the stream is: enough to continue it exactly (JSON-able)."""
        return {
            "order": self.order,
            "rng": self.rng.bit_generator.state,
            "position": self.position,
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from a ``state_dict()`` (of this split, in the same order)."""
        if not isinstance(state, dict) or set(state) != {"order", "rng", "position"}:
            raise ValueError(
                f"TokenShards.load_state_dict: expected keys order, rng, position; got "
                f"{sorted(state) if isinstance(state, dict) else type(state).__name__}"
            )
        if state["order"] != self.order:
            raise ValueError(
                f"TokenShards.load_state_dict: the state is of a {state['order']!r} stream, "
                f"this one is {self.order!r}"
            )
        position = state["position"]
        if not checks.is_integer(position) or not 0 <= position < self.n_tokens:
            raise ValueError(
                f"TokenShards.load_state_dict: position {position!r} is outside the "
                f"{self.n_tokens} tokens of the {self.split} split"
            )
        self.rng.bit_generator.state = state["rng"]
        self.position = int(position)

    # ------------------------------------------------------------------ access
    def __len__(self) -> int:
        """The number of windows (or batches once batched) ``iterate_sequential`` yields over
        all ranks."""
        n = (self.n_tokens - 1) // self.context_window  # each needs T + 1 tokens
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __getitem__(self, i: int):
        """The window starting at token ``i``: ((T,), (T,))."""
        if not checks.is_integer(i) or not 0 <= i < self.n_windows:
            raise IndexError(f"TokenShards: window {i!r} out of range [0, {self.n_windows})")
        inputs, targets = self._windows(np.array([i]))
        return self._convert(inputs[0]), self._convert(targets[0])

    def __iter__(self):
        return self

    def __next__(self):
        B, T, W = self.batch_size or 1, self.context_window, self.world_size
        if self.order == "random":
            starts = self.rng.integers(0, self.n_windows, size=W * B)  # (W * B,): global batch
        else:
            if self.position + W * B * T + 1 > self.n_tokens:
                self.position = 0  # too little left for a whole batch: start again
            starts = self.position + np.arange(W * B, dtype=np.int64) * T
            self.position += W * B * T
        inputs, targets = self._windows(starts[self.rank * B : (self.rank + 1) * B])
        if self.batch_size is None:
            inputs, targets = inputs[0], targets[0]
        return self._convert(inputs), self._convert(targets)

    def iterate_sequential(self, max_batches: int | None = None):
        """Every non-overlapping window in order (offsets 0, T, 2T, ...), in batches of
        ``batch_size``; deterministic, for evaluation. With several ranks, rank r takes
        batches r, r + world_size, ...: each rank yields up to ``max_batches`` batches."""
        batch_size = self.batch_size or self.default_batch_size
        n = (self.n_tokens - 1) // self.context_window
        offsets = np.arange(n, dtype=np.int64) * self.context_window
        batch_starts = range(self.rank * batch_size, n, self.world_size * batch_size)
        for k, start in enumerate(batch_starts):
            if max_batches is not None and k >= max_batches:
                return
            inputs, targets = self._windows(offsets[start : start + batch_size])
            yield self._convert(inputs, batched=True), self._convert(targets, batched=True)

    def _windows(self, starts: np.ndarray):
        """(inputs, targets) for windows starting at ``starts``: (n, T) int64 each."""
        windows = self.read(starts, self.context_window + 1)  # (n, T + 1)
        high = int(windows.max())
        if high >= self.vocab_size:
            raise ShardError(
                f"{self.directory}: id {high} in the {self.split} split is outside the "
                f"vocabulary [0, {self.vocab_size})"
            )
        return np.ascontiguousarray(windows[:, :-1]), np.ascontiguousarray(windows[:, 1:])

    def read(self, starts: np.ndarray, length: int) -> np.ndarray:
        """Ids ``[start, start + length)`` of the split's stream for each start: (n, length)
        int64. A span may cross from one shard into the next. The shards are mapped for
        this call only."""
        out = np.empty((len(starts), length), dtype=np.int64)
        maps: dict[int, np.ndarray] = {}
        for row, start in enumerate(np.asarray(starts, dtype=np.int64).tolist()):
            done = 0
            while done < length:
                pos = start + done
                shard = int(np.searchsorted(self.bounds, pos, side="right")) - 1
                if shard not in maps:
                    maps[shard] = self._map(shard)
                local = pos - int(self.bounds[shard])
                take = min(length - done, len(maps[shard]) - local)
                out[row, done : done + take] = maps[shard][local : local + take]
                done += take
        return out

    def _map(self, shard: int) -> np.ndarray:
        n = int(self.bounds[shard + 1] - self.bounds[shard])
        return np.memmap(self.paths[shard], self.dtype, "r", offset=HEADER.size, shape=(n,))

    def __repr__(self) -> str:
        return (
            f"TokenShards({str(self.directory)!r}, split={self.split!r}, "
            f"tokens={self.n_tokens}, shards={len(self.paths)}, order={self.order!r}, "
            f"context_window={self.context_window}, batch_size={self.batch_size}, "
            f"rank={self.rank}/{self.world_size}, device={self.device})"
        )
