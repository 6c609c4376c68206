"""Tokenisers: byte-level BPE (as in GPT-2, minbpe, tiktoken) and a character-level one.

BPETokeniser
    The first 256 ids are the raw bytes of UTF-8, so every string can be encoded and
    `decode(encode(s)) == s` exactly. Training repeatedly merges the most frequent adjacent
    pair of ids into a new id. Text is first split into chunks by a regex (words with their
    leading space, numbers, punctuation, whitespace) so a merge never crosses a chunk
    boundary. Encoding applies the merges to each chunk exactly as tiktoken does (the
    lowest-ranked adjacent pair first), caching the ids of every distinct chunk, so the ids
    equal tiktoken's for the same merges; with tiktoken installed, long texts are encoded by
    it (verified to give the same ids when it is first used).

CharTokeniser
    One id per distinct character of the training text, in sorted order.

Both save to and load from a small JSON file (no code execution), written atomically.
`StreamDecoder` turns a stream of ids into text as soon as the bytes form whole characters,
which is what sampling one token at a time needs.

Split patterns. The library's patterns (`SPLIT_PATTERNS`, by name or value) cover every
character, so chunks concatenate back to the text. Any other regex passed to the constructor
is made lossless by construction: the text between its matches becomes chunks too. A regex
can take exponential time on crafted text (`(a+)+$`), so a tokeniser *file* naming a pattern
that is not the library's is refused unless the caller says it trusts it
(`load(path, trust_pattern=True)`), as with code.
"""

import codecs
import functools
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import chain

import numpy as np

from tricycle import checks
from tricycle.added_tokens import allowed_tokens, joined, split_special
from tricycle.bpe import (  # noqa: F401 - GPT2_SPLIT_PATTERN and SPLIT_PATTERNS are public here
    GPT2_SPLIT_PATTERN,
    N_BYTES,
    SPLIT_PATTERNS,
    _build_tiktoken,
    _PieceCache,
    _split_lossless,
    byte_pair_encode,
)
from tricycle.bpe_training import learn_merges
from tricycle.tokeniser_io import (
    _FORMAT_VERSION,
    _bpe_fields,
    _check_ids,
    _check_text,
    _json_text,
    _load_json,
    _save_text,
    _string_list,
    _surrogate_error,
)

# The special token that separates documents (as GPT-2's).
END_OF_TEXT = "<|endoftext|>"

# Texts at least this long are encoded by tiktoken when it is installed and verified.
_ACCELERATE_MIN_CHARS = 4096
_SURROGATE = re.compile("[\ud800-\udfff]")  # characters with no UTF-8 encoding


