"""The criteria under PyTorch's names and calling order: ``loss(prediction, target)``.

tricycle's criteria are called ``loss_fn(y_true, y_pred)`` (the seed's order, kept in
``tricycle.loss``); PyTorch's ``nn.CrossEntropyLoss()(logits, labels)`` takes the prediction
first. Each class here holds the tricycle criterion, built with the same arguments, and swaps
the two on the way in, so a model written for PyTorch computes the same loss here.
``BCELoss``, of probabilities, is in ``tricycle.nn.more_losses`` (tricycle's
``BinaryCrossEntropy`` takes logits, as ``BCEWithLogitsLoss`` does).
"""

from tricycle.criteria import L1, NLL, BCEWithLogits, Huber, KLDiv, SmoothL1
from tricycle.loss import CrossEntropy, MeanSquaredError
from tricycle.tensor import Tensor


class _Loss:
    """A criterion called as PyTorch's: ``loss(prediction, target)`` is
    ``criterion(target, prediction)``."""

    criterion: type = CrossEntropy

    def __init__(self, **kwargs):  # by name: PyTorch's positional order is not the criterion's
        self.fn = self.criterion(**kwargs)

    def __call__(self, prediction, target) -> Tensor:
        return self.fn(target, prediction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _named(name: str, criterion: type, what: str) -> type:
    """A ``_Loss`` subclass called ``name`` that holds ``criterion`` (a class, so it pickles)."""
    doc = f"{what}``{criterion.__module__}.{criterion.__name__}`` in PyTorch's order."
    return type(name, (_Loss,), {"criterion": criterion, "__doc__": doc, "__module__": __name__})


CrossEntropyLoss = _named("CrossEntropyLoss", CrossEntropy, "Logits (..., C), class ids (...): ")
MSELoss = _named("MSELoss", MeanSquaredError, "")
BCEWithLogitsLoss = _named("BCEWithLogitsLoss", BCEWithLogits, "")
L1Loss = _named("L1Loss", L1, "")
SmoothL1Loss = _named("SmoothL1Loss", SmoothL1, "")
HuberLoss = _named("HuberLoss", Huber, "")
NLLLoss = _named("NLLLoss", NLL, "Log-probabilities (..., C), class ids (...): ")
KLDivLoss = _named("KLDivLoss", KLDiv, "")
