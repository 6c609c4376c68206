"""Tokenisers: byte-level BPE (as in GPT-2, minbpe) and a character-level one.

BPETokeniser
    The first 256 ids are the raw bytes of UTF-8, so every string can be encoded and
    `decode(encode(s)) == s` exactly. Training repeatedly merges the most frequent adjacent
    pair of ids into a new id, `vocab_size - 256` times. Text is first split into chunks by a
    GPT-2-like regex (words with their leading space, numbers, punctuation, whitespace) so a
    merge never crosses a chunk boundary.

CharTokeniser
    One id per distinct character of the training text, in sorted order.

Both save to and load from a small JSON file (no code execution), written atomically.
`StreamDecoder` turns a stream of ids into text as soon as the bytes form whole characters,
which is what sampling one token at a time needs.
"""

import codecs
import heapq
import json
import os
import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable

import numpy as np

from tricycle.files import atomic_write

# GPT-2's split pattern uses \p{L} and \p{N}, which the stdlib `re` lacks. In `re`, `\w` is
# letters, digits and "_", so `[^\W\d_]` is "letters" and `[^\s\w]|_` is "everything else that
# is not whitespace". The alternatives cover every character, so the chunks concatenate back
# to the original text.
GPT2_SPLIT_PATTERN = (
    r"'(?:[sdmt]|ll|ve|re)"  # English contractions: 's 'd 'm 't 'll 've 're
    r"| ?[^\W\d_]+"  # a run of letters, with an optional leading space
    r"| ?\d+"  # a run of digits, with an optional leading space
    r"| ?(?:[^\s\w]|_)+"  # a run of punctuation/symbols, with an optional leading space
    r"|\s+(?!\S)"  # whitespace, leaving the last space to the word that follows it
    r"|\s+"  # trailing whitespace
)

N_BYTES = 256
_FORMAT_VERSION = 1
# Bound on the per-tokeniser chunk -> ids cache, so encoding a huge corpus cannot grow memory
# without limit. Natural text has far fewer distinct chunks than this.
_CACHE_LIMIT = 1 << 20


