"""Convolution on the CPU: im2col as a compiled copy, the arithmetic as BLAS products.

The batch runs in chunks of a few samples, so that a chunk's columns stay in the CPU's cache
between the copy that writes them and the products that read them. For each chunk::

    xpad = x with its zero padding                      (n, C, Hp, Wp)
    cols = im2col(xpad)                                 (G, K, n L),  K = C / G kh kw
    out  = (cols^T @ W^T)^T + b                         (n, G, Og, L) = (n, Co, Ho, Wo)
    dW^T += cols @ dout^T                               (G, K, Og)

one product per group for the whole chunk (many small images make one large product).

Each product is taken in the layout where BLAS runs these shapes fastest (the position axis L
as the long side of the result), so the forward's (L, Og) result is transposed into place,
with the bias added on the way. With stride 1 the input gradient is itself a convolution, of
dout with the weights flipped in space and transposed over the channels, padded by
d (k - 1) - p::

    dx = conv(dout, W'),  W'[c, o, i, j] = W[o, c, kh - 1 - i, kw - 1 - j]

so it too is an im2col and one deep product per chunk. Other strides (or a padding wider than
the kernel's reach) take the columns' gradient, dcols = W^T @ dout, and add every column back
to where it was read from (col2im). One-dimensional convolutions run as two-dimensional ones
of height 1.

The loops only move data, and run on the calling thread: the products, most of the time, run
on BLAS's threads, and handing each chunk's copies to numba's threads in between (a wake-up
per chunk, while BLAS's threads still spin) costs more than the copies themselves.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import jit


def interior(xpad, padding, shape):
    """The view of padded xpad (n, C, Hp, Wp) without its border: where x (n, C, H, W) goes."""
    (ph, pw), (H, W) = padding, shape[2:]
    return xpad[:, :, ph : ph + H, pw : pw + W]


@jit
def im2col(xpad, cols, kh, kw, sh, sw, dh, dw, Wo):
    """cols[(c, i, j), n, oh Wo + ow] = xpad[n, c, oh sh + i dh, ow sw + j dw]: xpad
    (N, C, Hp, Wp) padded, cols (C kh kw, N, Ho Wo).

    numba wraps negative indices around, a test per element that stops the copy from
    vectorising unless the compiler knows the index is >= 0: hence the ``max(0, ...)``.
    Nor do the loops take views (``cols[row, n]``): each costs two atomic reference count
    updates. Reading x itself, with bounds, is slower than padding it first (the copies are
    then all of one length)."""
    N, C = xpad.shape[:2]
    rows, L = cols.shape[0], cols.shape[2]
    Ho = L // Wo
    for row in range(rows):
        c, i, j = row // (kh * kw), row // kw % kh, row % kw
        shift = max(0, j * dw)
        for n in range(N):
            for oh in range(Ho):
                y, start = oh * sh + i * dh, max(0, oh * Wo)
                if sw == 1:  # a contiguous run: a vector copy
                    for ow in range(Wo):
                        cols[row, n, start + ow] = xpad[n, c, y, ow + shift]
                else:
                    for ow in range(Wo):
                        cols[row, n, start + ow] = xpad[n, c, y, ow * sw + shift]


@jit
def col2im(dcols, dxpad, kh, kw, sh, sw, dh, dw, Wo):
    """The backward of ``im2col``: dxpad (N, C, Hp, Wp) = the sum of the columns read from
    each element (overwritten); dcols (C kh kw, N, Ho Wo)."""
    N, C, Hp, Wp = dxpad.shape
    Ho = dcols.shape[2] // Wo
    for task in range(N * C):
        n, c = task // C, task % C
        dxpad[n, c] = 0
        for i in range(kh):
            for j in range(kw):
                row, shift = (c * kh + i) * kw + j, max(0, j * dw)
                for oh in range(Ho):
                    y, start = oh * sh + i * dh, max(0, oh * Wo)
                    for ow in range(Wo):
                        dxpad[n, c, y, ow * sw + shift] += dcols[row, n, start + ow]


TILE = 16  # positions per tile of ``to_channels_first``: the tile's reads stay in L1


@jit
def to_channels_first(product, bias, out):
    """out[n, g Og + o, l] = product[g, n, l, o] + bias[g Og + o]: product (G, N, L, Og),
    bias (Co,), out (N, Co, L). A transpose, in tiles of ``TILE`` positions."""
    G, N, L, Og = product.shape
    for task in range(N * G):
        n, g = task // G, task % G
        for start in range(0, L - TILE + 1, TILE):
            for o in range(Og):
                go = max(0, g * Og + o)
                for p in range(TILE):
                    out[n, go, start + p] = product[g, n, start + p, o] + bias[go]
        for p in range(L - L % TILE, L):
            for o in range(Og):
                out[n, g * Og + o, p] = product[g, n, p, o] + bias[g * Og + o]


class _Buffers:
    """Scratch arrays reused from chunk to chunk: fresh memory for each would cost page
    faults. ``zeros`` ones are zeroed when made (the padded inputs: only their inside is
    written afterwards, so the border stays zero)."""

    def __init__(self, dtype):
        self.dtype, self.arrays = dtype, {}

    def __call__(self, name: str, shape, zeros: bool = False):
        if name not in self.arrays or self.arrays[name].shape != shape:
            self.arrays[name] = (np.zeros if zeros else np.empty)(shape, dtype=self.dtype)
        return self.arrays[name]


CHUNK_BYTES = 1 << 21  # a chunk's columns take at most this many bytes (or one sample's, if more)


class _Geometry:
    """A convolution's sizes as a 2-d one: x (N, C, H, W), kernel (kh, kw), output (Ho, Wo),
    stride, padding and dilation, each a pair; K = C / G kh kw, L = Ho Wo."""

    def __init__(self, x_shape, w_shape, stride, padding, dilation, groups):
        if len(x_shape) == 3:  # 1-d: height 1
            x_shape, w_shape = x_shape[:2] + (1,) + x_shape[2:], w_shape[:2] + (1,) + w_shape[2:]
            stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
        self.x_shape, self.kernel = x_shape, w_shape[2:]
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padded = tuple(n + 2 * p for n, p in zip(x_shape[2:], padding))
        self.out = tuple(
            (n - d * (k - 1) - 1) // s + 1
            for n, k, s, d in zip(self.padded, self.kernel, stride, dilation)
        )
        self.K = x_shape[1] // groups * self.kernel[0] * self.kernel[1]
        self.L = self.out[0] * self.out[1]

    def chunks(self, itemsize: int) -> list[slice]:
        """The batch in chunks of samples whose columns fit in ``CHUNK_BYTES``."""
        N = self.x_shape[0]
        size = max(1, CHUNK_BYTES // max(1, self.groups * self.K * self.L * itemsize))
        return [slice(a, min(a + size, N)) for a in range(0, N, size)]

    def columns(self, x, buffers):
        """im2col of x (n, C, H, W), padded on the way: (G, K, n L), a reused buffer."""
        n, C = x.shape[:2]
        if any(self.padding):
            xpad = buffers("xpad", (n, C) + self.padded, zeros=True)
            interior(xpad, self.padding, x.shape)[...] = x
        else:
            xpad = x
        cols = buffers("cols", (C * self.kernel[0] * self.kernel[1], n, self.L))
        im2col(xpad, cols, *self.kernel, *self.stride, *self.dilation, self.out[1])
        return cols.reshape(self.groups, self.K, n * self.L)

    def transposed_padding(self):
        """The padding of the input gradient as a convolution of dout (stride 1), or None
        where it is not one (a stride, or a padding wider than the kernel's reach)."""
        reach = tuple(d * (k - 1) for k, d in zip(self.kernel, self.dilation))
        if self.stride != (1, 1) or any(p > r for p, r in zip(self.padding, reach)):
            return None
        return tuple(r - p for r, p in zip(reach, self.padding))


def _contiguous(a, dtype):
    return np.ascontiguousarray(a, dtype=dtype)


def _convolve(geometry, x, w_t, bias, out, buffers):
    """out (N, Co, L) = the convolution of x (N, C, H, W) with the weights w_t (G, K, Og)
    (transposed), plus bias (Co,). The product is taken as cols^T @ W^T, (n L, Og) per chunk
    and group, the layout in which BLAS runs these shapes fastest, and then transposed."""
    G, Og = w_t.shape[0], w_t.shape[2]
    for rows in geometry.chunks(x.itemsize):
        cols = geometry.columns(x[rows], buffers)  # (G, K, n L)
        n = rows.stop - rows.start
        product = buffers("product", (G, n * geometry.L, Og))
        np.matmul(cols.swapaxes(-1, -2), w_t, out=product)
        to_channels_first(product.reshape(G, n, geometry.L, Og), bias, out[rows])


def conv_forward(xp, x, weights, bias, stride, padding, dilation, groups):
    """``tricycle.conv.conv_forward``: x (N, C, *size), weights (Co, C / groups, *kernel),
    bias (Co,) or None -> (N, Co, *out)."""
    dtype = np.result_type(x, weights)
    geometry = _Geometry(x.shape, weights.shape, stride, padding, dilation, groups)
    N, Co, G = x.shape[0], weights.shape[0], groups
    x4 = _contiguous(x, dtype).reshape(geometry.x_shape)
    w_t = weights.reshape(G, Co // G, geometry.K).swapaxes(-1, -2).astype(dtype)  # (G, K, Og)
    b = np.zeros(Co, dtype) if bias is None else _contiguous(bias, dtype)
    out = np.empty((N, Co, geometry.L), dtype=dtype)
    _convolve(geometry, x4, w_t, b, out, _Buffers(dtype))
    return out.reshape((N, Co) + geometry.out[2 - (x.ndim - 2) :])


def _flipped(weights, G):
    """W' (C, Co / G, kh, kw): the weights of the input gradient as a convolution of dout,
    W'[g Cg + c, o, i, j] = W[g Og + o, c, kh - 1 - i, kw - 1 - j]."""
    Co, Cg, kh, kw = weights.shape
    w = weights.reshape(G, Co // G, Cg, kh, kw)[:, :, :, ::-1, ::-1]
    return np.ascontiguousarray(w.transpose(0, 2, 1, 3, 4)).reshape(G * Cg, Co // G, kh, kw)


def conv_backward(xp, dout, x, weights, stride, padding, dilation, groups, needs):
    """``tricycle.conv.conv_backward``: (dx, dweights, dbias), None where not ``needs``."""
    want_x, want_weights, want_bias = needs
    dtype = dout.dtype
    geometry = _Geometry(x.shape, weights.shape, stride, padding, dilation, groups)
    N, C, Co, G, K, L = x.shape[0], x.shape[1], weights.shape[0], groups, geometry.K, geometry.L
    w4 = _contiguous(weights, dtype).reshape((Co, C // G) + geometry.kernel)
    d = _contiguous(dout, dtype).reshape(N, G, Co // G, L)
    buffers = _Buffers(dtype)
    dx = dweights = dbias = None
    if want_bias:
        dbias = d.sum(axis=(0, 3)).reshape(Co)
    if want_weights:  # dW^T = cols @ dout^T summed over the chunks
        x4 = _contiguous(x, dtype).reshape(geometry.x_shape)
        dweights_t = np.zeros((G, K, Co // G), dtype=dtype)
        for rows in geometry.chunks(x4.itemsize):
            cols = geometry.columns(x4[rows], buffers)  # (G, K, n L)
            d_rows = np.ascontiguousarray(d[rows].transpose(1, 2, 0, 3))  # (G, Og, n, L)
            part = buffers("dw", dweights_t.shape)
            np.matmul(cols, d_rows.reshape(G, Co // G, -1).swapaxes(-1, -2), out=part)
            dweights_t += part
        dweights = dweights_t.swapaxes(-1, -2).reshape(weights.shape)
    if want_x:
        dx = np.empty(geometry.x_shape, dtype=dtype)
        pad_t = geometry.transposed_padding()
        if pad_t is not None:  # dx = conv(dout, W') with stride 1
            shape_t = (N, Co) + geometry.out
            flipped = _flipped(w4, G)  # (C, Og, kh, kw)
            g_t = _Geometry(shape_t, flipped.shape, (1, 1), pad_t, geometry.dilation, G)
            w_t = flipped.reshape(G, C // G, g_t.K).swapaxes(-1, -2)  # (G, K', Cg)
            out = dx.reshape(N, C, -1)
            _convolve(g_t, d.reshape(shape_t), w_t, np.zeros(C, dtype), out, _Buffers(dtype))
        else:  # dcols = W^T @ dout, then col2im
            w_t = w4.reshape(G, Co // G, K).swapaxes(-1, -2)  # (G, K, Og)
            for rows in geometry.chunks(dx.itemsize):
                n = rows.stop - rows.start
                d_rows = np.ascontiguousarray(d[rows].transpose(1, 2, 0, 3))  # (G, Og, n, L)
                dcols = buffers("dcols", (G, K, n * L))
                np.matmul(w_t, d_rows.reshape(G, Co // G, n * L), out=dcols)
                dxpad = buffers("dxpad", (n, C) + geometry.padded)
                col2im(dcols.reshape(G * K, n, L), dxpad, *geometry.kernel, *geometry.stride,
                       *geometry.dilation, geometry.out[1])  # fmt: skip
                dx[rows] = interior(dxpad, geometry.padding, dx.shape)  # the border is not x
        dx = dx.reshape(x.shape)
    return dx, dweights, dbias


def _one_or_two_dims(x, weights, bias=None) -> bool:
    return x.ndim in (3, 4)


dispatch.add("conv", "cpu", (conv_forward, conv_backward), applies=_one_or_two_dims)
