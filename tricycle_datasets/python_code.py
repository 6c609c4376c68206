"""The embedded default corpus: the `.py` sources of the running Python's standard library.

Real code, present wherever Python is, so training needs no download. Test suites
(`test/`, `tests/`, `idlelib/idle_test/`, ...), `site-packages` and files that are not valid
UTF-8 are left out. With `max_bytes`, a deterministic pseudo-random sample of whole files
(ordered by a hash of their path) is taken up to that size, so a small corpus still spans
the whole library. Every 10th file, in path order, is the validation set.
"""

import hashlib
import os
import sysconfig
from pathlib import Path

from tricycle import checks
from tricycle_datasets import Corpus, check_vocab_size, split_documents

# Directory names never descended into: third-party packages, caches and test suites.
EXCLUDED_DIRS = frozenset(
    {"site-packages", "dist-packages", "__pycache__", "test", "tests", "idle_test"}
)


class PythonCode(Corpus):
    """Python standard-library source code, tokenised.

    Args:
        vocab_size: BPE vocabulary size (or, with `char=True`, as for `Corpus`).
        max_bytes: take files up to this many UTF-8 bytes in total; None for all (~12 MB on
            CPython 3.11). The default, 4 MB, keeps a CPU run quick.
        root: a directory of Python code to use instead of the standard library.
        char: a character-level tokeniser instead of BPE.
    """

    @checks.arguments(max_bytes=checks.optional(checks.positive_int), char=checks.boolean)
    def __init__(
        self,
        vocab_size: int | None = 1024,
        max_bytes: int | None = 4_000_000,
        root: str | os.PathLike | None = None,
        char: bool = False,
    ):
        check_vocab_size("PythonCode", vocab_size, char)
        root = Path(root) if root is not None else Path(sysconfig.get_paths()["stdlib"])
        if not root.is_dir():
            raise FileNotFoundError(f"PythonCode: root={str(root)!r} is not a directory")
        sources = select_sources(root, max_bytes)
        if len(sources) < 10:
            raise ValueError(
                f"PythonCode: only {len(sources)} files of {root} fit in max_bytes={max_bytes}; "
                "at least 10 are needed for a train/validation split (raise max_bytes)"
            )
        super().__init__("python", *split_documents(list(sources.values())), vocab_size, char)
        self.files = list(sources)


def select_sources(root: Path, max_bytes: int | None = None) -> dict[str, str]:
    """{relative posix path: source} of the chosen files under `root`, sorted by path."""
    sources = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in EXCLUDED_DIRS]
        for filename in filenames:
            if filename.endswith(".py"):
                path = Path(dirpath) / filename
                try:
                    sources[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue  # not UTF-8 (a few legacy files), or unreadable: skip it

    if max_bytes is not None:
        # Hash order is a fixed shuffle: the same files on every machine with this stdlib.
        chosen, total = set(), 0
        for rel in sorted(sources, key=lambda rel: hashlib.sha256(rel.encode()).digest()):
            size = len(sources[rel].encode("utf-8"))
            if total + size <= max_bytes:
                chosen.add(rel)
                total += size
        sources = {rel: src for rel, src in sources.items() if rel in chosen}
    return dict(sorted(sources.items()))
