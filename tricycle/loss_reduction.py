"""What every loss shares: its reduction ("mean", "sum", "none") and the graph node it makes,
the checks of class labels and of a (y_true, y_pred) pair, and the elementwise losses of
their difference.

``tricycle.loss`` and ``tricycle.criteria`` (which re-exports these) build their losses on
them: a loss computes one loss per element (or row) and each input's local derivative, and
``reduced`` makes the node whose backward scales the output gradient by the reduction.
"""

from collections.abc import Callable

import numpy as np

from tricycle import backend, checks, dispatch, ranges
from tricycle.backend import check_same_device
from tricycle.binary import constant
from tricycle.tensor import Tensor, as_tensor, check_float

REDUCTIONS = ("mean", "sum", "none")


def weight_argument(owner: str, name: str, weight, expected: str):
    """A loss's ``weight`` argument as it is kept: None, a number, or an array (a Tensor's
    array; a list or tuple as float64); anything else is a TypeError saying ``expected``."""
    if isinstance(weight, Tensor):
        weight = weight.array
    elif isinstance(weight, list | tuple):
        weight = np.asarray(weight, dtype=np.float64)
    if not (weight is None or checks.is_real(weight) or hasattr(weight, "shape")):
        checks.fail(owner, name, expected, weight, TypeError)
    return weight


def weight_for(op: str, name: str, weight, xp, x, hint: str = ""):
    """A loss's optional ``weight`` (numbers, a host array, or None) as an array of x's dtype
    on x's device, checked to broadcast to x's shape (the loss's elements); None stays None.
    ``hint`` ends the error: what such a weight usually looks like."""
    if weight is None:
        return None
    w = xp.asarray(backend.to_host_array(weight) if xp is np else weight, dtype=x.dtype)
    try:
        fits = np.broadcast_shapes(w.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{op}: {name} of shape {w.shape} must broadcast to the input's shape {x.shape}{hint}"
        )
    return w


def labels_and_mask(xp, labels, ignore_index):
    """Flat labels safe to index with (ignored ones set to 0) and the mask of counted rows
    (None when nothing is ignored)."""
    labels = labels.reshape(-1)  # (N,)
    if ignore_index is None:
        return labels, None
    valid = labels != ignore_index  # (N,)
    return xp.where(valid, labels, 0), valid


def check_class_labels(op: str, scores: str, labels, y_pred: Tensor, ignore_index, of: str) -> None:
    """Labels (y_true) must be integer class ids of y_pred's rows of ``scores`` (logits,
    log-probabilities), each in [0, C) or ``ignore_index``; an error names ``op``, and a
    label out of range is reported "for {scores} {of} C classes"."""
    check_float(f"{op} ({scores}, y_pred)", y_pred)
    if not np.issubdtype(labels.dtype, np.integer):
        raise TypeError(
            f"{op}: labels (y_true) must be integer class ids, got dtype {labels.dtype}; "
            "convert with to_tensor(labels, dtype=int)"
        )
    if y_pred.ndim == 0 or labels.shape != y_pred.shape[:-1]:
        raise ValueError(
            f"{op}: labels of shape {labels.shape} need {scores} of shape "
            f"{labels.shape + ('C',)}, got {y_pred.shape}"
        )
    if labels.size == 0:
        raise ValueError(f"{op}: no labels (empty input)")
    n_classes = y_pred.shape[-1]
    check = dispatch.setting("check_range", dispatch.device_of(labels), ranges.check_range)
    check(  # the device's check: on a GPU it defers to the next read-back
        labels,
        n_classes,
        op=op,
        what="labels",
        context=f"for {scores} {of} {n_classes} classes",
        ignore=ignore_index,
    )


def reduced(op: str, losses, reduction: str, args, local_grads, count=None) -> Tensor:
    """The graph node of per-element ``losses`` reduced by ``reduction``.

    "mean" divides the sum by ``count`` (default: the number of losses; at least 1, so that a
    loss of nothing is 0); KLDiv's "batchmean" is "mean" with ``count`` the batch size.
    ``local_grads`` has one function per arg of ``args``: given dlosses, the gradient of each
    element's loss (broadcastable to ``losses``), it returns that arg's gradient.
    """
    xp = backend.array_module(losses)
    scale = None  # "none" and "sum": each loss gets the output gradient as it is
    if reduction == "none":
        out = losses
    elif reduction == "sum":
        out = losses.sum()
    else:  # an array count (of rows not ignored) stays on the device
        count = xp.asarray(losses.size if count is None else count, dtype=losses.dtype)
        scale = 1 / xp.maximum(count, 1)
        out = losses.sum() * scale

    def dlosses(dout):
        return dout if scale is None else dout * scale  # 0-d: it broadcasts

    back_fns = tuple(lambda dout, grad=grad: grad(dlosses(dout)) for grad in local_grads)
    return Tensor(xp.asarray(out), args=tuple(args), back_fns=back_fns, name=op)


def _check_same_shape(op: str, y_true: Tensor, y_pred: Tensor, pred_name: str):
    """The shared xp of an elementwise loss's inputs, which must share a non-empty shape."""
    xp = check_same_device(op, y_true.array, y_pred.array)
    if y_true.shape != y_pred.shape:
        raise ValueError(
            f"{op}: y_true {y_true.shape} and {pred_name} {y_pred.shape} must have the same shape"
        )
    if y_pred.size == 0:
        raise ValueError(f"{op}: empty input")
    return xp


def _pair(op: str, y_true, y_pred) -> tuple[Tensor, Tensor, object]:
    """(y_true, y_pred, xp): two float Tensors of one non-empty shape on one device."""
    y_pred = as_tensor(y_pred)
    check_float(f"{op} (y_pred)", y_pred)
    y_true = constant(y_true, y_pred)
    xp = _check_same_shape(op, y_true, y_pred, "y_pred")
    return y_true, y_pred, xp


def _elementwise(op: str, name: str, y_true, y_pred, reduction: str, forward: Callable) -> Tensor:
    """A loss of d = y_pred - y_true, elementwise: ``forward(xp, d)`` gives (losses, slopes),
    slopes = dloss/dd; y_pred's gradient is the losses' gradient times the slopes, y_true's
    its negative."""
    y_true, y_pred, xp = _pair(op, y_true, y_pred)
    diff = y_pred.array - y_true.array.astype(y_pred.dtype, copy=False)
    losses, slope = forward(xp, diff)
    return reduced(
        name,
        losses,
        reduction,
        (y_pred, y_true),
        # (``forward`` kept as a default: the second derivative reads its constants)
        (lambda dl, forward=forward: dl * slope, lambda dl: -(dl * slope)),
    )
