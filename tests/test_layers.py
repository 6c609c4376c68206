"""Layers: discovery and bookkeeping in the Layer base; gradients of every layer against
finite differences; forward and gradients against torch.nn on every backend."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import check_grads
from tricycle import backend, dispatch
from tricycle.activation import ReLU
from tricycle.layers import (
    Dense,
    Dropout,
    Embedding,
    Layer,
    LayerNorm,
    RMSNorm,
    Sequential,
    layer_norm,
    layer_norm_backward,
    layer_norm_forward,
    rms_norm,
)
from tricycle.random import manual_seed
from tricycle.tensor import Tensor, to_tensor

lead_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
widths = st.integers(1, 4)


def on(xp, array):
    """``array`` as float32 on the backend ``xp``."""
    return xp.asarray(np.asarray(array, dtype=np.float32))


def host(array) -> np.ndarray:
    return backend.to_host_array(array)


# ====================================================================== the Layer base
class Block(Layer):
    def __init__(self):
        self.norm = LayerNorm(4)
        self.dense = Dense(4, 4)
        self.mask = Tensor(np.ones(4, dtype=np.float32), requires_grad=False)  # a buffer

    def forward(self, x):
        return self.dense(self.norm(x)) * self.mask


class Model(Layer):
    def __init__(self):
        self.token_embedding = Embedding(10, 4)
        self.blocks = [Block(), Block()]
        self.heads = {"main": Dense(4, 10, bias=False)}
        self.heads["main"].weights = self.token_embedding.weights  # weight tying (same shape)

    def forward(self, ids):
        x = self.token_embedding(ids)
        for block in self.blocks:
            x = block(x)
        return x


def test_named_parameters_walk_attributes_lists_and_dicts_in_order():
    model = Model()
    model.heads["main"].weights = Tensor(np.zeros((4, 10), dtype=np.float32))
    names = [name for name, _ in model.named_parameters()]
    assert names == [
        "token_embedding.weights",
        "blocks.0.norm.gamma",
        "blocks.0.norm.beta",
        "blocks.0.dense.weights",
        "blocks.0.dense.bias",
        "blocks.1.norm.gamma",
        "blocks.1.norm.beta",
        "blocks.1.dense.weights",
        "blocks.1.dense.bias",
        "heads.main.weights",
    ]
    assert [name for name, _ in model.named_layers()][:3] == ["", "token_embedding", "blocks.0"]
    assert len(model.layers()) == 1 + 1 + 2 * 3 + 1


def test_tied_weights_and_shared_layers_count_once():
    model = Model()
    names = [name for name, _ in model.named_parameters()]
    assert "heads.main.weights" not in names  # the tied tensor keeps its first name
    assert len({id(p) for p in model.parameters()}) == len(model.parameters())
    shared = Dense(2, 2)
    seq = Sequential(shared, shared)
    assert len(seq.parameters()) == 2
    assert seq.num_parameters() == 6


def test_buffers_are_not_parameters_but_move_with_the_layer():
    block = Block()
    assert all(p is not block.mask for p in block.parameters())
    assert any(t is block.mask for _, t in block.named_tensors())
    assert block.num_parameters() == 4 + 4 + 16 + 4


def test_update_applies_the_optimiser_then_zeroes_grads():
    class Recorder:
        def update(self, parameters):
            self.names = [name for name, _ in parameters]

    model = Sequential(Dense(3, 2), ReLU(), Dense(2, 1))
    model(to_tensor(np.ones((2, 3)))).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    recorder = Recorder()
    model.update(recorder)
    assert recorder.names == [name for name, _ in model.named_parameters()]
    assert all(p.grad is None for p in model.parameters())


def test_train_and_eval_reach_every_sublayer():
    model = Sequential(Dense(2, 2), Sequential(Dropout(0.5)), Model())  # Model holds a list
    model.eval()
    assert not any(layer.training for layer in model.layers())
    model.train()
    assert all(layer.training for layer in model.layers())


def test_repr_is_a_tree_with_parameter_counts():
    model = Sequential(Dense(4, 16), ReLU(), Dense(16, 3))
    text = repr(model)
    assert text.startswith("Sequential(\n")
    assert "(sequence.0): Dense(from_size=4, to_size=16, bias=True)  # 80 parameters" in text
    assert "(sequence.1): ReLU()" in text
    assert text.endswith(")  # 131 parameters")


def test_state_dict_round_trip_copies_in_place():
    np.random.seed(0)
    source, target = Model(), Model()
    state = source.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    arrays = [p.array for p in target.parameters()]
    missing, unexpected = target.load_state_dict(state)
    assert missing == [] and unexpected == []
    for (name, p), array in zip(target.named_parameters(), arrays):
        assert p.array is array  # copied in place: optimiser state and tying survive
        np.testing.assert_array_equal(p.array, state[name])
    state["blocks.0.dense.bias"][...] = 7  # host copies: editing them changes nothing
    assert not (source.blocks[0].dense.bias.array == 7).any()


def test_load_state_dict_errors_name_the_keys_and_shapes():
    model = Sequential(Dense(2, 3))
    state = model.state_dict()
    with pytest.raises(ValueError, match=r"missing keys \['sequence.0.bias'\]"):
        model.load_state_dict({"sequence.0.weights": state["sequence.0.weights"]})
    with pytest.raises(ValueError, match=r"unexpected keys \['extra'\]"):
        model.load_state_dict({**state, "extra": np.zeros(1)})
    bad = {**state, "sequence.0.weights": np.zeros((3, 2))}
    with pytest.raises(ValueError, match=r"shape mismatch for sequence.0.weights.*\(3, 2\)"):
        model.load_state_dict(bad)
    result = model.load_state_dict({"sequence.0.bias": np.ones(3), "x": np.ones(1)}, strict=False)
    missing, unexpected = result  # torch's named tuple, printed as torch's
    assert missing == result.missing_keys == ["sequence.0.weights"] and unexpected == ["x"]
    assert repr(result) == (
        "_IncompatibleKeys(missing_keys=['sequence.0.weights'], unexpected_keys=['x'])"
    )
    np.testing.assert_array_equal(model[0].bias.array, np.ones(3))
    assert repr(model.load_state_dict(state)) == "<All keys matched successfully>"


def test_layers_pickle_without_graph():
    model = Sequential(Dense(3, 2), ReLU())
    model(to_tensor(np.ones(3))).sum().backward()
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone[0].weights.array, model[0].weights.array)
    assert clone[0].weights.grad is None


def test_to_gpu_and_back_moves_parameters_and_buffers():
    if not backend.cupy_available():
        pytest.skip("no CUDA GPU")
    model = Model()
    weights = model.token_embedding.weights
    model.to_gpu()
    assert all(t.on_gpu for _, t in model.named_tensors())
    assert model.heads["main"].weights is weights  # tying survives the move
    out = model(to_tensor([[1, 2]], dtype=int).to_gpu())
    out.sum().backward()
    assert weights.grad.on_gpu
    model.load_state_dict(model.state_dict())
    model.from_gpu()
    assert not any(t.on_gpu for _, t in model.named_tensors())


# ====================================================================== Dense
def test_dense_readme_example():
    np.random.seed(0)
    out = Dense(from_size=3, to_size=1)(to_tensor([1, 2, 3]))
    assert out.shape == (1,) and out.name == "dense"


@given(lead_shapes, widths, widths, st.booleans())
def test_dense_gradients(lead, n_in, n_out, bias):
    rng = np.random.default_rng(0)
    layer = Dense(n_in, n_out, bias=bias)

    def f(x, w, b):
        layer.weights, layer.bias = w, (b if bias else None)
        return layer(x)

    check_grads(
        f,
        rng.normal(size=lead + (n_in,)),
        rng.normal(size=(n_in, n_out)),
        rng.normal(size=(n_out,)),
        wrt=(0, 1, 2) if bias else (0, 1),
    )


def test_dense_gradients_are_the_einsums_products():
    """dx = dout @ W.T, dW = x.T @ dout over every row, dbias = the column sums of dout, in
    the inputs' dtype; a frozen input gets no gradient."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 40, 64), dtype=np.float32)
    dout = rng.standard_normal((3, 40, 48), dtype=np.float32)
    layer = Dense(64, 48)
    inputs = to_tensor(x)
    layer(inputs).backward(dout)
    weights = layer.weights.array
    x2, dout2 = x.reshape(-1, 64).astype(np.float64), dout.reshape(-1, 48).astype(np.float64)
    np.testing.assert_allclose(inputs.grad.array, (dout2 @ weights.T).reshape(x.shape),
                               rtol=1e-4, atol=1e-4)  # fmt: skip
    np.testing.assert_allclose(layer.weights.grad.array, x2.T @ dout2, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(layer.bias.grad.array, dout2.sum(axis=0), rtol=1e-4, atol=1e-4)
    grads = inputs.grad, layer.weights.grad, layer.bias.grad
    assert all(g.dtype == np.float32 for g in grads)
    frozen = to_tensor(x, requires_grad=False)
    layer.zero_grad()
    layer(frozen).backward(dout)
    assert frozen.grad is None
    np.testing.assert_allclose(layer.weights.grad.array, x2.T @ dout2, rtol=1e-4, atol=1e-3)


def test_dense_rejects_the_wrong_width():
    with pytest.raises(ValueError, match=r"Dense\(3 -> 2\).*size 3.*\(4, 5\)"):
        Dense(3, 2)(to_tensor(np.ones((4, 5))))


def test_dense_custom_initialiser():
    layer = Dense(2, 3, initialiser=lambda shape: np.full(shape, 0.5, dtype=np.float32))
    np.testing.assert_array_equal(layer.weights.array, np.full((2, 3), 0.5))


def test_dense_matches_torch(xp):
    torch = pytest.importorskip("torch")
    np.random.seed(1)
    layer = Dense(5, 3)
    layer.bias.array[:] = np.random.normal(size=3)
    reference = torch.nn.Linear(5, 3)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.weights.array.T))
        reference.bias.copy_(torch.tensor(layer.bias.array))
    x = np.random.normal(size=(2, 4, 5)).astype(np.float32)
    if xp is not np:
        layer.to_gpu()
    ours_x = Tensor(on(xp, x))
    out = layer(ours_x)
    (out * out).sum().backward()
    xt = torch.tensor(x, requires_grad=True)
    ref = reference(xt)
    (ref * ref).sum().backward()
    np.testing.assert_allclose(host(out.array), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(ours_x.grad.array), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        host(layer.weights.grad.array), reference.weight.grad.numpy().T, rtol=1e-4, atol=1e-5
    )
    np.testing.assert_allclose(
        host(layer.bias.grad.array), reference.bias.grad.numpy(), rtol=1e-4, atol=1e-5
    )


