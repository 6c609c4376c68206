"""The categorical distribution over the classes 0, ..., K-1, as
``torch.distributions.Categorical``, given ``probs`` or ``logits`` on the last axis (K).

Probabilities are normalised to sum to 1 (weights of any positive sum will do, as torch's),
logits to log-probabilities: l - logsumexp(l), the log-softmax (``tricycle.functions``).

    log p(k) = l_k               (the normalised logits, read at the class)
    entropy  = -sum_k p_k l_k

A draw is an int64 class id per distribution of the batch, from ``Tensor.multinomial`` on
the host (tricycle's generator), placed on the parameters' device; it carries no gradient
(the policy gradient of REINFORCE goes through ``log_prob`` instead).
"""

import math

import numpy as np

from tricycle import backend, factories, ops, unary
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import (
    lazy_property,
    logits_to_probs,
    nan_like,
    parameter,
    probs_to_logits,
)
from tricycle.functions import LogSoftmax
from tricycle.tensor import Tensor


class Categorical(Distribution):
    """Categorical over K classes, batched over all but the last axis of ``probs`` (weights
    >= 0 of positive sum) or ``logits`` (real): give one, not both."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None):
        if (probs is None) == (logits is None):
            given = "both" if probs is not None else "neither"
            raise ValueError(f"{type(self).__name__}: give probs or logits, not both; got {given}")
        if probs is not None:
            probs = parameter("Categorical", "probs", probs, min_ndim=1)
            if self._validate_args if validate_args is None else validate_args:
                _check_weights(probs)
            self.probs = probs / probs.sum(axis=-1, keepdims=True)
        else:
            self.logits = LogSoftmax()(parameter("Categorical", "logits", logits, min_ndim=1))
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-probabilities, log p (p clamped away from 0)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """The probabilities: the softmax of the logits."""
        return logits_to_probs(self.logits)

    @property
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape

    @property
    def mean(self) -> Tensor:
        """Undefined for classes: NaN, as torch's."""
        return nan_like(self._batch_shape, self._param)

    @property
    def variance(self) -> Tensor:
        """Undefined for classes: NaN, as torch's."""
        return nan_like(self._batch_shape, self._param)

    @property
    def mode(self) -> Tensor:
        """The most probable class (the first of ties), int64."""
        return self.probs.argmax(dim=-1)

    def sample(self, sample_shape=()) -> Tensor:
        """int64 class ids of shape sample_shape + batch_shape."""
        shape = self._extended_shape(sample_shape)
        n = math.prod(shape[: len(shape) - len(self._batch_shape)])
        rows = self.probs.detach().reshape(-1, self._num_events)  # (N, K)
        if n == 0 or rows.shape[0] == 0:
            ids = rows.xp.zeros(shape, dtype=np.int64)
        else:
            ids = rows.multinomial(n, replacement=True).array.T.reshape(shape)  # (n, N)
        return rows.new(ids, requires_grad=False)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._param)
        return self._log_prob(value)

    def _log_prob(self, value: Tensor) -> Tensor:
        """log p at the class ids ``value`` (any shape that broadcasts with batch_shape)."""
        xp = self._param.xp
        ids = value.array.astype(np.int64)[..., None]  # (..., 1)
        logits = self.logits  # (..., K)
        shape = np.broadcast_shapes(ids.shape[:-1], logits.shape[:-1])
        if logits.shape[:-1] != shape:
            logits = logits.expand(shape + (self._num_events,))
        ids = xp.broadcast_to(ids, shape + (1,))
        return ops.squeeze(logits.gather(-1, ids), -1)

    def entropy(self) -> Tensor:
        """-sum p log p over the classes, logits clamped at the dtype's lowest finite value
        (so that a class of probability 0 adds 0, not 0 * -inf)."""
        lowest = float(np.finfo(self.logits.dtype).min)
        p_log_p = unary.clip(self.logits, lowest) * self.probs
        return -p_log_p.sum(axis=-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """(K,) + batch_shape: the class ids 0 ... K-1 (size-1 batch axes unless ``expand``)."""
        values = factories.arange(self._num_events, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


def _check_weights(probs: Tensor) -> None:
    """Weights must be finite and >= 0 with a positive sum on each row, to be normalised."""
    host = backend.to_host_array(probs.array)
    bad = host[~(np.isfinite(host) & (host >= 0))]
    if bad.size:
        raise ValueError(
            f"Categorical: probs (of shape {probs.shape}) must be finite and >= 0, "
            f"found invalid values {backend.preview(bad[:4].tolist())}"
        )
    if (host.sum(axis=-1) <= 0).any():
        raise ValueError(
            f"Categorical: each row of probs (of shape {probs.shape}) must have a positive "
            "sum, found a row of zeros"
        )


__all__ = ["Categorical"]
