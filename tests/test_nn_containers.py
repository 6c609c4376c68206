"""``nn.Identity``, ``nn.ModuleList`` and ``nn.ModuleDict``: the list and dict behaviour, what
the Layer walk finds inside them (state-dict names, parameters, train/eval, devices, an
optimiser's step), and a model built with a ModuleList against the same torch model."""

import pickle

import numpy as np
import pytest

import tricycle.nn as nn
from tricycle import backend
from tricycle.casting import cast_parameters
from tricycle.optimisers import StochasticGradientDescent
from tricycle.tensor import Tensor, to_tensor


def build_tower(model, nn, widths=(3, 5, 4), heads=("a", "b")):
    """Linear layers in a ModuleList, heads in a ModuleDict, as a torch model writes them;
    ``nn`` is ``tricycle.nn`` or ``torch.nn``."""
    nn.Module.__init__(model)
    model.blocks = nn.ModuleList([nn.Linear(i, o) for i, o in zip(widths[:-1], widths[1:])])
    model.heads = nn.ModuleDict({name: nn.Linear(widths[-1], 2) for name in heads})
    model.activation = nn.Tanh()
    model.skip = nn.Identity()


def tower_forward(model, x):
    for block in model.blocks:
        x = model.activation(block(x))
    x = model.skip(x)
    return sum(head(x) for head in model.heads.values())


class Tower(nn.Module):
    def __init__(self):
        build_tower(self, nn)

    forward = tower_forward


def torch_tower(torch):
    """The torch twin of Tower (made here: torch is only a test oracle)."""

    class TorchTower(torch.nn.Module):
        def __init__(self):
            build_tower(self, torch.nn)

        forward = tower_forward

    return TorchTower()


# ---------------------------------------------------------------------- Identity
def test_identity_returns_its_input_and_passes_the_gradient():
    x = to_tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    identity = nn.Identity(54, unused=0.1)  # arguments are ignored, as torch's
    assert identity(x) is x
    (identity(x) * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.array, np.full((2, 3), 3.0))
    assert identity.parameters() == [] and identity.state_dict() == {}


# ---------------------------------------------------------------------- ModuleList
def test_module_list_behaves_as_a_list():
    a, b, c, d = (nn.Linear(2, 2) for _ in range(4))
    layers = nn.ModuleList([a, b])
    assert len(layers) == 2 and list(layers) == [a, b] and layers[-1] is b
    assert layers.append(c) is layers and layers[2] is c
    layers.insert(0, d)
    assert list(layers) == [d, a, b, c]
    sliced = layers[1:3]
    assert isinstance(sliced, nn.ModuleList) and list(sliced) == [a, b]
    layers += [nn.ReLU()]
    assert len(layers) == 5 and isinstance(layers[4], nn.ReLU)
    layers[4] = nn.Sigmoid()  # any callable: tricycle's Sigmoid is no Layer
    del layers[0]
    assert list(layers)[:3] == [a, b, c]
    assert list(nn.ModuleList([a]) + nn.ModuleList([b])) == [a, b]
    assert list(nn.ModuleList().extend(iter([c, d]))) == [c, d]
    joined = nn.ModuleList([a])
    joined += nn.ModuleList([b])
    assert list(joined.extend(nn.ModuleList([c]))) == [a, b, c]
    assert len(nn.ModuleList()) == 0


def test_module_list_refuses_what_is_not_a_layer():
    layers = nn.ModuleList([nn.Linear(2, 2)])
    with pytest.raises(IndexError, match="index 1 is out of range for 1 layers"):
        layers[1]
    with pytest.raises(TypeError, match=r"ModuleList: \[1\] must be callable, got 3"):
        layers.append(3)
    with pytest.raises(TypeError, match="an iterable of layers"):
        layers.extend(nn.Linear(2, 2))  # a Layer, not a list of them
    with pytest.raises(TypeError, match="index must be an integer or a slice"):
        layers["0"]
    with pytest.raises(TypeError, match=r"\[1\] must be callable"):
        nn.ModuleList([nn.Linear(2, 2), "relu"])
    assert len(layers) == 1  # nothing added by the failed calls


