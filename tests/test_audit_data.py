"""What a user auditing the data path found wrong, each fixed: a batch that cannot travel
back from a worker, a stream's state resumed with another number of workers, a text file
whose last line holds the 90% point, globs of folders in ``prepare``, its messages, and
``default_collate``'s bytes and mixed examples."""

import itertools
import json
import multiprocessing
import threading

import numpy as np
import pytest

from tricycle.data import DataLoader, WorkerError, default_collate
from tricycle.dataset import CausalLMDataset
from tricycle_datasets import split_text
from tricycle_datasets.prepare import main, prepare
from tricycle_datasets.shards import TokenShards

fork_only = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="workers start by fork"
)


# ====================================================================== the DataLoader
class Locks:
    """A map-style dataset whose items hold a lock: they cannot be pickled."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"i": i, "lock": threading.Lock()}


@fork_only
def test_a_batch_that_cannot_be_pickled_is_a_worker_error_not_a_hang():
    loader = DataLoader(Locks(), batch_size=2, num_workers=2, collate_fn=list, timeout=20)
    with pytest.raises(WorkerError) as info:  # before: printed by the queue, then a hang
        next(iter(loader))
    message = str(info.value)
    assert "while sending batch 0 to the main process (a batch must pickle)" in message
    assert "TypeError: cannot pickle '_thread.lock' object" in message


def windows():
    """A stream that saves its own position (random windows, seeded)."""
    return CausalLMDataset(np.arange(400) % 23, 23, 2, 5, seed=4).batch()


@fork_only
@pytest.mark.parametrize("saved_with, resumed_with", [(0, 2), (2, 0), (2, 2)])
def test_a_streams_state_resumes_with_another_number_of_workers(saved_with, resumed_with):
    want = [x for x, _ in itertools.islice(DataLoader(windows(), batch_size=None), 7)]
    loader = DataLoader(windows(), batch_size=None, num_workers=saved_with)
    iterator = iter(loader)
    for _ in range(3):
        next(iterator)
    state = json.loads(json.dumps(loader.state_dict()))
    del iterator
    resumed = DataLoader(windows(), batch_size=None, num_workers=resumed_with)
    resumed.load_state_dict(state)  # before, 0 -> 2: the stream started again from its start
    got = [x for x, _ in itertools.islice(resumed, 4)]
    for expected, batch in zip(want[3:], got, strict=True):
        np.testing.assert_array_equal(batch, expected)


def test_default_collate_gathers_bytes_as_torchs():
    torch = pytest.importorskip("torch")
    examples = [(b"\x89PNG", 1), (b"GIF8", 2)]
    ours, theirs = default_collate(examples), torch.utils.data.default_collate(examples)
    assert ours[0] == list(theirs[0]) == [b"\x89PNG", b"GIF8"]
    np.testing.assert_array_equal(ours[1], theirs[1].numpy())


@pytest.mark.parametrize(
    "examples, error, words",
    [
        ([np.zeros(2), 3], TypeError, "the first is a ndarray, another a int (3)"),
        ([1, "a"], TypeError, "the first is a int, another a str ('a')"),
        ([(1, 2), 3], TypeError, "the first is a tuple, another a int"),
        ([{"x": 1}, {"y": 2}], ValueError, "an example has no key 'x'"),
    ],
)
def test_examples_that_are_not_alike_are_named(examples, error, words):
    with pytest.raises(error, match="default_collate: ") as info:
        default_collate(examples)
    assert words in str(info.value)


def test_torchs_submodules_of_utils_data_give_tricycles_names():
    from tricycle import data
    from tricycle.utils.data.dataloader import DataLoader as Loader
    from tricycle.utils.data.dataloader import default_collate as collate
    from tricycle.utils.data.dataset import Subset
    from tricycle.utils.data.sampler import SubsetRandomSampler

    assert (Loader, collate, Subset, SubsetRandomSampler) == (
        data.DataLoader, data.default_collate, data.Subset, data.SubsetRandomSampler
    )  # fmt: skip


# ====================================================================== corpora and prepare
def test_a_last_line_holding_the_cut_is_cut_not_left_whole_to_training():
    text = "a title\n" + "word " * 200 + "\n"  # the last line spans the 90% point
    train, valid = split_text(text)  # before: ("...", ""), an empty validation part
    assert train + valid == text and 0.08 < len(valid) / len(text) < 0.12
    train, valid = split_text(text + "\n\n")
    assert valid.strip() and train + valid == text + "\n\n"
    lines = "".join(f"line {i}\n" for i in range(100))
    assert split_text(lines)[0].endswith("\n")  # the usual cut, after a newline


def corpus(tmp_path):
    """Two folders of text and a file beside them."""
    for folder, n in (("one", 2), ("two", 3)):
        (tmp_path / "corpus" / folder).mkdir(parents=True)
        for i in range(n):
            text = " ".join(f"{folder} {i} word{k % 17}" for k in range(300)) + "\n"
            (tmp_path / "corpus" / folder / f"{i}.txt").write_text(text)
    (tmp_path / "corpus" / "top.txt").write_text("the top file\n" * 50)
    return tmp_path / "corpus"


def shard_ids(directory) -> np.ndarray:
    shards = TokenShards(directory, "train", batch_size=1, context_window=1)
    return shards.read(np.array([0]), shards.n_tokens)[0]


def test_a_glob_of_folders_reads_them_as_the_shell_expanding_it_would(tmp_path):
    source = corpus(tmp_path)
    options = {"vocab_size": 300, "valid_fraction": 0.0, "progress": False}
    quoted = prepare([str(source / "*")], tmp_path / "quoted", **options)
    expanded = sorted(str(p) for p in source.iterdir())  # what `prepare corpus/*` passes
    shell = prepare(expanded, tmp_path / "shell", **options)
    assert quoted["settings"]["n_files"] == shell["settings"]["n_files"] == 6  # before: 1
    np.testing.assert_array_equal(shard_ids(tmp_path / "quoted"), shard_ids(tmp_path / "shell"))


def test_prepares_messages_say_what_to_change(tmp_path, capsys):
    source = corpus(tmp_path)
    (tmp_path / "a_file").write_text("")
    with pytest.raises(SystemExit, match="--out-dir .*a_file is a file; the shards go into a"):
        main([str(source), "--out-dir", str(tmp_path / "a_file"), "--vocab-size", "300"])

    main([str(source / "top.txt"), "--out-dir", str(tmp_path / "one"), "--vocab-size", "300",
          "--no-progress"])  # fmt: skip
    said = capsys.readouterr().err  # before: "a larger --valid-fraction gives more" (it won't)
    assert "the validation split has 0 tokens" in said
    assert "the text is one encoding task" in said and "a smaller --block-bytes" in said

    index_file = tmp_path / "one" / "index.json"
    index = json.loads(index_file.read_text())
    index["splits"]["train"][0]["tasks"] = "lost"
    index_file.write_text(json.dumps(index))
    with pytest.raises(SystemExit, match=r"index.json is malformed \(its settings, or a shard's"):
        main([str(source / "top.txt"), "--out-dir", str(tmp_path / "one"), "--vocab-size",
              "300"])  # fmt: skip  # before: IndexError, a traceback


# ====================================================================== endless samplers
def test_an_endless_random_sampler_draws_as_it_is_read():
    """makemore's ``InfiniteDataLoader``: ``RandomSampler(replacement=True,
    num_samples=int(1e10))`` is a stream cut by the loop; drawn whole, its epoch took 80 GB.
    It is drawn a block at a time, the same numbers as a single draw, on one rank or several,
    with workers too."""
    from tricycle.data import RandomSampler

    data = [np.float64(i) for i in range(10)]
    endless = RandomSampler(data, replacement=True, num_samples=int(1e10), seed=3)
    loader = DataLoader(data, batch_size=4, sampler=endless)
    assert len(loader) == 2_500_000_000
    whole = np.random.default_rng((3, 0)).integers(10, size=40)
    first = [b.tolist() for b in itertools.islice(loader, 10)]
    assert np.concatenate(first).tolist() == whole.tolist()
    for rank in (0, 1):  # a rank's share: positions rank, rank + 2, ...
        share = DataLoader(data, batch_size=2, sampler=endless, rank=rank, world_size=2)
        shared = np.concatenate(list(itertools.islice(share, 5)))
        assert shared.tolist() == whole[rank:20:2].tolist()
    workers = iter(DataLoader(data, batch_size=4, sampler=endless, num_workers=2))
    assert np.concatenate(list(itertools.islice(workers, 10))).tolist() == whole.tolist()
    workers.close()  # the workers stop
    # the shares of short epochs, padded or cut, and without replacement, as whole draws
    for replacement, count in [(True, 7), (False, 23)]:
        sampler = RandomSampler(data, replacement=replacement, num_samples=count, seed=5)
        rng = np.random.default_rng((5, 0))
        drawn = (rng.integers(10, size=count) if replacement else
                 np.concatenate([rng.permutation(10) for _ in range(3)])[:count])  # fmt: skip
        assert list(sampler.draw(0, None)) == drawn.tolist()
        for drop_last in (False, True):
            kept = drawn[: count // 3 * 3] if drop_last else np.resize(drawn, -(-count // 3) * 3)
            for rank in range(3):
                loader = DataLoader(data, batch_size=1, sampler=sampler, rank=rank,
                                    world_size=3, drop_last=drop_last)  # fmt: skip
                assert np.concatenate(list(loader)).tolist() == kept[rank::3].tolist()


def test_a_batch_sampler_over_an_endless_sampler_cuts_batches_as_read():
    """``BatchSampler(RandomSampler(..., num_samples=int(1e10)), ...)``: its epoch's batches
    are cut from the stream as the loader reads them (a list of them took 2.5e9 lists); the
    same batches as a whole draw cut, on one rank or several (padded with the first batches,
    as ``share`` pads), with workers too."""
    from tricycle.data import BatchSampler, RandomSampler

    data = [np.float64(i) for i in range(10)]
    endless = RandomSampler(data, replacement=True, num_samples=int(1e10), seed=3)
    whole = np.random.default_rng((3, 0)).integers(10, size=40)
    batches = BatchSampler(endless, batch_size=4, drop_last=False)
    assert len(batches) == 2_500_000_000
    loader = DataLoader(data, batch_sampler=batches)
    assert len(loader) == 2_500_000_000
    first = [b.tolist() for b in itertools.islice(loader, 10)]
    assert first == whole.reshape(10, 4).tolist()
    drawn = batches.draw(0, None)
    assert drawn[1:3] == whole[4:12].reshape(2, 4).tolist()
    for rank in (0, 1):  # a rank's share: batches rank, rank + 2, ...
        share = DataLoader(data, batch_sampler=batches, rank=rank, world_size=2)
        assert len(share) == 1_250_000_000
        got = [b.tolist() for b in itertools.islice(share, 3)]
        assert got == whole.reshape(10, 4)[rank:6:2].tolist()
    workers = iter(DataLoader(data, batch_sampler=batches, num_workers=2))
    assert [b.tolist() for b in itertools.islice(workers, 10)] == whole.reshape(10, 4).tolist()
    workers.close()
    # a short stream: the last batch shorter, or dropped; shares padded with the first batches
    short = RandomSampler(data, replacement=True, num_samples=int(1e10), seed=5)
    assert len(BatchSampler(short, batch_size=3, drop_last=True).draw(0, None)) == 3_333_333_333
    from tricycle.apps.drawn_indices import Batches, Strided
    from tricycle.apps.samplers import share

    kept = Batches(RandomSampler(data, replacement=True, num_samples=7, seed=5).draw(0, None),
                   3, drop_last=False)  # fmt: skip
    stream = np.random.default_rng((5, 0)).integers(10, size=7).tolist()
    assert list(kept) == [stream[0:3], stream[3:6], stream[6:7]] and kept[-1] == stream[6:7]
    rank1 = share(kept, 1, 2, drop_last=False)
    assert isinstance(rank1, Strided) and list(rank1) == [stream[3:6], stream[0:3]]
    with pytest.raises(IndexError, match="batch 3 is out of range for 3 batches"):
        kept[3]
