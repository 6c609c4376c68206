"""torch's ``nn.TripletMarginWithDistanceLoss`` and ``F.triplet_margin_with_distance_loss``: the
triplet loss with any distance function (``TripletMarginLoss`` is it with the p-norm
``pairwise_distance``)::

    l = max(0, d(a, p) - d(a, n) + margin)        d(a, n) -> min(d(a, n), d(p, n)) with swap

``distance_function`` maps two tensors to a tensor of distances (the default
``pairwise_distance``, the Euclidean one); composed of tensor ops, so its gradient is the
composition's.
"""

from tricycle import checks
from tricycle.binary import minimum
from tricycle.module import Layer
from tricycle.nn.margin_losses import _reduce
from tricycle.nn.more_losses import pairwise_distance
from tricycle.tensor import Tensor, as_tensor
from tricycle.unary import maximum_scalar

__all__ = ["TripletMarginWithDistanceLoss", "triplet_margin_with_distance_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def _check_settings(op: str, distance_function, margin, swap, reduction) -> None:
    """The loss's settings, as torch checks them (a margin must be positive)."""
    checks.function(op, "distance_function", distance_function, optional=True)
    checks.real(op, "margin", margin)
    if margin <= 0:
        raise ValueError(f"{op}: expected margin to be greater than 0, got {margin} instead")
    checks.boolean(op, "swap", swap)
    checks.one_of(_REDUCTIONS)(op, "reduction", reduction)


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive,
    negative,
    *,
    distance_function=None,
    margin: float = 1.0,
    swap: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin), reduced, as torch's
    ``F.triplet_margin_with_distance_loss`` (see the module doc)."""
    op = "triplet_margin_with_distance_loss"
    _check_settings(op, distance_function, margin, swap, reduction)
    a, pos, neg = as_tensor(anchor), as_tensor(positive), as_tensor(negative)
    if not a.ndim == pos.ndim == neg.ndim:
        raise RuntimeError(f"{op}: the anchor, positive and negative must have the same number "
                           f"of dimensions, got anchor {a.shape}, positive {pos.shape} and "
                           f"negative {neg.shape}")  # fmt: skip
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = as_tensor(distance(a, pos)), as_tensor(distance(a, neg))
    if swap:
        d_neg = minimum(d_neg, as_tensor(distance(pos, neg)))
    return _reduce(maximum_scalar(d_pos - d_neg + margin, 0.0), reduction)


class TripletMarginWithDistanceLoss(Layer):
    """torch's ``nn.TripletMarginWithDistanceLoss(*, distance_function=None, margin=1.0,
    swap=False, reduction="mean")``, called ``loss(anchor, positive, negative)``."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):  # fmt: skip
        _check_settings(type(self).__name__, distance_function, margin, swap, reduction)
        self.distance_function, self.margin, self.swap = distance_function, margin, swap
        self.reduction = reduction

    def forward(self, anchor: Tensor, positive, negative) -> Tensor:
        return triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction,
        )  # fmt: skip
