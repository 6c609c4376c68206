"""Audio and video summaries, as torch's ``add_audio`` and ``add_video`` make them.

Audio: mono 16-bit PCM in a WAV file written here (a RIFF header, a ``fmt`` chunk: format 1,
one channel, the rate, bytes a second, 2 bytes a frame, 16 bits; a ``data`` chunk of the
little-endian samples), samples being the values (clipped to [-1, 1], with torch's printed
warning) times 32767, truncated. ``Summary.Audio``: sample_rate 1 (float), num_channels 2,
length_frames 3, encoded_audio_string 4, content_type 5; ``Summary.Value.audio`` is field 6.

Video: a (N, T, C, H, W) batch of clips becomes one clip of (T, H', W', C) frames, the N clips
laid out in a grid (N padded with blank clips to a power of two; 2**((bit_length(N) - 1) // 2)
rows), as torch's writer does; values scaled to uint8 as images are, then an animated GIF
(``gif``) in a ``Summary.Image``: torch has moviepy write the GIF, tricycle writes it here."""

import struct

import numpy as np

from tricycle.utils.tensorboard import proto
from tricycle.utils.tensorboard.gif import encode_gif
from tricycle.utils.tensorboard.summaries import _summary, to_numpy


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """Mono int16 ``samples`` as the bytes of a WAV file."""
    payload = np.asarray(samples, dtype="<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, int(sample_rate), int(sample_rate) * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", len(payload)) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def audio(tag: str, value, sample_rate: int = 44100) -> bytes:
    """An audio summary of a one-dimensional (after squeezing) signal in [-1, 1]."""
    array = to_numpy(value).squeeze()
    if array.size and abs(array).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        array = array.clip(-1, 1)
    if array.ndim != 1:
        raise AssertionError(
            f"add_audio: input tensor should be 1 dimensional, got shape {array.shape}"
        )
    samples = (array * np.iinfo(np.int16).max).astype("<i2")
    sound = b"".join(
        [
            proto.single(1, sample_rate),
            proto.integer(2, 1),
            proto.integer(3, samples.shape[-1]),
            proto.data(4, encode_wav(samples, sample_rate)),
            proto.data(5, "audio/wav"),
        ]
    )
    return _summary(proto.data(1, tag) + proto.data(6, sound))


def video_frames(clips: np.ndarray) -> np.ndarray:
    """A (N, T, C, H, W) batch as (T, rows * H, cols * W, C) frames: the clips in a grid."""
    if clips.ndim != 5:
        raise ValueError(f"add_video: expected a (N, T, C, H, W) tensor, got shape {clips.shape}")
    count, steps, channels, height, width = clips.shape
    if clips.dtype == np.uint8:
        clips = np.float32(clips) / 255.0
    if count & (count - 1):  # pad to the next power of two
        blank = np.zeros((2 ** count.bit_length() - count, *clips.shape[1:]))
        clips = np.concatenate([clips, blank], axis=0)
    rows = 2 ** ((count.bit_length() - 1) // 2)
    cols = clips.shape[0] // rows
    grid = clips.reshape(rows, cols, steps, channels, height, width).transpose(2, 0, 4, 1, 5, 3)
    return grid.reshape(steps, rows * height, cols * width, channels)


def video(tag: str, value, fps: float = 4) -> bytes:
    """A video summary: the clips' grid as an animated GIF (``Summary.Image``)."""
    frames = video_frames(to_numpy(value))
    scale = 1 if frames.dtype == np.uint8 else 255
    frames = (frames.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    _, height, width, channels = frames.shape
    if channels not in (1, 3, 4):
        raise ValueError(f"add_video: expected 1, 3 or 4 channels, got {channels}")
    rgb = np.repeat(frames, 3, axis=3) if channels == 1 else frames[..., :3]
    picture = b"".join(
        [
            proto.integer(1, height),
            proto.integer(2, width),
            proto.integer(3, channels),
            proto.data(4, encode_gif(np.ascontiguousarray(rgb), fps)),
        ]
    )
    return _summary(proto.data(1, tag) + proto.data(4, picture))


__all__ = ["audio", "encode_wav", "video", "video_frames"]
