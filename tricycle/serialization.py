"""``tricycle.save`` and ``tricycle.load``: what a PyTorch script does with ``torch.save`` and
``torch.load``::

    tricycle.save(model.state_dict(), "model.pt")
    model.load_state_dict(tricycle.load("model.pt"))
    tricycle.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                   "step": step}, "checkpoint.pt")

The file is a pickle of ``obj`` with every array in host memory: a GPU (cupy) array is copied
to the host as it is written, and a Tensor stays a Tensor, pickled as ``Tensor`` pickles itself
(its data on the host, ``requires_grad`` and name; no graph, no gradient), so what loads is
what was saved, as with torch (a state dict of arrays gives arrays, a dict of tensors
tensors). A path is written atomically (``tricycle.atomic``): a crash leaves the old file or
the new one, never half of one. A file object is written where it stands.

``load(f, weights_only=True)``, torch's default, unpickles with an allow-list: containers
(dict, list, tuple, set, ``OrderedDict``), numbers, strings, bytes, None, numpy arrays, dtypes
and scalars, and tricycle's ``Tensor`` and ``Parameter``: what state dicts, optimizer states
and checkpoints hold (and the state of a numpy Generator, which a ``Dropout`` keeps). Any
other global (a class, a function such as ``os.system``) is refused before it is imported,
naming it. As torch's, ``add_safe_globals([...])`` or, for one block, ``with
safe_globals([...]):`` allows the classes and functions listed, so a whole pickled model loads
with ``weights_only=True`` once its classes are listed (pytorch/examples' word_language_model
lists them). The list holds the objects themselves, each allowed under the module and name it
pickles under (``tricycle.nn.modules.rnn.LSTM`` is ``tricycle.nn.recurrent.LSTM``).
``weights_only=False`` is plain pickle and runs whatever code the file names: only for files
you trust. A file that ``torch.save`` wrote holds torch tensors: it is refused with a
message saying how to convert it, never half-read.

``map_location`` None or "cpu" keeps the arrays in host memory; "cuda", "cuda:N" or "gpu"
copies every array and tensor loaded (and the parameters of a layer loaded whole) to that GPU
(``tricycle.backend``).

``get_unsafe_globals_in_checkpoint(f)`` lists, without loading it, the globals of a file
that ``weights_only=True`` would refuse ("module.name"), read from its pickle's opcodes as
torch's reads them. torch.serialization's other names (``skip_data``, the load endianness and
mmap settings, ``register_package``, ``location_tag``, ``default_restore_location``,
``DEFAULT_PROTOCOL``, ``SourceChangeWarning``) are ``tricycle.serialization_more``'s.
"""

import copy
import io
import os
import pickle
import pickletools
import zipfile

import numpy as np

from tricycle import backend, checks
from tricycle.atomic import atomic_write
from tricycle.serialization_more import (  # noqa: F401 - torch.serialization's names, here
    DEFAULT_PROTOCOL,
    LoadEndianness,
    SourceChangeWarning,
    default_restore_location,
    get_default_load_endianness,
    get_default_mmap_options,
    location_tag,
    register_package,
    set_default_load_endianness,
    set_default_mmap_options,
    skip_data,
    skipping,
)
from tricycle.tensor import Tensor

# The first object of a file that torch.save wrote in its legacy (non-zip) format
_TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C

# module -> the names in it that weights_only=True loads: what arrays and state dicts pickle to
_ALLOWED = {
    "builtins": {"bytearray", "bytes", "complex", "frozenset", "set", "slice"},
    "collections": {"OrderedDict"},
    "_codecs": {"encode"},  # how protocol 2 writes bytes
    "numpy": {"dtype", "ndarray"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},  # numpy >= 2
    "numpy.core.multiarray": {"_reconstruct", "scalar"},  # numpy < 2
    "numpy._core.numeric": {"_frombuffer"},  # protocol 5's arrays
    "numpy.core.numeric": {"_frombuffer"},
    "ml_dtypes": {"bfloat16"},
    "tricycle.tensor": {"Tensor"},
    "tricycle.module": {"Parameter"},  # where files saved before tricycle.parameter name it
    "tricycle.parameter": {"Parameter"},
    # a numpy Generator (a Dropout's): its constructors build only numpy's bit generators
    "numpy.random._pickle": {"__generator_ctor", "__bit_generator_ctor"},
    "numpy.random._pcg64": {"PCG64", "PCG64DXSM"},
    "numpy.random._mt19937": {"MT19937"},
    "numpy.random._philox": {"Philox"},
    "numpy.random._sfc64": {"SFC64"},
    "numpy.random.bit_generator": {"SeedSequence", "__pyx_unpickle_SeedSequence"},
}

