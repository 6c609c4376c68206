"""The Accelerator as a Hugging Face Accelerate user writes the loop: ``tricycle.optim``'s
torch-style optimizers and schedulers through ``prepare``, ``with accelerator.accumulate
(model)``, ``sync_gradients``, ``clip_grad_norm_(model.parameters(), max_norm)``,
``gather_for_metrics`` of a tuple, ``save_model`` and ``autocast``; the losses and weights
against the same loop in PyTorch, accumulation against one big batch, a resume against the
straight run, two processes against one, and a user's mistakes as one clear error.

Run under mpiexec (``mpiexec -n 2 python tests/test_audit_accelerate.py OUT.json``), rank 0
writes what the two-process test compares."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script under mpiexec, too

import tricycle.nn as nn  # noqa: E402
import tricycle.optim as optim  # noqa: E402
from tests.test_distributed import AS_ROOT, mpiexec, needs_mpi  # noqa: E402
from tricycle import Accelerator  # noqa: E402
from tricycle.apps.accelerator_files import read_weights  # noqa: E402
from tricycle.data import DataLoader, TensorDataset  # noqa: E402
from tricycle.random import manual_seed  # noqa: E402
from tricycle.tensor import Tensor  # noqa: E402

MAX_NORM = 0.5  # small enough that every step clips


def dataset(n: int = 32):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 8)).astype(np.float32), rng.integers(0, 3, size=n)  # (N, 8) (N,)


def net():
    manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3))


def pieces(batch_size: int = 4, lr: float = 0.05):
    """A model, its AdamW, a StepLR and a loader of the dataset, unprepared."""
    model = net()
    optimizer = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    loader = DataLoader(TensorDataset(*dataset()), batch_size=batch_size)
    return model, optimizer, loader, scheduler


def hf_loop(accelerator, model, optimizer, loader, scheduler, epochs: int = 1, stop_at=None):
    """The loop of Accelerate's docs; returns each micro-batch's loss (this process's)."""
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(epochs):
        for x, y in loader:
            with accelerator.accumulate(model):
                loss = loss_fn(model(x), y)
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), MAX_NORM)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            losses.append(float(loss))
            if accelerator.step == stop_at:
                return losses
    return losses


def run_hf(accumulation: int = 2, batch_size: int = 4, **accelerator_options):
    accelerator = Accelerator(gradient_accumulation_steps=accumulation, device="cpu",
                              **accelerator_options)  # fmt: skip
    prepared = accelerator.prepare(*pieces(batch_size))
    losses = hf_loop(accelerator, *prepared)
    return losses, accelerator, prepared


# ====================================================================== against PyTorch
def test_the_accelerate_loop_computes_torchs_losses_and_weights():
    """AdamW, StepLR, 2 micro-batches a step, clipping: each micro-batch's loss and the final
    weights of the same loop in PyTorch, from the same first weights."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    twin = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    model = net()
    nn.from_torch(model, twin.state_dict())
    optimizer = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    loader = DataLoader(TensorDataset(*dataset()), batch_size=4)
    accelerator = Accelerator(gradient_accumulation_steps=2, device="cpu")
    prepared = accelerator.prepare(model, optimizer, loader, scheduler)
    losses = hf_loop(accelerator, *prepared)
    np.testing.assert_allclose(losses, _torch_loop(torch, twin), rtol=1e-5)
    for name, value in nn.to_torch(model).items():
        np.testing.assert_allclose(value, twin.state_dict()[name].numpy(), atol=1e-5, err_msg=name)
    assert accelerator.step == 4 and scheduler.get_last_lr() == [0.05 * 0.25]
    assert optimizer.param_groups[0]["lr"] == 0.05 * 0.25


def _torch_loop(torch, model) -> list:
    """The same loop in plain PyTorch: the loss over 2 for 2 micro-batches, then clip, step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    x, y = (torch.from_numpy(a) for a in dataset())
    losses = []
    for i in range(8):
        loss = torch.nn.functional.cross_entropy(model(x[4 * i : 4 * i + 4]), y[4 * i : 4 * i + 4])
        (loss / 2).backward()
        losses.append(loss.item())
        if i % 2 == 1:
            torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    return losses


def test_accumulation_updates_as_one_big_batch():
    """2 micro-batches of 4 then a step: the update of one batch of 8 (SGD, no clipping)."""
    x, y = dataset()
    results = []
    for accumulation, batch in ((2, 4), (1, 8)):
        model = net()
        optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        accelerator = Accelerator(gradient_accumulation_steps=accumulation, device="cpu")
        model, optimizer, loader = accelerator.prepare(
            model, optimizer, DataLoader(TensorDataset(x, y), batch_size=batch)
        )
        for inputs, targets in loader:
            with accelerator.accumulate(model):
                accelerator.backward(nn.CrossEntropyLoss()(model(inputs), targets))
                optimizer.step()
                optimizer.zero_grad()
        assert accelerator.step == 4
        results.append(accelerator.unwrap_model(model).state_dict())
    for name, value in results[1].items():
        np.testing.assert_allclose(results[0][name], value, rtol=1e-5, atol=1e-7, err_msg=name)


