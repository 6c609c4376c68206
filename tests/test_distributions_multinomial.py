"""tricycle.distributions.Multinomial against torch.distributions.Multinomial, in float64:
log_prob and entropy (and their gradients with respect to probs or logits), the moments and
the shapes of a batch, the draws' shapes, sums and frequencies (and their repetition under a
seed), the support, a logit of -inf with a count of 0, and the errors for bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle
import tricycle.distributions as D
from tricycle.distributions.multinomial import Multinomial


def case(batch: tuple, k: int, n: int, seed: int):
    """Weights (positive, unnormalised), logits, and counts summing to n for each of them."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.1, 1.0, size=(*batch, k))
    logits = rng.normal(size=(*batch, k))
    counts = rng.multinomial(n, np.full(k, 1 / k), size=batch).astype(np.float64)
    return weights, logits, counts


@settings(deadline=None, max_examples=10)
@given(
    batch=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    k=st.integers(1, 4),
    n=st.integers(0, 6),
    given_as=st.sampled_from(["probs", "logits"]),
    seed=st.integers(0, 2**16),
)
def test_log_prob_entropy_and_moments_match_torch(batch, k, n, given_as, seed):
    torch = pytest.importorskip("torch")
    weights, logits, counts = case(batch, k, n, seed)
    parameter = weights if given_as == "probs" else logits
    ours = tricycle.tensor(parameter, requires_grad=True)
    theirs = torch.tensor(parameter, requires_grad=True)
    mine = Multinomial(n, **{given_as: ours})
    torchs = torch.distributions.Multinomial(n, **{given_as: theirs})
    assert mine.batch_shape == tuple(torchs.batch_shape) and mine.event_shape == (k,)
    results = []
    for d, lib, p in (mine, tricycle, ours), (torchs, torch, theirs):
        log_p = d.log_prob(lib.tensor(counts))
        entropy = d.entropy()
        (log_p.sum() + 0.5 * entropy.sum()).backward()
        host = lambda t: np.asarray(t.detach().numpy(), dtype=float)  # noqa: E731
        results.append([host(log_p), host(entropy), host(d.mean), host(d.variance), host(p.grad)])
    for got, want in zip(*results, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-7)  # torch clamps p: k = 1


def test_draws_are_counts_of_the_classes():
    torch = pytest.importorskip("torch")
    probs = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]], dtype=np.float32)
    tricycle.manual_seed(0)
    d = D.Multinomial(10, tricycle.tensor(probs))
    draws = d.sample((4000,))
    assert draws.shape == (4000, 2, 3) and draws.dtype == np.float32 and not draws.requires_grad
    counts = draws.numpy()
    assert (counts.sum(-1) == 10).all() and (counts == np.round(counts)).all()
    np.testing.assert_allclose(counts.mean(0), 10 * probs, atol=0.1)  # the mean, n p
    np.testing.assert_allclose(counts.var(0), 10 * probs * (1 - probs), rtol=0.1)
    tricycle.manual_seed(0)
    again = D.Multinomial(10, tricycle.tensor(probs)).sample((4000,))
    np.testing.assert_array_equal(again.numpy(), counts)
    theirs = torch.distributions.Multinomial(10, torch.tensor(probs)).sample((5,))
    assert tuple(theirs.shape) == d.sample((5,)).shape and d.sample().shape == (2, 3)
    one = D.Multinomial(probs=tricycle.tensor([0.5, 0.5])).sample((6,)).numpy()  # n = 1
    assert ((one == 0) | (one == 1)).all() and (one.sum(-1) == 1).all()


def test_a_class_of_logit_minus_inf_counted_zero_times_adds_nothing():
    torch = pytest.importorskip("torch")
    logits = np.array([0.3, -np.inf, -0.2])
    counts = np.array([2.0, 0.0, 3.0])
    ours = D.Multinomial(5, logits=tricycle.tensor(logits, requires_grad=True))
    theirs = torch.distributions.Multinomial(5, logits=torch.tensor(logits))
    np.testing.assert_allclose(
        ours.log_prob(tricycle.tensor(counts)).numpy(),
        theirs.log_prob(torch.tensor(counts)).numpy(),
        rtol=1e-12,
    )


def test_the_support_and_bad_input():
    d = D.Multinomial(3, tricycle.tensor([0.25, 0.75]))
    assert repr(d.support) == "Multinomial(upper_bound=3)" and d.support.is_discrete
    assert repr(D.constraints.multinomial(3)) == repr(d.support)
    checked = d.support.check(tricycle.tensor([[1.0, 2.0], [3.0, 1.0]]))  # sums 3 and 4
    np.testing.assert_array_equal(checked, [True, False])
    with pytest.raises(ValueError, match=r"Multinomial.log_prob: value .* lie in the support"):
        d.log_prob(tricycle.tensor([-1.0, 2.0]))
    with pytest.raises(ValueError, match="last axes of value must be the event shape"):
        d.log_prob(tricycle.tensor([1.0, 1.0, 1.0]))
    with pytest.raises(NotImplementedError, match="total_count must be one int"):
        D.Multinomial(tricycle.tensor([3.0, 4.0]), tricycle.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="Multinomial.*total_count.*>= 0"):
        D.Multinomial(-1, tricycle.tensor([0.5, 0.5]))
    with pytest.raises(ValueError, match="give probs or logits, not both; got neither"):
        D.Multinomial(3)
    with pytest.raises(ValueError, match="must be finite and >= 0"):
        D.Multinomial(3, tricycle.tensor([-0.5, 1.5]))
