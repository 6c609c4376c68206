"""tricycle.Accelerator: the issue's loop on one process and two (under mpiexec), its losses
and weights against the training script's step, accumulation, clipping, metrics, trackers
and save_state/load_state resuming bit-exactly."""

import json
import os
import subprocess
import sys
import types
import warnings
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from tests.accelerate_loop import CONFIG, run, windows
from tests.test_distributed import AS_ROOT, mpiexec, needs_mpi
from tricycle import Accelerator, backend
from tricycle.apps.checkpoint import CheckpointError
from tricycle.apps.step import train_step
from tricycle.configs import DebugConfig
from tricycle.data import DataLoader
from tricycle.dataset import CausalLMDataset
from tricycle.layers import Dense
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW
from tricycle.precision import Precision
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

ROOT = Path(__file__).resolve().parents[1]
gpu = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")


def stream(seed: int = 1):
    """The training script's data: random windows of a token stream, in batches of 4."""
    tokens = np.random.default_rng(0).integers(0, CONFIG["vocab_size"], size=2000)
    return CausalLMDataset(tokens, CONFIG["vocab_size"], 4, CONFIG["context_window"], seed=seed)


def gpt():
    manual_seed(0)
    return GPT(DebugConfig(**CONFIG)), AdamW(learning_rate=1e-2, weight_decay=0.1)


# ====================================================================== against the script
@pytest.mark.parametrize(
    "precision", ["fp32", "fp16", pytest.param("bf16", marks=[pytest.mark.gpu, gpu])]
)
@pytest.mark.parametrize("device", ["cpu", pytest.param("gpu", marks=[pytest.mark.gpu, gpu])])
def test_the_loop_computes_the_training_scripts_steps(precision, device):
    if precision == "bf16" and device == "cpu":
        pytest.skip("bf16 needs a GPU")
    steps, accumulation = 5, 4
    model, optimiser = gpt()
    policy = Precision(precision)
    batches = stream().batch()
    if device == "gpu":
        model.to_gpu(0)
        batches = batches.to_gpu(0)
    script = [
        float(
            train_step(
                model, optimiser, batches, policy, accumulation_steps=accumulation, max_norm=1.0
            )
            .settle()
            .loss
        )  # fmt: skip
        for _ in range(steps)
    ]
    loader = DataLoader(stream().batch(), batch_size=None)  # the same batches
    accelerator = Accelerator(
        gradient_accumulation_steps=accumulation, mixed_precision=precision, device=device
    )
    losses, weights, _ = run(loader=_first(loader, steps * accumulation), accelerator=accelerator,
                             epochs=1)  # fmt: skip
    np.testing.assert_allclose(losses, script, rtol=1e-6)
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(weights[name], value, err_msg=name)


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("pinned", [True, False])
def test_batches_reach_the_gpu(pinned):
    examples = [(np.full(3, i, dtype=np.float32), np.int64(i)) for i in range(10)]
    on_gpu = DataLoader(examples, 4, device=0, pin_memory=pinned, num_workers=1)
    for _ in range(2):
        for got, want in zip(on_gpu, DataLoader(examples, 4)):
            assert got[0].on_gpu and got[1].on_gpu
            np.testing.assert_array_equal(backend.to_host_array(got[0].array), want[0])
            np.testing.assert_array_equal(backend.to_host_array(got[1].array), want[1])


def _first(loader: DataLoader, n: int) -> DataLoader:
    """``loader``, ending after ``n`` batches (the stream goes on forever)."""
    batches = iter(loader)
    return DataLoader([next(batches) for _ in range(n)], batch_size=None)


# ====================================================================== processes
def loop_on(processes: int, batch_size: int, out: Path) -> dict:
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, str(ROOT / "tests" / "accelerate_loop.py"), str(out), "fp32",
               str(batch_size)]  # fmt: skip
    if processes > 1:
        command = [mpiexec(), "-n", str(processes), *command]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("step 8: loss") == 1  # printed by rank 0 alone
    return json.loads(out.read_text())


