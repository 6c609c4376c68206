"""The public name ``tricycle.data``: ``DataLoader`` and its collate function. The code lives
in ``tricycle.apps.loader`` (with ``tricycle.apps.workers`` and ``tricycle.apps.collate``),
above the library: it starts processes.

``from tricycle.data import DataLoader``.
"""

from tricycle.apps.collate import default_collate
from tricycle.apps.loader import DataLoader
from tricycle.apps.workers import WorkerError

__all__ = ["DataLoader", "WorkerError", "default_collate"]
