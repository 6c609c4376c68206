"""tricycle-train on token shards, with the hooks of a Trainer (HellaSwag, samples) and the
Llama-style model: runs resume at the same data position, refuse another shard directory,
and what they write samples and evaluates as the GPT's runs do."""

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from tests.test_distributed import needs_mpi, train_cli
from tests.test_hellaswag import write_hellaswag_file
from tests.test_inference import ROOT, script_env
from tests.test_train import one_blas_thread, train_in_process  # noqa: F401 - a fixture
from tricycle.apps import evaluate, runs, sample, training
from tricycle.apps.checkpoint import load_state
from tricycle.configs import DebugConfig
from tricycle.dataset import CausalLMDataset
from tricycle.models import Llama
from tricycle.random import manual_seed
from tricycle.training import gpt_trainer
from tricycle_datasets.prepare import prepare
from tricycle_datasets.shards import load_tokeniser

JSON_PACKAGE = Path(sysconfig.get_paths()["stdlib"]) / "json"


def prepare_shards(out_dir: Path, *names: str) -> Path:
    """A shard directory of some of the json package's sources (~18 KB): a 300-id BPE (the
    debug config's vocabulary), one file in three for validation."""
    inputs = [str(JSON_PACKAGE / name) for name in names]
    prepare(inputs, out_dir, vocab_size=300, valid_fraction=0.34, progress=False)
    return out_dir


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    return prepare_shards(tmp_path_factory.mktemp("shards"), "scanner.py", "tool.py", "decoder.py")


def run(shards, out_dir, *extra):
    args = ["--config", "debug", "--dataset", str(shards), "--out-dir", str(out_dir)]
    return train_in_process([*args, "--no-progress", "--sample-tokens", "0", *extra])


