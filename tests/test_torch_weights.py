"""``from_torch`` and ``to_torch``: torch models and their ``tricycle.nn`` twins (same structure,
same attribute names, built by one function given ``torch.nn`` or ``tricycle.nn``), with the
torch model's weights loaded into ours. In float64 in evaluation mode: outputs, the gradient of
a loss with respect to the input, and every parameter's gradient (in torch's layout, through
``to_torch``); the round trip ours -> torch -> outputs; strict and non-strict loading and its
errors; tied weights, dtypes and layers without a known torch layout."""

import numpy as np
import pytest

import tricycle.nn as nn
from tricycle.layers import Layer, parameter
from tricycle.nn.torch_weights import from_torch, to_torch
from tricycle.tensor import Tensor, to_tensor

torch = pytest.importorskip("torch")
V, E, H, N, T = 11, 8, 2, 3, 4
RTOL, ATOL = 1e-9, 1e-11


# ---------------------------------------------------------------------- the twins
def cnn(nn):
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 3 * 3, 5),
    )


def mlp(nn):
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3))


def transposed(nn, d: int):
    """Convolutions, their transposes (grouped: a check of the weight layouts) and the norms."""
    return nn.Sequential(
        getattr(nn, f"Conv{d}d")(2, 4, 3, padding=1),
        getattr(nn, f"BatchNorm{d}d")(4),
        getattr(nn, f"ConvTranspose{d}d")(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
        nn.GroupNorm(3, 6),
        getattr(nn, f"InstanceNorm{d}d")(6, affine=True, track_running_stats=True),
    )


def build_attention(model, nn, own_parameter):
    """Embedding, LayerNorm, two MultiheadAttentions (packed q/k/v; kdim/vdim with bias_kv),
    a ModuleList of Linears, RMSNorm and a parameter of the model's own."""
    nn.Module.__init__(model)
    model.embedding = nn.Embedding(V, E)
    model.norm = nn.LayerNorm(E)
    model.attention = nn.MultiheadAttention(E, H, batch_first=True)
    model.key, model.value = nn.Linear(E, 5), nn.Linear(E, 6)
    model.cross = nn.MultiheadAttention(E, H, kdim=5, vdim=6, add_bias_kv=True, batch_first=True)
    model.blocks = nn.ModuleList([nn.Linear(E, E), nn.Linear(E, 3)])
    model.activation = nn.Tanh()
    model.final = nn.RMSNorm(3, eps=1e-6)
    model.scale = own_parameter(np.linspace(0.5, 1.5, 3))


def attention_forward(model, ids):
    x = model.norm(model.embedding(ids))  # (N, T, E)
    x, _ = model.attention(x, x, x, need_weights=False)
    x, _ = model.cross(x, model.key(x), model.value(x))
    for block in model.blocks:
        x = model.activation(block(x))
    return model.final(x) * model.scale


class Attention(nn.Module):
    def __init__(self):
        build_attention(self, nn, parameter)

    forward = attention_forward


def build_recurrent(model, nn):
    nn.Module.__init__(model)
    model.lstm = nn.LSTM(3, 5, num_layers=2, batch_first=True)
    model.gru = nn.GRU(5, 4, batch_first=True)
    model.head = nn.Linear(4, 2)


def recurrent_forward(model, x):
    x, _ = model.lstm(x)
    x, _ = model.gru(x)
    return model.head(x)


class Recurrent(nn.Module):
    def __init__(self):
        build_recurrent(self, nn)

    forward = recurrent_forward


def torch_twin(name: str):
    """The torch model of the tricycle class ``name`` (made here: torch is a test oracle)."""

    class TorchAttention(torch.nn.Module):
        def __init__(self):
            build_attention(self, torch.nn, lambda v: torch.nn.Parameter(torch.tensor(v)))

        forward = attention_forward

    class TorchRecurrent(torch.nn.Module):
        def __init__(self):
            build_recurrent(self, torch.nn)

        forward = recurrent_forward

    return {"attention": TorchAttention, "recurrent": TorchRecurrent}[name]()


MODELS = {  # name -> (build(nn), an input)
    "cnn": (cnn, lambda rng: rng.normal(size=(N, 2, 6, 6))),
    "mlp": (mlp, lambda rng: rng.normal(size=(N, 4))),
    "transposed1d": (lambda nn: transposed(nn, 1), lambda rng: rng.normal(size=(N, 2, 5))),
    "transposed2d": (lambda nn: transposed(nn, 2), lambda rng: rng.normal(size=(N, 2, 3, 4))),
    "attention": (
        lambda nn: Attention() if nn is not torch.nn else torch_twin("attention"),
        lambda rng: rng.integers(0, V, size=(N, T)),
    ),
    "recurrent": (
        lambda nn: Recurrent() if nn is not torch.nn else torch_twin("recurrent"),
        lambda rng: rng.normal(size=(N, T, 3)),
    ),
}


def theirs_and_input(name: str, seed: int = 0):
    """A float64 torch model with trained-looking running statistics, and an input for it."""
    build, make_input = MODELS[name]
    torch.manual_seed(seed)
    theirs = build(torch.nn).double()
    rng = np.random.default_rng(seed)
    x = make_input(rng)
    with torch.no_grad():  # move the running statistics away from (0, 1)
        for _ in range(2):
            theirs(torch.tensor(x + rng.normal(size=x.shape) if x.dtype.kind == "f" else x))
    return theirs.eval(), x


def ours_float64(name: str):
    ours = MODELS[name][0](nn)
    for _, t in ours.named_tensors():
        t.array = t.array.astype(np.float64)
    return ours.eval()


def run_ours(ours, x, weights):
    """(output, input gradient or None) of sum(ours(x) * weights), backward run."""
    floats = x.dtype.kind == "f"
    tx = to_tensor(x, requires_grad=True, dtype=x.dtype) if floats else x
    out = ours(tx)
    (out * weights).sum().backward()
    return out.numpy(), tx.grad.numpy() if floats else None


def run_theirs(theirs, x, weights):
    floats = x.dtype.kind == "f"
    tx = torch.tensor(x, requires_grad=floats)
    out = theirs(tx)
    (out * torch.tensor(weights)).sum().backward()
    return out.detach().numpy(), tx.grad.numpy() if floats else None


def grads_in_torch_layout(ours) -> dict:
    """Each parameter's gradient under its torch name, in torch's layout: ``to_torch`` of the
    model with its gradients in place of its values (buffers as zeros)."""
    values = [(t, t.array) for _, t in ours.named_tensors()]
    for t, array in values:
        t.array = array * 0 if t.grad is None else t.grad.array
    try:
        return to_torch(ours)
    finally:
        for t, array in values:
            t.array = array


def close(actual, expected, rtol=RTOL, atol=ATOL):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# ---------------------------------------------------------------------- torch -> tricycle
@pytest.mark.parametrize("name", list(MODELS))
def test_from_torch_gives_torchs_outputs_and_gradients(name):
    theirs, x = theirs_and_input(name)
    ours = ours_float64(name)
    assert from_torch(ours, theirs.state_dict()) == ([], [])
    weights = np.random.default_rng(1).normal(size=run_theirs(theirs, x, 0.0)[0].shape)
    theirs.zero_grad()
    out, dx = run_ours(ours, x, weights)
    their_out, their_dx = run_theirs(theirs, x, weights)
    close(out, their_out)
    if dx is not None:
        close(dx, their_dx)
    grads = grads_in_torch_layout(ours)
    their_params = dict(theirs.named_parameters())
    assert their_params and set(their_params) <= set(grads)
    for key, p in their_params.items():
        close(grads[key], p.grad.numpy())


@pytest.mark.parametrize("name", list(MODELS))
def test_to_torch_round_trip(name):
    """Ours (its own random weights) -> a torch model: its outputs and state are ours; and
    back into a fresh tricycle model: the same state_dict."""
    _, x = theirs_and_input(name)
    ours = ours_float64(name)
    state = to_torch(ours)
    torch.manual_seed(7)
    theirs = MODELS[name][0](torch.nn).double()
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})  # strict
    theirs.eval()
    weights = np.ones(run_theirs(theirs, x, 0.0)[0].shape)
    close(run_theirs(theirs, x, weights)[0], run_ours(ours, x, weights)[0])
    for key, value in theirs.state_dict().items():
        if not key.endswith("num_batches_tracked"):
            np.testing.assert_array_equal(value.numpy(), state[key])
    again = ours_float64(name)
    assert from_torch(again, state) == ([], [])
    for (key, value), (key2, value2) in zip(ours.state_dict().items(), again.state_dict().items()):
        assert key == key2
        np.testing.assert_array_equal(value, value2)


