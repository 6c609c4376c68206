"""Two families of counts, as torch's, given ``probs`` p (of a success) or ``logits``
log(p / (1 - p)):

    Geometric(p):            the failures before the first success
                             log p(k) = k log(1 - p) + log p
                             entropy  = BCEWithLogits(logits, p) / p
    NegativeBinomial(r, p):  the successes before the r-th failure
                             log p(k) = r log s(-l) + k log s(l) + log Gamma(r + k)
                                        - log Gamma(k + 1) - log Gamma(r)

with l the logits and s the sigmoid (torch's parameterisation: p is the probability of the
counted outcome). Draws are counts in the parameters' dtype, made on the host from
tricycle's generator, with no gradient (no ``rsample``): the geometric's as
floor(log u / log(1 - p)), the negative binomial's as a Poisson of a Gamma(r, p / (1 - p))
rate. NegativeBinomial has no entropy, as torch's.
"""

import numpy as np

from tricycle import backend, factories, random
from tricycle.distributions import constraints
from tricycle.distributions.bernoulli import BinaryParameters, _bce_with_logits
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import broadcast_all
from tricycle.graph import no_grad
from tricycle.nn import functional as F
from tricycle.tensor import Tensor


def _probs_or_logits(owner: str, probs, logits, **others) -> dict:
    """The one parameter given (probs or logits) with ``others``, broadcast together."""
    if (probs is None) == (logits is None):
        given = "both" if probs is not None else "neither"
        raise ValueError(f"{owner}: give probs or logits, not both; got {given}")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    values = broadcast_all(owner, **others, **{name: value})
    return dict(zip([*others, name], values))


class _Counts(BinaryParameters, Distribution):
    """What the two share: their parameters, kept whole by ``expand``."""

    support = constraints.nonnegative_integer

    def _given(self, parameters: dict, validate_args) -> None:
        self.__dict__.update(parameters)
        self._param_name = "probs" if "probs" in parameters else "logits"
        self._param = parameters[self._param_name]
        super().__init__(self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._param = new.__dict__[self._param_name]
        return new

    def _host_draw(self, draw, shape: tuple) -> Tensor:
        """``draw(generator, shape)``'s host array as a Tensor beside the parameters."""
        counts = draw(random.generator(), shape).astype(self._param.dtype)
        device = self._param.array.device.id if self._param.on_gpu else None
        return self._param.new(backend.move(counts, device), requires_grad=False)


class Geometric(_Counts):
    """Geometric(p): the number of failures before the first success (0 < p <= 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    expand_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        self._given(_probs_or_logits("Geometric", probs, logits), validate_args)
        if probs is not None and self._validate_args:
            self._check(constraints.positive, self.probs, "Geometric: parameter probs")

    @property
    def mean(self) -> Tensor:
        return self.probs.reciprocal() - 1

    @property
    def mode(self) -> Tensor:
        return factories.zeros_like(self._param).detach()

    @property
    def variance(self) -> Tensor:
        return (self.probs.reciprocal() - 1) / self.probs

    def sample(self, sample_shape=()) -> Tensor:
        """floor(log u / log(1 - p)), u ~ U(0, 1]."""
        shape = self._extended_shape(sample_shape)
        with no_grad():
            tiny = float(np.finfo(self._param.dtype).tiny)
            u = factories.rand(shape, dtype=self._param.dtype, device=self._param.device)
            with np.errstate(divide="ignore"):  # p = 1: log(1 - p) = -inf, a draw of 0
                return (u.clamp(min=tiny).log() / (-self.probs).log1p()).floor()

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._param)
        value, probs = broadcast_all("Geometric.log_prob", value=value, probs=self.probs)
        certain = (probs.array == 1) & (value.array == 0)  # 0 log 0 = 0 where p = 1
        with np.errstate(divide="ignore"):
            return value * (-probs.masked_fill(certain, 0.0)).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return _bce_with_logits(self.logits, self.probs) / self.probs


class NegativeBinomial(_Counts):
    """NegativeBinomial(total_count r >= 0, p in [0, 1)): the successes counted before the
    r-th failure (r may be fractional)."""

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0.0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    expand_params = ("total_count", "probs", "logits")

    def __init__(self, total_count, probs=None, logits=None, validate_args: bool | None = None):
        parameters = _probs_or_logits("NegativeBinomial", probs, logits, total_count=total_count)
        self._given(parameters, validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()) -> Tensor:
        """Poisson(Gamma(r, scale p / (1 - p))) counts, drawn on the host."""
        shape = self._extended_shape(sample_shape)
        r = np.broadcast_to(backend.to_host_array(self.total_count.array), shape)
        scale = np.broadcast_to(np.exp(backend.to_host_array(self.logits.array)), shape)

        def draw(generator, shape):
            rate = np.where(r > 0, generator.gamma(np.where(r > 0, r, 1.0), scale, shape), 0.0)
            return generator.poisson(rate, shape)

        return self._host_draw(draw, shape)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._param)
        r, logits = self.total_count, self.logits
        unnormalised = r * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
        with np.errstate(divide="ignore", invalid="ignore"):  # lgamma(0) = inf, masked below
            normaliser = -(r + value).lgamma() + (value + 1).lgamma() + r.lgamma()
        nothing = (r.array + value.array) == 0  # r = 0 and k = 0: probability 1
        normaliser = normaliser.masked_fill(r.xp.broadcast_to(nothing, normaliser.shape), 0.0)
        return unnormalised - normaliser


__all__ = ["Geometric", "NegativeBinomial"]
