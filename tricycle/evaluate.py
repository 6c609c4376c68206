"""The public name ``tricycle.evaluate``: its code lives in ``tricycle.apps.evaluate``.

This module keeps ``python -m tricycle.evaluate`` and ``from tricycle.evaluate import ...`` working
as the README writes them.
"""

from tricycle.apps.evaluate import *  # noqa: F403
from tricycle.apps.evaluate import main

if __name__ == "__main__":
    main()
