"""torch.nn.Module's methods on tricycle's Layer (``tricycle.module_torch``): named_modules,
children, apply, requires_grad_ (freezing through an optimiser step), to/cuda/cpu, the casts
(half, bfloat16, float, double), train(False), the ``inplace`` of ReLU, LeakyReLU, SiLU and
Dropout, get_submodule/get_parameter/get_buffer, buffers (non-persistent ones too) and the
AttributeError of a torch method tricycle does another way; each against torch on a model of
the same structure. The hooks are tests/test_module_hooks.py's."""

import copy
import pickle

import numpy as np
import pytest

import tricycle.nn as nn
from tricycle import backend
from tricycle.module import parameter
from tricycle.optimisers import AdamW, StochasticGradientDescent
from tricycle.tensor import Tensor, to_tensor

NO_GPU = pytest.mark.skipif(backend.cupy_available(), reason="a GPU is present")
GPU = pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")


def build(model, nn):
    """A model as a torch user writes it (``nn`` is tricycle.nn or torch.nn): a ModuleList, a
    ModuleDict holding a ModuleList, and a layer reached twice (``tied``)."""
    nn.Module.__init__(model)
    model.stem = nn.Linear(3, 4)
    model.blocks = nn.ModuleList([nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4)])
    model.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.ModuleList([nn.Linear(4, 2)])})
    model.tied = model.blocks[0]
    model.dropout = nn.Dropout(0.5)


class Model(nn.Module):
    def __init__(self):
        build(self, nn)


def torch_model(torch):
    class TorchModel(torch.nn.Module):
        def __init__(self):
            build(self, torch.nn)

    return TorchModel()


def names(pairs):
    return [name for name, _ in pairs]


# ---------------------------------------------------------------------- sublayers
def test_named_modules_and_children_have_torch_names_and_order():
    torch = pytest.importorskip("torch")
    ours, theirs = Model(), torch_model(torch)
    assert names(ours.named_modules()) == names(theirs.named_modules())
    assert ours.named_modules().__next__() == ("", ours)  # an iterator, self first
    assert names(ours.named_modules(remove_duplicate=False)) == names(
        theirs.named_modules(remove_duplicate=False)
    )
    assert names(ours.named_modules(prefix="m")) == names(theirs.named_modules(prefix="m"))
    assert names(ours.named_children()) == names(theirs.named_children())
    assert names(ours.blocks.named_children()) == ["0", "1", "2"]
    # the layers themselves: each name is the attribute path, self first
    assert list(ours.named_modules()) == ours.named_layers()
    assert list(ours.modules()) == [layer for _, layer in ours.named_modules()]
    assert list(ours.children()) == [ours.stem, ours.blocks, ours.heads, ours.tied, ours.dropout]
    assert dict(ours.named_modules())["heads.b.0"] is ours.heads["b"][0]
    assert len(list(theirs.modules())) == len(list(ours.modules()))


