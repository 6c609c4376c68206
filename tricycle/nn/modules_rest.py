"""torch.nn's remaining modules: the deprecated ``Container`` and ``NLLLoss2d``, the legacy
``CrossMapLRN2d`` and ``LinearCrossEntropyLoss`` (a Linear layer fused with the cross
entropy, ``F.linear_cross_entropy``).

``CrossMapLRN2d`` is Lua Torch's cross-channel normalisation, which torch keeps beside
``LocalResponseNorm`` with its own window, y = x (k + alpha / size * s)^-beta, where s sums
the squares of the channels of a running window: with p = (size - 1) // 2 + 1, channel c
sums channels 0 .. c + p - 1 while c <= p, and c - p + 1 .. c + p - 1 after (clipped to
the channels), plus channel 0, which torch's running sum never takes out. The sums are
one (C, C) 0/1 matrix applied by an einsum, so the gradient is the forward's own.
"""

import dataclasses
import math
import warnings

from tricycle import checks
from tricycle.einsum import einsum
from tricycle.layers import Dense
from tricycle.module import Layer
from tricycle.nn.functional_losses import nll_loss
from tricycle.nn.functional_rest import linear_cross_entropy
from tricycle.nn.losses import NLLLoss
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["Container", "CrossMapLRN2d", "LinearCrossEntropyLoss", "LinearCrossEntropyOptions",
           "NLLLoss2d"]  # fmt: skip


class Container(Layer):
    """torch's deprecated ``nn.Container(**modules)``: a layer holding the given modules
    under their keywords. Warns as torch does (subclass ``nn.Module`` instead)."""

    def __init__(self, **kwargs):
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in "
            "`nn.Module`. Subclass that instead.",
            FutureWarning,
            stacklevel=3,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)


class NLLLoss2d(NLLLoss):
    """torch's deprecated ``nn.NLLLoss2d``: ``NLLLoss`` with torch's positional arguments
    (weight, size_average, ignore_index, reduce, reduction), with torch's FutureWarning."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):  # fmt: skip
        warnings.warn(
            "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
            "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for "
            "more details.",
            FutureWarning,
            stacklevel=3,
        )
        super().__init__(ignore_index=ignore_index, reduction=reduction)
        self.weight, self.ignore_index, self.reduction = weight, ignore_index, reduction
        self.size_average, self.reduce = size_average, reduce

    def forward(self, input, target) -> Tensor:  # noqa: A002 - torch's name
        return nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                        reduction=self.reduction, size_average=self.size_average,
                        reduce=self.reduce)  # fmt: skip


class CrossMapLRN2d(Layer):
    """torch's ``nn.CrossMapLRN2d(size, alpha=1e-4, beta=0.75, k=1)`` of (N, C, H, W) inputs
    (see the module docstring for its window, which is not ``LocalResponseNorm``'s)."""

    @checks.arguments(size=checks.positive_int, alpha=checks.real, beta=checks.real, k=checks.real)
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input) -> Tensor:  # noqa: A002 - torch's name
        x = as_tensor(input)
        check_float("CrossMapLRN2d", x)
        if x.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {x.ndim}D instead.")
        window = x.new(_window(x.xp, x.shape[1], self.size, x.dtype), requires_grad=False)
        sums = einsum("cj,njhw->nchw", window, x * x)
        return x * (sums * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _window(xp, C: int, size: int, dtype):
    """M (C, C): M[c, j] = 1 where channel c's sum takes channel j (see the module doc)."""
    p = (size - 1) // 2 + 1
    c, j = xp.arange(C)[:, None], xp.arange(C)[None, :]
    low = xp.where(c <= p, 0, c - p + 1)
    taken = (j >= low) & (j <= c + p - 1)
    taken = taken | ((j == 0) & (c > p))  # the running sum never drops channel 0
    return taken.astype(dtype)


class LinearCrossEntropyLoss(Layer):
    """torch's ``nn.LinearCrossEntropyLoss(in_features, num_classes, *, out_features=(),
    bias=False, reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0,
    options=None)``: a ``linear`` (``Linear(in_features, num_classes * prod(out_features))``,
    torch's flat storage) read as (C, *out_features, in_features) and
    ``F.linear_cross_entropy`` of its logits. ``options`` (torch's chunking, a memory
    saving with the same numbers) is kept and not used."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (),
                 bias: bool = False, reduction: str = "mean", weight=None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options=None):  # fmt: skip
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(
                f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}"
            )
        if not 0 <= label_smoothing <= 1:
            raise RuntimeError(
                f"expected label_smoothing to be in range [0, 1], got {label_smoothing}"
            )
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.reduction, self.weight, self.ignore_index = reduction, weight, ignore_index
        self.label_smoothing, self.options = label_smoothing, options
        self.linear = Dense(in_features, math.prod(self.out_features, start=num_classes), bias)

    def forward(self, input, target) -> Tensor:  # noqa: A002 - torch's name
        dense = self.linear
        w = dense.weights.transpose(1, 0)  # tricycle's (in, out) as torch's (out, in)
        w = w.reshape(self.num_classes, *self.out_features, w.shape[-1])
        b = getattr(dense, "bias", None)
        b = None if b is None else b.reshape(self.num_classes, *self.out_features)
        return linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight,
                                    reduction=self.reduction, ignore_index=self.ignore_index,
                                    label_smoothing=self.label_smoothing)  # fmt: skip


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """torch's ``nn.LinearCrossEntropyOptions``: how torch chunks ``linear_cross_entropy``'s
    batch to save memory (the numbers are the reference path's). Checked as torch's, then
    kept and not used: tricycle evaluates the reference path."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method not in (None, "auto"):
            name, _, factor = self.chunking_method.partition(":")
            if not (name == "aspect_ratio" and (factor or "1").isdigit() and int(factor or 1)):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (checks.is_integer(size) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
