"""torch.nn.utils' parametrizations and vector helpers against torch, in float64: weight norm
and spectral norm (the parametrizations and the older hooks) on Linear, Conv2d and
ConvTranspose2d, forward values and the gradients of every parameter over a few SGD steps,
the power iteration in training and evaluation mode; ``state_dict`` names and round trips,
``remove_parametrizations``, a custom parametrization with ``right_inverse``, ``cached``,
``parameters_to_vector``/``vector_to_parameters``, and the errors. Torch's layout of a
Linear's weight is the transpose of tricycle's: its ``dim=0`` is the output axis."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tricycle.nn as nn
from tricycle.casting import cast_parameters
from tricycle.gradcheck import gradcheck
from tricycle.nn.utils import parametrizations as PZ
from tricycle.nn.utils import parametrize as P
from tricycle.nn.utils.parametrizations import divided_by_sigma, weight_norm_value
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
RTOL, ATOL = 1e-9, 1e-11


def twins(kind: str):
    """(torch layer, tricycle layer, input) in float64, with torch's weights."""
    torch.manual_seed(0)
    if kind == "linear":
        pair = torch.nn.Linear(4, 3), nn.Linear(4, 3)
        x = np.random.default_rng(1).standard_normal((5, 4))
    elif kind == "conv":
        pair = torch.nn.Conv2d(2, 3, 3, padding=1), nn.Conv2d(2, 3, 3, padding=1)
        x = np.random.default_rng(1).standard_normal((2, 2, 4, 4))
    else:
        pair = torch.nn.ConvTranspose2d(2, 3, 3), nn.ConvTranspose2d(2, 3, 3)
        x = np.random.default_rng(1).standard_normal((2, 2, 3, 3))
    t, m = pair[0].double(), pair[1].double()
    nn.from_torch(m, t.state_dict())
    return t, m, x


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=RTOL, atol=ATOL)


def copy_state(t, m):
    """torch's state (its random u and v too) into ``m``: the names are the same."""
    nn.from_torch(m, t.state_dict())
    assert list(m.state_dict()) == list(t.state_dict())


def train_alongside(t, m, x, steps: int = 3, lr: float = 0.1):
    """A few SGD steps on both: outputs, every gradient (the input's too) and every buffer
    must match."""
    for _ in range(steps):
        xt, xm = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
        yt, ym = t(xt), m(xm)
        close(ym.numpy(), yt.detach().numpy())
        (yt * yt).sum().backward()
        (ym * ym).sum().backward()
        close(xm.grad.numpy(), xt.grad.numpy())
        grads = {name: p.grad.numpy() for name, p in t.named_parameters()}
        assert set(grads) == {name.replace("weights", "weight") for name, _ in m.named_parameters()}
        for name, p in m.named_parameters():
            grad = grads[name.replace("weights", "weight")]  # a plain layer's tricycle name
            transposed = name == "weights" and isinstance(m, nn.Linear)
            close(p.grad.numpy(), grad.T if transposed else grad)
            p.array -= lr * p.grad.array
        with torch.no_grad():
            for p in t.parameters():
                p -= lr * p.grad
        t.zero_grad()
        m.zero_grad()
        for name, b in t.named_buffers():
            close(m.state_dict()[name], b.numpy())


