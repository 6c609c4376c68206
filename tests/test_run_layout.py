"""A run directory's weights as safetensors (tricycle.apps.checkpoint.save_weights, the
writer and reader of tricycle.hf_files): bit-exact round trips without the safetensors
library, a corrupt or mismatched file named in one line, a kill between the weights and the
state survived, and runs of the first layout (weights inside checkpoint.npz, best.npz)
still resumed, sampled and evaluated."""

import contextlib
import io
import json
import shutil
import struct

import numpy as np
import pytest

from tests.helpers import made_once
from tests.test_hellaswag import write_hellaswag_file
from tests.test_train import (
    losses,
    one_blas_thread,  # noqa: F401 - a fixture
    run,
    threadpool_limits,
    write_corpus,
)
from tricycle.apps import evaluate, sample
from tricycle.apps.checkpoint import (
    CheckpointError,
    load_state,
    load_weights,
    save_state,
    save_weights,
)
from tricycle.apps.runs import RunDirectory, load_model, read_weights
from tricycle.hf_files import read_safetensors, safetensors_bytes, write_safetensors

TRAIN = ["--steps", "8", "--eval-interval", "4", "--eval-steps", "1", "--dropout", "0.1"]


def test_weights_round_trip_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    weights = {
        "w": rng.standard_normal((3, 5)).astype(np.float32),
        "odd": np.array([np.nan, -0.0, np.inf, 1e-45], np.float32),  # every bit pattern kept
        "half": rng.standard_normal(7).astype(np.float16),
        "ids": np.arange(-3, 3, dtype=np.int64),
        "bytes": np.arange(4, dtype=np.uint8).reshape(2, 2),
        "empty": np.zeros((0, 4), np.float32),
        "scalar": np.array(2.5, np.float64),
    }
    path = tmp_path / "w.safetensors"
    digest = save_weights(path, weights, {"step": 7})
    loaded, info, again = load_weights(path)
    assert info == {"step": 7} and again == digest and loaded.keys() == weights.keys()
    for name, array in weights.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
        assert loaded[name].tobytes() == array.tobytes(), name


def test_bfloat16_is_stored_as_its_bits(tmp_path, monkeypatch):
    """BF16 read back without ml_dtypes: float32 whose top 16 bits are the stored ones."""
    bits = np.array([0x3F80, 0xC040, 0x0001, 0x7F80, 0xFFC1], np.uint16)  # 1, -3, tiny, inf, nan
    entries = {"b": {"dtype": "BF16", "shape": [5], "data_offsets": [0, 10]}}
    text = json.dumps(entries).encode()
    path = tmp_path / "b.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + bits.tobytes())
    monkeypatch.setitem(__import__("sys").modules, "ml_dtypes", None)  # absent
    widened = read_safetensors(path)[0]["b"]
    assert widened.dtype == np.float32
    assert np.array_equal(widened.view(np.uint32) >> 16, bits)
    assert np.array_equal(widened.view(np.uint32) & 0xFFFF, np.zeros(5, np.uint32))
    assert widened[:2].tolist() == [1.0, -3.0]


