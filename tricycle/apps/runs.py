"""A training run on disk, and the models it leaves behind.

``RunDirectory`` is the folder ``tricycle-train`` writes: the weights (safetensors), the
training state beside them, the pickled model, the tokeniser, the run's settings and its
metrics, with a lock so that one run at a time trains there. ``load_model`` reads a trained
model back, to sample or evaluate: safely from its weights (arrays and JSON, no code runs),
or from a pickle the user trusts, and with the tokeniser that belongs to it.
``check_config_fits`` keeps a config read from a file from asking for a model far larger
than the weights stored beside it.
"""

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tricycle.apps.checkpoint import (
    CheckpointError,
    load_pickle,
    load_state,
    load_weights,
    weights_digest,
)
from tricycle.apps.files import (
    DirectoryLock,
    atomic_write,
    json_line,
    missing_directories,
    read_jsonl,
    remove_empty,
    remove_temporaries,
)
from tricycle.apps.plot import plot_losses
from tricycle.apps.pretrained import is_model_dir, load_pretrained, load_tokeniser
from tricycle.configs import GPTConfig
from tricycle.models import GPT, build_model
from tricycle_datasets.run_data import tokeniser_text

__all__ = [
    "RunDirectory",
    "check_config_fits",
    "load_model",
    "read_weights",
    "tokeniser_sha256",
    "tokeniser_text",
]


