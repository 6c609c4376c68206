"""The tokenisers of Qwen2 and of Llama 2 / Mistral / TinyLlama (tricycle.hf_tokeniser): small
BPEs trained here with the ``tokenizers`` library on tiny-shakespeare's first 20 kB, with the
normalizer, pre-tokenizer, decoder and post-processor stacks that transformers' converters give
those families, saved as tokenizer.json; tricycle's ids, decoded text and prefix ids equal
tokenizers' (and transformers') on varied and on hypothesis-made text. No network."""

import json
import pickle
import unicodedata

import numpy as np
import pytest
from helpers import DATA_DIR
from hypothesis import given
from hypothesis import strategies as st

from tricycle.hf_tokeniser import QWEN2_PATTERN, PretrainedTokeniser
from tricycle.hf_tokeniser_steps import _merge_with_heap, cut_before, merge_by_pair_rank
from tricycle.tokeniser import StreamDecoder

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import (  # noqa: E402 - after the skip
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

# transformers' Qwen2Converter's split regex, as it writes it
QWEN2_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"""
               r"""[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")  # fmt: skip
TEXTS = [
    "Hello world", "First Citizen:\nBefore we proceed any further, hear me speak.",
    " one leading space", "  two leading spaces", "trailing spaces  ", "", " ", "\n", "  \n ",
    "whitespace     runs \t\t and\n\n\nnewlines\r\n", "digits 1234567890, 3.14159 and 42nd",
    "naïve café résumé, Ünïcödé, ÆØÅ", "e\u0301 and A\u030a (NFC makes them one)",
    "日本語のテキスト、中文字符", "emoji 🙂👍🏽 🇫🇷 👩\u200d👩\u200d👧", "▁ a metaspace written out",
    "<s> spelt out </s> and <|im_start|>user<|im_end|>", "<0x41> is text", "don't, I'll, WE'VE",
    "ROMEO: 'tis 日本 🙂 123\n\tend",
]  # fmt: skip
ALPHABET = st.one_of(
    st.sampled_from(list("abcXYZ ,.'!?\n\t\r0123456789éüÅ日本🙂▁<>")),
    st.characters(exclude_categories=("Cs", "Cn")),  # (assigned in Python's Unicode)
)


def corpus() -> str:
    path = DATA_DIR / "tinyshakespeare.txt"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path.read_text(encoding="utf-8")[:25_000]


def qwen2_style(text: str) -> Tokenizer:
    """Qwen2's stack (transformers' Qwen2Converter): NFC, its digit-at-a-time split regex,
    ByteLevel; its special tokens added after the vocabulary."""
    tokeniser = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tokeniser.normalizer = normalizers.NFC()
    tokeniser.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    tokeniser.decoder = decoders.ByteLevel()
    tokeniser.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tokeniser.train_from_iterator([text[:20_000]], trainer)
    tokeniser.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    return tokeniser


def sentencepiece_bpe(text: str, crossing: bool, drop_bytes=(), **options) -> Tokenizer:
    """A BPE as transformers converts a SentencePiece model (Llama 2): <unk>, <s>, </s>, the
    256 byte tokens <0xNN>, then the learnt pieces; byte fallback. Learnt on lines (a newline
    is not a piece: it falls back to <0x0A>), words starting at "▁" as SentencePiece's, or,
    ``crossing``, merges that cross a "▁" too; "▁▁" and "▁▁▁▁" as Llama's whitespace pieces.
    ``drop_bytes``: byte tokens left out (their characters become <unk>). <unk> and <s>
    are marked normalized, as in Llama 2's file: they decode as the normalizer writes them."""
    learner = Tokenizer(models.BPE(unk_token="<unk>"))
    if crossing:
        learner.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])  # fmt: skip
    else:
        learner.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=True)
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"],
                                  show_progress=False)  # fmt: skip
    learner.train_from_iterator(text[:20_000].splitlines(), trainer)
    learnt = json.loads(learner.to_str())["model"]
    pieces = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256) if b not in drop_bytes),
              *sorted(learnt["vocab"], key=learnt["vocab"].get)]  # fmt: skip
    vocab = {token: i for i, token in enumerate(dict.fromkeys(pieces))}
    merges = [tuple(m) for m in learnt["merges"]]
    for a, b in (("▁", "▁"), ("▁▁", "▁▁")):
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append((a, b))
    options = {"fuse_unk": True, "byte_fallback": True, **options}
    tokeniser = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", **options))
    marked = [AddedToken(t, special=True, normalized=t != "</s>") for t in ("<unk>", "<s>", "</s>")]
    tokeniser.add_special_tokens(marked)  # as in Llama 2's file: <s> decodes as "▁<s>"
    tokeniser.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])  # fmt: skip
    return tokeniser


