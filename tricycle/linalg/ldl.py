"""The LDL^T factorisation of a symmetric matrix, as ``torch.linalg.ldl_factor``,
``ldl_factor_ex`` and ``ldl_solve``: P A P^T = L D L^T with L unit lower triangular and D
block diagonal (1 x 1 and 2 x 2 blocks), by Bunch and Kaufman's pivoting, written as
LAPACK's ``dsytf2`` (lower triangle) writes it, so that its compact result is LAPACK's (and
torch's): ``LD`` holds L below the diagonal and D on it (a 2 x 2 block's off-diagonal entry
just under it), its upper triangle zero; ``pivots`` (int32, 1-based) are LAPACK's: p > 0 a
1 x 1 block whose row was swapped with row p, -p at both rows of a 2 x 2 block whose second
row was swapped with row p. Only A's lower triangle is read.

The pivots are chosen with comparisons (alpha = (1 + sqrt 17) / 8): matrices whose
candidates tie within rounding may pivot otherwise than a blocked LAPACK does (torch's for
n >= 64), the factorisation of P A P^T being right either way.

Each matrix of a batch is factored in turn, step by step (a column's choice of pivot reads
its values back to Python), with the tensor's array module: right on a GPU, not fast there.
torch gives these functions no gradient ("not implemented"): their backward raises its
RuntimeError. ``hermitian`` is accepted as torch's and means nothing more for real matrices.
"""

from collections import namedtuple
from itertools import product
from math import sqrt

import numpy as np

from tricycle import checks
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import LinAlgError, check_matrices, first_failure

LDLFactor = namedtuple("LDLFactor", ["LD", "pivots"])  # torch.return_types.linalg_ldl_factor
LDLFactorEx = namedtuple("LDLFactorEx", ["LD", "pivots", "info"])

ALPHA = (1 + sqrt(17)) / 8  # Bunch-Kaufman's threshold: the growth it allows is bounded


def _choose_pivot(xp, a, k: int):
    """``(kp, kstep)`` for the column k of the trailing matrix a[k:, k:] (lower triangle),
    or None if the column is zero (a singular D)."""
    n = a.shape[0]
    absakk = abs(float(a[k, k]))
    colmax, imax = 0.0, k
    if k + 1 < n:
        imax = k + 1 + int(xp.abs(a[k + 1 :, k]).argmax())
        colmax = abs(float(a[imax, k]))
    if max(absakk, colmax) == 0 or absakk != absakk:  # zero column or NaN
        return None
    if absakk >= ALPHA * colmax:
        return k, 1
    rowmax = float(xp.abs(a[imax, k:imax]).max())  # row imax, left of the diagonal
    if imax + 1 < n:
        rowmax = max(rowmax, float(xp.abs(a[imax + 1 :, imax]).max()))
    if absakk >= ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(float(a[imax, imax])) >= ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _swap(a, k: int, kk: int, kp: int, kstep: int) -> None:
    """Rows and columns kk and kp of the trailing lower triangle swapped, in place."""
    a[kp + 1 :, [kk, kp]] = a[kp + 1 :, [kp, kk]]
    between = a[kk + 1 : kp, kk].copy()
    a[kk + 1 : kp, kk] = a[kp, kk + 1 : kp]
    a[kp, kk + 1 : kp] = between
    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]
    if kstep == 2:
        a[[k + 1, kp], k] = a[[kp, k + 1], k]


def _factor(xp, a):
    """``(pivots, info)`` of one (n, n) matrix ``a``, factored in place (LAPACK's dsytf2)."""
    n = a.shape[0]
    pivots = np.zeros(n, dtype=np.int32)
    info, k = 0, 0
    while k < n:
        choice = _choose_pivot(xp, a, k)
        if choice is None:
            info = info or k + 1
            pivots[k] = k + 1
            k += 1
            continue
        kp, kstep = choice
        kk = k + kstep - 1
        if kp != kk:
            _swap(a, k, kk, kp, kstep)
        if kstep == 1:
            x = a[k + 1 :, k].copy()
            a[k + 1 :, k + 1 :] -= xp.outer(x, x) / a[k, k]
            a[k + 1 :, k] = x / a[k, k]
            pivots[k] = kp + 1
        else:
            d21 = float(a[k + 1, k])
            d11, d22 = float(a[k + 1, k + 1]) / d21, float(a[k, k]) / d21
            t = 1 / (d11 * d22 - 1)
            x, y = a[k + 2 :, k].copy(), a[k + 2 :, k + 1].copy()
            wk = (t / d21) * (d11 * x - y)  # the columns of L: [x y] D^-1
            wkp1 = (t / d21) * (d22 * y - x)
            a[k + 2 :, k + 2 :] -= xp.outer(x, wk) + xp.outer(y, wkp1)
            a[k + 2 :, k], a[k + 2 :, k + 1] = wk, wkp1
            pivots[k] = pivots[k + 1] = -(kp + 1)
        k += kstep
    return pivots, info


