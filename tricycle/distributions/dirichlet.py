"""The Dirichlet distribution over the probability vectors of K classes, and the Beta
distribution (a Dirichlet of two classes, read at the first), as torch's.

    Dirichlet(c): log p(x) = sum_k (c_k - 1) log x_k + lgamma(c_0) - sum_k lgamma(c_k)
                  entropy  = sum_k lgamma(c_k) - lgamma(c_0) - (K - c_0) digamma(c_0)
                             - sum_k (c_k - 1) digamma(c_k)          (c_0 = sum_k c_k)

A draw normalises K independent gamma draws, g_k ~ Gamma(c_k, 1): x = g / sum g. Each g_k is
reparameterised implicitly (``gamma.standard_gamma``), so the gradient flows through the
normalisation to every c_k. torch differentiates its Dirichlet draws another way (through
the Beta marginals' quantiles): both estimators are unbiased, but draw by draw they differ.
"""

import numpy as np

from tricycle import ops
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import rebuilt, standard_gamma
from tricycle.distributions.utils import broadcast_all, parameter
from tricycle.tensor import Tensor
from tricycle.torch_pointwise import xlogy
from tricycle.torch_special import digamma, lgamma


class Dirichlet(Distribution):
    """Dirichlet(concentration): ``concentration`` (..., K) > 0; the batch is its leading axes,
    the event a probability vector of K entries."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args: bool | None = None):
        self.concentration = parameter("Dirichlet", "concentration", concentration, min_ndim=1)
        shape = self.concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Dirichlet":
        c = self.concentration
        return rebuilt(self, batch_shape, lambda s: Dirichlet(
            c.expand(s + c.shape[-1:]), validate_args=False))  # fmt: skip

    @property
    def mean(self) -> Tensor:
        c = self.concentration
        return c / c.sum(axis=-1, keepdims=True)

    @property
    def mode(self) -> Tensor:
        """(c - 1)^+ normalised; where every c_k < 1 (no interior mode), the one-hot vector of
        the first class, as torch's (its argmax over a row of 0 / 0)."""
        excess = (self.concentration - 1).clamp(min=0)
        xp, c = excess.xp, self.concentration.array
        below = xp.all(c < 1, axis=-1, keepdims=True)
        mode = excess / excess.sum(axis=-1, keepdims=True).masked_fill(below, 1.0)
        first = xp.broadcast_to(xp.arange(c.shape[-1]) == 0, c.shape).astype(c.dtype)
        return _where(below, first, mode)

    @property
    def variance(self) -> Tensor:
        c = self.concentration
        total = c.sum(axis=-1, keepdims=True)
        return c * (total - c) / (total**2 * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        """Normalised gamma draws, of shape sample_shape + batch_shape + (K,)."""
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        draw = gammas / gammas.sum(axis=-1, keepdims=True)
        tiny, high = np.finfo(draw.dtype).tiny, 1 - np.finfo(draw.dtype).eps
        draw.array[...] = draw.xp.clip(draw.array, tiny, high)  # as torch's: kept off 0 and 1
        return draw

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.concentration)
        c = self.concentration
        return xlogy(c - 1, value).sum(axis=-1) + lgamma(c.sum(axis=-1)) - lgamma(c).sum(axis=-1)

    def entropy(self) -> Tensor:
        c = self.concentration
        k, total = c.shape[-1], c.sum(axis=-1)
        return (
            lgamma(c).sum(axis=-1)
            - lgamma(total)
            - (k - total) * digamma(total)
            - ((c - 1) * digamma(c)).sum(axis=-1)
        )


def _where(mask, chosen, other: Tensor) -> Tensor:
    """``chosen`` (a constant array) where ``mask``, else ``other`` (whose gradient passes)."""
    mask = other.xp.broadcast_to(mask, other.shape)
    return other.masked_fill(mask, 0.0) + other.new(chosen * mask, requires_grad=False)


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1] (alpha, beta > 0, broadcast): the first
    entry of a Dirichlet([concentration1, concentration0])."""

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args: bool | None = None):
        self.concentration1, self.concentration0 = broadcast_all(
            "Beta", concentration1=concentration1, concentration0=concentration0
        )
        both = ops.stack([self.concentration1, self.concentration0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Beta":
        return rebuilt(self, batch_shape, lambda s: Beta(
            self.concentration1.expand(s), self.concentration0.expand(s),
            validate_args=False))  # fmt: skip

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total**2 * (total + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.concentration1)
        return self._dirichlet.log_prob(ops.stack([value, 1 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()


__all__ = ["Beta", "Dirichlet"]
