"""The files of a Hugging Face model directory, read and written without running their code.

    config.json                      the architecture (read as JSON: nothing executes)
    model.safetensors                the weights: a JSON header, then raw little-endian arrays
    model-0000i-of-0000n.safetensors shards of them, with model.safetensors.index.json
                                     mapping every tensor name to its shard

Weights are read with the ``safetensors`` library, memory-mapped (its numpy framework), after
this module has checked each file's header itself: every tensor's dtype is a float one and
its bytes lie inside the file, so a truncated or corrupt file is reported with the name of the
tensor it cuts, before any array is made. numpy has no bfloat16, so BF16 tensors are widened
here, from a memory map of their bytes, to float32 (their exact value). ``pytorch_model.bin``
(a pickle, which runs code when loaded) is never opened.

The format is small enough to write and read here, without the library: an 8-byte
little-endian header length, a JSON header ({name: {"dtype", "shape", "data_offsets"}} and
an optional "__metadata__" of strings), then the tensors' raw little-endian bytes, one after
another. ``write_safetensors`` and ``read_safetensors`` are that (any float or int dtype;
BF16 is written from ``ml_dtypes.bfloat16`` arrays and read back as such, or widened to
float32 where ml_dtypes is absent); they write the exports and a run's weights.

``resolve`` turns a hub name ("gpt2", "meta-llama/...") into a local directory with
``huggingface_hub`` when it is installed and online. ``write_directory`` replaces a whole
directory at once, so a failed export never leaves a half-written one in place of a good one
(and never replaces a file, or a directory that is not a model's, such as a run's).
``safetensors`` and ``huggingface_hub`` are imported only when used (the ``hf`` extra).
"""

import contextlib
import io
import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tricycle.atomic import TEMPORARY_SUFFIX

CONFIG = "config.json"
WEIGHTS = "model.safetensors"
INDEX = "model.safetensors.index.json"
PICKLES = ("pytorch_model.bin", "pytorch_model.bin.index.json")
# The files a hub download fetches: the model and its tokeniser, never code or pickles.
HUB_FILES = [CONFIG, "*.safetensors", INDEX, "tokenizer.json", "tokenizer_config.json",
             "vocab.json", "merges.txt", "generation_config.json"]  # fmt: skip

# safetensors dtype -> numpy dtype of the float weights we accept (BF16 is widened by hand)
FLOAT_DTYPES = {"F16": np.float16, "F32": np.float32, "F64": np.float64, "BF16": None}
# safetensors dtype -> the little-endian numpy dtype of its bytes (BF16: its 16 bits)
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4",
          "I16": "<i2", "I8": "i1", "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1",
          "BOOL": "?"}  # fmt: skip
_CODES = {np.dtype(d): code for code, d in DTYPES.items() if code not in ("BF16",)}
_MAX_HEADER = 100 * 2**20  # the library's own limit on the JSON header
_SHARD = re.compile(r"model(-\d+-of-\d+)?\.safetensors")  # a model's weights, whole or a shard


class PretrainedError(ValueError):
    """A pretrained model's file is missing, corrupt, or describes what tricycle cannot build."""


def resolve(name_or_dir) -> Path:
    """A local model directory: ``name_or_dir`` itself if it is a directory, else a hub repo
    id fetched (model and tokeniser files only) into huggingface_hub's cache. What cannot be
    a repo id (a file, or a path: absolute, from "." or "~", or of three parts) is reported
    as the missing directory it is, never looked up."""
    path = Path(name_or_dir).expanduser()
    if path.is_dir():
        return path
    name = str(name_or_dir)
    if path.exists() or path.is_absolute() or name.startswith((".", "~")) or name.count("/") > 1:
        what = "not a directory" if path.exists() else "no such directory"  # not a hub name
        shown = path if name.startswith("~") else name
        raise PretrainedError(f"{shown}: {what}; a model directory holds config.json and "
                              "model.safetensors")  # fmt: skip
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise PretrainedError(
            f"{name!r} is not a directory, and huggingface_hub (pip install 'tricycle-dl[hf]') "
            "is not installed to download it: pass a local directory holding config.json and "
            "model.safetensors"
        ) from None
    try:
        return Path(snapshot_download(name, allow_patterns=HUB_FILES))
    except Exception as error:  # offline, no such repo, gated repo: all say the same
        raise PretrainedError(
            f"could not download {name!r} from the Hugging Face hub ({type(error).__name__}: "
            f"{str(error).splitlines()[0] if str(error) else ''}); offline, pass a local "
            "directory holding config.json and model.safetensors"
        ) from None


