"""Families made by transforming a simpler one, as torch's:

    HalfNormal(scale)          |x|, x ~ Normal(0, scale)
    HalfCauchy(scale)          |x|, x ~ Cauchy(0, scale)
    LogNormal(loc, scale)      exp(x), x ~ Normal(loc, scale)
    LogisticNormal(loc, scale) stick-breaking(x), x ~ Normal(loc, scale) over the last axis
    Gumbel(loc, scale)         loc - scale log(-log u), u ~ Uniform(tiny, 1 - eps)
    Weibull(scale, k)          scale e^(1/k), e ~ Exponential(1)
    Pareto(scale, alpha)       scale exp(e), e ~ Exponential(alpha)

Draws, ``rsample`` (reparameterised through the base's), log-densities, ``cdf`` and ``icdf``
come from ``TransformedDistribution``; the moments and entropies are closed forms. The folded
families (|x| is not a bijection) fold their densities themselves: log p(x) = log 2 +
log p_base(x) for x >= 0, -inf below.
"""

import math

import numpy as np

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.normal import Normal
from tricycle.distributions.simple_families import Cauchy, Exponential, _probability
from tricycle.distributions.transformed_distribution import TransformedDistribution
from tricycle.distributions.transforms_elementwise import (
    AbsTransform,
    AffineTransform,
    ExpTransform,
    PowerTransform,
)
from tricycle.distributions.transforms_shaped import StickBreakingTransform
from tricycle.distributions.uniform import Uniform
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor

EULER_GAMMA = 0.57721566490153286061


def _full(like: Tensor, value: float) -> Tensor:
    """``value`` in like's shape, dtype and device, with no gradient."""
    return factories.full(like.shape, value, dtype=like.dtype, device=like.device)


class _Folded(TransformedDistribution):
    """|x| for x from a symmetric base about 0 of parameter ``scale``: the folded density."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    expand_params = ("scale",)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.scale)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        below = value.xp.broadcast_to(value.array < 0, log_prob.shape)
        return log_prob.masked_fill(below, -math.inf)

    def cdf(self, value) -> Tensor:
        value = self._value(value, self.scale)
        return self.base_dist.cdf(value) * 2 - 1

    def icdf(self, prob) -> Tensor:
        prob = _probability(self, self.scale, prob, type(self).__name__)
        return self.base_dist.icdf((prob + 1) * 0.5)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """The absolute value of a Normal(0, scale) draw (scale > 0)."""

    def __init__(self, scale, validate_args: bool | None = None):
        (self.scale,) = broadcast_all("HalfNormal", scale=scale)
        base = Normal(0.0, self.scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        return factories.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class HalfCauchy(_Folded):
    """The absolute value of a Cauchy(0, scale) draw (scale > 0); its mean and variance are
    inf, as torch's."""

    def __init__(self, scale, validate_args: bool | None = None):
        (self.scale,) = broadcast_all("HalfCauchy", scale=scale)
        base = Cauchy(0.0, self.scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _full(self.scale, math.inf)

    @property
    def mode(self) -> Tensor:
        return factories.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        return _full(self.scale, math.inf)


class LogNormal(TransformedDistribution):
    """exp(x) for x ~ Normal(loc, scale) (scale > 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all("LogNormal", loc=loc, scale=scale)
        base = Normal(self.loc, self.scale, validate_args=False)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return (self.loc + self.scale.pow(2) * 0.5).exp()

    @property
    def mode(self) -> Tensor:
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return s2.expm1() * (self.loc * 2 + s2).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class LogisticNormal(TransformedDistribution):
    """The stick-breaking image of Normal(loc, scale) draws over the last axis: a point of
    the simplex of one more entry than loc's last axis (scale > 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        base = Normal(loc, scale, validate_args=False)
        if not base.batch_shape:
            base = base.expand((1,))
        self.loc, self.scale = base.loc, base.scale
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution: loc - scale log(-log u) (scale > 0).

    log p(x) = z - exp(z) - log scale, z = (loc - x) / scale
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all("Gumbel", loc=loc, scale=scale)
        info = np.finfo(self.loc.dtype)
        base = Uniform(_full(self.loc, float(info.tiny)), _full(self.loc, float(1 - info.eps)),
                       validate_args=False)  # fmt: skip
        transforms = [ExpTransform().inv, AffineTransform(0.0, -factories.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]  # fmt: skip
        super().__init__(base, transforms, validate_args=validate_args)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale * (math.pi / math.sqrt(6))

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + EULER_GAMMA)


class Weibull(TransformedDistribution):
    """Weibull(scale, concentration k): scale e^(1/k) for e ~ Exponential(1) (both > 0)."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True
    expand_params = ("scale", "concentration")

    def __init__(self, scale, concentration, validate_args: bool | None = None):
        self.scale, self.concentration = broadcast_all("Weibull", scale=scale,
                                                       concentration=concentration)  # fmt: skip
        base = Exponential(factories.ones_like(self.scale), validate_args=False)
        with np.errstate(divide="ignore"):  # a concentration of 0 is refused just below
            inverse = self.concentration.reciprocal()
        transforms = [PowerTransform(inverse), AffineTransform(0.0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * (1 + self.concentration.reciprocal()).lgamma().exp()

    @property
    def mode(self) -> Tensor:
        """scale ((k - 1) / k)^(1/k): NaN for k < 1, as torch's."""
        k = self.concentration
        with np.errstate(invalid="ignore"):
            return self.scale * ((k - 1) / k).pow(k.reciprocal())

    @property
    def variance(self) -> Tensor:
        inverse = self.concentration.reciprocal()
        second = (1 + inverse * 2).lgamma().exp()
        return self.scale.pow(2) * (second - ((1 + inverse).lgamma() * 2).exp())

    def entropy(self) -> Tensor:
        inverse = self.concentration.reciprocal()
        return (1 - inverse) * EULER_GAMMA + (self.scale * inverse).log() + 1


class Pareto(TransformedDistribution):
    """Pareto(scale, alpha): scale exp(e) for e ~ Exponential(alpha) (both > 0), on
    [scale, inf); its mean is inf for alpha <= 1 and its variance for alpha <= 2."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True
    expand_params = ("scale", "alpha")

    def __init__(self, scale, alpha, validate_args: bool | None = None):
        self.scale, self.alpha = broadcast_all("Pareto", scale=scale, alpha=alpha)
        base = Exponential(self.alpha, validate_args=False)
        transforms = [ExpTransform(), AffineTransform(0.0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        with np.errstate(divide="ignore"):
            return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        with np.errstate(divide="ignore"):
            return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


__all__ = ["Gumbel", "HalfCauchy", "HalfNormal", "LogNormal", "LogisticNormal", "Pareto", "Weibull"]
