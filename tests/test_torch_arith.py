"""torch's remaining elementwise functions at the top level and as Tensor methods
(``tricycle.torch_arith``): the inverse hyperbolic functions (values and gradients against
torch and finite differences, NaN outside the domain, integers to float32), ``gcd``/``lcm``
(integers, floats refused), ``floor_divide``, ``reciprocal``, ``rsub``, ``positive``,
``negative``, the comparisons' long names, ``addr``/``ger`` (gradients of every input, beta 0
ignoring NaN), and ``clone``, ``detach``, ``t``, ``fill``, ``zero_``."""

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


DOMAINS = {"acosh": (1.1, 4.0), "asinh": (-4.0, 4.0), "atanh": (-0.95, 0.95)}


@pytest.mark.parametrize("name", ["acosh", "asinh", "atanh", "arccosh", "arcsinh", "arctanh"])
@pytest.mark.parametrize("method", [False, True])
def test_inverse_hyperbolic_as_torch(name, method):
    low, high = DOMAINS[name.replace("arc", "a")]
    a = np.random.default_rng(1).uniform(low, high, size=(3, 4))
    (x,), (t,) = both(a)
    ours = getattr(x, name)() if method else getattr(tc, name)(x)
    same(ours, getattr(torch, name)(t), [x], [t])


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(0, 99))
def test_inverse_hyperbolic_gradients_are_finite_differences(rows, cols, seed):
    a = np.random.default_rng(seed).uniform(0.1, 0.8, size=(rows, cols))
    check_grads(lambda x: tc.atanh(x) * tc.asinh(x) + tc.acosh(x + 1.5), a)


def test_inverse_hyperbolic_edges_as_torch():
    a = np.array([-2.0, -1.0, 0.5, 1.0, 2.0])
    for name in ("acosh", "atanh"):
        ours = getattr(tc, name)(tc.tensor(a)).numpy()
        np.testing.assert_allclose(ours, getattr(torch, name)(torch.tensor(a)).numpy(), rtol=1e-15)
    ints = tc.acosh(tc.tensor([1, 2, 3]))
    assert ints.dtype == np.float32 and torch.acosh(torch.tensor([1, 2, 3])).dtype == torch.float32
    np.testing.assert_allclose(ints.numpy(), torch.acosh(torch.tensor([1, 2, 3])).numpy())


@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_as_torch(name):
    rng = np.random.default_rng(2)
    a, b = rng.integers(-30, 30, size=(3, 4)), rng.integers(-30, 30, size=(4,))
    ours = getattr(tc, name)(tc.tensor(a), tc.tensor(b))
    np.testing.assert_array_equal(
        ours.numpy(), getattr(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
    )
    method = getattr(tc.tensor(a), name)(tc.tensor(b))
    np.testing.assert_array_equal(method.numpy(), ours.numpy())
    assert ours.dtype == np.int64 and not ours.requires_grad
    with pytest.raises(TypeError, match=f"{name}: input's dtype"):
        getattr(tc, name)(tc.tensor([1.5]), tc.tensor([2]))


def test_floor_divide_reciprocal_rsub_as_torch():
    a, b = normal(3, 4) * 5, normal(4, seed=1) + 3
    for ours, theirs in [
        (
            tc.floor_divide(tc.tensor(a), tc.tensor(b)),
            torch.floor_divide(torch.tensor(a), torch.tensor(b)),
        ),
        (tc.floor_divide(tc.tensor([7, -7]), 2), torch.floor_divide(torch.tensor([7, -7]), 2)),
        (tc.tensor(a).floor_divide(2.5), torch.tensor(a).floor_divide(2.5)),
        (tc.reciprocal(tc.tensor([2, 4])), torch.reciprocal(torch.tensor([2, 4]))),
        (tc.tensor(a).true_divide(tc.tensor(b)), torch.tensor(a).true_divide(torch.tensor(b))),
    ]:
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    (x, y), (t, u) = both(a, np.broadcast_to(b, (3, 4)).copy())
    same(tc.rsub(x, y, alpha=2.5), torch.rsub(t, u, alpha=2.5), [x, y], [t, u])
    (x,), (t,) = both(b)
    same(tc.reciprocal(x), torch.reciprocal(t), [x], [t])


def test_positive_negative_and_the_comparisons_long_names():
    a, b = np.round(normal(3, 4)), np.round(normal(4, seed=1))
    for name in ["greater", "greater_equal", "less", "less_equal", "not_equal"]:
        ours, theirs = (
            getattr(tc, name)(tc.tensor(a), tc.tensor(b)),
            getattr(torch, name)(torch.tensor(a), torch.tensor(b)),
        )
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        np.testing.assert_array_equal(
            getattr(tc.tensor(a), name)(tc.tensor(b)).numpy(), theirs.numpy()
        )
    (x,), (t,) = both(a)
    same(tc.negative(x) * 3, torch.negative(t) * 3, [x], [t])
    assert tc.positive(x) is x
    with pytest.raises(TypeError, match="positive"):
        tc.positive(tc.tensor([True]))


def test_addr_and_ger_as_torch():
    (m, v, w), (tm, tv, tw) = both(normal(3, 2), normal(3, seed=1), normal(2, seed=2))
    same(
        tc.addr(m, v, w, beta=0.5, alpha=2.0),
        torch.addr(tm, tv, tw, beta=0.5, alpha=2.0),
        [m, v, w],
        [tm, tv, tw],
    )
    (v, w), (tv, tw) = both(normal(3, seed=1), normal(2, seed=2))
    same(v.ger(w), tv.ger(tw), [v, w], [tv, tw])
    nan = np.full((3, 2), np.nan)
    ours = tc.addr(tc.tensor(nan), tc.tensor([1.0, 2, 3]), tc.tensor([1.0, 2]), beta=0)
    theirs = torch.addr(
        torch.tensor(nan), torch.tensor([1.0, 2, 3]), torch.tensor([1.0, 2]), beta=0
    )
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(ValueError, match="addr: vec1 and vec2"):
        tc.addr(tc.ones((3, 2)), tc.ones((3, 1)), tc.ones(2))


def test_clone_detach_t_fill_zero_():
    (x,), (t,) = both(normal(3, 2))
    same(tc.t(tc.clone(x)) * 2, torch.t(torch.clone(t)) * 2, [x], [t])
    assert not tc.detach(x).requires_grad
    np.testing.assert_array_equal(tc.fill(x, 2.5).numpy(), torch.fill(t, 2.5).detach().numpy())
    (v,), (tv,) = both(np.array(1.5))
    same(
        tc.fill(tc.ones((2, 3), dtype=np.float64), v),
        torch.fill(torch.ones(2, 3, dtype=torch.float64), tv),
        [v],
        [tv],
    )
    z = tc.ones(3)
    assert tc.zero_(z) is z and z.numpy().tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="fill"):
        tc.fill(x, tc.ones(2))
