"""tricycle.distributions against torch.distributions, in float64: log_prob, entropy, the
moments and the mode, cdf, kl_divergence, their gradients with respect to every parameter,
rsample's gradient with both seeded to the same noise, the shapes of batches, samples and
broadcast values, sampling statistics, seed repeatability, a REINFORCE bandit that learns,
the linear-algebra ops against finite differences, and the errors for bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
import tricycle.distributions as D
from tests.helpers import randn
from tricycle.distributions.linalg import cholesky, solve_triangular
from tricycle.distributions.normal import standard_normal_cdf
from tricycle.gradcheck import gradcheck
from tricycle.random import manual_seed
from tricycle.tensor import Tensor


def uniform(*shape, low=0.0, high=1.0, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def spd(*batch, n=3, seed=0) -> np.ndarray:
    """Symmetric positive-definite (*batch, n, n) matrices."""
    a = randn(*batch, n, n, seed=seed)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def params(name: str, seed: int = 0) -> dict:
    """The float64 parameters of a case, batched and broadcasting."""
    if name == "Normal":
        return {"loc": randn(2, 3, seed=seed), "scale": uniform(3, low=0.5, high=2, seed=seed + 1)}
    if name == "Uniform":
        low = randn(2, 3, seed=seed)
        return {"low": low, "high": low.max(axis=0) + uniform(3, low=0.5, high=2, seed=seed + 1)}
    if name in ("Bernoulli(probs)",):
        return {"probs": uniform(2, 3, low=0.1, high=0.9, seed=seed)}
    if name in ("Categorical(probs)",):  # weights, normalised by the distribution
        return {"probs": uniform(2, 4, low=0.1, high=1.0, seed=seed)}
    if name in ("Bernoulli(logits)",):
        return {"logits": randn(2, 3, seed=seed)}
    if name in ("Categorical(logits)", "OneHotCategorical"):
        return {"logits": randn(2, 4, seed=seed)}
    if name == "MVN(covariance_matrix)":
        return {"loc": randn(3, seed=seed), "covariance_matrix": spd(2, seed=seed + 1)}
    if name == "MVN(precision_matrix)":
        return {"loc": randn(2, 3, seed=seed), "precision_matrix": spd(seed=seed + 1)}
    if name == "MVN(scale_tril)":
        return {"loc": randn(2, 3, seed=seed),
                "scale_tril": np.linalg.cholesky(spd(2, seed=seed + 1))}  # fmt: skip
    if name == "Independent":
        return {"loc": randn(2, 3, seed=seed), "scale": uniform(2, 3, low=0.5, high=2, seed=seed)}
    raise KeyError(name)


MAKE = {  # name -> how to make it of a module (tricycle's or torch's) and its parameters
    "Normal": lambda M, p: M.Normal(p["loc"], p["scale"]),
    "Uniform": lambda M, p: M.Uniform(p["low"], p["high"]),
    "Bernoulli(probs)": lambda M, p: M.Bernoulli(probs=p["probs"]),
    "Bernoulli(logits)": lambda M, p: M.Bernoulli(logits=p["logits"]),
    "Categorical(probs)": lambda M, p: M.Categorical(probs=p["probs"]),
    "Categorical(logits)": lambda M, p: M.Categorical(logits=p["logits"]),
    "OneHotCategorical": lambda M, p: M.OneHotCategorical(logits=p["logits"]),
    "MVN(covariance_matrix)": lambda M, p: M.MultivariateNormal(**p),
    "MVN(precision_matrix)": lambda M, p: M.MultivariateNormal(**p),
    "MVN(scale_tril)": lambda M, p: M.MultivariateNormal(**p),
    "Independent": lambda M, p: M.Independent(M.Normal(p["loc"], p["scale"]), 1),
}


def both(name: str, seed: int = 0):
    """(ours, theirs, our parameters, their parameters) of a case, fresh leaves each call."""
    torch = pytest.importorskip("torch")
    arrays = params(name, seed)
    ours = {k: Tensor(a, requires_grad=True) for k, a in arrays.items()}
    theirs = {k: torch.tensor(a, requires_grad=True) for k, a in arrays.items()}
    return MAKE[name](D, ours), MAKE[name](torch.distributions, theirs), ours, theirs


def values(name: str, shape=(4,)):
    """Draws of torch's case (a fixed seed) as an array, for log_prob."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return both(name)[1].sample(shape).numpy()


