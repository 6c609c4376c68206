"""Zero-bubble pipeline schedules: the backward split in its input and weight halves
(tricycle/parallel/pipeline_backward.py), the orders of ScheduleInterleavedZeroBubble,
ScheduleZBVZeroBubble and ScheduleDualPipeV (pipeline_orders.py) and the schedules
(pipeline_schedules.py).

The two halves leave exactly (bit for bit) what one backward leaves, on graphs with a fused
op, a weight used twice and an output off the input path; in float64 they equal torch's
gradients. Each rank's order equals torch 2.13's own (torch's schedules built on stand-ins
of their stages); every order plays on the timetable. A world of one holding every stage
equals one process on the whole batch and torch's own schedules with the same weights; two
CPU ranks under mpiexec (rank r holds stages r and r + 2, or r and 3 - r on the V) give the
microbatches' losses, the outputs and every parameter's gradient of one process on the
whole batch.

Run as a script (``mpiexec -n 2 python tests/test_pipelining_zero_bubble.py OUT``) this file
is the ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import alone, by_key, ranks_findings, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tests.test_pipelining_interleaved import (
    STEPS,
    assert_equal_to_whole,
    assert_the_gpu_equals_the_host,
    batch,
    mlp,
    whole,
)
from tricycle import autograd, backend
from tricycle.backprop import FREED
from tricycle.distributed.pipelining import (
    PipelineStage,
    ScheduleDualPipeV,
    ScheduleInterleaved1F1B,
    ScheduleInterleavedZeroBubble,
    ScheduleZBVZeroBubble,
)
from tricycle.parallel import distributed as world_module
from tricycle.parallel.pipeline_backward import backward_input
from tricycle.parallel.pipeline_orders import (
    dualpipev_order,
    interleaved_zero_bubble_order,
    needs,
    timetable,
    zbv_zero_bubble_order,
)
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

MICROBATCHES = 4
KINDS = {"zb": ScheduleInterleavedZeroBubble, "zbv": ScheduleZBVZeroBubble,
         "dualpipev": ScheduleDualPipeV}  # fmt: skip
RUNS = [(kind, with_loss) for kind in KINDS for with_loss in (True, False)]
BOUNDS = {4: (0, 2, 4, 6, 7), 2: (0, 4, 7)}  # the MLP's layers cut into 4 or 2 stages


def stage_modules(num_stages: int) -> list:
    layers, bounds = list(mlp()), BOUNDS[num_stages]
    return [nn.Sequential(*layers[a:b]) for a, b in zip(bounds, bounds[1:])]


def held(kind: str, rank: int, world: int) -> list:
    """The stages rank ``rank`` holds: r, r + world (loop); r, 2 world - 1 - r (the V)."""
    return [rank, rank + world] if kind == "zb" else [rank, 2 * world - 1 - rank]


def run_stages(modules: dict, num_stages: int, kind: str, with_loss: bool,
               n: int = MICROBATCHES) -> list:  # fmt: skip
    """torch's loop on this rank's stages (``modules``: stage index -> module), SGD between
    the steps: per step the losses and the output (where the last stage is) and the
    gradients of each of this rank's stages."""
    x, y = batch()
    stages = [PipelineStage(m, s, num_stages, "cpu") for s, m in modules.items()]
    schedule = KINDS[kind](stages, n, loss_fn=nn.MSELoss() if with_loss else None)
    opt = optim.SGD([p for m in modules.values() for p in m.parameters()], lr=0.1)
    seen = []
    for _ in range(STEPS if with_loss else 1):
        opt.zero_grad()
        losses = []
        inputs = (Tensor(x),) if 0 in modules else ()
        if num_stages - 1 in modules and with_loss:
            output = schedule.step(*inputs, target=Tensor(y), losses=losses)
        else:
            output = schedule.step(*inputs)
        grads = {s: [None if p.grad is None else p.grad.array.copy() for p in m.parameters()]
                 for s, m in modules.items()}  # fmt: skip
        seen.append({"losses": [float(v) for v in losses], "grads": grads,
                     "output": None if output is None else output.array.copy()})  # fmt: skip
        opt.step()
    return seen


