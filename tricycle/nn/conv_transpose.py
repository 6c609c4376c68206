"""Transposed convolution ("deconvolution"), as PyTorch's ConvTranspose1d and ConvTranspose2d:
x (N, C_in, *size) and weights (C_in, C_out / groups, *kernel) -> (N, C_out, *out) with
out = (size - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1.

Read the weights as those of a convolution C from C_out channels to C_in channels (its
(out, in / groups, *kernel) layout is exactly (C_in, C_out / groups, *kernel)), without
padding. C maps an input of the full size F = (size - 1) stride + dilation (kernel - 1) + 1
to ``size``; the transposed convolution is C's transpose, the map of C's input gradient,
which spreads each input value over a kernel-sized patch of the output, times the weights.
So the whole op is the convolution's machinery with the roles swapped (``tricycle.nn.conv``):

    full = C^T x                   conv_backward's input gradient, x as C's output gradient
    y    = crop(full) + b          drop ``padding`` at each end, add output_padding at the end
    dx   = C(uncrop(dy))           conv_forward: the transpose of a transpose
    dW   = C's weight gradient for input uncrop(dy) and output gradient x   (conv_backward)
    db   = dy summed over every axis but the channels

crop keeps full[p : p + out] along each axis, zeros past F (output_padding may reach there:
nothing is spread to those positions); uncrop is its transpose, the gradient placed back in a
zero array of the full size. An unbatched input (C_in, *size) gets a batch axis of 1.
"""

import math

from tricycle import checks
from tricycle.initialisers import init_uniform
from tricycle.layers import parameter, shared_back_fns
from tricycle.nn.conv import ConvLayer, arguments, check_geometry, conv_backward, conv_forward
from tricycle.nn.windows import as_tuple, unbatched
from tricycle.tensor import Tensor

__all__ = ["ConvTranspose1d", "ConvTranspose2d", "conv_transpose"]


def full_size(size, kernel, stride, dilation) -> tuple[int, ...]:
    """F = (size - 1) stride + dilation (kernel - 1) + 1: every position a patch reaches."""
    return tuple(
        (n - 1) * s + d * (k - 1) + 1 for n, k, s, d in zip(size, kernel, stride, dilation)
    )


def _crop(xp, full, padding, out):
    """full[..., p : p + out] on each spatial axis, zero beyond full's end."""
    kept = tuple(min(n, f - p) for n, f, p in zip(out, full.shape[2:], padding))
    inside = tuple(slice(p, p + k) for p, k in zip(padding, kept))
    if kept == tuple(out):
        return full[(Ellipsis,) + inside]
    y = xp.zeros(full.shape[:2] + tuple(out), dtype=full.dtype)
    y[(Ellipsis,) + tuple(slice(0, k) for k in kept)] = full[(Ellipsis,) + inside]
    return y


def _uncrop(xp, dy, padding, full):
    """The transpose of ``_crop``: dy placed at [p : p + out] of zeros of the full size."""
    kept = tuple(min(n, f - p) for n, f, p in zip(dy.shape[2:], full, padding))
    dfull = xp.zeros(dy.shape[:2] + tuple(full), dtype=dy.dtype)
    inside = tuple(slice(p, p + k) for p, k in zip(padding, kept))
    dfull[(Ellipsis,) + inside] = dy[(Ellipsis,) + tuple(slice(0, k) for k in kept)]
    return dfull


def conv_transpose_forward(xp, x, weights, bias, stride, padding, output_padding, dilation,
                           groups):  # fmt: skip
    """y = crop(C^T x) + b: x (N, C_in, *size), weights (C_in, C_out / G, *kernel), bias
    (C_out,) or None -> (N, C_out, *out)."""
    n = x.ndim - 2
    kernel = weights.shape[2:]
    full = full_size(x.shape[2:], kernel, stride, dilation)
    out = tuple(f - 2 * p + o for f, p, o in zip(full, padding, output_padding))
    C_out = weights.shape[1] * groups
    zeros = xp.broadcast_to(xp.zeros((), dtype=x.dtype), (x.shape[0], C_out) + full)  # C's input
    needs = (True, False, False)  # only the input gradient: C's input itself is never read
    spread, _, _ = conv_backward(xp, x, zeros, weights, stride, (0,) * n, dilation, groups, needs)
    y = _crop(xp, spread, padding, out)  # (N, C_out, *out)
    if bias is not None:
        y = y + bias.reshape((C_out,) + (1,) * n).astype(y.dtype, copy=False)
    return y


def conv_transpose_backward(xp, dy, x, weights, stride, padding, dilation, groups, needs):
    """Gradients (dx, dweights, dbias) of ``conv_transpose_forward``, None where ``needs``
    (for x, weights, bias) says nobody wants them."""
    want_x, want_weights, want_bias = needs
    n = x.ndim - 2
    no_padding = (0,) * n
    dfull = None
    if want_x or want_weights:
        dfull = _uncrop(
            xp, dy, padding, full_size(x.shape[2:], weights.shape[2:], stride, dilation)
        )
    dx = dweights = dbias = None
    if want_x:  # (N, C_in, *size)
        dx = conv_forward(xp, dfull, weights, None, stride, no_padding, dilation, groups)
    if want_weights:  # x is C's output gradient, dfull C's input
        only_weights = (False, True, False)
        _, dweights, _ = conv_backward(
            xp, x, dfull, weights, stride, no_padding, dilation, groups, only_weights
        )
    if want_bias:
        dbias = dy.sum(axis=(0,) + tuple(range(2, dy.ndim)))
    return dx, dweights, dbias


