"""What a newcomer meets on a first run: a mistake leaves no trace and names the flag the
user typed; a finished run leaves no lock; the data decide the vocabulary; prepare says what
it did to the vocabulary, the workers and the validation split."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import DATA_DIR
from tests.test_examples import offline  # noqa: F401 - a fixture
from tests.test_train import corpus, one_blas_thread, run, train_in_process  # noqa: F401
from tests.test_train_shards import JSON_PACKAGE
from tricycle.apps import sample, train
from tricycle_datasets import prepare as prepare_module
from tricycle_datasets.prepare import prepare
from tricycle_datasets.shards import load_tokeniser


def test_a_run_that_fails_leaves_no_directory_it_made(tmp_path):
    out = tmp_path / "runs" / "x"
    with pytest.raises(SystemExit, match="--dataset"):
        train_in_process(["--config", "debug", "--dataset", str(tmp_path / "missing.txt"),
                          "--out-dir", str(out), "--no-progress"])  # fmt: skip
    assert not (tmp_path / "runs").exists()


def test_a_directory_that_was_there_stays(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    with pytest.raises(SystemExit):
        train_in_process(["--config", "debug", "--dataset", str(tmp_path / "missing.txt"),
                          "--out-dir", str(out), "--no-progress"])  # fmt: skip
    assert out.is_dir() and not list(out.iterdir())


def test_a_finished_run_leaves_no_lock_and_its_first_line_names_the_flags(corpus, tmp_path, capsys):  # noqa: F811, E501
    run(corpus, tmp_path / "run", "--steps", "2")
    assert not (tmp_path / "run" / ".lock").exists()
    assert "--config debug, --arch gpt2: " in capsys.readouterr().err


def test_offline_shakespeare_names_data_dir_and_leaves_nothing(offline, tmp_path):  # noqa: F811
    with pytest.raises(SystemExit) as done:
        train_in_process(["--dataset", "shakespeare-char", "--out-dir", str(tmp_path / "r"),
                          "--no-progress"])  # fmt: skip
    message = str(done.value)
    assert "pass --data-dir DIR" in message and "Shakespeare(" not in message
    assert not (tmp_path / "r").exists()


@pytest.mark.skipif(not (DATA_DIR / "tinyshakespeare.txt").is_file(), reason="no data")
def test_characters_decide_the_vocabulary(tmp_path, capsys):
    common = ["--config", "debug", "--dataset", "shakespeare-char", "--data-dir", str(DATA_DIR),
              "--no-progress", "--sample-tokens", "0", "--steps", "1"]  # fmt: skip
    train_in_process([*common, "--out-dir", str(tmp_path / "a")])
    config = json.loads((tmp_path / "a" / "config.json").read_text())["config"]
    assert config["vocab_size"] == 128  # 65 characters, rounded up to a multiple of 64
    assert "vocabulary: 128 ids, the data's 65" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"65 ids, more than --vocab-size 64: leave --vocab"):
        train_in_process([*common, "--out-dir", str(tmp_path / "b"), "--vocab-size", "64"])
    train_in_process([*common, "--out-dir", str(tmp_path / "c"), "--vocab-size", "65"])
    assert json.loads((tmp_path / "c" / "config.json").read_text())["config"]["vocab_size"] == 65


def test_sampling_a_missing_run_says_it_does_not_exist(tmp_path):
    with pytest.raises(SystemExit, match=r"runs/nonexistent does not exist"):
        sample.main([str(tmp_path / "runs" / "nonexistent")])


def test_sample_help_says_each_default_once(capsys):
    with pytest.raises(SystemExit):
        sample.parse_args(["--help"])
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "(default: the run's own)\n" in text
    assert "where the model runs" in text


def test_prepare_names_out_dir_as_its_caller_did(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("not a shard directory")
    source = [str(JSON_PACKAGE / "tool.py")]
    with pytest.raises(FileExistsError, match=r"choose an empty or new out_dir$"):
        prepare(source, out, vocab_size=300, progress=False)
    with pytest.raises(SystemExit, match=r"^prepare: .*choose an empty or new --out-dir$"):
        prepare_module.main([*source, "--out-dir", str(out), "--vocab-size", "300"])


def test_prepare_caps_workers_and_says_what_the_vocabulary_will_be(tmp_path, capsys):
    cores = prepare_module.available_cores()
    source = [str(JSON_PACKAGE / name) for name in ("tool.py", "scanner.py", "decoder.py")]
    prepare_module.main([*source, "--out-dir", str(tmp_path / "out"), "--vocab-size", "2000",
                         "--workers", str(cores + 6), "--valid-fraction", "0.34",
                         "--no-progress"])  # fmt: skip
    said = capsys.readouterr().err
    assert f"--workers {cores + 6} is more than the {cores} cores" in said
    n_ids = load_tokeniser(tmp_path / "out").n_tokens
    assert n_ids < 2000
    assert f"the text fills {n_ids:,} of the 2,000 ids of --vocab-size" in said
    assert f"takes a vocabulary of {-(-n_ids // 64) * 64:,}" in said


def test_a_validation_split_too_small_to_evaluate_is_an_error_with_the_fix(tmp_path, capsys):
    (tmp_path / "a.txt").write_text((JSON_PACKAGE / "tool.py").read_text())  # training
    (tmp_path / "b.txt").write_text("def f(x):\n    return x\n" * 10)  # validation
    source = [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    prepare(source, tmp_path / "shards", vocab_size=300, valid_fraction=0.5, progress=False)
    assert "the validation split has" in capsys.readouterr().err
    with pytest.raises(SystemExit, match=r"validation split has .* a larger --valid-fraction"):
        train_in_process(["--config", "debug", "--dataset", str(tmp_path / "shards"),
                          "--context-window", "512", "--out-dir", str(tmp_path / "run"),
                          "--no-progress"])  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_out_of_memory_is_one_line_naming_the_sizes_to_lower(tmp_path, monkeypatch, capsys):
    """A size with a zero too many: numpy's MemoryError as one line, no traceback."""
    from tricycle.apps import training

    def too_big(trainer):
        raise MemoryError("Unable to allocate 24.6 GiB for an array")

    monkeypatch.setattr(training.Trainer, "train_step", too_big)
    out = tmp_path / "runs" / "big"
    with pytest.raises(SystemExit, match=r"^tricycle-train: out of memory \(Unable to allocate "
                       r"24\.6 GiB for an array\): lower --batch-size"):  # fmt: skip
        train.main(["--config", "debug", "--dataset", "shakespeare-char", "--out-dir", str(out),
                    "--no-progress", "--data-dir", str(DATA_DIR)])  # fmt: skip


def test_a_reader_that_stops_early_ends_the_program_quietly(tmp_path):
    """``tricycle-sample ... | head``: no BrokenPipeError traceback, exit status 1."""
    script = ("from tricycle.apps.cli import ends_in_one_line\n"
              "with ends_in_one_line('prog', '--size'):\n"
              "    for _ in range(100000):\n"
              "        print('x' * 100, flush=True)\n")  # fmt: skip
    done = subprocess.run(f"{sys.executable} -c \"$SCRIPT\" | head -c 10", shell=True,
                          capture_output=True, text=True, env={**os.environ, "SCRIPT": script},
                          timeout=60)  # fmt: skip
    assert done.stdout == "x" * 10 and done.stderr == ""
