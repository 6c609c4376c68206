"""The simpler families of tricycle.distributions against torch.distributions, in float64:
Exponential, Laplace, Cauchy, HalfNormal, HalfCauchy, LogNormal, LogisticNormal, Gumbel,
Weibull, Pareto, Geometric and NegativeBinomial: log_prob, cdf, icdf, entropy, the moments
and the mode with their gradients, rsample and its gradient on the same noise, sampling
statistics, expand, support, the kl_divergence pairs torch registers among them (values and
gradients), finite differences, and the errors."""

import numpy as np
import pytest

import tricycle
import tricycle.distributions as D
from tests.helpers import check_grads, randn
from tricycle.random import manual_seed
from tricycle.tensor import Tensor


def positive(*shape, seed=0, low=0.5, high=2.5):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


PARAMS = {  # name -> (constructor's parameters by name, values to score, an array maker)
    "Exponential": lambda: {"rate": positive(2, 3)},
    "Laplace": lambda: {"loc": randn(2, 3), "scale": positive(3, seed=1)},
    "Cauchy": lambda: {"loc": randn(2, 3), "scale": positive(3, seed=1)},
    "HalfNormal": lambda: {"scale": positive(2, 3)},
    "HalfCauchy": lambda: {"scale": positive(2, 3)},
    "LogNormal": lambda: {"loc": randn(2, 3), "scale": positive(3, seed=1, high=1.0)},
    "Gumbel": lambda: {"loc": randn(2, 3), "scale": positive(3, seed=1)},
    "Weibull": lambda: {"scale": positive(2, 3), "concentration": positive(3, seed=1, high=3)},
    "Pareto": lambda: {"scale": positive(2, 3, high=1.0),
                       "alpha": positive(3, seed=1, low=2.5, high=4)},
    "LogisticNormal": lambda: {"loc": randn(2, 3), "scale": positive(3, seed=1, high=1.0)},
    "Geometric(probs)": lambda: {"probs": positive(2, 3, low=0.2, high=0.9)},
    "Geometric(logits)": lambda: {"logits": randn(2, 3)},
    "NegativeBinomial(probs)": lambda: {"total_count": positive(3, high=4),
                                        "probs": positive(2, 3, low=0.1, high=0.8)},
    "NegativeBinomial(logits)": lambda: {"total_count": positive(3, high=4),
                                         "logits": randn(2, 3)},
}  # fmt: skip
CONTINUOUS = ["Exponential", "Laplace", "Cauchy", "HalfNormal", "HalfCauchy", "LogNormal",
              "Gumbel", "Weibull", "Pareto"]  # fmt: skip
ALL = list(PARAMS)


def family(name: str) -> str:
    return name.split("(")[0]


def both(name: str):
    """(ours, theirs, our parameters, their parameters), fresh leaves each call."""
    torch = pytest.importorskip("torch")
    arrays = PARAMS[name]()
    ours = {k: Tensor(a, requires_grad=True) for k, a in arrays.items()}
    theirs = {k: torch.tensor(a, requires_grad=True) for k, a in arrays.items()}
    return (getattr(D, family(name))(**ours),
            getattr(torch.distributions, family(name))(**theirs), ours, theirs)  # fmt: skip


def assert_same(out, expected, ours, theirs, seed=5, rtol=1e-9, atol=1e-11):
    """Equal values, and equal gradients of every parameter for a random output gradient."""
    torch = pytest.importorskip("torch")
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=rtol, atol=atol)
    if not expected.requires_grad:
        return
    finite = np.isfinite(expected.detach().numpy())
    dout = randn(*out.shape, seed=seed) * finite  # no gradient through an inf or NaN
    out.backward(dout)
    expected.backward(torch.tensor(dout))
    for key, t in theirs.items():
        want = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(t.shape) if ours[key].grad is None else ours[key].grad.array
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=key)


def scored_values(name: str, theirs) -> np.ndarray:
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return theirs.sample((4,)).numpy()


@pytest.mark.parametrize("name", ALL)
def test_log_prob_and_its_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs, p_ours, p_theirs = both(name)
    value = scored_values(name, theirs)
    assert_same(ours.log_prob(Tensor(value)), theirs.log_prob(torch.tensor(value)), p_ours,
                p_theirs)  # fmt: skip
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.event_shape == tuple(theirs.event_shape)


@pytest.mark.parametrize("quantity", ["entropy", "mean", "mode", "variance", "stddev"])
@pytest.mark.parametrize("name", ALL)
def test_entropy_and_moments_match_torch(name, quantity):
    ours, theirs, p_ours, p_theirs = both(name)
    try:
        expected = getattr(theirs, quantity)
        expected = expected() if callable(expected) else expected
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            got = getattr(ours, quantity)
            got() if callable(got) else got
        return
    got = getattr(ours, quantity)
    got = got() if callable(got) else got
    if not np.isfinite(expected.detach().numpy()).all():  # torch's NaN and inf moments
        np.testing.assert_array_equal(got.array, expected.detach().numpy())
        return
    assert_same(got, expected, p_ours, p_theirs)


