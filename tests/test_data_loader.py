"""tricycle.data.DataLoader: order, shuffled epochs, drop_last, collate, worker processes
(the same batches; errors, deaths and Ctrl-C), the per-rank split and resuming."""

import collections
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tricycle.data import DataLoader, WorkerError, default_collate
from tricycle.dataset import CausalLMDataset, Dataset
from tricycle.tensor import Tensor

ROOT = Path(__file__).resolve().parents[1]


def pairs(n: int = 10):
    """A map-style dataset: (features (3,), label) examples."""
    return [(np.full(3, i, dtype=np.float32), i) for i in range(n)]


def labels(loader) -> list[list[int]]:
    return [batch[1].tolist() for batch in loader]


class Stream:
    """An iterable dataset of the numbers 0..n-1, read anew at each iteration."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


# ====================================================================== order and epochs
def test_batches_in_order_with_and_without_the_last_partial_one():
    assert labels(DataLoader(pairs(10), batch_size=4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert labels(DataLoader(pairs(10), batch_size=4, drop_last=True)) == [
        [0, 1, 2, 3], [4, 5, 6, 7]
    ]  # fmt: skip
    assert len(DataLoader(pairs(10), batch_size=4)) == 3
    assert len(DataLoader(pairs(10), batch_size=4, drop_last=True)) == 2
    features, label = next(iter(DataLoader(pairs(10), batch_size=4)))
    assert features.shape == (4, 3) and features.dtype == np.float32
    np.testing.assert_array_equal(features[:, 0], [0, 1, 2, 3])


def test_shuffle_gives_a_new_order_each_epoch_and_the_same_orders_every_run():
    first, second = (
        DataLoader(pairs(20), 5, shuffle=True, seed=3),
        DataLoader(pairs(20), 5, shuffle=True, seed=3),
    )
    epochs = [sum(labels(first), []) for _ in range(3)]
    assert epochs == [sum(labels(second), []) for _ in range(3)]  # reproducible
    for order in epochs:
        assert sorted(order) == list(range(20))  # each epoch visits every example once
    assert epochs[0] != epochs[1] != epochs[2]
    assert sum(labels(DataLoader(pairs(20), 5, shuffle=True, seed=4)), []) != epochs[0]
    first.set_epoch(1)
    assert sum(labels(first), []) == epochs[1]


def test_an_iterable_dataset_in_its_own_order_and_a_dataset_of_batches():
    assert labels_of(DataLoader(Stream(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert labels_of(DataLoader(Stream(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    windows = CausalLMDataset(np.arange(100) % 7, 7, 4, 8, seed=1).batch()
    expected = CausalLMDataset(np.arange(100) % 7, 7, 4, 8, seed=1).batch()
    loader = iter(DataLoader(windows, batch_size=None))
    for _ in range(3):  # the stream's own batches, as the training script draws them
        inputs, targets = next(loader)
        want = next(expected)
        np.testing.assert_array_equal(inputs, want[0])
        np.testing.assert_array_equal(targets, want[1])
    with pytest.raises(ValueError, match="shuffle needs a map-style dataset"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(TypeError, match="iterable dataset .* has no length"):
        len(DataLoader(Stream(3)))


def labels_of(loader) -> list[list[int]]:
    return [batch.tolist() for batch in loader]


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="DataLoader: the dataset must have __len__"):
        DataLoader(42)
    with pytest.raises(ValueError, match="DataLoader: rank must be below world_size"):
        DataLoader(pairs(), rank=2, world_size=2)
    with pytest.raises(ValueError, match="DataLoader: batch_size must be"):
        DataLoader(pairs(), batch_size=0)


# ====================================================================== collate
def test_default_collate_follows_the_structure_of_an_example():
    Point = collections.namedtuple("Point", "x y")
    examples = [
        {"image": np.ones((2, 2)) * i, "label": i, "name": f"n{i}", "pair": (i, 2.5 * i),
         "point": Point(i, -i), "t": Tensor(np.array([i, i], dtype=np.float32))}
        for i in range(3)
    ]  # fmt: skip
    batch = default_collate(examples)
    assert batch["image"].shape == (3, 2, 2)
    np.testing.assert_array_equal(batch["label"], [0, 1, 2])
    assert isinstance(batch["label"], Tensor) and batch["label"].size(0) == 3  # as torch's
    assert batch["label"].dtype == np.int64 and batch["pair"][1].dtype == np.float64
    assert batch["name"] == ["n0", "n1", "n2"]
    np.testing.assert_array_equal(batch["pair"][1], [0.0, 2.5, 5.0])
    assert isinstance(batch["point"], Point)
    np.testing.assert_array_equal(batch["point"].y, [0, -1, -2])
    assert isinstance(batch["t"], Tensor) and batch["t"].shape == (3, 2)
    with pytest.raises(ValueError, match=r"cannot stack arrays of shapes \[\(2,\), \(3,\)\]"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="cannot batch examples of type object"):
        default_collate([object()])


def test_a_collate_fn_of_ones_own():
    loader = DataLoader(pairs(6), batch_size=3, collate_fn=lambda items: sum(i for _, i in items))
    assert list(loader) == [3, 12]


# ====================================================================== workers
def slow_pairs(n: int, seconds: float = 0.0):
    return SlowPairs(n, seconds)


class SlowPairs:
    def __init__(self, n, seconds=0.0, fail_at=None, die_at=None):
        self.n, self.seconds, self.fail_at, self.die_at = n, seconds, fail_at, die_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise_from_deep_inside(i)
        if i == self.die_at:
            os._exit(7)
        time.sleep(self.seconds)
        return np.full(2, i, dtype=np.int64), i


def raise_from_deep_inside(i):
    raise ValueError(f"example {i} is broken")


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("drop_last", [False, True])
def test_workers_give_the_batches_of_no_workers(shuffle, drop_last):
    options = dict(batch_size=3, shuffle=shuffle, seed=1, drop_last=drop_last)
    plain = DataLoader(SlowPairs(23), **options)
    workers = DataLoader(SlowPairs(23), **options, num_workers=3, prefetch_factor=1)
    for _ in range(2):  # two epochs
        assert labels(workers) == labels(plain)


def test_workers_on_an_iterable_dataset_and_a_rank_share():
    for world_size, rank in [(1, 0), (3, 2)]:
        plain = DataLoader(Stream(20), batch_size=3, rank=rank, world_size=world_size)
        workers = DataLoader(Stream(20), batch_size=3, rank=rank, world_size=world_size,
                             num_workers=2)  # fmt: skip
        assert labels_of(workers) == labels_of(plain)


def test_a_worker_that_raises_delivers_its_traceback_to_the_main_process():
    others = _children()
    loader = DataLoader(SlowPairs(20, fail_at=7), batch_size=2, num_workers=2)
    seen = []
    with pytest.raises(WorkerError) as caught:
        for batch in loader:
            seen.append(batch[1].tolist())
    message = str(caught.value)
    assert "worker 1 raised ValueError while making batch 3" in message
    assert "raise_from_deep_inside" in message and "example 7 is broken" in message
    assert seen == [[0, 1], [2, 3], [4, 5]]  # the batches before it, in order
    assert not _children() - others


def test_a_worker_that_dies_is_an_error_not_a_hang():
    others = _children()
    loader = DataLoader(SlowPairs(20, die_at=4), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="ended unexpectedly with exit code 7"):
        list(loader)
    assert time.monotonic() - start < 10
    assert not _children() - others


def test_leaving_the_loop_early_stops_the_workers():
    others = _children()
    loader = DataLoader(SlowPairs(50), batch_size=2, num_workers=2)
    iterator = iter(loader)
    next(iterator)
    assert len(_children() - others) == 2
    iterator.close()  # what the garbage collector does to a loop left by break
    assert not _children() - others


def test_a_worker_left_with_unread_batches_exits_by_itself():
    """A loop left early leaves batches a worker made and no one will read: told to stop,
    the worker exits at once (exit code 0), as torch's, not terminated after waiting to
    write them to the pipe."""
    import multiprocessing

    class Large:  # batches larger than a pipe holds: the worker's writer blocks on them
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return np.full(40_000, i)

    others = _children()
    loader = DataLoader(Large(), batch_size=1, num_workers=1)
    iterator = iter(loader)
    next(iterator)
    workers = [p for p in multiprocessing.active_children() if p.pid not in others]
    iterator.close()
    assert [worker.exitcode for worker in workers] == [0]


def _children() -> set:
    """The pids of this process's living children (multiprocessing's): other tests run in
    this process may have left theirs, so a test compares with those it found."""
    import multiprocessing

    return {p.pid for p in multiprocessing.active_children() if p.is_alive()}


CTRL_C_SCRIPT = """
import os, signal, sys, time
import numpy as np
# as from a terminal: pytest-xdist's workers ignore SIGINT, and a child inherits that
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
from tricycle.data import DataLoader