def assert_same(out, expected, ours, theirs, seed=5, rtol=1e-10, atol=1e-12):
    """Equal values, and equal gradients of every parameter for a random output gradient."""
    torch = pytest.importorskip("torch")
    expected_array = expected.detach().numpy()
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected_array, rtol=rtol, atol=atol)
    if not expected.requires_grad:
        return
    dout = randn(*out.shape, seed=seed)
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    for key, t in theirs.items():
        want = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(t.shape) if ours[key].grad is None else ours[key].grad.array
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=key)


QUANTITIES = ["log_prob", "entropy", "mean", "variance", "stddev", "mode", "perplexity"]


@pytest.mark.parametrize("quantity", QUANTITIES)
@pytest.mark.parametrize("name", list(MAKE))
def test_formulas_and_their_gradients_match_torch(name, quantity):
    x = values(name) if quantity == "log_prob" else None
    ours, theirs, p_ours, p_theirs = both(name)
    if quantity == "log_prob":
        torch = pytest.importorskip("torch")
        out = ours.log_prob(Tensor(x, requires_grad=False))
        expected = theirs.log_prob(torch.tensor(x))
    elif quantity in ("entropy", "perplexity"):
        out, expected = getattr(ours, quantity)(), getattr(theirs, quantity)()
    else:
        out, expected = getattr(ours, quantity), getattr(theirs, quantity)
    if quantity in ("mean", "variance", "stddev", "mode") and expected.isnan().any():
        # undefined (a categorical's mean, a uniform's mode): NaN, as torch's
        np.testing.assert_array_equal(out.array, expected.detach().numpy())
        return
    if quantity == "mode" and not expected.is_floating_point():
        np.testing.assert_array_equal(out.array, expected.numpy())  # class ids
        return
    assert_same(out, expected, p_ours, p_theirs, rtol=1e-9)


@pytest.mark.parametrize("name", ["Normal", "Uniform"])
def test_cdf_matches_torch(name):
    torch = pytest.importorskip("torch")
    x = values(name, (3,))
    ours, theirs, p_ours, p_theirs = both(name)
    assert_same(ours.cdf(Tensor(x, requires_grad=False)), theirs.cdf(torch.tensor(x)), p_ours,
                p_theirs, rtol=1e-9)  # fmt: skip
    if name == "Uniform":
        q = uniform(3, 2, 3, seed=4)
        ours, theirs, p_ours, p_theirs = both(name)
        assert_same(ours.icdf(Tensor(q, requires_grad=False)), theirs.icdf(torch.tensor(q)),
                    p_ours, p_theirs)  # fmt: skip


@pytest.mark.parametrize("expand", [True, False])
@pytest.mark.parametrize("name", ["Bernoulli(probs)", "Categorical(logits)", "OneHotCategorical"])
def test_enumerate_support_matches_torch(name, expand):
    ours, theirs, _, _ = both(name)
    expected = theirs.enumerate_support(expand)
    np.testing.assert_array_equal(ours.enumerate_support(expand).array, expected.numpy())
    assert ours.has_enumerate_support


KL_PAIRS = [
    ("Normal", "Normal"),
    ("Bernoulli(probs)", "Bernoulli(logits)"),
    ("Bernoulli(logits)", "Bernoulli(probs)"),
    ("Categorical(probs)", "Categorical(logits)"),
    ("Categorical(logits)", "Categorical(logits)"),
    ("OneHotCategorical", "OneHotCategorical"),
    ("Uniform", "Uniform"),
    ("Uniform", "Normal"),
    ("Normal", "Uniform"),
    ("Independent", "Independent"),
    ("MVN(covariance_matrix)", "MVN(scale_tril)"),
    ("MVN(scale_tril)", "MVN(precision_matrix)"),
]


