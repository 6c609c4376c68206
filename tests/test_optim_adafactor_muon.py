"""tricycle.optim's Adafactor and Muon against torch.optim's: an MLP trained side by side in
float64 with every option (weights equal after every step; Muon's Newton-Schulz iteration in
bfloat16 as torch's, nearly every entry equal to the bit, the rest a bfloat16 ulp apart),
parameter groups, torch's defaults and state keys, state_dict round trips that resume
exactly, float32 on every backend, and the errors."""

import pickle

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.optim as optim
from tricycle import backend
from tricycle.optim.muon import DEFAULT_COEFFICIENTS, orthogonalised, to_bfloat16
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X, Y = RNG.normal(size=(12, 4)), RNG.normal(size=(12, 3))


@pytest.fixture
def torch_float64():
    """torch's scalar state ("step") in float64, as tricycle keeps it."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def twin_models(hidden: int = 6):
    """The same MLP in torch and in tricycle.nn, in float64, with torch's initial weights."""
    torch.manual_seed(1)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 3)
    ).double()
    ours = nn.Sequential(nn.Linear(4, hidden), nn.Tanh(), nn.Linear(hidden, 3))
    ours = ours.to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def backward(model, y=Y):
    if isinstance(model, torch.nn.Module):
        ((model(torch.from_numpy(X)) - torch.from_numpy(y)) ** 2).mean().backward()
    else:
        (((model(Tensor(X, requires_grad=False)) - y) ** 2).mean()).backward()


def train(model, optimizer, steps: int) -> None:
    for _ in range(steps):
        optimizer.zero_grad()
        backward(model)
        optimizer.step()


def assert_same_weights(ours, theirs, rtol=1e-10):
    mine = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(mine[name], value.numpy(), rtol=rtol, atol=1e-13, err_msg=name)


def matrices(model):
    return [p for p in model.parameters() if p.ndim == 2]


ADAFACTOR = {
    "defaults": dict(),
    "lr-decay-d": dict(lr=0.05, weight_decay=0.1, d=1.5),
    "eps-beta2": dict(lr=0.2, eps=(1e-20, 1e-2), beta2_decay=-0.5),
    "maximize": dict(lr=0.05, maximize=True),
}


@pytest.mark.usefixtures("torch_float64")
@pytest.mark.parametrize("case", list(ADAFACTOR))
def test_adafactor_trains_an_mlp_as_torch_after_every_step(case):
    ours, theirs = twin_models()
    mine = optim.Adafactor(ours.parameters(), **ADAFACTOR[case])
    reference = torch.optim.Adafactor(theirs.parameters(), **ADAFACTOR[case])
    before = nn.to_torch(ours)["0.weight"].copy()
    for _ in range(6):
        for model, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad()
            backward(model, Y * 3.0)
            optimizer.step()
        assert_same_weights(ours, theirs)
    assert not np.allclose(nn.to_torch(ours)["0.weight"], before)
    for index in (0, 1):  # a matrix's state factored, a vector's whole, under torch's names
        assert set(mine.state_dict()["state"][index]) == set(reference.state_dict()["state"][index])
    weights = ours.parameters()[0]  # (in, out): its row factor is torch's column factor
    state, theirs_state = mine.state[weights], reference.state_dict()["state"][0]
    assert state["row_var"].shape == (4, 1) and state["col_var"].shape == (1, 6)
    np.testing.assert_allclose(state["row_var"].T, theirs_state["col_var"].numpy(), rtol=1e-10)
    assert state["step"] == 6


def test_adafactor_factors_a_stack_of_matrices_as_torch():
    values = RNG.normal(size=(2, 3, 5))
    ours, theirs = Tensor(values.copy()), torch.tensor(values.copy(), requires_grad=True)
    mine = optim.Adafactor([ours], lr=0.1, weight_decay=0.05)
    reference = torch.optim.Adafactor([theirs], lr=0.1, weight_decay=0.05)
    for _ in range(4):
        target = RNG.normal(size=values.shape)
        mine.zero_grad()
        reference.zero_grad()
        ((ours - Tensor(target, requires_grad=False)) ** 3).sum().backward()
        ((theirs - torch.from_numpy(target)) ** 3).sum().backward()
        mine.step()
        reference.step()
        np.testing.assert_allclose(ours.array, theirs.detach().numpy(), rtol=1e-10, atol=1e-13)
    assert mine.state[ours]["row_var"].shape == (2, 3, 1)
    assert mine.state[ours]["col_var"].shape == (2, 1, 5)


MUON = {
    "defaults": dict(),
    "plain-momentum": dict(lr=0.02, momentum=0.8, nesterov=False, weight_decay=0.0),
    "match-rms-adamw": dict(lr=0.01, adjust_lr_fn="match_rms_adamw", ns_steps=3),
    "original-coefficients-eps": dict(
        lr=0.02, adjust_lr_fn="original", ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3
    ),
}


