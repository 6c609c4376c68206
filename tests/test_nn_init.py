"""``tricycle.nn.init`` against torch.nn.init: fans and gains as torch computes them for the same
layer (Linear's weights are the transpose of torch's, convolutions' the same), the statistics
of each draw against torch's formula over large tensors, orthogonality, seeds, dtypes, the
tensor written in place, a nanoGPT-style ``model.apply(_init_weights)``, and the errors."""

import math

import numpy as np
import pytest

import tricycle
import tricycle.nn as nn
import tricycle.nn.init as init
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def torch_linear(fan_in, fan_out):
    return torch.nn.Linear(fan_in, fan_out).weight


# ====================================================================== fans and gains
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (lambda: nn.Linear(7, 3).weights, lambda: torch.nn.Linear(7, 3).weight),
        (lambda: nn.Conv2d(4, 6, 3).weights, lambda: torch.nn.Conv2d(4, 6, 3).weight),
        (lambda: nn.Conv1d(2, 5, 4).weights, lambda: torch.nn.Conv1d(2, 5, 4).weight),
    ],
    ids=["Linear", "Conv2d", "Conv1d"],
)
def test_fans_are_torchs_for_the_same_layer(ours, theirs):
    weights, expected = ours(), theirs()
    fans = torch.nn.init._calculate_fan_in_and_fan_out(expected)
    assert init._calculate_fan_in_and_fan_out(weights) == fans
    for mode, fan in zip(("fan_in", "fan_out"), fans):
        assert init._calculate_correct_fan(weights, mode) == fan


def test_fans_of_a_tensor_in_torchs_layout():
    embedding, expected = nn.Embedding(11, 4).weights, torch.nn.Embedding(11, 4).weight
    fans = torch.nn.init._calculate_fan_in_and_fan_out(expected)
    assert init._calculate_fan_in_and_fan_out(embedding, torch_layout=True) == fans
    assert init._calculate_fan_in_and_fan_out(embedding) == fans[::-1]  # read as (in, out)


@pytest.mark.parametrize(
    ("nonlinearity", "param"),
    [("linear", None), ("conv2d", None), ("conv_transpose3d", None), ("sigmoid", None),
     ("tanh", None), ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2),
     ("leaky_relu", math.sqrt(5)), ("leaky_relu", 0), ("selu", None)],
)  # fmt: skip
def test_gains_are_torchs(nonlinearity, param):
    expected = torch.nn.init.calculate_gain(nonlinearity, param)
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(expected, rel=1e-15)


# ====================================================================== statistics
def torch_std_and_bound(name, weight, **kwargs):
    """torch's std (and uniform bound) for ``name`` on the torch tensor ``weight``."""
    if name.startswith("xavier"):
        fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(weight)
        std = kwargs.get("gain", 1.0) * math.sqrt(2.0 / (fan_in + fan_out))
    else:
        fan = torch.nn.init._calculate_correct_fan(weight, kwargs.get("mode", "fan_in"))
        gain = torch.nn.init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"),
                                            kwargs.get("a", 0))  # fmt: skip
        std = gain / math.sqrt(fan)
    return std, math.sqrt(3.0) * std


CASES = [
    ("xavier_uniform_", {}),
    ("xavier_uniform_", {"gain": 2.0}),
    ("xavier_normal_", {"gain": 0.5}),
    ("kaiming_uniform_", {}),
    ("kaiming_uniform_", {"a": math.sqrt(5)}),  # torch's Linear and Conv reset_parameters
    ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", {}),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "tanh"}),
]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}{k}" for n, k in CASES])
@pytest.mark.parametrize("layer", ["Linear", "Conv2d"])
def test_draws_have_torchs_distribution_for_the_same_layer(name, kwargs, layer):
    torch.manual_seed(0)
    if layer == "Linear":  # wide and deep, so that fan_in and fan_out differ a lot
        ours, theirs = nn.Linear(600, 150), torch.nn.Linear(600, 150)
    else:
        ours, theirs = nn.Conv2d(16, 48, 5), torch.nn.Conv2d(16, 48, 5)
    std, bound = torch_std_and_bound(name, theirs.weight, **kwargs)
    written = getattr(init, name)(ours.weights, **kwargs)
    getattr(torch.nn.init, name)(theirs.weight, **kwargs)
    assert written is ours.weights and written.dtype == np.float32
    for values in (written.array, theirs.weight.detach().numpy()):
        assert abs(values.mean()) < 0.05 * std  # 7 standard errors of the mean
        assert values.std() == pytest.approx(std, rel=0.02)
        if "uniform" in name:
            assert np.abs(values).max() <= bound * (1 + 1e-6)
            assert np.abs(values).max() > 0.999 * bound


