"""torch.multiprocessing's ``spawn``: the ranks of a data-parallel script, through mpiexec.

``spawn(fn, args, nprocs)`` starts ``nprocs`` fresh Python processes with tricycle's launcher
(``tricycle-run``'s mpiexec and environment; one process alone needs no mpiexec), and each
calls ``fn(rank, *args)`` with its MPI rank, so that ``init_process_group`` inside ``fn``
joins that world as under ``tricycle-run -n N``. As with torch's "spawn" start method, ``fn``
and ``args`` are pickled: ``fn`` must be importable (a module's top-level function; one of
the main script's is found as multiprocessing's spawn finds it, by running the script as
``__mp_main__``).

Each rank records what became of it in a directory the parent reads: its pid when it
starts, the traceback of an exception ``fn`` raised (``ProcessRaisedException``), the status
of a ``sys.exit`` with a nonzero status (``ProcessExitedException``), or that it finished.
On the first failure the parent ends the other ranks (SIGTERM to mpiexec, which passes it
on to them; SIGKILL after the grace period) and raises, as torch's ``ProcessContext.join``.
A rank that dies without a word (``os._exit``, a signal) is seen when mpiexec ends, which
MPICH does at once after ``init_process_group`` and otherwise when the other ranks end; it
is reported with mpiexec's exit status (with one process, the process's own: a signal is a
signal). ``ProcessContext.processes`` is the launcher, one process, not one per rank.
"""

import atexit
import multiprocessing.spawn
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

from tricycle import checks
from tricycle.apps import launch
from tricycle.parallel import distributed

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]

START_METHODS = ("spawn", "fork", "forkserver")  # every rank is a fresh process whatever
POLL_SECONDS = 0.02  # how often join looks at the ranks' records
KILL_SECONDS = 30.0  # after SIGTERM, the wait before SIGKILL when no grace_period is given
_PAYLOAD = "payload.pickle"


class ProcessException(Exception):
    """A rank failed: ``error_index`` is its rank, ``error_pid`` its process id."""

    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, error_pid: int):
        super().__init__(msg)
        self.msg, self.error_index, self.error_pid = msg, error_index, error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A rank's ``fn`` raised: the message holds the rank's traceback."""


class ProcessExitedException(ProcessException):
    """A rank exited with a nonzero status (``exit_code``), or was ended by a signal
    (``signal_name``, and ``exit_code`` minus its number)."""

    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        args = (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)
        return type(self), args


class ProcessContext:
    """The ranks ``start_processes(..., join=False)`` started: ``join`` waits for them."""

    def __init__(self, launcher: subprocess.Popen | None, directory: str, nprocs: int):
        self.launcher, self.directory, self.nprocs = launcher, Path(directory), nprocs
        self.processes = [] if launcher is None else [launcher]
        self.error_files = [str(self.directory / f"{rank}.error") for rank in range(nprocs)]
        self._finished = launcher is None

    def pids(self) -> list[int]:
        """The ranks' process ids, waiting for each rank to start (None for a rank that
        never started because the launcher ended first)."""
        while not self._finished and self.launcher.poll() is None:
            if all(self._record(rank, "pid") is not None for rank in range(self.nprocs)):
                break
            time.sleep(POLL_SECONDS)
        return [self._pid(rank) for rank in range(self.nprocs)]

    def join(self, timeout: float | None = None, grace_period: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: until the ranks end) for the ranks. True
        once all have ended well, False if some still run. If one failed, end the others
        (after ``grace_period`` seconds for them to end themselves; then SIGTERM, then
        SIGKILL) and raise ``ProcessRaisedException`` or ``ProcessExitedException`` for
        the first failure."""
        checks.non_negative("ProcessContext.join", "timeout", timeout, optional=True)
        checks.non_negative("ProcessContext.join", "grace_period", grace_period, optional=True)
        if self._finished:
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            status = self.launcher.poll()
            failure = self._first_failure()
            if failure is None and status is not None:
                failure = self._first_failure()  # a record written as the ranks ended
                if failure is None and status == 0:
                    self._finish()
                    return True
                failure = failure or self._silent_failure(status)
            if failure is not None:
                self._end_ranks(grace_period)
                error = self._exception(*failure)
                self._finish()
                raise error
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            time.sleep(POLL_SECONDS if left is None else min(POLL_SECONDS, left))

    # ------------------------------------------------------------------ the ranks' records
    def _record(self, rank: int, kind: str) -> bytes | None:
        try:
            return (self.directory / f"{rank}.{kind}").read_bytes()
        except FileNotFoundError:
            return None

    def _pid(self, rank: int) -> int | None:
        pid = self._record(rank, "pid")
        return None if pid is None else int(pid)

    def _first_failure(self) -> tuple | None:
        """(time, rank, kind) of the earliest recorded exception or exit, or None."""
        found = []
        for rank in range(self.nprocs):
            for kind in ("error", "exit"):
                record = self._record(rank, kind)
                if record is not None:
                    found.append((pickle.loads(record)[0], rank, kind))
        return min(found) if found else None

    def _silent_failure(self, status: int) -> tuple:
        """The failure of a rank that left no record: the first that started and did not
        finish (rank 0 if none started), with the launcher's status."""
        silent = [r for r in range(self.nprocs) if self._record(r, "done") is None]
        started = [r for r in silent if self._record(r, "pid") is not None]
        return (None, (started or silent or [0])[0], "status", status)

    def _exception(self, _, rank: int, kind: str, status: int | None = None):
        pid = self._pid(rank)
        if kind == "error":
            trace = pickle.loads(self._record(rank, "error"))[1]
            msg = f"\n\n-- Process {rank:d} terminated with the following error:\n" + trace
            return ProcessRaisedException(msg, rank, pid)
        code = pickle.loads(self._record(rank, "exit"))[1] if kind == "exit" else status
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            msg = f"process {rank:d} terminated with signal {name}"
            return ProcessExitedException(msg, rank, pid, code, signal_name=name)
        msg = f"process {rank:d} terminated with exit code {code:d}"
        return ProcessExitedException(msg, rank, pid, code)

    # ------------------------------------------------------------------ the end
    def _end_ranks(self, grace_period: float | None) -> None:
        """Let the ranks end for ``grace_period``, then SIGTERM them (through mpiexec,
        which passes it on), then SIGKILL."""
        if grace_period is not None:
            _wait(self.launcher, grace_period)
        if self.launcher.poll() is None:
            self.launcher.terminate()
            _wait(self.launcher, KILL_SECONDS if grace_period is None else grace_period)
        if self.launcher.poll() is None:
            self.launcher.kill()
        self.launcher.wait()

    def _finish(self) -> None:
        self._finished = True
        shutil.rmtree(self.directory, ignore_errors=True)


