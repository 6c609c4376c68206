"""``Accelerator``: your own training loop, mixed-precision, gradient-accumulating and
data-parallel, in a few calls (in the style of Hugging Face Accelerate)::

    accelerator = Accelerator(gradient_accumulation_steps=4, mixed_precision="bf16")
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for inputs, targets in loader:
        loss = loss_fn(targets, model(inputs))
        accelerator.backward(loss)                  # accumulates; reduces on the last micro-batch
        grad_norm = accelerator.clip_grad_norm_(1.0)
        optimizer.step(); optimizer.zero_grad()     # no-ops until accumulation is complete
        if accelerator.sync_grad:
            loss = accelerator.gather_for_metrics(loss)   # the mean over all processes
            accelerator.print(loss); accelerator.log({"loss": loss}, step=accelerator.step)
    accelerator.save_state("checkpoints/latest")    # model.safetensors + the training state

It is the training script's step cut at the seams a user's loop has: ``prepare`` moves the
model to this process's GPU, gives every process rank 0's weights and attaches a
``DataParallel`` (the gradient buckets); the model runs its forward in the policy's compute
dtype; ``backward`` seeds the loss scale and divides by the accumulation steps, keeping the
gradients local (``no_sync``) until the last micro-batch, whose backward reduces them;
``optimizer.step()`` is ``tricycle.update.update`` (unscale, clip, skip on overflow,
update). So the loop computes what ``tricycle.apps.step.train_step`` computes, number for
number.

Under ``tricycle-run -n N`` (or ``mpiexec``) the same loop runs on N processes; each gets
its share of the loader (``DataLoader.shard``). ``captured_step`` gives the step as one CUDA
graph (``tricycle.apps.cuda_graph.CapturedStep``) for a loop whose step is the standard one.
"""

import json
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from tricycle import backend, checks
from tricycle.apps.checkpoint import CheckpointError, load_state, save_state
from tricycle.apps.cuda_graph import CapturedStep
from tricycle.apps.loader import DataLoader
from tricycle.apps.states import jump_layer_generators, layer_rng_states, load_layer_rng_states
from tricycle.apps.step import precision_for
from tricycle.apps.trackers import make_trackers
from tricycle.apps.wrappers import PreparedModel, PreparedOptimiser, unwrap
from tricycle.layers import Layer
from tricycle.optimisers import Optimiser, global_norm
from tricycle.parallel import distributed
from tricycle.tensor import Tensor
from tricycle.update import update

WEIGHTS = "model.safetensors"  # or model.npz (the safe format) without the safetensors package
WEIGHTS_NPZ = "model.npz"
STATE = "state.npz"  # optimiser, loss scaler, counters, loaders, random generators


