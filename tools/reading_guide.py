"""The README's reading guide, each file's length counted from the checkout.

    python tools/reading_guide.py           # print the guide (Markdown)
    python tools/reading_guide.py --write   # write it into README.md, between its markers

``tests/test_reading_guide.py`` checks that README.md holds exactly what this prints, so the
counts cannot drift from the files. ``python tools/reference_path.py`` says which of these
lines one GPT training step runs.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = (
    "<!-- reading guide: python tools/reading_guide.py --write -->",
    "<!-- end of the reading guide -->",
)

# the reference path of a GPT training step, in reading order (steps 1-4 of the guide)
FILES = [
    "tricycle/graph.py",
    "tricycle/backprop.py",
    "tricycle/tensor.py",
    "tricycle/unary.py",
    "tricycle/binary.py",
    "tricycle/reduce.py",
    "tricycle/ops.py",
    "tricycle/einsum.py",
    "tricycle/contraction.py",
    "tricycle/dispatch.py",
    "tricycle/fused.py",
    "tricycle/norms.py",
    "tricycle/module.py",
    "tricycle/layers.py",
    "tricycle/functions.py",
    "tricycle/activation.py",
    "tricycle/attention.py",
    "tricycle/loss.py",
    "tricycle/ranges.py",
    "tricycle/self_attention.py",
    "tricycle/blocks.py",
    "tricycle/models.py",
    "tricycle/optimisers.py",
    "tricycle/apps/step.py",
    "tricycle/precision.py",
    "tricycle/update.py",
    "tricycle/clipping.py",
]

# <path> is replaced by the file's number of lines
GUIDE = """\
1. **The engine**: `tricycle/graph.py` (<tricycle/graph.py> lines: a node, its inputs and
   derivatives) and `tricycle/backprop.py` (<tricycle/backprop.py>: `backward`'s walk),
   then `tricycle/tensor.py` (<tricycle/tensor.py>: the operators) and the ops it takes them
   from, `unary.py` (<tricycle/unary.py>), `binary.py` (<tricycle/binary.py>), `reduce.py`
   (<tricycle/reduce.py>), `ops.py` (<tricycle/ops.py>), and `einsum.py`
   (<tricycle/einsum.py>: the one linear primitive and its generic gradient) with
   `contraction.py` (<tricycle/contraction.py>: an einsum run as one matmul).
2. **One fused op**: `layer_norm_forward` and `layer_norm_backward` in `tricycle/norms.py`
   (<tricycle/norms.py>), the formula and its closed-form backward in plain xp, and how
   `layer_norm` asks `tricycle/dispatch.py` (<tricycle/dispatch.py>) for a faster kernel and
   shares one backward among its inputs (`tricycle/fused.py`, <tricycle/fused.py>); then the
   `Layer` base class, `tricycle/module.py` (<tricycle/module.py>), and the layers on it,
   `tricycle/layers.py` (<tricycle/layers.py>).
3. **The GPT**: `tricycle/self_attention.py` (<tricycle/self_attention.py>: the attention
   layers), `tricycle/blocks.py` (<tricycle/blocks.py>: MLP and transformer blocks) and
   `tricycle/models.py` (<tricycle/models.py>), on `attention.py` (<tricycle/attention.py>),
   `activation.py` (<tricycle/activation.py>), `functions.py` (<tricycle/functions.py>) and
   `loss.py` (<tricycle/loss.py>), with the ids' range check of `ranges.py` (<tricycle/ranges.py>).
4. **One training step**: `tricycle/apps/step.py` (<tricycle/apps/step.py>: `train_step`:
   the forward in the dtype of `tricycle/precision.py` (<tricycle/precision.py>), loss,
   backward), then `tricycle/update.py` (<tricycle/update.py>: unscale, clip with
   `clipping.py` (<tricycle/clipping.py>), skip on overflow) and the optimiser of
   `tricycle/optimisers.py` (<tricycle/optimisers.py>).
5. **A backend kernel**: `tricycle/backends/cpu/norm.py` (<tricycle/backends/cpu/norm.py>: the
   same layer norm as one compiled loop over rows) and `tricycle/backends/cuda/norm.py`
   (<tricycle/backends/cuda/norm.py>) with `norm.cu`.

The files of steps 1-4 hold <total> lines (<count> files, docstrings and every op included);
`python tools/reference_path.py` prints which of them one GPT training step runs with the
kernels off."""


def lines(path: str) -> int:
    return len((ROOT / path).read_text(encoding="utf-8").splitlines())


def guide() -> str:
    """The guide with every count filled in."""
    counts = {"total": f"{sum(map(lines, FILES)):,}", "count": str(len(FILES))}
    return re.sub(r"<([\w/.]+)>", lambda m: counts.get(m[1]) or f"{lines(m[1]):,}", GUIDE)


def section() -> str:
    return f"{BEGIN}\n{guide()}\n{END}"


def written(text: str) -> str:
    """``text`` (a README) with its guide between the markers replaced by the current one."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"reading_guide: README.md has no {BEGIN!r} ... {END!r} markers")
    return text[:start] + section() + text[end + len(END) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="update README.md in place")
    if parser.parse_args().write:
        README.write_text(written(README.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(guide() + "\n")


if __name__ == "__main__":
    main()
