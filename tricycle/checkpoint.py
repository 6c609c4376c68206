"""Checkpoint files, written atomically.

Two formats:

* **pickle** (``save_pickle``/``load_pickle``): the whole model object, for
  ``pickle.load(open("model.pkl", "rb"))`` and ``python inference.py model.pkl``. Loading a
  pickle runs code from the file: only open pickles you trust.
* **safe** (``save_state``/``load_state``): a nested state (dicts, lists, numbers, strings and
  arrays) as one ``.npz`` file: every array is an npz member and everything else is a JSON
  document stored as bytes beside them. Loading uses ``allow_pickle=False``, so a file can
  never execute code, and object arrays are refused.

Every write goes to a temporary file in the destination folder, is flushed to disk and then
renamed over the destination (``os.replace``), so a crash mid-write leaves the previous file
intact. Unreadable or truncated files raise ``CheckpointError`` naming the path.
"""

import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np

from tricycle.backend import to_host_array
from tricycle.files import atomic_write
from tricycle.tensor import Tensor

__all__ = [
    "CheckpointError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "load_pickle",
    "load_state",
    "save_pickle",
    "save_state",
]

FORMAT = "tricycle-state"
FORMAT_VERSION = 1
_METADATA_KEY = "__metadata__"


class CheckpointError(Exception):
    """A checkpoint file is missing, corrupt or not in the expected format."""


# ------------------------------------------------------------------ atomic writes
# ``atomic_write(path, mode)`` (tricycle/files.py) opens a temporary file beside ``path``
# and renames it over ``path`` only when the block succeeds.


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


# ------------------------------------------------------------------ pickle


def save_pickle(obj, path) -> None:
    """Pickle ``obj`` to ``path`` atomically (tensors pickle as host arrays, without graphs)."""
    atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def load_pickle(path):
    """Unpickle ``path``. Runs code from the file: use only on files you trust."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {path}")
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as error:
        raise CheckpointError(
            f"{path} is not a readable pickle (truncated, corrupt or from an incompatible "
            f"version): {type(error).__name__}: {error}"
        ) from error


# ------------------------------------------------------------------ safe format


def save_state(path, state: dict) -> None:
    """Save a nested ``state`` (dict/list/tuple/str/number/bool/None/array/Tensor) safely.

    Arrays (numpy or cupy) and Tensors are stored as npz members; the rest as JSON. Tuples
    come back as lists.
    """
    arrays: dict[str, np.ndarray] = {}
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "state": _flatten(state, arrays, "state"),  # arrays become {"__array__": "a<n>"}
    }
    buffer = io.BytesIO()
    metadata = np.frombuffer(json.dumps(document).encode("utf-8"), dtype=np.uint8)
    np.savez(buffer, **{_METADATA_KEY: metadata}, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def load_state(path) -> dict:
    """Load a file written by ``save_state``; arrays come back as numpy arrays."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {path}")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if _METADATA_KEY not in npz.files:
                raise CheckpointError(f"{path} is an npz file but not a tricycle checkpoint")
            document = json.loads(npz[_METADATA_KEY].tobytes().decode("utf-8"))
            arrays = {name: npz[name] for name in npz.files if name != _METADATA_KEY}
    except CheckpointError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        raise CheckpointError(
            f"{path} is not a readable checkpoint (truncated or corrupt?): "
            f"{type(error).__name__}: {error}"
        ) from error
    if document.get("format") != FORMAT or document.get("version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{path}: expected format {FORMAT!r} version {FORMAT_VERSION}, got "
            f"{document.get('format')!r} version {document.get('version')!r}"
        )
    return _unflatten(document["state"], arrays, path)


def _flatten(value, arrays: dict, key: str):
    """Replace arrays by {"__array__": name} references, collecting them in ``arrays``."""
    if isinstance(value, Tensor):
        value = value.array
    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        array = to_host_array(value)
        if array.dtype == object:
            raise TypeError(f"save_state: {key} is an object array, which is not safe to save")
        name = f"a{len(arrays)}"  # npz member names stay simple, whatever the keys are
        arrays[name] = array
        return {"__array__": name}
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):
                raise TypeError(f"save_state: {key} has a non-string key {k!r}")
        return {k: _flatten(v, arrays, f"{key}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_flatten(v, arrays, f"{key}.{i}") for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"save_state: {key} has type {type(value).__name__}, which cannot be saved")


def _unflatten(value, arrays: dict, path):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            try:
                return arrays[value["__array__"]]
            except KeyError:
                raise CheckpointError(f"{path}: array {value['__array__']!r} is missing") from None
        return {k: _unflatten(v, arrays, path) for k, v in value.items()}
    if isinstance(value, list):
        return [_unflatten(v, arrays, path) for v in value]
    return value
