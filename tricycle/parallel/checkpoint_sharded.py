"""torch.distributed.checkpoint on tricycle's World: each rank writes its own shards, a load
at the same or another world size reads the pieces it needs::

    from tricycle.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    import tricycle.distributed.checkpoint as dcp

    model_sd, optim_sd = get_state_dict(model, optimizer)           # FlatShards under FSDP
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id="ckpt")
    ...
    model_sd, optim_sd = get_state_dict(model, optimizer)           # the layout to fill
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id="ckpt")                           # in place
    set_state_dict(model, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])

**The files** (tricycle's own layout, not torch's): ``__<rank>_0.distcp``, a numpy ``.npz``
archive of the arrays that rank wrote (its ``FlatShard`` pieces; rank 0 also the whole
arrays, which every rank holds alike), and ``.metadata``, a pickle rank 0 writes: for each
value (a path of keys into the nested state dict) its shape, dtype and the pieces that hold
it, and the values that are not arrays (a step count, the optimizer's settings). Load
unpickles ``.metadata``: load checkpoints you trust, as with ``torch.load``.

**The state dicts** follow ``torch.distributed.checkpoint.state_dict``
(``tricycle.parallel.checkpoint_state_dict``): parameters and optimizer states keyed by the
unwrapped model's names (FSDP's wrappers left out). Under FSDP a parameter or state is this
rank's ``FlatShard`` of it, or the whole array with ``StateDictOptions(full_state_dict=True)``
(an all-gather).
"""

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tricycle import backend
from tricycle.parallel import distributed
from tricycle.parallel.fsdp_units import FlatShard
from tricycle.parallel.torch_process_group import _member_of
from tricycle.tensor import Tensor

METADATA = ".metadata"


class CheckpointException(RuntimeError):
    """A checkpoint that cannot be read into the state dict given (torch's name)."""


@dataclass
class FileSystemWriter:
    """Where ``save`` writes: a directory (one file per rank). torch's other settings are
    accepted; every rank writes one file, synchronously."""

    path: str | os.PathLike
    single_file_per_rank: bool = True
    sync_files: bool = True
    thread_count: int = 1
    per_thread_copy_ahead: int = 10_000_000
    cache_staged_state_dict: bool = False
    overwrite: bool = True


@dataclass
class FileSystemReader:
    """Where ``load`` reads: a directory ``save`` wrote."""

    path: str | os.PathLike


def _world(owner: str, no_dist: bool, process_group=None):
    """The ranks a save runs over: ``process_group``'s, else the World's (None alone)."""
    if process_group is not None and not no_dist:
        world = _member_of(owner, process_group)
    else:
        world = distributed._world
    return None if no_dist or world is None or world.world_size == 1 else world


