"""A few extreme eigenpairs of a symmetric (generalised) eigenproblem A x = lambda B x, as
``torch.lobpcg``: Knyazev's locally optimal block preconditioned conjugate gradient. Each
step takes the Rayleigh-Ritz pairs of A on the span of the block X, its preconditioned
residuals W = iK (A X - B X diag(E)) and the previous directions P, all made B-orthonormal
by the eigendecomposition of their Gram matrix (directions it finds dependent, below
``tol`` in relative size, are dropped); it stops when every wanted residual is below
``tol`` times (||A|| + |lambda| ||B||) ||x|| (Frobenius norms), or after ``niter`` steps.

torch's arguments, defaults and checks (A square, at least 3 n rows, X (m, n), tol the
square root of the dtype's eps, ``largest`` True); its ``method`` ("ortho" or "basic")
and the ``ortho_*`` and ``tracker`` options are accepted and change nothing here: the
orthonormalisation is the one above. X defaults to standard normal numbers from tricycle's
generator, so results agree with torch's in eigenvalues and eigenvector subspaces, not in
signs. Batches are solved matrix by matrix, as torch's. A sparse A or B (COO or CSR) is
taken as its dense matrix (``to_dense()``; torch's keeps it sparse).

Gradient, as torch's (for B = None: torch refuses one with B too): A is read symmetrised,
(A + A^T) / 2, and for eigenpairs (lambda_i, x_i) with gradients g_i and G_i
dA = sym(sum_i g_i x_i x_i^T - (A - lambda_i I)^+ G_i x_i^T), the pseudo-inverse taken on
x_i's complement (the solve of A - lambda_i I + x_i x_i^T), which is the eigenvectors'
exact derivative for distinct eigenvalues.
"""

import math

import numpy as np

from tricycle import checks, factories
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, dense_matrix, mT


def _orthonormal(xp, S, B, tol: float):
    """The span of S's columns, B-orthonormal, dependent directions dropped."""
    gram = mT(S) @ (S if B is None else B @ S)
    scale = 1 / xp.sqrt(xp.maximum(xp.abs(xp.diagonal(gram)), 1e-300))
    values, vectors = xp.linalg.eigh(gram * scale[:, None] * scale[None, :])
    keep = values > tol * max(float(values[-1]), 0)
    return (S * scale) @ (vectors[:, keep] / xp.sqrt(values[keep]))


def _one(xp, A, B, X, iK, n, k, niter, tol, largest):
    """(E (k,), X (m, k)) of one matrix A, from the starting block X (m, n)."""
    times_b = (lambda Y: Y) if B is None else (lambda Y: B @ Y)
    norm_a = float(xp.linalg.norm(A))  # Frobenius: cheap, and no smaller than the 2-norm
    norm_b = 1.0 if B is None else float(xp.linalg.norm(B))
    S, previous = X, None
    for _ in range(niter + 1):
        S = _orthonormal(xp, S, B, tol)
        values, vectors = xp.linalg.eigh(mT(S) @ A @ S)
        order = xp.argsort(-values if largest else values)[:n]
        E, X = values[order], S @ vectors[:, order]
        R = A @ X - times_b(X) * E
        size = (norm_a + xp.abs(E) * norm_b) * xp.linalg.norm(X, axis=0)
        if bool((xp.linalg.norm(R, axis=0)[:k] <= tol * size[:k]).all()):
            break
        W = R if iK is None else iK @ R
        # the directions X moved in: with X and W, they span what X, W and P span
        moved = [] if previous is None else [X - previous]
        S, previous = xp.concatenate([X, W] + moved, axis=1), X
    return E[:k], X[:, :k]


