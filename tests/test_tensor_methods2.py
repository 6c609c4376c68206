"""torch.Tensor's remaining common methods and their top-level functions: the arithmetic with
torch's keywords, the logs, fmod/remainder, the logical ops and nan_to_num
(``tricycle.pointwise``), nansum, nanmean, median, mode, kthvalue and quantile
(``tricycle.reduce_torch``), mm, mv, dot and addmm (``tricycle.products``), select,
index_add/copy/fill and masked_scatter (``tricycle.indexing``), random_
(``tricycle.random_fills``) and the small ones of ``tensor``/``tensor_inplace``. Values and
the gradients of every input against torch in float64, the new ops' gradients against finite
differences on random shapes (each input used twice), the in-place forms and their rule, and
bad arguments refused, naming the method."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tricycle as tc
from tricycle import torch_functions, torch_indexing, torch_math
from tricycle.tensor import Tensor, no_grad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def positive(*shape, seed=0):
    return np.abs(normal(*shape, seed=seed)) + 0.5


def counts(*shape, seed=0):
    """Small integers as floats: values that repeat (mode's and the ties' cases)."""
    return np.random.default_rng(seed).integers(0, 3, size=shape).astype(np.float64)


def with_nan(*shape, seed=0):
    a = normal(*shape, seed=seed)
    a[0, 1] = a[1, 0] = a[1, 2] = NAN
    return a


def both(*arrays):
    """The arrays as tricycle and torch leaves that require gradients (float64)."""
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


def ids(values):
    return tc.tensor(values), torch.tensor(values)


I_ADD, I_COPY, MASK = ids([2, 0, 2]), ids([2, 0]), ids([[True, False, True, True]] * 3)
Q = (tc.tensor([0.0, 0.3, 0.5, 0.9, 1.0], dtype=tc.float64),
     torch.tensor([0.0, 0.3, 0.5, 0.9, 1.0], dtype=torch.float64))  # fmt: skip


def same(call):
    """A call that reads the same for a tricycle and a torch tensor."""
    return call, call


def quantiles(name, interpolation, dim=None, keepdim=False, vector=True, nan=False):
    q = 0.3 if not vector else None
    return (
        f"{name} {interpolation} dim={dim} keepdim={keepdim}{' q' if vector else ''}",
        lambda a: getattr(a, name)(Q[0] if vector else q, dim, keepdim,
                                   interpolation=interpolation),
        lambda a: getattr(a, name)(Q[1] if vector else q, dim, keepdim,
                                   interpolation=interpolation),
        [with_nan(3, 4) if nan else normal(3, 4)],
    )  # fmt: skip


# (name, tricycle call, torch call, inputs): values and gradients of every input
DIFFERENTIABLE = [
    ("add alpha", *same(lambda a, b: a.add(b, alpha=2.5)), [normal(3, 4), normal(4, seed=1)]),
    ("add number", *same(lambda a: a.add(2, alpha=-1)), [normal(3, 4)]),
    ("sub alpha", *same(lambda a, b: a.sub(b, alpha=0.5)), [normal(3, 4), normal(3, 1, seed=1)]),
    ("subtract", *same(lambda a, b: a.subtract(b)), [normal(3, 4), normal(3, 4, seed=1)]),
    ("mul", *same(lambda a, b: a.mul(b)), [normal(3, 4), normal(4, seed=1)]),
    ("multiply", *same(lambda a: a.multiply(3.0)), [normal(3, 4)]),
    ("div", *same(lambda a, b: a.div(b)), [normal(3, 4), positive(4, seed=1)]),
    ("div trunc", *same(lambda a, b: a.div(b, rounding_mode="trunc") + a * b),
     [normal(3, 4) * 3, positive(4, seed=1)]),
    ("div floor", *same(lambda a, b: a.div(b, rounding_mode="floor") * 1 + b),
     [normal(3, 4) * 3, -positive(3, 1, seed=1)]),
    ("divide", *same(lambda a: a.divide(0.7)), [normal(3, 4)]),
    ("tc.add", lambda a, b: tc.add(a, b, alpha=2), lambda a, b: torch.add(a, b, alpha=2),
     [normal(3, 4), normal(4, seed=1)]),
    ("tc.sub", lambda a, b: tc.sub(a, b), lambda a, b: torch.sub(a, b),
     [normal(3, 4), normal(4, seed=1)]),
    ("tc.mul", lambda a, b: tc.multiply(a, b), lambda a, b: torch.multiply(a, b),
     [normal(3, 4), normal(3, 4, seed=1)]),
    ("tc.div floor", lambda a, b: tc.div(a, b, rounding_mode="floor") + a,
     lambda a, b: torch.div(a, b, rounding_mode="floor") + a, [normal(3, 4) * 3, positive(4)]),
    ("tc.true_divide", lambda a, b: tc.true_divide(a, b), lambda a, b: torch.true_divide(a, b),
     [normal(3, 4), positive(4, seed=1)]),
    ("absolute", *same(lambda a: a.absolute()), [normal(3, 4)]),
    ("tc.absolute", lambda a: tc.absolute(a), lambda a: torch.absolute(a), [normal(3, 4)]),
    ("log1p", *same(lambda a: a.log1p()), [positive(3, 4) - 0.9]),
    ("log1p tiny", *same(lambda a: a.log1p()), [normal(3, 4) * 1e-12]),
    ("tc.log1p", lambda a: tc.log1p(a), lambda a: torch.log1p(a), [positive(3, 4)]),
    ("log2", *same(lambda a: a.log2()), [positive(3, 4)]),
    ("tc.log10", lambda a: tc.log10(a), lambda a: torch.log10(a), [positive(3, 4)]),
    ("fmod", *same(lambda a, b: a.fmod(b)), [normal(3, 4) * 4, normal(4, seed=1) + 3]),
    ("fmod negative divisor", *same(lambda a, b: a.fmod(b)),
     [normal(3, 4) * 4, -positive(3, 1, seed=1)]),
    ("fmod number", *same(lambda a: a.fmod(-1.5)), [normal(3, 4) * 4]),
    ("remainder", *same(lambda a, b: a.remainder(b)), [normal(3, 4) * 4, normal(4, seed=1) + 3]),
    ("remainder negative", *same(lambda a, b: a.remainder(b)),
     [normal(3, 4) * 4, -positive(3, 1, seed=1)]),
    ("tc.fmod", lambda a, b: tc.fmod(a, b), lambda a, b: torch.fmod(a, b),
     [normal(2, 3) * 4, positive(2, 3, seed=1)]),
    ("tc.remainder number", lambda a: tc.remainder(a, 0.8), lambda a: torch.remainder(a, 0.8),
     [normal(2, 3) * 4]),
    ("nan_to_num", *same(lambda a: a.nan_to_num()),
     [np.array([[1.0, NAN, INF], [-INF, -2.0, 0.5]])]),
    ("nan_to_num values", *same(lambda a: a.nan_to_num(1.0, 2.0, neginf=-3.0)),
     [np.array([[1.0, NAN, INF], [-INF, -2.0, 0.5]])]),
    ("tc.nan_to_num", lambda a: tc.nan_to_num(a, posinf=9.0),
     lambda a: torch.nan_to_num(a, posinf=9.0), [np.array([1.0, NAN, INF, -INF])]),
    ("nansum", *same(lambda a: a.nansum()), [with_nan(3, 4)]),
    ("nansum dim keepdim", *same(lambda a: a.nansum(1, keepdim=True)), [with_nan(3, 4)]),
    ("tc.nansum dims", lambda a: tc.nansum(a, (0, 2)), lambda a: torch.nansum(a, (0, 2)),
     [with_nan(3, 4, 2)]),
    ("nanmean", *same(lambda a: a.nanmean()), [with_nan(3, 4)]),
    ("tc.nanmean dim", lambda a: tc.nanmean(a, 0), lambda a: torch.nanmean(a, 0),
     [with_nan(3, 4)]),
    ("median", *same(lambda a: a.median()), [normal(3, 4)]),
    ("median ties", *same(lambda a: a.median()), [np.array([[1.0, 2.0], [2.0, 5.0]])]),
    ("median NaN", *same(lambda a: a.median() * 1), [with_nan(3, 4)]),
    ("median dim", *same(lambda a: a.median(1).values), [normal(3, 4)]),
    ("median dim 0 keepdim", *same(lambda a: a.median(0, keepdim=True)[0]), [normal(5, 3)]),
    ("tc.median dim", lambda a: tc.median(a, -1)[0], lambda a: torch.median(a, -1)[0],
     [normal(2, 3, 4)]),
    ("nanmedian", *same(lambda a: a.nanmedian()), [with_nan(3, 4)]),
    ("nanmedian dim", *same(lambda a: a.nanmedian(1).values), [with_nan(3, 4)]),
    ("tc.nanmedian", lambda a: tc.nanmedian(a), lambda a: torch.nanmedian(a), [with_nan(4, 3)]),
    ("mode", *same(lambda a: a.mode().values), [counts(3, 6)]),
    ("mode dim 0 keepdim", *same(lambda a: a.mode(0, True).values), [counts(5, 4, seed=2)]),
    ("tc.mode", lambda a: tc.mode(a, 1)[0], lambda a: torch.mode(a, 1)[0], [counts(2, 5, 3)]),
    ("kthvalue", *same(lambda a: a.kthvalue(2).values), [normal(3, 4)]),
    ("kthvalue dim 0 keepdim", *same(lambda a: a.kthvalue(3, 0, True).values), [normal(4, 3)]),
    ("tc.kthvalue", lambda a: tc.kthvalue(a, 1)[0], lambda a: torch.kthvalue(a, 1)[0],
     [normal(3, 4)]),
    quantiles("quantile", "linear"),
    quantiles("quantile", "linear", vector=False),
    quantiles("quantile", "linear", 1, True),
    quantiles("quantile", "lower", 0),
    quantiles("quantile", "higher", -1, vector=False),
    quantiles("quantile", "midpoint", None, True),
    quantiles("quantile", "nearest", 1),
    quantiles("quantile", "linear", 1, nan=True),
    quantiles("nanquantile", "linear", 1, nan=True),
    quantiles("nanquantile", "midpoint", None, nan=True),
    quantiles("nanquantile", "nearest", 0, True, nan=True),
    ("tc.quantile", lambda a: tc.quantile(a, 0.25, 0), lambda a: torch.quantile(a, 0.25, 0),
     [normal(5, 2)]),
    ("tc.nanquantile", lambda a: tc.nanquantile(a, Q[0]), lambda a: torch.nanquantile(a, Q[1]),
     [with_nan(3, 4)]),
    ("mm", *same(lambda a, b: a.mm(b)), [normal(3, 4), normal(4, 5, seed=1)]),
    ("tc.mm", lambda a, b: tc.mm(a, b.T), lambda a, b: torch.mm(a, b.T),  # a transposed view
     [normal(3, 4), normal(5, 4, seed=1)]),
    ("mv", *same(lambda a, v: a.mv(v)), [normal(3, 4), normal(4, seed=1)]),
    ("tc.mv", lambda a, v: tc.mv(a, v), lambda a, v: torch.mv(a, v),
     [normal(3, 4), normal(4, seed=1)]),
    ("dot", *same(lambda a, b: a.dot(b)), [normal(5), normal(5, seed=1)]),
    ("tc.dot", lambda a, b: tc.dot(a, b), lambda a, b: torch.dot(a, b),
     [normal(4), normal(4, seed=1)]),
    ("addmm", *same(lambda c, a, b: c.addmm(a, b)), [normal(3, 5), normal(3, 4), normal(4, 5)]),
    ("addmm beta alpha bias", *same(lambda c, a, b: c.addmm(a, b, beta=0.5, alpha=-2)),
     [normal(5), normal(3, 4), normal(4, 5)]),
    ("tc.addmm beta 0", lambda c, a, b: tc.addmm(c, a, b, beta=0),
     lambda c, a, b: torch.addmm(c, a, b, beta=0), [np.full((3, 1), NAN), normal(3, 4),
                                                    normal(4, 5)]),
    ("outer", *same(lambda a, b: a.outer(b)), [normal(3), normal(4, seed=1)]),
    ("select", *same(lambda a: a.select(1, -1)), [normal(3, 4, 2)]),
    ("tc.select", lambda a: tc.select(a, 0, 2), lambda a: torch.select(a, 0, 2), [normal(3, 4)]),
    ("unflatten", *same(lambda a: a.unflatten(1, (2, -1))), [normal(3, 6)]),
    ("tc.unflatten", lambda a: tc.unflatten(a, -1, (3, 1, 2)),
     lambda a: torch.unflatten(a, -1, (3, 1, 2)), [normal(3, 6)]),
    ("reshape_as", *same(lambda a, b: a.reshape_as(b) * b), [normal(3, 4), normal(2, 6)]),
    ("index_add", lambda a, s: a.index_add(1, I_ADD[0], s, alpha=2),
     lambda a, s: a.index_add(1, I_ADD[1], s, alpha=2), [normal(3, 4), normal(3, 3, seed=1)]),
    ("tc.index_add", lambda a, s: tc.index_add(a, 0, I_ADD[0], s),
     lambda a, s: torch.index_add(a, 0, I_ADD[1], s), [normal(3, 2), normal(3, 2, seed=1)]),
    ("index_copy", lambda a, s: a.index_copy(0, I_COPY[0], s),
     lambda a, s: a.index_copy(0, I_COPY[1], s), [normal(3, 4), normal(2, 4, seed=1)]),
    ("tc.index_copy", lambda a, s: tc.index_copy(a, 2, I_COPY[0], s),
     lambda a, s: torch.index_copy(a, 2, I_COPY[1], s), [normal(2, 3, 4), normal(2, 3, 2)]),
    ("index_fill", lambda a: a.index_fill(1, I_ADD[0], -1.5),
     lambda a: a.index_fill(1, I_ADD[1], -1.5), [normal(3, 4)]),
    ("tc.index_fill tensor value", lambda a, v: tc.index_fill(a, 1, I_ADD[0], v),
     lambda a, v: torch.index_fill(a, 1, I_ADD[1], v), [normal(3, 4), np.array(2.0)]),
    ("masked_scatter", lambda a, s: a.masked_scatter(MASK[0], s),
     lambda a, s: a.masked_scatter(MASK[1], s), [normal(3, 4), normal(4, 3, seed=1)]),
    ("tc.masked_scatter broadcast", lambda a, s: tc.masked_scatter(a, MASK[0][0], s),
     lambda a, s: torch.masked_scatter(a, MASK[1][0], s), [normal(3, 4), normal(9, seed=1)]),
]  # fmt: skip


@pytest.mark.filterwarnings("ignore:overflow encountered")  # nan_to_num's float max, traced
@pytest.mark.parametrize(("name", "ours", "theirs", "arrays"), DIFFERENTIABLE,
                         ids=[case[0] for case in DIFFERENTIABLE])  # fmt: skip
def test_values_and_gradients_match_torch(name, ours, theirs, arrays):
    xs, ts = both(*arrays)
    out, expected = ours(*xs), theirs(*ts)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = normal(*expected.shape, seed=9)
    out.backward(weights)
    expected.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------- finite differences
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, 99), st.data())
def test_the_new_ops_match_finite_differences(shape, seed, data):
    """Random shapes (size-1 axes among them), the divisor broadcast, and each input used
    twice (a diamond: the gradients of both paths add up)."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=shape) * 3, rng.uniform(0.5, 2, size=shape[-1:]) * rng.choice([-1, 1])
    a = np.where(np.abs(a / b - np.round(a / b)) < 1e-3, a + b / 2, a)  # off fmod's steps
    assert tc.gradcheck(lambda x: x.log1p() * x.log2() + x.log10(), np.abs(a) + 0.1)
    assert tc.gradcheck(lambda x, y: x.fmod(y) * y + x.remainder(y) * x, a, b)
    assert tc.gradcheck(lambda x: x.nan_to_num() * x, a)
    dim = data.draw(st.sampled_from(range(len(shape))))
    assert tc.gradcheck(lambda x: x.median() * x + x.median(dim).values.sum(), a)
    interpolation = data.draw(st.sampled_from(["linear", "midpoint", "lower"]))
    q = tc.tensor(rng.uniform(size=3))
    assert tc.gradcheck(lambda x: x.quantile(q, dim, interpolation=interpolation).sum() * x, a)
    expected = torch.quantile(torch.tensor(a), torch.tensor(q.numpy()), dim, True)
    np.testing.assert_allclose(tc.Tensor(a).quantile(q, dim, True).numpy(), expected.numpy())
    expected = torch.kthvalue(torch.tensor(a), shape[dim], dim)
    got = tc.Tensor(a).kthvalue(shape[dim], dim)
    np.testing.assert_array_equal(got.indices.numpy(), expected.indices.numpy())


