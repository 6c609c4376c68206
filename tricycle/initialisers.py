"""Weight initialisers: shape -> float32 numpy array.

Layers take an ``initialiser`` callable of one argument, the shape; bind the other arguments
with ``functools.partial``, e.g. ``partial(init_normal, std=gpt2_residual_std(n_layers))``.

Without an explicit ``rng`` the initialisers draw from tricycle's generator
(``tricycle/random.py``), so ``tricycle.manual_seed(42)`` makes a model reproducible;
``numpy.random.seed`` does not. An ``rng`` may be a ``numpy.random.Generator`` or
``RandomState``.
"""

import math
import numbers

import numpy as np

from tricycle import random
from tricycle.backend import DEFAULT_FLOAT
from tricycle.factories import as_shape


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight stored as (..., from_size, to_size), as Dense stores it."""
    if len(shape) == 0:
        raise ValueError("initialiser: cannot compute fans of a scalar shape ()")
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _real(op: str, name: str, value, low: float = -math.inf, closed: bool = True) -> float:
    """A finite real argument at least (or, unless ``closed``, above) ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a real number, got {value!r}")
    if not (math.isfinite(value) and (value >= low if closed else value > low)):
        bound = f"{'>=' if closed else '>'} {low:g}" if low > -math.inf else "finite"
        raise ValueError(f"{op}: {name} must be {bound}, got {value}")
    return float(value)


def init_xavier(shape, gain: float = 1.0, rng=None) -> np.ndarray:
    """Glorot/Xavier uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    shape = as_shape("init_xavier", shape)
    gain = _real("init_xavier", "gain", gain, 0.0)
    fan_in, fan_out = _fans(shape)
    if fan_in + fan_out == 0:  # an empty weight: nothing to draw
        return np.zeros(shape, dtype=DEFAULT_FLOAT)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    rng = random.generator() if rng is None else rng
    return rng.uniform(-bound, bound, size=shape).astype(DEFAULT_FLOAT)


init_glorot = init_xavier


def init_uniform(shape, bound: float, rng=None) -> np.ndarray:
    """Uniform U(-bound, bound). PyTorch's convolutions and recurrent layers start their
    weights and biases this way, with bound 1 / sqrt(fan_in) and 1 / sqrt(hidden_size)."""
    shape = as_shape("init_uniform", shape)
    bound = _real("init_uniform", "bound", bound, 0.0)
    rng = random.generator() if rng is None else rng
    return rng.uniform(-bound, bound, size=shape).astype(DEFAULT_FLOAT)


def init_normal(shape, std: float = 0.02, rng=None, mean: float = 0.0) -> np.ndarray:
    """Normal N(mean, std^2), as GPT-2 initialises its weights (std 0.02)."""
    shape = as_shape("init_normal", shape)
    std, mean = _real("init_normal", "std", std, 0.0), _real("init_normal", "mean", mean)
    rng = random.generator() if rng is None else rng
    return rng.normal(mean, std, size=shape).astype(DEFAULT_FLOAT)


def init_zeros(shape) -> np.ndarray:
    """All zeros (biases)."""
    return np.zeros(as_shape("init_zeros", shape), dtype=DEFAULT_FLOAT)


def init_ones(shape) -> np.ndarray:
    """All ones (norm gains)."""
    return np.ones(as_shape("init_ones", shape), dtype=DEFAULT_FLOAT)


def gpt2_residual_std(n_layers: int, std: float = 0.02) -> float:
    """GPT-2's std for projections into the residual stream: std / sqrt(2 * n_layers).

    Each block adds twice to the residual stream (attention and MLP), so scaling their output
    projections keeps the stream's variance independent of depth.
    """
    if isinstance(n_layers, bool) or not isinstance(n_layers, numbers.Integral):
        raise TypeError(f"gpt2_residual_std: n_layers must be an integer, got {n_layers!r}")
    if n_layers < 1:
        raise ValueError(f"gpt2_residual_std: n_layers must be >= 1, got {n_layers}")
    return _real("gpt2_residual_std", "std", std, 0.0) / math.sqrt(2 * n_layers)
