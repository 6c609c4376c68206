"""Their tokenisers: the byte-level BPE of GPT-2 (``vocab.json`` + ``merges.txt``) and of a
Hugging Face ``tokenizer.json`` (Llama 3 and the like), as a tricycle ``BPETokeniser``.

Byte-level BPE as GPT-2 defined it:

    text -> chunks (a split regex: words with their leading space, numbers, punctuation, ...)
    chunk -> its UTF-8 bytes, each written as one printable character (``bytes_to_unicode``)
    symbols -> repeatedly merge the adjacent pair that comes first in the merge list
    tokens -> ids through the vocabulary

The merges apply by the rank of the *pair* (GPT-2's ``bpe``, and Hugging Face's), which need
not be the rank of the merged bytes that tricycle's own tokeniser (and tiktoken) uses, so the
merge loop is this module's. Decoding is the base class's: each id's bytes, joined.

With the ``regex`` package installed the split pattern is GPT-2's own (``\\p{L}``, ``\\p{N}``);
without it, tricycle's ``re`` spelling of it, which splits a few rare characters differently.
Special tokens (``<|endoftext|>``) get their ids from the files; ``encode`` never produces
them, as tricycle's tokeniser (text that spells one is ordinary text). A tokenizer.json whose
post-processor puts special tokens before every text (Llama 3's ``<|begin_of_text|>``) gives
them as ``prefix_ids``: what transformers' tokeniser puts before a prompt, which the sampler
puts there too.
"""

import functools
import json
import re
from itertools import chain
from pathlib import Path

import numpy as np

from tricycle.bpe import GPT2_SPLIT_PATTERN
from tricycle.tokeniser import BPETokeniser, _check_text, _json_text, _surrogate_error

FORMAT = "tricycle-hf-bpe"  # the JSON file ``save`` writes
# GPT-2's pattern in the syntax of the ``regex`` package (and of Hugging Face's ByteLevel)
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
KNOWN_PATTERNS = (GPT2_PATTERN, LLAMA3_PATTERN)  # patterns a saved file may name untrusted


@functools.cache
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters: the printable Latin-1 bytes are
    themselves, the rest are shifted past 255, in order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]  # fmt: skip
    table, shift = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shift)
            shift += 1
    return table


