"""HellaSwag (Zellers et al., 2019): which of four endings continues a sentence?

    examples = read_examples("hellaswag_val.jsonl")   # a local copy of the official file
    examples = load_val()                              # the official validation set (10,042)

The official JSONL has one object per line, e.g.

    {"ind": 24, "activity_label": "Roof shingle removal", "ctx_a": "A man is sitting on a
     roof.", "ctx_b": "he", "ctx": "A man is sitting on a roof. he", "split": "val",
     "split_type": "indomain", "label": 3, "endings": ["is using wrap to wrap a pair of
     skis.", ...], "source_id": "activitynet~v_-JhWjGDPHMY"}

The context is "ctx" where present, else "ctx_a" and "ctx_b" joined by a space, as the
official files build "ctx". The label may be an int or a string of one (as some copies have
it). The test split has no labels and cannot be scored. `render` puts an example in a
tokeniser's ids; scoring is in `tricycle.apps.evaluate`.
"""

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tricycle import checks
from tricycle_datasets.download import download

URL = "https://raw.githubusercontent.com/rowanz/hellaswag/master/data/hellaswag_val.jsonl"
# The validation file's SHA-256 (12,246,618 bytes), as the Hugging Face `datasets` library
# records it for this URL.
SHA256 = "0aa3b88843990f3f10a97b9575c94d7b71fb2205240ba04ae4884d9e9c992588"


@dataclass(frozen=True)
class Example:
    """One multiple-choice item: `endings[label]` is the right continuation of `context`."""

    context: str
    endings: tuple[str, ...]
    label: int
    activity: str = ""


@checks.arguments(limit=checks.optional(checks.positive_int))
def read_examples(path: str | os.PathLike, limit: int | None = None) -> list[Example]:
    """The examples of a HellaSwag-format JSONL file (the first `limit`, if given). A line
    that is not a valid example is an error naming the file and line."""
    examples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if limit is not None and len(examples) >= limit:
                break
            if line.strip():
                examples.append(_parse(line, f"{path}:{number}"))
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def render(tokeniser, example: Example) -> tuple[list[np.ndarray], int]:
    """The token rows of an example (context + " " + ending, one per ending) and the number
    of context tokens at the start of each."""
    context = tokeniser.encode(example.context)
    rows = [np.concatenate([context, tokeniser.encode(" " + e)]) for e in example.endings]
    return rows, len(context)


def render_all(tokeniser, examples) -> list[tuple[list[np.ndarray], int, int]]:
    """(rows, n_context, label) of each example (``render``), rendered at once: a tokeniser
    that cannot encode one fails here, naming it; no examples is an error too."""
    items = []
    for i, example in enumerate(examples):
        try:
            items.append((*render(tokeniser, example), example.label))
        except ValueError as error:
            raise ValueError(f"HellaSwag example {i}: {error}") from None
    if not items:
        raise ValueError("HellaSwag: no examples")
    return items


def load_val(limit: int | None = None) -> list[Example]:
    """The official validation set, downloaded once into the cache and checked against its
    SHA-256 (see `tricycle_datasets.download`)."""
    return read_examples(download(URL, Path("hellaswag") / "hellaswag_val.jsonl", SHA256), limit)


def _parse(line: str, where: str) -> Example:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not JSON ({e})") from None
    if not isinstance(item, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(item).__name__}")

    context = item.get("ctx")
    if context is None and isinstance(item.get("ctx_a"), str):
        context = " ".join(part for part in (item["ctx_a"], item.get("ctx_b") or "") if part)
    if not isinstance(context, str) or not context:
        raise ValueError(f"{where}: no context: expected a string 'ctx' (or 'ctx_a', 'ctx_b')")

    endings = item.get("endings")
    if (
        not isinstance(endings, list)
        or len(endings) < 2
        or not all(isinstance(e, str) for e in endings)
    ):
        raise ValueError(f"{where}: 'endings' must be a list of at least 2 strings")

    label = item.get("label")
    if label is None:
        raise ValueError(f"{where}: no 'label' (the test split is unlabelled: use the val file)")
    if isinstance(label, str) and label.strip().isdigit():
        label = int(label)
    if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label < len(endings):
        raise ValueError(
            f"{where}: 'label' must be the index of the right ending in [0, {len(endings)}), "
            f"got {label!r}"
        )
    activity = item.get("activity_label")
    return Example(context, tuple(endings), label, activity if isinstance(activity, str) else "")
