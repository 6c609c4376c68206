"""``PackedSequence`` and ``tricycle.nn.utils.rnn``'s packing against torch's in float64: the
packed data, batch sizes and indices, padding back, the gradients through both ways; the
recurrent layers over a packed batch (RNN, GRU, LSTM; two layers; one way and both; time- and
batch-first): outputs, final states and the gradients of the input, the initial state and
every parameter; finite differences; and the errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.helpers import as_float64, assert_grads_as_torch, check_grads, randn
from tricycle.nn.recurrent import GRU, LSTM, RNN
from tricycle.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    unpack_sequence,
    unpad_sequence,
)
from tricycle.tensor import Tensor

torch = pytest.importorskip("torch")
rnn = torch.nn.utils.rnn
LAYERS = {"rnn": RNN, "rnn_relu": RNN, "gru": GRU, "lstm": LSTM}
LENGTHS = [3, 5, 1, 3, 4]  # unsorted, with a tie: torch's sort keeps its order


def assert_same_packing(ours: PackedSequence, theirs, rtol: float = 0.0) -> None:
    """Data (to ``rtol``), batch sizes and both indices equal torch's."""
    np.testing.assert_allclose(ours.data.array, theirs.data.detach().numpy(), rtol, atol=0)
    np.testing.assert_array_equal(ours.batch_sizes.array, theirs.batch_sizes.numpy())
    assert ours.batch_sizes.dtype == np.int64 and not ours.batch_sizes.on_gpu
    for mine, their in zip(ours[2:], theirs[2:]):
        assert (mine is None) == (their is None)
        if mine is not None:
            np.testing.assert_array_equal(mine.array, their.numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
@pytest.mark.parametrize("trailing", [(), (3,)])
def test_pack_then_pad_match_torch_with_gradients(enforce_sorted, batch_first, trailing):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    T, B = 6, len(lengths)  # one step past the longest: padding_value everywhere there
    x = randn(*((B, T) if batch_first else (T, B)), *trailing, seed=1)
    X, t_x = Tensor(x), torch.tensor(x, requires_grad=True)
    packed = pack_padded_sequence(X, lengths, batch_first, enforce_sorted)
    t_packed = rnn.pack_padded_sequence(t_x, lengths, batch_first, enforce_sorted)
    assert_same_packing(packed, t_packed)

    padded, out_lengths = pad_packed_sequence(packed, batch_first, -2.5, total_length=T + 1)
    t_padded, t_lengths = rnn.pad_packed_sequence(t_packed, batch_first, -2.5, T + 1)
    np.testing.assert_array_equal(padded.array, t_padded.detach().numpy())
    np.testing.assert_array_equal(out_lengths.array, t_lengths.numpy())
    assert out_lengths.dtype == np.int64

    w_data, w_padded = randn(*packed.data.shape, seed=2), randn(*padded.shape, seed=3)
    ((packed.data * Tensor(w_data)).sum() + (padded * Tensor(w_padded)).sum()).backward()
    t_loss = (t_packed.data * torch.tensor(w_data)).sum()
    (t_loss + (t_padded * torch.tensor(w_padded)).sum()).backward()
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-12)  # none to padding


@given(
    lengths=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    batch_first=st.booleans(),
    extra=st.integers(0, 2),
)
def test_random_lengths_pack_and_unpack_as_torch(lengths, batch_first, extra):
    T, B = max(lengths) + extra, len(lengths)
    x = randn(*((B, T) if batch_first else (T, B)), 2, seed=len(lengths))
    packed = pack_padded_sequence(x, lengths, batch_first, enforce_sorted=False)
    t_packed = rnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first, False)
    assert_same_packing(packed, t_packed)
    padded, _ = pad_packed_sequence(packed, batch_first)
    t_padded, _ = rnn.pad_packed_sequence(t_packed, batch_first)
    np.testing.assert_array_equal(padded.array, t_padded.numpy())
    for mine, their in zip(unpack_sequence(packed), rnn.unpack_sequence(t_packed), strict=True):
        np.testing.assert_array_equal(mine.array, their.numpy())


