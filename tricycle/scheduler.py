"""Learning-rate schedules: callables step -> learning rate.

Set the optimiser's rate before each update::

    schedule = CosineSchedule(max_learning_rate=6e-4, min_learning_rate=6e-5,
                              total_steps=5000, warmup_steps=100)
    for step in range(5000):
        optimiser.learning_rate = schedule(step)
        ...
"""

import math

from tricycle import checks


class CosineSchedule:
    """Linear warm-up to ``max_learning_rate``, then cosine decay to ``min_learning_rate``.

    For 0-based ``step``:
      - step < warmup_steps: max * (step + 1) / warmup_steps, so the last warm-up step
        (step = warmup_steps - 1) is exactly max and step 0 is max / warmup_steps, not 0;
      - warmup_steps <= step < total_steps: min + (max - min) * (1 + cos(pi * p)) / 2 with
        p = (step - warmup_steps) / (total_steps - warmup_steps), from max down to min;
      - step >= total_steps: min.
    """

    @checks.arguments(
        max_learning_rate=checks.non_negative,
        min_learning_rate=checks.non_negative,
        total_steps=checks.positive_int,
        warmup_steps=checks.non_negative_int,
    )
    def __init__(
        self,
        max_learning_rate: float,
        min_learning_rate: float,
        total_steps: int,
        warmup_steps: int = 0,
    ):
        if min_learning_rate > max_learning_rate:
            raise ValueError(
                f"CosineSchedule: need 0 <= min_learning_rate ({min_learning_rate}) <= "
                f"max_learning_rate ({max_learning_rate})"
            )
        if warmup_steps > total_steps:
            raise ValueError(
                f"CosineSchedule: need 0 <= warmup_steps ({warmup_steps}) <= total_steps "
                f"({total_steps})"
            )
        self.max_learning_rate, self.min_learning_rate = max_learning_rate, min_learning_rate
        self.total_steps, self.warmup_steps = total_steps, warmup_steps

    @checks.arguments(step=checks.non_negative_int)
    def __call__(self, step: int) -> float:
        top, bottom = self.max_learning_rate, self.min_learning_rate
        if step < self.warmup_steps:
            return top * ((step + 1) / self.warmup_steps)  # exactly top at the last step
        if step >= self.total_steps:
            return bottom
        progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)  # [0, 1)
        return top - (top - bottom) * 0.5 * (1.0 - math.cos(math.pi * progress))  # exact at p=0

    def __repr__(self) -> str:
        return (
            f"CosineSchedule(max_learning_rate={self.max_learning_rate}, "
            f"min_learning_rate={self.min_learning_rate}, total_steps={self.total_steps}, "
            f"warmup_steps={self.warmup_steps})"
        )
