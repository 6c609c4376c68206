"""torch.futures: ``Future`` (a result that another thread, or a callback, fills in later),
``collect_all`` and ``wait_all``. ``tricycle.jit.fork`` returns this class too (its call has
already run: the future is done).

A Future is thread-safe: ``wait()`` blocks until ``set_result``/``set_exception`` is called
(once: a second call raises RuntimeError, as torch's); callbacks (``then``,
``add_done_callback``) run in the thread that completes it, or at once if it is done. An
error raised in ``then``'s callback completes the future ``then`` returned with a
RuntimeError naming it, as torch's; one raised in an ``add_done_callback`` callback is
reported as a warning and dropped (torch logs it). ``devices=`` is read for torch's
signature only: tricycle's futures carry no CUDA streams (a GPU result is synchronised by its
own arrays' stream).
"""

import threading
import warnings

from tricycle import checks

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """torch.futures.Future: pending until ``set_result`` or ``set_exception``."""

    def __init__(self, *, devices=None):
        self._done = threading.Condition()
        self._completed = False
        self._value = self._error = None
        self._callbacks = []

    def done(self) -> bool:
        """Whether a result or an error has been set."""
        return self._completed

    def wait(self):
        """Block until done, then the result (or raise the error set)."""
        with self._done:
            self._done.wait_for(lambda: self._completed)
        return self.value()

    def value(self):
        """The result of a done future (or raise its error); a pending one is refused."""
        if not self._completed:
            raise RuntimeError("Future.value: the future is not done yet: call wait() first")
        if self._error is not None:
            raise self._error
        return self._value

    def set_result(self, result) -> None:
        """Complete the future with ``result``: wakes ``wait()`` and runs the callbacks."""
        self._complete(result, None)

    def set_exception(self, result) -> None:
        """Complete the future with the error ``result``, raised by ``wait()``/``value()``."""
        if not isinstance(result, Exception):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, error) -> None:
        with self._done:
            if self._completed:
                raise RuntimeError(
                    "Attempting to mark a completed Future as complete again. Note that a "
                    "Future can only be marked completed once."
                )
            self._value, self._error, self._completed = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._done.notify_all()
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback) -> None:
        """Call ``callback(self)`` when done (at once if it is); its result is dropped."""
        checks.function("Future.add_done_callback", "callback", callback)

        def run(future):
            try:
                callback(future)
            except Exception as error:  # torch logs a callback's error and goes on
                warnings.warn(f"Future: a done callback raised {error!r}", stacklevel=2)

        self._when_done(run)

    def then(self, callback) -> "Future":
        """A new Future completed with ``callback(self)`` once this one is done."""
        checks.function("Future.then", "callback", callback)
        chained = Future()

        def run(future):
            try:
                result = callback(future)
            except Exception as error:
                chained.set_exception(
                    RuntimeError(
                        "Got the following error when running the callback: "
                        f"{type(error).__name__}: {error}"
                    )
                )
            else:
                chained.set_result(result)

        self._when_done(run)
        return chained

    def _when_done(self, run) -> None:
        with self._done:
            if not self._completed:
                self._callbacks.append(run)
                return
        run(self)


def _futures(name: str, futures) -> list:
    futures = list(futures)
    for future in futures:
        if not isinstance(future, Future):
            checks.fail(name, "futures", "a list of Futures", future, TypeError)
    return futures


def collect_all(futures) -> Future:
    """A Future done when all of ``futures`` are, holding them (or the first error among
    them, in their order)."""
    futures = _futures("collect_all", futures)
    collected = Future()
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(_):
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            errors = [f._error for f in futures if f._error is not None]
            if errors:
                collected.set_exception(errors[0])
            else:
                collected.set_result(futures)

    if not futures:
        collected.set_result([])
    for future in futures:
        future._when_done(one_done)
    return collected


def wait_all(futures) -> list:
    """Wait for every future; their results, in order (or raise the first error)."""
    return [future.wait() for future in collect_all(futures).wait()]
