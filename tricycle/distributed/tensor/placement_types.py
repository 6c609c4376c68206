"""``torch.distributed.tensor.placement_types``: the placements
(``tricycle.parallel.dtensor_ops``'s)."""

from tricycle.parallel.dtensor_ops import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard"]
