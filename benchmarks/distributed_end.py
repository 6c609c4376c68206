"""How long a training command lingers after its last line, and whether its metrics' tokens/s
are the wall clock's (issue 44).

    python benchmarks/distributed_end.py --run-dir RUN -- python train_smol_gpt.py \\
        --config shakespeare-char --dataset shakespeare-char --device gpu --precision bf16 \\
        --stop-after 600 --eval-interval 200 --no-progress --sample-tokens 0 --out-dir RUN
    python benchmarks/distributed_end.py --run-dir RUN -- mpiexec -n 2 python train_smol_gpt.py ...

Runs the command, stamps each line of its output (stdout and stderr together) as it
arrives, and prints: seconds to the first line, to the first step (the last evaluation's line,
``step N: ..., S s``, less the S seconds of training it reports), to the last line, and from
the last line to the exit (target: at most 5); with --run-dir, the run's metrics.jsonl against
the wall clock between evaluations (``tricycle.apps.throughput.rates_between_evaluations``:
target within 5%), and where its time went: the steps, the evaluations and the checkpoints'
waits (their snapshots: the files are written in the background), and the whole against
issue 44's target, the steps' time + the evaluations' + 3 s. The last line ``RESULT {...}``
holds the numbers, for scripts.
"""

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tricycle.apps.throughput import rates_between_evaluations  # noqa: E402


def timed_lines(command: list[str]) -> tuple[list[tuple[float, str]], float, int]:
    """Run ``command``; (each output line with its seconds since the start, the seconds to
    the exit, the exit status). The lines are echoed as they come."""
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1)  # fmt: skip
    lines = []
    for line in process.stdout:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
        print(f"[{lines[-1][0]:7.2f}] {lines[-1][1]}", flush=True)
    status = process.wait()
    return lines, time.monotonic() - start, status


def metrics_report(run_dir: Path) -> dict:
    """The metrics' tokens/s against the wall clock between evaluations, and the time of
    the steps, evaluations and checkpoints of the run in ``run_dir``."""
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    config = json.loads((run_dir / "config.json").read_text())["config"]
    tokens_per_step = (config["batch_size"] * config.get("gradient_accumulation_steps", 1)
                       * config["context_window"])  # fmt: skip
    pairs = rates_between_evaluations(records, tokens_per_step)
    steps_s = sum(tokens_per_step / r["tokens_per_s"] for r in records if r.get("tokens_per_s"))
    evaluations_s = sum(r.get("eval_s", 0.0) for r in records)
    checkpoints_s = sum(r.get("checkpoint_s", 0.0) for r in records)
    for i, (metrics, clock) in enumerate(pairs):
        print(f"between evaluations {i} and {i + 1}: metrics {metrics:,.0f} tokens/s, wall "
              f"clock {clock:,.0f} ({metrics / clock - 1:+.1%})")  # fmt: skip
    print(f"training: steps {steps_s:.1f} s, evaluations {evaluations_s:.1f} s, checkpoints' "
          f"waits {checkpoints_s:.1f} s, wall time of the records {records[-1]['wall_time']:.1f} s")
    return dict(ratios=[m / c for m, c in pairs], steps_s=steps_s, eval_s=evaluations_s,
                checkpoint_s=checkpoints_s, wall_s=records[-1]["wall_time"])  # fmt: skip


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="the run's --out-dir: check its metrics")
    parser.add_argument("command", nargs="+", help="the command (after --)")
    args = parser.parse_args(argv)
    lines, total, status = timed_lines(args.command)
    last = lines[-1][0] if lines else 0.0
    print(f"status {status}; {total:.1f} s in all; first line at {lines[0][0] if lines else 0:.1f}"
          f" s, last at {last:.1f} s; the exit {total - last:.1f} s after the last line "
          "(target <= 5)")  # fmt: skip
    result = dict(status=status, total_s=total, last_line_s=last, after_last_s=total - last)
    evaluations = [(at, float(m[1])) for at, line in lines
                   if (m := re.match(r"step \d+: .*, ([\d.]+) s$", line))]  # fmt: skip
    if evaluations:  # the training's clock starts at its first step
        result["first_step_s"] = evaluations[-1][0] - evaluations[-1][1]
        print(f"the first step at {result['first_step_s']:.1f} s")
    if args.run_dir is not None and (args.run_dir / "metrics.jsonl").exists():
        result.update(metrics_report(args.run_dir))
        target = result["steps_s"] + result["eval_s"] + 3
        print(f"in all {total:.1f} s against the steps + the evaluations + 3 s = {target:.1f} s "
              f"({total - target:+.1f} s)")  # fmt: skip
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
