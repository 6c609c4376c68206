"""Randomised low-rank decompositions, as torch's ``svd_lowrank`` and ``pca_lowrank`` (Halko,
Martinsson and Tropp, "Finding structure with randomness", 2009, algorithms 4.4 and 5.1, the
ones torch follows):

    get_approximate_basis(A, q, niter)  Q (..., m, q), orthonormal, with Q Q^T A ~ A: the
                                        range of A R for R (n, q) standard normal, refined
                                        by ``niter`` subspace iterations (QR after each
                                        product with A^T and A)
    svd_lowrank(A, q=6, niter=2, M=None) (U, S, V) with A - M ~ U diag(S) V^T: the SVD of
                                        the small Q^T (A - M), U = Q U'
    pca_lowrank(A, q=None, center=True, niter=2)  svd_lowrank of A less its column means

R is drawn from tricycle's generator (``tricycle.manual_seed`` makes it repeatable); torch
draws its own, so the two agree on the subspaces and the singular values (exactly so for a
matrix of rank at most q), not on U's and V's signs. Each is a composition of ``matmul``,
``linalg.qr`` and ``linalg.svd``, so it has their gradients, as torch's has. A sparse A
(COO or CSR) is taken as its dense matrix (``todense_matrix()``: the same results and gradients to
its values, in a dense matrix's memory; torch's keeps it sparse).
"""

from tricycle import checks, factories
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, dense_matrix, transposed
from tricycle.linalg.qr_factors import qr
from tricycle.linalg.singular import svd


def get_approximate_basis(A: Tensor, q: int, niter: int | None = 2, M: Tensor | None = None):
    """Q (..., m, q) with q orthonormal columns such that Q Q^T (A - M) approximates A - M."""
    niter = 2 if niter is None else niter
    A, M = dense_matrix(A), None if M is None else dense_matrix(M)

    def times(B, R):  # (A - M) R, or (A - M)^T R
        product = B(A) @ R
        return product if M is None else product - B(M) @ R

    R = factories.randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = qr(times(lambda X: X, R)).Q
    for _ in range(niter):
        Q = qr(times(transposed, Q)).Q
        Q = qr(times(lambda X: X, Q)).Q
    return Q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """torch.svd_lowrank: ``(U, S, V)``, U (..., m, q), S (..., q), V (..., n, q), with
    A - M ~ U diag(S) V^T (M, A's mean or any matrix broadcast to A, is optional); a q past
    min(m, n) gives min(m, n) columns (with ``niter`` > 0), as torch's."""
    op = "svd_lowrank"
    A, M = dense_matrix(A), None if M is None else dense_matrix(M)
    check_matrices(op, A)
    q = 6 if q is None else q
    checks.integer(op, "q", q, low=0)
    checks.integer(op, "niter", 2 if niter is None else niter, low=0)
    m, n = A.shape[-2:]
    if M is not None:
        check_matrices(op, M, "M")
        M = M.broadcast_to(A.shape)
    if m < n:  # the algorithm takes a tall matrix: decompose A^T = V S U^T
        A = transposed(A)
        M = None if M is None else transposed(M)
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = transposed(Q) @ A
    if M is not None:
        B = B - transposed(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    U, V = Q @ U, transposed(Vh)
    return (V, S, U) if m < n else (U, S, V)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """torch.pca_lowrank: ``(U, S, V)`` of A (..., m, n), its column means taken away first if
    ``center``; V's columns are the principal directions, S ** 2 / (m - 1) the variances
    along them. q defaults to min(6, m, n)."""
    op = "pca_lowrank"
    A = dense_matrix(A)
    check_matrices(op, A)
    checks.boolean(op, "center", center)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (checks.is_integer(q) and 0 <= q <= min(m, n)):
        raise ValueError(
            f"{op}: q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    checks.integer(op, "niter", niter, low=0)
    if center:
        A = A - A.mean(dim=(-2,), keepdim=True)
    return svd_lowrank(A, q, niter=niter)


__all__ = ["get_approximate_basis", "pca_lowrank", "svd_lowrank"]
