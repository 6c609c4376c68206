"""tricycle.optim against torch.optim: an MLP trained side by side in float64 (weights equal
after every step), nanoGPT's loop (two parameter groups, the learning rate set through
param_groups, clip_grad_norm_ between backward and step), zero_grad both ways, state_dict
round trips, the errors; and tricycle.nn.utils' clipping against torch.nn.utils."""

import math

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.nn.utils
import tricycle.optim as optim
from tricycle import backend, optimisers
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(16, 4)), RNG.normal(size=(16, 3))


def twin_models():
    """The same MLP in torch and in tricycle.nn, in float64, with torch's initial weights."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    theirs = theirs.double()
    ours = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).to(dtype=np.float64)
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def backward_both(ours, theirs, scale=1.0):
    """The mean squared error of each model on (X, Y), times ``scale``, differentiated."""
    loss = (((ours(Tensor(X, requires_grad=False)) - Y) ** 2).mean()) * scale
    loss.backward()
    ref = ((theirs(torch.from_numpy(X)) - torch.from_numpy(Y)) ** 2).mean() * scale
    ref.backward()
    return loss, ref


def assert_same_weights(ours, theirs, rtol=1e-10):
    mine = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        np.testing.assert_allclose(mine[name], value.numpy(), rtol=rtol, atol=1e-13, err_msg=name)


CASES = {
    "adamw": dict(lr=0.05, betas=(0.9, 0.95), weight_decay=0.1),
    "adamw-maximize": dict(lr=0.01, weight_decay=0.3, maximize=True),
    "adam": dict(lr=0.02),
    "adam-l2": dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.2),
    "adam-decoupled": dict(lr=0.02, weight_decay=0.2, decoupled_weight_decay=True),
    "sgd": dict(lr=0.1),
    "sgd-momentum-dampening-decay": dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.05),
    "sgd-nesterov-decay": dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
    "sgd-maximize": dict(lr=0.05, momentum=0.5, maximize=True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_mlp_trains_as_with_torch_after_every_step(case):
    name = {"adamw": "AdamW", "adam": "Adam", "sgd": "SGD"}[case.split("-")[0]]
    ours, theirs = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **CASES[case])
    reference = getattr(torch.optim, name)(theirs.parameters(), **CASES[case])
    for _ in range(6):
        mine.zero_grad()
        reference.zero_grad()
        backward_both(ours, theirs)
        mine.step()
        reference.step()
        assert_same_weights(ours, theirs)


def test_nanogpt_loop_two_groups_lr_through_param_groups_and_clipping():
    ours, theirs = twin_models()

    def groups(model):
        params = list(model.parameters())
        return [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.1},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ]

    def get_lr(step, warmup=3, top=0.05, bottom=0.005, total=8):
        if step < warmup:
            return top * (step + 1) / warmup
        return bottom + 0.5 * (1 + math.cos(math.pi * (step - warmup) / total)) * (top - bottom)

    mine = optim.AdamW(groups(ours), lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    reference = torch.optim.AdamW(groups(theirs), lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    for step in range(8):
        for optimizer in (mine, reference):
            for group in optimizer.param_groups:
                group["lr"] = get_lr(step)
            optimizer.zero_grad(set_to_none=True)
        backward_both(ours, theirs, scale=20.0)  # gradients large enough to be clipped
        norm = tricycle.nn.utils.clip_grad_norm_(ours.parameters(), 1.0)
        ref_norm = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 1.0)
        assert norm.item() == pytest.approx(ref_norm.item(), rel=1e-12)
        assert ref_norm.item() > 1.0
        mine.step()
        reference.step()
        assert_same_weights(ours, theirs)
    # the no-decay group was not decayed: the same run with its decay on differs
    assert mine.param_groups[1]["weight_decay"] == 0.0


def test_zero_grad_to_none_or_to_zeros_as_torch():
    ours, theirs = twin_models()
    mine = optim.AdamW(ours.parameters(), lr=0.05, weight_decay=0.5)
    reference = torch.optim.AdamW(theirs.parameters(), lr=0.05, weight_decay=0.5)
    backward_both(ours, theirs)
    mine.step()
    reference.step()
    mine.zero_grad(set_to_none=False)
    reference.zero_grad(set_to_none=False)
    for p in ours.parameters():
        assert p.grad is not None and not p.grad.array.any()
    mine.step()  # zero gradients still step: the moments decay, the weights too
    reference.step()
    assert_same_weights(ours, theirs)
    backward_both(ours, theirs)  # into the zeros: the fresh gradient
    for p, q in zip(ours.parameters(), theirs.parameters()):
        grad = q.grad.numpy().T if p.ndim == 2 else q.grad.numpy()
        np.testing.assert_allclose(p.grad.array, grad, rtol=1e-12)
    mine.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def test_zero_grad_to_zeros_leaves_a_shared_gradient_array_alone():
    p, q = (Tensor(np.ones(3), requires_grad=True) for _ in range(2))
    shared = np.full(3, 2.0)
    p.grad, q.grad = Tensor(shared, requires_grad=False), Tensor(shared, requires_grad=False)
    optim.SGD([p], lr=0.1).zero_grad(set_to_none=False)
    assert not p.grad.array.any() and (q.grad.array == 2).all()


@pytest.mark.parametrize("name", ["AdamW", "SGD"])
def test_state_dict_round_trip_mid_run_continues_exactly(name):
    settings = {"lr": 0.03, "weight_decay": 0.1} | ({"momentum": 0.9} if name == "SGD" else {})

    def run(model, optimizer, steps):
        for _ in range(steps):
            optimizer.zero_grad()
            (((model(Tensor(X, requires_grad=False)) - Y) ** 2).mean()).backward()
            optimizer.step()

    ours, theirs = twin_models()
    mine = getattr(optim, name)(ours.parameters(), **settings)
    run(ours, mine, 3)
    saved_model, saved = ours.state_dict(), mine.state_dict()
    reference = getattr(torch.optim, name)(theirs.parameters(), **settings)
    backward_both(ours, theirs)
    reference.step()
    ref_state = reference.state_dict()
    assert set(saved["param_groups"][0]) == set(ref_state["param_groups"][0])
    assert set(saved["state"][0]) == set(ref_state["state"][0])
    run(ours, mine, 3)  # on without a reload (from the gradients of one more backward)

    again, _ = twin_models()
    again.load_state_dict(saved_model)
    resumed = getattr(optim, name)(again.parameters(), lr=1.0)
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == 0.03
    run(again, resumed, 3)
    for (key, a), (_, b) in zip(ours.named_parameters(), again.named_parameters()):
        np.testing.assert_array_equal(a.array, b.array, err_msg=key)


def test_state_dict_is_a_copy_and_a_mismatch_is_refused():
    ours, _ = twin_models()
    mine = optim.Adam(ours.parameters(), lr=0.01)
    (((ours(Tensor(X, requires_grad=False)) - Y) ** 2).mean()).backward()
    mine.step()
    saved = mine.state_dict()
    saved["state"][0]["exp_avg"][...] = 7.0
    assert not (mine.state[ours.parameters()[0]]["exp_avg"] == 7.0).any()
    other = optim.Adam(ours.parameters()[:2], lr=0.01)
    with pytest.raises(ValueError, match=r"groups of \[4\] parameters.*\[2\]"):
        other.load_state_dict(saved)
    swapped = mine.state_dict()
    swapped["state"][0]["exp_avg"] = np.zeros((2, 2))
    with pytest.raises(ValueError, match=r"'exp_avg' of parameter 0 has shape \(2, 2\)"):
        mine.load_state_dict(swapped)


def test_repr_as_torch():
    ours, theirs = twin_models()
    for name, settings in [("AdamW", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9})]:
        mine = getattr(optim, name)(ours.parameters(), **settings)
        reference = getattr(torch.optim, name)(theirs.parameters(), **settings)
        assert repr(mine) == repr(reference)


def test_params_generators_names_groups_and_the_closure():
    ours, _ = twin_models()
    mine = optim.SGD((p for p in ours.parameters()[:2]), lr=0.1)  # a generator: read once
    assert len(mine.param_groups[0]["params"]) == 2
    mine.add_param_group({"params": ours.parameters()[2:], "lr": 0.5, "name": "head"})
    assert mine.param_groups[1]["lr"] == 0.5 and mine.param_groups[1]["momentum"] == 0
    assert mine.param_groups[1]["name"] == "head"  # keys of the user's own, kept as torch
    named = optim.AdamW(ours.named_parameters(), lr=0.1)
    assert named.param_groups[0]["param_names"] == [n for n, _ in ours.named_parameters()]
    calls = []
    assert mine.step(lambda: calls.append(1) or 3.5) == 3.5 and calls == [1]
    flags = dict(foreach=True, fused=False, capturable=True)  # accepted, ignored
    assert optim.AdamW(ours.parameters(), **flags).defaults["foreach"] is True


@pytest.mark.usefixtures("kernel_or_reference")
def test_adamw_groups_equal_the_seeds_adamw_with_its_filter(xp):
    """tricycle.optim.AdamW over nanoGPT's groups is tricycle.optimisers.AdamW with the
    matrices decayed (on a GPU in float32: both through the fused update)."""
    models = []
    for _ in range(2):
        model, _ = twin_models()
        model.to(dtype=np.float32)
        models.append(model.to_gpu() if xp is not np else model)
    ours, seeds = models
    params = ours.parameters()
    mine = optim.AdamW(
        [{"params": [p for p in params if p.ndim >= 2]},
         {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}],
        lr=0.01, weight_decay=0.2,
    )  # fmt: skip
    seed = optimisers.AdamW(0.01, weight_decay=0.2, decay_filter=optimisers.decay_all_matrices)
    x = Tensor(xp.asarray(X, dtype=np.float32), requires_grad=False)
    for _ in range(4):
        mine.zero_grad()
        (((ours(x) - xp.asarray(Y)) ** 2).mean()).backward()
        mine.step()
        seed.step()  # the seed's idiom: the start of an iteration, then model.update
        (((seeds(x) - xp.asarray(Y)) ** 2).mean()).backward()
        seeds.update(seed)
    for a, b in zip(ours.parameters(), seeds.parameters()):
        np.testing.assert_allclose(backend.to_host_array(a.array), backend.to_host_array(b.array))


def test_bad_arguments_are_refused_clearly():
    ours, _ = twin_models()
    params = ours.parameters()
    with pytest.raises(TypeError, match="AdamW: params must be an iterable.*Sequential"):
        optim.AdamW(ours)
    with pytest.raises(TypeError, match="params must be an iterable"):
        optim.AdamW(params[0])
    with pytest.raises(TypeError, match=r"params must be an iterable.*\[group\], got a dict"):
        optim.AdamW({"params": params})
    with pytest.raises(TypeError, match="params must be a Tensor or an iterable.*float"):
        optim.AdamW([{"params": 1.0}])
    with pytest.raises(TypeError, match=r"params\[1\] is a ndarray"):
        optim.SGD([params[0], np.ones(3)], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="more than one group"):
        optim.AdamW([{"params": params[:2]}, {"params": params[1:]}])
    with pytest.raises(ValueError, match="appears twice in one group"):
        optim.AdamW([params[0], params[0]])
    with pytest.raises(TypeError, match="not a set"):
        optim.AdamW([{"params": set(params)}])
    with pytest.raises(ValueError, match="only leaf tensors"):
        optim.AdamW([params[0] * 2.0])
    with pytest.raises(ValueError, match="AdamW: lr must be a finite number >= 0, got -0.1"):
        optim.AdamW(params, lr=-0.1)
    with pytest.raises(TypeError, match="AdamW: amsgrad must be True or False, got 1"):
        optim.AdamW(params, amsgrad=1)
    with pytest.raises(ValueError, match="differentiable=True is not supported"):
        optim.SGD(params, differentiable=True)
    with pytest.raises(ValueError, match="betas must be two numbers"):
        optim.Adam(params, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Nesterov momentum needs momentum > 0"):
        optim.SGD(params, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match=r"param_groups\[1\]\['weight_decay'\] must be"):
        optim.AdamW([{"params": params[:2]}, {"params": params[2:], "weight_decay": -1}])
    mine = optim.AdamW(params, lr=0.1)
    mine.param_groups[0]["lr"] = float("nan")  # a bad value set between steps: the next step
    with pytest.raises(ValueError, match=r"AdamW: param_groups\[0\]\['lr'\] must be a finite"):
        mine.step()


# ---------------------------------------------------------------------- clipping
def grads_of_both(scale):
    ours, theirs = twin_models()
    backward_both(ours, theirs, scale)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.0, 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ours, theirs = grads_of_both(10.0)
    arrays = [p.grad.array for p in ours.parameters()]
    norm = tricycle.nn.utils.clip_grad_norm_(ours.parameters(), max_norm, norm_type)
    ref = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm, norm_type)
    assert isinstance(norm, Tensor) and norm.shape == ()
    assert norm.item() == pytest.approx(ref.item(), rel=1e-12)
    for p, q, before in zip(ours.parameters(), theirs.parameters(), arrays):
        grad = q.grad.numpy().T if p.ndim == 2 else q.grad.numpy()
        np.testing.assert_allclose(p.grad.array, grad, rtol=1e-12)
        assert p.grad.array is not before  # a new gradient: the old array is never written
    assert (max_norm < ref.item()) == any(
        not np.array_equal(p.grad.array, a) for p, a in zip(ours.parameters(), arrays)
    )


def test_clip_grad_norm_edges():
    clip = tricycle.nn.utils.clip_grad_norm_
    p = Tensor(np.array([3.0, 4.0]), requires_grad=True)
    assert clip([p], 1.0).item() == 0.0  # no gradients: a norm of 0
    p.grad = Tensor(np.array([3.0, 4.0]), requires_grad=False)
    assert clip(p, math.inf).item() == 5.0  # max_norm=inf measures, and clips nothing
    np.testing.assert_array_equal(p.grad.array, [3.0, 4.0])
    p.grad = Tensor(np.array([np.inf, 1.0]), requires_grad=False)
    with pytest.raises(RuntimeError, match="non-finite|cannot be clipped"):
        clip([p], 1.0, error_if_nonfinite=True)
    with pytest.raises(ValueError, match="max_norm must be a number >= 0"):
        clip([p], -1.0)
    with pytest.raises(TypeError, match=r"parameters\[0\] is a ndarray"):
        clip([np.ones(2)], 1.0)


def test_clip_grad_value_matches_torch():
    ours, theirs = grads_of_both(10.0)
    tricycle.nn.utils.clip_grad_value_(ours.parameters(), 0.05)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.05)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        grad = q.grad.numpy().T if p.ndim == 2 else q.grad.numpy()
        np.testing.assert_allclose(p.grad.array, grad, rtol=1e-12)
        assert np.abs(p.grad.array).max() == 0.05
    with pytest.raises(ValueError, match="clip_value must be a number >= 0"):
        tricycle.nn.utils.clip_grad_value_(ours.parameters(), -1)
