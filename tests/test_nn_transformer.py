"""torch's ``nn.Transformer`` family in ``tricycle.nn`` against torch's own, in float64: each
class built with the same arguments (by the same code, with ``torch.nn`` or ``tricycle.nn``),
torch's weights copied with ``nn.from_torch``; the same outputs and the same gradients of the
inputs and of every parameter (compared under torch's names through ``nn.to_torch``), over
the layouts, pre- and post-norm, ReLU and GeLU, causal and padding masks (booleans and
floats); unbatched inputs; dropout; a tiny classifier that learns; bad input."""

import copy

import numpy as np
import pytest
from helpers import same_on_host_and

import tricycle
import tricycle.nn as nn
import tricycle.optim as optim
from tricycle.tensor import Tensor

E, H, F, N, S, T = 8, 2, 16, 3, 5, 4  # width, heads, feed-forward width, batch, src, tgt
KINDS = ("encoder_layer", "decoder_layer", "encoder", "decoder", "transformer")
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def build(module, kind: str, **arguments):
    """One model of the family, built the same way from ``torch.nn`` or ``tricycle.nn``."""
    arguments = dict(d_model=E, nhead=H, dim_feedforward=F, dropout=0.0) | arguments
    if kind == "encoder_layer":
        return module.TransformerEncoderLayer(**arguments)
    if kind == "decoder_layer":
        return module.TransformerDecoderLayer(**arguments)
    if kind == "encoder":
        layer = module.TransformerEncoderLayer(**arguments)
        return module.TransformerEncoder(layer, 2, module.LayerNorm(E), enable_nested_tensor=False)
    if kind == "decoder":
        return module.TransformerDecoder(module.TransformerDecoderLayer(**arguments), 2)
    return module.Transformer(num_encoder_layers=2, num_decoder_layers=2, **arguments)


def twins(torch, kind: str, seed: int = 0, ours_differ: dict | None = None, **arguments):
    """(ours, torch's) with the same float64 weights: torch's, each nudged at random so that
    the stacked copies and the LayerNorms differ from one another and from their start.
    ``ours_differ``: arguments of ours that are not torch's (a callable activation)."""
    torch.manual_seed(seed)
    theirs = build(torch.nn, kind, **arguments).double()
    with torch.no_grad():
        for p in theirs.parameters():
            p += 0.2 * torch.randn_like(p)
    ours = build(nn, kind, **(arguments | (ours_differ or {})))
    for _, t in ours.named_tensors():
        t.array = t.array.astype(np.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def grads_in_torch_names(model) -> dict[str, np.ndarray]:
    """Every parameter's gradient under its torch name, in torch's layout."""
    grads = copy.deepcopy(model)
    for (_, p), (_, g) in zip(model.named_parameters(), grads.named_parameters()):
        g.array = p.grad.array
    return nn.to_torch(grads)


def close(ours, theirs, rtol=1e-9, atol=1e-11, **kwargs):
    ours = ours.array if isinstance(ours, Tensor) else ours
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else theirs
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, **kwargs)


def compare(torch, ours, theirs, inputs, kwargs, rng):
    """Both on the same inputs and masks: outputs, then (after a backward from one random
    upstream gradient through both) the gradients of the inputs and of every parameter."""
    ours_in = [Tensor(a, requires_grad=True) for a in inputs]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in inputs]
    theirs_kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v
                     for k, v in kwargs.items()}  # fmt: skip
    out, t_out = ours(*ours_in, **kwargs), theirs(*theirs_in, **theirs_kwargs)
    close(out, t_out)
    upstream = rng.normal(size=out.shape)
    (out * upstream).sum().backward()
    (t_out * torch.tensor(upstream)).sum().backward()
    for mine, their in zip(ours_in, theirs_in):
        close(mine.grad, their.grad)
    grads = grads_in_torch_names(ours)
    expected = {name: p.grad for name, p in theirs.named_parameters()}
    assert grads.keys() == expected.keys()
    for name, grad in expected.items():
        close(grads[name], grad, err_msg=name)
    return out


