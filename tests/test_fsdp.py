"""FullyShardedDataParallel and fully_shard (tricycle/parallel/fsdp.py): a world of one behaves
as the module; bad arguments are refused; two ranks under mpiexec, each on half the batch,
take the steps of one process on the whole batch (AdamW, Linear layers with LayerNorm) with
FULL_SHARD, SHARD_GRAD_OP, NO_SHARD and fully_shard, holding half of every parameter.

Run as a script (``mpiexec -n 2 python tests/test_fsdp.py OUT``) this file is the ranks'
program: rank 0 pickles what both ranks saw to OUT."""

import collections
import functools
import gc
import sys

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import by_key, ranks_findings, write_from_rank_0
from tests.test_distributed import needs_mpi
from tricycle import backend
from tricycle.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from tricycle.distributed.fsdp import (
    CPUOffload,
    FSDPModule,
    FullStateDictConfig,
    MixedPrecision,
    ModuleWrapPolicy,
    ShardingStrategy,
    StateDictType,
    fully_shard,
)
from tricycle.distributed.fsdp import FullyShardedDataParallel as FSDP
from tricycle.distributed.fsdp.wrap import size_based_auto_wrap_policy, transformer_auto_wrap_policy
from tricycle.parallel import distributed as world_module
from tricycle.parallel.fsdp_unit import units_of
from tricycle.parallel.fsdp_units import gathered_bytes
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

STEPS = 3
# reshard_after_forward: None frees every module's gathered parameters after its forward but
# the root's; True the root's too; False none (SHARD_GRAD_OP's way)
FULLY_SHARD_RESHARD = {"fully_shard": None, "fully_shard_freed": True, "fully_shard_kept": False}
WAYS = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "fully_shard")
HYBRID = ShardingStrategy.HYBRID_SHARD


class Block(nn.Module):
    def __init__(self, width, p: float = 0.0):
        super().__init__()
        self.linear, self.norm = nn.Linear(width, width), nn.LayerNorm(width)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.norm(x + self.drop(self.linear(x).tanh()))


class Net(nn.Module):
    def __init__(self, blocks: int = 2, p: float = 0.0):
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.blocks = nn.ModuleList([Block(6, p) for _ in range(blocks)])
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


CALLS = collections.Counter()  # forward calls, by class


class Leaf(nn.Module):
    def __init__(self, width, p: float = 0.0):
        super().__init__()
        self.linear, self.drop = nn.Linear(width, width), nn.Dropout(p)

    def forward(self, x):
        CALLS["Leaf"] += 1
        return self.drop(self.linear(x).tanh())


class Mid(nn.Module):
    def __init__(self, width, p: float = 0.0):
        super().__init__()
        self.leaves = nn.ModuleList([Leaf(width, p) for _ in range(2)])
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        CALLS["Mid"] += 1
        for leaf in self.leaves:
            x = x + leaf(x)
        return self.norm(x)


class Deep(nn.Module):
    """Three levels of units: the root, two Mids, two Leaves in each."""

    def __init__(self, p: float = 0.0):
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.mids = nn.ModuleList([Mid(6, p) for _ in range(2)])
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        CALLS["Deep"] += 1
        x = self.inp(x)
        for mid in self.mids:
            x = mid(x)
        return self.out(x)


# forward calls of (the root, each Mid, each Leaf) per step: a unit freed after its forward
# runs it once more in backward (a Leaf inside its Mid's recomputation), never a third time
DEEP_CALLS = {"FULL_SHARD": (1, 2, 2), "SHARD_GRAD_OP": (1, 1, 1), "NO_SHARD": (1, 1, 1),
              "fully_shard": (1, 2, 2), "fully_shard_freed": (2, 2, 2),
              "fully_shard_kept": (1, 1, 1)}  # fmt: skip


def deep(way: str, p: float = 0.0):
    manual_seed(0)
    net = Deep(p)
    if way.startswith("fully_shard"):
        reshard = FULLY_SHARD_RESHARD[way]
        for mid in net.mids:
            for leaf in mid.leaves:
                fully_shard(leaf, reshard_after_forward=reshard)
            fully_shard(mid, reshard_after_forward=reshard)
        return fully_shard(net, reshard_after_forward=reshard)
    policy = ModuleWrapPolicy({Mid, Leaf})
    return FSDP(net, sharding_strategy=ShardingStrategy[way], auto_wrap_policy=policy)


def counted_calls(model, x, y) -> tuple:
    """(losses, forward calls by class) of training ``model``."""
    CALLS.clear()
    losses = train(model, x, y)
    return losses, dict(CALLS)


