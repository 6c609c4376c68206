"""torch.nn.utils.rnn's ``pad_sequence``: sequences of different lengths as one batch, what a
``collate_fn`` for a recurrent model makes::

    batch = pad_sequence([x1, x2, x3], batch_first=True)  # (3, longest, *)

Each sequence (L_i, *) is padded along its first axis to the longest length (``F.pad``,
whose backward hands each sequence back its own positions), and the padded ones are stacked
on a new axis: (longest, B, *), or (B, longest, *) with ``batch_first``. The recurrent layers
take no ``PackedSequence``: a padded batch with a mask (or the lengths) is tricycle's way, so
``pack_padded_sequence`` is not here.
"""

from tricycle import checks, ops
from tricycle.nn.padding import pad
from tricycle.tensor import Tensor, as_tensor

__all__ = ["pad_sequence"]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:  # fmt: skip
    """The sequences (each (L_i, *), the same trailing shape) padded with ``padding_value`` on
    ``padding_side`` ("right" or "left") to the longest and stacked: (L, B, *), or (B, L, *)
    with ``batch_first``, as torch's; differentiable in every sequence."""
    op = "pad_sequence"
    checks.boolean(op, "batch_first", batch_first)
    checks.real(op, "padding_value", padding_value)
    checks.one_of(("right", "left"))(op, "padding_side", padding_side)
    sequences = [as_tensor(s) for s in sequences]
    if not sequences:
        raise ValueError(f"{op}: expected at least one sequence, got none")
    trailing = {s.shape[1:] for s in sequences}
    if any(s.ndim == 0 for s in sequences) or len(trailing) > 1:
        shapes = [s.shape for s in sequences]
        raise ValueError(f"{op}: expected sequences (L_i, *) of one trailing shape, got the "
                         f"shapes {shapes}")  # fmt: skip
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        short = longest - s.shape[0]
        first = (0, short) if padding_side == "right" else (short, 0)  # (before, after)
        pads = (0, 0) * (s.ndim - 1) + first  # F.pad's order: the last axis first
        padded.append(pad(s, pads, value=padding_value) if short else s)
    return ops.stack(padded, axis=0 if batch_first else 1)
