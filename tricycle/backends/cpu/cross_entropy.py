"""Cross-entropy over the vocabulary fused with its softmax: one read of the logits forward,
one read and one write backward, no other array of the logits' size.

Kernels and the adapters registered for ``tricycle.loss``' "cross_entropy", with the
references' signatures and saved statistics (peak, log_sum, count).
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import flat, rows
from tricycle.backends.cpu.compile import parallel_jit
from tricycle.backends.cpu.maths import exp
from tricycle.backends.cpu.softmax import exp_sum, row_max


@parallel_jit
def crossentropy_forward(logits, labels, losses, peak, log_sum, ignore, has_ignore, first, last):
    """Per row of logits (N, C): peak = max, log_sum = log(sum(exp(row - peak))),
    loss = log_sum - (row[label] - peak), 0 for an ignored label. (The logits come first:
    the first argument's size decides whether the rows are worth threads.) Rows first..last."""
    for n in range(first, last):
        top = row_max(logits, n)
        peak[n] = top
        log_sum[n] = np.log(exp_sum(logits, n, top))
        if has_ignore and labels[n] == ignore:
            losses[n] = 0.0
        else:
            losses[n] = log_sum[n] - (logits[n, labels[n]] - top)


@parallel_jit
def crossentropy_backward(dlogits, logits, labels, peak, log_sum, weight, first, last):
    """dlogits = weight * (softmax - onehot) per row, softmax = exp(row - peak) / exp(log_sum)
    (peak + log_sum would round away the digits of a huge row's small differences): rows
    first..last."""
    C = logits.shape[1]
    for n in range(first, last):
        scale = weight[n] * np.exp(-log_sum[n])
        for i in range(C):
            dlogits[n, i] = exp(logits[n, i] - peak[n]) * scale
        if weight[n] != 0:
            dlogits[n, labels[n]] -= weight[n]


def _labels(labels):
    return flat(labels, np.int64)


def cross_entropy_forward(xp, logits, labels, ignore_index=None):
    """As ``tricycle.loss.cross_entropy_forward``: (loss, (peak, log_sum, count))."""
    logits2 = rows(logits)  # (N, C)
    n = logits2.shape[0]
    labels = _labels(labels)
    losses, peak, log_sum = (np.empty(n, logits.dtype) for _ in range(3))
    has_ignore = ignore_index is not None
    ignore = ignore_index if has_ignore else 0
    crossentropy_forward(logits2, labels, losses, peak, log_sum, ignore, has_ignore, n)
    count = np.asarray(n if not has_ignore else (labels != ignore).sum(), logits.dtype)
    loss = np.asarray(losses.sum() / max(count, 1.0), logits.dtype)
    return loss, (peak, log_sum, count)


def cross_entropy_backward(xp, dloss, logits, labels, saved, ignore_index=None):
    """As ``tricycle.loss.cross_entropy_backward``."""
    peak, log_sum, count = saved
    logits2 = rows(logits)
    labels = _labels(labels)
    weight = np.full(labels.size, dloss / max(count, 1.0), logits.dtype)  # (N,)
    if ignore_index is not None:
        weight[labels == ignore_index] = 0
    dlogits = np.empty_like(logits2)
    crossentropy_backward(dlogits, logits2, labels, flat(peak), flat(log_sum), weight,
                          labels.size)  # fmt: skip
    return dlogits.reshape(logits.shape)


dispatch.add("cross_entropy", "cpu", (cross_entropy_forward, cross_entropy_backward))