def test_to_torch_copies_and_lays_out_as_torch():
    model = mlp(nn)
    state = to_torch(model)
    assert list(state) == [f"{i}.{p}" for i in (0, 2, 4) for p in ("weight", "bias")]
    np.testing.assert_array_equal(state["0.weight"], model[0].weights.array.T)
    assert state["0.weight"].flags.c_contiguous
    state["0.bias"][...] = 5.0  # a copy: the model is untouched
    assert not np.any(model[0].bias.array == 5.0)
    bn = to_torch(nn.Sequential(nn.BatchNorm1d(3)))
    assert list(bn) == ["0.weight", "0.bias", "0.running_mean", "0.running_var",
                        "0.num_batches_tracked"]  # fmt: skip
    assert bn["0.num_batches_tracked"].dtype == np.int64


def test_float32_model_keeps_its_dtype_and_bfloat16_values_load():
    theirs, x = theirs_and_input("cnn")
    ours = cnn(nn).eval()
    from_torch(ours, theirs.state_dict())  # float64 values cast to the model's float32
    assert all(t.dtype == np.float32 for _, t in ours.named_tensors())
    weights = np.ones((N, 5))
    close(run_ours(ours, x.astype(np.float32), weights)[0], run_theirs(theirs, x, weights)[0],
          rtol=1e-4, atol=1e-5)  # fmt: skip
    half = {k: v.to(torch.bfloat16) for k, v in theirs.state_dict().items()}
    from_torch(ours, half)  # numpy has no bfloat16: widened first
    close(ours[0].weights.array, theirs[0].weight.detach().numpy(), rtol=1e-2, atol=1e-2)


