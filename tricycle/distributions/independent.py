"""``Independent(base, n)``: the last n batch axes of ``base`` read as event axes, as
``torch.distributions.Independent``. The draws are base's; a log-density (and the entropy)
is base's summed over those n axes: a diagonal Gaussian over a vector is
``Independent(Normal(loc, scale), 1)``, one log_prob per vector."""

from tricycle import checks, factories
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import sum_rightmost
from tricycle.tensor import Tensor


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch axes moved
    into the event (0 <= n <= len(base.batch_shape))."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None):  # fmt: skip
        if not isinstance(base_distribution, Distribution):
            checks.fail("Independent", "base_distribution", "a Distribution", base_distribution,
                        TypeError)  # fmt: skip
        n = checks.non_negative_int("Independent", "reinterpreted_batch_ndims",
                                    reinterpreted_batch_ndims)  # fmt: skip
        batch = base_distribution.batch_shape
        if n > len(batch):
            raise ValueError(
                f"Independent: reinterpreted_batch_ndims must be at most the number of batch "
                f"axes of the base distribution, {len(batch)} (batch_shape {batch}), got {n}"
            )
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, n
        shape = batch + base_distribution.event_shape
        event_ndim = n + len(base_distribution.event_shape)
        cut = len(shape) - event_ndim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @property
    def support(self) -> constraints.Constraint:
        support = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(support, n) if n else support

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def expand(self, batch_shape, _instance=None) -> "Independent":
        """The base distribution expanded to ``batch_shape`` plus the reinterpreted axes."""
        batch_shape = factories.as_shape("Independent.expand", batch_shape)
        reinterpreted = self._event_shape[: self.reinterpreted_batch_ndims]
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.base_dist = self.base_dist.expand(batch_shape + reinterpreted)
        new._batch_shape = batch_shape
        return new

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        """base's log-density, summed over the reinterpreted axes (base checks the value)."""
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError(
                "Independent.enumerate_support: the product of supports over "
                f"{self.reinterpreted_batch_ndims} axes is not enumerated"
            )
        return self.base_dist.enumerate_support(expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


__all__ = ["Independent"]
