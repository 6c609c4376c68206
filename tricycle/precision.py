"""Precision policies: float32, TF32, and float16/bfloat16 mixed precision.

A ``Precision`` is an object the training code holds and uses explicitly; no op reads a global
flag, so the dtype a forward runs in is decided where the model is called. It answers three
questions:

- which dtype the forward computes in (``compute_dtype``; parameters stay float32 "master
  weights", cast on the way in with the differentiable ``cast``, so their gradients come back
  in float32);
- whether float32 matrix products may use TF32 tensor cores (entered with ``with policy:``);
- whether the loss is scaled (``scaler``, a ``GradScaler``: float16 needs it, bfloat16 has
  float32's exponent range and does not by default).

Typical loop::

    policy = Precision("fp16")
    with policy:                                    # TF32 for leftover float32 matmuls, if asked
        for step in range(n_steps):
            optimiser.step()
            loss = loss_fn(y, policy.forward(model, x))  # in the compute dtype
            policy.backward(loss)                   # seeds backward with the loss scale
            norm, skipped = policy.step(optimiser, model, max_norm=1.0)  # unscale, clip, update

TF32 is a setting of the GPU's cuBLAS (its compute type and math mode), which
``tricycle.backends.cuda.settings`` holds and registers as "tf32": entering a policy with
``tf32`` switches it on there and leaving restores it; without a GPU nothing is set.
"""

import math
from typing import Any, NamedTuple

import numpy as np

from tricycle import backend, capture, checks, dispatch
from tricycle.casting import (  # noqa: F401 (re-exported: they were first defined here)
    bfloat16,
    cast,
    cast_all,
    cast_arrays,
    cast_parameters,
    is_floating,
    widen,
)
from tricycle.clipping import clip_factor, global_norm, grad_norm
from tricycle.module import named_parameters
from tricycle.tensor import Tensor, is_float  # noqa: F401 (is_float as before)

_MODES = {
    "fp32": "fp32",
    "float32": "fp32",
    "tf32": "tf32",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "bf16": "bf16",
    "bfloat16": "bf16",
}


# ====================================================================== TF32 switch
def _no_tf32(state=None):
    """The reference of the "tf32" and "tf32_enabled" settings: without a GPU there is no
    TF32 to switch (returns None, no state to restore) and none enabled (falsy)."""
    return None


def _setting(op: str):
    """The GPU's setting ``op`` if a GPU is usable (never importing cupy, nor loading any
    backend, on a CPU-only machine), else the reference that does nothing."""
    return dispatch.setting(op, "cuda", _no_tf32) if backend.cupy_available() else _no_tf32


def switch_tf32(state):
    """Set float32 products' TF32 state (``True``: TF32 on; else a state an earlier call
    returned, to restore it); returns the state before, or None without a GPU."""
    return _setting("tf32")(state)


def tf32_enabled() -> bool:
    """Whether the GPU's float32 2-D products currently use TF32 (False without a GPU)."""
    return bool(_setting("tf32_enabled")())


