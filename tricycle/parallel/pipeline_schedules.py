"""Pipeline schedules (torch.distributed.pipelining's): in what order a rank runs its
stages' forwards and backwards over the microbatches, and when their messages go.

All of them split the inputs and the target along dim 0 into ``n_microbatches`` chunks
(``tensor_split``'s sizes); the last stage computes ``loss_fn(output, target)`` on each
chunk, backward walks each chunk's graph, the gradients add up in ``.grad`` and are divided
by ``n_microbatches`` at the end (``scale_grads=True``: a mean loss over the whole batch
gives the gradient of one process on it); ``losses`` receives the microbatches' (unscaled)
losses and ``step`` returns the last stage's outputs joined along dim 0 (detached; None on
the ranks without the last stage).

One stage per rank (``PipelineScheduleSingle``): GPipe runs every forward, then every
backward; 1F1B, after ``num_stages - stage_index`` forwards, alternates one backward and one
forward, holding fewer microbatches' activations, and fuses each send with the next receive
in one batch (on GPUs one NCCL group) as torch's does.

Several stages per rank (``PipelineScheduleMulti``: stages ``r``, ``r + world_size``, ... on
rank ``r``, or ``r`` and ``2 world_size - 1 - r`` on the V placement): each rank's order of
actions is torch's (``tricycle.parallel.pipeline_orders``: Interleaved 1F1B, depth first, one
forward and one backward in turn once warm; Looped BFS, every microbatch of a stage before
the next stage; the zero-bubble schedules, whose backwards are split in an input half, sent
at once, and a weight half run later to fill the pipeline's bubbles: Interleaved Zero
Bubble, ZB-V and DualPipeV). The orders are laid on one timetable of steps shared by every
rank, found by playing them: at each step a rank runs its next action if the action it
depends on (the same microbatch's forward on the stage before, its backward on the stage
after) ran at an earlier step, and waits a step otherwise. Before step ``t`` every rank
exchanges what the actions of step ``t - 1`` made: the sends of its own action and the
receives of its neighbours', in one batch. Every message is sent and received at the same
step, so the messages between two ranks match in order (NCCL has no tags) and a batch never
waits for a later one.
"""

import numpy as np

from tricycle import checks
from tricycle.grad_modes import is_grad_enabled
from tricycle.parallel.pipeline_orders import (
    BACKWARD,
    FORWARD,
    INPUT,
    WEIGHT,
    destination,
    dualpipev_order,
    interleaved_1f1b_order,
    interleaved_zero_bubble_order,
    looped_bfs_order,
    timetable,
    zbv_zero_bubble_order,
)
from tricycle.parallel.pipeline_stage import PipelineStage, stage_rank
from tricycle.tensor import Tensor


