"""The files of ``Accelerator.save_state`` and ``save_model``: a state directory (the model's
weights and state.npz) swapped in whole, so that a crash leaves the previous state; weights as
model.safetensors, or model.npz (the safe format) without the safetensors package."""

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from tricycle.apps.checkpoint import CheckpointError, load_state, save_state

WEIGHTS = "model.safetensors"  # or model.npz (the safe format) without the safetensors package
WEIGHTS_NPZ = "model.npz"
STATE = "state.npz"  # optimiser, loss scaler, counters, loaders, random generators


def write_directory(directory: Path, model, state: dict) -> None:
    """Write the weights and ``state`` into a new directory beside ``directory``, then swap
    it in: a crash leaves the previous state whole."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=directory.parent, prefix=f".{directory.name}."))
    try:
        if model is not None:
            _write_weights(fresh, model.state_dict())
        save_state(fresh / STATE, state)
        old = None
        if directory.exists():
            old = previous_state(directory)
            shutil.rmtree(old, ignore_errors=True)
            directory.rename(old)
        fresh.rename(directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise


def previous_state(directory: Path) -> Path:
    """Where ``write_directory`` keeps the previous state while it swaps the new one in."""
    return directory.with_name(f".{directory.name}.old")


def _write_weights(directory: Path, weights: dict) -> None:
    try:
        from safetensors.numpy import save_file  # noqa: PLC0415 - optional
    except ImportError:
        save_state(directory / WEIGHTS_NPZ, weights)
        return
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, directory / WEIGHTS,
              metadata={"format": "np", "written_by": "tricycle"})  # fmt: skip


def read_weights(directory: Path) -> dict:
    if (directory / WEIGHTS).is_file():
        try:
            from safetensors.numpy import load_file  # noqa: PLC0415 - optional
        except ImportError as error:
            raise CheckpointError(
                f"{directory / WEIGHTS} needs the safetensors package (pip install safetensors)"
            ) from error
        try:
            return load_file(directory / WEIGHTS)
        except Exception as error:  # safetensors raises its own error types
            raise CheckpointError(f"{directory / WEIGHTS} is not readable: {error}") from error
    if (directory / WEIGHTS_NPZ).is_file():
        return load_state(directory / WEIGHTS_NPZ)
    raise CheckpointError(f"{directory} holds no {WEIGHTS} or {WEIGHTS_NPZ}: not a saved state")


def write_weights_into(directory: Path, weights: dict) -> None:
    """``weights`` into ``directory`` (made if absent), each file replaced atomically."""
    directory.mkdir(parents=True, exist_ok=True)
    fresh = Path(tempfile.mkdtemp(dir=directory, prefix=".save_model."))
    try:
        _write_weights(fresh, weights)
        for path in fresh.iterdir():
            os.replace(path, directory / path.name)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
