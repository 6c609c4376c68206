"""torch.utils.dlpack: ``from_dlpack`` and ``to_dlpack`` (``tricycle.from_dlpack`` and
``tricycle.to_dlpack``, tensors sharing memory with numpy, cupy, torch and any DLPack
producer) and ``DLDeviceType``, DLPack's device codes as ``__dlpack_device__`` reports them
(tricycle's tensors are ``kDLCPU`` on the host and ``kDLCUDA`` on a GPU)."""

import enum

from tricycle.torch_misc import from_dlpack, to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types, by its numbers."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17
