"""Compile time of the CPU kernels a program calls, kernel by kernel, in CPU seconds.

For each program (the default GPT run, ``examples/bert_mlm.py``, an LSTM layer, a convolution
on Winograd's path), a fresh process with an empty
numba cache records the kernels and argument types its small step calls, as
``tricycle.apps.precompile`` does, then compiles them one after the other in that process and
prints ``time.process_time()`` for each (its callees and numba's overloads compiled on the way
count with the first kernel that needs them) and the total. CPU time, not wall time: on a
shared machine it moves far less with the load.

    python benchmarks/compile_time.py                   # every program
    python benchmarks/compile_time.py --program bert    # one
    python benchmarks/compile_time.py --callees         # and what each kernel compiles inside
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("gpt", "bert", "lstm", "conv")


def record(program: str):
    """The (dispatcher, arguments) of each kernel call of ``program``'s small step."""
    from tricycle.backends.cpu import compile as cpu_compile  # noqa: PLC0415

    cpu_compile._recorded[:] = [[]]
    if program == "gpt":
        from tricycle.apps.precompile import SMALL, _gpt_step  # noqa: PLC0415
        from tricycle.configs import CPUConfig  # noqa: PLC0415 - the default run's config

        config = CPUConfig()
        import dataclasses  # noqa: PLC0415

        small = dataclasses.replace(config, **SMALL, embedding_dim=4 * config.n_heads)
        _gpt_step(small, "fp32")
    elif program == "bert":
        sys.path.insert(0, str(ROOT / "examples"))
        import bert_mlm  # noqa: PLC0415

        bert_mlm.small_steps(bert_mlm.parse_args([]))
    else:
        _layer_step(program)
    calls = cpu_compile._recorded[0]
    cpu_compile._recorded[:] = []
    return calls


def _layer_step(program: str) -> None:
    """Forward and backward of one layer in float32: a two-layer LSTM over (T, N, E) =
    (6, 4, 8), or a 3 x 3 convolution of 32 channels with an odd output (17 x 17), which
    takes Winograd's path and its crop."""
    import numpy as np  # noqa: PLC0415

    import tricycle.nn as nn  # noqa: PLC0415
    from tricycle.tensor import to_tensor  # noqa: PLC0415

    if program == "lstm":
        layer, shape = nn.LSTM(8, 16, num_layers=2), (6, 4, 8)
    else:
        layer, shape = nn.Conv2d(32, 32, 3), (2, 32, 19, 19)
    x = to_tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    out = layer(x)
    (out[0] if isinstance(out, tuple) else out).sum().backward()


class Callees:
    """numba's compile events inside a kernel's: each function compiled on the way (a callee
    not inlined, an overload of numba's), with its CPU seconds, callees included."""

    def __init__(self):
        from numba.core import event  # noqa: PLC0415

        self.started, self.done = [], []
        listener = type("Listener", (event.Listener,), {
            "on_start": lambda _, ev: self.started.append(time.process_time()),
            "on_end": lambda _, ev: self.end(ev)})  # fmt: skip
        event.register("numba:compile", listener())

    def end(self, ev):
        seconds = time.process_time() - self.started.pop()
        if self.started:  # not the kernel itself
            dispatcher = ev.data.get("dispatcher")
            name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", str(dispatcher))
            self.done.append((len(self.started), name, seconds))

    def take(self):
        done, self.done = self.done, []
        return done


def measure(program: str, callees: bool) -> None:
    """In this process (its numba cache empty): compile each recorded kernel, in turn."""
    from tricycle.backends.cpu import blas  # noqa: PLC0415
    from tricycle.backends.cpu import compile as cpu_compile  # noqa: PLC0415

    inside = Callees()
    blas.library()  # the products' symbols bound, as a kernel's first run binds them

    # callees too compile here, where process_time sees them, not in a child
    cpu_compile._compile_in_a_child = lambda dispatcher, sig: None
    calls = record(program)
    seen, total = set(), 0.0
    print(f"{program}: kernel, signature, CPU seconds")
    for dispatcher, arguments in calls:
        # the types the run compiles for: strided arrays where the kernel asks for them
        sig = cpu_compile._signature(dispatcher, [dispatcher.typeof_pyval(a) for a in arguments])
        if (dispatcher, sig) in seen:
            continue
        seen.add((dispatcher, sig))
        started = time.process_time()
        type(dispatcher).compile(dispatcher, sig)
        seconds = time.process_time() - started
        total += seconds
        name = dispatcher.py_func.__qualname__
        short = ", ".join(str(t) for t in sig)
        print(f"  {name:40s} {seconds:7.2f}   ({short[:90]})")
        for depth, callee, callee_seconds in inside.take() if callees else ():
            width = 40 - 2 * depth
            print(f"  {'  ' * depth}{callee[:width]:{width}s} {callee_seconds:7.2f}")
    print(f"{program}: {len(seen)} kernel(s), {total:.2f} CPU s in all", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--program", choices=PROGRAMS, action="append")
    parser.add_argument("--callees", action="store_true", help="and their callees' compiles")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.in_process:
        return measure(args.program[0], args.callees)
    for program in args.program or PROGRAMS:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONPATH": str(ROOT),
                   "TRICYCLE_THREADS": "2", "NUMBA_NUM_THREADS": "2"}  # fmt: skip
            callees = ["--callees"] if args.callees else []
            subprocess.run([sys.executable, __file__, "--program", program, "--in-process",
                            *callees], env=env, check=True)  # fmt: skip


if __name__ == "__main__":
    main()
