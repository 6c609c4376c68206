"""Training, through the CLI and the library: the loss falls, resuming replays exactly,
divergence stops cleanly, runs survive mistakes (changed settings, another run's directory,
a torn log, a full disk) and every bad argument gets a usage error."""

import dataclasses
import json
import math
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

try:  # installed with scikit-learn (a test dependency); optional all the same
    from threadpoolctl import threadpool_limits
except ImportError:
    threadpool_limits = None

from tricycle.apps import saving, training
from tricycle.apps import train as train_cli
from tricycle.apps.checkpoint import load_state, save_state
from tricycle.apps.files import DirectoryLock
from tricycle.apps.interrupts import stop_on_interrupt, stopping_signals
from tricycle.apps.runs import RunDirectory
from tricycle.configs import DebugConfig, GPTConfig
from tricycle.dataset import CausalLMDataset
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.random import manual_seed
from tricycle.scheduler import CosineSchedule
from tricycle.training import gpt_trainer


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


def train_in_process(argv) -> dict:
    """The CLI's training without starting the CPU thread pool (main() starts it), so the
    test process keeps its thread settings."""
    return train_cli.train(train_cli.parse_args(argv))


def run(corpus, out_dir, *extra):
    args = ["--config", "debug", "--dataset", str(corpus), "--out-dir", str(out_dir)]
    return train_in_process([*args, "--no-progress", "--sample-tokens", "0", *extra])


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
    final_whole = RunDirectory(tmp_path / "whole").load_state()["model"]
    final_parts = RunDirectory(tmp_path / "parts").load_state()["model"]
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
    checkpoint = RunDirectory(tmp_path / "run").load_state()
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