def padding(rng, length: int, as_float: bool = False) -> np.ndarray:
    """A key padding mask (N, length): True (or -inf) hides a key; key 0 is never hidden, so
    every query sees some key (torch gives NaN where none is seen)."""
    hidden = rng.random((N, length)) < 0.4
    hidden[:, 0] = False
    return np.where(hidden, -np.inf, 0.0) if as_float else hidden


def inputs_and_masks(kind: str, batch_first: bool, rng) -> tuple[list, dict]:
    """The inputs of ``kind`` and its masks: the encoders get a boolean causal mask with the
    hint and a boolean padding; the decoders torch's float causal mask with the hint, a float
    target padding and a boolean memory padding."""

    def sequence(length):
        return rng.normal(size=(N, length, E) if batch_first else (length, N, E))

    causal = np.triu(np.ones((S, S), dtype=bool), k=1)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=np.float64).numpy()
    decoding = dict(tgt_mask=tgt_mask, tgt_key_padding_mask=padding(rng, T, as_float=True),
                    memory_key_padding_mask=padding(rng, S), tgt_is_causal=True)  # fmt: skip
    if kind == "encoder_layer":
        kwargs = dict(src_mask=causal, src_key_padding_mask=padding(rng, S), is_causal=True)
        return [sequence(S)], kwargs
    if kind == "encoder":
        return [sequence(S)], dict(mask=causal, src_key_padding_mask=padding(rng, S))
    if kind in ("decoder_layer", "decoder"):
        return [sequence(T), sequence(S)], decoding
    return [sequence(S), sequence(T)], dict(src_key_padding_mask=padding(rng, S), **decoding)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "norm-first"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq-first", "batch-first"])
@pytest.mark.parametrize("kind", KINDS)
def test_matches_torch(torch, kind, batch_first, norm_first, activation):
    rng = np.random.default_rng(KINDS.index(kind))
    arguments = dict(batch_first=batch_first, norm_first=norm_first, activation=activation)
    ours, theirs = twins(torch, kind, **arguments)
    inputs, kwargs = inputs_and_masks(kind, batch_first, rng)
    out = compare(torch, ours, theirs, inputs, kwargs, rng)
    assert out.shape == inputs[1 if kind == "transformer" else 0].shape


def test_unbatched_and_callable_activation_match_torch(torch):
    rng = np.random.default_rng(7)
    ours, theirs = twins(torch, "transformer", activation=torch.nn.functional.gelu,
                         ours_differ=dict(activation=nn.functional.gelu))  # fmt: skip
    assert ours.decoder.layers[1].activation is nn.functional.gelu
    src, tgt = rng.normal(size=(S, E)), rng.normal(size=(T, E))
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)
    kwargs = dict(tgt_mask=mask, src_key_padding_mask=padding(rng, S)[0],
                  memory_key_padding_mask=padding(rng, S)[1])  # fmt: skip
    assert compare(torch, ours, theirs, [src, tgt], kwargs, rng).shape == (T, E)


def test_relu_and_gelu_are_functions_as_torch_keeps_them(torch):
    """No ``activation`` submodule, as torch's: a whole pickled model names ``F.relu``, which
    word_language_model's safe-globals list allows (tests/test_serialization.py loads one)."""
    for name, function in (("relu", nn.functional.relu), ("gelu", nn.functional.gelu)):
        ours = nn.TransformerDecoderLayer(E, H, F, activation=name)
        theirs = torch.nn.TransformerDecoderLayer(E, H, F, activation=name)
        assert ours.activation is function and not isinstance(theirs.activation, torch.nn.Module)
        assert "activation" not in dict(ours.named_children())
        assert "activation" not in dict(theirs.named_children())


def test_no_bias_and_a_layer_as_activation_match_torch(torch):
    rng = np.random.default_rng(8)
    arguments = dict(bias=False, layer_norm_eps=1e-3, activation=torch.nn.GELU())
    ours, theirs = twins(torch, "decoder_layer", ours_differ=dict(activation=nn.GELU()),
                         **arguments)  # fmt: skip
    assert ours.norm1.beta is None and ours.linear1.bias is None
    inputs, kwargs = inputs_and_masks("decoder_layer", False, rng)
    compare(torch, ours, theirs, inputs, kwargs, rng)


