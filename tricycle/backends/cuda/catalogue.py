"""Every kernel instantiation that the family modules may launch, and compiling them all.

Used to compile everything ahead of a benchmark (``compile_all``, which fills CuPy's disk
cache) and by the nvcc check in the tests, which needs no GPU.
"""

from tricycle.backends.cuda import (
    add,
    attention,
    cast,
    cross_entropy,
    dropout,
    embedding,
    extremes,
    gelu,
    norm,
    optimiser,
    sdpa,
    softmax,
)
from tricycle.backends.cuda.launch import compiled

_FAMILIES = (
    add,
    softmax,
    norm,
    gelu,
    cross_entropy,
    embedding,
    extremes,
    attention,
    sdpa,
    dropout,
    optimiser,
    cast,
)


def instantiations() -> list[tuple[str, str, tuple[str, ...]]]:
    """(file, kernel, template args) of every kernel the launchers may launch."""
    return [item for family in _FAMILIES for item in family.instantiations()]


def compile_all() -> int:
    """Compile (or load from CuPy's disk cache) every instantiation; returns how many."""
    items = instantiations()
    for file, name, args in items:
        compiled(file, name, *args)
    return len(items)
