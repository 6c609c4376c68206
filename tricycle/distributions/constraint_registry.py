"""torch's constraint registries, ``biject_to`` and ``transform_to``: the transform from the
unconstrained reals onto a constraint's set, for optimising a constrained parameter
unconstrained (``p = transform_to(constraints.positive)(u)``, ``u`` free).

``biject_to(c)`` is a bijection (its ``log_abs_det_jacobian`` serves a change of variables,
as in Hamiltonian Monte Carlo); ``transform_to(c)`` need not be one (``SoftmaxTransform``
onto the simplex, ``LowerCholeskyTransform``), for plain optimisation. The table is torch's:

    real                      identity (both)
    positive, nonnegative     exp then + 0 (both)
    greater_than(_eq)(b)      exp then + b;  less_than(b): exp then b - (both)
    interval(lo, hi)          sigmoid (lo = 0 and hi = 1 numbers), else sigmoid then
                              lo + (hi - lo) (both; half_open_interval too)
    simplex                   StickBreakingTransform / SoftmaxTransform
    lower_cholesky            LowerCholeskyTransform (transform_to only)
    positive_(semi)definite   PositiveDefiniteTransform (transform_to only)
    corr_cholesky             CorrCholeskyTransform (both)
    independent(c, n)         IndependentTransform of c's (both)
    cat, stack                CatTransform, StackTransform of the pieces' (both)

A lookup is by the constraint's exact class; ``register(constraint, factory)`` adds a user's
(a class or an instance, whose class is taken), also as a decorator.
"""

import numbers

from tricycle.distributions import constraints
from tricycle.distributions.constraint import Constraint
from tricycle.distributions.transforms import (
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    SigmoidTransform,
    SoftmaxTransform,
    StackTransform,
    StickBreakingTransform,
    identity_transform,
)


class ConstraintRegistry:
    """Constraint classes to the factories that make their transforms."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        """Register ``factory(constraint) -> Transform`` for ``constraint`` (a Constraint
        subclass or an instance of one); without ``factory``, a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, Constraint)):
            raise TypeError(
                "ConstraintRegistry.register: expected constraint to be either a Constraint "
                f"subclass or instance, but got {constraint!r}"
            )
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The transform from the reals onto ``constraint``'s set; NotImplementedError when
        none is registered for its class."""
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()
_BOTH = (biject_to, transform_to)


def _register(registries, *kinds):
    """A decorator registering a factory for each constraint kind in each registry."""

    def decorator(factory):
        for registry in registries:
            for kind in kinds:
                registry.register(kind, factory)
        return factory

    return decorator


@_register(_BOTH, constraints.real)
def _to_real(constraint):
    return identity_transform


@_register(_BOTH, constraints.greater_than, constraints.greater_than_eq)
def _to_greater_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.lower_bound, 1)])


@_register(_BOTH, constraints.less_than)
def _to_less_than(constraint):
    return ComposeTransform([ExpTransform(), AffineTransform(constraint.upper_bound, -1)])


@_register(_BOTH, constraints.interval, constraints.half_open_interval)
def _to_interval(constraint):
    low, high = constraint.lower_bound, constraint.upper_bound
    if _is_number(low, 0) and _is_number(high, 1):
        return SigmoidTransform()
    return ComposeTransform([SigmoidTransform(), AffineTransform(low, high - low)])


@_register((biject_to,), constraints.simplex)
def _biject_to_simplex(constraint):
    return StickBreakingTransform()


@_register((transform_to,), constraints.simplex)
def _transform_to_simplex(constraint):
    return SoftmaxTransform()


@_register((transform_to,), constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return LowerCholeskyTransform()


@_register((transform_to,), constraints.positive_definite, constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return PositiveDefiniteTransform()


@_register(_BOTH, constraints.corr_cholesky)
def _to_corr_cholesky(constraint):
    return CorrCholeskyTransform()


def _composite_factories(registry: ConstraintRegistry) -> None:
    """Register ``independent``, ``cat`` and ``stack`` in ``registry``: each made of the
    same registry's transforms for the parts."""

    @registry.register(constraints.independent)
    def _independent(constraint):
        base = registry(constraint.base_constraint)
        return IndependentTransform(base, constraint.reinterpreted_batch_ndims)

    @registry.register(constraints.cat)
    def _cat(constraint):
        parts = [registry(c) for c in constraint.cseq]
        return CatTransform(parts, constraint.dim, constraint.lengths)

    @registry.register(constraints.stack)
    def _stack(constraint):
        return StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


for _registry in _BOTH:
    _composite_factories(_registry)


def _is_number(bound, value) -> bool:
    """Whether ``bound`` is the plain number ``value`` (not a Tensor)."""
    return isinstance(bound, numbers.Number) and bound == value


__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]
