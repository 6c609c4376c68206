"""Loss functions, called as ``loss_fn(y_true, y_pred)``: CrossEntropy, MeanSquaredError,
BinaryCrossEntropy. Each returns a scalar Tensor, the mean over examples.

Cross-entropy is fused with its softmax: ``cross_entropy_forward`` makes one pass over the
logits with the log-sum-exp trick and keeps only the per-row log-sum-exp;
``cross_entropy_backward`` turns it into (softmax - onehot) / N without ever storing the
softmax in the forward. Both are array functions written once against ``xp``, the reference
formulas; ``CrossEntropy`` asks ``tricycle.dispatch`` once for a backend's kernels.
"""

from tricycle import checks, dispatch
from tricycle.backend import check_same_device
from tricycle.binary import constant
from tricycle.criteria import (  # the rest of the catalogue, re-exported: see __all__
    L1,
    NLL,
    BCEWithLogits,
    CosineEmbedding,
    Huber,
    KLDiv,
    SmoothL1,
)
from tricycle.loss_reduction import _check_same_shape, check_class_labels, labels_and_mask
from tricycle.tensor import Tensor, as_tensor
from tricycle.unary import sigmoid_forward

__all__ = [
    "L1",
    "NLL",
    "BCEWithLogits",
    "BinaryCrossEntropy",
    "CosineEmbedding",
    "CrossEntropy",
    "Huber",
    "KLDiv",
    "MeanSquaredError",
    "SmoothL1",
    "cross_entropy_backward",
    "cross_entropy_forward",
]


def cross_entropy_forward(xp, logits, labels, ignore_index=None):
    """Mean over counted rows of logsumexp(logits) - logits[label].

    Args:
        logits: (..., C) floats; labels: (...) integers in [0, C) or ``ignore_index``.
    Returns:
        (loss, saved): loss a 0-d array of the logits' dtype; saved = (peak, log_sum, count)
        with peak (N,) the max of each row, log_sum (N,) = log(sum(exp(row - peak))) (so the
        log-sum-exp is peak + log_sum, kept apart to stay precise for huge logits) and count
        (0-d) the number of counted rows. If every row is ignored the loss is 0, and so is
        the gradient.
    """
    logits2 = logits.reshape(-1, logits.shape[-1])  # (N, C)
    n = logits2.shape[0]
    safe, valid = labels_and_mask(xp, labels, ignore_index)
    peak = logits2.max(axis=-1)  # (N,): subtracted so that exp never overflows
    log_sum = xp.log(xp.exp(logits2 - peak[:, None]).sum(axis=-1))  # (N,)
    losses = log_sum - (logits2[xp.arange(n), safe] - peak)  # (N,)
    if valid is None:
        count = xp.asarray(n, dtype=logits.dtype)
    else:
        losses *= valid
        count = valid.sum(dtype=logits.dtype)
    loss = losses.sum() / xp.maximum(count, 1.0)
    return loss, (peak, log_sum, count)


def cross_entropy_backward(xp, dloss, logits, labels, saved, ignore_index=None):
    """dlogits = dloss * (softmax(logits) - onehot(labels)) / count, zero on ignored rows.

    The softmax is exp(logits - peak) * exp(-log_sum), from the forward's per-row statistics
    (peak + log_sum would round away the digits of a huge row's small differences).
    """
    peak, log_sum, count = saved
    logits2 = logits.reshape(-1, logits.shape[-1])  # (N, C)
    safe, valid = labels_and_mask(xp, labels, ignore_index)
    scale = dloss / xp.maximum(count, 1.0)  # 0-d
    weight = xp.broadcast_to(scale, peak.shape) if valid is None else valid * scale  # (N,)
    dlogits = xp.exp(logits2 - peak[:, None]) * (weight * xp.exp(-log_sum))[:, None]
    dlogits[xp.arange(logits2.shape[0]), safe] -= weight
    return dlogits.astype(logits.dtype, copy=False).reshape(logits.shape)


