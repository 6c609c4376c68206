"""torch's global switches and their queries: ``get_default_device``, ``is_inference_mode_enabled``,
anomaly detection (``set_anomaly_enabled``, ``is_anomaly_enabled``, and torch.autograd's
``detect_anomaly`` and ``set_detect_anomaly``), ``set_warn_always``/``is_warn_always_enabled``
and ``set_flush_denormal``.

Anomaly detection makes backward check each gradient an op's backward returns: a NaN there is
a RuntimeError naming the op, its output's shape and the input (``tricycle.backprop``, which
holds the switch), as torch's "Function 'DivBackward0' returned nan values in its 0th
output"; off (the default) backward checks nothing. torch also records each op's forward
traceback: tricycle's error names the op instead.

The default device is the host: ``set_default_device`` (``tricycle.torch_functions``) takes
None or "cpu" alone, as tricycle's factories make host arrays unless given ``device=``.
``set_flush_denormal`` cannot switch numpy's (or cupy's) handling of denormal floats, so it
returns False, torch's answer on a machine that cannot, and changes nothing.
``set_warn_always`` records the switch for code that reads it back: tricycle's warnings are
Python's, whose filters decide whether one repeats.
"""

import contextlib

from tricycle import backend, backprop, checks, grad_modes

_warn_always = [False]


def get_default_device():
    """torch.get_default_device: device(type='cpu'), tricycle's fixed default."""
    return backend.device_of_array(backend.numeric_array([0.0]))


def is_inference_mode_enabled() -> bool:
    """torch.is_inference_mode_enabled: whether this thread is in an ``inference_mode()``
    block (``inference_mode(False)`` inside one turns it off, as torch's)."""
    return grad_modes.inference_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch.set_anomaly_enabled: turn anomaly detection on or off, for every thread (see the
    module's doc); ``check_nan=False`` keeps it on without the NaN checks, as torch's."""
    backprop.ANOMALY[:] = [
        checks.boolean("set_anomaly_enabled", "enabled", enabled),
        checks.boolean("set_anomaly_enabled", "check_nan", check_nan),
    ]


def is_anomaly_enabled() -> bool:
    """torch.is_anomaly_enabled: whether anomaly detection is on."""
    return backprop.ANOMALY[0]


def is_anomaly_check_nan_enabled() -> bool:
    """torch.is_anomaly_check_nan_enabled: whether anomaly detection checks for NaN."""
    return backprop.ANOMALY[1]


class detect_anomaly(contextlib.ContextDecorator):
    """torch.autograd.detect_anomaly: anomaly detection on inside the block (``with`` or as a
    decorator), the previous setting back on leaving it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = checks.boolean("detect_anomaly", "check_nan", check_nan)

    def __enter__(self):
        self._previous = list(backprop.ANOMALY)
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        backprop.ANOMALY[:] = self._previous
        return False


class set_detect_anomaly:
    """torch.autograd.set_detect_anomaly(mode): sets anomaly detection at once (a plain call
    leaves it so), and as a context manager puts the previous setting back on leaving."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self._previous = list(backprop.ANOMALY)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        backprop.ANOMALY[:] = self._previous
        return False


def set_warn_always(b: bool) -> None:
    """torch.set_warn_always: record whether warnings should repeat (see the module's doc)."""
    _warn_always[0] = checks.boolean("set_warn_always", "b", b)


def is_warn_always_enabled() -> bool:
    """torch.is_warn_always_enabled: the switch ``set_warn_always`` recorded (False at start)."""
    return _warn_always[0]


def set_flush_denormal(mode: bool) -> bool:
    """torch.set_flush_denormal: False, changing nothing (see the module's doc)."""
    checks.boolean("set_flush_denormal", "mode", mode)
    return False
