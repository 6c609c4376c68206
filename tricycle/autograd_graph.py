"""torch.autograd.graph on tricycle's engine: what of it the engine can honour.

- ``register_multi_grad_hook(tensors, fn, mode="all")`` is honoured. With ``mode="all"``,
  once a backward has computed the gradients of the tensors it reaches, ``fn`` gets them all
  (None for those it did not reach); with ``mode="any"``, ``fn`` gets the first gradient one
  of them receives, once per backward. Built on each tensor's ``register_hook`` and the
  engine's end-of-pass callback (``backprop.queue_callback``): "all" is called when the
  whole backward pass has been walked, torch's as soon as the last of them is computed.
- ``saved_tensors_hooks(pack_hook, unpack_hook)`` is refused when entered: an op's backward
  here is a closure over the arrays it needs, which the engine never sees as "saved
  tensors", so it cannot pass them through ``pack_hook`` and ``unpack_hook``; running the
  block without them would silently differ wherever the hooks change values.
- ``save_on_cpu()`` is accepted and changes nothing: the hooks would only move saved tensors
  to the host and back, the same values; on the CPU they are there already, on a GPU they
  stay on the device (no memory is freed there).
- ``disable_saved_tensors_hooks(message)``: inside it, entering either of the two raises
  ``RuntimeError(message)``, as torch's.
- ``increment_version(tensor)`` is accepted and does nothing: the engine keeps no version
  counters (it does not detect in-place changes to tensors a backward needs).
"""

import contextlib
import threading
from collections.abc import Iterable

from tricycle import backprop
from tricycle.graph import Node

__all__ = ["disable_saved_tensors_hooks", "increment_version", "register_multi_grad_hook",
           "save_on_cpu", "saved_tensors_hooks"]  # fmt: skip


class _Disabled(threading.local):
    message: str | None = None  # inside disable_saved_tensors_hooks: its message


_disabled = _Disabled()


class saved_tensors_hooks:  # noqa: N801 (torch's name)
    """torch's context manager that passes every tensor saved for backward through
    ``pack_hook`` and, in the backward, ``unpack_hook``. Refused when entered (see the module
    docstring: saved tensors are closures here)."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> "saved_tensors_hooks":
        _refuse_if_disabled()
        raise NotImplementedError(
            "saved_tensors_hooks: tricycle's ops keep what their backward needs in closures, "
            "not as saved tensors the engine could pack and unpack, so pack_hook and "
            "unpack_hook cannot be applied; run without them (or use save_on_cpu, which "
            "changes no value)"
        )

    def __exit__(self, *exc) -> None:
        return None


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 (torch's name)
    """torch's block that keeps saved tensors on the host until the backward needs them.
    Accepted; no value changes, and tricycle keeps them where they were (see the module
    docstring). ``pin_memory`` and ``device_type`` as torch's, unused."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(None, None)
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> "save_on_cpu":
        _refuse_if_disabled()
        return self


def _refuse_if_disabled() -> None:
    if _disabled.message is not None:
        raise RuntimeError(_disabled.message)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Inside this block, entering ``saved_tensors_hooks`` (or ``save_on_cpu``) raises
    ``RuntimeError(error_message)``; blocks nest, the innermost message wins."""
    previous, _disabled.message = _disabled.message, error_message
    try:
        yield
    finally:
        _disabled.message = previous


class _MultiHandle:
    """What ``register_multi_grad_hook`` returns: ``remove()`` removes every tensor's hook
    (also at the end of a ``with`` block)."""

    def __init__(self, handles: tuple) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> "_MultiHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all") -> _MultiHandle:
    """torch's hook on several tensors at once (see the module docstring): ``fn(grads)``
    (a tuple, None where a tensor got no gradient) per backward with ``mode="all"``,
    ``fn(grad)`` for the first of them with ``mode="any"``. Returns a handle whose
    ``remove()`` removes it."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not isinstance(t, Node):
            raise TypeError(f"register_multi_grad_hook: expected Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise AssertionError(
                f"Expected gradient function to be set (register_multi_grad_hook: a tensor of "
                f"shape {t.shape} does not require grad)"
            )
    state = {"pass": None, "grads": None}  # the backward pass being collected, and its grads

    def in_this_pass() -> bool:
        """Whether this backward pass was seen already; if not, start collecting it."""
        current = backprop._passes.callbacks
        if state["pass"] is current:
            return True
        state["pass"], state["grads"] = current, [None] * len(tensors)
        return False

    def hook_all(i: int):
        def hook(grad) -> None:
            if not in_this_pass():
                backprop.queue_callback(finish)
            state["grads"][i] = grad

        return hook

    def finish() -> None:
        grads, state["pass"], state["grads"] = tuple(state["grads"]), None, None
        fn(grads)

    def hook_any(grad) -> None:
        if not in_this_pass():
            backprop.queue_callback(lambda: state.update({"pass": None}))
            fn(grad)

    hooks = [hook_all(i) if mode == "all" else hook_any for i in range(len(tensors))]
    return _MultiHandle(tuple(t.register_hook(h) for t, h in zip(tensors, hooks)))


def increment_version(tensor) -> None:
    """torch bumps the version counter of ``tensor`` (or of each of an iterable of tensors);
    tricycle keeps none (see the module docstring), so this checks the argument and returns."""
    tensors = (tensor,) if isinstance(tensor, Node) else tensor
    if not isinstance(tensors, Iterable) or not all(isinstance(t, Node) for t in tensors):
        raise TypeError(
            f"increment_version: expected a Tensor or an iterable of Tensors, got {tensor!r}"
        )
