"""The criteria under PyTorch's names and calling order: ``loss(prediction, target)``.

tricycle's criteria are called ``loss_fn(y_true, y_pred)`` (the seed's order, kept in
``tricycle.loss``); PyTorch's ``nn.CrossEntropyLoss()(logits, labels)`` takes the prediction
first. Each class here holds the tricycle criterion, built with the same arguments, and swaps
the two on the way in, so a model written for PyTorch computes the same loss here.
"""

from tricycle.criteria import L1, NLL, BCEWithLogits, Huber, KLDiv, SmoothL1
from tricycle.loss import BinaryCrossEntropy, CrossEntropy, MeanSquaredError
from tricycle.tensor import Tensor


class _Loss:
    """A criterion called as PyTorch's: ``loss(prediction, target)`` is
    ``criterion(target, prediction)``."""

    criterion: type = CrossEntropy

    def __init__(self, *args, **kwargs):
        self.fn = self.criterion(*args, **kwargs)

    def __call__(self, prediction, target) -> Tensor:
        return self.fn(target, prediction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class CrossEntropyLoss(_Loss):
    """Logits (..., C) and class ids (...): ``tricycle.loss.CrossEntropy``."""

    criterion = CrossEntropy


class MSELoss(_Loss):
    """``tricycle.loss.MeanSquaredError``."""

    criterion = MeanSquaredError


class BCELoss(_Loss):
    """Probabilities and 0/1 targets: ``tricycle.loss.BinaryCrossEntropy``."""

    criterion = BinaryCrossEntropy


class BCEWithLogitsLoss(_Loss):
    """``tricycle.criteria.BCEWithLogits``."""

    criterion = BCEWithLogits


class L1Loss(_Loss):
    """``tricycle.criteria.L1``."""

    criterion = L1


class SmoothL1Loss(_Loss):
    """``tricycle.criteria.SmoothL1``."""

    criterion = SmoothL1


class HuberLoss(_Loss):
    """``tricycle.criteria.Huber``."""

    criterion = Huber


class NLLLoss(_Loss):
    """Log-probabilities (..., C) and class ids (...): ``tricycle.criteria.NLL``."""

    criterion = NLL


class KLDivLoss(_Loss):
    """``tricycle.criteria.KLDiv``."""

    criterion = KLDiv
