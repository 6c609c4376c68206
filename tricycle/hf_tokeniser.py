"""Their tokenisers: the byte-level BPE of GPT-2 (``vocab.json`` + ``merges.txt``) and the BPE
of a Hugging Face ``tokenizer.json`` (Llama 3, Qwen2, Llama 2, Mistral, TinyLlama and the
like), as a tricycle ``BPETokeniser``.

Byte-level BPE as GPT-2 defined it (GPT-2, Llama 3, Qwen2):

    text -> chunks (a split regex: words with their leading space, numbers, punctuation, ...)
    chunk -> its UTF-8 bytes, each written as one printable character (``bytes_to_unicode``)
    symbols -> repeatedly merge the adjacent pair that comes first in the merge list
    tokens -> ids through the vocabulary

SentencePiece's BPE as transformers converts it (Llama 2, Mistral, TinyLlama): spaces become
"▁" and one goes before the text (a normalizer, or a Metaspace pre-tokenizer); the text's
characters are merged, and one that is not a token becomes its bytes' ``<0xNN>`` tokens
(byte fallback); the decoder turns "▁" back into spaces and drops the first.

The merges apply by the rank of the *pair*, the leftmost first, as ``tokenizers`` applies
them; that need not be the rank of the merged bytes that tricycle's own tokeniser (and
tiktoken) uses, so the merge loop is this module's (``tricycle.hf_tokeniser_steps`` holds the
steps a tokenizer.json names). ``decode`` runs the file's decoder; ``decode_bytes`` (what
``StreamDecoder`` reads) gives each id's bytes, the "▁" of a first word still a space, as a
continuation of a prompt needs.

With the ``regex`` package installed the split pattern is the file's (``\\p{L}``, ``\\p{N}``);
without it GPT-2's falls back to tricycle's ``re`` spelling of it, which splits a few rare
characters differently. Special (added) tokens get their ids from the files; ``encode`` reads
one spelt in a text as ordinary text, as tricycle's tokeniser, unless ``allowed_special``
names it (``tricycle.added_tokens``: found as transformers finds it). A
post-processor that puts special tokens before every text (Llama's ``<s>``, Llama 3's
``<|begin_of_text|>``) gives them as ``prefix_ids``: what transformers' tokeniser puts before
a prompt, which the sampler puts there too. The files are read in
``tricycle.hf_tokeniser_files``; anything else a tokenizer.json may say that is not read here
is one ``ValueError`` line naming the file and the field.
"""

import functools
import re
from collections.abc import Iterable
from itertools import chain
from pathlib import Path

import numpy as np

from tricycle.added_tokens import added_pieces, allowed_tokens, joined
from tricycle.bpe import GPT2_SPLIT_PATTERN
from tricycle.hf_tokeniser_files import (
    GPT2_PATTERN,
    LLAMA3_PATTERN,
    QWEN2_PATTERN,
    gpt2_files,
    read_json,
    tokenizer_json,
)
from tricycle.hf_tokeniser_steps import (
    bytes_to_unicode,
    cut_before,
    decode_tokens,
    decoder_steps,
    glue_before,
    initial_symbols,
    merge_by_pair_rank,
    metaspace,
    metaspace_options,
    normalize,
    normalizer_steps,
    token_bytes,
)
from tricycle.tokeniser import BPETokeniser, _check_text, _json_text, _surrogate_error
from tricycle.tokeniser_io import _check_ids

FORMAT = "tricycle-hf-bpe"  # the JSON file ``save`` writes
KNOWN_PATTERNS = (GPT2_PATTERN, LLAMA3_PATTERN, QWEN2_PATTERN, None)  # trusted in a saved file
METASPACE = "▁"  # SentencePiece's space: a long text is cut before it (``cut_before``)
_CACHED_CHARS = 256  # longer chunks are not remembered
BYTE_LEVEL_DECODER = [{"type": "ByteLevel"}]
# what ``save`` writes only where it is not this default (a GPT-2 file is as it always was)
_DEFAULTS = {"prefix_ids": [], "byte_level": True, "normalizer": [], "metaspace": None,
             "byte_fallback": False, "unk_token": None, "fuse_unk": False,
             "decoder": BYTE_LEVEL_DECODER, "normalized_special": [],
             "added_options": {}}  # fmt: skip


