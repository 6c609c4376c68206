"""Pipeline parallelism: torch.distributed.pipelining's manual API, on the World's
point-to-point messages (``tricycle.parallel.p2p``).

Each rank holds one stage of the model (stage ``i`` on rank ``i``) and runs the same
schedule; the batch is cut into microbatches, activations go forward from stage to stage and
their gradients back::

    from tricycle.distributed.pipelining import PipelineStage, ScheduleGPipe
    stage = PipelineStage(part, rank, world_size, device)    # this rank's layers
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)   # or Schedule1F1B
    if rank == 0:
        schedule.step(x)                                      # the whole batch
    elif rank == world_size - 1:
        losses = []
        output = schedule.step(target=y, losses=losses)       # one loss per microbatch
    else:
        schedule.step()
    optimizer.step()

As torch's: the inputs and the target are split along dim 0 into ``n_microbatches`` chunks
(``tensor_split``'s sizes); the last stage computes ``loss_fn(output, target)`` on each
chunk, backward walks each chunk's graph, the gradients add up in ``.grad`` and are divided
by ``n_microbatches`` at the end (``scale_grads=True``: a mean loss over the whole batch
gives the gradient of one process on it); ``losses`` receives the microbatches' (unscaled)
losses and ``step`` returns the last stage's outputs joined along dim 0 (detached; None on
the other stages). GPipe runs every forward, then every backward; 1F1B, after
``num_stages - stage_index`` forwards, alternates one backward and one forward, holding
fewer microbatches' activations, and fuses each send with the next receive in one batch (on
GPUs one NCCL group) as torch's does.

Each activation goes with a small message giving its shape, dtype and whether it needs a
gradient, so stages need no shapes in advance (``input_args``, where given, is checked
against what arrives). Sends never block: they are waited for at the end of the step.
Not here: torch's tracer (``pipeline``, ``SplitPoint``, ``pipe_split``: tricycle traces no
programs, build each stage's module by hand), several stages per rank (the interleaved and
zero-bubble schedules), chunk specs other than dim 0, ``dw_builder``.
"""

import numpy as np

from tricycle import autograd, checks
from tricycle.grad_modes import is_grad_enabled
from tricycle.layers import Layer
from tricycle.parallel import torch_distributed
from tricycle.tensor import Tensor

__all__ = [
    "PipelineStage",
    "Schedule1F1B",
    "ScheduleGPipe",
    "SplitPoint",
    "pipe_split",
    "pipeline",
]