class RunDirectory:
    """The files of one training run, in one directory:

        model.safetensors  the last weights (safetensors, which other tools read), with the
                         step, the run's settings and its tokeniser in its metadata and a
                         checksum (``checkpoint.save_weights``)
        checkpoint.npz   the training state beside them (safe: no code runs on load):
                         optimiser, scaler, random states, step, the run's settings and the
                         digest of the model.safetensors it goes with; --resume reads both
        best.safetensors the weights of the lowest validation loss so far, with its step and
                         loss: what sampling and evaluation read unless told ``weights="last"``
        .model.previous.safetensors   while a save is under way, the weights that the
                         checkpoint.npz on disk goes with (a run killed between writing the
                         two files resumes from them)
        model.pkl        the pickled model, for ``pickle.load`` (checksummed)
        tokeniser.json   the tokeniser
        config.json      the run's settings, readable
        metrics.jsonl    one JSON line per step
        loss.png         the loss curves, drawn from the metrics (``plot_losses``)
        .lock            there while a process trains here

    Runs written before model.safetensors (layout 1: the weights inside checkpoint.npz, the
    best ones in best.npz) are still read: ``weights`` and ``load_state`` find them.

    ``open()`` takes the lock (a second run into the same directory is refused, a lock left
    by a killed run is taken over) and removes temporaries that killed writers left;
    ``close()`` gives it back, and after a failed run (``close(failed=True)``) removes the
    directories that ``open()`` made if the run wrote nothing into them.
    """

    CHECKPOINT, MODEL, TOKENISER = "checkpoint.npz", "model.pkl", "tokeniser.json"
    CONFIG, METRICS, LOSS_PLOT = "config.json", "metrics.jsonl", "loss.png"
    LAST, BEST = "model.safetensors", "best.safetensors"
    OLD_BEST, PREVIOUS = "best.npz", ".model.previous.safetensors"  # layout 1's best weights
    FILES = (LAST, CHECKPOINT, MODEL, TOKENISER, CONFIG, METRICS, LOSS_PLOT, BEST, OLD_BEST,
             PREVIOUS)  # fmt: skip
    REPLACED = ".replaced"  # --overwrite: the old run's files, until the new one has a state
    WEIGHTS = ("best", "last")  # which weights of a run directory to read
    LAYOUT = 2  # 2: weights in model.safetensors; 1 (none recorded): inside checkpoint.npz

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock = DirectoryLock(self.path)
        self._made: list[Path] = []  # the directories open() made, innermost first

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    @property
    def checkpoint(self) -> Path:
        return self.path / self.CHECKPOINT

    @property
    def last(self) -> Path:
        return self.path / self.LAST

    @property
    def best(self) -> Path:
        return self.path / self.BEST

    @property
    def previous(self) -> Path:
        return self.path / self.PREVIOUS

    def weights(self, which: str = "best") -> Path:
        """The file holding the run's ``which`` weights: "best" is best.safetensors (the
        lowest validation loss), or the last where the run has none (no validation yet);
        "last" is model.safetensors. A layout-1 run's are best.npz and checkpoint.npz."""
        if which not in self.WEIGHTS:
            raise ValueError(f"weights: expected one of {self.WEIGHTS}, got {which!r}")
        candidates = [self.best, self.path / self.OLD_BEST] if which == "best" else []
        candidates += [self.last, self.checkpoint]
        return next((path for path in candidates if path.is_file()), self.last)

    def load_state(self, path: Path | None = None) -> dict:
        """The training state to resume from: checkpoint.npz (or ``path``, a copy of it)
        with the model's weights under "model" (from model.safetensors, checked to be the
        weights this state was saved with; a layout-1 checkpoint holds them itself). A state
        from a newer tricycle, or weights and state of different saves, are refused with a
        ``CheckpointError`` naming the files."""
        path = self.checkpoint if path is None else path
        state = load_state(path)
        layout = state.get("layout", 1)
        if layout == 1:
            return state
        if layout != self.LAYOUT:
            raise CheckpointError(
                f"{path}: run layout {layout!r}, written by a newer tricycle (this "
                f"version reads layouts 1 and {self.LAYOUT}): update tricycle to resume it"
            )
        expected = state.get("weights_sha256")
        for weights in (self.last, self.previous):
            if weights.is_file() and weights_digest(weights) == expected:
                return {**state, "model": load_weights(weights)[0]}
        _, info, _ = load_weights(self.last)  # its own error where it is unreadable
        raise CheckpointError(
            f"{self.last} (step {info.get('step')}) and {path} (step {state.get('step')}) are "
            "not from the same save"
        )

    def keep_previous_weights(self, digest: str | None) -> None:
        """Before new weights replace model.safetensors: keep the weights that the state on
        disk (recording ``digest``; None: unknown) goes with as .model.previous.safetensors,
        until the new state is written (``load_state`` falls back on them). After a crash
        between the two files they are already there, and model.safetensors is not theirs."""
        if self.last.is_file() and (digest is None or weights_digest(self.last) == digest):
            os.replace(self.last, self.previous)

    def has_checkpoint(self) -> bool:
        """Whether there is a run to resume: its checkpoint.npz, or one that an --overwrite
        stopped before its own first checkpoint set aside (``open()`` puts it back)."""
        return self.checkpoint.is_file() or (self.path / self.REPLACED / self.CHECKPOINT).is_file()

    def existing_files(self) -> list[str]:
        """The run files already here (another run's, unless we are resuming it)."""
        return [name for name in self.FILES if (self.path / name).exists()]

    def open(self) -> list[str]:
        """Take the lock and clean up; returns messages for the user (a stale lock taken
        over, temporaries removed)."""
        self._made = missing_directories(self.path)
        self.lock.acquire()
        notes = []
        if self.lock.stale_owner:
            notes.append(
                f"{self.path}: took over the lock of a run that is no longer running "
                f"({self.lock.stale_owner})"
            )
        removed = remove_temporaries(self.path, list(self.FILES))
        if removed:
            notes.append(f"{self.path}: removed {len(removed)} unfinished temporary file(s)")
        settled = self.settle_replaced()  # a run stopped by a kill: what close() would do
        if settled:
            notes.append(f"{self.path}: {settled}")
        return notes

    def set_aside(self, names: list[str]) -> None:
        """--overwrite: move the old run's files ``names`` into .replaced/, where they stay
        until the new run has a checkpoint of its own (``settle_replaced``), so that a run
        that fails or is killed before one leaves the old run as it was."""
        aside = self.path / self.REPLACED
        aside.mkdir(exist_ok=True)
        for name in names:
            if (self.path / name).exists():
                os.replace(self.path / name, aside / name)

    def settle_replaced(self) -> str | None:
        """The files ``set_aside`` kept: deleted once the new run has its checkpoint, put
        back where it has none (it failed, or was killed, first); says which, or None."""
        aside = self.path / self.REPLACED
        if not aside.is_dir():
            return None
        if self.checkpoint.is_file():
            shutil.rmtree(aside)
            return "removed the replaced run's files (the new run has its checkpoint)"
        for kept in aside.iterdir():
            os.replace(kept, self.path / kept.name)
        aside.rmdir()
        return "put the replaced run's files back (the new run stopped before a checkpoint)"

    def close(self, failed: bool = False) -> None:
        """Settle the files --overwrite set aside (``settle_replaced``), give the lock back;
        after a ``failed`` run, remove the directories ``open()`` made where the run left
        them empty (a mistyped flag leaves no trace)."""
        self.settle_replaced()
        self.lock.release()
        if failed:
            remove_empty(self._made)
        self._made = []

    def __enter__(self) -> "RunDirectory":
        """``open()``, for a ``with`` block (its notes go to the log: ``warnings``)."""
        for note in self.open():
            warnings.warn(note, stacklevel=2)
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.close(failed=kind is not None)

    def restart_metrics(self, step: int) -> int:
        """Keep the metrics of steps up to ``step`` (a resumed run rewrites what followed);
        returns how many torn or unreadable lines were dropped."""
        path = self.path / self.METRICS
        records, dropped = read_jsonl(path)
        kept = [r for r in records if isinstance(r.get("step"), int) and r["step"] <= step]
        if path.exists() and (dropped or len(kept) != len(records)):
            with atomic_write(path, "w") as f:
                f.writelines(json_line(r) for r in kept)
        return dropped

    def append_metrics(self, records: list[dict]) -> None:
        with open(self.path / self.METRICS, "a") as f:
            f.writelines(json_line(r) for r in records)

    def metrics(self) -> list[dict]:
        return read_jsonl(self.path / self.METRICS)[0]

    def plot_losses(self, log_scale: bool = False) -> Path:
        """Draw the metrics' loss curves (train loss, validation points) into loss.png;
        returns its path. Raises ImportError without matplotlib."""
        return plot_losses(self.metrics(), self.path / self.LOSS_PLOT, log_scale, str(self.path))


