"""More loss functions ("criteria", in PyTorch's word), called as tricycle's are:
``loss_fn(y_true, y_pred)``. ``tricycle.loss`` re-exports them beside CrossEntropy,
MeanSquaredError and BinaryCrossEntropy.

- ``BCEWithLogits``: binary cross-entropy from logits, with ``pos_weight``;
- ``NLL``: negative log-likelihood of log-probabilities, with ``ignore_index``;
- ``L1``, ``SmoothL1`` (``beta``) and ``Huber`` (``delta``): distances of regression;
- ``KLDiv``: the Kullback-Leibler divergence of log-probabilities from a target;
- ``CosineEmbedding``: pull pairs of vectors together or push them apart (``margin``).

PyTorch's functions take (input, target), that is (y_pred, y_true): the order is reversed
here, as everywhere in tricycle. Each loss computes one loss per element (per row for NLL and
CosineEmbedding) and the derivative of that loss with respect to each input, then reduces
with ``reduction``: "mean" (the default), "sum" or "none" (the losses themselves). The
gradient of the reduction is the output gradient, divided by the count for "mean", times
each element's own derivative. Float targets get gradients too, as in PyTorch.
"""

import numpy as np

from tricycle import checks
from tricycle.backend import check_same_device
from tricycle.binary import constant
from tricycle.loss_reduction import (  # noqa: F401 (re-exported: first defined here)
    REDUCTIONS,
    _elementwise,
    _pair,
    check_class_labels,
    labels_and_mask,
    reduced,
    weight_argument,
    weight_for,
)
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.unary import sigmoid_forward

__all__ = ["NLL", "BCEWithLogits", "CosineEmbedding", "Huber", "KLDiv", "L1", "SmoothL1"]

# ====================================================================== regression


def l1_forward(xp, diff):
    """(|d|, sign(d))"""
    return xp.abs(diff), xp.sign(diff)


class L1:
    """|y_pred - y_true| reduced, as ``torch.nn.L1Loss``; the slope at 0 is 0."""

    @checks.arguments(reduction=checks.one_of(REDUCTIONS))
    def __init__(self, reduction: str = "mean"):
        self.reduction = reduction

    def __call__(self, y_true, y_pred) -> Tensor:
        return _elementwise("L1", "l1", y_true, y_pred, self.reduction, l1_forward)


def smooth_l1_forward(xp, diff, beta: float):
    """(losses, slopes) of the smooth L1 loss: 0.5 d^2 / beta where |d| < beta, else
    |d| - 0.5 beta (a parabola that meets the line |d| smoothly); L1 for beta = 0."""
    size = xp.abs(diff)
    if beta == 0:
        return size, xp.sign(diff)
    near = size < beta
    losses = xp.where(near, 0.5 * diff * diff / beta, size - 0.5 * beta)
    return losses, xp.where(near, diff / beta, xp.sign(diff))


class SmoothL1:
    """The smooth L1 loss reduced, as ``torch.nn.SmoothL1Loss(beta=...)``: quadratic for
    |y_pred - y_true| < beta, linear beyond (``smooth_l1_forward``)."""

    @checks.arguments(beta=checks.non_negative, reduction=checks.one_of(REDUCTIONS))
    def __init__(self, beta: float = 1.0, reduction: str = "mean"):
        self.beta, self.reduction = beta, reduction

    def __call__(self, y_true, y_pred) -> Tensor:
        beta = self.beta
        return _elementwise(
            "SmoothL1",
            "smooth_l1",
            y_true,
            y_pred,
            self.reduction,
            lambda xp, d: smooth_l1_forward(xp, d, beta),
        )


class Huber:
    """The Huber loss reduced, as ``torch.nn.HuberLoss(delta=...)``: 0.5 d^2 where
    |d| <= delta, else delta (|d| - 0.5 delta). It is delta times the smooth L1 loss with
    beta = delta."""

    @checks.arguments(delta=checks.positive, reduction=checks.one_of(REDUCTIONS))
    def __init__(self, delta: float = 1.0, reduction: str = "mean"):
        self.delta, self.reduction = delta, reduction

    def __call__(self, y_true, y_pred) -> Tensor:
        delta = self.delta

        def forward(xp, diff):
            losses, slopes = smooth_l1_forward(xp, diff, delta)
            return losses * delta, slopes * delta

        return _elementwise("Huber", "huber", y_true, y_pred, self.reduction, forward)


# ====================================================================== classification


