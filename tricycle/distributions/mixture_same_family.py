"""A mixture of K distributions of one family, as torch's ``MixtureSameFamily(
mixture_distribution, component_distribution)``: a ``Categorical`` over K picks the
component, and the last batch axis (K) of ``component_distribution`` holds the components.

    log p(x) = logsumexp_k (log pi_k + log p_k(x))
    mean     = sum_k pi_k mean_k
    variance = sum_k pi_k var_k + sum_k pi_k (mean_k - mean)^2   (the law of total variance)
    cdf      = sum_k pi_k cdf_k(x)

Draws pick a component per draw and read that component's draw; they carry no gradient (no
``rsample``, as torch's): a mixture's parameters learn through ``log_prob``.
"""

from tricycle import ops
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.gamma import rebuilt
from tricycle.tensor import Tensor


class MixtureSameFamily(Distribution):
    """The mixture of the K components of ``component_distribution`` (batch (..., K)) weighted
    by ``mixture_distribution`` (a Categorical over K, batch broadcasting with (...))."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution,
                 validate_args: bool | None = None):  # fmt: skip
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(
                "MixtureSameFamily: mixture_distribution must be a Categorical, got "
                f"{type(mixture_distribution).__name__}"
            )
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "MixtureSameFamily: component_distribution must be a Distribution, got "
                f"{type(component_distribution).__name__}"
            )
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mixture_batch = mixture_distribution.batch_shape
        component_batch = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mixture_batch), reversed(component_batch)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"MixtureSameFamily: mixture_distribution.batch_shape {mixture_batch} is "
                    f"not compatible with component_distribution.batch_shape "
                    f"{component_distribution.batch_shape} (less its last axis)"
                )
        k_mixture = mixture_distribution.param_shape[-1]
        k_component = component_distribution.batch_shape[-1:]
        if k_component != (k_mixture,):
            raise ValueError(
                f"MixtureSameFamily: the mixture's number of components ({k_mixture}) must "
                f"equal component_distribution.batch_shape[-1] ({k_component})"
            )
        self._num_component = k_mixture
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(component_batch, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "MixtureSameFamily":
        """The mixture and the components expanded (the components' K axis kept)."""

        def make(s):
            components = self._component_distribution.expand(s + (self._num_component,))
            mixture = self._mixture_distribution.expand(s)
            return MixtureSameFamily(mixture, components, validate_args=False)

        return rebuilt(self, batch_shape, make)

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def support(self):
        return self._component_distribution.support

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(axis=-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        axis = -1 - self._event_ndims
        components = self._component_distribution
        mean_of_variances = (probs * components.variance).sum(axis=axis)
        deviation = components.mean - self._pad(self.mean)
        return mean_of_variances + (probs * deviation**2).sum(axis=axis)

    def cdf(self, value) -> Tensor:
        value = self._pad(self._value(value, self._mixture_distribution.probs))
        cdf = self._component_distribution.cdf(value)
        return (cdf * self._mixture_distribution.probs).sum(axis=-1)

    def log_prob(self, value) -> Tensor:
        value = self._pad(self._value(value, self._mixture_distribution.probs))
        log_prob = self._component_distribution.log_prob(value)  # (..., K)
        logits = self._mixture_distribution.logits
        log_weights = logits - logits.logsumexp(dim=-1, keepdim=True)
        return (log_prob + log_weights).logsumexp(dim=-1)

    def sample(self, sample_shape=()) -> Tensor:
        """Each draw's component from the mixture, then that component's draw."""
        picks = self._mixture_distribution.sample(sample_shape)  # sample_shape + batch
        draws = self._component_distribution.sample(sample_shape)  # ... + (K,) + event
        xp, at = draws.xp, len(picks.shape)
        ids = picks.array.reshape(picks.shape + (1,) * (self._event_ndims + 1))
        ids = xp.broadcast_to(ids, draws.shape[:at] + (1,) + draws.shape[at + 1 :])
        chosen = xp.take_along_axis(draws.array, ids, axis=at)
        return draws.new(xp.squeeze(chosen, axis=at), requires_grad=False)

    def _pad(self, x: Tensor) -> Tensor:
        """x with an axis for the components before its event axes."""
        return ops.expand_dims(x, -1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        """The mixture's (..., K) weights shaped to meet the components' (..., K) + event."""
        batch_ndims = len(self.batch_shape)
        mixture_ndims = len(self._mixture_distribution.batch_shape)
        pad = 0 if mixture_ndims == 1 else batch_ndims - mixture_ndims
        shape = x.shape
        return x.reshape(shape[:-1] + (1,) * pad + shape[-1:] + (1,) * self._event_ndims)

    def __repr__(self) -> str:
        return (
            f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
            f"{self._component_distribution!r})"
        )


__all__ = ["MixtureSameFamily"]