# ---------------------------------------------------------------------- no gradient
@pytest.mark.parametrize(
    "call",
    [
        lambda a, b: a.div(b, rounding_mode="trunc"),
        lambda a, b: a.div(b, rounding_mode="floor"),
        lambda a, b: a.fmod(b),
        lambda a, b: a.remainder(b),
        lambda a, b: a.remainder(-3),
        lambda a, b: a.logical_and(b),
        lambda a, b: a.logical_or(b - 1),
        lambda a, b: a.logical_xor(b > 2),
        lambda a, b: a.logical_not(),
        lambda a, b: (a.abs() + 1).log2(),
        lambda a, b: a.nansum(0),
        lambda a, b: a.nan_to_num(),
        lambda a, b: a.median(0).indices,
        lambda a, b: a.mode(0).indices,
        lambda a, b: a.kthvalue(4, 1).indices,
    ],
)
def test_integer_and_boolean_results_match_torch(call):
    a = np.array([[7, -7, 0, 5], [-9, 8, 1, 5], [4, 4, -3, 5]])
    b = np.array([2, -3, 4, 3])
    out, expected = call(tc.tensor(a), tc.tensor(b)), call(torch.tensor(a), torch.tensor(b))
    assert out.numpy().dtype == expected.numpy().dtype and not out.requires_grad
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)  # log2: exact, or ulps


