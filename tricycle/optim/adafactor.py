"""torch.optim.Adafactor (Shazeer & Stern): Adam's second moment kept factored, a row and
a column average of the squared gradient for every matrix, so that its memory is the sum of
a weight's sides rather than their product; no first moment; steps relative to the
weights' own size.

With g the gradient (negated with ``maximize``), t the parameter's step, lr, the decay rate
tau (``beta2_decay``), ``eps`` = (eps1, eps2), the clipping threshold d and the weight
decay lambda, as torch 2.13 writes them:

    b_t = t^tau (1 - beta2 at step t);  rho_t = min(lr, 1 / sqrt(t))
    alpha_t = max(eps2, RMS(w)) rho_t                     (the weights before decay)
    w *= 1 - lr lambda                                    (decoupled weight decay)
    a matrix (and a stack of them):  R += b_t (mean(g^2, last axis) - R)    "row_var"
                                     C += b_t (mean(g^2, next-to-last) - C) "col_var"
                                     V = R C / max(mean(R), eps1)
    a vector:                        V += b_t (g^2 - V)                     "variance"
    U = g / sqrt(max(V, eps1^2));  w -= alpha_t / max(1, RMS(U) / d) * U

eps1 None is the machine epsilon of the parameter's dtype. torch's lerp is followed to its
rounding (``lerp``) so that float64 steps agree with torch's to the last bits.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.optim.optimizer import Optimizer, advance, torch_flags


def lerp(start, end, weight: float, xp):
    """``start`` moved toward ``end`` by ``weight``, in place, with torch's two formulas (the
    one from the nearer end, so that weight 1 gives ``end`` exactly)."""
    if weight < 0.5:
        start += weight * (end - start)
    else:
        xp.subtract(end, (end - start) * (1.0 - weight), out=start)
    return start


def check_eps(owner: str, name: str, value):
    """Adafactor's ``eps``: a pair (eps1 or None, eps2), both at least 0."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        checks.fail(owner, name, "a pair (eps1 or None, eps2)", value)
    if value[0] is not None:
        checks.non_negative(owner, f"{name}[0]", value[0])
    checks.non_negative(owner, f"{name}[1]", value[1])
    return value


def rms(a, xp) -> float:
    """The root mean square of array ``a`` (its 2-norm over the root of its size)."""
    return float(xp.sqrt(xp.sum(a * a))) / math.sqrt(a.size)


class Adafactor(Optimizer):
    """torch.optim.Adafactor: the second moment of a matrix's gradient factored into its
    row and column means ("row_var", "col_var"; a vector's kept whole, "variance"), the
    step relative to the weights' root mean square and clipped at ``d``."""

    CHECKS = {
        "lr": checks.non_negative,
        "beta2_decay": checks.interval(-math.inf, 0.0),
        "eps": check_eps,
        "d": checks.interval(1.0, math.inf),
        "weight_decay": checks.non_negative,
        **torch_flags("foreach", "maximize"),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ):
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def state_shape(self, slot: str, shape: tuple) -> tuple:
        """The shapes of the factored moments: "row_var" the parameter's with its last axis
        1, "col_var" with its next-to-last axis 1; the rest the parameter's."""
        shape = tuple(shape)
        if slot == "row_var":
            return shape[:-1] + (1,)
        if slot == "col_var":
            return shape[:-2] + (1,) + shape[-1:]
        return shape

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, d, weight_decay = float(group["lr"]), group["d"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(w.dtype).eps)
        if w.ndim > 1 and "row_var" not in state:
            state["row_var"] = xp.zeros(self.state_shape("row_var", w.shape), dtype=w.dtype)
            state["col_var"] = xp.zeros(self.state_shape("col_var", w.shape), dtype=w.dtype)
        elif w.ndim <= 1 and "variance" not in state:
            state["variance"] = xp.zeros_like(w)
        t = advance(state)
        beta2_complement = float(t) ** group["beta2_decay"]
        alpha = max(eps2, rms(w, xp)) * min(lr, 1.0 / math.sqrt(t))
        if weight_decay != 0:
            w *= 1.0 - lr * weight_decay
        if w.ndim > 1:
            row, col = state["row_var"], state["col_var"]
            lerp(row, xp.mean(g * g, axis=-1, keepdims=True), beta2_complement, xp)
            lerp(col, xp.mean(g * g, axis=-2, keepdims=True), beta2_complement, xp)
            variance = xp.matmul(row, col)
            variance /= xp.maximum(xp.mean(row, axis=-2, keepdims=True), eps1)
        else:
            variance = lerp(state["variance"], g * g, beta2_complement, xp).copy()
        update = g / xp.sqrt(xp.maximum(variance, eps1 * eps1))
        w -= alpha / max(1.0, rms(update, xp) / d) * update
