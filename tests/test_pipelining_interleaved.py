"""Several pipeline stages per rank (tricycle/parallel/pipeline_schedules.py):
ScheduleInterleaved1F1B and ScheduleLoopedBFS. Their orders of actions against torch's own,
the timetable the ranks share, a world of one holding all four stages of an MLP (against
one process on the whole batch, and against torch's schedules with the same weights), the
refusals, and two CPU ranks under mpiexec each holding two of the four stages: the
microbatches' losses, the outputs and every parameter's gradient equal one process on the
whole batch, for both schedules, with and without a loss_fn.

Run as a script (``mpiexec -n 2 python tests/test_pipelining_interleaved.py OUT``) this file
is the ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import alone, by_key, ranks_findings, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tests.test_pipelining import mlp
from tricycle import backend, no_grad
from tricycle.distributed.pipelining import (
    PipelineStage,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleLoopedBFS,
)
from tricycle.parallel import distributed as world_module
from tricycle.parallel.pipeline_orders import timetable as _timetable
from tricycle.parallel.pipeline_schedules import (
    PipelineScheduleMulti,
    interleaved_1f1b_order,
    looped_bfs_order,
)
from tricycle.tensor import Tensor

STAGES, MICROBATCHES, STEPS = 4, 4, 2
KINDS = {"interleaved": ScheduleInterleaved1F1B, "bfs": ScheduleLoopedBFS}
RUNS = [(kind, with_loss) for kind in KINDS for with_loss in (True, False)]
ORDERS = {"interleaved": interleaved_1f1b_order, "bfs": looped_bfs_order}


def parts(model: nn.Sequential) -> list:
    """The model's four stages: a Linear and its Tanh each, the last Linear alone."""
    layers = list(model)
    return [nn.Sequential(*layers[a:b]) for a, b in ((0, 2), (2, 4), (4, 6), (6, 7))]


def batch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    return x, rng.standard_normal((8, 3)).astype(np.float32)


def whole(with_loss: bool, n: int = MICROBATCHES) -> list:
    """One process, the whole model on the whole batch, SGD between the steps: per step the
    microbatches' losses (tensor_split's chunks), the output and the gradients of the mean
    of the microbatches' losses (None without a loss)."""
    model, (x, y) = mlp(), batch()
    opt, loss_fn = optim.SGD(model.parameters(), lr=0.1), nn.MSELoss()
    rows = np.array_split(np.arange(len(x)), n)
    seen = []
    for _ in range(STEPS if with_loss else 1):
        opt.zero_grad()
        output = model(Tensor(x)).array.copy()
        losses = [loss_fn(model(Tensor(x[r])), Tensor(y[r])) for r in rows]
        if with_loss:
            (sum(losses) / float(n)).backward()
        grads = [None if p.grad is None else p.grad.array.copy() for p in model.parameters()]
        seen.append({"losses": [float(v) for v in losses], "output": output, "grads": grads})
        opt.step()
    return seen


def run_stages(modules: dict, kind: str, with_loss: bool, n: int = MICROBATCHES) -> list:
    """torch's loop on this rank's stages (``modules``: stage index -> module), SGD between
    the steps: per step the losses and the output (on the rank of the last stage) and this
    rank's gradients, in stage order."""
    x, y = batch()
    stages = [PipelineStage(m, s, STAGES, "cpu") for s, m in modules.items()]
    loss_fn = nn.MSELoss() if with_loss else None
    schedule = KINDS[kind](stages, n, loss_fn=loss_fn)
    params = [p for m in modules.values() for p in m.parameters()]
    opt = optim.SGD(params, lr=0.1)
    seen = []
    for _ in range(STEPS if with_loss else 1):
        opt.zero_grad()
        losses = []
        inputs = (Tensor(x),) if 0 in modules else ()
        if STAGES - 1 in modules and with_loss:
            output = schedule.step(*inputs, target=Tensor(y), losses=losses)
        else:
            output = schedule.step(*inputs)
        grads = [None if p.grad is None else p.grad.array.copy() for p in params]
        seen.append({"losses": [float(v) for v in losses], "grads": grads,
                     "output": None if output is None else output.array.copy()})  # fmt: skip
        opt.step()
    return seen


