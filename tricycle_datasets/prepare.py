"""Tokenise a corpus larger than memory into token shards (see shards.py for the format).

    python -m tricycle_datasets.prepare ~/corpus/ notes.txt 'books/*.txt' --out-dir data/mine \\
        --vocab-size 8192 [--workers 8] [--shard-tokens 16777216] [--valid-fraction 0.01]
    python -m tricycle_datasets.prepare more/ --out-dir data/more \\
        --tokeniser data/mine/tokeniser.json

Inputs are files, directories (searched recursively for --extensions) and globs. Each file is
a document; documents are separated by the tokeniser's end-of-text token. The work:

1. The file list is split into tasks: ranges of at most --block-bytes of one file, cut where a
   non-space ASCII character meets ASCII whitespace. No chunk of the library's split pattern
   crosses such a point, so the ids are exactly those of encoding each file whole.
2. The tokeniser is trained on an even sample of the tasks (--sample-bytes), or loaded.
3. Worker processes encode the tasks in parallel; the main process appends their ids, in
   order, to the shards of their split: evenly spread tasks (--valid-fraction of them) make
   the validation split, the rest the training split. A shard is closed once it holds at least
   --shard-tokens ids.

Nothing is held whole in memory: each worker holds one task. A shard is written to a
temporary file, flushed to disk and renamed, and only then listed in index.json (itself
replaced atomically), so an interrupted run never leaves a shard that a loader would read.
Running the same command again skips the shards already listed and finishes the rest; a
directory holding shards of other inputs or settings is refused rather than overwritten, and
so is one that another prepare is writing (it holds the directory's lock, `.lock`).
"""

import argparse
import contextlib
import glob
import hashlib
import json
import math
import multiprocessing
import os
import re
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from tricycle import checks
from tricycle.apps import cli
from tricycle.apps.files import (
    DirectoryLock,
    DirectoryLocked,
    atomic_write,
    missing_directories,
    remove_empty,
    remove_temporaries,
)
from tricycle.tokeniser import END_OF_TEXT, N_BYTES, BPETokeniser
from tricycle_datasets import decode_utf8
from tricycle_datasets.download import sha256_file
from tricycle_datasets.shards import (
    INDEX,
    INDEX_FORMAT,
    SPLITS,
    TOKENISER,
    VERSION,
    ShardError,
    load_tokeniser,
    pack_header,
    read_index,
    shard_dtype,
)

DEFAULT_EXTENSIONS = (".txt", ".py", ".md")
# A task may end only where a printable non-space ASCII byte meets an ASCII whitespace byte.
_CUT = re.compile(rb"[\x21-\x7e][ \t\n\r\x0b\x0c]")
_SCAN_BYTES = 1 << 16


@dataclass(frozen=True)
class Task:
    """Bytes [start, end) of one file, moved forward to cut points (see `read_task`);
    `last`: the file's final range, after which the end-of-text token goes."""

    path: str
    start: int
    end: int
    last: bool

    @property
    def n_bytes(self) -> int:
        return self.end - self.start


# ------------------------------------------------------------------ inputs and tasks
def find_files(inputs: list[str], extensions: tuple[str, ...]) -> list[Path]:
    """The files that `inputs` name, sorted and without repeats (empty files left out). A
    glob's matches count as if named one by one (as the shell expands one): its files, and
    the files of its directories."""
    files = set()
    for item in inputs:
        path = Path(item).expanduser()
        matches = [path] if path.exists() else glob.glob(str(path), recursive=True)
        if not matches:
            raise FileNotFoundError(f"prepare: {item!r} is not a file, directory or glob")
        files.update(f.resolve() for match in matches for f in _files_in(Path(match), extensions))
    files = sorted(p for p in files if p.stat().st_size > 0)
    if not files:
        raise FileNotFoundError(
            f"prepare: no non-empty files with extensions {', '.join(extensions)} in {inputs}"
        )
    return files


def _files_in(path: Path, extensions: tuple[str, ...]) -> list[Path]:
    """A file itself; a directory's files with `extensions`, searched recursively."""
    if path.is_dir():
        return [p for p in path.rglob("*") if p.is_file() and p.suffix in extensions]
    return [path] if path.is_file() else []


