"""torch.cuda's random-number functions. tricycle draws every random number from one
generator on the host (``tricycle.random``), GPU tensors' too, so each of these is the
top-level function of that generator and answers with or without a GPU (torch's answer
without one: ``manual_seed``, ``seed`` and ``set_rng_state`` do nothing, ``initial_seed`` and
``get_rng_state`` raise): ``manual_seed`` seeds it, ``get_rng_state`` is
``tricycle.get_rng_state()``, and the ``_all`` forms give one state per GPU ([] without one,
as torch's), all the same state."""

from tricycle import random as tricycle_random
from tricycle import torch_rng
from tricycle.cuda.devices import device_count


def manual_seed(seed: int) -> None:
    """Seed tricycle's one generator (``tricycle.manual_seed``): GPU draws are made on the
    host from it, so this seeds them."""
    tricycle_random.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """``manual_seed``: one generator serves every GPU."""
    tricycle_random.manual_seed(seed)


def seed() -> None:
    """Seed the generator from the operating system's entropy (``tricycle.seed``)."""
    tricycle_random.seed()


def seed_all() -> None:
    """``seed``: one generator serves every GPU."""
    tricycle_random.seed()


def initial_seed() -> int:
    """The seed the generator was made from (``tricycle.initial_seed``)."""
    return tricycle_random.initial_seed()


def get_rng_state(device="cuda"):
    """The generator's state, a uint8 Tensor (``tricycle.get_rng_state``); ``device`` names a
    GPU for torch's sake (every GPU's is the one state)."""
    return torch_rng.get_rng_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Put the generator in ``new_state`` (``tricycle.set_rng_state``)."""
    torch_rng.set_rng_state(new_state)


def get_rng_state_all() -> list:
    """One state per GPU, all the generator's (``get_rng_state``); [] without a GPU."""
    return [torch_rng.get_rng_state() for _ in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Put the generator in each of ``new_states`` in turn (one per GPU, the last one stays:
    ``get_rng_state_all`` gives the same state for each)."""
    for state in new_states:
        torch_rng.set_rng_state(state)
