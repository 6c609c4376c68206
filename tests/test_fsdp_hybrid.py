"""HYBRID_SHARD and HSDP (tricycle/parallel/fsdp.py, fsdp2.py) on sub-groups of the World
(tricycle/parallel/subgroups.py, device_mesh.py): four ranks under mpiexec on a (2, 2) mesh
("replicate", "shard"), each on a quarter of the batch, shard every parameter within their
pair and average the gradients over all four, taking the steps of one process on the whole
batch (AdamW, Linear layers with LayerNorm): FSDP1's HYBRID_SHARD by the mesh and by torch's
(intra, inter) pair, _HYBRID_SHARD_ZERO2, HYBRID_SHARD by the machine (one machine of four
here), fully_shard on the 2-D mesh, and FULL_SHARD within one pair (that pair's steps on its
half of the batch); a distributed checkpoint of HYBRID_SHARD's pieces loads into HSDP's.
The mesh's groups and their collectives are checked against what the World's ranks hold; a
world of one checks the groups of one rank and the refusals (and, on a GPU, trains there).

Run as a script (``mpiexec -n 4 python tests/test_fsdp_hybrid.py OUT``) this file is the
ranks' program: rank 0 pickles what the four ranks saw to OUT."""

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.distributed.checkpoint as dcp
import tricycle.nn as nn
import tricycle.optim as optim
from tests.multirank import by_key, needs_gpus, run_ranks, world_of_one, write_from_rank_0  # noqa: F401
from tests.test_distributed import needs_mpi
from tests.test_fsdp import STEPS, Block, Net, batch, full_state, train
from tricycle import backend
from tricycle.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict
from tricycle.distributed.device_mesh import init_device_mesh
from tricycle.distributed.fsdp import FullyShardedDataParallel as FSDP
from tricycle.distributed.fsdp import ModuleWrapPolicy, ShardingStrategy, fully_shard
from tricycle.parallel import distributed as world_module
from tricycle.parallel.engines import DistributedError
from tricycle.parallel.subgroups import group_of_one, new_groups
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

RANKS = 4
HYBRID = ShardingStrategy.HYBRID_SHARD
POLICY = ModuleWrapPolicy({Block})


def hybrid(way: str, mesh, seed: int = 0, device=None):
    """The model of ``way`` on the (replicate, shard) ``mesh`` (on GPU ``device``)."""
    manual_seed(seed)
    net = Net() if device is None else Net().to_gpu(device)
    if way == "fully_shard":  # FSDP2 on a 2-D mesh: HSDP
        for block in net.blocks:
            fully_shard(block, mesh=mesh)
        return fully_shard(net, mesh=mesh)
    groups = (mesh.get_group("shard"), mesh.get_group("replicate"))
    kwargs = {
        "mesh": dict(sharding_strategy=HYBRID, device_mesh=mesh),
        "intra_inter": dict(sharding_strategy=HYBRID, process_group=groups),
        "zero2": dict(sharding_strategy=ShardingStrategy._HYBRID_SHARD_ZERO2, device_mesh=mesh),
        "machines": dict(sharding_strategy=HYBRID),  # this machine's ranks shard
        "pair": dict(process_group=groups[0]),  # FULL_SHARD within the pair alone
    }[way]
    return FSDP(net, auto_wrap_policy=POLICY, **kwargs)


WAYS = ("mesh", "intra_inter", "zero2", "machines", "fully_shard", "pair")


# ====================================================================== a world of one
@pytest.mark.usefixtures("world_of_one")
def test_a_world_of_one_has_groups_of_one():
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("replicate", "shard"))
    assert mesh.get_group("shard") is None  # the World
    x, y = batch()
    manual_seed(0)
    expected = train(Net(), x, y)
    for way in WAYS:
        assert train(hybrid(way, mesh), x, y) == expected, way
    world = world_module.init()
    group = new_groups(world, [[0]])
    assert (group.rank, group.size(), group.ranks) == (0, 1, (0,))
    np.testing.assert_array_equal(group.all_gather(np.arange(3.0)), [[0.0, 1.0, 2.0]])
    assert group.all_reduce(2.5) == 2.5 and group.all_gather_object("a") == ["a"]


@pytest.mark.usefixtures("world_of_one")
def test_bad_hybrid_arguments_are_refused():
    mesh = init_device_mesh("cpu", (1,))
    with pytest.raises(ValueError, match="HYBRID_SHARD needs a device_mesh of 2 dimensions"):
        FSDP(Net(), sharding_strategy=HYBRID, device_mesh=mesh)
    with pytest.raises(ValueError, match="Cannot pass both process_group and device_mesh"):
        FSDP(Net(), sharding_strategy=HYBRID, device_mesh=mesh, process_group=(None, None))
    with pytest.raises(ValueError, match="mesh must be 1-D"):
        fully_shard(Net(), mesh=init_device_mesh("cpu", (1, 1, 1)))
    with pytest.raises(DistributedError, match="must hold each of the 1 ranks"):
        new_groups(world_module.init(), [[0], [1]])


