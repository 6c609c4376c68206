"""More losses under PyTorch's names, called in PyTorch's order (``loss(input, target)``), and
the similarities and distances that losses of pairs compare:

- ``BCELoss``: binary cross-entropy of probabilities (``BCEWithLogitsLoss`` takes logits);
- ``MarginRankingLoss``: rank x1 above x2 (y = 1) or below (y = -1), by a margin;
- ``CosineEmbeddingLoss``: ``tricycle.criteria.CosineEmbedding`` in PyTorch's order;
- ``cosine_similarity``, ``vector_norm``, ``normalize``, ``pairwise_distance``, and the
  layers ``CosineSimilarity`` and ``PairwiseDistance``.

Each loss computes one loss per element and its derivative with respect to each input, and
``tricycle.loss_reduction.reduced`` applies ``reduction`` ("mean", "sum" or "none") and its
gradient. Float targets get gradients too, as in PyTorch. A setting whose place in PyTorch's
positional order is a deprecated argument (``size_average``, ``reduce``) is taken by name only:
``BCELoss(weight, reduction="sum")``.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.backend import check_same_device
from tricycle.binary import constant, unbroadcast
from tricycle.criteria import CosineEmbedding
from tricycle.loss_reduction import REDUCTIONS, reduced, weight_argument, weight_for
from tricycle.module import Layer
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.unary import maximum_scalar, unary_op

__all__ = [
    "BCELoss", "CosineEmbeddingLoss", "CosineSimilarity", "MarginRankingLoss",
    "PairwiseDistance", "cosine_similarity", "normalize", "pairwise_distance", "vector_norm",
]  # fmt: skip

LOG_FLOOR = -100.0  # PyTorch's clamp of BCELoss's logs: a sure mistake costs 100, not inf
SLOPE_FLOOR = 1e-12  # PyTorch's floor of x (1 - x) in BCELoss's input gradient


def _same_shape(op: str, first, *others: tuple[str, object]) -> tuple[list[Tensor], object]:
    """([first, *others] as Tensors of one non-empty shape on one device, xp); ``first`` is a
    floating Tensor (or array), each of ``others`` a (name, value) pair for the message."""
    first = as_tensor(first)
    check_float(f"{op} (input)", first)
    tensors = [first] + [constant(value, first, op) for _, value in others]
    xp = check_same_device(op, *(t.array for t in tensors))
    if any(t.shape != first.shape for t in tensors):
        names = ", ".join(f"{name} {t.shape}" for (name, _), t in zip(others, tensors[1:]))
        raise ValueError(f"{op}: input {first.shape}, {names} must have the same shape")
    if first.size == 0:
        raise ValueError(f"{op}: empty input")
    return tensors, xp


# ====================================================================== BCELoss
class BCELoss(Layer):
    """Binary cross-entropy of probabilities x (``input``, in [0, 1]) and targets y in
    [0, 1], as ``torch.nn.BCELoss``: l = -w (y log x + (1 - y) log(1 - x)), each log clamped
    at -100 as PyTorch does, so that x = 0 or 1 costs at most 100 w, never inf. ``weight`` w
    (default 1; a number or an array that broadcasts to the input's shape) rescales each loss.

    Gradients, PyTorch's: dl/dx = w (x - y) / max(x (1 - x), 1e-12), finite at 0 and 1;
    dl/dy = w (log(1 - x) - log x) with the clamped logs (PyTorch's unclamped logit is
    infinite at 0 and 1, and larger where a log is clamped).

    An input outside [0, 1] (or NaN) is an error naming the values, on the host; on a GPU,
    which is not made to wait for the check, its loss is NaN. From logits, use
    ``BCEWithLogitsLoss``: it never computes log(0).
    """

    @checks.arguments(reduction=checks.one_of(REDUCTIONS))
    def __init__(self, weight=None, *, reduction: str = "mean"):
        expected = "None, a number or an array of weights that broadcasts to the input"
        weight = weight_argument(type(self).__name__, "weight", weight, expected)
        self.weight, self.reduction = weight, reduction

    def forward(self, input: Tensor, target) -> Tensor:  # noqa: A002 - PyTorch's name
        op = type(self).__name__
        (probs, target), xp = _same_shape(op, input, ("target", target))
        x = probs.array
        y = target.array.astype(x.dtype, copy=False)
        if xp is np and not ((x >= 0) & (x <= 1)).all():  # NaN fails both comparisons
            bad = np.unique(x[~((x >= 0) & (x <= 1))])[:6].tolist()
            raise ValueError(
                f"{op}: input must be probabilities in [0, 1], got {bad}; apply a sigmoid "
                "first, or give the logits to BCEWithLogitsLoss"
            )
        with np.errstate(divide="ignore"):  # log(0) = -inf, clamped next
            log_x = xp.maximum(xp.log(x), LOG_FLOOR)
            log_not_x = xp.maximum(xp.log1p(-x), LOG_FLOOR)
        losses = -(y * log_x + (1 - y) * log_not_x)
        dx = (x - y) / xp.maximum(x * (1 - x), SLOPE_FLOOR)
        dy = log_not_x - log_x
        w = weight_for(op, "weight", self.weight, xp, x)
        if w is not None:
            losses, dx, dy = losses * w, dx * w, dy * w
        return reduced(
            "binary_cross_entropy",
            losses,
            self.reduction,
            (probs, target),
            (lambda dl, w=w: dl * dx, lambda dl: dl * dy),  # (w: for the second derivative)
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reduction={self.reduction!r})"


# ====================================================================== ranking, embeddings
class MarginRankingLoss(Layer):
    """Rank x1 above x2 where y = 1 and below where y = -1, by ``margin``, as
    ``torch.nn.MarginRankingLoss``, called ``loss(x1, x2, y)`` on three arrays of one shape:
    l = max(0, -y (x1 - x2) + margin). Where the hinge is active (>= 0, its kink included, as
    PyTorch): dl/dx1 = -y, dl/dx2 = y, dl/dy = -(x1 - x2); 0 elsewhere.
    """

    @checks.arguments(margin=checks.real, reduction=checks.one_of(REDUCTIONS))
    def __init__(self, margin: float = 0.0, *, reduction: str = "mean"):
        self.margin, self.reduction = margin, reduction

    def forward(self, input1: Tensor, input2, target) -> Tensor:
        op = type(self).__name__
        (x1, x2, y), xp = _same_shape(op, input1, ("input2", input2), ("target", target))
        diff = x1.array - x2.array
        signs = y.array.astype(diff.dtype, copy=False)
        hinge = self.margin - signs * diff
        active = hinge >= 0
        return reduced(
            "margin_ranking",
            xp.maximum(hinge, 0),
            self.reduction,
            (x1, x2, y),
            (
                lambda dl: -(dl * signs * active),
                lambda dl: dl * signs * active,
                lambda dl: -(dl * diff * active),
            ),
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(margin={self.margin}, reduction={self.reduction!r})"


class CosineEmbeddingLoss(Layer):
    """``tricycle.criteria.CosineEmbedding`` called as ``torch.nn.CosineEmbeddingLoss``:
    ``loss(x1, x2, y)`` with vectors x1, x2 (N, D) and labels y (N,) of 1 (pull together:
    1 - cos) or -1 (push apart: max(0, cos - margin))."""

    @checks.arguments(margin=checks.interval(-1, 1), reduction=checks.one_of(REDUCTIONS))
    def __init__(self, margin: float = 0.0, *, reduction: str = "mean"):
        self.fn = CosineEmbedding(margin, reduction)

    def forward(self, input1: Tensor, input2, target) -> Tensor:
        return self.fn(target, input1, input2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(margin={self.fn.margin}, reduction={self.fn.reduction!r})"


# ====================================================================== norms and distances
def vector_norm(x: Tensor, p: float = 2.0, dim: int = -1, keepdim: bool = False) -> Tensor:
    """(sum |x|^p)^(1/p) over the axis ``dim``, for a finite p >= 1, as
    ``torch.linalg.vector_norm``. d/dx = sign(x) (|x| / norm)^(p - 1): x / norm for p = 2,
    sign(x) for p = 1; 0 where the norm is 0 (as PyTorch)."""
    return _vector_norm("vector_norm", x, p, dim, keepdim)


def _vector_norm(op: str, x: Tensor, p: float, dim: int, keepdim: bool) -> Tensor:
    """``vector_norm``, its arguments checked in the name of ``op``."""
    check_float(op, x)
    checks.real(op, "p", p, 1)
    checks.boolean(op, "keepdim", keepdim)
    axis = checks.axis(op, "dim", dim, x.ndim, x.shape)
    xp, a = x.xp, x.array
    if p == 2:
        norm = xp.sqrt((a * a).sum(axis=axis, keepdims=True))
    elif p == 1:
        norm = xp.abs(a).sum(axis=axis, keepdims=True)
    else:
        norm = (xp.abs(a) ** p).sum(axis=axis, keepdims=True) ** (1 / p)

    def back_fn(dout):
        g = dout if keepdim else xp.expand_dims(dout, axis)  # (..., 1, ...)
        if p == 1:
            return g * xp.sign(a)
        safe = xp.where(norm > 0, norm, xp.ones((), dtype=norm.dtype))  # a = 0 where it is 0
        if p == 2:
            return g * (a / safe)
        return g * xp.sign(a) * (xp.abs(a) / safe) ** (p - 1)

    out = norm if keepdim else xp.squeeze(norm, axis)
    return unary_op(x, out, back_fn, "vector_norm")


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:  # noqa: A002
    """x / max(||x||_p, eps) along ``dim``, as ``torch.nn.functional.normalize`` (whose
    default axis is 1): ``vector_norm``, then a floor at eps, whose gradient passes where the
    norm is at least eps, then a division."""
    checks.positive("normalize", "eps", eps)
    x = as_tensor(input)
    return x / maximum_scalar(_vector_norm("normalize", x, p, dim, True), eps)


def cosine_similarity(x1: Tensor, x2, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along ``dim`` (default 1, as
    ``torch.nn.functional.cosine_similarity``), the two broadcast against each other:
    cos = sum(u v) with u = x1 / max(|x1|, eps) and v = x2 / max(|x2|, eps), each norm
    floored at eps as PyTorch does, so a zero vector has cosine 0.

    dcos/dx1 = (v - u cos) / |x1| where |x1| >= eps, v / eps below (where the floor holds
    the norm; PyTorch's gradient there goes on through the unfloored norm); the same for x2.
    """
    checks.positive("cosine_similarity", "eps", eps)
    x1 = as_tensor(x1)
    x2 = constant(x2, x1, "cosine_similarity")
    check_float("cosine_similarity (x1)", x1)
    check_float("cosine_similarity (x2)", x2)
    xp = check_same_device("cosine_similarity", x1.array, x2.array)
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(
            f"cosine_similarity: x1 {x1.shape} and x2 {x2.shape} must broadcast together"
        ) from None
    axis = checks.axis("cosine_similarity", "dim", dim, len(shape), shape)

    def unit(a):  # (a / n, n, whether the norm is above the floor), n (..., 1, ...)
        a = xp.broadcast_to(a, shape)
        norm = xp.sqrt((a * a).sum(axis=axis, keepdims=True))
        floored = xp.maximum(norm, eps)
        return a / floored, floored, norm >= eps

    (u, n1, free1), (v, n2, free2) = unit(x1.array), unit(x2.array)
    cos = (u * v).sum(axis=axis, keepdims=True)  # (..., 1, ...)

    def gradient(own, other, norm, free, like: Tensor):
        def back_fn(dout):
            g = xp.expand_dims(dout, axis)
            d = g * (other - own * (cos * free)) / norm
            return unbroadcast(d, like.shape).astype(like.dtype, copy=False)

        return back_fn

    return x1.new(
        xp.squeeze(cos, axis),
        args=(x1, x2),
        back_fns=(gradient(u, v, n1, free1, x1), gradient(v, u, n2, free2, x2)),
        name="cosine_similarity",
    )


def pairwise_distance(
    x1: Tensor, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """||x1 - x2 + eps||_p over the last axis, as ``torch.nn.functional.pairwise_distance``
    (the eps keeps the norm's gradient defined where x1 = x2): a difference, then
    ``vector_norm``."""
    checks.non_negative("pairwise_distance", "eps", eps)
    x1 = as_tensor(x1)
    difference = x1 - x2  # broadcast
    if difference.ndim == 0:
        raise ValueError("pairwise_distance: x1 and x2 need an axis of coordinates, got 0-d")
    return _vector_norm("pairwise_distance", difference + eps, p, -1, keepdim)


class CosineSimilarity(Layer):
    """``cosine_similarity(x1, x2, dim, eps)`` as a layer, as ``torch.nn.CosineSimilarity``."""

    @checks.arguments(dim=checks.integer, eps=checks.positive)
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Layer):
    """``pairwise_distance(x1, x2, p, eps, keepdim)`` as a layer, as
    ``torch.nn.PairwiseDistance``; p is a finite number >= 1."""

    @checks.arguments(
        p=checks.interval(1, math.inf), eps=checks.non_negative, keepdim=checks.boolean
    )
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        self.p, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2) -> Tensor:
        return pairwise_distance(x1, x2, self.p, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.p}, eps={self.eps}, keepdim={self.keepdim}"