def test_picked_indices_are_torchs():
    """mode's index is its value's last entry; a row holding NaN has its first NaN as median
    (nanmedian: of the rest; kthvalue: NaN is the largest), as torch's."""
    a = np.array([[1.0, 2.0, 2.0, 3.0, 3.0, 0.0], [5.0, 5.0, 1.0, 1.0, 7.0, 5.0]])
    for x, t, dim in ((tc.tensor(a), torch.tensor(a), 1), (tc.tensor(a.T), torch.tensor(a.T), 0)):
        got, want = x.mode(dim), t.mode(dim)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    nans = np.array([[1.0, NAN, 3.0, NAN], [NAN, 5.0, 4.0, 0.0], [2.0, 0.0, NAN, 1.0]])
    for name, args in (("median", (1,)), ("nanmedian", (1,)), ("kthvalue", (4, 1)),
                       ("median", (0, True)), ("nanmedian", (0,))):  # fmt: skip
        got = getattr(tc.tensor(nans), name)(*args)
        want = getattr(torch.tensor(nans), name)(*args)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy(), err_msg=name)
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy(), err_msg=name)
    all_nan = tc.tensor([[NAN, NAN, NAN]]).nanmedian(1)  # torch's index of a NaN varies
    assert np.isnan(all_nan.values.item()) and 0 <= all_nan.indices.item() < 3
    assert type(tc.tensor(a).median(1)).__name__ == "Median"
    assert tc.tensor(a).mode()._fields == ("values", "indices")