# ====================================================================== loss scaling
class GradScaler:
    """Dynamic loss scaling for float16 training, with torch.cuda.amp.GradScaler's rules.

    The loss is multiplied by ``scale`` before backward so that small gradients survive in
    float16; gradients are divided by it before the update. When any gradient is inf/NaN the
    step is skipped and the scale multiplied by ``backoff_factor``; after ``growth_interval``
    good steps in a row it is multiplied by ``growth_factor``.

    The state (scale, good-step counter, skipped-step counter) lives in 0-d arrays on the
    gradients' device and is updated there with ``xp.where``: deciding costs no host
    synchronisation. Reading ``scale`` or ``skipped_steps`` (for logging) does synchronise.
    """

    @checks.arguments(
        init_scale=checks.positive,
        growth_factor=checks.interval(1, math.inf, "(]"),
        backoff_factor=checks.interval(0, 1, "()"),
        growth_interval=checks.positive_int,
    )
    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
    ):
        self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
        self.growth_interval = growth_interval
        self._init_scale = init_scale
        self._scale = self._good_steps = self._skipped = None  # made on first use, on its device
        self.steps = 0  # update() calls: host-side, no sync

    # ------------------------------------------------------------------ state
    def _state(self, like):
        """Create (or move) the state arrays onto ``like``'s device."""
        xp = backend.array_module(like)
        if self._scale is None:
            self._scale = xp.asarray(self._init_scale, dtype=np.float32)
            self._good_steps = xp.zeros((), dtype=np.int64)
            self._skipped = xp.zeros((), dtype=np.int64)
        elif backend.array_module(self._scale) is not xp:
            if xp is np:
                move = backend.to_host_array
            else:
                device = like.device.id
                move = lambda a: backend.to_device_array(backend.to_host_array(a), device)  # noqa: E731
            self._scale, self._good_steps, self._skipped = (
                move(a) for a in (self._scale, self._good_steps, self._skipped)
            )
        return xp

    @property
    def scale(self) -> float:
        """The current loss scale (synchronises with the device)."""
        return float(self._init_scale if self._scale is None else self._scale)

    @property
    def skipped_steps(self) -> int:
        """How many steps were skipped for inf/NaN gradients (synchronises with the device)."""
        return 0 if self._skipped is None else int(self._skipped)

    def scale_array(self, like):
        """The scale as a 0-d float32 array on ``like``'s device."""
        self._state(like)
        return self._scale

    # ------------------------------------------------------------------ the three steps
    def loss_grad(self, loss: Tensor):
        """The gradient to seed ``loss.backward`` with: the scale, in the loss's shape."""
        xp = self._state(loss.array)
        seed = self._scale.astype(loss.dtype) if is_floating(loss.dtype) else self._scale
        return xp.broadcast_to(seed, loss.shape).copy() if loss.shape else seed

    def unscale(self, grads, max_norm: float = 0.0):
        """Divide gradient arrays by the scale in place (and clip them to ``max_norm`` if it is
        positive). Returns (found_inf, norm): a 0-d bool device array, True when some gradient
        is inf/NaN, and the global norm of the unscaled gradients (before clipping).

        Uses the fused kernels when they apply (two launches), xp otherwise.
        """
        grads = list(grads)
        if not grads:
            return None, None
        xp = self._state(grads[0])
        norm_and_multiplier = dispatch.choose("clip_multiplier", clip_multiplier, *grads)
        norm, multiplier = norm_and_multiplier(xp, grads, max_norm, self._scale)
        found_inf = ~xp.isfinite(multiplier)
        for g in grads:
            g *= multiplier.astype(g.dtype)  # NaN on overflow: the step is skipped anyway
        return found_inf, norm

    def update(self, found_inf) -> None:
        """Adjust the scale after a step, on the device (torch's ``_amp_update_scale_``)."""
        if found_inf is None:
            return
        xp = self._state(found_inf)
        grown = self._good_steps + 1
        grow = (grown >= self.growth_interval) & ~found_inf
        # written in place: a captured step (tricycle.apps.cuda_graph) reads them where they are
        self._scale[...] = xp.where(
            found_inf,
            self._scale * np.float32(self.backoff_factor),
            xp.where(grow, self._scale * np.float32(self.growth_factor), self._scale),
        )
        self._good_steps[...] = xp.where(found_inf | grow, 0, grown)
        self._skipped += found_inf
        capture.every_step(self._count_step)

    def _count_step(self) -> None:
        self.steps += 1

    def state_dict(self) -> dict:
        return {
            "scale": self.scale,
            "good_steps": 0 if self._good_steps is None else int(self._good_steps),
            "skipped_steps": self.skipped_steps,
            "steps": self.steps,
        }

    def load_state_dict(self, state: dict) -> None:
        self._init_scale = float(state["scale"])
        self._scale = None
        self._state(np.zeros(()))
        self._good_steps = np.asarray(int(state.get("good_steps", 0)), dtype=np.int64)
        self._skipped = np.asarray(int(state.get("skipped_steps", 0)), dtype=np.int64)
        self.steps = int(state.get("steps", 0))

    def __repr__(self) -> str:
        return (
            f"GradScaler(init_scale={self._init_scale}, growth_factor={self.growth_factor}, "
            f"backoff_factor={self.backoff_factor}, growth_interval={self.growth_interval})"
        )


