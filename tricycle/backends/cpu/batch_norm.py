"""Batch normalisation on the CPU: a channel per task, two passes forward and two back.

The reference (``tricycle.nn.batch_norm``) makes about seven whole-array passes each way; here,
for each channel c of x (N, C, R), over its M = N R elements::

    mean = sum(x) / M,  var = sum((x - mean)^2) / M          two reads (training only)
    xhat = (x - mean) rstd,  y = xhat gamma + beta           one read, two writes

and back, with g = dy gamma and s = rstd gamma::

    dbeta = sum(dy),  dgamma = sum(dy xhat)                  one read of dy and xhat
    dx = s (dy - dbeta / M - xhat dgamma / M)                one more (batch statistics)
    dx = s dy                                                (fixed statistics)

The sums are accumulated in float64 whatever the inputs' type: float32 sums of a channel's
65,536 elements would lose about 2 of their 7 digits. Channels are independent, so the result
does not depend on the thread count.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit
from tricycle.backends.cpu.maths import typed


@parallel_jit
def statistics_kernel(x, mean, var, first, last):
    """mean, var (C,): each channel's mean and biased variance over x (N, C, R), channels
    first..last."""
    N, C, R = x.shape
    for c in range(first, last):
        total = 0.0
        for n in range(N):
            row = x[n, c]
            for r in range(R):
                total += row[r]
        m = total / (N * R)
        squares = 0.0
        for n in range(N):
            row = x[n, c]
            for r in range(R):
                d = row[r] - m
                squares += d * d
        mean[c], var[c] = m, squares / (N * R)


@parallel_jit
def normalise_kernel(x, mean, rstd, gamma, beta, xhat, y, first, last):
    """xhat = (x - mean) rstd and y = xhat gamma + beta, per channel of x (N, C, R), channels
    first..last."""
    N, C, R = x.shape
    for c in range(first, last):
        m, s, g, b = mean[c], rstd[c], gamma[c], beta[c]
        for n in range(N):
            row, h, out = x[n, c], xhat[n, c], y[n, c]
            for r in range(R):
                h[r] = (row[r] - m) * s
                out[r] = h[r] * g + b


@parallel_jit
def backward_kernel(dy, xhat, scale, dx, dgamma, dbeta, batch_statistics, first, last):
    """dx (N, C, R), dgamma and dbeta (C,) of ``normalise_kernel``'s y; scale = rstd gamma;
    channels first..last."""
    N, C, R = dy.shape
    for c in range(first, last):
        sum_dy, sum_dy_xhat = 0.0, 0.0
        for n in range(N):
            d, h = dy[n, c], xhat[n, c]
            for r in range(R):
                sum_dy += d[r]
                sum_dy_xhat += d[r] * h[r]
        dbeta[c], dgamma[c] = sum_dy, sum_dy_xhat
        s = scale[c]
        mean_dy = typed(s, sum_dy / (N * R)) if batch_statistics else typed(s, 0.0)
        mean_dy_xhat = typed(s, sum_dy_xhat / (N * R)) if batch_statistics else typed(s, 0.0)
        for n in range(N):
            d, h, out = dy[n, c], xhat[n, c], dx[n, c]
            for r in range(R):
                out[r] = (d[r] - mean_dy - h[r] * mean_dy_xhat) * s


def batch_norm_forward(xp, x, gamma, beta, eps: float, mean=None, var=None):
    """``tricycle.nn.batch_norm.batch_norm_forward``."""
    x = np.ascontiguousarray(x)
    C, dtype = x.shape[1], x.dtype
    if mean is None:
        mean, var = np.empty(C, dtype), np.empty(C, dtype)
        statistics_kernel(x, mean, var, C)
    rstd = (1 / np.sqrt(var + eps)).astype(dtype, copy=False)  # (C,)
    g = np.ones(C, dtype) if gamma is None else gamma.astype(dtype, copy=False)
    b = np.zeros(C, dtype) if beta is None else beta.astype(dtype, copy=False)
    xhat, y = np.empty_like(x), np.empty_like(x)
    normalise_kernel(x, mean.astype(dtype, copy=False), rstd, g, b, xhat, y, C)
    return y, xhat, rstd, mean, var


def batch_norm_backward(xp, dy, xhat, gamma, rstd, batch_statistics: bool):
    """``tricycle.nn.batch_norm.batch_norm_backward``."""
    dy = np.ascontiguousarray(dy, dtype=xhat.dtype)
    C = dy.shape[1]
    scale = rstd if gamma is None else (rstd * gamma).astype(rstd.dtype, copy=False)
    dx = np.empty_like(dy)
    dgamma, dbeta = np.empty(C, dy.dtype), np.empty(C, dy.dtype)
    backward_kernel(dy, xhat, scale, dx, dgamma, dbeta, batch_statistics, C)
    return dx, dgamma, dbeta


def applies(x, *parameters) -> bool:
    """float32 or float64 inputs (N, C, R) and parameters of the same type."""
    return x.ndim == 3 and x.dtype in (np.float32, np.float64) and all(
        p.dtype == x.dtype for p in parameters
    )  # fmt: skip


dispatch.add("batch_norm", "cpu", (batch_norm_forward, batch_norm_backward), applies=applies)
