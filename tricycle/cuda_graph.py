"""The public name ``tricycle.cuda_graph``: its code lives in ``tricycle.apps.cuda_graph``.

This module keeps the imports the README writes working.
"""

from tricycle.apps.cuda_graph import *  # noqa: F403