class _PipelineSchedule:
    """What every schedule shares: the split of the batch, the losses, ``step``."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn=None,
                 args_chunk_spec=None, kwargs_chunk_spec=None, output_merge_spec=None,
                 scale_grads: bool = True):  # fmt: skip
        owner = type(self).__name__
        for stage in stages:
            if not isinstance(stage, PipelineStage):
                raise TypeError(f"{owner}: a stage must be a PipelineStage, got "
                                f"{type(stage).__name__}")  # fmt: skip
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
        self._stages, self._n_microbatches, self._loss_fn = stages, n_microbatches, loss_fn
        self.scale_grads, self._has_backward = scale_grads, loss_fn is not None
        self._losses = []

    def step(self, *args, target=None, losses: list | None = None, return_outputs: bool = True,
             **kwargs):  # fmt: skip
        """One step on the whole batch (``args`` where this rank holds the first stage,
        ``target`` and ``losses`` where it holds the last); returns the last stage's
        outputs, None elsewhere."""
        owner = f"{type(self).__name__}.step"
        if self._has_backward and not is_grad_enabled():
            raise RuntimeError(f"{owner}: needs gradients (not under no_grad); call eval() "
                               "for a forward alone")  # fmt: skip
        if losses is not None and not isinstance(losses, list):
            raise TypeError(f"{owner}: losses must be a list, got {type(losses).__name__}")
        stages, n = self._stages, self._n_microbatches
        last = next((stage for stage in stages if stage.is_last), None)
        if last is not None and self._has_backward and target is None:
            raise ValueError(f"{owner}: the last stage computes the loss: pass target=")
        for stage in stages:
            stage.has_backward = self._has_backward
            stage.clear_runtime_states()
        first = any(stage.is_first for stage in stages)
        self._args = _split(owner, args, n) if first else [()] * n
        parts = _split(owner, tuple(kwargs.values()), n) if kwargs else [()] * n
        self._kwargs = [dict(zip(kwargs, values)) for values in parts]
        self._targets = _split(owner, (target,), n) if target is not None else None
        self._losses = []
        self._run()
        for stage in stages:
            stage.finish_sends()
        if last is not None and losses is not None and self._losses:
            losses[:] = self._losses
        if self._has_backward:
            for stage in stages:
                stage.scale_grads(n if self.scale_grads else 1)
        if last is not None and return_outputs:
            return _merge(last.output_chunks)
        return None

    def eval(self, *args, target=None, losses: list | None = None, **kwargs):
        """Forward alone over the microbatches (losses too, where a target is given)."""
        has_backward, self._has_backward = self._has_backward, False
        try:
            return self.step(*args, target=target, losses=losses, **kwargs)
        finally:
            self._has_backward = has_backward

    def _compute_forward(self, stage: PipelineStage, i: int) -> None:
        """Microbatch ``i``'s forward on ``stage`` (its activations received), and its loss
        on the last stage."""
        output = stage.forward_one_chunk(i, self._args[i], self._kwargs[i])
        if stage.is_last and self._loss_fn is not None and self._targets is not None:
            self._losses.append(self._loss_fn(output, self._targets[i][0]))

    def _compute_backward(self, stage: PipelineStage, i: int) -> None:
        """Microbatch ``i``'s backward on ``stage`` (its output gradients received)."""
        stage.backward_one_chunk(i, self._losses[i] if stage.is_last else None)

    def _compute_input(self, stage: PipelineStage, i: int) -> None:
        """The input half of microbatch ``i``'s backward on ``stage``."""
        stage.backward_input_one_chunk(i, self._losses[i] if stage.is_last else None)

    def _compute_weight(self, stage: PipelineStage, i: int) -> None:
        """The weight half of microbatch ``i``'s backward on ``stage``."""
        stage.backward_weight_one_chunk(i)


