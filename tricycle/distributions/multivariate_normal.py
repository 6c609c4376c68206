"""The multivariate normal N(loc, Sigma) over vectors of n numbers, as
``torch.distributions.MultivariateNormal``, given one of ``covariance_matrix`` Sigma,
``precision_matrix`` Sigma^-1 or ``scale_tril`` L, the lower Cholesky factor (Sigma = L L^T).
Every formula reads L:

    log p(x) = -(n log 2 pi + |L^-1 (x - loc)|^2) / 2 - sum log diag L
    entropy  = n (1 + log 2 pi) / 2 + sum log diag L
    rsample  = loc + L eps,  eps ~ N(0, I)

L comes from ``tricycle.distributions.linalg`` (Cholesky and triangular solve, with their
backwards), so every parameter form gets its gradient.
"""

import math

import numpy as np

from tricycle import factories, ops, unary
from tricycle.distributions import constraints
from tricycle.distributions.distribution import CentredAtLoc
from tricycle.distributions.linalg import cholesky, one_matrix_form, solve_triangular
from tricycle.distributions.utils import lazy_property, parameter
from tricycle.tensor import Tensor

_LOG_2PI = math.log(2 * math.pi)


def scale_tril_of(form: str, given: Tensor) -> Tensor:
    """L (lower, L L^T = Sigma) of a matrix given in ``form``: torch's ``scale_tril`` itself,
    a ``covariance_matrix``'s Cholesky factor, or a ``precision_matrix`` P's through its own
    factor (P = Lp Lp^T, so Sigma = M^T M with M = Lp^-1)."""
    if form == "scale_tril":
        return given
    if form == "covariance_matrix":
        return cholesky(given)
    inverse_factor = _inverse_lower(cholesky(given))
    return cholesky(_transpose(inverse_factor) @ inverse_factor)


class MultivariateNormal(CentredAtLoc):
    """N(loc, Sigma): ``loc`` (..., n) and one of ``covariance_matrix``,
    ``precision_matrix`` (symmetric positive-definite) or ``scale_tril`` (lower triangular,
    positive diagonal), each (..., n, n); the batch is their leading axes, broadcast."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):  # fmt: skip
        name, given = one_matrix_form("MultivariateNormal", covariance_matrix,
                                      precision_matrix, scale_tril)  # fmt: skip
        loc = parameter("MultivariateNormal", "loc", loc, min_ndim=1)
        matrix = parameter("MultivariateNormal", name, given, min_ndim=2)
        n = loc.shape[-1]
        if matrix.shape[-2:] != (n, n):
            raise ValueError(
                f"MultivariateNormal: {name} must be (..., {n}, {n}) for loc of shape "
                f"{loc.shape}, got shape {matrix.shape}"
            )
        try:
            batch_shape = np.broadcast_shapes(loc.shape[:-1], matrix.shape[:-2])
        except ValueError:
            raise ValueError(
                f"MultivariateNormal: the batch shapes of loc {loc.shape} and {name} "
                f"{matrix.shape} do not broadcast"
            ) from None
        self.loc = _expand(loc, batch_shape + (n,))
        setattr(self, name, _expand(matrix, batch_shape + (n, n)))
        self._given = matrix  # unbroadcast: the factorisation runs once per distinct matrix
        self._form = name
        super().__init__(batch_shape, (n,), validate_args=validate_args)

    @lazy_property
    def _unbroadcasted_scale_tril(self) -> Tensor:
        """L of the matrix given, before broadcasting to the batch."""
        return scale_tril_of(self._form, self._given)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return _expand(self._unbroadcasted_scale_tril, self._batch_shape + self._event_shape * 2)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return _expand(L @ _transpose(L), self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        inverse = _inverse_lower(self._unbroadcasted_scale_tril)  # Sigma^-1 = L^-T L^-1
        return _expand(_transpose(inverse) @ inverse, self._batch_shape + self._event_shape * 2)

    @property
    def variance(self) -> Tensor:
        """The diagonal of Sigma: the squares of L's rows, summed."""
        L = self._unbroadcasted_scale_tril
        return _expand((L**2).sum(axis=-1), self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """loc + L eps, eps ~ N(0, I) of shape sample_shape + batch_shape + (n,)."""
        shape = self._extended_shape(sample_shape)
        eps = factories.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        L = self._unbroadcasted_scale_tril
        return self.loc + ops.squeeze(L @ ops.expand_dims(eps, -1), -1)

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        diff = value - self.loc  # (..., n)
        M = mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -(M + n * _LOG_2PI) * 0.5 - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        entropy = self._half_log_det() + n * (1 + _LOG_2PI) * 0.5
        return _expand(entropy, self._batch_shape)

    def _half_log_det(self) -> Tensor:
        """log sqrt(det Sigma) = sum log diag L."""
        diagonal = self._unbroadcasted_scale_tril.diagonal(0, -2, -1)
        return unary.log(diagonal).sum(axis=-1)

    def __repr__(self) -> str:
        return f"MultivariateNormal(loc: shape {self.loc.shape}, {self._form}: shape " \
               f"{self.__dict__[self._form].shape})"  # fmt: skip


def mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """|L^-1 x|^2 over the last axis of x (..., n), L (..., n, n) lower triangular."""
    z = solve_triangular(L, ops.expand_dims(x, -1))  # (..., n, 1)
    return (z**2).sum(axis=(-2, -1))


def _inverse_lower(L: Tensor) -> Tensor:
    """L^-1 of lower-triangular L: the solve of the identity."""
    n = L.shape[-1]
    return solve_triangular(L, factories.eye(n, dtype=L.dtype, device=L.device))


def _transpose(a: Tensor) -> Tensor:
    return ops.swapaxes(a, -1, -2)


def _expand(t: Tensor, shape: tuple) -> Tensor:
    return t if t.shape == shape else t.expand(shape)


__all__ = ["MultivariateNormal", "mahalanobis"]
