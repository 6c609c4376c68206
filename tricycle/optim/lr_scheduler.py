"""Learning-rate schedules with torch.optim.lr_scheduler's names, arguments and numbers::

    import tricycle.optim as optim

    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
    for epoch in range(100):
        train_one_epoch(model, optimizer)     # optimizer.step() for each batch
        scheduler.step()                      # then the learning rate of the next epoch

A scheduler writes each parameter group's "lr" (and, cycling momentum, its "betas" or
"momentum"); ``get_last_lr()`` reads them back; ``state_dict()``/``load_state_dict()``
resume a schedule. The learning rates are torch's to the last bit: each schedule follows
torch's formulas term by term, in its chainable form (the base, ``scheduler_base``; the
factors, ``decays``; the cycles, ``cycles``; ``plateau``; the schedules of schedules,
``chains``).
"""

from tricycle.optim.chains import ChainedScheduler, SequentialLR
from tricycle.optim.cycles import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from tricycle.optim.decays import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from tricycle.optim.plateau import ReduceLROnPlateau
from tricycle.optim.scheduler_base import LRScheduler


class _LRScheduler(LRScheduler):  # noqa: N801 (torch's name)
    """torch's older name for ``LRScheduler``, which tutorials still subclass."""


# Each schedule lives in this module, as torch's: ``type(scheduler).__module__`` is
# "tricycle.optim.lr_scheduler", which code compares with ``lr_scheduler.__name__`` to tell the
# library's schedulers from its own (d2l's training loop: ``scheduler.__module__ ==
# lr_scheduler.__name__``), and pickles name the public path.
for _schedule in (
    ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR,
    ExponentialLR, LRScheduler, LambdaLR, LinearLR, MultiStepLR, MultiplicativeLR, OneCycleLR,
    PolynomialLR, ReduceLROnPlateau, SequentialLR, StepLR,
):  # fmt: skip
    _schedule.__module__ = __name__
del _schedule


__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
    "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
    "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
    "StepLR", "_LRScheduler",
]  # fmt: skip
