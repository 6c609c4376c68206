"""Tests for tricycle.tokeniser: BPE and character tokenisers, files, streaming decode."""

import json
import os
import pickle
import re
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA_DIR
from hypothesis import given, settings
from hypothesis import strategies as st

from tricycle.bpe import _merge_long, _merge_short
from tricycle.tokeniser import (
    _ACCELERATE_MIN_CHARS,
    END_OF_TEXT,
    GPT2_SPLIT_PATTERN,
    SPLIT_PATTERNS,
    BPETokeniser,
    CharTokeniser,
    StreamDecoder,
    load_tokeniser,
)

SHAKESPEARE = DATA_DIR / "tinyshakespeare.txt"

# Strings that break naive tokenisers: multi-byte UTF-8, combining marks, ZWJ sequences, NUL.
TRICKY = [
    "",
    "a",
    " ",
    "\n",
    "é",
    "e\u0301",  # e + combining acute accent
    "🙂",
    "👩\u200d👩\u200d👧",  # family emoji: a ZWJ sequence
    "日本語のテキスト",
    "a\x00b",
    "  leading and trailing  \n\n\t",
    "don't you'll 123 4567 __init__ x_y",
]


@pytest.fixture(scope="module")
def shakespeare_text() -> str:
    if not SHAKESPEARE.is_file():
        pytest.skip(f"{SHAKESPEARE} not present")
    return SHAKESPEARE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shakespeare_bpe(shakespeare_text) -> BPETokeniser:
    """A 1,024-token BPE trained on all of tiny-shakespeare (timed, printed with -s)."""
    start = time.perf_counter()
    tokeniser = BPETokeniser(1024).train(shakespeare_text)
    print(f"\nBPE training, vocab 1024, tiny-shakespeare: {time.perf_counter() - start:.2f} s")
    return tokeniser


@pytest.fixture(scope="module")
def small_bpe() -> BPETokeniser:
    """A quick tokeniser trained on a paragraph of mixed text."""
    text = " ".join(TRICKY) * 20 + "the theme of the thesis is that the there there " * 50
    return BPETokeniser(320).train(text)


# ------------------------------------------------------------------------------ round trip
@pytest.mark.parametrize("text", TRICKY)
def test_round_trip_tricky_strings(small_bpe, text):
    ids = small_bpe.encode(text)
    assert ids.dtype == np.int32 and ids.ndim == 1
    assert small_bpe.decode(ids) == text


@settings(max_examples=100)
@given(text=st.text())
def test_round_trip_any_unicode(shakespeare_bpe, text):
    assert shakespeare_bpe.decode(shakespeare_bpe.encode(text)) == text


@given(text=st.text(max_size=50))
def test_round_trip_untrained_is_bytes(text):
    tokeniser = BPETokeniser(300)
    ids = tokeniser.encode(text)
    assert ids.tolist() == list(text.encode("utf-8"))
    assert tokeniser.decode(ids) == text


def test_lone_surrogate_is_a_clear_error(small_bpe):
    with pytest.raises(ValueError, match="position 3"):
        small_bpe.encode("abc\ud800")


# -------------------------------------------------------------------------------- training
def naive_bpe(text: str, n_merges: int) -> list[tuple[int, int]]:
    """Reference: recount every pair before every merge (slow, obviously correct)."""
    words = Counter(re.findall(GPT2_SPLIT_PATTERN, text))
    seqs = {word: list(word.encode("utf-8")) for word in words}
    merges = []
    for new_id in range(256, 256 + n_merges):
        counts = Counter()
        for word, seq in seqs.items():
            for pair in zip(seq, seq[1:]):
                counts[pair] += words[word]
        if not counts:
            break
        pair = min(counts, key=lambda p: (-counts[p], p))  # most frequent, then smallest
        merges.append(pair)
        for word, seq in seqs.items():
            out, i = [], 0
            while i < len(seq):
                if i + 1 < len(seq) and (seq[i], seq[i + 1]) == pair:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seqs[word] = out
    return merges


def test_incremental_training_matches_naive_reference(shakespeare_text):
    text = shakespeare_text[:20_000] + " aaaaaaa aaaa ééé 🙂🙂🙂 "  # repeated pairs overlap
    assert BPETokeniser(256 + 150).train(text).merges == naive_bpe(text, 150)


@settings(max_examples=50)
@given(text=st.text(alphabet="ab é🙂\n'", max_size=200), n_merges=st.integers(0, 30))
def test_incremental_training_matches_naive_reference_on_any_text(text, n_merges):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short texts may run out of pairs
        tokeniser = BPETokeniser(256 + n_merges).train(text)
    assert tokeniser.merges == naive_bpe(text, n_merges)
    assert tokeniser.decode(tokeniser.encode(text)) == text


