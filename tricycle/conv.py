"""Convolution and Flatten, for inputs laid out as PyTorch's: (N, C, L) in one spatial
dimension, (N, C, H, W) in two. The module is also the face of the CNN layers: pooling
(``tricycle.pooling``) and batch normalisation (``tricycle.batch_norm``) import from here too.

A convolution is an einsum over strided windows (``tricycle.windows``). ``windows(x)`` views
the padded input as (N, C, kh, kw, Ho, Wo), element [n, c, i, j, h, w] =
x[n, c, h*s + i*d, w*s + j*d] for stride s and dilation d, without copying anything
(``as_strided``); then::

    out = Einsum("ncijhw,ocij->nohw")(windows(x), W) + b[o]

and, by the einsum's index swap, the backward is::

    dW       = Einsum("ncijhw,nohw->ocij")(windows(x), dout)
    dwindows = Einsum("ocij,nohw->ncijhw")(W, dout)

The window view's own backward is a scatter-add (col2im): every window element goes back to
the input position it was read from. For a fixed kernel offset (i, j) the positions of
different windows never coincide, so this is one strided add per offset (kh * kw of them),
with no loop over positions (``scatter_windows``). With ``groups`` the channels split into
groups that are convolved separately: one more batch index g in the einsum.

On numpy the einsum runs as a matrix product per block of samples: the block's windows are
copied into a (C kh kw, Ho Wo) matrix (im2col) small enough to stay in the CPU cache and
multiplied by the (O, C kh kw) weights; each thread of the pool takes a contiguous group of
samples (``for_row_groups``). With stride 1 the matrix is built from contiguous runs of the
flattened input (``_ConvGeometry``). The backward recomputes the windows instead of keeping
that 9x-larger matrix. On cupy one block covers the whole batch.
"""

import math
from collections.abc import Callable

from tricycle import checks, ops, threads
from tricycle.backend import check_same_device
from tricycle.batch_norm import BatchNorm1d, BatchNorm2d, batch_norm
from tricycle.blocking import for_row_groups, row_blocks
from tricycle.initialisers import init_uniform
from tricycle.layers import Layer, parameter, shared_back_fns
from tricycle.pooling import AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d, avg_pool, max_pool
from tricycle.tensor import Tensor
from tricycle.windows import as_tuple, output_size, scatter_windows, unpad, windows

__all__ = [
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "Flatten",
    "MaxPool1d",
    "MaxPool2d",
    "avg_pool",
    "batch_norm",
    "conv",
    "max_pool",
]


# ====================================================================== convolution