def make_tasks(files: list[Path], block_bytes: int) -> list[Task]:
    """Each file as consecutive ranges of `block_bytes` (the last one shorter)."""
    tasks = []
    for path in files:
        size = path.stat().st_size
        starts = range(0, size, block_bytes)
        for start in starts:
            end = min(start + block_bytes, size)
            tasks.append(Task(str(path), start, end, end == size))
    return tasks


def read_task(task: Task) -> str:
    """The text of a task: from the first cut point at or after `start` (or the file's
    start) to the first at or after `end` (or the file's end). Neighbouring tasks meet at
    the same cut point, so together they read every byte once."""
    with open(task.path, "rb") as f:
        begin = _cut_at_or_after(f, task.start)
        stop = f.seek(0, os.SEEK_END) if task.last else _cut_at_or_after(f, task.end)
        if stop <= begin:
            return ""  # this range lies inside one long stretch without a cut point
        f.seek(begin)
        data = f.read(stop - begin)
    return decode_utf8(data, task.path, begin)


def _cut_at_or_after(f, position: int) -> int:
    """The first cut point >= `position` in file `f` (the file's size if none)."""
    if position == 0:
        return 0
    f.seek(position - 1)  # a cut at i needs byte i - 1
    offset = position - 1
    while block := f.read(_SCAN_BYTES + 1):
        if (match := _CUT.search(block)) is not None:
            return offset + match.start() + 1
        if len(block) <= _SCAN_BYTES:
            break
        offset += _SCAN_BYTES  # the next block re-reads the last byte: a pair may straddle
        f.seek(offset)
    return f.seek(0, os.SEEK_END)


def validation_tasks(n_tasks: int, fraction: float) -> set[int]:
    """The indices of an evenly spread `fraction` (< 1) of the tasks: at least one when the
    fraction is positive and there are two tasks or more."""
    if fraction == 0 or n_tasks < 2:
        return set()
    floor = math.floor
    chosen = {k for k in range(n_tasks) if floor((k + 1) * fraction) > floor(k * fraction)}
    return chosen or {n_tasks - 1}


# ------------------------------------------------------------------ encoding (workers)
class TaskEncoder:
    """Encodes tasks to arrays of ids of the shards' dtype (end-of-text after a file)."""

    def __init__(self, tokeniser: BPETokeniser, accelerate: bool = True):
        self.tokeniser = tokeniser
        self.tokeniser.accelerate = accelerate  # tiktoken (same ids) when installed
        self.dtype = shard_dtype(tokeniser.n_tokens)

    def __call__(self, task: Task) -> np.ndarray:
        ids = self.tokeniser.encode(read_task(task))
        if task.last:
            ids = np.append(ids, self.tokeniser.eot_id)
        return ids.astype(self.dtype)


_worker_encoder: TaskEncoder | None = None


def _start_worker(tokeniser_path: str, accelerate: bool) -> None:
    global _worker_encoder
    _worker_encoder = TaskEncoder(BPETokeniser.load(tokeniser_path), accelerate)


def _encode_in_worker(task: Task) -> np.ndarray:
    return _worker_encoder(task)


# ------------------------------------------------------------------ writing shards
def shard_name(split: str, number: int) -> str:
    """The file name of a split's shard `number`."""
    return f"{split}-{number:05d}.bin"


class ShardWriter:
    """Appends ids to `{split}-{number:05d}.bin` through `atomic_write`'s temporary file;
    `close()` fills in the header and puts the shard in place, `discard()` drops it."""

    def __init__(self, out_dir: Path, split: str, number: int, dtype: np.dtype):
        self.path = out_dir / shard_name(split, number)
        self.dtype = dtype
        self._writing = contextlib.ExitStack()  # the atomic write, open until close or discard
        self.file = self._writing.enter_context(atomic_write(self.path, "wb"))
        self.file.write(pack_header(dtype, 0))
        self.n_tokens = 0
        self.first_task: int | None = None
        self.end_task: int | None = None

    def append(self, ids: np.ndarray, task_index: int) -> None:
        self.file.write(ids.astype(self.dtype, copy=False).tobytes())
        self.n_tokens += len(ids)
        self.first_task = task_index if self.first_task is None else self.first_task
        self.end_task = task_index + 1

    def close(self) -> dict:
        """Finish the shard; its entry for the index."""
        self.file.seek(0)
        self.file.write(pack_header(self.dtype, self.n_tokens))
        self._writing.close()  # flushed to disk and renamed into place
        return {
            "file": self.path.name,
            "tokens": self.n_tokens,
            "tasks": [self.first_task, self.end_task],
        }

    def discard(self) -> None:
        """Drop an unfinished shard: the temporary file goes, nothing is renamed (after
        `close()`, nothing happens)."""
        unfinished = ShardError(f"{self.path}: discarded unfinished")
        self._writing.__exit__(ShardError, unfinished, None)  # atomic_write's error path


