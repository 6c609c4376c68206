"""tricycle.optim.swa_utils against torch.optim.swa_utils, side by side in float64 on a small
model with batch norm: the EMA and SWA averages (every averaging function, with and without
the buffers) after every optimizer step, n_averaged, the state_dict's names and round trip;
SWALR's learning rates at every step for both strategies; update_bn's running statistics;
batch norm's momentum=None (the cumulative average update_bn uses) forward and backward; and
the errors."""

import numpy as np
import pytest

import tricycle.nn as nn
import tricycle.optim as optim
from tricycle import backend
from tricycle.optim import swa_utils
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
tswa = torch.optim.swa_utils

RNG = np.random.default_rng(0)
X, Y = RNG.normal(size=(16, 4)), RNG.normal(size=(16, 3))


def twin_models():
    """The same MLP with batch norms, in torch and tricycle.nn, float64, torch's weights."""
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Tanh(), torch.nn.Linear(8, 3),
        torch.nn.BatchNorm1d(3, momentum=0.3),
    ).double()  # fmt: skip
    ours = nn.Sequential(
        nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3),
        nn.BatchNorm1d(3, momentum=0.3),
    ).to(dtype=np.float64)  # fmt: skip
    nn.from_torch(ours, theirs.state_dict())
    return ours, theirs


def sgd_step(ours, theirs, mine, reference, x=X):
    """One SGD step of both models on the mean squared error of (x, Y)."""
    mine.zero_grad()
    reference.zero_grad()
    (((ours(Tensor(x, requires_grad=False)) - Y) ** 2).mean()).backward()
    ((theirs(torch.from_numpy(x)) - torch.from_numpy(Y)) ** 2).mean().backward()
    mine.step()
    reference.step()


def assert_same(ours: nn.Module, theirs, rtol=1e-11):
    """Every parameter and buffer (torch's names; not its batch counts) equal."""
    mine = nn.to_torch(ours)
    for name, value in theirs.state_dict().items():
        if not name.endswith("num_batches_tracked"):
            np.testing.assert_allclose(mine[name], value.numpy(), rtol, 1e-13, err_msg=name)


AVERAGES = {  # name: (our keywords, torch's)
    "swa": ({}, {}),
    "swa-avg_fn": ({"avg_fn": swa_utils.get_swa_avg_fn()}, {"avg_fn": tswa.get_swa_avg_fn()}),
    "swa-multi": (
        {"multi_avg_fn": swa_utils.get_swa_multi_avg_fn()},
        {"multi_avg_fn": tswa.get_swa_multi_avg_fn()},
    ),
    "ema-multi": (
        {"multi_avg_fn": swa_utils.get_ema_multi_avg_fn(0.9)},
        {"multi_avg_fn": tswa.get_ema_multi_avg_fn(0.9)},
    ),
    "ema-avg_fn": (
        {"avg_fn": swa_utils.get_ema_avg_fn(0.8)},
        {"avg_fn": tswa.get_ema_avg_fn(0.8)},
    ),
    "lambda": ({"avg_fn": lambda w, v, n: 0.7 * w + 0.3 * v},) * 2,
}


@pytest.mark.parametrize(
    "case, use_buffers",
    [(case, False) for case in AVERAGES]  # torch's swa multi_avg_fn fails on integer buffers
    + [(case, True) for case in AVERAGES if case != "swa-multi"],
)
def test_averages_equal_torch_after_every_step(case, use_buffers):
    ours, theirs = twin_models()
    mine_kw, their_kw = AVERAGES[case]
    average = swa_utils.AveragedModel(ours, use_buffers=use_buffers, **mine_kw)
    reference = tswa.AveragedModel(theirs, use_buffers=use_buffers, **their_kw)
    mine = optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    reference_sgd = torch.optim.SGD(theirs.parameters(), lr=0.1, momentum=0.9)
    # torch's multi_avg_fn weighs by 1 / (n + 1) computed from a tensor: in float32
    rtol = 1e-6 if case == "swa-multi" else 1e-11
    for step in range(5):
        sgd_step(ours, theirs, mine, reference_sgd, X * (1 + step / 4))  # statistics move
        average.update_parameters(ours)
        reference.update_parameters(theirs)
        assert int(average.n_averaged.array) == int(reference.n_averaged) == step + 1
        assert_same(average.module, reference.module, rtol)
    assert_same(ours, theirs)  # the models themselves untouched by the averaging
    if not use_buffers:  # the buffers are the model's
        np.testing.assert_array_equal(
            average.module[1].running_var.array, ours[1].running_var.array
        )
    x = Tensor(X, requires_grad=False)
    average.eval(), reference.eval()
    np.testing.assert_allclose(
        average(x).numpy(), reference(torch.from_numpy(X)).detach().numpy(), rtol=rtol * 10
    )