def expected_calls(way: str) -> dict:
    root, mid, leaf = DEEP_CALLS[way]
    return {"Deep": root * STEPS, "Mid": 2 * mid * STEPS, "Leaf": 4 * leaf * STEPS}


def full_state(model) -> dict:
    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))


def batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype(np.float32)
    return x, np.tanh(x @ rng.normal(size=(4, 1))).astype(np.float32)


def plain_names() -> list:
    manual_seed(0)
    return list(Net().state_dict())


def wrapped(way: str, **sizes):
    manual_seed(0)
    net = Net(**sizes)
    if way.startswith("fully_shard"):
        reshard = FULLY_SHARD_RESHARD[way]
        for block in net.blocks:
            fully_shard(block, reshard_after_forward=reshard)
        return fully_shard(net, reshard_after_forward=reshard)
    policy = ModuleWrapPolicy({Block})
    return FSDP(net, sharding_strategy=ShardingStrategy[way], auto_wrap_policy=policy)


def train(model, x, y, steps: int = STEPS) -> list:
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    losses = []
    for _ in range(steps):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.fixture(autouse=True)
def group():
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    yield
    dist.destroy_process_group()


# ====================================================================== a world of one
@pytest.mark.parametrize("way", WAYS)
def test_a_world_of_one_trains_as_the_module(way):
    x, y = batch()
    manual_seed(0)
    plain = Net()
    expected = train(plain, x, y)
    model = wrapped(way)
    assert train(model, x, y) == expected
    state = model.state_dict()  # a world of one's shards are the whole parameters
    assert sorted(state) == sorted(plain.state_dict())
    for name, value in plain.state_dict().items():
        np.testing.assert_array_equal(np.asarray(state[name]), value, err_msg=name)


@pytest.mark.parametrize("way", ["FULL_SHARD", "fully_shard"])
def test_dropout_is_replayed_when_backward_recomputes_a_unit(way):
    x, y = batch()
    manual_seed(0)
    plain = Net(p=0.5)
    expected = train(plain, x, y)
    model = wrapped(way, p=0.5)  # each unit's forward runs again in backward: same masks
    assert train(model, x, y) == expected
    np.testing.assert_array_equal(
        model.state_dict()["out.weights"], plain.state_dict()["out.weights"]
    )


@pytest.mark.parametrize("way", DEEP_CALLS)
def test_nested_units_run_their_forward_once_and_once_more_in_backward(way):
    x, y = batch()
    manual_seed(0)
    plain = Deep(p=0.5)
    expected = train(plain, x, y)
    model = deep(way, p=0.5)  # dropout: each recomputation must draw the forward's masks
    losses, calls = counted_calls(model, x, y)
    assert losses == expected
    assert calls == expected_calls(way)
    state = full_state(model)
    for name, value in plain.state_dict().items():
        np.testing.assert_array_equal(state[name], value, err_msg=name)


def test_units_and_their_flat_parameters():
    model = wrapped("FULL_SHARD")
    names = [n for n, _ in model.named_parameters()]
    assert names == [
        "_flat_param",
        "_fsdp_wrapped_module.blocks.0._flat_param",
        "_fsdp_wrapped_module.blocks.1._flat_param",
    ]
    sizes = [p.size for p in model.parameters()]
    assert sizes == [4 * 6 + 6 + 6 + 1, 6 * 6 + 6 + 6 + 6, 6 * 6 + 6 + 6 + 6]
    assert len(FSDP.fsdp_modules(model)) == 3 and len(FSDP.fsdp_modules(model, True)) == 1
    with pytest.raises(RuntimeError, match="sharded outside the forward"):
        model.module.inp.weights.sum()
    with FSDP.summon_full_params(model):
        model.module.inp.weights.array[...] = 1.0
        assert model.module.inp.weights.shape == (4, 6)
    assert model.state_dict()["inp.weights"].sum() == 24.0
    with FSDP.state_dict_type(model, StateDictType.SHARDED_STATE_DICT):
        piece = model.state_dict()["blocks.1.linear.weights"]
        assert (piece.shape, piece.start, piece.local.size) == ((6, 6), 0, 36)
    with FSDP.state_dict_type(model, StateDictType.LOCAL_STATE_DICT):
        assert model.state_dict()["_flat_param"].shape == (37,)
    with FSDP.state_dict_type(
        model, StateDictType.FULL_STATE_DICT, FullStateDictConfig(True, True)
    ):
        assert sorted(model.state_dict()) == sorted(plain_names())
    state = model.state_dict()
    state["out.bias"] = np.array([5.0], dtype=np.float32)
    model.load_state_dict(state)
    assert model.state_dict()["out.bias"][0] == 5.0


