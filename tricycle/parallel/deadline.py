"""A deadline for every wait of the host: the thread that ends a hung job.

GPU work is queued: a rank notices a dead or hung peer only when its host next waits for
the device (a loss read back, a synchronisation, a graph replay or an NCCL call that finds
its queue full), and then waits forever. Each such call marks itself in host memory first
(``tricycle.waits``); ``DeadlineKeeper``'s thread reads the marks and, when one is older
than the world's timeout, has the world end the job (``World.abort``: a message naming the
rank and what it waited for, then ``MPI_Abort``, or the process's exit).

**Why it works while the host is blocked.** The keeper makes no CUDA call: no event is
queried, created or freed in it, no stream or device is touched. Calls into the driver from a
second thread queue behind the lock that the blocked call holds (a ``cudaMemcpy`` behind an
all-reduce that never ends holds it), so a keeper that called CUDA could never reach its
deadline. What it reads is written by the main thread in plain Python: the marks of the
waits in progress, and (``queued``) the oldest collective queued since the last wait ended,
which the message names: a read-back stuck behind a collective is stuck on that collective.
CuPy and NCCL release the GIL in their blocking calls, so the thread runs meanwhile.
"""

import threading
import time

from tricycle import waits


class DeadlineKeeper:
    """A daemon thread that calls ``world.overdue(message, limited)`` once a wait marked in
    ``tricycle.waits`` has lasted longer than its limit (``limited``: the wait's own) or
    the world's ``timeout``, and then stops."""

    def __init__(self, world):
        self.world = world
        self._behind: tuple[int, float, str] | None = None  # (waits ended, when, what)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tricycle-deadline", daemon=True)
        self.thread.start()

    def queued(self, what: str) -> None:
        """Device work that peers must join (a collective) was queued: named if a wait gets
        stuck before any wait has ended since."""
        ended = waits.ended()
        if self._behind is None or self._behind[0] != ended:
            self._behind = (ended, time.monotonic(), what)

    def overdue(self, now: float | None = None) -> tuple[str, bool] | None:
        """(message, whether the wait had its own limit) for the first wait past its
        deadline, or None."""
        now = time.monotonic() if now is None else now
        for began, what, limit in waits.open_waits():
            seconds = self.world.timeout if limit is None else limit
            if now - began > seconds:
                message = f"timed out after {seconds:g} s in {what}"
                behind = self._behind
                if behind is not None and behind[0] == waits.ended() and behind[1] <= began:
                    message += f", behind {behind[2]} (queued {now - behind[1]:.1f} s ago)"
                return message, limit is not None
        return None

    def _run(self) -> None:
        while not self._stop.wait(min(1.0, max(0.05, self.world.timeout / 10))):
            late = self.overdue()
            if late is not None:
                self.world.overdue(*late)
                return

    def stop(self) -> None:
        """End the thread (at its next look)."""
        self._stop.set()


__all__ = ["DeadlineKeeper"]