class PretrainedTokeniser(BPETokeniser):
    """A BPE tokeniser from someone else's files; use ``from_dir``, ``from_gpt2_files`` or
    ``from_tokenizer_json``.

    Args:
        vocab: token -> id (byte-level: tokens in GPT-2's byte characters).
        merges: the merge list, (left, right) token pairs in order of priority.
        pattern: the split regex (``regex`` syntax when that package is installed); None: a
            text is one chunk.
        add_prefix_space: put a space before text that does not start with one (ByteLevel's
            option; GPT-2: False).
        ignore_merges: a chunk that is a token is that token (Llama 3's tokenizer.json).
        special: special token -> id.
        prefix_ids: the special ids the tokeniser's template puts before a text (a BOS).
        byte_level: chunks are written in GPT-2's byte characters (False: SentencePiece's
            BPE, whose tokens are text).
        normalizer: the tokenizer.json's normalizer (NFC, Prepend, Replace, a Sequence).
        metaspace: a Metaspace pre-tokenizer's options (``replacement``, ``prepend_scheme``,
            ``split``).
        byte_fallback, unk_token, fuse_unk: the BPE model's options for characters that are
            not tokens.
        decoder: the tokenizer.json's decoder (None: ByteLevel).
        normalized_special: special tokens marked ``normalized``: decoded as the normalizer
            writes them (Llama 2's "<s>" as "▁<s>"), as tokenizers decodes them, and found in
            the normalized text (``encode``'s ``allowed_special``).
        added_options: special token -> its options that are set of ``lstrip``, ``rstrip``
            and ``single_word`` (how ``encode`` finds it in a text).
    """

    def __init__(self, vocab: dict[str, int], merges: list[tuple[str, str]],
                 pattern: str | None = GPT2_PATTERN, add_prefix_space: bool = False,
                 ignore_merges: bool = False, special: dict[str, int] | None = None,
                 prefix_ids=(), byte_level: bool = True, normalizer=None, metaspace=None,
                 byte_fallback: bool = False, unk_token: str | None = None,
                 fuse_unk: bool = False, decoder=None, normalized_special=(),
                 added_options=None):  # fmt: skip
        if (pattern is not None and not byte_level) or (metaspace is not None and byte_level):
            raise ValueError("pre_tokenizer: a split pattern needs ByteLevel; Metaspace, not")
        steps = normalizer_steps(normalizer), decoder_steps(decoder, byte_level)
        metaspace = metaspace_options(metaspace) if metaspace is not None else None
        if not vocab:
            raise ValueError("model.vocab is empty")
        special = dict(special or {})
        self.prefix_ids = tuple(int(i) for i in prefix_ids or ())
        size = max([*vocab.values(), *special.values()]) + 1
        super().__init__(max(size, 256 + len(special)), GPT2_SPLIT_PATTERN, list(special))
        self.token_ids, self.merge_list = dict(vocab), [tuple(m) for m in merges]
        self.split_pattern, self.add_prefix_space = pattern, add_prefix_space
        self.ignore_merges, self.special_ids, self.byte_level = ignore_merges, special, byte_level
        self.byte_fallback, self.unk_token, self.fuse_unk = byte_fallback, unk_token, fuse_unk
        (self.normalizer, self.decoder), self.metaspace = steps, metaspace
        # symbol -> id in the BPE model, whose vocabulary may hold special tokens (<unk>)
        self._ids = {**special, **self.token_ids} if special else self.token_ids
        if unk_token is not None and unk_token not in self._ids:
            raise ValueError(f"model.unk_token {unk_token!r} is not in the vocabulary")
        self._pair_ranks: dict[tuple[str, str], int] = {}
        for rank, (a, b) in enumerate(self.merge_list):  # a repeated pair: its last rank counts
            if not (a in self._ids and b in self._ids and a + b in self._ids):
                raise ValueError(f"merge {rank} ({a!r}, {b!r}): it or its parts are not tokens")
            self._pair_ranks[a, b] = rank  # (as GPT-2's dict of ranks and tokenizers' map)
        self._tokens: list[str | None] = [None] * size  # id -> token (decode reads it)
        self.normalized_special = sorted(set(normalized_special) & special.keys())
        self.added_options = {t: {k: True for k in sorted(o) if o[k]}  # only options set
                              for t, o in (added_options or {}).items()
                              if t in special and any(o.values())}  # fmt: skip
        for token, i in chain(self.token_ids.items(), special.items()):
            self._tokens[i] = token
        for token in self.normalized_special:
            self._tokens[special[token]] = normalize(token, self.normalizer)
        self._vocab = [b"" if t is None else token_bytes(t, self.decoder) for t in self._tokens]
        self._split = _compile(pattern).findall if pattern else _whole
        self._cut = _whole
        if not byte_level and METASPACE in self.token_ids:
            glue = glue_before(METASPACE, self.token_ids)
            self._cut = functools.partial(cut_before, mark=METASPACE, glue=glue,
                                          known=self.token_ids)  # fmt: skip
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
        try:
            return cls(**gpt2_files(vocab_path, merges_path))
        except ValueError as error:
            raise ValueError(f"{merges_path}: {error}") from None

    @classmethod
    def from_tokenizer_json(cls, path) -> "PretrainedTokeniser":
        """A Hugging Face ``tokenizer.json`` whose model is a BPE: byte-level (GPT-2, Llama 3,
        Qwen2) or SentencePiece's with byte fallback (Llama 2, Mistral, TinyLlama)."""
        arguments = tokenizer_json(path)
        try:
            return cls(**arguments)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None

    def to_json(self) -> str:
        """The tokeniser as the text of one JSON file (format "tricycle-hf-bpe"): what
        ``save`` writes and a run directory records; ``load`` reads it back."""
        return _json_text({"format": FORMAT, "version": 1, **self.__getstate__(),
                           "merges": [list(m) for m in self.merge_list]})  # fmt: skip

    @classmethod
    def load(cls, path, trust_pattern: bool = False) -> "PretrainedTokeniser":
        """Read a file ``save`` wrote. A split pattern other than GPT-2's, Llama 3's or
        Qwen2's is refused unless ``trust_pattern`` (a regex from a file can take exponential
        time)."""
        data = read_json(path)
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: not a {FORMAT} tokeniser file")
        state = {k: data.get(k) for k in ("vocab", "merges", "pattern", "add_prefix_space",
                                          "ignore_merges", "special")}  # fmt: skip
        state.update({k: data[k] for k in _DEFAULTS if k in data})
        if not trust_pattern and state["pattern"] not in KNOWN_PATTERNS:
            raise ValueError(
                f"{path}: split pattern {state['pattern']!r} is not GPT-2's, Llama 3's or "
                "Qwen2's; load it with trust_pattern=True if you trust the file"
            )
        try:
            return cls(**state)
        except (TypeError, ValueError, KeyError, AttributeError) as error:
            raise ValueError(f"{path}: not a valid {FORMAT} file ({error})") from None

    def train(self, text: str) -> "BPETokeniser":
        raise NotImplementedError("PretrainedTokeniser: a pretrained tokeniser is not trained")

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str, allowed_special: Iterable[str] | str = ()) -> np.ndarray:
        """Encode a string to a 1-D int32 array of ids. An added token spelt in ``text`` is
        ordinary text unless ``allowed_special`` (a set of them, or "all") names it: then it
        is its id, found as transformers' tokeniser finds it (``tricycle.added_tokens``):
        in the text, or for a token marked ``normalized``, in the normalized text; the text
        around it is encoded piece by piece."""
        who = "PretrainedTokeniser.encode"
        _check_text(text, who)
        allowed = allowed_tokens(allowed_special, self.special_ids, who)
        if not allowed:
            return self._encode_piece_of(text, first=True)
        steps = functools.partial(normalize, steps=self.normalizer) if self.normalizer else None
        pieces = added_pieces(text, allowed, self.added_options, steps, self.normalized_special,
                              who)  # fmt: skip
        return joined([[p] if isinstance(p, int) else self._encode_piece_of(*p, normalized=True)
                       for p in pieces])  # fmt: skip

    def _encode_piece_of(self, text: str, first: bool, normalized: bool = False) -> np.ndarray:
        """The ids of ``text`` (special tokens spelt in it are text), normalized unless
        ``normalized``; ``first``: it starts the text."""
        if self.normalizer and not normalized:
            text = normalize(text, self.normalizer)
        try:
            if self.byte_level:
                if self.add_prefix_space and text and not text.startswith(" "):
                    text = " " + text
                ids = chain.from_iterable(map(self._encode_chunk, self._split(text)))
            else:
                words = metaspace(text, self.metaspace, first) if self.metaspace else _whole(text)
                ids = chain.from_iterable(map(self._encode_word, words))
            return np.fromiter(ids, dtype=np.int32)
        except UnicodeEncodeError:
            raise _surrogate_error(text, "PretrainedTokeniser.encode") from None

    def _encode_chunk(self, chunk: str) -> tuple[int, ...]:
        """A byte-level chunk's ids: its bytes as GPT-2's characters, then the BPE model."""
        ids = self._chunks.get(chunk)
        if ids is None:
            table = bytes_to_unicode()
            word = "".join([table[b] for b in chunk.encode("utf-8")])
            if self.ignore_merges and word in self.token_ids:
                ids = (self.token_ids[word],)
            else:
                ids = self._merge(word)
            self._remember(chunk, ids)
        return ids

    def _encode_word(self, word: str):
        """A word of text's ids (SentencePiece's BPE), merged in pieces that merge alone."""
        if self.ignore_merges and word in self.token_ids:
            return (self.token_ids[word],)
        return chain.from_iterable(map(self._encode_piece, self._cut(word)))

    def _encode_piece(self, piece: str) -> tuple[int, ...]:
        ids = self._chunks.get(piece)
        if ids is None:
            ids = self._merge(piece)
            self._remember(piece, ids)
        return ids

    def _merge(self, word: str) -> tuple[int, ...]:
        """The BPE model on one word: its symbols (``initial_symbols``), merged, as ids."""
        symbols = initial_symbols(word, self.token_ids, self.byte_fallback, self.unk_token,
                                  self.fuse_unk)  # fmt: skip
        return tuple(map(self._ids.__getitem__, merge_by_pair_rank(symbols, self._pair_ranks)))

    def _remember(self, chunk: str, ids: tuple[int, ...]) -> None:
        if len(chunk) <= _CACHED_CHARS:
            if len(self._chunks) > 1 << 18:
                self._chunks.clear()
            self._chunks[chunk] = ids

    # ------------------------------------------------------------------ decoding
    def decode(self, ids) -> str:
        """The text of ``ids`` as the file's decoder gives it (transformers' ``decode``,
        special tokens written out)."""
        if self.decoder == BYTE_LEVEL_DECODER:
            return super().decode(ids)  # the same, from the bytes of each id
        ids = _check_ids(ids, len(self._tokens), "PretrainedTokeniser")
        return decode_tokens([t for i in ids if (t := self._tokens[i]) is not None], self.decoder)

    def __getstate__(self) -> dict:
        state = {"vocab": self.token_ids, "merges": self.merge_list,
                 "pattern": self.split_pattern, "add_prefix_space": self.add_prefix_space,
                 "ignore_merges": self.ignore_merges, "special": self.special_ids}  # fmt: skip
        more = {"prefix_ids": list(self.prefix_ids), "byte_level": self.byte_level,
                "normalizer": self.normalizer, "metaspace": self.metaspace,
                "byte_fallback": self.byte_fallback, "unk_token": self.unk_token,
                "fuse_unk": self.fuse_unk, "decoder": self.decoder,
                "normalized_special": self.normalized_special,
                "added_options": self.added_options}  # fmt: skip
        # only what is not the default: a byte-level file (and its checksum in a run) is as
        # before; the decoder of a tokeniser that is not byte-level has no default
        for k, v in more.items():
            if v != _DEFAULTS[k] or (k == "decoder" and not self.byte_level):
                state[k] = v
        return state

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def __repr__(self) -> str:
        return f"PretrainedTokeniser(n_tokens={self.n_tokens}, merges={len(self.merge_list)})"


def _whole(text: str) -> list[str]:
    """A text as one chunk (none when empty)."""
    return [text] if text else []


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
