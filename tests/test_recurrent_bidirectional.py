"""Bidirectional and unbatched RNN, GRU and LSTM against torch.nn: outputs, final states and
the gradients of the input, the initial state and every parameter, for one and two layers,
batch-first both ways; PyTorch's parameter names and state order; dropout between layers;
finite differences; and the errors of wrong ranks and shapes."""

import numpy as np
import pytest

from tests.helpers import (
    as_float64,
    assert_grads_as_torch,
    check_grads,
    randn,
    same_on_host_and,
)
from tricycle.layers import Dropout
from tricycle.nn.recurrent import GRU, LSTM, RNN
from tricycle.tensor import Tensor, to_tensor

LAYERS = {"rnn": RNN, "gru": GRU, "lstm": LSTM}


def torch_and_ours(torch, cell, width, H, L, **kwargs):
    """A torch.nn layer in float64 and ours with its weights, names checked to agree."""
    theirs = getattr(torch.nn, cell.upper())(width, H, L, **kwargs).double()
    ours = LAYERS[cell](width, H, L, **kwargs)
    state_dict = {k: v.numpy() for k, v in theirs.state_dict().items()}
    assert list(state_dict) == [name for name, _ in ours.named_parameters()]  # torch's names
    as_float64(ours).load_state_dict(state_dict)
    return theirs, ours


