"""Training as a library: the step, evaluation, the divergence guard, and whole runs that
save and resume exactly.

The pieces, from the smallest::

    result = train_step(model, optimiser, batches, policy, max_norm=1.0)   # one update
    loss = result.settle(step).loss             # read back (and checked) when you choose
    val = evaluate(model, valid_data, n_batches=20)

    trainer = Trainer(model, optimiser, train_data, policy=policy, schedule=schedule,
                      max_norm=1.0, valid_data=valid_data, eval_interval=250)
    trainer.fit(5000, run_dir=RunDirectory("runs/mine"))   # metrics, checkpoints, Ctrl-C
    trainer.save("checkpoint.npz"); trainer.load("checkpoint.npz")       # the whole run

**One step for every precision.** ``train_step`` runs the forward in the policy's dtype,
seeds backward with its loss scale, and lets ``Precision.step`` unscale, clip and update;
float32 is just ``Precision("fp32")``. The loss and gradient norm come back as they were
computed: device scalars on a GPU, so a loop that reads them every N steps lets the host run
ahead of the device in between (``StepOutput.settle`` reads them and applies the divergence
guard).

**Seams.** ``reduce_gradients(named_parameters)`` is called once per step, after the
micro-batches' backward passes and before clipping and the update: data parallelism averages
the gradients across processes there. The training data is any iterator of (inputs,
targets) batches; if it has ``state_dict()``/``load_state_dict()`` (a shard loader's
position), checkpoints save and restore it, and otherwise the state of its ``rng`` generator
(``CausalLMDataset``'s random windows).

**Runs.** ``Trainer.state_dict`` holds everything that decides what happens next: the
parameters, the optimiser's moments and step counts, the loss scaler, every random generator
(the training data's, the validation data's for the "random" protocol, each layer's dropout)
and the step; so a resumed run replays exactly on the CPU. The divergence guard stops a run
whose loss or (unscaled) gradient norm is not finite, and never writes a checkpoint holding a
non-finite parameter or optimiser moment.
"""

import contextlib
import ctypes
import ctypes.util
import json
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tricycle import backend
from tricycle.checkpoint import CheckpointError, load_state, save_pickle, save_state
from tricycle.configs import GPTConfig
from tricycle.dataset import CausalLMDataset
from tricycle.files import DirectoryLock, atomic_write, read_jsonl, remove_temporaries
from tricycle.loss import CrossEntropy
from tricycle.models import GPT
from tricycle.optimisers import AdamW, decay_all_matrices, decay_matrices
from tricycle.precision import Precision
from tricycle.scheduler import CosineSchedule
from tricycle.tensor import no_grad

__all__ = [
    "RunDirectory",
    "StepOutput",
    "Trainer",
    "TrainingDiverged",
    "check_config_fits",
    "check_finite",
    "evaluate",
    "gpt_trainer",
    "precision_for",
    "train_step",
    "tune_cpu_allocator",
]


class TrainingDiverged(RuntimeError):
    """The loss, the gradient norm, a parameter or an optimiser moment stopped being finite."""


# ====================================================================== one step


@dataclass(frozen=True)
class StepOutput:
    """What one ``train_step`` computed: the mean loss over its micro-batches, the global
    gradient norm before clipping (None when neither clipping nor loss scaling needed it),
    and whether the update was skipped for inf/NaN gradients. Values may still be device
    scalars; ``settle`` reads them back. ``scaled``: the step used loss scaling, where an
    overflowing gradient skips the step instead of ending the run."""

    loss: Any
    grad_norm: Any
    skipped: Any
    scaled: bool = False

    def settle(self, step: int | None = None) -> "StepOutput":
        """This output with Python numbers (one device synchronisation), checked: raises
        ``TrainingDiverged`` naming ``step`` on a non-finite loss, or on a non-finite norm
        without loss scaling (with scaling such a step is skipped and counted)."""
        loss = float(self.loss)
        norm = None if self.grad_norm is None else float(self.grad_norm)
        at = "" if step is None else f" at step {step}"
        if not math.isfinite(loss):
            raise TrainingDiverged(f"the training loss is {loss}{at}")
        if norm is not None and not math.isfinite(norm) and not self.scaled:
            raise TrainingDiverged(f"the gradient norm is {norm}{at}")
        return replace(self, loss=loss, grad_norm=norm, skipped=bool(self.skipped))


