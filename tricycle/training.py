"""The public name ``tricycle.training``: its code lives in ``tricycle.apps.training``.

This module keeps ``import tricycle.training`` and ``from tricycle.training import ...`` working as
the README writes them.
"""

from tricycle.apps.gpt_trainer import gpt_trainer, rank_loader  # noqa: F401
from tricycle.apps.training import *  # noqa: F403
