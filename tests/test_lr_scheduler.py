"""tricycle.optim.lr_scheduler against torch.optim.lr_scheduler: every schedule's learning
rates (and OneCycleLR's and CyclicLR's momentum and betas) step by step, on two parameter
groups, with a torch optimizer and a tricycle one side by side; ReduceLROnPlateau on a
metric sequence; step(epoch); state_dict round trips; the errors."""

import pickle
import warnings

import numpy as np
import pytest

import tricycle.optim as optim
from tricycle import optimisers
from tricycle.optim import lr_scheduler
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")


def optimizers(kind="SGD", **settings):
    """(ours, torch's): two parameter groups (lr 0.1 and 0.05) of one parameter each."""
    settings = {"momentum": 0.9} | settings if kind == "SGD" else settings
    ours = [Tensor(np.zeros(2), requires_grad=True) for _ in range(2)]
    theirs = [torch.zeros(2, requires_grad=True) for _ in range(2)]
    return tuple(
        getattr(module, kind)([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, **settings)
        for module, (a, b) in ((optim, ours), (torch.optim, theirs))
    )


def momenta(optimizer) -> list[float]:
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in optimizer.param_groups]


def run(optimizer, scheduler, steps: int, metrics=None) -> np.ndarray:
    """Each step's learning rates (get_last_lr and the groups') and momenta."""
    seen = []
    for i in range(steps):
        lrs = [g["lr"] for g in optimizer.param_groups]
        assert scheduler.get_last_lr() == lrs
        seen.append(lrs + momenta(optimizer))
        optimizer.step()
        scheduler.step() if metrics is None else scheduler.step(metrics[i])
    return np.array(seen)


SCHEDULES = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, [lambda e: 0.95**e, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.99),
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=10),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.9),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=12, power=2.0),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.01
    ),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=31),
    "OneCycleLR-linear-three-phase": lambda m, o: m.OneCycleLR(
        o,
        max_lr=0.3,
        epochs=5,
        steps_per_epoch=7,
        pct_start=0.25,
        anneal_strategy="linear",
        three_phase=True,
        base_momentum=[0.8, 0.7],
        div_factor=10.0,
    ),
    "OneCycleLR-no-momentum": lambda m, o: m.OneCycleLR(
        o, max_lr=1.0, total_steps=31, cycle_momentum=False
    ),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o,
        [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, T_max=20)],
        milestones=[5],
    ),
    "SequentialLR-three": lambda m, o: m.SequentialLR(
        o,
        [
            m.ConstantLR(o, factor=0.5, total_iters=3),
            m.ExponentialLR(o, gamma=0.8),
            m.StepLR(o, step_size=3),
        ],
        milestones=[4, 12],
    ),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.5, total_iters=4), m.ExponentialLR(o, gamma=0.9)]
    ),
    # CyclicLR: 30 steps are three cycles of 10 (two and a half of 12)
    "CyclicLR": lambda m, o: m.CyclicLR(
        o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4, step_size_down=6
    ),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(
        o, 0.02, 0.2, step_size_up=5, mode="triangular2", base_momentum=[0.7, 0.75]
    ),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(  # by position: torch's order
        o, [0.01, 0.02], 0.3, 3, 7, "exp_range", 0.95, max_momentum=0.95
    ),
    "CyclicLR-scale_fn-cycle": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=6, step_size_down=4, scale_fn=lambda c: 1 / c
    ),
    "CyclicLR-scale_fn-iterations": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, 7, 5, scale_fn=lambda t: 0.97**t, scale_mode="iterations"
    ),
    "CyclicLR-no-momentum": lambda m, o: m.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, step_size_down=8, cycle_momentum=False
    ),
}


@pytest.mark.parametrize("kind", ["SGD", "AdamW"])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_learning_rates_and_momenta_are_torchs(schedule, kind):
    ours, theirs = optimizers(kind)
    make = SCHEDULES[schedule]
    mine, reference = make(lr_scheduler, ours), make(torch.optim.lr_scheduler, theirs)
    seen, expected = run(ours, mine, 30), run(theirs, reference, 30)
    np.testing.assert_allclose(seen, expected, rtol=1e-12, atol=0)
    assert [g["initial_lr"] for g in ours.param_groups] == [
        g["initial_lr"] for g in theirs.param_groups
    ]


def test_a_subclass_of_the_older_name_lr_scheduler_steps_as_torchs():
    """``class S(optim.lr_scheduler._LRScheduler)`` with its own ``get_lr`` (the UvA
    tutorials' cosine warm-up, reading ``last_epoch`` and ``base_lrs``): torch's rates."""

    def warmup_cosine(module):
        class CosineWarmup(module._LRScheduler):
            def get_lr(self):
                factor = 0.5 * (1 + np.cos(np.pi * self.last_epoch / 20))
                factor *= min(1.0, self.last_epoch / 5)
                return [base_lr * factor for base_lr in self.base_lrs]

        return CosineWarmup

    ours, theirs = optimizers("Adam")
    mine = warmup_cosine(lr_scheduler)(ours)
    reference = warmup_cosine(torch.optim.lr_scheduler)(theirs)
    assert isinstance(mine, lr_scheduler.LRScheduler)
    np.testing.assert_allclose(run(ours, mine, 25), run(theirs, reference, 25), rtol=1e-12, atol=0)


