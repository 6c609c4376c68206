"""torch.nn.utils.rnn: sequences of different lengths as one batch, padded or packed.

``pad_sequence`` is what a ``collate_fn`` for a recurrent model makes::

    batch = pad_sequence([x1, x2, x3], batch_first=True)  # (3, longest, *)

Each sequence (L_i, *) is padded along its first axis to the longest length (``F.pad``,
whose backward hands each sequence back its own positions), and the padded ones are stacked
on a new axis: (longest, B, *), or (B, longest, *) with ``batch_first``.

A ``PackedSequence`` holds the same batch without the padding, as PyTorch's RNN tutorials
hand it to ``nn.LSTM``/``nn.GRU``/``nn.RNN``::

    packed = pack_padded_sequence(batch, lengths, batch_first=True, enforce_sorted=False)
    out, (h_n, c_n) = lstm(packed)  # out: a PackedSequence; h_n: each sequence's last state
    out, lengths = pad_packed_sequence(out, batch_first=True)

Its ``data`` (L_1 + ... + L_B, *) lists the sequences time step by time step: at step t the
``batch_sizes[t]`` sequences still running, longest first, so that a recurrent step reads
one contiguous block. The sequences are sorted by decreasing length (stably) unless they
came sorted (``enforce_sorted``): ``sorted_indices`` says which input sequence each sorted
one is, ``unsorted_indices`` undoes it. Each function here is one ``getitem`` of its input
with an index built on the host from the lengths, so it is exact and its gradient is the
gather's: every value goes back to where it came from, padding gets none.
"""

from typing import NamedTuple

import numpy as np

from tricycle import backend, checks, ops
from tricycle.nn.padding import pad
from tricycle.tensor import Tensor, as_tensor

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:  # fmt: skip
    """The sequences (each (L_i, *), the same trailing shape) padded with ``padding_value`` on
    ``padding_side`` ("right" or "left") to the longest and stacked: (L, B, *), or (B, L, *)
    with ``batch_first``, as torch's; differentiable in every sequence."""
    op = "pad_sequence"
    checks.boolean(op, "batch_first", batch_first)
    checks.real(op, "padding_value", padding_value)
    checks.one_of(("right", "left"))(op, "padding_side", padding_side)
    sequences = _sequences(op, sequences)
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        short = longest - s.shape[0]
        first = (0, short) if padding_side == "right" else (short, 0)  # (before, after)
        pads = (0, 0) * (s.ndim - 1) + first  # F.pad's order: the last axis first
        padded.append(pad(s, pads, value=padding_value) if short else s)
    return ops.stack(padded, axis=0 if batch_first else 1)


# ====================================================================== the packed batch
class _Fields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_Fields):
    """A batch of sequences without padding, as ``torch.nn.utils.rnn.PackedSequence``: a
    named tuple (data, batch_sizes, sorted_indices, unsorted_indices).

    ``data`` (sum L_i, *) holds the sorted sequences' steps, time-major; ``batch_sizes`` (T,)
    (host int64) how many sequences run at each step; ``sorted_indices`` (B,) (int64, on the
    data's device) the input position of each sorted sequence, or None when they came sorted;
    ``unsorted_indices`` its inverse (computed when not given). Make one with
    ``pack_padded_sequence`` or ``pack_sequence``."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # torch's other form: PackedSequence((data, batch_sizes))
            if not (isinstance(data, tuple | list) and len(data) == 2):
                checks.fail("PackedSequence", "data", "a Tensor with batch_sizes, or a pair "
                            "(data, batch_sizes)", type(data).__name__, TypeError)  # fmt: skip
            data, batch_sizes = data
        data = as_tensor(data)
        batch_sizes = _batch_sizes_tensor(batch_sizes, data)
        B = int(batch_sizes.array[0])  # the batch: all sequences run at the first step
        if sorted_indices is not None:
            sorted_indices = _indices_tensor("sorted_indices", sorted_indices, data, B)
            if unsorted_indices is None:
                order = backend.to_host_array(sorted_indices.array)
                unsorted_indices = _host_to(data, _inverse(order))
        if unsorted_indices is not None:
            unsorted_indices = _indices_tensor("unsorted_indices", unsorted_indices, data, B)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """``data.to(...)`` (a device, a dtype or both, as ``Tensor.to``) with the indices on
        the data's new device and ``batch_sizes`` on the host; ``self`` if nothing moves."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        moved = [None if i is None else i.to(data.device) for i in self[2:]]
        return type(self)(data, self.batch_sizes, *moved)

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def cuda(self, device: int = 0) -> "PackedSequence":
        return self.to(device)

    def to_gpu(self, device: int = 0) -> "PackedSequence":
        """Move the data and the indices to GPU ``device`` in place (``Tensor.to_gpu``)."""
        for t in (self.data, self.sorted_indices, self.unsorted_indices):
            if t is not None:
                t.to_gpu(device)
        return self

    def from_gpu(self) -> "PackedSequence":
        """Move the data and the indices to host memory in place (``Tensor.from_gpu``)."""
        for t in (self.data, self.sorted_indices, self.unsorted_indices):
            if t is not None:
                t.from_gpu()
        return self

    @property
    def is_cuda(self) -> bool:
        return self.data.on_gpu


