"""The gamma family and its relatives (Gamma, Chi2, InverseGamma, Beta, Dirichlet, StudentT,
FisherSnedecor) against torch.distributions, in float64: log_prob, entropy, the moments and
the mode, cdf, their gradients with respect to every parameter; the implicit
reparameterisation of the standard gamma draw against ``torch._standard_gamma_grad`` and
against finite differences of scipy's quantile function; draws' statistics, the gradients of
rsample in expectation, seed repeatability, and the errors."""

import numpy as np
import pytest
import scipy.special as sp

import tricycle
from tricycle.distributions.dirichlet import Beta, Dirichlet
from tricycle.distributions.gamma import (
    Chi2,
    Gamma,
    InverseGamma,
    standard_gamma,
    standard_gamma_grad,
)
from tricycle.distributions.student_t import FisherSnedecor, StudentT
from tricycle.random import manual_seed

torch = pytest.importorskip("torch")
TD = torch.distributions
OURS = {"Gamma": Gamma, "Chi2": Chi2, "InverseGamma": InverseGamma, "Beta": Beta,
        "Dirichlet": Dirichlet, "StudentT": StudentT, "FisherSnedecor": FisherSnedecor}  # fmt: skip


def uniform(*shape, low=0.5, high=3.0, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def case(name: str):
    """(parameters by position, values for log_prob) of a batched, broadcasting case."""
    if name in ("Gamma", "InverseGamma", "FisherSnedecor"):
        return [uniform(2, 3, seed=1) + 2, uniform(3, seed=2)], uniform(4, 2, 3, low=0.1, seed=3)
    if name == "Chi2":
        return [uniform(2, 3, seed=1) + 2], uniform(4, 2, 3, low=0.1, seed=3)
    if name == "Beta":
        return [uniform(2, 3, seed=1), uniform(3, seed=2)], uniform(
            4, 2, 3, low=0.05, high=0.95, seed=3
        )
    if name == "Dirichlet":
        values = np.random.default_rng(3).dirichlet(np.ones(4), size=(5, 2))
        return [uniform(2, 4, seed=1)], values
    if name == "StudentT":
        params = [uniform(2, 3, low=2.5, high=6, seed=1), uniform(3, low=-1, high=1, seed=2),
                  uniform(2, 3, seed=4)]  # fmt: skip
        return params, uniform(4, 2, 3, low=-3, seed=3)
    raise KeyError(name)


def both(name: str, params):
    """Our distribution and torch's of the same float64 parameters, each requiring grad."""
    ours = [tricycle.tensor(p, requires_grad=True) for p in params]
    theirs = [torch.tensor(p, requires_grad=True) for p in params]
    return OURS[name](*ours), getattr(TD, name)(*theirs), ours, theirs


@pytest.mark.parametrize("name", list(OURS))
def test_formulas_and_their_gradients_against_torch(name):
    params, values = case(name)
    ours, theirs, our_params, their_params = both(name, params)
    has_entropy = name != "FisherSnedecor"  # torch's has none
    for what in ("mean", "variance", "mode"):
        np.testing.assert_allclose(
            getattr(ours, what).array, getattr(theirs, what).detach().numpy(), rtol=1e-12
        )
    w = uniform(*values.shape[: len(values.shape) - len(ours.event_shape)], seed=9)
    our_total = (ours.log_prob(tricycle.tensor(values)) * tricycle.tensor(w)).sum()
    their_total = (theirs.log_prob(torch.tensor(values)) * torch.tensor(w)).sum()
    if has_entropy:
        np.testing.assert_allclose(ours.entropy().array, theirs.entropy().detach().numpy(),
                                   rtol=1e-12, atol=1e-13)  # fmt: skip
        our_total, their_total = (
            our_total + ours.entropy().sum(),
            their_total + theirs.entropy().sum(),
        )
    np.testing.assert_allclose(our_total.array, their_total.detach().numpy(), rtol=1e-12)
    our_total.backward()
    their_total.backward()
    for mine, theirs_ in zip(our_params, their_params):
        np.testing.assert_allclose(mine.grad.array, theirs_.grad.numpy(), rtol=1e-8, atol=1e-12)
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)
    assert ours.rsample((3,)).shape == tuple(theirs.rsample((3,)).shape)


