"""Argument types for the command-line programs (``tricycle.train``, ``tricycle.sample``).

Each is a function from the argument's text to its value that raises
``argparse.ArgumentTypeError`` for a bad one, so argparse answers with its usage line and the
reason (``--temperature: must be a finite number >= 0, got 'nan'``) instead of a traceback
later, or a run that silently misbehaves.
"""

import argparse
import math


def _number(text: str, kind, what: str, ok) -> int | float:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if (kind is float and not math.isfinite(value)) or not ok(value):
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (a count of steps, batches, tokens, threads...)."""
    return _number(text, int, "an integer >= 1", lambda v: v >= 1)


def nonnegative_int(text: str) -> int:
    """An integer >= 0."""
    return _number(text, int, "an integer >= 0", lambda v: v >= 0)


def seed(text: str) -> int:
    """A random seed: an integer in [0, 2**32) (what numpy's legacy seeding accepts)."""
    return _number(text, int, "an integer in [0, 2**32)", lambda v: 0 <= v < 2**32)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    return _number(text, float, "a finite number > 0", lambda v: v > 0)


def nonnegative_float(text: str) -> float:
    """A finite number >= 0."""
    return _number(text, float, "a finite number >= 0", lambda v: v >= 0)


def probability(text: str) -> float:
    """A probability of dropping something: a number in [0, 1)."""
    return _number(text, float, "a number in [0, 1)", lambda v: 0 <= v < 1)
