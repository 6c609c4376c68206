"""The criteria under PyTorch's names and calling order: ``loss(prediction, target)``.

tricycle's criteria are called ``loss_fn(y_true, y_pred)`` (the seed's order, kept in
``tricycle.loss``); PyTorch's ``nn.CrossEntropyLoss()(logits, labels)`` takes the prediction
first. Each class here holds the tricycle criterion, built with the same arguments, and swaps
the two on the way in, so a model written for PyTorch computes the same loss here.
``BCELoss``, of probabilities, is in ``tricycle.nn.more_losses`` (tricycle's
``BinaryCrossEntropy`` takes logits, as ``BCEWithLogitsLoss`` does).
"""

from tricycle import checks
from tricycle.criteria import L1, NLL, BCEWithLogits, Huber, KLDiv, SmoothL1
from tricycle.loss import CrossEntropy
from tricycle.loss_reduction import REDUCTIONS
from tricycle.module import Layer
from tricycle.tensor import Tensor


class _Loss(Layer):
    """A criterion called as PyTorch's: ``loss(prediction, target)`` is
    ``criterion(target, prediction)``. A Module, as torch's losses are: ``.to(device)``,
    ``train()``/``eval()`` and ``named_modules`` treat it as a layer without parameters."""

    criterion: type = CrossEntropy
    defaults: dict = {}  # torch's defaults where they differ from the criterion's (read only)

    def __init__(self, **kwargs):  # by name: PyTorch's positional order is not the criterion's
        self.fn = self.criterion(**{**self.defaults, **kwargs})

    def forward(self, prediction, target) -> Tensor:
        return self.fn(target, prediction)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _named(name: str, criterion: type, what: str, **defaults) -> type:
    """A ``_Loss`` subclass called ``name`` that holds ``criterion`` (a class, so it pickles),
    made with torch's ``defaults`` unless a call names them."""
    doc = f"{what}``{criterion.__module__}.{criterion.__name__}`` in PyTorch's order"
    doc += "".join(f", {k}={v!r} by default (torch's)" for k, v in defaults.items()) + "."
    attributes = {"criterion": criterion, "defaults": defaults, "__doc__": doc}
    return type(name, (_Loss,), {**attributes, "__module__": __name__})


class CrossEntropyLoss(_Loss):
    """Logits (..., C), class ids (...): ``tricycle.loss.CrossEntropy`` (the fused op) in
    PyTorch's order, with torch's ``ignore_index=-100`` by default (tricycle's criteria ignore
    nothing unless told: a training script pads its targets with -100). torch's other
    arguments, ``weight``, ``reduction`` ("mean", "sum" or "none"), ``label_smoothing`` and the
    deprecated ``size_average``/``reduce``, as torch's: given, the loss is ``F.cross_entropy``'s
    (which also reads torch's (N, C, d1, ...) logits and class probabilities)."""

    criterion, defaults = CrossEntropy, {"ignore_index": -100}
    weight, reduction, label_smoothing = None, "mean", 0.0  # class defaults: older pickles load

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):  # fmt: skip
        from tricycle.nn.functional_losses import _legacy, _reduction  # noqa: PLC0415

        reduction = _legacy("CrossEntropyLoss", reduction, size_average, reduce)
        _reduction("CrossEntropyLoss", "reduction", reduction)
        checks.real("CrossEntropyLoss", "label_smoothing", label_smoothing, 0, 1)
        super().__init__(ignore_index=ignore_index)
        self.weight, self.reduction, self.label_smoothing = weight, reduction, label_smoothing

    def forward(self, prediction, target) -> Tensor:
        fused = self.weight is None and self.reduction == "mean" and not self.label_smoothing
        if fused and not hasattr(prediction, "__tricycle_function__"):  # not a DTensor
            return self.fn(target, prediction)
        from tricycle.nn.functional import cross_entropy  # noqa: PLC0415 - it imports nn's

        return cross_entropy(
            prediction,
            target,
            self.weight,
            ignore_index=self.fn.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class MSELoss(_Loss):
    """(prediction - target)^2 of the same shape, reduced as torch's ``reduction`` says
    ("mean", "sum" or "none": ``F.mse_loss``); the mean is ``tricycle.loss.MeanSquaredError``
    in PyTorch's order."""

    reduction = "mean"  # a class default: an MSELoss pickled before the argument still loads

    def __init__(self, *, reduction: str = "mean"):
        if reduction not in REDUCTIONS:
            checks.fail("MSELoss", "reduction", f"one of {REDUCTIONS}", reduction)
        self.reduction = reduction

    def forward(self, prediction, target) -> Tensor:
        from tricycle.nn.functional_losses import mse_loss  # noqa: PLC0415 - it imports nn's

        return mse_loss(prediction, target, reduction=self.reduction)


BCEWithLogitsLoss = _named("BCEWithLogitsLoss", BCEWithLogits, "")
L1Loss = _named("L1Loss", L1, "")
SmoothL1Loss = _named("SmoothL1Loss", SmoothL1, "")
HuberLoss = _named("HuberLoss", Huber, "")
NLLLoss = _named("NLLLoss", NLL, "Log-probabilities (..., C), class ids (...): ",
                 ignore_index=-100)  # fmt: skip
KLDivLoss = _named("KLDivLoss", KLDiv, "")
