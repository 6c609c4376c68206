"""GPU tensors sent between processes as CUDA IPC handles, as torch's.

A GPU tensor that ``tricycle.multiprocessing``'s ``Queue``, ``Pipe`` or ``Pool`` sends is not
copied: the sender exports the CUDA allocation its array lies in (``cudaIpcGetMemHandle`` on
the allocation's base, found with the driver's ``cuMemGetAddressRange``: cupy's memory pool
hands out pieces of larger allocations) and sends the handle with where the view lies in it
(byte offset, shape, strides, dtype) and its device. The receiver opens the handle on that
device (``cudaIpcOpenMemHandle``, once per process and allocation) and builds a cupy array
over the same memory: a write in either process is seen by the other. The mapping is closed
(``cudaIpcCloseMemHandle``) when the receiver's last array over it is collected.

The sender must keep the memory alive while a receiver uses it (torch's rule). As torch's,
tricycle keeps each sent allocation itself until the receiver lets go: every send takes a
slot of a counter in host shared memory, set to 1; the receiver sets it back to 0 when its
arrays go. ``tricycle.cuda.ipc_collect()`` (and each later send) drops the allocations whose
slots are 0. A tensor that arrives in the process that sent it is a view of its own memory.
A received GPU tensor may be sent on: the handle of the first sender travels, and the
middle process keeps its own mapping while the next receiver uses it.

CUDA cannot be used in a process forked from one that had started it: such a child gets
torch's error ("Cannot re-initialize CUDA in forked subprocess") when a GPU tensor reaches
it. Use the "spawn" (or "forkserver") start method, as with torch.
"""

import ctypes
import os
import weakref

import numpy as np

from tricycle import backend, shared_memory

SLOTS = 1024  # counter slots in one shared block
FORK_ERROR = (
    "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you "
    "must use the 'spawn' start method"
)
_forked_after_cuda = False


def _after_fork_in_child() -> None:
    """Run in a forked child: CUDA is unusable there if the parent had started it."""
    global _forked_after_cuda
    _forked_after_cuda = _forked_after_cuda or backend._cupy is not None  # CUDA started


os.register_at_fork(after_in_child=_after_fork_in_child)


# ====================================================================== where a view lies
def extent(shape, strides, itemsize: int) -> tuple[int, int]:
    """The bytes a strided view reaches, relative to its first element's address:
    (lowest, one past the highest); (0, 0) for an empty view."""
    if any(n == 0 for n in shape):
        return 0, 0
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return low, high + itemsize


def placement(pointer: int, base: int, size: int, shape, strides, itemsize: int) -> int:
    """The byte offset of a view's first element from its allocation's base; a view that
    reaches outside the allocation [base, base + size) is refused."""
    low, high = extent(shape, strides, itemsize)
    if pointer + low < base or pointer + high > base + size:
        raise ValueError(
            f"cuda_ipc: a view at {pointer:#x} reaching bytes [{low}, {high}) lies outside "
            f"its allocation [{base:#x}, {base + size:#x})"
        )
    return pointer - base


# ====================================================================== the sender's slots
class Counters:
    """Slots in host shared memory, one per send: 1 while a receiver may use what was
    sent, 0 once it let go. ``keep`` holds an object until its slot returns to 0."""

    def __init__(self):
        self.blocks: list[np.ndarray] = []
        self.kept: dict[tuple[int, int], object] = {}

    def keep(self, held) -> tuple[int, int]:
        """Hold ``held`` under a fresh slot set to 1: (block, slot)."""
        self.collect()
        free = [(n, int(np.argmin(b))) for n, b in enumerate(self.blocks) if not b.all()]
        if not free:
            self.blocks.append(shared_memory.share(np.zeros(SLOTS, np.int32)))
            free = [(len(self.blocks) - 1, 0)]
        number, slot = free[0]
        block = self.blocks[number]
        block[slot] = 1
        self.kept[(number, slot)] = held
        return number, slot

    def collect(self) -> None:
        """Let go of what receivers no longer use."""
        for number, slot in [k for k in self.kept if self.blocks[k[0]][k[1]] == 0]:
            del self.kept[(number, slot)]

    def find(self, handle: bytes):
        """What this process holds for an exported ``handle`` (an ``Export``), or None."""
        for held in self.kept.values():
            if isinstance(held, Export) and held.handle == handle:
                return held
        return None


_counters = Counters()


def collect() -> None:
    """``torch.cuda.ipc_collect``: free the sent GPU memory no receiver uses any more."""
    _counters.collect()


class Export:
    """A sent allocation in the process that made it: its handle, base and size, and the
    cupy memory that keeps it alive."""

    def __init__(self, handle: bytes, base: int, size: int, memory):
        self.handle, self.base, self.size, self.memory = handle, base, size, memory


class Lease:
    """A receiver's hold on sent memory: the opened mapping it shares with the process's
    other arrays over that allocation, and the sender's slot, returned to 0 when the last
    array over this lease is collected."""

    def __init__(self, mapping, origin: tuple, block: np.ndarray, slot: int):
        self.mapping, self.origin = mapping, origin
        weakref.finalize(self, _release_slot, block, slot)