@needs_mpi
def test_the_loop_runs_on_two_processes_as_on_one(tmp_path):
    one = loop_on(1, 4, tmp_path / "one.json")
    two = loop_on(2, 2, tmp_path / "two.json")  # each process half of every batch
    assert (one["world_size"], two["world_size"]) == (1, 2)
    assert len(one["losses"]) == 8
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    for name, total in one["weights"].items():
        np.testing.assert_allclose(two["weights"][name], total, rtol=1e-5, atol=1e-4)


# ====================================================================== the seams
def test_the_optimiser_waits_for_the_last_micro_batch():
    model, optimiser = gpt()
    accelerator = Accelerator(gradient_accumulation_steps=3, device="cpu")
    model, optimiser = accelerator.prepare(model, optimiser)
    before = model.state_dict()
    data = stream().batch()
    loss_fn = CrossEntropy()
    syncs, norms = [], []
    for _ in range(6):
        inputs, targets = next(data)
        accelerator.backward(loss_fn(targets, model(inputs)))
        norms.append(accelerator.clip_grad_norm_(0.5))
        result = optimiser.step()
        assert optimiser.step() is None  # once per step
        optimiser.zero_grad()
        syncs.append(accelerator.sync_grad)
        unchanged = all(np.array_equal(v, model.state_dict()[k]) for k, v in before.items())
        assert unchanged == (accelerator.step == 0)
        assert (result is None) == (not accelerator.sync_grad)
    assert syncs == [False, False, True] * 2 and accelerator.step == 2
    assert norms[0] is None and norms[5] > 0 and norms[5] == pytest.approx(float(result.norm))
    assert optimiser.step_count == 2  # the optimiser's own attributes show through


def test_metrics_print_on_rank_0_and_log_to_the_metrics_file(tmp_path, capsys):
    accelerator = Accelerator(project_dir=tmp_path / "run", device="cpu")
    assert accelerator.gather_for_metrics(2.5) == 2.5
    assert accelerator.gather_for_metrics(np.float32(1.5)) == 1.5
    np.testing.assert_array_equal(accelerator.gather_for_metrics(np.arange(3.0)), [0, 1, 2])
    accelerator.print("hello", 1)
    assert capsys.readouterr().out == "hello 1\n"
    accelerator.log({"loss": np.float32(2.0), "note": "x"}, step=3)
    accelerator.log({"loss": 1.0})
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"step": 3, "loss": 2.0, "note": "x"}, {"step": 0, "loss": 1.0}
    ]  # fmt: skip
    assert accelerator.device == "cpu" and accelerator.is_main_process


def test_trackers_when_asked_and_installed(monkeypatch):
    calls = []
    mlflow = types.ModuleType("mlflow")
    mlflow.set_experiment = lambda name: calls.append(("experiment", name))
    mlflow.start_run = lambda: calls.append(("start",))
    mlflow.log_params = lambda params: calls.append(("params", params))
    mlflow.log_metrics = lambda values, step: calls.append(("metrics", values, step))
    mlflow.end_run = lambda: calls.append(("end",))
    monkeypatch.setitem(sys.modules, "mlflow", mlflow)
    accelerator = Accelerator(log_with="mlflow", project_name="p", config={"lr": 0.1}, device="cpu")
    accelerator.log({"loss": 2.0, "note": "x"}, step=4)
    for tracker in accelerator.trackers:
        tracker.finish()
    assert calls == [("experiment", "p"), ("start",), ("params", {"lr": 0.1}),
                     ("metrics", {"loss": 2.0}, 4), ("end",)]  # fmt: skip
    monkeypatch.setitem(sys.modules, "wandb", None)  # not installed
    with pytest.raises(ImportError, match=r"log_with='wandb' needs the wandb package"):
        Accelerator(log_with="wandb")
    with pytest.raises(ValueError, match="log_with must name trackers among"):
        Accelerator(log_with="comet_ml")
    with pytest.raises(ValueError, match="log_with='tensorboard' needs a project_dir"):
        Accelerator(log_with="tensorboard")