def load_model(
    path,
    tokeniser_path=None,
    default_tokeniser: Callable | None = None,
    weights: str = "best",
    say: Callable[[str], None] | None = None,
):
    """(model, tokeniser) from what ``tricycle-train`` writes, to sample or evaluate.

    ``path`` is a run directory (its best.safetensors, the weights of its lowest validation
    loss, or with ``weights="last"`` or no validation yet its model.safetensors; a run of
    layout 1 its best.npz or checkpoint.npz), one of those files (safe: arrays and JSON,
    nothing in the file runs; the config and the run's tokeniser are inside), a Hugging Face
    model directory (``tricycle.apps.pretrained``: its own
    tokeniser), or a
    pickled model (``.pkl``/``.pickle``: loading a pickle runs code from the file, so only
    trusted ones; its tokeniser is ``tokeniser.json`` beside it). The model is the one its
    config's ``arch`` names (a ``GPT`` or a ``Llama``). ``tokeniser_path`` overrides the
    tokeniser; where none is found, ``default_tokeniser(model)`` is asked (None: an error).

    ``say`` (optional) is told, in one line, which file and step the weights come from.

    A tokeniser that does not belong to the model is refused: one with more ids than the
    model's vocabulary, or another than the run's own (recorded in the checkpoint, and for a
    pickle in the run's config.json beside it). Every problem is a ``CheckpointError``
    naming the file.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(
            f"{path} does not exist (give a run directory, its model.safetensors, a Hugging Face "
            "model directory or a .pkl pickle)"
        )
    if weights != "best" and not (path.is_dir() and not is_model_dir(path)) and say is not None:
        say(f"--weights {weights} is for a run directory; {path} holds one set of weights")
    if path.is_dir() and is_model_dir(path):  # a Hugging Face model: config.json + weights
        return load_pretrained(path, tokeniser_path)
    if path.is_dir():
        path = RunDirectory(path).weights(weights)
        if not path.is_file() and (path.parent / RunDirectory.MODEL).is_file():
            raise CheckpointError(
                f"{path.parent} has no {RunDirectory.LAST}; to load its pickle (which runs "
                f"code from the file), name it: {path.parent / RunDirectory.MODEL}"
            )
    if path.suffix in (".npz", ".safetensors"):
        model, run, whence = _load_checkpoint_model(path)
        if say is not None:
            say(f"weights: {path}, {whence}")
    elif path.suffix in (".pkl", ".pickle"):
        model, run = _load_pickled_model(path), _run_beside(path)
    else:
        raise CheckpointError(
            f"{path}: expected a run directory, its .safetensors or .npz weights or a .pkl "
            "pickle (only files named as pickles are unpickled)"
        )
    recorded = run.get("tokeniser")  # the run's tokeniser, as its file's text
    if tokeniser_path is None and isinstance(recorded, str):
        tokeniser, source = _tokeniser_from_text(recorded, path), path
    else:
        source = Path(tokeniser_path or path.parent / RunDirectory.TOKENISER)
        if source.is_file() or tokeniser_path is not None:
            tokeniser = _read_tokeniser(source)
        elif default_tokeniser is None or (tokeniser := default_tokeniser(model)) is None:
            raise CheckpointError(
                f"no tokeniser found for {path}: pass --tokeniser PATH, or put "
                f"{RunDirectory.TOKENISER} beside it"
            )
    n_ids = getattr(tokeniser, "n_tokens", tokeniser.vocab_size)  # the ids that exist
    size = f"{source} ({type(tokeniser).__name__}, {n_ids} ids)"
    if n_ids > model.config.vocab_size:
        raise CheckpointError(
            f"the tokeniser {size} does not belong to the model {path} (vocab_size "
            f"{model.config.vocab_size}): it has more ids than the model"
        )
    if source != path:
        own = run.get("tokeniser_sha256")
        own = tokeniser_sha256(recorded) if own is None and isinstance(recorded, str) else own
        if isinstance(own, str) and own != tokeniser_sha256(tokeniser.to_json()):
            raise CheckpointError(
                f"the tokeniser {size} does not belong to the model {path} (vocab_size "
                f"{model.config.vocab_size}): the run was trained with another tokeniser"
            )
    return model, tokeniser


def _load_checkpoint_model(path: Path) -> tuple[GPT, dict, str]:
    """The model in a run's weights file (its .safetensors, or layout 1's checkpoint.npz or
    best.npz), the run's metadata, and which step its weights come from, in words."""
    state = read_weights(path)
    run = state.get("run")
    if not isinstance(run, dict) or not isinstance(run.get("config"), dict):
        raise CheckpointError(f"{path} is not a training checkpoint (no config)")
    weights = state.get("model")
    try:
        config = GPTConfig.from_dict(run["config"])
        check_config_fits(config, weights)
        model = build_model(config)
        model.load_state_dict(weights)
    except (ValueError, TypeError, KeyError) as error:
        raise CheckpointError(f"{path} does not hold a usable GPT: {error}") from None
    val_loss = state.get("val_loss")
    if isinstance(val_loss, float):  # the best weights
        whence = f"the run's best: step {state.get('step')}, val loss {val_loss:.4f}"
    else:
        whence = f"the run's last: step {state.get('step')}"
    return model, run, whence


