"""``tricycle-run``: start a training script on N processes, and check that the machine can.

::

    tricycle-run -n 2 train.py --steps 100      # mpiexec -n 2 python train.py --steps 100
    tricycle-run -n 4 -m my_package.train ARGS  # a module, as python -m
    tricycle-run test                           # one line per check; non-zero if one fails
    tricycle-run --standalone --nproc_per_node=2 train.py   # torchrun's flags (torchrun.py)

Underneath is ``mpiexec`` (``$TRICYCLE_MPIEXEC``, else the one on the PATH, else the one
beside this Python: the ``mpich`` wheel's), with the environment that data-parallel runs
need, each set only where you have not set it yourself:

- ``NCCL_NVLS_ENABLE=0``: no NVLink multicast (NVLS), which many virtual machines and
  containers cannot give and which NCCL would otherwise try first;
- ``TRICYCLE_THREADS`` and ``OPENBLAS_NUM_THREADS``: the machine's cores shared out between
  the processes (one process per core at most), so that N processes do not each start a
  thread per core;
- run as root (a container), ``OMPI_ALLOW_RUN_AS_ROOT=1`` and
  ``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``: Open MPI's mpiexec refuses root without them (MPICH
  ignores them).

One process (``-n 1``) runs the script with this Python directly. Every process is started
with this Python, so the script sees the same packages, and with torchrun's environment
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``... : ``tricycle.apps.torchrun``, which also takes
torchrun's flags, its restarts and its log files).
"""

import argparse
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tricycle import backend
from tricycle.apps import torchrun
from tricycle.apps.cli import Parser

ENVIRONMENT = {"NCCL_NVLS_ENABLE": "0"}
CHECK_SECONDS = 120  # the longest a check may take (the all-reduce starts 2 processes)
ALL_REDUCE = """
import sys
import numpy as np
from tricycle.parallel import distributed
gpus = int(sys.argv[1])
world = distributed.init(timeout=60)
assert world.world_size == 2, world
total = world.all_reduce(np.array([world.rank + 1.0]), mean=False)[0]
line = f"1 + 2 = {total:g} over MPI"
if gpus >= 2:
    world.start_gpu()
    import cupy
    on_gpu = float(world.all_reduce(cupy.array([world.rank + 1.0]), mean=False)[0])
    assert on_gpu == 3.0, on_gpu
    line += f", {on_gpu:g} over NCCL on GPUs 0 and 1"
assert total == 3.0, total
if world.is_main:
    print(line, flush=True)
world.finalize()
"""


class LaunchError(Exception):
    """A mistake in how tricycle-run was called, or a missing part: one line for the user."""


def find_mpiexec() -> str:
    """The mpiexec to use (see the module); LaunchError naming where it looked."""
    chosen = os.environ.get("TRICYCLE_MPIEXEC")
    if chosen:
        found = shutil.which(chosen)
        if found is None:
            raise LaunchError(f"TRICYCLE_MPIEXEC={chosen} is not an executable")
        return found
    found = shutil.which("mpiexec")
    if found is not None:
        return found
    beside = Path(sys.executable).with_name("mpiexec")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    raise LaunchError(
        f"no mpiexec on the PATH or beside {sys.executable}; install MPI with "
        "`pip install tricycle-dl[distributed]` (the mpich wheel brings mpiexec)"
    )