def in_model_order(ranks_seen: list) -> list:
    """The ranks' findings step by step as one process's: the losses and output of the rank
    with the last stage, every stage's gradients in the model's order."""
    merged = []
    for steps in zip(*ranks_seen):
        grads = {s: g for seen in steps for s, g in seen["grads"].items()}
        last = next(seen for seen in steps if seen["output"] is not None)
        merged.append(dict(last, grads=[g for s in sorted(grads) for g in grads[s]]))
    return merged


# ====================================================================== the two halves
def graphs(kind: str, seed: int = 0, dtype=np.float32):
    """A graph to differentiate, built afresh from ``seed``: (outputs, their gradients,
    the inputs, the parameters)."""
    rng = np.random.default_rng(seed)
    x = Tensor(rng.standard_normal((5, 6)).astype(dtype), requires_grad=kind != "no input")
    if kind in ("mlp", "no input"):  # a fused op (layer norm) between two Linears
        manual_seed(seed)
        model = nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8), nn.GELU(), nn.Linear(8, 3))
        y = model(x)
        return (y,), (rng.standard_normal(y.shape).astype(dtype),), (x,), model.parameters()
    w = Tensor(rng.standard_normal((6, 6)).astype(dtype), requires_grad=True)
    b = Tensor(rng.standard_normal(6).astype(dtype), requires_grad=True)
    h = (x @ w + b).tanh()
    y = h @ w.T  # w twice: once on the input path, once through its transpose
    off = (b * b).sum()  # an output the input does not reach
    seeds = (rng.standard_normal(y.shape).astype(dtype), np.asarray(0.5, dtype))
    return (y, off), seeds, (x,), [w, b]


@pytest.mark.parametrize("kind", ["mlp", "tied", "no input"])
def test_the_input_then_the_weight_half_leave_exactly_one_backward_s_gradients(kind):
    outputs, seeds, inputs, params = graphs(kind)
    autograd.backward(outputs, tuple(Tensor(s) for s in seeds))
    expected = [x.grad for x in inputs] + [p.grad.array for p in params]
    outputs, seeds, inputs, params = graphs(kind)
    finished = []
    for p in params:
        p.register_post_accumulate_grad_hook(lambda p: finished.append(id(p)))
    grads, weight_half = backward_input(outputs, tuple(Tensor(s) for s in seeds), inputs)
    assert all(p.grad is None for p in params) and finished == []  # nothing before W
    if kind == "no input":  # the first stage: no input half, the weight half is everything
        assert grads == (None,) and expected[0] is None
    else:
        np.testing.assert_array_equal(grads[0].array, expected[0].array)
    assert all(x.grad is None for x in inputs)  # the input half sets no .grad
    assert (outputs[0].args is FREED) == (kind != "no input")  # it frees the path it walked
    weight_half()
    for p, g in zip(params, expected[1:], strict=True):
        np.testing.assert_array_equal(p.grad.array, g)
    assert sorted(finished) == sorted(id(p) for p in params)  # each hook once, at the end
    assert all(y.args is FREED for y in outputs)  # nothing of the graph is left


def test_the_halves_equal_torch_s_gradients_in_float64():
    torch = pytest.importorskip("torch")
    outputs, seeds, inputs, params = graphs("tied", seed=3, dtype=np.float64)
    grads, weight_half = backward_input(outputs, tuple(Tensor(s) for s in seeds), inputs)
    weight_half()
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((5, 6)), requires_grad=True)
    w = torch.tensor(rng.standard_normal((6, 6)), requires_grad=True)
    b = torch.tensor(rng.standard_normal(6), requires_grad=True)
    y = torch.tanh(x @ w + b) @ w.T
    g = torch.tensor(rng.standard_normal(tuple(y.shape)))
    torch.autograd.backward([y, (b * b).sum()], [g, torch.tensor(0.5, dtype=torch.float64)])
    np.testing.assert_allclose(grads[0].array, x.grad.numpy(), rtol=1e-12, atol=1e-12)
    for ours, theirs in zip(params, (w, b)):
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_weight_half_needs_its_input_half_first():
    dist.init_process_group("gloo")
    stage = PipelineStage(mlp(), 0, 1)
    with pytest.raises(RuntimeError, match="W.* of microbatch 0 come after its input"):
        stage.backward_weight_one_chunk(0)


