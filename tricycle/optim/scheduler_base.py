"""``LRScheduler``: torch's protocol for learning-rate schedules that set the "lr" of an
optimizer's parameter groups.

A scheduler made with ``last_epoch=-1`` records each group's learning rate as its
"initial_lr" (the schedule's ``base_lrs``) and takes its first step at once, setting the
learning rate of epoch 0. Each ``step()`` then advances ``last_epoch`` by one and writes
``get_lr()`` into the groups; ``get_last_lr()`` reads what was written. As torch's, most
schedules are *chainable*: ``get_lr`` computes the next rate from the group's current one,
so schedules applied to one optimizer compose. ``step(epoch)`` (deprecated by torch, and
warned about as there) jumps to ``epoch`` with the schedule's closed form where it has one.

The formulas follow torch/optim/lr_scheduler.py term by term, so that the learning rates
are torch's to the last bit, not only to rounding.
"""

import copy
import types
import warnings

from tricycle import checks
from tricycle.optim.optimizer import Optimizer

EPOCH_DEPRECATED = (
    "The epoch parameter in `scheduler.step()` is deprecated (as in torch): call "
    "`scheduler.step()` once per epoch. Given an epoch, the closed form of the schedule is "
    "used where it has one."
)


def check_optimizer(owner: str, optimizer) -> Optimizer:
    """A ``tricycle.optim`` optimizer (the seed's ``tricycle.optimisers`` ones have no
    parameter groups: their learning rate is set from ``tricycle.scheduler``'s schedules).
    What ``Accelerator.prepare`` returned for one is read as the optimizer it wraps."""
    if isinstance(getattr(optimizer, "optimiser", None), Optimizer):  # a prepared one
        optimizer = optimizer.optimiser
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"{owner}: optimizer must be a tricycle.optim optimizer (with param_groups), got "
            f"{type(optimizer).__module__}.{type(optimizer).__name__}; for the optimisers of "
            "tricycle.optimisers set optimiser.learning_rate from a tricycle.scheduler schedule"
        )
    return optimizer


def per_group(owner: str, name: str, optimizer: Optimizer, value) -> list:
    """One value per parameter group: ``value`` repeated, or a list/tuple of one each."""
    if isinstance(value, list | tuple):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{owner}: {name} has {len(value)} values, the optimizer has "
                f"{len(optimizer.param_groups)} parameter groups"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


def function_state(fn) -> dict | None:
    """What a state_dict keeps of a schedule's function: a callable object's attributes (its
    state), None for a plain function or lambda (code, not state; nor can it be pickled)."""
    return None if fn is None or isinstance(fn, types.FunctionType) else dict(fn.__dict__)


def group_values(optimizer: Optimizer, key: str) -> list:
    """Every group's ``key``, in group order."""
    return [group[key] for group in optimizer.param_groups]


class LRScheduler:
    """Base class of the schedules: subclasses give ``get_lr()``, the learning rate of each
    group at ``last_epoch`` (and ``_get_closed_form_lr()`` where there is one)."""

    _is_initial = False  # True during the first step, taken by the constructor

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        owner = type(self).__name__
        self.optimizer = check_optimizer(owner, optimizer)
        checks.integer(owner, "last_epoch", last_epoch, low=-1)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise ValueError(
                        f"{owner}: resuming at last_epoch={last_epoch} needs param_groups[{i}]"
                        "['initial_lr'], which a scheduler sets: load the optimizer's "
                        "state_dict first, or start with last_epoch=-1"
                    )
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """The constructor's step, to the learning rate of epoch 0."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rate of each group at ``last_epoch`` (the chainable form)."""
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rate of each group that the last step set."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (or, deprecated, to ``epoch``) and set the
        groups' learning rates."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATED, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            checks.integer(type(self).__name__, "epoch", epoch)
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", self.get_lr)
            values = closed_form()
        self.set_lrs(values)

    def set_lrs(self, values: list) -> None:
        """Write one learning rate into each group, and remember them for ``get_last_lr``."""
        groups = self.optimizer.param_groups
        if len(values) != len(groups):
            raise ValueError(
                f"{type(self).__name__}: {len(values)} learning rates for {len(groups)} "
                "parameter groups (a group added to the optimizer after the scheduler?)"
            )
        for group, lr in zip(groups, values):
            group["lr"] = lr
        self._last_lr = group_values(self.optimizer, "lr")

    # ------------------------------------------------------------------ checkpoints
    _unsaved: tuple[str, ...] = ("optimizer",)  # attributes that are not state

    def state_dict(self) -> dict:
        """Every attribute but the optimizer (a copy)."""
        return copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in self._unsaved})

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore from ``state_dict()``."""
        if not isinstance(state_dict, dict):
            raise TypeError(
                f"{type(self).__name__}.load_state_dict: expected a dict, got {state_dict!r}"
            )
        self.__dict__.update(copy.deepcopy(state_dict))
