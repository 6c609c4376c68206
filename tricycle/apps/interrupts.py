"""Stopping a training run from outside: Ctrl-C (SIGINT) or SIGTERM (what ``kill``,
``timeout``, ``docker stop`` and a batch scheduler's preemption send). The first stops after
the current step (with a checkpoint), the second at once."""

import contextlib
import os
import signal
import threading


def stopping_signals() -> tuple:
    """The signals that stop a run after its step: Ctrl-C, and SIGTERM except under Open
    MPI's mpiexec. That one passes Ctrl-C on as SIGTERM and sends SIGKILL a second or two
    later, too soon for a checkpoint: there SIGTERM keeps ending every rank at once, with
    its message (``distributed.init``), rather than promise a checkpoint it cannot write."""
    if "OMPI_COMM_WORLD_SIZE" in os.environ:  # set by Open MPI's launcher in each rank
        return (signal.SIGINT,)
    return (signal.SIGINT, signal.SIGTERM)


class Interrupt:
    requested = False


@contextlib.contextmanager
def stop_on_interrupt():
    """Within the block, a first SIGINT or SIGTERM (``stopping_signals``) only sets
    ``requested`` (the loop stops at the end of its step, with a checkpoint) and a second
    raises KeyboardInterrupt at once. Outside the main thread, where signal handlers cannot
    be set, nothing changes."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signum, frame):
        # Ctrl-C goes unnamed, as it always did; another signal is named ("SIGTERM")
        named = () if signum == signal.SIGINT else (signal.Signals(signum).name,)
        if interrupt.requested:
            raise KeyboardInterrupt(*named)
        interrupt.requested = True
        whence = "".join(f" ({name})" for name in named)
        # os.write, not print: the handler may run while the loop is inside a print to stderr
        os.write(2, f"\ninterrupted{whence}: stopping after this step, with a checkpoint "
                    "(Ctrl-C again to stop at once, without one)\n".encode())  # fmt: skip

    previous = {signum: signal.signal(signum, handler) for signum in stopping_signals()}
    try:
        yield interrupt
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