def test_calling_a_container_is_an_error():
    x = to_tensor(np.ones((1, 2)))
    with pytest.raises(TypeError, match="ModuleList is a container and has no forward"):
        nn.ModuleList([nn.Linear(2, 2)])(x)
    with pytest.raises(TypeError, match="ModuleDict is a container and has no forward"):
        nn.ModuleDict({"a": nn.Linear(2, 2)})(x)

    class Named(nn.Module):  # torch's habit: a ModuleList named `layers`
        def __init__(self):
            self.layers = nn.ModuleList([nn.Dropout(0.5), nn.Linear(2, 2)])

    model = Named()
    assert not model.eval().layers[0].training  # train() and eval() walk past the name
    assert model.train().layers[0].training
    with cast_parameters(model, np.float16):  # mixed precision walks past it too
        assert model.layers[1].weights.dtype == np.float16
    assert model.layers[1].weights.dtype == np.float32
    with pytest.raises(TypeError, match="attribute named `layers` hides the method"):
        model.layers()


# ---------------------------------------------------------------------- ModuleDict
def test_module_dict_behaves_as_an_ordered_dict():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3)
    heads = nn.ModuleDict({"z": a, "y": b})
    assert list(heads) == ["z", "y"] and list(heads.keys()) == ["z", "y"]
    assert list(heads.values()) == [a, b] and list(heads.items()) == [("z", a), ("y", b)]
    assert "z" in heads and "x" not in heads and len(heads) == 2 and heads["y"] is b
    assert heads.update([("x", c), ("z", b)]) is heads
    assert list(heads.items()) == [("z", b), ("y", b), ("x", c)]  # replaced in place
    heads["w"] = a
    assert heads.pop("y") is b and list(heads) == ["z", "x", "w"]
    del heads["z"]
    assert list(heads) == ["x", "w"]
    heads.update(nn.ModuleDict({"v": a}))
    assert list(heads) == ["x", "w", "v"]
    heads.clear()
    assert len(heads) == 0


def test_module_dict_refuses_bad_keys_and_values():
    heads = nn.ModuleDict({"a": nn.Linear(2, 2)})
    with pytest.raises(KeyError, match=r"no layer named 'b'; the keys are \['a'\]"):
        heads["b"]
    with pytest.raises(ValueError, match="key must be a non-empty name without dots, got 'x.y'"):
        heads["x.y"] = nn.ReLU()
    with pytest.raises(ValueError, match="non-empty name"):
        nn.ModuleDict({"": nn.ReLU()})
    with pytest.raises(TypeError, match="key must be a str, got 3"):
        heads.update({3: nn.ReLU()})
    with pytest.raises(TypeError, match=r"\['c'\] must be callable"):
        heads.update({"b": nn.ReLU(), "c": 2.0})
    with pytest.raises(TypeError, match=r"modules\[0\] must be a \(key, layer\) pair"):
        heads.update(["ab"])
    with pytest.raises(TypeError, match="a mapping or an iterable of"):
        heads.update(5)
    assert list(heads) == ["a"]  # a failed update changes nothing