class PretrainedTokeniser(BPETokeniser):
    """A byte-level BPE tokeniser from someone else's files; use ``from_dir``,
    ``from_gpt2_files`` or ``from_tokenizer_json``.

    Args:
        vocab: token (in GPT-2's byte characters) -> id.
        merges: the merge list, (left, right) token pairs in order of priority.
        pattern: the split regex (``regex`` syntax when that package is installed).
        add_prefix_space: put a space before text that does not start with one (ByteLevel's
            option; GPT-2: False).
        ignore_merges: a chunk that is a token is that token (Llama 3's tokenizer.json).
        special: special token -> id.
        prefix_ids: the special ids the tokeniser's template puts before a text (a BOS).
    """

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]],
                 pattern: str = GPT2_PATTERN, add_prefix_space: bool = False,
                 ignore_merges: bool = False, special: dict[str, int] | None = None,
                 prefix_ids=()):  # fmt: skip
        special = dict(special or {})
        self.prefix_ids = tuple(int(i) for i in prefix_ids or ())
        size = max([*vocab.values(), *special.values()]) + 1
        super().__init__(max(size, 256 + len(special)), GPT2_SPLIT_PATTERN, list(special))
        self.token_ids, self.merge_list = dict(vocab), [tuple(m) for m in merges]
        self.split_pattern, self.add_prefix_space = pattern, add_prefix_space
        self.ignore_merges = ignore_merges
        self.special_ids = special
        self._split = _compile(pattern).findall
        self._pair_ranks: dict[tuple[str, str], int] = {}
        for rank, pair in enumerate(self.merge_list):  # a repeated pair keeps its first rank
            self._pair_ranks.setdefault(pair, rank)
        decoder = {c: b for b, c in bytes_to_unicode().items()}
        self._vocab = [b""] * size  # id -> its bytes (decode_bytes reads it)
        for token, i in self.token_ids.items():
            self._vocab[i] = bytes(decoder[c] for c in token)
        for token, i in special.items():
            self._vocab[i] = token.encode("utf-8")
        self._chunks: dict[str, tuple[int, ...]] = {}
        self.merges = []  # tricycle's own (id, id) merges: none

    # ------------------------------------------------------------------ files
    @classmethod
    def from_dir(cls, directory) -> "PretrainedTokeniser":
        """The tokeniser of a model directory: ``tokenizer.json``, else ``vocab.json`` +
        ``merges.txt``."""
        directory = Path(directory)
        if (directory / "tokenizer.json").is_file():
            return cls.from_tokenizer_json(directory / "tokenizer.json")
        if (directory / "vocab.json").is_file() and (directory / "merges.txt").is_file():
            return cls.from_gpt2_files(directory / "vocab.json", directory / "merges.txt")
        raise ValueError(f"{directory}: no tokenizer.json, nor vocab.json and merges.txt")

    @classmethod
    def from_gpt2_files(cls, vocab_path, merges_path) -> "PretrainedTokeniser":
        """GPT-2's files: ``vocab.json`` (token -> id) and ``merges.txt`` ("left right" a line
        after a "#version" header)."""
        vocab = _read_json(vocab_path)
        lines = Path(merges_path).read_text(encoding="utf-8").splitlines()
        merges = [_pair(line, merges_path, n) for n, line in enumerate(lines)
                  if line and not line.startswith("#version")]  # fmt: skip
        special = {t: i for t, i in vocab.items() if t.startswith("<|") and t.endswith("|>")}
        return cls({t: i for t, i in vocab.items() if t not in special}, merges, special=special)

    @classmethod
    def from_tokenizer_json(cls, path) -> "PretrainedTokeniser":
        """A Hugging Face ``tokenizer.json`` whose model is a byte-level BPE."""
        data = _read_json(path)
        model = data.get("model") or {}
        if model.get("type") != "BPE":
            raise ValueError(f"{path}: model.type is {model.get('type')!r}; only BPE is read")
        for field in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
            if model.get(field):
                raise ValueError(f"{path}: model.{field}={model[field]!r} is not supported")
        if model.get("byte_fallback") or data.get("normalizer"):
            field = "model.byte_fallback" if model.get("byte_fallback") else "normalizer"
            raise ValueError(f"{path}: {field} is set: a sentencepiece-style BPE, not read")
        pattern, prefix = _pre_tokenizer(data.get("pre_tokenizer"), path)
        merges = [tuple(m) if isinstance(m, list) else _pair(m, path, n)
                  for n, m in enumerate(model.get("merges", []))]  # fmt: skip
        special = {t["content"]: t["id"] for t in data.get("added_tokens", [])}
        vocab = {t: i for t, i in model.get("vocab", {}).items() if t not in special}
        before = _template_prefix(data.get("post_processor"), path)
        return cls(vocab, merges, pattern, prefix, bool(model.get("ignore_merges")), special,
                   before)  # fmt: skip

    def to_json(self) -> str:
        """The tokeniser as the text of one JSON file (format "tricycle-hf-bpe"): what
        ``save`` writes and a run directory records; ``load`` reads it back."""
        return _json_text({"format": FORMAT, "version": 1, **self.__getstate__(),
                           "merges": [list(m) for m in self.merge_list]})  # fmt: skip

    @classmethod
    def load(cls, path, trust_pattern: bool = False) -> "PretrainedTokeniser":
        """Read a file ``save`` wrote. A split pattern other than GPT-2's or Llama 3's is
        refused unless ``trust_pattern`` (a regex from a file can take exponential time)."""
        data = _read_json(path)
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} tokeniser file")
        state = {k: data.get(k) for k in ("vocab", "merges", "pattern", "add_prefix_space",
                                          "ignore_merges", "special", "prefix_ids")}  # fmt: skip
        if not trust_pattern and state["pattern"] not in KNOWN_PATTERNS:
            raise ValueError(
                f"{path}: split pattern {state['pattern']!r} is not GPT-2's or Llama 3's; load "
                "it with trust_pattern=True if you trust the file"
            )
        try:
            return cls(**state)
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise ValueError(f"{path}: not a valid {FORMAT} file ({error})") from None

    def train(self, text: str) -> "BPETokeniser":
        raise NotImplementedError("PretrainedTokeniser: a pretrained tokeniser is not trained")

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str) -> np.ndarray:
        """Encode a string to a 1-D int32 array of ids (never special ids)."""
        _check_text(text, "PretrainedTokeniser.encode")
        if self.add_prefix_space and text and not text.startswith(" "):
            text = " " + text
        try:
            ids = chain.from_iterable(map(self._encode_chunk, self._split(text)))
            return np.fromiter(ids, dtype=np.int32)
        except UnicodeEncodeError:
            raise _surrogate_error(text, "PretrainedTokeniser.encode") from None

    def _encode_chunk(self, chunk: str) -> tuple[int, ...]:
        ids = self._chunks.get(chunk)
        if ids is None:
            table = bytes_to_unicode()
            word = "".join(table[b] for b in chunk.encode("utf-8"))
            if self.ignore_merges and word in self.token_ids:
                ids = (self.token_ids[word],)
            else:
                ids = tuple(self.token_ids[s] for s in merge_by_pair_rank(word, self._pair_ranks))
            if len(self._chunks) > 1 << 18:
                self._chunks.clear()
            self._chunks[chunk] = ids
        return ids

    def __getstate__(self) -> dict:
        state = {"vocab": self.token_ids, "merges": self.merge_list,
                 "pattern": self.split_pattern, "add_prefix_space": self.add_prefix_space,
                 "ignore_merges": self.ignore_merges, "special": self.special_ids}  # fmt: skip
        if self.prefix_ids:  # absent, the file (and its checksum in a run) is as before
            state["prefix_ids"] = list(self.prefix_ids)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def __repr__(self) -> str:
        return f"PretrainedTokeniser(n_tokens={self.n_tokens}, merges={len(self.merge_list)})"


