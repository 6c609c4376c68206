"""``torch.distributed.device_mesh``: ``DeviceMesh`` and ``init_device_mesh``
(``tricycle.parallel.device_mesh``'s)."""

from tricycle.parallel.device_mesh import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