def test_uniform_normal_and_constants():
    w = nn.Linear(300, 200).weights
    values = init.uniform_(w, -0.5, 1.5).array
    assert values.min() >= -0.5 and values.max() < 1.5
    assert values.mean() == pytest.approx(0.5, abs=0.01)
    assert values.std() == pytest.approx(2 / math.sqrt(12), rel=0.01)
    values = init.normal_(w, mean=1.0, std=0.02).array
    assert values.mean() == pytest.approx(1.0, abs=1e-3)
    assert values.std() == pytest.approx(0.02, rel=0.01)
    assert np.all(init.ones_(w).array == 1) and np.all(init.zeros_(w).array == 0)
    assert np.all(init.constant_(w, -2.5).array == -2.5)
    square = init.eye_(Tensor(np.zeros((3, 5)))).array
    np.testing.assert_array_equal(square, torch.nn.init.eye_(torch.zeros(3, 5)).numpy())


def test_trunc_normal_keeps_the_bounds_and_torchs_statistics():
    torch.manual_seed(0)
    ours, theirs = Tensor(np.zeros((400, 300))), torch.zeros(400, 300)
    for kwargs in ({"std": 0.02}, {"mean": 0.5, "std": 1.0, "a": -1.0, "b": 1.0}):
        values = init.trunc_normal_(ours, **kwargs).array
        expected = torch.nn.init.trunc_normal_(theirs, **kwargs).numpy()
        a, b = kwargs.get("a", -2.0), kwargs.get("b", 2.0)
        assert values.min() >= a and values.max() <= b
        assert values.mean() == pytest.approx(expected.mean(), abs=0.01 * float(expected.std()))
        assert values.std() == pytest.approx(expected.std(), rel=0.01)


@pytest.mark.parametrize("shape", [(20, 50), (50, 20), (6, 3, 2, 2), (7, 7)])
def test_orthogonal_is_orthogonal(shape):
    q = init.orthogonal_(Tensor(np.zeros(shape)), gain=2.0).array.reshape(shape[0], -1)
    short = min(q.shape)
    gram = q @ q.T if q.shape[0] == short else q.T @ q  # the orthonormal vectors
    np.testing.assert_allclose(gram, 4.0 * np.eye(short), atol=1e-12)
    again = init.orthogonal_(Tensor(np.zeros(shape))).array
    assert not np.allclose(again, q.reshape(shape) / 2)  # a fresh draw


# ====================================================================== seeds, dtypes, memory
@pytest.mark.parametrize(
    "draw",
    [
        lambda t, **k: init.normal_(t, 0.0, 0.1, **k),
        lambda t, **k: init.uniform_(t, **k),
        lambda t, **k: init.kaiming_normal_(t, **k),
        lambda t, **k: init.xavier_uniform_(t, **k),
        lambda t, **k: init.trunc_normal_(t, **k),
        lambda t, **k: init.orthogonal_(t, **k),
    ],
)
def test_manual_seed_and_a_generator_repeat_the_draws(draw):
    def twice(**kwargs):
        first = draw(Tensor(np.zeros((8, 5))), **kwargs).array.copy()
        return first, draw(Tensor(np.zeros((8, 5))), **kwargs).array

    tricycle.manual_seed(7)
    first, second = twice()
    assert not np.array_equal(first, second)
    tricycle.manual_seed(7)
    np.testing.assert_array_equal(twice()[0], first)
    a = draw(Tensor(np.zeros((8, 5))), generator=np.random.default_rng(3)).array
    b = draw(Tensor(np.zeros((8, 5))), generator=np.random.default_rng(3)).array
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_the_tensor_is_written_in_place_in_its_dtype(dtype):
    w = Tensor(np.zeros((64, 32), dtype=dtype))  # a parameter: it requires grad
    memory = w.array
    assert init.kaiming_uniform_(w, a=math.sqrt(5)) is w
    assert w.array is memory and w.dtype == dtype and w.requires_grad and w.args is None
    assert np.abs(w.array).max() <= 1 / math.sqrt(64) * (1 + 1e-3) and w.array.std() > 0
    (w * 2).sum().backward()  # still a leaf that trains
    assert w.grad is not None


