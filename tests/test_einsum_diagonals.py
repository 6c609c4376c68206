"""Einsum with scalar operands (``"ij,->ij"``) and indices repeated within one operand
(diagonals ``"ii->i"``, traces ``"ii->"``): forward against numpy.einsum, gradients against
finite differences and torch autograd, and errors for malformed subscripts."""

import numpy as np
import pytest
from helpers import check_grads
from hypothesis import given
from hypothesis import strategies as st

from tricycle.einsum import Einsum
from tricycle.tensor import Tensor

# (subscript, operand shapes as index strings: each letter's size is drawn per example)
CASES = [
    ("ii->i", ["ii"]),
    ("ii->", ["ii"]),
    ("ii", ["ii"]),  # implicit: the trace, as numpy
    ("iij->j", ["iij"]),
    ("iji->ij", ["iji"]),
    ("iii->i", ["iii"]),
    ("ijij->ij", ["ijij"]),
    ("...ii->...i", ["Bii"]),
    ("ii,i->i", ["ii", "i"]),
    ("ii,jj->ij", ["ii", "jj"]),
    ("ij,->ij", ["ij", ""]),
    (",ij->ji", ["", "ij"]),
    ("ij,,jk->ik", ["ij", "", "jk"]),
    ("->", [""]),
    (",->", ["", ""]),
    ("i,->", ["i", ""]),
    ("iij,,jk->ik", ["iij", "", "jk"]),
]


def operands(draw, shapes):
    sizes = {c: draw(st.integers(1, 4), label=f"size {c}") for c in set("".join(shapes))}
    rng = np.random.default_rng(draw(st.integers(0, 2**16), label="seed"))
    return [rng.normal(size=tuple(sizes[c] for c in shape)) for shape in shapes]


@pytest.mark.parametrize(("subscript", "shapes"), CASES, ids=[c[0] for c in CASES])
@given(data=st.data())
def test_forward_and_gradient(subscript, shapes, data):
    arrays = operands(data.draw, shapes)
    out = check_grads(lambda *ts: Einsum(subscript)(*ts), *arrays)
    np.testing.assert_allclose(out.array, np.einsum(subscript, *arrays), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("subscript", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_diamond(subscript, shapes):
    """The output used twice and squared: the diagonal's gradient accumulates correctly."""
    arrays = operands(lambda strategy, label: 3, shapes)
    op = Einsum(subscript)
    check_grads(lambda *ts: op(*ts) * op(*ts) + op(*ts), *arrays)


def test_same_tensor_as_diagonal_and_plain_operand():
    x = np.random.default_rng(0).normal(size=(3, 3))
    check_grads(lambda t: Einsum("ii,ij->j")(t, t), x)


@pytest.mark.parametrize(("subscript", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_against_torch_autograd(subscript, shapes):
    torch = pytest.importorskip("torch")
    arrays = operands(lambda strategy, label: 3, shapes)
    rng = np.random.default_rng(1)
    ours = [Tensor(a) for a in arrays]
    out = Einsum(subscript)(*ours)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = torch.einsum(subscript, *theirs)
    expected.backward(torch.tensor(upstream))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, reference.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_scalar_operand_may_be_a_python_number():
    a = Tensor(np.arange(6.0).reshape(2, 3))
    out = Einsum("ij,->ij")(a, 2.5)
    np.testing.assert_array_equal(out.array, 2.5 * a.array)
    out.backward()
    np.testing.assert_array_equal(a.grad.array, np.full((2, 3), 2.5))


def test_diagonal_gradient_is_zero_off_the_diagonal():
    x = Tensor(np.arange(9.0).reshape(3, 3))
    y = Einsum("ii->i")(x)
    np.testing.assert_array_equal(y.array, [0.0, 4.0, 8.0])
    y.backward(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(x.grad.array, np.diag([1.0, 2.0, 3.0]))


@pytest.mark.parametrize(
    ("subscript", "shapes", "message"),
    [
        ("ii->i", [(2, 3)], r"ii->i: index 'i' is repeated in operand 'ii' .* sizes 2 and 3"),
        ("ii->i", [(1, 3)], r"index 'i' is repeated .* sizes 1 and 3"),  # no broadcasting
        ("ij,->ij", [(2, 3), (2,)], r"operand '' \(a scalar\) has 1 dimension\(s\)"),
    ],
)
def test_shape_errors(subscript, shapes, message):
    with pytest.raises(ValueError, match=message):
        Einsum(subscript)(*[np.ones(shape) for shape in shapes])


@pytest.mark.parametrize(
    ("subscript", "message"),
    [
        (".i->i", r"'.i->i' has a '.' in '.i' that is not part of '...'"),
        ("i.->i", r"a '.' in 'i.'"),
        ("i->.i", r"a '.' in '.i'"),
        ("....i->i", r"a '.' in '....i'"),
        ("ii->ii", r"output of 'ii->ii' repeats an index"),
    ],
)
def test_malformed_subscripts(subscript, message):
    with pytest.raises(ValueError, match=message):
        Einsum(subscript)


def test_subscript_must_be_a_string():
    with pytest.raises(TypeError, match=r"Einsum: the subscript must be a string .* got 3"):
        Einsum(3)


@pytest.mark.parametrize(("subscript", "shapes"), CASES, ids=[c[0] for c in CASES])
def test_on_every_backend(subscript, shapes, xp):
    """The same values and gradients from cupy as from numpy (numpy only without a GPU)."""
    arrays = operands(lambda strategy, label: 3, shapes)
    cpu = [Tensor(a) for a in arrays]
    device = [Tensor(xp.asarray(a)) for a in arrays]
    out_cpu, out_device = Einsum(subscript)(*cpu), Einsum(subscript)(*device)
    upstream = np.random.default_rng(2).normal(size=out_cpu.shape)
    out_cpu.backward(upstream)
    out_device.backward(xp.asarray(upstream))
    np.testing.assert_allclose(out_device.numpy(), out_cpu.array, rtol=1e-12, atol=1e-12)
    for a, b in zip(device, cpu):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.array, rtol=1e-12, atol=1e-12)
