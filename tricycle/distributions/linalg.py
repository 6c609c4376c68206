"""The two matrix ops a multivariate normal needs: ``cholesky`` (the lower factor L of a
symmetric positive-definite A = L L^T) and ``solve_triangular(L, B)`` (X = L^-1 B for a
lower-triangular L), both batched over the leading axes. They are ``tricycle.linalg``'s,
where their formulas and backwards live; this module gives them the names and arguments
``tricycle.distributions`` uses. ``one_matrix_form`` reads the one matrix a family is given
in one of torch's three forms (a multivariate normal's, a Wishart's)."""

from tricycle.graph import Node as Tensor
from tricycle.linalg.cholesky_factor import cholesky
from tricycle.linalg.systems import solve_triangular as _solve_triangular


def solve_triangular(L: Tensor, B: Tensor) -> Tensor:
    """X = L^-1 B: L (..., n, n) lower triangular with a non-zero diagonal (its upper
    triangle is ignored), B (..., n, k), the leading axes broadcast
    (``tricycle.linalg.solve_triangular(L, B, upper=False)``)."""
    return _solve_triangular(L, B, upper=False)


def one_matrix_form(op: str, covariance_matrix, precision_matrix, scale_tril) -> tuple[str, object]:
    """(the name of the one form given, its value), of torch's ``covariance_matrix``,
    ``precision_matrix`` and ``scale_tril``: exactly one of them, or a ValueError naming
    ``op`` and what was given."""
    given = {"covariance_matrix": covariance_matrix, "precision_matrix": precision_matrix,
             "scale_tril": scale_tril}  # fmt: skip
    named = [name for name, value in given.items() if value is not None]
    if len(named) != 1:
        raise ValueError(f"{op}: give exactly one of covariance_matrix, precision_matrix or "
                         f"scale_tril, got {len(named)}: {named}")  # fmt: skip
    return named[0], given[named[0]]


__all__ = ["cholesky", "one_matrix_form", "solve_triangular"]
