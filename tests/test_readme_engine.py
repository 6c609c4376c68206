"""The README's "How it works", "Automatic Differentiation" and "Einsum" examples, run as
written (the typo ``[[5,6],[7,8])`` fixed, ``input``/``inputs`` made one name), with the
documented outputs checked. Examples that need other modules skip until those exist."""

import numpy as np
import pytest

from tricycle.einsum import Einsum
from tricycle.tensor import to_tensor


def printed(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


# ------------------------------------------------------------------ How it works
def test_a_tensor_wraps_an_array(capsys):
    tensor = to_tensor([1, 2, 3])
    print(tensor)  # Output: Tensor([1. 2. 3.])
    assert printed(capsys) == ["Tensor([1. 2. 3.])"]


def test_a_lot_of_things_with_a_tensor(capsys):
    a = to_tensor([1, 2, 3])
    b = to_tensor([4, 5, 6])

    # addition
    print(a + b)  # Output: Tensor([5. 7. 9.], name=badd)

    # comparison
    print(a < b)  # Output: Tensor([ True  True  True])

    assert printed(capsys) == ["Tensor([5. 7. 9.], name=badd)", "Tensor([ True  True  True])"]


def test_softmax_example(capsys):
    functions = pytest.importorskip("tricycle.functions")
    Softmax = functions.Softmax
    a = to_tensor([1, 2, 3])

    # more complex functions
    print(Softmax()(a))  # Output: Tensor([0.09003057 0.24472848 0.66524094], name=softmax)

    out = Softmax()(a)
    assert out.close_to([0.09003057, 0.24472848, 0.66524094], rtol=1e-6, atol=1e-7)
    assert out.name == "softmax"
    assert "name=softmax" in printed(capsys)[0]


# ------------------------------------------------------------------ Automatic Differentiation
def test_derivative_of_a_polynomial(capsys):
    x = to_tensor(2)

    y = x**2 + 3 * x + 4
    print(y)  # Output: Tensor(14.0, name=+ 4)

    # derivative of y with respect to (wrt) x is
    # 2 * x + 3 = 7
    y.backward()  # differentiate wrt y
    print(x.grad)  # Output: Tensor(7.0)

    assert printed(capsys) == ["Tensor(14.0, name=+ 4)", "Tensor(7.0)"]
    assert y.item() == 14.0 and x.grad.item() == 7.0


def test_multidimensional_tensors():
    shape = (6, 5, 4, 3, 2)
    a = to_tensor(np.random.random(shape))
    b = to_tensor(np.random.random(shape))

    c = a * b  # elementwise multiply

    c.backward()  # differentiate wrt c
    assert a.grad.close_to(b)  # derivative of c wrt a is b
    assert b.grad.close_to(a)  # derivative of c wrt b is a
    # and the check can fail: the gradient is not anything else
    assert not a.grad.close_to(a * 2 + 1)


def test_attention_example():
    blocks = pytest.importorskip("tricycle.blocks")
    MultiHeadSelfAttention = blocks.MultiHeadSelfAttention

    attention = MultiHeadSelfAttention(
        embedding_dim=32,
        n_heads=2,
        context_window=32,
    )

    # batch_size, n_tokens, embedding_dim
    shape = (4, 32, 32)
    input = to_tensor(np.ones(shape), is_batched=True)  # noqa: A001 - as in the README

    output = attention(input)
    output.backward()  # differentiate wrt output

    print(input.grad)  # Output: Tensor([[[ 2.5441039  -2.0558214  -1.7923143  ...
    assert input.grad.shape == (4, 32, 32)
    assert np.isfinite(input.grad.array).all()


# ------------------------------------------------------------------ Einsum
def test_einsum_transpose_sum_and_matmul(capsys):
    a = to_tensor([[1, 2], [3, 4]])
    print(Einsum("ij->ji")(a))  # Output: Tensor([[1. 3.], [2. 4.]], name=einsum ij->ji)

    print(Einsum("ij->i")(a))  # Tensor([3. 7.], name=einsum ij->i)

    b = to_tensor([[5, 6], [7, 8]])
    print(Einsum("ij,jk->ik")(a, b))  # Tensor([[19. 22.], [43. 50.]], name=einsum ij,jk->ik)

    # numpy prints 2-D arrays over two lines, where the README joins them with ", "
    assert printed(capsys) == [
        "Tensor([[1. 3.]",
        " [2. 4.]], name=einsum ij->ji)",
        "Tensor([3. 7.], name=einsum ij->i)",
        "Tensor([[19. 22.]",
        " [43. 50.]], name=einsum ij,jk->ik)",
    ]
    np.testing.assert_array_equal(Einsum("ij->ji")(a).array, [[1, 3], [2, 4]])
    np.testing.assert_array_equal(Einsum("ij->i")(a).array, [3, 7])
    np.testing.assert_array_equal(Einsum("ij,jk->ik")(a, b).array, [[19, 22], [43, 50]])


def test_derivative_of_a_transpose_by_index_swap():
    a = to_tensor([[1, 2], [3, 4]])

    # forward operation
    y = Einsum("ij->ji")(a)

    # swap the input with the current grad (a grid of ones in this case)
    grad = to_tensor(np.ones_like(y))

    # swap the indices
    derivative = Einsum("ji->ij")(grad)

    y.backward()
    np.testing.assert_array_equal(derivative.array, a.grad.array)
    np.testing.assert_array_equal(a.grad.array, np.ones((2, 2)))

    # with a non-uniform gradient the swap is visible
    a = to_tensor([[1, 2], [3, 4]])
    upstream = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    Einsum("ij->ji")(a).backward(upstream)
    np.testing.assert_array_equal(a.grad.array, Einsum("ji->ij")(to_tensor(upstream)).array)
    np.testing.assert_array_equal(a.grad.array, upstream.T)


def test_derivative_of_a_dense_layer_by_index_swap():
    # forward operation
    inputs = to_tensor(np.random.random((5, 4, 3, 2)))
    # the seed README's weights were (3, 6), which does not contract with b = 2 in the
    # inputs (a clear error, checked below); ours are (2, 6)
    weights = to_tensor(np.random.random((2, 6)))
    y = Einsum("zxTb,bW->zxTW")(inputs, weights)

    grad = to_tensor(np.ones_like(y))

    # swap the indices + replace inputs
    derivative = Einsum("zxTb,zxTW->bW")(inputs, grad)

    y.backward()
    assert derivative.shape == weights.shape == (2, 6)
    assert weights.grad.close_to(derivative)
    # the same rule for the other input: swap its indices with the output's
    assert inputs.grad.close_to(Einsum("zxTW,bW->zxTb")(grad, weights))
    np.testing.assert_allclose(
        weights.grad.array,
        np.einsum("zxTb,zxTW->bW", inputs.array, np.ones(y.shape)),
        rtol=1e-5,
    )


def test_readme_dense_shapes_raise_a_clear_error():
    """The seed README's shapes, weights (3, 6) against b = 2: an error naming the index."""
    inputs = to_tensor(np.random.random((5, 4, 3, 2)))
    weights = to_tensor(np.random.random((3, 6)))
    with pytest.raises(ValueError, match="index 'b' has size 2 in one operand and 3 in another"):
        Einsum("zxTb,bW->zxTW")(inputs, weights)


def test_dense_index_swap_with_a_random_gradient():
    rng = np.random.default_rng(0)
    inputs = to_tensor(rng.random((5, 4, 3, 2)))
    weights = to_tensor(rng.random((2, 6)))
    grad = to_tensor(rng.normal(size=(5, 4, 3, 6)))
    Einsum("zxTb,bW->zxTW")(inputs, weights).backward(grad)
    assert weights.grad.close_to(Einsum("zxTb,zxTW->bW")(inputs, grad))
    assert inputs.grad.close_to(Einsum("zxTW,bW->zxTb")(grad, weights))