def test_a_dict_of_its_own_sublayers_and_a_list_of_activations_keep_torchs_names():
    """d2l's ``save_hyperparameters`` keeps a model's arguments in a dict (its encoder among
    them) and its attention decoder appends the attention weights to a list in forward: as
    torch's plain attributes, neither renames a parameter nor adds one."""
    torch = pytest.importorskip("torch")

    def model(lib):
        class Seq(lib.nn.Module):
            def __init__(self, encoder):
                super().__init__()
                self.hparams = {"lr": 0.1}
                self.encoder, self.head = encoder, lib.nn.Linear(3, 2)
                self.hparams = {"encoder": encoder, "lr": 0.1}

            def forward(self, x):
                self.weights = [self.encoder(x).softmax(-1)]
                return self.head(self.weights[0])

        return Seq(lib.nn.Linear(4, 3))

    ours, theirs = model(__import__("tricycle")), model(torch)
    x = np.ones((2, 4), np.float32)
    ours(to_tensor(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    torchs = [name.replace("weight", "weights") for name, _ in theirs.named_parameters()]
    assert (
        names(ours.named_parameters())
        == torchs
        == ["encoder.weights", "encoder.bias", "head.weights", "head.bias"]
    )
    assert list(ours.state_dict()) == names(ours.named_parameters())
    assert all(p.grad is not None for p in ours.parameters())


def test_apply_visits_children_first_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Model(), torch_model(torch)
    visits = {}
    for model in (ours, theirs):
        name_of = {id(layer): name for name, layer in model.named_modules()}
        visits[model] = []
        assert (
            model.apply(lambda layer, v=visits[model], n=name_of: v.append(n[id(layer)])) is model
        )
    assert visits[ours] == visits[theirs]
    assert visits[ours].count("blocks.0") == 2 and visits[ours][-1] == ""  # tied: twice


def test_apply_initialises_weights_as_a_torch_user_does():
    def init(layer):
        if isinstance(layer, nn.Linear):
            layer.weights.array[...] = 0.5

    model = Model().apply(init)
    assert all((t.array == 0.5).all() for n, t in model.named_parameters() if "weights" in n)


# ---------------------------------------------------------------------- freezing
class MLP(nn.Module):
    def __init__(self):
        self.first, self.second, self.third = nn.Linear(3, 5), nn.Linear(5, 4), nn.Linear(4, 2)

    def forward(self, x):
        return self.third(nn.ReLU()(self.second(nn.ReLU()(self.first(x)))))


def torch_twin(torch, ours):
    """The same MLP in torch (float64), with our weights: layer i of ours is theirs[2 i]."""
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 4), torch.nn.ReLU(),
        torch.nn.Linear(4, 2),
    ).double()  # fmt: skip
    with torch.no_grad():
        for mine, their in zip((ours.first, ours.second, ours.third), theirs[::2]):
            their.weight.copy_(torch.tensor(mine.weights.array.T))
            their.bias.copy_(torch.tensor(mine.bias.array))
    return theirs


OPTIMISERS = {
    "AdamW": (
        lambda: AdamW(0.1, weight_decay=0.1, decay_filter=lambda name, p: True),
        lambda torch, params: torch.optim.AdamW(params, 0.1, weight_decay=0.1),
    ),
    "SGD": (
        lambda: StochasticGradientDescent(0.1, weight_decay=0.1, momentum=0.9),
        lambda torch, params: torch.optim.SGD(params, 0.1, momentum=0.9, weight_decay=0.1),
    ),
}


@pytest.mark.parametrize("optimiser", OPTIMISERS)
def test_a_frozen_layer_gets_no_gradient_and_is_not_updated_as_torch(optimiser):
    torch = pytest.importorskip("torch")
    make_ours, make_theirs = OPTIMISERS[optimiser]
    ours = MLP().to(np.float64)
    theirs = torch_twin(torch, ours)
    assert ours.second.requires_grad_(False) is ours.second
    theirs[2].requires_grad_(False)
    frozen = {n: t.array.copy() for n, t in ours.named_tensors() if n.startswith("second")}
    x = np.random.default_rng(0).normal(size=(6, 3))
    ours_opt = make_ours()
    theirs_opt = make_theirs(torch, [p for p in theirs.parameters() if p.requires_grad])
    for _ in range(2):  # the second step uses the moments (momentum) of the first
        x_ours, x_theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ours_opt.step()
        y_ours, y_theirs = ours(x_ours), theirs(x_theirs)
        (y_ours * y_ours).sum().backward()
        (y_theirs * y_theirs).sum().backward()
        assert ours.second.weights.grad is None and ours.second.bias.grad is None
        np.testing.assert_allclose(x_ours.grad.array, x_theirs.grad.numpy(), rtol=1e-10)
        ours.update(ours_opt)
        theirs_opt.step()
        theirs_opt.zero_grad()
    for name, values in frozen.items():
        np.testing.assert_array_equal(dict(ours.named_tensors())[name].array, values, name)
    for mine, their in zip((ours.first, ours.second, ours.third), theirs[::2]):
        np.testing.assert_allclose(mine.weights.array, their.weight.detach().numpy().T, 1e-10)
        np.testing.assert_allclose(mine.bias.array, their.bias.detach().numpy(), 1e-10)
    assert trained(ours) == ["first.weights", "first.bias", "third.weights", "third.bias"]
    assert names(ours.named_parameters()) == names(ours.named_tensors())  # frozen ones too
    assert len(ours.parameters()) == len(list(theirs.parameters())) == 6  # as torch lists them
    assert "second.weights" in ours.state_dict()  # still saved, and loaded


