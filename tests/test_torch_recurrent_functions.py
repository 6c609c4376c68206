"""torch's low-level recurrent functions (``tricycle.nn.recurrent_functions``): the cells
``rnn_tanh_cell``, ``rnn_relu_cell``, ``gru_cell``, ``lstm_cell`` and the stacks ``rnn_tanh``,
``rnn_relu``, ``gru``, ``lstm`` with torch's flat ``params``: outputs, final states and the
gradients of inputs, states and every weight against torch's on the same float64 inputs
(several layers, both directions, batch_first, without biases), and the refusals."""

import numpy as np
import pytest

import tricycle as tc

torch = pytest.importorskip("torch")

GATES = {"rnn_tanh": 1, "rnn_relu": 1, "gru": 3, "lstm": 4}


def normal(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape) * 0.5


def both(arrays):
    ours = [tc.Tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def check(outs, expecteds, ours, theirs):
    """Outputs equal; then the gradients of every input of a weighted sum of all outputs."""
    loss, expected_loss = 0, 0
    for k, (o, e) in enumerate(zip(outs, expecteds)):
        assert o.shape == tuple(e.shape)
        np.testing.assert_allclose(o.numpy(), e.detach().numpy(), rtol=1e-7, atol=1e-10)
        w = normal(*e.shape, seed=10 + k)
        loss, expected_loss = (
            loss + (o * tc.Tensor(w)).sum(),
            expected_loss + (e * torch.tensor(w)).sum(),
        )
    loss.backward()
    expected_loss.backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["rnn_tanh", "rnn_relu", "gru", "lstm"])
@pytest.mark.parametrize("biases", ["both", "none", "ih"])
def test_cells(name, biases):
    N, In, H, G = 3, 4, 5, GATES[name]
    arrays = [
        normal(N, In),
        normal(N, H, seed=1),
        normal(G * H, In, seed=2),
        normal(G * H, H, seed=3),
    ]
    arrays += [normal(G * H, seed=4), normal(G * H, seed=5)][
        : {"both": 2, "none": 0, "ih": 1}[biases]
    ]
    if name == "lstm":
        arrays.insert(2, normal(N, H, seed=6))
    ours, theirs = both(arrays)
    f, g = getattr(tc, f"{name}_cell"), getattr(torch, f"{name}_cell")
    if name == "lstm":
        outs = f(ours[0], (ours[1], ours[2]), *ours[3:])
        expecteds = g(theirs[0], (theirs[1], theirs[2]), *theirs[3:])
    else:
        outs, expecteds = (f(*ours),), (g(*theirs),)
    check(outs, expecteds, ours, theirs)


@pytest.mark.parametrize("name", ["rnn_tanh", "gru", "lstm"])
def test_cells_take_batches_only_as_torchs(name):
    H, G = 3, GATES[name]
    arrays = [normal(2), normal(H, seed=1), normal(G * H, 2, seed=2), normal(G * H, H, seed=3)]
    ours, theirs = both(arrays)
    hx, thx = (
        ((ours[1], ours[1]), (theirs[1], theirs[1])) if name == "lstm" else (ours[1], theirs[1])
    )
    with pytest.raises(IndexError):
        getattr(torch, f"{name}_cell")(theirs[0], thx, *theirs[2:])
    with pytest.raises(IndexError, match="2-D"):
        getattr(tc, f"{name}_cell")(ours[0], hx, *ours[2:])


@pytest.mark.parametrize(
    "name, layers, bidirectional, batch_first, has_biases",
    [("rnn_tanh", 2, True, False, True), ("rnn_relu", 1, False, True, False),
     ("gru", 2, False, True, True), ("gru", 1, True, False, False),
     ("lstm", 2, True, True, True), ("lstm", 1, False, False, False)],
)  # fmt: skip
def test_stacks(name, layers, bidirectional, batch_first, has_biases):
    T, N, In, H, G, D = 4, 2, 3, 5, GATES[name], 1 + bidirectional
    x = normal(N, T, In) if batch_first else normal(T, N, In)
    params = []
    for k in range(layers):
        for _ in range(D):
            width = In if k == 0 else D * H
            seed = 10 * len(params) + 1
            params += [normal(G * H, width, seed=seed), normal(G * H, H, seed=seed + 1)]
            params += (
                [normal(G * H, seed=seed + 2), normal(G * H, seed=seed + 3)] * 0
                if not has_biases
                else [normal(G * H, seed=seed + 2), normal(G * H, seed=seed + 3)]
            )
    states = [normal(layers * D, N, H, seed=90)] + (
        [normal(layers * D, N, H, seed=91)] if name == "lstm" else []
    )
    ours, theirs = both([x, *states, *params])
    ns = len(states)
    hx, thx = (ours[1 : 1 + ns], theirs[1 : 1 + ns]) if name == "lstm" else (ours[1], theirs[1])
    args = (has_biases, layers, 0.0, True, bidirectional, batch_first)
    outs = getattr(tc, name)(ours[0], hx, ours[1 + ns :], *args)
    expecteds = getattr(torch, name)(theirs[0], thx, theirs[1 + ns :], *args)
    check(outs, expecteds, ours, theirs)


def test_stack_dropout_between_layers_in_training():
    x, h = tc.Tensor(normal(3, 2, 4)), tc.Tensor(normal(2, 2, 4, seed=1))
    params = [tc.Tensor(normal(4, 4, seed=s)) for s in range(4)]
    tc.manual_seed(0)
    out, _ = tc.rnn_tanh(x, h, params, False, 2, 0.5, True, False, False)
    kept, _ = tc.rnn_tanh(x, h, params, False, 2, 0.5, False, False, False)
    assert not np.allclose(out.numpy(), kept.numpy())  # dropped between the layers
    same, _ = tc.rnn_tanh(x, h, params, False, 2, 0.0, True, False, False)
    np.testing.assert_allclose(same.numpy(), kept.numpy())


def test_refusals():
    x, h = tc.Tensor(normal(3, 2, 4)), tc.Tensor(normal(1, 2, 4, seed=1))
    params = [tc.Tensor(normal(4, 4, seed=s)) for s in range(2)]
    with pytest.raises(RuntimeError, match="expected 4 params"):
        tc.rnn_tanh(x, h, params, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="h0 of shape"):
        tc.rnn_tanh(x, tc.Tensor(normal(2, 2, 4)), params, False, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="3-D"):
        tc.gru(tc.Tensor(normal(3, 4)), h, params, False, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="a state of shape"):
        tc.rnn_tanh_cell(tc.Tensor(normal(2, 4)), tc.Tensor(normal(3, 4)), *params)
    with pytest.raises(RuntimeError, match="pair"):
        tc.lstm_cell(tc.Tensor(normal(2, 4)), (tc.Tensor(normal(2, 4)),) * 3, *params)
