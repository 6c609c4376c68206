"""A training step captured once as a CUDA graph and replayed: no Python per kernel.

At GPT sizes on an H100 the GPU finishes a step's few hundred kernels about as fast as
Python can enqueue them, so the host sets the pace. ``CapturedStep`` runs ``train_step``
eagerly for a few warm-up steps (kernels compile, optimiser state and cached tables are
made), then records the next step's kernels into a CUDA graph, and from then on each step
copies its batch into the graph's input buffers, redoes the step's little host work (the
optimiser's and the loss scaler's counts, registered here; Adam's learning rate and
counts, the dropout seeds: ``tricycle.backends.cuda.capture``) and launches the graph: one
call. An eager step runs none of this.

What a replay keeps from the capture, and so must not change afterwards (each is checked
where it can be, and refused with an error otherwise):

- the shapes and dtypes of the batches, the model's training mode, which parameters
  require gradients, and TF32 on or off (a step where one of them differs, such as a last
  partial batch, runs as an eager ``train_step``: correct, at the eager speed);
- the arrays of the parameters, of the optimiser's state and of the loss scaler (the graph
  reads and writes them where they were: replacing one, as an optimiser's or a scaler's
  ``load_state_dict`` does, raises before the next replay; make a new ``CapturedStep``
  after loading);
- the policy, loss, clipping threshold and weight decays. The learning rate, betas and eps
  are read at every step.

With ``data_parallel`` (the model's ``DataParallel``) the step's all-reduces are recorded
in the graph too, each forked off the step's stream where its bucket fills during backward
and joined back before the update, and so are ZeRO-1's all-gathers (an optimiser wrapped in
``ZeroRedundancyOptimiser``): NCCL's calls capture (``tricycle.parallel.engines``). Every
rank captures the same step and replays it, or none does; a later wait of the host stuck
behind a replay (a peer gone) ends the job at the deadline, naming the step's collectives
(``tricycle.parallel.deadline``).

Dropout is replayed too: its kernels read their mask seeds from device memory, which each
replay refills with fresh draws from the layers' generators (``capture.step_seed``), so a
run draws the masks an eager run draws. Optimisers without a fused update (SGD, Adam with
L2 decay) are refused at once (``capture.CaptureError``). A step holding work that cannot be
recorded (a product CuPy runs through its own cuBLAS bindings, such as attention at a head
size the kernels lack) fails its capture; then a warning says why and every step runs
eagerly, from the same state.

The graph's memory comes from a pool of its own (activations and gradients of one step),
kept while the ``CapturedStep`` lives; the step's outputs are copied out of the graph's
buffers, so a ``StepOutput`` stays valid after later steps.
"""

import warnings
from collections.abc import Callable, Iterator

import numpy as np

from tricycle import backend, checks, waits
from tricycle.apps.step import StepOutput, batch_array, train_step
from tricycle.backends.cuda import capture
from tricycle.backends.cuda.gemm import tf32_enabled
from tricycle.optimisers import Adam
from tricycle.parallel.zero import ZeroRedundancyOptimiser
from tricycle.precision import Precision