def test_tied_layers_load_and_save_under_every_name():
    def build(model, nn):
        nn.Module.__init__(model)
        model.first = nn.Linear(3, 3)
        model.second = model.first  # the same layer twice, as torch's state_dict lists it

    class Tied(nn.Module):
        def __init__(self):
            build(self, nn)

    class TorchTied(torch.nn.Module):
        def __init__(self):
            build(self, torch.nn)

    theirs, ours = TorchTied(), Tied()
    assert from_torch(ours, theirs.state_dict()) == ([], [])
    np.testing.assert_array_equal(ours.first.weights.array, theirs.first.weight.detach().T)
    assert list(to_torch(ours)) == ["first.weight", "first.bias", "second.weight", "second.bias"]
    TorchTied().load_state_dict({k: torch.from_numpy(v) for k, v in to_torch(ours).items()})


def test_a_buffer_not_persistent_is_left_out_as_in_torchs_state_dict():
    """Llama 3's RoPE tables: register_buffer(..., persistent=False) is in no state_dict, so
    from_torch neither expects it nor overwrites it, and to_torch leaves it out."""

    def build(model, nn, lib):
        nn.Module.__init__(model)
        model.proj = nn.Linear(3, 2)
        model.register_buffer("cos", lib.cos(lib.arange(4.0)), persistent=False)
        model.register_buffer("scale", lib.ones(2))

    class Roped(nn.Module):
        def __init__(self):
            import tricycle  # noqa: PLC0415

            build(self, nn, tricycle)

        def forward(self, x):
            return self.proj(x) * self.scale + self.cos[:2]

    class TorchRoped(torch.nn.Module):
        def __init__(self):
            build(self, torch.nn, torch)

        def forward(self, x):
            return self.proj(x) * self.scale + self.cos[:2]

    theirs, ours = TorchRoped(), Roped()
    assert list(theirs.state_dict()) == ["scale", "proj.weight", "proj.bias"]
    assert from_torch(ours, theirs.state_dict()) == ([], [])
    assert sorted(to_torch(ours)) == sorted(theirs.state_dict())
    x = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(
        ours(to_tensor(x)).numpy(),
        theirs(torch.from_numpy(x).float()).detach().numpy(),
        rtol=1e-6,
        atol=1e-6,  # float32 products summed in another order: an output near 0 differs by ulps
    )


