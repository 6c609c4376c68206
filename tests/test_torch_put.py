"""torch's functions that read or write at indices (``tricycle.torch_put``) at the top level
and as Tensor methods: ``take``, ``put``, ``index_put`` (integer and mask indices, accumulate,
broadcast values), ``index_reduce`` (every reduction, with and without the input's own
values), ``unravel_index``, ``histogramdd`` and the methods ``unfold`` and ``sum_to_size``:
values and gradients against torch's, finite differences on random shapes (hypothesis), the
in-place forms under ``add_``'s rule, and indices out of range refused."""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle as tc

torch = pytest.importorskip("torch")


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def both(*arrays):
    ours = [tc.Tensor(a, requires_grad=True, dtype=np.float64) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True, dtype=torch.float64) for a in arrays]
    return ours, theirs


def same(ours, theirs, xs, ts, seed=9):
    """Values and the gradients of every input of a weighted sum, against torch."""
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = normal(*theirs.shape, seed=seed)
    ours.backward(weights)
    theirs.backward(torch.tensor(weights))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_take_as_torch():
    index = np.array([[0, 5, -1], [3, 3, 11]])
    (x,), (t,) = both(normal(3, 4))
    same(tc.take(x, tc.tensor(index)), torch.take(t, torch.tensor(index)), [x], [t])
    (x,), (t,) = both(normal(3, 4))
    same(x.take(tc.tensor(index)), t.take(torch.tensor(index)), [x], [t])
    with pytest.raises(IndexError, match="take"):
        tc.take(x, tc.tensor([12]))


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_as_torch(accumulate):
    rows, cols = np.array([0, 2, 1]), np.array([1, 3, 0])
    if accumulate:
        rows, cols = np.array([0, 2, 2, 0]), np.array([1, 3, 3, 1])  # repeated: they add up
    (x, v), (t, u) = both(normal(3, 4), normal(len(rows), seed=1))
    ours = tc.index_put(x, (tc.tensor(rows), tc.tensor(cols)), v, accumulate)
    theirs = torch.index_put(t, (torch.tensor(rows), torch.tensor(cols)), u, accumulate)
    same(ours, theirs, [x, v], [t, u])
    (x, v), (t, u) = both(normal(3, 4), normal(4, seed=1))  # a row index, values broadcast
    same(
        x.index_put((tc.tensor([2, 0]),), v, accumulate),
        t.index_put((torch.tensor([2, 0]),), u, accumulate),
        [x, v],
        [t, u],
    )


def test_index_put_with_a_mask_and_in_place():
    a = normal(3, 4)
    (x, v), (t, u) = both(a, np.array(0.5))
    same(
        tc.index_put(x, (tc.tensor(a > 0),), v),
        torch.index_put(t, (torch.tensor(a > 0),), u),
        [x, v],
        [t, u],
    )
    y, s = tc.tensor(a), torch.tensor(a)
    assert (
        y.index_put_(
            (tc.tensor([1]), tc.tensor([2])), tc.tensor(9.0, dtype=np.float64), accumulate=True
        )
        is y
    )
    s.index_put_(
        (torch.tensor([1]), torch.tensor([2])),
        torch.tensor(9.0, dtype=torch.float64),
        accumulate=True,
    )
    np.testing.assert_array_equal(y.numpy(), s.numpy())
    with pytest.raises(IndexError, match=r"index_put: indices\[1\]"):
        tc.index_put(x, (tc.tensor([0]), tc.tensor([4])), v)
    with pytest.raises(ValueError, match="index_put: values of shape"):
        tc.index_put(x, (tc.tensor([0, 1]),), tc.ones(3))


