"""tricycle.data's DataLoader against torch's on the arguments and helpers a port passes:
get_worker_info in workers and torch's sharded IterableDataset idiom, generator=,
batch_size=None with default_convert, DistributedSampler, Sampler, pin_memory, in_order."""

import math
from collections import Counter

import numpy as np
import pytest

from tricycle.data import (
    DataLoader,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    WeightedRandomSampler,
    default_convert,
    get_worker_info,
)
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
tdata = torch.utils.data
# torch's loader warns of 3 workers on a machine of 2 cores: they only read small lists here
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


def as_lists(batches) -> list:
    """Batches of numbers (ours: numpy arrays, torch's: tensors) as lists."""
    return [np.asarray(batch).tolist() for batch in batches]


# ====================================================================== get_worker_info
class WhoAmI:
    """A map-style dataset whose items say which worker read them, using ``info_fn``
    (tricycle's or torch's get_worker_info)."""

    def __init__(self, info_fn, n: int = 6):
        self.info_fn, self.n = info_fn, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        info = self.info_fn()
        return np.array([info.id, info.num_workers, info.seed - info.id, info.dataset is self])


def test_get_worker_info_gives_each_worker_torchs_fields():
    assert get_worker_info() is None  # the main process
    ours = DataLoader(WhoAmI(get_worker_info), 1, seed=11, num_workers=3)
    theirs = tdata.DataLoader(WhoAmI(tdata.get_worker_info), 1, num_workers=3)
    got, want = as_lists(ours), as_lists(theirs)
    # batch k from worker k % 3 in both, each worker's own dataset copy; the seeds are
    # seed + id in both (torch's base seed is random, ours the loader's seed in epoch 0)
    assert [row[0][:2] + row[0][3:] for row in got] == [row[0][:2] + row[0][3:] for row in want]
    assert [row[0][:2] for row in got] == [[k % 3, 3] for k in range(6)]
    assert {row[0][2] for row in got} == {11} and len({row[0][2] for row in want}) == 1
    assert all(row[0][3] == 1 for row in got)


# ====================================================================== iterable datasets
class Range(IterableDataset):
    """torch's documented example: start..end-1, each worker yielding its own slice (asked
    of ``info_fn``), or all of it in the main process."""

    def __init__(self, start: int, end: int, info_fn, last_takes_the_rest: bool = False):
        self.start, self.end, self.info_fn = start, end, info_fn
        self.last_takes_the_rest = last_takes_the_rest  # else torch's: the last has fewer

    def __iter__(self):
        info = self.info_fn()
        if info is None:
            return iter(range(self.start, self.end))
        if self.last_takes_the_rest:
            per_worker = (self.end - self.start) // info.num_workers
            low = self.start + info.id * per_worker
            last = info.id == info.num_workers - 1
            return iter(range(low, self.end if last else low + per_worker))
        per_worker = math.ceil((self.end - self.start) / info.num_workers)
        low = self.start + info.id * per_worker
        return iter(range(low, min(low + per_worker, self.end)))


class TorchRange(Range, tdata.IterableDataset):
    """Range for torch's loader, which reads only its own IterableDataset as a stream."""


def test_a_sharded_iterable_dataset_gives_torchs_batches_each_item_once():
    # shards [0..3], [4..7], [8, 9]: the last worker runs out a round before the others
    want = as_lists(tdata.DataLoader(TorchRange(0, 10, tdata.get_worker_info), 2, num_workers=3))
    assert want == [[0, 1], [4, 5], [8, 9], [2, 3], [6, 7]]
    ours = DataLoader(Range(0, 10, get_worker_info), 2, num_workers=3, persistent_workers=True)
    assert as_lists(ours) == as_lists(ours) == want  # two epochs, the same workers
    ours.close()
    assert as_lists(DataLoader(Range(0, 10, get_worker_info), 2)) == [[0, 1], [2, 3], [4, 5],
                                                                     [6, 7], [8, 9]]  # fmt: skip

    # shards [0, 1], [2, 3], [4..7]: two workers run out before the last; resumed after the
    # batch that follows, the loader goes on from there
    want = as_lists(tdata.DataLoader(TorchRange(0, 8, tdata.get_worker_info, True), 1,
                                     num_workers=3))  # fmt: skip
    assert want == [[0], [2], [4], [1], [3], [5], [6], [7]]
    loader = DataLoader(Range(0, 8, get_worker_info, True), 1, num_workers=3)
    assert as_lists(loader) == want
    iterator = iter(loader)
    taken = as_lists(next(iterator) for _ in range(7))
    state = loader.state_dict()
    iterator.close()
    resumed = DataLoader(Range(0, 8, get_worker_info, True), 1, num_workers=3)
    resumed.load_state_dict(state)
    assert taken + as_lists(resumed) == want