def records(out_dir) -> list[dict]:
    lines = (Path(out_dir) / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def losses(out_dir) -> list[tuple]:
    return [(r["step"], r["loss"], r["val_loss"]) for r in records(out_dir)]


@pytest.mark.parametrize("order", ["random", "sequential"])
def test_a_resumed_run_continues_at_the_same_data_position(shards, tmp_path, order):
    common = ["--steps", "6", "--eval-interval", "3", "--eval-steps", "2", "--data-order", order]
    run(shards, tmp_path / "whole", *common)
    run(shards, tmp_path / "parts", *common, "--stop-after", "3")
    state = load_state(tmp_path / "parts" / "checkpoint.npz")
    position = state["random"]["train_data"]["state"]
    assert position["order"] == order
    if order == "sequential":  # 3 steps of 8 windows of 32 tokens
        assert position["position"] == 3 * 8 * 32
    run(shards, tmp_path / "parts", *common[:-2], "--resume", "--dataset", str(shards))
    assert losses(tmp_path / "parts") == losses(tmp_path / "whole")
    assert sum(v is not None for _, _, v in losses(tmp_path / "whole")) == 2
    # the run keeps the shards' tokeniser, and its identity
    run_dir = tmp_path / "whole"
    assert (run_dir / "tokeniser.json").read_text() == (shards / "tokeniser.json").read_text()
    identity = json.loads((run_dir / "config.json").read_text())["data"]
    assert identity["train_tokens"] > 0 and identity["inputs"] and identity["tokeniser_sha256"]


def test_resume_refuses_other_shards_and_other_orders(shards, tmp_path):
    run(shards, tmp_path / "run", "--steps", "6", "--stop-after", "2")
    resume = ["--config", "debug", "--out-dir", str(tmp_path / "run"), "--no-progress"]
    with pytest.raises(SystemExit, match="name it again with --dataset"):
        train_in_process([*resume, "--resume"])
    other = prepare_shards(tmp_path / "other", "scanner.py", "tool.py", "encoder.py")
    with pytest.raises(SystemExit) as refused:
        train_in_process([*resume, "--resume", "--dataset", str(other)])
    message = str(refused.value)
    assert "are not those the run trained on" in message
    assert "inputs" in message and "train_tokens" in message and "the run's:" in message
    with pytest.raises(SystemExit, match="--data-order sequential \\(the run's: random\\)"):
        train_in_process([*resume, "--resume", "--dataset", str(shards), "--data-order",
                          "sequential"])  # fmt: skip
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 2  # untouched


def test_a_changed_tokeniser_in_the_shards_is_refused(shards, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in shards.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    tokeniser = copy / "tokeniser.json"
    tokeniser.write_text(tokeniser.read_text().replace('"vocab_size": 300', '"vocab_size": 299'))
    with pytest.raises(SystemExit, match="tokeniser.json changed since the shards were written"):
        run(copy, tmp_path / "run", "--steps", "2")


def test_the_vocabulary_must_hold_the_tokeniser(shards, tmp_path):
    n_ids = load_tokeniser(shards).n_tokens  # the ids that exist (the corpus is small)
    with pytest.raises(SystemExit) as refused:
        run(shards, tmp_path / "run", "--vocab-size", str(n_ids - 1))
    message = str(refused.value)
    assert f"its tokeniser has {n_ids} ids, more than --vocab-size {n_ids - 1}" in message
    assert "leave --vocab-size out" in message
    summary = run(shards, tmp_path / "bigger", "--vocab-size", "320", "--steps", "2")
    assert summary["steps"] == 2  # a larger (padded) vocabulary is fine


def test_without_a_vocab_size_the_shards_decide_it(shards, tmp_path, capsys):
    """The model takes the tokeniser's ids rounded up to a multiple of 64, whatever the
    config's vocab_size (the debug config's 300 here; 1024 for cpu, 50304 for gpt2)."""
    n_ids = load_tokeniser(shards).n_tokens
    run(shards, tmp_path / "run", "--steps", "2")
    config = json.loads((tmp_path / "run" / "config.json").read_text())["config"]
    assert config["vocab_size"] == -(-n_ids // 64) * 64
    assert f"vocabulary: {config['vocab_size']:,} ids, the data's {n_ids:,}" in (
        capsys.readouterr().err
    )


def test_reading_in_order_needs_shards(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("some text to learn from\n" * 400)
    with pytest.raises(SystemExit, match="--data-order sequential: reading in order needs"):
        run(text, tmp_path / "run", "--data-order", "sequential")


# ------------------------------------------------------------------ hooks


def test_hellaswag_at_each_evaluation(shards, tmp_path, capsys):
    """The scores recorded at each evaluation are those the evaluate command gives the
    weights of that step: the last weights of the run (step 4), and of the same run stopped
    after step 2 (a run is deterministic: its step 2 is the whole run's)."""
    hellaswag = write_hellaswag_file(tmp_path / "hellaswag.jsonl")
    common = ["--steps", "4", "--eval-interval", "2", "--eval-steps", "1",
              "--eval-hellaswag", str(hellaswag), "--hellaswag-limit", "3"]  # fmt: skip
    run(shards, tmp_path / "run", *common)
    run(shards, tmp_path / "half", *common, "--stop-after", "2")
    assert "hellaswag_acc_norm" in capsys.readouterr().err  # the evaluation's log line
    scored = [r for r in records(tmp_path / "run") if "hellaswag_acc" in r]
    assert [r["step"] for r in scored] == [2, 4]
    assert losses(tmp_path / "half") == losses(tmp_path / "run")[:2]
    for record, run_dir in zip(scored, [tmp_path / "half", tmp_path / "run"]):
        result = evaluate.main([str(run_dir), "--weights", "last", "--hellaswag", str(hellaswag),
                                "--limit", "3"])  # fmt: skip
        assert result["n"] == 3
        assert record["hellaswag_acc"] == result["correct"] / 3 == result["acc"]
        assert record["hellaswag_acc_norm"] == result["correct_norm"] / 3 == result["acc_norm"]
    with pytest.raises(SystemExit, match="--eval-hellaswag .*missing.jsonl"):
        run(shards, tmp_path / "b", "--eval-hellaswag", str(tmp_path / "missing.jsonl"))


def test_samples_every_n_steps(shards, tmp_path, capsys):
    run(shards, tmp_path / "run", "--steps", "5", "--sample-interval", "2", "--sample-tokens",
        "6", "--sample-prompt", "def ")  # fmt: skip
    sampled = [r for r in records(tmp_path / "run") if "sample" in r]
    assert [r["step"] for r in sampled] == [2, 4]
    assert all(r["sample"].startswith("def ") and len(r["sample"]) > 4 for r in sampled)
    err = capsys.readouterr().err
    assert "step 2 sample:\ndef " in err and "step 4 sample:" in err
    with pytest.raises(SystemExit) as usage:  # samples of no tokens
        train_in_process(["--sample-interval", "2", "--sample-tokens", "0"])
    assert usage.value.code == 2


def test_hooks_leave_the_run_as_it_was(tmp_path):
    """A Trainer's hooks run at their steps on the trained model and change nothing of the
    run: the losses and the final weights are those of a run without them."""
    calls = []

    def spy(trainer):
        calls.append(trainer.step)
        return {"spy": float(trainer.step)}

    results = []
    for hooks in ([], [training.Hook(spy), training.Hook(spy, interval=3)]):
        tokens = np.random.default_rng(1).integers(0, 300, size=3000)
        manual_seed(0)
        config = DebugConfig(dropout=0.1, steps=6, warmup_steps=2, eval_interval=4, eval_steps=1)
        trainer = gpt_trainer(config, tokens[:2500], tokens[2500:], hooks=hooks)
        seen = []
        trainer.fit(6, on_record=seen.append)
        results.append((seen, trainer.model.state_dict()))
    assert calls == [3, 4, 6, 6]  # every 3 steps, and at each evaluation (4, the last)
    (plain, weights), (hooked, hooked_weights) = results
    assert [r["loss"] for r in hooked] == [r["loss"] for r in plain]
    assert [r.get("spy") for r in hooked] == [None, None, 3.0, 4.0, None, 6.0]
    for name, value in weights.items():
        np.testing.assert_array_equal(hooked_weights[name], value, err_msg=name)
    with pytest.raises(ValueError, match="interval must be None or an int >= 1"):
        training.Hook(spy, interval=0)
    with pytest.raises(TypeError, match="hooks must be Hook objects"):
        training.Trainer(trainer.model, trainer.optimiser, trainer.train_data, hooks=[spy])


def test_gpt_trainer_takes_tokens_or_a_loader():
    """A loader is called with this rank's shape: the same batches as the tokens give."""
    config = DebugConfig(batch_size=4, context_window=8)
    tokens = np.random.default_rng(1).integers(0, 300, size=500)
    from_tokens = gpt_trainer(config, tokens, seed=5).train_data

    def loader(**shape):
        return CausalLMDataset(tokens, 300, seed=5, **shape)

    from_loader = gpt_trainer(config, loader, seed=5).train_data
    for _ in range(3):
        (x, y), (u, v) = next(from_tokens), next(from_loader)
        np.testing.assert_array_equal(x, u)
        np.testing.assert_array_equal(y, v)


# ------------------------------------------------------------------ the Llama-style model


def test_llama_trains_resumes_samples_and_evaluates(shards, tmp_path, capsys):
    llama = ["--arch", "llama", "--n-kv-heads", "1", "--steps", "6", "--eval-interval", "3",
             "--eval-steps", "1", "--dropout", "0.1"]  # fmt: skip
    run(shards, tmp_path / "whole", *llama)
    run(shards, tmp_path / "parts", *llama, "--stop-after", "4")
    run(shards, tmp_path / "parts", "--resume", "--dataset", str(shards))
    assert losses(tmp_path / "parts") == losses(tmp_path / "whole")
    state = load_state(tmp_path / "parts" / "checkpoint.npz")
    assert state["run"]["config"]["arch"] == "llama" and state["run"]["config"]["n_kv_heads"] == 1
    with pytest.raises(SystemExit, match="--n-kv-heads 2 \\(the run's: 1\\)"):
        run(shards, tmp_path / "parts", "--resume", "--n-kv-heads", "2")

    # samples: from the run directory (safe) and from the pickle, the same text
    model, _ = runs.load_model(tmp_path / "parts")
    assert isinstance(model, Llama) and model.config.kv_heads == 1
    capsys.readouterr()
    texts = []
    for source in ("", "model.pkl"):
        sample.main([str(tmp_path / "parts" / source), "--prompt", "def ", "--max-tokens", "12",
                     "--seed", "0"])  # fmt: skip
        texts.append(capsys.readouterr().out)
    assert texts[0] == texts[1] and texts[0].startswith("def ") and len(texts[0]) > 5

    # HellaSwag on the run directory, in process and as `python -m tricycle.evaluate`
    hellaswag = write_hellaswag_file(tmp_path / "hellaswag.jsonl")
    result = evaluate.main([str(tmp_path / "parts"), "--hellaswag", str(hellaswag)])
    assert result["n"] == 4
    command = [sys.executable, "-m", "tricycle.evaluate", str(tmp_path / "parts"),
               "--hellaswag", str(hellaswag), "--limit", "2"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=script_env(tmp_path),
                          cwd=ROOT, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hellaswag"]["n"] == 2


# ------------------------------------------------------------------ two processes


@needs_mpi
def test_two_ranks_train_from_shards_as_one_process(shards, tmp_path):
    """The same losses, and HellaSwag's counts summed over the ranks' halves of the examples."""
    hellaswag = write_hellaswag_file(tmp_path / "hellaswag.jsonl")
    common = ["--config", "debug", "--dataset", str(shards), "--steps", "4", "--eval-interval",
              "2", "--eval-steps", "2", "--data-order", "sequential",
              "--eval-hellaswag", str(hellaswag)]  # fmt: skip
    _, single = train_cli(1, tmp_path / "one", *common, tmp_path=tmp_path)
    log, double = train_cli(2, tmp_path / "two", *common, tmp_path=tmp_path)
    assert "world size 2" in log
    assert [r["step"] for r in double] == [1, 2, 3, 4]
    for key in ("loss", "val_loss", "hellaswag_acc", "hellaswag_acc_norm"):
        got = [r[key] for r in double if r.get(key) is not None]
        want = [r[key] for r in single if r.get(key) is not None]
        assert len(got) == len(want) > 0
        np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=key)
