"""``torch.distributed.optim``: ``ZeroRedundancyOptimizer`` (``tricycle.parallel.torch_zero``),
so that ``from tricycle.distributed.optim import ZeroRedundancyOptimizer`` reads as torch's."""

from tricycle.parallel.torch_zero import ZeroRedundancyOptimizer

__all__ = ["ZeroRedundancyOptimizer"]
