"""What backward's traces (``tricycle.traces``: a small record per tensor, for drawing after
backward) cost a GPT's backward: CPUConfig's model at batch 8, backward timed with the traces
and with them stubbed out, alternately, three rounds of ten; prints the medians and their
ratio.

    python benchmarks/backward_traces.py
"""

import time

import numpy as np

import tricycle.graph as graph
from tricycle.configs import CPUConfig
from tricycle.loss import CrossEntropy
from tricycle.models import GPT


class _Stub:
    """A trace that records nothing."""

    __slots__ = ("args", "grad")

    def __init__(self, node):
        pass


def main() -> None:
    config = CPUConfig(dropout=0.0)
    np.random.seed(0)
    model = GPT(config)
    tokens = np.random.default_rng(0).integers(0, config.vocab_size, (8, config.context_window))

    def backward_seconds() -> float:
        loss = CrossEntropy()(tokens, model(tokens))
        start = time.perf_counter()
        loss.backward()
        seconds = time.perf_counter() - start
        model.zero_grad()
        return seconds

    traced = graph.Trace
    for _ in range(3):  # compile and warm up
        backward_seconds()
    for round_ in range(3):
        medians = {}
        for name, record in (("traces", traced), ("stubbed", _Stub)):
            graph.Trace = record
            medians[name] = float(np.median([backward_seconds() for _ in range(10)]))
        graph.Trace = traced
        print(f"round {round_}: backward with traces {medians['traces'] * 1e3:.1f} ms, "
              f"stubbed {medians['stubbed'] * 1e3:.1f} ms, ratio "
              f"{medians['traces'] / medians['stubbed']:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
