"""GPU tensors sent between processes as CUDA IPC handles (``tricycle.multiprocessing.cuda_ipc``),
as torch's. On the host: where a strided view lies in its allocation (the pool's base
offset), the sender's counter slots that keep sent memory until a receiver (here a spawned
process) lets go, ``ipc_collect``, the refusal in a child forked after CUDA started (torch's
message), and host tensors still going through shared memory. On a GPU (skipped without
one): a spawned child writes into a tensor it received through a Queue and the parent sees
it, views with an offset and strides, a Pool's workers returning GPU tensors, a tensor that
comes back to its sender, sent memory freed by ``ipc_collect`` once the receiver dropped it,
and a device the receiver cannot see refused. The children run this module's functions."""

import gc
import weakref
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import tricycle
import tricycle.multiprocessing as mp
from tricycle import backend, shared_memory
from tricycle.multiprocessing import cuda_ipc

needs_gpu = pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")


# ====================================================================== what the children run
def release_slot(block_reduction, slot) -> None:
    """A receiver's side of the counter: hold the slot's lease, then drop it."""
    counter = block_reduction[0](*block_reduction[1])
    lease = cuda_ipc.Lease(None, (b"handle", 0, 0), counter, slot)
    del lease


def report_fork_refusal(queue) -> None:
    try:
        cuda_ipc.rebuild_array((b"h", 8, 0), 0, ("<f4", (2,), (4,), 0), queue.get(), 0)
    except RuntimeError as error:
        queue.put(str(error))
    else:
        queue.put("rebuilt")


def add_ten(queue_in, queue_out) -> None:
    """Receive GPU tensors, add 10 to each in place, say so, hold them until told."""
    tensors = queue_in.get()
    with tricycle.no_grad():
        for tensor in tensors:
            tensor.add_(10)
    tricycle.cuda.synchronize()
    queue_out.put([(t.device.type, t.is_shared()) for t in tensors])
    queue_in.get()


def make_on_gpu(n: int):
    return tricycle.arange(n, dtype=tricycle.float32).to("cuda") * 2


# ====================================================================== on the host
def test_a_view_is_placed_in_its_allocation_by_its_byte_extent():
    assert cuda_ipc.extent((3, 4), (16, 4), 4) == (0, 48)
    assert cuda_ipc.extent((3,), (-8,), 4) == (-16, 4)  # a flipped view reaches below
    assert cuda_ipc.extent((0, 5), (20, 4), 4) == (0, 0)
    base = 0x7000
    # a pool chunk 512 bytes into a 2 MiB allocation, then a view 3 floats in
    assert cuda_ipc.placement(base + 524, base, 2 << 20, (4,), (4,), 4) == 524
    assert cuda_ipc.placement(base + 40, base, 64, (3,), (-8,), 4) == 40
    with pytest.raises(ValueError, match="outside its allocation"):
        cuda_ipc.placement(base + 60, base, 64, (2,), (4,), 4)
    with pytest.raises(ValueError, match="outside its allocation"):
        cuda_ipc.placement(base + 8, base, 64, (3,), (-8,), 4)
    # the numbers numpy gives for real views agree with the extent
    whole = np.zeros((6, 8), np.float32)
    for view in (whole[2:, 1::3], whole[::-2, ::-1], whole.T[3:]):
        start = view.__array_interface__["data"][0]
        base = whole.__array_interface__["data"][0]
        offset = cuda_ipc.placement(start, base, whole.nbytes, view.shape, view.strides, 4)
        rebuilt = np.ndarray(view.shape, np.float32, whole, offset, view.strides)
        np.testing.assert_array_equal(rebuilt, view)


def test_sent_memory_is_kept_until_the_receiver_lets_go():
    counters = cuda_ipc.Counters()

    class Held:
        pass

    held = [Held() for _ in range(3)]
    alive = [weakref.ref(h) for h in held]
    keys = [counters.keep(h) for h in held]
    assert keys == [(0, 0), (0, 1), (0, 2)] and len(counters.blocks) == 1
    assert shared_memory.segment_of(counters.blocks[0]) is not None  # seen by receivers
    del held
    gc.collect()
    assert all(a() is not None for a in alive)  # the sender's drop frees nothing yet
    context = mp.get_context("spawn")
    block = shared_memory.reduce_array(counters.blocks[0])
    child = context.Process(target=release_slot, args=(block, 1))
    child.start()
    child.join(20)
    assert child.exitcode == 0 and counters.blocks[0][1] == 0
    counters.collect()
    gc.collect()
    assert [a() is not None for a in alive] == [True, False, True]
    assert counters.keep(Held()) == (0, 1)  # a freed slot is taken again
    counters.blocks[0][:] = 1  # a full block: the next send opens another
    assert counters.keep(Held()) == (1, 0)


