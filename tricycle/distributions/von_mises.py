"""The von Mises distribution, a normal wrapped onto the circle, as torch's ``VonMises(loc,
concentration)``:

    log p(x) = k cos(x - loc) - log(2 pi) - log I0(k)
    circular variance = 1 - I1(k) / I0(k)

with I0, I1 the modified Bessel functions, taken scaled (``i0e``, ``i1e``: I(k) e^-k) so that
a large concentration k does not overflow: log I0(k) = log i0e(k) + k. torch evaluates them
by Abramowitz and Stegun's polynomials (relative error about 1e-7); these are scipy's (cupy's
on a GPU), exact to rounding, with their derivatives, so ``log_prob`` is differentiable in k.

Draws follow Best and Fisher's rejection sampler (1979), in float64 on the host from
tricycle's generator, given back in the parameters' dtype and placed on their device; values
lie in [-pi, pi). There is no ``rsample``, as torch's.
"""

import math

import numpy as np

from tricycle import backend, random
from tricycle.distributions import constraints
from tricycle.distributions.distribution import CentredAtLoc
from tricycle.distributions.gamma import on_device
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor
from tricycle.torch_special import i0e, i1e


class VonMises(CentredAtLoc):
    """VonMises(loc, concentration): a circular distribution about ``loc`` (radians), of
    ``concentration`` k > 0 (1 / k is about its variance when k is large); broadcast."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False
    expand_params = ("loc", "concentration")

    def __init__(self, loc, concentration, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(
            "VonMises", loc=loc, concentration=concentration
        )
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def variance(self) -> Tensor:
        """The circular variance, 1 - I1(k) / I0(k)."""
        k = self.concentration
        return 1 - i1e(k) / i0e(k)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        k = self.concentration
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - (i0e(k).log() + k)

    def sample(self, sample_shape=()) -> Tensor:
        """Draws in [-pi, pi) of shape sample_shape + batch_shape, with no graph."""
        shape = self._extended_shape(sample_shape)
        loc = np.broadcast_to(backend.to_host_array(self.loc.array).astype(np.float64), shape)
        k = np.broadcast_to(backend.to_host_array(self.concentration.array), shape)
        draws = _rejection_sample(loc, k.astype(np.float64), random.generator())
        return Tensor(on_device(draws.astype(self.loc.dtype), self.loc), requires_grad=False)


def _rejection_sample(loc: np.ndarray, k: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Best and Fisher's sampler: a wrapped Cauchy proposal of parameter r, accepted by
    their test, redrawn where rejected until every element is accepted."""
    tau = 1 + np.sqrt(1 + 4 * k**2)
    with np.errstate(all="ignore"):
        rho = (tau - np.sqrt(2 * tau)) / (2 * k)
        r = np.where(k < 1e-5, 1 / k + k, (1 + rho**2) / (2 * rho))  # Taylor for a small k
    x = np.zeros(loc.shape)
    done = np.zeros(loc.shape, dtype=bool)
    while not done.all():
        u1, u2, u3 = rng.random((3,) + loc.shape)
        z = np.cos(math.pi * u1)
        f = (1 + r * z) / (r + z)
        c = k * (r - f)
        with np.errstate(all="ignore"):
            accept = ((c * (2 - c) - u2) > 0) | (np.log(c / u2) + 1 - c >= 0)
        accept &= ~done
        x = np.where(accept, np.sign(u3 - 0.5) * np.arccos(np.clip(f, -1, 1)), x)
        done |= accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


__all__ = ["VonMises"]