@pytest.mark.parametrize("p_name, q_name", KL_PAIRS, ids=[f"{p}-{q}" for p, q in KL_PAIRS])
def test_kl_divergence_and_its_gradients_match_torch(p_name, q_name):
    torch = pytest.importorskip("torch")
    p, tp, p_ours, p_theirs = both(p_name, seed=1)
    q, tq, q_ours, q_theirs = both(q_name, seed=2)
    ours = {**{f"p.{k}": v for k, v in p_ours.items()}, **{f"q.{k}": v for k, v in q_ours.items()}}
    theirs = {**{f"p.{k}": v for k, v in p_theirs.items()},
              **{f"q.{k}": v for k, v in q_theirs.items()}}  # fmt: skip
    out, expected = D.kl_divergence(p, q), torch.distributions.kl_divergence(tp, tq)
    if p_name == q_name == "Uniform":  # half the intervals reach outside q's: inf there
        assert np.isinf(out.array).any() and np.isfinite(out.array).any()
    assert_same(out, expected, ours, theirs, rtol=1e-9)


def test_kl_divergence_edges_match_torch():
    """Probabilities of exactly 0 and 1: inf where q rules out what p can draw, 0 where p
    never draws."""
    torch = pytest.importorskip("torch")
    p, q = np.array([0.0, 1.0, 0.5, 0.5]), np.array([0.5, 0.5, 0.0, 1.0])
    ours = D.kl_divergence(D.Bernoulli(Tensor(p)), D.Bernoulli(Tensor(q))).array
    theirs = torch.distributions.kl_divergence(*(torch.distributions.Bernoulli(torch.tensor(a))
                                                 for a in (p, q)))  # fmt: skip
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12)
    p, q = np.array([[0.0, 0.5, 0.5]]), np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    ours = D.kl_divergence(D.Categorical(Tensor(p)), D.Categorical(Tensor(q))).array
    theirs = torch.distributions.kl_divergence(*(torch.distributions.Categorical(torch.tensor(a))
                                                 for a in (p, q)))  # fmt: skip
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-12)
    assert np.isinf(ours[0]) and np.isfinite(ours[1])


def test_kl_divergence_of_an_unregistered_pair_is_not_implemented():
    with pytest.raises(NotImplementedError, match="Bernoulli and q Normal"):
        D.kl_divergence(D.Bernoulli(0.5), D.Normal(0.0, 1.0))
    with pytest.raises(TypeError, match="p must be a Distribution"):
        D.kl_divergence(0.5, D.Normal(0.0, 1.0))


# ====================================================================== rsample
@pytest.mark.parametrize("family", ["Normal", "MVN(scale_tril)", "MVN(covariance_matrix)"])
def test_rsample_and_its_gradient_match_torch_on_the_same_noise(family, monkeypatch):
    """Seeded to one standard-normal draw, both give the same sample and d(sample)/d(params)."""
    torch = pytest.importorskip("torch")
    ours, theirs, p_ours, p_theirs = both(family)
    shape = (5,) + ours.batch_shape + ours.event_shape
    manual_seed(3)
    eps = tricycle.randn(shape, dtype=np.float64).array
    manual_seed(3)
    out = ours.rsample((5,))
    module = torch.distributions.normal if family == "Normal" else (
        torch.distributions.multivariate_normal)  # fmt: skip
    monkeypatch.setattr(module, "_standard_normal", lambda *_, **__: torch.tensor(eps))
    assert_same(out, theirs.rsample((5,)), p_ours, p_theirs, rtol=1e-10)


