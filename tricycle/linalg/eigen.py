"""The eigendecomposition of symmetric matrices, as ``torch.linalg.eigh`` and ``eigvalsh``:
A = Q diag(lambda) Q^T for A (..., n, n), the eigenvalues ascending, batched over the
leading axes. Only one triangle of A is read: the lower one (``UPLO="L"``) or the upper.

Backward (the same formula as torch's, for the symmetric A):

    dA = Q (diag(dlambda) + skew(Q^T dQ) / E) Q^T,
         skew(X) = (X - X^T) / 2,   E_ij = lambda_j - lambda_i (i != j)

The eigenvalues' part is finite for any A; the eigenvectors' part is infinite or NaN where
two eigenvalues are equal (an eigenvector of a repeated eigenvalue is not unique), as
torch's. A loss must not depend on the sign of an eigenvector, which is arbitrary.
``eigvalsh`` is ``eigh``'s eigenvalues when a gradient is needed, ``xp.linalg.eigvalsh``
when not.
"""

from collections import namedtuple

import numpy as np

from tricycle import checks
from tricycle.graph import Node as Tensor
from tricycle.graph import grad_enabled
from tricycle.linalg.matrices import check_matrices, lapack, mT

Eigh = namedtuple("Eigh", ["eigenvalues", "eigenvectors"])  # torch.return_types.linalg_eigh


def eigh_backward(xp, dlambda, dQ, eigenvalues, Q):
    """dA of A = Q diag(eigenvalues) Q^T for the gradients ``dlambda`` (..., n) and ``dQ``
    (..., n, n), either of them None (no gradient)."""
    inner = 0
    if dQ is not None:
        X = mT(Q) @ dQ
        E = eigenvalues[..., None, :] - eigenvalues[..., :, None]  # E_ij = lambda_j - lambda_i
        n = eigenvalues.shape[-1]
        E = E + xp.eye(n, dtype=E.dtype)  # the diagonal, where skew(X) is 0, divided by 1
        with np.errstate(divide="ignore", invalid="ignore"):  # repeated eigenvalues: as torch's
            inner = 0.5 * (X - mT(X)) / E
    if dlambda is not None:
        inner = inner + dlambda[..., None, :] * xp.eye(dlambda.shape[-1], dtype=dlambda.dtype)
    return Q @ inner @ mT(Q)


def _uplo(op: str, UPLO) -> str:  # noqa: N803 - torch's name
    checks.text(op, "UPLO", UPLO)
    if UPLO.upper() not in ("L", "U"):
        checks.fail(op, "UPLO", "'L' or 'U' (the triangle read)", UPLO)
    return UPLO.upper()


def eigh(A: Tensor, UPLO: str = "L") -> Eigh:  # noqa: N803 - torch's name
    """``(eigenvalues, eigenvectors)`` of symmetric A (..., n, n): (..., n) ascending and
    (..., n, n) with the eigenvectors as columns."""
    check_matrices("eigh", A, square=True)
    xp = A.xp
    problem = f"the eigenvalues of A (shape {A.shape}) did not converge"
    eigenvalues, Q = lapack("eigh", problem, xp.linalg.eigh, A.array, _uplo("eigh", UPLO))

    def dA_of_eigenvalues(dlambda):
        return eigh_backward(xp, dlambda, None, eigenvalues, Q)

    def dA_of_eigenvectors(dQ):
        return eigh_backward(xp, None, dQ, eigenvalues, Q)

    return Eigh(
        A.new(eigenvalues, args=(A,), back_fns=(dA_of_eigenvalues,), name="eigh eigenvalues"),
        A.new(Q, args=(A,), back_fns=(dA_of_eigenvectors,), name="eigh eigenvectors"),
    )


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803 - torch's name
    """The eigenvalues of symmetric A (..., n, n), ascending: (..., n)."""
    if isinstance(A, Tensor) and A.requires_grad and grad_enabled():
        return eigh(A, UPLO).eigenvalues  # the backward needs the eigenvectors
    check_matrices("eigvalsh", A, square=True)
    problem = f"the eigenvalues of A (shape {A.shape}) did not converge"
    eigenvalues = lapack(
        "eigvalsh", problem, A.xp.linalg.eigvalsh, A.array, _uplo("eigvalsh", UPLO)
    )
    return A.new(eigenvalues, requires_grad=False, name="eigvalsh")


__all__ = ["Eigh", "eigh", "eigh_backward", "eigvalsh"]
