"""``TransformedDistribution(base, transforms)``: the law of t_n(...t_1(x)) for x drawn from
``base``, as ``torch.distributions.TransformedDistribution``.

A draw is base's draw pushed through the transforms in order; a log-density pulls the value
back through their inverses, subtracting each log |det Jacobian| (summed over the axes that
read as one event) on the way, and adds base's log-density at the start:

    log p(y) = log p_base(x) - sum_i log |det dt_i/dx_i|

``cdf`` and ``icdf`` pass through monotone transforms (turned over where their ``sign`` is
-1). The event shape grows to the widest event any transform reads (base's batch axes
become event axes through an ``Independent``), as torch's. ``LogNormal``, ``Gumbel``,
``Weibull``, ``Pareto``, ``HalfNormal`` ... are transformed distributions.
"""

from tricycle import checks
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.independent import Independent
from tricycle.distributions.transform import ComposeTransform, Transform
from tricycle.distributions.utils import sum_rightmost, value_tensor
from tricycle.graph import no_grad
from tricycle.tensor import Tensor


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (one Transform or a list)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args: bool | None = None):
        name = type(self).__name__
        if not isinstance(base_distribution, Distribution):
            checks.fail(name, "base_distribution", "a Distribution", base_distribution, TypeError)
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, list | tuple) or not all(
            isinstance(t, Transform) for t in transforms
        ):
            checks.fail(name, "transforms", "a Transform or a list of Transforms", transforms,
                        TypeError)  # fmt: skip
        self.transforms = list(transforms)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(
                f"{name}: the base distribution needs at least {transform.domain.event_dim} "
                f"axes for its transforms, got batch_shape + event_shape {base_shape}"
            )
        forward_shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(forward_shape)
        if base_shape != expanded:  # a transform's parameters widen the batch
            base_distribution = base_distribution.expand(expanded[: len(expanded) - base_event_dim])
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    def expand(self, batch_shape, _instance=None) -> "TransformedDistribution":
        """The base distribution expanded to the batch shape the transforms pull back."""
        new = super().expand(batch_shape) if self.expand_params else None
        if new is None:
            new = object.__new__(type(self))
            new.__dict__.update(self.__dict__)
            new._batch_shape = tuple(batch_shape)
        shape = new._batch_shape + self._event_shape
        for transform in reversed(self.transforms):
            shape = transform.inverse_shape(shape)
        base_event = self.base_dist.event_shape
        new.base_dist = self.base_dist.expand(shape[: len(shape) - len(base_event)])
        return new

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for transform in self.transforms:
                x = transform(x)
        return x

    def rsample(self, sample_shape=()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for transform in self.transforms:
            x = transform(x)
        return x

    def _like(self) -> Tensor:
        """A Tensor of the parameters' dtype and device, for a value given as a number."""
        base = self.base_dist
        while hasattr(base, "base_dist"):
            base = base.base_dist
        return next(v for v in base.__dict__.values() if isinstance(v, Tensor))

    def log_prob(self, value) -> Tensor:
        value = value_tensor(self._like(), value)
        if self._validate_args:
            self._validate_sample(value)
        event_dim, log_prob, y = len(self.event_shape), 0.0, value
        for transform in reversed(self.transforms):
            x = transform.inv(y)
            event_dim += transform.domain.event_dim - transform.codomain.event_dim
            term = transform.log_abs_det_jacobian(x, y)
            log_prob = log_prob - sum_rightmost(term, event_dim - transform.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """value where the transforms increase, 1 - value where they decrease."""
        sign = 1
        for transform in self.transforms:
            sign = sign * transform.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return (value - 0.5) * sign + 0.5

    def cdf(self, value) -> Tensor:
        value = value_tensor(self._like(), value)
        for transform in reversed(self.transforms):
            value = transform.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value) -> Tensor:
        value = self.base_dist.icdf(self._monotonize_cdf(value_tensor(self._like(), value)))
        for transform in self.transforms:
            value = transform(value)
        return value

    def __repr__(self) -> str:
        if self.arg_constraints:  # a family of its own: its parameters, as any family's
            return super().__repr__()
        return f"{type(self).__name__}({self.base_dist!r}, {self.transforms!r})"


__all__ = ["TransformedDistribution"]
