"""Shared memory between processes, as torch's: ``Tensor.share_memory_``/``is_shared`` (in
place, against torch's answers), ``Module.share_memory``, and host tensors sent through
``tricycle.multiprocessing``'s ``Process`` arguments, ``Queue``, ``Pipe`` and ``Pool`` (spawn
processes, as torch's default on macOS and in CUDA scripts) arriving as views of one memory:
a child's in-place write, or an optimiser's step, is seen by the parent, under both sharing
strategies. The segments are freed: a "file_system" file is unlinked when its maker's last
array goes, and a "file_descriptor" segment's descriptor is closed (GPU tensors:
tests/test_cuda_ipc.py). torch is imported inside
the tests only: the spawned children import this module for the functions they run."""

import gc
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import tricycle
import tricycle.multiprocessing as mp
from tricycle import backend, shared_memory
from tricycle.tensor import Tensor


@pytest.fixture(params=sorted(mp.get_all_sharing_strategies()))
def strategy(request):
    before = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(before)


# ====================================================================== what the children run
def add_one(tensor) -> None:
    with tricycle.no_grad():
        tensor.add_(1)


def echo_plus(queue_in, queue_out) -> None:
    """Receive a tensor, write into it, send it (and a view of it) back."""
    tensor = queue_in.get()
    with tricycle.no_grad():
        tensor.mul_(10)
    queue_out.put((tensor.is_shared(), tensor, tensor[1:]))
    queue_in.get()  # hold the child's copy until the parent has read


def sgd_step(conn) -> None:
    model = conn.recv()
    x = tricycle.tensor(np.ones((2, 3), np.float32))
    model(x).sum().backward()
    tricycle.optim.SGD(model.parameters(), lr=0.5).step()
    conn.send("stepped")
    conn.recv()


def square_in_place(tensor) -> float:
    with tricycle.no_grad():
        tensor.mul_(tensor)
    return float(tensor.sum())


# ====================================================================== in one process
def test_share_memory_moves_the_array_in_place_as_torchs():
    torch = pytest.importorskip("torch")
    values = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, t = Tensor(values.copy(), requires_grad=True), torch.tensor(values, requires_grad=True)
    assert x.is_shared() == t.is_shared() is False
    assert x.share_memory_() is x and t.share_memory_() is t
    assert x.is_shared() == t.is_shared() is True
    np.testing.assert_array_equal(x.numpy(), t.detach().numpy())
    array = x.array
    assert x.share_memory_().array is array  # a no-op once shared, as torch's
    assert x[1:].is_shared() and x.T.is_shared() and not (x * 2).is_shared()
    (x * x).sum().backward()  # gradients as before
    (t * t).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    with tricycle.no_grad():
        x.add_(1)
        x[0, 0] = -5
    assert x.array is array and x.is_shared()
    empty = tricycle.tensor(np.zeros((0, 3), np.float32)).share_memory_()
    assert empty.is_shared() and empty.shape == (0, 3)
    for dtype in (np.int64, np.bool_, np.float16):
        y = tricycle.tensor(np.arange(4).astype(dtype)).share_memory_()
        assert y.dtype == dtype and y.is_shared()
        np.testing.assert_array_equal(y.numpy(), np.arange(4).astype(dtype))


def test_module_share_memory_shares_parameters_buffers_and_gradients():
    torch = pytest.importorskip("torch")
    layer = tricycle.nn.BatchNorm1d(3)
    layer(tricycle.tensor(np.ones((2, 3), np.float32))).sum().backward()
    twin = torch.nn.BatchNorm1d(3)
    twin(torch.ones(2, 3)).sum().backward()
    assert layer.share_memory() is layer and twin.share_memory() is twin
    ours = [t.is_shared() for _, t in layer.named_tensors()]
    theirs = [t.is_shared() for t in (*twin.parameters(), *twin.buffers())]
    assert all(ours) and all(theirs)  # torch has num_batches_tracked beside
    assert all(p.grad.is_shared() for p in layer.parameters())