def test_float32_stays_float32_and_integers_become_float32_as_torchs():
    x = tc.tensor([[1.0, 2.0, 4.0]])
    for out in (x.quantile(0.3), x.nanquantile(tc.tensor([0.5])), x.log1p(), x.fmod(0.3),
                x.median(), x.nanmean(), x.div(3, rounding_mode="floor")):  # fmt: skip
        assert out.dtype == np.float32
    assert tc.tensor([1, 8]).log2().dtype == np.float32
    np.testing.assert_array_equal(tc.tensor([1, 8]).log2().numpy(), [0, 3])
    assert tc.tensor([3, 4]).nansum().item() == 7 and tc.tensor([3, 4]).nansum().dtype == np.int64
    assert tc.nansum(tc.tensor([1.0, NAN]), dtype=tc.float64).dtype == np.float64


# ---------------------------------------------------------------------- in place
@pytest.mark.parametrize(
    "call",
    [
        lambda x, T: x.index_add_(1, T.tensor([2, 0, 2]), T.ones(3, 3, dtype=T.float64), alpha=-2),
        lambda x, T: x.index_copy_(0, T.tensor([1]), T.full((1, 4), 5.0, dtype=T.float64)),
        lambda x, T: x.index_fill_(1, T.tensor([0, 3]), 9.0),
        lambda x, T: x.masked_scatter_(x > 0, T.arange(12.0, dtype=T.float64)),
        lambda x, T: x.fill_diagonal_(7.0),
        lambda x, T: x.div_(0.3, rounding_mode="floor"),
        lambda x, T: x.div_(0.3),
        lambda x, T: x.fmod_(0.4),
        lambda x, T: x.remainder_(-0.4),
        lambda x, T: x.abs_().log1p_().log2_(),
        lambda x, T: x.abs_().log10_(),
        lambda x, T: x.absolute_(),
        lambda x, T: x.copy_(T.tensor([NAN, INF, -INF, 1.0])).nan_to_num_(posinf=3.0),
        lambda x, T: x.logical_and_(x > 0).logical_or_(x).logical_xor_(x).logical_not_(),
    ],
)
def test_in_place_forms_write_into_the_tensor_as_torchs(call):
    values = normal(3, 4)
    ours, theirs = Tensor(values.copy(), requires_grad=False), torch.tensor(values)
    array = ours.array
    assert call(ours, tc) is ours
    call(theirs, torch)
    assert ours.array is array  # written into, as torch's
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)


