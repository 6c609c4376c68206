"""torch's ``torch.distributed.elastic.multiprocessing.errors``: ``record`` writes a failing
rank's error where ``tricycle-run`` reads it (``tricycle.parallel.elastic_errors``)."""

from tricycle.parallel.elastic_errors import *  # noqa: F403
from tricycle.parallel.elastic_errors import __all__  # noqa: F401