def test_policies_pick_the_units():
    manual_seed(0)
    by_size = functools.partial(size_based_auto_wrap_policy, min_num_params=40)
    model = FSDP(Net(), auto_wrap_policy=by_size)
    assert len(FSDP.fsdp_modules(model)) == 3  # the two blocks (48 values), not the rest
    manual_seed(0)
    by_class = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={nn.Linear})
    model = FSDP(Net(), auto_wrap_policy=by_class)
    assert len(FSDP.fsdp_modules(model)) == 5
    block = fully_shard(Block(6))
    assert isinstance(block, FSDPModule) and isinstance(block, Block)
    assert type(block).__name__ == "FSDPBlock"


def test_clip_grad_norm_and_mixed_precision():
    x, y = batch()
    manual_seed(0)
    plain = Net()
    nn.MSELoss()(plain(Tensor(x)), Tensor(y)).backward()
    grads = np.concatenate([p.grad.numpy().ravel() for p in plain.parameters()])
    model = wrapped("FULL_SHARD")
    nn.MSELoss()(model(Tensor(x)), Tensor(y)).backward()
    norm = model.clip_grad_norm_(0.01)
    np.testing.assert_allclose(float(norm), np.linalg.norm(grads), rtol=1e-5)
    clipped = np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])
    np.testing.assert_allclose(np.linalg.norm(clipped), 0.01, rtol=1e-4)
    manual_seed(0)
    half = FSDP(Net(), mixed_precision=MixedPrecision(param_dtype=np.float64))
    out = half(Tensor(x))
    assert out.dtype == np.float64 and half._flat_param.dtype == np.float32
    out.sum().backward()
    assert half._flat_param.grad.dtype == np.float32


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(sharding_strategy="FULL"), TypeError, "sharding_strategy"),
        (dict(sharding_strategy=HYBRID), ValueError, "Manual wrapping"),
        (dict(sharding_strategy=HYBRID, device_mesh="mesh"), TypeError, "device_mesh"),
        (dict(sharding_strategy=HYBRID, process_group="pg"), ValueError, "Tuple"),
        (dict(process_group="pg"), ValueError, "a Group of its ranks"),
        (dict(process_group=(None, None)), ValueError, "HYBRID_SHARD's"),
        (dict(use_orig_params=True), NotImplementedError, "use_orig_params"),
        (dict(auto_wrap_policy=3), TypeError, "auto_wrap_policy"),
        (dict(mixed_precision="bf16"), TypeError, "mixed_precision"),
        (dict(cpu_offload=True), TypeError, "cpu_offload"),
        (dict(sync_module_states="yes"), TypeError, "sync_module_states"),
    ],
)
def test_bad_arguments_are_refused(kwargs, error, match):
    with pytest.raises(error, match=f"FullyShardedDataParallel: .*{match}"):
        FSDP(Net(), **kwargs)


def test_bad_fully_shard_calls_are_refused():
    model = fully_shard(Net())
    with pytest.raises(ValueError, match="fully sharded already"):
        fully_shard(model)
    with pytest.raises(TypeError, match="fully_shard: module must be a Layer"):
        fully_shard(lambda x: x)
    with pytest.raises(TypeError, match="fully_shard: mesh must be a DeviceMesh"):
        fully_shard(Net(), mesh="mesh")
    with pytest.raises(TypeError, match="reshard_after_forward"):
        fully_shard(Net(), reshard_after_forward=2)
    FSDP(Net(), cpu_offload=CPUOffload(offload_params=True))  # on the host: honoured as is


def test_reduce_scatter_in_a_world_of_one():
    world = world_module.init()
    for mean in (False, True):  # one rank's block is the whole, its sum and its mean
        got = world.reduce_scatter(sent(0, np.float32).reshape(2, 3), mean=mean)
        np.testing.assert_array_equal(got, sent(0, np.float32))
    mine = Tensor(np.zeros(6, np.float32))
    dist.reduce_scatter_tensor(mine, Tensor(sent(0, np.float32)), op=dist.ReduceOp.MIN)
    dist.reduce_scatter(mine, [Tensor(sent(0, np.float32))])
    dist.all_gather_into_tensor(both := Tensor(np.zeros((1, 6), np.float32)), mine)
    np.testing.assert_array_equal(both.numpy()[0], sent(0, np.float32))
    with pytest.raises(ValueError, match="reduce_scatter_tensor: input is"):
        dist.reduce_scatter_tensor(Tensor(np.zeros(4)), Tensor(np.zeros(6)))
    with pytest.raises(TypeError, match="reduce_scatter_tensor: ReduceOp.AVG"):
        dist.reduce_scatter_tensor(Tensor(np.zeros(6, np.int64)), Tensor(np.zeros(6, np.int64)),
                                   op=dist.ReduceOp.AVG)  # fmt: skip
    with pytest.raises(ValueError, match="reduce_scatter: input_list must be a list of"):
        dist.reduce_scatter(mine, [mine, mine])


