"""Convolution and Flatten, for inputs laid out as PyTorch's: (N, C, L) in one spatial
dimension, (N, C, H, W) in two. The module is also the face of the CNN layers: pooling
(``tricycle.nn.pooling``) and batch normalisation (``tricycle.nn.batch_norm``) import from here too.

A convolution is a product over strided windows (``tricycle.nn.windows``). ``windows(x)`` views
the padded input as (N, C, kh, kw, Ho, Wo), element [n, c, i, j, h, w] =
x[n, c, h*s + i*d, w*s + j*d] for stride s and dilation d, without copying anything
(``as_strided``). Copied into columns cols (N, C kh kw, Ho Wo) (im2col), the convolution is
one matrix product per sample::

    out[n] = W (O, C kh kw) @ cols[n] + b

and its backward is::

    dW       = dout (O, N Ho Wo) @ cols^T (N Ho Wo, C kh kw)   (every sample in one product)
    dcols[n] = W^T @ dout[n],  then dx = scatter_windows(dcols)  (col2im)
    db       = dout summed over every axis but the channels

The window view's own backward is a scatter-add: every window element goes back to the input
position it was read from (``scatter_windows``). With ``groups`` the channels split into
groups that are convolved separately: one more batch index g in the products. Kernels
registered for the op "conv" take its place through ``tricycle.dispatch``.

Beyond zeros, the layers pad as PyTorch's ``padding_mode`` says ("reflect", "replicate",
"circular"): the input is padded first (``tricycle.nn.padding.pad``, whose backward folds the
borders back) and convolved without padding. ``padding="same"`` with an odd overhang pads one
more zero on the right than on the left, as PyTorch does; an unbatched input (C, *size) gets
a batch axis of 1 for the convolution (``tricycle.nn.windows.unbatched``).
"""

import math
from collections.abc import Callable

from tricycle import checks, dispatch, ops
from tricycle.backend import check_same_device
from tricycle.initialisers import init_uniform
from tricycle.layers import Layer, parameter, shared_back_fns
from tricycle.nn.batch_norm import BatchNorm1d, BatchNorm2d, batch_norm
from tricycle.nn.padding import conv_padding, padding_argument, torch_order
from tricycle.nn.padding import pad as pad_input
from tricycle.nn.pooling import AvgPool1d, AvgPool2d, MaxPool1d, MaxPool2d, avg_pool, max_pool
from tricycle.nn.windows import (
    as_tuple,
    output_size,
    pad,
    scatter_windows,
    unbatched,
    unpad,
    windows,
)
from tricycle.tensor import Tensor

__all__ = [
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "Flatten",
    "MaxPool1d",
    "MaxPool2d",
    "avg_pool",
    "batch_norm",
    "conv",
    "max_pool",
]


# ====================================================================== convolution


