"""One stage of a pipeline (torch.distributed.pipelining's ``PipelineStage``): a rank's part
of the model, its microbatches' activations and their messages to the neighbouring stages.

Stage ``s`` of ``num_stages`` lives on rank ``s % world_size`` (torch's "loop" placement):
one stage per rank when ``num_stages`` is the world's size, else ``num_stages / world_size``
stages per rank (stages ``r``, ``r + world_size``, ...), which the interleaved schedules run.
The V-shape schedules (ScheduleZBVZeroBubble, ScheduleDualPipeV) place the stages down the
ranks and back up ("v": rank ``r`` holds stages ``r`` and ``2 world_size - 1 - r``), so that
the last stage shares the first's rank; a stage is accepted on the rank of either placement
and the schedule that runs it says which. A stage's neighbours are stages ``s - 1`` and
``s + 1``, on the ranks the placement gives them.

Each activation goes with a small message giving its shape, dtype and whether it needs a
gradient, so stages need no shapes in advance (``input_args``, where given, is checked
against what arrives); gradients come back in the shapes of the outputs they belong to. The
schedules (``tricycle.parallel.pipeline_schedules``) decide when each message goes.

A backward runs whole (``backward_one_chunk``) or, for the zero-bubble schedules, in two
halves (``tricycle.parallel.pipeline_backward``): the inputs' gradients
(``backward_input_one_chunk``), sent at once, and the parameters' later
(``backward_weight_one_chunk``).
"""

import numpy as np

from tricycle import autograd, checks
from tricycle.layers import Layer
from tricycle.parallel import pipeline_backward, torch_distributed
from tricycle.tensor import Tensor


