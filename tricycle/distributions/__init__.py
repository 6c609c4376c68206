"""Probability distributions, as ``torch.distributions`` (``import tricycle.distributions as D``):
``Normal``, ``Uniform``, ``Bernoulli``, ``Binomial``, ``Categorical``, ``OneHotCategorical``,
``Multinomial``, ``MultivariateNormal``, ``Poisson``, ``Independent``; ``Exponential``,
``Laplace``, ``Cauchy``, ``Geometric``, ``NegativeBinomial`` and the transformed families
(``TransformedDistribution`` with the ``transforms``: ``LogNormal``, ``LogisticNormal``,
``HalfNormal``, ``HalfCauchy``, ``Gumbel``, ``Weibull``, ``Pareto``); the gamma family and
its relatives (``Gamma``, ``Chi2``, ``InverseGamma``, ``Beta``, ``Dirichlet``, ``StudentT``,
``FisherSnedecor``), ``Kumaraswamy``, ``ContinuousBernoulli``, the relaxed families
(``RelaxedBernoulli``, ``RelaxedOneHotCategorical``, ``OneHotCategoricalStraightThrough``),
``MixtureSameFamily``, ``LowRankMultivariateNormal``, ``VonMises``, ``GeneralizedPareto``,
``LKJCholesky``, ``Wishart`` and the base ``ExponentialFamily``; ``kl_divergence`` between
them, and ``biject_to`` / ``transform_to`` (``constraint_registry``) from the reals onto a
constraint::

    import tricycle.distributions as D

    policy = D.Categorical(logits=model(state))  # (B, A) logits: a batch of B policies
    action = policy.sample()                     # (B,) int64, no gradient
    loss = -(policy.log_prob(action) * advantage).mean()  # REINFORCE

    posterior = D.Normal(mu, sigma)              # a VAE's encoder output
    z = posterior.rsample()                      # the gradient flows through the draw
    kl = D.kl_divergence(posterior, D.Normal(0.0, 1.0)).sum()

Each family is a module of its own; its formulas (``log_prob``, ``entropy``, ``mean``, ...)
are made of tricycle's differentiable ops, so gradients reach the parameters with no code of
their own. Draws come from tricycle's generator (``tricycle.manual_seed`` repeats them) on
the parameters' device. ``constraints`` holds the sets the parameters and values are checked
against (validation is on by default, as torch's); ``utils`` what the families share.
"""

from tricycle.distributions import (
    constraint_registry,
    constraints,
    kl_gamma,  # noqa: F401 - registers the pairs of its families
    kl_simple,  # noqa: F401 - registers the pairs of its families
    transforms,
    utils,
)
from tricycle.distributions.bernoulli import Bernoulli
from tricycle.distributions.binomial import Binomial
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.constraint_registry import biject_to, transform_to
from tricycle.distributions.counts import Geometric, NegativeBinomial
from tricycle.distributions.dirichlet import Beta, Dirichlet
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.exp_family import ExponentialFamily
from tricycle.distributions.gamma import Chi2, Gamma, InverseGamma
from tricycle.distributions.generalized_pareto import GeneralizedPareto
from tricycle.distributions.independent import Independent
from tricycle.distributions.kl import kl_divergence, register_kl
from tricycle.distributions.lkj_cholesky import LKJCholesky
from tricycle.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tricycle.distributions.mixture_same_family import MixtureSameFamily
from tricycle.distributions.multinomial import Multinomial
from tricycle.distributions.multivariate_normal import MultivariateNormal
from tricycle.distributions.normal import Normal
from tricycle.distributions.one_hot_categorical import OneHotCategorical
from tricycle.distributions.poisson import Poisson
from tricycle.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    OneHotCategoricalStraightThrough,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from tricycle.distributions.simple_families import Cauchy, Exponential, Laplace
from tricycle.distributions.student_t import FisherSnedecor, StudentT
from tricycle.distributions.transformed_distribution import TransformedDistribution
from tricycle.distributions.transformed_families import (
    Gumbel,
    HalfCauchy,
    HalfNormal,
    LogisticNormal,
    LogNormal,
    Pareto,
    Weibull,
)
from tricycle.distributions.transforms import *  # noqa: F403 - torch's names, as torch's
from tricycle.distributions.uniform import Uniform
from tricycle.distributions.unit_families import ContinuousBernoulli, Kumaraswamy
from tricycle.distributions.von_mises import VonMises
from tricycle.distributions.wishart import Wishart

__all__ = [
    "Bernoulli",
    "Beta",
    "Binomial",
    "Categorical",
    "Cauchy",
    "Chi2",
    "ContinuousBernoulli",
    "Dirichlet",
    "Distribution",
    "ExpRelaxedCategorical",
    "Exponential",
    "ExponentialFamily",
    "FisherSnedecor",
    "Gamma",
    "GeneralizedPareto",
    "Geometric",
    "Gumbel",
    "HalfCauchy",
    "HalfNormal",
    "Independent",
    "InverseGamma",
    "Kumaraswamy",
    "LKJCholesky",
    "Laplace",
    "LogNormal",
    "LogisticNormal",
    "LogitRelaxedBernoulli",
    "LowRankMultivariateNormal",
    "MixtureSameFamily",
    "Multinomial",
    "MultivariateNormal",
    "NegativeBinomial",
    "Normal",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
    "Pareto",
    "Poisson",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
    "StudentT",
    "TransformedDistribution",
    "Uniform",
    "VonMises",
    "Weibull",
    "Wishart",
    "biject_to",
    "constraint_registry",
    "constraints",
    "kl_divergence",
    "register_kl",
    "transform_to",
    "transforms",
    "utils",
    *transforms.__all__,
]
