"""``nn.Parameter`` (torch's class): what it keeps of a Tensor (dtype, device, the array
itself), that it cuts the graph and that an op on it gives a plain Tensor; every layer's
parameter is one; ``parameter()`` keeps float32 for an initialiser's array; a module built on
``nn.Parameter`` against torch (forward, the input's and the parameters' gradients); and
Embedding's repr after model surgery."""

import copy
import pickle

import numpy as np
import pytest

import tricycle as tc
import tricycle.nn as nn
from tricycle.module import parameter
from tricycle.nn import functional as F
from tricycle.tensor import Tensor


def test_a_parameter_keeps_the_tensors_array_dtype_and_device():
    t = tc.arange(6.0, dtype=np.float64).reshape(2, 3)
    p = nn.Parameter(t)
    assert isinstance(p, Tensor) and isinstance(p, nn.Parameter)
    assert p.array is t.array and p.dtype == np.float64 and p.device == t.device
    assert p.requires_grad and p.args is None and p.grad is None
    frozen = nn.Parameter(t, requires_grad=False)
    assert not frozen.requires_grad
    empty = nn.Parameter()  # torch's Parameter() holds an empty tensor
    assert empty.shape == (0,) and empty.dtype == np.float32 and empty.requires_grad
    with pytest.raises(TypeError, match="only floating tensors can require gradients"):
        nn.Parameter(tc.arange(3))
    with pytest.raises(TypeError, match="Parameter: requires_grad must be"):
        nn.Parameter(t, requires_grad="yes")


def test_a_parameter_cuts_the_graph_and_ops_on_it_give_tensors():
    x = tc.randn(4, 3, requires_grad=True, dtype=np.float64)
    p = nn.Parameter(x[:2] * 2)  # an op's output: the parameter is a new leaf
    assert p.args is None and p.dtype == np.float64
    for y in (p * 2, 2 * p, p + p, p[0], p.sum(), tc.cat([p, p]), p.detach()):
        assert type(y) is Tensor, y
    (p * p).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * p.numpy())
    assert x.grad is None  # nothing flowed past the parameter


def test_parameter_makes_float32_from_arrays_and_keeps_a_tensors_dtype():
    p = parameter(np.ones((2, 2)), "w")  # an initialiser's float64 array
    assert isinstance(p, nn.Parameter) and p.dtype == np.float32 and p.name == "w"
    assert parameter([1, 2]).dtype == np.float32
    q = parameter(tc.ones(3, dtype=np.float64))
    assert isinstance(q, nn.Parameter) and q.dtype == np.float64 and q.requires_grad


def test_every_layers_parameters_are_parameters_through_casts_and_copies():
    model = nn.Sequential(
        nn.Embedding(5, 4), nn.LayerNorm(4), nn.Linear(4, 3), nn.Conv1d(3, 2, 1), nn.PReLU()
    )
    model.to(np.float64)
    for clone in (model, pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        params = clone.parameters()
        assert len(params) == 8 and all(isinstance(p, nn.Parameter) for p in params)
        assert all(p.dtype == np.float64 for p in params)
    lstm = nn.LSTM(3, 2)
    assert all(isinstance(p, nn.Parameter) for p in lstm.parameters())


def test_a_module_of_parameters_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    w, b, x = rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=(2, 4))

    class Ours(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(tc.to_tensor(w, dtype=np.float64))
            self.bias = nn.Parameter(tc.to_tensor(b, dtype=np.float64))

        def forward(self, x):
            return F.linear(x, self.weight, self.bias).tanh()

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.from_numpy(w))
            self.bias = torch.nn.Parameter(torch.from_numpy(b))

        def forward(self, x):
            return torch.nn.functional.linear(x, self.weight, self.bias).tanh()

    ours, theirs = Ours(), Theirs()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    xo, xt = tc.to_tensor(x, dtype=np.float64, requires_grad=True), torch.tensor(x)
    xt.requires_grad_()
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.numpy(), yt.detach().numpy(), rtol=1e-12)
    dy = rng.normal(size=yo.shape)
    yo.backward(dy)
    yt.backward(torch.from_numpy(dy))
    for got, want in ((xo, xt), (ours.weight, theirs.weight), (ours.bias, theirs.bias)):
        assert got.grad.dtype == np.float64
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-12)


def test_embeddings_repr_reads_the_table_after_surgery():
    table = nn.Embedding(16, 4)
    assert "from_size=16, to_size=4" in repr(table)
    table.weights = nn.Parameter(table.weights[:8])  # nanoGPT's crop_block_size
    assert "from_size=8, to_size=4" in repr(table) and "32 parameters" in repr(table)
