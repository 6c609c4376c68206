"""Tests for tricycle_datasets: download cache, Shakespeare, PythonCode, TextFile, CodeParrot.

No test touches the network: downloads use file:// URLs, and every test gets its own cache
directory through TRICYCLE_CACHE_DIR.
"""

import hashlib
import sys
import types
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import DATA_DIR

from tricycle.tokeniser import BPETokeniser, CharTokeniser
from tricycle_datasets import TextFile, split_documents, split_text
from tricycle_datasets import shakespeare as shakespeare_module
from tricycle_datasets.codeparrot import CodeParrot
from tricycle_datasets.download import DownloadError, cache_dir, download
from tricycle_datasets.python_code import EXCLUDED_DIRS, PythonCode
from tricycle_datasets.shakespeare import Shakespeare, ShakespeareChar


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh, empty cache directory, and no data directory from the environment."""
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TRICYCLE_DATA_DIR", raising=False)
    return tmp_path / "cache"


@pytest.fixture
def data_dir() -> Path:
    if not (DATA_DIR / "tinyshakespeare.txt").is_file():
        pytest.skip(f"{DATA_DIR}/tinyshakespeare.txt not present")
    return DATA_DIR


def no_training(*args, **kwargs):
    raise AssertionError("the tokeniser was trained again instead of loaded from the cache")


# -------------------------------------------------------------------------------- download
@pytest.fixture
def source(tmp_path) -> tuple[str, bytes, str]:
    """A file:// URL, its contents and their sha256."""
    content = b"to be or not to be\n" * 1000
    path = tmp_path / "source.txt"
    path.write_bytes(content)
    return path.as_uri(), content, hashlib.sha256(content).hexdigest()


def test_download_then_cached(source, cache, monkeypatch):
    url, content, sha256 = source
    path = download(url, "data/file.txt", sha256)
    assert path == cache / "data" / "file.txt" and path.read_bytes() == content

    def offline(*args, **kwargs):
        raise AssertionError("the network was used for a cached file")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    assert download(url, "data/file.txt", sha256.upper()) == path


def test_download_replaces_a_corrupt_cached_file(source, cache):
    url, content, sha256 = source
    (cache / "data").mkdir(parents=True)
    (cache / "data" / "file.txt").write_bytes(b"truncated")
    assert download(url, "data/file.txt", sha256).read_bytes() == content


def test_download_checksum_mismatch(source, cache):
    url, _, sha256 = source
    target = cache / "out" / "file.txt"
    with pytest.raises(ValueError, match="checksum mismatch") as info:
        download(url, target, "0" * 64)
    for part in (url, str(target), "0" * 64, sha256):
        assert part in str(info.value)
    assert list(target.parent.iterdir()) == []  # nothing kept, not even a temp file


def test_download_unreachable(tmp_path):
    url = (tmp_path / "missing.txt").as_uri()
    with pytest.raises(DownloadError, match=f"could not download {url}"):
        download(url, "file.txt", "0" * 64)


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "/tmp/outside.txt"])
def test_download_stays_inside_the_cache(source, tmp_path, path):
    url, _, sha256 = source
    with pytest.raises(ValueError, match="outside the cache directory"):
        download(url, path, sha256)
    assert not (tmp_path / "outside.txt").exists()


def test_download_through_a_symlink_out_of_the_cache_is_refused(source, cache, tmp_path):
    url, _, sha256 = source
    cache.mkdir(parents=True)
    (cache / "link").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="outside the cache directory"):
        download(url, "link/outside.txt", sha256)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sha256": "abc"}, "sha256 must be 64 hex digits"),
        ({"sha256": None}, "sha256 must be 64 hex digits"),
        ({"timeout": 0}, "download: timeout must be a finite number > 0"),
        ({"timeout": float("nan")}, "download: timeout must be a finite number > 0"),
        ({"url": ""}, "url must be a non-empty str"),
    ],
)
def test_download_bad_arguments(source, kwargs, message):
    url, _, sha256 = source
    with pytest.raises(ValueError, match=message):
        download(**{"url": url, "path": "f.txt", "sha256": sha256, **kwargs})


