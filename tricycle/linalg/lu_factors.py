"""The LU factorisation with partial pivoting, as ``torch.linalg``: A = P L U for A (..., m, n),
batched over the leading axes, k = min(m, n), P (..., m, m) a permutation, L (..., m, k) lower
triangular with ones on its diagonal, U (..., k, n) upper triangular. ``lu`` returns P, L, U;
``lu_factor`` the compact form (L below the diagonal of one matrix, U on and above it) with
LAPACK's pivots, 1-based int32: at step i row i was swapped with row pivots[i]; and
``lu_factor_ex`` adds getrf's ``info`` (the first zero on U's diagonal, 1-based; 0 if none).

Neither numpy.linalg nor cupy.linalg has an LU factorisation: ``eliminate`` writes getrf's
algorithm with ``xp``. Gaussian elimination by blocks of columns: the columns of a block one
at a time (the row with the largest |entry| swapped up, the multipliers under the pivot, a
rank-one update of the block), then U's rows right of the block (a unit lower triangular
solve) and the trailing matrix (one matrix product). ``pivot=False`` swaps no rows (torch
computes it on a GPU only); it exists when no leading minor is singular, and is inf or NaN
where one is, as torch's.

Backward (torch's formula), G_L and G_U the gradients of L and U, for a square A:

    dA = P L^-T (tril(L^T G_L, -1) + triu(G_U U^T)) U^-T

For m > n, L = [L1; L2] with L1 square and L2 = A2 U^-1 (A2 the rows of P^T A past the
n-th): dA2 = G_L2 U^-T, and the square formula takes G_U - L2^T dA2. For m < n, U = [U1 U2]
and U2 = L^-1 A2 (A2 the columns past the m-th): dA2 = L^-T G_U2, and the square formula
takes G_L - dA2 U2^T. Entries of G_L and G_U outside L's and U's free ones never enter, so
the gradient of the compact LU is split into G_L and G_U as it is. The gradient is only
defined for a nonsingular leading block (full rank), as torch's.
"""

import math
from collections import namedtuple

import numpy as np

from tricycle import checks
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import LinAlgError, check_matrices, first_failure, mT, solve

LUFactor = namedtuple("LUFactor", ["LU", "pivots"])  # torch.return_types.linalg_lu_factor
LUFactorEx = namedtuple("LUFactorEx", ["LU", "pivots", "info"])
PLU = namedtuple("PLU", ["P", "L", "U"])  # torch.return_types.linalg_lu

BLOCK = 32  # the columns eliminated one at a time before a matrix product updates the rest


def eliminate(xp, a, pivot: bool = True):
    """LU-factor the (b, m, n) matrices ``a`` in place: L under the diagonal (its ones
    implied), U on and above it. Returns LAPACK's pivots (b, k), 1-based int32."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # pivot=False: inf, NaN
        return _eliminate(xp, a, pivot)


def _eliminate(xp, a, pivot: bool):
    b, m, n = a.shape
    k = min(m, n)
    batch = xp.arange(b)
    pivots = xp.broadcast_to(xp.arange(1, k + 1, dtype=np.int32), (b, k)).copy()
    for start in range(0, k, BLOCK):
        stop = min(start + BLOCK, k)
        for j in range(start, stop):  # the block, one column at a time
            if pivot:  # the row with the largest |entry| on or below the diagonal swapped up
                p = j + xp.argmax(xp.abs(a[:, j:, j]), axis=1)  # (b,)
                pivots[:, j] = p + 1
                a[batch, j], a[batch, p] = a[batch, p], a[batch, j]
            d = a[:, j, j, None]  # (b, 1): the pivot
            if pivot:  # a zero pivot has a zero column under it, as LAPACK's: nothing to do
                d = xp.where(d != 0, d, 1)
            a[:, j + 1 :, j] /= d  # without pivoting, inf or NaN past a zero, as torch's
            a[:, j + 1 :, j + 1 : stop] -= a[:, j + 1 :, j, None] * a[:, j, None, j + 1 : stop]
        if stop < n:  # U's rows right of the block, then the trailing matrix
            L11 = xp.tril(a[:, start:stop, start:stop], -1) + xp.eye(stop - start, dtype=a.dtype)
            a[:, start:stop, stop:] = xp.linalg.solve(L11, a[:, start:stop, stop:])
            a[:, stop:, stop:] -= a[:, stop:, start:stop] @ a[:, start:stop, stop:]
    return pivots


def rows_of(xp, pivots, m: int):
    """The row order ``perm`` (..., m) of LAPACK's pivots (..., k): the rows of A in the
    order of P^T A (row i of L U is row perm[i] of A), the swaps applied one after another."""
    lead, k = pivots.shape[:-1], pivots.shape[-1]
    swaps = pivots.reshape((math.prod(lead), k)).astype(np.int64) - 1  # (b, k), 0-based
    batch = xp.arange(swaps.shape[0])
    perm = xp.broadcast_to(xp.arange(m), (swaps.shape[0], m)).copy()
    for i in range(k):
        p = swaps[:, i]
        perm[batch, i], perm[batch, p] = perm[batch, p], perm[batch, i]
    return perm.reshape(lead + (m,))


def factor(A: Tensor, pivot: bool):
    """The compact LU (..., m, n), the row order ``perm`` (..., m) and the pivots (..., k) of
    A's matrices, and the info of each (..., ): the first zero on U's diagonal, 1-based."""
    xp = A.xp
    m, n = A.shape[-2:]
    lead, k = A.shape[:-2], min(m, n)
    LU = A.array.reshape((math.prod(lead), m, n)).copy()  # (b, m, n), factored in place
    pivots = eliminate(xp, LU, pivot).reshape(lead + (k,))
    zero = xp.diagonal(LU, axis1=-2, axis2=-1) == 0  # (b, k)
    info = xp.where(zero.any(axis=-1), zero.argmax(axis=-1) + 1, 0).astype(np.int32)
    return LU.reshape(A.shape), rows_of(xp, pivots, m), pivots, info.reshape(lead)


def unpack(xp, LU):
    """L (..., m, k) and U (..., k, n) of the compact LU (..., m, n)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = xp.tril(LU[..., :, :k], -1) + xp.eye(m, k, dtype=LU.dtype)
    return L, xp.triu(LU[..., :k, :])


