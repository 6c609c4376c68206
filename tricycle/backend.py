"""Array backends: numpy on the CPU, cupy on a CUDA GPU.

Every op is written once against ``xp``, the array module of its inputs. This is the only
module that imports cupy, and it does so lazily: importing tricycle on a machine without CUDA
never touches cupy, and `cupy_available()` answers quietly.
"""

import importlib
import operator
import os
import warnings
from types import ModuleType

import numpy as np

from tricycle import checks

DEFAULT_FLOAT = np.float32

_cupy: ModuleType | None = None
_cupy_checked = False
# torch's float32 matmul precision as a script set it ("highest", "high" or "medium"): kept
# here, below both of its doors (``tricycle.precision.set_float32_matmul_precision`` and
# ``tricycle.backends.cuda.matmul.allow_tf32``), which a GPU's TF32 switch follows
float32_matmul = {"precision": "highest"}


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


def special_functions(xp) -> ModuleType:
    """The special functions (Bessel, gamma, error functions ...) of the array module ``xp``:
    ``scipy.special`` for numpy, ``cupyx.scipy.special`` for cupy, imported on first use."""
    return importlib.import_module("scipy.special" if xp is np else "cupyx.scipy.special")


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
    """Copy a cupy array to host memory (no-op for numpy arrays). The host waits for the
    device here: the wait is marked for a deadline keeper (``tricycle.waits``)."""
    if not is_cupy_array(array):
        return array
    from tricycle import waits  # noqa: PLC0415 - on the GPU's path only: the engine stays small

    with waits.waiting("a read-back from the GPU"):
        return array.get()


def from_dlpack(exporter):
    """The array of a DLPack exporter (an object with ``__dlpack__`` and ``__dlpack_device__``),
    sharing its memory: numpy's for host memory, cupy's for a GPU's (``torch.from_dlpack``)."""
    kind = int(exporter.__dlpack_device__()[0])
    if kind == 1:  # kDLCPU
        return np.from_dlpack(exporter)
    if kind in (2, 3):  # kDLCUDA, kDLCUDAHost
        return cupy().from_dlpack(exporter)
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {kind} (tricycle takes "
                       "host (1) and CUDA (2) arrays)")  # fmt: skip


def host_snapshot(array) -> np.ndarray:
    """A host copy of ``array`` that later in-place writes to it cannot change: a GPU
    array's read-back is one already (copying it again would cost a second pass over fresh
    memory); a host array is copied."""
    if is_cupy_array(array):
        return to_host_array(array)
    return np.array(array, copy=True)


def synchronize(what: str = "a synchronisation of the GPU") -> None:
    """Wait until the current GPU has done all its queued work (marked as a wait, as
    ``to_host_array``); nothing without cupy."""
    if _cupy is not None:
        from tricycle import waits  # noqa: PLC0415 - as in to_host_array

        with waits.waiting(what):
            _cupy.cuda.Device().synchronize()


# ====================================================================== data and devices
def is_float(dtype) -> bool:
    """Whether ``dtype`` is a floating dtype (float16/32/64, ml_dtypes' bfloat16 and float8s).

    Reading ``dtype.kind`` is far cheaper than ``np.issubdtype`` and this runs once per op.
    """
    kind = dtype.kind
    # ml_dtypes' floats have kind 'V'; their scalar type's name is cheaper to read than dtype.name
    return kind == "f" or (kind == "V" and dtype.type.__name__.startswith(_ML_FLOATS))


_ML_FLOATS = ("bfloat16", "float8_")
# torch's float8 dtypes, each ml_dtypes' of that name
FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def is_float8(dtype) -> bool:
    """Whether ``dtype`` is one of torch's float8 dtypes (ml_dtypes': kind 'V', or 'f' for
    float8_e5m2)."""
    return dtype.type.__name__.startswith("float8_")


