"""The embedding's row gather and its backward scatter-add.

Kernels and the adapters registered for ``tricycle.layers``' "embedding", with the
references' signatures. The scatter-add splits the embedding's columns between threads, so
no two threads add into one element and the sums come in token order, whatever the threads.
"""

import numpy as np
from numba import prange

from tricycle import dispatch
from tricycle.backends.cpu.arrays import flat, rows
from tricycle.backends.cpu.compile import parallel_jit

_COLUMNS = 32  # columns per task of the scatter-add


@parallel_jit
def embedding_forward_kernel(out, weights, ids):
    """out[n] = weights[ids[n]]."""
    N, C = out.shape
    for n in prange(N):
        for i in range(C):
            out[n, i] = weights[ids[n], i]


@parallel_jit
def embedding_backward_kernel(dweights, dout, ids):
    """dweights[ids[n]] += dout[n] for every n, in order of n."""
    N, C = dout.shape
    for k in prange((C + _COLUMNS - 1) // _COLUMNS):
        for n in range(N):
            row = ids[n]
            for i in range(k * _COLUMNS, min(C, (k + 1) * _COLUMNS)):
                dweights[row, i] += dout[n, i]


def embedding_forward(xp, weights, ids):
    """As ``tricycle.layers.embedding_forward``."""
    ids_flat = flat(ids, np.int64)
    out = np.empty((ids_flat.size, weights.shape[1]), weights.dtype)
    embedding_forward_kernel(out, rows(weights), ids_flat)
    return out.reshape(ids.shape + (weights.shape[1],))


def embedding_backward(xp, dout, ids, vocab_size, dtype):
    """As ``tricycle.layers.embedding_backward``."""
    dweights = np.zeros((vocab_size, dout.shape[-1]), dtype)
    embedding_backward_kernel(dweights, rows(dout, dtype), flat(ids, np.int64))
    return dweights


dispatch.add("embedding", "cpu", (embedding_forward, embedding_backward))