def assert_equal_to_whole(got: list, expected: list, with_loss: bool) -> None:
    for step, (ours, theirs) in enumerate(zip(got, expected, strict=True)):
        np.testing.assert_allclose(ours["output"], theirs["output"], rtol=1e-5, atol=1e-6)
        if with_loss:
            np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-5, atol=1e-6)
        else:
            assert ours["losses"] == []
        assert len(ours["grads"]) == len(theirs["grads"]) == 8
        for k, (a, b) in enumerate(zip(ours["grads"], theirs["grads"])):
            if not with_loss:
                assert a is None and b is None
                continue
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{step}, {k}")


# ====================================================================== the orders
@pytest.mark.parametrize("kind", ["interleaved", "bfs"])
def test_each_rank_s_order_is_torch_s(kind):
    """torch's schedule built on stand-ins of its stages (its orders need no process
    group); microbatches a multiple of the ranks, where every torch since 2.5 agrees."""
    pytest.importorskip("torch")
    from types import SimpleNamespace  # noqa: PLC0415

    from torch.distributed import pipelining as torch_pipelining  # noqa: PLC0415

    theirs = getattr(torch_pipelining, KINDS[kind].__name__)
    compared = 0
    for world in (1, 2, 3, 4):
        for local in (1, 2, 3):
            for n in range(world, 3 * world + 1, world):
                stages = [SimpleNamespace(group_size=world, group_rank=0, num_stages=world *
                                          local, stage_index=k * world, submod=None)
                          for k in range(local)]  # fmt: skip
                order = theirs(stages, n).pipeline_order
                for rank in range(world):
                    expected = [(a.stage_index, a.computation_type.value, a.microbatch_index)
                                for a in order[rank] if a is not None]  # fmt: skip
                    assert ORDERS[kind](rank, world, local, n) == expected, (world, local, n)
                    compared += 1
    assert compared == 3 * 3 * sum(range(1, 5))  # (local, n) pairs times the ranks


