"""What crosses a tokeniser's boundary: the text and ids it is given, and its JSON files.

The checks turn a wrong argument into an error naming the tokeniser and what was expected;
the files carry a format tag ("tricycle-bpe", "tricycle-char") and a version, written
atomically and read back without running any code.
"""

import json
import os
from collections.abc import Iterable

import numpy as np

from tricycle import checks
from tricycle.atomic import atomic_write
from tricycle.bpe import N_BYTES, SPLIT_PATTERNS

_FORMAT_VERSION = 1


def _string_list(values) -> list[str] | None:
    """`values` as a list of non-empty strings, or None if it is not one (a lone str is not)."""
    if isinstance(values, str | bytes):
        return None
    try:
        values = list(values)
    except TypeError:
        return None
    return values if all(isinstance(v, str) and v for v in values) else None


def _check_text(text, who: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{who}: expected a str, got {type(text).__name__}")


def _surrogate_error(text: str, who: str) -> ValueError:
    """The error for text that has no UTF-8 encoding."""
    pos = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
    return ValueError(
        f"{who}: character {text[pos]!r} at position {pos} has no UTF-8 encoding (a lone surrogate)"
    )


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


def _json_text(data: dict) -> str:
    """A tokeniser file's text: ASCII JSON, the same bytes whatever the locale."""
    return json.dumps(data, ensure_ascii=True)


def _save_text(path: str | os.PathLike, text: str) -> None:
    with atomic_write(path, "w") as f:
        f.write(text)


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


def _bpe_fields(path, data: dict, trust_pattern: bool) -> tuple[int, str, list[str], list]:
    """(vocab_size, pattern, special_tokens, merges) of a BPE tokeniser file's ``data``,
    each checked: a ValueError naming ``path`` and the field otherwise. A split pattern that
    is not one of ``SPLIT_PATTERNS`` is refused unless ``trust_pattern``."""
    vocab_size, pattern, merges = (
        data.get("vocab_size"),
        data.get("pattern"),
        data.get("merges"),
    )
    special_tokens = data.get("special_tokens", [])
    if not isinstance(special_tokens, list) or _string_list(special_tokens) is None:
        raise ValueError(f"{path}: special_tokens must be a list of non-empty strings")
    n_min = N_BYTES + len(special_tokens)
    if not checks.is_integer(vocab_size) or vocab_size < n_min:
        raise ValueError(f"{path}: vocab_size must be an int >= {n_min}, got {vocab_size!r}")
    if not isinstance(pattern, str):
        raise ValueError(f"{path}: pattern must be a string, got {pattern!r}")
    if not (trust_pattern or pattern in SPLIT_PATTERNS or pattern in SPLIT_PATTERNS.values()):
        raise ValueError(
            f"{path}: split pattern {pattern!r} is not one of the library's "
            f"({', '.join(SPLIT_PATTERNS)}); a regex from a file can take exponential time "
            "on some text, so it is used only with BPETokeniser.load(path, "
            "trust_pattern=True)"
        )
    n_merges = vocab_size - n_min
    if not isinstance(merges, list) or len(merges) > n_merges:
        raise ValueError(
            f"{path}: merges must be a list of at most vocab_size - {n_min} = {n_merges} pairs"
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
    return vocab_size, pattern, special_tokens, merges
