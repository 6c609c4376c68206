"""Atomic writes: a file is either as it was or complete, whatever happens while it is written.

``atomic_write`` writes a temporary file beside the target and renames it over the target only
once it is complete and flushed to disk. It is the one way tricycle writes a file (the
tokeniser, checkpoints, downloads, run files); ``tricycle.apps.files`` adds locks and the
clean-up of temporaries that a killed writer left behind.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator:
    """Open a temporary file beside `path`; on success, rename it onto `path`.

    Readers see either the old file or the complete new one, never a partial write (the
    rename is atomic within one directory); the file and then the directory are flushed to
    disk, so the new file survives a crash once this returns. On error the temporary file is
    removed; a process killed mid-write leaves it behind as ``.<name>.<random>.tmp``, which
    ``remove_temporaries`` cleans up.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX)
    try:
        # mkstemp makes the file private (0600); give it the permissions open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Flush a directory's entries to disk, which makes a rename in it durable: without it a
    crash soon after may bring back the old file (best effort: not every OS or file system
    lets a directory be opened or flushed)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
