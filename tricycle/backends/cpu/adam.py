"""AdamW as one loop over a parameter's elements: ``tricycle.optimisers.adam_step``."""

import math

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit


@parallel_jit(grain=64)
def adamw_forward(w, g, m, v, beta1, beta2, rest1, rest2, eps, shrink, step_size,
                  inv_correction2, scale, first, last):  # fmt: skip
    """One AdamW step over elements first..last of flat arrays, in place on w, m and v (the
    scalars in w's type; ``rest1``/``rest2`` are 1 - beta1 and 1 - beta2 taken in float64,
    as torch takes them, not float32's 1 - float32(0.999), which is not float32(0.001))."""
    for i in range(first, last):
        gi = g[i] * scale
        m[i] = beta1 * m[i] + rest1 * gi
        v[i] = beta2 * v[i] + rest2 * gi * gi
        w[i] = w[i] * shrink - step_size * m[i] / (np.sqrt(v[i]) * inv_correction2 + eps)


def _fits(w, grad, m, v, *rest) -> bool:
    """The loop runs on flat views of w.size elements, writing w, m and v through them: w, m
    and v contiguous, and all four arrays of w's size (else the reference raises)."""
    contiguous = w.flags.c_contiguous and m.flags.c_contiguous and v.flags.c_contiguous
    return contiguous and w.size == grad.size == m.size == v.size


@dispatch.register("adam_step", "cpu", applies=_fits)
def adam_step(xp, w, grad, m, v, beta1, beta2, eps, decay, lr, step, grad_multiplier=1.0):
    dtype = w.dtype.type
    g = np.ascontiguousarray(grad, dtype=w.dtype).reshape(-1)
    adamw_forward(
        w.reshape(-1), g, m.reshape(-1), v.reshape(-1),
        dtype(beta1), dtype(beta2), dtype(1.0 - beta1), dtype(1.0 - beta2),
        dtype(eps), dtype(1.0 - lr * decay),
        dtype(lr / (1.0 - beta1**step)), dtype(1.0 / math.sqrt(1.0 - beta2**step)),
        dtype(grad_multiplier), w.size,
    )  # fmt: skip