def read_weights(path: Path) -> dict:
    """What a run's weights file holds: the weights under "model", the step (and the
    validation loss of the best), the run's settings under "run". ``path`` is a
    .safetensors of the run, or a layout-1 checkpoint.npz or best.npz (a layout-2
    checkpoint.npz: the weights beside it)."""
    if path.suffix == ".safetensors":
        weights, info, _ = load_weights(path)
        return {**info, "model": weights}
    return RunDirectory(path.parent).load_state(path)  # layout 2: with the weights beside it


def _load_pickled_model(path: Path) -> GPT:
    """The pickled model at ``path`` (this runs code from the file)."""
    model = load_pickle(path)
    if not isinstance(model, GPT):
        raise CheckpointError(f"{path} holds a {type(model).__name__}, not a GPT")
    return model


def _run_beside(path: Path) -> dict:
    """The settings of the run that wrote the pickle ``path`` (its config.json), if any."""
    try:
        run = json.loads((path.parent / RunDirectory.CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return run if isinstance(run, dict) else {}


def _read_tokeniser(path: Path):
    try:
        return load_tokeniser(path)
    except (ValueError, OSError, KeyError) as error:
        raise CheckpointError(f"{path}: not a readable tokeniser: {error}") from None


def _tokeniser_from_text(text: str, path: Path):
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / RunDirectory.TOKENISER).write_text(text, encoding="utf-8")
        try:
            return load_tokeniser(Path(folder) / RunDirectory.TOKENISER)
        except (ValueError, OSError, KeyError) as error:
            raise CheckpointError(f"{path}: its tokeniser is not readable: {error}") from None


def tokeniser_sha256(text: str) -> str:
    """The identity a run records for its tokeniser: the SHA-256 of its file's text
    (the tokeniser's ``to_json()``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_config_fits(config: GPTConfig, weights) -> None:
    """Raise ValueError unless ``weights`` ({name: array}, from a checkpoint) could be the
    parameters of the model ``config`` describes (``build_model``): a config read from a file
    must not make us build a model far larger than the weights stored beside it (a crafted
    file would ask for terabytes)."""
    if not isinstance(weights, dict):
        raise ValueError("no model weights")
    stored = sum(int(np.size(w)) for w in weights.values())
    expected = _matrix_parameters(config)
    if expected > 2 * stored + 1_000_000:
        raise ValueError(
            f"the config describes a model of about {expected:,} parameters, but only "
            f"{stored:,} are stored"
        )


def _matrix_parameters(config: GPTConfig) -> int:
    """The parameters of ``build_model(config)``'s embeddings and matrices (biases and gains
    aside), counted without building it."""
    E, V, L = config.embedding_dim, config.vocab_size, config.n_layers
    if config.arch == "llama":  # q and o; k and v for the shared heads; SwiGLU's 3 matrices
        heads = 2 * E * (config.n_heads + config.kv_heads) * config.head_size
        block, positions = heads + 3 * E * config.hidden_size, 0
    else:  # q|k|v and the projection; the MLP's 2 matrices
        block = 4 * E * E + 2 * E * config.hidden_size
        positions = config.context_window * E
    head = 0 if config.tie_weights else V * E
    return V * E + positions + L * block + head