@pytest.mark.parametrize("name", CONTINUOUS)
def test_cdf_and_icdf_match_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs, p_ours, p_theirs = both(name)
    value = scored_values(name, theirs)
    assert_same(ours.cdf(Tensor(value)), theirs.cdf(torch.tensor(value)), p_ours, p_theirs)
    ours, theirs, p_ours, p_theirs = both(name)
    u = np.random.default_rng(1).uniform(0.05, 0.95, (4, 2, 3))
    assert_same(ours.icdf(Tensor(u)), theirs.icdf(torch.tensor(u)), p_ours, p_theirs, rtol=1e-8)


# the noise each rsample turns into a draw: its inverse cdf read at a probability
INVERSE_CDF = {
    "Exponential": lambda u: u,
    "Laplace": lambda u: (u * (2 - np.finfo(np.float64).eps) + np.finfo(np.float64).eps) / 2,
    "Cauchy": lambda u: u,
    "HalfCauchy": lambda u: np.abs(2 * u - 1),
    "Gumbel": lambda u: np.finfo(np.float64).tiny + u * (1 - np.finfo(np.float64).eps),
    "Weibull": lambda u: u,
    "Pareto": lambda u: u,
}


@pytest.mark.parametrize("name", list(INVERSE_CDF))
def test_rsample_is_the_inverse_cdf_of_its_noise_with_torchs_gradient(name):
    """Seeded, the draw equals torch's icdf at the same uniform noise, and so do the
    gradients of the draw with respect to every parameter."""
    torch = pytest.importorskip("torch")
    ours, theirs, p_ours, p_theirs = both(name)
    manual_seed(3)
    u = tricycle.rand((5, 2, 3), dtype=np.float64).array
    manual_seed(3)
    draw = ours.rsample((5,))
    expected = theirs.icdf(torch.tensor(INVERSE_CDF[name](u)))
    assert_same(draw, expected, p_ours, p_theirs, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["HalfNormal", "LogNormal", "LogisticNormal"])
def test_rsample_of_the_normal_based_families_matches_torch_on_the_same_noise(name, monkeypatch):
    torch = pytest.importorskip("torch")
    ours, theirs, p_ours, p_theirs = both(name)
    base_shape = (5,) + (2, 3)
    manual_seed(3)
    eps = tricycle.randn(base_shape, dtype=np.float64).array
    manual_seed(3)
    draw = ours.rsample((5,))
    monkeypatch.setattr(torch.distributions.normal, "_standard_normal",
                        lambda *_, **__: torch.tensor(eps))  # fmt: skip
    assert_same(draw, theirs.rsample((5,)), p_ours, p_theirs)


@pytest.mark.parametrize("name", ALL)
def test_draws_have_the_right_shape_support_and_mean(name):
    ours, theirs, *_ = both(name)
    manual_seed(0)
    draws = ours.sample((4000,))
    assert draws.shape == (4000,) + ours.batch_shape + ours.event_shape
    assert draws.args is None
    assert ours.support.check(draws).all()
    assert type(ours.support).__name__ == type(theirs.support).__name__.lstrip("_")
    if name in ("Cauchy", "HalfCauchy", "Pareto", "LogNormal", "LogisticNormal"):
        return  # heavy tails (or no mean): checked by the shapes and the support
    mean = ours.mean.array
    spread = ours.stddev.array / np.sqrt(4000)
    assert (np.abs(draws.array.mean(axis=0) - mean) < 6 * spread + 1e-9).all(), name


@pytest.mark.parametrize("name", ALL)
def test_expand_broadcasts_the_batch_as_torchs(name):
    torch = pytest.importorskip("torch")
    ours, theirs, *_ = both(name)
    shape = (4,) + ours.batch_shape
    wide, wide_t = ours.expand(shape), theirs.expand(shape)
    assert wide.batch_shape == tuple(wide_t.batch_shape) and type(wide) is type(ours)
    value = scored_values(name, theirs)[:1]
    want = wide_t.log_prob(torch.tensor(value)).detach().numpy()
    np.testing.assert_allclose(wide.log_prob(Tensor(value)).array, want, rtol=1e-9)
    assert wide.sample().shape == shape + ours.event_shape
    with pytest.raises(ValueError, match="does not broadcast"):
        ours.expand((5,))


KL_PAIRS = [("Exponential", "Exponential"), ("Laplace", "Laplace"), ("Cauchy", "Cauchy"),
            ("Gumbel", "Gumbel"), ("Geometric(probs)", "Geometric(logits)"),
            ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"), ("LogNormal", "LogNormal"),
            ("Exponential", "Gumbel"), ("Pareto", "Exponential"),
            ("Exponential", "Pareto"), ("Gumbel", "Exponential")]  # fmt: skip


