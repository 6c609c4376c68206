"""The rest of torch.distributions' families against torch's: ``ExponentialFamily`` (its
Bregman-divergence entropy and same-family KL by autograd, on a user's subclass and on
``Wishart``), ``GeneralizedPareto`` (log_prob, cdf, survival, icdf, mean, variance, entropy,
support and gradients), ``LKJCholesky`` (log_prob with its gradient; draws seeded, their
support and their correlations' moments against torch's own draws, with generous fixed
tolerances) and ``Wishart`` (log_prob, entropy, mean, mode, variance exactly, in each matrix
form, with gradients; Bartlett draws' moments statistically), with the errors."""

import warnings

import numpy as np
import pytest

import tricycle
import tricycle.distributions as D
from tests.helpers import check_grads
from tricycle.tensor import Tensor


def torch_or_skip():
    return pytest.importorskip("torch")


_NATURAL_NORMALS = {}


def natural_normal(M):
    """A user's exponential family, written the same for both libraries: N(mu, sigma^2) by its
    natural parameters (mu / sigma^2, -1 / (2 sigma^2)); one class per library."""
    if M in _NATURAL_NORMALS:
        return _NATURAL_NORMALS[M]

    class NaturalNormal(M.ExponentialFamily):
        arg_constraints = {}
        _mean_carrier_measure = 0

        def __init__(self, loc, scale):
            self.loc, self.scale = loc, scale
            super().__init__(tuple(loc.shape), validate_args=False)

        @property
        def _natural_params(self):
            return self.loc / self.scale**2, -0.5 / self.scale**2

        def _log_normalizer(self, x, y):
            return -0.25 * x**2 / y + 0.5 * (-np.pi / y).log()

    _NATURAL_NORMALS[M] = NaturalNormal
    return NaturalNormal


def test_exponential_family_entropy_and_kl_match_torch_and_closed_forms():
    torch = torch_or_skip()
    loc, scale = np.array([0.3, -1.2, 2.0]), np.array([0.5, 1.5, 2.5])
    ours = natural_normal(D)(Tensor(loc), Tensor(scale))
    theirs = natural_normal(torch.distributions)(torch.tensor(loc), torch.tensor(scale))
    entropy = ours.entropy()
    np.testing.assert_allclose(entropy.array, theirs.entropy().detach().numpy(), rtol=1e-12)
    closed = 0.5 * np.log(2 * np.pi * np.e * scale**2)
    np.testing.assert_allclose(entropy.array, closed, rtol=1e-12)
    q_loc, q_scale = np.array([0.0, 1.0, -1.0]), np.array([1.0, 0.7, 3.0])
    q_ours = natural_normal(D)(Tensor(q_loc, requires_grad=True), Tensor(q_scale))
    q_theirs = natural_normal(torch.distributions)(
        torch.tensor(q_loc, requires_grad=True), torch.tensor(q_scale)
    )
    kl_ours = D.kl_divergence(ours, q_ours)
    kl_theirs = torch.distributions.kl_divergence(theirs, q_theirs)
    np.testing.assert_allclose(kl_ours.array, kl_theirs.detach().numpy(), rtol=1e-10)
    normal_kl = D.kl_divergence(D.Normal(Tensor(loc), Tensor(scale)), D.Normal(q_loc, q_scale))
    np.testing.assert_allclose(kl_ours.array, normal_kl.array, rtol=1e-10)
    kl_ours.sum().backward()  # q's side carries the gradient, as torch's
    kl_theirs.sum().backward()
    np.testing.assert_allclose(q_ours.loc.grad.array, q_theirs.loc.grad.numpy(), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(ours, D.Wishart(4.0, covariance_matrix=Tensor(np.eye(2))))
    with pytest.raises(NotImplementedError, match="_natural_params"):
        D.ExponentialFamily(validate_args=False).entropy()


GPD = (
    np.array([0.1, -0.5, 0.3, 1.0], dtype=np.float32),
    np.array([2.0, 0.5, 1.3, 0.7], dtype=np.float32),
    np.array([0.4, -0.3, 0.0, 1.2], dtype=np.float32),
)  # torch's GeneralizedPareto.log_prob compares with a float32 zero: float32 throughout


def test_generalized_pareto_matches_torch_with_gradients():
    torch = torch_or_skip()
    ours_params = [Tensor(a, requires_grad=True) for a in GPD]
    theirs_params = [torch.tensor(a, requires_grad=True) for a in GPD]
    ours, theirs = (
        D.GeneralizedPareto(*ours_params),
        torch.distributions.GeneralizedPareto(*theirs_params),
    )
    x = np.array([[0.5, -0.2, 1.0, 2.0], [3.0, 0.6, 0.31, 1.1]], dtype=np.float32)
    u = np.array([0.1, 0.5, 0.9, 0.3], dtype=np.float32)
    total_ours, total_theirs = 0, 0
    for fn, arg in [("log_prob", x), ("cdf", x), ("log_survival_function", x), ("icdf", u)]:
        a, b = getattr(ours, fn)(Tensor(arg)), getattr(theirs, fn)(torch.tensor(arg))
        np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=2e-6, atol=1e-6)
        total_ours, total_theirs = total_ours + a.sum(), total_theirs + b.sum()
    for name in ("mean", "variance", "mode"):
        a, b = getattr(ours, name), getattr(theirs, name)
        np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=2e-6)
    np.testing.assert_allclose(ours.entropy().array, theirs.entropy().detach().numpy(), rtol=2e-6)
    upper = ours.support.upper_bound.array
    np.testing.assert_allclose(upper, theirs.support.upper_bound.detach().numpy(), rtol=1e-6)
    (total_ours + ours.entropy().sum()).backward()
    (total_theirs + theirs.entropy().sum()).backward()
    for a, b in zip(ours_params, theirs_params):
        np.testing.assert_allclose(a.grad.array, b.grad.numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="GeneralizedPareto.log_prob: value"):
        ours.log_prob(Tensor(np.full(4, -3.0, dtype=np.float32)))  # below loc


