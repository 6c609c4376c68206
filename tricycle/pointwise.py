"""torch's elementwise Tensor methods beyond the operators: ``add``, ``sub``, ``mul`` and ``div``
with torch's keywords (``alpha``, ``rounding_mode``), ``absolute``, ``log1p``, ``log2``,
``log10``, ``fmod``, ``remainder``, the logical and bitwise ops and ``nan_to_num``.

Each is a method of ``Tensor`` (``x.fmod(2)``) that imports this module on its first call
(``tensor_torch.imported``); ``tricycle.torch_math`` has torch's functions of the same names.
The arithmetic is the operators' (``x.add(y, alpha=2)`` is ``x + y * 2``); the rest are small
ops, each with its derivative beside it, as torch's:

- log1p(x) = log(1 + x), exact for small x, of derivative 1 / (1 + x); log2 and log10 of
  derivatives 1 / (x ln 2) and 1 / (x ln 10). An integer tensor becomes float32 first.
- ``fmod`` is x - y q with q = x / y rounded towards 0 (the dividend's sign, C's fmod),
  ``remainder`` with q rounded down (the divisor's sign, Python's %): q is a step, so the
  gradient is 1 for x and -q for y.
- ``div`` with a ``rounding_mode`` ("trunc" or "floor") is a step function of gradient 0;
  the logical ops give booleans, with no gradient.
- the bitwise ops (the operators ``&``, ``|``, ``^`` and ``~``) take booleans or integers,
  as torch's: of booleans, the logical op (``mask & causal``); of integers, the bits. A
  float tensor is a TypeError, as in torch. No gradient.
- ``nan_to_num`` replaces NaN, inf and -inf by numbers; the gradient passes where x is finite.

An integer division (or remainder) by zero raises ZeroDivisionError, as torch's does, where
numpy would give 0.
"""

import math

import numpy as np

from tricycle import backend, binary, checks, unary
from tricycle.graph import Node as Tensor  # the ops see a tensor as a graph node


# ------------------------------------------------------------------ arithmetic
def _times(x: Tensor, op: str, other, alpha):
    """``other * alpha``: a number stays a number (the operators' scalar form), a sparse tensor
    stays sparse (the dense operators add it), anything else becomes a tensor first (a list
    times 2 would repeat the list)."""
    if not (checks.is_real(alpha) or isinstance(alpha, bool)):
        checks.fail(f"Tensor.{op}", "alpha", "a number", alpha, TypeError)
    sparse = getattr(other, "_sparse_layout", False)  # dense + sparse: dense, as torch's
    if not (checks.is_real(other) or isinstance(other, Tensor) or sparse):
        other = binary.constant(other, x, f"Tensor.{op}")
    return other if alpha == 1 else other * alpha


def add(x: Tensor, other, *, alpha=1) -> Tensor:
    """torch.Tensor.add: x + alpha * other."""
    return x + _times(x, "add", other, alpha)


def sub(x: Tensor, other, *, alpha=1) -> Tensor:
    """torch.Tensor.sub: x - alpha * other."""
    return x - _times(x, "sub", other, alpha)


def mul(x: Tensor, other) -> Tensor:
    """torch.Tensor.mul: x * other."""
    return x * other


def div(x: Tensor, other, *, rounding_mode=None) -> Tensor:
    """torch.Tensor.div: x / other; with ``rounding_mode`` "trunc" the quotient rounded towards
    0, with "floor" rounded down (Python's //), in the inputs' dtype, of gradient 0."""
    if rounding_mode is None:
        return x / other
    if rounding_mode not in ("trunc", "floor"):
        checks.fail("Tensor.div", "rounding_mode", "None, 'trunc' or 'floor'", rounding_mode)
    y = binary.constant(other, x, "Tensor.div")
    out, xp = _quotient("div", x, y, rounding_mode), x.xp
    return binary._binary("div", x, y, out, xp.zeros_like, xp.zeros_like)


def _quotient(op: str, x: Tensor, y: Tensor, rounding: str):
    """x / y rounded towards 0 ("trunc") or down ("floor"), broadcast, in their dtype."""
    if not backend.is_float(np.result_type(x.dtype, y.dtype)) and bool((y.array == 0).any()):
        raise ZeroDivisionError(f"{op}: integer division by zero (a divisor of shape {y.shape} "
                                f"holds 0, the dividend has shape {x.shape})")  # fmt: skip
    xp = x.xp
    with np.errstate(divide="ignore", invalid="ignore"):  # a float / 0 is inf or NaN, as torch's
        floor = binary._apply(op, xp.floor_divide, x, y)  # Python's //: floats and integers
        if rounding == "floor":
            return floor
        if backend.is_float(floor.dtype):
            return binary._apply(op, lambda a, b: xp.trunc(a / b), x, y)
    inexact = floor * y.array != x.array  # integers: floor is one below trunc, signs differing
    return floor + (inexact & ((x.array < 0) != (y.array < 0)))


def _remainder(name: str, rounding: str, fn: str, what: str):
    def remainder(x: Tensor, other) -> Tensor:
        y = binary.constant(other, x, f"Tensor.{name}")
        q = _quotient(name, x, y, rounding)  # checks an integer divisor for zeros
        with np.errstate(invalid="ignore"):  # a float % 0 is NaN, as torch's
            out = binary._apply(name, getattr(x.xp, fn), x, y)
        return binary._binary(name, x, y, out, lambda dout: dout, lambda dout: -dout * q)

    remainder.__name__ = remainder.__qualname__ = name
    remainder.__doc__ = f"torch.Tensor.{name}: x - other * q, {what}; d/dx = 1, d/dother = -q."
    return remainder


