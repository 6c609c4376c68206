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
                          multiprocessing.get_context("fork"), seed=0)  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
    workers = list(pool.workers)
    try:
        pool.tasks[0].put((0, [0]))
        time.sleep(0.5)  # the worker is inside its batch
        start = time.monotonic()
        pool.close()
        assert time.monotonic() - start < 2 * STOP_SECONDS + 1
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
