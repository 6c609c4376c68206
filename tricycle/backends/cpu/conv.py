"""Convolution on the CPU: a sample at a time, its columns (im2col) and one BLAS product per
group, on the kernels' threads.

The batch is cut into tasks (runs of consecutive samples), each with its own scratch arrays,
and the tasks run on the kernels' threads (``compile.parallel_jit``). For each sample n of a task::

    xpad = x[n] with its zero padding                    (C, Hp, Wp)
    cols = im2col(xpad)                                  (G K, Lg),  K = C / G kh kw
    out[n, g] = W_g @ cols_g + b_g                       (Og, Ho, Wo)

and in the backward::

    dW_g   += dout[n, g] @ cols_g^T                      (Og, K): one sum per task
    dx[n]   = conv(dout, W')[n]          with stride 1
            = col2im(W_g^T @ dout[n, g])  otherwise

A sample's columns are written just before the products read them, so they are still in the
core's cache. W_g is the weights as they are stored, (Og, K) with the columns' rows in the
weights' own order (c, i, j) (``source``): every product reads them, and writes dW_g, in
place, with no transposed copy of the weights per call (such a copy, strided, can take
nearly as long as the layer's products; BLAS reads a transposed operand through its flags
instead). The forward's product is (Og, Lg), the output's own layout: its rows are copied
into the output with the bias added (``from_grid``).

The columns lie on a grid of positions. With stride 1 the grid is the padded input's own
width: at grid position q = oh Wp + ow, row (c, i, j) reads xpad[c] flattened at
i dh Wp + j dw + q, so each row of cols is one contiguous copy of the padded input. The grid
then has Lg = (Ho - 1) Wp + Wo positions, of which those with ow >= Wo (the last Wp - Wo of
each row) fall outside the output: their products are computed and dropped. Other strides
lay the grid out densely (Lg = Ho Wo).

With stride 1 the Cg rows of one kernel offset (i, j) are the group's channels of the padded
input itself, shifted by i dh Wp + j dw. The forward (and so the input gradient) takes them as
views: one product per offset, Cg deep, and no columns copied (``uses_views``); its weights
are then reordered once per call, (G kh kw, Og, Cg) (``_offsets_weights``), so that each
offset's weights are a matrix BLAS can read. The weights' gradient copies the columns: one
product K deep beats nine products over the Lg positions.

With stride 1 the input gradient is itself a convolution, of dout with the weights flipped in
space and transposed over the channels, padded by d (k - 1) - p::

    dx = conv(dout, W'),  W'[c, o, i, j] = W[o, c, kh - 1 - i, kw - 1 - j]

Other strides (or a padding wider than the kernel's reach) take the columns' gradient
W_g^T @ dout[n, g] and add every column back to where it was read from (col2im).
One-dimensional convolutions run as two-dimensional ones of height 1.

The tasks depend on the shapes only, never on the thread count, so the weights' gradient,
summed per task and then over the tasks in order, has the same bits on any number of threads.
Each of its tasks sums into an array of the weights' size, so on a small grid it takes fewer,
longer tasks (``PART_MIN_POSITIONS``). A pass runs on the team's threads from a large input
or from many multiply-adds (``_parallel``): a small late layer of a CNN still has large
products.

A 3 x 3 kernel with stride 1, no dilation and one group goes to Winograd's F(2 x 2, 3 x 3)
instead where that is the faster (``winograd.py``; ``winograd.applies``: 32 to 64 channels,
outputs of 256 positions or more): the same tasks, and 2.25x fewer multiplications. So does
its input gradient, a convolution of the same kind.
"""

import numpy as np

from tricycle import dispatch
from tricycle.backends.cpu import winograd
from tricycle.backends.cpu.arrays import pad_into, unpad_into
from tricycle.backends.cpu.compile import PARALLEL_MIN_SIZE, jit, parallel_jit, thread_count
from tricycle.backends.cpu.gemm import gemm_into