def write_index(out_dir: Path, index: dict) -> None:
    with atomic_write(out_dir / INDEX, "w") as f:
        json.dump(index, f, indent=1)


# ------------------------------------------------------------------ the whole job
@checks.arguments(
    vocab_size=checks.optional(checks.at_least(N_BYTES + 1)),  # the bytes and end-of-text
    workers=checks.positive_int,
    shard_tokens=checks.positive_int,
    valid_fraction=checks.interval(0, 1, "[)"),
    sample_bytes=checks.positive_int,
    block_bytes=checks.positive_int,
    progress=checks.boolean,
    accelerate=checks.boolean,
)
def prepare(
    inputs: list[str],
    out_dir: str | os.PathLike,
    vocab_size: int | None = None,
    tokeniser_path: str | os.PathLike | None = None,
    workers: int = 1,
    shard_tokens: int = 1 << 24,
    valid_fraction: float = 0.01,
    extensions: tuple[str, ...] = DEFAULT_EXTENSIONS,
    sample_bytes: int = 16 << 20,
    block_bytes: int = 1 << 20,
    progress: bool = True,
    accelerate: bool = True,
) -> dict:
    """Write (or finish writing) the shard directory `out_dir`; returns its index. The
    arguments are those of the command line (see the module docstring); messages name them
    as Python does (``out_dir``), or as flags (``--out-dir``) when ``main`` calls."""
    return _prepare(inputs, out_dir, vocab_size, tokeniser_path, workers, shard_tokens,
                    valid_fraction, extensions, sample_bytes, block_bytes, progress, accelerate,
                    name=str)  # fmt: skip


FLAGS = {"out_dir": "--out-dir", "vocab_size": "--vocab-size", "tokeniser_path": "--tokeniser",
         "workers": "--workers", "valid_fraction": "--valid-fraction",
         "block_bytes": "--block-bytes"}  # fmt: skip


