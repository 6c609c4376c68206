"""torch's ``loss_parallel()`` (``torch.distributed.tensor.parallel``): cross-entropy of
logits sharded over the classes (a DTensor ``Shard(1)`` of (N, C, ...), ``Shard(0)`` of
(C,): the vocabulary split as ``ColwiseParallel(output_layouts=Shard(-1),
use_local_output=False)`` gives it), computed without gathering the logits.

Each rank holds the logits of its piece of the classes, [lo, hi). With m the row's maximum
over all the classes (each rank's maximum gathered: a few numbers a row) and s the sum of
exp(x - m) over all of them (each rank's sum all-reduced), log p_t = (x_t - m) - log s,
where x_t - m is read on the rank that owns class t and summed over the ranks (the others
add zero; one all-reduce carries s and it together). The loss of a row is -w_t log p_t,
with w the class weights (1 without; 0 for a target equal to ``ignore_index``); "mean"
divides the sum by the total weight of the rows, as torch's. Its backward needs no message:
the gradient of the row's logits on this rank is w_t (softmax - onehot(t)) on its own
classes, softmax = exp(x - m) / s, scaled by the loss's gradient.

Inside ``with loss_parallel():`` ``tricycle.nn.functional.cross_entropy`` of such a DTensor
runs this (``tricycle.parallel.dtensor``) and gives a Replicate DTensor; the flag is
per thread and per async context (a ``ContextVar``), read by that call alone. Class
probabilities as targets and label smoothing are refused, as torch's.
"""

import contextlib
import contextvars

from tricycle import dispatch, ranges
from tricycle.loss_reduction import REDUCTIONS
from tricycle.parallel import dtensor_ops
from tricycle.parallel.dtensor_dispatch import Placed
from tricycle.parallel.dtensor_ops import Replicate

_active = contextvars.ContextVar("loss_parallel", default=False)

OP = "F.cross_entropy (loss_parallel)"


@contextlib.contextmanager
def loss_parallel():
    """torch's ``loss_parallel()``: inside it ``F.cross_entropy`` takes logits sharded over
    the class dimension and computes the loss without gathering them."""
    token = _active.set(True)
    try:
        yield
    finally:
        _active.reset(token)


def active() -> bool:
    """Whether the caller runs inside ``loss_parallel()``."""
    return _active.get()


def _class_mesh_dim(logits, class_dim: int) -> int:
    """The one mesh dimension that shards the classes (the others must replicate)."""
    shards = [m for m, p in enumerate(logits.placements) if p.is_shard(class_dim)]
    if len(shards) != 1:
        raise ValueError(
            f"loss_parallel() requires exactly one mesh dim to shard tensor dimension "
            f"{class_dim}, but got placements {logits.placements} with {len(shards)} such "
            "mesh dim(s)."
        )
    for m, p in enumerate(logits.placements):
        if m != shards[0] and not p.is_replicate() and logits.device_mesh.size(m) > 1:
            raise NotImplementedError(
                f"{OP}: placements {logits.placements}: tricycle's loss_parallel replicates "
                "every mesh dimension but the one that shards the classes"
            )
    return shards[0]


def _checked(logits, ids, weight, ignore_index, reduction, label_smoothing, legacy):
    if legacy:
        raise NotImplementedError(f"{OP}: size_average/reduce; pass reduction=")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{OP}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    if label_smoothing:
        raise NotImplementedError(f"{OP}: label_smoothing={label_smoothing} (as torch's: "
                                  "loss_parallel supports none)")  # fmt: skip
    if logits.ndim == 0:
        raise ValueError(f"{OP}: logits need a class dimension, got shape {logits.shape}")
    class_dim = 1 if logits.ndim >= 2 else 0
    expected = logits.shape[:class_dim] + logits.shape[class_dim + 1 :]
    if ids.dtype.kind not in "iu":
        raise NotImplementedError(
            f"{OP}: targets must be class ids (an integer tensor of shape {expected}); class "
            f"probabilities (dtype {ids.dtype}, shape {ids.shape}) are not supported, as torch's"
        )
    if tuple(ids.shape) != expected:
        raise ValueError(f"{OP}: targets of shape {tuple(ids.shape)} for logits of shape "
                         f"{logits.shape} (expected {expected})")  # fmt: skip
    n_classes = logits.shape[class_dim]
    if weight is not None and tuple(weight.shape) != (n_classes,):
        raise ValueError(f"{OP}: weight must have shape ({n_classes},), got {weight.shape}")
    check = dispatch.setting("check_range", dispatch.device_of(ids), ranges.check_range)
    check(ids, n_classes, op=OP, what="class ids", ignore=ignore_index)
    return class_dim