def ml_dtype(name: str, op: str) -> np.dtype:
    """ml_dtypes' dtype ``name`` (``float8_e4m3fn``...), imported when first asked for;
    without ml_dtypes an ImportError naming ``op``."""
    try:
        import ml_dtypes  # noqa: PLC0415 - only where its dtypes are used
    except ImportError as error:
        raise ImportError(
            f"{op} needs the ml_dtypes package for its {name} dtype (pip install ml_dtypes)"
        ) from error
    return np.dtype(getattr(ml_dtypes, name))


def bfloat16(op: str = "Precision('bf16')") -> np.dtype:
    """The bfloat16 numpy dtype (from ml_dtypes, which numpy and cupy both understand),
    imported when first asked for; without ml_dtypes an ImportError naming ``op``."""
    return ml_dtype("bfloat16", op)


def numeric_array(data, dtype=None) -> np.ndarray:
    """``data`` (a number, nested lists, a numpy scalar...) as a numpy array of ``dtype``.

    Numbers and nested lists become float32 (the default float), booleans stay boolean and
    numpy scalars keep their dtype, unless ``dtype`` says otherwise. Data that is not numeric
    (None, strings, objects) or ragged raises instead of becoming NaN or an object array.
    """
    if data is None:
        raise TypeError("Tensor: cannot make a tensor from None; expected numbers or an array")
    try:
        array = np.asarray(data)
    except ValueError as error:  # ragged nested lists
        raise ValueError(f"Tensor: data is not a rectangular array of numbers: {error}") from None
    if array.dtype.kind not in "biufc" and not is_float(array.dtype):  # bfloat16 is kind 'V'
        raise TypeError(
            f"Tensor: expected numbers, got {type(data).__name__} data of numpy dtype "
            f"{array.dtype} (None or strings?): {preview(data)}"
        )
    if dtype is None:
        if isinstance(data, np.generic) or array.dtype == bool:
            return array
        # complex numbers are complex64, torch's default complex beside float32
        dtype = np.complex64 if array.dtype.kind == "c" else DEFAULT_FLOAT
    elif array.dtype.kind == "c" and np.dtype(dtype).kind != "c":  # torch's error
        raise TypeError(f"Tensor: must be real number, not complex: {preview(data)} as {dtype}")
    return cast(array, numeric_dtype(dtype))


def cast(array, dtype: np.dtype, op: str = "Tensor"):
    """``array`` as ``dtype``, refusing, for a host array made integer, values the dtype cannot
    hold: numpy's cast would wrap 300 to 44 in int8 and turn NaN into the smallest int64. (A
    device array is cast as it is: checking it would wait for the device.) float8_e4m3fn, which
    has no infinity, saturates at +-448 as torch's cast does (ml_dtypes' would give NaN)."""
    if dtype.kind in "iu" and array.dtype.kind in "iuf" and isinstance(array, np.ndarray):
        if array.size and array.dtype != dtype:
            if array.dtype.kind == "f" and not np.isfinite(array).all():
                raise ValueError(f"{op}: NaN or infinite values cannot become {dtype}")
            info, low, high = np.iinfo(dtype), array.min(), array.max()
            if low < info.min or high > info.max:
                value = high if high > info.max else low
                raise ValueError(
                    f"{op}: the value {value} does not fit {dtype} ({info.min} to {info.max})"
                )
    # kind first: ml_dtypes' types alone are 'V', so an ordinary cast reads no name
    if dtype.kind == "V" and dtype.type.__name__ == "float8_e4m3fn" and array.dtype.kind in "fiu":
        array = array_module(array).clip(array, -448, 448)  # torch saturates, NaN stays NaN
    return array.astype(dtype, copy=False)


_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))  # torch's cfloat and cdouble


class ComplexSafe(tuple):
    """The back_fns of an op below ``tricycle.complex_tensor`` that is right for complex
    tensors as written (a device move: the gradient moved back as it is)."""


def complex_node(node, args, back_fns, name) -> bool:
    """Called by ``Node.__init__`` for a complex array (never for a real one):
    ``tricycle.complex_tensor.adopt`` makes the node a ComplexTensor, refusing an op that is
    not complex-aware. Imported by name, here only: that module sits above this layer."""
    import importlib  # noqa: PLC0415 - the complex path only

    return importlib.import_module("tricycle.complex_tensor").adopt(node, args, back_fns, name)