def train_step(
    model,
    optimiser,
    batches: Iterator,
    policy: Precision | None = None,
    *,
    loss_fn: Callable | None = None,
    accumulation_steps: int = 1,
    max_norm: float = 0.0,
    reduce_gradients: Callable | None = None,
) -> StepOutput:
    """One optimiser step over ``accumulation_steps`` micro-batches from ``batches``.

    Args:
        model: a Layer mapping inputs to logits; a GPT also takes ``precision=``.
        optimiser: its ``step()`` is called first, then ``update`` through the policy.
        batches: an iterator of (inputs, targets).
        policy: the precision policy (default float32).
        loss_fn: ``loss_fn(targets, logits)``, default ``CrossEntropy()``.
        max_norm: clip the gradients to this global norm (0: no clipping).
        reduce_gradients: called with the model's named parameters once their gradients
            are complete, before clipping and the update (gradient all-reduce).

    Returns a ``StepOutput`` whose values stay on the device (no host synchronisation on a
    GPU); call ``settle`` to read and check them.
    """
    if accumulation_steps < 1:
        raise ValueError(f"train_step: accumulation_steps must be >= 1, got {accumulation_steps}")
    policy = Precision() if policy is None else policy
    loss_fn = CrossEntropy() if loss_fn is None else loss_fn
    optimiser.step()
    total = 0.0
    for _ in range(accumulation_steps):
        inputs, targets = next(batches)  # (B, T) ids each
        logits = model(inputs, precision=policy) if policy.mixed else model(inputs)
        loss = loss_fn(targets, logits)  # float32, whatever the compute dtype
        # gradients add up over the micro-batches: each contributes its share of the mean
        policy.backward(loss / accumulation_steps if accumulation_steps > 1 else loss)
        total = total + loss.array  # summed on the device
    if reduce_gradients is not None:
        reduce_gradients(model.named_parameters())
    norm, skipped = policy.step(optimiser, model, max_norm=max_norm)
    return StepOutput(total / accumulation_steps, norm, skipped, policy.scaler is not None)


def evaluate(
    model,
    data,
    n_batches: int,
    policy: Precision | None = None,
    protocol: str = "sequential",
    loss_fn: Callable | None = None,
) -> float:
    """Mean loss over ``n_batches`` batches of ``data``, without a graph (summed on the
    device, read back once).

    ``protocol`` "sequential": ``data.iterate_sequential`` (the first windows in order, the
    same every time: each token once, if n_batches covers the split); "random": fresh
    batches from ``next(data)`` each time, as nanoGPT's ``estimate_loss`` (they advance the
    data's generator, which checkpoints save).
    """
    if n_batches < 1:
        raise ValueError(f"evaluate: n_batches must be >= 1, got {n_batches}")
    if protocol not in ("sequential", "random"):
        raise ValueError(f"evaluate: protocol must be 'sequential' or 'random', got {protocol!r}")
    policy = Precision() if policy is None else policy
    loss_fn = CrossEntropy() if loss_fn is None else loss_fn
    if protocol == "random":
        batches = (next(data) for _ in range(n_batches))
    else:
        batches = data.iterate_sequential(max_batches=n_batches)
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    try:
        with no_grad():
            for inputs, targets in batches:
                logits = model(inputs, precision=policy) if policy.mixed else model(inputs)
                total = total + loss_fn(targets, logits).array
                n += 1
    finally:
        if was_training:
            model.train()
    return float(total) / n


def check_finite(model, optimiser=None) -> None:
    """Raise ``TrainingDiverged`` naming the first parameter or optimiser state array that
    holds an inf or NaN. One device synchronisation for the lot."""
    arrays = [(f"parameter {name}", p.array) for name, p in model.named_parameters()]
    if optimiser is not None:
        for name, slots in optimiser.state.items():
            for slot, value in slots.items():
                if hasattr(value, "dtype") and value.dtype.kind == "f":
                    arrays.append((f"optimiser {slot} of {name}", value))
    flags = [backend.array_module(a).isfinite(a).all() for _, a in arrays]
    if not flags:
        return
    finite = np.asarray([bool(f) for f in _host_bools(flags)])
    if not finite.all():
        where = arrays[int(np.argmin(finite))][0]
        raise TrainingDiverged(f"{where} holds inf or NaN values")


