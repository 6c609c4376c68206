"""nn.Softmax, nn.LogSoftmax and nn.Softmin along any ``dim``, and their F functions, against
torch: values and input gradients; over the last axis they are the fused ops."""

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.nn.functional as F
from tricycle.functions import LogSoftmax as FusedLogSoftmax
from tricycle.functions import Softmax as FusedSoftmax
from tricycle.layers import Layer
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

CASES = [  # (ours, torch's) for a dim
    (lambda d: nn.Softmax(dim=d), lambda d: torch.nn.Softmax(dim=d)),
    (lambda d: nn.LogSoftmax(dim=d), lambda d: torch.nn.LogSoftmax(dim=d)),
    (lambda d: nn.Softmin(dim=d), lambda d: torch.nn.Softmin(dim=d)),
    (lambda d: lambda x: F.softmax(x, dim=d), lambda d: lambda x: torch.softmax(x, d)),
    (lambda d: lambda x: F.log_softmax(x, d), lambda d: lambda x: torch.log_softmax(x, d)),
    (lambda d: lambda x: F.softmin(x, d), lambda d: lambda x: torch.nn.functional.softmin(x, d)),
]


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_along_a_dim_as_torch(case, dim):
    ours, theirs = (make(dim) for make in CASES[case])
    x = np.random.default_rng(case).standard_normal((3, 4, 5))
    weights = np.random.default_rng(9).standard_normal((3, 4, 5))
    tx = Tensor(x, requires_grad=True)
    out = ours(tx)
    (out * Tensor(weights)).sum().backward()
    t = torch.tensor(x, requires_grad=True)
    expected = theirs(t)
    (expected * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tx.grad.array, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_the_layers_are_modules_and_the_seed_classes():
    softmax = nn.Softmax(dim=1)
    assert isinstance(softmax, Layer) and isinstance(softmax, FusedSoftmax)
    assert isinstance(nn.LogSoftmax(), FusedLogSoftmax)
    assert repr(softmax) == "Softmax(dim=1)" and repr(nn.Softmin()) == "Softmin(dim=None)"
    model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=-1))
    assert [type(m).__name__ for m in model.modules()][-1] == "Softmax"
    x = Tensor(np.ones((2, 4), dtype=np.float32))
    np.testing.assert_allclose(model(x).array.sum(-1), 1.0, rtol=1e-6)


def test_a_bad_dim_names_the_layer():
    with pytest.raises(ValueError, match="nn.Softmax"):
        nn.Softmax(dim=3)(Tensor(np.ones((2, 3))))
    with pytest.raises(TypeError, match="nn.LogSoftmax"):
        nn.LogSoftmax(dim=1.5)
