"""Mixed precision in the GPT and the training step (GPT.forward(precision=...),
tricycle.apps.training.train_step with a policy). numpy on CPU CI; cupy when there is a GPU."""

import json

import numpy as np
import pytest

from tricycle import backend
from tricycle.apps import run_settings, training
from tricycle.apps import train as train_cli
from tricycle.apps.runs import RunDirectory
from tricycle.configs import DebugConfig
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.precision import Precision
from tricycle.random import manual_seed

CONFIG = dict(embedding_dim=32, n_heads=2, n_layers=2, context_window=16, vocab_size=40)


def _train(mode, xp=np, steps=40, **policy_options):
    """Train a tiny GPT to memorise one fixed batch; returns (losses, policy)."""
    manual_seed(0)
    config = DebugConfig(**CONFIG, batch_size=4, grad_clip=1.0)
    model = GPT(config)
    if xp is not np:
        model.to_gpu()
    rng = np.random.default_rng(0)
    batch = xp.asarray(rng.integers(0, config.vocab_size, size=(4, config.context_window + 1)))
    batches = iter(lambda: (batch[:, :-1], batch[:, 1:]), None)
    policy = Precision(mode, **policy_options)
    optimiser = AdamW(learning_rate=3e-3, weight_decay=0.0)
    losses = []
    with policy:
        for step in range(steps):
            result = training.train_step(model, optimiser, batches, policy, max_norm=1.0)
            losses.append(result.settle(step).loss)
    return losses, policy, model


def test_fp16_forward_keeps_float32_master_weights_and_logits():
    manual_seed(0)
    model = GPT(DebugConfig(**CONFIG))
    before = [id(p) for p in model.parameters()]
    ids = np.random.default_rng(0).integers(0, 40, size=(2, 8))
    logits = model(ids, precision=Precision("fp16"))
    assert logits.dtype == np.float32  # cast back for the loss
    assert logits.args[0].dtype == np.float16  # ...from a float16 forward
    CrossEntropy()(ids, logits).backward()
    for name, p in model.named_parameters():
        assert p.dtype == np.float32, name
        assert p.grad is not None and p.grad.dtype == np.float32, name
    # the swap is undone: the parameters are the model's own Tensors again
    assert [id(p) for p in model.parameters()] == before


def test_fp16_gpt_training_converges_like_fp32():
    fp32, _, _ = _train("fp32")
    fp16, policy, _ = _train("fp16")
    assert fp32[-1] < 0.5 * fp32[0]  # it learns (from ~3.7)
    assert fp16[-1] < 0.5 * fp16[0]
    assert fp16[-1] == pytest.approx(fp32[-1], abs=0.1)
    assert max(abs(a - b) for a, b in zip(fp16[:10], fp32[:10])) < 0.05
    assert policy.scaler.skipped_steps == 0


def test_overflow_skips_the_step_and_lowers_the_scale():
    """A loss scale of 2^30 overflows float16 gradients: those steps are skipped (parameters
    unchanged), the scale halves each time until the gradients fit, then training goes on.
    The overflows are the point: numpy's warnings about them are expected, and silenced."""
    with np.errstate(over="ignore", invalid="ignore"):
        losses, policy, model = _train("fp16", steps=30, init_scale=2.0**30)
    skipped = policy.scaler.skipped_steps
    assert 1 <= skipped < 30
    assert policy.scaler.scale == 2.0**30 * 0.5**skipped
    assert losses[-1] < losses[0] - 0.5  # and it still learns afterwards
    for p in model.parameters():
        assert np.isfinite(p.numpy()).all()


def test_precision_flags_on_cpu():
    with pytest.raises(ValueError, match="needs a GPU"):
        training.precision_for("bf16", "cpu")
    with pytest.raises(ValueError, match="needs a GPU"):
        training.precision_for("tf32", "cpu")
    assert training.precision_for("fp16", "cpu").mode == "fp16"


def train_in_process(argv) -> dict:
    """The CLI's training without starting the CPU thread pool (main() starts it)."""
    return train_cli.train(train_cli.parse_args(argv))


def test_train_script_runs_fp16_with_a_time_budget(tmp_path, monkeypatch):
    """An fp16 run stopped by its time budget. A loss scale of 2**19 overflows the first
    steps' gradients (2**17 does not): the skipped steps the run reports are the steps its
    metrics record with a non-finite gradient norm, and its checkpoint's scaler halved the
    scale once for each."""
    init_scale = 2.0**19
    monkeypatch.setattr(
        run_settings, "precision_for", lambda name, device: Precision(name, init_scale=init_scale)
    )
    text = tmp_path / "notes.txt"
    text.write_text("the quick brown fox jumps over the lazy dog. " * 400)
    out = tmp_path / "run"
    with np.errstate(over="ignore", invalid="ignore"):  # the overflowing steps
        summary = train_in_process(
            [*("--config", "debug", "--dataset", str(text), "--steps", "1000")]  # never reached
            + [*("--vocab-size", "280", "--context-window", "16", "--batch-size", "4")]
            + [*("--eval-interval", "5", "--eval-steps", "1", "--precision", "fp16")]
            + [*("--max-seconds", "0.5", "--out-dir", str(out), "--no-progress")]
            + [*("--sample-tokens", "0")]
        )
    assert summary["precision"] == "fp16"
    assert 0 < summary["steps"] < 1000  # stopped by the time budget, with a checkpoint
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(records) == summary["steps"]
    skipped = np.cumsum([r["grad_norm"] is None for r in records])  # (steps,); inf is null
    assert [r["skipped_steps"] for r in records] == skipped.tolist()  # a running count
    assert summary["skipped_steps"] == skipped[-1] >= 1  # the first step overflows
    assert (out / "checkpoint.npz").exists()
    scaler = RunDirectory(out).load_state()["scaler"]
    assert scaler["skipped_steps"] == skipped[-1] and scaler["steps"] == summary["steps"]
    assert scaler["scale"] == init_scale * 0.5 ** skipped[-1]  # no growth in 2000 steps


@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
@pytest.mark.parametrize("mode", ["tf32", "fp16", "bf16"])
def test_gpu_mixed_precision_training_converges_like_fp32(mode):
    if mode == "bf16":
        pytest.importorskip("ml_dtypes")
    cp = backend.cupy()
    fp32, _, _ = _train("fp32", xp=cp)
    other, _, _ = _train(mode, xp=cp)
    print(mode, "final loss", other[-1], "fp32", fp32[-1])
    assert other[-1] < 0.5 * other[0]
    assert other[-1] == pytest.approx(fp32[-1], abs=0.15)
