"""Double backward of the special functions whose slopes ``second_order_pointwise`` lacked
(``create_graph=True``: ``tricycle.second_order``): the exponentially scaled Bessel functions,
the incomplete gamma functions, the Hurwitz zeta function, and the few elementwise ops of
``torch_pointwise``/``torch_numeric`` with constant slopes.

Each slope is written again as a Tensor of the op's inputs (and of its output, the node) with
differentiable ops, as the first derivatives torch writes::

    i0e(x) = e^-|x| I0(x):       i0e' = i1e(x) - sign(x) i0e(x)
    i1e(x) = e^-|x| I1(x):       i1e' = i0e(x) - i1e(x) (sign(x) + 1 / x),   1/2 at 0
    igamma(a, x) = P(a, x):      dP/dx = e^((a - 1) log x - x - lgamma(a)),  igammac's -dP/dx
    zeta(s, q):                  dzeta/dq = -s zeta(s + 1, q)
    copysign(a, b):              sign(copysign(a, b)) sign(a) (0 at a = 0), 0 for b
    nextafter(a, b):             1 for a (0 where a = b: the result is b), 0 for b
    deg2rad, rad2deg:            pi / 180, 180 / pi

so the derivative of a slope reaches every input it is a function of: igamma's slope in x
depends on a, which gives igamma a second derivative in a though its first in a is, as
torch's, not implemented (``None`` here: ``second_order_pointwise`` raises naming it). The
tables are keyed by the op's node name and read by ``second_order_pointwise``'s rules of
``of_one`` and ``of_two``.
"""

import importlib
import math

from tricycle.second_order_base import constant


def _special(name: str):
    return getattr(importlib.import_module("tricycle.torch_special"), name)


def _sign(x):
    """sign(x) as a constant (its derivative is 0 wherever it has one)."""
    return constant(x, x.xp.sign(x.array))


def _i1e_slope(x, y, fn):
    nonzero = importlib.import_module("tricycle.second_order_pointwise")._nonzero
    i0e, i1e = _special("i0e"), _special("i1e")
    return nonzero(x, lambda s: i0e(s) - i1e(s) * (_sign(s) + 1 / s), 0.5)


# name of the op's node -> slope(x, y, back_fn) as a differentiable Tensor (or a number)
ONE = {
    "i0e": lambda x, y, fn: _special("i1e")(x) - _sign(x) * y,
    "i1e": _i1e_slope,
    "deg2rad": lambda x, y, fn: math.pi / 180,
    "rad2deg": lambda x, y, fn: 180 / math.pi,
}


def _density(a, x):
    """x^(a-1) e^-x / Gamma(a), written in a and x: d/dx of P(a, x)."""
    return ((a - 1) * x.log() - x - _special("lgamma")(a)).exp()


def _copysign(a, b, y, g):
    xp, values = a.xp, a.array
    ratio = xp.where(values == 0, 0, y.array / xp.where(values == 0, 1, values))  # +-1, 0 at 0
    return g * constant(y, ratio.astype(y.dtype, copy=False)), g * 0


# name -> (a, b, out, g) -> (da, db), before summing back over broadcast axes; None where
# the op has no derivative in that input
TWO = {
    "igamma": lambda a, b, y, g: (None, g * _density(a, b)),
    "igammac": lambda a, b, y, g: (None, -g * _density(a, b)),
    "zeta": lambda a, b, y, g: (None, -g * a * _special("zeta")(a + 1, b)),
    "copysign": _copysign,
    "nextafter": lambda a, b, y, g: (g * constant(y, (a.array != b.array).astype(y.dtype)), g * 0),
}
