"""torch.nn.attention.bias: causal masks that ``F.scaled_dot_product_attention`` recognises.

When the queries and keys differ in length (Tq != Tk) "causal" has two alignments:

- ``causal_upper_left(Tq, Tk)``: query i sees keys j <= i, the top-left corner of a
  lower-triangular matrix (torch's ``is_causal=True``);
- ``causal_lower_right(Tq, Tk)``: query i sees keys j <= i + Tk - Tq, the queries being the
  last Tq positions of the keys (decoding with a cache of earlier keys; tricycle's own
  ``causal=True`` of ``tricycle.nn.sdpa``).

Either is a ``CausalBias``, a Tensor holding the (Tq, Tk) boolean mask (True: seen), passed
as ``attn_mask``; the attention turns it into its causal flag rather than reading the mask.
As torch's, it is refused together with ``is_causal=True``.
"""

import warnings
from enum import IntEnum

from tricycle import backend
from tricycle.tensor import Tensor

__all__ = ["CausalBias", "CausalVariant", "causal_lower_right", "causal_upper_left"]


class CausalVariant(IntEnum):
    """Where a causal mask's triangle is anchored (torch's values)."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


def causal_mask(xp, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
    """The (seq_len_q, seq_len_kv) booleans of ``variant``: query i sees key j when
    j <= i (upper left) or j <= i + seq_len_kv - seq_len_q (lower right)."""
    offset = 0 if variant == CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
    return xp.tri(seq_len_q, seq_len_kv, offset, dtype=bool)


class CausalBias(Tensor):
    """torch's CausalBias: a causal mask of one ``variant`` for ``seq_len_q`` queries and
    ``seq_len_kv`` keys (see the module docstring). Ops on it give plain Tensors."""

    __slots__ = ()

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__(causal_mask(backend.np, variant, seq_len_q, seq_len_kv))
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when "
                          "seq_len_q > seq_len_kv!", stacklevel=2)  # fmt: skip

    def new(self, *args, **kwargs) -> Tensor:
        return Tensor(*args, **kwargs)

    def _materialize(self, device=None) -> Tensor:
        """The mask as a plain boolean Tensor, on ``device`` (the CPU by default)."""
        mask = Tensor(self.array.copy())
        return mask if device is None else mask.to(device)

    def __repr__(self) -> str:
        return self._materialize().__repr__()


def _causal(name: str, variant: CausalVariant, size) -> CausalBias:
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return CausalBias(variant, *size)


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal mask of size (seq_len_q, seq_len_kv): query i sees keys j <= i."""
    return _causal("causal_upper_left", CausalVariant.UPPER_LEFT, size)


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal mask of size (seq_len_q, seq_len_kv): query i sees keys
    j <= i + seq_len_kv - seq_len_q."""
    return _causal("causal_lower_right", CausalVariant.LOWER_RIGHT, size)