def test_training_is_deterministic(shakespeare_text):
    text = shakespeare_text[:50_000]
    assert BPETokeniser(400).train(text).merges == BPETokeniser(400).train(text).merges


def test_merges_never_cross_chunk_boundaries(shakespeare_bpe):
    for token_id in range(shakespeare_bpe.n_tokens):
        token = shakespeare_bpe.decode_bytes([token_id])
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a fragment of a multi-byte character: one chunk by construction
        assert len(re.findall(GPT2_SPLIT_PATTERN, text)) == 1, text


def test_shakespeare_compression(shakespeare_text, shakespeare_bpe):
    start = time.perf_counter()
    ids = shakespeare_bpe.encode(shakespeare_text)
    print(f"\nBPE encoding tiny-shakespeare: {time.perf_counter() - start:.2f} s")

    n_bytes = len(shakespeare_text.encode("utf-8"))
    assert shakespeare_bpe.n_tokens == shakespeare_bpe.vocab_size == 1024
    assert ids.min() >= 0 and ids.max() < 1024
    assert n_bytes / len(ids) > 2.0  # measured: about 2.4 bytes per token
    assert shakespeare_bpe.decode(ids) == shakespeare_text


def test_more_merges_fewer_tokens(shakespeare_text):
    text = shakespeare_text[:100_000]
    counts = [len(BPETokeniser(size).train(text).encode(text)) for size in (256, 300, 500)]
    assert counts[0] == len(text.encode("utf-8"))
    assert counts[0] > counts[1] > counts[2]


def test_vocab_size_below_256_is_an_error():
    with pytest.raises(ValueError, match="BPETokeniser: vocab_size must be an integer >= 256"):
        BPETokeniser(255)


def test_small_text_stops_early_with_a_warning():
    with pytest.warns(UserWarning, match="only enough pairs for 2 of 744 merges"):
        tokeniser = BPETokeniser(1000).train("abc")
    assert tokeniser.vocab_size == 1000  # the configured size is kept
    assert tokeniser.n_tokens == 258
    assert tokeniser.decode(tokeniser.encode("abc")) == "abc"
    assert len(tokeniser.encode("abc")) == 1


# -------------------------------------------------------------------------------- decoding
@pytest.mark.parametrize("bad_id", [320, 1000, -1])
def test_decode_rejects_ids_outside_vocab(small_bpe, bad_id):
    with pytest.raises(ValueError, match=f"id {bad_id} is outside the vocabulary"):
        small_bpe.decode([65, bad_id])


def test_decode_accepts_lists_ints_and_arrays(small_bpe):
    assert small_bpe.decode([104, 105]) == small_bpe.decode(np.array([104, 105])) == "hi"
    assert small_bpe.decode(104) == "h"
    assert small_bpe.decode([]) == ""


@pytest.mark.parametrize("ids", [np.zeros((2, 2), dtype=np.int64), np.array([1.0, 2.0])])
def test_decode_rejects_bad_shapes_and_dtypes(small_bpe, ids):
    with pytest.raises(ValueError, match=r"shape \(2, 2\)|dtype float64"):
        small_bpe.decode(ids)


def test_decode_of_partial_character_uses_replacement(small_bpe):
    euro = "€".encode()  # 3 bytes
    assert small_bpe.decode(list(euro[:2])) == "\ufffd"
    assert small_bpe.decode_bytes(list(euro)) == euro


def test_stream_decoder_never_splits_characters(shakespeare_bpe):
    text = "Thou art 🙂 e\u0301 日本 — fine"
    stream = StreamDecoder(shakespeare_bpe)
    pieces = [stream.push(token) for token in shakespeare_bpe.encode(text)]
    pieces.append(stream.flush())
    assert "".join(pieces) == text
    assert not any("\ufffd" in piece for piece in pieces)


def test_stream_decoder_flushes_incomplete_bytes(small_bpe):
    stream = StreamDecoder(small_bpe)
    assert stream.push(list("€".encode())[:2]) == ""
    assert stream.flush() == "\ufffd"


# ----------------------------------------------------------------------------------- files
def test_save_load_round_trip(small_bpe, tmp_path):
    path = tmp_path / "tokeniser.json"
    small_bpe.save(path)
    loaded = BPETokeniser.load(path)
    assert loaded.merges == small_bpe.merges and loaded.vocab_size == small_bpe.vocab_size
    text = " ".join(TRICKY)
    assert np.array_equal(loaded.encode(text), small_bpe.encode(text))
    assert isinstance(load_tokeniser(path), BPETokeniser)
    assert [p.name for p in tmp_path.iterdir()] == ["tokeniser.json"]  # no temp file left
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() would make it
    assert path.read_text(encoding="ascii") == small_bpe.to_json()  # what runs hash


