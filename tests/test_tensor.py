"""Tensor and the backward pass: construction, dtypes, graph shapes, accumulation, no_grad."""

import pickle

import numpy as np
import pytest
from helpers import check_grads

from tricycle import ops, unary
from tricycle.tensor import Tensor, grad_enabled, no_grad, to_tensor


def leaf(values, dtype=np.float64):
    return Tensor(np.array(values, dtype=dtype))


# ------------------------------------------------------------------ construction and dtypes
def test_to_tensor_defaults_to_float32_and_requires_grad():
    t = to_tensor([1, 2, 3])
    assert t.dtype == np.float32
    assert t.requires_grad is True
    assert t.args is None and t.back_fns is None and t.grad is None
    np.testing.assert_array_equal(t.array, [1.0, 2.0, 3.0])


def test_integer_tensors_do_not_require_grad():
    t = to_tensor([1, 2], dtype=int)
    assert np.issubdtype(t.dtype, np.integer)
    assert t.requires_grad is False
    assert Tensor(np.array([1, 2])).requires_grad is False
    assert to_tensor([True, False]).dtype == bool
    assert to_tensor([True, False]).requires_grad is False


def test_integer_tensor_cannot_require_grad():
    with pytest.raises(TypeError, match="only floating tensors can require gradients"):
        Tensor(np.array([1, 2]), requires_grad=True)
    with pytest.raises(TypeError, match="int"):
        to_tensor([1, 2], dtype=int, requires_grad=True)


def test_backward_of_integer_or_bool_tensor_raises():
    with pytest.raises(TypeError, match="backward: cannot differentiate a tensor of dtype int"):
        to_tensor([1, 2], dtype=int).backward()
    x = leaf([1.0, 2.0])
    with pytest.raises(TypeError, match="dtype bool"):
        (x < 2).backward()


def test_creating_a_tensor_from_an_array_of_the_right_dtype_copies_nothing():
    a = np.ones((3, 4), dtype=np.float32)
    assert Tensor(a).array is a
    assert to_tensor(a).array is a
    assert Tensor(a, dtype=np.float32).array is a
    assert to_tensor(Tensor(a)).array is a
    b = np.ones(3, dtype=np.float64)
    assert Tensor(b).array is b
    assert to_tensor(b).dtype == np.float32  # to_tensor's default dtype is float32
    assert to_tensor(b, dtype=np.float64).array is b


def test_repr_and_name():
    assert repr(to_tensor([1, 2, 3])) == "Tensor([1. 2. 3.])"
    assert repr(to_tensor(2)) == "Tensor(2.0)"
    assert repr(to_tensor([1, 2], name="w")) == "Tensor([1. 2.], name=w)"
    assert str(to_tensor([1, 2]) + to_tensor([3, 4])) == "Tensor([4. 6.], name=badd)"


def test_properties_and_conversions():
    t = to_tensor(np.arange(6).reshape(2, 3))
    assert t.shape == (2, 3) and t.ndim == 2 and t.size == 6 and len(t) == 2
    assert t.xp is np and t.device == "cpu" and t.on_gpu is False
    assert float(to_tensor(2.5)) == 2.5 and int(to_tensor(3)) == 3
    assert to_tensor(1.5).item() == 1.5
    assert f"{to_tensor(1.23456):.2f}" == "1.23"
    np.testing.assert_array_equal(np.asarray(t), t.array)
    assert t.numpy() is t.array
    assert t.to_batched().is_batched is True
    assert t.from_batched().is_batched is False


def test_close_to_compares_numbers():
    a = to_tensor([1.0, 2.0])
    assert a.close_to([1.0, 2.0]) is True
    assert a.close_to(to_tensor([1.0, 2.1])) is False
    assert a.close_to(np.array([1.0, 2.00001])) is True


def test_bool_of_a_multi_element_tensor_raises():
    with pytest.raises(ValueError, match=r"bool\(Tensor\) of shape \(2,\) is ambiguous"):
        bool(to_tensor([1, 2]) < 3)
    assert bool(to_tensor(1.0) < 3) is True


def test_tensor_is_hashable_by_identity():
    a, b = to_tensor([1.0]), to_tensor([1.0])
    assert len({a, b}) == 2
    assert {a: 1}[a] == 1