class Window(IterableDataset):
    """start..end-1, with no sharding of its own: worker_init_fn shards it (torch's second
    idiom)."""

    def __init__(self, start: int, end: int):
        self.start, self.end = start, end

    def __iter__(self):
        return iter(range(self.start, self.end))


class TorchWindow(Window, tdata.IterableDataset):
    """Window for torch's loader."""


def shard_window(info):
    dataset = info.dataset  # this worker's copy
    per_worker = math.ceil((dataset.end - dataset.start) / info.num_workers)
    dataset.start += info.id * per_worker
    dataset.end = min(dataset.start + per_worker, dataset.end)


def test_a_worker_init_fn_that_shards_the_workers_copy_works_as_torchs():
    want = tdata.DataLoader(
        TorchWindow(0, 9),
        2,
        num_workers=2,
        worker_init_fn=lambda _: shard_window(tdata.get_worker_info()),
    )
    got = DataLoader(Window(0, 9), 2, num_workers=2,
                     worker_init_fn=lambda _: shard_window(get_worker_info()))  # fmt: skip
    assert as_lists(got) == as_lists(want) == [[0, 1], [5, 6], [2, 3], [7, 8], [4]]


def test_an_unsharded_stream_is_shared_by_the_workers_where_torch_repeats_it():
    torch_items = Counter(sum(as_lists(tdata.DataLoader(TorchWindow(0, 7), 2, num_workers=2)), []))
    assert torch_items == Counter(2 * list(range(7)))  # each item once per worker
    # tricycle's workers share a stream nobody shards: the batches of num_workers=0
    ours = DataLoader(Window(0, 7), 2, num_workers=2)
    assert as_lists(ours) == as_lists(DataLoader(Window(0, 7), 2)) == [[0, 1], [2, 3], [4, 5],
                                                                       [6]]  # fmt: skip


# ====================================================================== the loader's arguments
def items(n: int = 10):
    return [(np.full(2, i, dtype=np.float32), i) for i in range(n)]


def test_generator_gives_a_seeded_order_with_torchs_items_per_epoch():
    def epochs(loader, n=2):
        return [sum((batch[1].tolist() for batch in loader), []) for _ in range(n)]

    by_seed = epochs(DataLoader(items(), 3, shuffle=True, seed=4))
    by_torch_generator = DataLoader(items(), 3, shuffle=True,
                                    generator=torch.Generator().manual_seed(4))  # fmt: skip
    assert epochs(by_torch_generator) == by_seed and by_seed[0] != by_seed[1]
    numpy_orders = [
        epochs(DataLoader(items(), 3, shuffle=True, generator=np.random.default_rng(1)))
        for _ in range(2)
    ]
    assert numpy_orders[0] == numpy_orders[1]  # fmt: skip
    torch_loader = tdata.DataLoader(items(), 3, shuffle=True,
                                    generator=torch.Generator().manual_seed(4))  # fmt: skip
    for ours, theirs in zip(by_seed, epochs(torch_loader)):
        assert sorted(ours) == sorted(theirs) == list(range(10))
    drop = dict(batch_size=3, shuffle=True, drop_last=True)
    ours = [b[1].tolist() for b in DataLoader(items(), **drop, generator=0)]
    theirs = [b[1].tolist() for b in tdata.DataLoader(items(), **drop)]
    assert [len(b) for b in ours] == [len(b) for b in theirs] == [3, 3, 3]
    sampler = WeightedRandomSampler([1, 2, 3], 6, generator=torch.Generator().manual_seed(2))
    assert list(sampler) == list(WeightedRandomSampler([1, 2, 3], 6, seed=2))
    assert list(RandomSampler(range(5), generator=3)) == list(RandomSampler(range(5), seed=3))