@pytest.mark.parametrize("kind", ["interleaved", "bfs"])
def test_the_timetable_runs_every_action_once_after_what_it_needs(kind):
    for world in (1, 2, 3, 4):
        for local in (1, 2, 3):
            for n in range(1, 9):
                if kind == "interleaved" and n % max(1, n // world):
                    continue
                num_stages = world * local
                orders = {r: ORDERS[kind](r, world, local, n) for r in range(world)}
                table = _timetable("test", orders, num_stages)
                assert len({len(steps) for steps in table.values()}) == 1
                when = {a: t for steps in table.values() for t, a in enumerate(steps) if a}
                everything = {(s, k, i) for s in range(num_stages) for k in "FB"
                              for i in range(n)}  # fmt: skip
                assert set(when) == everything
                assert sum(a is not None for s in table.values() for a in s) == len(everything)
                for (s, k, i), t in when.items():
                    needs = (s - 1, "F", i) if k == "F" else (s + 1, "B", i)
                    if k == "B" and s == num_stages - 1:
                        needs = (s, "F", i)
                    assert needs not in when or when[needs] < t, ((s, k, i), needs)
                for rank, steps in table.items():  # each rank's order kept
                    assert [a for a in steps if a] == orders[rank]


def test_orders_that_wait_for_each_other_are_refused():
    orders = {0: [(1, "F", 0), (0, "F", 0)]}  # stage 1's forward before stage 0's
    with pytest.raises(RuntimeError, match=r"wait for each other: \{0: \(1, 'F', 0\)\}"):
        _timetable("MySchedule", orders, 2)


# ====================================================================== a world of one
@pytest.mark.parametrize("kind, with_loss", RUNS)
def test_four_stages_on_one_rank_equal_the_whole_model(kind, with_loss):
    dist.init_process_group("gloo")
    got = run_stages(dict(enumerate(parts(mlp()))), kind, with_loss)
    expected = whole(with_loss)
    assert_equal_to_whole(got, expected, with_loss)
    if with_loss:
        assert np.mean(expected[-1]["losses"]) < np.mean(expected[0]["losses"])  # it learns


@pytest.mark.parametrize("kind", ["interleaved", "bfs"])
def test_uneven_microbatches_and_eval(kind):
    """3 microbatches of 3, 3 and 2 rows (Interleaved 1F1B: one round of 3 on one rank);
    eval runs forwards alone and leaves the gradients alone."""
    dist.init_process_group("gloo")
    got = run_stages(dict(enumerate(parts(mlp()))), kind, True, n=3)
    assert_equal_to_whole(got, whole(True, n=3), True)
    modules, (x, y) = parts(mlp()), batch()
    stages = [PipelineStage(m, s, STAGES) for s, m in enumerate(modules)]
    schedule = KINDS[kind](stages, 3, loss_fn=nn.MSELoss())
    losses = []
    output = schedule.eval(Tensor(x), target=Tensor(y), losses=losses)
    np.testing.assert_allclose(output.array, whole(False)[0]["output"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([float(v) for v in losses], whole(True, n=3)[0]["losses"],
                               rtol=1e-5)  # fmt: skip
    assert all(p.grad is None for m in modules for p in m.parameters())


@pytest.mark.parametrize("kind", ["interleaved", "bfs"])
def test_a_world_of_one_equals_torch_s_schedules_with_the_same_weights(kind, tmp_path):
    """torch's own schedule holding the four stages in its world of one (gloo over a file
    store), 4 even microbatches: the same losses, outputs and gradients."""
    torch = pytest.importorskip("torch")
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip("torch 2.11 sends between stages of one rank through gloo, which refuses")
    import torch.distributed as torch_dist  # noqa: PLC0415
    from torch.distributed import pipelining as torch_pipelining  # noqa: PLC0415

    torch.manual_seed(0)
    sizes = ((6, 16), (16, 16), (16, 16), (16, 3))
    theirs = [torch.nn.Sequential(torch.nn.Linear(*size), torch.nn.Tanh()) for size in sizes]
    theirs[-1] = theirs[-1][:1]  # the last Linear alone
    ours = parts(mlp())
    for mine, their in zip(ours, theirs):
        nn.from_torch(mine, their.state_dict())
    x, y = batch()
    store = torch_dist.FileStore(str(tmp_path / "store"), 1)
    torch_dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        stages = [torch_pipelining.PipelineStage(m, s, STAGES, torch.device("cpu"))
                  for s, m in enumerate(theirs)]  # fmt: skip
        schedule = getattr(torch_pipelining, KINDS[kind].__name__)(
            stages, MICROBATCHES, loss_fn=torch.nn.MSELoss()
        )
        their_losses = []
        their_out = schedule.step(torch.tensor(x), target=torch.tensor(y), losses=their_losses)
    finally:
        torch_dist.destroy_process_group()
    dist.init_process_group("gloo")
    stages = [PipelineStage(m, s, STAGES, "cpu") for s, m in enumerate(ours)]
    schedule = KINDS[kind](stages, MICROBATCHES, loss_fn=nn.MSELoss())
    our_losses = []
    our_out = schedule.step(Tensor(x), target=Tensor(y), losses=our_losses)
    np.testing.assert_allclose([float(v) for v in our_losses],
                               [v.item() for v in their_losses], rtol=1e-6)  # fmt: skip
    np.testing.assert_allclose(our_out.array, their_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    for mine, their in zip(ours, theirs):
        for (name, p), ours_p in zip(their.named_parameters(), mine.parameters()):
            ours_grad = ours_p.grad.array  # tricycle's Linear weights are (in, out)
            theirs_grad = p.grad.numpy().T if name.endswith("weight") else p.grad.numpy()
            np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-7,
                                       err_msg=name)  # fmt: skip


def test_bad_arguments_are_refused():
    dist.init_process_group("gloo")
    modules = parts(mlp())
    stages = [PipelineStage(m, s, STAGES) for s, m in enumerate(modules)]
    for kind in KINDS.values():
        with pytest.raises(ValueError, match=r"must hold stages \[0, 1, 2, 3\] of 4"):
            kind(stages[:2], 4, loss_fn=nn.MSELoss())
        with pytest.raises(ValueError, match=r"got stages \[0, 1, 2, 3\] of \[4, 4, 4, 5\]"):
            kind(stages[:3] + [PipelineStage(nn.Linear(16, 3), 3, 5)], 4)
        with pytest.raises(TypeError, match="non-empty list of this rank's PipelineStages"):
            kind(stages[0], 4)
        with pytest.raises(TypeError, match="must be a PipelineStage, got Sequential"):
            kind([stages[0], modules[1]], 4)
        with pytest.raises(ValueError, match="n_microbatches"):
            kind(stages, 0)
        schedule = kind(stages, 4, loss_fn=nn.MSELoss())
        x, y = batch()
        with pytest.raises(ValueError, match="pass target="):
            schedule.step(Tensor(x))
        with pytest.raises(ValueError, match="cannot be split into 4"):
            schedule.step(Tensor(x[:2]), target=Tensor(y[:2]))
        with no_grad(), pytest.raises(RuntimeError, match="eval()"):
            schedule.step(Tensor(x), target=Tensor(y))
    with pytest.raises(NotImplementedError, match="dim 0 only"):
        ScheduleInterleaved1F1B(stages, 4, args_chunk_spec=(0,))
    with pytest.raises(ValueError, match="runs one stage per rank, but the pipeline has 4"):
        ScheduleGPipe(stages[0], 4)
    with pytest.raises(NotImplementedError, match="base class without an order"):
        PipelineScheduleMulti(stages, 4).step(Tensor(batch()[0]))


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", ["interleaved", "bfs"])
def test_four_stages_on_the_gpu_equal_the_host(kind):
    assert_the_gpu_equals_the_host(lambda: parts(mlp()), KINDS[kind])


def assert_the_gpu_equals_the_host(stage_modules, schedule_class):
    """One step of ``schedule_class`` over the stages ``stage_modules()`` makes, on the host
    and on the GPU: the same losses, output and gradients."""
    dist.init_process_group("gloo")
    x, y = batch()
    got = []
    for device in ("cpu", "cuda"):
        modules = stage_modules()
        if device == "cuda":
            for module in modules:
                module.to_gpu(0)
        stages = [PipelineStage(m, s, len(modules), device) for s, m in enumerate(modules)]
        schedule = schedule_class(stages, MICROBATCHES, loss_fn=nn.MSELoss())
        inputs = [Tensor(a) if device == "cpu" else Tensor(backend.cupy().asarray(a))
                  for a in (x, y)]  # fmt: skip
        losses = []
        output = schedule.step(inputs[0], target=inputs[1], losses=losses)
        grads = [backend.to_host_array(p.grad.array) for m in modules for p in m.parameters()]
        got.append(([float(v) for v in losses], backend.to_host_array(output.array), grads))
    (host_losses, host_out, host_grads), (gpu_losses, gpu_out, gpu_grads) = got
    np.testing.assert_allclose(gpu_losses, host_losses, rtol=1e-5)
    np.testing.assert_allclose(gpu_out, host_out, rtol=1e-5, atol=1e-6)
    for a, b in zip(gpu_grads, host_grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_of_two_stages_each_equal_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for run in RUNS:
        expected = whole(run[1])
        first, last = got[run]  # rank 0: stages 0 and 2; rank 1: stages 1 and 3
        assert all(seen["output"] is None and seen["losses"] == [] for seen in first)
        ordered = []  # the ranks' gradients in the model's order: stages 0, 1, 2, 3
        for ours0, ours1 in zip(first, last):
            g0, g1 = ours0["grads"], ours1["grads"]
            ordered.append(dict(ours1, grads=g0[:2] + g1[:2] + g0[2:] + g1[2:]))
        assert_equal_to_whole(ordered, expected, run[1])
    refused = got["refused"]
    assert "stage 1 of 4 lives on rank 1" in refused[0][0]
    assert "stage 0 of 4 lives on rank 0" in refused[1][0]
    assert all("num_stages=3 must be a multiple of the world's size (2)" in r[1] for r in refused)
    for seen in refused:  # 5 microbatches on 2 ranks: rounds of 2, which 5 is not a multiple of
        assert "n_microbatches=5 must be a multiple of the number of rounds" in seen[2]
        assert "= 2 (world_size 2)" in seen[2]
        assert "runs one stage per rank, but the pipeline has 4 stages on 2 ranks" in seen[3]
        assert "must hold stages" in seen[4]


def refusals(rank: int) -> list:
    """The messages of the refusals that need two ranks."""
    modules = parts(mlp())
    attempts = [
        lambda: PipelineStage(modules[0], 1 - rank, STAGES),  # the other rank's stage
        lambda: PipelineStage(modules[0], rank, 3),
        lambda: ScheduleInterleaved1F1B(
            [PipelineStage(modules[s], s, STAGES) for s in (rank, rank + 2)], 5
        ),
        lambda: ScheduleGPipe(PipelineStage(modules[rank], rank, STAGES), 4),
        lambda: ScheduleLoopedBFS([PipelineStage(modules[rank], rank, STAGES)], 4),
    ]
    messages = []
    for attempt in attempts:
        try:
            attempt()
            messages.append("accepted")
        except ValueError as error:
            messages.append(str(error))
    return messages


def ranks(out: str) -> None:
    """Both ranks' program: rank r holds stages r and r + 2 of the MLP."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {}
    for run in RUNS:
        modules = parts(mlp())
        seen[run] = run_stages({s: modules[s] for s in (rank, rank + 2)}, *run)
    seen["refused"] = refusals(rank)
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
