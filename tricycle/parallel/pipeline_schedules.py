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
rank ``r``): each rank's order of actions is torch's (Interleaved 1F1B: depth first, one
forward and one backward in turn once warm; Looped BFS: every microbatch of a stage before
the next stage). The orders are laid on one timetable of steps shared by every rank, found
by playing them: at each step a rank runs its next action if the action it depends on (the
same microbatch's forward on the stage before, its backward on the stage after) ran at an
earlier step, and waits a step otherwise. Before step ``t`` every rank exchanges what the
actions of step ``t - 1`` made: the sends of its own action and the receives of its
neighbours', in one batch. Every message is sent and received at the same step, so the
messages between two ranks match in order (NCCL has no tags) and a batch never waits for a
later one. Zero-bubble schedules split each backward into its input and weight halves,
which tricycle's backward does not: they are refused.
"""

import numpy as np

from tricycle import checks
from tricycle.grad_modes import is_grad_enabled
from tricycle.parallel.pipeline_stage import PipelineStage
from tricycle.tensor import Tensor

FORWARD, BACKWARD = "F", "B"  # an action: (stage index, FORWARD or BACKWARD, microbatch)


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
    ``r + world_size``, ... of ``num_stages = world_size * len(stages)``); a subclass gives
    each rank's order of actions (``_rank_order``), played on one timetable by every rank."""

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
        want = list(range(self._rank, self._num_stages, self._world_size))
        if len({stage.num_stages for stage in self._stages}) != 1 or have != want:
            raise ValueError(
                f"{owner}: rank {self._rank} of {self._world_size} must hold stages {want} "
                f"of {self._num_stages} (stage s on rank s % {self._world_size}), one "
                f"PipelineStage each; got stages {have} of "
                f"{[stage.num_stages for stage in self._stages]}"
            )
        self._local_stages = len(self._stages)
        self._by_index = {stage.stage_index: stage for stage in self._stages}
        self._plans = {}  # has_backward: this rank's steps on the timetable

    def _rank_order(self, rank: int) -> list:
        """Rank ``rank``'s actions, (stage, FORWARD or BACKWARD, microbatch), in order."""
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
            table = _timetable(type(self).__name__, orders, self._num_stages)
            plan, before = [], [None] * self._world_size
            for now in [*zip(*table.values()), [None] * self._world_size]:
                arriving = [a for a in before if a is not None and
                            _destination(a, self._num_stages) in self._by_index]  # fmt: skip
                plan.append((before[self._rank], arriving, now[self._rank]))
                before = now
            self._plans[self._has_backward] = plan
        return self._plans[self._has_backward]

    def _run(self) -> None:
        for sent, arriving, action in self._plan():
            messages = self._messages(sent, "fwd_send", "bwd_send")
            receiver = None
            for made in arriving:
                receiver = self._by_index[_destination(made, self._num_stages)]
                messages += self._messages(made, "fwd_recv", "bwd_recv", receiver)
            if messages:  # sends first: in a world of one, a rank receives what it sent
                (receiver or self._by_index[sent[0]]).start(messages)
            if action is not None:
                stage_index, kind, i = action
                compute = self._compute_forward if kind == FORWARD else self._compute_backward
                compute(self._by_index[stage_index], i)

    def _messages(self, action, on_forward: str, on_backward: str, stage=None) -> list:
        """The messages of ``action`` (None: none): ``stage``'s method (the action's own
        stage's by default) named ``on_forward`` or ``on_backward``, by its kind."""
        if action is None:
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
        rounds = max(1, n_microbatches // self._world_size)
        if n_microbatches % rounds:
            raise ValueError(
                f"ScheduleInterleaved1F1B: n_microbatches={n_microbatches} must be a multiple "
                f"of the number of rounds, max(1, n_microbatches // world_size) = {rounds} "
                f"(world_size {self._world_size})"
            )

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


def interleaved_1f1b_order(rank: int, world_size: int, local_stages: int, n: int) -> list:
    """Rank ``rank``'s actions under Interleaved 1F1B, torch's order: the ``n``
    microbatches go in rounds of ``n // max(1, n // world_size)``; the rank warms up with
    the forwards of its earlier stages round by round, then runs one forward and one
    backward in turn (its stages' backwards last stage first, round by round), then the
    remaining backwards."""
    per_round, total = n // max(1, n // world_size), n * local_stages
    # the last rank warms up with its earlier stages' rounds; each rank before it with two
    # forwards more (its first backward comes back two steps later per rank)
    warmup = min((local_stages - 1) * per_round + 2 * (world_size - 1 - rank), total)

    def stage(k: int, backward: bool) -> int:  # the stage of the rank's k-th F or B
        chunk = (k // per_round) % local_stages
        return rank + world_size * (local_stages - 1 - chunk if backward else chunk)

    forwards = _numbered([stage(k, False) for k in range(total)], FORWARD)
    backwards = _numbered([stage(k, True) for k in range(total)], BACKWARD)
    steady = [a for pair in zip(forwards[warmup:], backwards) for a in pair]
    return forwards[:warmup] + steady + backwards[total - warmup :]


def looped_bfs_order(rank: int, world_size: int, local_stages: int, n: int) -> list:
    """Rank ``rank``'s actions under Looped BFS, torch's order: the ``n`` microbatches'
    forwards on the rank's first stage, then on its next, ...; then the backwards, last
    stage first and the microbatches in reverse."""
    stages = range(rank, world_size * local_stages, world_size)
    microbatches = range(n)
    return [(s, FORWARD, i) for s in stages for i in microbatches] + [
        (s, BACKWARD, i) for s in reversed(stages) for i in reversed(microbatches)
    ]


class _SplitBackward:
    """A schedule that runs each backward in two halves, the inputs' gradients first and the
    weights' later to fill the pipeline's bubbles: tricycle's backward computes both in one
    walk of the graph, so these are refused."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            f"{type(self).__name__}: zero-bubble schedules split each backward into its "
            "input and weight gradients, which tricycle's backward does not; use "
            "ScheduleInterleaved1F1B or ScheduleLoopedBFS"
        )


class ScheduleInterleavedZeroBubble(_SplitBackward):
    """torch's interleaved zero-bubble schedule (ZB1P): not in tricycle."""


class ScheduleZBVZeroBubble(_SplitBackward):
    """torch's zero-bubble V schedule: not in tricycle."""


class ScheduleDualPipeV(_SplitBackward):
    """torch's DualPipeV schedule: not in tricycle."""


# ====================================================================== helpers
def _numbered(stages: list, kind: str) -> list:
    """Actions of ``kind`` on ``stages`` in turn, each stage's microbatches counted 0, 1, ..."""
    seen = {}
    actions = []
    for s in stages:
        seen[s] = seen.get(s, -1) + 1
        actions.append((s, kind, seen[s]))
    return actions


def _destination(action, num_stages: int):
    """The stage that ``action``'s output goes to (None: the ends of the pipeline)."""
    stage, kind, _ = action
    target = stage + 1 if kind == FORWARD else stage - 1
    return target if 0 <= target < num_stages else None


def _timetable(owner: str, orders: dict, num_stages: int) -> dict:
    """Every rank's actions (``orders``: rank -> actions in order) on steps shared by all:
    rank -> one action or None per step. A rank runs its next action at a step when the
    action it needs (the same microbatch's forward on the stage before, or its backward on
    the stage after, or its own forward on the last stage) ran at an earlier step."""
    done, steps = set(), {rank: [] for rank in orders}
    place = dict.fromkeys(orders, 0)
    while any(place[rank] < len(orders[rank]) for rank in orders):
        now = []
        for rank, order in orders.items():
            action = order[place[rank]] if place[rank] < len(order) else None
            if action is not None and not _ready(action, done, num_stages):
                action = None  # this rank waits a step
            if action is not None:
                now.append(action)
                place[rank] += 1
            steps[rank].append(action)
        if not now:
            waiting = {rank: order[place[rank]] for rank, order in orders.items()
                       if place[rank] < len(order)}  # fmt: skip
            raise RuntimeError(f"{owner}: the ranks' orders wait for each other: {waiting}")
        done.update(now)
    return steps


def _ready(action, done: set, num_stages: int) -> bool:
    stage, kind, i = action
    if kind == FORWARD:
        return stage == 0 or (stage - 1, FORWARD, i) in done
    if stage == num_stages - 1:
        return (stage, FORWARD, i) in done
    return (stage + 1, BACKWARD, i) in done


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
