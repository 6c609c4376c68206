"""TensorBoard's ``Summary`` messages, encoded by hand (``proto``), as torch's writer makes them.

Field numbers are those of tensorboard's public .proto files: ``Summary`` (value 1),
``Summary.Value`` (tag 1, simple_value 2, image 4, histo 5, tensor 8, metadata 9),
``Summary.Image`` (height 1, width 2, colorspace 3, encoded_image_string 4),
``HistogramProto`` (min 1, max 2, num 3, sum 4, sum_squares 5, bucket_limit 6, bucket 7),
``SummaryMetadata`` (plugin_data 1: plugin_name 1, content 2), ``TensorProto`` (dtype 1,
tensor_shape 2, float_val 5, double_val 6, string_val 8) and the hparams plugin's messages."""

import numpy as np

from tricycle.tensor import Tensor
from tricycle.utils.tensorboard import proto
from tricycle.utils.tensorboard.images import encode_png, to_hwc

DT_FLOAT, DT_DOUBLE, DT_STRING = 1, 2, 7  # TensorFlow's DataType enum


def to_numpy(value) -> np.ndarray:
    """A tricycle Tensor (copied to the host; bfloat16 as float16, as torch's writer does),
    numpy array or Python/numpy scalar (as a 1-element array) as a numpy array."""
    if isinstance(value, np.ndarray):
        return value
    if np.isscalar(value):
        return np.array([value])
    if isinstance(value, Tensor):
        array = value.numpy()
        return array.astype(np.float16) if array.dtype.name == "bfloat16" else array
    raise NotImplementedError(
        "SummaryWriter: expected a tricycle Tensor, numpy array or number, got "
        f"{type(value).__name__}"
    )


def _summary(*values: bytes) -> bytes:
    return b"".join(proto.data(1, value) for value in values)


def _metadata(plugin_name: str, content: bytes = b"") -> bytes:
    plugin = proto.data(1, plugin_name) + (proto.data(2, content) if content else b"")
    return proto.data(9, proto.data(1, plugin))


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> bytes:
    """A one-number summary: ``simple_value``, or (``new_style``) a float/double tensor with
    the scalars plugin's metadata."""
    array = to_numpy(value).squeeze()
    if array.ndim != 0:
        raise AssertionError(
            f"add_scalar: {tag!r} needs one value, got {array.size} of shape {array.shape}"
        )
    number = float(array)
    if not new_style:
        return _summary(proto.data(1, tag) + proto.single(2, number))
    if double_precision:
        tensor = proto.integer(1, DT_DOUBLE) + proto.packed_doubles(6, [number])
    else:
        tensor = proto.integer(1, DT_FLOAT) + proto.packed_floats(5, [number])
    return _summary(proto.data(1, tag) + proto.data(8, tensor) + _metadata("scalars"))


def default_bins() -> list[float]:
    """TensorFlow's histogram edges: ±1e-12 growing by 1.1 up to 1e20, and 0."""
    edge, positive = 1e-12, []
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1
    return [-e for e in reversed(positive)] + [0] + positive


def histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts) -> bytes:  # noqa: A002 - torch's names
    """A ``HistogramProto`` summary from its parts (each bucket's upper limit and count)."""
    histo = b"".join(
        [
            proto.double(1, min),
            proto.double(2, max),
            proto.double(3, num),
            proto.double(4, sum),
            proto.double(5, sum_squares),
            proto.packed_doubles(6, bucket_limits),
            proto.packed_doubles(7, bucket_counts),
        ]
    )
    return _summary(proto.data(1, tag) + proto.data(5, histo))


def histogram(tag: str, values, bins, max_bins: int | None = None) -> bytes:
    """The histogram of ``values`` over ``bins`` (numpy.histogram's), as torch's writer makes
    it: at most ``max_bins`` buckets (neighbours merged), trimmed to the buckets from the one
    before the first non-empty one (an empty bucket that marks the left edge) to the last
    non-empty one."""
    values = to_numpy(values).astype(float).reshape(-1)
    if values.size == 0:
        raise ValueError(f"add_histogram: {tag!r} has no values")
    counts, limits = np.histogram(values, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        merge = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % merge)).reshape(-1, merge).sum(axis=1)
        limits = np.concatenate([limits[:-1:merge], limits[-1:]])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ValueError(f"add_histogram: no value of {tag!r} falls within the bins")
    first, last = int(filled[0]), int(filled[-1])
    counts = np.concatenate(
        [[0] if first == 0 else counts[first - 1 : first], counts[first : last + 1]]
    )
    limits = limits[first : last + 2]
    return histogram_raw(
        tag,
        values.min(),
        values.max(),
        len(values),
        values.sum(),
        values.dot(values),
        limits,
        counts,
    )


def image(tag: str, value, dataformats: str = "NCHW") -> bytes:
    """An image summary (PNG): uint8 values as they are, other dtypes taken as [0, 1] and
    scaled by 255, clipped to [0, 255] and truncated to uint8, as torch's writer does."""
    array = to_hwc(to_numpy(value), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    pixels = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    picture = b"".join(
        [
            proto.integer(1, height),
            proto.integer(2, width),
            proto.integer(3, channels),
            proto.data(4, encode_png(pixels)),
        ]
    )
    return _summary(proto.data(1, tag) + proto.data(4, picture))


def text(tag: str, string: str) -> bytes:
    """A text summary: a 1-element string tensor under ``<tag>/text_summary``, text plugin."""
    shape = proto.data(2, proto.integer(1, 1))  # TensorShapeProto: one Dim of size 1
    tensor = proto.integer(1, DT_STRING) + proto.data(2, shape) + proto.data(8, string)
    return _summary(
        proto.data(1, tag + "/text_summary") + _metadata("text") + proto.data(8, tensor)
    )
