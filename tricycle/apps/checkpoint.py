"""Checkpoint files: written atomically, verified by a checksum when read.

Three formats:

* **safe** (``save_state``/``load_state``): a nested state (dicts, lists, numbers, strings and
  arrays) as one ``.npz`` file. Every array is an uncompressed ``.npy`` member; everything
  else is one JSON document stored beside them; a SHA-256 of all the members is stored last.
  Reading executes nothing from the file: numeric arrays and JSON only. It holds a run's
  training state (and, in runs of earlier versions, its weights).
* **weights** (``save_weights``/``load_weights``): a model's ``state_dict`` as safetensors
  (``tricycle.hf_files``' writer and reader: no library needed), the format other tools read,
  with a JSON ``info`` (the step, the run's settings) in its metadata and a SHA-256 of the
  rest (tensors and info) that ``load_weights`` verifies. A run's training state records that
  digest, so weights and state written by different saves are never paired.
* **pickle** (``save_pickle``/``load_pickle``): the whole model object, for
  ``pickle.load(open("model.pkl", "rb"))`` as in the README. Loading a pickle runs code from
  the file: only open pickles you trust. ``save_pickle`` appends a SHA-256 line after the
  pickle's end (``pickle.load`` never reads it), which ``load_pickle`` verifies.

Every write goes to a temporary file in the destination folder, is flushed to disk and then
renamed over the destination, so a crash or a full disk mid-write leaves the previous file
intact. A file that is missing, truncated, corrupt (a flipped bit), crafted (an array header
claiming more bytes than the file holds, JSON nested a million deep, object arrays) or of
another format raises ``CheckpointError`` naming the path.
"""

import hashlib
import io
import json
import pickle
import zipfile
from pathlib import Path

import numpy as np

from tricycle.atomic import atomic_write
from tricycle.backend import host_snapshot, is_cupy_array, to_host_array
from tricycle.hf_files import (
    DTYPES,
    PretrainedError,
    header,
    read_safetensors,
    safetensors_layout,
    write_safetensors,
)
from tricycle.tensor import Tensor

__all__ = [
    "CheckpointError",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_text",
    "host_copy",
    "load_pickle",
    "load_state",
    "load_weights",
    "pickled",
    "save_pickle",
    "save_state",
    "save_weights",
    "weights_digest",
    "write_pickled",
]

FORMAT = "tricycle-state"
FORMAT_VERSION = 2  # 2 adds the checksum; version 1 files (no checksum) still load
_METADATA = "__metadata__.npy"
_CHECKSUM = "__checksum__.npy"
_MAX_DEPTH = 64  # nesting of the state document: real checkpoints use fewer than 10 levels
_PICKLE_TRAILER = b"\n#tricycle-sha256 "
_NUMERIC_KINDS = "biufc"


class CheckpointError(Exception):
    """A checkpoint file is missing, corrupt or not in the expected format."""


# ------------------------------------------------------------------ atomic writes
# ``atomic_write(path, mode)`` (tricycle/atomic.py) opens a temporary file beside ``path``
# and renames it over ``path`` only when the block succeeds.


