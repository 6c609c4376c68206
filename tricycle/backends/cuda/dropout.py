"""Inverted dropout as one kernel (dropout.cu), with the counter-based mask of
``tricycle.dropout_mask`` (the same mask as ``keep_mask`` on any device), and the dropout
seed as every dropout kernel reads it: from device memory.

Registered for ``tricycle.layers``' "dropout": the mask is never stored, its seed is drawn
from the layer's generator through ``capture.step_seed`` (so a captured CUDA graph draws a
new one at every replay), and the backward applies the same mask again. "step_seed" gives
fused ops with a dropout of their own (attention) such a seed.
"""

import numpy as np

from tricycle import backend, dispatch, random
from tricycle.backends.cuda import capture
from tricycle.backends.cuda.launch import (
    CTYPES,
    compiled,
    contiguous,
    ctype,
    elementwise_grid,
    enabled,
)

_no_seed: dict[int, object] = {}


def seed_array(seed):
    """A dropout seed as the kernels read it: a uint32 device array holding it. ``seed``: an
    int (copied there now), such an array already (``capture.step_seed`` while a CUDA graph is
    captured: each replay refills it), or None (no dropout: a zero kept for the purpose)."""
    if backend.is_cupy_array(seed):
        return seed
    if seed is not None:
        capture.refuse("dropout", "a seed given as a number would repeat one mask at every "
                       "replay (the layers draw theirs through capture.step_seed)")  # fmt: skip
    cp = backend.cupy()
    if seed is None:
        device = cp.cuda.runtime.getDevice()
        if device not in _no_seed:
            _no_seed[device] = cp.zeros(1, dtype=np.uint32)
        return _no_seed[device]
    return cp.asarray(np.array([int(seed) % 2**32], dtype=np.uint32))


def dropout_threshold(probability: float) -> int:
    """The uint32 below which a hash drops its element: round(p * 2^32), for p in [0, 1)
    (``tricycle.dropout_mask.keep_bits``, whose constants the kernels share)."""
    if not 0 <= probability < 1:
        raise ValueError(f"dropout: probability must be in [0, 1), got {probability}")
    return min(int(round(probability * 2**32)), 2**32 - 1)


def dropout_enabled(x) -> bool:
    """``dropout`` applies: a C-contiguous cupy float array, kernels on."""
    return enabled(x) and x.flags.c_contiguous


def dropout(x, probability: float, seed):
    """x times the inverted-dropout mask of ``seed`` (``keep_mask`` with rows the flattened
    leading axes and keys the last axis), as a new array of x's dtype. ``seed`` as in
    ``seed_array``; the backward is the same call on dy with the same seed."""
    cp = backend.cupy()
    out = cp.empty_like(x)
    n = x.size
    if n == 0:
        return out
    cols = x.shape[-1] if x.ndim else 1
    threshold = dropout_threshold(probability)
    kernel = compiled("dropout.cu", "dropout_kernel", ctype(x))
    kernel(
        (elementwise_grid(n),),
        (256,),
        (x, out, np.int64(cols), np.int64(n), seed_array(seed), np.uint32(threshold),
         np.float32(1 / (1 - probability))),
    )  # fmt: skip
    return out


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    return [("dropout.cu", "dropout_kernel", (t,)) for t in CTYPES.values()]


def dropout_forward(xp, x, probability: float, rng):
    """(y, seed) as ``tricycle.layers.dropout_forward``: the mask of a seed drawn from ``rng``
    (tricycle's generator if None), never stored; the seed is what backward needs."""
    draw = random.draw_seed if rng is None else lambda: int(rng.integers(2**32))
    seed = capture.step_seed(draw)
    return dropout(x, probability, seed), seed


def dropout_backward(xp, dy, probability: float, seed):
    """dx = dy times the forward's mask: the same kernel with the same seed."""
    return dropout(contiguous(backend.cupy(), dy), probability, seed)


dispatch.add(
    "dropout",
    "cuda",
    (dropout_forward, dropout_backward),
    dtypes=tuple(CTYPES),
    applies=lambda x: x.flags.c_contiguous,
)
dispatch.add("step_seed", "cuda", capture.step_seed, dtypes=(*CTYPES, "float64"))
