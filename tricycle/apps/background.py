"""One write at a time in the background: a checkpoint's files written while training goes on.

A checkpoint has two parts: a snapshot of what must be saved, taken on the main thread
(host copies: the training that follows cannot change them), and the writing of the files
(SHA-256s, fsyncs, renames), which needs nothing of the run but the snapshot. ``Writer`` runs
the second part on a thread of its own, at most one at a time: ``submit`` first waits for the
write before it, and ``wait`` (at the next checkpoint, at the end of a run, after an error)
waits for the last one. An exception raised by a write is raised again, on the main thread,
by the ``wait`` or ``submit`` that follows it.
"""

import threading
from collections.abc import Callable


class Writer:
    """Runs ``write()`` on a background thread, one at a time; ``done(result)`` runs on the
    calling thread at the ``wait`` that finds the write finished."""

    def __init__(self):
        self._thread: threading.Thread | None = None
        self._outcome: dict = {}
        self._done: Callable | None = None

    def submit(self, write: Callable[[], object], done: Callable[[object], None] | None = None):
        """Wait for the write in flight (raising its error), then start ``write``."""
        self.wait()
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["result"] = write()
            except BaseException as error:  # noqa: BLE001 - raised again on the main thread
                outcome["error"] = error

        self._outcome, self._done = outcome, done
        # not a daemon: an interpreter that exits still lets the write finish
        self._thread = threading.Thread(target=run, name="tricycle-checkpoint-writer")
        self._thread.start()

    def wait(self, *, raise_error: bool = True) -> None:
        """Wait for the write in flight, if any; raise its error (``raise_error``) or run its
        ``done``."""
        thread, outcome, done = self._thread, self._outcome, self._done
        if thread is None:
            return
        thread.join()
        self._thread, self._outcome, self._done = None, {}, None
        if "error" in outcome:
            if raise_error:
                raise outcome["error"]
            return
        if done is not None:
            done(outcome.get("result"))

    @property
    def busy(self) -> bool:
        """Whether a write is in flight (started and not yet waited for)."""
        return self._thread is not None