def test_put_as_torch():
    (x, s), (t, u) = both(normal(3, 4), normal(2, 2, seed=1))
    index = np.array([[0, 11], [-1, 5]])
    same(
        tc.put(x, tc.tensor(index), s, accumulate=True),
        torch.put(t, torch.tensor(index), u, accumulate=True),
        [x, s],
        [t, u],
    )
    (x, s), (t, u) = both(normal(3, 4), normal(3, seed=1))
    same(x.put(tc.tensor([4, 0, 7]), s), t.put(torch.tensor([4, 0, 7]), u), [x, s], [t, u])
    y, z = tc.tensor(normal(2, 2)), torch.tensor(normal(2, 2))
    y.put_(tc.tensor([3]), tc.tensor([7.0], dtype=np.float64))
    z.put_(torch.tensor([3]), torch.tensor([7.0], dtype=torch.float64))
    np.testing.assert_array_equal(y.numpy(), z.numpy())
    with pytest.raises(RuntimeError, match="put: source"):
        tc.put(x, tc.tensor([0, 1]), tc.ones(3))


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_as_torch(reduce, include_self):
    index = np.array([0, 2, 0])
    (x, s), (t, u) = both(normal(3, 4), normal(3, 3, seed=1))
    ours = tc.index_reduce(x, 1, tc.tensor(index), s, reduce, include_self=include_self)
    theirs = torch.index_reduce(t, 1, torch.tensor(index), u, reduce, include_self=include_self)
    same(ours, theirs, [x, s], [t, u])
    method = tc.tensor(normal(3, 4)).index_reduce(
        1, tc.tensor(index), tc.tensor(normal(3, 3, seed=1)), reduce, include_self=include_self
    )
    np.testing.assert_allclose(method.numpy(), theirs.detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="index_reduce: reduce"):
        tc.index_reduce(x, 1, tc.tensor(index), s, "sum")


def test_unravel_index_as_torch():
    index = np.array([[-1, 5], [0, 23]])
    ours = tc.unravel_index(tc.tensor(index), (2, 3, 4))
    theirs = torch.unravel_index(torch.tensor(index), (2, 3, 4))
    assert len(ours) == 3
    for o, t in zip(ours, theirs):
        assert o.dtype == np.int64
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    with pytest.raises(IndexError, match="unravel_index"):
        tc.unravel_index(tc.tensor([24]), (2, 3, 4))


def test_histogramdd_as_torch():
    points = normal(60, 2).astype(np.float32)
    weight = np.abs(normal(60, seed=1)).astype(np.float32)
    cases = [
        ({"bins": [3, 4], "range": [-2.0, 2.0, -1.0, 1.0]}, {}),
        ({"bins": 5, "density": True}, {}),
        ({"bins": 4, "weight": weight}, {}),
    ]
    for kwargs, _ in cases:
        w = kwargs.pop("weight", None)
        ours = tc.histogramdd(
            tc.tensor(points), **kwargs, weight=None if w is None else tc.tensor(w)
        )
        theirs = torch.histogramdd(
            torch.tensor(points), **kwargs, weight=None if w is None else torch.tensor(w)
        )
        assert ours[0].dtype == np.float32
        np.testing.assert_allclose(ours[0].numpy(), theirs[0].numpy(), rtol=1e-5)
        for e, f in zip(ours[1], theirs[1]):
            np.testing.assert_allclose(e.numpy(), f.numpy(), rtol=1e-6, atol=1e-6)
    edges = [torch.tensor([-3.0, 0.0, 3.0]), torch.tensor([-3.0, -1.0, 1.0, 3.0])]
    ours = tc.histogramdd(tc.tensor(points), [tc.tensor(e.numpy()) for e in edges])
    np.testing.assert_array_equal(
        ours[0].numpy(), torch.histogramdd(torch.tensor(points), edges)[0].numpy()
    )
    with pytest.raises(ValueError, match="histogramdd: range"):
        tc.histogramdd(tc.tensor(points), 3, range=[0.0, 1.0])


@pytest.mark.parametrize(
    "dim, size, step", [(0, 2, 1), (1, 3, 2), (-1, 1, 1), (1, 0, 3), (1, 7, 5)]
)
def test_unfold_as_torch(dim, size, step):
    (x,), (t,) = both(normal(3, 7, 2))
    same(x.unfold(dim, size, step), t.unfold(dim, size, step), [x], [t])


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.integers(1, 3))
def test_unfold_gradients_are_finite_differences(length, size, step):
    size = min(size, length)
    check_grads(lambda x: (x.unfold(0, size, step) ** 2).sum(), normal(length, 2))
    with pytest.raises(ValueError, match="Tensor.unfold: size"):
        tc.ones(length).unfold(0, length + 1, 1)


@pytest.mark.parametrize("size", [(1, 4), (3, 1), (4,), (1,), (1, 3, 4)])
def test_sum_to_size_as_torch(size):
    (x,), (t,) = both(normal(2, 3, 4))
    ours = x.sum_to_size(size) if len(size) > 1 else x.sum_to_size(*size)
    same(ours, t.sum_to_size(size), [x], [t])
    with pytest.raises(RuntimeError, match="sum_to_size"):
        x.sum_to_size(2, 4)