def test_every_config_field_has_a_flag():
    fields = {field.name for field in dataclasses.fields(GPTConfig)}
    assert fields == {field for _, field, _ in train_cli.CONFIG_FLAGS.values()}
    args = train_cli.parse_args(["--arch", "llama", "--n-kv-heads", "2", "--rope-theta", "500",
                                 "--ffn-multiple-of", "32"])  # fmt: skip
    config = train_cli.build_config(args)
    assert (config.arch, config.n_kv_heads, config.rope_theta, config.ffn_multiple_of) == (
        "llama", 2, 500.0, 32,
    )  # fmt: skip


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_cli.parse_args(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for option in ("--resume", "--dataset", "--eval-steps", "--device", "--grad-clip"):
        assert option in text


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


# ------------------------------------------------------------------ resuming


def test_resume_with_the_random_eval_protocol_is_exact(corpus, tmp_path):
    common = ["--steps", "12", "--eval-interval", "3", "--eval-protocol", "random"]
    run(corpus, tmp_path / "whole", *common)
    run(corpus, tmp_path / "parts", *common, "--stop-after", "5")
    run(corpus, tmp_path / "parts", *common, "--resume")
    whole = (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines()
    parts = (tmp_path / "parts" / "metrics.jsonl").read_text().splitlines()
    key = lambda line: (json.loads(line)["loss"], json.loads(line)["val_loss"])  # noqa: E731
    assert [key(line) for line in parts] == [key(line) for line in whole]
    assert sum(key(line)[1] is not None for line in whole) == 4  # steps 3, 6, 9, 12


def test_resume_refuses_changed_settings_listing_them(corpus, tmp_path, capsys):
    run(corpus, tmp_path / "run", "--steps", "10", "--stop-after", "3")
    changed = ["--lr", "0.01", "--batch-size", "4", "--context-window", "16"]
    changed += ["--vocab-size", "280", "--seed", "7", "--config", "cpu"]
    with pytest.raises(SystemExit) as refused:
        run(corpus, tmp_path / "run", "--resume", *changed)
    message = str(refused.value)
    for flag in ("--lr 0.01 (the run's: 0.003)", "--batch-size 4", "--context-window 16",
                 "--vocab-size 280", "--seed 7", "--config cpu (the run's: debug)"):  # fmt: skip
        assert flag in message, flag
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 3  # untouched
    # how long and how often may change: applied and said
    summary = run(corpus, tmp_path / "run", "--resume", "--steps", "12", "--eval-interval", "4")
    assert summary["steps"] == 12
    err = capsys.readouterr().err
    assert "applying --steps 12 (the run's: 10)" in err and "--eval-interval 4" in err


def test_resume_refuses_to_go_back_and_says_when_a_run_is_complete(corpus, tmp_path, capsys):
    run(corpus, tmp_path / "run", "--steps", "6", "--eval-interval", "3")
    with pytest.raises(SystemExit, match="--steps 3 is before the run's step 6"):
        run(corpus, tmp_path / "run", "--resume", "--steps", "3")
    assert run(corpus, tmp_path / "run", "--resume")["steps"] == 6
    assert "is complete (6 steps)" in capsys.readouterr().err
    assert len(losses(tmp_path / "run")) == 6


@pytest.mark.filterwarnings("ignore:BPETokeniser.train.*only enough pairs:UserWarning")
def test_resume_reads_only_the_data_the_user_names(corpus, tmp_path):
    """A checkpoint that names another file (a crafted one, or a moved run) never makes the
    run read it: the file must be named with --dataset, and its data match the run's hash."""
    run(corpus, tmp_path / "run", "--steps", "6", "--stop-after", "2")
    path = tmp_path / "run" / "checkpoint.npz"
    secret = tmp_path / "secret.txt"
    secret.write_text("password = hunter2\n" * 500)
    state = load_state(path)
    state["run"]["settings"]["dataset"] = str(secret)
    save_state(path, state)
    resume = ["--config", "debug", "--out-dir", str(tmp_path / "run"), "--no-progress"]
    with pytest.raises(SystemExit, match="name it again with --dataset"):
        train_in_process([*resume, "--resume"])
    with pytest.raises(SystemExit, match="not those the run trained on"):
        train_in_process([*resume, "--resume", "--dataset", str(secret)])
    other = write_corpus(tmp_path / "other.txt", n_lines=1400)
    with pytest.raises(SystemExit, match="not those the run trained on"):
        train_in_process([*resume, "--resume", "--dataset", str(other)])
    assert train_in_process([*resume, "--resume", "--dataset", str(corpus)])["steps"] == 6


def test_a_torn_metrics_line_is_repaired_on_resume(corpus, tmp_path, capsys):
    run(corpus, tmp_path / "run", "--steps", "8", "--stop-after", "4")
    with open(tmp_path / "run" / "metrics.jsonl", "a") as f:
        f.write('{"step": 5, "loss": 3.1, "val_lo')  # the disk filled mid-line
    run(corpus, tmp_path / "run", "--resume")
    assert len(losses(tmp_path / "run")) == 8
    assert "dropped a torn line" in capsys.readouterr().err


def test_temporaries_of_a_killed_run_are_removed(corpus, tmp_path, capsys):
    run(corpus, tmp_path / "run", "--steps", "6", "--stop-after", "2")
    orphan = tmp_path / "run" / ".checkpoint.npz.k1ll3d.tmp"
    orphan.write_bytes(b"half a checkpoint")
    run(corpus, tmp_path / "run", "--resume")
    assert not orphan.exists()
    assert "removed 1 unfinished temporary file" in capsys.readouterr().err


# ------------------------------------------------------------------ run directories


def test_another_runs_files_are_never_replaced_unasked(corpus, tmp_path):
    run(corpus, tmp_path / "run", "--steps", "4", "--eval-interval", "2")
    before = (tmp_path / "run" / "checkpoint.npz").read_bytes()
    other = write_corpus(tmp_path / "other.txt", n_lines=1400)
    with pytest.raises(SystemExit, match="already holds a run.*--resume.*--overwrite"):
        run(other, tmp_path / "run", "--steps", "4")
    assert (tmp_path / "run" / "checkpoint.npz").read_bytes() == before
    # --overwrite with a mistake found while loading (a dataset that is not there, weights
    # that are not there): the old run is still whole
    files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    for mistake in (["--dataset", str(tmp_path / "nowhere.txt")],
                    ["--init-from", str(tmp_path / "no-model")]):  # fmt: skip
        with pytest.raises(SystemExit):
            run(other, tmp_path / "run", "--steps", "3", "--overwrite", *mistake)
        assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == files
    run(other, tmp_path / "run", "--steps", "3", "--overwrite")
    assert len(losses(tmp_path / "run")) == 3
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 3


def test_an_overwriting_run_that_stops_before_a_checkpoint_leaves_the_old_run(
    corpus, tmp_path, monkeypatch
):
    """--overwrite sets the old run's files aside until the new run has a checkpoint: a new
    run that fails at its first step (out of memory), or is killed first, leaves them."""
    run(corpus, tmp_path / "run", "--steps", "4", "--eval-interval", "2")
    files = {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()}
    other = write_corpus(tmp_path / "other.txt", n_lines=1400)

    def out_of_memory(trainer):
        raise MemoryError("a batch too large")

    with monkeypatch.context() as patch:
        patch.setattr(training.Trainer, "train_step", out_of_memory)
        with pytest.raises(MemoryError):
            run(other, tmp_path / "run", "--steps", "3", "--overwrite")
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == files
    # killed between setting them aside and its first checkpoint: the next start puts them back
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.set_aside(list(files))
    (tmp_path / "run" / RunDirectory.CONFIG).write_text("{}")  # the killed run's
    assert run_dir.open() == [f"{run_dir.path}: put the replaced run's files back (the new "
                              "run stopped before a checkpoint)"]  # fmt: skip
    run_dir.close()
    assert {p.name: p.read_bytes() for p in (tmp_path / "run").iterdir()} == files
    # a new run that writes its checkpoint: the old files go
    run(other, tmp_path / "run", "--steps", "3", "--overwrite")
    assert not (tmp_path / "run" / RunDirectory.REPLACED).exists()
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 3


def test_a_directory_in_use_is_refused(corpus, tmp_path):
    with DirectoryLock(tmp_path / "run"):
        with pytest.raises(SystemExit, match="in use by another run"):
            run(corpus, tmp_path / "run", "--steps", "2")
    assert run(corpus, tmp_path / "run", "--steps", "2")["steps"] == 2  # free again


# ------------------------------------------------------------------ divergence and disks


def test_no_checkpoint_holding_a_non_finite_value_is_written(corpus, tmp_path, monkeypatch):
    real_step = training.Trainer.train_step

    def overflowing_moments(trainer):
        if trainer.step == 3:  # Adam's second moment overflows; loss and weights stay finite
            name = next(iter(trainer.optimiser.state))
            trainer.optimiser.state[name]["exp_avg_sq"][...] = np.inf
        return real_step(trainer)

    monkeypatch.setattr(training.Trainer, "train_step", overflowing_moments)
    with pytest.raises(SystemExit, match="exp_avg_sq of .* holds inf.*step 2\\) is kept"):
        run(corpus, tmp_path / "run", "--steps", "6", "--eval-interval", "2")
    checkpoint = load_state(tmp_path / "run" / "checkpoint.npz")
    assert checkpoint["step"] == 2


def test_a_huge_learning_rate_never_leaves_a_non_finite_checkpoint(corpus, tmp_path):
    try:
        run(corpus, tmp_path / "run", "--steps", "30", "--eval-interval", "3", "--lr", "30",
            "--grad-clip", "0")  # fmt: skip
    except SystemExit as error:
        assert "diverged" in str(error)
    checkpoint = RunDirectory(tmp_path / "run").load_state()
    arrays = [*checkpoint["model"].values(), *checkpoint["optimiser"].values()]
    assert all(np.isfinite(a).all() for a in arrays)


def test_a_full_disk_names_the_directory_and_keeps_the_last_checkpoint(corpus, tmp_path,
                                                                      monkeypatch):  # fmt: skip
    real_save = saving.save_state
    calls = []

    def full_after_one(path, state):
        calls.append(path)
        if [p.name for p in calls].count("checkpoint.npz") > 1:
            raise OSError(28, "No space left on device")
        real_save(path, state)

    monkeypatch.setattr(saving, "save_state", full_after_one)
    with pytest.raises(SystemExit) as stopped:
        run(corpus, tmp_path / "run", "--steps", "6", "--eval-interval", "2")
    message = str(stopped.value)
    assert f"in {tmp_path / 'run'}: No space left on device" in message
    assert "step 2) is kept" in message
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 2


# ------------------------------------------------------------------ bad arguments

BAD_ARGUMENTS = [
    ("--steps", "-5"), ("--steps", "0"), ("--eval-interval", "0"), ("--eval-steps", "0"),
    ("--gradient-accumulation-steps", "0"), ("--batch-size", "0"), ("--context-window", "0"),
    ("--vocab-size", "abc"), ("--lr", "nan"), ("--lr", "-1"), ("--lr", "inf"),
    ("--min-lr", "-0.1"), ("--weight-decay", "-1"), ("--grad-clip", "nan"),
    ("--dropout", "1"), ("--dropout", "-0.1"), ("--warmup", "-1"), ("--seed", "-1"),
    ("--seed", "4294967296"), ("--max-seconds", "0"), ("--stop-after", "0"),
    ("--log-interval", "0"), ("--threads", "0"), ("--sample-tokens", "-1"),
    ("--max-bytes", "0"), ("--config", "huge"), ("--precision", "fp8"), ("--device", "tpu"),
    ("--arch", "gpt3"), ("--n-kv-heads", "0"), ("--rope-theta", "-1"),
    ("--ffn-multiple-of", "0"), ("--data-order", "shuffled"), ("--sample-interval", "0"),
    ("--hellaswag-limit", "0"),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "value"), BAD_ARGUMENTS)
def test_every_bad_argument_gets_a_usage_error(flag, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_cli.parse_args([flag, value])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("tricycle-train: error: ") and flag in err and value in err
    assert err.count("\n") == 1  # one line, not the usage of every flag above it


@pytest.mark.parametrize("variable", ["PMI_RANK", "OMPI_COMM_WORLD_RANK"])
def test_under_mpiexec_rank_0_alone_says_a_usage_error(variable, monkeypatch, capsys):
    """Every rank parses the same flags: one line from rank 0, the others end alike."""
    for rank, lines in ((1, 0), (0, 1)):
        monkeypatch.setenv(variable, str(rank))
        with pytest.raises(SystemExit) as exit_info:
            train_cli.parse_args(["--steps", "abc"])
        assert exit_info.value.code == 2 and capsys.readouterr().err.count("\n") == lines


def test_contradictory_or_empty_run_directory_flags_are_usage_errors(tmp_path, capsys):
    (tmp_path / "a-file").write_text("not a run")
    cases = [(["--resume", "--overwrite"], "--resume continues the run"),
             (["--out-dir="], "argument --out-dir: an empty path"),
             (["--out-dir", str(tmp_path / "a-file")], "a file, not a directory")]  # fmt: skip
    for argv, complaint in cases:
        with pytest.raises(SystemExit) as exit_info:
            train_cli.parse_args(argv)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and complaint in err and err.count("\n") == 1


def test_values_the_parser_cannot_judge_alone_get_clear_errors(corpus, tmp_path):
    with pytest.raises(SystemExit, match="--vocab-size 100: a BPE vocabulary needs >= 256"):
        run(corpus, tmp_path / "a", "--vocab-size", "100")
    with pytest.raises(SystemExit, match="precision bf16 needs a GPU"):
        run(corpus, tmp_path / "b", "--precision", "bf16")
    with pytest.raises(SystemExit, match="missing.txt'?: no such file or directory"):
        run(tmp_path / "missing.txt", tmp_path / "c")
    (tmp_path / "texts").mkdir()
    with pytest.raises(SystemExit, match="a directory without index.json"):
        run(tmp_path / "texts", tmp_path / "d")


# ------------------------------------------------------------------ the library


def _tiny_trainer(seed: int = 0, **options) -> training.Trainer:
    manual_seed(seed)
    config = DebugConfig(dropout=0.1, steps=10, eval_interval=4, eval_steps=1, **options)
    tokens = np.random.default_rng(1).integers(0, config.vocab_size, size=3000)
    return gpt_trainer(config, tokens[:2500], tokens[2500:], seed=seed)


def test_a_trainer_saved_and_loaded_continues_exactly(tmp_path):
    whole = _tiny_trainer(eval_protocol="random")
    expected = whole.fit(10)
    first = _tiny_trainer(eval_protocol="random")
    first.fit(10, stop_after=6)
    first.save(tmp_path / "run.npz", metadata={"note": "mine"})
    second = _tiny_trainer(seed=99, eval_protocol="random")  # other initial weights: replaced
    assert second.load(tmp_path / "run.npz") == {"note": "mine"} and second.step == 6
    summary = second.fit(10)
    assert summary["steps"] == 10 and summary["ended"] == "completed"
    assert (summary["loss"], summary["val_loss"]) == (expected["loss"], expected["val_loss"])
    for (name, a), (_, b) in zip(whole.model.named_parameters(), second.model.named_parameters()):
        np.testing.assert_array_equal(a.array, b.array, err_msg=name)


def test_gradients_are_reduced_once_per_step_after_every_micro_batch():
    """The data-parallel reduction finishes once per optimiser step, after the last
    micro-batch's backward, when every gradient exists."""
    trainer = _tiny_trainer(gradient_accumulation_steps=2)
    parallel, calls = trainer.data_parallel, []
    finish = parallel.finish

    def counted_finish():
        finish()
        named = trainer.model.named_parameters()
        calls.append(sum(p.grad is not None for _, p in named))

    parallel.finish = counted_finish
    trainer.fit(3)
    assert calls == [len(trainer.model.parameters())] * 3


def test_a_loaded_checkpoint_that_does_not_fit_is_a_checkpoint_error(tmp_path):
    trainer = _tiny_trainer()
    trainer.save(tmp_path / "run.npz")
    np.random.seed(0)
    bigger = gpt_trainer(DebugConfig(embedding_dim=64), np.arange(3000) % 300)
    with pytest.raises(training.CheckpointError, match="run.npz does not fit this run"):
        bigger.load(tmp_path / "run.npz")


# ------------------------------------------------------------------ model sizes and names


def test_nanogpt_names_and_model_size_flags(corpus, tmp_path):
    nanogpt = ["--n_layer=1", "--n_head=2", "--n_embd=16", "--bias=False", "--beta2=0.9",
               "--max_iters=4", "--learning_rate=2e-3", "--block_size=16", "--lr_decay_iters=6",
               "--eval_iters=1", "--warmup_iters=2", "--expansion-ratio", "2"]  # fmt: skip
    run(corpus, tmp_path / "run", *nanogpt)
    config = load_state(tmp_path / "run" / "checkpoint.npz")["run"]["config"]
    expected = {"n_layers": 1, "n_heads": 2, "embedding_dim": 16, "bias": False, "beta2": 0.9,
                "steps": 4, "max_learning_rate": 2e-3, "context_window": 16, "eval_steps": 1,
                "warmup_steps": 2, "expansion_ratio": 2.0}  # fmt: skip
    assert {k: config[k] for k in expected} == expected
    lrs = [json.loads(line)["lr"] for line in (tmp_path / "run" / "metrics.jsonl").open()]
    schedule = CosineSchedule(2e-3, DebugConfig().min_learning_rate, 6, 2)  # 6 steps, not 4
    assert lrs == [schedule(step) for step in range(4)]
    with pytest.raises(SystemExit, match="--n-layer 2 \\(the run's: 1\\)"):
        run(corpus, tmp_path / "run", "--resume", "--n_layer=2")
    # nanoGPT's init_from: 'resume' continues the run, 'scratch' is a new one
    summary = run(corpus, tmp_path / "run", "--init_from=resume", "--max_iters=5")
    assert summary["steps"] == 5
    assert train_cli.parse_args(["--init_from=scratch"]).init_from is None
    assert not train_cli.parse_args(["--init-from", "scratch"]).resume
    assert train_cli.parse_args(["--init_from=gpt2"]).init_from == "gpt2"


def test_a_settings_file_with_command_line_overrides(corpus, tmp_path):
    settings = tmp_path / "small.json"
    settings.write_text(json.dumps({"n_layer": 1, "n_embd": 16, "n_head": 2, "batch_size": 2,
                                    "bias": False, "max_iters": 3}))  # fmt: skip
    run(corpus, tmp_path / "run", "--config-file", str(settings), "--batch-size", "3")
    config = load_state(tmp_path / "run" / "checkpoint.npz")["run"]["config"]
    assert (config["n_layers"], config["batch_size"], config["bias"], config["steps"]) == (
        1, 3, False, 3,
    )  # fmt: skip


def test_a_settings_file_sets_on_off_flags(tmp_path):
    settings = tmp_path / "switches.json"
    settings.write_text(json.dumps({"zero": True, "overwrite": True, "no_progress": False}))
    args = train_cli.parse_args(["--config-file", str(settings)])
    assert (args.zero, args.overwrite, args.no_progress) == (True, True, False)


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--n_layers_typo=2"], "unrecognized arguments: --n-layers-typo=2"),
        (["--bias=maybe"], "--bias: must be true or false"),
        (["--beta1=1"], "--beta1: must be a number in [0, 1)"),
        (["--activation=tanh"], "--activation: invalid choice"),
        (["--config-file=FILE"], "unknown settings ['--depth']"),
    ],
)
def test_unknown_or_bad_settings_are_usage_errors(argv, complaint, tmp_path, capsys):
    settings = tmp_path / "bad.json"
    settings.write_text(json.dumps({"depth": 3}))
    argv = [a.replace("FILE", str(settings)) for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        train_cli.parse_args(argv)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


def test_cuda_graph_auto_is_on_for_gpus_only():
    # whatever the world and optimiser: the captured step holds the all-reduces and
    # ZeRO-1's all-gathers
    assert train_cli.use_cuda_graph("auto", "gpu")
    assert not train_cli.use_cuda_graph("auto", "cpu")
    assert train_cli.use_cuda_graph("on", "gpu")
    assert not train_cli.use_cuda_graph("off", "gpu")
    with pytest.raises(ValueError, match="--cuda-graph on: a CUDA graph needs a GPU"):
        train_cli.use_cuda_graph("on", "cpu")


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--cuda-graph", "on", "--device", "cpu"],
         "tricycle-train: --cuda-graph on: a CUDA graph needs a GPU (--device gpu); on the CPU "
         "leave it at auto"),
        (["--out-dir", "text.txt/run"], "--out-dir text.txt/run: Not a directory"),
    ],
)  # fmt: skip
def test_cli_mistakes_end_in_one_line(tmp_path, monkeypatch, capsys, argv, said):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "text.txt").write_text(Path(__file__).read_text())  # enough pairs to merge
    common = ["--config", "debug", "--dataset", "text.txt", "--steps", "1", "--no-progress",
              "--sample-tokens", "0", "--out-dir", "run"]  # fmt: skip
    with pytest.raises(SystemExit) as stopped:
        train_cli.main(common + argv)
    assert str(stopped.value) == said
    assert not (tmp_path / "run").exists()  # nothing left behind