def _prepare(
    inputs,
    out_dir,
    vocab_size,
    tokeniser_path,
    workers,
    shard_tokens,
    valid_fraction,
    extensions,
    sample_bytes,
    block_bytes,
    progress,
    accelerate,
    name,
) -> dict:
    """``prepare``; ``name(argument)`` is how messages call an argument."""
    out_dir = Path(out_dir)
    if (vocab_size is None) == (tokeniser_path is None):
        raise ValueError(
            f"prepare: give exactly one of {name('vocab_size')} and {name('tokeniser_path')}"
        )
    cores = available_cores()
    if workers > cores:
        print(f"prepare: {name('workers')} {workers} is more than the {cores} cores this process "
              f"may use: encoding with {cores}", file=sys.stderr)  # fmt: skip
        workers = cores
    files = find_files(inputs, extensions)
    tasks = make_tasks(files, block_bytes)
    settings = {
        "inputs": _fingerprint(files),
        "n_files": len(files),
        "n_bytes": sum(t.n_bytes for t in tasks),
        "block_bytes": block_bytes,
        "shard_tokens": shard_tokens,
        "valid_fraction": valid_fraction,
        "tokeniser": {"vocab_size": vocab_size, "sample_bytes": sample_bytes}
        if tokeniser_path is None
        else {"sha256": sha256_file(tokeniser_path)},
    }
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(
            f"prepare: {name('out_dir')} {out_dir} is a file; the shards go into a directory"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    index = _existing_index(out_dir, settings, name)
    if index is not None and index["complete"]:
        _say(progress, f"{out_dir}: already complete ({_summary(index)})")
        return index
    with DirectoryLock(out_dir):  # one prepare at a time writes into a directory
        return _write(
            out_dir,
            tasks,
            settings,
            vocab_size=vocab_size,
            tokeniser_path=tokeniser_path,
            sample_bytes=sample_bytes,
            valid_fraction=valid_fraction,
            shard_tokens=shard_tokens,
            workers=workers,
            accelerate=accelerate,
            progress=progress,
            name=name,
        )


def _write(
    out_dir: Path,
    tasks: list[Task],
    settings: dict,
    *,
    vocab_size: int | None,
    tokeniser_path,
    sample_bytes: int,
    valid_fraction: float,
    shard_tokens: int,
    workers: int,
    accelerate: bool,
    progress: bool,
    name=str,
) -> dict:
    """`prepare`'s work, done holding the directory's lock: start the directory, or take it
    up where the last run into it stopped, and write the shards still missing."""
    index = _existing_index(out_dir, settings, name)  # again: as the last run left it
    next_shards = [shard_name(s, len(index["splits"][s]) if index else 0) for s in SPLITS]
    remove_temporaries(out_dir, [INDEX, TOKENISER, *next_shards])  # what a killed run left
    tokeniser = _tokeniser(out_dir, tasks, index, vocab_size, tokeniser_path, sample_bytes, name)
    if index is None:
        index = {
            "format": INDEX_FORMAT,
            "version": VERSION,
            "complete": False,
            "tokeniser": TOKENISER,
            "tokeniser_sha256": sha256_file(out_dir / TOKENISER),
            "n_tokens": tokeniser.n_tokens,
            "eot_id": tokeniser.eot_id,
            "dtype": shard_dtype(tokeniser.n_tokens).name,
            "settings": settings,
            "splits": {split: [] for split in SPLITS},
        }
        write_index(out_dir, index)

    valid = validation_tasks(len(tasks), valid_fraction)
    split_of = ["valid" if k in valid else "train" for k in range(len(tasks))]
    resume_at = {  # per split: the first task not yet in a finished shard
        split: max((s["tasks"][1] for s in index["splits"][split]), default=0) for split in SPLITS
    }
    pending = [k for k in range(len(tasks)) if k >= resume_at[split_of[k]]]
    writers: dict[str, ShardWriter | None] = dict.fromkeys(SPLITS)
    dtype = shard_dtype(tokeniser.n_tokens)

    def close(split: str) -> None:
        index["splits"][split].append(writers[split].close())
        writers[split] = None
        write_index(out_dir, index)  # lists the shard only now that it is complete

    n_bytes = sum(tasks[k].n_bytes for k in pending)
    bar = tqdm(total=n_bytes, unit="B", unit_scale=True, disable=not progress, file=sys.stderr)
    start_time = time.perf_counter()
    encoded = _encode(tasks, pending, out_dir / TOKENISER, workers, accelerate)
    try:
        for k, ids in zip(pending, encoded):
            split = split_of[k]
            if writers[split] is None:
                number = len(index["splits"][split])
                writers[split] = ShardWriter(out_dir, split, number, dtype)
            writers[split].append(ids, k)
            if writers[split].n_tokens >= shard_tokens:
                close(split)
            bar.update(tasks[k].n_bytes)
        for split in SPLITS:
            if writers[split] is not None:
                close(split)
    finally:
        encoded.close()  # stops the worker processes, also on an error
        bar.close()
        for writer in writers.values():
            if writer is not None:
                writer.discard()
    index["complete"] = True
    write_index(out_dir, index)
    seconds = time.perf_counter() - start_time
    _say(
        progress,
        f"{out_dir}: {_summary(index)}; encoded {n_bytes / 1e6:.1f} MB in {seconds:.1f} s "
        f"({n_bytes / 1e6 / max(seconds, 1e-9):.2f} MB/s, {workers} workers)",
    )
    n_valid = sum(s["tokens"] for s in index["splits"]["valid"])
    if valid_fraction > 0 and n_valid <= 1024:  # GPT-2's window: the largest config's
        # validation takes whole tasks: a text of one task has none, whatever the fraction
        more = (f"a larger {name('valid_fraction')} gives more" if len(tasks) > 1 else
                f"the text is one encoding task, and validation takes whole ones: a smaller "
                f"{name('block_bytes')} cuts it into more")  # fmt: skip
        print(f"prepare: the validation split has {n_valid:,} tokens: training can validate "
              f"windows of at most {max(n_valid - 1, 0):,} tokens (GPT-2's are 1,024); {more}",
              file=sys.stderr)  # fmt: skip
    return index


def available_cores() -> int:
    """The CPU cores this process may run on (its affinity, as a container or taskset sets
    it), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        return os.cpu_count() or 1


def _encode(
    tasks: list[Task], pending: list[int], tokeniser_path: Path, workers: int, accelerate: bool
) -> Iterator[np.ndarray]:
    """The ids of each pending task, in order, from `workers` processes (1: this one)."""
    if workers == 1:
        encoder = TaskEncoder(BPETokeniser.load(tokeniser_path), accelerate)
        yield from (encoder(tasks[k]) for k in pending)
        return
    # spawn: workers start clean, whatever threads this process runs
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers, _start_worker, (str(tokeniser_path), accelerate)) as pool:
        yield from pool.imap(_encode_in_worker, (tasks[k] for k in pending))


def _tokeniser(
    out_dir: Path,
    tasks: list[Task],
    index: dict | None,
    vocab_size: int | None,
    tokeniser_path,
    sample_bytes: int,
    name=str,
) -> BPETokeniser:
    """The run's tokeniser, saved as out_dir/tokeniser.json: the one already there for a run
    being finished (checked against the index); else loaded from `tokeniser_path`, or
    trained on a sample."""
    target = out_dir / TOKENISER
    if index is not None:
        return load_tokeniser(out_dir, index)  # checked against the index
    if tokeniser_path is not None:
        tokeniser = BPETokeniser.load(tokeniser_path)
        if tokeniser.eot_id is None:
            raise ValueError(
                f"prepare: {tokeniser_path} has no {END_OF_TEXT} token to separate documents; "
                f"train one with {name('vocab_size')} instead"
            )
    else:
        tokeniser = BPETokeniser(vocab_size, special_tokens=[END_OF_TEXT])
        with warnings.catch_warnings(record=True):  # said below, in the words of a run
            warnings.simplefilter("always")
            tokeniser.train(_sample(tasks, sample_bytes))
        if tokeniser.n_tokens < vocab_size:
            print(
                f"prepare: the text fills {tokeniser.n_tokens:,} of the {vocab_size:,} ids of "
                f"{name('vocab_size')} (it has no more pairs to merge); training from these "
                f"shards takes a vocabulary of {-(-tokeniser.n_tokens // 64) * 64:,} (the ids "
                "rounded up to a multiple of 64) unless --vocab-size is given",
                file=sys.stderr,
            )
    tokeniser.save(target)
    return tokeniser


def _sample(tasks: list[Task], sample_bytes: int) -> str:
    """About `sample_bytes` of text from tasks spread evenly over the corpus."""
    total = sum(t.n_bytes for t in tasks)
    stride = max(1, round(total / sample_bytes))
    pieces, size = [], 0
    for task in tasks[::stride]:
        if size >= sample_bytes:
            break
        pieces.append(read_task(task))
        size += task.n_bytes
    return "\n".join(pieces)


def _fingerprint(files: list[Path]) -> str:
    """A hash of the inputs' paths, sizes and modification times."""
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _existing_index(out_dir: Path, settings: dict, name=str) -> dict | None:
    """The index of an earlier run into `out_dir` with the same settings, or None if there
    is none; an error if `out_dir` holds anything else."""
    if not (out_dir / INDEX).exists():
        # a lone tokeniser.json is what a run stopped before writing its index leaves
        leftovers = [
            p.name for p in out_dir.iterdir() if not p.name.startswith(".") and p.name != TOKENISER
        ]
        if leftovers:
            raise FileExistsError(
                f"prepare: {out_dir} is not empty ({', '.join(sorted(leftovers)[:5])}) and "
                f"holds no {INDEX}; choose an empty or new {name('out_dir')}"
            )
        return None
    index = read_index(out_dir)
    recorded = index.get("settings", {})
    if not isinstance(recorded, dict) or not all(
        _task_range(shard.get("tasks")) for split in SPLITS for shard in index["splits"][split]
    ):
        raise ShardError(
            f"prepare: {out_dir / INDEX} is malformed (its settings, or a shard's tasks); "
            f"choose a new {name('out_dir')}, or delete it to start again"
        )
    differences = [key for key in settings if recorded.get(key) != settings[key]]
    if differences:
        raise FileExistsError(
            f"prepare: {out_dir} holds shards made with other {', '.join(differences)} "
            f"(the inputs changed, or the options differ); choose a new {name('out_dir')}, or "
            "delete it to start again"
        )
    return index


def _task_range(tasks) -> bool:
    """Whether an index entry's ``tasks`` is what ``ShardWriter.close`` records: [first, end)."""
    return (isinstance(tasks, list) and len(tasks) == 2
            and all(type(k) is int and k >= 0 for k in tasks) and tasks[0] < tasks[1])  # fmt: skip


def _summary(index: dict) -> str:
    parts = []
    for split in SPLITS:
        shards = index["splits"][split]
        parts.append(f"{split} {sum(s['tokens'] for s in shards):,} tokens in {len(shards)} shards")
    return ", ".join(parts)


def _say(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr)


# ------------------------------------------------------------------ command line
def _vocab_size(text: str) -> int:
    """A BPE vocabulary with an end-of-text token: 256 byte ids, the token, and merges."""
    value = cli.positive_int(text)
    if value < 257:
        raise argparse.ArgumentTypeError(
            f"must be >= 257 (256 bytes and the end-of-text token), got {value}"
        )
    return value


def parse_args(argv=None) -> argparse.Namespace:
    parser = cli.Parser(
        prog="python -m tricycle_datasets.prepare",
        description="Tokenise text files into token shards for training (see the module "
        "docstring).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = parser.add_argument
    add("inputs", nargs="+", metavar="INPUT", help="text files, directories or globs")
    add("--out-dir", type=Path, required=True, help="where the shards and index go")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--vocab-size", type=_vocab_size, help="train a BPE with this many ids")
    which.add_argument("--tokeniser", type=Path, help="use this tokeniser.json instead")
    add("--workers", type=cli.positive_int, default=available_cores(),
        help="encoding processes (at most the cores)")  # fmt: skip
    add("--shard-tokens", type=cli.positive_int, default=1 << 24, help="ids per shard (at least)")
    add(
        "--valid-fraction",
        type=cli.unit_interval,
        default=0.01,
        help="share of the encoding tasks (blocks of --block-bytes, or whole small files) "
        "for validation",
    )
    add("--sample-bytes", type=cli.positive_int, default=16 << 20, help="text to train the BPE on")
    add("--block-bytes", type=cli.positive_int, default=1 << 20, help="bytes per encoding task")
    add(
        "--extensions",
        default=",".join(DEFAULT_EXTENSIONS),
        help="file name endings searched for in directories, comma-separated",
    )
    add("--no-tiktoken", action="store_true", help="encode in pure Python (same ids)")
    add("--no-progress", action="store_true", help="no progress bar or summary")
    return parser.parse_args(argv)


@cli.warnings_in_one_line("prepare")
def main(argv=None) -> dict:
    args = parse_args(argv)
    extensions = tuple(e if e.startswith(".") else f".{e}" for e in args.extensions.split(","))
    made = missing_directories(args.out_dir)
    try:
        return _prepare(
            args.inputs, args.out_dir, args.vocab_size, args.tokeniser, args.workers,
            args.shard_tokens, args.valid_fraction, extensions, args.sample_bytes,
            args.block_bytes, not args.no_progress, not args.no_tiktoken, name=FLAGS.get,
        )  # fmt: skip
    except (OSError, ValueError, DirectoryLocked) as error:
        remove_empty(made)  # a mistake (a bad --tokeniser, say) leaves no folder behind
        message = str(error)
        message = message if message.startswith("prepare: ") else f"prepare: {message}"
        raise SystemExit(message) from None


if __name__ == "__main__":
    main()
