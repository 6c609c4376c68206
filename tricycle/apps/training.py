"""Training as a library: the step, evaluation, the divergence guard, and whole runs that
save and resume exactly.

The pieces, from the smallest::

    result = train_step(model, optimiser, batches, policy, max_norm=1.0)   # one update
    loss = result.settle(step).loss             # read back (and checked) when you choose
    val = evaluate(model, valid_data, n_batches=20)

    trainer = Trainer(model, optimiser, train_data, policy=policy, schedule=schedule,
                      max_norm=1.0, valid_data=valid_data, eval_interval=250,
                      hooks=[Hook(lambda trainer: {"my_metric": ...})])
    with RunDirectory("runs/mine") as run_dir:   # locked while this process trains there
        trainer.fit(5000, run_dir=run_dir)         # metrics, checkpoints, Ctrl-C
    trainer.save("checkpoint.npz"); trainer.load("checkpoint.npz")       # the whole run

**One step for every precision.** ``train_step`` runs the forward in the policy's dtype,
seeds backward with its loss scale, and unscales, clips and updates with
``tricycle.update.update``; float32 is just ``Precision("fp32")``. The loss and gradient norm
come back as they were computed: device scalars on a GPU, so a loop that reads them every N
steps lets the host run ahead of the device in between (``StepOutput.settle`` reads them and
applies the divergence guard).

**Data parallelism.** With ``data_parallel`` (a ``distributed.DataParallel`` of the model)
the last micro-batch's backward averages the gradients over the ranks as it goes (the
micro-batches before it keep theirs local), and the loss is averaged too, so every rank
takes the same step. A ``Trainer`` works on its world's ranks alike: evaluation splits the
batches between them, rank 0 alone writes metrics and checkpoints (which hold what rank 0
holds, so they resume at any world size), and all ranks agree on when to stop. Rank r draws
its dropout masks from rank 0's generators jumped r times (``bit_generator.jumped``). A
single process is the world of one: the same code.

**Seams.** The training data is any iterator of (inputs, targets) batches; if it has
``state_dict()``/``load_state_dict()`` (a shard loader's position), checkpoints save and
restore it, and otherwise the state of its ``rng`` generator (``CausalLMDataset``'s random
windows). ``gpt_trainer`` takes token ids or a loader (``TokenShards``) and gives each rank
its rows. A ``Hook`` is work done on the way (HellaSwag at each evaluation, a sample every N
steps: ``tricycle.apps.evaluate``), its values recorded beside the loss. The files of a run, and
reading a trained model back, are ``tricycle.apps.runs``.

**Runs.** ``Trainer.state_dict`` holds everything that decides what happens next: the
parameters, the optimiser's moments and step counts, the loss scaler, every random generator
(the training data's, the validation data's for the "random" protocol, each layer's dropout)
and the step; so a resumed run replays exactly on the CPU. The divergence guard stops a run
whose loss or (unscaled) gradient norm is not finite, and never writes a checkpoint holding a
non-finite parameter or optimiser moment.
"""

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tricycle import checks
from tricycle.apps.background import Writer
from tricycle.apps.checkpoint import (
    CheckpointError,
    host_copy,
    load_state,
    pickled,
    save_state,
)
from tricycle.apps.cpu import tune_cpu_allocator
from tricycle.apps.hooks import Hook, report_lines
from tricycle.apps.interrupts import stop_on_interrupt
from tricycle.apps.plot import import_in_background
from tricycle.apps.records import Records
from tricycle.apps.runs import RunDirectory
from tricycle.apps.saving import attempt, write_run
from tricycle.apps.states import (
    data_state,
    jump_layer_generators,
    layer_rng_states,
    load_data_state,
    load_layer_rng_states,
)
from tricycle.apps.step import StepOutput, TrainingDiverged, precision_for, train_step
from tricycle.apps.validation import BatchLoss, check_finite, evaluate
from tricycle.loss import CrossEntropy
from tricycle.parallel import distributed
from tricycle.precision import Precision

__all__ = [
    "Hook",
    "StepOutput",
    "Trainer",
    "TrainingDiverged",
    "check_finite",
    "evaluate",
    "precision_for",
    "train_step",
    "tune_cpu_allocator",
]


# ====================================================================== the trainer