def test_cache_dir_default(monkeypatch, tmp_path):
    monkeypatch.delenv("TRICYCLE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "tricycle"


# ------------------------------------------------------------------------------ splitting
def test_split_text_cuts_after_a_newline():
    text = "".join(f"line {i}\n" for i in range(100))
    train, valid = split_text(text)
    assert train + valid == text
    assert train.endswith("\n") and 0.08 < len(valid) / len(text) < 0.12


def test_split_documents_every_tenth():
    train, valid = split_documents([str(i) for i in range(20)])
    assert valid == "9\n19"
    assert train.split("\n") == [str(i) for i in range(20) if i % 10 != 9]


# ----------------------------------------------------------------------------- shakespeare
def test_shakespeare_bpe(data_dir, cache, monkeypatch):
    text = (data_dir / "tinyshakespeare.txt").read_text(encoding="utf-8")
    corpus = Shakespeare(vocab_size=300, data_dir=data_dir)

    assert corpus.text == text and corpus.vocab_size == 300
    assert isinstance(corpus.tokeniser, BPETokeniser)
    for tokens in (corpus.tokens, corpus.train_tokens, corpus.valid_tokens):
        assert tokens.dtype == np.int32 and tokens.ndim == 1
        assert 0 <= tokens.min() and tokens.max() < 300
    assert len(corpus) == len(corpus.train_tokens) + len(corpus.valid_tokens)
    assert 0.08 < len(corpus.valid_tokens) / len(corpus) < 0.12
    assert corpus.tokeniser.decode(corpus.tokens) == text

    # It behaves as the array of its tokens.
    assert np.array_equal(np.asarray(corpus), corpus.tokens)
    assert np.array_equal(corpus[10:20], corpus.tokens[10:20])
    assert np.asarray(corpus, dtype=np.int64).dtype == np.int64

    # A second load comes from the cache, without training.
    assert len(list((cache / "tokenised").iterdir())) == 2
    monkeypatch.setattr(BPETokeniser, "train", no_training)
    again = Shakespeare(vocab_size=300, data_dir=data_dir)
    assert np.array_equal(again.tokens, corpus.tokens)
    assert again.tokeniser.merges == corpus.tokeniser.merges


def test_shakespeare_char(data_dir):
    corpus = ShakespeareChar(data_dir=data_dir)
    assert isinstance(corpus.tokeniser, CharTokeniser)
    assert corpus.vocab_size == 65
    assert corpus.tokeniser.decode(corpus.valid_tokens) == split_text(corpus.text)[1]
    assert len(corpus) == len(corpus.text)


def test_corrupt_cache_is_rebuilt(data_dir, cache):
    first = ShakespeareChar(data_dir=data_dir)
    for path in (cache / "tokenised").glob("*.npz"):
        path.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="rebuilding unreadable cache"):
        second = ShakespeareChar(data_dir=data_dir)
    assert np.array_equal(first.tokens, second.tokens)


def test_shakespeare_from_environment(data_dir, monkeypatch):
    monkeypatch.setenv("TRICYCLE_DATA_DIR", str(data_dir))
    monkeypatch.setattr(shakespeare_module, "URL", "file:///nonexistent/input.txt")
    assert ShakespeareChar().vocab_size == 65


def test_shakespeare_missing_data_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="tinyshakespeare.txt"):
        ShakespeareChar(data_dir=tmp_path)


def test_shakespeare_offline_without_data_says_how_to_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(shakespeare_module, "URL", (tmp_path / "missing.txt").as_uri())
    with pytest.raises(FileNotFoundError, match="TRICYCLE_DATA_DIR") as info:
        ShakespeareChar()
    assert "data_dir" in str(info.value)


def test_shakespeare_data_dir_from_environment_must_exist(monkeypatch, tmp_path):
    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("TRICYCLE_DATA_DIR", str(missing))

    def no_download(*args, **kwargs):
        raise AssertionError("downloaded instead of reporting the missing directory")

    monkeypatch.setattr(shakespeare_module, "download", no_download)
    with pytest.raises(FileNotFoundError, match=f"TRICYCLE_DATA_DIR='{missing}' is not a dir"):
        ShakespeareChar()


def test_shakespeare_local_copy_with_the_wrong_checksum_warns(tmp_path):
    text = "First Citizen:\nBefore we proceed any further, hear me speak.\n" * 20
    (tmp_path / "input.txt").write_text(text)
    actual = hashlib.sha256(text.encode()).hexdigest()
    with pytest.warns(
        UserWarning, match=f"sha256 is {actual}, expected {shakespeare_module.SHA256}"
    ):
        corpus = ShakespeareChar(data_dir=tmp_path)
    assert corpus.text == text


def test_shakespeare_official_copy_does_not_warn(data_dir):
    """The official file (its sha256 is the one expected): no warning, its 1,115,394
    characters over a vocabulary of 65, one token each."""
    official = (data_dir / "tinyshakespeare.txt").read_bytes()
    assert hashlib.sha256(official).hexdigest() == shakespeare_module.SHA256
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        corpus = ShakespeareChar(data_dir=data_dir)
    assert corpus.vocab_size == 65 and len(set(corpus.text)) == 65
    assert len(corpus.text) == 1_115_394 and corpus.text == official.decode("utf-8")
    assert len(corpus.tokens) == len(corpus.text)


