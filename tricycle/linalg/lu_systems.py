"""Linear systems from an LU factorisation, as ``torch.linalg.lu_solve``: X with A X = B
(``left``) or X A = B, or with A^T in A's place (``adjoint``), for A = P L U given by
``lu_factor``'s LU (..., n, n) and pivots (..., n), and B (..., n, k) (or (..., k, n) for
``left=False``), the leading axes broadcast. X = U^-1 L^-1 P^T B, each triangular system
solved by the general solve (numpy has no triangular one).

The four systems are one, M Y = C, with M = A or A^T:

    left:     A X = B      (M = A)           A^T X = B    (adjoint: M = A^T)
    right:    X A = B  <=> A^T X^T = B^T     X A^T = B <=> A X^T = B^T

Backward (G the gradient of Y): dC = M^-T G, dM = -dC Y^T, and dA (dM, or dM^T) reaches
the factors of A = P L U as (P^T dA) U^T under the diagonal (L's entries) and L^T (P^T dA)
on and above it (U's), as torch's.
"""

from tricycle import binary, checks
from tricycle.graph import Node as Tensor
from tricycle.linalg.lu_factors import permutation, rows_of, unpack
from tricycle.linalg.matrices import batch_shape, check_matrices, mT, solve


def _inverse_times(P, L, U, C, transpose: bool):
    """A^-1 C, or A^-T C if ``transpose``, for A = P L U."""
    if transpose:  # A^T = U^T L^T P^T
        return P @ solve(mT(L), solve(mT(U), C))
    return solve(U, solve(L, mT(P) @ C))


def _check_pivots(op: str, LU: Tensor, pivots) -> None:
    if not isinstance(pivots, Tensor):
        checks.fail(op, "pivots", "a Tensor (lu_factor's pivots)", pivots, TypeError)
    n = LU.shape[-1]
    if pivots.dtype.kind not in "iu" or pivots.shape != LU.shape[:-1]:
        raise ValueError(
            f"{op}: pivots must be integers of shape {LU.shape[:-1]} (LU's without its last "
            f"axis, as lu_factor returns them), got dtype {pivots.dtype} and shape {pivots.shape}"
        )
    if not bool(((pivots.array >= 1) & (pivots.array <= n)).all()):  # one value read back
        raise ValueError(f"{op}: pivots must lie in [1, {n}] (1-based rows of LU), got some "
                         "outside")  # fmt: skip


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False):
    """X with A X = B (``left``) or X A = B, A^T in A's place if ``adjoint``, for A = P L U
    given as ``lu_factor``'s ``(LU, pivots)`` (..., n, n), (..., n) and B (..., n, k) (or
    (..., k, n) if not ``left``); the leading axes broadcast."""
    op = "lu_solve"
    check_matrices(op, LU, "LU", square=True)
    check_matrices(op, B, "B")
    checks.boolean(op, "left", left)
    checks.boolean(op, "adjoint", adjoint)
    _check_pivots(op, LU, pivots)
    if B.dtype != LU.dtype:
        raise TypeError(f"{op}: LU and B must have one dtype, got {LU.dtype} and {B.dtype}")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        expected = f"(..., {n}, k)" if left else f"(..., k, {n})"
        raise ValueError(
            f"{op}: incompatible shapes of LU {LU.shape} and B {B.shape}: B must be {expected}"
        )
    batch_shape(op, LU, B)
    xp = LU.xp
    P = permutation(xp, rows_of(xp, pivots.array, n), LU.dtype)  # (..., n, n)
    L, U = unpack(xp, LU.array)
    transpose = left == adjoint  # M = A^T
    Y = _inverse_times(P, L, U, B.array if left else mT(B.array), transpose)  # M^-1 C

    def dC_of(dX):  # M^-T G
        return _inverse_times(P, L, U, dX if left else mT(dX), not transpose)

    def dB_of(dX):
        dC = dC_of(dX)
        return binary.unbroadcast(dC if left else mT(dC), B.shape)

    def dLU_of(dX):
        dM = -dC_of(dX) @ mT(Y)
        dA = mT(P) @ (mT(dM) if transpose else dM)  # P^T dA
        dLU = xp.tril(dA @ mT(U), -1) + xp.triu(mT(L) @ dA)
        return binary.unbroadcast(dLU, LU.shape)

    X = Y if left else mT(Y)
    return LU.new(X, args=(LU, B), back_fns=(dLU_of, dB_of), name=op)


__all__ = ["lu_solve"]
