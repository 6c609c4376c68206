"""Byte-pair encoding of text chunks: the merge loop of ``tricycle.tokeniser.BPETokeniser``.

A chunk's bytes are merged as tiktoken merges them (the lowest-ranked adjacent pair first:
a rescan for short chunks, a heap for long ones), and the ids of every distinct chunk are
cached. With tiktoken installed, long texts go through it instead, once it is checked to give
the same ids. The split patterns that cut text into chunks live here too.
"""

import functools
import heapq
import re
import warnings
from itertools import chain

import numpy as np

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
# The library's split patterns by name; each covers every character (a tested property).
SPLIT_PATTERNS = {"gpt2": GPT2_SPLIT_PATTERN}
N_BYTES = 256
# Bound on the per-tokeniser chunk -> ids cache, so encoding a huge corpus cannot grow memory
# without limit. Natural text has far fewer distinct chunks than this.
_CACHE_LIMIT = 1 << 18
# Chunks longer than this (in bytes) are merged with a heap (n log n) instead of rescanning
# every pair after each merge (n^2): a 1 MB run of one character must not hang encoding.
_LONG_PIECE = 64


# ------------------------------------------------------------------ the merge loop (encoding)
class _PieceCache(dict):
    """chunk -> its token ids. A missing chunk is encoded on first use (`__missing__`), so
    the hot loop of `encode` is one C-level `map` over the chunks. Cleared when full."""

    def __init__(self, ranks: dict[bytes, int]):
        super().__init__()
        self.ranks = ranks

    def __missing__(self, chunk: str) -> tuple[int, ...]:
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        ids = self[chunk] = byte_pair_encode(chunk.encode("utf-8"), self.ranks)
        return ids


def byte_pair_encode(piece: bytes, ranks: dict[bytes, int]) -> tuple[int, ...]:
    """The ids of one chunk, as tiktoken computes them: a chunk that is a token is that
    token; otherwise start from its bytes and repeatedly merge the adjacent pair whose
    concatenation has the lowest rank (the leftmost on ties) until no pair is a token."""
    whole = ranks.get(piece)
    if whole is not None:
        return (whole,)
    parts = _merge_long(piece, ranks) if len(piece) > _LONG_PIECE else _merge_short(piece, ranks)
    return tuple(map(ranks.__getitem__, parts))


