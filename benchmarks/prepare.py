"""Time `python -m tricycle_datasets.prepare` on a large corpus, and its peak memory.

    python benchmarks/prepare.py                       # >= 100 MB of stdlib copies, 2 workers
    python benchmarks/prepare.py --no-tiktoken         # encode in pure Python
    python benchmarks/prepare.py --megabytes 20 --workers 1 --vocab-size 1024   # smaller

The corpus is this Python's standard-library .py files (those that are UTF-8), copied as many
times as needed to reach --megabytes, as separate files under --work-dir (default: a folder
in the system's temp dir; it is deleted afterwards unless --keep). prepare runs as a child
process; every 0.05 s this script adds up the resident memory (VmRSS) of the child and of
its worker processes, so the peak printed is the whole job's, not just the main process's.
Printed: wall time, the encoding rate that prepare reports (MB/s, tokeniser training
excluded), the overall rate, tokens written, and peak memory (total, and the largest single
process). Linux only (reads /proc).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_corpus(directory: Path, megabytes: float) -> tuple[int, int]:
    """Copies of the stdlib's UTF-8 .py files until `megabytes`; (files, bytes) written."""
    sources = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            data = path.read_bytes()
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        sources.append(data)
    n_files, n_bytes, copy = 0, 0, 0
    while n_bytes < megabytes * 1e6:
        folder = directory / f"copy{copy:02d}"
        folder.mkdir(parents=True)
        for i, data in enumerate(sources):
            (folder / f"{i:05d}.py").write_bytes(data)
            n_files, n_bytes = n_files + 1, n_bytes + len(data)
            if n_bytes >= megabytes * 1e6:
                break
        copy += 1
    return n_files, n_bytes


def tree_rss(pid: int) -> tuple[int, int]:
    """(total, largest) resident bytes of process `pid` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    total, largest, todo = 0, 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            with open(f"/proc/{current}/status") as f:
                rss = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))
        except (OSError, StopIteration):
            continue
        total, largest = total + rss, max(largest, rss)
    return total, largest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=100.0, help="corpus size")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--sample-bytes", type=int, default=16 << 20)
    parser.add_argument("--work-dir", type=Path, help="where the corpus and shards go")
    parser.add_argument("--keep", action="store_true", help="keep the corpus and shards")
    parser.add_argument("--no-tiktoken", action="store_true", help="pure Python encoding")
    args = parser.parse_args(argv)

    work = args.work_dir or Path(tempfile.mkdtemp(prefix="tricycle-prepare-bench-"))
    try:
        n_files, n_bytes = build_corpus(work / "corpus", args.megabytes)
        print(f"corpus: {n_files:,} files, {n_bytes / 1e6:.1f} MB in {work / 'corpus'}")
        command = [sys.executable, "-m", "tricycle_datasets.prepare", str(work / "corpus")]
        command += ["--out-dir", str(work / "shards"), "--vocab-size", str(args.vocab_size)]
        command += ["--workers", str(args.workers), "--sample-bytes", str(args.sample_bytes)]
        command += ["--no-tiktoken"] if args.no_tiktoken else []
        print("running:", " ".join(command))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        peak_total, peak_single = 0, 0
        while process.poll() is None:
            total, single = tree_rss(process.pid)
            peak_total, peak_single = max(peak_total, total), max(peak_single, single)
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        log = process.stderr.read()
        if process.returncode:
            raise SystemExit(f"prepare failed:\n{log}")
        summary = [line for line in log.splitlines() if "encoded" in line]
        index = json.loads((work / "shards" / "index.json").read_text())
        tokens = sum(s["tokens"] for shards in index["splits"].values() for s in shards)
        print(summary[-1] if summary else log[-2000:])
        print(
            f"wall {seconds:.1f} s (tokeniser training included): {n_bytes / 1e6 / seconds:.2f} "
            f"MB/s overall; {tokens:,} tokens ({n_bytes / tokens:.2f} bytes/token)"
        )
        print(
            f"peak resident memory: {peak_total / 2**20:.0f} MiB in all processes together, "
            f"{peak_single / 2**20:.0f} MiB in the largest one (target: < 1024 MiB)"
        )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
