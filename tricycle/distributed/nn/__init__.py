"""``torch.distributed.nn``: ``functional`` holds the differentiable collectives."""

import importlib


def __getattr__(name: str):
    """``functional`` imported on first use, as torch's."""
    if name == "functional":
        return importlib.import_module("tricycle.distributed.nn.functional")
    raise AttributeError(f"module 'tricycle.distributed.nn' has no attribute {name!r}")
