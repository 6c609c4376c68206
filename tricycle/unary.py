"""Elementwise ops of one tensor, optionally with a Python scalar.

Each op computes its output with the tensor's own array module and returns a Tensor whose
single back_fn is the closed-form derivative: ``dout -> dout * f'(x)``. ``unary_op`` makes
that node for every op of one input (reductions, shape ops and activations too).
"""

import numpy as np

from tricycle import binary, checks
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


def unary_op(x: Tensor, out, back_fn, name: str) -> Tensor:
    """The graph node of an op of one tensor: ``out``, whose gradient ``back_fn`` maps back
    to ``x``."""
    return x.new(out, args=(x,), back_fns=(back_fn,), name=name)


# ------------------------------------------------------------------ with a scalar
def add_scalar(x: Tensor, c: float) -> Tensor:
    """x + c"""
    return unary_op(x, x.array + c, lambda dout: dout, f"+ {c}")


def sub_scalar(x: Tensor, c: float) -> Tensor:
    """x - c"""
    return unary_op(x, x.array - c, lambda dout: dout, f"- {c}")


def rsub_scalar(x: Tensor, c: float) -> Tensor:
    """c - x"""
    return unary_op(x, c - x.array, lambda dout: -dout, f"{c} -")


def mul_scalar(x: Tensor, c: float) -> Tensor:
    """x * c"""
    return unary_op(x, x.array * c, lambda dout: dout * c, f"* {c}")


def div_scalar(x: Tensor, c: float) -> Tensor:
    """x / c"""
    if c == 0:
        raise ZeroDivisionError(f"div: dividing a tensor of shape {x.shape} by the scalar 0")
    return unary_op(x, x.array / c, lambda dout: dout / c, f"/ {c}")


def rdiv_scalar(x: Tensor, c: float) -> Tensor:
    """c / x"""
    out = c / x.array
    return unary_op(x, out, lambda dout: -dout * out / x.array, f"{c} /")


def pow_scalar(x: Tensor, c: float) -> Tensor:
    """x ** c; the derivative of x ** 0 is 0 everywhere (also at x = 0, as in PyTorch)."""
    if c == 0:
        return unary_op(x, x.array**c, lambda dout: x.xp.zeros_like(dout), f"** {c}")
    if c == 2:  # the common square: no pow in the backward
        return unary_op(x, x.array * x.array, lambda dout: dout * 2 * x.array, f"** {c}")

    def back_fn(dout):
        return dout * c * x.array ** (c - 1)

    if c == 3 and x.dtype.kind == "f":  # the tanh GeLU's cube: two products, as PyTorch takes
        # it (xp's pow of a negative float to a whole power runs a slow general path)
        return unary_op(x, x.array * x.array * x.array, back_fn, f"** {c}")
    return unary_op(x, x.array**c, back_fn, f"** {c}")


def rpow_scalar(x: Tensor, c: float) -> Tensor:
    """c ** x"""
    xp = x.xp
    out = xp.power(c, x.array, dtype=x.dtype)
    return unary_op(x, out, lambda dout: dout * out * xp.log(c), f"{c} **")


def maximum_scalar(x: Tensor, c: float) -> Tensor:
    """max(x, c) elementwise; the gradient passes where x >= c, as torch.clamp(min=c)."""
    xp = x.xp
    return unary_op(x, xp.maximum(x.array, c), lambda dout: dout * (x.array >= c), f"max {c}")


def minimum_scalar(x: Tensor, c: float) -> Tensor:
    """min(x, c) elementwise; the gradient passes where x <= c, as torch.clamp(max=c)."""
    xp = x.xp
    return unary_op(x, xp.minimum(x.array, c), lambda dout: dout * (x.array <= c), f"min {c}")


