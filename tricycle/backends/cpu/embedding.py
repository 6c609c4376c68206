"""The embedding's row gather and its backward scatter-add.

Kernels and the adapters registered for ``tricycle.layers``' "embedding", with the
references' signatures. The scatter-add splits the embedding's columns between threads, so
no two threads add into one element and the sums come in token order, whatever the threads.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import flat, rows
from tricycle.backends.cpu.compile import parallel_jit

_COLUMNS = 32  # columns per task of the scatter-add


@parallel_jit
def embedding_forward_kernel(out, weights, ids, first, last):
    """out[n] = weights[ids[n]] for rows n in first..last."""
    C = out.shape[1]
    for n in range(first, last):
        for i in range(C):
            out[n, i] = weights[ids[n], i]


@parallel_jit
def embedding_backward_kernel(dweights, dout, ids, first, last):
    """dweights[ids[n]] += dout[n] for every n, in order of n, in column groups first..last."""
    N, C = dout.shape
    for k in range(first, last):
        for n in range(N):
            row = ids[n]
            for i in range(k * _COLUMNS, min(C, (k + 1) * _COLUMNS)):
                dweights[row, i] += dout[n, i]


def embedding_forward(xp, weights, ids):
    """As ``tricycle.layers.embedding_forward``."""
    ids_flat = flat(ids, np.int64)
    out = np.empty((ids_flat.size, weights.shape[1]), weights.dtype)
    embedding_forward_kernel(out, rows(weights), ids_flat, ids_flat.size)
    return out.reshape(ids.shape + (weights.shape[1],))


def embedding_backward(xp, dout, ids, vocab_size, dtype):
    """As ``tricycle.layers.embedding_backward``."""
    dweights = np.zeros((vocab_size, dout.shape[-1]), dtype)
    columns = dout.shape[-1]
    embedding_backward_kernel(dweights, rows(dout, dtype), flat(ids, np.int64),
                              -(-columns // _COLUMNS))  # fmt: skip
    return dweights


dispatch.add("embedding", "cpu", (embedding_forward, embedding_backward))
