"""The base of torch's constraints: ``Constraint`` (a set of values that ``check`` judges,
elementwise or per event) and what its subclasses share; the sets themselves are in
``constraints`` (elementwise, vectors) and ``constraints_shaped`` (matrices, and ``cat`` and
``stack`` of others), all of them by name in ``constraints``."""

import numbers


def _array(value):
    """The array of a Tensor (or the array, or number, itself)."""
    return getattr(value, "array", value)


class Constraint:
    """A set of values: ``check`` says, elementwise (per event of ``event_dim`` axes), which
    values lie in it. ``is_discrete``: whether the set is countable (integers, booleans)."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError(f"{type(self).__name__}.check")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _bound(bound) -> str:
    """A bound as a repr shows it: the number, or a tensor's shape."""
    if isinstance(bound, numbers.Real):
        return repr(bound)
    a = _array(bound)
    if a.ndim == 0:
        return repr(a.item())
    return f"<tensor of shape {tuple(a.shape)}>"


__all__ = ["Constraint"]