def environment(processes: int, base: dict | None = None) -> dict:
    """The processes' environment: ``base`` (default os.environ) with the defaults above."""
    env = dict(os.environ if base is None else base)
    threads = str(max(1, (os.cpu_count() or 1) // processes))
    defaults = {**ENVIRONMENT, "TRICYCLE_THREADS": threads}
    defaults["OPENBLAS_NUM_THREADS"] = env.get("TRICYCLE_THREADS") or threads
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        defaults.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    for name, value in defaults.items():
        if not env.get(name):  # unset or empty: the user has not chosen
            env[name] = value
    return env


def command(processes: int, target: list[str], module: bool) -> list[str]:
    """The command line that starts ``target`` (script or module, then its arguments)."""
    python = [sys.executable, *(["-m"] if module else []), *target]
    if processes == 1:
        return python
    return [find_mpiexec(), "-n", str(processes), *python]


# ====================================================================== tricycle-run test
def run_checks(say=print) -> list[str]:
    """Check each part a data-parallel run needs, one line each; returns the broken parts."""
    broken: list[str] = []

    def report(name: str, ok: bool | None, detail: str) -> bool:
        say(f"{'ok' if ok else '--' if ok is None else 'FAIL':4} {name}: {detail}")
        if ok is False:
            broken.append(name)
        return bool(ok)

    try:
        mpiexec = find_mpiexec()
        version = _output([mpiexec, "--version"])
        mpi = report("MPI", True, f"{mpiexec} ({_mpi_version(version)})")
    except (LaunchError, subprocess.SubprocessError, OSError) as error:
        mpi = report("MPI", False, str(error))
    code = "from mpi4py import MPI; print(mpi4py.__version__, MPI.Get_library_version())"
    try:
        found = _output([sys.executable, "-c", "import mpi4py; " + code]).split()
        mpi4py = report("mpi4py", True, f"{found[0]} on {' '.join(found[1:4])}")
    except (subprocess.SubprocessError, OSError) as error:
        mpi4py = report("mpi4py", False, f"{error} (pip install tricycle-dl[distributed])")
    gpus = _check_gpus(report)
    try:
        numba = importlib.import_module("numba")
        report("numba", True, f"{numba.__version__} (the CPU kernels)")
    except ImportError as error:
        report("numba", False, f"{error} (pip install numba): the CPU kernels are missing")
    if not (mpi and mpi4py):
        report("2-process all-reduce", None, "not tried: it needs MPI and mpi4py")
        return broken
    try:
        line = _output([mpiexec, "-n", "2", sys.executable, "-c", ALL_REDUCE, str(gpus)],
                       env=environment(2))  # fmt: skip
        report("2-process all-reduce", True, line.strip())
    except (subprocess.SubprocessError, OSError) as error:
        report("2-process all-reduce", False, str(error))
    return broken


def _check_gpus(report) -> int:
    """The GPUs and NCCL lines; returns the number of GPUs seen."""
    if not backend.cupy_available():
        report("GPUs seen", None, "none (no cupy, or no CUDA device): the CPU alone")
        report("NCCL", None, "not needed without GPUs")
        return 0
    cupy = backend.cupy()
    count = cupy.cuda.runtime.getDeviceCount()
    names = [cupy.cuda.runtime.getDeviceProperties(i)["name"] for i in range(count)]
    names = [name.decode() if isinstance(name, bytes) else str(name) for name in names]
    report("GPUs seen", True, f"{count}: {', '.join(names)}")
    nccl = backend.nccl()
    if nccl is None:
        report("NCCL", False, "cupy finds no NCCL library (install NCCL for your CUDA)")
    else:
        report("NCCL", True, f"version {nccl.get_version()}")
    return count


def _output(args: list[str], env: dict | None = None) -> str:
    """A command's output; SubprocessError with its last line of error that says something
    if it fails (not a rule of dashes, as Open MPI closes its messages with)."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=CHECK_SECONDS, env=env)
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines()]
        words = [line for line in lines if any(c.isalnum() for c in line)] or ["(no output)"]
        raise subprocess.SubprocessError(
            f"{Path(args[0]).name} failed with status {done.returncode}: {words[-1]}"
        )
    return done.stdout


def _mpi_version(text: str) -> str:
    """The version line of ``mpiexec --version`` (MPICH's, Open MPI's), as "version X"."""
    for line in text.splitlines():
        if "version" in line.lower():
            return "version " + line.replace(":", " ").split()[-1]
    return "unknown version"


# ====================================================================== the command line
def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = Parser(
        prog="tricycle-run",
        description="Run a script on N processes (mpiexec with the environment tricycle "
        "needs, and torchrun's: RANK, LOCAL_RANK, WORLD_SIZE...), or `tricycle-run test` to "
        "check MPI, mpi4py, GPUs, NCCL and numba. torchrun's command lines work as they are: "
        "tricycle-run --standalone --nproc_per_node=2 train.py ARGS.",
    )
    parser.add_argument("-n", "--processes", type=_positive,
                        help="how many processes (one a GPU), 1 by default")  # fmt: skip
    parser.add_argument("-m", "--module", dest="module", action="store_true",
                        help="the target is a module, run as python -m")  # fmt: skip
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command and what it adds to the environment")  # fmt: skip
    torchrun.add_flags(parser)
    parser.add_argument("target", nargs=argparse.REMAINDER,
                        help="the script (or module) and its arguments, or `test`")  # fmt: skip
    args = parser.parse_args(argv)
    if not args.target:
        parser.error("name a script to run (tricycle-run -n 2 train.py ARGS) or `test`")
    return args


def check_target(target: list[str], module: bool, program: bool = False) -> None:
    """LaunchError, before any process starts, for a script, module or program (``program``:
    --no_python) that is not there (and for `test` given arguments), rather than one error
    per process."""
    name = target[0]
    if program:
        if shutil.which(name) is None:
            raise LaunchError(f"no such program: {name} (--no_python runs it as a command)")
    elif module:
        top = name.split(".")[0]  # the package alone: finding a submodule would import it
        sys.path.insert(0, os.getcwd())  # where `python -m` looks first
        try:
            found = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            found = False
        finally:
            sys.path.pop(0)
        if not found:
            raise LaunchError(f"no such module: {name} (-m runs a module as python -m)")
    elif name == "test" and not Path(name).is_file():
        raise LaunchError(f"`test` takes no arguments, got {' '.join(target[1:])}")
    elif not Path(name).is_file():
        raise LaunchError(f"no such script: {name}")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    """The console entry point."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.target == ["test"]:
        broken = run_checks()
        if broken:
            print(f"tricycle-run test: broken: {', '.join(broken)}", file=sys.stderr)
            return 1
        print("tricycle-run test: every check passed")
        return 0
    try:
        s = torchrun.settings(args)
        check_target(args.target, args.module, args.no_python)
        line = _job(args, s)
        line(None)  # finds mpiexec now: its absence is one line
    except (LaunchError, torchrun.FlagError) as error:
        print(f"tricycle-run: {error}", file=sys.stderr)
        return 2
    env = environment(s.processes)
    env.update(torchrun.environment(s, 0))
    if s.processes == 1 and not (s.waits or args.run_path):  # no rank wrapper: rank 0 here
        env.update(RANK="0", LOCAL_RANK="0", ROLE_RANK="0")
    if args.dry_run:
        added = {k: env[k] for k in env if os.environ.get(k) != env[k]}
        print(" ".join(f"{k}={v}" for k, v in sorted(added.items())), *line(None))
        return 0
    sys.stdout.flush()
    if s.waits:  # restarts or logs: this process waits for mpiexec
        return torchrun.run(s, line, env)
    first = line(None)
    os.execve(first[0], first, env)  # mpiexec (or python) in this process's place: signals
    return 0  # (not reached)                          # reach it directly, its status is ours


def _job(args: argparse.Namespace, s: "torchrun.Settings"):
    """The job's command line for an attempt's log directory (None: no logs): each rank
    through ``tricycle.apps.torchrun`` (its own rank's variables), or, for one process
    without logs, the target itself."""
    kind = "command" if args.no_python else "module" if args.module else "script"
    kind = "run_path" if args.run_path and kind == "script" else kind

    def line(attempt) -> list[str]:
        if s.processes > 1 or s.waits or kind == "run_path":
            start = [*torchrun.rank_command(s, ["--kind", kind], attempt), *args.target]
        elif kind == "command":
            start = list(args.target)
        else:
            return command(1, args.target, args.module)
        return start if s.processes == 1 else [find_mpiexec(), "-n", str(s.processes), *start]

    return line


if __name__ == "__main__":
    sys.exit(main())
