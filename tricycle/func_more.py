"""torch.func's forward-mode names and eager helpers, re-exported by ``tricycle.func``:

- ``jvp(func, primals, tangents)``: (func(*primals), J tangents), the product of the
  Jacobian with the tangents; ``linearize(func, *primals)``: (func(*primals), jvp_fn), with
  ``jvp_fn(*tangents)`` that product at the same primals. tricycle has reverse mode only, so
  both go through ``tricycle.autograd.functional.jvp`` (the Jacobian, one backward per output
  element): torch's numbers, not its forward-mode cost.
- ``functionalize(func, remove=...)``: torch rewrites in-place ops out of a traced program
  while keeping what the caller sees; run eagerly, that is ``func`` itself (with torch's
  check of ``remove``).
- ``stack_module_state(models)``: the models' parameters and buffers stacked on a new first
  dimension, for ``vmap`` over ``functional_call`` (model ensembling).
- ``replace_all_batch_norm_modules_(root)``: every batch norm of ``root`` stops tracking
  running statistics (they become None) and so always normalises by the batch's own, as
  ``vmap`` over a batch norm needs.

``tricycle.func`` sits beside ``tricycle.nn`` (which imports it), so a batch norm is known by
its class ``tricycle.nn.batch_norm._BatchNorm`` in its type's ancestry, not by an import.
"""

import functools
from collections.abc import Callable

from tricycle import autograd
from tricycle.ops import stack
from tricycle.tensor import Tensor

__all__ = ["functionalize", "jvp", "linearize", "replace_all_batch_norm_modules_",
           "stack_module_state"]  # fmt: skip

_JVP = "jvp(f, primals, tangents)"


def _tensors(op: str, name: str, values) -> tuple:
    if not isinstance(values, tuple):
        raise RuntimeError(f"{op}: Expected {name} to be a tuple. E.g. it should be valid to "
                           "call f(*primals).")  # fmt: skip
    if not values:
        raise RuntimeError(f"{op}: Expected {name} to be a non-empty tuple of Tensors.")
    for value in values:
        if not isinstance(value, Tensor):
            raise RuntimeError(f"{op}: Expected {name} to only contain Tensors, got "
                               f"{type(value)}")  # fmt: skip
    return values


def _products(op: str, func: Callable, primals: tuple, tangents: tuple, strict: bool):
    """(outputs, J tangents) through the Jacobian, the tangents checked against the primals;
    ``strict`` refuses an output that does not depend on the primals (else its zeros)."""
    for i, (p, t) in enumerate(zip(primals, tangents)):
        if tuple(t.shape) != tuple(p.shape):
            raise RuntimeError(
                f"{op}: tangent:{i} with shape {tuple(t.shape)} doesn't match the shape "
                f"{tuple(p.shape)} of the corresponding primal."
            )
    return autograd.functional.jvp(func, primals, tangents, strict=strict)


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False):
    """torch.func.jvp: ``(func(*primals), J tangents)``, or with ``has_aux`` (``func``
    returning (output, aux)) ``(output, J tangents, aux)``. ``primals`` and ``tangents`` are
    tuples of Tensors of the same shapes."""
    primals, tangents = _tensors(_JVP, "primals", primals), _tensors(_JVP, "tangents", tangents)
    if len(primals) != len(tangents):
        raise RuntimeError(f"{_JVP}: Expected primals and tangents to have the same python "
                           f"structure, got {len(primals)} primals and {len(tangents)} "
                           "tangents")  # fmt: skip
    aux = []

    def output(*args):
        out = func(*args)
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{_JVP}: output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")  # fmt: skip
            out, extra = out
            aux[:] = [extra]
        return out

    out, product = _products(_JVP, output, primals, tangents, strict)
    return (out, product, aux[0]) if has_aux else (out, product)


def linearize(func: Callable, *primals) -> tuple:
    """torch.func.linearize: ``(func(*primals), jvp_fn)``, where ``jvp_fn(*tangents)`` is
    the Jacobian of ``func`` at ``primals`` times the tangents (each shaped as its primal)."""
    primals = _tensors("linearize", "primals", primals)
    out = func(*primals)

    def jvp_fn(*tangents):
        tangents = _tensors("linearize", "tangents", tangents)
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents, one per primal, "
                               f"got {len(tangents)}")  # fmt: skip
        return _products("linearize", func, primals, tangents, False)[1]

    return out, jvp_fn


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """torch.func.functionalize: ``func`` without the in-place ops of its trace. Eagerly the
    results and the inputs' mutations are ``func``'s own, so it is ``func`` (wrapped)."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(
            "functionalize(f, remove='mutations'): received invalid argument for "
            f"remove={remove}. Valid options are:\n     remove='mutations': all inplace and "
            "out= operators will be removed from the program, and replaced with their "
            "out-of-place equivalents.\n     remove='mutations_and_views': In addition to the "
            "above, all aliasing operators {view} will be replaced with their non-aliasing "
            "counterparts, {view}_copy.\n"
        )

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        return func(*args, **kwargs)

    return functionalized


def _is_batch_norm(module) -> bool:
    return any(c.__name__ == "_BatchNorm" and c.__module__ == "tricycle.nn.batch_norm"
               for c in type(module).__mro__)  # fmt: skip


def replace_all_batch_norm_modules_(root):
    """torch.func.replace_all_batch_norm_modules_: in place, every batch norm of ``root``
    (itself included) with ``running_mean``, ``running_var`` (and ``num_batches_tracked``)
    None and ``track_running_stats`` False. Returns ``root``."""
    for module in root.modules():
        if _is_batch_norm(module) and module.track_running_stats:
            module.running_mean = module.running_var = None
            if hasattr(module, "num_batches_tracked"):
                module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def stack_module_state(models) -> tuple[dict, dict]:
    """torch.func.stack_module_state: ({name: the models' parameters stacked on a new first
    dimension, a new leaf that requires grad}, {name: their buffers stacked}), for ``vmap``
    over ``functional_call`` (model ensembling). The models must share names and shapes."""
    models = list(models)
    if not models:
        raise ValueError("stack_module_state: expected at least one model")
    names = [n for n, _ in models[0].named_parameters()]
    buffer_names = [n for n, _ in models[0].named_buffers()]
    for m in models[1:]:
        if [n for n, _ in m.named_parameters()] != names:
            raise ValueError("stack_module_state: the models' parameters have different names")
    params = {n: stack([dict(m.named_parameters())[n] for m in models]).detach()
              .requires_grad_(True) for n in names}  # fmt: skip
    buffers = {n: stack([dict(m.named_buffers())[n] for m in models]).detach()
               for n in buffer_names}  # fmt: skip
    return params, buffers