# ====================================================================== one stage per rank
class PipelineScheduleSingle(_PipelineSchedule):
    """The schedules of one stage per rank (``num_stages`` the world's size)."""

    def __init__(self, stage: PipelineStage, n_microbatches: int, *args, **kwargs):
        owner = type(self).__name__
        if not isinstance(stage, PipelineStage):
            raise TypeError(f"{owner}: stage must be a PipelineStage, got {type(stage).__name__}")
        if stage.num_stages != stage.world.world_size:
            raise ValueError(
                f"{owner}: runs one stage per rank, but the pipeline has {stage.num_stages} "
                f"stages on {stage.world.world_size} ranks; for several stages per rank use "
                "ScheduleInterleaved1F1B or ScheduleLoopedBFS"
            )
        super().__init__([stage], n_microbatches, *args, **kwargs)
        self._stage = stage

    def _forward(self, i: int, receive: list | None = None) -> list:
        """Microbatch ``i``'s receives (with ``receive``), forward and loss: returns its
        sends, not started."""
        stage = self._stage
        stage.start((receive or []) + stage.fwd_recv(i))
        self._compute_forward(stage, i)
        return stage.fwd_send(i)

    def _backward(self, i: int, receive: list | None = None) -> list:
        """Microbatch ``i``'s receives (with ``receive``) and backward: returns its sends,
        not started."""
        stage = self._stage
        stage.start((receive or []) + stage.bwd_recv(i))
        self._compute_backward(stage, i)
        return stage.bwd_send(i)


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: every microbatch's forward, then every microbatch's backward."""

    def _run(self) -> None:
        stage, n = self._stage, self._n_microbatches
        for i in range(n):
            stage.start(self._forward(i))
        if self._has_backward:
            for i in range(n):
                stage.start(self._backward(i))


class Schedule1F1B(PipelineScheduleSingle):
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


# ====================================================================== several stages per rank
class PipelineScheduleMulti(_PipelineSchedule):
    """The schedules of several stages per rank: ``stages`` are this rank's (``r``,
    ``r + world_size``, ... of ``num_stages = world_size * len(stages)``, or those of the V
    placement where ``placement`` is "v"); a subclass gives each rank's order of actions
    (``_rank_order``), played on one timetable by every rank."""

    placement = "loop"  # where stage s lives: pipeline_stage.stage_rank's style

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        owner = type(self).__name__
        if not isinstance(stages, (list, tuple)) or not stages:
            raise TypeError(f"{owner}: stages must be a non-empty list of this rank's "
                            f"PipelineStages, got {stages!r}")  # fmt: skip
        super().__init__(list(stages), n_microbatches, *args, **kwargs)
        world = self._stages[0].world
        self._world_size, self._rank = world.world_size, world.rank
        self._num_stages = self._stages[0].num_stages
        have = sorted(stage.stage_index for stage in self._stages)
        want = [s for s in range(self._num_stages)
                if stage_rank(s, self._world_size, self.placement) == self._rank]  # fmt: skip
        if len({stage.num_stages for stage in self._stages}) != 1 or have != want:
            where = (f"stage s on rank s % {self._world_size}" if self.placement == "loop"
                     else "the V placement: down the ranks and back up")  # fmt: skip
            raise ValueError(
                f"{owner}: rank {self._rank} of {self._world_size} must hold stages {want} "
                f"of {self._num_stages} ({where}), one PipelineStage each; got stages {have} "
                f"of {[stage.num_stages for stage in self._stages]}"
            )
        for stage in self._stages:
            stage.place(self.placement)
        self._local_stages = len(self._stages)
        self._by_index = {stage.stage_index: stage for stage in self._stages}
        self._plans = {}  # has_backward: this rank's steps on the timetable
        self._compute = {FORWARD: self._compute_forward, BACKWARD: self._compute_backward,
                         INPUT: self._compute_input, WEIGHT: self._compute_weight}  # fmt: skip

    def _rank_order(self, rank: int) -> list:
        """Rank ``rank``'s actions, (stage, kind, microbatch), in order."""
        raise NotImplementedError(
            f"{type(self).__name__}: a base class without an order of its own (tricycle "
            "loads no schedule from a file); use ScheduleInterleaved1F1B or ScheduleLoopedBFS"
        )

    def _plan(self) -> list:
        """This rank's steps: (the action it ran at the step before, whose sends go now;
        the actions of the step before whose messages it receives now; its action now)."""
        if self._has_backward not in self._plans:
            orders = {rank: [a for a in self._rank_order(rank)
                             if self._has_backward or a[1] == FORWARD]
                      for rank in range(self._world_size)}  # fmt: skip
            table = timetable(type(self).__name__, orders, self._num_stages)
            plan, before = [], [None] * self._world_size
            for now in [*zip(*table.values()), [None] * self._world_size]:
                arriving = [a for a in before if a is not None and
                            destination(a, self._num_stages) in self._by_index]  # fmt: skip
                plan.append((before[self._rank], arriving, now[self._rank]))
                before = now
            self._plans[self._has_backward] = plan
        return self._plans[self._has_backward]

    def _run(self) -> None:
        for sent, arriving, action in self._plan():
            messages = self._messages(sent, "fwd_send", "bwd_send")
            receiver = None
            for made in arriving:
                receiver = self._by_index[destination(made, self._num_stages)]
                messages += self._messages(made, "fwd_recv", "bwd_recv", receiver)
            if messages:  # sends first: a rank may receive what it sent (a world of one, a V)
                (receiver or self._by_index[sent[0]]).start(messages)
            if action is not None:
                stage_index, kind, i = action
                self._compute[kind](self._by_index[stage_index], i)

    def _messages(self, action, on_forward: str, on_backward: str, stage=None) -> list:
        """The messages of ``action`` (None, or a weight half: none): ``stage``'s method
        (the action's own stage's by default) named ``on_forward`` or ``on_backward``, by
        its kind."""
        if action is None or action[1] == WEIGHT:
            return []
        stage_index, kind, i = action
        stage = stage or self._by_index[stage_index]
        return getattr(stage, on_forward if kind == FORWARD else on_backward)(i)


