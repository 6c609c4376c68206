"""The datasets of ``torch.utils.data`` under PyTorch's names, for ``tricycle.data``:
``TensorDataset``, ``Subset``, ``random_split``, ``ConcatDataset``, ``ChainDataset`` and
``StackDataset``, on the base classes ``Dataset`` (map-style) and ``IterableDataset``.

::

    from tricycle.data import DataLoader, TensorDataset, random_split

    data = TensorDataset(features, labels)          # (N, F), (N,): items (features[i], labels[i])
    train, valid = random_split(data, [0.9, 0.1], seed=0)
    loader = DataLoader(train, batch_size=32, shuffle=True)

These ``Dataset`` and ``IterableDataset`` are torch's base classes, not
``tricycle.dataset.Dataset`` (the (inputs, outputs) dataset with ``batch()`` and ``shuffle()``,
which the loader also reads as map-style). A ``DataLoader`` needs no base class: it reads
anything with ``__len__`` and ``__getitem__`` as map-style and anything else that iterates as a
stream (``is_map_style`` is its rule); subclassing ``IterableDataset`` says "a stream" even for
a class that also has ``__len__``.

``random_split`` draws its permutation from ``seed`` (by default drawn from tricycle's
generator, so ``tricycle.manual_seed`` repeats it), as the loader draws its orders; torch's
``generator`` gives the seed instead (``tricycle.apps.seeds``).
"""

import abc
import bisect
import itertools
import math
import sys
import warnings

import numpy as np

from tricycle import checks
from tricycle.apps.seeds import seed_from
from tricycle.dataset import CausalLMDataset, InfiniteBatchDataset
from tricycle.random import draw_seed


