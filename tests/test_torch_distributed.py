"""torch.distributed's calls and DistributedDataParallel (tricycle/parallel/torch_distributed.py)
in a world of one process, the engine's after-backward callbacks they rely on, and two ranks
under mpiexec: a torch-style DDP loop against one process on the whole batch, with SGD and
with AdamW sharded by ``ZeroRedundancyOptimizer``.

Run as a script (``mpiexec -n 2 python tests/test_torch_distributed.py OUT``) this file is
the ranks' program: rank 0 pickles what both ranks saw to OUT."""

import sys
from datetime import timedelta

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import by_key, ranks_findings, write_from_rank_0
from tests.test_distributed import needs_mpi
from tricycle import backend, backprop
from tricycle.distributed.optim import ZeroRedundancyOptimizer
from tricycle.parallel import buckets
from tricycle.parallel import distributed as world_module
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

DDP = dist.DistributedDataParallel
STEPS = 3


@pytest.fixture(autouse=True)
def alone():
    """No World left by another test: each test starts without a process group."""
    dist.destroy_process_group()


@pytest.fixture
def group():
    """A world of one from init_process_group, destroyed afterwards."""
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


# ====================================================================== names
def test_torch_names_beside_tricycle_s_own_keep_their_meanings():
    import tricycle.parallel

    assert dist.init is world_module.init and dist.World is world_module.World
    assert dist.DataParallel is buckets.DataParallel
    assert dist.fail_together is world_module.fail_together
    assert tricycle.parallel.DistributedDataParallel is DDP
    assert dist.is_available()
    assert {op.name for op in dist.ReduceOp} == {"SUM", "AVG", "PRODUCT", "MIN", "MAX"}


# ====================================================================== a world of one
def test_every_call_works_in_a_world_of_one(group):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_node_local_rank()) == (0, 1, 0)
    assert dist.get_backend() == "gloo"
    dist.barrier()
    values = np.array([1.5, -2.0], dtype=np.float32)
    t = Tensor(values.copy())
    for op in dist.ReduceOp:
        assert dist.all_reduce(t, op=op) is None
        np.testing.assert_array_equal(t.array, values)
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() and work.is_completed()
    dist.broadcast(t, src=0)
    outs = [Tensor(np.zeros(2, dtype=np.float32))]
    dist.all_gather(outs, t)
    np.testing.assert_array_equal(outs[0].array, values)
    objects = [None]
    dist.all_gather_object(objects, {"rank": 0})
    assert objects == [{"rank": 0}]
    sent = ["a", 3]
    dist.broadcast_object_list(sent, src=0)
    assert sent == ["a", 3]
    for op in dist.ReduceOp:  # the rooted calls and the all-to-alls of one rank
        assert dist.reduce(t, dst=0, op=op) is None
        np.testing.assert_array_equal(t.array, values)
    dist.gather(t, outs)
    np.testing.assert_array_equal(outs[0].array, values)
    got = Tensor(np.zeros(2, dtype=np.float32))
    assert dist.scatter(got, [Tensor(values * 3)], async_op=True).wait()
    np.testing.assert_array_equal(got.array, values * 3)
    dist.all_to_all(outs, [Tensor(values * 5)])
    np.testing.assert_array_equal(outs[0].array, values * 5)
    dist.all_to_all_single(got, t)
    np.testing.assert_array_equal(got.array, values)


@pytest.mark.gpu
@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_the_rooted_calls_and_all_to_alls_take_gpu_arrays_in_a_world_of_one():
    dist.init_process_group("nccl")
    try:
        cp = backend.cupy()
        values = cp.asarray([1.5, -2.0, 3.0, 4.0], dtype=cp.float32)
        t = Tensor(values.copy())
        dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        outs = [Tensor(cp.zeros(4, dtype=cp.float32))]
        dist.gather(t, outs)
        got = Tensor(cp.zeros(4, dtype=cp.float32))
        dist.scatter(got, [Tensor(values * 2)])
        np.testing.assert_array_equal(got.array.get(), values.get() * 2)
        dist.all_to_all(outs, [Tensor(values * 3)])
        np.testing.assert_array_equal(outs[0].array.get(), values.get() * 3)
        dist.all_to_all_single(got, t, output_split_sizes=[4], input_split_sizes=[4])
        np.testing.assert_array_equal(got.array.get(), values.get())
        assert isinstance(got.array, cp.ndarray)
    finally:
        dist.destroy_process_group()


