"""Training: the loss falls, resuming replays exactly, divergence stops cleanly; checkpoint
files are atomic and safe."""

import json
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

try:  # installed with scikit-learn (a test dependency); optional all the same
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

from tricycle import train as train_cli
from tricycle import training
from tricycle.checkpoint import (
    CheckpointError,
    atomic_write_bytes,
    load_pickle,
    load_state,
    save_pickle,
    save_state,
)
from tricycle.configs import DebugConfig
from tricycle.dataset import CausalLMDataset
from tricycle.files import atomic_write
from tricycle.models import GPT
from tricycle.optimisers import AdamW


def write_corpus(path: Path, n_lines: int = 1500) -> Path:
    """A small, learnable, code-like text: templated lines with a few varying names."""
    rng = np.random.default_rng(0)
    names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    lines = []
    for i in range(n_lines):
        a, b = rng.choice(names, 2)
        op = rng.choice(["+", "-", "*", "//"])
        lines.append(f"def {a}_{b}_{i % 97}(x):\n    return {a}(x) {op} {b}(x, {i % 13})\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture(autouse=True)
def one_blas_thread():
    """Tiny matrices gain nothing from BLAS threads, and on a busy VM every wake-up of a
    second thread can cost milliseconds: training the debug model is ~10x faster on one."""
    if threadpool_limits is None:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "corpus.txt")


def run(corpus, out_dir, *extra):
    args = ["--config", "debug", "--dataset", str(corpus), "--out-dir", str(out_dir)]
    return train_cli.run([*args, "--no-progress", "--sample-tokens", "0", *extra])


def losses(out_dir) -> list[float]:
    lines = (Path(out_dir) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines]


def test_loss_falls_well_below_chance(corpus, tmp_path):
    summary = run(corpus, tmp_path / "run", "--steps", "150", "--eval-interval", "50")
    history = losses(tmp_path / "run")
    chance = math.log(DebugConfig().vocab_size)  # 5.70: the loss of uniform guessing
    assert len(history) == 150
    assert abs(history[0] - chance) < 0.3
    assert np.mean(history[-10:]) < chance - 3.5, history[-10:]
    assert summary["val_loss"] < chance - 3.5
    for name in ("model.pkl", "checkpoint.npz", "tokeniser.json", "config.json"):
        assert (tmp_path / "run" / name).is_file()


def test_resumed_run_replays_the_uninterrupted_one_exactly(corpus, tmp_path):
    common = ["--steps", "24", "--eval-interval", "5", "--dropout", "0.1"]
    common += ["--gradient-accumulation-steps", "2"]
    run(corpus, tmp_path / "whole", *common)
    run(corpus, tmp_path / "parts", *common, "--stop-after", "11")
    assert len(losses(tmp_path / "parts")) == 11
    assert load_state(tmp_path / "parts" / "checkpoint.npz")["step"] == 11
    run(corpus, tmp_path / "parts", *common, "--resume")

    whole, parts = losses(tmp_path / "whole"), losses(tmp_path / "parts")
    assert len(whole) == len(parts) == 24
    assert parts == whole  # bit for bit
    final_whole = load_state(tmp_path / "whole" / "checkpoint.npz")["model"]
    final_parts = load_state(tmp_path / "parts" / "checkpoint.npz")["model"]
    for name, value in final_whole.items():
        np.testing.assert_array_equal(final_parts[name], value, err_msg=name)


def test_divergence_stops_with_the_step_and_keeps_the_checkpoint(corpus, tmp_path, monkeypatch):
    real_step = training.Trainer.train_step

    def poisoned(trainer):
        if trainer.step == 5:
            trainer.model.parameters()[0].array[...] = np.nan
        return real_step(trainer)

    monkeypatch.setattr(training.Trainer, "train_step", poisoned)
    with pytest.raises(SystemExit, match="loss is nan at step 5.*last checkpoint"):
        run(corpus, tmp_path / "run", "--steps", "10", "--eval-interval", "2")
    checkpoint = load_state(tmp_path / "run" / "checkpoint.npz")
    assert checkpoint["step"] == 4
    assert all(np.isfinite(v).all() for v in checkpoint["model"].values())


