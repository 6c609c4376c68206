"""torch.optim.Muon (Jordan et al.): momentum SGD for the 2-d weights of hidden layers
whose step is the momentum orthogonalised, pushed toward U V^T of its singular value
decomposition U S V^T by a few Newton-Schulz iterations.

With g the gradient, B the momentum ("momentum_buffer"), mu the momentum, (a, b, c) the
iteration's coefficients and A x B the weight's shape, as torch 2.13 writes them:

    B += (1 - mu) (g - B)                        (an average, torch's lerp)
    M = g + mu (B - g) with nesterov, else B
    X = M / max(|M|, eps) (X^T if A > B);  k times: G = X X^T;  X = a X + (b G + c G G) X
    w *= 1 - lr weight_decay;  w -= lr' X      lr' = lr sqrt(max(1, A / B)) ("original"),
                                               or lr 0.2 sqrt(max(A, B)) ("match_rms_adamw")

A 2-d weight is read as a ``Linear``'s, (in, out) in tricycle (the transpose of torch's
(out, in), as ``tricycle.nn.init`` reads it): A = out, B = in, so that a layer's step is
torch's for the same layer. The iteration gives the transpose of its result for the
transpose of its input, exactly when A != B (both take the same wide matrix), to
bfloat16's rounding when A = B.

torch iterates in bfloat16 whatever the weights' dtype; so does this one, each product
and sum computed in float32 and rounded to bfloat16 as torch's CPU kernels do
(``to_bfloat16``, a bit rounding in ``xp`` that numpy and cupy share), so that the steps
agree with torch's to bfloat16's precision rather than differing by it.
"""

import math

import numpy as np

from tricycle import checks
from tricycle.optim.adafactor import lerp
from tricycle.optim.optimizer import Optimizer

DEFAULT_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def to_bfloat16(a, xp):
    """``a`` rounded to the nearest bfloat16 (ties to even), in float32: the low mantissa
    bits of its binary form (float64's, else float32's) rounded away. NaN stays NaN."""
    wide = np.dtype(a.dtype) == np.float64
    dropped, unsigned = (45, xp.uint64) if wide else (16, xp.uint32)
    a = xp.array(a, dtype=xp.float64 if wide else xp.float32, copy=True, order="C")
    bits = a.view(unsigned)
    one = unsigned(1)
    half = unsigned((1 << (dropped - 1)) - 1)
    bits = (bits + half + ((bits >> unsigned(dropped)) & one)) & ~unsigned((1 << dropped) - 1)
    rounded = bits.view(a.dtype).astype(xp.float32)
    return xp.where(xp.isnan(a), xp.float32(math.nan), rounded)


def orthogonalised(m, coefficients, steps: int, eps: float, xp):
    """torch's Newton-Schulz iteration on matrix ``m``, in bfloat16 (held in float32): the
    zeroth power of ``m``, roughly U V^T, with singular values near 1 rather than at it."""
    a, b, c = coefficients
    x = to_bfloat16(m, xp)
    tall = m.shape[0] > m.shape[1]
    if tall:
        x = x.T
    norm = to_bfloat16(xp.sqrt(xp.sum(x * x, dtype=xp.float32)), xp)
    x = to_bfloat16(x / xp.maximum(norm, to_bfloat16(xp.asarray(eps, dtype=xp.float32), xp)), xp)
    for _ in range(steps):
        gram = to_bfloat16(x @ x.T, xp)
        gram = to_bfloat16(b * gram + c * (gram @ gram), xp)
        x = to_bfloat16(a * x + gram @ x, xp)
    return x.T if tall else x


def adjusted_lr(lr: float, adjust_lr_fn: str | None, shape: tuple) -> float:
    """The learning rate scaled for a weight of ``shape``, read as a ``Linear``'s (in, out)
    (torch's A x B is out x in), as ``tricycle.nn.init`` reads a 2-d weight."""
    cols, rows = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))  # "match_rms_adamw"


def check_coefficients(owner: str, name: str, value):
    """Muon's ``ns_coefficients``: three numbers (a, b, c)."""
    if not isinstance(value, tuple | list) or len(value) != 3:
        checks.fail(owner, name, "a tuple of exactly 3 numbers (a, b, c)", value)
    for i, coefficient in enumerate(value):
        checks.real(owner, f"{name}[{i}]", coefficient)
    return value


def check_steps(owner: str, name: str, value):
    """Muon's ``ns_steps``: a whole number of iterations, fewer than 100 (as torch's)."""
    checks.integer(owner, name, value, low=0)
    if value >= 100:
        checks.fail(owner, name, "less than 100, for computational efficiency", value)
    return value


class Muon(Optimizer):
    """torch.optim.Muon: Nesterov momentum (an average, "momentum_buffer") orthogonalised by
    ``ns_steps`` Newton-Schulz iterations, with decoupled weight decay. 2-d parameters only:
    biases and embeddings belong to another optimizer (AdamW), as torch says."""

    CHECKS = {
        "lr": checks.non_negative,
        "weight_decay": checks.non_negative,
        "momentum": checks.non_negative,
        "nesterov": checks.boolean,
        "ns_coefficients": check_coefficients,
        "eps": checks.non_negative,
        "ns_steps": check_steps,
        "adjust_lr_fn": checks.optional(checks.one_of(["original", "match_rms_adamw"])),
    }

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = DEFAULT_COEFFICIENTS,
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: str | None = None,
    ):
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_coefficients": ns_coefficients,
            "eps": eps,
            "ns_steps": ns_steps,
            "adjust_lr_fn": adjust_lr_fn,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon: only 2-d parameters (the weights of hidden layers) are "
                        f"supported, got one of shape {p.shape}: optimize biases and "
                        "embeddings with another optimizer, such as AdamW"
                    )

    def update_parameter(self, xp, w, g, state: dict, group: dict) -> None:
        lr, mu = float(group["lr"]), group["momentum"]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = xp.zeros_like(w)
        buffer = lerp(state["momentum_buffer"], g, 1.0 - mu, xp)
        m = lerp(g.copy(), buffer, mu, xp) if group["nesterov"] else buffer
        x = orthogonalised(m, group["ns_coefficients"], int(group["ns_steps"]), group["eps"], xp)
        w *= 1.0 - lr * group["weight_decay"]
        w -= adjusted_lr(lr, group["adjust_lr_fn"], w.shape) * x.astype(w.dtype)