def test_destroy_and_initialize_again():
    dist.init_process_group(timeout=timedelta(seconds=30))
    assert world_module._world.timeout == 30
    with pytest.raises(ValueError, match="initialized already"):
        dist.init_process_group()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    dist.destroy_process_group()  # nothing to destroy: nothing done
    with pytest.raises(RuntimeError, match="get_rank: the default process group has not"):
        dist.get_rank()
    assert dist.get_node_local_rank(fallback_rank=3) == 3  # torch's, before the group
    dist.init_process_group("cpu:gloo", world_size=1, rank=0)
    assert dist.get_world_size() == 1
    dist.destroy_process_group()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(backend="ucx"), ValueError, "backend must be one of"),
        (dict(backend=3), TypeError, "backend must be a string"),
        (dict(world_size=2), ValueError, r"world_size=2, but this process is rank 0 of 1"),
        (dict(rank=1), ValueError, "rank=1, but this process is rank 0 of 1"),
        (dict(init_method="ftp://x"), ValueError, "init_method must start with"),
        (dict(timeout=-1.0), ValueError, "timeout"),
    ],
)
def test_bad_initialization_is_refused(kwargs, error, match):
    with pytest.raises(error, match=match):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


def test_a_torchrun_launch_is_refused(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"\$WORLD_SIZE=2.*not torchrun"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


def test_bad_collective_arguments_are_refused(group):
    t = Tensor(np.zeros(2, dtype=np.float32))
    with pytest.raises(TypeError, match="all_reduce: tensor must be a tricycle Tensor"):
        dist.all_reduce(np.zeros(2))
    with pytest.raises(TypeError, match="all_reduce: op must be a ReduceOp"):
        dist.all_reduce(t, op="sum")
    with pytest.raises(TypeError, match="ReduceOp.AVG of a tensor of dtype int64"):
        dist.all_reduce(Tensor(np.array([1, 2]), requires_grad=False), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match="broadcast: src=1, but the ranks are 0 to 0"):
        dist.broadcast(t, src=1)
    with pytest.raises(ValueError, match="all_gather: tensor_list must be a list of world_size=1"):
        dist.all_gather([t, t], t)
    with pytest.raises(ValueError, match=r"tensor_list\[0\] is \(3,\) float32"):
        dist.all_gather([Tensor(np.zeros(3, dtype=np.float32))], t)
    with pytest.raises(ValueError, match="barrier: group must be None"):
        dist.barrier(group="workers")
    with pytest.raises(ValueError, match="reduce: dst \\(the peer's rank\\) or group_dst must"):
        dist.reduce(t)
    with pytest.raises(ValueError, match="gather: gather_list must be given on the rank 0"):
        dist.gather(t)
    with pytest.raises(ValueError, match=r"scatter: scatter_list\[0\] is \(3,\) float32"):
        dist.scatter(t, [Tensor(np.zeros(3, dtype=np.float32))])
    with pytest.raises(ValueError, match="all_to_all: rank 0 sent 3 values here; "
                                         r"output_tensor_list\[0\] is \(2,\)"):  # fmt: skip
        dist.all_to_all([t], [Tensor(np.zeros(3, dtype=np.float32))])
    with pytest.raises(ValueError, match="all_to_all: the output tensors are float32, the input "
                                         "tensors float64"):  # fmt: skip
        dist.all_to_all([t], [Tensor(np.zeros(2))])
    with pytest.raises(ValueError, match="input_split_sizes must be 1 counts .* sum to input's "
                                         r"2 rows, got \[1\]"):  # fmt: skip
        dist.all_to_all_single(t, t, input_split_sizes=[1])
    with pytest.raises(ValueError, match=r"all_to_all_single: output is \(2, 1\) float32"):
        dist.all_to_all_single(Tensor(np.zeros((2, 1), dtype=np.float32)), t)


# ====================================================================== the engine's callbacks
def test_callbacks_queued_in_backward_run_once_every_gradient_is_final():
    x, w = Tensor(np.array([1.0, 2.0])), Tensor(np.array([3.0, -1.0]))
    seen = []

    def on_grad(t):
        if not seen:
            backprop.queue_callback(lambda: seen.append((x.grad.array.copy(), w.grad.array.copy())))

    w.register_post_accumulate_grad_hook(on_grad)  # w's gradient is final before x's
    (x * w + x * x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_array_equal(seen[0][0], w.array + 2 * x.array)
    np.testing.assert_array_equal(seen[0][1], x.array)
    with pytest.raises(RuntimeError, match="queue_callback: no backward pass is running"):
        backprop.queue_callback(lambda: None)


def test_a_backward_inside_a_hook_keeps_its_own_callbacks():
    x, y = Tensor(np.array([2.0])), Tensor(np.array([5.0]))
    order = []

    def inner(t):
        backprop.queue_callback(lambda: order.append("inner"))

    def outer(t):
        backprop.queue_callback(lambda: order.append("outer"))
        (y * 3.0).sum().backward()  # its callback runs when this inner backward ends
        order.append("hook done")

    y.register_post_accumulate_grad_hook(inner)
    x.register_post_accumulate_grad_hook(outer)
    (x * x).sum().backward()
    assert order == ["inner", "hook done", "outer"]


# ====================================================================== DDP, alone
class Net(nn.Module):
    """Two layers, a parameter the forward never uses and a buffer."""

    def __init__(self):
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        self.unused = nn.Parameter(np.ones(3, dtype=np.float32))
        self.register_buffer("seen", Tensor(np.zeros(2, dtype=np.float32), requires_grad=False))

    def forward(self, x):
        return self.body(x)


def batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    return x, (x @ rng.normal(size=(4, 1))).astype(np.float32)


def sgd(model):
    return optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def adamw_groups(model) -> tuple[dict, dict]:
    """llm.c's two groups: weight decay on the matrices only."""
    decay = [p for p in model.parameters() if p.ndim >= 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    return {"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}


def zero_adamw(model):
    """AdamW's state sharded over the ranks, built as llm.c's train_gpt2.py builds it."""
    decay, rest = adamw_groups(model)
    opt = ZeroRedundancyOptimizer(**decay, optimizer_class=optim.AdamW, lr=0.01)
    opt.add_param_group(rest)
    return opt


def run_steps(model, x, y, steps: int = STEPS, make=sgd) -> dict:
    """A torch-style loop: the parameters after ``steps`` steps of the optimizer ``make``
    builds (SGD), the first gradients, and the optimizer ("opt")."""
    opt = make(model)
    first = {}
    for step in range(steps):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        if step == 0:
            first = {
                n: p.grad.array.copy() for n, p in model.named_parameters() if p.grad is not None
            }
        opt.step()
    params = {n.removeprefix("module."): p.array.copy() for n, p in model.named_parameters()}
    grads = {n.removeprefix("module."): g for n, g in first.items()}
    return {"params": params, "grads": grads, "opt": opt}


def test_ddp_alone_is_its_module(group):
    x, y = batch()
    manual_seed(0)
    plain = run_steps(Net(), x, y)
    manual_seed(0)
    model = DDP(Net())
    assert isinstance(model.module, Net)
    got = run_steps(model, x, y)
    for name, value in plain["params"].items():
        np.testing.assert_array_equal(got["params"][name], value)
    state = model.state_dict()
    assert set(state) == {f"module.{name}" for name in model.module.state_dict()}
    assert "module.seen" in state and "module.unused" in state  # buffers too, as torch's
    model.load_state_dict(state)
    with model.no_sync():
        nn.MSELoss()(model(Tensor(x)), Tensor(y)).backward()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(device_ids=[0]), ValueError, "device_ids and output_device must be None"),
        (dict(output_device=0), ValueError, "device_ids and output_device must be None"),
        (dict(dim=1), ValueError, "dim must be 0"),
        (dict(process_group="pg"), ValueError, "group must be None"),
        (dict(bucket_cap_mb=0), ValueError, "bucket_cap_mb"),
        (dict(find_unused_parameters="yes"), TypeError, "find_unused_parameters"),
    ],
)
def test_bad_ddp_arguments_are_refused(group, kwargs, error, match):
    with pytest.raises(error, match=f"DistributedDataParallel: .*{match}"):
        DDP(Net(), **kwargs)


def test_ddp_needs_a_layer_with_parameters_and_a_process_group():
    with pytest.raises(TypeError, match="DistributedDataParallel: module must be a Layer"):
        DDP(lambda x: x)
    with pytest.raises(RuntimeError, match="DistributedDataParallel: the default process group"):
        DDP(Net())
    dist.init_process_group("gloo")
    try:
        with pytest.raises(ValueError, match="no parameter that requires a gradient"):
            DDP(nn.Sequential(nn.Tanh()))
    finally:
        dist.destroy_process_group()


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_of_ddp_take_the_steps_of_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    assert (got["rank"], got["world_size"], got["backend"]) == ([0, 1], [2, 2], ["gloo"] * 2)
    # the collectives, in place
    np.testing.assert_array_equal(got["sum"], [[3, 6], [3, 6]])
    np.testing.assert_array_equal(got["avg"], [[1.5, 3], [1.5, 3]])
    np.testing.assert_array_equal(got["max"], [[2, 4], [2, 4]])
    np.testing.assert_array_equal(got["min"], [[1, 2], [1, 2]])
    np.testing.assert_array_equal(got["product"], [[2, 8], [2, 8]])
    np.testing.assert_array_equal(got["int_sum"], [[3], [3]])
    base = np.arange(6, dtype=np.float32).reshape(2, 3)
    for rank_base in got["strided"]:  # a transposed view's all_reduce lands in its base
        np.testing.assert_array_equal(rank_base, base * 3)
    np.testing.assert_array_equal(got["broadcast"], [[1, 10], [1, 10]])
    np.testing.assert_array_equal(got["gathered"], [[[0, 0], [1, 10]]] * 2)
    # the rooted calls: on the root alone; the all-to-alls, uneven sizes too
    np.testing.assert_array_equal(got["reduced"], [[1, 2], [3, 6]])  # rank 1 holds the sum
    np.testing.assert_array_equal(got["reduced_max"], [[1, 2], [2, 4]])
    assert got["gathered_on_1"] == [None, [[0, 0], [1, 10]]]
    np.testing.assert_array_equal(got["scattered"], [[10, 11], [12, 13]])  # rank 1's list
    np.testing.assert_array_equal(got["to_all"], [[[0, 1], [100, 101]], [[10, 11], [110, 111]]])
    assert got["to_all_uneven"] == [[[0.0], [100.0, 101.0]], [[10.0, 11.0], [110.0, 111.0,
                                                                           112.0]]]  # fmt: skip
    np.testing.assert_array_equal(got["single"], [[0, 1, 4, 5], [2, 3, 6, 7]])
    assert got["single_uneven"] == [[0.0, 10.0], [1.0, 2.0, 11.0, 12.0, 13.0]]
    assert got["objects"] == [[{"rank": 0}, {"rank": 1}]] * 2
    assert got["object_list"] == [[1, "x"]] * 2
    # DDP: each rank on its half equals one process on the whole batch
    x, y = batch()
    manual_seed(0)
    whole = run_steps(Net(), x, y)
    for rank in range(2):
        assert got["seen"][rank].tolist() == [0.0, 0.0]  # rank 0's buffer, at each forward
        np.testing.assert_array_equal(got["unused_grad"][rank], np.zeros(3))  # counted as zero
        for name, value in whole["params"].items():
            np.testing.assert_allclose(
                got["ddp"][rank]["params"][name], value, rtol=1e-5, atol=1e-6
            )
        for name, value in whole["grads"].items():
            np.testing.assert_allclose(got["ddp"][rank]["grads"][name], value, rtol=1e-5, atol=1e-6)
    for name in whole["params"]:  # the same parameters on both ranks, bit for bit
        np.testing.assert_array_equal(got["ddp"][0]["params"][name], got["ddp"][1]["params"][name])
    # ZeRO: AdamW over the whole batch in one process, its state shared out over the ranks
    manual_seed(0)
    alone = run_steps(Net(), x, y, make=lambda m: optim.AdamW(adamw_groups(m), lr=0.01))
    assert got["zero_held"] == [32, 20]  # largest first: the (4, 8) weights alone on rank 0
    for rank in range(2):
        for name, value in alone["params"].items():
            np.testing.assert_allclose(got["zero"][rank]["params"][name], value, rtol=1e-5,
                                       atol=1e-6, err_msg=name)  # fmt: skip
    for name in alone["params"]:
        np.testing.assert_array_equal(
            got["zero"][0]["params"][name], got["zero"][1]["params"][name]
        )
    plain, gathered = alone["opt"].state_dict(), got["zero_state"][0]
    assert got["zero_state"][1] is None
    assert [g["params"] for g in gathered["param_groups"]] == [[0, 1], [2, 3, 4]]
    for i, slots in plain["state"].items():  # index 4, unused, has no state alone
        assert gathered["state"][i]["step"] == slots["step"] == STEPS
        for slot in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(gathered["state"][i][slot], slots[slot], rtol=1e-4,
                                       atol=1e-7)  # fmt: skip
    # no_sync: the first micro-batch's gradients stay local, the second backward averages the sums
    manual_seed(0)
    model = Net()
    for rank in range(2):
        model.zero_grad()
        rows = slice(4 * rank, 4 * rank + 2)
        (nn.MSELoss()(model(Tensor(x[rows])), Tensor(y[rows])) / 2.0).backward()
        for name, p in model.named_parameters():
            if p.grad is not None:
                np.testing.assert_allclose(got["local"][rank][name], p.grad.array, rtol=1e-5)
    for rank in range(2):
        for name, value in whole["grads"].items():
            np.testing.assert_allclose(got["accumulated"][rank][name], value, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got["flag_accumulated"][rank][name], value, rtol=1e-5,
                                       atol=1e-6)  # fmt: skip
        assert sorted(got["flag_local"][rank]) == sorted(got["local"][rank])
        for name, value in got["flag_local"][rank].items():  # require_backward_grad_sync=False
            np.testing.assert_allclose(value, got["local"][rank][name], rtol=1e-6)


def ranks(out: str) -> None:
    """Both ranks' program (see the module): the collectives, then DDP's loops."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {"rank": rank, "world_size": dist.get_world_size(), "backend": dist.get_backend()}
    for op in ("sum", "avg", "max", "min", "product"):
        t = Tensor(np.array([1.0, 2.0], dtype=np.float32) * (rank + 1))
        dist.all_reduce(t, op=dist.ReduceOp[op.upper()])
        seen[op] = t.array
    t = Tensor(np.array([rank + 1]), requires_grad=False)
    dist.all_reduce(t)
    seen["int_sum"] = t.array
    base = np.arange(6, dtype=np.float32).reshape(2, 3) * (rank + 1)
    dist.all_reduce(Tensor(base.T))
    seen["strided"] = base
    t = Tensor(np.array([rank, 10.0 * rank], dtype=np.float32))
    outs = [Tensor(np.zeros(2, dtype=np.float32)) for _ in range(2)]
    dist.all_gather(outs, t)
    seen["gathered"] = np.stack([o.array for o in outs])
    mine = Tensor(np.array([1.0, 2.0], dtype=np.float32) * (rank + 1))
    dist.reduce(mine, dst=1)
    seen["reduced"] = mine.array
    mine = Tensor(np.array([1.0, 2.0], dtype=np.float32) * (rank + 1))
    dist.reduce(mine, group_dst=1, op=dist.ReduceOp.MAX)
    seen["reduced_max"] = mine.array
    into = [Tensor(np.zeros(2, dtype=np.float32)) for _ in range(2)] if rank == 1 else None
    dist.gather(t, into, dst=1)
    seen["gathered_on_1"] = None if into is None else [o.array.tolist() for o in into]
    parts = [Tensor(np.array([10.0 + 2 * i, 11.0 + 2 * i], dtype=np.float32)) for i in range(2)]
    got = Tensor(np.zeros(2, dtype=np.float32))
    dist.scatter(got, parts if rank == 1 else None, src=1)
    seen["scattered"] = got.array
    sent = [Tensor(np.array([0.0, 1.0], dtype=np.float32) + 10 * j + 100 * rank)
            for j in range(2)]  # fmt: skip
    outs2 = [Tensor(np.zeros(2, dtype=np.float32)) for _ in range(2)]
    dist.all_to_all(outs2, sent)
    seen["to_all"] = np.stack([o.array for o in outs2])
    sizes = [[1, 2], [2, 3]][rank]  # what this rank sends to rank 0 and rank 1
    sent = [Tensor(np.arange(n, dtype=np.float32) + 10 * j + 100 * rank)
            for j, n in enumerate(sizes)]  # fmt: skip
    outs2 = [Tensor(np.zeros(n, dtype=np.float32)) for n in ([1, 2], [2, 3])[rank]]
    dist.all_to_all(outs2, sent)
    seen["to_all_uneven"] = [o.array.tolist() for o in outs2]
    whole = Tensor(np.arange(4, dtype=np.float32) + 4 * rank)
    got = Tensor(np.zeros(4, dtype=np.float32))
    dist.all_to_all_single(got, whole)
    seen["single"] = got.array
    split = [[1, 2], [1, 3]][rank]  # rows to rank 0 | to rank 1
    ins = Tensor(np.arange(sum(split), dtype=np.float32) + 10 * rank)
    got = Tensor(np.zeros(2 if rank == 0 else 5, dtype=np.float32))
    dist.all_to_all_single(got, ins, output_split_sizes=[[1, 1], [2, 3]][rank],
                           input_split_sizes=split)  # fmt: skip
    seen["single_uneven"] = got.array.tolist()
    dist.broadcast(t, src=1)
    seen["broadcast"] = t.array
    objects = [None, None]
    dist.all_gather_object(objects, {"rank": rank})
    seen["objects"] = objects
    object_list = [1, "x"] if rank == 1 else [None, None]
    dist.broadcast_object_list(object_list, src=1)
    seen["object_list"] = object_list
    # a torch-style loop: each rank its half of the batch, from its own initial weights
    x, y = batch()
    rows = slice(4 * rank, 4 * rank + 4)
    manual_seed(rank)
    model = DDP(Net())  # rank 0's weights and buffer on both ranks
    model.module.seen.array[...] = rank  # a buffer each rank changed: rank 0's at forward
    seen["ddp"] = run_steps(model, x[rows], y[rows])
    seen["ddp"].pop("opt")
    seen["seen"] = model.module.seen.array
    seen["unused_grad"] = model.module.unused.grad.array
    # gradient accumulation: two micro-batches, the first under no_sync
    manual_seed(0)
    model = DDP(Net(), gradient_as_bucket_view=True, bucket_cap_mb=1e-4)  # several buckets
    loss_fn = nn.MSELoss()
    with model.no_sync():
        (loss_fn(model(Tensor(x[rows][:2])), Tensor(y[rows][:2])) / 2.0).backward()
    params = model.named_parameters()
    seen["local"] = {n[7:]: p.grad.array.copy() for n, p in params if p.grad is not None}
    (loss_fn(model(Tensor(x[rows][2:])), Tensor(y[rows][2:])) / 2.0).backward()
    seen["accumulated"] = {n[7:]: p.grad.array.copy() for n, p in params if n[7:] != "unused"}
    # the same with torch's flag, as build-nanogpt's train_gpt2.py sets it per micro-step
    manual_seed(0)
    model = DDP(Net())
    for micro_step in range(2):
        model.require_backward_grad_sync = micro_step == 1
        part = rows.start + 2 * micro_step
        (loss_fn(model(Tensor(x[part : part + 2])), Tensor(y[part : part + 2])) / 2.0).backward()
        params = model.named_parameters()
        grads = {n[7:]: p.grad.array.copy() for n, p in params if p.grad is not None}
        seen["flag_local" if micro_step == 0 else "flag_accumulated"] = grads
    # ZeRO: each rank holds AdamW's state for its own parameters, then gathers it on rank 0
    manual_seed(0)
    zero = run_steps(DDP(Net()), x[rows], y[rows], make=zero_adamw)
    opt = zero.pop("opt")
    seen["zero"] = zero
    seen["zero_held"] = sum(p.numel() for p in opt.optim.state)  # elements with state here
    opt.consolidate_state_dict(to=0)
    seen["zero_state"] = opt.state_dict() if rank == 0 else None
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
