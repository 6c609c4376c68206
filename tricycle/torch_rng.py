"""torch's random state as a tensor: ``get_rng_state`` and ``set_rng_state`` (torch's
``torch.get_rng_state()`` ... ``torch.set_rng_state(state)``, to repeat a stretch of draws).

The state is that of tricycle's one generator (``tricycle.random``): a uint8 Tensor of
``random.STATE_BYTES`` bytes, which round-trips exactly (torch's CPU state has 5056 bytes,
its Mersenne Twister's; the two are not interchangeable). Every device draws from it, so it
is the state of ``tricycle.cuda``'s generator too.
"""

import numpy as np

from tricycle import random
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
