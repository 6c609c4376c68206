"""Test helpers: numerical gradients, and a gradient check for any Tensor function.

``check_grads(f, *arrays)`` builds float64 tensors, takes the weighted sum of ``f``'s output
with fixed random weights (so every output element gets a distinct upstream gradient), and
compares each input's ``.grad`` with central finite differences.
"""

from contextlib import contextmanager

import numpy as np

from tricycle import blocking, threads
from tricycle.tensor import Tensor


def numerical_grad(scalar_fn, arrays, i: int, eps: float = 1e-6) -> np.ndarray:
    """d scalar_fn(arrays) / d arrays[i] by central differences (arrays in float64)."""
    x = arrays[i]
    grad = np.zeros_like(x)
    flat, g = x.reshape(-1), grad.reshape(-1)
    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + eps
        up = scalar_fn(arrays)
        flat[k] = old - eps
        down = scalar_fn(arrays)
        flat[k] = old
        g[k] = (up - down) / (2 * eps)
    return grad


def check_grads(f, *arrays, wrt=None, rtol: float = 1e-5, atol: float = 1e-7, seed: int = 0):
    """Assert that autodiff gradients of ``f`` match finite differences for inputs ``wrt``."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    wrt = range(len(arrays)) if wrt is None else wrt
    out_shape = f(*[Tensor(a, requires_grad=False) for a in arrays]).shape
    weights = np.random.default_rng(seed).normal(size=out_shape)

    def scalar_fn(values):
        out = f(*[Tensor(v, requires_grad=False) for v in values])
        return float(np.sum(out.array * weights))

    tensors = [Tensor(a.copy(), requires_grad=(i in wrt)) for i, a in enumerate(arrays)]
    out = f(*tensors)
    assert out.dtype == np.float64, f"f lost float64 precision: {out.dtype}"
    out.backward(weights)
    for i in wrt:
        expected = numerical_grad(scalar_fn, arrays, i)
        actual = tensors[i].grad.array
        assert actual.shape == arrays[i].shape
        np.testing.assert_allclose(
            actual, expected, rtol=rtol, atol=atol, err_msg=f"gradient of input {i}"
        )
    return out


@contextmanager
def blocks_over_threads(monkeypatch, block_elements: int):
    """Fused ops in blocks of ``block_elements`` elements (many blocks), spread over a pool of
    two threads whatever the machine's load: the threaded path of ``tricycle.blocking``."""
    monkeypatch.setattr(blocking, "BLOCK_ELEMENTS", block_elements)
    with threads.enabled(2, share_machine=False):
        yield
