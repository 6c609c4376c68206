"""End to end, as a user runs them: train_smol_gpt.py then inference.py, in subprocesses;
sampling from the safe checkpoint, Ctrl-C, and runs killed at random moments."""

import json
import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import made_once
from tricycle import backend
from tricycle.apps.checkpoint import load_state, load_weights, save_weights
from tricycle.apps.runs import RunDirectory
from tricycle.apps.train import main as train_main
from tricycle.configs import DebugConfig
from tricycle.models import GPT
from tricycle.tokeniser import CharTokeniser

ROOT = Path(__file__).resolve().parents[1]


def script_env(tmp_path: Path) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "TRICYCLE_CACHE_DIR": str(tmp_path / "cache"),
        "OPENBLAS_NUM_THREADS": "1",  # tiny matrices: one thread is fastest
        "TRICYCLE_THREADS": "1",
    }


def run_script(script: str, *args, tmp_path: Path, check: bool = True):
    result = subprocess.run(
        [sys.executable, str(ROOT / script), *map(str, args)],
        capture_output=True,
        text=True,
        env=script_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"{script} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def train_the_run(tmp_path: Path) -> None:
    """A debug model trained for a few steps on a small text file by the training script
    (its output kept beside it)."""
    text = "".join(f"def f{i % 7}(x):\n    return x * {i % 5} + {i % 3}\n" for i in range(600))
    (tmp_path / "code.txt").write_text(text)
    result = run_script(
        "train_smol_gpt.py",
        "--config", "debug", "--dataset", "code.txt", "--steps", "12",
        "--eval-interval", "6", "--eval-steps", "2", "--sample-tokens", "20",
        "--out-dir", "run", "--no-progress",
        tmp_path=tmp_path,
    )  # fmt: skip
    (tmp_path / "stdout.txt").write_text(result.stdout)
    (tmp_path / "stderr.txt").write_text(result.stderr)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(a folder of this module's own holding the trained run, the script's output): the run
    is trained once per session and copied here, as the tests add files beside it."""
    made = made_once(tmp_path_factory, "inference_run", train_the_run)
    tmp_path = tmp_path_factory.mktemp("e2e")
    shutil.copytree(made, tmp_path, dirs_exist_ok=True)
    output = [(tmp_path / f"{name}.txt").read_text() for name in ("stdout", "stderr")]
    return tmp_path, subprocess.CompletedProcess("train_smol_gpt.py", 0, *output)


def test_training_script_writes_everything(trained):
    tmp_path, result = trained
    run = tmp_path / "run"
    for name in ("model.pkl", "model.safetensors", "checkpoint.npz", "tokeniser.json",
                 "config.json", "metrics.jsonl"):  # fmt: skip
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
    (tmp_path / "notes.txt").write_bytes(pickle.dumps([1, 2, 3]))  # a pickle by another name
    other = run_script("inference.py", "notes.txt", tmp_path=tmp_path, check=False)
    assert other.returncode != 0 and "only files named as pickles" in other.stderr


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
    assert result.returncode != 0 and "no checkpoint in nothing" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "nothing").exists()


@pytest.mark.skipif(backend.cupy_available(), reason="checks the CPU-only message")
def test_device_gpu_without_a_gpu_is_one_line_and_touches_nothing(tmp_path, capsys):
    old = tmp_path / "run"
    old.mkdir()
    (old / "metrics.jsonl").write_text("{}\n")  # a run that --overwrite would replace
    with pytest.raises(SystemExit) as stopped:
        train_main(["--device", "gpu", "--out-dir", str(old), "--overwrite"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in err
    assert err == (
        "tricycle-train: error: --device gpu: no CUDA GPU is available (cupy is not installed "
        "or sees no device): install the GPU extra on a machine with a GPU, or pass --device cpu"
        " (--help lists the flags)\n"
    )
    assert sorted(p.name for p in old.iterdir()) == ["metrics.jsonl"]


# ------------------------------------------------------------------ the safe format


def test_sampling_from_the_run_or_its_checkpoint_needs_no_pickle(trained):
    tmp_path, _ = trained
    args = ("--prompt", "def f", "--max-tokens", "20", "--seed", "3")
    from_pickle = run_script("inference.py", "run/model.pkl", *args, tmp_path=tmp_path)
    # the run's folder, three samples: the first is the one sample of the same seed
    several = run_script("inference.py", "run", *args, "--num-samples", "3", tmp_path=tmp_path)
    assert several.stdout.count("def f") >= 3 and several.stdout.count("-" * 15) == 2
    from_dir = several.stdout.split("-" * 15 + "\n")[0]
    from_npz = run_script("inference.py", "run/checkpoint.npz", *args, tmp_path=tmp_path)
    last = run_script("inference.py", "run/model.safetensors", *args, tmp_path=tmp_path)
    assert from_dir == from_npz.stdout == from_pickle.stdout == last.stdout
    (tmp_path / "alone").mkdir(exist_ok=True)  # the weights carry their own tokeniser
    weights = (tmp_path / "run" / "model.safetensors").read_bytes()
    (tmp_path / "alone" / "w.safetensors").write_bytes(weights)
    alone = run_script("inference.py", "alone/w.safetensors", *args, tmp_path=tmp_path)
    assert alone.stdout == from_npz.stdout


def test_a_corrupt_model_file_is_an_error_never_another_sample(trained):
    tmp_path, _ = trained
    for name in ("model.pkl", "model.safetensors"):
        data = bytearray((tmp_path / "run" / name).read_bytes())
        data[len(data) // 2] ^= 0x01  # one bit, in the middle of the weights
        (tmp_path / f"flipped-{name}").write_bytes(bytes(data))
        args = (f"flipped-{name}", "--tokeniser", "run/tokeniser.json", "--max-tokens", "5")
        result = run_script("inference.py", *args, tmp_path=tmp_path, check=False)
        assert result.returncode != 0 and f"flipped-{name}" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_checkpoint_asking_for_a_huge_model_is_refused_before_building_it(trained):
    tmp_path, _ = trained
    weights, info, _ = load_weights(tmp_path / "run" / "model.safetensors")
    info["run"]["config"]["embedding_dim"] = 2**20
    save_weights(tmp_path / "crafted.safetensors", weights, info)
    result = run_script("inference.py", "crafted.safetensors", tmp_path=tmp_path, check=False)
    assert result.returncode != 0, result.stderr
    assert "crafted.safetensors does not hold a usable GPT" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_tokeniser_that_does_not_belong_to_the_model_is_refused(trained):
    tmp_path, _ = trained
    CharTokeniser().train("abcdefgh").save(tmp_path / "chars.json")
    for model in ("run/model.pkl", "run"):
        result = run_script(
            "inference.py", model, "--tokeniser", "chars.json", tmp_path=tmp_path, check=False
        )
        assert result.returncode != 0 and "does not belong" in result.stderr
        assert "chars.json" in result.stderr and "vocab_size 300" in result.stderr


BAD_SAMPLING_ARGUMENTS = [
    ("--temperature", "nan"), ("--temperature", "-1"), ("--temperature", "inf"),
    ("--top-k", "0"), ("--top-k", "-3"), ("--max-tokens", "-1"), ("--num-samples", "0"),
    ("--seed", "-3"), ("--device", "tpu"),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), BAD_SAMPLING_ARGUMENTS)
def test_every_bad_sampling_argument_gets_a_usage_error(flag, value, capsys):
    from tricycle.apps import sample

    with pytest.raises(SystemExit) as exit_info:
        sample.parse_args(["run", flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("tricycle-sample: error: ") and flag in err and err.count("\n") == 1


def test_help_states_the_pickle_risk(tmp_path):
    result = run_script("inference.py", "--help", tmp_path=tmp_path)
    assert "RUNS CODE" in " ".join(result.stdout.split())


# ------------------------------------------------------------------ stopping runs


def start_training(tmp_path: Path, *args) -> subprocess.Popen:
    command = [sys.executable, str(ROOT / "train_smol_gpt.py"), "--config", "debug"]
    command += ["--dataset", "code.txt", "--no-progress", "--sample-tokens", "0", *args]
    return subprocess.Popen(command, cwd=tmp_path, env=script_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def metrics_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for(condition, process: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_saves_a_checkpoint_and_says_how_to_resume(trained, signum):
    """Before the first evaluation (no checkpoint yet), Ctrl-C, or the SIGTERM of ``kill``
    or a scheduler, stops at the end of the step with a checkpoint, says where it is and how
    to resume, and prints no traceback."""
    tmp_path, _ = trained
    name = f"stopped-{signum.name}"
    out = tmp_path / name
    process = start_training(tmp_path, "--steps", "5000", "--out-dir", name)
    wait_for(lambda: metrics_lines(out / "metrics.jsonl") >= 3, process)
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "Traceback" not in err and f"--out-dir {name} --resume --dataset code.txt" in err
    whence = "" if signum == signal.SIGINT else " (SIGTERM)"
    assert f"interrupted{whence}: stopping after this step, with a checkpoint" in err
    step = load_state(out / "checkpoint.npz")["step"]
    assert step >= 3 and step == metrics_lines(out / "metrics.jsonl")
    resume = ("--out-dir", name, "--resume", "--dataset", "code.txt", "--steps", step + 2)
    resumed = run_script("train_smol_gpt.py", *resume, "--no-progress", tmp_path=tmp_path)
    assert f"steps {step}..{step + 2}" in resumed.stderr


def test_runs_killed_at_random_moments_resume_exactly(trained):
    """kill -9 at random points of a run that checkpoints every step, ten times, resuming
    each time: the finished run's metrics equal those of a run never killed."""
    tmp_path, _ = trained
    steps = ["--steps", "40", "--eval-interval", "1", "--eval-steps", "1"]
    run_script("train_smol_gpt.py", *steps, "--out-dir", "calm", "--config", "debug",
               "--dataset", "code.txt", "--no-progress",
               "--sample-tokens", 0, tmp_path=tmp_path)  # fmt: skip
    out, rng = tmp_path / "killed", random.Random(0)
    for kill in range(10):
        resume = ["--resume"] if kill else []
        process = start_training(tmp_path, *steps, "--out-dir", "killed", *resume)
        done = metrics_lines(out / "metrics.jsonl") if kill else 0
        wait_for(lambda: (out / "checkpoint.npz").exists()  # noqa: B023
                 and metrics_lines(out / "metrics.jsonl") > done, process)  # fmt: skip
        time.sleep(rng.uniform(0, 0.05))
        process.kill()
        process.wait()
        if kill:
            assert "took over the lock" in process.stderr.read()
    finished = run_script("train_smol_gpt.py", *steps, "--out-dir", "killed", "--resume",
                          "--dataset", "code.txt",
                          "--no-progress", "--sample-tokens", 0, tmp_path=tmp_path)  # fmt: skip
    assert "took over the lock" in finished.stderr

    def losses(name):
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        return [(r["step"], r["loss"], r["val_loss"]) for r in map(json.loads, lines)]

    assert losses("killed") == losses("calm")
    assert not list(out.glob(".*.tmp")) and not (out / RunDirectory.PREVIOUS).exists()
