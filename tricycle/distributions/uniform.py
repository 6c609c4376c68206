"""The uniform distribution on [low, high), as ``torch.distributions.Uniform``.

    log p(x) = -log(high - low) inside [low, high), -inf outside
    entropy  = log(high - low)

``rsample`` is low + u (high - low) with u ~ U[0, 1) drawn apart from the parameters:
d(draw)/d(low) = 1 - u and d(draw)/d(high) = u.
"""

import math

import numpy as np

from tricycle import factories, unary
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import broadcast_all, nan_like, value_tensor
from tricycle.tensor import Tensor


class Uniform(Distribution):
    """U[low, high), batched over the broadcast shape of ``low`` and ``high`` (Tensors or
    numbers; low < high)."""

    has_rsample = True
    expand_params = ("low", "high")

    def __init__(self, low, high, validate_args: bool | None = None):
        self.low, self.high = broadcast_all("Uniform", low=low, high=high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) * 0.5

    @property
    def mode(self) -> Tensor:
        """Every point is a mode: NaN, as torch's."""
        return nan_like(self._batch_shape, self.high)

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) * (1 / math.sqrt(12))

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 * (1 / 12)

    def rsample(self, sample_shape=()) -> Tensor:
        """low + u (high - low), u ~ U[0, 1) of shape sample_shape + batch_shape."""
        shape = self._extended_shape(sample_shape)
        u = factories.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.low)
        xp = value.xp
        inside = (self.low.array <= value.array) & (value.array < self.high.array)
        with np.errstate(divide="ignore"):  # log 0 = -inf outside [low, high): no gradient
            outside = xp.log(inside.astype(self.low.dtype))
        return -unary.log(self.high - self.low) + outside

    def cdf(self, value) -> Tensor:
        """(value - low) / (high - low), clamped into [0, 1]."""
        value = self._value(value, self.low)
        return unary.clip((value - self.low) / (self.high - self.low), 0.0, 1.0)

    def icdf(self, value) -> Tensor:
        """low + value (high - low): the quantile of the probability ``value``."""
        value = value_tensor(self.low, value)
        if self._validate_args:
            self._check(constraints.unit_interval, value, "Uniform.icdf: value", "lie in")
        return self.low + value * (self.high - self.low)

    def entropy(self) -> Tensor:
        return unary.log(self.high - self.low)


__all__ = ["Uniform"]
