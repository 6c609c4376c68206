"""``tricycle.cuda``: the ``torch.cuda`` functions a PyTorch script calls to ask about GPUs::

    device = "cuda" if tricycle.cuda.is_available() else "cpu"
    tricycle.cuda.synchronize()  # before reading a clock

Every question goes through ``tricycle.backend``, the one module that loads cupy, and only
when a function here is called: importing this module imports no cupy. Without cupy, or
without a CUDA device, ``is_available()`` is False and ``device_count()`` 0, as torch's;
``current_device``, ``set_device``, ``synchronize``, ``get_device_name`` and
``reset_peak_memory_stats`` raise a RuntimeError saying so; the memory questions
(``memory_allocated``, ``max_memory_allocated``, ``memory_reserved``: cupy's memory pool's
answers on a GPU) answer 0, as torch's do (no GPU memory is in use: a script that prints its
peak runs on the CPU); ``empty_cache`` does nothing (there is no cache to empty, and torch's
does nothing either).
tricycle draws every random number from one generator on the host, so ``manual_seed`` and
``manual_seed_all`` seed it (``tricycle.manual_seed``), with or without a GPU.

A device is None (the current GPU), an index N, or "cuda", "cuda:N" or "gpu" (a torch.device
too, by its name).

``is_bf16_supported()`` answers train.py's question of nanoGPT (``dtype = 'bfloat16' if
torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'``), and ``amp``
holds torch.cuda.amp's ``GradScaler`` and ``autocast`` (torch.amp's, on "cuda")::

    scaler = tricycle.cuda.amp.GradScaler(enabled=(dtype == 'float16'))

``tricycle.accelerator`` is this module: torch.accelerator's questions (``is_available``,
``device_count``, ``synchronize``, ``current_accelerator``, ``current_device_index``,
``set_device_index``) have CUDA's answers, tricycle's one accelerator::

    device = tricycle.accelerator.current_accelerator() or tricycle.device("cpu")

This module is above the library, beside ``tricycle.cuda_graph``: it calls cupy's device
runtime, which the math and the engine leave to ``tricycle.backend``.
"""

from tricycle import backend, checks
from tricycle import random as tricycle_random
from tricycle.cuda import amp  # noqa: F401 - torch.cuda.amp


def is_available() -> bool:
    """Whether a CUDA GPU can be used (cupy is installed and sees a device)."""
    return backend.cupy_available()


def device_count() -> int:
    """The number of CUDA GPUs cupy sees; 0 without cupy or a GPU."""
    if not backend.cupy_available():
        return 0
    return backend.cupy().cuda.runtime.getDeviceCount()


def _cupy(op: str):
    """cupy, or a RuntimeError naming ``op`` when there is no GPU to ask."""
    if not backend.cupy_available():
        raise RuntimeError(
            f"tricycle.cuda.{op}: no CUDA GPU is available (cupy is not installed or sees no "
            "device); tricycle.cuda.is_available() says whether one is"
        )
    return backend.cupy()


def _index(op: str, device) -> int:
    """The GPU index of ``device``: the current GPU for None."""
    cp = _cupy(op)
    if device is None:
        return cp.cuda.runtime.getDevice()
    if not isinstance(device, str | int):
        device = str(device)  # a torch.device: "cuda:0"
    index = backend.parse_device(device, f"tricycle.cuda.{op}")
    if index is None:
        raise ValueError(f"tricycle.cuda.{op}: expected a GPU, got the device {device!r}")
    count = cp.cuda.runtime.getDeviceCount()
    if index >= count:
        raise ValueError(f"tricycle.cuda.{op}: GPU {index} does not exist ({count} seen)")
    return index


def current_device() -> int:
    """The index of the GPU that new GPU arrays go to."""
    return _index("current_device", None)


def set_device(device) -> None:
    """Make GPU ``device`` the current one: where "cuda" and new GPU arrays go (a
    data-parallel rank's own: ``distributed.init(gpu=True)`` does this already)."""
    index = _index("set_device", device)
    backend.cupy().cuda.Device(index).use()


