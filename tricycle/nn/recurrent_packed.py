"""The recurrent layers (RNN, GRU, LSTM) over a ``PackedSequence``, as PyTorch's: the output
is packed as the input was, and the final states are each sequence's own last ones.

The packed batch runs as a padded one, (T, B, I) with the sequences sorted longest first and
padding at the end, through the same recurrence (``RNNBase.stack_over_time``), which
knows nothing of lengths. Two index maps, built on the host from the lengths, make that
exact:

- the forward direction's state at step t < L_b of sequence b depends on its steps up to t
  only, so it is exact; each final state is gathered at t = L_b - 1, not at T - 1;
- the backward direction reads each sequence reversed within its own length,
  x_rev[t, b] = x[L_b - 1 - t, b] for t < L_b (the padding stays where it is), so it too
  starts at the sequence's last step and meets the padding only after its first; the same
  map (an involution) puts its states back in the input's order.

Past L_b a layer's outputs are garbage that only later padding steps read, and which the
layer above reads only past L_b too; the packed output leaves them out, so they get no
gradient. The initial states are permuted into the sorted order (``sorted_indices``) and
the final ones back (``unsorted_indices``), as torch's ``permute_hidden``.
"""

import numpy as np

from tricycle.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence
from tricycle.tensor import Tensor

__all__ = ["packed_forward"]


def packed_forward(layer, packed: PackedSequence, state=None):
    """``layer`` (an RNN, GRU or LSTM) over ``packed`` (data (sum L_b, input_size)):
    (PackedSequence of data (sum L_b, D H), h_n), the LSTM's (..., (h_n, c_n)), states
    (num_layers D, B, H) in the input's order of sequences; ``state`` likewise (zeros if
    None). ``batch_first`` plays no part: a packed batch has no batch axis."""
    data, name = packed.data, type(layer).__name__
    if data.ndim != 2 or data.shape[-1] != layer.input_size:
        raise ValueError(
            f"{name}: expected a PackedSequence of data (sum of lengths, {layer.input_size}), "
            f"got data of shape {data.shape}"
        )
    x, lengths = pad_packed_sequence(PackedSequence(data, packed.batch_sizes))  # (T, B, I)
    lengths = lengths.array  # (B,) host int64, sorted: longest first
    h0, c0 = layer._initial_state(x, state, False)  # (L D, B, H) each, the input's order
    if state is not None and packed.sorted_indices is not None:
        h0, c0 = (None if s is None else s[:, packed.sorted_indices.array] for s in (h0, c0))

    xp, (T, B) = x.xp, x.shape[:2]
    steps, columns = np.arange(T)[:, None], np.arange(B)[None, :]  # (T, 1), (1, B)
    within = np.where(steps < lengths, lengths - 1 - steps, steps)  # (T, B)
    within, columns = xp.asarray(within), xp.asarray(columns)
    ends = xp.asarray(lengths - 1)  # (B,): each sequence's last step

    def reversed_within_lengths(t: Tensor) -> Tensor:  # (T, B, *)
        return t[within, columns]

    def each_last_step(states: Tensor) -> Tensor:  # (T, B, H) or (2, T, B, H) -> (.., B, H)
        return states[..., ends, columns[0], :]

    out, finals = layer.stack_over_time(x, h0, c0, reversed_within_lengths, each_last_step)
    out = pack_padded_sequence(out, lengths).data  # (sum L_b, D H), the input's rows
    if packed.unsorted_indices is not None:  # (L D, B, H): back in the input's order
        finals = [f[:, packed.unsorted_indices.array] for f in finals]
    out = PackedSequence(out, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    return (out, finals[0]) if c0 is None else (out, tuple(finals))