# ====================================================================== Embedding
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), st.integers(1, 5))
def test_embedding_gradients_add_up_repeated_ids(ids_shape, vocab):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, vocab, size=ids_shape)
    layer = Embedding(vocab, 3)

    def f(weights):
        layer.weights = weights
        return layer(Tensor(ids))

    out = check_grads(f, rng.normal(size=(vocab, 3)))
    assert out.shape == ids_shape + (3,)


def test_embedding_rejects_bad_ids():
    layer = Embedding(5, 2)
    with pytest.raises(IndexError, match=r"\[0, 5\).*size 5.*\[0, 5\]"):
        layer(to_tensor([0, 5], dtype=int))
    with pytest.raises(IndexError, match=r"got ids in \[-1, 1\]"):
        layer(np.array([1, -1]))
    with pytest.raises(TypeError, match="integers.*float32"):
        layer(to_tensor([0.0, 1.0]))


def test_embedding_matches_torch(xp):
    torch = pytest.importorskip("torch")
    np.random.seed(2)
    layer = Embedding(7, 4)
    ids = np.random.randint(0, 7, size=(3, 5))
    if xp is not np:
        layer.to_gpu()
    out = layer(Tensor(xp.asarray(ids), requires_grad=False))
    (out * out).sum().backward()
    weights = torch.tensor(host(layer.weights.array), requires_grad=True)
    ref = torch.nn.functional.embedding(torch.tensor(ids), weights)
    (ref * ref).sum().backward()
    np.testing.assert_allclose(host(out.array), ref.detach().numpy())
    np.testing.assert_allclose(host(layer.weights.grad.array), weights.grad.numpy(), rtol=1e-6)