def synchronize(device=None) -> None:
    """Wait until GPU ``device`` (the current one for None) has done all its queued work."""
    index = _index("synchronize", device)
    with backend.cupy().cuda.Device(index):
        backend.synchronize("tricycle.cuda.synchronize")


def get_device_name(device=None) -> str:
    """The name of GPU ``device`` (the current one for None), as its driver gives it."""
    index = _index("get_device_name", device)
    name = backend.cupy().cuda.runtime.getDeviceProperties(index)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU computes in bfloat16: natively from compute capability 8.0,
    through float32 arithmetic on any GPU (``including_emulation``, torch's default; tricycle's
    kernels compute in float32 anyway); False without a GPU, as torch's."""
    checks.boolean("tricycle.cuda.is_bf16_supported", "including_emulation", including_emulation)
    if not is_available():
        return False
    return including_emulation or int(backend.cupy().cuda.Device().compute_capability) >= 80


def empty_cache() -> None:
    """Give the GPU memory that cupy holds for reuse, but no array uses, back to the device
    (other processes see it free); nothing without a GPU."""
    if backend.cupy_available():
        cp = backend.cupy()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


# ------------------------------------------------------------------ memory
def _pool(op: str, device, ask: str):
    """``ask`` of cupy's memory pool on GPU ``device`` (the current one for None); a memory
    question without a GPU is 0, as torch's (nothing is allocated)."""
    if ask != "free_all_blocks" and device is None and not backend.cupy_available():
        return 0
    index = _index(op, device)
    with backend.cupy().cuda.Device(index):
        return getattr(backend.cupy().get_default_memory_pool(), ask)()


def memory_allocated(device=None) -> int:
    """The bytes that arrays on GPU ``device`` (the current one for None) use now: what
    cupy's memory pool has handed out and not had back."""
    return _pool("memory_allocated", device, "used_bytes")


def memory_reserved(device=None) -> int:
    """The bytes cupy's memory pool holds on GPU ``device``: the arrays' and the blocks it
    keeps free for reuse, as torch's caching allocator keeps them."""
    return _pool("memory_reserved", device, "total_bytes")


def max_memory_allocated(device=None) -> int:
    """The most memory the arrays on GPU ``device`` needed since ``reset_peak_memory_stats``
    (or the start), as cupy's pool shows it: it tracks no peak, but keeps every block the
    arrays freed and grows only when they need more, so what it holds is that peak (in its
    blocks' sizes): ``memory_reserved``."""
    return _pool("max_memory_allocated", device, "total_bytes")


max_memory_reserved = max_memory_allocated


def reset_peak_memory_stats(device=None) -> None:
    """Start the peak of ``max_memory_allocated`` again from what the arrays on GPU
    ``device`` use now: the pool gives its free blocks back to the device."""
    _pool("reset_peak_memory_stats", device, "free_all_blocks")


def manual_seed(seed: int) -> None:
    """Seed tricycle's one generator (``tricycle.manual_seed``): GPU draws are made on the
    host from it, so this seeds them."""
    tricycle_random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """``manual_seed``: one generator serves every GPU."""
    tricycle_random.manual_seed(seed)


# ------------------------------------------------------------------ torch.accelerator's names
def current_accelerator(check_available: bool = False):
    """torch.accelerator.current_accelerator: the device "cuda" (a ``tricycle.device``) when a
    GPU is available, None otherwise, whatever ``check_available`` says (tricycle has no
    accelerator that is built in but absent)."""
    checks.boolean("tricycle.accelerator.current_accelerator", "check_available", check_available)
    return backend.device("cuda") if is_available() else None


def current_device_index() -> int:
    """torch.accelerator.current_device_index: ``current_device()``."""
    return _index("current_device_index", None)


def set_device_index(device) -> None:
    """torch.accelerator.set_device_index: ``set_device(device)``."""
    set_device(device)


current_device_idx, set_device_idx = current_device_index, set_device_index  # torch's old names