def test_one_cycle_cycles_the_momentum_the_optimizer_uses():
    """beta1 follows OneCycleLR into the update: the weights are those of torch's Adam."""
    p, q = Tensor(np.ones(3), requires_grad=True), torch.ones(3, requires_grad=True)
    ours, theirs = optim.Adam([p], lr=0.1), torch.optim.Adam([q], lr=0.1)
    mine = lr_scheduler.OneCycleLR(ours, max_lr=0.5, total_steps=12)
    reference = torch.optim.lr_scheduler.OneCycleLR(theirs, max_lr=0.5, total_steps=12)
    for i in range(12):
        p.grad = Tensor(np.array([1.0, -2.0, 0.5]) * (i + 1), requires_grad=False)
        q.grad = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float32) * (i + 1)
        ours.step()
        theirs.step()
        mine.step()
        reference.step()
    assert ours.param_groups[0]["betas"] == pytest.approx(theirs.param_groups[0]["betas"])
    np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=1e-6)


def test_warm_restarts_with_fractional_epochs():
    (ours, theirs), seen = optimizers(), []
    for module, optimizer in ((lr_scheduler, ours), (torch.optim.lr_scheduler, theirs)):
        scheduler = module.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=3)
        lrs = []
        for epoch in range(6):
            for i in range(4):
                scheduler.step(epoch + i / 4)
                lrs.append(scheduler.get_last_lr())
        seen.append(lrs)
    np.testing.assert_allclose(seen[0], seen[1], rtol=1e-12)


@pytest.mark.filterwarnings("ignore:The epoch parameter")
def test_step_to_an_epoch_takes_the_closed_form():
    for name, settings in [
        ("StepLR", {"step_size": 3}),
        ("CosineAnnealingLR", {"T_max": 10}),
        ("LinearLR", {"total_iters": 8}),
    ]:
        ours, theirs = optimizers()
        mine = getattr(lr_scheduler, name)(ours, **settings)
        reference = getattr(torch.optim.lr_scheduler, name)(theirs, **settings)
        for epoch in (4, 9, 2):
            ours.step()
            theirs.step()
            with pytest.warns(UserWarning, match="epoch parameter"):
                mine.step(epoch)
            reference.step(epoch)
            assert mine.get_last_lr() == pytest.approx(reference.get_last_lr(), rel=1e-12)


PLATEAUS = [
    dict(mode="min", factor=0.5, patience=2),
    dict(mode="max", factor=0.2, patience=1, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(mode="min", patience=0, min_lr=[0.01, 0.02], threshold_mode="rel", threshold=0.05),
    dict(mode="min", factor=0.5, patience=0, eps=0.03),
]


@pytest.mark.parametrize("settings", PLATEAUS)
def test_reduce_on_plateau_follows_a_metric_as_torch(settings):
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.5, 0.52, 0.51, 0.6, 0.7, 0.3, 0.31] * 2
    ours, theirs = optimizers()
    mine = lr_scheduler.ReduceLROnPlateau(ours, **settings)
    reference = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **settings)
    seen = run(ours, mine, len(metrics), [Tensor(m) for m in metrics])  # a 0-d Tensor too
    np.testing.assert_allclose(seen, run(theirs, reference, len(metrics), metrics), rtol=1e-12)
    assert seen[-1, 0] < seen[0, 0]  # the sequences reduced the learning rate


class Warmup:
    """A callable object with state of its own: LambdaLR's state_dict keeps its attributes."""

    def __init__(self, steps):
        self.steps = steps

    def __call__(self, epoch):
        return min(1.0, (epoch + 1) / self.steps)


RESUMABLE = {
    "CosineAnnealingLR": lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=9, eta_min=0.01),
    "LambdaLR": lambda o: lr_scheduler.LambdaLR(o, Warmup(6)),
    "OneCycleLR": lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=25),
    "SequentialLR": lambda o: lr_scheduler.SequentialLR(
        o, [lr_scheduler.LinearLR(o, total_iters=4), lr_scheduler.ExponentialLR(o, 0.8)], [4]
    ),
    "WarmRestarts": lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    "ReduceLROnPlateau": lambda o: lr_scheduler.ReduceLROnPlateau(o, patience=1),
    "CyclicLR": lambda o: lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, step_size_down=4, mode="triangular2"
    ),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
