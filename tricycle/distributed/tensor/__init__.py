"""``torch.distributed.tensor``: ``DTensor``, its placements and ``distribute_tensor`` /
``distribute_module`` (``tricycle.parallel.dtensor``'s); ``parallel`` holds tensor
parallelism's styles and ``parallelize_module``."""

from tricycle.parallel.device_mesh import DeviceMesh, init_device_mesh
from tricycle.parallel.dtensor import (
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    distribute_module,
    distribute_tensor,
)

__all__ = [
    "DTensor",
    "DeviceMesh",
    "Partial",
    "Placement",
    "Replicate",
    "Shard",
    "distribute_module",
    "distribute_tensor",
    "init_device_mesh",
]