# ---------------------------------------------------------------------- the parametrizations
@pytest.mark.parametrize("kind", ["linear", "conv"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(kind, dim):
    t, m, x = twins(kind)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    PZ.weight_norm(m, dim=dim)
    assert type(m).__name__ == f"Parametrized{'Dense' if kind == 'linear' else 'Conv2d'}"
    assert isinstance(m, nn.Linear if kind == "linear" else nn.Conv2d)
    close(m.state_dict()["parametrizations.weight.original0"],
          t.parametrizations.weight.original0.detach().numpy())  # fmt: skip
    train_alongside(t, m, x)


def test_weight_norm_dim_0_is_torchs_output_axis():
    """A Linear's torch dim 0 is its output: one magnitude per column of (in, out) weights."""
    _, m, _ = twins("linear")
    PZ.weight_norm(m)
    g = m.parametrizations.weight.original0
    assert g.shape == (3, 1) and m.weights.shape == (4, 3)
    close(np.linalg.norm(m.weights.numpy(), axis=0), g.numpy().ravel())


@pytest.mark.parametrize("kind", ["linear", "conv", "transposed"])
def test_spectral_norm_matches_torch_in_training(kind):
    t, m, x = twins(kind)
    torch.nn.utils.parametrizations.spectral_norm(t)
    PZ.spectral_norm(m)
    assert m.parametrizations.weight[0].dim == (1 if kind == "transposed" else 0)
    copy_state(t, m)
    before = m.state_dict()["parametrizations.weight.0._u"]
    train_alongside(t, m, x)  # the buffers are compared after each step
    assert not np.allclose(m.state_dict()["parametrizations.weight.0._u"], before)


def test_spectral_norm_power_iteration_only_in_training():
    t, m, x = twins("linear")
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
    PZ.spectral_norm(m, n_power_iterations=2)
    copy_state(t, m)
    t.eval(), m.eval()
    u = m.parametrizations.weight[0]._u.numpy().copy()
    train_alongside(t, m, x, steps=2)
    close(m.parametrizations.weight[0]._u.numpy(), u)  # no iteration in evaluation mode
    t.train(), m.train()
    train_alongside(t, m, x, steps=2)
    assert not np.allclose(m.parametrizations.weight[0]._u.numpy(), u)


def test_spectral_norm_starts_near_the_largest_singular_value():
    _, m, _ = twins("linear")
    PZ.spectral_norm(m)
    m.eval()
    close(np.linalg.norm(m.weights.numpy(), 2), 1.0)


def test_state_dict_round_trip_and_torch_names():
    t, m, x = twins("conv")
    torch.nn.utils.parametrizations.spectral_norm(t)
    PZ.spectral_norm(m)
    copy_state(t, m)
    t.load_state_dict({k: torch.from_numpy(v) for k, v in nn.to_torch(m).items()})
    _, fresh, _ = twins("conv")
    PZ.spectral_norm(fresh)
    fresh.load_state_dict(m.state_dict())
    fresh.eval(), m.eval(), t.eval()
    close(fresh(Tensor(x)).numpy(), m(Tensor(x)).numpy())
    close(m(Tensor(x)).numpy(), t(torch.tensor(x)).detach().numpy())


def test_copies_and_pickles_keep_the_parametrization():
    _, m, x = twins("linear")
    PZ.weight_norm(m)
    y = m(Tensor(x)).numpy()
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(twin) is not type(m) and type(twin).__name__ == "ParametrizedDense"
        close(twin(Tensor(x)).numpy(), y)
        twin.parametrizations.weight.original0.array *= 2  # its own tensors
        assert not np.allclose(twin(Tensor(x)).numpy(), y)
    close(m(Tensor(x)).numpy(), y)


def test_a_precision_policy_casts_the_originals():
    _, m, x = twins("linear")
    PZ.weight_norm(m)
    with cast_parameters(m, np.float32):
        assert m.weights.dtype == np.float32
    assert m.weights.dtype == np.float64


@settings(max_examples=15)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=3), data=st.data())
def test_formulas_against_finite_differences(shape, data):
    """Weight norm over any axis (or all: -1) and weight / sigma, random shapes with size-1
    axes."""
    dim = data.draw(st.integers(-1, len(shape) - 1))
    rng = np.random.default_rng(len(shape) + dim)
    v = rng.standard_normal(shape) + 0.5  # no zero norm
    g_shape = () if dim == -1 else tuple(n if a == dim else 1 for a, n in enumerate(shape))
    g = rng.uniform(0.5, 2, g_shape)
    assert gradcheck(lambda v, g: weight_norm_value(v, g, dim), v, g)
    h = shape[0]
    u, w = rng.uniform(0.5, 1, h), rng.uniform(0.5, 1, v.size // h)  # sigma far from 0
    W = rng.uniform(0.5, 1.5, shape)
    assert gradcheck(lambda W: divided_by_sigma(W, W.reshape(h, -1), u, w), W)


# ---------------------------------------------------------------------- remove, custom, cached
@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    t, m, x = twins("linear")
    torch.nn.utils.parametrizations.spectral_norm(t)
    PZ.spectral_norm(m)
    copy_state(t, m)
    original = m.parametrizations.weight.original
    P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    torch.nn.utils.parametrize.remove_parametrizations(t, "weight", leave_parametrized=leave)
    assert type(m) is nn.Linear and not P.is_parametrized(m)
    assert m.weights is original and list(m.state_dict()) == ["bias", "weights"]
    close(m.weights.numpy(), t.weight.detach().numpy().T)
    train_alongside(t, m, x, steps=1)


def test_remove_weight_norm_needs_leave_parametrized():
    _, m, _ = twins("linear")
    PZ.weight_norm(m)
    value = m.weights.numpy()
    with pytest.raises(ValueError, match="leave_parametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weights")  # the layer's own name works too
    close(m.weights.numpy(), value)
    assert m.weights.requires_grad and list(m.state_dict()) == ["bias", "weights"]


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).T

    def right_inverse(self, A):
        return A.triu()


class TorchSymmetric(torch.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).T

    def right_inverse(self, A):
        return A.triu()


def test_custom_parametrization_with_right_inverse():
    torch.manual_seed(0)
    t = torch.nn.Linear(5, 5).double()
    m = nn.Linear(5, 5).double()
    nn.from_torch(m, t.state_dict())
    torch.nn.utils.parametrize.register_parametrization(t, "weight", TorchSymmetric())
    P.register_parametrization(m, "weight", Symmetric())
    close(m.weights.numpy(), m.weights.numpy().T)
    close(m.weights.numpy(), t.weight.detach().numpy().T)
    A = np.random.default_rng(2).standard_normal((5, 5))
    A = A + A.T + np.diag(np.arange(5.0))
    m.weights = A
    with torch.no_grad():
        t.weight = torch.tensor(A)
    close(m.weights.numpy(), A)
    close(m.state_dict()["parametrizations.weight.original"], np.triu(A))
    x = np.random.default_rng(3).standard_normal((4, 5))
    train_alongside(t, m, x, steps=2)


