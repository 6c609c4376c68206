"""Softmax and log-softmax over the last axis, one pass over each row each way.

Kernels and the adapters registered for ``tricycle.functions``' "softmax" and "log_softmax",
with the references' signatures.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import rows
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.maths import exp, maximum, typed


# ---------------------------------------------------------------------- row reductions
# Each reduction over a row is a function of its own, which the kernels share.
@jit
def row_max(inp, n):
    """The largest value of row n of inp (N, C), NaN if the row holds one."""
    peak = inp[n, 0]
    for i in range(inp.shape[1]):  # from 0, not 1: a row of 128 is whole vectors
        peak = maximum(peak, inp[n, i])
    return peak


@jit
def exp_sum(inp, n, peak):
    """sum(exp(row - peak)) of row n of inp (N, C), in inp's float type."""
    total = typed(peak, 0.0)
    for i in range(inp.shape[1]):
        total += exp(inp[n, i] - peak)
    return total


@jit
def exp_store_sum(out, inp, n, peak):
    """Row n of out = exp(row n of inp - peak); returns its sum, in inp's float type."""
    total = typed(peak, 0.0)
    for i in range(inp.shape[1]):
        e = exp(inp[n, i] - peak)
        out[n, i] = e
        total += e
    return total


@jit
def row_sum(a, n):
    """sum(a[n]) over row n of a (N, C), in its float type."""
    total = typed(a[n, 0], 0.0)
    for i in range(a.shape[1]):
        total += a[n, i]
    return total


@jit
def row_dot(a, b, n):
    """sum(a[n] * b[n]) over row n of a and b (N, C), in their float type."""
    total = typed(a[n, 0], 0.0)
    for i in range(a.shape[1]):
        total += a[n, i] * b[n, i]
    return total


# ---------------------------------------------------------------------- kernels
@parallel_jit
def softmax_forward_kernel(out, inp, first, last):
    """out = exp(inp - max) / sum(exp(inp - max)) per row of inp (N, C), rows first..last."""
    C = inp.shape[1]
    for n in range(first, last):
        peak = row_max(inp, n)
        total = exp_store_sum(out, inp, n, peak)
        scale = typed(peak, 1.0) / total
        for i in range(C):
            out[n, i] *= scale


@parallel_jit
def softmax_backward_kernel(dinp, out, dout, first, last):
    """dinp = out * (dout - sum(dout * out)) per row, rows first..last."""
    C = out.shape[1]
    for n in range(first, last):
        dot = row_dot(dout, out, n)
        for i in range(C):
            dinp[n, i] = out[n, i] * (dout[n, i] - dot)


@parallel_jit
def log_softmax_forward_kernel(out, inp, first, last):
    """out = inp - max - log(sum(exp(inp - max))) per row, rows first..last."""
    C = inp.shape[1]
    for n in range(first, last):
        peak = row_max(inp, n)
        shift = peak + np.log(exp_sum(inp, n, peak))
        for i in range(C):
            out[n, i] = inp[n, i] - shift


@parallel_jit
def log_softmax_backward_kernel(dinp, out, dout, first, last):
    """dinp = dout - exp(out) * sum(dout) per row (exp(out) is the softmax), rows first..last."""
    C = out.shape[1]
    for n in range(first, last):
        total = row_sum(dout, n)
        for i in range(C):
            dinp[n, i] = dout[n, i] - exp(out[n, i]) * total


# ---------------------------------------------------------------------- adapters
def _forward(kernel, x):
    x2 = rows(x)  # (N, C)
    y = np.empty_like(x2)
    kernel(y, x2, x2.shape[0])
    return y.reshape(x.shape)


def _backward(kernel, y, dy):
    y2 = rows(y)
    dx = np.empty_like(y2)
    kernel(dx, y2, rows(dy, y.dtype), y2.shape[0])
    return dx.reshape(y.shape)


def softmax_forward(xp, x):
    """As ``tricycle.functions.softmax_forward``."""
    return _forward(softmax_forward_kernel, x)


def softmax_backward(xp, y, dy):
    """As ``tricycle.functions.softmax_backward``."""
    return _backward(softmax_backward_kernel, y, dy)


def log_softmax_forward(xp, x):
    """As ``tricycle.functions.log_softmax_forward``."""
    return _forward(log_softmax_forward_kernel, x)


def log_softmax_backward(xp, y, dy):
    """As ``tricycle.functions.log_softmax_backward``."""
    return _backward(log_softmax_backward_kernel, y, dy)


dispatch.add("softmax", "cpu", (softmax_forward, softmax_backward))
dispatch.add("log_softmax", "cpu", (log_softmax_forward, log_softmax_backward))