def clip_multiplier(xp, grads, max_norm: float = 0.0, loss_scale=None):
    """The gradients' global norm, unscaled, and the multiplier that unscales and clips them:
    norm = ||grads|| / s, multiplier = min(1, max_norm / (norm + 1e-6)) / s (no clipping when
    ``max_norm`` <= 0), or NaN when the norm is not finite (the update is then skipped).
    ``loss_scale`` s: None (1) or a number or 0-d array. Both results are 0-d arrays."""
    inv_scale = 1.0 if loss_scale is None else 1.0 / loss_scale
    norm = global_norm(grads) * inv_scale
    clip = xp.minimum(1.0, max_norm / (norm + 1e-6)) if max_norm > 0 else 1.0
    return norm, xp.where(xp.isfinite(norm), inv_scale * clip, np.nan)


# ====================================================================== the policy
class StepResult(NamedTuple):
    """What ``Precision.step`` computed.

    ``norm``: the global L2 norm of the (unscaled) gradients before clipping, or None when
    neither clipping nor loss scaling needed it. ``skipped``: whether the update was skipped
    because a gradient was inf/NaN. On the fused GPU path both are 0-d device arrays, so
    reading them (``float``, ``bool``) is the caller's choice of when to synchronise;
    elsewhere they are a Python float and bool.
    """

    norm: Any
    skipped: Any


