"""The schedules that move the learning rate by factors: by a function of the epoch
(``LambdaLR``, ``MultiplicativeLR``), in steps (``StepLR``, ``MultiStepLR``), for a while
(``ConstantLR``, ``LinearLR``), exponentially, polynomially, or along a cosine
(``CosineAnnealingLR``).

Each is torch's, in torch's chainable form (the next rate from the group's current one,
``get_lr``) and, where torch has one, its closed form (``_get_closed_form_lr``, used by
``step(epoch)`` and by ``SequentialLR`` at a milestone). With base learning rate b and
epoch t (``last_epoch``):

    StepLR        b * gamma ** (t // step_size)
    MultiStepLR   b * gamma ** (the number of milestones <= t)
    ConstantLR    b * factor until total_iters, then b
    LinearLR      b * (start + (end - start) * min(t, total_iters) / total_iters)
    ExponentialLR b * gamma ** t
    PolynomialLR  b * (1 - min(t, total_iters) / total_iters) ** power
    CosineAnnealingLR  eta_min + (b - eta_min) * (1 + cos(pi * t / T_max)) / 2
"""

import math
from bisect import bisect_right
from collections import Counter

from tricycle import checks
from tricycle.optim.scheduler_base import LRScheduler, function_state, group_values, per_group


def _lambdas(owner: str, optimizer, lr_lambda) -> list:
    """One function epoch -> factor per parameter group."""
    functions = per_group(owner, "lr_lambda", optimizer, lr_lambda)
    for function in functions:
        checks.function(owner, "lr_lambda", function)
    return functions


class _ByFunction(LRScheduler):
    """A schedule given functions, one a group; its state_dict keeps the attributes of
    callable objects among them (a plain function is code, not state), as torch's."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.optimizer = optimizer
        self.lr_lambdas = _lambdas(type(self).__name__, optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    _unsaved = ("optimizer", "lr_lambdas")

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [function_state(fn) for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        super().load_state_dict(state)
        for fn, attributes in zip(self.lr_lambdas, saved):
            if attributes is not None:
                fn.__dict__.update(attributes)


class LambdaLR(_ByFunction):
    """lr = base_lr * lr_lambda(epoch), one function for every group or one each."""

    def get_lr(self) -> list[float]:
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_ByFunction):
    """lr *= lr_lambda(epoch) at every step after the first."""

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        groups = self.optimizer.param_groups
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups)]


class StepLR(LRScheduler):
    """lr *= gamma every ``step_size`` epochs."""

    @checks.arguments(gamma=checks.real)
    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        if isinstance(step_size, float) and step_size.is_integer():
            step_size = int(step_size)  # torch's language-model tutorial passes 1.0
        checks.positive_int(type(self).__name__, "step_size", step_size)
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr *= gamma at each milestone epoch (a milestone given twice: gamma ** 2)."""

    @checks.arguments(gamma=checks.real)
    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        milestones = list(milestones)
        for milestone in milestones:
            checks.non_negative_int(type(self).__name__, "milestones", milestone)
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch not in self.milestones:
            return group_values(self.optimizer, "lr")
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        milestones = sorted(self.milestones.elements())
        passed = bisect_right(milestones, self.last_epoch)
        return [b * self.gamma**passed for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first ``total_iters`` epochs, then base_lr."""

    @checks.arguments(factor=checks.interval(0, 1), total_iters=checks.positive_int)
    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):  # fmt: skip
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.factor for group in groups]
        if self.last_epoch != self.total_iters:
            return group_values(self.optimizer, "lr")
        return [group["lr"] * (1.0 / self.factor) for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        after = self.last_epoch >= self.total_iters
        return [b * (self.factor + after * (1 - self.factor)) for b in self.base_lrs]


class LinearLR(LRScheduler):
    """lr goes linearly from base_lr * start_factor to base_lr * end_factor over
    ``total_iters`` epochs, then stays."""

    @checks.arguments(
        start_factor=checks.interval(0, 1, "(]"),
        end_factor=checks.interval(0, 1),
        total_iters=checks.positive_int,
    )
    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):  # fmt: skip
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, "lr")
        rise = self.end_factor - self.start_factor
        below = self.total_iters * self.start_factor + (self.last_epoch - 1) * rise
        return [group["lr"] * (1.0 + rise / below) for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        rise = self.end_factor - self.start_factor
        done = min(self.total_iters, self.last_epoch)
        return [b * (self.start_factor + rise * done / self.total_iters) for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr *= gamma every epoch."""

    @checks.arguments(gamma=checks.real)
    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        return [b * self.gamma**self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - epoch / total_iters) ** power, down to 0 at ``total_iters``."""

    @checks.arguments(total_iters=checks.positive_int, power=checks.real)
    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):  # fmt: skip
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial or self.last_epoch > self.total_iters:
            return group_values(self.optimizer, "lr")
        t, n = self.last_epoch, self.total_iters
        factor = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [b * left**self.power for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """lr follows half a cosine from base_lr down to ``eta_min`` over ``T_max`` epochs (and
    back up over the next ``T_max``, as torch's)."""

    @checks.arguments(T_max=checks.positive_int, eta_min=checks.real)
    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        groups, t = self.optimizer.param_groups, self.last_epoch
        period, low = self.T_max, self.eta_min
        if self._is_initial:
            return group_values(self.optimizer, "lr")
        if self._step_count == 1 and t > 0:  # resumed at a later epoch: the closed form
            return [low + (b - low) * (1 + math.cos(t * math.pi / period)) / 2
                    for b in self.base_lrs]  # fmt: skip
        if (t - 1 - period) % (2 * period) == 0:  # the bottom of the cosine: turn upwards
            rise = 1 - math.cos(math.pi / period)
            return [g["lr"] + (b - low) * rise / 2 for b, g in zip(self.base_lrs, groups)]
        ratio = (1 + math.cos(math.pi * t / period)) / (1 + math.cos(math.pi * (t - 1) / period))
        return [ratio * (group["lr"] - low) + low for group in groups]

    def _get_closed_form_lr(self) -> list[float]:
        t, period, low = self.last_epoch, self.T_max, self.eta_min
        return [low + (b - low) * (1 + math.cos(math.pi * t / period)) / 2 for b in self.base_lrs]
