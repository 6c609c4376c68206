"""The metrics' tokens/s (tricycle/apps/throughput.py): tokens over the wall time of training
between read-backs, evaluation left out, and so what a clock outside the loop measures."""

import json
import time

import numpy as np
import pytest

from tricycle.apps.runs import RunDirectory
from tricycle.apps.throughput import Throughput, rates_between_evaluations
from tricycle.configs import DebugConfig
from tricycle.random import manual_seed
from tricycle.training import gpt_trainer


def small_trainer():
    manual_seed(0)
    config = DebugConfig(embedding_dim=16, context_window=16, vocab_size=64, batch_size=4,
                         n_layers=1, eval_interval=20, eval_steps=8, steps=1000)  # fmt: skip
    tokens = np.random.default_rng(0).integers(0, config.vocab_size, size=5000)
    return gpt_trainer(config, tokens[:4000], tokens[4000:]), config


@pytest.mark.parametrize("log_interval", [1, 3])
def test_tokens_per_s_is_tokens_over_the_wall_time_without_evaluation(log_interval):
    trainer, config = small_trainer()
    trainer.fit(2)  # compiled and warm
    evaluating = []
    evaluate = trainer.evaluate

    def timed_evaluate():
        start = time.perf_counter()
        try:
            return evaluate()
        finally:
            evaluating.append(time.perf_counter() - start)

    trainer.evaluate = timed_evaluate
    records = []
    start = time.perf_counter()
    trainer.fit(62, log_interval=log_interval, on_record=records.append)
    outside = time.perf_counter() - start - sum(evaluating)
    assert len(records) == 60 and len(evaluating) == 4  # steps 20, 40, 60 and the last
    tokens = config.tokens_per_step * len(records)
    # each record carries its interval's rate: tokens of a step over it is its share of time
    inside = sum(config.tokens_per_step / r["tokens_per_s"] for r in records)
    assert tokens / inside == pytest.approx(tokens / outside, rel=0.05)
    evaluated = [r for r in records if r["val_loss"] is not None]
    assert [r["step"] for r in evaluated] == [20, 40, 60, 62]
    eval_s = [r["eval_s"] for r in evaluated]  # the meter's block holds the evaluation
    assert all(e >= t for e, t in zip(eval_s, evaluating))
    assert sum(eval_s) < sum(evaluating) + 0.05
    assert all("eval_s" not in r for r in records if r["val_loss"] is None)


def test_excluded_time_is_left_out():
    class Model:  # a CPU model: nothing to synchronise
        def parameters(self):
            return []

    meter = Throughput(Model())
    meter.add(1000)
    with meter.excluding():
        time.sleep(0.2)
    rate = meter.read()
    assert rate > 1000 / 0.1  # the 0.2 s of the block are not in it
    meter.add(10)
    assert meter.read() < rate  # a fresh interval


@pytest.mark.parametrize("log_interval", [1, 7])
def test_the_metrics_agree_with_the_wall_clock_between_evaluations(tmp_path, log_interval):
    """The records of metrics.jsonl (a run directory: checkpoints at every evaluation, which
    the wall clock of the steps between evaluations must not count either)."""
    trainer, config = small_trainer()
    trainer.fit(2)  # compiled and warm
    with RunDirectory(tmp_path / "run") as run_dir:
        trainer.fit(82, run_dir=run_dir, log_interval=log_interval, loss_plot=None)
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["step"] for r in records if r["val_loss"] is not None] == [20, 40, 60, 80, 82]
    pairs = rates_between_evaluations(records, config.tokens_per_step)
    assert len(pairs) == 4
    for metrics, clock in pairs:
        assert metrics == pytest.approx(clock, rel=0.05)
