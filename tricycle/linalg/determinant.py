"""Determinants, as ``torch.linalg``: ``det``, ``slogdet`` (its sign and the logarithm of its
absolute value, which stays finite where det over- or underflows) and ``logdet``
(``torch.logdet``: NaN for a negative determinant), batched over the leading axes.

Backwards (g the output's gradient, one number per matrix):

    det A:           dA = g det(A) A^-T = g cof(A)
    log |det A|:     dA = g A^-T                  (sign is a constant)

The cofactor matrix cof(A) = det(A) A^-T is computed from the SVD A = U diag(s) V^T as
det(U) det(V) U diag(prod_{j != i} s_j) V^T, which holds for a singular A too (where A^-T
does not exist): its gradient is what torch's is, zero when the rank is below n - 1.
"""

from collections import namedtuple

import numpy as np

from tricycle import ops, reduce
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, lapack, mT

Slogdet = namedtuple("Slogdet", ["sign", "logabsdet"])  # torch.return_types.linalg_slogdet


def _cofactors(xp, a):
    """det(a) a^-T of (..., n, n) matrices, from their SVD (defined for singular ones too)."""
    n = a.shape[-1]
    if n == 0:  # the determinant of a 0 x 0 matrix is 1, a constant
        return xp.zeros_like(a)
    U, s, Vh = xp.linalg.svd(a)
    others = reduce._product_of_others(xp, s.reshape(-1, n)).reshape(s.shape)  # prod_{j != i}
    orientation = xp.linalg.det(U) * xp.linalg.det(Vh)  # +-1: det(U) det(V)
    return orientation[..., None, None] * ((U * others[..., None, :]) @ Vh)


def det(A: Tensor) -> Tensor:
    """The determinant of square (..., n, n) matrices: shape (...)."""
    check_matrices("det", A, square=True)
    xp = A.xp

    def back_fn(g):  # (...)
        return g[..., None, None] * _cofactors(xp, A.array)

    return A.new(xp.linalg.det(A.array), args=(A,), back_fns=(back_fn,), name="det")


def slogdet(A: Tensor) -> Slogdet:
    """``(sign, logabsdet)`` of square (..., n, n) matrices, each of shape (...): det A =
    sign exp(logabsdet); sign 0 and logabsdet -inf for a singular A. Only logabsdet has a
    gradient; at a singular A it is infinite, and backward raises ``LinAlgError``."""
    check_matrices("slogdet", A, square=True)
    xp = A.xp
    sign, logabsdet = xp.linalg.slogdet(A.array)

    def back_fn(g):  # (...)
        problem = f"the gradient of log|det A| at a singular A (shape {A.shape}) is infinite"
        return g[..., None, None] * mT(lapack("slogdet", problem, xp.linalg.inv, A.array))

    return Slogdet(
        A.new(sign, requires_grad=False, name="slogdet sign"),
        A.new(logabsdet, args=(A,), back_fns=(back_fn,), name="slogdet"),
    )


def logdet(A: Tensor) -> Tensor:
    """log det A of square (..., n, n) matrices, as ``torch.logdet``: NaN where det A < 0,
    -inf where it is 0; ``slogdet``'s logabsdet (and gradient) where it is positive."""
    sign, logabsdet = slogdet(A)
    fill = A.xp.where(sign.array < 0, np.nan, -np.inf).astype(A.dtype)  # where det A <= 0
    return ops.where(sign.array > 0, logabsdet, fill)


__all__ = ["Slogdet", "det", "logdet", "slogdet"]
