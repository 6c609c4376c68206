"""Putting examples together into a batch: ``default_collate``; an item that is a batch
already (``batch_size=None``): ``default_convert``; a rank's rows of a batch
(``batch_rows``); and the copy of a batch to a GPU through pinned host buffers
(``PinnedCopier``).

``default_collate`` mirrors the structure of one example: numpy arrays and Tensors are
stacked along a new first axis into a Tensor and numbers become one, as torch's
(``images.to(device)``, ``labels.size(0)``), tuples, lists and dicts are collated position
by position (key by key), strings (and bytes) gather into a list. So a dataset of ``(image,
label)`` pairs gives ``[images (B, ...), labels (B,)]`` (a list, as torch's: a named tuple
stays its type) and a dataset of dicts a dict of stacked tensors.
"""

import numbers
from collections import deque
from collections.abc import Mapping

import numpy as np

from tricycle import backend
from tricycle.tensor import Tensor


def default_collate(examples: list):
    """One batch from a list of examples of the same structure (see the module)."""
    if not examples:
        raise ValueError("default_collate: no examples to collate")
    first = examples[0]
    if isinstance(first, (Tensor, np.ndarray)):
        _check_alike(examples, Tensor if isinstance(first, Tensor) else np.ndarray)
        shapes = {tuple(e.shape) for e in examples}
        if len(shapes) > 1:
            raise ValueError(
                f"default_collate: cannot stack arrays of shapes {sorted(shapes)} into one "
                "batch; pad them to one shape, or pass a collate_fn"
            )
        arrays = [getattr(e, "array", e) for e in examples]  # as torch's: a tensor of them
        stacked = backend.array_module(arrays[0]).stack(arrays)
        return Tensor(stacked, requires_grad=False, is_batched=True)
    if isinstance(first, _NUMBERS):  # as torch's: a tensor (a label a dataset gives as an int)
        _check_alike(examples, _NUMBERS)
        return Tensor(np.asarray(examples), requires_grad=False, is_batched=True)
    if isinstance(first, (str, bytes)):  # as torch's: text stays a list of its items
        return list(examples)
    if isinstance(first, Mapping):
        _check_alike(examples, Mapping)
        missing = next((key for key in first for e in examples if key not in e), None)
        if missing is not None:
            raise ValueError(f"default_collate: an example has no key {missing!r}, which the "
                             "first has; each must have the same keys")  # fmt: skip
        return {key: default_collate([e[key] for e in examples]) for key in first}
    if isinstance(first, (tuple, list)):
        _check_alike(examples, (tuple, list))
        if len({len(e) for e in examples}) > 1:
            raise ValueError(
                "default_collate: examples have different lengths "
                f"{sorted({len(e) for e in examples})}; each must have the same fields"
            )
        fields = [default_collate(list(column)) for column in zip(*examples)]
        if hasattr(first, "_fields"):  # a named tuple
            return type(first)(*fields)
        return fields  # a list, as torch's (d2l's train_batch_ch13 asks isinstance(X, list))
    raise TypeError(
        f"default_collate: cannot batch examples of type {type(first).__name__}; it "
        "collates numpy arrays, Tensors, numbers, strings, tuples, lists and dicts "
        "(pass a collate_fn for anything else)"
    )


_NUMBERS = (bool, np.bool_, numbers.Number, np.number)