class PipelineStage:
    """One stage of a pipeline: ``submodule`` on this rank, which must be rank
    ``stage_index`` of ``num_stages`` (the world's size).

    ``device`` is accepted (move the submodule there first); ``input_args``: an example of
    this stage's inputs for one microbatch (checked against what arrives); ``output_args``
    accepted; ``group`` must be None (the world); ``dw_builder`` is not supported."""

    def __init__(self, submodule, stage_index: int, num_stages: int, device=None,
                 input_args=None, output_args=None, group=None, dw_builder=None):  # fmt: skip
        owner = "PipelineStage"
        if not isinstance(submodule, Layer):
            raise TypeError(f"{owner}: submodule must be a Layer, got {type(submodule).__name__}")
        checks.integer(owner, "num_stages", num_stages, low=1)
        checks.integer(owner, "stage_index", stage_index, low=0)
        if stage_index >= num_stages:
            raise ValueError(
                f"{owner}: stage_index={stage_index} must be below num_stages={num_stages}"
            )
        torch_distributed._check_group(owner, group)
        if dw_builder is not None:
            raise NotImplementedError(f"{owner}: dw_builder (split weight gradients) is not "
                                      "supported; leave it None")  # fmt: skip
        world = torch_distributed._the_world(owner)
        if world.world_size != num_stages or world.rank != stage_index:
            raise ValueError(
                f"{owner}: stage {stage_index} of {num_stages} on rank {world.rank} of "
                f"{world.world_size}: tricycle runs one stage per rank, stage i on rank i"
            )
        self.submod, self.stage_index, self.num_stages = submodule, stage_index, num_stages
        self.device, self.world = device, world
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1
        self.expected = None if input_args is None else _metas(_as_tuple(input_args))
        self.has_backward = True
        self.clear_runtime_states()

    def clear_runtime_states(self) -> None:
        """Forget the last step's microbatches."""
        self.inputs, self.outputs, self.output_chunks = {}, {}, []
        self.sending = []  # the requests of sends not yet waited for, with their arrays

    # ------------------------------------------------------------------ messages
    def fwd_recv(self, i: int) -> list:
        """The receives of microbatch ``i``'s activations (none on the first stage); their
        shapes come first, in a message of their own (host, blocking)."""
        if self.is_first:
            return []
        metas = self.world.recv_objects(1, self.stage_index - 1)[0][0]
        if self.expected is not None and [m[:2] for m in metas] != [m[:2] for m in self.expected]:
            raise ValueError(
                f"PipelineStage {self.stage_index}: microbatch {i} arrives as {metas}, but "
                f"input_args says {self.expected}"
            )
        xp = _xp(self.submod)
        arrays = [xp.empty(shape, dtype=np.dtype(dtype)) for shape, dtype, _ in metas]
        self.inputs[i] = (arrays, [needs for _, _, needs in metas])
        return [("recv", a, self.stage_index - 1, 0) for a in arrays]

    def fwd_send(self, i: int) -> list:
        """The sends of microbatch ``i``'s outputs to the next stage (after their shapes)."""
        if self.is_last:
            return []
        outputs = self.outputs[i]
        for j, y in enumerate(outputs):
            if not isinstance(y, Tensor):
                raise TypeError(
                    f"PipelineStage {self.stage_index}: output {j} is a "
                    f"{type(y).__name__}; a stage sends Tensors only"
                )
        metas = _metas(outputs)
        self.sending += self.world.start_send_objects([metas], self.stage_index + 1)
        arrays = [y.xp.ascontiguousarray(y.array) for y in outputs]
        return [("send", a, self.stage_index + 1, 0) for a in arrays]

    def bwd_recv(self, i: int) -> list:
        """The receives of the gradients of microbatch ``i``'s outputs that need one."""
        if self.is_last or not self.has_backward:
            return []
        needing = [y for y in self.outputs[i] if y.requires_grad]
        grads = [y.xp.empty(y.shape, dtype=y.array.dtype) for y in needing]
        self.outputs[i] = (needing, grads)
        return [("recv", g, self.stage_index + 1, 0) for g in grads]

    def bwd_send(self, i: int) -> list:
        """The sends of the gradients of microbatch ``i``'s inputs that asked for one."""
        if self.is_first or not self.has_backward:
            return []
        inputs = self.inputs.pop(i)
        grads = []
        for x in inputs:
            if x.requires_grad:
                grad = x.grad.array if x.grad is not None else x.xp.zeros_like(x.array)
                grads.append(x.xp.ascontiguousarray(grad))
        return [("send", g, self.stage_index - 1, 0) for g in grads]

    # ------------------------------------------------------------------ compute
    def forward_one_chunk(self, i: int, args: tuple, kwargs: dict):
        """Run the submodule on microbatch ``i`` (its chunk of the inputs on the first
        stage, the received activations on the others); returns its output."""
        if not self.is_first:
            arrays, needs = self.inputs[i]
            args = tuple(Tensor(a, requires_grad=n and self.has_backward)
                         for a, n in zip(arrays, needs))  # fmt: skip
            self.inputs[i] = args
        output = self.submod(*args, **kwargs)
        self.outputs[i] = _as_tuple(output)
        if self.is_last:
            self.output_chunks.append(output)
        return output

    def backward_one_chunk(self, i: int, loss=None) -> None:
        """Walk microbatch ``i``'s graph: from its loss on the last stage, else from its
        outputs with the gradients the next stage sent."""
        if self.is_last:
            autograd.backward((loss,))
            self.outputs.pop(i, None)
            return
        needing, grads = self.outputs.pop(i)
        if needing:
            seeds = tuple(Tensor(g, requires_grad=False) for g in grads)
            autograd.backward(tuple(needing), seeds)

    def scale_grads(self, n: int) -> None:
        """Divide the submodule's gradients by ``n`` (the microbatches), in place."""
        if n != 1:
            for param in self.submod.parameters():
                if param.grad is not None:
                    param.grad.array *= param.grad.array.dtype.type(1.0 / n)

    def start(self, messages: list) -> None:
        """Start ``messages`` as one batch; wait for the receives, keep the sends."""
        if not messages:
            return
        requests = self.world.start_batch(messages)
        for (kind, array, peer, _), request in zip(messages, requests):
            if kind == "recv":
                self.world.wait(request, f"pipeline stage {self.stage_index}: a receive of "
                                f"{array.shape} from stage {peer}")  # fmt: skip
            else:
                self.sending.append((request, array))

    def finish_sends(self) -> None:
        """Wait for every send of the step (their arrays stay alive until then)."""
        for request, _ in self.sending:
            self.world.wait(request, f"pipeline stage {self.stage_index}: a send")
        self.sending = []