def test_sync_gradients_is_known_inside_the_accumulate_block():
    """As Accelerate's: ``sync_gradients`` says, from the block's start, whether this
    micro-batch completes the step; the scheduler steps with the optimizer alone."""
    accelerator = Accelerator(gradient_accumulation_steps=3, device="cpu")
    model, optimizer, loader, scheduler = accelerator.prepare(*pieces())
    seen = []
    for x, y in loader:
        with accelerator.accumulate(model):
            seen.append(accelerator.sync_gradients)
            accelerator.backward(nn.CrossEntropyLoss()(model(x), y))
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
    assert seen == [False, False, True] * 2 + [False, False]
    assert accelerator.step == 2 and scheduler.last_epoch == 2


def test_a_scheduler_may_be_made_on_the_prepared_optimizer():
    """Accelerate's users also make the schedule after ``prepare``: it schedules the
    optimizer that the prepared one wraps, prepared or not."""
    model, optimizer, loader, _ = pieces()
    accelerator = Accelerator(device="cpu")
    model, prepared, loader = accelerator.prepare(model, optimizer, loader)
    scheduler = accelerator.prepare(optim.lr_scheduler.StepLR(prepared, step_size=1, gamma=0.5))
    x, y = next(iter(loader))
    accelerator.backward(nn.CrossEntropyLoss()(model(x), y))
    prepared.step()
    scheduler.step()
    assert prepared.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"] == 0.025


# ====================================================================== state, files
def test_save_state_and_load_state_resume_the_optimizer_and_the_scheduler(tmp_path):
    straight, *_ = run_hf()
    accelerator = Accelerator(gradient_accumulation_steps=2, device="cpu")
    prepared = accelerator.prepare(*pieces())
    first = hf_loop(accelerator, *prepared, stop_at=2)
    accelerator.save_state(tmp_path / "state")
    manual_seed(5)  # elsewhere: the state must bring the weights back
    accelerator = Accelerator(gradient_accumulation_steps=2, device="cpu")
    model, optimizer, loader, scheduler = accelerator.prepare(*pieces())
    accelerator.load_state(tmp_path / "state")
    assert scheduler.get_last_lr() == [0.025] and accelerator.step == 2
    rest = hf_loop(accelerator, model, optimizer, loader, scheduler)
    assert first + rest == straight


def test_save_model_writes_the_unwrapped_weights(tmp_path):
    _, accelerator, (model, *_) = run_hf()
    accelerator.save_model(model, tmp_path / "final")
    saved = read_weights(tmp_path / "final")
    weights = accelerator.unwrap_model(model).state_dict()
    assert sorted(saved) == sorted(weights)
    for name, value in weights.items():
        np.testing.assert_array_equal(saved[name], value)
    assert not [p for p in (tmp_path / "final").iterdir() if p.name.startswith(".")]


# ====================================================================== precision
def test_autocast_and_the_accelerate_precision_names():
    x = Tensor(np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32))
    layer = net()
    plain = layer(x).array
    with Accelerator(mixed_precision="no", device="cpu").autocast():  # Accelerate's fp32
        np.testing.assert_array_equal(layer(x).array, plain)
    accelerator = Accelerator(mixed_precision="fp16", cpu=True)
    assert accelerator.device == "cpu" and accelerator.mixed_precision == "fp16"
    with accelerator.autocast():
        out = layer(x)
    assert out.dtype == np.float32  # float16 inside, float32 out (as Precision.forward)
    np.testing.assert_array_equal(out.array, accelerator.policy.forward(layer, x).array)
    assert np.abs(out.array - plain).max() > 0
    np.testing.assert_allclose(out.array, plain, atol=5e-3)


# ====================================================================== metrics
def test_gather_for_metrics_takes_accelerates_tuples_and_dicts():
    accelerator = Accelerator(device="cpu")
    predictions, labels = np.array([0, 2, 1]), Tensor(np.array([0, 1, 1]))
    got, want = accelerator.gather_for_metrics((predictions, labels)), (predictions, labels.array)
    assert isinstance(got, tuple) and len(got) == 2
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    both = accelerator.gather_for_metrics({"loss": Tensor(np.float32(2.5)), "n": [1, 2]})
    assert both == {"loss": 2.5, "n": [1.0, 2.0]}


