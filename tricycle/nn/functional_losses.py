"""The losses of ``torch.nn.functional`` with torch's signatures (re-exported by
``tricycle.nn.functional``): ``cross_entropy(input, target, weight=None, ignore_index=-100,
reduction="mean", label_smoothing=0.0)`` and the rest, each over tricycle's criterion of the
same loss (``tricycle.loss``, ``tricycle.criteria``, ``tricycle.nn.more_losses``), called in
torch's order, (input, target), where tricycle's criteria take (y_true, y_pred).

Torch's positional order puts the deprecated ``size_average`` and ``reduce`` where these have
nothing: every argument after ``target`` (after ``weight``, where torch puts it third) is taken
by name, so an old call that passes them by position is a TypeError, never another loss.
By name they are taken as torch takes them, with its deprecation warning: ``nll_loss(out, y,
size_average=False)`` is ``reduction="sum"`` (``cross_entropy``, ``nll_loss``, ``mse_loss``,
``l1_loss`` and the binary cross-entropies).

Classes: torch puts them on axis 1 of an input (N, C, d1, ...), tricycle's criteria on the
last axis; ``cross_entropy`` and ``nll_loss`` move axis 1 last (a permutation; (N, C) and an
unbatched (C,) stay as they are). What a criterion lacks is composed of tensor ops over its
per-element losses (reduction "none"), then ``_reduce``d: a class ``weight`` (the mean divides
by the total weight of the counted targets, as torch's), ``label_smoothing`` and targets that
are class probabilities (both over the fused log-softmax). The plain call keeps the fused
cross-entropy (``tricycle.loss.CrossEntropy``). Weights are constants: they get no gradient.
Where torch's mean of nothing is NaN (every target ignored, or a total weight of 0), it is 0
here, with a zero gradient, as tricycle's criteria define it.
"""

import warnings

import numpy as np

from tricycle import checks, ops
from tricycle.backend import check_same_device, is_float
from tricycle.binary import constant
from tricycle.functions import LogSoftmax
from tricycle.loss import (
    L1,
    NLL,
    BCEWithLogits,
    CrossEntropy,
    Huber,
    KLDiv,
    MeanSquaredError,
    SmoothL1,
)
from tricycle.loss_reduction import REDUCTIONS, labels_and_mask, weight_argument, weight_for
from tricycle.nn.more_losses import BCELoss, CosineEmbeddingLoss, MarginRankingLoss
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cross_entropy",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "margin_ranking_loss",
    "mse_loss",
    "nll_loss",
    "smooth_l1_loss",
]

_reduction = checks.one_of(REDUCTIONS)


