"""The public name ``tricycle.training``: its code lives in ``tricycle.apps.training``.

This module keeps ``import tricycle.training`` and ``from tricycle.training import ...`` working as
the README writes them.
"""

from tricycle.apps.training import *  # noqa: F403
