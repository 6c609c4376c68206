"""Datasets: batching, shuffling and conversion by chaining; random causal-LM windows that
never materialise the token x context matrix; validation at construction."""

import numpy as np
import pytest

from tricycle import backend
from tricycle.dataset import CausalLMDataset, Dataset, InfiniteBatchDataset
from tricycle.tensor import Tensor


def examples(n=10):
    return np.arange(2 * n, dtype=np.float64).reshape(n, 2), np.arange(n)


# ====================================================================== Dataset
def test_dataset_iterates_examples_then_stops_and_restarts():
    inputs, outputs = examples(3)
    data = Dataset(inputs, outputs)
    assert len(data) == 3
    first = [(x.tolist(), int(y)) for x, y in data]
    assert first == [([0.0, 1.0], 0), ([2.0, 3.0], 1), ([4.0, 5.0], 2)]
    assert [int(y) for _, y in data] == [0, 1, 2]  # a new epoch
    x, y = data[-1]
    assert int(y) == 2


def test_batches_keep_the_remainder_unless_dropped():
    inputs, outputs = examples(10)
    data = Dataset(inputs, outputs).batch(4)
    assert [len(y) for _, y in data] == [4, 4, 2] and len(data) == 3
    dropped = Dataset(inputs, outputs).batch(4, drop_last=True)
    assert [len(y) for _, y in dropped] == [4, 4] and len(dropped) == 2


def test_chaining_returns_configured_copies():
    inputs, outputs = examples()
    base = Dataset(inputs, outputs)
    batched = base.batch(5)
    assert base.batch_size is None and batched.batch_size == 5
    assert batched.inputs is base.inputs  # the data is shared, not copied


def test_shuffle_visits_everything_once_per_epoch_reproducibly():
    inputs, outputs = examples(20)
    data = Dataset(inputs, outputs).batch(6).shuffle(seed=3)
    epoch_1 = np.concatenate([y for _, y in data])
    epoch_2 = np.concatenate([y for _, y in data])
    assert sorted(epoch_1) == list(range(20)) and sorted(epoch_2) == list(range(20))
    assert not np.array_equal(epoch_1, np.arange(20))
    assert not np.array_equal(epoch_1, epoch_2)
    again = np.concatenate([y for _, y in Dataset(inputs, outputs).batch(6).shuffle(seed=3)])
    np.testing.assert_array_equal(epoch_1, again)
    for x, y in Dataset(inputs, outputs).shuffle(seed=1):
        np.testing.assert_array_equal(x, inputs[y])  # pairs stay together


def test_to_tensor_gives_float32_inputs_and_integer_labels():
    inputs, outputs = examples()
    x, y = next(Dataset(inputs, outputs).batch(4).to_tensor())
    assert isinstance(x, Tensor) and isinstance(y, Tensor)
    assert x.dtype == np.float32 and np.issubdtype(y.dtype, np.integer)
    assert x.is_batched and not x.requires_grad


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="3 inputs but 2 outputs"):
        Dataset(np.ones((3, 2)), np.ones(2))


def test_infinite_batches_never_stop():
    inputs, outputs = examples(5)
    data = InfiniteBatchDataset(inputs, outputs, batch_size=8, seed=0).to_tensor()
    for _ in range(10):
        x, y = next(data)
        assert x.shape == (8, 2) and y.shape == (8,)
        np.testing.assert_array_equal(x.array, inputs[y.array].astype(np.float32))


# ====================================================================== CausalLMDataset
class Corpus:
    """Like tricycle_datasets' corpora: tokens behind __array__."""

    def __init__(self, tokens):
        self.tokens = tokens

    def __array__(self, dtype=None, copy=None):
        return self.tokens


def test_readme_chain_gives_shifted_integer_windows():
    tokens = np.arange(1000) % 50
    dataset = (
        CausalLMDataset(tokens=tokens, vocab_size=50, batch_size=4, context_window=8)
        .batch()
        .shuffle()
        .to_tensor()
    )
    inputs, outputs = next(dataset)
    assert inputs.shape == outputs.shape == (4, 8)
    assert inputs.dtype == outputs.dtype == np.int64
    np.testing.assert_array_equal(outputs.array[:, :-1], inputs.array[:, 1:])
    np.testing.assert_array_equal((inputs.array + 1) % 50, outputs.array)


