"""Continuous relaxations of the discrete families, whose draws are differentiable in the
probabilities (the Gumbel-softmax, or concrete, distributions of Maddison et al. and Jang et
al.), and the straight-through one-hot categorical, as torch's:

    LogitRelaxedBernoulli(t, p):  x = (logit u + logit p) / t,  u ~ U(0, 1)
        log p(x) = log t + d - 2 log(1 + e^d),  d = logit p - t x
    RelaxedBernoulli(t, p):       y = sigmoid(x), on (0, 1)
    ExpRelaxedCategorical(t, p):  x = s - logsumexp(s),  s = (log p + g) / t,  g Gumbel
        log p(x) = lgamma(K) + (K - 1) log t + sum_k (c_k - logsumexp(c)),  c = log p - t x
    RelaxedOneHotCategorical(t, p): y = exp(x), on the simplex
    OneHotCategoricalStraightThrough(p): a one-hot draw whose gradient is the probabilities'

torch builds the two relaxed families on (0, 1) and the simplex as
``TransformedDistribution``s (a sigmoid, an exp) of the logit ones; here they hold that base
(``base_dist``) and apply the change of variables themselves: log p(y) = log p_base(x) - log
|dy/dx|, with dy/dx = y (1 - y) for the sigmoid and prod_k y_k for the exp. ``temperature``
t > 0 is a number or a Tensor (broadcast with the batch); the parameters are given as
``probs`` or ``logits``, as the discrete families take them.
"""

import math

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.bernoulli import Bernoulli
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import rebuilt
from tricycle.distributions.one_hot_categorical import OneHotCategorical
from tricycle.distributions.utils import broadcast_all, clamp_probs, value_tensor
from tricycle.tensor import Tensor


def _uniform(shape, like: Tensor) -> Tensor:
    """U(0, 1) draws kept inside [eps, 1 - eps] (torch's ``clamp_probs``)."""
    return clamp_probs(factories.rand(shape, dtype=like.dtype, device=like.device))


def _softplus(x: Tensor) -> Tensor:
    """log(1 + e^x), as torch's relaxed Bernoulli writes it: ``x.exp().log1p()``."""
    return x.exp().log1p()


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed Bernoulli draw, of ``temperature`` and ``probs`` or ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self._bernoulli = Bernoulli(probs, logits, validate_args=validate_args)
        self._given = "probs" if probs is not None else "logits"
        self.temperature = value_tensor(self._bernoulli._param, temperature)
        super().__init__(self._bernoulli.batch_shape, validate_args=validate_args)

    logits = property(lambda self: self._bernoulli.logits)  # checked by the Bernoulli
    probs = property(lambda self: self._bernoulli.probs)
    param_shape = property(lambda self: self._bernoulli.param_shape)

    def expand(self, batch_shape, _instance=None):
        return _expanded(self, self._bernoulli._param, batch_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = _uniform(shape, probs)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.logits)
        logits, value = broadcast_all("LogitRelaxedBernoulli.log_prob", logits=self.logits,
                                      value=value)  # fmt: skip
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * _softplus(diff)


class RelaxedBernoulli(Distribution):
    """sigmoid of a ``LogitRelaxedBernoulli``: draws on (0, 1) that approach Bernoulli
    draws as the temperature falls to 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self.base_dist = LogitRelaxedBernoulli(temperature, probs, logits, validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

    def expand(self, batch_shape, _instance=None):
        return _expanded(self, self.base_dist._bernoulli._param, batch_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return clamp_probs(self.base_dist.rsample(sample_shape).sigmoid())

    def log_prob(self, value) -> Tensor:
        """The base's log-density at logit(y), less log(y (1 - y))."""
        y = clamp_probs(self._value(value, self.logits))
        x = y.log() - (-y).log1p()
        return self.base_dist.log_prob(x) - y.log() - (-y).log1p()


class ExpRelaxedCategorical(Distribution):
    """The logarithm of a relaxed one-hot categorical draw (the log-simplex), of
    ``temperature`` and ``probs`` or ``logits`` over the last axis (K)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self._given = "probs" if probs is not None else "logits"
        self.temperature = value_tensor(self._categorical._param, temperature)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    logits = property(lambda self: self._categorical.logits)
    probs = property(lambda self: self._categorical.probs)
    param_shape = property(lambda self: self._categorical.param_shape)

    def expand(self, batch_shape, _instance=None):
        return _expanded(self, self._categorical._param, batch_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = _uniform(shape, self.logits)
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.logits)
        k = self._event_shape[0]
        logits, value = broadcast_all("ExpRelaxedCategorical.log_prob", logits=self.logits,
                                      value=value)  # fmt: skip
        log_scale = math.lgamma(k) + (k - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(axis=-1)
        return score + log_scale


class RelaxedOneHotCategorical(Distribution):
    """exp of an ``ExpRelaxedCategorical``: draws on the simplex that approach one-hot
    vectors as the temperature falls to 0 (the Gumbel-softmax)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args: bool | None = None):
        self.base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args)
        base = self.base_dist
        super().__init__(base.batch_shape, base.event_shape, validate_args=validate_args)

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)

    def expand(self, batch_shape, _instance=None):
        return _expanded(self, self.base_dist._categorical._param, batch_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value) -> Tensor:
        """The base's log-density at log y, less sum_k log y_k."""
        log_y = self._value(value, self.logits).log()
        return self.base_dist.log_prob(log_y) - log_y.sum(axis=-1)


def _expanded(dist, param: Tensor, batch_shape):
    """A relaxed family made anew of its temperature and its given parameter (probs or
    logits, ``param``) expanded to ``batch_shape`` (its event axis kept)."""
    base = getattr(dist, "base_dist", dist)
    event = param.shape[len(dist.batch_shape) :]

    def make(s):
        given = {base._given: param.expand(s + event)}
        return type(dist)(dist.temperature, **given, validate_args=False)

    return rebuilt(dist, batch_shape, make)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` with ``rsample``: the one-hot draw plus (p - p), the second p
    detached, so the forward value is the draw and the gradient is the probabilities'
    (the straight-through estimator of Bengio et al.)."""

    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        draw = self.sample(sample_shape)
        probs = self._categorical.probs
        return draw + (probs - probs.detach())


__all__ = [
    "ExpRelaxedCategorical",
    "LogitRelaxedBernoulli",
    "OneHotCategoricalStraightThrough",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
]
