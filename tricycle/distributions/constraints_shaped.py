"""Constraints on matrices and on pieces of a value, as torch's: ``LowerTriangular``,
``LowerCholesky`` (a Cholesky factor), ``CorrCholesky`` (the Cholesky factor of a correlation
matrix: unit rows), ``Square``, ``Symmetric``, ``PositiveSemidefinite``, ``PositiveDefinite``
(each judging the last 2 axes as one event), and ``Cat`` and ``Stack``, which judge the
pieces of one axis each by its own constraint (the domains of ``CatTransform`` and
``StackTransform``)."""

import numpy as np

from tricycle import backend
from tricycle.distributions.constraint import Constraint, _array


class LowerCholesky(Constraint):
    """Lower-triangular matrices with a positive diagonal (a Cholesky factor), last 2 axes."""

    event_dim = 2

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        lower = xp.all(xp.tril(a) == a, axis=(-2, -1))
        return lower & xp.all(xp.diagonal(a, axis1=-2, axis2=-1) > 0, axis=-1)


class PositiveDefinite(Constraint):
    """Symmetric matrices with positive eigenvalues (a covariance), last 2 axes."""

    event_dim = 2

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        symmetric = xp.all(xp.abs(a - xp.swapaxes(a, -1, -2)) <= 1e-6, axis=(-2, -1))
        with np.errstate(invalid="ignore"):  # a NaN matrix has no eigenvalues: not valid
            eigenvalues = xp.linalg.eigvalsh(xp.where(xp.isfinite(a), a, 0))
        finite = xp.all(xp.isfinite(a), axis=(-2, -1))
        return symmetric & finite & (eigenvalues.min(axis=-1) > 0)


class LowerTriangular(Constraint):
    """Lower-triangular square matrices (any diagonal), last 2 axes."""

    event_dim = 2

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        return xp.all(xp.tril(a) == a, axis=(-2, -1))


class CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower triangular, a positive diagonal and
    every row of unit length (to within 10 n machine epsilons, torch's tolerance)."""

    event_dim = 2

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        tol = float(np.finfo(a.dtype).eps) * a.shape[-1] * 10
        unit_rows = xp.all(xp.abs(xp.sqrt((a * a).sum(axis=-1)) - 1) <= tol, axis=-1)
        return LowerCholesky().check(a) & unit_rows


class Square(Constraint):
    """Square matrices, last 2 axes: every matrix of a batch is, or none is."""

    event_dim = 2

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        return xp.full(a.shape[:-2], a.shape[-2] == a.shape[-1], dtype=bool)


class Symmetric(Square):
    """Symmetric square matrices (to within an absolute 1e-6 plus torch's isclose relative
    1e-5 of the transpose), last 2 axes."""

    def check(self, value):
        square = super().check(value)
        if not square.all():
            return square
        a = _array(value)
        xp = backend.array_module(a)
        return xp.all(xp.isclose(a, xp.swapaxes(a, -1, -2), atol=1e-6), axis=(-2, -1))


class PositiveSemidefinite(Symmetric):
    """Symmetric matrices with non-negative eigenvalues, last 2 axes."""

    def check(self, value):
        symmetric = super().check(value)
        if not symmetric.all():
            return symmetric
        a = _array(value)
        return backend.array_module(a).linalg.eigvalsh(a).min(axis=-1) >= 0


class Cat(Constraint):
    """The constraints ``cseq`` on consecutive pieces of axis ``dim``, of ``lengths`` (1
    each by default), as ``cat`` joins them: each piece judged by its own."""

    def __init__(self, cseq, dim: int = 0, lengths=None):
        self.cseq = _constraints("cat", cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(
                f"constraints.cat: {len(self.lengths)} lengths for {len(self.cseq)} constraints"
            )
        self.dim = dim

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        a = _array(value)
        axis = _axis("constraints.cat", self.dim, a.ndim)
        pieces, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            index = (slice(None),) * axis + (slice(start, start + length),)
            pieces.append(constraint.check(a[index]))
            start += length
        return backend.array_module(a).concatenate(pieces, axis=self.dim)


class Stack(Constraint):
    """The constraints ``cseq``, one on each slice of axis ``dim``, as ``stack`` joins them."""

    def __init__(self, cseq, dim: int = 0):
        self.cseq = _constraints("stack", cseq)
        self.dim = dim

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        event_dim = max(c.event_dim for c in self.cseq)
        return event_dim + 1 if self.dim + event_dim < 0 else event_dim

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        axis = _axis("constraints.stack", self.dim, a.ndim)
        slices = [xp.take(a, i, axis=axis) for i in range(a.shape[axis])]
        return xp.stack([c.check(v) for c, v in zip(self.cseq, slices)], axis=self.dim)


def _constraints(owner: str, cseq) -> list:
    """``cseq`` as a list of Constraints, else a TypeError naming ``owner``."""
    cseq = list(cseq)
    for c in cseq:
        if not isinstance(c, Constraint):
            raise TypeError(f"constraints.{owner}: cseq must hold Constraints, got {c!r}")
    return cseq


def _axis(owner: str, dim: int, ndim: int) -> int:
    """``dim`` as a non-negative axis of an ndim-axis value, else an IndexError."""
    if not -ndim <= dim < ndim:
        raise IndexError(f"{owner}: dim {dim} is out of range for a value of {ndim} axes")
    return dim % ndim


__all__ = [
    "Cat",
    "CorrCholesky",
    "LowerCholesky",
    "LowerTriangular",
    "PositiveDefinite",
    "PositiveSemidefinite",
    "Square",
    "Stack",
    "Symmetric",
]
