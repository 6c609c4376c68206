"""Kumaraswamy, ContinuousBernoulli, the relaxed families (LogitRelaxedBernoulli,
RelaxedBernoulli, ExpRelaxedCategorical, RelaxedOneHotCategorical),
OneHotCategoricalStraightThrough, MixtureSameFamily, LowRankMultivariateNormal, VonMises
and the kl_divergence pairs of kl_gamma, against torch.distributions in float64: log_prob,
entropy, cdf/icdf, the moments, their gradients; rsample values and gradients with the same
uniform or normal noise fed to torch (its ``torch.rand`` / ``_standard_normal`` replaced by
ours); draws' statistics and shapes; and the errors."""

import numpy as np
import pytest

import tricycle
import tricycle.distributions as D
from tricycle.distributions import kl_gamma  # noqa: F401 - registers the pairs
from tricycle.distributions.dirichlet import Beta, Dirichlet
from tricycle.distributions.gamma import Gamma
from tricycle.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tricycle.distributions.mixture_same_family import MixtureSameFamily
from tricycle.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    OneHotCategoricalStraightThrough,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from tricycle.distributions.unit_families import ContinuousBernoulli, Kumaraswamy
from tricycle.distributions.von_mises import VonMises
from tricycle.random import manual_seed

torch = pytest.importorskip("torch")
TD = torch.distributions
from torch.distributions.relaxed_bernoulli import LogitRelaxedBernoulli as TorchLogitRB  # noqa: E402
from torch.distributions.relaxed_categorical import ExpRelaxedCategorical as TorchExpRC  # noqa: E402

RNG = np.random.default_rng(0)
P = RNG.uniform(0.1, 0.9, (2, 3))
P[1, 1], P[1, 2] = 0.4996, 0.5  # inside the continuous Bernoulli's Taylor region
Q = RNG.dirichlet(np.ones(4), size=2)
TEMPERATURE = np.array([0.5, 1.3, 2.0])


