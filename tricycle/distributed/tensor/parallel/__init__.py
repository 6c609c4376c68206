"""``torch.distributed.tensor.parallel``: ``parallelize_module`` and its styles
(``tricycle.parallel.tensor_parallel``'s), and ``loss_parallel``
(``tricycle.parallel.loss_parallel``'s)."""

from tricycle.parallel.loss_parallel import loss_parallel
from tricycle.parallel.tensor_parallel import (
    ColwiseParallel,
    ParallelStyle,
    PrepareModuleInput,
    PrepareModuleOutput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

__all__ = [
    "ColwiseParallel",
    "ParallelStyle",
    "PrepareModuleInput",
    "PrepareModuleOutput",
    "RowwiseParallel",
    "SequenceParallel",
    "loss_parallel",
    "parallelize_module",
]
