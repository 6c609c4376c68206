"""Schedules made of schedules, as torch's: ``SequentialLR`` (one after another, switching at
milestones) and ``ChainedScheduler`` (all at once, each multiplying in its own factor)."""

from bisect import bisect_right

from tricycle import checks
from tricycle.optim.plateau import ReduceLROnPlateau
from tricycle.optim.scheduler_base import LRScheduler, check_optimizer, group_values


def _check_schedulers(owner: str, schedulers, optimizer) -> list:
    """At least one scheduler, each of ``optimizer`` and stepped without arguments."""
    schedulers = list(schedulers)
    if not schedulers:
        raise ValueError(f"{owner}: expected at least one scheduler, got none")
    for i, scheduler in enumerate(schedulers):
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{owner}: schedulers[{i}] is a {type(scheduler).__name__}")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner}: schedulers[{i}] is a ReduceLROnPlateau, whose step needs a metric"
            )
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{owner}: schedulers[{i}] belongs to another optimizer")
    return schedulers


class _OfSchedulers(LRScheduler):
    """A schedule holding others: its state_dict holds theirs."""

    _unsaved = ("optimizer", "_schedulers")

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state = dict(state_dict)
        saved = state.pop("_schedulers")
        super().load_state_dict(state)
        for scheduler, scheduler_state in zip(self._schedulers, saved):
            scheduler.load_state_dict(scheduler_state)


class SequentialLR(_OfSchedulers):
    """``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (started afresh
    from its epoch 0) until ``milestones[1]``, ...: a warm-up followed by a decay."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        owner = type(self).__name__
        check_optimizer(owner, optimizer)
        schedulers = _check_schedulers(owner, schedulers, optimizer)
        milestones = list(milestones)
        for milestone in milestones:
            checks.non_negative_int(owner, "milestones", milestone)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"{owner}: {len(schedulers)} schedulers need {len(schedulers) - 1} "
                f"milestones, got {len(milestones)}"
            )
        checks.integer(owner, "last_epoch", last_epoch, low=-1)
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo the steps the schedulers took when made
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def recursive_undo(self, scheduler=None) -> None:
        """Take back the first step of every scheduler held (through nested ones)."""
        scheduler = self if scheduler is None else scheduler
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                self.recursive_undo(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)  # its epoch 0, in its closed form where it has one
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_OfSchedulers):
    """Step every scheduler of ``schedulers`` at each step: chainable schedules multiply."""

    def __init__(self, schedulers, optimizer=None):
        owner = type(self).__name__
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError(f"{owner}: expected at least one scheduler, got none")
        optimizer = (
            optimizer if optimizer is not None else getattr(schedulers[0], "optimizer", None)
        )
        self._schedulers = _check_schedulers(owner, schedulers, check_optimizer(owner, optimizer))
        self.optimizer = optimizer
        self._last_lr = group_values(optimizer, "lr")

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = group_values(self.optimizer, "lr")