# ====================================================================== the orders
def torch_orders(name: str, world: int, local: int, n: int) -> dict:
    """torch's schedule ``name`` on stand-ins of rank 0's stages (its orders need no process
    group): rank -> its actions, torch's overlapped pairs as their two actions."""
    from types import SimpleNamespace  # noqa: PLC0415

    from torch.distributed import pipelining as torch_pipelining  # noqa: PLC0415

    stages = [SimpleNamespace(group_size=world, group_rank=0, num_stages=world * local,
                              stage_index=k * world, submod=None)
              for k in range(local)]  # fmt: skip
    order = getattr(torch_pipelining, name)(stages, n).pipeline_order
    return {rank: [(b.stage_index, b.computation_type.value, b.microbatch_index)
                   for a in order[rank] if a is not None for b in a.sub_actions or (a,)]
            for rank in range(world)}  # fmt: skip


def test_each_rank_s_order_is_torch_s():
    pytest.importorskip("torch")
    compared = 0
    for world in (1, 2, 3, 4):
        for local in (1, 2, 3):
            for n in range(world, 3 * world + 1, world):
                theirs = torch_orders("ScheduleInterleavedZeroBubble", world, local, n)
                for rank in range(world):
                    assert interleaved_zero_bubble_order(rank, world, local, n) == theirs[rank]
                    compared += 1
        for n in range(1, 3 * world + 2):  # fewer microbatches than ZB-V fills: dropped
            theirs = torch_orders("ScheduleZBVZeroBubble", world, 2, n)
            for rank in range(world):
                assert zbv_zero_bubble_order(rank, world, n) == theirs[rank], (world, n)
                compared += 1
            if n >= 2 * world:
                theirs = torch_orders("ScheduleDualPipeV", world, 2, n)
                for rank in range(world):
                    assert dualpipev_order(rank, world, n) == theirs[rank], (world, n)
                    compared += 1
    assert compared == 90 + 100 + 50  # (world, local, n, rank)s: ZB's, ZB-V's, DualPipeV's


