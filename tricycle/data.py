"""The public name ``tricycle.data``: ``DataLoader``, its collate functions
(``default_collate``, ``default_convert``), ``get_worker_info``, samplers and the datasets of
``torch.utils.data`` (``TensorDataset``, ``Subset``, ``random_split``, ``ConcatDataset``,
``ChainDataset``, ``StackDataset``, the base classes ``Dataset`` and ``IterableDataset``)
under PyTorch's names.
The code lives in ``tricycle.apps.loader`` (with ``tricycle.apps.workers``,
``tricycle.apps.collate``, ``tricycle.apps.samplers``, ``tricycle.apps.seeds`` and
``tricycle.apps.map_datasets``), above the library: it starts processes.

``from tricycle.data import DataLoader``.

``tricycle.data.Dataset`` is torch's base class of map-style datasets, not
``tricycle.dataset.Dataset`` (the (inputs, outputs) dataset with ``batch()`` and
``shuffle()``); the loader reads both.
"""

from tricycle.apps.collate import default_collate, default_convert
from tricycle.apps.loader import DataLoader
from tricycle.apps.map_datasets import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tricycle.apps.samplers import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from tricycle.apps.workers import WorkerError, WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerError",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
