"""Special tokens spelt out in a text, found as tiktoken's ``allowed_special`` and Hugging
Face's ``tokenizers`` (its added vocabulary) find them.

    text -> pieces: the ordinary text between matches (str) and the matched tokens' ids (int)

By default a tokeniser's ``encode`` reads a special token spelt in a text as ordinary text
(tiktoken's ``encode_ordinary``, transformers' ``split_special_tokens=True``): a user's text
cannot forge a document boundary or a chat turn. ``allowed_special`` names the tokens that
may be matched (a chat template's ``<|im_start|>``), "all" every one.

A match is the leftmost, and of the tokens that start there the longest (``tokenizers``'
Aho-Corasick ``LeftmostLongest``; a regex alternation with the longer tokens first finds the
same). An added token of a tokenizer.json may also take the whitespace around it: ``lstrip``
(before it, back to the previous match) and ``rstrip`` (after it), whitespace as Rust's
``char::is_whitespace`` (Unicode's White_Space: Python's ``isspace`` less U+001C-U+001F).
"""

import functools
import re
from collections.abc import Iterable

import numpy as np

ALL = "all"
_NOT_RUST_WHITESPACE = frozenset("\x1c\x1d\x1e\x1f")  # Python's isspace, not White_Space


def allowed_tokens(allowed: Iterable[str] | str, special: dict[str, int], who: str) -> dict:
    """The special tokens ``allowed`` names (an iterable of them, or "all"), token -> id; a
    name that is no special token of the tokeniser is an error."""
    if allowed == ():  # the default: none (the common case, kept cheap)
        return {}
    if isinstance(allowed, str):
        if allowed != ALL:
            raise ValueError(f'{who}: allowed_special must be "all" or a set of special tokens, '
                             f"got the string {allowed!r}")  # fmt: skip
        return dict(special)
    try:
        names = set(allowed)
    except TypeError:
        raise TypeError(f'{who}: allowed_special must be "all" or a set of special tokens, '
                        f"got {type(allowed).__name__}") from None  # fmt: skip
    unknown = sorted(map(repr, names - special.keys()))
    if unknown:
        known = ", ".join(map(repr, special)) or "none"
        raise ValueError(f"{who}: allowed_special names {', '.join(unknown)}, which are not "
                         f"special tokens of this tokeniser (it has {known})")  # fmt: skip
    return {name: special[name] for name in names}


def split_special(text: str, tokens: dict[str, int], strip: dict | None = None) -> list:
    """``text`` as its pieces: ordinary text (non-empty str) and the ids (int) of the
    ``tokens`` (token -> id) found in it; ``strip``: token -> (lstrip, rstrip)."""
    if not tokens or not text:
        return [text] if text else []
    strip = strip or {}
    pieces, done = [], 0  # done: where the text not yet given out starts
    for match in _alternation(tuple(sorted(tokens))).finditer(text):
        start, stop = match.span()
        lstrip, rstrip = strip.get(match.group(), (False, False))
        if lstrip:
            start = max(done, _whitespace_before(text, start))
        if rstrip:
            stop = _whitespace_after(text, stop)
        if done < start:
            pieces.append(text[done:start])
        pieces.append(tokens[match.group()])
        done = max(done, stop)
    if done < len(text):
        pieces.append(text[done:])
    return pieces


def added_pieces(text: str, tokens: dict[str, int], options: dict, normalize=None,
                 normalized=(), who: str = "encode") -> list:
    """``text`` as the added vocabulary of ``tokenizers`` cuts it: the ``tokens`` (token ->
    id) found in it; the text between them through ``normalize`` (a function; None: none);
    in that, the tokens marked ``normalized`` found as ``normalize`` spells them (Llama 2's
    "<s>" as "▁<s>"). Gives ids (int), and the ordinary pieces as (text, first): ``first``
    where the piece starts the text. ``options``: token -> its options (lstrip, rstrip;
    single_word is refused)."""
    if words := sorted(t for t in tokens if options.get(t, {}).get("single_word")):
        raise ValueError(f"{who}: {', '.join(words)} match only as whole words (single_word), "
                         "which is not implemented; leave them out of allowed_special")  # fmt: skip
    late = set(normalized) & tokens.keys() if normalize else set()
    strip = {t: (o.get("lstrip", False), o.get("rstrip", False)) for t, o in options.items()}
    strip.update({normalize(t): strip[t] for t in late if t in strip})
    early = {t: i for t, i in tokens.items() if t not in late}
    late = {normalize(t): tokens[t] for t in late}
    pieces = []
    for n, piece in enumerate(split_special(text, early, strip)):
        if isinstance(piece, int):
            pieces.append(piece)
            continue
        for m, part in enumerate(split_special(normalize(piece) if normalize else piece, late,
                                               strip)):  # fmt: skip
            pieces.append(part if isinstance(part, int) else (part, n == m == 0))
    return pieces


def joined(parts: list) -> np.ndarray:
    """The pieces' ids (each a list or an array) as one int32 array (n_ids,)."""
    return np.concatenate([np.asarray(part, dtype=np.int32) for part in [[], *parts]])


@functools.lru_cache(maxsize=64)
def _alternation(tokens: tuple[str, ...]) -> re.Pattern:
    """One regex for ``tokens``, the longer first (so the longest of those starting at a place
    matches there)."""
    return re.compile("|".join(map(re.escape, sorted(tokens, key=len, reverse=True))))


def _is_whitespace(ch: str) -> bool:
    return ch.isspace() and ch not in _NOT_RUST_WHITESPACE


def _whitespace_before(text: str, start: int) -> int:
    while start > 0 and _is_whitespace(text[start - 1]):
        start -= 1
    return start


def _whitespace_after(text: str, stop: int) -> int:
    while stop < len(text) and _is_whitespace(text[stop]):
        stop += 1
    return stop
