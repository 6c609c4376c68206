"""How a DTensor runs an op (torch's sharding propagation), on each rank's local Tensor.

For each mesh dimension an op's rule lists the ways it can run: a strategy is a placement
for each operand and the output's (a matmul's Shard(-1) @ Shard(0) -> Partial, a pointwise
op's Shard(d) beside a Replicate operand sliced alike -> Shard(d), Partial + Partial ->
Partial). The cheapest strategy from the operands' placements is taken: what it costs is
the elements sent to move each operand there (a Shard gathered or a Partial scattered: its
size; a Partial made whole: twice, an all-reduce; a Replicate sliced or partitioned:
nothing), then the fewest moves, then the rule's order (Shards, Partial, Replicate), which
gives torch's choices for the ops here. The operands are moved (``redistribute``,
differentiable), the op runs on the local Tensors, and the result is this rank's Tensor
with its placements and global shape (``Placed``), which ``tricycle.parallel.dtensor``
makes a DTensor.

Gradients keep tricycle's DTensor convention: a local Tensor's gradient is placed as its
DTensor, Partial read as Replicate. A Replicate operand of an op whose output is sharded or
partial (a bias over a shard of the rows, the replicated side of a matmul) gets from the
local op only this rank's part of its gradient: it is marked Partial, all-reduced in
backward. A mean over a sharded dimension is torch's Partial("avg") of the local means; its
backward divides by the global count.
"""

import math
from collections import namedtuple

import numpy as np

from tricycle.parallel import dtensor_ops, dtensor_shapes
from tricycle.parallel.dtensor_ops import Partial, Replicate, Shard

Placed = namedtuple("Placed", ["local", "placements", "shape"])


# ---------------------------------------------------------------------- differentiable moves
def moved(local, shape: tuple, mesh, source: tuple, target: tuple):
    """``local`` placed as ``target``; its backward moves the gradient the other way."""
    array = dtensor_ops.move(local.array, shape, mesh, source, target)
    grad_from, grad_to = dtensor_ops.for_grad(target), dtensor_ops.for_grad(source)

    def back(grad):
        return dtensor_ops.move(grad, shape, mesh, grad_from, grad_to)

    return local.new(array, args=(local,), back_fns=(back,), name="redistribute")


def regraded(local, shape: tuple, mesh, grad_placements: tuple, placements: tuple):
    """``local`` unchanged, its gradient (placed as ``grad_placements``) moved in backward to
    its DTensor's placements (``placements``)."""
    source = dtensor_ops.for_grad(placements)
    if tuple(grad_placements) == source:
        return local

    def back(grad):
        return dtensor_ops.move(grad, shape, mesh, tuple(grad_placements), source)

    return local.new(local.array, args=(local,), back_fns=(back,), name="to_local")


# ---------------------------------------------------------------------- choosing and running
def _cost(source, target, numel: int, n: int) -> int:
    """The elements one mesh dimension of n ranks sends to move ``source`` to ``target``."""
    if n == 1 or source == target or source.is_replicate():
        return 0  # a slice or a partition of what every rank holds
    if target.is_replicate() or target.is_partial():
        return 2 * numel if source.is_partial() else numel
    return numel if source.is_partial() else 2 * numel  # reduce-scatter; all-to-all


def _propagate(operands: tuple, rule) -> tuple:
    """(each operand's target placements, the output's) of the cheapest strategy of
    ``rule(mesh_dim, placements)`` on each mesh dimension."""
    mesh = operands[0].device_mesh
    chosen = []
    for mesh_dim in range(mesh.ndim):
        n, places = mesh.size(mesh_dim), [op.placements[mesh_dim] for op in operands]
        sizes = [math.prod(op.shape) for op in operands]

        def price(strategy, places=places, sizes=sizes, n=n):
            targets = strategy[0]
            sent = sum(_cost(p, t, s, n) for p, t, s in zip(places, targets, sizes))
            return sent, sum(p != t for p, t in zip(places, targets))

        chosen.append(min(rule(mesh_dim, places), key=price))  # the first of the cheapest
    targets = tuple(tuple(c[0][i] for c in chosen) for i in range(len(operands)))
    return targets, tuple(c[1] for c in chosen)


def _grad_placement(target, out, n: int):
    if n > 1 and target.is_replicate() and not out.is_replicate():
        return Partial(out.reduce_op if out.is_partial() else "sum")  # this rank's part
    return Replicate() if target.is_partial() else target


