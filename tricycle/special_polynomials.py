"""torch.special's orthogonal polynomials of degree ``n`` at ``input``: Chebyshev's of the first
to fourth kinds (``chebyshev_polynomial_t``, ``_u``, ``_v``, ``_w``) and their shifted forms on
[0, 1] (``shifted_chebyshev_polynomial_t`` ... ``_w``: the same at 2x - 1), the physicists' and
the probabilists' Hermite polynomials (``hermite_polynomial_h``, ``hermite_polynomial_he``),
Laguerre's (``laguerre_polynomial_l``) and Legendre's (``legendre_polynomial_p``).

Computed as torch's, so that its values come out, its far ones included: the degree is
``n`` cast to the result's dtype and truncated to an integer (NaN and inf as -1); a negative
degree gives 0; each family's values at its ends (Chebyshev's at -1 and 1) are exact; a
Chebyshev polynomial of a high degree inside (-1, 1) is its trigonometric form (T_n(cos t) =
cos(n t), U_n(cos t) = sin((n + 1) t) / sin t, V_n = cos((n + 1/2) t) / cos(t / 2), W_n =
sin((n + 1/2) t) / sin(t / 2)) from torch's degrees on (above 6 for T and the shifted ones, 8
for U, V and W, 4 for the shifted W); every other value is the three-term recurrence in the
result's dtype (so outside [-1, 1] it overflows to inf or NaN where torch's does). The Hermite
polynomials are NaN above degree 128 in float32 and 512 in float64, as torch's.

``input`` or ``n`` may be a Python number (not both); the result has their broadcast shape and
float dtype (float32 for integers; float16 and bfloat16 are refused, as torch's CPU kernels
are). As torch's, they carry no gradient: the result never requires grad.
"""

import numpy as np

from tricycle import backend
from tricycle.graph import Node
from tricycle.torch_functions import no_out, operand, tensor_input

_INT64_LIMIT = 2.0**62  # degrees beyond it are torch's undefined cast: taken as -1, as on x86


def _operands(op: str, input, n):  # noqa: A002 - torch's names
    """(the tensor to make the result on, x's array, the integer degrees), broadcast."""
    if not isinstance(input, Node) and not isinstance(n, Node):
        raise TypeError(f"{op}: input or n must be a Tensor (torch takes (Tensor, Tensor), "
                        f"(Number, Tensor) or (Tensor, Number)), got {input!r} and "
                        f"{n!r}")  # fmt: skip
    x = operand(op, input, n) if isinstance(n, Node) else tensor_input(op, input)
    xp = backend.check_same_device(op, *(t.array for t in (x, n) if isinstance(t, Node)))
    floats = [t for t in (x, n) if isinstance(t, Node) and backend.is_float(t.dtype)]
    shaped = [t for t in floats if t.ndim] or floats  # torch's rule: a 0-d tensor gives way
    dtype = np.result_type(*(t.dtype for t in shaped)) if shaped else np.dtype(np.float32)
    if dtype.itemsize < 4:
        raise NotImplementedError(f"{op}: not implemented for {dtype.name}, as torch's; use "
                                  "float32 or float64")  # fmt: skip
    a = x.array.astype(dtype, copy=False)
    m = (n.array if isinstance(n, Node) else xp.asarray(n)).astype(dtype, copy=False)
    with np.errstate(all="ignore"):
        whole = xp.isfinite(m) & (xp.abs(m) < _INT64_LIMIT)
        k = xp.where(whole, xp.trunc(xp.where(whole, m, -1)), -1).astype(np.int64)
    try:
        a, k = xp.broadcast_arrays(a, k)
    except ValueError:
        raise ValueError(f"{op}: the shapes of input {x.shape} and n {np.shape(m)} cannot be "
                         "broadcast together") from None  # fmt: skip
    return x, xp, a, k


def _recurrence(xp, k, first, step):
    """The degree-``k`` term (k >= 1 where used) of p_0 = 1, p_1 = ``first``, p_{j+1} =
    ``step(j, p_{j-1}, p_j)``; a term that has become NaN stays NaN, so the walk stops once
    every term still wanted is NaN (torch's stop)."""
    p, q, out = xp.ones_like(first), first, first
    top = int(k.max()) if k.size else 0
    for j in range(1, top):
        p, q = q, step(j, p, q)
        out = xp.where(k == j + 1, q, out)
        if j % 16 == 0 and not bool(((k > j + 1) & ~xp.isnan(q)).any()):
            return xp.where(k > j + 1, xp.nan, out)
    return out


