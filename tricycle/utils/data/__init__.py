"""``tricycle.utils.data``: ``tricycle.data``'s names (the ``DataLoader``, datasets, samplers
and collate functions, under ``torch.utils.data``'s names) where a PyTorch script imports
them from: ``from tricycle.utils.data import DataLoader, TensorDataset``. The objects are
``tricycle.data``'s own: one class each, so ``isinstance`` holds either way. A package, as
torch's: ``from tricycle.utils.data.distributed import DistributedSampler`` works too, and
so do its modules ``dataloader``, ``dataset`` and ``sampler``, imported with it as torch's
are (``torch.utils.data.dataset.Dataset`` in an annotation, never imported)."""

from tricycle.data import *  # noqa: F403
from tricycle.data import __all__  # noqa: F401
from tricycle.utils.data import dataloader, dataset, distributed, sampler  # noqa: F401, E402
