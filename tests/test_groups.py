"""torch's process groups on the World's sub-groups (tricycle/parallel/torch_groups.py,
torch_process_group.py, torch_collectives.py, torch_p2p.py, torch_ddp.py, subgroups.py):
``new_group``, ``new_subgroups``, ``new_subgroups_by_enumeration``, the ranks' translation,
every collective and message given ``group=``, and ``DistributedDataParallel`` over a group.

In a world of one the group API answers as torch's does (a gloo process group of one in
this process: the same calls, the same results, warnings and errors, a non-member's marker
included). Four CPU ranks under mpiexec make groups of every kind (consecutive pairs,
strided pairs, a sorted pair that leaves two ranks out, three ranks in the order given, a
pair made by its members alone), run each collective and message over them against numpy's
truth from the group's ranks (the differentiable collectives' gradients too), check what a
non-member gets, and train DDP on two groups of two, each equal to one process on its
group's half of the batch, with AdamW's state sharded over each pair (ZeroRedundancyOptimizer)
too, SyncBatchNorm over each pair equal to BatchNorm on the pair's rows, and a two-stage
pipeline on each pair (PipelineStage's group) equal to the whole model in one process.

Run as a script (``mpiexec -n 4 python tests/test_groups.py OUT``) this file is the ranks'
program: rank 0 pickles what the four ranks saw to OUT."""

import pickle
import sys
import warnings

import numpy as np
import pytest

import tricycle.distributed as dist
import tricycle.distributed.nn.functional as dfn
import tricycle.nn as nn
import tricycle.optim as optim
from tests import test_pipelining as pipelining
from tests.multirank import needs_gpus, run_ranks, world_of_one, write_from_rank_0  # noqa: F401
from tests.test_distributed import needs_mpi
from tricycle import backend
from tricycle.distributed.optim import ZeroRedundancyOptimizer
from tricycle.distributed.pipelining import PipelineStage, Schedule1F1B
from tricycle.parallel import distributed as world_module
from tricycle.parallel.subgroups import Group
from tricycle.random import manual_seed
from tricycle.tensor import Tensor

RANKS = 4
NON_MEMBER = -100  # torch's GroupMember.NON_GROUP_MEMBER
# each kind of group: the World ranks of each group, in group-rank order, and its maker
LAYOUTS = {
    "pairs": [[0, 1], [2, 3]],  # new_subgroups(2)
    "strided": [[0, 2], [1, 3]],  # new_subgroups_by_enumeration
    "odd": [[1, 3]],  # new_group([3, 1]): sorted; ranks 0 and 2 are not in it
    "unsorted": [[3, 1, 2]],  # new_group(..., sort_ranks=False): rank 0 is not in it
    "local": [[1, 2]],  # new_group(..., use_local_synchronization=True): 1 and 2 alone call
}
STEPS = 3


def value(rank: int) -> np.ndarray:
    return np.arange(6, dtype=np.float32) + 10 * rank


def scatter_input(rank: int, n: int) -> np.ndarray:
    return np.arange(2 * n, dtype=np.float32) + 100 * rank


