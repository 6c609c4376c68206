"""The steps of a Hugging Face ``tokenizer.json`` that ``PretrainedTokeniser`` runs, as plain
functions: each is read from its JSON (one not implemented is refused by name) and run as
the ``tokenizers`` library runs it.

    text -> normalizer (NFC, ...; Llama 2's Prepend("▁") + Replace(" ", "▁"))
         -> pre-tokenizer (a split regex + ByteLevel; or Metaspace: " " -> "▁")
         -> BPE model, per word: characters (or their bytes) -> merges -> ids
         -> post-processor (a template: special tokens before the text, ``prefix_ids``)
    ids  -> tokens -> decoder (ByteLevel; or Replace "▁" -> " ", ByteFallback, Fuse, Strip)

The BPE model's word starts as its characters. A character that is not a token becomes the
tokens of its UTF-8 bytes, ``<0xNN>`` (``byte_fallback``: Llama 2, Mistral), else the unknown
token, else nothing. Then the adjacent pair that comes first in the merge list is merged, the
leftmost first, until no pair is a merge: the order of ``tokenizers``' heap. The decoder works
on the list of token strings; ``decode_tokens`` runs it, ``token_bytes`` gives one token's
bytes for streaming (its steps that do not look at the neighbours).
"""

import functools
import heapq
import re
import unicodedata

UNICODE_FORMS = ("NFC", "NFD", "NFKC", "NFKD")
PREPEND_SCHEMES = ("always", "first", "never")
_LONG_WORD = 64  # words longer than this merge with a heap (n log n) instead of rescans (n^2)
_BYTE_TOKEN = re.compile(r"<0x(\+[0-9A-Fa-f]|[0-9A-Fa-f]{2})>")  # as Rust's u8 from_str_radix


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


@functools.cache
def _unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in bytes_to_unicode().items()}


def flat_steps(spec, key: str, field: str) -> list[dict]:
    """The steps of a tokenizer.json entry: none (null), one, or a ``Sequence`` (its list under
    ``key``, nested sequences flattened); a plain list is a sequence already."""
    if spec is None:
        return []
    if isinstance(spec, list):
        return [step for item in spec for step in flat_steps(item, key, field)]
    if not isinstance(spec, dict):
        raise ValueError(f"{field}: expected an object, got {spec!r}")
    if spec.get("type") == "Sequence":
        return flat_steps(spec.get(key) or [], key, field)
    return [spec]


def _one_char(step: dict, name: str, field: str) -> str:
    value = step.get(name)
    if not (isinstance(value, str) and len(value) == 1):
        raise ValueError(f"{field} {step.get('type')} {name}={value!r}: expected one character")
    return value


def _replace(step: dict, field: str) -> dict:
    """A Replace step of a string by a string (a regex is refused: it could take exponential
    time, and its syntax is Oniguruma's)."""
    pattern, content = step.get("pattern") or {}, step.get("content")
    string = pattern.get("String")
    if "Regex" in pattern:
        raise ValueError(f"{field} Replace of the regex {pattern['Regex']!r} is not supported "
                         "(only of a string)")  # fmt: skip
    if not (isinstance(string, str) and string and isinstance(content, str)):
        raise ValueError(f"{field} Replace {step!r}: expected a non-empty pattern String and "
                         "a content string")  # fmt: skip
    return {"type": "Replace", "pattern": {"String": string}, "content": content}


# ------------------------------------------------------------------ normalizer
def normalizer_steps(spec) -> list[dict]:
    """A normalizer as checked steps: Unicode normal forms, Prepend and Replace of a string."""
    steps = []
    for step in flat_steps(spec, "normalizers", "normalizer"):
        kind = step.get("type")
        if kind in UNICODE_FORMS:
            steps.append({"type": kind})
        elif kind == "Prepend" and isinstance(step.get("prepend"), str):
            steps.append({"type": kind, "prepend": step["prepend"]})
        elif kind == "Replace":
            steps.append(_replace(step, "normalizer"))
        else:
            raise ValueError(f"normalizer {kind!r} is not supported (only NFC, NFD, NFKC, NFKD, "
                             "Prepend, and Replace of a string)")  # fmt: skip
    return steps


