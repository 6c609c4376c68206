"""Inverses and equations of tensors read as matrices, as ``torch.linalg``: ``tensorinv``
(the inverse of ``tensordot`` over ``ind`` axes) and ``tensorsolve`` (X with
tensordot(A, X, X.ndim) = B). Both reshape A into a square matrix and call ``inv`` or
``solve``; their gradients are those ops'.
"""

import math

from tricycle import checks, ops
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices
from tricycle.linalg.systems import inv, solve


def _square(op: str, A: Tensor, ind: int) -> tuple[int, int]:
    rows, columns = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != columns:
        raise ValueError(
            f"{op}: A of shape {A.shape} must read as a square matrix: the product of its "
            f"first {ind} sizes ({rows}) must equal that of the others ({columns})"
        )
    return rows, columns


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """X of shape A.shape[ind:] + A.shape[:ind] with tensordot(A, X, ind) the identity: the
    inverse of A read as a (prod A.shape[:ind], prod A.shape[ind:]) matrix."""
    op = "tensorinv"
    if not isinstance(A, Tensor):
        checks.fail(op, "A", "a Tensor", A, TypeError)
    checks.integer(op, "ind", ind, 1)
    X = inv(check_matrices(op, ops.reshape(A, _square(op, A, ind)), "A read as a matrix"))
    return ops.reshape(X, A.shape[ind:] + A.shape[:ind])


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """X of shape A.shape[B.ndim:] with tensordot(A, X, X.ndim) = B, the axes ``dims`` of A
    moved to its end first; A read as a square matrix."""
    op = "tensorsolve"
    for name, value in (("A", A), ("B", B)):
        if not isinstance(value, Tensor):
            checks.fail(op, name, "a Tensor", value, TypeError)
    if dims is not None:
        moved = [checks.axis(op, "dims", d, A.ndim, A.shape) for d in dims]
        if len(set(moved)) != len(moved):
            checks.fail(op, "dims", "distinct axes", dims)
        A = ops.permute(A, *[a for a in range(A.ndim) if a not in moved], *moved)
    if A.shape[: B.ndim] != B.shape:
        raise ValueError(
            f"{op}: B's shape {B.shape} must be A's first {B.ndim} sizes, A.shape[:B.ndim] "
            f"= {A.shape[: B.ndim]} (A's shape after moving dims)"
        )
    rows, columns = _square(op, A, B.ndim)
    matrix = check_matrices(op, ops.reshape(A, (rows, columns)), "A read as a matrix")
    X = solve(matrix, ops.reshape(B, (rows,)))
    return ops.reshape(X, A.shape[B.ndim :])


__all__ = ["tensorinv", "tensorsolve"]
