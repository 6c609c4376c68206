"""GeLU, exact (erf) or tanh form, alone or after a bias add, one pass over the elements.

Kernels and the adapters registered for ``tricycle.activation``'s "gelu" and "bias_gelu",
with the references' signatures. The backward recomputes the slope from x.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import CHUNK_ROWS, n_chunks, rows, same_dtype
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.maths import exp, normal_tail, tanh, typed

_SQRT_2_OVER_PI = 0.7978845608028654
_CUBIC = 0.044715
_INV_SQRT_2PI = 0.3989422804014327


# ---------------------------------------------------------------------- one element
@jit(inline="always")
def gelu_tanh(x):
    """x (1 + tanh(sqrt(2/pi) (x + c x^3))) / 2."""
    u = typed(x, _SQRT_2_OVER_PI) * (x + typed(x, _CUBIC) * x * x * x)
    return typed(x, 0.5) * x * (typed(x, 1.0) + tanh(u))


@jit(inline="always")
def gelu_tanh_slope(x):
    """1/2 + v + t (1/2 - t v), t = tanh(u), v = x sqrt(2/pi) (1 + 3 c x^2) / 2."""
    half = typed(x, 0.5)
    t = tanh(typed(x, _SQRT_2_OVER_PI) * (x + typed(x, _CUBIC) * x * x * x))
    v = half * typed(x, _SQRT_2_OVER_PI) * x * (typed(x, 1.0) + typed(x, 3 * _CUBIC) * x * x)
    return half + v + t * (half - t * v)


@jit(inline="always")
def gelu_exact(x):
    """x Phi(x) = max(x, 0) - |x| Phi(-|x|): no cancellation in either tail."""
    return max(x, typed(x, 0.0)) - abs(x) * normal_tail(x)


@jit(inline="always")
def gelu_exact_slope(x):
    """Phi(x) + x phi(x), Phi(x) = 1/2 + sign(x) (1/2 - Phi(-|x|))."""
    half = typed(x, 0.5)
    tail = half - normal_tail(x)
    phi = typed(x, _INV_SQRT_2PI) * exp(-half * x * x)
    return half + (tail if x >= 0 else -tail) + x * phi


# ---------------------------------------------------------------------- kernels
# Written once with ``gelu`` and ``gelu_slope``, and compiled for each form (``FORWARD``,
# ``BACKWARD``): a run compiles the form it uses only.
gelu, gelu_slope = gelu_exact, gelu_exact_slope


@parallel_jit
def gelu_forward_kernel(out, inp, bias, first, last):
    """out = gelu(inp + bias) per row of inp (N, C), rows first..last."""
    C = inp.shape[1]
    for n in range(first, last):
        for i in range(C):
            out[n, i] = gelu(inp[n, i] + bias[i])


@parallel_jit
def gelu_backward_kernel(dinp, dbias_parts, dout, inp, bias, first, last):
    """dinp = dout * gelu'(inp + bias); with a bias, its gradient as one partial row per
    chunk of CHUNK_ROWS rows (``dbias_parts`` (0, 0) without): chunks first..last."""
    N, C = inp.shape
    with_bias = dbias_parts.shape[0] > 0
    for k in range(first, last):
        for n in range(k * CHUNK_ROWS, min(N, (k + 1) * CHUNK_ROWS)):
            for i in range(C):
                dinp[n, i] = dout[n, i] * gelu_slope(inp[n, i] + bias[i])
            if with_bias:
                for i in range(C):
                    dbias_parts[k, i] += dinp[n, i]


FORMS = {True: (gelu_tanh, gelu_tanh_slope), False: (gelu_exact, gelu_exact_slope)}  # tanh?
FORWARD = {tanh: gelu_forward_kernel.specialised(gelu=f) for tanh, (f, _) in FORMS.items()}
BACKWARD = {tanh: gelu_backward_kernel.specialised(gelu_slope=slope)
            for tanh, (_, slope) in FORMS.items()}  # fmt: skip


# ---------------------------------------------------------------------- adapters
def _tanh_form(approximate) -> bool:
    return approximate is True or approximate == "tanh"


def bias_gelu_forward(xp, x, bias, approximate=False):
    """As ``tricycle.activation.bias_gelu_forward``."""
    x2 = rows(x)  # (N, C)
    y = np.empty_like(x2)
    FORWARD[_tanh_form(approximate)](y, x2, rows(bias, x.dtype)[0], x2.shape[0])
    return y.reshape(x.shape)


def bias_gelu_backward(xp, x, bias, dy, approximate=False):
    """As ``tricycle.activation.bias_gelu_backward``: (dx, dbias)."""
    x2 = rows(x)
    dx = np.empty_like(x2)
    parts = np.zeros((n_chunks(x2.shape[0]), x2.shape[1]), x.dtype)  # partial sums
    BACKWARD[_tanh_form(approximate)](dx, parts, rows(dy, x.dtype), x2, rows(bias, x.dtype)[0],
                                      parts.shape[0])  # fmt: skip
    return dx.reshape(x.shape), parts.sum(axis=0).astype(bias.dtype)


def gelu_forward(xp, x, approximate=False):
    """As ``tricycle.activation.gelu_forward``."""
    return bias_gelu_forward(xp, x, np.zeros(x.shape[-1:] or 1, x.dtype), approximate)


def gelu_backward(xp, x, dy, approximate=False):
    """As ``tricycle.activation.gelu_backward``."""
    x2 = rows(x)
    dx = np.empty_like(x2)
    no_bias = np.zeros(x2.shape[1], x.dtype)
    BACKWARD[_tanh_form(approximate)](dx, np.zeros((0, 0), x.dtype), rows(dy, x.dtype), x2, no_bias,
                                      n_chunks(x2.shape[0]))  # fmt: skip
    return dx.reshape(x.shape)


dispatch.add("gelu", "cpu", (gelu_forward, gelu_backward))
dispatch.add("bias_gelu", "cpu", (bias_gelu_forward, bias_gelu_backward), applies=same_dtype)