@pytest.mark.parametrize("name", ["Gamma", "InverseGamma"])
def test_cdf_and_its_gradient_against_torch(name):
    params, values = case(name)
    ours, theirs, our_params, their_params = both(name, params)
    our_values = tricycle.tensor(values, requires_grad=True)
    their_values = torch.tensor(values, requires_grad=True)
    our_cdf, their_cdf = ours.cdf(our_values), theirs.cdf(their_values)
    np.testing.assert_allclose(our_cdf.array, their_cdf.detach().numpy(), rtol=1e-12)
    our_cdf.sum().backward()  # torch's gammainc has no derivative in the concentration
    their_cdf.sum().backward(inputs=[their_values, their_params[1]])
    np.testing.assert_allclose(our_values.grad.array, their_values.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(our_params[1].grad.array, their_params[1].grad.numpy(), rtol=1e-10)


ALPHAS = np.array([0.05, 0.3, 1.0, 2.5, 8.0, 30.0, 200.0, 5000.0])


def test_standard_gamma_grad_against_torch_and_finite_differences():
    draws = np.stack([np.random.default_rng(i).gamma(ALPHAS) for i in range(20)])
    alphas = np.broadcast_to(ALPHAS, draws.shape).copy()
    ours = standard_gamma_grad(tricycle.tensor(alphas), tricycle.tensor(draws)).array
    theirs = torch._standard_gamma_grad(torch.tensor(alphas), torch.tensor(draws)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=2e-3)  # torch's is a fitted approximation
    quantiles, h = sp.gammainc(alphas, draws), 1e-5 * alphas  # dx/da at a fixed quantile
    exact = (sp.gammaincinv(alphas + h, quantiles) - sp.gammaincinv(alphas - h, quantiles)) / (
        2 * h
    )
    np.testing.assert_allclose(ours, exact, rtol=1e-6)


def test_standard_gamma_draws_their_gradient_and_the_seed():
    alpha = tricycle.tensor(np.tile([0.4, 2.0, 9.0], (4000, 1)), requires_grad=True)
    manual_seed(3)
    x = standard_gamma(alpha)
    manual_seed(3)
    np.testing.assert_array_equal(standard_gamma(alpha).array, x.array)
    np.testing.assert_allclose(x.array.mean(axis=0), [0.4, 2.0, 9.0], rtol=0.06)
    np.testing.assert_allclose(x.array.var(axis=0), [0.4, 2.0, 9.0], rtol=0.12)
    x.sum().backward()
    expected = standard_gamma_grad(alpha, x).array
    np.testing.assert_allclose(alpha.grad.array, expected, rtol=1e-12)
    np.testing.assert_allclose(alpha.grad.array.mean(axis=0), 1.0, rtol=0.05)  # dE[x]/da = 1


def test_gamma_rsample_gradient_is_torchs_at_the_same_draw():
    concentration = tricycle.tensor(np.array([0.7, 3.0]), requires_grad=True)
    rate = tricycle.tensor(np.array([2.0, 0.5]), requires_grad=True)
    manual_seed(0)
    x = Gamma(concentration, rate).rsample((5,))
    x.sum().backward()
    standard = x.array * rate.array  # the standard draws
    dx_da = torch._standard_gamma_grad(
        torch.tensor(np.broadcast_to([0.7, 3.0], standard.shape).copy()), torch.tensor(standard)
    ).numpy()
    np.testing.assert_allclose(concentration.grad.array, (dx_da / rate.array).sum(0), rtol=2e-3)
    np.testing.assert_allclose(rate.grad.array, (-x.array / rate.array).sum(0), rtol=1e-12)


@pytest.mark.parametrize(
    "name, params, moment, derivatives",
    [
        # E[x] = a / (a + b): d/da = b / (a + b)^2, d/db = -a / (a + b)^2
        ("Beta", [1.5, 2.5], lambda x: x, [2.5 / 16, -1.5 / 16]),
        # E[x^2] = scale^2 df / (df - 2): d/d(df) = -2 scale^2 / (df - 2)^2
        ("StudentT", [6.0, 0.0, 1.5], lambda x: x**2, [-2 * 2.25 / 16, 0.0, 2 * 1.5 * 1.5]),
        # E[x] = df2 / (df2 - 2): d/d(df2) = -2 / (df2 - 2)^2, none in df1
        ("FisherSnedecor", [4.0, 12.0], lambda x: x, [0.0, -2 / 100]),
        ("InverseGamma", [4.0, 3.0], lambda x: x, [-3 / 9, 1 / 3]),  # E[x] = b / (a - 1)
    ],
)
def test_rsample_gradients_are_the_moments_derivatives_in_expectation(
    name, params, moment, derivatives
):
    ours = [tricycle.tensor(p, dtype=tricycle.float64, requires_grad=True) for p in params]
    manual_seed(1)
    moment(OURS[name](*ours).rsample((40000,))).mean().backward()
    for p, expected in zip(ours, derivatives):
        assert p.grad.item() == pytest.approx(expected, rel=0.1, abs=0.06)


def test_dirichlet_draws_and_their_gradient_in_expectation():
    c = np.array([0.5, 2.0, 3.5])
    concentration = tricycle.tensor(c, requires_grad=True)
    manual_seed(2)
    draws = Dirichlet(concentration).rsample((20000,))
    np.testing.assert_allclose(draws.array.sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(draws.array.mean(0), c / c.sum(), atol=0.01)
    draws[:, 0].mean().backward()  # E[x_0] = c_0 / c_sum
    expected = np.array([c[1:].sum(), -c[0], -c[0]]) / c.sum() ** 2
    np.testing.assert_allclose(concentration.grad.array, expected, atol=0.01)


def test_dirichlet_mode_below_one_is_torchs():
    c = np.array([[0.5, 0.9, 0.2], [2.0, 3.0, 0.5]])
    np.testing.assert_array_equal(
        Dirichlet(tricycle.tensor(c)).mode.array, TD.Dirichlet(torch.tensor(c)).mode.numpy()
    )


def test_undefined_moments_are_nan_or_inf_as_torchs():
    df = np.array([0.5, 1.5, 3.0, 5.0])
    for ours, theirs in [
        (StudentT(tricycle.tensor(df)), TD.StudentT(torch.tensor(df))),
        (
            FisherSnedecor(tricycle.tensor(df), tricycle.tensor(df + 0.5)),
            TD.FisherSnedecor(torch.tensor(df), torch.tensor(df + 0.5)),
        ),  # fmt: skip
        (InverseGamma(tricycle.tensor(df), 1.0), TD.InverseGamma(torch.tensor(df), 1.0)),
    ]:
        for what in ("mean", "variance", "mode"):
            np.testing.assert_allclose(
                getattr(ours, what).array, getattr(theirs, what).numpy(), rtol=1e-12
            )


def test_bad_parameters_and_values_are_refused():
    with pytest.raises(ValueError, match="Gamma: parameter rate"):
        Gamma(1.0, tricycle.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="standard_gamma: the concentration"):
        standard_gamma(tricycle.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="Beta.log_prob: value"):
        Beta(1.0, 2.0).log_prob(tricycle.tensor([1.5]))
    with pytest.raises(ValueError, match="Dirichlet: concentration's shape"):
        Dirichlet(tricycle.tensor(1.0))
    with pytest.raises(ValueError, match="Chi2: parameter df"):
        Chi2(tricycle.tensor([-1.0]))
    with pytest.raises(ValueError, match="StudentT: the shapes"):
        StudentT(tricycle.ones(2), tricycle.ones(3))


@pytest.mark.parametrize("name", list(OURS))
def test_expand_against_torch(name):
    params, values = case(name)
    ours, theirs, _, _ = both(name, params)
    batch = (5,) + ours.batch_shape
    mine, torchs = ours.expand(batch), theirs.expand(batch)
    assert (mine.batch_shape, mine.event_shape) == (torchs.batch_shape, torchs.event_shape)
    np.testing.assert_allclose(
        mine.log_prob(tricycle.tensor(values[:1])).array,
        torchs.log_prob(torch.tensor(values[:1])).detach().numpy(),
        rtol=1e-12,
    )
    assert mine.rsample((2,)).shape == (2,) + batch + ours.event_shape
    with pytest.raises(ValueError, match=f"{name}.expand: the batch shape"):
        ours.expand((7,))