class PipelineStage:
    """Stage ``stage_index`` of ``num_stages``: ``submodule``, on rank
    ``stage_index % world_size`` (``num_stages`` a multiple of the world's size).

    ``device`` is accepted (move the submodule there first); ``input_args``: an example of
    this stage's inputs for one microbatch (checked against what arrives); ``output_args``
    accepted; ``group``: None (the world) or a group (``new_group``'s), whose ranks the stages
    are placed on and talk over (ranks are then the group's); ``dw_builder`` is not
    supported."""

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
        if dw_builder is not None:
            raise NotImplementedError(f"{owner}: dw_builder (split weight gradients) is not "
                                      "supported; leave it None")  # fmt: skip
        world = torch_distributed._member_of(owner, group)  # the World, or the group's ranks
        if num_stages % world.world_size:
            raise ValueError(
                f"{owner}: num_stages={num_stages} must be a multiple of the world's size "
                f"({world.world_size}): each rank holds the same number of stages"
            )
        loop, v = (stage_rank(stage_index, world.world_size, style) for style in ("loop", "v"))
        if world.rank not in (loop, v):
            raise ValueError(
                f"{owner}: stage {stage_index} of {num_stages} lives on rank {loop} (stage s on "
                f"rank s % {world.world_size})"
                + (f", or on rank {v} in the V-shape placement" if v != loop else "")
                + f", not on rank {world.rank}"
            )
        self.submod, self.stage_index, self.num_stages = submodule, stage_index, num_stages
        self.device, self.world = device, world
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1
        self.place("loop" if loop == world.rank else "v")
        self.expected = None if input_args is None else _metas(_as_tuple(input_args))
        self.has_backward = True
        self.clear_runtime_states()

    def place(self, style: str) -> None:
        """Find the neighbouring stages where the placement ``style`` ("loop" or "v") puts
        them: the schedule running this stage calls it."""
        size = self.world.world_size
        if style not in ("loop", "v"):
            raise ValueError(f"PipelineStage.place: style must be 'loop' or 'v', got {style!r}")
        if stage_rank(self.stage_index, size, style) != self.world.rank:
            raise ValueError(
                f"PipelineStage {self.stage_index} of {self.num_stages}: the {style!r} "
                f"placement puts it on rank {stage_rank(self.stage_index, size, style)}, "
                f"not on rank {self.world.rank}"
            )
        self.placement = style
        # the ranks of stages s - 1 and s + 1 (None at the ends of the pipeline)
        self.prev_rank = None if self.is_first else stage_rank(self.stage_index - 1, size, style)
        self.next_rank = None if self.is_last else stage_rank(self.stage_index + 1, size, style)

    def clear_runtime_states(self) -> None:
        """Forget the last step's microbatches."""
        self.inputs, self.outputs, self.output_chunks = {}, {}, []
        self.weight_halves = {}  # microbatch -> its backward's weight half, not yet run
        self.sending = []  # the requests of sends not yet waited for, with their arrays

    # ------------------------------------------------------------------ messages
    def fwd_recv(self, i: int) -> list:
        """The receives of microbatch ``i``'s activations (none on the first stage); their
        shapes come first, in a message of their own (host, blocking)."""
        if self.is_first:
            return []
        metas = self.world.recv_objects(1, self.prev_rank)[0][0]
        if self.expected is not None and [m[:2] for m in metas] != [m[:2] for m in self.expected]:
            raise ValueError(
                f"PipelineStage {self.stage_index}: microbatch {i} arrives as {metas}, but "
                f"input_args says {self.expected}"
            )
        xp = _xp(self.submod)
        arrays = [xp.empty(shape, dtype=np.dtype(dtype)) for shape, dtype, _ in metas]
        self.inputs[i] = (arrays, [needs for _, _, needs in metas])
        return [("recv", a, self.prev_rank, 0) for a in arrays]

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
        self.sending += self.world.start_send_objects([metas], self.next_rank)
        arrays = [y.xp.ascontiguousarray(y.array) for y in outputs]
        return [("send", a, self.next_rank, 0) for a in arrays]

    def bwd_recv(self, i: int) -> list:
        """The receives of the gradients of microbatch ``i``'s outputs that need one."""
        if self.is_last or not self.has_backward:
            return []
        needing = [y for y in self.outputs[i] if y.requires_grad]
        grads = [y.xp.empty(y.shape, dtype=y.array.dtype) for y in needing]
        self.outputs[i] = (needing, grads)
        return [("recv", g, self.next_rank, 0) for g in grads]

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
        return [("send", g, self.prev_rank, 0) for g in grads]

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
        outputs, seeds = self._roots(i, loss)
        if outputs:
            autograd.backward(outputs, seeds)

    def backward_input_one_chunk(self, i: int, loss=None) -> None:
        """The input half of microbatch ``i``'s backward (torch's ``I``): its inputs'
        gradients, which ``bwd_send`` sends; the parameters' wait for
        ``backward_weight_one_chunk(i)``. On the first stage (no input to send a gradient
        to) the whole backward waits."""
        outputs, seeds = self._roots(i, loss)
        inputs = () if self.is_first else self.inputs[i]
        if not outputs:
            self.weight_halves[i] = _nothing
            return
        grads, self.weight_halves[i] = pipeline_backward.backward_input(outputs, seeds, inputs)
        for x, grad in zip(inputs, grads):  # where a whole backward leaves them
            x.grad = grad

    def backward_weight_one_chunk(self, i: int) -> None:
        """The weight half of microbatch ``i``'s backward (torch's ``W``): its parameters'
        gradients, accumulated into their ``.grad``."""
        weight_half = self.weight_halves.pop(i, None)
        if weight_half is None:
            raise RuntimeError(
                f"PipelineStage {self.stage_index}: the weight gradients (W) of microbatch "
                f"{i} come after its input gradients (I), which have not run (or W ran already)"
            )
        weight_half()

    def _roots(self, i: int, loss) -> tuple:
        """Where microbatch ``i``'s backward starts: its loss on the last stage, else the
        outputs that need a gradient, with the gradients the next stage sent."""
        if self.is_last:
            self.outputs.pop(i, None)
            return (loss,), (None,)
        needing, grads = self.outputs.pop(i)
        return tuple(needing), tuple(Tensor(g, requires_grad=False) for g in grads)

    def scale_grads(self, n: int) -> None:
        """Divide the submodule's gradients by ``n`` (the microbatches), in place."""
        if n != 1:
            for param in self.submod.parameters():
                if param.grad is not None:
                    param.grad.array *= param.grad.array.dtype.type(1.0 / n)

    def start(self, messages: list) -> None:
        """Start ``messages`` as one batch (on GPUs one NCCL group, so that sends and
        receives between two ranks cannot wait for each other); wait for the receives, keep
        the sends."""
        if not messages:
            return
        requests = self.world.start_batch(messages)
        for (kind, array, peer, _), request in zip(messages, requests):
            if kind == "recv":
                self.world.wait(request, f"pipeline stage {self.stage_index}: a receive of "
                                f"{array.shape} from rank {peer}")  # fmt: skip
            else:
                self.sending.append((request, array))

    def finish_sends(self) -> None:
        """Wait for every send of the step (their arrays stay alive until then)."""
        for request, _ in self.sending:
            self.world.wait(request, f"pipeline stage {self.stage_index}: a send")
        self.sending = []


def stage_rank(stage_index: int, world_size: int, style: str = "loop") -> int:
    """The rank of stage ``stage_index`` under torch's placement ``style``: "loop" (stage s
    on rank s % world_size) or "v" (down the ranks, then back up: each block of
    ``world_size`` stages in turn forwards and backwards)."""
    block, offset = divmod(stage_index, world_size)
    if style == "loop" or block % 2 == 0:
        return offset
    return world_size - 1 - offset


def _nothing() -> None:
    """The weight half of a backward with nothing to differentiate."""


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
