"""``tricycle.utils.data.sampler``: where a PyTorch script imports the samplers from
(``from torch.utils.data.sampler import SubsetRandomSampler``); the classes are
``tricycle.data``'s."""

from tricycle.data import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]
