"""``torch.distributed.nn.functional``: differentiable ``all_reduce``, ``all_gather``,
``reduce_scatter`` and ``broadcast`` (``tricycle.parallel.collectives_autograd``'s)."""

from tricycle.parallel.collectives_autograd import all_gather, all_reduce, broadcast, reduce_scatter

__all__ = ["all_gather", "all_reduce", "broadcast", "reduce_scatter"]
