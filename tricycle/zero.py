"""The public name ``tricycle.zero``: its code lives in ``tricycle.parallel.zero``.

This module keeps ``import tricycle.zero`` and ``from tricycle.zero import ...`` working as
the README writes them.
"""

from tricycle.parallel.zero import *  # noqa: F403