def test_uniform_rsample_is_low_plus_u_times_the_width_with_its_gradient():
    ours, _, p, _ = both("Uniform")
    manual_seed(4)
    u = tricycle.rand((6, 2, 3), dtype=np.float64).array
    manual_seed(4)
    draw = ours.rsample((6,))
    low, high = p["low"].array, p["high"].array
    np.testing.assert_allclose(draw.array, low + u * (high - low), rtol=1e-12)
    dout = randn(6, 2, 3, seed=1)
    draw.backward(dout)
    np.testing.assert_allclose(p["low"].grad.array, (dout * (1 - u)).sum(0), rtol=1e-12)
    np.testing.assert_allclose(p["high"].grad.array, (dout * u).sum(axis=(0, 1)), rtol=1e-12)


def test_sample_has_no_graph_and_discrete_families_have_no_rsample():
    ours, _, _, _ = both("Normal")
    assert ours.sample((2,)).args is None and ours.rsample((2,)).args is not None
    assert D.Independent(ours, 1).has_rsample
    for name in ("Bernoulli(probs)", "Categorical(logits)", "OneHotCategorical"):
        with pytest.raises(NotImplementedError, match="REINFORCE"):
            both(name)[0].rsample()


# ====================================================================== shapes
@settings(max_examples=12)
@given(st.lists(st.integers(1, 3), max_size=3), st.lists(st.integers(0, 3), max_size=2))
def test_shapes_of_batches_samples_and_values_match_torch(batch, sample):
    torch = pytest.importorskip("torch")
    batch, sample = tuple(batch), tuple(sample)
    a, b = randn(*batch, seed=1), uniform(*batch, low=0.5, high=1.0)
    logits = randn(*batch, 4, seed=2)
    cases = {
        "Normal": {"loc": a, "scale": b},
        "Uniform": {"low": a, "high": a + b},
        "Bernoulli(probs)": {"probs": b},
        "Categorical(logits)": {"logits": logits},
        "OneHotCategorical": {"logits": logits},
        "MVN(scale_tril)": {"loc": randn(*batch, 2), "scale_tril": np.eye(2) * 2},
    }
    for name, arrays in cases.items():
        ours = MAKE[name](D, {k: Tensor(v) for k, v in arrays.items()})
        theirs = MAKE[name](torch.distributions, {k: torch.tensor(v) for k, v in arrays.items()})
        assert ours.batch_shape == tuple(theirs.batch_shape), name
        assert ours.event_shape == tuple(theirs.event_shape), name
        x = ours.sample(sample)
        assert x.shape == sample + tuple(theirs.batch_shape + theirs.event_shape), name
        if ours.has_rsample:
            assert ours.rsample(sample).shape == x.shape
        assert ours.log_prob(x).shape == sample + tuple(theirs.batch_shape), name
        if x.size:  # torch's own checks fail on an empty value
            assert ours.log_prob(x).shape == tuple(theirs.log_prob(torch.tensor(x.array)).shape)
        assert ours.entropy().shape == tuple(theirs.entropy().shape), name


BROADCAST = [("Normal", (3,)), ("Normal", (4, 1, 3)), ("Categorical(logits)", (5, 1)),
             ("Bernoulli(logits)", (1, 3)), ("MVN(scale_tril)", (3,))]  # fmt: skip


@pytest.mark.parametrize("name, shape", BROADCAST)
def test_log_prob_of_a_value_that_broadcasts_matches_torch(name, shape):
    torch = pytest.importorskip("torch")
    x = values(name, (4,)).reshape(-1)[: math.prod(shape)].reshape(shape)
    ours, theirs, p_ours, p_theirs = both(name)
    expected = theirs.log_prob(torch.tensor(x))
    assert_same(ours.log_prob(Tensor(x, requires_grad=False)), expected, p_ours, p_theirs)