class Precision:
    """A precision policy: ``Precision("fp32" | "tf32" | "fp16" | "bf16")``.

    Args:
        mode: "fp32" (default; everything float32), "tf32" (float32, with TF32 tensor-core
            matrix products while entered), "fp16" or "bf16" (forward in that dtype from
            float32 master weights).
        loss_scaling: use a ``GradScaler``; default True for fp16, False otherwise.
        tf32: allow TF32 for float32 products while entered; default True for "tf32" only.
        **scaler_options: passed to ``GradScaler`` (init_scale, growth_interval, ...).
    """

    @checks.arguments(
        mode=checks.text,
        loss_scaling=checks.optional(checks.boolean),
        tf32=checks.optional(checks.boolean),
    )
    def __init__(self, mode: str = "fp32", loss_scaling: bool | None = None, tf32=None,
                 **scaler_options):  # fmt: skip
        if mode.lower() not in _MODES:
            checks.fail("Precision", "mode", f"one of {', '.join(map(repr, _MODES))}", mode)
        self.mode = _MODES[mode.lower()]
        self.param_dtype = np.dtype(np.float32)
        if self.mode == "bf16":
            self.compute_dtype = bfloat16()
        else:  # (np.dtype objects are falsy: no `or` tricks here)
            self.compute_dtype = np.dtype(np.float16 if self.mode == "fp16" else np.float32)
        self.tf32 = self.mode == "tf32" if tf32 is None else bool(tf32)
        if loss_scaling is None:
            loss_scaling = self.mode == "fp16"
        self.scaler = GradScaler(**scaler_options) if loss_scaling else None
        self._saved: list = []

    @property
    def mixed(self) -> bool:
        """True when the forward runs in a 16-bit dtype."""
        return self.compute_dtype != self.param_dtype

    def forward(self, model, *inputs, **kwargs):
        """``model(*inputs, **kwargs)`` under this policy: a mixed one casts every parameter and
        floating Tensor of ``inputs`` to the compute dtype on the way in (``cast_parameters``,
        ``cast``) and hands the output to ``cast_output``; the others call the model as it is."""
        if not self.mixed:
            return model(*inputs, **kwargs)
        inputs = [self.cast(x) if isinstance(x, Tensor) else x for x in inputs]
        with cast_parameters(model, self.compute_dtype):
            out = model(*inputs, **kwargs)
        return self.cast_output(out)

    # ------------------------------------------------------------------ context
    def __enter__(self) -> "Precision":
        self._saved.append(switch_tf32(True) if self.tf32 else None)
        return self

    def __exit__(self, *exc) -> None:
        state = self._saved.pop()
        if state is not None:
            switch_tf32(state)

    # ------------------------------------------------------------------ forward
    def cast(self, x):
        """``x`` (Tensor or array) in the compute dtype; differentiable; ids pass through."""
        return cast(x, self.compute_dtype)

    def cast_all(self, tensors: list) -> list:
        """Many parameters in the compute dtype at once (``cast_all``); differentiable."""
        return cast_all(tensors, self.compute_dtype)

    def cast_output(self, x):
        """``x`` (logits on their way to the loss) where float32 arithmetic will read it.

        That is ``x`` back in float32, except where tricycle's CUDA kernels take it as it is
        (a 16-bit cupy array with the kernels on): the cross-entropy and softmax kernels read
        16-bit inputs and compute in float32, so the loss and the (16-bit) gradient are the
        same numbers as through a float32 copy, without the copy and its float32 gradient
        (at GPT-2's sizes, gigabytes of memory traffic a step).
        """
        array = x.array if isinstance(x, Tensor) else x
        return dispatch.choose("cast_output", cast, array)(x, self.param_dtype)

    # ------------------------------------------------------------------ backward and update
    def backward(self, loss: Tensor) -> None:
        """``loss.backward()``, seeded with the loss scale when scaling."""
        if self.scaler is None:
            loss.backward()
        else:
            loss.backward(self.scaler.loss_grad(loss))

    def step(self, optimiser, parameters, max_norm: float = 0.0) -> "StepResult":
        """Unscale (if scaling), clip to ``max_norm`` (if positive), and update, skipping the
        update on inf/NaN gradients; gradients are zeroed either way. Returns a
        ``StepResult``: the gradients' global norm and whether the update was skipped.

        Clipping and unscaling are folded into the update as one gradient multiplier, so no
        pass writes to the gradients. With Adam/AdamW on float32 cupy parameters this runs
        as fused kernels with no host synchronisation (the norm and the skip decision stay
        on the device); otherwise the norm is read back once per step.
        """
        named = [(n, p) for n, p in named_parameters(parameters) if p.grad is not None]
        if not named:
            return StepResult(None, False)
        grads = [p.grad.array for _, p in named]
        if self.scaler is None and max_norm <= 0:
            optimiser.update(named)
            _zero_grads(named)
            return StepResult(None, False)
        scale = None if self.scaler is None else self.scaler.scale_array(grads[0])
        device_norm = None  # the unscaled norm, where a kernel computed it on the device
        on_device = dispatch.kernel_for("clip_multiplier", *grads)
        if on_device is not None:
            xp = backend.array_module(grads[0])
            device_norm, multiplier = on_device(xp, grads, max_norm, scale)
            if optimiser.fused_update(named, grad_multiplier=multiplier):
                skipped = ~xp.isfinite(multiplier)
                if self.scaler is not None:
                    self.scaler.update(skipped)
                _zero_grads(named)
                return StepResult(device_norm, skipped)
        inv_scale = 1.0 if scale is None else 1.0 / float(backend.to_host_array(scale))
        # the one host synchronisation of this path; an optimiser without a fused update
        # (SGD, Adam with L2 decay) reads the norm the kernels already computed
        if device_norm is None:
            norm = grad_norm(named) * inv_scale
        else:
            norm = float(backend.to_host_array(device_norm))
        skipped = not math.isfinite(norm)
        if not skipped:
            clip = clip_factor(norm, max_norm) if max_norm > 0 else None
            multiplier = inv_scale * (1.0 if clip is None else clip)
            optimiser.update(named, grad_multiplier=None if multiplier == 1.0 else multiplier)
        if self.scaler is not None:
            self.scaler.update(backend.array_module(grads[0]).asarray(skipped))
        _zero_grads(named)
        return StepResult(norm, skipped)

    def __repr__(self) -> str:
        return f"Precision({self.mode!r}, tf32={self.tf32}, loss_scaling={self.scaler is not None})"


def _zero_grads(named) -> None:
    for _, p in named:
        p.grad = None


def describe(policy: Precision | None = None) -> str:
    """One line for logs: mode, compute dtype, TF32 state and loss scale."""
    policy = policy or Precision()
    scale = "off" if policy.scaler is None else f"{policy.scaler.scale:g}"
    return (
        f"precision={policy.mode} compute={policy.compute_dtype.name} "
        f"tf32_now={tf32_enabled()} loss_scale={scale}"
    )


__all__ = ["GradScaler", "Precision", "StepResult", "bfloat16", "cast", "describe", "is_floating"]