# ====================================================================== LayerNorm, RMSNorm
@given(lead_shapes, st.integers(2, 5), st.booleans())
def test_layer_norm_gradients(lead, width, bias):
    rng = np.random.default_rng(0)

    def f(x, gamma, beta):
        return layer_norm(x, gamma, beta if bias else None, eps=1e-5)

    check_grads(
        f,
        rng.normal(size=lead + (width,)),
        rng.normal(size=width),
        rng.normal(size=width),
        wrt=(0, 1, 2) if bias else (0, 1),
        rtol=1e-4,
    )


@given(lead_shapes, st.integers(2, 5))
def test_rms_norm_gradients(lead, width):
    rng = np.random.default_rng(1)
    check_grads(
        lambda x, gamma: rms_norm(x, gamma, eps=1e-6),
        rng.normal(size=lead + (width,)),
        rng.normal(size=width),
        rtol=1e-4,
    )


@pytest.mark.parametrize("kernels", [True, False], ids=["kernels", "references"])
def test_layer_norm_matches_composed_ops(kernels):
    rng = np.random.default_rng(3)
    x, gamma, beta = rng.normal(size=(3, 4, 6)), rng.normal(size=6), rng.normal(size=6)
    reference = (layer_norm_forward, layer_norm_backward)
    forward, backward = dispatch.choose("layer_norm", reference, x) if kernels else reference
    y, mean, rstd = forward(np, x, gamma, beta, 1e-5)
    assert mean.shape == rstd.shape == (3, 4, 1)
    xt, gt, bt = Tensor(x), Tensor(gamma), Tensor(beta)
    centred = xt - xt.mean(axis=-1, keepdims=True)
    composed = centred / ((centred * centred).mean(axis=-1, keepdims=True) + 1e-5).sqrt()
    composed = composed * gt + bt
    np.testing.assert_allclose(y, composed.array, rtol=1e-12)
    dy = rng.normal(size=x.shape)
    composed.backward(dy)
    dx, dgamma, dbeta = backward(np, dy, x, gamma, mean, rstd)
    np.testing.assert_allclose(dx, xt.grad.array, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dgamma, gt.grad.array, rtol=1e-10)
    np.testing.assert_allclose(dbeta, bt.grad.array, rtol=1e-10)