def _run(operands: tuple, targets: tuple, out: tuple, compute, shape: tuple) -> Placed:
    """``compute`` of the operands' local Tensors moved to ``targets``: a DTensor's parts."""
    mesh = operands[0].device_mesh
    sizes = [mesh.size(m) for m in range(mesh.ndim)]
    local = []
    for op, target in zip(operands, targets):
        x = op._local_tensor
        if target != op.placements:
            x = moved(x, op.shape, mesh, op.placements, target)
        grads = tuple(_grad_placement(t, o, n) for t, o, n in zip(target, out, sizes))
        local.append(regraded(x, op.shape, mesh, grads, target))
    return Placed(compute(*local), out, tuple(shape))


def _alone(x, out_of) -> tuple:
    """The strategy of a one-operand op whose rule ``out_of(mesh_dim, placement)`` gives
    its one (target, output placement)."""

    def rule(mesh_dim, places):
        target, out = out_of(mesh_dim, places[0])
        return [((target,), out)]

    return _propagate((x,), rule)


# ---------------------------------------------------------------------- pointwise
def broadcast_shape(owner: str, shapes) -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            f"DTensor {owner}: shapes {' and '.join(map(str, shapes))} do not broadcast"
        ) from None


def pointwise(owner: str, operands: tuple, kind, compute) -> Placed:
    """``compute`` elementwise over ``operands`` (DTensors of one mesh, broadcast as
    numpy's). ``kind`` says what a Partial operand may stay: "add" a sum (Partials of one
    kind stay, a Replicate is partitioned), "mul" linear in each operand (one Partial stays,
    the others Replicate), "div" linear in the first, None not linear (Partials reduced)."""
    shapes = [op.shape for op in operands]
    shape = broadcast_shape(owner, shapes)

    def own(op_shape, e):  # the operand's dimension at the output's e, unless broadcast
        d = e - (len(shape) - len(op_shape))
        return d if d >= 0 and op_shape[d] == shape[e] else None

    def rule(mesh_dim, places):
        at = [p.dim + len(shape) - len(s) if p.is_shard() else None for s, p in zip(shapes, places)]
        dims = sorted({e for s, e in zip(shapes, at) if e is not None and own(s, e) is not None})
        strategies = []
        for e in dims:
            targets = tuple(Replicate() if own(s, e) is None else Shard(own(s, e)) for s in shapes)
            strategies.append((targets, Shard(e)))
        for p in dict.fromkeys(p for p in places if p.is_partial()):
            if kind == "add":  # every operand an addend of that kind
                strategies.append(((p,) * len(shapes), p))
        for i, p in enumerate(places):  # linear in operand i: it stays Partial alone
            if p.is_partial() and (kind == "mul" or (kind == "div" and i == 0)):
                targets = tuple(p if j == i else Replicate() for j in range(len(shapes)))
                strategies.append((targets, p))
        strategies.append(((Replicate(),) * len(shapes), Replicate()))
        return strategies

    targets, out = _propagate(operands, rule)
    return _run(operands, targets, out, compute, shape)


# ---------------------------------------------------------------------- matmul
def matmul(a, b, compute) -> Placed:
    """``a @ b`` (torch's matmul: batch dimensions broadcast, a 1-D operand a vector): each
    output dimension may be sharded where an operand holds it, the contracted one gives a
    Partial sum, a Partial operand stays Partial beside a Replicate one."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"DTensor matmul: both operands need a dimension, got shapes "
                         f"{a.shape} and {b.shape}")  # fmt: skip
    k_b = b.shape[-2] if b.ndim >= 2 else b.shape[0]
    if a.shape[-1] != k_b:
        raise ValueError(f"DTensor matmul: shapes {a.shape} and {b.shape} cannot be multiplied "
                         f"({a.shape[-1]} != {k_b})")  # fmt: skip
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    batch = broadcast_shape("matmul", (batch_a, batch_b))
    names = [f"b{i}" for i in range(len(batch))]
    labels = (
        names[len(batch) - len(batch_a) :] + (["m", "k"] if a.ndim >= 2 else ["k"]),
        names[len(batch) - len(batch_b) :] + (["k", "n"] if b.ndim >= 2 else ["k"]),
    )
    out_labels = names + ["m"] * (a.ndim >= 2) + ["n"] * (b.ndim >= 2)
    shape = batch + a.shape[-2:-1] * (a.ndim >= 2) + b.shape[-1:] * (b.ndim >= 2)

    def rule(mesh_dim, places):
        strategies = []
        for e, label in enumerate(out_labels):  # an operand holding it whole shards it
            targets = tuple(
                Shard(lab.index(label))
                if label in lab and op.shape[lab.index(label)] == shape[e]
                else Replicate()
                for op, lab in zip((a, b), labels)
            )
            if any(t.is_shard() for t in targets):
                strategies.append((targets, Shard(e)))
        strategies.append(((Shard(labels[0].index("k")), Shard(labels[1].index("k"))), Partial()))
        for i, p in enumerate(places):
            if p.is_partial():
                strategies.append(((p, Replicate()) if i == 0 else (Replicate(), p), p))
        strategies.append(((Replicate(), Replicate()), Replicate()))
        return strategies

    targets, out = _propagate((a, b), rule)
    return _run((a, b), targets, out, compute, shape)


# ---------------------------------------------------------------------- reductions
def _dims(owner: str, dim, ndim: int) -> tuple:
    """torch's ``dim`` (None, an int or a sequence; None or empty: all) as sorted axes."""
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"DTensor {owner}: dim {d} of a DTensor of {ndim} dimensions")
    return tuple(sorted({d % max(ndim, 1) for d in dims}))