def test_generalized_pareto_draws_and_finite_differences():
    tricycle.manual_seed(0)
    d = D.GeneralizedPareto(0.5, 2.0, 0.2)
    draws = d.sample((20000,)).array
    assert draws.min() >= 0.5
    np.testing.assert_allclose(draws.mean(), d.mean.item(), rtol=0.05)
    np.testing.assert_allclose(np.median(draws), d.icdf(0.5).item(), rtol=0.03)
    x = np.array([0.7, 1.5, 4.0])
    check_grads(lambda s: D.GeneralizedPareto(0.5, s, -0.1).log_prob(Tensor(x)).sum(), [2.0])
    check_grads(lambda c: D.GeneralizedPareto(0.5, 2.0, c).log_prob(Tensor(x)).sum(), [0.3])
    assert D.GeneralizedPareto(Tensor(GPD[0]), 1.0, 0.1).expand((2, 4)).batch_shape == (2, 4)
    with pytest.raises(ValueError, match="scale"):
        D.GeneralizedPareto(0.0, -1.0, 0.1)


def lkj_values(torch, n=3):
    torch.manual_seed(1)
    eta = torch.tensor([0.5, 1.0, 3.0], dtype=torch.float64)
    return torch.distributions.LKJCholesky(4, eta).sample((n,))


def test_lkj_cholesky_log_prob_matches_torch_with_gradients():
    torch = torch_or_skip()
    values = lkj_values(torch).numpy()
    eta = np.array([0.5, 1.0, 3.0])
    c_ours, c_theirs = Tensor(eta, requires_grad=True), torch.tensor(eta, requires_grad=True)
    ours, theirs = D.LKJCholesky(4, c_ours), torch.distributions.LKJCholesky(4, c_theirs)
    lo, lt = ours.log_prob(Tensor(values)), theirs.log_prob(torch.tensor(values))
    np.testing.assert_allclose(lo.array, lt.detach().numpy(), rtol=1e-12)
    lo.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(c_ours.grad.array, c_theirs.grad.numpy(), rtol=1e-10)
    assert ours.batch_shape == (3,) and ours.event_shape == (4, 4)
    assert ours.expand((2, 3)).batch_shape == (2, 3)
    with pytest.raises(ValueError, match="dim to be an integer greater than or equal to 2"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="LKJCholesky.log_prob: value"):
        ours.log_prob(Tensor(np.ones((3, 4, 4))))  # not a Cholesky factor


def test_lkj_cholesky_draws_are_in_the_support_with_torchs_moments():
    torch = torch_or_skip()
    eta = np.array([0.5, 3.0])
    tricycle.manual_seed(2)
    ours = D.LKJCholesky(3, Tensor(eta)).sample((4000,)).array
    torch.manual_seed(2)
    theirs = torch.distributions.LKJCholesky(3, torch.tensor(eta)).sample((20000,)).numpy()
    assert D.constraints.corr_cholesky.check(ours).all()
    corr_ours, corr_theirs = ours @ np.swapaxes(ours, -1, -2), theirs @ np.swapaxes(theirs, -1, -2)
    for i, j in [(1, 0), (2, 0), (2, 1)]:
        np.testing.assert_allclose(corr_ours[:, :, i, j].mean(0), 0.0, atol=0.04)
        var_ours, var_theirs = corr_ours[:, :, i, j].var(0), corr_theirs[:, :, i, j].var(0)
        np.testing.assert_allclose(var_ours, var_theirs, rtol=0.12)


