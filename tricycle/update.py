"""One optimiser update from a step's gradients: unscale, clip, skip on overflow, update.

What a PyTorch loop spells as four calls, ``scaler.unscale_(opt)``, ``clip_grad_norm_``,
``scaler.step(opt)`` and ``scaler.update()``, with ``opt.zero_grad()`` after them::

    optimiser.step()                                   # start of the step: step_count
    loss = loss_fn(y, policy.forward(model, x))
    policy.backward(loss)                              # seeded with the loss scale, if any
    norm, skipped = update(optimiser, model, max_norm=1.0, scaler=policy.scaler)

The gradients g of a loss scaled by s are s times too large; clipping to ``max_norm`` c
multiplies them by min(1, c / ||g / s||). Both are folded into one multiplier,
m = min(1, c / (||g / s|| + 1e-6)) / s (``clipping.clip_multiplier``), that the optimiser
applies inside its update, so no pass writes to the gradients. A norm that is inf or NaN
(a float16 overflow) makes m NaN: the update is skipped and the scaler backs off.

With Adam/AdamW on float32 GPU parameters the norm, the multiplier and the update are fused
kernels (the "clip_multiplier" kernel and ``fused_update``): the norm and the skip decision
stay on the device, and the host never waits. Elsewhere the norm is read back once per step.
"""

import math
from typing import Any, NamedTuple

from tricycle import backend, checks, dispatch
from tricycle.clipping import clip_factor, grad_norm
from tricycle.module import named_parameters


class StepResult(NamedTuple):
    """What ``update`` computed.

    ``norm``: the global L2 norm of the (unscaled) gradients before clipping, or None when
    neither clipping nor loss scaling needed it. ``skipped``: whether the update was skipped
    because a gradient was inf/NaN. On the fused GPU path both are 0-d device arrays, so
    reading them (``float``, ``bool``) is the caller's choice of when to synchronise;
    elsewhere they are a Python float and bool.
    """

    norm: Any
    skipped: Any


@checks.arguments(max_norm=checks.non_negative)
def update(optimiser, parameters, max_norm: float = 0.0, scaler=None) -> StepResult:
    """Update ``parameters`` (a Layer, Tensors, or (name, Tensor) pairs) from their gradients
    with ``optimiser``: unscaled by ``scaler`` (a ``GradScaler``, or None), clipped to global
    norm ``max_norm`` (if positive), skipped when a gradient is inf/NaN; the scaler then
    adjusts its scale, and the gradients are zeroed either way. Returns a ``StepResult``: the
    gradients' global norm (unscaled, before clipping) and whether the update was skipped.
    """
    named = [(n, p) for n, p in named_parameters(parameters) if p.grad is not None]
    if not named:
        return StepResult(None, False)
    grads = [p.grad.array for _, p in named]
    if scaler is None and max_norm <= 0:
        optimiser.update(named)
        _zero_grads(named)
        return StepResult(None, False)
    scale = None if scaler is None else scaler.scale_array(grads[0])
    device_norm = None  # the unscaled norm, where a kernel computed it on the device
    on_device = dispatch.kernel_for("clip_multiplier", *grads)
    if on_device is not None:
        xp = backend.array_module(grads[0])
        device_norm, multiplier = on_device(xp, grads, max_norm, scale)
        if optimiser.fused_update(named, grad_multiplier=multiplier):
            skipped = ~xp.isfinite(multiplier)
            if scaler is not None:
                scaler.update(skipped)
            _zero_grads(named)
            return StepResult(device_norm, skipped)
    norm, multiplier = host_multiplier(named, max_norm, scale, device_norm)
    skipped = multiplier is None
    if not skipped:
        optimiser.update(named, grad_multiplier=None if multiplier == 1.0 else multiplier)
    if scaler is not None:
        scaler.update(backend.array_module(grads[0]).asarray(skipped))
    _zero_grads(named)
    return StepResult(norm, skipped)


def host_multiplier(named, max_norm: float, scale=None, device_norm=None):
    """(norm, multiplier) on the host: the gradients' global norm unscaled by ``scale`` (the
    loss scale, or None), and the number m that unscales and clips them to ``max_norm`` (if
    positive): None when the norm is inf/NaN, and the update is skipped. ``device_norm``: the
    unscaled norm where a kernel computed it already. Its read is the one host
    synchronisation of the path; an optimiser without a fused update (SGD, Adam with L2
    decay) reads the norm the kernels computed."""
    inv_scale = 1.0 if scale is None else 1.0 / float(backend.to_host_array(scale))
    if device_norm is None:
        norm = grad_norm(named) * inv_scale
    else:
        norm = float(backend.to_host_array(device_norm))
    if not math.isfinite(norm):
        return norm, None
    clip = clip_factor(norm, max_norm) if max_norm > 0 else None
    return norm, inv_scale * (1.0 if clip is None else clip)


def _zero_grads(named) -> None:
    for _, p in named:
        p.grad = None


__all__ = ["StepResult", "host_multiplier", "update"]
