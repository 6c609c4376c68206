"""Checks of the arguments given to tricycle's public constructors and functions.

A check takes the name of the class or function that received the argument (``owner``), the
argument's name and its value, and returns the value unchanged when it is acceptable.
Otherwise it raises, with one message format everywhere::

    TypeError:  Dense: from_size must be an integer >= 1, got 2.5    (the wrong kind of value)
    ValueError: Dense: from_size must be an integer >= 1, got 0      (the right kind, out of range)

Booleans are not numbers here (``Dense(True, 3)`` is a mistake, not a size of 1), and numbers
are not booleans (``Dense(3, 2, bias=0)`` is refused rather than read as False); numpy
scalars count as the Python numbers they hold. ``optional(check)`` also accepts None.

``@arguments(name=check, ...)`` declares the checks of a function's arguments beside its
signature; the owner in the messages is the class (``Conv2d``, not the base class that
defines ``__init__``), ``Class.method`` or the function::

    class Dense(Layer):
        @arguments(from_size=positive_int, to_size=positive_int, bias=boolean)
        def __init__(self, from_size: int, to_size: int, bias: bool = True): ...
"""

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable
from typing import NoReturn

import numpy as np

Check = Callable[[str, str, object], object]  # (owner, name, value) -> value, or raise
P = inspect.Parameter
_POSITIONAL = (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)


def fail(owner: str, name: str, expected: str, value, error: type = ValueError) -> NoReturn:
    """Raise ``error`` saying that ``owner``'s argument ``name`` must be ``expected``."""
    raise error(f"{owner}: {name} must be {expected}, got {value!r}")


def is_integer(value) -> bool:
    """An integer (Python or numpy) and not a bool."""
    return type(value) is int or (  # the common case first: checks run on every op
        isinstance(value, numbers.Integral) and not isinstance(value, bool)
    )


def is_real(value) -> bool:
    """A real number (Python or numpy, integer or float) and not a bool."""
    return type(value) in (int, float) or (
        isinstance(value, numbers.Real) and not isinstance(value, bool)
    )


# ---------------------------------------------------------------------- numbers
def integer(owner: str, name: str, value, low: int | None = None, optional: bool = False):
    """An integer, at least ``low`` if given."""
    if optional and value is None:
        return value
    kind_ok = is_integer(value)
    if not kind_ok or (low is not None and value < low):  # the words only when they are needed
        expected = ("None or " if optional else "") + "an integer"
        expected += "" if low is None else f" >= {low}"
        fail(owner, name, expected, value, ValueError if kind_ok else TypeError)
    return value


def at_least(low: int) -> Check:
    """The check of an integer >= ``low``."""
    return functools.partial(integer, low=low)


def positive_int(owner: str, name: str, value, optional: bool = False):
    """An integer >= 1 (a size, a count)."""
    return integer(owner, name, value, 1, optional)


def non_negative_int(owner: str, name: str, value, optional: bool = False):
    """An integer >= 0."""
    return integer(owner, name, value, 0, optional)


def seed(owner: str, name: str, value, optional: bool = True):
    """A random seed: an integer >= 0, or None (draw one) unless not ``optional``."""
    return integer(owner, name, value, 0, optional)


def number_of(value):
    """A one-element tensor as its Python number, where torch takes one for a number
    (``arange(x.min(), x.max(), 0.01)``, ``init.normal_(x, mean=m.mean())``, ``x.clamp_(lo,
    hi)``); anything else as given, for the checks that follow to judge."""
    array = getattr(value, "array", None)  # a Tensor's (its ``item`` runs the read-back checks)
    return value.item() if getattr(array, "size", 0) == 1 else value


