"""Animated GIFs written here from numpy: what torch's ``add_video`` asks moviepy for.

The file (GIF89a): the header; the logical screen (width, height, a global colour table of
256 entries); the NETSCAPE2.0 application block (loop for ever); then per frame a graphic
control block (its delay in hundredths of a second) and an image block whose indices into
the colour table are LZW-compressed: codes from 9 to 12 bits, written least significant bit
first in sub-blocks of at most 255 bytes, led by a clear code (256) and ended by the end
code (257); the code width grows when the next free code no longer fits it, and the table
starts again (a clear code) when it holds 4096 codes. The trailer byte 0x3B ends the file.

Colours: frames with at most 256 distinct colours keep them exactly; others are mapped to a
fixed 3-3-2 palette (8 reds, 8 greens, 4 blues; the nearest level of each)."""

import struct

import numpy as np

_CLEAR, _END, _FIRST, _MAX_CODES = 256, 257, 258, 4096


def lzw(indices: bytes) -> bytes:
    """The GIF LZW code stream (8-bit minimum code size) of palette ``indices``, packed."""
    out, buffer, filled = bytearray(), 0, 0
    width = 9

    def emit(code: int) -> None:
        nonlocal buffer, filled
        buffer |= code << filled
        filled += width
        while filled >= 8:
            out.append(buffer & 0xFF)
            buffer >>= 8
            filled -= 8

    table: dict[int, int] = {}
    next_code = _FIRST
    emit(_CLEAR)
    if not indices:
        emit(_END)
        return bytes(out) + (bytes([buffer]) if filled else b"")
    prefix = indices[0]
    for byte in indices[1:]:
        code = table.get(prefix << 8 | byte)
        if code is not None:
            prefix = code
            continue
        emit(prefix)
        if next_code == _MAX_CODES:  # the table is full: start again
            emit(_CLEAR)
            table, next_code, width = {}, _FIRST, 9
        else:
            table[prefix << 8 | byte] = next_code
            next_code += 1
            if next_code > 1 << width and width < 12:
                width += 1
        prefix = byte
    emit(prefix)
    emit(_END)
    if filled:
        out.append(buffer & 0xFF)
    return bytes(out)


def _sub_blocks(payload: bytes) -> bytes:
    blocks = [payload[i : i + 255] for i in range(0, len(payload), 255)]
    return b"".join(bytes([len(b)]) + b for b in blocks) + b"\x00"


def palette_indices(frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(a 256 x 3 uint8 colour table, the (T, H, W) uint8 indices of ``frames`` into it)."""
    colours, inverse = np.unique(frames.reshape(-1, 3), axis=0, return_inverse=True)
    if len(colours) <= 256:
        table = np.zeros((256, 3), np.uint8)
        table[: len(colours)] = colours
        return table, inverse.reshape(frames.shape[:3]).astype(np.uint8)
    levels = [np.round(np.arange(n) * 255 / (n - 1)).astype(np.uint8) for n in (8, 8, 4)]
    steps = [np.rint(frames[..., i] / 255 * (len(lv) - 1)).astype(np.uint8)
             for i, lv in enumerate(levels)]  # fmt: skip
    indices = steps[0] << 5 | steps[1] << 2 | steps[2]
    codes = np.arange(256)
    table = np.stack([levels[0][codes >> 5], levels[1][codes >> 2 & 7], levels[2][codes & 3]], 1)
    return table.astype(np.uint8), indices.astype(np.uint8)


def encode_gif(frames: np.ndarray, fps: float = 4) -> bytes:
    """A uint8 (T, H, W, 3) array as an animated GIF playing at ``fps`` frames a second."""
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
        raise ValueError(
            f"encode_gif: expected a uint8 (frames, height, width, 3) array, got {frames.dtype} "
            f"of shape {frames.shape}"
        )
    if fps <= 0:
        raise ValueError(f"encode_gif: fps should be positive, got {fps}")
    _, height, width, _ = frames.shape
    table, indices = palette_indices(frames)
    delay = round(100 / fps)
    parts = [
        b"GIF89a",
        struct.pack("<HHBBB", width, height, 0xF7, 0, 0),  # a global table of 2**(7+1) colours
        table.tobytes(),
        b"\x21\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", 0) + b"\x00",  # loop for ever
    ]
    for frame in indices:
        parts.append(b"\x21\xf9\x04\x00" + struct.pack("<H", delay) + b"\x00\x00")
        parts.append(b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0))
        parts.append(b"\x08" + _sub_blocks(lzw(frame.tobytes())))
    parts.append(b"\x3b")
    return b"".join(parts)


__all__ = ["encode_gif", "lzw", "palette_indices"]