class Slow:
    def __len__(self): return 10_000
    def __getitem__(self, i):
        time.sleep(0.05)
        return np.zeros(2)

loader = DataLoader(Slow(), batch_size=4, num_workers=3)
import multiprocessing
for k, batch in enumerate(loader):
    if k == 0:
        pids = [p.pid for p in multiprocessing.active_children()]
        print(" ".join(map(str, pids)), flush=True)
"""


def test_ctrl_c_with_workers_leaves_no_process_behind(tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(CTRL_C_SCRIPT))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)  # fmt: skip
    try:
        pids = [int(p) for p in process.stdout.readline().split()]
        assert len(pids) == 3, process.stderr.read()
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode != 0
    assert "KeyboardInterrupt" in stderr
    assert stderr.count("Traceback") == 1, stderr  # the main process's alone
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (ended, its parent gone) is not running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


# ====================================================================== ranks
@pytest.mark.parametrize("n", [10, 11, 12])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_get_disjoint_equal_shares_padded_like_torch(n, drop_last):
    world = 3
    shares = [sum(labels(DataLoader(pairs(n), 1, shuffle=True, seed=5, drop_last=drop_last,
                                    rank=r, world_size=world)), [])  # fmt: skip
              for r in range(world)]  # fmt: skip
    assert len({len(s) for s in shares}) == 1  # every rank the same number of examples
    union = sum(shares, [])
    if drop_last:
        assert len(set(union)) == len(union) == n // world * world
    else:
        assert set(union) == set(range(n)) and len(union) == -(-n // world) * world
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    order = DataLoader(pairs(n), shuffle=True, seed=5)._rank_indices(0)
    for r in range(world):  # the same positions of the epoch's order as torch's sampler
        sampler = DistributedSampler(range(n), world, r, shuffle=False, drop_last=drop_last)
        want = [int(order[i]) for i in sampler]
        got = DataLoader(pairs(n), shuffle=True, seed=5, rank=r, world_size=world,
                         drop_last=drop_last)._rank_indices(0)  # fmt: skip
        assert got.tolist() == want
    del torch


def test_the_ranks_batches_together_are_the_one_process_batches():
    one = labels(DataLoader(pairs(24), 6, shuffle=True, seed=2))
    ranks = [labels(DataLoader(pairs(24), 3, shuffle=True, seed=2, rank=r, world_size=2))
             for r in range(2)]  # fmt: skip
    assert [sorted(a + b) for a, b in zip(*ranks)] == [sorted(batch) for batch in one]
    stream = [labels_of(DataLoader(Stream(24), 3, rank=r, world_size=2)) for r in range(2)]
    assert [sorted(a + b) for a, b in zip(*stream)] == [
        list(range(k, k + 6)) for k in range(0, 24, 6)
    ]
    padded = [labels_of(DataLoader(Stream(7), 2, rank=r, world_size=3)) for r in range(3)]
    assert padded == [[[0, 3], [6]], [[1, 4], [0]], [[2, 5], [1]]]


def test_shard_keeps_the_settings_and_the_seed():
    loader = DataLoader(pairs(12), 2, shuffle=True, num_workers=0)
    shards = [loader.shard(r, 2) for r in range(2)]
    assert {s.seed for s in shards} == {loader.seed}
    assert sorted(sum(map(lambda s: sum(labels(s), []), shards), [])) == list(range(12))
    batches = DataLoader([(np.zeros(2), np.ones(2))], batch_size=None)  # items are batches
    for got in (next(iter(batches)), next(iter(batches.shard(0, 1)))):  # not collated again
        assert isinstance(got, list) and [a.tolist() for a in got] == [[0, 0], [1, 1]]


# ====================================================================== resuming
@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_loader_resumes_mid_epoch_where_it_stood(num_workers):
    loader = DataLoader(pairs(20), 3, shuffle=True, seed=9, num_workers=num_workers)
    first_epoch = labels(loader)
    iterator = iter(loader)
    taken = [next(iterator)[1].tolist() for _ in range(2)]
    state = loader.state_dict()
    rest = [batch[1].tolist() for batch in iterator]
    assert state == {"epoch": 1, "position": 2, "seed": 9}
    resumed = DataLoader(pairs(20), 3, shuffle=True, seed=0, num_workers=num_workers)
    resumed.load_state_dict(state)
    assert labels(resumed) == rest and taken + rest != first_epoch  # epoch 1, not 0 again
    assert labels(resumed) == _epoch(2)  # and then the next epoch


def _epoch(e: int) -> list:
    loader = DataLoader(pairs(20), 3, shuffle=True, seed=9)
    loader.set_epoch(e)
    return labels(loader)


def test_a_stream_with_a_state_resumes_from_it():
    def windows():
        return CausalLMDataset(np.arange(200) % 11, 11, 2, 4, seed=3).batch()

    loader = DataLoader(windows(), batch_size=None)
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    want = [next(iterator)[0] for _ in range(2)]
    resumed = DataLoader(windows(), batch_size=None)
    resumed.load_state_dict(state)
    got = iter(resumed)
    for expected in want:
        np.testing.assert_array_equal(next(got)[0], expected)


def test_a_tricycle_dataset_is_map_style():
    data = Dataset(np.arange(12).reshape(6, 2), np.arange(6))
    assert labels(DataLoader(data, 4)) == [[0, 1, 2, 3], [4, 5]]


def test_split_batches_gives_each_rank_its_rows_as_the_training_script():
    tokens = np.arange(500) % 13

    def global_stream():
        return CausalLMDataset(tokens, 13, 4, 6, seed=2).batch()  # global batches of 4

    for rank in range(2):
        loader = iter(DataLoader(global_stream(), batch_size=None, rank=rank, world_size=2,
                                 split_batches=True))  # fmt: skip
        script = CausalLMDataset(tokens, 13, 2, 6, seed=2, rank=rank, world_size=2).batch()
        for _ in range(3):
            got, want = next(loader), next(script)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
    odd = DataLoader(pairs(6), 3, world_size=2, split_batches=True)
    with pytest.raises(ValueError, match="a batch of 3 rows does not split evenly over 2"):
        next(iter(odd))


@pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(),
                    reason="a forked worker inherits its parent's signal handlers")  # fmt: skip
def test_a_busy_worker_ends_when_terminated_whatever_sigterm_handler_it_inherited():
    """``close`` terminates a worker still inside a batch (SIGTERM). A forked worker inherits
    the main process's handlers (a training loop's stop-after-this-step, data
    parallelism's interrupt), which would keep it running: it must end all the same."""
    import multiprocessing
    import threading

    from tricycle.apps.workers import STOP_SECONDS, WorkerPool

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are set in the main thread only")
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)  # does not end
    try:
        pool = WorkerPool(lambda worker_id: lambda k, indices: time.sleep(60), 1, 1,
                          multiprocessing.get_context("fork"))  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
    workers = list(pool.workers)
    try:
        pool.tasks[0].put(("epoch", 0, 0))  # as pool.batches() begins an epoch
        pool.tasks[0].put(("batch", 0, 0, [0]))
        time.sleep(0.5)  # the worker is inside its batch
        start, stop_seconds = time.monotonic(), STOP_SECONDS / 4  # its length is not under test
        pool.close(stop_seconds)  # asked, waited for in vain, then terminated
        assert time.monotonic() - start < 2 * stop_seconds + 1
        assert not any(worker.is_alive() for worker in workers)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
                worker.join()


