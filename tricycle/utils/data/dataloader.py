"""``tricycle.utils.data.dataloader``: where a PyTorch script imports the loader's names from
(``from torch.utils.data.dataloader import DataLoader, default_collate``); the objects are
``tricycle.data``'s."""

from tricycle.data import DataLoader, default_collate, default_convert, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