def merge_by_pair_rank(word: str, ranks: dict[tuple[str, str], int]) -> list[str]:
    """GPT-2's ``bpe``: start from the characters of ``word``; while some adjacent pair is in
    ``ranks``, merge every occurrence (left to right) of the lowest-ranked one."""
    symbols = list(word)
    while len(symbols) > 1:
        pairs = {(a, b) for a, b in zip(symbols, symbols[1:])}
        best = min(pairs, key=lambda pair: ranks.get(pair, 1 << 62))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                merged.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


def _compile(pattern: str):
    """The split regex: with the ``regex`` package (\\p classes) when installed; GPT-2's
    pattern falls back to tricycle's ``re`` spelling of it."""
    try:
        import regex
    except ImportError:
        if pattern == GPT2_PATTERN:
            return re.compile(GPT2_SPLIT_PATTERN)
        raise ValueError(
            f"the split pattern {pattern!r} needs the regex package (pip install regex)"
        ) from None
    return regex.compile(pattern)


def _pre_tokenizer(spec, path) -> tuple[str, bool]:
    """(split pattern, add_prefix_space) of a ByteLevel pre-tokenizer, alone or after one
    Split by a regex (Llama 3)."""
    steps = (spec or {}).get("pretokenizers", [spec]) if spec else []
    pattern, prefix, byte_level = None, False, False
    for step in steps:
        kind = step.get("type")
        if kind == "ByteLevel":
            byte_level, prefix = True, bool(step.get("add_prefix_space"))
            if step.get("use_regex", True):
                pattern = pattern or GPT2_PATTERN
        elif kind == "Split" and "Regex" in step.get("pattern", {}) and pattern is None:
            if step.get("behavior") != "Isolated" or step.get("invert"):
                raise ValueError(f"{path}: pre_tokenizer Split {step.get('behavior')!r} "
                                 "is not supported (only Isolated)")  # fmt: skip
            pattern = step["pattern"]["Regex"]
        else:
            raise ValueError(f"{path}: pre_tokenizer step {kind!r} is not supported")
    if not byte_level or pattern is None:
        raise ValueError(f"{path}: pre_tokenizer is not byte-level BPE's (ByteLevel)")
    return pattern, prefix


def _template_prefix(spec, path) -> list[int]:
    """The ids a TemplateProcessing post-processor (alone or in a Sequence) puts before a
    single text: its special tokens ahead of ``$A``."""
    steps = (spec or {}).get("processors", [spec]) if spec else []
    for step in steps:
        if step.get("type") != "TemplateProcessing":
            continue
        ids = []
        for piece in step.get("single", []):
            if "Sequence" in piece:
                return ids
            token = piece.get("SpecialToken", {}).get("id")
            try:
                ids += step["special_tokens"][token]["ids"]
            except (KeyError, TypeError):
                raise ValueError(f"{path}: post_processor names {token!r}, "
                                 "which its special_tokens lack") from None  # fmt: skip
    return []


def _pair(line: str, path, n: int) -> tuple[str, str]:
    parts = line.split(" ")
    if len(parts) != 2:
        raise ValueError(f"{path}: merge {n} is {line!r}; expected two tokens and one space")
    return parts[0], parts[1]


def _read_json(path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data