def test_to_json_is_the_saved_file_and_loads_back(tmp_path):
    chars = CharTokeniser().train("héllo, wörld")
    chars.save(tmp_path / "chars.json")
    assert (tmp_path / "chars.json").read_text(encoding="ascii") == chars.to_json()
    assert CharTokeniser.load(tmp_path / "chars.json").chars == chars.chars
    assert json.loads(chars.to_json())["chars"] == chars.chars


def _write_json(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


GOOD = {"format": "tricycle-bpe", "version": 1, "vocab_size": 258, "pattern": "gpt2", "merges": []}


@pytest.mark.parametrize(
    "data, message",
    [
        ("{not json", "not a valid tokeniser JSON"),
        ([1, 2], "format is None"),
        ({**GOOD, "format": "tricycle-char"}, "format is 'tricycle-char'"),
        ({**GOOD, "version": 99}, "version 99 is not supported"),
        ({**GOOD, "vocab_size": 10}, "vocab_size must be an int >= 256"),
        ({**GOOD, "merges": [[1, 2], [3, 4], [5, 6]]}, "at most vocab_size - 256 = 2 pairs"),
        ({**GOOD, "merges": [[1, 256]]}, "merge 0 is \\[1, 256\\]"),
        ({**GOOD, "merges": [[1, 2, 3]]}, "merge 0"),
        ({**GOOD, "merges": [[1, "a"]]}, "merge 0"),
        ({**GOOD, "pattern": "("}, "not one of the library's"),
        ({**GOOD, "pattern": 5}, "pattern must be a string"),
        ({**GOOD, "special_tokens": "<|x|>"}, "special_tokens must be a list"),
        ({**GOOD, "special_tokens": [""]}, "special_tokens must be a list"),
        ({**GOOD, "special_tokens": ["a", "b", "c"]}, "vocab_size must be an int >= 259"),
        ({**GOOD, "vocab_size": 257, "special_tokens": ["a"], "merges": [[1, 2]]}, "at most"),
        ({**GOOD, "vocab_size": True}, "vocab_size must be an int"),
    ],
)
def test_corrupt_bpe_file_is_a_clear_error(tmp_path, data, message):
    path = _write_json(tmp_path / "bad.json", data)
    with pytest.raises(ValueError, match=message) as info:
        BPETokeniser.load(path)
    assert str(path) in str(info.value)


# ----------------------------------------------------------------------------------- chars
def test_char_tokeniser_round_trip(tmp_path):
    text = "hello, wörld 🙂\n"
    tokeniser = CharTokeniser().train(text)
    assert tokeniser.chars == sorted(set(text))
    assert tokeniser.vocab_size == len(set(text))
    ids = tokeniser.encode(text)
    assert ids.dtype == np.int32 and tokeniser.decode(ids) == text
    assert tokeniser.decode_bytes(ids) == text.encode("utf-8")

    path = tmp_path / "chars.json"
    tokeniser.save(path)
    assert CharTokeniser.load(path).chars == tokeniser.chars
    assert isinstance(load_tokeniser(path), CharTokeniser)


def test_char_tokeniser_errors(tmp_path):
    tokeniser = CharTokeniser().train("abc")
    with pytest.raises(ValueError, match="character 'z' at position 2 is not in the vocab"):
        tokeniser.encode("abz")
    with pytest.raises(ValueError, match="id 3 is outside the vocabulary"):
        tokeniser.decode([0, 3])
    path = _write_json(
        tmp_path / "chars.json", {"format": "tricycle-char", "version": 1, "chars": ["b", "a"]}
    )
    with pytest.raises(ValueError, match="sorted list of distinct characters"):
        CharTokeniser.load(path)
    with pytest.raises(ValueError, match="expected 'tricycle-bpe'"):
        BPETokeniser.load(path)


def test_enough_text_trains_without_warning(shakespeare_text):
    """10,000 characters hold all the merges a 300-id vocabulary asks for: 300 - 256 bytes."""
    text = shakespeare_text[:10_000]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tokeniser = BPETokeniser(300).train(text)
    assert len(tokeniser.merges) == 300 - 256 and tokeniser.n_tokens == 300
    ids = tokeniser.encode(text)
    assert ids.max() == 299 and len(ids) < len(text) and tokeniser.decode(ids) == text


def test_corrupt_regex_in_a_trusted_file_is_a_clear_error(tmp_path):
    path = _write_json(tmp_path / "bad.json", {**GOOD, "pattern": "("})
    with pytest.raises(ValueError, match="not a valid regex") as info:
        BPETokeniser.load(path, trust_pattern=True)
    assert str(path) in str(info.value)


# ------------------------------------------------------------------------- split patterns
def test_a_pattern_that_skips_characters_still_round_trips():
    tokeniser = BPETokeniser(260, pattern=r"\w+").train("hello world, hello! " * 20)
    text = "hello world, hello!"
    assert tokeniser.decode(tokeniser.encode(text)) == text


CUSTOM_PATTERNS = [r"\w+", r"\d", r"(a)|b", r"\w*", r"x?", r" ?[a-z]+|\s+(?!\S)"]


@settings(max_examples=30)
@given(text=st.text(), pattern=st.sampled_from(CUSTOM_PATTERNS))
def test_round_trip_any_unicode_any_pattern(text, pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # short texts run out of pairs
        tokeniser = BPETokeniser(280, pattern=pattern).train(text * 3)
    assert tokeniser.decode(tokeniser.encode(text)) == text


@given(text=st.text())
def test_library_patterns_cover_every_character(text):
    for pattern in SPLIT_PATTERNS.values():
        assert "".join(re.findall(pattern, text)) == text


def test_a_file_with_an_unknown_pattern_is_refused(tmp_path):
    """(a+)+$ takes exponential time on 'aaaa...b': a file must not be able to name it."""
    path = _write_json(tmp_path / "evil.json", {**GOOD, "pattern": "(a+)+$"})
    with pytest.raises(ValueError, match=r"not one of the library's .*trust_pattern=True"):
        BPETokeniser.load(path)
    with pytest.raises(ValueError, match="not one of the library's"):
        load_tokeniser(path)


def test_trusted_custom_pattern_round_trips_through_a_file(tmp_path):
    tokeniser = BPETokeniser(262, pattern=r"[a-z]+").train("abc abd abe, x! " * 30)
    tokeniser.save(tmp_path / "t.json")
    loaded = BPETokeniser.load(tmp_path / "t.json", trust_pattern=True)
    text = "abd, ABE and abc!"
    assert loaded.pattern == r"[a-z]+" and loaded.merges == tokeniser.merges
    assert np.array_equal(loaded.encode(text), tokeniser.encode(text))
    assert loaded.decode(loaded.encode(text)) == text


def test_pattern_by_name():
    assert BPETokeniser(256, pattern="gpt2").pattern == GPT2_SPLIT_PATTERN


@pytest.mark.parametrize(
    "args, kwargs, error, message",
    [
        ((True,), {}, TypeError, "vocab_size must be an integer >= 256"),
        ((300.0,), {}, TypeError, "vocab_size must be an integer >= 256"),
        (("300",), {}, TypeError, "vocab_size must be an integer >= 256"),
        ((-1,), {}, ValueError, "vocab_size must be an integer >= 256"),
        ((300,), {"pattern": 5}, TypeError, "pattern must be a str"),
        ((300,), {"pattern": "("}, ValueError, "not a valid regex"),
        ((300,), {"special_tokens": "<|eot|>"}, TypeError, "list of non-empty strings"),
        ((300,), {"special_tokens": [""]}, TypeError, "list of non-empty strings"),
        ((300,), {"special_tokens": 5}, TypeError, "list of non-empty strings"),
        ((300,), {"special_tokens": ["a", "a"]}, ValueError, "special_tokens must be distinct"),
        ((256,), {"special_tokens": ["a"]}, ValueError, "vocab_size must be an integer >= 257"),
    ],
)
def test_bad_constructor_arguments(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        BPETokeniser(*args, **kwargs)


@pytest.mark.parametrize("bad", [b"bytes", 5, None, ["a"]])
def test_encode_and_train_want_str(small_bpe, bad):
    with pytest.raises(TypeError, match="BPETokeniser.encode: expected a str"):
        small_bpe.encode(bad)
    with pytest.raises(TypeError, match="BPETokeniser.train: expected a str"):
        BPETokeniser(300).train(bad)
    with pytest.raises(TypeError, match="CharTokeniser.encode: expected a str"):
        CharTokeniser("ab").encode(bad)


@pytest.mark.parametrize("chars", [5, ["ab"], [1, 2], None])
def test_char_tokeniser_bad_chars(chars):
    with pytest.raises(TypeError, match="CharTokeniser: chars must be"):
        CharTokeniser(chars)


# ------------------------------------------------------------------------- special tokens
def test_end_of_text_token(shakespeare_text, tmp_path):
    tokeniser = BPETokeniser(300, special_tokens=[END_OF_TEXT]).train(shakespeare_text[:20_000])
    assert len(tokeniser.merges) == 300 - 256 - 1
    assert tokeniser.eot_id == 299 and tokeniser.n_tokens == 300
    ids = np.concatenate([tokeniser.encode("First"), [tokeniser.eot_id], tokeniser.encode("x")])
    assert tokeniser.decode(ids) == "First<|endoftext|>x"
    # text that spells the token is ordinary text
    assert tokeniser.eot_id not in tokeniser.encode("a <|endoftext|> b").tolist()

    tokeniser.save(tmp_path / "t.json")
    loaded = load_tokeniser(tmp_path / "t.json")
    assert loaded.eot_id == 299 and loaded.special_tokens == [END_OF_TEXT]
    assert loaded.decode(ids) == tokeniser.decode(ids)
    assert BPETokeniser(300).eot_id is None


def test_pickle_keeps_the_tokeniser_not_its_caches(small_bpe):
    text = " ".join(TRICKY)
    small_bpe.encode(text)
    copy = pickle.loads(pickle.dumps(small_bpe))
    assert copy.merges == small_bpe.merges and len(copy._cache) == 0
    assert np.array_equal(copy.encode(text), small_bpe.encode(text))


# --------------------------------------------------------------------------- merge loop
@pytest.fixture(scope="module")
def ab_bpe() -> BPETokeniser:
    """Merges over a two-letter alphabet: long tokens, many overlapping candidates."""
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(["a", "b", "ab", "aab", "bba"], size=4000))
    return BPETokeniser(400, pattern=r"[ab]+").train(text)


@given(piece=st.text(alphabet="ab", min_size=1, max_size=300))
def test_heap_merge_loop_equals_rescanning_loop(ab_bpe, piece):
    raw = piece.encode()
    assert _merge_long(raw, ab_bpe._ranks) == _merge_short(raw, ab_bpe._ranks)
    assert b"".join(_merge_long(raw, ab_bpe._ranks)) == raw


def test_a_very_long_chunk_encodes(shakespeare_bpe):
    """One 300,000-character chunk: quadratic merging would take hours."""
    text = "e" * 300_000
    shakespeare_bpe.accelerate = False
    try:
        assert shakespeare_bpe.decode(shakespeare_bpe.encode(text)) == text
    finally:
        shakespeare_bpe.accelerate = True


# ------------------------------------------------------------------------------ tiktoken
@pytest.fixture(scope="module")
def tiktoken_encoding(shakespeare_bpe):
    pytest.importorskip("tiktoken")
    encoding = shakespeare_bpe._tiktoken()
    assert encoding is not None  # it passed the check against the pure Python encoder
    return encoding


@settings(max_examples=100)
@given(text=st.text())
def test_tiktoken_gives_the_same_ids_on_any_text(shakespeare_bpe, tiktoken_encoding, text):
    shakespeare_bpe.accelerate = False
    try:
        pure = shakespeare_bpe.encode(text)
    except ValueError:  # a lone surrogate: no UTF-8, for either encoder
        return
    finally:
        shakespeare_bpe.accelerate = True
    assert pure.tolist() == tiktoken_encoding.encode_ordinary(text)


def test_tiktoken_gives_the_same_ids_on_shakespeare(
    shakespeare_bpe, tiktoken_encoding, shakespeare_text
):
    shakespeare_bpe.accelerate = False
    try:
        pure = shakespeare_bpe.encode(shakespeare_text)
    finally:
        shakespeare_bpe.accelerate = True
    assert len(shakespeare_text) >= _ACCELERATE_MIN_CHARS  # so encode uses tiktoken
    assert np.array_equal(shakespeare_bpe.encode(shakespeare_text), pure)
    assert pure.tolist() == tiktoken_encoding.encode_ordinary(shakespeare_text)


def test_a_lone_surrogate_in_a_long_text_is_an_error_not_a_replacement(shakespeare_bpe):
    text = "a" * _ACCELERATE_MIN_CHARS + "\ud800"
    for accelerate in (True, False):
        shakespeare_bpe.accelerate = accelerate
        with pytest.raises(ValueError, match=f"position {_ACCELERATE_MIN_CHARS}"):
            shakespeare_bpe.encode(text)
    shakespeare_bpe.accelerate = True


def test_tiktoken_is_not_used_for_custom_patterns():
    tokeniser = BPETokeniser(260, pattern=r"\w+")
    assert tokeniser._tiktoken() is None
    text = "hello, world! " * 1000
    assert tokeniser.decode(tokeniser.encode(text)) == text
