"""``Accelerator``: your own training loop, mixed-precision, gradient-accumulating and
data-parallel, in a few calls (in the style of Hugging Face Accelerate)::

    accelerator = Accelerator(gradient_accumulation_steps=4, mixed_precision="bf16")
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)
    for inputs, targets in loader:
        with accelerator.accumulate(model):         # sync_gradients: this one ends a step
            loss = loss_fn(model(inputs), targets)
            accelerator.backward(loss)              # accumulates; reduces on the last micro-batch
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step(); scheduler.step()      # no-ops until accumulation is complete
            optimizer.zero_grad()
        if accelerator.sync_gradients:
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
number. The optimiser is one of ``tricycle.optimisers`` or of ``tricycle.optim`` (torch's
names and ``param_groups``: its own ``step`` updates, after the same unscaling, clipping and
skipping), with a ``tricycle.optim.lr_scheduler`` schedule that steps with the updates.

Under ``tricycle-run -n N`` (or ``mpiexec``) the same loop runs on N processes; each gets
its share of the loader (``DataLoader.shard``). ``captured_step`` gives the step as one CUDA
graph (``tricycle.apps.cuda_graph.CapturedStep``) for a loop whose step is the standard one.
"""

import contextlib
import warnings
from pathlib import Path

import numpy as np

from tricycle import amp, backend, checks
from tricycle.apps.accelerator_files import (
    STATE,
    previous_state,
    read_weights,
    write_directory,
    write_weights_into,
)
from tricycle.apps.checkpoint import CheckpointError, load_state
from tricycle.apps.cuda_graph import CapturedStep
from tricycle.apps.files import json_line
from tricycle.apps.loader import DataLoader
from tricycle.apps.states import jump_layer_generators, layer_rng_states, load_layer_rng_states
from tricycle.apps.step import precision_for
from tricycle.apps.trackers import make_trackers
from tricycle.apps.wrappers import (
    PreparedModel,
    PreparedOptimiser,
    PreparedScheduler,
    foreign_parameters,
    load_optimiser_state,
    optimiser_state,
    torch_optimizer_update,
    unwrap,
)
from tricycle.layers import Layer
from tricycle.optim.optimizer import Optimizer as TorchOptimizer
from tricycle.optim.scheduler_base import LRScheduler
from tricycle.optimisers import Optimiser, global_norm
from tricycle.parallel import distributed
from tricycle.tensor import Tensor
from tricycle.update import update