def test_a_tied_alias_of_a_loaded_tensor_is_not_unexpected():
    """torch's state_dict names a tied tensor under each owner (nanoGPT's lm_head.weight is
    transformer.wte.weight); a port whose head reads the embedding's table has no lm_head."""
    import tricycle.nn.functional as F

    class TorchTiedHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(V, E)
            self.lm_head = torch.nn.Linear(E, V, bias=False)
            self.wte.weight = self.lm_head.weight

        def forward(self, ids):
            return self.lm_head(self.wte(ids))

    class TiedHead(nn.Module):
        def __init__(self):
            self.wte = nn.Embedding(V, E)

        def forward(self, ids):
            return F.linear(self.wte(ids), self.wte.weights)

    torch.manual_seed(0)
    theirs, ours = TorchTiedHead().double(), TiedHead().to(np.float64)
    state = theirs.state_dict()
    assert from_torch(ours, state) == ([], [])  # lm_head.weight: the same memory as wte's
    ids = np.arange(V).reshape(1, V) % V
    close(ours(ids).array, theirs(torch.from_numpy(ids)).detach().numpy(), RTOL, ATOL)
    state["lm_head.weight"] = state["lm_head.weight"].clone()  # values alike, not an alias
    with pytest.raises(ValueError, match=r"unexpected keys \['lm_head.weight'\]"):
        from_torch(ours, state)
    arrays = {"wte.weight": np.ones((V, E))}
    arrays["head.weight"] = arrays["wte.weight"]  # numpy arrays alias as well
    assert from_torch(ours, arrays) == ([], [])
    assert from_torch(ours, {**arrays, "head.weight": arrays["wte.weight"][:2]}, False) == (
        [],
        ["head.weight"],  # a view of part of it is another tensor
    )


# ---------------------------------------------------------------------- strict and errors
def mlp_twins():
    torch.manual_seed(0)
    return mlp(torch.nn), mlp(nn)