# ====================================================================== four ranks
@needs_mpi
def test_four_ranks_shard_in_pairs_and_take_the_steps_of_one_process(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=RANKS, timeout=180.0)
    got = pickle.loads(out.read_bytes())
    x, y = batch()
    manual_seed(0)
    whole = Net()
    losses = train(whole, x, y)
    expected = whole.state_dict()
    total = sum(v.size for v in expected.values())
    for way in WAYS:
        seen = got[way]
        pairs = [(0, 1), (2, 3)] if way != "machines" else [(0, 1, 2, 3)]
        for pair in pairs:  # each shard group holds every value once (and FSDP1's padding:
            padding = 3 * (len(pair) - 1)  # fewer than one value a rank in each of 3 units)
            assert total <= sum(seen["held"][r] for r in pair) <= total + padding, way
        if way == "pair":  # FULL_SHARD within a pair: that pair's steps on its half
            continue
        mean = np.mean(seen["losses"], axis=0)  # the mean of four quarters: the whole's
        np.testing.assert_allclose(mean, losses, rtol=1e-5, err_msg=way)
        for rank in range(RANKS):
            for name, value in expected.items():
                np.testing.assert_allclose(seen["state"][rank][name], value, rtol=2e-5,
                                           atol=2e-6, err_msg=f"{way} {name}")  # fmt: skip
    for half in range(2):  # the pair of ranks 2h, 2h + 1 trained alone on rows 4h to 4h + 4
        manual_seed(0)
        alone = Net()
        pair_losses = train(alone, x[4 * half : 4 * half + 4], y[4 * half : 4 * half + 4])
        for rank in (2 * half, 2 * half + 1):
            mean = np.mean([got["pair"]["losses"][r] for r in (2 * half, 2 * half + 1)], axis=0)
            np.testing.assert_allclose(mean, pair_losses, rtol=1e-5)
            for name, value in alone.state_dict().items():
                np.testing.assert_allclose(got["pair"]["state"][rank][name], value, rtol=2e-5,
                                           atol=2e-6, err_msg=f"pair {name}")  # fmt: skip
    manual_seed(0)
    plain = Net()  # the gradient norm of one process on the whole batch
    nn.MSELoss()(plain(Tensor(x)), Tensor(y)).backward()
    norm = np.sqrt(sum(float((p.grad.numpy() ** 2).sum()) for p in plain.parameters()))
    for rank in range(RANKS):
        np.testing.assert_allclose(got["norm"][rank], norm, rtol=1e-5)
        synced = got["synced"][rank]  # sync_module_states: rank 0's weights everywhere
        for name, value in expected_initial().items():
            np.testing.assert_array_equal(synced[name], value, err_msg=name)
        shard_pair, replicas = (2 * (rank // 2), 2 * (rank // 2) + 1), (rank % 2, rank % 2 + 2)
        groups = got["groups"][rank]
        assert groups["ranks"] == (shard_pair, replicas)
        assert groups["local"] == (rank % 2, rank // 2) == groups["coordinate"][::-1]
        assert groups["sum"] == sum(r + 1 for r in shard_pair)  # over the pair alone
        np.testing.assert_array_equal(groups["gathered"], [[r, 10 * r] for r in replicas])
        sent = [np.arange(4.0) * (r + 1) for r in replicas]  # reduce-scatter over replicas
        np.testing.assert_allclose(groups["scattered"], (sent[0] + sent[1])[2 * (rank // 2) :][:2])
        assert groups["broadcast"] == shard_pair[0] and groups["objects"] == list(replicas)
        assert groups["dtensor"] == (2, rank % 2)
        assert groups["partner"] == shard_pair[1 - rank % 2]
        np.testing.assert_array_equal(groups["alone"], [rank, 7])
        for name, value in got["mesh"]["state"][0].items():
            np.testing.assert_array_equal(got["loaded"][rank][name], value, err_msg=name)


def expected_initial() -> dict:
    manual_seed(0)
    return Net().state_dict()


def groups_seen(mesh, rank: int) -> dict:
    """This rank's groups of the mesh and the results of their collectives."""
    shard, replicas = mesh.group("shard"), mesh.group("replicate")
    out = {"ranks": (shard.ranks, replicas.ranks), "coordinate": mesh.get_coordinate()}
    out["local"] = (mesh.get_local_rank("shard"), mesh["replicate"].get_local_rank())
    out["sum"] = shard.all_reduce(float(rank + 1), mean=False)
    out["gathered"] = replicas.all_gather(np.array([rank, 10 * rank]))
    out["scattered"] = replicas.reduce_scatter(np.arange(4.0) * (rank + 1))
    out["broadcast"] = int(shard.broadcast(np.array([rank]), 0)[0])
    out["objects"] = replicas.all_gather_object(rank)
    theirs = np.empty(1)  # a message to the other rank of the pair, by its rank there
    sent = shard.start_send(np.array([float(rank)]), 1 - shard.rank)
    shard.wait(shard.start_recv(theirs, 1 - shard.rank), "the partner's message")
    shard.wait(sent, "the message to the partner")
    one = group_of_one(world_module.init())  # this rank alone, messaging itself
    one.wait(one.start_send(np.array([rank, 7]), 0, tag=5), "a message to itself")
    out["alone"] = np.empty(2, np.int64)
    one.recv(out["alone"], 0, tag=5)
    out["partner"] = float(theirs[0])
    out["dtensor"] = mesh.group_of(1)  # DTensor's (size, index) along "shard": its group's
    return out


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
    x, y = batch()
    rows = slice(2 * rank, 2 * rank + 2)
    seen, trained = {}, {}
    for way in WAYS:
        model = trained[way] = hybrid(way, mesh)
        held = sum(p.size for p in model.parameters())
        mine = slice(4 * (rank // 2), 4 * (rank // 2) + 4) if way == "pair" else rows
        losses = train(model, x[mine], y[mine])
        seen[way] = {"held": held, "losses": losses, "state": full_state(model)}
    # a distributed checkpoint of the replicas' pieces (each saved once), loaded into HSDP's
    # row shards: the trained weights
    ckpt = Path(out).parent / "ckpt"
    dcp.save({"model": get_model_state_dict(trained["mesh"])}, checkpoint_id=ckpt)
    other = hybrid("fully_shard", mesh, seed=5)
    state = {"model": get_model_state_dict(other)}
    dcp.load(state, checkpoint_id=ckpt)
    set_model_state_dict(other, state["model"])
    seen["loaded"] = full_state(other)
    model = hybrid("mesh", mesh)
    nn.MSELoss()(model(Tensor(x[rows])), Tensor(y[rows])).backward()
    seen["norm"] = float(model.clip_grad_norm_(1e9))
    manual_seed(rank)  # each rank its own weights, rank 0's after the wrap
    synced = FSDP(Net(), sharding_strategy=HYBRID, device_mesh=mesh, auto_wrap_policy=POLICY,
                  sync_module_states=True)  # fmt: skip
    seen["synced"] = full_state(synced)
    seen["groups"] = groups_seen(mesh, rank)
    write_from_rank_0(seen, out, merge)


def merge(everything: list) -> dict:
    merged = by_key(everything)
    for way in WAYS:
        merged[way] = by_key(merged[way])
    return merged


def train_on_gpu(model, x, y, device) -> list:
    """tests.test_fsdp's ``train`` with the batch on GPU ``device``."""
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    losses = []
    for _ in range(STEPS):
        loss = nn.MSELoss()(model(Tensor(x).to_gpu(device)), Tensor(y).to_gpu(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.usefixtures("world_of_one")
def test_a_world_of_one_on_a_gpu_trains_hybrid_as_on_the_host():
    x, y = batch()
    manual_seed(0)
    expected = train(Net(), x, y)
    dist.destroy_process_group()
    dist.init_process_group("nccl")
    world = world_module.init()
    mesh = init_device_mesh("cuda", (1, 1), mesh_dim_names=("replicate", "shard"))
    for way in ("mesh", "fully_shard"):
        model = hybrid(way, mesh, device=world.device)
        np.testing.assert_allclose(train_on_gpu(model, x, y, world.device), expected, rtol=1e-4)
        assert all(p.on_gpu for p in model.parameters())
    cupy = backend.cupy()  # a group of one rank: its collectives on GPU arrays, no NCCL
    one = group_of_one(world)
    np.testing.assert_array_equal(one.all_gather(cupy.arange(3.0)).get(), [[0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(one.reduce_scatter(cupy.arange(4.0), mean=True).get(),
                                  np.arange(4.0))  # fmt: skip
    assert one._gpu is None


@needs_gpus(RANKS)
@needs_mpi
def test_four_gpus_shard_in_pairs_over_nccl_sub_groups(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=RANKS, timeout=300.0, args=("gpu",))
    got = pickle.loads(out.read_bytes())
    x, y = batch()
    manual_seed(0)
    whole = Net()
    losses = train(whole, x, y)
    np.testing.assert_allclose(np.mean(got["losses"], axis=0), losses, rtol=1e-4)
    for state in got["state"]:
        for name, value in whole.state_dict().items():
            np.testing.assert_allclose(state[name], value, rtol=1e-4, atol=1e-5, err_msg=name)


def gpu_ranks(out: str) -> None:
    """HYBRID_SHARD on four GPUs: the groups' collectives through NCCL communicators."""
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("replicate", "shard"))
    x, y = batch()
    rows = slice(2 * rank, 2 * rank + 2)
    device = world_module.init().device
    model = hybrid("mesh", mesh, device=device)
    seen = {"losses": train_on_gpu(model, x[rows], y[rows], device), "state": full_state(model)}
    write_from_rank_0(seen, out, by_key)


if __name__ == "__main__":
    with world_module.fail_together():
        if sys.argv[2:] == ["gpu"]:
            gpu_ranks(sys.argv[1])
        else:
            ranks(sys.argv[1])
