"""Bags of embeddings reduced to one vector each, as PyTorch's ``nn.EmbeddingBag`` and
``F.embedding_bag``: the sum, mean or max of the rows of a table that a bag of ids picks,
without making the (ids, E) rows of every bag a user-visible tensor first.

The bags come as a 2-D input (B, L), one bag of L ids per row, or as a 1-D input of every
bag's ids one after the other with ``offsets`` (B,), where each bag starts (the next bag's
offset, or the input's end, is where it stops; with ``include_last_offset`` offsets has B + 1
entries, the last one the end of the last bag). An id equal to ``padding_idx`` is left out of
its bag: it adds nothing and does not count in the mean. An empty bag gives zeros.

Each bag's ids are laid out as a row of a (B, L) table of positions, L the longest bag, the
shorter bags padded with positions that are left out. The rows they pick, (B, L, E), come
from ``tricycle.layers.embedding`` (which checks the ids' range and scatters the gradient
back into the table), then::

    sum, mean:  out[b] = sum over l of c[b, l] rows[b, l]     one einsum, "bl,ble->be"
    max:        out[b, e] = max over l of rows[b, l, e]

where c is 1 for each id kept (``per_sample_weights`` in mode "sum": that id's weight) and
1 / (the number kept) in mode "mean", 0 for the ids left out. The einsum's gradient reaches
the table and the per-sample weights alike; the max sends each element's gradient to the
first largest of its bag, as torch's does.
"""

import numpy as np

from tricycle import backend, checks
from tricycle.backend import check_same_device
from tricycle.einsum import einsum
from tricycle.embedding_layer import padding_row
from tricycle.initialisers import init_normal
from tricycle.layers import Layer, embedding
from tricycle.module import parameter
from tricycle.tensor import Tensor, as_tensor, check_float

__all__ = ["EmbeddingBag", "embedding_bag"]

MODES = ("sum", "mean", "max")


def check_settings(op: str, mode, max_norm, scale_grad_by_freq, sparse) -> None:
    """Raise for a mode that is not torch's, or a setting of torch's that tricycle lacks."""
    checks.one_of(MODES)(op, "mode", mode)
    if max_norm is not None:
        raise ValueError(f"{op}: max_norm is not supported (it renormalises the table in "
                         f"place), got {max_norm!r}")  # fmt: skip
    if checks.boolean(op, "scale_grad_by_freq", scale_grad_by_freq):
        raise ValueError(f"{op}: scale_grad_by_freq=True is not supported")
    if checks.boolean(op, "sparse", sparse):
        raise ValueError(f"{op}: sparse=True is not supported: tricycle's gradients are dense")


def _integers(op: str, name: str, values, xp):
    """``values`` (a Tensor, an array or a list) as an integer array, or a TypeError."""
    values = values.array if isinstance(values, Tensor) else values
    values = values if hasattr(values, "dtype") else xp.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{op}: {name} must be integers, got dtype {values.dtype} with shape "
                        f"{values.shape}")  # fmt: skip
    return values


def bag_slots(op: str, offsets: np.ndarray, n_ids: int, include_last_offset: bool):
    """(slots, kept), each (B, L), on the host: the position in the ids of each bag's l-th
    id, and whether there is one (a bag shorter than the longest, L, is padded with
    position 0). ``offsets`` as torch's; checked to start at 0 and never go back or past
    the end."""
    if include_last_offset and len(offsets) == 0:
        raise ValueError(f"{op}: include_last_offset=True needs at least one offset")
    if len(offsets) and (offsets[0] != 0 or (np.diff(offsets) < 0).any() or offsets[-1] > n_ids):
        raise ValueError(
            f"{op}: offsets must start at 0, never decrease and end at most at the number of "
            f"ids ({n_ids}), got {offsets.tolist()}"
        )
    starts = offsets[:-1] if include_last_offset else offsets
    ends = offsets[1:] if include_last_offset else np.append(offsets[1:], n_ids)
    lengths = ends - starts  # (B,)
    longest = max(int(lengths.max(initial=0)), 1)
    kept = np.arange(longest) < lengths[:, None]  # (B, L)
    return np.where(kept, starts[:, None] + np.arange(longest), 0), kept


def bag_max(rows: Tensor, kept) -> Tensor:
    """(B, E): the largest of each bag's kept rows (B, L, E), element by element, zeros for a
    bag with none; the gradient goes to the first largest, as torch's."""
    xp = rows.xp
    masked = xp.where(kept[..., None], rows.array, -np.inf)
    pick = masked.argmax(axis=1)  # (B, E): the first largest
    bags, columns = xp.arange(rows.shape[0])[:, None], xp.arange(rows.shape[2])[None, :]
    filled = kept.any(axis=1)[:, None]  # (B, 1): a bag with something in it
    out = xp.where(filled, masked[bags, pick, columns], 0).astype(rows.dtype, copy=False)

    def back_fn(dout):
        drows = xp.zeros(rows.shape, dtype=dout.dtype)
        drows[bags, pick, columns] = dout * filled
        return drows

    return Tensor(out, args=(rows,), back_fns=(back_fn,), name="embedding_bag max")