# ====================================================================== pack and unpack
def pack_padded_sequence(input, lengths, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:  # fmt: skip
    """The padded batch ``input`` (T, B, *), or (B, T, *) with ``batch_first``, packed: the
    first ``lengths[i]`` steps of sequence i, as torch's. With ``enforce_sorted`` the lengths
    must not increase (``sorted_indices`` is then None); else the sequences are sorted by
    decreasing length first (stably, as torch's sort). Steps past a length are left out."""
    op = "pack_padded_sequence"
    checks.boolean(op, "batch_first", batch_first)
    checks.boolean(op, "enforce_sorted", enforce_sorted)
    input = as_tensor(input)  # noqa: A001
    if input.ndim < 2:
        layout = "(batch, time, *)" if batch_first else "(time, batch, *)"
        raise ValueError(f"{op}: expected a padded batch {layout}, got shape {input.shape}")
    T, B = input.shape[1::-1] if batch_first else input.shape[:2]
    lengths = _lengths(op, lengths, B, T)
    if enforce_sorted:
        if (np.diff(lengths) > 0).any():
            raise ValueError(
                f"{op}: lengths {lengths.tolist()} must not increase with enforce_sorted=True "
                "(pass enforce_sorted=False to sort them)"
            )
        order = np.arange(B)
    else:
        order = np.argsort(-lengths, kind="stable")  # longest first; ties keep their order
    batch_sizes = _batch_sizes(lengths[order])
    steps, columns = _packed_positions(batch_sizes)  # (sum L_i,) each
    index = (order[columns], steps) if batch_first else (steps, order[columns])
    data = input[tuple(input.xp.asarray(i) for i in index)]  # (sum L_i, *)
    sorted_indices = None if enforce_sorted else _host_to(input, order)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):  # fmt: skip
    """(padded, lengths): the packed batch as a padded one, (T, B, *) or (B, T, *) with
    ``batch_first``, in the order it was packed from, ``padding_value`` past each length, T
    the longest length or ``total_length``; ``lengths`` (B,) host int64. As torch's."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        checks.fail(op, "sequence", "a PackedSequence", type(sequence).__name__, TypeError)
    checks.boolean(op, "batch_first", batch_first)
    checks.real(op, "padding_value", padding_value)
    data, sizes = sequence.data, sequence.batch_sizes.array
    checks.integer(op, "total_length", total_length, optional=True)
    T = len(sizes) if total_length is None else total_length
    if T < len(sizes):
        raise ValueError(f"{op}: total_length must be at least the longest length "
                         f"{len(sizes)}, got total_length={T}")  # fmt: skip
    sizes = np.pad(sizes, (0, T - len(sizes)))  # (T,): none run past the longest length
    starts = np.cumsum(sizes) - sizes  # (T,): each step's first row
    b = np.arange(sizes[0])[None, :]  # (1, B): the sorted sequences
    running = b < sizes[:, None]  # (T, B): inside a sequence
    rows = np.where(running, starts[:, None] + b, 0)  # (T, B): the row of data, or any one
    lengths = running.sum(axis=0)  # (B,), sorted
    if sequence.unsorted_indices is not None:  # the columns back in the input's order
        unsorted = backend.to_host_array(sequence.unsorted_indices.array)
        rows, running, lengths = rows[:, unsorted], running[:, unsorted], lengths[unsorted]
    if batch_first:
        rows, running = rows.T, running.T
    xp = data.xp
    padded = data[xp.asarray(rows)]  # (T, B, *) or (B, T, *)
    if not running.all():
        mask = xp.asarray(~running).reshape(running.shape + (1,) * (data.ndim - 1))
        padded = ops.masked_fill(padded, mask, padding_value)
    return padded, Tensor(lengths.astype(np.int64), requires_grad=False)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """The sequences (each (L_i, *)) packed: ``pad_sequence`` then ``pack_padded_sequence``,
    as torch's."""
    sequences = _sequences("pack_sequence", sequences)
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list[Tensor]:
    """The padded batch (T, B, *), or (B, T, *) with ``batch_first``, back as the B
    sequences (L_i, *), as torch's."""
    op = "unpad_sequence"
    checks.boolean(op, "batch_first", batch_first)
    padded = as_tensor(padded_sequences)
    if padded.ndim < 2:
        raise ValueError(f"{op}: expected a padded batch of at least 2 axes, got {padded.shape}")
    T, B = padded.shape[1::-1] if batch_first else padded.shape[:2]
    lengths = _lengths(op, lengths, B, T, empty=True)
    if batch_first:
        return [padded[i, :n] for i, n in enumerate(lengths.tolist())]
    return [padded[:n, i] for i, n in enumerate(lengths.tolist())]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The packed batch back as its sequences (L_i, *), in the order they were packed from:
    each one gather of its rows of ``data``, as torch's."""
    op = "unpack_sequence"
    if not isinstance(packed_sequences, PackedSequence):
        checks.fail(op, "packed_sequences", "a PackedSequence",
                    type(packed_sequences).__name__, TypeError)  # fmt: skip
    data, sizes = packed_sequences.data, packed_sequences.batch_sizes.array
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # (T,)
    order = np.arange(sizes[0])  # the sorted sequences, in the input's order
    if packed_sequences.unsorted_indices is not None:
        order = backend.to_host_array(packed_sequences.unsorted_indices.array)
    return [data[data.xp.asarray(starts[sizes > b] + b)] for b in order.tolist()]


