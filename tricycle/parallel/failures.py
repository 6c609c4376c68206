"""An error on one rank ends every rank: the World's hooks for an uncaught exception, SIGTERM
and a program's main body (``fail_together``).

An error that leaves one rank (an exception, or ``sys.exit`` with a message, such as a usage
error that only rank 0 can see) would leave the others waiting in their next collective until
the deadline. Under mpiexec ``tricycle.parallel.distributed.init`` makes an uncaught exception
abort the job after its traceback (``abort_on_uncaught_exceptions``) and SIGTERM an interrupt
(``interrupt_on_sigterm``); a program's main body runs inside ``fail_together()``, which does
the same for ``SystemExit`` and Ctrl-C. Each is handed ``find_world``, a function of no
arguments giving the process's current World (or None): this module knows no World of its
own, so ``distributed`` imports it and not the other way round.
"""

import signal
import sys
import threading
import traceback
from contextlib import contextmanager


def abort_on_uncaught_exceptions(find_world) -> None:
    """Make an uncaught exception end every rank of ``find_world()``'s World, after Python's
    usual traceback."""
    previous = sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        world = find_world()
        if world is not None and not world.finalized:
            if issubclass(kind, KeyboardInterrupt):
                world.abort(_interrupted(value), blame_peers=False, status=130)
            world.abort(f"{kind.__name__}: {value}", blame_peers=False)

    sys.excepthook = hook


def interrupt_on_sigterm() -> None:
    """Make SIGTERM an interrupt, as Ctrl-C is: Open MPI's mpirun passes a Ctrl-C on to the
    ranks as SIGTERM (MPICH's passes SIGINT), which would end each rank without a word."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread may set a handler

    def interrupt(signum, frame):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, interrupt)


def _interrupted(error: BaseException) -> str:
    """The message of an interrupt: Ctrl-C, or the signal made one (``SIGTERM``)."""
    return f"interrupted ({error.args[0] if error.args else 'Ctrl-C'})"


class SameOnEveryRank(SystemExit):
    """A usage error that every rank meets alike, because it comes from what every rank reads
    the same (the flags, the settings, the data): under ``fail_together`` rank 0 says it and
    ends the job; another rank says it only if rank 0 has not ended the job within
    ``distributed.AFTER_RANK_0_SECONDS`` (it did not meet the error), so no error goes
    unsaid."""


@contextmanager
def failing_together(find_world):
    """``tricycle.parallel.distributed.fail_together`` for the World ``find_world()`` gives:
    an error that leaves the block on one rank of several ends every rank at once, with
    that rank's message (see there)."""
    try:
        yield
    except BaseException as error:
        world = find_world()
        if world is None or world.world_size == 1 or world.finalized:
            raise
        if isinstance(error, SystemExit):
            if error.code is None or error.code == 0:
                raise
            if isinstance(error, SameOnEveryRank) and world.rank != 0:
                world.abort(str(error.code), blame_peers=False, after_rank_0=True)
            if isinstance(error.code, int):
                world.abort(f"exited with status {error.code}", False, error.code)
            world.abort(str(error.code), blame_peers=False)
        if isinstance(error, KeyboardInterrupt):
            world.abort(_interrupted(error), blame_peers=False, status=130)
        traceback.print_exc()
        world.abort(f"{type(error).__name__}: {error}", blame_peers=False)
