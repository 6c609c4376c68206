"""Probability distributions, as ``torch.distributions`` (``import tricycle.distributions as D``):
``Normal``, ``Uniform``, ``Bernoulli``, ``Binomial``, ``Categorical``, ``OneHotCategorical``,
``Multinomial``, ``MultivariateNormal``, ``Poisson``, ``Independent`` and ``kl_divergence``
between them::

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

from tricycle.distributions import constraints, utils
from tricycle.distributions.bernoulli import Bernoulli
from tricycle.distributions.binomial import Binomial
from tricycle.distributions.categorical import Categorical
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.independent import Independent
from tricycle.distributions.kl import kl_divergence, register_kl
from tricycle.distributions.multinomial import Multinomial
from tricycle.distributions.multivariate_normal import MultivariateNormal
from tricycle.distributions.normal import Normal
from tricycle.distributions.one_hot_categorical import OneHotCategorical
from tricycle.distributions.poisson import Poisson
from tricycle.distributions.uniform import Uniform

__all__ = [
    "Bernoulli",
    "Binomial",
    "Categorical",
    "Distribution",
    "Independent",
    "Multinomial",
    "MultivariateNormal",
    "Normal",
    "OneHotCategorical",
    "Poisson",
    "Uniform",
    "constraints",
    "kl_divergence",
    "register_kl",
    "utils",
]
