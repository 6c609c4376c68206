"""torch.cuda's questions about the GPUs themselves: how many, which is current, their
properties (``get_device_properties``, ``get_device_capability``), which may reach another's
memory, and the ``device``/``device_of`` contexts that make one current for a while.

Every answer comes from cupy's runtime through ``tricycle.backend.cupy()``, asked only when a
function is called. Without a GPU a question that needs one raises ``NoGPUError``: a
RuntimeError (tricycle's) that is an AssertionError too, the kind torch raises there ("Torch
not compiled with CUDA enabled"), so that either ``except`` catches it.
"""

import contextlib
import sys

from tricycle import backend, checks


class NoGPUError(RuntimeError, AssertionError):
    """A torch.cuda question asked on a machine without a GPU (torch: AssertionError "Torch
    not compiled with CUDA enabled"; tricycle's earlier answer: RuntimeError): both kinds."""


def is_available() -> bool:
    """Whether a CUDA GPU can be used (cupy is installed and sees a device)."""
    return backend.cupy_available()


def device_count() -> int:
    """The number of CUDA GPUs cupy sees; 0 without cupy or a GPU."""
    if not backend.cupy_available():
        return 0
    return backend.cupy().cuda.runtime.getDeviceCount()


def cupy(op: str):
    """cupy, or a ``NoGPUError`` naming ``op`` when there is no GPU to ask."""
    if not backend.cupy_available():
        raise NoGPUError(
            f"tricycle.cuda.{op}: no CUDA GPU is available (cupy is not installed or sees no "
            "device); tricycle.cuda.is_available() says whether one is"
        )
    return backend.cupy()


def index(op: str, device) -> int:
    """The GPU index of ``device``: the current GPU for None."""
    cp = cupy(op)
    if device is None:
        return cp.cuda.runtime.getDevice()
    if not isinstance(device, str | int):
        device = str(device)  # a torch.device: "cuda:0"
    number = backend.parse_device(device, f"tricycle.cuda.{op}")
    if number is None:
        raise ValueError(f"tricycle.cuda.{op}: expected a GPU, got the device {device!r}")
    count = cp.cuda.runtime.getDeviceCount()
    if number >= count:
        raise ValueError(f"tricycle.cuda.{op}: GPU {number} does not exist ({count} seen)")
    return number


def current_device() -> int:
    """The index of the GPU that new GPU arrays go to."""
    return index("current_device", None)


def set_device(device) -> None:
    """Make GPU ``device`` the current one: where "cuda" and new GPU arrays go (a
    data-parallel rank's own: ``distributed.init(gpu=True)`` does this already)."""
    number = index("set_device", device)
    backend.cupy().cuda.Device(number).use()


def synchronize(device=None) -> None:
    """Wait until GPU ``device`` (the current one for None) has done all its queued work."""
    number = index("synchronize", device)
    with backend.cupy().cuda.Device(number):
        backend.synchronize("tricycle.cuda.synchronize")


def _properties(op: str, device) -> dict:
    """cupy's runtime's dict of GPU ``device``'s properties (cudaDeviceProp's fields)."""
    number = index(op, device)  # first: it raises the error without a GPU
    return backend.cupy().cuda.runtime.getDeviceProperties(number)


def _text(value) -> str:
    return value.decode(errors="replace").rstrip("\x00") if isinstance(value, bytes) else str(value)


def get_device_name(device=None) -> str:
    """The name of GPU ``device`` (the current one for None), as its driver gives it."""
    return _text(_properties("get_device_name", device)["name"])


class DeviceProperties:
    """torch.cuda.get_device_properties's answer (torch's ``_CudaDeviceProperties``): the
    fields torch names, read from cudaDeviceProp as cupy's runtime reports it (None where
    this cupy does not report one). ``total_memory`` is in bytes, the cache and shared-memory
    sizes too, clock rates in kHz, as CUDA gives them."""

    # torch's field: cudaDeviceProp's
    FIELDS = {
        "name": "name", "major": "major", "minor": "minor", "total_memory": "totalGlobalMem",
        "multi_processor_count": "multiProcessorCount", "is_integrated": "integrated",
        "is_multi_gpu_board": "isMultiGpuBoard",
        "max_threads_per_multi_processor": "maxThreadsPerMultiProcessor",
        "max_threads_per_block": "maxThreadsPerBlock", "warp_size": "warpSize",
        "regs_per_multiprocessor": "regsPerMultiprocessor", "L2_cache_size": "l2CacheSize",
        "shared_memory_per_block": "sharedMemPerBlock",
        "shared_memory_per_block_optin": "sharedMemPerBlockOptin",
        "shared_memory_per_multiprocessor": "sharedMemPerMultiprocessor",
        "clock_rate": "clockRate", "memory_clock_rate": "memoryClockRate",
        "memory_bus_width": "memoryBusWidth", "pci_bus_id": "pciBusID",
        "pci_device_id": "pciDeviceID", "pci_domain_id": "pciDomainID", "uuid": "uuid",
    }  # fmt: skip

    def __init__(self, properties: dict):
        for field, key in self.FIELDS.items():
            setattr(self, field, properties.get(key))
        self.name = _text(self.name)
        if isinstance(self.uuid, bytes) and len(self.uuid) == 16:  # torch prints it as a UUID
            h = self.uuid.hex()
            self.uuid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        for flag in ("is_integrated", "is_multi_gpu_board"):
            if getattr(self, flag) is not None:
                setattr(self, flag, bool(getattr(self, flag)))

    def __repr__(self) -> str:
        megabytes = lambda n: "None" if n is None else f"{n // 2**20}MB"  # noqa: E731
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
            f"minor={self.minor}, total_memory={megabytes(self.total_memory)}, "
            f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid}, "
            f"L2_cache_size={megabytes(self.L2_cache_size)})"
        )


