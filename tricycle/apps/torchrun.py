"""torchrun's side of ``tricycle-run``: its flags, its environment on every rank, its restarts.

A PyTorch user starts a script with ``torchrun --standalone --nproc_per_node=2 train.py`` and
reads ``int(os.environ["LOCAL_RANK"])`` in it; ``tricycle-run`` takes the same flags (and
``python -m tricycle.distributed.run`` is the same command, as ``python -m
torch.distributed.run`` is torchrun's). The processes are still started by mpiexec, which
starts the same command on every rank, so each rank is started through this module
(``python -m tricycle.apps.torchrun ... script ARGS``): it reads its rank from MPI's launcher
variables, sets torchrun's variables (below), sends its output to its log files where asked,
and then runs the script in its own place (``exec``, as torchrun starts ``python script``; in
this process with ``--run_path``, through ``runpy``). A wrapper, not a check at the script's
start, because the script reads ``LOCAL_RANK`` before it imports anything of tricycle.

The variables, on every rank: ``RANK``, ``LOCAL_RANK`` and ``ROLE_RANK`` (the MPI rank: one
machine, so all three agree), ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE`` and ``ROLE_WORLD_SIZE``,
``GROUP_RANK`` (0), ``GROUP_WORLD_SIZE`` (1), ``ROLE_NAME``, ``MASTER_ADDR``,
``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``, ``TORCHELASTIC_RESTART_COUNT``,
``TORCHELASTIC_MAX_RESTARTS``, ``PYTHON_EXEC``, and ``TORCHELASTIC_ERROR_FILE`` where the
launcher keeps logs (``--log_dir``, ``--redirects``, ``--tee``, ``--max_restarts``: it then
waits for mpiexec instead of becoming it). Nothing listens at ``MASTER_ADDR:MASTER_PORT``:
MPI joins the processes, and ``init_process_group(init_method="env://")`` joins that world.

``--max_restarts N`` runs the whole job again, up to N times, after a rank fails (mpiexec
ends the others), with ``TORCHELASTIC_RESTART_COUNT`` counting the restarts, as torchrun's.
The log directory is torchrun's: ``<log_dir>/<run_id>_<random>/attempt_<k>/<rank>/``
``stdout.log``, ``stderr.log`` and ``error.json`` (written by
``tricycle.distributed.elastic.multiprocessing.errors.record``).
"""

import argparse
import json
import os
import runpy
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from tricycle import backend

STATIC_PORT = 29500  # torchrun's MASTER_PORT for a static rendezvous without --master_port
STREAMS = {1: ("stdout", 1), 2: ("stderr", 2)}  # torchrun's Std bits: the file and the fd


class FlagError(Exception):
    """A torchrun flag that tricycle-run cannot honour: one line for the user."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    """torchrun's flags (each under both of its spellings) on the launcher's parser."""
    group = parser.add_argument_group("torchrun's flags (one machine)")

    def flag(name: str, **options) -> None:
        spellings = dict.fromkeys([f"--{name}", f"--{name.replace('_', '-')}"])  # once each
        group.add_argument(*spellings, **options)

    flag("nproc_per_node", help="processes: a number, `gpu` (one per GPU), `cpu` or `auto`")
    flag("nnodes", default="1", help="machines: 1 (or 1:1); use mpiexec's host files for more")
    flag("node_rank", type=int, default=0, help="this machine's rank: 0")
    flag("standalone", action="store_true", help="one machine, a fresh run id and port")
    flag("master_addr", default="127.0.0.1", help="$MASTER_ADDR (MPI joins the processes)")
    flag("master_port", type=int, help=f"$MASTER_PORT ({STATIC_PORT}, or a free one)")
    flag("rdzv_backend", default="static", help="accepted: one machine needs no rendezvous")
    flag("rdzv_endpoint", default="", help="host[:port], accepted for one machine")
    flag("rdzv_id", default="none", help="$TORCHELASTIC_RUN_ID")
    flag("rdzv_conf", default="", help="accepted and unused")
    flag("role", default="default", help="$ROLE_NAME")
    flag("max_restarts", type=int, default=0, help="run the job again after a failure, N times")
    flag("monitor_interval", type=float, default=0.1, help="accepted (mpiexec watches ranks)")
    flag("start_method", default="spawn", choices=["spawn", "fork", "forkserver"],
         help="accepted (mpiexec starts the processes)")  # fmt: skip
    flag("no_python", action="store_true", help="run the target as a command, not by Python")
    flag("run_path", action="store_true", help="run the script in the rank's process (runpy)")
    flag("log_dir", help="where each rank's logs and error file go (torchrun's layout)")
    flag("redirects", default="0", help="0 none, 1 stdout, 2 stderr, 3 both; or 0:3,1:1")
    flag("tee", default="0", help="as --redirects, but to the console too")


@dataclass
class Settings:
    """What torchrun's flags decide, checked."""

    processes: int
    run_id: str
    master_addr: str
    master_port: int
    role: str
    max_restarts: int
    log_dir: str | None
    redirects: str
    tee: str

    @property
    def waits(self) -> bool:
        """Whether the launcher waits for mpiexec (to restart it, or to keep its logs) rather
        than becoming it."""
        return bool(self.max_restarts or self.log_dir or self.redirects != "0" or self.tee != "0")


