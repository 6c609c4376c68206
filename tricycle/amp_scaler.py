"""``tricycle.amp.GradScaler``: torch.amp.GradScaler's methods on tricycle's loss scaler::

    scaler = tricycle.amp.GradScaler("cuda")
    scaler.scale(loss).backward()            # the loss times the scale s
    scaler.unscale_(optimizer)               # optional: gradients divided by s, before clipping
    tricycle.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)                   # skipped when a gradient is inf/NaN
    scaler.update()                          # s backs off after a skip, grows after a run

The arithmetic (the scale and its rules, the inf/NaN test, the multiplier that unscales) is
``tricycle.grad_scaler.GradScaler``'s, held here as ``scaler``; this class adds torch's
protocol of a step: each optimizer is unscaled once per step, ``step`` skips the update after
an inf/NaN, ``update`` adjusts the scale from what every optimizer found. An optimizer is a
``tricycle.optim`` one (its ``param_groups``); tricycle's own optimisers take a scaler in
``tricycle.update.update`` instead.

The unscaled gradients are new arrays (a gradient array may be shared with another tensor),
but a parameter's own gradient memory (``grad_buffer``: a data-parallel bucket's view), which
is written in place. With ``enabled=False`` every method passes through: ``scale`` returns
its argument and ``step`` calls ``optimizer.step()``.
"""

import math
import operator
import warnings
from functools import reduce

import numpy as np

from tricycle import backend, checks
from tricycle.grad_scaler import GradScaler as LossScaler
from tricycle.tensor import Tensor

_UNSCALED, _STEPPED = "unscaled", "stepped"  # an optimizer's stage in a step (absent: ready)
_GROWTH = checks.interval(1, math.inf, "(]")
_BACKOFF = checks.interval(0, 1, "()")


