"""Host arrays in memory shared between processes: what ``Tensor.share_memory_`` and
``tricycle.multiprocessing``'s queues, pipes and pools use, as torch's.

``share(array)`` copies a numpy array into a new shared segment and returns the array over it
(what ``share_memory_`` puts in the tensor); ``reduce_tensor`` is the reducer that
``tricycle.multiprocessing`` registers with ``multiprocessing.reduction.ForkingPickler``: a host
tensor sent through a ``Queue``, ``Pipe`` or ``Pool`` is moved into shared memory first (in
place, as torch's) and arrives as a view of the same memory, so that a write in one process is
seen by the others. ``pickle.dumps`` and ``tricycle.save`` still copy (they do not use the
ForkingPickler). GPU tensors are shared through CUDA IPC (``tricycle.multiprocessing.cuda_ipc``),
not here: without that reducer they are pickled as before (a host copy arrives).

A segment is made under the sharing strategy current when it is made
(``tricycle.multiprocessing.set_sharing_strategy``):

- ``"file_descriptor"`` (Linux's default): an anonymous memory file (``os.memfd_create``) sent
  as a file descriptor duplicated into the receiver (``multiprocessing.reduction.DupFd``). It
  has no name, so nothing can leak: the kernel frees it when the last process that maps it or
  holds its descriptor drops it. Each shared array holds one descriptor open (torch's caveat:
  raise ``ulimit -n`` for very many shared tensors).
- ``"file_system"``: a file named ``tricycle_<pid>_<random>`` in ``/dev/shm`` (the temporary
  directory where that is missing), sent by name. The process that made it unlinks the name
  when its last array over it is collected (or at its exit); receivers that have opened it
  keep their mapping until they drop it. A receiver must open it before the maker drops it, so
  keep the sent tensor alive until it has arrived (torch asks the same of CUDA tensors).

Each process frees its mapping when its last array over the segment is collected (the arrays
hold the mapping through their ``base``; ``weakref.finalize`` closes the descriptor).
"""

import mmap
import os
import secrets
import sys
import tempfile
import weakref

import numpy as np

from tricycle import backend

_all_strategies = (
    {"file_system"} if sys.platform in ("darwin", "win32") else {"file_descriptor", "file_system"}
)
_strategy = "file_system" if sys.platform in ("darwin", "win32") else "file_descriptor"


def set_strategy(name: str) -> None:
    """Make later segments under ``name`` (one of ``all_strategies()``)."""
    global _strategy
    if name not in _all_strategies:
        raise AssertionError(  # torch's kind of error
            f"invalid sharing strategy {name!r}, expected one of {_all_strategies}"
        )
    _strategy = name


def get_strategy() -> str:
    """The strategy new segments are made under."""
    return _strategy


def all_strategies() -> set[str]:
    """The strategies this system has, as torch's."""
    return set(_all_strategies)


class Segment(mmap.mmap):
    """A mapping of shared memory that knows how to name it to another process: ``fd`` (a
    descriptor it holds open) or ``path`` (a file in shared memory), and ``owner`` (whether
    this process made, and so unlinks, the path)."""


def _release(fd, path) -> None:
    if fd is not None:
        os.close(fd)
    if path is not None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _map(size: int, fd=None, path=None, owner=False) -> Segment:
    if fd is None:  # a path: the mapping outlives the descriptor
        opened = os.open(path, os.O_RDWR)
        try:
            segment = Segment(opened, size)
        finally:
            os.close(opened)
    else:
        segment = Segment(fd, size)
    segment.fd, segment.path, segment.size = fd, path, size
    weakref.finalize(segment, _release, fd, path if owner else None)
    return segment


def _new_segment(size: int) -> Segment:
    size = max(size, 1)  # an empty mapping is refused
    if _strategy == "file_descriptor":
        fd = os.memfd_create("tricycle_shared")
        os.ftruncate(fd, size)
        return _map(size, fd=fd)
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    path = os.path.join(folder, f"tricycle_{os.getpid()}_{secrets.token_hex(8)}")
    opened = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(opened, size)
    finally:
        os.close(opened)
    return _map(size, path=path, owner=True)


def _over(segment: Segment, dtype, shape, offset=0, strides=None) -> np.ndarray:
    flat = np.frombuffer(segment, dtype=np.uint8)
    return np.ndarray(shape, dtype=dtype, buffer=flat, offset=offset, strides=strides)


def segment_of(array):
    """The Segment a numpy array lies in and its byte offset there, or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview) and isinstance(base.obj, Segment):
        start = np.frombuffer(base.obj, dtype=np.uint8).__array_interface__["data"][0]
        return base.obj, array.__array_interface__["data"][0] - start
    return None


def share(array: np.ndarray) -> np.ndarray:
    """``array`` itself if it already lies in shared memory, else a copy of it in a new
    segment (C-contiguous)."""
    if segment_of(array) is not None:
        return array
    shared = _over(_new_segment(array.nbytes), array.dtype, array.shape)
    shared[...] = array
    return shared


def _rebuild_array(handle, size, dtype, shape, offset, strides) -> np.ndarray:
    if isinstance(handle, str):
        segment = _map(size, path=handle)
    else:  # a DupFd: the descriptor duplicated into this process
        segment = _map(size, fd=handle.detach())
    return _over(segment, dtype, shape, offset, strides)


def reduce_array(array: np.ndarray):
    """The pickle reduction of a shared array: its segment's name (or descriptor) and where
    the array lies in it."""
    segment, offset = segment_of(array)
    if segment.fd is not None:
        from multiprocessing.reduction import DupFd  # the standard library's, made on use

        handle = DupFd(segment.fd)
    else:
        handle = segment.path
    return _rebuild_array, (handle, segment.size, array.dtype, array.shape, offset, array.strides)


def _rebuild_tensor(cls, rebuild_array, array_args, state):
    tensor = cls.__new__(cls)
    tensor.__setstate__({**state, "array": rebuild_array(*array_args)})
    return tensor


def reduce_tensor(tensor, reduce_gpu_array=None):
    """What ForkingPickler sends for a Tensor: a host tensor moved into shared memory (in
    place, as torch's) and sent as a view of it; a GPU tensor's array sent as
    ``reduce_gpu_array`` reduces it (``tricycle.multiprocessing`` passes its CUDA IPC
    reducer), or without it pickled as ``pickle`` does (a host copy)."""
    if tensor.args is not None and tensor.requires_grad:
        raise RuntimeError(  # torch's error
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the queue)."
        )
    if isinstance(tensor.array, np.ndarray):
        tensor.array = share(tensor.array)
        array_reduction = reduce_array(tensor.array)
    elif reduce_gpu_array is not None and backend.is_cupy_array(tensor.array):
        array_reduction = reduce_gpu_array(tensor.array)
    else:
        return tensor.__reduce_ex__(2)
    state = tensor._state(None)  # the data travels apart: no host copy of a GPU array
    state.pop("array")
    return _rebuild_tensor, (type(tensor), *array_reduction, state)