# ====================================================================== draws
def test_sampling_statistics():
    manual_seed(0)
    n = 20000
    x = D.Normal(Tensor(np.array([0.0, 3.0])), Tensor(np.array([1.0, 0.5]))).sample((n,)).array
    np.testing.assert_allclose(x.mean(0), [0.0, 3.0], atol=0.04)
    np.testing.assert_allclose(x.std(0), [1.0, 0.5], atol=0.03)
    x = D.Uniform(-1.0, 3.0).sample((n,)).array
    assert x.min() >= -1 and x.max() < 3 and abs(x.mean() - 1) < 0.05
    x = D.Bernoulli(probs=Tensor(np.array([0.2, 0.7]))).sample((n,)).array
    assert set(np.unique(x)) == {0.0, 1.0}
    np.testing.assert_allclose(x.mean(0), [0.2, 0.7], atol=0.02)
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    ids = D.Categorical(probs=Tensor(probs)).sample((n,)).array  # (n, 2)
    assert ids.dtype == np.int64 and ids.shape == (n, 2)
    for row in range(2):
        np.testing.assert_allclose(np.bincount(ids[:, row], minlength=3) / n, probs[row], atol=0.02)
    one_hot = D.OneHotCategorical(probs=Tensor(probs[0])).sample((n,)).array
    assert (one_hot.sum(-1) == 1).all()
    np.testing.assert_allclose(one_hot.mean(0), probs[0], atol=0.02)
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    x = D.MultivariateNormal(Tensor(np.array([1.0, -1.0])), Tensor(cov)).sample((n,)).array
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.08)


@pytest.mark.parametrize("name", list(MAKE))
def test_a_seed_repeats_the_draws(name):
    ours = both(name)[0]
    draws = []
    for _ in range(2):
        manual_seed(7)
        draws.append(ours.sample((50,)).array)
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], ours.sample((50,)).array)  # the generator moved on
    if ours.has_rsample:
        manual_seed(7)
        np.testing.assert_array_equal(ours.rsample((50,)).array, draws[0])
    float_family = name.startswith(("Normal", "Uniform", "MVN", "Independent", "Bernoulli"))
    assert draws[0].dtype == (np.float64 if float_family or "OneHot" in name else np.int64)


def test_reinforce_on_a_two_armed_bandit_learns_the_better_arm():
    """The score-function gradient -log_prob(a) * advantage through Categorical raises the
    better arm's probability above 0.9."""
    manual_seed(0)
    logits = Tensor(np.zeros(2), requires_grad=True)
    pays = Tensor(np.array([0.3, 0.8]), requires_grad=False)  # each arm's chance of a reward 1
    for _ in range(60):
        policy = D.Categorical(logits=logits)
        actions = policy.sample((32,))
        rewards = D.Bernoulli(probs=pays[actions.array]).sample().array
        advantage = rewards - rewards.mean()
        loss = -(policy.log_prob(actions) * advantage).mean()
        logits.grad = None
        loss.backward()
        logits.array = logits.array - 2.0 * logits.grad.array
    assert D.Categorical(logits=logits).probs.array[1] > 0.9


# ====================================================================== the ops
@settings(max_examples=10)
@given(n=st.integers(1, 4), batch=st.lists(st.integers(1, 2), max_size=2), k=st.integers(1, 3))
def test_solve_triangular_and_cholesky_against_finite_differences(n, batch, k):
    L = np.tril(randn(*batch, n, n, seed=n)) + 3 * np.eye(n)
    assert gradcheck(solve_triangular, L, randn(n, k, seed=k))  # B broadcast over the batch
    A = spd(*batch, n=n, seed=k)
    assert gradcheck(lambda a: cholesky((a + a.swapaxes(-1, -2)) * 0.5), A)
    assert gradcheck(standard_normal_cdf, randn(*batch, n, seed=2))


