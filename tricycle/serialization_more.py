"""torch.serialization's settings and registries beside ``save`` and ``load``
(``tricycle.serialization`` hands them on): what PyTorch code sets or asks for.

- ``skip_data()``: within the block ``save`` writes every array as zeros of its shape and
  dtype (the file's layout and size as with the data; torch leaves the bytes empty to be
  filled by a later pass) and ``load`` gives zeros in place of the arrays it read (torch
  leaves the storages unfilled). ``materialize_fake_tensors`` is torch's argument for its
  fake tensors, which tricycle has none of: held, checked, unused.
- ``set_default_load_endianness``/``get_default_load_endianness`` (``LoadEndianness``) and
  ``set_default_mmap_options``/``get_default_mmap_options``: held and read back as torch's.
  tricycle's files are pickles whose numpy arrays carry their own byte order, so no fallback
  byte order is ever needed, and ``load`` reads the whole file (it maps none).
- ``register_package(priority, tagger, deserializer)``, ``location_tag(obj)`` and
  ``default_restore_location(obj, location)``: torch's registry of devices, on arrays and
  Tensors where torch's works on storages; "cpu" (the host) and "cuda:N" (a cupy array) are
  registered first, as torch's (priorities 10 and 20).
- ``DEFAULT_PROTOCOL`` (torch's, 2) and ``SourceChangeWarning``: torch's constant and warning
  class. ``tricycle.save``'s default protocol stays pickle's highest.
"""

import enum
import mmap
import threading

import numpy as np

from tricycle import backend, checks

DEFAULT_PROTOCOL = 2  # torch's default pickle protocol of torch.save


class SourceChangeWarning(Warning):
    """torch.serialization.SourceChangeWarning: torch warns with it when a whole pickled
    module's source changed since it was saved; tricycle pickles no source, so never warns."""


# ---------------------------------------------------------------------------- skip_data
_local = threading.local()  # .skip: inside a skip_data block, in this thread


def skipping() -> bool:
    """Whether this thread is inside a ``skip_data`` block."""
    return getattr(_local, "skip", False)


class skip_data:  # noqa: N801 - torch's name
    """torch.serialization.skip_data: a ``with`` block in which ``save`` writes arrays as
    zeros and ``load`` gives zeros for them (see the module's doc). Per thread."""

    def __init__(self, materialize_fake_tensors: bool = False):
        checks.boolean("skip_data", "materialize_fake_tensors", materialize_fake_tensors)
        self.materialize_fake_tensors = materialize_fake_tensors
        self.before = False

    def __enter__(self):
        self.before, _local.skip = skipping(), True
        return self

    def __exit__(self, *exc) -> None:
        _local.skip = self.before


# ---------------------------------------------------------------------------- held settings
class LoadEndianness(enum.Enum):
    """torch.serialization.LoadEndianness: the byte orders a fallback may name."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_settings = {"endianness": None, "mmap_flags": mmap.MAP_PRIVATE}


def get_default_load_endianness() -> LoadEndianness | None:
    """torch.serialization.get_default_load_endianness: what the last setter set (None at
    first)."""
    return _settings["endianness"]


def set_default_load_endianness(endianness) -> None:
    """torch.serialization.set_default_load_endianness: a ``LoadEndianness`` or None, held
    (see the module's doc); anything else a TypeError, as torch's."""
    if endianness is not None and not isinstance(endianness, LoadEndianness):
        raise TypeError(
            "Invalid argument type in function set_default_load_endianness: expected a "
            f"tricycle.serialization.LoadEndianness or None, got {endianness!r}"
        )
    _settings["endianness"] = endianness


def get_default_mmap_options() -> int:
    """torch.serialization.get_default_mmap_options: ``mmap.MAP_PRIVATE`` unless set."""
    return _settings["mmap_flags"]


class set_default_mmap_options:  # noqa: N801 - torch's name
    """torch.serialization.set_default_mmap_options: set the flags (``mmap.MAP_PRIVATE`` or
    ``mmap.MAP_SHARED``) at once, as a function; as a ``with`` block, until its end."""

    def __init__(self, flags: int):
        if flags not in (mmap.MAP_PRIVATE, mmap.MAP_SHARED):
            raise ValueError(
                "Invalid argument in function set_default_mmap_options, expected "
                f"mmap.MAP_PRIVATE or mmap.MAP_SHARED, but got {flags}"
            )
        self.before, _settings["mmap_flags"] = _settings["mmap_flags"], flags

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        _settings["mmap_flags"] = self.before


# ---------------------------------------------------------------------------- devices
def _host_tag(obj) -> str | None:
    return "cpu" if isinstance(getattr(obj, "array", obj), np.ndarray) else None


def _gpu_tag(obj) -> str | None:
    array = getattr(obj, "array", obj)
    return f"cuda:{array.device.id}" if backend.is_cupy_array(array) else None


def _host_restore(obj, location: str):
    if location != "cpu":
        return None
    return obj.cpu() if hasattr(obj, "cpu") else backend.to_host_array(obj)


def _gpu_restore(obj, location: str):
    if not location.startswith("cuda"):
        return None
    device = backend.parse_device(location, "default_restore_location")
    if hasattr(obj, "to_gpu"):
        return obj.to_gpu(device)
    return backend.to_device_array(obj, device)


_packages: list[tuple[int, object, object]] = [(10, _host_tag, _host_restore),
                                               (20, _gpu_tag, _gpu_restore)]  # fmt: skip


def register_package(priority: int, tagger, deserializer) -> None:
    """torch.serialization.register_package: ``tagger(obj)`` (a location string or None) and
    ``deserializer(obj, location)`` (the object there, or None), tried in order of
    ``priority`` (lower first) by ``location_tag`` and ``default_restore_location``."""
    owner = "register_package"
    checks.integer(owner, "priority", priority)
    checks.function(owner, "tagger", tagger)
    checks.function(owner, "deserializer", deserializer)
    _packages.append((priority, tagger, deserializer))
    _packages.sort(key=lambda package: package[0])


def location_tag(obj) -> str:
    """torch.serialization.location_tag: where the array or Tensor ``obj`` lives, as the
    first tagger that knows says ("cpu", "cuda:N"); a RuntimeError if none does."""
    for _, tagger, _ in _packages:
        location = tagger(obj)
        if location:
            return location
    raise RuntimeError(f"don't know how to determine data location of {type(obj).__name__}")


def default_restore_location(obj, location: str):
    """torch.serialization.default_restore_location: ``obj`` moved to ``location`` by the
    first deserializer that answers; a RuntimeError if none does."""
    checks.text("default_restore_location", "location", location)
    for _, _, deserializer in _packages:
        result = deserializer(obj, location)
        if result is not None:
            return result
    raise RuntimeError(
        f"don't know how to restore data location of {type(obj).__name__} (tagged with {location})"
    )
