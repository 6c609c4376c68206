"""torch.cuda's memory questions, answered by cupy's memory pool (``cupy.get_default_memory_
pool()``), which plays torch's caching allocator: it keeps the blocks that arrays free for
reuse, so what arrays use is its ``used_bytes`` and what it holds its ``total_bytes``.

cupy's pool keeps no peak and no counts of allocations, so ``memory_stats`` gives the keys of
torch's that it can answer (``MEMORY_STAT_KEYS``), and a peak is what the pool holds: it grows
only when arrays need more than it has, and ``reset_peak_memory_stats`` gives its free blocks
back, so that the peak starts again from what is in use. Without a GPU the memory questions
answer 0 (``memory_stats`` an empty dict), as torch's; the resets and the limits raise.

``OutOfMemoryError`` is torch.cuda's error class: on a GPU it is cupy's own
(``cupy.cuda.memory.OutOfMemoryError``, a MemoryError), the error tricycle's allocations raise
there, so that ``except tricycle.cuda.OutOfMemoryError:`` catches it; without a GPU it is a
RuntimeError of tricycle's (``HostOutOfMemoryError``), as torch's is, that nothing raises.
"""

import collections
import warnings

from tricycle import backend
from tricycle.cuda.devices import index, is_available

# torch's keys that cupy's pool answers: each all-pool ("all") current and peak value
MEMORY_STAT_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak",
    "active_bytes.all.current", "active_bytes.all.peak",
    "requested_bytes.all.current", "requested_bytes.all.peak",
    "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "inactive_split_bytes.all.current", "inactive_split.all.current",
)  # fmt: skip


class HostOutOfMemoryError(RuntimeError):
    """torch.cuda.OutOfMemoryError where there is no GPU (nothing raises it)."""


def out_of_memory_error() -> type:
    """The class ``tricycle.cuda.OutOfMemoryError`` names: cupy's on a GPU, else the host's."""
    if backend.cupy_available():
        return backend.cupy().cuda.memory.OutOfMemoryError
    return HostOutOfMemoryError


def _pool(op: str, device, ask: str):
    """``ask`` of cupy's memory pool on GPU ``device`` (the current one for None); a memory
    question without a GPU is 0, as torch's (nothing is allocated)."""
    if ask != "free_all_blocks" and device is None and not backend.cupy_available():
        return 0
    number = index(op, device)
    with backend.cupy().cuda.Device(number):
        return getattr(backend.cupy().get_default_memory_pool(), ask)()


def empty_cache() -> None:
    """Give the GPU memory that cupy holds for reuse, but no array uses, back to the device
    (other processes see it free); nothing without a GPU."""
    if backend.cupy_available():
        cp = backend.cupy()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


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


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"`tricycle.cuda.{old}` has been renamed to `tricycle.cuda.{new}`",
                  FutureWarning, stacklevel=3)  # fmt: skip


def memory_cached(device=None) -> int:
    """torch's old name of ``memory_reserved``: warns as torch's (FutureWarning)."""
    _renamed("memory_cached", "memory_reserved")
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """torch's old name of ``max_memory_reserved``: warns as torch's (FutureWarning)."""
    _renamed("max_memory_cached", "max_memory_reserved")
    return max_memory_reserved(device)


def _resets_all(old: str) -> None:
    warnings.warn(f"tricycle.cuda.{old} now calls tricycle.cuda.reset_peak_memory_stats, "
                  "which resets /all/ peak memory stats.", FutureWarning, stacklevel=3)  # fmt: skip


def reset_max_memory_allocated(device=None) -> None:
    """torch's old reset: warns as torch's and calls ``reset_peak_memory_stats``."""
    _resets_all("reset_max_memory_allocated")
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    """torch's old reset: warns as torch's and calls ``reset_peak_memory_stats``."""
    _resets_all("reset_max_memory_cached")
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """torch's reset of its allocation counts: cupy's pool keeps none, so nothing changes
    (GPU ``device`` is checked; no GPU raises, as torch's)."""
    index("reset_accumulated_memory_stats", device)


def memory_stats(device=None) -> dict:
    """torch's dictionary of allocator statistics, for the keys cupy's pool answers
    (``MEMORY_STAT_KEYS``; a peak is what the pool holds, see the module); {} without a GPU,
    as torch's."""
    if device is None and not is_available():
        return collections.OrderedDict()
    number = index("memory_stats", device)
    with backend.cupy().cuda.Device(number):
        pool = backend.cupy().get_default_memory_pool()
        used, held, free = pool.used_bytes(), pool.total_bytes(), pool.free_bytes()
        blocks = pool.n_free_blocks()
    values = (used, held, used, held, used, held, held, held, free, blocks)
    return collections.OrderedDict(sorted(zip(MEMORY_STAT_KEYS, values, strict=True)))


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count} {unit}" if unit == "B" else f"{count:.2f} {unit}"
        count /= 1024
    return f"{count:.2f} TiB"


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of ``memory_stats`` (current and peak of each row), as torch's
    shape; on a machine without a GPU every figure is 0 (torch raises a KeyError there)."""
    stats = memory_stats(device)
    get = lambda key: stats.get(key, 0)  # noqa: E731
    rows = [
        ("Allocated memory", get("allocated_bytes.all.current"), get("allocated_bytes.all.peak")),
        ("Active memory", get("active_bytes.all.current"), get("active_bytes.all.peak")),
        ("Requested memory", get("requested_bytes.all.current"), get("requested_bytes.all.peak")),
        ("GPU reserved memory", get("reserved_bytes.all.current"), get("reserved_bytes.all.peak")),
        ("Non-releasable memory", get("inactive_split_bytes.all.current"), None),
    ]
    number = 0 if device is None and not is_available() else index("memory_summary", device)
    rule = "|" + "=" * 61 + "|"
    lines = [rule, f"|{'tricycle CUDA memory summary, device ID ' + str(number):^61}|",
             "|" + "-" * 61 + "|", f"| {'Metric':<27}| {'Cur Usage':>14} | {'Peak Usage':>14} |",
             "|" + "-" * 61 + "|"]  # fmt: skip
    for name, current, peak in rows:
        peak_text = "" if peak is None else _size(peak)
        lines.append(f"| {name:<27}| {_size(current):>14} | {peak_text:>14} |")
    if not abbreviated:
        lines.append(f"| {'Free blocks held':<27}| {get('inactive_split.all.current'):>14} | "
                     f"{'':>14} |")  # fmt: skip
    lines.append(rule)
    return "\n".join(lines) + "\n"


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of GPU ``device``'s memory, as the driver counts them (the blocks
    cupy's pool holds count as used, as torch's cached blocks do)."""
    number = index("mem_get_info", device)
    with backend.cupy().cuda.Device(number):
        free, total = backend.cupy().cuda.runtime.memGetInfo()
    return int(free), int(total)


def _fraction(fraction) -> float:
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    return fraction


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Limit cupy's pool on GPU ``device`` to ``fraction`` of its memory (the pool's limit):
    an allocation past it raises ``OutOfMemoryError``, as torch's."""
    number = index("set_per_process_memory_fraction", device)
    fraction = _fraction(fraction)
    with backend.cupy().cuda.Device(number):
        backend.cupy().get_default_memory_pool().set_limit(fraction=fraction)


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction of GPU ``device``'s memory that cupy's pool may take (1.0: no limit)."""
    number = index("get_per_process_memory_fraction", device)
    cp = backend.cupy()
    with cp.cuda.Device(number):
        limit = cp.get_default_memory_pool().get_limit()
        total = cp.cuda.runtime.memGetInfo()[1]
    return 1.0 if limit == 0 else limit / total