class Dataset(abc.ABC):
    """A map-style dataset: ``dataset[i]`` for i in 0..len(dataset) - 1 (torch's
    ``torch.utils.data.Dataset``; not ``tricycle.dataset.Dataset``). Subclasses define
    ``__getitem__`` and ``__len__``; ``a + b`` is ``ConcatDataset([a, b])``."""

    @abc.abstractmethod
    def __getitem__(self, index): ...

    @abc.abstractmethod
    def __len__(self) -> int: ...

    def __add__(self, other) -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of items (torch's ``torch.utils.data.IterableDataset``): subclasses define
    ``__iter__``, and may define ``__len__``; the loader reads it in the order it yields,
    never by index. ``a + b`` is ``ChainDataset([a, b])``."""

    @abc.abstractmethod
    def __iter__(self): ...

    def __getitem__(self, index):
        raise TypeError(f"{type(self).__name__}: an iterable dataset has no items by index: "
                        "iterate it")  # fmt: skip

    def __len__(self) -> int:  # a TypeError, so that list(dataset) still works
        raise TypeError(f"{type(self).__name__}: this iterable dataset has no length")

    def __add__(self, other) -> "ChainDataset":
        return ChainDataset([self, other])


def is_map_style(dataset) -> bool:
    """The loader's rule: read by index (``__len__`` and ``__getitem__``), unless the dataset
    says it is a stream (an ``IterableDataset``, ours or torch's) or is one of tricycle's
    random-window datasets (windows drawn forever, whatever ``__getitem__`` offers)."""
    if isinstance(dataset, (IterableDataset, CausalLMDataset, InfiniteBatchDataset)):
        return False
    torch_data = sys.modules.get("torch.utils.data")  # imported already by whoever made one
    if torch_data is not None and isinstance(dataset, torch_data.IterableDataset):
        return False
    return hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")


class TensorDataset(Dataset):
    """The rows of arrays of the same first dimension: item i is ``(a[i], b[i], ...)``.

    Args:
        *tensors: numpy arrays or tricycle Tensors (any array with a first axis), each
            with the same number of rows.
    """

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one array (of rows), got none")
        for k, tensor in enumerate(tensors):
            shape = getattr(tensor, "shape", None)
            if shape is None or not hasattr(tensor, "__getitem__"):
                raise TypeError(
                    f"TensorDataset: argument {k} must be a numpy array or a Tensor, got a "
                    f"{type(tensor).__name__} (np.asarray makes one from a list)"
                )
            if len(shape) == 0:
                raise ValueError(f"TensorDataset: argument {k} is 0-d (shape ()): it has no "
                                 "rows; give arrays with a first axis")  # fmt: skip
        rows = [tensor.shape[0] for tensor in tensors]
        if len(set(rows)) > 1:
            shapes = ", ".join(str(tuple(tensor.shape)) for tensor in tensors)
            raise ValueError(
                f"TensorDataset: the arrays must have the same first dimension (one row per "
                f"item), got shapes {shapes}"
            )
        self.tensors = tensors

    def __getitem__(self, index) -> tuple:
        if checks.is_integer(index) and not -len(self) <= index < len(self):
            raise IndexError(f"TensorDataset: index {index} is out of range for {len(self)} rows")
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return int(self.tensors[0].shape[0])


class Subset(Dataset):
    """The items of ``dataset`` at ``indices``: ``subset[i]`` is ``dataset[indices[i]]``.

    Args:
        dataset: a map-style dataset.
        indices: a sequence of integers (a list, a range, an integer array), each in
            [-len(dataset), len(dataset)).
    """

    def __init__(self, dataset, indices):
        _check_map_style("Subset", "dataset", dataset)
        positions = np.asarray(indices)
        if positions.ndim != 1 or (positions.size and positions.dtype.kind not in "iu"):
            raise TypeError(f"Subset: indices must be a 1-d sequence of integers, got "
                            f"{_short(indices)}")  # fmt: skip
        n = len(dataset)
        outside = positions[(positions < -n) | (positions >= n)]
        if outside.size:
            raise ValueError(
                f"Subset: indices must be in [-{n}, {n}) for a dataset of {n} items, got "
                f"{outside[:3].tolist()} among them"
            )
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, index):
        if isinstance(index, list):  # as torch: the dataset's own list indexing
            return self.dataset[[self._position(i) for i in index]]
        return self.dataset[self._position(index)]

    def _position(self, index) -> int:
        """The dataset's index of the subset's item ``index``."""
        n = len(self.indices)
        if not checks.is_integer(index):
            raise TypeError(f"Subset: an index must be an integer, got {index!r}")
        if not -n <= index < n:
            raise IndexError(f"Subset: index {index} is out of range for a subset of {n} items")
        return int(self.indices[index])

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None, *, seed: int | None = None) -> list[Subset]:
    """Split ``dataset`` into disjoint ``Subset``s of ``lengths`` items, at random.

    Args:
        dataset: a map-style dataset.
        lengths: integers summing to ``len(dataset)``, or fractions summing to 1: then
            part k has ``floor(n * lengths[k])`` items and the remainder goes one item each
            to parts 0, 1, ... in turn (torch's rule).
        generator: torch's, as the seed it stands for (an int, a numpy generator, torch's
            ``Generator``: its initial seed); not with ``seed``.
        seed: the seed of the permutation; by default drawn from tricycle's generator
            (``tricycle.manual_seed`` repeats it).
    """
    checks.seed("random_split", "seed", seed)
    seed = seed_from("random_split", seed, generator)
    _check_map_style("random_split", "dataset", dataset)
    n = len(dataset)
    sizes = split_lengths(lengths, n)
    order = np.random.default_rng(draw_seed() if seed is None else seed).permutation(n)
    order = order.tolist()
    ends = itertools.accumulate(sizes)
    return [Subset(dataset, order[end - size : end]) for end, size in zip(ends, sizes)]


def split_lengths(lengths, n: int) -> list[int]:
    """The sizes of ``random_split``'s parts of ``n`` items: ``lengths`` as given, or, for
    fractions summing to 1, torch's rounding (floors, the remainder one each in turn)."""
    try:
        lengths = list(lengths)
    except TypeError:
        raise TypeError(f"random_split: lengths must be a sequence of lengths or fractions, "
                        f"got {lengths!r}") from None  # fmt: skip
    if not lengths or not all(checks.is_real(x) for x in lengths):
        raise TypeError(f"random_split: lengths must be a non-empty sequence of numbers, got "
                        f"{lengths!r}")  # fmt: skip
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:  # fractions (torch's test)
        outside = [f for f in lengths if not 0 <= f <= 1]
        if outside:
            raise ValueError(f"random_split: fractions must be in [0, 1], got {outside} in "
                             f"{lengths}")  # fmt: skip
        sizes = [math.floor(n * f) for f in lengths]
        for k in range(n - sum(sizes)):
            sizes[k % len(sizes)] += 1
        for k, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"random_split: part {k} of {lengths} of {n} items is empty",
                              stacklevel=3)  # fmt: skip
        return sizes
    if not all(checks.is_integer(x) and x >= 0 for x in lengths) or total != n:
        raise ValueError(
            f"random_split: lengths must be integers >= 0 summing to the dataset's length "
            f"({n}), or fractions summing to 1, got {lengths} (sum {total})"
        )
    return [int(x) for x in lengths]


class ConcatDataset(Dataset):
    """Map-style datasets one after another: items 0..len(a) - 1 are a's, then b's, ...

    Args:
        datasets: a non-empty sequence of map-style datasets.

    ``cumulative_sizes[k]`` is the number of items in datasets 0..k (their lengths when
    joined: later changes to a dataset's length are not seen).
    """

    def __init__(self, datasets):
        self.datasets = _dataset_list("ConcatDataset", datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: needs at least one dataset, got none")
        for k, dataset in enumerate(self.datasets):
            _check_map_style("ConcatDataset", f"dataset {k}", dataset)
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        n = len(self)
        if not checks.is_integer(index):
            raise TypeError(f"ConcatDataset: an index must be an integer, got {index!r}")
        if not -n <= index < n:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {n} items")
        index = int(index) % n  # a negative index counts from the end
        k = bisect.bisect_right(self.cumulative_sizes, index)  # the dataset holding it
        start = self.cumulative_sizes[k - 1] if k else 0
        return self.datasets[k][index - start]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another: a's items, then b's, ... (read at each
    iteration, as they come).

    Args:
        datasets: a sequence of iterable datasets (map-style ones join with
            ``ConcatDataset``).
    """

    def __init__(self, datasets):
        self.datasets = _dataset_list("ChainDataset", datasets)
        for k, dataset in enumerate(self.datasets):
            if is_map_style(dataset) or not hasattr(dataset, "__iter__"):
                raise TypeError(
                    f"ChainDataset: dataset {k} must be an iterable dataset (with __iter__), "
                    f"got a {'map-style ' if is_map_style(dataset) else ''}"
                    f"{type(dataset).__name__}: join map-style datasets with ConcatDataset"
                )

    def __iter__(self):
        for dataset in self.datasets:
            yield from dataset

    def __len__(self) -> int:
        total = 0
        for k, dataset in enumerate(self.datasets):
            try:
                total += len(dataset)
            except TypeError as error:
                raise TypeError(f"ChainDataset: dataset {k} ({type(dataset).__name__}) has "
                                "no length") from error  # fmt: skip
        return total


class StackDataset(Dataset):
    """Map-style datasets of one length side by side: item i is ``(a[i], b[i], ...)``, or with
    names, ``StackDataset(image=a, label=b)[i]`` is ``{"image": a[i], "label": b[i]}`` (torch's
    ``StackDataset``: the samples of several modalities kept together).

    Args:
        *datasets: map-style datasets, all of one length; or, instead,
        **named: map-style datasets by name (not both kinds at once).
    """

    def __init__(self, *datasets, **named):
        if datasets and named:
            raise ValueError("StackDataset: give datasets by position or by name, not both")
        given = dict(named) if named else dict(enumerate(datasets))
        if not given:
            raise ValueError("StackDataset: needs at least one dataset, got none")
        for key, dataset in given.items():
            _check_map_style("StackDataset", f"dataset {key!r}", dataset)
        lengths = {key: len(dataset) for key, dataset in given.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"StackDataset: the datasets must have one length, got {lengths}")
        self.datasets = named if named else datasets
        self._length = next(iter(lengths.values()))

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: dataset[index] for key, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)


def _check_map_style(owner: str, name: str, dataset) -> None:
    if not is_map_style(dataset):
        raise TypeError(
            f"{owner}: {name} must be a map-style dataset (__len__ and __getitem__), got a "
            f"{'stream ' if hasattr(dataset, '__iter__') else ''}{type(dataset).__name__}"
        )


def _dataset_list(owner: str, datasets) -> list:
    """``datasets`` as a list, refusing one dataset given for a list of them."""
    if isinstance(datasets, (Dataset, np.ndarray)) or not hasattr(datasets, "__iter__"):
        raise TypeError(f"{owner}: datasets must be a list of datasets, got a "
                        f"{type(datasets).__name__}: wrap it, {owner}([dataset])")  # fmt: skip
    return list(datasets)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "is_map_style",
    "random_split",
]