def _check_alike(examples: list, kind) -> None:
    """Refuse a batch whose examples are not all of the first one's ``kind``."""
    odd = next((e for e in examples if not isinstance(e, kind)), None)
    if odd is not None:
        raise TypeError(
            f"default_collate: the examples of a batch must be alike: the first is a "
            f"{type(examples[0]).__name__}, another a {type(odd).__name__} ({_short(odd)})"
        )


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def default_convert(item):
    """An item that is a batch already (``batch_size=None`` with no ``collate_fn``), as
    torch's ``default_convert`` makes it: numpy arrays and scalars become Tensors, mappings,
    named tuples, tuples and lists are rebuilt with their entries converted, and everything
    else (Tensors, Python numbers, strings) is kept; a tuple becomes a list, as torch's."""
    if isinstance(item, (np.ndarray, np.bool_, np.number)):
        return Tensor(np.asarray(item), requires_grad=False, is_batched=np.ndim(item) > 0)
    if isinstance(item, Mapping):
        converted = {key: default_convert(value) for key, value in item.items()}
        try:
            return type(item)(converted)
        except TypeError:  # a mapping that cannot be made from a dict
            return converted
    if isinstance(item, tuple) and hasattr(item, "_fields"):  # a named tuple
        return type(item)(*(default_convert(value) for value in item))
    if isinstance(item, (tuple, list)):
        return [default_convert(value) for value in item]
    return item


def batch_rows(batch, rank: int, world_size: int):
    """Rank ``rank``'s rows of every array of ``batch`` (any structure, as collated): rows
    [r n / W, (r + 1) n / W) of each array of n rows (``DataLoader(split_batches=True)``)."""
    if isinstance(batch, dict):
        return {k: batch_rows(v, rank, world_size) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        rows = [batch_rows(v, rank, world_size) for v in batch]
        return type(batch)(*rows) if hasattr(batch, "_fields") else type(batch)(rows)
    if not hasattr(batch, "shape") or not batch.shape:
        return batch
    n = batch.shape[0]
    if n % world_size:
        raise ValueError(
            f"DataLoader: split_batches: a batch of {n} rows does not split evenly over "
            f"{world_size} processes; use a batch size that is a multiple of it"
        )
    share = n // world_size
    return batch[rank * share : (rank + 1) * share]


class PinnedCopier:
    """Copies batches (any structure of numpy arrays) to GPU ``device`` as Tensors, each
    array staged in page-locked ("pinned") host memory so that the copy is asynchronous on
    the current stream (the compute that follows is ordered after it). The staging buffers
    of the last ``keep`` batches are held until their copies are done (an event each), since
    a pinned block freed early could be overwritten while the GPU still reads it.

    ``pinned=False`` copies through pageable memory (``cupy.asarray``), synchronously."""

    def __init__(self, device: int, pinned: bool = True, keep: int = 4):
        self.device, self.pinned = device, pinned
        self._in_flight: deque = deque()  # (event, staging buffers) of recent copies
        self.keep = keep

    def __call__(self, batch):
        cp = backend.cupy()
        staged: list = []
        with cp.cuda.Device(self.device):
            out = self._copy(batch, cp, staged)
            if staged:
                self._in_flight.append((cp.cuda.get_current_stream().record(), staged))
                while len(self._in_flight) > self.keep:
                    event, _ = self._in_flight.popleft()
                    event.synchronize()
        return out

    def _copy(self, value, cp, staged: list):
        if isinstance(value, Tensor):
            value = value.array
        if isinstance(value, np.ndarray):
            array = np.ascontiguousarray(value)
            if self.pinned and array.size:
                host = _pinned_empty(cp, array.shape, array.dtype)
                host[...] = array
                staged.append(host)
                device = cp.empty(array.shape, dtype=array.dtype)
                device.set(host, stream=cp.cuda.get_current_stream())
            else:
                device = cp.asarray(array)
            return Tensor(device, requires_grad=False, is_batched=True)
        if isinstance(value, Mapping):
            return {k: self._copy(v, cp, staged) for k, v in value.items()}
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(self._copy(v, cp, staged) for v in value))
        if isinstance(value, (tuple, list)):
            return type(value)(self._copy(v, cp, staged) for v in value)
        return value


def _pinned_empty(cp, shape, dtype) -> np.ndarray:
    """A numpy array in pinned host memory (CuPy's pinned memory pool)."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape)) * dtype.itemsize
    memory = cp.cuda.alloc_pinned_memory(size)
    return np.frombuffer(memory, dtype=dtype, count=int(np.prod(shape))).reshape(shape)


__all__ = ["PinnedCopier", "batch_rows", "default_collate", "default_convert"]