class BPETokeniser:
    """Byte-level byte-pair-encoding tokeniser.

    Args:
        vocab_size: the configured vocabulary size, at least 256 (the raw bytes) plus the
            special tokens. Training learns up to `vocab_size - 256 - len(special_tokens)`
            merges. If the training text runs out of pairs first, training stops early with a
            warning: `vocab_size` keeps the configured value (so a model built with it still
            covers every id) and `n_tokens` says how many ids actually exist.
        pattern: the regex that splits text into chunks before merging: a name or value from
            `SPLIT_PATTERNS`, or any regex (made lossless, see the module docstring).
        special_tokens: strings such as `END_OF_TEXT` that get ids of their own after the
            merges. `encode` gives them only where `allowed_special` names them (else text
            that spells one is ordinary text); code places them (`eot_id`), and `decode`
            writes them out.

    An untrained tokeniser is a plain byte tokeniser (no merges). Set `accelerate = False`
    to encode in pure Python even when tiktoken is installed.
    """

    @checks.arguments(pattern=checks.text)
    def __init__(
        self,
        vocab_size: int,
        pattern: str = GPT2_SPLIT_PATTERN,
        special_tokens: Iterable[str] = (),
    ):
        names = _string_list(special_tokens)
        if names is None:
            expected = "a list of non-empty strings"
            checks.fail("BPETokeniser", "special_tokens", expected, special_tokens, TypeError)
        if len(set(names)) != len(names):
            checks.fail("BPETokeniser", "special_tokens", "distinct", special_tokens)
        special_tokens = names
        # one id per byte and per special token, at least
        checks.integer("BPETokeniser", "vocab_size", vocab_size, N_BYTES + len(special_tokens))
        pattern = SPLIT_PATTERNS.get(pattern, pattern)
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise ValueError(
                f"BPETokeniser: pattern {pattern!r} is not a valid regex: {e}"
            ) from None
        self.vocab_size = int(vocab_size)
        self.pattern = pattern
        self.special_tokens = special_tokens
        # The library's patterns cover every character: findall (in C) is already lossless.
        known = pattern in SPLIT_PATTERNS.values()
        self._split: Callable[[str], list[str]] = (
            regex.findall if known else functools.partial(_split_lossless, regex)
        )
        self.accelerate = True
        self._set_merges([])

    # ----------------------------------------------------------------------------- training
    def train(self, text: str) -> "BPETokeniser":
        """Learn up to `vocab_size - 256 - len(special_tokens)` merges from `text`; returns
        self.

        Ties between equally frequent pairs go to the smallest pair `(a, b)`, so training is
        deterministic.
        """
        _check_text(text, "BPETokeniser.train")
        n_merges = self.vocab_size - N_BYTES - len(self.special_tokens)
        try:
            chunk_counts = Counter(self._split(text))
            # Each distinct chunk ("word") is trained once, weighted by how often it occurs.
            words: list[list[int]] = [list(chunk.encode("utf-8")) for chunk in chunk_counts]
        except UnicodeEncodeError:
            raise _surrogate_error(text, "BPETokeniser.train") from None
        freqs: list[int] = list(chunk_counts.values())

        merges = learn_merges(words, freqs, n_merges)

        if len(merges) < n_merges:
            warnings.warn(
                f"BPETokeniser.train: the text has only enough pairs for {len(merges)} of "
                f"{n_merges} merges; vocabulary has "
                f"{N_BYTES + len(merges) + len(self.special_tokens)} of the configured "
                f"{self.vocab_size} ids",
                stacklevel=2,
            )
        self._set_merges(merges)
        return self

    def _set_merges(self, merges: list[tuple[int, int]]) -> None:
        """Install merges and rebuild everything derived from them."""
        self.merges = [(int(a), int(b)) for a, b in merges]
        # Merge rank == order learned; the merged pair gets id 256 + rank.
        self._vocab = [bytes([b]) for b in range(N_BYTES)]
        for a, b in self.merges:
            self._vocab.append(self._vocab[a] + self._vocab[b])
        # bytes -> id of every byte and merge (tiktoken's "mergeable ranks"). Should two merges
        # spell the same bytes, the first wins and the other id is never produced.
        self._ranks: dict[bytes, int] = {}
        for token_id, token in enumerate(self._vocab):
            self._ranks.setdefault(token, token_id)
        self.special_ids = {s: len(self._vocab) + k for k, s in enumerate(self.special_tokens)}
        self._vocab += [s.encode("utf-8") for s in self.special_tokens]
        self._cache = _PieceCache(self._ranks)
        self._fast = None  # the tiktoken encoder: None untried, False unavailable

    @property
    def n_tokens(self) -> int:
        """Number of ids that exist: 256 + learned merges + special tokens (<= vocab_size)."""
        return len(self._vocab)

    @property
    def eot_id(self) -> int | None:
        """The id of `END_OF_TEXT`, if it is one of the special tokens."""
        return self.special_ids.get(END_OF_TEXT)

    # ----------------------------------------------------------------------------- encoding
    def encode(self, text: str, allowed_special: Iterable[str] | str = ()) -> np.ndarray:
        """Encode a string to a 1-D int32 array of token ids. A special token spelt in
        ``text`` is ordinary text unless ``allowed_special`` (tiktoken's argument: a set of
        special tokens, or "all") names it: then it is its id (``tricycle.added_tokens``)."""
        _check_text(text, "BPETokeniser.encode")
        allowed = allowed_tokens(allowed_special, self.special_ids, "BPETokeniser.encode")
        if not allowed:
            return self._encode_ordinary(text)
        pieces = split_special(text, allowed)
        return joined([[p] if isinstance(p, int) else self._encode_ordinary(p) for p in pieces])

    def _encode_ordinary(self, text: str) -> np.ndarray:
        """``text``'s ids, special tokens spelt in it read as ordinary text."""
        try:
            fast = self._tiktoken() if len(text) >= _ACCELERATE_MIN_CHARS else None
            if fast is not None:
                if not text.isascii() and _SURROGATE.search(text):  # tiktoken: U+FFFD
                    raise UnicodeEncodeError("utf-8", text, 0, 1, "surrogates not allowed")
                return np.array(fast.encode_ordinary(text), dtype=np.int32)
            ids = chain.from_iterable(map(self._cache.__getitem__, self._split(text)))
            return np.fromiter(ids, dtype=np.int32)  # (n_tokens,)
        except UnicodeEncodeError:
            raise _surrogate_error(text, "BPETokeniser.encode") from None

    def _tiktoken(self):
        """A tiktoken Encoding with these merges, or None (not installed, a custom pattern,
        `accelerate` off, or it failed the check that it gives our ids)."""
        if not self.accelerate:
            return None
        if self._fast is None:
            self._fast = _build_tiktoken(self) or False
        return self._fast or None

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
    def to_json(self) -> str:
        """The tokeniser as the text of its JSON file (what ``save`` writes, and what a run
        records and hashes)."""
        return _json_text(
            {
                "format": "tricycle-bpe",
                "version": _FORMAT_VERSION,
                "vocab_size": self.vocab_size,
                "pattern": self.pattern,
                "special_tokens": self.special_tokens,
                "merges": [list(pair) for pair in self.merges],
            }
        )

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokeniser to a JSON file (``to_json``), atomically."""
        _save_text(path, self.to_json())

    @classmethod
    @checks.arguments(trust_pattern=checks.boolean)
    def load(cls, path: str | os.PathLike, trust_pattern: bool = False) -> "BPETokeniser":
        """Read a tokeniser written by `save`. Raises ValueError on a corrupt file, and on a
        split pattern that is not one of `SPLIT_PATTERNS` unless `trust_pattern` (a regex
        from a file could make encoding run for hours)."""
        data = _load_json(path, "tricycle-bpe")
        vocab_size, pattern, special_tokens, merges = _bpe_fields(path, data, trust_pattern)
        try:
            tokeniser = cls(vocab_size, pattern=pattern, special_tokens=special_tokens)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: {e}") from None
        tokeniser._set_merges([tuple(pair) for pair in merges])
        return tokeniser

    # ---------------------------------------------------------------------------- pickling
    def __getstate__(self) -> dict:
        """Pickle what defines the tokeniser, not its caches or its tiktoken encoder."""
        return {
            "vocab_size": self.vocab_size,
            "pattern": self.pattern,
            "special_tokens": self.special_tokens,
            "merges": self.merges,
            "accelerate": self.accelerate,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["vocab_size"], state["pattern"], state["special_tokens"])
        self._set_merges(state["merges"])
        self.accelerate = state["accelerate"]

    def __repr__(self) -> str:
        return (
            f"BPETokeniser(vocab_size={self.vocab_size}, n_tokens={self.n_tokens}, "
            f"special_tokens={self.special_tokens})"
        )


class CharTokeniser:
    """Character-level tokeniser: one id per distinct character of the training text, sorted.

    `vocab_size` is the number of characters. Encoding a character that was not in the
    training text raises ValueError.
    """

    def __init__(self, chars: Iterable[str] = ()):
        try:
            distinct = sorted(set(chars))
        except TypeError:  # not iterable, or the items cannot be compared
            distinct = None
        if distinct is None or not all(isinstance(ch, str) and len(ch) == 1 for ch in distinct):
            expected = "an iterable of single characters (or a str)"
            checks.fail("CharTokeniser", "chars", expected, chars, TypeError)
        self._set_chars(distinct)

    def train(self, text: str) -> "CharTokeniser":
        """Build the vocabulary from the characters in `text`; returns self."""
        _check_text(text, "CharTokeniser.train")
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
        _check_text(text, "CharTokeniser.encode")
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

    def to_json(self) -> str:
        """The tokeniser as the text of its JSON file (what ``save`` writes)."""
        return _json_text({"format": "tricycle-char", "version": _FORMAT_VERSION,
                           "chars": self.chars})  # fmt: skip

    def save(self, path: str | os.PathLike) -> None:
        """Write the tokeniser to a JSON file (``to_json``), atomically."""
        _save_text(path, self.to_json())

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


@checks.arguments(trust_pattern=checks.boolean)
def load_tokeniser(
    path: str | os.PathLike, trust_pattern: bool = False
) -> BPETokeniser | CharTokeniser:
    """Load whichever kind of tokeniser `path` holds (`trust_pattern`: see
    `BPETokeniser.load`)."""
    if _load_json(path, None)["format"] == "tricycle-char":
        return CharTokeniser.load(path)
    return BPETokeniser.load(path, trust_pattern=trust_pattern)


class StreamDecoder:
    """Decode ids one (or a few) at a time, returning text as soon as it is complete.

    A BPE token may end in the middle of a multi-byte character; those bytes are held back
    until the rest arrive, so streamed text never shows a spurious U+FFFD.

        stream = StreamDecoder(tokeniser)
        for token in generate(...):
            print(stream.push(token), end="", flush=True)
        print(stream.flush())
    """

    @checks.arguments(tokeniser=checks.instance(BPETokeniser, CharTokeniser))
    def __init__(self, tokeniser: BPETokeniser | CharTokeniser):
        self.tokeniser = tokeniser
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, ids: Iterable[int] | np.ndarray | int) -> str:
        """Add ids; return the text they complete (possibly "")."""
        return self._utf8.decode(self.tokeniser.decode_bytes(ids))

    def flush(self) -> str:
        """Return whatever is held back (as U+FFFD if it is an incomplete character)."""
        return self._utf8.decode(b"", final=True)
