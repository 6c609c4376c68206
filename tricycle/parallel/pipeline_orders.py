"""The orders of the pipeline schedules of several stages per rank
(torch.distributed.pipelining's), and the timetable that every rank plays them on.

An action is ``(stage index, kind, microbatch)``; the kinds are torch's letters: ``F`` a
forward, ``B`` a whole backward, ``I`` the input half of a backward (the gradients the
stage before waits for) and ``W`` its weight half (the parameters' gradients, which nothing
waits for: the zero-bubble schedules run them where a rank would otherwise idle). Each
function gives one rank's actions in torch's order; they are rewritten from torch's
schedules, and the tests compare them with torch's own.

The timetable (``timetable``) lays every rank's order on steps shared by all: at each step a
rank runs its next action if what that action needs ran at an earlier step (the same
microbatch's forward on the stage before; its backward, whole or input half, on the stage
after; its own forward on the last stage; its input half before its weight half), and
waits a step otherwise.
"""

FORWARD, BACKWARD, INPUT, WEIGHT = "F", "B", "I", "W"


# ====================================================================== depth first
def interleaved_1f1b_order(rank: int, world_size: int, local_stages: int, n: int) -> list:
    """Rank ``rank``'s actions under Interleaved 1F1B, torch's order: the ``n``
    microbatches go in rounds of ``n // max(1, n // world_size)``; the rank warms up with
    the forwards of its earlier stages round by round, then runs one forward and one
    backward in turn (its stages' backwards last stage first, round by round), then the
    remaining backwards."""
    return _depth_first(rank, world_size, local_stages, n, split=False)


def interleaved_zero_bubble_order(rank: int, world_size: int, local_stages: int, n: int) -> list:
    """Rank ``rank``'s actions under Interleaved Zero Bubble (ZB1P, Qi et al. 2023), torch's
    order: Interleaved 1F1B's, with one forward fewer per rank in the warm-up, each backward
    split, and each weight half run ``rank`` backwards after its input half (the weight
    halves held back close the order, where the pipeline drains)."""
    return _depth_first(rank, world_size, local_stages, n, split=True)