@pytest.mark.parametrize(("shape", "wrap"), [((3, 3), False), ((7, 3), True), ((7, 3), False),
                                             ((3, 7), True), ((2, 2, 2), False)])  # fmt: skip
def test_fill_diagonal_matches_torch(shape, wrap):
    ours, theirs = tc.zeros(*shape), torch.zeros(*shape)
    ours.fill_diagonal_(1.5, wrap)
    theirs.fill_diagonal_(1.5, wrap)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_in_place_forms_follow_the_rule_for_a_parameter():
    w = tc.ones(3, 4, requires_grad=True)
    for write in (lambda t: t.index_add_(0, tc.tensor([0]), tc.ones(1, 4)),
                  lambda t: t.fill_diagonal_(0.0), lambda t: t.fmod_(2.0), lambda t: t.random_(5),
                  lambda t: t.masked_scatter_(t > 0, tc.zeros(12))):  # fmt: skip
        with pytest.raises(RuntimeError, match="cannot write in place into this tensor"):
            write(w)
        y = w * 1
        with no_grad(), pytest.raises(RuntimeError, match="made by an op in a graph"):
            write(y)  # under no_grad: its backward needs its values (outside, it is rebased)
    with no_grad():
        w.index_fill_(1, tc.tensor([0]), 2.0).fill_diagonal_(0.0)
    np.testing.assert_array_equal(w.numpy()[:, 0], [0, 2, 2])
    (w * 2).sum().backward()  # still a parameter
    np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0))


