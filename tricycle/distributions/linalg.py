"""The two matrix ops a multivariate normal needs: ``cholesky`` (the lower factor L of a
symmetric positive-definite A = L L^T) and ``solve_triangular(L, B)`` (X = L^-1 B for a
lower-triangular L), both batched over the leading axes. They are ``tricycle.linalg``'s,
where their formulas and backwards live; this module gives them the names and arguments
``tricycle.distributions`` uses."""

from tricycle.graph import Node as Tensor
from tricycle.linalg.cholesky_factor import cholesky
from tricycle.linalg.systems import solve_triangular as _solve_triangular


def solve_triangular(L: Tensor, B: Tensor) -> Tensor:
    """X = L^-1 B: L (..., n, n) lower triangular with a non-zero diagonal (its upper
    triangle is ignored), B (..., n, k), the leading axes broadcast
    (``tricycle.linalg.solve_triangular(L, B, upper=False)``)."""
    return _solve_triangular(L, B, upper=False)


__all__ = ["cholesky", "solve_triangular"]
