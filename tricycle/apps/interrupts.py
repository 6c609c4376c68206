"""Ctrl-C in a training run: the first press stops after the current step (with a
checkpoint), the second at once."""

import contextlib
import os
import signal
import threading


class Interrupt:
    requested = False


@contextlib.contextmanager
def stop_on_interrupt():
    """Within the block, a first SIGINT (Ctrl-C) only sets ``requested`` (the loop stops at
    the end of its step, with a checkpoint) and a second raises KeyboardInterrupt at once.
    Outside the main thread, where signal handlers cannot be set, nothing changes."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signum, frame):
        if interrupt.requested:
            raise KeyboardInterrupt
        interrupt.requested = True
        # os.write, not print: the handler may run while the loop is inside a print to stderr
        os.write(2, b"\ninterrupted: stopping after this step, with a checkpoint (Ctrl-C again "
                 b"to stop at once, without one)\n")  # fmt: skip

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield interrupt
    finally:
        signal.signal(signal.SIGINT, previous)