class CapturedStep:
    """``train_step`` with the same arguments, replayed as one CUDA graph after warm-up.

    ``step(batches)`` takes ``accumulation_steps`` (inputs, targets) batches from the
    iterator and returns a ``StepOutput``, as ``train_step`` does. The first
    ``warmup_steps`` calls run eagerly; the next one is captured and launched; every later
    one is a replay (or, for batches of other shapes, an eager step). The model and
    optimiser must live on one GPU.
    """

    @checks.arguments(
        accumulation_steps=checks.positive_int,
        max_norm=checks.non_negative,
        warmup_steps=checks.positive_int,
    )
    def __init__(
        self,
        model,
        optimiser,
        policy: Precision | None = None,
        *,
        loss_fn: Callable | None = None,
        accumulation_steps: int = 1,
        max_norm: float = 0.0,
        warmup_steps: int = 2,
        data_parallel=None,
    ):
        inner = optimiser.optimiser if isinstance(optimiser, ZeroRedundancyOptimiser) else optimiser
        if not (isinstance(inner, Adam) and optimiser.fuses()):
            raise capture.CaptureError(
                f"CapturedStep: the optimiser must be Adam or AdamW with decoupled decay (a "
                f"fused update on the GPU), alone or under ZeRO-1, got {optimiser!r}"
            )
        params = model.parameters()
        if not params or not all(p.on_gpu for p in params):
            raise ValueError("CapturedStep: the model's parameters must all be on a GPU")
        self.model, self.optimiser = model, optimiser
        self.policy = Precision() if policy is None else policy
        self.options = dict(loss_fn=loss_fn, accumulation_steps=accumulation_steps,
                            max_norm=max_norm, data_parallel=data_parallel)  # fmt: skip
        self.data_parallel = data_parallel
        # replays are watched, and captures agreed on, where there are peers to wait for
        self.peers = data_parallel is not None and data_parallel.world.world_size > 1
        self.warmup_steps = warmup_steps
        self.eager_steps = 0
        self._graph = None
        self._recording: capture.Recording | None = None
        self._pool = None  # the graph's memory
        self._inputs: list[tuple] = []  # the graph's (inputs, targets) buffers
        self._outputs: StepOutput | None = None  # the graph's output buffers
        self._addresses: tuple = ()
        self._captured_mode: tuple = ()
        self.failure: str | None = None  # why the step could not be captured, if it could not

    @property
    def captured(self) -> bool:
        """Whether the graph exists (steps are replays)."""
        return self._graph is not None

    def __call__(self, batches: Iterator) -> StepOutput:
        micro = [next(batches) for _ in range(self.options["accumulation_steps"])]
        warming_up = self._graph is None and self.eager_steps < self.warmup_steps
        mode, addresses = (None, None) if self._graph is None else self._signature()
        if warming_up or self.failure or (mode is not None and not self._fits(micro, mode)):
            self.eager_steps += 1  # a batch of another shape (a last partial one) runs eagerly
            return train_step(self.model, self.optimiser, iter(micro), self.policy, **self.options)
        if self._graph is None:
            captured = self._capture(micro)
            if self.peers:
                self._agree(captured)
            if not captured:  # not capturable: this step and the rest run eagerly
                return self(iter(micro))
        else:
            self._check_addresses(addresses)
            self._store(micro)
            self._recording.refresh()
        with waits.waiting("a CUDA graph replay (the captured step)"):  # a full queue blocks
            self._graph.launch(backend.cupy().cuda.get_current_stream())
        if self.peers:  # the graph's all-reduces, held to the deadline
            self.data_parallel.world.watch_device("the collectives of the captured step")
        return self._copied_outputs()

    def _agree(self, captured: bool) -> None:
        """With data parallelism, every rank must replay its graph (whose collectives wait
        for the others' replays) or none: ranks that disagree end the job."""
        world = self.data_parallel.world
        ranks = world.all_reduce(float(captured), mean=False)
        if 0 < ranks < world.world_size:
            world.abort(
                f"the training step was captured as a CUDA graph on {ranks:g} of "
                f"{world.world_size} ranks ({self.failure or 'this one captured it'}); pass "
                "--cuda-graph off",
                blame_peers=False,
            )

    # ------------------------------------------------------------------ capture
    def _capture(self, micro: list) -> bool:
        """Capture and keep the graph of this step (launched next); False if the step holds
        work that cannot be captured: then a warning says why, the host state the attempt
        advanced is put back, and the step (and every later one) runs eagerly."""
        cp = backend.cupy()
        counts = self._host_counts()
        self._inputs = [(cp.array(batch_array(x)), cp.array(batch_array(y)))
                        for x, y in micro]  # copies
        failure = None
        try:
            graph, outputs, pool, recording = capture.record(self._recorded_step)
        except Exception as error:
            failure = error
        if failure is not None:
            self._restore_host_counts(counts)
            for p in self.model.parameters():  # gradients the graph would have computed
                p.grad = None
            if self.data_parallel is not None:  # its buckets, half filled by the attempt
                self.data_parallel.abandon()
            self.failure = f"{type(failure).__name__}: {failure}"
            warnings.warn(
                f"CapturedStep: the training step cannot be captured as a CUDA graph "
                f"({self.failure}); it runs eagerly instead",
                RuntimeWarning,
                stacklevel=3,
            )
            return False
        # record put the values of this step's hooks in place (its learning rate and counts)
        self._graph, self._pool, self._recording = graph, pool, recording
        self._outputs = outputs
        self._captured_mode, self._addresses = self._signature()
        cp.get_default_memory_pool().free_all_blocks()  # the warm-up's cached blocks
        return True

    def _recorded_step(self) -> StepOutput:
        """``train_step`` on the graph's input buffers, as ``record`` captures it, with the
        host counts it advances outside the device redone before every replay: the
        optimiser's ``step()`` first (the step's first act, before any other host work) and
        the loss scaler's count of updates last (its update's last act). The device work of
        the step hooks its own host work in as it is recorded (Adam's counts and learning rate,
        dropout's seeds: ``tricycle.backends.cuda.capture``; range checks:
        ``tricycle.backends.cuda.deferred``)."""
        capture.on_replay(self.optimiser.step)
        scaler = self.policy.scaler
        updates = None if scaler is None else scaler.steps
        outputs = train_step(self.model, self.optimiser, iter(self._inputs), self.policy,
                             **self.options)  # fmt: skip
        if scaler is not None and scaler.steps != updates:  # the step reached its update
            capture.on_replay(scaler.count_update)
        return outputs

    def _host_counts(self) -> tuple:
        """The host state one step advances: the optimiser's and each parameter's step
        counts, and the loss scaler's."""
        scaler = self.policy.scaler
        steps = {name: state["step"] for name, state in self.optimiser.state.items()
                 if "step" in state}  # fmt: skip
        return self.optimiser.step_count, steps, None if scaler is None else scaler.steps

    def _restore_host_counts(self, counts: tuple) -> None:
        step_count, steps, scaler_steps = counts
        self.optimiser.step_count = step_count
        for name, step in steps.items():
            self.optimiser.state[name]["step"] = step
        if scaler_steps is not None:
            self.policy.scaler.steps = scaler_steps

    def _fits(self, micro: list, mode: tuple) -> bool:
        """The graph computes this step: the batches have the shapes and dtypes it was
        captured with, and the model (``mode``, from ``_signature``) is as it was."""
        return mode == self._captured_mode and all(
            array.shape == buffer.shape and np.dtype(array.dtype) == buffer.dtype
            for buffer, array in self._buffered(micro)
        )

    def _store(self, micro: list) -> None:
        """Copy a step's batches into the graph's input buffers."""
        cp = backend.cupy()
        for buffer, array in self._buffered(micro):
            if isinstance(array, np.ndarray):
                buffer.set(array, stream=cp.cuda.get_current_stream())
            else:
                cp.copyto(buffer, array)

    def _buffered(self, micro: list) -> Iterator[tuple]:
        """(the graph's input buffer, the step's array) for each inputs and targets array of
        the step's batches."""
        for buffers, batch in zip(self._inputs, micro):
            yield from zip(buffers, map(batch_array, batch))

    def _copied_outputs(self) -> StepOutput:
        """The step's outputs, copied out of the graph's buffers (the next replay rewrites
        them)."""
        out = self._outputs

        def copied(value):
            return value.copy() if backend.is_cupy_array(value) else value

        return StepOutput(copied(out.loss), copied(out.grad_norm), copied(out.skipped), out.scaled)

    # ------------------------------------------------------------------ what must not move
    def _signature(self) -> tuple[tuple, tuple]:
        """(mode, addresses), from one walk over the model. mode: what the recorded kernels
        depend on beyond the arrays: the training mode (dropout on or off), which parameters
        are trained, and whether float32 products run in TF32 (a cuBLAS argument).
        addresses: where the arrays the graph updates in place live: the parameters, the
        optimiser's moments and the loss scaler's state (None where it has none yet)."""
        params = self.model.parameters()
        trained = tuple(id(p) for p in params if p.requires_grad)  # a frozen one is listed
        mode = (self.model.training, trained, tf32_enabled())
        arrays = [p.array for p in params]
        for slots in self.optimiser.state.values():
            arrays += [v for v in slots.values() if backend.is_cupy_array(v)]
        scaler = self.policy.scaler
        if scaler is not None:
            arrays += [scaler._scale, scaler._good_steps, scaler._skipped]
        return mode, tuple(a.data.ptr if backend.is_cupy_array(a) else None for a in arrays)

    def _check_addresses(self, addresses: tuple) -> None:
        if addresses != self._addresses:
            raise capture.CaptureError(
                "CapturedStep: a parameter, optimiser state or loss scaler array was replaced "
                "since the graph was captured (load_state_dict, to_gpu, ...); the graph would "
                "update the old arrays. Make a new CapturedStep."
            )


__all__ = ["CapturedStep"]
