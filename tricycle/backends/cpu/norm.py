"""Layer norm and RMS norm over the last axis, one pass over each row.

Kernels (llm.c's ``layernorm_forward`` / ``layernorm_backward``) and the adapters registered
for ``tricycle.layers``' "layer_norm" and "rms_norm", with the references' signatures.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.arrays import CHUNK_ROWS, flat, n_chunks, rows, same_dtype
from tricycle.backends.cpu.compile import jit, parallel_jit
from tricycle.backends.cpu.maths import typed


# ---------------------------------------------------------------------- row sums
# Sums run in the arrays' float type (a float32 sum over a row vectorises in several lanes, as
# accurate as numpy's pairwise sum at these widths), each a function the kernels share.
@jit
def row_mean(inp, n):
    """mean(inp[n]) of row n of inp (N, C)."""
    total = typed(inp[n, 0], 0.0)
    for i in range(inp.shape[1]):
        total += inp[n, i]
    return typed(total, total / inp.shape[1])


@jit
def row_mean_square(inp, n, m):
    """mean((inp[n] - m)^2) of row n of inp (N, C)."""
    total = typed(m, 0.0)
    for i in range(inp.shape[1]):
        shift = inp[n, i] - m
        total += shift * shift
    return typed(m, total / inp.shape[1])


@jit
def dnorm_means(dout, inp, weight, n, m, s):
    """mean(g) and mean(g * xhat) over row n, g = dout * weight and xhat = (inp - m) * s: the
    two means of the normalisation's backward."""
    dnorm_mean, dnorm_norm_mean = typed(m, 0.0), typed(m, 0.0)
    for i in range(inp.shape[1]):
        dnorm = dout[n, i] * weight[i]
        dnorm_mean += dnorm
        dnorm_norm_mean += dnorm * (inp[n, i] - m) * s
    C = inp.shape[1]
    return typed(m, dnorm_mean / C), typed(m, dnorm_norm_mean / C)


# ---------------------------------------------------------------------- kernels
@parallel_jit
def layernorm_forward(out, mean, rstd, inp, weight, bias, eps, first, last):
    """out = (inp - mean) * rstd * weight + bias per row of inp (N, C), rows first..last."""
    C = inp.shape[1]
    for n in range(first, last):
        m = row_mean(inp, n)
        s = typed(m, 1.0 / np.sqrt(row_mean_square(inp, n, m) + eps))
        for i in range(C):
            out[n, i] = (inp[n, i] - m) * s * weight[i] + bias[i]
        mean[n] = m
        rstd[n] = s


@parallel_jit
def layernorm_backward(dinp, dweight_parts, dbias_parts, dout, inp, weight, mean, rstd, first,
                       last):  # fmt: skip
    """dinp per row; dweight and dbias as one partial row per chunk of CHUNK_ROWS rows:
    chunks first..last."""
    N, C = inp.shape
    for k in range(first, last):
        for n in range(k * CHUNK_ROWS, min(N, (k + 1) * CHUNK_ROWS)):
            m, s = mean[n], rstd[n]
            dnorm_mean, dnorm_norm_mean = dnorm_means(dout, inp, weight, n, m, s)
            for i in range(C):
                norm = (inp[n, i] - m) * s
                dbias_parts[k, i] += dout[n, i]
                dweight_parts[k, i] += norm * dout[n, i]
                dnorm = dout[n, i] * weight[i]
                dinp[n, i] = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s


@parallel_jit
def rmsnorm_forward(out, rstd, inp, weight, eps, first, last):
    """out = inp * rstd * weight per row, rstd = 1 / sqrt(mean(inp^2) + eps): rows
    first..last."""
    C = inp.shape[1]
    for n in range(first, last):
        zero = typed(inp[n, 0], 0.0)
        s = typed(zero, 1.0 / np.sqrt(row_mean_square(inp, n, zero) + eps))
        for i in range(C):
            out[n, i] = inp[n, i] * s * weight[i]
        rstd[n] = s


