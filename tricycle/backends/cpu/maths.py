"""exp and tanh that compile to vector instructions inside the kernels' loops.

``math.exp`` and ``math.tanh`` in a numba loop are calls into the C library, one element at a
time: the loop cannot use the CPU's vector units. For float32 these are written out as
arithmetic the compiler vectorises (range reduction and a polynomial, as Cephes' ``expf``),
accurate to about one unit in the last place. float64 keeps the C library's functions
(float64 is for checking, not for speed).
"""

import math

import numpy as np
from llvmlite import ir
from numba import types
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
        kept = np.float32(x >= np.float32(-87.3))  # 0 below the normal float32 numbers
        x = min(max(x, np.float32(-87.3)), np.float32(88.7))  # the float32 range of e^x
        n = math.floor(x * np.float32(_LOG2E) + np.float32(0.5))  # x = n ln 2 + r
        r = x - n * np.float32(_LN2_HI)
        r = r - n * np.float32(_LN2_LO)
        p = _P0 * r + _P1
        p = ((((p * r + _P2) * r + _P3) * r + _P4) * r) + _P5
        e = p * r * r + r + np.float32(1.0)
        return e * _float32_from_bits(np.int32(n + 127) << 23) * kept  # times 2^n

    return exp32


@overload(tanh, inline="always")
def _tanh_overload(x):
    if x != types.float32:
        return lambda x: math.tanh(x)

    def tanh32(x):
        # tanh(x) = (1 - e^-2|x|) / (1 + e^-2|x|) with x's sign; near 0 the odd series
        a = abs(x)
        e = exp(np.float32(-2.0) * a)
        t = (np.float32(1.0) - e) / (np.float32(1.0) + e)
        if a < np.float32(0.0625):  # 1 - e cancels: x - x^3/3 + 2x^5/15 is exact to float32
            s = a * a
            t = a + a * s * (np.float32(-1.0 / 3.0) + s * np.float32(2.0 / 15.0))
        return t if x >= 0 else -t

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
