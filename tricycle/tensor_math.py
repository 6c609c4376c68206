"""torch's ``Tensor`` methods of the pointwise math, special functions, statistics and products
of ``tricycle.torch_pointwise``, ``torch_special``, ``torch_statistics`` and
``torch_products``, and of torch's older linear algebra (``x.cholesky()``, ``b.lu_solve(LU,
pivots)``: ``tricycle.linalg.legacy``, through ``linalg.tensor_methods``):
``TorchMathMethods``, a base class of ``tricycle.tensor_torch.TorchTensorMethods``.

Each method calls the function of its name (the tensor first), importing its module on the
first call (``tensor_extra.imported``), so that importing the tensor still loads the engine's
core alone. ``x.polygamma(n)`` takes the order after the tensor, as torch's; ``real`` and
``imag`` are attributes, as torch's: a real tensor's ``real`` is itself and its ``imag`` is
refused, as torch's. The in-place forms torch has (``exp_avg_sq.addcmul_(g, g, value=1 -
beta2)``, ``x.lgamma_()``) follow ``add_``'s rule (``tricycle.tensor_inplace``, as
``tensor_extra``'s ``sin_``).
"""

import importlib

from tricycle.tensor_extra import _written, imported


class TorchMathMethods:
    """The methods of this module's doc."""

    __slots__ = ()

    exp2, expm1, deg2rad, rad2deg, sinc, frac, fix, sgn, signbit, logit, frexp = imported(
        "torch_pointwise", "exp2 expm1 deg2rad rad2deg sinc frac fix sgn signbit logit frexp"
    )
    angle, conj, xlogy, atan2, arctan2, hypot, logaddexp, logaddexp2, copysign = imported(
        "torch_pointwise", "angle conj xlogy atan2 arctan2 hypot logaddexp logaddexp2 copysign"
    )
    ldexp, float_power, fmax, fmin, heaviside, addcmul, addcdiv = imported(
        "torch_pointwise", "ldexp float_power fmax fmin heaviside addcmul addcdiv"
    )
    erf, erfc, erfinv, lgamma, digamma, i0, mvlgamma = imported(
        "torch_special", "erf erfc erfinv lgamma digamma i0 mvlgamma"
    )
    aminmax, cummax, cummin, logcumsumexp, diff, cov, corrcoef, renorm, dist = imported(
        "torch_statistics", "aminmax cummax cummin logcumsumexp diff cov corrcoef renorm dist"
    )
    inner, vdot, addmv, addbmm, baddbmm = imported(
        "torch_products", "inner vdot addmv addbmm baddbmm"
    )
    cholesky, cholesky_inverse, cholesky_solve, lu, lu_solve, qr = imported(
        "linalg.tensor_methods", "cholesky cholesky_inverse cholesky_solve lu lu_solve qr"
    )
    matrix_exp, triangular_solve = imported("linalg.tensor_methods", "matrix_exp triangular_solve")

    addcmul_, addcdiv_, exp2_, expm1_, frac_, fix_, sgn_, logit_, sinc_ = map(
        _written, "addcmul addcdiv exp2 expm1 frac fix sgn logit sinc".split()
    )
    deg2rad_, rad2deg_, xlogy_, atan2_, arctan2_, hypot_, copysign_, ldexp_ = map(
        _written, "deg2rad rad2deg xlogy atan2 arctan2 hypot copysign ldexp".split()
    )
    float_power_, heaviside_, erf_, erfc_, erfinv_, lgamma_, digamma_, i0_ = map(
        _written, "float_power heaviside erf erfc erfinv lgamma digamma i0".split()
    )
    polygamma_, mvlgamma_, renorm_, addmv_, addbmm_, baddbmm_ = map(
        _written, "polygamma mvlgamma renorm addmv addbmm baddbmm".split()
    )

    def polygamma(self, n: int):
        """torch.Tensor.polygamma: ``tricycle.torch_special.polygamma(n, self)``."""
        return importlib.import_module("tricycle.torch_special").polygamma(n, self)

    @property
    def real(self):
        """torch.Tensor.real of a real tensor: the tensor itself."""
        return self

    @property
    def imag(self):
        """torch.Tensor.imag: refused for a real tensor, as torch's (``torch_pointwise.imag``)."""
        return importlib.import_module("tricycle.torch_pointwise").imag(self)