def test_pickle_keeps_data_and_drops_graph():
    x = leaf([1.0, 2.0])
    y = (x * 2).sum()
    y.backward(retain_graph=True)
    copy = pickle.loads(pickle.dumps(x * 3))
    np.testing.assert_array_equal(copy.array, [3.0, 6.0])
    assert copy.args is None and copy.grad is None
    assert copy.requires_grad is True


def test_detach_shares_memory_without_graph():
    x = leaf([1.0, 2.0])
    y = (x * 2).detach()
    assert y.args is None and y.requires_grad is False
    z = x.detach()
    assert z.array is x.array


# ------------------------------------------------------------------ graph shapes
def test_diamond_add_gives_separate_gradient_arrays():
    x, y = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    z = (x + y) + x
    z.backward()
    np.testing.assert_array_equal(y.grad.array, [1.0, 1.0])
    np.testing.assert_array_equal(x.grad.array, [2.0, 2.0])
    assert x.grad.array is not y.grad.array
    assert not np.shares_memory(x.grad.array, y.grad.array)


@pytest.mark.parametrize("order", ["direct first", "direct last"])
def test_input_reached_directly_and_through_another_input(order):
    """x is an arg of the output and of another arg: both paths must reach x before it is
    finished (a topological order that marks nodes on push gets this wrong)."""
    x = leaf([1.0, 2.0])
    h = x * 2
    z = x + h if order == "direct first" else h + x
    z.backward()
    np.testing.assert_array_equal(x.grad.array, [3.0, 3.0])

    x = leaf([1.0, 2.0])
    h = x * 1
    k = h * 2
    z = h + k if order == "direct first" else k + h
    z.backward()
    np.testing.assert_array_equal(x.grad.array, [3.0, 3.0])


def test_tensor_used_many_times():
    rng = np.random.default_rng(0)
    x0 = rng.normal(size=(3, 2))

    def f(x):
        total = x
        for k in range(1, 20):
            total = total + x * k  # x feeds 20 nodes
        return total * x

    check_grads(f, x0)
    x = Tensor(x0.copy())
    (x + x + x + x).sum().backward()
    np.testing.assert_array_equal(x.grad.array, np.full((3, 2), 4.0))


def test_two_leaves_fed_the_same_gradient_do_not_share_memory():
    x, y = leaf(np.zeros((2, 3))), leaf(np.zeros(6))
    (x.reshape(-1) + y).backward()  # x gets a view of the gradient y gets
    assert not np.shares_memory(x.grad.array, y.grad.array)
    x.grad.array *= 2  # an optimiser may scale a gradient in place
    np.testing.assert_array_equal(y.grad.array, np.ones(6))


def test_gradient_of_sum_is_writeable():
    x = leaf(np.zeros((2, 3)))
    x.sum().backward()
    x.grad.array[0, 0] = 5.0  # broadcast views are read-only; the leaf owns its gradient
    np.testing.assert_array_equal(x.grad.array.sum(), 10.0)


def test_deep_chain_has_no_recursion_limit():
    x = leaf([1.0])
    y = x
    for _ in range(10_000):
        y = y * 1.0 + 0.0
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.array, [1.0])
    del y  # freeing a 20,000-node graph must not recurse either


def test_deep_chain_of_tensor_tensor_ops():
    x, w = leaf([2.0]), leaf([1.0])
    y = x
    for _ in range(10_000):
        y = y * w
    y.backward()
    np.testing.assert_allclose(x.grad.array, [1.0])
    np.testing.assert_allclose(w.grad.array, [20_000.0])


# ------------------------------------------------------------------ accumulation and graphs
def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.array, [2.0, 4.0, 6.0])
    assert y.args is not None
    y.backward()
    np.testing.assert_array_equal(x.grad.array, [4.0, 8.0, 12.0])


def test_backward_through_a_rebuilt_graph_accumulates():
    x = leaf([1.0, 2.0, 3.0])
    for _ in range(2):
        (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.array, [4.0, 8.0, 12.0])
    x.zero_grad()
    assert x.grad is None


def test_graph_is_freed_without_retain_graph():
    x = leaf([1.0, 2.0])
    h = x * 2
    y = (h + 1).sum()
    y.backward()
    assert len(y.args) == 0 and y.back_fns is None
    assert len(h.args) == 0 and h.back_fns is None
    assert x.args is None


def test_backward_through_a_freed_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="freed by an earlier backward"):
        y.backward()
    np.testing.assert_array_equal(x.grad.array, [2.0, 2.0])  # unchanged by the failed call