def trained(model) -> list[str]:
    """The names of the parameters that require grad (a frozen one is listed, as torch's)."""
    return [n for n, p in model.named_parameters() if p.requires_grad]


def test_a_parameter_frozen_by_hand_is_thawed_by_torchs_loop():
    """Raschka's ch06: every parameter frozen by hand, then the last block thawed by a loop
    over its ``parameters()``, which lists frozen parameters as torch's does (before, it found
    none: only the new head trained, silently)."""
    torch = pytest.importorskip("torch")
    for lib, make in ((nn, lambda: MLP()), (torch.nn, lambda: torch_twin(torch, MLP()))):
        model = make()
        for param in model.parameters():
            param.requires_grad = False
        last = model.third if lib is nn else model[4]
        for param in last.parameters():
            param.requires_grad = True
        assert [p.requires_grad for p in model.parameters()] == [False] * 4 + [True] * 2
        assert len(list(model.parameters())) == 6 and len(list(model.buffers())) == 0


def test_thawing_gives_back_the_parameters_frozen_and_never_a_buffer():
    model = nn.ModuleList([nn.Linear(3, 4), nn.BatchNorm1d(4)])
    everything = names(model.named_parameters())
    buffers = [n for n, t in model.named_tensors() if not t.requires_grad]
    assert buffers == ["1.running_mean", "1.running_var"]
    model[0].weights.grad = Tensor(np.ones((3, 4)))
    model.requires_grad_(False)
    assert trained(model) == [] and model.num_parameters() == 0
    assert names(model.named_parameters()) == everything  # listed, frozen, as torch's
    assert model[0].weights.grad is None  # dropped: zero_grad would not reach it
    model = pickle.loads(pickle.dumps(copy.deepcopy(model)))  # the record travels
    model.requires_grad_()
    assert trained(model) == everything
    assert [n for n, t in model.named_tensors() if not t.requires_grad] == buffers
    # a sublayer frozen on its own (twice: no change), thawed from the top
    model[1].requires_grad_(False).requires_grad_(False)
    assert trained(model) == ["0.weights", "0.bias"]
    model.requires_grad_(True)
    assert trained(model) == everything


def test_freezing_a_tied_parameter_freezes_it_everywhere_and_thawing_finds_it():
    embedding, head = nn.Embedding(5, 3), nn.Linear(3, 5, bias=False)
    head.weights = embedding.weights  # tied (shapes aside: only the walk matters here)
    model = nn.ModuleList([embedding, head])
    head.requires_grad_(False)  # as torch's: the one tensor, wherever it is held
    assert trained(model) == [] and "0.weights" in model.state_dict()
    model.requires_grad_(True)
    assert model.parameters() == [embedding.weights] and trained(model) == ["0.weights"]
    model.requires_grad_(False).requires_grad_(True)  # recorded by both holders, thawed once
    assert model.parameters() == [embedding.weights] and trained(model) == ["0.weights"]


# ---------------------------------------------------------------------- devices and dtypes
def test_to_cpu_is_a_no_op_and_a_dtype_casts_the_floating_tensors():
    torch = pytest.importorskip("torch")
    model = MLP()
    model.ids = Tensor(np.arange(3), requires_grad=False)  # an integer buffer stays one
    arrays = [t.array for _, t in model.named_tensors()]
    for moved in (model.to("cpu"), model.cpu(), model.to(device="cpu", non_blocking=True)):
        assert moved is model
    assert all(t.array is a for (_, t), a in zip(model.named_tensors(), arrays))  # not copied
    model.first.weights.grad = Tensor(np.ones((3, 5), np.float32))
    assert model.to("cpu", np.float64) is model
    assert {str(t.dtype) for n, t in model.named_tensors() if n != "ids"} == {"float64"}
    assert model.ids.dtype == np.arange(3).dtype and model.first.weights.grad.dtype == np.float64
    model.to(np.dtype("float32")).to(to_tensor(np.zeros(2), dtype=np.float64))
    assert model.third.bias.dtype == np.float64
    x = np.random.default_rng(1).normal(size=(2, 3))
    np.testing.assert_allclose(
        model(Tensor(x)).array, torch_twin(torch, model)(torch.tensor(x)).detach(), 1e-12
    )