def _not_implemented(name: str):
    def refuse(dout):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    return refuse


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorEx:
    """torch.linalg.ldl_factor_ex: ``(LD, pivots, info)`` of symmetric A (..., n, n); info
    (int32, A's batch shape) is the 1-based index of the first zero block of D, 0 if none
    (a LinAlgError instead if ``check_errors``)."""
    op = "ldl_factor_ex"
    checks.boolean(op, "hermitian", hermitian)
    checks.boolean(op, "check_errors", check_errors)
    check_matrices(op, A, square=True)
    xp = A.xp
    n, batch = A.shape[-1], A.shape[:-2]
    LD = xp.tril(A.array)
    pivots = np.zeros(batch + (n,), dtype=np.int32)
    info = np.zeros(batch, dtype=np.int32)
    for index in product(*map(range, batch)):
        matrix = LD[index].copy()
        pivots[index], info[index] = _factor(xp, matrix)
        LD[index] = xp.tril(matrix)
    if check_errors and (failed := first_failure(info)) is not None:
        raise LinAlgError(f"{op}: the factorization could not be completed: {_singular(*failed)}")
    refuse = _not_implemented("linalg_ldl_factor_ex")
    return LDLFactorEx(
        A.new(LD, args=(A,), back_fns=(refuse,), name=op),
        A.new(xp.asarray(pivots), requires_grad=False),
        A.new(xp.asarray(info), requires_grad=False),
    )


def _singular(index, code: int) -> str:
    where = f"the batch element {index}" if index else "the matrix"
    return f"D[{code - 1}, {code - 1}] of {where} is exactly zero (D is singular)"


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactor:
    """torch.linalg.ldl_factor: ``(LD, pivots)`` of symmetric A (..., n, n); a LinAlgError if
    D is singular (torch's own check fails there with an internal error)."""
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    if (failed := first_failure(info.array)) is not None:
        raise LinAlgError(f"ldl_factor: {_singular(*failed)}; ldl_factor_ex returns its info")
    return LDLFactor(LD, pivots)


def _solve(xp, ld, pivots, b):
    """X with A X = b for one A given by its (n, n) ``ld`` and ``pivots`` (LAPACK's dsytrs)."""
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = P b
        if pivots[k] > 0:
            kp = pivots[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1 :] -= xp.outer(ld[k + 1 :, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            kp = -pivots[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2 :] -= xp.outer(ld[k + 2 :, k], b[k]) + xp.outer(ld[k + 2 :, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P X = Y
        b[k] -= ld[k + 1 :, k] @ b[k + 1 :]
        if pivots[k] > 0:
            kp, step = pivots[k] - 1, 1
        else:
            b[k - 1] -= ld[k + 1 :, k - 1] @ b[k + 1 :]
            kp, step = -pivots[k] - 1, 2
        b[[k, kp]] = b[[kp, k]]
        k -= step
    return b


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:  # noqa: N803
    """torch.linalg.ldl_solve: X with A X = B for A given by ``ldl_factor``'s ``(LD, pivots)``
    (..., n, n) and (..., n), B (..., n, k), the batch axes broadcast."""
    op = "ldl_solve"
    checks.boolean(op, "hermitian", hermitian)
    check_matrices(op, LD, "LD", square=True)
    check_matrices(op, B, "B")
    n = LD.shape[-1]
    piv = pivots.array if isinstance(pivots, Tensor) else None
    if piv is None or piv.dtype.kind not in "iu" or piv.shape != LD.shape[:-1]:
        raise ValueError(
            f"{op}: pivots must be integers of shape {LD.shape[:-1]} (ldl_factor's pivots of LD "
            f"{LD.shape}), got {getattr(pivots, 'shape', pivots)!r}"
        )
    if B.dtype != LD.dtype:
        raise TypeError(f"{op}: B must have LD's dtype {LD.dtype}, got {B.dtype}")
    if B.shape[-2] != n:
        raise ValueError(f"{op}: B {B.shape} must be (..., {n}, k) for LD {LD.shape}")
    try:
        batch = np.broadcast_shapes(LD.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{op}: the batch axes of LD {LD.shape} and B {B.shape} do not broadcast"
        ) from None
    piv = np.asarray(piv.get() if hasattr(piv, "get") else piv)  # read by Python, step by step
    if piv.size and not bool(((piv != 0) & (np.abs(piv) <= n)).all()):
        raise ValueError(f"{op}: pivots must be nonzero and at most {n} in size (1-based rows)")
    xp = LD.xp
    ld = xp.broadcast_to(LD.array, batch + (n, n))
    piv = np.broadcast_to(piv, batch + (n,))
    X = xp.array(xp.broadcast_to(B.array, batch + B.shape[-2:]))
    for index in product(*map(range, batch)):
        X[index] = _solve(xp, ld[index], piv[index], X[index])
    refuse = _not_implemented("linalg_ldl_solve")
    return LD.new(X, args=(LD, B), back_fns=(refuse, refuse), name=op)


__all__ = ["LDLFactor", "LDLFactorEx", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
