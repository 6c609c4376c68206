"""The gamma family, as torch's: ``Gamma(concentration, rate)``, ``Chi2(df)`` (a gamma of
concentration df / 2 and rate 1 / 2) and ``InverseGamma(concentration, rate)`` (1 / X for X a
gamma), and the op beneath their draws, ``standard_gamma`` (``torch._standard_gamma``).

    Gamma:  log p(x) = a log b + (a - 1) log x - b x - lgamma(a)
            entropy  = a - log b + lgamma(a) + (1 - a) digamma(a)

A gamma draw is not a smooth function of fresh noise and the parameters, so ``rsample`` is
reparameterised implicitly (Figurnov et al. 2018): a standard draw x ~ Gamma(a, 1) is held at
its quantile u = P(a, x) (P the regularised lower incomplete gamma function) while a moves,

    dx/da = -(dP/da)(a, x) / p(x; a),

``standard_gamma_grad`` (torch's ``_standard_gamma_grad``). dP/da is the series, in a and x,

    dP/da = sum_n t_n (log x - digamma(a + n + 1)),  t_n = x^(a+n) e^-x / Gamma(a + n + 1),

summed in logarithms (the t_n are Poisson-like weights, at most about 1) until past its
peak at n = x - a: exact to float64 rounding, where torch's own is a fitted approximation
(they agree to about 3e-4). The draw itself is numpy's ``standard_gamma`` on tricycle's
generator (``tricycle.manual_seed`` repeats it), placed on the parameters' device; the
rate enters by division, differentiably.
"""

import math

import numpy as np

from tricycle import backend, random
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.utils import broadcast_all
from tricycle.tensor import Tensor
from tricycle.torch_functions import tensor_input
from tricycle.torch_pointwise import xlogy
from tricycle.torch_special import digamma, lgamma

_MAX_TERMS = 200_000  # the series of dP/da runs to about x + 10 sqrt(x) terms
nonnegative = getattr(constraints, "nonnegative", None) or constraints.half_open_interval(
    0.0, math.inf
)  # torch's constraints.nonnegative: [0, inf)


def on_device(host: np.ndarray, like: Tensor):
    """A host array placed on like's device (itself on the CPU)."""
    if like.xp is np:
        return host
    return backend.to_device_array(host, like.array.device.id)


def rebuilt(dist: Distribution, batch_shape, make) -> Distribution:
    """``dist.expand(batch_shape)`` for a family that holds more than its parameters (a
    base distribution, a derived one): ``make(shape)`` builds it anew of its parameters
    expanded (differentiably) to the new batch, unvalidated, as torch's ``expand``."""
    new = make(dist.expanded_shape(batch_shape))
    new._validate_args = dist._validate_args
    return new


def standard_gamma_grad_array(xp, x, a):
    """dx/da of standard gamma draws ``x`` of concentrations ``a`` (arrays of one shape), at
    a fixed quantile, in float64: -(dP/da) / p, the series of the module's doc."""
    special = backend.special_functions(xp)
    x = xp.maximum(x.astype(np.float64), np.finfo(np.float64).tiny)
    a = a.astype(np.float64)
    log_x = xp.log(x)
    log_density = (a - 1) * log_x - x - special.gammaln(a)
    shift = xp.maximum(log_density, -600.0)  # terms scaled by the density, kept finite
    log_term = a * log_x - x - special.gammaln(a + 1) - shift
    psi = special.digamma(a + 1)
    total = xp.zeros_like(x)
    past_peak = float((x - a).max()) if x.size else 0.0
    for n in range(_MAX_TERMS):
        term = xp.exp(log_term)
        total += term * (log_x - psi)
        if n > past_peak and n % 16 == 0 and not bool((term > 1e-17 * xp.abs(total)).any()):
            break
        log_term += log_x - xp.log(a + (n + 1))
        psi += 1 / (a + (n + 1))
    return -total * xp.exp(shift - log_density)


def standard_gamma_grad(concentration, output) -> Tensor:
    """torch._standard_gamma_grad(alpha, output): dx/d(alpha) of standard gamma draws x
    (``output``) of concentrations alpha (broadcast), each draw's quantile held fixed; no
    graph."""
    alpha = tensor_input("standard_gamma_grad", concentration)
    x = tensor_input("standard_gamma_grad", output)
    a, b = x.xp.broadcast_arrays(x.array, alpha.array)
    with np.errstate(all="ignore"):
        grad = standard_gamma_grad_array(x.xp, a, b)
    return Tensor(grad.astype(x.dtype), requires_grad=False)


