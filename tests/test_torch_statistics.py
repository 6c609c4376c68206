"""torch's statistics, scans, integrals and distances (``tricycle.torch_statistics``) at the
top level and as Tensor methods, and ``cosine_similarity``/``pairwise_distance`` at the top
level: values and the gradients of every input against torch in float64 (ties, NaN, far-apart
values for ``logcumsumexp``, weights for ``cov``), against finite differences (hypothesis),
the named tuples, and bad arguments refused, naming the function."""

import math

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def ties(*shape, seed=0):
    return np.round(normal(*shape, seed=seed))  # whole numbers: ties in every row


def spread(*shape, seed=0):
    a = normal(*shape, seed=seed)
    a.flat[0], a.flat[-1] = -800.0, 600.0  # exp would overflow or vanish
    return a


def both(*arrays):
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


FW, AW = np.array([1, 2, 3, 1, 2]), np.abs(normal(5, seed=3))
# (name, tricycle call, torch call, inputs, which output): values and gradients
CASES = [
    ("std_mean", lambda a: tc.std_mean(a, 1), lambda a: torch.std_mean(a, 1), [normal(3, 4)], 0),
    ("std_mean mean", lambda a: tc.std_mean(a, (0, 1), keepdim=True),
     lambda a: torch.std_mean(a, (0, 1), keepdim=True), [normal(3, 4)], 1),
    ("var_mean", lambda a: tc.var_mean(a, dim=0, correction=0),
     lambda a: torch.var_mean(a, dim=0, correction=0), [normal(3, 4)], 0),
    ("var_mean all", lambda a: tc.var_mean(a), lambda a: torch.var_mean(a), [normal(3, 4)], 0),
    ("var_mean unbiased", lambda a: tc.var_mean(a, 1, False), lambda a: torch.var_mean(a, 1, False),
     [normal(3, 4)], 0),
    # torch's aminmax is its amin and amax together (their gradients: before 2.13 aminmax had
    # none), the oracle here
    ("aminmax min", lambda a: tc.aminmax(a, dim=1), lambda a: (torch.amin(a, 1), torch.amax(a, 1)),
     [ties(3, 5)], 0),
    ("aminmax max", lambda a: tc.aminmax(a, dim=0, keepdim=True),
     lambda a: (torch.amin(a, 0, keepdim=True), torch.amax(a, 0, keepdim=True)),
     [ties(3, 5)], 1),
    ("aminmax all", lambda a: tc.aminmax(a), lambda a: (torch.amin(a), torch.amax(a)),
     [ties(3, 5)], 1),
    ("cummax", lambda a: tc.cummax(a, 1), lambda a: torch.cummax(a, 1), [ties(3, 6)], 0),
    ("cummin", lambda a: a.cummin(0), lambda a: a.cummin(0), [ties(5, 3)], 0),
    ("cummax 3-d", lambda a: tc.cummax(a, -2), lambda a: torch.cummax(a, -2), [ties(2, 4, 3)], 0),
    ("logcumsumexp", lambda a: tc.logcumsumexp(a, 1), lambda a: torch.logcumsumexp(a, 1),
     [spread(3, 5)], None),
    ("logcumsumexp dim 0", lambda a: a.logcumsumexp(0), lambda a: a.logcumsumexp(0),
     [normal(4, 2, 3)], None),
    ("diff", lambda a: tc.diff(a), lambda a: torch.diff(a), [normal(3, 5)], None),
    ("diff n dim", lambda a: a.diff(2, 0), lambda a: a.diff(2, 0), [normal(5, 3)], None),
    ("diff prepend append", lambda a, p: tc.diff(a, 1, 1, prepend=p, append=a),
     lambda a, p: torch.diff(a, 1, 1, prepend=p, append=a), [normal(3, 4), normal(3, 2)], None),
    ("diff n past the length", lambda a: tc.diff(a, 5), lambda a: torch.diff(a, 5), [normal(2, 3)],
     None),
    ("trapezoid", lambda y: tc.trapezoid(y), lambda y: torch.trapezoid(y), [normal(3, 5)], None),
    ("trapezoid dx dim", lambda y: tc.trapezoid(y, dx=0.5, dim=0),
     lambda y: torch.trapezoid(y, dx=0.5, dim=0), [normal(4, 3)], None),
    ("trapezoid x", lambda y, x: tc.trapezoid(y, x), lambda y, x: torch.trapezoid(y, x),
     [normal(3, 5), normal(5)], None),
    ("trapezoid x of y's shape", lambda y, x: tc.trapz(y, x, dim=0),
     lambda y, x: torch.trapz(y, x, dim=0), [normal(4, 3), normal(4, 3, seed=1)], None),
    ("cumulative_trapezoid", lambda y, x: tc.cumulative_trapezoid(y, x),
     lambda y, x: torch.cumulative_trapezoid(y, x), [normal(3, 5), normal(5)], None),
    ("cov", lambda a: tc.cov(a), lambda a: torch.cov(a), [normal(3, 5)], None),
    ("cov method correction", lambda a: a.cov(correction=0), lambda a: a.cov(correction=0),
     [normal(3, 5)], None),
    ("cov weights", lambda a: tc.cov(a, fweights=tc.tensor(FW), aweights=tc.tensor(AW)),
     lambda a: torch.cov(a, fweights=torch.tensor(FW), aweights=torch.tensor(AW)),
     [normal(3, 5)], None),
    ("cov fweights", lambda a: tc.cov(a, correction=2, fweights=tc.tensor(FW)),
     lambda a: torch.cov(a, correction=2, fweights=torch.tensor(FW)), [normal(2, 5)], None),
    ("cov aweights", lambda a: tc.cov(a, correction=0, aweights=tc.tensor(AW)),
     lambda a: torch.cov(a, correction=0, aweights=torch.tensor(AW)), [normal(2, 5)], None),
    ("cov 1-d", lambda a: tc.cov(a), lambda a: torch.cov(a), [normal(5)], None),
    ("corrcoef", lambda a: tc.corrcoef(a), lambda a: torch.corrcoef(a), [normal(4, 6)], None),
    ("corrcoef method", lambda a: a.corrcoef(), lambda a: a.corrcoef(), [normal(2, 6)], None),
    ("renorm", lambda a: tc.renorm(a, 2, 0, 1.5), lambda a: torch.renorm(a, 2, 0, 1.5),
     [normal(3, 4)], None),
    ("renorm p=1 dim=1", lambda a: a.renorm(1, 1, 1.0), lambda a: a.renorm(1, 1, 1.0),
     [normal(2, 4, 3)], None),
    ("renorm inf", lambda a: tc.renorm(a, math.inf, -1, 0.8),
     lambda a: torch.renorm(a, math.inf, -1, 0.8), [normal(3, 4)], None),
    ("dist", lambda a, b: tc.dist(a, b), lambda a, b: torch.dist(a, b), [normal(3, 4), normal(4)],
     None),
    ("dist p=3 method", lambda a, b: a.dist(b, 3), lambda a, b: a.dist(b, 3),
     [normal(3, 4), normal(3, 4, seed=1)], None),
    ("pdist", lambda a: tc.pdist(a), lambda a: torch.pdist(a), [normal(5, 3)], None),
    ("pdist p=1", lambda a: tc.pdist(a, 1), lambda a: torch.pdist(a, 1), [normal(4, 3)], None),
    ("pdist inf", lambda a: tc.pdist(a, math.inf), lambda a: torch.pdist(a, math.inf),
     [normal(4, 3)], None),
    ("cosine_similarity", lambda a, b: tc.cosine_similarity(a, b),
     lambda a, b: torch.cosine_similarity(a, b), [normal(3, 4), normal(3, 4, seed=1)], None),
    ("pairwise_distance", lambda a, b: tc.pairwise_distance(a, b),
     lambda a, b: torch.pairwise_distance(a, b), [normal(3, 4), normal(3, 4, seed=1)], None),
]  # fmt: skip