def test_module_dict_items_are_attributes_as_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch.nn, nn):  # the same behaviour in both, written once (tricycle last)
        a, b, c = lib.Linear(2, 2), lib.Linear(2, 3), lib.Linear(3, 1)
        heads = lib.ModuleDict({"a": a, "b": b})
        assert heads.a is a and heads["a"] is a and heads.b is b
        heads.c = c  # a layer set as an attribute is an item, seen by the walk
        assert list(heads) == ["a", "b", "c"] and heads["c"] is c
        heads.a = b  # replaces the item in place
        assert list(heads.items())[0] == ("a", b)
        del heads.c
        assert list(heads) == ["a", "b"] and "c" not in heads
        with pytest.raises(AttributeError, match="no attribute"):
            _ = heads.missing
        with pytest.raises(TypeError):  # a key set to what is no layer
            heads.a = 3.0
    heads.name = "plain"  # anything else is a plain attribute, outside the walk
    assert heads.name == "plain" and "name" not in heads
    assert "a" in dir(heads)
    assert list(heads.state_dict()) == ["a.weights", "a.bias"]  # a and b are one layer now
    heads["update"] = a  # a key named as a method: the attribute is the method, [] the item
    assert callable(heads.update) and heads.update is not a and heads["update"] is a


def test_module_dict_attributes_survive_pickling_with_the_same_names():
    model = Tower()
    model.heads.c = nn.Linear(4, 2)
    clone = pickle.loads(pickle.dumps(model))
    assert isinstance(clone.heads.c, nn.Linear) and clone.heads.a is clone.heads["a"]
    assert list(clone.state_dict()) == list(model.state_dict())
    names = [n for n, _ in clone.named_layers()]
    assert names[-5:] == ["heads.a", "heads.b", "heads.c", "activation", "skip"]  # as [] names them
    assert list(clone.state_dict())[-2:] == ["heads.c.weights", "heads.c.bias"]
    with pytest.raises(AttributeError, match="no attribute or layer 'z'"):
        _ = clone.heads.z


# ---------------------------------------------------------------------- what the walk finds
def test_state_dict_names_the_layers_by_position_and_key():
    model = Tower()
    names = [name for name, _ in model.named_parameters()]
    assert names == [
        "blocks.0.weights", "blocks.0.bias", "blocks.1.weights", "blocks.1.bias",
        "heads.a.weights", "heads.a.bias", "heads.b.weights", "heads.b.bias",
    ]  # fmt: skip
    state = model.state_dict()
    assert list(state) == names
    np.testing.assert_array_equal(state["blocks.1.weights"], model.blocks[1].weights.array)
    np.testing.assert_array_equal(state["heads.b.bias"], model.heads["b"].bias.array)
    # the counts torch finds in the same model
    assert model.num_parameters() == (3 * 5 + 5) + (5 * 4 + 4) + 2 * (4 * 2 + 2)

    clone = Tower()  # other random weights, loaded from the first model's
    clone.load_state_dict(state)
    for (_, ours), (_, theirs) in zip(clone.named_parameters(), model.named_parameters()):
        np.testing.assert_array_equal(ours.array, theirs.array)
    nested = nn.ModuleDict({"deep": nn.ModuleList([nn.Identity(), nn.LayerNorm(2)])})
    assert list(nested.state_dict()) == ["deep.1.gamma", "deep.1.beta"]
    assert "(blocks): ModuleList(\n    (0): Dense(from_size=3" in repr(model)


def test_same_names_and_counts_as_torch():
    torch = pytest.importorskip("torch")
    theirs = torch_tower(torch)
    ours = Tower()
    their_names = [name.replace("weight", "weights") for name, _ in theirs.named_parameters()]
    assert [name for name, _ in ours.named_parameters()] == their_names
    assert ours.num_parameters() == sum(p.numel() for p in theirs.parameters())


def test_train_and_eval_reach_the_layers_inside():
    model = nn.Sequential(nn.ModuleDict({"a": nn.ModuleList([nn.Dropout(0.5)])}))
    dropout = model[0]["a"][0]
    model.eval()
    assert not dropout.training and not model[0]["a"].training
    x = to_tensor(np.ones((4, 8)))
    assert dropout(x) is x  # the identity in eval mode
    model.train()
    assert dropout.training and (dropout(x).array == 0).any()