def test_state_dict_names_are_torchs_and_round_trip():
    ours, theirs = twin_models()
    average = swa_utils.AveragedModel(ours, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    reference = tswa.AveragedModel(theirs)
    state = average.state_dict()
    assert list(state) == ["n_averaged"] + [f"module.{k}" for k in ours.state_dict()]
    assert [k for k in reference.state_dict() if not k.endswith("num_batches_tracked")] == [
        "n_averaged",
        *(f"module.{k}" for k in nn.to_torch(ours) if "batches" not in k),
    ]
    assert state["n_averaged"].dtype == np.int64 and state["n_averaged"].shape == ()
    for _ in range(3):
        average.update_parameters(ours)
        for p in ours.parameters():  # the model moves between updates
            p.array += 0.1
    restored = swa_utils.AveragedModel(ours)  # another averaging: state only is loaded
    restored.load_state_dict(average.state_dict())
    assert int(restored.n_averaged.array) == 3
    for (name, a), (_, b) in zip(average.state_dict().items(), restored.state_dict().items()):
        np.testing.assert_array_equal(a, b, err_msg=name)
    torch_state = reference.state_dict()  # torch reads ours through the names it knows
    torch_state["n_averaged"] = torch.from_numpy(state["n_averaged"])
    reference.load_state_dict(torch_state)
    assert int(reference.n_averaged) == 0


def test_device_argument_and_forward():
    ours, _ = twin_models()
    average = swa_utils.AveragedModel(ours, device="cpu").eval()
    assert average.module is not ours and average.module[0].weights is not ours[0].weights
    x = Tensor(X, requires_grad=False)
    np.testing.assert_array_equal(average(x).numpy(), ours.eval()(x).numpy())
    assert "swa, use_buffers=False" in repr(average)


@pytest.mark.skipif(not backend.cupy_available(), reason="no CUDA GPU")
def test_averaging_on_a_gpu_equals_the_host():
    ours, _ = twin_models()
    on_host = swa_utils.AveragedModel(ours, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    on_gpu = swa_utils.AveragedModel(ours, device="cuda:0", use_buffers=True)
    on_gpu.multi_avg_fn = on_host.multi_avg_fn
    on_host.use_buffers = True
    for _ in range(3):
        ours(Tensor(X, requires_grad=False))  # the statistics move; the model stays on host
        on_host.update_parameters(ours)
        on_gpu.update_parameters(ours)
    assert on_gpu.n_averaged.on_gpu
    for (name, a), (_, b) in zip(on_host.state_dict().items(), on_gpu.state_dict().items()):
        np.testing.assert_allclose(a, b, rtol=1e-12, err_msg=name)


# ====================================================================== SWALR


def optimizers():
    """(ours, torch's): two parameter groups, lr 0.1 and 0.05."""
    ours = [Tensor(np.zeros(2), requires_grad=True) for _ in range(2)]
    theirs = [torch.zeros(2, requires_grad=True) for _ in range(2)]
    return tuple(
        module.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1)
        for module, (a, b) in ((optim, ours), (torch.optim, theirs))
    )


@pytest.mark.parametrize("anneal_epochs", [0, 1, 4])
@pytest.mark.parametrize("anneal_strategy", ["cos", "linear"])
@pytest.mark.parametrize("swa_lr", [0.01, [0.02, 0.2]])
def test_swalr_rates_equal_torch_every_step(anneal_epochs, anneal_strategy, swa_lr):
    ours, theirs = optimizers()
    settings = dict(anneal_epochs=anneal_epochs, anneal_strategy=anneal_strategy)
    mine = swa_utils.SWALR(ours, swa_lr, **settings)
    reference = tswa.SWALR(theirs, swa_lr, **settings)
    for _ in range(8):
        assert [g["lr"] for g in ours.param_groups] == [g["lr"] for g in theirs.param_groups]
        assert mine.get_last_lr() == reference.get_last_lr()
        ours.step(), theirs.step()
        mine.step(), reference.step()
    assert mine.get_last_lr() == reference.get_last_lr()


def test_swalr_after_another_schedule_and_its_state_dict():
    ours, theirs = optimizers()
    mine, reference = (
        module.CosineAnnealingLR(o, T_max=10)
        for module, o in ((optim.lr_scheduler, ours), (torch.optim.lr_scheduler, theirs))
    )
    for _ in range(3):
        ours.step(), theirs.step()
        mine.step(), reference.step()
    mine = swa_utils.SWALR(ours, 0.01, anneal_epochs=3)
    reference = tswa.SWALR(theirs, 0.01, anneal_epochs=3)
    mine.step(), reference.step()
    state = mine.state_dict()
    assert state["_anneal_strategy"] == "cos" and state["anneal_epochs"] == 3
    resumed = swa_utils.SWALR(ours, 0.01, anneal_strategy="linear")
    resumed.load_state_dict(state)  # back to cos, at the saved step
    for _ in range(4):
        resumed.step(), reference.step()
        assert resumed.get_last_lr() == reference.get_last_lr()


# ====================================================================== update_bn


def test_update_bn_equals_torch_and_restores_the_layers():
    ours, theirs = twin_models()
    ours.eval(), theirs.eval()
    sizes = (5, 3, 8)  # unequal batches: the average is over batches, as torch's
    batches = [RNG.normal(size=(n, 4)) * (1 + n) for n in sizes]
    loader = [(Tensor(b, requires_grad=False), "label") for b in batches]
    swa_utils.update_bn(loader, ours)
    tswa.update_bn([(torch.from_numpy(b), "label") for b in batches], theirs)
    assert_same(ours, theirs)
    assert not ours.training and not ours[1].training
    assert ours[1].momentum == 0.1 and ours[4].momentum == 0.3
    assert ours[1].num_batches_tracked == int(theirs[1].num_batches_tracked) == 3
    swa_utils.update_bn(iter(batches), ours, device="cpu")  # bare arrays, a generator
    assert_same(ours, theirs)


def test_update_bn_leaves_models_without_batch_norm_and_instance_norms():
    model = nn.Sequential(nn.InstanceNorm1d(2, track_running_stats=True))
    before = model.state_dict()
    swa_utils.update_bn([np.ones((2, 2, 3))], model)  # torch's instance norm is no _BatchNorm
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, before[name])


