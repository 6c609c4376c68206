"""Stopping a training run from outside: Ctrl-C (SIGINT) or SIGTERM (what ``kill``,
``timeout``, ``docker stop``, a batch scheduler's preemption and Open MPI's mpiexec send).
The first stops after the current step (with a checkpoint), the second at once."""

import contextlib
import os
import signal
import threading

# the signals that stop a run, and how its messages name them
SIGNALS = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}


class Interrupt:
    requested = False


@contextlib.contextmanager
def stop_on_interrupt():
    """Within the block, a first SIGINT or SIGTERM only sets ``requested`` (the loop stops
    at the end of its step, with a checkpoint) and a second raises KeyboardInterrupt at
    once. Outside the main thread, where signal handlers cannot be set, nothing changes."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signum, frame):
        name = SIGNALS[signum]
        if interrupt.requested:
            raise KeyboardInterrupt(*(() if signum == signal.SIGINT else (name,)))
        interrupt.requested = True
        whence = "" if signum == signal.SIGINT else f" ({name})"
        # os.write, not print: the handler may run while the loop is inside a print to stderr
        os.write(2, f"\ninterrupted{whence}: stopping after this step, with a checkpoint "
                    "(Ctrl-C again to stop at once, without one)\n".encode())  # fmt: skip

    previous = {signum: signal.signal(signum, handler) for signum in SIGNALS}
    try:
        yield interrupt
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
