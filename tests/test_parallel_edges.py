"""Edge cases of the parallel layer at two CPU ranks (a review of round 42's work):
FSDP's ``clip_grad_norm_`` for every sharding strategy against torch's
``clip_grad_norm_`` on the whole batch (a flat shard of an odd size, a layer without a
gradient; NO_SHARD counted once, not once per rank), FSDP1 and ``fully_shard`` refusing
ranks whose modules differ (their shards would not line up), a ``(1, 2)`` mesh's
one-rank dimension (``mesh["dp"]``), a mesh listing the ranks out of order refused (shards
go by the World's rank), and ``recv_object_list`` from any rank (torch's ``src=None``).

Run as a script (``mpiexec -n 2 python tests/test_parallel_edges.py OUT WEIGHTS``, by
``tests.multirank.run_ranks``) this file is the ranks' program: rank 0 pickles what both
ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle
import tricycle.distributed as dist
from tests.multirank import alone, ranks_findings, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tricycle.distributed.device_mesh import DeviceMesh, init_device_mesh
from tricycle.distributed.fsdp import FullyShardedDataParallel as FSDP
from tricycle.distributed.fsdp import ShardingStrategy, fully_shard
from tricycle.parallel import distributed as world_module

STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")
NORMS = (2.0, float("inf"))


def net(lib):
    """The same small model in torch or tricycle: 21 learned values (an odd flat shard),
    and a layer the forward never uses (no gradient)."""

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.unused, self.b = (
                lib.nn.Linear(3, 4),
                lib.nn.Linear(2, 3),
                lib.nn.Linear(4, 1),
            )

        def forward(self, x):
            return self.b(self.a(x).tanh())

    return Net()


def batch():
    rng = np.random.default_rng(1)
    return rng.normal(size=(6, 3)).astype(np.float32), rng.normal(size=(6, 1)).astype(np.float32)


def torch_net():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch, net(torch)


def test_a_one_rank_mesh_and_an_ordered_mesh_in_a_world_of_one():
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
    assert mesh["dp"].size() == 1 and mesh["dp"].get_local_rank() == 0
    assert DeviceMesh("cpu", [[0]]).shape == (1, 1)
    with pytest.raises(RuntimeError, match="must hold each of the 1 ranks"):
        DeviceMesh("cpu", [1])


@needs_mpi
def test_two_ranks_clip_refuse_and_mesh_as_torch(tmp_path):
    torch, whole = torch_net()
    x, y = batch()
    weights = tmp_path / "weights.npz"
    np.savez(weights, **{k: v.numpy() for k, v in whole.state_dict().items()})
    got = ranks_findings(__file__, tmp_path, args=(weights,))
    loss = torch.nn.functional.mse_loss(whole(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    grads = [p.grad for p in whole.parameters() if p.grad is not None]
    for norm_type in NORMS:
        expected = float(torch.nn.utils.get_total_norm(grads, norm_type))
        for way in STRATEGIES:
            for rank in range(2):
                assert got[rank]["norms"][way, norm_type] == pytest.approx(expected, rel=1e-5), (
                    way,
                    norm_type,
                )
    clipped = torch.nn.utils.clip_grad_norm_(whole.parameters(), 0.1)
    assert float(clipped) == pytest.approx(got[0]["norms"]["NO_SHARD", 2.0], rel=1e-5)
    for way in STRATEGIES:  # after clipping to 0.1, the gradients' norm over both ranks
        assert got[0]["clipped"][way] == pytest.approx(0.1, rel=1e-4), way
    for rank in range(2):
        seen = got[rank]
        for owner in ("FullyShardedDataParallel", "fully_shard"):
            assert seen["refused", owner].startswith(f"{owner}: rank {rank}'s parameters differ")
            assert "every rank must wrap the same module" in seen["refused", owner]
        assert seen["dp"] == (1, 0, (1,)) and seen["tp"] == (2, rank, (2,))
        assert "orders the ranks otherwise" in seen["permuted"]
    assert got[1]["objects"] == (["hello", {"step": 3}], 0)


# ====================================================================== the ranks' program
def norms(rank: int, weights: dict) -> tuple:
    """{(strategy, norm type): FSDP's total gradient norm}, {strategy: the norm after
    clipping to 0.1 (summed over the ranks' shards, NO_SHARD's once)}; the model holds
    torch's ``weights``."""
    x, y = batch()
    rows = slice(3 * rank, 3 * rank + 3)
    found, clipped = {}, {}
    for way in STRATEGIES:
        for norm_type in NORMS:
            model = net(tricycle)
            tricycle.nn.from_torch(model, weights)
            model = FSDP(model, sharding_strategy=ShardingStrategy[way])
            out = model(tricycle.tensor(x[rows]))
            loss = tricycle.nn.functional.mse_loss(out, tricycle.tensor(y[rows]))
            loss.backward()
            max_norm = 0.1 if norm_type == 2.0 else 1e9
            found[way, norm_type] = float(model.clip_grad_norm_(max_norm, norm_type).numpy())
            if norm_type == 2.0:
                squares = sum(float((p.grad.numpy() ** 2).sum()) for p in model.parameters()
                              if p.grad is not None)  # fmt: skip
                world = world_module.init()
                total = squares if way == "NO_SHARD" else world.all_reduce(squares, mean=False)
                clipped[way] = total**0.5
    return found, clipped


def refusals(rank: int) -> dict:
    """Modules that differ between the ranks, refused on every rank (no collective left
    half done: the world goes on)."""
    seen = {}
    for owner, wrap in (("FullyShardedDataParallel", FSDP), ("fully_shard", fully_shard)):
        model = tricycle.nn.Sequential(
            tricycle.nn.Linear(3, 4 + rank), tricycle.nn.Linear(4 + rank, 1)
        )
        try:
            wrap(model)
        except ValueError as error:
            seen["refused", owner] = str(error)
    return seen


def meshes(rank: int) -> dict:
    mesh = init_device_mesh("cpu", (1, 2), mesh_dim_names=("dp", "tp"))
    seen = {
        name: (mesh[name].size(), mesh[name].get_local_rank(), mesh[name].shape)
        for name in ("dp", "tp")
    }
    try:
        DeviceMesh("cpu", [1, 0])
    except NotImplementedError as error:
        seen["permuted"] = str(error)
    return seen


def ranks(out: str, weights: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    found, clipped = norms(rank, dict(np.load(weights)))
    seen = {"norms": found, "clipped": clipped, **refusals(rank), **meshes(rank)}
    if rank == 0:
        dist.send_object_list(["hello", {"step": 3}], dst=1)
    else:
        objects = [None, None]
        sender = dist.recv_object_list(objects)  # from any rank
        seen["objects"] = (objects, sender)
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1], sys.argv[2])