fmod = _remainder("fmod", "trunc", "fmod", "q = x / other rounded towards 0 (x's sign)")
remainder = _remainder("remainder", "floor", "remainder", "q rounded down (other's sign)")


def floor_divide(x: Tensor, other) -> Tensor:
    """torch.floor_divide, Python's ``x // other``: the quotient rounded down, in the inputs'
    dtype, of gradient 0 (``div(rounding_mode="floor")``)."""
    return div(x, other, rounding_mode="floor")


def rfloor_divide(x: Tensor, other) -> Tensor:
    """``other // x``, Python's reflected ``//`` (a number before a tensor)."""
    return floor_divide(binary.constant(other, x, "floor_divide"), x)


def rremainder(x: Tensor, other) -> Tensor:
    """``other % x``, Python's reflected ``%``."""
    return remainder(binary.constant(other, x, "remainder"), x)


# ------------------------------------------------------------------ functions of x
absolute = unary.abs  # torch's other name


def _floating(x: Tensor, op: str) -> Tensor:
    """x, an integer tensor cast to float32 (torch's default float) first."""
    return x if backend.is_float(x.dtype) else x._cast(f"Tensor.{op}", backend.DEFAULT_FLOAT)


def log1p(x: Tensor) -> Tensor:
    """torch.Tensor.log1p: log(1 + x), exact for x near 0; d/dx = 1 / (1 + x)."""
    return _logarithm(x, "log1p", lambda a: 1 + a)


def log2(x: Tensor) -> Tensor:
    """torch.Tensor.log2: the base-2 logarithm; d/dx = 1 / (x ln 2)."""
    return _logarithm(x, "log2", lambda a: a * math.log(2))


def log10(x: Tensor) -> Tensor:
    """torch.Tensor.log10: the base-10 logarithm; d/dx = 1 / (x ln 10)."""
    return _logarithm(x, "log10", lambda a: a * math.log(10))


def _logarithm(x: Tensor, op: str, slope) -> Tensor:
    """``op`` of x with d/dx = 1 / slope(x): -inf at its zero and NaN below it (gradients inf
    and NaN), without numpy's warnings, as torch's and ``tricycle.log``: an entropy's
    ``nansum`` of ``-p * torch.log2(p)`` warns of nothing."""
    x = _floating(x, op)
    a = x.array
    with np.errstate(divide="ignore", invalid="ignore"):
        out = getattr(x.xp, op)(a)

    def back_fn(dout):
        with np.errstate(divide="ignore", invalid="ignore"):
            return dout / slope(a)

    return unary.unary_op(x, out, back_fn, op)


def nan_to_num(x: Tensor, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """torch.Tensor.nan_to_num: NaN replaced by ``nan``, inf by ``posinf`` and -inf by
    ``neginf`` (by default the largest and the lowest number of the dtype); the gradient
    passes where x is finite. An integer tensor is copied as it is."""
    for name, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if not (checks.is_real(value) or (value is None and name != "nan")):
            checks.fail("Tensor.nan_to_num", name, "a number", value, TypeError)
    xp, a = x.xp, x.array
    if not backend.is_float(x.dtype):
        return x.new(a.copy(), requires_grad=False)
    out = xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)
    return unary.unary_op(x, out, lambda dout: dout * xp.isfinite(a), "nan_to_num")


# ------------------------------------------------------------------ logical
def _logical(name: str):
    def logical(x: Tensor, other) -> Tensor:
        y = binary.constant(other, x, f"Tensor.{name}")
        return x.new(binary._apply(name, getattr(x.xp, name), x, y), requires_grad=False)

    logical.__name__ = logical.__qualname__ = name
    logical.__doc__ = f"torch.Tensor.{name}: booleans, x {name[8:]} other (nonzero is True)."
    return logical


logical_and, logical_or, logical_xor = map(_logical, ("logical_and", "logical_or", "logical_xor"))


def logical_not(x: Tensor) -> Tensor:
    """torch.Tensor.logical_not: booleans, True where x is 0."""
    return x.new(x.xp.logical_not(x.array), requires_grad=False)


# ------------------------------------------------------------------ bitwise
def _integral(x: Tensor, name: str) -> Tensor:
    """``x`` if its dtype is bool or an integer, else a TypeError naming the op."""
    if x.dtype.kind not in "biu":
        raise TypeError(
            f"Tensor.{name}: expected a bool or integer tensor, got {x.dtype} of shape "
            f"{x.shape} (compare first, e.g. (x != 0), for a mask)"
        )
    return x


def _bitwise(name: str):
    def bitwise(x: Tensor, other) -> Tensor:
        y = _integral(binary.constant(other, x, f"Tensor.{name}"), name)
        out = binary._apply(name, getattr(x.xp, name), _integral(x, name), y)
        return x.new(out, requires_grad=False)

    bitwise.__name__ = bitwise.__qualname__ = name
    bitwise.__doc__ = f"torch.Tensor.{name}: x {name[8:]} other, of booleans or integers' bits."
    return bitwise


bitwise_and, bitwise_or, bitwise_xor = map(_bitwise, ("bitwise_and", "bitwise_or", "bitwise_xor"))


def bitwise_not(x: Tensor) -> Tensor:
    """torch.Tensor.bitwise_not (``~x``): booleans negated, or integers' bits flipped."""
    return x.new(x.xp.invert(_integral(x, "bitwise_not").array), requires_grad=False)