def standard_gamma(concentration) -> Tensor:
    """torch._standard_gamma(alpha): one Gamma(alpha, 1) draw per element, reparameterised:
    its gradient with respect to alpha is ``standard_gamma_grad``'s."""
    alpha = tensor_input("standard_gamma", concentration)
    host = backend.to_host_array(alpha.array).astype(np.float64)
    if not np.all(host > 0):
        raise ValueError(
            f"standard_gamma: the concentration (of shape {alpha.shape}) must be > 0, found "
            f"{backend.preview(host[~(host > 0)][:4].tolist())}"
        )
    draw = random.generator().standard_gamma(host)
    tiny = np.finfo(alpha.dtype).tiny
    x = on_device(np.maximum(draw, tiny).astype(alpha.dtype), alpha)

    def back_fn(dout):
        with np.errstate(all="ignore"):
            grad = standard_gamma_grad_array(alpha.xp, x, alpha.array)
        return (dout * grad).astype(alpha.dtype, copy=False)

    return alpha.new(x, args=(alpha,), back_fns=(back_fn,), name="standard_gamma")


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x), the regularised lower incomplete gamma function (torch.special.gammainc),
    differentiable in x only, as torch's: dP/dx = x^(a-1) e^-x / Gamma(a)."""
    special, xp = backend.special_functions(x.xp), x.xp
    a_array, x_array = xp.broadcast_arrays(a.array, x.array)
    out = special.gammainc(a_array, x_array).astype(x.dtype, copy=False)

    def back_fn(dout):
        with np.errstate(all="ignore"):
            log_density = (a_array - 1) * xp.log(x_array) - x_array - special.gammaln(a_array)
            return (dout * xp.exp(log_density)).astype(x.dtype, copy=False)

    return x.new(out, args=(x,), back_fns=(back_fn,), name="gammainc")


class Gamma(Distribution):
    """Gamma(concentration, rate), batched over their broadcast shape (both > 0)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = nonnegative
    has_rsample = True
    expand_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.concentration, self.rate = broadcast_all(
            type(self).__name__, concentration=concentration, rate=rate
        )
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate**2

    def rsample(self, sample_shape=()) -> Tensor:
        """standard_gamma(concentration) / rate, of shape sample_shape + batch_shape."""
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.array[...] = value.xp.maximum(value.array, np.finfo(value.dtype).tiny)
        return value

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.rate)
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1, value) - b * value - lgamma(a)

    def cdf(self, value) -> Tensor:
        """P(concentration, rate * value); no gradient reaches the concentration (torch's)."""
        value = self._value(value, self.rate)
        return gammainc(self.concentration.detach(), self.rate * value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + lgamma(a) + (1 - a) * digamma(a)


class Chi2(Gamma):
    """The chi-squared distribution of ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None):
        (self.df,) = broadcast_all("Chi2", df=df)
        super().__init__(self.df * 0.5, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Chi2":
        return rebuilt(self, batch_shape, lambda s: Chi2(self.df.expand(s), validate_args=False))


class InverseGamma(Distribution):
    """1 / X for X ~ Gamma(concentration, rate): ``base_dist`` is that gamma."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None):
        self.base_dist = Gamma(concentration, rate, validate_args=validate_args)
        self.concentration, self.rate = self.base_dist.concentration, self.base_dist.rate
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "InverseGamma":
        return rebuilt(self, batch_shape, lambda s: InverseGamma(
            self.concentration.expand(s), self.rate.expand(s), validate_args=False))  # fmt: skip

    @property
    def mean(self) -> Tensor:
        a, b = self.concentration, self.rate
        return (b / (a - 1)).masked_fill(a.array <= 1, math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration, self.rate
        return (b**2 / ((a - 1) ** 2 * (a - 2))).masked_fill(a.array <= 2, math.inf)

    def rsample(self, sample_shape=()) -> Tensor:
        return 1 / self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        """The gamma's log-density at 1 / value, less log |d(1/x)/dx| = 2 log value."""
        value = self._value(value, self.rate)
        return self.base_dist.log_prob(1 / value) - 2 * value.log()

    def cdf(self, value) -> Tensor:
        value = self._value(value, self.rate)
        return 1 - self.base_dist.cdf(1 / value)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + lgamma(a) - (1 + a) * digamma(a)


__all__ = [
    "Chi2",
    "Gamma",
    "InverseGamma",
    "gammainc",
    "standard_gamma",
    "standard_gamma_grad",
]