def clip(
    x: Tensor,
    low: float | None = None,
    high: float | None = None,
    *,
    min: float | None = None,  # noqa: A002 - torch's names
    max: float | None = None,  # noqa: A002
) -> Tensor:
    """Clamp x into [low, high]; the gradient passes inside the closed interval. Tensor
    bounds (broadcast, with their own gradients) are ``binary.clamp``'s.

    ``min``/``max`` are torch's names for the bounds (``x.clip(min=0)``, ``Tensor.clamp``'s):
    given so, the bounds mean what torch's do, min > max giving max everywhere (with no
    gradient); given as tricycle's ``low``/``high``, low > high is a ValueError.
    """
    torch_names = min is not None or max is not None
    if torch_names:
        if low is not None or high is not None:
            raise TypeError(
                f"clip: give the bounds as low/high or as torch's min/max, not both; got "
                f"low={low!r}, high={high!r}, min={min!r}, max={max!r}"
            )
        low, high = min, max
    if isinstance(low, Tensor) or isinstance(high, Tensor):
        return binary.clamp(x, low, high)
    xp = x.xp
    checks.real("clip", "min" if torch_names else "low", low, optional=True)
    checks.real("clip", "max" if torch_names else "high", high, optional=True)
    crossed = low is not None and high is not None and low > high
    if crossed and not torch_names:
        raise ValueError(f"clip: low={low} must not exceed high={high}")
    # crossed torch bounds: min(max(x, min), max) is max, as torch's (whatever xp.clip does)
    out = xp.full_like(x.array, high) if crossed else xp.clip(x.array, low, high)

    def back_fn(dout):
        inside = xp.ones(x.shape, dtype=bool)
        if low is not None:
            inside &= x.array >= low
        if high is not None:
            inside &= x.array <= high
        return dout * inside

    return unary_op(x, out, back_fn, "clip")


# ------------------------------------------------------------------ functions of x
def floats(x: Tensor):
    """x's array; of integers or booleans, as float32: torch's functions of x give its
    default float there (numpy's, float64); ``tricycle.trigonometry``'s read it too."""
    a = x.array
    return a.astype(np.float32) if a.dtype.kind in "biu" else a


def neg(x: Tensor) -> Tensor:
    """-x"""
    return unary_op(x, -x.array, lambda dout: -dout, "neg")


def exp(x: Tensor) -> Tensor:
    """e ** x"""
    out = x.xp.exp(floats(x))
    return unary_op(x, out, lambda dout: dout * out, "exp")


def log(x: Tensor) -> Tensor:
    """Natural logarithm: log 0 = -inf (with gradient inf) and log of a negative number NaN,
    without numpy's warnings, as torch's (``log(tril(ones))`` is a causal mask)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x.xp.log(floats(x))

    def back_fn(dout):
        with np.errstate(divide="ignore", invalid="ignore"):
            return dout / x.array

    return unary_op(x, out, back_fn, "log")


def sqrt(x: Tensor) -> Tensor:
    """Square root."""
    out = x.xp.sqrt(floats(x))
    return unary_op(x, out, lambda dout: dout * 0.5 / out, "sqrt")


def abs(x: Tensor) -> Tensor:  # noqa: A001 - the name from the math
    """|x|; the derivative at 0 is 0, as in PyTorch."""
    xp = x.xp
    return unary_op(x, xp.abs(x.array), lambda dout: dout * xp.sign(x.array), "abs")


def sin(x: Tensor) -> Tensor:
    """Sine."""
    xp = x.xp
    return unary_op(x, xp.sin(floats(x)), lambda dout: dout * xp.cos(x.array), "sin")


def cos(x: Tensor) -> Tensor:
    """Cosine."""
    xp = x.xp
    return unary_op(x, xp.cos(floats(x)), lambda dout: -dout * xp.sin(x.array), "cos")


def tanh(x: Tensor) -> Tensor:
    """Hyperbolic tangent; the derivative 1 - tanh^2 reuses the output."""
    out = x.xp.tanh(floats(x))
    return unary_op(x, out, lambda dout: dout * (1 - out * out), "tanh")


def sigmoid(x: Tensor) -> Tensor:
    """Logistic sigmoid 1 / (1 + e^-x), computed without overflow; derivative s (1 - s)."""
    out = sigmoid_forward(x.xp, floats(x))
    return unary_op(x, out, lambda dout: dout * out * (1 - out), "sigmoid")


def sigmoid_forward(xp, a, out=None):
    """1 / (1 + e^-a) of the array ``a``, into ``out`` (which may be ``a``) or a new array of
    a's dtype. e^-|a| never overflows, and the form chosen for each sign keeps the tails
    exact: sigmoid(-40) is 4.2e-18, not 0."""
    positive = a >= 0
    e = xp.exp(-xp.abs(a))  # (0, 1]
    numerator = xp.where(positive, xp.ones((), dtype=e.dtype), e)
    return xp.divide(numerator, e + 1, out=out)