ORDERS = {"zb": interleaved_zero_bubble_order,
          "zbv": lambda rank, world, local, n: zbv_zero_bubble_order(rank, world, n),
          "dualpipev": lambda rank, world, local, n: dualpipev_order(rank, world, n)}  # fmt: skip


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_timetable_runs_every_action_once_after_what_it_needs(kind):
    for world in (1, 2, 3, 4):
        for local in (1, 2, 3) if kind == "zb" else (2,):
            for n in range(1, 10):
                rounds_broken = kind == "zb" and n % max(1, n // world)
                if rounds_broken or (kind == "dualpipev" and n < 2 * world):
                    continue  # refused by the schedule
                num_stages = world * local
                orders = {r: ORDERS[kind](r, world, local, n) for r in range(world)}
                table = timetable("test", orders, num_stages)
                when = {a: t for steps in table.values() for t, a in enumerate(steps) if a}
                assert sum(a is not None for s in table.values() for a in s) == len(when)
                for s in range(num_stages):
                    for i in range(n):  # a forward; a whole backward or both halves
                        assert (s, "F", i) in when
                        split = {(s, "I", i), (s, "W", i)} <= set(when)
                        assert ((s, "B", i) in when) != split, (s, i)
                assert len(when) == num_stages * n * 2 + sum(k == "W" for _, k, _ in when)
                for action, t in when.items():
                    required = needs(action, num_stages)
                    assert not required or min(when.get(a, t) for a in required) < t, action
                for rank, steps in table.items():
                    assert [a for a in steps if a] == orders[rank]


# ====================================================================== a world of one
@pytest.mark.parametrize("kind, with_loss", RUNS)
def test_every_stage_on_one_rank_equals_the_whole_model(kind, with_loss):
    """4 stages (loop) or 2 (the V of a world of one) on one rank."""
    dist.init_process_group("gloo")
    num_stages = 4 if kind == "zb" else 2
    got = run_stages(dict(enumerate(stage_modules(num_stages))), num_stages, kind, with_loss)
    assert_equal_to_whole(in_model_order([got]), whole(with_loss), with_loss)


def test_eval_runs_forwards_alone():
    dist.init_process_group("gloo")
    modules, (x, y) = stage_modules(2), batch()
    schedule = ScheduleZBVZeroBubble([PipelineStage(m, s, 2) for s, m in enumerate(modules)], 3,
                                     loss_fn=nn.MSELoss())  # fmt: skip
    losses = []
    output = schedule.eval(Tensor(x), target=Tensor(y), losses=losses)
    np.testing.assert_allclose(output.array, whole(False)[0]["output"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(losses, whole(True, n=3)[0]["losses"], rtol=1e-5)
    assert all(p.grad is None for m in modules for p in m.parameters())


def test_a_world_of_one_equals_torch_s_schedules_with_the_same_weights(tmp_path):
    """torch's own zero-bubble schedules holding the stages in its world of one (gloo over
    a file store), 4 microbatches: the same losses, outputs and gradients."""
    torch = pytest.importorskip("torch")
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 13):
        pytest.skip("torch before 2.13 sends between stages of one rank through gloo")
    import torch.distributed as torch_dist  # noqa: PLC0415
    from torch.distributed import pipelining as torch_pipelining  # noqa: PLC0415

    x, y = batch()
    theirs = {}
    store = torch_dist.FileStore(str(tmp_path / "store"), 1)
    torch_dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        for kind, schedule in KINDS.items():
            torch.manual_seed(0)
            num_stages = 4 if kind == "zb" else 2
            layers = [torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16),
                      torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                      torch.nn.Linear(16, 3)]  # fmt: skip
            bounds = BOUNDS[num_stages]
            modules = [torch.nn.Sequential(*layers[a:b]) for a, b in zip(bounds, bounds[1:])]
            stages = [torch_pipelining.PipelineStage(m, s, num_stages, torch.device("cpu"))
                      for s, m in enumerate(modules)]  # fmt: skip
            run = getattr(torch_pipelining, schedule.__name__)
            run = run(stages, MICROBATCHES, loss_fn=torch.nn.MSELoss())
            losses = []
            out = run.step(torch.tensor(x), target=torch.tensor(y), losses=losses)
            theirs[kind] = (modules, [v.item() for v in losses], out.detach().numpy())
    finally:
        torch_dist.destroy_process_group()
    dist.init_process_group("gloo")
    for kind, schedule in KINDS.items():
        modules, their_losses, their_out = theirs[kind]
        ours = stage_modules(len(modules))
        for mine, their in zip(ours, modules):
            nn.from_torch(mine, their.state_dict())
        run = schedule([PipelineStage(m, s, len(ours)) for s, m in enumerate(ours)],
                       MICROBATCHES, loss_fn=nn.MSELoss())  # fmt: skip
        losses = []
        out = run.step(Tensor(x), target=Tensor(y), losses=losses)
        np.testing.assert_allclose([float(v) for v in losses], their_losses, rtol=1e-6)
        np.testing.assert_allclose(out.array, their_out, rtol=1e-5, atol=1e-6)
        for mine, their in zip(ours, modules):
            for (name, p), ours_p in zip(their.named_parameters(), mine.parameters()):
                theirs_grad = p.grad.numpy().T if name.endswith("weight") else p.grad.numpy()
                np.testing.assert_allclose(ours_p.grad.array, theirs_grad, rtol=1e-5,
                                           atol=1e-7, err_msg=f"{kind} {name}")  # fmt: skip


def test_bad_arguments_are_refused():
    dist.init_process_group("gloo")
    four = [PipelineStage(m, s, 4) for s, m in enumerate(stage_modules(4))]
    for kind in (ScheduleZBVZeroBubble, ScheduleDualPipeV):
        with pytest.raises(ValueError, match="needs exactly 2 stages per rank .* got 4"):
            kind(four, 4)
    two = [PipelineStage(m, s, 2) for s, m in enumerate(stage_modules(2))]
    with pytest.raises(ValueError, match=r"n_microbatches \(1\) must be at least .* \(2\)"):
        ScheduleDualPipeV(two, 1)
    with pytest.raises(ValueError, match="must hold stages"):
        ScheduleZBVZeroBubble(two[:1], 2)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_stage_on_the_gpu_equals_the_host(kind):
    num_stages = 4 if kind == "zb" else 2
    assert_the_gpu_equals_the_host(lambda: stage_modules(num_stages), KINDS[kind])


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_of_two_stages_each_equal_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for run in RUNS + [("zbv", True, 2)]:  # ZB-V on 2 microbatches: its 3rd dropped
        kind, with_loss, n = (*run, MICROBATCHES)[:3]
        assert_equal_to_whole(in_model_order(got[run]), whole(with_loss, n=n), with_loss)
    placed, refused = got["placed"], got["refused"]
    # (placement, rank of the stage before, of the stage after): rank 0 took stages 2 and 3,
    # rank 1 stages 3 and 2
    assert placed == [[("loop", 1, 1), ("v", 1, None)], [("loop", 0, None), ("v", 1, 0)]]
    assert "n_microbatches=5 must be a multiple of the number of rounds" in refused[0][0]
    assert "must hold stages [0, 3] of 4 (the V placement" in refused[0][1]
    assert "must hold stages [1, 2] of 4 (the V placement" in refused[1][1]
    assert "must hold stages [0, 2] of 4 (stage s on rank s % 2)" in refused[0][2]
    assert all("needs exactly 2 stages per rank" in seen[3] for seen in refused)
    assert all("must be at least the number of stages (4)" in seen[4] for seen in refused)


def refusals(rank: int) -> list:
    """The messages of the refusals that need two ranks."""
    modules = stage_modules(4)

    def stages(indices, num_stages=4):
        return [PipelineStage(modules[s % 4], s, num_stages) for s in indices]

    attempts = [
        lambda: ScheduleInterleavedZeroBubble(stages(held("zb", rank, 2)), 5),
        lambda: ScheduleZBVZeroBubble(stages(held("zb", rank, 2)), 4),  # loop's stages
        lambda: ScheduleInterleaved1F1B(stages(held("zbv", rank, 2)), 4),  # the V's
        lambda: ScheduleZBVZeroBubble(stages([rank, 3 - rank, 4 + rank, 7 - rank], 8), 8),
        lambda: ScheduleDualPipeV(stages(held("zbv", rank, 2)), 3),
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
    """Both ranks' program: rank r holds stages r and r + 2 (ZB) or r and 3 - r (the V)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {}
    for run in RUNS + [("zbv", True, 2)]:
        modules = stage_modules(4)
        mine = {s: modules[s] for s in held(run[0], rank, 2)}
        seen[run] = run_stages(mine, 4, *run)
    seen["placed"] = []  # a stage of either placement is accepted; the schedule places it
    for s in (2, 3) if rank == 0 else (3, 2):  # loop's stage, then the V's
        stage = PipelineStage(stage_modules(4)[s], s, 4)
        seen["placed"].append((stage.placement, stage.prev_rank, stage.next_rank))
    seen["refused"] = refusals(rank)
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
