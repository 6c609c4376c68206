"""The schedules that cycle: ``OneCycleLR`` (one warm-up and one annealing, with the
momentum cycling the other way), ``CyclicLR`` (up and down between two rates, again and
again, the momentum the other way) and ``CosineAnnealingWarmRestarts`` (a cosine that
restarts, each period ``T_mult`` times longer), as torch's.
"""

import math

from tricycle import checks
from tricycle.optim.scheduler_base import (
    LRScheduler,
    check_optimizer,
    function_state,
    per_group,
)


def anneal_cos(start: float, end: float, pct: float) -> float:
    """From ``start`` (pct 0) to ``end`` (pct 1) along half a cosine."""
    cos_out = math.cos(math.pi * pct) + 1
    return end + (start - end) / 2.0 * cos_out


def anneal_linear(start: float, end: float, pct: float) -> float:
    """From ``start`` (pct 0) to ``end`` (pct 1) along a line."""
    return (end - start) * pct + start


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin), stepped once per batch for ``total_steps`` (or
    ``epochs`` * ``steps_per_epoch``) steps: the learning rate rises from
    max_lr / div_factor to ``max_lr`` over the first ``pct_start`` of the steps, then falls
    to max_lr / div_factor / final_div_factor (``three_phase``: back down to the start
    first, then to the end), annealed along a cosine or a line. With ``cycle_momentum``
    the momentum (SGD's "momentum", or beta1 of Adam's "betas") goes the other way, from
    ``max_momentum`` down to ``base_momentum`` and back.
    """

    @checks.arguments(
        total_steps=checks.optional(checks.positive_int),
        epochs=checks.optional(checks.positive_int),
        steps_per_epoch=checks.optional(checks.positive_int),
        pct_start=checks.interval(0, 1),
        anneal_strategy=checks.one_of(["cos", "linear"]),
        cycle_momentum=checks.boolean,
        div_factor=checks.positive,
        final_div_factor=checks.positive,
        three_phase=checks.boolean,
    )
    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        owner = type(self).__name__
        self.optimizer = check_optimizer(owner, optimizer)
        if total_steps is None and (epochs is None or steps_per_epoch is None):
            raise ValueError(f"{owner}: give total_steps, or epochs and steps_per_epoch")
        self.total_steps = total_steps if total_steps is not None else epochs * steps_per_epoch
        up = float(pct_start * self.total_steps) - 1  # the last step of each phase
        down, last = float(2 * pct_start * self.total_steps) - 2, self.total_steps - 1
        if three_phase:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(down, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                _phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                _phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                _phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy
        max_lrs = per_group(owner, "max_lr", optimizer, max_lr)
        for value in max_lrs:
            checks.non_negative(owner, "max_lr", value)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = momentum_key(owner, optimizer) == "betas"
            tops = per_group(owner, "max_momentum", optimizer, max_momentum)
            bottoms = per_group(owner, "base_momentum", optimizer, base_momentum)
            for top, bottom in zip(tops, bottoms):
                checks.non_negative(owner, "max_momentum", top)
                checks.non_negative(owner, "base_momentum", bottom)
            if last_epoch == -1:
                for top, bottom, group in zip(tops, bottoms, optimizer.param_groups):
                    set_momentum(group, top, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        anneal = anneal_cos if self._anneal_func_type == "cos" else anneal_linear
        return anneal(start, end, pct)

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {step} times, past total_steps={self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                    break
                start = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                set_momentum(group, momentum, self.use_beta1)
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str,
           end_momentum: str) -> dict:  # fmt: skip
    """One phase of the 1cycle: its last step and the group keys it anneals between."""
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}  # fmt: skip


def set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    """Write ``momentum`` into a group: as beta1 of its "betas", or as its "momentum"."""
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def momentum_key(owner: str, optimizer) -> str:
    """The group setting that momentum cycling moves: "betas" (its beta1) for the Adam
    family, "momentum" for SGD."""
    for key in ("betas", "momentum"):
        if key in optimizer.defaults:
            return key
    raise ValueError(
        f"{owner}: cycle_momentum=True needs an optimizer with momentum or betas, got "
        f"{type(optimizer).__name__}; pass cycle_momentum=False"
    )


class CosineAnnealingWarmRestarts(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2, where T_cur
    counts the epochs since the last restart and the period T_i starts at ``T_0`` and is
    multiplied by ``T_mult`` at each restart. ``step(epoch)`` takes fractional epochs
    (``epoch + i / iters`` within an epoch), as torch's."""

    @checks.arguments(T_0=checks.positive_int, T_mult=checks.positive_int, eta_min=checks.real)
    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):  # fmt: skip
        self.T_0 = self.T_i = T_0
        self.T_mult, self.eta_min = T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        low, cos_out = self.eta_min, 1 + math.cos(math.pi * self.T_cur / self.T_i)
        return [low + (b - low) * cos_out / 2 for b in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            checks.real("CosineAnnealingWarmRestarts.step", "epoch", epoch, low=0)
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self.set_lrs(self.get_lr())


class CyclicLR(LRScheduler):
    """The cyclical learning rate policy (Smith), stepped once per batch: the rate rises
    from ``base_lr`` to ``max_lr`` in ``step_size_up`` steps and falls back in
    ``step_size_down`` (as many by default), each cycle's height scaled by the policy,
    ``mode``: "triangular" (1), "triangular2" (halved each cycle, 1 / 2^(cycle - 1)) or
    "exp_range" (gamma^t); or ``scale_fn`` of the cycle number (``scale_mode="cycle"``) or of
    the step t ("iterations"). With ``cycle_momentum`` the momentum (SGD's "momentum", or
    beta1 of Adam's "betas") goes the other way, from ``max_momentum`` to ``base_momentum``
    at the peak. At step t, with T the steps of a cycle and r = step_size_up / T:

        cycle = floor(1 + t / T),  x = 1 + t / T - cycle               (x in [0, 1))
        h = x / r while rising, (x - 1) / (r - 1) while falling        (h in [0, 1])
        lr = base_lr + (max_lr - base_lr) * h * scale
        momentum = max_momentum - (max_momentum - base_momentum) * h * scale
    """

    MODES = ("triangular", "triangular2", "exp_range")

    @checks.arguments(
        step_size_up=checks.positive,
        step_size_down=checks.optional(checks.positive),
        gamma=checks.real,
        scale_fn=checks.optional(checks.function),
        scale_mode=checks.one_of(["cycle", "iterations"]),
        cycle_momentum=checks.boolean,
    )
    def __init__(
        self,
        optimizer,
        base_lr,
        max_lr,
        step_size_up: float = 2000,
        step_size_down: float | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn=None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum=0.8,
        max_momentum=0.9,
        last_epoch: int = -1,
    ):
        owner = type(self).__name__
        self.optimizer = check_optimizer(owner, optimizer)
        if scale_fn is None:  # a scale_fn of one's own replaces the mode, as torch's
            checks.one_of(self.MODES)(owner, "mode", mode)
        base_lrs = per_group(owner, "base_lr", optimizer, base_lr)
        self.max_lrs = per_group(owner, "max_lr", optimizer, max_lr)
        for name, values in (("base_lr", base_lrs), ("max_lr", self.max_lrs)):
            for value in values:
                checks.non_negative(owner, name, value)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        self.mode, self.gamma, self._scale_fn_custom = mode, gamma, scale_fn
        if scale_fn is None:  # the modes scale by the cycle, exp_range by the step
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1 = momentum_key(owner, optimizer) == "betas"
            self.base_momentums = per_group(owner, "base_momentum", optimizer, base_momentum)
            self.max_momentums = per_group(owner, "max_momentum", optimizer, max_momentum)
            for name, values in (("base_momentum", self.base_momentums),
                                 ("max_momentum", self.max_momentums)):  # fmt: skip
                for value in values:
                    checks.non_negative(owner, name, value)
            if last_epoch == -1:
                groups = optimizer.param_groups
                for top, bottom, group in zip(self.max_momentums, self.base_momentums, groups):
                    set_momentum(group, top, self.use_beta1)
                    group["max_momentum"], group["base_momentum"] = top, bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs  # after the first step, as torch's (from "initial_lr" there)

    def scale_fn(self, x: float) -> float:
        """The scale of a cycle's height at ``x`` (the cycle number, or the step)."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            height = x / self.step_ratio
        else:
            height = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (top - base) * height * scale for base, top in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            tops, bottoms = self.max_momentums, self.base_momentums
            for group, top, bottom in zip(self.optimizer.param_groups, tops, bottoms):
                set_momentum(group, top - (top - bottom) * height * scale, self.use_beta1)
        return lrs

    # ------------------------------------------------------------------ checkpoints
    _unsaved = ("optimizer", "_scale_fn_custom")

    def state_dict(self) -> dict:
        """As ``LRScheduler.state_dict``; of ``scale_fn``, a callable object's attributes."""
        state = super().state_dict()
        state["_scale_fn_custom"] = function_state(self._scale_fn_custom)
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if saved is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(saved)