class BCEWithLogits:
    """Binary cross-entropy from logits z, as ``torch.nn.BCEWithLogitsLoss``:
    l = -(p y log s(z) + (1 - y) log(1 - s(z))), with s the sigmoid, targets y in [0, 1]
    and ``pos_weight`` p (default 1; a number or an array that broadcasts against the
    logits, e.g. one weight per class on the last axis) weighing the positive term.

    Computed stably with softplus(z) = log(1 + e^z) = max(z, 0) + log(1 + e^-|z|):
    -log s(z) = softplus(z) - z and -log(1 - s(z)) = softplus(z), so
    l = (1 - y) softplus(z) + p y (softplus(z) - z), dl/dz = (1 - y) s(z) - p y (1 - s(z)),
    dl/dy = p (softplus(z) - z) - softplus(z).
    """

    @checks.arguments(reduction=checks.one_of(REDUCTIONS))
    def __init__(self, pos_weight=None, reduction: str = "mean"):
        expected = "None, a number or an array of weights (one per class)"
        pos_weight = weight_argument("BCEWithLogits", "pos_weight", pos_weight, expected)
        self.pos_weight, self.reduction = pos_weight, reduction

    def __call__(self, y_true, y_pred) -> Tensor:
        y_true, y_pred, xp = _pair("BCEWithLogits", y_true, y_pred)
        z = y_pred.array
        y = y_true.array.astype(z.dtype, copy=False)
        p = weight_for("BCEWithLogits", "pos_weight", self.pos_weight, xp, z,
                       f" (e.g. one weight per class: ({z.shape[-1]},))")  # fmt: skip
        softplus = xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))  # -log(1 - s(z))
        softplus_negated = softplus - z  # -log s(z)
        py = y if p is None else p * y
        losses = (1 - y) * softplus + py * softplus_negated
        sigmoid = sigmoid_forward(xp, z)
        dz = (1 - y) * sigmoid - py * (1 - sigmoid)
        dy = softplus_negated - softplus if p is None else p * softplus_negated - softplus
        return reduced(
            "bce_with_logits",
            losses,
            self.reduction,
            (y_pred, y_true),
            # (``p`` kept as a default: the second derivative reads it)
            (lambda dl, p=p: dl * dz, lambda dl: dl * dy),
        )


class NLL:
    """The negative log-likelihood of integer labels under log-probabilities, as
    ``torch.nn.NLLLoss``: the loss of a label y is -log_probs[..., y].

    ``y_true`` holds class ids of any shape (...), ``y_pred`` log-probabilities (..., C),
    the classes on the last axis as for tricycle's CrossEntropy (PyTorch puts them on axis
    1; the two agree for (N, C)). Labels equal to ``ignore_index`` (PyTorch's default is
    -100, tricycle's None) have loss 0 and do not count in the mean; if every label is
    ignored the mean is 0, with a zero gradient. ``NLL()(y, LogSoftmax()(z))`` is
    ``CrossEntropy()(y, z)``.
    """

    @checks.arguments(
        ignore_index=checks.optional(checks.integer), reduction=checks.one_of(REDUCTIONS)
    )
    def __init__(self, ignore_index: int | None = None, reduction: str = "mean"):
        self.ignore_index, self.reduction = ignore_index, reduction

    def __call__(self, y_true, y_pred) -> Tensor:
        y_pred = as_tensor(y_pred)
        labels = y_true.array if isinstance(y_true, Tensor) else y_pred.xp.asarray(y_true)
        xp = check_same_device("NLL", labels, y_pred.array)
        check_class_labels("NLL", "log-probabilities", labels, y_pred, self.ignore_index, "of")
        n_classes = y_pred.shape[-1]
        log_probs = y_pred.array.reshape(-1, n_classes)  # (N, C)
        safe, kept = labels_and_mask(xp, labels, self.ignore_index)  # (N,)
        rows = xp.arange(safe.size)
        valid = (
            xp.ones(safe.shape, log_probs.dtype) if kept is None else kept.astype(log_probs.dtype)
        )
        losses = -log_probs[rows, safe] * valid  # (N,)

        def d_log_probs(dl):  # -dl at each label, 0 elsewhere and on ignored rows
            grad = xp.zeros_like(log_probs)
            grad[rows, safe] = -(xp.broadcast_to(dl, labels.shape).reshape(-1) * valid)
            return grad.reshape(y_pred.shape)

        count = None if self.ignore_index is None else valid.sum()
        return reduced(
            "nll",
            losses.reshape(labels.shape),
            self.reduction,
            (y_pred,),
            (d_log_probs,),
            count=count,
        )


# ====================================================================== distributions


