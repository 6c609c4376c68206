"""A checkpoint of a run into its directory, written from a host snapshot of its state (on
the background writer's thread: ``tricycle.apps.background``), each file atomically."""

from collections.abc import Callable
from pathlib import Path

from tricycle.apps.checkpoint import CheckpointError, save_state, save_weights, write_pickled
from tricycle.apps.runs import RunDirectory


def write_run(
    run_dir: RunDirectory,
    state: dict,
    model: bytes,
    best: dict | None,
    previous: str | None,
    kept: str,
) -> str:
    """Write a checkpoint's files from its host snapshot ``state`` (``Trainer.state_dict``
    with "run" and "layout") and ``model``, the pickle's bytes; returns the weights' digest.

    With ``best`` (its step, validation loss and the run's settings), the weights go to
    best.safetensors first. The weights that the state on disk goes with (digest
    ``previous``) are kept aside until the new state is written, so a process killed between
    the files resumes from the last complete checkpoint; an OSError becomes a
    ``CheckpointError`` naming the file, its directory and ``kept``, what is kept."""
    weights = state.pop("model")
    info = {"step": state["step"], "run": state["run"]}
    if best is not None:
        attempt(run_dir.best, lambda: save_weights(run_dir.best, weights, best), kept)
    run_dir.keep_previous_weights(previous)
    digest = attempt(run_dir.last, lambda: save_weights(run_dir.last, weights, info), kept)
    state["weights_sha256"] = digest
    attempt(run_dir.checkpoint, lambda: save_state(run_dir.checkpoint, state), kept)
    run_dir.previous.unlink(missing_ok=True)
    path = run_dir / RunDirectory.MODEL
    attempt(path, lambda: write_pickled(path, model), kept)
    return digest


def attempt(path: Path, write: Callable, kept: str):
    """``write()``; an OSError becomes a ``CheckpointError`` naming ``path`` and ``kept``."""
    try:
        return write()
    except OSError as error:
        raise CheckpointError(
            f"could not write {path.name} in {path.parent}: {error.strerror or error}; {kept}"
        ) from error