class _ConvGeometry:
    """Shapes of one convolution, x (N, C, *size) and weights (O, C / groups, *kernel), and
    the layout of its im2col matrix.

    With stride 1 in every axis (``flat``), the padded input is flattened per channel, padded
    size P = (P1, ..., Pd). Output position h and kernel offset i then read the flat element
    ``e(h) + off(i)``, e(h) = sum_a h_a M_a and off(i) = sum_a i_a dilation_a M_a, with
    M_a = P_(a+1) ... P_d. So each row (c, i) of the im2col matrix is one contiguous slice
    ``flat[c, off(i) : off(i) + E]`` of E = out_1 M_1 elements: the columns run over output
    rows laid out at the padded width, whose last P_a - out_a positions per axis are junk
    (cropped from the output, zero in the extended gradient). Copying contiguous runs is
    about 3x faster than gathering the windows element by element. Otherwise the columns are
    exactly the L output positions, gathered from ``windows``.

    With a bias the matrix has one more row of ones (and the weights a column with the
    bias), so the one product adds the bias and, in the backward, sums the bias gradient."""

    def __init__(self, x_shape, w_shape, stride, padding, dilation, groups, op="Conv"):
        self.N, self.C = x_shape[:2]
        self.O, self.Cg = w_shape[:2]
        self.kernel, self.size = tuple(w_shape[2:]), tuple(x_shape[2:])
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.out = output_size(self.size, self.kernel, stride, padding, dilation, op)
        self.G, self.Og = groups, self.O // groups
        self.K = self.Cg * math.prod(self.kernel)  # contracted per group: c, *kernel
        self.L = math.prod(self.out)  # output positions
        self.flat = all(s == 1 for s in stride)
        self.padded = tuple(n + 2 * p for n, p in zip(self.size, padding))
        # M_a, the flat step of spatial axis a; E, the columns; the zero tail past the
        # padded input that the last kernel offset's slice reads
        self.steps = tuple(math.prod(self.padded[a + 1 :]) for a in range(len(self.size)))
        self.E = self.out[0] * self.steps[0] if self.flat else self.L
        reach = zip(self.kernel[1:], self.dilation[1:], self.steps[1:])
        self.tail = sum((k - 1) * d * m for k, d, m in reach) if self.flat else 0

    def blocks(self, xp) -> list[slice]:
        """The batch in blocks of samples (``row_blocks``): a block's im2col matrix stays in
        the CPU's cache, or is one sample. Each block is computed the same way whichever
        thread runs it, so results do not depend on the number of threads."""
        return row_blocks(xp, self.N, self.G * (self.K + 1) * self.E)

    @staticmethod
    def run(blocks: list[slice], indices: slice) -> tuple[slice, list[slice]]:
        """A thread's run of consecutive ``blocks``: (its samples, the blocks relative to
        them)."""
        mine = blocks[indices]
        first = mine[0].start or 0
        relative = [slice((r.start or 0) - first, None if r.stop is None else r.stop - first)
                    for r in mine]  # fmt: skip
        return slice(first, mine[-1].stop), relative

    def valid(self, a):
        """(b, O, E) in the columns' layout -> the view (b, O, *out) of its output positions."""
        if not self.flat:
            return a.reshape((len(a), self.O) + self.out)
        a = a.reshape((len(a), self.O, self.out[0]) + self.padded[1:])
        return a[(..., slice(None)) + tuple(slice(0, n) for n in self.out[1:])]

    def in_columns(self, xp, dout):
        """Output gradients (b, O, *out) in the columns' layout (b, G, Og, E): on the flat
        path a copy, zero at the junk positions; else a view."""
        if not self.flat:
            return dout.reshape(len(dout), self.G, self.Og, self.L)
        extended = xp.zeros((len(dout), self.O, self.E), dtype=dout.dtype)
        self.valid(extended)[...] = dout  # in one call
        return extended.reshape(len(dout), self.G, self.Og, self.E)

    def grouped_weights(self, xp, weights, bias):
        """(G, Og, K), with the bias as a last column (G, Og, K + 1) where there is one."""
        w = weights.reshape(self.G, self.Og, self.K)
        if bias is None:
            return w
        return xp.concatenate([w, bias.reshape(self.G, self.Og, 1).astype(w.dtype)], axis=-1)


