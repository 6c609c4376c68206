"""Three continuous families with closed forms throughout, as torch's:

    Exponential(rate):      log p(x) = log rate - rate x (x >= 0)
                            entropy  = 1 - log rate;   cdf 1 - exp(-rate x)
    Laplace(loc, scale):    log p(x) = -log(2 scale) - |x - loc| / scale
                            entropy  = 1 + log(2 scale)
    Cauchy(loc, scale):     log p(x) = -log pi - log scale - log(1 + ((x - loc) / scale)^2)
                            entropy  = log(4 pi scale);  mean NaN, variance inf

Each ``rsample`` is the inverse cdf of uniform noise drawn apart from the parameters, so the
gradient flows through the draw: Exponential's -log(1 - u) / rate, Laplace's loc - scale
sign(u) log(1 - |u|) with u in (eps - 1, 1), Cauchy's loc + scale tan(pi (u - 1/2)).
"""

import math

import numpy as np

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.distribution import CentredAtLoc, Distribution
from tricycle.distributions.utils import broadcast_all, value_tensor
from tricycle.tensor import Tensor


def _uniform(like: Tensor, shape: tuple) -> Tensor:
    """U[0, 1) noise of ``shape``, in like's dtype and device, with no gradient."""
    return factories.rand(shape, dtype=like.dtype, device=like.device)


def _probability(dist: Distribution, like: Tensor, value, owner: str) -> Tensor:
    """A probability given to ``icdf`` as a Tensor, checked to lie in [0, 1]."""
    value = value_tensor(like, value)
    if dist._validate_args:
        dist._check(constraints.unit_interval, value, f"{owner}.icdf: value", "lie in")
    return value


class Exponential(Distribution):
    """Exponential(rate): the waiting time of events at ``rate`` per unit (rate > 0)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    expand_params = ("rate",)

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all("Exponential", rate=rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return factories.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()) -> Tensor:
        """-log(1 - u) / rate, u ~ U[0, 1): d(draw)/d(rate) = -draw / rate."""
        u = _uniform(self.rate, self._extended_shape(sample_shape))
        return -(-u).log1p() / self.rate

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.rate)
        return self.rate.log() - self.rate * value

    def cdf(self, value) -> Tensor:
        value = self._value(value, self.rate)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value) -> Tensor:
        value = _probability(self, self.rate, value, "Exponential")
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()


class Laplace(CentredAtLoc):
    """Laplace(loc, scale): a double-sided exponential about ``loc`` (scale > 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all("Laplace", loc=loc, scale=scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def stddev(self) -> Tensor:
        return self.scale * math.sqrt(2)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * 2

    def rsample(self, sample_shape=()) -> Tensor:
        """loc - scale sign(u) log(1 - |u|), u ~ U(eps - 1, 1) (eps keeps the log finite)."""
        eps = float(np.finfo(self.loc.dtype).eps)
        u = _uniform(self.loc, self._extended_shape(sample_shape)) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        return -(self.scale * 2).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value) -> Tensor:
        value = self._value(value, self.loc)
        z = value - self.loc
        return 0.5 - z.sign() * (-z.abs() / self.scale).expm1() * 0.5

    def icdf(self, value) -> Tensor:
        term = _probability(self, self.loc, value, "Laplace") - 0.5
        return self.loc - self.scale * term.sign() * (term.abs() * -2).log1p()

    def entropy(self) -> Tensor:
        return 1 + (self.scale * 2).log()


class Cauchy(Distribution):
    """Cauchy(loc, scale): the ratio of two standard normals, shifted and scaled (scale > 0);
    it has no mean (NaN) and no finite variance (inf), as torch's."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all("Cauchy", loc=loc, scale=scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return factories.full(self._extended_shape(), math.nan, dtype=self.loc.dtype,
                              device=self.loc.device)  # fmt: skip

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return factories.full(self._extended_shape(), math.inf, dtype=self.loc.dtype,
                              device=self.loc.device)  # fmt: skip

    def rsample(self, sample_shape=()) -> Tensor:
        """loc + scale tan(pi (u - 1/2)), u ~ U[0, 1)."""
        u = _uniform(self.loc, self._extended_shape(sample_shape))
        return self.loc + ((u - 0.5) * math.pi).tan() * self.scale

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value) -> Tensor:
        value = self._value(value, self.loc)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value) -> Tensor:
        value = _probability(self, self.loc, value, "Cauchy")
        return ((value - 0.5) * math.pi).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return self.scale.log() + math.log(4 * math.pi)


__all__ = ["Cauchy", "Exponential", "Laplace"]
