"""Sliding blocks out of an image and back, as PyTorch's ``F.unfold``/``F.fold`` and
``nn.Unfold``/``nn.Fold``: im2col and col2im, the two halves of a convolution
(``tricycle.nn.conv``).

``unfold`` copies every block of x (N, C, H, W) that a kernel (kh, kw) visits, with a
stride, a dilation and zero padding, into a column: (N, C kh kw, L), L the number of blocks,
row c kh kw + i kw + j holding channel c at kernel offset (i, j) of each block. It is the
convolution's ``im2col``, whose strided windows (``tricycle.nn.windows``) copy nothing until
the reshape. ``fold`` is its adjoint, col2im: each column element is added back at the image
position it stands for, so overlapping blocks sum (``fold(unfold(x))`` is x times the number
of blocks that cover each pixel). Being each other's adjoint, each is the other's backward::

    unfold:  cols = im2col(x)          dx    = col2im(dcols)
    fold:    out  = col2im(cols)       dcols = im2col(dout)

Both take an unbatched input too ((C, H, W) for unfold, (C kh kw, L) for fold), as torch's.
"""

import math

from tricycle.layers import Layer
from tricycle.nn.conv import col2im, im2col
from tricycle.nn.windows import as_tuple, unbatched
from tricycle.nn.windows import output_size as block_counts  # fold takes an output_size
from tricycle.tensor import Tensor, as_tensor

__all__ = ["Fold", "Unfold", "columns", "fold", "images", "unfold"]


def _geometry(op: str, kernel_size, dilation, padding, stride) -> tuple[tuple[int, int], ...]:
    """(kernel, dilation, padding, stride), each as two ints: padding >= 0, the others >= 1."""
    return (
        as_tuple(kernel_size, 2, "kernel_size", op),
        as_tuple(dilation, 2, "dilation", op),
        as_tuple(padding, 2, "padding", op, low=0),
        as_tuple(stride, 2, "stride", op),
    )


def columns(xp, images, kernel, dilation, padding, stride):
    """im2col of images (N, C, *size) as a fresh array (N, C kh kw, L): the convolution's
    im2col reshapes a window view, which stays a view of its input where the windows tile it
    exactly (a kernel as large as the stride), and an op's output must not share its input's
    memory."""
    N, C = images.shape[:2]
    cols = im2col(xp, images, kernel, stride, padding, dilation, 1)  # (N, 1, C kh kw, L)
    return cols.reshape(N, C * math.prod(kernel), -1).copy()


def images(xp, cols, size, kernel, dilation, padding, stride):
    """Columns (N, C kh kw, L) added back into images (N, C, *size): the convolution's col2im,
    the adjoint of ``columns``."""
    blocks = block_counts(size, kernel, stride, padding, dilation, "fold")  # L = their product
    windows = cols.reshape(cols.shape[:1] + (-1,) + tuple(kernel) + blocks)  # (N, C, kh, kw, ...)
    return col2im(xp, windows, size, padding, stride, dilation)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """The sliding blocks of x (N, C, H, W) or (C, H, W) as columns (N, C kh kw, L) or
    (C kh kw, L), as PyTorch's ``F.unfold`` (``kernel_size``, ``dilation``, ``padding`` (zeros)
    and ``stride``: an int or one per spatial axis)."""
    op = "unfold"
    x = as_tensor(input)
    kernel, dilation, padding, stride = _geometry(op, kernel_size, dilation, padding, stride)
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected input (batch, channels, height, width) or unbatched "
                         f"(channels, height, width), got shape {x.shape}")  # fmt: skip
    if x.ndim == 3:
        return unbatched(unfold, x, kernel, dilation, padding, stride)
    block_counts(x.shape[2:], kernel, stride, padding, dilation, op)  # at least one block
    xp = x.xp
    cols = columns(xp, x.array, kernel, dilation, padding, stride)  # (N, C kh kw, L)

    def back_fn(dcols):
        return images(xp, dcols, x.shape[2:], kernel, dilation, padding, stride)

    return x.new(cols, args=(x,), back_fns=(back_fn,), name=op)


def fold(
    input: Tensor,  # noqa: A002 - torch's names
    output_size,
    kernel_size,
    dilation=1,
    padding=0,
    stride=1,
) -> Tensor:
    """Columns (N, C kh kw, L) or (C kh kw, L) summed back into images (N, C, *output_size)
    or (C, *output_size), as PyTorch's ``F.fold``: the adjoint of ``unfold`` with the same
    geometry, which must give exactly L blocks."""
    op = "fold"
    x = as_tensor(input)
    size = as_tuple(output_size, 2, "output_size", op)
    kernel, dilation, padding, stride = _geometry(op, kernel_size, dilation, padding, stride)
    if x.ndim not in (2, 3):
        raise ValueError(
            f"{op}: expected input (batch, channels * kernel size, blocks) or unbatched "
            f"(channels * kernel size, blocks), got shape {x.shape}"
        )
    if x.ndim == 2:
        return unbatched(fold, x, size, kernel, dilation, padding, stride)
    K = math.prod(kernel)
    blocks = block_counts(size, kernel, stride, padding, dilation, op)  # at least one each
    if x.shape[1] % K or x.shape[2] != math.prod(blocks):
        raise ValueError(
            f"{op}: input {x.shape} does not fit output_size={size}, kernel_size={kernel}, "
            f"dilation={dilation}, padding={padding}, stride={stride}: expected (batch, "
            f"channels * {K}, {' * '.join(map(str, blocks))} = {math.prod(blocks)} blocks)"
        )
    xp = x.xp
    out = images(xp, x.array, size, kernel, dilation, padding, stride)  # (N, C, *size)

    def back_fn(dout):
        return columns(xp, dout, kernel, dilation, padding, stride)

    return x.new(out, args=(x,), back_fns=(back_fn,), name=op)


class Unfold(Layer):
    """The sliding blocks of (N, C, H, W) as columns (N, C kh kw, L), as ``torch.nn.Unfold``
    (``F.unfold``)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        _geometry("Unfold", kernel_size, dilation, padding, stride)
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")  # fmt: skip


class Fold(Layer):
    """Columns (N, C kh kw, L) summed back into images (N, C, *output_size), as
    ``torch.nn.Fold`` (``F.fold``)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        as_tuple(output_size, 2, "output_size", "Fold")
        _geometry("Fold", kernel_size, dilation, padding, stride)
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )
