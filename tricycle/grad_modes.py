"""torch's grad modes on the engine: ``set_grad_enabled``, ``enable_grad``,
``inference_mode`` and ``is_grad_enabled``.

Each switches the engine's thread-local mode, the one ``no_grad`` switches
(``tricycle.graph``, which holds it), and they nest as torch's do: a block puts back the mode
it found, whatever it raised. ``inference_mode`` is ``no_grad`` here: tricycle has no cheaper
mode than building no graph.
"""

import contextlib
import threading

from tricycle import checks, graph


def is_grad_enabled() -> bool:
    """torch.is_grad_enabled: whether ops in this thread record the graph."""
    return graph.grad_enabled()


_inference = threading.local()  # whether this thread is in an inference_mode() block


def inference_enabled() -> bool:
    """Whether this thread is in an ``inference_mode()`` block (torch.is_inference_mode_enabled)."""
    return getattr(_inference, "enabled", False)


def _set_grad_mode(mode: bool) -> None:
    # graph.py holds the mode (no_grad switches it there); the setter lives here
    graph._grad_mode.enabled = mode


class _GradMode(contextlib.ContextDecorator):
    """A context manager (and decorator) that sets the grad mode to ``mode`` inside its block
    and puts the previous one back on leaving it, whatever the block raised."""

    mode = True

    def __enter__(self):
        self._previous = graph.grad_enabled()
        _set_grad_mode(self.mode)

    def __exit__(self, *exc):
        _set_grad_mode(self._previous)
        return False

    def _recreate_cm(self):  # a decorated function gets a fresh one per call (threads)
        fresh = _GradMode()
        fresh.mode = self.mode
        return fresh


def _decorated(op: str, function):
    """``function`` decorated by ``op`` named without the call (``@enable_grad``)."""
    if not callable(function):
        checks.fail(op, "its argument", "a function to decorate (or nothing)", function, TypeError)
    return function


class enable_grad(_GradMode):
    """torch.enable_grad: record the graph inside the block (within a ``no_grad`` one too);
    ``with enable_grad():``, ``@enable_grad()`` or ``@enable_grad``."""

    mode = True

    def __new__(cls, function=None):
        if function is None:
            return super().__new__(cls)
        return cls()(_decorated("enable_grad", function))  # @enable_grad, without the call

    def __init__(self, function=None):
        pass


class inference_mode(_GradMode):
    """torch.inference_mode: ``no_grad`` (tricycle has no cheaper mode); as torch's,
    ``inference_mode(False)`` records the graph inside its block. ``with``,
    ``@inference_mode()`` or ``@inference_mode``."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls(True)(_decorated("inference_mode", mode))  # @inference_mode, without the call

    def __init__(self, mode: bool = True):
        self.mode = not mode

    def __enter__(self):
        self._was_inference = inference_enabled()
        _inference.enabled = not self.mode
        super().__enter__()

    def __exit__(self, *exc):
        _inference.enabled = self._was_inference
        return super().__exit__(*exc)

    def _recreate_cm(self):  # a decorated function gets a fresh one per call (threads)
        return inference_mode(not self.mode)


class set_grad_enabled(_GradMode):
    """torch.set_grad_enabled(mode): sets the mode at once, so that it works as a plain call
    (``set_grad_enabled(False)`` until changed), and as a context manager puts the previous
    mode back on leaving the block (``with set_grad_enabled(is_train):``); as a decorator
    (``@set_grad_enabled(False)``) it sets the mode for each call of the function alone."""

    def __init__(self, mode: bool):
        self.mode = checks.boolean("set_grad_enabled", "mode", mode)
        self._previous = graph.grad_enabled()
        _set_grad_mode(mode)

    def __enter__(self):  # the mode was set on creation; the previous one is kept from then
        pass

    def __call__(self, function):
        _set_grad_mode(self._previous)  # decorating leaves the mode as it was, as torch's
        return super().__call__(function)