def im2col(xp, x, kernel, stride, padding, dilation, groups, batch_last: bool = False):
    """The columns of x (N, C, *size): (N, G, C / G * prod(kernel), L), L output positions;
    column l of group g holds the window of output position l over the group's channels.
    With ``batch_last``: (G, C / G * prod(kernel), N L), the samples' columns side by side."""
    view = windows(xp, pad(xp, x, padding), kernel, stride, dilation)  # (N, C, *kernel, *out)
    N, C, n = x.shape[0], x.shape[1], len(kernel)
    K, L = C // groups * math.prod(kernel), math.prod(view.shape[2 + n :])
    if batch_last:  # (N, G, C / G, *kernel, *out) -> (G, C / G, *kernel, N, *out)
        view = view.reshape((N, groups, C // groups) + view.shape[2:])
        view = view.transpose((1, 2, *range(3, 3 + n), 0, *range(3 + n, 3 + 2 * n)))
        return view.reshape(groups, K, N * L)  # a copy
    return view.reshape(N, groups, K, L)  # a copy


def col2im(xp, windows, size, padding, stride, dilation):
    """The windows (N, C, *kernel, *out) added back into images (N, C, *size) where they were
    read: the adjoint of ``im2col``, so overlapping windows sum."""
    padded = tuple(n + 2 * p for n, p in zip(size, padding))
    return unpad(scatter_windows(xp, windows, padded, stride, dilation), padding)


def conv_forward(xp, x, weights, bias, stride, padding, dilation, groups):
    """Cross-correlation of x (N, C, *size) with weights (Co, C / groups, *kernel), plus bias
    (Co,) or None -> (N, Co, *out)."""
    N, Co, G = x.shape[0], weights.shape[0], groups
    kernel = weights.shape[2:]
    out_size = output_size(x.shape[2:], kernel, stride, padding, dilation, "conv")
    cols = im2col(xp, x, kernel, stride, padding, dilation, G)  # (N, G, K, L)
    w = weights.reshape(G, Co // G, -1)  # (G, Og, K)
    out = (w @ cols).reshape((N, Co) + out_size)  # (N, G, Og, L) -> (N, Co, *out)
    if bias is not None:
        out += bias.reshape((Co,) + (1,) * len(kernel))
    return out


def conv_backward(xp, dout, x, weights, stride, padding, dilation, groups, needs):
    """Gradients (dx, dweights, dbias) of ``conv_forward``, each None where ``needs`` (for x,
    weights, bias) says nobody wants it."""
    want_x, want_weights, want_bias = needs
    N, Co, G = x.shape[0], weights.shape[0], groups
    kernel = weights.shape[2:]
    d = dout.reshape(N, G, Co // G, -1)  # (N, G, Og, L)
    dx = dweights = dbias = None
    if want_weights:  # one product over the samples and positions together
        cols = im2col(xp, x, kernel, stride, padding, dilation, G, batch_last=True)  # (G, K, N L)
        d_g = d.transpose(1, 2, 0, 3).reshape(G, Co // G, -1)  # (G, Og, N L)
        dweights = (d_g @ cols.swapaxes(-1, -2)).reshape(weights.shape)
    if want_x:
        w = weights.reshape(G, Co // G, -1)  # (G, Og, K)
        dcols = w.swapaxes(-1, -2) @ d  # (N, G, K, L)
        dcols = dcols.reshape(x.shape[:2] + kernel + dout.shape[2:])  # (N, C, *kernel, *out)
        dx = col2im(xp, dcols, x.shape[2:], padding, stride, dilation)
    if want_bias:
        dbias = dout.reshape(N, Co, -1).sum(axis=(0, 2))
    return dx, dweights, dbias


def check_geometry(op: str, x: Tensor, weights: Tensor, stride, dilation):
    """(stride, dilation) as one int per spatial axis of ``weights`` (out or in,
    in or out / groups, *kernel), after checking that x (batch, channels, *spatial) or
    (channels, *spatial) has as many spatial axes: shared by the convolution and its
    transpose."""
    n = weights.ndim - 2
    if n < 1 or x.ndim not in (n + 1, n + 2):
        raise ValueError(
            f"{op}: expected input (batch, channels, *{n} spatial axes) or unbatched "
            f"(channels, *{n} spatial axes) for weights of shape {weights.shape}, got shape "
            f"{x.shape}"
        )
    return as_tuple(stride, n, "stride", op), as_tuple(dilation, n, "dilation", op)


def arguments(op: str, x: Tensor, weights: Tensor, bias: Tensor | None, channels: int):
    """(the op's Tensor arguments, their array module), after checking that the bias, if
    any, has one value per output channel and that all are on one device."""
    if bias is not None and bias.shape != (channels,):
        raise ValueError(f"{op}: bias must have shape ({channels},), got {bias.shape}")
    args = (x, weights) if bias is None else (x, weights, bias)
    return args, check_same_device(op, *(a.array for a in args))


def conv(
    x: Tensor,
    weights: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
    groups: int = 1,
) -> Tensor:
    """Cross-correlation of x (N, C, *size) or unbatched (C, *size) with weights
    (O, C / groups, *kernel), plus a bias (O,): (N, O, *out) or (O, *out), as PyTorch's
    ``conv1d``/``conv2d``. ``stride`` and ``dilation`` are ints or one int per spatial axis;
    ``padding`` (zeros) too, or "valid" (none) or "same" (the output the input's size,
    stride 1 only)."""
    n = weights.ndim - 2
    op = f"conv{n}d"
    stride, dilation = check_geometry(op, x, weights, stride, dilation)
    pairs = conv_padding(padding_argument(padding, n, op, stride), weights.shape[2:], dilation)
    channels = x.shape[-n - 1]
    if groups < 1 or channels != weights.shape[1] * groups or weights.shape[0] % groups:
        raise ValueError(
            f"{op}: input of shape {x.shape} with {channels} channels does not fit weights "
            f"of shape {weights.shape} with groups={groups}: expected in_channels = "
            f"{weights.shape[1]} * groups and out_channels divisible by groups"
        )
    args, xp = arguments(op, x, weights, bias, weights.shape[0])
    if x.ndim == n + 1:
        return unbatched(conv, x, weights, bias, stride, padding, dilation, groups)
    padding = tuple(left for left, _ in pairs)  # both sides; any extra on the right goes first
    extra = tuple(right - left for left, right in pairs)
    size = tuple(s + e for s, e in zip(x.shape[2:], extra))
    output_size(size, weights.shape[2:], stride, padding, dilation, op)  # checks sizes
    if any(extra):  # "same" with an odd overhang: the extra zero on the right, as PyTorch
        x = pad_input(x, torch_order((0, e) for e in extra))
        args = (x,) + args[1:]
    geometry = (stride, padding, dilation, groups)
    b = None if bias is None else bias.array
    forward, backward_arrays = dispatch.choose(
        "conv", (conv_forward, conv_backward), x.array, weights.array, b
    )
    out = forward(xp, x.array, weights.array, b, *geometry)

    def backward(dout):
        needs = (x.requires_grad, weights.requires_grad, bias is not None and bias.requires_grad)
        grads = backward_arrays(xp, dout, x.array, weights.array, *geometry, needs)
        return grads[: len(args)]

    back_fns = shared_back_fns(backward, len(args))
    return Tensor(out, args=args, back_fns=back_fns, name=op)


class ConvLayer(Layer):
    """What the convolution layers and their transposes share: the geometry, one int per
    spatial axis (``n_dims`` of them), and the check of their input's shape."""

    n_dims = 0
    padding_words = False  # whether padding may also be "same" or "valid" (the convolutions)

    def set_geometry(self, in_channels, out_channels, groups, kernel_size, stride, padding,
                     dilation) -> None:  # fmt: skip
        """The kernel size, stride, padding and dilation as one int per spatial axis (the
        padding may be a word, see ``padding_words``), and the channels, which must both split
        into ``groups`` equal groups."""
        name, n = type(self).__name__, self.n_dims
        self.kernel_size = as_tuple(kernel_size, n, "kernel_size", name)
        self.stride = as_tuple(stride, n, "stride", name)
        if self.padding_words:
            self.padding = padding_argument(padding, n, name, self.stride)
        else:
            self.padding = as_tuple(padding, n, "padding", name, low=0)
        self.dilation = as_tuple(dilation, n, "dilation", name)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"{name}: in_channels={in_channels} and out_channels={out_channels} must both "
                f"be divisible by groups={groups}"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups

    def check_input(self, x: Tensor) -> None:
        """x must be (batch, in_channels, *spatial) or unbatched (in_channels, *spatial), with
        ``n_dims`` spatial axes."""
        n, channels = self.n_dims, self.in_channels
        if x.ndim not in (n + 1, n + 2) or x.shape[-n - 1] != channels:
            axes = {1: "length", 2: "height, width"}.get(n, "depth, height, width")
            raise ValueError(
                f"{self._owner()}: expected input (batch, {channels}, {axes}), got shape {x.shape} "
                f"(an unbatched input is ({channels}, {axes}))"
            )

    def _owner(self) -> str:
        """The layer as its error messages name it: ``Conv2d(3 -> 8)``."""
        return f"{type(self).__name__}({self.in_channels} -> {self.out_channels})"


PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(ConvLayer):
    """Shared by Conv1d and Conv2d: weights (out, in / groups, *kernel) and bias (out,) start
    as PyTorch's, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in / groups * prod(kernel)
    (``initialiser`` replaces it for the weights). ``padding`` is an int, one per spatial
    axis, "valid" or "same" (stride 1); ``padding_mode`` is "zeros", "reflect", "replicate"
    or "circular", as PyTorch's."""

    padding_words = True

    @checks.arguments(
        in_channels=checks.positive_int,
        out_channels=checks.positive_int,
        groups=checks.positive_int,
        bias=checks.boolean,
        padding_mode=checks.one_of(PADDING_MODES),
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
        padding_mode: str = "zeros",
        initialiser: Callable | None = None,
    ):
        self.set_geometry(in_channels, out_channels, groups, kernel_size, stride, padding,
                          dilation)  # fmt: skip
        self.padding_mode = padding_mode
        shape = (out_channels, in_channels // groups) + self.kernel_size
        bound = 1 / math.sqrt(in_channels // groups * math.prod(self.kernel_size))
        init = initialiser or (lambda s: init_uniform(s, bound))
        self.weights = parameter(init(shape), "weights")
        self.bias = parameter(init_uniform((out_channels,), bound), "bias") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        self.check_input(x)
        padding = self.padding
        if self.padding_mode != "zeros":  # pad in the mode, then convolve without padding
            pairs = conv_padding(padding, self.kernel_size, self.dilation)
            try:
                x = pad_input(x, torch_order(pairs), self.padding_mode)
            except ValueError as error:
                message = f"{self._owner()} with padding_mode={self.padding_mode!r}: {error}"
                raise ValueError(message) from None
            padding = 0
        return conv(x, self.weights, self.bias, self.stride, padding, self.dilation, self.groups)

    def extra_repr(self) -> str:  # torch's: the settings that differ from the defaults
        n = self.n_dims
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            + ", ".join(
                [f"stride={self.stride}"]
                + [f"padding={self.padding}"] * (self.padding != (0,) * n)
                + [f"dilation={self.dilation}"] * (self.dilation != (1,) * n)
                + [f"groups={self.groups}"] * (self.groups != 1)
                + ["bias=False"] * (self.bias is None)
                + [f"padding_mode={self.padding_mode}"] * (self.padding_mode != "zeros")
            )
        )


class Conv1d(_ConvNd):
    """1-D convolution, as ``torch.nn.Conv1d``: (N, in_channels, L) -> (N, out_channels, Lo),
    or unbatched (in_channels, L) -> (out_channels, Lo)."""

    n_dims = 1


class Conv2d(_ConvNd):
    """2-D convolution, as ``torch.nn.Conv2d``: (N, in_channels, H, W) -> (N, out, Ho, Wo),
    or unbatched (in_channels, H, W) -> (out, Ho, Wo)."""

    n_dims = 2


class Conv3d(_ConvNd):
    """3-D convolution, as ``torch.nn.Conv3d``: (N, in_channels, D, H, W) -> (N, out, Do, Ho,
    Wo), or unbatched (in_channels, D, H, W) -> (out, Do, Ho, Wo)."""

    n_dims = 3


# ====================================================================== Flatten


class Flatten(Layer):
    """Merge axes ``start_dim`` ... ``end_dim`` into one, as ``torch.nn.Flatten``: by default
    (N, C, H, W) -> (N, C * H * W)."""

    @checks.arguments(start_dim=checks.integer, end_dim=checks.integer)
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Tensor) -> Tensor:
        n = x.ndim
        in_range = all(-n <= dim < n for dim in (self.start_dim, self.end_dim))
        start, end = self.start_dim % max(n, 1), self.end_dim % max(n, 1)
        if not in_range or start > end:
            raise ValueError(
                f"Flatten: cannot merge axes {self.start_dim}..{self.end_dim} of a tensor of "
                f"shape {x.shape}"
            )
        shape = x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :]
        return ops.reshape(x, shape)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