def _host_bools(flags: list) -> list:
    """0-d device booleans read back together (one transfer per device, not one each)."""
    xp = backend.array_module(flags[0])
    if xp is np or not all(backend.array_module(f) is xp for f in flags):
        return [bool(f) for f in flags]
    return backend.to_host_array(xp.stack(flags)).tolist()


def check_config_fits(config: GPTConfig, weights) -> None:
    """Raise ValueError unless ``weights`` ({name: array}, from a checkpoint) could be the
    parameters of a GPT of ``config``: a config read from a file must not make us build a
    model far larger than the weights stored beside it (a crafted file would ask for
    terabytes)."""
    if not isinstance(weights, dict):
        raise ValueError("no model weights")
    stored = sum(int(np.size(w)) for w in weights.values())
    E, hidden = config.embedding_dim, int(config.embedding_dim * config.expansion_ratio)
    expected = (config.vocab_size + config.context_window) * E  # biases and gains aside
    expected += config.n_layers * (4 * E * E + 2 * E * hidden)
    if expected > 2 * stored + 1_000_000:
        raise ValueError(
            f"the config describes a GPT of about {expected:,} parameters, but only {stored:,} "
            "are stored"
        )


def precision_for(name: str, device: str) -> Precision:
    """The precision policy called ``name`` for ``device`` ("cpu" or "gpu"); a ValueError
    where it cannot run (TF32 is a tensor-core mode, and numpy has no fast bfloat16)."""
    if device != "gpu" and name in ("tf32", "bf16"):
        raise ValueError(
            f"precision {name} needs a GPU: TF32 is a tensor-core mode and numpy has no fast "
            "bfloat16 matmul; use fp32 or fp16 on the CPU"
        )
    return Precision(name)


def tune_cpu_allocator() -> None:
    """Keep freed memory in the process (glibc), so each step reuses it instead of asking the
    kernel for fresh zeroed pages: ~10% faster training on CPU. Changes the whole process's
    malloc, so only scripts call it. A no-op elsewhere than glibc."""
    libc_name = ctypes.util.find_library("c")
    if sys.platform != "linux" or libc_name is None:
        return
    try:
        libc = ctypes.CDLL(libc_name)
        M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
        libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum: 32 MiB
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
        libc.mallopt(M_TOP_PAD, 256 << 20)
    except (OSError, AttributeError):
        pass


# ====================================================================== random states


def data_state(data) -> dict:
    """Where a data source stands: its ``state_dict()``, or its ``rng`` generator's state."""
    if hasattr(data, "state_dict"):
        return {"state": data.state_dict()}
    return {"rng": data.rng.bit_generator.state}


def load_data_state(data, state: dict) -> None:
    """Put a data source back where ``data_state`` found it."""
    if "state" in state:
        data.load_state_dict(state["state"])
    else:
        data.rng.bit_generator.state = state["rng"]


def layer_rng_states(model) -> dict:
    """{layer name: state} of every layer's ``rng`` generator (dropout, attention dropout)."""
    return {
        name: layer.rng.bit_generator.state
        for name, layer in model.named_layers()
        if isinstance(getattr(layer, "rng", None), np.random.Generator)
    }


def load_layer_rng_states(model, states: dict) -> None:
    layers = dict(model.named_layers())
    unknown = sorted(set(states) - set(layers))
    if unknown:
        raise ValueError(f"random states for layers the model does not have: {unknown}")
    for name, state in states.items():
        layers[name].rng.bit_generator.state = state


# ====================================================================== the run directory


