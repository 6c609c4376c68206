"""The parallel layer's edges at two CPU ranks (the parallel review's leftovers):
``World.all_gather`` of arrays whose sizes or dtypes differ between the ranks refused alike
on every rank (MPI cut or padded them silently), the differentiable ``reduce_scatter`` with
AVG against torch 2.13's at two gloo ranks (its backward ignores the op: AVG's gradient is
SUM's), ``batch_isend_irecv`` of non-contiguous tensors in one batch (on NCCL one group:
one message at a time could deadlock), and FSDP's ``sync_module_states`` refusing differing
modules before it broadcasts anything.

Run as a script this file is the ranks' program: ``mpiexec -n 2 python <this file> OUT``
(tricycle's ranks); torch's two gloo ranks run ``TORCH_RANK`` beside them, joined through a
FileStore."""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tricycle
import tricycle.distributed as dist
from tests.multirank import alone, by_key, run_ranks, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tricycle.distributed.fsdp import FullyShardedDataParallel as FSDP
from tricycle.parallel import distributed as world_module
from tricycle.parallel.engines import DistributedError


def test_a_world_of_one_gathers_without_the_size_exchange():
    world = world_module.init()
    np.testing.assert_array_equal(world.all_gather(np.arange(3.0)), [[0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(world.all_gather(np.arange(3.0), check=False), [[0, 1, 2]])


def start_torch_ranks(tmp_path) -> list:
    """Start torch's two gloo ranks (``TORCH_RANK``, importing torch alone: fast); then
    ``torch_ranks`` waits for them."""
    pytest.importorskip("torch")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    started = []
    for rank in range(2):
        out = tmp_path / f"torch{rank}.pkl"
        command = [sys.executable, "-c", TORCH_RANK, str(rank), str(tmp_path / "store"), str(out)]
        started.append((subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True), out))
    return started


def torch_ranks(started: list) -> list:
    """What torch's two ranks saw, indexed by rank."""
    for rank, _ in started:
        _, errors = rank.communicate(timeout=60)
        assert rank.returncode == 0, errors
    return [pickle.loads(out.read_bytes()) for _, out in started]


@needs_mpi
def test_two_ranks_refuse_mismatches_and_reduce_scatter_as_torch(tmp_path):
    started = start_torch_ranks(tmp_path)  # beside tricycle's ranks
    run_ranks(__file__, tmp_path / "ranks.pkl")
    seen = by_key(pickle.loads((tmp_path / "ranks.pkl").read_bytes()))
    for rank in range(2):
        size = seen["sizes"][rank]
        assert size.startswith("all_gather: the ranks' arrays differ (rank 0: 3 values of f4, "
                               "rank 1: 5 values of f4; this rank's has shape ")  # fmt: skip
        assert f"shape ({3 + 2 * rank},)" in size and "same shape and dtype" in size
        assert "rank 0: 4 values of f4, rank 1: 4 values of i4" in seen["dtypes"][rank]
        assert "the ranks' arrays differ" in seen["torch_api"][rank]
        np.testing.assert_array_equal(seen["after"][rank], [[0, 1], [1, 2]])  # the world goes on
        assert seen["sync"][rank].startswith(f"FullyShardedDataParallel: rank {rank}'s tensors "
                                             "differ from rank ")  # fmt: skip
        np.testing.assert_array_equal(seen["synced"][rank], seen["synced"][0])
        assert seen["batches"][rank] == [3]  # one batch of three messages
        assert seen["node_local_rank"][rank] == rank  # MPI's local rank (torch's: fallback 0)
    np.testing.assert_array_equal(seen["received"][1], np.arange(6.0).reshape(2, 3).T * 10)
    np.testing.assert_array_equal(seen["received"][0], np.arange(6.0).reshape(2, 3).T * 11)
    np.testing.assert_array_equal(seen["column"][1], [0.0, 30.0])
    theirs = torch_ranks(started)
    for rank in range(2):
        for key in ("out", "grad"):
            np.testing.assert_allclose(seen["avg_" + key][rank], theirs[rank][key], rtol=1e-12)
    np.testing.assert_allclose(seen["avg_grad"][0], [1.0, 2.0, 2.0, 4.0])  # not halved


# ====================================================================== the ranks' programs
TORCH_RANK = """
import pickle, sys
import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.nn.functional as functional
rank, store, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", store=dist.FileStore(store, 2), rank=rank, world_size=2)
x = torch.tensor(np.arange(4.0) * (rank + 1), requires_grad=True)
pieces = [x[0:2] * 1.0, x[2:4] * 1.0]
y = functional.reduce_scatter(torch.zeros(2, dtype=torch.float64), pieces, op=dist.ReduceOp.AVG)
(y * torch.tensor([1.0, 2.0]) * (rank + 1)).sum().backward()
seen = {"out": y.detach().numpy(), "grad": x.grad.numpy()}
dist.destroy_process_group()
open(out, "wb").write(pickle.dumps(seen))
"""  # torch's ranks: the same reduce-scatter as reduce_scatter_avg's


def reduce_scatter_avg(rank: int) -> dict:
    """A differentiable AVG reduce-scatter (float64), as ``TORCH_RANK``'s."""
    import tricycle.distributed.nn.functional as functional

    x = tricycle.tensor(np.arange(4.0) * (rank + 1), requires_grad=True)
    pieces = [x[0:2] * 1.0, x[2:4] * 1.0]
    y = functional.reduce_scatter(tricycle.zeros(2, dtype=tricycle.float64), pieces,
                                  op=dist.ReduceOp.AVG)  # fmt: skip
    (y * tricycle.tensor([1.0, 2.0]) * (rank + 1)).sum().backward()
    return {"avg_out": y.numpy().copy(), "avg_grad": x.grad.numpy().copy()}


def mismatches(rank: int, world) -> dict:
    """Collectives given differing arrays: every rank refuses; the world goes on."""
    seen = {}
    for key, array in (("sizes", np.arange(3 + 2 * rank, dtype=np.float32)),
                       ("dtypes", np.arange(4, dtype=(np.float32, np.int32)[rank]))):  # fmt: skip
        try:
            world.all_gather(array)
        except DistributedError as error:
            seen[key] = str(error)
    try:
        dist.all_gather([tricycle.zeros(1 + rank) for _ in range(2)], tricycle.ones(1 + rank))
    except DistributedError as error:
        seen["torch_api"] = str(error)
    seen["after"] = world.all_gather(np.array([rank, rank + 1]))
    return seen


def batched(rank: int, world) -> dict:
    """Non-contiguous tensors sent and received in one batch."""
    calls = []
    start_batch = world.start_batch
    world.start_batch = lambda messages: calls.append(len(messages)) or start_batch(messages)
    peer = 1 - rank
    sent = tricycle.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3) * (10 + rank))
    received = tricycle.zeros(2, 3)
    grid = tricycle.zeros(2, 2)
    ops = [dist.P2POp(dist.isend, sent.T, peer), dist.P2POp(dist.irecv, received.T, peer)]
    column = dist.P2POp(dist.isend, sent[:, 0], peer) if rank == 0 else None
    ops.append(column or dist.P2POp(dist.irecv, grid[:, 1], peer))
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    del world.start_batch
    return {"received": received.numpy().T, "column": grid.numpy()[:, 1], "batches": calls}


def synced(rank: int) -> dict:
    """sync_module_states: differing modules refused before a broadcast; alike ones synced."""
    seen = {}
    try:
        FSDP(tricycle.nn.Linear(3, 4 + rank), sync_module_states=True)
    except ValueError as error:
        seen["sync"] = str(error)
    tricycle.manual_seed(rank)
    model = FSDP(tricycle.nn.Linear(3, 2), sync_module_states=True)
    values = model.state_dict().values()  # the full parameters (FULL_STATE_DICT)
    seen["synced"] = np.concatenate([np.asarray(getattr(v, "array", v)).ravel() for v in values])
    return seen


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), world_module.init()
    seen = {**reduce_scatter_avg(rank), **mismatches(rank, world), **batched(rank, world),
            **synced(rank)}  # fmt: skip
    seen["node_local_rank"] = dist.get_node_local_rank(fallback_rank=0)  # no $LOCAL_RANK
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
