"""The worker processes of a ``DataLoader``: batches made ahead, in order, by N processes.

The main process hands out batch numbers (with their example indices, for a map-style
dataset) to worker ``k % N`` and keeps ``prefetch`` batches per worker in flight; each worker
makes its batches and sends them back on one result queue; the main process yields them in
order, holding early arrivals until their turn. So the batches of a map-style dataset are
those of ``num_workers=0``, in the same order.

Each epoch starts with a message to every worker: it seeds tricycle's, numpy's and Python's
generators afresh (worker w of epoch e alike in every run, differently from the others), sets
what ``get_worker_info()`` returns there, and makes its fetch function anew. A pool serves
one epoch, or every epoch of a loader with ``persistent_workers`` (the same processes,
re-seeded each epoch); ``worker_init_fn`` runs once in each process, after its first
seeding. Every message carries the number of the iteration it belongs to: what is left of a
loop left early is skipped by the workers and dropped by the main process. A worker whose
fetch raises StopIteration (its stream ran out) is done for the epoch: its batches still
asked for are dropped and the others go on, in turn, until every worker is done (torch's
order for an iterable dataset).

What can go wrong, and what happens then:

- a worker raises: the exception's type, message and traceback travel back, and the main
  process raises ``WorkerError`` with them when it reaches that batch (the workers are
  stopped first); so does a batch that cannot be pickled to travel back (the queue's
  background thread would only print that error and lose the batch, leaving the main
  process waiting for it forever);
- a worker dies (killed, out of memory): the main process notices within a second and
  raises ``WorkerError`` with its exit code, instead of waiting forever;
- Ctrl-C: workers ignore SIGINT (the terminal sends it to the whole process group); the
  main process's KeyboardInterrupt stops them on its way out, and a worker whose main
  process is gone ends itself. No orphan is left either way.
"""

import dataclasses
import multiprocessing
import multiprocessing.queues
import os
import queue
import random
import signal
import traceback
from collections import deque

import numpy as np

from tricycle.random import manual_seed

POLL_SECONDS = 0.2  # how often a waiting process checks on the others
STOP_SECONDS = 2.0  # how long the workers get to finish before they are terminated


class WorkerError(RuntimeError):
    """A ``DataLoader`` worker raised an error (its traceback is in the message) or died."""


class Superseded(RuntimeError):
    """A newer iteration took over a loader's persistent workers from this one."""


