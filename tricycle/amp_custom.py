"""torch.amp's helpers for custom autograd Functions (``tricycle.autograd.Function``), reached as
``tricycle.amp.custom_fwd``, ``custom_bwd`` and ``is_autocast_available``::

    class MyMM(tricycle.autograd.Function):
        @staticmethod
        @tricycle.amp.custom_fwd(device_type="cuda", cast_inputs=tricycle.float32)
        def forward(ctx, a, b): ...

        @staticmethod
        @tricycle.amp.custom_bwd(device_type="cuda")
        def backward(ctx, grad): ...

As torch's: ``custom_fwd`` notes on the ctx (its first argument) the autocast dtype of
``device_type`` and whether autocast was on. Without ``cast_inputs`` the forward runs as
called; with it, and autocast on for ``device_type``, the floating tensors among the
arguments that live there (float64 left as it is, also inside lists, tuples and dicts) are
cast to ``cast_inputs`` and the forward runs with autocast off (noted as off). Outside
autocast it is a plain call. ``custom_bwd`` runs the backward under the autocast state the
forward noted. tricycle's autocast casts layer calls, not ops (``tricycle.amp``), so what
these change inside a Function is that state and the casts of its inputs.

``tricycle.cuda.amp.custom_fwd(fwd=None, *, cast_inputs=None)`` and ``custom_bwd(bwd)`` are
torch's deprecated forms on "cuda" (FutureWarning), which call these.

``tricycle.amp`` imports these names; the autocast state they read is that module's, reached
by name at call time (``_amp``), so that importing either loads no cycle.
"""

import functools
import importlib

from tricycle.casting import cast, is_floating
from tricycle.tensor import Tensor

__all__ = ["custom_bwd", "custom_fwd", "is_autocast_available"]

# torch's device types (a device string starts with one); autocast is available on all of
# them but "meta". tricycle computes on two, "cpu" and "cuda".
DEVICE_TYPES = ("cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan "
                "mps meta hpu mtia privateuseone").split()  # fmt: skip


def _amp():
    """``tricycle.amp`` (its autocast and state), by name: it imports this module."""
    return importlib.import_module("tricycle.amp")


def _device_type(op: str, device_type) -> str:
    """``device_type`` checked as torch's (a str), or ValueError."""
    if not isinstance(device_type, str):
        raise ValueError(f"{op}: expected `device_type` of type `str`, got: `{type(device_type)}`")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """torch.amp.is_autocast_available: whether autocast knows ``device_type`` ("cpu",
    "cuda", "cuda:0", ...: True, as torch's, GPU or none; "meta": False). An unknown device
    string is torch's RuntimeError."""
    kind = _device_type("is_autocast_available", device_type).partition(":")[0]
    if kind not in DEVICE_TYPES:
        raise RuntimeError(f"is_autocast_available: expected one of {', '.join(DEVICE_TYPES)} "
                           f"device type at start of device string: {device_type}")  # fmt: skip
    return kind != "meta"


def _cast_inputs(value, device_type: str, dtype):
    """``value`` with each floating Tensor on ``device_type`` (not float64) cast to ``dtype``,
    also inside lists, tuples and dicts, as torch's ``_cast``."""
    if isinstance(value, Tensor):
        here = ("cuda" if value.on_gpu else "cpu") == device_type.partition(":")[0]
        eligible = here and is_floating(value.dtype) and value.dtype.name != "float64"
        return cast(value, dtype) if eligible else value
    if isinstance(value, dict):
        return {key: _cast_inputs(item, device_type, dtype) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast_inputs(item, device_type, dtype) for item in value)
    return value


def _state(device_type: str):
    """(autocast on for ``device_type``, its dtype): torch's for a type tricycle lacks."""
    kind = device_type.partition(":")[0]
    if kind not in ("cpu", "cuda"):
        return False, None
    return _amp().is_autocast_enabled(kind), _amp().get_autocast_dtype(kind)


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """torch.amp.custom_fwd: decorate a Function's ``forward(ctx, ...)`` (see the module's
    doc); without ``fwd``, the decorator."""
    _device_type("custom_fwd", device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        enabled, ctx._dtype = _state(device_type)
        ctx._fwd_used_autocast = enabled and cast_inputs is None
        if cast_inputs is None or not enabled:
            return fwd(*args, **kwargs)
        args, kwargs = _cast_inputs((args, kwargs), device_type, cast_inputs)
        with _amp().autocast(device_type.partition(":")[0], enabled=False):
            return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """torch.amp.custom_bwd: decorate a Function's ``backward(ctx, ...)``: it runs under the
    autocast state its forward noted; without ``bwd``, the decorator."""
    _device_type("custom_bwd", device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx, kind = args[0], device_type.partition(":")[0]
        if kind not in ("cpu", "cuda"):
            return bwd(*args, **kwargs)
        with _amp().autocast(kind, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
