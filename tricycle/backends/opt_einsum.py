"""torch.backends.opt_einsum's switches. torch computes an einsum of three or more operands
along the contraction order that the opt_einsum package picks (when it is installed and
``enabled``), else from left to right. tricycle's einsum (``tricycle.contraction``) runs one
of two operands as a single matmul and one of three or more through numpy's (or cupy's)
``einsum(..., optimize=True)``, whose own greedy path search always picks the order: these
switches do not change it (nor the result, up to rounding). ``is_available()``,
``get_opt_einsum()`` and the defaults answer as torch's do here: whether the opt_einsum
package can be imported (``enabled`` and ``strategy="auto"`` then, else False and None), and
``set_flags``/``flags`` refuse what torch refuses, with its ValueErrors."""

import contextlib
import importlib
import importlib.util

_STRATEGIES = ("auto", "greedy", "optimal")


def is_available() -> bool:
    """Whether the opt_einsum package is installed (tricycle does not call it: see above)."""
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    """The opt_einsum package if it is installed, else None."""
    return importlib.import_module("opt_einsum") if is_available() else None


enabled = is_available()
strategy = "auto" if enabled else None


def _set_enabled(value) -> None:
    global enabled
    if value and not is_available():
        raise ValueError(
            f"opt_einsum is not available, so setting `enabled` to {value} will not reap the "
            "benefits of calculating an optimal path for einsum (pip install opt-einsum)"
        )
    enabled = value


def _set_strategy(value) -> None:
    global strategy
    if not is_available() or not enabled:
        raise ValueError(
            f"opt_einsum is not {'enabled' if is_available() else 'available'}, so setting "
            f"`strategy` to {value} will not be meaningful"
        )
    if value not in _STRATEGIES:
        raise ValueError(
            f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}"
        )
    strategy = value


def set_flags(_enabled=None, _strategy=None):
    """Set ``enabled`` and ``strategy`` (None keeps one); returns the previous pair."""
    before = (enabled, strategy if is_available() else None)
    if _enabled is not None:
        _set_enabled(_enabled)
    if _strategy is not None:
        _set_strategy(_strategy)
    return before


@contextlib.contextmanager
def flags(enabled=None, strategy=None):
    """``set_flags`` inside the block, restored after it."""
    before = set_flags(enabled, strategy)
    try:
        yield
    finally:
        set_flags(*before)
