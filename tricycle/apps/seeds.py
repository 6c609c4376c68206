"""torch's ``generator=`` arguments taken tricycle's way: as the seed that the loader, the
samplers and ``random_split`` draw their orders from.

tricycle draws epoch e's order from (seed, e), never from a generator's running state, so
that runs repeat, a resumed epoch continues the same order and every rank draws alike. A
generator given where torch takes one becomes that seed once, when the object is made:

- an int: the seed itself;
- a numpy ``Generator`` or ``RandomState``: a seed drawn from it (generators seeded alike
  give the same orders, and the generator moves on, as torch's does);
- torch's ``Generator`` (anything with ``initial_seed()``): its initial seed, so
  ``torch.Generator().manual_seed(s)`` is ``seed=s``.

The orders are tricycle's permutations of that seed: repeatable, but not the ones torch
draws from the same generator.
"""

import numpy as np

from tricycle import checks


def seed_from(owner: str, seed: int | None, generator) -> int | None:
    """The seed that ``owner``'s ``seed`` and torch's ``generator`` (at most one of them)
    stand for; None when neither is given (the owner's default)."""
    if generator is None:
        return seed
    if seed is not None:
        raise ValueError(
            f"{owner}: pass seed or generator, not both (got seed={seed} and a "
            f"{type(generator).__name__}): the generator only gives the seed"
        )
    if checks.is_integer(generator) and not isinstance(generator, bool):
        checks.seed(owner, "generator", generator)
        return int(generator)
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(2**63))
    if isinstance(generator, np.random.RandomState):
        return int(generator.randint(2**31))
    initial_seed = getattr(generator, "initial_seed", None)
    if callable(initial_seed):
        return int(initial_seed())
    raise TypeError(
        f"{owner}: generator must be a seed (int >= 0), a numpy Generator or RandomState, or "
        f"torch's Generator (its initial_seed() is used), got a {type(generator).__name__}; "
        "or pass seed=<int>"
    )


__all__ = ["seed_from"]
