"""Tokens per second of training, as the device did them.

On a GPU the host queues steps and waits for the device only where it reads a value back,
so one step's host time says little: a rate over host times can be many times the real
one. ``Throughput`` counts the tokens of the steps since the last read-back and divides
them by the wall time since it, the device synchronised at both ends; the time spent in
evaluation, hooks and checkpoints in between (``excluding``) is left out.
"""

import time
from contextlib import contextmanager

from tricycle import backend


class Throughput:
    """Tokens over training wall time, read at the read-backs of a training loop."""

    def __init__(self, model):
        self.model = model
        self.tokens, self.excluded = 0, 0.0
        self.start = time.perf_counter()

    def add(self, tokens: int) -> None:
        """A step of ``tokens`` tokens was queued."""
        self.tokens += tokens

    @contextmanager
    def excluding(self, seconds: list | None = None):
        """Leave this block's time out of the rate (the device synchronised first, so that
        queued training work is not counted as the block's); append it to ``seconds``."""
        synchronise(self.model)
        start = time.perf_counter()
        try:
            yield
        finally:
            synchronise(self.model)
            spent = time.perf_counter() - start
            self.excluded += spent
            if seconds is not None:
                seconds.append(spent)

    def read(self) -> float:
        """Tokens per second since the last read, the device synchronised now; starts the
        next interval."""
        synchronise(self.model)
        now = time.perf_counter()
        elapsed = now - self.start - self.excluded
        rate = self.tokens / elapsed if elapsed > 0 else 0.0
        self.tokens, self.excluded, self.start = 0, 0.0, now
        return rate


def rates_between_evaluations(records: list[dict], tokens_per_step: int) -> list[tuple]:
    """(the records' tokens/s, the wall clock's) over the steps after each evaluation up to
    and including the next one, from a run's metrics (``Trainer.fit``'s records). The wall
    clock runs from the end of the first evaluation (its record's ``wall_time``) and of the
    checkpoint written after it (the next record's ``checkpoint_s``) to the next evaluation's
    record, less
    that evaluation (``eval_s``); the records' rate over the same steps is their tokens over
    the time each record's ``tokens_per_s`` gives its step. The two agree when the metrics
    count the training's time, and only it."""
    evaluated = [i for i, r in enumerate(records) if r.get("val_loss") is not None]
    pairs = []
    for first, last in zip(evaluated, evaluated[1:]):
        steps = records[first + 1 : last + 1]
        start = records[first]["wall_time"] + steps[0].get("checkpoint_s", 0.0)
        clock = records[last]["wall_time"] - records[last].get("eval_s", 0.0) - start
        metrics = sum(tokens_per_step / r["tokens_per_s"] for r in steps)
        tokens = tokens_per_step * len(steps)
        pairs.append((tokens / metrics, tokens / clock))
    return pairs


def synchronise(model) -> None:
    """Wait until the device holding ``model`` has done all its queued work (no-op on the
    CPU, where work is done as it is called)."""
    params = model.parameters()
    if params and backend.is_cupy_array(params[0].array):
        backend.synchronize("a synchronisation of the GPU (tokens/s)")
