"""Max and average pooling on the CPU: one pass over each window, a plane (n, c) per task.

The reference (``tricycle.nn.pooling``) copies the padded input, views it as windows and reduces
them, several passes over arrays as large as the input; here each output element reads its
window once::

    max:  out[p, oh, ow] = max over (i, j) of x[p, oh sh + i - ph, ow sw + j - pw]
    avg:  out[p, oh, ow] = sum over the same (i, j) / count

with padding read as -inf (max) or 0 (average), and count the window's size or, without
``count_include_pad``, its elements inside the input. Max pooling keeps where in its window
(i kw + j) the first largest element was, as the reference does, NaN counting as the
largest; the backward adds each window's gradient there (average: shares it evenly). Planes
are independent, so the result does not depend on the thread count. One-dimensional pooling
runs as two-dimensional of height 1.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu.compile import parallel_jit


@parallel_jit
def max_pool_forward_kernel(x, out, index, kh, kw, sh, sw, ph, pw, first, last):
    """out, index (P, Ho, Wo) from the planes x (P, H, W): planes first..last."""
    P, H, W = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    for p in range(first, last):
        for oh in range(Ho):
            for ow in range(Wo):
                best, at = x[p, 0, 0], 0  # (overwritten by the window's first element)
                for i in range(kh):
                    y = oh * sh + i - ph
                    for j in range(kw):
                        xx = ow * sw + j - pw
                        value = x[p, y, xx] if 0 <= y < H and 0 <= xx < W else -np.inf
                        opening = i == 0 and j == 0
                        if opening or value > best or (value != value and best == best):
                            best, at = value, i * kw + j
                out[p, oh, ow], index[p, oh, ow] = best, at


@parallel_jit
def max_pool_backward_kernel(dout, index, dx, kw, sh, sw, ph, pw, first, last):
    """dx (P, H, W): each window's gradient dout (P, Ho, Wo) added at its ``index``: planes
    first..last."""
    P, H, W = dx.shape
    Ho, Wo = dout.shape[1], dout.shape[2]
    for p in range(first, last):
        dx[p] = 0
        for oh in range(Ho):
            for ow in range(Wo):
                k = index[p, oh, ow]
                y, xx = oh * sh + k // kw - ph, ow * sw + k % kw - pw
                if 0 <= y < H and 0 <= xx < W:  # (a window of -inf may pick its padding)
                    dx[p, y, xx] += dout[p, oh, ow]


@parallel_jit
def avg_pool_forward_kernel(x, out, kh, kw, sh, sw, ph, pw, count_include_pad, first, last):
    """out (P, Ho, Wo): each window's mean, from the planes x (P, H, W): planes first..last."""
    P, H, W = x.shape
    Ho, Wo = out.shape[1], out.shape[2]
    for p in range(first, last):
        for oh in range(Ho):
            for ow in range(Wo):
                total, inside = 0.0, 0
                for i in range(kh):
                    y = oh * sh + i - ph
                    if 0 <= y < H:
                        for j in range(kw):
                            xx = ow * sw + j - pw
                            if 0 <= xx < W:
                                total += x[p, y, xx]
                                inside += 1
                out[p, oh, ow] = total / (kh * kw if count_include_pad else inside)


@parallel_jit
def avg_pool_backward_kernel(dout, dx, kh, kw, sh, sw, ph, pw, count_include_pad, first, last):
    """dx (P, H, W): each window's gradient dout (P, Ho, Wo) shared among its elements:
    planes first..last."""
    P, H, W = dx.shape
    Ho, Wo = dout.shape[1], dout.shape[2]
    for p in range(first, last):
        dx[p] = 0
        for oh in range(Ho):
            y0, y1 = max(oh * sh - ph, 0), min(oh * sh - ph + kh, H)
            for ow in range(Wo):
                x0, x1 = max(ow * sw - pw, 0), min(ow * sw - pw + kw, W)
                count = kh * kw if count_include_pad else (y1 - y0) * (x1 - x0)
                share = dout[p, oh, ow] / count
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        dx[p, y, xx] += share


