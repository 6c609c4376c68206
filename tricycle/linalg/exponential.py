"""The matrix exponential, as ``torch.linalg.matrix_exp``: exp(A) = sum_k A^k / k! of square
A (..., n, n), batched over the leading axes.

Neither numpy.linalg nor cupy.linalg has one: ``expm`` computes it by scaling and squaring
with the degree-13 Pade approximant (Higham, "The scaling and squaring method for the matrix
exponential revisited", 2005): each A is scaled by 2^-s, s the least integer with
||A 2^-s||_1 <= theta_13, then exp(A 2^-s) ~ (V - U)^-1 (V + U), with U and V the odd and
even parts of the approximant's numerator, is squared s times (each matrix its own s).

Backward (Mathias, 1996; as torch's): for a function f of a matrix, the gradient G of
f(A) reaches A as the upper-right block of f of the block matrix

    [[A^T, G], [0, A^T]]           dA = exp(that)[:n, n:]
"""

import numpy as np

from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, mT
from tricycle.linalg.matrices import solve as solve_arrays

THETA_13 = 5.371920351148152  # the largest 1-norm for which Pade 13 is exact to double's eps
PADE_13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)  # fmt: skip


def expm(xp, a):
    """exp(a) of (..., n, n) matrices ``a``."""
    b = PADE_13
    if a.size == 0:  # no matrices, or 0 x 0 ones
        return a.copy()
    norm = xp.abs(a).sum(axis=-2).max(axis=-1)  # (...): the 1-norm
    with np.errstate(divide="ignore"):  # a norm of 0: no scaling
        s = xp.ceil(xp.log2(norm / THETA_13))
    s = xp.where(xp.isfinite(s) & (s > 0), s, 0).astype(np.int64)  # (...)
    A = a / (2.0**s)[..., None, None].astype(a.dtype)
    eye = xp.eye(a.shape[-1], dtype=a.dtype)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2
             + b[1] * eye)  # fmt: skip
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = solve_arrays(V - U, V + U)
    for t in range(int(s.max())):  # each matrix squared its own s times
        R = xp.where((t < s)[..., None, None], R @ R, R)
    return R


def matrix_exp(A: Tensor) -> Tensor:
    """exp(A) of square A (..., n, n)."""
    check_matrices("matrix_exp", A, square=True)
    xp, n = A.xp, A.shape[-1]

    def back_fn(G):  # exp([[A^T, G], [0, A^T]])[:n, n:]
        AT = mT(A.array)
        top = xp.concatenate([AT, G], axis=-1)
        bottom = xp.concatenate([xp.zeros_like(AT), AT], axis=-1)
        return expm(xp, xp.concatenate([top, bottom], axis=-2))[..., :n, n:]

    return A.new(expm(xp, A.array), args=(A,), back_fns=(back_fn,), name="matrix_exp")


__all__ = ["expm", "matrix_exp"]
