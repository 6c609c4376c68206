"""Work done during training beside it: ``Hook``s (HellaSwag at each evaluation, a sample
every N steps: ``tricycle.apps.evaluate``), and the log lines of an evaluation."""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Hook:
    """Work a ``Trainer`` does during ``fit`` beside training: ``run(trainer)`` returns a
    dict of values for the step's record in the metrics (``{"hellaswag_acc": 0.31}``,
    ``{"sample": "..."}``), every ``interval`` steps, or with ``interval`` None at each
    evaluation (with the validation loss: every ``eval_interval`` steps and at the last).

    It runs on every rank, so it may use the world's collectives (``trainer.world``: split
    its work over the ranks and all-reduce); rank 0's values are recorded. Numbers join the
    evaluation's log line; text (a sample) is logged on its own lines. It must draw no
    random numbers from the training's generators, so that a resumed run replays exactly.
    """

    run: Callable[..., dict]  # run(trainer) -> {name: value}
    interval: int | None = None

    def __post_init__(self):
        if not callable(self.run):
            raise TypeError(f"Hook: run must be callable, got {self.run!r}")
        if self.interval is not None and (
            isinstance(self.interval, bool) or not isinstance(self.interval, int)
            or self.interval < 1
        ):  # fmt: skip
            raise ValueError(f"Hook: interval must be None or an int >= 1, got {self.interval!r}")

    def due(self, step: int, evaluating: bool) -> bool:
        """Whether it runs after step ``step`` (``evaluating``: the trainer validates then)."""
        return evaluating if self.interval is None else step % self.interval == 0


def report_lines(
    step: int, record: dict, val_loss: float | None, measured: dict, best: bool = False
) -> list[str]:
    """The log lines of an evaluation: the losses and the hooks' numbers on one line (the
    validation loss marked when it is the run's best so far), each text (a sample) below it."""
    numbers = [f"train loss {record['loss']:.4f}"]
    numbers += [] if val_loss is None else [f"val loss {val_loss:.4f}" + (" (best)" * best)]
    numbers += [f"{k} {v:.4f}" for k, v in measured.items() if isinstance(v, int | float)]
    texts = [f"step {step} {k}:\n{v}" for k, v in measured.items() if isinstance(v, str)]
    line = f"step {step}: {', '.join(numbers)}, {record['wall_time']:.1f} s"
    return ([line] if val_loss is not None or len(texts) < len(measured) else []) + texts
