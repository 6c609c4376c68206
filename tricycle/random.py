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

``seed`` reseeds it from the OS and returns the seed, ``initial_seed`` says the seed it was
last given (drawn from the OS until ``manual_seed``), ``state_bytes`` and ``restore_state``
read and write its whole state as bytes (``tricycle.get_rng_state``'s uint8 Tensor), and
``fork_rng`` puts the state back after a block, as ``torch.random``'s do. torch.random's
other names are here too: ``get_rng_state``, ``set_rng_state``, ``default_generator`` and
``Generator`` (``tricycle.torch_rng``'s and ``torch_random``'s, loaded when asked for), and
``thread_safe_generator``.

``use_deterministic_algorithms`` holds torch's switch for the scripts that set it (a course's
``set_seed``); tricycle picks no algorithm by it, and ``are_deterministic_algorithms_enabled``
reads it back.

Random draws happen on the host and are copied to a GPU when asked for, so a seed gives the
same numbers on every device.
"""

import contextlib
import importlib
import threading
from collections.abc import Iterator

import numpy as np

from tricycle import checks

_generator: np.random.Generator | None = None
_initial_seed: int | None = None  # the seed the generator was made from
_lock = threading.Lock()
_deterministic = False  # torch's switch (see the module's doc)
_warn_only = False  # and its warn_only


def manual_seed(seed: int) -> np.random.Generator:
    """Seed tricycle's generator with a non-negative integer; returns the new generator."""
    global _generator, _initial_seed
    checks.non_negative_int("manual_seed", "seed", seed)
    with _lock:
        _generator, _initial_seed = np.random.default_rng(seed), int(seed)
        return _generator


def _os_seed() -> int:
    """A seed of 64 bits from the operating system's entropy (torch's seeds are 64-bit)."""
    return int(np.random.SeedSequence().entropy) % 2**64


def seed() -> int:
    """torch.seed: seed the generator from the OS's entropy; returns that seed."""
    new = _os_seed()
    manual_seed(new)
    return new


def initial_seed() -> int:
    """torch.initial_seed: the seed the generator was made from (``manual_seed``'s, or the
    one drawn from the OS)."""
    generator()
    return _initial_seed


def generator() -> np.random.Generator:
    """The generator tricycle draws from: seeded by ``manual_seed``, else from the OS."""
    global _generator, _initial_seed
    if _generator is None:  # created on first use: importing tricycle draws nothing
        with _lock:
            if _generator is None:
                _initial_seed = _os_seed()
                _generator = np.random.default_rng(_initial_seed)
    return _generator


# the generator's state (numpy's PCG64: a 128-bit state and increment, and a 32-bit draw
# kept for the next call) as bytes, little-endian: 16 + 16 + 4 + 4
STATE_BYTES = 40


def state_bytes() -> np.ndarray:
    """The generator's whole state as ``STATE_BYTES`` uint8 (``restore_state`` takes it back)."""
    state = generator().bit_generator.state
    words = (state["state"]["state"], state["state"]["inc"])
    parts = [w.to_bytes(16, "little") for w in words]
    parts += [int(state[k]).to_bytes(4, "little") for k in ("has_uint32", "uinteger")]
    return np.frombuffer(b"".join(parts), dtype=np.uint8).copy()


def restore_state(data: np.ndarray, op: str = "restore_state") -> None:
    """Put the generator back in the state ``state_bytes`` read (a ValueError naming ``op``
    for an array of another dtype or size)."""
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.size != STATE_BYTES:
        shown = f"{data.dtype} of shape {data.shape}" if isinstance(data, np.ndarray) else data
        checks.fail(op, "state", f"{STATE_BYTES} uint8 (state_bytes' array)", shown)
    raw = data.tobytes()
    state, inc, has_uint32, uinteger = (
        int.from_bytes(raw[start:stop], "little")
        for start, stop in ((0, 16), (16, 32), (32, 36), (36, 40))
    )
    state = {"state": state, "inc": inc}
    if has_uint32 > 1:
        checks.fail(op, "state", "bytes state_bytes wrote (has_uint32 is 0 or 1)", has_uint32)
    bits = generator().bit_generator
    bits.state = {**bits.state, "state": state, "has_uint32": has_uint32, "uinteger": uinteger}


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled: bool = True, _caller="fork_rng", _devices_kw="devices", device_type=None
) -> Iterator[None]:
    """torch.random.fork_rng: the block draws as it likes, and the generator's state is put
    back after it (unless not ``enabled``). tricycle draws on the host for every device, so
    the one generator is the state of all of them: ``devices`` and ``device_type`` name no
    other."""
    checks.boolean(_caller, "enabled", enabled)
    if not enabled:
        yield
        return
    saved = state_bytes()
    try:
        yield
    finally:
        restore_state(saved, _caller)


def given_or_ours(op: str, given) -> np.random.Generator:
    """What a ``generator=`` argument of ``op`` stands for: the numpy Generator ``given``, or
    tricycle's for None (so ``manual_seed`` repeats the draw); anything else a TypeError."""
    if given is None or getattr(given, "is_default_generator", False):
        return generator()  # None, or torch_rng.default_generator: tricycle's own
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
    global _deterministic, _warn_only
    checks.boolean("use_deterministic_algorithms", "mode", mode)
    checks.boolean("use_deterministic_algorithms", "warn_only", warn_only)
    _deterministic, _warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """torch.are_deterministic_algorithms_enabled: the last ``use_deterministic_algorithms``."""
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """torch.is_deterministic_algorithms_warn_only_enabled: the last ``warn_only``."""
    return _warn_only


DEBUG_MODES = ("default", "warn", "error")  # torch's names of debug modes 0, 1 and 2


def get_deterministic_debug_mode() -> int:
    """torch.get_deterministic_debug_mode: 0 (off), 1 (warn only) or 2 (on), the switch's."""
    return 0 if not _deterministic else 1 if _warn_only else 2


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """torch.set_deterministic_debug_mode: ``use_deterministic_algorithms`` by torch's number
    (0, 1, 2) or name ("default", "warn", "error")."""
    if isinstance(debug_mode, str):
        if debug_mode not in DEBUG_MODES:
            expected = "expected one of `default`, `warn`, `error`"
            raise RuntimeError(f"set_deterministic_debug_mode: invalid value of debug_mode, "
                               f"{expected}, but got {debug_mode}")  # fmt: skip
        debug_mode = DEBUG_MODES.index(debug_mode)
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError("set_deterministic_debug_mode: debug_mode must be str or int, but got "
                        f"{type(debug_mode)}")  # fmt: skip
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("set_deterministic_debug_mode: invalid value of debug_mode, expected "
                           f"0, 1, or 2, but got {debug_mode}")  # fmt: skip
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def thread_safe_generator() -> None:
    """torch.random.thread_safe_generator: the generator a DataLoader thread worker should draw
    from, None elsewhere (the global one). tricycle's workers are processes, each with its own
    copy of the generator, so it is always None: draw from tricycle's generator."""
    return None


# torch.random's names that the engine defines on tricycle's generator: a higher layer, so
# loaded by name when first asked for (an import here would close a loop through the Tensor)
_ENGINE_NAMES = {
    "get_rng_state": "tricycle.torch_rng",
    "set_rng_state": "tricycle.torch_rng",
    "default_generator": "tricycle.torch_rng",
    "Generator": "tricycle.torch_random",
}


def __getattr__(name: str):
    if name in _ENGINE_NAMES:
        return getattr(importlib.import_module(_ENGINE_NAMES[name]), name)
    raise AttributeError(f"module 'tricycle.random' has no attribute {name!r}")
