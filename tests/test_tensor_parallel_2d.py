"""Two-dimensional parallelism (tricycle/parallel/device_mesh.py, dtensor.py, dtensor_ops.py,
loss_parallel.py on the World's sub-groups): a (dp, tp) mesh whose DTensors move along each
dimension through that dimension's group, and torch's 2-D recipe, tensor parallelism
(``parallelize_module`` over ``mesh["tp"]``) with data parallelism over ``mesh["dp"]``
(DistributedDataParallel given the dp group, or gradients averaged by hand).

Four CPU ranks under mpiexec make a (2, 2) mesh: a DTensor sharded on both dimensions
(uneven pieces) moves to every other placement of either dimension, Partial sums over each
dimension and over both, and its gradient comes back to the shards, all against numpy's
pieces of the whole; ``distribute_tensor`` takes its source per dimension (its group's rank
``src_data_rank``) and ``from_local(run_check=True)`` broadcasts along the replicating
dimension alone; loss_parallel's cross-entropy of class-sharded logits on "tp" equals the
whole's. An MLP (colwise then rowwise), the MLP under sequence parallelism and an attention
block, each over "tp", trained on "dp"'s halves of the batch take the steps of one process
on the whole batch (losses, outputs, parameters). A world of one runs the same on a (1, 1)
mesh.

Run as a script (``mpiexec -n 4 python tests/test_tensor_parallel_2d.py OUT``) this file is
the ranks' program: rank 0 pickles what the four ranks saw to OUT."""

import pickle
import sys

import numpy as np

import tricycle.distributed as dist
import tricycle.nn.functional as tF
import tricycle.optim as optim
from tests.multirank import needs_gpus, run_ranks, write_from_rank_0
from tests.test_distributed import needs_mpi
from tests.test_tensor_parallel import batch, build, full, parallel
from tricycle import backend
from tricycle.distributed.device_mesh import init_device_mesh
from tricycle.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from tricycle.distributed.tensor.parallel import loss_parallel
from tricycle.parallel import distributed as world_module
from tricycle.parallel.dtensor_ops import piece
from tricycle.tensor import Tensor

RANKS, STEPS = 4, 3
WHOLE = np.arange(35.0).reshape(5, 7)  # uneven over 2 ranks on both dimensions
MOVES = {  # name: the target placements (dp, tp) from (Shard(0), Shard(1))
    "R,S1": (Replicate(), Shard(1)),
    "S0,R": (Shard(0), Replicate()),
    "S1,S0": (Shard(1), Shard(0)),
    "R,R": (Replicate(), Replicate()),
    "S1,R": (Shard(1), Replicate()),
    "S0,S0": (Shard(0), Shard(0)),  # nested: rows split by dp, each piece by tp
    "R,S0": (Replicate(), Shard(0)),
}
WAYS = ("mlp", "sequence", "attention", "mlp averaged")


def expected_local(placements, shape: tuple, coordinate: tuple, whole=WHOLE) -> np.ndarray:
    """numpy's piece of ``whole`` that the rank at ``coordinate`` of a ``shape`` mesh holds."""
    index = [slice(None)] * whole.ndim
    for mesh_dim, p in enumerate(placements):
        if p.is_shard():
            lo = index[p.dim].start or 0
            length = len(range(*index[p.dim].indices(whole.shape[p.dim])))
            part = piece(length, shape[mesh_dim], coordinate[mesh_dim])
            index[p.dim] = slice(lo + part.start, lo + part.stop)
    return whole[tuple(index)]


