"""Array backends: numpy on the CPU, cupy on a CUDA GPU.

Every op is written once against ``xp``, the array module of its inputs. This is the only
module that imports cupy, and it does so lazily: importing tricycle on a machine without CUDA
never touches cupy, and `cupy_available()` answers quietly.
"""

import importlib
import os
import warnings
from types import ModuleType

import numpy as np

DEFAULT_FLOAT = np.float32

_cupy: ModuleType | None = None
_cupy_checked = False


def cupy_available() -> bool:
    """True when cupy imports and sees at least one CUDA device. Silent on failure."""
    global _cupy, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        if os.environ.get("TRICYCLE_DISABLE_GPU"):
            return False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module("cupy")
                if module.cuda.runtime.getDeviceCount() > 0:
                    _cupy = module
        except Exception:  # no cupy, no driver, no device: all mean "CPU only"
            _cupy = None
    return _cupy is not None


def cupy() -> ModuleType:
    """The cupy module; raises a clear error when there is no usable GPU."""
    if not cupy_available():
        raise RuntimeError(
            "tricycle: no CUDA GPU is available (cupy is not installed or sees no device). "
            "Install the GPU extra (`pip install tricycle-dl[gpu]`) on a machine with a GPU."
        )
    return _cupy


def nccl() -> ModuleType | None:
    """CuPy's NCCL bindings (``cupy.cuda.nccl``), or None when this cupy has no NCCL library.
    Raises like ``cupy()`` when there is no GPU at all."""
    cupy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cupy warns when it cannot preload libnccl
        try:
            module = importlib.import_module("cupy.cuda.nccl")
        except ImportError:
            return None
    return module if getattr(module, "available", False) else None


def is_cupy_array(array) -> bool:
    """True for a cupy ndarray, without importing cupy when it was never imported."""
    return _cupy is not None and isinstance(array, _cupy.ndarray)


def array_module(array) -> ModuleType:
    """numpy or cupy, whichever owns ``array``."""
    return _cupy if is_cupy_array(array) else np


def device_of(array) -> str:
    """'cpu' or 'cuda:N' for an array."""
    return f"cuda:{array.device.id}" if is_cupy_array(array) else "cpu"


def check_same_device(op: str, *arrays) -> ModuleType:
    """Return the shared xp of ``arrays``; raise if they live on different devices."""
    if _cupy is None or not arrays:  # cupy never loaded: all arrays are numpy (the fast path)
        return np
    first = device_of(arrays[0])
    for array in arrays[1:]:
        if device_of(array) != first:
            shapes = ", ".join(
                f"{tuple(getattr(a, 'shape', ()))} on {device_of(a)}" for a in arrays
            )
            raise ValueError(
                f"{op}: all tensors must be on the same device, got {shapes}. "
                "Move them with .to_gpu(device) or .from_gpu() first."
            )
    return array_module(arrays[0])


def to_device_array(array, device: int = 0):
    """Copy a numpy array to GPU ``device`` (no-op if it is already there)."""
    cp = cupy()
    if is_cupy_array(array) and array.device.id == device:
        return array
    with cp.cuda.Device(device):
        return cp.asarray(array)


def to_host_array(array) -> np.ndarray:
    """Copy a cupy array to host memory (no-op for numpy arrays)."""
    return array.get() if is_cupy_array(array) else array
