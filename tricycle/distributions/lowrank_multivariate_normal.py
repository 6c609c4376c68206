"""The multivariate normal whose covariance is low rank plus diagonal, as torch's
``LowRankMultivariateNormal(loc, cov_factor, cov_diag)``:

    Sigma = W W^T + D,   W = cov_factor (n, r), D = diag(cov_diag) (n,)

Its formulas never form the n x n matrix: they go through the r x r capacitance matrix
C = I + W^T D^-1 W and its Cholesky factor L_C (Woodbury's identity and the matrix
determinant lemma),

    x^T Sigma^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2
    log det Sigma  = 2 sum log diag L_C + sum log D
    rsample        = loc + W eps_r + sqrt(D) eps_n,   eps ~ N(0, I)

so a draw, a log-density and the entropy cost O(n r^2). ``covariance_matrix``,
``precision_matrix`` and ``scale_tril`` are formed (n x n) when asked for.
"""

import math

import numpy as np

from tricycle import factories, ops
from tricycle.distributions import constraints
from tricycle.distributions.distribution import CentredAtLoc
from tricycle.distributions.gamma import rebuilt
from tricycle.distributions.linalg import cholesky, solve_triangular
from tricycle.distributions.utils import lazy_property, parameter
from tricycle.tensor import Tensor

_LOG_2PI = math.log(2 * math.pi)


def _transpose(a: Tensor) -> Tensor:
    return ops.swapaxes(a, -1, -2)


def _expand(t: Tensor, shape: tuple) -> Tensor:
    return t if t.shape == shape else t.expand(shape)


def _diagonal_matrix(d: Tensor) -> Tensor:
    """diag(d) of the last axis of d (..., n): (..., n, n), differentiable in d."""
    n = d.shape[-1]
    return ops.expand_dims(d, -1) * factories.eye(n, dtype=d.dtype, device=d.device)


class LowRankMultivariateNormal(CentredAtLoc):
    """N(loc, W W^T + diag(D)): ``loc`` (..., n), ``cov_factor`` W (..., n, r), ``cov_diag``
    D (..., n) > 0; the batch is their leading axes, broadcast."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None):
        owner = "LowRankMultivariateNormal"
        loc = parameter(owner, "loc", loc, min_ndim=1)
        cov_factor = parameter(owner, "cov_factor", cov_factor, min_ndim=2)
        cov_diag = parameter(owner, "cov_diag", cov_diag, min_ndim=1)
        n = loc.shape[-1]
        if cov_factor.shape[-2] != n or cov_diag.shape[-1] != n:
            raise ValueError(
                f"{owner}: cov_factor must be (..., {n}, rank) and cov_diag (..., {n}) for loc "
                f"of shape {loc.shape}, got {cov_factor.shape} and {cov_diag.shape}"
            )
        try:
            batch_shape = np.broadcast_shapes(
                loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1]
            )
        except ValueError:
            raise ValueError(
                f"{owner}: the batch shapes of loc {loc.shape}, cov_factor {cov_factor.shape} "
                f"and cov_diag {cov_diag.shape} do not broadcast"
            ) from None
        rank = cov_factor.shape[-1]
        self.loc = _expand(loc, batch_shape + (n,))
        self.cov_factor = _expand(cov_factor, batch_shape + (n, rank))
        self.cov_diag = _expand(cov_diag, batch_shape + (n,))
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        super().__init__(batch_shape, (n,), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "LowRankMultivariateNormal":
        def make(s):
            loc, W, D = self.loc, self.cov_factor, self.cov_diag
            loc, W, D = (
                loc.expand(s + loc.shape[-1:]),
                W.expand(s + W.shape[-2:]),
                D.expand(s + D.shape[-1:]),
            )
            return LowRankMultivariateNormal(loc, W, D, validate_args=False)

        return rebuilt(self, batch_shape, make)

    @lazy_property
    def _capacitance_tril(self) -> Tensor:
        """L_C, the Cholesky factor of I + W^T D^-1 W (..., r, r)."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        rank = W.shape[-1]
        scaled = W / ops.expand_dims(D.sqrt(), -1)  # D^-1/2 W
        eye = factories.eye(rank, dtype=W.dtype, device=W.device)
        return cholesky(_transpose(scaled) @ scaled + eye)

    @lazy_property
    def variance(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return _expand((W**2).sum(axis=-1) + D, self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        covariance = W @ _transpose(W) + _diagonal_matrix(D)
        return _expand(covariance, self._batch_shape + self._event_shape * 2)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """D^-1 - A^T A with A = L_C^-1 W^T D^-1 (Woodbury)."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_d_inverse = _transpose(W) / ops.expand_dims(D, -2)
        A = solve_triangular(self._capacitance_tril, wt_d_inverse)
        precision = _diagonal_matrix(1 / D) - _transpose(A) @ A
        return _expand(precision, self._batch_shape + self._event_shape * 2)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return cholesky(self.covariance_matrix)

    def rsample(self, sample_shape=()) -> Tensor:
        """loc + W eps_r + sqrt(D) eps_n."""
        shape = self._extended_shape(sample_shape)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        like = self.loc
        eps_w = factories.randn(shape[:-1] + W.shape[-1:], dtype=like.dtype, device=like.device)
        eps_d = factories.randn(shape, dtype=like.dtype, device=like.device)
        low_rank = ops.squeeze(W @ ops.expand_dims(eps_w, -1), -1)
        return self.loc + low_rank + D.sqrt() * eps_d

    def _half_log_det(self) -> Tensor:
        """log sqrt(det Sigma) = sum log diag L_C + (sum log D) / 2."""
        diagonal = self._capacitance_tril.diagonal(0, -2, -1)
        return diagonal.log().sum(axis=-1) + self._unbroadcasted_cov_diag.log().sum(axis=-1) * 0.5

    def _mahalanobis(self, x: Tensor) -> Tensor:
        """x^T Sigma^-1 x over the last axis, by Woodbury's identity."""
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        wt_d_inverse_x = _transpose(W) @ ops.expand_dims(x / D, -1)  # (..., r, 1)
        z = solve_triangular(self._capacitance_tril, wt_d_inverse_x)
        return (x**2 / D).sum(axis=-1) - (z**2).sum(axis=(-2, -1))

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self.loc)
        n = self._event_shape[0]
        return -(self._mahalanobis(value - self.loc) + n * _LOG_2PI) * 0.5 - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        entropy = self._half_log_det() + n * (1 + _LOG_2PI) * 0.5
        return _expand(entropy, self._batch_shape)

    def __repr__(self) -> str:
        return (
            f"LowRankMultivariateNormal(loc: shape {self.loc.shape}, cov_factor: shape "
            f"{self.cov_factor.shape}, cov_diag: shape {self.cov_diag.shape})"
        )


__all__ = ["LowRankMultivariateNormal"]
