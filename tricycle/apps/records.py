"""The metrics of a training run: one record per step, completed where the loss is read back.

A step's loss stays on the device until a read-back (every ``log_interval`` steps, at an
evaluation, before a checkpoint): ``Records.add`` starts a step's record, ``Records.flush``
reads the pending losses back (one synchronisation), checks them (``StepOutput.settle``: a
non-finite loss raises ``TrainingDiverged``), gives them the tokens per second of their
interval (``tricycle.apps.throughput``) and appends them to the run's metrics.jsonl. The time
of evaluations and checkpoints is left out of the rate and recorded beside it (``eval_s``, and
``checkpoint_s`` on the record after a checkpoint).
"""

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tricycle.apps.throughput import Throughput


class Records:
    """The records of the steps since the last read-back, and the run's clock.

    ``wall_before``: seconds of training in earlier sessions (a resumed run's clock goes on);
    ``append``: where complete records go (a run directory's ``append_metrics``, or None);
    ``on_record``: called with each complete record (a progress bar), or None."""

    def __init__(self, model, tokens_per_step: int, scaler, wall_before: float = 0.0,
                 append: Callable | None = None, on_record: Callable | None = None):  # fmt: skip
        self.meter = Throughput(model)  # tokens/s between read-backs, the device waited for
        self.tokens_per_step, self.scaler = tokens_per_step, scaler
        self.append, self.on_record = append, on_record
        self.start, self.wall_before = time.perf_counter(), wall_before
        self.pending: list[dict] = []
        self.last: dict = {}  # the last complete record
        self.checkpoint_s: float | None = None  # the checkpoint just saved, for the next record

    def wall(self) -> float:
        """Seconds of training so far, earlier sessions included."""
        return self.wall_before + time.perf_counter() - self.start

    def add(self, step: int, output, learning_rate: float) -> dict:
        """The record of step ``step`` (its ``StepOutput`` read back at the next flush)."""
        self.meter.add(self.tokens_per_step)
        record = {"step": step, "output": output, "loss": None, "val_loss": None,
                  "lr": float(learning_rate), "grad_norm": None,
                  "tokens_per_s": None,  # at the read-back: over its interval
                  "wall_time": self.wall()}  # fmt: skip
        if self.checkpoint_s is not None:  # the checkpoint before this step's interval
            record["checkpoint_s"], self.checkpoint_s = self.checkpoint_s, None
        self.pending.append(record)
        return record

    @contextmanager
    def excluding(self, record: dict) -> Iterator[None]:
        """An evaluation after ``record``'s step: left out of the rate, its time in
        ``eval_s`` and the clock after it in ``wall_time``."""
        seconds: list[float] = []
        with self.meter.excluding(seconds):
            yield
        record.update(eval_s=sum(seconds), wall_time=self.wall())

    @contextmanager
    def checkpointing(self) -> Iterator[None]:
        """A checkpoint: left out of the rate, its time on the next step's record."""
        seconds: list[float] = []
        with self.meter.excluding(seconds):
            yield
        self.checkpoint_s = sum(seconds)

    def flush(self) -> None:
        """Read the pending records' losses back, check them and write the records."""
        if not self.pending:
            return
        skipped = 0 if self.scaler is None else self.scaler.skipped_steps
        tokens_per_s = self.meter.read()
        # the last record's wall time is the read's: one clock for both at its boundary
        self.pending[-1]["wall_time"] = self.wall_before + self.meter.start - self.start
        for record in self.pending:
            record["tokens_per_s"] = tokens_per_s
            output = record.pop("output").settle(record["step"] - 1)
            record.update(loss=output.loss, grad_norm=output.grad_norm, skipped_steps=skipped)
        if self.append is not None:
            self.append(self.pending)
        for record in self.pending if self.on_record is not None else ():
            self.on_record(record)
        self.last, self.pending = self.pending[-1], []