@pytest.mark.parametrize("case", list(MUON))
def test_muon_trains_an_mlp_as_torch_after_every_step(case):
    ours, theirs = twin_models()
    mine = optim.Muon(matrices(ours), **MUON[case])
    reference = torch.optim.Muon(matrices(theirs), **MUON[case])
    before = nn.to_torch(ours)["2.weight"].copy()
    for _ in range(5):
        for model, optimizer in ((ours, mine), (theirs, reference)):
            optimizer.zero_grad()
            backward(model, Y * 3.0)
            optimizer.step()
        assert_same_weights(ours, theirs)
    assert not np.allclose(nn.to_torch(ours)["2.weight"], before)
    assert set(mine.state_dict()["state"][1]) == {"momentum_buffer"}
    np.testing.assert_allclose(
        mine.state[ours.parameters()[2]]["momentum_buffer"].T,
        reference.state_dict()["state"][1]["momentum_buffer"].numpy(),
        rtol=1e-10,
    )


def test_muon_on_a_square_weight_agrees_to_bfloat16s_rounding():
    ours, theirs = twin_models(hidden=4)  # the first weight 4 x 4: the iteration transposed
    mine = optim.Muon(matrices(ours), lr=0.05)
    reference = torch.optim.Muon(matrices(theirs), lr=0.05)
    for step in range(1, 4):  # each step's update (lr 0.05 x entries below 1) to a few ulps
        train(ours, mine, 1)
        train(theirs, reference, 1)
        mine_weights = nn.to_torch(ours)
        for name in ("0.weight", "2.weight"):
            np.testing.assert_allclose(
                mine_weights[name], theirs.state_dict()[name].numpy(), atol=0.05 * 2**-5 * step
            )


@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (9, 9), (16, 24), (40, 5)])
@pytest.mark.parametrize("steps", [0, 1, 5])
def test_newton_schulz_is_torchs_to_bfloat16s_last_bit(shape, steps):
    from torch.optim._muon import _zeropower_via_newtonschulz

    # its own seed: the shared RNG's draw depends on which tests ran first in the worker, and
    # a matrix with a tiny singular value leaves the band after 5 steps (torch's too)
    m = np.random.default_rng(shape[0] * 100 + shape[1]).normal(size=shape) * 3.0
    expected = _zeropower_via_newtonschulz(torch.from_numpy(m), DEFAULT_COEFFICIENTS, steps, 1e-7)
    result = orthogonalised(m, DEFAULT_COEFFICIENTS, steps, 1e-7, np)
    expected = expected.float().numpy()
    assert (result == expected).mean() > 0.95  # float32 sums in another order: an ulp apart
    np.testing.assert_allclose(result, expected, rtol=2**-7, atol=2**-9)
    if steps == 5:  # nearly orthogonal: singular values in torch's band around 1
        singular = np.linalg.svd(result.astype(np.float64), compute_uv=False)
        assert singular.min() > 0.5 and singular.max() < 1.5


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_bfloat16_rounding_is_torchs(dtype):
    scale = 10.0 ** RNG.integers(-4, 4 if dtype == np.float16 else 30, size=2000)
    values = np.concatenate(
        [
            RNG.normal(size=2000) * scale,
            [0.0, -0.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, np.inf, -np.inf, 6.0e4, np.nan],
        ]
    ).astype(dtype)
    expected = torch.from_numpy(values).bfloat16().float().numpy()
    np.testing.assert_array_equal(to_bfloat16(values, np), expected)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_defaults_and_repr_are_torchs(name):
    ours, theirs = twin_models()
    mine = getattr(optim, name)(matrices(ours))
    reference = getattr(torch.optim, name)(matrices(theirs))
    assert mine.defaults == reference.defaults
    assert repr(mine) == repr(reference)


def test_groups_of_different_settings_as_torch():
    ours, theirs = twin_models()

    def groups(model):
        weights = matrices(model)
        return [{"params": weights[:1], "momentum": 0.5}, {"params": weights[1:], "lr": 0.05}]

    mine, reference = optim.Muon(groups(ours), lr=0.01), torch.optim.Muon(groups(theirs), lr=0.01)
    for step in range(4):
        if step == 2:  # a setting edited between steps applies from the next step
            mine.param_groups[0]["nesterov"] = reference.param_groups[0]["nesterov"] = False
        train(ours, mine, 1)
        train(theirs, reference, 1)
        assert_same_weights(ours, theirs)


