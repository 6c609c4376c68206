"""torch.cuda's CUDA graphs: ``CUDAGraph``, ``graph``, ``graph_pool_handle``,
``is_current_stream_capturing`` and ``make_graphed_callables``, reached as
``tricycle.cuda.<name>``. They live in ``tricycle.apps.cuda_graphs`` (the CUDA backend's
capture machinery is the applications' to import) and load by name when first asked for:
importing ``tricycle.cuda`` loads neither the applications nor the CUDA backend.
"""

import importlib

NAMES = (
    "CUDAGraph",
    "graph",
    "graph_pool_handle",
    "is_current_stream_capturing",
    "make_graphed_callables",
)


def __getattr__(name: str):
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # by name: the applications sit above tricycle.cuda, and their import is heavy
    value = getattr(importlib.import_module("tricycle.apps.cuda_graphs"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *NAMES])
