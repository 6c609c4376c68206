"""Weight initialisers: shape -> float32 numpy array.

Layers take an ``initialiser`` callable of one argument, the shape; bind the other arguments
with ``functools.partial``, e.g. ``partial(init_normal, std=gpt2_residual_std(n_layers))``.

Without an explicit ``rng`` the initialisers draw from tricycle's generator
(``tricycle/random.py``), so ``tricycle.manual_seed(42)`` makes a model reproducible;
``numpy.random.seed`` does not. An ``rng`` may be a ``numpy.random.Generator`` or
``RandomState``.
"""

import math

import numpy as np

from tricycle import checks, random
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


@checks.arguments(gain=checks.non_negative)
def init_xavier(shape, gain: float = 1.0, rng=None) -> np.ndarray:
    """Glorot/Xavier uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    shape = as_shape("init_xavier", shape)
    fan_in, fan_out = _fans(shape)
    if fan_in + fan_out == 0:  # an empty weight: nothing to draw
        return np.zeros(shape, dtype=DEFAULT_FLOAT)
    bound = float(gain) * math.sqrt(6.0 / (fan_in + fan_out))
    rng = random.generator() if rng is None else rng
    return rng.uniform(-bound, bound, size=shape).astype(DEFAULT_FLOAT)


init_glorot = init_xavier


@checks.arguments(bound=checks.non_negative)
def init_uniform(shape, bound: float, rng=None) -> np.ndarray:
    """Uniform U(-bound, bound). PyTorch's convolutions and recurrent layers start their
    weights and biases this way, with bound 1 / sqrt(fan_in) and 1 / sqrt(hidden_size)."""
    shape = as_shape("init_uniform", shape)
    rng = random.generator() if rng is None else rng
    return rng.uniform(-bound, bound, size=shape).astype(DEFAULT_FLOAT)


@checks.arguments(std=checks.non_negative, mean=checks.real)
def init_normal(shape, std: float = 0.02, rng=None, mean: float = 0.0) -> np.ndarray:
    """Normal N(mean, std^2), as GPT-2 initialises its weights (std 0.02)."""
    shape = as_shape("init_normal", shape)
    rng = random.generator() if rng is None else rng
    return rng.normal(mean, std, size=shape).astype(DEFAULT_FLOAT)


def init_zeros(shape) -> np.ndarray:
    """All zeros (biases)."""
    return np.zeros(as_shape("init_zeros", shape), dtype=DEFAULT_FLOAT)


def init_ones(shape) -> np.ndarray:
    """All ones (norm gains)."""
    return np.ones(as_shape("init_ones", shape), dtype=DEFAULT_FLOAT)


@checks.arguments(n_layers=checks.positive_int, std=checks.non_negative)
def gpt2_residual_std(n_layers: int, std: float = 0.02) -> float:
    """GPT-2's std for projections into the residual stream: std / sqrt(2 * n_layers).

    Each block adds twice to the residual stream (attention and MLP), so scaling their output
    projections keeps the stream's variance independent of depth.
    """
    return float(std) / math.sqrt(2 * n_layers)