def _legacy(op: str, reduction: str, size_average, reduce) -> str:
    """The reduction that torch's deprecated ``size_average`` and ``reduce`` (given by name)
    stand for, with torch's warning: each None counts as True; both true is "mean", ``reduce``
    alone "sum", no ``reduce`` "none". ``reduction`` itself when neither is given."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    chosen = ("mean" if size_average else "sum") if reduce else "none"
    message = f"{op}: size_average and reduce are deprecated (as torch's); use reduction={chosen!r}"
    warnings.warn(message, UserWarning, stacklevel=3)
    return chosen


def _reduce(losses: Tensor, reduction: str, total=None) -> Tensor:
    """``losses`` as they are ("none"), summed ("sum") or their sum divided by ``total``
    ("mean"; an array or number, the number of losses by default; a total of 0 gives 0)."""
    if reduction == "none":
        return losses
    if reduction == "sum" or total is None:
        return losses.sum() if reduction == "sum" else losses.mean()
    total = losses.xp.asarray(total, dtype=losses.dtype)  # 0-d: it stays on the device
    return losses.sum() / losses.xp.where(total == 0, 1, total)


# ====================================================================== classification
def _classes_last(op: str, scores, target):
    """(scores (..., C), target): torch's input (N, C, d1, ...) with its class axis moved
    last, (N, C) and (C,) as they are; ``target`` as a Tensor when it holds class
    probabilities (floats of the input's shape: moved alike), else as an array of labels
    (N, d1, ...), checked to fit the input. Labels of the input's shape but its last axis
    keep tricycle's layout, the classes last (what ``F.cross_entropy`` read before it took
    torch's), and a shape that fits both layouts is an error, never a guess."""
    scores = as_tensor(scores)
    check_float(f"{op} (input)", scores)
    if scores.ndim == 0 or scores.size == 0:
        raise ValueError(
            f"{op}: expected a non-empty input (N, C, ...) or (C,), got {scores.shape}"
        )
    to_last = (0, *range(2, scores.ndim), 1)  # (N, C, d1, ...) -> (N, d1, ..., C)
    if isinstance(target, Tensor):
        labels = target.array
    else:
        labels = scores.xp.asarray(target)
    check_same_device(op, scores.array, labels)
    if is_float(labels.dtype) and labels.shape == scores.shape:  # class probabilities
        target = constant(target, scores, op)
        if scores.ndim > 2:
            scores, target = ops.permute(scores, to_last), ops.permute(target, to_last)
        return scores, target
    expected = scores.shape[:1] + scores.shape[2:] if scores.ndim > 1 else ()
    if scores.ndim > 2 and labels.shape == scores.shape[:-1]:  # tricycle's (..., C), as before
        if labels.shape == expected:  # (N, C, d) with C == d: either layout fits
            raise ValueError(
                f"{op}: input {scores.shape} with target {labels.shape} could hold the classes "
                "on axis 1 (torch's layout) or on the last axis (tricycle's): flatten them to "
                "(N, C) and (N,), as nanoGPT does, to say which"
            )
        return scores, labels
    if labels.shape != expected:
        raise ValueError(
            f"{op}: input {scores.shape} (N, C, d1, ...) needs target class ids of shape "
            f"{expected} (N, d1, ...) or class probabilities of the input's shape, got target "
            f"{labels.shape}"
        )
    return (ops.permute(scores, to_last) if scores.ndim > 2 else scores), labels


def _class_weight(op: str, weight, like: Tensor):
    """The (C,) class ``weight`` as an array of ``like``'s dtype on its device, or None."""
    if weight is None:
        return None
    n_classes = like.shape[-1]
    w = weight_argument(op, "weight", weight, f"None or a weight per class, ({n_classes},)")
    if np.shape(w) != (n_classes,):
        raise ValueError(
            f"{op}: weight must be one weight per class, ({n_classes},), got {np.shape(w)}"
        )
    return weight_for(op, "weight", w, like.xp, like.array)  # on like's device, in its dtype


def _weighted_nll(op: str, log_probs: Tensor, labels, weight, ignore_index):
    """(losses, total, w): the per-target negative log-likelihoods (0 for ignored targets),
    each times its class's weight, with the total that torch's mean divides them by (the
    weights of the counted targets; None: their number) and the weight array (or None)."""
    losses = NLL(ignore_index, "none")(labels, log_probs)
    w = _class_weight(op, weight, log_probs)
    xp = log_probs.xp
    safe, valid = labels_and_mask(xp, labels, ignore_index)  # (M,)
    if w is None:
        total = None if valid is None else valid.sum()
        return losses, total, None
    w_y = w[safe] if valid is None else w[safe] * valid  # (M,): each target's weight
    return losses * w_y.reshape(labels.shape), w_y.sum(), w


def cross_entropy(
    input: Tensor,  # noqa: A002 - torch's names
    target,
    weight=None,
    *,
    ignore_index: int | None = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """Cross-entropy of logits ``input`` (N, C), (N, C, d1, ...) or (C,) and ``target``: class
    ids (N,), (N, d1, ...) or () (those equal to ``ignore_index`` add nothing; None ignores
    nothing), or class probabilities of the input's shape, as torch's.

    With class ids and ``label_smoothing`` e, the loss of a target is
    (1 - e) w_y nll + (e / C) sum_c w_c (-log p_c), the mean dividing by the total weight
    w_y of the counted targets; with probabilities t, -sum_c w_c t'_c log p_c with
    t' = (1 - e) t + e / C, the mean over the N d1 ... positions.
    """
    op = "F.cross_entropy"
    reduction = _legacy(op, reduction, size_average, reduce)
    _reduction(op, "reduction", reduction)
    checks.real(op, "label_smoothing", label_smoothing, 0, 1)
    checks.optional(checks.integer)(op, "ignore_index", ignore_index)
    logits, target = _classes_last(op, input, target)
    log_probs_of = LogSoftmax()
    if isinstance(target, Tensor):  # class probabilities
        n_classes = logits.shape[-1]
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        w = _class_weight(op, weight, logits)
        products = log_probs_of(logits) * target  # (..., C)
        return _reduce(-((products if w is None else products * w).sum(-1)), reduction)
    if weight is None and label_smoothing == 0:
        if reduction == "mean":  # the fused op
            return CrossEntropy(ignore_index)(target, logits)
        return NLL(ignore_index, reduction)(target, log_probs_of(logits))
    log_probs = log_probs_of(logits)
    losses, total, w = _weighted_nll(op, log_probs, target, weight, ignore_index)
    if label_smoothing:
        smooth = -((log_probs if w is None else log_probs * w).sum(-1))  # (...)
        if ignore_index is not None:
            smooth = smooth * (target != ignore_index).astype(log_probs.dtype)
        losses = losses * (1 - label_smoothing) + smooth * (label_smoothing / logits.shape[-1])
    return _reduce(losses, reduction, total)


def nll_loss(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    *,
    ignore_index: int | None = -100,
    reduction: str = "mean",
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """The negative log-likelihood of class ids ``target`` (N,), (N, d1, ...) or () under
    log-probabilities ``input`` (N, C), (N, C, d1, ...) or (C,), as torch's: -w_y log p_y,
    the mean dividing by the total weight of the targets not equal to ``ignore_index``
    (``tricycle.criteria.NLL``, the class axis moved last)."""
    op = "F.nll_loss"
    reduction = _legacy(op, reduction, size_average, reduce)
    _reduction(op, "reduction", reduction)
    checks.optional(checks.integer)(op, "ignore_index", ignore_index)
    log_probs, labels = _classes_last(op, input, target)
    if isinstance(labels, Tensor):
        raise TypeError(f"{op}: target must be integer class ids, got dtype {labels.dtype}")
    if weight is None:
        return NLL(ignore_index, reduction)(labels, log_probs)
    losses, total, _ = _weighted_nll(op, log_probs, labels, weight, ignore_index)
    return _reduce(losses, reduction, total)


def binary_cross_entropy_with_logits(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    *,
    reduction: str = "mean",
    pos_weight=None,
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """Binary cross-entropy of logits and targets in [0, 1] of one shape, the positive term
    times ``pos_weight`` and each loss times ``weight`` (each broadcast to the input's
    shape), as torch's (``tricycle.criteria.BCEWithLogits``)."""
    op = "F.binary_cross_entropy_with_logits"
    reduction = _legacy(op, reduction, size_average, reduce)
    _reduction(op, "reduction", reduction)
    if weight is None:
        return BCEWithLogits(pos_weight, reduction)(target, input)
    losses = BCEWithLogits(pos_weight, "none")(target, input)
    expected = "None, a number or an array that broadcasts to the input"
    w = weight_for(op, "weight", weight_argument(op, "weight", weight, expected), losses.xp,
                   losses.array)  # fmt: skip
    return _reduce(losses * w, reduction)


def binary_cross_entropy(
    input: Tensor,  # noqa: A002
    target,
    weight=None,
    *,
    reduction: str = "mean",
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """Binary cross-entropy of probabilities in [0, 1], logs clamped at -100
    (``tricycle.nn.more_losses.BCELoss``)."""
    reduction = _legacy("F.binary_cross_entropy", reduction, size_average, reduce)
    return BCELoss(weight, reduction=reduction)(input, target)


# ====================================================================== regression
def _weighted(op: str, losses: Tensor, reduction: str, weight, by_weight: bool) -> Tensor:
    """Elementwise ``losses`` each times ``weight`` (of their shape, as torch's), reduced:
    the mean divides by the total weight when ``by_weight`` (torch's MSE and L1), by the
    number of losses otherwise (its Huber)."""
    w = weight_argument(op, "weight", weight, "None or an array of the input's shape")
    if np.shape(w) != losses.shape:
        raise ValueError(f"{op}: weight {np.shape(w)} must have the input's shape {losses.shape}")
    w = weight_for(op, "weight", w, losses.xp, losses.array)  # on the device, in its dtype
    return _reduce(losses * w, reduction, w.sum() if by_weight else None)


def mse_loss(
    input: Tensor,  # noqa: A002
    target,
    *,
    reduction: str = "mean",
    weight=None,
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """(input - target)^2 reduced, shapes equal, as torch's; the plain mean is the seed's
    ``tricycle.loss.MeanSquaredError``. With ``weight`` the mean is sum(w l) / sum(w)."""
    op = "F.mse_loss"
    reduction = _legacy(op, reduction, size_average, reduce)
    _reduction(op, "reduction", reduction)
    x = as_tensor(input)
    check_float(f"{op} (input)", x)
    t = constant(target, x, op)
    if t.shape != x.shape:  # torch broadcasts them, with a warning that it is likely a mistake
        raise ValueError(f"{op}: input {x.shape} and target {t.shape} must have the same shape")
    if weight is None and reduction == "mean":
        return MeanSquaredError()(t, x)
    difference = x - t
    squares = difference * difference
    if weight is None:
        return _reduce(squares, reduction)
    return _weighted(op, squares, reduction, weight, by_weight=True)


def l1_loss(
    input: Tensor,  # noqa: A002
    target,
    *,
    reduction: str = "mean",
    weight=None,
    size_average: bool | None = None,
    reduce: bool | None = None,
) -> Tensor:
    """|input - target| reduced, as torch's (``tricycle.criteria.L1``); with ``weight``
    the mean is sum(w l) / sum(w)."""
    op = "F.l1_loss"
    reduction = _legacy(op, reduction, size_average, reduce)
    _reduction(op, "reduction", reduction)
    if weight is None:
        return L1(reduction)(target, input)
    return _weighted(op, L1("none")(target, input), reduction, weight, by_weight=True)


def smooth_l1_loss(input: Tensor, target, *, reduction: str = "mean", beta: float = 1.0):  # noqa: A002
    """Quadratic below ``beta``, linear beyond, as torch's (``tricycle.criteria.SmoothL1``)."""
    return SmoothL1(beta, reduction)(target, input)


def huber_loss(
    input: Tensor,  # noqa: A002
    target,
    reduction: str = "mean",
    delta: float = 1.0,
    weight=None,
) -> Tensor:
    """0.5 d^2 for |d| <= delta, delta (|d| - 0.5 delta) beyond, as torch's
    (``tricycle.criteria.Huber``); with ``weight`` the mean is sum(w l) / (number of l)."""
    op = "F.huber_loss"
    _reduction(op, "reduction", reduction)
    if weight is None:
        return Huber(delta, reduction)(target, input)
    losses = Huber(delta, "none")(target, input)
    return _weighted(op, losses, reduction, weight, by_weight=False)


# ====================================================================== distributions, pairs
def kl_div(input: Tensor, target, *, reduction: str = "mean", log_target: bool = False):  # noqa: A002
    """KL(target || q) from log-probabilities log q (``input``), as torch's
    (``tricycle.criteria.KLDiv``; "batchmean" divides by the batch size)."""
    return KLDiv(reduction, log_target)(target, input)


def margin_ranking_loss(
    input1: Tensor, input2, target, margin: float = 0.0, *, reduction: str = "mean"
) -> Tensor:
    """max(0, -y (x1 - x2) + margin), reduced (``tricycle.nn.more_losses.MarginRankingLoss``)."""
    return MarginRankingLoss(margin, reduction=reduction)(input1, input2, target)


def cosine_embedding_loss(
    input1: Tensor, input2, target, margin: float = 0.0, *, reduction: str = "mean"
) -> Tensor:
    """1 - cos for labels 1, max(0, cos - margin) for labels -1, reduced
    (``tricycle.nn.more_losses.CosineEmbeddingLoss``)."""
    return CosineEmbeddingLoss(margin, reduction=reduction)(input1, input2, target)