@parallel_jit
def rmsnorm_backward(dinp, dweight_parts, dout, inp, weight, rstd, first, last):
    """dinp = rstd (g - xhat mean(g xhat)) with g = dout * weight, xhat = inp * rstd, in
    chunks first..last of CHUNK_ROWS rows (one partial row of dweight each)."""
    N, C = inp.shape
    for k in range(first, last):
        for n in range(k * CHUNK_ROWS, min(N, (k + 1) * CHUNK_ROWS)):
            s = rstd[n]
            _, dnorm_norm_mean = dnorm_means(dout, inp, weight, n, typed(s, 0.0), s)
            for i in range(C):
                norm = inp[n, i] * s
                dweight_parts[k, i] += norm * dout[n, i]
                dinp[n, i] = (dout[n, i] * weight[i] - norm * dnorm_norm_mean) * s


# ---------------------------------------------------------------------- adapters
def _stats_shape(x):
    return x.shape[:-1] + (1,)


def layer_norm_forward(xp, x, gamma, beta, eps):
    """As ``tricycle.norms.layer_norm_forward``: (y, mean, rstd)."""
    x2 = rows(x)  # (N, C)
    n = x2.shape[0]
    y = np.empty_like(x2)
    mean, rstd = np.empty(n, x.dtype), np.empty(n, x.dtype)
    bias = np.zeros_like(gamma) if beta is None else beta
    gamma, bias = rows(gamma, x.dtype)[0], rows(bias, x.dtype)[0]
    layernorm_forward(y, mean, rstd, x2, gamma, bias, eps, n)
    return y.reshape(x.shape), mean.reshape(_stats_shape(x)), rstd.reshape(_stats_shape(x))


def layer_norm_backward(xp, dy, x, gamma, mean, rstd):
    """As ``tricycle.norms.layer_norm_backward``: (dx, dgamma, dbeta)."""
    x2 = rows(x)  # (N, C)
    dx = np.empty_like(x2)
    parts = np.zeros((2, n_chunks(x2.shape[0]), x2.shape[1]), x.dtype)  # partial sums
    layernorm_backward(
        dx, parts[0], parts[1], rows(dy, x.dtype), x2, rows(gamma, x.dtype)[0],
        flat(mean, x.dtype), flat(rstd, x.dtype), parts.shape[1],
    )  # fmt: skip
    dgamma, dbeta = parts.sum(axis=1).astype(gamma.dtype)
    return dx.reshape(x.shape), dgamma, dbeta


def rms_norm_forward(xp, x, gamma, eps):
    """As ``tricycle.norms.rms_norm_forward``: (y, rstd)."""
    x2 = rows(x)
    y = np.empty_like(x2)
    rstd = np.empty(x2.shape[0], x.dtype)
    rmsnorm_forward(y, rstd, x2, rows(gamma, x.dtype)[0], eps, x2.shape[0])
    return y.reshape(x.shape), rstd.reshape(_stats_shape(x))


def rms_norm_backward(xp, dy, x, gamma, rstd):
    """As ``tricycle.norms.rms_norm_backward``: (dx, dgamma)."""
    x2 = rows(x)
    dx = np.empty_like(x2)
    parts = np.zeros((n_chunks(x2.shape[0]), x2.shape[1]), x.dtype)
    rmsnorm_backward(dx, parts, rows(dy, x.dtype), x2, rows(gamma, x.dtype)[0],
                     flat(rstd, x.dtype), parts.shape[0])  # fmt: skip
    return dx.reshape(x.shape), parts.sum(axis=0).astype(gamma.dtype)


dispatch.add("layer_norm", "cpu", (layer_norm_forward, layer_norm_backward), applies=same_dtype)
dispatch.add("rms_norm", "cpu", (rms_norm_forward, rms_norm_backward), applies=same_dtype)