class _Draws:
    """Each item a number from tricycle's generator: a random augmentation."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        from tricycle.random import generator

        return generator().random()


def test_workers_draw_from_reseeded_generators_as_torchs_do():
    """Forked workers each reseed tricycle's, numpy's and Python's generators (torch's do):
    otherwise the two workers repeat each other's augmentations, every epoch alike."""
    loader = DataLoader(_Draws(), batch_size=1, num_workers=2)
    epochs = [[float(batch[0]) for batch in loader] for _ in range(2)]
    assert len({value for epoch in epochs for value in epoch}) == 8  # none repeated


def test_the_default_seed_follows_manual_seed_and_is_shared_by_ranks():
    from tricycle.random import manual_seed

    orders = []
    for _ in range(2):
        manual_seed(0)
        orders.append([b.tolist() for b in DataLoader(list(range(10)), 5, shuffle=True)])
    assert orders[0] == orders[1]
    ranks = [next(iter(DataLoader(list(range(10)), 10, shuffle=True, rank=r, world_size=2)))
             for r in (0, 1)]  # fmt: skip
    assert sorted(np.concatenate(ranks).tolist()) == list(range(10))  # disjoint, all of it


def test_items_that_are_batches_go_through_collate_fn():
    assert list(DataLoader([0, 1, 2], None, collate_fn=lambda x: x * 10)) == [0, 10, 20]
    with pytest.raises(ValueError, match="drop_last=True needs a batch_size"):
        DataLoader([0, 1], None, drop_last=True)


# ====================================================================== samplers
class Backwards:
    """A sampler of one's own: any class with __iter__ (and __len__ for len(loader))."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        return iter(range(self.n - 1, -1, -1))

    def __len__(self):
        return self.n


def test_a_sampler_gives_the_order_of_torchs_loader():
    torch = pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader

    for sampler, drop_last in [([3, 1, 4, 1, 5, 9, 2, 6], False), (Backwards(10), True)]:
        ours = DataLoader(pairs(10), 3, sampler=sampler, drop_last=drop_last)
        theirs = TorchLoader(pairs(10), 3, sampler=sampler, drop_last=drop_last)
        assert labels(ours) == labels(theirs) and len(ours) == len(theirs)
        one = DataLoader(pairs(10), None, sampler=sampler)  # each item a batch, as torch's
        assert [int(b[1]) for b in one] == [
            int(b[1]) for b in TorchLoader(pairs(10), None, sampler=sampler)
        ]
    with_workers = DataLoader(pairs(10), 3, sampler=np.array([3, 1, 4, 1, 5, 9, 2, 6]),
                              num_workers=2)  # fmt: skip
    assert labels(with_workers) == [[3, 1, 4], [1, 5, 9], [2, 6]]
    del torch


def test_a_batch_sampler_gives_the_batches_of_torchs_loader():
    torch = pytest.importorskip("torch")
    from torch.utils.data import BatchSampler as TorchBatchSampler
    from torch.utils.data import DataLoader as TorchLoader
    from torch.utils.data import SequentialSampler as TorchSequential

    from tricycle.data import BatchSampler, SequentialSampler

    buckets = [[0, 1], [5, 2, 7], [9], [3, 3]]
    ours, theirs = (
        DataLoader(pairs(10), batch_sampler=buckets),
        TorchLoader(pairs(10), batch_sampler=buckets),
    )
    assert labels(ours) == labels(theirs) == buckets and len(ours) == len(theirs) == 4
    assert labels(DataLoader(pairs(10), batch_sampler=buckets, num_workers=2)) == buckets
    for drop_last in (False, True):
        mine = BatchSampler(SequentialSampler(pairs(10)), 4, drop_last)
        torchs = TorchBatchSampler(TorchSequential(pairs(10)), 4, drop_last)
        assert list(mine) == list(torchs) and len(mine) == len(torchs)
        assert labels(DataLoader(pairs(10), batch_sampler=mine)) == labels(
            TorchLoader(pairs(10), batch_sampler=torchs)
        )
    del torch


class Epochs:
    """A sampler with set_epoch, as torch's DistributedSampler: records the epochs it gets."""

    def __init__(self):
        self.epochs = []

    def set_epoch(self, epoch):
        self.epochs.append(epoch)

    def __iter__(self):
        return iter([self.epochs[-1] % 10])

    def __len__(self):
        return 1