@pytest.mark.parametrize(("p", "q"), KL_PAIRS)
def test_kl_divergence_matches_torch_with_gradients(p, q):
    torch = pytest.importorskip("torch")
    ours_p, theirs_p, op, tp = both(p)
    PARAMS_Q = PARAMS[q]()
    oq = {f"q_{k}": Tensor(a * 1.3, requires_grad=True) for k, a in PARAMS_Q.items()}
    tq = {f"q_{k}": torch.tensor(a * 1.3, requires_grad=True) for k, a in PARAMS_Q.items()}
    ours_q = getattr(D, family(q))(**{k[2:]: v for k, v in oq.items()})
    theirs_q = getattr(torch.distributions, family(q))(**{k[2:]: v for k, v in tq.items()})
    expected = torch.distributions.kl_divergence(theirs_p, theirs_q)
    assert_same(D.kl_divergence(ours_p, ours_q), expected, {**op, **oq}, {**tp, **tq}, rtol=1e-8)


MIXED = [("Exponential", "Normal"), ("Gumbel", "Normal"), ("Laplace", "Normal"),
         ("Normal", "Gumbel"), ("Normal", "Laplace"), ("Pareto", "Normal"),
         ("Uniform", "Exponential"), ("Uniform", "Gumbel"), ("Uniform", "Pareto"),
         ("Normal", "Exponential"), ("Laplace", "Uniform")]  # fmt: skip


def mixed_params(name, seed):
    if name == "Normal":
        return {"loc": randn(3, seed=seed), "scale": positive(3, seed=seed + 1)}
    if name == "Uniform":
        return {"low": positive(3, seed=seed, low=1.1, high=1.5),
                "high": positive(3, seed=seed + 1, low=2.0, high=3.0)}  # fmt: skip
    return {k: a[0] for k, a in PARAMS[name]().items()}


@pytest.mark.parametrize(("p", "q"), MIXED)
def test_kl_divergence_of_mixed_pairs_matches_torch(p, q):
    torch = pytest.importorskip("torch")
    arrays_p, arrays_q = mixed_params(p, 0), mixed_params(q, 3)
    ours = D.kl_divergence(
        getattr(D, p)(**{k: Tensor(a) for k, a in arrays_p.items()}),
        getattr(D, q)(**{k: Tensor(a) for k, a in arrays_q.items()}),
    )
    theirs = torch.distributions.kl_divergence(
        getattr(torch.distributions, p)(**{k: torch.tensor(a) for k, a in arrays_p.items()}),
        getattr(torch.distributions, q)(**{k: torch.tensor(a) for k, a in arrays_q.items()}),
    )
    np.testing.assert_allclose(ours.array, theirs.numpy(), rtol=1e-9)


def test_gradients_by_finite_differences():
    value = positive(4, seed=7, low=1.2, high=3)
    check_grads(
        lambda s, k: D.Weibull(s, k).log_prob(Tensor(value)), positive(4), positive(4, seed=1)
    )
    check_grads(lambda loc, s: D.Laplace(loc, s).cdf(Tensor(value)), randn(4), positive(4, seed=2))
    counts, logits = Tensor(np.arange(4.0)), Tensor(randn(4))
    check_grads(
        lambda r: D.NegativeBinomial(r, logits=logits).log_prob(counts), positive(4, seed=3)
    )
    check_grads(lambda s, a: D.Pareto(s, a).entropy(), positive(4), positive(4, seed=4))


def test_errors_name_the_family_and_the_value():
    with pytest.raises(ValueError, match="Exponential: parameter rate"):
        D.Exponential(Tensor(np.array([1.0, -1.0])))
    with pytest.raises(ValueError, match="Weibull: parameter concentration"):
        D.Weibull(1.0, Tensor(np.array([0.0])))
    with pytest.raises(ValueError, match="Geometric: give probs or logits, not both"):
        D.Geometric(probs=0.5, logits=0.0)
    with pytest.raises(ValueError, match="Geometric: parameter probs"):
        D.Geometric(probs=Tensor(np.array([0.0, 0.5])))
    with pytest.raises(ValueError, match=r"HalfNormal.log_prob: value .* lie in the support"):
        D.HalfNormal(1.0).log_prob(Tensor(np.array([-1.0])))
    with pytest.raises(ValueError, match=r"Exponential.icdf: value .* lie in"):
        D.Exponential(1.0).icdf(Tensor(np.array([1.5])))
    with pytest.raises(ValueError, match="Pareto.log_prob"):
        D.Pareto(2.0, 1.0).log_prob(Tensor(np.array([1.0])))
    with pytest.raises(NotImplementedError, match="NegativeBinomial.entropy"):
        D.NegativeBinomial(2.0, 0.5).entropy()
    with pytest.raises(NotImplementedError, match="NegativeBinomial.rsample"):
        D.NegativeBinomial(2.0, 0.5).rsample()
    with pytest.raises(NotImplementedError, match="different transforms"):
        D.kl_divergence(D.LogNormal(0.0, 1.0), D.HalfNormal(1.0))
    assert (
        not D.HalfNormal(1.0, validate_args=False).log_prob(Tensor(np.array([-1.0]))).array > -1e300
    )
