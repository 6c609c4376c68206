"""Every example and every program, run as a user runs it on a machine without network and
without its data (an empty cache, no TRICYCLE_DATA_DIR, scikit-learn's digits missing): one
line on stderr naming the flag or variable that fixes it, a non-zero exit, never a
traceback. The network is shut by TRICYCLE_OFFLINE (which ``tricycle_datasets.download``
honours) and, in case, by proxies that lead nowhere."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tricycle.configs import DebugConfig
from tricycle.models import GPT
from tricycle.tokeniser import CharTokeniser

ROOT = Path(__file__).resolve().parents[1]
NOWHERE = "http://127.0.0.1:9"  # the discard port: a refused connection, at once


def offline_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRICYCLE_DATA_DIR"}
    (tmp_path / "no-sklearn" / "sklearn").mkdir(parents=True, exist_ok=True)
    (tmp_path / "no-sklearn" / "sklearn" / "__init__.py").write_text(
        "raise ImportError('scikit-learn is not installed (a test says so)')\n"
    )
    return {
        **env,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "no-sklearn"), str(ROOT)]),
        "TRICYCLE_CACHE_DIR": str(tmp_path / "empty-cache"),
        "TRICYCLE_OFFLINE": "1",
        **{name: NOWHERE for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")},
        "no_proxy": "", "NO_PROXY": "",
    }  # fmt: skip


def a_model(tmp_path: Path) -> Path:
    """A pickled debug GPT with its tokeniser beside it, for the programs that score one."""
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    np.random.seed(0)
    tokeniser = CharTokeniser().train("abcdefgh \n")
    tokeniser.save(folder / "tokeniser.json")
    (folder / "model.pkl").write_bytes(pickle.dumps(GPT(DebugConfig(vocab_size=64))))
    return folder / "model.pkl"


# (program and arguments, what the one line must name)
PROGRAMS = {
    "bert_mlm": (["examples/bert_mlm.py"], "--data-dir DIR, or set TRICYCLE_DATA_DIR"),
    "char_lstm": (["examples/char_lstm.py"], "--data-dir DIR, or set TRICYCLE_DATA_DIR"),
    "digits_cnn": (["examples/digits_cnn.py"], "pip install scikit-learn"),
    "diffusion_digits": (["examples/diffusion_digits.py"], "pip install scikit-learn"),
    "train_smol_gpt": (["train_smol_gpt.py", "--dataset", "shakespeare-char"],
                       "--data-dir DIR, or set TRICYCLE_DATA_DIR"),
    "tricycle-train": (["-m", "tricycle.apps.train", "--config", "debug", "--dataset",
                        "shakespeare"], "--data-dir DIR, or set TRICYCLE_DATA_DIR"),
    "inference": (["inference.py", "runs/cpu"], "give a run directory"),
    "tricycle-sample": (["-m", "tricycle.apps.sample", "runs/cpu"], "give a run directory"),
    "evaluate-without-a-model": (["-m", "tricycle.evaluate", "runs/cpu"], "give a run directory"),
    "evaluate": (["-m", "tricycle.evaluate", "MODEL"], "pass --hellaswag FILE"),
    "prepare": (["-m", "tricycle_datasets.prepare", "corpus/", "--out-dir", "shards",
                 "--vocab-size", "300"], "'corpus/' is not a file, directory or glob"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_offline_without_its_data_a_program_says_one_line_and_fails(name, tmp_path):
    args, fix = PROGRAMS[name]
    args = [str(a_model(tmp_path)) if a == "MODEL" else a for a in args]
    if not args[0].startswith("-"):
        args[0] = str(ROOT / args[0])
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120,
                          env=offline_env(tmp_path), cwd=tmp_path)  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and fix in lines[0], done.stderr
    assert not (tmp_path / "empty-cache").exists() or not any(
        p.is_file() for p in (tmp_path / "empty-cache").rglob("*")
    )  # nothing was downloaded