class KLDiv:
    """The Kullback-Leibler divergence KL(target || q) from log-probabilities log q
    (``y_pred``) to a target distribution (``y_true``: probabilities, or log-probabilities
    with ``log_target``), as ``torch.nn.KLDivLoss``. Each element contributes
    t (log t - log q) (0 where t = 0).

    ``reduction="batchmean"`` (the sum divided by the batch size, axis 0) is the divergence
    averaged over examples; "mean" (PyTorch's default, kept) divides by every element.
    Gradients: d/dlog q = -t; d/dt = log t + 1 - log q (taken as 0 where t = 0, where the
    derivative of t log t is unbounded; PyTorch gives NaN there).
    """

    @checks.arguments(
        reduction=checks.one_of(REDUCTIONS + ("batchmean",)), log_target=checks.boolean
    )
    def __init__(self, reduction: str = "mean", log_target: bool = False):
        self.reduction, self.log_target = reduction, log_target

    def __call__(self, y_true, y_pred) -> Tensor:
        y_true, y_pred, xp = _pair("KLDiv", y_true, y_pred)
        log_q, t = y_pred.array, y_true.array.astype(y_pred.dtype, copy=False)
        if self.log_target:  # t is log p
            p = xp.exp(t)
            losses = p * (t - log_q)
            d_log_q, d_target = -p, losses + p
        else:
            positive = t > 0
            log_t = xp.log(xp.where(positive, t, 1))  # 0 where t = 0: t log t -> 0
            losses = t * (log_t - log_q)
            d_log_q, d_target = -t, xp.where(positive, log_t + 1 - log_q, 0)
        reduction, count = self.reduction, None
        if reduction == "batchmean":
            reduction, count = "mean", log_q.shape[0] if log_q.ndim else 1
        return reduced(
            "kl_div",
            losses,
            reduction,
            (y_pred, y_true),
            # (``log_target`` kept as a default: the second derivative reads it)
            (lambda dl, log_target=self.log_target: dl * d_log_q, lambda dl: dl * d_target),
            count=count,
        )


# ====================================================================== embeddings


class CosineEmbedding:
    """Pull pairs of vectors together (label 1) or push them apart (label -1), as
    ``torch.nn.CosineEmbeddingLoss``: called as ``loss_fn(y_true, x1, x2)`` with labels y
    (N,) of 1 or -1 and vectors x1, x2 (N, D) (or (), (D,) and (D,)), with
    cos = x1.x2 / sqrt((|x1|^2 + eps)(|x2|^2 + eps)), eps = 1e-12 as PyTorch:
    the loss of a pair is 1 - cos for y = 1 and max(0, cos - margin) for y = -1.

    Writing a = |x1|^2 + eps, b = |x2|^2 + eps: dcos/dx1 = x2 / sqrt(ab) - cos x1 / a, and
    symmetrically for x2.
    """

    EPS = 1e-12

    @checks.arguments(margin=checks.interval(-1, 1), reduction=checks.one_of(REDUCTIONS))
    def __init__(self, margin: float = 0.0, reduction: str = "mean"):
        self.margin, self.reduction = margin, reduction

    def __call__(self, y_true, x1, x2) -> Tensor:
        x1, x2 = as_tensor(x1), constant(x2, as_tensor(x1))
        labels = y_true.array if isinstance(y_true, Tensor) else x1.xp.asarray(y_true)
        xp = check_same_device("CosineEmbedding", labels, x1.array, x2.array)
        self._check(xp, labels, x1, x2)
        u, v = x1.array, x2.array.astype(x1.dtype, copy=False)  # (N, D)
        a = xp.einsum("...d,...d->...", u, u) + self.EPS  # (N,)
        b = xp.einsum("...d,...d->...", v, v) + self.EPS
        rsqrt = 1 / xp.sqrt(a * b)
        cos = xp.einsum("...d,...d->...", u, v) * rsqrt  # (N,)
        similar = labels == 1
        losses = xp.where(similar, 1 - cos, xp.maximum(cos - self.margin, 0))
        dcos = xp.where(similar, -1.0, cos > self.margin).astype(cos.dtype)  # dloss/dcos

        def d_x1(dl):
            g = (dl * dcos)[..., None]  # (N, 1)
            return g * (v * rsqrt[..., None] - (cos / a)[..., None] * u)

        def d_x2(dl):
            g = (dl * dcos)[..., None]
            return g * (u * rsqrt[..., None] - (cos / b)[..., None] * v)

        return reduced("cosine_embedding", losses, self.reduction, (x1, x2), (d_x1, d_x2))

    def _check(self, xp, labels, x1: Tensor, x2: Tensor) -> None:
        check_float("CosineEmbedding (x1)", x1)
        if x1.shape != x2.shape or x1.ndim not in (1, 2) or labels.shape != x1.shape[:-1]:
            raise ValueError(
                f"CosineEmbedding: expected labels (N,) and vectors x1, x2 (N, D) (or (), (D,) "
                f"and (D,)), got labels {labels.shape}, x1 {x1.shape} and x2 {x2.shape}"
            )
        if x1.size == 0:
            raise ValueError("CosineEmbedding: empty input")
        if xp is np and not np.isin(labels, (1, -1)).all():  # a GPU is not made to wait
            bad = np.unique(labels[~np.isin(labels, (1, -1))])[:6].tolist()
            raise ValueError(f"CosineEmbedding: labels must be 1 or -1, got {bad}")