def _chebyshev(kind: str, shifted: bool, threshold: int):
    """torch's Chebyshev polynomial of ``kind`` ('t', 'u', 'v' or 'w'), shifted or not."""

    def values(xp, x, n):
        y = x + x - 1 if shifted else x
        top, bottom = (x == 1, x == 0) if shifted else (x == 1, x == -1)
        nf = n.astype(x.dtype)
        sign = xp.where(n % 2 == 1, -1, 1).astype(x.dtype)
        ends = {
            "t": (1, sign), "u": (nf + 1, sign * (nf + 1)),
            "v": (1, sign * (nf + nf + 1)), "w": (nf + nf + 1, sign),
        }[kind]  # fmt: skip
        inside = (n > threshold) & (xp.abs(y) < 1)
        t = xp.arccos(xp.where(inside, y, 0))
        if kind == "t":
            trig = xp.cos(nf * t)
        elif kind == "u":
            s = xp.sin(t)
            trig = xp.where(s != 0, xp.sin((nf + 1) * t) / s, (nf + 1) * xp.cos((nf + 1) * t) / y)
        elif kind == "v":
            trig = xp.where(xp.sin(t / 2) != 1, xp.cos((nf + 0.5) * t) / xp.cos(t / 2), ends[1])
        else:
            fallback = sign if shifted else xp.where(y > 0, nf + nf + 1, sign)
            trig = xp.where(xp.cos(t / 2) != 1, xp.sin((nf + 0.5) * t) / xp.sin(t / 2), fallback)
        first = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
        walked = xp.where(inside | top | bottom, 0, n)
        rest = _recurrence(xp, walked, first, lambda j, p, q: (y + y) * q - p)
        rest = xp.where(n == 0, 1, rest)
        return xp.where(top, ends[0], xp.where(bottom, ends[1], xp.where(inside, trig, rest)))

    return values


def _hermite(xp, x, n, probabilists: bool):
    limit = 128 if x.dtype == np.float32 else 512
    first = x if probabilists else x + x
    if probabilists:
        rest = _recurrence(xp, xp.where(n > limit, 0, n), first, lambda j, p, q: x * q - j * p)
    else:
        step = lambda j, p, q: (x + x) * q - (j + j) * p  # noqa: E731
        rest = _recurrence(xp, xp.where(n > limit, 0, n), first, step)
    return xp.where(n == 0, 1, xp.where(n > limit, xp.nan, rest))


def _laguerre(xp, x, n):
    rest = _recurrence(
        xp, xp.where(x == 0, 0, n), 1 - x, lambda j, p, q: ((j + j + (1 - x)) * q - j * p) / (j + 1)
    )
    return xp.where((x == 0) | (n == 0), 1, rest)


def _legendre(xp, x, n):
    ends = xp.where((x > 0) | (n % 2 == 0), 1, -1)
    walked = xp.where(xp.abs(x) == 1, 0, n)
    rest = _recurrence(xp, walked, x, lambda j, p, q: ((j + j + 1) * x * q - j * p) / (j + 1))
    return xp.where(xp.abs(x) == 1, ends, xp.where(n == 0, 1, rest))


def _polynomial(name: str, values, what: str):
    def op(input, n, *, out=None):  # noqa: A002 - torch's names
        no_out(name, out)
        x, xp, a, k = _operands(name, input, n)
        with np.errstate(all="ignore"):
            result = xp.where(k < 0, 0, values(xp, a, k)).astype(a.dtype, copy=False)
        return x.new(result, requires_grad=False)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.special.{name}(input, n): {what} (no gradient, as torch's)."
    return op


chebyshev_polynomial_t = _polynomial(
    "chebyshev_polynomial_t", _chebyshev("t", False, 6), "Chebyshev's T_n(input)"
)
chebyshev_polynomial_u = _polynomial(
    "chebyshev_polynomial_u", _chebyshev("u", False, 8), "Chebyshev's U_n(input)"
)
chebyshev_polynomial_v = _polynomial(
    "chebyshev_polynomial_v", _chebyshev("v", False, 8), "Chebyshev's V_n(input)"
)
chebyshev_polynomial_w = _polynomial(
    "chebyshev_polynomial_w", _chebyshev("w", False, 8), "Chebyshev's W_n(input)"
)
shifted_chebyshev_polynomial_t = _polynomial(
    "shifted_chebyshev_polynomial_t", _chebyshev("t", True, 6), "T_n(2 input - 1)"
)
shifted_chebyshev_polynomial_u = _polynomial(
    "shifted_chebyshev_polynomial_u", _chebyshev("u", True, 6), "U_n(2 input - 1)"
)
shifted_chebyshev_polynomial_v = _polynomial(
    "shifted_chebyshev_polynomial_v", _chebyshev("v", True, 6), "V_n(2 input - 1)"
)
shifted_chebyshev_polynomial_w = _polynomial(
    "shifted_chebyshev_polynomial_w", _chebyshev("w", True, 4), "W_n(2 input - 1)"
)
hermite_polynomial_h = _polynomial(
    "hermite_polynomial_h", lambda xp, x, n: _hermite(xp, x, n, False),
    "the physicists' Hermite H_n(input)",
)  # fmt: skip
hermite_polynomial_he = _polynomial(
    "hermite_polynomial_he", lambda xp, x, n: _hermite(xp, x, n, True),
    "the probabilists' Hermite He_n(input)",
)  # fmt: skip
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", _laguerre, "Laguerre's L_n(input)")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", _legendre, "Legendre's P_n(input)")