def test_state_dict_round_trip_resumes_the_schedule(name):
    plateau = name == "ReduceLROnPlateau"
    metrics = [1.0, 1.0, 0.5, 0.6, 0.7, 0.8] * 4 if plateau else None
    ours, _ = optimizers()
    scheduler = RESUMABLE[name](ours)
    run(ours, scheduler, 8, metrics)
    saved_optimizer, saved = ours.state_dict(), scheduler.state_dict()
    later = metrics[8:] if plateau else None
    expected = run(ours, scheduler, 12, later)

    again, _ = optimizers()
    resumed = RESUMABLE[name](again)
    if name == "LambdaLR":
        resumed.lr_lambdas[0].steps = 99  # overwritten by the state
    again.load_state_dict(saved_optimizer)
    resumed.load_state_dict(saved)
    np.testing.assert_array_equal(run(again, resumed, 12, later), expected)
    if name == "LambdaLR":
        assert resumed.lr_lambdas[0].steps == 6


def test_cyclic_state_dict_keeps_a_callable_objects_state_and_no_function():
    (ours, _), (again, _) = optimizers(), optimizers()
    scheduler = lr_scheduler.CyclicLR(ours, 0.01, 0.1, step_size_up=2, scale_fn=Warmup(4))
    for _ in range(5):
        scheduler.step()
    saved = scheduler.state_dict()
    assert saved["_scale_fn_custom"] == {"steps": 4}
    resumed = lr_scheduler.CyclicLR(again, 0.01, 0.1, step_size_up=2, scale_fn=Warmup(9))
    resumed.load_state_dict(saved)
    assert resumed._scale_fn_custom.steps == 4 and resumed.last_epoch == 5
    plain = lr_scheduler.CyclicLR(ours, 0.01, 0.1, scale_fn=lambda c: 1.0).state_dict()
    assert plain["_scale_fn_custom"] is None
    pickle.dumps(plain)  # no lambda in it


def test_bad_arguments_are_refused_clearly():
    ours, theirs = optimizers()
    with pytest.raises(TypeError, match="tricycle.optim optimizer.*tricycle.scheduler"):
        lr_scheduler.StepLR(optimisers.AdamW(0.1), step_size=2)
    with pytest.raises(TypeError, match="tricycle.optim optimizer"):
        lr_scheduler.StepLR(theirs, step_size=2)
    with pytest.raises(ValueError, match=r"needs param_groups\[0\]\['initial_lr'\]"):
        lr_scheduler.ExponentialLR(ours, gamma=0.5, last_epoch=3)
    with pytest.raises(ValueError, match="step_size must be an integer >= 1"):
        lr_scheduler.StepLR(ours, step_size=0)
    with pytest.raises(ValueError, match="lr_lambda has 3 values.*2 parameter groups"):
        lr_scheduler.LambdaLR(ours, [lambda e: 1.0] * 3)
    with pytest.raises(ValueError, match="total_steps, or epochs and steps_per_epoch"):
        lr_scheduler.OneCycleLR(ours, max_lr=1.0)
    with pytest.raises(ValueError, match="need 1 milestones, got 2"):
        lr_scheduler.SequentialLR(
            ours, [lr_scheduler.ConstantLR(ours), lr_scheduler.ConstantLR(ours)], [2, 3]
        )
    with pytest.raises(ValueError, match="ReduceLROnPlateau, whose step needs a metric"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(ours)])
    with pytest.raises(ValueError, match="mode must be one of 'min', 'max'"):
        lr_scheduler.ReduceLROnPlateau(ours, mode="lowest")
    with pytest.raises(TypeError, match="metrics must be a number"):
        lr_scheduler.ReduceLROnPlateau(ours).step("low")
    with pytest.raises(ValueError, match="CyclicLR: mode must be one of 'triangular'"):
        lr_scheduler.CyclicLR(ours, 0.01, 0.1, mode="linear")
    with pytest.raises(ValueError, match="CyclicLR: step_size_up must be a finite number > 0"):
        lr_scheduler.CyclicLR(ours, 0.01, 0.1, step_size_up=0)
    with pytest.raises(ValueError, match="CyclicLR: scale_mode must be one of 'cycle'"):
        lr_scheduler.CyclicLR(ours, 0.01, 0.1, scale_fn=abs, scale_mode="epochs")
    with pytest.raises(ValueError, match="CyclicLR: max_lr has 3 values.*2 parameter groups"):
        lr_scheduler.CyclicLR(ours, 0.01, [0.1] * 3)
    adagrad = optim.Adagrad([Tensor(np.zeros(2), requires_grad=True)])
    with pytest.raises(ValueError, match="cycle_momentum=True needs an optimizer with momentum"):
        lr_scheduler.CyclicLR(adagrad, 0.01, 0.1)
    cycle = lr_scheduler.OneCycleLR(ours, max_lr=1.0, total_steps=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            cycle.step()
    with pytest.raises(ValueError, match="past total_steps=3"):
        cycle.step()