class Accelerator:
    """The seams of a training loop (see the module).

    Args:
        gradient_accumulation_steps: micro-batches per optimiser step.
        mixed_precision: "fp32" (default), "tf32", "fp16" or "bf16" (the precision policies
            of ``tricycle.precision``: fp16 scales the loss; tf32 and bf16 need a GPU).
        device: "gpu" or "cpu"; by default a GPU where cupy sees one.
        project_dir: where ``log`` appends its records (metrics.jsonl).
        log_with: "mlflow" and/or "wandb": also log there (the package must be installed).
        project_name, config: the experiment's name and settings, for those trackers.
        split_batches: each process takes its rows of every batch of a prepared loader
            (the training script's split of a global batch), instead of its share of the
            items.
    """

    @checks.arguments(
        gradient_accumulation_steps=checks.positive_int,
        mixed_precision=checks.optional(checks.text),
        device=checks.optional(checks.one_of(("cpu", "gpu"))),
    )
    def __init__(
        self,
        gradient_accumulation_steps: int = 1,
        mixed_precision: str | None = None,
        *,
        device: str | None = None,
        project_dir=None,
        log_with=(),
        project_name: str = "tricycle",
        config: dict | None = None,
        split_batches: bool = False,
    ):
        if device is None:
            device = "gpu" if backend.cupy_available() else "cpu"
        self.accumulation_steps = gradient_accumulation_steps
        self.split_batches = checks.boolean("Accelerator", "split_batches", split_batches)
        self.policy = precision_for((mixed_precision or "fp32").lower(), device)
        self.world = distributed.init(gpu=device == "gpu")
        self.gpu: int | None = (self.world.device or 0) if device == "gpu" else None
        self.project_dir = None if project_dir is None else Path(project_dir)
        main = self.world.is_main
        self.trackers = make_trackers(log_with, project_name, config) if main else []
        self.step = 0  # optimiser steps taken
        self.micro_step = 0  # backward passes
        self.sync_grad = False  # the last backward completed a step's gradients
        self.model: Layer | None = None
        self.optimiser: Optimiser | None = None
        self.data_parallel: distributed.DataParallel | None = None
        self.loaders: list[DataLoader] = []
        self.last_step = None  # the StepResult of the last optimiser step (norm, skipped)
        self._max_norm = 0.0
        self._stepped = False
        self.policy.__enter__()  # TF32 on for "tf32" (nothing otherwise) until end_training

    # ------------------------------------------------------------------ where this runs
    @property
    def device(self) -> str:
        """ "cpu", or "gpu:N" for this process's GPU N."""
        return "cpu" if self.gpu is None else f"gpu:{self.gpu}"

    @property
    def is_main_process(self) -> bool:
        return self.world.is_main

    @property
    def process_index(self) -> int:
        return self.world.rank

    @property
    def num_processes(self) -> int:
        return self.world.world_size

    # ------------------------------------------------------------------ prepare
    def prepare(self, *objects):
        """The model (a Layer), optimiser and DataLoaders made ready for this process, in
        the order given (one object alone comes back alone)."""
        prepared = [self._prepare_one(obj) for obj in objects]
        return prepared[0] if len(prepared) == 1 else tuple(prepared)

    def _prepare_one(self, obj):
        if isinstance(obj, Layer):
            return self.prepare_model(obj)
        if isinstance(obj, Optimiser) or hasattr(obj, "fused_update"):
            if self.optimiser is not None:
                raise ValueError("Accelerator.prepare: one optimiser per Accelerator")
            self.optimiser = obj
            return PreparedOptimiser(obj, self)
        if isinstance(obj, DataLoader):
            seed = self.world.broadcast_object(obj.seed)  # every rank shuffles alike
            loader = obj.shard(self.world.rank, self.world.world_size, self.gpu,
                               self.split_batches or obj.split_batches)  # fmt: skip
            loader.seed = seed
            self.loaders.append(loader)
            return loader
        if isinstance(obj, (PreparedModel, PreparedOptimiser)):
            raise ValueError(f"Accelerator.prepare: {type(obj).__name__} is prepared already")
        raise TypeError(
            f"Accelerator.prepare: expected a model (Layer), an optimiser or a "
            f"tricycle.data.DataLoader, got {type(obj).__name__}"
        )

    def prepare_model(self, model: Layer) -> PreparedModel:
        """``model`` on this process's device, with rank 0's weights, its gradients averaged
        over the processes (``DataParallel``), its forward in the policy's dtype."""
        if self.model is not None:
            raise ValueError("Accelerator.prepare: one model per Accelerator")
        if self.gpu is not None:
            model.to_gpu(self.gpu)
        self.world.broadcast_parameters(model)
        jump_layer_generators(model, self.world.rank)  # each rank its own dropout masks
        self.model = model
        self.data_parallel = distributed.DataParallel(model, self.world)
        return PreparedModel(model, self.policy)

    def unwrap_model(self, model):
        """The Layer inside a prepared model."""
        return unwrap(model)

    # ------------------------------------------------------------------ the step
    def backward(self, loss: Tensor) -> None:
        """Backward of one micro-batch's ``loss``: scaled by the loss scale and divided by
        the accumulation steps; the gradients stay local until the last micro-batch of the
        step, whose backward averages them over the processes. Sets ``sync_grad``."""
        if self.model is None:
            raise ValueError("Accelerator.backward: prepare the model first")
        self.micro_step += 1
        self.sync_grad = self.micro_step % self.accumulation_steps == 0
        self._stepped = False
        if self.accumulation_steps > 1:  # each micro-batch adds its share of the mean
            loss = loss / self.accumulation_steps
        if self.sync_grad:
            self.policy.backward(loss)
            self.data_parallel.finish()  # every gradient is now the mean over the ranks
        else:
            with self.data_parallel.no_sync():
                self.policy.backward(loss)

    @checks.arguments(max_norm=checks.non_negative)
    def clip_grad_norm_(self, max_norm: float):
        """Clip the step's gradients to global norm ``max_norm`` in the update to come (0: no
        clipping); returns their norm before clipping (unscaled), or None before the last
        micro-batch. On a GPU the norm is a device scalar: ``float(norm)`` waits for it."""
        if not self.sync_grad:
            return None
        self._max_norm = max_norm
        grads = [p.grad.array for p in self.model.parameters() if p.grad is not None]
        if not grads:
            return None
        norm = global_norm(grads)
        if self.policy.scaler is not None:
            norm = norm / self.policy.scaler.scale_array(grads[0])
        return float(norm) if self.gpu is None else norm

    def optimiser_step(self):
        """What the prepared optimiser's ``step()`` does once the gradients are complete:
        ``tricycle.update.update`` (unscale with the policy's scaler, clip to
        ``clip_grad_norm_``'s threshold, skip on inf/NaN, update, zero the gradients). Returns
        its ``StepResult``, or None when there is nothing to do yet (or it was done for these
        gradients)."""
        if self.optimiser is None:
            raise RuntimeError("Accelerator.optimiser_step: no optimiser was prepared "
                               "(accelerator.prepare(model, optimizer, ...))")  # fmt: skip
        if not self.sync_grad or self._stepped:
            return None
        self.optimiser.step()
        self.last_step = update(self.optimiser, self.model, self._max_norm, self.policy.scaler)
        self._max_norm, self._stepped = 0.0, True
        self.step += 1
        return self.last_step

    def captured_step(self, loss_fn=None, max_norm: float = 0.0, warmup_steps: int = 2):
        """The whole step (``accumulation_steps`` micro-batches, forward to update) as one
        CUDA graph after ``warmup_steps`` eager ones: ``step(batches) -> StepOutput`` with
        ``batches`` an iterator of (inputs, targets), ``loss_fn(targets, logits)`` (default
        cross-entropy). The same numbers as the loop of ``backward``/``step`` with a GPT,
        without Python per kernel. GPU only, Adam or AdamW."""
        if self.gpu is None or self.model is None or self.optimiser is None:
            raise ValueError("Accelerator.captured_step: prepare a model and optimiser on a GPU")
        return CapturedStep(
            self.model, self.optimiser, self.policy, loss_fn=loss_fn, max_norm=max_norm,
            accumulation_steps=self.accumulation_steps, warmup_steps=warmup_steps,
            data_parallel=self.data_parallel,
        )  # fmt: skip

    # ------------------------------------------------------------------ metrics
    def gather_for_metrics(self, value):
        """The mean of ``value`` (a number, array or Tensor) over the processes: a float for
        a scalar (waiting for the device), else an array."""
        if isinstance(value, Tensor):
            value = value.array
        if isinstance(value, (int, float, np.number)):
            return self.world.all_reduce(float(value))
        mean = self.world.all_reduce(value)
        return float(mean) if mean.size == 1 else mean

    def print(self, *args, **kwargs) -> None:
        """``print`` on rank 0 alone."""
        if self.is_main_process:
            print(*args, **kwargs, flush=True)

    def log(self, values: dict, step: int | None = None) -> None:
        """Record ``values`` (numbers, or anything JSON takes) at ``step`` (default: the
        optimiser steps so far): a line of project_dir/metrics.jsonl, and the trackers.
        Rank 0 alone writes."""
        if not self.is_main_process:
            return
        step = self.step if step is None else int(step)
        record = {"step": step, **{k: _plain(v) for k, v in values.items()}}
        if self.project_dir is not None:
            self.project_dir.mkdir(parents=True, exist_ok=True)
            with open(self.project_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(record) + "\n")
        for tracker in self.trackers:
            tracker.log(record, step)

    def wait_for_everyone(self) -> None:
        self.world.barrier()

    def end_training(self) -> None:
        """Close the trackers, leave the precision policy and shut the processes down."""
        for tracker in self.trackers:
            tracker.finish()
        self.trackers = []
        self.policy.__exit__(None, None, None)
        self.world.finalize()

    # ------------------------------------------------------------------ state
    def save_state(self, directory) -> Path:
        """Write the training state to ``directory``: the model's weights (model.safetensors,
        or model.npz without the safetensors package) and state.npz (optimiser, loss scaler,
        step counts, the loaders' positions, the dropout generators). The directory is
        replaced whole, atomically. Every rank calls it; rank 0 writes."""
        directory = Path(directory)
        pending = self.micro_step % self.accumulation_steps
        if pending:
            warnings.warn(
                f"Accelerator.save_state after micro-batch {pending} of "
                f"{self.accumulation_steps}: the gradients accumulated so far are not saved",
                RuntimeWarning,
                stacklevel=2,
            )
        state = {
            "optimiser": self.optimiser.state_dict() if self.optimiser is not None else {},
            "scaler": None if self.policy.scaler is None else self.policy.scaler.state_dict(),
            "counts": {"step": self.step, "micro_step": self.micro_step},
            "loaders": [loader.state_dict() for loader in self.loaders],
            "random": {"layers": {} if self.model is None else layer_rng_states(self.model)},
        }
        if self.is_main_process:
            _write_directory(directory, self.model, state)
        self.world.barrier()
        return directory

    def load_state(self, directory) -> None:
        """Continue from ``save_state(directory)``, after ``prepare`` (with the same model,
        optimiser and loaders): the run goes on as if it had not stopped."""
        directory = Path(directory)
        previous = _previous(directory)
        if not directory.exists() and previous.is_dir():  # a save died while swapping
            directory = previous
        if self.model is not None:
            self.model.load_state_dict(_read_weights(directory))
        state = load_state(directory / STATE)
        try:
            if self.optimiser is not None:
                self.optimiser.load_state_dict(state["optimiser"])
            if self.policy.scaler is not None and state.get("scaler") is not None:
                self.policy.scaler.load_state_dict(state["scaler"])
            self.step = int(state["counts"]["step"])
            self.micro_step = int(state["counts"]["micro_step"])
            if len(state["loaders"]) != len(self.loaders):
                raise ValueError(
                    f"{len(state['loaders'])} loaders were saved, {len(self.loaders)} prepared"
                )
            for loader, loader_state in zip(self.loaders, state["loaders"]):
                loader.load_state_dict(loader_state)
            if self.model is not None:
                load_layer_rng_states(self.model, state["random"]["layers"])
                jump_layer_generators(self.model, self.world.rank)
        except (KeyError, ValueError, TypeError) as error:
            raise CheckpointError(
                f"{directory} does not fit this Accelerator: {type(error).__name__}: {error}"
            ) from error
        self.sync_grad, self._stepped, self._max_norm = False, False, 0.0


def _plain(value):
    """A metric as JSON takes it: Tensors and 0-d arrays as floats."""
    if isinstance(value, Tensor):
        value = value.array
    if hasattr(value, "shape") and getattr(value, "size", 2) == 1:
        return float(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _write_directory(directory: Path, model, state: dict) -> None:
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
            old = _previous(directory)
            shutil.rmtree(old, ignore_errors=True)
            directory.rename(old)
        fresh.rename(directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise


def _previous(directory: Path) -> Path:
    """Where ``_write_directory`` keeps the previous state while it swaps the new one in."""
    return directory.with_name(f".{directory.name}.old")


def _write_weights(directory: Path, weights: dict) -> None:
    try:
        from safetensors.numpy import save_file  # noqa: PLC0415 - optional
    except ImportError:
        save_state(directory / WEIGHTS_NPZ, weights)
        return
    save_file({k: np.ascontiguousarray(v) for k, v in weights.items()}, directory / WEIGHTS,
              metadata={"format": "np", "written_by": "tricycle"})  # fmt: skip


def _read_weights(directory: Path) -> dict:
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


__all__ = ["Accelerator"]