def test_mixed_precision_runs_any_layer_in_the_compute_dtype():
    seen = []

    class Probe(Dense):
        def forward(self, x):
            seen.append((self.weights.dtype, x.dtype))
            return super().forward(x)

    layer = Probe(4, 3)
    weights = layer.weights
    model = Accelerator(mixed_precision="fp16", device="cpu").prepare(layer)
    x = Tensor(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    out = model(x)
    # the forward ran on float16 casts of the weights and input; the output and the
    # gradients are float32, and the layer holds its float32 weights again
    assert seen == [(np.float16, np.float16)]
    assert out.dtype == np.float32 and layer.weights is weights
    np.testing.assert_allclose(out.array, layer(x).array, rtol=0, atol=2e-3)
    out.sum().backward()
    assert weights.grad.dtype == np.float32
    x16 = x.array.astype(np.float16)
    np.testing.assert_allclose(weights.grad.array, x16.T.astype(np.float32) @ np.ones((2, 3)),
                               rtol=1e-3)  # fmt: skip


def test_mistakes_are_named():
    with pytest.raises(ValueError, match="precision bf16 needs a GPU"):
        Accelerator(mixed_precision="bf16", device="cpu")
    with pytest.raises(TypeError, match="expected a model \\(Layer\\), an optimiser, a"):
        Accelerator().prepare([1, 2])
    with pytest.raises(ValueError, match="prepare the model first"):
        Accelerator().backward(None)
    with pytest.raises(ValueError, match="Accelerator: gradient_accumulation_steps must be"):
        Accelerator(gradient_accumulation_steps=0)


# ====================================================================== state
def test_save_state_then_load_state_resumes_bit_exactly(tmp_path):
    def loader():  # with workers and dropout: the positions and generators must come back
        return DataLoader(windows(), batch_size=4, shuffle=True, seed=1, num_workers=2)

    straight, final, _ = run(loader=loader(), epochs=3, dropout=0.1)
    first, _, accelerator = run(loader=loader(), epochs=3, dropout=0.1, stop_at_step=5,
                                save_to=tmp_path / "state")  # fmt: skip
    weights_file = "model.safetensors" if find_spec("safetensors") else "model.npz"
    assert sorted(p.name for p in (tmp_path / "state").iterdir()) == [weights_file, "state.npz"]
    manual_seed(7)  # a model that starts elsewhere: the state must bring it back
    rest, resumed, _ = run(loader=loader(), epochs=3, dropout=0.1, load_from=tmp_path / "state")
    assert first == straight[:5]
    assert rest[: len(straight) - 5] == straight[5:]  # the rest of the epoch, then the next
    assert len(rest) > len(straight) - 5  # (the resumed run's loop counts three epochs more)
    _, resumed_final, _ = run(loader=loader(), epochs=2, dropout=0.1, stop_at_step=12,
                              load_from=tmp_path / "state")  # fmt: skip
    for name, value in final.items():
        np.testing.assert_array_equal(resumed_final[name], value, err_msg=name)
    del resumed, accelerator


def test_save_state_without_safetensors_writes_the_safe_format(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "safetensors.numpy", None)
    _, weights, accelerator = run(epochs=1, stop_at_step=1, save_to=tmp_path / "s")
    assert (tmp_path / "s" / "model.npz").is_file()
    (tmp_path / "s" / "state.npz").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="state.npz"):
        accelerator.load_state(tmp_path / "s")
    with pytest.raises(CheckpointError, match="holds no model.safetensors or model.npz"):
        accelerator.load_state(tmp_path / "nothing")
    accelerator.save_state(tmp_path / "kept")  # a save that dies between its two renames:
    (tmp_path / "kept").rename(tmp_path / ".kept.old")
    accelerator.load_state(tmp_path / "kept")  # the previous state is found
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        accelerator.backward(CrossEntropy()(*_batch(accelerator)))
        accelerator.save_state(tmp_path / "s")
    assert "after micro-batch 1 of 4" in str(caught[-1].message)
    del weights


def _batch(accelerator):
    inputs, targets = windows()[0]
    return targets[None], accelerator.model(inputs[None])


def test_importing_tricycle_stays_light():
    code = ("import sys, tricycle\n"
            "assert not [m for m in sys.modules if m.startswith('tricycle.')], sys.modules\n"
            "assert tricycle.Accelerator.__name__ == 'Accelerator'\n"
            "from tricycle.data import DataLoader\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
