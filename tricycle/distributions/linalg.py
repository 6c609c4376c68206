"""The two matrix ops a multivariate normal needs, with closed-form backwards: ``cholesky``
(the lower factor L of a symmetric positive-definite A = L L^T) and ``solve_triangular``
(X = L^-1 B for a lower-triangular L). Both work on the last two axes, batched over the
others (broadcast), with the tensor's array module (numpy or cupy).

Backwards (gradients named ``d...``):

    X = L^-1 B:   dB = L^-T dX,   dL = -tril(dB X^T)
    L = chol(A):  G = tril(L^T dL), with its diagonal halved and mirrored to a symmetric
                  matrix S = (G + tril(G, -1)^T) / 2;   dA = L^-T S L^-1

(Murray, "Differentiation of the Cholesky decomposition", 2016; the symmetric gradient,
as torch's.) A solve here is the general ``xp.linalg.solve``: numpy has no triangular one.
"""

import numpy as np

from tricycle import binary, checks
from tricycle.tensor import Tensor


def _check_square(op: str, a: Tensor) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        checks.fail(op, "the shape", "(..., n, n): square matrices on the last two axes", a.shape)


def _solve(xp, a, b):
    """a^-1 b for (..., n, n) a and (..., n, k) b, their leading axes broadcast first."""
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, lead + a.shape[-2:])
    b = xp.broadcast_to(b, lead + b.shape[-2:])
    return xp.linalg.solve(a, b)


def _transpose(a):
    return a.swapaxes(-1, -2)


def solve_triangular(L: Tensor, B: Tensor) -> Tensor:
    """X = L^-1 B: L (..., n, n) lower triangular with a non-zero diagonal (its upper
    triangle is ignored), B (..., n, k), the leading axes broadcast."""
    _check_square("solve_triangular", L)
    if B.ndim < 2 or B.shape[-2] != L.shape[-1]:
        expected = f"(..., {L.shape[-1]}, k) for L of shape {L.shape}"
        checks.fail("solve_triangular", "B's shape", expected, B.shape)
    xp = L.xp
    lower = xp.tril(L.array)  # the upper triangle is never read, as torch's
    X = _solve(xp, lower, B.array)  # (..., n, k)

    def dL_of(dX):
        dB = _solve(xp, _transpose(lower), dX)
        return binary.unbroadcast(-xp.tril(dB @ _transpose(X)), L.shape)

    def dB_of(dX):
        return binary.unbroadcast(_solve(xp, _transpose(lower), dX), B.shape)

    return L.new(X, args=(L, B), back_fns=(dL_of, dB_of), name="solve_triangular")


def cholesky(A: Tensor) -> Tensor:
    """The lower-triangular L with L L^T = A, for symmetric positive-definite A (..., n, n)."""
    _check_square("cholesky", A)
    xp = A.xp
    try:
        L = xp.linalg.cholesky(A.array)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"cholesky: the matrices (of shape {A.shape}) must be symmetric positive-definite"
        ) from None

    def back_fn(dL):
        G = xp.tril(_transpose(L) @ dL)
        S = 0.5 * (G + _transpose(xp.tril(G, -1)))  # symmetric, the diagonal halved
        dA = _solve(xp, _transpose(L), S)  # L^-T S
        return _transpose(_solve(xp, _transpose(L), _transpose(dA)))  # (L^-T S) L^-1

    return A.new(L, args=(A,), back_fns=(back_fn,), name="cholesky")


__all__ = ["cholesky", "solve_triangular"]
