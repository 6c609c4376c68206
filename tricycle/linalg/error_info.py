"""torch's ``_ex`` variants, which return an error code instead of raising:
``cholesky_ex`` -> (L, info), ``inv_ex`` -> (inverse, info), ``solve_ex`` -> (result, info),
info an int32 tensor of A's batch shape, 0 where the op succeeded and LAPACK's code where it
did not: the order of the first leading minor that is not positive-definite (potrf's), or
the first zero on the diagonal of U in A = P L U (getrf's, 1-based). ``check_errors=True``
raises ``LinAlgError`` instead, naming the first matrix that failed.

The matrices that succeed get ``cholesky``'s, ``inv``'s and ``solve``'s results and
gradients; those that fail are NaN (torch's contents there are unspecified) and send no
gradient back. numpy's factorisations raise for a whole batch, and cupy's return NaN in
silence, so the codes are computed here when a batch fails, by the LU factorisation of
``lu_factors``: with row pivoting for getrf's, without it for potrf's (A is positive-definite
exactly when every pivot of its elimination without row swaps is positive, Sylvester's
criterion), and the batch is computed again with the identity in the failed matrices' places.
"""

import math
from collections import namedtuple

import numpy as np

from tricycle import checks, ops
from tricycle.graph import Node as Tensor
from tricycle.linalg.cholesky_factor import cholesky_backward
from tricycle.linalg.lu_factors import eliminate, factor
from tricycle.linalg.matrices import LinAlgError, check_matrices, first_failure, mT, transposed
from tricycle.linalg.systems import _is_vector, inv, solve

CholeskyEx = namedtuple("CholeskyEx", ["L", "info"])  # torch.return_types.linalg_cholesky_ex
InvEx = namedtuple("InvEx", ["inverse", "info"])
SolveEx = namedtuple("SolveEx", ["result", "info"])


def _first_non_positive_minor(xp, a):
    """potrf's info of symmetric (..., n, n) ``a``: the order of the first leading minor that
    is not positive-definite (its pivot without row swaps is not > 0), 0 if none."""
    n = a.shape[-1]
    flat = a.reshape((math.prod(a.shape[:-2]), n, n)).copy()
    eliminate(xp, flat, pivot=False)
    bad = ~(xp.diagonal(flat, axis1=-2, axis2=-1) > 0)  # (b, n): NaN past a zero pivot too
    info = xp.where(bad.any(axis=-1), bad.argmax(axis=-1) + 1, 0).astype(np.int32)
    return info.reshape(a.shape[:-2])


def _raise(op: str, A: Tensor, info, what) -> None:
    failure = first_failure(info)
    if failure is not None:
        (index, code), batched = failure, info.ndim > 0
        matrix = f"the matrix A{list(index)} of A" if batched else "A"
        raise LinAlgError(f"{op}: {matrix} (shape {A.shape}) {what(code)}")


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyEx:
    """``(L, info)``: ``cholesky(A, upper=upper)`` where A (..., n, n) is positive-definite
    (info 0), NaN where it is not (info: the order of the first leading minor that is not).
    Only A's lower triangle is read."""
    op = "cholesky_ex"
    check_matrices(op, A, square=True)
    checks.boolean(op, "upper", upper)
    checks.boolean(op, "check_errors", check_errors)
    xp = A.xp
    a = xp.tril(A.array) + mT(xp.tril(A.array, -1))  # the symmetric matrix of the lower triangle
    info, good = xp.zeros(A.shape[:-2], dtype=np.int32), True
    try:
        L = xp.linalg.cholesky(a)
        failed = not bool((xp.diagonal(L, axis1=-2, axis2=-1) > 0).all())  # cupy: NaN, silent
    except np.linalg.LinAlgError:
        failed = True
    if failed:
        info = _first_non_positive_minor(xp, a)
        if check_errors:
            _raise(op, A, info, lambda k: f"is not positive-definite: its leading minor of "
                                          f"order {k} is not")  # fmt: skip
        good = (info == 0)[..., None, None]  # (..., 1, 1)
        L = xp.linalg.cholesky(xp.where(good, a, xp.eye(A.shape[-1], dtype=A.dtype)))

    def back_fn(dL):  # the identity's factor in the failed matrices' places: no gradient
        return cholesky_backward(xp, dL, L) * good

    out = A.new(xp.where(good, L, np.nan) if failed else L, args=(A,), back_fns=(back_fn,),
                name=op)  # fmt: skip
    info = A.new(info, requires_grad=False, name=f"{op} info")
    return CholeskyEx(transposed(out) if upper else out, info)


def _singular(op: str, A: Tensor, result, check_errors: bool):
    """(result of the op on A with the identity in its singular matrices' places, NaN
    there; info) once the op raised for A's batch: ``result`` maps a Tensor of matrices to
    the op's output, whose leading axes end with A's batch axes."""
    xp = A.xp
    info = factor(A, True)[3]  # (...): getrf's
    if check_errors:
        _raise(op, A, info, lambda i: f"is singular: U[{i},{i}] of A = P L U is zero")
    good = info == 0
    identity = xp.eye(A.shape[-1], dtype=A.dtype)
    out = result(ops.where(good[..., None, None], A, identity))  # (..., n, k)
    return ops.where(good[..., None, None], out, np.nan), info


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvEx:
    """``(inverse, info)``: ``inv(A)`` where A (..., n, n) is nonsingular (info 0), NaN where
    it is not (info: the first zero on U's diagonal in A = P L U, 1-based)."""
    op = "inv_ex"
    check_matrices(op, A, square=True)
    checks.boolean(op, "check_errors", check_errors)
    try:
        X, info = inv(A), A.xp.zeros(A.shape[:-2], dtype=np.int32)
    except LinAlgError:
        X, info = _singular(op, A, inv, check_errors)
    return InvEx(X, A.new(info, requires_grad=False, name=f"{op} info"))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveEx:
    """``(result, info)``: ``solve(A, B, left=left)`` where A (..., n, n) is nonsingular
    (info 0, of A's batch shape), NaN where it is not (info: the first zero on U's diagonal
    in A = P L U, 1-based)."""
    op = "solve_ex"
    check_matrices(op, A, square=True)
    checks.boolean(op, "check_errors", check_errors)
    try:
        X, info = solve(A, B, left=left), A.xp.zeros(A.shape[:-2], dtype=np.int32)
    except LinAlgError:
        vector = isinstance(B, Tensor) and _is_vector(A, B)

        def result(safe):  # with a vector's axis, so that the batch axes end two from the end
            X = solve(safe, B, left=left)
            return ops.expand_dims(X, -1) if vector else X

        X, info = _singular(op, A, result, check_errors)
        X = ops.squeeze(X, -1) if vector else X
    return SolveEx(X, A.new(info, requires_grad=False, name=f"{op} info"))


__all__ = ["CholeskyEx", "InvEx", "SolveEx", "cholesky_ex", "inv_ex", "solve_ex"]
