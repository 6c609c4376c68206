"""torch's special functions, each an op with its derivative beside it: the error functions
``erf``, ``erfc``, ``erfcx``, ``erfinv``; the normal distribution's ``ndtr``, ``ndtri`` and
``log_ndtr``; the gamma family ``lgamma`` (``gammaln``), ``digamma`` (``psi``),
``polygamma``, ``mvlgamma`` (``multigammaln``); the modified Bessel functions ``i0``, ``i0e``,
``i1``, ``i1e``; ``entr``, ``xlog1py`` and the Hurwitz ``zeta``; and, with no derivative as
torch's, ``bessel_j0``, ``bessel_j1``, ``bessel_y0``, ``bessel_y1``, ``modified_bessel_k0``
and ``modified_bessel_k1``.

The values are scipy's (``scipy.special``) on the CPU and cupy's (``cupyx.scipy.special``) on
a GPU, through ``tricycle.backend.special_functions`` (imported on the first call). An
integer tensor becomes float32, as torch's; float16 and bfloat16 are computed in float32 and
given back in their dtype. The derivatives are the closed forms (d/dx lgamma = digamma,
d/dx i0 = i1 ...); ``zeta``'s in its first argument is not implemented, as torch's (its
backward raises), and in its second is -s zeta(s + 1, q). torch's functions of
the same names at the top level and as Tensor methods (``x.lgamma()``, ``x.polygamma(n)``),
and the module ``tricycle.special`` as ``torch.special``.
"""

import math

import numpy as np

from tricycle import backend, checks
from tricycle.torch_functions import no_out, tensor_input
from tricycle.torch_pointwise import of_one, of_two

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_ONE_OVER_SQRT_2PI = 1 / math.sqrt(2 * math.pi)


def scipy(xp, name: str, *arrays):
    """``special.<name>(*arrays)`` of ``xp``'s special functions, in the first array's dtype
    (float16 and bfloat16 through float32, which every library has)."""
    dtype = arrays[-1].dtype
    wide = [a.astype(np.float32) if a.dtype.itemsize < 4 else a for a in arrays]
    return getattr(backend.special_functions(xp), name)(*wide).astype(dtype, copy=False)


def _special(name: str, derivative, what: str, scipy_name: str | None = None):
    """torch.<name>(input): scipy's ``scipy_name`` (``name`` by default), of gradient
    ``dout * derivative(xp, a, out)``."""
    return of_one(name, lambda xp, a: scipy(xp, scipy_name or name, a), derivative, what)


# ------------------------------------------------------------------ error functions
erf = _special("erf", lambda xp, a, out: _TWO_OVER_SQRT_PI * xp.exp(-a * a), "the error function")
erfc = _special(
    "erfc", lambda xp, a, out: -_TWO_OVER_SQRT_PI * xp.exp(-a * a), "1 - erf(input), exact"
)
erfcx = _special(
    "erfcx", lambda xp, a, out: 2 * a * out - _TWO_OVER_SQRT_PI,
    "exp(input ** 2) * erfc(input), without overflow",
)  # fmt: skip
erfinv = _special(
    "erfinv", lambda xp, a, out: (math.sqrt(math.pi) / 2) * xp.exp(out * out),
    "the inverse of erf on (-1, 1); -inf and inf at -1 and 1",
)  # fmt: skip
ndtr = _special(
    "ndtr", lambda xp, a, out: _ONE_OVER_SQRT_2PI * xp.exp(-a * a / 2),
    "the standard normal's distribution function",
)  # fmt: skip
ndtri = _special(
    "ndtri", lambda xp, a, out: math.sqrt(2 * math.pi) * xp.exp(out * out / 2),
    "the inverse of ndtr on (0, 1)",
)  # fmt: skip
log_ndtr = _special(
    "log_ndtr", lambda xp, a, out: _ONE_OVER_SQRT_2PI * xp.exp(-a * a / 2 - out),
    "log(ndtr(input)), exact far in the left tail",
)  # fmt: skip


# ------------------------------------------------------------------ gamma
lgamma = _special(
    "lgamma", lambda xp, a, out: scipy(xp, "digamma", a),
    "log |Gamma(input)|, inf at the poles 0, -1, -2 ...", "gammaln",
)  # fmt: skip
digamma = _special(
    "digamma", lambda xp, a, out: scipy(xp, "polygamma", xp.ones_like(a), a),
    "d/dx lgamma(x); -inf at 0 and NaN at the negative integers", "psi",
)  # fmt: skip
gammaln, psi = lgamma, digamma  # torch.special's names


