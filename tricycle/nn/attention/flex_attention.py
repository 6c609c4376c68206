"""torch.nn.attention.flex_attention, run eagerly: attention whose scores a Python function
edits (``score_mod``) and whose visible keys another picks (``mask_mod``, in a ``BlockMask``).

    S = q k^T * scale                      (B, H, Q, KV)
    S = score_mod(S, b, h, q_idx, kv_idx)  where mask_mod(b, h, q_idx, kv_idx), else -inf
    out = softmax(S) v                     lse = logsumexp(S) over the keys

This is torch's eager path (what it runs without ``torch.compile``), not its fused kernel: the
whole score matrix is built from tricycle's differentiable ops, so gradients reach q, k and v
(and any tensor ``score_mod`` reads, such as a learned bias) by the usual backward. Each of
``score_mod`` and ``mask_mod`` is called ONCE on broadcast index tensors (int64): ``b``
(B, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, Q, 1) and ``kv_idx`` (1, 1, 1, KV), so a
function written for one element (``q_idx >= kv_idx``, ``score + slope[h] * (kv_idx - q_idx)``,
``doc[q_idx] == doc[kv_idx]``) works as written; one that branches on a value in Python
(``if q_idx > 3``) does not, as under torch's vmap.

As torch's: a query that sees no key gets output 0 and lse -inf; half-precision inputs are
scored in float32 (the output in the query's dtype); ``enable_gqa=True`` lets H be a multiple
of the key/value heads; a key/value batch of 1 serves a larger query batch given a block mask
of that batch. ``create_block_mask`` records the mask's block structure
(``to_dense``, ``sparsity``, ``kv_num_blocks``...) as torch's, for the same numbers; the
attention itself reads only ``mask_mod``, as torch's eager path, so nothing is skipped.
"""

import math
from typing import NamedTuple

from tricycle import backend
from tricycle.tensor import Tensor, as_tensor
from tricycle.torch_functions import where

__all__ = ["AuxOutput", "AuxRequest", "BlockMask", "and_masks", "create_block_mask",
           "create_mask", "flex_attention", "noop_mask", "or_masks"]  # fmt: skip

_DEFAULT_SPARSE_BLOCK_SIZE = 128


