"""Their tokenisers (tricycle.hf_tokeniser): a small byte-level BPE trained here with the
``tokenizers`` package, saved as GPT-2's vocab.json + merges.txt and as a tokenizer.json
(GPT-2's and Llama 3's pre-tokenisation), gives the same ids as transformers/tokenizers on
a few of the standard library's sources, and decodes back to the text. No network."""

import pickle
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from tricycle.hf_tokeniser import LLAMA3_PATTERN, PretrainedTokeniser, merge_by_pair_rank
from tricycle.tokeniser import StreamDecoder

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

STDLIB = Path(sysconfig.get_paths()["stdlib"])
FILES = ["textwrap.py", "heapq.py", "json/decoder.py", "string.py", "colorsys.py", "bisect.py"]
EXTRA = "naïve café — ünïcödé 日本語 🙂 x²  \t\n don't I'll 12345 "


def texts() -> list[str]:
    return [(STDLIB / name).read_text(encoding="utf-8") for name in FILES] + [EXTRA]


def train(pre_tokenizer, vocab_size=700, **model_options):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokeniser = Tokenizer(models.BPE(**model_options))
    tokeniser.pre_tokenizer = pre_tokenizer
    tokeniser.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"], show_progress=False,
    )  # fmt: skip
    tokeniser.train_from_iterator(texts()[:3], trainer)
    return tokeniser


@pytest.fixture(scope="module")
def gpt2_style(tmp_path_factory):
    """(the tokenizers.Tokenizer, a directory with its tokenizer.json, another with GPT-2's
    vocab.json and merges.txt)."""
    from tokenizers import pre_tokenizers

    tokeniser = train(pre_tokenizers.ByteLevel(add_prefix_space=False))
    json_dir, files_dir = tmp_path_factory.mktemp("json"), tmp_path_factory.mktemp("files")
    tokeniser.save(str(json_dir / "tokenizer.json"))
    tokeniser.model.save(str(files_dir))  # vocab.json + merges.txt
    return tokeniser, json_dir, files_dir


def test_gpt2_files_give_transformers_ids_on_stdlib_sources(gpt2_style):
    _, _, files_dir = gpt2_style
    theirs = transformers.GPT2TokenizerFast.from_pretrained(str(files_dir))
    ours = PretrainedTokeniser.from_dir(files_dir)
    assert ours.n_tokens == len(theirs) == 700
    for text in texts():
        ids = ours.encode(text)
        np.testing.assert_array_equal(ids, theirs(text)["input_ids"])
        assert ours.decode(ids) == theirs.decode(ids.tolist()) == text
    assert ours.decode([ours.eot_id]) == "<|endoftext|>" == theirs.decode([ours.eot_id])
    assert ours.eot_id not in ours.encode("a <|endoftext|> b")  # spelt out, it is text


def test_tokenizer_json_gives_tokenizers_ids(gpt2_style):
    tokeniser, json_dir, _ = gpt2_style
    ours = PretrainedTokeniser.from_dir(json_dir)
    for text in texts():
        np.testing.assert_array_equal(ours.encode(text), tokeniser.encode(text).ids)


def test_llama3_style_tokenizer_json(tmp_path):
    from tokenizers import Regex, pre_tokenizers

    tokeniser = train(
        pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]),
        ignore_merges=True,
    )  # fmt: skip
    tokeniser.save(str(tmp_path / "tokenizer.json"))
    ours = PretrainedTokeniser.from_tokenizer_json(tmp_path / "tokenizer.json")
    assert ours.ignore_merges
    for text in texts():
        ids = ours.encode(text)
        np.testing.assert_array_equal(ids, tokeniser.encode(text).ids)
        assert ours.decode(ids) == text


def test_streaming_pickling_and_the_merge_loop(gpt2_style):
    _, json_dir, _ = gpt2_style
    ours = PretrainedTokeniser.from_dir(json_dir)
    text = EXTRA
    ids = ours.encode(text)
    stream = StreamDecoder(ours)
    assert "".join(stream.push(int(i)) for i in ids) + stream.flush() == text
    again = pickle.loads(pickle.dumps(ours))
    np.testing.assert_array_equal(again.encode(text), ids)
    ours.save(json_dir / "saved.json")
    assert (json_dir / "saved.json").read_text(encoding="ascii") == ours.to_json()
    again = PretrainedTokeniser.load(json_dir / "saved.json")
    np.testing.assert_array_equal(again.encode(text), ids)
    assert again.decode(ids) == text
    # the pair ranks, not the merged bytes' ids, decide: "bc" before "ab"
    assert merge_by_pair_rank("abc", {("b", "c"): 0, ("a", "b"): 1}) == ["a", "bc"]
    assert merge_by_pair_rank("aaa", {("a", "a"): 0}) == ["aa", "a"]


def test_unsupported_tokenisers_are_named(tmp_path):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    tokeniser = Tokenizer(models.BPE())
    tokeniser.normalizer = normalizers.Lowercase()
    tokeniser.pre_tokenizer = pre_tokenizers.ByteLevel()
    tokeniser.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="tokenizer.json: normalizer 'Lowercase'"):
        PretrainedTokeniser.from_dir(tmp_path)
    tokeniser = Tokenizer(models.WordPiece({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tokeniser.save(str(tmp_path / "tokenizer.json"))
    with pytest.raises(ValueError, match="model.type is 'WordPiece'"):
        PretrainedTokeniser.from_dir(tmp_path)
    with pytest.raises(ValueError, match="no tokenizer.json"):
        PretrainedTokeniser.from_dir(tmp_path / "nowhere")
