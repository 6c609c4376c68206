"""``tricycle.utils.data.distributed``: where a PyTorch script imports ``DistributedSampler``
from (``from torch.utils.data.distributed import DistributedSampler``); the class is
``tricycle.data``'s."""

from tricycle.data import DistributedSampler

__all__ = ["DistributedSampler"]
