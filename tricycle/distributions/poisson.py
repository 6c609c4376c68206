"""The Poisson distribution: the count of events in a unit of time at ``rate`` events per
unit, as ``torch.distributions.Poisson``.

    log p(k) = k log(rate) - rate - log(k!)

where k log(rate) is 0 for k = 0 (at rate 0 too, as torch's ``xlogy``), so its gradient
reaches the rate (k / rate - 1) and no NaN comes from 0 log 0 (torch's gradient at rate 0
and k = 0 is NaN, its xlogy's 0 / 0; this one is -1). The counts' term log(k!) has no
gradient (k is a count). Draws are counts in the rate's dtype, from tricycle's generator on
the host, with no gradient (no ``rsample``); d2l's appendix draws them as
``torch.distributions.poisson.Poisson(lam).sample((10, 10))``.
"""

import math

import numpy as np

from tricycle import backend, random, unary
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor


class Poisson(Distribution):
    """Poisson(rate), batched over the shape of ``rate`` (a Tensor or a number, >= 0)."""

    arg_constraints = {"rate": constraints.interval(0.0, float("inf"))}
    support = constraints.integer_interval(0, float("inf"))

    def __init__(self, rate, validate_args: bool | None = None):
        (self.rate,) = broadcast_all("Poisson", rate=rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        """floor(rate), as torch's."""
        return self.rate.new(self.rate.xp.floor(self.rate.array), requires_grad=False)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape=()) -> Tensor:
        """Counts of shape sample_shape + batch_shape, in the rate's dtype and device."""
        shape = self._extended_shape(sample_shape)
        rate = np.broadcast_to(backend.to_host_array(self.rate.array), shape)
        counts = random.generator().poisson(rate, shape).astype(self.rate.dtype)
        device = self.rate.array.device.id if self.rate.on_gpu else None
        return self.rate.new(backend.move(counts, device), requires_grad=False)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.rate)
        rate, value = broadcast_all("Poisson.log_prob", rate=self.rate, value=value)
        xp = rate.xp
        # k log(rate), 0 where k = 0: the rate there is read as 1 in the log (no gradient)
        none = rate.new((value.array == 0).astype(rate.dtype), requires_grad=False)
        safe = rate * (1 - none) + none
        host = backend.to_host_array(value.array).astype(np.float64)
        log_factorial = np.vectorize(math.lgamma, otypes=[np.float64])(host + 1)
        constant = rate.new(xp.asarray(log_factorial, dtype=rate.dtype), requires_grad=False)
        return value * unary.log(safe) - rate - constant


__all__ = ["Poisson"]