class ScheduleInterleaved1F1B(PipelineScheduleMulti):
    """Interleaved 1F1B (Narayanan et al. 2021) in torch's order (``interleaved_1f1b_order``):
    depth first, one forward and one backward in turn once warm. ``n_microbatches`` must be
    a multiple of the number of rounds, ``max(1, n_microbatches // world_size)``."""

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        super().__init__(stages, n_microbatches, *args, **kwargs)
        _check_rounds(type(self).__name__, n_microbatches, self._world_size)

    def _rank_order(self, rank: int) -> list:
        return interleaved_1f1b_order(
            rank, self._world_size, self._local_stages, self._n_microbatches
        )


class ScheduleLoopedBFS(PipelineScheduleMulti):
    """Looped BFS (Lamy-Poirier 2022) in torch's order (``looped_bfs_order``): breadth
    first, every microbatch through one stage before the next."""

    def __init__(self, stages: list, n_microbatches: int, loss_fn=None,
                 output_merge_spec=None, scale_grads: bool = True):  # fmt: skip
        super().__init__(stages, n_microbatches, loss_fn, output_merge_spec=output_merge_spec,
                         scale_grads=scale_grads)  # fmt: skip

    def _rank_order(self, rank: int) -> list:
        return looped_bfs_order(rank, self._world_size, self._local_stages, self._n_microbatches)


class ScheduleInterleavedZeroBubble(PipelineScheduleMulti):
    """Interleaved Zero Bubble (ZB1P, Qi et al. 2023) in torch's order
    (``interleaved_zero_bubble_order``): Interleaved 1F1B's, each backward split into its
    input half, sent at once, and its weight half, run later where the rank would wait.
    ``n_microbatches`` must be a multiple of the number of rounds, as Interleaved 1F1B's."""

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        super().__init__(stages, n_microbatches, *args, **kwargs)
        _check_rounds(type(self).__name__, n_microbatches, self._world_size)

    def _rank_order(self, rank: int) -> list:
        return interleaved_zero_bubble_order(
            rank, self._world_size, self._local_stages, self._n_microbatches
        )


class _VShape(PipelineScheduleMulti):
    """A schedule on the V placement, two stages per rank: stages ``r`` and
    ``2 world_size - 1 - r`` on rank ``r`` (the first and the last stage on rank 0)."""

    placement = "v"

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        super().__init__(stages, n_microbatches, *args, **kwargs)
        if self._local_stages != 2:
            raise ValueError(
                f"{type(self).__name__}: needs exactly 2 stages per rank (stages r and "
                f"2 world_size - 1 - r on rank r); got {self._local_stages}"
            )


class ScheduleZBVZeroBubble(_VShape):
    """ZB-V (Qi et al. 2023, section 6) in torch's order (``zbv_zero_bubble_order``): on the
    V placement, a forward and a split backward on each of the rank's stages in turn, the
    weight halves filling the warm-up and the drain. Zero bubble where a forward, an input
    half and a weight half take the same time."""

    def _rank_order(self, rank: int) -> list:
        return zbv_zero_bubble_order(rank, self._world_size, self._n_microbatches)


class ScheduleDualPipeV(_VShape):
    """DualPipeV (DeepSeek-V3's DualPipe cut to a V) in torch's order (``dualpipev_order``):
    on the V placement, a forward on one stage paired with a whole backward on the other in
    the steady state (torch overlaps them; here they run one after the other, as torch's
    runtime runs them), the last backwards split. ``n_microbatches`` at least the number of
    stages."""

    def __init__(self, stages: list, n_microbatches: int, *args, **kwargs):
        super().__init__(stages, n_microbatches, *args, **kwargs)
        if n_microbatches < self._num_stages:
            raise ValueError(
                f"ScheduleDualPipeV: n_microbatches ({n_microbatches}) must be at least the "
                f"number of stages ({self._num_stages})"
            )

    def _rank_order(self, rank: int) -> list:
        return dualpipev_order(rank, self._world_size, self._n_microbatches)


# ====================================================================== helpers
def _check_rounds(owner: str, n_microbatches: int, world_size: int) -> None:
    """The interleaved schedules' microbatches come in rounds: refuse a count that is not a
    whole number of them."""
    rounds = max(1, n_microbatches // world_size)
    if n_microbatches % rounds:
        raise ValueError(
            f"{owner}: n_microbatches={n_microbatches} must be a multiple of the number of "
            f"rounds, max(1, n_microbatches // world_size) = {rounds} (world_size {world_size})"
        )


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