# (module, name) -> object: what add_safe_globals allowed beside _ALLOWED, for every thread
_SAFE_GLOBALS: dict[tuple[str, str], object] = {}


class LoadError(pickle.UnpicklingError, ValueError):
    """A file that ``tricycle.load`` refuses: a global that ``weights_only`` does not allow,
    or a file ``torch.save`` wrote."""


# ---------------------------------------------------------------------------- save
class _HostPickler(pickle.Pickler):
    """A pickler that writes GPU arrays as host numpy arrays."""

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol)
        self.protocol = protocol  # pickle's own Pickler does not say which it writes

    def reducer_override(self, obj):
        if skipping() and (isinstance(obj, np.ndarray) or backend.is_cupy_array(obj)):
            return np.zeros(obj.shape, obj.dtype).__reduce_ex__(self.protocol)  # skip_data
        if backend.is_cupy_array(obj):
            return backend.to_host_array(obj).__reduce_ex__(self.protocol)
        return NotImplemented


def save(obj, f, pickle_protocol: int = pickle.HIGHEST_PROTOCOL) -> None:
    """torch.save: pickle ``obj`` to ``f`` (a path, ``os.PathLike`` or a binary file object),
    its arrays in host memory; a path is written atomically."""
    if isinstance(f, str | os.PathLike):
        with atomic_write(f, "wb") as file:
            _HostPickler(file, pickle_protocol).dump(obj)
    elif callable(getattr(f, "write", None)):
        _HostPickler(f, pickle_protocol).dump(obj)
    else:
        raise TypeError(f"save: f must be a path or a binary file object, got {f!r}")


# ---------------------------------------------------------------------------- safe globals
def _pickled_name(entry) -> tuple[str, str]:
    """(module, qualified name) that pickle writes for an entry of a safe-globals list: an
    object, or (object, "module.name") naming it as torch's lists may."""
    owner = "add_safe_globals"
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str) or "." not in entry[1]:
            checks.fail(owner, "an entry", '(object, "module.name")', entry, TypeError)
        module, _, name = entry[1].rpartition(".")
        return module, name
    module, name = getattr(entry, "__module__", None), getattr(entry, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        checks.fail(owner, "an entry", "a class or function (or an (object, name) pair)",
                    entry, TypeError)  # fmt: skip
    return module, name


def add_safe_globals(safe_globals: list) -> None:
    """torch.serialization.add_safe_globals: let ``load(weights_only=True)`` load the listed
    classes and functions too, in every thread, until ``clear_safe_globals()``."""
    if not isinstance(safe_globals, list | tuple):
        checks.fail("add_safe_globals", "safe_globals", "a list", safe_globals, TypeError)
    names = [_pickled_name(entry) for entry in safe_globals]  # every entry checked first
    for name, entry in zip(names, safe_globals):
        _SAFE_GLOBALS[name] = entry[0] if isinstance(entry, tuple) else entry


def get_safe_globals() -> list:
    """torch.serialization.get_safe_globals: what ``add_safe_globals`` allowed."""
    return list(_SAFE_GLOBALS.values())


def clear_safe_globals() -> None:
    """torch.serialization.clear_safe_globals: forget what ``add_safe_globals`` allowed."""
    _SAFE_GLOBALS.clear()


class safe_globals:  # noqa: N801 - torch's name
    """torch.serialization.safe_globals: ``add_safe_globals(globals)`` for a ``with`` block;
    what was allowed before the block is allowed again after it, and nothing more."""

    def __init__(self, safe_globals: list):
        for entry in safe_globals:
            _pickled_name(entry)  # a bad entry raises here, where it is written
        self.safe_globals, self.before = list(safe_globals), {}

    def __enter__(self):
        self.before = dict(_SAFE_GLOBALS)
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc) -> None:
        _SAFE_GLOBALS.clear()
        _SAFE_GLOBALS.update(self.before)


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """torch.serialization.get_unsafe_globals_in_checkpoint: the globals ("module.name") of
    the file ``save`` wrote to ``f`` that ``load(weights_only=True)`` refuses: neither of its
    allow-list nor of ``add_safe_globals``, read from the pickle's opcodes without loading."""
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as file:
            data = file.read()
    elif callable(getattr(f, "read", None)):
        data = f.read()
    else:
        raise TypeError(f"get_unsafe_globals_in_checkpoint: f must be a path or a binary file "
                        f"object, got {f!r}")  # fmt: skip
    if data[:4] == b"PK\x03\x04":
        raise ValueError("get_unsafe_globals_in_checkpoint: expected a file tricycle.save "
                         "wrote (a pickle), got a zip archive (torch.save's format?)")  # fmt: skip
    unsafe = []
    for module, name in _globals(data):
        module = "builtins" if module == "__builtin__" else module
        dtype_class = module == "numpy.dtypes" and name.endswith("DType")
        allowed = dtype_class or name in _ALLOWED.get(module, ()) or (module, name) in _SAFE_GLOBALS
        if not allowed and f"{module}.{name}" not in unsafe:
            unsafe.append(f"{module}.{name}")
    return unsafe