def _release_slot(block: np.ndarray, slot: int) -> None:
    block[slot] = 0


class Mapping:
    """An opened IPC handle (the mapping's base pointer on ``device``); closed when the
    last Lease over it goes."""

    def __init__(self, pointer: int, device: int):
        self.pointer = pointer
        weakref.finalize(self, _close, pointer, device)


def _close(pointer: int, device: int) -> None:
    cupy = backend.cupy()
    try:
        with cupy.cuda.Device(device):
            cupy.cuda.runtime.ipcCloseMemHandle(pointer)
    except cupy.cuda.runtime.CUDARuntimeError:
        pass  # at exit the driver may have torn the context down: nothing left to close


_mappings: "weakref.WeakValueDictionary[bytes, Mapping]" = weakref.WeakValueDictionary()


# ====================================================================== send and receive
def _allocation_range(pointer: int) -> tuple[int, int]:
    """The base and size of the CUDA allocation ``pointer`` lies in (the driver's
    cuMemGetAddressRange; the array's device must be current)."""
    driver = ctypes.CDLL("libcuda.so.1")
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = driver.cuMemGetAddressRange_v2(
        ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pointer)
    )
    if status != 0:
        raise RuntimeError(f"cuda_ipc: cuMemGetAddressRange failed on {pointer:#x} ({status})")
    return base.value, size.value


def reduce_array(array):
    """The pickle reduction of a cupy array: its allocation's IPC handle (the first sender's
    for a received array), where the view lies there, and a counter slot that holds the
    memory in this process until the receiver lets go."""
    cupy = backend.cupy()
    device = array.device.id
    if array.size == 0:  # no memory to share
        return _empty, (device, array.dtype.str, array.shape)
    with cupy.cuda.Device(device):  # the receiver reads what every stream here has written
        cupy.cuda.runtime.deviceSynchronize()  # (and the device's context is current here)
    owner = getattr(array.data.mem, "_owner", None)  # an UnownedMemory's owner, if any
    if isinstance(owner, Lease):  # received here: send the first sender's handle on
        handle, size, pid = owner.origin
        base, held = owner.mapping.pointer, owner
    else:
        with cupy.cuda.Device(device):
            base, size = _allocation_range(array.data.ptr)
            handle = bytes(cupy.cuda.runtime.ipcGetMemHandle(base))
        pid = os.getpid()
        held = Export(handle, base, size, array.data.mem)
    offset = placement(array.data.ptr, base, size, array.shape, array.strides, array.itemsize)
    number, slot = _counters.keep(held)
    block = shared_memory.reduce_array(_counters.blocks[number])
    layout = (array.dtype.str, array.shape, array.strides, offset)
    return rebuild_array, ((handle, size, pid), device, layout, block, slot)


def rebuild_array(origin: tuple, device: int, layout: tuple, block: tuple, slot: int):
    """The receiver's cupy array over the sent memory (see the module)."""
    handle, size, pid = origin
    counter = block[0](*block[1])
    if _forked_after_cuda:
        _release_slot(counter, slot)  # the sender need not keep it for this process
        raise RuntimeError(FORK_ERROR)
    cupy = backend.cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    if device >= count:
        _release_slot(counter, slot)
        raise RuntimeError(
            f"cuda_ipc: a tensor sent from cuda:{device} cannot be opened in a process that "
            f"sees {count} GPU(s) (CUDA_VISIBLE_DEVICES must show the sender's devices)"
        )
    dtype, shape, strides, offset = layout
    with cupy.cuda.Device(device):
        export = _counters.find(handle) if pid == os.getpid() else None
        if export is not None:  # back in the process that made it: its own memory
            _release_slot(counter, slot)
            memory = cupy.cuda.UnownedMemory(export.base, size, export.memory, device)
        else:
            mapping = _mappings.get(handle) or _open(cupy, handle, device)
            lease = Lease(mapping, origin, counter, slot)
            memory = cupy.cuda.UnownedMemory(mapping.pointer, size, lease, device)
        pointer = cupy.cuda.MemoryPointer(memory, offset)
        return cupy.ndarray(shape, np.dtype(dtype), pointer, strides)


def _empty(device: int, dtype: str, shape: tuple):
    """An empty array sent: made anew on its device."""
    if _forked_after_cuda:
        raise RuntimeError(FORK_ERROR)
    cupy = backend.cupy()
    with cupy.cuda.Device(device):
        return cupy.empty(shape, np.dtype(dtype))


def _open(cupy, handle: bytes, device: int) -> Mapping:
    runtime = cupy.cuda.runtime
    try:
        pointer = runtime.ipcOpenMemHandle(handle, runtime.cudaIpcMemLazyEnablePeerAccess)
    except runtime.CUDARuntimeError as error:
        raise RuntimeError(
            f"cuda_ipc: cannot open the CUDA IPC handle of a tensor sent from cuda:{device} "
            f"({error}); the sender must keep it alive and run on this machine"
        ) from error
    mapping = Mapping(pointer, device)
    _mappings[handle] = mapping
    return mapping


def forked_after_cuda() -> bool:
    """Whether this process was forked from one that had started CUDA."""
    return _forked_after_cuda