def settings(args: argparse.Namespace) -> Settings:
    """The checked settings of the parsed flags; FlagError for one tricycle-run cannot take."""
    processes = _processes(args.processes, args.nproc_per_node)
    low, _, high = args.nnodes.partition(":")
    if (low.strip(), (high or low).strip()) != ("1", "1"):
        raise FlagError(
            f"--nnodes={args.nnodes}: tricycle-run starts the processes of one machine; for "
            "several, start them with mpiexec and a host file (MPICH: `mpiexec -f hosts -n N "
            "python train.py`, Open MPI: `mpiexec --hostfile hosts -n N ...`): the World "
            "joins them"
        )
    if args.node_rank != 0:
        raise FlagError(f"--node_rank={args.node_rank}: one machine (--nnodes=1) is rank 0")
    if args.no_python and args.module:
        raise FlagError("don't use both the --no_python flag and the --module flag at once")
    for name in ("max_restarts", "master_port"):
        value = getattr(args, name)
        if value is not None and not 0 <= value <= (65535 if name == "master_port" else 10**6):
            raise FlagError(f"--{name}={value}: out of range")
    if not args.monitor_interval > 0:
        raise FlagError(f"--monitor_interval={args.monitor_interval}: must be > 0 seconds")
    host, _, port = (
        args.rdzv_endpoint.rpartition(":") if ":" in args.rdzv_endpoint else ("", "", "0")
    )
    if port and not port.isdigit():
        raise FlagError(f"--rdzv_endpoint={args.rdzv_endpoint}: must be host or host:port")
    for name in ("redirects", "tee"):
        _std(name, getattr(args, name), 0)  # checked now, read on each rank
    static = args.rdzv_backend == "static" and not args.standalone
    port = args.master_port
    if port is None:
        port = STATIC_PORT if static else _free_port()
    run_id = uuid.uuid4().hex if args.standalone else args.rdzv_id
    return Settings(processes, run_id, args.master_addr, port, args.role, args.max_restarts,
                    args.log_dir, args.redirects, args.tee)  # fmt: skip


def _processes(given: int | None, nproc_per_node: str | None) -> int:
    """The number of processes of ``-n`` or ``--nproc_per_node`` (which must agree)."""
    if nproc_per_node is None:
        return given or 1
    name = nproc_per_node.strip().lower()
    if name.isdigit() and int(name) >= 1:
        count = int(name)
    elif name in ("gpu", "auto") and backend.cupy_available():
        count = backend.cupy().cuda.runtime.getDeviceCount()
    elif name == "gpu":
        raise FlagError("--nproc_per_node=gpu: no CUDA GPU (cupy finds none)")
    elif name in ("cpu", "auto"):
        count = os.cpu_count() or 1
    else:
        raise FlagError(f"--nproc_per_node={nproc_per_node}: a number >= 1, `gpu`, `cpu` or `auto`")
    if given is not None and given != count:
        raise FlagError(f"-n {given} and --nproc_per_node={nproc_per_node} disagree")
    return count


def _free_port() -> int:
    """A TCP port free on this machine now (torchrun's standalone port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _std(name: str, spec: str, rank: int) -> int:
    """The streams (Std bits: 1 stdout, 2 stderr) of ``--redirects``/``--tee`` for ``rank``:
    one digit for every rank, or ``rank:digit,...`` (ranks not named get 0)."""
    try:
        if ":" not in spec:
            value = int(spec)
        else:
            pairs = dict(part.split(":") for part in spec.split(","))
            value = int({int(k): v for k, v in pairs.items()}.get(rank, 0))
    except ValueError:
        value = -1
    if not 0 <= value <= 3:
        raise FlagError(f"--{name}={spec}: 0 (none), 1 (stdout), 2 (stderr), 3 (both), or 0:3,1:1")
    return value


def environment(s: Settings, restart: int) -> dict:
    """torchrun's variables that every rank shares (each adds its own rank's)."""
    size = str(s.processes)
    return {
        "WORLD_SIZE": size, "LOCAL_WORLD_SIZE": size, "ROLE_WORLD_SIZE": size,
        "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "1", "ROLE_NAME": s.role,
        "MASTER_ADDR": s.master_addr, "MASTER_PORT": str(s.master_port),
        "TORCHELASTIC_RUN_ID": s.run_id, "TORCHELASTIC_RESTART_COUNT": str(restart),
        "TORCHELASTIC_MAX_RESTARTS": str(s.max_restarts), "PYTHON_EXEC": sys.executable,
    }  # fmt: skip


def rank_command(s: Settings, kind: list[str], attempt: Path | None) -> list[str]:
    """The start of each rank's command: this module, how to run the target, where logs go."""
    logs = [] if attempt is None else ["--attempt-dir", str(attempt)]
    return [sys.executable, "-m", "tricycle.apps.torchrun", *kind, *logs,
            "--redirects", s.redirects, "--tee", s.tee]  # fmt: skip