class _Columns:
    """One thread's im2col of its ``group`` of samples of x (N, C, *size): ``columns(rows)``
    is the matrix (b, G, K (+ 1 row of ones), E) of a block ``rows`` of the group, in one
    buffer reused from block to block (fresh memory costs page faults). The group is padded
    (and flattened) once, in one numpy call: with two threads every numpy call that lets
    go of the GIL costs a hand-over of it, measured at ~10 us on a 2-core VM, so a thread
    makes few and large ones."""

    def __init__(self, geometry: _ConvGeometry, xp, x, group: slice, ones: bool):
        self.g, self.xp, self.ones, self.buffer = geometry, xp, ones, None
        g, x = geometry, x[group]
        area = math.prod(g.padded)
        flat = xp.zeros((len(x), g.C, area + g.tail), dtype=x.dtype)
        grid = flat[:, :, :area].reshape((len(x), g.C) + g.padded)
        unpad(grid, g.padding)[...] = x  # the interior of the zero border
        self.source = flat if g.flat else grid  # (n, C, area + tail) or (n, C, *padded)

    def __call__(self, rows: slice):
        g, xp, source = self.g, self.xp, self.source[rows]
        b = len(source)
        if g.flat:
            sN, sC, item = source.strides[0], source.strides[1], source.itemsize
            offsets = tuple(d * m * item for d, m in zip(g.dilation, g.steps))
            shape = (b, g.G, g.Cg) + g.kernel + (g.E,)
            strides = (sN, g.Cg * sC, sC) + offsets + (item,)
            view = xp.lib.stride_tricks.as_strided(source, shape, strides)
        else:
            view = windows(xp, source, g.kernel, g.stride, g.dilation)
            view = view.reshape((b, g.G, g.Cg) + g.kernel + g.out)
        if self.buffer is None:  # the first block is the largest
            self.buffer = xp.empty((b, g.G, g.K + self.ones, g.E), dtype=source.dtype)
            if self.ones:
                self.buffer[:, :, g.K] = 1
        cols = self.buffer[:b]
        cols[:, :, : g.K].reshape(view.shape)[...] = view  # a view: K splits into c, *kernel
        return cols


def conv_forward(xp, x, weights, bias, stride, padding, dilation, groups):
    """``Einsum("ncijhw,ocij->nohw")(windows(x), W) + b`` for any number of spatial axes,
    with ``groups``: x (N, C, *size), weights (O, C / groups, *kernel), bias (O,) or None ->
    (N, O, *out). Computed as (Og, K) @ (K, E) products per group, a block of samples at a
    time, each thread on its own group of samples."""
    g = _ConvGeometry(x.shape, weights.shape, stride, padding, dilation, groups)
    w = g.grouped_weights(xp, weights, bias)  # (G, Og, K (+ 1))
    out = xp.empty((g.N, g.O) + g.out, dtype=xp.result_type(x, weights))

    blocks = g.blocks(xp)

    def samples(indices):  # consecutive blocks, on one thread
        group, relative = g.run(blocks, indices)
        columns, out_ = _Columns(g, xp, x, group, bias is not None), out[group]
        for rows in relative:
            product = threads.matmul(xp, w, columns(rows))  # (b, G, Og, E)
            out_[rows] = g.valid(product.reshape(len(product), g.O, g.E))

    for_row_groups(xp, len(blocks), samples)
    return out


