"""The rest of torch's transforms: ``CatTransform`` and ``StackTransform`` (transforms applied
piece by piece along one axis), ``CorrCholeskyTransform`` (reals onto Cholesky factors of
correlation matrices), ``PositiveDefiniteTransform`` (square matrices onto positive-definite
ones) and ``CumulativeDistributionTransform`` (a distribution's cdf, onto (0, 1)).

``CorrCholeskyTransform`` takes D (D - 1) / 2 reals to a D x D lower-triangular L with unit
rows, as torch's (Stan's construction): the reals fill L's strict lower triangle row by row
after a tanh, r = tanh(x) in (-1, 1); row i then takes y_ij = r_ij sqrt(1 - sum_{k<j} r_ik^2)
(each entry a share of the length the row has left: a signed stick-breaking of the squares)
and y_ii the rest. Its log-Jacobian, on x and the strict lower triangle of y, is
1/2 sum_{j < i - 1} log(1 - sum_{k <= j} y_ik^2) (the stick-breaking's) plus the tanh's
sum log(1 - r^2).
"""

import math

import numpy as np

from tricycle import checks, factories, ops
from tricycle.distributions import constraints
from tricycle.distributions.distribution import Distribution
from tricycle.distributions.linalg import cholesky
from tricycle.distributions.transform import Transform
from tricycle.distributions.transforms_shaped import LowerCholeskyTransform
from tricycle.distributions.utils import sum_rightmost, tril_matrix_to_vec, vec_to_tril_matrix
from tricycle.nn import functional as F
from tricycle.tensor import Tensor


def _transforms(owner: str, tseq, cache_size: int) -> list:
    """``tseq`` as a list of Transforms (each with ``cache_size``), else a TypeError."""
    tseq = list(tseq)
    for t in tseq:
        if not isinstance(t, Transform):
            checks.fail(owner, "tseq", "a sequence of Transforms", t, TypeError)
    return [t.with_cache(cache_size) for t in tseq] if cache_size else tseq


def _check_axis(owner: str, x: Tensor, dim: int, size: int, what: str) -> None:
    """An error unless ``dim`` is an axis of x of ``size`` elements."""
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"{owner}: dim {dim} is out of range for {what} of shape {x.shape}")
    if x.shape[dim] != size:
        raise ValueError(
            f"{owner}: {what}.shape[{dim}] = {x.shape[dim]} must equal {size}, the sum of the "
            "pieces' lengths (one per transform)"
        )


class CatTransform(Transform):
    """The transforms ``tseq`` applied to consecutive pieces of axis ``dim``, of ``lengths``
    (1 each by default), the results joined as ``cat`` joins them."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        self.transforms = _transforms("CatTransform", tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(
                f"CatTransform: {len(self.lengths)} lengths for {len(self.transforms)} transforms"
            )
        self.dim = checks.integer("CatTransform", "dim", dim)

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        """The size of axis ``dim``: the sum of the lengths."""
        return sum(self.lengths)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, x: Tensor, what: str) -> list:
        _check_axis("CatTransform", x, self.dim, self.length, what)
        starts = np.cumsum([0] + self.lengths[:-1])
        return [x.narrow(self.dim, int(s), n) for s, n in zip(starts, self.lengths)]

    def _call(self, x):
        pieces = self._pieces(x, "x")
        return ops.cat([t(p) for t, p in zip(self.transforms, pieces)], dim=self.dim)

    def _inverse(self, y):
        pieces = self._pieces(y, "y")
        return ops.cat([t.inv(p) for t, p in zip(self.transforms, pieces)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        terms = []
        for t, xs, ys in zip(self.transforms, self._pieces(x, "x"), self._pieces(y, "y")):
            terms.append(
                sum_rightmost(t.log_abs_det_jacobian(xs, ys), self.event_dim - t.event_dim)
            )
        dim = (self.dim - x.ndim if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:  # the axis is a batch axis of the terms: join them along it
            return ops.cat(terms, dim=dim)
        return sum(terms[1:], terms[0])  # the axis lies inside an event: add the terms


class StackTransform(Transform):
    """The transforms ``tseq``, one on each slice of axis ``dim``, the results stacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        self.transforms = _transforms("StackTransform", tseq, cache_size)
        super().__init__(cache_size=cache_size)
        self.dim = checks.integer("StackTransform", "dim", dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, x: Tensor, what: str) -> list:
        _check_axis("StackTransform", x, self.dim, len(self.transforms), what)
        return [x.select(self.dim, i) for i in range(x.shape[self.dim])]

    def _call(self, x):
        slices = self._slices(x, "x")
        return ops.stack([t(s) for t, s in zip(self.transforms, slices)], dim=self.dim)

    def _inverse(self, y):
        slices = self._slices(y, "y")
        return ops.stack([t.inv(s) for t, s in zip(self.transforms, slices)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        pairs = zip(self.transforms, self._slices(x, "x"), self._slices(y, "y"))
        return ops.stack([t.log_abs_det_jacobian(xs, ys) for t, xs, ys in pairs], dim=self.dim)


class CorrCholeskyTransform(Transform):
    """D (D - 1) / 2 reals onto the Cholesky factor of a D x D correlation matrix (see the
    module's docstring); a bijection between those spaces."""

    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def __eq__(self, other) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        eps = float(np.finfo(x.dtype).eps)
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        left = (1 - r * r).sqrt().cumprod(-1)  # the length each row has left, column by column
        eye = factories.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return (r + eye) * F.pad(left[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y):
        left = F.pad((1 - (y * y).cumsum(-1))[..., :-1], (1, 0), value=1.0)
        share = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left, diag=-1).sqrt()
        return (share.log1p() - (-share).log1p()) * 0.5  # atanh

    def log_abs_det_jacobian(self, x, y):
        left = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        tanh_term = (x + F.softplus(x * -2.0) - math.log(2.0)).sum(-1) * -2.0
        return left.log().sum(-1) * 0.5 + tanh_term

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("CorrCholeskyTransform.forward_shape: too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError(
                f"CorrCholeskyTransform.forward_shape: {n} is not D (D - 1) / 2 for any D "
                "(the input is not a flattened strict lower triangle)"
            )
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("CorrCholeskyTransform.inverse_shape: too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError(f"CorrCholeskyTransform.inverse_shape: {tuple(shape)} is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


class PositiveDefiniteTransform(Transform):
    """A square matrix onto a positive-definite one: L L^T with L its
    ``LowerCholeskyTransform`` (strict lower triangle kept, diagonal exponentiated); the
    inverse is that transform's inverse of the Cholesky factor."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(cholesky(y))


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x), from the distribution's support onto (0, 1); its inverse is
    the icdf, its log-Jacobian the log-density (a Gaussian copula's building block)."""

    bijective, sign, codomain = True, 1, constraints.unit_interval

    def __init__(self, distribution: Distribution, cache_size: int = 0):
        if not isinstance(distribution, Distribution):
            checks.fail("CumulativeDistributionTransform", "distribution", "a Distribution",
                        distribution, TypeError)  # fmt: skip
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


__all__ = [
    "CatTransform",
    "CorrCholeskyTransform",
    "CumulativeDistributionTransform",
    "PositiveDefiniteTransform",
    "StackTransform",
]
