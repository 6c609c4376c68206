"""The normal (Gaussian) distribution N(loc, scale^2), as ``torch.distributions.Normal``.

    log p(x) = -(x - loc)^2 / (2 scale^2) - log scale - log sqrt(2 pi)
    entropy  = 1/2 + log sqrt(2 pi) + log scale

``rsample`` is the reparameterisation loc + scale * eps with eps ~ N(0, 1) drawn apart from
the parameters, so d(draw)/d(loc) = 1 and d(draw)/d(scale) = eps: the gradient of a VAE's
loss flows through its draws.
"""

import math

from tricycle import activation, factories, unary
from tricycle.distributions import constraints
from tricycle.distributions.distribution import CentredAtLoc
from tricycle.distributions.utils import broadcast_all, value_tensor
from tricycle.tensor import Tensor
from tricycle.torch_special import erfinv

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class Normal(CentredAtLoc):
    """N(loc, scale^2), batched over the broadcast shape of ``loc`` and ``scale`` (Tensors or
    numbers; scale > 0)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None):
        self.loc, self.scale = broadcast_all("Normal", loc=loc, scale=scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale**2

    def rsample(self, sample_shape=()) -> Tensor:
        """loc + scale * eps, eps ~ N(0, 1) of shape sample_shape + batch_shape."""
        shape = self._extended_shape(sample_shape)
        eps = factories.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        z = (value - self.loc) / self.scale
        return -(z**2) * 0.5 - unary.log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value) -> Tensor:
        """P(X <= value) = Phi((value - loc) / scale)."""
        value = self._value(value, self.loc)
        return standard_normal_cdf((value - self.loc) / self.scale)

    def icdf(self, value) -> Tensor:
        """loc + scale sqrt(2) erfinv(2 value - 1): the quantile of the probability ``value``."""
        value = value_tensor(self.loc, value)
        if self._validate_args:
            self._check(constraints.unit_interval, value, "Normal.icdf: value", "lie in")
        return self.loc + self.scale * erfinv(value * 2 - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return unary.log(self.scale) + (0.5 + _LOG_SQRT_2PI)


def standard_normal_cdf(z: Tensor) -> Tensor:
    """Phi(z) = (1 + erf(z / sqrt 2)) / 2, elementwise; its derivative is the standard normal
    density exp(-z^2 / 2) / sqrt(2 pi)."""
    xp = z.xp
    out = 0.5 * (1 + activation.erf(xp, z.array * (1 / math.sqrt(2))))
    density = xp.exp(-0.5 * z.array * z.array) * (1 / math.sqrt(2 * math.pi))
    return unary.unary_op(z, out.astype(z.dtype, copy=False), lambda dout: dout * density, "Phi")


__all__ = ["Normal", "standard_normal_cdf"]
