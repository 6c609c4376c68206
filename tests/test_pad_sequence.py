"""``tricycle.nn.utils.rnn.pad_sequence`` against torch's: values and each sequence's
gradient, both layouts and sides, and the errors; and the package keeps its clipping names."""

import numpy as np
import pytest

import tricycle.nn as nn
from tricycle.nn.utils.rnn import pad_sequence
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 3)])
def test_pad_sequence_matches_torch(batch_first, side, trailing):
    rng = np.random.default_rng(len(trailing))
    arrays = [rng.standard_normal((n, *trailing)) for n in (2, 5, 1)]
    ours = [Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = pad_sequence(ours, batch_first=batch_first, padding_value=-1.5, padding_side=side)
    expected = torch.nn.utils.rnn.pad_sequence(
        theirs, batch_first=batch_first, padding_value=-1.5, padding_side=side
    )
    np.testing.assert_array_equal(out.array, expected.detach().numpy())
    weights = rng.standard_normal(out.shape)
    (out * Tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, their in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, their.grad.numpy(), rtol=1e-12)


def test_the_errors_name_pad_sequence_and_the_clipping_names_stay():
    with pytest.raises(ValueError, match="pad_sequence: expected at least one sequence"):
        pad_sequence([])
    with pytest.raises(ValueError, match=r"pad_sequence: expected sequences \(L_i, \*\) of one"):
        pad_sequence([Tensor(np.ones((2, 3))), Tensor(np.ones((2, 4)))])
    with pytest.raises(ValueError, match="pad_sequence: padding_side"):
        pad_sequence([Tensor(np.ones(2))], padding_side="middle")
    assert nn.utils.clip_grad_norm_.__module__ == "tricycle.nn.utils.clip_grad"
    assert nn.utils.rnn.pad_sequence is pad_sequence
