"""One training step for every precision: ``train_step`` and what it returns.

``train_step`` runs the forward in the policy's dtype, seeds backward with its loss scale, and
unscales, clips and updates with ``tricycle.update.update`` (given the policy's scaler);
float32 is just ``Precision("fp32")``. The loss and gradient norm come back as they were
computed: device scalars on a GPU, so a loop that reads them every N steps lets the host run
ahead of the device in between (``StepOutput.settle`` reads them and applies the divergence
guard). ``tricycle.apps.training`` builds runs on it; ``tricycle.apps.cuda_graph`` replays it
as one CUDA graph, and redoes there the host work a replay skips (the optimiser's and the
loss scaler's counts).
"""

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from tricycle import backend, checks, graph
from tricycle.loss import CrossEntropy
from tricycle.parallel import distributed
from tricycle.precision import Precision
from tricycle.tensor import Tensor
from tricycle.update import update


class TrainingDiverged(RuntimeError):
    """The loss, the gradient norm, a parameter or an optimiser moment stopped being finite."""


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
        without loss scaling (with scaling such a step is skipped and counted). A range
        check that ops deferred on the GPU (a token id or label out of range) raises here
        first, as at every read-back (``graph.before_read_back``), so its error is not
        mistaken for a divergence; where no check was ever deferred (a CPU run) there is
        nothing to run."""
        graph.before_read_back()
        host = backend.to_host_array  # a marked wait (tricycle.waits), as every read-back
        loss = float(host(self.loss))
        norm = None if self.grad_norm is None else float(host(self.grad_norm))
        at = "" if step is None else f" at step {step}"
        if not math.isfinite(loss):
            raise TrainingDiverged(f"the training loss is {loss}{at}")
        if norm is not None and not math.isfinite(norm) and not self.scaled:
            raise TrainingDiverged(f"the gradient norm is {norm}{at}")
        return replace(self, loss=loss, grad_norm=norm, skipped=bool(host(self.skipped)))


@checks.arguments(accumulation_steps=checks.positive_int, max_norm=checks.non_negative)
def train_step(
    model,
    optimiser,
    batches: Iterator,
    policy: Precision | None = None,
    *,
    loss_fn: Callable | None = None,
    accumulation_steps: int = 1,
    max_norm: float = 0.0,
    data_parallel: distributed.DataParallel | None = None,
) -> StepOutput:
    """One optimiser step over ``accumulation_steps`` micro-batches from ``batches``.

    Args:
        model: a Layer mapping inputs to logits (run under the policy: ``Precision.forward``).
        optimiser: its ``step()`` is called first, then ``tricycle.update.update``.
        batches: an iterator of (inputs, targets).
        policy: the precision policy (default float32).
        loss_fn: ``loss_fn(targets, logits)``, default ``CrossEntropy()``.
        max_norm: clip the gradients to this global norm (0: no clipping).
        data_parallel: the model's ``distributed.DataParallel``: the gradients (reduced
            during the last micro-batch's backward) and the loss become their means over
            the ranks.

    Returns a ``StepOutput`` whose values stay on the device (no host synchronisation on a
    GPU); call ``settle`` to read and check them.
    """
    policy = Precision() if policy is None else policy
    loss_fn = CrossEntropy() if loss_fn is None else loss_fn
    optimiser.step()  # a captured step redoes it first in every replay (CapturedStep)
    total = 0.0
    for micro in range(accumulation_steps):
        last = micro == accumulation_steps - 1
        # with data parallelism only the last backward reduces: the others add up locally
        local = data_parallel is not None and not last
        with data_parallel.no_sync() if local else contextlib.nullcontext():
            inputs, targets = next(batches)  # (B, T) ids each
            logits = policy.forward(model, inputs)  # in the compute dtype
            loss = loss_fn(targets, logits)  # float32, whatever the compute dtype
            # gradients add up over the micro-batches: each contributes its share of the mean
            policy.backward(loss / accumulation_steps if accumulation_steps > 1 else loss)
        total = total + loss.array  # summed on the device
    loss = total / accumulation_steps
    if data_parallel is not None:
        data_parallel.finish()  # every gradient is now the mean over the ranks
        loss = data_parallel.world.all_reduce(loss)
    norm, skipped = update(optimiser, model, max_norm=max_norm, scaler=policy.scaler)
    return StepOutput(loss, norm, skipped, policy.scaler is not None)


def batch_array(batch):
    """A batch's array (datasets on a GPU yield Tensors): what a recorded step copies in."""
    return batch.array if isinstance(batch, Tensor) else batch


__all__ = ["StepOutput", "TrainingDiverged", "batch_array", "train_step"]


def precision_for(name: str, device: str) -> Precision:
    """The precision policy called ``name`` for ``device`` ("cpu" or "gpu"); a ValueError
    where it cannot run (TF32 is a tensor-core mode, and numpy has no fast bfloat16)."""
    if device != "gpu" and name in ("tf32", "bf16"):
        why = ("TF32 is a tensor-core mode" if name == "tf32"
               else "numpy has no fast bfloat16 matmul")  # fmt: skip
        raise ValueError(f"precision {name} needs a GPU: {why}; use fp32 or fp16 on the CPU")
    return Precision(name)
