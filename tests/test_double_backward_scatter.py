"""Double backward (``create_graph=True``) of ``scatter_reduce`` and ``index_put``, against
torch (float64, first and second derivatives; a third through the linear rules).

scatter_reduce's sum, mean, amax and amin backwards are linear in the gradient with fixed
coefficients (torch's: a tie's even share, a mean's 1 / count), recorded with their adjoint;
prod is rebuilt from its inputs and walked, zeros in a group included. ``index_put``'s input
gradient is the output's (accumulating) or the output's zeroed where written, its values'
the output's read there and summed to their shape (broadcast values, repeated places).
Where torch refuses (prod's second derivative with two zeros of src in one group) tricycle
gives the derivative itself, checked here by hand.
"""

import numpy as np
import pytest
from second_order_checks import (
    arrays,
    assert_first_and_second_as_torchs,
    assert_on_a_gpu_as_on_the_host,
    lib_of,
    rules_met,
)

import tricycle
from tricycle import backend, second_order_scatter

torch = pytest.importorskip("torch")

INDEX = np.array([[0, 2, 0, 1], [2, 2, 1, 0], [0, 0, 2, 2]])  # dim 0 of a (3, 4) input
REDUCTIONS = ("sum", "mean", "amax", "amin", "prod")


def _scatter_reduce(reduce, include_self, dim=0, index=INDEX):
    def fn(x, src):
        lib = lib_of(x)
        ids = lib.tensor(index, device=x.device)
        y = lib.scatter_reduce(x, dim, ids, src, reduce, include_self=include_self)
        return (y * y * y).sum() + y.sum() * src.sum()

    return fn


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_first_and_second_derivatives(monkeypatch, reduce, include_self):
    used = rules_met(monkeypatch)
    x, src = arrays((3, 4), (3, 4), low=-1.5, high=1.5, seed=len(reduce))
    if reduce in ("amax", "amin"):  # ties: shared evenly, the input's own value among them
        x, src = np.round(x), np.round(src)
    if reduce == "prod":
        src[1, 2] = 0.0  # one zero in a group
    weights = arrays((3, 4), (3, 4), low=-1, high=1, seed=1)
    assert_first_and_second_as_torchs(_scatter_reduce(reduce, include_self), [x, src], weights)
    assert second_order_scatter.KEYS["scatter_reduce[1]"] in used


@pytest.mark.parametrize("reduce", ["mean", "amax", "prod"])
def test_scatter_reduce_along_the_last_dim_with_a_shorter_index(reduce):
    index = np.array([[1, 1], [0, 2], [2, 2]])  # (3, 2) into (3, 4) along dim 1
    values = arrays((3, 4), (3, 2), low=0.5, high=1.5, seed=3)
    weights = arrays((3, 4), (3, 2), low=-1, high=1, seed=4)
    fn = _scatter_reduce(reduce, False, dim=1, index=index)
    assert_first_and_second_as_torchs(fn, values, weights)


def test_scatter_reduce_third_derivative_through_the_linear_rule():
    x0, s0 = arrays((3, 4), (3, 4), seed=5)
    found = []
    for lib in (tricycle, torch):
        x, s = (lib.tensor(v).requires_grad_(True) for v in (x0, s0))
        y = lib.scatter_reduce(x, 0, lib.tensor(INDEX), s, "mean", include_self=True)
        (gx,) = lib.autograd.grad((y**4).sum(), x, create_graph=True)
        (hx,) = lib.autograd.grad((gx * gx).sum(), s, create_graph=True)
        (third,) = lib.autograd.grad(hx.sum(), x)
        found.append([np.asarray(v.detach().numpy()) for v in (gx, hx, third)])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_scatter_reduce_prod_with_two_zeros_in_a_group_where_torch_refuses():
    """torch 2.13 raises for this second derivative; tricycle's is the derivative of
    sum(dy/dsrc) = x00 (s00 + s10) + x11 (s01 + s11), worked out by hand."""
    x = tricycle.tensor(np.array([[1.0, 2.0], [3.0, 4.0]]), requires_grad=True)
    s = tricycle.tensor(np.array([[0.0, 0.0], [0.0, 6.0]]), requires_grad=True)
    index = tricycle.tensor(np.array([[0, 1], [0, 1]]))
    y = tricycle.scatter_reduce(x, 0, index, s, "prod")
    gx, gs = tricycle.autograd.grad(y.sum(), (x, s), create_graph=True)
    np.testing.assert_array_equal(gs.array, [[0.0, 24.0], [0.0, 0.0]])
    hx, hs = tricycle.autograd.grad(gs.sum(), (x, s))
    np.testing.assert_array_equal(hx.array, [[0.0, 0.0], [0.0, 6.0]])
    np.testing.assert_array_equal(hs.array, [[1.0, 4.0], [1.0, 4.0]])


