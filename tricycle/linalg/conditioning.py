"""How far matrices are from singular, as ``torch.linalg``: ``matrix_rank`` (the number of
singular values above a tolerance) and ``cond`` (the condition number ||A|| ||A^-1||).

matrix_rank counts the singular values (the absolute eigenvalues of a symmetric A, with
``hermitian``) above max(atol, rtol sigma_max), rtol eps * max(m, n) when neither is given,
0 when only atol is (``pinv``'s rule). cond is sigma_max / sigma_min (p None or 2) or
sigma_min / sigma_max (-2) of ``svdvals`` for any A; for square A, sum(sigma) sum(1/sigma)
("nuc") and, for the other p, ||A||_p ||A^-1||_p of ``matrix_norm`` and ``inv_ex``, inf
where A is singular, as torch's; its gradient is theirs.
"""

import math

import numpy as np

from tricycle import checks, ops
from tricycle.graph import Node as Tensor
from tricycle.linalg.error_info import inv_ex
from tricycle.linalg.matrices import check_matrices, lapack
from tricycle.linalg.norms import matrix_norm
from tricycle.linalg.singular import kept, svdvals

COND_ORDS = (None, "fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2)


def matrix_rank(A: Tensor, *, atol=None, rtol=None, hermitian: bool = False) -> Tensor:
    """The numerical rank (...) int64 of A (..., m, n): its singular values (absolute
    eigenvalues if ``hermitian``, A symmetric and only its lower triangle read) above
    max(atol, rtol * the largest)."""
    op = "matrix_rank"
    check_matrices(op, A, square=hermitian)
    checks.non_negative(op, "atol", atol, optional=True)
    checks.non_negative(op, "rtol", rtol, optional=True)
    checks.boolean(op, "hermitian", hermitian)
    xp = A.xp
    problem = f"the {'eigenvalues' if hermitian else 'SVD'} of A (shape {A.shape}) did not converge"
    if hermitian:
        eigenvalues = lapack(op, problem, xp.linalg.eigvalsh, A.array, "L")
        S = xp.sort(xp.abs(eigenvalues), axis=-1)[..., ::-1]  # descending
    else:
        S = lapack(op, problem, lambda a: xp.linalg.svd(a, compute_uv=False), A.array)
    rank = kept(xp, S, atol, rtol, A.shape).sum(axis=-1).astype(np.int64)
    return A.new(rank, requires_grad=False, name=op)


def cond(A: Tensor, p=None) -> Tensor:
    """The condition number (...) of A (..., m, n) in the norm ``p``: None or 2 (the
    largest singular value over the smallest), -2 (the inverse), any A; "fro", "nuc", inf,
    -inf, 1, -1: ||A||_p ||A^-1||_p, square A, inf where A is singular."""
    op = "cond"
    check_matrices(op, A)
    known = p in ("fro", "nuc") if isinstance(p, str) else (p is None or checks.is_real(p))
    if not (known and p in COND_ORDS):
        checks.fail(op, "p", "None or one of 'fro', 'nuc', inf, -inf, 1, -1, 2, -2", p)
    if p in (None, 2, -2):
        S = svdvals(A)  # (..., k), descending
        largest, smallest = S[..., 0], S[..., -1]
        with np.errstate(divide="ignore", invalid="ignore"):  # a singular A: inf, as torch's
            return smallest / largest if p == -2 else largest / smallest
    check_matrices(f"{op} (p={p!r})", A, square=True)
    if p == "nuc":  # sum(S) sum(1/S), from the singular values, as torch's
        S = svdvals(A)
        with np.errstate(divide="ignore"):
            return S.sum(-1) * (1 / S).sum(-1)
    inverse, info = inv_ex(A)
    singular = info.array > 0
    inverse = ops.where(singular[..., None, None], 0.0, inverse)  # not NaN: svd would raise
    return ops.where(singular, math.inf, matrix_norm(A, p) * matrix_norm(inverse, p))


__all__ = ["cond", "matrix_rank"]