def test_bad_devices_and_dtypes_are_refused_by_name():
    model = MLP()
    with pytest.raises(ValueError, match=r"^MLP.to: device must be 'cpu', 'gpu', 'cuda'"):
        model.to("tpu")
    with pytest.raises(TypeError, match=r"^MLP.to: dtype must be a floating numpy dtype"):
        model.to(np.int32)
    with pytest.raises(TypeError, match=r"^MLP.to: device must be a device when dtype"):
        model.to(np.float64, np.float32)
    with pytest.raises(TypeError, match=r"^MLP.to: non_blocking must be True or False"):
        model.to("cpu", non_blocking=1)
    with pytest.raises(ValueError, match=r"^MLP.cuda: device must be a GPU, got 'cpu'"):
        model.cuda("cpu")
    assert model.first.weights.dtype == np.float32  # nothing changed


MOVES = {
    "to('cuda')": lambda model: model.to("cuda"),
    "to('cuda:1')": lambda model: model.to("cuda:1"),
    "to(0)": lambda model: model.to(0),
    "cuda()": lambda model: model.cuda(),
    "cuda(1)": lambda model: model.cuda(1),
}


@NO_GPU
@pytest.mark.parametrize("move", MOVES)
def test_a_gpu_without_a_gpu_is_a_clear_error(move):
    model = MLP()
    with pytest.raises(RuntimeError, match="no CUDA GPU is available"):
        MOVES[move](model)
    assert not model.first.weights.on_gpu


@GPU
def test_to_cuda_and_back():
    model = MLP()
    x = np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)
    expected = model(to_tensor(x)).array
    assert model.to("cuda:0") is model and model.third.bias.device == "cuda:0"
    assert model.cpu().cuda().first.weights.on_gpu
    out = model(to_tensor(x).to_gpu(0))
    np.testing.assert_allclose(backend.to_host_array(out.array), expected, rtol=1e-5, atol=1e-6)
    assert not model.to("cpu").first.weights.on_gpu


# ---------------------------------------------------------------------- train(mode)
def test_train_false_is_eval_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Model(), torch_model(torch)
    for mode in (False, True):
        assert ours.train(mode) is ours
        theirs.train(mode)
        assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
        assert all(m.training is mode for m in ours.modules())
    x = to_tensor(np.ones((2, 4)))
    assert ours.train(False).dropout(x) is x and ours.eval() is ours
    with pytest.raises(TypeError, match=r"^Model.train: mode must be True or False, got 0"):
        ours.train(0)


# ---------------------------------------------------------------------- inplace
def test_inplace_activations_match_torch_in_place_forward_and_backward():
    torch = pytest.importorskip("torch")
    ours = [nn.Linear(3, 5), nn.ReLU(inplace=True), nn.Linear(5, 4),
            nn.LeakyReLU(0.2, inplace=True), nn.Linear(4, 4), nn.SiLU(inplace=True),
            nn.Dropout(0.5, inplace=True)]  # fmt: skip
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 5), torch.nn.ReLU(inplace=True), torch.nn.Linear(5, 4),
        torch.nn.LeakyReLU(0.2, inplace=True), torch.nn.Linear(4, 4),
        torch.nn.SiLU(inplace=True), torch.nn.Dropout(0.5, inplace=True),
    ).double().eval()  # fmt: skip
    for mine, their in zip(ours[:6:2], theirs[:6:2]):
        mine.to(np.float64)
        with torch.no_grad():
            their.weight.copy_(torch.tensor(mine.weights.array.T))
            their.bias.copy_(torch.tensor(mine.bias.array))
    ours[-1].eval()
    x = np.random.default_rng(3).normal(size=(8, 3))
    x_ours, x_theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, outputs = x_ours, []
    for layer in ours:
        y = layer(y)
        outputs.append((y, y.array.copy()))
    y_theirs = theirs(x_theirs)
    np.testing.assert_allclose(y.array, y_theirs.detach().numpy(), rtol=1e-12)
    (y * y).sum().backward()
    (y_theirs * y_theirs).sum().backward()
    np.testing.assert_allclose(x_ours.grad.array, x_theirs.grad.numpy(), rtol=1e-10)
    for mine, their in zip(ours[:6:2], theirs[:6:2]):
        np.testing.assert_allclose(mine.weights.grad.array, their.weight.grad.numpy().T, 1e-10)
        np.testing.assert_allclose(mine.bias.grad.array, their.bias.grad.numpy(), 1e-10)
    # in place, as torch's: each activation wrote over the Linear's output it was given (the
    # same tensor, which holds the activation's values now); the leaf input is untouched
    np.testing.assert_array_equal(x_ours.array, x)
    for (linear, _), (activation, values) in zip(outputs[0:6:2], outputs[1:6:2]):
        assert activation is linear
        np.testing.assert_array_equal(linear.array, values)


