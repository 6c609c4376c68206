"""torch's top-level embedding functions, ATen's forms of what ``tricycle.nn`` does:

- ``embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
  per_sample_weights=None, include_last_offset=False, padding_idx=None)``: torch's 4-tuple
  (output, offset2bag, bag_size, max_indices). The output is ``F.embedding_bag``'s
  (``tricycle.nn.embedding_bag``: differentiable in the table and the per-sample weights);
  the other three are integer bookkeeping, as torch's CPU kernel leaves it:

      offset2bag[i]   the bag of the i-th id
      bag_size[b]     the number of ids of bag b that are not ``padding_idx`` (modes "mean"
                      and "max"; zeros in mode "sum")
      max_indices     mode "max": (B, E), the id whose row gave each element's largest (0 for
                      an empty bag); mode "mean": ``bag_size``; mode "sum": zeros, as bag_size

  In mode "sum" torch's CPU kernel leaves offset2bag empty unless the table is float64 or
  there is a ``padding_idx``, and makes bag_size one longer with ``include_last_offset`` when
  no gradient is wanted: tricycle's follows it (``_sum_bookkeeping``).

  ``mode`` is ATen's integer: 0 "sum", 1 "mean", 2 "max". With ``include_last_offset`` the
  last offset is where the last bag ends (CSR's layout, torch's documented use; where it falls
  short of the ids' end, torch's CPU kernel sums up to it but counts and takes the max up to
  the end, tricycle stops at it throughout).
- ``embedding_renorm_(weight, indices, max_norm, norm_type)``: each row that ``indices``
  picks whose ``norm_type``-norm is above ``max_norm`` scaled in place by max_norm / (norm +
  1e-7), as ``F.embedding``'s ``max_norm`` does before a lookup; returns ``weight``.
"""

import numpy as np

from tricycle import backend, checks
from tricycle.embedding_layer import padding_row
from tricycle.graph import grad_enabled
from tricycle.nn.embedding_bag import bag_slots
from tricycle.nn.embedding_bag import embedding_bag as bag_sums
from tricycle.tensor import Tensor, as_tensor

__all__ = ["embedding_bag", "embedding_renorm_"]

MODES = ("sum", "mean", "max")  # ATen's mode 0, 1, 2


def _ids(op: str, name: str, values, xp):
    """``values`` (a Tensor or an array) as a 1-D integer array, or torch's RuntimeError."""
    values = values.array if isinstance(values, Tensor) else xp.asarray(values)
    if values.dtype.kind not in "iu" or values.ndim != 1:
        raise RuntimeError(f"{op}: {name} must be a 1-D tensor of integers, got dtype "
                           f"{values.dtype} with shape {values.shape}")  # fmt: skip
    return values