@pytest.mark.parametrize(
    "name, settings",
    [("Adafactor", dict(lr=0.05, weight_decay=0.1)), ("Muon", dict(lr=0.02, momentum=0.9))],
)
def test_state_dict_round_trip_resumes_exactly(name, settings):
    def fresh():
        model, _ = twin_models()
        params = model.parameters() if name == "Adafactor" else matrices(model)
        return model, params

    ours, params = fresh()
    mine = getattr(optim, name)(params, **settings)
    train(ours, mine, 3)
    saved_model = ours.state_dict()
    saved = pickle.loads(pickle.dumps(mine.state_dict()))
    train(ours, mine, 3)

    again, params = fresh()
    again.load_state_dict(saved_model)
    resumed = getattr(optim, name)(params, lr=1.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == settings["lr"]
    train(again, resumed, 3)
    for (key, a), (_, b) in zip(ours.named_parameters(), again.named_parameters()):
        np.testing.assert_array_equal(a.array, b.array, err_msg=key)


def test_adafactor_refuses_a_factored_state_of_the_wrong_shape():
    ours, _ = twin_models()
    mine = optim.Adafactor(ours.parameters())
    train(ours, mine, 1)
    saved = mine.state_dict()
    saved["state"][0]["row_var"] = saved["state"][0]["row_var"].T
    with pytest.raises(ValueError, match=r"'row_var' of parameter 0 has shape \(1, 4\), expect"):
        mine.load_state_dict(saved)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_float32_parameters_stay_float32_on_every_backend(xp, name):
    model, _ = twin_models()
    model.to(dtype=np.float32)
    model = model.to_gpu() if xp is not np else model
    params = model.parameters() if name == "Adafactor" else matrices(model)
    before = [backend.to_host_array(p.array).copy() for p in params]
    optimizer = getattr(optim, name)(params, lr=0.05)
    x = Tensor(xp.asarray(X, dtype=np.float32), requires_grad=False)
    for _ in range(4):
        optimizer.zero_grad()
        (((model(x) - xp.asarray(Y, dtype=np.float32)) ** 2).mean()).backward()
        optimizer.step()
    for p, old in zip(params, before):
        assert p.dtype == np.float32 and p.xp is xp
        assert np.isfinite(backend.to_host_array(p.array)).all()
        assert not np.array_equal(backend.to_host_array(p.array), old)
        for value in optimizer.state[p].values():
            assert not hasattr(value, "shape") or value.dtype == np.float32


def test_bad_arguments_are_refused_clearly():
    params = twin_models()[0].parameters()
    weights = [p for p in params if p.ndim == 2]
    with pytest.raises(ValueError, match="Adafactor: lr must be a finite number >= 0, got -1"):
        optim.Adafactor(params, lr=-1)
    with pytest.raises(ValueError, match="Adafactor: beta2_decay must be a finite number <= 0"):
        optim.Adafactor(params, beta2_decay=0.5)
    with pytest.raises(ValueError, match=r"Adafactor: eps\[0\] must be a finite number >= 0"):
        optim.Adafactor(params, eps=(-1e-3, 1e-3))
    with pytest.raises(ValueError, match=r"Adafactor: eps must be a pair \(eps1 or None"):
        optim.Adafactor(params, eps=1e-3)
    with pytest.raises(ValueError, match="Adafactor: d must be a finite number >= 1, got 0.5"):
        optim.Adafactor(params, d=0.5)
    with pytest.raises(ValueError, match="Muon: only 2-d parameters .* shape \\(6,\\)"):
        optim.Muon(params)
    with pytest.raises(ValueError, match="Muon: adjust_lr_fn must be None or one of"):
        optim.Muon(weights, adjust_lr_fn="cosine")
    with pytest.raises(ValueError, match="Muon: ns_steps must be less than 100"):
        optim.Muon(weights, ns_steps=100)
    with pytest.raises(ValueError, match=r"Muon: ns_coefficients must be a tuple of exactly 3"):
        optim.Muon(weights, ns_coefficients=(1.0, 2.0))
    with pytest.raises(ValueError, match="Muon: momentum must be a finite number >= 0"):
        optim.Muon(weights, momentum=-0.1)
    mine = optim.Muon(weights)
    mine.param_groups[0]["ns_steps"] = -1  # a bad value set between steps: the next step
    with pytest.raises(ValueError, match=r"Muon: param_groups\[0\]\['ns_steps'\] must be"):
        mine.step()


def test_sparse_adam_refuses_a_dense_gradient_as_torch():
    ours, theirs = twin_models()
    mine, reference = (
        optim.SparseAdam(ours.parameters()),
        torch.optim.SparseAdam(theirs.parameters()),
    )
    assert mine.defaults == reference.defaults and repr(mine) == repr(reference)
    assert mine.step(lambda: 2.5) == reference.step(lambda: 2.5) == 2.5  # no gradient: no step
    backward(ours)
    backward(theirs)
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        reference.step()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, pl"):
        mine.step()
    with pytest.raises(ValueError, match="SparseAdam: lr must be a finite number > 0, got 0"):
        optim.SparseAdam(ours.parameters(), lr=0)
    with pytest.raises(ValueError, match=r"SparseAdam: betas must be two numbers in \[0, 1\)"):
        optim.SparseAdam(ours.parameters(), betas=(0.9, 1.0))