def conv_backward(xp, dout, x, weights, stride, padding, dilation, groups, needs):
    """Gradients (dx, dweights, dbias) of ``conv_forward``, each None where ``needs`` (for x,
    weights, bias) says nobody wants it:

        dW       = Einsum("ncijhw,nohw->ocij")(windows(x), dout)
        dwindows = Einsum("ocij,nohw->ncijhw")(W, dout), then dx = scatter_windows(dwindows)
        db       = dout summed over every axis but the channels

    With stride 1 (and padding <= dilation * (kernel - 1)), dx is itself a convolution:
    of dout, padded by dilation * (kernel - 1) - padding, with the kernel flipped and its in
    and out channels swapped (``transposed_weights``). That costs an im2col and a product,
    where dwindows writes an array kh * kw times dx's size and scatter-adds it back. dW and
    db come out of one product per block, [dW^T; db] (K + 1, Og) = [cols; ones] @ dout^T,
    with dout laid out as the columns (zero at the junk positions).
    """
    g = _ConvGeometry(x.shape, weights.shape, stride, padding, dilation, groups)
    want_x, want_weights, want_bias = needs
    as_convolution = all(s == 1 for s in stride) and all(
        p <= d * (k - 1) for p, d, k in zip(padding, dilation, g.kernel)
    )
    dx = None
    if want_x and as_convolution:
        dx_padding = tuple(d * (k - 1) - p for p, d, k in zip(padding, dilation, g.kernel))
        flipped = transposed_weights(weights, groups)
        dx = conv_forward(xp, dout, flipped, None, stride, dx_padding, dilation, groups)
    elif want_x:
        dx = xp.empty(x.shape, dtype=dout.dtype)
    scatter = want_x and not as_convolution
    w = g.grouped_weights(xp, weights, None)  # (G, Og, K)
    blocks = g.blocks(xp)
    parts = None  # per block: [dW^T; db] (G, K (+ 1), Og)
    if want_weights:
        parts = xp.empty((len(blocks), g.G, g.K + want_bias, g.Og), dtype=dout.dtype)

    def samples(indices):  # consecutive blocks, on one thread
        group, relative = g.run(blocks, indices)
        dout_ = dout[group]
        if want_weights:
            columns = _Columns(g, xp, x, group, want_bias)
            extended = g.in_columns(xp, dout_)  # (n, G, Og, E)
        for k, rows in enumerate(relative, indices.start or 0):
            d = dout_[rows]  # (b, O, *out)
            if want_weights:  # recomputed: cheaper than keeping the im2col matrix
                product = threads.matmul(xp, columns(rows), extended[rows].swapaxes(-1, -2))
                parts[k] = product.sum(axis=0)
            if scatter:
                dcols = threads.matmul(xp, w.swapaxes(-1, -2), d.reshape(len(d), g.G, g.Og, g.L))
                dcols = dcols.reshape((len(d), g.C) + g.kernel + g.out)  # (b, C, *kernel, *out)
                dx[group][rows] = unpad(
                    scatter_windows(xp, dcols, g.padded, stride, dilation), padding
                )

    if want_weights or scatter:
        for_row_groups(xp, len(blocks), samples)
    dweights = dbias = None
    if want_weights:
        total = parts.sum(axis=0)  # (G, K (+ 1), Og), in block order
        dweights = total[:, : g.K].swapaxes(-1, -2).reshape(weights.shape)
        if want_bias:
            dbias = total[:, g.K].reshape(g.O)
    elif want_bias:
        dbias = dout.reshape(g.N, g.O, g.L).sum(axis=(0, 2))
    return dx, dweights, dbias


def transposed_weights(weights, groups: int):
    """The kernel of a stride-1 convolution's input gradient: (O, C / G, *kernel) ->
    (C, O / G, *kernel), each group's in and out channels swapped and the kernel flipped."""
    out_channels, Cg = weights.shape[:2]
    Og, kernel = out_channels // groups, weights.shape[2:]
    grouped = weights.reshape((groups, Og, Cg) + kernel).swapaxes(1, 2)  # (G, Cg, Og, *kernel)
    flipped = grouped[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]
    return flipped.reshape((groups * Cg, Og) + kernel)