def llama2_decoder():
    return decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                              decoders.Fuse(), decoders.Strip(" ", 1, 0)])  # fmt: skip


def llama2_style(text: str, crossing: bool = False, **options) -> Tokenizer:
    """Llama 2, Mistral v0.1, TinyLlama (transformers' legacy LlamaConverter): the normalizer
    Prepend("▁") + Replace(" ", "▁"), no pre-tokenizer."""
    tokeniser = sentencepiece_bpe(text, crossing, **options)
    tokeniser.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])  # fmt: skip
    tokeniser.decoder = llama2_decoder()
    return tokeniser


def metaspace_style(text: str) -> Tokenizer:
    """transformers 5's LlamaTokenizer (and newer Mistral files): a Metaspace pre-tokenizer
    with prepend_scheme "first", not split."""
    tokeniser = sentencepiece_bpe(text, False)
    tokeniser.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=False)
    tokeniser.decoder = llama2_decoder()
    return tokeniser


def split_metaspace_style(text: str) -> Tokenizer:
    """Metaspace split at every "▁" (the older default), ignore_merges, and the Metaspace
    decoder after ByteFallback."""
    tokeniser = sentencepiece_bpe(text, False, ignore_merges=True)
    tokeniser.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=True)
    tokeniser.decoder = decoders.Sequence(
        [decoders.ByteFallback(), decoders.Metaspace(prepend_scheme="always")])  # fmt: skip
    return tokeniser


FAMILIES = {"qwen2": qwen2_style, "llama2": llama2_style,
            "llama2_crossing": lambda text: llama2_style(text, crossing=True),
            "metaspace": metaspace_style, "metaspace_split": split_metaspace_style}  # fmt: skip


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict:
    """name -> (their Tokenizer, our PretrainedTokeniser, the tokenizer.json's directory)."""
    text, out = corpus(), {}
    for name, build in FAMILIES.items():
        theirs = build(text)
        theirs.encode_special_tokens = True  # a special token spelt out is text, as ours
        directory = tmp_path_factory.mktemp(name)
        theirs.save(str(directory / "tokenizer.json"))
        out[name] = theirs, PretrainedTokeniser.from_dir(directory), directory
    return out


def same_as_theirs(theirs, ours, text: str) -> np.ndarray:
    ids = ours.encode(text)
    assert ids.tolist() == theirs.encode(text, add_special_tokens=False).ids, text
    assert ours.decode(ids) == theirs.decode(ids.tolist(), skip_special_tokens=False), text
    return ids


@pytest.mark.parametrize("name", FAMILIES)
def test_ids_and_text_equal_tokenizers(families, name):
    theirs, ours, _ = families[name]
    unseen = corpus()[20_000:]  # text the merges were not learnt on
    for text in [*TEXTS, unseen]:
        ids = same_as_theirs(theirs, ours, text)
        if name == "qwen2":  # byte-level: every text comes back, in NFC
            assert ours.decode(ids) == unicodedata.normalize("NFC", text)
    assert ours.n_tokens == theirs.get_vocab_size()
    ids = ours.encode("日本🙂")
    if name != "qwen2":  # none of these is a piece: each falls back to its UTF-8 bytes
        assert [theirs.id_to_token(i) for i in ids][-4:] == ["<0xF0>", "<0x9F>", "<0x99>",
                                                             "<0x82>"]  # fmt: skip


@pytest.mark.parametrize("options", [
    {"byte_fallback": False}, {"byte_fallback": False, "fuse_unk": False},
    {"drop_bytes": (0xF0,), "fuse_unk": False}, {"drop_bytes": (0xF0, 0xE6)},
])  # fmt: skip
def test_characters_that_are_not_tokens(tmp_path, options):
    """Without byte fallback (or without some byte tokens) a character that is not a piece is
    <unk>, one for a run with fuse_unk; an <unk> waits for the next piece, as in tokenizers."""
    theirs = llama2_style(corpus(), **options)
    theirs.encode_special_tokens = True
    theirs.save(str(tmp_path / "tokenizer.json"))
    ours = PretrainedTokeniser.from_dir(tmp_path)
    for text in [*TEXTS, "🙂é!", "🙂🙂é 🙂x", "日本🙂 a"]:
        same_as_theirs(theirs, ours, text)
    assert 0 in ours.encode("🙂🙂é 🙂x")  # <unk>