MAX_TASKS = 8  # runs of samples a batch is cut into (each with its scratch arrays)
SCRATCH_BYTES = 1 << 26  # the tasks' scratch arrays take at most this much (or one task's)
VIEWS_MIN_CHANNELS = 16  # channels per group from which a stride-1 forward copies no columns
# positions (samples x grid) a task of the weights' gradient takes at least, beyond its first
# two tasks (which two threads share): each task sums into an array of the weights' size,
# zeroed and then added to the others
PART_MIN_POSITIONS = 256
PARALLEL_MIN_WORK = 1 << 21  # multiply-adds from which a pass runs on the team's threads


@jit
def source(row, kh, kw):
    """(c, i, j): the channel and kernel offsets that row ``row`` of the columns reads, in the
    weights' order (c, i, j), so that group g's rows [g K, (g + 1) K) meet W_g (Og, K) as
    stored."""
    ij = row % (kh * kw)
    return row // (kh * kw), ij // kw, ij % kw


@jit
def im2col(xpad, cols, kh, kw, sh, sw, dh, dw, Wg):
    """cols[row, oh Wg + ow] = xpad[c, oh sh + i dh, ow sw + j dw], (c, i, j) = ``source(row)``:
    xpad (C, Hp, Wp), cols (C kh kw, Lg). With stride 1 (Wg = Wp) a row is one contiguous copy
    of xpad; on the dense grid (Wg = Wo) each row of xpad is read once for the kw rows of cols
    that read it, in turn, while it is in the cache."""
    C, Hp, Wp = xpad.shape
    Lg = cols.shape[1]
    if sh == 1 and sw == 1:
        flat = xpad.reshape(C, Hp * Wp)
        for row in range(cols.shape[0]):
            c, i, j = source(row, kh, kw)
            src, dst = flat[c, i * dh * Wp + j * dw :], cols[row]
            for q in range(Lg):
                dst[q] = src[q]
        return
    for c in range(C):
        for i in range(kh):
            for oh in range(Lg // Wg):
                h, q = oh * sh + i * dh, oh * Wg
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    if sw == 2:  # a constant stride: a copy the compiler vectorises
                        for ow in range(Wg):
                            cols[row, q + ow] = xpad[c, h, j * dw + 2 * ow]
                    else:
                        for ow in range(Wg):
                            cols[row, q + ow] = xpad[c, h, j * dw + sw * ow]


@jit
def col2im(dcols, dxpad, kh, kw, sh, sw, dh, dw, Wo):
    """The backward of ``im2col`` on the dense grid: dxpad (C, Hp, Wp) = the sum of the
    columns' elements at the positions they were read from (overwritten); dcols
    (C kh kw, Ho Wo). Each row of dxpad takes its kw rows of dcols in turn; every element
    gets its terms in the order (i, j), as row by row."""
    C = dxpad.shape[0]
    Ho = dcols.shape[1] // Wo
    dxpad[...] = 0
    for c in range(C):
        for i in range(kh):
            for oh in range(Ho):
                h, q = oh * sh + i * dh, oh * Wo
                for j in range(kw):
                    row = (c * kh + i) * kw + j
                    if sw == 2:  # as in im2col
                        for ow in range(Wo):
                            dxpad[c, h, j * dw + 2 * ow] += dcols[row, q + ow]
                    else:
                        for ow in range(Wo):
                            dxpad[c, h, j * dw + sw * ow] += dcols[row, q + ow]


@jit
def from_grid(product, bias, out, Wg):
    """out[o, oh, ow] = product[o, oh Wg + ow] + bias[o]: product (Og, Lg) into out
    (Og, Ho, Wo), dropping the grid's positions outside the output."""
    Og, Ho, Wo = out.shape
    for o in range(Og):
        b = bias[o]
        for oh in range(Ho):
            src, dst = product[o, oh * Wg : oh * Wg + Wo], out[o, oh]
            for ow in range(Wo):
                dst[ow] = src[ow] + b


@jit
def to_grid(d, grid, Wg):
    """grid[o, oh Wg + ow] = d[o, oh, ow]: d (Og, Ho, Wo) onto the grid (Og, Lg), whose other
    positions are left as they are (zero)."""
    Og, Ho, Wo = d.shape
    for o in range(Og):
        for oh in range(Ho):
            src, dst = d[o, oh], grid[o, oh * Wg : oh * Wg + Wo]
            for ow in range(Wo):
                dst[ow] = src[ow]


# Each kernel's tasks: task t takes samples [t N / tasks, (t + 1) N / tasks) and scratch [t];
# a launch runs tasks first..last.
# ``shape`` = (kh, kw, sh, sw, dh, dw, ph, pw, Wg).


@parallel_jit(blas=True)
def forward_kernel(x, w, bias, out, xpad, cols, product, shape, views, first, last):
    """out (N, Co, Ho, Wo) = x (N, C, H, W) convolved with w (G, Og, K), the weights as
    stored, plus bias (Co,); with ``views`` (``uses_views``) the columns' blocks are views of
    xpad and w is (G kh kw, Og, Cg), by kernel offset (``_offsets_weights``). Scratch: xpad
    (tasks, C, Hp, Wp) zero, cols (tasks, G K, Lg) (unused with ``views``), product
    (tasks, Og, Lg)."""
    kh, kw, sh, sw, dh, dw, ph, pw, Wg = shape
    N, tasks, (C, Hp, Wp) = x.shape[0], xpad.shape[0], xpad.shape[1:]
    Og, Lg = product.shape[1:]
    G = out.shape[1] // Og
    K, Cg = C // G * kh * kw, C // G
    for task in range(first, last):
        flat = xpad[task].reshape(C, Hp * Wp)
        for n in range(task * N // tasks, (task + 1) * N // tasks):
            pad_into(x[n], xpad[task], ph, pw)
            if not views:
                im2col(xpad[task], cols[task], kh, kw, sh, sw, dh, dw, Wg)
            for g in range(G):
                if views:  # block ij of cols_g is flat[channels of g, shift ij:]: no copy
                    for ij in range(kh * kw):
                        shift = ij // kw * dh * Wp + ij % kw * dw
                        block = flat[g * Cg : (g + 1) * Cg, shift : shift + Lg]
                        gemm_into(product[task], w[g * kh * kw + ij], block, False, False,
                                  1.0 if ij else 0.0)  # fmt: skip
                else:
                    gemm_into(product[task], w[g], cols[task, g * K : (g + 1) * K], False,
                              False, 0.0)  # fmt: skip
                group = slice(g * Og, (g + 1) * Og)
                from_grid(product[task], bias[group], out[n, group], Wg)


@parallel_jit(blas=True)
def weights_grad_kernel(x, d, parts, xpad, cols, grid, shape, first, last):
    """parts[task] (G, Og, K) += d[n, g] @ cols_g^T over the task's samples: x (N, C, H, W),
    d (N, Co, Ho, Wo). Scratch: xpad (tasks, C, Hp, Wp) and grid (tasks, Co, Lg) zero, cols
    (tasks, G K, Lg)."""
    kh, kw, sh, sw, dh, dw, ph, pw, Wg = shape
    N, tasks = x.shape[0], xpad.shape[0]
    G, Og, K = parts.shape[1:]
    for task in range(first, last):
        for n in range(task * N // tasks, (task + 1) * N // tasks):
            pad_into(x[n], xpad[task], ph, pw)
            im2col(xpad[task], cols[task], kh, kw, sh, sw, dh, dw, Wg)
            to_grid(d[n], grid[task], Wg)
            for g in range(G):
                cols_g, d_g = cols[task, g * K : (g + 1) * K], grid[task, g * Og : (g + 1) * Og]
                gemm_into(parts[task, g], d_g, cols_g, False, True, 1.0)


@parallel_jit(blas=True)
def input_grad_kernel(d, w, dx, dxpad, dcols, shape, first, last):
    """dx (N, C, H, W) from d (N, Co, Ho Wo): dcols_g = w[g]^T @ d[n, g], (K, Ho Wo), then
    col2im; w (G, Og, K) the weights as stored. Scratch: dxpad (tasks, C, Hp, Wp), dcols
    (tasks, G K, Ho Wo)."""
    kh, kw, sh, sw, dh, dw, ph, pw, Wo = shape
    N, tasks = d.shape[0], dxpad.shape[0]
    G, Og, K = w.shape
    for task in range(first, last):
        for n in range(task * N // tasks, (task + 1) * N // tasks):
            for g in range(G):
                dcols_g, d_g = dcols[task, g * K : (g + 1) * K], d[n, g * Og : (g + 1) * Og]
                gemm_into(dcols_g, w[g], d_g, True, False, 0.0)
            col2im(dcols[task], dxpad[task], kh, kw, sh, sw, dh, dw, Wo)
            unpad_into(dxpad[task], dx[n], ph, pw)


class _Geometry:
    """A convolution's sizes as a 2-d one: x (N, C, H, W), kernel (kh, kw), output (Ho, Wo),
    stride, padding and dilation, each a pair; K = C / G kh kw; the grid's width Wg and its
    positions Lg (the module's docstring)."""

    def __init__(self, x_shape, w_shape, stride, padding, dilation, groups):
        if len(x_shape) == 3:  # 1-d: height 1
            x_shape, w_shape = x_shape[:2] + (1,) + x_shape[2:], w_shape[:2] + (1,) + w_shape[2:]
            stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
        self.x_shape, self.kernel, self.out_channels = x_shape, w_shape[2:], w_shape[0]
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.padded = tuple(n + 2 * p for n, p in zip(x_shape[2:], padding))
        self.out = tuple(
            (n - d * (k - 1) - 1) // s + 1
            for n, k, s, d in zip(self.padded, self.kernel, stride, dilation)
        )
        self.K = x_shape[1] // groups * self.kernel[0] * self.kernel[1]
        (Ho, Wo), Wp = self.out, self.padded[1]
        self.Wg, self.Lg = (Wp, (Ho - 1) * Wp + Wo) if stride == (1, 1) else (Wo, Ho * Wo)

    def shape(self, dense: bool = False) -> tuple:
        """The kernels' ``shape``: on the grid, or with ``dense`` on the dense one (col2im)."""
        return (*self.kernel, *self.stride, *self.dilation, *self.padding,
                self.out[1] if dense else self.Wg)  # fmt: skip

    def tasks(self, bytes_per_task: int) -> int:
        """How many runs of samples to cut the batch into: at most ``MAX_TASKS``, whose
        scratch arrays fit in ``SCRATCH_BYTES`` (at least one)."""
        N = self.x_shape[0]
        return max(1, min(N, MAX_TASKS, SCRATCH_BYTES // max(1, bytes_per_task)))

    @property
    def work(self) -> int:
        """The multiply-adds of a pass's products, N Co K Lg (on the grid)."""
        return self.x_shape[0] * self.out_channels * self.K * self.Lg

    @property
    def padded_size(self) -> int:
        """The elements of one padded sample, C Hp Wp."""
        return self.x_shape[1] * self.padded[0] * self.padded[1]

    def padded_scratch(self, tasks: int, dtype):
        """Each task's padded sample, zero (only its inside is written afterwards)."""
        return np.zeros((tasks, self.x_shape[1]) + self.padded, dtype=dtype)

    def transposed_padding(self):
        """The padding of the input gradient as a convolution of dout (stride 1), or None
        where it is not one (a stride, or a padding wider than the kernel's reach)."""
        reach = tuple(d * (k - 1) for k, d in zip(self.kernel, self.dilation))
        if self.stride != (1, 1) or any(p > r for p, r in zip(self.padding, reach)):
            return None
        return tuple(r - p for r, p in zip(reach, self.padding))


def uses_views(Cg: int, stride) -> bool:
    """Whether the forward takes the columns' blocks as views of the padded input (stride 1):
    one product per kernel offset, of depth K = Cg each, instead of a copy and one product.
    With few channels per group those products would be too thin for BLAS."""
    return stride == (1, 1) and Cg >= VIEWS_MIN_CHANNELS


def _parallel(tasks: int, x, work: int = 0) -> bool:
    """Whether a pass runs its tasks on the team's threads (one launch does a whole pass,
    products included): for an input ``x`` of ``PARALLEL_MIN_SIZE`` elements or a pass of
    ``PARALLEL_MIN_WORK`` multiply-adds (``work``): a small input may still feed large
    products."""
    large = x.size >= PARALLEL_MIN_SIZE or work >= PARALLEL_MIN_WORK
    return tasks > 1 and large and thread_count() > 1


def _offsets_weights(weights, G):
    """W_g by kernel offset for the forward on views: weights (Co, Cg, kh, kw) ->
    (G kh kw, Og, Cg), element [g kh kw + i kw + j, o, c] = weights[g Og + o, c, i, j]."""
    Co, Cg, kh, kw = weights.shape
    w = weights.reshape(G, Co // G, Cg, kh * kw).transpose(0, 3, 1, 2)  # (G, kh kw, Og, Cg)
    return np.ascontiguousarray(w).reshape(G * kh * kw, Co // G, Cg)


def _convolve(geometry, x, weights, bias, out):
    """out (N, Co, Ho, Wo) = x (N, C, H, W) convolved with weights (Co, C / G, kh, kw), plus
    bias (Co,)."""
    if winograd.applies(geometry):
        return winograd.convolve(geometry, x, weights, bias, out, _parallel)
    C, G, dtype = x.shape[1], geometry.groups, x.dtype
    weights = weights.astype(dtype, copy=False)
    K, Og = geometry.K, weights.shape[0] // G
    views = uses_views(C // G, geometry.stride)
    if views:
        w = _offsets_weights(weights, G)  # (G kh kw, Og, Cg)
    else:
        w = np.ascontiguousarray(weights).reshape(G, Og, K)  # as stored
    col_rows = 0 if views else G * K  # the copied columns: none on views
    tasks = geometry.tasks((geometry.padded_size + geometry.Lg * (col_rows + Og)) * x.itemsize)
    xpad = geometry.padded_scratch(tasks, dtype)
    cols = np.empty((tasks, col_rows, geometry.Lg), dtype=dtype)
    product = np.empty((tasks, Og, geometry.Lg), dtype=dtype)
    forward_kernel.run(_parallel(tasks, x, geometry.work), x, w, bias, out, xpad, cols, product,
                       geometry.shape(), views, tasks)  # fmt: skip


def conv_forward(xp, x, weights, bias, stride, padding, dilation, groups):
    """``tricycle.nn.conv.conv_forward``: x (N, C, *size), weights (Co, C / groups, *kernel),
    bias (Co,) or None -> (N, Co, *out)."""
    dtype = np.result_type(x, weights)
    geometry = _Geometry(x.shape, weights.shape, stride, padding, dilation, groups)
    N, Co, G = x.shape[0], weights.shape[0], groups
    x4 = np.ascontiguousarray(x, dtype=dtype).reshape(geometry.x_shape)
    w4 = weights.reshape((Co, x4.shape[1] // G) + geometry.kernel)
    b = np.zeros(Co, dtype) if bias is None else np.ascontiguousarray(bias, dtype)
    out = np.empty((N, Co) + geometry.out, dtype=dtype)
    _convolve(geometry, x4, w4, b, out)
    return out.reshape((N, Co) + geometry.out[2 - (x.ndim - 2) :])


def _flipped(weights, G):
    """W' (C, Co / G, kh, kw): the weights of the input gradient as a convolution of dout,
    W'[g Cg + c, o, i, j] = W[g Og + o, c, kh - 1 - i, kw - 1 - j]."""
    Co, Cg, kh, kw = weights.shape
    w = weights.reshape(G, Co // G, Cg, kh, kw)[:, :, :, ::-1, ::-1]
    return np.ascontiguousarray(w.transpose(0, 2, 1, 3, 4)).reshape(G * Cg, Co // G, kh, kw)


def _weights_grad(geometry, x, d):
    """(dW, db): dW (Co, Cg, kh, kw), the sum over the samples of d[n, g] @ cols_g^T; db (Co,)
    where the pass gives it on the way (Winograd), else None."""
    if winograd.applies(geometry):
        return winograd.weights_grad(geometry, x, d, _parallel)
    C, Co, G, K, dtype = x.shape[1], d.shape[1], geometry.groups, geometry.K, d.dtype
    tasks = geometry.tasks((geometry.padded_size + geometry.Lg * (G * K + Co)) * d.itemsize)
    tasks = min(tasks, max(2, x.shape[0] * geometry.Lg // PART_MIN_POSITIONS))
    parts = np.zeros((tasks, G, Co // G, K), dtype=dtype)
    xpad = geometry.padded_scratch(tasks, dtype)
    cols = np.empty((tasks, G * K, geometry.Lg), dtype=dtype)
    grid = np.zeros((tasks, Co, geometry.Lg), dtype=dtype)
    weights_grad_kernel.run(_parallel(tasks, x, geometry.work), x, d, parts, xpad, cols, grid,
                            geometry.shape(), tasks)  # fmt: skip
    dw = parts[0] if tasks == 1 else parts.sum(axis=0)  # over the tasks, in order
    return dw.reshape((Co, C // G) + geometry.kernel), None


def _input_grad(geometry, d, weights):
    """dx (N, C, H, W) of d (N, Co, Ho, Wo): a convolution of d with stride 1, else col2im."""
    N, C, Co, G = d.shape[0], geometry.x_shape[1], d.shape[1], geometry.groups
    dx = np.empty(geometry.x_shape, dtype=d.dtype)
    pad_t = geometry.transposed_padding()
    if pad_t is not None:  # dx = conv(dout, W') with stride 1
        flipped = _flipped(weights, G)  # (C, Og, kh, kw)
        g_t = _Geometry(d.shape, flipped.shape, (1, 1), pad_t, geometry.dilation, G)
        _convolve(g_t, d, flipped, np.zeros(C, d.dtype), dx)
        return dx
    K, L = geometry.K, geometry.out[0] * geometry.out[1]
    w = weights.reshape(G, Co // G, K)  # as stored
    tasks = geometry.tasks((geometry.padded_size + G * K * L) * d.itemsize)
    dxpad = geometry.padded_scratch(tasks, d.dtype)
    dcols = np.empty((tasks, G * K, L), dtype=d.dtype)
    input_grad_kernel.run(_parallel(tasks, d, geometry.work), d.reshape(N, Co, L), w, dx, dxpad,
                          dcols, geometry.shape(dense=True), tasks)  # fmt: skip
    return dx


def conv_backward(xp, dout, x, weights, stride, padding, dilation, groups, needs):
    """``tricycle.nn.conv.conv_backward``: (dx, dweights, dbias), None where not ``needs``."""
    want_x, want_weights, want_bias = needs
    dtype = dout.dtype
    geometry = _Geometry(x.shape, weights.shape, stride, padding, dilation, groups)
    N, C, Co = x.shape[0], x.shape[1], weights.shape[0]
    w4 = np.ascontiguousarray(weights, dtype).reshape((Co, C // groups) + geometry.kernel)
    d = np.ascontiguousarray(dout, dtype).reshape((N, Co) + geometry.out)
    dx = dweights = dbias = None
    if want_weights:
        x4 = np.ascontiguousarray(x, dtype).reshape(geometry.x_shape)
        dweights, sums = _weights_grad(geometry, x4, d)
        dweights = dweights.reshape(weights.shape)
        dbias = sums if want_bias else None
    if want_bias and dbias is None:
        dbias = d.sum(axis=(0, 2, 3))
    if want_x:
        dx = _input_grad(geometry, d, w4).reshape(x.shape)
    return dx, dweights, dbias


def applies(x, weights, bias=None) -> bool:
    """One or two spatial axes, float32 or float64, and something to convolve."""
    dtype = np.result_type(x, weights)
    return x.ndim in (3, 4) and dtype in (np.float32, np.float64) and x.size > 0


dispatch.add("conv", "cpu", (conv_forward, conv_backward), applies=applies)