def cross_entropy(logits, target, weight=None, *, ignore_index=-100, reduction="mean",
                  label_smoothing=0.0, size_average=None, reduce=None) -> Placed:  # fmt: skip
    """The loss of ``logits`` (a DTensor sharded over its classes: see the module's
    docstring) and class ids ``target`` (an array or Tensor of the whole batch; ``weight``
    the classes' weights, whole), as torch's cross-entropy: a Replicate result's parts."""
    xp = logits._local_tensor.xp
    ids = xp.asarray(getattr(target, "array", target))
    weight = None if weight is None else xp.asarray(getattr(weight, "array", weight))
    legacy = size_average is not None or reduce is not None
    class_dim = _checked(logits, ids, weight, ignore_index, reduction, label_smoothing, legacy)
    mesh_dim = _class_mesh_dim(logits, class_dim)
    mesh = logits.device_mesh
    n, rank = mesh.group_of(mesh_dim)
    world = mesh.group(mesh_dim) if n > 1 else None  # the ranks that share the classes
    classes = dtensor_ops.piece(logits.shape[class_dim], n, rank)  # this rank's [lo, hi)
    local = logits._local_tensor
    x = xp.moveaxis(local.array, class_dim, -1)  # (..., C_r): classes last
    counted = ids != ignore_index if ignore_index is not None else xp.ones(ids.shape, bool)
    safe = xp.where(counted, ids, 0)
    w = xp.where(counted, 1 if weight is None else weight[safe], 0).astype(x.dtype)
    # the row's maximum over every class: each rank's, gathered
    top = x.max(axis=-1) if x.shape[-1] else xp.full(ids.shape, -xp.inf, x.dtype)
    top = top if world is None else world.all_gather(top, check=False).max(axis=0)
    e = xp.exp(x - top[..., None])  # (..., C_r)
    mine = counted & (ids >= classes.start) & (ids < classes.stop)
    at = xp.where(mine, ids - classes.start, 0)[..., None]  # (..., 1)
    if x.shape[-1]:
        picked = xp.take_along_axis(x, at, -1)[..., 0] - top  # x_t - m, where t is here
    else:
        picked = xp.zeros(ids.shape, x.dtype)
    both = xp.stack([e.sum(axis=-1), xp.where(mine, picked, 0)])  # (2, ...)
    both = both if world is None else world.all_reduce(xp.ascontiguousarray(both), mean=False)
    total, shifted_target = both[0], both[1]
    losses = w * (xp.log(total) - shifted_target)  # -w_t log p_t, (...)
    total_weight = w.sum()
    if reduction == "none":
        out = losses
    else:
        out = losses.sum() if reduction == "sum" else losses.sum() / total_weight

    def back(grad):
        scale = w * (grad if reduction != "mean" else grad / total_weight)  # (...)
        d = e / total[..., None]
        d -= (mine[..., None] & (xp.arange(x.shape[-1]) == at)).astype(d.dtype)  # onehot(t)
        return xp.moveaxis(d * scale[..., None], -1, class_dim)

    loss = local.new(xp.asarray(out, dtype=x.dtype), args=(local,), back_fns=(back,),
                     name="loss_parallel_cross_entropy")  # fmt: skip
    shape = tuple(losses.shape) if reduction == "none" else ()
    return Placed(loss, (Replicate(),) * mesh.ndim, shape)