def test_inplace_dropout_is_dropout_with_the_input_untouched():
    x = np.random.default_rng(4).normal(size=(4, 6))
    outputs = []
    for inplace in (False, True):
        x_ours = Tensor(x, requires_grad=True)
        y = nn.Dropout(0.5, seed=7, inplace=inplace)(x_ours)
        (y * y).sum().backward()
        outputs.append((y.array, x_ours.grad.array))
        np.testing.assert_array_equal(x_ours.array, x)
    np.testing.assert_array_equal(outputs[0][0], outputs[1][0])
    np.testing.assert_array_equal(outputs[0][1], outputs[1][1])
    assert (outputs[1][0] == 0).any() and (outputs[1][0] != 0).any()


def test_inplace_is_checked_shown_as_torch_and_old_pickles_load():
    torch = pytest.importorskip("torch")
    assert repr(nn.ReLU(inplace=True)) == repr(torch.nn.ReLU(inplace=True))
    assert repr(nn.ReLU()) == repr(torch.nn.ReLU())
    assert repr(nn.LeakyReLU(inplace=True)) == repr(torch.nn.LeakyReLU(inplace=True))
    assert repr(nn.SiLU(inplace=True)) == "Swish(inplace=True)"
    assert repr(nn.Dropout(0.1, inplace=True)) == "Dropout(probability=0.1, inplace=True)"
    for layer in (nn.ReLU, nn.LeakyReLU, nn.SiLU, nn.Swish):
        with pytest.raises(TypeError, match=rf"^{layer.__name__}: inplace must be True or False"):
            layer(inplace=1)
    with pytest.raises(TypeError, match=r"^Dropout: inplace must be True or False, got 'yes'"):
        nn.Dropout(0.1, inplace="yes")
    old = nn.LeakyReLU(inplace=True)
    del old.inplace  # a layer pickled before the argument existed
    assert repr(pickle.loads(pickle.dumps(old))) == "LeakyReLU(negative_slope=0.01)"


# ---------------------------------------------------------------------- what tricycle lacks
NOT_IN_TRICYCLE = {"register_backward_hook": "register_full_backward_hook"}


@pytest.mark.parametrize("method", NOT_IN_TRICYCLE)
def test_a_torch_method_tricycle_lacks_says_what_to_use(method):
    torch = pytest.importorskip("torch")
    assert callable(getattr(torch.nn.Module, method))  # a real torch method
    model = MLP()
    assert not hasattr(model, method)
    with pytest.raises(AttributeError) as caught:
        getattr(model, method)
    message = str(caught.value)
    assert message.startswith(f"MLP has no {method}() (torch.nn.Module's): "), message
    assert NOT_IN_TRICYCLE[method] in message, message


def test_a_layer_may_still_use_those_names_and_pickles_and_copies():
    class Holder(nn.Module):
        def register_backward_hook(self):  # a method of a subclass wins
            return "mine"

    holder = Holder()
    holder.buffers = [1, 2]  # an attribute too
    assert holder.register_backward_hook() == "mine" and holder.buffers == [1, 2]
    model = pickle.loads(pickle.dumps(copy.deepcopy(Model())))
    assert names(model.named_modules()) == names(Model().named_modules())
    assert "Not in tricycle" in nn.Module.register_backward_hook.__doc__  # for help()


