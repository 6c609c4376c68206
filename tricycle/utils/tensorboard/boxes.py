"""``add_image_with_boxes``: boxes drawn into an image as torch's writer draws them.

torch draws each (xmin, ymin, xmax, ymax) box with PIL as a closed red line two pixels wide:
left side, bottom, right side, top, in that order. Its pixels are drawn here by numpy: each
coordinate truncated to an integer; a horizontal stroke covers the rows y and y + 1 when it
runs towards +x, the rows y - 1 and y when it runs back; a vertical stroke covers the
columns x and x + 1 running towards +y, x - 1 and x running back; a stroke of no length is
one pixel (checked against PIL's pixels in the tests). A box's label (a red tag holding its
text in black, PIL's default font) is drawn through PIL, as torch does, and so needs PIL, as
does ``rescale`` other than 1 (PIL's Lanczos resampling); the ``Summary.Image`` records the
size before rescaling, as torch's does."""

import numpy as np

from tricycle.utils.tensorboard import proto
from tricycle.utils.tensorboard.images import encode_png, to_hwc
from tricycle.utils.tensorboard.summaries import _summary, to_numpy

RED = (255, 0, 0, 255)


def _fill(image: np.ndarray, rows, cols) -> None:
    height, width = image.shape[:2]
    top, bottom = max(rows[0], 0), min(rows[1], height - 1)
    left, right = max(cols[0], 0), min(cols[1], width - 1)
    if top <= bottom and left <= right:
        image[top : bottom + 1, left : right + 1] = RED[: image.shape[2]]


def draw_box(image: np.ndarray, box) -> None:
    """Draw the outline of ``box`` (xmin, ymin, xmax, ymax) into the (H, W, 3 or 4) uint8
    ``image``, in place."""
    left, top, right, bottom = (int(v) for v in box)
    corners = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
    for (x0, y0), (x1, y1) in zip(corners, corners[1:]):
        if (x0, y0) == (x1, y1):
            _fill(image, (y0, y0), (x0, x0))
        elif y0 == y1:
            _fill(image, (y0, y0 + 1) if x1 > x0 else (y0 - 1, y0), (min(x0, x1), max(x0, x1)))
        else:
            _fill(image, (min(y0, y1), max(y0, y1)), (x0, x0 + 1) if y1 > y0 else (x0 - 1, x0))


def _draw_label(image: np.ndarray, box, label: str) -> np.ndarray:
    """A red tag with ``label`` in black on the box's bottom-left corner, as torch's (PIL)."""
    from PIL import Image, ImageDraw, ImageFont  # noqa: PLC0415 - only for labels, as torch

    picture = Image.fromarray(image)
    draw, font = ImageDraw.Draw(picture), ImageFont.load_default()
    left, bottom = box[0], box[3]
    x0, y0, x1, y1 = font.getbbox(label)
    text_width, text_height = x1 - x0, y1 - y0
    margin = np.ceil(0.05 * text_height)
    draw.rectangle(
        [(left, bottom - text_height - 2 * margin), (left + text_width, bottom)], fill="Red"
    )
    draw.text((left + margin, bottom - text_height - margin), label, fill="black", font=font)
    return np.array(picture)


def _resize(image: np.ndarray, rescale: float) -> np.ndarray:
    from PIL import Image  # noqa: PLC0415 - torch's Lanczos resampling

    height, width = image.shape[:2]
    size = (int(width * rescale), int(height * rescale))
    return np.array(Image.fromarray(image).resize(size, Image.Resampling.LANCZOS))


def image_boxes(tag: str, value, boxes, rescale=1, dataformats="CHW", labels=None) -> bytes:
    """An image summary of ``value`` with ``boxes`` ((N, 4) xmin, ymin, xmax, ymax) drawn."""
    array = to_hwc(to_numpy(value), dataformats)
    scale = 1 if array.dtype == np.uint8 else 255
    image = (array.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    boxes = to_numpy(boxes)
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(
            f"add_image_with_boxes: expected (N, 4) boxes (xmin, ymin, xmax, ymax), got shape "
            f"{boxes.shape}"
        )
    for i, box in enumerate(boxes):
        draw_box(image, box)
        if labels is not None and labels[i]:
            image = _draw_label(image, box, labels[i])
    height, width, channels = image.shape
    if rescale != 1:
        image = _resize(image, rescale)
    picture = b"".join(
        [
            proto.integer(1, height),
            proto.integer(2, width),
            proto.integer(3, channels),
            proto.data(4, encode_png(image)),
        ]
    )
    return _summary(proto.data(1, tag) + proto.data(4, picture))


__all__ = ["draw_box", "image_boxes"]
