"""Counter-based dropout masks: the same mask from a seed on any device, never stored.

Attention dropout (``tricycle.attention``) drops elements of a (B, H, T, T) probability
matrix that the GPU kernels never materialise, and the backward must drop the same elements
again. So the mask is a pure function of the seed and the element's coordinates, computed
where it is needed: by numpy or cupy here, and by the CUDA kernel
(``tricycle/backends/cuda/attention.cu``, ``dropout_keep``) with the same constants.
"""

import numpy as np

from tricycle import backend, checks

# lowbias32 (C. Wellons' integer hash): a full-avalanche bijection of 32-bit integers. The CUDA
# kernel (tricycle/backends/cuda/attention.cu) uses the same constants, so both draw the same mask.
_GOLDEN = np.uint32(0x9E3779B9)


def _mix32(x):
    """lowbias32 of a uint32 array (wrapping arithmetic), elementwise."""
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def dropout_threshold(probability: float) -> int:
    """The uint32 below which a hash drops its element: round(p * 2^32), for p in [0, 1)."""
    if not 0 <= probability < 1:
        raise ValueError(f"attention: dropout probability must be in [0, 1), got {probability}")
    return min(int(round(probability * 2**32)), 2**32 - 1)


def mask_seed(owner: str, name: str, value):
    """A mask's seed: an integer >= 0, or a one-element uint32 device array holding it (what
    ``Dropout.step_seed`` gives while a CUDA graph is captured)."""
    if backend.is_cupy_array(value):
        if value.shape != (1,) or value.dtype != np.uint32:
            checks.fail(owner, name, "an integer >= 0 or a (1,) uint32 device array", value)
        return value
    return checks.non_negative_int(owner, name, value)


def keep_bits(xp, seed, probability: float, rows, keys):
    """Which attention probabilities dropout keeps (a bool array).

    ``rows`` are the query rows' global indices ``(b * H + h) * T + query`` and ``keys`` the
    key positions, broadcastable against each other; the result has their broadcast shape.
    Element u = mix(mix(seed ^ mix(row)) ^ key * golden) is kept when u >= p * 2^32.
    """
    seed = seed.reshape(()) if backend.is_cupy_array(seed) else np.uint32(seed)
    row_key = _mix32(seed ^ _mix32(rows.astype(np.uint32)))
    u = _mix32(row_key ^ (keys.astype(np.uint32) * _GOLDEN))
    return u >= np.uint32(dropout_threshold(probability))


def keep_mask(xp, seed: int, probability: float, rows, keys, dtype=np.float32):
    """The inverted-dropout multiplier M (0 or 1 / (1 - p)) of ``keep_bits``."""
    kept = keep_bits(xp, seed, probability, rows, keys)
    return kept.astype(dtype) * np.dtype(dtype).type(1 / (1 - probability))


def attention_multiplier(xp, seed, probability: float, shape, dtype):
    """M (B, H, Tq, Tk) of ``keep_mask`` for attention probabilities of ``shape``: element
    (b, h, i, j) belongs to row (b H + h) Tq + i and key j."""
    B, H, Tq, Tk = shape
    rows = xp.arange(B * H * Tq).reshape(B, H, Tq, 1)
    return keep_mask(xp, seed, probability, rows, xp.arange(Tk), dtype)


class AttentionDropout:
    """Dropout of attention probabilities: a probability and a seed per call.

    ``seed`` picks that call's mask (see ``keep_mask``): an int, or a device array holding it
    (``mask_seed``); ``NO_DROPOUT`` has probability 0.
    """

    __slots__ = ("probability", "seed")

    @checks.arguments(probability=checks.probability, seed=mask_seed)
    def __init__(self, probability: float = 0.0, seed=0):
        self.probability = float(probability)
        self.seed = seed if backend.is_cupy_array(seed) else int(seed) % 2**32

    @property
    def scale(self) -> float:
        """1 / (1 - p): what kept probabilities are multiplied by."""
        return 1 / (1 - self.probability)


NO_DROPOUT = AttentionDropout()
