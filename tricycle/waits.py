"""Where the host waits for a device, written down in host memory for a deadline keeper.

A host blocked in a device call (a value read back behind a collective that a dead peer
never joins) can tell no one. So a call that may block marks itself first::

    with waiting("a read-back from the GPU"):
        value = array.get()

which stores, for this thread, when the wait began and what it waits for, and removes it
after. A keeper thread (``tricycle.parallel.deadline``) reads the marks and ends the job
when one is older than its deadline. Nothing here touches the device, and neither does the
keeper: a thread that calls into the driver would queue behind the blocked call's lock.

A mark costs a dict store and a delete. ``ended()`` counts the waits that have ended: work
queued before an ended wait began is done (the keeper uses it to name what a wait is stuck
behind).
"""

import threading
import time

# thread id -> (when the wait began, what it waits for, its deadline in seconds or None)
_open: dict[int, tuple[float, str, float | None]] = {}
_ended = [0]


class waiting:  # noqa: N801 - used as a function: ``with waiting(...)``
    """Mark this thread as waiting for ``what`` for the block's duration. ``limit``: seconds
    after which the keeper acts (None: the keeper's own timeout)."""

    __slots__ = ("mark", "key", "outer")

    def __init__(self, what: str, limit: float | None = None):
        self.mark = (0.0, what, limit)

    def __enter__(self) -> "waiting":
        self.key = threading.get_ident()
        self.outer = _open.get(self.key)  # a wait inside a wait: the inner one is timed
        _open[self.key] = (time.monotonic(), *self.mark[1:])
        return self

    def __exit__(self, *exc) -> None:
        if self.outer is None:
            _open.pop(self.key, None)
        else:
            _open[self.key] = self.outer
        _ended[0] += 1


def open_waits() -> list[tuple[float, str, float | None]]:
    """(began, what, limit) of every wait in progress, in any thread (a copy)."""
    return list(dict(_open).values())  # copied under the GIL: atomic against the writers


def ended() -> int:
    """How many waits have ended so far, in every thread."""
    return _ended[0]


__all__ = ["ended", "open_waits", "waiting"]
