"""torch.distributed.optim.ZeroRedundancyOptimizer (tricycle/parallel/torch_zero.py) in a world
of one process: the steps, settings and state_dict of the optimizer it wraps, the partition
against torch's own, and its refusals. Two ranks: tests/test_torch_distributed.py."""

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle.distributed.optim import ZeroRedundancyOptimizer
from tricycle.random import manual_seed
from tricycle.tensor import Tensor


@pytest.fixture
def group():
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


def model_and_batch():
    manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    return model, Tensor(x), Tensor((x @ rng.normal(size=(4, 1))).astype(np.float32))


def groups(model) -> list[dict]:
    """nanoGPT's and llm.c's two groups: weight decay on the matrices only."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    return [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]


def train(model, x, y, opt, steps: int = 3) -> None:
    for _ in range(steps):
        loss = nn.MSELoss()(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


def assert_same_state(ours: dict, theirs: dict) -> None:
    assert sorted(ours["state"]) == sorted(theirs["state"])
    for i, slots in theirs["state"].items():
        assert sorted(ours["state"][i]) == sorted(slots)
        for slot, value in slots.items():
            np.testing.assert_array_equal(ours["state"][i][slot], value)
    assert len(ours["param_groups"]) == len(theirs["param_groups"])
    for a, b in zip(ours["param_groups"], theirs["param_groups"]):
        assert a == b


def test_alone_it_is_the_optimizer_it_wraps(group):
    model, x, y = model_and_batch()
    plain = optim.AdamW(groups(model), lr=0.01, betas=(0.9, 0.95))
    train(model, x, y, plain)
    ours, x, y = model_and_batch()
    decay, rest = groups(ours)
    # llm.c's construction: the first group's keys as arguments, the second added after
    zero = ZeroRedundancyOptimizer(**decay, optimizer_class=optim.AdamW, lr=0.01, betas=(0.9, 0.95))
    zero.add_param_group(rest)
    assert [len(g["params"]) for g in zero.param_groups] == [2, 2]
    assert zero.param_groups[1]["eps"] == 1e-8  # the wrapped optimizer's defaults show
    train(ours, x, y, zero)
    for (name, a), b in zip(ours.named_parameters(), model.parameters()):
        np.testing.assert_array_equal(a.array, b.array, err_msg=name)
    with pytest.raises(RuntimeError, match="consolidate_state_dict"):
        zero.state_dict()
    zero.consolidate_state_dict(to=0)
    assert_same_state(zero.state_dict(), plain.state_dict())


def test_settings_changed_in_param_groups_reach_the_step(group):
    model, x, y = model_and_batch()
    plain = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ours, _, _ = model_and_batch()
    zero = ZeroRedundancyOptimizer(ours.parameters(), optimizer_class=optim.SGD, lr=0.1,
                                   momentum=0.9)  # fmt: skip
    for opt in plain, zero:
        sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        for _ in range(3):
            train(model if opt is plain else ours, x, y, opt, steps=1)
            sched.step()
    assert zero.param_groups[0]["lr"] == plain.param_groups[0]["lr"] == 0.0125
    assert zero.optim.param_groups[0]["lr"] == 0.025  # the last step's: synced at each step
    for a, b in zip(ours.parameters(), model.parameters()):
        np.testing.assert_array_equal(a.array, b.array)


def test_state_loads_both_ways(group):
    """A ZeRO state_dict resumes a plain optimizer, and a plain one resumes ZeRO."""
    model, x, y = model_and_batch()
    zero = ZeroRedundancyOptimizer(groups(model), optimizer_class=optim.AdamW, lr=0.01)
    train(model, x, y, zero, steps=2)
    zero.consolidate_state_dict()
    saved = zero.state_dict()
    plain = optim.AdamW(groups(model), lr=0.5)
    plain.load_state_dict(saved)
    assert plain.param_groups[0]["lr"] == 0.01
    again = ZeroRedundancyOptimizer(groups(model), optimizer_class=optim.AdamW, lr=0.5)
    again.load_state_dict(plain.state_dict())
    assert again.param_groups[0]["lr"] == again.optim.param_groups[0]["lr"] == 0.01
    before = [p.array.copy() for p in model.parameters()]
    train(model, x, y, plain, steps=1)
    after_plain = [p.array.copy() for p in model.parameters()]
    for p, b in zip(model.parameters(), before):
        p.array[...] = b
    train(model, x, y, again, steps=1)
    for p, a in zip(model.parameters(), after_plain):
        np.testing.assert_array_equal(p.array, a)
    with pytest.raises(ValueError, match=r"groups of \[1\] parameters"):
        again.load_state_dict({"state": {}, "param_groups": [{"params": [0]}]})


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's, on importing ZeRO
def test_the_partition_is_torch_s():
    """Per group, largest first, each parameter to the rank holding the fewest elements."""
    torch = pytest.importorskip("torch")
    from torch.distributed.optim import ZeroRedundancyOptimizer as TorchZero  # noqa: PLC0415

    shapes = [[(7, 3), (5,), (2, 2), (9,), (1,)], [(3, 3), (4,), (6, 2)]]
    world_size = 3
    theirs = object.__new__(TorchZero)  # torch's partition alone: no process group needed
    theirs.world_size, theirs._partition_parameters_cache = world_size, []
    theirs.param_groups = [{"params": [torch.zeros(s) for s in g]} for g in shapes]
    ours = object.__new__(ZeroRedundancyOptimizer)
    ours.world_size = world_size
    ours.param_groups = [{"params": [Tensor(np.zeros(s)) for s in g]} for g in shapes]

    def shapes_of(partition, size):
        return [[[tuple(size(p)) for p in g["params"]] for g in rank] for rank in partition]

    assert shapes_of(ours._partition(), lambda p: p.shape) == shapes_of(
        theirs._partition_parameters(), lambda p: p.shape
    )


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"optimizer_class": optim.AdamW, "overlap_with_ddp": True}, NotImplementedError,
         "overlap_with_ddp"),
        ({"optimizer_class": object}, TypeError, "optimizer_class must be a tricycle.optim"),
        ({"optimizer_class": optim.AdamW, "process_group": "other"}, ValueError, "group"),
    ],
)  # fmt: skip
def test_bad_arguments_are_refused(group, kwargs, error, match):
    model, _, _ = model_and_batch()
    with pytest.raises(error, match=match):
        ZeroRedundancyOptimizer(model.parameters(), **kwargs)


def test_it_needs_a_process_group():
    dist.destroy_process_group()
    model, _, _ = model_and_batch()
    with pytest.raises(RuntimeError, match="init_process_group"):
        ZeroRedundancyOptimizer(model.parameters(), optimizer_class=optim.AdamW)
    assert dist.optim.ZeroRedundancyOptimizer is ZeroRedundancyOptimizer
