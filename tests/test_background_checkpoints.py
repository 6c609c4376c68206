"""Checkpoints written in the background (tricycle.apps.background.Writer, Trainer.checkpoint):
the steps go on while the files are written, one write at a time, from a snapshot that the
steps after it cannot change; a write's error is raised on the main thread; the files are
those a synchronous save writes."""

import threading
import time

import numpy as np
import pytest

from tests.test_train import _tiny_trainer, one_blas_thread  # noqa: F401 - a fixture
from tricycle.apps import saving
from tricycle.apps.background import Writer
from tricycle.apps.checkpoint import CheckpointError, load_state
from tricycle.apps.runs import RunDirectory


def test_the_writer_runs_one_write_at_a_time_and_raises_its_error_on_the_main_thread():
    writer, running, most, results = Writer(), [], [], []

    def write(n):
        running.append(n)
        most.append(len(running))
        time.sleep(0.05)
        running.remove(n)
        if n == 2:
            raise OSError(28, "No space left on device")
        return threading.current_thread().name

    writer.submit(lambda: write(1), results.append)
    assert writer.busy
    writer.submit(lambda: write(2), results.append)  # waits for the first
    assert results == ["tricycle-checkpoint-writer"] and max(most) == 1
    with pytest.raises(OSError, match="No space left"):
        writer.wait()  # the second's error, here
    assert not writer.busy
    writer.wait()  # nothing in flight: nothing to do


def test_steps_go_on_while_a_checkpoint_is_written(tmp_path, monkeypatch):
    """Step 4's checkpoint.npz is written off the main thread while step 5 runs (its write
    waits for that step to begin: a write on the main thread would wait in vain), and it
    holds the snapshot of step 4 (the optimiser's moments as they were then), not the state
    that the steps after it made."""
    real_save, overlapped, step_5 = saving.save_state, [], threading.Event()

    def save_after_step_5(path, state):
        if state["step"] == 4:
            on_main = threading.current_thread() is threading.main_thread()
            overlapped.append(not on_main and step_5.wait(timeout=20))
            real_save(tmp_path / "at_4.npz", state)
        real_save(path, state)

    monkeypatch.setattr(saving, "save_state", save_after_step_5)
    trainer = _tiny_trainer()
    real_step = trainer.train_step

    def step():
        if trainer.step == 4:
            step_5.set()
        return real_step()

    monkeypatch.setattr(trainer, "train_step", step)
    with RunDirectory(tmp_path / "run") as run_dir:
        trainer.fit(6, run_dir=run_dir, loss_plot=None)
    assert overlapped == [True]
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 6
    reference = _tiny_trainer()
    reference.fit(4)
    expected, saved = reference.optimiser.state_dict(), load_state(tmp_path / "at_4.npz")
    assert saved["step"] == 4 and saved["optimiser"].keys() == expected.keys()
    for key, array in expected.items():
        np.testing.assert_array_equal(saved["optimiser"][key], array, err_msg=key)


def test_a_failed_background_write_stops_the_run_naming_what_is_kept(tmp_path, monkeypatch):
    real_save, calls = saving.save_state, []

    def full_after_one(path, state):
        calls.append(state["step"])
        if len(calls) > 1:
            raise OSError(28, "No space left on device")
        real_save(path, state)

    monkeypatch.setattr(saving, "save_state", full_after_one)
    trainer = _tiny_trainer()
    with RunDirectory(tmp_path / "run") as run_dir, pytest.raises(CheckpointError) as error:
        trainer.fit(10, run_dir=run_dir, loss_plot=None)
    assert f"checkpoint.npz in {tmp_path / 'run'}: No space left on device" in str(error.value)
    assert "step 4) is kept" in str(error.value)
    assert load_state(tmp_path / "run" / "checkpoint.npz")["step"] == 4
    assert not trainer.writer.busy
