"""Convolution on the CPU: im2col and col2im as compiled loops around BLAS products.

The columns of a whole batch are laid out (C, kh, kw, N, Ho, Wo), which is (G, K, N L) for
G groups of K = C / G kh kw rows: each group's convolution is then one matrix product over
every sample at once, which numpy's BLAS runs on its own threads::

    out (G, Og, N L) = W (G, Og, K) @ cols (G, K, N L)
    dW  (G, Og, K)   = dout (G, Og, N L) @ cols^T
    dcols (G, K, N L) = W^T @ dout,   dx = col2im(dcols)

The loops move data only: ``im2col`` copies each window row (one task per row of cols),
``col2im`` adds the columns back (one task per sample and channel, so no two tasks write
the same element), and the layout changes between (N, Co, L) and (G, Og, N L) fold in the
bias and its gradient. One-dimensional convolutions run as two-dimensional ones of height 1.
"""

import numpy as np
from numba import prange

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit


@parallel_jit
def im2col(x, cols, sh, sw, ph, pw, dh, dw):
    """cols[c, i, j, n, oh, ow] = x[n, c, oh sh - ph + i dh, ow sw - pw + j dw], 0 in the
    padding. x (N, C, H, W), cols (C, kh, kw, N, Ho, Wo)."""
    N, C, H, W = x.shape
    kh, kw, Ho, Wo = cols.shape[1], cols.shape[2], cols.shape[4], cols.shape[5]
    for row in prange(C * kh * kw):
        c, i, j = row // (kh * kw), row // kw % kh, row % kw
        # output columns whose input column is inside the image: lo <= ow < hi
        lo = min(Wo, max(0, -((j * dw - pw) // sw)))
        hi = max(lo, min(Wo, (W - 1 + pw - j * dw) // sw + 1))
        for n in range(N):
            for oh in range(Ho):
                y = oh * sh - ph + i * dh
                if y < 0 or y >= H:
                    cols[c, i, j, n, oh, :] = 0
                    continue
                cols[c, i, j, n, oh, :lo] = 0
                for ow in range(lo, hi):
                    cols[c, i, j, n, oh, ow] = x[n, c, y, ow * sw - pw + j * dw]
                cols[c, i, j, n, oh, hi:] = 0


@parallel_jit
def col2im(dcols, dx, sh, sw, ph, pw, dh, dw):
    """The backward of ``im2col``: dx[n, c, y, x] = the sum of the columns read from it.
    dcols (C, kh, kw, N, Ho, Wo), dx (N, C, H, W), overwritten."""
    N, C, H, W = dx.shape
    kh, kw, Ho, Wo = dcols.shape[1], dcols.shape[2], dcols.shape[4], dcols.shape[5]
    for task in prange(N * C):
        n, c = task // C, task % C
        dx[n, c] = 0
        for i in range(kh):
            for j in range(kw):
                lo = min(Wo, max(0, -((j * dw - pw) // sw)))
                hi = max(lo, min(Wo, (W - 1 + pw - j * dw) // sw + 1))
                for oh in range(Ho):
                    y = oh * sh - ph + i * dh
                    if 0 <= y < H:
                        for ow in range(lo, hi):
                            dx[n, c, y, ow * sw - pw + j * dw] += dcols[c, i, j, n, oh, ow]


@parallel_jit
def to_batch_major(product, bias, out):
    """out[n, g Og + o, l] = product[g, o, n, l] + bias[g Og + o]: product (G, Og, N, L),
    bias (Co,) (zeros for none), out (N, Co, L)."""
    G, Og, N, L = product.shape
    for task in prange(N * G * Og):
        n, go = task // (G * Og), task % (G * Og)
        g, o = go // Og, go % Og
        for p in range(L):
            out[n, go, p] = product[g, o, n, p] + bias[go]


@parallel_jit
def to_group_major(dout, d, dbias):
    """d[g, o, n, l] = dout[n, g Og + o, l] and dbias[g Og + o] = the sum of dout over n and
    l: dout (N, Co, L), d (G, Og, N, L), dbias (Co,)."""
    G, Og, N, L = d.shape
    for go in prange(G * Og):
        g, o = go // Og, go % Og
        total = 0.0
        for n in range(N):
            for p in range(L):
                value = dout[n, go, p]
                d[g, o, n, p] = value
                total += value
        dbias[go] = total


def _as_2d(shape, stride, padding, dilation):
    """A 1-d geometry as a 2-d one of height 1: (shape, stride, padding, dilation)."""
    if len(shape) == 4:
        return shape, stride, padding, dilation
    return shape[:2] + (1,) + shape[2:], (1,) + stride, (0,) + padding, (1,) + dilation


def _products(a, b, out):
    """out[g] = a[g] @ b[g] for every group g, each one 2-d product for BLAS (numpy's
    stacked matmul does not hand every layout of a stack to BLAS)."""
    out = out.reshape(a.shape[0], a.shape[1], b.shape[2])
    for g in range(a.shape[0]):
        np.matmul(a[g], b[g], out=out[g])
    return out


class _Buffers:
    """Scratch arrays reused from chunk to chunk: fresh memory for each would cost page
    faults (large arrays come from the system, and go back to it when freed)."""

    def __init__(self, dtype):
        self.dtype, self.arrays = dtype, {}

    def __call__(self, name: str, shape):
        size = int(np.prod(shape))
        if name not in self.arrays or self.arrays[name].size < size:
            self.arrays[name] = np.empty(size, dtype=self.dtype)
        return self.arrays[name][:size].reshape(shape)


CHUNK_BYTES = 1 << 27  # columns of this many bytes at most per chunk of samples


def _geometry(x, weights, stride, padding, dilation):
    """x as (N, C, H, W), and the 2-d kernel, output size, stride, padding and dilation."""
    shape, stride, padding, dilation = _as_2d(x.shape, stride, padding, dilation)
    kernel = (1,) * (4 - weights.ndim) + weights.shape[2:]
    out = tuple(
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, s, p, d in zip(shape[2:], kernel, stride, padding, dilation)
    )
    return x.reshape(shape), kernel, out, stride, padding, dilation


def _chunks(N: int, rows: int, columns: int, itemsize: int) -> list[slice]:
    """The batch in chunks of samples whose im2col matrix stays in the CPU's cache."""
    size = max(1, CHUNK_BYTES // max(1, rows * columns * itemsize))
    return [slice(a, min(a + size, N)) for a in range(0, N, size)]


def conv_forward(xp, x, weights, bias, stride, padding, dilation, groups):
    """``tricycle.conv.conv_forward``: x (N, C, *size), weights (Co, C / groups, *kernel),
    bias (Co,) or None -> (N, Co, *out)."""
    dtype = np.result_type(x, weights)
    x, weights = x.astype(dtype, copy=False), weights.astype(dtype, copy=False)
    x4, kernel, out, stride, padding, dilation = _geometry(x, weights, stride, padding, dilation)
    N, C, Co, G = x.shape[0], x.shape[1], weights.shape[0], groups
    L = out[0] * out[1]
    w = weights.reshape(G, Co // G, -1)  # (G, Og, K)
    b = np.zeros(Co, dtype=dtype) if bias is None else bias.astype(dtype, copy=False)
    result = np.empty((N, Co, L), dtype=dtype)
    buffers = _Buffers(dtype)
    for rows in _chunks(N, C * kernel[0] * kernel[1], L, x4.itemsize):
        n = rows.stop - rows.start
        cols = buffers("cols", (C,) + kernel + (n,) + out)
        im2col(x4[rows], cols, *stride, *padding, *dilation)
        product = _products(w, cols.reshape(G, -1, n * L), buffers("product", (G, Co // G, n, L)))
        to_batch_major(product.reshape(G, Co // G, n, L), b, result[rows])
    return result.reshape((N, Co) + out[4 - x.ndim :])


def conv_backward(xp, dout, x, weights, stride, padding, dilation, groups, needs):
    """``tricycle.conv.conv_backward``: (dx, dweights, dbias), None where not ``needs``."""
    want_x, want_weights, want_bias = needs
    dtype = dout.dtype
    x, weights = x.astype(dtype, copy=False), weights.astype(dtype, copy=False)
    x4, kernel, out, stride, padding, dilation = _geometry(x, weights, stride, padding, dilation)
    N, C, Co, G = x.shape[0], x.shape[1], weights.shape[0], groups
    L, K = out[0] * out[1], C // G * kernel[0] * kernel[1]
    w_t = weights.reshape(G, Co // G, K).swapaxes(-1, -2)  # (G, K, Og)
    dout3 = dout.reshape(N, Co, L)
    dweights_t = np.zeros((G, K, Co // G), dtype=dtype)  # dW^T
    dbias = np.zeros(Co, dtype=dtype)
    dx = np.empty(x4.shape, dtype=dtype) if want_x else None
    buffers = _Buffers(dtype)
    part = np.empty(Co, dtype=dtype)
    for rows in _chunks(N, C * kernel[0] * kernel[1], L, x4.itemsize):
        n = rows.stop - rows.start
        d = buffers("dout", (G, Co // G, n, L))
        to_group_major(dout3[rows], d, part)
        dbias += part
        d = d.reshape(G, Co // G, n * L)  # (G, Og, n L)
        if want_weights:  # dW^T += cols @ dout^T (BLAS is slow at dout @ cols^T's layout)
            cols = buffers("cols", (C,) + kernel + (n,) + out)
            im2col(x4[rows], cols, *stride, *padding, *dilation)
            cols = cols.reshape(G, K, n * L)
            dweights_t += _products(cols, d.swapaxes(-1, -2), buffers("dw", dweights_t.shape))
        if want_x:
            dcols = _products(w_t, d, buffers("dcols", (G, K, n * L)))
            col2im(dcols.reshape((C,) + kernel + (n,) + out), dx[rows], *stride, *padding,
                   *dilation)  # fmt: skip
    dweights = dweights_t.swapaxes(-1, -2).reshape(weights.shape) if want_weights else None
    return (
        None if dx is None else dx.reshape(x.shape),
        dweights,
        dbias if want_bias else None,
    )


def _one_or_two_dims(x, weights, bias=None) -> bool:
    return x.ndim in (3, 4)


dispatch.add("conv", "cpu", (conv_forward, conv_backward), applies=_one_or_two_dims)