def test_a_sampler_with_set_epoch_is_given_each_epoch_as_torchs_users_do():
    pytest.importorskip("torch")
    from torch.utils.data import DataLoader as TorchLoader
    from torch.utils.data import DistributedSampler

    # a DistributedSampler on a loader of one process: torch's way, the same shares
    sampler, torchs = (DistributedSampler(pairs(11), 2, 1, shuffle=True, seed=4) for _ in "ab")
    ours, theirs = (
        DataLoader(pairs(11), 2, sampler=sampler),
        TorchLoader(pairs(11), 2, sampler=torchs),
    )
    epochs = []
    for epoch in range(2):
        torchs.set_epoch(epoch)  # what a torch loop does; the loader does it itself
        epochs.append(labels(ours))
        assert epochs[-1] == labels(theirs)
    assert epochs[0] != epochs[1]
    told = Epochs()
    loader = DataLoader(pairs(10), 1, sampler=told, num_workers=2)
    labels(loader), labels(loader)
    loader.set_epoch(7)
    assert labels(loader) == [[7]] and told.epochs == [0, 1, 7]
    from torch.utils.data import BatchSampler as TorchBatchSampler

    inner = Epochs()  # torch's BatchSampler has no set_epoch: its sampler is told
    loader = DataLoader(pairs(10), batch_sampler=TorchBatchSampler(inner, 1, False))
    assert labels(loader) == [[0]] and labels(loader) == [[1]] and inner.epochs == [0, 1]


