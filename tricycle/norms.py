"""The normalisations over the last axis as fused ops: layer norm and RMS norm.

Each comes as an llm.c-style pair of array functions written once against ``xp`` (numpy or
cupy), the reference formulas (``layer_norm_forward``/``_backward``,
``rms_norm_forward``/``_backward``), and a Tensor op (``layer_norm``, ``rms_norm``) that asks
``tricycle.dispatch`` once for a backend's kernels with the same signatures. The layers
``LayerNorm`` and ``RMSNorm`` are in ``tricycle.layers``.
"""

from tricycle import checks, dispatch
from tricycle.backend import check_same_device
from tricycle.fused import shared_back_fns
from tricycle.tensor import Tensor, check_float


def layer_norm_forward(xp, x, gamma, beta, eps: float):
    """y = (x - mean) * rstd * gamma + beta over the last axis, rstd = 1 / sqrt(var + eps).

    Returns (y, mean, rstd), mean and rstd (..., 1): all backward needs besides x and gamma.
    ``beta`` may be None (no bias).
    """
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    centred = x - mean  # (..., C)
    rstd = 1 / xp.sqrt((centred * centred).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    y = centred * rstd * gamma
    if beta is not None:
        y += beta
    return y.astype(x.dtype, copy=False), mean, rstd


def layer_norm_backward(xp, dy, x, gamma, mean, rstd):
    """Gradients (dx, dgamma, dbeta) of ``layer_norm_forward``.

    With xhat = (x - mean) * rstd and g = dy * gamma:
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dgamma = sum(dy * xhat); dbeta = sum(dy),
    the means over the last axis, the sums over every other.
    """
    xhat = (x - mean) * rstd  # (..., C)
    g = dy * gamma
    dx = g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True)
    dx *= rstd
    rows = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(axis=rows), dy.sum(axis=rows)


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise the last axis of x to zero mean and unit variance, then scale and shift."""
    args = (x, gamma) if beta is None else (x, gamma, beta)
    check_float("LayerNorm", x)
    checks.positive("layer_norm", "eps", eps)
    xp = check_same_device("LayerNorm", *(arg.array for arg in args))
    arrays = x.array, gamma.array, None if beta is None else beta.array
    forward, backward = dispatch.choose(
        "layer_norm", (layer_norm_forward, layer_norm_backward), *arrays
    )
    y, mean, rstd = forward(xp, *arrays, eps)

    def grads(dy):  # (dx, dgamma[, dbeta])
        return backward(xp, dy, x.array, gamma.array, mean, rstd)[: len(args)]

    return Tensor(y, args=args, back_fns=shared_back_fns(grads, len(args)), name="layer_norm")


def rms_norm_forward(xp, x, gamma, eps: float):
    """y = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) + eps); returns (y, rstd (..., 1))."""
    rstd = 1 / xp.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    return (x * rstd * gamma).astype(x.dtype, copy=False), rstd


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """Gradients (dx, dgamma) of ``rms_norm_forward``, with g = dy * gamma and xhat = x * rstd:
    dx = rstd * (g - xhat * mean(g * xhat)); dgamma = sum(dy * xhat)."""
    xhat = x * rstd  # (..., C)
    g = dy * gamma
    dx = (g - xhat * (g * xhat).mean(axis=-1, keepdims=True)) * rstd
    return dx, (dy * xhat).sum(axis=tuple(range(x.ndim - 1)))


def rms_norm(x: Tensor, gamma: Tensor, eps: float = 1e-6) -> Tensor:
    """Scale the last axis of x to unit root-mean-square, then by gamma."""
    check_float("RMSNorm", x)
    checks.positive("rms_norm", "eps", eps)
    xp = check_same_device("RMSNorm", x.array, gamma.array)
    forward, backward = dispatch.choose(
        "rms_norm", (rms_norm_forward, rms_norm_backward), x.array, gamma.array
    )
    y, rstd = forward(xp, x.array, gamma.array, eps)
    back_fns = shared_back_fns(lambda dy: backward(xp, dy, x.array, gamma.array, rstd), 2)
    return Tensor(y, args=(x, gamma), back_fns=back_fns, name="rms_norm")