def test_a_child_forked_after_cuda_started_refuses_as_torchs(monkeypatch):
    monkeypatch.setattr(backend, "_cupy", backend._cupy or object())  # CUDA "started"
    counters = cuda_ipc.Counters()
    counters.keep(object())
    context = mp.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=report_fork_refusal, args=(queue,))
    child.start()
    queue.put(shared_memory.reduce_array(counters.blocks[0]))
    child.join(20)
    message = queue.get(timeout=5)
    assert message.startswith("Cannot re-initialize CUDA in forked subprocess")
    assert "'spawn' start method" in message
    assert counters.blocks[0][0] == 0  # the refusing child let the sender's slot go
    assert not cuda_ipc.forked_after_cuda()  # this process was not forked


def test_host_tensors_still_travel_through_shared_memory():
    x = tricycle.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    got = ForkingPickler.loads(ForkingPickler.dumps(x))
    assert x.is_shared() and got.is_shared() and got.requires_grad
    with tricycle.no_grad():
        got.mul_(2)
    np.testing.assert_array_equal(x.numpy(), [0, 2, 4])


def test_ipc_collect_without_a_gpu_raises_as_torchs():
    if backend.cupy_available():
        tricycle.cuda.ipc_collect()  # nothing held: a no-op
    else:
        with pytest.raises(RuntimeError, match="ipc_collect"):
            tricycle.cuda.ipc_collect()


# ====================================================================== on a GPU
@needs_gpu
def test_a_spawned_childs_write_into_a_sent_gpu_tensor_is_seen_by_the_parent():
    context = mp.get_context("spawn")
    cupy = backend.cupy()
    pool = cupy.cuda.MemoryPool()  # a pool of its own: no free piece left by another test
    with cupy.cuda.using_allocator(pool.malloc):
        big = tricycle.zeros(1 << 20).to("cuda")
        del big  # its chunk goes back to the pool: the next ones are pieces of it
        whole = tricycle.arange(12, dtype=tricycle.float32).to("cuda")
        small = tricycle.tensor([1.0, 2.0]).to("cuda")
    base, _ = cuda_ipc._allocation_range(small.array.data.ptr)
    assert small.array.data.ptr != base  # sent with its offset from the allocation's base
    sent = [whole, whole[3:7], whole[::-3], whole.reshape(3, 4).T, small]
    queue_in, queue_out = context.Queue(), context.Queue()
    child = context.Process(target=add_ten, args=(queue_in, queue_out))
    child.start()
    queue_in.put(sent)
    seen = queue_out.get(timeout=60)
    assert seen == [("cuda", True)] * len(sent)
    expected = np.arange(12, dtype=np.float32) + 20  # whole and its transpose
    expected[3:7] += 10
    expected[11::-3] += 10
    cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(whole.numpy(), expected)
    np.testing.assert_array_equal(small.numpy(), [11, 12])
    queue_in.put("done")
    child.join(60)
    assert child.exitcode == 0
    tricycle.cuda.ipc_collect()
    assert not cuda_ipc._counters.kept  # the child let every send go: nothing held


@needs_gpu
def test_a_pools_workers_return_gpu_tensors():
    context = mp.get_context("spawn")
    with context.Pool(2) as pool:
        results = pool.map(make_on_gpu, [3, 5])
        values = [r.numpy().copy() for r in results]  # while the workers hold the memory
        assert all(r.device.type == "cuda" for r in results)
        del results
        gc.collect()
    np.testing.assert_array_equal(values[0], [0, 2, 4])
    np.testing.assert_array_equal(values[1], [0, 2, 4, 6, 8])


@needs_gpu
def test_a_gpu_tensor_back_in_its_sender_is_its_own_memory():
    x = tricycle.tensor([1.0, 2.0, 3.0, 4.0]).to("cuda")
    got = ForkingPickler.loads(ForkingPickler.dumps(x[1:]))
    assert got.device.type == "cuda" and got.is_shared()
    with tricycle.no_grad():
        got.mul_(10)
    np.testing.assert_array_equal(x.numpy(), [1, 20, 30, 40])
    tricycle.cuda.ipc_collect()
    assert not cuda_ipc._counters.kept
    empty = ForkingPickler.loads(ForkingPickler.dumps(x[:0]))
    assert empty.shape == (0,) and empty.device.type == "cuda"


@needs_gpu
def test_a_device_the_receiver_cannot_see_is_refused():
    cupy = backend.cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    counters = cuda_ipc._counters
    number, slot = counters.keep(object())
    block = shared_memory.reduce_array(counters.blocks[number])
    with pytest.raises(RuntimeError, match=f"sent from cuda:{count} cannot be opened"):
        cuda_ipc.rebuild_array((b"h", 8, 0), count, ("<f4", (2,), (4,), 0), block, slot)
    tricycle.cuda.ipc_collect()
    assert counters.blocks[number][slot] == 0
