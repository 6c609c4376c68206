"""The public name ``tricycle.distributed``: its code lives in ``tricycle.parallel.distributed``.

This module keeps the imports the README writes working.
"""

from tricycle.parallel.distributed import *  # noqa: F403
