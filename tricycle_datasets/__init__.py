"""Datasets for tricycle: text corpora tokenised into 1-D arrays of token ids.

Every dataset is a `Corpus`: `.tokens` (np.ndarray int32, train then validation),
`.train_tokens`, `.valid_tokens`, `.tokeniser`, `.vocab_size` and `.text`; it also behaves as
the array of its tokens (`len`, indexing, `np.asarray`), so it can be handed straight to
`CausalLMDataset(tokens=...)`.

    tricycle_datasets.shakespeare.Shakespeare(vocab_size)   tiny-shakespeare, byte-level BPE
    tricycle_datasets.shakespeare.ShakespeareChar()         tiny-shakespeare, one id per char
    tricycle_datasets.python_code.PythonCode(vocab_size)    this Python's standard library
    tricycle_datasets.codeparrot.CodeParrot(vocab_size)     needs `pip install datasets`
    tricycle_datasets.TextFile(path, vocab_size)            any UTF-8 text file

Tokenising is slow-ish, so the trained tokeniser and the token arrays are cached under
`cache_dir()`, keyed by a hash of the text and the tokeniser settings: the second load of a
corpus is instant, and a changed text can never be served stale tokens.
"""

import hashlib
import os
import re
import warnings
from pathlib import Path

import numpy as np

from tricycle import checks
from tricycle.atomic import atomic_write
from tricycle.tokeniser import (
    GPT2_SPLIT_PATTERN,
    BPETokeniser,
    CharTokeniser,
    load_tokeniser,
)
from tricycle_datasets.download import cache_dir

# Bump when the cached files change meaning, to ignore caches written by older code.
_CACHE_VERSION = "2"


class Corpus:
    """Text tokenised into ids, split into train and validation parts, cached on disk.

    Args:
        name: a short name for the cache files.
        train_text, valid_text: the two parts of the text; neither may be empty.
        vocab_size: for BPE, the configured vocabulary size (>= 256). For characters
            (`char=True`), None means "the number of distinct characters"; a larger value is
            allowed (a model may reserve spare ids), a smaller one is an error.
        char: a character-level tokeniser instead of byte-level BPE.

    The BPE tokeniser is trained on the training part only, so validation text is unseen.
    The character vocabulary is taken from the whole text, since a character missing from
    the training part could otherwise not be encoded at all.
    """

    @checks.arguments(name=checks.text, char=checks.boolean)
    def __init__(
        self,
        name: str,
        train_text: str,
        valid_text: str,
        vocab_size: int | None,
        char: bool = False,
    ):
        for part, text in (("training", train_text), ("validation", valid_text)):
            if not text:
                raise ValueError(f"{name}: the {part} part of the corpus is empty")
        check_vocab_size(name, vocab_size, char)
        self.name = name
        self.text = train_text + valid_text
        self.tokeniser, self.train_tokens, self.valid_tokens = _tokenise_cached(
            name, train_text, valid_text, vocab_size, char
        )
        self.tokens = np.concatenate([self.train_tokens, self.valid_tokens])  # (n_tokens,)

        if char and vocab_size is not None and vocab_size < self.tokeniser.vocab_size:
            raise ValueError(
                f"{name}: vocab_size={vocab_size} is smaller than the "
                f"{self.tokeniser.vocab_size} distinct characters of the text"
            )
        self.vocab_size = self.tokeniser.vocab_size if vocab_size is None else vocab_size

    def __len__(self) -> int:
        return len(self.tokens)

    def __getitem__(self, index):
        return self.tokens[index]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        tokens = self.tokens if dtype is None else self.tokens.astype(dtype)
        return tokens.copy() if copy else tokens

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(vocab_size={self.vocab_size}, "
            f"train_tokens={len(self.train_tokens)}, valid_tokens={len(self.valid_tokens)})"
        )


class TextFile(Corpus):
    """Any UTF-8 text file, split 90/10 into train/validation at a line boundary.

    `vocab_size` and `char` are as for `Corpus`.
    """

    @checks.arguments(char=checks.boolean)
    def __init__(self, path: str | os.PathLike, vocab_size: int | None = None, char: bool = False):
        check_vocab_size("TextFile", vocab_size, char)
        path = Path(path)
        super().__init__(path.stem, *split_text(read_text(path)), vocab_size=vocab_size, char=char)


