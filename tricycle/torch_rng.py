"""torch's random state as a tensor: ``get_rng_state`` and ``set_rng_state`` (torch's
``torch.get_rng_state()`` ... ``torch.set_rng_state(state)``, to repeat a stretch of draws).

The state is that of tricycle's one generator (``tricycle.random``): a uint8 Tensor of
``random.STATE_BYTES`` bytes, which round-trips exactly (torch's CPU state has 5056 bytes,
its Mersenne Twister's; the two are not interchangeable). Every device draws from it, so it
is the state of ``tricycle.cuda``'s generator too. ``default_generator`` is that generator as
torch's Generator object.
"""

import numpy as np

from tricycle import backend, random
from tricycle.tensor import Tensor


def get_rng_state() -> Tensor:
    """torch.get_rng_state: the generator's state, a uint8 Tensor (a copy)."""
    return Tensor(random.state_bytes(), requires_grad=False, dtype=np.uint8)


def set_rng_state(new_state: Tensor) -> None:
    """torch.set_rng_state: put the generator in the state ``get_rng_state`` returned. Not a
    uint8 Tensor: a TypeError; one of another size: a RuntimeError, as torch's."""
    if not isinstance(new_state, Tensor) or new_state.dtype != np.uint8:
        got = f"dtype {new_state.dtype}" if isinstance(new_state, Tensor) else type(new_state)
        raise TypeError(f"set_rng_state: the RNG state must be a uint8 Tensor (get_rng_state's),"
                        f" got {got}")  # fmt: skip
    if new_state.shape != (random.STATE_BYTES,):
        raise RuntimeError(
            f"set_rng_state: expected a state of shape ({random.STATE_BYTES},) (get_rng_state's),"
            f" got shape {new_state.shape}"
        )
    random.restore_state(np.asarray(new_state.numpy()), "set_rng_state")


__all__ = ["get_rng_state", "set_rng_state"]


class DefaultGenerator:
    """torch.default_generator: tricycle's own generator (``tricycle.random``'s, which
    ``manual_seed`` replaces) as torch's Generator object: ``manual_seed``, ``seed``,
    ``initial_seed``, ``get_state`` and ``set_state`` act on it, and ``generator=`` arguments
    take it for it (as None)."""

    is_default_generator = True
    device = backend.device("cpu")

    def manual_seed(self, seed: int) -> "DefaultGenerator":
        """Seed tricycle's generator (``tricycle.manual_seed``); returns this object."""
        random.manual_seed(seed)
        return self

    def seed(self) -> int:
        """Seed from the operating system (``tricycle.seed``); returns the seed."""
        return random.seed()

    def initial_seed(self) -> int:
        """The seed of tricycle's generator (``tricycle.initial_seed``)."""
        return random.initial_seed()

    def get_state(self) -> Tensor:
        """The state, as ``get_rng_state`` gives it."""
        return get_rng_state()

    def set_state(self, new_state: Tensor) -> "DefaultGenerator":
        """Put the state back (``set_rng_state``); returns this object."""
        set_rng_state(new_state)
        return self

    def __repr__(self) -> str:
        return "tricycle.default_generator"


default_generator = DefaultGenerator()
