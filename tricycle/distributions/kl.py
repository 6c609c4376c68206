"""``kl_divergence(p, q)``: KL(p || q) = E_p[log p(x) - log q(x)], one per distribution of the
broadcast batch, in closed form for the pairs registered here (``register_kl``), as
``torch.distributions.kl``.

    Normal, Normal:       (var_ratio + ((loc_p - loc_q) / scale_q)^2 - 1 - log var_ratio) / 2
                          with var_ratio = (scale_p / scale_q)^2
    Bernoulli, Bernoulli: sum over x in {0, 1} of p(x) (log p(x) - log q(x))
    Categorical (and OneHotCategorical) pairs: sum_k p_k (log p_k - log q_k)
    Uniform, Uniform:     log((high_q - low_q) / (high_p - low_p)), inf unless [low_p, high_p)
                          lies in [low_q, high_q)
    Uniform, Normal:      the expected -log q over U[low, high), minus its entropy
    Normal, Uniform:      inf (a normal's mass reaches outside any interval)
    MultivariateNormal, MultivariateNormal: (tr(Sigma_q^-1 Sigma_p) + (loc_q - loc_p)^T
                          Sigma_q^-1 (loc_q - loc_p) - n) / 2 + log sqrt(det Sigma_q / det Sigma_p)
    Independent pairs:    the base pair's, summed over the reinterpreted axes

Where q gives probability 0 to an outcome p can take, the divergence is inf; an outcome p
never takes adds 0. A pair of families with none registered raises NotImplementedError; the
lookup takes the most specific registration by the classes' order of inheritance, so a
subclass of Normal finds Normal's formula.
"""

import math

from tricycle import factories, unary
from tricycle.distributions.bernoulli import Bernoulli
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.independent import Independent
from tricycle.distributions.linalg import solve_triangular
from tricycle.distributions.multivariate_normal import MultivariateNormal, mahalanobis
from tricycle.distributions.normal import Normal
from tricycle.distributions.one_hot_categorical import OneHotCategorical
from tricycle.distributions.uniform import Uniform
from tricycle.distributions.utils import broadcast_all, sum_rightmost
from tricycle.tensor import Tensor

_REGISTRY: dict[tuple[type, type], object] = {}


def register_kl(type_p: type, type_q: type):
    """A decorator registering ``fn(p, q)`` as KL(p || q) for the classes type_p, type_q (and
    their subclasses, unless a more specific pair is registered)."""
    for name, kind in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(kind, type) and issubclass(kind, Distribution)):
            raise TypeError(f"register_kl: {name} must be a Distribution subclass, got {kind!r}")

    def decorator(fn):
        _REGISTRY[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q), of shape the broadcast of p's and q's batch shapes, differentiable in both
    distributions' parameters."""
    for name, d in (("p", p), ("q", q)):
        if not isinstance(d, Distribution):
            raise TypeError(f"kl_divergence: {name} must be a Distribution, got {d!r}")
    for kind_p in type(p).__mro__:  # the most specific registered pair first
        for kind_q in type(q).__mro__:
            if (kind_p, kind_q) in _REGISTRY:
                return _REGISTRY[kind_p, kind_q](p, q)
    raise NotImplementedError(
        f"kl_divergence: no KL(p || q) is registered for p {type(p).__name__} and q "
        f"{type(q).__name__} (register_kl(type_p, type_q) adds one)"
    )


def _infinite_like(t: Tensor) -> Tensor:
    """inf in t's shape, dtype and device, with no gradient."""
    return factories.full(t.shape, math.inf, dtype=t.dtype, device=t.device)


def _weighted_log_ratio(p_probs: Tensor, log_p: Tensor, log_q: Tensor, q_probs: Tensor) -> Tensor:
    """p (log p - log q) elementwise: inf where q = 0 < p, 0 where p = 0 (log 0 * 0 is 0)."""
    t = p_probs * (log_p - log_q)
    xp = t.xp
    t = t.masked_fill(xp.broadcast_to(q_probs.array == 0, t.shape), math.inf)
    return t.masked_fill(xp.broadcast_to(p_probs.array == 0, t.shape), 0.0)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return (var_ratio + t1 - 1 - unary.log(var_ratio)) * 0.5


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    one, zero = p.probs, 1 - p.probs  # p(1), p(0)
    kl = 0
    for x, p_x, q_x in ((1.0, one, q.probs), (0.0, zero, 1 - q.probs)):
        value = factories.full_like(p.probs, x)
        log_p, log_q = p._log_prob(value), q._log_prob(value)
        kl = kl + _weighted_log_ratio(p_x, log_p, log_q, q_x)
    return kl


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    return _weighted_log_ratio(p.probs, p.logits, q.logits, q.probs).sum(axis=-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = unary.log((q.high - q.low) / (p.high - p.low))
    outside = (q.low.array > p.low.array) | (q.high.array < p.high.array)
    return result.masked_fill(result.xp.broadcast_to(outside, result.shape), math.inf)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    t1 = unary.log(q.scale * math.sqrt(2 * math.pi) / width)
    t2 = width**2 * (1 / 12)
    t3 = ((p.high + p.low - q.loc * 2) * 0.5) ** 2
    return t1 + (t2 + t3) * 0.5 / q.scale**2


@register_kl(Normal, Uniform)
def _kl_normal_uniform(p: Normal, q: Uniform) -> Tensor:
    loc, _ = broadcast_all("kl_divergence", loc=p.loc, low=q.low)
    return _infinite_like(loc)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q) -> Tensor:
    """(tr(Sigma_q^-1 Sigma_p) + mahalanobis_q(loc_q - loc_p) - n) / 2 + log sqrt(det Sigma_q
    / det Sigma_p), with tr(Sigma_q^-1 Sigma_p) = |Lq^-1 Lp|^2 (Frobenius)."""
    if p.event_shape != q.event_shape:
        raise ValueError(
            "kl_divergence: multivariate normals of different event shapes, "
            f"{p.event_shape} and {q.event_shape}"
        )
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    trace = (solve_triangular(Lq, Lp) ** 2).sum(axis=(-2, -1))
    M = mahalanobis(Lq, q.loc - p.loc)
    return (trace + M - p.event_shape[0]) * 0.5 + q._half_log_det() - p._half_log_det()


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError(
            "kl_divergence: Independent distributions with different "
            f"reinterpreted_batch_ndims ({p.reinterpreted_batch_ndims} and "
            f"{q.reinterpreted_batch_ndims})"
        )
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


__all__ = ["kl_divergence", "register_kl"]
