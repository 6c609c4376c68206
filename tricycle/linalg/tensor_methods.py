"""torch.Tensor's linear-algebra methods, under the names torch gives them (``Tensor``
imports this module on the first call of one): ``x.inverse()``, ``x.det()``, ``x.logdet()``,
``x.slogdet()``, ``x.matrix_power(n)`` and ``x.pinverse(rcond)``. torch deprecates
``x.cholesky()`` and ``x.qr()`` for ``torch.linalg``'s functions, so tricycle has only
those: ``tricycle.linalg.cholesky_factor(x)``, ``tricycle.linalg.qr_factors(x)``."""

from tricycle.graph import Node as Tensor
from tricycle.linalg.determinant import det, logdet, slogdet
from tricycle.linalg.singular import pinv
from tricycle.linalg.systems import inv as inverse
from tricycle.linalg.systems import matrix_power


def pinverse(x: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.Tensor.pinverse: the pseudo-inverse, singular values at most ``rcond`` times the
    largest taken as zero (``tricycle.linalg.pinv(x, rtol=rcond)``)."""
    return pinv(x, rtol=rcond)


__all__ = ["det", "inverse", "logdet", "matrix_power", "pinverse", "slogdet"]