def numeric_dtype(dtype, op: str = "Tensor") -> np.dtype:
    """``dtype`` as a numpy dtype of numbers (bool, int, float); anything else raises,
    naming ``op``."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{op}: {dtype!r} is not a dtype") from None
    if dtype.kind not in "biuf" and not is_float(dtype) and dtype not in _COMPLEX:
        raise TypeError(
            f"{op}: dtype must be a boolean, integer or float dtype (or complex64/128), got {dtype}"
        )
    return dtype


def move(array, device: int | None):
    """``array`` copied to GPU ``device``, or to the host for None."""
    if device is None:
        return to_host_array(array)
    return to_device_array(array, device)


def preview(data) -> str:
    text = repr(data)
    return text if len(text) <= 80 else text[:77] + "..."


def current_gpu() -> int:
    """The GPU that new GPU arrays go to, as torch's current device: cupy's current device
    once cupy is in use (``distributed.init(gpu=True)`` makes it the rank's own GPU), else 0."""
    if _cupy is None:  # cupy not loaded: nothing has chosen another device
        return 0
    return _cupy.cuda.runtime.getDevice()


def parse_device(device, op: str = "device") -> int | None:
    """The GPU index named by ``device``, or None for the CPU.

    Accepts "cpu" (and torch's "cpu:N": there is one host, whatever its index), "gpu" and
    "cuda" (the current GPU, ``current_gpu``: as torch's "cuda", each rank's own in a
    data-parallel run), "cuda:N" or "gpu:N", and an integer N (GPU N).
    """
    if isinstance(device, str):
        name, _, number = device.strip().lower().partition(":")
        if name == "cpu" and (not number or number.isdigit()):
            return None
        if name in ("cuda", "gpu"):
            if not number:
                return current_gpu()
            if number.isdigit():
                return int(number)
    elif not isinstance(device, bool):
        try:
            index = operator.index(device)
        except TypeError:
            pass
        else:
            if index >= 0:
                return index
    error = ValueError if isinstance(device, str) or checks.is_integer(device) else TypeError
    checks.fail(op, "device", "'cpu', 'gpu', 'cuda', 'cuda:N' or a GPU index >= 0", device, error)


def memory_owner(array):
    """The array that owns ``array``'s memory: itself, or the base of its views (numpy's or
    cupy's ``base``), stopping at an array (not the buffer an array was made over)."""
    while hasattr(base := getattr(array, "base", None), "dtype") and hasattr(base, "strides"):
        array = base
    return array


class device(str):
    """torch.device: a device's name, the string that ``to()``, ``map_location`` and ``device=``
    take ("cpu", "cuda", "cuda:1"; ``device("cuda", 1)`` and ``device(1)`` too), with torch's
    ``type`` and ``index``. A name ``to()`` would refuse raises here, where it is written."""

    def __new__(cls, type, index=None):  # noqa: A002 - torch's names
        kind, index = ("cuda", type) if checks.is_integer(type) and index is None else (type, index)
        if not isinstance(kind, str):
            checks.fail("device", "type", "a str ('cpu', 'cuda:1') or a GPU index", kind, TypeError)
        if index is not None and ":" in kind:
            checks.fail("device", "index", f"None: {kind!r} names its index", index)
        checks.non_negative_int("device", "index", index, optional=True)
        name = kind.strip().lower() + ("" if index is None else f":{index}")
        parse_device(name, "device")
        self = super().__new__(cls, name)
        self.type, _, number = name.partition(":")  # "cuda", ":", "1"
        self.index = int(number) if number else None
        return self

    def __repr__(self) -> str:
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"


_devices: dict[str, device] = {}  # name -> device, made once each: ``Tensor.device``'s


def device_of_array(array) -> device:
    """The ``device`` an array lives on (``Tensor.device``): device(type='cpu') or 'cuda:N'."""
    name = device_of(array)
    found = _devices.get(name)
    if found is None:
        found = _devices[name] = device(name)
    return found