def conv_transpose(
    x: Tensor,
    weights: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    output_padding=0,
    groups: int = 1,
    dilation=1,
) -> Tensor:
    """The transposed convolution of x (N, C_in, *size) or unbatched (C_in, *size) with
    weights (C_in, C_out / groups, *kernel), plus a bias (C_out,), as PyTorch's
    ``conv_transpose1d``/``conv_transpose2d`` (same argument order). ``stride``,
    ``padding``, ``output_padding`` and ``dilation`` are ints or one per spatial axis;
    output_padding must be smaller than the stride or the dilation."""
    n = weights.ndim - 2
    op = f"conv_transpose{n}d"
    stride, dilation = check_geometry(op, x, weights, stride, dilation)
    padding = as_tuple(padding, n, "padding", op, low=0)
    output_padding = as_tuple(output_padding, n, "output_padding", op, low=0)
    checks.positive_int(op, "groups", groups)
    C_in, channels = weights.shape[0], x.shape[-n - 1]
    if channels != C_in or C_in % groups:
        raise ValueError(
            f"{op}: input of shape {x.shape} with {channels} channels does not fit weights of "
            f"shape {weights.shape} (in_channels, out_channels / groups, *kernel) with "
            f"groups={groups}: expected {C_in} input channels, divisible by groups"
        )
    if any(o >= max(s, d) for o, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(
            f"{op}: output_padding {output_padding} must be smaller than the stride {stride} "
            f"or the dilation {dilation}"
        )
    full = full_size(x.shape[-n:], weights.shape[2:], stride, dilation)
    if any(f - 2 * p + o < 1 for f, p, o in zip(full, padding, output_padding)):
        raise ValueError(
            f"{op}: padding {padding} leaves no output of an input of spatial size "
            f"{x.shape[-n:]} (before padding the output has size {full})"
        )
    args, xp = arguments(op, x, weights, bias, weights.shape[1] * groups)
    if x.ndim == n + 1:
        geometry = (stride, padding, output_padding, groups, dilation)
        return unbatched(conv_transpose, x, weights, bias, *geometry)
    b = None if bias is None else bias.array
    geometry = (stride, padding, dilation, groups)
    out = conv_transpose_forward(
        xp, x.array, weights.array, b, stride, padding, output_padding, dilation, groups
    )

    def backward(dy):
        needs = (x.requires_grad, weights.requires_grad, bias is not None and bias.requires_grad)
        grads = conv_transpose_backward(xp, dy, x.array, weights.array, *geometry, needs)
        return grads[: len(args)]

    return Tensor(out, args=args, back_fns=shared_back_fns(backward, len(args)), name=op)


class _ConvTransposeNd(ConvLayer):
    """Shared by ConvTranspose1d and ConvTranspose2d: weights (in, out / groups, *kernel) and
    bias (out,) start as PyTorch's, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with
    fan_in = out / groups * prod(kernel) (the weights' second axis, as PyTorch counts it)."""

    @checks.arguments(
        in_channels=checks.positive_int,
        out_channels=checks.positive_int,
        groups=checks.positive_int,
        bias=checks.boolean,
    )
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
    ):
        if padding_mode != "zeros":  # as PyTorch: nothing else fits a transpose
            raise ValueError(
                f"{type(self).__name__}: only padding_mode='zeros' is supported, got "
                f"{padding_mode!r}"
            )
        self.set_geometry(in_channels, out_channels, groups, kernel_size, stride, padding,
                          dilation)  # fmt: skip
        name = type(self).__name__
        self.output_padding = as_tuple(output_padding, self.n_dims, "output_padding", name, low=0)
        if any(o >= max(s, d) for o, s, d in zip(self.output_padding, self.stride, self.dilation)):
            raise ValueError(
                f"{name}: output_padding {self.output_padding} must be smaller than the stride "
                f"{self.stride} or the dilation {self.dilation}"
            )
        shape = (in_channels, out_channels // groups) + self.kernel_size
        bound = 1 / math.sqrt(out_channels // groups * math.prod(self.kernel_size))
        self.weights = parameter(init_uniform(shape, bound), "weights")
        self.bias = parameter(init_uniform((out_channels,), bound), "bias") if bias else None

    def forward(self, x: Tensor) -> Tensor:
        self.check_input(x)
        return conv_transpose(
            x,
            self.weights,
            self.bias,
            self.stride,
            self.padding,
            self.output_padding,
            self.groups,
            self.dilation,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, padding={self.padding}, "
            f"output_padding={self.output_padding}, dilation={self.dilation}, "
            f"groups={self.groups}, bias={self.bias is not None}"
        )


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution, as ``torch.nn.ConvTranspose1d``: (N, in_channels, L) ->
    (N, out_channels, (L - 1) stride - 2 padding + dilation (kernel - 1) + output_padding + 1),
    or unbatched (in_channels, L) -> (out_channels, ...)."""

    n_dims = 1


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution, as ``torch.nn.ConvTranspose2d``: (N, in_channels, H, W) ->
    (N, out_channels, Ho, Wo), each output size as ConvTranspose1d's, or unbatched
    (in_channels, H, W) -> (out_channels, Ho, Wo)."""

    n_dims = 2
