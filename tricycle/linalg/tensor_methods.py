"""torch.Tensor's linear-algebra methods, under the names torch gives them (``Tensor``
imports this module on the first call of one): ``x.inverse()``, ``x.det()``, ``x.logdet()``,
``x.slogdet()``, ``x.matrix_power(n)`` and ``x.pinverse(rcond)``; and torch's older ones,
the functions of ``tricycle.linalg.legacy`` with the tensor first (``x.cholesky()``,
``x.qr()``, ``x.lu()``, ``b.lu_solve(LU, pivots)``, ``b.triangular_solve(A)``,
``b.cholesky_solve(L)``, ``L.cholesky_inverse()``, ``x.matrix_exp()``)."""

from tricycle.graph import Node as Tensor
from tricycle.linalg.determinant import det, logdet, slogdet
from tricycle.linalg.legacy import (
    cholesky,
    cholesky_inverse,
    cholesky_solve,
    lu,
    lu_solve,
    matrix_exp,
    qr,
    triangular_solve,
)
from tricycle.linalg.singular import pinv
from tricycle.linalg.systems import inv as inverse
from tricycle.linalg.systems import matrix_power


def pinverse(x: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.Tensor.pinverse: the pseudo-inverse, singular values at most ``rcond`` times the
    largest taken as zero (``tricycle.linalg.pinv(x, rtol=rcond)``)."""
    return pinv(x, rtol=rcond)


__all__ = [
    "cholesky",
    "cholesky_inverse",
    "cholesky_solve",
    "det",
    "inverse",
    "logdet",
    "lu",
    "lu_solve",
    "matrix_exp",
    "matrix_power",
    "pinverse",
    "qr",
    "slogdet",
    "triangular_solve",
]