def test_causal_hint_without_a_mask_applies_the_causal_mask():
    rng = np.random.default_rng(9)
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.0)
    x = rng.normal(size=(S, N, E))
    mask = nn.Transformer.generate_square_subsequent_mask(S)
    expected = layer(x, src_mask=mask).array
    close(layer(x, is_causal=True).array, expected)
    close(layer(x, src_mask=mask, is_causal=True).array, expected)
    assert not np.allclose(layer(x).array, expected)


def test_square_subsequent_mask_and_state_as_torch(torch):
    close(nn.Transformer.generate_square_subsequent_mask(5).numpy(),
          torch.nn.Transformer.generate_square_subsequent_mask(5))  # fmt: skip
    assert nn.Transformer.generate_square_subsequent_mask(3).dtype == np.float32
    ours, theirs = twins(torch, "transformer")
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())
    state = nn.to_torch(ours)
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})  # strict
    assert "decoder.layers.1.multihead_attn.in_proj_weight" in state
    assert "encoder.norm.weight" in state and "decoder.norm.bias" in state


# ---------------------------------------------------------------------- stacks and dropout
def test_stacks_hold_deep_copies_with_their_own_dropout():
    tricycle.manual_seed(3)
    layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.5)
    encoder = nn.TransformerEncoder(layer, 3)
    assert len(encoder.layers) == 3 and all(c is not layer for c in encoder.layers)
    close(encoder.layers[2].linear1.weights.array, layer.linear1.weights.array)
    assert encoder.layers[0].linear1.weights is not encoder.layers[1].linear1.weights
    draws = [c.dropout1.rng.random() for c in encoder.layers]
    assert len(set(draws)) == 3  # each copy drops its own elements
    tricycle.manual_seed(3)
    again = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, F, dropout=0.5), 3)
    assert [c.dropout1.rng.random() for c in again.layers] == draws  # seeded: reproduced

    x = np.random.default_rng(4).normal(size=(S, N, E)).astype(np.float32)
    trained = encoder(x).array
    encoder.eval()
    assert not np.allclose(trained, encoder(x).array)
    close(encoder(x).array, encoder(x).array)  # no dropout in eval mode