def test_arguments_are_checked_by_name():
    model = MLP()
    with pytest.raises(TypeError, match=r"^MLP.apply: fn must be callable, got 3"):
        model.apply(3)
    with pytest.raises(TypeError, match=r"^MLP.requires_grad_: requires_grad must be True or"):
        model.requires_grad_(0)
    with pytest.raises(TypeError, match=r"^MLP.named_modules: prefix must be a str, got 1"):
        model.named_modules(prefix=1)


def test_buffers_parameters_and_modules_register_as_torch_s():
    """nanoGPT's causal mask as a buffer, a parameter and a layer added by name: found by the
    walk, saved, moved; against the same torch module's names."""
    torch = pytest.importorskip("torch")

    class Ours(nn.Module):
        def __init__(self):
            self.register_buffer("mask", np.tril(np.ones((3, 3), dtype=bool)))
            self.register_parameter("scale", parameter(np.ones(3)))
            self.add_module("proj", nn.Linear(3, 3))
            self.register_buffer("empty", None)

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(3, 3, dtype=torch.bool)))
            self.register_parameter("scale", torch.nn.Parameter(torch.ones(3)))
            self.add_module("proj", torch.nn.Linear(3, 3))
            self.register_buffer("empty", None)

    ours, theirs = Ours(), Theirs()
    assert names(ours.named_buffers()) == names(theirs.named_buffers()) == ["mask"]
    assert ours.mask.dtype == bool and not ours.mask.requires_grad
    assert {n for n, _ in ours.named_parameters()} == {"scale", "proj.weights", "proj.bias"}
    assert "mask" in ours.state_dict() and [t.dtype for t in ours.buffers()] == [bool]
    assert names(ours.named_children()) == names(theirs.named_children()) == ["proj"]
    with pytest.raises(TypeError, match="Ours.register_buffer: persistent must be True or"):
        ours.register_buffer("scratch", np.zeros(2), persistent=None)
    with pytest.raises(TypeError, match="Ours.register_parameter: param must be a Tensor that"):
        ours.register_parameter("bad", np.ones(2))


class WithMask(nn.Module):
    """A layer with a persistent buffer (running) and a non-persistent one (mask, as nanoGPT's
    causal mask), and a sublayer that has one too."""

    def __init__(self):
        self.register_buffer("running", np.zeros(3, np.float32))
        self.register_buffer("mask", np.tril(np.ones((3, 3), np.float32)), persistent=False)
        self.proj = nn.Linear(3, 3)
        self.proj.register_buffer("scratch", np.ones(2), persistent=False)


