"""Tests for tricycle_datasets.prepare: a corpus on disk -> token shards, resumable.

The stdlib's top-level sources (a few MB) are prepared once per session with 2 worker
processes; the other tests use small hand-made corpora.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import made_once
from tricycle.apps.files import DirectoryLock
from tricycle.tokeniser import END_OF_TEXT, BPETokeniser
from tricycle_datasets import prepare as prepare_module
from tricycle_datasets.prepare import (
    ShardWriter,
    Task,
    find_files,
    main,
    make_tasks,
    prepare,
    read_task,
    validation_tasks,
)
from tricycle_datasets.shards import TokenShards, read_header, read_index, shard_dtype

STDLIB = Path(sysconfig.get_paths()["stdlib"])
ROOT = Path(__file__).resolve().parents[1]


def stream(directory: Path, split: str) -> np.ndarray:
    """Every id of a split, in order."""
    shards = TokenShards(directory, split, batch_size=1, context_window=1)
    return shards.read(np.array([0]), shards.n_tokens)[0]


# ---------------------------------------------------------------------- the stdlib, 2 workers
def prepare_stdlib(directory: Path) -> None:
    index = prepare(
        [str(STDLIB / "*.py")],
        directory / "shards",
        vocab_size=1024,
        workers=2,
        shard_tokens=200_000,
        valid_fraction=0.1,
        sample_bytes=1_000_000,
        progress=False,
    )
    assert index["complete"]


@pytest.fixture(scope="module")
def stdlib_shards(tmp_path_factory) -> Path:
    """This module's copy of the stdlib's shards, prepared once per session (two tests run
    prepare again on the directory)."""
    made = made_once(tmp_path_factory, "stdlib_shards", prepare_stdlib)
    out = tmp_path_factory.mktemp("stdlib") / "shards"
    shutil.copytree(made / "shards", out)
    return out


def test_stdlib_shards_hold_every_file_in_order(stdlib_shards):
    index = read_index(stdlib_shards)
    files = find_files([str(STDLIB / "*.py")], (".py",))
    assert sum(f.stat().st_size for f in files) > 3_000_000  # "a few MB"
    assert index["dtype"] == "uint16" and index["n_tokens"] == 1024 and index["eot_id"] == 1023
    assert len(index["splits"]["train"]) > 1 and len(index["splits"]["valid"]) >= 1

    # Every file here is smaller than a task: task k is file k, each whole in one split.
    tokeniser = BPETokeniser.load(stdlib_shards / "tokeniser.json")
    valid = validation_tasks(len(files), 0.1)
    for split, chosen in (
        ("train", sorted(set(range(len(files))) - valid)),
        ("valid", sorted(valid)),
    ):
        expected = "".join(files[k].read_bytes().decode() + END_OF_TEXT for k in chosen)
        assert tokeniser.decode(stream(stdlib_shards, split)) == expected

    for split in ("train", "valid"):
        for shard in index["splits"][split]:
            dtype, n = read_header(stdlib_shards / shard["file"])
            assert dtype == np.dtype("<u2") and n == shard["tokens"]
    assert not list(stdlib_shards.glob(".*.tmp"))  # no temporary files left


def test_loader_windows_decode_back_to_the_sources(stdlib_shards):
    corpus = b"".join(f.read_bytes() for f in find_files([str(STDLIB / "*.py")], (".py",)))
    shards = TokenShards(stdlib_shards, "train", batch_size=8, context_window=64, seed=0).batch()
    tokeniser = shards.tokeniser
    for _ in range(5):
        inputs, targets = next(shards)
        assert inputs.shape == targets.shape == (8, 64)
        assert np.array_equal(inputs[:, 1:], targets[:, :-1])
        for row, last in zip(inputs, targets[:, -1]):
            window = tokeniser.decode_bytes(np.append(row, last))
            for piece in window.split(END_OF_TEXT.encode()):
                assert piece in corpus


def test_a_complete_directory_is_left_alone(stdlib_shards, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in stdlib_shards.iterdir()}
    main(
        [str(STDLIB / "*.py"), "--out-dir", str(stdlib_shards), "--vocab-size", "1024"]
        + ["--workers", "2", "--shard-tokens", "200000", "--valid-fraction", "0.1"]
        + ["--sample-bytes", "1000000"]
    )
    assert "already complete" in capsys.readouterr().err
    assert {p.name: p.stat().st_mtime_ns for p in stdlib_shards.iterdir()} == before


def test_other_settings_are_refused_not_overwritten(stdlib_shards):
    args = [str(STDLIB / "*.py"), "--out-dir", str(stdlib_shards), "--vocab-size", "1024"]
    args += ["--shard-tokens", "5", "--valid-fraction", "0.1", "--sample-bytes", "1000000"]
    with pytest.raises(SystemExit, match="holds shards made with other shard_tokens"):
        main(args)


# ---------------------------------------------------------------------- cutting into tasks
@pytest.fixture
def tricky_file(tmp_path) -> Path:
    """Text where a careless cut would change the chunks: whitespace runs before words,
    CRLF, tabs, contractions at block ends, multi-byte characters, a long run without any
    cut point."""
    rng = np.random.default_rng(0)
    words = ["def", " x", "\n  ", "\r\n", "\t", "don't", "'ll", "é", "日本", "🙂", "  ", "42", "_"]
    text = "".join(rng.choice(words, size=6000)) + "y" * 9000 + " end\n"
    path = tmp_path / "tricky.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_tasks_meet_at_cut_points_and_read_every_byte_once(tricky_file):
    for block in (5, 37, 1000):
        tasks = make_tasks([tricky_file], block)
        assert "".join(read_task(task) for task in tasks) == tricky_file.read_bytes().decode()


def test_block_cuts_give_the_ids_of_encoding_each_file_whole(tricky_file, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text(STDLIB.joinpath("textwrap.py").read_text() * 2)
    out = tmp_path / "shards"
    prepare([str(tricky_file), str(other)], out, vocab_size=400, block_bytes=512,
            valid_fraction=0, progress=False)  # fmt: skip
    tokeniser = BPETokeniser.load(out / "tokeniser.json")
    expected = []
    for path in sorted([tricky_file, other]):
        expected += [*tokeniser.encode(path.read_bytes().decode()), tokeniser.eot_id]
    assert stream(out, "train").tolist() == expected
    assert read_index(out)["splits"]["valid"] == []


def test_validation_tasks_are_spread_evenly():
    assert validation_tasks(100, 0.1) == {9, 19, 29, 39, 49, 59, 69, 79, 89, 99}
    assert validation_tasks(5, 0.01) == {4}  # at least one
    assert validation_tasks(1, 0.5) == set() and validation_tasks(10, 0) == set()


# ---------------------------------------------------------------------- interruptions
def small_corpus(tmp_path: Path, n_files: int = 30) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    sources = sorted(STDLIB.glob("[a-e]*.py"))
    for i in range(n_files):
        (corpus / f"f{i:03}.py").write_text(sources[i % len(sources)].read_text())
    return corpus


def shard_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*.bin"))}


def test_an_interrupted_prepare_is_finished_by_running_it_again(tmp_path, monkeypatch):
    corpus = small_corpus(tmp_path)
    options = {"vocab_size": 300, "shard_tokens": 50_000, "valid_fraction": 0.1, "progress": False}
    prepare([str(corpus)], tmp_path / "reference", **options)

    closed = 0
    real_close = ShardWriter.close

    def close_twice_then_crash(self):
        nonlocal closed
        if closed == 2:
            self.file.write(b"half of a shard")  # the crash comes mid-write
            raise KeyboardInterrupt
        closed += 1
        return real_close(self)

    monkeypatch.setattr(ShardWriter, "close", close_twice_then_crash)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        prepare([str(corpus)], out, **options)
    index = read_index(out)
    assert not index["complete"]
    assert sum(len(shards) for shards in index["splits"].values()) == 2
    assert len(list(out.glob("*.bin"))) == 2  # no unlisted, half-written shard

    monkeypatch.setattr(ShardWriter, "close", real_close)
    calls = []
    real_encode = prepare_module.TaskEncoder.__call__
    monkeypatch.setattr(
        prepare_module.TaskEncoder, "__call__", lambda s, t: calls.append(t) or real_encode(s, t)
    )
    prepare([str(corpus)], out, **options)
    assert read_index(out)["complete"]
    assert shard_bytes(out) == shard_bytes(tmp_path / "reference")
    assert read_index(out)["splits"] == read_index(tmp_path / "reference")["splits"]
    assert 0 < len(calls) < len(make_tasks(find_files([str(corpus)], (".py",)), 1 << 20))


def test_a_killed_prepare_is_finished_by_running_it_again(tmp_path):
    """kill -9 in the middle of writing shards, then the same command again."""
    corpus = small_corpus(tmp_path, n_files=60)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "tricycle_datasets.prepare", str(corpus), "--out-dir",
               str(out), "--vocab-size", "300", "--workers", "1", "--shard-tokens", "20000",
               "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if read_index(out)["splits"]["train"]:
                    break
            except Exception:
                pass  # not written yet
            time.sleep(0.002)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    index = read_index(out)
    assert not index["complete"], "the run finished before it could be killed"
    listed = {s["file"] for shards in index["splits"].values() for s in shards}
    assert {p.name for p in out.glob("*.bin")} == listed

    subprocess.run(command, env=env, check=True)
    assert read_index(out)["complete"]
    reference = tmp_path / "reference"
    prepare([str(corpus)], reference, vocab_size=300, shard_tokens=20_000, progress=False)
    assert shard_bytes(out) == shard_bytes(reference)
    assert not list(out.glob(".*.tmp"))


def test_two_prepares_into_one_directory_are_refused(tmp_path):
    corpus = small_corpus(tmp_path, n_files=2)
    out = tmp_path / "out"
    command = [str(corpus), "--out-dir", str(out), "--vocab-size", "300", "--no-progress"]
    with DirectoryLock(out):  # as a prepare into it running in another process holds it
        with pytest.raises(SystemExit) as refused:
            main(command)
        assert str(refused.value).startswith(f"prepare: {out} is in use by another run (pid ")
        assert [p.name for p in out.iterdir()] == [".lock"]  # nothing written
    assert main(command)["complete"]  # once it is free


# ---------------------------------------------------------------------- errors
def test_errors_name_what_is_wrong(tmp_path):
    corpus = small_corpus(tmp_path, n_files=3)
    with pytest.raises(SystemExit, match="'nope' is not a file, directory or glob"):
        main(["nope", "--out-dir", str(tmp_path / "a"), "--vocab-size", "300"])

    bad = tmp_path / "latin1"
    bad.mkdir()
    (bad / "a.txt").write_text("fine\n" * 100)
    (bad / "b.txt").write_bytes(b"caf\xe9 au lait\n")
    with pytest.raises(SystemExit, match=r"b.txt: not UTF-8 text: byte 0xe9 at offset 3"):
        main([str(bad), "--out-dir", str(tmp_path / "b"), "--vocab-size", "300", "--workers", "2"])

    no_eot = tmp_path / "no_eot.json"
    BPETokeniser(300).save(no_eot)
    with pytest.raises(SystemExit, match="no <\\|endoftext\\|> token"):
        main([str(corpus), "--out-dir", str(tmp_path / "c"), "--tokeniser", str(no_eot)])

    not_json = tmp_path / "not.json"
    not_json.write_text("x")
    with pytest.raises(SystemExit, match="not.json: not a valid tokeniser JSON file"):
        main([str(corpus), "--out-dir", str(tmp_path / "d" / "deeper"), "--tokeniser",
              str(not_json)])  # fmt: skip
    # a mistake leaves no folder it made behind
    assert not [p for p in "abcd" if (tmp_path / p).exists()]

    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="is not empty"):
        main([str(corpus), "--out-dir", str(busy), "--vocab-size", "300"])
    assert (busy / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "extra",
    [
        ["--vocab-size", "300", "--workers", "0"],
        ["--vocab-size", "300", "--valid-fraction", "1"],
        ["--vocab-size", "300", "--shard-tokens", "-5"],
        ["--vocab-size", "256"],
        ["--vocab-size", "300", "--tokeniser", "t.json"],
        [],
    ],
)
def test_bad_arguments_are_usage_errors(tmp_path, extra, capsys):
    with pytest.raises(SystemExit) as info:
        main(["x.txt", "--out-dir", str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err
    assert info.value.code == 2 and " error: " in err and err.count("\n") == 1


def test_a_given_tokeniser_with_more_than_65536_ids_writes_uint32(tmp_path):
    corpus = small_corpus(tmp_path, n_files=2)
    tokeniser = BPETokeniser(65_600, special_tokens=[END_OF_TEXT])
    tokeniser._set_merges([(a, b) for a in range(256) for b in range(256)][:65_300])
    assert tokeniser.n_tokens == 65_557
    tokeniser.save(tmp_path / "big.json")
    out = tmp_path / "out"
    main([str(corpus), "--out-dir", str(out), "--tokeniser", str(tmp_path / "big.json"),
          "--workers", "1", "--no-progress"])  # fmt: skip
    index = read_index(out)
    assert index["dtype"] == "uint32" and index["eot_id"] == 65_556
    ids = np.concatenate([stream(out, "train"), stream(out, "valid")])
    assert ids.max() == 65_556 and ids.max(initial=0) > 1 << 16
    text = "".join(p.read_text() + END_OF_TEXT for p in sorted(corpus.iterdir()))
    assert len(tokeniser.decode(ids)) == len(text)
    assert shard_dtype(1 << 16) == np.dtype("<u2") and shard_dtype((1 << 16) + 1) == "<u4"


def test_tasks_are_small_and_picklable(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("word " * 1000)
    tasks = make_tasks([path], 1000)
    assert len(tasks) == 5 and tasks[-1].last and not tasks[0].last
    assert json.dumps([t.__dict__ for t in tasks])  # plain data: cheap to send to workers
    assert isinstance(tasks[0], Task)
