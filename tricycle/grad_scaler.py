"""Dynamic loss scaling for float16 training: ``GradScaler``, with torch.cuda.amp's rules.

float16's smallest normal number is about 6e-5, and many gradients of a language model are
smaller: multiplied by the scale s before backward they survive, and the update divides them
by s again (``tricycle.update.update`` folds that division into its one gradient multiplier).
A gradient that overflows to inf/NaN skips the step and halves s; a long run of good steps
doubles it, so s stays near the largest value that does not overflow.

A precision policy holds one (``tricycle.precision.Precision("fp16").scaler``); it can also be
made and passed to the update directly, as a PyTorch user holds a ``GradScaler``.
"""

import math

import numpy as np

from tricycle import backend, checks, dispatch
from tricycle.casting import is_floating
from tricycle.clipping import clip_multiplier
from tricycle.tensor import Tensor


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
        found_inf, norm, multiplier = self.multiplier(grads, max_norm)
        for g in grads:
            g *= multiplier.astype(g.dtype)  # NaN on overflow: the step is skipped anyway
        return found_inf, norm

    def multiplier(self, grads: list, max_norm: float = 0.0):
        """(found_inf, norm, multiplier) of gradient arrays (at least one): what ``unscale``
        multiplies them by (NaN when some gradient is inf/NaN), as 0-d device arrays, for a
        caller that writes the unscaled gradients elsewhere (``tricycle.amp.GradScaler``)."""
        xp = self._state(grads[0])
        norm_and_multiplier = dispatch.choose("clip_multiplier", clip_multiplier, *grads)
        norm, multiplier = norm_and_multiplier(xp, grads, max_norm, self._scale)
        return ~xp.isfinite(multiplier), norm, multiplier

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
        self.count_update()

    def count_update(self) -> None:
        """The host's count of ``update`` calls: the one part of an update a CUDA graph's
        replay does not redo, so a captured step (``tricycle.apps.cuda_graph``) calls this."""
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


__all__ = ["GradScaler"]