def test_bfloat16_arrays_round_trip_bit_exact(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bf16 arrays need ml_dtypes")
    bits = np.array([0x3F80, 0xC040, 0x0001, 0x7F80, 0xFFC1], np.uint16)
    array = bits.view(ml_dtypes.bfloat16)
    buffer = io.BytesIO()
    write_safetensors(buffer, {"b": array})
    (tmp_path / "again.safetensors").write_bytes(buffer.getvalue())
    back = read_safetensors(tmp_path / "again.safetensors")[0]["b"]
    assert back.dtype == array.dtype and np.array_equal(back.view(np.uint16), bits)


def test_the_safetensors_library_reads_ours_and_we_read_its(tmp_path):
    numpy_st = pytest.importorskip("safetensors.numpy")
    tensors = {"a.weight": np.arange(12, dtype=np.float32).reshape(3, 4),
               "b": np.arange(3, dtype=np.int32), "c": np.ones(5, np.float16)}  # fmt: skip
    (tmp_path / "ours.safetensors").write_bytes(safetensors_bytes(tensors))
    for name, array in numpy_st.load_file(tmp_path / "ours.safetensors").items():
        assert array.dtype == tensors[name].dtype and np.array_equal(array, tensors[name])
    numpy_st.save_file(tensors, tmp_path / "theirs.safetensors", {"format": "pt"})
    theirs, metadata = read_safetensors(tmp_path / "theirs.safetensors")
    assert metadata == {"format": "pt"}
    for name, array in theirs.items():
        assert array.dtype == tensors[name].dtype and np.array_equal(array, tensors[name])


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The corpus, a run of 8 steps (validated at 4 and 8) and the same run stopped at step 4:
    trained once per session; the tests read or change copies (``trained``)."""

    def make(directory):
        blas = threadpool_limits(limits=1, user_api="blas") if threadpool_limits else None
        with pytest.MonkeyPatch.context() as patch, blas or contextlib.nullcontext():
            patch.setenv("TRICYCLE_CACHE_DIR", str(directory / "cache"))
            corpus = write_corpus(directory / "corpus.txt")
            run(corpus, directory / "whole", *TRAIN)
            run(corpus, directory / "half", *TRAIN, "--stop-after", "4")

    return made_once(tmp_path_factory, "run_layout", make)


@pytest.fixture
def corpus(made, tmp_path, monkeypatch):
    """The text the runs were trained on (a resumed run must read the same file), and a
    copy of the cache they filled."""
    shutil.copytree(made / "cache", tmp_path / "cache")
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    return made / "corpus.txt"


@pytest.fixture
def trained(made, tmp_path):
    """The test's own copies of the two runs: ``whole`` (8 steps) and ``half`` (4)."""
    for name in ("whole", "half"):
        shutil.copytree(made / name, tmp_path / name)
    return tmp_path


def test_a_run_writes_safetensors_that_the_library_reads(trained):
    run_dir = RunDirectory(trained / "whole")
    assert run_dir.last.is_file() and run_dir.best.is_file()
    assert not (trained / "whole" / "best.npz").exists()
    assert not run_dir.previous.exists()  # only while a save is under way
    state = load_state(run_dir.checkpoint)
    assert "model" not in state and state["layout"] == RunDirectory.LAYOUT  # no second copy
    weights = read_weights(run_dir.last)
    assert weights["step"] == 8 and weights["run"]["config"]["arch"] == "gpt2"
    numpy_st = pytest.importorskip("safetensors.numpy")
    theirs = numpy_st.load_file(run_dir.last)
    assert theirs.keys() == weights["model"].keys()
    for name, array in theirs.items():
        assert array.tobytes() == weights["model"][name].tobytes()


def one_line_error(call, *fragments) -> str:
    with pytest.raises(CheckpointError) as error:
        call()
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_corrupt_or_mismatched_weights_are_one_line_naming_the_files(trained):
    run_dir = RunDirectory(trained / "whole")
    good = run_dir.last.read_bytes()
    for broken in (good[:-50], good[:6], good[:200], b""):  # truncated
        run_dir.last.write_bytes(broken)
        one_line_error(run_dir.load_state, str(run_dir.last))
        one_line_error(lambda: load_model(run_dir.path, weights="last"), str(run_dir.last))
    flipped = bytearray(good)
    flipped[len(flipped) - 100] ^= 0x01  # one bit of the last tensor
    run_dir.last.write_bytes(bytes(flipped))
    one_line_error(run_dir.load_state, str(run_dir.last), "corrupt")
    # the weights of another save beside this state: never paired
    run_dir.last.write_bytes(RunDirectory(trained / "half").last.read_bytes())
    one_line_error(run_dir.load_state, str(run_dir.last), str(run_dir.checkpoint),
                   "step 4", "step 8", "not from the same save")  # fmt: skip


def test_a_kill_between_the_weights_and_the_state_resumes_from_the_state(trained, corpus):  # noqa: F811
    """The half run killed after writing step 8's weights, before its state: the state of
    step 4 resumes with its own weights (kept aside), and finishes as the whole run."""
    half, whole = RunDirectory(trained / "half"), RunDirectory(trained / "whole")
    half.last.rename(half.previous)
    half.last.write_bytes(whole.last.read_bytes())  # the next save's weights, its state unwritten
    state = half.load_state()
    assert state["step"] == 4
    for name, array in read_weights(half.previous)["model"].items():
        assert state["model"][name].tobytes() == array.tobytes()
    run(corpus, half.path, *TRAIN, "--resume")
    assert losses(half.path) == losses(whole.path) and not half.previous.exists()


def test_a_state_of_a_newer_layout_names_its_version(trained):
    run_dir = RunDirectory(trained / "whole")
    state = load_state(run_dir.checkpoint)
    save_state(run_dir.checkpoint, {**state, "layout": 3})
    one_line_error(run_dir.load_state, str(run_dir.checkpoint), "layout 3", "newer tricycle")
    save_state(run_dir.checkpoint, state)
    document = load_state(run_dir.checkpoint)
    assert document["step"] == 8


def to_layout_1(path):
    """Rewrite the run at ``path`` as tricycle wrote runs before model.safetensors: the
    whole state (weights included) in checkpoint.npz, the best weights in best.npz."""
    run_dir = RunDirectory(path)
    state = run_dir.load_state()
    del state["layout"], state["weights_sha256"]
    save_state(run_dir.checkpoint, state)
    if run_dir.best.is_file():
        save_state(path / RunDirectory.OLD_BEST, read_weights(run_dir.best))
        run_dir.best.unlink()
    run_dir.last.unlink()


def test_a_run_of_the_first_layout_resumes_samples_and_evaluates(trained, corpus, capsys):  # noqa: F811
    half = RunDirectory(trained / "half")
    expected = load_model(half.path)[0].state_dict()  # its best weights, before rewriting
    to_layout_1(half.path)
    assert sorted(p.name for p in half.path.glob("*.*") if "model" in p.name or "npz" in p.name) \
        == ["best.npz", "checkpoint.npz", "model.pkl"]  # fmt: skip

    # sampling and evaluation read best.npz (or checkpoint.npz with --weights last)
    for name, array in load_model(half.path)[0].state_dict().items():
        assert array.tobytes() == expected[name].tobytes()
    assert sample.main([str(half.path), "--prompt", "def", "--max-tokens", "5",
                        "--temperature", "0"]) == 0  # fmt: skip
    assert "best.npz, the run's best: step 4" in capsys.readouterr().err
    assert sample.main([str(half.path), "--weights", "last", "--max-tokens", "3"]) == 0
    assert "checkpoint.npz, the run's last: step 4" in capsys.readouterr().err
    hellaswag = write_hellaswag_file(trained / "hellaswag.jsonl")
    result = evaluate.main([str(half.path), "--hellaswag", str(hellaswag), "--limit", "2"])
    assert result["n"] == 2 and "best.npz" in capsys.readouterr().err

    # --resume continues it exactly, in the new layout
    run(corpus, half.path, *TRAIN, "--resume")
    assert losses(half.path) == losses(trained / "whole")
    assert half.last.is_file() and "model" not in load_state(half.checkpoint)