def real(owner: str, name: str, value, low: float = -math.inf, high: float = math.inf,
         ends: str = "[]", optional: bool = False):  # fmt: skip
    """A finite real number from ``low`` to ``high``; ``ends`` says which ends are included,
    as mathematics writes intervals: "[]", "[)", "(]" or "()"."""
    if optional and value is None:
        return value
    kind_ok = is_real(value)
    if kind_ok:
        above = value >= low if ends[0] == "[" else value > low
        below = value <= high if ends[1] == "]" else value < high
        if (is_integer(value) or math.isfinite(value)) and above and below:
            return value
    expected = ("None or " if optional else "") + "a finite number" + _bounds(low, high, ends)
    fail(owner, name, expected, value, ValueError if kind_ok else TypeError)


def _bounds(low: float, high: float, ends: str) -> str:
    """ " in [0, 1)", " > 0", " <= 1" or "": the words for an interval."""
    if low > -math.inf and high < math.inf:
        return f" in {ends[0]}{low:g}, {high:g}{ends[1]}"
    if low > -math.inf:
        return f" {'>=' if ends[0] == '[' else '>'} {low:g}"
    if high < math.inf:
        return f" {'<=' if ends[1] == ']' else '<'} {high:g}"
    return ""


def positive(owner: str, name: str, value, optional: bool = False):
    """A finite number > 0 (a scale, an epsilon)."""
    return real(owner, name, value, 0, math.inf, "(]", optional)


def non_negative(owner: str, name: str, value, optional: bool = False):
    """A finite number >= 0 (a learning rate, a weight decay)."""
    return real(owner, name, value, 0, math.inf, "[]", optional)


def probability(owner: str, name: str, value, optional: bool = False):
    """A probability of dropping something: a number in [0, 1) (1 would drop everything)."""
    return real(owner, name, value, 0, 1, "[)", optional)


def interval(low: float, high: float, ends: str = "[]") -> Check:
    """The check of a finite number from ``low`` to ``high`` (``ends`` as for ``real``)."""
    return functools.partial(real, low=low, high=high, ends=ends)


# ---------------------------------------------------------------------- axes
def axis(owner: str, name: str, value, ndim: int, shape: tuple | None = None) -> int:
    """An axis of ``ndim`` (of an input of ``shape``, for the message), in [-ndim, ndim), as an
    index >= 0."""
    kind_ok = is_integer(value)
    if kind_ok and -ndim <= value < ndim:
        return int(value) % ndim
    expected = f"an integer in [-{ndim}, {ndim})" + _of(shape)
    fail(owner, name, expected, value, ValueError if kind_ok else TypeError)


def axes(owner: str, name: str, value, ndim: int, shape: tuple | None = None) -> tuple[int, ...]:
    """None (every axis), one axis or a sequence of distinct axes of ``ndim`` (of an input of
    ``shape``, for the message), as a sorted tuple of indices >= 0."""
    if value is None:
        return tuple(range(ndim))
    items = (value,) if is_integer(value) else value
    kind_ok = isinstance(items, tuple | list) and all(map(is_integer, items))
    if kind_ok and all(-ndim <= a < ndim for a in items):
        found = sorted({int(a) % ndim for a in items})
        if len(found) == len(items):
            return tuple(found)
    expected = f"None, an integer in [-{ndim}, {ndim}) or distinct ones" + _of(shape)
    fail(owner, name, expected, value, ValueError if kind_ok else TypeError)


def _of(shape: tuple | None) -> str:
    return "" if shape is None else f" (the input's shape is {shape})"


# ---------------------------------------------------------------------- other kinds
def boolean(owner: str, name: str, value, optional: bool = False):
    """True or False (numpy's bools too); not 0, 1 or any other truthy value."""
    if not (isinstance(value, bool | np.bool_) or (optional and value is None)):
        fail(owner, name, ("None, " if optional else "") + "True or False", value, TypeError)
    return value


