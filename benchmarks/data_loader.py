"""DataLoader throughput: batches per second of a dataset whose ``__getitem__`` sleeps
(waiting on a disk or a network, say), with worker processes against none, in one call.

    python benchmarks/data_loader.py [--workers 4] [--sleep-ms 1] [--examples 2000]

Prints each configuration's examples/s and its ratio to ``num_workers=0``, the median of
``--rounds`` alternating rounds (worker start-up included: a new epoch starts new workers).
"""

import argparse
import statistics
import time

import numpy as np

from tricycle.data import DataLoader


class Sleepy:
    """A map-style dataset: example i is a (64,) float32 array and a label, after a sleep."""

    def __init__(self, n: int, seconds: float):
        self.n, self.seconds = n, seconds

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return np.full(64, i, dtype=np.float32), i


def examples_per_second(loader: DataLoader) -> float:
    start = time.perf_counter()
    n = sum(len(labels) for _, labels in loader)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    dataset = Sleepy(args.examples, args.sleep_ms / 1000)
    counts = [0, *args.workers]
    rates: dict[int, list[float]] = {n: [] for n in counts}
    for r in range(args.rounds):
        for n in counts if r % 2 == 0 else counts[::-1]:
            loader = DataLoader(dataset, args.batch_size, shuffle=True, seed=r, num_workers=n)
            rates[n].append(examples_per_second(loader))
    base = statistics.median(rates[0])
    print(f"dataset: {args.examples} examples, __getitem__ sleeps {args.sleep_ms:g} ms, "
          f"batch {args.batch_size}; median of {args.rounds} rounds")  # fmt: skip
    for n in counts:
        rate = statistics.median(rates[n])
        print(f"num_workers={n}: {rate:8.0f} examples/s  {rate / base:5.2f}x num_workers=0")


if __name__ == "__main__":
    main()