# ---------------------------------------------------------------------- draws and the rest
def test_random_and_exponential_fill_by_their_distributions_and_repeat_under_a_seed():
    tc.manual_seed(0)
    x = tc.zeros(20000)
    assert x.random_(3, 7) is x and set(np.unique(x.numpy())) == {3.0, 4.0, 5.0, 6.0}
    tc.manual_seed(0)
    assert tc.equal(tc.zeros(20000).random_(3, 7), x)
    assert set(np.unique(tc.zeros(1000, dtype=tc.long).random_(4).numpy())) == {0, 1, 2, 3}
    assert set(np.unique(tc.zeros(1000, dtype=tc.bool).random_().numpy())) == {False, True}
    drawn = tc.zeros(5000, dtype=tc.float32).random_().numpy()
    assert drawn.min() >= 0 and drawn.max() <= 2**24 and drawn.max() > 2**23  # torch's range
    assert tc.zeros(100, dtype=np.uint8).random_().numpy().max() > 200
    assert tc.zeros(100, dtype=tc.long).random_().numpy().max() > 2**60
    e = tc.zeros(100000, dtype=tc.float64).exponential_(4.0)
    assert abs(e.numpy().mean() - 0.25) < 0.005 and e.numpy().min() >= 0
    g, again = tc.Generator().manual_seed(3), tc.Generator().manual_seed(3)
    assert tc.equal(tc.zeros(9).random_(10, generator=g), tc.zeros(9).random_(10, generator=again))


