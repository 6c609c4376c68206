"""Validation: the mean loss over batches without a graph (on a GPU, one recorded forward
replayed for every batch), and the divergence check of a model's parameters and optimiser
state."""

from collections.abc import Callable

import numpy as np

from tricycle import backend, checks, dispatch, graph
from tricycle.apps.step import TrainingDiverged, batch_array
from tricycle.dataset import CausalLMDataset
from tricycle.loss import CrossEntropy
from tricycle.optimisers import global_norm
from tricycle.parallel import distributed
from tricycle.precision import Precision
from tricycle.tensor import Tensor, no_grad


@checks.arguments(n_batches=checks.positive_int, protocol=checks.one_of(("sequential", "random")))
def evaluate(
    model,
    data,
    n_batches: int,
    policy: Precision | None = None,
    protocol: str = "sequential",
    loss_fn: Callable | None = None,
    world: distributed.World | None = None,
    batch_loss: "BatchLoss | None" = None,
) -> float:
    """Mean loss over ``n_batches`` batches of ``data``, without a graph (summed on the
    device, read back once). With a ``world``, whose ranks each hold their share of the
    batches (``CausalLMDataset``'s rank), the mean over all of them.

    ``protocol`` "sequential": ``data.iterate_sequential`` (the first windows in order, the
    same every time: each token once, if n_batches covers the split); "random": fresh
    batches from ``next(data)`` each time, as nanoGPT's ``estimate_loss`` (they advance the
    data's generator, which checkpoints save). A ``CausalLMDataset`` split between ranks
    gives each rank whole global batches (the r-th of every N), so N ranks evaluate the
    windows one process would, in 1/N of the launches.

    ``batch_loss``: a ``BatchLoss`` of this model, policy and loss, kept between evaluations
    (one that records, on a GPU, replays one recorded forward for every batch); by default
    each batch runs eagerly.
    """
    policy = Precision() if policy is None else policy
    loss_fn = CrossEntropy() if loss_fn is None else loss_fn
    if batch_loss is None:
        batch_loss = BatchLoss(model, policy, loss_fn)
    # a CausalLMDataset split between ranks gives each rank whole global batches
    split = "batches" if isinstance(data, CausalLMDataset) and data.world_size > 1 else "rows"
    if protocol == "random" and split == "batches":
        batches = data.iterate_random(n_batches, split="batches")
    elif protocol == "random":
        batches = (next(data) for _ in range(n_batches))
    else:
        batches = data.iterate_sequential(max_batches=n_batches, split=split)
    was_training = model.training
    model.eval()
    total, n = 0.0, 0
    try:
        with no_grad():
            batch_loss.check()
            for inputs, targets in batches:
                total = total + batch_loss(inputs, targets)
                n += 1
    finally:
        if was_training:
            model.train()
    graph.before_read_back()  # a deferred range check (a validation id) raises first
    total = float(total)  # the one read-back: a number on every rank (0.0 on one given no
    if world is not None:  # batch), so that every rank makes the same collective
        total, n = world.all_reduce(total, mean=False), world.all_reduce(float(n), mean=False)
    return total / n


class BatchLoss:
    """The loss of one batch (an array on the batch's device), for evaluation (under
    ``no_grad``).

    With ``record`` (the training step's ``--cuda-graph``), on a device with a graph runner
    (a GPU: ``capture.Replayed``), the batches of one shape go through one fixed-shape step:
    each is copied into its input buffers and the step, recorded once, is replayed: a few
    launches a batch instead of the forward's hundreds, which set an evaluation's pace when
    the host enqueues them. Batches of another shape (a last partial one), the CPU, and
    ``record`` False run eagerly. The recording reads the parameters where they lie:
    ``check()``, at the start of each evaluation, records anew if any has moved. Its memory
    (one forward's, the logits included) is kept while the ``BatchLoss`` lives, as a
    ``CapturedStep`` keeps its step's.
    """

    def __init__(self, model, policy: Precision, loss_fn: Callable, record: bool = False):
        self.model, self.policy, self.loss_fn, self.record = model, policy, loss_fn, record
        self._buffers: tuple | None = None  # (inputs, targets) the recorded step reads
        self._run = None
        self._addresses: tuple = ()

    def __call__(self, inputs, targets):
        if not self.record:
            return self._loss(inputs, targets)
        x, y = batch_array(inputs), batch_array(targets)
        if self._run is None:
            params = self.model.parameters()  # the runner is found by a float array's device
            runner = dispatch.kernel_for("graph", params[0].array) if params else None
            if runner is None or backend.device_of(x) != backend.device_of(params[0].array):
                self.record = False  # no graph runner here (the CPU): eager from now on
                return self._loss(inputs, targets)
            self._buffers = (x.copy(), y.copy())
            self._run, self._addresses = runner(self._step), self._parameter_addresses()
        elif not self._fits(x, y):
            return self._loss(inputs, targets)
        else:
            for buffer, array in zip(self._buffers, (x, y)):
                backend.array_module(buffer).copyto(buffer, array)
        return self._run()

    def check(self) -> None:
        """Forget the recording if a parameter's array has moved since (``load_state_dict``,
        ``to_gpu``): it would read the old arrays."""
        if self._run is not None and self._parameter_addresses() != self._addresses:
            self._run = self._buffers = None

    def _parameter_addresses(self) -> tuple:
        return tuple(p.array.data.ptr if backend.is_cupy_array(p.array) else id(p.array)
                     for p in self.model.parameters())  # fmt: skip

    def _step(self):
        """The loss of the buffers' batch: fixed shapes, nothing read back."""
        inputs, targets = (Tensor(b, requires_grad=False, is_batched=True) for b in self._buffers)
        return self._loss(inputs, targets)

    def _loss(self, inputs, targets):
        return self.loss_fn(targets, self.policy.forward(self.model, inputs)).array

    def _fits(self, x, y) -> bool:
        return all(a.shape == b.shape and a.dtype == b.dtype
                   for a, b in zip((x, y), self._buffers))  # fmt: skip


def check_finite(model, optimiser=None) -> None:
    """Raise ``TrainingDiverged`` naming the first parameter or optimiser state array that
    holds an inf or NaN.

    One global norm first (on a GPU the multi-tensor kernel that clipping already compiled;
    CuPy's own reductions would compile a kernel for each dtype and shape class on a first run,
    seconds in the middle of training): a finite norm means every element is finite. Only a
    non-finite norm, which a sum of squares past float32's range also gives, looks at each
    array, to name the culprit or clear the overflow."""
    arrays = [(f"parameter {name}", p.array) for name, p in model.named_parameters()]
    if optimiser is not None:
        for name, slots in optimiser.state.items():
            for slot, value in slots.items():
                if hasattr(value, "dtype") and value.dtype.kind == "f":
                    arrays.append((f"optimiser {slot} of {name}", value))
    if not arrays or np.isfinite(float(global_norm([a for _, a in arrays]))):
        return
    flags = [backend.array_module(a).isfinite(a).all() for _, a in arrays]
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