def normalize(text: str, steps: list[dict]) -> str:
    """``text`` through the normalizer's steps. Prepend leaves an empty text empty."""
    for step in steps:
        kind = step["type"]
        if kind == "Prepend":
            text = step["prepend"] + text if text else text
        elif kind == "Replace":
            text = text.replace(step["pattern"]["String"], step["content"])
        else:
            text = unicodedata.normalize(kind, text)
    return text


# ------------------------------------------------------------------ the Metaspace pre-tokenizer
def metaspace_options(step: dict) -> dict:
    """A Metaspace pre-tokenizer's options; an old file's ``add_prefix_space`` is its
    ``prepend_scheme`` "always" (true) or "never" (false), and it splits."""
    replacement = _one_char(step, "replacement", "pre_tokenizer")
    scheme = step.get("prepend_scheme")
    if scheme is None:
        scheme = "always" if step.get("add_prefix_space", True) else "never"
    if scheme not in PREPEND_SCHEMES:
        raise ValueError(f"pre_tokenizer Metaspace prepend_scheme={scheme!r}: expected one of "
                         f"{PREPEND_SCHEMES}")  # fmt: skip
    return {"replacement": replacement, "prepend_scheme": scheme,
            "split": bool(step.get("split", True))}  # fmt: skip


def metaspace(text: str, options: dict, first: bool = True) -> list[str]:
    """The words of ``text``: spaces become the replacement, which also goes before a text
    not starting with it (``prepend_scheme`` "first": only where ``text`` starts the whole
    text, not after an added token); with ``split``, each replacement starts a word."""
    mark, scheme = options["replacement"], options["prepend_scheme"]
    text = text.replace(" ", mark)
    if text and (scheme == "always" or (scheme == "first" and first)) and not text.startswith(mark):
        text = mark + text
    if not options["split"]:
        return [text] if text else []
    return _words_after(mark).findall(text)


@functools.cache
def _words_after(mark: str) -> re.Pattern:
    mark = re.escape(mark)
    return re.compile(f"{mark}[^{mark}]*|[^{mark}]+")


# ------------------------------------------------------------------ the BPE model
def initial_symbols(word: str, known, byte_fallback: bool, unk: str | None,
                    fuse_unk: bool) -> list[str]:  # fmt: skip
    """The word before merging, as ``tokenizers``' BPE builds it: a character that is a token
    is itself; another is its bytes' ``<0xNN>`` tokens (``byte_fallback``, when they all are
    tokens), else ``unk`` (one for a run of them with ``fuse_unk``), else dropped. An unknown
    token waits for the next known character, as there."""
    symbols, waiting = [], None
    for c in word:
        if c in known:
            if waiting is not None:
                symbols.append(waiting)
                waiting = None
            symbols.append(c)
            continue
        if byte_fallback:
            pieces = [f"<0x{b:02X}>" for b in c.encode("utf-8")]
            if all(piece in known for piece in pieces):
                symbols += pieces
                continue
        if unk is not None:
            if waiting is not None and not fuse_unk:
                symbols.append(waiting)
            waiting = unk
    if waiting is not None:
        symbols.append(waiting)
    return symbols


def merge_by_pair_rank(word, ranks: dict[tuple[str, str], int]) -> list[str]:
    """Start from the symbols of ``word`` (a string's characters, or a list); while some
    adjacent pair is in ``ranks``, merge the leftmost of the lowest-ranked ones."""
    symbols = list(word)
    if len(symbols) > _LONG_WORD:
        return _merge_with_heap(symbols, ranks)
    pair_ranks = [ranks.get(pair) for pair in zip(symbols, symbols[1:])]
    while True:
        best, i = None, -1
        for j, rank in enumerate(pair_ranks):
            if rank is not None and (best is None or rank < best):
                best, i = rank, j
        if best is None:
            return symbols
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
        del pair_ranks[i]
        if i > 0:
            pair_ranks[i - 1] = ranks.get((symbols[i - 1], symbols[i]))
        if i < len(pair_ranks):
            pair_ranks[i] = ranks.get((symbols[i], symbols[i + 1]))


