"""The multinomial distribution: the counts of each of K classes in n independent draws of a
categorical, as ``torch.distributions.Multinomial``, given ``total_count`` n (a Python int, 1
by default, as torch's) and ``probs`` (weights >= 0, normalised) or ``logits`` on the last
axis (K). An event is a vector of K counts summing to n (event_shape (K,)).

    log p(x) = log n! - sum_k log x_k! + sum_k x_k l_k

with l the normalised logits (a class of logit -inf and count 0 adds 0, as torch's); the
factorials have no gradient (counts), the last sum carries it to the parameters. The entropy
is torch's: n H(categorical) - log n! + sum_k E[log x_k!], each x_k a Binomial(n, p_k).

d2l's first probability section tosses coins with it::

    counts = Multinomial(1000, tricycle.tensor([0.5, 0.5])).sample()  # (2,): the heads, tails

Draws are counts in the parameters' dtype, from tricycle's generator on the host (numpy's
``multinomial``), placed on the parameters' device, with no gradient (no ``rsample``).
"""

import math
import numbers

import numpy as np

from tricycle import backend, checks, random
from tricycle.distributions import constraints
from tricycle.distributions.binomial import Binomial
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.one_hot_categorical import CategoricalParameters
from tricycle.tensor import Tensor


class Multinomial(CategoricalParameters, Distribution):
    """Multinomial(n, p) over K classes, batched over all but the last axis of ``probs`` or
    ``logits`` (give one, not both); ``total_count`` n is one int for the whole batch."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, numbers.Integral) or isinstance(total_count, bool):
            raise NotImplementedError(
                "Multinomial: total_count must be one int for the whole batch (a batch of "
                f"different counts is not supported, as in torch); got {total_count!r}"
            )
        if total_count < 0:
            checks.fail("Multinomial", "total_count", "an int >= 0", total_count)
        self.total_count = int(total_count)
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @property
    def support(self) -> constraints.Constraint:
        """Vectors of K counts >= 0 summing to at most total_count (torch's check)."""
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        """Counts of shape sample_shape + batch_shape + (K,), in the parameters' dtype."""
        shape = self._extended_shape(sample_shape)
        like = self._categorical._param
        p = backend.to_host_array(self.probs.detach().array).astype(np.float64)
        p = np.broadcast_to(p / p.sum(axis=-1, keepdims=True), shape)  # (..., K)
        return _constant(random.generator().multinomial(self.total_count, p, size=shape[:-1]), like)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._categorical._param)
        logits = self.logits
        shape = np.broadcast_shapes(value.shape, logits.shape)
        if logits.shape != shape:
            logits = logits.expand(shape)
        counts = backend.to_host_array(value.array).astype(np.float64)
        constant = _log_factorial(counts.sum(axis=-1)) - _log_factorial(counts).sum(axis=-1)
        xp = logits.xp
        unused = (value.array == 0) & xp.isneginf(logits.array)  # 0 * -inf: no term (torch's)
        if bool(backend.to_host_array(unused.any())):
            logits = logits.masked_fill(xp.broadcast_to(unused, shape), 0.0)
        log_powers = (logits * value).sum(axis=-1)
        return log_powers + _constant(np.broadcast_to(constant, log_powers.shape), logits)

    def entropy(self) -> Tensor:
        """n H(p) - log n! + sum_k sum_x P(x_k = x) log x! (each x_k a Binomial(n, p_k))."""
        n = self.total_count
        binomial = Binomial(n, self.probs, validate_args=False)  # each class's count
        support = binomial.enumerate_support(expand=False)[1:]  # (n, 1, ..., 1): 1, ..., n
        binomial_probs = binomial.log_prob(support).exp()  # (n,) + batch + (K,)
        weights = _constant(_log_factorial(backend.to_host_array(support.array)), support)
        term2 = (binomial_probs * weights).sum(axis=0).sum(axis=-1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + term2


def _log_factorial(counts: np.ndarray) -> np.ndarray:
    """log x! of host counts, elementwise (float64)."""
    return np.vectorize(math.lgamma, otypes=[np.float64])(np.asarray(counts, np.float64) + 1)


def _constant(values: np.ndarray, like: Tensor) -> Tensor:
    """Host ``values`` as a Tensor of like's dtype on like's device, with no gradient."""
    device = like.array.device.id if like.on_gpu else None
    return like.new(backend.move(values.astype(like.dtype), device), requires_grad=False)


__all__ = ["Multinomial"]