def test_pickle_still_copies_and_a_non_leaf_needing_grad_is_refused():
    x = tricycle.tensor(np.ones(3, np.float32)).share_memory_()
    assert not pickle.loads(pickle.dumps(x)).is_shared()  # pickle and save copy, as torch's
    y = Tensor(np.ones(3, np.float32), requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        ForkingPickler.dumps(y)  # what a Queue, Pipe or Pool pickles with


def test_segments_are_freed_with_their_last_array(strategy):
    x = tricycle.tensor(np.ones(4, np.float32)).share_memory_()
    segment, offset = shared_memory.segment_of(x.array)
    assert offset == 0 and segment.size == 16
    if strategy == "file_system":
        handle = segment.path
        assert os.path.exists(handle)
    else:
        handle = segment.fd
        os.fstat(handle)
    view = x[2:]
    del x, segment
    gc.collect()
    assert view.is_shared()  # a view keeps the segment
    del view
    gc.collect()
    if strategy == "file_system":
        assert not os.path.exists(handle)
    else:
        with pytest.raises(OSError):
            os.fstat(handle)


# ====================================================================== between processes
def test_a_childs_write_is_seen_by_the_parent(strategy):
    context = mp.get_context("spawn")
    x = tricycle.tensor(np.arange(4, dtype=np.float32)).share_memory_()
    child = context.Process(target=add_one, args=(x,))
    child.start()
    child.join(20)
    assert child.exitcode == 0
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3, 4])

    queue_in, queue_out = context.Queue(), context.Queue()
    child = context.Process(target=echo_plus, args=(queue_in, queue_out))
    child.start()
    y = tricycle.tensor(np.array([1.0, 2.0, 3.0], np.float32))
    queue_in.put(y)  # moved into shared memory as it is sent, as torch's
    child_shared, back, view = queue_out.get(timeout=20)
    queue_in.put("done")
    child.join(20)
    assert y.is_shared() and child_shared and back.is_shared() and view.is_shared()
    np.testing.assert_array_equal(y.numpy(), [10, 20, 30])
    with tricycle.no_grad():
        back.add_(1)  # the returned tensor is the same memory again
    np.testing.assert_array_equal(y.numpy(), [11, 21, 31])
    np.testing.assert_array_equal(view.numpy(), [21, 31])


def test_hogwild_step_through_a_pipe_and_a_pool():
    context = mp.get_context("spawn")
    tricycle.manual_seed(0)
    model = tricycle.nn.Linear(3, 2)
    before = {n: t.numpy().copy() for n, t in model.named_tensors()}
    ours, theirs = context.Pipe()
    child = context.Process(target=sgd_step, args=(theirs,))
    child.start()
    ours.send(model.share_memory())
    assert ours.recv() == "stepped"
    ours.send("done")
    child.join(20)
    expected = tricycle.nn.Linear(3, 2)  # the same step here, from the same weights
    for name, tensor in expected.named_tensors():
        tensor.array[...] = before[name]
    expected(tricycle.tensor(np.ones((2, 3), np.float32))).sum().backward()
    tricycle.optim.SGD(expected.parameters(), lr=0.5).step()
    for (name, tensor), (_, want) in zip(model.named_tensors(), expected.named_tensors()):
        assert not np.allclose(tensor.numpy(), before[name])
        np.testing.assert_allclose(tensor.numpy(), want.numpy(), rtol=1e-6)

    chunks = [tricycle.tensor(np.full(2, v, np.float32)) for v in (2.0, 3.0)]
    with context.Pool(1) as pool:
        sums = pool.map(square_in_place, chunks)
    assert sums == [8.0, 18.0]
    np.testing.assert_array_equal(chunks[0].numpy(), [4, 4])
    np.testing.assert_array_equal(chunks[1].numpy(), [9, 9])


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_a_gpu_tensor_is_shared_as_torch_answers_and_pickled_to_the_host():
    x = tricycle.tensor([1.0, 2.0, 3.0]).to("cuda")
    array = x.array
    assert x.is_shared() and x.share_memory_() is x and x.array is array  # torch: a no-op
    copied = pickle.loads(pickle.dumps(x))
    assert copied.device.type == "cpu"  # pickle copies to the host
    got = ForkingPickler.loads(ForkingPickler.dumps(x))  # a Queue's: CUDA IPC (test_cuda_ipc)
    assert got.device.type == "cuda" and got.array.data.ptr == array.data.ptr
    np.testing.assert_array_equal(got.numpy(), [1, 2, 3])
