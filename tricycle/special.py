"""``tricycle.special`` as ``torch.special``: torch's special functions under its names, from
the modules that define them (``tricycle.torch_special``: the gamma, error, normal and
Bessel functions, ``entr``, ``xlog1py``, ``zeta``; ``tricycle.torch_pointwise``: ``exp2``,
``expm1``, ``logit``, ``sinc``, ``xlogy``; ``tricycle.torch_math``: ``log1p``, ``logsumexp``,
``round``; ``tricycle.special_polynomials``: the Chebyshev, Hermite, Laguerre and Legendre
polynomials; ``tricycle.special_more``: ``airy_ai``, ``gammainc``, ``gammaincc``, the scaled
``modified_bessel_k0``/``k1``, ``spherical_bessel_j0``), ``expit`` (the sigmoid) and
``softmax`` / ``log_softmax`` with torch.special's signature (``dim`` required). Reached as
``tricycle.special`` (``torch.special.erf(x)`` ports as ``tricycle.special.erf(x)``).
"""

from tricycle import unary
from tricycle.nn import functional
from tricycle.special_more import (  # noqa: F401 - torch.special's names
    airy_ai,
    gammainc,
    gammaincc,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from tricycle.special_polynomials import (  # noqa: F401
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from tricycle.torch_functions import tensor_input
from tricycle.torch_math import log1p, logsumexp, round  # noqa: A004, F401 - torch's names
from tricycle.torch_pointwise import exp2, expm1, logit, sinc, xlogy  # noqa: F401
from tricycle.torch_special import (  # noqa: F401
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    entr,
    erf,
    erfc,
    erfcx,
    erfinv,
    gammaln,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    multigammaln,
    ndtr,
    ndtri,
    polygamma,
    psi,
    xlog1py,
    zeta,
)


def expit(input, *, out=None):  # noqa: A002 - torch's names
    """torch.special.expit: the logistic sigmoid 1 / (1 + exp(-input))."""
    if out is not None:
        raise TypeError("expit: out= is not supported; use the returned tensor")
    return unary.sigmoid(tensor_input("expit", input))


def softmax(input, dim: int, *, dtype=None):  # noqa: A002
    """torch.special.softmax: exp(input) / its sum over ``dim``, in ``dtype`` if given."""
    return functional.softmax(tensor_input("softmax", input), dim, dtype)


def log_softmax(input, dim: int, *, dtype=None):  # noqa: A002
    """torch.special.log_softmax: log(softmax(input, dim)), computed stably."""
    return functional.log_softmax(tensor_input("log_softmax", input), dim, dtype)