@pytest.mark.parametrize(("name", "ours", "theirs", "arrays", "which"), CASES,
                         ids=[case[0] for case in CASES])  # fmt: skip
def test_values_and_gradients_match_torch(name, ours, theirs, arrays, which):
    xs, ts = both(*arrays)
    out, expected = ours(*xs), theirs(*ts)
    if which is not None:
        out, expected = out[which], expected[which]
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = normal(*expected.shape, seed=9)
    out.backward(weights)
    expected.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_named_tuples_indices_and_nan_are_torchs():
    a = np.array([[1.0, 3.0, 3.0, 2.0, 5.0, math.nan, 1.0, math.nan], [2, 2, 1, 1, 0, 0, 4, 3]])
    for name in ("cummax", "cummin"):
        ours, theirs = getattr(tc, name)(tc.tensor(a), 1), getattr(torch, name)(torch.tensor(a), 1)
        np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        assert ours.indices.dtype == np.int64
    x = tc.Tensor(a[:1], requires_grad=True, dtype=np.float64)
    t = torch.tensor(a[:1], requires_grad=True)
    tc.cummax(x, 1).values.backward(np.ones((1, 8)))
    torch.cummax(t, 1).values.backward(torch.ones(1, 8, dtype=torch.float64))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    ints = tc.cummax(tc.tensor([1, 3, 2]), 0)
    assert ints.values.numpy().tolist() == [1, 3, 3] and ints.indices.numpy().tolist() == [0, 1, 1]
    low, high = tc.aminmax(tc.tensor([[1, 5], [0, 2]]), dim=0)
    assert low.numpy().tolist() == [0, 2] and high.numpy().tolist() == [1, 5]
    std, mean = tc.std_mean(tc.ones(3, 2), 1)
    assert std.numpy().tolist() == [0, 0, 0] and mean.numpy().tolist() == [1, 1, 1]
    assert tc.diff(tc.tensor([True, False, False])).numpy().tolist() == [True, False]
    assert tc.diff(tc.tensor([1, 3, 2])).numpy().tolist() == [2, -1]
    assert tc.trapezoid(tc.tensor([1, 2, 4])).item() == torch.trapezoid(torch.tensor([1, 2, 4]))
    ours = tc.cov(tc.tensor([[1.0, 2.0]]), correction=2)  # no degrees of freedom: inf, as torch's
    with pytest.warns(UserWarning):
        theirs = torch.cov(torch.tensor([[1.0, 2.0]]), correction=2)
    assert ours.shape == () and ours.item() == theirs.item() == math.inf
    assert tc.logcumsumexp(tc.tensor(2.0), 0).item() == 2.0
    assert tc.pdist(tc.ones(1, 3)).shape == (0,)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 99))