def test_retain_grad_on_an_intermediate():
    x = leaf([1.0, 2.0, 3.0])
    h = (x * 2).retain_grad()
    y = (h * h).sum()
    y.backward()
    np.testing.assert_array_equal(h.grad.array, [4.0, 8.0, 12.0])  # dy/dh = 2h
    np.testing.assert_array_equal(x.grad.array, [8.0, 16.0, 24.0])
    assert not np.shares_memory(h.grad.array, x.grad.array)
    o = leaf([1.0])
    o_sum = (o * 1).retain_grad()
    o_sum.backward()
    np.testing.assert_array_equal(o_sum.grad.array, [1.0])


def test_no_grad_builds_no_graph():
    x = leaf([1.0, 2.0])
    with no_grad():
        assert grad_enabled() is False
        y = unary.exp(x * 2 + 1).sum()
        with no_grad():
            z = x * 3
        w = x * 4  # still inside the outer block
    assert grad_enabled() is True
    for t in (y, z, w):
        assert t.args is None and t.back_fns is None and t.requires_grad is False
    np.testing.assert_allclose(y.array, np.exp([3.0, 5.0]).sum())
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()
    assert (x * 2).args is not None  # recording resumes after the block


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(ZeroDivisionError), no_grad():
        raise ZeroDivisionError
    assert grad_enabled() is True


def test_non_scalar_backward_seeds_ones():
    x = leaf(np.arange(6.0).reshape(2, 3))
    (x * 3).backward()
    np.testing.assert_array_equal(x.grad.array, np.full((2, 3), 3.0))


def test_backward_with_an_explicit_gradient():
    x = leaf([1.0, 2.0])
    (x * 3).backward(np.array([1.0, -1.0]))
    np.testing.assert_array_equal(x.grad.array, [3.0, -3.0])
    y = leaf([1.0, 2.0])
    (y * 3).backward(to_tensor([2.0, 0.0]))  # a float32 seed is cast to the output's dtype
    assert y.grad.dtype == np.float64
    np.testing.assert_array_equal(y.grad.array, [6.0, 0.0])


def test_only_inputs_that_require_grad_get_one():
    x = leaf([1.0, 2.0])
    c = Tensor(np.array([3.0, 4.0]), requires_grad=False)
    (x * c).backward()
    assert c.grad is None
    np.testing.assert_array_equal(x.grad.array, [3.0, 4.0])
    out = c * 2
    assert out.requires_grad is False and out.args is None


def test_gradient_dtype_matches_the_input_dtype():
    x = Tensor(np.ones(3, dtype=np.float32))
    y = Tensor(np.ones(3, dtype=np.float64))
    (x * y).sum().backward()
    assert x.grad.dtype == np.float32 and y.grad.dtype == np.float64


def test_grad_has_no_graph_and_backward_builds_none():
    x = leaf([1.0, 2.0])
    (x * x).sum().backward()
    assert x.grad.requires_grad is False and x.grad.args is None


def test_leaf_backward():
    x = leaf([1.0, 2.0])
    x.backward()
    np.testing.assert_array_equal(x.grad.array, [1.0, 1.0])


def test_ops_stay_stateless_when_a_layer_is_used_twice():
    """The same function applied twice before one backward, as with weight tying."""
    rng = np.random.default_rng(0)
    w0, x0 = rng.normal(size=(3, 3)), rng.normal(size=(2, 3))

    def layer(x, w):
        return unary.tanh(x @ w)

    check_grads(lambda x, w: layer(layer(x, w), w), x0, w0)


def test_masked_fill_and_where_leave_inputs_untouched():
    x0 = np.arange(4.0)
    x = Tensor(x0.copy())
    ops.masked_fill(x, np.array([True, False, True, False]), -1.0)
    ops.where(np.array([True, False, True, False]), x, x * 2)
    np.testing.assert_array_equal(x.array, x0)


def test_a_back_fn_may_return_a_tensor():
    """As in the README's fused softmax, whose backward wraps its result with to_tensor."""
    x = leaf([1.0, 2.0])
    out = Tensor(x.array * 3, args=(x,), back_fns=(lambda g: Tensor(g * 3),), name="triple")
    (out * out).sum().backward()
    np.testing.assert_array_equal(x.grad.array, [18.0, 36.0])  # d(9x^2)/dx = 18x
    assert type(x.grad.array) is np.ndarray