def run(s: Settings, line, env: dict, say=print) -> int:
    """Run the job (``line(attempt_dir)`` is its command), again after a failure up to
    ``max_restarts`` times; the last status. The logs stay under ``--log_dir``."""
    if s.log_dir:
        Path(s.log_dir).mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix=f"{s.run_id}_", dir=s.log_dir))
    try:
        for restart in range(s.max_restarts + 1):
            attempt = run_dir / f"attempt_{restart}"
            attempt.mkdir()
            env.update(environment(s, restart))
            status = subprocess.run(line(attempt), env=env).returncode
            if status == 0:
                return 0
            said = f"tricycle-run: attempt {restart} failed with status {status}"
            for rank, message in _errors(attempt):
                said += f"; rank {rank}: {message}"
            more = restart < s.max_restarts
            say(said + (f"; restarting ({restart + 1} of {s.max_restarts})" if more else ""),
                file=sys.stderr)  # fmt: skip
        return status
    finally:
        if s.log_dir is None:
            shutil.rmtree(run_dir, ignore_errors=True)


def _errors(attempt: Path) -> list[tuple[int, str]]:
    """The ranks' recorded errors of an attempt (error.json), by rank."""
    found = []
    for file in sorted(attempt.glob("*/error.json"), key=lambda f: int(f.parent.name)):
        try:
            found.append(
                (int(file.parent.name), json.loads(file.read_text())["message"]["message"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            found.append((int(file.parent.name), f"unreadable error file {file}"))
    return found


# ====================================================================== each rank
def rank_main(argv: list[str] | None = None) -> int:
    """A rank's start (see the module): torchrun's variables, the logs, then the target."""
    parser = argparse.ArgumentParser(prog="tricycle.apps.torchrun")
    parser.add_argument("--kind", choices=["script", "module", "command", "run_path"])
    parser.add_argument("--attempt-dir")
    parser.add_argument("--redirects", default="0")
    parser.add_argument("--tee", default="0")
    parser.add_argument("target", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    from tricycle.parallel.distributed import launched_rank, launched_size  # noqa: PLC0415

    rank, size = launched_rank(), launched_size()
    if os.environ.get("WORLD_SIZE", str(size)) != str(size):
        parser.exit(2, f"tricycle-run: rank {rank} of {size}, but WORLD_SIZE is "
                       f"{os.environ['WORLD_SIZE']}\n")  # fmt: skip
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), ROLE_RANK=str(rank))
    if args.attempt_dir:
        logs = Path(args.attempt_dir) / str(rank)
        logs.mkdir(parents=True, exist_ok=True)
        os.environ["TORCHELASTIC_ERROR_FILE"] = str(logs / "error.json")
        _redirect(logs, _std("redirects", args.redirects, rank), _std("tee", args.tee, rank))
    target = args.target
    if args.kind == "command":
        os.execvp(target[0], target)
    if args.kind == "run_path":
        sys.argv = list(target)
        sys.path[0] = str(Path(target[0]).resolve().parent)
        runpy.run_path(target[0], run_name="__main__")
        return 0
    python = [sys.executable, *(["-m"] if args.kind == "module" else []), *target]
    sys.stdout.flush()
    os.execv(python[0], python)
    return 0  # (not reached)


def _redirect(logs: Path, redirects: int, tee: int) -> None:
    """This process's stdout/stderr into ``logs``' files (``tee``: the console too, through a
    ``tee`` process that the script's exit ends)."""
    for bit, (name, fd) in STREAMS.items():
        path = logs / f"{name}.log"
        if tee & bit:
            console = os.dup(fd)
            copier = subprocess.Popen(["tee", str(path)], stdin=subprocess.PIPE, stdout=console)
            os.dup2(copier.stdin.fileno(), fd)
            copier.stdin.close()
            os.close(console)
        elif redirects & bit:
            with open(path, "w") as file:
                os.dup2(file.fileno(), fd)


if __name__ == "__main__":
    sys.exit(rank_main())