@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_a_gpu_tensor_stays_on_its_device(cp):
    w = nn.Linear(64, 32).to_gpu(0).weights
    tricycle.manual_seed(1)
    init.normal_(w, std=0.5)
    assert backend.is_cupy_array(w.array) and w.dtype == np.float32
    host = Tensor(np.zeros((64, 32), np.float32))
    tricycle.manual_seed(1)
    np.testing.assert_array_equal(w.numpy(), init.normal_(host, std=0.5).array)


# ====================================================================== a model's own init
class Block(nn.Module):
    def __init__(self, n_embd):
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        return self.c_proj(self.c_fc(x).relu())


class TinyGPT(nn.Module):
    """nanoGPT's initialisation: N(0, 0.02) for Linear and Embedding weights, zero biases,
    and the residual projections scaled by 1 / sqrt(2 * n_layer)."""

    def __init__(self, vocab=50, n_embd=32, n_layer=2):
        self.wte = nn.Embedding(vocab, n_embd)
        self.h = nn.ModuleList([Block(n_embd) for _ in range(n_layer)])
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weights"):
                init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            init.normal_(module.weights, mean=0.0, std=0.02)
            if module.bias is not None:
                init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            init.normal_(module.weights, mean=0.0, std=0.02)

    def forward(self, ids):
        x = self.wte(ids)
        for block in self.h:
            x = x + block(x)
        return self.lm_head(x)


def test_a_nanogpt_style_init_weights_through_apply():
    tricycle.manual_seed(0)
    model = TinyGPT()
    params = dict(model.named_parameters())
    for name, p in params.items():
        if name.endswith("bias"):
            assert np.all(p.array == 0), name
        else:
            std = 0.02 / math.sqrt(4) if name.endswith("c_proj.weights") else 0.02
            assert p.array.std() == pytest.approx(std, rel=0.15), name
    tricycle.manual_seed(0)
    again = dict(TinyGPT().named_parameters())
    assert all(np.array_equal(p.array, again[name].array) for name, p in params.items())
    ids = np.random.default_rng(0).integers(0, 50, size=(2, 5))
    model(tricycle.to_tensor(ids, dtype=int)).sum().backward()
    assert all(p.grad is not None for p in params.values())


# ====================================================================== errors
@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: init.normal_(np.zeros(3)), TypeError, "nn.init.normal_: tensor must be a Tensor"),
        (lambda: init.uniform_(Tensor(np.zeros(3, np.int64))), TypeError, "floating"),
        (lambda: init.normal_(Tensor(np.zeros(3)), std=-1.0), ValueError, "std"),
        (lambda: init.uniform_(Tensor(np.zeros(3)), 1.0, 0.0), ValueError, "nn.init.uniform_: b"),
        (lambda: init.xavier_uniform_(Tensor(np.zeros(3))), ValueError, "2 or more axes"),
        (lambda: init.kaiming_normal_(Tensor(np.zeros((2, 2))), mode="in"), ValueError, "mode"),
        (
            lambda: init.kaiming_uniform_(Tensor(np.zeros((2, 2))), nonlinearity="gelu"),
            ValueError,
            "nonlinearity",
        ),  # fmt: skip
        (lambda: init.calculate_gain("leaky_relu", "0.1"), TypeError, "param"),
        (lambda: init.eye_(Tensor(np.zeros((2, 2, 2)))), ValueError, "nn.init.eye_"),
        (lambda: init.orthogonal_(Tensor(np.zeros(4))), ValueError, "2 or more axes"),
        (lambda: init.trunc_normal_(Tensor(np.zeros(4)), a=1.0, b=0.0), ValueError, "b"),
        (lambda: init.trunc_normal_(Tensor(np.zeros(4)), a=8.0, b=9.0), ValueError, "share"),
        (lambda: init.constant_(Tensor(np.zeros(4)), "1"), TypeError, "val"),
    ],
)
def test_bad_arguments_are_refused(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_tensor_in_a_graph_is_refused():
    y = Tensor(np.ones((3, 3))) * 2
    with pytest.raises(RuntimeError, match="made by an op in a graph"):
        init.normal_(y)
    np.testing.assert_array_equal(y.array, 2)