def _predictions(value) -> Tensor:
    """``y_pred`` as a Tensor: given as numbers or an array, it needs no gradient."""
    return as_tensor(value)


class CrossEntropy:
    """Cross-entropy between integer labels and logits: ``loss_fn(y_true, y_pred)``.

    ``y_true`` holds class ids of any shape (...); ``y_pred`` the unnormalised logits
    (..., C). The loss is the mean over labels that are not ``ignore_index``, as
    ``torch.nn.functional.cross_entropy``. If every label is ignored the loss is 0 with a
    zero gradient. Float labels raise TypeError; labels outside [0, C) raise IndexError: at
    once on the CPU, on a GPU at the next read-back (``tricycle.ranges``), so that the host
    never waits for the device here.
    """

    @checks.arguments(ignore_index=checks.optional(checks.integer))
    def __init__(self, ignore_index: int | None = None):
        self.ignore_index = ignore_index

    def __call__(self, y_true, y_pred: Tensor) -> Tensor:
        y_pred = _predictions(y_pred)
        labels = y_true.array if isinstance(y_true, Tensor) else y_pred.xp.asarray(y_true)
        xp = check_same_device("CrossEntropy", labels, y_pred.array)
        check_class_labels("CrossEntropy", "logits", labels, y_pred, self.ignore_index, "with")
        ignore_index, logits = self.ignore_index, y_pred.array
        forward, backward = dispatch.choose(
            "cross_entropy", (cross_entropy_forward, cross_entropy_backward), logits
        )
        loss, saved = forward(xp, logits, labels, ignore_index)
        return Tensor(
            loss,
            args=(y_pred,),
            back_fns=(lambda dloss: backward(xp, dloss, logits, labels, saved, ignore_index),),
            name="cross_entropy",
        )


class MeanSquaredError:
    """mean((y_pred - y_true)^2) over every element; shapes must match."""

    def __call__(self, y_true, y_pred: Tensor) -> Tensor:
        y_pred = _predictions(y_pred)
        y_true = constant(y_true, y_pred)
        xp = _check_same_shape("MeanSquaredError", y_true, y_pred, "y_pred")
        target = y_true.array.astype(y_pred.dtype, copy=False)
        diff = (y_pred.array - target).reshape(-1)  # (N,)
        n = diff.size
        loss = xp.asarray(xp.dot(diff, diff) / n)

        def d_pred(dloss):
            return (diff * (dloss * (2.0 / n))).reshape(y_pred.shape)

        return Tensor(
            loss,
            args=(y_pred, y_true),
            back_fns=(d_pred, lambda dloss: -d_pred(dloss)),
            name="mean_squared_error",
        )


class BinaryCrossEntropy:
    """Binary cross-entropy from logits: mean of -y log s(z) - (1 - y) log(1 - s(z)).

    ``y_true`` holds targets in [0, 1] (bool, int or float), ``y_pred`` the logits z of the
    same shape. Computed stably as max(z, 0) - z y + log(1 + exp(-|z|)).
    """

    def __call__(self, y_true, y_pred: Tensor) -> Tensor:
        y_pred = _predictions(y_pred)
        y_true = constant(y_true, y_pred)
        xp = _check_same_shape("BinaryCrossEntropy", y_true, y_pred, "logits")
        z = y_pred.array
        y = y_true.array.astype(z.dtype, copy=False)
        n = z.size
        losses = xp.maximum(z, 0.0) - z * y + xp.log1p(xp.exp(-xp.abs(z)))
        loss = losses.sum() / n

        def d_logits(dloss):  # (sigmoid(z) - y) / n
            return (sigmoid_forward(xp, z) - y) * (dloss / n)

        return Tensor(
            loss,
            args=(y_pred, y_true),
            back_fns=(d_logits, lambda dloss: z * (-dloss / n)),
            name="binary_cross_entropy",
        )