@pytest.mark.parametrize("momentum", [None, 0.2])
def test_batch_norm_momentum_none_against_torch(momentum):
    ours = nn.BatchNorm2d(3, momentum=momentum).to(dtype=np.float64)
    theirs = torch.nn.BatchNorm2d(3, momentum=momentum).double()
    for step in range(4):
        x = RNG.normal(size=(2, 3, 2, 2)) * (step + 1) + step
        mine, reference = Tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
        dy = RNG.normal(size=x.shape)
        (ours(mine) * Tensor(dy, requires_grad=False)).sum().backward()
        (theirs(reference) * torch.from_numpy(dy)).sum().backward()
        np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(ours.gamma.grad.numpy(), theirs.weight.grad.numpy(), 1e-10)
        ours.gamma.grad = None
        theirs.weight.grad = None
    assert ours.num_batches_tracked == int(theirs.num_batches_tracked) == 4
    for name in ("running_mean", "running_var"):
        np.testing.assert_allclose(
            getattr(ours, name).numpy(), getattr(theirs, name).numpy(), rtol=1e-12
        )
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(
        ours(Tensor(x, requires_grad=False)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-10,
    )
    ours.reset_running_stats()
    theirs.reset_running_stats()
    assert ours.num_batches_tracked == 0
    np.testing.assert_array_equal(ours.running_var.numpy(), theirs.running_var.numpy())


def test_instance_norm_momentum_none_keeps_statistics_as_torch():
    ours = nn.InstanceNorm1d(2, momentum=None, track_running_stats=True)
    theirs = torch.nn.InstanceNorm1d(2, momentum=None, track_running_stats=True)
    x = RNG.normal(size=(3, 2, 5)).astype(np.float32)
    ours(Tensor(x, requires_grad=False)), theirs(torch.from_numpy(x))
    np.testing.assert_array_equal(ours.running_mean.numpy(), theirs.running_mean.numpy())
    np.testing.assert_array_equal(ours.running_var.numpy(), theirs.running_var.numpy())


# ====================================================================== errors


def test_errors():
    ours, _ = twin_models()
    with pytest.raises(ValueError, match="AveragedModel: give avg_fn or multi_avg_fn, not both"):
        swa_utils.AveragedModel(ours, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())  # fmt: skip
    with pytest.raises(TypeError, match="AveragedModel: model must be a Layer"):
        swa_utils.AveragedModel(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="AveragedModel: avg_fn must be None or callable"):
        swa_utils.AveragedModel(ours, avg_fn=0.9)
    with pytest.raises(ValueError, match="AveragedModel: device must be"):
        swa_utils.AveragedModel(ours, device="tpu")
    average = swa_utils.AveragedModel(ours)
    with pytest.raises(ValueError, match=r"the model has 2 parameters, the averaged copy 8"):
        average.update_parameters(nn.Linear(4, 8))
    other = nn.Sequential(
        nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 2), nn.BatchNorm1d(2)
    )
    with pytest.raises(ValueError, match=r"sequence.3.weights has shape \(8, 2\), the averaged"):
        average.update_parameters(other)
    assert int(average.n_averaged.array) == 0
    for factory in (swa_utils.get_ema_multi_avg_fn, swa_utils.get_ema_avg_fn):
        with pytest.raises(ValueError, match=r"decay must be a finite number in \[0, 1\], got 1.5"):
            factory(1.5)
    sgd, _ = optimizers()
    with pytest.raises(ValueError, match="SWALR: anneal_strategy must be one of 'cos', 'lin"):
        swa_utils.SWALR(sgd, 0.01, anneal_strategy="cosine")
    with pytest.raises(ValueError, match="SWALR: anneal_epochs must be an integer >= 0"):
        swa_utils.SWALR(sgd, 0.01, anneal_epochs=-1)
    with pytest.raises(ValueError, match="SWALR: swa_lr has 3 values, the optimizer has 2"):
        swa_utils.SWALR(sgd, [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="SWALR: swa_lr must be a finite number"):
        swa_utils.SWALR(sgd, -0.1)
    before = ours[1].running_mean.numpy().copy()
    ours(Tensor(X, requires_grad=False))
    moved = ours[1].running_mean.numpy().copy()
    assert not np.array_equal(before, moved)
    with pytest.raises(ValueError, match="update_bn: the loader gave no batches"):
        swa_utils.update_bn([], ours)
    np.testing.assert_array_equal(ours[1].running_mean.numpy(), moved)  # untouched
    with pytest.raises(TypeError, match="update_bn: loader must be an iterable"):
        swa_utils.update_bn(3, ours)
    with pytest.raises(TypeError, match="update_bn: model must be a Layer"):
        swa_utils.update_bn([X], torch.nn.BatchNorm1d(4))
    with pytest.raises(
        TypeError, match=r"BatchNorm1d: momentum must be a finite number in \[0, 1\]"
    ):
        nn.BatchNorm1d(3, momentum="0.1")
