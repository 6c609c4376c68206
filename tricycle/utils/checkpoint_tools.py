"""torch.utils.checkpoint's names beside ``checkpoint`` (``tricycle.utils.checkpoint`` hands
them on), and the walk that finds the generators a checkpointed function draws from.

- ``CheckpointError``: torch's error class of a recomputation that differs from its forward
  (a RuntimeError, as torch's); ``checkpoint`` raises it.
- ``noop_context_fn``: ``checkpoint``'s default ``context_fn``: two empty contexts, one
  around the forward and one around the recomputation.
- ``set_checkpoint_early_stop(enable)`` and ``set_checkpoint_debug_enabled(enabled)``:
  torch's switches, as ``with`` blocks (checked, then held for their length), as are
  ``checkpoint``'s ``early_stop`` and ``debug``. Early stop is torch's way to end a
  recomputation once the tensors it needs are made; tricycle's recomputation runs the whole
  function, so neither changes a result. torch's debug mode prints the ops of both runs on a
  mismatch; tricycle's error names the shapes and dtypes that differed.
- ``detach_variable``, ``check_backward_validity``: torch's helpers, as torch's.
- ``get_device_states``/``set_device_states``: the GPUs' random states that torch saves
  beside the CPU's. tricycle draws every random number on the host, from the one generator
  that ``checkpoint`` saves already, so there are none: ([], []), and setting none is a no-op.
- ``CheckpointFunction``: torch's legacy autograd-Function form, ``apply(function,
  preserve_rng_state, *args)``: ``checkpoint(..., use_reentrant=True)``.
- ``CheckpointPolicy``: torch's values, which a selective checkpointing policy returns
  (``tricycle.utils.checkpoint_selective``).
"""

import contextlib
import enum
import functools
import importlib
import types
import warnings

import numpy as np

from tricycle import checks
from tricycle.graph import Node
from tricycle.module import Layer

_switches = {"early_stop": True, "debug": None}


class CheckpointError(RuntimeError):
    """torch.utils.checkpoint.CheckpointError: the recomputation in backward differs from
    the forward."""


def noop_context_fn() -> tuple:
    """torch.utils.checkpoint.noop_context_fn: (nullcontext(), nullcontext())."""
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """torch.utils.checkpoint.set_checkpoint_early_stop: within the block, checkpoints take
    ``enable`` as their ``early_stop`` (see the module's doc)."""
    checks.boolean("set_checkpoint_early_stop", "enable", enable)
    before, _switches["early_stop"] = _switches["early_stop"], enable
    try:
        yield
    finally:
        _switches["early_stop"] = before


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """torch.utils.checkpoint.set_checkpoint_debug_enabled: within the block, checkpoints
    take ``enabled`` as their ``debug`` (None: each its own argument)."""
    if enabled is not None:
        checks.boolean("set_checkpoint_debug_enabled", "enabled", enabled)
    before, _switches["debug"] = _switches["debug"], enabled
    try:
        yield
    finally:
        _switches["debug"] = before


def detach_variable(inputs: tuple) -> tuple:
    """torch.utils.checkpoint.detach_variable: each Tensor of the tuple ``inputs`` detached,
    requiring grad as it did; other values as they are."""
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")  # fmt: skip
    out = []
    for x in inputs:
        if isinstance(x, Node):
            x = x.new(x.array, requires_grad=x.requires_grad, is_batched=x.is_batched)
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """torch.utils.checkpoint.check_backward_validity: a warning unless one of the Tensors
    among ``inputs`` requires grad."""
    if not any(x.requires_grad for x in inputs if isinstance(x, Node)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)  # fmt: skip


def get_device_states(*args) -> tuple[list, list]:
    """torch.utils.checkpoint.get_device_states: ([], []) (see the module's doc)."""
    return [], []


def set_device_states(devices, states, *, device_type=None) -> None:
    """torch.utils.checkpoint.set_device_states: nothing to set (see the module's doc)."""
    if len(devices) != len(states):
        raise ValueError(f"set_device_states: {len(devices)} devices but {len(states)} states")


class CheckpointFunction:
    """torch.utils.checkpoint.CheckpointFunction, torch's legacy form of the reentrant
    variant: ``CheckpointFunction.apply(function, preserve_rng_state, *args)``."""

    @staticmethod
    def apply(function, preserve_rng_state: bool, *args):
        # tricycle.utils.checkpoint imports this module: reached by name, once it is loaded
        checkpoint = importlib.import_module("tricycle.utils.checkpoint").checkpoint
        return checkpoint(function, *args, use_reentrant=True,
                          preserve_rng_state=preserve_rng_state)  # fmt: skip


class CheckpointPolicy(enum.Enum):
    """torch.utils.checkpoint.CheckpointPolicy: torch's values (see the module's doc)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


def in_contexts(contexts: list, function, *args, **kwargs):
    """``function(*args, **kwargs)`` within the first of ``contexts`` on its first call (the
    forward), the second on later ones (the recomputation): a ``context_fn``'s pair."""
    calls = contexts.pop(0) if len(contexts) > 1 else contexts[0]
    with calls:
        return function(*args, **kwargs)


def generators(roots: tuple) -> list:
    """The numpy Generators that ``roots`` hold: given directly, or held by a layer (its own
    attributes: a Dropout's ``rng``) reached through Layers, bound methods, partials,
    closures, defaults, lists, tuples and dicts, and the globals a function's code names
    (only layers, generators and callables of those: a global list is not walked)."""
    found, seen, todo = [], set(), [(root, True) for root in roots]
    while todo:
        item, walk_containers = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.random.Generator):
            found.append(item)
        elif isinstance(item, Layer):
            for layer in item.layers():
                generators = [v for v in vars(layer).values() if isinstance(v, np.random.Generator)]
                todo.extend((g, False) for g in generators)
        elif isinstance(item, list | tuple) and walk_containers:
            todo.extend((value, True) for value in item)
        elif isinstance(item, dict) and walk_containers:
            todo.extend((value, True) for value in item.values())
        elif isinstance(item, functools.partial):
            todo.extend((v, True) for v in (item.func, *item.args, *item.keywords.values()))
        elif isinstance(item, types.MethodType):
            todo.extend(((item.__self__, True), (item.__func__, True)))
        elif isinstance(item, types.FunctionType):
            todo.extend((value, True) for value in held_by(item))
            named = item.__code__.co_names
            todo.extend((item.__globals__[n], False) for n in named if n in item.__globals__)
    return found


def held_by(function: types.FunctionType) -> list:
    """The values a function holds: its closure's cells (those filled) and its defaults."""
    held = list(function.__defaults__ or ()) + list((function.__kwdefaults__ or {}).values())
    for cell in function.__closure__ or ():
        try:
            held.append(cell.cell_contents)
        except ValueError:  # a cell not filled yet
            pass
    return held