def atomic_write_bytes(path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def atomic_write_text(path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


# ------------------------------------------------------------------ pickle


def pickled(obj) -> bytes:
    """``obj`` pickled (tensors pickle as host arrays, without graphs): a snapshot, for
    ``write_pickled``."""
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def write_pickled(path, data: bytes) -> None:
    """Write the pickle ``data`` to ``path`` atomically, followed by a line holding its
    SHA-256 (which ``load_pickle`` verifies)."""
    digest = hashlib.sha256(data).hexdigest().encode("ascii")
    with atomic_write(path, "wb") as f:
        f.write(data)
        f.write(_PICKLE_TRAILER + digest + b"\n")


def save_pickle(obj, path) -> None:
    """Pickle ``obj`` to ``path`` atomically, with its checksum."""
    write_pickled(path, pickled(obj))


def load_pickle(path):
    """Unpickle ``path``, verifying the checksum ``save_pickle`` wrote (a pickle written by
    ``pickle.dump`` has none and loads unverified). Runs code from the file: use only on
    files you trust."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {path}")
    data = path.read_bytes()
    cut = data.rfind(_PICKLE_TRAILER)
    if cut >= 0 and len(data) - cut == len(_PICKLE_TRAILER) + 65:  # hex digest and newline
        body, digest = data[:cut], data[cut + len(_PICKLE_TRAILER) : -1]
        if hashlib.sha256(body).hexdigest().encode("ascii") != digest:
            raise CheckpointError(
                f"{path} is corrupt: its contents do not match the checksum written with them"
            )
        data = body
    try:
        return pickle.loads(data)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError) as error:
        raise CheckpointError(
            f"{path} is not a readable pickle (truncated, corrupt or from an incompatible "
            f"version): {type(error).__name__}: {error}"
        ) from error


# ------------------------------------------------------------------ weights


_INFO, _DIGEST = "tricycle", "tricycle_sha256"  # the weights file's metadata keys


def save_weights(path, weights: dict, info: dict) -> str:
    """Write ``weights`` ({name: array}) to the safetensors file ``path`` atomically, with
    ``info`` (JSON) in its metadata; returns the digest that ``load_weights`` verifies."""
    tensors = {name: to_host_array(a.array if isinstance(a, Tensor) else a)
               for name, a in weights.items()}  # fmt: skip
    text = json.dumps(info)
    entries, arrays = safetensors_layout(tensors)
    digest = _weights_digest(text, entries, (a.reshape(-1).view(np.uint8) for a in arrays))
    with atomic_write(path, "wb") as f:
        write_safetensors(f, tensors, {"format": "pt", _INFO: text, _DIGEST: digest})
    return digest


def load_weights(path) -> tuple[dict, dict, str]:
    """(weights, info, digest) of a file written by ``save_weights``, its digest verified:
    a truncated, corrupt or foreign file is a one-line ``CheckpointError`` naming it."""
    path = Path(path)
    try:
        entries = header(path, DTYPES) if path.is_file() else None
        tensors, metadata = read_safetensors(path)
    except (PretrainedError, OSError) as error:
        raise CheckpointError(f"{path} is not readable weights: {error}") from None
    digest, text = metadata.get(_DIGEST), metadata.get(_INFO)
    if not isinstance(text, str) or not isinstance(digest, str):
        raise CheckpointError(f"{path}: safetensors without tricycle's metadata (not a run's)")
    entries.pop("__metadata__", None)
    start = min((e["start"] for e in entries.values()), default=path.stat().st_size)
    with open(path, "rb") as f:
        f.seek(start)
        found = _weights_digest(text, entries, iter(lambda: f.read(2**24), b""))
    if found != digest:
        raise CheckpointError(
            f"{path} is corrupt: its contents do not match the checksum written with them"
        )
    try:
        info = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise CheckpointError(f"{path}: unreadable metadata ({error})") from None
    if not isinstance(info, dict):
        raise CheckpointError(f"{path}: its metadata is not a JSON object")
    return tensors, info, digest


def weights_digest(path) -> str | None:
    """The digest ``save_weights`` recorded in ``path``'s header (None where there is none
    or the header is unreadable): which save the file is from, without reading it all."""
    try:
        digest = header(Path(path), DTYPES).get("__metadata__", {}).get(_DIGEST)
    except (PretrainedError, OSError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


def _weights_digest(info: str, entries: dict, data) -> str:
    """The SHA-256 of ``info``, the tensors' header ``entries`` (names, dtypes, shapes,
    offsets) and their bytes, ``data`` (chunks, in file order)."""
    described = {name: [e["dtype"], e["shape"], e["data_offsets"]] for name, e in entries.items()}
    digest = hashlib.sha256(info.encode("utf-8") + b"\0")
    digest.update(json.dumps(described, sort_keys=True).encode("utf-8") + b"\0")
    for chunk in data:
        digest.update(chunk)
    return digest.hexdigest()


# ------------------------------------------------------------------ safe format


def host_copy(state):
    """``state`` (nested dicts, lists, arrays, Tensors, numbers) with every array copied to
    host memory: a snapshot that later in-place updates of the arrays (an optimiser step)
    cannot change, to write while training goes on."""
    if isinstance(state, Tensor):
        state = state.array
    if isinstance(state, np.ndarray) or is_cupy_array(state):
        return host_snapshot(state)
    if isinstance(state, dict):
        return {k: host_copy(v) for k, v in state.items()}
    if isinstance(state, list):
        return [host_copy(v) for v in state]
    if isinstance(state, tuple):
        return tuple(host_copy(v) for v in state)
    return state


def save_state(path, state: dict) -> None:
    """Save a nested ``state`` (dict/list/tuple/str/number/bool/None/array/Tensor) safely.

    Arrays (numpy or cupy) and Tensors are stored as npz members; the rest as JSON. Tuples
    come back as lists. The file is written atomically; an error (a full disk) leaves any
    previous file at ``path`` as it was.
    """
    arrays: dict[str, np.ndarray] = {}
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "state": _flatten(state, arrays, "state"),  # arrays become {"__array__": "a<n>"}
    }
    metadata = np.frombuffer(json.dumps(document).encode("utf-8"), dtype=np.uint8)
    members = {_METADATA: metadata, **{f"{name}.npy": a for name, a in arrays.items()}}
    digest = hashlib.sha256()
    with atomic_write(path, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(members):
            member = io.BytesIO()
            np.lib.format.write_array(member, members[name], allow_pickle=False)
            data = member.getbuffer()
            _hash_member(digest, name, data)
            archive.writestr(name, data)
        checksum = np.frombuffer(digest.hexdigest().encode("ascii"), dtype=np.uint8)
        member = io.BytesIO()
        np.lib.format.write_array(member, checksum, allow_pickle=False)
        archive.writestr(_CHECKSUM, member.getbuffer())


def load_state(path) -> dict:
    """Load a file written by ``save_state``; arrays come back as numpy arrays.

    Nothing in the file is executed and nothing larger than the file is allocated: every
    member is checked (uncompressed, a numeric array whose header agrees with its size)
    before it is read, and the checksum before anything is returned.
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {path}")
    try:
        document, arrays = _read_archive(path)
    except CheckpointError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, RecursionError,
            MemoryError, UnicodeDecodeError) as error:  # fmt: skip
        raise CheckpointError(
            f"{path} is not a readable checkpoint (truncated or corrupt?): "
            f"{type(error).__name__}: {error}"
        ) from error
    return _unflatten(document["state"], arrays, path)


