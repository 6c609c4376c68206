"""exp, tanh and max written so that the kernels' loops compile to vector instructions.

``math.exp`` and ``math.tanh`` in a numba loop are calls into the C library, one element at a
time, and Python's ``max`` is a compare and a branch that a reduction cannot vectorise: the
loops around them cannot use the CPU's vector units. For float32, ``exp`` is Cephes' ``expf``
written out (range reduction, a polynomial, 2^n added to the exponent bits) and ``tanh`` is
Eigen's rational approximation, both within a few units in the last place; float64 keeps the
C library's functions (float64 is for checking, not for speed). ``maximum`` is LLVM's
NaN-propagating max, which vectorises in a reduction; ``where`` is a select without a branch.
Infinities and NaN come out as the C library's functions give them.
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4  # ln 2 split so that n * _LN2_HI is exact
# Cephes expf: exp(r) ~ 1 + r + r^2 (p0 r^5 + ... + p5) for |r| <= ln(2) / 2
_P0, _P1, _P2, _P3, _P4, _P5 = (np.float32(c) for c in (
    1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
    5.0000001201e-1))  # fmt: skip


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@intrinsic
def _float32_bits(typingctx, value):
    """The int32 bit pattern of the float32 ``value``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.int32(types.float32), codegen


@intrinsic
def maximum(typingctx, a, b):
    """max(a, b), NaN if either is NaN (as numpy's max): LLVM's ``llvm.maximum``, which
    vectorises in a reduction loop where Python's ``max`` stays one element at a time."""
    if a != b or not isinstance(a, types.Float):
        return None

    def codegen(context, builder, signature, args):
        kind = args[0].type
        name = "llvm.maximum.f32" if kind == ir.FloatType() else "llvm.maximum.f64"
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(kind, [kind, kind]), name
        )
        return builder.call(function, args)

    return a(a, b), codegen


@intrinsic
def where(typingctx, condition, a, b):
    """a if condition else b, as one select instruction: no branch, so loops vectorise."""
    if not isinstance(condition, types.Boolean) or a != b:
        return None

    def codegen(context, builder, signature, args):
        return builder.select(args[0], args[1], args[2])

    return a(condition, a, b), codegen


# Eigen's generic_fast_tanh_float: a rational minimax fit, float32-accurate on [-c, c], with
# XLA's c for fused multiply-adds (Eigen's 7.90531 stops just short of 1)
_TANH_CLAMP = 7.99881172180175781
_TANH_P = tuple(np.float32(c) for c in (
    -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08,
    1.48572235717979e-05, 6.37261928875436e-04, 4.89352455891786e-03))  # x^13 ... x^1  # fmt: skip
_TANH_Q = tuple(np.float32(c) for c in (
    1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
    4.89352518554385e-03))  # x^6 ... x^0  # fmt: skip


def exp(x):
    """e^x, elementwise on a scalar (overloaded per dtype below)."""
    return math.exp(x)


def tanh(x):
    """tanh(x) (overloaded per dtype below)."""
    return math.tanh(x)


@overload(exp, inline="always")
def _exp_overload(x):
    if x != types.float32:
        return lambda x: math.exp(x)

    def exp32(x):
        # c = n ln 2 + r with |r| <= ln 2 / 2, n in [-126, 128]; e^c = e^r 2^n
        c = min(max(x, np.float32(-87.33654)), np.float32(88.72283))
        n = np.floor(c * np.float32(_LOG2E) + np.float32(0.5))
        r = c - n * np.float32(_LN2_HI)
        r = r - n * np.float32(_LN2_LO)
        p = _P0 * r + _P1
        p = ((((p * r + _P2) * r + _P3) * r + _P4) * r) + _P5
        e = p * r * r + r + np.float32(1.0)
        # times 2^n: n added to e's exponent bits (in range: r > 0 at n = -126, r < 0 at 128)
        e = _float32_from_bits(_float32_bits(e) + (np.int32(n) << 23))
        e = where(x < np.float32(-87.33654), np.float32(0.0), e)  # below: subnormal, flushed
        e = where(x > np.float32(88.72283), np.float32(np.inf), e)  # above: past the largest
        return where(x == x, e, x)  # NaN stays NaN

    return exp32


@overload(tanh, inline="always")
def _tanh_overload(x):
    if x != types.float32:
        return lambda x: math.tanh(x)

    def tanh32(x):
        # Eigen's float tanh: x P(x^2) / Q(x^2) on [-c, c], where it reaches +-1 in float32
        c = min(max(x, np.float32(-_TANH_CLAMP)), np.float32(_TANH_CLAMP))
        c2 = c * c
        p = c2 * _TANH_P[0] + _TANH_P[1]
        p = c2 * p + _TANH_P[2]
        p = c2 * p + _TANH_P[3]
        p = c2 * p + _TANH_P[4]
        p = c2 * p + _TANH_P[5]
        p = c2 * p + _TANH_P[6]
        q = c2 * _TANH_Q[0] + _TANH_Q[1]
        q = c2 * q + _TANH_Q[2]
        q = c2 * q + _TANH_Q[3]
        t = min(max(c * p / q, np.float32(-1.0)), np.float32(1.0))  # +-1 at c, FMA or not
        t = where(abs(x) < np.float32(0.0004), x, t)  # tanh(x) = x to float32 there
        return where(x == x, t, x)  # NaN stays NaN

    return tanh32


def typed(x, value):
    """``value`` in x's float type: float32 kernels stay float32 (a Python float is float64)."""
    return value


@overload(typed, inline="always")
def _typed_overload(x, value):
    if x == types.float32:
        return lambda x, value: np.float32(value)
    return lambda x, value: value


# Abramowitz & Stegun 7.1.26: erfc(z) = t P(t) exp(-z^2), t = 1 / (1 + p z), z >= 0, absolute
# error <= 1.5e-7: float32 accuracy from the same exp as the Gaussian density
_AS_P = 0.3275911
_AS_A = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736,
                                      0.254829592))  # a5 ... a1  # fmt: skip
_SQRT_HALF = 0.7071067811865476


def normal_tail(x):
    """Phi(-|x|), the standard normal's lower tail at -|x| (overloaded per dtype below)."""
    return 0.5 * math.erfc(abs(x) * _SQRT_HALF)


@overload(normal_tail, inline="always")
def _normal_tail_overload(x):
    if x != types.float32:
        return lambda x: 0.5 * math.erfc(abs(x) * _SQRT_HALF)

    def normal_tail32(x):
        t = np.float32(1.0) / (np.float32(1.0) + np.float32(_AS_P * _SQRT_HALF) * abs(x))
        p = (((_AS_A[0] * t + _AS_A[1]) * t + _AS_A[2]) * t + _AS_A[3]) * t + _AS_A[4]
        return np.float32(0.5) * t * p * exp(np.float32(-0.5) * x * x)

    return normal_tail32