def test_strict_errors_name_missing_unexpected_and_misshapen_keys():
    theirs, ours = mlp_twins()
    before = ours.state_dict()
    state = dict(theirs.state_dict())
    del state["2.bias"]
    state["5.weight"] = torch.zeros(3)
    with pytest.raises(ValueError, match=r"missing keys \['2.bias'\]; unexpected keys \['5.w"):
        from_torch(ours, state)
    state = dict(theirs.state_dict())
    state["0.weight"] = state["0.weight"].T  # our layout, not torch's
    with pytest.raises(ValueError, match=r"shape mismatch for 0.weight: given \(4, 8\), expec"):
        from_torch(ours, state)
    with pytest.raises(ValueError, match="shape mismatch"):  # also when not strict
        from_torch(ours, state, strict=False)
    state = dict(theirs.state_dict())
    state["4.bias"] = torch.tensor([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="from_torch into Sequential: .*non-finite"):
        from_torch(ours, state)
    for key, value in ours.state_dict().items():  # a failed load changes nothing
        np.testing.assert_array_equal(value, before[key])


def test_not_strict_loads_what_is_shared_and_returns_the_rest():
    theirs, ours = mlp_twins()
    old_bias = ours[2].bias.array.copy()
    state = {k: v for k, v in theirs.state_dict().items() if k != "2.bias"}
    state["extra"] = np.zeros(2)
    assert from_torch(ours, state, strict=False) == (["2.bias"], ["extra"])
    np.testing.assert_array_equal(ours[2].bias.array, old_bias)
    close(ours[2].weights.array, theirs[2].weight.detach().numpy().T, rtol=1e-6, atol=0)


def test_multihead_attention_loads_in_part_and_all_or_nothing():
    theirs, _ = theirs_and_input("attention")
    ours = ours_float64("attention")
    state = dict(theirs.state_dict())
    old_bias = ours.attention.q_projection.bias.array.copy()
    del state["attention.in_proj_bias"]
    assert from_torch(ours, state, strict=False) == (["attention.in_proj_bias"], [])
    np.testing.assert_array_equal(ours.attention.q_projection.bias.array, old_bias)
    close(ours.attention.q_projection.weights.array, theirs.attention.in_proj_weight.detach()[:E].T)

    fresh, state = ours_float64("attention"), dict(theirs.state_dict())
    before = fresh.state_dict()
    state["blocks.1.bias"] = torch.full((3,), np.inf, dtype=torch.float64)  # after attention
    with pytest.raises(ValueError, match="non-finite"):
        from_torch(fresh, state)
    for key, value in fresh.state_dict().items():  # the attention layers' too
        np.testing.assert_array_equal(value, before[key])


def test_layer_without_a_known_layout_is_an_error():
    class Scaled(Layer):  # a tricycle layer in tricycle's names, not in the table
        def __init__(self):
            self.weights = parameter(np.ones((2, 3)))

    Scaled.__module__ = "tricycle.nn.hypothetical"
    model = nn.Sequential(nn.Linear(2, 2), Scaled())
    for convert in (to_torch, lambda m: from_torch(m, {})):
        with pytest.raises(ValueError, match=r"layer 'sequence.1' \(Scaled\) with tensors \['w"):
            convert(model)


def test_bad_arguments():
    model = mlp(nn)
    with pytest.raises(TypeError, match="torch_state_dict must be a Mapping"):
        from_torch(model, [("0.weight", np.zeros((8, 4)))])
    with pytest.raises(TypeError, match="strict must be True or False"):
        from_torch(model, {}, strict=0)
    with pytest.raises(TypeError, match="model must be a Layer"):
        to_torch(Tensor(np.zeros(2)))


def test_batch_norms_count_of_batches_loads_and_saves_as_torchs():
    """``num_batches_tracked`` goes into the layer with the statistics and comes back out: a
    norm with ``momentum=None`` (the cumulative average, which reads the count) trained on by
    torch, loaded, then given one more training batch moves its running statistics as
    torch's, with torch's output and input gradient; a bad count is an error."""
    rng = np.random.default_rng(0)
    batches = [rng.normal(size=(N, 3, 4, 4)) for _ in range(4)]
    theirs = torch.nn.BatchNorm2d(3, momentum=None).double()
    for x in batches[:3]:
        theirs(torch.tensor(x))
    ours = nn.BatchNorm2d(3, momentum=None).double()
    assert from_torch(ours, theirs.state_dict()) == ([], [])
    assert ours.num_batches_tracked == 3
    weights = rng.normal(size=batches[3].shape)
    want, want_grad = run_theirs(theirs, batches[3], weights)
    got, got_grad = run_ours(ours, batches[3], weights)
    close(got, want)
    close(got_grad, want_grad)
    state = to_torch(ours)
    assert state["num_batches_tracked"] == theirs.num_batches_tracked.item() == 4
    for key, value in theirs.state_dict().items():
        close(state[key], value.numpy(), rtol=RTOL, atol=ATOL)
    bad = {**theirs.state_dict(), "num_batches_tracked": torch.tensor(-1)}
    with pytest.raises(ValueError, match="num_batches_tracked must be a non-negative integer"):
        from_torch(ours, bad)
    assert ours.num_batches_tracked == 4  # a failed load changes nothing


def test_layers_also_kept_in_a_plain_list_load_from_torchs_names():
    """rasbt's checkpointed NiN keeps its Sequential's layers in a plain list too
    (``self.modules_list = [m for k, m in self.classifier._modules.items()]``): torch's
    state_dict does not walk the list, tricycle's walk does; those names alias tensors that
    load under the Sequential's, so none is missing, and the model gives torch's numbers."""

    def build(model, nn):
        nn.Module.__init__(model)
        model.classifier = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        model.modules_list = [m for k, m in model.classifier._modules.items()]

    class Listed(nn.Module):
        def __init__(self):
            build(self, nn)

        def forward(self, x):
            for m in self.modules_list:
                x = m(x)
            return x

    class TorchListed(torch.nn.Module):
        def __init__(self):
            build(self, torch.nn)

        forward = Listed.forward

    torch.manual_seed(0)
    theirs, ours = TorchListed().double(), Listed().to(np.float64)
    names = [f"classifier.{i}.{n}" for i in (0, 2) for n in ("weight", "bias")]
    assert list(theirs.state_dict()) == names
    assert from_torch(ours, theirs.state_dict()) == ([], [])
    x = np.random.default_rng(0).normal(size=(5, 3))
    want = theirs(torch.from_numpy(x)).detach().numpy()
    close(ours(to_tensor(x, dtype=np.float64)).numpy(), want, RTOL, ATOL)
    state = dict(theirs.state_dict())
    del state["classifier.2.bias"]  # a name missing still is, under each of its paths
    assert from_torch(ours, state, strict=False)[0] == ["classifier.2.bias", "modules_list.2.bias"]