@pytest.mark.parametrize("cell", sorted(LAYERS))
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-way", "bidirectional"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_layers_match_pytorch(cell, num_layers, batch_first, bidirectional, batched):
    torch = pytest.importorskip("torch")
    T, N, width, H, L, D = 4, 2, 3, 5, num_layers, 1 + bidirectional
    theirs, ours = torch_and_ours(
        torch, cell, width, H, L, batch_first=batch_first, bidirectional=bidirectional
    )
    assert ours.weight_ih_l0.shape == (ours.weight_hh_l0.shape[0], width)
    if L == 2:  # the layer above reads both directions
        assert ours.weight_ih_l1.shape[1] == D * H
    x_shape = (N, T, width) if batch_first else (T, N, width)
    x = randn(*(x_shape if batched else (T, width)), seed=1)
    state_shape = (L * D, N, H) if batched else (L * D, H)
    states = [randn(*state_shape, seed=2 + i) for i in range(2 if cell == "lstm" else 1)]
    pack = tuple if cell == "lstm" else (lambda s: s[0])

    t_x = torch.tensor(x, requires_grad=True)
    t_states = [torch.tensor(s, requires_grad=True) for s in states]
    t_out, t_final = theirs(t_x, pack(t_states))
    X, S = Tensor(x), [Tensor(s) for s in states]
    out, final = ours(X, pack(S))

    t_finals = list(t_final) if cell == "lstm" else [t_final]
    finals = list(final) if cell == "lstm" else [final]
    assert out.shape == tuple(t_out.shape) == x.shape[:-1] + (D * H,)
    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    for f, t in zip(finals, t_finals):
        assert f.shape == state_shape
        np.testing.assert_allclose(f.array, t.detach().numpy(), rtol=1e-10, atol=1e-12)

    weights = [randn(*out.shape, seed=6)] + [randn(*state_shape, seed=7 + i) for i in range(2)]
    sum((t * torch.tensor(w)).sum() for t, w in zip([t_out, *t_finals], weights)).backward()
    total = (out * Tensor(weights[0])).sum()
    for f, w in zip(finals, weights[1:]):
        total = total + (f * Tensor(w)).sum()
    total.backward()
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for s, t in zip(S, t_states):
        np.testing.assert_allclose(s.grad.array, t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_grads_as_torch(ours, theirs)


@pytest.mark.parametrize("cell", sorted(LAYERS))
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_no_initial_state_is_zeros_as_in_pytorch(cell, batched):
    torch = pytest.importorskip("torch")
    theirs, ours = torch_and_ours(torch, cell, 3, 4, 2, bidirectional=True)
    x = randn(*((5, 2, 3) if batched else (5, 3)), seed=1)
    t_out, t_final = theirs(torch.tensor(x))
    out, final = ours(Tensor(x))
    np.testing.assert_allclose(out.array, t_out.detach().numpy(), rtol=1e-10, atol=1e-12)
    t_finals = list(t_final) if cell == "lstm" else [t_final]
    for f, t in zip(list(final) if cell == "lstm" else [final], t_finals):
        np.testing.assert_allclose(f.array, t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_dropout_acts_between_layers_on_both_directions():
    """In training the output of layer 0 (both directions joined, (T, N, 2H)) goes through
    the dropout, and what comes out is what layer 1 reads; the top layer's output is not
    dropped. Checked against torch's one-layer GRUs with each layer's weights."""
    torch = pytest.importorskip("torch")
    seen = []

    class Recorded(Dropout):
        def forward(self, x):
            out = super().forward(x)
            seen.append((x.array.copy(), out.array.copy()))
            return out

    T, N, width, H = 6, 3, 2, 4
    theirs, ours = torch_and_ours(torch, "gru", width, H, 2, dropout=0.5, bidirectional=True)
    ours.inter_layer_dropout = Recorded(0.5, seed=0)
    x = randn(T, N, width, seed=1)
    out, h_n = ours(Tensor(x))
    ((dropped_in, dropped_out),) = seen  # once: between the two layers
    assert dropped_in.shape == (T, N, 2 * H)
    assert (dropped_out == 0).any() and np.isclose(dropped_out, 2 * dropped_in).any()

    layers = []
    for k in range(2):
        one = torch.nn.GRU(width if k == 0 else 2 * H, H, bidirectional=True).double()
        mine = {n: v for n, v in theirs.state_dict().items() if f"_l{k}" in n}
        one.load_state_dict({n.replace(f"_l{k}", "_l0"): v for n, v in mine.items()})
        layers.append(one)
    below, h_below = layers[0](torch.tensor(x))
    above, h_above = layers[1](torch.tensor(dropped_out))
    np.testing.assert_allclose(dropped_in, below.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(out.array, above.detach().numpy(), rtol=1e-10, atol=1e-12)
    expected_h = torch.cat([h_below, h_above]).detach().numpy()
    np.testing.assert_allclose(h_n.array, expected_h, rtol=1e-10, atol=1e-12)
    ours.eval()  # and none in eval mode: torch's layer in eval mode exactly
    np.testing.assert_allclose(
        ours(Tensor(x))[0].array, theirs.eval()(torch.tensor(x))[0].detach().numpy(), rtol=1e-10
    )


@pytest.mark.parametrize("cell", sorted(LAYERS))
def test_bidirectional_gradients_match_finite_differences(cell):
    """Two bidirectional layers, unbatched; x used twice (into the layer and times a slice
    of its output)."""
    np.random.seed(0)
    layer = as_float64(LAYERS[cell](2, 2, num_layers=2, bidirectional=True))

    def f(x, h0):
        state = (h0, h0 * 0.5) if cell == "lstm" else h0
        outputs, final = layer(x, state)
        h_n = final[0] if cell == "lstm" else final
        return (outputs[:, :2] * x).sum() + (h_n * h_n).sum()

    check_grads(f, randn(3, 2, seed=1), randn(4, 2, seed=2), rtol=1e-5, atol=1e-7)


def test_parameters_and_repr():
    lstm = LSTM(5, 8, num_layers=2, bidirectional=True)
    assert lstm.weight_ih_l0_reverse.shape == (32, 5) and lstm.weight_ih_l1.shape == (32, 16)
    per_direction = 4 * 8 * (5 + 8 + 2) + 4 * 8 * (16 + 8 + 2)
    assert lstm.num_parameters() == 2 * per_direction
    assert "bidirectional=True" in repr(lstm) and "bidirectional" not in repr(LSTM(5, 8))
    assert [name for name, _ in GRU(2, 3, bias=False, bidirectional=True).named_parameters()] == [
        "weight_ih_l0",
        "weight_hh_l0",
        "weight_ih_l0_reverse",
        "weight_hh_l0_reverse",
    ]


def test_wrong_ranks_and_states_are_errors():
    rnn = RNN(3, 4, num_layers=2, bidirectional=True)
    ranks = r"RNN: expected input \(time, batch, 3\) \(3-D\) or unbatched \(time, 3\) \(2-D\)"
    for shape in [(5,), (1, 5, 2, 3), (5, 2)]:
        with pytest.raises(ValueError, match=ranks + rf", got shape \({shape[0]},"):
            rnn(to_tensor(np.zeros(shape)))
    with pytest.raises(ValueError, match=r"GRU: expected input \(batch, time, 3\) \(3-D\)"):
        GRU(3, 4, batch_first=True)(to_tensor(np.zeros((2, 5, 3, 1))))
    x, x1 = to_tensor(randn(5, 2, 3)), to_tensor(randn(5, 3))
    with pytest.raises(ValueError, match=r"\(num_layers \* num_directions, batch, hidden\) = "
                       r"\(4, 2, 4\), got \(2, 2, 4\)"):  # fmt: skip
        rnn(x, to_tensor(randn(2, 2, 4)))
    with pytest.raises(ValueError, match=r"RNN: .*\(num_layers \* num_directions, hidden\) for "
                       r"an unbatched input = \(4, 4\), got \(4, 1, 4\)"):  # fmt: skip
        rnn(x1, to_tensor(randn(4, 1, 4)))
    with pytest.raises(ValueError, match=r"= \(4, 2, 4\), got \(4, 4\)"):
        rnn(x, to_tensor(randn(4, 4)))
    lstm = LSTM(3, 4, bidirectional=True)
    with pytest.raises(ValueError, match=r"LSTM: .* for an unbatched input = \(2, 4\)"):
        lstm(x1, (to_tensor(randn(2, 4)), to_tensor(randn(1, 4))))
    with pytest.raises(ValueError, match="must be a pair"):
        lstm(x1, (to_tensor(randn(2, 4)),))
    with pytest.raises(TypeError, match="bidirectional"):
        LSTM(3, 4, bidirectional=1)
    with pytest.raises(ValueError, match="T >= 1"):
        lstm(to_tensor(np.zeros((0, 3))))


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_bidirectional_layers_on_every_backend(xp, batched):
    np.random.seed(0)
    layer = LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    x = randn(*((2, 5, 3) if batched else (5, 3))).astype(np.float32)

    def run(array_module):
        outputs, (h_n, _) = layer(Tensor(array_module.asarray(x)))
        ((outputs * outputs).sum() + h_n.sum()).backward()
        return outputs

    if xp is not np:
        same_on_host_and(xp, layer, run, rtol=1e-4, atol=1e-6)
        return
    # the host against itself would compare nothing: torch.nn's layer, in float32 too
    torch = pytest.importorskip("torch")
    theirs = torch.nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    theirs.load_state_dict({n: torch.from_numpy(p.numpy()) for n, p in layer.named_parameters()})
    expected, (t_h_n, _) = theirs(torch.tensor(x))
    ((expected * expected).sum() + t_h_n.sum()).backward()
    out = run(np)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-4, atol=1e-6)
    assert_grads_as_torch(layer, theirs, rtol=1e-4, atol=1e-6)