def conv(
    x: Tensor,
    weights: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """Cross-correlation of x (N, C, *size) with weights (O, C / groups, *kernel), plus a bias
    (O,): (N, O, *out), as PyTorch's ``conv1d``/``conv2d``. ``stride``, ``padding`` (zeros)
    and ``dilation`` are ints or one int per spatial axis."""
    n = weights.ndim - 2
    op = f"conv{n}d"
    if n < 1 or x.ndim != n + 2:
        raise ValueError(
            f"{op}: expected input (batch, channels, *{n} spatial axes) for weights of shape "
            f"{weights.shape}, got shape {x.shape}"
        )
    stride, dilation = as_tuple(stride, n, "stride", op), as_tuple(dilation, n, "dilation", op)
    padding = as_tuple(padding, n, "padding", op, low=0)
    if groups < 1 or x.shape[1] != weights.shape[1] * groups or weights.shape[0] % groups:
        raise ValueError(
            f"{op}: input of shape {x.shape} with {x.shape[1]} channels does not fit weights "
            f"of shape {weights.shape} with groups={groups}: expected in_channels = "
            f"{weights.shape[1]} * groups and out_channels divisible by groups"
        )
    if bias is not None and bias.shape != (weights.shape[0],):
        raise ValueError(f"{op}: bias must have shape ({weights.shape[0]},), got {bias.shape}")
    args = (x, weights) if bias is None else (x, weights, bias)
    xp = check_same_device(op, *(a.array for a in args))
    output_size(x.shape[2:], weights.shape[2:], stride, padding, dilation, op)  # checks sizes
    geometry = (stride, padding, dilation, groups)
    out = conv_forward(xp, x.array, weights.array, None if bias is None else bias.array, *geometry)

    def backward(dout):
        needs = (x.requires_grad, weights.requires_grad, bias is not None and bias.requires_grad)
        grads = conv_backward(xp, dout, x.array, weights.array, *geometry, needs)
        return grads[: len(args)]

    back_fns = shared_back_fns(backward, len(args))
    return Tensor(out, args=args, back_fns=back_fns, name=op)


class _ConvNd(Layer):
    """Shared by Conv1d and Conv2d: weights (out, in / groups, *kernel) and bias (out,) start
    as PyTorch's, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * prod(kernel)
    (``initialiser`` replaces it for the weights)."""

    n_dims = 0

    @checks.arguments(
        in_channels=checks.positive_int,
        out_channels=checks.positive_int,
        groups=checks.positive_int,
        bias=checks.boolean,
        initialiser=checks.optional(checks.function),
    )
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        initialiser: Callable | None = None,
    ):
        name = type(self).__name__
        n = self.n_dims
        self.kernel_size = as_tuple(kernel_size, n, "kernel_size", name)
        self.stride = as_tuple(stride, n, "stride", name)
        self.padding = as_tuple(padding, n, "padding", name, low=0)
        self.dilation = as_tuple(dilation, n, "dilation", name)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels={in_channels} and out_channels={out_channels} must both "
                f"be divisible by groups={groups}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        shape = (out_channels, in_channels // groups) + self.kernel_size
        bound = 1 / math.sqrt(in_channels // groups * math.prod(self.kernel_size))
        init = initialiser or (lambda s: init_uniform(s, bound))
        self.weights = parameter(init(shape), "weights")
        self.bias = parameter(init_uniform((out_channels,), bound), "bias") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != self.n_dims + 2 or x.shape[1] != self.in_channels:
            axes = ("length",) if self.n_dims == 1 else ("height", "width")
            raise ValueError(
                f"{type(self).__name__}({self.in_channels} -> {self.out_channels}): expected "
                f"input (batch, {self.in_channels}, {', '.join(axes)}), got shape {x.shape}"
            )
        geometry = (self.stride, self.padding, self.dilation, self.groups)
        return conv(x, self.weights, self.bias, *geometry)

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={self.bias is not None}"
        )


class Conv1d(_ConvNd):
    """1-D convolution, as ``torch.nn.Conv1d``: (N, in_channels, L) -> (N, out_channels, Lo)."""

    n_dims = 1


class Conv2d(_ConvNd):
    """2-D convolution, as ``torch.nn.Conv2d``: (N, in_channels, H, W) -> (N, out, Ho, Wo)."""

    n_dims = 2


# ====================================================================== Flatten


class Flatten(Layer):
    """Merge axes ``start_dim`` ... ``end_dim`` into one, as ``torch.nn.Flatten``: by default
    (N, C, H, W) -> (N, C * H * W)."""

    @checks.arguments(start_dim=checks.integer, end_dim=checks.integer)
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        start, end = self.start_dim % max(x.ndim, 1), self.end_dim % max(x.ndim, 1)
        if x.ndim == 0 or start > end:
            raise ValueError(
                f"Flatten: cannot merge axes {self.start_dim}..{self.end_dim} of a tensor of "
                f"shape {x.shape}"
            )
        shape = x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :]
        return ops.reshape(x, shape)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