def reduction(owner: str, x, dim, keepdim: bool, mean: bool, compute) -> Placed:
    """``compute(local, dims)``, a sum (``mean``: a mean) over ``dim``: a sharded dimension
    summed gives Partial("sum"), averaged Partial("avg") of the local means (even shards;
    uneven ones are gathered first, as torch's); a Partial averaged is reduced first."""
    dims = _dims(owner, dim, x.ndim)
    kept = [d for d in range(x.ndim) if d not in dims]
    shape = (
        tuple(1 if d in dims else n for d, n in enumerate(x.shape))
        if keepdim
        else tuple(x.shape[d] for d in kept)
    )
    mesh = x.device_mesh

    def out_of(mesh_dim, p):
        if p.is_shard() and p.dim not in dims:
            return p, Shard(p.dim if keepdim else kept.index(p.dim))
        if p.is_shard() and not mean:
            return p, Partial()
        if p.is_shard() and x.shape[p.dim] % mesh.size(mesh_dim) == 0:
            return p, Partial("avg")
        return (p, p) if p.is_partial() and not mean else (Replicate(), Replicate())

    targets, out = _alone(x, out_of)
    scale = 1.0  # the local count over the global count, where local means are averaged
    for m, (t, o) in enumerate(zip(targets[0], out)):
        if t.is_shard() and o.is_partial("avg"):
            scale /= mesh.size(m)

    def run(local):
        y = compute(local, dims)
        return y if scale == 1.0 else _grad_scaled(y, scale)

    return _run((x,), targets, out, run, shape)


def _grad_scaled(y, scale: float):
    """``y`` whose gradient is multiplied by ``scale`` in backward."""
    return y.new(y.array, args=(y,), back_fns=(lambda grad: grad * scale,), name="mean")


def along(owner: str, x, dim, compute) -> Placed:
    """``compute(local)`` of an op along ``dim`` (softmax, log_softmax): that dimension
    whole on every rank (a shard of it gathered, a Partial reduced), the others kept."""
    d = _dims(owner, -1 if dim is None else dim, x.ndim)[0] if x.ndim else None

    def out_of(mesh_dim, p):
        keep = (p.is_shard() and p.dim != d) or p.is_replicate()
        return (p, p) if keep else (Replicate(), Replicate())

    targets, out = _alone(x, out_of)
    return _run((x,), targets, out, compute, x.shape)


# ---------------------------------------------------------------------- shapes
def reshape(owner: str, x, wanted) -> Placed:
    """``x`` viewed as ``wanted`` (torch's view arguments), its shards where
    ``tricycle.parallel.dtensor_shapes`` maps them."""
    shape = dtensor_shapes.target_shape(owner, x.shape, wanted)
    out = dtensor_shapes.reshaped(owner, x.shape, shape, x.device_mesh, x.placements)
    local_shape = dtensor_ops.local_shape(shape, x.device_mesh, out)
    return _run((x,), (x.placements,), out, lambda t: t.reshape(local_shape), shape)


def permute(owner: str, x, dims) -> Placed:
    """``x`` with its dimensions in the order ``dims``, each shard following its dimension."""
    dims, out = dtensor_shapes.permuted(owner, x.ndim, dims, x.placements)
    shape = tuple(x.shape[d] for d in dims)
    return _run((x,), (x.placements,), out, lambda t: t.permute(*dims), shape)