def read_json(path: Path) -> dict:
    """A JSON object from ``path``, or a one-line error naming the file."""
    if not path.is_file():
        raise PretrainedError(f"{path}: no such file")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise PretrainedError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(value, dict):
        raise PretrainedError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def weight_files(directory: Path) -> dict[str, Path]:
    """{tensor name: the safetensors file holding it}, from the index of a sharded model or
    the header of ``model.safetensors``; a directory with only pickles is refused."""
    if (directory / INDEX).is_file():
        weight_map = read_json(directory / INDEX).get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise PretrainedError(f"{directory / INDEX}: no 'weight_map' of tensor -> file")
        files = {name: directory / file for name, file in weight_map.items()}
        for file in set(files.values()):
            if not file.is_file():
                raise PretrainedError(f"{directory / INDEX}: names {file.name}, which is missing")
        return files
    if (directory / WEIGHTS).is_file():
        names = set(header(directory / WEIGHTS)) - {"__metadata__"}
        return dict.fromkeys(sorted(names), directory / WEIGHTS)
    pickles = [name for name in PICKLES if (directory / name).is_file()]
    if pickles:
        raise PretrainedError(
            f"{directory / pickles[0]}: only a pickle checkpoint here; tricycle never unpickles "
            "downloaded files (a pickle runs code): convert it to model.safetensors"
        )
    raise PretrainedError(f"{directory}: no {WEIGHTS} (or {INDEX})")


def header(path: Path, dtypes=FLOAT_DTYPES) -> dict[str, dict]:
    """{tensor name: {"dtype", "shape", "data_offsets"}} of a safetensors file, after checking
    that every tensor is of one of ``dtypes`` (float weights unless told) and its bytes lie
    within the file: a truncated file names the tensor. "__metadata__" is left in if given."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        prefix = f.read(8)
        if len(prefix) < 8:
            raise PretrainedError(f"{path}: truncated: {size} bytes, not a safetensors file")
        (length,) = struct.unpack("<Q", prefix)
        if length > min(_MAX_HEADER, size - 8):
            raise PretrainedError(
                f"{path}: truncated or not a safetensors file: its header claims {length} bytes "
                f"of a {size}-byte file"
            )
        try:
            entries = json.loads(f.read(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise PretrainedError(f"{path}: corrupt safetensors header ({error})") from None
    data = size - 8 - length
    if not isinstance(entries, dict):
        raise PretrainedError(f"{path}: corrupt safetensors header (not a JSON object)")
    metadata = entries.pop("__metadata__", None)
    for name, entry in entries.items():
        try:
            dtype, shape, (_, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise PretrainedError(f"{path}: corrupt safetensors header at {name!r}") from None
        if dtype not in dtypes:
            kind = "a float weight" if dtypes is FLOAT_DTYPES else "one of"
            raise PretrainedError(
                f"{path}: tensor {name!r} has dtype {dtype}; expected {kind} ({', '.join(dtypes)})"
            )
        if end > data:
            raise PretrainedError(
                f"{path}: truncated: tensor {name!r} {tuple(shape)} needs bytes up to {end} of "
                f"the data, which holds {data}"
            )
        entry["start"] = 8 + length  # where the data begins in the file
    if isinstance(metadata, dict):
        entries["__metadata__"] = metadata
    return entries


class Reader:
    """Tensors by name from a set of safetensors files, memory-mapped; close with ``close``
    (or use as a context manager). ``read(name)`` gives a float array of the file's dtype
    (BF16 widened to float32). The safetensors package reads them where it is installed (it
    also checks the layout); without it, this module maps each tensor's bytes itself."""

    def __init__(self, files: dict[str, Path]):
        try:
            from safetensors import safe_open
        except ImportError:
            safe_open = None
        self.files = files
        self.headers = {path: header(path) for path in set(files.values())}
        for name, path in files.items():  # a stale or edited index: each name where it says
            if name not in self.headers[path]:
                raise PretrainedError(
                    f"{path}: holds no tensor {name!r}, which {INDEX} places in it"
                )
        self._stack = contextlib.ExitStack()
        self._open = {}  # path -> the package's handle; none without the package
        if safe_open is None:
            return
        for path in self.headers:
            try:
                self._open[path] = self._stack.enter_context(safe_open(path, framework="numpy"))
            except Exception as error:  # the library's SafetensorError: a corrupt layout
                self.close()
                message = f"{path}: not a readable safetensors file ({error})"
                raise PretrainedError(message) from None

    def read(self, name: str) -> np.ndarray:
        path = self.files[name]
        entry = self.headers[path][name]
        if entry["dtype"] == "BF16":
            return _bfloat16(path, entry)
        if path not in self._open:  # no safetensors package: a copy in memory, as it gives
            raw = _raw(path, entry)
            return raw.astype(raw.dtype.newbyteorder("="))
        return self._open[path].get_tensor(name)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _bfloat16(path: Path, entry: dict) -> np.ndarray:
    """A BF16 tensor as float32: its 16 bits are the top half of a float32's."""
    return widen_bfloat16(_raw(path, entry))


