"""tricycle.optim's Adagrad, RMSprop, Adadelta, Adamax, NAdam and RAdam (and Adam's amsgrad)
against torch.optim: an MLP trained side by side in float64 with every option (weights equal
after every step), two parameter groups of different settings, torch's defaults and state
keys, state_dict round trips that resume exactly, float32 on every backend, the errors."""

import pickle

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.optim as optim
from tricycle import backend
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)
X, Y = RNG.normal(size=(12, 4)), RNG.normal(size=(12, 3))


@pytest.fixture
def torch_float64():
    """torch's scalar state (step, NAdam's mu_product) in float64, as tricycle keeps it."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def twin_models():
    """The same MLP in torch and in tricycle.nn, in float64, with torch's initial weights."""
    torch.manual_seed(1)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3))
    theirs = theirs.double()
    ours = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def backward(model, x=X, y=Y):
    if isinstance(model, torch.nn.Module):
        ((model(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean().backward()
    else:
        (((model(Tensor(x, requires_grad=False)) - y) ** 2).mean()).backward()


def train(model, optimizer, steps: int) -> None:
    for _ in range(steps):
        optimizer.zero_grad()
        backward(model)
        optimizer.step()


def assert_same_weights(ours, theirs, rtol=1e-10):
    mine = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(mine[name], value.numpy(), rtol=rtol, atol=1e-13, err_msg=name)


CASES = {
    "Adagrad": dict(lr=0.1),
    "Adagrad-decays-accumulator": dict(
        lr=0.1, lr_decay=0.2, weight_decay=0.05, initial_accumulator_value=0.3, eps=1e-6
    ),
    "Adagrad-maximize": dict(lr=0.05, maximize=True),
    "RMSprop": dict(lr=0.01),
    "RMSprop-centered-momentum-decay": dict(
        lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.1, momentum=0.8, centered=True
    ),
    "RMSprop-centered": dict(lr=0.005, centered=True),
    "RMSprop-momentum-maximize": dict(lr=0.01, momentum=0.5, maximize=True),
    "Adadelta": dict(),
    "Adadelta-rho-eps-decay": dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1),
    "Adadelta-maximize": dict(lr=0.5, maximize=True),
    "Adamax": dict(lr=0.02),
    "Adamax-betas-eps-decay": dict(lr=0.02, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1),
    "Adamax-maximize": dict(lr=0.02, maximize=True),
    "NAdam": dict(lr=0.02),
    "NAdam-momentum-decay-l2": dict(
        lr=0.02, betas=(0.8, 0.9), momentum_decay=0.05, weight_decay=0.1
    ),
    "NAdam-decoupled": dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
    "NAdam-maximize": dict(lr=0.02, maximize=True),
    "RAdam": dict(lr=0.02),  # rho_t <= 5 for the first steps: momentum alone
    "RAdam-rectified-l2": dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1),
    "RAdam-rectified-decoupled": dict(
        lr=0.02, betas=(0.9, 0.9), weight_decay=0.2, decoupled_weight_decay=True
    ),
    "RAdam-maximize": dict(lr=0.02, betas=(0.9, 0.9), maximize=True),
    "Adam-amsgrad": dict(lr=0.02, amsgrad=True),
    "Adam-amsgrad-l2": dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1, amsgrad=True),
    "AdamW-amsgrad-maximize": dict(lr=0.02, weight_decay=0.2, amsgrad=True, maximize=True),
}


@pytest.mark.usefixtures("torch_float64")
@pytest.mark.parametrize("case", list(CASES))
def test_an_mlp_trains_as_with_torch_after_every_step(case):
    name = case.split("-")[0]
    ours, theirs = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **CASES[case])
    reference = getattr(torch.optim, name)(theirs.parameters(), **CASES[case])
    for _ in range(8):
        for model, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad()
            backward(model, X, Y * 3.0)  # a target the MLP's tanh cannot reach: large steps
            optimizer.step()
        assert_same_weights(ours, theirs)
    assert set(mine.state_dict()["state"][0]) == set(reference.state_dict()["state"][0])


@pytest.mark.usefixtures("torch_float64")
def test_groups_of_different_settings_as_torch():
    ours, theirs = twin_models()

    def groups(model, centered):
        params = list(model.parameters())
        return [
            {"params": params[:2], "momentum": 0.9, "centered": centered},
            {"params": params[2:], "lr": 0.002, "weight_decay": 0.3},
        ]

    mine = optim.RMSprop(groups(ours, True), lr=0.01)
    reference = torch.optim.RMSprop(groups(theirs, True), lr=0.01)
    for step in range(6):
        if step == 3:  # a setting edited between steps applies from the next step
            mine.param_groups[1]["alpha"] = reference.param_groups[1]["alpha"] = 0.5
        train(ours, mine, 1)
        train(theirs, reference, 1)
        assert_same_weights(ours, theirs)


@pytest.mark.parametrize(
    "name", ["Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam", "Adam", "AdamW", "SGD"]
)
def test_defaults_and_repr_are_torchs(name):
    ours, theirs = twin_models()
    mine = getattr(optim, name)(ours.parameters())
    reference = getattr(torch.optim, name)(theirs.parameters())
    assert mine.defaults == reference.defaults
    assert repr(mine) == repr(reference)


def test_adagrad_makes_its_state_in_the_constructor_as_torch():
    ours, theirs = twin_models()
    mine = optim.Adagrad(ours.parameters(), initial_accumulator_value=0.5)
    reference = torch.optim.Adagrad(theirs.parameters(), initial_accumulator_value=0.5)
    saved, expected = mine.state_dict(), reference.state_dict()
    assert sorted(saved["state"]) == sorted(expected["state"]) == [0, 1, 2, 3]
    assert saved["state"][1]["step"] == 0 and (saved["state"][1]["sum"] == 0.5).all()


RESUMABLE = {
    "Adagrad": dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.1),
    "RMSprop": dict(lr=0.01, momentum=0.9, centered=True),
    "Adadelta": dict(lr=0.5, weight_decay=0.1),
    "Adamax": dict(lr=0.02),
    "NAdam": dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True),
    "RAdam": dict(lr=0.02, betas=(0.9, 0.9)),
    "Adam": dict(lr=0.02, amsgrad=True),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_state_dict_round_trip_resumes_exactly(name):
    ours, _ = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **RESUMABLE[name])
    train(ours, mine, 3)
    saved_model = ours.state_dict()
    saved = pickle.loads(pickle.dumps(mine.state_dict()))  # as a checkpoint file keeps it
    assert saved["param_groups"][0]["params"] == [0, 1, 2, 3]
    train(ours, mine, 3)  # on without a reload

    again, _ = twin_models()
    again.load_state_dict(saved_model)
    resumed = getattr(optim, name)(again.parameters(), lr=1.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0] == saved["param_groups"][0] | {"params": again.parameters()}
    train(again, resumed, 3)
    for (key, a), (_, b) in zip(ours.named_parameters(), again.named_parameters()):
        np.testing.assert_array_equal(a.array, b.array, err_msg=key)
    assert resumed.state_dict()["state"][0]["step"] == 6


@pytest.mark.parametrize("name", ["Adagrad", "RMSprop", "Adadelta", "Adamax", "NAdam", "RAdam"])
def test_float32_parameters_stay_float32_on_every_backend(xp, name):
    settings = {"RMSprop": dict(momentum=0.9, centered=True), "RAdam": dict(betas=(0.9, 0.9))}
    model, _ = twin_models()
    model.to(dtype=np.float32)
    model = model.to_gpu() if xp is not np else model
    reference = [backend.to_host_array(p.array).copy() for p in model.parameters()]
    optimizer = getattr(optim, name)(model.parameters(), **settings.get(name, {}))
    x = Tensor(xp.asarray(X, dtype=np.float32), requires_grad=False)
    for _ in range(7):
        optimizer.zero_grad()
        (((model(x) - xp.asarray(Y, dtype=np.float32)) ** 2).mean()).backward()
        optimizer.step()
    for p, before in zip(model.parameters(), reference):
        assert p.dtype == np.float32 and p.xp is xp
        assert np.isfinite(backend.to_host_array(p.array)).all()
        assert not np.array_equal(backend.to_host_array(p.array), before)
        for value in optimizer.state[p].values():
            assert not hasattr(value, "shape") or value.dtype == np.float32


@pytest.mark.usefixtures("torch_float64")
def test_a_torch_state_dict_is_refused_and_numpy_scalars_are_numbers():
    ours, theirs = twin_models()
    mine = optim.NAdam(ours.parameters(), lr=0.01)
    reference = torch.optim.NAdam(theirs.parameters(), lr=0.01)
    train(ours, mine, 2)
    train(theirs, reference, 2)
    with pytest.raises(TypeError, match="parameter 0 is a torch.Tensor, not a numpy or cupy"):
        mine.load_state_dict(reference.state_dict())
    saved = mine.state_dict()
    for slots in saved["state"].values():
        slots["step"], slots["mu_product"] = np.int64(2), np.float64(slots["mu_product"])
    mine.load_state_dict(saved)
    assert type(mine.state[ours.parameters()[0]]["mu_product"]) is float


def test_bad_arguments_are_refused_clearly():
    params = twin_models()[0].parameters()
    with pytest.raises(ValueError, match="RMSprop: lr must be a finite number >= 0, got -0.1"):
        optim.RMSprop(params, lr=-0.1)
    with pytest.raises(ValueError, match="RMSprop: momentum must be a finite number >= 0"):
        optim.RMSprop(params, momentum=-0.5)
    with pytest.raises(TypeError, match="RMSprop: centered must be True or False, got 1"):
        optim.RMSprop(params, centered=1)
    with pytest.raises(ValueError, match="Adagrad: initial_accumulator_value must be"):
        optim.Adagrad(params, initial_accumulator_value=-1.0)
    with pytest.raises(ValueError, match="Adagrad: lr_decay must be a finite number >= 0"):
        optim.Adagrad(params, lr_decay=-0.1)
    with pytest.raises(ValueError, match=r"Adadelta: rho must be a finite number in \[0, 1\]"):
        optim.Adadelta(params, rho=1.5)
    with pytest.raises(ValueError, match="Adamax: betas must be two numbers in"):
        optim.Adamax(params, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="NAdam: momentum_decay must be a finite number >= 0"):
        optim.NAdam(params, momentum_decay=-1)
    with pytest.raises(ValueError, match="RAdam: differentiable=True is not supported"):
        optim.RAdam(params, differentiable=True)
    with pytest.raises(TypeError, match="NAdam: decoupled_weight_decay must be True or False"):
        optim.NAdam(params, decoupled_weight_decay="yes")
    with pytest.raises(ValueError, match=r"Adamax: param_groups\[1\]\['eps'\] must be"):
        optim.Adamax([{"params": params[:2]}, {"params": params[2:], "eps": -1e-8}])
    mine = optim.NAdam(params)
    mine.param_groups[0]["betas"] = (0.9, 2.0)  # a bad value set between steps: the next step
    with pytest.raises(ValueError, match=r"NAdam: param_groups\[0\]\['betas'\] must be"):
        mine.step()