@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
def test_pack_sequence_unpack_and_unpad_match_torch_with_gradients(enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    arrays = [randn(n, 2, seed=i) for i, n in enumerate(lengths)]
    ours = [Tensor(a) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    packed = pack_sequence(ours, enforce_sorted)
    t_packed = rnn.pack_sequence(theirs, enforce_sorted)
    assert_same_packing(packed, t_packed)
    unpacked, t_unpacked = unpack_sequence(packed), rnn.unpack_sequence(t_packed)
    batch_first = not enforce_sorted
    padded = Tensor(randn(*((len(lengths), 5) if batch_first else (5, len(lengths))), 2, seed=9))
    t_padded = torch.tensor(padded.array, requires_grad=True)
    unpadded = unpad_sequence(padded, lengths, batch_first)
    # torch's transposes its argument in place: a copy of the leaf
    t_unpadded = rnn.unpad_sequence(t_padded.clone(), torch.tensor(lengths), batch_first)
    total, t_total = 0, 0
    for i, (mine, their) in enumerate(zip(unpacked + unpadded, t_unpacked + t_unpadded)):
        np.testing.assert_array_equal(mine.array, their.detach().numpy())
        w = randn(*mine.shape, seed=20 + i)
        total, t_total = total + (mine * Tensor(w)).sum(), t_total + (their * torch.tensor(w)).sum()
    total.backward()
    t_total.backward()
    for mine, their in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.array, their.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(padded.grad.array, t_padded.grad.numpy(), rtol=1e-12)


def torch_and_ours(cell, width, H, **kwargs):
    """torch's layer in float64 and ours with its weights (copied by name)."""
    relu = {"nonlinearity": "relu"} if cell == "rnn_relu" else {}
    theirs = getattr(torch.nn, cell[:4].rstrip("_").upper())(width, H, **relu, **kwargs)
    ours = LAYERS[cell](width, H, **relu, **kwargs)
    theirs = theirs.double()
    as_float64(ours).load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return theirs, ours


@pytest.mark.parametrize("cell", sorted(LAYERS))
@pytest.mark.parametrize("bidirectional", [False, True], ids=["one-way", "bidirectional"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time-first", "batch-first"])
def test_layers_over_a_packed_batch_match_torch(cell, bidirectional, batch_first):
    """Two layers; unsorted lengths with a tie, and an initial state given, when batch-first;
    sorted lengths and zeros when time-first."""
    T, width, H, D = 5, 3, 4, 1 + bidirectional
    theirs, ours = torch_and_ours(
        cell, width, H, num_layers=2, batch_first=batch_first, bidirectional=bidirectional
    )
    lengths = LENGTHS if batch_first else sorted(LENGTHS, reverse=True)
    B = len(lengths)
    x = randn(*((B, T) if batch_first else (T, B)), width, seed=1)
    X, t_x = Tensor(x), torch.tensor(x, requires_grad=True)
    packed = pack_padded_sequence(X, lengths, batch_first, enforce_sorted=not batch_first)
    t_packed = rnn.pack_padded_sequence(t_x, lengths, batch_first, not batch_first)
    n_states = 2 if cell == "lstm" else 1
    states = [randn(2 * D, B, H, seed=2 + i) for i in range(n_states)] if batch_first else []
    S = [Tensor(s) for s in states]
    t_S = [torch.tensor(s, requires_grad=True) for s in states]
    as_state = (tuple if cell == "lstm" else lambda s: s[0]) if states else lambda s: None

    out, final = ours(packed, as_state(S))
    t_out, t_final = theirs(t_packed, as_state(t_S))
    assert isinstance(out, PackedSequence) and out.data.shape == (sum(lengths), D * H)
    assert_same_packing(out, t_out, rtol=1e-10)  # the indices and batch sizes: the input's
    finals = list(final) if cell == "lstm" else [final]
    t_finals = list(t_final) if cell == "lstm" else [t_final]
    for f, t in zip(finals, t_finals, strict=True):
        assert f.shape == (2 * D, B, H)
        np.testing.assert_allclose(f.array, t.detach().numpy(), rtol=1e-10, atol=1e-12)

    weights = [randn(*out.data.shape, seed=6)] + [randn(2 * D, B, H, seed=7 + i) for i in range(2)]
    t_all = [t_out.data, *t_finals]
    sum((t * torch.tensor(w)).sum() for t, w in zip(t_all, weights)).backward()
    sum((t * Tensor(w)).sum() for t, w in zip([out.data, *finals], weights)).backward()
    np.testing.assert_allclose(X.grad.array, t_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for s, t in zip(S, t_S, strict=True):
        np.testing.assert_allclose(s.grad.array, t.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert_grads_as_torch(ours, theirs)


def test_packed_gradients_match_finite_differences():
    """A bidirectional two-layer LSTM over unsorted lengths, from a given state."""
    np.random.seed(0)
    lstm = as_float64(LSTM(2, 2, num_layers=2, bidirectional=True))

    def f(x, h0):
        packed = pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        out, (h_n, c_n) = lstm(packed, (h0, h0 * 0.5))
        padded, _ = pad_packed_sequence(out)
        return (padded[:, :, :2] * x).sum() + (h_n * c_n).sum()

    check_grads(f, randn(4, 3, 2, seed=1), randn(4, 3, 2, seed=2))


def test_packed_sequence_is_torchs_named_tuple():
    data = Tensor(randn(6, 2))
    packed = PackedSequence(data, [3, 2, 1], [2, 0, 1])
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert packed.unsorted_indices.array.tolist() == [1, 2, 0]  # the inverse, made
    assert PackedSequence((data, [3, 2, 1])).sorted_indices is None
    assert packed.to("cpu") is packed and packed.cpu() is packed and not packed.is_cuda
    as32 = packed.to(np.float32)
    assert as32.data.dtype == np.float32 and as32.batch_sizes is packed.batch_sizes


def test_errors_name_the_function_and_what_was_expected():
    x = Tensor(randn(4, 3, 2))
    with pytest.raises(ValueError, match=r"pack_padded_sequence: lengths \[2, 4, 1\] must not"):
        pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(ValueError, match=r"every length must be in \[1, 4\].*\[4, 2, 0\]"):
        pack_padded_sequence(x, [4, 2, 0])
    with pytest.raises(ValueError, match=r"every length must be in \[1, 4\].*\[5, 2, 1\]"):
        pack_padded_sequence(x, [5, 2, 1], enforce_sorted=False)
    with pytest.raises(ValueError, match="expected 3 lengths"):
        pack_padded_sequence(x, [4, 2])
    with pytest.raises(TypeError, match="lengths must be a 1-D sequence of integers"):
        pack_padded_sequence(x, [4.0, 2.0, 1.0])
    with pytest.raises(ValueError, match=r"expected a padded batch \(time, batch, \*\)"):
        pack_padded_sequence(Tensor(randn(4)), [4])
    packed = pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="total_length must be at least the longest length 4"):
        pad_packed_sequence(packed, total_length=3)
    with pytest.raises(TypeError, match="pad_packed_sequence: sequence must be a PackedSequence"):
        pad_packed_sequence(x)
    with pytest.raises(ValueError, match="PackedSequence: batch_sizes must be positive and not"):
        PackedSequence(packed.data, [3, 4])
    with pytest.raises(ValueError, match=r"sorted_indices must be a permutation of range\(3\)"):
        PackedSequence(packed.data, packed.batch_sizes, [0, 0, 1])
    with pytest.raises(ValueError, match=r"LSTM: expected a PackedSequence of data \(sum of"):
        LSTM(3, 4)(packed)
    with pytest.raises(ValueError, match="GRU: expected an initial state of shape"):
        GRU(2, 4)(packed, Tensor(np.zeros((1, 2, 4))))