def one_of(choices: Iterable) -> Check:
    """The check of a value among ``choices``, compared by type and value (0 is not False)."""
    choices = tuple(choices)

    def check(owner: str, name: str, value, optional: bool = False):
        if optional and value is None:
            return value
        if not any(type(value) is type(choice) and value == choice for choice in choices):
            expected = ("None or " if optional else "") + "one of " + ", ".join(map(repr, choices))
            fail(owner, name, expected, value)
        return value

    return check


def text(owner: str, name: str, value, optional: bool = False):
    """A string (a name, a pattern)."""
    if not (isinstance(value, str) or (optional and value is None)):
        fail(owner, name, ("None or " if optional else "") + "a str", value, TypeError)
    return value


def function(owner: str, name: str, value, optional: bool = False):
    """A callable (an initialiser, a filter, a layer)."""
    if not (callable(value) or (optional and value is None)):
        fail(owner, name, ("None or " if optional else "") + "callable", value, TypeError)
    return value


def instance(*kinds: type) -> Check:
    """The check of an instance of one of ``kinds`` (a config given to a model)."""
    expected = " or ".join(f"a {kind.__name__}" for kind in kinds)

    def check(owner: str, name: str, value, optional: bool = False):
        if not (isinstance(value, kinds) or (optional and value is None)):
            fail(owner, name, ("None or " if optional else "") + expected, value, TypeError)
        return value

    return check


def optional(check: Check) -> Check:
    """``check``, which also accepts None."""
    return functools.partial(check, optional=True)


# ---------------------------------------------------------------------- declaring checks
def arguments(**checks: Check):
    """Decorate a function (or method) so that each argument named here is checked when
    given; defaults are not checked (they are the author's). The owner in the messages is
    the function's name, or for a method its object's class (and ``.method``, unless the
    method is ``__init__`` or ``__call__``)."""

    def decorate(fn):
        signature = inspect.signature(fn)
        unknown = set(checks) - set(signature.parameters)
        if unknown:
            raise TypeError(f"arguments: {fn.__qualname__} has no parameters {sorted(unknown)}")
        method = next(iter(signature.parameters), None) in ("self", "cls")
        suffix = "" if fn.__name__ in ("__init__", "__call__") else f".{fn.__name__}"
        # where each checked argument arrives: its position, unless only a keyword reaches it;
        # an argument gathered by *args or **kwargs needs the signature bound (slower)
        kinds = {name: signature.parameters[name].kind for name in checks}
        bind = any(k in (P.VAR_POSITIONAL, P.VAR_KEYWORD) for k in kinds.values())
        order = list(signature.parameters)
        position = {n: order.index(n) for n, k in kinds.items() if k in _POSITIONAL}

        @functools.wraps(fn)
        def checked(*args, **kwargs):
            if method and args:  # the object's class, or the class of a classmethod
                owner = (args[0] if isinstance(args[0], type) else type(args[0])).__name__
                owner += suffix
            else:
                owner = fn.__name__
            if bind:
                given = signature.bind(*args, **kwargs).arguments
                for name, check in checks.items():
                    if name in given:
                        check(owner, name, given[name])
            else:  # a checked argument is a keyword, or the positional at its place
                for name, check in checks.items():
                    if name in kwargs:
                        check(owner, name, kwargs[name])
                    elif position.get(name, len(args)) < len(args):
                        check(owner, name, args[position[name]])
            return fn(*args, **kwargs)

        checked.checks = checks  # what is checked, for tests and readers
        return checked

    return decorate


def by_name(table: dict[str, Check]):
    """A decorator like ``arguments`` that checks every parameter by its name in ``table``,
    for a module whose arguments mean the same everywhere (``embedding_dim`` is always an
    integer >= 1); a parameter missing from the table is an error when the module loads."""

    def decorate(fn):
        names = [name for name in inspect.signature(fn).parameters if name != "self"]
        missing = [name for name in names if name not in table]
        if missing:
            raise TypeError(f"by_name: no check for {missing} of {fn.__qualname__}")
        return arguments(**{name: table[name] for name in names})(fn)

    return decorate
