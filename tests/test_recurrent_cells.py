"""RNNCell (tanh and ReLU), GRUCell and LSTMCell, and the ReLU RNN, against torch.nn: outputs and
the gradients of the inputs, the states and every parameter, batched and unbatched, with and
without bias, over a loop of steps that reuses the cell; the ReLU cell's own kernels (none:
never the tanh ones); finite differences; PyTorch's names, argument order and errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import as_float64, check_grads, randn, same_on_host_and
from tricycle import dispatch
from tricycle.nn.recurrent import GRU, LSTM, RNN, recurrent_layer
from tricycle.nn.recurrent_cell_layers import GRUCell, LSTMCell, RNNCell
from tricycle.nn.recurrent_cells import CELLS, recurrence
from tricycle.tensor import Tensor, to_tensor

# our cell, torch's class name and its keyword arguments
CELL_LAYERS = {
    "rnn": (RNNCell, "RNNCell", {}),
    "rnn_relu": (RNNCell, "RNNCell", {"nonlinearity": "relu"}),
    "gru": (GRUCell, "GRUCell", {}),
    "lstm": (LSTMCell, "LSTMCell", {}),
}


def torch_and_ours(torch, ours_class, theirs_name, *args, **kwargs):
    """A torch.nn layer in float64 and ours with its weights, names checked to agree."""
    theirs = getattr(torch.nn, theirs_name)(*args, **kwargs).double()
    ours = ours_class(*args, **kwargs)
    state_dict = {k: v.numpy() for k, v in theirs.state_dict().items()}
    assert list(state_dict) == [name for name, _ in ours.named_parameters()]  # torch's names
    for name, p in ours.named_parameters():
        assert p.shape == state_dict[name].shape, name
    as_float64(ours).load_state_dict(state_dict)
    return theirs, ours


def assert_close(ours, theirs, rtol=1e-10, atol=1e-12, name=""):
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)


def assert_same_parameter_grads(ours, theirs):
    params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad.array, params[name].grad, rtol=1e-9, name=name)


@pytest.mark.parametrize("cell", sorted(CELL_LAYERS))
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("steps", [1, 3])
def test_cells_match_pytorch(cell, batched, bias, steps):
    """``steps`` calls of one cell, each reading the state of the one before and its own
    input; every step's state gets a distinct upstream gradient."""
    torch = pytest.importorskip("torch")
    ours_class, theirs_name, kwargs = CELL_LAYERS[cell]
    N, width, H = 3, 4, 5
    theirs, ours = torch_and_ours(torch, ours_class, theirs_name, width, H, bias=bias, **kwargs)
    lead = (N,) if batched else ()
    xs = [randn(*lead, width, seed=10 + t) for t in range(steps)]
    states = [randn(*lead, H, seed=2 + i) for i in range(2 if cell == "lstm" else 1)]
    pack = tuple if cell == "lstm" else (lambda s: s[0])
    unpack = list if cell == "lstm" else (lambda s: [s])

    t_xs = [torch.tensor(x, requires_grad=True) for x in xs]
    t_states = [torch.tensor(s, requires_grad=True) for s in states]
    Xs, S = [Tensor(x) for x in xs], [Tensor(s) for s in states]
    t_hx, hx, t_total, total = pack(t_states), pack(S), 0, 0
    for t in range(steps):
        t_hx, hx = theirs(t_xs[t], t_hx), ours(Xs[t], hx)
        for k, (mine, their) in enumerate(zip(unpack(hx), unpack(t_hx))):
            assert mine.shape == tuple(their.shape) == (*lead, H)
            assert_close(mine.array, their, name=f"step {t}, state {k}")
            w = randn(*lead, H, seed=100 + 10 * t + k)
            t_total = t_total + (their * torch.tensor(w)).sum()
            total = total + (mine * Tensor(w)).sum()
    t_total.backward()
    total.backward()

    for t, (X, t_x) in enumerate(zip(Xs, t_xs)):
        assert_close(X.grad.array, t_x.grad, rtol=1e-9, name=f"input {t}")
    for k, (s, t_s) in enumerate(zip(S, t_states)):
        assert_close(s.grad.array, t_s.grad, rtol=1e-9, name=f"state {k}")
    assert_same_parameter_grads(ours, theirs)


@pytest.mark.parametrize("cell", sorted(CELL_LAYERS))
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_no_state_is_zeros_as_in_pytorch(cell, batched):
    torch = pytest.importorskip("torch")
    ours_class, theirs_name, kwargs = CELL_LAYERS[cell]
    theirs, ours = torch_and_ours(torch, ours_class, theirs_name, 3, 4, **kwargs)
    x = randn(*((2, 3) if batched else (3,)), seed=1)
    t_new, new = theirs(torch.tensor(x)), ours(Tensor(x))
    if cell != "lstm":
        t_new, new = [t_new], [new]
    for mine, their in zip(new, t_new, strict=True):
        assert_close(mine.array, their)