def test_a_tiny_encoder_classifier_learns():
    """Is the mean of a sequence's first feature positive? An encoder, mean pooling over the
    real tokens and a linear head learn it."""
    tricycle.manual_seed(0)
    rng = np.random.default_rng(0)

    class Classifier(nn.Module):
        def __init__(self):
            layer = nn.TransformerEncoderLayer(E, H, F, dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(E, 2)

        def forward(self, x, hidden):
            h = self.encoder(x, src_key_padding_mask=hidden)  # (N, T, E)
            real = Tensor((~hidden / (~hidden).sum(axis=1, keepdims=True))[..., None])
            return self.head((h * real).sum(axis=1))  # (N, 2)

    def batch(size):
        x = rng.normal(size=(size, 6, E)).astype(np.float32)
        hidden = np.arange(6) >= rng.integers(3, 7, size=(size, 1))  # padding at the end
        labels = ((x[..., 0] * ~hidden).sum(axis=1) > 0).astype(np.int64)
        return x, hidden, labels

    def held_out_loss():  # in eval mode (no dropout), on sequences never trained on
        model.eval()
        logits = model(x_test, hidden_test)
        model.train()
        accuracy = (logits.numpy().argmax(axis=1) == labels_test).mean()
        return float(loss_fn(logits, labels_test).item()), accuracy

    model, loss_fn = Classifier(), nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    x_test, hidden_test, labels_test = batch(64)
    before, _ = held_out_loss()
    for _ in range(60):
        x, hidden, labels = batch(32)
        optimizer.zero_grad()
        loss = loss_fn(model(x, hidden), labels)
        loss.backward()
        optimizer.step()
    after, accuracy = held_out_loss()
    assert after < 0.5 * before and accuracy > 0.9, (before, after, accuracy)


# ---------------------------------------------------------------------- on every backend
def test_on_the_device(xp):
    rng = np.random.default_rng(6)
    model = nn.Transformer(E, H, 1, 1, F, dropout=0.0, batch_first=True, activation="gelu")
    src, tgt = rng.normal(size=(N, S, E)), rng.normal(size=(N, T, E))
    pad = padding(rng, S)

    def run(array_module):
        def on(a, dtype=np.float32):
            return Tensor(array_module.asarray(a.astype(dtype)))

        device = "cpu" if array_module is np else 0
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=device)
        out = model(on(src), on(tgt), tgt_mask=mask, src_key_padding_mask=on(pad, bool),
                    memory_key_padding_mask=on(pad, bool))  # fmt: skip
        out.sum().backward()
        return out

    same_on_host_and(xp, model, run, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------- bad input
def test_bad_arguments():
    for make, owner in [(nn.TransformerEncoderLayer, "TransformerEncoderLayer"),
                        (nn.TransformerDecoderLayer, "TransformerDecoderLayer"),
                        (nn.Transformer, "Transformer")]:  # fmt: skip
        with pytest.raises(ValueError, match=f"^{owner}: d_model=10 must be divisible by nhead=3"):
            make(10, 3)
    with pytest.raises(ValueError, match="TransformerEncoderLayer: activation must be"):
        nn.TransformerEncoderLayer(E, H, activation="tanh")
    with pytest.raises(ValueError, match="TransformerDecoderLayer: dropout must be"):
        nn.TransformerDecoderLayer(E, H, dropout=1.5)
    with pytest.raises(TypeError, match="TransformerEncoder: encoder_layer must be"):
        nn.TransformerEncoder("layer", 2)
    with pytest.raises(ValueError, match="TransformerDecoder: num_layers must be"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, F), 0)
    with pytest.raises(TypeError, match="TransformerEncoder.forward: is_causal must be"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, F), 1)(
            np.ones((S, N, E)), is_causal="yes"
        )


@pytest.mark.parametrize(
    ("shape", "batch_first"),
    [((S, N, E + 1), False), ((N, S, 7), True), ((2, S, N, E), False), ((E,), False),
     ((0, N, E), False)],
)  # fmt: skip
def test_wrong_shapes_are_named(shape, batch_first):
    layer = nn.TransformerEncoderLayer(E, H, F, batch_first=batch_first)
    layout = r"\(N, T, E\)" if batch_first else r"\(T, N, E\)"
    expected = rf"TransformerEncoderLayer: expected src {layout} .* d_model = 8 .* got shape"
    with pytest.raises(ValueError, match=expected):
        layer(np.ones(shape))


def test_mismatched_inputs_and_masks_are_named():
    decoder = nn.TransformerDecoderLayer(E, H, F)
    tgt = np.ones((T, N, E))
    expected = r"TransformerDecoderLayer: tgt \(4, 3, 8\) and memory \(5, 2, 8\) must both be"
    with pytest.raises(ValueError, match=expected + " batched with the same batch size"):
        decoder(tgt, np.ones((S, N - 1, E)))
    with pytest.raises(ValueError, match="TransformerDecoderLayer: expected memory"):
        decoder(tgt, np.ones((S, N, E - 1)))
    with pytest.raises(ValueError, match="both be batched .* or both unbatched"):
        decoder(tgt, np.ones((S, E)))
    model = nn.Transformer(E, H, 1, 1, F, batch_first=True)
    with pytest.raises(ValueError, match=r"Transformer: src \(3, 5, 8\) and tgt \(2, 4, 8\)"):
        model(np.ones((N, S, E)), np.ones((N - 1, T, E)))
    with pytest.raises(TypeError, match="TransformerEncoderLayer: needs a floating tensor"):
        nn.TransformerEncoderLayer(E, H, F)(np.ones((S, N, E), dtype=np.int64))
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(3, 4\)"):
        decoder(tgt, np.ones((S, N, E)), tgt_key_padding_mask=np.zeros((N, S), bool))
    with pytest.raises(ValueError, match=r"attn_mask must have shape \(4, 4\)"):
        decoder(tgt, np.ones((S, N, E)), tgt_mask=np.zeros((S, S), bool))