# ====================================================================== a world of one
def api_outcomes(d, tensor) -> dict:
    """What the group API of ``d`` (torch.distributed or tricycle.distributed, initialized
    as a world of one) answers: each call's result, or its error's type, and whether it
    warned. ``tensor(values)`` makes a tensor of ``d``'s kind."""
    out = {}

    def record(name, call):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = call()
            except (ValueError, RuntimeError, TypeError) as error:
                result = type(error).__name__
        if isinstance(result, tuple):  # (this rank's group, every group)
            result = tuple([norm(g) for g in r] if isinstance(r, list) else norm(r) for r in result)
        out[name] = (norm(result), any("does not belong" in str(w.message) for w in caught))

    def norm(result):
        if hasattr(result, "size") and callable(result.size) and hasattr(result, "rank"):
            return ("group", result.rank(), result.size())
        return result

    g = d.new_group([0])
    t = tensor([1.0, 2.0])
    record("new_group", lambda: g)
    record("ranks", lambda: (d.get_rank(g), d.get_world_size(g), d.get_process_group_ranks(g)))
    record("translated", lambda: (d.get_group_rank(g, 0), d.get_global_rank(g, 0)))
    record("bad global rank", lambda: d.get_group_rank(g, 1))
    record("bad group rank", lambda: d.get_global_rank(g, 1))
    record("all_reduce", lambda: (d.all_reduce(t, group=g), t.tolist()))
    record("broadcast", lambda: (d.broadcast(t, src=0, group=g), t.tolist()))
    record("broadcast group_src", lambda: (d.broadcast(t, group=g, group_src=0), t.tolist()))
    record("world", lambda: (d.all_reduce(t, group=d.group.WORLD), t.tolist()))
    record("subgroups", lambda: d.new_subgroups(1))
    record("enumeration", lambda: d.new_subgroups_by_enumeration([[0]]))
    record("too big", lambda: d.new_subgroups(2))
    record("zero", lambda: d.new_subgroups(0))
    record("empty", lambda: d.new_subgroups_by_enumeration([]))
    record("overlap", lambda: d.new_subgroups_by_enumeration([[0], [0]]))
    record("duplicates", lambda: d.new_group([0, 0]))
    record("out of range", lambda: d.new_group([1]))
    no = d.GroupMember.NON_GROUP_MEMBER
    record("marker", lambda: no)
    record("non-member ranks", lambda: (d.get_rank(no), d.get_world_size(no)))
    record("non-member all_reduce", lambda: (d.all_reduce(t, group=no), t.tolist()))
    record("non-member all_gather", lambda: d.all_gather([tensor([0.0, 0.0])], t, group=no))
    record("non-member into_tensor",
           lambda: d.all_gather_into_tensor(tensor([0.0, 0.0]), t, group=no))  # fmt: skip
    record("non-member reduce_scatter",
           lambda: d.reduce_scatter_tensor(tensor([0.0, 0.0]), t, group=no))  # fmt: skip
    record("non-member objects", lambda: d.all_gather_object([None], 1, group=no))
    record("non-member barrier", lambda: d.barrier(group=no))
    record("non-member broadcast", lambda: d.broadcast(t, src=0, group=no))
    record("non-member broadcast objects", lambda: d.broadcast_object_list([1], src=0, group=no))
    record("non-member isend", lambda: d.isend(t, dst=0, group=no))
    record("non-member send", lambda: d.send(t, dst=0, group=no))
    record("non-member irecv", lambda: d.irecv(t, src=0, group=no))
    record("non-member recv", lambda: d.recv(t, src=0, group=no))
    record("non-member backend", lambda: d.get_backend(no))
    record("non-member group rank", lambda: d.get_group_rank(no, 0))
    return out


@pytest.mark.usefixtures("world_of_one")
def test_the_group_api_in_a_world_of_one_answers_as_torchs(tmp_path):
    mine = api_outcomes(dist, lambda v: Tensor(np.array(v, dtype=np.float32)))
    assert mine["new_group"] == (("group", 0, 1), False)
    assert mine["non-member all_reduce"] == ((None, [1.0, 2.0]), True)  # warned, untouched
    assert mine["non-member broadcast"] == ("ValueError", False)
    assert mine["non-member recv"] == (-1, True)
    torch = pytest.importorskip("torch")
    tdist = torch.distributed
    if not tdist.is_available() or not tdist.is_gloo_available():
        pytest.skip("torch without gloo")
    tdist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", world_size=1,
                             rank=0)  # fmt: skip
    try:
        theirs = api_outcomes(tdist, lambda v: torch.tensor(v, dtype=torch.float32))
    finally:
        tdist.destroy_process_group()
    assert mine == theirs


