"""SwiGLU, silu(a) * b for x = a | b, one pass each way.

Kernels and the adapters registered for ``tricycle.activation``'s "swiglu", with the
references' signatures.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import rows
from tricycle.backends.cpu.compile import parallel_jit
from tricycle.backends.cpu.maths import exp, typed


@parallel_jit
def swiglu_forward_kernel(out, inp, first, last):
    """out = silu(a) * b per row of inp = a | b (N, 2F), silu(a) = a / (1 + e^-a): rows
    first..last."""
    F = out.shape[1]
    for n in range(first, last):
        for i in range(F):
            a, b = inp[n, i], inp[n, F + i]
            out[n, i] = a / (typed(a, 1.0) + exp(-a)) * b


@parallel_jit
def swiglu_backward_kernel(dinp, dout, inp, first, last):
    """da = dout b s (1 + a (1 - s)), db = dout a s, with s = sigmoid(a): rows first..last."""
    F = dout.shape[1]
    for n in range(first, last):
        for i in range(F):
            a, b = inp[n, i], inp[n, F + i]
            s = typed(a, 1.0) / (typed(a, 1.0) + exp(-a))
            dinp[n, i] = dout[n, i] * b * s * (typed(a, 1.0) + a * (typed(a, 1.0) - s))
            dinp[n, F + i] = dout[n, i] * a * s


def swiglu_forward(xp, x):
    """As ``tricycle.activation.swiglu_forward``."""
    x2 = rows(x)  # (N, 2F)
    y = np.empty((x2.shape[0], x2.shape[1] // 2), x.dtype)
    swiglu_forward_kernel(y, x2, x2.shape[0])
    return y.reshape(x.shape[:-1] + (y.shape[1],))


def swiglu_backward(xp, x, dy):
    """As ``tricycle.activation.swiglu_backward``."""
    x2 = rows(x)
    dx = np.empty_like(x2)
    swiglu_backward_kernel(dx, rows(dy, x.dtype), x2, x2.shape[0])
    return dx.reshape(x.shape)


dispatch.add("swiglu", "cpu", (swiglu_forward, swiglu_backward))