def test_an_optimiser_step_updates_the_layers_inside():
    model = Tower()
    before = {name: t.array.copy() for name, t in model.named_parameters()}
    model(to_tensor(np.ones((2, 3)))).sum().backward()
    grads = {name: t.grad.array.copy() for name, t in model.named_parameters()}
    model.update(StochasticGradientDescent(learning_rate=0.1))
    for name, t in model.named_parameters():
        np.testing.assert_allclose(t.array, before[name] - 0.1 * grads[name], rtol=1e-6)
        assert t.grad is None  # zeroed by update
    heads = model.heads  # a ModuleDict's update(optimiser) is Layer.update
    heads["a"](to_tensor(np.ones(4))).sum().backward()
    old = heads["a"].bias.array.copy()
    heads.update(StochasticGradientDescent(learning_rate=1.0))
    np.testing.assert_allclose(heads["a"].bias.array, old - 1.0)


def test_containers_pickle():
    model = Tower()
    clone = pickle.loads(pickle.dumps(model))
    assert list(clone.state_dict()) == list(model.state_dict())
    np.testing.assert_array_equal(clone.heads["a"].weights.array, model.heads["a"].weights.array)


def test_to_gpu_and_back_moves_the_layers_inside():
    if not backend.cupy_available():
        pytest.skip("no CUDA GPU")
    model = Tower()
    model.to_gpu()
    assert all(t.on_gpu for _, t in model.named_tensors())
    assert model.blocks[0].weights.on_gpu and model.heads["b"].bias.on_gpu
    model.from_gpu()
    assert not any(t.on_gpu for _, t in model.named_tensors())


def test_a_module_list_model_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Tower(), torch_tower(torch)
    for mine, their in zip(ours.parameters(), theirs.parameters()):
        value = their.detach().numpy()
        mine.array[...] = value.T if value.ndim == 2 else value  # Linear: (out, in) -> (in, out)
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    x_ours, x_theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, expected = ours(x_ours), theirs(x_theirs)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(x_ours.grad.array, x_theirs.grad.numpy(), rtol=1e-4, atol=1e-6)
    for (name, mine), their in zip(ours.named_parameters(), theirs.parameters()):
        grad = their.grad.numpy()
        grad = grad.T if grad.ndim == 2 else grad
        np.testing.assert_allclose(mine.grad.array, grad, rtol=1e-4, atol=1e-6, err_msg=name)


