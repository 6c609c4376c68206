"""``torch.distributed.tensor.experimental``: ``implicit_replication`` (a Tensor meeting a
DTensor in an op read as Replicate; ``tricycle.parallel.dtensor``'s)."""

from tricycle.parallel.dtensor import implicit_replication

__all__ = ["implicit_replication"]
