"""``tricycle.nn.utils.parametrizations.orthogonal`` against torch's: for each map
("matrix_exp", "cayley", "householder"), with and without trivialization, on square, tall
and wide Linear weights and a batch of matrices, the same state_dict names and values, the
same weight (orthogonal), outputs, gradients of the original and a few SGD steps, given
torch's ``base`` where torch drew random columns; torch's errors; the GPU on cupy."""

import numpy as np
import pytest

import tricycle as tc
from tests.helpers import on_host_and_gpu
from tricycle import backend, nn
from tricycle.module import Layer
from tricycle.nn.utils import parametrizations, parametrize

torch = pytest.importorskip("torch")

MAPS = ["matrix_exp", "cayley", "householder"]


def linears(out_features: int, in_features: int, seed: int = 0):
    """A float64 torch Linear and a tricycle Linear with the same weights."""
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(in_features, out_features).double()
    ours = nn.Linear(in_features, out_features)
    ours.weights.array = theirs.weight.detach().numpy().T.copy()
    ours.bias.array = theirs.bias.detach().numpy().copy()
    return ours, theirs


def assert_orthogonal(Q: np.ndarray) -> None:
    n, k = Q.shape[-2:]
    product = Q.swapaxes(-1, -2) @ Q if n >= k else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(product, np.broadcast_to(np.eye(min(n, k)), product.shape),
                               atol=1e-12)  # fmt: skip


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("trivial", [True, False])
def test_linear_as_torch(shape, orthogonal_map, trivial):
    ours, theirs = linears(*shape)
    torch.nn.utils.parametrizations.orthogonal(
        theirs, orthogonal_map=orthogonal_map, use_trivialization=trivial
    )
    got = parametrizations.orthogonal(
        ours, orthogonal_map=orthogonal_map, use_trivialization=trivial
    )
    assert got is ours and parametrize.is_parametrized(ours, "weight")
    expected = {k: v.detach().numpy() for k, v in theirs.state_dict().items()}
    state = ours.state_dict()
    assert sorted(state) == sorted(expected)
    np.testing.assert_allclose(ours.weights.array.T, theirs.weight.detach().numpy(), atol=1e-13)
    for name in state:  # base drawn at random (torch's generator) beside a tall matrix
        if name != "parametrizations.weight.0.base" or shape[0] == shape[1]:
            np.testing.assert_allclose(state[name], expected[name], atol=1e-13, err_msg=name)
    if trivial:  # the random completion: torch's
        ours.parametrizations.weight[0].base.array = expected["parametrizations.weight.0.base"]
    sgd = tc.optim.SGD(ours.parameters(), lr=0.3)
    torch_sgd = torch.optim.SGD(theirs.parameters(), lr=0.3)
    x = np.random.default_rng(1).normal(size=(4, shape[1]))
    for _ in range(3):
        for optimizer in (sgd, torch_sgd):
            optimizer.zero_grad()
        y, torch_y = ours(tc.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(y.array, torch_y.detach().numpy(), atol=1e-12)
        (y * y).sum().backward()
        (torch_y * torch_y).sum().backward()
        original = theirs.parametrizations.weight.original
        np.testing.assert_allclose(ours.parametrizations.weight.original.grad,
                                   original.grad.numpy(), atol=1e-11)  # fmt: skip
        sgd.step()
        torch_sgd.step()
    W = ours.weights.array.T
    np.testing.assert_allclose(W, theirs.weight.detach().numpy(), atol=1e-12)
    assert_orthogonal(W)


class Batch(Layer):
    """A layer holding a batch of matrices under torch's name ``weight``."""

    def __init__(self, array):
        self.weight = nn.Parameter(array.copy())

    def forward(self, x):
        return x @ self.weight


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_batch_of_matrices(orthogonal_map):
    array = np.random.default_rng(2).normal(size=(2, 3, 3))

    class TorchBatch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.tensor(array))

    theirs, ours = TorchBatch(), Batch(array)
    torch.nn.utils.parametrizations.orthogonal(theirs, orthogonal_map=orthogonal_map)
    parametrizations.orthogonal(ours, orthogonal_map=orthogonal_map)
    W = ours.weight.array
    np.testing.assert_allclose(W, theirs.weight.detach().numpy(), atol=1e-13)
    assert_orthogonal(W)
    x = np.random.default_rng(3).normal(size=(2, 4, 3))
    ours(tc.tensor(x)).sum().backward()
    (torch.tensor(x) @ theirs.weight).sum().backward()
    np.testing.assert_allclose(ours.parametrizations.weight.original.grad,
                               theirs.parametrizations.weight.original.grad.numpy(),
                               atol=1e-12)  # fmt: skip


def test_default_maps_and_assignment():
    square, _ = linears(3, 3)
    tall, _ = linears(5, 2)
    parametrizations.orthogonal(square)
    parametrizations.orthogonal(tall)
    assert square.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    assert tall.parametrizations.weight[0].orthogonal_map == "householder"
    # assigning an orthogonal matrix keeps it: it becomes the base
    Q = np.linalg.qr(np.random.default_rng(4).normal(size=(3, 3)))[0]
    square.weights = tc.tensor(Q.T)
    np.testing.assert_allclose(square.weights.array.T, Q, atol=1e-13)
    assert_orthogonal(tall.weights.array.T)


def test_errors_as_torch():
    vector = Batch(np.ones(3))
    with pytest.raises(ValueError, match="matrix or batch of matrices"):
        parametrizations.orthogonal(vector)
    ours, _ = linears(3, 3)
    with pytest.raises(ValueError, match='one of "matrix_exp"'):
        parametrizations.orthogonal(ours, orthogonal_map="exp")
    with pytest.raises(ValueError, match="no 'kernel'|kernel"):
        parametrizations.orthogonal(ours, name="kernel")
    parametrizations.orthogonal(ours, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="use_trivialization=False"):
        ours.weights = tc.tensor(np.eye(3))
    other, _ = linears(3, 3)
    parametrizations.orthogonal(other)
    with pytest.raises(ValueError, match=r"shape \(3, 3\)"):
        other.parametrizations.weight[0].right_inverse(tc.tensor(np.eye(4)))


@pytest.mark.skipif(not backend.cupy_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_on_gpu_as_on_host(orthogonal_map):
    array = np.random.default_rng(5).normal(size=(5, 3))
    host, gpu = Batch(array), Batch(array)
    gpu.to_gpu()
    for layer in (host, gpu):
        parametrizations.orthogonal(layer, orthogonal_map=orthogonal_map)
    gpu.parametrizations.weight[0].base.array = backend.move(
        host.parametrizations.weight[0].base.array, 0
    )  # the random completion: the host's
    x_host, x_gpu = on_host_and_gpu(np.random.default_rng(6).normal(size=(2, 5)))
    host(x_host).sum().backward()
    gpu(x_gpu).sum().backward()
    np.testing.assert_allclose(backend.to_host_array(gpu.weight.array), host.weight.array,
                               atol=1e-12)  # fmt: skip
    np.testing.assert_allclose(
        backend.to_host_array(gpu.parametrizations.weight.original.grad.array),
        host.parametrizations.weight.original.grad.array, atol=1e-12,
    )  # fmt: skip
