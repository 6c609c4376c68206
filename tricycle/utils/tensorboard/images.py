"""Images for TensorBoard: layouts to height x width x channels, a grid of a batch, PNG.

The PNG is written here from numpy and zlib: the signature, an IHDR chunk (8-bit grey, RGB
or RGBA), one IDAT chunk of the zlib-compressed rows (each led by filter byte 0: none) and
IEND; each chunk's CRC is zlib's CRC-32 of its type and data."""

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}  # channels -> PNG colour type


def _chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def encode_png(image: np.ndarray) -> bytes:
    """A uint8 (height, width, channels) array (1 to 4 channels) as PNG bytes."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _COLOUR_TYPES:
        raise ValueError(
            f"encode_png: expected a uint8 (height, width, 1-4 channels) array, got "
            f"{image.dtype} of shape {image.shape}"
        )
    height, width, channels = image.shape
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOUR_TYPES[channels], 0, 0, 0)
    rows = np.concatenate([np.zeros((height, 1), np.uint8), image.reshape(height, -1)], axis=1)
    return (
        _SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(np.ascontiguousarray(rows).tobytes()))
        + _chunk(b"IEND", b"")
    )


def make_grid(images: np.ndarray, ncols: int = 8) -> np.ndarray:
    """A batch (N, 1 or 3, H, W) laid out as one (3, rows * H, ncols * W) image, row by row
    (grey images repeated to three channels; empty cells black), as torch's writer does."""
    if images.ndim == 4 and images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError(
            f"add_images: expected a batch of 1 or 3 channels, got shape {images.shape}"
        )
    count, _, height, width = images.shape
    ncols = min(count, ncols)
    nrows = -(-count // ncols)
    canvas = np.zeros((3, nrows * height, ncols * width), dtype=images.dtype)
    for i, picture in enumerate(images):
        row, col = divmod(i, ncols)
        canvas[:, row * height : (row + 1) * height, col * width : (col + 1) * width] = picture
    return canvas


def to_hwc(array: np.ndarray, dataformats: str) -> np.ndarray:
    """``array`` laid out as ``dataformats`` (NCHW, CHW, HWC, HW, ... any order) as
    (height, width, 3 or 4): a batch becomes a grid, grey becomes three equal channels. A
    layout that does not fit raises AssertionError, torch's writer's kind of error."""
    form = dataformats.upper()
    if len(set(form)) != len(form) or not set(form) <= set("NCHW"):
        raise AssertionError(
            f"add_image: dataformats {dataformats!r} must be distinct letters of NCHW"
        )
    if array.ndim != len(form):
        raise AssertionError(
            f"add_image: an image of shape {array.shape} does not match dataformats {dataformats!r}"
        )
    if len(form) == 4:
        grid = make_grid(array.transpose([form.find(c) for c in "NCHW"]))
        return grid.transpose(1, 2, 0)
    if len(form) == 3:
        hwc = array.transpose([form.find(c) for c in "HWC"])
        return np.concatenate([hwc] * 3, axis=2) if hwc.shape[2] == 1 else hwc
    if len(form) == 2:
        return np.stack([array.transpose([form.find(c) for c in "HW"])] * 3, axis=2)
    raise AssertionError(f"add_image: dataformats {dataformats!r} must have 2 to 4 letters")


def figure_to_image(figures, close: bool = True) -> np.ndarray:
    """A matplotlib figure rendered as a (3, H, W) uint8 image; a list of them as (N, 3, H, W)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - only when a figure is logged
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415

    def render(figure) -> np.ndarray:
        canvas = FigureCanvasAgg(figure)
        canvas.draw()
        width, height = canvas.get_width_height()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8).reshape(height, width, 4)
        if close:
            plt.close(figure)
        return np.moveaxis(rgba[:, :, :3], 2, 0)

    if isinstance(figures, list):
        return np.stack([render(figure) for figure in figures])
    return render(figures)


__all__ = ["encode_png", "figure_to_image", "make_grid", "to_hwc"]
