"""The worker processes of a ``DataLoader``: batches made ahead, in order, by N processes.

The main process hands out batch numbers (with their example indices, for a map-style
dataset) to worker ``k % N`` and keeps ``prefetch`` batches per worker in flight; each worker
makes its batches and sends them back on one result queue; the main process yields them in
order, holding early arrivals until their turn. So the batches are those of
``num_workers=0``, in the same order.

What can go wrong, and what happens then:

- a worker raises: the exception's type, message and traceback travel back, and the main
  process raises ``WorkerError`` with them when it reaches that batch (the workers are
  stopped first);
- a worker dies (killed, out of memory): the main process notices within a second and
  raises ``WorkerError`` with its exit code, instead of waiting forever;
- Ctrl-C: workers ignore SIGINT (the terminal sends it to the whole process group); the
  main process's KeyboardInterrupt stops them on its way out, and a worker whose main
  process is gone ends itself. No orphan is left either way.
"""

import os
import queue
import random
import signal
import traceback

import numpy as np

from tricycle.random import manual_seed

POLL_SECONDS = 0.2  # how often a waiting process checks on the others
STOP_SECONDS = 2.0  # how long the workers get to finish before they are terminated


class WorkerError(RuntimeError):
    """A ``DataLoader`` worker raised an error (its traceback is in the message) or died."""


class _End:
    """The dataset ran out before this batch (an iterable dataset's end)."""


def _work(worker_id: int, make_fetch, tasks, results, seed: int, parent: int) -> None:
    """A worker's loop: fetch the batches asked for until told to stop (None), or until
    the main process is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    # terminate() is SIGTERM: a forked worker must not keep a handler it inherited (a
    # training loop's stop-after-this-step, data parallelism's interrupt), which would
    # leave it running
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # forked workers would otherwise draw the same numbers: every generator a dataset may
    # use is seeded afresh (tricycle's, numpy's and Python's), as torch's workers are
    np.random.seed(seed % 2**32)
    random.seed(seed)
    manual_seed(seed % 2**32)
    fetch = make_fetch(worker_id)
    while True:
        try:
            task = tasks.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if task is None:
            return
        k, indices = task
        try:
            results.put((k, fetch(k, indices), None))
        except StopIteration:
            results.put((k, _End, None))
        except BaseException as error:  # noqa: BLE001 - every error travels to the main process
            report = (worker_id, type(error).__name__, traceback.format_exc())
            results.put((k, None, report))


class WorkerPool:
    """``num_workers`` processes making one epoch's batches; iterate ``batches(tasks)``.

    ``make_fetch(worker_id)`` runs in each worker and returns ``fetch(k, indices)``: batch
    ``k`` (raising StopIteration past the dataset's end). ``tasks`` yields (k, indices) in
    order, k = 0, 1, ...; indices is None for an iterable dataset.
    """

    def __init__(self, make_fetch, num_workers: int, prefetch: int, context, seed: int,
                 timeout: float = 0.0):  # fmt: skip
        self.timeout, self.prefetch = timeout, prefetch
        self.results = context.Queue()
        self.tasks = [context.Queue() for _ in range(num_workers)]
        self.workers = []
        for w in range(num_workers):
            process = context.Process(
                target=_work,
                args=(w, make_fetch, self.tasks[w], self.results, seed + w, os.getpid()),
                daemon=True,  # ended by multiprocessing at exit, should close() not run
                name=f"tricycle DataLoader worker {w}",
            )
            process.start()
            self.workers.append(process)

    def batches(self, tasks, first: int = 0):
        """The batches, in order; stops at the first batch past an iterable's end. ``tasks``
        number their batches from ``first`` on (a resumed epoch skips the ones before)."""
        tasks = iter(tasks)
        sent = first
        arrived: dict = {}
        for _ in range(self.prefetch * len(self.workers)):
            sent += self._send(tasks)
        k = first
        while k < sent:
            while k not in arrived:
                got, batch, error = self._receive(k)
                arrived[got] = (batch, error)
            batch, error = arrived.pop(k)
            if error is not None:
                worker, kind, text = error
                raise WorkerError(
                    f"DataLoader worker {worker} raised {kind} while making batch {k}; its "
                    f"traceback:\n{text}"
                )
            if batch is _End:
                return
            sent += self._send(tasks)  # keep the workers busy while this one is used
            k += 1
            yield batch

    def _send(self, tasks) -> int:
        """Hand the next task to its worker (batch k goes to worker k mod N); 0 if none."""
        task = next(tasks, None)
        if task is None:
            return 0
        self.tasks[task[0] % len(self.workers)].put(task)
        return 1

    def _receive(self, k: int):
        """The next result to arrive (k: the batch waited for, for the messages)."""
        waited = 0.0
        while True:
            try:
                return self.results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                waited += POLL_SECONDS
            for w, process in enumerate(self.workers):
                if process.exitcode is not None:
                    raise WorkerError(
                        f"DataLoader worker {w} (pid {process.pid}) ended unexpectedly with "
                        f"exit code {process.exitcode} while batch {k} was awaited (killed, "
                        "or out of memory?)"
                    )
            if self.timeout and waited >= self.timeout:
                raise WorkerError(
                    f"DataLoader: batch {k} did not arrive within timeout={self.timeout:g} s"
                )

    def close(self) -> None:
        """Stop every worker (asked first, then terminated) and release the queues."""
        for tasks in self.tasks:
            try:
                tasks.put(None)
            except (OSError, ValueError):
                pass
        for process in self.workers:
            process.join(STOP_SECONDS / max(len(self.workers), 1))
        for process in self.workers:
            if process.is_alive():
                process.terminate()
                process.join(STOP_SECONDS)
        for q in [*self.tasks, self.results]:
            q.cancel_join_thread()  # never wait at exit to flush batches no one will read
            q.close()
        self.workers = []


__all__ = ["WorkerError", "WorkerPool"]