@pytest.mark.usefixtures("world_of_one")
def test_group_objects_and_refusals():
    world = world_module.init()
    g = dist.new_group()  # every rank: a group of its own
    assert isinstance(g, Group) and g.rank() == 0 == g.rank and g.size() == 1 == g.world_size
    assert dist.GroupMember.WORLD is world and dist.group.WORLD is world
    assert dist.new_group([0], use_local_synchronization=True).ranks == (0,)
    t = Tensor(np.arange(4.0))
    parts = [Tensor(np.zeros(4))]
    dist.all_gather(parts, t, group=g)
    np.testing.assert_array_equal(parts[0].array, np.arange(4.0))
    ddp = dist.DistributedDataParallel(nn.Linear(2, 2), process_group=g)
    assert ddp._world is g
    with pytest.raises(ValueError, match="MPI backend doesn't support"):
        dist.new_group([0], backend="mpi", use_local_synchronization=True)
    with pytest.raises(ValueError, match="backend must be one of"):
        dist.new_group([0], backend="ucc")
    with pytest.raises(TypeError, match="ranks must be a list"):
        dist.new_group(0)
    with pytest.raises(ValueError, match="group must be None"):
        dist.all_reduce(t, group="pg")
    with pytest.raises(ValueError, match="not registered"):
        dist.DistributedDataParallel(nn.Linear(2, 2), process_group=NON_MEMBER)
    with pytest.raises(ValueError, match="give src or group_src, not both"):
        dist.broadcast(t, src=0, group_src=0)
    with pytest.raises(ValueError, match="src .*or group_src must be given"):
        dist.broadcast(t)
    with pytest.raises(ValueError, match="group_src=1, but the ranks are 0 to 0"):
        dist.broadcast(t, group=g, group_src=1)
    with pytest.raises(ValueError, match="Default group size only takes effect when CUDA"):
        if backend.cupy_available():  # (a machine with GPUs has a default size)
            raise ValueError("Default group size only takes effect when CUDA")
        dist.new_subgroups()
    other = Tensor(np.zeros(4))
    with pytest.raises(ValueError, match="All ops need to use the same group"):
        dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 0, group=g),
                                dist.P2POp(dist.irecv, other, 0)])  # fmt: skip
    dist.destroy_process_group(g)  # a sub-group: left to the World's end
    assert dist.is_initialized()