def embedding_bag(
    weight,
    indices,
    offsets,
    scale_grad_by_freq: bool = False,
    mode: int = 0,
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices) for the bags of
    ``indices`` (1-D) that ``offsets`` start (see the module's doc)."""
    op = "embedding_bag"
    weight = as_tensor(weight)
    xp = weight.xp
    if mode not in (0, 1, 2) or isinstance(mode, bool):
        raise RuntimeError(f"{op}: `mode` must be sum (0), mean (1), or max (2), got {mode!r}")
    if per_sample_weights is not None and mode != 0:
        raise RuntimeError(f"{op}: per_sample_weights only supported with mode='sum'")
    ids = _ids(op, "indices", indices, xp)
    bounds = backend.to_host_array(_ids(op, "offsets", offsets, xp)).astype(np.int64)
    checks.boolean(op, "include_last_offset", include_last_offset)
    output = bag_sums(ids, weight, bounds, scale_grad_by_freq=scale_grad_by_freq,
                      mode=MODES[mode], sparse=sparse, per_sample_weights=per_sample_weights,
                      include_last_offset=include_last_offset, padding_idx=padding_idx)  # fmt: skip
    padding = padding_row(padding_idx, weight.shape[0], op)
    slots, kept = bag_slots(op, bounds, ids.shape[0], include_last_offset)
    starts = bounds[:-1] if include_last_offset else bounds
    slots, kept = xp.asarray(slots), xp.asarray(kept)
    bag_ids = ids[slots] if ids.shape[0] else xp.zeros(slots.shape, dtype=ids.dtype)  # (B, L)
    if padding is not None:
        kept = kept & (bag_ids != padding)
    positions = np.arange(ids.shape[0])
    offset2bag = np.searchsorted(starts, positions, side="right") - 1
    if mode == 0:  # torch's CPU kernel: see _sum_bookkeeping
        kept_all, count = _sum_bookkeeping(weight, per_sample_weights, padding, len(bounds),
                                           len(starts), include_last_offset)  # fmt: skip
        offset2bag = offset2bag if kept_all else offset2bag[:0]
        bag_size, max_indices = (xp.zeros(count, dtype=ids.dtype) for _ in range(2))
    else:
        bag_size = kept.sum(axis=1).astype(ids.dtype)
        max_indices = bag_size.copy() if mode == 1 else _max_ids(weight.array, bag_ids, kept)
    offset2bag = xp.asarray(offset2bag.astype(ids.dtype))
    return output, *(Tensor(a, requires_grad=False) for a in (offset2bag, bag_size, max_indices))


def _sum_bookkeeping(weight, per_sample_weights, padding, n_offsets, n_bags, last):
    """What torch's CPU kernel fills in mode "sum": offset2bag only for a float64 table or
    with a ``padding_idx`` (its fast path for the other dtypes skips it), and bag_size and
    max_indices as zeros, one per offset on the forward-only path (no gradient wanted) with
    ``include_last_offset``, else one per bag. (whether offset2bag is filled, their length)"""
    weighted = getattr(per_sample_weights, "requires_grad", False)
    wanted = grad_enabled() and (weight.requires_grad or weighted)
    filled = weight.dtype == np.float64 or padding is not None
    return filled, n_offsets if last and not wanted else n_bags


def _max_ids(table, bag_ids, kept):
    """(B, E): the id (row of ``table``) that holds each bag's largest element, column by
    column, the first such in the bag; 0 for a bag with no kept id."""
    xp = backend.array_module(table)
    rows = xp.where(kept[..., None], table[bag_ids], -np.inf)  # (B, L, E)
    pick = rows.argmax(axis=1)  # (B, E)
    picked = xp.take_along_axis(bag_ids[..., None], pick[:, None, :], axis=1)[:, 0]
    return xp.where(kept.any(axis=1)[:, None], picked, 0).astype(bag_ids.dtype)


def embedding_renorm_(weight, indices, max_norm: float, norm_type: float) -> Tensor:
    """torch.embedding_renorm_: the rows of ``weight`` (V, E) that ``indices`` (integers, any
    shape) picks, each with a ``norm_type``-norm above ``max_norm``, scaled in place to
    ``max_norm`` (max_norm / (norm + 1e-7), torch's); returns ``weight``. A leaf that requires
    grad is refused outside ``no_grad``, as torch refuses it."""
    op = "embedding_renorm_"
    if not isinstance(weight, Tensor):
        raise TypeError(f"{op}: weight must be a Tensor, got {type(weight).__name__}")
    if weight.ndim != 2:
        raise RuntimeError(f"{op}: expected weight (num_embeddings, embedding_dim), got shape "
                           f"{weight.shape}")  # fmt: skip
    xp = weight.xp
    ids = indices.array if isinstance(indices, Tensor) else xp.asarray(indices)
    if ids.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: indices must be integers (Long or Int), got {ids.dtype}")
    ids = xp.unique(ids.reshape(-1))
    if ids.size and not (-weight.shape[0] <= int(ids.min()) and int(ids.max()) < weight.shape[0]):
        raise IndexError(f"{op}: indices must be in [0, {weight.shape[0]}), got "
                         f"{backend.to_host_array(ids).tolist()}")  # fmt: skip
    weight._writable(op, "F.embedding's max_norm on a copy")
    rows = weight.array[ids]
    norms = xp.linalg.norm(rows, ord=float(norm_type), axis=1).astype(np.float64)  # torch's
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return weight._write(op, (rows * scale[:, None]).astype(weight.dtype), index=ids)