class GradScaler:
    """torch.amp.GradScaler (``scale``, ``unscale_``, ``step``, ``update``, ``get_scale``,
    ``state_dict``...) with torch's arguments; see the module's doc. ``device`` "cuda"
    without a GPU warns and disables the scaler, as torch's."""

    _stacklevel = 2  # a warning names the user's line; a subclass's __init__ adds a frame

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):  # fmt: skip
        if device not in ("cpu", "cuda"):
            checks.fail("GradScaler", "device", '"cpu" or "cuda"', device)
        checks.boolean("GradScaler", "enabled", enabled)
        if enabled and device == "cuda" and not backend.cupy_available():
            warnings.warn(
                "GradScaler: device 'cuda' but no CUDA GPU is available: the scaler is disabled",
                stacklevel=self._stacklevel,
            )
            enabled = False
        self.device, self._enabled = device, enabled
        self.scaler = LossScaler(init_scale, growth_factor, backoff_factor, growth_interval)
        self._stages: dict = {}  # id(optimizer) -> (stage, found_inf): this step's findings

    # ------------------------------------------------------------------ the step
    def scale(self, outputs):
        """``outputs`` (a Tensor, or a list or tuple of them) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self.scaler.loss_grad(outputs)  # the scale, in outputs' dtype
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(output) for output in outputs)
        checks.fail("GradScaler.scale", "outputs", "a Tensor or a list of Tensors", outputs,
                    TypeError)  # fmt: skip

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale and note whether
        any is inf/NaN; once per optimizer and step (before clipping them)."""
        if not self._enabled:
            return
        stage = self._stage("unscale_", optimizer)
        if stage is not None:
            raise RuntimeError(
                "GradScaler.unscale_: unscale_() has already been called on this optimizer "
                "since the last update()" if stage == _UNSCALED else
                "GradScaler.unscale_: unscale_() is being called after step()"
            )  # fmt: skip
        params = [p for group in optimizer.param_groups for p in group["params"]
                  if p.grad is not None]  # fmt: skip
        if not params:
            raise RuntimeError(
                f"GradScaler.unscale_: no parameter of the {type(optimizer).__name__} has a "
                "gradient: call scaler.scale(loss).backward() first"
            )
        for p in params:
            if p.grad.dtype == np.float16:  # as torch's: bfloat16 has float32's range
                raise ValueError(
                    f"GradScaler.unscale_: a parameter of shape {p.shape} has a {p.grad.dtype} "
                    "gradient: keep float32 master weights (autocast casts them for the "
                    "forward) so that unscaled gradients do not underflow"
                )
        grads = [p.grad.array for p in params]
        found_inf, _, multiplier = self.scaler.multiplier(grads)
        for p, grad in zip(params, grads):
            if grad is p.grad_buffer:  # the parameter's own memory: in place
                grad *= multiplier.astype(grad.dtype)
            else:
                p.grad = Tensor(grad * multiplier.astype(grad.dtype), requires_grad=False)
        self._stages[id(optimizer)] = (_UNSCALED, found_inf)

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` (its value), unscaling first unless
        ``unscale_`` did; skipped (None) when a gradient was inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("GradScaler.step: a closure is not supported (as torch's)")
        stage = self._stage("step", optimizer)
        if stage == _STEPPED:
            raise RuntimeError("GradScaler.step: step() has already been called since the "
                               "last update()")  # fmt: skip
        if stage is None:
            self.unscale_(optimizer)
        found_inf = self._stages[id(optimizer)][1]
        result = None if bool(found_inf) else optimizer.step(*args, **kwargs)
        self._stages[id(optimizer)] = (_STEPPED, found_inf)
        return result

    def update(self, new_scale=None) -> None:
        """Adjust the scale from this step's findings (backed off after an inf/NaN, grown
        after ``growth_interval`` good steps), or set it to ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor) and new_scale.size == 1:
                new_scale = float(backend.to_host_array(new_scale.array).reshape(()))
            checks.positive("GradScaler.update", "new_scale", new_scale)
            self.scaler.load_state_dict({**self.scaler.state_dict(), "scale": new_scale})
        elif not self._stages:
            raise RuntimeError(
                "GradScaler.update: no inf/NaN checks were recorded since the last update(): "
                "call scaler.step(optimizer) first"
            )
        else:
            self.scaler.update(reduce(operator.or_, (f for _, f in self._stages.values())))
        self._stages = {}

    def _stage(self, owner: str, optimizer):
        """``optimizer``'s stage in this step (None: ready); a clear error if it is none of
        ``tricycle.optim``'s."""
        if not isinstance(getattr(optimizer, "param_groups", None), list):
            raise TypeError(
                f"GradScaler.{owner}: expected a tricycle.optim optimizer (with param_groups), "
                f"got {type(optimizer).__name__}; tricycle.optimisers' take the scaler in "
                "tricycle.update.update(optimiser, model, scaler=...)"
            )
        return self._stages.get(id(optimizer), (None, None))[0]

    # ------------------------------------------------------------------ settings and state
    def get_scale(self) -> float:
        """The current scale (1.0 when disabled); reading it waits for the device."""
        return self.scaler.scale if self._enabled else 1.0

    def is_enabled(self) -> bool:
        return self._enabled

    def get_growth_factor(self) -> float:
        return self.scaler.growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self.scaler.growth_factor = _GROWTH("GradScaler", "new_factor", new_factor)

    def get_backoff_factor(self) -> float:
        return self.scaler.backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self.scaler.backoff_factor = _BACKOFF("GradScaler", "new_factor", new_factor)

    def get_growth_interval(self) -> int:
        return self.scaler.growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self.scaler.growth_interval = checks.positive_int("GradScaler", "new_interval",
                                                          new_interval)  # fmt: skip

    def state_dict(self) -> dict:
        """torch's keys: scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker (the good steps in a row); {} when disabled."""
        if not self._enabled:
            return {}
        return {
            "scale": self.get_scale(),
            "growth_factor": self.scaler.growth_factor,
            "backoff_factor": self.scaler.backoff_factor,
            "growth_interval": self.scaler.growth_interval,
            "_growth_tracker": self.scaler.state_dict()["good_steps"],
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore ``state_dict()`` (this class's or torch's GradScaler's); a no-op when
        disabled."""
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError(
                "GradScaler.load_state_dict: the state dict is empty, possibly because it was "
                "saved from a disabled GradScaler"
            )
        keys = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
        missing = [key for key in keys if key not in state_dict]
        if missing:
            raise ValueError(f"GradScaler.load_state_dict: the state dict lacks {missing}")
        self.set_growth_factor(state_dict["growth_factor"])
        self.set_backoff_factor(state_dict["backoff_factor"])
        self.set_growth_interval(state_dict["growth_interval"])
        own = self.scaler.state_dict()
        self.scaler.load_state_dict({**own, "scale": float(state_dict["scale"]),
                                     "good_steps": int(state_dict["_growth_tracker"])})  # fmt: skip

    def __repr__(self) -> str:
        return f"GradScaler({self.device!r}, {self.scaler!r}, enabled={self._enabled})"


__all__ = ["GradScaler"]