class Trainer:
    """A training run: the model, its optimiser and data, and the loop around ``train_step``.

    Args:
        model, optimiser, train_data: as for ``train_step``.
        policy: the precision policy (default float32).
        schedule: ``schedule(step) -> learning rate``, set before each step (optional).
        accumulation_steps, max_norm, loss_fn: as for ``train_step``.
        data_parallel: as for ``train_step``; its world is the trainer's (without one, the
            world of ``distributed.init()``: this process alone, unless mpiexec started it).
        valid_data, eval_interval, eval_steps, eval_protocol: validate every
            ``eval_interval`` steps (and at the end) over ``eval_steps`` batches.
        hooks: ``Hook``s: more evaluations (HellaSwag), samples, anything measured on the
            way, recorded in the metrics beside the loss.
        tokens_per_step: for the tokens/s in the metrics.
        cuda_graph: run the steps through ``tricycle.apps.cuda_graph.CapturedStep`` (GPU,
            Adam/AdamW, with ``data_parallel``'s all-reduces in the graph): captured once
            after warm-up, then replayed; evaluation replays a recorded forward too
            (``validation.BatchLoss``).

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
        data_parallel: distributed.DataParallel | None = None,
        valid_data=None,
        eval_interval: int | None = None,
        eval_steps: int = 20,
        eval_protocol: str = "sequential",
        hooks: Sequence[Hook] = (),
        tokens_per_step: int | None = None,
        cuda_graph: bool = False,
    ):
        if not all(isinstance(hook, Hook) for hook in hooks):
            raise TypeError(f"Trainer: hooks must be Hook objects, got {list(hooks)!r}")
        self.hooks = list(hooks)
        self.model, self.optimiser, self.train_data = model, optimiser, train_data
        self.policy = Precision() if policy is None else policy
        self.schedule, self.loss_fn = schedule, CrossEntropy() if loss_fn is None else loss_fn
        self.accumulation_steps, self.max_norm = accumulation_steps, max_norm
        self.data_parallel = data_parallel
        self.world = distributed.init() if data_parallel is None else data_parallel.world
        self.valid_data, self.eval_interval = valid_data, eval_interval
        self.eval_steps, self.eval_protocol = eval_steps, eval_protocol
        self.tokens_per_step = tokens_per_step
        self.step = 0
        self.wall_time = 0.0  # seconds of training (evaluation included) in earlier sessions
        self.saved_step: int | None = None  # the step of the last checkpoint written or read
        self.saved_weights: str | None = None  # the digest of its weights, in a run directory
        # the lowest validation loss so far and its step ({"step", "val_loss"}), whose
        # weights a run directory keeps in best.safetensors beside the last
        self.best: dict | None = None
        self._jump_dropout_generators()
        self.cuda_graph = cuda_graph
        self._captured = None  # the CapturedStep, made at the first step
        self._batch_loss = None  # evaluation's BatchLoss, made at the first evaluation
        self.writer = Writer()  # writes checkpoints in the background, one at a time

    def _jump_dropout_generators(self) -> None:
        """Rank r's layer generators: rank 0's jumped r times (independent streams, whose
        state follows from rank 0's at every step, as they draw alike)."""
        jump_layer_generators(self.model, self.world.rank)

    # ------------------------------------------------------------------ steps
    def train_step(self) -> StepOutput:
        """One step at ``self.step`` (learning rate from the schedule); advances ``step``."""
        if self.schedule is not None:
            self.optimiser.learning_rate = self.schedule(self.step)
        options = dict(loss_fn=self.loss_fn, accumulation_steps=self.accumulation_steps,
                       max_norm=self.max_norm)  # fmt: skip
        if self.cuda_graph:
            if self._captured is None:
                from tricycle.apps.cuda_graph import CapturedStep  # noqa: PLC0415 - GPU only

                self._captured = CapturedStep(
                    self.model, self.optimiser, self.policy,
                    data_parallel=self.data_parallel, **options,
                )  # fmt: skip
            result = self._captured(self.train_data)
        else:
            result = train_step(self.model, self.optimiser, self.train_data, self.policy,
                                data_parallel=self.data_parallel, **options)  # fmt: skip
        self.step += 1
        return result

    def evaluate(self) -> float | None:
        """The validation loss (None without validation data)."""
        if self.valid_data is None:
            return None
        if self._batch_loss is None:  # with the steps captured, so is the forward of a batch
            uncapturable = self._captured is not None and self._captured.failure is not None
            self._batch_loss = BatchLoss(self.model, self.policy, self.loss_fn,
                                         record=self.cuda_graph and not uncapturable)  # fmt: skip
        return evaluate(
            self.model,
            self.valid_data,
            self.eval_steps,
            self.policy,
            self.eval_protocol,
            self.loss_fn,
            self.world,
            self._batch_loss,
        )

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """The whole run: step, parameters, optimiser, scaler and every random state, as
        rank 0 holds them, in host memory: a snapshot that later steps cannot change (the
        model's and optimiser's state dicts are copies already). Every rank must call it (a
        sharded optimiser gathers its state)."""
        scaler = self.policy.scaler
        return {
            "step": self.step,  # the next step to run
            "wall_time": self.wall_time,
            "model": self.model.state_dict(),
            "optimiser": self.optimiser.state_dict(),
            **host_copy({
                "scaler": None if scaler is None else scaler.state_dict(),
                "best": self.best,
                "random": {
                    "layers": layer_rng_states(self.model),
                    "train_data": data_state(self.train_data),
                    "valid_data": None if self.valid_data is None else data_state(self.valid_data),
                },
            }),
        }  # fmt: skip

    def load_state_dict(self, state: dict) -> None:
        """Restore a run from ``state_dict()``."""
        self.model.load_state_dict(state["model"])
        self.optimiser.load_state_dict(state["optimiser"])
        if self.policy.scaler is not None and state.get("scaler") is not None:
            self.policy.scaler.load_state_dict(state["scaler"])
        random = state["random"]
        load_layer_rng_states(self.model, random["layers"])
        self._jump_dropout_generators()
        load_data_state(self.train_data, random["train_data"])
        if self.valid_data is not None and random.get("valid_data") is not None:
            load_data_state(self.valid_data, random["valid_data"])
        self.step, self.wall_time = int(state["step"]), float(state["wall_time"])
        best = state.get("best")  # None in checkpoints from before the best weights
        self.best = None if best is None else {"step": int(best["step"]),
                                               "val_loss": float(best["val_loss"])}  # fmt: skip
        self.saved_weights = state.get("weights_sha256")  # a run directory's (layout 2)
        self._captured = None  # its graph holds the arrays just replaced: capture anew

    def save(self, path, metadata: dict | None = None) -> None:
        """Write the run to a safe checkpoint at ``path`` (with ``metadata``, such as the
        run's settings, under "run"). Refuses, with ``TrainingDiverged``, to write a state
        holding a non-finite value; a failed write (a full disk) raises ``CheckpointError``
        naming the directory, and leaves the previous checkpoint intact. Every rank calls
        it; rank 0 writes."""
        self.writer.wait()
        self._check_finite()
        state = {**self.state_dict(), "run": metadata or {}}
        if self.world.is_main:
            kept = self._kept(path)
            attempt(Path(path), lambda: save_state(path, state), kept)
        self.saved_step = self.step

    def save_to(self, run_dir: RunDirectory, metadata: dict | None = None) -> None:
        """Save the run into ``run_dir`` (``checkpoint``) and wait until it is written."""
        self.checkpoint(run_dir, metadata)
        self.writer.wait()

    def checkpoint(self, run_dir: RunDirectory, metadata: dict | None = None, *,
                   best: bool = False) -> None:  # fmt: skip
        """Save the run into ``run_dir``: the weights to model.safetensors (and, with
        ``best``, to best.safetensors: ``self.best``'s), then the rest of the state to
        checkpoint.npz (with the weights' digest, which resuming checks), then the pickled
        model to model.pkl, each atomically (``write_run``).

        The caller waits only for a host snapshot of the state (and the pickle's bytes);
        the files are written in the background by ``self.writer``, which the next
        checkpoint, ``fit``'s end and ``save``/``load`` wait for (a write's error is raised
        there). Refuses, with ``TrainingDiverged``, to save a non-finite value. Every rank
        calls it (a sharded optimiser gathers its state); rank 0 writes."""
        self.writer.wait()  # the one before: its error, if any, is raised here
        self._check_finite()
        state = {**self.state_dict(), "run": metadata or {}, "layout": RunDirectory.LAYOUT}
        step = self.step
        if not self.world.is_main:
            self.saved_step = step
            return
        model = pickled(self.model)  # (state_dict's arrays are host copies already)
        best_info = {**self.best, "run": metadata or {}} if best else None
        kept = self._kept(run_dir.checkpoint)
        previous = self.saved_weights  # the weights the state on disk goes with

        def done(digest: str) -> None:
            self.saved_step, self.saved_weights = step, digest

        self.writer.submit(
            lambda: write_run(run_dir, state, model, best_info, previous, kept), done
        )

    def _check_finite(self) -> None:
        """``check_finite`` before a save, naming the step whose update made a value
        non-finite (its loss, computed before the update, was still finite)."""
        try:
            check_finite(self.model, self.optimiser)
        except TrainingDiverged as error:
            raise TrainingDiverged(f"{error} after step {self.step}") from None

    def improves(self, val_loss: float | None) -> bool:
        """Whether ``val_loss`` (at ``self.step``) is the run's lowest so far; if so it
        becomes ``self.best``."""
        if val_loss is None or not np.isfinite(val_loss):
            return False
        if self.best is not None and not val_loss < self.best["val_loss"]:
            return False
        self.best = {"step": self.step, "val_loss": float(val_loss)}
        return True

    def load(self, path) -> dict:
        """Restore the run saved at ``path`` (a file ``save`` wrote, or a ``RunDirectory``
        ``save_to`` wrote into); returns its metadata. Raises CheckpointError for an
        unreadable file or one that does not fit this model and optimiser."""
        self.writer.wait()
        state = path.load_state() if isinstance(path, RunDirectory) else load_state(path)
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
        loss_plot: str | None = "linear",
    ) -> dict:
        """Train from ``self.step`` up to ``steps`` in total; returns a summary.

        Every ``log_interval`` steps the pending losses are read back (one synchronisation)
        and checked, and their records (step, loss, val_loss, lr, grad_norm, skipped_steps,
        tokens_per_s, wall_time, and the values of the hooks that ran) go to ``on_record``
        and to ``run_dir``'s metrics. Validation (and the hooks without an interval) runs
        every ``eval_interval`` steps and at step ``steps``; with a ``run_dir``, a
        checkpoint (and model.pkl, with ``metadata``) is written then and at any stop.
        ``tokens_per_s`` is the tokens of the steps since the previous read-back over the
        wall time since it, the device synchronised (``tricycle.apps.throughput``), without
        the time of evaluation, hooks and checkpoints; a record where evaluation or hooks
        ran says how long they took (``eval_s``), and the record after a checkpoint how long
        the training waited for it (``checkpoint_s``: its snapshot; the files are written in
        the background while the steps go on, ``Trainer.checkpoint``). ``max_seconds`` (training
        time, earlier sessions included) and ``stop_after`` (steps in this call) stop early
        with a checkpoint. Ctrl-C or SIGTERM (in the main thread) stops at the end of the
        current step with a checkpoint; a second signal stops at once. The summary
        says which way it ended ("ended": "completed" at ``steps``, "stopped" at
        ``stop_after``, "out of time" or "interrupted"). Every rank of the world runs
        ``fit``; rank 0 alone writes the metrics and speaks.

        With a ``run_dir``, the loss curves are drawn from its metrics into its loss.png when
        ``fit`` ends, stops early or diverges (not after a second Ctrl-C or a failed
        checkpoint; and at checkpoints a minute or more apart), on a
        ``loss_plot`` "linear" or "log" scale (None: no picture); the log says where.
        """
        checks.one_of(("linear", "log", None))("Trainer.fit", "loss_plot", loss_plot)
        main = self.world.is_main  # the one process that writes files and speaks
        say = (on_message or (lambda text: print(text, file=sys.stderr))) if main else None
        stop = steps if stop_after is None else min(steps, self.step + stop_after)
        records = Records(self.model, self.tokens_per_step or 0, self.policy.scaler,
                          self.wall_time, run_dir.append_metrics if run_dir and main else None,
                          on_record if main else None)  # fmt: skip
        drawn, ended, val_loss = time.perf_counter(), "completed", None
        with self.policy, stop_on_interrupt() as interrupt:
            try:
                while self.step < stop:
                    output = self.train_step()
                    step = self.step  # the steps done
                    record = records.add(step, output, self.optimiser.learning_rate)
                    at_interval = bool(self.eval_interval) and step % self.eval_interval == 0
                    # not at an early stop: an evaluation there would draw validation windows
                    # that an uninterrupted run does not, and a resumed run would differ
                    evaluating = at_interval or step == steps
                    hooks = [hook for hook in self.hooks if hook.due(step, evaluating)]
                    val_loss, measured = None, {}
                    if (evaluating and self.valid_data is not None) or hooks:
                        with records.excluding(record):  # left out of tokens_per_s
                            val_loss = self.evaluate() if evaluating else None
                            for hook in hooks:
                                measured.update(hook.run(self))
                            record.update(val_loss=val_loss, **measured)
                    # every rank stops at the same step, whatever its clock or signals say
                    out_of_time = max_seconds is not None and records.wall() >= max_seconds
                    flags = self.world.all_reduce(
                        np.array([out_of_time, interrupt.requested], dtype=np.float64), mean=False
                    )
                    out_of_time, interrupted = bool(flags[0]), bool(flags[1])
                    checkpointing = run_dir is not None and (
                        at_interval or step == stop or out_of_time or interrupted
                    )
                    if step % log_interval == 0 or val_loss is not None or hooks or checkpointing:
                        # before any checkpoint: a diverged model is never saved, and a
                        # checkpoint's steps all have their records (a run killed after it
                        # resumes with none missing)
                        records.flush()
                    improved = self.improves(val_loss)
                    if (val_loss is not None or hooks) and main:
                        for line in report_lines(step, records.last, val_loss, measured, improved):
                            say(line)
                    if checkpointing:
                        self.wall_time = records.wall()
                        with records.checkpointing():  # the snapshot: the files are written
                            self.checkpoint(run_dir, metadata, best=improved)  # meanwhile
                            if main and loss_plot and time.perf_counter() - drawn > 60:
                                drawn = self._draw_losses(run_dir, loss_plot)
                        if main and loss_plot:  # after the snapshot and the kernels' compiles
                            import_in_background()  # (none forks now): the end's picture
                    if out_of_time or interrupted:
                        ended = "out of time" if out_of_time else "interrupted"
                        if out_of_time and main:
                            say(f"max_seconds {max_seconds:g}: stopping after step {step}")
                        break
                records.flush()
            except TrainingDiverged as error:
                self.writer.wait(raise_error=False)
                if run_dir is not None and main and loss_plot:  # the picture of the divergence
                    self._draw_losses(run_dir, loss_plot, say)
                where = run_dir.checkpoint if run_dir is not None else "checkpoint"
                raise TrainingDiverged(f"{error}; {self._kept(where)}") from None
            except BaseException:  # an error, a second Ctrl-C: the write under way still ends
                self.writer.wait(raise_error=False)
                raise
        if ended == "completed" and self.step < steps:  # at stop_after
            ended = "stopped"
        self.wall_time = records.wall()
        if run_dir is not None and main and loss_plot:  # drawn while the last checkpoint is written
            self._draw_losses(run_dir, loss_plot, say)
        self.writer.wait()  # the last checkpoint on disk, or its error raised
        if run_dir is not None and main and self.best is not None:
            say(f"best weights: step {self.best['step']}, val loss "
                f"{self.best['val_loss']:.4f}, in {run_dir.best} (the last: step {self.step}, "
                f"in {run_dir.last})")  # fmt: skip
        return {
            "steps": self.step,
            "ended": ended,
            "precision": self.policy.mode,
            "skipped_steps": 0 if self.policy.scaler is None else self.policy.scaler.skipped_steps,
            "loss": records.last.get("loss"),
            "val_loss": val_loss,
            "best_step": None if self.best is None else self.best["step"],
            "best_val_loss": None if self.best is None else self.best["val_loss"],
            "wall_time": self.wall_time,
        }

    @staticmethod
    def _draw_losses(run_dir: RunDirectory, scale: str, say=None) -> float:
        """Draw run_dir's loss.png; ``say`` where (or why not). Returns the time it was drawn."""
        try:
            path = run_dir.plot_losses(log_scale=scale == "log")
            message = f"loss curve: {path}"
        except ImportError:
            message = "no loss curve: matplotlib is not installed (pip install matplotlib)"
        except OSError as error:
            message = f"could not draw {run_dir / RunDirectory.LOSS_PLOT}: {error}"
        if say is not None:
            say(message)
        return time.perf_counter()