def _leaves(obj, path=()):
    """(path, container, key, leaf) of a nested state dict: dicts and lists are walked, an
    array, Tensor, FlatShard or any other value is a leaf."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _leaves(value, (*path, key))
        else:
            yield (*path, key), obj, key, value


def _directory(owner: str, checkpoint_id, storage) -> Path:
    where = storage.path if storage is not None else checkpoint_id
    if where is None:
        raise ValueError(f"{owner}: give checkpoint_id or a storage {owner[:4]}er with a path")
    return Path(where)


def save(state_dict: dict, *, checkpoint_id=None, storage_writer=None, planner=None,
         process_group=None, no_dist: bool = False, use_collectives: bool = True):  # fmt: skip
    """Write ``state_dict`` (nested dicts and lists of arrays, Tensors, ``FlatShard`` s and
    other picklable values) to the directory ``checkpoint_id``: each rank its pieces, rank 0
    the whole arrays, the other values and the index. A collective unless ``no_dist``:
    over the World, or over ``process_group`` (``new_group``'s), whose ranks write their
    files under their rank in it (its rank 0 the index)."""
    owner = "save"
    if planner is not None:
        raise NotImplementedError(f"{owner}: planner must be None")
    if not isinstance(state_dict, dict):
        raise TypeError(f"{owner}: state_dict must be a dict, got {type(state_dict).__name__}")
    directory = _directory(owner, checkpoint_id, storage_writer)
    world = _world(owner, no_dist, process_group)
    rank = 0 if world is None else world.rank
    directory.mkdir(parents=True, exist_ok=True)
    arrays, index, objects = {}, {}, {}
    for path, _, _, leaf in _leaves(state_dict):
        if isinstance(leaf, FlatShard):
            name = f"v{len(arrays)}"
            arrays[name] = np.asarray(to_host(leaf.local)).reshape(-1)
            index[path] = (
                "piece",
                leaf.shape,
                str(leaf.dtype),
                leaf.start,
                arrays[name].size,
                name,
            )
        elif isinstance(leaf, (Tensor, np.ndarray)):
            value = np.asarray(leaf.numpy() if isinstance(leaf, Tensor) else leaf)
            index[path] = ("whole", value.shape, str(value.dtype))
            if rank == 0:
                arrays[f"v{len(arrays)}"] = value
                index[path] += (f"v{len(arrays) - 1}",)
        else:
            objects[path] = leaf
    with open(directory / f"__{rank}_0.distcp", "wb") as file:
        np.savez(file, **arrays)
    indexes = [index] if world is None else world.all_gather_object(index)
    if rank == 0:
        items = {}
        for r, ranks_index in enumerate(indexes):
            for path, (kind, shape, dtype, *rest) in ranks_index.items():
                item = items.setdefault(path, {"shape": tuple(shape), "dtype": dtype, "parts": []})
                if kind == "piece":
                    start, size, name = rest
                    held = {(s, n) for _, s, n, _ in item["parts"]}  # HSDP's replicas: once
                    if (start, size) not in held:
                        item["parts"].append((r, start, size, name))
                elif rest:
                    item["parts"].append((r, 0, int(np.prod(shape)), rest[0]))
        with open(directory / METADATA, "wb") as file:
            pickle.dump({"version": 1, "items": items, "objects": objects}, file)
    if world is not None:
        world.barrier()


def to_host(array):
    """A numpy array of ``array`` (a cupy one copied to the host)."""
    return array.get() if hasattr(array, "get") else array


def load(
    state_dict: dict,
    *,
    checkpoint_id=None,
    storage_reader=None,
    planner=None,
    process_group=None,
    no_dist: bool = False,
) -> None:
    """Fill ``state_dict`` in place from the checkpoint ``checkpoint_id``: each array,
    Tensor and ``FlatShard`` (its own range, from whichever ranks' files hold it, saved at
    any world size) with the saved values, and each other value replaced by the saved one.
    Every key of ``state_dict`` must be in the checkpoint. Each rank reads the files alone:
    ``process_group`` (checked: this rank must be in it) changes nothing."""
    owner = "load"
    if planner is not None:
        raise NotImplementedError(f"{owner}: planner must be None")
    _world(owner, no_dist, process_group)
    directory = _directory(owner, checkpoint_id, storage_reader)
    if not (directory / METADATA).exists():
        raise CheckpointException(f"{owner}: {directory} holds no checkpoint ({METADATA})")
    with open(directory / METADATA, "rb") as file:
        metadata = pickle.load(file)  # noqa: S301 (a checkpoint the user trusts: see module)
    files: dict[int, object] = {}

    def part(item, lo: int, hi: int):
        """Values [lo, hi) of the flattened saved array."""
        out = np.empty(hi - lo, dtype=np.dtype(item["dtype"]))
        filled = 0
        for r, start, size, name in item["parts"]:
            a, b = max(lo, start), min(hi, start + size)
            if a < b:
                if r not in files:
                    files[r] = np.load(directory / f"__{r}_0.distcp")
                out[a - lo : b - lo] = files[r][name].reshape(-1)[a - start : b - start]
                filled += b - a
        if filled != hi - lo:
            raise CheckpointException(f"{owner}: the checkpoint misses values of {item}")
        return out

    for path, container, key, leaf in _leaves(state_dict):
        if path in metadata["objects"]:
            container[key] = metadata["objects"][path]
            continue
        item = metadata["items"].get(path)
        if item is None:
            raise CheckpointException(
                f"{owner}: missing key in checkpoint state_dict: {'.'.join(map(str, path))}"
            )
        if isinstance(leaf, FlatShard):
            if leaf.shape != item["shape"]:
                raise CheckpointException(f"{owner}: {path} is {leaf.shape}, saved {item['shape']}")
            values = part(item, leaf.start, leaf.start + leaf.local.size)
            leaf.local[...] = shaped_like(leaf.local, values.astype(leaf.dtype))
            continue
        target = leaf.array if isinstance(leaf, Tensor) else leaf
        if not hasattr(target, "shape") or tuple(target.shape) != item["shape"]:
            raise CheckpointException(
                f"{owner}: {path} is {getattr(target, 'shape', type(target).__name__)}, the "
                f"checkpoint's {item['shape']}"
            )
        values = part(item, 0, int(np.prod(item["shape"]))).reshape(item["shape"])
        target[...] = shaped_like(target, values.astype(target.dtype))
    for opened in files.values():
        opened.close()


def shaped_like(target, values):
    """``values`` on the device of ``target``."""
    return backend.cupy().asarray(values) if backend.is_cupy_array(target) else values