def both(ours_cls, theirs_cls, *params, **named):
    """Our distribution and torch's of the same float64 parameters, requiring grad."""
    ours = [tricycle.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    our_named = {k: tricycle.tensor(v, requires_grad=True) for k, v in named.items()}
    their_named = {k: torch.tensor(v, requires_grad=True) for k, v in named.items()}
    ours_all = ours + list(our_named.values())
    theirs_all = theirs + list(their_named.values())
    return ours_cls(*ours, **our_named), theirs_cls(*theirs, **their_named), ours_all, theirs_all


CASES = {
    "Kumaraswamy": lambda: (
        both(Kumaraswamy, TD.Kumaraswamy, RNG.uniform(0.5, 3, (2, 3)), RNG.uniform(0.5, 3, 3)),
        RNG.uniform(0.05, 0.95, (4, 2, 3)),
    ),
    "ContinuousBernoulli(probs)": lambda: (
        both(ContinuousBernoulli, TD.ContinuousBernoulli, probs=P),
        RNG.uniform(0.05, 0.95, (4, 2, 3)),
    ),
    "ContinuousBernoulli(logits)": lambda: (
        both(ContinuousBernoulli, TD.ContinuousBernoulli, logits=np.log(P / (1 - P))),
        RNG.uniform(0.05, 0.95, (4, 2, 3)),
    ),
    "LogitRelaxedBernoulli": lambda: (
        both(LogitRelaxedBernoulli, TorchLogitRB, TEMPERATURE, probs=P),
        RNG.normal(size=(4, 2, 3)),
    ),
    "RelaxedBernoulli": lambda: (
        both(RelaxedBernoulli, TD.RelaxedBernoulli, TEMPERATURE, logits=RNG.normal(size=(2, 3))),
        RNG.uniform(0.05, 0.95, (4, 2, 3)),
    ),
    "ExpRelaxedCategorical": lambda: (
        both(ExpRelaxedCategorical, TorchExpRC, np.array(0.7), probs=Q),
        np.log(RNG.dirichlet(np.ones(4), size=(3, 2))),
    ),
    "RelaxedOneHotCategorical": lambda: (
        both(
            RelaxedOneHotCategorical,
            TD.RelaxedOneHotCategorical,
            np.array(0.7),
            logits=RNG.normal(size=(2, 4)),
        ),  # fmt: skip
        RNG.dirichlet(np.ones(4), size=(3, 2)),
    ),
    "MixtureSameFamily": lambda: (
        _mixture(RNG.normal(size=(2, 5)), RNG.normal(size=(2, 5)), RNG.uniform(0.5, 2, (2, 5))),
        RNG.normal(size=(3, 2)),
    ),
    "LowRankMultivariateNormal": lambda: (
        both(
            LowRankMultivariateNormal,
            TD.LowRankMultivariateNormal,
            RNG.normal(size=(2, 4)),
            RNG.normal(size=(4, 2)),
            RNG.uniform(0.5, 2, (2, 4)),
        ),  # fmt: skip
        RNG.normal(size=(3, 2, 4)),
    ),
    "VonMises": lambda: (
        both(VonMises, TD.VonMises, RNG.normal(size=(2, 3)), np.array([0.3, 2.0, 40.0])),
        RNG.uniform(-3, 3, (4, 2, 3)),
    ),
}
ENTROPY = {"Kumaraswamy", "ContinuousBernoulli(probs)", "ContinuousBernoulli(logits)",
           "LowRankMultivariateNormal"}  # fmt: skip
MOMENTS = {
    "Kumaraswamy": ("mean", "variance", "mode"),
    "ContinuousBernoulli(probs)": ("mean", "variance"),
    "ContinuousBernoulli(logits)": ("mean", "variance"),
    "MixtureSameFamily": ("mean", "variance"),
    "LowRankMultivariateNormal": (
        "mean",
        "variance",
        "covariance_matrix",
        "precision_matrix",
        "scale_tril",
    ),  # fmt: skip
    "VonMises": ("mean", "variance"),
}
# torch's von Mises Bessel functions are polynomials (relative error about 1e-7); ours exact
TOLERANCE = {"VonMises": dict(rtol=1e-6, atol=1e-6)}


def _mixture(logits, loc, scale):
    ours = [tricycle.tensor(p, requires_grad=True) for p in (logits, loc, scale)]
    theirs = [torch.tensor(p, requires_grad=True) for p in (logits, loc, scale)]
    mine = MixtureSameFamily(D.Categorical(logits=ours[0]), D.Normal(ours[1], ours[2]))
    torchs = TD.MixtureSameFamily(TD.Categorical(logits=theirs[0]), TD.Normal(*theirs[1:]))
    return mine, torchs, ours, theirs


@pytest.mark.parametrize("name", list(CASES))
def test_formulas_and_their_gradients_against_torch(name):
    (ours, theirs, our_params, their_params), values = CASES[name]()
    tolerance = TOLERANCE.get(name, dict(rtol=1e-10, atol=1e-12))
    for what in MOMENTS.get(name, ()):
        np.testing.assert_allclose(
            getattr(ours, what).array, getattr(theirs, what).detach().numpy(), **tolerance
        )
    our_total = ours.log_prob(tricycle.tensor(values)).sum()
    their_total = theirs.log_prob(torch.tensor(values)).sum()
    if name in ENTROPY:
        np.testing.assert_allclose(
            ours.entropy().array, theirs.entropy().detach().numpy(), **tolerance
        )
        our_total = our_total + ours.entropy().sum() * 0.7
        their_total = their_total + theirs.entropy().sum() * 0.7
    np.testing.assert_allclose(our_total.array, their_total.detach().numpy(), **tolerance)
    our_total.backward()
    their_total.backward()
    grad_rtol = 1e-6 if name == "VonMises" else 1e-8  # torch's Bessel polynomials
    for mine, torchs in zip(our_params, their_params):
        np.testing.assert_allclose(mine.grad.array, torchs.grad.numpy(), rtol=grad_rtol, atol=1e-9)
    assert (ours.batch_shape, ours.event_shape) == (theirs.batch_shape, theirs.event_shape)
    assert ours.sample((3,)).shape == tuple(theirs.sample((3,)).shape)


def _fed(monkeypatch, module, name, draws):
    """torch's ``module.name`` (torch.rand, _standard_normal) giving ``draws`` in turn."""
    given = iter([torch.tensor(d) for d in draws])
    monkeypatch.setattr(module, name, lambda *args, **kwargs: next(given))


@pytest.mark.parametrize(
    "name", ["Kumaraswamy", "ContinuousBernoulli(logits)", "LogitRelaxedBernoulli",
             "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical"],
)  # fmt: skip
def test_rsample_with_torchs_uniforms(name, monkeypatch):
    (ours, theirs, our_params, their_params), _ = CASES[name]()
    shape = (5,) + ours.batch_shape + ours.event_shape
    manual_seed(4)
    uniforms = tricycle.rand(shape, dtype=tricycle.float64).array
    _fed(monkeypatch, torch, "rand", [uniforms])
    manual_seed(4)
    our_draw, their_draw = ours.rsample((5,)), theirs.rsample((5,))
    np.testing.assert_allclose(our_draw.array, their_draw.detach().numpy(), rtol=1e-12)
    w = RNG.normal(size=shape)
    (our_draw * tricycle.tensor(w)).sum().backward()
    (their_draw * torch.tensor(w)).sum().backward()
    for mine, torchs in zip(our_params, their_params):
        np.testing.assert_allclose(mine.grad.array, torchs.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_lowrank_rsample_with_torchs_normals(monkeypatch):
    (ours, theirs, our_params, their_params), _ = CASES["LowRankMultivariateNormal"]()
    manual_seed(5)
    eps_w = tricycle.randn((6, 2, 2), dtype=tricycle.float64).array
    eps_d = tricycle.randn((6, 2, 4), dtype=tricycle.float64).array
    module = __import__("torch.distributions.lowrank_multivariate_normal", fromlist=["x"])
    _fed(monkeypatch, module, "_standard_normal", [eps_w, eps_d])
    manual_seed(5)
    our_draw, their_draw = ours.rsample((6,)), theirs.rsample((6,))
    np.testing.assert_allclose(our_draw.array, their_draw.detach().numpy(), rtol=1e-12)
    (our_draw**2).sum().backward()
    (their_draw**2).sum().backward()
    for mine, torchs in zip(our_params, their_params):
        np.testing.assert_allclose(mine.grad.array, torchs.grad.numpy(), rtol=1e-10)


def test_continuous_bernoulli_cdf_icdf_against_torch():
    (ours, theirs, our_params, their_params), values = CASES["ContinuousBernoulli(probs)"]()
    values = np.concatenate([values, np.zeros((1, 2, 3)), np.ones((1, 2, 3))])
    our_cdf, their_cdf = ours.cdf(tricycle.tensor(values)), theirs.cdf(torch.tensor(values))
    np.testing.assert_allclose(our_cdf.array, their_cdf.detach().numpy(), rtol=1e-12)
    our_icdf = ours.icdf(tricycle.tensor(values[:4]))
    their_icdf = theirs.icdf(torch.tensor(values[:4]))
    np.testing.assert_allclose(our_icdf.array, their_icdf.detach().numpy(), rtol=1e-12)
    (our_cdf.sum() + our_icdf.sum()).backward()
    (their_cdf.sum() + their_icdf.sum()).backward()
    np.testing.assert_allclose(our_params[0].grad.array, their_params[0].grad.numpy(), rtol=1e-9)


def test_straight_through_draws_are_one_hot_with_the_probabilities_gradient():
    logits = RNG.normal(size=(2, 4))
    ours = tricycle.tensor(logits, requires_grad=True)
    theirs = torch.tensor(logits, requires_grad=True)
    draw = OneHotCategoricalStraightThrough(logits=ours).rsample((3,))
    assert np.all(draw.array.sum(-1) == 1) and set(np.unique(draw.array)) <= {0.0, 1.0}
    w = RNG.normal(size=(3, 2, 4))
    (draw * tricycle.tensor(w)).sum().backward()
    their_draw = TD.OneHotCategoricalStraightThrough(logits=theirs).rsample((3,))
    (their_draw * torch.tensor(w)).sum().backward()  # independent of the draw drawn
    np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-12)


def test_draws_statistics():
    manual_seed(6)
    (mixture, theirs, _, _), _ = CASES["MixtureSameFamily"]()
    draws = mixture.sample((20000,)).array
    np.testing.assert_allclose(draws.mean(0), theirs.mean.detach().numpy(), atol=0.05)
    np.testing.assert_allclose(draws.var(0), theirs.variance.detach().numpy(), rtol=0.05)
    loc, concentration = np.array([0.5, -2.0, 3.0]), np.array([0.8, 4.0, 40.0])
    angles = VonMises(tricycle.tensor(loc), tricycle.tensor(concentration)).sample((20000,))
    resultant = np.exp(1j * angles.array).mean(0)
    assert np.all((angles.array >= -np.pi) & (angles.array < np.pi))
    np.testing.assert_allclose(np.angle(resultant), loc, atol=0.05)
    variance = TD.VonMises(torch.tensor(loc), torch.tensor(concentration)).variance.numpy()
    np.testing.assert_allclose(1 - np.abs(resultant), variance, atol=0.01)
    k = Kumaraswamy(tricycle.tensor([2.0]), tricycle.tensor([3.0])).sample((20000,)).array
    assert k.mean() == pytest.approx(TD.Kumaraswamy(2.0, 3.0).mean.item(), abs=0.01)


def _param(shape, low=0.5, high=2.5):
    return RNG.uniform(low, high, shape)


KL_FAMILIES = {
    "Gamma": (Gamma, lambda: [_param((2, 3)), _param(3)]),
    "Beta": (Beta, lambda: [_param((2, 3)), _param(3)]),
    "Normal": (D.Normal, lambda: [RNG.normal(size=(2, 3)), _param(3)]),
    "Uniform": (D.Uniform, lambda: [_param((2, 3), 0.05, 0.3), _param(3, 0.6, 0.9)]),
    "ContinuousBernoulli": (ContinuousBernoulli, lambda: [_param((2, 3), 0.1, 0.9)]),
}
KL_FAMILIES.update(
    Exponential=(D.Exponential, lambda: [_param((2, 3))]),
    Laplace=(D.Laplace, lambda: [RNG.normal(size=(2, 3)), _param(3)]),
    Gumbel=(D.Gumbel, lambda: [RNG.normal(size=(2, 3)), _param(3)]),
    Pareto=(D.Pareto, lambda: [_param((2, 3)), _param((2, 3), 0.5, 3.0)]),  # alpha <= 1: inf
)
OURS = {"Gamma", "Beta", "ContinuousBernoulli"}
# torch's lookup finds its ExponentialFamily pair for these, which refuses two families
NO_FORM = {("ContinuousBernoulli", "Gamma"), ("ContinuousBernoulli", "Beta")}
KL_PAIRS = [
    (p, q)
    for p in KL_FAMILIES
    for q in KL_FAMILIES
    if {p, q} & OURS  # the pairs torch registers (its lookup, as ours, by the classes)
    and TD.kl._dispatch_kl(getattr(TD, p), getattr(TD, q)) is not NotImplemented
    and (p, q) not in NO_FORM
]


@pytest.mark.parametrize("p, q", KL_PAIRS)
def test_kl_divergence_against_torch(p, q):
    (our_p, their_p, p_ours, p_theirs) = both(KL_FAMILIES[p][0], getattr(TD, p),
                                              *KL_FAMILIES[p][1]())  # fmt: skip
    (our_q, their_q, q_ours, q_theirs) = both(KL_FAMILIES[q][0], getattr(TD, q),
                                              *KL_FAMILIES[q][1]())  # fmt: skip
    ours, theirs = D.kl_divergence(our_p, our_q), TD.kl_divergence(their_p, their_q)
    np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    if p != "Pareto" and np.all(np.isfinite(ours.array)):
        ours.sum().backward()
        theirs.sum().backward()
        for mine, torchs in zip(p_ours + q_ours, p_theirs + q_theirs):
            if torchs.grad is not None:
                np.testing.assert_allclose(
                    mine.grad.array, torchs.grad.numpy(), rtol=1e-8, atol=1e-9
                )


def test_kl_divergence_of_dirichlets_and_low_rank_normals_against_torch():
    c_p, c_q = _param((2, 4)), _param(4)
    ours = D.kl_divergence(Dirichlet(tricycle.tensor(c_p)), Dirichlet(tricycle.tensor(c_q)))
    theirs = TD.kl_divergence(TD.Dirichlet(torch.tensor(c_p)), TD.Dirichlet(torch.tensor(c_q)))
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-12)
    low_rank = [(RNG.normal(size=(2, 4)), RNG.normal(size=(4, 2)), _param((2, 4))),
                (RNG.normal(size=(2, 4)), RNG.normal(size=(2, 4, 1)), _param(4))]  # fmt: skip
    covariance = np.eye(4) * 2 + 0.3
    dense = (RNG.normal(size=(2, 4)), np.broadcast_to(covariance, (2, 4, 4)).copy())
    lr = [(LowRankMultivariateNormal(*map(tricycle.tensor, a)),
           TD.LowRankMultivariateNormal(*map(torch.tensor, a))) for a in low_rank]  # fmt: skip
    mvn = (D.MultivariateNormal(*map(tricycle.tensor, dense)),
           TD.MultivariateNormal(*map(torch.tensor, dense)))  # fmt: skip
    for (p, tp), (q, tq) in [(lr[0], lr[1]), (lr[0], mvn), (mvn, lr[1])]:
        np.testing.assert_allclose(
            D.kl_divergence(p, q).array, TD.kl_divergence(tp, tq).numpy(), rtol=1e-10
        )


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="MixtureSameFamily: mixture_distribution must be"):
        MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(tricycle.zeros(3), 1.0))
    with pytest.raises(ValueError, match="number of components"):
        MixtureSameFamily(D.Categorical(logits=tricycle.zeros(2)), D.Normal(tricycle.zeros(3), 1.0))
    with pytest.raises(ValueError, match="LowRankMultivariateNormal: cov_factor must be"):
        LowRankMultivariateNormal(tricycle.zeros(3), tricycle.ones((2, 1)), tricycle.ones(3))
    with pytest.raises(ValueError, match="ContinuousBernoulli: give probs or logits"):
        ContinuousBernoulli()
    with pytest.raises(ValueError, match="VonMises: parameter concentration"):
        VonMises(0.0, tricycle.tensor([-1.0]))
    with pytest.raises(ValueError, match="Kumaraswamy.log_prob: value"):
        Kumaraswamy(1.0, 2.0).log_prob(tricycle.tensor([1.5]))


@pytest.mark.parametrize("name", [n for n in CASES if n != "MixtureSameFamily"])
def test_expand_against_torch(name):
    (ours, theirs, _, _), values = CASES[name]()
    batch = (5,) + ours.batch_shape
    mine, torchs = ours.expand(batch), theirs.expand(batch)
    assert (mine.batch_shape, mine.event_shape) == (torchs.batch_shape, torchs.event_shape)
    tolerance = TOLERANCE.get(name, dict(rtol=1e-12, atol=1e-14))
    np.testing.assert_allclose(
        mine.log_prob(tricycle.tensor(values[:1])).array,
        torchs.log_prob(torch.tensor(values[:1])).detach().numpy(),
        **tolerance,
    )
    assert mine.sample((2,)).shape == (2,) + batch + ours.event_shape