def _index_put(accumulate, rows):
    def fn(x, values):
        lib = lib_of(x)
        y = lib.index_put(x, (lib.tensor(rows, device=x.device),), values, accumulate=accumulate)
        return (y * y * y).sum() + (y.sum(0) * values.reshape(-1)[:4]).sum()

    return fn


@pytest.mark.parametrize(
    "accumulate, rows, values_shape",
    [
        (True, np.array([0, 2, 0]), (3, 4)),  # a row written twice adds up
        (True, np.array([1, 1]), (4,)),  # values broadcast over the rows written
        (False, np.array([2, 0]), (2, 4)),
        (False, np.array([1]), (1, 4)),
    ],
)
def test_index_put_first_and_second_derivatives(monkeypatch, accumulate, rows, values_shape):
    used = rules_met(monkeypatch)
    values = arrays((3, 4), values_shape, low=-1.5, high=1.5, seed=len(rows))
    weights = arrays((3, 4), values_shape, low=-1, high=1, seed=2)
    assert_first_and_second_as_torchs(_index_put(accumulate, rows), values, weights)
    keys = second_order_scatter.KEYS
    assert {keys["index_put"], keys["index_put[1]"]} <= used


def test_tensor_index_put_method_under_create_graph():
    x0, v0 = arrays((3, 4), (2, 4), seed=7)
    found = []
    for lib in (tricycle, torch):
        x, v = (lib.tensor(a).requires_grad_(True) for a in (x0, v0))
        y = x.index_put((lib.tensor(np.array([2, 2])),), v, accumulate=True)
        gx, gv = lib.autograd.grad((y.exp() * x).sum(), (x, v), create_graph=True)
        hx, hv = lib.autograd.grad((gx * gx).sum() + (gv * v).sum(), (x, v))
        found.append([np.asarray(t.detach().numpy()) for t in (gx, gv, hx, hv)])
    for a, b in zip(*found):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_every_rule_here_is_exercised(monkeypatch):
    """Each key of ``second_order_scatter`` is met by one of the cases above."""
    used = rules_met(monkeypatch)
    values, weights = arrays((3, 4), (3, 4), seed=8), arrays((3, 4), (3, 4), seed=9)
    for reduce in ("sum", "prod"):
        assert_first_and_second_as_torchs(_scatter_reduce(reduce, True), values, weights)
    rows = np.array([0, 2, 1])
    assert_first_and_second_as_torchs(_index_put(False, rows), values, weights)
    assert not {name for name, key in second_order_scatter.KEYS.items() if key not in used}


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
def test_the_rules_here_on_a_gpu_as_on_the_host():
    """The rules compute with the arrays' own module: cupy's gives numpy's derivatives."""
    values, weights = arrays((3, 4), (3, 4), seed=10), arrays((3, 4), (3, 4), seed=11)
    cases = [(r, _scatter_reduce(r, s), values, weights) for r in REDUCTIONS for s in (True, False)]
    for accumulate in (True, False):
        cases.append(("index_put", _index_put(accumulate, np.array([2, 0, 1])), values, weights))
    assert_on_a_gpu_as_on_the_host(cases)