# ====================================================================== the ranks' program
def dtensor_moves(mesh, rank: int) -> dict:
    """A DTensor of the (dp, tp) mesh moved along each dimension."""
    seen = {}
    leaf = Tensor(WHOLE * (rank + 1), requires_grad=True)  # rank 0's is the whole
    d = distribute_tensor(leaf, mesh, [Shard(0), Shard(1)])
    seen["S0,S1"] = d.to_local().numpy().copy()
    for name, target in MOVES.items():
        seen[name] = d.redistribute(placements=target).to_local().numpy().copy()
    nested = d.redistribute(placements=MOVES["S0,S0"])
    for name, target in (*((n, MOVES[n]) for n in ("S1,S0", "R,S0")), ("S0,S1", d.placements)):
        local = nested.redistribute(placements=target).to_local()  # out of the nested shard
        seen[f"S0,S0 -> {name}"] = local.numpy().copy()
    weights = np.cos(WHOLE)
    whole = d.redistribute(placements=[Replicate(), Replicate()]).to_local()
    (whole * Tensor(weights)).sum().backward()
    seen["grad"] = d.grad.to_local().numpy().copy()  # its shard of the weights
    mine = Tensor(WHOLE * (rank + 1))  # the sum over both dimensions: 1 + 2 + 3 + 4
    both = DTensor.from_local(mine, mesh, [Partial(), Partial()])
    seen["P,P -> R,S0"] = both.redistribute(placements=[Replicate(), Shard(0)]).to_local().numpy()
    coordinate = mesh.get_coordinate()
    along_tp = DTensor.from_local(Tensor(WHOLE * (coordinate[1] + 1)), mesh,
                                  [Replicate(), Partial()])  # fmt: skip
    seen["R,P full"] = along_tp.full_tensor().numpy().copy()  # (1 + 2): over "tp" alone
    columns = expected_local((Replicate(), Shard(1)), mesh.shape, coordinate)  # uneven: shape
    along_dp = DTensor.from_local(Tensor(columns * (coordinate[0] + 1)), mesh,
                                  [Partial("avg"), Shard(1)], shape=WHOLE.shape)  # fmt: skip
    seen["Pavg,S1 -> S0,S1"] = along_dp.redistribute(
        placements=[Shard(0), Shard(1)]).to_local().numpy().copy()  # fmt: skip
    return seen


def sources(mesh, rank: int) -> dict:
    """Whose values ``distribute_tensor`` and ``from_local(run_check=True)`` take."""
    mine = Tensor(WHOLE + rank)
    seen = {f"src {s}": distribute_tensor(mine, mesh, [Replicate(), Replicate()],
                                          src_data_rank=s).to_local().numpy().copy()
            for s in (0, mesh.size(0) - 1, None)}  # fmt: skip
    seen["tp mesh"] = distribute_tensor(mine, mesh["tp"], [Replicate()]).to_local().numpy()
    tp = mesh.get_local_rank("tp")
    local = Tensor(expected_local([Shard(1)], (mesh.size(1),), (tp,)) + rank)
    checked = DTensor.from_local(local, mesh, [Replicate(), Shard(1)], run_check=True)
    seen["run_check"] = checked.to_local().numpy().copy()
    return seen


def loss_values(mesh) -> dict:
    """loss_parallel's cross-entropy of logits sharded over their classes on "tp"."""
    rng = np.random.default_rng(4)
    logits, ids = rng.standard_normal((6, 5)), rng.integers(0, 5, 6)
    d = distribute_tensor(Tensor(logits, requires_grad=True), mesh, [Replicate(), Shard(1)])
    with loss_parallel():
        loss = tF.cross_entropy(d, Tensor(ids))
    loss.backward()
    return {"loss": float(loss.full_tensor().numpy()), "grad": d.grad.full_tensor().numpy()}