def _depth_first(rank: int, world_size: int, local_stages: int, n: int, split: bool) -> list:
    """The orders of the two schedules above: forwards, then a forward and a backward in
    turn, then backwards; with ``split``, each backward an input half followed, ``rank``
    backwards later, by its weight half."""
    per_round, total = n // max(1, n // world_size), n * local_stages
    # the last rank warms up with its earlier stages' rounds; each rank before it with more
    # forwards, as many as the steps its first backward takes to come back: two a rank for
    # whole backwards, one for input halves
    hops = 1 if split else 2
    warmup = min((local_stages - 1) * per_round + hops * (world_size - 1 - rank), total)

    def stage(k: int, backward: bool) -> int:  # the stage of the rank's k-th F or B
        chunk = (k // per_round) % local_stages
        return rank + world_size * (local_stages - 1 - chunk if backward else chunk)

    forwards = _numbered([(stage(k, False), FORWARD) for k in range(total)])
    backwards = _numbered([(stage(k, True), INPUT if split else BACKWARD) for k in range(total)])
    weights = _numbered([(stage(k, True), WEIGHT) for k in range(total)]) if split else []
    order = forwards[:warmup]
    for k, backward in enumerate(backwards):
        order += forwards[warmup + k : warmup + k + 1] + [backward]
        if split and k >= rank:
            order.append(weights[k - rank])
    return order + weights[max(0, total - rank) :]


def looped_bfs_order(rank: int, world_size: int, local_stages: int, n: int) -> list:
    """Rank ``rank``'s actions under Looped BFS, torch's order: the ``n`` microbatches'
    forwards on the rank's first stage, then on its next, ...; then the backwards, last
    stage first and the microbatches in reverse."""
    stages = range(rank, world_size * local_stages, world_size)
    microbatches = range(n)
    return [(s, FORWARD, i) for s in stages for i in microbatches] + [
        (s, BACKWARD, i) for s in reversed(stages) for i in reversed(microbatches)
    ]


# ====================================================================== V-shape
def zbv_zero_bubble_order(rank: int, world_size: int, n: int) -> list:
    """Rank ``rank``'s actions under ZB-V (Qi et al. 2023, section 6), torch's order: the
    rank holds stage ``rank`` on the way down and ``2 world_size - 1 - rank`` on the way back
    up. It warms up with forwards down (fewer the later the rank), then forwards on both;
    once its up stage has its first microbatches it runs each of their backwards (input then
    weight half) at once; in the steady state a forward and a split backward on each stage
    in turn; it drains with input halves first, their weight halves last. The order is made
    for at least ``2 world_size - 1`` microbatches; the actions of those past ``n`` are
    dropped."""
    m = max(2 * world_size - 1, n)
    down, up = rank, 2 * world_size - 1 - rank
    plan = [(down, FORWARD)] * (2 * (world_size - rank) - 1)
    plan += [(up, FORWARD), (down, FORWARD)] * rank
    plan += [(up, FORWARD), (up, INPUT), (up, WEIGHT)] * (world_size - rank)
    for j in range(m - world_size):  # the down stage's forwards run out first
        plan += [(down, FORWARD)] if j < m - 2 * world_size + 1 + rank else []
        plan += [(down, INPUT), (down, WEIGHT), (up, FORWARD), (up, INPUT), (up, WEIGHT)]
    plan += [(down, INPUT), (up, INPUT)] * rank
    plan += [(down, INPUT), (down, WEIGHT)] * (world_size - rank)
    plan += [(up, WEIGHT)] * rank + [(down, WEIGHT)] * rank
    return [action for action in _numbered(plan) if action[2] < n]


def dualpipev_order(rank: int, world_size: int, n: int) -> list:
    """Rank ``rank``'s actions under DualPipeV (DeepSeek-V3's DualPipe cut to a V), torch's
    order, on the V placement of ZB-V; ``n`` at least ``2 world_size``. torch pairs a
    forward on one stage with a whole backward on the other as one action to overlap them;
    here they are its two actions, forward first, as torch runs them. The last backwards
    are split, their weight halves filling the drain."""
    down, up = rank, 2 * world_size - 1 - rank
    order, count, pending = [], {}, []  # pending: weight halves not yet run, oldest first

    def run(stage: int, kind: str) -> None:
        key = (stage, kind == FORWARD)  # whole backwards and input halves counted together
        i = count[key] = count.get(key, -1) + 1
        order.append((stage, kind, i))
        if kind == INPUT:
            pending.append((stage, WEIGHT, i))

    def weight_half() -> None:
        if pending:
            order.append(pending.pop(0))

    for _ in range(2 * (world_size - rank - 1)):
        run(down, FORWARD)
    for _ in range(rank + 1):
        run(down, FORWARD)
        run(up, FORWARD)
    for _ in range(world_size - rank - 1):
        run(up, INPUT)
        weight_half()
        run(up, FORWARD)
    for _ in range(n - 2 * world_size + rank + 1):  # the steady state: overlapped pairs
        for forward, backward in ((down, up), (up, down)):
            run(forward, FORWARD)
            run(backward, BACKWARD)
    for _ in range(world_size - rank - 1):
        run(up, BACKWARD)
        run(up, FORWARD)
        run(down, BACKWARD)
    # a backward on each stage in turn, split from the middle on (odd ranks from the up
    # stage's, even ranks from the down stage's)
    middle = (rank + 1) // 2
    for j in range(rank + 1):
        run(up, INPUT if j > middle or (j == middle and rank % 2) else BACKWARD)
        run(down, INPUT if j >= middle else BACKWARD)
    for _ in range(world_size - rank - 1):
        weight_half()
        run(down, INPUT)
    for _ in range(rank + 1):
        weight_half()
    return order


# ====================================================================== the timetable
def timetable(owner: str, orders: dict, num_stages: int) -> dict:
    """Every rank's actions (``orders``: rank -> actions in order) on steps shared by all:
    rank -> one action or None per step. A rank runs its next action at a step when the
    action it needs (``needs``) ran at an earlier step."""
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


def needs(action, num_stages: int) -> set:
    """The actions of which ``action`` needs one to have run (empty: none)."""
    stage, kind, i = action
    if kind == FORWARD:
        return set() if stage == 0 else {(stage - 1, FORWARD, i)}
    if kind == WEIGHT:
        return {(stage, INPUT, i)}
    if stage == num_stages - 1:
        return {(stage, FORWARD, i)}
    return {(stage + 1, BACKWARD, i), (stage + 1, INPUT, i)}


def _ready(action, done: set, num_stages: int) -> bool:
    required = needs(action, num_stages)
    return not required or not required.isdisjoint(done)


def destination(action, num_stages: int):
    """The stage that ``action``'s output goes to (None: the ends of the pipeline, and a
    weight half, which sends nothing)."""
    stage, kind, _ = action
    if kind == WEIGHT:
        return None
    target = stage + 1 if kind == FORWARD else stage - 1
    return target if 0 <= target < num_stages else None


def _numbered(plan: list) -> list:
    """``plan``'s (stage, kind) pairs as actions, each stage's microbatches of each kind
    counted 0, 1, ... in turn."""
    seen = {}
    actions = []
    for stage, kind in plan:
        seen[stage, kind] = seen.get((stage, kind), -1) + 1
        actions.append((stage, kind, seen[stage, kind]))
    return actions