@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-way", "bidirectional"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_relu_rnn_matches_pytorch(num_layers, bidirectional, batched):
    """With whatever kernels the CPU has (none is the ReLU cell's: a tanh kernel taking its
    place would not match)."""
    torch = pytest.importorskip("torch")
    T, N, width, H, D = 5, 2, 3, 4, 1 + bidirectional
    # positional as in PyTorch: nonlinearity is the fourth argument
    theirs, ours = torch_and_ours(
        torch, RNN, "RNN", width, H, num_layers, "relu", batch_first=True,
        bidirectional=bidirectional,
    )  # fmt: skip
    assert ours.cell == "rnn_relu" and ours.bias is True
    x = randn(*((N, T, width) if batched else (T, width)), seed=1)
    h0 = randn(*((num_layers * D, N, H) if batched else (num_layers * D, H)), seed=2)
    t_x, t_h0 = torch.tensor(x, requires_grad=True), torch.tensor(h0, requires_grad=True)
    X, H0 = Tensor(x), Tensor(h0)
    t_out, t_h_n = theirs(t_x, t_h0)
    out, h_n = ours(X, H0)
    assert_close(out.array, t_out)
    assert_close(h_n.array, t_h_n)
    assert (out.array == 0).any()  # some units are off: the ReLU, not a tanh

    w_out, w_h = randn(*out.shape, seed=3), randn(*h_n.shape, seed=4)
    ((t_out * torch.tensor(w_out)).sum() + (t_h_n * torch.tensor(w_h)).sum()).backward()
    ((out * Tensor(w_out)).sum() + (h_n * Tensor(w_h)).sum()).backward()
    assert_close(X.grad.array, t_x.grad, rtol=1e-9)
    assert_close(H0.grad.array, t_h0.grad, rtol=1e-9)
    assert_same_parameter_grads(ours, theirs)


def test_the_relu_cell_asks_for_its_own_kernels_only(monkeypatch):
    """The ops' kernels are looked up by the cell's name: the ReLU RNN asks for
    "rnn_relu_cell" and "rnn_relu_recurrence", which no backend registers, and gets the
    references; the tanh RNN's "rnn_cell" has a CPU kernel (with numba) it never sees."""
    asked = []
    choose = dispatch.choose

    def spy(op, reference, *arrays):
        chosen = choose(op, reference, *arrays)
        asked.append((op, chosen is reference))
        return chosen

    monkeypatch.setattr(dispatch, "choose", spy)
    for layer in (RNN(3, 4, nonlinearity="relu", bidirectional=True), RNNCell(3, 4, False, "relu")):
        x = to_tensor(randn(*((5, 2, 3) if isinstance(layer, RNN) else (2, 3)), seed=1))
        out = layer(x)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
    ops = {op for op, _ in asked if "rnn" in op}
    assert ops == {"rnn_relu_cell", "rnn_relu_recurrence"}, asked
    assert all(is_reference for op, is_reference in asked if op in ops), asked
    if dispatch.available("cpu"):  # the tanh cell's kernel is there, for the tanh cell
        tanh_pair = CELLS["rnn"][1:]
        assert choose("rnn_cell", tanh_pair, np.zeros((2, 4), np.float32)) is not tanh_pair


def _relu_layer(x, w_ih, w_hh, b_ih, b_hh, h0):
    return recurrent_layer("rnn_relu", x, w_ih, w_hh, b_ih, b_hh, h0, None)


@pytest.mark.parametrize("seed", [0, 1])
def test_relu_cell_gradients_match_finite_differences(seed):
    """Every input of a ReLU layer over three steps, some units off."""
    T, N, width, H = 3, 2, 3, 4
    arrays = [randn(T, N, width, seed=seed), randn(H, width, seed=seed + 1),
              randn(H, H, seed=seed + 2, scale=0.5), randn(H, seed=seed + 3),
              randn(H, seed=seed + 4), randn(N, H, seed=seed + 5)]  # fmt: skip
    states = _relu_layer(*map(Tensor, arrays)).array
    assert (states == 0).any() and (states > 0).any()
    check_grads(_relu_layer, *arrays, rtol=1e-5, atol=1e-7)


@given(N=st.integers(1, 3), width=st.integers(1, 3), H=st.integers(1, 3), bias=st.booleans())
def test_relu_cell_loop_gradients_match_finite_differences(N, width, H, bias):
    """Random sizes: the ReLU cell called twice, x used by both steps (a diamond)."""
    np.random.seed(0)
    cell = as_float64(RNNCell(width, H, bias=bias, nonlinearity="relu"))

    def f(x, h):
        return cell(x * 0.5, cell(x, h)) * h

    check_grads(f, randn(N, width, seed=1), randn(N, H, seed=2), rtol=1e-5, atol=1e-7)