# ====================================================================== mistakes
def test_a_users_mistakes_are_named():
    accelerator = Accelerator(device="cpu")
    model, optimizer, loader, scheduler = accelerator.prepare(*pieces())
    raw = accelerator.unwrap_model(model)
    with pytest.raises(ValueError, match="model is prepared already"):
        accelerator.prepare(raw)
    with pytest.raises(ValueError, match="PreparedOptimiser is prepared already"):
        accelerator.prepare(optimizer)
    with pytest.raises(ValueError, match="this DataLoader is prepared already"):
        accelerator.prepare(loader)
    other = net()
    with pytest.raises(ValueError, match="accumulate: expected the prepared model"):
        with accelerator.accumulate(other):
            pass
    with pytest.raises(ValueError, match=r"backward: the loss must be one number, got shape"):
        accelerator.backward(model(dataset()[0][:2]))
    with pytest.raises(TypeError, match="backward: expected the loss as a Tensor, got float"):
        accelerator.backward(1.0)
    with pytest.raises(ValueError, match="reached none of the prepared model's parameters"):
        accelerator.backward(nn.CrossEntropyLoss()(other(dataset()[0][:2]), np.array([0, 1])))
    accelerator.backward(nn.CrossEntropyLoss()(model(dataset()[0][:2]), np.array([0, 1])))
    with pytest.raises(ValueError, match="clip_grad_norm_: .* the prepared model's 4 trainable"):
        accelerator.clip_grad_norm_(other.parameters(), 1.0)
    with pytest.raises(ValueError, match="norm_type 2"):
        accelerator.clip_grad_norm_(model.parameters(), 1.0, norm_type=1)
    with pytest.raises(ValueError, match="4 trainable parameters together; got 2 parameters, 0"):
        accelerator.clip_grad_norm_(list(model.parameters())[2:], 1.0)
    list(model.parameters())[0].requires_grad_(False)  # frozen: the trainable ones are enough
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert accelerator.clip_grad_norm_(trainable, 1.0) > 0
    fresh = Accelerator(device="cpu")
    with pytest.raises(ValueError, match=r"optimizer holds 4 parameters .* not the model's"):
        fresh.prepare(net(), optim.SGD(other.parameters(), lr=0.1))
    fresh = Accelerator(device="cpu")
    mine = net()
    with pytest.raises(ValueError, match="scheduler's optimizer is not the prepared optimizer"):
        fresh.prepare(mine, optim.SGD(mine.parameters(), lr=0.1), scheduler.scheduler)


# ====================================================================== two processes
def two_processes(out: Path) -> None:
    """The loop on each of the processes (split batches: every process a half of each batch
    of 8), then gather_for_metrics of each process's rows and a scheduler stepped as
    Accelerate steps it with the loader's share; rank 0 writes them to ``out``."""
    losses, accelerator, (model, *_) = run_hf(batch_size=8, split_batches=True)
    rows = np.arange(3) + 10 * accelerator.process_index
    gathered = accelerator.gather_for_metrics((rows, np.float32(accelerator.process_index)))
    mean_losses = [accelerator.gather_for_metrics(loss) for loss in losses]
    _, shared, (_, _, _, scheduler) = run_hf(batch_size=4)  # each process its share
    if accelerator.is_main_process:
        weights = accelerator.unwrap_model(model).state_dict()
        out.write_text(json.dumps({
            "world": accelerator.num_processes, "losses": mean_losses,
            "rows": gathered[0].tolist(), "rank_mean": gathered[1], "steps": shared.step,
            "scheduler_steps": scheduler.last_epoch,
            "weights": {k: float(np.sum(v.astype(np.float64))) for k, v in weights.items()},
        }))  # fmt: skip


@needs_mpi
def test_two_processes_train_as_one_and_gather_every_row(tmp_path):
    env = dict(os.environ, **AS_ROOT, OPENBLAS_NUM_THREADS="1", TRICYCLE_THREADS="1")
    command = [sys.executable, str(Path(__file__)), str(tmp_path / "two.json")]
    done = subprocess.run([mpiexec(), "-n", "2", *command], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    two = json.loads((tmp_path / "two.json").read_text())
    one_losses, accelerator, (model, *_) = run_hf(batch_size=8, split_batches=True)
    assert two["world"] == 2
    np.testing.assert_allclose(two["losses"], one_losses, rtol=1e-5)
    for name, value in accelerator.unwrap_model(model).state_dict().items():
        np.testing.assert_allclose(two["weights"][name], np.sum(value.astype(np.float64)),
                                   rtol=1e-5, atol=1e-5)  # fmt: skip
    assert two["rows"] == [0, 1, 2, 10, 11, 12]  # every process's rows, in rank order
    assert two["rank_mean"] == 0.5  # a number: the mean over the processes
    # each process read half the batches of 4: 2 steps; Accelerate's scheduler steps once
    # per process per step, so that the schedule runs as over the whole data
    assert (two["steps"], two["scheduler_steps"]) == (2, 4)


if __name__ == "__main__":
    two_processes(Path(sys.argv[1]))
