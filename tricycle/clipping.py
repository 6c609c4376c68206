"""The global norm of gradients, and clipping them to a largest norm (as torch's
``clip_grad_norm_``).

``global_norm`` is the reference formula (one accumulation rule on every device); a backend
may register a faster "global_norm". The optimisers (``tricycle.optimisers``, which
re-exports these) take a clipping factor in their update; ``clip_multiplier`` folds that
factor and a loss scale's inverse into the one multiplier ``tricycle.update.update`` hands
them.
"""

from collections.abc import Iterable

import numpy as np

from tricycle import backend, checks, dispatch
from tricycle.module import named_parameters
from tricycle.tensor import Tensor


def grad_norm(parameters: Iterable, sync: bool = True):
    """The global L2 norm of the gradients of ``parameters`` (a Layer, Tensors, or (name,
    Tensor) pairs; those without a grad are skipped): ``global_norm`` of their arrays.

    Returns a Python float, or with ``sync=False`` a 0-d array on the gradients' device,
    without waiting for the device.
    """
    grads = [p.grad.array for _, p in named_parameters(parameters) if p.grad is not None]
    norm = global_norm(grads)
    return float(backend.to_host_array(norm)) if sync else norm  # a marked wait (waits.py)


def global_norm(arrays):
    """sqrt of the sum of every element squared, over arrays on one device, as a 0-d array
    there (0.0 for no arrays).

    One accumulation rule everywhere: each array's sum of squares is accumulated in float32
    (float64 when any array is float64) and the sums are added in the same precision; BLAS
    does it on the CPU, and on a GPU the kernel's block sums do it for float32 arrays
    (the kernel registered as "global_norm").
    """
    if not arrays:
        return np.zeros((), dtype=np.float32)
    xp = backend.array_module(arrays[0])
    return dispatch.choose("global_norm", _global_norm, *arrays)(xp, arrays)


def _global_norm(xp, arrays):
    dtype = np.float64 if any(a.dtype == np.float64 for a in arrays) else np.float32
    squares = xp.zeros((), dtype=dtype)
    for a in arrays:
        flat = a.reshape(-1).astype(dtype, copy=False)
        squares = squares + xp.vdot(flat, flat)
    return xp.sqrt(squares)


def clip_multiplier(xp, grads, max_norm: float = 0.0, loss_scale=None):
    """The gradients' global norm, unscaled, and the multiplier that unscales and clips them:
    norm = ||grads|| / s, multiplier = min(1, max_norm / (norm + 1e-6)) / s (no clipping when
    ``max_norm`` <= 0), or NaN when the norm is not finite (the update is then skipped).
    ``loss_scale`` s: None (1) or a number or 0-d array. Both results are 0-d arrays.

    The reference of the "clip_multiplier" kernel (the CUDA backend's: two launches, no host
    synchronisation)."""
    inv_scale = 1.0 if loss_scale is None else 1.0 / loss_scale
    norm = global_norm(grads) * inv_scale
    clip = xp.minimum(1.0, max_norm / (norm + 1e-6)) if max_norm > 0 else 1.0
    return norm, xp.where(xp.isfinite(norm), inv_scale * clip, np.nan)


def clip_factor(norm: float, max_norm: float) -> float | None:
    """What clipping to ``max_norm`` multiplies gradients of global norm ``norm`` by, or None
    when they need no clipping: ``max_norm / (norm + 1e-6)`` when ``norm > max_norm``, as
    torch's clip_grad_norm_."""
    return max_norm / (norm + 1e-6) if norm > max_norm else None


@checks.arguments(max_norm=checks.non_negative)
def clip_grad_norm(parameters: Iterable, max_norm: float) -> float:
    """Scale all gradients so their global L2 norm is at most ``max_norm``; return the norm
    before clipping.

    ``parameters``: a Layer, Tensors, or (name, Tensor) pairs; those without a grad are
    skipped. Gradient arrays are never written to (another tensor may share them): a clipped
    parameter gets a new ``.grad`` Tensor. To clip inside the update instead, pass
    ``clip_factor(grad_norm(params), max_norm)`` to ``optimiser.update``.
    """
    named = named_parameters(parameters)
    norm = grad_norm(named)
    scale = clip_factor(norm, max_norm)
    if scale is not None:
        for _, p in named:
            if p.grad is not None:
                grad = p.grad.array * scale
                p.grad = Tensor(grad, requires_grad=False)
    return norm
