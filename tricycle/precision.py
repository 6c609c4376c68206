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

The update is not the policy's: unscaling, clipping and the optimiser's update are
``tricycle.update.update``, which takes the policy's scaler. Typical loop::

    policy = Precision("fp16")
    with policy:                                    # TF32 for leftover float32 matmuls, if asked
        for step in range(n_steps):
            optimiser.step()
            loss = loss_fn(y, policy.forward(model, x))  # in the compute dtype
            policy.backward(loss)                   # seeds backward with the loss scale
            norm, skipped = update(optimiser, model, max_norm=1.0, scaler=policy.scaler)

TF32 is a setting of the GPU's cuBLAS (its compute type and math mode), which
``tricycle.backends.cuda.settings`` holds and registers as "tf32": entering a policy with
``tf32`` switches it on there and leaving restores it; without a GPU nothing is set.
"""

import numpy as np

from tricycle import backend, checks, dispatch
from tricycle.casting import (  # noqa: F401 (re-exported: they were first defined here)
    bfloat16,
    cast,
    cast_all,
    cast_arrays,
    cast_parameters,
    is_floating,
    widen,
)
from tricycle.clipping import clip_multiplier  # noqa: F401 (re-exported: first defined here)
from tricycle.grad_scaler import GradScaler
from tricycle.tensor import Tensor, is_float  # noqa: F401 (is_float as before)
from tricycle.update import StepResult, update

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
    """Set float32 products' TF32 state (``True``: TF32 on; ``False``: off; else a state an
    earlier call returned, to restore it); returns the state before, or None without a GPU."""
    return _setting("tf32")(state)


def tf32_enabled() -> bool:
    """Whether the GPU's float32 2-D products currently use TF32 (False without a GPU)."""
    return bool(_setting("tf32_enabled")())


# ====================================================================== torch's switch
_MATMUL_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """torch.set_float32_matmul_precision, a PyTorch script's switch for the whole run:
    "high" and "medium" let the GPU's float32 matrix products use TF32 (``switch_tf32``, as
    ``tricycle.backends.cuda.matmul.allow_tf32 = True``, the same switch), "highest" turns
    TF32 off. The CPU's float32 products stay float32 whatever is set (numpy's BLAS has
    nothing less precise to allow)."""
    if precision not in _MATMUL_PRECISIONS:
        expected = "'highest', 'high' or 'medium' (torch's)"
        checks.fail("set_float32_matmul_precision", "precision", expected, precision)
    switch_tf32(precision != "highest")  # nothing without a GPU
    backend.float32_matmul["precision"] = precision


def get_float32_matmul_precision() -> str:
    """torch.get_float32_matmul_precision: what ``set_float32_matmul_precision`` set last
    ("highest" until then), or on a GPU what ``matmul.allow_tf32`` made of it since: "high"
    with TF32 on, "highest" with it off."""
    set_last = backend.float32_matmul["precision"]
    if not backend.cupy_available():
        return set_last
    enabled = tf32_enabled()
    if enabled == (set_last != "highest"):
        return set_last
    return "high" if enabled else "highest"


# ====================================================================== the policy
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
        return self.run(model, model, *inputs, **kwargs)

    def run(self, model, fn, *inputs, **kwargs):
        """``fn(*inputs, **kwargs)`` under this policy, with ``model``'s parameters cast: what
        ``forward`` does, for a model whose own ``forward`` takes a policy (``GPT(x,
        precision=p)``) and so must run its body, not call itself (and its hooks) again."""
        if not self.mixed:
            return fn(*inputs, **kwargs)
        inputs = [self.cast(x) if isinstance(x, Tensor) else x for x in inputs]
        with cast_parameters(model, self.compute_dtype):
            out = fn(*inputs, **kwargs)
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

    # ------------------------------------------------------------------ backward
    def backward(self, loss: Tensor) -> None:
        """``loss.backward()``, seeded with the loss scale when scaling."""
        if self.scaler is None:
            loss.backward()
        else:
            loss.backward(self.scaler.loss_grad(loss))

    def step(self, optimiser, parameters, max_norm: float = 0.0) -> StepResult:
        """``update(optimiser, parameters, max_norm, self.scaler)``: unscale, clip, update
        (skipped on inf/NaN gradients), zero the gradients; returns its ``StepResult``.

        The update is not the policy's: ``tricycle.update.update`` takes the scaler as an
        argument, and the library's training step calls it directly. This delegate keeps
        the loops written against ``policy.step`` working, number for number."""
        return update(optimiser, parameters, max_norm=max_norm, scaler=self.scaler)

    def __repr__(self) -> str:
        return f"Precision({self.mode!r}, tf32={self.tf32}, loss_scaling={self.scaler is not None})"


def describe(policy: Precision | None = None) -> str:
    """One line for logs: mode, compute dtype, TF32 state and loss scale."""
    policy = policy or Precision()
    scale = "off" if policy.scaler is None else f"{policy.scaler.scale:g}"
    return (
        f"precision={policy.mode} compute={policy.compute_dtype.name} "
        f"tf32_now={tf32_enabled()} loss_scale={scale}"
    )


__all__ = ["GradScaler", "Precision", "StepResult", "bfloat16", "cast", "describe", "is_floating"]
