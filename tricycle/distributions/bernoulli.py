"""The Bernoulli distribution: 1 with probability p, else 0, as
``torch.distributions.Bernoulli``, given ``probs`` p or ``logits`` log(p / (1 - p)).

    log p(x) = x log s(l) + (1 - x) log(1 - s(l)) = -BCEWithLogits(l, x)
    entropy  = BCEWithLogits(l, p)

with l the logits and s the sigmoid: both are the binary cross-entropy from logits
(``tricycle.criteria.BCEWithLogits``, stable for any logit), whose gradient reaches the
logits and, for the entropy, the probabilities too. Draws are 0 and 1 in the parameters'
dtype, with no gradient (no ``rsample``).
"""

import numpy as np

from tricycle import factories
from tricycle.criteria import BCEWithLogits
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from tricycle.graph import no_grad
from tricycle.tensor import Tensor


class BinaryParameters:
    """``probs`` and ``logits`` of a distribution of successes (Bernoulli's, Binomial's), one
    given and the other made from it when asked; ``_param`` is the one given."""

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds log p - log(1 - p) (p clamped away from 0 and 1)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of a success: the sigmoid of the logits."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape


class Bernoulli(BinaryParameters, Distribution):
    """Bernoulli(p), batched over the shape of ``probs`` (in [0, 1]) or ``logits`` (real):
    give one, not both."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            given = "both" if probs is not None else "neither"
            raise ValueError(f"Bernoulli: give probs or logits, not both; got {given}")
        if probs is not None:
            (self.probs,) = broadcast_all("Bernoulli", probs=probs)
        else:
            (self.logits,) = broadcast_all("Bernoulli", logits=logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where p > 1/2, 0 where p < 1/2, NaN where p = 1/2 (no single mode)."""
        p = self.probs.array
        mode = (p >= 0.5).astype(p.dtype)
        mode[p == 0.5] = np.nan
        return self.probs.new(mode, requires_grad=False)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """0s and 1s of shape sample_shape + batch_shape, 1 with probability p."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return self.probs.detach().expand(shape).bernoulli()

    def log_prob(self, value) -> Tensor:
        return self._log_prob(self._value(value, self._param))

    def _log_prob(self, value: Tensor) -> Tensor:
        """log p at the 0s and 1s ``value`` (any shape that broadcasts with batch_shape)."""
        logits, value = broadcast_all("Bernoulli.log_prob", logits=self.logits, value=value)
        return -_bce_with_logits(logits, value)

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(2,) + batch_shape: 0 then 1 (with size-1 batch axes unless ``expand``)."""
        values = factories.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + self._batch_shape) if expand else values


def _bce_with_logits(logits: Tensor, target: Tensor) -> Tensor:
    """The binary cross-entropy of each logit and target (one shape), of any shape: the loss
    takes a non-empty vector, so the batch is flattened into one and shaped back."""
    if logits.size == 0:
        return logits * target  # nothing to compute: an empty result, in the graph
    flat = BCEWithLogits(reduction="none")(target.reshape(-1), logits.reshape(-1))
    return flat.reshape(logits.shape)


__all__ = ["Bernoulli"]
