"""The rest of torch.special's functions of one or two tensors: the Airy function ``airy_ai``,
the exponentially scaled modified Bessel functions of the second kind
``scaled_modified_bessel_k0`` and ``_k1`` (exp(x) K0(x), exp(x) K1(x)), the spherical Bessel
function ``spherical_bessel_j0`` (sin(x) / x), and the regularised incomplete gamma functions
``gammainc`` and ``gammaincc`` (torch's ``igamma`` and ``igammac``, at the top level and as
Tensor methods with their in-place forms).

The values are scipy's (``airy``, ``k0e``, ``k1e``, ``gammainc``, ``gammaincc``; cupy's on a
GPU, through ``tricycle.backend.special_functions``; ``airy``, which cupy may lack, is then
computed on the host), and ``spherical_bessel_j0`` is computed here as torch's (its Taylor
series below |x| = 1/2, 0 at +-inf). scipy's Airy function is the more accurate: torch's
differs by up to about 3e-6 near Ai's zeros, and far out on the negative axis (x < -1e9,
where Ai is below 1e-2 and oscillates faster than a float resolves) scipy gives NaN where
torch gives a number.

dtypes as torch's: an integer or bool input becomes float32 and float16 and bfloat16 are
refused (torch's CPU kernels have none), except ``igamma``/``igammac``, which take float16
and bfloat16 (through float32) and refuse integers, and take tensors only, as torch's.
Gradients as torch's: the functions of one tensor have none (the result never requires
grad); ``igamma(a, x)`` is differentiable in ``x`` alone (d/dx = x^(a-1) e^-x / Gamma(a),
its negative for ``igammac``), and asking for ``a``'s gradient raises NotImplementedError.
"""

import math

import numpy as np

from tricycle import backend, unary
from tricycle.torch_functions import no_out, tensor_input
from tricycle.torch_pointwise import of_two
from tricycle.torch_special import scipy


def _of_one(name: str, forward, what: str):
    """torch.special.<name>(input): ``forward(xp, a)`` of input's float array, no gradient."""

    def op(input, *, out=None):  # noqa: A002 - torch's names
        no_out(name, out)
        x = tensor_input(name, input)
        if backend.is_float(x.dtype) and np.dtype(x.dtype).itemsize < 4:
            raise NotImplementedError(f"{name}: not implemented for {np.dtype(x.dtype).name}, "
                                      "as torch's; use float32 or float64")  # fmt: skip
        a = unary.floats(x)
        with np.errstate(all="ignore"):
            result = forward(x.xp, a).astype(a.dtype, copy=False)
        return x.new(result, requires_grad=False)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.special.{name}: {what} (no gradient, as torch's)."
    return op


def _airy(xp, a):
    """Ai(a): scipy's ``airy``, on the host where ``xp``'s special functions lack it."""
    functions = backend.special_functions(xp)
    if hasattr(functions, "airy"):
        return functions.airy(a)[0]
    host = backend.special_functions(np).airy(backend.to_host_array(a))[0]
    return xp.asarray(host)


def _spherical_j0(xp, a):
    """sin(x) / x, by its Taylor series (to x^12) below |x| = 1/2 and 0 at +-inf, as torch's."""
    square = a * a
    series = 0.0
    for k in range(6, 0, -1):  # the coefficients (-1)^k / (2k + 1)!
        series = square * ((-1) ** k / math.factorial(2 * k + 1) + series)
    small = xp.abs(a) < 0.5
    ratio = xp.sin(a) / xp.where(small, 1, a)
    return xp.where(xp.isinf(a), 0, xp.where(small, 1 + series, ratio))


airy_ai = _of_one("airy_ai", _airy, "the Airy function Ai(input)")
scaled_modified_bessel_k0 = _of_one(
    "scaled_modified_bessel_k0", lambda xp, a: scipy(xp, "k0e", a), "exp(input) K0(input)"
)
scaled_modified_bessel_k1 = _of_one(
    "scaled_modified_bessel_k1", lambda xp, a: scipy(xp, "k1e", a), "exp(input) K1(input)"
)
spherical_bessel_j0 = _of_one(
    "spherical_bessel_j0", _spherical_j0, "the spherical Bessel function j0 = sin(input) / input"
)


# ------------------------------------------------------------------ incomplete gamma
def _density(xp, a, x):
    """x^(a-1) e^-x / Gamma(a): d/dx of the regularised lower incomplete gamma P(a, x)."""
    return xp.exp((a - 1) * xp.log(x) - x - scipy(xp, "gammaln", a))


_igamma = of_two(
    "igamma", lambda xp, a, b: scipy(xp, "gammainc", a, b),
    lambda xp, a, b, out, dout: (None, dout * _density(xp, a, b)), "",
)  # fmt: skip
_igammac = of_two(
    "igammac", lambda xp, a, b: scipy(xp, "gammaincc", a, b),
    lambda xp, a, b, out, dout: (None, -dout * _density(xp, a, b)), "",
)  # fmt: skip


def float_tensors(op: str, input, other) -> None:  # noqa: A002 - torch's names
    """torch's igamma takes two float tensors: a TypeError or NotImplementedError otherwise."""
    for name, value in (("input", input), ("other", other)):
        tensor_input(op, value, name)
        if not backend.is_float(value.dtype):
            dtype = np.dtype(value.dtype).name
            raise NotImplementedError(f"{op}: not implemented for {name} of dtype {dtype}, "
                                      "as torch's; give floats")  # fmt: skip


def igamma(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.igamma (torch.special.gammainc): the regularised lower incomplete gamma function
    P(input, other) = gamma(input, other) / Gamma(input); differentiable in ``other`` only."""
    no_out("igamma", out)
    float_tensors("igamma", input, other)
    return _igamma(input, other)


def igammac(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.igammac (torch.special.gammaincc): the regularised upper incomplete gamma function
    Q(input, other) = 1 - P(input, other); differentiable in ``other`` only."""
    no_out("igammac", out)
    float_tensors("igammac", input, other)
    return _igammac(input, other)


def gammainc(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.special.gammainc: ``igamma``."""
    return igamma(input, other, out=out)


def gammaincc(input, other, *, out=None):  # noqa: A002 - torch's names
    """torch.special.gammaincc: ``igammac``."""
    return igammac(input, other, out=out)