def _backward_a(xp, A, E, X, gE, gX):
    """dA for the eigenpairs (E, X) of the symmetrised A with gradients gE, gX."""
    m = A.shape[-1]
    dA = (X * (0 if gE is None else gE)) @ mT(X)
    if gX is not None:
        eye = xp.eye(m, dtype=A.dtype)
        for i in range(X.shape[1]):
            x = X[:, i : i + 1]
            g = gX[:, i : i + 1] - x @ (mT(x) @ gX[:, i : i + 1])  # on x's complement
            dA = dA - xp.linalg.solve(A - E[i] * eye + x @ mT(x), g) @ mT(x)
    return (dA + mT(dA)) / 2


def lobpcg(  # noqa: PLR0913 - torch's signature
    A: Tensor,
    k: int | None = None,
    B: Tensor | None = None,
    X: Tensor | None = None,
    n: int | None = None,
    iK: Tensor | None = None,  # noqa: N803
    niter: int | None = None,
    tol: float | None = None,
    largest: bool | None = None,
    method: str | None = None,
    tracker=None,
    ortho_iparams: dict | None = None,
    ortho_fparams: dict | None = None,
    ortho_bparams: dict | None = None,
):
    """torch.lobpcg: ``(E, X)``, the k largest (or smallest) eigenvalues E (..., k) of
    A x = E B x for symmetric A (..., m, m) (B positive-definite, the identity if None) and
    their B-orthonormal eigenvectors X (..., m, k)."""
    op = "lobpcg"
    A, B = dense_matrix(A), dense_matrix(B)
    check_matrices(op, A, square=True)
    if B is not None and (not isinstance(B, Tensor) or B.shape != A.shape):
        raise ValueError(f"{op}: A and B must have same shape, got {A.shape} vs {B.shape}")
    checks.one_of((None, "ortho", "basic"))(op, "method", method)
    checks.integer(op, "niter", niter, low=-1, optional=True)
    largest = True if largest is None else checks.boolean(op, "largest", largest)
    tol = math.sqrt(np.finfo(A.dtype).eps) if tol is None else tol
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    checks.integer(op, "k", k, low=1)
    if k > n:
        raise ValueError(f"{op}: k={k} eigenpairs asked for from a block of n={n} columns")
    if m < 3 * n:
        raise ValueError(
            f"{op}: LOBPCG algorithm is not applicable when the number of A rows (={m}) is "
            f"smaller than 3 x the number of requested eigenpairs (={n})"
        )
    if X is not None and X.shape[-2:] != (m, n):
        raise ValueError(f"{op}: X {X.shape} must be (..., {m}, {n}) for A {A.shape}")
    xp = A.xp
    niter = 1000 if niter is None else 10**9 if niter < 0 else niter  # -1: until converged
    batch = A.shape[:-2]
    a = (A.array + mT(A.array)) / 2
    b = None if B is None else B.array
    start = X.array if X is not None else None
    E_out = xp.empty(batch + (k,), dtype=A.dtype)
    X_out = xp.empty(batch + (m, k), dtype=A.dtype)
    for index in np.ndindex(*batch):
        x0 = start[index] if start is not None and start.ndim > 2 else start
        if x0 is None:
            x0 = factories.randn(m, n, dtype=A.dtype, device=A.device).array
        E_out[index], X_out[index] = _one(
            xp, a[index], None if b is None else b[index], x0,
            None if iK is None else iK.array, n, k, niter, tol, largest,
        )  # fmt: skip

    def refuse_b(dout):
        raise ValueError("lobpcg.backward does not support backward with B != I")

    def dA_of(gE=None, gX=None):
        if B is not None:
            refuse_b(gE)
        dA = xp.empty(A.shape, dtype=A.dtype)
        for index in np.ndindex(*batch):
            dA[index] = _backward_a(
                xp, a[index], E_out[index], X_out[index],
                None if gE is None else gE[index], None if gX is None else gX[index],
            )  # fmt: skip
        return dA

    E = A.new(E_out, args=(A,), back_fns=(lambda g: dA_of(gE=g),), name="lobpcg E")
    V = A.new(X_out, args=(A,), back_fns=(lambda g: dA_of(gX=g),), name="lobpcg X")
    return E, V


__all__ = ["lobpcg"]