def test_names_initialisation_and_repr():
    np.random.seed(0)
    lstm = LSTMCell(5, 8)
    assert lstm.weight_ih.shape == (32, 5) and lstm.weight_hh.shape == (32, 8)
    assert lstm.bias_ih.shape == lstm.bias_hh.shape == (32,)
    assert all(np.abs(p.array).max() <= 1 / np.sqrt(8) for p in lstm.parameters())
    assert GRUCell(5, 8, bias=False).num_parameters() == 3 * 8 * (5 + 8)
    assert [name for name, _ in RNNCell(2, 3, bias=False).named_parameters()] == [
        "weight_ih",
        "weight_hh",
    ]
    assert repr(RNNCell(2, 3, False, "relu")).startswith(
        "RNNCell(2, 3, bias=False, nonlinearity='relu')"
    )
    assert "nonlinearity" not in repr(RNNCell(2, 3)) and "nonlinearity" not in repr(RNN(2, 3))
    assert "nonlinearity='relu'" in repr(RNN(2, 3, 1, "relu"))


def test_errors():
    for make in (lambda: RNN(4, 8, nonlinearity="sigmoid"), lambda: RNNCell(4, 8, True, "Tanh")):
        with pytest.raises(ValueError, match=r"nonlinearity must be one of 'tanh', 'relu', got"):
            make()
    with pytest.raises(ValueError, match=r"^RNN: nonlinearity .* got 'sigmoid'$"):
        RNN(4, 8, 2, "sigmoid")
    for layer in (GRU, LSTM):  # no nonlinearity: bias is their fourth, and takes no string
        with pytest.raises(TypeError, match=rf"^{layer.__name__}: bias must be True or False"):
            layer(4, 8, 2, "relu")
    with pytest.raises(TypeError, match=r"^RNNCell: bias must be True or False, got 'relu'$"):
        RNNCell(4, 8, "relu")
    with pytest.raises(ValueError, match=r"^recurrence: cell must be one of .*'rnn_relu'"):
        recurrence("relu", to_tensor(randn(1, 1, 1)), to_tensor(randn(1, 1)), None,
                   to_tensor(randn(1, 1)), None)  # fmt: skip

    cell, lstm = RNNCell(3, 4), LSTMCell(3, 4)
    expected = r"RNNCell: expected input \(batch, 3\) \(2-D\) or unbatched \(3,\) \(1-D\), got"
    for shape in [(2, 2), (1, 2, 3), (3, 1), ()]:
        with pytest.raises(ValueError, match=expected):
            cell(to_tensor(np.zeros(shape)))
    with pytest.raises(ValueError, match=r"RNNCell: .*\(batch, hidden\) = \(2, 4\), got \(1, 4\)"):
        cell(to_tensor(randn(2, 3)), to_tensor(randn(1, 4)))
    with pytest.raises(ValueError, match=r"GRUCell: .*\(hidden,\) for an unbatched input = \(4,\), "
                       r"got \(1, 4\)"):  # fmt: skip
        GRUCell(3, 4)(to_tensor(randn(3)), to_tensor(randn(1, 4)))
    with pytest.raises(ValueError, match=r"LSTMCell: the state must be a pair \(h, c\)"):
        lstm(to_tensor(randn(2, 3)), to_tensor(randn(2, 4)))
    with pytest.raises(ValueError, match=r"LSTMCell: .* = \(2, 4\), got \(2, 5\)"):
        lstm(to_tensor(randn(2, 3)), (to_tensor(randn(2, 4)), to_tensor(randn(2, 5))))


@pytest.mark.parametrize("cell", ["rnn_relu", "lstm"])
def test_cells_on_every_backend(xp, cell):
    """A loop of three steps, in float32, with the host's or the device's kernels."""
    np.random.seed(0)
    ours_class, theirs_name, kwargs = CELL_LAYERS[cell]
    layer = ours_class(3, 4, **kwargs)
    xs = randn(3, 2, 3).astype(np.float32)

    def run(array_module):
        state, total = None, 0
        for x in xs:
            state = layer(Tensor(array_module.asarray(x)), state)
            h = state[0] if cell == "lstm" else state
            total = total + (h * h).sum()
        total.backward()
        return h

    if xp is not np:
        same_on_host_and(xp, layer, run, rtol=1e-4, atol=1e-6)
        return
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, theirs_name)(3, 4, **kwargs)
    theirs.load_state_dict({n: torch.from_numpy(p.numpy()) for n, p in layer.named_parameters()})
    state, total = None, 0
    for x in xs:
        state = theirs(torch.tensor(x), state)
        total = total + ((state[0] if cell == "lstm" else state) ** 2).sum()
    total.backward()
    expected = state[0] if cell == "lstm" else state
    assert_close(run(np).array, expected, rtol=1e-4, atol=1e-6)
    params = dict(theirs.named_parameters())
    for name, p in layer.named_parameters():
        assert_close(p.grad.array, params[name].grad, rtol=1e-4, atol=1e-6, name=name)