def test_ranks_split_a_samplers_order_and_a_batch_samplers_batches():
    order = [9, 8, 7, 6, 5, 4, 3]
    shares = [sum(labels(DataLoader(pairs(10), 2, sampler=order, rank=r, world_size=3)), [])
              for r in range(3)]  # fmt: skip
    assert shares == [[9, 6, 3], [8, 5, 9], [7, 4, 8]]  # positions r, r + 3, ... padded
    assert len(DataLoader(pairs(10), 2, sampler=order, rank=0, world_size=3)) == 2
    cut = [sum(labels(DataLoader(pairs(10), 2, sampler=order, rank=r, world_size=3,
                                 drop_last=True)), []) for r in range(3)]  # fmt: skip
    assert cut == [[9, 6], [8, 5], [7, 4]]
    buckets = [[0, 1], [2], [3, 4, 5]]
    assert [labels(DataLoader(pairs(10), batch_sampler=buckets, rank=r, world_size=2))
            for r in range(2)] == [[[0, 1], [3, 4, 5]], [[2], [0, 1]]]  # fmt: skip
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    split = DistributedSampler(pairs(10), num_replicas=2, rank=0)
    with pytest.raises(ValueError, match=r"sampler \(DistributedSampler\) splits the dataset "
                                         r"between 2 ranks itself.*world_size=2"):  # fmt: skip
        DataLoader(pairs(10), sampler=split).shard(0, 2)
    del torch


