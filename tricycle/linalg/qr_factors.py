"""The QR decomposition, as ``torch.linalg.qr``: A = Q R for A (..., m, n), Q with orthonormal
columns and R upper triangular, batched over the leading axes. ``mode`` is torch's:
"reduced" (Q (..., m, k), R (..., k, n), k = min(m, n)), "complete" (Q (..., m, m),
R (..., m, n)) or "r" (R alone; Q is an empty tensor, as torch's).

Backward (gradients named ``d...``; the same formula as torch's), for m >= n:

    M  = R dR^T - dQ^T Q
    dA = (dQ + Q copyltu(M)) R^-T,     copyltu(M) = tril(M) + tril(M, -1)^T

For m < n, A = [X | Y] with X its first m columns: X = Q R_1 is a square QR and
R_2 = Q^T Y, so dY = Q dR_2 and X takes the square formula with dR_1 and dQ + Y dR_2^T.
Q and R are two outputs of one decomposition: each sends its own gradient through the
formula (the other's taken as zero), and the two add up at A, the formula being linear.
torch has no gradient for mode "r" (Q is not computed) nor for "complete" with m > n (the
extra columns of Q are not unique): backward raises, as torch's.
"""

from collections import namedtuple

from tricycle import checks
from tricycle.graph import Node as Tensor
from tricycle.linalg.matrices import check_matrices, mT, solve

QR = namedtuple("QR", ["Q", "R"])  # torch.return_types.linalg_qr


def _square_or_tall_backward(xp, dQ, dR, Q, R):
    """dA for A = Q R with m >= n (R square, upper triangular, invertible)."""
    M = R @ mT(dR) - mT(dQ) @ Q  # (..., n, n)
    copyltu = xp.tril(M) + mT(xp.tril(M, -1))
    return mT(solve(R, mT(dQ + Q @ copyltu)))  # (...) R^-T


def qr_backward(xp, dQ, dR, Q, R):
    """dA of A (..., m, n) = Q R (the reduced decomposition) for the gradients dQ, dR."""
    m, n = Q.shape[-2], R.shape[-1]
    if m >= n:
        return _square_or_tall_backward(xp, dQ, dR, Q, R)
    dR1, dR2 = dR[..., :m], dR[..., m:]  # (..., m, m), (..., m, n - m)
    Y = Q @ R[..., m:]  # A's columns past the m-th
    dX = _square_or_tall_backward(xp, dQ + Y @ mT(dR2), dR1, Q, R[..., :m])
    return xp.concatenate([dX, Q @ dR2], axis=-1)


def qr(A: Tensor, mode: str = "reduced") -> QR:
    """``(Q, R)`` with A = Q R, for A (..., m, n); ``mode`` "reduced", "complete" or "r"."""
    check_matrices("qr", A)
    checks.one_of(("reduced", "complete", "r"))("qr", "mode", mode)
    xp = A.xp
    m, n = A.shape[-2:]
    Q, R = xp.linalg.qr(A.array, mode="complete" if mode == "complete" else "reduced")
    differentiable = mode == "reduced" or m <= n  # complete with m <= n is the reduced one

    def refuse(dout):
        if mode == "r":
            raise ValueError(
                "qr: the derivative of qr depends on Q, which is not computed when mode='r'; "
                "use mode='reduced' to differentiate through qr"
            )
        raise ValueError(
            f"qr: the decomposition is not differentiable when mode='complete' and the "
            f"matrices have more rows than columns (A of shape {A.shape})"
        )

    def dQ_of(dQ):
        return qr_backward(xp, dQ, xp.zeros_like(R), Q, R)

    def dR_of(dR):
        return qr_backward(xp, xp.zeros_like(Q), dR, Q, R)

    if mode == "r":
        Q = xp.zeros((0,), dtype=A.dtype)
        return QR(A.new(Q, requires_grad=False, name="qr Q"),
                  A.new(R, args=(A,), back_fns=(refuse,), name="qr R"))  # fmt: skip
    return QR(
        A.new(Q, args=(A,), back_fns=(dQ_of if differentiable else refuse,), name="qr Q"),
        A.new(R, args=(A,), back_fns=(dR_of if differentiable else refuse,), name="qr R"),
    )


__all__ = ["QR", "qr", "qr_backward"]
