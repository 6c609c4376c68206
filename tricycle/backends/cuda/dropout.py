"""Inverted dropout as one kernel (dropout.cu), with the counter-based mask of
``tricycle.dropout_mask`` (the same mask as ``keep_mask`` on any device), and the dropout
seed as every dropout kernel reads it: from device memory."""

import numpy as np

from tricycle import backend
from tricycle.backends.cuda import capture
from tricycle.backends.cuda.launch import CTYPES, compiled, ctype, elementwise_grid, enabled
from tricycle.dropout_mask import dropout_threshold

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