class Accelerator:
    """The seams of a training loop (see the module).

    Args:
        gradient_accumulation_steps: micro-batches per optimiser step.
        mixed_precision: "fp32" (default; Accelerate's "no"), "tf32", "fp16" or "bf16" (the
            precision policies of ``tricycle.precision``: fp16 scales the loss; tf32 and
            bf16 need a GPU).
        device: "gpu" or "cpu"; by default a GPU where cupy sees one. ``cpu=True``
            (Accelerate's spelling) is ``device="cpu"``.
        project_dir: where ``log`` appends its records (metrics.jsonl).
        log_with: "mlflow", "wandb" and/or "tensorboard": also log there (mlflow and wandb
            must be installed; TensorBoard's event files go to project_dir/project_name).
        project_name, config: the experiment's name and settings, for those trackers.
        split_batches: each process takes its rows of every batch of a prepared loader
            (the training script's split of a global batch), instead of its share of the
            items.
        step_scheduler_with_optimizer: a prepared scheduler steps with the optimiser's
            updates (see ``PreparedScheduler``); False: at each of its ``step`` calls.
    """

    @checks.arguments(
        gradient_accumulation_steps=checks.positive_int,
        mixed_precision=checks.optional(checks.text),
        device=checks.optional(checks.one_of(("cpu", "gpu"))),
        cpu=checks.boolean,
        step_scheduler_with_optimizer=checks.boolean,
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
        cpu: bool = False,
        step_scheduler_with_optimizer: bool = True,
    ):
        if device is None or cpu:
            device = "cpu" if cpu or not backend.cupy_available() else "gpu"
        self.accumulation_steps = gradient_accumulation_steps
        self.split_batches = checks.boolean("Accelerator", "split_batches", split_batches)
        self.step_scheduler_with_optimizer = step_scheduler_with_optimizer
        mode = (mixed_precision or "fp32").lower()
        self.policy = precision_for("fp32" if mode == "no" else mode, device)
        self.world = distributed.init(gpu=device == "gpu")
        self.gpu: int | None = (self.world.device or 0) if device == "gpu" else None
        self.project_dir = None if project_dir is None else Path(project_dir)
        main = self.world.is_main
        self.trackers = make_trackers(log_with, project_name, config, project_dir) if main else []
        self.step = 0  # optimiser steps taken
        self.micro_step = 0  # backward passes
        self.sync_grad = False  # the last backward completed a step's gradients
        self.model: Layer | None = None
        self.optimiser: Optimiser | None = None
        self.data_parallel: distributed.DataParallel | None = None
        self.loaders: list[DataLoader] = []
        self.schedulers: list = []
        self.last_step = None  # the StepResult of the last optimiser step (norm, skipped)
        self._max_norm = 0.0
        self._stepped = False
        self._counted = False  # an accumulate block has counted this micro-batch
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
    def is_local_main_process(self) -> bool:
        return self.world.local_rank == 0

    @property
    def process_index(self) -> int:
        return self.world.rank

    @property
    def num_processes(self) -> int:
        return self.world.world_size

    # ------------------------------------------------------------------ as Accelerate names it
    @property
    def sync_gradients(self) -> bool:
        """Accelerate's name of ``sync_grad``: this micro-batch completes a step."""
        return self.sync_grad

    @property
    def gradient_accumulation_steps(self) -> int:
        return self.accumulation_steps

    @property
    def mixed_precision(self) -> str:
        """The precision policy's mode: "fp32", "tf32", "fp16" or "bf16"."""
        return self.policy.mode

    @property
    def optimizer_step_was_skipped(self) -> bool:
        """Whether the last update was skipped (an inf/NaN gradient: fp16's overflow)."""
        return self.last_step is not None and bool(self.last_step.skipped)

    # ------------------------------------------------------------------ prepare
    def prepare(self, *objects):
        """The model (a Layer), optimiser, DataLoaders and learning-rate scheduler made
        ready for this process, returned in the order given (one object alone comes back
        alone); a scheduler is prepared after the optimiser it schedules."""
        prepared = [None] * len(objects)
        for i in sorted(range(len(objects)), key=lambda i: isinstance(objects[i], LRScheduler)):
            prepared[i] = self._prepare_one(objects[i])
        if isinstance(self.optimiser, TorchOptimizer) and self.model is not None:
            params = [p for group in self.optimiser.param_groups for p in group["params"]]
            if foreign := len(foreign_parameters(params, self.model)):
                raise ValueError(f"Accelerator.prepare: the optimizer holds {foreign} parameters "
                                 "that are not the model's (an optimizer of another model?): "
                                 "make it from model.parameters()")  # fmt: skip
        return prepared[0] if len(prepared) == 1 else tuple(prepared)

    def _prepare_one(self, obj):
        if isinstance(obj, Layer):
            return self.prepare_model(obj)
        if isinstance(obj, (Optimiser, TorchOptimizer)) or hasattr(obj, "fused_update"):
            if obj is self.optimiser:
                raise ValueError("Accelerator.prepare: this optimizer is prepared already: use "
                                 "what prepare returned")  # fmt: skip
            if self.optimiser is not None:
                raise ValueError("Accelerator.prepare: one optimiser per Accelerator")
            self.optimiser = obj
            return PreparedOptimiser(obj, self)
        if isinstance(obj, LRScheduler):
            if self.optimiser is None or obj.optimizer is not self.optimiser:
                raise ValueError(
                    "Accelerator.prepare: the scheduler's optimizer is not the prepared "
                    "optimizer: prepare them together, prepare(model, optimizer, loader, "
                    "scheduler)"
                )
            self.schedulers.append(obj)
            return PreparedScheduler(obj, self)
        if isinstance(obj, DataLoader):
            if any(obj is loader for loader in self.loaders):
                raise ValueError(
                    "Accelerator.prepare: this DataLoader is prepared already (it is this "
                    "process's share): prepare the loader you made, once"
                )
            seed = self.world.broadcast_object(obj.seed)  # every rank shuffles alike
            loader = obj.shard(self.world.rank, self.world.world_size, self.gpu,
                               self.split_batches or obj.split_batches)  # fmt: skip
            loader.seed = seed
            self.loaders.append(loader)
            return loader
        if isinstance(obj, (PreparedModel, PreparedOptimiser, PreparedScheduler)):
            raise ValueError(f"Accelerator.prepare: {type(obj).__name__} is prepared already")
        raise TypeError(
            f"Accelerator.prepare: expected a model (Layer), an optimiser, a "
            f"tricycle.data.DataLoader or a tricycle.optim.lr_scheduler scheduler, got "
            f"{type(obj).__name__}"
        )

    def prepare_model(self, model: Layer) -> PreparedModel:
        """``model`` on this process's device, with rank 0's weights, its gradients averaged
        over the processes (``DataParallel``), its forward in the policy's dtype."""
        if self.model is not None:
            if model is self.model:
                raise ValueError("Accelerator.prepare: this model is prepared already: use "
                                 "what prepare returned")  # fmt: skip
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
    @contextlib.contextmanager
    def accumulate(self, *models):
        """A block for one micro-batch (Accelerate's ``with accelerator.accumulate(model):``):
        counts it on entry, so ``sync_gradients`` says within the block whether it completes
        the step; ``backward`` inside does not count it again. ``models``: the prepared model
        (or none)."""
        for model in models:
            if self.model is None or unwrap(model) is not self.model:
                raise ValueError(f"Accelerator.accumulate: expected the prepared model (what "
                                 f"prepare returned), got a {type(model).__name__} that was "
                                 "not prepared")  # fmt: skip
        self._count_micro_batch()
        self._counted = True
        try:
            yield
        finally:
            self._counted = False

    def _count_micro_batch(self) -> None:
        self.micro_step += 1
        self.sync_grad = self.micro_step % self.accumulation_steps == 0
        self._stepped = False

    def backward(self, loss: Tensor) -> None:
        """Backward of one micro-batch's ``loss`` (one number): scaled by the loss scale and
        divided by the accumulation steps; the gradients stay local until the last
        micro-batch of the step, whose backward averages them over the processes. Sets
        ``sync_grad`` (outside an ``accumulate`` block, which sets it on entry)."""
        if self.model is None:
            raise ValueError("Accelerator.backward: prepare the model first")
        if not isinstance(loss, Tensor):
            raise TypeError(f"Accelerator.backward: expected the loss as a Tensor, got "
                            f"{type(loss).__name__}")  # fmt: skip
        if loss.array.size != 1:
            raise ValueError(f"Accelerator.backward: the loss must be one number, got shape "
                             f"{loss.shape} (reduce it first: loss.mean())")  # fmt: skip
        if not self._counted:
            self._count_micro_batch()
        if self.accumulation_steps > 1:  # each micro-batch adds its share of the mean
            loss = loss / self.accumulation_steps
        if self.sync_grad:
            self.policy.backward(loss)
            self.data_parallel.finish()  # every gradient is now the mean over the ranks
            # checked until the first update (a mistake shows at once): not a walk each step
            if self.step == 0 and all(p.grad is None for p in self.model.parameters()):
                raise ValueError("Accelerator.backward: the step's losses reached none of the "
                                 "prepared model's parameters (a loss of another model, or of "
                                 "outputs made without gradients?)")  # fmt: skip
        else:
            with self.data_parallel.no_sync():
                self.policy.backward(loss)

    def clip_grad_norm_(self, parameters, max_norm=None, norm_type: float = 2.0):
        """Clip the step's gradients to global norm ``max_norm`` in the update to come (0: no
        clipping); returns their norm before clipping (unscaled), or None before the last
        micro-batch. On a GPU the norm is a device scalar: ``float(norm)`` waits for it.

        Accelerate's ``clip_grad_norm_(model.parameters(), max_norm)`` or tricycle's
        ``clip_grad_norm_(max_norm)``: the update clips the model's gradients as a whole, so
        ``parameters`` must be all of the prepared model's (checked until the first update,
        which walks the model: not on every step); the L2 norm alone."""
        if max_norm is None:  # tricycle's spelling: the threshold alone
            parameters, max_norm = None, parameters
        checks.non_negative("Accelerator.clip_grad_norm_", "max_norm", max_norm)
        if norm_type not in (2, 2.0):
            raise ValueError(f"Accelerator.clip_grad_norm_: the update clips by the L2 norm "
                             f"(norm_type 2), got norm_type={norm_type!r}")  # fmt: skip
        if parameters is not None and self.step == 0:  # checked until the first update
            if self.model is None:
                raise ValueError("Accelerator.clip_grad_norm_: prepare the model first")
            given = list(parameters)
            foreign = len(foreign_parameters(given, self.model))
            trainable = [p for p in self.model.parameters() if p.requires_grad]
            if foreign or foreign_parameters(trainable, given):  # one missing, or one too many
                raise ValueError(
                    f"Accelerator.clip_grad_norm_: the update clips the gradients of the "
                    f"prepared model's {len(trainable)} trainable parameters together; got "
                    f"{len(given)} parameters, {foreign} of them not the model's (pass "
                    "model.parameters())"
                )
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
        ``clip_grad_norm_``'s threshold, skip on inf/NaN, update, zero the gradients), or for
        a ``tricycle.optim`` optimizer the same unscaling, clipping and skipping, then its
        own ``step()``. Returns the ``StepResult``, or None when there is nothing to do yet
        (or it was done for these gradients)."""
        if self.optimiser is None:
            raise RuntimeError("Accelerator.optimiser_step: no optimiser was prepared "
                               "(accelerator.prepare(model, optimizer, ...))")  # fmt: skip
        if not self.sync_grad or self._stepped:
            return None
        if isinstance(self.optimiser, TorchOptimizer):  # its step updates
            step = torch_optimizer_update
        else:  # its step starts the step; update updates
            self.optimiser.step()
            step = update
        self.last_step = step(self.optimiser, self.model, self._max_norm, self.policy.scaler)
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
        """``value`` from every process: a number (or a 0-d array or Tensor) as its mean over
        the processes, a float (waiting for the device); an array or Tensor of rows as every
        process's rows, concatenated in rank order (a host array: a model's predictions,
        their labels); tuples, lists and dicts of those, each entry gathered."""
        if isinstance(value, dict):
            return {key: self.gather_for_metrics(v) for key, v in value.items()}
        if isinstance(value, (tuple, list)):
            gathered = [self.gather_for_metrics(v) for v in value]
            return type(value)(*gathered) if hasattr(value, "_fields") else type(value)(gathered)
        if isinstance(value, Tensor):
            value = value.array
        if isinstance(value, (bool, int, float, np.number)):
            return self.world.all_reduce(float(value))
        if not hasattr(value, "shape"):
            raise TypeError(
                f"Accelerator.gather_for_metrics: expected numbers, arrays or Tensors (or "
                f"tuples, lists and dicts of them), got {type(value).__name__}"
            )
        if value.ndim == 0:
            return float(self.world.all_reduce(value.astype(np.float64)))
        rows = backend.to_host_array(value)  # as objects: a split batch's last rows may
        return np.concatenate(self.world.all_gather_object(rows))  # differ in number

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
                f.write(json_line(record))
        for tracker in self.trackers:
            tracker.log(record, step)

    def wait_for_everyone(self) -> None:
        self.world.barrier()

    def autocast(self) -> amp.autocast:
        """A block whose layer calls compute in the policy's 16-bit dtype (``tricycle.autocast``)
        from float32 weights: for a model that was not prepared, or work outside the
        prepared model's forward (which runs in that dtype already); with "fp32" or "tf32"
        it changes nothing."""
        mixed, device_type = self.policy.mixed, "cpu" if self.gpu is None else "cuda"
        dtype = self.policy.compute_dtype if mixed else None
        return amp.autocast(device_type, dtype=dtype, enabled=mixed)

    def end_training(self) -> None:
        """Close the trackers, leave the precision policy and shut the processes down."""
        for tracker in self.trackers:
            tracker.finish()
        self.trackers = []
        self.policy.__exit__(None, None, None)
        self.world.finalize()

    # ------------------------------------------------------------------ state
    def save_model(self, model, save_directory) -> Path:
        """The weights of ``model`` (prepared or not) as ``save_directory``/model.safetensors
        (model.npz in the safe format without the safetensors package), each file replaced
        atomically; rank 0 writes, every rank calls it."""
        module = unwrap(model)
        if not isinstance(module, Layer):
            raise TypeError(
                f"Accelerator.save_model: expected a model (Layer), got {type(model).__name__}"
            )
        directory = Path(save_directory)
        if self.is_main_process:
            write_weights_into(directory, module.state_dict())
        self.world.barrier()
        return directory

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
            "optimiser": {} if self.optimiser is None else optimiser_state(self.optimiser),
            "schedulers": [scheduler.state_dict() for scheduler in self.schedulers],
            "scaler": None if self.policy.scaler is None else self.policy.scaler.state_dict(),
            "counts": {"step": self.step, "micro_step": self.micro_step},
            "loaders": [loader.state_dict() for loader in self.loaders],
            "random": {"layers": {} if self.model is None else layer_rng_states(self.model)},
        }
        if self.is_main_process:
            write_directory(directory, self.model, state)
        self.world.barrier()
        return directory

    def load_state(self, directory) -> None:
        """Continue from ``save_state(directory)``, after ``prepare`` (with the same model,
        optimiser and loaders): the run goes on as if it had not stopped."""
        directory = Path(directory)
        previous = previous_state(directory)
        if not directory.exists() and previous.is_dir():  # a save died while swapping
            directory = previous
        if self.model is not None:
            self.model.load_state_dict(read_weights(directory))
        state = load_state(directory / STATE)
        try:
            if self.optimiser is not None:
                load_optimiser_state(self.optimiser, state["optimiser"])
            for name, prepared in (("schedulers", self.schedulers), ("loaders", self.loaders)):
                saved = state.get(name, [])
                if len(saved) != len(prepared):
                    raise ValueError(f"{len(saved)} {name} were saved, {len(prepared)} prepared")
                for obj, obj_state in zip(prepared, saved):
                    obj.load_state_dict(obj_state)
            if self.policy.scaler is not None and state.get("scaler") is not None:
                self.policy.scaler.load_state_dict(state["scaler"])
            self.step = int(state["counts"]["step"])
            self.micro_step = int(state["counts"]["micro_step"])
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


__all__ = ["Accelerator"]
