"""Summaries of TensorBoard's PR-curve, mesh and custom-scalars plugins, encoded by hand as
torch's writer makes them.

Messages: ``TensorProto`` (dtype 1, tensor_shape 2: ``TensorShapeProto`` with dim 2, each
``Dim`` size 1; float_val 5, string_val 8); ``SummaryMetadata`` (plugin_data 1: plugin_name
1, content 2; display_name 2; summary_description 3); ``PrCurvePluginData`` (version 1,
num_thresholds 2); ``MeshPluginData`` (version 1, name 2, content_type 3: VERTEX 1, FACE 2,
COLOR 3; json_config 5, shape 6 (packed), components 7: the bitmask of the content types
present); the custom-scalars ``Layout`` (category 2: ``Category`` title 1, chart 2:
``Chart`` title 1, multiline 2 (``MultilineChartContent`` tag 1), margin 3
(``MarginChartContent`` series 1: value 1, lower 2, upper 3))."""

import json

import numpy as np

from tricycle.utils.tensorboard import proto
from tricycle.utils.tensorboard.summaries import DT_FLOAT, DT_STRING, _summary, to_numpy

MINIMUM_COUNT = 1e-7  # the PR plugin's floor under precision's and recall's denominators
MESH_CONTENT = {"VERTEX": 1, "FACE": 2, "COLOR": 3}


def _float_tensor(array: np.ndarray) -> bytes:
    shape = b"".join(proto.data(2, proto.integer(1, size)) for size in array.shape)
    values = np.asarray(array, dtype=np.float64).reshape(-1)
    return proto.integer(1, DT_FLOAT) + proto.data(2, shape) + proto.packed_floats(5, values)


def _metadata(plugin: str, content: bytes, display_name=None, description=None) -> bytes:
    plugin_data = proto.data(1, plugin) + (proto.data(2, content) if content else b"")
    fields = proto.data(1, plugin_data)
    if display_name:
        fields += proto.data(2, display_name)
    if description:
        fields += proto.data(3, description)
    return proto.data(9, fields)


def compute_curve(labels, predictions, num_thresholds: int, weights=None) -> np.ndarray:
    """The (6, num_thresholds) rows tp, fp, tn, fn, precision, recall: predictions bucketed
    by ``floor(p * (num_thresholds - 1))``, counts (weighted) at or above each threshold."""
    labels, predictions = to_numpy(labels), to_numpy(predictions)
    weights = 1.0 if weights is None else to_numpy(weights)
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_counts, _ = np.histogram(buckets, num_thresholds, span, weights=positive * weights)
    fp_counts, _ = np.histogram(buckets, num_thresholds, span, weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_counts[::-1])[::-1]
    fp = np.cumsum(fp_counts[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _pr_summary(tag: str, rows: np.ndarray, num_thresholds: int) -> bytes:
    content = proto.integer(2, num_thresholds)
    return _summary(
        proto.data(1, tag) + proto.data(8, _float_tensor(rows)) + _metadata("pr_curves", content)
    )


def pr_curve(tag: str, labels, predictions, num_thresholds: int = 127, weights=None) -> bytes:
    """A PR-curve summary of binary ``labels`` and ``predictions`` in [0, 1] (at most 127
    thresholds, as torch's writer caps them)."""
    num_thresholds = min(num_thresholds, 127)
    return _pr_summary(
        tag, compute_curve(labels, predictions, num_thresholds, weights), num_thresholds
    )


def pr_curve_raw(tag: str, tp, fp, tn, fn, precision, recall, num_thresholds: int = 127) -> bytes:
    """A PR-curve summary from its six rows (``num_thresholds`` capped at 127, as torch's)."""
    rows = np.stack([to_numpy(row) for row in (tp, fp, tn, fn, precision, recall)])
    return _pr_summary(tag, rows, min(num_thresholds, 127))


def mesh(tag: str, vertices, colors, faces, config_dict, display_name=None, description=None):
    """The mesh plugin's summary: one tensor value (``<tag>_VERTEX``, ``_FACE``, ``_COLOR``)
    for each part given, each (B, N, 3)."""
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(vertices, "VERTEX"), (faces, "FACE"), (colors, "COLOR")]
    parts = [(to_numpy(part), kind) for part, kind in parts if part is not None]
    components = 0
    for _, kind in parts:
        components |= 1 << MESH_CONTENT[kind]
    values = []
    for array, kind in parts:
        if array.ndim != 3:
            raise ValueError(f"Tensor shape should be of shape BxNx3, but got {array.shape}.")
        content = b"".join(
            [
                proto.data(2, tag),
                proto.integer(3, MESH_CONTENT[kind]),
                proto.data(5, json_config),
                proto.data(6, b"".join(proto.varint(size) for size in array.shape)),
                proto.integer(7, components),
            ]
        )
        values.append(
            proto.data(1, f"{tag}_{kind}")
            + proto.data(8, _float_tensor(array))
            + _metadata("mesh", content, display_name, description)
        )
    return _summary(*values)


def custom_scalars(layout: dict) -> bytes:
    """The custom-scalars layout ``{category: {title: ["Multiline" or "Margin", tags]}}`` (a
    margin chart's tags: value, lower, upper) under the tag ``custom_scalars__config__``."""
    categories = []
    for category, charts in layout.items():
        encoded = []
        for title, (kind, tags) in charts.items():
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError(
                        f"add_custom_scalars: a margin chart needs 3 tags, got {len(tags)}"
                    )
                series = b"".join(proto.data(n + 1, tag) for n, tag in enumerate(tags))
                content = proto.data(3, proto.data(1, series))
            else:
                content = proto.data(2, b"".join(proto.data(1, tag) for tag in tags))
            encoded.append(proto.data(2, proto.data(1, title) + content))
        categories.append(proto.data(2, proto.data(1, category) + b"".join(encoded)))
    tensor = proto.integer(1, DT_STRING) + proto.data(2, b"") + proto.data(8, b"".join(categories))
    return _summary(
        proto.data(1, "custom_scalars__config__")
        + proto.data(8, tensor)
        + _metadata("custom_scalars", b"")
    )


__all__ = ["compute_curve", "custom_scalars", "mesh", "pr_curve", "pr_curve_raw"]