# ====================================================================== schedules
class _Schedule:
    """What GPipe and 1F1B share: the split of the batch, the losses, ``step``."""

    def __init__(self, stage: PipelineStage, n_microbatches: int, loss_fn=None,
                 args_chunk_spec=None, kwargs_chunk_spec=None, output_merge_spec=None,
                 scale_grads: bool = True):  # fmt: skip
        owner = type(self).__name__
        if not isinstance(stage, PipelineStage):
            raise TypeError(f"{owner}: stage must be a PipelineStage, got {type(stage).__name__}")
        checks.integer(owner, "n_microbatches", n_microbatches, low=1)
        checks.boolean(owner, "scale_grads", scale_grads)
        for name, spec in (("args_chunk_spec", args_chunk_spec),
                           ("kwargs_chunk_spec", kwargs_chunk_spec),
                           ("output_merge_spec", output_merge_spec)):  # fmt: skip
            if spec is not None:
                raise NotImplementedError(f"{owner}: {name}: tricycle splits and joins "
                                          "along dim 0 only; leave it None")  # fmt: skip
        if loss_fn is not None and not callable(loss_fn):
            raise TypeError(f"{owner}: loss_fn must be callable, got {type(loss_fn).__name__}")
        self._stage, self._n_microbatches, self._loss_fn = stage, n_microbatches, loss_fn
        self.scale_grads, self._has_backward = scale_grads, loss_fn is not None
        self._losses = []

    def step(self, *args, target=None, losses: list | None = None, return_outputs: bool = True,
             **kwargs):  # fmt: skip
        """One step on the whole batch (``args`` on the first stage, ``target`` and
        ``losses`` on the last); returns the last stage's outputs, None elsewhere."""
        owner = f"{type(self).__name__}.step"
        if self._has_backward and not is_grad_enabled():
            raise RuntimeError(f"{owner}: needs gradients (not under no_grad); call eval() "
                               "for a forward alone")  # fmt: skip
        if losses is not None and not isinstance(losses, list):
            raise TypeError(f"{owner}: losses must be a list, got {type(losses).__name__}")
        stage, n = self._stage, self._n_microbatches
        if stage.is_last and self._has_backward and target is None:
            raise ValueError(f"{owner}: the last stage computes the loss: pass target=")
        stage.has_backward = self._has_backward
        stage.clear_runtime_states()
        self._args = _split(owner, args, n) if stage.is_first else [()] * n
        parts = _split(owner, tuple(kwargs.values()), n) if kwargs else [()] * n
        self._kwargs = [dict(zip(kwargs, values)) for values in parts]
        self._targets = _split(owner, (target,), n) if target is not None else None
        self._losses = []
        self._run()
        stage.finish_sends()
        if stage.is_last and losses is not None and self._has_backward:
            losses[:] = self._losses
        if self._has_backward:
            stage.scale_grads(n if self.scale_grads else 1)
        if stage.is_last and return_outputs:
            return _merge(stage.output_chunks)
        return None

    def eval(self, *args, target=None, losses: list | None = None, **kwargs):
        """Forward alone over the microbatches (losses too, where a target is given)."""
        has_backward, self._has_backward = self._has_backward, False
        try:
            return self.step(*args, target=target, losses=losses, **kwargs)
        finally:
            self._has_backward = has_backward

    def _forward(self, i: int, receive: list | None = None) -> list:
        """Microbatch ``i``'s forward (and loss): returns its sends, not started."""
        stage = self._stage
        stage.start((receive or []) + stage.fwd_recv(i))
        output = stage.forward_one_chunk(i, self._args[i], self._kwargs[i])
        if stage.is_last and self._loss_fn is not None and self._targets is not None:
            self._losses.append(self._loss_fn(output, self._targets[i][0]))
        return stage.fwd_send(i)

    def _backward(self, i: int, receive: list | None = None) -> list:
        """Microbatch ``i``'s backward: returns its sends, not started."""
        stage = self._stage
        stage.start((receive or []) + stage.bwd_recv(i))
        stage.backward_one_chunk(i, self._losses[i] if stage.is_last else None)
        return stage.bwd_send(i)