class SpawnContext(ProcessContext):
    """torch's old name of ``ProcessContext`` (it warns, as torch's)."""

    def __init__(self, launcher, directory, nprocs):
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", stacklevel=2)
        super().__init__(launcher, directory, nprocs)


def _wait(process: subprocess.Popen, seconds: float) -> None:
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        pass


# ====================================================================== starting the ranks
def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` ranks each calling ``fn(rank, *args)`` (see the module); None once
    they have all ended well if ``join``, else their ``ProcessContext``. ``daemon``: the
    ranks are ended when this process exits (otherwise it waits for them at its exit).
    ``start_method`` may be any of multiprocessing's: every rank is a fresh process."""
    owner = "start_processes"
    checks.non_negative_int(owner, "nprocs", nprocs)
    checks.boolean(owner, "join", join)
    checks.boolean(owner, "daemon", daemon)
    if start_method not in START_METHODS:
        raise ValueError(f"cannot find context for {start_method!r}")  # multiprocessing's
    payload = pickle.dumps((fn, tuple(args)))  # an unpicklable fn fails here, as torch's
    preparation = multiprocessing.spawn.get_preparation_data("tricycle-spawn")
    del preparation["authkey"]  # this process's secret: not written to a file
    if nprocs > 1:
        try:
            launch.find_mpiexec()
        except launch.LaunchError as error:
            message = f"{owner}: nprocs={nprocs} starts the ranks with mpiexec: {error}"
            raise RuntimeError(message) from error
    directory = tempfile.mkdtemp(prefix="tricycle-spawn-")
    if nprocs == 0:
        context = ProcessContext(None, directory, 0)
        context._finish()
        return None if join else context
    with open(Path(directory) / _PAYLOAD, "wb") as file:
        pickle.dump(preparation, file)  # read first: it makes fn's module importable
        file.write(payload)
    line = launch.command(nprocs, ["-c", _RANK_MAIN, str(_ROOT), directory], module=False)
    launcher = subprocess.Popen(line, env=launch.environment(nprocs))
    context = ProcessContext(launcher, directory, nprocs)
    atexit.register(_at_exit, context, daemon)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` ranks each calling ``fn(rank, *args)``: torch's call (see the module).
    A ``start_method`` other than "spawn" warns, as torch's, and spawns."""
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " tricycle.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")


def _at_exit(context: ProcessContext, daemon: bool) -> None:
    """At this process's exit: end daemonic ranks, wait for the others."""
    if context._finished or context.launcher.poll() is not None:
        return
    if daemon:
        context.launcher.terminate()
    context.launcher.wait()


# ====================================================================== in each rank
_ROOT = Path(__file__).resolve().parents[2]  # where tricycle is imported from
_RANK_MAIN = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from tricycle.multiprocessing.spawn import run_rank; run_rank(sys.argv[2])"
)


def run_rank(directory: str) -> None:
    """A rank's program: record its pid, call ``fn(rank, *args)``, record how it ended."""
    rank, folder = distributed.launched_rank(), Path(directory)
    _write(folder / f"{rank}.pid", str(os.getpid()).encode())
    try:
        with open(folder / _PAYLOAD, "rb") as file:
            multiprocessing.spawn.prepare(pickle.load(file))
            fn, args = pickle.load(file)
        fn(rank, *args)
    except KeyboardInterrupt:
        pass  # ended by the parent, as torch's ranks
    except SystemExit as ended:
        code = ended.code if checks.is_integer(ended.code) else 0 if ended.code is None else 1
        if code != 0:
            _write(folder / f"{rank}.exit", pickle.dumps((time.time(), code)))
            _end_now(code)
        raise
    except Exception:
        _write(folder / f"{rank}.error", pickle.dumps((time.time(), traceback.format_exc())))
        _end_now(1)
        sys.exit(1)
    _write(folder / f"{rank}.done", b"")


def _end_now(status: int) -> None:
    """End a failed rank at once if it is in an MPI world: MPI's finalize at exit would wait
    for the other ranks, which wait for it (the parent ends them)."""
    MPI = sys.modules.get("mpi4py.MPI")
    if MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all (the parent may read it at any moment)."""
    part = path.with_name(path.name + ".part")
    part.write_bytes(data)
    os.replace(part, path)
