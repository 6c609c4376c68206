"""Tests for tricycle_datasets.shards: the shard format and the TokenShards loader."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tricycle.dataset import CausalLMDataset
from tricycle.tensor import Tensor
from tricycle.tokeniser import END_OF_TEXT, BPETokeniser
from tricycle_datasets.prepare import ShardWriter, write_index
from tricycle_datasets.shards import (
    HEADER,
    INDEX_FORMAT,
    VERSION,
    ShardError,
    TokenShards,
    read_header,
    shard_dtype,
)

N_TOKENS = 300  # ids in the stand-in tokeniser


def make_shards(directory: Path, splits: dict[str, list[np.ndarray]], n_tokens=N_TOKENS) -> Path:
    """A shard directory holding exactly these arrays, one shard each."""
    directory.mkdir(parents=True, exist_ok=True)
    BPETokeniser(n_tokens, special_tokens=[END_OF_TEXT]).save(directory / "tokeniser.json")
    dtype = shard_dtype(n_tokens)
    index = {
        "format": INDEX_FORMAT,
        "version": VERSION,
        "complete": True,
        "tokeniser": "tokeniser.json",
        "n_tokens": n_tokens,
        "splits": {"train": [], "valid": []},
    }
    for split, arrays in splits.items():
        for number, array in enumerate(arrays):
            writer = ShardWriter(directory, split, number, dtype)
            writer.append(np.asarray(array), number)
            index["splits"][split].append(writer.close())
    write_index(directory, index)
    return directory


@pytest.fixture
def three_shards(tmp_path) -> tuple[Path, np.ndarray]:
    """Train split: ids 0..N-1 (mod 300) over three shards of unequal size."""
    stream = np.arange(5000) % N_TOKENS
    parts = np.split(stream, [1200, 1300])  # 1200, 100 and 3700 ids
    directory = make_shards(tmp_path / "shards", {"train": parts, "valid": [stream[:500]]})
    return directory, stream


# -------------------------------------------------------------------------- the format
def test_header_round_trip_and_size_check(three_shards):
    directory, _ = three_shards
    path = directory / "train-00001.bin"
    assert read_header(path) == (np.dtype("<u2"), 100)
    assert path.stat().st_size == HEADER.size + 200

    path.write_bytes(path.read_bytes()[:-2])  # a truncated shard
    with pytest.raises(ShardError, match="train-00001.bin: 230 bytes, but its header says 100"):
        read_header(path)
    path.write_bytes(b"NOTASHARD" + bytes(40))
    with pytest.raises(ShardError, match="not a tricycle token shard"):
        read_header(path)
    path.write_bytes(b"abc")
    with pytest.raises(ShardError, match="too short for a shard header"):
        read_header(path)


def test_index_and_shards_must_agree(three_shards):
    directory, _ = three_shards
    index = json.loads((directory / "index.json").read_text())
    index["splits"]["train"][0]["tokens"] = 7
    (directory / "index.json").write_text(json.dumps(index))
    with pytest.raises(ShardError, match="holds 1200 ids, but index.json says 7"):
        TokenShards(directory)
    index["splits"]["train"][0] = {"file": "../../etc/passwd", "tokens": 1}
    (directory / "index.json").write_text(json.dumps(index))
    with pytest.raises(ShardError, match="malformed 'splits'"):
        TokenShards(directory)
    (directory / "index.json").write_text("{")
    with pytest.raises(ShardError, match="unreadable"):
        TokenShards(directory)
    with pytest.raises(ShardError, match="has no index.json: make one with"):
        TokenShards(directory / "missing")


def test_an_unfinished_directory_warns(three_shards):
    directory, _ = three_shards
    index = json.loads((directory / "index.json").read_text())
    (directory / "index.json").write_text(json.dumps({**index, "complete": False}))
    with pytest.warns(UserWarning, match="is not complete .* run the same prepare command"):
        TokenShards(directory)


def test_ids_outside_the_vocabulary_are_caught(tmp_path):
    directory = make_shards(tmp_path / "s", {"train": [np.full(100, 299)], "valid": []}, 300)
    index = json.loads((directory / "index.json").read_text())
    index["n_tokens"] = 10  # as if the tokeniser were smaller than the ids written
    (directory / "index.json").write_text(json.dumps(index))
    shards = TokenShards(directory, batch_size=2, context_window=8).batch()
    with pytest.raises(ShardError, match="id 299 in the train split is outside the vocabulary"):
        next(shards)


# -------------------------------------------------------------------------- reading
@settings(max_examples=50)
@given(starts=st.lists(st.integers(0, 5000 - 300), min_size=1, max_size=6))
def test_spans_cross_shards_as_one_stream(tmp_path_factory, starts):
    directory = tmp_path_factory.getbasetemp() / "spans"
    if not directory.exists():
        stream = np.arange(5000) % N_TOKENS
        make_shards(directory, {"train": np.split(stream, [1200, 1300]), "valid": []})
    shards = TokenShards(directory, context_window=4)
    got = shards.read(np.array(starts), 300)
    expected = np.stack([np.arange(s, s + 300) % N_TOKENS for s in starts])
    assert got.dtype == np.int64 and np.array_equal(got, expected)


def test_random_windows_like_causal_lm_dataset(three_shards):
    directory, stream = three_shards
    shards = TokenShards(directory, batch_size=4, context_window=16, seed=0).batch()
    inputs, targets = next(shards)
    assert inputs.shape == targets.shape == (4, 16) and inputs.dtype == np.int64
    for row, target in zip(inputs, targets):
        start = int(row[0])  # ids are positions mod 300: find the window in the stream
        assert np.array_equal(row, (start + np.arange(16)) % N_TOKENS)
        assert np.array_equal(target, (start + 1 + np.arange(16)) % N_TOKENS)
    again = TokenShards(directory, batch_size=4, context_window=16, seed=0).batch()
    assert np.array_equal(next(again)[0], inputs)  # seeded

    single_input, _ = next(TokenShards(directory, context_window=16, seed=0))
    assert single_input.shape == (16,)
    tensors = TokenShards(directory, batch_size=2, context_window=8).batch().to_tensor()
    x, y = next(tensors)
    assert isinstance(x, Tensor) and x.shape == (2, 8) and x.is_batched


def test_sequential_order_walks_the_stream_and_wraps(three_shards):
    directory, stream = three_shards
    shards = TokenShards(directory, batch_size=3, context_window=100, order="sequential").batch()
    seen = []
    for _ in range(17):  # batches of 300 tokens: 16 fit in 5000, the 17th starts again
        inputs, targets = next(shards)
        seen.append(inputs.reshape(-1))
        assert np.array_equal(inputs[:, 1:], targets[:, :-1])
    assert np.array_equal(np.concatenate(seen[:16]), stream[:4800])
    assert np.array_equal(seen[16], stream[:300]) and shards.position == 300


def test_iterate_sequential_matches_causal_lm_dataset(three_shards):
    directory, stream = three_shards
    shards = TokenShards(directory, "valid", batch_size=4, context_window=32).batch()
    reference = CausalLMDataset(stream[:500], N_TOKENS, 4, 32).batch()
    assert len(shards) == len(reference)
    pairs = zip(shards.iterate_sequential(), reference.iterate_sequential(), strict=True)
    for (x, y), (x_ref, y_ref) in pairs:
        assert np.array_equal(x, x_ref) and np.array_equal(y, y_ref)
    assert len(list(shards.iterate_sequential(max_batches=2))) == 2


# -------------------------------------------------------------------------- data parallel
@pytest.mark.parametrize("order", ["random", "sequential"])
def test_ranks_split_the_global_batch(three_shards, order):
    directory, _ = three_shards

    def batches(rank, world_size, batch_size, n=3):
        shards = TokenShards(directory, batch_size=batch_size, context_window=8, seed=5,
                             order=order, rank=rank, world_size=world_size).batch()  # fmt: skip
        return [next(shards)[0] for _ in range(n)]

    single = batches(0, 1, 8)
    rank0, rank1 = batches(0, 2, 4), batches(1, 2, 4)
    for whole, a, b in zip(single, rank0, rank1):
        assert not np.array_equal(a, b)  # each rank its own windows
        assert np.array_equal(whole, np.concatenate([a, b]))  # together: the same data


def test_ranks_share_out_validation_batches(three_shards):
    directory, _ = three_shards

    def batches(rank, world_size):
        shards = TokenShards(directory, "valid", batch_size=2, context_window=10,
                             rank=rank, world_size=world_size).batch()  # fmt: skip
        return [x for x, _ in shards.iterate_sequential()]

    everything = batches(0, 1)
    rank0, rank1 = batches(0, 2), batches(1, 2)
    assert len(rank0) + len(rank1) == len(everything)
    interleaved = [b for pair in zip(rank0, rank1) for b in pair] + rank0[len(rank1) :]
    assert all(np.array_equal(a, b) for a, b in zip(interleaved, everything, strict=True))


# -------------------------------------------------------------------------- resumption
@pytest.mark.parametrize("order", ["random", "sequential"])
def test_state_dict_resumes_exactly(three_shards, order):
    directory, _ = three_shards

    def make():
        return TokenShards(directory, batch_size=4, context_window=64, seed=1, order=order).batch()

    shards = make()
    for _ in range(3):
        next(shards)
    state = json.loads(json.dumps(shards.state_dict()))  # as a checkpoint stores it
    expected = [next(shards)[0] for _ in range(20)]

    resumed = make()
    resumed.load_state_dict(state)
    for batch in expected:
        assert np.array_equal(next(resumed)[0], batch)


def test_load_state_dict_refuses_other_states(three_shards):
    directory, _ = three_shards
    shards = TokenShards(directory, context_window=8)
    sequential = TokenShards(directory, context_window=8, order="sequential")
    with pytest.raises(ValueError, match="expected keys order, rng, position"):
        shards.load_state_dict({"rng": 1})
    with pytest.raises(ValueError, match="a 'sequential' stream, this one is 'random'"):
        shards.load_state_dict(sequential.state_dict())
    with pytest.raises(ValueError, match="position 99999 is outside the 5000 tokens"):
        shards.load_state_dict({**shards.state_dict(), "position": 99_999})


# -------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    "kwargs, message",
    [
        # (each argument's own values: tests/test_checks.py)
        ({"rank": 2, "world_size": 2}, r"rank must be below world_size \(2\), got 2"),
        ({"vocab_size": 100}, "vocab_size 100 is smaller than the 300 ids"),
        ({"context_window": 5000}, "5000 tokens, too few for a context window of 5000"),
    ],
)
def test_bad_arguments(three_shards, kwargs, message):
    directory, _ = three_shards
    with pytest.raises(ValueError, match=message):
        TokenShards(directory, **kwargs)


# -------------------------------------------------------------------------- memory
def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_memory_does_not_grow_with_the_data_read(tmp_path):
    """Reading all of a 64 MB shard leaves the process's resident memory where it was."""
    n = 32 << 20  # ids: 64 MB of uint16
    directory = tmp_path / "big"
    directory.mkdir()
    BPETokeniser(N_TOKENS).save(directory / "tokeniser.json")
    writer = ShardWriter(directory, "train", 0, shard_dtype(N_TOKENS))
    block = (np.arange(1 << 20) % N_TOKENS).astype(np.uint16)
    for _ in range(n >> 20):
        writer.append(block, 0)
    index = {"format": INDEX_FORMAT, "version": VERSION, "tokeniser": "tokeniser.json",
             "complete": True, "n_tokens": N_TOKENS,
             "splits": {"train": [writer.close()], "valid": []}}  # fmt: skip
    write_index(directory, index)

    shards = TokenShards(directory, batch_size=64, context_window=1024, order="sequential")
    shards = shards.batch()
    next(shards)
    before = rss_bytes()
    for _ in range(n // (64 * 1024)):  # the whole shard, once
        next(shards)
    assert rss_bytes() - before < 16 << 20