def test_a_cuda_graph_trainer_takes_several_processes():
    class World:
        world_size, rank = 2, 0

    model = GPT(DebugConfig())

    class Parallel:
        world = World()

    trainer = training.Trainer(model, AdamW(), iter([]), data_parallel=Parallel(),
                               cuda_graph=True)  # fmt: skip
    assert trainer.cuda_graph and trainer._captured is None  # captured at its first steps


def test_the_cli_says_a_warning_in_one_line(tmp_path, monkeypatch, capsys):
    """A library warning (a text too short for the BPE merges asked for) reaches the user as
    one line naming the program, not as Python's file:line and source line."""
    monkeypatch.setenv("TRICYCLE_CACHE_DIR", str(tmp_path / "cache"))  # a tokeniser learnt now
    text = tmp_path / "tiny.txt"
    text.write_text("abcdefghij")
    argv = ["--config", "debug", "--dataset", str(text), "--out-dir", str(tmp_path / "run"),
            "--no-progress"]  # fmt: skip
    with pytest.raises(SystemExit, match="too few for a context window"):
        train_cli.main(argv)
    err = capsys.readouterr().err
    assert "tricycle-train: warning: BPETokeniser.train: the text has only enough pairs" in err
    assert "UserWarning" not in err and ".py:" not in err


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signal handlers are set in the main thread only")  # fmt: skip
def test_sigterm_stops_after_the_step_except_under_open_mpis_launcher(monkeypatch):
    """SIGTERM asks the loop to stop after its step; under Open MPI's mpiexec, which kills
    the ranks a second or two after passing a Ctrl-C on as SIGTERM, it is left alone (it
    ends every rank at once, ``distributed.init``), and every handler is put back after."""
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with stop_on_interrupt() as interrupt:
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not interrupt.requested and time.monotonic() < deadline:
            time.sleep(0.01)
        assert interrupt.requested
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert list(stopping_signals()) == [signal.SIGINT]
    with stop_on_interrupt():
        assert signal.getsignal(signal.SIGTERM) == before[0]
        assert signal.getsignal(signal.SIGINT) != before[1]
