"""Two families on the unit interval, as torch's: ``Kumaraswamy(concentration1,
concentration0)`` and ``ContinuousBernoulli(probs | logits)``.

    Kumaraswamy(a, b):  log p(x) = log a + log b + (a - 1) log x + (b - 1) log(1 - x^a)
                        draw x = (1 - u^(1/b))^(1/a),  u ~ U(0, 1)
                        E[x^n] = b B(1 + n/a, b)
    ContinuousBernoulli(p): p(x) = C(p) p^x (1 - p)^(1 - x) on [0, 1],
                        C(p) = 2 artanh(1 - 2p) / (1 - 2p)   (2 at p = 1/2)
                        draw x = icdf(u), u ~ U(0, 1)

torch makes Kumaraswamy a ``TransformedDistribution`` of a uniform; here it is written out
(the same formulas and draws). Near p = 1/2 the continuous Bernoulli's closed forms divide
0 by 0, so inside ``lims`` (0.499, 0.501) its constant, mean and variance are torch's Taylor
polynomials in (p - 1/2), and its cdf and icdf the uniform's.
"""

import math

from tricycle import factories, ops
from tricycle.distributions import constraints
from tricycle.distributions.bernoulli import _bce_with_logits
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import rebuilt
from tricycle.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    value_tensor,
)
from tricycle.tensor import Tensor
from tricycle.torch_special import digamma, lgamma

_EULER = 0.57721566490153286060


class Kumaraswamy(Distribution):
    """Kumaraswamy(concentration1 a, concentration0 b) on (0, 1), a, b > 0 (broadcast)."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True
    expand_params = ("concentration1", "concentration0")

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(
            "Kumaraswamy", concentration1=concentration1, concentration0=concentration0
        )
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def _moment(self, n: int) -> Tensor:
        """E[x^n] = b exp(lgamma(1 + n/a) + lgamma(b) - lgamma(1 + n/a + b))."""
        a, b = self.concentration1, self.concentration0
        shifted = 1 + n / a
        return b * (lgamma(shifted) + lgamma(b) - lgamma(shifted + b)).exp()

    @property
    def mean(self) -> Tensor:
        return self._moment(1)

    @property
    def variance(self) -> Tensor:
        return self._moment(2) - self.mean**2

    @property
    def mode(self) -> Tensor:
        """torch's formula, exp(log(1 - b) / b - log(1 - a b)): NaN where a < 1 or b < 1."""
        a, b = self.concentration1, self.concentration0
        log_mode = (-b).log1p() / b - (-(a * b)).log1p()
        undefined = (b.array < 1) | (a.array < 1)
        return log_mode.masked_fill(undefined, math.nan).exp()

    def rsample(self, sample_shape=()) -> Tensor:
        like = self.concentration1
        u = factories.rand(self._extended_shape(sample_shape), dtype=like.dtype, device=like.device)
        a, b = self.concentration1, self.concentration0
        return (1 - u ** (1 / b)) ** (1 / a)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.concentration1)
        a, b = self.concentration1, self.concentration0
        return a.log() + b.log() + (a - 1) * value.log() + (b - 1) * (-(value**a)).log1p()

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic = digamma(b + 1) + _EULER
        return (1 - 1 / b) + (1 - 1 / a) * harmonic - a.log() - b.log()


class ContinuousBernoulli(Distribution):
    """The continuous Bernoulli on [0, 1] of ``probs`` in (0, 1) or ``logits`` (give one);
    ``lims`` the interval about 1/2 where its Taylor forms are used."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(
        self, probs=None, logits=None, lims=(0.499, 0.501), validate_args: bool | None = None
    ):
        if (probs is None) == (logits is None):
            given = "both" if probs is not None else "neither"
            raise ValueError(f"ContinuousBernoulli: give probs or logits, not both; got {given}")
        if probs is not None:
            (probs,) = broadcast_all("ContinuousBernoulli", probs=probs)
            self._param = self.probs = probs
        else:
            (self.logits,) = broadcast_all("ContinuousBernoulli", logits=logits)
            self._param = self.logits
        self._lims = tuple(lims)
        self._given = "probs" if probs is not None else "logits"
        super().__init__(self._param.shape, validate_args=validate_args)
        if probs is not None:  # checked as given, then kept off 0 and 1 (torch's)
            self.probs = self._param = clamp_probs(probs)

    def expand(self, batch_shape, _instance=None) -> "ContinuousBernoulli":
        given = self.__dict__[self._given]
        return rebuilt(self, batch_shape, lambda s: ContinuousBernoulli(
            **{self._given: given.expand(s)}, lims=self._lims, validate_args=False))  # fmt: skip

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The sigmoid of the logits, kept off 0 and 1 (torch's)."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape

    def _stable(self):
        """Where p lies outside ``lims``: the closed forms hold there."""
        p = self.probs.array
        return (p <= self._lims[0]) | (p > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """p outside ``lims``, the lower limit inside (where the closed forms are unused)."""
        return ops.where(self._stable(), self.probs, self._lims[0] + 0 * self.probs)

    def _log_normaliser(self) -> Tensor:
        """log C(p): log |log(1 - p) - log p| - log |1 - 2p|; its Taylor form near 1/2."""
        p = self._cut_probs()
        below = p.array <= 0.5
        one_minus_2p = ops.where(below, 1 - 2 * p, 2 * p - 1)  # |1 - 2p|, never 0
        log_norm = ((-p).log1p() - p.log()).abs().log() - one_minus_2p.log()
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ops.where(self._stable(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        p = self._cut_probs()
        closed = p / (2 * p - 1) + 1 / ((-p).log1p() - p.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x**2) * x
        return ops.where(self._stable(), closed, taylor)

    @property
    def variance(self) -> Tensor:
        p = self._cut_probs()
        closed = p * (p - 1) / (1 - 2 * p) ** 2 + 1 / ((-p).log1p() - p.log()) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ops.where(self._stable(), closed, taylor)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return self.icdf(factories.rand(shape, dtype=self.probs.dtype, device=self.probs.device))

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._param)
        logits, value = broadcast_all("ContinuousBernoulli.log_prob", logits=self.logits,
                                      value=value)  # fmt: skip
        return -_bce_with_logits(logits, value) + self._log_normaliser()

    def cdf(self, value) -> Tensor:
        value = self._value(value, self._param)
        p = self._cut_probs()
        closed = (p**value * (1 - p) ** (1 - value) + p - 1) / (2 * p - 1)
        inside = ops.where(self._stable(), closed, value + 0 * p)
        xp = inside.xp
        v = xp.broadcast_to(value.array, inside.shape)
        return ops.where(v <= 0, 0 * inside, ops.where(v >= 1, 0 * inside + 1, inside))

    def icdf(self, value) -> Tensor:
        value = value_tensor(self.probs, value)
        p = self._cut_probs()
        closed = ((-p + value * (2 * p - 1)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return ops.where(self._stable(), closed, value + 0 * p)

    def entropy(self) -> Tensor:
        log_p0, log_p1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._log_normaliser() - log_p0


__all__ = ["ContinuousBernoulli", "Kumaraswamy"]
