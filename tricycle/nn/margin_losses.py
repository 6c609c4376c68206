"""PyTorch's margin losses, called in PyTorch's order (``loss(input, target)``), each with its
``F.`` function:

- ``TripletMarginLoss``: an anchor nearer its positive than its negative, by a margin;
- ``HingeEmbeddingLoss``: distances x that are small where y = 1, above a margin where y = -1;
- ``SoftMarginLoss``: the logistic loss log(1 + e^(-y x)) of labels y = +-1;
- ``MultiLabelSoftMarginLoss``: binary cross-entropy of logits, averaged over the classes;
- ``MultiMarginLoss``: the multi-class hinge (Weston-Watkins), the target's score above the
  others by a margin;
- ``MultiLabelMarginLoss``: every target class's score above every other class's, by 1.

Each fused loss computes one loss per element (per row for the multi-class ones) and its
derivative with respect to the input; ``tricycle.loss_reduction.reduced`` applies
``reduction`` ("mean", "sum" or "none") and its gradient. The triplet loss is composed of
``pairwise_distance`` and tensor ops. Targets of labels (+-1 or class ids) get no gradient,
as in PyTorch (which refuses a target that requires one); the multi-label soft margin's float
targets do. Class ids are range-checked at the op (on a GPU, at the next read-back).
"""

from tricycle import checks, dispatch, ranges
from tricycle.backend import check_same_device
from tricycle.binary import minimum
from tricycle.criteria import BCEWithLogits
from tricycle.loss_reduction import REDUCTIONS, reduced, weight_argument, weight_for
from tricycle.module import Layer
from tricycle.nn.functional_losses import _class_weight
from tricycle.nn.more_losses import _same_shape, pairwise_distance
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.unary import maximum_scalar, sigmoid_forward

__all__ = [
    "HingeEmbeddingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "hinge_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
]

_reduction = checks.one_of(REDUCTIONS)


def _scores(op: str, input) -> Tensor:  # noqa: A002 - torch's name
    """``input`` as a floating Tensor of class scores, (N, C) or an unbatched (C,)."""
    x = as_tensor(input)
    check_float(f"{op} (input)", x)
    if x.ndim not in (1, 2) or x.size == 0:
        raise ValueError(f"{op}: expected a non-empty input (N, C) or (C,), got {x.shape}")
    return x


def _class_ids(op: str, target, x: Tensor, shape: tuple, ignore: int | None = None):
    """``target`` as an array of integer class ids of ``shape``, each in [0, C) (or
    ``ignore``), on x's device."""
    ids = target.array if isinstance(target, Tensor) else x.xp.asarray(target)
    check_same_device(op, x.array, ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"{op}: target must be integer class ids, got dtype {ids.dtype}")
    if ids.shape != shape:
        raise ValueError(
            f"{op}: input {x.shape} needs target class ids of shape {shape}, got {ids.shape}"
        )
    n_classes = x.shape[-1]
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(
        ids,
        n_classes,
        op=op,
        what="target class ids",
        ignore=ignore,
        context=f"for an input of {n_classes} classes",
    )
    return ids


def _reduce(losses: Tensor, reduction: str) -> Tensor:
    """A composed loss's per-element ``losses`` reduced (torch's mean: over every element)."""
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.mean()


# ====================================================================== embeddings
class TripletMarginLoss(Layer):
    """An anchor a nearer its positive p than its negative n by ``margin``, as
    ``torch.nn.TripletMarginLoss``, called ``loss(anchor, positive, negative)`` on vectors
    (N, D) or (D,) (any equal number of axes, broadcast): l = max(0, margin + d(a, p) -
    d(a, n)), d the ``pairwise_distance`` ||x1 - x2 + eps||_p of the last axis. With ``swap``
    d(a, n) is min(d(a, n), d(p, n)), the harder negative (Balntas et al., 2016).

    Composed of tensor ops: the clamp's gradient passes where the hinge is >= 0 and the
    minimum's splits on ties, as PyTorch's.
    """

    @checks.arguments(
        margin=checks.real,
        p=checks.interval(1, float("inf")),
        eps=checks.non_negative,
        swap=checks.boolean,
        reduction=_reduction,
    )
    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        *,
        reduction: str = "mean",
    ):
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap
        self.reduction = reduction

    def forward(self, anchor: Tensor, positive, negative) -> Tensor:
        a, pos, neg = as_tensor(anchor), as_tensor(positive), as_tensor(negative)
        if not a.ndim == pos.ndim == neg.ndim >= 1:
            raise ValueError(
                f"{type(self).__name__}: anchor, positive and negative must have the same "
                f"number of axes (N, D) or (D,), got anchor {a.shape}, positive {pos.shape} "
                f"and negative {neg.shape}"
            )
        d_pos = pairwise_distance(a, pos, self.p, self.eps)  # (N,)
        d_neg = pairwise_distance(a, neg, self.p, self.eps)
        if self.swap:
            d_neg = minimum(d_neg, pairwise_distance(pos, neg, self.p, self.eps))
        return _reduce(maximum_scalar(d_pos - d_neg + self.margin, 0.0), self.reduction)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(margin={self.margin}, p={self.p}, eps={self.eps}, "
            f"swap={self.swap}, reduction={self.reduction!r})"
        )


