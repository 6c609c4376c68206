"""Point-to-point messages: the World's ``send``/``recv`` (tricycle/parallel/p2p.py, the engines'
sends and receives) and torch's ``send``, ``recv``, ``isend``, ``irecv``, ``P2POp``,
``batch_isend_irecv``, ``send_object_list``, ``recv_object_list``
(tricycle/parallel/torch_p2p.py): in a world of one (a rank messaging itself, the
refusals), and at two CPU ranks under mpiexec (values and dtypes, tags matched out of order,
a receive from any rank naming its sender, works, a ring exchange in one batch, objects,
and messages of the wrong size refused).

Run as a script (``mpiexec -n 2 python tests/test_p2p.py OUT``) this file is the ranks'
program: rank 0 pickles what both ranks saw to OUT."""

import sys

import numpy as np
import pytest

import tricycle.distributed as dist
from tests.multirank import alone, ranks_findings, write_from_rank_0  # noqa: F401 - alone: each test's
from tests.test_distributed import needs_mpi
from tricycle import backend
from tricycle.parallel import distributed as world_module
from tricycle.parallel.engines import DistributedError
from tricycle.tensor import Tensor

DTYPES = ("float32", "float64", "int64", "int8", "float16", "bool")


def values(dtype: str, rank: int) -> np.ndarray:
    return (np.arange(6).reshape(2, 3) * (rank + 2) % 5).astype(dtype)


# ====================================================================== a world of one
def test_a_rank_messages_itself_with_isend_and_irecv():
    dist.init_process_group("gloo")
    sent = Tensor(np.arange(4, dtype=np.float32))
    send_work = dist.isend(sent, dst=0, tag=5)
    other = dist.isend(Tensor(np.ones(4, dtype=np.float32)), dst=0)
    got = Tensor(np.zeros(4, dtype=np.float32))
    work = dist.irecv(got, src=0, tag=5)  # the tag picks the first message, not the oldest
    assert work.wait() and work.is_completed() and send_work.is_completed()
    np.testing.assert_array_equal(got.array, np.arange(4))
    assert other.wait()
    assert dist.recv(got) == 0  # from any rank: itself
    np.testing.assert_array_equal(got.array, np.ones(4))
    ops = [dist.P2POp(dist.isend, sent, 0), dist.P2POp(dist.irecv, got, 0)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    np.testing.assert_array_equal(got.array, np.arange(4))
    world = dist.init()
    with pytest.raises(DistributedError, match="has not sent"):
        world.recv(np.zeros(2), 0)
    world.wait(world.start_send(np.arange(3.0), 0), "a send")
    with pytest.raises(DistributedError, match="sent 24 bytes, but the receiving tensor holds 16"):
        world.recv(np.zeros(2), 0)


def test_bad_arguments_are_refused_as_torch_refuses_them():
    t = Tensor(np.zeros(2, dtype=np.float32))
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dist.send(t, dst=0)
    dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="should not be the same as the rank"):
        dist.send(t, dst=0)
    with pytest.raises(ValueError, match="should not be the same as the rank"):
        dist.recv_object_list([None], src=0)
    with pytest.raises(ValueError, match="the ranks are 0 to 0"):
        dist.isend(t, dst=1)
    with pytest.raises(ValueError, match="dst .*must be given"):
        dist.isend(t)
    with pytest.raises(ValueError, match="not both"):
        dist.isend(t, dst=0, group_dst=0)
    with pytest.raises(ValueError, match="tag must be an integer"):
        dist.isend(t, dst=0, tag=-1)
    with pytest.raises(ValueError, match="group must be None"):
        dist.isend(t, dst=0, group="pg")
    with pytest.raises(TypeError, match="tensor must be a tricycle Tensor"):
        dist.isend(np.zeros(2), dst=0)
    with pytest.raises(ValueError, match="invalid op"):
        dist.P2POp(dist.send, t, 0)
    with pytest.raises(ValueError, match="each op must be a P2POp"):
        dist.batch_isend_irecv([dist.isend])
    with pytest.raises(ValueError, match="non-empty list"):
        dist.batch_isend_irecv([])
    with pytest.raises(TypeError, match="object_list must be a list"):
        dist.send_object_list((1,), dst=1)
    world = dist.init()
    with pytest.raises(DistributedError, match="must be contiguous"):
        world.start_send(np.zeros((3, 2)).T, 0)
    with pytest.raises(DistributedError, match="sends to itself"):
        world.send(np.zeros(2), 0)


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_a_gpu_array_messages_itself_and_lands_as_on_the_host():
    cupy = backend.cupy()
    dist.init_process_group("gloo")
    world = dist.init()
    sent = cupy.arange(6, dtype=cupy.float32).reshape(2, 3)
    world.wait(world.start_send(sent, 0, tag=2), "a send")
    got = cupy.zeros((2, 3), dtype=cupy.float32)
    assert world.recv(got, 0, tag=2) == 0
    np.testing.assert_array_equal(backend.to_host_array(got), np.arange(6).reshape(2, 3))


