"""``kl_divergence`` pairs of the simpler families (``simple_families``,
``transformed_families``, ``counts``), registered as torch registers them: closed forms of
KL(p || q) = E_p[log p(x) - log q(x)], one per distribution of the batch.

    Exponential, Exponential: rate_q / rate_p - 1 - log(rate_q / rate_p)
    Laplace, Laplace:         -log(b_p / b_q) + |mu_p - mu_q| / b_q
                              + (b_p / b_q) exp(-|mu_p - mu_q| / b_p) - 1
    Cauchy, Cauchy:           log(((g_p + g_q)^2 + (mu_p - mu_q)^2) / (4 g_p g_q))
    Gumbel, Gumbel; Geometric, Geometric; Pareto, Pareto; HalfNormal, HalfNormal (the two
    normals'); and mixed pairs with Normal, Uniform, Exponential, Gumbel, Laplace, Pareto.
    TransformedDistribution pairs of equal transforms and event shapes: the bases' KL.

Where p gives mass to a set q gives none (a Normal against an Exponential, a Pareto whose
support starts below q's), the divergence is inf, as torch's. Every formula is made of
tricycle's differentiable ops: gradients reach both distributions' parameters.
"""

import math

from tricycle.distributions.counts import Geometric
from tricycle.distributions.kl import _infinite_like, _kl_normal_normal, kl_divergence, register_kl
from tricycle.distributions.normal import Normal
from tricycle.distributions.simple_families import Cauchy, Exponential, Laplace
from tricycle.distributions.transformed_distribution import TransformedDistribution
from tricycle.distributions.transformed_families import EULER_GAMMA, Gumbel, HalfNormal, Pareto
from tricycle.distributions.uniform import Uniform
from tricycle.tensor import Tensor
from tricycle.torch_special import erf


def _inf_where(result: Tensor, where) -> Tensor:
    """``result`` with inf where the boolean array ``where`` holds (broadcast to it)."""
    return result.masked_fill(result.xp.broadcast_to(where, result.shape), math.inf)


def _x_log_x(x: Tensor) -> Tensor:
    return x * x.log()


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q) -> Tensor:
    scale_ratio = p.scale / q.scale
    distance = (p.loc - q.loc).abs()
    return -scale_ratio.log() + distance / q.scale + scale_ratio * (-distance / p.scale).exp() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q) -> Tensor:
    spread = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return spread.log() - (p.scale * q.scale * 4).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q) -> Tensor:
    ratio, q_loc, p_loc = p.scale / q.scale, q.loc / q.scale, p.loc / q.scale
    t1 = -ratio.log() - q_loc + p_loc
    t3 = (q_loc + (ratio + 1).lgamma() - p_loc).exp()
    return t1 + ratio * EULER_GAMMA + t3 - (1 + EULER_GAMMA)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q) -> Tensor:
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _inf_where(result, p.scale.array < q.scale.array)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError(
            "kl_divergence: transformed distributions of different transforms or event shapes "
            f"({type(p).__name__}, {type(q).__name__})"
        )
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q) -> Tensor:
    variance, rate_sq = q.scale.pow(2), p.rate.pow(2)
    t1 = (rate_sq * variance * (2 * math.pi)).log() * 0.5
    return t1 - 1 + (rate_sq.reciprocal() - q.loc / p.rate + q.loc.pow(2) * 0.5) / variance


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q) -> Tensor:
    product, loc_ratio = p.rate * q.scale, q.loc / q.scale
    t2 = loc_ratio.exp() * product / (product + 1)
    return product.log() - 1 - loc_ratio + t2 + product.reciprocal()


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q) -> Tensor:
    ratio = p.scale / q.scale
    t1 = (ratio / math.sqrt(2 * math.pi)).log()
    t2 = (ratio * (math.pi * 0.5)).pow(2) / 3
    t3 = ((p.loc + p.scale * EULER_GAMMA - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (EULER_GAMMA + 1)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q) -> Tensor:
    variance = q.scale.pow(2)
    ratio = p.scale.pow(2) / variance
    t1 = (ratio * (2 / math.pi)).log() * 0.5
    mean_term = (p.loc.pow(2) * 0.5 - p.loc * q.loc + q.loc.pow(2) * 0.5) / variance
    return -t1 + ratio + mean_term - 1


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q) -> Tensor:
    mean_ratio, var_ratio = p.loc / q.scale, (p.scale / q.scale).pow(2)
    loc_ratio = q.loc / q.scale
    t3 = (-mean_ratio + var_ratio * 0.5 + loc_ratio).exp()
    return -var_ratio.log() * 0.5 + mean_ratio - loc_ratio + t3 - 0.5 * (1 + math.log(2 * math.pi))


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q) -> Tensor:
    difference = p.loc - q.loc
    standardised = difference / p.scale
    t2 = p.scale * math.sqrt(2 / math.pi) * (standardised.pow(2) * -0.5).exp()
    t3 = difference * erf(standardised * math.sqrt(0.5))
    return -(p.scale / q.scale).log() + (t2 + t3) / q.scale - 0.5 * (1 + math.log(0.5 * math.pi))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q) -> Tensor:
    product = p.scale * q.rate
    t3 = p.alpha * product / (p.alpha - 1)
    result = (p.alpha / product).log() - p.alpha.reciprocal() + t3 - 1
    return _inf_where(result, p.alpha.array <= 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q) -> Tensor:
    variance2 = q.scale.pow(2) * 2
    common = p.scale / (p.alpha - 1)
    t1 = (q.scale * p.alpha * math.sqrt(2 * math.pi) / p.scale).log()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    result = t1 - p.alpha.reciprocal() + (t3 + t4) / variance2 - 1
    return _inf_where(result, p.alpha.array <= 2)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q) -> Tensor:
    result = q.rate * (p.high + p.low) * 0.5 - ((p.high - p.low) * q.rate).log()
    return _inf_where(result, p.low.array < 0)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q) -> Tensor:
    common = q.scale / (p.high - p.low)
    high, low = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    t1 = common.log() + (high + low) * 0.5
    return t1 - common * ((-high).exp() - (-low).exp())


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q) -> Tensor:
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _inf_where(t2 * (q.alpha + 1) - t1, p.low.array < q.scale.array)


def _infinite(p, q) -> Tensor:
    """inf: p gives mass where q gives none."""
    first = next(v for v in p.__dict__.values() if isinstance(v, Tensor))
    return _infinite_like(first.expand(p.batch_shape) if first.shape != p.batch_shape else first)


for _p, _q in ((Exponential, Uniform), (Exponential, Pareto), (Gumbel, Uniform), (Gumbel, Pareto),
               (Gumbel, Exponential), (Laplace, Uniform), (Laplace, Pareto),
               (Laplace, Exponential), (Normal, Pareto), (Normal, Exponential),
               (Pareto, Uniform)):  # fmt: skip
    register_kl(_p, _q)(_infinite)

__all__: list[str] = []