class HingeEmbeddingLoss(Layer):
    """Distances (or dissimilarities) x small where y = 1 and at least ``margin`` where
    y = -1, as ``torch.nn.HingeEmbeddingLoss``: l = x where y = 1, max(0, margin - x) where
    y = -1 (PyTorch's definition adds both terms for any other label). dl/dx = 1 for y = 1;
    -1 for y = -1 where margin - x >= 0 (the kink included, as PyTorch's clamp), 0 beyond.
    """

    @checks.arguments(margin=checks.real, reduction=_reduction)
    def __init__(self, margin: float = 1.0, *, reduction: str = "mean"):
        self.margin, self.reduction = margin, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        (x, y), xp = _same_shape(type(self).__name__, input, ("target", target))
        a, labels = x.array, y.array
        not_similar, not_dissimilar = labels != 1, labels != -1
        gap = self.margin - a
        losses = xp.where(not_similar, xp.maximum(gap, 0), 0) + xp.where(not_dissimilar, a, 0)
        slopes = not_dissimilar.astype(a.dtype) - (not_similar & (gap >= 0)).astype(a.dtype)
        return reduced("hinge_embedding", losses, self.reduction, (x,), (lambda dl: dl * slopes,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(margin={self.margin}, reduction={self.reduction!r})"


# ====================================================================== logistic
class SoftMarginLoss(Layer):
    """The logistic loss of labels y = +-1, as ``torch.nn.SoftMarginLoss``:
    l = log(1 + e^(-y x)) = softplus(-y x), computed stably as max(z, 0) + log(1 + e^-|z|)
    with z = -y x; dl/dx = -y sigmoid(z)."""

    @checks.arguments(reduction=_reduction)
    def __init__(self, *, reduction: str = "mean"):
        self.reduction = reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        (x, y), xp = _same_shape(type(self).__name__, input, ("target", target))
        signs = y.array.astype(x.dtype, copy=False)
        z = -signs * x.array
        losses = xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))
        slopes = -signs * sigmoid_forward(xp, z)
        return reduced("soft_margin", losses, self.reduction, (x,), (lambda dl: dl * slopes,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r})"


class MultiLabelSoftMarginLoss(Layer):
    """Independent yes/no decisions over C classes, as ``torch.nn.MultiLabelSoftMarginLoss``:
    the binary cross-entropy of logits x (N, C) or (C,) and targets y in [0, 1] of x's shape
    (``tricycle.criteria.BCEWithLogits``), each times its class's ``weight`` (a number or an
    array that broadcasts to x, (C,) usually), averaged over the classes: one loss a row,
    then reduced. The targets get gradients too, as in PyTorch."""

    @checks.arguments(reduction=_reduction)
    def __init__(self, weight=None, *, reduction: str = "mean"):
        expected = "None, a number or an array of weights that broadcasts to the input"
        self.weight = weight_argument(type(self).__name__, "weight", weight, expected)
        self.reduction = reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        op = type(self).__name__
        (x, y), _ = _same_shape(op, input, ("target", target))
        losses = BCEWithLogits(None, "none")(y, x)  # (..., C)
        if self.weight is not None:
            losses = losses * weight_for(op, "weight", self.weight, x.xp, x.array)
        return _reduce(losses.sum(-1) / x.shape[-1], self.reduction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r})"


# ====================================================================== multi-class hinges
class MultiMarginLoss(Layer):
    """The multi-class hinge of scores x (N, C) or (C,) and class ids y (N,) or (), as
    ``torch.nn.MultiMarginLoss``: l = w_y sum_{i != y} max(0, margin - x_y + x_i)^p / C, for
    p = 1 or 2 and a class ``weight`` w (C,) (1 by default; a constant).

    Where the hinge h_i = margin - x_y + x_i is > 0 (strictly, as PyTorch):
    dl/dx_i = w_y p h_i^(p - 1) / C for i != y, and dl/dx_y is minus their sum.
    """

    @checks.arguments(p=checks.one_of((1, 2)), margin=checks.real, reduction=_reduction)
    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, *, reduction: str = "mean"):
        expected = "None or a weight per class, (C,)"
        self.weight = weight_argument(type(self).__name__, "weight", weight, expected)
        self.p, self.margin, self.reduction = p, margin, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        op = type(self).__name__
        x = _scores(op, input)
        ids = _class_ids(op, target, x, x.shape[:-1])
        xp, a = x.xp, x.array
        n_classes = a.shape[-1]
        x_y = xp.take_along_axis(a, ids[..., None], -1)  # (N, 1)
        hinge = self.margin - x_y + a  # (N, C)
        is_y = xp.arange(n_classes) == ids[..., None]  # (N, C)
        active = (hinge > 0) & ~is_y
        h = xp.where(active, hinge, 0)
        terms, slopes = (h, active.astype(a.dtype)) if self.p == 1 else (h * h, 2 * h)
        scale = xp.full(ids.shape, 1 / n_classes, dtype=a.dtype)  # (N,): w_y / C
        w = _class_weight(op, self.weight, x)
        if w is not None:
            scale = scale * w[ids]
        losses = terms.sum(-1) * scale
        slopes = slopes * scale[..., None]
        dx = slopes - is_y * slopes.sum(-1, keepdims=True)  # (N, C)
        return reduced(
            "multi_margin", losses, self.reduction, (x,), (lambda dl: dl[..., None] * dx,)
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(p={self.p}, margin={self.margin}, reduction={self.reduction!r})"
        )