def _planes(a, spatial: int):
    """a (N, C, *size) as C-ordered planes (N C, H, W): a 1-d axis as height 1."""
    a = np.ascontiguousarray(a)
    return a.reshape((-1,) + ((1,) if spatial == 1 else ()) + a.shape[2:])


def _geometry(kernel, stride, padding):
    """(kh, kw, sh, sw, ph, pw) of a 1-d or 2-d pooling."""
    if len(kernel) == 1:
        kernel, stride, padding = (1,) + kernel, (1,) + stride, (0,) + padding
    return (*kernel, *stride, *padding)


def _pooled(planes, geometry, dtype):
    """The pooled planes, (P, Ho, Wo), empty."""
    kh, kw, sh, sw, ph, pw = geometry
    H, W = planes.shape[1:]
    return np.empty((planes.shape[0], (H + 2 * ph - kh) // sh + 1, (W + 2 * pw - kw) // sw + 1),
                    dtype=dtype)  # fmt: skip


def _unpooled(d, x_shape):
    """The gradient's planes of an input of ``x_shape``, (P, H, W), empty."""
    height = (1,) if len(x_shape) == 3 else ()
    return np.empty((d.shape[0],) + height + tuple(x_shape[2:]), dtype=d.dtype)


def max_pool_forward(xp, x, kernel, stride, padding):
    """``tricycle.nn.pooling.max_pool_forward``; the index is this kernel's own (int32)."""
    n, geometry = x.ndim - 2, _geometry(kernel, stride, padding)
    planes = _planes(x, n)
    out = _pooled(planes, geometry, x.dtype)
    index = np.empty(out.shape, dtype=np.int32)
    max_pool_forward_kernel(planes, out, index, *geometry, planes.shape[0])
    return out.reshape(x.shape[:2] + out.shape[3 - n :]), index


def max_pool_backward(xp, dout, index, x_shape, kernel, stride, padding):
    """``tricycle.nn.pooling.max_pool_backward``, taking ``max_pool_forward``'s index."""
    d = _planes(dout, len(x_shape) - 2)
    dx = _unpooled(d, x_shape)
    _, kw, sh, sw, ph, pw = _geometry(kernel, stride, padding)
    max_pool_backward_kernel(d, index, dx, kw, sh, sw, ph, pw, d.shape[0])
    return dx.reshape(x_shape)


def avg_pool_forward(xp, x, kernel, stride, padding, count_include_pad):
    """``tricycle.nn.pooling.avg_pool_forward``."""
    n, geometry = x.ndim - 2, _geometry(kernel, stride, padding)
    planes = _planes(x, n)
    out = _pooled(planes, geometry, x.dtype)
    avg_pool_forward_kernel(planes, out, *geometry, count_include_pad, planes.shape[0])
    return out.reshape(x.shape[:2] + out.shape[3 - n :])


def avg_pool_backward(xp, dout, x_shape, kernel, stride, padding, count_include_pad):
    """``tricycle.nn.pooling.avg_pool_backward``."""
    d = _planes(dout, len(x_shape) - 2)
    dx = _unpooled(d, x_shape)
    avg_pool_backward_kernel(d, dx, *_geometry(kernel, stride, padding), count_include_pad,
                             d.shape[0])  # fmt: skip
    return dx.reshape(x_shape)


def applies(x) -> bool:
    """One or two spatial axes of float32 or float64, and something to pool."""
    return x.ndim in (3, 4) and x.dtype in (np.float32, np.float64) and x.size > 0


dispatch.add("max_pool", "cpu", (max_pool_forward, max_pool_backward), applies=applies)
dispatch.add("avg_pool", "cpu", (avg_pool_forward, avg_pool_backward), applies=applies)
