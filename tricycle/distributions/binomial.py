"""The binomial distribution: the count of successes in n independent trials of probability
p, as ``torch.distributions.Binomial``, given ``total_count`` n (1 by default) and ``probs``
p or ``logits`` log(p / (1 - p)).

    log p(k) = log C(n, k) + k log s(l) + (n - k) log(1 - s(l))

with l the logits and s the sigmoid: each log is a binary cross-entropy from logits (as
``Bernoulli``'s), stable for any logit, whose gradient reaches the logits (or the
probabilities). The counts' term log C(n, k) has no gradient (n and k are
counts). With n = 1 a draw is a Bernoulli's: fast.ai's from-scratch dropout draws its mask as
``Binomial(tensor(1.0), probs=1 - p).sample(x.size())``. Draws are counts in the parameters'
dtype, from tricycle's generator on the host, with no gradient (no ``rsample``).
"""

import math

import numpy as np

from tricycle import backend, checks, random
from tricycle.distributions import constraints
from tricycle.distributions.bernoulli import BinaryParameters, _bce_with_logits
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import (
    broadcast_all,
)
from tricycle.tensor import Tensor


class Binomial(BinaryParameters, Distribution):
    """Binomial(n, p), batched over the broadcast shape of ``total_count`` (counts >= 0) and
    ``probs`` (in [0, 1]) or ``logits`` (real): give one of those two, not both."""

    arg_constraints = {
        "total_count": constraints.interval(0.0, float("inf")),
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            given = "both" if probs is not None else "neither"
            raise ValueError(f"Binomial: give probs or logits, not both; got {given}")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(
                "Binomial", total_count=total_count, probs=probs
            )
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(
                "Binomial", total_count=total_count, logits=logits
            )
            self._param = self.logits
        self.total_count = self.total_count.detach().to(self._param.dtype)
        counts = self.total_count.array
        if not bool(backend.to_host_array((counts % 1 == 0).all())):
            checks.fail("Binomial", "total_count", "whole counts >= 0", counts)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        """The counts 0, ..., total_count."""
        return constraints.integer_interval(0, self.total_count.array)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        """floor((n + 1) p), at most n (torch's)."""
        n, p = self.total_count.array, self.probs.array
        mode = self.total_count.xp.minimum(self.total_count.xp.floor((n + 1) * p), n)
        return self.probs.new(mode.astype(p.dtype), requires_grad=False)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """Counts of shape sample_shape + batch_shape, in the parameters' dtype and device."""
        shape = self._extended_shape(sample_shape)
        n = np.broadcast_to(backend.to_host_array(self.total_count.array), shape)
        p = np.broadcast_to(backend.to_host_array(self.probs.array), shape)
        counts = random.generator().binomial(n.astype(np.int64), p, shape)
        array = backend.move(counts.astype(self._param.dtype), self._param.array.device.id
                             if self._param.on_gpu else None)  # fmt: skip
        return self._param.new(array, requires_grad=False)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._param)
        n, logits, k = broadcast_all(
            "Binomial.log_prob", total_count=self.total_count, logits=self.logits, value=value
        )
        counts = backend.to_host_array(n.array), backend.to_host_array(k.array)
        log_choose = np.vectorize(_log_choose, otypes=[np.float64])(*counts)
        constant = logits.new(backend.move(log_choose.astype(logits.dtype), logits.array.device.id
                              if logits.on_gpu else None), requires_grad=False)  # fmt: skip
        ones = logits.new(logits.xp.ones_like(logits.array), requires_grad=False)
        # k log s(l) + (n - k) log(1 - s(l)), each a binary cross-entropy from logits
        successes, failures = _bce_with_logits(logits, ones), _bce_with_logits(logits, 0 * ones)
        return constant - k * successes - (n - k) * failures

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(n + 1,) + batch_shape: the counts 0, ..., n, for one total_count in the batch."""
        counts = np.unique(backend.to_host_array(self.total_count.array))
        if counts.size != 1:
            raise NotImplementedError(
                "Binomial.enumerate_support: the batch's total_count values differ "
                f"({counts.tolist()}); torch's needs one too"
            )
        values = self._param.new(self._param.xp.arange(int(counts[0]) + 1,
                                 dtype=self._param.dtype), requires_grad=False)  # fmt: skip
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((values.shape[0],) + self._batch_shape) if expand else values


def _log_choose(n: float, k: float) -> float:
    """log C(n, k) of counts n >= k >= 0."""
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


__all__ = ["Binomial"]
