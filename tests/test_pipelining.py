"""torch.distributed.pipelining's manual API (tricycle/parallel/pipelining.py): a world of one
against plain training, the refusals, and two CPU ranks under mpiexec, each holding half of a
4-layer MLP, trained with GPipe and 1F1B over 4 microbatches (SGD, AdamW): the microbatches'
losses and the parameters after the steps equal one process training the whole model on the
whole batch.

Run as a script (``mpiexec -n 2 python tests/test_pipelining.py OUT``) this file is the
ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import alone, by_key, ranks_findings, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tricycle import backend, no_grad
from tricycle.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    SplitPoint,
    pipeline,
)
from tricycle.parallel import distributed as world_module
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

STEPS, MICROBATCHES = 3, 4
RUNS = [(schedule, opt) for schedule in ("gpipe", "1f1b") for opt in ("sgd", "adamw")]


def mlp() -> nn.Sequential:
    """The 4-layer MLP, seeded: the same weights in every process."""
    manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))  # fmt: skip


def batch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    return x, rng.standard_normal((8, 3)).astype(np.float32)


def make_optimizer(name: str, params):
    if name == "sgd":
        return optim.SGD(params, lr=0.1)
    return optim.AdamW(params, lr=0.01, weight_decay=0.1)


def params_of(module) -> list:
    return [p.array.copy() for p in module.parameters()]


def whole(opt_name: str) -> dict:
    """One process, the whole model on the whole batch: each step's microbatch losses (before
    the step) and the parameters after the steps."""
    model, (x, y) = mlp(), batch()
    opt, loss_fn = make_optimizer(opt_name, model.parameters()), nn.MSELoss()
    losses = []
    for _ in range(STEPS):
        with no_grad():
            chunks = zip(np.split(x, MICROBATCHES), np.split(y, MICROBATCHES))
            losses.append([float(loss_fn(model(Tensor(a)), Tensor(b))) for a, b in chunks])
        opt.zero_grad()
        loss_fn(model(Tensor(x)), Tensor(y)).backward()
        opt.step()
    return {"losses": losses, "params": params_of(model)}


def train_stage(stage_module, rank: int, n_stages: int, schedule_name: str, opt_name: str):
    """torch's loop for one rank's stage: returns its losses (last stage) and parameters."""
    x, y = batch()
    stage = PipelineStage(stage_module, rank, n_stages, "cpu")
    kind = ScheduleGPipe if schedule_name == "gpipe" else Schedule1F1B
    schedule = kind(stage, n_microbatches=MICROBATCHES, loss_fn=nn.MSELoss())
    opt = make_optimizer(opt_name, stage_module.parameters())
    seen = []
    for _ in range(STEPS):
        opt.zero_grad()
        losses = []
        if rank == 0 and n_stages > 1:
            assert schedule.step(Tensor(x)) is None
        elif rank < n_stages - 1:  # a middle stage
            assert schedule.step() is None
        else:
            inputs = (Tensor(x),) if rank == 0 else ()
            output = schedule.step(*inputs, target=Tensor(y), losses=losses)
            assert output.shape == (8, 3)
            seen.append([float(loss) for loss in losses])
        opt.step()
    return {"losses": seen, "params": params_of(stage_module)}


# ====================================================================== a world of one
@pytest.mark.parametrize("schedule_name, opt_name", RUNS)
def test_one_stage_trains_as_the_whole_model(schedule_name, opt_name):
    dist.init_process_group("gloo")
    got = train_stage(mlp(), 0, 1, schedule_name, opt_name)
    expected = whole(opt_name)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    for a, b in zip(got["params"], expected["params"]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert np.mean(expected["losses"][-1]) < np.mean(expected["losses"][0])  # it learns


def test_uneven_microbatches_sum_as_torch_s_split_and_eval_runs_forward_alone():
    dist.init_process_group("gloo")
    model, loss_fn = mlp(), nn.MSELoss()
    x, y = batch()
    schedule = ScheduleGPipe(PipelineStage(model, 0, 1), n_microbatches=3, loss_fn=loss_fn)
    losses = []
    output = schedule.step(Tensor(x), target=Tensor(y), losses=losses)
    np.testing.assert_allclose(output.array, model(Tensor(x)).array, rtol=1e-5, atol=1e-6)
    rows = [slice(0, 3), slice(3, 6), slice(6, 8)]  # tensor_split's sizes: 3, 3, 2
    for loss, part in zip(losses, rows):
        by_itself = loss_fn(model(Tensor(x[part])), Tensor(y[part]))
        np.testing.assert_allclose(float(loss), float(by_itself), rtol=1e-6)
    grads = [p.grad.array.copy() for p in model.parameters()]
    for p in model.parameters():
        p.grad = None
    (sum(loss_fn(model(Tensor(x[r])), Tensor(y[r])) for r in rows) / 3.0).backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, p.grad.array, rtol=1e-5, atol=1e-7)
    before = [p.grad.array.copy() for p in model.parameters()]
    evaluated = schedule.eval(Tensor(x))
    np.testing.assert_allclose(evaluated.array, output.array, rtol=1e-5, atol=1e-6)
    for g, p in zip(before, model.parameters()):  # eval leaves the gradients alone
        np.testing.assert_array_equal(g, p.grad.array)


@pytest.mark.parametrize("schedule_name", ["gpipe", "1f1b"])
def test_a_world_of_one_equals_torch_s_schedules_with_the_same_weights(schedule_name, tmp_path):
    """torch's own ScheduleGPipe/Schedule1F1B in its world of one (gloo over a file store),
    3 uneven microbatches: the same losses, outputs and gradients (so the same scaling)."""
    torch = pytest.importorskip("torch")
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip("torch 2.11's schedules refuse microbatches of uneven sizes")
    import torch.distributed as torch_dist  # noqa: PLC0415
    from torch.distributed import pipelining as torch_pipelining  # noqa: PLC0415

    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    ours = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))
    nn.from_torch(ours, theirs.state_dict())
    x, y = batch()
    kinds = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}
    store = torch_dist.FileStore(str(tmp_path / "store"), 1)
    torch_dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        stage = torch_pipelining.PipelineStage(theirs, 0, 1, torch.device("cpu"))
        schedule = getattr(torch_pipelining, kinds[schedule_name])(
            stage, 3, loss_fn=torch.nn.MSELoss()
        )
        their_losses = []
        their_out = schedule.step(torch.tensor(x), target=torch.tensor(y), losses=their_losses)
    finally:
        torch_dist.destroy_process_group()
    dist.init_process_group("gloo")
    kind = ScheduleGPipe if schedule_name == "gpipe" else Schedule1F1B
    schedule = kind(PipelineStage(ours, 0, 1, "cpu"), 3, loss_fn=nn.MSELoss())
    our_losses = []
    our_out = schedule.step(Tensor(x), target=Tensor(y), losses=our_losses)
    np.testing.assert_allclose([float(v) for v in our_losses],
                               [v.item() for v in their_losses], rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(our_out.array, their_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), ours_p in zip(theirs.named_parameters(), ours.parameters()):
        ours_grad = ours_p.grad.array  # tricycle's Linear weights are (in, out)
        theirs_grad = p.grad.numpy().T if name.endswith("weight") else p.grad.numpy()
        np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-7, err_msg=name)


def test_bad_arguments_are_refused():
    with pytest.raises(RuntimeError, match="has not been initialized"):
        PipelineStage(mlp(), 0, 1)
    dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="runs one stage per rank"):
        ScheduleGPipe(PipelineStage(mlp(), 0, 2), 2)  # two stages on a world of one
    with pytest.raises(ValueError, match="below num_stages"):
        PipelineStage(mlp(), 1, 1)
    with pytest.raises(TypeError, match="must be a Layer"):
        PipelineStage(lambda x: x, 0, 1)
    with pytest.raises(NotImplementedError, match="dw_builder"):
        PipelineStage(mlp(), 0, 1, dw_builder=lambda: None)
    stage = PipelineStage(mlp(), 0, 1)
    with pytest.raises(ValueError, match="n_microbatches"):
        ScheduleGPipe(stage, 0)
    with pytest.raises(NotImplementedError, match="dim 0 only"):
        ScheduleGPipe(stage, 2, args_chunk_spec=(0,))
    schedule = ScheduleGPipe(stage, 2, loss_fn=nn.MSELoss())
    x, y = batch()
    with pytest.raises(ValueError, match="pass target="):
        schedule.step(Tensor(x))
    with pytest.raises(TypeError, match="losses must be a list"):
        schedule.step(Tensor(x), target=Tensor(y), losses=())
    with pytest.raises(ValueError, match="cannot be split into 2"):
        schedule.step(Tensor(x[:1]), target=Tensor(y[:1]))
    with no_grad(), pytest.raises(RuntimeError, match="eval()"):
        schedule.step(Tensor(x), target=Tensor(y))
    for tracer in (pipeline, SplitPoint):
        with pytest.raises(NotImplementedError, match="no program tracer"):
            tracer(mlp())
    assert dist.pipelining.ScheduleGPipe is ScheduleGPipe


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_one_stage_on_the_gpu_equals_the_host():
    dist.init_process_group("gloo")
    x, y = batch()
    got = []
    for device in ("cpu", "cuda"):
        model = mlp()
        if device == "cuda":
            model.to_gpu(0)
        schedule = Schedule1F1B(PipelineStage(model, 0, 1, device), 4, loss_fn=nn.MSELoss())
        inputs = [Tensor(a) if device == "cpu" else Tensor(backend.cupy().asarray(a))
                  for a in (x, y)]  # fmt: skip
        losses = []
        output = schedule.step(inputs[0], target=inputs[1], losses=losses)
        grads = [backend.to_host_array(p.grad.array) for p in model.parameters()]
        got.append(([float(v) for v in losses], backend.to_host_array(output.array), grads))
    (host_losses, host_out, host_grads), (gpu_losses, gpu_out, gpu_grads) = got
    np.testing.assert_allclose(gpu_losses, host_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_out, host_out, rtol=1e-5, atol=1e-6)
    for a, b in zip(gpu_grads, host_grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# ====================================================================== two ranks
@needs_mpi
def test_two_stages_on_two_ranks_train_as_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for run in RUNS:
        expected = whole(run[1])
        first, last = got[run]
        assert first["losses"] == []
        np.testing.assert_allclose(last["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
        for a, b in zip(first["params"] + last["params"], expected["params"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(run))
    assert np.mean(expected["losses"][-1]) < np.mean(expected["losses"][0])


def ranks(out: str) -> None:
    """Both ranks' program: rank r holds layers [4r, 4r + 4) of the MLP."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {}
    for run in RUNS:
        layers = list(mlp())
        stage_module = nn.Sequential(*layers[4 * rank : 4 * rank + 4])
        seen[run] = train_stage(stage_module, rank, 2, *run)
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