def test_composed_parametrizations_and_cached():
    t, m, x = twins("linear")
    for register, module in ((torch.nn.utils.parametrize, t), (P, m)):
        scale = (lambda W: 2 * W) if module is m else _TorchScale()
        register.register_parametrization(module, "weight", scale)
    torch.nn.utils.parametrizations.spectral_norm(t)
    PZ.spectral_norm(m)
    copy_state(t, m)
    assert len(m.parametrizations.weight) == 2
    with P.cached(), torch.nn.utils.parametrize.cached():
        assert m.weights is m.weights  # computed once: one power iteration
        assert t.weight is t.weight
    for name, b in t.named_buffers():
        close(m.state_dict()[name], b.numpy())
    train_alongside(t, m, x, steps=2)
    assert m.weights is not m.weights


class _TorchScale(torch.nn.Module):
    def forward(self, W):
        return 2 * W


# ---------------------------------------------------------------------- the older API
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_old_weight_norm_matches_torch(kind):
    t, m, x = twins(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(t)
    nn.utils.weight_norm(m)
    assert list(m.state_dict()) == list(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    train_alongside(t, m, x)
    torch.nn.utils.remove_weight_norm(t)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weights"] and type(m) in (nn.Linear, nn.Conv2d)
    train_alongside(t, m, x, steps=1)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_old_spectral_norm_matches_torch(kind):
    t, m, x = twins(kind)
    torch.nn.utils.spectral_norm(t, n_power_iterations=2)
    nn.utils.spectral_norm(m, n_power_iterations=2)
    assert list(m.state_dict()) == list(t.state_dict())
    assert list(t.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    copy_state(t, m)
    train_alongside(t, m, x)
    t.eval(), m.eval()
    train_alongside(t, m, x, steps=1)
    torch.nn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weights"] and m._hooks is None
    close(m.weights.numpy(), t.weight.detach().numpy().T if kind == "linear" else t.weight.detach())


# ---------------------------------------------------------------------- vectors
def test_parameters_to_vector_round_trip():
    t, m, _ = twins("conv")
    vec = nn.utils.parameters_to_vector(m.parameters())
    close(vec.numpy(), torch.nn.utils.parameters_to_vector(t.parameters()).detach().numpy())
    (vec * Tensor(np.arange(vec.size, dtype=np.float64))).sum().backward()
    close(m.weights.grad.numpy().ravel(), np.arange(m.weights.size))
    nn.utils.vector_to_parameters(Tensor(-vec.numpy()), m.parameters())
    close(nn.utils.parameters_to_vector(m).numpy(), -vec.numpy())
    assert m.weights.shape == (3, 2, 3, 3) and m.weights.dtype == np.float64


# ---------------------------------------------------------------------- errors
def test_errors_name_the_problem():
    _, m, _ = twins("linear")
    with pytest.raises(ValueError, match=r"no parameter or buffer named 'kernel'.*weights"):
        P.register_parametrization(m, "kernel", Symmetric())
    with pytest.raises(ValueError, match="bias is None, not a tensor"):
        PZ.weight_norm(nn.Linear(4, 3, bias=False), "bias")
    with pytest.raises(TypeError, match="module"):
        P.register_parametrization(object(), "weight", Symmetric())
    weights = m.weights.numpy().copy()
    with pytest.raises(ValueError, match="shape"):
        P.register_parametrization(m, "weight", lambda W: W[:2])
    assert type(m) is nn.Linear and m.weights.shape == (4, 3)  # nothing changed
    close(m.weights.numpy(), weights)
    with pytest.raises(ValueError, match="no parametrization"):
        P.remove_parametrizations(m, "weight")
    with pytest.raises(ValueError, match="dim"):
        PZ.weight_norm(m, dim=2)
    with pytest.raises(ValueError, match="n_power_iterations"):
        PZ.spectral_norm(m, n_power_iterations=0)
    P.register_parametrization(m, "weight", lambda W: 2 * W)
    with pytest.raises(ValueError, match="right_inverse"):
        m.weights = weights
    with pytest.raises(ValueError, match="computed by a parametrization already"):
        nn.utils.weight_norm(m, "weights")
    _, old, _ = twins("linear")
    nn.utils.weight_norm(old)
    with pytest.raises(AttributeError, match="weight_norm"):
        old.weights = weights
    with pytest.raises(ValueError, match="computed by weight_norm"):
        nn.utils.spectral_norm(old)
    with pytest.raises(ValueError, match="no spectral_norm"):
        nn.utils.remove_spectral_norm(old)
    with pytest.raises(ValueError, match="total size 15"):
        nn.utils.vector_to_parameters(Tensor(np.zeros(14)), m.parameters())
    with pytest.raises(TypeError, match="Tensor"):
        nn.utils.vector_to_parameters(np.zeros(15), m.parameters())