def test_shakespeare_non_utf8_names_the_file_and_offset(tmp_path):
    (tmp_path / "input.txt").write_bytes(b"First Citizen:\ncaf\xe9\n")
    with pytest.warns(UserWarning), pytest.raises(ValueError) as info:
        ShakespeareChar(data_dir=tmp_path)
    assert str(tmp_path / "input.txt") in str(info.value)
    assert "byte 0xe9 at offset 18" in str(info.value)


def test_shakespeare_download_path(data_dir, monkeypatch, cache):
    monkeypatch.setattr(shakespeare_module, "URL", (data_dir / "tinyshakespeare.txt").as_uri())
    assert ShakespeareChar().vocab_size == 65
    assert (cache / "data" / "tinyshakespeare.txt").is_file()


# ----------------------------------------------------------------------------- python code
def test_python_code(monkeypatch):
    corpus = PythonCode(vocab_size=300, max_bytes=300_000)
    assert corpus.vocab_size == 300 and corpus.tokens.max() < 300
    assert corpus.files == sorted(corpus.files) and len(corpus.files) >= 10
    assert not any(set(f.split("/")[:-1]) & EXCLUDED_DIRS for f in corpus.files)
    assert len(corpus.text.encode("utf-8")) <= 300_000 + len(corpus.files)  # + separators
    assert len(corpus.valid_tokens) > 0
    assert corpus.tokeniser.decode(corpus.tokens) == corpus.text

    # Deterministic: the same files and, from the cache, the same tokens.
    monkeypatch.setattr(BPETokeniser, "train", no_training)
    again = PythonCode(vocab_size=300, max_bytes=300_000)
    assert again.files == corpus.files and np.array_equal(again.tokens, corpus.tokens)


def test_python_code_from_a_directory(tmp_path):
    for i in range(12):
        (tmp_path / f"m{i:02}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text("assert True\n")
    (tmp_path / "latin1.py").write_bytes(b"# caf\xe9\n")
    corpus = PythonCode(vocab_size=None, root=tmp_path, char=True)
    assert corpus.files == [f"m{i:02}.py" for i in range(12)]
    assert corpus.tokeniser.decode(corpus.valid_tokens) == "def f9(x):\n    return x + 9\n"


def test_python_code_too_small():
    with pytest.raises(ValueError, match="at least 10 are needed"):
        PythonCode(vocab_size=300, max_bytes=100)


# ------------------------------------------------------------------------------- text file
def test_text_file(tmp_path):
    path = tmp_path / "notes.v2.txt"
    path.write_text("".join(f"note {i}: ünïcode 🙂\n" for i in range(200)), encoding="utf-8")
    bpe = TextFile(path, vocab_size=280)
    assert bpe.tokeniser.decode(bpe.tokens) == path.read_text(encoding="utf-8")
    chars = TextFile(path, char=True)
    assert chars.vocab_size == len(set(chars.text))
    assert TextFile(path, vocab_size=100, char=True).vocab_size == 100  # spare ids allowed


def test_text_file_errors(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text("abc\n" * 20)
    with pytest.raises(ValueError, match="vocab_size=2 is smaller than the 4 distinct"):
        TextFile(path, vocab_size=2, char=True)
    with pytest.raises(TypeError, match="TextFile: vocab_size must be an integer >= 256, got None"):
        TextFile(path)  # BPE needs a vocabulary size
    path.write_text("one line\n")
    with pytest.raises(ValueError, match="validation part of the corpus is empty"):
        TextFile(path, char=True)
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(ValueError, match=r"small.txt: not UTF-8 text: byte 0xe9 at offset 3"):
        TextFile(path, char=True)


def test_python_code_root_must_be_a_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        PythonCode(300, root=tmp_path / "missing")


# ------------------------------------------------------------------------------ codeparrot
def test_codeparrot_with_a_stand_in_datasets_package(monkeypatch):
    rows = [{"content": f"import os\nprint({i:04})\n"} for i in range(1000)]
    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda name, split, streaming: iter(rows)
    monkeypatch.setitem(sys.modules, "datasets", fake)
    corpus = CodeParrot(vocab_size=260, max_bytes=2_000)
    n_docs = 2_000 // len(rows[0]["content"])
    assert corpus.text.count("import os") == n_docs
    assert corpus.tokeniser.decode(corpus.tokens) == corpus.text


def test_codeparrot_without_datasets_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(ImportError, match="pip install datasets"):
        CodeParrot(vocab_size=300)