def test_sequential_slice_is_a_sequential_as_torchs():
    """``model[:(i + 1)]`` (the neural style tutorial's trimming) is a Sequential of those
    layers, the same ones, that runs them; an index is still the layer."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    nn.from_torch(ours, theirs.state_dict())
    for index, width in (slice(None, 2), 3), (slice(1, None), 4), (slice(None, None, 2), 3):
        x = rng.normal(size=(2, width)).astype(np.float32)
        head, theirs_head = ours[index], theirs[index]
        assert isinstance(head, nn.Sequential) and list(head) == ours.sequence[index]
        x_ours, x_theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, expected = head(x_ours), theirs_head(x_theirs)
        np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
        out.sum().backward()
        expected.sum().backward()
        np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-6, atol=1e-6)
    assert ours[0] is ours.sequence[0] and len(ours[5:]) == 0


def test_sequential_grows_as_torchs():
    """``add_module``, ``append`` and ``extend`` on a Sequential: the layer runs, last, as in
    torch (a VGG's slices are built with ``add_module(str(i), layer)``)."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    theirs, ours = torch.nn.Sequential(), nn.Sequential()
    for seq, lib in ((theirs, torch.nn), (ours, nn)):
        seq.add_module("0", lib.Linear(3, 4))
        seq.append(lib.ReLU())
        seq.extend([lib.Linear(4, 2)])
    assert len(ours) == len(theirs) == 3
    nn.from_torch(ours, theirs.state_dict())
    expected = theirs(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(ours(x).numpy(), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError, match="Sequential.append: layer"):
        ours.append(3)


def test_a_sequential_of_an_ordered_dict_names_its_layers_as_torchs():
    torch = pytest.importorskip("torch")
    from collections import OrderedDict  # noqa: PLC0415

    def build(module):
        return module.Sequential(OrderedDict([
            ("hidden_linear", module.Linear(3, 5)), ("hidden_activation", module.Tanh()),
            ("output_linear", module.Linear(5, 2)),
        ]))  # fmt: skip

    ours, theirs = build(nn), build(torch.nn)
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    assert set(nn.to_torch(ours)) == set(theirs.state_dict())
    assert ours.hidden_linear is ours[0] and list(ours._modules) == list(theirs._modules)
    assert list(ours[1:]._modules) == ["hidden_activation", "output_linear"]
    x = np.random.default_rng(7).normal(size=(4, 3)).astype(np.float32)
    mine, expected = ours(to_tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(mine.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    mine.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(ours.output_linear.weights.grad.numpy(),
                               theirs.output_linear.weight.grad.numpy().T, rtol=1e-5,
                               atol=1e-7)  # fmt: skip: float32 sums in torch's BLAS order


@pytest.mark.parametrize("named", [False, True])
def test_a_sequential_item_set_replaces_that_layer_as_torchs(named):
    torch = pytest.importorskip("torch")
    from collections import OrderedDict  # noqa: PLC0415

    def build(module):  # a classifier's head replaced, as a fine-tuning script does
        layers = [module.Linear(3, 5), module.Tanh(), module.Linear(5, 2)]
        if named:
            return module.Sequential(OrderedDict(zip(["hidden", "act", "head"], layers)))
        return module.Sequential(*layers)

    ours, theirs = build(nn), build(torch.nn)
    for model, module in (ours, nn), (theirs, torch.nn):
        model[-1] = module.Linear(5, 4)
        model[0] = module.Linear(3, 5)
    assert nn.from_torch(ours, theirs.state_dict()) == ([], [])
    assert list(ours._modules) == list(theirs._modules) and len(ours) == 3
    if named:
        assert ours.head is ours[2] and ours.head.out_features == 4
    x = np.random.default_rng(3).normal(size=(2, 3)).astype(np.float32)
    mine, expected = ours(to_tensor(x)), theirs(torch.tensor(x))
    np.testing.assert_allclose(mine.numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    mine.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(ours[0].weights.grad.numpy(), theirs[0].weight.grad.numpy().T,
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    with pytest.raises(TypeError, match=r"Sequential: layers\[1\]"):
        ours[1] = 3
    with pytest.raises(IndexError):
        ours[3] = nn.ReLU()


def test_dropouts_p_reads_and_sets_its_probability_as_torchs():
    drop = nn.Dropout(0.5)
    drop.p = 0.0  # torch's code sets it: the layer is the identity then, in training too
    x = to_tensor(np.ones(8))
    assert drop.p == drop.probability == 0.0 and drop.train()(x) is x
    with pytest.raises(ValueError, match="Dropout: p must be"):
        drop.p = 1.5


def test_add_module_names_and_del_renumbers_as_torchs():
    """DenseNet's ``_DenseLayer(nn.Sequential)`` adds ``norm1`` ... by ``add_module`` and reads
    ``self.norm1``; ``del seq[i]`` renumbers every name, as torch's."""
    torch = pytest.importorskip("torch")
    made = []
    for module in nn, torch.nn:
        seq = module.Sequential(module.Linear(3, 4), module.ReLU())
        seq.add_module("head", module.Linear(4, 2))
        assert seq.head is seq[2] and list(seq._modules) == ["0", "1", "head"]
        made.append(seq)
    assert nn.from_torch(made[0], made[1].state_dict()) == ([], [])
    x = np.random.default_rng(8).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(made[0](to_tensor(x)).numpy(),
                               made[1](torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-7)  # fmt: skip: float32 sums near 0 (torch's BLAS)
    for seq in made:
        del seq[1]
        assert list(seq._modules) == ["0", "1"] and len(seq) == 2
