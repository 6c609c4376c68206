"""Tiny Shakespeare (Karpathy's char-rnn corpus, 1.1 MB), tokenised.

    tokens = Shakespeare(vocab_size=1024)       # byte-level BPE
    tokens = ShakespeareChar()                  # 65 characters

The text comes from, in order: `data_dir`, the directory in `$TRICYCLE_DATA_DIR`, or a
download (cached and checksummed, see `download.py`). A directory is searched for
`tinyshakespeare.txt` or `input.txt`; a directory that was named but does not exist is an
error, never a silent download. A local copy whose SHA-256 is not the official file's is used
with a warning naming both hashes. The last 10% (cut at a line end) is the validation set.
"""

import hashlib
import os
import warnings
from pathlib import Path

from tricycle_datasets import Corpus, check_vocab_size, decode_utf8, read_text, split_text
from tricycle_datasets.download import DownloadError, download

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
FILENAMES = ("tinyshakespeare.txt", "input.txt")


class Shakespeare(Corpus):
    """Tiny Shakespeare encoded with a byte-level BPE tokeniser of `vocab_size` ids."""

    def __init__(self, vocab_size: int, data_dir: str | os.PathLike | None = None):
        check_vocab_size("Shakespeare", vocab_size)
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
        path = _find(Path(data_dir), "data_dir")
        if path is None:
            raise NotAvailable(f"none of {FILENAMES} is in {{where}}", data_dir)
        return _read_local(path)

    env_dir = os.environ.get("TRICYCLE_DATA_DIR")
    path = _find(Path(env_dir), "TRICYCLE_DATA_DIR") if env_dir else None
    if path is not None:
        return _read_local(path)
    try:
        path = download(URL, Path("data") / FILENAMES[0], SHA256)
    except DownloadError as e:
        where = (
            f"none of {FILENAMES} is in TRICYCLE_DATA_DIR={env_dir!r}"
            if env_dir
            else "tiny-shakespeare is not available offline"
        )
        raise NotAvailable(f"{where} and the download failed ({e})") from e
    return read_text(path)


class NotAvailable(FileNotFoundError):
    """Tiny Shakespeare is neither where it was looked for nor downloadable. The message
    names the Python argument (``data_dir``); ``fix("--data-dir")`` gives it in the words of
    a script whose flag takes the directory."""

    def __init__(self, reason: str, directory=None):
        self.reason, self.directory = reason, directory  # reason: "{where}" is the directory
        super().__init__(self.fix("data_dir"))

    def fix(self, name: str) -> str:
        """The message for a caller who names the directory ``name`` (an argument, or a
        flag: "--data-dir")."""
        flag = name.startswith("-")
        where = f"{name} {self.directory}" if flag else f"{name}={str(self.directory)!r}"
        how = f"{name} DIR" if flag else "Shakespeare(..., data_dir=that_directory)"
        reason = self.reason.replace("{where}", where)
        return (
            f"{reason}. Fix: put {URL} as tinyshakespeare.txt in a directory and pass {how}, "
            "or set TRICYCLE_DATA_DIR to it"
        )


def _find(directory: Path, source: str) -> Path | None:
    """The first of FILENAMES in `directory`; an error if the directory does not exist."""
    if not directory.is_dir():
        if source == "data_dir":
            raise NotAvailable("{where} is not a directory", directory)
        raise NotAvailable(f"{source}={str(directory)!r} is not a directory")
    return next((directory / name for name in FILENAMES if (directory / name).is_file()), None)


def _read_local(path: Path) -> str:
    """A local copy's text; a warning if it is not the official file."""
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != SHA256:
        warnings.warn(
            f"{path} is not the official tiny-shakespeare: its sha256 is {actual}, expected "
            f"{SHA256}; using it anyway",
            stacklevel=3,
        )
    return decode_utf8(data, path)