def _merge_with_heap(symbols: list, ranks: dict[tuple[str, str], int]) -> list[str]:
    """The same merges in the same order in O(n log n): a heap of (rank, start) over a linked
    list of symbols; an entry is stale once the pair at its start is no longer that rank's."""
    n = len(symbols)
    after, before = list(range(1, n + 1)), list(range(-1, n - 1))
    heap = [(r, i) for i, pair in enumerate(zip(symbols, symbols[1:]))
            if (r := ranks.get(pair)) is not None]  # fmt: skip
    heapq.heapify(heap)
    while heap:
        rank, i = heapq.heappop(heap)
        j = after[i]
        if symbols[i] is None or j >= n or ranks.get((symbols[i], symbols[j])) != rank:
            continue
        symbols[i], symbols[j] = symbols[i] + symbols[j], None  # merge i and j
        k = after[i] = after[j]
        if k < n:
            before[k] = i
            if (r := ranks.get((symbols[i], symbols[k]))) is not None:
                heapq.heappush(heap, (r, i))
        h = before[i]
        if h >= 0 and (r := ranks.get((symbols[h], symbols[i]))) is not None:
            heapq.heappush(heap, (r, h))
    return [s for s in symbols if s is not None]


def glue_before(mark: str, vocab) -> frozenset[str]:
    """The characters that some token has just before ``mark``."""
    return frozenset(a for token in vocab for a, b in zip(token, token[1:]) if b == mark)


def cut_before(word: str, mark: str, glue: frozenset[str], known) -> list[str]:
    """``word`` cut before each ``mark`` (a token) that follows a known character outside
    ``glue``. No merge crosses such a cut (the merged token would hold that character before
    ``mark``), so the pieces merge alone to the word's tokens: a long text becomes words that
    a cache remembers."""
    pieces, start = [], 0
    at = word.find(mark, 1)
    while at != -1:
        c = word[at - 1]
        if c in known and c not in glue:
            pieces.append(word[start:at])
            start = at
        at = word.find(mark, at + 1)
    pieces.append(word[start:])
    return pieces


# ------------------------------------------------------------------ post-processor
def template_prefix(spec) -> list[int]:
    """The ids a TemplateProcessing post-processor (alone or in a Sequence, beside ByteLevel's
    offsets) puts before a single text: its special tokens ahead of ``$A``."""
    prefix = None
    for step in flat_steps(spec, "processors", "post_processor"):
        if step.get("type") == "ByteLevel":
            continue
        if step.get("type") != "TemplateProcessing":
            raise ValueError(f"post_processor {step.get('type')!r} is not supported (only "
                             "TemplateProcessing and ByteLevel)")  # fmt: skip
        ids = []
        for piece in step.get("single", []):
            if "Sequence" in piece:
                break
            token = piece.get("SpecialToken", {}).get("id")
            try:
                ids += step["special_tokens"][token]["ids"]
            except (KeyError, TypeError):
                raise ValueError(f"post_processor names {token!r}, which its special_tokens "
                                 "lack") from None  # fmt: skip
        prefix = ids if prefix is None else prefix
    return prefix or []