def get_device_properties(device=None) -> DeviceProperties:
    """The properties of GPU ``device`` (the current one for None)."""
    return DeviceProperties(_properties("get_device_properties", device))


def get_device_capability(device=None) -> tuple[int, int]:
    """GPU ``device``'s compute capability, (major, minor): (9, 0) for an H100."""
    properties = _properties("get_device_capability", device)
    return int(properties["major"]), int(properties["minor"])


def get_arch_list() -> list[str]:
    """The architectures tricycle's kernels can be built for: torch lists those compiled
    into it; tricycle compiles its CUDA C at run time through NVRTC, so these are NVRTC's
    ("sm_80", ...); [] without a GPU, as torch's."""
    if not is_available():
        return []
    cp = backend.cupy()
    try:
        archs = cp.cuda.nvrtc.getSupportedArchs()
    except AttributeError:  # an older cupy: the GPUs present
        archs = sorted({int(cp.cuda.Device(i).compute_capability) for i in range(device_count())})
    return [f"sm_{arch}" for arch in archs]


def can_device_access_peer(device, peer_device) -> bool:
    """Whether GPU ``device`` can read and write GPU ``peer_device``'s memory directly."""
    first = index("can_device_access_peer", device)
    second = index("can_device_access_peer", peer_device)
    return bool(backend.cupy().cuda.runtime.deviceCanAccessPeer(first, second))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU computes in bfloat16: natively from compute capability 8.0,
    through float32 arithmetic on any GPU (``including_emulation``, torch's default; tricycle's
    kernels compute in float32 anyway); False without a GPU, as torch's."""
    checks.boolean("tricycle.cuda.is_bf16_supported", "including_emulation", including_emulation)
    if not is_available():
        return False
    return including_emulation or int(backend.cupy().cuda.Device().compute_capability) >= 80


def is_tf32_supported() -> bool:
    """Whether the current GPU has TF32 tensor cores (compute capability 8.0 and later); False
    without a GPU, as torch's."""
    if not is_available():
        return False
    return int(backend.cupy().cuda.Device().compute_capability) >= 80


# ------------------------------------------------------------------ initialisation
def init() -> None:
    """torch.cuda.init: start CUDA now rather than at the first GPU work (tricycle: load cupy
    and ask the driver for the GPUs); no GPU raises, as torch's."""
    cupy("init").cuda.runtime.getDeviceCount()


def is_initialized() -> bool:
    """Whether CUDA has been started in this process: cupy loaded and a GPU seen."""
    return backend._cupy is not None


def ipc_collect() -> None:
    """torch.cuda.ipc_collect: free the GPU memory this process sent to others through CUDA
    IPC (``tricycle.multiprocessing``'s queues) that no receiver uses any more (no GPU
    raises, as torch's). Nothing was sent if ``tricycle.multiprocessing`` was never loaded."""
    cupy("ipc_collect")
    sent = sys.modules.get("tricycle.multiprocessing.cuda_ipc")  # a higher layer: only if loaded
    if sent is not None:
        sent.collect()


# ------------------------------------------------------------------ contexts
class device(contextlib.ContextDecorator):  # noqa: N801 - torch's name
    """``with tricycle.cuda.device(1):`` makes GPU 1 current inside the block and puts the
    one before back after it; -1 (torch's "no device") changes nothing, as torch's."""

    def __init__(self, device):
        self.idx = -1 if device == -1 else device
        self.previous = None

    def __enter__(self):
        if self.idx == -1:
            return self
        number = index("device", self.idx)
        cp = backend.cupy()
        self.previous = cp.cuda.runtime.getDevice()
        cp.cuda.runtime.setDevice(number)
        return self

    def __exit__(self, *exc) -> bool:
        if self.previous is not None:
            backend.cupy().cuda.runtime.setDevice(self.previous)
            self.previous = None
        return False


class device_of(device):  # noqa: N801 - torch's name
    """``with tricycle.cuda.device_of(x):`` makes ``x``'s GPU current; a CPU tensor (or
    anything not on a GPU) changes nothing, as torch's."""

    def __init__(self, obj):
        on_gpu = getattr(obj, "is_cuda", False)
        super().__init__(obj.get_device() if on_gpu else -1)
