"""Alpha dropout, torch's ``AlphaDropout`` and ``FeatureAlphaDropout`` (and ``F.alpha_dropout``,
``F.feature_alpha_dropout``): dropout for self-normalising networks (SELU), which keeps the
mean and variance of a standard input. A dropped value is set to SELU's negative saturation
-alpha' (alpha' = SELU's scale * alpha), not 0, and an affine map a (.) + b restores the
moments (Klambauer et al. 2017), as ATen computes it:

    a = ((1 - p) (1 + p alpha'^2))^(-1/2)
    y = a x + alpha' a p           where kept    (keep ~ Bernoulli(1 - p))
    y = alpha' a (p - 1)           where dropped
    dx = a dy keep

The feature form draws one keep per (sample, channel) of (N, C, ...) and keeps or drops the
channel whole. Out of training, or for p = 0, each is the identity; for p = 1 zeros, as torch.
The mask comes from a numpy Generator (the layer's own, or ``rng``), as ``Dropout``'s.
"""

import numpy as np

from tricycle import checks, random, rebase
from tricycle.module import Layer
from tricycle.nn.activations import SELU_ALPHA, SELU_SCALE
from tricycle.tensor import Tensor, as_tensor, check_float
from tricycle.unary import unary_op

__all__ = ["AlphaDropout", "FeatureAlphaDropout", "alpha_dropout", "feature_alpha_dropout"]

SATURATION = SELU_ALPHA * SELU_SCALE  # alpha': SELU's limit at -infinity is -alpha'


def _alpha_dropout(op: str, input, p, training, inplace, rng, feature: bool) -> Tensor:  # noqa: A002
    checks.real(op, "p", p, 0, 1)
    checks.boolean(op, "training", training)
    checks.boolean(op, "inplace", inplace)  # the result written into the input, as torch's
    x = as_tensor(input)
    check_float(op, x)
    if feature and x.ndim < 2:
        checks.fail(op, "input's shape", "(N, C, ...): at least 2 dimensions", x.shape)
    if not training or p == 0 or x.size == 0:
        return x
    if p == 1:  # every element dropped: zeros, with a zero gradient, as torch
        return rebase.written_if(inplace, x, op, lambda v: v * 0.0)
    rng = rng or np.random.default_rng(random.draw_seed())
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if feature else x.shape
    draw = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    keep = x.xp.asarray(rng.random(shape, dtype=draw) >= p)
    a = ((1 - p) * (1 + p * SATURATION**2)) ** -0.5
    scale = (keep * a).astype(x.dtype)
    shift = x.xp.where(keep, SATURATION * a * p, SATURATION * a * (p - 1)).astype(x.dtype)

    def dropped(v):
        return unary_op(v, v.array * scale + shift, lambda dout: dout * scale, op)

    return rebase.written_if(inplace, x, op, dropped)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False, *,  # noqa: A002
                  rng: np.random.Generator | None = None) -> Tensor:  # fmt: skip
    """torch's ``F.alpha_dropout`` (note torch's default ``training=False``): each element
    dropped with probability p to SELU's saturation, the rest mapped to keep the moments."""
    return _alpha_dropout("F.alpha_dropout", input, p, training, inplace, rng, feature=False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False, *,
                          rng: np.random.Generator | None = None) -> Tensor:  # fmt: skip
    """torch's ``F.feature_alpha_dropout``: alpha dropout of whole channels of (N, C, ...)."""
    return _alpha_dropout("F.feature_alpha_dropout", input, p, training, inplace, rng, True)


class AlphaDropout(Layer):
    """torch's ``nn.AlphaDropout(p=0.5, inplace=False)``: ``F.alpha_dropout`` in training, the
    identity in eval mode; ``seed`` seeds the layer's generator (by default drawn from
    tricycle's, so ``tricycle.manual_seed`` reproduces the masks)."""

    feature = False

    @checks.arguments(p=checks.probability, inplace=checks.boolean, seed=checks.seed)
    def __init__(self, p: float = 0.5, inplace: bool = False, *, seed: int | None = None):
        self.p, self.inplace = p, inplace
        self.rng = np.random.default_rng(random.draw_seed() if seed is None else seed)

    def forward(self, x: Tensor) -> Tensor:
        op = f"{type(self).__name__}"
        return _alpha_dropout(op, x, self.p, self.training, False, self.rng, self.feature)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class FeatureAlphaDropout(AlphaDropout):
    """torch's ``nn.FeatureAlphaDropout(p=0.5, inplace=False)``: ``F.feature_alpha_dropout``
    in training, the identity in eval mode."""

    feature = True
