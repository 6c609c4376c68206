"""A run keeps the weights of its lowest validation loss beside its last: a tiny run whose
validation loss rises after its minimum keeps the minimum's weights in best.safetensors (the same
as a run stopped there), says which step they come from, resumes from its last, and
inference.py samples from the best unless told ``--weights last``."""

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.test_train import one_blas_thread, train_in_process  # noqa: F401 - a fixture
from tricycle.apps import sample as sample_cli
from tricycle.apps.checkpoint import load_state
from tricycle.apps.runs import RunDirectory, load_model, read_weights

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.filterwarnings("ignore:BPETokeniser.train")  # a tiny text


@pytest.fixture
def overfitting(tmp_path, monkeypatch):
    """A text whose training part is 40 lines of random words said 8 times over and whose
    validation part is 40 other lines: memorising the first does not help the second."""
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta"]

    def lines():
        return "".join(" ".join(rng.choice(words) for _ in range(6)) + "\n" for _ in range(40))

    path = tmp_path / "tiny.txt"
    path.write_text(lines() * 8 + lines())
    return path


def train(corpus, out_dir, *extra) -> dict:
    return train_in_process([
        "--config", "debug", "--dataset", str(corpus), "--out-dir", str(out_dir),
        "--steps", "40", "--eval-interval", "4", "--eval-steps", "2", "--lr", "1e-2",
        "--warmup", "0", "--dropout", "0", "--no-progress", "--sample-tokens", "0", *extra,
    ])  # fmt: skip


def weights(path: Path) -> dict:
    return read_weights(path)["model"]


def test_the_best_weights_are_the_minimums_and_sampling_uses_them(overfitting, tmp_path, capsys):
    summary = train(overfitting, tmp_path / "run")
    log = capsys.readouterr().err
    metrics = (tmp_path / "run/metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in metrics]
    val = {r["step"]: r["val_loss"] for r in records if r["val_loss"] is not None}
    best_step = min(val, key=val.get)
    assert best_step < 40 and val[40] > val[best_step]  # it rose after its minimum
    assert (summary["best_step"], summary["best_val_loss"]) == (best_step, val[best_step])
    assert f"best weights: step {best_step}, val loss {val[best_step]:.4f}" in log
    assert f"step {best_step}: train loss" in log and f"val loss {val[best_step]:.4f} (best)" in log

    # best.safetensors holds the weights of step best_step: those of the same run stopped there
    stopped = train(overfitting, tmp_path / "stopped", "--stop-after", str(best_step))
    assert stopped["steps"] == best_step
    best = weights(tmp_path / "run/best.safetensors")
    there = weights(tmp_path / "stopped/model.safetensors")
    last = weights(tmp_path / "run/model.safetensors")
    assert best.keys() == there.keys() == last.keys()
    for name in best:
        np.testing.assert_array_equal(best[name], there[name])
    assert any(not np.array_equal(best[name], last[name]) for name in best)
    assert read_weights(tmp_path / "run/best.safetensors")["step"] == best_step

    # a run directory loads its best unless asked for its last; the checkpoint knows the best
    for which, expected in (("best", best), ("last", last)):
        loaded = load_model(tmp_path / "run", weights=which)[0].state_dict()
        for name in expected:
            np.testing.assert_array_equal(loaded[name], expected[name])
    state = load_state(tmp_path / "run/checkpoint.npz")
    assert state["best"] == {"step": best_step, "val_loss": val[best_step]}
    assert RunDirectory.BEST in RunDirectory.FILES  # --overwrite removes it with the rest

    # inference.py samples from the best and says so; told, tricycle-sample reads the last
    done = subprocess.run(
        [sys.executable, str(ROOT / "inference.py"), str(tmp_path / "run"), "--prompt", "alpha",
         "--max-tokens", "12", "--temperature", "0"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"best.safetensors, the run's best: step {best_step}" in done.stderr

    def sample(*extra) -> str:
        args = [str(tmp_path / "run"), "--prompt", "alpha", "--max-tokens", "12"]
        assert sample_cli.main([*args, "--temperature", "0", *extra]) == 0
        return capsys.readouterr()

    assert sample().out == done.stdout
    assert sample("--weights", "best").out == done.stdout
    assert "model.safetensors, the run's last: step 40" in sample("--weights", "last").err


def test_a_resumed_run_continues_from_the_last_and_keeps_the_best(overfitting, tmp_path):
    first = train(overfitting, tmp_path / "run", "--stop-after", "32")
    best_before = read_weights(tmp_path / "run/best.safetensors")
    resumed = train(overfitting, tmp_path / "run", "--resume")
    whole = train(overfitting, tmp_path / "whole")
    assert first["steps"] == 32 and resumed["steps"] == 40
    assert (resumed["best_step"], resumed["best_val_loss"]) == (
        whole["best_step"], whole["best_val_loss"])  # fmt: skip
    if resumed["best_step"] <= 32:  # not improved after the resume: best.safetensors is untouched
        assert read_weights(tmp_path / "run/best.safetensors")["step"] == best_before["step"]
    for name, array in weights(tmp_path / "whole/best.safetensors").items():
        np.testing.assert_array_equal(weights(tmp_path / "run/best.safetensors")[name], array)