def test_the_small_methods_are_torchs():
    a = normal(3, 4)
    x, t = tc.tensor(a), torch.tensor(a)
    assert x.is_floating_point() and not tc.tensor([1]).is_floating_point()
    assert x.is_contiguous() and not x.T.is_contiguous() and not t.T.is_contiguous()
    assert x.ndimension() == t.ndimension() == 2
    assert tc.tensor([1.5, 200.0]).byte().dtype == np.uint8
    assert tc.tensor([-3]).char().dtype == np.int8
    empty = x.new_empty(2, 5)
    assert empty.shape == (2, 5) and empty.dtype == x.dtype and not empty.requires_grad
    assert x.equal(tc.tensor(a)) and not x.equal(x + 1) and x.allclose(x + 1e-9)
    assert x.allclose(x + 1e-3, atol=1e-2) and not x.allclose(x + 1e-3)
    y = (tc.Tensor(a, requires_grad=True) * 2).retain_grad()
    assert y.detach_() is y and y.is_leaf and not y.requires_grad
    assert x.subtract is not None and x.multiply(2).close_to(x * 2)


ALIASES = {"subtract": "sub", "multiply": "mul", "divide": "div"}  # torch's other names


def test_the_functions_call_the_methods_and_are_tricycles():
    for module, names in (
        (torch_math, "add sub subtract mul multiply div divide true_divide absolute log1p log2 "
         "log10 fmod remainder logical_and logical_or logical_xor logical_not nan_to_num nansum "
         "nanmean median nanmedian mode kthvalue quantile nanquantile mm mv dot addmm"),
        (torch_indexing, "select index_add index_copy index_fill masked_scatter"),
        (torch_functions, "unflatten"),
    ):  # fmt: skip
        for name in names.split():
            function = getattr(tc, name)  # complex tensors' wrapper hands real ones on to it
            assert getattr(function, "__wrapped__", function) is getattr(module, name), name
            assert name in tc.__all__ and name in dir(tc), name
            assert getattr(tc, name).__name__ == ALIASES.get(name, name), name
    x = tc.tensor([[1.0, -2.0]])
    assert tc.logical_not(x).dtype == np.bool_ and x.fmod.__name__ == "fmod"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: tc.add(x, x, out=x), TypeError, "add: out= is not supported"),
        (lambda x: tc.fmod([1.0], 2.0), TypeError, "fmod: input must be a Tensor"),
        (lambda x: x.add(x, alpha="2"), TypeError, "Tensor.add: alpha must be a number"),
        (lambda x: x.div(2, rounding_mode="round"), ValueError, "Tensor.div: rounding_mode"),
        (lambda x: tc.tensor([3]).div(0, rounding_mode="trunc"), ZeroDivisionError, "div: integ"),
        (lambda x: tc.tensor([3]).remainder(tc.tensor([0])), ZeroDivisionError, "remainder"),
        (lambda x: x.fmod(tc.ones(2)), ValueError, "fmod: shapes"),
        (lambda x: x.nan_to_num(nan=None), TypeError, "Tensor.nan_to_num: nan must be"),
        (lambda x: tc.tensor([1, 2]).nanmean(), TypeError, "Tensor.nanmean: dtype must be"),
        (lambda x: x.median(2), ValueError, "Tensor.median: dim must be"),
        (lambda x: tc.zeros(0).median(), ValueError, "median of an empty tensor"),
        (lambda x: tc.zeros(2, 0).mode(1), ValueError, "Tensor.mode: cannot reduce the empty"),
        (lambda x: x.kthvalue(4, 1), ValueError, r"Tensor.kthvalue: k must be at most 3"),
        (lambda x: x.kthvalue(0), ValueError, r"Tensor.kthvalue: k must be an integer >= 1"),
        (lambda x: x.quantile(1.5), ValueError, r"Tensor.quantile: q must be in \[0, 1\]"),
        (lambda x: x.quantile(tc.ones(2, 2)), TypeError, "Tensor.quantile: q must be"),
        (lambda x: x.quantile(0.5, interpolation="cubic"), ValueError, "interpolation must"),
        (lambda x: tc.tensor([1, 2]).quantile(0.5), TypeError, "Tensor.quantile: input's dtype"),
        (lambda x: x.mm(tc.ones(2, 4)), ValueError, "Tensor.mm: the shapes of input and mat2"),
        (lambda x: x.mm(tc.ones(3, 4, 4)), ValueError, "Tensor.mm: the shapes of input and mat2"),
        (lambda x: x.mv(tc.ones(2)), ValueError, "Tensor.mv: the shapes of input and vec"),
        (lambda x: x[0].dot(tc.ones(2)), ValueError, "Tensor.dot: the shapes of input and other"),
        (lambda x: tc.dot(x, x), ValueError, "Tensor.dot: the shapes of input and other"),
        (lambda x: x.addmm(tc.ones(3, 2), tc.ones(2, 5)), ValueError, "Tensor.addmm: input's"),
        (lambda x: x.addmm(tc.ones(3, 2), tc.ones(3, 5)), ValueError, "the shapes of mat1"),
        (lambda x: x.select(1, 3), IndexError, "Tensor.select: index 3 is out of range"),
        (lambda x: x.unflatten(1, (2, 2)), ValueError, "Tensor.unflatten: sizes must be"),
        (lambda x: x.unflatten(0, 3), ValueError, "Tensor.unflatten: sizes must be"),
        (lambda x: x.index_add(0, tc.tensor([0]), tc.ones(1, 2)), ValueError, "source's shape"),
        (lambda x: x.index_copy(0, tc.tensor([[0]]), tc.ones(1, 3)), ValueError, "1-D"),
        (lambda x: x.index_add(0, tc.tensor([3]), tc.ones(1, 3)), IndexError, "index_add: index"),
        (lambda x: x.index_fill(0, tc.tensor([0]), tc.ones(2)), TypeError, "index_fill: value"),
        (lambda x: x.masked_scatter(x > 0, tc.ones(2)), ValueError, "masked_scatter: the mask"),
        (lambda x: x.masked_scatter(tc.ones(2), x), TypeError, "masked_scatter: mask's dtype"),
        (lambda x: x.masked_scatter(x[:2] > 0, x), ValueError, "masked_scatter: mask's shape"),
        (lambda x: tc.zeros(2, 3, 4).fill_diagonal_(1.0), ValueError, "fill_diagonal_: input's"),
        (lambda x: x.random_(5, 5), ValueError, "Tensor.random_: to must be an integer >= 6"),
        (lambda x: tc.zeros(2, dtype=np.uint8).random_(300), ValueError, "to must be at most"),
        (lambda x: x.exponential_(0.0), ValueError, "Tensor.exponential_: lambd must be"),
    ],
)
def test_bad_arguments_are_refused_naming_the_method(call, error, message):
    x = tc.tensor([[0.5, 2.0, 1.0], [1.0, 0.0, 3.0], [4.0, 1.0, 0.0]])
    with pytest.raises(error, match=message):
        call(x)