class _End:
    """The dataset ran out before this batch (an iterable dataset's end)."""


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns in a worker process (torch's ``WorkerInfo``).

    Attributes:
        id: this worker's number, 0..num_workers - 1.
        num_workers: how many workers the loader has.
        seed: the seed this worker's generators were seeded with this epoch.
        dataset: this process's copy of the dataset (changes to it stay in this worker).
    """

    id: int
    num_workers: int
    seed: int
    dataset: object


_info: WorkerInfo | None = None  # set in a worker process at the start of each epoch
_asked = False  # whether get_worker_info() was called in this worker


def get_worker_info() -> WorkerInfo | None:
    """This worker's ``WorkerInfo`` in a ``DataLoader`` worker process, None in the main
    process (torch's ``get_worker_info``). An iterable dataset shards its stream with it
    (``info.id`` of ``info.num_workers``), or a ``worker_init_fn`` sets up its worker's copy
    (``info.dataset``); asking it makes the worker read its own stream (see
    ``tricycle.apps.loader``)."""
    global _asked
    if _info is not None:
        _asked = True
    return _info


def worker_info_asked() -> bool:
    """Whether code in this worker process (its dataset, its ``worker_init_fn``) has called
    ``get_worker_info()``: then it reads the stream that worker shapes for itself."""
    return _asked


def _work(worker_id: int, make_fetch, init_fn, tasks, results, generation, parent: int,
          num_workers: int, dataset) -> None:  # fmt: skip
    """A worker's loop: start an epoch, fetch the batches asked for, until told to stop
    (None), or until the main process is gone. ``generation`` (shared) is the iteration the
    main process reads now: a task of an earlier one (a loop left early) is skipped."""
    global _info
    results.worker_id = worker_id  # for the errors of its background thread
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    # terminate() is SIGTERM: a forked worker must not keep a handler it inherited (a
    # training loop's stop-after-this-step, data parallelism's interrupt), which would
    # leave it running
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # told to stop, the worker exits at once, dropping batches it made that no one will read
    # (a loop left early), as torch's: else it waits for them to be written to the pipe
    results.cancel_join_thread()
    fetch, failure, init_failure, started = None, None, None, False
    while True:
        try:
            task = tasks.get(timeout=POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if task is None:
            return
        kind, iteration, *rest = task
        if iteration < generation.value:
            continue
        if kind == "epoch":  # ("epoch", iteration, seed)
            _seed(rest[0])
            _info = WorkerInfo(worker_id, num_workers, rest[0], dataset)
            if not started and init_fn is not None:  # once per process, as torch's
                try:
                    init_fn(worker_id)
                except BaseException as error:  # noqa: BLE001 - reported with every batch
                    init_failure = _report(worker_id, "in worker_init_fn", error)
            started, fetch, failure = True, None, init_failure
            if failure is None:
                try:
                    fetch = make_fetch(worker_id)
                except BaseException as error:  # noqa: BLE001
                    failure = _report(worker_id, "while starting its epoch", error)
            continue
        k, indices = rest  # ("batch", iteration, k, indices)
        if failure is not None:
            results.put((iteration, k, None, failure))
            continue
        try:
            results.put((iteration, k, fetch(k, indices), None))
        except StopIteration:
            results.put((iteration, k, _End, None))
        except BaseException as error:  # noqa: BLE001 - every error travels to the main process
            results.put((iteration, k, None, _report(worker_id, f"while making batch {k}", error)))


def _seed(seed: int) -> None:
    """Seed every generator a dataset may use afresh (tricycle's, numpy's and Python's), as
    torch's workers do: forked workers would otherwise draw the same numbers."""
    np.random.seed(seed % 2**32)
    random.seed(seed)
    manual_seed(seed % 2**32)


def _report(worker_id: int, where: str, error: BaseException) -> tuple:
    """What the main process needs to raise ``error`` again: who, where, what, traceback."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return worker_id, where, type(error).__name__, text


class _ResultQueue(multiprocessing.queues.Queue):
    """The queue the workers send (iteration, k, batch, error) on. It pickles what is put on
    it in a background thread, where an object that cannot be pickled (a batch holding a
    lock, an open file, a generator) would only be printed and dropped; here it is reported
    as batch k's error instead, so that the main process raises rather than waits."""

    worker_id = -1  # the worker process's own number, set in it by ``_work``

    def _on_queue_feeder_error(self, error, obj):
        if not (isinstance(obj, tuple) and len(obj) == 4):  # not a result: the default
            super()._on_queue_feeder_error(error, obj)
            return
        iteration, k = obj[:2]
        where = f"while sending batch {k} to the main process (a batch must pickle)"
        self.put((iteration, k, None, _report(self.worker_id, where, error)))


class WorkerPool:
    """``num_workers`` processes making batches; iterate ``batches(tasks, seed)`` for each
    epoch (a pool may serve several, as ``persistent_workers``), then ``close()``.

    ``make_fetch(worker_id)`` runs in each worker at the start of each epoch and returns
    ``fetch(k, indices)``: batch ``k`` (raising StopIteration past the dataset's end).
    ``init_fn(worker_id)`` runs once in each worker, after its generators are first seeded,
    before its first ``make_fetch``. ``tasks`` yields (k, indices) in order, k = 0, 1, ...;
    indices is None for an iterable dataset. ``dataset`` is what ``get_worker_info().dataset``
    gives in the workers (each its own copy).
    """

    def __init__(self, make_fetch, num_workers: int, prefetch: int, context,
                 timeout: float = 0.0, init_fn=None, dataset=None):  # fmt: skip
        self.timeout, self.prefetch = timeout, prefetch
        self.results = _ResultQueue(ctx=context)
        self.tasks = [context.Queue() for _ in range(num_workers)]
        self.generation = context.RawValue("q", 0)  # the iteration being read
        self.workers = []
        shared = (self.results, self.generation, os.getpid())
        for w in range(num_workers):
            process = context.Process(
                target=_work,
                args=(w, make_fetch, init_fn, self.tasks[w], *shared, num_workers, dataset),
                daemon=True,  # ended by multiprocessing at exit, should close() not run
                name=f"tricycle DataLoader worker {w}",
            )
            process.start()
            self.workers.append(process)

    def batches(self, tasks, seed: int, first: int = 0):
        """One epoch's batches, in order, as (k, batch k); batch k is worker k mod N's, and a
        worker past its stream's end (StopIteration) is done: its batches are skipped, the
        epoch ends when every worker is done or the tasks run out. Worker w seeds its
        generators with ``seed + w`` first. ``tasks`` number their batches from ``first`` on
        (a resumed epoch skips the ones before)."""
        self.generation.value += 1  # the workers skip what is left of an earlier iteration
        iteration = self.generation.value
        for w, queue_ in enumerate(self.tasks):
            queue_.put(("epoch", iteration, seed + w))
        tasks, done = iter(tasks), set()  # done: the workers whose stream ended
        sent: deque = deque()  # the batches asked for and not yet yielded, in order
        arrived: dict = {}
        for _ in range(self.prefetch * len(self.workers)):
            self._send(tasks, iteration, sent, done)
        while sent:
            k = sent.popleft()
            if k % len(self.workers) in done:
                arrived.pop(k, None)
                continue
            self._check_current(iteration)
            while k not in arrived:
                got, batch, error = self._receive(k, iteration)
                arrived[got] = (batch, error)
            batch, error = arrived.pop(k)
            if error is not None:
                worker, where, kind, text = error
                raise WorkerError(
                    f"DataLoader worker {worker} raised {kind} {where}; its traceback:\n{text}"
                )
            if batch is _End:
                done.add(k % len(self.workers))
                continue
            self._send(tasks, iteration, sent, done)  # keep the workers busy meanwhile
            yield k, batch

    def _send(self, tasks, iteration: int, sent: deque, done: set) -> None:
        """Hand the next task to its worker (batch k goes to worker k mod N), passing over
        those of the workers that are done; nothing once the tasks or the workers are."""
        n = len(self.workers)
        while len(done) < n:
            task = next(tasks, None)
            if task is None:
                return
            k, indices = task
            if k % n not in done:
                self.tasks[k % n].put(("batch", iteration, k, indices))
                sent.append(k)
                return

    def _check_current(self, iteration: int) -> None:
        """Refuse to go on reading an iteration that a newer one has replaced (its batches
        are dropped by the newer one)."""
        if self.generation.value != iteration:
            raise Superseded(
                "DataLoader: a newer iteration took over the persistent workers (iter() "
                "again before this loop ended); leave one loop before starting the next"
            )

    def _receive(self, k: int, iteration: int):
        """The next result of this iteration to arrive, as (k, batch, error) (k: the batch
        waited for, for the messages); results of an earlier iteration are dropped."""
        waited = 0.0
        while True:
            self._check_current(iteration)
            try:
                got, *result = self.results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                waited += POLL_SECONDS
            else:
                if got == iteration:
                    return result
                continue  # a batch of a loop left early: no one reads it
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

    def close(self, stop_seconds: float = STOP_SECONDS) -> None:
        """Stop every worker (asked first, then terminated) and release the queues.
        ``stop_seconds`` is bound here: at interpreter exit a module's globals may already be
        gone when an unfinished loop's pool is closed."""
        for tasks in self.tasks:
            try:
                tasks.put(None)
            except (OSError, ValueError):
                pass
        for process in self.workers:
            process.join(stop_seconds / max(len(self.workers), 1))
        for process in self.workers:
            if process.is_alive():
                process.terminate()
                process.join(stop_seconds)
        for q in [*self.tasks, self.results]:
            q.cancel_join_thread()  # never wait at exit to flush batches no one will read
            q.close()
        self.workers = []


def start_context(context, num_workers: int):
    """The multiprocessing context that starts the workers, from ``multiprocessing_context``
    as torch takes it (a start method's name or a context); None: fork where there is one
    (the dataset need not pickle, the workers start at once), else spawn."""
    if context is None:
        if num_workers == 0:
            return None
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    if num_workers == 0:
        raise ValueError(
            "DataLoader: multiprocessing_context can only be used with multi-process loading "
            "(num_workers > 0), but got num_workers=0"
        )
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(
                f"DataLoader: multiprocessing_context should specify a valid start method in "
                f"{methods!r}, but got multiprocessing_context={context!r}"
            )
        return multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError(
            "DataLoader: multiprocessing_context should be a valid context object or a string "
            f"specifying the start method, but got multiprocessing_context={context!r}"
        )
    return context


__all__ = [
    "Superseded",
    "WorkerError",
    "WorkerInfo",
    "WorkerPool",
    "get_worker_info",
    "start_context",
    "worker_info_asked",
]