class BPETokeniser:
    """Byte-level byte-pair-encoding tokeniser.

    Args:
        vocab_size: the configured vocabulary size, at least 256 (the raw bytes). Training
            learns up to `vocab_size - 256` merges. If the training text runs out of pairs
            first, training stops early with a warning: `vocab_size` keeps the configured
            value (so a model built with it still covers every id) and `n_tokens` says how
            many ids actually exist.
        pattern: the regex that splits text into chunks before merging.

    An untrained tokeniser is a plain byte tokeniser (no merges).
    """

    def __init__(self, vocab_size: int, pattern: str = GPT2_SPLIT_PATTERN):
        if not isinstance(vocab_size, int | np.integer) or vocab_size < N_BYTES:
            raise ValueError(
                f"BPETokeniser: vocab_size must be an int >= {N_BYTES} (one id per byte), "
                f"got {vocab_size!r}"
            )
        self.vocab_size = int(vocab_size)
        self.pattern = pattern
        self._regex = re.compile(pattern)
        self._set_merges([])

    # ----------------------------------------------------------------------------- training
    def train(self, text: str) -> "BPETokeniser":
        """Learn up to `vocab_size - 256` merges from `text`; returns self.

        Ties between equally frequent pairs go to the smallest pair `(a, b)`, so training is
        deterministic.
        """
        n_merges = self.vocab_size - N_BYTES
        chunk_counts = Counter(self._regex.findall(text))

        # Each distinct chunk ("word") is trained once, weighted by how often it occurs.
        words: list[list[int]] = [list(chunk.encode("utf-8")) for chunk in chunk_counts]
        freqs: list[int] = list(chunk_counts.values())

        # pair -> total count over the corpus, and pair -> indices of words that contain it.
        # `where` may keep words that no longer contain the pair; merging them is a no-op.
        pair_counts: dict[tuple[int, int], int] = defaultdict(int)
        where: dict[tuple[int, int], set[int]] = defaultdict(set)
        for i, (word, freq) in enumerate(zip(words, freqs)):
            for pair in zip(word, word[1:]):
                pair_counts[pair] += freq
                where[pair].add(i)

        # A max-heap (by count, then smallest pair) with lazy deletion: an entry is live only
        # if its count still equals the pair's current count.
        heap = [(-count, pair) for pair, count in pair_counts.items()]
        heapq.heapify(heap)

        merges: list[tuple[int, int]] = []
        while len(merges) < n_merges and heap:
            neg_count, pair = heapq.heappop(heap)
            if pair_counts.get(pair) != -neg_count:
                continue  # stale entry
            new_id = N_BYTES + len(merges)
            merges.append(pair)

            # Re-count only the words that contained the pair. The count changes are summed
            # over all those words first so each changed pair is pushed on the heap once.
            delta: dict[tuple[int, int], int] = defaultdict(int)
            for i in where.pop(pair):
                word = words[i]
                new_word = _merge(word, pair, new_id)
                if len(new_word) == len(word):
                    continue  # stale index entry: this word no longer has the pair
                freq = freqs[i]
                for p in zip(word, word[1:]):
                    delta[p] -= freq
                for p in zip(new_word, new_word[1:]):
                    delta[p] += freq
                    if new_id in p:  # only pairs with the new id are new to this word
                        where[p].add(i)
                words[i] = new_word

            for p, d in delta.items():
                if d == 0:
                    continue
                count = pair_counts[p] + d
                if count > 0:
                    pair_counts[p] = count
                    heapq.heappush(heap, (-count, p))
                else:
                    del pair_counts[p]

        if len(merges) < n_merges:
            warnings.warn(
                f"BPETokeniser.train: the text has only enough pairs for {len(merges)} of "
                f"{n_merges} merges; vocabulary has {N_BYTES + len(merges)} of the configured "
                f"{self.vocab_size} ids",
                stacklevel=2,
            )
        self._set_merges(merges)
        return self

    def _set_merges(self, merges: list[tuple[int, int]]) -> None:
        """Install merges and rebuild everything derived from them."""
        self.merges = [(int(a), int(b)) for a, b in merges]
        # Merge rank == order learned; the merged pair gets id 256 + rank.
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self._vocab = [bytes([b]) for b in range(N_BYTES)]
        for a, b in self.merges:
            self._vocab.append(self._vocab[a] + self._vocab[b])
        self._cache: dict[str, list[int]] = {}

    @property
    def n_tokens(self) -> int:
        """Number of ids that exist: 256 + learned merges (<= vocab_size)."""
        return len(self._vocab)

    # ----------------------------------------------------------------------------- encoding
    def encode(self, text: str) -> np.ndarray:
        """Encode a string to a 1-D int32 array of token ids."""
        ids: list[int] = []
        cache = self._cache
        try:
            for chunk in self._regex.findall(text):
                chunk_ids = cache.get(chunk)
                if chunk_ids is None:
                    chunk_ids = self._encode_chunk(chunk.encode("utf-8"))
                    if len(cache) >= _CACHE_LIMIT:
                        cache.clear()
                    cache[chunk] = chunk_ids
                ids.extend(chunk_ids)
        except UnicodeEncodeError:
            pos = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
            raise ValueError(
                f"BPETokeniser.encode: character {text[pos]!r} at position {pos} has no UTF-8 "
                "encoding (a lone surrogate)"
            ) from None
        return np.array(ids, dtype=np.int32)  # (n_tokens,)

    def _encode_chunk(self, chunk: bytes) -> list[int]:
        """Apply merges to one chunk, always merging the earliest-learned pair present first,
        which reproduces exactly the segmentation training arrived at."""
        ids = list(chunk)
        ranks = self._ranks
        while len(ids) >= 2:
            pair = min(zip(ids, ids[1:]), key=lambda p: ranks.get(p, _NOT_A_MERGE))
            rank = ranks.get(pair)
            if rank is None:
                break  # no pair in the chunk was ever merged
            ids = _merge(ids, pair, N_BYTES + rank)
        return ids

    # ----------------------------------------------------------------------------- decoding
    def decode_bytes(self, ids: Iterable[int] | np.ndarray | int) -> bytes:
        """The bytes that `ids` (an int or a 1-D sequence of ints) stand for."""
        vocab = self._vocab
        return b"".join([vocab[i] for i in _check_ids(ids, len(vocab), "BPETokeniser")])

    def decode(self, ids: Iterable[int] | np.ndarray | int) -> str:
        """Decode ids to text. Exact for the output of `encode`; a sequence of ids whose bytes
        are not valid UTF-8 (e.g. a prefix cut mid-character) decodes with U+FFFD in their
        place."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

    # ------------------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike) -> None:
        """Write the tokeniser to a JSON file, atomically."""
        _save_json(
            path,
            {
                "format": "tricycle-bpe",
                "version": _FORMAT_VERSION,
                "vocab_size": self.vocab_size,
                "pattern": self.pattern,
                "merges": [list(pair) for pair in self.merges],
            },
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> "BPETokeniser":
        """Read a tokeniser written by `save`. Raises ValueError on a corrupt file."""
        data = _load_json(path, "tricycle-bpe")
        vocab_size, pattern, merges = (
            data.get("vocab_size"),
            data.get("pattern"),
            data.get("merges"),
        )
        if not isinstance(vocab_size, int) or vocab_size < N_BYTES:
            raise ValueError(f"{path}: vocab_size must be an int >= {N_BYTES}, got {vocab_size!r}")
        if not isinstance(pattern, str):
            raise ValueError(f"{path}: pattern must be a string, got {pattern!r}")
        if not isinstance(merges, list) or len(merges) > vocab_size - N_BYTES:
            raise ValueError(
                f"{path}: merges must be a list of at most vocab_size - {N_BYTES} = "
                f"{vocab_size - N_BYTES} pairs"
            )
        for rank, pair in enumerate(merges):
            # A merge may only combine ids that exist before it: bytes and earlier merges.
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(type(x) is int and 0 <= x < N_BYTES + rank for x in pair)
            ):
                raise ValueError(
                    f"{path}: merge {rank} is {pair!r}; expected [a, b] with 0 <= a, b < "
                    f"{N_BYTES + rank}"
                )
        try:
            tokeniser = cls(vocab_size, pattern=pattern)
        except re.error as e:
            raise ValueError(f"{path}: pattern {pattern!r} is not a valid regex: {e}") from None
        tokeniser._set_merges([tuple(pair) for pair in merges])
        return tokeniser


class CharTokeniser:
    """Character-level tokeniser: one id per distinct character of the training text, sorted.

    `vocab_size` is the number of characters. Encoding a character that was not in the
    training text raises ValueError.
    """

    def __init__(self, chars: Iterable[str] = ()):
        self._set_chars(sorted(set(chars)))

    def train(self, text: str) -> "CharTokeniser":
        """Build the vocabulary from the characters in `text`; returns self."""
        self._set_chars(sorted(set(text)))
        return self

    def _set_chars(self, chars: list[str]) -> None:
        self.chars = chars
        self._ids = {ch: i for i, ch in enumerate(chars)}

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters."""
        return len(self.chars)

    n_tokens = vocab_size

    def encode(self, text: str) -> np.ndarray:
        """Encode a string to a 1-D int32 array of ids, one per character."""
        try:
            return np.array([self._ids[ch] for ch in text], dtype=np.int32)  # (len(text),)
        except KeyError as e:
            ch = e.args[0]
            raise ValueError(
                f"CharTokeniser.encode: character {ch!r} at position {text.index(ch)} is not "
                f"in the vocabulary of {self.vocab_size} characters"
            ) from None

    def decode(self, ids: Iterable[int] | np.ndarray | int) -> str:
        """Decode ids (an int or a 1-D sequence of ints) to text."""
        chars = self.chars
        return "".join([chars[i] for i in _check_ids(ids, len(chars), "CharTokeniser")])

    def decode_bytes(self, ids: Iterable[int] | np.ndarray | int) -> bytes:
        """UTF-8 bytes of `decode(ids)`, for `StreamDecoder`."""
        return self.decode(ids).encode("utf-8")

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokeniser to a JSON file, atomically."""
        _save_json(
            path, {"format": "tricycle-char", "version": _FORMAT_VERSION, "chars": self.chars}
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CharTokeniser":
        """Read a tokeniser written by `save`. Raises ValueError on a corrupt file."""
        chars = _load_json(path, "tricycle-char").get("chars")
        if not (
            isinstance(chars, list)
            and all(isinstance(ch, str) and len(ch) == 1 for ch in chars)
            and chars == sorted(set(chars))
        ):
            raise ValueError(f"{path}: chars must be a sorted list of distinct characters")
        return cls(chars)


def load_tokeniser(path: str | os.PathLike) -> BPETokeniser | CharTokeniser:
    """Load whichever kind of tokeniser `path` holds."""
    kind = _load_json(path, None)["format"]
    return {"tricycle-bpe": BPETokeniser, "tricycle-char": CharTokeniser}[kind].load(path)


class StreamDecoder:
    """Decode ids one (or a few) at a time, returning text as soon as it is complete.

    A BPE token may end in the middle of a multi-byte character; those bytes are held back
    until the rest arrive, so streamed text never shows a spurious U+FFFD.

        stream = StreamDecoder(tokeniser)
        for token in generate(...):
            print(stream.push(token), end="", flush=True)
        print(stream.flush())
    """

    def __init__(self, tokeniser: BPETokeniser | CharTokeniser):
        self.tokeniser = tokeniser
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, ids: Iterable[int] | np.ndarray | int) -> str:
        """Add ids; return the text they complete (possibly "")."""
        return self._utf8.decode(self.tokeniser.decode_bytes(ids))

    def flush(self) -> str:
        """Return whatever is held back (as U+FFFD if it is an incomplete character)."""
        return self._utf8.decode(b"", final=True)


# --------------------------------------------------------------------------------- helpers
_NOT_A_MERGE = float("inf")


def _merge(ids: list[int], pair: tuple[int, int], new_id: int) -> list[int]:
    """Replace every non-overlapping occurrence of `pair` in `ids`, left to right."""
    a, b = pair
    out = []
    i, n = 0, len(ids)
    while i < n:
        if ids[i] == a and i + 1 < n and ids[i + 1] == b:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def _check_ids(ids: Iterable[int] | np.ndarray | int, n_tokens: int, who: str) -> list[int]:
    """Validate token ids at the boundary and return them as a list of Python ints."""
    if not isinstance(ids, np.ndarray):
        ids = np.array(ids if isinstance(ids, int | np.integer) else list(ids))
    ids = np.atleast_1d(ids)
    if ids.ndim != 1:
        raise ValueError(f"{who}.decode: expected a 1-D sequence of ids, got shape {ids.shape}")
    if ids.size == 0:
        return []
    if ids.dtype.kind not in "iu":
        raise ValueError(f"{who}.decode: ids must be integers, got dtype {ids.dtype}")
    bad = (ids < 0) | (ids >= n_tokens)
    if bad.any():
        raise ValueError(
            f"{who}.decode: id {int(ids[bad.argmax()])} is outside the vocabulary [0, {n_tokens})"
        )
    return ids.tolist()


def _save_json(path: str | os.PathLike, data: dict) -> None:
    with atomic_write(path, "w") as f:
        json.dump(data, f, ensure_ascii=True)


def _load_json(path: str | os.PathLike, expected_format: str | None) -> dict:
    """Read a tokeniser file and check its format tag and version."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a valid tokeniser JSON file ({e})") from None
    formats = ("tricycle-bpe", "tricycle-char")
    kind = data.get("format") if isinstance(data, dict) else None
    if kind not in formats or (expected_format is not None and kind != expected_format):
        expected = expected_format or " or ".join(formats)
        raise ValueError(f"{path}: format is {kind!r}, expected {expected!r}")
    if data.get("version") != _FORMAT_VERSION:
        raise ValueError(
            f"{path}: format version {data.get('version')!r} is not supported "
            f"(this tricycle reads version {_FORMAT_VERSION})"
        )
    return data