def train_2d(way: str, mesh) -> dict:
    """``way``'s model over "tp", data parallel over "dp": DDP over the dp group, or (``mlp
    averaged``) the gradients averaged over it by hand; each dp index on its half."""
    kind = way.split()[0]
    dp_group = mesh.get_group("dp")
    model = parallel(kind, mesh["tp"])
    if way != "mlp averaged":
        model = dist.DistributedDataParallel(model, process_group=dp_group)
    x, y = batch(kind)
    half = slice(mesh.get_local_rank("dp"), None, mesh.size(0))  # (2 samples: one each)
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    seen = {"losses": []}
    for step in range(STEPS):
        out = model(Tensor(x[half], requires_grad=False))
        loss = ((out - Tensor(y[half], requires_grad=False)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        if way == "mlp averaged":
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.AVG, group=dp_group)
        opt.step()
        seen["losses"].append(float(loss))
        if step == 0:
            seen["out"] = out.numpy().copy()
    seen["state"] = {n.removeprefix("module."): full(p) for n, p in model.named_parameters()}
    return seen


def program(mesh) -> dict:
    rank = dist.get_rank()
    seen = {"coordinate": mesh.get_coordinate(), "moves": dtensor_moves(mesh, rank)}
    seen["sources"] = sources(mesh, rank)
    seen["loss"] = loss_values(mesh)
    seen.update({way: train_2d(way, mesh) for way in WAYS})
    return seen


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    write_from_rank_0(program(mesh), out)


# ====================================================================== the checks
def check(seen: dict, rank: int, shape: tuple) -> None:
    """What the rank at ``seen["coordinate"]`` of a ``shape`` (dp, tp) mesh saw, against
    numpy's pieces and one process on the whole batch."""
    coordinate, what = seen["coordinate"], f"rank {rank}"
    moves = seen["moves"]
    sharded = expected_local((Shard(0), Shard(1)), shape, coordinate)
    np.testing.assert_array_equal(moves["S0,S1"], sharded, err_msg=what)
    for name, target in MOVES.items():
        np.testing.assert_array_equal(moves[name], expected_local(target, shape, coordinate),
                                      err_msg=f"{what} {name}")  # fmt: skip
    for name in ("S1,S0", "R,S0"):
        np.testing.assert_array_equal(moves[f"S0,S0 -> {name}"], moves[name], err_msg=what)
    np.testing.assert_array_equal(moves["S0,S0 -> S0,S1"], sharded, err_msg=what)
    weights = expected_local((Shard(0), Shard(1)), shape, coordinate, np.cos(WHOLE))
    np.testing.assert_allclose(moves["grad"], weights, err_msg=what)
    n = shape[0] * shape[1]
    total = n * (n + 1) / 2  # the ranks' factors summed over both dimensions
    np.testing.assert_allclose(moves["P,P -> R,S0"], expected_local(
        (Replicate(), Shard(0)), shape, coordinate, total * WHOLE), err_msg=what)  # fmt: skip
    tp_total = shape[1] * (shape[1] + 1) / 2
    np.testing.assert_allclose(moves["R,P full"], tp_total * WHOLE, err_msg=what)
    dp_mean = (shape[0] + 1) / 2
    np.testing.assert_allclose(moves["Pavg,S1 -> S0,S1"], expected_local(
        (Shard(0), Shard(1)), shape, coordinate, dp_mean * WHOLE), err_msg=what)  # fmt: skip
    sources_seen = seen["sources"]
    np.testing.assert_array_equal(sources_seen["src 0"], WHOLE)  # the rank at (0, 0)
    s = shape[0] - 1  # (a square mesh) the rank at (s, s): rank s * tp + s
    np.testing.assert_array_equal(sources_seen[f"src {s}"], WHOLE + s * shape[1] + s)
    np.testing.assert_array_equal(sources_seen["src None"], WHOLE + rank)  # its own
    tp_first = coordinate[0] * shape[1]  # the first rank of this rank's "tp" row
    np.testing.assert_array_equal(sources_seen["tp mesh"], WHOLE + tp_first)
    dp_first = coordinate[1]  # the rank at dp index 0 of this rank's "dp" column
    np.testing.assert_array_equal(sources_seen["run_check"], expected_local(
        [Shard(1)], (shape[1],), (coordinate[1],)) + dp_first)  # fmt: skip
    rng = np.random.default_rng(4)
    logits, ids = rng.standard_normal((6, 5)), rng.integers(0, 5, 6)
    whole = Tensor(logits, requires_grad=True)
    loss = tF.cross_entropy(whole, Tensor(ids))
    loss.backward()
    np.testing.assert_allclose(seen["loss"]["loss"], float(loss.numpy()), rtol=1e-12)
    np.testing.assert_allclose(seen["loss"]["grad"], whole.grad.numpy(), rtol=1e-10, atol=1e-14)
    for way in WAYS:
        kind = way.split()[0]
        x, y = batch(kind)
        expected = one_process(kind, x, y)
        got = seen[way]
        np.testing.assert_allclose(got["out"], expected["out"][coordinate[0] :: shape[0]],
                                   rtol=1e-5, atol=1e-6, err_msg=f"{what} {way}")  # fmt: skip
        assert got["state"].keys() == expected["state"].keys(), way
        for name, value in expected["state"].items():
            np.testing.assert_allclose(got["state"][name], value, rtol=2e-5, atol=2e-6,
                                       err_msg=f"{what} {way} {name}")  # fmt: skip


def one_process(kind: str, x, y) -> dict:
    """The plain model of ``kind`` on the whole batch (its output at the first step, its
    parameters after the steps, its losses)."""
    model = build(kind)
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    seen = {"losses": []}
    for step in range(STEPS):
        out = model(Tensor(x, requires_grad=False))
        loss = ((out - Tensor(y, requires_grad=False)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        seen["losses"].append(float(loss))
        if step == 0:
            seen["out"] = out.numpy().copy()
    seen["state"] = {n: p.numpy().copy() for n, p in model.named_parameters()}
    return seen


def test_a_world_of_one_runs_the_2d_program_on_a_1_by_1_mesh():
    dist.destroy_process_group()
    dist.init_process_group("gloo")
    try:
        mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
        check(program(mesh), 0, (1, 1))
    finally:
        dist.destroy_process_group()


@needs_mpi
def test_four_ranks_on_a_2_by_2_mesh_equal_one_process(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=RANKS, timeout=180.0)
    got = pickle.loads(out.read_bytes())
    for rank, seen in enumerate(got):
        assert seen["coordinate"] == (rank // 2, rank % 2)
        check(seen, rank, (2, 2))
    for way in WAYS:  # the mean of the dp halves' losses: the whole batch's
        kind = way.split()[0]
        expected = one_process(kind, *batch(kind))["losses"]
        for tp in range(2):
            halves = [got[dp * 2 + tp][way]["losses"] for dp in range(2)]
            np.testing.assert_allclose(np.mean(halves, axis=0), expected, rtol=1e-5, err_msg=way)


# ====================================================================== GPUs
@needs_gpus(RANKS)
@needs_mpi
def test_four_gpus_train_tp_over_dp_as_one_process(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=RANKS, timeout=300.0, args=("gpu",))
    got = pickle.loads(out.read_bytes())
    x, y = batch("mlp")
    expected = one_process("mlp", x, y)
    for rank, seen in enumerate(got):
        assert seen["on gpu"]
        moved = expected_local(MOVES["S1,S0"], (2, 2), (rank // 2, rank % 2))
        np.testing.assert_allclose(seen["moved"], moved)
        for name, value in expected["state"].items():
            np.testing.assert_allclose(seen["state"][name], value, rtol=1e-4, atol=1e-5,
                                       err_msg=f"rank {rank} {name}")  # fmt: skip


def gpu_ranks(out: str) -> None:
    """The MLP over "tp", DDP over "dp", on four GPUs: the groups' NCCL communicators."""
    dist.init_process_group("nccl")
    device = world_module.init().device
    mesh = init_device_mesh("cuda", (2, 2), mesh_dim_names=("dp", "tp"))
    d = distribute_tensor(Tensor(WHOLE).to_gpu(device), mesh, [Shard(0), Shard(1)])
    seen = {"moved": backend.to_host_array(d.redistribute(placements=MOVES["S1,S0"])
                                           .to_local().array)}  # fmt: skip
    model = parallel("mlp", mesh["tp"]).to_gpu(device)
    model = dist.DistributedDataParallel(model, device_ids=[device],
                                         process_group=mesh.get_group("dp"))  # fmt: skip
    x, y = batch("mlp")
    half = slice(mesh.get_local_rank("dp"), None, 2)
    opt = optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
    for _ in range(STEPS):
        out = model(Tensor(x[half], requires_grad=False).to_gpu(device))
        loss = ((out - Tensor(y[half], requires_grad=False).to_gpu(device)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    seen["on gpu"] = all(p.on_gpu for p in model.parameters())
    seen["state"] = {n.removeprefix("module."): backend.to_host_array(p.full_tensor().array)
                     for n, p in model.named_parameters()}  # fmt: skip
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        if sys.argv[2:] == ["gpu"]:
            gpu_ranks(sys.argv[1])
        else:
            ranks(sys.argv[1])