def wishart_params():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 3, 3))
    sigma = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    return np.array([4.5, 7.0]), sigma


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch_with_gradients(form):
    torch = torch_or_skip()
    df, sigma = wishart_params()
    matrix = np.linalg.cholesky(sigma) if form == "scale_tril" else sigma
    m_ours, m_theirs = Tensor(matrix, requires_grad=True), torch.tensor(matrix, requires_grad=True)
    df_ours, df_theirs = Tensor(df, requires_grad=True), torch.tensor(df, requires_grad=True)
    ours = D.Wishart(df_ours, **{form: m_ours})
    theirs = torch.distributions.Wishart(df_theirs, **{form: m_theirs})
    torch.manual_seed(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of singular samples on every draw
        x = theirs.sample((3,)).numpy()
    lo, lt = ours.log_prob(Tensor(x)), theirs.log_prob(torch.tensor(x))
    np.testing.assert_allclose(lo.array, lt.detach().numpy(), rtol=1e-11)
    total_ours, total_theirs = lo.sum() + ours.entropy().sum(), lt.sum() + theirs.entropy().sum()
    for name in ("mean", "mode", "variance"):
        a, b = getattr(ours, name), getattr(theirs, name)
        np.testing.assert_allclose(a.array, b.detach().numpy(), rtol=1e-11)
        total_ours, total_theirs = total_ours + a.sum(), total_theirs + b.sum()
    np.testing.assert_allclose(ours.entropy().array, theirs.entropy().detach().numpy(), rtol=1e-12)
    exp_family_entropy = D.ExponentialFamily.entropy(ours)
    np.testing.assert_allclose(exp_family_entropy.array, ours.entropy().array, rtol=1e-10)
    total_ours.backward()
    total_theirs.backward()
    np.testing.assert_allclose(df_ours.grad.array, df_theirs.grad.numpy(), rtol=1e-9)
    g_ours, g_theirs = m_ours.grad.array, m_theirs.grad.numpy()
    if form != "scale_tril":  # a symmetric matrix's gradient: torch's and tricycle's Cholesky
        # backwards split it between the triangles differently; the symmetric sum agrees
        g_ours, g_theirs = g_ours + np.swapaxes(g_ours, -1, -2), g_theirs + g_theirs.mT
    else:  # the factor's upper triangle (zeros, not read by the formulas) aside
        g_ours, g_theirs = np.tril(g_ours), np.tril(g_theirs)
    np.testing.assert_allclose(g_ours, g_theirs, rtol=1e-8, atol=1e-10)


def test_wishart_kl_matches_torch_unbatched():
    torch = torch_or_skip()
    df, sigma = wishart_params()
    for k in range(2):  # torch's batched divergence also sums the batch (exp_family's docstring)
        p, q = (D.Wishart(Tensor(np.array(v)), covariance_matrix=Tensor(sigma[k])) for v in
                (df[k], df[k] + 1.5))  # fmt: skip
        tp, tq = (torch.distributions.Wishart(torch.tensor(v), covariance_matrix=torch.tensor(
            sigma[k])) for v in (df[k], df[k] + 1.5))  # fmt: skip
        expected = torch.distributions.kl_divergence(tp, tq).detach().numpy()
        np.testing.assert_allclose(D.kl_divergence(p, q).array, expected, rtol=1e-10)


def test_wishart_draws_moments_and_errors():
    df, sigma = wishart_params()
    d = D.Wishart(Tensor(df), covariance_matrix=Tensor(sigma))
    tricycle.manual_seed(5)
    draws = d.rsample((4000,)).array
    assert draws.shape == (4000, 2, 3, 3) and D.constraints.positive_definite.check(draws).all()
    scale = np.abs(d.mean.array).max()
    np.testing.assert_allclose(draws.mean(0), d.mean.array, atol=0.05 * scale)
    np.testing.assert_allclose(draws.var(0), d.variance.array, atol=0.12 * d.variance.array.max())
    df_t = Tensor(df, requires_grad=True)
    D.Wishart(df_t, scale_tril=Tensor(np.linalg.cholesky(sigma))).rsample((2,)).sum().backward()
    assert np.isfinite(df_t.grad.array).all()  # through the chi-squared draws
    assert d.expand((4, 2)).batch_shape == (4, 2)
    with pytest.raises(ValueError, match="exactly one of covariance_matrix"):
        D.Wishart(4.0)
    with pytest.raises(ValueError, match="expected to be greater than ndim - 1 = 2"):
        D.Wishart(1.5, covariance_matrix=Tensor(np.eye(3)))
    with pytest.warns(UserWarning, match="low df values"):
        D.Wishart(2.5, covariance_matrix=Tensor(np.eye(3)))
    with pytest.raises(ValueError, match="Wishart.log_prob: value"):
        d.log_prob(Tensor(-np.broadcast_to(np.eye(3), (2, 3, 3))))