def test_windows_are_random_and_reproducible_with_a_seed():
    tokens = np.arange(500, dtype=np.int32)
    make = lambda seed: CausalLMDataset(tokens, 500, 16, 10, seed=seed).batch()  # noqa: E731
    a, b, c = make(1), make(1), make(2)
    starts = [next(a)[0][:, 0] for _ in range(5)]
    np.testing.assert_array_equal(starts, [next(b)[0][:, 0] for _ in range(5)])
    assert not np.array_equal(starts[0], next(c)[0][:, 0])
    assert len(np.unique(np.concatenate(starts))) > 40
    assert max(s.max() for s in starts) <= 500 - 11  # the last window still has a target


def test_unbatched_items_and_indexing():
    tokens = np.arange(20)
    data = CausalLMDataset(tokens, 20, 3, 5, seed=0)
    x, y = next(data)
    assert x.shape == y.shape == (5,)
    x, y = data[7]
    np.testing.assert_array_equal(x, np.arange(7, 12))
    np.testing.assert_array_equal(y, np.arange(8, 13))
    with pytest.raises(IndexError, match=r"window 15 out of range \[0, 15\)"):
        data[15]


def test_tokens_are_stored_once_not_per_window():
    tokens = np.zeros(100_000, dtype=np.uint16)
    data = CausalLMDataset(Corpus(tokens), 10, 8, 512).batch().shuffle().to_tensor()
    assert np.shares_memory(data.tokens, tokens)
    assert not any(
        isinstance(v, np.ndarray) and v.nbytes > tokens.nbytes for v in vars(data).values()
    )


def test_iterate_sequential_covers_every_window_once_in_order():
    tokens = np.arange(53)
    data = CausalLMDataset(tokens, 53, batch_size=4, context_window=5).to_tensor()
    batches = list(data.iterate_sequential())
    assert [x.shape for x, _ in batches] == [(4, 5), (4, 5), (2, 5)]
    starts = np.concatenate([x.array[:, 0] for x, _ in batches])
    np.testing.assert_array_equal(starts, np.arange(0, 50, 5))
    for x, y in batches:
        np.testing.assert_array_equal(y.array, x.array + 1)
    assert len(data) == 10 and len(data.batch()) == 3
    assert len(list(data.iterate_sequential(max_batches=2))) == 2


@pytest.mark.parametrize(
    "tokens, error, message",
    [
        (np.array([0.0, 1.0, 2.0]), TypeError, "integer ids.*float64"),
        (np.zeros((2, 10), dtype=int), TypeError, r"1-D.*\(2, 10\)"),
        (np.array([0, 1, 2, 10, 3]), ValueError, r"\[0, 10\).*\[0, 10\]"),
        (np.array([0, -1, 2, 3, 4]), ValueError, r"\[-1, 4\]"),
        (np.arange(4), ValueError, "4 tokens are too few.*window of 4"),
    ],
)
def test_bad_tokens_raise_at_construction(tokens, error, message):
    with pytest.raises(error, match=message):
        CausalLMDataset(tokens, vocab_size=10, batch_size=2, context_window=4)


def test_to_gpu_moves_each_batch():
    if not backend.cupy_available():
        pytest.skip("no CUDA GPU")
    data = CausalLMDataset(np.arange(100), 100, 4, 8, seed=0).batch().to_gpu(0)
    x, y = next(data)
    assert x.on_gpu and y.on_gpu
    x, y = next(data.from_gpu())
    assert not x.on_gpu


def test_state_dict_resumes_the_random_windows():
    tokens = np.arange(1000) % 50
    dataset = CausalLMDataset(tokens, 50, batch_size=4, context_window=8, seed=3).batch()
    next(dataset)
    state = dataset.state_dict()
    expected = [next(dataset)[0] for _ in range(3)]
    resumed = CausalLMDataset(tokens, 50, batch_size=4, context_window=8, seed=99).batch()
    resumed.load_state_dict(state)
    assert all(np.array_equal(next(resumed)[0], batch) for batch in expected)
    with pytest.raises(ValueError, match="expected"):
        resumed.load_state_dict({"position": 3})
