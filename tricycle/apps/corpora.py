"""The data a training run reads: ``tricycle_datasets.run_data`` (``load``, one call for all of
it), under the name it had in the applications."""

from tricycle_datasets.run_data import *  # noqa: F403
from tricycle_datasets.run_data import __all__  # noqa: F401
