"""Least squares, as ``torch.linalg.lstsq``: X minimising ||A X - B|| for A (..., m, n) and
B (..., m, k) (or (..., m), a batch of vectors, when B has one axis fewer than A), the
leading axes broadcast: the minimum-norm solution X (..., n, k), for tall, square or wide A.

numpy.linalg.lstsq and cupy.linalg.lstsq take one matrix, not batches: X is computed here
from the SVD, X = A^+ B over the singular values above rcond times the largest (rcond None:
eps * max(m, n)), what LAPACK's gelsd and gelss compute and, for a full-rank A, gelsy and
gels too. ``driver`` chooses which of the other outputs are filled, as torch's CPU drivers
fill them (the default, None, is gelsy, torch's on the CPU); the others are empty tensors:

    residuals  (..., k)  ||A x - b||^2 of each column: m > n and a driver other than gelsy,
                         with every A of full rank for gelsd and gelss
    rank       (...)     int64, the number of singular values kept: every driver but gels
                         (gelsy's from the singular values too, not from a pivoted QR)
    singular_values (..., min(m, n)): gelsd and gelss

Backward (torch's, exact for a full-rank A): X = A^+ B, so dB = A^+T G and dA is the
pseudo-inverse's backward for its gradient G B^T. At the minimum, A^T (A X - B) = 0, so the
residuals r = ||A X - B||^2 have dA = 2 (A X - B) diag(g) X^T, dB = -2 (A X - B) diag(g).
rank and singular_values have no gradient.
"""

from collections import namedtuple

import numpy as np

from tricycle import binary, checks, ops
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import batch_shape, check_matrices, lapack, mT
from tricycle.linalg.singular import kept, pinv_backward, pseudo_inverse

Lstsq = namedtuple("Lstsq", ["solution", "residuals", "rank", "singular_values"])

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _check(op: str, A, B, rcond, driver) -> None:
    check_matrices(op, A)
    if not isinstance(B, Tensor):
        checks.fail(op, "B", "a Tensor", B, TypeError)
    checks.non_negative(op, "rcond", rcond, optional=True)
    if driver is not None and driver not in DRIVERS:
        checks.fail(op, "driver", f"None or one of {DRIVERS}", driver)
    if B.dtype != A.dtype:
        raise TypeError(f"{op}: A and B must have one dtype, got {A.dtype} and {B.dtype}")
    if not 0 <= A.ndim - B.ndim <= 1:
        raise ValueError(
            f"{op}: B must be (..., m, k) or, a batch of vectors, (..., m): A's number of "
            f"axes or one fewer, got A {A.shape} and B {B.shape}"
        )


def _solve(A: Tensor, B: Tensor, rcond, driver: str) -> Lstsq:
    """lstsq of A (..., m, n) and matrices B (..., m, k)."""
    op = "lstsq"
    m, n = A.shape[-2:]
    batch_shape(op, A, B)
    xp, a, b = A.xp, A.array, B.array
    problem = f"the SVD of A (shape {A.shape}) did not converge"
    U, S, Vh = lapack(op, problem, xp.linalg.svd, a, False)  # (..., m, r), (..., r), (..., r, n)
    mask = kept(xp, S, 0.0, rcond, A.shape)
    A_plus = pseudo_inverse(xp, U, S, Vh, mask)  # (..., n, m)
    X = A_plus @ b  # (..., n, k)

    def dA_of_X(G):
        return binary.unbroadcast(pinv_backward(xp, G @ mT(b), A_plus, a), A.shape)

    def dB_of_X(G):
        return binary.unbroadcast(mT(A_plus) @ G, B.shape)

    solution = A.new(X, args=(A, B), back_fns=(dA_of_X, dB_of_X), name=op)
    rank = mask.sum(axis=-1).astype(np.int64)  # (...)
    residuals = A.new(xp.zeros((0,), A.dtype), requires_grad=False, name=f"{op} residuals")
    full_rank = driver == "gels" or (driver != "gelsy" and bool((rank == n).all()))
    if m > n and full_rank:  # one value read back, as torch's
        R = a @ X - b  # (..., m, k)

        def dA_of_r(g):
            return binary.unbroadcast(2 * (R * g[..., None, :]) @ mT(X), A.shape)

        def dB_of_r(g):
            return binary.unbroadcast(-2 * R * g[..., None, :], B.shape)

        r = (R * R).sum(axis=-2)  # (..., k)
        residuals = A.new(r, args=(A, B), back_fns=(dA_of_r, dB_of_r), name=f"{op} residuals")
    empty = xp.zeros((0,), A.dtype)
    return Lstsq(
        solution,
        residuals,
        A.new(rank if driver != "gels" else empty.astype(np.int64), requires_grad=False),
        A.new(S if driver in ("gelsd", "gelss") else empty, requires_grad=False),
    )


def lstsq(A: Tensor, B: Tensor, rcond=None, *, driver=None) -> Lstsq:
    """``(solution, residuals, rank, singular_values)``: the minimum-norm X (..., n, k)
    minimising ||A X - B|| for A (..., m, n) and B (..., m, k) (X (..., n) for B (..., m)
    when B has one axis fewer than A), with the other outputs as ``driver`` fills them
    (the module's docstring); singular values at most rcond times the largest count as 0."""
    op = "lstsq"
    _check(op, A, B, rcond, driver)
    driver = "gelsy" if driver is None else driver
    m = A.shape[-2]
    if B.shape[-2 if B.ndim == A.ndim else -1] != m:
        read = "matrices (..., m, k)" if B.ndim == A.ndim else "vectors (..., m): one axis fewer"
        raise ValueError(
            f"{op}: B must have A's m = {m} rows (A X = B), got A {A.shape} and B {B.shape} "
            f"(B read as {read})"
        )
    if B.ndim == A.ndim:
        return _solve(A, B, rcond, driver)
    solution, residuals, rank, singular_values = _solve(A, ops.expand_dims(B, -1), rcond, driver)
    return Lstsq(ops.squeeze(solution, -1), residuals, rank, singular_values)


__all__ = ["DRIVERS", "Lstsq", "lstsq"]
