"""``kl_divergence`` in closed form for the gamma family, the Dirichlet and Beta, the
continuous Bernoulli and the low-rank multivariate normal, with each other and with the
normal, uniform, exponential, Laplace, Gumbel and Pareto families, as torch registers them
(``register_kl``; the formulas are torch's kl module's):

    Gamma, Gamma:         b_q log(r_p / r_q) + lgamma(b_q) - lgamma(b_p)
                          + (b_p - b_q) digamma(b_p) + (r_q - r_p) b_p / r_p
    Dirichlet, Dirichlet: lgamma(sum c_p) - lgamma(sum c_q) - sum (lgamma c_p - lgamma c_q)
                          + sum (c_p - c_q)(digamma c_p - digamma(sum c_p))
    Beta, Beta:           the same, of two classes
    p, q of other families: -H(p) - E_p[log q], E_p[log q] from p's moments (Beta, Normal ...)
    a p whose support reaches outside q's: inf (Gamma, Beta; Normal, Gamma ...)
    LowRankMultivariateNormal with it or MultivariateNormal: the multivariate normals' formula
                          on the dense covariance (n x n), as MultivariateNormal's

Importing this module registers them (``tricycle.distributions`` does).
"""

import math

from tricycle import factories
from tricycle.distributions.dirichlet import Beta, Dirichlet
from tricycle.distributions.gamma import Gamma
from tricycle.distributions.kl import kl_divergence, register_kl
from tricycle.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tricycle.distributions.multivariate_normal import MultivariateNormal
from tricycle.distributions.normal import Normal
from tricycle.distributions.simple_families import Exponential, Laplace
from tricycle.distributions.transformed_families import Gumbel, Pareto
from tricycle.distributions.uniform import Uniform
from tricycle.distributions.unit_families import ContinuousBernoulli
from tricycle.tensor import Tensor
from tricycle.torch_pointwise import xlogy
from tricycle.torch_special import digamma, lgamma


def _infinite_like(t: Tensor) -> Tensor:
    return factories.full(t.shape, math.inf, dtype=t.dtype, device=t.device)


def _inf_where(t: Tensor, mask) -> Tensor:
    """t with inf where ``mask`` (an array, broadcast to t)."""
    return t.masked_fill(t.xp.broadcast_to(mask, t.shape), math.inf)


def _x_log_x(t: Tensor) -> Tensor:
    return xlogy(t, t)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    total_p, total_q = p.concentration.sum(axis=-1), q.concentration.sum(axis=-1)
    t1 = lgamma(total_p) - lgamma(total_q)
    t2 = (lgamma(p.concentration) - lgamma(q.concentration)).sum(axis=-1)
    t3 = p.concentration - q.concentration
    t4 = digamma(p.concentration) - digamma(total_p).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(axis=-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    total_p = p.concentration1 + p.concentration0
    total_q = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(total_p)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(total_q)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    t5 = (total_q - total_p) * digamma(total_p)
    return t1 - t2 + t3 + t4 + t5


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._log_normaliser() + (-p.probs).log1p()
    t3 = -q._log_normaliser() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Beta, ContinuousBernoulli)
@register_kl(Uniform, ContinuousBernoulli)
def _kl_to_cb(p, q: ContinuousBernoulli) -> Tensor:
    """-H(p) - E_p[x] logit(q) - log(1 - q) - log C(q); inf where a uniform's interval
    reaches 0 or 1 (torch's rule)."""
    result = -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._log_normaliser()
    if isinstance(p, Uniform):
        result = _inf_where(result, (p.high.array >= 1) | (p.low.array <= 0))
    return result


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b = p.concentration1, p.concentration0
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (q.concentration - 1) * (digamma(a) - digamma(a + b))
    return -p.entropy() + t2 - t3 + q.rate * a / (a + b)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    a, b = p.concentration1, p.concentration0
    mean = a / (a + b)
    variance = q.scale**2
    t2 = 0.5 * (variance * (2 * math.pi)).log()
    t3 = (mean * (1 - mean) / (a + b + 1) + mean**2) * 0.5
    return -p.entropy() + t2 + (t3 - q.loc * mean + q.loc**2 * 0.5) / variance


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where(result, (q.low.array > 0) | (q.high.array < 1))


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    t2 = 0.5 * (math.log(2 * math.pi) + (q.loc / q.scale) ** 2) + q.scale.log()
    t3 = (p.variance + p.mean**2 - 2 * q.loc * p.mean) / (2 * q.scale**2)
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + (q.high - q.low).log()
    return _inf_where(result, (q.low.array >= 0) | (q.high.array <= 1))