def _matches_torch(xp, layer, reference, parameters, x, dy):
    """``layer`` (on ``xp``'s device) and the torch function ``reference`` on x, backward with
    dy: the outputs and the gradients of x and of each (ours, theirs) parameter pair agree."""
    torch = pytest.importorskip("torch")
    if xp is not np:
        layer.to_gpu()
    ours_x = Tensor(on(xp, x))
    out = layer(ours_x)
    out.backward(on(xp, dy))
    xt = torch.tensor(x, requires_grad=True)
    expected = reference(xt)
    expected.backward(torch.tensor(dy))
    np.testing.assert_allclose(host(out.array), expected.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(ours_x.grad.array), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    for ours, theirs in parameters:
        np.testing.assert_allclose(host(ours.grad.array), theirs.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert out.dtype == np.float32 and ours_x.grad.dtype == np.float32


@pytest.mark.parametrize("bias", [True, False])
def test_layer_norm_matches_torch(xp, bias):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    layer = LayerNorm(8, bias=bias)
    layer.gamma.array[:] = rng.normal(size=8)
    if bias:
        layer.beta.array[:] = rng.normal(size=8)
    reference = torch.nn.LayerNorm(8, bias=bias)
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.gamma.array))
        if bias:
            reference.bias.copy_(torch.tensor(layer.beta.array))
    x = (rng.normal(size=(2, 3, 8)) * 3 + 1).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    pairs = [(layer.gamma, reference.weight)] + ([(layer.beta, reference.bias)] if bias else [])
    _matches_torch(xp, layer, reference, pairs, x, dy)


