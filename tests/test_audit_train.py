"""The training CLI as a nanoGPT user drives it: nanoGPT's ``dtype``, mistakes named by the
flags that were typed, the resume hint of every early stop, a divergence found at a
checkpoint naming its step, and --resume of a run that an --overwrite killed before its first
checkpoint set aside."""

import json

import numpy as np
import pytest

from tests.test_train import run, write_corpus
from tricycle.apps import train as train_cli
from tricycle.apps import training
from tricycle.apps.runs import RunDirectory, load_model
from tricycle.apps.train_flags import build_config


@pytest.fixture
def corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))
    return write_corpus(tmp_path / "corpus.txt", n_lines=400)


def test_nanogpt_dtype_names_the_precision(tmp_path):
    """nanoGPT's ``--dtype=bfloat16`` (torch's names) is --precision, on the command line
    and in a settings file."""
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"dtype": "float16"}))
    assert train_cli.parse_args(["--dtype=bfloat16"]).precision == "bf16"
    assert train_cli.parse_args(["--dtype", "float32"]).precision == "fp32"
    assert train_cli.parse_args(["--config-file", str(settings)]).precision == "fp16"


@pytest.mark.parametrize(
    ("settings", "said"),
    [({"n_layer": "two"}, "argument --n-layer: must be an integer >= 1, got 'two'"),
     ({"n_head": None}, "argument --n-head: must be an integer >= 1, got 'null'")],
)  # fmt: skip
def test_a_bad_value_in_a_settings_file_names_the_file(settings, said, tmp_path, capsys):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    with pytest.raises(SystemExit) as exit_info:
        train_cli.parse_args(["--config-file", str(path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert f"tricycle-train: error: --config-file {path}: {said}" in err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--n-embd", "30", "--n-head", "4"], "--n-embd 30 is not divisible by --n-head 4"),
        (["--arch", "llama", "--n-head", "4", "--n-kv-heads", "3"],
         "--n-head 4 must be a multiple of --n-kv-heads 3"),
        (["--min-lr", "0.01", "--lr", "0.001"], "--min-lr 0.01 is above --lr 0.001"),
    ],
)  # fmt: skip
def test_a_config_mistake_names_the_flags_typed(argv, said):
    """A mistake only the config can see is said in the flags' names, and an explicit
    --min-lr above --lr is refused rather than silently replaced."""
    with pytest.raises(SystemExit, match=said):
        build_config(train_cli.parse_args(argv))
    lowered = build_config(train_cli.parse_args(["--lr", "1e-5"]))  # only --lr: min follows
    assert lowered.min_learning_rate == pytest.approx(1e-6)


def test_text_too_short_or_empty_names_the_flags(tmp_path):
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(SystemExit, match=f"--dataset {tmp_path / 'empty.txt'}: .*empty"):
        run(tmp_path / "empty.txt", tmp_path / "a")
    short = write_corpus(tmp_path / "short.txt", n_lines=4)
    pattern = f"--context-window 512: the training text of --dataset {short} has only"
    with pytest.raises(SystemExit, match=pattern):
        run(short, tmp_path / "b", "--context-window", "512")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_divergence_found_at_a_checkpoint_names_its_step(corpus, tmp_path, monkeypatch):
    """Weights that became NaN in an update whose loss was still finite are found when the
    checkpoint after it is checked: the message names that step, the last one is kept."""
    real_step = training.Trainer.train_step

    def poisoned(trainer):
        output = real_step(trainer)
        if trainer.step == 4:  # the update of step 4 went wrong; its loss was computed before
            trainer.model.parameters()[0].array[...] = np.nan
        return output

    monkeypatch.setattr(training.Trainer, "train_step", poisoned)
    with pytest.raises(SystemExit, match="holds inf or NaN values after step 4; .*step 2\\)"):
        run(corpus, tmp_path / "run", "--steps", "6", "--eval-interval", "2")
    assert RunDirectory(tmp_path / "run").load_state()["step"] == 2


def test_early_stops_say_how_to_resume_and_a_run_set_aside(corpus, tmp_path, capsys):
    """--stop-after ends "stopped" and prints the command that resumes the run as it ran, as
    Ctrl-C does; a run whose --overwrite was killed before its first checkpoint (its files
    set aside) is what --resume continues, and files without a checkpoint are not offered
    --resume."""
    out = tmp_path / "run"
    summary = run(corpus, out, "--steps", "4", "--eval-interval", "2", "--stop-after", "2",
                  "--sample-interval", "2", "--sample-tokens", "3")  # fmt: skip
    assert summary["ended"] == "stopped" and summary["steps"] == 2
    err = capsys.readouterr().err
    assert f"saved {out / 'checkpoint.npz'} at step 2 of 4; resume with" in err
    assert (
        f"tricycle-train --out-dir {out} --resume --dataset {corpus} --sample-interval 2 "
        "--sample-tokens 3\n"
    ) in err  # what a resumed run keeps only if named again
    # an --overwrite killed after setting the run aside, before its own first checkpoint
    run_dir = RunDirectory(out)
    run_dir.set_aside(run_dir.existing_files())
    (out / RunDirectory.CONFIG).write_text("{}")  # the killed run's
    summary = run(corpus, out, "--resume")
    assert (summary["steps"], summary["ended"]) == (4, "completed")
    assert "put the replaced run's files back" in capsys.readouterr().err
    # a run that stopped before its first checkpoint: start again, it cannot be resumed
    (out / RunDirectory.CHECKPOINT).unlink()
    with pytest.raises(SystemExit, match="first checkpoint.*--overwrite") as refused:
        run(corpus, out, "--steps", "2")
    assert "--resume" not in str(refused.value)
    with pytest.raises(SystemExit, match="stopped before its first checkpoint: start it again"):
        run(corpus, out, "--resume")
    with pytest.raises(SystemExit, match="no run yet: start one without --resume"):
        run(corpus, tmp_path / "nothing", "--resume")


def test_an_explicit_warmup_longer_than_the_run_is_refused():
    """--warmup beyond --steps would keep the learning rate below --lr to the end: asked for,
    it is refused, not silently shortened; the default warm-up still fits a short --steps."""
    with pytest.raises(SystemExit, match="--warmup 50 is longer than the run \\(--steps 20\\)"):
        build_config(train_cli.parse_args(["--steps", "20", "--warmup", "50"]))
    assert build_config(train_cli.parse_args(["--steps", "2"])).warmup_steps == 2
    full = build_config(train_cli.parse_args(["--steps", "20", "--warmup", "20"]))
    assert full.warmup_steps == 20


def test_metrics_are_strict_json_and_weights_last_of_a_file_is_said(corpus, tmp_path):
    """A diverged value (NaN, inf) is written to metrics.jsonl as null: Python's NaN is no
    JSON, and jq or JavaScript refuse the line. --weights last of a file, which holds one set
    of weights, says so rather than being silently ignored."""
    out = tmp_path / "run"
    run(corpus, out, "--steps", "2", "--eval-interval", "2")
    run_dir = RunDirectory(out)
    run_dir.append_metrics([{"step": 3, "loss": float("nan"), "val_loss": [float("inf"), 1.5]}])
    refuse = {"parse_constant": lambda name: pytest.fail(f"{name} in metrics.jsonl")}
    lines = (out / RunDirectory.METRICS).read_text().splitlines()
    records = [json.loads(line, **refuse) for line in lines]
    assert records[-1] == {"step": 3, "loss": None, "val_loss": [None, 1.5]}
    assert [r["step"] for r in run_dir.metrics()] == [1, 2, 3]
    said = []
    load_model(out / RunDirectory.LAST, weights="last", say=said.append)
    assert said[0] == (
        f"--weights last is for a run directory; {out / RunDirectory.LAST} holds one set of weights"
    )
