"""The public name ``tricycle.data``: ``DataLoader``, its collate function and samplers
under PyTorch's names. The code lives in ``tricycle.apps.loader`` (with
``tricycle.apps.workers``, ``tricycle.apps.collate`` and ``tricycle.apps.samplers``), above
the library: it starts processes.

``from tricycle.data import DataLoader``.
"""

from tricycle.apps.collate import default_collate
from tricycle.apps.loader import DataLoader
from tricycle.apps.samplers import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from tricycle.apps.workers import WorkerError

__all__ = [
    "BatchSampler",
    "DataLoader",
    "RandomSampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "WorkerError",
    "default_collate",
]
