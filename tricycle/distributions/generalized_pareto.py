"""The generalised Pareto distribution GPD(loc, scale, concentration xi), as torch's (after
TensorFlow Probability's): the law of the excesses over a high threshold. With
z = (x - loc) / scale,

    log p(x) = -log scale - (1 / xi + 1) log(1 + xi z)    (xi = 0: -log scale - z)
    survival = (1 + xi z)^(-1 / xi)                         (xi = 0: exp(-z))
    icdf(u)  = loc + scale / xi expm1(-xi log(1 - u))       (xi = 0: loc - scale log(1 - u))
    mean     = loc + scale / (1 - xi) for xi < 1, else NaN
    variance = scale^2 / ((1 - xi)^2 (1 - 2 xi)) for xi < 1/2, else NaN
    entropy  = log scale + xi + 1

on the support [loc, loc - scale / xi] for xi < 0 and [loc, inf) otherwise. xi = 0 is the
exponential, xi = -1 the uniform. A concentration within torch's ``isclose`` of 0 takes the
xi = 0 forms; ``rsample`` is the icdf of uniform noise, so gradients flow through draws.
"""

import math

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.simple_families import _probability, _uniform
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor
from tricycle.torch_functions import isclose, where


class GeneralizedPareto(Distribution):
    """GPD(loc, scale, concentration): Tensors or numbers, broadcast; scale > 0."""

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "concentration": constraints.real,
    }
    has_rsample = True
    expand_params = ("loc", "scale", "concentration")

    def __init__(self, loc, scale, concentration, validate_args: bool | None = None):
        self.loc, self.scale, self.concentration = broadcast_all(
            "GeneralizedPareto", loc=loc, scale=scale, concentration=concentration
        )
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        negative = self.concentration < 0
        xi = where(negative, self.concentration, -1.0)  # no division by a zero xi
        upper = where(negative, self.loc - self.scale / xi, math.inf)
        return constraints.interval(self.loc, upper)

    def _safe_concentration(self):
        """(xi == 0 within isclose, xi with 1 where it is 0): the branches stay finite."""
        is_zero = isclose(self.concentration, factories.zeros_like(self.concentration))
        return is_zero, where(is_zero, factories.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.icdf(_uniform(self.loc, self._extended_shape(sample_shape)))

    def log_prob(self, value) -> Tensor:
        z = (self._value(value, self.loc) - self.loc) / self.scale
        is_zero, xi = self._safe_concentration()
        power = 1 / xi + factories.ones_like(z)
        nonzero = where(power == 0, power, power * (xi * z).log1p())
        return -self.scale.log() - where(is_zero, z, nonzero)

    def log_survival_function(self, value) -> Tensor:
        """log P(X > value)."""
        z = (self._value(value, self.loc) - self.loc) / self.scale
        is_zero, xi = self._safe_concentration()
        return where(is_zero, -z, -(xi * z).log1p() / xi)

    def log_cdf(self, value) -> Tensor:
        """log P(X <= value)."""
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value) -> Tensor:
        log_u = (-_probability(self, self.loc, value, "GeneralizedPareto")).log1p()
        is_zero, xi = self._safe_concentration()
        nonzero = self.loc + self.scale / xi * (-xi * log_u).expm1()
        return where(is_zero, self.loc - self.scale * log_u, nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        xi = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        xi = where(valid, self.concentration, 0.25)
        return where(valid, self.scale**2 / ((1 - xi) ** 2 * (1 - 2 * xi)), math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(self._batch_shape)


__all__ = ["GeneralizedPareto"]
