"""The Cholesky factor, as ``torch.linalg.cholesky``: the lower-triangular L with L L^T = A
for symmetric positive-definite A (..., n, n), batched over the leading axes. Only A's lower
triangle is read. ``upper=True`` gives U = L^T (U^T U = A).

Backward (Murray, "Differentiation of the Cholesky decomposition", 2016; the symmetric
gradient, as torch's), with G = tril(L^T dL):

    S  = (G + tril(G, -1)^T) / 2          G's diagonal halved, mirrored to a symmetric matrix
    dA = L^-T S L^-1

A matrix that is not positive-definite is a ``LinAlgError`` on either device: numpy raises,
cupy's factorisation returns NaN or a non-positive diagonal in silence, which is checked.
"""

from tricycle import checks
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import LinAlgError, check_matrices, lapack, mT, solve, transposed


def cholesky_backward(xp, dL, L):
    """dA of L = cholesky(A) (..., n, n) for its gradient dL: symmetric, as torch's."""
    G = xp.tril(mT(L) @ dL)
    S = 0.5 * (G + mT(xp.tril(G, -1)))  # symmetric, the diagonal halved
    dA = solve(mT(L), S)  # L^-T S
    return mT(solve(mT(L), mT(dA)))  # (L^-T S) L^-1


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L (lower triangular, positive diagonal) with L L^T = A, or U = L^T if ``upper``, for
    symmetric positive-definite A (..., n, n); ``LinAlgError`` if an A is not."""
    check_matrices("cholesky", A, square=True)
    checks.boolean("cholesky", "upper", upper)
    if upper:
        return transposed(cholesky(A))
    xp = A.xp
    problem = f"the matrices A (shape {A.shape}) must be symmetric positive-definite"
    L = lapack("cholesky", problem, xp.linalg.cholesky, A.array)  # (..., n, n)
    if not bool((xp.diagonal(L, axis1=-2, axis2=-1) > 0).all()):  # a factorisation that stopped
        raise LinAlgError(f"cholesky: {problem}")

    def back_fn(dL):
        return cholesky_backward(xp, dL, L)

    return A.new(L, args=(A,), back_fns=(back_fn,), name="cholesky")


__all__ = ["cholesky", "cholesky_backward"]