def _merge_short(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The merge loop by rescanning: after each merge only the two neighbouring pair ranks
    change. O(n^2) in the piece's length, fastest for the short chunks of natural text."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    get = ranks.get
    pair_ranks = [get(a + b) for a, b in zip(parts, parts[1:])]  # rank of (parts[i], parts[i+1])
    while True:
        best, i = None, -1
        for j, rank in enumerate(pair_ranks):
            if rank is not None and (best is None or rank < best):
                best, i = rank, j
        if best is None:
            return parts
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        del pair_ranks[i]
        if i > 0:
            pair_ranks[i - 1] = get(parts[i - 1] + parts[i])
        if i < len(pair_ranks):
            pair_ranks[i] = get(parts[i] + parts[i + 1])


def _merge_long(piece: bytes, ranks: dict[bytes, int]) -> list[bytes]:
    """The same merges in the same order in O(n log n): a heap of (rank, start) over a
    linked list of parts. A heap entry is stale once its pair no longer has that rank."""
    n = len(piece)
    next_start = list(range(1, n + 1))  # part i is piece[i : next_start[i]]
    prev_start = list(range(-1, n - 1))
    heap = [(r, i) for i in range(n - 1) if (r := ranks.get(piece[i : i + 2])) is not None]
    heapq.heapify(heap)
    alive = bytearray(b"\x01") * n
    while heap:
        rank, i = heapq.heappop(heap)
        j = next_start[i] if alive[i] else n
        if j >= n or ranks.get(piece[i : next_start[j]]) != rank:
            continue  # stale: part i was absorbed or has grown since this entry was pushed
        k = next_start[j]  # merge parts i and j
        alive[j] = 0
        next_start[i] = k
        if k < n:
            prev_start[k] = i
            if (r := ranks.get(piece[i : next_start[k]])) is not None:
                heapq.heappush(heap, (r, i))
        h = prev_start[i]
        if h >= 0 and (r := ranks.get(piece[h:k])) is not None:
            heapq.heappush(heap, (r, h))
    return [piece[i : next_start[i]] for i in range(n) if alive[i]]


def _split_lossless(regex: re.Pattern, text: str) -> list[str]:
    """Chunks of `text` for any regex: each match, and each stretch between matches, in
    order (empty ones dropped). They concatenate back to `text` by construction."""
    chunks, end = [], 0
    for match in regex.finditer(text):
        start, stop = match.span()
        if start > end:
            chunks.append(text[end:start])
        if stop > start:
            chunks.append(text[start:stop])
        end = max(end, stop)
    if end < len(text):
        chunks.append(text[end:])
    return chunks


# ------------------------------------------------------------------ tiktoken (optional)
def _build_tiktoken(tokeniser):
    """A tiktoken Encoding that gives `tokeniser`'s ids, or None.

    tiktoken splits with Rust's regex, whose \\w and \\s are not Python's, so the split
    pattern is rewritten with explicit code point classes computed from Python's own `re`:
    the same chunks for every character. Before use, both encoders must agree on a probe
    text holding every token and the characters where the two regex engines differ.
    """
    if tokeniser.pattern != GPT2_SPLIT_PATTERN:
        return None
    try:
        import tiktoken  # noqa: PLC0415 - optional dependency, imported on first use
    except ImportError:
        return None
    encoding = tiktoken.Encoding(
        f"tricycle-bpe-{tokeniser.n_tokens}",
        pat_str=_tiktoken_gpt2_pattern(),
        mergeable_ranks=tokeniser._ranks,
        special_tokens={},
    )
    tokens = [tokeniser.decode([i]) for i in range(N_BYTES, N_BYTES + len(tokeniser.merges))]
    probe = _PROBE + " ".join(tokens) + "\n" + "|".join(tokens)
    pure = np.fromiter(
        chain.from_iterable(map(tokeniser._cache.__getitem__, tokeniser._split(probe))), np.int32
    )
    if not np.array_equal(pure, encoding.encode_ordinary(probe)):
        warnings.warn(
            "BPETokeniser: tiktoken gives different ids from the pure Python encoder on the "
            "probe text; encoding in pure Python",
            stacklevel=3,
        )
        return None
    return encoding


# Characters where Python's and Rust's regex classes differ, contractions, whitespace runs.
_PROBE = (
    "don't I'll we've they're he'd 'S 'LL \x1c\x1d\x1e\x1f \x85\xa0\u2028\u3000 x\u3000y "
    "e\u0301 ² ³ ½ ٣ ४ 𝟘 Ⅻ 〇 _a_ __init__ a1_b2 \t\n\r\n  \n   x  \n\n\t y 🙂👩\u200d👧 日本語 "
)


@functools.lru_cache(maxsize=1)
def _tiktoken_gpt2_pattern() -> str:
    """GPT2_SPLIT_PATTERN in Rust regex syntax, with Python's classes spelt out."""
    letters, digits = _rust_class(r"[^\W\d_]"), _rust_class(r"\d")
    other, space = _rust_class(r"[^\s\w]|_"), _rust_class(r"\s")
    non_space = "[^" + space[1:]
    return (
        r"'(?:[sdmt]|ll|ve|re)"
        f"| ?{letters}+"
        f"| ?{digits}+"
        f"| ?{other}+"
        f"|{space}+(?!{non_space})"
        f"|{space}+"
    )


def _rust_class(python_class: str) -> str:
    """A Rust regex class of exactly the code points that `python_class` matches in `re`."""
    runs = []
    for start, stop in ((0, 0xD800), (0xE000, 0x110000)):  # every code point but surrogates
        chars = "".join(map(chr, range(start, stop)))
        for match in re.finditer(f"(?:{python_class})+", chars):
            runs.append((start + match.start(), start + match.end() - 1))
    return "[" + "".join(f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in runs) + "]"
