"""Cross-entropy fused with its softmax (cross_entropy.cu), as ``tricycle.loss``'s
``cross_entropy_forward`` and ``cross_entropy_backward``.

The logits are read in their own dtype (16-bit logits need no float32 copy) and every
statistic is float32: the forward makes one pass and saves only (peak, log_sum, count); the
backward writes dlogits in one more pass, in the logits' dtype.
"""

import numpy as np

from tricycle import backend, dispatch
from tricycle.backends.cuda.launch import (
    CTYPES,
    LABEL_CTYPES,
    KernelSaved,
    aligned4,
    compiled,
    contiguous,
    ctype,
    flag,
    flat_labels,
    row_launch,
    rows_of,
)


def cross_entropy_forward(xp, logits, labels, ignore_index=None):
    """(loss, (peak, log_sum, count)) as ``tricycle.loss.cross_entropy_forward``.

    One pass over the logits; loss, peak (N,), log_sum (N,) and count are float32 whatever
    the logits' dtype. A label outside [0, C) (and not ignored) makes the loss NaN instead of
    raising: checking on the host would need a synchronisation (the CrossEntropy op records
    the labels' range on the device, and ``deferred.py`` raises at the next read-back).
    """
    cp = backend.cupy()
    logits = contiguous(cp, logits)
    rows, cols = rows_of(logits)
    labels, label_ctype = flat_labels(cp, labels)
    if labels.size != rows:
        raise ValueError(f"cross_entropy: {labels.size} labels for {rows} rows of logits")
    peak = cp.empty(rows, dtype=np.float32)
    log_sum = cp.empty(rows, dtype=np.float32)
    row_loss = cp.empty(rows, dtype=np.float32)
    loss = cp.empty((), dtype=np.float32)
    count = cp.empty((), dtype=np.float32)
    has_ignore = np.int32(ignore_index is not None)
    ignore = np.int64(0 if ignore_index is None else ignore_index)
    if rows:
        warp, grid, block = row_launch(rows, cols)
        vec = flag(cols % 4 == 0 and aligned4(logits))
        forward = compiled(
            "cross_entropy.cu", "ce_forward_kernel", ctype(logits), label_ctype, flag(warp), vec
        )
        forward(
            (grid,),
            (block,),
            (logits, labels, peak, log_sum, row_loss, np.int32(rows), np.int32(cols), ignore,
             has_ignore),
        )  # fmt: skip
    reduce = compiled("cross_entropy.cu", "ce_reduce_kernel", label_ctype)
    reduce((1,), (1024,), (row_loss, labels, np.int32(rows), ignore, has_ignore, loss, count))
    return loss, KernelSaved((peak, log_sum, count))


def cross_entropy_backward(xp, dloss, logits, labels, saved, ignore_index=None):
    """dlogits = dloss * (softmax - onehot) / count, zero on ignored rows, in one pass (as
    ``tricycle.loss.cross_entropy_backward``). dloss may be a device scalar: no sync."""
    cp = backend.cupy()
    peak, log_sum, count = saved
    shape = logits.shape
    logits = contiguous(cp, logits)
    rows, cols = rows_of(logits)
    labels, label_ctype = flat_labels(cp, labels)
    peak = contiguous(cp, peak, np.float32)
    log_sum = contiguous(cp, log_sum, np.float32)
    count = contiguous(cp, cp.asarray(count), np.float32)
    dloss = contiguous(cp, cp.asarray(dloss), np.float32)
    dlogits = cp.empty_like(logits)
    if rows:
        warp, grid, block = row_launch(rows, cols)
        vec = flag(cols % 4 == 0 and aligned4(logits, dlogits))
        kernel = compiled(
            "cross_entropy.cu", "ce_backward_kernel", ctype(logits), label_ctype, flag(warp), vec
        )
        kernel(
            (grid,),
            (block,),
            (logits, labels, peak, log_sum, dloss, count, dlogits, np.int32(rows),
             np.int32(cols), np.int64(0 if ignore_index is None else ignore_index),
             np.int32(ignore_index is not None)),
        )  # fmt: skip
    return dlogits.reshape(shape)


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel this module may launch."""
    out = [
        ("cross_entropy.cu", f"ce_{part}_kernel", (t, lab, w, vec))
        for t in CTYPES.values()
        for lab in LABEL_CTYPES.values()
        for w in ("true", "false")
        for vec in ("true", "false")
        for part in ("forward", "backward")
    ]
    return out + [("cross_entropy.cu", "ce_reduce_kernel", (lab,)) for lab in LABEL_CTYPES.values()]


dispatch.add(
    "cross_entropy", "cuda", (cross_entropy_forward, cross_entropy_backward), dtypes=tuple(CTYPES)
)
