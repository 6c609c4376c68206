"""The embedding projector's files, laid out as torch's ``add_embedding`` writes them.

Each embedding goes to ``<log_dir>/<step, 5 digits>/<tag, with % / \\ escaped as %xx>/``:
``tensors.tsv`` (a row per point, tab-separated ``str`` of each value as a Python float),
``metadata.tsv`` (a label per line, or with ``metadata_header`` a header row and tab-separated
columns) and ``sprite.png`` (``label_img``'s (N, C, H, W) images in a grid of ceil(sqrt(N))
columns, on a square canvas as wide as the grid, values taken as [0, 1] and scaled by 255).
``<log_dir>/projector_config.pbtxt`` lists every embedding the writer has added, in protobuf's
text format (``ProjectorConfig.embeddings``: tensor_name, metadata_path, sprite {image_path,
single_image_dim: width, height}, tensor_path), rewritten after each."""

import math
import os

import numpy as np

from tricycle.utils.tensorboard.images import encode_png, make_grid
from tricycle.utils.tensorboard.summaries import to_numpy


def encode_tag(tag: str) -> str:
    """``tag`` with %, / and \\ written as %25, %2f and %5c (a directory name)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def metadata_tsv(metadata, metadata_header=None) -> str:
    if not metadata_header:
        return "".join(f"{label}\n" for label in metadata)
    if len(metadata_header) != len(metadata[0]):
        raise AssertionError("len of header must be equal to the number of columns in metadata")
    rows = [metadata_header, *metadata]
    return "".join("\t".join(str(cell) for cell in row) + "\n" for row in rows)


def sprite(label_img: np.ndarray) -> np.ndarray:
    """The (side, side, 3) uint8 sprite of (N, C, H, W) images in [0, 1]."""
    grid = make_grid(label_img, ncols=math.ceil(label_img.shape[0] ** 0.5)).transpose(1, 2, 0)
    canvas = np.zeros((grid.shape[1], grid.shape[1], 3))
    canvas[: grid.shape[0]] = grid
    return np.uint8((canvas * 255).clip(0, 255))


_ESCAPES = {10: "\\n", 13: "\\r", 9: "\\t", 34: '\\"', 39: "\\'", 92: "\\\\"}


def _quoted(text: str) -> str:
    """A text-format string, escaped as protobuf's writer does (UTF-8 kept as it is)."""
    escaped = (
        _ESCAPES.get(ord(c)) or (c if ord(c) >= 32 and ord(c) != 127 else f"\\{ord(c):03o}")
        for c in text
    )
    return '"' + "".join(escaped) + '"'


def embedding_info(tag: str, step: int, subdir: str, has_metadata: bool, label_img) -> str:
    """One ``embeddings { ... }`` entry of the projector's config, in text format."""
    lines = [f"  tensor_name: {_quoted(f'{tag}:{str(step).zfill(5)}')}"]
    if has_metadata:
        lines.append(f"  metadata_path: {_quoted(subdir + '/metadata.tsv')}")
    if label_img is not None:
        lines += [
            "  sprite {",
            f"    image_path: {_quoted(subdir + '/sprite.png')}",
            f"    single_image_dim: {label_img.shape[3]}",
            f"    single_image_dim: {label_img.shape[2]}",
            "  }",
        ]
    lines.append(f"  tensor_path: {_quoted(subdir + '/tensors.tsv')}")
    return "embeddings {\n" + "\n".join(lines) + "\n}\n"


def write_embedding(log_dir: str, mat, metadata, label_img, step, tag, metadata_header) -> str:
    """Write one embedding's files under ``log_dir``; returns its config entry."""
    mat = to_numpy(mat)
    step = 0 if step is None else step
    subdir = f"{str(step).zfill(5)}/{encode_tag(tag)}"
    save_path = os.path.join(log_dir, subdir)
    if os.path.exists(save_path):
        if not os.path.isdir(save_path):
            raise NotADirectoryError(f"Path: `{save_path}` exists, but is a file. Cannot proceed.")
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        os.makedirs(save_path)
    if metadata is not None:
        if mat.shape[0] != len(metadata):
            raise AssertionError("add_embedding: #labels should equal with #data points")
        with open(os.path.join(save_path, "metadata.tsv"), "w", encoding="utf-8") as file:
            file.write(metadata_tsv(metadata, metadata_header))
    if label_img is not None:
        label_img = to_numpy(label_img)
        if mat.shape[0] != label_img.shape[0]:
            raise AssertionError("add_embedding: #images should equal with #data points")
        with open(os.path.join(save_path, "sprite.png"), "wb") as file:
            file.write(encode_png(sprite(label_img)))
    if mat.ndim != 2:
        raise AssertionError(
            "add_embedding: mat should be 2D, where mat.size(0) is the number of data points"
        )
    with open(os.path.join(save_path, "tensors.tsv"), "w", encoding="utf-8") as file:
        file.writelines("\t".join(str(v) for v in row.tolist()) + "\n" for row in mat)
    return embedding_info(tag, step, subdir, metadata is not None, label_img)


__all__ = ["embedding_info", "encode_tag", "metadata_tsv", "sprite", "write_embedding"]
