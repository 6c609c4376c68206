"""Token shards on disk, and the memory-mapped loader that trains from them.

`python -m tricycle_datasets.prepare` writes a directory:

    index.json          what is there: the shards of each split, in order, and their sizes
    tokeniser.json      the tokeniser that made the ids
    train-00000.bin ... the training split, in order
    valid-00000.bin ... the validation split

A shard is a 32-byte header, then the token ids as little-endian unsigned integers:

    magic b"TRCYTOK\\0" | version (uint32) | bytes per id (uint32: 2 or 4) | token count
    (uint64) | 8 reserved bytes

`TokenShards` reads one split as a single stream of ids (the shards concatenated): it is a
`CausalLMDataset` (see tricycle/dataset.py) whose ids stay on disk. It yields random windows,
or a sequential pass, split between the ranks of a data-parallel run, with a `state_dict()`
that makes a resumed run continue where it stopped. Memory does not grow with the corpus:
each batch maps the shards it needs, copies its windows out and unmaps them again (a mapping
kept open would keep every page it ever touched resident). `load_tokeniser` reads the
directory's tokeniser back, checked against the SHA-256 that the index records.
"""

import json
import mmap
import os
import struct
import warnings
from pathlib import Path

import numpy as np

from tricycle import checks
from tricycle.dataset import CausalLMDataset
from tricycle.tokeniser import load_tokeniser as load_tokeniser_file
from tricycle_datasets.download import sha256_file

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


def load_tokeniser(directory: str | os.PathLike, index: dict | None = None):
    """The tokeniser that wrote a shard directory's ids, checked against the SHA-256 that its
    index (``index``, or the directory's) records: the ids mean nothing under another one."""
    directory = Path(directory)
    index = read_index(directory) if index is None else index
    path = directory / index["tokeniser"]
    recorded = index.get("tokeniser_sha256")
    if recorded is None:
        raise ShardError(f"{directory / INDEX} records no tokeniser_sha256 to check {path} against")
    try:
        actual = sha256_file(path)
    except OSError as e:
        raise ShardError(f"cannot read the tokeniser {path}: {e}") from None
    if actual != recorded:
        raise ShardError(
            f"{path} changed since the shards were written: its SHA-256 is {actual}, "
            f"{directory / INDEX} records {recorded}"
        )
    return load_tokeniser_file(path)


# ------------------------------------------------------------------ the loader
class TokenShards(CausalLMDataset):
    """Next-token prediction windows from one split of a shard directory.

    Yields what ``CausalLMDataset`` yields, and is one (its batching, random draw, sequential
    pass and checks): after ``batch()``, ``next(shards)`` is (inputs, targets),
    (batch_size, T) int64 ids each (Tensors after ``to_tensor()``, on the GPU after
    ``to_gpu()``), ``targets`` being the windows shifted by one token. What is its own: the
    ids are read from the memory-mapped shards, batch by batch, and checked against the
    vocabulary as they are read; and the windows may also come in order.

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
        n_tokens = int(self.bounds[-1])
        if n_tokens <= context_window:
            raise ValueError(
                f"TokenShards: the {split} split of {self.directory} has {n_tokens} tokens, "
                f"too few for a context window of {context_window} (need at least "
                f"{context_window + 1})"
            )
        self._init_windows(n_tokens, vocab_size, batch_size, context_window, seed, rank, world_size)
        self.split, self.order, self.index = split, order, index
        self.position = 0  # sequential order: where the next global batch starts

    @property
    def tokeniser(self):
        """The tokeniser that wrote the ids (read from the directory, and checked against
        the index, on each access)."""
        return load_tokeniser(self.directory, self.index)

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
    def _starts(self, n: int) -> np.ndarray:
        """Random offsets; or, in order, the next ``n`` consecutive windows of the stream,
        from the start again once too little is left for all of them."""
        if self.order == "random":
            return super()._starts(n)
        T = self.context_window
        if self.position + n * T + 1 > self.n_tokens:
            self.position = 0
        starts = self.position + np.arange(n, dtype=np.int64) * T
        self.position += n * T
        return starts

    def _read(self, starts: np.ndarray, length: int) -> np.ndarray:
        """``read``, with the ids checked against the vocabulary (the shards are too large
        to check whole when they are opened)."""
        ids = self.read(starts, length)
        high = int(ids.max())
        if high >= self.vocab_size:
            raise ShardError(
                f"{self.directory}: id {high} in the {self.split} split is outside the "
                f"vocabulary [0, {self.vocab_size})"
            )
        return ids

    def read(self, starts: np.ndarray, length: int) -> np.ndarray:
        """Ids ``[start, start + length)`` of the split's stream for each start: (n, length)
        int64. A span may cross from one shard into the next. The shards are mapped for
        this call only: pages read stay resident only while mapped."""
        starts = np.asarray(starts, dtype=np.int64)  # (n,)
        if len(starts) and (starts.min() < 0 or starts.max() + length > self.n_tokens):
            raise IndexError(
                f"TokenShards.read: spans of {length} ids starting in [{starts.min()}, "
                f"{starts.max()}] leave the {self.n_tokens} ids of the {self.split} split"
            )
        out = np.empty((len(starts), length), dtype=np.int64)
        first = np.searchsorted(self.bounds, starts, side="right") - 1  # (n,) a span's shards:
        last = np.searchsorted(self.bounds, starts + (length - 1), side="right") - 1  # first..last
        mapped: dict[int, mmap.mmap] = {}  # unmapped when dropped, on return

        def ids(shard: int, length: int = 1) -> np.ndarray:
            """Every span of ``length`` ids in ``shard``: (n - length + 1, length), a view."""
            if shard not in mapped:
                mapped[shard] = self._map(shard)
            n, size = int(self.bounds[shard + 1] - self.bounds[shard]), self.dtype.itemsize
            shape, strides = (n - length + 1, length), (size, size)
            return np.ndarray(shape, self.dtype, mapped[shard], HEADER.size, strides)

        inside = first == last
        for shard in np.unique(first[inside]).tolist():  # spans within a shard: one gather each
            rows = np.flatnonzero(inside & (first == shard))
            out[rows] = ids(shard, length)[starts[rows] - self.bounds[shard]]
        for row in np.flatnonzero(~inside).tolist():  # spans across shards: piece by piece
            start = int(starts[row])
            for shard in range(int(first[row]), int(last[row]) + 1):
                low, high = self.bounds[shard], self.bounds[shard + 1]  # the shard's ids
                take = slice(max(start, low), min(start + length, high))  # in the stream
                piece = ids(shard)[take.start - low : take.stop - low, 0]  # (k,)
                out[row, take.start - start : take.stop - start] = piece
        return out

    def _map(self, shard: int) -> mmap.mmap:
        """One shard's file, mapped read-only."""
        fd = os.open(self.paths[shard], os.O_RDONLY)
        try:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)

    def __repr__(self) -> str:
        return (
            f"TokenShards({str(self.directory)!r}, split={self.split!r}, "
            f"tokens={self.n_tokens}, shards={len(self.paths)}, order={self.order!r}, "
            f"context_window={self.context_window}, batch_size={self.batch_size}, "
            f"rank={self.rank}/{self.world_size}, device={self.device})"
        )