class AuxRequest(NamedTuple):
    """Which auxiliary outputs ``flex_attention(..., return_aux=)`` returns."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The auxiliary outputs asked for (None where not asked): the log-sum-exp of each
    query's scores and their maximum, both (B, H, Q) in float32 (float64 for float64)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(b, h, q_idx, kv_idx):
    """The mask that hides nothing: True for every query and key."""
    return _full_like(q_idx, kv_idx, True)


def _full_like(q_idx, kv_idx, value: bool):
    q_idx, kv_idx = as_tensor(q_idx), as_tensor(kv_idx)
    shape = backend.array_module(q_idx.array).broadcast_shapes(q_idx.shape, kv_idx.shape)
    return q_idx.new(q_idx.xp.full(shape, value))


def and_masks(*mask_mods):
    """A mask_mod that is True where every one of ``mask_mods`` is (noop_mask for none)."""
    _check_mods("and_masks", mask_mods)

    def and_mask(b, h, q_idx, kv_idx):
        seen = noop_mask(b, h, q_idx, kv_idx)
        for mask_mod in mask_mods:
            seen = seen & mask_mod(b, h, q_idx, kv_idx)
        return seen

    return and_mask


def or_masks(*mask_mods):
    """A mask_mod that is True where any one of ``mask_mods`` is (all False for none)."""
    _check_mods("or_masks", mask_mods)

    def or_mask(b, h, q_idx, kv_idx):
        seen = _full_like(q_idx, kv_idx, False)
        for mask_mod in mask_mods:
            seen = seen | mask_mod(b, h, q_idx, kv_idx)
        return seen

    return or_mask


def _check_mods(op: str, mods) -> None:
    for mod in mods:
        if not callable(mod):
            raise RuntimeError(f"{op}: all inputs should be callable mask_mods, got {mod!r}")


def _indices(xp, B: int, H: int, Q: int, KV: int) -> tuple:
    """b, h, q_idx, kv_idx: aranges (int64) along the four axes, broadcastable together."""
    return tuple(
        Tensor(xp.arange(n).reshape([n if axis == i else 1 for axis in range(4)]))
        for i, n in enumerate((B, H, Q, KV))
    )


def _is_score_mod(fn) -> bool:
    """torch's rule: five positional parameters (without defaults) make a score_mod, four a
    mask_mod."""
    code = getattr(fn, "__code__", None)
    if code is None:
        import inspect

        return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                   for p in inspect.signature(fn).parameters.values()) == 5  # fmt: skip
    return code.co_argcount - len(getattr(fn, "__defaults__", None) or ()) == 5


def _xp_of(device):
    index = backend.parse_device("cpu" if device is None else device, "create_mask")
    if index is None:
        return backend.np
    with backend.cupy().cuda.Device(index):
        return backend.cupy()


def _seen(mask_mod, b, h, q_idx, kv_idx, shape) -> Tensor:
    seen = as_tensor(mask_mod(b, h, q_idx, kv_idx))
    if seen.dtype != bool:
        raise TypeError(f"flex_attention: a mask_mod must return booleans, got {seen.dtype}")
    return seen.new(seen.xp.broadcast_to(seen.array, shape))


def create_mask(mod_fn, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device=None):
    """The (B, H, Q_LEN, KV_LEN) boolean mask of a mask_mod (its values) or of a score_mod
    (False where it turns a zero score into -inf), B and H of None counting as 1. ``device``:
    the CPU by default (torch's default is its accelerator)."""
    B, H = B or 1, H or 1
    xp = _xp_of(device)
    b, h, q_idx, kv_idx = _indices(xp, B, H, Q_LEN, KV_LEN)
    shape = (B, H, Q_LEN, KV_LEN)
    if _is_score_mod(mod_fn):
        out = as_tensor(mod_fn(Tensor(xp.zeros(shape, dtype=xp.float32)), b, h, q_idx, kv_idx))
        return Tensor(xp.broadcast_to(~xp.isneginf(out.array), shape).copy())
    seen = _seen(mod_fn, b, h, q_idx, kv_idx, shape)
    return seen.new(seen.array.copy())


class BlockMask:
    """A mask_mod with its block structure, as torch's: which tiles (``BLOCK_SIZE``) of the
    (Q_LEN, KV_LEN) score matrix hold a visible score. Partial tiles are in ``kv_num_blocks``
    and ``kv_indices``, tiles seen whole in ``full_kv_num_blocks`` and ``full_kv_indices``:
    (B, H, Q tiles) counts and (B, H, Q tiles, KV tiles) indices, int32, the listed ones
    first. Made by ``create_block_mask``."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                 BLOCK_SIZE: tuple, mask_mod, seq_lengths: tuple):  # fmt: skip
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.BLOCK_SIZE, self.mask_mod = tuple(BLOCK_SIZE), mask_mod
        self.seq_lengths = tuple(seq_lengths)
        self.shape = (*kv_indices.shape[:2], *self.seq_lengths)

    def to_dense(self) -> Tensor:
        """The (B, H, Q tiles, KV tiles) int32 map of the tiles computed (1) or skipped (0)."""
        xp = self.kv_indices.xp
        dense = xp.zeros(self.kv_indices.shape, dtype=xp.int32)
        for counts, indices in ((self.kv_num_blocks, self.kv_indices),
                                (self.full_kv_num_blocks, self.full_kv_indices)):  # fmt: skip
            listed = xp.arange(indices.shape[-1]) < counts.array[..., None]
            tiles = xp.zeros_like(dense)
            xp.put_along_axis(tiles, indices.array.astype(xp.int64), listed.astype(xp.int32), -1)
            dense |= tiles
        return Tensor(dense)

    def numel(self) -> int:
        """Elements of the full mask, B * H * Q_LEN * KV_LEN (sparsity aside)."""
        return math.prod(self.shape)

    def sparsity(self) -> float:
        """The percentage of the score matrix in tiles that are skipped (not computed)."""
        blocks = int(self.kv_num_blocks.array.sum()) + int(self.full_kv_num_blocks.array.sum())
        return 100 * (1 - blocks * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def __repr__(self) -> str:
        return f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%)"


def _ordered(xp, seen) -> tuple:
    """Counts and indices of the True tiles of each row, those first (a stable order)."""
    counts = seen.sum(axis=-1).astype(xp.int32)
    indices = xp.argsort(~seen, axis=-1, kind="stable").astype(xp.int32)
    return Tensor(counts), Tensor(indices)


def create_block_mask(mask_mod, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                      device=None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile=False,
                      **unused) -> BlockMask:  # fmt: skip
    """torch's ``create_block_mask``: the BlockMask of ``mask_mod`` for (B, H, Q_LEN, KV_LEN)
    (B or H None: 1, broadcast over any batch or head), in tiles of BLOCK_SIZE (an int or a
    (Q, KV) pair; the last tiles may be ragged). ``device``: the CPU by default."""
    if _is_score_mod(mask_mod):
        raise RuntimeError(
            "create_block_mask: got a score_mod (five arguments); a block mask needs a "
            "mask_mod(b, h, q_idx, kv_idx) -> booleans"
        )
    bq, bk = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    mask = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device).array
    xp = backend.array_module(mask)
    nq, nk = -(-Q_LEN // bq), -(-KV_LEN // bk)
    tiles = (*mask.shape[:2], nq, bq, nk, bk)
    # ragged last tiles are padded with hidden places, as torch's: never seen whole
    seen = xp.zeros((*mask.shape[:2], nq * bq, nk * bk), dtype=bool)
    seen[..., :Q_LEN, :KV_LEN] = mask
    some, whole = seen.reshape(tiles).any(axis=(3, 5)), seen.reshape(tiles).all(axis=(3, 5))
    return BlockMask(*_ordered(xp, some & ~whole), *_ordered(xp, whole), (bq, bk), mask_mod,
                     (Q_LEN, KV_LEN))  # fmt: skip


def _check(query, key, value, enable_gqa: bool, block_mask) -> None:
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise NotImplementedError(
            f"NYI: query, key, and value must be 4D tensors (flex_attention: got shapes "
            f"{query.shape}, {key.shape} and {value.shape})"
        )
    if not (query.dtype == key.dtype == value.dtype):
        raise ValueError(
            f"Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead."
        )
    if key.shape[:3] != value.shape[:3] or query.shape[-1] != key.shape[-1]:
        raise ValueError(f"flex_attention: query {query.shape}, key {key.shape} and value "
                         f"{value.shape} do not fit: key and value need the same (B, Hkv, S), "
                         "query and key the same E")  # fmt: skip
    Bq, Bkv = query.shape[0], key.shape[0]
    if Bq != Bkv and (block_mask is None or block_mask.shape[0] != Bq):
        raise ValueError(
            f"Expect query and key/value to have the same batch size, or a block_mask of the "
            f"query's batch size, but got Bq={Bq}, Bkv={Bkv} and block_mask's "
            f"{None if block_mask is None else block_mask.shape[0]}"
        )
    if not (Bq == Bkv or Bkv == 1):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={Bq} and Bkv={Bkv}")
    Hq, Hkv = query.shape[1], key.shape[1]
    if Hq != Hkv and not enable_gqa:
        raise ValueError(
            f"Expect query and key/value to have the same number of heads but got "
            f"Hq={Hq} and Hkv={Hkv}. Try setting enable_gqa=True for GQA."
        )
    if Hq % Hkv:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA "
                         f"but got Hq={Hq} and Hkv={Hkv}.")  # fmt: skip


def flex_attention(query, key, value, score_mod=None, block_mask: BlockMask | None = None,
                   scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options=None, *, return_aux=None):  # fmt: skip
    """Attention of query (B, Hq, L, E) over key (B, Hkv, S, E) and value (B, Hkv, S, Ev)
    -> (B, Hq, L, Ev), as torch's flex_attention (see the module docstring): ``score_mod``
    edits the scaled scores, ``block_mask``'s ``mask_mod`` hides keys, ``scale`` defaults
    to 1 / sqrt(E). ``return_lse=True`` (torch's older form) returns (out, lse);
    ``return_aux=AuxRequest(lse=..., max_scores=...)`` returns (out, AuxOutput).
    ``kernel_options`` tune torch's fused kernel and are ignored here."""
    query, key, value = as_tensor(query), as_tensor(key), as_tensor(value)
    _check(query, key, value, bool(enable_gqa), block_mask)
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux")
    B, H, L, E = query.shape
    S = key.shape[2]
    if block_mask is not None and tuple(block_mask.seq_lengths) != (L, S):
        raise ValueError(
            f"flex_attention: block_mask was made for (Q_LEN, KV_LEN) = "
            f"{tuple(block_mask.seq_lengths)}, the inputs have ({L}, {S})"
        )
    scale = 1 / math.sqrt(E) if scale is None else scale
    if H != key.shape[1]:  # GQA: query head h reads key/value head h // (Hq / Hkv)
        groups = H // key.shape[1]
        key, value = key.repeat_interleave(groups, dim=1), value.repeat_interleave(groups, dim=1)
    working = query.dtype if query.dtype.itemsize >= 4 else backend.np.dtype("float32")
    scores = (query.to(working) @ key.to(working).transpose(-1, -2)) * scale  # (B, H, L, S)
    b, h, q_idx, kv_idx = _indices(query.xp, B, H, L, S)
    if score_mod is not None:
        scores = as_tensor(score_mod(scores, b, h, q_idx, kv_idx))
        scores = scores.expand(B, H, L, S) if scores.shape != (B, H, L, S) else scores
    if block_mask is not None:
        seen = _seen(block_mask.mask_mod, b, h, q_idx, kv_idx, (B, H, L, S))
        scores = where(seen, scores, -math.inf)
    xp = scores.xp
    top = scores.array.max(axis=-1, keepdims=True)  # a constant shift: the softmax ignores it
    top = xp.where(xp.isneginf(top), 0, top)
    exps = (scores - top).exp()  # hidden keys: exp(-inf) = 0
    total = exps.sum(dim=-1, keepdim=True)
    empty = total.array == 0  # a query that sees no key: output 0, lse -inf
    total = total + empty.astype(total.dtype)
    out = ((exps / total).to(query.dtype) @ value).to(query.dtype)  # bfloat16: in float32
    lse = where(Tensor(empty[..., 0]), -math.inf, total.log()[..., 0] + top[..., 0])
    if return_lse:
        return out, lse
    if return_aux is None:
        return out
    max_scores = Tensor(scores.array.max(axis=-1)) if return_aux.max_scores else None
    return out, AuxOutput(lse if return_aux.lse else None, max_scores)
