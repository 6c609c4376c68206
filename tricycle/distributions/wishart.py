"""The Wishart distribution W(df nu, Sigma) over p x p positive-definite matrices, as torch's,
given one of ``covariance_matrix`` Sigma, ``precision_matrix`` Sigma^-1 or ``scale_tril`` L
(Sigma = L L^T). With mvlgamma the multivariate log-gamma and mvdigamma its derivative,

    log p(X) = -nu (p log 2 / 2 + sum log diag L) - mvlgamma(nu / 2, p)
               + (nu - p - 1) / 2 log det X - tr(Sigma^-1 X) / 2
    entropy  = (p + 1) (p log 2 / 2 + sum log diag L) + mvlgamma(nu / 2, p)
               - (nu - p - 1) / 2 mvdigamma(nu / 2, p) + nu p / 2
    mean     = nu Sigma;  mode (nu - p - 1) Sigma (NaN for nu <= p + 1);
    variance = nu (Sigma_ij^2 + Sigma_ii Sigma_jj)

``rsample`` is Bartlett's decomposition: X = (L A)(L A)^T with A lower triangular, A_ii =
sqrt(chi2(nu - i)) and N(0, 1) below the diagonal, differentiable in nu (through the chi2's
draws) and in L. A draw that is not positive definite (nu close to p - 1) is drawn again, up
to ``max_try_correction`` times, with a warning; torch also warns on every draw, which it
need not (its first check reads the support's answer the wrong way round): tricycle warns only
when a draw is singular. As an ``ExponentialFamily``, its natural parameters are
(-Sigma^-1 / 2, (nu - p - 1) / 2).
"""

import math
import warnings

import numpy as np

from tricycle import factories
from tricycle.distributions import constraints
from tricycle.distributions.exp_family import ExponentialFamily
from tricycle.distributions.gamma import Chi2
from tricycle.distributions.linalg import one_matrix_form
from tricycle.distributions.multivariate_normal import _inverse_lower, _transpose, scale_tril_of
from tricycle.distributions.utils import (
    as_sample_shape,
    lazy_property,
    parameter,
    vec_to_tril_matrix,
)
from tricycle.linalg import slogdet
from tricycle.tensor import Tensor
from tricycle.torch_construction import diag_embed
from tricycle.torch_functions import where
from tricycle.torch_special import digamma, mvlgamma

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """sum_{i < p} digamma(x - i / 2): the derivative of mvlgamma(x, p)."""
    halves = np.arange(p) / 2
    return digamma(x.unsqueeze(-1) - x.new(x.xp.asarray(halves, dtype=x.dtype))).sum(-1)


class Wishart(ExponentialFamily):
    """Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None): exactly
    one matrix form (..., p, p); ``df`` (a Tensor or a number) > p - 1; the batch is the
    broadcast of df's shape and the matrix's leading axes."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self._event_shape[-1] - 1),
        }

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args: bool | None = None):  # fmt: skip
        form, given = one_matrix_form("Wishart", covariance_matrix, precision_matrix, scale_tril)
        matrix = parameter("Wishart", form, given, min_ndim=2)
        if matrix.shape[-1] != matrix.shape[-2]:
            raise ValueError(f"Wishart: {form} must be square (..., p, p), got {matrix.shape}")
        p = matrix.shape[-1]
        if isinstance(df, Tensor):
            batch_shape = np.broadcast_shapes(matrix.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        else:
            batch_shape = matrix.shape[:-2]
            self.df = factories.full((), df, dtype=matrix.dtype, device=matrix.device)
        if bool((self.df.array <= p - 1).any()):
            raise ValueError(
                f"Wishart: value of df={df} expected to be greater than ndim - 1 = {p - 1}."
            )
        if bool((self.df.array < p).any()):
            warnings.warn(
                "Wishart: low df values detected. Singular samples are highly likely to occur "
                "for ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        self._given, self._form = matrix, form
        setattr(self, form, matrix.expand(batch_shape + (p, p)))
        super().__init__(batch_shape, (p, p), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None) -> "Wishart":
        shape = self.expanded_shape(batch_shape)
        new = Wishart(self.df.expand(shape), **{self._form: self._given}, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def _unbroadcasted_scale_tril(self) -> Tensor:
        """L of the matrix given, before broadcasting to the batch."""
        return scale_tril_of(self._form, self._given)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return (L @ _transpose(L)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        inverse = _inverse_lower(self._unbroadcasted_scale_tril)
        return (_transpose(inverse) @ inverse).expand(self._batch_shape + self._event_shape)

    def _df(self) -> Tensor:
        """df with two trailing axes, to scale a matrix."""
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self._event_shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return factor.reshape(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix
        d = V.diagonal(dim1=-2, dim2=-1)
        return self._df() * (V**2 + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape) -> Tensor:
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        steps = L.new(L.xp.arange(p, dtype=L.dtype), requires_grad=False)
        chi2 = Chi2(self.df.unsqueeze(-1) - steps, validate_args=False)
        eps = float(np.finfo(L.dtype).eps)
        diagonal = chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        below = factories.randn(
            tuple(sample_shape) + self._batch_shape + (p * (p - 1) // 2,), dtype=L.dtype,
            device=L.device,
        )  # fmt: skip
        factor = L @ (diag_embed(diagonal) + vec_to_tril_matrix(below, diag=-1))
        return factor @ _transpose(factor)

    def rsample(self, sample_shape=(), max_try_correction=None) -> Tensor:
        """A Bartlett draw; one that is not positive definite is drawn again (up to
        ``max_try_correction`` times, default 10), with a warning."""
        sample_shape = as_sample_shape("Wishart", sample_shape)
        sample = self._bartlett(sample_shape)
        singular = ~self.support.check(sample)
        if singular.any():
            warnings.warn("Wishart.rsample: singular sample detected.", stacklevel=2)
            for _ in range(10 if max_try_correction is None else max_try_correction):
                fresh = self._bartlett(sample_shape)
                keep = sample.xp.asarray(singular)[..., None, None]
                sample = where(sample.new(keep, requires_grad=False), fresh, sample)
                singular = singular & ~self.support.check(fresh)
                if not singular.any():
                    break
        return sample

    def log_prob(self, value) -> Tensor:
        value = self._value(value, self._given)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        inverse = _inverse_lower(L)  # tr(Sigma^-1 X) = sum (L^-1 X) * L^-1 elementwise
        trace = ((inverse @ value) * inverse).sum((-2, -1))
        return (
            -nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            - mvlgamma(nu / 2, p)
            + (nu - p - 1) / 2 * slogdet(value).logabsdet
            - trace / 2
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return (
            (p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
            + mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        half = y + (p + 1) / 2
        return half * (-slogdet(x * -2).logabsdet + _LOG_2 * p) + mvlgamma(half, p)


__all__ = ["Wishart"]
