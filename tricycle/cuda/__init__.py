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

The names live in modules by meaning: ``devices`` (which GPUs, their properties, the
``device`` contexts), ``memory`` (cupy's pool as torch's allocator), ``streams`` (``Stream``,
``Event``, the ``stream`` context), ``rng`` (the one generator), ``monitor`` (NVML, the sync
debug mode) and ``graphs`` (``CUDAGraph`` and its kin, loaded when first named). Without a GPU
a question that needs one raises ``devices.NoGPUError``, a RuntimeError that is also torch's
AssertionError.

This module is above the library, beside ``tricycle.cuda_graph``: it calls cupy's device
runtime, which the math and the engine leave to ``tricycle.backend``.
"""

import importlib

from tricycle import backend, checks
from tricycle.cuda import amp  # noqa: F401 - torch.cuda.amp
from tricycle.cuda.devices import (  # noqa: F401 - torch.cuda's names
    DeviceProperties,
    NoGPUError,
    can_device_access_peer,
    current_device,
    device,
    device_count,
    device_of,
    get_arch_list,
    get_device_capability,
    get_device_name,
    get_device_properties,
    init,
    ipc_collect,
    is_available,
    is_bf16_supported,
    is_initialized,
    is_tf32_supported,
    set_device,
    synchronize,
)
from tricycle.cuda.devices import index as _index
from tricycle.cuda.memory import (  # noqa: F401 - torch.cuda's names
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_max_memory_cached,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from tricycle.cuda.monitor import (  # noqa: F401 - torch.cuda's names
    clock_rate,
    get_sync_debug_mode,
    list_gpu_processes,
    memory_usage,
    power_draw,
    set_sync_debug_mode,
    temperature,
    utilization,
)
from tricycle.cuda.rng import (  # noqa: F401 - torch.cuda's names
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from tricycle.cuda.streams import (  # noqa: F401 - torch.cuda's names
    Event,
    ExternalStream,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

# CUDA graphs' names, from tricycle.cuda.graphs (helper Q's), loaded the first time one is
# named: they reach the applications' capture code, which importing tricycle.cuda must not load
_GRAPH_NAMES = frozenset(
    ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
     "make_graphed_callables")
)  # fmt: skip


def __getattr__(name: str):
    """``OutOfMemoryError`` (cupy's error class on a GPU, see ``tricycle.cuda.memory``) and
    the CUDA graphs' names, looked up when named."""
    if name == "OutOfMemoryError":
        return importlib.import_module("tricycle.cuda.memory").out_of_memory_error()
    if name in _GRAPH_NAMES:
        return getattr(importlib.import_module("tricycle.cuda.graphs"), name)
    raise AttributeError(f"module 'tricycle.cuda' has no attribute {name!r}")


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


def set_device_index(device_index) -> None:
    """torch.accelerator.set_device_index: ``set_device(device_index)``."""
    set_device(device_index)


current_device_idx, set_device_idx = current_device_index, set_device_index  # torch's old names
