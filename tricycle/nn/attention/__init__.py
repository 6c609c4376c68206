"""torch.nn.attention: the choice of attention kernel, causal biases and flex_attention.

``sdpa_kernel(backends)`` is torch's context manager that restricts
``F.scaled_dot_product_attention`` to some kernels (``SDPBackend``: flash, memory-efficient,
cuDNN, math). tricycle chooses its own kernel (``tricycle.nn.sdpa`` and the ones a backend
registers) and gives the same result whichever it picks, so the block checks its arguments as
torch's, records the choice (``current_backends``) and changes nothing else.
``bias`` holds torch's causal masks; ``flex_attention`` torch's flex attention, run eagerly.
"""

import contextlib
import threading
from enum import IntEnum

from tricycle.nn.attention import bias, flex_attention

__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "bias", "flex_attention", "sdpa_kernel"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """torch's attention kernels (its values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


class _Chosen(threading.local):
    backends: tuple | None = None  # None: every kernel allowed


_chosen = _Chosen()


def current_backends() -> list:
    """The backends the innermost ``sdpa_kernel`` block of this thread allows, in its order
    (every backend but ERROR outside any block)."""
    if _chosen.backends is None:
        return [b for b in SDPBackend if b != SDPBackend.ERROR]
    return list(_chosen.backends)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """torch's ``with sdpa_kernel(SDPBackend.FLASH_ATTENTION):`` block: ``backends`` is one
    SDPBackend or a list of them (``set_priority``: the list is an order of preference). The
    choice is recorded for the block (``current_backends``); tricycle's attention picks its
    own kernel, with the same result, so nothing else changes. Yields {} as torch's."""
    if not isinstance(backends, list | SDPBackend):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend "
                             f"instances, got {type(backends).__name__}")  # fmt: skip
    backends = [backends] if isinstance(backends, SDPBackend) else backends
    previous, _chosen.backends = _chosen.backends, tuple(dict.fromkeys(backends))
    try:
        yield {}
    finally:
        _chosen.backends = previous
