"""``tricycle.signal``: torch.signal's names. ``tricycle.signal.windows`` holds the window
functions of ``torch.signal.windows`` (``hann``, ``kaiser``, ``gaussian``, ...), imported on
first use: ``import tricycle`` then ``tricycle.signal.windows.hann(8)`` works, and importing
``tricycle.signal`` alone loads nothing more."""

import importlib

_SUBMODULES = ("windows",)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"tricycle.signal.{name}")
    raise AttributeError(f"module 'tricycle.signal' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_SUBMODULES])
