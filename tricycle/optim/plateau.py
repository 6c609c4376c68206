"""``ReduceLROnPlateau``: lower the learning rate when a metric stops improving, as torch's.

Each ``step(metric)`` compares the metric (a validation loss, say) with the best so far.
After more than ``patience`` steps without improvement every group's learning rate is
multiplied by ``factor`` (not below its ``min_lr``), and the count waits ``cooldown``
steps before it starts again. "Improving" means, for ``mode="min"`` and
``threshold_mode="rel"``, metric < best * (1 - threshold); "abs": metric < best - threshold
(and the mirror images for ``mode="max"``).
"""

import math

from tricycle import checks
from tricycle.optim.scheduler_base import LRScheduler, check_optimizer, group_values


class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rates by ``factor`` when ``step(metric)`` has seen no
    improvement for more than ``patience`` steps; changes smaller than ``eps`` are not
    made."""

    @checks.arguments(
        mode=checks.one_of(["min", "max"]),
        factor=checks.interval(0, 1, "[)"),
        patience=checks.non_negative_int,
        threshold=checks.non_negative,
        threshold_mode=checks.one_of(["rel", "abs"]),
        cooldown=checks.non_negative_int,
        eps=checks.non_negative,
    )
    def __init__(
        self,
        optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr=0,
        eps: float = 1e-8,
    ):
        owner = type(self).__name__
        self.factor = factor
        self.optimizer = check_optimizer(owner, optimizer)
        if isinstance(min_lr, list | tuple):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"{owner}: {len(min_lr)} min_lr values for "
                    f"{len(optimizer.param_groups)} parameter groups"
                )
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        for value in self.min_lrs:
            checks.non_negative(owner, "min_lr", value)
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.last_epoch = 0
        self._last_lr = group_values(optimizer, "lr")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def is_better(self, a: float, best: float) -> bool:
        """Whether metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch: int | None = None) -> None:
        """Take the metric of the epoch that ended (a number, or a one-element Tensor)."""
        try:
            current = float(metrics)
        except (TypeError, ValueError):
            raise TypeError(
                f"ReduceLROnPlateau.step: metrics must be a number, got {metrics!r}"
            ) from None
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = group_values(self.optimizer, "lr")

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise ValueError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} parameter groups, "
                    f"min_lr gave {len(self.min_lrs)} (a group added since?): set min_lrs"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, floor in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new