def test_tricycles_samplers_repeat_from_a_seed_and_follow_the_loaders():
    from tricycle.data import RandomSampler, SubsetRandomSampler, WeightedRandomSampler

    data = pairs(12)
    shuffled = labels(DataLoader(data, 5, shuffle=True, seed=3))
    assert labels(DataLoader(data, 5, sampler=RandomSampler(data), seed=3)) == shuffled
    # on two ranks the sampler takes the loader's seed: disjoint shares of one order
    ranks = [sum(labels(DataLoader(data, 3, sampler=RandomSampler(data), rank=r,
                                   world_size=2)), []) for r in range(2)]  # fmt: skip
    assert sorted(ranks[0] + ranks[1]) == list(range(12))
    subset = SubsetRandomSampler([1, 3, 5, 7, 9], seed=0)
    epochs = [list(subset) for _ in range(2)]
    assert sorted(epochs[0]) == sorted(epochs[1]) == [1, 3, 5, 7, 9] and epochs[0] != epochs[1]
    assert list(SubsetRandomSampler([1, 3, 5, 7, 9], seed=0)) == epochs[0]  # repeats
    rounds = list(RandomSampler(range(4), num_samples=10, seed=1))
    assert sorted(rounds[:4]) == sorted(rounds[4:8]) == [0, 1, 2, 3] and len(rounds) == 10
    drawn = list(WeightedRandomSampler([0.0, 1.0, 3.0], 4000, seed=0))
    np.testing.assert_allclose(np.bincount(drawn, minlength=3) / 4000, [0, 0.25, 0.75],
                               atol=0.03)  # fmt: skip
    assert sorted(WeightedRandomSampler([1, 0, 2, 5], 3, replacement=False, seed=0)) == [0, 2, 3]
    with pytest.raises(ValueError, match="cannot draw 3 samples without replacement from 2"):
        WeightedRandomSampler([1, 0, 2], 3, replacement=False)
    with pytest.raises(ValueError, match=r"weights must be finite numbers >= 0, got \[-1.0\]"):
        WeightedRandomSampler([1, -1], 3)


def test_the_combinations_torch_refuses_are_refused_with_its_words():
    from tricycle.data import BatchSampler

    cases = [
        (dict(sampler=[0], shuffle=True), ValueError, "sampler option is mutually exclusive "
                                                      "with shuffle"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually"
                                                              " exclusive with batch_size"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "mutually exclusive"),
        (dict(batch_sampler=[[0]], sampler=[0]), ValueError, "mutually exclusive"),
        (dict(sampler=BatchSampler([0, 1], 2, False)), TypeError, "pass it as batch_sampler"),
        (dict(sampler=3), TypeError, "sampler must be an iterable of indices"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs "
                                                    "num_workers > 0"),
        (dict(multiprocessing_context="spawn"), ValueError, "multiprocessing_context can only "
                                                            "be used with multi-process"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, "valid start method"),
        (dict(generator=object()), TypeError, "generator must be a seed .* or pass seed=<int>"),
        (dict(generator=1, seed=1), ValueError, "pass seed or generator, not both"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(pin_memory_device="cuda"), TypeError, "pass device=<GPU index>"),
    ]  # fmt: skip
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            DataLoader(pairs(4), **kwargs)
    for kwargs in [dict(sampler=[0]), dict(batch_sampler=[[0]])]:
        with pytest.raises(ValueError, match=f"DataLoader: {next(iter(kwargs))} needs a "
                                             "map-style dataset"):  # fmt: skip
            DataLoader(Stream(3), **kwargs)
    with pytest.raises(TypeError, match="batch_sampler must yield lists of indices; its batch "
                                        "0 is a int"):  # fmt: skip
        list(DataLoader(pairs(4), batch_sampler=[0, 1]))
    with pytest.raises(TypeError, match="len\\(\\) needs the length of the sampler"):
        len(DataLoader(pairs(4), sampler=iter([0, 1])))


# ====================================================================== worker_init_fn
def note_worker(worker_id: int) -> None:
    """A worker_init_fn: appends its worker, process and first numpy draw to a file, and
    sets state the items read."""
    global WORKER_TAG
    WORKER_TAG = 100 * (worker_id + 1)
    with open(os.environ["TRICYCLE_TEST_INIT_LOG"], "a") as log:
        log.write(f"{worker_id} {os.getpid()} {np.random.random_sample()!r}\n")


