"""Batch normalisation over the whole global batch of data-parallel processes, as PyTorch's
``nn.SyncBatchNorm``: under a process group of several ranks (``tricycle-run -n N``,
``init_process_group``), each rank normalising its own rows with the statistics of every
rank's rows together, as one process would on the global batch.

Forward: each channel's count and sum are summed over the ranks (one all-reduce), giving the
global mean; then the sums of squared deviations from it (a second), giving the global
(biased) variance; the normalisation itself is ``batch_norm_forward``'s with them. Backward:
with g = dy * gamma, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) where the means are over
the global batch, so the per-channel sums of dy and dy * xhat are summed over the ranks too
(a third); dgamma and dbeta stay the rank's own sums, as torch's, for
``DistributedDataParallel`` to average with the other gradients. The running statistics
take the global mean and unbiased variance, the same on every rank.

Alone (no process group, or one rank), and in evaluation, it is ``BatchNorm``.
``SyncBatchNorm.convert_sync_batchnorm(model)`` replaces a model's batch norms with it.

The math layer cannot import the parallel one, so the process group is found through
``tricycle.process_group``, where ``tricycle.parallel.distributed.init`` registers, once, a
function that gives its current World (or None once it is finalized).
"""

import math

from tricycle import dispatch, process_group
from tricycle.layers import shared_back_fns
from tricycle.nn.batch_norm import (
    _BatchNorm,
    affine_arguments,
    affine_gradients,
    batch_norm_backward,
    batch_norm_forward,
)
from tricycle.tensor import Tensor

__all__ = ["SyncBatchNorm", "sync_batch_norm"]

def sync_batch_norm(x: Tensor, gamma, beta, eps: float, sum_over_ranks):
    """Batch normalisation of x (N, C, *rest) with the statistics of every rank's x together;
    ``sum_over_ranks(array)`` is a new array, the sum of ``array`` over the ranks.
    Returns (y, mean, var, count): the output, the global (C,) mean and biased variance and
    the global number of values per channel."""
    N, C, rest = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    args, xp = affine_arguments("sync_batch_norm", x, gamma, beta)
    x3 = x.array.reshape(N, C, rest)
    # the count and the sums in float64: exact counts, and no float16 overflow
    local = xp.concatenate(
        [xp.full((1,), N * rest, "float64"), x3.sum(axis=(0, 2), dtype="float64")]
    )
    totals = sum_over_ranks(local)  # (1 + C,)
    count = int(round(float(totals[0])))
    if count <= 1:
        raise ValueError(f"sync_batch_norm: expected more than 1 value per channel over the "
                         f"ranks, got {count} (input shape {x.shape} here)")  # fmt: skip
    mean = (totals[1:] / count).astype(x3.dtype)
    centred = (x3 - mean[:, None]).astype("float64")
    var = (sum_over_ranks(xp.einsum("ncr,ncr->c", centred, centred)) / count).astype(x3.dtype)
    g, b = (None if t is None else t.array for t in (gamma, beta))
    forward, backward_arrays = dispatch.choose(
        "batch_norm", (batch_norm_forward, batch_norm_backward), x3, g, b
    )
    y, xhat, rstd, _, _ = forward(xp, x3, g, b, eps, mean, var)

    def backward(dy):
        dy = dy.reshape(N, C, rest)
        dx, dgamma, dbeta = backward_arrays(xp, dy, xhat, g, rstd, False)  # dx = rstd g
        sums = sum_over_ranks(xp.stack([dbeta, dgamma])) / count  # mean(dy), mean(dy xhat)
        scale = rstd if g is None else rstd * g  # (C,)
        dx = dx - (sums[0][:, None] + xhat * sums[1][:, None]) * scale[:, None]
        return affine_gradients(dx.reshape(x.shape), gamma, dgamma, beta, dbeta)

    out = Tensor(
        y.reshape(x.shape).astype(x.dtype, copy=False),
        args=args,
        back_fns=shared_back_fns(backward, len(args)),
        name="sync_batch_norm",
    )
    return out, mean, var, count


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation of (N, C, *rest) inputs whose training statistics are the global
    batch's over the process group's ranks, as ``torch.nn.SyncBatchNorm`` (see the module);
    ``BatchNorm`` alone and in evaluation. ``process_group``: None (the world) or a group
    (``new_group``'s): the statistics are those of its ranks' rows. Unlike torch's, it
    synchronises CPU arrays too."""

    n_dims = (2, 3, 4, 5)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 *, bias: bool = True):  # fmt: skip
        super().__init__(num_features, eps, momentum, affine, track_running_stats, bias=bias)
        self.process_group = process_group

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2D input (got {x.ndim}D input)")
        world = process_group.world(self.process_group, "SyncBatchNorm") if self.training else None
        if world is None or x.shape[1] != self.num_features:
            return super().forward(x)  # alone, in evaluation, or a shape to refuse
        sum_over_ranks = lambda a: world.all_reduce(a, mean=False)  # noqa: E731
        y, mean, var, count = sync_batch_norm(x, self.gamma, self.beta, self.eps, sum_over_ranks)
        if self.track_running_stats:
            self.num_batches_tracked += 1
            m = 1 / self.num_batches_tracked if self.momentum is None else self.momentum
            self._update_running_statistics(mean, var, count, m)
        return y

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every batch norm in it (BatchNorm1d/2d/3d, itself included)
        replaced by a SyncBatchNorm holding the same parameters, running statistics and
        mode, as torch's, reducing over ``process_group`` (None: the world); returns the
        converted module (``module`` itself unless it is a batch norm)."""
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            converted = cls(module.num_features, module.eps, module.momentum,
                            module.gamma is not None, module.track_running_stats,
                            process_group)  # fmt: skip
            converted.gamma, converted.beta = module.gamma, module.beta
            if module.track_running_stats:
                converted.running_mean = module.running_mean
                converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in list(converted.named_children()):
            new = cls.convert_sync_batchnorm(child, process_group)
            if new is not child:
                _replace(converted, name, new)
        return converted


def _replace(layer, name: str, new) -> None:
    """Put ``new`` where ``layer``'s child ``name`` (an attribute, or "attr.key" for a list,
    tuple or dict item, as ``named_children`` names it) is."""
    if name in vars(layer):
        setattr(layer, name, new)
        return
    attr, _, key = name.partition(".")
    held = getattr(layer, attr)
    if isinstance(held, dict):
        held[key] = new
    elif isinstance(held, list):
        held[int(key)] = new
    else:  # a tuple
        setattr(layer, attr, tuple(new if i == int(key) else v for i, v in enumerate(held)))
