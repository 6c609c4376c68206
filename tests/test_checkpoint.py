"""Checkpoint and run files: atomic writes, checksums, crafted files, locks, torn logs."""

import errno
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from tricycle.apps import files
from tricycle.apps.checkpoint import (
    CheckpointError,
    atomic_write_bytes,
    load_pickle,
    load_state,
    save_pickle,
    save_state,
)
from tricycle.apps.files import DirectoryLock, DirectoryLocked, atomic_write, read_jsonl


def test_safe_state_round_trip(tmp_path):
    state = {
        "step": 7,
        "weights": {"blocks.0.w": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "rng": np.random.default_rng(1).bit_generator.state,
        "nested": [1, 2.5, "x", None, True, (np.int64(3), np.zeros(2))],
    }
    save_state(tmp_path / "c.npz", state)
    loaded = load_state(tmp_path / "c.npz")
    assert loaded["step"] == 7 and loaded["rng"] == state["rng"]
    np.testing.assert_array_equal(loaded["weights"]["blocks.0.w"], state["weights"]["blocks.0.w"])
    assert loaded["nested"][:5] == [1, 2.5, "x", None, True] and loaded["nested"][5][0] == 3
    with pytest.raises(TypeError, match="object"):
        save_state(tmp_path / "bad.npz", {"x": np.array([None])})
    with pytest.raises(TypeError, match="cannot be saved"):
        save_state(tmp_path / "bad.npz", {"x": object()})


def test_corrupt_files_raise_clear_errors(tmp_path):
    save_state(tmp_path / "c.npz", {"w": np.ones(1000)})
    data = (tmp_path / "c.npz").read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated.npz"):
        load_state(tmp_path / "truncated.npz")
    np.savez(tmp_path / "plain.npz", w=np.ones(2))
    with pytest.raises(CheckpointError, match="not a tricycle checkpoint"):
        load_state(tmp_path / "plain.npz")
    with pytest.raises(CheckpointError, match="no such"):
        load_state(tmp_path / "missing.npz")
    (tmp_path / "m.pkl").write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(CheckpointError, match="m.pkl"):
        load_pickle(tmp_path / "m.pkl")


def test_writes_are_atomic(tmp_path):
    path = tmp_path / "model.pkl"
    save_pickle({"version": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        save_pickle(Unpicklable(), path)
    with pytest.raises(RuntimeError, match="mid-write"):
        with atomic_write(path) as f:
            f.write(b"partial")
            raise RuntimeError("mid-write")
    assert load_pickle(path) == {"version": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pkl"]  # no temporary left
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new"


# ------------------------------------------------------------------ checksums


def _flip_a_bit(path, offset_fraction: float = 0.6) -> None:
    data = bytearray(path.read_bytes())
    data[int(len(data) * offset_fraction)] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_flipped_bit_in_a_checkpoint_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "checkpoint.npz"
    save_state(path, {"w": np.linspace(0, 1, 5000, dtype=np.float32)})
    _flip_a_bit(path)
    with pytest.raises(CheckpointError, match="checkpoint.npz"):
        load_state(path)


def test_the_checksum_catches_what_the_zip_crc_does_not(tmp_path):
    """A member rewritten with a matching CRC (as a careless tool or a crafted file would)
    still fails the checksum written with the state."""
    path = tmp_path / "c.npz"
    save_state(path, {"w": np.zeros(100, dtype=np.float32)})
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(forged, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "a0.npy":
                member = io.BytesIO()
                np.lib.format.write_array(member, np.ones(100, dtype=np.float32))
                data = member.getvalue()
            target.writestr(info.filename, data)
    with pytest.raises(CheckpointError, match="forged.npz is corrupt.*checksum"):
        load_state(forged)


def test_a_flipped_bit_in_a_pickle_is_an_error_naming_the_file(tmp_path):
    path = tmp_path / "model.pkl"
    save_pickle({"weights": np.linspace(0, 1, 5000)}, path)
    assert pickle.loads(path.read_bytes())["weights"].shape == (5000,)  # pickle.load still works
    _flip_a_bit(path)
    with pytest.raises(CheckpointError, match="model.pkl is corrupt"):
        load_pickle(path)


# ------------------------------------------------------------------ crafted files


def _npz_with_member(path, name: str, data: bytes, metadata: bytes | None = None) -> None:
    """An npz holding ``data`` as member ``name`` beside a valid metadata document."""
    document = {"format": "tricycle-state", "version": 1, "state": {"w": {"__array__": "a0"}}}
    meta = io.BytesIO()
    raw = metadata if metadata is not None else json.dumps(document).encode()
    np.lib.format.write_array(meta, np.frombuffer(raw, dtype=np.uint8))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("__metadata__.npy", meta.getvalue())
        archive.writestr(name, data)


def test_a_header_claiming_terabytes_is_a_checkpoint_error(tmp_path):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**12,)}
    )
    path = tmp_path / "huge.npz"
    _npz_with_member(path, "a0.npy", header.getvalue() + b"\0" * 64)
    with pytest.raises(CheckpointError, match="huge.npz.*claims shape"):
        load_state(path)


def test_deeply_nested_json_is_a_checkpoint_error(tmp_path):
    path = tmp_path / "deep.npz"
    deep = b'{"format": "tricycle-state", "version": 1, "state": ' + b"[" * 100_000
    deep += b"]" * 100_000 + b"}"
    member = io.BytesIO()
    np.lib.format.write_array(member, np.zeros(1))
    _npz_with_member(path, "a0.npy", member.getvalue(), metadata=deep)
    with pytest.raises(CheckpointError, match="deep.npz"):
        load_state(path)
    nested = b'{"format": "tricycle-state", "version": 1, "state": ' + b"[" * 500
    _npz_with_member(path, "a0.npy", member.getvalue(), metadata=nested + b"]" * 500 + b"}")
    with pytest.raises(CheckpointError, match="deep.npz.*nested"):
        load_state(path)


def test_compressed_and_object_members_are_refused(tmp_path):
    member = io.BytesIO()
    np.lib.format.write_array(member, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    path = tmp_path / "objects.npz"
    _npz_with_member(path, "a0.npy", member.getvalue())
    with pytest.raises(CheckpointError, match="objects.npz.*dtype object"):
        load_state(path)
    np.savez_compressed(tmp_path / "zipped.npz", __metadata__=np.zeros(3, np.uint8))
    with pytest.raises(CheckpointError, match="zipped.npz.*compressed"):
        load_state(tmp_path / "zipped.npz")


# ------------------------------------------------------------------ a full disk


class _FullDisk:
    """A file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, f, room: int):
        self._f, self._room = f, room

    def write(self, data):
        self._room -= len(data)
        if self._room < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self._f.write(data)

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def test_a_full_disk_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "checkpoint.npz"
    save_state(path, {"step": 1, "w": np.ones(10_000)})
    real_fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda fd, mode: _FullDisk(real_fdopen(fd, mode), 5000))
    with pytest.raises(OSError, match="No space left"):
        save_state(path, {"step": 2, "w": np.zeros(10_000)})
    monkeypatch.undo()
    assert load_state(path)["step"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]  # no temporary


# ------------------------------------------------------------------ run directories


def test_a_directory_lock_admits_one_process(tmp_path):
    with DirectoryLock(tmp_path / "run") as lock:
        assert lock.stale_owner is None
        other = subprocess.run(
            [sys.executable, "-c",
             "import sys; from tricycle.apps.files import DirectoryLock\n"
             "try:\n    DirectoryLock(sys.argv[1]).acquire()\n"
             "except Exception as e:\n    print(type(e).__name__, e)",
             str(tmp_path / "run")],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.getcwd()},
        )  # fmt: skip
        assert "DirectoryLocked" in other.stdout and f"pid {os.getpid()}" in other.stdout
    with DirectoryLock(tmp_path / "run") as again:  # released: free, and not stale
        assert again.stale_owner is None


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    died = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; from tricycle.apps.files import DirectoryLock\n"
         "DirectoryLock(sys.argv[1]).acquire(); os._exit(9)",  # dies holding it
         str(tmp_path / "run")],
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    assert died.returncode == 9
    with DirectoryLock(tmp_path / "run") as lock:
        assert lock.stale_owner is not None and "pid" in lock.stale_owner
    with pytest.raises(DirectoryLocked):
        with DirectoryLock(tmp_path / "run"), DirectoryLock(tmp_path / "run"):
            pass


def test_temporaries_of_killed_writers_are_removed(tmp_path):
    (tmp_path / ".checkpoint.npz.abc123.tmp").write_bytes(b"half")
    (tmp_path / ".model.pkl.x.tmp").write_bytes(b"half")
    (tmp_path / "notes.tmp").write_bytes(b"someone else's")
    removed = files.remove_temporaries(tmp_path, ["checkpoint.npz", "model.pkl"])
    assert len(removed) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.tmp"]


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1}\n{"step": 2}\n{"step": 3, "lo')
    records, dropped = read_jsonl(path)
    assert [r["step"] for r in records] == [1, 2] and dropped == 1
    assert read_jsonl(tmp_path / "missing.jsonl") == ([], 0)
