"""torch.nn.utils' gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``, called
between ``loss.backward()`` and ``optimizer.step()``::

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
from collections.abc import Iterable

from tricycle import backend, checks
from tricycle.clipping import global_norm
from tricycle.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


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


def clip_grad_norm_(
    parameters: Iterable,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients of ``parameters`` so that their total ``norm_type`` norm is at
    most ``max_norm``; return that norm, before clipping, as a 0-d Tensor (``.item()``).

    Parameters without a gradient are skipped (no gradient at all: a norm of 0). A
    non-finite norm is an error with ``error_if_nonfinite``; otherwise, as torch, the
    gradients are multiplied by what the formula gives (NaN, or 0 for an infinite norm).
    """
    owner = "clip_grad_norm_"
    params = _parameters(owner, parameters)
    max_norm = _number(owner, "max_norm", max_norm, 0.0)
    if not checks.is_real(norm_type) or math.isnan(norm_type):
        checks.fail(owner, "norm_type", "a number (2.0, inf, 1.0, ...)", norm_type, TypeError)
    norm_type = float(norm_type)
    checks.boolean(owner, "error_if_nonfinite", error_if_nonfinite)
    checks.boolean(owner, "foreach", foreach, optional=True)
    with_grad = [p for p in params if p.grad is not None]
    if not with_grad:
        return Tensor(0.0, requires_grad=False)
    grads = [p.grad.array for p in with_grad]
    xp = backend.array_module(grads[0])
    norm = total_norm(grads, norm_type)  # 0-d, on the gradients' device
    if error_if_nonfinite and not bool(xp.isfinite(norm)):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            f"{float(norm)}, so it cannot be clipped (set error_if_nonfinite=False to scale "
            "by it anyway)"
        )
    clip = xp.minimum(1.0, max_norm / (norm + 1e-6))  # torch's clip_coef_clamped
    for p, g in zip(with_grad, grads):
        p.grad = Tensor(g * clip.astype(g.dtype), requires_grad=False)
    return Tensor(xp.asarray(norm), requires_grad=False)


def clip_grad_value_(parameters: Iterable, clip_value: float, foreach: bool | None = None):
    """Clip every gradient of ``parameters`` elementwise to [-clip_value, clip_value]."""
    owner = "clip_grad_value_"
    params = _parameters(owner, parameters)
    clip_value = _number(owner, "clip_value", clip_value, 0.0)
    checks.boolean(owner, "foreach", foreach, optional=True)
    for p in params:
        if p.grad is not None:
            p.grad = Tensor(p.xp.clip(p.grad.array, -clip_value, clip_value), requires_grad=False)
