"""Special tokens spelt in a text (``encode(text, allowed_special=...)``, tricycle.added_tokens):
with "all", PretrainedTokeniser gives the ids of ``tokenizers``' added vocabulary (transformers'
default), for Qwen2's stack, Llama 2's legacy normalizer (whose "<s>" is found as "▁<s>"),
Metaspace's "first" prepend scheme, GPT-2's files and a token that takes the whitespace around
it (lstrip, rstrip); BPETokeniser gives tiktoken's ids; a subset of the tokens is found alone.
No network."""

import json
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_hf_tokenisers_families import FAMILIES, TEXTS, corpus
from test_pretrained_tokeniser import train

from tricycle.added_tokens import split_special
from tricycle.bpe import _tiktoken_gpt2_pattern
from tricycle.hf_tokeniser import PretrainedTokeniser
from tricycle.tokeniser import END_OF_TEXT, BPETokeniser

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import AddedToken  # noqa: E402 - after the skip

MASK = "<mask>"  # RoBERTa's: takes the whitespace before and after it
SPELT = ["<s>Hello", "Hello<s>", "a <s> b", "a </s> b", "</s>x", " </s> ", "<unk><s></s>",
         "<s> <s>", "x<s>", "<|im_start|>user\nhi<|im_end|>\n", "\u0301<|im_end|>\u0301",
         "  <mask>  x <mask>y", "<mask>", "\x1c<mask>\x1c", "<|endoftext|>", "<<s>>",
         "<s><s>", "<|im_start|><|im_end|>"]  # fmt: skip
PIECES = st.lists(st.sampled_from(["<s>", "</s>", "<unk>", "<|im_start|>", "<|im_end|>", "<s",
                                   "|>", MASK, " ", "  ", "\n", "\t", "a", "Hello", "▁", "é",
                                   "日本", "\x1c", "\u0301", "1"]), max_size=12)  # fmt: skip


@pytest.fixture(scope="module")
def masked(tmp_path_factory) -> dict:
    """name -> (their Tokenizer, matching added tokens as transformers does, ours): each
    family of test_hf_tokenisers_families with an lstrip + rstrip <mask> added."""
    text, out = corpus(), {}
    for name, build in FAMILIES.items():
        theirs = build(text)
        theirs.add_special_tokens([AddedToken(MASK, special=True, lstrip=True, rstrip=True,
                                              normalized=False)])  # fmt: skip
        directory = tmp_path_factory.mktemp(name)
        theirs.save(str(directory / "tokenizer.json"))
        out[name] = theirs, PretrainedTokeniser.from_dir(directory)
    return out


def same_as_theirs(theirs, ours, text: str) -> None:
    ids = ours.encode(text, allowed_special="all")
    assert ids.dtype == np.int32
    assert ids.tolist() == theirs.encode(text, add_special_tokens=False).ids, (text, ids)
    assert ours.decode(ids) == theirs.decode(ids.tolist(), skip_special_tokens=False), text


@pytest.mark.parametrize("name", FAMILIES)
def test_all_added_tokens_are_found_as_tokenizers_finds_them(masked, name):
    theirs, ours = masked[name]
    for text in [*TEXTS, *SPELT]:
        same_as_theirs(theirs, ours, text)
    assert ours.added_options == {MASK: {"lstrip": True, "rstrip": True}}
    # by default a special token spelt out is text (theirs: encode_special_tokens)
    theirs.encode_special_tokens = True
    try:
        for text in SPELT:
            assert ours.encode(text).tolist() == theirs.encode(text, add_special_tokens=False).ids
    finally:
        theirs.encode_special_tokens = False


@given(PIECES)
def test_hypothesis_texts_spelling_tokens_equal_tokenizers(masked, pieces):
    for theirs, ours in masked.values():
        same_as_theirs(theirs, ours, "".join(pieces))


