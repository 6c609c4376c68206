"""torch.nn.utils' gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_`` (and
``clip_grad_norm_``'s halves, ``get_total_norm`` and ``clip_grads_with_norm_``, and its old
name ``clip_grad_norm``, deprecated as in torch), called between ``loss.backward()`` and
``optimizer.step()``::

    loss.backward()
    norm = clip_grad_norm_(model.parameters(), max_norm=1.0)   # a 0-d Tensor: norm.item()
    optimizer.step()

``clip_grad_norm_`` multiplies every gradient by min(1, max_norm / (norm + 1e-6)), where
norm is the norm of all the gradients together (as if concatenated), as torch's. The L2
norm is ``tricycle.clipping.global_norm`` (and its GPU kernel); other orders are the order-p
norm of the gradients' own norms, as torch computes them. Nothing waits for the GPU unless
``error_if_nonfinite`` asks. Gradient arrays are never written to (another tensor may share
one): a clipped parameter gets a new ``.grad``. The ``foreach`` flag is accepted and
ignored. (To fold clipping into tricycle's own update instead, see ``tricycle.update``.)
"""

import math
import warnings
from collections.abc import Iterable

from tricycle import backend, checks
from tricycle.clipping import global_norm
from tricycle.tensor import Tensor

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
]


def _parameters(owner: str, parameters) -> list[Tensor]:
    """A Tensor, an iterable of Tensors (a generator: read once) or a Layer, as a list."""
    if isinstance(parameters, Tensor):
        return [parameters]
    if hasattr(parameters, "named_parameters"):
        return list(parameters.parameters())
    try:
        params = list(parameters)
    except TypeError:
        raise TypeError(
            f"{owner}: parameters must be a Tensor or an iterable of Tensors, got a "
            f"{type(parameters).__name__}"
        ) from None
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{owner}: parameters[{i}] is a {type(p).__name__}, not a Tensor")
    return params


def _number(owner: str, name: str, value, low: float):
    """A real number >= ``low``, infinity allowed (max_norm=inf measures without clipping)."""
    if not checks.is_real(value) or math.isnan(value) or value < low:
        kind = ValueError if checks.is_real(value) else TypeError
        checks.fail(owner, name, f"a number >= {low:g} (inf allowed)", value, kind)
    return float(value)


def total_norm(grads: list, norm_type: float):
    """The order-``norm_type`` norm of all ``grads`` together, as a 0-d array on their
    device: the global L2 norm, or the norm of the gradients' own norms (torch's rule)."""
    if norm_type == 2.0:
        return global_norm(grads)
    xp = backend.array_module(grads[0])
    norms = xp.stack([xp.linalg.norm(g.reshape(-1), ord=norm_type) for g in grads])
    return xp.asarray(xp.linalg.norm(norms, ord=norm_type))


def _norm_type(owner: str, norm_type) -> float:
    if not checks.is_real(norm_type) or math.isnan(norm_type):
        checks.fail(owner, "norm_type", "a number (2.0, inf, 1.0, ...)", norm_type, TypeError)
    return float(norm_type)


def get_total_norm(
    tensors: Iterable,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type`` norm of ``tensors`` (usually gradients: ``[p.grad for p in ...]``)
    taken together, as if concatenated into one vector, as a 0-d Tensor; 0 for none.
    A non-finite norm is an error with ``error_if_nonfinite``."""
    return _total_norm("get_total_norm", tensors, norm_type, error_if_nonfinite, foreach)


def _total_norm(owner: str, tensors, norm_type, error_if_nonfinite, foreach) -> Tensor:
    """``get_total_norm`` for ``owner``, whose name its errors carry."""
    arrays = [t.array for t in _parameters(owner, tensors)]
    norm_type = _norm_type(owner, norm_type)
    checks.boolean(owner, "error_if_nonfinite", error_if_nonfinite)
    checks.boolean(owner, "foreach", foreach, optional=True)
    if not arrays:
        return Tensor(0.0, requires_grad=False)
    norm = total_norm(arrays, norm_type)  # 0-d, on the tensors' device
    if error_if_nonfinite and not bool(backend.array_module(norm).isfinite(norm)):
        raise RuntimeError(
            f"{owner}: the total norm of order {norm_type} of the gradients is "
            f"{float(norm)}, so it cannot be clipped (set error_if_nonfinite=False to scale "
            "by it anyway)"
        )
    return Tensor(norm, requires_grad=False)


def clip_grads_with_norm_(
    parameters: Iterable, max_norm: float, total_norm, foreach: bool | None = None
) -> None:
    """Multiply every gradient of ``parameters`` by min(1, max_norm / (total_norm + 1e-6)):
    the second half of ``clip_grad_norm_``, with the norm given (``get_total_norm``'s, or
    one gathered from several devices or processes)."""
    owner = "clip_grads_with_norm_"
    params = _parameters(owner, parameters)
    max_norm = _number(owner, "max_norm", max_norm, 0.0)
    checks.boolean(owner, "foreach", foreach, optional=True)
    with_grad = [p for p in params if p.grad is not None]
    if not with_grad:
        return
    xp = with_grad[0].grad.xp
    if isinstance(total_norm, Tensor):
        total_norm = total_norm.array
    elif not checks.is_real(total_norm):
        checks.fail(owner, "total_norm", "a 0-d Tensor or a number", total_norm, TypeError)
    clip = xp.minimum(1.0, max_norm / (xp.asarray(total_norm) + 1e-6))  # clip_coef_clamped
    for p in with_grad:
        g = p.grad.array
        p.grad = Tensor(g * clip.astype(g.dtype), requires_grad=False)


def clip_grad_norm_(
    parameters: Iterable,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of ``parameters`` so that their total ``norm_type`` norm is at
    most ``max_norm``; return that norm, before clipping, as a 0-d Tensor (``.item()``):
    ``get_total_norm`` of the gradients, then ``clip_grads_with_norm_``.

    Parameters without a gradient are skipped (no gradient at all: a norm of 0). A
    non-finite norm is an error with ``error_if_nonfinite``; otherwise, as torch, the
    gradients are multiplied by what the formula gives (NaN, or 0 for an infinite norm).
    """
    owner = "clip_grad_norm_"
    params = _parameters(owner, parameters)
    max_norm = _number(owner, "max_norm", max_norm, 0.0)
    grads = [p.grad for p in params if p.grad is not None]
    norm = _total_norm(owner, grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, norm)
    return norm


def clip_grad_norm(
    parameters: Iterable,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """torch's deprecated name of ``clip_grad_norm_``: the same, with torch's FutureWarning."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable, clip_value: float, foreach: bool | None = None):
    """Clip every gradient of ``parameters`` elementwise to [-clip_value, clip_value]."""
    owner = "clip_grad_value_"
    params = _parameters(owner, parameters)
    clip_value = _number(owner, "clip_value", clip_value, 0.0)
    checks.boolean(owner, "foreach", foreach, optional=True)
    for p in params:
        if p.grad is not None:
            p.grad = Tensor(p.xp.clip(p.grad.array, -clip_value, clip_value), requires_grad=False)
