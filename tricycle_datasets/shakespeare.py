"""Tiny Shakespeare (Karpathy's char-rnn corpus, 1.1 MB), tokenised.

    tokens = Shakespeare(vocab_size=1024)       # byte-level BPE
    tokens = ShakespeareChar()                  # 65 characters

The text comes from, in order: `data_dir`, the directory in `$TRICYCLE_DATA_DIR`, or a
download (cached and checksummed, see `download.py`). A directory is searched for
`tinyshakespeare.txt` or `input.txt`. The last 10% (cut at a line end) is the validation set.
"""

import os
from pathlib import Path

from tricycle_datasets import Corpus, split_text
from tricycle_datasets.download import DownloadError, cache_dir, download

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
FILENAMES = ("tinyshakespeare.txt", "input.txt")


class Shakespeare(Corpus):
    """Tiny Shakespeare encoded with a byte-level BPE tokeniser of `vocab_size` ids."""

    def __init__(self, vocab_size: int, data_dir: str | os.PathLike | None = None):
        text = load_text(data_dir)
        super().__init__("shakespeare", *split_text(text), vocab_size=vocab_size)


class ShakespeareChar(Corpus):
    """Tiny Shakespeare encoded one id per character (65 ids)."""

    def __init__(self, data_dir: str | os.PathLike | None = None):
        text = load_text(data_dir)
        super().__init__("shakespeare", *split_text(text), vocab_size=None, char=True)


def load_text(data_dir: str | os.PathLike | None = None) -> str:
    """The tiny-shakespeare text, from `data_dir`, `$TRICYCLE_DATA_DIR` or a download."""
    if data_dir is not None:
        # An explicit directory is what the user wants: fail rather than download instead.
        path = _find(Path(data_dir))
        if path is None:
            raise FileNotFoundError(f"none of {FILENAMES} found in data_dir={str(data_dir)!r}")
        return path.read_text(encoding="utf-8")

    env_dir = os.environ.get("TRICYCLE_DATA_DIR")
    path = _find(Path(env_dir)) if env_dir else None
    if path is None:
        try:
            path = download(URL, cache_dir() / "data" / FILENAMES[0], SHA256)
        except DownloadError as e:
            raise FileNotFoundError(
                f"tiny-shakespeare is not available offline and the download failed ({e}). "
                f"Fix: put {URL} as tinyshakespeare.txt in a directory and pass "
                "Shakespeare(..., data_dir=that_directory) or set TRICYCLE_DATA_DIR to it."
            ) from e
    return path.read_text(encoding="utf-8")


def _find(directory: Path) -> Path | None:
    return next((directory / name for name in FILENAMES if (directory / name).is_file()), None)
