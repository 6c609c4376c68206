"""``tricycle.utils.data.dataset``: where a PyTorch script imports the datasets from
(``from torch.utils.data.dataset import Dataset, Subset``); the classes are
``tricycle.data``'s."""

from tricycle.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)

__all__ = [
    "ChainDataset",
    "ConcatDataset",
    "Dataset",
    "IterableDataset",
    "StackDataset",
    "Subset",
    "TensorDataset",
    "random_split",
]