# ------------------------------------------------------------------ decoder
def decoder_steps(spec, byte_level: bool) -> list[dict]:
    """A decoder as checked steps. None: ByteLevel for a byte-level tokeniser (GPT-2's
    files); for another, ``tokenizers`` would join the tokens with spaces, which is refused."""
    if spec is None:
        if byte_level:
            return [{"type": "ByteLevel"}]
        raise ValueError("decoder is null (tokenizers would join the tokens with spaces): not "
                         "supported for a tokeniser that is not byte-level")  # fmt: skip
    steps = []
    for step in flat_steps(spec, "decoders", "decoder"):
        kind = step.get("type")
        if kind in ("ByteLevel", "ByteFallback", "Fuse"):
            steps.append({"type": kind})
        elif kind == "Replace":
            steps.append(_replace(step, "decoder"))
        elif kind == "Strip":
            start, stop = step.get("start", 0), step.get("stop", 0)
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in (start, stop)):  # fmt: skip
                raise ValueError(f"decoder Strip {step!r}: start and stop must be counts")
            steps.append({"type": kind, "content": _one_char(step, "content", "decoder"),
                          "start": start, "stop": stop})  # fmt: skip
        elif kind == "Metaspace":
            steps.append({"type": kind, **metaspace_options(step)})
        else:
            raise ValueError(f"decoder {kind!r} is not supported (only ByteLevel, Replace of a "
                             "string, ByteFallback, Fuse, Strip and Metaspace)")  # fmt: skip
    return steps


def decode_tokens(tokens: list[str], steps: list[dict]) -> str:
    """The text of ``tokens`` (strings): each step maps the list to a new list, as in
    ``tokenizers``; the result is joined."""
    for step in steps:
        kind = step["type"]
        if kind == "ByteLevel":
            tokens = [b"".join(map(_byte_level, tokens)).decode("utf-8", errors="replace")]
        elif kind == "Replace":
            tokens = [t.replace(step["pattern"]["String"], step["content"]) for t in tokens]
        elif kind == "ByteFallback":
            tokens = _byte_fallback(tokens)
        elif kind == "Fuse":
            tokens = ["".join(tokens)]
        elif kind == "Strip":
            tokens = [_strip(t, step["content"], step["start"], step["stop"]) for t in tokens]
        else:  # Metaspace: every replacement of the first token goes (unless "never")
            mark, first = step["replacement"], step["prepend_scheme"] != "never"
            tokens = [t.replace(mark, "" if i == 0 and first else " ")
                      for i, t in enumerate(tokens)]  # fmt: skip
    return "".join(tokens)


def token_bytes(token: str, steps: list[dict]) -> bytes:
    """One token's bytes for streaming: the decoder's steps that map a token alone, up to a
    Fuse (what follows it, and Metaspace's first-token rule, belong to a whole text)."""
    for step in steps:
        kind = step["type"]
        if kind == "Fuse":
            break
        if kind == "ByteLevel":
            return _byte_level(token)
        if kind == "ByteFallback" and (match := _BYTE_TOKEN.fullmatch(token)):
            return bytes([int(match[1], 16)])
        if kind == "Replace":
            token = token.replace(step["pattern"]["String"], step["content"])
        elif kind == "Strip":
            token = _strip(token, step["content"], step["start"], step["stop"])
        elif kind == "Metaspace":
            token = token.replace(step["replacement"], " ")
    return token.encode("utf-8")


def _byte_level(token: str) -> bytes:
    """A ByteLevel token's bytes; a token with a character outside GPT-2's map (an added
    token) is its own UTF-8."""
    table = _unicode_to_bytes()
    try:
        return bytes([table[c] for c in token])
    except KeyError:
        return token.encode("utf-8")


def _byte_fallback(tokens: list[str]) -> list[str]:
    """Runs of ``<0xNN>`` tokens become their text, or one U+FFFD per byte where they are not
    valid UTF-8."""
    out, held = [], bytearray()
    for token in [*tokens, None]:
        match = _BYTE_TOKEN.fullmatch(token) if token is not None else None
        if match:
            held.append(int(match[1], 16))
            continue
        if held:
            try:
                out.append(held.decode("utf-8"))
            except UnicodeDecodeError:
                out += ["\ufffd"] * len(held)
            held.clear()
        if token is not None:
            out.append(token)
    return out


def _strip(token: str, content: str, start: int, stop: int) -> str:
    """``token`` less up to ``start`` leading and ``stop`` trailing ``content`` characters."""
    i, j = 0, len(token)
    while i < min(start, j) and token[i] == content:
        i += 1
    while len(token) - j < stop and j > i and token[j - 1] == content:
        j -= 1
    return token[i:j]