def test_without_a_process_group():
    dist.destroy_process_group()
    with pytest.raises(RuntimeError, match="FullyShardedDataParallel: the default process group"):
        FSDP(Net())


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("way", ["FULL_SHARD", "fully_shard"])
def test_a_world_of_one_on_a_gpu_trains_as_on_the_host(way):
    x, y = batch()
    expected = train(wrapped(way), x, y)
    dist.destroy_process_group()
    dist.init_process_group("nccl")
    manual_seed(0)
    net = Net().to_gpu(0)
    model = fully_shard(net) if way == "fully_shard" else FSDP(net)
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    losses = []
    for _ in range(STEPS):
        loss = nn.MSELoss()(model(Tensor(x).to_gpu(0)), Tensor(y).to_gpu(0))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    np.testing.assert_allclose(losses, expected, rtol=1e-4)
    assert all(p.on_gpu for p in model.parameters())


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_take_the_steps_of_one_process_on_the_whole_batch(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    x, y = batch()
    manual_seed(0)
    whole = Net()
    losses = train(whole, x, y)
    expected = whole.state_dict()
    for way in WAYS:
        seen = got[way]
        if way != "NO_SHARD":  # the two ranks' shards hold every value once (and FSDP1's
            total = sum(v.size for v in expected.values())  # flat padding: one per unit)
            assert total <= sum(seen["held"]) <= total + 3, way
            assert abs(seen["held"][0] - seen["held"][1]) <= 8, way
        for rank in range(2):
            mean = np.mean([seen["losses"][r] for r in range(2)], axis=0)
            np.testing.assert_allclose(mean, losses, rtol=1e-5, err_msg=way)
            for name, value in expected.items():
                np.testing.assert_allclose(seen["state"][rank][name], value, rtol=2e-5,
                                           atol=2e-6, err_msg=f"{way} {name}")  # fmt: skip
    assert got["NO_SHARD"]["held"] == [sum(v.size for v in expected.values())] * 2
    manual_seed(0)
    plain = Deep()
    deep_losses = train(plain, x, y)
    for way in DEEP_WAYS:  # nested units over two ranks: one process's steps, calls as alone
        runs = [got["deep"][rank][way] for rank in range(2)]
        mean = np.mean([losses for losses, _, _ in runs], axis=0)
        np.testing.assert_allclose(mean, deep_losses, rtol=1e-5, err_msg=way)
        for _, calls, state in runs:
            assert calls == expected_calls(way), way
            for name, value in plain.state_dict().items():
                np.testing.assert_allclose(state[name], value, rtol=2e-5, atol=2e-6,
                                           err_msg=f"{way} {name}")  # fmt: skip
    # FULL_SHARD frees each unit's gathered parameters after its forward (a nested unit's
    # too) but the root's; SHARD_GRAD_OP keeps them for backward; fully_shard's True frees
    # the root's as well
    for seen in got["memory"]:
        for way, (after_forward, after_backward, padded, root, shards) in seen.items():
            model = Deep() if way.startswith("deep ") else Net(blocks=4)
            whole = 4 * sum(v.size for v in model.state_dict().values())
            assert whole <= padded <= whole * 1.1 and shards < 0.6 * whole, way
            kept = {"SHARD_GRAD_OP": padded, "fully_shard_kept": padded, "fully_shard_freed": 0}
            assert 0 < root < padded, way
            assert after_forward == kept.get(way.removeprefix("deep "), root), way
            assert after_backward == 0, way
    both = [sent(r, np.float64) for r in range(2)]
    for rank, seen in enumerate(got["collectives"]):  # reduce-scatter: all-reduce's block
        for key, value in seen.items():
            if isinstance(key, tuple):
                scattered, reduced = value
                assert scattered.dtype == np.dtype(key[0]) and scattered.shape == (3,), key
                np.testing.assert_allclose(scattered, reduced, rtol=1e-3, err_msg=str(key))
        block = slice(3 * rank, 3 * rank + 3)
        np.testing.assert_allclose(seen["tensor"], (both[0] + both[1])[block] / 2, rtol=1e-6)
        np.testing.assert_allclose(seen["max"], np.maximum(both[0], both[1])[block], rtol=1e-6)
        np.testing.assert_allclose(seen["gathered"], [both[0][:3], both[1][:3]], rtol=1e-6)


MEMORY_WAYS = ("FULL_SHARD", "SHARD_GRAD_OP", "fully_shard", "fully_shard_kept",
               "fully_shard_freed")  # fmt: skip


def memory() -> dict:
    """Bytes of gathered parameters alive after a forward of a model of 4 units (and 1 for
    the rest, the root), and after its backward, beside the whole model's, the root unit's
    and the shards' bytes."""
    x, _ = batch()
    out = {}
    models = [(way, functools.partial(wrapped, way, blocks=4)) for way in MEMORY_WAYS]
    for way, make in models + [(f"deep {way}", functools.partial(deep, way)) for way in DEEP_WAYS]:
        model = make()
        gc.collect()
        before = gathered_bytes()
        loss = model(Tensor(x)).sum()
        gc.collect()
        after_forward = gathered_bytes() - before
        loss.backward()
        del loss
        gc.collect()
        padded = sum(s.k * s.parts * 4 for _, u in units_of(model) for s in u.shards)
        root = sum(s.k * s.parts * 4 for name, u in units_of(model) if not name for s in u.shards)
        shards = sum(p.size * 4 for p in model.parameters())
        out[way] = (after_forward, gathered_bytes() - before, padded, root, shards)
    return out


def sent(rank: int, dtype) -> np.ndarray:
    """What rank ``rank`` sends to a reduce-scatter: 2 blocks of 3 values."""
    return (np.arange(6) * (rank + 1) + 0.5 * rank).astype(dtype)


def collectives(rank: int) -> dict:
    """The World's reduce-scatter beside its all-reduce and torch's calls, on this rank."""
    world = world_module.init()
    out = {}
    for dtype in (np.float32, np.float64, np.float16, np.int64):
        for mean in (False, True) if dtype != np.int64 else (False,):
            got = world.reduce_scatter(sent(rank, dtype).reshape(2, 3), mean=mean)
            whole = world.all_reduce(sent(rank, dtype).astype(np.float64), mean=mean)
            out[np.dtype(dtype).name, mean] = (got, whole[3 * rank : 3 * rank + 3])
    mine = Tensor(np.zeros(3, np.float32))
    dist.reduce_scatter_tensor(mine, Tensor(sent(rank, np.float32)), op=dist.ReduceOp.AVG)
    out["tensor"] = mine.numpy().copy()
    parts = [Tensor(block) for block in sent(rank, np.float32).reshape(2, 3)]
    dist.reduce_scatter(mine, parts, op=dist.ReduceOp.MAX)
    out["max"] = mine.numpy().copy()
    both = Tensor(np.zeros((2, 3), np.float32))
    dist.all_gather_into_tensor(both, Tensor(sent(rank, np.float32)[:3]))
    out["gathered"] = both.numpy().copy()
    return out


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    x, y = batch()
    rows = slice(4 * rank, 4 * rank + 4)
    seen = {}
    for way in WAYS:
        model = wrapped(way)
        held = sum(p.size for p in model.parameters())
        losses = train(model, x[rows], y[rows])
        if way == "fully_shard":
            options = StateDictOptions(full_state_dict=True)
            state = get_model_state_dict(model, options=options)
        else:
            state = model.state_dict()
        seen[way] = {"held": held, "losses": losses, "state": state}
    seen["deep"] = deep_runs(x[rows], y[rows])
    seen["collectives"] = collectives(rank)
    seen["memory"] = memory()
    write_from_rank_0(seen, out, merge)


DEEP_WAYS = ("FULL_SHARD", "fully_shard_freed")


def deep_runs(x, y) -> dict:
    """{way: (losses, forward calls, the full state)} of three-level models on this rank's
    half of the batch."""
    out = {}
    for way in DEEP_WAYS:
        model = deep(way)
        out[way] = (*counted_calls(model, x, y), full_state(model))
    return out


def merge(everything: list) -> dict:
    """The ranks' findings by key, each way's by its own keys: lists indexed by rank."""
    merged = by_key(everything)
    for way in WAYS:
        merged[way] = by_key(merged[way])
    return merged


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
