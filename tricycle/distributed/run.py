"""``python -m tricycle.distributed.run``: ``tricycle-run`` under torch's module name (``python
-m torch.distributed.run`` is torchrun), its flags and environment included.

``main(args)`` and ``parse_args(args)`` are the launcher's (``tricycle.apps.launch``), reached
by name when called: the launcher is an application, above this package's layer.
"""

import importlib
import sys


def parse_args(args: list[str]):
    """The launcher's parsed flags."""
    return importlib.import_module("tricycle.apps.launch").parse_args(args)


def main(args: list[str] | None = None) -> int:
    """Run the launcher on ``args`` (default: this process's command line); its status."""
    return importlib.import_module("tricycle.apps.launch").main(args)


if __name__ == "__main__":
    sys.exit(main())
