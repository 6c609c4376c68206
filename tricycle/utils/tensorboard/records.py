"""TFRecord framing and the event file TensorBoard reads.

A record is: its length (uint64, little-endian), the masked CRC32C of those eight bytes
(uint32), the data, and the masked CRC32C of the data. CRC32C is the Castagnoli CRC
(reflected polynomial 0x82F63B78), computed here from a 256-entry table; its mask rotates the
CRC right by 15 bits and adds 0xA282EAD8 (modulo 2**32), as TensorFlow's record format says.

``EventFileWriter`` writes ``events.out.tfevents.<time>.<host>.<pid>.<n><suffix>`` in a log
directory, opening with the ``brain.Event:2`` version event. Events wait in a queue that is
written out when ``max_queue`` are pending, when ``flush_secs`` have passed since the last
write (checked as events arrive: there is no background thread, as torch's writer has), and at
``flush``/``close``."""

import itertools
import os
import socket
import struct
import time

from tricycle.utils.tensorboard import proto

_POLYNOMIAL = 0x82F63B78
_MASK_DELTA = 0xA282EAD8


def _table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _POLYNOMIAL if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc32c(payload: bytes) -> int:
    """The CRC32C (Castagnoli) of ``payload``."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in payload:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(payload: bytes) -> int:
    """The CRC32C of ``payload``, rotated right 15 bits plus 0xA282EAD8: what records store."""
    crc = crc32c(payload)
    return ((crc >> 15 | crc << 17) + _MASK_DELTA) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    """``payload`` as one TFRecord: length, its masked CRC, the data, the data's masked CRC."""
    header = struct.pack("<Q", len(payload))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + payload
        + struct.pack("<I", masked_crc32c(payload))
    )


def event(
    wall_time: float,
    step: int | None = None,
    *,
    summary: bytes | None = None,
    file_version: str | None = None,
    session_status: int | None = None,
    writer: str | None = None,
) -> bytes:
    """An ``Event`` message (wall_time 1, step 2, file_version 3, summary 5, session_log 7,
    source_metadata 10); ``summary`` is an encoded ``Summary``, ``session_status`` a
    ``SessionLog`` status (1: START)."""
    fields = [proto.double(1, wall_time)]
    if step is not None:
        fields.append(proto.integer(2, int(step)))
    if file_version is not None:
        fields.append(proto.data(3, file_version))
    if summary is not None:
        fields.append(proto.data(5, summary))
    if session_status is not None:
        fields.append(proto.data(7, proto.integer(1, session_status)))
    if writer is not None:
        fields.append(proto.data(10, proto.data(1, writer)))
    return b"".join(fields)


_FILES = itertools.count()  # one number per event file this process opens


class EventFileWriter:
    """Writes events, framed as records, to a new event file in ``log_dir`` (see the module)."""

    def __init__(
        self, log_dir, max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = ""
    ):
        self.log_dir = str(log_dir)
        os.makedirs(self.log_dir, exist_ok=True)
        name = "events.out.tfevents.%010d.%s.%s.%s" % (  # noqa: UP031 - TensorBoard's pattern
            time.time(),
            socket.gethostname(),
            os.getpid(),
            next(_FILES),
        )
        self.path = os.path.join(self.log_dir, name + filename_suffix)
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.queue: list[bytes] = []
        self.file = open(self.path, "wb")  # noqa: SIM115 - held open until close
        self.last_flush = time.time()
        self.add_event(
            event(time.time(), file_version="brain.Event:2", writer="tricycle.utils.tensorboard")
        )
        self.flush()

    def add_event(self, encoded_event: bytes) -> None:
        """Queue one encoded ``Event``; write the queue out when it is full or old enough."""
        if self.file is None:
            raise RuntimeError(f"EventFileWriter: {self.path} is closed")
        self.queue.append(frame(encoded_event))
        if len(self.queue) >= self.max_queue or time.time() - self.last_flush >= self.flush_secs:
            self.flush()

    def flush(self) -> None:
        """Write the queued events to disk."""
        if self.file is None:
            return
        self.file.write(b"".join(self.queue))
        self.file.flush()
        self.queue = []
        self.last_flush = time.time()

    def close(self) -> None:
        self.flush()
        if self.file is not None:
            self.file.close()
            self.file = None

    def get_logdir(self) -> str:
        return self.log_dir


__all__ = ["EventFileWriter", "crc32c", "event", "frame", "masked_crc32c"]