def test_gradients_match_finite_differences(shape, seed):
    a = normal(*shape, seed=seed)
    dim = seed % len(shape)
    check_grads(lambda x: tc.logcumsumexp(x, dim), a)
    check_grads(lambda x: tc.cummax(x, dim).values + tc.cummin(x, dim).values, a)
    check_grads(lambda x: tc.diff(x, 1, dim), a)
    check_grads(lambda x: tc.trapezoid(x, dim=dim) + tc.cumulative_trapezoid(x, dim=dim).sum(), a)
    check_grads(lambda x: tc.renorm(x, 2, dim, 0.5), a)
    if len(shape) == 2 and shape[1] > 1:
        check_grads(tc.cov, a)
        check_grads(lambda x: tc.pdist(x), a)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: tc.std_mean(x, out=x), TypeError, "std_mean: out= is not supported"),
        (lambda x: tc.var_mean([1.0]), TypeError, "var_mean: input must be a Tensor"),
        (lambda x: tc.std_mean(x, 0, True, correction=0), TypeError, "std_mean: unbiased"),
        (lambda x: tc.aminmax(tc.zeros(0)), RuntimeError, "aminmax: cannot compute aminmax"),
        (lambda x: tc.aminmax(x, dim=2), ValueError, "aminmax: dim must be"),
        (lambda x: tc.cummax(x, 2), ValueError, "cummax: dim must be"),
        (lambda x: tc.logcumsumexp(tc.tensor([1, 2]), 0), TypeError, "logcumsumexp: input"),
        (lambda x: tc.diff(x, -1), ValueError, "diff: n must be"),
        (lambda x: tc.diff(tc.tensor(1.0)), RuntimeError, "diff: expected a tensor of at least"),
        (lambda x: tc.diff(x, prepend=[1.0]), TypeError, "diff: prepend must be a Tensor"),
        (lambda x: tc.trapezoid(x, tc.ones(3)), ValueError, "trapezoid: x must be 2 samples"),
        (lambda x: tc.trapezoid(x, tc.ones(2), dx=1.0), TypeError, "trapezoid: give x or dx"),
        (lambda x: tc.cov(tc.ones(2, 2, 2)), ValueError, "cov: input must be a 1-D or 2-D"),
        (lambda x: tc.cov(x, fweights=tc.ones(2)), TypeError, "cov: fweights must be integers"),
        (lambda x: tc.cov(x, aweights=tc.ones(3)), ValueError, "cov: aweights must be a 1-D"),
        (lambda x: tc.cov(x, aweights=-tc.ones(2)), ValueError, "cov: aweights must be non-neg"),
        (lambda x: tc.renorm(x, 0.5, 0, 1.0), ValueError, "renorm: p must be"),
        (lambda x: tc.renorm(x, 2, 0, -1.0), ValueError, "renorm: maxnorm must be"),
        (lambda x: tc.pdist(tc.ones(3)), ValueError, "pdist: input must be a 2-D"),
        (lambda x: tc.dist(x, 1.0), TypeError, "dist: other must be a Tensor"),
    ],
)
def test_bad_arguments_are_refused_naming_the_function(call, error, message):
    with pytest.raises(error, match=message):
        call(tc.tensor([[0.5, 2.0], [1.0, 0.0], [4.0, 1.0]]))