def polygamma(n: int, input, *, out=None):  # noqa: A002 - torch's names
    """torch.polygamma: the n-th derivative of digamma (n >= 0; digamma itself for 0); its
    derivative is polygamma(n + 1)."""
    no_out("polygamma", out)
    x = tensor_input("polygamma", input)
    n = checks.integer("polygamma", "n", n, low=0)
    order = lambda xp, a, k: xp.full_like(a, k)  # noqa: E731 - scipy takes n as an array
    op = of_one(
        "polygamma",
        lambda xp, a: scipy(xp, "polygamma", order(xp, a, n), a),
        lambda xp, a, _: scipy(xp, "polygamma", order(xp, a, n + 1), a),
        "",
    )
    return op(x)


def mvlgamma(input, p: int, *, out=None):  # noqa: A002
    """torch.mvlgamma (``multigammaln``): the log of the multivariate gamma function of
    dimension ``p``, sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi), as a sum of ``lgamma``."""
    no_out("mvlgamma", out)
    x = tensor_input("mvlgamma", input)
    p = checks.integer("mvlgamma", "p", p, low=1)
    x = x if backend.is_float(x.dtype) else x.to(dtype=backend.DEFAULT_FLOAT)
    halves = x.new(x.xp.arange(p, dtype=x.dtype) / 2, requires_grad=False)  # (p,)
    terms = lgamma(x.unsqueeze(-1) - halves)  # (..., p)
    return terms.sum(-1) + p * (p - 1) / 4 * math.log(math.pi)


def multigammaln(input, p: int, *, out=None):  # noqa: A002
    """torch.special.multigammaln: ``mvlgamma``."""
    return mvlgamma(input, p, out=out)


# ------------------------------------------------------------------ Bessel
i0 = _special(
    "i0", lambda xp, a, out: scipy(xp, "i1", a), "the modified Bessel function I0; d/dx = I1"
)
i0e = _special(
    "i0e", lambda xp, a, out: scipy(xp, "i1e", a) - xp.sign(a) * out,
    "exp(-|input|) I0(input)",
)  # fmt: skip


def _i1_derivative(xp, a, out):
    """I1' = I0 - I1 / x, 1/2 at 0."""
    safe = xp.where(a == 0, 1, a)
    return xp.where(a == 0, 0.5, scipy(xp, "i0", a) - out / safe)


def _i1e_derivative(xp, a, out):
    """(exp(-|x|) I1)' = exp(-|x|) I0 - (sign(x) + 1 / x) exp(-|x|) I1, 1/2 at 0."""
    safe = xp.where(a == 0, 1, a)
    return xp.where(a == 0, 0.5, scipy(xp, "i0e", a) - out * (xp.sign(a) + 1 / safe))


i1 = _special("i1", _i1_derivative, "the modified Bessel function I1")
i1e = _special("i1e", _i1e_derivative, "exp(-|input|) I1(input)")


bessel_j0 = _special("bessel_j0", None, "the Bessel function J0", "j0")
bessel_j1 = _special("bessel_j1", None, "the Bessel function J1", "j1")
bessel_y0 = _special("bessel_y0", None, "the Bessel function Y0", "y0")
bessel_y1 = _special("bessel_y1", None, "the Bessel function Y1", "y1")
modified_bessel_i0 = _special("modified_bessel_i0", None, "I0", "i0")
modified_bessel_i1 = _special("modified_bessel_i1", None, "I1", "i1")
modified_bessel_k0 = _special("modified_bessel_k0", None, "K0", "k0")
modified_bessel_k1 = _special("modified_bessel_k1", None, "K1", "k1")


# ------------------------------------------------------------------ entropy and friends
def _entr(xp, a):
    """-x log x for x > 0, 0 at 0, -inf for x < 0 (NaN for NaN)."""
    return xp.where(a > 0, -a * xp.log(xp.where(a > 0, a, 1)), xp.where(a == 0, 0, -xp.inf))


entr = of_one(
    "entr", lambda xp, a: _entr(xp, a).astype(a.dtype, copy=False),
    lambda xp, a, out: -(xp.log(a) + 1), "-input log(input), elementwise entropy",
)  # fmt: skip


def _xlog1py(xp, a, b):
    return xp.where((a == 0) & (b == b), 0, a * xp.log1p(b))


xlog1py = of_two(
    "xlog1py", _xlog1py,
    lambda xp, a, b, out, d: (
        xp.where((a == 0) & (b <= -1), 0, _xlog1py(xp, d, b)), d * a / (1 + b)),
    "input * log1p(other), 0 where input is 0 (unless other is NaN); input's gradient is "
    "xlog1py(dout, other), 0 where input is 0 and other <= -1, as torch's",
)  # fmt: skip
zeta = of_two(
    "zeta", lambda xp, a, b: scipy(xp, "zeta", a, b),
    lambda xp, a, b, out, dout: (None, -dout * a * scipy(xp, "zeta", a + 1, b)),
    "the Hurwitz zeta function, sum over k >= 0 of (k + other) ** -input; other's gradient "
    "is -input zeta(input + 1, other), input's is not implemented, as torch's",
)  # fmt: skip