@given(st.text(ALPHABET, max_size=40))
def test_hypothesis_text_equals_tokenizers(families, text):
    for theirs, ours, _ in families.values():
        same_as_theirs(theirs, ours, text)


@given(st.data())
def test_decoding_any_ids_equals_tokenizers(families, data):
    """Any ids, byte tokens cut mid-character among them (ByteFallback's U+FFFD per byte)."""
    for theirs, ours, _ in families.values():
        n = ours.n_tokens
        some = st.one_of(st.integers(0, n - 1), st.integers(0, 12), st.integers(180, 262))
        ids = data.draw(st.lists(some, max_size=12))
        assert ours.decode(ids) == theirs.decode(ids, skip_special_tokens=False), ids


@pytest.mark.parametrize("name", FAMILIES)
def test_prefix_ids_and_decode_as_transformers(families, name):
    """transformers' tokeniser puts <s> before a Llama text (its template), nothing before a
    Qwen2 one; decodes as tokenizers."""
    transformers = pytest.importorskip("transformers")
    theirs, ours, directory = families[name]
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(directory / "tokenizer.json"), split_special_tokens=True)  # fmt: skip
    assert ours.prefix_ids == (() if name == "qwen2" else (1,))
    for text in TEXTS:
        ids = [*ours.prefix_ids, *ours.encode(text).tolist()]
        assert fast(text)["input_ids"] == ids, text
        assert ours.decode(ids) == fast.decode(ids), text


@pytest.mark.parametrize("name", FAMILIES)
def test_save_load_and_pickle_round_trip(families, name, tmp_path):
    _, ours, _ = families[name]
    ours.save(tmp_path / "tokeniser.json")
    saved = json.loads((tmp_path / "tokeniser.json").read_text(encoding="ascii"))
    again = PretrainedTokeniser.load(tmp_path / "tokeniser.json")  # a known pattern, or none
    copy = pickle.loads(pickle.dumps(ours))
    assert again.to_json() == ours.to_json() == copy.to_json()
    for text in TEXTS:
        ids = ours.encode(text)
        np.testing.assert_array_equal(again.encode(text), ids)
        np.testing.assert_array_equal(copy.encode(text), ids)
        assert again.decode(ids) == ours.decode(ids)
    assert again.prefix_ids == ours.prefix_ids
    if name == "qwen2":
        assert saved["pattern"] == QWEN2_PATTERN and saved["normalizer"] == [{"type": "NFC"}]
    else:
        assert saved["byte_level"] is False and saved["byte_fallback"] is True
        assert saved["special"] == {"<unk>": 0, "<s>": 1, "</s>": 2}


def test_streaming_continues_a_prompt(families):
    """``decode_bytes`` (what StreamDecoder and the sampler read) keeps the space of a
    first word: a continuation after a prompt; ``decode`` drops it, as the decoder says."""
    text = "Hello world, 日本 🙂"
    for name, (_, ours, _) in families.items():
        ids = ours.encode(text)
        stream = StreamDecoder(ours)
        streamed = "".join(stream.push(int(i)) for i in ids) + stream.flush()
        assert streamed == (text if name == "qwen2" else " " + text), name
        assert ours.decode(ids) == text


def test_a_long_text_is_cut_where_no_merge_crosses(families):
    """Llama 2's text is one word for tokenizers; ours is cut before each "▁" that no merge
    joins to what comes before it, so the pieces merge alone (and are remembered)."""
    text = corpus()
    for name in ("llama2", "llama2_crossing"):
        theirs, ours, _ = families[name]
        same_as_theirs(theirs, ours, text[:6_000])
        word = "▁" + text[:2_000].replace(" ", "▁")
        pieces = ours._cut(word)
        assert "".join(pieces) == word
        assert len(pieces) > (200 if name == "llama2" else 5), (name, len(pieces))
    assert cut_before("▁a▁▁b", "▁", frozenset("▁"), {"a", "b", "▁"}) == ["▁a", "▁▁b"]


