"""Invertible maps between spaces, as ``torch.distributions.transforms``: the pieces a
``TransformedDistribution`` pushes a base distribution's draws through.

A transform ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``; ``t.inv`` is its
inverse (``t.inv(y)``), and ``t.log_abs_det_jacobian(x, y)`` is log |dy/dx|, the term the
change of variables subtracts from a log-density:

    log p_Y(y) = log p_X(t^-1(y)) - log |det dt/dx|

Elementwise transforms (``ExpTransform``, ``AffineTransform``, ``SigmoidTransform``,
``TanhTransform``, ``SoftplusTransform``, ``PowerTransform``, ``AbsTransform``) give one term per
element; those over the last axes (``transforms_shaped``) one per event. ``sign`` (+1 or -1,
where the transform is monotone) lets a transformed ``cdf`` turn over. A transform made with
``cache_size=1`` keeps its last (x, y) pair, so that the log-density of a draw it just made
inverts exactly (``t.inv(t(x)) is x``), as torch's. Every formula is made of tricycle's
differentiable ops, so gradients flow through ``rsample`` and ``log_prob`` alike.
"""

import math

import numpy as np

from tricycle import checks, factories
from tricycle.distributions import constraints
from tricycle.distributions.transform import Transform
from tricycle.distributions.utils import broadcast_all, sum_rightmost
from tricycle.nn import functional as F
from tricycle.tensor import Tensor


class ExpTransform(Transform):
    """y = exp(x), from the reals onto the positive reals; log |dy/dx| = x."""

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, 1

    def __eq__(self, other) -> bool:
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """y = loc + scale * x (``loc`` and ``scale`` Tensors or numbers); ``event_dim`` last axes
    read as one event, over which log |scale| is summed."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = checks.non_negative_int("AffineTransform", "event_dim", event_dim)

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self):
        n = self._event_dim
        return constraints.real if n == 0 else constraints.independent(constraints.real, n)

    codomain = domain

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        if not isinstance(other, AffineTransform) or self._event_dim != other._event_dim:
            return False
        return all(_same(a, b) for a, b in ((self.loc, other.loc), (self.scale, other.scale)))

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return x * self.scale + self.loc

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, Tensor):
            term = self.scale.abs().log()
            term = term.expand(np.broadcast_shapes(term.shape, x.shape))
        else:
            term = factories.full(
                x.shape, math.log(abs(self.scale)), dtype=x.dtype, device=x.device
            )
        return sum_rightmost(term, self._event_dim)

    def forward_shape(self, shape):
        return np.broadcast_shapes(tuple(shape), _shape(self.loc), _shape(self.scale))

    inverse_shape = forward_shape

    def __repr__(self) -> str:
        return (
            f"AffineTransform(loc={self.loc!r}, scale={self.scale!r}, event_dim={self._event_dim})"
        )


class SigmoidTransform(Transform):
    """y = sigmoid(x), onto (0, 1), clamped a machine epsilon inside it so that the inverse
    (the logit) stays finite; log |dy/dx| = -softplus(-x) - softplus(x)."""

    domain, codomain, bijective, sign = constraints.real, constraints.unit_interval, True, 1

    def __eq__(self, other) -> bool:
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        info = np.finfo(x.dtype)
        return x.sigmoid().clamp(min=float(info.tiny), max=float(1 - info.eps))

    def _inverse(self, y):
        info = np.finfo(y.dtype)
        y = y.clamp(min=float(info.tiny), max=float(1 - info.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x), onto (-1, 1); log |dy/dx| = 2 (log 2 - x - softplus(-2x)), torch's
    stable form of log(1 - tanh(x)^2)."""

    domain, codomain = constraints.real, constraints.interval(-1.0, 1.0)
    bijective, sign = True, 1

    def __eq__(self, other) -> bool:
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return (y.log1p() - (-y).log1p()) * 0.5  # atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return (math.log(2.0) - x - F.softplus(x * -2.0)) * 2.0


class SoftplusTransform(Transform):
    """y = log(1 + exp(x)), onto the positive reals; x = log(expm1(y)) = y + log(-expm1(-y));
    log |dy/dx| = -softplus(-x)."""

    domain, codomain, bijective, sign = constraints.real, constraints.positive, True, 1

    def __eq__(self, other) -> bool:
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return (-(-y).expm1()).log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class AbsTransform(Transform):
    """y = |x|: not a bijection (its ``inv`` returns y, the positive preimage), so it has no
    log-Jacobian; ``HalfNormal`` and ``HalfCauchy`` fold their densities themselves."""

    domain, codomain = constraints.real, constraints.positive

    def __eq__(self, other) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals; log |dy/dx| = log |exponent y / x|."""

    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size: int = 0):
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all("PowerTransform", exponent=exponent)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else PowerTransform(self.exponent, cache_size)

    def __eq__(self, other) -> bool:
        return isinstance(other, PowerTransform) and _same(self.exponent, other.exponent)

    __hash__ = object.__hash__

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return np.broadcast_shapes(tuple(shape), self.exponent.shape)

    inverse_shape = forward_shape


def _shape(value) -> tuple[int, ...]:
    """A parameter's shape: a Tensor's, () for a number."""
    return value.shape if isinstance(value, Tensor) else ()


def _same(a, b) -> bool:
    """Whether two parameters (numbers or Tensors) are equal everywhere."""
    if isinstance(a, Tensor) or isinstance(b, Tensor):
        if a is b:
            return True
        a_array, b_array = getattr(a, "array", a), getattr(b, "array", b)
        return bool((a_array == b_array).all())
    return a == b


__all__ = [
    "AbsTransform",
    "AffineTransform",
    "ExpTransform",
    "PowerTransform",
    "SigmoidTransform",
    "SoftplusTransform",
    "TanhTransform",
]