class RunDirectory:
    """The files of one training run, in one directory:

        checkpoint.npz   the safe checkpoint: parameters, optimiser, scaler, random states,
                         step, the run's settings and its tokeniser (no code runs on load)
        model.pkl        the pickled model, for ``pickle.load`` (checksummed)
        tokeniser.json   the tokeniser
        config.json      the run's settings, readable
        metrics.jsonl    one JSON line per step
        .lock            held while a process trains here

    ``open()`` takes the lock (a second run into the same directory is refused, a lock left
    by a killed run is taken over) and removes temporaries that killed writers left.
    """

    CHECKPOINT, MODEL, TOKENISER = "checkpoint.npz", "model.pkl", "tokeniser.json"
    CONFIG, METRICS = "config.json", "metrics.jsonl"
    FILES = (CHECKPOINT, MODEL, TOKENISER, CONFIG, METRICS)

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock = DirectoryLock(self.path)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    @property
    def checkpoint(self) -> Path:
        return self.path / self.CHECKPOINT

    def existing_files(self) -> list[str]:
        """The run files already here (another run's, unless we are resuming it)."""
        return [name for name in self.FILES if (self.path / name).exists()]

    def open(self) -> list[str]:
        """Take the lock and clean up; returns messages for the user (a stale lock taken
        over, temporaries removed)."""
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
        return notes

    def close(self) -> None:
        self.lock.release()

    def __enter__(self) -> "RunDirectory":
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def restart_metrics(self, step: int) -> int:
        """Keep the metrics of steps up to ``step`` (a resumed run rewrites what followed);
        returns how many torn or unreadable lines were dropped."""
        path = self.path / self.METRICS
        records, dropped = read_jsonl(path)
        kept = [r for r in records if isinstance(r.get("step"), int) and r["step"] <= step]
        if path.exists() and (dropped or len(kept) != len(records)):
            with atomic_write(path, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in kept)
        return dropped

    def append_metrics(self, records: list[dict]) -> None:
        with open(self.path / self.METRICS, "a") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)

    def metrics(self) -> list[dict]:
        return read_jsonl(self.path / self.METRICS)[0]

    def plot_losses(self, name: str = "loss.png") -> None:
        """Draw the metrics' loss curves into ``name``, when matplotlib is installed (it is
        an optional dependency)."""
        try:
            import matplotlib  # noqa: PLC0415 - optional dependency

            matplotlib.use("Agg")
            from matplotlib import pyplot as plt  # noqa: PLC0415
        except ImportError:
            return
        records = self.metrics()
        fig, ax = plt.subplots(figsize=(7, 4))
        steps = [r["step"] for r in records]
        ax.plot(steps, [r["loss"] for r in records], label="train", alpha=0.7)
        val = [(r["step"], r["val_loss"]) for r in records if r.get("val_loss") is not None]
        if val:
            ax.plot(*zip(*val), "o-", label="validation")
        ax.set(xlabel="step", ylabel="cross-entropy loss")
        ax.legend()
        fig.tight_layout()
        fig.savefig(self.path / name)
        plt.close(fig)


# ====================================================================== the trainer


