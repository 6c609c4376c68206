"""The sets a distribution's parameters and samples live in, as ``torch.distributions.constraints``.

A constraint answers ``check(value)``: a boolean array, True where ``value`` lies in the set.
A constraint of ``event_dim`` n judges the last n axes together (a probability vector, a
matrix), so its answer has those axes reduced: ``simplex.check(p)`` is one boolean per row.
A distribution checks its parameters against ``arg_constraints`` and the values given to
``log_prob`` against ``support`` when it validates (``tricycle.distributions.distribution``);
each check computes with the value's own array module, on its device.

The names are torch's: ``real``, ``positive``, ``unit_interval``, ``simplex``, ...; a bound may
be a number or a Tensor (``Uniform``'s support is ``interval(low, high)``, batched).
"""

from tricycle import backend
from tricycle.distributions.constraint import Constraint, _array, _bound
from tricycle.distributions.constraints_shaped import (
    Cat,
    CorrCholesky,
    LowerCholesky,
    LowerTriangular,
    PositiveDefinite,
    PositiveSemidefinite,
    Square,
    Stack,
    Symmetric,
)


class Real(Constraint):
    """Any real number, infinities included: everything but NaN."""

    def check(self, value):
        a = _array(value)
        return a == a  # NaN is the one value unequal to itself


class GreaterThan(Constraint):
    """(lower_bound, inf)."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _array(self.lower_bound) < _array(value)

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={_bound(self.lower_bound)})"


class GreaterThanEq(Constraint):
    """[lower_bound, inf)."""

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return _array(self.lower_bound) <= _array(value)

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={_bound(self.lower_bound)})"


class IntegerGreaterThan(GreaterThanEq):
    """The integers lower_bound, lower_bound + 1, ... (a count, stored as any dtype)."""

    is_discrete = True

    def check(self, value):
        a = _array(value)
        return (a % 1 == 0) & super().check(a)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={_bound(self.lower_bound)})"


class LessThan(Constraint):
    """(-inf, upper_bound)."""

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return _array(value) < _array(self.upper_bound)

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={_bound(self.upper_bound)})"


class Interval(Constraint):
    """[lower_bound, upper_bound]."""

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        a = _array(value)
        return (_array(self.lower_bound) <= a) & (a <= _array(self.upper_bound))

    def __repr__(self) -> str:
        bounds = f"lower_bound={_bound(self.lower_bound)}, upper_bound={_bound(self.upper_bound)}"
        return f"{type(self).__name__}({bounds})"


class HalfOpenInterval(Interval):
    """[lower_bound, upper_bound)."""

    def check(self, value):
        a = _array(value)
        return (_array(self.lower_bound) <= a) & (a < _array(self.upper_bound))


class IntegerInterval(Interval):
    """The integers lower_bound, ..., upper_bound (a class id, stored as any dtype)."""

    is_discrete = True

    def check(self, value):
        a = _array(value)
        return (a % 1 == 0) & super().check(a)


class Boolean(Constraint):
    """{0, 1}."""

    is_discrete = True

    def check(self, value):
        a = _array(value)
        return (a == 0) | (a == 1)


class Simplex(Constraint):
    """Vectors of non-negative entries that sum to 1 (to within 1e-6), on the last axis."""

    event_dim = 1

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        return xp.all(a >= 0, axis=-1) & (xp.abs(a.sum(axis=-1) - 1) < 1e-6)


class OneHot(Constraint):
    """Vectors of zeros with a single one, on the last axis."""

    is_discrete = True
    event_dim = 1

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        return xp.all((a == 0) | (a == 1), axis=-1) & (a.sum(axis=-1) == 1)


class Multinomial(Constraint):
    """Vectors of counts >= 0 on the last axis that sum to at most ``upper_bound`` (torch's
    check of a multinomial draw: the sum is bounded, not matched)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        a = _array(value)
        xp = backend.array_module(a)
        return xp.all(a >= 0, axis=-1) & (a.sum(axis=-1) <= _array(self.upper_bound))

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={_bound(self.upper_bound)})"


class Independent(Constraint):
    """``base_constraint`` on every element, judged together over the last
    ``reinterpreted_batch_ndims`` axes (all must hold): the support of an ``Independent``."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value):
        valid = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if n == 0:
            return valid
        return backend.array_module(valid).all(valid, axis=tuple(range(-n, 0)))

    def __repr__(self) -> str:
        return f"Independent({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


# torch's names: instances for the fixed sets, functions (the classes) for the others
real = Real()
real_vector = Independent(real, 1)
positive = GreaterThan(0.0)
nonnegative = GreaterThanEq(0.0)
nonnegative_integer = IntegerGreaterThan(0)
positive_integer = IntegerGreaterThan(1)
unit_interval = Interval(0.0, 1.0)
boolean = Boolean()
simplex = Simplex()
one_hot = OneHot()
lower_cholesky = LowerCholesky()
positive_definite = PositiveDefinite()
positive_semidefinite = PositiveSemidefinite()
lower_triangular = LowerTriangular()
corr_cholesky = CorrCholesky()
square = Square()
symmetric = Symmetric()
cat = Cat
stack = Stack
greater_than = GreaterThan
greater_than_eq = GreaterThanEq
less_than = LessThan
interval = Interval
half_open_interval = HalfOpenInterval
integer_interval = IntegerInterval
independent = Independent
multinomial = Multinomial

__all__ = [
    "Constraint",
    "boolean",
    "cat",
    "corr_cholesky",
    "greater_than",
    "greater_than_eq",
    "half_open_interval",
    "independent",
    "integer_interval",
    "interval",
    "less_than",
    "lower_cholesky",
    "lower_triangular",
    "multinomial",
    "nonnegative",
    "nonnegative_integer",
    "one_hot",
    "positive",
    "positive_definite",
    "positive_integer",
    "positive_semidefinite",
    "real",
    "real_vector",
    "simplex",
    "square",
    "stack",
    "symmetric",
    "unit_interval",
]