WORKER_TAG = 0  # what the main process's items read


class Tagged:
    """Items that read the state worker_init_fn sets, the process and a random draw."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        from tricycle.random import generator

        return WORKER_TAG + i, os.getpid(), generator().random()


def init_log(tmp_path, monkeypatch) -> Path:
    log = tmp_path / "init.log"
    monkeypatch.setenv("TRICYCLE_TEST_INIT_LOG", str(log))
    return log


def test_worker_init_fn_runs_in_each_worker_after_it_is_seeded(tmp_path, monkeypatch):
    log = init_log(tmp_path, monkeypatch)
    loader = DataLoader(Tagged(), 1, seed=5, num_workers=2, worker_init_fn=note_worker)
    assert [int(batch[0][0]) for batch in loader] == [100, 201, 102, 203]  # k -> worker k % 2
    lines = [line.split() for line in log.read_text().splitlines()]
    assert sorted(int(w) for w, _, _ in lines) == [0, 1]
    assert len({pid for _, pid, _ in lines}) == 2 and str(os.getpid()) not in lines[0]
    for w, _, draw in lines:  # after its generators were seeded with seed + w
        assert float(draw) == np.random.RandomState(5 + int(w)).random_sample()


def broken_init(worker_id: int) -> None:
    raise OSError(f"worker {worker_id} cannot open its file")


def test_a_worker_init_fn_that_raises_is_reported_with_its_traceback():
    others = _children()
    loader = DataLoader(pairs(4), 2, num_workers=2, worker_init_fn=broken_init)
    with pytest.raises(WorkerError, match=r"worker 0 raised OSError in worker_init_fn; its "
                                          r"traceback:\n(.|\n)*cannot open its file"):  # fmt: skip
        list(loader)
    assert not _children() - others


# ====================================================================== persistent workers
def test_persistent_workers_stay_between_epochs_and_are_reseeded(tmp_path, monkeypatch):
    log = init_log(tmp_path, monkeypatch)
    others = _children()
    options = dict(batch_size=1, seed=2, num_workers=2, worker_init_fn=note_worker)
    loader = DataLoader(Tagged(), persistent_workers=True, **options)
    epochs = [list(loader) for _ in range(3)]
    pids = [{int(batch[1][0]) for batch in epoch} for epoch in epochs]
    assert pids[0] == pids[1] == pids[2] == _children() - others and len(pids[0]) == 2
    assert len(log.read_text().splitlines()) == 2  # worker_init_fn: once per process
    draws = [[float(batch[2][0]) for batch in epoch] for epoch in epochs]
    assert len({d for epoch in draws for d in epoch}) == 12  # new seeds every epoch
    fresh = DataLoader(Tagged(), **options)  # the same draws as workers started anew
    assert [[float(batch[2][0]) for batch in fresh] for _ in range(3)] == draws
    next(iter(loader))  # a loop left early keeps them, and the next epoch is whole
    assert [int(b[0][0]) for b in loader] == [100, 201, 102, 203]
    assert {int(batch[1][0]) for batch in loader} == pids[0]
    loader.close()
    assert not _children() - others


def test_persistent_workers_end_with_the_loader_or_an_error():
    import gc

    others = _children()
    loader = DataLoader(pairs(6), 2, num_workers=2, persistent_workers=True)
    labels(loader)
    assert len(_children() - others) == 2
    del loader
    gc.collect()
    assert not _children() - others  # collected: the workers are stopped
    failing = DataLoader(SlowPairs(6, fail_at=3), 2, num_workers=2, persistent_workers=True)
    with pytest.raises(WorkerError, match="example 3 is broken"):
        labels(failing)
    assert not _children() - others  # an error stops them (the next epoch starts anew)
    first, second = iter(failing), None
    next(first)
    second = iter(failing)
    assert next(second)[1].tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="a newer iteration took over the persistent"):
        next(first)
    failing.close()
    assert not _children() - others
