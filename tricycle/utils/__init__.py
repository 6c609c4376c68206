"""``tricycle.utils``: where a PyTorch script finds ``torch.utils``' names.

``tricycle.utils.data`` is ``tricycle.data`` (``from tricycle.utils.data import DataLoader,
Dataset, TensorDataset``, as ``from torch.utils.data import ...``); ``tricycle.utils.checkpoint``
is activation checkpointing (``from tricycle.utils.checkpoint import checkpoint``);
``tricycle.utils.tensorboard`` has ``SummaryWriter``, writing TensorBoard's event files;
``tricycle.utils.benchmark`` times statements (``Timer``, ``Measurement``, ``Compare``) and
``tricycle.utils.model_zoo.load_url`` is ``tricycle.hub.load_state_dict_from_url``;
``tricycle.utils.dlpack`` has ``from_dlpack``/``to_dlpack`` (tricycle's);
``tricycle.utils.flop_counter`` has ``FlopCounterMode`` and ``register_flop_formula``. Each is
imported on first use, as the package's names are: ``import tricycle`` then
``tricycle.utils.data.DataLoader`` works, and importing ``tricycle.utils`` alone starts nothing.
"""

import importlib

_SUBMODULES = (
    "benchmark",
    "checkpoint",
    "data",
    "dlpack",
    "flop_counter",
    "hooks",
    "model_zoo",
    "tensorboard",
)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"tricycle.utils.{name}")
    raise AttributeError(f"module 'tricycle.utils' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])
