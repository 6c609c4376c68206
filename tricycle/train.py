"""The public name ``tricycle.train``: its code lives in ``tricycle.apps.train``.

This module keeps ``python -m tricycle.train`` and ``from tricycle.train import ...`` working
as the README writes them.
"""

import sys

from tricycle.apps.train import *  # noqa: F403
from tricycle.apps.train import main

if __name__ == "__main__":
    sys.exit(main())
