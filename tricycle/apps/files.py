"""Safe files: atomic writes, a lock on a directory, orphaned temporaries, JSON-lines logs.

A crash, a kill -9 or a full disk at any moment must leave every file either as it was or
complete, and two processes must never write one run directory at once:

- ``atomic_write`` writes a temporary file beside the target and renames it over the target
  only once it is complete and flushed to disk;
- ``remove_temporaries`` deletes the temporaries that a killed writer left behind;
- ``missing_directories`` and ``remove_empty``: a command that fails removes the folders it
  made, where it left them empty (a mistyped flag leaves no trace);
- ``DirectoryLock`` gives one process at a time a directory (a lock that its holder's death
  releases, so a killed run never blocks the next);
- ``json_line`` writes one record of a JSON-lines log as strict JSON (a NaN or an infinity,
  which JSON has no word for, as ``null``), and ``read_jsonl`` reads a log whose last line a
  crash may have cut short.
"""

import contextlib
import json
import math
import os
import socket
from pathlib import Path

from tricycle.atomic import TEMPORARY_SUFFIX, atomic_write  # noqa: F401 - part of this API

try:  # POSIX; the lock needs it (the library targets Linux and macOS)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def remove_temporaries(directory: str | os.PathLike, names: list[str]) -> list[Path]:
    """Delete the temporaries ``atomic_write`` left in ``directory`` for the files ``names``
    (a writer killed mid-write leaves one); returns what was removed. Call it only while no
    other process writes there (hold the directory's ``DirectoryLock``)."""
    removed = []
    for name in names:
        for tmp in Path(directory).glob(f".{name}.*{TEMPORARY_SUFFIX}"):
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


def missing_directories(path: str | os.PathLike) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, innermost first: what making
    ``path`` will make."""
    path = Path(path)
    return [p for p in (path, *path.parents) if not p.exists()]


def remove_empty(directories: list[Path]) -> None:
    """Remove ``directories`` (innermost first, as ``missing_directories`` lists them) while
    they are empty: a failed command's folders, where it wrote nothing."""
    for directory in directories:
        try:
            directory.rmdir()  # only an empty one
        except OSError:
            break


class DirectoryLocked(RuntimeError):
    """Another live process holds the directory's lock."""


class DirectoryLock:
    """An exclusive lock on a directory, held by one process at a time.

    The lock is an advisory ``flock`` on ``<directory>/.lock``, which the kernel releases when
    the holder exits, however it exits. The file also records the holder's pid and host:
    another process trying to take the lock is told who holds it, and a process that takes
    over a lock file left by a dead holder can say so (``stale_owner``). ``release`` deletes
    the file while still holding the lock, so a finished run leaves none; a process that
    locked the file just as it was deleted sees that the path no longer names it, and
    starts again with the path's new file (so two processes never hold two files).

        with DirectoryLock("runs/cpu") as lock:
            if lock.stale_owner:
                print(f"took over the lock of {lock.stale_owner}, which is no longer running")
            ...
    """

    NAME = ".lock"

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.path = self.directory / self.NAME
        self.stale_owner: str | None = None
        self._fd: int | None = None

    def acquire(self) -> "DirectoryLock":
        """Take the lock, or raise ``DirectoryLocked`` naming the process that holds it."""
        if fcntl is None:  # pragma: no cover - Windows
            raise OSError("DirectoryLock needs fcntl (Linux or macOS)")
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = _read_owner(fd)
                os.close(fd)
                raise DirectoryLocked(
                    f"{self.directory} is in use by another run ({owner or 'unknown process'}); "
                    "wait for it to finish or choose another directory"
                ) from None
            if _names(self.path, fd):
                break
            os.close(fd)  # its holder deleted it as it released it: lock the path's new file
        self.stale_owner = _read_owner(fd) or None  # a holder that died without cleaning up
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock back and delete its file (a lock file that names a holder means
        that holder died while holding it)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)  # while holding it: see the class docstring
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> "DirectoryLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` is (still) the file open as ``fd``."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    there = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _read_owner(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 200).decode("utf-8", errors="replace").strip()


def json_line(record: dict) -> str:
    """``record`` as one line of a JSON-lines log, newline included. A non-finite float (a
    diverged loss) becomes ``null``, as pandas writes it: Python's ``NaN`` is not JSON, and jq,
    JavaScript and most JSON readers refuse the whole line."""
    return json.dumps(_finite_or_none(record), allow_nan=False) + "\n"


def _finite_or_none(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite_or_none(v) for key, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_or_none(v) for v in value]
    return value


def read_jsonl(path: str | os.PathLike) -> tuple[list[dict], int]:
    """The records of a JSON-lines file and how many lines had to be dropped.

    A process killed (or a disk filled) mid-append leaves a torn last line; such lines, and
    any other line that is not a JSON object, are skipped rather than making the whole log
    unreadable. A missing file has no records.
    """
    path = Path(path)
    if not path.exists():
        return [], 0
    records, dropped = [], 0
    for line in path.read_bytes().decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            dropped += 1
    return records, dropped
