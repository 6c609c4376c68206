"""The reference path of a GPT training step: which lines of tricycle run in one step.

    python tools/reference_path.py

Traces one ``train_step`` of the debug GPT with every kernel off (``dispatch.references()``:
the formulas a reader reads) and prints how many distinct lines of each tricycle file ran,
backends left out. It is the length of the path the README's reading guide walks.
"""

import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tricycle import dispatch  # noqa: E402
from tricycle.apps.step import train_step  # noqa: E402
from tricycle.configs import DebugConfig  # noqa: E402
from tricycle.models import GPT  # noqa: E402
from tricycle.optimisers import AdamW  # noqa: E402


def main() -> None:
    config = DebugConfig()
    model, optimiser = GPT(config), AdamW(1e-3)
    ids = np.random.default_rng(0).integers(0, config.vocab_size, (2, config.batch_size, 32))
    seen = collections.defaultdict(set)

    def tracer(frame, event, arg):
        name = frame.f_code.co_filename
        if "/tricycle/" in name and "/backends/" not in name:
            seen[name].add(frame.f_lineno)
            return tracer
        return None

    with dispatch.references():
        train_step(model, optimiser, iter([(ids[0], ids[1])]), max_norm=1.0).settle()  # warm
        sys.settrace(tracer)
        try:
            train_step(model, optimiser, iter([(ids[0], ids[1])]), max_norm=1.0).settle()
        finally:
            sys.settrace(None)
    total = sum(len(lines) for lines in seen.values())
    print(f"one reference GPT training step runs {total} lines in {len(seen)} files:")
    for name, lines in sorted(seen.items(), key=lambda item: -len(item[1])):
        print(f"  {len(lines):4}  {name[name.rindex('tricycle/') :]}")


if __name__ == "__main__":
    main()