class ScheduleGPipe(_Schedule):
    """GPipe: every microbatch's forward, then every microbatch's backward."""

    def _run(self) -> None:
        stage, n = self._stage, self._n_microbatches
        for i in range(n):
            stage.start(self._forward(i))
        if self._has_backward:
            for i in range(n):
                stage.start(self._backward(i))


class Schedule1F1B(_Schedule):
    """1F1B: ``num_stages - stage_index`` forwards, then one backward and one forward in
    turn, then the remaining backwards; needs ``n_microbatches >= num_stages``."""

    def __init__(self, stage: PipelineStage, n_microbatches: int, *args, **kwargs):
        super().__init__(stage, n_microbatches, *args, **kwargs)
        if n_microbatches < stage.num_stages:
            raise ValueError(
                f"Schedule1F1B: n_microbatches ({n_microbatches}) must be at least the number "
                f"of stages ({stage.num_stages})"
            )

    def _run(self) -> None:
        stage, n = self._stage, self._n_microbatches
        if not self._has_backward:
            for i in range(n):
                stage.start(self._forward(i))
            return
        warmup = min(n, stage.num_stages - stage.stage_index)
        sends = []
        for i in range(warmup):  # each send fired, but the last: it goes with the 1st backward
            stage.start(sends)
            sends = self._forward(i)
        forward, backward = warmup, 0
        while True:
            sends = self._backward(backward, receive=sends)
            backward += 1
            if forward == n:
                break
            sends = self._forward(forward, receive=sends)
            forward += 1
        stage.start(sends)
        while backward < n:
            stage.start(self._backward(backward))
            backward += 1


# ====================================================================== the tracer
def pipeline(*args, **kwargs):
    """torch's tracing front end: not in tricycle (it traces no programs)."""
    raise NotImplementedError(
        "pipeline: tricycle has no program tracer to split a model at SplitPoints; build "
        "each stage's module by hand (e.g. nn.Sequential(*layers[a:b])) and give it to "
        "PipelineStage"
    )


def pipe_split() -> None:
    """torch's split marker for the tracer: not in tricycle."""
    pipeline()


class SplitPoint:
    """torch's split points for ``pipeline``'s ``split_spec``: not in tricycle."""

    BEGINNING = "beginning"
    END = "end"

    def __init__(self, *args, **kwargs):
        pipeline()


# ====================================================================== helpers
def _as_tuple(value) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _metas(tensors) -> list:
    """(shape, dtype name, needs a gradient) of each Tensor."""
    return [(tuple(t.shape), t.array.dtype.str, bool(t.requires_grad)) for t in tensors]


def _xp(module: Layer):
    """The array module of ``module``'s parameters (numpy for a module without any)."""
    for param in module.parameters():
        return param.xp
    return np


def _split(owner: str, values: tuple, n: int) -> list:
    """``values`` cut into ``n`` microbatches along dim 0 (``tensor_split``'s sizes): a
    list of tuples; values that are not Tensors go to every microbatch."""
    chunks = [[] for _ in range(n)]
    for value in values:
        if not isinstance(value, Tensor):
            for chunk in chunks:
                chunk.append(value)
            continue
        if value.ndim == 0 or value.shape[0] < n:
            raise ValueError(
                f"{owner}: a tensor of shape {tuple(value.shape)} cannot be split into {n} "
                "microbatches along dim 0"
            )
        sizes = [value.shape[0] // n + (k < value.shape[0] % n) for k in range(n)]
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        for k, chunk in enumerate(chunks):
            chunk.append(value[int(bounds[k]) : int(bounds[k + 1])])
    return [tuple(chunk) for chunk in chunks]


def _merge(chunks: list):
    """The last stage's outputs joined along dim 0, detached."""
    if not chunks:
        return None
    if isinstance(chunks[0], (tuple, list)):
        return type(chunks[0])(_merge(list(parts)) for parts in zip(*chunks))
    if not isinstance(chunks[0], Tensor):
        return chunks
    xp = chunks[0].xp
    return Tensor(xp.concatenate([c.array for c in chunks]), requires_grad=False)
