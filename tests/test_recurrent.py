"""RNN, GRU and LSTM: the sequence op against finite differences over random shapes, the
layers against torch.nn (multi-layer, batch-first both ways, initial states, every gradient),
PyTorch's parameter names, carried state for truncated backpropagation, and errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import (
    as_float64,
    assert_grads_as_torch,
    check_grads,
    randn,
    same_on_host_and,
)
from tricycle.nn.recurrent import CELLS, GRU, LSTM, RNN, recurrence
from tricycle.tensor import Tensor, to_tensor

LAYERS = {"rnn": RNN, "gru": GRU, "lstm": LSTM}


@given(
    cell=st.sampled_from(sorted(CELLS)),
    T=st.integers(1, 3),
    N=st.integers(1, 2),
    H=st.integers(1, 3),
    bias=st.booleans(),
)
def test_recurrence_gradients_match_finite_differences(cell, T, N, H, bias):
    G = CELLS[cell][0]
    lstm = cell == "lstm"

    def f(xg, w_hh, h0, *rest):
        b_hh = rest[0] if bias else None
        c0 = rest[-1] if lstm else None
        return recurrence(cell, xg, w_hh, b_hh, h0, c0)

    arrays = [randn(T, N, G * H, seed=1), randn(G * H, H, seed=2, scale=0.7), randn(N, H, seed=3)]
    arrays += [randn(G * H, seed=4)] if bias else []
    arrays += [randn(N, H, seed=5)] if lstm else []
    check_grads(f, *arrays, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cell", sorted(LAYERS))
def test_layer_gradients_match_finite_differences(cell):
    """Two layers, x used twice (a diamond: into the LSTM and times its output)."""
    np.random.seed(0)
    layer = as_float64(LAYERS[cell](3, 3, num_layers=2))

    def f(x, h0):
        state = (h0, h0 * 0.5) if cell == "lstm" else h0
        outputs, _ = layer(x, state)
        return outputs * x

    check_grads(f, randn(4, 2, 3, seed=1), randn(2, 2, 3, seed=2), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cell", sorted(LAYERS))
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("initial_state", [True, False], ids=["state", "zeros"])
def test_layers_match_pytorch(cell, batch_first, bias, initial_state):
    torch = pytest.importorskip("torch")
    T, N, width, H, L = 5, 3, 4, 6, 2
    theirs = getattr(torch.nn, cell.upper())(width, H, L, bias=bias, batch_first=batch_first)
    theirs = theirs.double()
    ours = LAYERS[cell](width, H, L, bias=bias, batch_first=batch_first)
    state_dict = {k: v.numpy() for k, v in theirs.state_dict().items()}
    assert list(state_dict) == [name for name, _ in ours.named_parameters()]  # torch's names
    as_float64(ours).load_state_dict(state_dict)
    theirs.flatten_parameters()  # what word_language_model does after a load: nothing changes
    assert ours.flatten_parameters() is None

    x = randn(*((N, T, width) if batch_first else (T, N, width)), seed=1)
    states = [randn(L, N, H, seed=2), randn(L, N, H, seed=3)][: 2 if cell == "lstm" else 1]
    t_x = torch.tensor(x, requires_grad=True)
    t_states = [torch.tensor(s, requires_grad=True) for s in states]
    X, S = Tensor(x), [Tensor(s) for s in states]
    pack = (lambda s: tuple(s)) if cell == "lstm" else (lambda s: s[0])
    t_out, t_final = theirs(t_x, pack(t_states) if initial_state else None)
    out, final = ours(X, pack(S) if initial_state else None)

    t_finals = list(t_final) if cell == "lstm" else [t_final]
    finals = list(final) if cell == "lstm" else [final]
    weights = [randn(*out.shape, seed=4)] + [randn(L, N, H, seed=5 + i) for i in range(len(finals))]
    sum(  # every output gets a distinct upstream gradient
        (t * torch.tensor(w)).sum() for t, w in zip([t_out, *t_finals], weights)
    ).backward()
    total = (out * Tensor(weights[0])).sum()
    for f, w in zip(finals, weights[1:]):
        total = total + (f * Tensor(w)).sum()
    total.backward()

    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for f, t in zip(finals, t_finals):
        assert f.shape == (L, N, H)
        np.testing.assert_allclose(f.array, t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    if initial_state:
        for s, t in zip(S, t_states):
            np.testing.assert_allclose(s.grad.array, t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_grads_as_torch(ours, theirs)


@pytest.mark.parametrize("cell", sorted(LAYERS))
def test_a_carried_state_continues_the_sequence(cell):
    """Truncated backpropagation through time: chunks fed one after another with the
    (detached) final state of the previous one give the outputs of the whole sequence."""
    np.random.seed(1)
    layer = LAYERS[cell](3, 4, num_layers=2, batch_first=True)
    x = randn(2, 7, 3, seed=1).astype(np.float32)
    whole, _ = layer(to_tensor(x))
    first, state = layer(to_tensor(x[:, :4]))
    state = tuple(s.detach() for s in state) if cell == "lstm" else state.detach()
    second, _ = layer(to_tensor(x[:, 4:]), state)
    np.testing.assert_allclose(
        np.concatenate([first.array, second.array], axis=1), whole.array, rtol=1e-5, atol=1e-6
    )
    second.sum().backward()  # the graph stops at the detached state
    assert all(p.grad is not None for p in layer.parameters())


@pytest.mark.parametrize("cell", sorted(LAYERS))
def test_an_empty_batch_gives_empty_outputs_and_zero_gradients(cell):
    """As torch.nn's: a (T, 0, I) input gives (T, 0, H) outputs, and every weight's gradient
    is zero (a sum over no sequences)."""
    layer = LAYERS[cell](3, 4)
    x = Tensor(np.zeros((5, 0, 3), np.float32), requires_grad=True)
    out, _ = layer(x)
    assert out.shape == (5, 0, 4)
    out.backward(np.zeros(out.shape, np.float32))
    assert x.grad.shape == (5, 0, 3)
    for name, p in layer.named_parameters():
        np.testing.assert_array_equal(p.grad.array, np.zeros(p.shape), err_msg=name)


def test_initialisation_and_repr():
    np.random.seed(0)
    lstm = LSTM(5, 8, num_layers=2)
    assert lstm.weight_ih_l0.shape == (32, 5) and lstm.weight_hh_l1.shape == (32, 8)
    assert all(np.abs(p.array).max() <= 1 / np.sqrt(8) for p in lstm.parameters())
    assert lstm.num_parameters() == 4 * 8 * (5 + 8 + 2) + 4 * 8 * (8 + 8 + 2)
    assert "num_layers=2" in repr(lstm)
    assert [name for name, _ in GRU(2, 3, bias=False).named_parameters()] == [
        "weight_ih_l0",
        "weight_hh_l0",
    ]


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"num_layers": 2, "batch_first": True},
        {"bias": False, "dropout": 0.25, "num_layers": 3, "bidirectional": True},
    ],
)
def test_repr_as_torchs(args):
    """A recurrent layer prints as torch's (a model's ``print`` in a course's script): the
    sizes and only the arguments given other than their defaults, on one line (the dropout
    between layers is an argument, not a child layer), then the parameter count."""
    torch = pytest.importorskip("torch")
    for ours, theirs in (RNN, torch.nn.RNN), (GRU, torch.nn.GRU), (LSTM, torch.nn.LSTM):
        layer = ours(5, 8, **args)
        count = f"  # {layer.num_parameters():,} parameters"
        assert repr(layer) == repr(theirs(5, 8, **args)) + count


@pytest.mark.parametrize("args", [{}, {"num_layers": 2, "bias": False, "bidirectional": True}])
def test_flat_weights_names_and_parameters_as_torchs(args):
    """torch's private ``_flat_weights_names`` and ``_parameters``, as d2l's ``init_seq2seq``
    reads them: the same names in the same order, and an in-place init through
    ``_parameters[name]`` sets the layer's own weight (its forward then gives torch's
    outputs once both layers hold the same values)."""
    torch = pytest.importorskip("torch")
    import tricycle  # noqa: PLC0415

    for ours, theirs in (RNN, torch.nn.RNN), (GRU, torch.nn.GRU), (LSTM, torch.nn.LSTM):
        layer, their_layer = ours(3, 4, **args), theirs(3, 4, **args)
        assert layer._flat_weights_names == their_layer._flat_weights_names
        assert list(layer._parameters) == list(their_layer._parameters)
        for name in layer._flat_weights_names:  # d2l's init_seq2seq, then torch's values
            if "weight" in name:
                tricycle.nn.init.xavier_uniform_(layer._parameters[name])
                assert layer._parameters[name] is getattr(layer, name)
            with torch.no_grad():
                their_layer._parameters[name].copy_(torch.tensor(getattr(layer, name).numpy()))
        x = np.random.default_rng(0).normal(size=(5, 2, 3)).astype(np.float32)
        out, _ = layer(tricycle.tensor(x))
        want = their_layer(torch.tensor(x))[0].detach().numpy()
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


def test_recurrent_errors():
    lstm = LSTM(3, 4)
    with pytest.raises(ValueError, match=r"expected input \(time, batch, 3\)"):
        lstm(to_tensor(randn(5, 2, 2)))
    with pytest.raises(ValueError, match=r"expected an initial state of shape .* \(1, 2, 4\)"):
        lstm(to_tensor(randn(5, 2, 3)), (to_tensor(randn(1, 3, 4)), to_tensor(randn(1, 3, 4))))
    with pytest.raises(ValueError, match="must be a pair"):
        lstm(to_tensor(randn(5, 2, 3)), (to_tensor(randn(1, 2, 4)),))
    with pytest.raises(ValueError, match="recurrence\\(gru\\): shapes"):
        recurrence("gru", to_tensor(randn(2, 1, 6)), to_tensor(randn(6, 3)), None,
                   to_tensor(randn(1, 2)), None)  # fmt: skip
    with pytest.raises(ValueError, match="RNN: input_size must be an integer >= 1, got 0"):
        RNN(0, 3)
    with pytest.raises(ValueError, match="T >= 1"):
        lstm(to_tensor(np.zeros((0, 2, 3))))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_recurrent_layers_on_every_backend(xp, cell):
    np.random.seed(0)
    layer = LAYERS[cell](3, 4, num_layers=2, batch_first=True)
    x = randn(2, 5, 3).astype(np.float32)

    def run(array_module):
        outputs, _ = layer(Tensor(array_module.asarray(x)))
        (outputs * outputs).sum().backward()
        return outputs

    if xp is not np:
        same_on_host_and(xp, layer, run, rtol=1e-4, atol=1e-6)
        return
    # the host against itself would compare nothing: torch.nn's layer, in float32 too
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, cell.upper())(3, 4, 2, batch_first=True)
    theirs.load_state_dict({n: torch.from_numpy(p.numpy()) for n, p in layer.named_parameters()})
    expected, _ = theirs(torch.tensor(x))  # (2, 5, 4)
    (expected * expected).sum().backward()
    out = run(np)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert_grads_as_torch(layer, theirs, rtol=1e-4, atol=1e-6)
