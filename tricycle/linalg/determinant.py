"""Determinants, as ``torch.linalg``: ``det``, ``slogdet`` (its sign and the logarithm of its
absolute value, which stays finite where det over- or underflows) and ``logdet``
(``torch.logdet``: NaN for a negative determinant), batched over the leading axes.

Backwards (g the output's gradient, one number per matrix):

    det A:           dA = g det(A) A^-T = g cof(A)
    log |det A|:     dA = g A^-T                  (sign is a constant)

The cofactor matrix cof(A) = det(A) A^-T is computed from the SVD A = U diag(s) V^T as
det(U) det(V) U diag(prod_{j != i} s_j) V^T, which holds for a singular A too (where A^-T
does not exist; zero when the rank is below n - 1; torch 2.13 gives 0 at any exactly
singular A, this the cofactors, the derivative itself).

A complex A (complex64 or complex128) has torch's complex results and gradients (z.grad =
dL/dre + i dL/dim: ``tricycle.complex_tensor``): det is holomorphic, so dA = g conj(cof(A)),
conj(cof(A)) = conj(det(U) det(Vh)) U diag(prod_{j != i} s_j) Vh from A = U diag(s) Vh;
slogdet's sign det / |det A| is complex and has a gradient too, and (torch's)

    dA = (g_logabsdet - i im(conj(g_sign) sign)) A^-H.
"""

from collections import namedtuple

import numpy as np

from tricycle import ops, reduce
from tricycle.complex_tensor import log as complex_log
from tricycle.complex_tensor import result
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, lapack, mT

Slogdet = namedtuple("Slogdet", ["sign", "logabsdet"])  # torch.return_types.linalg_slogdet


def _cofactors(xp, a):
    """det(a) a^-T of (..., n, n) matrices, from their SVD (defined for singular ones too);
    of complex ones, its conjugate (their gradient's factor: see the module)."""
    n = a.shape[-1]
    if n == 0:  # the determinant of a 0 x 0 matrix is 1, a constant
        return xp.zeros_like(a)
    U, s, Vh = xp.linalg.svd(a)
    others = reduce._product_of_others(xp, s.reshape(-1, n)).reshape(s.shape)  # prod_{j != i}
    orientation = xp.linalg.det(U) * xp.linalg.det(Vh)  # +-1: det(U) det(V); complex: e^{i phi}
    if a.dtype.kind == "c":
        orientation = orientation.conj()
    return orientation[..., None, None] * ((U * others[..., None, :]) @ Vh)


def det(A: Tensor) -> Tensor:
    """The determinant of square (..., n, n) matrices: shape (...)."""
    check_matrices("det", A, square=True, complex_ok=True)
    xp = A.xp

    def back_fn(g):  # (...)
        return g[..., None, None] * _cofactors(xp, A.array)

    if A.dtype.kind == "c":
        return result(xp.linalg.det(A.array), (A,), (back_fn,), "det")
    return A.new(xp.linalg.det(A.array), args=(A,), back_fns=(back_fn,), name="det")


def slogdet(A: Tensor) -> Slogdet:
    """``(sign, logabsdet)`` of square (..., n, n) matrices, each of shape (...): det A =
    sign exp(logabsdet); sign 0 and logabsdet -inf for a singular A. logabsdet has a gradient
    (and a complex A's sign, det A / |det A|: see the module); at a singular A it is
    infinite, and backward raises ``LinAlgError``."""
    check_matrices("slogdet", A, square=True, complex_ok=True)
    xp = A.xp
    sign, logabsdet = xp.linalg.slogdet(A.array)

    def inverse_transposed():  # A^-T, or A^-H of a complex A
        problem = f"the gradient of log|det A| at a singular A (shape {A.shape}) is infinite"
        inverse = mT(lapack("slogdet", problem, xp.linalg.inv, A.array))
        return inverse.conj() if inverse.dtype.kind == "c" else inverse

    def back_fn(g):  # (...)
        return g[..., None, None] * inverse_transposed()

    if A.dtype.kind == "c":

        def sign_back(g):  # (...): -i im(conj(g) sign) A^-H
            return (-1j * (g.conj() * sign).imag)[..., None, None] * inverse_transposed()

        return Slogdet(
            result(sign, (A,), (sign_back,), "slogdet sign"),
            result(logabsdet, (A,), (back_fn,), "slogdet"),
        )
    return Slogdet(
        A.new(sign, requires_grad=False, name="slogdet sign"),
        A.new(logabsdet, args=(A,), back_fns=(back_fn,), name="slogdet"),
    )


def logdet(A: Tensor) -> Tensor:
    """log det A of square (..., n, n) matrices, as ``torch.logdet``: NaN where det A < 0,
    -inf where it is 0; ``slogdet``'s logabsdet (and gradient) where it is positive. Of a
    complex A: log(sign) + logabsdet, complex (torch's)."""
    sign, logabsdet = slogdet(A)
    if A.dtype.kind == "c":
        return complex_log(sign) + logabsdet
    fill = A.xp.where(sign.array < 0, np.nan, -np.inf).astype(A.dtype)  # where det A <= 0
    return ops.where(sign.array > 0, logabsdet, fill)


__all__ = ["Slogdet", "det", "logdet", "slogdet"]