class Trainer:
    """A training run: the model, its optimiser and data, and the loop around ``train_step``.

    Args:
        model, optimiser, train_data: as for ``train_step``.
        policy: the precision policy (default float32).
        schedule: ``schedule(step) -> learning rate``, set before each step (optional).
        accumulation_steps, max_norm, loss_fn, reduce_gradients: as for ``train_step``.
        valid_data, eval_interval, eval_steps, eval_protocol: validate every
            ``eval_interval`` steps (and at the end) over ``eval_steps`` batches.
        tokens_per_step: for the tokens/s in the metrics.
        seed: seeds the GPU's dropout masks, one seed per step, so they replay on resume.

    ``step`` counts the steps done; ``state_dict``/``load_state_dict`` and ``save``/``load``
    hold the whole run.
    """

    def __init__(
        self,
        model,
        optimiser,
        train_data,
        *,
        policy: Precision | None = None,
        schedule: Callable[[int], float] | None = None,
        accumulation_steps: int = 1,
        max_norm: float = 0.0,
        loss_fn: Callable | None = None,
        reduce_gradients: Callable | None = None,
        valid_data=None,
        eval_interval: int | None = None,
        eval_steps: int = 20,
        eval_protocol: str = "sequential",
        tokens_per_step: int | None = None,
        seed: int = 0,
    ):
        self.model, self.optimiser, self.train_data = model, optimiser, train_data
        self.policy = Precision() if policy is None else policy
        self.schedule, self.loss_fn = schedule, CrossEntropy() if loss_fn is None else loss_fn
        self.accumulation_steps, self.max_norm = accumulation_steps, max_norm
        self.reduce_gradients = reduce_gradients
        self.valid_data, self.eval_interval = valid_data, eval_interval
        self.eval_steps, self.eval_protocol = eval_steps, eval_protocol
        self.tokens_per_step, self.seed = tokens_per_step, seed
        self.step = 0
        self.wall_time = 0.0  # seconds of training (evaluation included) in earlier sessions
        self.saved_step: int | None = None  # the step of the last checkpoint written or read
        self._on_gpu: bool | None = None  # found at the first step of each fit

    # ------------------------------------------------------------------ steps
    def train_step(self) -> StepOutput:
        """One step at ``self.step`` (learning rate from the schedule); advances ``step``."""
        if self.schedule is not None:
            self.optimiser.learning_rate = self.schedule(self.step)
        if self._on_gpu is None:
            params = self.model.parameters()
            self._on_gpu = bool(params) and params[0].on_gpu
        if self._on_gpu:  # dropout masks on the GPU come from cupy's global generator
            backend.cupy().random.seed(self.seed * 1_000_003 + self.step)
        result = train_step(
            self.model,
            self.optimiser,
            self.train_data,
            self.policy,
            loss_fn=self.loss_fn,
            accumulation_steps=self.accumulation_steps,
            max_norm=self.max_norm,
            reduce_gradients=self.reduce_gradients,
        )
        self.step += 1
        return result

    def evaluate(self) -> float | None:
        """The validation loss (None without validation data)."""
        if self.valid_data is None:
            return None
        return evaluate(
            self.model,
            self.valid_data,
            self.eval_steps,
            self.policy,
            self.eval_protocol,
            self.loss_fn,
        )

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """The whole run: step, parameters, optimiser, scaler and every random state."""
        scaler = self.policy.scaler
        return {
            "step": self.step,  # the next step to run
            "wall_time": self.wall_time,
            "model": self.model.state_dict(),
            "optimiser": self.optimiser.state_dict(),
            "scaler": None if scaler is None else scaler.state_dict(),
            "random": {
                "layers": layer_rng_states(self.model),
                "train_data": data_state(self.train_data),
                "valid_data": None if self.valid_data is None else data_state(self.valid_data),
            },
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore a run from ``state_dict()``."""
        self.model.load_state_dict(state["model"])
        self.optimiser.load_state_dict(state["optimiser"])
        if self.policy.scaler is not None and state.get("scaler") is not None:
            self.policy.scaler.load_state_dict(state["scaler"])
        random = state["random"]
        load_layer_rng_states(self.model, random["layers"])
        load_data_state(self.train_data, random["train_data"])
        if self.valid_data is not None and random.get("valid_data") is not None:
            load_data_state(self.valid_data, random["valid_data"])
        self.step, self.wall_time = int(state["step"]), float(state["wall_time"])

    def save(self, path, metadata: dict | None = None) -> None:
        """Write the run to a safe checkpoint at ``path`` (with ``metadata``, such as the
        run's settings, under "run"). Refuses, with ``TrainingDiverged``, to write a state
        holding a non-finite value; a failed write (a full disk) raises ``CheckpointError``
        naming the directory, and leaves the previous checkpoint intact."""
        check_finite(self.model, self.optimiser)
        state = {**self.state_dict(), "run": metadata or {}}
        try:
            save_state(path, state)
        except OSError as error:
            raise CheckpointError(
                f"could not write the checkpoint in {Path(path).parent}: "
                f"{error.strerror or error}; {self._kept(path)}"
            ) from error
        self.saved_step = self.step

    def save_to(self, run_dir: RunDirectory, metadata: dict | None = None) -> None:
        """``save`` into the run directory's checkpoint.npz, then pickle the model beside it
        (model.pkl), each atomically."""
        self.save(run_dir.checkpoint, metadata)
        try:
            save_pickle(self.model, run_dir / RunDirectory.MODEL)
        except OSError as error:
            raise CheckpointError(
                f"could not write {run_dir / RunDirectory.MODEL}: {error.strerror or error}; "
                f"the checkpoint {run_dir.checkpoint} (step {self.step}) was written"
            ) from error

    def load(self, path) -> dict:
        """Restore the run saved at ``path``; returns its metadata. Raises CheckpointError
        for an unreadable file or one that does not fit this model and optimiser."""
        state = load_state(path)
        try:
            self.load_state_dict(state)
        except (KeyError, ValueError, TypeError, IndexError) as error:
            raise CheckpointError(
                f"{path} does not fit this run: {type(error).__name__}: {error}"
            ) from error
        self.saved_step = self.step
        return state.get("run", {})

    def _kept(self, path) -> str:
        if self.saved_step is None:
            return "no checkpoint was written yet"
        return f"the last checkpoint ({path}, step {self.saved_step}) is kept"

    # ------------------------------------------------------------------ the loop
    def fit(
        self,
        steps: int,
        *,
        run_dir: RunDirectory | None = None,
        metadata: dict | None = None,
        log_interval: int = 1,
        max_seconds: float | None = None,
        stop_after: int | None = None,
        on_record: Callable[[dict], None] | None = None,
        on_message: Callable[[str], None] | None = None,
    ) -> dict:
        """Train from ``self.step`` up to ``steps`` in total; returns a summary.

        Every ``log_interval`` steps the pending losses are read back (one synchronisation)
        and checked, and their records (step, loss, val_loss, lr, grad_norm, skipped_steps,
        tokens_per_s, wall_time) go to ``on_record`` and to ``run_dir``'s metrics. Validation
        runs every ``eval_interval`` steps and at step ``steps``; with a ``run_dir``, a
        checkpoint (and model.pkl, with ``metadata``) is written then and at any stop.
        ``max_seconds`` (training time, earlier sessions included) and ``stop_after`` (steps
        in this call) stop early with a checkpoint. Ctrl-C (in the main thread) stops at the
        end of the current step with a checkpoint; a second Ctrl-C stops at once. The summary
        says which way it ended.
        """
        say = on_message or (lambda text: print(text, file=sys.stderr))
        self._on_gpu = None  # the model may have moved since the last fit
        stop = steps if stop_after is None else min(steps, self.step + stop_after)
        start_time, wall_before = time.perf_counter(), self.wall_time
        pending: list[dict] = []
        last: dict = {}
        val_loss = None
        ended = "completed"

        def wall() -> float:
            return wall_before + time.perf_counter() - start_time

        def flush() -> None:
            nonlocal last
            if not pending:
                return
            scaler = self.policy.scaler
            skipped = 0 if scaler is None else scaler.skipped_steps
            for record in pending:
                output = record.pop("output").settle(record["step"] - 1)
                record.update(loss=output.loss, grad_norm=output.grad_norm)
                record["skipped_steps"] = skipped
            if run_dir is not None:
                run_dir.append_metrics(pending)
            for record in pending:
                if on_record is not None:
                    on_record(record)
            last = pending[-1]
            pending.clear()

        with self.policy, _stop_on_interrupt() as interrupt:
            try:
                while self.step < stop:
                    step_start = time.perf_counter()
                    output = self.train_step()
                    done = self.step
                    tokens = self.tokens_per_step or 0
                    pending.append(
                        {
                            "step": done,
                            "output": output,
                            "loss": None,
                            "val_loss": None,
                            "lr": float(self.optimiser.learning_rate),
                            "grad_norm": None,
                            # on a GPU this is host time: the device is waited for at
                            # read-backs only, so their mean over a log interval is the rate
                            "tokens_per_s": tokens / (time.perf_counter() - step_start),
                            "wall_time": wall(),
                        }
                    )
                    val_loss = None
                    at_interval = self.eval_interval and done % self.eval_interval == 0
                    # not at an early stop: an evaluation there would draw validation windows
                    # that an uninterrupted run does not, and a resumed run would differ
                    if self.valid_data is not None and (at_interval or done == steps):
                        val_loss = self.evaluate()
                        pending[-1].update(val_loss=val_loss, wall_time=wall())
                    out_of_time = max_seconds is not None and wall() >= max_seconds
                    interrupted = interrupt.requested  # read once: Ctrl-C may come any time
                    stopping = out_of_time or interrupted
                    checkpointing = run_dir is not None and (
                        at_interval or done == stop or stopping
                    )
                    if done % log_interval == 0 or val_loss is not None or checkpointing:
                        flush()  # before any checkpoint: a diverged model is never saved
                    if val_loss is not None:
                        say(
                            f"step {done}: train loss {last['loss']:.4f}, val loss "
                            f"{val_loss:.4f}, {last['wall_time']:.1f} s"
                        )
                    if checkpointing:
                        self.wall_time = wall()
                        self.save_to(run_dir, metadata)
                    if out_of_time:
                        say(f"max_seconds {max_seconds:g}: stopping after step {done}")
                        ended = "out of time"
                        break
                    if interrupted:
                        ended = "interrupted"
                        break
                flush()
            except TrainingDiverged as error:
                where = run_dir.checkpoint if run_dir is not None else "checkpoint"
                raise TrainingDiverged(f"{error}; {self._kept(where)}") from None
        self.wall_time = wall()
        return {
            "steps": self.step,
            "ended": ended,
            "precision": self.policy.mode,
            "skipped_steps": 0 if self.policy.scaler is None else self.policy.scaler.skipped_steps,
            "loss": last.get("loss"),
            "val_loss": val_loss,
            "wall_time": self.wall_time,
        }


def gpt_trainer(
    config: GPTConfig,
    train_tokens,
    valid_tokens=None,
    *,
    policy=None,
    seed: int = 0,
    decay_steps: int | None = None,
) -> Trainer:
    """A ``Trainer`` for a GPT as ``config`` describes it: the model (initialised from
    tricycle's generator: ``tricycle.random.manual_seed`` it first), AdamW with the config's
    betas, decay and decay filter, the cosine schedule (decaying over ``decay_steps``, default
    ``config.steps``), clipping, accumulation, random training windows (seeded by ``seed``)
    and the validation windows (None when the validation tokens are fewer than one window),
    all on ``config.device``."""
    model = GPT(config)
    optimiser = AdamW(
        learning_rate=config.max_learning_rate,
        betas=(config.beta1, config.beta2),
        eps=config.eps,
        weight_decay=config.weight_decay,
        decay_filter=decay_all_matrices if config.decay_embeddings else decay_matrices,
    )
    schedule = CosineSchedule(
        config.max_learning_rate,
        config.min_learning_rate,
        config.steps if decay_steps is None else decay_steps,
        config.warmup_steps,
    )
    shape = (config.vocab_size, config.batch_size, config.context_window)
    train_data = CausalLMDataset(train_tokens, *shape, seed).batch()
    valid_data = None
    if valid_tokens is not None and len(valid_tokens) > config.context_window:
        valid_data = CausalLMDataset(valid_tokens, *shape, 0).batch()
    if config.device == "gpu":
        model.to_gpu()
        train_data = train_data.to_gpu()  # batches arrive as GPU tensors (same generator)
        valid_data = valid_data and valid_data.to_gpu()
    return Trainer(
        model,
        optimiser,
        train_data,
        policy=policy,
        schedule=schedule,
        accumulation_steps=config.gradient_accumulation_steps,
        max_norm=config.grad_clip,
        valid_data=valid_data,
        eval_interval=config.eval_interval,
        eval_steps=config.eval_steps,
        eval_protocol=config.eval_protocol,
        tokens_per_step=config.tokens_per_step,
        seed=seed,
    )


class _Interrupt:
    requested = False


@contextlib.contextmanager
def _stop_on_interrupt():
    """Within the block, a first SIGINT (Ctrl-C) only sets ``requested`` (the loop stops at
    the end of its step, with a checkpoint) and a second raises KeyboardInterrupt at once.
    Outside the main thread, where signal handlers cannot be set, nothing changes."""
    interrupt = _Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signum, frame):
        if interrupt.requested:
            raise KeyboardInterrupt
        interrupt.requested = True
        # os.write, not print: the handler may run while the loop is inside a print to stderr
        os.write(2, b"\ninterrupted: stopping after this step, with a checkpoint (Ctrl-C again "
                 b"to stop at once, without one)\n")  # fmt: skip

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, previous)