def torch_with_mask(torch):
    class TorchWithMask(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("running", torch.zeros(3))
            self.register_buffer("mask", torch.tril(torch.ones(3, 3)), persistent=False)
            self.proj = torch.nn.Linear(3, 3)
            self.proj.register_buffer("scratch", torch.ones(2), persistent=False)

    return TorchWithMask()


def test_a_non_persistent_buffer_moves_but_is_not_saved_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = WithMask(), torch_with_mask(torch)
    assert names(ours.named_buffers()) == names(theirs.named_buffers())
    assert names(ours.named_buffers()) == ["running", "mask", "proj.scratch"]
    keys = ["running", "proj.weights", "proj.bias"]  # torch's: running, proj.weight, proj.bias
    assert list(ours.state_dict()) == keys and len(theirs.state_dict()) == len(keys)
    assert "mask" not in theirs.state_dict() and "proj.scratch" not in theirs.state_dict()
    state = ours.state_dict()
    assert ours.load_state_dict(state) == ([], [])  # the mask is not expected
    with pytest.raises(ValueError, match=r"unexpected keys \['mask'\]"):
        ours.load_state_dict({**state, "mask": np.zeros((3, 3))})  # as torch's: unexpected
    assert ours.load_state_dict({**state, "mask": np.zeros((3, 3))}, strict=False) == ([], ["mask"])
    assert ours.mask.array.sum() == 6  # not loaded
    assert ours.double().mask.dtype == np.float64  # cast (and moved) with the layer
    ours.register_buffer("mask", np.ones(2))  # registered again as persistent: saved
    assert "mask" in ours.state_dict()


def test_checkpoint_keys_of_existing_models_do_not_change():
    from tricycle.configs import SmolGPTConfig
    from tricycle.models import GPT

    config = SmolGPTConfig()
    config.n_layers, config.embedding_dim, config.n_heads, config.vocab_size = 1, 8, 2, 11
    config.context_window = 4
    model = GPT(config)
    assert list(model.state_dict()) == names(model.named_tensors())
    assert list(WithMask().proj.state_dict()) == ["weights", "bias"]


def test_casts_give_torch_s_dtypes_and_return_self():
    torch = pytest.importorskip("torch")
    ours, theirs = WithMask(), torch_with_mask(torch)
    ours.ids = Tensor(np.arange(3), requires_grad=False)  # an integer buffer stays one
    theirs.register_buffer("ids", torch.arange(3))
    casts = {"half": np.float16, "double": np.float64, "float": np.float32}
    try:
        import ml_dtypes

        casts["bfloat16"] = np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        with pytest.raises(ImportError, match=r"^WithMask.bfloat16\(\) needs the ml_dtypes"):
            ours.bfloat16()
    for cast, dtype in casts.items():
        assert getattr(ours, cast)() is ours
        getattr(theirs, cast)()
        ours_dtypes = {n: t.dtype for n, t in ours.named_tensors()}
        theirs_dtypes = {n: t.dtype for n, t in [*theirs.named_parameters(),
                                                 *theirs.named_buffers()]}  # fmt: skip
        assert ours_dtypes["proj.weights"] == ours_dtypes["mask"] == dtype, cast
        assert ours_dtypes["ids"] == np.arange(3).dtype
        assert theirs_dtypes["proj.weight"] == theirs_dtypes["mask"] == getattr(torch, cast)
        assert theirs_dtypes["ids"] == torch.int64
        assert str(np.dtype(dtype)) == str(theirs_dtypes["mask"]).replace("torch.", "")


def test_get_submodule_parameter_and_buffer_by_dotted_name_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = Model(), torch_model(torch)
    ours.register_buffer("step", np.zeros(1))
    theirs.register_buffer("step", torch.zeros(1))
    torch_names = {"Dense": "Linear", "Model": "TorchModel"}  # the classes' names there
    for name, layer in ours.named_modules():
        assert ours.get_submodule(name) is layer
        kind = type(layer).__name__
        assert type(theirs.get_submodule(name)).__name__ == torch_names.get(kind, kind)
    assert ours.get_submodule("heads.b.0") is ours.heads["b"][0]
    assert ours.get_parameter("heads.b.0.weights") is ours.heads["b"][0].weights
    assert ours.get_parameter("stem.bias") is ours.stem.bias
    assert ours.get_buffer("step") is ours.step
    errors = {
        "get_submodule": ("stem.nope", "blocks.7", "stem.bias.x", "stem.bias"),
        "get_parameter": ("nope.bias", "stem.nope", "step"),
        "get_buffer": ("stem.nope", "stem.bias"),
    }
    for method, targets in errors.items():
        for target in targets:
            with pytest.raises(AttributeError) as caught_theirs:
                getattr(theirs, method)(target.replace("weights", "weight"))
            with pytest.raises(AttributeError) as caught_ours:
                getattr(ours, method)(target)
            message = str(caught_ours.value)
            for kind, torch_kind in torch_names.items():
                message = message.replace(f"{kind} has", f"{torch_kind} has")
            assert message == str(caught_theirs.value), (method, target)
    with pytest.raises(TypeError, match=r"^Model.get_submodule: target must be a str"):
        ours.get_submodule(0)


def test_parameters_is_a_list_that_next_reads_as_torchs_generator():
    """``next(model.parameters())`` (torch's idiom for a model's device or dtype) gives the
    first parameter, then the next; the result is still a list (len, indexing, passes)."""
    torch = pytest.importorskip("torch")
    ours, theirs = (
        nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1)),
        torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1)),
    )
    ours_it, theirs_it = ours.parameters(), theirs.parameters()
    shapes = [(next(ours_it).size(), tuple(next(theirs_it).shape)) for _ in range(4)]
    assert [a for a, _ in shapes] == [(2, 3), (3,), (3, 1), (1,)]  # (in, out): tricycle's Linear
    with pytest.raises(StopIteration):
        next(ours_it)
    with pytest.raises(StopIteration):
        next(theirs_it)
    params = ours.parameters()
    assert len(params) == 4 and params[0] is next(ours.parameters()) and list(params) == params