# ====================================================================== errors
THIRDS, ZEROS, EYE = Tensor(np.ones(3) / 3), Tensor(np.zeros(2)), Tensor(np.eye(2))
ERRORS = [
    (lambda: D.Normal(0.0, -1.0), "parameter scale .* GreaterThan"),
    (lambda: D.Normal(Tensor(np.zeros(2)), Tensor(np.array([1.0, 0.0]))), "parameter scale"),
    (lambda: D.Normal(Tensor(np.zeros(3)), Tensor(np.ones(2))), "do not broadcast: loc"),
    (lambda: D.Uniform(1.0, 1.0), "parameter low .* LessThan"),
    (lambda: D.Bernoulli(probs=1.5), "parameter probs .* Interval"),
    (lambda: D.Bernoulli(), "give probs or logits, not both; got neither"),
    (lambda: D.Categorical(probs=Tensor(np.ones(2)), logits=Tensor(np.ones(2))), "got both"),
    (lambda: D.Categorical(probs=Tensor(np.array([0.5, -0.1]))), "finite and >= 0.*-0.1"),
    (lambda: D.Categorical(probs=Tensor(np.zeros((2, 3)))), "positive sum"),
    (lambda: D.Categorical(logits=Tensor(np.array(1.0))), "at least 1 axis"),
    (lambda: D.Normal(0.0, 1.0).log_prob(Tensor(np.array([np.nan]))), "support Real"),
    (lambda: D.Bernoulli(0.3).log_prob(Tensor(np.array([0.5]))), "support Boolean.*0.5"),
    (lambda: D.Categorical(logits=Tensor(np.zeros(3))).log_prob(3), "support IntegerInterval"),
    (lambda: D.Uniform(0.0, 1.0).log_prob(1.5), "support Interval"),
    (lambda: D.OneHotCategorical(probs=THIRDS).log_prob(Tensor(np.ones(3))), "support OneHot"),
    (lambda: D.OneHotCategorical(probs=THIRDS).log_prob(Tensor(np.ones(2))), "event shape"),
    (lambda: D.Normal(Tensor(np.zeros(3)), 1.0).log_prob(Tensor(np.zeros(2))), "not broadcast"),
    (lambda: D.Independent(D.Normal(0.0, 1.0), 1), "at most the number of batch axes"),
    (lambda: D.MultivariateNormal(ZEROS, EYE, scale_tril=EYE), "exactly one of"),
    (lambda: D.MultivariateNormal(Tensor(np.zeros(2)), Tensor(-np.eye(2))), "PositiveDefinite"),
    (lambda: D.MultivariateNormal(ZEROS, scale_tril=Tensor(np.ones((2, 2)))), "LowerCholesky"),
    (lambda: D.MultivariateNormal(Tensor(np.zeros(2)), Tensor(np.eye(3))), r"\(\.\.\., 2, 2\)"),
]


@pytest.mark.parametrize("make, message", ERRORS)
def test_bad_input_is_a_clear_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_types_are_type_errors():
    with pytest.raises(TypeError, match="Normal: loc's dtype must be floating"):
        D.Normal(Tensor(np.arange(3)), 1.0)
    with pytest.raises(TypeError, match="Independent: base_distribution"):
        D.Independent(Tensor(np.zeros(3)), 1)
    with pytest.raises(TypeError, match="validate_args"):
        D.Normal(0.0, 1.0, validate_args="yes")


def test_validation_can_be_turned_off_as_in_torch():
    torch = pytest.importorskip("torch")
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    low = D.Uniform(0.0, 1.0, validate_args=False).log_prob(Tensor(np.array([0.5, 2.0])))
    assert low.array[0] == 0.0 and low.array[1] == -np.inf
    x = np.array([0.25, 1.0])
    ours = D.Bernoulli(0.3, validate_args=False).log_prob(Tensor(x))
    theirs = torch.distributions.Bernoulli(0.3, validate_args=False).log_prob(torch.tensor(x))
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-6)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, -1.0)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)


def test_unnormalised_probs_are_normalised_as_torch_does():
    probs = D.Categorical(probs=Tensor(np.array([1.0, 3.0]))).probs.array
    np.testing.assert_allclose(probs, [0.25, 0.75])
    assert tricycle.distributions.Normal is D.Normal