def embedding_bag(
    input,  # noqa: A002 - torch's names
    weight: Tensor,
    offsets=None,
    max_norm=None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of the rows of ``weight`` (V, E) picked by each bag of ids,
    (B, E), as ``torch.nn.functional.embedding_bag`` (see the module's docstring).
    ``per_sample_weights`` (the input's shape) weighs each id, in mode "sum" only."""
    op = "F.embedding_bag"
    weight = as_tensor(weight)
    check_float(op, weight)
    check_settings(op, mode, max_norm, scale_grad_by_freq, sparse)
    checks.boolean(op, "include_last_offset", include_last_offset)
    if weight.ndim != 2:
        raise ValueError(f"{op}: expected weight (num_embeddings, embedding_dim), got shape "
                         f"{weight.shape}")  # fmt: skip
    xp = weight.xp
    padding = padding_row(padding_idx, weight.shape[0], op)
    ids = _integers(op, "input", input, xp)
    check_same_device(op, ids, weight.array)
    weights = None if per_sample_weights is None else as_tensor(per_sample_weights)
    if weights is not None:
        if mode != "sum":
            raise ValueError(f"{op}: per_sample_weights is only for mode 'sum', not {mode!r}")
        if weights.shape != ids.shape or weights.dtype != weight.dtype:
            raise ValueError(f"{op}: per_sample_weights ({weights.shape}, {weights.dtype}) must "
                             f"have the input's shape {ids.shape} and the weight's dtype "
                             f"{weight.dtype}")  # fmt: skip
    if ids.ndim == 2:  # (B, L): B bags of L ids, as a 1-D input with offsets 0, L, 2L, ...
        if offsets is not None:
            raise ValueError(f"{op}: a 2-D input (bags, ids) takes no offsets, got offsets")
        starts = np.arange(ids.shape[0], dtype=np.int64) * ids.shape[1]
        ids, weights = ids.reshape(-1), None if weights is None else weights.reshape(-1)
    elif ids.ndim == 1:
        if offsets is None:
            raise ValueError(f"{op}: a 1-D input needs offsets, where each bag starts")
        starts = backend.to_host_array(_integers(op, "offsets", offsets, xp))
        if starts.ndim != 1:
            raise ValueError(f"{op}: offsets must be 1-D, got shape {starts.shape}")
    else:
        raise ValueError(f"{op}: expected input (ids,) with offsets or (bags, ids), got shape "
                         f"{ids.shape}")  # fmt: skip
    slots, kept = bag_slots(op, starts.astype(np.int64), ids.shape[0], include_last_offset)
    slots, kept = xp.asarray(slots), xp.asarray(kept)
    bag_ids = ids[slots] if ids.shape[0] else xp.zeros(slots.shape, dtype=ids.dtype)  # (B, L)
    if padding is not None:
        kept = kept & (bag_ids != padding)  # the padding id is left out of its bag
    rows = embedding(bag_ids, weight)  # (B, L, E)
    if mode == "max":
        return bag_max(rows, kept)
    share = kept.astype(weight.dtype)  # (B, L)
    if mode == "mean":
        share = share / xp.maximum(share.sum(axis=1, keepdims=True), 1)
    share = Tensor(share, requires_grad=False)
    if weights is not None and ids.shape[0]:
        share = weights[slots] * share  # each id's weight (differentiable)
    return einsum("bl,ble->be", share, rows)  # (B, E)


class EmbeddingBag(Layer):
    """A table of ``num_embeddings`` vectors of size ``embedding_dim`` reduced per bag of ids,
    as ``torch.nn.EmbeddingBag``: ``bag(input, offsets=None, per_sample_weights=None)``
    -> (B, embedding_dim) (``embedding_bag``).

    ``weight`` (num_embeddings, embedding_dim), torch's name and layout, starts as N(0, 1), as
    torch's, or is ``_weight``; row ``padding_idx`` (when given; negative counts from the
    end) starts as zeros. ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` must stay off.
    """

    @checks.arguments(
        num_embeddings=checks.positive_int,
        embedding_dim=checks.positive_int,
        include_last_offset=checks.boolean,
    )
    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight=None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ):
        op = type(self).__name__
        check_settings(op, mode, max_norm, scale_grad_by_freq, sparse)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.mode, self.include_last_offset = mode, include_last_offset
        self.padding_idx = padding_row(padding_idx, num_embeddings, op)
        shape = (num_embeddings, embedding_dim)
        if _weight is None:
            self.weight = parameter(init_normal(shape, std=1.0), "weight")
            if self.padding_idx is not None:
                self.weight.array[self.padding_idx] = 0
        else:
            self.weight = parameter(_weight, "weight")
            if self.weight.shape != shape:
                raise ValueError(f"{op}: _weight must have shape {shape}, got "
                                 f"{self.weight.shape}")  # fmt: skip

    def forward(self, input, offsets=None, per_sample_weights=None) -> Tensor:  # noqa: A002
        return embedding_bag(
            input, self.weight, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset, padding_idx=self.padding_idx,
        )  # fmt: skip

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}" + padding
