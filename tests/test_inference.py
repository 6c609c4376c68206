"""End to end, as a user runs them: train_smol_gpt.py then inference.py, in subprocesses."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tricycle.configs import DebugConfig
from tricycle.models import GPT

ROOT = Path(__file__).resolve().parents[1]


def run_script(script: str, *args, tmp_path: Path, check: bool = True):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TRICYCLE_CACHE_DIR": str(tmp_path / "cache"),
        "OPENBLAS_NUM_THREADS": "1",  # tiny matrices: one BLAS thread is fastest
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / script), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A debug model trained for a few steps on a small text file by the training script."""
    tmp_path = tmp_path_factory.mktemp("e2e")
    text = "".join(f"def f{i % 7}(x):\n    return x * {i % 5} + {i % 3}\n" for i in range(600))
    (tmp_path / "code.txt").write_text(text)
    result = run_script(
        "train_smol_gpt.py",
        "--config", "debug", "--dataset", "code.txt", "--steps", "12",
        "--eval-interval", "6", "--eval-steps", "2", "--sample-tokens", "20",
        "--out-dir", "run", "--no-progress",
        tmp_path=tmp_path,
    )  # fmt: skip
    return tmp_path, result


def test_training_script_writes_everything(trained):
    tmp_path, result = trained
    run = tmp_path / "run"
    for name in ("model.pkl", "checkpoint.npz", "tokeniser.json", "config.json", "metrics.jsonl"):
        assert (run / name).is_file(), name
    assert len((run / "metrics.jsonl").read_text().splitlines()) == 12
    assert "----- sample -----" in result.stdout
    assert "parameters" in result.stderr


def test_inference_streams_a_continuation(trained):
    tmp_path, _ = trained
    args = ("run/model.pkl", "--prompt", "def f", "--max-tokens", "30", "--seed", "1")
    first = run_script("inference.py", *args, tmp_path=tmp_path)
    assert first.stdout.startswith("def f") and len(first.stdout) > len("def f") + 5
    again = run_script("inference.py", *args, tmp_path=tmp_path)
    assert again.stdout == first.stdout  # the seed makes sampling reproducible
    greedy = run_script(
        "inference.py", "run/model.pkl", "--temperature", "0", "--top-k", "3",
        "--max-tokens", "10", tmp_path=tmp_path,
    )  # fmt: skip
    assert greedy.returncode == 0


def test_inference_finds_the_tokeniser_or_says_how(trained):
    tmp_path, _ = trained
    (tmp_path / "alone").mkdir(exist_ok=True)
    (tmp_path / "alone" / "model.pkl").write_bytes((tmp_path / "run" / "model.pkl").read_bytes())
    missing = run_script("inference.py", "alone/model.pkl", tmp_path=tmp_path, check=False)
    assert missing.returncode != 0 and "--tokeniser" in missing.stderr
    explicit = run_script(
        "inference.py", "alone/model.pkl", "--tokeniser", "run/tokeniser.json",
        "--max-tokens", "5", tmp_path=tmp_path,
    )  # fmt: skip
    assert explicit.returncode == 0


def test_bad_model_files_fail_clearly(tmp_path):
    (tmp_path / "broken.pkl").write_bytes(b"not a pickle at all")
    broken = run_script("inference.py", "broken.pkl", tmp_path=tmp_path, check=False)
    assert broken.returncode != 0 and "broken.pkl" in broken.stderr
    assert "Traceback" not in broken.stderr
    (tmp_path / "list.pkl").write_bytes(pickle.dumps([1, 2, 3]))
    wrong = run_script("inference.py", "list.pkl", tmp_path=tmp_path, check=False)
    assert wrong.returncode != 0 and "not a GPT" in wrong.stderr


def test_a_model_pickled_as_in_the_readme_samples(trained):
    """The README does pickle.dump(model, f) itself; such a pickle loads and samples too."""
    tmp_path, _ = trained
    np.random.seed(0)
    (tmp_path / "readme").mkdir(exist_ok=True)
    with open(tmp_path / "readme" / "model.pkl", "wb") as f:
        pickle.dump(GPT(DebugConfig()), f)
    (tmp_path / "readme" / "tokeniser.json").write_bytes(
        (tmp_path / "run" / "tokeniser.json").read_bytes()
    )
    result = run_script(
        "inference.py", "readme/model.pkl", "--max-tokens", "8", "--seed", "0", tmp_path=tmp_path
    )
    assert result.returncode == 0 and result.stdout.startswith("\n")


def test_both_scripts_have_help(tmp_path):
    for script, option in (("train_smol_gpt.py", "--resume"), ("inference.py", "--top-k")):
        result = run_script(script, "--help", tmp_path=tmp_path)
        assert option in result.stdout


def test_resume_without_a_checkpoint_fails_clearly(tmp_path):
    result = run_script(
        "train_smol_gpt.py", "--resume", "--out-dir", "nothing", tmp_path=tmp_path, check=False
    )
    assert result.returncode != 0 and "no such checkpoint" in result.stderr