@register_kl(Gamma, Beta)
@register_kl(Gamma, ContinuousBernoulli)
@register_kl(Gamma, Uniform)
def _kl_gamma_infinity(p: Gamma, q) -> Tensor:
    return _infinite_like(p.concentration)


@register_kl(Normal, Beta)
@register_kl(Normal, ContinuousBernoulli)
@register_kl(Normal, Gamma)
def _kl_normal_infinity(p: Normal, q) -> Tensor:
    return _infinite_like(p.loc)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, rate = p.concentration, p.rate
    variance, rate_squared = q.scale**2, rate**2
    t1 = 0.5 * (rate_squared * variance * (2 * math.pi)).log() - a - lgamma(a)
    t2 = 0.5 * (a**2 + a) / rate_squared
    t3 = q.loc * a / rate
    return t1 + (a - 1) * digamma(a) + (t2 - t3 + 0.5 * q.loc**2) / variance


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    width = p.high - p.low
    t1 = width.log()
    t2 = (q.concentration1 - 1) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t3 = (q.concentration0 - 1) * (_x_log_x(1 - p.high) - _x_log_x(1 - p.low) + width) / width
    t4 = lgamma(q.concentration1) + lgamma(q.concentration0)
    t4 = t4 - lgamma(q.concentration1 + q.concentration0)
    return _inf_where(t3 + t4 - t1 - t2, (p.high.array > 1) | (p.low.array < 0))


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    width = p.high - p.low
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    t4 = q.rate * (p.high + p.low) / 2
    return _inf_where(-width.log() + t2 + t3 + t4, p.low.array < 0)


_EULER = 0.57721566490153286060


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    mean = p.concentration1 / (p.concentration1 + p.concentration0)
    return -p.entropy() - q.rate.log() + q.rate * mean


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + lgamma(q.concentration) + q.concentration * _EULER - (1 + _EULER)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    a = p.concentration
    rate_scale = p.rate * q.scale
    loc_scale = q.loc / q.scale
    t1 = (a - 1) * digamma(a) - lgamma(a) - a
    t2 = rate_scale.log() + a / rate_scale
    t3 = loc_scale.exp() * (1 + 1 / rate_scale) ** (-a) - loc_scale
    return t1 + t2 + t3


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    """inf where alpha <= 1 (the Pareto's mean diverges)."""
    common = p.scale.log() + 1 / p.alpha
    t1 = p.alpha.log() - common
    t2 = lgamma(q.concentration) - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _inf_where(t1 + t2 + t3 + t4 - 1, p.alpha.array <= 1)


@register_kl(Beta, Pareto)
@register_kl(ContinuousBernoulli, Pareto)
@register_kl(Gamma, Pareto)
@register_kl(Exponential, Beta)
@register_kl(Exponential, ContinuousBernoulli)
@register_kl(Gumbel, Beta)
@register_kl(Gumbel, ContinuousBernoulli)
@register_kl(Gumbel, Gamma)
@register_kl(Laplace, Beta)
@register_kl(Laplace, ContinuousBernoulli)
@register_kl(Laplace, Gamma)
@register_kl(Pareto, Beta)
@register_kl(Pareto, ContinuousBernoulli)
def _kl_outside_support(p, q) -> Tensor:
    """p's support reaches where q has no mass: inf, of p's batch shape."""
    return _infinite_like(p.mean if not isinstance(p, Pareto) else p.scale)


def _dense(d) -> MultivariateNormal:
    """A low-rank normal as the MultivariateNormal of its covariance (n x n)."""
    if isinstance(d, MultivariateNormal):
        return d
    return MultivariateNormal(d.loc, covariance_matrix=d.covariance_matrix, validate_args=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank(p, q) -> Tensor:
    return kl_divergence(_dense(p), _dense(q))


__all__: list[str] = []
