"""Inverted dropout on the CPU as one pass, with the counter-based mask of
``tricycle.dropout_mask``: the same mask as ``keep_mask`` (and as the CUDA kernel) for the
same seed, never stored.

The reference (``tricycle.layers.dropout_forward``) draws a uniform number per element from
the layer's generator, compares, scales and multiplies, and keeps the mask for backward; here
one seed is drawn from that generator, and element (row, key) of x (rows, keys), rows the
flattened leading axes, is kept when::

    u = mix(mix(seed ^ mix(row)) ^ key * golden) >= round(p 2^32),   mix = lowbias32

so the backward recomputes the mask instead of reading it. y = x * m with m = 1 / (1 - p) or
0, the reference's product. Rows are independent: the result does not depend on the thread
count.
"""

import numpy as np

from tricycle import dispatch, random
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.dropout_mask import dropout_threshold

# uint64 throughout (numba makes float64 of a uint64 mixed with a signed int), masked to 32 bits
_LOW32, _GOLDEN = np.uint64(0xFFFFFFFF), np.uint64(0x9E3779B9)
_M1, _M2 = np.uint64(0x7FEB352D), np.uint64(0x846CA68B)
_S15, _S16 = np.uint64(15), np.uint64(16)


@jit
def mix32(x):
    """lowbias32 of a 32-bit value held in a uint64 (``tricycle.dropout_mask._mix32``)."""
    x ^= x >> _S16
    x = (x * _M1) & _LOW32
    x ^= x >> _S15
    x = (x * _M2) & _LOW32
    return x ^ (x >> _S16)


@parallel_jit
def dropout_kernel(x, y, seed, threshold, scale, first, last):
    """y (rows, keys) = x times the inverted-dropout mask of ``seed``: ``scale`` where the
    element's hash is at least ``threshold``, else 0; rows first..last."""
    keys = x.shape[1]
    for row in range(first, last):
        row_key = mix32(np.uint64(seed) ^ mix32(np.uint64(row) & _LOW32))
        zero = scale - scale
        for key in range(keys):
            u = mix32(row_key ^ ((np.uint64(key) * _GOLDEN) & _LOW32))
            y[row, key] = x[row, key] * (scale if u >= threshold else zero)


def _dropout(x, probability: float, seed: int):
    """x times the mask of ``seed``, as a new array of x's dtype."""
    x2 = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    y = np.empty_like(x2)
    scale = x.dtype.type(1 / (1 - probability))
    dropout_kernel(x2, y, np.uint64(seed % 2**32), np.uint64(dropout_threshold(probability)),
                   scale, x2.shape[0])  # fmt: skip
    return y.reshape(x.shape)


def dropout_forward(xp, x, probability: float, rng):
    """(y, seed) as ``tricycle.layers.dropout_forward``: the mask of a seed drawn from ``rng``
    (tricycle's generator if None), never stored; the seed is what backward needs."""
    seed = random.draw_seed() if rng is None else int(rng.integers(2**32))
    return _dropout(x, probability, seed), seed


def dropout_backward(xp, dy, probability: float, seed):
    """dx = dy times the forward's mask: the same pass with the same seed."""
    return _dropout(dy, probability, seed)


def applies(x) -> bool:
    """float32 or float64, at least one axis, and something to drop."""
    return x.ndim >= 1 and x.size > 0 and x.dtype in (np.float32, np.float64)


dispatch.add("dropout", "cpu", (dropout_forward, dropout_backward), applies=applies)