@given(st.lists(st.sampled_from("abcd"), min_size=0, max_size=90),
       st.dictionaries(st.tuples(st.sampled_from(["a", "b", "c", "ab", "bc", "abc", "d"]),
                                 st.sampled_from(["a", "b", "c", "bc", "d", "cd"])),
                       st.integers(0, 50)))  # fmt: skip
def test_the_heap_merges_as_the_rescan(symbols, ranks):
    """Long words merge with a heap, short ones by rescanning: the same merges in the same
    order (the leftmost of the lowest rank), whatever the merge list."""
    ranks = {pair: rank for rank, pair in enumerate(sorted(ranks, key=ranks.get))}
    expected = _rescan(symbols, ranks)
    assert _merge_with_heap(list(symbols), ranks) == expected
    assert merge_by_pair_rank(symbols, ranks) == expected  # (a rescan up to 64 symbols)


def _rescan(symbols, ranks):
    """The leftmost lowest-ranked pair merged, one at a time: the order to match."""
    symbols = list(symbols)
    while True:
        pairs = [(ranks[p], i) for i, p in enumerate(zip(symbols, symbols[1:])) if p in ranks]
        if not pairs:
            return symbols
        _, i = min(pairs)
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def edit(directory, tmp_path, change) -> str:
    """The error reading the tokenizer.json of ``directory`` after ``change(data)``."""
    data = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    change(data)
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        PretrainedTokeniser.from_dir(tmp_path)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'tokenizer.json'}: ") and "\n" not in message
    return message


def test_what_is_not_read_is_named_with_the_file(families, tmp_path):
    llama, qwen = families["llama2"][2], families["qwen2"][2]
    regex = {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}
    cases = [
        (llama, lambda d: d["normalizer"]["normalizers"].append(regex), "normalizer Replace of"),
        (llama, lambda d: d.update(normalizer={"type": "Lowercase"}), "normalizer 'Lowercase'"),
        (llama, lambda d: d.update(pre_tokenizer={"type": "Whitespace"}),
         "pre_tokenizer 'Whitespace'"),
        (llama, lambda d: d.update(pre_tokenizer={"type": "Metaspace", "replacement": "▁",
                                                  "prepend_scheme": "sometimes"}),
         "pre_tokenizer Metaspace prepend_scheme='sometimes'"),
        (llama, lambda d: d.update(decoder={"type": "WordPiece"}), "decoder 'WordPiece'"),
        (llama, lambda d: d.update(decoder=None), "decoder is null"),
        (llama, lambda d: d.update(post_processor={"type": "BertProcessing"}),
         "post_processor 'BertProcessing'"),
        (llama, lambda d: d["model"].update(unk_token="<nope>"), "model.unk_token '<nope>'"),
        (llama, lambda d: d["model"].update(dropout=0.1), "model.dropout=0.1"),
        (llama, lambda d: d["model"]["merges"].append(["<0x41>", "<0x42>"]), "merge"),
        (qwen, lambda d: d["pre_tokenizer"]["pretokenizers"][1].update(add_prefix_space=True),
         "pre_tokenizer ByteLevel after a Split"),
        (qwen, lambda d: d["pre_tokenizer"]["pretokenizers"].reverse(),
         "pre_tokenizer 'ByteLevel' + 'Split'"),
        (qwen, lambda d: d.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Removed"},
            {"type": "ByteLevel", "use_regex": False}]}), "pre_tokenizer Split 'Removed'"),
    ]  # fmt: skip
    for directory, change, expected in cases:
        assert expected in edit(directory, tmp_path, change), expected


def test_a_repeated_merge_counts_at_its_last_place(tmp_path):
    """tokenizers' map of merges (as GPT-2's dict of ranks) keeps a pair's last place."""
    data = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": None, "pre_tokenizer": None, "post_processor": None,
            "decoder": {"type": "Fuse"},
            "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "bc": 4},
                      "merges": [["a", "b"], ["b", "c"], ["a", "b"]]}}  # fmt: skip
    (tmp_path / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    theirs = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    ours = PretrainedTokeniser.from_dir(tmp_path)
    for text in ["abc", "abcab", "cabc"]:
        same_as_theirs(theirs, ours, text)
    assert ours.encode("abc").tolist() == [0, 4]  # a, bc