def test_training_step_raises_on_a_nan_loss():
    np.random.seed(0)
    model = GPT(DebugConfig())
    model.layer_norm.gamma.array[...] = np.nan
    before = [p.array.copy() for p in model.parameters()]
    batch = np.zeros((2, 4), dtype=int)
    output = training.train_step(model, AdamW(), iter([(batch, batch)]), max_norm=1.0)
    with pytest.raises(training.TrainingDiverged, match="at step 3"):
        output.settle(3)
    assert output.skipped is True  # an inf/NaN gradient never reaches the weights
    for p, old in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.array, old)


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_cli.parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--resume", "--dataset", "--eval-steps", "--device", "--grad-clip"):
        assert option in text


# ------------------------------------------------------------------ checkpoint files


def test_safe_state_round_trip(tmp_path):
    state = {
        "step": 7,
        "weights": {"blocks.0.w": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "rng": np.random.default_rng(1).bit_generator.state,
        "nested": [1, 2.5, "x", None, True, (np.int64(3), np.zeros(2))],
    }
    save_state(tmp_path / "c.npz", state)
    loaded = load_state(tmp_path / "c.npz")
    assert loaded["step"] == 7 and loaded["rng"] == state["rng"]
    np.testing.assert_array_equal(loaded["weights"]["blocks.0.w"], state["weights"]["blocks.0.w"])
    assert loaded["nested"][:5] == [1, 2.5, "x", None, True] and loaded["nested"][5][0] == 3
    with pytest.raises(TypeError, match="object"):
        save_state(tmp_path / "bad.npz", {"x": np.array([None])})
    with pytest.raises(TypeError, match="cannot be saved"):
        save_state(tmp_path / "bad.npz", {"x": object()})


def test_corrupt_files_raise_clear_errors(tmp_path):
    save_state(tmp_path / "c.npz", {"w": np.ones(1000)})
    data = (tmp_path / "c.npz").read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated.npz"):
        load_state(tmp_path / "truncated.npz")
    np.savez(tmp_path / "plain.npz", w=np.ones(2))
    with pytest.raises(CheckpointError, match="not a tricycle checkpoint"):
        load_state(tmp_path / "plain.npz")
    with pytest.raises(CheckpointError, match="no such"):
        load_state(tmp_path / "missing.npz")
    (tmp_path / "m.pkl").write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(CheckpointError, match="m.pkl"):
        load_pickle(tmp_path / "m.pkl")


def test_writes_are_atomic(tmp_path):
    path = tmp_path / "model.pkl"
    save_pickle({"version": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        save_pickle(Unpicklable(), path)
    with pytest.raises(RuntimeError, match="mid-write"):
        with atomic_write(path) as f:
            f.write(b"partial")
            raise RuntimeError("mid-write")
    assert load_pickle(path) == {"version": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pkl"]  # no temporary left
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new"


def test_evaluation_protocols():
    """'sequential' scores the same windows every time; 'random' draws fresh ones (nanoGPT)."""
    np.random.seed(0)
    config = DebugConfig(vocab_size=20, context_window=8, embedding_dim=16, n_heads=2, n_layers=1)
    model = GPT(config)
    tokens = np.random.default_rng(0).integers(0, 20, size=2000)
    valid = CausalLMDataset(tokens, 20, 4, 8, 0).batch()
    evaluate = training.evaluate
    sequential = [evaluate(model, valid, 3) for _ in range(2)]
    random = [evaluate(model, valid, 3, protocol="random") for _ in range(2)]
    assert sequential[0] == sequential[1]
    assert random[0] != random[1]
    assert all(abs(v - np.log(20)) < 0.5 for v in sequential + random)  # an untrained model
    with pytest.raises(ValueError, match="eval_protocol"):
        DebugConfig(eval_protocol="sometimes")
