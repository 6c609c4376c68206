"""Tests for tricycle.tokeniser: BPE and character tokenisers, files, streaming decode."""

import json
import os
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

from tricycle.tokeniser import (
    GPT2_SPLIT_PATTERN,
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
    with pytest.raises(ValueError, match="vocab_size must be an int >= 256"):
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


def _write_json(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


GOOD = {"format": "tricycle-bpe", "version": 1, "vocab_size": 258, "pattern": "x", "merges": []}


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
        ({**GOOD, "pattern": "("}, "not a valid regex"),
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
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BPETokeniser(300).train(shakespeare_text[:10_000])