def widen_bfloat16(bits: np.ndarray) -> np.ndarray:
    """BF16 values given as their 16 bits (uint16) as float32: the same values, exactly."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _raw(path: Path, entry: dict) -> np.ndarray:
    """The bytes of one tensor of ``header(path)``, memory-mapped, as its DTYPES dtype."""
    start, end = entry["data_offsets"]
    dtype = np.dtype(DTYPES[entry["dtype"]])
    count = int(np.prod(entry["shape"], dtype=np.int64))
    if end - start != count * dtype.itemsize:
        raise PretrainedError(
            f"{path}: tensor of shape {tuple(entry['shape'])} and dtype {entry['dtype']} "
            f"claims {end - start} bytes, not {count * dtype.itemsize}"
        )
    if count == 0:
        return np.zeros(entry["shape"], dtype)
    raw = np.memmap(path, dtype=dtype, mode="r", offset=entry["start"] + start, shape=(count,))
    return raw.reshape(entry["shape"])


def read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """({name: array}, metadata) of a safetensors file, read by this module (no library):
    every dtype of DTYPES, native-endian copies; BF16 as ``ml_dtypes.bfloat16`` where it is
    installed, else widened to float32. A truncated or corrupt file is a ``PretrainedError``
    naming it (and the tensor)."""
    path = Path(path)
    if not path.is_file():
        raise PretrainedError(f"{path}: no such file")
    entries = header(path, DTYPES)
    metadata = entries.pop("__metadata__", {})
    tensors = {}
    for name, entry in entries.items():
        try:
            raw = _raw(path, entry)
        except (TypeError, ValueError) as error:
            raise PretrainedError(f"{path}: corrupt safetensors entry {name!r} ({error})") from None
        if entry["dtype"] == "BF16":
            tensors[name] = _from_bits(raw)
        else:
            tensors[name] = raw.astype(raw.dtype.newbyteorder("="))  # a copy, in memory
    return tensors, metadata


def _from_bits(bits: np.ndarray) -> np.ndarray:
    try:
        import ml_dtypes
    except ImportError:
        return widen_bfloat16(bits)
    return np.array(bits).view(ml_dtypes.bfloat16)


def safetensors_layout(tensors: dict[str, np.ndarray]) -> tuple[dict, list[np.ndarray]]:
    """The header entries ({name: {"dtype", "shape", "data_offsets"}}, in name order) of
    ``tensors`` as safetensors stores them, and their arrays as stored (little-endian,
    contiguous, BF16 as its bits), in that order."""
    arrays, entries, offset = [], {}, 0
    for name in sorted(tensors):
        array = np.asarray(tensors[name])
        if array.dtype.name == "bfloat16":  # ml_dtypes: stored as its bits
            code, array = "BF16", array.view(np.uint16)
        elif array.dtype.newbyteorder("<") in _CODES:
            code = _CODES[array.dtype.newbyteorder("<")]
        else:
            raise PretrainedError(f"safetensors: tensor {name!r} has dtype {array.dtype}, "
                                  "which the format cannot store")  # fmt: skip
        arrays.append(np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")))
        end = offset + arrays[-1].nbytes
        entries[name] = {"dtype": code, "shape": list(array.shape), "data_offsets": [offset, end]}
        offset = end
    return entries, arrays


def write_safetensors(f, tensors: dict[str, np.ndarray], metadata: dict | None = None) -> None:
    """Write ``tensors`` ({name: numpy array}) to the binary file ``f`` as safetensors
    (``safetensors_layout``), with ``metadata`` ({str: str}) as the header's "__metadata__"."""
    entries, arrays = safetensors_layout(tensors)
    if metadata:
        entries = {"__metadata__": {str(k): str(v) for k, v in metadata.items()}, **entries}
    text = json.dumps(entries, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data 8-byte aligned, as the library writes it
    f.write(struct.pack("<Q", len(text)) + text)
    for array in arrays:
        f.write(array.data if array.size else b"")


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    """The safetensors file of ``tensors`` (marked "pt", as transformers expects)."""
    buffer = io.BytesIO()
    write_safetensors(buffer, tensors, {"format": "pt"})
    return buffer.getvalue()


def write_directory(directory, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp)`` to fill a fresh temporary directory beside ``directory``, then put
    it in ``directory``'s place: the old directory is renamed aside, the new one renamed in,
    the old one's other files (a tokeniser, a README) moved across and the rest deleted. A
    failure while writing leaves ``directory`` as it was. Only a model directory is replaced:
    a file, or a directory whose config.json is not a model's (a tricycle run's), is refused
    untouched."""
    directory = Path(directory)
    _check_replaceable(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.",
                                suffix=TEMPORARY_SUFFIX))  # fmt: skip
    try:
        write(tmp)
        for file in tmp.iterdir():  # the contents on disk before the rename makes them visible
            with open(file, "rb") as f:
                os.fsync(f.fileno())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.chmod(tmp, 0o777 & ~_umask())
    if not directory.exists():
        os.replace(tmp, directory)
        return
    old = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}.old.",
                                suffix=TEMPORARY_SUFFIX))  # fmt: skip
    os.replace(directory, old / directory.name)
    os.replace(tmp, directory)
    stale = {CONFIG, INDEX, *PICKLES}  # the old model's files; its weights are _SHARD's
    for file in (old / directory.name).iterdir():
        mine = file.name in stale or _SHARD.fullmatch(file.name)
        if not (directory / file.name).exists() and not mine:
            os.replace(file, directory / file.name)
    shutil.rmtree(old, ignore_errors=True)


def _check_replaceable(directory: Path) -> None:
    """A ``PretrainedError`` unless ``directory`` is absent or a directory that an export may
    replace: empty, or a model's (its config.json, if any, names a model_type)."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise PretrainedError(f"{directory}: not a directory; save the model into a directory")
    config = directory / CONFIG
    if config.exists():
        try:
            is_model = "model_type" in json.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, TypeError):
            is_model = False
        if not is_model:
            raise PretrainedError(
                f"{directory}: its config.json is not a Hugging Face model's (a tricycle run "
                "directory?); an export would replace it: save the model into another directory"
            )


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask
