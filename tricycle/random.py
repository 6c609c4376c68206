"""The seedable random generator behind factories, initialisers and dropout.

tricycle draws every random number it makes on its own (weight initialisation, ``rand``,
``randn``, ``randint``, the seeds of ``Dropout`` layers) from one numpy ``Generator``, so one
call reproduces a model exactly, as ``torch.manual_seed`` does::

    import tricycle
    tricycle.manual_seed(0)
    model = GPT(config)  # the same weights, and the same dropout seeds, every time

``numpy.random.seed`` does not seed this generator: tricycle's draws are independent of
numpy's global state, which other code may use or reseed. Until ``manual_seed`` is called
the generator is seeded from the operating system's entropy (a different model each run).

``use_deterministic_algorithms`` holds torch's switch for the scripts that set it (a course's
``set_seed``); tricycle picks no algorithm by it, and ``are_deterministic_algorithms_enabled``
reads it back.

Random draws happen on the host and are copied to a GPU when asked for, so a seed gives the
same numbers on every device.
"""

import threading

import numpy as np

from tricycle import checks

_generator: np.random.Generator | None = None
_lock = threading.Lock()
_deterministic = False  # torch's switch (see the module's doc)


def manual_seed(seed: int) -> np.random.Generator:
    """Seed tricycle's generator with a non-negative integer; returns the new generator."""
    global _generator
    checks.non_negative_int("manual_seed", "seed", seed)
    with _lock:
        _generator = np.random.default_rng(seed)
        return _generator


def generator() -> np.random.Generator:
    """The generator tricycle draws from: seeded by ``manual_seed``, else from the OS."""
    global _generator
    if _generator is None:  # created on first use: importing tricycle draws nothing
        with _lock:
            if _generator is None:
                _generator = np.random.default_rng()
    return _generator


def given_or_ours(op: str, given) -> np.random.Generator:
    """What a ``generator=`` argument of ``op`` stands for: the numpy Generator ``given``, or
    tricycle's for None (so ``manual_seed`` repeats the draw); anything else a TypeError."""
    if given is None:
        return generator()
    if not isinstance(given, np.random.Generator):
        expected = "None (tricycle's generator) or a numpy Generator"
        checks.fail(op, "generator", expected, given, TypeError)
    return given


def draw_seed() -> int:
    """A seed in [0, 2^31) from the generator, for an object that keeps its own generator
    (a Dropout layer): it then reproduces under ``manual_seed`` like everything else."""
    return int(generator().integers(2**31))


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """torch.use_deterministic_algorithms: the switch is held (tricycle chooses no algorithm
    by it); ``mode`` must be a bool, as torch's."""
    global _deterministic
    checks.boolean("use_deterministic_algorithms", "mode", mode)
    checks.boolean("use_deterministic_algorithms", "warn_only", warn_only)
    _deterministic = mode


def are_deterministic_algorithms_enabled() -> bool:
    """torch.are_deterministic_algorithms_enabled: the last ``use_deterministic_algorithms``."""
    return _deterministic
