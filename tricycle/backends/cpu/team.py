"""The team of Python threads that runs a parallel kernel's ranges of tasks beside the
calling thread (``ParallelKernel`` in ``tricycle.backends.cpu.compile``): the kernels are
compiled with the GIL released (``nogil``), so each thread runs the same compiled loop over its
share of the tasks, and the numbers do not depend on how many threads there are."""

import os
import queue
import threading


def _ranges(tasks: int, parts: int, grain: int = 1) -> list:
    """[first, last) of ``parts`` contiguous ranges covering range(tasks), cut at multiples of
    ``grain`` (fewer ranges when there are fewer grains)."""
    grains = -(-tasks // grain)
    parts = max(1, min(parts, grains))
    cuts = [min(tasks, grains * i // parts * grain) for i in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


class _Team:
    """The threads that run a parallel launch's ranges beside the calling thread, which runs the
    first: started at the first launch that needs them, one launch at a time (another Python
    thread's launch waits for ``lock``), none in a forked child (``reset``). The kernel is first
    called here on no tasks, so that it is compiled, or loaded, in this thread."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.lock = threading.Lock()
        self.workers = []  # (inbox, outbox) of each thread
        self.owed = []  # outboxes with an answer not read yet (a launch that was interrupted)

    def run(self, kernel, args, ranges):
        if len(ranges) == 1:
            return kernel(*args, *ranges[0])
        with self.lock:
            kernel(*args, 0, 0)  # compiled or loaded here, not in a worker
            self._collect()
            while len(self.workers) < len(ranges) - 1:
                self.workers.append(_worker())
            for (inbox, outbox), (first, last) in zip(self.workers, ranges[1:]):
                inbox.put((kernel, args, first, last))
                self.owed.append(outbox)
            try:
                kernel(*args, *ranges[0])
            finally:
                errors = self._collect()
            if errors:
                raise errors[0]

    def _collect(self) -> list:
        """Wait for every owed answer: the errors the threads raised."""
        errors = []
        while self.owed:
            error = self.owed[-1].get()
            self.owed.pop()
            if error is not None:
                errors.append(error)
        return errors


def _worker():
    """A daemon thread that runs ranges from its inbox and answers None or the error raised."""
    inbox, outbox = queue.SimpleQueue(), queue.SimpleQueue()

    def serve():
        while True:
            kernel, args, first, last = inbox.get()
            try:
                kernel(*args, first, last)
                answer = None
            except BaseException as error:  # noqa: BLE001 - raised in the launching thread
                answer = error
            kernel = args = None  # the launch's arrays are not kept alive until the next one
            outbox.put(answer)

    threading.Thread(target=serve, name="tricycle-kernels", daemon=True).start()
    return inbox, outbox


_team = _Team()
os.register_at_fork(after_in_child=_team.reset)  # a child has none of the parent's threads
