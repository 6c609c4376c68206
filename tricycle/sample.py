"""The public name ``tricycle.sample``: its code lives in ``tricycle.apps.sample``.

This module keeps ``python -m tricycle.sample`` and ``from tricycle.sample import ...`` working
as the README writes them.
"""

import sys

from tricycle.apps.sample import *  # noqa: F403
from tricycle.apps.sample import main

if __name__ == "__main__":
    sys.exit(main())