def _read_archive(path: Path) -> tuple[dict, dict]:
    """The state document and the arrays of ``path``, every member checked."""
    size = path.stat().st_size
    with zipfile.ZipFile(path) as archive:
        raw = {}
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or info.file_size > size:
                raise CheckpointError(
                    f"{path}: member {info.filename!r} is compressed or claims "
                    f"{info.file_size} bytes in a {size}-byte file; tricycle checkpoints are "
                    "stored uncompressed"
                )
            raw[info.filename] = archive.read(info)
    if _METADATA not in raw:
        raise CheckpointError(f"{path} is an npz file but not a tricycle checkpoint")
    checksum = raw.pop(_CHECKSUM, None)
    if checksum is not None:  # verified first: a flipped bit is reported as such
        digest = hashlib.sha256()
        for name in sorted(raw):
            _hash_member(digest, name, raw[name])
        expected = _read_array(checksum, _CHECKSUM, path).tobytes()
        if digest.hexdigest().encode("ascii") != expected:
            raise CheckpointError(
                f"{path} is corrupt: its contents do not match the checksum written with them"
            )
    # each member's bytes are dropped once its array is made: one copy in memory at a time
    members = {name: _read_array(raw.pop(name), name, path) for name in list(raw)}
    document = json.loads(members.pop(_METADATA).tobytes().decode("utf-8"))
    if not isinstance(document, dict) or "state" not in document:
        raise CheckpointError(f"{path}: the state document is not a tricycle state")
    version = document.get("version")
    if document.get("format") != FORMAT or version not in (1, FORMAT_VERSION):
        raise CheckpointError(
            f"{path}: expected format {FORMAT!r} version 1 or {FORMAT_VERSION}, got "
            f"{document.get('format')!r} version {version!r}"
        )
    if version == FORMAT_VERSION and checksum is None:
        raise CheckpointError(f"{path}: the checksum is missing")
    arrays = {name.removesuffix(".npy"): array for name, array in members.items()}
    return document, arrays


def _read_array(data: bytes, name: str, path: Path) -> np.ndarray:
    """The numeric array in one ``.npy`` member, after checking that its header is sane."""
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise CheckpointError(f"{path}: member {name!r} has .npy version {version}")
    if dtype.kind not in _NUMERIC_KINDS or dtype.hasobject:
        raise CheckpointError(f"{path}: member {name!r} has dtype {dtype}, not a numeric one")
    count = 1
    for n in shape:
        count *= n
    body = len(data) - stream.tell()
    if count * dtype.itemsize != body:
        raise CheckpointError(
            f"{path}: member {name!r} claims shape {shape} of {dtype} "
            f"({count * dtype.itemsize} bytes) but holds {body} bytes"
        )
    flat = np.frombuffer(data, dtype=dtype, count=count, offset=stream.tell()).copy()
    return flat.reshape(shape, order="F" if fortran else "C")


def _hash_member(digest, name: str, data) -> None:
    digest.update(name.encode("utf-8") + b"\0")
    digest.update(len(data).to_bytes(8, "little"))
    digest.update(data)


def _flatten(value, arrays: dict, key: str):
    """Replace arrays by {"__array__": name} references, collecting them in ``arrays``."""
    if isinstance(value, Tensor):
        value = value.array
    if isinstance(value, np.ndarray) or hasattr(value, "__cuda_array_interface__"):
        array = to_host_array(value)
        if array.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(
                f"save_state: {key} is an array of {array.dtype}; only numeric arrays "
                "(no object arrays) are safe to save"
            )
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


def _unflatten(value, arrays: dict, path, depth: int = 0):
    if depth > _MAX_DEPTH:
        raise CheckpointError(f"{path}: the state is nested more than {_MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            try:
                return arrays[value["__array__"]]
            except (KeyError, TypeError):
                raise CheckpointError(f"{path}: array {value['__array__']!r} is missing") from None
        return {k: _unflatten(v, arrays, path, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_unflatten(v, arrays, path, depth + 1) for v in value]
    return value
