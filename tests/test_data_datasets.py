"""tricycle.data's datasets against torch.utils.data's: TensorDataset, Subset, random_split,
ConcatDataset, ChainDataset, StackDataset, a + b, the base classes, and a DataLoader over each
giving torch's DataLoader's batches."""

import warnings

import numpy as np
import pytest

import tricycle
from tricycle.data import (
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
tdata = torch.utils.data

FEATURES = np.arange(30, dtype=np.float32).reshape(10, 3)  # (N, F)
LABELS = np.arange(10) * 7  # (N,)


def ours():
    return TensorDataset(FEATURES, LABELS)


def theirs():
    return tdata.TensorDataset(torch.from_numpy(FEATURES), torch.from_numpy(LABELS))


def same_item(got, want):
    """An item (or a batch) of ours equals torch's: the same structure, the same numbers."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            same_item(g, w)
        return
    got = got.array if isinstance(got, Tensor) else got
    np.testing.assert_array_equal(np.asarray(got), want.numpy() if torch.is_tensor(want) else want)


def same_batches(dataset, torch_dataset, batch_size=3, **options):
    got = list(DataLoader(dataset, batch_size=batch_size, **options))
    want = list(tdata.DataLoader(torch_dataset, batch_size=batch_size, shuffle=False, **options))
    assert len(got) == len(want) > 0
    for g, w in zip(got, want):
        same_item(g, w)


class Stream(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))


class TorchStream(tdata.IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))


class Counted(Stream):  # an iterable dataset that also knows its length
    def __len__(self):
        return self.stop - self.start


class TorchCounted(TorchStream):
    def __len__(self):
        return self.stop - self.start


# ====================================================================== TensorDataset
def test_tensor_dataset_items_are_torch_s_rows():
    dataset, reference = ours(), theirs()
    assert len(dataset) == len(reference) == 10
    for i in [0, 3, 9, -1, -10]:
        same_item(dataset[i], reference[i])
    assert isinstance(dataset[2], tuple) and len(list(dataset)) == 10  # iterates to the end
    tensors = TensorDataset(Tensor(FEATURES, requires_grad=False))
    assert isinstance(tensors[4][0], Tensor)
    same_item(tensors[4], reference[4][:1])
    same_batches(tensors, tdata.TensorDataset(torch.from_numpy(FEATURES)), batch_size=4)


def test_tensor_dataset_refuses_what_has_no_rows():
    with pytest.raises(ValueError, match=r"same first dimension.*\(10, 3\), \(9,\)"):
        TensorDataset(FEATURES, LABELS[:9])
    with pytest.raises(ValueError, match="at least one array"):
        TensorDataset()
    with pytest.raises(TypeError, match="argument 1 must be a numpy array or a Tensor, got a list"):
        TensorDataset(FEATURES, list(LABELS))
    with pytest.raises(ValueError, match="argument 0 is 0-d"):
        TensorDataset(np.float32(1.0))
    with pytest.raises(IndexError, match="index 10 is out of range for 10 rows"):
        ours()[10]


# ====================================================================== Subset
def test_subset_is_torch_s():
    indices = [7, 0, -1, 3]
    subset, reference = Subset(ours(), indices), tdata.Subset(theirs(), indices)
    assert len(subset) == len(reference) == 4
    for i in range(-4, 4):
        same_item(subset[i], reference[i])
    same_item(subset[[0, 2]], reference[[0, 2]])  # a list index: the dataset's own
    same_item(Subset(ours(), np.array([5, 6]))[1], reference.dataset[6])  # an array of indices
    same_batches(subset, reference)
    with pytest.raises(ValueError, match=r"in \[-10, 10\) .* got \[10\]"):
        Subset(ours(), [1, 10])
    with pytest.raises(TypeError, match="1-d sequence of integers"):
        Subset(ours(), [0.5, 1.0])
    with pytest.raises(IndexError, match="index 4 is out of range for a subset of 4 items"):
        subset[4]
    with pytest.raises(TypeError, match="Subset: dataset must be a map-style dataset"):
        Subset(Stream(0, 3), [0])


# ====================================================================== random_split
@pytest.mark.parametrize("n, lengths", [
    (10, [3, 7]), (10, [0.3, 0.7]), (30, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]),
    (7, [0.1, 0.2, 0.3, 0.4]), (5, [1]), (4, [0, 4]), (3, [1 / 3] * 3),
])  # fmt: skip
def test_random_split_has_torch_s_lengths_and_covers_the_dataset_once(n, lengths):
    data = list(range(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's and ours: an empty part
        parts = random_split(data, lengths, seed=0)
        want = tdata.random_split(data, lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(p) for p in want]
    taken = [i for part in parts for i in part.indices]
    assert sorted(taken) == data  # disjoint, and every item in one part
    assert all(isinstance(i, int) for i in taken)
    for part in parts:
        assert [part[k] for k in range(len(part))] == part.indices


def test_random_split_repeats_from_its_seed_and_from_manual_seed():
    def split(**seed):
        return [part.indices for part in random_split(ours(), [0.5, 0.5], **seed)]

    assert split(seed=3) == split(seed=3) != split(seed=4)
    tricycle.manual_seed(5)
    first = split()
    tricycle.manual_seed(5)
    assert split() == first
    assert split() != first  # the generator moved on


def test_random_split_refuses_bad_lengths_and_takes_torch_s_generator_as_its_seed():
    with pytest.raises(ValueError, match=r"summing to the dataset's length \(10\).*\[3, 6\]"):
        random_split(ours(), [3, 6], seed=0)
    with pytest.raises(ValueError, match="fractions must be in"):
        random_split(ours(), [1.5, -0.5], seed=0)
    with pytest.raises(ValueError, match=r"\[0.5, 0.4\] \(sum 0.9"):
        random_split(ours(), [0.5, 0.4], seed=0)
    with pytest.raises(TypeError, match="non-empty sequence of numbers"):
        random_split(ours(), ["5", "5"], seed=0)
    by_seed = [part.indices for part in random_split(ours(), [5, 5], seed=7)]
    for generator in (torch.Generator().manual_seed(7), 7):
        assert [part.indices for part in random_split(ours(), [5, 5], generator)] == by_seed
    with pytest.raises(ValueError, match="random_split: pass seed or generator, not both"):
        random_split(ours(), [5, 5], generator=1, seed=0)
    with pytest.raises(TypeError, match="random_split: generator must be a seed"):
        random_split(ours(), [5, 5], generator="seven")
    with pytest.raises(ValueError, match="random_split: seed must be"):
        random_split(ours(), [5, 5], seed=-1)
    with pytest.warns(UserWarning, match="part 1 .* is empty"):
        random_split(list(range(2)), [1.0, 0.0], seed=0)


def test_a_loader_over_random_split_parts_gives_torch_s_batches():
    train, valid = random_split(ours(), [0.7, 0.3], seed=1)
    for part in (train, valid):
        same_batches(part, tdata.Subset(theirs(), part.indices), batch_size=2, drop_last=True)


# ====================================================================== ConcatDataset
def test_concat_dataset_indexes_as_torch_s():
    a, b = [10, 11, 12], [20, 21]
    empty = []
    joined, reference = ConcatDataset([a, empty, b]), tdata.ConcatDataset([a, empty, b])
    assert joined.cumulative_sizes == reference.cumulative_sizes == [3, 3, 5]
    assert len(joined) == 5
    assert [joined[i] for i in range(-5, 5)] == [reference[i] for i in range(-5, 5)]
    assert joined[np.int64(3)] == 20
    pairs = ConcatDataset([ours(), Subset(ours(), [9, 8])])
    torch_pairs = tdata.ConcatDataset([theirs(), tdata.Subset(theirs(), [9, 8])])
    same_batches(pairs, torch_pairs, batch_size=4)
    with pytest.raises(IndexError, match="index 5 is out of range for 5 items"):
        joined[5]
    with pytest.raises(IndexError, match="index -6 is out of range for 5 items"):
        joined[-6]
    with pytest.raises(TypeError, match="an index must be an integer"):
        joined[1.0]


def test_concat_dataset_refuses_no_datasets_and_streams():
    with pytest.raises(ValueError, match="at least one dataset"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="dataset 1 must be a map-style dataset .* Stream"):
        ConcatDataset([ours(), Stream(0, 3)])
    with pytest.raises(TypeError, match=r"list of datasets, got a TensorDataset.*\[dataset\]"):
        ConcatDataset(ours())


def test_adding_datasets_concatenates_or_chains_them():
    joined = ours() + Subset(ours(), [0])
    assert isinstance(joined, ConcatDataset) and len(joined) == 11
    same_item(joined[10], theirs()[0])
    same_batches(joined, theirs() + tdata.Subset(theirs(), [0]), batch_size=4)
    chained = Stream(0, 2) + Stream(5, 7)
    assert isinstance(chained, ChainDataset) and list(chained) == [0, 1, 5, 6]


# ====================================================================== ChainDataset
def test_chain_dataset_is_torch_s_and_a_stream_for_the_loader():
    chained = ChainDataset([Stream(0, 4), Counted(10, 13)])
    reference = tdata.ChainDataset([TorchStream(0, 4), TorchCounted(10, 13)])
    assert list(chained) == list(reference) == [0, 1, 2, 3, 10, 11, 12]
    assert list(chained) == list(chained)  # read anew at each iteration
    assert len(ChainDataset([Counted(0, 2), Counted(5, 9)])) == 6
    loader = DataLoader(chained, batch_size=3)
    assert not loader.map_style
    same_batches(chained, reference)
    with pytest.raises(TypeError, match=r"dataset 0 \(Stream\) has no length"):
        len(chained)
    with pytest.raises(
        TypeError,
        match="dataset 1 must be an iterable dataset .* map-style "
        "TensorDataset: join map-style datasets with ConcatData",
    ):
        ChainDataset([Stream(0, 1), ours()])


# ====================================================================== base classes
def test_an_iterable_dataset_with_a_length_is_still_a_stream_for_the_loader():
    for stream in (Counted(0, 7), TorchCounted(0, 7)):
        loader = DataLoader(stream, batch_size=3)
        assert not loader.map_style
        assert [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
        with pytest.raises(ValueError, match="shuffle needs a map-style dataset"):
            DataLoader(stream, batch_size=3, shuffle=True)
    same_batches(Counted(0, 7), TorchCounted(0, 7))
    with pytest.raises(TypeError, match="Stream: an iterable dataset has no items by index"):
        Stream(0, 3)[0]
    assert list(Stream(0, 3)) == [0, 1, 2]  # its __len__ raises TypeError: list() ignores it


def test_the_base_classes_want_their_methods_and_a_subclass_loads_as_torch_s():
    class Squares(Dataset):
        def __getitem__(self, i):
            return np.full(2, i * i, dtype=np.float32), i

        def __len__(self):
            return 6

    class TorchSquares(tdata.Dataset):
        __getitem__, __len__ = Squares.__getitem__, Squares.__len__

    assert DataLoader(Squares()).map_style
    same_batches(Squares(), TorchSquares(), batch_size=4)

    class NoLength(Dataset):
        def __getitem__(self, i):
            return i

    class NoIter(IterableDataset):
        pass

    for incomplete in (NoLength, NoIter):
        with pytest.raises(TypeError, match="abstract method"):
            incomplete()
    assert isinstance(Stream(0, 1), Dataset)  # as torch's: an IterableDataset is a Dataset


# ====================================================================== StackDataset
def test_stack_dataset_by_position_and_by_name_as_torchs():
    images, labels = FEATURES, LABELS
    ours_ = StackDataset(TensorDataset(images), labels)
    theirs_ = tdata.StackDataset(tdata.TensorDataset(torch.from_numpy(images)),
                                 torch.from_numpy(labels))  # fmt: skip
    assert len(ours_) == len(theirs_) == 10
    for i in (0, 3, -1):
        same_item(ours_[i], theirs_[i])
    named = StackDataset(image=images, label=labels)
    theirs_named = tdata.StackDataset(image=torch.from_numpy(images),
                                      label=torch.from_numpy(labels))  # fmt: skip
    assert named[4].keys() == theirs_named[4].keys() == {"image", "label"}
    batch = next(iter(DataLoader(named, batch_size=4)))
    want = next(iter(tdata.DataLoader(theirs_named, batch_size=4)))
    assert batch.keys() == want.keys()
    for key in ("image", "label"):
        same_item(named[4][key], theirs_named[4][key])
        same_item(batch[key], want[key])


def test_stack_dataset_refuses_mixed_lengths_kinds_and_streams():
    with pytest.raises(ValueError, match="StackDataset: the datasets must have one length"):
        StackDataset(FEATURES, LABELS[:5])
    with pytest.raises(ValueError, match="by position or by name, not both"):
        StackDataset(FEATURES, label=LABELS)
    with pytest.raises(ValueError, match="at least one dataset"):
        StackDataset()
    with pytest.raises(TypeError, match="StackDataset: dataset 'x' must be a map-style"):
        StackDataset(x=iter(range(3)))
