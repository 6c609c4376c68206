"""``broadcast_to`` (the function and the Tensor method) and ``allclose``'s dtypes, against
torch's (Tensor-Puzzles' checks call ``torch.broadcast_to(out2, out.shape)`` then
``torch.allclose(out, out2)``, which refuses an answer of another dtype)."""

import numpy as np
import pytest

import tricycle as tc


def test_broadcast_to_is_torchs():
    """Values, shapes (-1 keeps an axis, new axes lead, a 0-d tensor stretches) and the
    gradient, summed back over the stretched axes, as torch's."""
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).normal(size=(2, 1, 3))
    for shape in [(2, 4, 3), (5, 2, 4, 3), (-1, 4, -1), [2, 1, 3], torch.Size([3, 2, 2, 3])]:
        x, y = tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        ours, theirs = tc.broadcast_to(x, tuple(shape)), torch.broadcast_to(y, shape)
        weights = np.arange(theirs.numel()).reshape(theirs.shape)  # a distinct upstream gradient
        assert ours.shape == tuple(theirs.shape)
        np.testing.assert_array_equal(ours.numpy(), theirs.detach().numpy())
        (ours * tc.tensor(weights)).sum().backward()
        (theirs * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-12)
    method = tc.tensor([1, 2]).broadcast_to((3, 2))
    assert method.dtype == np.int64
    assert method.tolist() == torch.tensor([1, 2]).broadcast_to((3, 2)).tolist()
    assert tc.broadcast_to(tc.tensor(5), [2]).tolist() == [5, 5]


def test_broadcast_to_refuses_what_torch_refuses():
    """A plain number as the shape is a TypeError, as torch's; a shape the tensor cannot
    stretch to is an error naming the shapes."""
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError):
        torch.broadcast_to(torch.tensor([1, 2]), 2)
    with pytest.raises(TypeError, match="broadcast_to"):
        tc.broadcast_to(tc.tensor([1, 2]), 2)
    with pytest.raises(TypeError, match="broadcast_to"):
        tc.broadcast_to([1, 2], (2,))
    with pytest.raises(ValueError, match=r"\(2,\) to \(3,\)"):
        tc.tensor([1, 2]).broadcast_to((3,))


def test_allclose_refuses_two_dtypes_as_torch():
    """torch.allclose of an int64 and a float32 (or bool) tensor is a RuntimeError naming
    both dtypes; of one dtype it answers as before, and a number or array ``other`` (tricycle's
    own) is still compared."""
    torch = pytest.importorskip("torch")
    pairs = [([1, 2], [1.0, 2.0]), ([1, 2], [True, True]), ([1.0], np.array([1.0]))]
    for x, y in pairs:
        with pytest.raises(RuntimeError):
            torch.allclose(torch.tensor(x), torch.tensor(y))
        with pytest.raises(RuntimeError, match="allclose: input is (int64|float32), other"):
            tc.allclose(tc.tensor(x), tc.tensor(y))
    for x, y in [([1, 2], [1, 2]), ([1, 2], [1, 3]), ([1.0, 2.0], [1.0, 2.0 + 1e-7])]:
        expected = torch.allclose(torch.tensor(x), torch.tensor(y))
        assert tc.allclose(tc.tensor(x), tc.tensor(y)) == expected
        assert tc.tensor(x).allclose(tc.tensor(y)) == expected
    assert tc.allclose(tc.tensor([1.0, 2.0]), np.array([1.0, 2.0]))
    assert tc.allclose(tc.tensor([1.0, 1.0]), 1)