@given(PIECES)
def test_a_subset_is_found_alone(masked, pieces):
    """Qwen2's stack (NFC, byte-level): with only <|im_end|> allowed, the text around each
    one is encoded as it would be alone; the other tokens stay text."""
    _, ours = masked["qwen2"]
    text, end = "".join(pieces), ours.special_ids["<|im_end|>"]
    parts = text.split("<|im_end|>")
    expected = [end if i % 2 else ours.encode(parts[i // 2])
                for i in range(2 * len(parts) - 1)]  # fmt: skip
    expected = np.concatenate([np.atleast_1d(e) for e in expected if np.size(e)] or [[]])
    ids = ours.encode(text, allowed_special={"<|im_end|>"})
    assert ids.tolist() == expected.astype(int).tolist(), text


def test_options_survive_saving_and_pickling(masked, tmp_path):
    for name, (_, ours) in masked.items():
        ours.save(tmp_path / f"{name}.json")
        again = PretrainedTokeniser.load(tmp_path / f"{name}.json")
        copy = pickle.loads(pickle.dumps(ours))
        assert again.added_options == copy.added_options == ours.added_options
        for text in SPELT:
            expected = ours.encode(text, allowed_special="all").tolist()
            assert again.encode(text, allowed_special="all").tolist() == expected
            assert copy.encode(text, allowed_special="all").tolist() == expected


@pytest.mark.parametrize("prefix_space", [False, True])
def test_byte_level_files_find_end_of_text_as_transformers(tmp_path, prefix_space):
    """GPT-2's vocab.json + merges.txt (transformers' GPT2TokenizerFast), and a tokenizer.json
    whose ByteLevel puts a space before each piece of text between the tokens."""
    from tokenizers import pre_tokenizers

    transformers = pytest.importorskip("transformers")
    theirs = train(pre_tokenizers.ByteLevel(add_prefix_space=prefix_space))
    texts = ["Hello<|endoftext|>world", "<|endoftext|>", " <|endoftext|> x", "a<|endoftext|>",
             *TEXTS[:6]]  # fmt: skip
    if prefix_space:
        theirs.save(str(tmp_path / "tokenizer.json"))
        ours = PretrainedTokeniser.from_dir(tmp_path)
        for text in texts:
            same_as_theirs(theirs, ours, text)
        return
    theirs.model.save(str(tmp_path))  # vocab.json + merges.txt
    fast = transformers.GPT2TokenizerFast.from_pretrained(str(tmp_path))
    ours = PretrainedTokeniser.from_dir(tmp_path)
    for text in texts:
        ids = ours.encode(text, allowed_special="all").tolist()
        assert ids == fast.encode(text, add_special_tokens=False), text
        assert ours.decode(ids) == fast.decode(ids), text


def test_bad_allowed_special_is_named(masked, tmp_path):
    _, ours = masked["qwen2"]
    with pytest.raises(ValueError, match=r"PretrainedTokeniser.encode: allowed_special names "
                                         r"'<x>', which are not special tokens"):  # fmt: skip
        ours.encode("a", allowed_special={"<x>", "<|im_end|>"})
    with pytest.raises(ValueError, match='must be "all" or a set of special tokens, got the '
                                         "string '<|im_end|>'"):  # fmt: skip
        ours.encode("a", allowed_special="<|im_end|>")
    with pytest.raises(TypeError, match="allowed_special must be .* got int"):
        ours.encode("a", allowed_special=3)
    data = json.loads(ours.to_json())
    data["added_options"] = {MASK: {"single_word": True}}
    (tmp_path / "word.json").write_text(json.dumps(data), encoding="ascii")
    worded = PretrainedTokeniser.load(tmp_path / "word.json")
    assert worded.encode("a<mask>").tolist() == ours.encode("a<mask>").tolist()  # as text
    with pytest.raises(ValueError, match=r"<mask> match only as whole words \(single_word\)"):
        worded.encode("a<mask>", allowed_special="all")


def test_leftmost_then_longest():
    tokens = {"<a>": 1, "<a><b>": 2, "<b>": 3, "b>": 4}
    assert split_special("x<a><b>y<b>", tokens) == ["x", 2, "y", 3]
    assert split_special("<a<b>>", tokens) == ["<a", 3, ">"]
    assert split_special(" \t<a> \n", tokens, {"<a>": (True, False)}) == [1, " \n"]
    assert split_special(" <a> \u3000z", tokens, {"<a>": (False, True)}) == [" ", 1, "z"]
    assert split_special("\x1c<a>\x1c", tokens, {"<a>": (True, True)}) == ["\x1c", 1, "\x1c"]
    assert split_special("", tokens) == [] and split_special("ab", {}) == ["ab"]


# ------------------------------------------------------------------ tricycle's own BPE
@pytest.fixture(scope="module")
def own() -> BPETokeniser:
    return BPETokeniser(400, special_tokens=[END_OF_TEXT, "<|a|>", "<|a|><|b|>"]).train(
        corpus()[:20_000]
    )


OWN_TEXTS = st.lists(st.sampled_from([END_OF_TEXT, "<|a|>", "<|b|>", "<|", " ", "the", "é", "\n",
                                      "日本"]), max_size=12)  # fmt: skip
ALLOWED = st.sampled_from(["all", (), {"<|a|>"}, {END_OF_TEXT, "<|a|><|b|>"}])


@given(OWN_TEXTS, ALLOWED)
def test_own_bpe_finds_the_allowed_tokens(own, pieces, allowed):
    """The allowed tokens are their ids, the leftmost and then the longest (a scan of the text
    place by place); the text between them is encoded alone; decoding gives it back."""
    text = "".join(pieces)
    ids = own.encode(text, allowed_special=allowed)
    assert own.decode(ids) == text
    names = sorted(own.special_tokens if allowed == "all" else allowed, key=len, reverse=True)
    expected, i, plain = [], 0, ""
    while i < len(text):
        name = next((n for n in names if text.startswith(n, i)), None)
        if name is None:
            plain, i = plain + text[i], i + 1
            continue
        expected += [*own.encode(plain).tolist(), own.special_ids[name]]
        plain, i = "", i + len(name)
    assert ids.tolist() == expected + own.encode(plain).tolist()


@pytest.fixture(scope="module")
def apart() -> BPETokeniser:
    """Special tokens none of which starts another (tiktoken's choice between two that start
    at one place follows its hash map's order, whichever of them is allowed)."""
    return BPETokeniser(400, special_tokens=[END_OF_TEXT, "<|a|>", "<|b|>"]).train(
        corpus()[:20_000]
    )


@given(OWN_TEXTS, st.sampled_from(["all", (), {"<|a|>"}, {END_OF_TEXT, "<|b|>"}]))
def test_own_bpe_gives_tiktokens_ids(apart, pieces, allowed):
    """tiktoken's ``encode(text, allowed_special=..., disallowed_special=())`` with these
    merges and special tokens."""
    tiktoken = pytest.importorskip("tiktoken")
    encoding = tiktoken.Encoding("own", pat_str=_tiktoken_gpt2_pattern(),
                                 mergeable_ranks=apart._ranks,
                                 special_tokens=apart.special_ids)  # fmt: skip
    text = "".join(pieces)
    names = set(apart.special_tokens) if allowed == "all" else set(allowed)
    expected = encoding.encode(text, allowed_special=names, disallowed_special=())
    assert apart.encode(text, allowed_special=allowed).tolist() == expected


def test_own_bpe_long_text_and_default(own):
    """A long text (encoded by tiktoken where installed) between special tokens; by default
    they are text, as ``encode_ordinary``."""
    text = corpus()[:10_000]
    ids = own.encode(text + END_OF_TEXT + text, allowed_special={END_OF_TEXT})
    part = own.encode(text).tolist()
    assert ids.tolist() == part + [own.eot_id] + part
    assert own.eot_id not in own.encode(text + END_OF_TEXT).tolist()
    with pytest.raises(ValueError, match="BPETokeniser.encode: allowed_special names '<x>'"):
        own.encode("a", allowed_special=["<x>"])