def test_batch_size_none_converts_each_item_as_torchs_default_convert():
    dataset = [(np.float32(1.5), np.arange(3), "a", 2), {"x": np.int64(4), "y": [np.bool_(1)]}]
    got = list(DataLoader(dataset, batch_size=None))
    want = list(tdata.DataLoader(dataset, batch_size=None))
    first, theirs = got[0], want[0]
    assert type(first) is type(theirs) is list  # a tuple becomes a list, as torch's
    assert isinstance(first[0], Tensor) and first[0].shape == ()
    assert isinstance(first[1], Tensor) and first[0].dtype == np.float32  # as torch's tensors
    for g, w in zip(first, theirs):
        assert np.asarray(g).tolist() == (w.tolist() if torch.is_tensor(w) else w)
    assert got[1]["x"].shape == () and int(got[1]["x"]) == int(want[1]["x"])
    assert bool(got[1]["y"][0]) is bool(want[1]["y"][0]) is True
    tensor = Tensor([1.0])
    assert default_convert(tensor) is tensor  # tricycle's own arrays pass through as they are
    with_workers = list(DataLoader(dataset, batch_size=None, num_workers=1))
    assert with_workers[0][0].shape == () and with_workers[1]["x"] == 4


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_sampler_shares_as_torchs(drop_last, shuffle):
    data = list(range(10))
    ours = [DistributedSampler(data, 3, r, shuffle=shuffle, drop_last=drop_last) for r in range(3)]
    theirs = [tdata.DistributedSampler(data, 3, r, shuffle=shuffle, drop_last=drop_last)
              for r in range(3)]  # fmt: skip
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert ours[0].total_size == theirs[0].total_size
    if not shuffle:  # torch's order is deterministic: the same indices
        assert [list(s) for s in ours] == [list(s) for s in theirs]
    union = sorted(sum((list(s) for s in ours), []))
    assert (len(set(union)) == 9) if drop_last else (set(union) == set(data))
    if shuffle:
        assert list(ours[0]) == list(ours[0])  # iterating alone does not move on, as torch's
        ours[0].set_epoch(1)
        assert list(ours[0]) != list(DistributedSampler(data, 3, 0, drop_last=drop_last))
    loader = DataLoader(data, 2, sampler=ours[1])  # a loader of one rank: the sampler splits
    torch_loader = tdata.DataLoader(data, 2, sampler=theirs[1])
    assert len(loader) == len(torch_loader)
    if not shuffle:
        assert as_lists(loader) == as_lists(torch_loader)
    with pytest.raises(ValueError, match=r"DistributedSampler: invalid rank 3.*\[0, 2\]"):
        DistributedSampler(data, 3, 3)


class Evens(Sampler):
    """A sampler of one's own on torch's base class."""

    def __init__(self, data):
        super().__init__(data)
        self.n = len(data)

    def __iter__(self):
        return iter(range(0, self.n, 2))

    def __len__(self):
        return (self.n + 1) // 2


def test_a_sampler_subclass_pin_memory_timeout_and_in_order_as_torchs():
    want = as_lists(b[1] for b in tdata.DataLoader(items(), 2, sampler=Evens(items())))
    plain = DataLoader(items(), 2, sampler=Evens(items()), pin_memory=False)
    assert as_lists(b[1] for b in plain) == want == [[0, 2], [4, 6], [8]]
    # pin_memory on host batches does nothing; in_order=False may, and here does, keep order
    options = dict(sampler=Evens(items()), num_workers=2, timeout=30, in_order=False)
    assert as_lists(b[1] for b in DataLoader(items(), 2, pin_memory=True, **options)) == want
    assert isinstance(RandomSampler(items()), Sampler)
    with pytest.raises(NotImplementedError, match="a Sampler defines __iter__"):
        iter(Sampler())


class Sized(Window):
    """A stream that knows its length."""

    def __len__(self):
        return self.end - self.start


class TorchSized(Sized, tdata.IterableDataset):
    """Sized for torch's loader."""


@pytest.mark.parametrize("drop_last", [False, True])
def test_a_stream_with_a_length_gives_the_loader_torchs_length(drop_last):
    ours = DataLoader(Sized(0, 7), 3, shuffle=None, drop_last=drop_last)  # torch's default
    theirs = tdata.DataLoader(TorchSized(0, 7), 3, shuffle=None, drop_last=drop_last)
    assert len(ours) == len(theirs) == len(as_lists(ours)) == (2 if drop_last else 3)
    with pytest.raises(TypeError, match=r"DataLoader: an iterable dataset \(Window\) has no len"):
        len(DataLoader(Window(0, 7), 3))