# ====================================================================== two ranks
@needs_mpi
def test_two_ranks_send_and_receive(tmp_path):
    got = ranks_findings(__file__, tmp_path)
    for dtype in DTYPES:  # rank 0 sent, rank 1 received: the values and the dtype
        received = got[1][dtype]
        assert received.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(received, values(dtype, 0))
    np.testing.assert_array_equal(got[1]["tag 2"], [2.0, 2.0])  # received first, sent second
    np.testing.assert_array_equal(got[1]["tag 1"], [1.0, 1.0])
    assert got[1]["source"] == 0
    np.testing.assert_array_equal(got[1]["any"], [7, 7, 7])
    np.testing.assert_array_equal(got[1]["strided"], [[0, 1, 2], [3, 4, 5]])  # landed in a view
    for rank in range(2):  # the ring: each rank gets the other's
        np.testing.assert_array_equal(got[rank]["ring"], np.arange(2) + 2 * (1 - rank))
        assert got[rank]["completed"]
    np.testing.assert_array_equal(got[0]["reply"], [10.0, 11.0, 12.0])  # the irecv's reply
    assert got[1]["objects"] == ["foo", 12, {1: 2}] and got[1]["objects_from"] == 0
    assert "sent 24 bytes, but the receiving tensor holds 32" in got[1]["short"]
    assert "longer than the receiving tensor's 8 bytes" in got[1]["long"]


def ranks(out: str) -> None:
    """Both ranks' program: rank 0 sends, rank 1 receives (and answers)."""
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    seen = {}
    for dtype in DTYPES:
        if rank == 0:
            dist.send(Tensor(values(dtype, 0), requires_grad=False), dst=1)
        else:
            t = Tensor(np.zeros((2, 3), dtype=dtype), requires_grad=False)
            seen[dtype] = (dist.recv(t, src=0), t.array)[1]
    # tags: sent 1 then 2, received 2 then 1
    if rank == 0:
        works = [dist.isend(Tensor(np.full(2, float(tag))), dst=1, tag=tag) for tag in (1, 2)]
        for w in works:
            w.wait()
    else:
        for tag in (2, 1):
            t = Tensor(np.zeros(2))
            dist.recv(t, src=0, tag=tag)
            seen[f"tag {tag}"] = t.array
    # a receive from any rank names its sender; a non-contiguous receive lands in its view
    if rank == 0:
        dist.send(Tensor(np.full(3, 7, dtype=np.int64)), dst=1)
        dist.send(Tensor(np.arange(6.0).reshape(2, 3)), dst=1)
    else:
        t = Tensor(np.zeros(3, dtype=np.int64))
        seen["source"] = dist.recv(t)
        seen["any"] = t.array
        base = np.zeros((3, 2))
        dist.recv(Tensor(base.T), src=0)  # a transposed view
        seen["strided"] = base.T.copy()
    # a ring in one batch: each rank sends to the other and receives from it
    mine = Tensor(np.arange(2.0) + 2 * rank)
    theirs = Tensor(np.zeros(2))
    ops = [dist.P2POp(dist.irecv, theirs, 1 - rank), dist.P2POp(dist.isend, mine, 1 - rank)]
    works = dist.batch_isend_irecv(ops)
    for w in works:
        w.wait()
    seen["ring"], seen["completed"] = theirs.array, all(w.is_completed() for w in works)
    # an irecv posted before the message is sent
    if rank == 0:
        reply = Tensor(np.zeros(3))
        work = dist.irecv(reply, src=1, tag=9)
        dist.send(Tensor(np.zeros(1)), dst=1)  # tells rank 1 to answer
        work.wait()
        seen["reply"] = reply.array
    else:
        dist.recv(Tensor(np.zeros(1)), src=0)
        dist.send(Tensor(np.array([10.0, 11.0, 12.0])), dst=0, tag=9)
    # objects
    if rank == 0:
        dist.send_object_list(["foo", 12, {1: 2}], dst=1)
    else:
        objects = [None, None, None]
        seen["objects_from"] = dist.recv_object_list(objects, src=0)
        seen["objects"] = objects
    # a message of the wrong size: refused on the receiving rank
    world = dist.init()
    if rank == 0:
        world.send(np.zeros(3), 1)
        world.send(np.zeros(3), 1)
    else:
        for name, receive in (("short", np.zeros(4)), ("long", np.zeros(1))):
            try:
                world.recv(receive, 0)
            except DistributedError as error:
                seen[name] = str(error)
    write_from_rank_0(seen, out)


if __name__ == "__main__":
    with world_module.fail_together():
        ranks(sys.argv[1])