def _globals(data: bytes) -> list[tuple[str, str]]:
    """The (module, name) pairs a pickle's GLOBAL and STACK_GLOBAL opcodes name: the latter's
    from the two strings pushed before it, directly or from the memo."""
    found, strings, memo, top = [], [], {}, None  # top: the string on the stack's top
    for opcode, arg, _ in pickletools.genops(data):
        name, pushed = opcode.name, None
        if name == "GLOBAL":
            found.append(tuple(arg.split(" ", 1)))
        elif name == "STACK_GLOBAL" and len(strings) >= 2:
            found.append((strings[-2], strings[-1]))
        elif "UNICODE" in name or "STRING" in name:
            pushed = arg
        elif name in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
            memo[len(memo) if name == "MEMOIZE" else arg] = top
            pushed = top  # a memo write leaves the stack as it is
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            pushed = memo.get(arg)
        if isinstance(pushed, str) and name not in ("MEMOIZE", "PUT", "BINPUT", "LONG_BINPUT"):
            strings.append(pushed)
        top = pushed if isinstance(pushed, str) else None
    return found


# ---------------------------------------------------------------------------- load
class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that loads only the globals of ``_ALLOWED`` and of ``add_safe_globals``."""

    def __init__(self, file, name: str):
        super().__init__(file)
        self.name = name

    def find_class(self, module, name):
        module = "builtins" if module == "__builtin__" else module  # protocol 2's name
        dtype_class = module == "numpy.dtypes" and name.endswith("DType")  # numpy >= 1.25's
        if dtype_class or name in _ALLOWED.get(module, ()):
            return super().find_class(module, name)
        if (module, name) in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[module, name]
        raise LoadError(
            f"load: {self.name} holds the global {module}.{name}, which weights_only=True does "
            "not load (it loads containers, numbers, strings, numpy arrays and tricycle "
            "Tensors: what state dicts hold). If you trust it, list it in "
            "tricycle.serialization.safe_globals([...]) (or add_safe_globals), or load the "
            "file with weights_only=False: that runs the code the file names."
        )


def load(f, map_location=None, weights_only: bool = True):
    """torch.load: the object ``save`` wrote to ``f`` (a path, ``os.PathLike`` or a binary
    file object), with its arrays in host memory or on the GPU ``map_location`` names. With
    ``weights_only`` (the default) only the data of state dicts loads (see the module's doc)."""
    if not isinstance(weights_only, bool):
        raise TypeError(f"load: weights_only must be True or False, got {weights_only!r}")
    device = _device(map_location)
    if device is not None and not backend.cupy_available():  # before reading the file
        raise RuntimeError(
            f"load: map_location={map_location!r} names a GPU, but no CUDA GPU is available "
            "(cupy is not installed or sees no device); load with map_location='cpu'"
        )
    if isinstance(f, str | os.PathLike):
        with open(f, "rb") as file:
            obj = _load(file, os.fspath(f), weights_only)
    elif callable(getattr(f, "read", None)):
        obj = _load(f, getattr(f, "name", "the file object"), weights_only)
    else:
        raise TypeError(f"load: f must be a path or a binary file object, got {f!r}")
    if skipping():
        obj = _zeroed(obj, {})
    return obj if device is None else _to_device(obj, device, {})


def _device(map_location) -> int | None:
    """The GPU index ``map_location`` names, or None for the host."""
    if map_location is None:
        return None
    if callable(map_location) or isinstance(map_location, dict):
        raise TypeError(
            f"load: map_location must be None, 'cpu', 'cuda' or 'cuda:N', got {map_location!r} "
            "(tricycle takes no function or dict of devices)"
        )
    if not isinstance(map_location, str | int):
        map_location = str(map_location)  # a torch.device prints as "cpu" or "cuda:0"
    return backend.parse_device(map_location, "load: map_location")


def _load(file, name: str, weights_only: bool):
    if not file.seekable():  # the first bytes are read twice: from memory
        file = io.BytesIO(file.read())
    start = file.tell()
    head = file.read(4)
    file.seek(start)
    if head == b"PK\x03\x04":
        _refuse_zip(file, name)
    unpickler = _WeightsUnpickler(file, name) if weights_only else pickle.Unpickler(file)
    try:
        obj = unpickler.load()
    except LoadError:
        raise
    except (EOFError, pickle.UnpicklingError) as error:  # cut short, or not a pickle at all
        raise LoadError(f"load: {name} is not a complete file of tricycle.save (cut short, "
                        f"or another format): {error}") from None  # fmt: skip
    if type(obj) is int and obj == _TORCH_LEGACY_MAGIC:
        raise LoadError(f"load: {name} is a PyTorch file (torch.save's legacy format); "
                        f"{_CONVERT}")  # fmt: skip
    return obj


_CONVERT = (
    "tricycle.load reads what tricycle.save wrote. Load it with torch and convert its tensors "
    "to numpy arrays, e.g. state = {k: v.numpy() for k, v in torch.load(f).items()}; "
    "for a Hugging Face model use tricycle.pretrained."
)


def _refuse_zip(file, name: str):
    """A zip archive is not a pickle: say whose it is."""
    try:
        entries = zipfile.ZipFile(file).namelist()
    except zipfile.BadZipFile:
        entries = []
    if any(entry.endswith("data.pkl") for entry in entries):
        raise LoadError(f"load: {name} is a PyTorch checkpoint (torch.save's zip format) "
                        f"holding torch tensors; {_CONVERT}")  # fmt: skip
    raise LoadError(f"load: {name} is a zip archive (a numpy .npz?), not a file that "
                    "tricycle.save wrote; read a .npz with numpy.load")  # fmt: skip


def _zeroed(obj, done: dict):
    """``obj`` with every array (a Tensor's in place) replaced by zeros: ``load`` within
    ``skip_data``; containers rebuilt, an object met twice zeroed once."""
    if id(obj) in done:
        return done[id(obj)]
    if isinstance(obj, np.ndarray):
        zeroed = np.zeros_like(obj)
    elif isinstance(obj, Tensor):
        obj.array, zeroed = np.zeros_like(obj.array), obj
    elif isinstance(obj, dict):
        zeroed = copy.copy(obj)
        zeroed.update((k, _zeroed(v, done)) for k, v in obj.items())
    elif type(obj) in (list, tuple):
        zeroed = type(obj)(_zeroed(v, done) for v in obj)
    else:
        zeroed = obj
    done[id(obj)] = zeroed
    return zeroed


def _to_device(obj, device: int, done: dict):
    """``obj`` with every array and tensor in it on GPU ``device``: containers are rebuilt,
    tensors and layers (anything with ``to_gpu``) moved in place; an object met twice is
    moved once and stays shared."""
    if id(obj) in done:
        return done[id(obj)]
    if isinstance(obj, np.ndarray):
        moved = backend.to_device_array(obj, device)
    elif isinstance(obj, Tensor) or (
        not isinstance(obj, type) and callable(getattr(obj, "to_gpu", None))
    ):
        moved = obj.to_gpu(device)
    elif isinstance(obj, dict):
        moved = copy.copy(obj)  # its own type (an OrderedDict stays one)
        moved.update((k, _to_device(v, device, done)) for k, v in obj.items())
    elif type(obj) in (list, tuple):
        moved = type(obj)(_to_device(v, device, done) for v in obj)
    else:
        moved = obj
    done[id(obj)] = moved
    return moved