def permutation(xp, perm, dtype):
    """P (..., m, m) of the row order ``perm`` (..., m): A = P L U, P^T A = A[perm]."""
    return mT(xp.eye(perm.shape[-1], dtype=dtype)[perm])


def lu_backward(xp, dL, dU, P, L, U):
    """dA of A = P L U (..., m, n) for the gradients dL (..., m, k) and dU (..., k, n); P
    None for the factorisation without pivoting."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    L1, U1, dL1, dU1 = L[..., :k, :], U[..., :k], dL[..., :k, :], dU[..., :k]  # (..., k, k)
    if m > n:  # the rows past the n-th: L2 = A2 U^-1
        dA2 = mT(solve(U1, mT(dL[..., k:, :])))  # dL2 U^-T
        dU1 = dU1 - mT(L[..., k:, :]) @ dA2
    if m < n:  # the columns past the m-th: U2 = L^-1 A2
        dA2 = solve(mT(L1), dU[..., k:])  # L^-T dU2
        dL1 = dL1 - dA2 @ mT(U[..., k:])
    S = xp.tril(mT(L1) @ dL1, -1) + xp.triu(dU1 @ mT(U1))
    dA = solve(mT(L1), mT(solve(U1, mT(S))))  # L^-T S U^-T
    if m != n:
        dA = xp.concatenate([dA, dA2], axis=-2 if m > n else -1)
    return dA if P is None else P @ dA


def _checked(op: str, A, pivot) -> Tensor:
    check_matrices(op, A)
    checks.boolean(op, "pivot", pivot)
    return A


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorEx:
    """``(LU, pivots, info)`` of A (..., m, n): the compact LU (..., m, n), the pivots
    (..., k) (1-based int32) and info (...) int32, the first zero on U's diagonal (1-based,
    0 if none). ``check_errors``: a ``LinAlgError`` if an info is not 0."""
    op = "lu_factor_ex"
    _checked(op, A, pivot)
    checks.boolean(op, "check_errors", check_errors)
    xp = A.xp
    LU, perm, pivots, info = factor(A, pivot)
    if check_errors:
        raise_for(op, A, info)

    def back_fn(dLU):
        k = min(A.shape[-2:])
        P = permutation(xp, perm, A.dtype) if pivot else None
        return lu_backward(xp, dLU[..., :k], dLU[..., :k, :], P, *unpack(xp, LU))

    return LUFactorEx(
        A.new(LU, args=(A,), back_fns=(back_fn,), name=op),
        A.new(pivots, requires_grad=False, name=f"{op} pivots"),
        A.new(info, requires_grad=False, name=f"{op} info"),
    )


def raise_for(op: str, A: Tensor, info) -> None:
    """A ``LinAlgError`` naming the first matrix of A whose U has a zero on its diagonal."""
    failure = first_failure(info)
    if failure is not None:
        (index, i), batched = failure, info.ndim > 0
        raise LinAlgError(
            f"{op}: U[{i},{i}] is zero for {f'the matrix A{list(index)} of ' if batched else ''}"
            f"A (shape {A.shape}): it is singular, and solving with it would divide by zero "
            "(lu_factor_ex and lu factor it anyway)"
        )


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactor:
    """``(LU, pivots)`` of A (..., m, n): L and U in one matrix, and the pivots (..., k),
    1-based int32. A zero on U's diagonal (a singular A) is a ``LinAlgError``, as torch's."""
    _checked("lu_factor", A, pivot)
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    raise_for("lu_factor", A, info.array)
    return LUFactor(LU, pivots)


def lu(A: Tensor, *, pivot: bool = True) -> PLU:
    """``(P, L, U)`` with A = P L U for A (..., m, n): P (..., m, m), L (..., m, k) unit
    lower triangular, U (..., k, n) upper triangular; with ``pivot=False``, A = L U and P
    is empty, as torch's. A singular A is factored too (U has a zero on its diagonal)."""
    _checked("lu", A, pivot)
    xp = A.xp
    LU, perm, _, _ = factor(A, pivot)
    L, U = unpack(xp, LU)
    P = permutation(xp, perm, A.dtype) if pivot else None

    def dA_of_L(dL):
        return lu_backward(xp, dL, xp.zeros_like(U), P, L, U)

    def dA_of_U(dU):
        return lu_backward(xp, xp.zeros_like(L), dU, P, L, U)

    return PLU(
        A.new(xp.zeros((0,), A.dtype) if P is None else P, requires_grad=False, name="lu P"),
        A.new(L, args=(A,), back_fns=(dA_of_L,), name="lu L"),
        A.new(U, args=(A,), back_fns=(dA_of_U,), name="lu U"),
    )


__all__ = [
    "LUFactor",
    "LUFactorEx",
    "PLU",
    "eliminate",
    "factor",
    "lu",
    "lu_backward",
    "lu_factor",
    "lu_factor_ex",
    "permutation",
    "rows_of",
    "unpack",
]
