"""Device tables for multi-tensor launches: one kernel over many tensors that need not share
a buffer (the AdamW step, the gradient norm, the casts of every parameter).

Block b of such a launch works on chunk b of the tensors' concatenation; it finds its tensor
and its start in two small device tables, and the tensor's address in a device array of
pointers. Both are cached: the sizes never change during training, and the memory pool tends
to hand the same addresses back step after step (then nothing is uploaded at all). While a
CUDA graph is captured the pointers go through ``capture.upload`` instead, uncached: the graph
owns them.
"""

import numpy as np

from tricycle import backend
from tricycle.backends.cuda import capture


class BlockTable:
    """Device tables for a multi-tensor launch: sizes, block -> (tensor, start), decays."""

    # elements per block: small enough for several blocks per SM at GPT-2 small sizes (much
    # larger blocks left most SMs idle: benchmarks/GPU_NOTES.md)
    chunk = 8192

    def __init__(self, cp, sizes: list[int], weight_decays: list[float] | None):
        block_tensor, block_start = [], []
        for t, size in enumerate(sizes):
            starts = range(0, size, self.chunk)
            block_tensor += [t] * len(starts)
            block_start += list(starts)
        self.n_blocks = len(block_tensor)
        self.sizes = cp.asarray(np.asarray(sizes, dtype=np.int64))
        self.block_tensor = cp.asarray(np.asarray(block_tensor, dtype=np.int32))
        self.block_start = cp.asarray(np.asarray(block_start, dtype=np.int64))
        self.decays = (
            None if weight_decays is None else cp.asarray(np.asarray(weight_decays, np.float32))
        )


_tables: dict[tuple, BlockTable] = {}
_pointer_tables: dict[tuple, object] = {}


def block_table(sizes: list[int], weight_decays: list[float] | None = None) -> BlockTable:
    """The (cached) ``BlockTable`` of tensors of these sizes on the current device."""
    cp = backend.cupy()
    key = (cp.cuda.runtime.getDevice(), tuple(sizes), weight_decays and tuple(weight_decays))
    if key not in _tables:
        if len(_tables) > 64:
            _tables.clear()
        _tables[key] = BlockTable(cp, sizes, weight_decays)
    capture.keep(_tables[key])  # a graph reads it: it outlives the cache
    return _tables[key]


def pointer_table(*arrays_lists) -> object:
    """A device int64 array of the arrays' addresses, list after list (cached by address)."""
    cp = backend.cupy()
    pointers = tuple(a.data.ptr for arrays in arrays_lists for a in arrays)
    if capture.capturing():
        return capture.upload(np.asarray(pointers, dtype=np.int64))
    key = (cp.cuda.runtime.getDevice(), pointers)
    table = _pointer_tables.get(key)
    if table is None:
        if len(_pointer_tables) > 256:
            _pointer_tables.clear()
        table = _pointer_tables[key] = cp.asarray(np.asarray(pointers, dtype=np.int64))
    return table