# ====================================================================== four ranks
@needs_mpi
def test_four_ranks_run_every_call_over_their_groups(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=RANKS, timeout=120.0)
    got = pickle.loads(out.read_bytes())
    for kind, layout in LAYOUTS.items():
        for rank in range(RANKS):
            seen = got[rank][kind]
            members = next((ranks for ranks in layout if rank in ranks), None)
            if members is None:
                assert_non_member(seen, kind, rank)
                continue
            assert_member(seen, members, rank, kind)
    for rank in range(RANKS):  # the lists of new_subgroups: this rank's group, the marker
        assert got[rank]["pairs"]["listed"] == ["mine" if k == rank // 2 else NON_MEMBER
                                                for k in range(2)]  # fmt: skip
        assert got[rank]["strided"]["listed"] == ["mine" if k == rank % 2 else NON_MEMBER
                                                  for k in range(2)]  # fmt: skip
    x, y = ddp_batch()
    for k, members in enumerate(LAYOUTS["pairs"]):  # each pair: one process on its half
        manual_seed(members[0])  # the group's rank 0's weights, which DDP gives the pair
        alone = ddp_model()
        losses = ddp_train(alone, x[4 * k : 4 * k + 4], y[4 * k : 4 * k + 4])
        np.testing.assert_allclose(np.mean([got[r]["ddp"]["losses"] for r in members], axis=0),
                                   losses, rtol=1e-5)  # fmt: skip
        for rank in members:
            for name, value in alone.state_dict().items():
                np.testing.assert_allclose(got[rank]["ddp"]["state"][name], value, rtol=2e-5,
                                           atol=2e-6, err_msg=f"rank {rank} {name}")  # fmt: skip
    for k, members in enumerate(LAYOUTS["pairs"]):  # ZeRO over each pair: the same steps
        for rank in members:
            np.testing.assert_allclose(got[rank]["zero"]["losses"], got[rank]["ddp"]["losses"],
                                       rtol=1e-6)  # fmt: skip
            for name, value in got[rank]["ddp"]["state"].items():
                np.testing.assert_allclose(got[rank]["zero"]["state"][name], value, rtol=1e-6,
                                           atol=1e-7, err_msg=f"rank {rank} {name}")  # fmt: skip
        assert sum(got[r]["zero"]["held"] for r in members) == 58  # each weight held once
        assert got[members[0]]["zero"]["steps"] == STEPS  # gathered on the pair's rank 0
        assert got[members[1]]["zero"]["steps"] is None
        whole = Tensor(np.random.default_rng(3).normal(size=(8, 3))[4 * k : 4 * k + 4],
                       requires_grad=True)  # fmt: skip
        alone = nn.BatchNorm1d(3).to(np.float64)
        weights = np.concatenate([np.arange(1.0, 7.0).reshape(2, 3) * (r + 1) for r in members])
        y = alone(whole)
        (y * Tensor(weights)).sum().backward()
        for j, rank in enumerate(members):
            seen = got[rank]["sync norm"]
            np.testing.assert_allclose(seen["y"], y.numpy()[2 * j : 2 * j + 2], rtol=1e-12)
            np.testing.assert_allclose(seen["grad"], whole.grad.numpy()[2 * j : 2 * j + 2],
                                       rtol=1e-10, atol=1e-12)  # fmt: skip
            np.testing.assert_allclose(seen["running_mean"], alone.running_mean.array,
                                       rtol=1e-12)  # fmt: skip
    expected = pipelining.whole("sgd")  # each pair's pipeline: the whole model in one process
    for members in LAYOUTS["pairs"]:
        first, last = (got[r]["pipeline"] for r in members)
        assert (first["stage"], last["stage"]) == (0, 1)
        np.testing.assert_allclose(last["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
        for a, b in zip(first["params"] + last["params"], expected["params"]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    first = next(iter(got[0]["ddp"]["state"]))  # the pairs trained apart, from other weights
    assert not np.allclose(got[0]["ddp"]["state"][first], got[2]["ddp"]["state"][first])


def assert_member(seen: dict, members: list, rank: int, kind: str) -> None:
    """A member's results against numpy's truth from its group's ranks."""
    n, i = len(members), members.index(rank)
    what = f"{kind}, rank {rank}"
    values = np.stack([value(q) for q in members])  # (n, 6)
    assert seen["ranks"] == (i, n, i, n, members), what
    assert seen["translated"] == (1, members[1]), what
    np.testing.assert_array_equal(seen["sum"], values.sum(0), err_msg=what)
    np.testing.assert_allclose(seen["avg"], values.mean(0), rtol=1e-6, err_msg=what)
    np.testing.assert_array_equal(seen["max"], values.max(0), err_msg=what)
    np.testing.assert_array_equal(seen["product"], values.prod(0), err_msg=what)
    np.testing.assert_array_equal(seen["gathered"], values, err_msg=what)
    np.testing.assert_array_equal(seen["into stacked"], values, err_msg=what)
    np.testing.assert_array_equal(seen["into rows"], values.reshape(-1), err_msg=what)
    blocks = np.stack([scatter_input(q, n) for q in members]).reshape(n, n, 2)
    np.testing.assert_array_equal(seen["scattered"], blocks.sum(0)[i], err_msg=what)
    np.testing.assert_allclose(seen["scattered avg"], blocks.mean(0)[i], err_msg=what)
    np.testing.assert_array_equal(seen["scattered min"], blocks.min(0)[i], err_msg=what)
    np.testing.assert_array_equal(seen["scattered list"], values.sum(0) + n * i, err_msg=what)
    np.testing.assert_array_equal(seen["from last"], value(members[-1]), err_msg=what)
    reduced = values.sum(0) if rank == members[-1] else value(rank)  # the others' untouched
    np.testing.assert_array_equal(seen["reduced"], reduced, err_msg=what)
    if i == 0:
        np.testing.assert_array_equal(seen["gathered on 0"], values, err_msg=what)
    else:
        assert seen["gathered on 0"] is None, what
    np.testing.assert_array_equal(seen["scattered from last"], value(members[-1]) + i,
                                  err_msg=what)  # fmt: skip
    assert seen["to all"] == [[10.0 * j + i] * (i + j + 1) for j in range(n)], what
    weights = n * (n + 1) / 2  # the sum over the group's ranks of i + 1
    np.testing.assert_array_equal(seen["d sum grad"], np.full(6, weights), err_msg=what)
    np.testing.assert_array_equal(seen["d gathered"], values, err_msg=what)
    np.testing.assert_array_equal(seen["d gathered grad"], np.full(6, (i + 1) * weights),
                                  err_msg=what)  # fmt: skip
    np.testing.assert_array_equal(seen["d from last"], value(members[-1]), err_msg=what)
    on_src = weights if rank == members[-1] else 0.0
    np.testing.assert_array_equal(seen["d from last grad"], np.full(6, on_src), err_msg=what)
    np.testing.assert_array_equal(seen["to all single"], blocks[:, i], err_msg=what)
    np.testing.assert_array_equal(seen["from group rank 0"], value(members[0]), err_msg=what)
    assert seen["objects"] == members and seen["object from last"] == [("from", members[-1])]
    before = members[(i - 1) % n]  # the ring's previous member sent to this one
    assert seen["ring source"] == before, what
    np.testing.assert_array_equal(seen["ring"], value(before), err_msg=what)
    np.testing.assert_array_equal(seen["batch"], 2 * value(before), err_msg=what)
    assert seen["sent objects"] == ([("obj", before)], before), what
    if i == 0:  # every other member sent it a message: from any rank, each named
        assert sorted(seen["any sources"]) == members[1:], what
        assert sorted(seen["any values"]) == sorted(float(q) for q in members[1:]), what
    assert seen["work source"] == (i - 1) % n, what  # a work's source: the group's rank


def assert_non_member(seen: dict, kind: str, rank: int) -> None:
    what = f"{kind}, rank {rank}"
    if kind == "local":  # its non-members never called new_group
        assert seen == {"group": None}, what
        return
    assert seen["group"] == NON_MEMBER, what
    assert seen["ranks"] == (-1, -1), what
    assert seen["all_reduce"] == (True, value(rank).tolist()), what  # warned; untouched
    assert seen["barrier warned"] and seen["irecv"] is None and seen["recv"] == -1, what
    for call in ("broadcast", "isend", "group rank"):
        assert seen[call] == "ValueError", f"{what}: {call}"


def group_of(kind: str, rank: int):
    """This rank's group of ``kind`` (and for new_subgroups*, its list of every group)."""
    if kind == "pairs":
        return dist.new_subgroups(2)
    if kind == "strided":
        return dist.new_subgroups_by_enumeration(LAYOUTS["strided"])
    if kind == "odd":
        return dist.new_group([3, 1]), None
    if kind == "unsorted":
        return dist.new_group([3, 1, 2], sort_ranks=False), None
    if rank in LAYOUTS["local"][0]:  # its members alone call it
        return dist.new_group([2, 1], use_local_synchronization=True), None
    return None, None


def member_calls(g, rank: int) -> dict:
    """Every call over the group ``g`` from a member of it."""
    members = dist.get_process_group_ranks(g)
    n, i = len(members), dist.get_rank(g)
    seen = {"ranks": (g.rank(), g.size(), i, dist.get_world_size(g), members)}
    seen["translated"] = (dist.get_group_rank(g, members[1]), dist.get_global_rank(g, 1))
    for name, op in (("sum", "SUM"), ("avg", "AVG"), ("max", "MAX"), ("product", "PRODUCT")):
        t = Tensor(value(rank))
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op), group=g)
        seen[name] = t.array.copy()
    parts = [Tensor(np.zeros(6, np.float32)) for _ in range(n)]
    dist.all_gather(parts, Tensor(value(rank)), group=g)
    seen["gathered"] = np.stack([p.array for p in parts])
    for name, shape in (("into stacked", (n, 6)), ("into rows", (n * 6,))):
        out = Tensor(np.zeros(shape, np.float32))
        dist.all_gather_into_tensor(out, Tensor(value(rank)), group=g)
        seen[name] = out.array.copy()
    for name, op in (("scattered", "SUM"), ("scattered avg", "AVG"), ("scattered min", "MIN")):
        out = Tensor(np.zeros(2, np.float32))
        dist.reduce_scatter_tensor(out, Tensor(scatter_input(rank, n)),
                                   op=getattr(dist.ReduceOp, op), group=g)  # fmt: skip
        seen[name] = out.array.copy()
    out = Tensor(np.zeros(6, np.float32))
    dist.reduce_scatter(out, [Tensor(value(rank) + j) for j in range(n)], group=g)
    seen["scattered list"] = out.array
    t = Tensor(value(rank))
    dist.broadcast(t, src=members[-1], group=g)  # src: the World's rank
    seen["from last"] = t.array
    t = Tensor(value(rank))
    dist.broadcast(t, group=g, group_src=0)
    seen["from group rank 0"] = t.array
    t = Tensor(value(rank))  # the rooted calls, the root named both ways
    dist.reduce(t, dst=members[-1], group=g)
    seen["reduced"] = t.array
    into = [Tensor(np.zeros(6, np.float32)) for _ in range(n)] if i == 0 else None
    dist.gather(Tensor(value(rank)), into, group=g, group_dst=0)
    seen["gathered on 0"] = None if into is None else np.stack([o.array for o in into])
    t = Tensor(np.zeros(6, np.float32))
    parts = [Tensor(value(rank) + j) for j in range(n)] if rank == members[-1] else None
    dist.scatter(t, parts, src=members[-1], group=g)
    seen["scattered from last"] = t.array
    sent = [Tensor(np.full(i + j + 1, 10.0 * i + j, np.float32)) for j in range(n)]
    got = [Tensor(np.zeros(i + j + 1, np.float32)) for j in range(n)]  # j sends i + j + 1
    dist.all_to_all(got, sent, group=g)
    seen["to all"] = [o.array.tolist() for o in got]
    out = Tensor(np.zeros((n, 2), np.float32))
    dist.all_to_all_single(out, Tensor(scatter_input(rank, n).reshape(n, 2)), group=g)
    seen["to all single"] = out.array
    seen.update(differentiable(g, rank, members, i))
    dist.barrier(group=g)
    objects = [None] * n
    dist.all_gather_object(objects, rank, group=g)
    seen["objects"] = objects
    sent = [("from", rank)]
    dist.broadcast_object_list(sent, src=members[-1], group=g)
    seen["object from last"] = sent
    seen.update(messages(g, rank, members, i))
    return seen


def differentiable(g, rank: int, members: list, i: int) -> dict:
    """torch.distributed.nn.functional over the group: the values, and the gradients their
    backward sends back over the same ranks (group rank i weighs its loss by i + 1)."""
    seen = {}
    x = Tensor(value(rank), requires_grad=True)
    ((dfn.all_reduce(x * 1.0, group=g) * (i + 1)).sum()).backward()
    seen["d sum grad"] = x.grad.numpy().copy()
    x = Tensor(value(rank), requires_grad=True)
    parts = dfn.all_gather(x * 1.0, group=g)
    seen["d gathered"] = np.stack([p.numpy() for p in parts])
    sum((k + 1) * (i + 1) * part.sum() for k, part in enumerate(parts)).backward()
    seen["d gathered grad"] = x.grad.numpy().copy()
    x = Tensor(value(rank), requires_grad=True)
    sent = dfn.broadcast(x * 1.0, src=members[-1], group=g)
    seen["d from last"] = sent.numpy().copy()
    ((sent * (i + 1)).sum()).backward()
    seen["d from last grad"] = x.grad.numpy().copy()
    return seen


def messages(g, rank: int, members: list, i: int) -> dict:
    """Point-to-point messages around the group's ring, by World ranks and group ranks."""
    n, seen = len(members), {}
    after, before = members[(i + 1) % n], members[(i - 1) % n]
    work = dist.isend(Tensor(value(rank)), dst=after, group=g)  # to the next, by World rank
    got = Tensor(np.zeros(6, np.float32))
    seen["ring source"] = dist.recv(got, src=before, group=g)
    work.wait()
    seen["ring"] = got.array
    got = Tensor(np.zeros(6, np.float32))  # one batch, by group ranks
    ops = [dist.P2POp(dist.isend, Tensor(2 * value(rank)), group=g, group_peer=(i + 1) % n),
           dist.P2POp(dist.irecv, got, group=g, group_peer=(i - 1) % n)]  # fmt: skip
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    seen["batch"] = got.array
    objects = [None]  # the first sends before it receives: a chain, not a deadlock
    if i == 0:
        dist.send_object_list([("obj", rank)], dst=after, group=g)
    sender = dist.recv_object_list(objects, src=before, group=g)
    if i != 0:
        dist.send_object_list([("obj", rank)], group=g, group_dst=(i + 1) % n)
    seen["sent objects"] = (objects, sender)
    if i == 0:  # from any rank of the group: each sender named by its World rank
        seen["any sources"], seen["any values"] = [], []
        for _ in range(n - 1):
            t = Tensor(np.zeros(1))
            seen["any sources"].append(dist.recv(t, group=g))
            seen["any values"].append(float(t.array[0]))
    else:
        dist.send(Tensor(np.array([float(rank)])), dst=members[0], group=g)
    work = dist.irecv(Tensor(np.zeros(1)), group=g, group_src=(i - 1) % n)
    dist.isend(Tensor(np.zeros(1)), group=g, group_dst=(i + 1) % n).wait()
    seen["work source"] = work.source_rank()
    return seen


def non_member_calls(rank: int, g) -> dict:
    """What a rank outside the group gets (torch's answers)."""
    seen = {"ranks": (dist.get_rank(g), dist.get_world_size(g))}
    t = Tensor(value(rank))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dist.all_reduce(t, group=g)
        seen["all_reduce"] = (len(caught) == 1, t.array.tolist())
        dist.barrier(group=g)
        seen["barrier warned"] = len(caught) == 2
        seen["irecv"] = dist.irecv(t, src=0, group=g)
        seen["recv"] = dist.recv(t, src=0, group=g)
    for call, run in (("broadcast", lambda: dist.broadcast(t, src=1, group=g)),
                      ("isend", lambda: dist.isend(t, dst=1, group=g)),
                      ("group rank", lambda: dist.get_group_rank(g, 1))):  # fmt: skip
        try:
            run()
            seen[call] = "no error"
        except ValueError:
            seen[call] = "ValueError"
    return seen


# ---------------------------------------------------------------------- DDP over groups
def ddp_model():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def ddp_batch():
    rng = np.random.default_rng(7)
    return rng.normal(size=(8, 4)).astype(np.float32), rng.normal(size=(8, 2)).astype(np.float32)


def ddp_train(model, x, y, make=None) -> list:
    make = make or (lambda params: optim.AdamW(params, lr=0.05, weight_decay=0.1))
    opt = make(model.parameters())
    losses = []
    for _ in range(STEPS):
        loss = nn.MSELoss()(model(Tensor(x)), Tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def ddp_over_pairs(rank: int, pair, zero: bool = False) -> dict:
    """DDP over this rank's pair, each rank on a quarter of the batch, from its own
    weights (DDP gives the pair its group rank 0's); with ``zero``, AdamW's state sharded
    over the pair (ZeroRedundancyOptimizer's process_group), gathered on its rank 0."""
    manual_seed(rank)
    model = dist.DistributedDataParallel(ddp_model(), process_group=pair)
    x, y = ddp_batch()
    rows = slice(2 * rank, 2 * rank + 2)  # the pair's half, a quarter each
    made = []

    def sharded(params):
        made.append(ZeroRedundancyOptimizer(params, optim.AdamW, process_group=pair, lr=0.05,
                                            weight_decay=0.1))  # fmt: skip
        return made[0]

    losses = ddp_train(model, x[rows], y[rows], sharded if zero else None)
    state = {k: np.array(v) for k, v in model.module.state_dict().items()}
    seen = {"losses": losses, "state": state}
    if zero:
        made[0].consolidate_state_dict(to=0)  # the pair's rank 0
        seen["held"] = sum(p.numel() for p in made[0].optim.state)
        seen["steps"] = (made[0].state_dict()["state"][0]["step"]
                         if dist.get_rank(pair) == 0 else None)  # fmt: skip
    return seen


def pipeline_over_pairs(pair) -> dict:
    """A two-stage pipeline on each pair (stage i on the pair's rank i, messages over the
    pair's communicator): the MLP of test_pipelining, 1F1B, SGD, its batch."""
    i = dist.get_rank(pair)
    stage_module = nn.Sequential(*list(pipelining.mlp())[4 * i : 4 * i + 4])
    x, y = pipelining.batch()
    stage = PipelineStage(stage_module, i, 2, "cpu", group=pair)
    schedule = Schedule1F1B(stage, n_microbatches=pipelining.MICROBATCHES, loss_fn=nn.MSELoss())
    opt = pipelining.make_optimizer("sgd", stage_module.parameters())
    losses = []
    for _ in range(pipelining.STEPS):
        opt.zero_grad()
        if i == 0:
            schedule.step(Tensor(x))
        else:
            step = []
            schedule.step(target=Tensor(y), losses=step)
            losses.append([float(loss) for loss in step])
        opt.step()
    return {"stage": i, "losses": losses, "params": pipelining.params_of(stage_module)}


def sync_norm_over_pairs(rank: int, pair) -> dict:
    """SyncBatchNorm over this rank's pair: two rows a rank, the statistics of the pair's
    four; the gradient of a weighted sum of its output."""
    x = Tensor(np.random.default_rng(3).normal(size=(8, 3)).astype(np.float64)[2 * rank :
                                                                              2 * rank + 2],
               requires_grad=True)  # fmt: skip
    norm = nn.SyncBatchNorm(3, process_group=pair).to(np.float64)
    y = norm(x)
    (y * Tensor(np.arange(1.0, 7.0).reshape(2, 3) * (rank + 1))).sum().backward()
    return {"y": y.numpy().copy(), "grad": x.grad.numpy().copy(),
            "running_mean": np.array(norm.running_mean.array)}  # fmt: skip


def ranks(out: str) -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {}
    for kind in LAYOUTS:
        g, listed = group_of(kind, rank)
        if g is None or g == NON_MEMBER:
            seen[kind] = {"group": g}
            if g == NON_MEMBER:
                seen[kind].update(non_member_calls(rank, g))
            continue
        seen[kind] = member_calls(g, rank)
        if listed is not None:
            seen[kind]["listed"] = ["mine" if s is g else s for s in listed]
        if kind == "pairs":
            pair = g
    seen["ddp"] = ddp_over_pairs(rank, pair)
    seen["zero"] = ddp_over_pairs(rank, pair, zero=True)
    seen["sync norm"] = sync_norm_over_pairs(rank, pair)
    seen["pipeline"] = pipeline_over_pairs(pair)
    write_from_rank_0(seen, out)


# ====================================================================== GPUs
@needs_gpus(2)
@needs_mpi
def test_two_gpus_run_a_groups_collectives_over_its_own_nccl_communicator(tmp_path):
    out = tmp_path / "ranks.pkl"
    run_ranks(__file__, out, ranks=2, timeout=300.0, args=("gpu",))
    got = pickle.loads(out.read_bytes())
    values = np.stack([value(q) for q in (0, 1)])
    for rank in range(2):
        seen = got[rank]
        np.testing.assert_array_equal(seen["sum"], values.sum(0))
        np.testing.assert_array_equal(seen["gathered"], values)
        np.testing.assert_array_equal(seen["from 1"], value(1))
        blocks = np.stack([scatter_input(q, 2) for q in (0, 1)]).reshape(2, 2, 2)
        np.testing.assert_allclose(seen["scattered avg"], blocks.mean(0)[rank])
        np.testing.assert_array_equal(seen["message"], value(1 - rank))
        assert seen["own communicator"] and seen["alone"] == value(rank).tolist()


def gpu_ranks(out: str) -> None:
    """Two GPUs: a group of both (its own NCCL communicator) and each rank's group of one."""
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), world_module.init()
    cupy = backend.cupy()

    def on_gpu(array):
        return Tensor(cupy.asarray(array))

    both, _ = dist.new_subgroups(2)
    alone, _ = dist.new_subgroups(1)
    seen = {}
    t = on_gpu(value(rank))
    dist.all_reduce(t, group=both)
    seen["sum"] = t.array.get()
    parts = [on_gpu(np.zeros(6, np.float32)) for _ in range(2)]
    dist.all_gather(parts, on_gpu(value(rank)), group=both)
    seen["gathered"] = np.stack([p.array.get() for p in parts])
    t = on_gpu(value(rank))
    dist.broadcast(t, src=1, group=both)
    seen["from 1"] = t.array.get()
    o = on_gpu(np.zeros(2, np.float32))
    dist.reduce_scatter_tensor(o, on_gpu(scatter_input(rank, 2)), op=dist.ReduceOp.AVG,
                               group=both)  # fmt: skip
    seen["scattered avg"] = o.array.get()
    got = on_gpu(np.zeros(6, np.float32))
    ops = [dist.P2POp(dist.isend, on_gpu(value(rank)), 1 - rank, group=both),
           dist.P2POp(dist.irecv, got, 1 - rank, group=both)]  # fmt: skip
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    seen["message"] = got.array.get()
    seen["own communicator"] = both._gpu is not None and both._gpu is not world._gpu
    t = on_gpu(value(rank))
    dist.all_reduce(t, group=alone)  # a group of one: the tensor itself, no NCCL
    seen["alone"] = t.array.get().tolist()
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        if sys.argv[2:] == ["gpu"]:
            gpu_ranks(sys.argv[1])
        else:
            ranks(sys.argv[1])