def test_layer_norm_without_elementwise_affine_as_torchs(xp):
    """``nn.LayerNorm(E, elementwise_affine=False)`` (DiT's adaLN norms) has no parameters,
    as torch's: the same outputs and input gradients, an empty ``state_dict``."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    layer = LayerNorm(8, 1e-6, elementwise_affine=False)
    reference = torch.nn.LayerNorm(8, 1e-6, elementwise_affine=False)
    assert layer.parameters() == [] and dict(layer.state_dict()) == {}
    assert "elementwise_affine=False" in repr(layer)
    x = (rng.normal(size=(2, 3, 8)) * 3 + 1).astype(np.float32)
    _matches_torch(xp, layer, reference, [], x, rng.normal(size=x.shape).astype(np.float32))


@pytest.mark.parametrize("width", [{"normalized_shape": 8}, {"normalized_shape": (8,)}, (8,)])
def test_layer_norm_takes_torchs_normalized_shape(xp, width):
    """``nn.LayerNorm(normalized_shape=E)`` (ZTM's ViT) or a one-axis shape, as torch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    args, kwargs = ((), width) if isinstance(width, dict) else ((width,), {})
    layer, reference = LayerNorm(*args, **kwargs), torch.nn.LayerNorm(*args, **kwargs)
    assert layer.embedding_dim == 8 and RMSNorm(*args, **kwargs).embedding_dim == 8
    layer.gamma.array[:], layer.beta.array[:] = rng.normal(size=(2, 8))
    with torch.no_grad():
        reference.weight.copy_(torch.tensor(layer.gamma.array))
        reference.bias.copy_(torch.tensor(layer.beta.array))
    x = rng.normal(size=(2, 3, 8)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    pairs = [(layer.gamma, reference.weight), (layer.beta, reference.bias)]
    _matches_torch(xp, layer, reference, pairs, x, dy)


def test_norms_say_which_width_they_take():
    several = r"LayerNorm: normalises the last axis only: normalized_shape must be an int or a one"
    with pytest.raises(ValueError, match=several + r"-axis shape \(E,\), got \(4, 8\)"):
        LayerNorm(normalized_shape=(4, 8))
    with pytest.raises(TypeError, match="RMSNorm: give the width once, as embedding_dim or nor"):
        RMSNorm(8, normalized_shape=8)
    with pytest.raises(TypeError, match="LayerNorm: normalized_shape must be an integer >= 1"):
        LayerNorm(normalized_shape=2.5)


def test_rms_norm_matches_torch(xp):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    layer = RMSNorm(6)
    layer.gamma.array[:] = rng.normal(size=6)
    x = rng.normal(size=(4, 6)).astype(np.float32)
    dy = rng.normal(size=x.shape).astype(np.float32)
    gt = torch.tensor(layer.gamma.array, requires_grad=True)
    reference = lambda xt: torch.nn.functional.rms_norm(xt, (6,), gt, eps=1e-6)  # noqa: E731
    _matches_torch(xp, layer, reference, [(layer.gamma, gt)], x, dy)


def test_norms_reject_the_wrong_width():
    with pytest.raises(ValueError, match=r"LayerNorm\(4\).*size 4.*\(2, 3\)"):
        LayerNorm(4)(to_tensor(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"RMSNorm\(4\)"):
        RMSNorm(4)(to_tensor(np.ones(3)))


# ====================================================================== Dropout
def test_dropout_is_inverted_and_its_gradient_is_the_mask():
    layer = Dropout(0.25, seed=0)
    x = to_tensor(np.ones((200, 50)))
    out = layer(x)
    kept = out.array != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(out.array[kept], 1 / 0.75, rtol=1e-6)
    out.backward(np.full(x.shape, 2.0, dtype=np.float32))
    np.testing.assert_allclose(x.grad.array, 2 * out.array, rtol=1e-6)


def test_dropout_identity_in_eval_mode_or_at_zero():
    x = to_tensor(np.ones(10))
    assert Dropout(0.0)(x) is x
    assert Dropout(0.5).eval()(x) is x


def test_dropout_is_reproducible_with_a_seed():
    x = to_tensor(np.ones(100))
    assert (Dropout(0.5, seed=3)(x).array == Dropout(0.5, seed=3)(x).array).all()
    manual_seed(7)
    a = Dropout(0.5)(x).array
    manual_seed(7)
    assert (a == Dropout(0.5)(x).array).all()
    manual_seed(8)
    assert (a != Dropout(0.5)(x).array).any()


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5])
def test_dropout_rejects_bad_probabilities(p):
    with pytest.raises(ValueError, match=r"^Dropout: probability must be .* in \[0, 1\), got"):
        Dropout(p)


def test_dropout_on_backend(xp):
    layer = Dropout(0.5, seed=0)
    x = Tensor(on(xp, np.ones((64, 64))))
    out = layer(x)
    values = np.unique(host(out.array))
    np.testing.assert_allclose(values, [0.0, 2.0])


# ====================================================================== Sequential
def test_sequential_composes_and_indexes():
    np.random.seed(0)
    first, second = Dense(3, 4), Dense(4, 2)
    model = Sequential(first, ReLU(), second)
    x = to_tensor(np.ones((5, 3)))
    expected = second(ReLU()(first(x)))
    np.testing.assert_allclose(model(x).array, expected.array)
    assert model[0] is first and len(model) == 3 and list(model)[2] is second


def test_layers_used_twice_before_one_backward():
    """Diamond graphs: one Dense / LayerNorm applied twice (recurrent use, weight tying)."""
    rng = np.random.default_rng(6)
    dense, norm = Dense(3, 3), LayerNorm(3)

    def f(x, w, b, gamma):
        dense.weights, dense.bias, norm.gamma = w, b, gamma
        return norm(dense(norm(dense(x))))

    check_grads(
        f,
        rng.normal(size=(2, 3)),
        rng.normal(size=(3, 3)),
        rng.normal(size=3),
        rng.normal(size=3),
        rtol=1e-4,
    )