# ====================================================================== host-side indices
def _sequences(op: str, sequences) -> list[Tensor]:
    """The sequences as Tensors (L_i, *) of one trailing shape; a clear error otherwise."""
    sequences = [as_tensor(s) for s in sequences]
    if not sequences:
        raise ValueError(f"{op}: expected at least one sequence, got none")
    trailing = {s.shape[1:] for s in sequences}
    if any(s.ndim == 0 for s in sequences) or len(trailing) > 1:
        shapes = [s.shape for s in sequences]
        raise ValueError(f"{op}: expected sequences (L_i, *) of one trailing shape, got the "
                         f"shapes {shapes}")  # fmt: skip
    return sequences


def _lengths(op: str, lengths, B: int, T: int, empty: bool = False) -> np.ndarray:
    """``lengths`` (a list, array or Tensor of B integers) on the host as int64, each in
    [1, T] ([0, T] if ``empty``)."""
    values = backend.to_host_array(getattr(lengths, "array", lengths))
    values = np.asarray(values)
    if values.ndim != 1 or (values.size and values.dtype.kind not in "iu"):
        checks.fail(op, "lengths", "a 1-D sequence of integers", lengths, TypeError)
    if values.size != B:
        raise ValueError(f"{op}: expected {B} lengths (the batch size), got {values.size}")
    low = 0 if empty else 1
    if values.size and (values.min() < low or values.max() > T):
        raise ValueError(f"{op}: every length must be in [{low}, {T}] (T, the padded length), "
                         f"got lengths {values.tolist()}")  # fmt: skip
    return values.astype(np.int64)


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """How many of the sorted ``lengths`` (B,) run at each step: (T,) int64."""
    return (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(axis=1).astype(np.int64)


def _packed_positions(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(step, sorted column) of each row of the packed data: (sum L_i,) each."""
    steps = np.repeat(np.arange(len(batch_sizes)), batch_sizes)
    starts = np.cumsum(batch_sizes) - batch_sizes  # (T,): each step's first row
    return steps, np.arange(len(steps)) - starts[steps]


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """torch.nn.utils.rnn.invert_permutation: the inverse of the 1-d int64 ``permutation``
    (inverse[permutation[i]] = i: a PackedSequence's ``unsorted_indices`` from its
    ``sorted_indices``), on its device; None for None. Errors as torch's (its scatter's)."""
    op = "invert_permutation"
    if permutation is None:
        return None
    checks.instance(Tensor)(op, "permutation", permutation)
    if str(permutation.dtype) != "int64":
        raise RuntimeError(f"{op}: expected an int64 permutation, got {permutation.dtype}")
    if permutation.ndim != 1:
        raise IndexError(f"{op}: expected a 1-d permutation, got shape {permutation.shape}")
    p, n = permutation.array, permutation.shape[0]
    if n and (int(p.min()) < 0 or int(p.max()) >= n):
        raise RuntimeError(f"{op}: the permutation's values must be in [0, {n}), got "
                           f"{int(p.min())} to {int(p.max())}")  # fmt: skip
    inverse = permutation.xp.empty_like(p)
    inverse[p] = permutation.xp.arange(n)
    return Tensor(inverse, requires_grad=False)


def _inverse(order: np.ndarray) -> np.ndarray:
    """The inverse permutation: inverse[order[i]] = i."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return inverse


def _host_to(like: Tensor, array: np.ndarray) -> Tensor:
    """The int64 host ``array`` as a constant Tensor on ``like``'s device."""
    return Tensor(like.xp.asarray(array.astype(np.int64)), requires_grad=False)


def _batch_sizes_tensor(batch_sizes, data: Tensor) -> Tensor:
    """``batch_sizes`` (a host Tensor, array or list) as a host int64 Tensor (itself if it is
    one), checked against data."""
    op = "PackedSequence"
    array = getattr(batch_sizes, "array", batch_sizes)
    if backend.is_cupy_array(array):
        raise ValueError(f"{op}: batch_sizes must be on the host (a CPU int64 tensor), as "
                         "pack_padded_sequence makes it; got it on the GPU")  # fmt: skip
    sizes = np.asarray(array)
    if sizes.ndim != 1 or not sizes.size or (sizes.dtype.kind not in "iu"):
        checks.fail(op, "batch_sizes", "a non-empty 1-D sequence of integers", batch_sizes,
                    TypeError)  # fmt: skip
    fits = data.ndim >= 1 and sizes.sum() == data.shape[0]
    if sizes.min() < 1 or (np.diff(sizes) > 0).any() or not fits:
        raise ValueError(f"{op}: batch_sizes must be positive and not increasing, summing to "
                         f"data's first axis; got {sizes.tolist()} with data of shape "
                         f"{data.shape}")  # fmt: skip
    if isinstance(batch_sizes, Tensor) and sizes.dtype == np.int64:
        return batch_sizes
    return Tensor(sizes.astype(np.int64), requires_grad=False)


def _indices_tensor(name: str, indices, data: Tensor, B: int) -> Tensor:
    """A permutation of range(B) as an int64 Tensor on the data's device."""
    expected = f"a permutation of range({B}) (B = batch_sizes[0]) of int64"
    if isinstance(indices, Tensor) and indices.device == data.device:  # as the packing made it
        if indices.shape != (B,) or indices.dtype != np.int64:
            checks.fail("PackedSequence", name, expected, f"shape {indices.shape} {indices.dtype}")
        return indices
    array = np.asarray(backend.to_host_array(getattr(indices, "array", indices)))
    if array.shape != (B,) or sorted(array.tolist()) != list(range(B)):
        checks.fail("PackedSequence", name, expected, array.tolist())
    return _host_to(data, array)