def read_text(path: str | os.PathLike) -> str:
    """The contents of a UTF-8 text file; ValueError naming the file and the byte offset of
    the first byte that is not UTF-8."""
    return decode_utf8(Path(path).read_bytes(), path)


def decode_utf8(data: bytes, where, offset: int = 0) -> str:
    """``data`` as UTF-8 text; else ValueError naming ``where`` it came from and the offset
    (``offset`` being where ``data`` starts there) of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(
            f"{where}: not UTF-8 text: byte 0x{data[e.start]:02x} at offset {offset + e.start} "
            f"({e.reason}); leave it out or convert it to UTF-8"
        ) from None


def check_vocab_size(who: str, vocab_size, char: bool = False) -> None:
    """Refuse a vocabulary size that no tokeniser could have, before any text is read: BPE
    needs one id per byte at least; characters also take None (one id per character)."""
    checks.integer(who, "vocab_size", vocab_size, 1 if char else 256, optional=char)


@checks.arguments(valid_fraction=checks.interval(0, 1, "()"))
def split_text(text: str, valid_fraction: float = 0.1) -> tuple[str, str]:
    """Split text into (train, valid) with about `valid_fraction` of it last, cutting after a
    newline so no line is split between the two. Where the last line holds the cut (no text
    follows the next newline but blank lines), the cut is in that line if text follows it
    there: cutting at a line end would leave nothing to validate on."""
    cut = int(len(text) * (1 - valid_fraction))
    newline = text.find("\n", cut)
    if newline != -1 and (text[newline + 1 :].strip() or not text[cut:].strip()):
        cut = newline + 1
    return text[:cut], text[cut:]


@checks.arguments(every=checks.at_least(2))
def split_documents(documents: list[str], every: int = 10) -> tuple[str, str]:
    """Send every `every`-th document to validation and join each part with newlines.

    Splitting by document keeps any one file wholly in one part, so validation measures
    generalisation to unseen files rather than to unseen halves of seen ones.
    """
    train = [doc for i, doc in enumerate(documents) if i % every != every - 1]
    valid = [doc for i, doc in enumerate(documents) if i % every == every - 1]
    return "\n".join(train), "\n".join(valid)


def _tokenise_cached(
    name: str, train_text: str, valid_text: str, vocab_size: int | None, char: bool
) -> tuple[BPETokeniser | CharTokeniser, np.ndarray, np.ndarray]:
    """Train a tokeniser and encode both parts, or load the result of doing so earlier."""
    kind = "char" if char else f"bpe{vocab_size}"
    digest = hashlib.sha256()
    # The separators keep ("ab", "c") and ("a", "bc") apart.
    for part in (_CACHE_VERSION, kind, "" if char else GPT2_SPLIT_PATTERN, train_text, valid_text):
        digest.update(part.encode("utf-8", errors="surrogatepass") + b"\0")
    safe_name = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    stem = cache_dir() / "tokenised" / f"{safe_name}-{kind}-{digest.hexdigest()[:16]}"
    tokeniser_path, tokens_path = Path(f"{stem}.json"), Path(f"{stem}.npz")

    if tokeniser_path.is_file() and tokens_path.is_file():
        try:
            tokeniser = load_tokeniser(tokeniser_path)
            with np.load(tokens_path, allow_pickle=False) as arrays:
                train, valid = arrays["train"], arrays["valid"]
            if train.dtype == valid.dtype == np.int32 and train.ndim == valid.ndim == 1:
                return tokeniser, train, valid
            warnings.warn(f"rebuilding {tokens_path}: unexpected arrays in the cache", stacklevel=3)
        except Exception as e:  # a cache unreadable for any reason is simply rebuilt
            warnings.warn(f"rebuilding unreadable cache {stem}.*: {e}", stacklevel=3)

    if char:
        tokeniser = CharTokeniser().train(train_text + valid_text)
    else:
        tokeniser = BPETokeniser(vocab_size).train(train_text)
    train, valid = tokeniser.encode(train_text), tokeniser.encode(valid_text)

    tokeniser.save(tokeniser_path)
    with atomic_write(tokens_path) as f:
        np.savez(f, train=train, valid=valid)
    return tokeniser, train, valid
