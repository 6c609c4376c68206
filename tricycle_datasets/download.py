"""Download a file once into a local cache, verified by its SHA-256.

The cache directory is `$TRICYCLE_CACHE_DIR`, else `$XDG_CACHE_HOME/tricycle`, else
`~/.cache/tricycle`. A file already there with the right checksum is used without touching
the network; anything else is (re)downloaded to a temporary file, checked, and only then
renamed into place, so an interrupted or corrupted download never looks like a good one.
Downloads land only inside the cache directory. With `$TRICYCLE_OFFLINE` set (to anything but
"" or "0") nothing is downloaded: a file missing from the cache is a `DownloadError` at once,
as without network (for machines that must not reach out, and for tests).
"""

import hashlib
import os
import re
import urllib.request
from pathlib import Path

from tricycle import checks
from tricycle.atomic import atomic_write

_CHUNK_BYTES = 1 << 20


class DownloadError(OSError):
    """A download failed: no network, a bad URL, or an error while reading or writing."""


def cache_dir() -> Path:
    """The directory that holds downloads and tokenised datasets."""
    if os.environ.get("TRICYCLE_CACHE_DIR"):
        return Path(os.environ["TRICYCLE_CACHE_DIR"]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "tricycle"


def inside_cache(path: str | os.PathLike) -> Path:
    """`path` (relative to `cache_dir()`, or absolute) as a path inside the cache directory;
    ValueError if it leads outside it (an absolute path elsewhere, `..`, a symlink out)."""
    root = cache_dir().resolve()
    resolved = (root / Path(path)).resolve()  # an absolute `path` replaces `root` here
    if resolved == root or not resolved.is_relative_to(root):
        raise ValueError(
            f"download: path {str(path)!r} is outside the cache directory {root} "
            "($TRICYCLE_CACHE_DIR); give a path relative to it"
        )
    return resolved


def sha256_file(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's contents."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@checks.arguments(timeout=checks.positive)
def download(url: str, path: str | os.PathLike, sha256: str, timeout: float = 60.0) -> Path:
    """Return the path of a verified local copy of `url`, downloading it if needed.

    Args:
        url: any URL urllib opens (https://, file://, ...).
        path: where to keep the file, inside `cache_dir()` (relative to it, or an absolute
            path within it); a path that leads outside is an error.
        sha256: the expected hex SHA-256 of the file.
        timeout: seconds to wait for the server before giving up.

    Raises:
        DownloadError: the URL could not be fetched (the message says why).
        ValueError: the downloaded bytes do not have the expected checksum (nothing is
            kept), or an argument is malformed.
    """
    if not isinstance(url, str) or not url:
        raise ValueError(f"download: url must be a non-empty str, got {url!r}")
    if not isinstance(sha256, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
        raise ValueError(f"download: sha256 must be 64 hex digits, got {sha256!r}")
    path = inside_cache(path)
    expected = sha256.lower()
    if path.is_file() and sha256_file(path) == expected:
        return path  # cached: no network
    if os.environ.get("TRICYCLE_OFFLINE", "") not in ("", "0"):
        raise DownloadError(f"could not download {url} to {path}: TRICYCLE_OFFLINE is set")

    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, atomic_write(path) as f:
            while chunk := response.read(_CHUNK_BYTES):
                digest.update(chunk)
                f.write(chunk)
            actual = digest.hexdigest()
            if actual != expected:
                # Raising inside atomic_write discards the temporary file.
                raise ValueError(
                    f"checksum mismatch downloading {url} to {path}: expected sha256 "
                    f"{expected}, got {actual}"
                )
    except OSError as e:  # urllib.error.URLError, timeouts and disk errors are all OSErrors
        raise DownloadError(f"could not download {url} to {path}: {e}") from e
    return path