class MultiLabelMarginLoss(Layer):
    """Every target class's score above every other class's by 1, as
    ``torch.nn.MultiLabelMarginLoss``: scores x (N, C) or (C,), and targets y of x's shape
    holding each row's class ids first, ended by the first -1 (what follows is ignored):
    l = sum_j sum_{i not a target} max(0, 1 - (x_{y_j} - x_i)) / C, one loss a row.

    Each pair (j, i) whose hinge is > 0 adds 1 / C to dl/dx_i and -1 / C to dl/dx_{y_j}
    (a repeated target id counts as often as it appears, as in PyTorch). The pairs are
    compared at once, (N, C, C).
    """

    @checks.arguments(reduction=_reduction)
    def __init__(self, *, reduction: str = "mean"):
        self.reduction = reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - torch's name
        op = type(self).__name__
        x = _scores(op, input)
        ids = _class_ids(op, target, x, x.shape, ignore=-1)  # (N, J), J = C
        xp, a = x.xp, x.array
        n_classes = a.shape[-1]
        listed = xp.cumsum(ids < 0, axis=-1) == 0  # (N, J): before the first -1
        one_hot = (ids[..., None] == xp.arange(n_classes)) & listed[..., None]  # (N, J, C)
        is_target = one_hot.any(-2)  # (N, C)
        x_target = xp.take_along_axis(a, xp.where(listed, ids, 0), -1)  # (N, J)
        hinge = 1 - x_target[..., :, None] + a[..., None, :]  # (N, J, C)
        active = (hinge > 0) & listed[..., :, None] & ~is_target[..., None, :]
        losses = xp.where(active, hinge, 0).sum((-2, -1)) / n_classes  # (N,)
        pushed_up = xp.einsum(
            "...j,...jc->...c", active.sum(-1).astype(a.dtype), one_hot.astype(a.dtype)
        )
        dx = (active.sum(-2) - pushed_up) / n_classes  # (N, C)
        return reduced(
            "multilabel_margin", losses, self.reduction, (x,), (lambda dl: dl[..., None] * dx,)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r})"


# ====================================================================== F.
def triplet_margin_loss(
    anchor: Tensor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-6,
    swap: bool = False,
    *,
    reduction: str = "mean",
):
    """max(0, margin + d(a, p) - d(a, n)), reduced (``TripletMarginLoss``)."""
    return TripletMarginLoss(margin, p, eps, swap, reduction=reduction)(anchor, positive, negative)


def hinge_embedding_loss(input: Tensor, target, margin: float = 1.0, *, reduction: str = "mean"):  # noqa: A002
    """x where y = 1, max(0, margin - x) where y = -1, reduced (``HingeEmbeddingLoss``)."""
    return HingeEmbeddingLoss(margin, reduction=reduction)(input, target)


def soft_margin_loss(input: Tensor, target, *, reduction: str = "mean") -> Tensor:  # noqa: A002
    """log(1 + e^(-y x)), reduced (``SoftMarginLoss``)."""
    return SoftMarginLoss(reduction=reduction)(input, target)


def multilabel_soft_margin_loss(input: Tensor, target, weight=None, *, reduction: str = "mean"):  # noqa: A002
    """Binary cross-entropy of logits averaged over the classes (``MultiLabelSoftMarginLoss``)."""
    return MultiLabelSoftMarginLoss(weight, reduction=reduction)(input, target)


def multi_margin_loss(
    input: Tensor,  # noqa: A002 - torch's name
    target,
    p: int = 1,
    margin: float = 1.0,
    weight=None,
    *,
    reduction: str = "mean",
) -> Tensor:
    """The multi-class hinge, reduced (``MultiMarginLoss``)."""
    return MultiMarginLoss(p, margin, weight, reduction=reduction)(input, target)


def multilabel_margin_loss(input: Tensor, target, *, reduction: str = "mean") -> Tensor:  # noqa: A002
    """Target classes' scores above the others' by 1, reduced (``MultiLabelMarginLoss``)."""
    return MultiLabelMarginLoss(reduction=reduction)(input, target)
